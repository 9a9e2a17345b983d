"""Whatever a user feeds the commands, they never crash, hang or leave partial output: the
bad-input corpus of issue 8 through the real executables, inputs that must succeed, and
property-based tests of the reader."""
import bz2
import gzip
import lzma
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetsvm.errors import BsvmError
from budgetsvm.io import read_problem, write_problem
from corpus import MALFORMED

BIN = Path(sys.executable).parent
DATA = Path(__file__).resolve().parent.parent / "data"


def run(tool, *args, cwd=None, stdin=b""):
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, input=stdin,
                          capture_output=True, timeout=300)


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def run_here(capfdbinary, monkeypatch):
    """Run a command's main() in this process (same code path as the executable, without the
    start-up cost): returns its exit status and captured output."""
    from budgetsvm.cli import predict, scale, train
    mains = {"bsvm-train": train.main, "bsvm-predict": predict.main, "bsvm-scale": scale.main}

    def invoke(tool, *args, cwd):
        monkeypatch.chdir(cwd)
        capfdbinary.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            mains[tool]([str(a) for a in args])
        out, err = capfdbinary.readouterr()
        return Result(exit_info.value.code, out, err)
    return invoke


@pytest.fixture(scope="module")
def heart_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "heart.model"
    assert run("bsvm-train", "-s", "dcd", "-q", DATA / "heart_scale.xz", path).returncode == 0
    return path


def one_line_error(result, status=1):
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == status, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _gzip(content):
    return gzip.compress(content, mtime=0)


