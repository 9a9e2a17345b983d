#!/usr/bin/env python3
"""The experiment of Glasmachers & Dogan (2013) and issue 19's targets: adaptive coordinate
frequencies (-s acf, with shrinking, the default; and --acf-shrink none, the paper's algorithm)
against the baseline dual CD (-s dcd, shrinking) and LIBLINEAR -s 3 (liblinear-official), in the
same run.

For every data set, tolerance and C: CPU seconds of training, coordinate updates (steps with
|PG| > 1e-12, summed over one-vs-rest sub-problems) and outer iterations (dcd: sweeps of the
active set; acf: sweeps of the scheduled steps; LIBLINEAR: its own "#iter" lines), plus the sum
over the C grid (the cost of a grid search). L1 loss, no bias (-B -1), no iteration limit for ours
(Glasmachers & Dogan removed it); LIBLINEAR keeps its fixed 300-iteration cap, and a run that hits
it is marked "cap" (it then stopped early, so its time is not comparable). Each of our runs is
capped at --timeout seconds of wall clock (checked once per outer iteration by the callback;
reported as "> cap"), and a solver that hit the cap at some C is not run at the larger C of that
data set (its time only grows with C). Every (data set, eps) runs in its own subprocess, the
solvers alternating C by C and repeat by repeat, so that a change of the machine's load hits all
of them alike; a point is repeated up to --repeats times while the runs of that point took less
than --repeat-budget CPU seconds in all (the median is reported). mnist values are divided
by 255.

The issue 19 targets, stated as met or missed from this run's numbers: acf ÷ dcd CPU time ≤ 1.2
for every (data set, eps, C); acf at least 3× faster than dcd at C ≥ 100 on sector.scale; the sum
over the C grid of acf below that of dcd on every data set (and eps).

The setting of Glasmachers & Dogan, measured here where we can: its stopping rule is the same for
both solvers (max|PG| < eps; our dcd's default is LIBLINEAR's stricter M − m ≤ eps, |M|, |m| ≤ eps),
so the paper-setting table runs the baseline with that rule (dcd_solve stop="pg") against the
paper's ACF on sector.scale, the one set of ours like the paper's (sparse, d > n).

Measures into build/bench/acf.json (one row per data set, eps, solver and C; scripts/_common.py,
run_bench), then writes the report section build/bench/bench_acf.md with its figure (CPU time
against C, log-log, per data set: docs/figures/bench_acf-time-vs-C.png) from that file alone;
--report-only rebuilds them without measuring. Data: $BSVM_DATA (required).

    python scripts/bench_acf.py [--quick] [--datasets w8a sector.scale] [--C 1 1000] [--eps 0.01]
                                [--report-only]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"      # one thread for every tool (LIBSVM/LIBLINEAR may use OpenMP)

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, SCRIPTS)

from _common import (CapturedCStdout, Section, add_data_option, add_report_only,  # noqa: E402
                     data_dir, machine, pyplot, run_bench, save_figure, spread, table, versions)

DATASETS = ["a9a", "w8a", "ijcnn1", "mnist", "sector.scale"]
C_GRID = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
# --quick: sector.scale (the paper-like set, and the 3x target) over the whole C grid, and w8a
# (n >> d, where the paper's ACF loses) up to C = 10, eps 0.01 only.
QUICK = {"sector.scale": C_GRID, "w8a": [0.01, 0.1, 1.0, 10.0]}
EPS = [0.01, 0.001]
SOLVERS = ["dcd", "acf", "acf-paper", "liblinear"]
PAPER_SOLVERS = ["dcd-pg", "acf-paper"]        # Glasmachers & Dogan's comparison: one stopping rule
PAPER_SET = "sector.scale"
RATIO_LIMIT = 1.2            # issue 19: acf ÷ dcd ≤ 1.2 everywhere
SECTOR_SPEEDUP = 3.0         # issue 19: acf ≥ 3x faster than dcd at C ≥ 100 on sector.scale
NAMES = {"dcd": "dcd (baseline, shrinking)", "acf": "acf (shrinking, default)",
         "acf-paper": "acf --acf-shrink none (Glasmachers & Dogan 2013)",
         "liblinear": "LIBLINEAR -s 3",
         "dcd-pg": "dcd, stop max|PG| < eps"}

# The data sets of Glasmachers & Dogan (2013) with the sizes the LIBSVM data collection lists for
# them (the paper's own copies may differ slightly); none of them is in our data folder.
PAPER_DATA = [("covtype (binary)", "581,012", "54", "dense, n ≫ d (the baseline wins there)"),
              ("kdd-a (kdd2010 algebra)", "8,407,752", "20,216,830", "sparse"),
              ("kdd-b (kdd2010 bridge)", "19,264,097", "29,890,095", "sparse"),
              ("news20 (binary)", "19,996", "1,355,191", "sparse, d ≫ n"),
              ("rcv1 (binary)", "20,242", "47,236", "sparse"),
              ("url", "2,396,130", "3,231,961", "sparse")]


class Timeout(Exception):
    pass


def load(name, folder):
    from budgetsvm.io import read_problem
    X, y = read_problem(os.path.join(folder, name + ".xz"))
    if name.startswith("mnist"):
        X = X / 255.0
    return X.tocsr(), y


def run_ours(X, y, solver, C, eps, seed, timeout):
    """Train like dcd.fit_linear (same sub-problems, seeds and costs) with a wall-clock cap;
    the time is CPU time of this process."""
    import numpy as np

    from budgetsvm.labels import group_classes
    from budgetsvm._rng import sub_seed
    from budgetsvm.dcd import CORES, subproblems
    from budgetsvm.params import TrainParams
    from budgetsvm.problem import canonical_csr
    name = {"acf-paper": "acf", "dcd-pg": "dcd"}.get(solver, solver)
    params = TrainParams(solver=name, C=C, eps=eps, max_iter=0, seed=seed, bias=-1.0,
                         acf_shrink="none" if solver == "acf-paper" else "on")
    core, specific = CORES[name](params)
    if solver == "dcd-pg":
        specific["stop"] = "pg"
    start_cpu = time.process_time()
    X = canonical_csr(X)
    labels, y_index = group_classes(y)
    data, indices = X.data, X.indices.astype(np.int32, copy=False)
    indptr = X.indptr.astype(np.int64, copy=False)
    from budgetsvm import _dcd
    row_norms = _dcd._row_norms(data, indptr)      # once per training, as fit_linear does
    deadline = time.perf_counter() + timeout

    def check(it, violation):
        if time.perf_counter() > deadline:
            raise Timeout

    updates = iters = 0
    try:
        for r, (_, yr, C_i) in enumerate(subproblems(y_index, labels, params)):
            res = core(data, indices, indptr, yr, C_i, X.shape[1], eps=eps, max_iter=0,
                       loss="l1", seed=sub_seed(seed, r), callback=check,
                       row_norms=row_norms, **specific)
            updates += res.n_updates
            iters += res.n_iter
    except Timeout:
        return {"seconds": None, "updates": None, "iters": None, "capped": 0}
    return {"seconds": time.process_time() - start_cpu, "updates": updates, "iters": iters,
            "capped": 0}


def run_liblinear(X, y, C, eps):
    import numpy as np
    from liblinear import liblinear as ll
    from liblinear import liblinearutil
    prob = ll.problem(np.asarray(y, dtype=np.float64), X)
    param = liblinearutil.parameter(f"-s 3 -c {C:g} -e {eps:g} -B -1")
    with CapturedCStdout() as cap:
        start = time.process_time()
        liblinearutil.train(prob, param)
        seconds = time.process_time() - start
    text = cap.text
    iters = [int(v) for v in re.findall(r"#iter = (\d+)", text)]
    return {"seconds": seconds, "updates": None, "iters": sum(iters),
            "capped": text.count("reaching max number of iterations")}


def worker(args):
    """One (data set, eps): every solver at every C, alternating solver by solver and repeat by
    repeat; one JSON line per (solver, C) on stdout (seconds: the median CPU time; all_seconds:
    every run; skipped: not run because this solver hit the cap at a smaller C)."""
    X, y = load(args.dataset, args.data)
    capped = set()
    for C in args.C:
        runs = {s: [] for s in args.solvers}
        spent = {s: 0.0 for s in args.solvers}
        for rep in range(args.repeats):
            todo = [s for s in args.solvers if s not in capped
                    and (rep == 0 or (runs[s] and runs[s][-1]["seconds"] is not None
                                      and spent[s] < args.repeat_budget))]
            if not todo:
                break
            for s in todo:
                r = run_liblinear(X, y, C, args.eps) if s == "liblinear" else \
                    run_ours(X, y, s, C, args.eps, args.seed, args.timeout)
                runs[s].append(r)
                if r["seconds"] is None:
                    capped.add(s)
                else:
                    spent[s] += r["seconds"]
        for s in args.solvers:
            if not runs[s]:
                out = {"seconds": None, "updates": None, "iters": None, "capped": 0,
                       "skipped": True}
            else:
                out = dict(runs[s][-1])
                done = [r["seconds"] for r in runs[s] if r["seconds"] is not None]
                if len(done) == len(runs[s]):
                    out["all_seconds"] = done
                    out["seconds"] = statistics.median(done)
            print(json.dumps({"solver": s, "C": C, **out}), flush=True)


def launch(args, dataset, eps, cs, solvers):
    """{solver: {C: result}} of one worker subprocess (missing values count as timed out)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--dataset", dataset,
           "--eps", repr(eps), "--data", args.data, "--seed", str(args.seed), "--timeout",
           repr(args.timeout), "--repeats", str(args.repeats), "--repeat-budget",
           repr(args.repeat_budget), "--solvers", *solvers, "--C", *map(repr, cs)]
    hard = len(cs) * len(solvers) * (args.timeout + 2 * args.repeat_budget + 60) + 300
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=hard)
        text, err = proc.stdout, proc.stderr if proc.returncode else ""
    except subprocess.TimeoutExpired as exc:
        text, err = exc.stdout or "", "hard timeout"
        text = text.decode() if isinstance(text, bytes) else text
    if err:
        print(f"# {dataset} eps={eps:g}: {err.strip().splitlines()[-1]}", file=sys.stderr)
    results = {s: {} for s in solvers}
    for line in text.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r.pop("solver")][r["C"]] = r
    return results


