#!/usr/bin/env python3
"""Benchmark of bsvm-grid (issue 7).

1. Wall time of the same grid with ``-j 1`` and ``-j 2`` and the speed-up (target >= 1.7x on
   2 cores); the two result files must hold the same lines.
   * kernel solvers (BSGD, BSCA) on a9a at ``--budget 100``, log2c -5..15 step 2,
     log2g -15..3 step 2, 5 folds (the issue's setting);
   * while only the linear solver exists: a dcd C-grid on a9a (log2c -5..15 step 2, 5 folds).
2. The best point against LIBSVM's grid search for the exact SVM on a subset of a9a
   (libsvm-official, same grid, 5-fold CV, grid.py's best-point rule).

    .venv/bin/python scripts/bench_grid.py                 # everything available in this build
    .venv/bin/python scripts/bench_grid.py --solvers dcd   # the linear C-grid only
    .venv/bin/python scripts/bench_grid.py --quick         # bsgd only, smaller grid and data
    .venv/bin/python scripts/bench_grid.py --simulate      # + load-independent ideal speed-up

--quick: bsgd only, log2c -5..15 step 4 × log2g 3..-15 step -6 (24 points), on the first 8,000
rows of a9a for the speed-up and the first 2,000 for the LIBSVM comparison.

Measures into build/bench/grid.json (scripts/_common.py, run_bench), then writes the report
section build/bench/bench_grid.md (printed too) from that file alone (--report-only: without
measuring).
"""
import argparse
import lzma
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"      # one thread for every tool (LIBSVM/LIBLINEAR may use OpenMP)

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from _common import (Section, add_report_only, budgeted_defaults,  # noqa: E402
                     budgeted_defaults_text, data_path, run_bench, table)

A9A = data_path("a9a")
TARGET = 1.7          # issue 7: -j 2 at least 1.7x faster than -j 1 on 2 cores


def grid_command():
    exe = Path(sys.executable).parent / "bsvm-grid"
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-c", "from budgetsvm.cli.grid import main; main()"]


def available(solver):
    from budgetsvm.errors import ParameterError
    from budgetsvm.train import _solver_function
    try:
        _solver_function(solver)
        return True
    except ParameterError:
        return False


