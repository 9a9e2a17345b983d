"""The repository stands on its own: every reference in code, docs, scripts and tests resolves
inside it (issue 17 item 1, issue 18 item 6).

* The algorithms document is cited by its path, docs/ALGORITHMS.md, and every section cited as
  ``docs/ALGORITHMS.md §N`` (or §N.M, §N.M.K; lists such as ``§3, §8`` or ``§1.3/§3.2``) is a
  heading of that document.
* Papers are named by authors and year, never by a seed number of an external spec.
* Nothing points outside the repository: no sibling ``shared`` folder (the data folder comes from
  the environment variable BSVM_DATA; only the Makefile and .ci/run give it a default), and no
  user or style notes that live outside the clone.

The patterns are assembled from pieces so that this file does not match them itself.
"""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ALGORITHMS = REPO / "docs/ALGORITHMS.md"
ROOTS = ["budgetsvm", "docs", "scripts", "tests", "README.md"]
SUFFIXES = {".py", ".pyx", ".pxd", ".md", ".toml", ".cfg"}

DOC = "ALGORITHMS" + r"\.md"
SECTION = r"§(\d+(?:\.\d+)*)"
# a bare citation: the document's name not preceded by its folder
BARE_CITATION = re.compile(r"(?<!docs/)\b" + DOC)
# "docs/ALGORITHMS.md" and what follows it up to the end of the clause: the sections it cites
CITATION = re.compile(r"docs/" + DOC + r"([^()\[\];:\"`]{0,80})")
SEED = "se" + "ed"
FORBIDDEN = [
    # a paper called by the seed number of an external spec, also split over lines or strings
    ("seed number for a paper",
     re.compile(r"\b" + SEED + r"s?\b[\s\"'+#f]*0\d\d\b", re.I)),
    ("paper called by a seed (wording)",
     re.compile(r"\b" + SEED + r"\s+(?:papers?|documents?|specs?)\b", re.I)),
    ("path outside the repository", re.compile(r"\.\./" + "shared")),
    ("shared data folder", re.compile("shared" + "/data")),
    ("user notes outside the repository", re.compile("USERS" + r"\.md")),
    ("style notes outside the repository", re.compile("STYLE" + r"\.md")),
]


def text_files():
    for root in ROOTS:
        path = REPO / root
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        for f in candidates:
            if f.is_file() and f.suffix in SUFFIXES and "__pycache__" not in f.parts:
                yield f


def headings():
    """Section numbers of docs/ALGORITHMS.md: '0', '0.1', …, '1.5.3', … from its headings."""
    found = set()
    for line in ALGORITHMS.read_text(encoding="utf-8").splitlines():
        match = re.match(r"#{2,6}\s+(\d+(?:\.\d+)*)\.?\s", line)
        if match:
            found.add(match.group(1))
    return found


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


FILES = list(text_files())


def test_walks_the_repository():
    names = {f.relative_to(REPO).as_posix() for f in FILES}
    assert "README.md" in names and "docs/ALGORITHMS.md" in names
    assert any(n.startswith("budgetsvm/") and n.endswith(".pyx") for n in names)
    assert any(n.startswith("scripts/bench_") for n in names)
    assert not any(n.endswith(".c") for n in names)


def test_headings_parsed():
    found = headings()
    for number in ["0", "0.6", "1", "1.5.3", "2.6", "3.5", "4.4", "5.6", "7.2", "9", "10.6"]:
        assert number in found


@pytest.mark.parametrize("path", FILES, ids=lambda f: f.relative_to(REPO).as_posix())
def test_no_reference_outside_the_repository(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    problems = [f"line {line_of(text, m.start())}: bare citation {m.group(0)!r}, "
                "write docs/ALGORITHMS.md"
                for m in BARE_CITATION.finditer(text)]
    for what, pattern in FORBIDDEN:
        problems += [f"line {line_of(text, m.start())}: {what}: {m.group(0)!r}"
                     for m in pattern.finditer(text)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", FILES, ids=lambda f: f.relative_to(REPO).as_posix())
def test_cited_sections_exist(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    known = headings()
    missing = []
    for match in CITATION.finditer(text):
        for number in re.findall(SECTION, match.group(1)):
            if number not in known:
                missing.append(f"line {line_of(text, match.start())}: §{number}")
    assert not missing, "sections not in docs/ALGORITHMS.md:\n" + "\n".join(missing)


def test_the_checks_catch_what_they_should():
    # the patterns themselves, on made-up text
    bare = "see " + "ALGORITHMS" + ".md §1"
    assert BARE_CITATION.search(bare)
    assert not BARE_CITATION.search("see docs/" + "ALGORITHMS" + ".md §1")
    seed_words = ["the " + SEED + " 0" + "03 paper", SEED.capitalize() + " 001's Table 6",
                  SEED + "s 000/002", SEED + '\n    "004', "the " + SEED + " papers' setting"]
    for sample in seed_words:
        assert any(p.search(sample) for _, p in FORBIDDEN), sample
    for fine in ["--" + SEED + " 1", "(" + SEED + " 0)", SEED + "s 1–5", "same " + SEED]:
        assert not any(p.search(fine) for _, p in FORBIDDEN), fine
    cited = "docs/" + "ALGORITHMS" + ".md §3, §8 and §1.3/§3.2 (x)"
    assert re.findall(SECTION, CITATION.search(cited).group(1)) == ["3", "8", "1.3", "3.2"]