def seconds(r):
    return None if r is None else r["seconds"]


def fmt_seconds(r, timeout):
    if r is None or r["seconds"] is None:
        return f"> {timeout:g}" + (" (not run)" if r and r.get("skipped") else "")
    text = spread(r["all_seconds"], "{:.3g}") if r.get("all_seconds") else f"{r['seconds']:.3g}"
    return text + (" (cap)" if r.get("capped") else "")


def fmt_count(value):
    if value is None:
        return "—"
    return f"{value / 1e6:.1f}M" if value >= 1e6 else f"{value:,}"


def bounds(num, den, timeout):
    """(low, high) bounds of num/den where None means 'more than timeout'; None if unknown."""
    if num is not None and den is not None:
        return num / den, num / den
    if num is not None and den is None:
        return 0.0, num / timeout
    if num is None and den is not None:
        return timeout / den, float("inf")
    return None


def sum_ratio(sa, a_over, sd, d_over):
    """acf sum ÷ dcd sum where a sum holding a capped run is only a lower bound."""
    if a_over and d_over:
        return "?"
    return ("< " if d_over else "> " if a_over else "") + f"{sa / sd:.2f}"


def fmt_bounds(b):
    if b is None:
        return "?"
    lo, hi = b
    if lo == hi:
        return f"{lo:.2f}"
    return f"< {hi:.2f}" if lo == 0.0 else f"> {lo:.2f}"


