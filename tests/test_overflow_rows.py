"""Training rows whose squared norm ‖x‖² overflows a double (values near 1e154 or beyond): no
solver can step on them (the coordinate step divides by ‖x‖² = inf, kernel values are
inf − inf = NaN), so every solver leaves them out, with one warning. Before, -s acf wrote out of
bounds (a segfault), dcd and ww with --max-iter 0 never stopped, and bsgd --polish none wrote a
model whose decision values were NaN."""
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm.errors import BsvmError, OverflowRowsWarning, TrainingDiverged
from budgetsvm.params import TrainParams
from budgetsvm.train import train

liblinearutil = pytest.importorskip("liblinear.liblinearutil")

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent


def _predict(*args, timeout=60):
    """bsvm-predict with these arguments: the completed process (text output)."""
    return subprocess.run([str(BIN / "bsvm-predict"), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


def _problem():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 4))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    X[7] = [1e155, 0.0, 2.0, 0.0]               # ‖x‖² = 1e310: inf
    return sp.csr_matrix(X), y


@pytest.mark.parametrize("solver", ["dcd", "acf", "ww"])
def test_the_exact_solvers_leave_the_row_out_and_stop(solver):
    # the model is the one of the data without that row, bit for bit (the row stays at α = 0
    # and out of the visiting order), and --max-iter 0 (no limit) ends
    X, y = _problem()
    keep = np.arange(len(y)) != 7
    params = TrainParams(solver=solver, C=1.0, max_iter=0, eps=1e-3)
    with pytest.warns(OverflowRowsWarning, match="1 training row.*row 8"):
        with_row = train(X, y, params)
    without = train(X[keep], y[keep], params)
    assert with_row.coef.tobytes() == without.coef.tobytes()


