"""Probability outputs (issue 9): the sigmoid fit against scipy, pairwise coupling against
libsvm-official, calibration on held-out data (a9a, ijcnn1), and the -b 1 command lines."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from budgetsvm import io, model_io, probability
from budgetsvm.errors import BsvmError
from budgetsvm.params import TrainParams
from budgetsvm.train import check_solver, train
from reference.data import gaussian_classes

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HEART = REPO / "data" / "heart_scale.xz"


def cli(tool, *args, cwd):
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def regularised_nll(ab, f, t):
    z = ab[0] * f + ab[1]
    # -[t log p + (1 - t) log(1 - p)], p = 1/(1 + e^z), written stably
    return float(np.sum(t * z + np.logaddexp(0.0, -z)))


@pytest.mark.parametrize("seed,n,shift", [(0, 500, 0.3), (1, 2000, -0.5), (2, 60, 1.0)])
def test_sigmoid_fit_equals_scipy_minimum(seed, n, shift):
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < 0.4
    f = np.where(positive, 1.0, -1.0) * rng.gamma(2.0, 0.7, n) + shift + rng.normal(0, 0.8, n)
    A, B = probability.sigmoid_train(f, positive)
    t = probability.sigmoid_targets(positive)

    def grad(ab, f, t):
        p = probability.sigmoid_predict(f, ab[0], ab[1])
        return np.array([np.dot(f, t - p), np.sum(t - p)])

    ref = minimize(regularised_nll, x0=[0.0, 0.0], args=(f, t), jac=grad, method="BFGS",
                   options={"gtol": 1e-11, "maxiter": 10000})
    np.testing.assert_allclose([A, B], ref.x, rtol=0, atol=1e-6)
    assert A < 0                                      # larger f, more likely positive


def test_sigmoid_predict_is_overflow_safe():
    r = probability.sigmoid_predict(np.array([-1e308, 0.0, 1e308]), 5.0, 0.0)
    np.testing.assert_array_equal(r, [1.0, 0.5, 0.0])


def three_class_blobs(n=240, seed=0):
    centers = np.array([[1.0, 0.0, 0.5], [-0.5, 1.0, 0.0], [-0.5, -1.0, -0.5]])
    X, c = gaussian_classes(np.random.default_rng(seed), n, centers, 0.7)
    return sp.csr_matrix(X), np.array([2.0, 7.0, 5.0])[c]


@pytest.mark.parametrize("options", ["-c 1 -g 0.5 -b 1 -q", "-c 1 -t 0 -b 1 -q"])
def test_pairwise_coupling_reproduces_libsvm(tmp_path, options):
    svmutil = pytest.importorskip("libsvm.svmutil")
    X, y = three_class_blobs()
    m = svmutil.svm_train(y, X, options)
    svmutil.svm_save_model(str(tmp_path / "m"), m)
    their_labels, _, their_p = svmutil.svm_predict(y, X, m, "-b 1 -q")
    ours = model_io.load_model(tmp_path / "m")
    assert ours.multiclass == "ovo" and probability.has_probability(ours)
    P = probability.predict_proba(ours, X)
    np.testing.assert_allclose(P, np.array(their_p), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(probability.predict_with_proba(ours, X)[0], their_labels)
    # through bsvm-predict: same layout and numbers (%g) as svm-predict -b 1
    path = tmp_path / "test"
    with open(path, "w") as out:
        io.write_problem(out, X, y)
    r = cli("bsvm-predict", "-b", "1", path, tmp_path / "m", tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "out").read_text().splitlines()
    assert lines[0] == "labels " + " ".join("%d" % v for v in m.get_labels())
    rows = np.array([[float(v) for v in line.split()] for line in lines[1:]])
    np.testing.assert_array_equal(rows[:, 0], their_labels)
    np.testing.assert_allclose(rows[:, 1:], np.array(their_p), rtol=1e-5, atol=1e-6)   # %g


def test_binary_libsvm_probabilities(tmp_path):
    svmutil = pytest.importorskip("libsvm.svmutil")
    X, y = io.read_problem(HEART)
    m = svmutil.svm_train(y, X, "-c 1 -b 1 -q")
    svmutil.svm_save_model(str(tmp_path / "m"), m)
    their_labels, _, their_p = svmutil.svm_predict(y, X, m, "-b 1 -q")
    ours = model_io.load_model(tmp_path / "m")
    P = probability.predict_proba(ours, X)
    np.testing.assert_allclose(P, np.array(their_p), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(probability.predict_with_proba(ours, X)[0], their_labels)


def log_loss(p_true):
    return float(-np.mean(np.log(np.clip(p_true, 1e-15, 1.0))))


def _calibration(X, y, solver="dcd", **kw):
    params = TrainParams(solver=solver, **kw)
    n = 10000
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:2 * n], y[n:2 * n]
    model = probability.train_with_probability(Xtr, ytr, params)
    f = model.decision_function(Xte)[:, 0]
    is_first = yte == model.labels[0]
    calibrated = probability.predict_proba(model, Xte)[:, 0]
    raw = 1.0 / (1.0 + np.exp(-f))                   # the uncalibrated sigmoid of f
    ours = log_loss(np.where(is_first, calibrated, 1 - calibrated))
    theirs = log_loss(np.where(is_first, raw, 1 - raw))
    assert ours < theirs, (ours, theirs)
    return ours, theirs


def test_calibration_beats_raw_sigmoid_a9a():
    X, y = io.read_problem(REPO / "data" / "a9a.xz")
    _calibration(X, y)


def test_calibration_beats_raw_sigmoid_ijcnn1(shared_data):
    X, y = io.read_problem(shared_data("ijcnn1.xz"))
    rng = np.random.default_rng(0)
    order = rng.permutation(X.shape[0])              # ijcnn1's file is sorted in blocks
    _calibration(X[order], y[order], bias=1.0)


def test_calibration_budgeted_kernel():
    try:
        check_solver("bsgd")
    except BsvmError as exc:
        pytest.skip(f"solver bsgd not available in this build: {exc}")
    X, y = io.read_problem(REPO / "data" / "a9a.xz")
    # the a9a setting of Qaadan et al. (2019) and Glasmachers & Qaadan (2018): C = 32, γ = 2^-7
    _calibration(X, y, solver="bsgd", budget=100, epochs=2, C=32.0, gamma=2.0 ** -7)


def test_fit_is_seeded_and_deterministic():
    X, y = io.read_problem(HEART)
    a = probability.train_with_probability(X, y, TrainParams(solver="dcd", seed=5))
    b = probability.train_with_probability(X, y, TrainParams(solver="dcd", seed=5))
    c = probability.train_with_probability(X, y, TrainParams(solver="dcd", seed=6))
    assert np.array_equal(a.prob_a, b.prob_a) and np.array_equal(a.prob_b, b.prob_b)
    assert not np.array_equal(a.prob_b, c.prob_b)


def test_one_vs_rest_rule_sums_to_one():
    X, y = three_class_blobs()
    model = probability.train_with_probability(X, y, TrainParams(solver="dcd", bias=1.0))
    assert model.multiclass == "ovr" and len(model.prob_a) == 3
    P = probability.predict_proba(model, X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    F = model.decision_function(X)
    r = np.clip(1 / (1 + np.exp(F * model.prob_a + model.prob_b)), 1e-7, 1 - 1e-7)
    np.testing.assert_allclose(P, r / r.sum(axis=1, keepdims=True), rtol=1e-12)
    labels, P_again = probability.predict_with_proba(model, X)
    np.testing.assert_array_equal(P_again, P)
    np.testing.assert_array_equal(labels, model.labels[np.argmax(P, axis=1)])
    assert np.mean(labels == y) > 0.85


def test_train_and_predict_b1_layout(tmp_path):
    r = cli("bsvm-train", "-q", "-s", "dcd", "-b", "1", HEART, "m", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    model = model_io.load_model(tmp_path / "m")
    assert probability.has_probability(model)
    r = cli("bsvm-predict", "-b", "1", HEART, "m", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Accuracy = ")
    lines = (tmp_path / "out").read_text().splitlines()
    # parsed as LIBSVM users' scripts do: header, then label and k probabilities per line
    header = lines[0].split()
    assert header == ["labels", "1", "-1"]
    X, y = io.read_problem(HEART)
    assert len(lines) == 1 + len(y)
    rows = np.array([[float(v) for v in line.split()] for line in lines[1:]])
    assert rows.shape == (len(y), 3)
    np.testing.assert_allclose(rows[:, 1:].sum(axis=1), 1.0, atol=1e-5)
    P = probability.predict_proba(model, X)
    np.testing.assert_allclose(rows[:, 1:], P, rtol=1e-5, atol=1e-6)
    # the label is the more probable class (first label on ties): always consistent
    expected = np.where(rows[:, 1] >= rows[:, 2], 1.0, -1.0)
    np.testing.assert_array_equal(rows[:, 0], expected)
    # without -b the decision-value label, plus a notice on stderr
    r = cli("bsvm-predict", HEART, "m", "plain", cwd=tmp_path)
    assert "probability" in r.stderr
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "plain"), model.predict(X))


def test_predict_b1_without_probability_model_fails_cleanly(tmp_path):
    assert cli("bsvm-train", "-q", "-s", "dcd", HEART, "m", cwd=tmp_path).returncode == 0
    r = cli("bsvm-predict", "-b", "1", HEART, "m", "out", cwd=tmp_path)
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1
    assert "no probability information" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("solver", [0, 6, 7])
@pytest.mark.parametrize("bias", [-1, 1])
@pytest.mark.parametrize("classes", [2, 3])
def test_liblinear_logistic_regression_probabilities(tmp_path, solver, bias, classes):
    # LIBLINEAR's predict -b 1 on its logistic-regression models is the oracle: the same
    # labels, and probabilities to the %g digits it prints.
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    X, y = io.read_problem(HEART) if classes == 2 else three_class_blobs()
    m = liblinearutil.train(y, X, f"-s {solver} -B {bias} -c 4 -q")
    liblinearutil.save_model(str(tmp_path / "m"), m)
    their_labels, _, their_p = liblinearutil.predict(y, X, m, "-b 1 -q")
    ours = model_io.load_model(tmp_path / "m")
    assert probability.has_probability(ours)
    labels, P = probability.predict_with_proba(ours, X)
    np.testing.assert_array_equal(labels, their_labels)
    np.testing.assert_allclose(P, np.array(their_p), rtol=1e-12, atol=1e-15)
    path = tmp_path / "test"
    with open(path, "w") as out:
        io.write_problem(out, X, y)
    r = cli("bsvm-predict", "-b", "1", path, tmp_path / "m", tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    expected = ["labels" + "".join(" %d" % v for v in m.get_labels())] + \
        ["%g" % v + "".join(" %g" % p for p in row) for v, row in zip(their_labels, their_p)]
    assert (tmp_path / "out").read_text().splitlines() == expected
    # LIBLINEAR's predict has no notice for them without -b 1
    r = cli("bsvm-predict", path, tmp_path / "m", tmp_path / "plain", cwd=tmp_path)
    assert r.returncode == 0 and "probability" not in r.stderr


def test_liblinear_svm_model_refuses_b1_with_liblinear_hint(tmp_path):
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    X, y = io.read_problem(HEART)
    liblinearutil.save_model(str(tmp_path / "m"), liblinearutil.train(y, X, "-s 2 -q"))
    r = cli("bsvm-predict", "-b", "1", HEART, "m", "out", cwd=tmp_path)
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1
    assert "logistic regression" in r.stderr
    assert not (tmp_path / "out").exists()


def test_train_b1_refuses_liblinear_format(tmp_path):
    r = cli("bsvm-train", "-q", "-s", "dcd", "-b", "1", "--format", "liblinear", HEART, "m",
            cwd=tmp_path)
    assert r.returncode == 2
    assert not (tmp_path / "m").exists()


def test_probability_model_round_trips_through_model_files(tmp_path):
    X, y = io.read_problem(HEART)
    model = probability.train_with_probability(X, y, TrainParams(solver="dcd"))
    model_io.save_model(model, tmp_path / "m")
    again = model_io.load_model(tmp_path / "m")
    np.testing.assert_array_equal(again.prob_a, model.prob_a)
    np.testing.assert_array_equal(again.prob_b, model.prob_b)
    np.testing.assert_array_equal(probability.predict_proba(again, X),
                                  probability.predict_proba(model, X))


def test_no_probability_information_raises():
    X, y = io.read_problem(HEART)
    model = train(X, y, TrainParams(solver="dcd"))
    with pytest.raises(BsvmError, match="no probability information"):
        probability.predict_proba(model, X)


def test_rows_whose_norm_overflows_are_far_from_every_support_vector(tmp_path):
    # |x|^2 of 1e308 values overflows: the RBF distance is then beyond any double, so every
    # kernel value is 0 (as for 1e100 values, whose distance is finite but huge) and the
    # decision value is -rho: finite probabilities, no NaN, no warning.
    X, y = io.read_problem(HEART)
    model = probability.train_with_probability(X, y, TrainParams(solver="bsgd", budget=15))
    far = sp.csr_matrix(np.array([[1e308, 1e308], [1e100, 1e100], [-1e200, 3.0]]),
                        shape=(3, X.shape[1]))
    np.testing.assert_array_equal(model.decision_function(far)[:, 0], -model.rho[0])
    P = probability.predict_proba(model, far)
    assert np.isfinite(P).all() and (P == P[0]).all()
    model_io.save_model(model, tmp_path / "m")
    (tmp_path / "t").write_text("1 1:1e308 2:1e308\n-1 1:1e100 2:1e100\n")
    r = cli("bsvm-predict", "-q", "-b", "1", "t", "m", "out", cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == ""
    assert "nan" not in (tmp_path / "out").read_text()


def test_a_model_with_platt_probabilities_is_not_written_as_liblinear(tmp_path):
    # LIBLINEAR's format has no place for them: save(format="liblinear") wrote the file without
    # them, and the loaded model had no predict_proba (bsvm-train -b 1 --format liblinear is
    # refused before training); an existing file is left as it was
    from budgetsvm.estimators import LinearSVC
    rng = np.random.RandomState(0)
    X = rng.randn(60, 4)
    y = (X[:, 0] > 0).astype(int)
    fitted = LinearSVC(probability=True).fit(X, y)
    path = tmp_path / "m"
    path.write_text("old\n")
    with pytest.raises(ValueError, match="LIBLINEAR model files have no probability"):
        fitted.save(path, format="liblinear")
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    fitted.save(path)
    np.testing.assert_array_equal(LinearSVC.load(path).predict_proba(X), fitted.predict_proba(X))
