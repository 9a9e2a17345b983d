"""Linear dual coordinate descent (budgetsvm/_dcd.pyx, budgetsvm/dcd.py),
docs/ALGORITHMS.md §7.5.

Oracles are independent of our own output: LIBLINEAR (liblinear-official, its printed objective
and its weights), a generic bound-constrained QP solve with scipy, and numpy recomputations of
w, the projected gradients and the objectives from the returned α.
"""
import _thread
import signal
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm import _dcd
from budgetsvm.io import read_problem
from budgetsvm.labels import group_classes
from budgetsvm.dcd import fit_linear, info_lines
from budgetsvm.problem import append_bias_column
from budgetsvm.params import TrainParams
from reference.data import pm1, repo_data, shared_data_path
from reference.objectives import linear_primal, projected_gradient, rel
from reference.peers import liblinear_objectives, liblinear_train, liblinear_weights
from reference.qp import linear_svm_primal

pytest.importorskip("liblinear.liblinearutil")


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------

def with_bias(X, bias):
    return append_bias_column(X, bias) if bias >= 0 else X


def solve(X, y, C, **kw):
    X = sp.csr_matrix(X)
    C_i = np.broadcast_to(np.asarray(C, dtype=np.float64), (X.shape[0],)).copy()
    return _dcd.dcd_solve(X.data, X.indices, X.indptr, y, C_i, X.shape[1], **kw), C_i


@pytest.fixture(scope="module")
def heart():
    return read_problem(repo_data("heart_scale.xz"))


@pytest.fixture(scope="module")
def a9a():
    X, y = read_problem(repo_data("a9a.xz"))
    Xt, yt = read_problem(repo_data("a9a.t.xz"), n_features=X.shape[1])
    return X, y, Xt, yt


def params(**kw):
    return TrainParams(**{"solver": "dcd", **kw})


def binary_accuracy(X, y, w, labels):
    pred = np.where(X @ w > 0, labels[0], labels[1])
    return 100.0 * np.mean(pred == y)


# ---------------------------------------------------------------------------------------------
# 1. LIBLINEAR oracles
# ---------------------------------------------------------------------------------------------

def compare_binary(X, y, C, eps, bias=-1.0, Xt=None, yt=None, extra=""):
    labels, y_index = group_classes(y)
    coef, bias_coef, multiclass, info = fit_linear(
        X, y_index, labels, params(C=C, eps=eps, bias=bias, max_iter=0))
    assert multiclass == "binary" and coef.shape == (1, X.shape[1])
    model, out = liblinear_train(y, X, f"-s 3 -c {C} -e {eps} -B {bias} {extra}")
    assert list(model.get_labels()) == list(labels)
    (objective,) = liblinear_objectives(out)
    Xb = with_bias(X, bias)
    yb = pm1(y, labels[0])
    w_ours = np.append(coef[0], bias_coef[0]) if bias >= 0 else coef[0]
    w_lib = liblinear_weights(model)[0]
    C_i = np.full(X.shape[0], C)
    assert rel(info[0]["primal_objective"], linear_primal(Xb, yb, C_i, w_ours)) < 1e-12
    assert rel(info[0]["primal_objective"], linear_primal(Xb, yb, C_i, w_lib)) < 1e-3
    assert rel(info[0]["dual_objective"], objective) < 1e-3
    assert not info[0]["max_iter_reached"]
    if Xt is not None:
        Xtb = with_bias(Xt, bias)
        ours = binary_accuracy(Xtb, yt, w_ours, labels)
        theirs = binary_accuracy(Xtb, yt, w_lib, labels)
        assert abs(ours - theirs) <= 0.2, (ours, theirs)
    return info, w_ours, w_lib


def test_heart_scale_vs_liblinear(heart):
    X, y = heart
    compare_binary(X, y, C=0.1, eps=0.01)


@pytest.mark.parametrize("C", [0.1, 0.01])
def test_a9a_vs_liblinear(a9a, C):
    X, y, Xt, yt = a9a
    compare_binary(X, y, C=C, eps=0.01, Xt=Xt, yt=yt)


