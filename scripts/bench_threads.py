"""Worker threads (-n): how much faster the whole commands get with 2 threads than with 1 on
this project's 2-core machines (issue 16's targets), how they scale to 4 and 8 threads
(oversubscribed on 2 cores), their CPU time and peak memory, and our `-n 2` time against
liblinear-official's single-threaded run of the same sector problem. Two more tasks have no
target: a linear model's prediction of a large test file, where reading and parsing the text
is most of the work, and streaming training (--stream), where the next buffer is parsed while
the solver runs.

Every measurement is a whole command in its own process (`bsvm-train`, `bsvm-predict`: what a
user waits for, Python start-up and file reading included), timed by wall clock (what threads
improve) and CPU time (user + system of the child and all its threads, from wait4). The thread
counts of one task run back to back in every repeat, in rotating order. Threads only help when
the cores are free: before every run the script waits until the machine is idle (the CPU time
of all other processes, sampled from /proc/stat over a second, below --idle cores) and it
records the CPU time other processes used during each run; a run disturbed by more than
--idle cores on average is repeated (up to 3 times). If the machine never became idle within
--max-wait seconds the section says so and its numbers are provisional.

Peak memory (VmHWM, polled; budgetsvm.memory explains why not ru_maxrss) comes from one extra
run per thread count, compared with the -n 1 peak plus the work arrays of the parts that run
at the same time (README, "Threads"), estimated from the data sizes.

Measures into build/bench/threads.json (one row per run; scripts/_common.py, run_bench), then
writes build/bench/bench_threads.md and docs/figures/bench_threads-speedup.png from that file
alone (`--report-only` rebuilds them without measuring).
"""
import argparse
import lzma
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

from _common import (REPO, Section, add_report_only, data_path, decompressed,  # noqa: E402
                     pyplot, run_bench, save_figure, spread, table)

BIN = Path(sys.executable).parent
WORK = REPO / "build" / "bench" / "threads"
HZ = os.sysconf("SC_CLK_TCK")
DATASETS = ("sector.scale", "dna.scale", "satimage.scale", "a9a", "mnist", "mnist.t")
# The mnist model of the prediction task: B = 1000, one epoch on mnist scaled by 1/255.
MNIST_MODEL = ["-s", "bsgd", "--budget", "1000", "--epochs", "1", "-c", "10", "-g", "0.02"]
MNIST_LINEAR_MODEL = ["-s", "dcd", "-c", "0.01"]
MNIST_STREAM = ["--stream", "-s", "bsgd", "--budget", "100", "-c", "8", "-g", "0.03125"]
STREAM_BUFFER = 16 << 20                  # --stream-buffer's default, in bytes

# Liblinear's whole command: read the same plain file, train -s 3 -c 1, save the model.
LIBLINEAR_TRAIN = """
import sys
from liblinear import liblinearutil as lu
y, x = lu.svm_read_problem(sys.argv[1], return_scipy=True)
lu.save_model(sys.argv[2], lu.train(y, x, "-s 3 -c 1 -q"))
"""


class Task:
    def __init__(self, key, title, target, parts, command, work_bytes, note="", phase2=None):
        self.key, self.title, self.target, self.parts = key, title, target, parts
        self.command = command              # function(threads, out_dir) -> argv
        self.work_bytes = work_bytes        # bytes of work arrays of one part in progress
        self.note = note
        # (parts, work bytes) of a second phase with other parts (--stream: the refit after
        # the epochs); the memory bound takes the larger of the two phases
        self.phase2 = phase2

    def extra_bytes(self, t):
        """Work arrays beyond one thread's when t threads run the parts."""
        phases = [(self.parts, self.work_bytes)] + ([self.phase2] if self.phase2 else [])
        return max((min(t, parts) - 1) * work for parts, work in phases)


