"""The refit of a budgeted model on its own support vectors (budgetsvm/refit.py, the default
--polish of bsgd and bsca).

Oracles: the kernel block against numpy's kernel matrices; the finite Newton method against a
generic quasi-Newton solve (scipy's L-BFGS-B) of the same problem, and of the reduced kernel
problem in the coefficients β directly (which checks the change of variables β = T w); the
optimality conditions written out in numpy; whole models against independent solves per
decision column; `--polish none` against the solver core's own output; the choice between the
solver's model and the refit against the errors each makes on the training rows (the model's
own predictions) and a generic solve of the refit.
"""
import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm import bsca as bsca_module
from budgetsvm import bsgd as bsgd_module
from budgetsvm import io, refit
from budgetsvm.bsca import train_bsca
from budgetsvm.bsgd import fit_bsgd, train_bsgd
from budgetsvm.problem import class_weights
from budgetsvm.labels import group_classes
from budgetsvm.model import KernelModel, KernelSpec
from budgetsvm.params import TrainParams
from reference.data import random_csr
from reference.kernels import kernel_entrywise
from reference.qp import reduced_objective, reduced_refit

DATA = Path(__file__).resolve().parent.parent / "data"
BIN = Path(sys.executable).parent


def problem(seed=0, n=80, d=5, n_sv=12, gamma=0.4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    S = X[rng.choice(n, n_sv, replace=False)] + 0.1 * rng.normal(size=(n_sv, d))
    kernel = KernelSpec("rbf", gamma)
    cost = np.where(y > 0, 2.0, 0.7)
    return kernel, sp.csr_matrix(X), sp.csr_matrix(S), y, cost


@pytest.mark.parametrize("kind", ["rbf", "linear", "poly", "sigmoid"])
@pytest.mark.parametrize("n_rows", [40, 5000])         # one block and several
@pytest.mark.parametrize("small_pages_bytes", [refit.SMALL_PAGES_BYTES, 0])   # np.empty or mmap
def test_kernel_block_equals_the_definition(kind, n_rows, small_pages_bytes, monkeypatch):
    monkeypatch.setattr(refit, "SMALL_PAGES_BYTES", small_pages_bytes)
    rng = np.random.default_rng(1)
    X = random_csr(rng, n_rows, 9, 0.4, values="uniform")
    S = random_csr(rng, 7, 9, 0.6, values="uniform")
    kernel = KernelSpec(kind, gamma=0.3, degree=3, coef0=0.5)
    rows = np.r_[0:40, n_rows - 40:n_rows]
    np.testing.assert_allclose(refit.kernel_block(kernel, S, X)[rows],
                               kernel_entrywise(kind, X[rows], S), rtol=1e-11, atol=1e-13)


def test_fused_rbf_values_are_within_4_ulp_of_numpys_exp():
    """rbf_from_dots (the refit's RBF block in one pass, vectorised exp) against numpy's exp of
    the same clamped distances: distances from 0 to beyond exp's underflow, and dot products
    whose rounding makes the distance negative (clamped to 0: k = 1)."""
    from budgetsvm._kernel_block import rbf_from_dots
    rng = np.random.default_rng(5)
    row_sq, col_sq = rng.uniform(0, 40, 300), rng.uniform(0, 40, 70)
    dots = rng.uniform(-40, 40, (300, 70))
    dots[:, :3] = (row_sq[:, None] + col_sq[None, :3]) / 2 * (1 + 1e-15)   # d² ≤ 0 by rounding
    for gamma in [1e-3, 0.5, 9.0, 40.0]:
        d2 = np.maximum(row_sq[:, None] + col_sq[None, :] - 2 * dots, 0.0)
        expected = np.exp(-gamma * d2)
        block = dots.copy()
        rbf_from_dots(block, row_sq, col_sq, gamma)
        assert np.all(block[:, :3] == 1.0)
        # below −708 exp is within 4e-308 of 0, and exp_inplace gives 0 (_kernels.pxd)
        normal = -gamma * d2 >= -708.0
        assert np.all(np.abs(block - expected)[normal] <= 4 * np.spacing(expected[normal]))
        assert np.all(block[~normal] == 0.0) and np.all(expected[~normal] < 4e-308)


def test_kernel_block_of_narrower_rows_pads_them_with_zeros():
    rng = np.random.default_rng(2)
    S = random_csr(rng, 5, 8, 0.7, values="uniform")
    X = random_csr(rng, 6, 6, 0.7, values="uniform")
    kernel = KernelSpec("rbf", 0.3)
    np.testing.assert_allclose(refit.kernel_block(kernel, S, X), kernel_entrywise("rbf", X, S),
                               rtol=1e-12)


def test_landmark_basis_whitens_the_kernel_matrix():
    kernel, X, S, _, _ = problem()
    K_SS = refit.kernel_block(kernel, S, S)
    T, T_pinv = refit.landmark_basis(K_SS)
    np.testing.assert_allclose(T.T @ K_SS @ T, np.eye(T.shape[1]), atol=1e-9)
    beta = np.random.default_rng(3).normal(size=K_SS.shape[0])
    # T T⁺ projects onto the kept eigenvectors: the function Σ β_j k(·, s_j) is unchanged
    np.testing.assert_allclose(K_SS @ (T @ (T_pinv @ beta)), K_SS @ beta, rtol=1e-8, atol=1e-8)


def test_landmark_basis_drops_duplicate_support_vectors():
    kernel, X, S, _, _ = problem()
    S2 = sp.vstack([S, S[:3]]).tocsr()        # three exact duplicates: rank stays 12
    T, _ = refit.landmark_basis(refit.kernel_block(kernel, S2, S2))
    assert T.shape == (15, 12)


UPDATE_WAYS = {"cheaper": None, "kernel rows": lambda *_: True, "features": lambda *_: False}


@pytest.mark.parametrize("update_rows", [refit.UPDATE_ROWS, 7])
@pytest.mark.parametrize("way", UPDATE_WAYS)
def test_active_sums_equal_the_sums_over_the_active_set(way, update_rows, monkeypatch):
    """The sums kept up to date move by move (rows entering and leaving, sums afresh) against
    numpy's sums over each active set, whichever way M is updated, and whether the moved rows
    are gathered in one chunk or in chunks of 7 (with a last partial one)."""
    if UPDATE_WAYS[way] is not None:
        monkeypatch.setattr(refit, "_update_in_kernel_space", UPDATE_WAYS[way])
    monkeypatch.setattr(refit, "UPDATE_ROWS", update_rows)
    rng = np.random.default_rng(4)
    n, n_sv, r = 300, 12, 9                  # r < B, as when eigenvalues are dropped
    K, T = rng.random((n, n_sv)), rng.normal(size=(n_sv, r))
    y, cost = np.where(rng.random(n) < 0.4, 1.0, -1.0), rng.uniform(0.5, 3.0, n)
    sums = refit._ActiveSums(K, T, cost, y)
    active = np.zeros(n, dtype=bool)
    for flips in [250, 3, 40, 0, 120, 1, 299, 7]:      # the cheaper way changes with the size
        active = active.copy()
        active[rng.choice(n, flips, replace=False)] ^= True
        sums.move_to(active)
        Z, c = K[active] @ T, cost[active]
        np.testing.assert_allclose(sums.full_M(), (Z * c[:, None]).T @ Z, rtol=1e-10,
                                   atol=1e-10)
        np.testing.assert_allclose(sums.m, c @ Z, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(sums.q, (c * y[active]) @ Z, rtol=1e-10, atol=1e-10)
        assert sums.s == pytest.approx(c.sum(), rel=1e-12, abs=1e-12)
        assert sums.sy == pytest.approx((c * y[active]).sum(), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 64])
def test_mirror_upper_gives_the_symmetric_matrix_of_the_upper_triangle(n):
    """mirror_upper against numpy's triu(a) + triu(a, 1).T, bit for bit: the lower triangle is
    overwritten from the upper one, which keeps its bits (the last bits of a refit's M may be
    asymmetric where a product added to it is)."""
    from budgetsvm._kernel_block import mirror_upper
    a = np.asfortranarray(np.random.default_rng(n).normal(size=(n, n)))
    upper = np.triu(a)
    expected = upper + np.triu(upper, 1).T
    mirror_upper(a)
    np.testing.assert_array_equal(a, expected)
    np.testing.assert_array_equal(np.triu(a), upper)


def test_mirror_upper_refuses_what_it_cannot_mirror():
    from budgetsvm._kernel_block import mirror_upper
    with pytest.raises(ValueError, match="not square"):
        mirror_upper(np.zeros((3, 2), order="F"))
    with pytest.raises(ValueError):                    # C order: not the Fortran layout of M
        mirror_upper(np.zeros((3, 3)))


def test_cheaper_update_takes_kernel_rows_for_large_moves():
    # ijcnn1 at B = 500 keeps r = 500: 375,000 multiply-adds per row mapped by T first, against
    # 125,000 per kernel row plus 2·500³ to map their sum
    assert refit._update_in_kernel_space(1001, 500, 500)
    assert not refit._update_in_kernel_space(999, 500, 500)


@pytest.mark.parametrize("way", UPDATE_WAYS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_newton_equals_generic_solver_of_the_reduced_problem(seed, way, monkeypatch):
    if UPDATE_WAYS[way] is not None:
        monkeypatch.setattr(refit, "_update_in_kernel_space", UPDATE_WAYS[way])
    kernel, X, S, y, cost = problem(seed)
    K = refit.kernel_block(kernel, S, X)
    K_SS = refit.kernel_block(kernel, S, S)
    T, _ = refit.landmark_basis(K_SS)
    w, b, info = refit.newton_refit(K, T, y, cost)
    assert info["converged"]
    beta_ref, b_ref, value_ref = reduced_refit(K, K_SS, y, cost)
    value, _ = reduced_objective(np.append(T @ w, b), K, K_SS, y, cost)
    assert value <= value_ref * (1 + 1e-9)
    assert value == pytest.approx(value_ref, rel=1e-7)
    # the optimum is unique in function space: decision values agree
    np.testing.assert_allclose(K @ (T @ w) + b, K @ beta_ref + b_ref, atol=1e-4)


def test_newton_without_bias_equals_generic_solver_with_b_fixed():
    kernel, X, S, y, cost = problem(3)
    K = refit.kernel_block(kernel, S, X)
    K_SS = refit.kernel_block(kernel, S, S)
    T, _ = refit.landmark_basis(K_SS)
    w, b, info = refit.newton_refit(K, T, y, cost, fit_bias=False)
    assert info["converged"] and b == 0.0
    beta_ref, b_ref, value_ref = reduced_refit(K, K_SS, y, cost, bias=False)
    assert b_ref == 0.0
    value, _ = reduced_objective(np.append(T @ w, 0.0), K, K_SS, y, cost)
    assert value == pytest.approx(value_ref, rel=1e-7)
    np.testing.assert_allclose(K @ (T @ w), K @ beta_ref, atol=1e-4)


@pytest.mark.parametrize("start", ["zero", "random", "far"])
def test_newton_optimality_conditions_hold_from_any_start(start):
    kernel, X, S, y, cost = problem(4, n=120, n_sv=20)
    K = refit.kernel_block(kernel, S, X)
    T, _ = refit.landmark_basis(refit.kernel_block(kernel, S, S))
    r = T.shape[1]
    rng = np.random.default_rng(5)
    w0, b0 = {"zero": (None, 0.0), "random": (rng.normal(size=r), 0.3),
              "far": (100.0 * rng.normal(size=r), -50.0)}[start]
    w, b, info = refit.newton_refit(K, T, y, cost, w0, b0)
    assert info["converged"]
    # gradient of ½‖w‖² + Σ c ξ², written out: w − 2 Zᵀ(c y ξ) and −2 Σ c y ξ
    Z = K @ T
    xi = np.maximum(1.0 - y * (Z @ w + b), 0.0)
    g_w = w - 2.0 * Z.T @ (cost * y * xi)
    g_b = -2.0 * np.sum(cost * y * xi)
    scale = 1.0 + np.abs(2.0 * Z.T @ (cost * y * xi)).max()
    assert np.abs(g_w).max() <= 1e-9 * scale
    assert abs(g_b) <= 1e-9 * (1.0 + 2.0 * np.sum(cost * xi))


def test_newton_never_ends_above_its_starting_objective_on_ill_scaled_problems():
    # Property: every Newton step is accepted by the Armijo test or not taken, so the returned
    # objective is at most the starting point's, and it is the objective of the returned (w, b).
    # Kernel blocks and bases scaled over 16 and 8 decades with costs up to 1e14 make the line
    # search fail near the optimum; before, the last halving (t < 1e-10) was taken untested and
    # raised the objective (in 2 of these 400 problems on the machine this was written on).
    rng = np.random.default_rng(1)
    for _ in range(400):
        n, n_sv = int(rng.integers(5, 300)), int(rng.integers(1, 30))
        K = rng.standard_normal((n, n_sv)) * 10.0 ** rng.uniform(-8, 8)
        T = np.linalg.qr(rng.standard_normal((n_sv, n_sv)))[0] * 10.0 ** rng.uniform(-4, 4)
        y = np.where(rng.standard_normal(n) > 0, 1.0, -1.0)
        cost = np.full(n, 10.0 ** rng.uniform(-6, 14))
        w, b, _ = refit.newton_refit(K, T, y, cost)
        # restart just off the optimum, where the search can fail
        w0 = w * (1.0 + 1e-9)
        start = refit._objective(w0, 1.0 - y * (K @ (T @ w0) + b), cost)
        w1, b1, info = refit.newton_refit(K, T, y, cost, w0, b)
        assert info["objective"] <= start
        # (the method updates ξ by its steps, so the value recomputed from (w, b) may differ
        # in the last bits)
        recomputed = refit._objective(w1, 1.0 - y * (K @ (T @ w1) + b1), cost)
        assert info["objective"] == pytest.approx(recomputed, rel=1e-9)


def test_newton_with_one_class_finds_the_constant_model():
    # closed form: with every y_i = +1 the optimum is w = 0, b = 1 (every margin exactly met)
    kernel, X, S, _, _ = problem(6)
    y = np.ones(X.shape[0])
    K = refit.kernel_block(kernel, S, X)
    T, _ = refit.landmark_basis(refit.kernel_block(kernel, S, S))
    w, b, info = refit.newton_refit(K, T, y, np.ones_like(y))
    assert info["converged"]
    np.testing.assert_allclose(w, 0.0, atol=1e-9)
    assert b == pytest.approx(1.0, abs=1e-9)


def heart_scale():
    X, y = io.read_problem(str(DATA / "heart_scale.xz"))
    return sp.csr_matrix(X), y


def independent_refit(model, X, y_index, cost, column, sv_rows):
    """Decision values on X of the reduced problem for one column, solved generically."""
    S = model.sv[sv_rows]
    K = model.kernel.kernel_matrix(X, S)
    K_SS = model.kernel.kernel_matrix(S, S)
    positive = column if model.coef.shape[1] > 1 else 0
    y = np.where(y_index == positive, 1.0, -1.0)
    beta, b, _ = reduced_refit(K, K_SS, y, cost)
    return K @ beta + b


def test_binary_bsgd_model_is_the_refit_of_its_support_vectors():
    X, y = heart_scale()
    labels, y_index = group_classes(y)
    params = TrainParams(solver="bsgd", C=2.0, gamma=0.1, budget=25, epochs=2, seed=3,
                         class_weights={-1.0: 1.5})
    model = train_bsgd(X, y_index, labels, params)
    assert model.params["polish"] == "refit" and model.rho[0] != 0.0
    cost = params.C * class_weights(labels, params)[y_index]
    expected = independent_refit(model, X, y_index, cost, 0, np.arange(model.n_sv))
    np.testing.assert_allclose(model.decision_function(X)[:, 0], expected, atol=1e-4)


@pytest.mark.parametrize("partners", ["label", "sign"])
def test_multiclass_bsca_refits_each_one_vs_rest_model_on_its_own_vectors(partners):
    rng = np.random.default_rng(7)
    centers = rng.normal(scale=2.0, size=(3, 4))
    y = np.repeat([1.0, 2.0, 3.0], 40)
    X = sp.csr_matrix(centers[(y - 1).astype(int)] + rng.normal(size=(120, 4)))
    labels, y_index = group_classes(y)
    params = TrainParams(solver="bsca", C=4.0, gamma=0.3, budget=15, epochs=2, seed=2,
                         merge_partners=partners)
    model = train_bsca(X, y_index, labels, params)
    # every class model took its refit (none kept the solver's coefficients, which classify
    # the training rows better in some settings: refit_model's keep_better_solver)
    assert model.train_info["refit_kept_solver"] == 0
    cost = np.full(len(y), params.C)
    for c in range(3):
        own = model.train_info["sv_rows"][c]            # model c's SVs, in its order
        assert len(own) == model.train_info["per_model"][c]["n_sv"]
        others = np.setdiff1d(np.arange(model.n_sv), own)
        assert np.all(model.coef[others, c] == 0.0)
        K = model.kernel.kernel_matrix(X, model.sv[own])
        f = K @ model.coef[own, c] - model.rho[c]
        np.testing.assert_allclose(f, independent_refit(model, X, y_index, cost, c, own),
                                   atol=1e-4)


def test_multiclass_bsgd_refits_one_vs_rest_on_the_shared_vectors():
    rng = np.random.default_rng(8)
    centers = rng.normal(scale=2.0, size=(3, 4))
    y = np.repeat([5.0, 6.0, 7.0], 30)
    X = sp.csr_matrix(centers[(y - 5).astype(int)] + rng.normal(size=(90, 4)))
    labels, y_index = group_classes(y)
    params = TrainParams(solver="bsgd", C=1.0, gamma=0.3, budget=12, epochs=2, seed=2)
    model = train_bsgd(X, y_index, labels, params)
    F = model.decision_function(X)
    for c in range(3):
        expected = independent_refit(model, X, y_index, np.full(len(y), 1.0), c,
                                     np.arange(model.n_sv))
        np.testing.assert_allclose(F[:, c], expected, atol=1e-4)


def test_polish_none_is_the_solver_output_untouched():
    X, y = heart_scale()
    labels, y_index = group_classes(y)
    params = TrainParams(solver="bsgd", C=4.0, budget=30, epochs=2, seed=5, polish="none")
    model = train_bsgd(X, y_index, labels, params)
    sv, coef, _, _ = fit_bsgd(X, y_index, 2, params,
                              class_weight=class_weights(labels, params))
    np.testing.assert_array_equal(model.coef, coef)
    np.testing.assert_array_equal(model.sv.toarray(), sv)
    assert np.all(model.rho == 0.0) and "polish" not in model.params


def test_refit_rows_sample_is_seeded_uniform_and_sorted(monkeypatch):
    assert refit.refit_rows(1000, 10, seed=1) is None
    monkeypatch.setattr(refit, "MAX_BLOCK_BYTES", 8 * 10 * 100)      # 100 rows of 10 SVs
    rows = refit.refit_rows(1000, 10, seed=1)
    assert rows.size == 100 and np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(rows, refit.refit_rows(1000, 10, seed=1))
    assert not np.array_equal(rows, refit.refit_rows(1000, 10, seed=2))
    # uniform: over many seeds every tenth of the rows gets about a tenth of the sample
    counts = np.zeros(10)
    for seed in range(200):
        counts += np.bincount(refit.refit_rows(1000, 10, seed) // 100, minlength=10)
    assert np.all(np.abs(counts / counts.sum() - 0.1) < 0.015)


def test_refit_on_a_sample_solves_the_sampled_problem(monkeypatch):
    X, y = heart_scale()
    labels, y_index = group_classes(y)
    monkeypatch.setattr(refit, "MAX_BLOCK_BYTES", 8 * 20 * 150)      # 150 of the 270 rows
    params = TrainParams(solver="bsgd", C=1.0, budget=20, epochs=1, seed=4)
    model = train_bsgd(X, y_index, labels, params)
    assert model.train_info["refit_rows"] == 150
    rows = refit.refit_rows(X.shape[0], model.n_sv, 4)
    expected = independent_refit(model, X[rows], y_index[rows], np.full(150, 1.0), 0,
                                 np.arange(model.n_sv))
    np.testing.assert_allclose(model.decision_function(X[rows])[:, 0], expected, atol=1e-4)


@pytest.mark.parametrize("multiclass", ["binary", "argmax"])
def test_training_errors_count_the_rows_the_model_predicts_wrongly(multiclass):
    rng = np.random.default_rng(11)
    n_cols = 1 if multiclass == "binary" else 4
    labels = np.array([3.0, -1.0]) if n_cols == 1 else np.array([2.0, 5.0, 7.0, 9.0])
    X = sp.csr_matrix(rng.normal(size=(300, 3)))
    model = KernelModel(labels, KernelSpec("rbf", 0.5), sp.csr_matrix(rng.normal(size=(8, 3))),
                        rng.normal(size=(8, n_cols)), rng.normal(size=n_cols), multiclass,
                        "bsgd")
    y_index = rng.integers(0, len(labels), 300)
    F = model.decision_function(X)
    wrong = np.count_nonzero(model.predict(X) != labels[y_index])
    assert refit.training_errors(F, y_index) == wrong
    weights = rng.uniform(0.1, 5.0, 300)         # with weights: the sum over the wrong rows
    assert refit.training_errors(F, y_index, weights) == pytest.approx(
        weights[model.predict(X) != labels[y_index]].sum(), rel=1e-12)
    assert refit._group_errors(F, y_index, list(range(n_cols)), n_cols) == wrong
    if n_cols > 1:                  # a one-vs-rest group: class c against the rest
        for c in range(n_cols):
            wrong_c = np.count_nonzero((F[:, c] > 0) != (y_index == c))
            assert refit._group_errors(F[:, [c]], y_index, [c], n_cols) == wrong_c


def outliers_on_the_positive_side():
    """1-d rows: 100 positives in (0, 1], 100 negatives in [-1, 0) and 10 negatives at x = 20.
    f(x) = x errs on the 10 outliers only; the squared hinge pays (1 + 20w + b)² for each of
    them, which flattens its minimiser."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(0.05, 1, 100), rng.uniform(-1, -0.05, 100), np.full(10, 20.0)])
    y_index = np.repeat([0, 1], [100, 110])                 # label[0] = +1
    return sp.csr_matrix(x[:, None]), y_index


@pytest.mark.parametrize("keep_better_solver", [True, False])
def test_the_solver_model_is_kept_when_it_classifies_the_training_rows_better(
        keep_better_solver):
    X, y_index = outliers_on_the_positive_side()
    model = KernelModel([1.0, -1.0], KernelSpec("linear"), sp.csr_matrix([[1.0]]),
                        np.array([[1.0]]), np.zeros(1), "binary", "bsgd")
    solver_errors = refit.training_errors(model.decision_function(X), y_index)
    refit_values = independent_refit(model, X, y_index, np.ones(210), 0, [0])
    refit_errors = np.count_nonzero((refit_values > 0) != (y_index == 0))
    assert solver_errors == 10 and refit_errors > solver_errors
    info = refit.refit_model(model, X, y_index, np.ones(2), seed=1,
                             keep_better_solver=keep_better_solver)
    assert info["refit_kept_solver"] == int(keep_better_solver)
    if keep_better_solver:                      # the solver's model, untouched
        assert model.coef.tolist() == [[1.0]] and model.rho.tolist() == [0.0]
    else:                                       # the refit: the generic solve's values
        np.testing.assert_allclose(model.decision_function(X)[:, 0], refit_values,
                                   atol=1e-6)


def keep_solver_models(monkeypatch, solver_module):
    """The list into which the real polish of solver_module's training puts a copy of each
    model it receives (the solver's own, before the refit)."""
    solver_models = []

    def polish_a_copy_kept(model, *args, **kwargs):
        solver_models.append(copy.deepcopy(model))
        return refit.polish_model(model, *args, **kwargs)
    monkeypatch.setattr(solver_module, "polish_model", polish_a_copy_kept)
    return solver_models


def test_class_costs_weigh_the_errors_that_decide():
    # negatives at cost 100: f = x errs on the 10 outlying negatives (weight 1,000); the refit
    # errs on more rows, but on positives (cost 1 each), so the refit stays
    X, y_index = outliers_on_the_positive_side()
    cost = np.array([1.0, 100.0])[y_index]
    model = KernelModel([1.0, -1.0], KernelSpec("linear"), sp.csr_matrix([[1.0]]),
                        np.array([[1.0]]), np.zeros(1), "binary", "bsgd")
    refit_values = independent_refit(model, X, y_index, cost, 0, [0])
    refit_wrong = (refit_values > 0) != (y_index == 0)
    assert refit_wrong.sum() > 10 and cost[refit_wrong].sum() < 10 * 100.0
    info = refit.refit_model(model, X, y_index, np.array([1.0, 100.0]), seed=1)
    assert info["refit_kept_solver"] == 0
    np.testing.assert_allclose(model.decision_function(X)[:, 0], refit_values, atol=1e-6)


def noisy_blobs(n_classes, seed=0):
    """Overlapping Gaussian blobs (sd 20 around centres in [-10, 10]²), 50 rows per class: at
    γ = 0.5 every kernel value between two rows is nearly 0, so a solver below its budget
    fits every training row through its own coefficient."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10, 10, size=(n_classes, 2))
    y = np.repeat(np.arange(n_classes, dtype=np.float64), 50)
    return sp.csr_matrix(centres[y.astype(int)] + rng.normal(scale=20.0, size=(y.size, 2))), y


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_a_model_below_its_budget_is_the_refit_whatever_its_training_errors(solver,
                                                                          monkeypatch):
    # class 0 at cost 1,000, class 1 at 1e-4: the refit moves its offset towards class 0 and
    # errs on class 1's rows; the solver, below its budget, has a coefficient on nearly every
    # row and fewer (weighted) training errors, yet the refit, the weighted problem's
    # solution, stays
    X, y = noisy_blobs(2)
    labels, y_index = group_classes(y)
    solver_models = keep_solver_models(monkeypatch, bsca_module if solver == "bsca" else
                                       bsgd_module)
    params = TrainParams(solver=solver, C=1.0, gamma=0.5, budget=500, seed=1,
                         class_weights={0.0: 1000.0, 1.0: 1e-4})
    model = (train_bsca if solver == "bsca" else train_bsgd)(X, y_index, labels, params)
    assert model.train_info["n_maintenance"] == 0
    assert model.train_info["refit_kept_solver"] == 0
    cost = params.C * class_weights(labels, params)[y_index]
    # the refit's optimality: a zero gradient of the convex reduced problem, and a value no
    # worse than a generic solver's (L-BFGS stops early here, with costs from 1e-4 to 1,000)
    K_xS = model.kernel.kernel_matrix(X, model.sv)
    K_SS = model.kernel.kernel_matrix(model.sv, model.sv)
    signs = np.where(y_index == 0, 1.0, -1.0)
    value, gradient = reduced_objective(np.append(model.coef[:, 0], -model.rho[0]), K_xS, K_SS,
                                        signs, cost)
    assert np.abs(gradient).max() < 1e-8
    assert value <= reduced_refit(K_xS, K_SS, signs, cost)[2] + 1e-12
    # the solver's model would have won on weighted training errors alone
    solver = solver_models[0]
    assert refit.training_errors(solver.decision_function(X), y_index, cost) < \
        refit.training_errors(model.decision_function(X), y_index, cost)
    assert refit.budget_was_full(model.train_info) == [False]


def test_default_training_keeps_the_better_of_the_solver_and_the_refit_on_skin(
        shared_data, monkeypatch):
    # skin_nonskin at B = 100 (bsca, seed 1): the squared-hinge refit on the 100 support
    # vectors classifies fewer training rows correctly than bsca's own coefficients.
    X, y = io.read_problem(shared_data("skin_nonskin.xz"))
    labels, y_index = group_classes(y)
    solver_models = keep_solver_models(monkeypatch, bsca_module)
    params = TrainParams(solver="bsca", C=32.0, gamma=2 ** -7, budget=100, seed=1)
    polished = train_bsca(X, y_index, labels, params)
    solver = solver_models[0]
    assert polished.train_info["refit_kept_solver"] == 1
    np.testing.assert_array_equal(polished.sv.toarray(), solver.sv.toarray())
    np.testing.assert_array_equal(polished.coef, solver.coef)
    np.testing.assert_array_equal(polished.rho, solver.rho)
    refitted = copy.deepcopy(solver)
    refit.refit_model(refitted, X, y_index, np.full(2, 32.0), seed=1, keep_better_solver=False)
    errors = [refit.training_errors(m.decision_function(X), y_index)
              for m in (polished, refitted)]
    assert errors[0] < errors[1]


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_budget_of_one_beats_the_majority_class(tmp_path, solver):
    # papers' mode: a single support vector without a bias predicts 44.4% on heart_scale
    model = tmp_path / "m"
    out = tmp_path / "p"
    data = str(DATA / "heart_scale.xz")
    subprocess.run([str(BIN / "bsvm-train"), "-q", "-s", solver, "--budget", "1", data,
                    str(model)], check=True, timeout=120)
    result = subprocess.run([str(BIN / "bsvm-predict"), data, str(model), str(out)],
                            capture_output=True, text=True, timeout=120, check=True)
    _, y = heart_scale()
    predicted = np.loadtxt(out)
    majority = max(np.mean(y == 1), np.mean(y == -1))
    assert np.mean(predicted == y) >= majority
    assert "Accuracy" in result.stdout + result.stderr


def test_exported_refit_model_gives_libsvm_the_same_decision_values(tmp_path):
    svmutil = pytest.importorskip("libsvm.svmutil")
    X, y = heart_scale()
    labels, y_index = group_classes(y)
    model = train_bsgd(X, y_index, labels, TrainParams(solver="bsgd", C=8.0, budget=40))
    from budgetsvm.model_io import save_model
    path = tmp_path / "m.libsvm"
    save_model(model, str(path), format="libsvm")
    theirs = svmutil.svm_load_model(str(path))
    rows = [{int(j) + 1: float(v) for j, v in zip(X[i].indices, X[i].data)}
            for i in range(X.shape[0])]
    _, _, values = svmutil.svm_predict(list(y), rows, theirs, "-q")
    ours = model.decision_function(X)[:, 0]
    # LIBSVM's first label is the model's label[0], so the signs agree
    np.testing.assert_allclose(np.asarray(values)[:, 0], ours, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_best_offset_equals_a_brute_force_search(seed):
    rng = np.random.default_rng(seed)
    n = 50
    f = rng.normal(scale=2.0, size=n) + (3.0 if seed % 2 else 0.0)
    y = np.where(rng.random(n) < 0.3 + 0.1 * seed, 1.0, -1.0)
    cost = rng.uniform(0.5, 2.0, size=n)

    def phi(b):
        return float(cost @ np.maximum(0.0, 1.0 - y * (f + b)) ** 2)

    b = refit.best_offset(f, y, cost)
    grid = np.linspace(-15, 15, 300001)
    values = [phi(v) for v in grid[::100]]
    coarse = grid[::100][int(np.argmin(values))]
    fine = np.linspace(coarse - 0.02, coarse + 0.02, 40001)
    brute = min(phi(v) for v in fine)
    assert phi(b) <= brute + 1e-12 * max(brute, 1.0)
    # and it is a stationary point: the one-sided derivatives bracket zero
    h = 1e-7
    assert (phi(b + h) - phi(b)) >= -1e-9 and (phi(b) - phi(b - h)) <= 1e-9


# ---------------------------------------------------------------------------------------------
# degenerate kernel matrices: rank 0 (the best constant classifier) and overflow (an error)
# ---------------------------------------------------------------------------------------------

def brute_force_offset(y, cost):
    """argmin_b Σ_i cost_i max(0, 1 − y_i b)², by scipy's generic bounded scalar minimiser (the
    objective is convex; the minimiser lies in [−1, 1])."""
    from scipy.optimize import minimize_scalar

    def phi(b):
        return float(cost @ np.maximum(0.0, 1.0 - y * b) ** 2)
    return minimize_scalar(phi, bounds=(-3.0, 3.0), method="bounded",
                           options={"xatol": 1e-12}).x


@pytest.mark.parametrize("seed", range(3))
def test_newton_on_a_rank_zero_kernel_matrix_finds_the_best_constant(seed):
    rng = np.random.default_rng(seed)
    n, n_sv = 40, 6
    y = np.where(rng.random(n) < 0.3 + 0.2 * seed, 1.0, -1.0)
    cost = rng.uniform(0.5, 2.0, n)
    T, T_pinv = refit.landmark_basis(np.zeros((n_sv, n_sv)))
    assert T.shape == (n_sv, 0) and T_pinv.shape == (0, n_sv)
    K = np.zeros((n, n_sv))
    for start in (0.0, 5.0, -3.0):
        w, b, info = refit.newton_refit(K, T, y, cost, np.zeros(0), start)
        assert info["converged"] and w.shape == (0,)
        assert b == pytest.approx(brute_force_offset(y, cost), abs=1e-8)
    assert refit.best_offset(np.zeros(n), y, cost) == pytest.approx(
        brute_force_offset(y, cost), abs=1e-8)


def empty_rows_problem(n_classes):
    """Rows without features (valid LIBSVM data): every linear or polynomial kernel value (r = 0)
    is 0. Unequal class sizes and a class weight, so that the best offset is not 0."""
    y = np.array([1.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 2.0, 2.0, 1.0])
    if n_classes == 2:
        y = np.where(y == 2.0, -1.0, y)
    return sp.csr_matrix((y.size, 3)), y


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("kernel", ["linear", "poly"])
def test_rank_zero_refit_is_the_best_constant_classifier_for_both_solvers(kernel, n_classes):
    X, y = empty_rows_problem(n_classes)
    labels, y_index = group_classes(y)
    decisions = {}
    for solver, train in (("bsgd", train_bsgd), ("bsca", train_bsca)):
        params = TrainParams(solver=solver, kernel=kernel, maintenance="removal", budget=4,
                             class_weights={-1.0: 1.7})
        model = train(X, y_index, labels, params)
        assert model.params["polish"] == "refit"
        assert np.all(model.coef == 0.0)
        assert all(rank == 0 for rank in model.train_info["refit_rank"])
        cost = params.C * class_weights(labels, params)[y_index]
        F = model.decision_function(X)
        for c in range(F.shape[1]):
            positive = c if F.shape[1] > 1 else 0
            yc = np.where(y_index == positive, 1.0, -1.0)
            np.testing.assert_allclose(F[:, c], brute_force_offset(yc, cost), atol=1e-8)
        decisions[solver] = F
    # bsgd keeps the rows as support vectors (K_SS = 0), bsca takes none (k(x, x) = 0): the
    # same classifier
    np.testing.assert_allclose(decisions["bsgd"], decisions["bsca"], atol=1e-12)


def test_landmark_basis_refuses_a_kernel_matrix_that_is_not_finite(monkeypatch):
    from budgetsvm.errors import TrainingDiverged
    K_SS = np.eye(3)
    K_SS[0, 1] = K_SS[1, 0] = np.inf
    with pytest.raises(TrainingDiverged, match="not finite"):
        refit.landmark_basis(K_SS)

    def eigh(_):
        raise np.linalg.LinAlgError("Eigenvalues did not converge")
    monkeypatch.setattr(np.linalg, "eigh", eigh)
    with pytest.raises(TrainingDiverged, match="--polish none"):
        refit.landmark_basis(np.eye(3))


def test_newton_refit_reports_sums_that_overflow():
    from budgetsvm.errors import TrainingDiverged
    kernel, X, S, y, cost = problem(3)
    K = refit.kernel_block(kernel, S, X) * 1e300            # finite, but Σ c k kᵀ is not
    T, _ = refit.landmark_basis(refit.kernel_block(kernel, S, S))
    with pytest.raises(TrainingDiverged, match="overflow"):
        refit.newton_refit(K, T, y, cost)


def _hs60(tmp_path):
    path = tmp_path / "hs60"
    lines = subprocess.run(["xz", "-dc", str(DATA / "heart_scale.xz")], capture_output=True,
                           text=True, check=True).stdout.splitlines()[:60]
    path.write_text("\n".join(lines) + "\n")
    return path


def _write_cli_case(tmp_path, name):
    if name == "hs60":
        return _hs60(tmp_path)
    text = {"empty_rows": "+1\n-1\n+1\n+1\n",
            "big": "+1 1:1e100 2:3\n-1 1:-1e100 2:1\n+1 1:2e100\n-1 2:5\n+1 1:1\n"}[name]
    path = tmp_path / name
    path.write_text(text)
    return path


def _train_removal(tmp_path, solver, data, args):
    """(bsvm-train's result, the data path, the model path) of a run with removal."""
    path = _write_cli_case(tmp_path, data)
    model_path = tmp_path / "m"
    result = subprocess.run([str(BIN / "bsvm-train"), "-q", "-s", solver, "--maintenance",
                             "removal", *args, str(path), str(model_path)],
                            capture_output=True, text=True, timeout=120)
    return result, path, model_path


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
@pytest.mark.parametrize("data,args", [
    ("empty_rows", ["-t", "0"]), ("empty_rows", ["-t", "1"]),
    ("hs60", ["-t", "1", "--budget", "5", "-d", "100000"]),       # every kernel value underflows
])
def test_cli_rank_zero_trains_the_best_constant_classifier(tmp_path, solver, data, args):
    result, path, model_path = _train_removal(tmp_path, solver, data, args)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    from budgetsvm.model_io import load_model
    model = load_model(str(model_path))
    _, y = io.read_problem(str(path))
    yc = np.where(y == model.labels[0], 1.0, -1.0)
    assert -model.rho[0] == pytest.approx(brute_force_offset(yc, np.ones_like(yc)), abs=1e-8)
    assert np.all(model.coef == 0.0)


@pytest.mark.parametrize("solver,data,args", [
    ("bsgd", "big", ["-t", "1"]),                                  # k(x̃, x̃) = inf among the SVs
    ("bsgd", "hs60", ["-t", "1", "--budget", "5", "-g", "1e300"]),  # K_SS: ±inf (eigh failed on it)
    ("bsgd", "hs60", ["-t", "1", "--budget", "5", "-g", "1e100"]),  # finite, its sums are not
    ("bsca", "hs60", ["-t", "1", "--budget", "5", "-g", "1e100"]),
])
def test_cli_refit_on_kernel_values_that_overflow_is_one_line_error(tmp_path, solver, data, args):
    result, _, model_path = _train_removal(tmp_path, solver, data, args)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("training diverged: "), result.stderr
    assert not model_path.exists()


def test_cli_bsca_skips_the_rows_whose_kernel_overflows(tmp_path):
    # BSCA's step on a row with k(x, x) = inf is (1 − y f)/inf = 0: such rows never become
    # support vectors, and the refit on the others is finite (bsgd inserts them: an error above)
    path = _write_cli_case(tmp_path, "big")
    model_path = tmp_path / "m"
    result = subprocess.run([str(BIN / "bsvm-train"), "-q", "-s", "bsca", "-t", "1",
                             "--maintenance", "removal", str(path), str(model_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stderr == ""
    from budgetsvm.model_io import load_model
    model = load_model(str(model_path))
    assert sorted(map(tuple, model.sv.toarray().tolist())) == [(0.0, 5.0), (1.0, 0.0)]


@pytest.mark.parametrize("solver, k", [("bsgd", 2), ("bsgd", 3), ("bsca", 2), ("bsca", 3)])
def test_a_deferred_refit_gives_the_model_of_the_refit_at_once(solver, k):
    # cross-validation runs a fold's refit after later folds' solver runs
    # (refit.deferred_polish): on the same rows it must give the model train() gives, bit
    # for bit (one-vs-rest bsca: one refit group per class)
    from budgetsvm.train import train
    rng = np.random.default_rng(k)
    X = sp.csr_matrix(rng.normal(size=(150, 6)))
    y = rng.integers(0, k, 150).astype(float)
    params = TrainParams(solver=solver, budget=20, epochs=2, C=4.0, gamma=0.5, n_threads=1)
    direct = train(X, y, params)
    with refit.deferred_polish() as pending:
        deferred = train(X, y, params)
    assert len(pending) == 1 and "refit_iterations" not in deferred.train_info
    unpolished = deferred.coef.copy()
    finished = pending[0].run(X)
    assert finished is deferred
    assert not np.array_equal(unpolished, finished.coef)      # the refit did change them
    assert finished.coef.tobytes() == direct.coef.tobytes()
    assert finished.rho.tobytes() == direct.rho.tobytes()
    assert finished.params == direct.params
    # outside the block polish_model refits at once again
    assert "refit_iterations" in train(X, y, params).train_info


def test_the_papers_mode_defers_nothing():
    from budgetsvm.train import train
    rng = np.random.default_rng(1)
    X, y = sp.csr_matrix(rng.normal(size=(60, 3))), rng.integers(0, 2, 60).astype(float)
    with refit.deferred_polish() as pending:
        train(X, y, TrainParams(solver="bsgd", budget=10, polish="none"))
    assert pending == []