def test_dna_one_vs_rest_vs_liblinear():
    X, y = read_problem(shared_data_path("dna.scale.xz"))
    Xt, yt = read_problem(shared_data_path("dna.scale.t.xz"), n_features=X.shape[1])
    C, eps = 0.1, 0.01
    labels, y_index = group_classes(y)
    coef, bias_coef, multiclass, info = fit_linear(
        X, y_index, labels, params(C=C, eps=eps, max_iter=0))
    assert multiclass == "ovr" and coef.shape == (len(labels), X.shape[1]) == (3, 180)
    model, out = liblinear_train(y, X, f"-s 3 -c {C} -e {eps} -B -1")
    assert list(model.get_labels()) == list(labels)
    objectives = liblinear_objectives(out)
    W_lib = liblinear_weights(model)
    C_i = np.full(X.shape[0], C)
    for r, sub in enumerate(info):       # sub-problem r: class r against the rest
        yr = pm1(y, labels[r])
        assert sub["label"] == labels[r]
        assert rel(sub["primal_objective"], linear_primal(X, yr, C_i, W_lib[r])) < 1e-3
        assert rel(sub["dual_objective"], objectives[r]) < 1e-3
        assert not sub["max_iter_reached"]
    assert rel(sum(s["dual_objective"] for s in info), sum(objectives)) < 1e-3
    ours = 100 * np.mean(labels[np.argmax(Xt @ coef.T, axis=1)] == yt)
    theirs = 100 * np.mean(labels[np.argmax(Xt @ W_lib.T, axis=1)] == yt)
    assert abs(ours - theirs) <= 0.2, (ours, theirs)


def test_class_weights_binary_vs_liblinear(heart):
    # two classes: weight_label0·C for label[0] (+1 here) and weight_label1·C for the other
    X, y = heart
    C, eps = 0.1, 0.01
    labels, y_index = group_classes(y)
    p = params(C=C, eps=eps, max_iter=0, class_weights={1.0: 3.0, -1.0: 0.5})
    coef, _, _, info = fit_linear(X, y_index, labels, p)
    model, out = liblinear_train(y, X, f"-s 3 -c {C} -e {eps} -B -1 -w1 3 -w-1 0.5")
    (objective,) = liblinear_objectives(out)
    C_i = np.where(y == 1, 3.0 * C, 0.5 * C)
    assert rel(info[0]["dual_objective"], objective) < 1e-3
    w_lib = liblinear_weights(model)[0]
    assert rel(info[0]["primal_objective"], linear_primal(X, pm1(y, 1), C_i, w_lib)) < 1e-3


def test_class_weights_one_vs_rest_vs_liblinear():
    # k > 2: class r uses weight_r·C for its own rows and plain C for the rest
    rng = np.random.default_rng(5)
    centers = rng.normal(size=(4, 6))
    y = np.repeat([3.0, 1.0, 7.0, 2.0], 40)
    X = sp.csr_matrix(centers[np.repeat(np.arange(4), 40)] + rng.normal(size=(160, 6)))
    C, eps = 0.1, 0.01
    weights = {1.0: 2.0, 7.0: 0.25}
    labels, y_index = group_classes(y)
    assert list(labels) == [3.0, 1.0, 7.0, 2.0]
    _, _, _, info = fit_linear(X, y_index, labels,
                               params(C=C, eps=eps, max_iter=0, class_weights=weights))
    model, out = liblinear_train(y, X, f"-s 3 -c {C} -e {eps} -B -1 -w1 2 -w7 0.25")
    objectives = liblinear_objectives(out)
    W_lib = liblinear_weights(model)
    for r, label in enumerate(labels):
        yr = pm1(y, label)
        C_i = np.where(y == label, weights.get(label, 1.0) * C, C)
        assert rel(info[r]["dual_objective"], objectives[r]) < 1e-3
        assert rel(info[r]["primal_objective"], linear_primal(X, yr, C_i, W_lib[r])) < 1e-3


def test_unknown_weight_label_warns(heart):
    X, y = heart
    labels, y_index = group_classes(y)
    with pytest.warns(UserWarning, match="class label 5 specified in weight is not found"):
        fit_linear(X, y_index, labels, params(C=0.1, class_weights={5.0: 2.0}))