def run_grid(args, data, out, jobs):
    cmd = grid_command() + [str(a) for a in args] + ["-j", str(jobs), "-q", "-out", str(out),
                                                     str(data)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return seconds, proc.stdout.splitlines()


def speedup(label, args, data, workdir):
    print(f"== {label}: bsvm-grid {' '.join(map(str, args))} {data.name}", flush=True)
    times, lines = {}, {}
    for jobs in (1, 2):
        out = workdir / f"{label}-j{jobs}.out"
        times[jobs], stdout = run_grid(args, data, out, jobs)
        lines[jobs] = sorted(out.read_text().splitlines())
        print(f"   -j {jobs}: {times[jobs]:8.1f} s   {stdout[-2]}", flush=True)
    same = lines[1] == lines[2]
    print(f"   speed-up -j1/-j2: {times[1] / times[2]:.2f}x   "
          f"(points: {len(lines[1])}, same result lines: {same})", flush=True)
    return {"label": label, "j1": times[1], "j2": times[2], "same": same,
            "points": len(lines[1]), "best": stdout[-2] if len(stdout) >= 2 else "?"}


def simulated_speedup(label, args, data, workers=2):
    """Load-independent check: CPU time of every task (one fold of one point) measured in this
    process, then the -j 1 / -j N ratio of a greedy dispatch in job order (what the pool does).
    Useful on a shared machine, where wall-clock times measure the other users too."""
    from budgetsvm import grid
    from budgetsvm.cli.grid import parse_arguments
    from budgetsvm.io import read_problem
    from budgetsvm.train import stratified_folds
    options = parse_arguments([str(a) for a in args] + ["-out", "null", str(data)])
    X, y = read_problem(str(data))
    fold_of_row = stratified_folds(y, options.fold, options.params.seed)
    c_range, g_range, budgets, _ = grid.searched_dimensions(options)
    times = []
    for point in grid.job_points(c_range, g_range, budgets):
        params = grid.point_params(options.params, point)
        for fold in range(options.fold):
            start = time.process_time()
            grid.fold_correct(X, y, fold_of_row, params, fold)
            times.append(time.process_time() - start)
    busy = [0.0] * workers
    for t in times:
        busy[busy.index(min(busy))] += t
    ratio = sum(times) / max(busy)
    print(f"   {label}: task CPU time {sum(times):.1f} s in {len(times)} tasks; greedy dispatch "
          f"on {workers} workers: makespan {max(busy):.1f} s, ideal speed-up {ratio:.2f}x",
          flush=True)
    return ratio


def subset_file(rows, workdir):
    path = workdir / f"a9a-{rows}"
    if path.exists():
        return path
    with lzma.open(A9A, "rt") as src, open(path, "w") as dst:
        for i, line in enumerate(src):
            if i >= rows:
                break
            dst.write(line)
    return path


def frange(begin, end, step):
    from budgetsvm.grid import range_f
    return range_f(begin, end, step)


def libsvm_grid(path, c_range, g_range, folds):
    """LIBSVM's exact SVM on the same grid (grid.py's order and best-point rule)."""
    from libsvm.svmutil import svm_read_problem, svm_train

    from budgetsvm import grid
    y, x = svm_read_problem(str(path))
    order = grid.job_points(c_range, g_range)
    results = {}
    for point in order:
        rate = svm_train(y, x, f"-c {2.0 ** point.log2c} -g {2.0 ** point.log2g} "
                               f"-v {folds} -q")
        results[point] = float("%g" % rate)
    return grid.select_best(results, order), results


def compare_with_libsvm(solver, rows, c_args, g_args, folds, workdir):
    from budgetsvm import grid
    data = subset_file(rows, workdir)
    c_range, g_range = grid.parse_range(c_args), grid.parse_range(g_args)
    print(f"== best point vs LIBSVM (exact SVM, C-SVC RBF) on the first {rows} rows of a9a",
          flush=True)
    start = time.perf_counter()
    (lib_point, lib_rate), _ = libsvm_grid(data, c_range, g_range, folds)
    lib_seconds = time.perf_counter() - start
    out = workdir / f"{solver}-subset.out"
    seconds, stdout = run_grid(["-s", solver, "--budget", 100, "-log2c", c_args,
                                "-log2g", g_args, "-v", folds], data, out, 2)
    ours = grid.read_results(out)
    ours_best = grid.select_best(ours, grid.job_points(c_range, g_range))
    print(f"   LIBSVM  : {grid.format_result(lib_point, lib_rate)}   ({lib_seconds:.1f} s, 1 core)")
    print(f"   {solver:8s}: {grid.format_result(*ours_best)}   ({seconds:.1f} s, -j 2)")
    at_lib = ours.get(lib_point)
    if at_lib is not None:
        print(f"   {solver} at LIBSVM's best point: rate={at_lib!r} "
              f"(difference {lib_rate - at_lib:+.4f} points)", flush=True)
    return {"rows": rows, "solver": solver, "lib": grid.format_result(lib_point, lib_rate),
            "lib_rate": lib_rate, "lib_seconds": lib_seconds,
            "ours": grid.format_result(*ours_best), "ours_rate": ours_best[1],
            "ours_seconds": seconds, "at_lib": at_lib}


def measure(args):
    """Rows: "speedup" (one per solver: the -j 1 and -j 2 wall times, the best point and, with
    --simulate, the ideal speed-up), "skipped" (a solver missing from this build), "libsvm"
    (the best point against LIBSVM's) and, last, "machine" (load averages, cores, the
    defaults of the other options)."""
    if args.quick:
        args.solvers, args.rows = "bsgd", 8000
    args.c_args = "-5,15,4" if args.quick else "-5,15,2"
    args.g_args = "3,-15,-6" if args.quick else "3,-15,-2"
    c_args, g_args = args.c_args, args.g_args
    load_start = os.getloadavg()[0]
    print(f"cores: {os.cpu_count()}, load average: {load_start:.2f}", flush=True)
    compared = False
    with tempfile.TemporaryDirectory(prefix="bench_grid_") as tmp:
        workdir = Path(tmp)
        data = subset_file(args.rows, workdir) if args.rows else A9A
        for solver in args.solvers.split(","):
            if not available(solver):
                print(f"== {solver}: not available in this build, skipped", flush=True)
                yield {"kind": "skipped", "solver": solver}
                continue
            if solver in ("bsgd", "bsca"):
                grid_args = ["-s", solver, "--budget", args.budget, "-log2c", c_args,
                             "-log2g", g_args, "-v", args.folds]
            else:
                grid_args = ["-s", solver, "-log2c", c_args, "-v", args.folds]
            row = {"kind": "speedup", **speedup(solver, grid_args, data, workdir),
                   "command": " ".join(map(str, grid_args))}
            if args.simulate:
                row["simulated"] = simulated_speedup(solver, grid_args, data)
            yield row
            if solver in ("bsgd", "bsca") and args.subset and not compared:
                compared = True
                yield {"kind": "libsvm", **compare_with_libsvm(solver, args.subset, c_args,
                                                               g_args, args.folds, workdir)}
    from budgetsvm.params import TrainParams
    yield {"kind": "machine", "load_start": load_start, "load_end": os.getloadavg()[0],
           "cores": os.cpu_count(), "epochs": TrainParams().epochs, **budgeted_defaults()}


def report(results):
    args = argparse.Namespace(**results["meta"]["options"])
    c_args, g_args = args.c_args, args.g_args
    rows_of = results["rows"]
    speedups = [r for r in rows_of if r["kind"] == "speedup"]
    simulated = {r["label"]: r["simulated"] for r in speedups if "simulated" in r}
    comparison = next((r for r in rows_of if r["kind"] == "libsvm"), None)
    skipped = [r["solver"] for r in rows_of if r["kind"] == "skipped"]
    machine = next((r for r in rows_of if r["kind"] == "machine"), None)
    if machine is None:         # written last: the run stopped before its end
        sys.exit("the results file has no 'machine' row (the run stopped before its end); "
                 "measure again")
    load_start, load_end, cores = machine["load_start"], machine["load_end"], machine["cores"]

    rows_text = f"the first {args.rows:,} rows of a9a" if args.rows else "a9a (32,561 rows)"
    body = [f"### Parallel speed-up: `-j 1` against `-j 2` on {rows_text}"]
    rows = []
    for r in speedups:
        rows.append([f"`{r['command']}`", r["points"], f"{r['j1']:.1f}", f"{r['j2']:.1f}",
                     f"{r['j1'] / r['j2']:.2f}x", "yes" if r["same"] else "**no**",
                     r["best"].removeprefix("best ")]
                    + ([f"{simulated[r['label']]:.2f}x"] if simulated else []))
    body.append(table(["bsvm-grid options", "points", "-j 1 wall s", "-j 2 wall s", "speed-up",
                       "same .out lines", "best point (-j 2)"]
                      + (["ideal speed-up (CPU times)"] if simulated else []), rows))
    if speedups:
        worst = min(r["j1"] / r["j2"] for r in speedups)
        body.append(
            f"Single runs, wall-clock seconds of the whole `bsvm-grid` command (start-up, "
            f"reading and the {args.folds}-fold cross-validation of every point). Target "
            f"(issue 7): -j 2 at least {TARGET:g}x faster than -j 1 on 2 cores — "
            + ("met" if worst >= TARGET else "**missed**")
            + f" (lowest {worst:.2f}x). Load average {load_start:.2f} at the start and "
            f"{load_end:.2f} at the end on {cores} cores (it counts this benchmark's "
            "own processes too).")
        if worst < TARGET:
            reasons = []
            if args.rows:
                reasons.append("on a subset the whole search takes seconds, so the fixed "
                               "start-up of -j 2 (two worker processes, each importing "
                               "budgetsvm and reading the data) is a large share of it")
            if max(load_start, load_end) > 1.5:
                reasons.append("other work was running on this shared machine, so the second "
                               "worker did not always have a free core")
            body[-1] += (" Likely reasons for the miss: " + "; ".join(reasons) + "."
                         if reasons else "")
            body[-1] += (" `--simulate` gives the load-independent ideal speed-up from the "
                         "tasks' CPU times.")
    if comparison:
        c = comparison
        body.append(f"### Best point against LIBSVM's grid search (exact SVM) on the first "
                    f"{c['rows']:,} rows of a9a")
        body.append(table(
            ["tool", "best point", "CV rate %", "time"],
            [["LIBSVM (C-SVC, RBF)", c["lib"], f"{c['lib_rate']:g}",
              f"{c['lib_seconds']:.1f} s, 1 process"],
             [f"bsvm-grid -s {c['solver']} --budget {args.budget}", c["ours"],
              f"{c['ours_rate']:g}", f"{c['ours_seconds']:.1f} s, -j 2"]]))
        text = (f"Same grid, {args.folds}-fold CV, grid.py's best-point rule for both. "
                f"The budgeted model's best CV rate is "
                f"{abs(c['lib_rate'] - c['ours_rate']):.2f} points "
                + ("below" if c["ours_rate"] <= c["lib_rate"] else "above")
                + " LIBSVM's.")
        if c["at_lib"] is not None and c["lib"] != c["ours"]:
            text += (f" At LIBSVM's best point {c['solver']} scores {c['at_lib']:g}%: the "
                     f"budgeted model ({args.budget} support vectors) prefers a different "
                     "region of the grid, so the parameters found for the exact SVM do not "
                     "transfer to it; search its own grid.")
        body.append(text)
    if skipped:
        body.append(f"Not available in this build, skipped: {', '.join(skipped)}.")
    return Section("Grid search (bsvm-grid)", "\n\n".join(body),
                   extra=[f"Grid: log2c {c_args}, log2g {g_args} (kernel solvers), "
                          f"{args.folds}-fold stratified CV with seed 1 (bsvm-grid's default); "
                          f"--budget {args.budget}, other options at bsvm-train's defaults "
                          f"({machine['epochs']} epochs, {budgeted_defaults_text(machine)})",
                          "LIBSVM: libsvm-official's svm_train with -v on the same grid "
                          "(its own fold split)",
                          "BLAS and OpenMP limited to one thread per process (LIBSVM's OpenMP "
                          "build otherwise competes with the -j workers for the 2 cores)"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solvers", default="bsgd,bsca,dcd",
                        help="comma-separated; solvers missing from this build are skipped")
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--subset", type=int, default=2000,
                        help="rows of a9a for the LIBSVM comparison (0: skip it)")
    parser.add_argument("--rows", type=int, default=0,
                        help="rows of a9a for the speed-up runs (0: all)")
    parser.add_argument("--simulate", action="store_true",
                        help="also measure task CPU times and the ideal -j 2 speed-up "
                             "(meaningful on a loaded machine)")
    parser.add_argument("--quick", action="store_true",
                        help="bsgd only; log2c -5..15 step 4, log2g 3..-15 step -6; the first "
                             "8,000 rows of a9a")
    add_report_only(parser)
    run_bench("bench_grid", parser.parse_args(), measure, report, datasets=["a9a"],
              peers=("libsvm-official", "numpy", "scipy"))


if __name__ == "__main__":
    main()