def test_acf_on_liblinears_example_gives_liblinears_model(tmp_path):
    # the two-row file of the segfault: LIBLINEAR -s 3 gives w = -1 (the first row cannot move)
    data = tmp_path / "overflow"
    data.write_text("+1 1:1e155\n-1 1:1\n")
    y, x = liblinearutil.svm_read_problem(str(data))
    w_ll = liblinearutil.train(y, x, "-s 3 -q").get_decfun()[0]
    for options in (["-s", "acf"], ["-s", "acf", "--acf-shrink", "none"], ["-s", "dcd"]):
        model = tmp_path / "m"
        r = subprocess.run([str(BIN / "bsvm-train"), "-q", *options, str(data), str(model)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (options, r.returncode, r.stderr)
        assert r.stderr == ""
        weights = model.read_text().split("\nw\n")[1].split()
        assert [float(v) for v in weights[:-1]] == w_ll, options


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
@pytest.mark.parametrize("polish", ["refit", "none"])
def test_the_budgeted_solvers_skip_the_row_and_predict_finite_values(solver, polish):
    X, y = _problem()
    with pytest.warns(OverflowRowsWarning):
        model = train(X, y, TrainParams(solver=solver, C=1.0, gamma=0.5, budget=20,
                                        polish=polish))
    keep = np.arange(len(y)) != 7
    decision = model.decision_function(X[keep])
    assert np.all(np.isfinite(decision))
    assert np.mean(model.predict(X[keep]) == y[keep]) > 0.8


def test_bsgd_refuses_a_kernel_that_overflows_on_every_row():
    # poly kernel with γ = 1e300: k(x, x) = inf on every row; bsgd --polish none wrote a model
    # whose decision values were NaN, with exit status 0 (bsca and the refit refused it)
    X, y = _problem()
    X = X[np.arange(len(y)) != 7]
    y = y[np.arange(len(y)) != 7]
    for solver in ("bsgd", "bsca"):
        with pytest.raises(TrainingDiverged, match="k\\(x, x\\) of every training row"):
            train(X, y, TrainParams(solver=solver, kernel="poly", gamma=1e300, budget=20,
                                    maintenance="removal", polish="none"))


def test_quiet_mode_prints_no_overflow_diagnostics(tmp_path):
    data = tmp_path / "big"
    data.write_text("+1 1:1e308\n-1 1:-1e308\n+1 1:1e308 2:1\n-1 2:1\n")
    for solver in ("ww", "bsgd", "dcd"):
        r = subprocess.run([str(BIN / "bsvm-train"), "-q", "-s", solver, str(data),
                            str(tmp_path / "m")], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stderr == "", (solver, r.stderr)
    r = subprocess.run([str(BIN / "bsvm-train"), "-s", "dcd", str(data), str(tmp_path / "m")],
                       capture_output=True, text=True, timeout=60)
    assert "3 training row(s) (the first: row 1) have a squared norm that overflows" in r.stderr


def test_rows_that_do_not_overflow_give_no_warning():
    X, y = _problem()
    X = X[np.arange(len(y)) != 7]
    y = y[np.arange(len(y)) != 7]
    with warnings.catch_warnings():
        warnings.simplefilter("error", OverflowRowsWarning)
        train(X, y, TrainParams(solver="dcd"))


def test_predict_warns_about_rows_whose_decision_values_are_nan(tmp_path):
    # w = (2, −2) and x = (1e308, 1e308): the dot product is inf − inf; LIBSVM and LIBLINEAR
    # predict such rows silently
    model = tmp_path / "m"
    model.write_text("solver_type L2R_L1LOSS_SVC_DUAL\nnr_class 2\nlabel 1 -1\nnr_feature 2\n"
                     "bias -1\nw\n2 \n-2 \n")
    test = tmp_path / "t"
    test.write_text("+1 1:1e308 2:1e308\n+1 1:1\n-1 2:1\n")
    out = tmp_path / "out"
    r = _predict(test, model, out)
    assert r.returncode == 0
    assert "warning: 1 test row(s) have NaN decision values" in r.stderr
    assert out.read_text().splitlines()[1:] == ["1", "-1"]
    r = _predict("-q", test, model, out)
    assert r.returncode == 0 and r.stderr == ""


def _heart_with_an_overflow_row(tmp_path):
    import lzma
    rows = lzma.open(REPO / "data" / "heart_scale.xz").read().decode().splitlines()
    data = tmp_path / "heart_ovf"
    data.write_text("\n".join(rows[:100] + ["+1 1:1e200"] + rows[100:]) + "\n")
    return data


def test_cross_validation_and_probability_warn_once_about_the_right_row(tmp_path):
    data = _heart_with_an_overflow_row(tmp_path)
    for options in (["-v", "5"], ["-b", "1"], ["-v", "3", "-b", "1"]):
        r = subprocess.run([str(BIN / "bsvm-train"), "-s", "dcd", *options, str(data),
                            str(tmp_path / "m")], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        warned = [line for line in r.stderr.splitlines() if "overflows a double" in line]
        assert len(warned) == 1 and "the first: row 101)" in warned[0], (options, r.stderr)


def test_the_sigmoid_is_fitted_without_the_rows_left_out(tmp_path):
    # the row's held-out decision value (~1e199) overflowed the sigmoid fit's sums: A stayed 0
    # and every probability was the same (with -b 1 the accuracy fell from 85 % to 56 %)
    from budgetsvm.model_io import load_model
    data = _heart_with_an_overflow_row(tmp_path)
    model = tmp_path / "m"
    r = subprocess.run([str(BIN / "bsvm-train"), "-q", "-s", "dcd", "-b", "1", str(data),
                        str(model)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert load_model(str(model)).prob_a[0] < -0.5
    test = tmp_path / "heart"
    test.write_text("".join(line + "\n" for i, line in enumerate(
        data.read_text().splitlines()) if i != 100))
    r = _predict("-b", "1", test, model, tmp_path / "out", timeout=120)
    assert float(r.stdout.split("=")[1].split("%")[0]) > 80.0


def test_every_row_overflowing_is_an_error():
    X = sp.csr_matrix(np.array([[1e200, 0.0], [0.0, 1e200], [3e200, 1.0]]))
    with pytest.raises(Exception, match="every training row has a squared norm that overflows"):
        train(X, np.array([1.0, -1.0, 1.0]), TrainParams(solver="dcd"))


def test_equal_weights_whose_product_with_c_overflows_name_the_weights():
    from budgetsvm.estimators import LinearSVC
    X, y = _problem()
    with pytest.raises(ValueError, match=r"times the equal sample_weight \(1e\+308\) is inf"):
        LinearSVC(C=10.0).fit(X, y, sample_weight=np.full(len(y), 1e308))


def test_grid_search_warns_once_and_not_with_q(tmp_path):
    data = _heart_with_an_overflow_row(tmp_path)
    grid = [str(BIN / "bsvm-grid"), "-j", "2", "-n", "1", "-log2c", "0,1,1", "-s", "dcd",
            "-out", "null"]
    r = subprocess.run([*grid, str(data)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0
    assert [line for line in r.stderr.splitlines() if "overflows" in line] == [
        line for line in r.stderr.splitlines() if "the first: row 101)" in line]
    assert sum("overflows" in line for line in r.stderr.splitlines()) == 1
    r = subprocess.run([*grid, "-q", str(data)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stderr == ""


def test_streaming_warns_and_refuses_as_training_in_memory(tmp_path):
    data = _heart_with_an_overflow_row(tmp_path)
    train_cmd = [str(BIN / "bsvm-train"), "-n", "1", "-s", "bsgd", "--stream"]
    r = subprocess.run([*train_cmd, str(data), str(tmp_path / "m")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0
    assert sum("the first: row 101)" in line for line in r.stderr.splitlines()) == 1
    every = tmp_path / "every"
    every.write_text("+1 1:1e200\n-1 2:1e200\n+1 1:3e200 2:1\n-1 1:1 2:2e200\n")
    r = subprocess.run([*train_cmd, "-q", str(every), str(tmp_path / "m2")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.startswith("every training row has a squared norm")
    poly = tmp_path / "poly"
    poly.write_text("+1 1:1e60\n-1 2:1e60\n+1 1:3e60 2:1\n-1 1:1 2:2e60\n")
    r = subprocess.run([*train_cmd, "-q", "-t", "1", "--maintenance", "removal", "--polish",
                        "none", str(poly), str(tmp_path / "m3")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1 and "k(x, x) of every training row overflows" in r.stderr
    assert not (tmp_path / "m3").exists()


def test_nan_decision_values_are_decided_as_liblinear_and_libsvm_decide_them(tmp_path):
    # one-vs-rest, decision values (1, NaN, 2): LIBLINEAR's loop skips the NaN and predicts
    # the third class (np.argmax picked the NaN's class)
    model = tmp_path / "ovr"
    model.write_text("solver_type L2R_L1LOSS_SVC_DUAL\nnr_class 3\nlabel 1 2 3\nnr_feature 3\n"
                     "bias -1\nw\n0 0 1 \n2 -2 0 \n0 0 2 \n")
    test = tmp_path / "t"
    test.write_text("3 1:1e308 2:1e308 3:1\n1 3:-1\n")
    y, x = liblinearutil.svm_read_problem(str(test))
    theirs, _, _ = liblinearutil.predict(y, x, liblinearutil.load_model(str(model)), "-q")
    out = tmp_path / "out"
    assert _predict("-q", test, model, out).returncode == 0
    assert [float(v) for v in out.read_text().split()] == theirs
    # binary with probabilities: LIBSVM's min(max(p, 1e-7), 1 - 1e-7) makes a NaN p 1e-7, so
    # the row goes to the second label (the probabilities were printed as nan)
    binary = tmp_path / "binary"
    binary.write_text("budgetsvm_model 1\nmodel_type linear\nsolver dcd\nmulticlass binary\n"
                      "nr_class 2\nlabel 1 -1\nnr_feature 2\nbias -1.0\nnr_w 1\nprobA -1.0\n"
                      "probB 0.0\nw\n2\n-2\nend\n")
    test.write_text("+1 1:1e308 2:1e308\n")
    assert _predict("-q", "-b", "1", test, binary, out).returncode == 0
    assert out.read_text().splitlines()[1] == "-1 1e-07 1"


def test_the_estimators_predict_warns_about_rows_whose_decision_values_are_nan(tmp_path):
    # the same model and rows through the Python API (it predicted them silently) and a
    # kernel model whose kernel values overflow to NaN: one RuntimeWarning with the count of
    # rows whose decision values are NaN; none for rows that have none
    from budgetsvm.estimators import BudgetSVC, load
    model = tmp_path / "m"
    model.write_text("solver_type L2R_L1LOSS_SVC_DUAL\nnr_class 2\nlabel 1 -1\nnr_feature 2\n"
                     "bias -1\nw\n2 \n-2 \n")
    X = np.array([[1e308, 1e308], [1.0, 0.0], [0.0, 1.0]])
    rng = np.random.RandomState(0)
    Xk = rng.randn(60, 3)
    kernel = BudgetSVC(kernel="poly", degree=200, gamma=10, coef0=1, budget=20, epochs=1,
                       polish="none").fit(Xk, (Xk[:, 0] > 0).astype(int))
    for clf, rows in ((load(model), X), (kernel, Xk)):
        with np.errstate(all="ignore"):
            nan_rows = int(np.isnan(np.atleast_2d(clf.decision_function(rows).T).T)
                           .any(axis=1).sum())
        assert nan_rows > 0
        with pytest.warns(RuntimeWarning, match=rf"^{nan_rows} row\(s\) have NaN decision "
                                                r"values .* not by the model$"):
            with np.errstate(all="ignore"):
                clf.predict(rows)
        finite = rows[np.isfinite(np.atleast_2d(clf.decision_function(rows).T).T).all(axis=1)]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            clf.predict(finite)


@pytest.mark.parametrize("solver", ["dcd", "acf", "ww"])
def test_the_bias_feature_counts_in_the_squared_norm(tmp_path, solver):
    # -B b appends b to every row, so ‖x‖² + b² is what overflows: a b whose square overflows
    # left every row out and gave an all-zero model without a word; with b² = 1e308, rows
    # with ‖x‖² near 1e308 overflow too (counted by brute force here)
    X, y = _problem()
    X = X[np.arange(len(y)) != 7]
    y = y[np.arange(len(y)) != 7]
    with pytest.raises(BsvmError) as caught:
        train(X, y, TrainParams(solver=solver, bias=1e155))
    assert str(caught.value) == ("-B 1e+155: the bias feature's square overflows a double "
                                 "(values near 1e154 or beyond), so no solver can step on any "
                                 "row: use a smaller -B")
    X = X.tolil()
    X[3, 1], X[10, 2] = 1e154, 5e153
    X = X.tocsr()
    with np.errstate(over="ignore"):
        expected = np.flatnonzero(np.isinf(np.asarray(X.multiply(X).sum(axis=1)).ravel()
                                           + 1e154 * 1e154))
    assert expected.tolist() == [3]
    with pytest.warns(OverflowRowsWarning, match=r"^1 training row\(s\) \(the first: row 4\)"):
        train(X, y, TrainParams(solver=solver, bias=1e154))
    data = tmp_path / "d"
    data.write_text("+1 1:1\n-1 2:1\n")
    r = subprocess.run([str(BIN / "bsvm-train"), "-s", solver, "-B", "1e300", str(data),
                        str(tmp_path / "m")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and not (tmp_path / "m").exists()
    assert r.stderr == ("-B 1e+300: the bias feature's square overflows a double (values near "
                        "1e154 or beyond), so no solver can step on any row: use a smaller -B\n")
