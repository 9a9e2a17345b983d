"""Training CPU time of the robust default against LIBSVM's, measured alternately in one process.

bench_robust measures LIBSVM once per data set, so its ratios move with the machine's load at
that moment (LIBSVM on ijcnn1 took 4.2 s of CPU in one full run and 6.9 s in the next). Here
every round trains LIBSVM once and then our robust bsgd and bsca for seeds 1–5, so each ratio
compares times taken a few seconds apart. BLAS on one thread; the settings (C, γ, B = 500, 5
epochs) are bench_robust's.

Times are CPU seconds of the training call (for us `train()`: the epochs, the refit, everything;
for LIBSVM `svm_train` with its conversion of the rows); data loading is excluded. The merge
tables are built once before the rounds, as a user's cache folder holds them after the first run.

Usage:  python scripts/interleaved_libsvm.py [--dataset ijcnn1] [--rounds 3]
Data: $BSVM_DATA (required).
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CapturedCStdout, table  # noqa: E402
from bench_bsgd import DATASETS, load  # noqa: E402

SEEDS = (1, 2, 3, 4, 5)
SOLVERS = ("bsgd", "bsca")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="ijcnn1", choices=("a9a", "ijcnn1"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from libsvm.svmutil import svm_parameter, svm_problem, svm_train

    from budgetsvm.params import TrainParams
    from budgetsvm.train import train
    spec = DATASETS[args.dataset]
    X, y = load(args.dataset)[:2]
    train(X[:2000], y[:2000], TrainParams(solver="bsgd", C=spec["C"], gamma=spec["gamma"],
                                          budget=50))           # merge tables, imports
    rows = []
    for round_ in range(1, args.rounds + 1):
        start = time.process_time()
        with CapturedCStdout():
            svm_train(svm_problem(y, X), svm_parameter(
                f"-s 0 -t 2 -c {spec['C']} -g {spec['gamma']} -m 500 -q"))
        libsvm = time.process_time() - start
        row = [str(round_), f"{libsvm:.2f}"]
        for solver in SOLVERS:
            times = []
            for seed in SEEDS:
                start = time.process_time()
                train(X, y, TrainParams(solver=solver, C=spec["C"], gamma=spec["gamma"],
                                        budget=500, seed=seed))
                times.append(time.process_time() - start)
            mean = statistics.mean(times)
            row += [f"{mean:.3f}", f"{mean / libsvm:.3f}"]
        rows.append(row)
        print(f"round {round_} done", file=sys.stderr, flush=True)
    header = ["round", "LIBSVM CPU s"] + [f"{s} {what}" for s in SOLVERS
                                          for what in ("CPU s (mean, seeds 1–5)", "÷ LIBSVM")]
    print(f"{args.dataset} (C = {spec['C']}, γ = {spec['gamma']}), robust default, B = 500:\n")
    print(table(header, rows))


if __name__ == "__main__":
    main()
