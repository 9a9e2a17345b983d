#!/usr/bin/env python
"""The Weston–Watkins solver (-s ww) against LIBLINEAR's Crammer–Singer solver (-s 4,
liblinear-official) for issue 19's targets, and the experiment of Wang & Scott (2021; see
docs/ALGORITHMS.md §5): block CD with Walrus vs the Shark-style iterative subproblem solver.
Measures into build/bench/ww.json (one row per part, data set and C, every repeat's times;
scripts/_common.py, run_bench), then writes from that file alone (--report-only: without
measuring) the report section build/bench/bench_ww.md (printed too) with the figures
docs/figures/bench_ww-time-per-set.png (CPU time per data set and C: -s ww, -s ww --ww-shrink none,
LIBLINEAR -s 4) and docs/figures/bench_ww-speedup-vs-k.png (iterative/Walrus time ratio against the
number of classes).

Part 1, issue 19 (sector, dna, satimage, mnist at C ∈ {2^-2, 1, 2^2} by default): CPU time of
train_ww with the default options (shrinking, adaptive gap schedule, δ = 0.0009, at most 1000
outer iterations; gap evaluations included, data loading excluded), of the same with
--ww-shrink none (Wang & Scott's algorithm), and of LIBLINEAR's train() with -s 4 at the same C
and its default eps; test accuracy of each. The three alternate run by run; a point is repeated up
to --repeats times while its runs took less than --repeat-budget CPU seconds in all (median
reported). Targets, stated as met or missed from these numbers: ww ÷ LIBLINEAR ≤ 1.2 and the
test accuracy of ww at least LIBLINEAR's − 0.3 points, at every point.

Part 2, Wang & Scott (2021): Walrus and iterative, both without shrinking and stopped at
gap_t < δ·gap_1 with the gap evaluated after every outer iteration (the authors' metric), timing
the block steps alone (evaluation and data loading excluded), as the paper does.

All times are CPU seconds of this process (single-threaded code) unless --wall is given, so that
other jobs on a shared machine distort them less. Data: $BSVM_DATA (required), LIBSVM
files, optionally .xz; mnist values are divided by 255.

    python scripts/bench_ww.py --quick
    python scripts/bench_ww.py --sets sector --log2c 0
    python scripts/bench_ww.py --sets dna,satimage --log2c=-2,0,2     (note the "=" before a minus)
"""
import argparse
import os
import re
import statistics
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
from _common import (DATA_UNSET, CapturedCStdout, Section, add_data_option,  # noqa: E402
                     add_report_only, pyplot, run_bench, save_figure, spread, table)

SETS = {   # name: (train file, test file, scale)
    "dna": ("dna.scale", "dna.scale.t", 1.0),
    "satimage": ("satimage.scale", "satimage.scale.t", 1.0),
    "mnist": ("mnist", "mnist.t", 1.0 / 255.0),
    "sector": ("sector.scale", "sector.t.scale", 1.0),
}
ORDER = ["sector", "dna", "satimage", "mnist"]
LOG2C = [-2, 0, 2]
QUICK = {"dna": [-2, 0, 2], "satimage": [-2, 0, 2], "sector": [0]}
RATIO_LIMIT = 1.2        # issue 19: -s ww within 1.2x LIBLINEAR -s 4's time ...
ACC_MARGIN = 0.3         # ... at a test accuracy at least LIBLINEAR's − 0.3 points
SECTOR_TARGET = 1.3      # issue 6: Walrus faster than the iterative solver on sector by 1.3x
SMALL_K_LIMIT = 1.2      # issue 6: Walrus not slower than 1.2x on small-k sets


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


def default_max_iter(args):
    """The outer-iteration limit of the -s ww runs: --max-iter, else the solver's default."""
    if getattr(args, "max_iter", None) is not None:
        return args.max_iter
    return TrainParams(solver="ww").effective_max_iter()


def paper_max_iter(args):
    """The limit of the runs of Wang & Scott's algorithm (--ww-shrink none): without shrinking
    a run to the default limit would take hours on mnist. Results saved before the option had
    one limit for all runs (--max-iter, 1000)."""
    for name in ("paper_max_iter", "max_iter"):
        if getattr(args, name, None) is not None:
            return getattr(args, name)
    return 1000


