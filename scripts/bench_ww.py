#!/usr/bin/env python
"""Seed 004's experiment (ALGORITHMS.md Appendix A): Weston–Watkins BCD with Walrus vs the
Shark-style iterative subproblem solver, and LIBLINEAR's Crammer–Singer solver (-s 4) as the
practical peer. Markdown table on stdout.

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

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from budgetsvm.io import read_problem          # noqa: E402
from budgetsvm.labels import group_classes     # noqa: E402
from budgetsvm.params import TrainParams       # noqa: E402
from budgetsvm.ww import train_ww              # noqa: E402

SETS = {   # name: (train file, test file, scale)
    "dna": ("dna.scale", "dna.scale.t", 1.0),
    "satimage": ("satimage.scale", "satimage.scale.t", 1.0),
    "mnist": ("mnist", "mnist.t", 1.0 / 255.0),
    "sector": ("sector.scale", "sector.t.scale", 1.0),
}
QUICK = {"dna": [-2, 0, 2], "satimage": [-2, 0, 2], "sector": [0]}


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
    ap.add_argument("--data", default=os.environ.get("BSVM_DATA", str(REPO.parent / "shared" / "data")))
    ap.add_argument("--sets", default="dna,satimage,mnist,sector")
    ap.add_argument("--log2c", default=None,
                    help="comma-separated exponents of C (default -6..3)")
    ap.add_argument("--quick", action="store_true",
                    help="dna and satimage at C = 2^-2, 1, 2^2 and sector at C = 1")
    ap.add_argument("--eps", type=float, default=0.0009, help="δ of the relative-gap stop")
    ap.add_argument("--max-iter", type=int, default=1000)
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

    print("| data | k | C | Walrus it | Walrus s | iterative it | iterative s | speed-up |"
          " acc Walrus | acc iter. | WW total it | WW total s | eval % | LL -s4 s | LL acc | WW/LL |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, exps in plan.items():
        X, y, Xt, yt = load(folder, name)
        k = len(np.unique(y))
        for e in exps:
            C = 2.0 ** e
            wi, _, wacc = run_ww(X, y, Xt, yt, C, "walrus", 1, args.eps, args.max_iter)
            ii, _, iacc = run_ww(X, y, Xt, yt, C, "iterative", 1, args.eps, args.max_iter)
            di, dwall, _ = run_ww(X, y, Xt, yt, C, "walrus", 0, args.eps, args.max_iter)
            ll_s, ll_acc = (None, None) if args.no_liblinear else run_liblinear(X, y, Xt, yt, C)
            ws, its = wi["train_seconds"], ii["train_seconds"]
            evalp = 100.0 * di["eval_seconds"] / dwall
            ll = ("–", "–", "–") if ll_s is None else (f"{ll_s:.2f}", f"{100 * ll_acc:.2f}",
                                                         f"{dwall / ll_s:.2f}")
            print(f"| {name} | {k} | 2^{e} | {wi['n_iter']} | {ws:.2f} | {ii['n_iter']} | "
                  f"{its:.2f} | {its / ws:.2f} | {100 * wacc:.2f} | {100 * iacc:.2f} | "
                  f"{di['n_iter']} | {dwall:.2f} | {evalp:.1f} | {ll[0]} | {ll[1]} | {ll[2]} |", flush=True)


if __name__ == "__main__":
    main()