def measure(args):
    """One row per (table, data set, eps, solver, C): table "main" (every solver) or "paper"
    (the paper-setting comparison); the worker's result (seconds: the median CPU time,
    all_seconds, updates, iters, capped, skipped) or missing: true when the worker gave none
    (counted as over the cap)."""
    if args.quick:
        args.plan, args.eps, args.timeout = dict(QUICK), [0.01], 120.0
    else:
        args.plan = {name: list(args.C) for name in args.datasets}
    plan = args.plan

    def rows_of(table_name, dataset, eps, cs, solvers, res):
        for s in solvers:
            for C in cs:
                r = res[s].get(C)
                yield {"table": table_name, "dataset": dataset, "eps": eps, "solver": s,
                       "C": C, **(r if r is not None else {"missing": True})}

    print(f"# {machine()}; {versions('numpy', 'scipy', 'liblinear-official')}", file=sys.stderr)
    for dataset, cs in plan.items():
        if not os.path.exists(os.path.join(args.data, dataset + ".xz")):
            continue                          # listed as missing in the setting block
        for eps in args.eps:
            res = launch(args, dataset, eps, cs, args.solvers)
            for s in args.solvers:
                for C in cs:
                    r = res[s].get(C)
                    print(f"# {dataset} eps={eps:g} C={C:g} {s}: "
                          f"{fmt_seconds(r, args.timeout)} s, updates "
                          f"{fmt_count(r and r['updates'])}, outer "
                          f"{fmt_count(r and r['iters'])}", file=sys.stderr, flush=True)
            yield from rows_of("main", dataset, eps, cs, args.solvers, res)
    if not args.no_paper and PAPER_SET in plan and \
            os.path.exists(os.path.join(args.data, PAPER_SET + ".xz")):
        for eps in args.eps:
            res = launch(args, PAPER_SET, eps, plan[PAPER_SET], PAPER_SOLVERS)
            yield from rows_of("paper", PAPER_SET, eps, plan[PAPER_SET], PAPER_SOLVERS, res)