def run_ww(X, y, Xt, yt, C, subsolver="walrus", gap_every=0, eps=0.0009, max_iter=None,
           shrink="on"):
    labels, y_index = group_classes(y)
    p = TrainParams(solver="ww", C=C, eps=eps, max_iter=max_iter, ww_subsolver=subsolver,
                    ww_shrink=shrink)
    t0 = CLOCK()
    model = train_ww(X, y_index, labels, p, gap_every=gap_every)
    seconds = CLOCK() - t0
    acc = float(np.mean(model.predict(Xt) == yt))
    info = dict(model.train_info)
    if CLOCK is time.process_time:
        info["train_seconds"] = info["train_cpu_seconds"]
        info["eval_seconds"] = info["eval_cpu_seconds"]
    return info, seconds, acc


def run_liblinear(X, y, Xt, yt, C):
    try:
        from liblinear.liblinearutil import parameter, predict, problem, train
    except ImportError:
        return None, None, None
    prob = problem(y, X)
    with CapturedCStdout() as cap:
        t0 = CLOCK()
        m = train(prob, parameter(f"-s 4 -c {C!r}"))
        seconds = CLOCK() - t0
    iters = [int(v) for v in re.findall(r"#iter = (\d+)", cap.text)]
    pred, _, _ = predict(yt, Xt, m, "-q")
    return seconds, float(np.mean(np.array(pred) == yt)), (iters[-1] if iters else None)


def measure(args):
    """One row per (part, data set, C): part "peers" (-s ww, --ww-shrink none and LIBLINEAR
    -s 4; measure_peers) or "paper" (Walrus vs iterative; measure_paper), with the times and
    accuracies of every repeat."""
    global CLOCK
    CLOCK = time.perf_counter if args.wall else time.process_time
    folder = Path(args.data)
    if args.quick:
        args.plan = QUICK
    else:
        exps = [int(e) for e in args.log2c.split(",")] if args.log2c else LOG2C
        args.plan = {s: exps for s in args.sets.split(",")}
    for name, exps in args.plan.items():
        try:
            X, y, Xt, yt = load(folder, name)
        except SystemExit as exc:           # a missing file: listed in the setting block
            print(exc, file=sys.stderr)
            continue
        k = len(np.unique(y))
        for e in exps:
            yield {"part": "peers", "C": 2.0 ** e,
                   **measure_peers(args, name, k, e, X, y, Xt, yt)}
            if not args.no_paper:
                yield {"part": "paper", "C": 2.0 ** e,
                       **measure_paper(args, name, k, e, X, y, Xt, yt)}


