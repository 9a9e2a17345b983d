#!/usr/bin/env python3
"""Training time of budgetsvm's dual CD (-s dcd, L1 loss) against LIBLINEAR -s 3, same run.

For every data set (read once with budgetsvm.io.read_problem) and every C, both tools train with
the same tolerance, no bias (-B -1) and the same cap on outer iterations (LIBLINEAR's 300 by
default); each configuration is timed as the median of --repeats runs, counting only training
(LIBLINEAR's problem conversion is done once, outside the timing). LIBLINEAR's outer iterations
are read from its own "#iter" lines (its C stdout is captured); ours come from train_info.

Printed: a markdown table with outer iterations (summed over one-vs-rest sub-problems, with the
number of sub-problems that hit the cap), median times, the time-per-outer-iteration ratio and,
where both converged, the total-time ratio (ours / LIBLINEAR; target ≤ 1.2).

    BSVM_DATA=/work/shared/data python scripts/bench_dcd.py [--repeats 3] [--json out.json]
"""
import argparse
import ctypes
import json
import os
import re
import statistics
import sys
import tempfile
import time

import numpy as np

from budgetsvm.io import read_problem
from budgetsvm.labels import group_classes
from budgetsvm.linear import fit_linear
from budgetsvm.params import TrainParams

DATASETS = ["a9a", "w8a", "ijcnn1", "sector.scale"]
_libc = ctypes.CDLL(None)


class CaptureStdout:
    """Redirect file descriptor 1 (LIBLINEAR's C printf) into a temporary file."""

    def __enter__(self):
        sys.stdout.flush()
        _libc.fflush(None)
        self.file = tempfile.TemporaryFile(mode="w+")
        self.saved = os.dup(1)
        os.dup2(self.file.fileno(), 1)
        return self

    def __exit__(self, *exc):
        _libc.fflush(None)
        os.dup2(self.saved, 1)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read()
        self.file.close()
        return False


def time_liblinear(prob, options, max_iter):
    from liblinear import liblinearutil
    param = liblinearutil.parameter(options)
    with CaptureStdout() as cap:
        start = time.perf_counter()
        model = liblinearutil.train(prob, param)
        seconds = time.perf_counter() - start
    del model
    iters = [int(v) for v in re.findall(r"#iter = (\d+)", cap.text)]
    capped = cap.text.count("reaching max number of iterations")
    if not iters:
        raise RuntimeError("no '#iter' line in LIBLINEAR's output:\n" + cap.text)
    return seconds, sum(iters), capped, len(iters)


def time_ours(X, y_index, labels, params):
    start = time.perf_counter()
    _, _, _, info = fit_linear(X, y_index, labels, params)
    seconds = time.perf_counter() - start
    return (seconds, sum(s["n_iter"] for s in info),
            sum(s["max_iter_reached"] for s in info), len(info))


def median_run(fn, repeats):
    runs = [fn() for _ in range(repeats)]
    seconds = statistics.median(r[0] for r in runs)
    per_iter = statistics.median(r[0] / max(r[1], 1) for r in runs)
    iters = statistics.median(r[1] for r in runs)
    capped = max(r[2] for r in runs)
    return {"seconds": seconds, "per_iter": per_iter, "iters": iters, "capped": capped,
            "subproblems": runs[0][3], "all_seconds": [r[0] for r in runs]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("BSVM_DATA"),
                    help="folder with the .xz data sets (default: $BSVM_DATA)")
    ap.add_argument("--datasets", nargs="+", default=DATASETS)
    ap.add_argument("--C", nargs="+", type=float, default=[0.01, 1.0, 100.0])
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--max-iter", type=int, default=300,
                    help="outer-iteration cap for budgetsvm (LIBLINEAR's is fixed at 300)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--quick", action="store_true", help="a9a and w8a at C = 0.01 and 1, 1 repeat")
    args = ap.parse_args(argv)
    if args.quick:
        args.datasets, args.C, args.repeats = ["a9a", "w8a"], [0.01, 1.0], 1
    if not args.data:
        ap.error("give --data or set BSVM_DATA")
    from liblinear import liblinear as ll
    from liblinear import liblinearutil
    import scipy.sparse as sp

    rows = []
    for name in args.datasets:
        path = os.path.join(args.data, name + ".xz")
        X, y = read_problem(path)
        labels, y_index = group_classes(y)
        prob = ll.problem(y, sp.csr_matrix(X))
        print(f"# {name}: {X.shape[0]} rows, {X.shape[1]} features, {X.nnz} non-zeros, "
              f"{len(labels)} classes", file=sys.stderr)
        for C in args.C:
            params = TrainParams(solver="dcd", C=C, eps=args.eps, bias=-1.0,
                                 max_iter=args.max_iter, seed=args.seed)
            options = f"-s 3 -c {C:g} -e {args.eps:g} -B -1"
            lib = median_run(lambda: time_liblinear(prob, options, 300), args.repeats)
            ours = median_run(lambda: time_ours(X, y_index, labels, params), args.repeats)
            row = {"dataset": name, "C": C, "eps": args.eps, "ours": ours, "liblinear": lib,
                   "per_iter_ratio": ours["per_iter"] / lib["per_iter"],
                   "total_ratio": (ours["seconds"] / lib["seconds"]
                                   if not ours["capped"] and not lib["capped"] else None)}
            rows.append(row)
            print(f"#   C={C:g}: ours {ours['seconds']:.3f}s/{ours['iters']:g} it, LIBLINEAR "
                  f"{lib['seconds']:.3f}s/{lib['iters']:g} it", file=sys.stderr)
    del liblinearutil

    def iters(r):
        text = f"{r['iters']:g}"
        if r["capped"]:
            text += f" (cap{'' if r['subproblems'] == 1 else ' ×' + str(r['capped'])})"
        return text

    print(f"| data set | C | ours: outer it | LIBLINEAR: outer it | ours s | LIBLINEAR s | "
          f"time/it ratio | total ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        total = "—" if r["total_ratio"] is None else f"{r['total_ratio']:.2f}"
        print(f"| {r['dataset']} | {r['C']:g} | {iters(r['ours'])} | {iters(r['liblinear'])} | "
              f"{r['ours']['seconds']:.3f} | {r['liblinear']['seconds']:.3f} | "
              f"{r['per_iter_ratio']:.2f} | {total} |")
    print(f"\neps = {args.eps:g}, -B -1, cap {args.max_iter} outer iterations (LIBLINEAR: 300), "
          f"median of {args.repeats}; iterations summed over one-vs-rest sub-problems; "
          "'cap ×k': k sub-problems stopped at the cap; ratios are ours / LIBLINEAR; "
          "total ratio only where neither hit the cap.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