# ---------------------------------------------------------------------------------------------
# 2. Tiny problems against a generic QP solve
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("core", ["dcd_solve", "acf_solve", "acf_solve:none"])
@pytest.mark.parametrize("loss", ["l1", "l2"])
@pytest.mark.parametrize("n,d", [(10, 14), (40, 3)])
def test_tiny_problem_matches_qp(loss, n, d, core):
    # both linear solvers (baseline and ACF of Glasmachers & Dogan 2013, with and without
    # shrinking) against a generic QP solve
    rng = np.random.default_rng(n * 100 + d)
    X = sp.csr_matrix(rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.7))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    C_i = rng.uniform(0.2, 2.0, size=n)
    name, _, mode = core.partition(":")
    extra = {"shrink": mode} if mode else {}
    res = getattr(_dcd, name)(X.data, X.indices, X.indptr, y, C_i, X.shape[1], eps=1e-8,
                              max_iter=0, loss=loss, **extra)
    w, fun = linear_svm_primal(X, y, C_i, loss)
    assert not res.max_iter_reached
    np.testing.assert_allclose(res.w, w, rtol=0, atol=1e-6 * max(1, np.abs(w).max()))
    assert abs(res.primal_objective - fun) <= 1e-6 * max(1, fun)
    # strong duality: the dual (descent form) is −primal at the optimum
    assert abs(res.dual_objective + fun) <= 1e-6 * max(1, fun)
    if loss == "l2":
        # Q̄ = Q + D is positive definite, so α is unique: α_i = ξ_i / D_ii = 2 C_i ξ_i
        xi = np.maximum(0.0, 1.0 - y * (X @ w))
        np.testing.assert_allclose(res.alpha, 2 * C_i * xi, rtol=0, atol=1e-6 * max(1, res.alpha.max()))
    else:
        assert np.all((res.alpha >= 0) & (res.alpha <= C_i))
    assert rel(res.primal_objective, linear_primal(X, y, C_i, res.w, loss)) < 1e-12


# ---------------------------------------------------------------------------------------------
# 3. Maintained w and the stopping guarantee
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["l1", "l2"])
@pytest.mark.parametrize("eps", [0.1, 0.01, 0.001])
def test_w_and_final_projected_gradient(a9a, loss, eps):
    X, y = a9a[0], a9a[1]
    yb = pm1(y, 1.0)
    res, C_i = solve(X, yb, 0.1, eps=eps, max_iter=0, loss=loss)
    assert not res.max_iter_reached
    # w = X.T @ (alpha * y)
    w = X.T @ (res.alpha * yb)
    assert np.abs(res.w - w).max() <= 1e-10 * np.abs(w).max()
    pg = projected_gradient(X, yb, C_i, res.alpha, res.w, loss)
    assert np.abs(pg).max() <= eps * (1 + 1e-9)
    # the reported objectives are the formulas applied to the returned α and w
    D = 0.5 / C_i if loss == "l2" else 0.0
    dual = 0.5 * w @ w - res.alpha.sum() + 0.5 * np.sum(D * res.alpha ** 2)
    assert rel(res.dual_objective, dual) < 1e-10
    assert rel(res.primal_objective, linear_primal(X, yb, C_i, w, loss)) < 1e-10
    assert res.n_updates > 0 and res.n_iter >= 1


def test_classic_stop_is_looser():
    # one point: the first sweep gives M = m = 1 (PG at α = 0), so the classic spread test
    # M − m ≤ ε passes at once; the strict test needs a second, verifying sweep
    X = sp.csr_matrix(np.array([[2.0]]))
    strict, _ = solve(X, np.array([1.0]), 1.0, eps=0.1, stop="strict")
    classic, _ = solve(X, np.array([1.0]), 1.0, eps=0.1, stop="classic")
    assert (classic.n_iter, strict.n_iter) == (1, 2)
    assert strict.alpha[0] == classic.alpha[0] == 0.25


def test_pg_stop_is_acfs_rule(a9a):
    # stop="pg" (max|PG| < ε, the rule of ACF and of Glasmachers & Dogan's comparison): never later
    # than the strict rule. A fresh numpy sweep of the returned point may exceed ε a little: the
    # last sweep measured each |PG_i| before its own step (the strict rule, which also bounds M − m,
    # leaves more room for that).
    X, y = a9a[0], a9a[1]
    yb = pm1(y, 1.0)
    pg_run, C_i = solve(X, yb, 1.0, eps=0.01, max_iter=0, stop="pg")
    strict, _ = solve(X, yb, 1.0, eps=0.01, max_iter=0, stop="strict")
    assert not pg_run.max_iter_reached and pg_run.n_iter <= strict.n_iter
    pg = projected_gradient(X, yb, C_i, pg_run.alpha, pg_run.w)
    assert np.abs(pg).max() <= 2 * 0.01
    assert rel(pg_run.primal_objective, strict.primal_objective) < 1e-3
    with pytest.raises(ValueError):
        solve(X, yb, 1.0, stop="maxpg")


def test_max_iter_and_counters(a9a):
    X, y = a9a[0], a9a[1]
    res, _ = solve(X, pm1(y, 1.0), 1.0, eps=1e-6, max_iter=3)
    assert res.n_iter == 3 and res.max_iter_reached
    assert 0 < res.n_updates <= 3 * X.shape[0]