def report(results):
    args = argparse.Namespace(**results["meta"]["options"])
    plan = args.plan
    peers = [r for r in results["rows"] if r["part"] == "peers"]
    paper = [r for r in results["rows"] if r["part"] == "paper"]
    clock = "wall-clock" if args.wall else "CPU"
    body = ["### -s ww against LIBLINEAR -s 4 (issue 19)", peer_table(peers, args, clock)]
    figure = peer_figure(peers)
    if figure:
        body.append(figure)
    body.append(peer_targets(peers))
    if paper:
        body += ["### Walrus vs the iterative subproblem solver (Wang & Scott 2021)",
                 paper_table(paper, args, clock)]
        figure = make_figure(paper)
        if figure:
            body.append(figure)
        body.append(discussion(paper))
    return Section(
        "Weston–Watkins SVM: -s ww vs LIBLINEAR -s 4, and Walrus vs the iterative "
        "subproblem solver (Wang & Scott 2021)",
        "\n\n".join(body),
        extra=["Hyper-parameters: C = 2^e for e in "
               + "; ".join(f"{name}: {', '.join(map(str, exps))}" for name, exps in plan.items())
               + f"; δ = {args.eps:g} (relative duality gap); at most {default_max_iter(args):,} "
               f"outer iterations for -s ww, {paper_max_iter(args):,} for Wang & Scott's "
               "algorithm (--ww-shrink none); no bias; mnist values / 255; LIBLINEAR -s 4 with "
               "its defaults (eps 0.1, no bias)",
               "Seeds: the solver's default seed 1 (block order); LIBLINEAR uses its own "
               "unseeded rand(), so its iterates and accuracy vary from run to run",
               f"Times: {clock} seconds of this process, training alone (data loading and "
               f"prediction excluded); up to {args.repeats} runs per point while they take "
               f"less than {args.repeat_budget:g} s in all (median, min–max where repeated); "
               "every tool on one thread (OpenMP/BLAS limited to 1)"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_option(ap)
    ap.add_argument("--sets", default=",".join(ORDER))
    ap.add_argument("--log2c", default=None,
                    help="comma-separated exponents of C (default -2,0,2; Wang & Scott: -6..3)")
    ap.add_argument("--quick", action="store_true",
                    help="dna and satimage at C = 2^-2, 1, 2^2 and sector at C = 1")
    ap.add_argument("--eps", type=float, default=0.0009, help="δ of the relative-gap stop")
    ap.add_argument("--max-iter", type=int, default=None,
                    help="limit of the -s ww runs (default: the solver's, 100000)")
    ap.add_argument("--paper-max-iter", type=int, default=1000,
                    help="limit of the runs of Wang & Scott's algorithm (--ww-shrink none)")
    ap.add_argument("--repeats", type=int, default=5, help="most runs per point (median)")
    # 12 s: sector's points (a few seconds per round) get 2-4 rounds. LIBLINEAR -s 4 draws its
    # order from an unseeded rand() and stops after 5 or 6 iterations on sector at C = 2^-2
    # (0.82-1.15 s), so one round decides the ratio by chance.
    ap.add_argument("--repeat-budget", type=float, default=12.0,
                    help="repeat a point only while its runs took less CPU time than this")
    ap.add_argument("--no-liblinear", action="store_true")
    ap.add_argument("--no-paper", action="store_true",
                    help="skip part 2 (Wang & Scott: Walrus vs iterative without shrinking)")
    ap.add_argument("--wall", action="store_true", help="wall-clock instead of CPU times")
    add_report_only(ap)
    args = ap.parse_args(argv)
    if not args.data and not args.report_only:
        sys.exit(DATA_UNSET)
    plan = QUICK if args.quick else {s: None for s in args.sets.split(",")}
    run_bench("bench_ww", args, measure, report,
              datasets=[f for name in plan for f in SETS[name][:2]],
              peers=("liblinear-official", "numpy", "scipy"))


def measure_peers(args, name, k, e, X, y, Xt, yt):
    """Part 1: -s ww (default), -s ww --ww-shrink none, LIBLINEAR -s 4, alternating."""
    C = 2.0 ** e
    r = {"name": name, "k": k, "e": e, "ww": [], "paper": [], "ll": [], "acc_ww": [],
         "acc_paper": [], "acc_ll": []}
    for rep in range(args.repeats):
        info, s, acc = run_ww(X, y, Xt, yt, C, eps=args.eps, max_iter=args.max_iter)
        r["ww"].append(s)
        r["acc_ww"].append(acc)
        r.update(it_ww=info["n_iter"], conv_ww=info["converged"], unshrink=info["n_unshrink"])
        info, s, acc = run_ww(X, y, Xt, yt, C, eps=args.eps, max_iter=paper_max_iter(args),
                              shrink="none")
        r["paper"].append(s)
        r["acc_paper"].append(acc)
        r.update(it_paper=info["n_iter"], conv_paper=info["converged"])
        if not args.no_liblinear:
            s, acc, it = run_liblinear(X, y, Xt, yt, C)
            if s is not None:
                r["ll"].append(s)
                r["acc_ll"].append(acc)
                r["it_ll"] = it
        if sum(r["ww"]) + sum(r["paper"]) + sum(r["ll"]) >= args.repeat_budget:
            break
    print(f"# {name} C=2^{e}: ww {np.median(r['ww']):.3f} s, ww (paper) "
          f"{np.median(r['paper']):.3f} s, LIBLINEAR -s 4 "
          + (f"{np.median(r['ll']):.3f} s" if r["ll"] else "–"), file=sys.stderr, flush=True)
    return r


def measure_paper(args, name, k, e, X, y, Xt, yt):
    """Part 2: Walrus vs iterative, no shrinking, gap after every outer iteration."""
    C = 2.0 ** e
    r = {"name": name, "k": k, "e": e, "walrus": [], "iterative": []}
    for _ in range(args.repeats):
        wi, _, r["acc_w"] = run_ww(X, y, Xt, yt, C, "walrus", 1, args.eps,
                                   paper_max_iter(args), shrink="none")
        ii, _, r["acc_i"] = run_ww(X, y, Xt, yt, C, "iterative", 1, args.eps,
                                   paper_max_iter(args), shrink="none")
        r["walrus"].append(wi["train_seconds"])
        r["iterative"].append(ii["train_seconds"])
        r.update(it_w=wi["n_iter"], it_i=ii["n_iter"], conv_w=wi["converged"],
                 conv_i=ii["converged"])
        if sum(r["walrus"]) + sum(r["iterative"]) >= args.repeat_budget:
            break
    print(f"# {name} C=2^{e}: Walrus {np.median(r['walrus']):.2f} s, iterative "
          f"{np.median(r['iterative']):.2f} s", file=sys.stderr, flush=True)
    return r


def pct(values):
    return f"{100 * statistics.median(values):.2f}"


def peer_table(results, args, clock):
    med = statistics.median
    rows = []
    for r in results:
        ratio = f"{med(r['ww']) / med(r['ll']):.2f}" if r["ll"] else "–"
        dacc = f"{100 * (med(r['acc_ww']) - med(r['acc_ll'])):+.2f}" if r["ll"] else "–"
        rows.append([r["name"], r["k"], f"2^{r['e']}", spread(r["ww"], "{:.3g}"),
                     spread(r["paper"], "{:.3g}"),
                     spread(r["ll"], "{:.3g}") if r["ll"] else "–", ratio,
                     pct(r["acc_ww"]), pct(r["acc_paper"]),
                     pct(r["acc_ll"]) if r["ll"] else "–", dacc,
                     f"{r['it_ww']}" + ("" if r["conv_ww"] else " (max)") + f", {r['unshrink']}",
                     f"{r['it_paper']}" + ("" if r["conv_paper"] else " (max)"),
                     r.get("it_ll", "–")])
    return table(["data", "k", "C", "ww s", "ww --ww-shrink none s", "LL -s 4 s", "ww ÷ LL",
                  "acc ww %", "acc ww none %", "acc LL %", "ww − LL (points)",
                  "ww it, un-shrinks", "ww none it", "LL it"], rows) + (
        f"\n\n{clock} seconds of training, median (min–max) where repeated. ww: `-s ww` with its "
        "defaults (shrinking, adaptive gap schedule, gap evaluations included); ww none: "
        "`--ww-shrink none`, Wang & Scott's algorithm; both stop at gap_t < δ·gap_1 or after "
        f"{default_max_iter(args):,} (ww) and {paper_max_iter(args):,} (ww none) outer "
        "iterations ('(max)': stopped there, not converged). LL: "
        "LIBLINEAR's Crammer–Singer solver `-s 4` at the same C with its default eps 0.1 (a "
        "different multi-class formulation and stopping rule: the practical peer). Accuracy "
        "on the test file; LIBLINEAR's varies with its unseeded rand() (median of the runs).")


def peer_figure(results):
    """CPU time per data set and C (log y): grouped bars for -s ww, --ww-shrink none and
    LIBLINEAR -s 4."""
    if not results:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 0.75 * len(results) + 2), 3.8))
    med = statistics.median
    x = np.arange(len(results))
    series = [("ww", "-s ww (shrinking, default)", "#d62728"),
              ("paper", "-s ww --ww-shrink none", "#ff9896"),
              ("ll", "LIBLINEAR -s 4", "#2ca02c")]
    width = 0.27
    for j, (key, label, color) in enumerate(series):
        vals = [med(r[key]) if r[key] else np.nan for r in results]
        ax.bar(x + (j - 1) * width, vals, width, label=label, color=color)
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{r['name']}\nC=2^{r['e']}" for r in results], fontsize=7)
    ax.set_ylabel("training time (CPU s)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", which="major", alpha=0.3)
    return save_figure(fig, "bench_ww-time-per-set.png",
                       "CPU time of training per data set and C (log scale): -s ww with "
                       "shrinking, Wang & Scott's algorithm (--ww-shrink none) and LIBLINEAR -s 4, "
                       "in the same run")


