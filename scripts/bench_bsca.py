"""Small benchmark for issue 4: BSCA against BSGD, and lookup-wd/lookup-h against GSS merging.

Runs in this process, one after the other, with BLAS limited to one thread; train times exclude
data loading and are given as wall clock and CPU (process_time) seconds, because on a shared
machine the wall time also measures the other processes. Prints markdown tables.

Table 1 (seed 000's comparison, reduced): BSCA vs BSGD (pegasos) at B = 500, merging with
--merge-search gss, same epochs, on a9a (C = 32, γ = 2^-7) and ijcnn1 (C = 32, γ = 2): test
accuracy, train time, merge fraction, and the standard deviation of the per-epoch test accuracy
over the last half of the epochs (BSCA from its monitor; BSGD by re-training with 1..E epochs
is too slow here, so only its final accuracy is shown).

Table 2 (seed 002's comparison, reduced): BSGD on a9a at B = 100 with gss, gss-precise,
lookup-h and lookup-wd: total train time, time in maintenance, merges, accuracy, and the
fraction of test points whose predicted label agrees with the gss model.

Usage:  python scripts/bench_bsca.py [--epochs 5] [--merge-epochs 20] [--seeds 1]
        [--datasets a9a,ijcnn1]
Data: $BSVM_DATA (default ../shared/data relative to the repository).
"""
import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from budgetsvm.io import read_problem  # noqa: E402
from budgetsvm.kernel_solvers import train_bsca, train_bsgd  # noqa: E402
from budgetsvm.labels import group_classes  # noqa: E402
from budgetsvm.params import TrainParams  # noqa: E402

DATASETS = {
    "a9a": dict(C=32.0, gamma=2 ** -7),
    "ijcnn1": dict(C=32.0, gamma=2.0),
}


def data_dir():
    return Path(os.environ.get("BSVM_DATA", REPO.parent / "shared" / "data"))


def load(name):
    X, y = read_problem(data_dir() / f"{name}.xz")
    Xt, yt = read_problem(data_dir() / f"{name}.t.xz", n_features=X.shape[1])
    labels, y_index = group_classes(y)
    return X, y_index, labels, Xt, yt


def timed_train(fn, *args, **kw):
    w, c = time.perf_counter(), time.process_time()
    model = fn(*args, **kw)
    return model, time.perf_counter() - w, time.process_time() - c


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


def bench_solvers(names, epochs, seeds):
    rows = []
    for name in names:
        X, y_index, labels, Xt, yt = load(name)
        s = DATASETS[name]
        pos = {float(v): i for i, v in enumerate(labels)}
        yt_index = np.array([pos.get(float(v), -1) for v in yt])
        for solver in ("bsca", "bsgd"):
            accs, walls, cpus, mfs, sds = [], [], [], [], []
            for seed in seeds:
                p = TrainParams(solver=solver, C=s["C"], gamma=s["gamma"], budget=500,
                                epochs=epochs, seed=seed, merge_search="gss")
                if solver == "bsca":
                    mon = []
                    model, wall, cpu = timed_train(train_bsca, X, y_index, labels, p,
                                                   monitor=mon.append,
                                                   monitor_test=(Xt, yt_index))
                    curve = [r["test_accuracy"] for r in mon]
                    sds.append(np.std(curve[len(curve) // 2:]))
                    wall = cpu = model.train_info["train_seconds"]   # monitoring excluded
                else:
                    model, wall, cpu = timed_train(train_bsgd, X, y_index, labels, p)
                accs.append((model.predict(Xt) == yt).mean())
                walls.append(wall)
                cpus.append(cpu)
                mfs.append(model.train_info["n_merges"] / model.train_info["n_steps"])
            rows.append([name, solver, epochs, f"{100 * np.mean(accs):.2f}",
                         f"{np.mean(walls):.1f}", f"{np.mean(cpus):.1f}",
                         f"{100 * np.mean(mfs):.1f}",
                         f"{100 * np.mean(sds):.2f}" if sds else "–"])
            print(rows[-1], flush=True)
    return table(["data", "solver", "epochs", "test acc %", "train s (wall)", "train s (CPU)",
                  "merge %", "sd acc last half (pts)"], rows)


def bench_lookup(epochs, seeds):
    X, y_index, labels, Xt, yt = load("a9a")
    s = DATASETS["a9a"]
    rows, ref = [], {}
    for ms in ("gss", "gss-precise", "lookup-h", "lookup-wd"):
        accs, walls, cpus, maint, agree = [], [], [], [], []
        for seed in seeds:
            p = TrainParams(solver="bsgd", C=s["C"], gamma=s["gamma"], budget=100,
                            epochs=epochs, seed=seed, merge_search=ms)
            model, wall, cpu = timed_train(train_bsgd, X, y_index, labels, p)
            pred = model.predict(Xt)
            if ms == "gss":
                ref[seed] = pred
            accs.append((pred == yt).mean())
            agree.append((pred == ref[seed]).mean())
            walls.append(wall)
            cpus.append(cpu)
            maint.append(model.train_info["maintenance_seconds"])
            info = model.train_info
        rows.append([ms, f"{100 * np.mean(accs):.2f} ± {100 * np.std(accs):.2f}",
                     f"{np.mean(walls):.1f}", f"{np.mean(cpus):.1f}", f"{np.mean(maint):.1f}",
                     info["n_merges"], f"{100 * info['n_merges'] / info['n_steps']:.1f}",
                     f"{100 * np.mean(agree):.2f}"])
        print(rows[-1], flush=True)
    return table(["merge search", "test acc %", "train s (wall)", "train s (CPU)",
                  "maintenance s (wall)", "merges (last seed)", "merge %",
                  "prediction agreement with gss %"], rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--merge-epochs", type=int, default=20)
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--datasets", default="a9a,ijcnn1")
    ap.add_argument("--skip-solvers", action="store_true")
    ap.add_argument("--skip-lookup", action="store_true")
    ap.add_argument("--quick", action="store_true", help="ijcnn1 only, 2 epochs, 5 merge epochs")
    a = ap.parse_args()
    if a.quick:
        a.datasets, a.epochs, a.merge_epochs = "ijcnn1", 2, 5
    seeds = [int(v) for v in a.seeds.split(",")]
    out = []
    if not a.skip_solvers:
        out.append("### BSCA vs BSGD, B = 500, merge (gss)\n\n"
                   + bench_solvers(a.datasets.split(","), a.epochs, seeds))
    if not a.skip_lookup:
        out.append(f"### BSGD merge search on a9a, B = 100, {a.merge_epochs} epochs\n\n"
                   + bench_lookup(a.merge_epochs, seeds))
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
