#!/usr/bin/env python3
"""Seed 003's experiment: adaptive coordinate frequencies (-s acf) against the baseline dual CD
(-s dcd, shrinking) and LIBLINEAR -s 3 (liblinear-official), in the same run.

For every data set, tolerance and C: training seconds, coordinate updates (steps with
|PG| > 1e-12, summed over one-vs-rest sub-problems) and outer iterations (dcd: sweeps of the
active set; acf: sweeps of n scheduled steps; LIBLINEAR: its own "#iter" lines), plus the sum over
the C grid (the cost of a grid search). L1 loss, no bias (-B -1), no iteration limit for ours
(seed 003 removed it); LIBLINEAR keeps its fixed 300-iteration cap, and a run that hits it is
marked "cap" (it then stopped early, so its time is not comparable). Each of our runs is capped
at --timeout seconds of wall clock (checked once per outer iteration by the callback; reported
as "> 600 s"); every (data set, eps, solver) runs in its own subprocess with a hard timeout as a
safety net. mnist values are divided by 255. Data: $BSVM_DATA, default ../shared/data.

Writes the report section build/bench/bench_acf.md with its figure (training time against C,
log-log, for dcd, acf and LIBLINEAR: docs/figures/bench_acf-time-vs-C.png).

    python scripts/bench_acf.py [--quick] [--datasets w8a sector.scale] [--C 1 1000] [--eps 0.01]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"      # one thread for every tool (LIBSVM/LIBLINEAR may use OpenMP)

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, SCRIPTS)

from _common import (CapturedCStdout, data_dir, machine, pyplot, save_figure, spread,  # noqa: E402
                     table, versions, write_section)

DATASETS = ["a9a", "w8a", "ijcnn1", "mnist", "sector.scale"]
C_GRID = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
# --quick: sector.scale (where seed 003's large-C claim is tested) over the whole C grid, and
# w8a (n >> d, where ACF loses) up to C = 10, eps 0.01 only.
QUICK = {"sector.scale": C_GRID, "w8a": [0.01, 0.1, 1.0, 10.0]}
TARGET = 5.0        # issue 5: ACF at least 5x faster than the baseline at C = 1000, sector
EPS = [0.01, 0.001]
SOLVERS = ["dcd", "acf", "liblinear"]


class Timeout(Exception):
    pass


def load(name, folder):
    from budgetsvm.io import read_problem
    X, y = read_problem(os.path.join(folder, name + ".xz"))
    if name.startswith("mnist"):
        X = X / 255.0
    return X.tocsr(), y


def run_ours(X, y, solver, C, eps, seed, timeout):
    """Train like linear.fit_linear (same sub-problems, seeds and costs) with a wall-clock cap."""
    import numpy as np

    from budgetsvm.labels import group_classes
    from budgetsvm.linear import _MASK64, _SEED_STRIDE, CORES, _canonical_csr, subproblems
    from budgetsvm.params import TrainParams
    params = TrainParams(solver=solver, C=C, eps=eps, max_iter=0, seed=seed, bias=-1.0)
    core, specific = CORES[solver](params)
    X = _canonical_csr(X)
    labels, y_index = group_classes(y)
    data, indices = X.data, X.indices.astype(np.int32, copy=False)
    indptr = X.indptr.astype(np.int64, copy=False)
    start = time.perf_counter()
    deadline = start + timeout
    clock = time.perf_counter

    def check(it, violation):
        if clock() > deadline:
            raise Timeout

    updates = iters = 0
    try:
        for r, (_, yr, C_i) in enumerate(subproblems(y_index, labels, params)):
            res = core(data, indices, indptr, yr, C_i, X.shape[1], eps=eps, max_iter=0,
                       loss="l1", seed=(seed + r * _SEED_STRIDE) & _MASK64, callback=check,
                       **specific)
            updates += res.n_updates
            iters += res.n_iter
    except Timeout:
        return {"seconds": None, "updates": None, "iters": None, "capped": 0}
    return {"seconds": time.perf_counter() - start, "updates": updates, "iters": iters,
            "capped": 0}


def run_liblinear(X, y, C, eps):
    import numpy as np
    from liblinear import liblinear as ll
    from liblinear import liblinearutil
    prob = ll.problem(np.asarray(y, dtype=np.float64), X)
    param = liblinearutil.parameter(f"-s 3 -c {C:g} -e {eps:g} -B -1")
    with CapturedCStdout() as cap:
        start = time.perf_counter()
        liblinearutil.train(prob, param)
        seconds = time.perf_counter() - start
    text = cap.text
    iters = [int(v) for v in re.findall(r"#iter = (\d+)", text)]
    return {"seconds": seconds, "updates": None, "iters": sum(iters),
            "capped": text.count("reaching max number of iterations")}


def worker(args):
    """Run one (data set, eps, solver) over the C grid, --repeats times per C; one JSON line
    per C on stdout (seconds: the median; all_seconds: every run)."""
    import statistics
    X, y = load(args.dataset, args.data)
    for C in args.C:
        runs = []
        for _ in range(args.repeats):
            if args.solver == "liblinear":
                runs.append(run_liblinear(X, y, C, args.eps))
            else:
                runs.append(run_ours(X, y, args.solver, C, args.eps, args.seed, args.timeout))
            if runs[-1]["seconds"] is None:
                break                         # timed out: do not repeat
        out = dict(runs[-1])
        if all(r["seconds"] is not None for r in runs):
            out["all_seconds"] = [r["seconds"] for r in runs]
            out["seconds"] = statistics.median(out["all_seconds"])
        print(json.dumps({"C": C, **out}), flush=True)


def launch(args, dataset, eps, solver, cs):
    """Results {C: dict} of one worker subprocess (missing C values count as timed out)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--dataset", dataset,
           "--solver", solver, "--eps", repr(eps), "--data", args.data, "--seed",
           str(args.seed), "--timeout", repr(args.timeout), "--repeats", str(args.repeats),
           "--C", *map(repr, cs)]
    hard = len(cs) * args.repeats * (args.timeout + 30) + 120
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=hard)
        text, err = proc.stdout, proc.stderr if proc.returncode else ""
    except subprocess.TimeoutExpired as exc:
        text, err = exc.stdout or "", "hard timeout"
        text = text.decode() if isinstance(text, bytes) else text
    if err:
        print(f"# {dataset} eps={eps:g} {solver}: {err.strip().splitlines()[-1]}", file=sys.stderr)
    results = {}
    for line in text.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["C"]] = r
    return results


