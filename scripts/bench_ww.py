#!/usr/bin/env python
"""Seed 004's experiment (ALGORITHMS.md Appendix A): Weston–Watkins BCD with Walrus vs the
Shark-style iterative subproblem solver, and LIBLINEAR's Crammer–Singer solver (-s 4) as the
practical peer. Writes the report section build/bench/bench_ww.md (printed too) with the figure
docs/figures/bench_ww-speedup-vs-k.png (iterative/Walrus time ratio against the number of
classes).

For every data set and C:
* walrus / iterative: both stop at gap_t < δ·gap_1 with the gap evaluated after every outer
  iteration (the authors' metric); the time is that of the block steps alone (evaluation
  excluded, data loading excluded).
* ww total: the default run (adaptive gap schedule), time of train_ww including the gap
  evaluations, and the share of that time spent evaluating.
* LIBLINEAR -s 4 (liblinear-official) at the same C, default eps, time of train().

All times are CPU seconds of the process (single-threaded code) unless --wall is given, so that
other jobs on a shared machine distort them less.

Data: $BSVM_DATA (default ../shared/data relative to the repository), LIBSVM files, optionally
.xz; mnist values are divided by 255.

    python scripts/bench_ww.py --quick
    python scripts/bench_ww.py --sets sector --log2c 0
    python scripts/bench_ww.py --sets dna,satimage --log2c=-2,0,2     (note the "=" before a minus)
"""
import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"      # one thread for every tool (LIBSVM/LIBLINEAR may use OpenMP)

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from budgetsvm.io import read_problem          # noqa: E402
from budgetsvm.labels import group_classes     # noqa: E402
from budgetsvm.params import TrainParams       # noqa: E402
from budgetsvm.ww import train_ww              # noqa: E402

sys.path.insert(0, str(REPO / "scripts"))
from _common import pyplot, save_figure, spread, table, write_section  # noqa: E402

SETS = {   # name: (train file, test file, scale)
    "dna": ("dna.scale", "dna.scale.t", 1.0),
    "satimage": ("satimage.scale", "satimage.scale.t", 1.0),
    "mnist": ("mnist", "mnist.t", 1.0 / 255.0),
    "sector": ("sector.scale", "sector.t.scale", 1.0),
}
QUICK = {"dna": [-2, 0, 2], "satimage": [-2, 0, 2], "sector": [0]}
SECTOR_TARGET = 1.3     # issue 6: Walrus faster than the iterative solver on sector by 1.3x
SMALL_K_LIMIT = 1.2     # issue 6: Walrus not slower than 1.2x on small-k sets
LL_TARGET = 2.0         # issue 6: the whole WW solver within 2x of LIBLINEAR -s 4 on sector


def find(folder, name):
    for candidate in (folder / name, folder / (name + ".xz")):
        if candidate.exists():
            return candidate
    raise SystemExit(f"data file {name} not found in {folder}")


def load(folder, name):
    train, test, scale = SETS[name]
    X, y = read_problem(find(folder, train))
    Xt, yt = read_problem(find(folder, test))
    d = max(X.shape[1], Xt.shape[1])
    X.resize((X.shape[0], d))
    Xt.resize((Xt.shape[0], d))
    if scale != 1.0:
        X = X * scale
        Xt = Xt * scale
    return X.tocsr(), y, Xt.tocsr(), yt


CLOCK = time.process_time


def run_ww(X, y, Xt, yt, C, subsolver, gap_every, eps, max_iter):
    labels, y_index = group_classes(y)
    p = TrainParams(solver="ww", C=C, eps=eps, max_iter=max_iter, ww_subsolver=subsolver)
    t0 = CLOCK()
    model = train_ww(X, y_index, labels, p, gap_every=gap_every)
    wall = CLOCK() - t0
    acc = float(np.mean(model.predict(Xt) == yt))
    info = dict(model.train_info)
    if CLOCK is time.process_time:
        info["train_seconds"] = info["train_cpu_seconds"]
        info["eval_seconds"] = info["eval_cpu_seconds"]
    return info, wall, acc


