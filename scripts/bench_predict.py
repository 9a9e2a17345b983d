"""Prediction speed of kernel models: budgetsvm's batched, BLAS-backed prediction vs
libsvm-official's svm_predict on the very same model (a BSGD model exported in LIBSVM format).
Both predict the whole test file from memory; labels must agree on every row."""
import argparse
import tempfile
from pathlib import Path

import numpy as np

from _common import data_path, machine, table, timed, verify_checksum, versions

SETTINGS = {"a9a": (32.0, 2 ** -7), "ijcnn1": (32.0, 2.0), "w8a": (8.0, 2 ** -5)}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", default="a9a,ijcnn1,w8a")
    parser.add_argument("--budgets", default="100,500")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.datasets, args.budgets, args.repeats = "a9a", "500", 1
    from libsvm import svmutil

    from budgetsvm.io import read_problem
    from budgetsvm.model_io import load_model, save_model
    from budgetsvm.params import TrainParams
    from budgetsvm.train import train

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets.split(","):
            verify_checksum(name)
            X, y = read_problem(str(data_path(name)))
            Xt, yt = read_problem(str(data_path(name + ".t")))
            plain = Path(tmp) / (name + ".t")
            with open(plain, "w") as f:
                from budgetsvm.io import write_problem
                write_problem(f, Xt, yt)
            y_l, x_l = svmutil.svm_read_problem(str(plain))
            C, gamma = SETTINGS[name]
            for budget in map(int, args.budgets.split(",")):
                params = TrainParams(solver="bsgd", C=C, gamma=gamma, budget=budget, epochs=1)
                model_path = str(Path(tmp) / f"{name}.{budget}.libsvm")
                save_model(train(X, y, params), model_path, format="libsvm")
                ours_model = load_model(model_path)
                theirs_model = svmutil.svm_load_model(model_path)
                ours, o_min, o_max, ours_pred = timed(lambda: ours_model.predict(Xt),
                                                      args.repeats)
                theirs, t_min, t_max, (their_pred, _, _) = timed(
                    lambda: svmutil.svm_predict(y_l, x_l, theirs_model, "-q"), args.repeats)
                agree = np.mean(ours_pred == np.asarray(their_pred)) * 100
                rows.append([name, budget, Xt.shape[0], f"{ours:.3f} ({o_min:.3f}–{o_max:.3f})",
                             f"{theirs:.3f} ({t_min:.3f}–{t_max:.3f})", f"{theirs / ours:.1f}x",
                             f"{agree:.2f}%"])
    print(f"Machine: {machine()}; {versions('libsvm-official', 'numpy', 'scipy')}; "
          f"BSGD model (1 epoch, seed 1) exported in LIBSVM format, median of {args.repeats} "
          f"(min–max) seconds to predict the whole test set\n")
    print(table(["data set", "budget", "test rows", "budgetsvm", "libsvm svm_predict",
                 "speed-up", "same labels"], rows))


if __name__ == "__main__":
    main()