def _corrupt(data):
    """Flip bytes in the middle of a compressed stream (its header stays valid)."""
    data = bytearray(data)
    for i in range(len(data) // 2, len(data) // 2 + 8):
        data[i] ^= 0xFF
    return bytes(data)


GOOD = b"".join(b"%d 1:%d 2:0.5\n" % (1 if i % 2 else -1, i) for i in range(2000))

# (file name, bytes, expected line number or None, words the one-line message must contain)
EXTRA_CASES = {
    "truncated_last_line": ("t.txt", b"1 1:1 2:2\n-1 1:3 2", 2, "missing ':'"),
    "truncated_after_colon": ("t.txt", b"1 1:1\n-1 1:", 2, "value is missing after '1:'"),
    "corrupt_gz": ("c.gz", _corrupt(_gzip(GOOD * 5)), None, "cannot read"),
    "corrupt_xz": ("c.xz", _corrupt(lzma.compress(GOOD * 5)), None, "cannot read"),
    "corrupt_bz2": ("c.bz2", _corrupt(bz2.compress(GOOD * 5)), None, "cannot read"),
    "truncated_gz": ("c.gz", _gzip(GOOD * 5)[:300], None, "cannot read"),
    "truncated_xz": ("c.xz", lzma.compress(GOOD)[:200], None, "cannot read"),
    "only_comments": ("e.txt", b"# nothing\n# here\n", None, "no data"),
    "empty_file": ("e.txt", b"", None, "no data"),
    "value_overflow": ("o.txt", b"1 1:1\n-1 1:1e400\n", 2, "value is not finite"),
    "labels_words": ("w.txt", b"yes 1:1\nno 1:2\n", 1, "label is not a number: 'yes'"),
    "label_missing": ("m.txt", b"1 1:1\n 2:3\n", 2, "label is not a number"),
    "value_words": ("v.txt", b"1 1:one\n", 1, "value is not a number"),
    "index_near_2_31_linear": ("h.txt", b"1 2147483000:1\n-1 1:1\n", None, "dense weights"),
    "nul_in_middle": ("n.txt", b"1 1:1\n-1 1:\x002\n", 2, "value is not a number"),
    "double_colon": ("d.txt", b"1 1::2\n", 1, "value is not a number"),
    "space_around_colon": ("s.txt", b"1 1 :2\n", 1, "missing ':'"),
    "comma_decimal": ("c.txt", b"1 1:0,5\n", 1, "value is not a number"),
}


def corpus():
    cases = {f"line:{name}": (f"{name}.txt",
                              content.encode() if isinstance(content, str) else content,
                              line, words)
             for name, (content, line, words) in MALFORMED.items()}
    cases.update(EXTRA_CASES)
    return cases


CORPUS = corpus()


def test_corpus_is_large_enough():
    # issue 8 asks for at least 40 malformed data cases, plus the special ones tested below
    assert len(CORPUS) + 4 >= 40


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_bad_training_file(tmp_path, case, run_here):
    name, content, line, words = CORPUS[case]
    path = tmp_path / name
    path.write_bytes(content)
    message = one_line_error(run_here("bsvm-train", "-s", "dcd", path, "out.model",
                                      cwd=tmp_path))
    prefix = f"{path}:{line}: " if line else f"{path}: "
    assert message.startswith(prefix) or (line is None and message.startswith(str(path))) or \
        words == "dense weights", message
    assert words in message, message
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_bad_test_file_for_prediction(tmp_path, case, run_here, heart_model):
    name, content, line, words = CORPUS[case]
    if words == "dense weights":
        pytest.skip("valid as a test file: wide features are fine there")
    path = tmp_path / name
    path.write_bytes(content)
    result = run_here("bsvm-predict", path, heart_model, "out", cwd=tmp_path)
    assert words in one_line_error(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_directory_missing_and_empty_stdin(tmp_path):
    assert "is a directory" in one_line_error(run("bsvm-train", "-s", "dcd", tmp_path, "m",
                                                  cwd=tmp_path))
    assert "no such file" in one_line_error(run("bsvm-train", "-s", "dcd", tmp_path / "x",
                                                "m", cwd=tmp_path))
    assert "no data" in one_line_error(run("bsvm-train", "-s", "dcd", "-", "m", cwd=tmp_path))
    assert list(tmp_path.iterdir()) == []


# 'index:' ending its line (issue: it swallowed the next line, whose label became the value):
# an error of that line through every reader, whatever the block the line ends.

MISSING_VALUE_CASES = sorted(name for name in MALFORMED if name.startswith("value_empty"))

# How each command meets a data file: (arguments before the data file, after it); the model of
# bsvm-predict is put in by the test.
READERS = {
    "train": (["bsvm-train", "-s", "dcd", "-q"], ["out.model"]),
    "train_stream": (["bsvm-train", "-q", "--stream", "--stream-buffer", "1"], ["out.model"]),
    "predict": (["bsvm-predict"], ["MODEL", "out"]),
    "scale": (["bsvm-scale"], []),
}


def _read_with(reader, path, model, runner):
    before, after = READERS[reader]
    after = [model if a == "MODEL" else a for a in after]
    return runner(before[0], *before[1:], path, *after)


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("case", MISSING_VALUE_CASES)
def test_missing_value_is_an_error_of_its_line(tmp_path, case, reader, run_here, heart_model):
    content, line, words = MALFORMED[case]
    path = tmp_path / "bad.txt"
    path.write_bytes(content.encode())
    result = _read_with(reader, path, heart_model,
                        lambda *args: run_here(*args, cwd=tmp_path))
    message = one_line_error(result)
    assert message == f"{path}:{line}: {words}", message
    assert result.stdout == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt"]


@pytest.mark.parametrize("reader", sorted(READERS))
def test_missing_value_reported_by_the_commands(tmp_path, reader, heart_model):
    # the report's file, through the installed commands
    path = tmp_path / "merged.txt"
    path.write_bytes(b"+1 1:\n-1 2:2\n+1 1:1\n-1 1:3\n")
    result = _read_with(reader, path, heart_model,
                        lambda *args: run(*args, cwd=tmp_path))
    assert one_line_error(result) == f"{path}:1: value is missing after '1:'"
    assert result.stdout == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["merged.txt"]


BIG_BLOCK = 8 << 20         # bsvm-scale's blocks (io.BLOCK_BYTES); the others read 1 MiB ones


def _multi_block_file(folder, bad_line_end):
    """A file of about 9 MiB whose line "-1 1:1 3:" ends (its newline included) at byte
    bad_line_end; returns (path, its line number)."""
    bad = b"-1 1:1 3:\n"
    good = b"+1 1:1 2:0.5\n-1 1:2 2:-1\n"
    pairs = (bad_line_end - len(bad) - 16) // len(good)
    pad = bad_line_end - len(bad) - pairs * len(good)         # one padding line
    head = good * pairs + b"1 2:1" + b" " * (pad - 6) + b"\n"
    assert len(head) + len(bad) == bad_line_end
    path = folder / f"big{bad_line_end}.txt"
    path.write_bytes(head + bad + good * ((BIG_BLOCK + (1 << 20) - bad_line_end) // len(good)))
    return path, head.count(b"\n") + 1


@pytest.fixture(scope="module")
def multi_block_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("blocks")
    # the last line of a block for every reader (8 MiB is a multiple of 1 MiB), and a line in
    # the middle of a block
    return {"block_end": _multi_block_file(folder, BIG_BLOCK),
            "mid_block": _multi_block_file(folder, (9 << 19) + 1001)}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("where", ["block_end", "mid_block"])
def test_missing_value_in_a_multi_block_file(tmp_path, multi_block_files, where, reader,
                                             run_here, heart_model):
    path, line = multi_block_files[where]
    from budgetsvm import io
    assert io.READ_BLOCK_BYTES == 1 << 20 and io.BLOCK_BYTES == BIG_BLOCK
    result = _read_with(reader, path, heart_model,
                        lambda *args: run_here(*args, cwd=tmp_path))
    assert one_line_error(result) == f"{path}:{line}: value is missing after '3:'"
    assert result.stdout == b""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_unreadable_file(tmp_path):
    path = tmp_path / "locked"
    path.write_text("1 1:1\n-1 1:2\n")
    path.chmod(0)
    assert "permission denied" in one_line_error(run("bsvm-train", "-s", "dcd", path, "m",
                                                     cwd=tmp_path))


# Inputs that must succeed.

def test_all_zero_rows_and_last_line_without_newline(tmp_path):
    path = tmp_path / "zeros"
    path.write_bytes(b"1\n-1\n1 1:1\n-1 1:-1")
    result = run("bsvm-train", "-s", "dcd", "-q", path, "m", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()


def test_million_features_three_rows(tmp_path):
    path = tmp_path / "wide"
    path.write_text("1 1:1 1000000:2\n-1 500000:1\n1 999999:3\n")
    result = run("bsvm-train", "-s", "dcd", "-q", path, "m", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    result = run("bsvm-predict", path, "m", "out", cwd=tmp_path)
    assert result.returncode == 0 and (tmp_path / "out").read_text().count("\n") == 3


def test_ten_megabyte_line(tmp_path):
    n = 1_000_000        # ~11 MB of "index:value" text on one line
    line = "1 " + " ".join(f"{i}:0.5" for i in range(1, n + 1))
    path = tmp_path / "long"
    path.write_text(line + "\n-1 1:1\n")
    assert path.stat().st_size > 10_000_000
    X, y = read_problem(str(path))
    assert X.shape == (2, n) and X[0].nnz == n
    result = run("bsvm-train", "-s", "dcd", "-q", path, "m", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()


def test_class_with_one_example_under_cross_validation_warns(tmp_path):
    path = tmp_path / "small"
    rows = [f"{1 if i % 2 else -1} 1:{i} 2:{i % 3}" for i in range(20)] + ["3 1:5 2:5"]
    path.write_text("\n".join(rows) + "\n")
    result = run("bsvm-train", "-s", "dcd", "-v", "5", path, cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert "warning: class 3 has fewer rows than the 5 folds" in result.stderr.decode()
    assert result.stdout.decode().startswith("Cross Validation Accuracy = ")


# Property-based tests of the reader.

rows = st.lists(
    st.tuples(st.integers(-5, 5),
              st.dictionaries(st.integers(1, 60),
                              st.floats(allow_nan=False, allow_infinity=False, width=64),
                              max_size=8)),
    min_size=1, max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows)
def test_round_trip_random_files(tmp_path, data):
    import scipy.sparse as sp
    width = max([max(f, default=0) for _, f in data] + [1])
    dense = np.zeros((len(data), width))
    for i, (_, feats) in enumerate(data):
        for j, v in feats.items():
            dense[i, j - 1] = v
    X = sp.csr_matrix(dense)
    y = np.array([label for label, _ in data], dtype=float)
    path = tmp_path / "rt.txt"
    with open(path, "w") as f:
        write_problem(f, X, y)
    X2, y2 = read_problem(str(path), n_features=width)
    assert np.array_equal(X2.toarray(), X.toarray()) and np.array_equal(y2, y)


VALID = (DATA / "heart_scale.xz")


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 255)), min_size=1, max_size=6))
def test_random_byte_mutations_never_crash(tmp_path, mutations):
    data = bytearray(lzma.open(VALID).read()[:3000])
    for position, value in mutations:
        data[position % len(data)] = value
    path = tmp_path / "mutated.txt"
    path.write_bytes(bytes(data))
    try:
        X, y = read_problem(str(path))
    except BsvmError as error:
        assert "\n" not in str(error)
    else:
        assert X.shape[0] == len(y) and np.isfinite(X.data).all() and np.isfinite(y).all()
