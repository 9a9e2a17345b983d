"""Prediction speed of kernel models: budgetsvm's batched, BLAS-backed prediction vs
libsvm-official's svm_predict on the very same model (a BSGD model exported in LIBSVM format).
Both predict the whole test file from memory; labels must agree on every row. BLAS is limited to one
thread, as LIBSVM has one. Measures into build/bench/predict.json (scripts/_common.py,
run_bench), then writes the report section build/bench/bench_predict.md from that file alone
(--report-only: without measuring)."""
import argparse
import os
import statistics
import tempfile
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

from _common import (Section, add_report_only, budgeted_defaults,  # noqa: E402
                     budgeted_defaults_text, data_path, run_bench, spread, table, timed_all)

SETTINGS = {"a9a": (32.0, 2 ** -7), "ijcnn1": (32.0, 2.0), "w8a": (8.0, 2 ** -5)}
TARGET = 5.0      # issue 3: prediction at least 5x faster than LIBSVM's


def measure(args):
    """One row per (data set, budget): the model's size, every repeat's seconds of both tools
    and the share of equal labels."""
    if args.quick:
        args.datasets = "a9a,w8a"
    from libsvm import svmutil

    from budgetsvm.io import read_problem, write_problem
    from budgetsvm.model_io import load_model, save_model
    from budgetsvm.params import TrainParams
    from budgetsvm.train import train

    defaults = budgeted_defaults()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets.split(","):
            try:
                X, y = read_problem(str(data_path(name)))
                Xt, yt = read_problem(str(data_path(name + ".t")))
            except FileNotFoundError:
                continue                      # listed as missing in the setting block
            plain = Path(tmp) / (name + ".t")
            with open(plain, "w") as f:
                write_problem(f, Xt, yt)
            y_l, x_l = svmutil.svm_read_problem(str(plain))
            C, gamma = SETTINGS[name]
            for budget in map(int, args.budgets.split(",")):
                params = TrainParams(solver="bsgd", C=C, gamma=gamma, budget=budget, epochs=1,
                                     seed=args.seed)
                model_path = str(Path(tmp) / f"{name}.{budget}.libsvm")
                save_model(train(X, y, params), model_path, format="libsvm")
                ours_model = load_model(model_path)
                theirs_model = svmutil.svm_load_model(model_path)
                ours, ours_pred = timed_all(lambda: ours_model.predict(Xt), args.repeats)
                theirs, (their_pred, _, _) = timed_all(
                    lambda: svmutil.svm_predict(y_l, x_l, theirs_model, "-q"), args.repeats)
                yield {"dataset": name, "budget": budget, "C": C, "gamma": gamma,
                       **defaults, "seed": args.seed,
                       "n_sv": theirs_model.get_nr_sv(), "test_rows": Xt.shape[0],
                       "ours": ours, "libsvm": theirs,
                       "agree": float(np.mean(ours_pred == np.asarray(their_pred)) * 100)}


def report(results):
    args = argparse.Namespace(**results["meta"]["options"])
    rows, settings, ratios = [], {}, []
    for r in results["rows"]:
        settings[r["dataset"]] = f"{r['dataset']}: C = {r['C']:g}, γ = {r['gamma']:g}"
        ratio = statistics.median(r["libsvm"]) / statistics.median(r["ours"])
        ratios.append((r["dataset"], r["budget"], ratio))
        rows.append([r["dataset"], r["budget"], r["n_sv"], f"{r['test_rows']:,}",
                     spread(r["ours"], "{:.3f}"), spread(r["libsvm"], "{:.3f}"),
                     f"{ratio:.1f}x", f"{r['agree']:.2f}%"])
    body = [table(["data set", "budget B", "#SV in model", "test rows", "budgetsvm s",
                   "libsvm svm_predict s", "speed-up", "same labels"], rows)]
    body.append(f"Seconds to predict the whole test set from memory, median (min–max) of "
                f"{args.repeats} runs; speed-up = LIBSVM median / ours. The model is a BSGD model "
                f"(1 epoch, seed {args.seed}) written with `--format libsvm`, so both tools "
                "evaluate exactly the same support vectors and coefficients; LIBSVM's time "
                "includes nothing but `svm_predict` on rows already in its own format. BLAS is "
                "limited to one thread (LIBSVM's prediction is single-threaded).")
    if ratios:
        missed = [f"{n} B = {b} ({r:.1f}x)" for n, b, r in ratios if r < TARGET]
        if missed:
            body.append(f"Target (issue 3): at least {TARGET:g}x faster than LIBSVM — **missed** "
                        f"in {len(missed)} of {len(ratios)} rows: {', '.join(missed)}. The "
                        "time goes into the test rows × B kernel values, each one exp() "
                        "(ijcnn1 at B = 500: 91,701 × 500 ≈ 46M). The dot products come from "
                        "BLAS in cache-sized blocks, but the exponentials are not cheaper than "
                        "LIBSVM's, and both tools run on one thread here, so the advantage shrinks "
                        "as B and the test set grow.")
        else:
            body.append(f"Target (issue 3): at least {TARGET:g}x faster than LIBSVM — met in "
                        f"all {len(ratios)} rows (smallest {min(r for *_, r in ratios):.1f}x).")
    first = results["rows"][0] if results["rows"] else {}
    return Section("Prediction speed vs LIBSVM", "\n\n".join(body),
                   extra=["BSGD training settings: " + "; ".join(settings.values())
                          + f"; budgets {args.budgets}; 1 epoch; "
                          f"{budgeted_defaults_text(first)} (bsvm-train's defaults); seed "
                          f"{args.seed}"])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", default="a9a,ijcnn1,w8a")
    parser.add_argument("--budgets", default="100,500")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a9a and w8a")
    add_report_only(parser)
    args = parser.parse_args()
    names = ("a9a,w8a" if args.quick else args.datasets).split(",")
    run_bench("bench_predict", args, measure, report,
              datasets=[n for name in names for n in (name, name + ".t")],
              peers=("libsvm-official", "numpy", "scipy"))


if __name__ == "__main__":
    main()