def fmt_seconds(r, timeout):
    if r is None or r["seconds"] is None:
        return f"> {timeout:g} s"
    text = spread(r["all_seconds"], "{:.2f}") if r.get("all_seconds") else f"{r['seconds']:.2f}"
    return text + (" (cap)" if r.get("capped") else "")


def fmt_count(value):
    if value is None:
        return "—"
    return f"{value / 1e6:.1f}M" if value >= 1e6 else f"{value:,}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(data_dir()),
                    help="folder with the .xz data sets (default: $BSVM_DATA or ../shared/data)")
    ap.add_argument("--datasets", nargs="+", default=DATASETS)
    ap.add_argument("--C", nargs="+", type=float, default=C_GRID)
    ap.add_argument("--eps", nargs="+", type=float, default=EPS)
    ap.add_argument("--solvers", nargs="+", default=SOLVERS, choices=SOLVERS)
    ap.add_argument("--timeout", type=float, default=600.0, help="cap per run, seconds")
    ap.add_argument("--repeats", type=int, default=1, help="runs per point (median reported)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--quick", action="store_true",
                    help="sector.scale over the C grid and w8a at C ≤ 10, eps 0.01, cap 120 s")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dataset", help=argparse.SUPPRESS)
    ap.add_argument("--solver", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        args.eps = args.eps[0]
        return worker(args)
    if args.quick:
        plan, args.eps, args.timeout = dict(QUICK), [0.01], 120.0
    else:
        plan = {name: list(args.C) for name in args.datasets}

    print(f"# {machine()}; {versions('numpy', 'scipy', 'liblinear-official')}", file=sys.stderr)
    rows = []
    for dataset, cs in plan.items():
        if not os.path.exists(os.path.join(args.data, dataset + ".xz")):
            continue                          # listed as missing in the setting block
        for eps in args.eps:
            res = {}
            for solver in args.solvers:
                res[solver] = launch(args, dataset, eps, solver, cs)
                for C in cs:
                    r = res[solver].get(C)
                    print(f"# {dataset} eps={eps:g} C={C:g} {solver}: "
                          f"{fmt_seconds(r, args.timeout)} s, "
                          f"updates {fmt_count(r and r['updates'])}, "
                          f"outer {fmt_count(r and r['iters'])}", file=sys.stderr, flush=True)
            rows.append((dataset, eps, cs, res))
    body = [make_table(rows, args)]
    figure = make_figure(rows, args)
    if figure:
        body.append(figure)
    body.append(discussion(rows, args))
    grid = sorted({C for _, cs in plan.items() for C in cs})
    write_section(
        "bench_acf", "Adaptive coordinate frequencies vs dual CD and LIBLINEAR (seed 003)",
        "\n\n".join(body), datasets=list(plan), peers=("liblinear-official", "numpy", "scipy"),
        extra=[f"Hyper-parameters: C ∈ {{{', '.join(f'{c:g}' for c in grid)}}} (per data set "
               f"as in the table), eps ∈ {{{', '.join(f'{e:g}' for e in args.eps)}}}, L1 loss, "
               "no bias; ACF constants c = 0.2, p_min = 0.05, p_max = 20 (the defaults)",
               f"Seed {args.seed} for our coordinate orders; LIBLINEAR uses its own unseeded "
               f"rand(); {args.repeats} run(s) per point"
               + ("" if args.repeats > 1 else " (single runs: no min–max)")
               + f"; our runs capped at {args.timeout:g} s; wall-clock seconds, every tool on "
               "one thread (OpenMP/BLAS limited to 1)"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"dataset": d, "eps": e, "results": {s: {str(c): v for c, v in r.items()}
                                                             for s, r in res.items()}}
                       for d, e, _, res in rows], f, indent=1)