def grouped(results, table_name):
    """[(data set, eps, the Cs, {solver: {C: result}})] of one table, in the order measured."""
    groups = {}
    for row in results["rows"]:
        if row["table"] != table_name:
            continue
        dataset, eps, cs, res = groups.setdefault((row["dataset"], row["eps"]),
                                                  (row["dataset"], row["eps"], [], {}))
        if row["C"] not in cs:
            cs.append(row["C"])
        got = res.setdefault(row["solver"], {})
        if not row.get("missing"):
            got[row["C"]] = {k: v for k, v in row.items()
                             if k not in ("table", "dataset", "eps", "solver")}
    return list(groups.values())


def report(results):
    args = argparse.Namespace(**results["meta"]["options"])
    rows, paper_rows = grouped(results, "main"), grouped(results, "paper")
    body = [make_table(rows, args)]
    figure = make_figure(rows, args)
    if figure:
        body.append(figure)
    body.append(targets(rows, args))
    body.append(paper_setting(rows, paper_rows, args))
    grid = sorted({C for cs in args.plan.values() for C in cs})
    return Section(
        "Adaptive coordinate frequencies vs dual CD and LIBLINEAR (Glasmachers & Dogan 2013)",
        "\n\n".join(body),
        extra=[f"Hyper-parameters: C ∈ {{{', '.join(f'{c:g}' for c in grid)}}} (per data set "
               f"as in the table), eps ∈ {{{', '.join(f'{e:g}' for e in args.eps)}}}, L1 loss, "
               "no bias; ACF constants c = 0.2, p_min = 0.1, p_max = 10 (the defaults with "
               "shrinking; the paper's algorithm, --acf-shrink none: p_min = 0.05, p_max = 20)",
               f"Seed {args.seed} for our coordinate orders; LIBLINEAR uses its own unseeded "
               f"rand(); up to {args.repeats} runs per point while they take less than "
               f"{args.repeat_budget:g} CPU s in all (median, and min–max where repeated); "
               f"our runs capped at {args.timeout:g} s of wall clock; CPU seconds of the "
               "training alone (data loading excluded), every tool on one thread "
               "(OpenMP/BLAS limited to 1)"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(ap)
    ap.add_argument("--datasets", nargs="+", default=DATASETS)
    ap.add_argument("--C", nargs="+", type=float, default=C_GRID)
    ap.add_argument("--eps", nargs="+", type=float, default=EPS)
    ap.add_argument("--solvers", nargs="+", default=SOLVERS, choices=SOLVERS + ["dcd-pg"])
    ap.add_argument("--timeout", type=float, default=600.0, help="cap per run, seconds")
    ap.add_argument("--repeats", type=int, default=5, help="most runs per point (median)")
    ap.add_argument("--repeat-budget", type=float, default=3.0,
                    help="repeat a point only while its runs took less CPU time than this")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-paper", action="store_true",
                    help="skip the paper-setting table (dcd with max|PG| < eps vs paper ACF)")
    ap.add_argument("--quick", action="store_true",
                    help="sector.scale over the C grid and w8a at C ≤ 10, eps 0.01, cap 120 s")
    add_report_only(ap)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dataset", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.report_only:
        return run_bench("bench_acf", args, measure, report)
    args.data = args.data or str(data_dir())        # exits with a message when BSVM_DATA is unset
    if args.worker:
        args.eps = args.eps[0]
        return worker(args)
    datasets = list(QUICK) if args.quick else args.datasets
    run_bench("bench_acf", args, measure, report, datasets=datasets,
              peers=("liblinear-official", "numpy", "scipy"))


def make_table(rows, args):
    solvers = args.solvers
    both = {"dcd", "acf"} <= set(solvers)
    head = ["data set", "eps", "C"] + [f"{s} s" for s in solvers] + \
        [f"{s} updates" for s in solvers if s != "liblinear"] + \
        [f"{s} outer it" for s in solvers] + (["acf ÷ dcd"] if both else [])
    lines = []
    for dataset, eps, cs, res in rows:
        sums = {s: 0.0 for s in solvers}
        over = {s: False for s in solvers}
        for C in cs:
            cells = [dataset, f"{eps:g}", f"{C:g}"]
            rs = {s: res[s].get(C) for s in solvers}
            for s in solvers:
                r = rs[s]
                cells.append(fmt_seconds(r, args.timeout))
                if seconds(r) is None:
                    sums[s] += args.timeout
                    over[s] = True
                else:
                    sums[s] += r["seconds"]
            cells += [fmt_count(rs[s] and rs[s]["updates"]) for s in solvers if s != "liblinear"]
            cells += [fmt_count(rs[s] and rs[s]["iters"])
                      + (" (cap)" if rs[s] and rs[s]["capped"] else "") for s in solvers]
            if both:
                cells.append(fmt_bounds(bounds(seconds(rs["acf"]), seconds(rs["dcd"]),
                                               args.timeout)))
            lines.append(cells)
        cells = [f"**{dataset}**", f"{eps:g}", "**sum**"]
        cells += [("> " if over[s] else "") + f"{sums[s]:.3g}" for s in solvers]
        cells += [""] * (len(head) - len(cells) - (1 if both else 0))
        if both:
            cells.append(f"**{sum_ratio(sums['acf'], over['acf'], sums['dcd'], over['dcd'])}**")
        lines.append(cells)
    return table(head, lines) + (
        f"\n\nCPU seconds of training (median (min–max) where repeated). Ours without an "
        f"iteration limit, capped at {args.timeout:g} s of wall clock ('> {args.timeout:g}'; "
        "'(not run)': the solver hit the cap at a smaller C; a grid sum containing one counts "
        "the cap, so it is a lower bound); LIBLINEAR -s 3 with its fixed 300-iteration cap "
        "('(cap)': stopped there with at least one sub-problem unconverged, so its time is not "
        "comparable). Each solver stops by its own rule: dcd and LIBLINEAR at M − m ≤ eps "
        "with |M|, |m| ≤ eps, acf at max|PG| < eps (up to 2x looser). Updates: coordinate "
        "steps with |PG| > 1e-12 summed over one-vs-rest sub-problems (LIBLINEAR does not "
        "report them). Outer iterations: dcd sweeps of the active set, acf sweeps of the "
        "scheduled steps. acf ÷ dcd below 1 means ACF (the default, with shrinking) is faster; "
        "the **sum** row is the cost of the whole C grid (a grid search).")


def make_figure(rows, args):
    """CPU time against C (log-log), one panel per data set, first eps only; one line per
    solver; hollow markers where LIBLINEAR stopped at its iteration cap; crosses at the cap
    where ours hit it."""
    eps0 = args.eps[0]
    datasets = list(dict.fromkeys(d for d, e, *_ in rows if e == eps0))
    if not datasets:
        return None
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    colors = {"dcd": "#1f77b4", "acf": "#d62728", "acf-paper": "#ff9896",
              "liblinear": "#2ca02c"}
    styles = {"acf-paper": "--"}
    fig, axes = plt.subplots(1, len(datasets), figsize=(3.9 * len(datasets), 3.5),
                             squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        for dataset_, eps, cs, res in rows:
            if dataset_ != dataset or eps != eps0:
                continue
            for s in args.solvers:
                pts = [(C, res[s][C]) for C in cs if C in res[s] and res[s][C]["seconds"]]
                over = [C for C in cs if C in res[s] and res[s][C]["seconds"] is None]
                if pts:
                    ax.plot([C for C, _ in pts], [r["seconds"] for _, r in pts],
                            styles.get(s, "-"), color=colors[s], label=NAMES[s], lw=1.4)
                    for C, r in pts:
                        ax.plot([C], [r["seconds"]], "o", color=colors[s], ms=4,
                                mfc="white" if r.get("capped") else colors[s])
                if over:
                    ax.plot(over, [args.timeout] * len(over), "x", color=colors[s], ms=6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("C")
        ax.set_title(dataset)
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("training time (CPU s)")
    axes[0][-1].legend(fontsize=7, loc="upper left")
    caption = (f"CPU time of training against C (log-log), eps {eps0:g}: baseline dual CD, ACF "
               "with shrinking (the default), the paper's ACF and LIBLINEAR -s 3 in the same "
               "run; hollow markers: LIBLINEAR stopped at its 300-iteration cap; crosses: ours "
               f"hit the {args.timeout:g} s cap")
    return save_figure(fig, "bench_acf-time-vs-C.png", caption)


def targets(rows, args):
    """Issue 19's three targets, met or missed from this run's numbers."""
    if not {"dcd", "acf"} <= set(args.solvers):
        return ""
    lines = ["**Issue 19's targets** (CPU time, this run):"]
    worst, undecided, misses = None, [], []
    for dataset, eps, cs, res in rows:
        for C in cs:
            b = bounds(seconds(res["acf"].get(C)), seconds(res["dcd"].get(C)), args.timeout)
            where = f"{dataset} eps {eps:g} C {C:g}"
            if b is None or (b[0] <= RATIO_LIMIT < b[1] and b[0] != b[1]):
                undecided.append(where)
                continue
            if b[0] > RATIO_LIMIT:
                misses.append(f"{where}: {fmt_bounds(b)}")
            value = b[1] if b[1] != float("inf") else b[0]
            if worst is None or value > worst[0]:
                worst = (value, where, fmt_bounds(b))
    if worst:
        verdict = "met" if not misses else f"**missed** at {len(misses)} point(s): " + \
            "; ".join(misses)
        lines.append(f"- acf ÷ dcd ≤ {RATIO_LIMIT:g} at every (data set, eps, C): {verdict}; "
                     f"the largest ratio is {worst[2]} ({worst[1]})."
                     + (f" Not decided (both over the cap): {', '.join(undecided)}."
                        if undecided else ""))
    sector = [(eps, C, bounds(seconds(res["dcd"].get(C)), seconds(res["acf"].get(C)),
                              args.timeout))
              for dataset, eps, cs, res in rows if dataset == "sector.scale"
              for C in cs if C >= 100]
    if sector:
        parts = [f"eps {eps:g} C {C:g}: {fmt_bounds(b)}x" for eps, C, b in sector]
        ok = all(b is not None and b[0] >= SECTOR_SPEEDUP for _, _, b in sector)
        lines.append(f"- acf at least {SECTOR_SPEEDUP:g}x faster than dcd at C ≥ 100 on "
                     f"sector.scale (dcd ÷ acf): {'; '.join(parts)} — "
                     + ("met." if ok else f"**missed** (short of {SECTOR_SPEEDUP:g}x by "
                        + ", ".join(f"{SECTOR_SPEEDUP / b[1]:.2f}x" for _, _, b in sector
                                    if b and b[1] < SECTOR_SPEEDUP) + ")."))
    sums = []
    for dataset, eps, cs, res in rows:
        d = [seconds(res["dcd"].get(C)) for C in cs]
        a = [seconds(res["acf"].get(C)) for C in cs]
        sd = sum(args.timeout if v is None else v for v in d)      # lower bounds if capped
        sa = sum(args.timeout if v is None else v for v in a)
        if None not in a and None not in d:
            ok = sa < sd
        elif None not in a:             # only dcd capped: its true sum is even larger
            ok = True if sa < sd else None
        elif None not in d:             # only acf capped
            ok = False if sa >= sd else None
        else:
            ok = None
        sums.append((dataset, eps, sa, sd, ok, None in a or None in d))
    if sums:
        parts = [f"{d} eps {e:g}: {sa:.3g} vs {sd:.3g} s" + (" (capped runs counted at the cap)"
                                                               if capped else "")
                 for d, e, sa, sd, ok, capped in sums]
        bad = [f"{d} eps {e:g}" for d, e, sa, sd, ok, capped in sums if ok is False]
        unknown = [f"{d} eps {e:g}" for d, e, sa, sd, ok, capped in sums if ok is None]
        lines.append("- the grid sum of acf below dcd's on every set: "
                     + ("met" if not bad and not unknown else
                        ("**missed** on " + ", ".join(bad) if bad else "not decided on "
                         + ", ".join(unknown)))
                     + " (acf vs dcd: " + "; ".join(parts) + ").")
    return "\n".join(lines)


def paper_setting(rows, paper_rows, args):
    """The setting of Glasmachers & Dogan (2013) and where this comparison differs from it."""
    lines = ["**The setting of Glasmachers & Dogan (2013), and where ours differs.** The paper "
             "compares its ACF with LIBLINEAR's shrinking dual CD at eps ∈ {0.01, "
             "0.001} over C ∈ {0.01, …, 1000}, without an iteration limit, and states that both "
             "stop by the same criterion. Its data sets (sizes as the LIBSVM collection lists "
             "them; none is in our data folder):", "",
             table(["data set", "n", "d", "kind"], PAPER_DATA), "",
             "Differences in our comparison:",
             "- Data: ours have 6,412–60,000 rows and 22–55,197 features (MANIFEST.md); only "
             "sector.scale (6,412 × 55,197, 105 one-vs-rest problems) is sparse with d > n like "
             "the paper's text sets; a9a, w8a, ijcnn1 and mnist have n ≫ d, the covtype-like "
             "case where the paper itself finds the baseline faster.",
             "- Stopping rule: our dcd (and LIBLINEAR ≥ 2.42) stops at M − m ≤ eps with |M|, |m| "
             "≤ eps, up to 2x stricter than ACF's max|PG| < eps, so in the main table the "
             "baseline solves to a tighter tolerance than ACF.",
             "- Baseline: our dcd is a re-implementation of LIBLINEAR's solver (parity in the "
             "dcd section); LIBLINEAR itself appears in the table, capped at 300 iterations.",
             "- Timing: CPU time of training on a shared 2-core machine, our runs capped at "
             f"{args.timeout:g} s; the paper reports wall time on a dedicated machine."]
    if paper_rows:
        head = ["eps", "C", "dcd, stop max abs(PG) s", "acf (paper) s", "dcd ÷ acf (paper)",
                "dcd updates", "acf (paper) updates"]
        body = []
        for dataset, eps, cs, res in paper_rows:
            for C in cs:
                d, a = res["dcd-pg"].get(C), res["acf-paper"].get(C)
                body.append([f"{eps:g}", f"{C:g}", fmt_seconds(d, args.timeout),
                             fmt_seconds(a, args.timeout),
                             fmt_bounds(bounds(seconds(d), seconds(a), args.timeout)),
                             fmt_count(d and d["updates"]), fmt_count(a and a["updates"])])
        lines += ["", "The comparison of Glasmachers & Dogan, with one stopping rule "
                  f"(max abs(PG) < eps for both) on {PAPER_SET}, in this run (CPU s):", "",
                  table(head, body), ""]
        big = [(eps, C, bounds(seconds(res["dcd-pg"].get(C)), seconds(res["acf-paper"].get(C)),
                               args.timeout))
               for _, eps, cs, res in paper_rows for C in cs if C >= 10]
        small = [(eps, C, bounds(seconds(res["dcd-pg"].get(C)),
                                 seconds(res["acf-paper"].get(C)), args.timeout))
                 for _, eps, cs, res in paper_rows for C in cs if C <= 0.01]
        known = [b for _, _, b in big if b is not None]
        if known:
            lo = min(b[0] for b in known)
            hi = max(b[1] if b[1] != float("inf") else b[0] for b in known)
            span = f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}"
            lines.append(f"In this setting dcd ÷ acf (paper) is {span} at C ≥ 10 (the paper "
                         "reports ACF often 10x or more faster at C ≥ 10 on its large sparse "
                         "sets: "
                         + ("reproduced here" if lo >= 10 else "an order of magnitude is "
                            + ("reached at some C" if hi >= 10 else "not reached") + " on "
                            "sector.scale")
                         + ")" + ("; at C = 0.01 it is " + ", ".join(
                             f"{fmt_bounds(b)} (eps {eps:g})" for eps, C, b in small)
                                  + " (the paper: ACF 1.1–3.8x slower there)" if small else "")
                         + ". The default `-s acf` (with shrinking) is the version measured "
                         "against the issue's targets above.")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
