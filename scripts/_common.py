"""Helpers shared by the benchmark scripts: data location, checksums, machine description,
timing with medians, markdown tables, and the results file of a script (measuring apart from
reporting: see run_bench)."""
import hashlib
import inspect
import json
import lzma
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The tests' numpy oracles (tests/reference: kernels, reference solvers, objectives) serve the
# benchmarks too, importable as `reference` as they are in the tests.
sys.path.insert(0, str(REPO / "tests"))


DATA_UNSET = ("BSVM_DATA is not set: point it at the folder that holds the data sets "
              "(.xz files and MANIFEST.md)")


def data_dir():
    """The data folder named by the environment variable BSVM_DATA; exits with a one-line
    message when it is unset (there is no default)."""
    folder = os.environ.get("BSVM_DATA")
    if not folder:
        sys.exit(DATA_UNSET)
    return Path(folder)


def data_folders():
    """Where data sets are looked up: BSVM_DATA when it is set, then data/ in the repository."""
    folder = os.environ.get("BSVM_DATA")
    return ([Path(folder)] if folder else []) + [REPO / "data"]


def data_path(name):
    """Path of a data set in BSVM_DATA (or data/ in the repo), verified against MANIFEST.md."""
    for folder in data_folders():
        path = folder / f"{name}.xz"
        if path.exists():
            return path
    where = " or ".join(str(f) for f in data_folders())
    raise FileNotFoundError(f"data set {name} not found in {where}"
                            + ("" if os.environ.get("BSVM_DATA") else " (BSVM_DATA is not set)"))


def manifest_checksums():
    if not os.environ.get("BSVM_DATA"):
        return {}
    manifest = data_dir() / "MANIFEST.md"
    if not manifest.exists():
        return {}
    sums = {}
    for line in manifest.read_text().splitlines():
        match = re.match(r"\|\s*(\S+)\.xz\s*\|.*?`([0-9a-f]{64})`", line)
        if match:
            sums[match.group(1)] = match.group(2)
    return sums


def verify_checksum(name):
    """sha256 of the uncompressed file against MANIFEST.md; returns 'ok', 'no manifest entry'."""
    expected = manifest_checksums().get(name)
    if expected is None:
        return "no manifest entry"
    digest = hashlib.sha256()
    with lzma.open(data_path(name)) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise RuntimeError(f"{name}: checksum mismatch with MANIFEST.md")
    return "ok"