# ---------------------------------------------------------------------------------------------
# 4. Shrinking and seeds
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("C", [0.1, 1.0])
def test_shrinking_on_off_same_primal(heart, C):
    X, y = heart
    yb = pm1(y, 1.0)
    on, _ = solve(X, yb, C, eps=1e-3, max_iter=0, shrinking=True)
    off, _ = solve(X, yb, C, eps=1e-3, max_iter=0, shrinking=False)
    assert not on.max_iter_reached and not off.max_iter_reached
    assert rel(on.primal_objective, off.primal_objective) < 1e-4
    assert on.n_unshrink >= 1 and off.n_unshrink == 0


def test_shrinking_on_off_a9a(a9a):
    X, y = a9a[0], a9a[1]
    yb = pm1(y, 1.0)
    on, _ = solve(X, yb, 0.02, eps=1e-3, max_iter=0, shrinking=True)
    off, _ = solve(X, yb, 0.02, eps=1e-3, max_iter=0, shrinking=False)
    assert rel(on.primal_objective, off.primal_objective) < 1e-4


def test_seeds(heart):
    X, y = heart
    yb = pm1(y, 1.0)
    a, _ = solve(X, yb, 1.0, eps=1e-3, max_iter=0, seed=7)
    b, _ = solve(X, yb, 1.0, eps=1e-3, max_iter=0, seed=7)
    c, _ = solve(X, yb, 1.0, eps=1e-3, max_iter=0, seed=8)
    assert a.w.tobytes() == b.w.tobytes() and a.alpha.tobytes() == b.alpha.tobytes()
    assert (a.n_iter, a.n_updates) == (b.n_iter, b.n_updates)
    assert a.w.tobytes() != c.w.tobytes()
    assert rel(a.primal_objective, c.primal_objective) < 1e-4
    # tight tolerance: the optimum itself (w is unique)
    a, _ = solve(X, yb, 1.0, eps=1e-9, max_iter=0, seed=7)
    c, _ = solve(X, yb, 1.0, eps=1e-9, max_iter=0, seed=8)
    np.testing.assert_allclose(a.w, c.w, rtol=0, atol=1e-6)


def test_fit_linear_deterministic(heart):
    X, y = heart
    labels, y_index = group_classes(y)
    one = fit_linear(X, y_index, labels, params(C=1.0, seed=3))
    two = fit_linear(X, y_index, labels, params(C=1.0, seed=3))
    assert one[0].tobytes() == two[0].tobytes()


# ---------------------------------------------------------------------------------------------
# 5. Zero rows and the bias feature
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["l1", "l2"])
def test_zero_rows(heart, loss):
    X, y = heart
    yb = pm1(y, 1.0)
    Z = sp.csr_matrix((3, X.shape[1]))
    Xz = sp.vstack([Z[:2], X, Z[2:]]).tocsr()
    yz = np.concatenate([[1.0, -1.0], yb, [1.0]])
    C = 0.5
    res, C_i = solve(Xz, yz, C, eps=1e-6, max_iter=0, loss=loss)
    ref, _ = solve(X, yb, C, eps=1e-6, max_iter=0, loss=loss)
    zero = [0, 1, len(yz) - 1]
    # L1: α = C (set once, never visited); L2: the optimum of ½ D α² − α is 1/D = 2C
    expected = C if loss == "l1" else 2 * C
    np.testing.assert_allclose(res.alpha[zero], expected, rtol=1e-6)
    np.testing.assert_allclose(res.w, ref.w, rtol=0, atol=1e-5)
    # each zero row adds C·1 (L1) or C·1² (L2) to the primal and −C (L1) / −C (L2) to the dual
    assert abs(res.primal_objective - ref.primal_objective - 3 * C) < 1e-4
    assert abs(res.dual_objective - ref.dual_objective + 3 * C) < 1e-4
    pg = projected_gradient(Xz, yz, C_i, res.alpha, res.w, loss)
    assert np.abs(pg).max() <= 1e-6 * (1 + 1e-9)


def test_all_zero_problem():
    X = sp.csr_matrix((4, 3))
    res, _ = solve(X, np.array([1.0, -1.0, 1.0, 1.0]), 2.0)
    assert res.n_iter == 1 and not res.max_iter_reached and res.n_updates == 0
    np.testing.assert_array_equal(res.alpha, 2.0)
    np.testing.assert_array_equal(res.w, 0.0)
    assert res.primal_objective == 8.0 and res.dual_objective == -8.0