def run_liblinear(X, y, Xt, yt, C):
    try:
        from liblinear.liblinearutil import parameter, predict, problem, train
    except ImportError:
        return None, None
    prob = problem(y, X)
    t0 = CLOCK()
    m = train(prob, parameter(f"-s 4 -c {C!r} -q"))
    wall = CLOCK() - t0
    pred, _, _ = predict(yt, Xt, m, "-q")
    return wall, float(np.mean(np.array(pred) == yt))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.environ.get("BSVM_DATA",
                                                     str(REPO.parent / "shared" / "data")))
    ap.add_argument("--sets", default="dna,satimage,mnist,sector")
    ap.add_argument("--log2c", default=None,
                    help="comma-separated exponents of C (default -6..3)")
    ap.add_argument("--quick", action="store_true",
                    help="dna and satimage at C = 2^-2, 1, 2^2 and sector at C = 1")
    ap.add_argument("--eps", type=float, default=0.0009, help="δ of the relative-gap stop")
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=1,
                    help="timed runs per point (median reported); iterations are deterministic")
    ap.add_argument("--no-liblinear", action="store_true")
    ap.add_argument("--wall", action="store_true", help="wall-clock instead of CPU times")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.perf_counter if args.wall else time.process_time
    folder = Path(args.data)
    if args.quick:
        plan = QUICK
    else:
        exps = [int(e) for e in args.log2c.split(",")] if args.log2c else list(range(-6, 4))
        plan = {s: exps for s in args.sets.split(",")}

    results = []
    for name, exps in plan.items():
        try:
            X, y, Xt, yt = load(folder, name)
        except SystemExit as exc:           # a missing file: listed in the setting block
            print(exc, file=sys.stderr)
            continue
        k = len(np.unique(y))
        for e in exps:
            C = 2.0 ** e
            r = {"name": name, "k": k, "e": e, "walrus": [], "iterative": [], "total": [],
                 "eval": [], "ll": []}
            for _ in range(args.repeats):
                wi, _, r["acc_w"] = run_ww(X, y, Xt, yt, C, "walrus", 1, args.eps, args.max_iter)
                ii, _, r["acc_i"] = run_ww(X, y, Xt, yt, C, "iterative", 1, args.eps,
                                           args.max_iter)
                di, dwall, _ = run_ww(X, y, Xt, yt, C, "walrus", 0, args.eps, args.max_iter)
                r["walrus"].append(wi["train_seconds"])
                r["iterative"].append(ii["train_seconds"])
                r["total"].append(dwall)
                r["eval"].append(100.0 * di["eval_seconds"] / dwall)
                r.update(it_w=wi["n_iter"], it_i=ii["n_iter"], it_total=di["n_iter"])
                if not args.no_liblinear:
                    ll_s, r["acc_ll"] = run_liblinear(X, y, Xt, yt, C)
                    if ll_s is not None:
                        r["ll"].append(ll_s)
            results.append(r)
            print(f"# {name} C=2^{e}: Walrus {np.median(r['walrus']):.2f} s, iterative "
                  f"{np.median(r['iterative']):.2f} s", file=sys.stderr, flush=True)

    med = np.median
    rows = []
    for r in results:
        speed = med(r["iterative"]) / med(r["walrus"])
        ll = ("–", "–", "–") if not r["ll"] else (
            spread(r["ll"], "{:.2f}"), f"{100 * r['acc_ll']:.2f}",
            f"{med(r['total']) / med(r['ll']):.2f}")
        rows.append([r["name"], r["k"], f"2^{r['e']}", r["it_w"], spread(r["walrus"], "{:.2f}"),
                     r["it_i"], spread(r["iterative"], "{:.2f}"), f"{speed:.2f}",
                     f"{100 * r['acc_w']:.2f}", f"{100 * r['acc_i']:.2f}", r["it_total"],
                     spread(r["total"], "{:.2f}"), f"{med(r['eval']):.1f}", *ll])
    clock = "wall-clock" if args.wall else "CPU"
    body = [table(["data", "k", "C", "Walrus it", "Walrus s", "iterative it", "iterative s",
                   "speed-up", "acc Walrus %", "acc iter. %", "WW total it", "WW total s",
                   "eval %", "LL -s 4 s", "LL acc %", "WW/LL"], rows)]
    body.append(
        f"{clock} seconds, median (min–max) where repeated ({args.repeats} run(s) per point). "
        "Walrus / iterative: block CD with the exact (Walrus) or the Shark-style iterative "
        "subproblem solver, both stopped at gap_t < δ·gap_1 with the gap evaluated after every "
        "outer iteration, timing the block steps only (evaluation and data loading excluded, "
        "as seed 004 does); speed-up = iterative / Walrus. WW total: the default `-s ww` run "
        "(adaptive gap schedule) including its gap evaluations (eval %: their share). LL: "
        "LIBLINEAR's Crammer–Singer solver `-s 4` at the same C with its default eps, the "
        "practical peer (a different multi-class formulation); WW/LL = WW total / LL time.")
    figure = make_figure(results)
    if figure:
        body.append(figure)
    body.append(discussion(results))
    write_section(
        "bench_ww", "Weston–Watkins SVM: Walrus vs the iterative subproblem solver (seed 004)",
        "\n\n".join(body),
        datasets=[f for name in plan for f in SETS[name][:2]],
        peers=("liblinear-official", "numpy", "scipy"),
        extra=["Hyper-parameters: C = 2^e for e in "
               + "; ".join(f"{name}: {', '.join(map(str, exps))}" for name, exps in plan.items())
               + f"; δ = {args.eps:g} (relative duality gap); at most {args.max_iter} outer "
               "iterations; no bias; mnist values / 255",
               "Seeds: the solver's default seed 1 (block order); LIBLINEAR uses its own "
               "unseeded rand()",
               f"Times: {clock} seconds of this process; every tool on one thread "
               "(OpenMP/BLAS limited to 1)"])