def make_table(rows, args):
    solvers = args.solvers
    both = {"dcd", "acf"} <= set(solvers)
    head = ["data set", "eps", "C"] + [f"{s} s" for s in solvers] + \
        [f"{s} updates" for s in solvers if s != "liblinear"] + \
        [f"{s} outer it" for s in solvers] + (["dcd/acf time"] if both else [])
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
                if r is None or r["seconds"] is None:
                    sums[s] += args.timeout
                    over[s] = True
                else:
                    sums[s] += r["seconds"]
            cells += [fmt_count(rs[s] and rs[s]["updates"]) for s in solvers if s != "liblinear"]
            cells += [fmt_count(rs[s] and rs[s]["iters"])
                      + (" (cap)" if rs[s] and rs[s]["capped"] else "") for s in solvers]
            if both:
                cells.append(ratio(rs["dcd"], rs["acf"], args.timeout))
            lines.append(cells)
        cells = [f"**{dataset}**", f"{eps:g}", "**sum**"]
        cells += [("> " if over[s] else "") + f"{sums[s]:.2f}" for s in solvers]
        cells += [""] * (len(head) - len(cells) - (1 if both else 0))
        if both:
            d, a = sums["dcd"], sums["acf"]
            text = f"{d / a:.2f}" if not over["dcd"] and not over["acf"] else \
                (f"> {d / a:.2f}" if over["dcd"] and not over["acf"] else
                 (f"< {d / a:.2f}" if over["acf"] and not over["dcd"] else "?"))
            cells.append(f"**{text}**")
        lines.append(cells)
    return table(head, lines) + (
        f"\n\nSeconds of training (median (min–max) where repeated). Ours without an iteration "
        f"limit, capped at {args.timeout:g} s wall clock ('> {args.timeout:g} s'; a grid sum "
        "containing one counts it as the cap, so it is a lower bound); LIBLINEAR -s 3 with its "
        "fixed 300-iteration cap ('(cap)': stopped there with at least one sub-problem "
        "unconverged, so its time is not comparable). Updates: coordinate steps with "
        "|PG| > 1e-12 summed over one-vs-rest sub-problems (LIBLINEAR does not report them). "
        "Outer iterations: dcd sweeps of the active set, acf sweeps of n scheduled steps. "
        "dcd/acf time > 1 means ACF is faster; the **sum** row is the cost of the whole C grid "
        "(a grid search).")