def busy_jiffies():
    """(busy, total) CPU jiffies of the whole machine since boot (/proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def others_busy(seconds=1.0):
    """Cores the rest of the machine keeps busy, averaged over `seconds` (we sleep meanwhile)."""
    b0, _ = busy_jiffies()
    start = time.perf_counter()
    time.sleep(seconds)
    b1, _ = busy_jiffies()
    return (b1 - b0) / HZ / (time.perf_counter() - start)


class Machine:
    """Waits for an idle machine before a run; remembers what it saw."""

    def __init__(self, idle, max_wait):
        self.idle, self.max_wait = idle, max_wait
        self.waited = 0.0
        self.gave_up = False
        self.worst_before = 0.0

    def wait_idle(self):
        start = time.perf_counter()
        while True:
            level = others_busy()
            if level < self.idle:
                self.waited += time.perf_counter() - start
                return level
            if self.gave_up or time.perf_counter() - start > self.max_wait:
                self.gave_up = True
                self.worst_before = max(self.worst_before, level)
                self.waited += time.perf_counter() - start
                return level
            time.sleep(10)


def timed_run(argv):
    """(wall seconds, CPU seconds of the child and its threads, cores other processes kept
    busy meanwhile) of one run."""
    b0, _ = busy_jiffies()
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    b1, _ = busy_jiffies()
    err = process.stderr.read().decode()
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed: {err}")
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, max(0.0, ((b1 - b0) / HZ - cpu) / wall)


def peak_run(argv):
    """Peak resident memory (MB) of one run, polling VmHWM."""
    from budgetsvm.memory import run_measuring_peak
    status, peak, err = run_measuring_peak([str(a) for a in argv])
    if status != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed: {err}")
    return peak


def scaled_mnist(name):
    """mnist (0–255 pixels) scaled to [0, 1] by value/255 (6 significant digits), cached."""
    out = WORK / f"{name}.scaled"
    if not out.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        with lzma.open(data_path(name), "rt") as src, open(tmp, "w") as dst:
            for line in src:
                label, *pairs = line.split()
                dst.write(label + "".join(
                    " %s:%.6g" % (p[:p.index(":")], int(p[p.index(":") + 1:]) / 255.0)
                    for p in pairs) + "\n")
        os.replace(tmp, out)
    return out


def problem_sizes(path):
    """(rows, features, stored values) of a data file."""
    from budgetsvm.io import read_problem
    X, _ = read_problem(str(path))
    return X.shape[0], X.shape[1], X.nnz


def refit_work(rows, n_sv):
    """Bytes of the refit of one group or class (README, Threads): the kernel block of the
    rows against the SVs, the Newton method's copies of a chunk of its rows (UPDATE_ROWS kernel
    rows and their features), and a few B × B matrices (the SVs' kernel matrix, its eigenbasis,
    the Hessian)."""
    from budgetsvm.refit import UPDATE_ROWS
    return 8 * rows * n_sv + 2 * 8 * min(rows, UPDATE_ROWS) * n_sv + 6 * 8 * n_sv * n_sv


def stream_refit_phase(d, n_sv):
    """(parts, bytes per part) of the refit that ends streaming training: the kernel block of
    its sample of rows is computed in blocks of KERNEL_BLOCK_ENTRIES / max(B, d) rows, each
    with a dense copy of its rows (mnist is dense enough for it) and its slice of the kernel
    block (budgetsvm.model.block_ranges)."""
    from budgetsvm.model import KERNEL_BLOCK_ENTRIES
    from budgetsvm.refit import STREAM_MAX_ROWS
    rows = KERNEL_BLOCK_ENTRIES // max(n_sv, d)
    return -(-STREAM_MAX_ROWS // rows), 8 * rows * (d + n_sv)


def build_tasks(tmp):
    """The tasks of the targets (skipping those whose data are missing)."""
    train, predict = BIN / "bsvm-train", BIN / "bsvm-predict"
    tasks = []

    def have(*names):
        try:
            for name in names:
                data_path(name)
            return True
        except FileNotFoundError:
            return False

    if have("sector.scale"):
        sector = data_path("sector.scale")
        n, d, _ = problem_sizes(sector)
        tasks.append(Task(
            "sector", "`bsvm-train -s dcd -c 1` on sector.scale (105 one-vs-rest problems)", 1.8,
            105, lambda t, o: [train, "-q", "-s", "dcd", "-c", "1", "-n", t, sector, o / "m"],
            73 * n + 8 * (d + 1)))
    for name in ("dna.scale", "satimage.scale"):
        if have(name):
            path = data_path(name)
            n, d, _ = problem_sizes(path)
            k = 3 if name == "dna.scale" else 6
            # solve phase: an SV store and per-row arrays; refit phase: REFIT_WORK
            part = max(8 * d * 501 + 33 * n, refit_work(n, 500))
            tasks.append(Task(
                name.split(".")[0], f"`bsvm-train -s bsca` on {name} ({k} one-vs-rest models, "
                "B = 500)", 1.7, k,
                lambda t, o, path=path: [train, "-q", "-s", "bsca", "-n", t, path, o / "m"],
                part))
    if have("a9a"):
        a9a = data_path("a9a")
        n, d, nnz = problem_sizes(a9a)
        fold_rows = n * 4 // 5
        tasks.append(Task(
            "a9a-cv", "`bsvm-train -s bsgd -v 5` on a9a (5 folds)", 1.8, 5,
            lambda t, o: [train, "-q", "-s", "bsgd", "-v", "5", "-n", t, a9a],
            # the fold's rows, its SV store, the refit's work arrays
            (nnz * 4 // 5) * 12 + 8 * fold_rows + 8 * d * 501 + refit_work(fold_rows, 500)))
        tasks.append(Task(
            "a9a-b1", "`bsvm-train -s dcd -b 1` on a9a (the model and 5 internal folds)", 1.6,
            6, lambda t, o: [train, "-q", "-s", "dcd", "-b", "1", "-n", t, a9a, o / "m"],
            (nnz * 4 // 5) * 12 + 8 * fold_rows + 73 * n + 8 * d))
    if have("mnist", "mnist.t"):
        test = scaled_mnist("mnist.t")
        model = WORK / "mnist.b1000.model"
        if not model.exists():
            subprocess.run([str(train), "-q", *MNIST_MODEL, str(scaled_mnist("mnist")),
                            str(model)], check=True)
        n, d, nnz = problem_sizes(test)
        block_share = (1 << 20) / test.stat().st_size
        tasks.append(Task(
            "mnist-predict", "`bsvm-predict` of mnist.t (scaled by 1/255) with a B = 1000 "
            "bsgd model (10 classes)", 1.8, 19,
            lambda t, o: [predict, "-q", "-n", t, test, model, o / "p"],
            # one more 1 MiB text block in flight (bsvm-predict keeps threads + 1), the rows
            # a worker parses from its block (12 bytes per value, 16 per row), the dense rows
            # of a kernel block (262 rows of d values) and the kernel block against 1000 SVs
            (1 << 20) + int(block_share * (12 * nnz + 16 * n)) + 262 * d * 8 + 262 * 1000 * 8,
            note=f"model: `bsvm-train {' '.join(MNIST_MODEL)}` on mnist scaled by 1/255"))
        # Not one of the tasks: a linear model, whose prediction costs little next to
        # reading the text, so that -n pays only if the blocks are parsed in the threads.
        big = WORK / "mnist.t.scaled.x8"
        if not big.exists():
            tmp = big.with_suffix(".tmp")
            tmp.write_bytes(test.read_bytes() * 8)
            os.replace(tmp, big)
        linear = WORK / "mnist.dcd.model"
        if not linear.exists():
            subprocess.run([str(train), "-q", *MNIST_LINEAR_MODEL, str(scaled_mnist("mnist")),
                            str(linear)], check=True)
        tasks.append(Task(
            "mnist-predict-linear", "`bsvm-predict` of mnist.t (scaled) 8 times over (154 MB) "
            "with a linear dcd model (10 classes)", None, 147,
            lambda t, o: [predict, "-q", "-n", t, big, linear, o / "p"],
            # one more 1 MiB text block in flight and the rows parsed from a block
            (1 << 20) + int(block_share * (12 * nnz + 16 * n)),
            note=f"linear model: `bsvm-train {' '.join(MNIST_LINEAR_MODEL)}` on mnist scaled "
                 "by 1/255; not a task of the issue (no target)"))
        # Not one of the tasks: streaming training, whose epochs parse the next buffer
        # in a worker thread while the (sequential) solver runs on the one before.
        train_file = scaled_mnist("mnist")
        n, d, nnz = problem_sizes(train_file)
        buffer_share = STREAM_BUFFER / train_file.stat().st_size
        tasks.append(Task(
            "mnist-stream", "`bsvm-train --stream -s bsgd --budget 100` on mnist (scaled, "
            "114 MB, 5 epochs)", None, 2,
            lambda t, o: [train, "-q", *MNIST_STREAM, "-n", t, train_file, o / "m"],
            # the next buffer: its text and its parsed rows (12 bytes per value, 16 per row)
            STREAM_BUFFER + int(buffer_share * (12 * nnz + 16 * n)),
            note=f"mnist-stream: `bsvm-train {' '.join(MNIST_STREAM)}` (C = 8, γ = 2^-5) on "
                 "mnist scaled by 1/255; not a task of the issue (no target)",
            phase2=stream_refit_phase(d, 100)))
    return tasks


def liblinear_comparison(tmp, machine, repeats, threads):
    """Our bsvm-train -n 1 / -n 2 and liblinear-official's read + train + save, all on the
    same uncompressed sector.scale file."""
    plain = decompressed("sector.scale", tmp)
    out = Path(tmp)
    runs = {"liblinear": [], **{t: [] for t in threads}}
    for _ in range(repeats):
        for key in ["liblinear", *threads]:
            argv = [sys.executable, "-c", LIBLINEAR_TRAIN, plain, out / "ll.model"] \
                if key == "liblinear" else \
                [BIN / "bsvm-train", "-q", "-s", "dcd", "-c", "1", "-n", key, plain, out / "m"]
            runs[key].append(robust_run(machine, argv))
    return runs


def robust_run(machine, argv, attempts=3):
    """A timed run on an idle machine, repeated when others used more than the idle level."""
    result = None
    for _ in range(attempts):
        machine.wait_idle()
        result = timed_run([str(a) for a in argv])
        if result[2] < machine.idle:
            break
    return result


def measure(args):
    """Rows, in the order measured: "task" (what each task is), "startup", "run" (one timed
    command), "peak", "liblinear" (the comparison on sector) and, last, "machine" (how idle
    it was)."""
    if args.quick:
        args.threads, args.repeats = "1,2,4", 2
    threads = [int(t) for t in args.threads.split(",")]
    machine = Machine(args.idle, args.max_wait)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        tasks = build_tasks(tmp)
        if args.only:
            tasks = [t for t in tasks if t.key in args.only.split(",")]
        for task in tasks:
            yield {"kind": "task", "task": task.key, "title": task.title,
                   "target": task.target, "parts": task.parts, "work_bytes": task.work_bytes,
                   "note": task.note, "phase2": task.phase2}
        # startup: the imports of bsvm-train, the floor of every whole command (as the
        # command's own name: budgetsvm.cli starts the commands as such, budgetsvm.lean_import)
        for repeat in range(args.repeats):
            wall, cpu, others = robust_run(machine, [
                sys.executable, "-c", "import sys; sys.argv[0] = 'bsvm-train'; "
                "import budgetsvm.cli.train, budgetsvm.bsgd, budgetsvm.bsca, budgetsvm.dcd"])
            yield {"kind": "startup", "repeat": repeat, "wall": wall, "cpu": cpu,
                   "others": others}
        for repeat in range(args.repeats):
            order = threads[repeat % len(threads):] + threads[:repeat % len(threads)]
            for task in tasks:
                for t in order:
                    wall, cpu, others = robust_run(machine, task.command(t, out))
                    print(f"{task.key} -n {t}: {(wall, cpu, others)}", flush=True)
                    yield {"kind": "run", "task": task.key, "threads": t, "repeat": repeat,
                           "wall": wall, "cpu": cpu, "others": others}
        for task in tasks:
            for t in threads:
                yield {"kind": "peak", "task": task.key, "threads": t,
                       "peak_mb": peak_run(task.command(t, out))}
        if any(t.key == "sector" for t in tasks):
            for runner, runs in liblinear_comparison(tmp, machine, args.repeats,
                                                     [1, 2]).items():
                for repeat, (wall, cpu, others) in enumerate(runs):
                    yield {"kind": "liblinear", "runner": runner, "repeat": repeat,
                           "wall": wall, "cpu": cpu, "others": others}
    yield {"kind": "machine", "cores": len(os.sched_getaffinity(0)), "idle": machine.idle,
           "max_wait": machine.max_wait, "waited": machine.waited, "gave_up": machine.gave_up,
           "worst_before": machine.worst_before}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2,4,8")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--idle", type=float, default=0.15,
                        help="cores other processes may keep busy for the machine to count as "
                             "idle (load < 0.3 on 2 cores)")
    parser.add_argument("--max-wait", type=float, default=1800.0,
                        help="seconds to wait for an idle machine before measuring anyway")
    parser.add_argument("--only", help="comma-separated task keys")
    parser.add_argument("--quick", action="store_true", help="threads 1,2,4; 2 repeats")
    add_report_only(parser)
    args = parser.parse_args(argv)
    run_bench("bench_threads", args, measure, report, datasets=DATASETS,
              peers=("liblinear-official", "numpy", "scipy"))


def med(values):
    return statistics.median(values)


def report(results):
    rows_of = results["rows"]
    options = results["meta"]["options"]
    threads = [int(t) for t in options["threads"].split(",")]
    tasks = [Task(r["task"], r["title"], r["target"], r["parts"], None, r["work_bytes"],
                  r["note"], r.get("phase2")) for r in rows_of if r["kind"] == "task"]
    machine = next((r for r in rows_of if r["kind"] == "machine"), None)
    if machine is None:         # written last: the run stopped before its end
        sys.exit("the results file has no 'machine' row (the run stopped before its end); "
                 "measure again")
    cores = machine["cores"]
    startup = [r["wall"] for r in rows_of if r["kind"] == "startup"]
    results = {task.key: {t: [] for t in threads} for task in tasks}
    peaks = {task.key: {} for task in tasks}
    ll = {}
    for r in rows_of:
        if r["kind"] == "run":
            results[r["task"]][r["threads"]].append((r["wall"], r["cpu"], r["others"]))
        elif r["kind"] == "peak":
            peaks[r["task"]][r["threads"]] = r["peak_mb"]
        elif r["kind"] == "liblinear":
            ll.setdefault(r["runner"], []).append((r["wall"], r["cpu"], r["others"]))
    ll = ll or None
    walls = {k: {t: [r[0] for r in runs] for t, runs in per.items()} for k, per in results.items()}
    cpus = {k: {t: [r[1] for r in runs] for t, runs in per.items()} for k, per in results.items()}
    others = [r[2] for per in results.values() for runs in per.values() for r in runs]
    rows, verdicts = [], []
    for task in tasks:
        w = walls[task.key]
        speed = {t: med(w[1]) / med(w[t]) for t in threads}
        two = speed.get(2)
        # Amdahl on 2 cores: T2 = T1 (s + (1 − s)/2) → the serial share s the run implies
        serial = 2 * med(w[2]) / med(w[1]) - 1 if 2 in w else None
        rows.append([task.title, *[spread(w[t], "{:.2f}") for t in threads],
                     *[f"{speed[t]:.2f}×" for t in threads if t != 1],
                     " / ".join(f"{med(cpus[task.key][t]):.2f}" for t in threads),
                     f"{serial:.0%}" if serial is not None else "–",
                     f"≥ {task.target}×" if task.target else "none"])
        if two is not None and task.target:
            verdicts.append(f"- {task.title}: {two:.2f}× with `-n 2` — target ≥ {task.target}× "
                            f"**{'met' if two >= task.target else 'missed'}**"
                            + ("" if two >= task.target else
                               f" (by {task.target - two:.2f}; the run's serial share is "
                               f"{serial:.0%} of the -n 1 time, which bounds -n 2 at "
                               f"{1 / (serial + (1 - serial) / 2):.2f}× on 2 cores)")
                            + ("" if serial >= 0 else
                               " — but faster than 2 cores allow (a negative serial share): "
                               "its -n 1 runs met a slower machine than its -n 2 runs, so "
                               "this run does not decide the target"))
    header = ["task", *[f"-n {t} wall s" for t in threads],
              *[f"speed-up -n {t}" for t in threads if t != 1],
              "CPU s (" + ", ".join(f"-n {t}" for t in threads) + ")",
              "serial share (from -n 1, -n 2)", "target at -n 2"]
    body = [table(header, rows)]
    over = [t for t in threads if t > cores]
    body.append(
        f"Whole commands, median (min–max) of {options['repeats']} runs each; speed-up = median wall "
        f"time of `-n 1` / median of `-n t`. CPU time is user + system of the command and all "
        f"its threads. The machine has {cores} cores: "
        + (f"`-n {', '.join(map(str, over))}` oversubscribe it (more threads than cores), so "
           "they show the cost of extra threads, not more speed. " if over else "")
        + f"Python start-up and the imports of bsvm-train alone take {med(startup):.2f} s "
        "(median), a part of every command that threads cannot shorten; the serial share "
        "column is what Amdahl's law gives from the -n 1 and -n 2 times: the share of the "
        "-n 1 time that did not split (start-up, reading the data, writing the model, the "
        "last part running alone).")
    body.append("\n".join(verdicts))
    # memory
    mrows = []
    for task in tasks:
        p1 = peaks[task.key][1]
        cells, ok = [], True
        for t in threads:
            extra = task.extra_bytes(t) / 2 ** 20
            bound = 1.1 * p1 + extra
            ok &= peaks[task.key][t] <= bound
            cells.append(f"{peaks[task.key][t]:.0f} (≤ {bound:.0f})" if t != 1
                         else f"{p1:.0f}")
        mrows.append([task.title, *cells, f"{task.work_bytes / 2 ** 20:.1f}",
                      "yes" if ok else "**no**"])
    body.append("Peak resident memory (MB, one run per thread count), with the bound of the "
                "issue in brackets: 1.1 × the -n 1 peak plus the work arrays of the parts that "
                "run at the same time (min(t, parts) − 1 more than with one thread):")
    body.append(table(["task", *[f"-n {t} MB" for t in threads],
                       "work arrays per part, MB", "within"], mrows))
    body.append("Work arrays per part (README, Threads): a one-vs-rest problem of dcd, 73 bytes "
                "per training row and the weight vector; a bsca model, its SV store (solve) or "
                "its refit's arrays (refit), whichever is larger; a refit, the kernel block of "
                "the rows against the 500 SVs, the Newton method's copies of 2,048 of those "
                "rows and their features, and six 500 × 500 matrices; a fold, a copy of its "
                "training rows plus its training's work arrays (for bsgd its SV store and the "
                "refit's arrays); a prediction block, one more 1 MiB block of text in flight, "
                "the rows parsed from a block (12 bytes per value), the dense copy of 262 of "
                "those rows and their kernel block against the 1000 SVs; streaming, in the epochs "
                "(2 parts: the solver and the parser of the next buffer) the next 16 MiB "
                "buffer of text and its parsed rows, in the refit that ends it (the larger "
                "bound of the two is shown) a block of 2^18 / 780 = 336 of its sample's 16,384 "
                "rows: their dense copy and their kernel block against the 100 SVs.")
    if ll is not None:
        lib = [r[0] for r in ll["liblinear"]]
        ours = {t: [r[0] for r in ll[t]] for t in (1, 2)}
        ratio = med(ours[2]) / med(lib)
        body.append(table(
            ["sector.scale, same uncompressed file", "wall s", "CPU s"],
            [["liblinear-official: svm_read_problem + train -s 3 -c 1 + save_model "
              "(one thread)", spread(lib, "{:.2f}"), f"{med([r[1] for r in ll['liblinear']]):.2f}"],
             *[[f"bsvm-train -s dcd -c 1 -n {t}", spread(ours[t], "{:.2f}"),
                f"{med([r[1] for r in ll[t]]):.2f}"] for t in (1, 2)]]))
        body.append(f"Our `-n 2` time ÷ LIBLINEAR's single-threaded time: {ratio:.2f} (goal ≤ "
                    f"0.6: **{'met' if ratio <= 0.6 else 'missed'}**). Both read the same "
                    "uncompressed text file and write a model file; LIBLINEAR's Python reader "
                    "is part of its command as ours is of ours.")
    load = (f"Before every run the script waited until other processes kept less than "
            f"{machine['idle']} cores busy (sampled over 1 s; waited {machine['waited']:.0f} s in "
            f"all); during the runs they used {max(others):.2f} cores at most "
            f"(median {med(others):.2f}).")
    if machine["gave_up"]:
        load += (f" **Provisional**: the machine did not become idle within "
                 f"{machine['max_wait']:.0f} s (up to {machine['worst_before']:.2f} busy cores "
                 "before a run), so some runs shared the cores with other work.")
    body.append(load)
    figure = plot(tasks, threads, walls, cores)
    if figure:
        body.append(figure)
    extra = [f"{task.key}: {task.note}" for task in tasks if task.note]
    return Section("Worker threads (-n): speed-up, CPU and memory", "\n\n".join(body),
                   extra=["BLAS limited to one thread (as the command-line tools do)", *extra])


def plot(tasks, threads, walls, cores):
    try:
        plt = pyplot()
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for task in tasks:
        w = walls[task.key]
        ax.plot(threads, [med(w[1]) / med(w[t]) for t in threads], marker="o",
                label=task.title.replace("`", ""))
    ax.plot(threads, [min(t, cores) for t in threads], color="gray", ls="--",
            label=f"ideal on {cores} cores")
    for task in tasks:
        if task.target:
            ax.plot([2], [task.target], marker="_", color="black", ms=12)
    ax.axvspan(cores + 0.01, max(threads) + 0.5, color="0.92", zorder=0)
    ax.set_xscale("log", base=2)
    ax.set_xticks(threads, [str(t) for t in threads])
    ax.set_xlabel("threads (-n); shaded: more threads than cores")
    ax.set_ylabel("speed-up of the whole command over -n 1")
    ax.legend(fontsize=6.5, loc="upper left")
    return save_figure(fig, "bench_threads-speedup.png",
                       "Speed-up of whole commands against the number of threads, per task "
                       "(black ticks: the targets at -n 2); beyond the machine's cores the "
                       "threads only share them")


if __name__ == "__main__":
    main()