def make_figure(results):
    """Iterative / Walrus time ratio against the number of classes (log x): one marker per C,
    the median over C joined by a line."""
    if not results:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ks = sorted({r["k"] for r in results})
    medians = []
    for k in ks:
        ratios = [np.median(r["iterative"]) / np.median(r["walrus"])
                  for r in results if r["k"] == k]
        ax.scatter([k] * len(ratios), ratios, color="#1f77b4", alpha=0.5, s=18,
                   label="one value of C" if k == ks[0] else None)
        medians.append(np.median(ratios))
    ax.plot(ks, medians, "o-", color="#d62728", label="median over C")
    for k in ks:
        name = next(r["name"] for r in results if r["k"] == k)
        ax.annotate(name, (k, medians[ks.index(k)]), textcoords="offset points",
                    xytext=(4, 6), fontsize=8)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.margins(y=0.15)
    ax.set_xscale("log")
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_xlabel("number of classes k")
    ax.set_ylabel("iterative time / Walrus time")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(True, alpha=0.3)
    return save_figure(fig, "bench_ww-speedup-vs-k.png",
                       "Speed-up of the Walrus subproblem solver over the iterative one "
                       "against the number of classes (above 1: Walrus faster)")


def span(lo, hi, fmt="{:.2f}"):
    """'lo–hi', or one value when they are equal as printed."""
    a, b = fmt.format(lo), fmt.format(hi)
    return a if a == b else f"{a}–{b}"


def discussion(results):
    med = np.median
    lines = ["**Against the paper.** Seed 004 finds Walrus clearly faster than the iterative "
             "solver on data sets with many classes (sector, k = 105; aloi, k = 1000), "
             "comparable for small k, with satimage (k = 6) the one set where the iterative "
             "solver is at least as fast, and equal test accuracy. Here:"]
    ratio = {id(r): med(r["iterative"]) / med(r["walrus"]) for r in results}
    big = [r for r in results if r["k"] >= 50]
    small = [r for r in results if r["k"] < 50]
    if big:
        lo = min(ratio[id(r)] for r in big)
        hi = max(ratio[id(r)] for r in big)
        lines.append(f"- k ≥ 50 ({', '.join(sorted({r['name'] for r in big}))}): Walrus is "
                     f"{span(lo, hi)}x faster; issue 6's target of {SECTOR_TARGET:g}x is "
                     + ("met." if lo >= SECTOR_TARGET else "**missed**."))
    if small:
        worst = max(1 / ratio[id(r)] for r in small)
        lines.append(f"- small k ({', '.join(sorted({r['name'] for r in small}))}): speed-up "
                     + span(min(ratio[id(r)] for r in small), max(ratio[id(r)] for r in small))
                     + f"; Walrus is at worst "
                     f"{worst:.2f}x slower (limit {SMALL_K_LIMIT:g}x: "
                     + ("met" if worst <= SMALL_K_LIMIT else "**missed**") + "), as the paper "
                     "finds; the likely reason is that a subproblem has only k − 1 variables, "
                     "so the exact O(k log k) solve saves little over a few greedy steps.")
    same = all(abs(r["acc_w"] - r["acc_i"]) < 1e-12 for r in results)
    lines.append("- test accuracy of Walrus and iterative: "
                 + ("identical in every row (both reach the same optimum)." if same else
                    "**differs in some rows** (see the table)."))
    sector = [r for r in results if r["name"] == "sector" and r["ll"]]
    if sector:
        ww_ll = [med(r["total"]) / med(r["ll"]) for r in sector]
        lines.append(
            f"- the whole WW solver vs LIBLINEAR -s 4 on sector: {span(min(ww_ll), max(ww_ll))}x "
            f"LIBLINEAR's time; issue 6's target of {LL_TARGET:g}x is "
            + (("met" + (" (narrowly: single runs on a shared machine, so it may not hold in "
                         "every run)." if max(ww_ll) > 0.9 * LL_TARGET else "."))
               if max(ww_ll) <= LL_TARGET else
               "**missed**. The time goes into loading scattered rows of W (k × d, 46 MB on "
               "sector, larger than the L3 cache) for the O(nnz·k) scores of every block. "
               "LIBLINEAR's Crammer–Singer solver avoids most of that work by heuristic "
               "per-instance class shrinking; an exact screening rule for WW (a class can be "
               "skipped only if its margin exceeds 1 + ‖x‖²·γ_i) skipped only about 2% of the "
               "scores, so it is off by default. The two solve different multi-class "
               "problems, so this is a practical comparison, not a claim of the paper."))
    evals = [med(r["eval"]) for r in results]
    if evals:
        lines.append(f"- gap evaluation takes {span(min(evals), max(evals), '{:.1f}')}% of the "
                     "default run (target < 10%: "
                     + ("met" if max(evals) < 10 else "**missed** in some rows") + ").")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