def make_figure(rows, args):
    """Training time against C (log-log), one panel per data set; one line per solver, dashed
    for the second tolerance; hollow markers where LIBLINEAR stopped at its iteration cap."""
    datasets = list(dict.fromkeys(d for d, *_ in rows))
    if not datasets:
        return None
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    colors = {"dcd": "#1f77b4", "acf": "#d62728", "liblinear": "#2ca02c"}
    names = {"dcd": "dcd (baseline, shrinking)", "acf": "acf", "liblinear": "LIBLINEAR -s 3"}
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.4),
                             squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        for dataset_, eps, cs, res in rows:
            if dataset_ != dataset:
                continue
            style = "-" if eps == args.eps[0] else "--"
            for s in args.solvers:
                pts = [(C, res[s][C]) for C in cs if C in res[s] and res[s][C]["seconds"]]
                if not pts:
                    continue
                label = names[s] + (f", eps {eps:g}" if len(args.eps) > 1 else "")
                ax.plot([C for C, _ in pts], [r["seconds"] for _, r in pts], style,
                        color=colors[s], label=label, lw=1.4)
                for C, r in pts:
                    ax.plot([C], [r["seconds"]], "o", color=colors[s], ms=5,
                            mfc="white" if r.get("capped") else colors[s])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("C")
        ax.set_title(dataset)
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("training time (s)")
    axes[0][-1].legend(fontsize=7, loc="upper left")
    caption = ("Training time against C (log-log): baseline dual CD, ACF and LIBLINEAR -s 3 in "
               "the same run; hollow markers: LIBLINEAR stopped at its 300-iteration cap")
    return save_figure(fig, "bench_acf-time-vs-C.png", caption)


def discussion(rows, args):
    """Our result against seed 003's claim and the issue's target, from this run's numbers."""
    lines = ["**Against the paper.** Seed 003 reports that ACF (AVSF) is 1.1–3.8x slower than "
             "the baseline at C = 0.01 and often 10x or more faster for C ≥ 10 on large sparse "
             f"data; issue 5 set the target at ≥ {TARGET:g}x at C = 1000 on sector.scale."]
    for dataset, eps, cs, res in rows:
        if not {"dcd", "acf"} <= set(res):
            continue
        d_big, a_big = res["dcd"].get(max(cs)), res["acf"].get(max(cs))
        d_small, a_small = res["dcd"].get(min(cs)), res["acf"].get(min(cs))
        parts = []
        if d_small and a_small and d_small["seconds"] and a_small["seconds"]:
            slow = a_small["seconds"] / d_small["seconds"]
            parts.append(f"at C = {min(cs):g} ACF is "
                         + (f"{slow:.1f}x slower" if slow > 1 else f"{1 / slow:.1f}x faster"))
        if d_big and a_big and d_big["seconds"] and a_big["seconds"]:
            fast = d_big["seconds"] / a_big["seconds"]
            upd = ""
            if d_big.get("updates") and a_big.get("updates"):
                u = d_big["updates"] / a_big["updates"]
                upd = (f", with {u:.1f}x fewer coordinate updates" if u >= 1 else
                       f", with {1 / u:.1f}x more coordinate updates")
            verdict = ""
            if dataset == "sector.scale" and max(cs) >= 1000:
                verdict = (f" — the {TARGET:g}x target is "
                           + ("met" if fast >= TARGET else "**missed**"))
            parts.append(f"at C = {max(cs):g} ACF is "
                         + (f"{fast:.2f}x faster" if fast >= 1 else f"{1 / fast:.2f}x slower")
                         + upd + verdict)
        if parts:
            lines.append(f"- {dataset}, eps {eps:g}: " + "; ".join(parts) + ".")
    lines.append(
        "\nWhy we do not reproduce the large-C speed-ups (measured while implementing issue 5):\n"
        "- On sector.scale ACF needs several times fewer updates, but each one-vs-rest "
        "sub-problem ends after about 14 sweeps, and a variable stuck at a bound needs about 15 "
        "visits to decay from p = 1 to p_min; so most of ACF's visits go to coordinates that "
        "do not move, which the baseline's hard shrinking drops after one sweep.\n"
        "- On w8a (n ≫ d, 300 features) the baseline's active set shrinks to a few hundred "
        "rows that stay in cache, while ACF keeps visiting all 49,749.\n"
        "- Seed 003's data sets (cover type, kdd-a/b, news20, rcv1, url) are not in our data "
        "folder; ours are smaller, and at small C and on low-dimensional data ACF is slower, as "
        "seed 003 itself reports.\n"
        "- LIBLINEAR's times are not comparable where it stops at its iteration cap (marked).")
    return "\n".join(lines)


def ratio(d, a, timeout):
    dt = None if d is None else d["seconds"]
    at = None if a is None else a["seconds"]
    if dt is not None and at is not None:
        return f"{dt / at:.2f}"
    if dt is None and at is not None:
        return f"> {timeout / at:.2f}"
    if at is None and dt is not None:
        return f"< {dt / timeout:.2f}"
    return "?"


if __name__ == "__main__":
    main()