def test_bias_vs_liblinear(heart, a9a):
    X, y = heart
    info, w_ours, w_lib = compare_binary(X, y, C=0.1, eps=0.01, bias=1.0)
    assert w_ours.shape == (X.shape[1] + 1,)
    assert abs(w_ours[-1] - w_lib[-1]) < 0.05 * max(1.0, abs(w_lib[-1]))
    X, y, Xt, yt = a9a
    compare_binary(X, y, C=0.1, eps=0.01, bias=1.0, Xt=Xt, yt=yt)


def test_append_bias_column():
    X = sp.csr_matrix(np.array([[0, 2.0, 0], [0, 0, 0], [1.0, 0, 3.0]]))
    B = append_bias_column(X, 0.5)
    np.testing.assert_array_equal(B.toarray(), np.hstack([X.toarray(), np.full((3, 1), 0.5)]))


# ---------------------------------------------------------------------------------------------
# Interface: callback, Ctrl-C, validation, LinearModel
# ---------------------------------------------------------------------------------------------

def test_callback_once_per_iteration(heart):
    X, y = heart
    calls = []
    res, _ = solve(X, pm1(y, 1.0), 1.0, eps=0.01, callback=lambda it, gap: calls.append((it, gap)))
    assert [c[0] for c in calls] == list(range(1, res.n_iter + 1))
    assert calls[-1][1] <= 0.01


def test_callback_exception_stops(heart):
    X, y = heart

    def stop(it, gap):
        if it == 2:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        solve(X, pm1(y, 1.0), 1.0, eps=1e-9, callback=stop)


@pytest.mark.parametrize("core", ["dcd_solve", "acf_solve"])
def test_ctrl_c_stops_within_a_second(a9a, core):
    X, y = sp.csr_matrix(a9a[0]), pm1(a9a[1], 1.0)
    C_i = np.full(X.shape[0], 100.0)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    # interrupt_main does nothing while SIGINT is ignored (as in a background job of a script)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            # far from converging in 0.3 s: C = 100, ε = 1e-12, no iteration limit
            getattr(_dcd, core)(X.data, X.indices, X.indptr, y, C_i, X.shape[1], eps=1e-12,
                                max_iter=0)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.perf_counter() - start < 1.3


def test_input_validation():
    X = sp.csr_matrix(np.eye(3))
    y = np.array([1.0, -1.0, 1.0])
    with pytest.raises(ValueError):
        _dcd.dcd_solve(X.data, X.indices, X.indptr, y, np.ones(3), 2)        # index ≥ n_features
    with pytest.raises(ValueError):
        _dcd.dcd_solve(X.data, X.indices, X.indptr, y[:2], np.ones(3), 3)
    with pytest.raises(ValueError):
        _dcd.dcd_solve(X.data, X.indices, X.indptr, y, np.zeros(3), 3)       # C_i must be > 0
    with pytest.raises(ValueError):
        _dcd.dcd_solve(X.data, X.indices, X.indptr, y, np.ones(3), 3, stop="other")
    # int8 labels and int32 indptr are accepted
    res = _dcd.dcd_solve(X.data, X.indices, X.indptr.astype(np.int32), y.astype(np.int8),
                         np.ones(3), 3)
    np.testing.assert_allclose(res.w, [1.0, -1.0, 1.0])


def test_train_linear_returns_model(heart):
    pytest.importorskip("budgetsvm.model", reason="budgetsvm.model (LinearModel) not written yet")
    from budgetsvm.dcd import train_linear
    X, y = heart
    labels, y_index = group_classes(y)
    p = params(C=0.1, eps=0.01, bias=1.0)
    model = train_linear(X, y_index, labels, p)
    coef, bias_coef, _, info = fit_linear(X, y_index, labels, p)
    np.testing.assert_array_equal(model.coef, coef)
    np.testing.assert_array_equal(model.bias_coef, bias_coef)
    assert model.train_info == [dict(i, seconds=model.train_info[0]["seconds"]) for i in info]
    assert info_lines(model.train_info)[0].startswith("optimization finished, #iter = ")
    assert model.params["eps"] == 0.01 and model.params["solver"] == "dcd"
    assert model.params["n_iter"] == str(info[0]["n_iter"])
    np.testing.assert_array_equal(model.predict(X), np.where(X @ coef[0] + bias_coef[0] > 0,
                                                             labels[0], labels[1]))