def peer_targets(results):
    med = statistics.median
    rated = [r for r in results if r["ll"]]
    if not rated:
        return ""
    lines = ["**Issue 19's target** (this run): `-s ww` within "
             f"{RATIO_LIMIT:g}x LIBLINEAR -s 4's CPU time at a test accuracy at least "
             f"LIBLINEAR's − {ACC_MARGIN:g} points, at every point."]
    slow = [(r, med(r["ww"]) / med(r["ll"])) for r in rated
            if med(r["ww"]) / med(r["ll"]) > RATIO_LIMIT]
    worse = [(r, 100 * (med(r["acc_ww"]) - med(r["acc_ll"]))) for r in rated
             if 100 * (med(r["acc_ww"]) - med(r["acc_ll"])) < -ACC_MARGIN]
    ratios = [med(r["ww"]) / med(r["ll"]) for r in rated]
    lines.append(f"- time: ww ÷ LL is {min(ratios):.2f}–{max(ratios):.2f}; "
                 + ("met at every point." if not slow else
                    f"**missed** at {len(slow)} of {len(rated)} points: "
                    + "; ".join(f"{r['name']} C=2^{r['e']}: {v:.2f} ({v / RATIO_LIMIT:.2f}x the "
                                f"limit)" for r, v in slow) + "."))
    lines.append("- accuracy: "
                 + ("met at every point." if not worse else
                    f"**missed** at {len(worse)} of {len(rated)} points: "
                    + "; ".join(f"{r['name']} C=2^{r['e']}: {v:+.2f} points" for r, v in worse)
                    + "."))
    notconv = [r for r in rated if not r["conv_ww"]]
    if notconv:
        lines.append("- not converged within the iteration limit (the time is that of "
                     f"{notconv[0]['it_ww']} iterations): "
                     + ", ".join(f"{r['name']} C=2^{r['e']}" for r in notconv) + ".")
    # only where both converged: a ww none run stopped at its limit did less work
    both = [r for r in results if r["conv_ww"] and r.get("conv_paper", True)]
    gain = [med(r["paper"]) / med(r["ww"]) for r in both]
    if gain:
        left = len(results) - len(both)
        lines.append(f"- shrinking against Wang & Scott's algorithm (ww none ÷ ww), where both "
                     f"converged: {min(gain):.2f}–{max(gain):.2f}x"
                     + (f" ({left} point{'s' * (left != 1)} where ww none stopped at its "
                        f"limit left out)." if left else "."))
    return "\n".join(lines)