def decompressed(name, folder):
    """Plain-text copy of a data set (for readers that cannot read .xz)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / name
    if not out.exists():
        with lzma.open(data_path(name)) as src, open(out, "wb") as dst:
            for block in iter(lambda: src.read(1 << 20), b""):
                dst.write(block)
    return out


def machine():
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {sys.version.split()[0]}"


def versions(*modules):
    from importlib.metadata import PackageNotFoundError, version
    out = []
    for name in modules:
        try:
            out.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            out.append(f"{name} (not installed)")
    return ", ".join(out)


def timed_all(function, repeats):
    """(the seconds of every one of `repeats` calls, the last call's result)."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return times, result


class CapturedCStdout:
    """Context manager: file descriptor 1 goes to a temporary file while the block runs, so that
    what LIBLINEAR's and LIBSVM's C code print (iterations, objective) can be parsed; .text
    holds it after the block."""

    def __enter__(self):
        import ctypes
        import tempfile
        self._libc = ctypes.CDLL(None)
        sys.stdout.flush()
        self._libc.fflush(None)
        self._file = tempfile.TemporaryFile(mode="w+", errors="replace")
        self._saved = os.dup(1)
        os.dup2(self._file.fileno(), 1)
        self.text = ""
        return self

    def __exit__(self, *exc):
        self._libc.fflush(None)
        os.dup2(self._saved, 1)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read()
        self._file.close()
        return False


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The benchmark report (docs/BENCHMARKS.md, issue 10)
#
# Every bench_*.py writes its own section as a markdown fragment into SECTION_DIR (not under
# version control) and its figures into FIGURE_DIR; scripts/make_report.py assembles the
# fragments in a fixed order into docs/BENCHMARKS.md. Nothing in the report is typed by hand.
# ---------------------------------------------------------------------------------------------

SECTION_DIR = REPO / "build" / "bench"
FIGURE_DIR = REPO / "docs" / "figures"
PEERS = ("liblinear-official", "libsvm-official", "scikit-learn", "numpy", "scipy")


def spread(values, fmt="{:.3g}"):
    """'median (min–max)' of repeated measurements (just the value for a single one)."""
    values = [float(v) for v in values]
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def mean_sd(values, fmt="{:.2f}"):
    """'mean ± sd' (population sd) of repeated runs, e.g. accuracies over seeds."""
    values = [float(v) for v in values]
    mean = statistics.fmean(values)
    sd = statistics.pstdev(values) if len(values) > 1 else 0.0
    return f"{fmt.format(mean)} ± {fmt.format(sd)}"


def dataset_lines(names):
    """One markdown bullet per data set: the file and its checksum status (or missing)."""
    lines = []
    for name in names:
        try:
            data_path(name)
            status = verify_checksum(name)
            sha = manifest_checksums().get(name, "")
            lines.append(f"- `{name}.xz`: sha256 of the uncompressed file "
                         f"{'`' + sha[:16] + '…`' if sha else ''} {status} (MANIFEST.md)")
        except FileNotFoundError:
            where = os.environ.get("BSVM_DATA") or "data/ (BSVM_DATA is not set)"
            lines.append(f"- `{name}.xz`: **missing** from {where} (its rows are skipped)")
    return lines


def setting_block(datasets=(), peers=PEERS, extra=(), meta=None):
    """The 'measured on' lines every section starts with: machine, versions, data, settings.
    With `meta` (the metadata of a results file) they describe that run, not this machine."""
    if meta is None:
        meta = run_meta(datasets, peers)
    load = meta.get("load_average")
    load = "" if load is None else f"; load average at start {load:.2f}"
    lines = [f"- Measured on commit {meta['commit']}"] if meta.get("commit") else []
    lines += [f"- Machine: {meta['machine']}{load}",
             f"- Versions: budgetsvm {meta['budgetsvm']}; {meta['peers']}"]
    lines += meta["data"]
    lines += [f"- {item}" for item in extra]
    return "\n".join(lines)


def _own_version():
    try:
        from importlib.metadata import version
        return version("budgetsvm")
    except Exception:
        return "(not installed)"


def write_section(stem, title, body, datasets=(), peers=PEERS, extra=(), meta=None):
    """Write SECTION_DIR/<stem>.md ('## title', the setting block, body) and print it."""
    text = f"## {title}\n\n{setting_block(datasets, peers, extra, meta)}\n\n{body.strip()}\n"
    SECTION_DIR.mkdir(parents=True, exist_ok=True)
    tmp = SECTION_DIR / f".{stem}.md.tmp"
    tmp.write_text(text)
    os.replace(tmp, SECTION_DIR / f"{stem}.md")
    print(text, flush=True)
    return text


# ---------------------------------------------------------------------------------------------
# Results files (issue 17): a script measures into build/bench/<name>.json (the rows and the
# run's metadata) and makes its section from that file alone, so that `--report-only` rebuilds
# the section without measuring again.
#
#     def measure(args): ... return rows            # or yield them one by one
#     def report(results): ... return Section(title, body, extra)
#     def main(argv=None):
#         parser = ...; add_report_only(parser); args = parser.parse_args(argv)
#         run_bench("bench_x", args, measure, report, datasets=[...], peers=(...))
#
# results = {"meta": run_meta(...), "rows": [one JSON object per measurement]}.
# ---------------------------------------------------------------------------------------------

class Section:
    """What a report function returns: the section's title, its body (markdown) and the
    settings lines of its setting block (after machine, versions and data)."""

    def __init__(self, title, body, extra=()):
        self.title, self.body, self.extra = title, body, list(extra)


def results_path(stem):
    """build/bench/<name>.json of scripts/bench_<name>.py."""
    return SECTION_DIR / f"{stem.removeprefix('bench_')}.json"


def budgeted_defaults():
    """bsvm-train's defaults of a budgeted run as they take effect (maintenance None is merge
    with the RBF kernel), for a benchmark's results."""
    from budgetsvm.params import TrainParams
    defaults = TrainParams()
    return {"maintenance": defaults.effective_maintenance(),
            "merge_search": defaults.merge_search, "polish": defaults.polish}


def budgeted_defaults_text(record):
    """'--maintenance M, --merge-search S, --polish P' from a record holding budgeted_defaults()
    (results of earlier runs lack polish)."""
    text = (f"--maintenance {record.get('maintenance', '?')}, "
            f"--merge-search {record.get('merge_search', '?')}")
    return text + (f", --polish {record['polish']}" if "polish" in record else "")


def git_commit():
    """The commit the scripts run from ('+ changes' when the work tree differs), or None.
    The report and its figures (docs/BENCHMARKS.md, docs/figures/) do not count: the benchmarks
    of one run write them one after the other."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":(exclude)docs/figures", ":(exclude)docs/BENCHMARKS.md"],
                               cwd=REPO, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + (" + changes" if dirty else "")


def utc_now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def run_meta(datasets=(), peers=PEERS, quick=False, options=None):
    """The metadata of a run, taken when it starts: machine, load, versions, commit, the data
    sets' checksum lines, quick or full, the options and the start time."""
    return {"machine": machine(),
            "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "budgetsvm": _own_version(), "peers": versions(*peers), "commit": git_commit(),
            "data": dataset_lines(datasets), "quick": bool(quick),
            "options": options or {}, "started": utc_now(), "finished": None}


def _plain(value):
    """numpy scalars and arrays as JSON values (json.dumps' default)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def save_results(stem, results):
    """Write the results file atomically (a reader never sees half a file)."""
    path = results_path(stem)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(results, indent=1, default=_plain))
    os.replace(tmp, path)
    return path


def load_results(stem):
    """The results file of a script; exits with a one-line message when there is none."""
    path = results_path(stem)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        sys.exit(f"{path} does not exist: run scripts/{stem}.py without --report-only first")


def add_data_option(parser):
    """The standard --data option: the folder of the .xz data sets, $BSVM_DATA by default."""
    parser.add_argument("--data", default=os.environ.get("BSVM_DATA"),
                        help="folder with the .xz data sets (default: $BSVM_DATA)")
    return parser


def add_report_only(parser):
    """The standard --report-only flag."""
    parser.add_argument("--report-only", action="store_true",
                        help="rebuild the section from the results file without measuring")
    return parser


def _options(args):
    """The command-line options as JSON values (others as their text)."""
    return json.loads(json.dumps({k: v for k, v in vars(args).items() if k != "report_only"},
                                 default=str))


def run_bench(stem, args, measure, report, datasets=(), peers=PEERS):
    """Measure (unless --report-only) into the results file, then write the section that
    report(results) makes. measure may return its rows or yield them; the file is saved after
    every yielded row ('finished' stays None until the last), so a long run that dies leaves
    what it measured."""
    if getattr(args, "report_only", False):
        results = load_results(stem)
        if results.get("meta", {}).get("finished", "") is None:
            print(f"{results_path(stem)}: the run that wrote it stopped before its end; the "
                  "section shows what it measured", file=sys.stderr)
    else:
        fresh_bytecode()
        results = {"meta": run_meta(datasets, peers, getattr(args, "quick", False),
                                    _options(args)), "rows": []}
        rows = measure(args)
        for row in rows:
            results["rows"].append(row)
            if inspect.isgenerator(rows):
                # measure settles defaults in args (quick subsets) before its first row
                results["meta"]["options"] = _options(args)
                save_results(stem, results)
        results["meta"]["options"] = _options(args)
        results["meta"]["finished"] = utc_now()
        save_results(stem, results)
    section = report(results)
    return write_section(stem, section.title, section.body, extra=section.extra,
                         meta=results.get("meta") or run_meta(datasets, peers))


def fresh_bytecode():
    """Compile the package's modules whose bytecode is missing or stale, as in an installed
    package. `make install` compiles them once; where PYTHONDONTWRITEBYTECODE is set
    (containers, CI) a module edited since then is compiled again by every command a benchmark
    times: 30-45 ms more start-up per bsvm-train, measured on 2026-11-29 (about 15 %)."""
    import compileall
    compileall.compile_dir(str(REPO / "budgetsvm"), quiet=1)


def save_figure(fig, filename, caption):
    """Save a matplotlib figure as docs/figures/<filename> (PNG); returns the markdown image
    line for docs/BENCHMARKS.md (relative link)."""
    FIGURE_DIR.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE_DIR / filename, dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return f"![{caption}](figures/{filename})\n\n*{caption}*"


def pyplot():
    """matplotlib.pyplot with the non-interactive backend (figures are only saved)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