def paper_table(results, args, clock):
    med = statistics.median
    rows = []
    for r in results:
        speed = med(r["iterative"]) / med(r["walrus"])
        rows.append([r["name"], r["k"], f"2^{r['e']}",
                     f"{r['it_w']}" + ("" if r["conv_w"] else " (max)"),
                     spread(r["walrus"], "{:.3g}"),
                     f"{r['it_i']}" + ("" if r["conv_i"] else " (max)"),
                     spread(r["iterative"], "{:.3g}"), f"{speed:.2f}",
                     f"{100 * r['acc_w']:.2f}", f"{100 * r['acc_i']:.2f}"])
    return table(["data", "k", "C", "Walrus it", "Walrus s", "iterative it", "iterative s",
                  "speed-up", "acc Walrus %", "acc iter. %"], rows) + (
        f"\n\n{clock} seconds of the block steps alone (evaluation and data loading excluded, "
        "as Wang & Scott (2021) do), median (min–max) where repeated. Both without shrinking "
        "(`--ww-shrink none`) and stopped at gap_t < δ·gap_1 with the gap evaluated after "
        f"every outer iteration, or after {paper_max_iter(args):,} ('(max)'); speed-up = "
        "iterative / Walrus.")


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
                       "against the number of classes (above 1: Walrus faster), both without "
                       "shrinking")


def span(lo, hi, fmt="{:.2f}"):
    """'lo–hi', or one value when they are equal as printed."""
    a, b = fmt.format(lo), fmt.format(hi)
    return a if a == b else f"{a}–{b}"


def discussion(results):
    med = np.median
    lines = ["**Against the paper.** Wang & Scott (2021) find Walrus clearly faster than the "
             "iterative solver on data sets with many classes (sector, k = 105; aloi, k = 1000), "
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
                     + f"; Walrus is at worst {worst:.2f}x slower (limit {SMALL_K_LIMIT:g}x: "
                     + ("met" if worst <= SMALL_K_LIMIT else "**missed**") + "), as the paper "
                     "finds; a subproblem has only k − 1 variables, so the exact O(k log k) "
                     "solve saves little over a few greedy steps.")
    same = all(abs(r["acc_w"] - r["acc_i"]) < 1e-12 for r in results)
    lines.append("- test accuracy of Walrus and iterative: "
                 + ("identical in every row (both reach the same optimum)." if same else
                    "**differs in some rows** (see the table)."))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
