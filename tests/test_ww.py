"""Weston–Watkins SVM: Walrus, the iterative subsolver and the BCD solver
(docs/ALGORITHMS.md §5, §7.1).

The BCD solver runs in two modes: shrinking=False is Algorithm 1 of Wang & Scott (2021) as
published; shrinking=True (the default of -s ww) shrinks (point, class) pairs at a bound, revives
the shrunk pairs that violate their bound at each gap evaluation of the whole problem, and steps
again, after each sweep, the points whose gap terms grew most.
Oracles: exact rationals (§5.9), enumeration, bisection and L-BFGS-B for the subproblem; a generic
bounded solve of the dual D2, numpy recomputations of W, P and D, LIBLINEAR's binary SVM (k = 2)
and a plain-Python replay of Algorithm 1 for the solver.
"""
import re
import subprocess
import sys
from pathlib import Path
from fractions import Fraction as Fr

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm import _ww
from budgetsvm.io import read_problem
from budgetsvm.params import TrainParams
from budgetsvm.ww import train_ww
from reference.objectives import (linear_primal, ww_block_kkt_violation, ww_block_objective,
                                  ww_block_scale, ww_primal_dual, ww_weights)
from reference.peers import liblinear_train, liblinear_weights
from reference.qp import ww_block_by_enumeration, ww_block_by_lbfgs, ww_dual
from reference.solvers import ww_algorithm_1


# ---------------------------------------------------------------------------------------------
# helpers / oracles
# ---------------------------------------------------------------------------------------------

def random_instance(rng, K):
    """Random v and C; a third with heavy ties (values on a grid of C/2, so Entry and Exit
    events coincide), some all-negative, some all at the upper bound."""
    C = float(rng.choice([0.5, 1.0, 2.0, 1e-3, 37.0]))
    kind = rng.integers(0, 6)
    if kind == 0:
        v = rng.integers(-4, 8, K) * (C / 2)
    elif kind == 1:
        v = rng.choice(rng.standard_normal(3) * 3 * C, K)
    elif kind == 2:
        v = -np.abs(rng.standard_normal(K))
    elif kind == 3:
        v = C * (K + 2) + np.abs(rng.standard_normal(K))          # everything upper
    else:
        v = rng.standard_normal(K) * rng.choice([0.1, 1.0, 10.0]) * C + 0.3 * C
    return np.asarray(v, dtype=np.float64), C


def small_problem(n=40, d=3, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.integers(0, k, n).astype(np.int32)
    y[:k] = np.arange(k)
    return sp.csr_matrix(X), y


def solve(X, y, k, C, **kw):
    X = sp.csr_matrix(X)
    C_i = np.full(X.shape[0], float(C)) if np.isscalar(C) else C
    return _ww.ww_solve(X.data, X.indices, X.indptr, y, C_i, X.shape[1], k, **kw)


# ---------------------------------------------------------------------------------------------
# §5.9 worked examples, exact
# ---------------------------------------------------------------------------------------------

WORKED = [
    # v, C, b, γ, objective
    ((3, Fr(3, 2), Fr(-1, 2)), 1, (1, Fr(1, 4), 0), Fr(5, 4), Fr(-33, 16)),
    ((2, 2, 1), 1, (Fr(2, 3), Fr(2, 3), 0), Fr(4, 3), Fr(-4, 3)),
    ((Fr(5, 2), Fr(3, 2), Fr(3, 2)), 1, (1, Fr(1, 6), Fr(1, 6)), Fr(4, 3), Fr(-19, 12)),
    ((5, 4, 3), Fr(1, 2), (Fr(1, 2), Fr(1, 2), Fr(1, 2)), Fr(3, 2), Fr(-9, 2)),
    ((-1, 0, -2), 1, (0, 0, 0), 0, 0),
    ((1, Fr(3, 5), Fr(8, 5)), Fr(1, 2), (Fr(1, 4), 0, Fr(1, 2)), Fr(3, 4), Fr(-49, 80)),
    ((1, Fr(3, 5), Fr(8, 5)), 1, (Fr(2, 15), 0, Fr(11, 15)), Fr(13, 15), Fr(-49, 75)),
]


@pytest.mark.parametrize("v, C, b, gam, obj", WORKED)
def test_worked_examples(v, C, b, gam, obj):
    vf = np.array([float(x) for x in v])
    got, got_gam, fallback = _ww.walrus(vf, float(C))
    assert not fallback
    np.testing.assert_allclose(got, [float(x) for x in b], rtol=0, atol=1e-15)
    assert abs(got_gam - float(gam)) <= 1e-15
    assert abs(ww_block_objective(got, vf) - float(obj)) <= 1e-15
    # the fallback and the iterative solver reach the same point
    np.testing.assert_allclose(_ww.bisection(vf, float(C))[0], got, atol=1e-12)
    np.testing.assert_allclose(_ww.iterative(vf, float(C), eps_sub=1e-13, max_steps=1000)[0],
                               got, atol=1e-9)


@pytest.mark.parametrize("subsolver", ["walrus", "iterative"])
def test_worked_block_step(subsolver):
    # k = 4, d = 2, x = (1, 2), y = 2 (1-based) -> class index 1; C = 1/2
    W = np.array([[0.5, 1.0, -0.5, 0.0],
                  [0.0, 0.0, 0.0, 1.0]])
    beta = np.array([0.2, 0.0, 0.5])         # classes (1, 3, 4) 1-based = (0, 2, 3)
    gam = _ww.block_step(W, [0, 1], [1.0, 2.0], 1, beta, 0.7, 0.5, subsolver, 1e-14)
    tol = 1e-15 if subsolver == "walrus" else 1e-12
    assert abs(gam - 0.75) <= tol
    np.testing.assert_allclose(beta, [0.25, 0.0, 0.5], rtol=0, atol=tol)
    expected = np.array([[9 / 20, 21 / 20, -0.5, 0.0],
                         [-1 / 10, 1 / 10, 0.0, 1.0]])
    np.testing.assert_allclose(W, expected, rtol=0, atol=tol)
    # new margins z_y − z_o = (1, 7/4, −3/4)
    z = np.array([1.0, 2.0]) @ W
    np.testing.assert_allclose(z[1] - z[[0, 2, 3]], [1.0, 1.75, -0.75], atol=1e-14)


# ---------------------------------------------------------------------------------------------
# random subproblems
# ---------------------------------------------------------------------------------------------

def test_walrus_small_vs_enumeration():
    rng = np.random.default_rng(1)
    for _ in range(600):
        K = int(rng.integers(1, 7))
        v, C = random_instance(rng, K)
        b, gam, fallback = _ww.walrus(v, C)
        assert not fallback
        ref = ww_block_by_enumeration(v, C)
        np.testing.assert_allclose(b, ref, rtol=0, atol=1e-12 * ww_block_scale(v, C))
        assert abs(gam - b.sum()) <= 1e-12 * ww_block_scale(v, C) * K


@pytest.mark.parametrize("K_max", [10, 100, 1000])
def test_walrus_random_kkt_and_bisection(K_max):
    rng = np.random.default_rng(K_max)
    for _ in range(150 if K_max < 1000 else 60):
        K = int(rng.integers(1, K_max + 1))
        v, C = random_instance(rng, K)
        b, gam, fallback = _ww.walrus(v, C)
        tol = 1e-12 * ww_block_scale(v, C)
        assert not fallback
        assert ww_block_kkt_violation(b, v, C) <= tol
        np.testing.assert_allclose(b, _ww.bisection(v, C)[0], rtol=0, atol=tol)


def test_walrus_vs_generic_qp():
    rng = np.random.default_rng(7)
    for K in [1, 2, 3, 5, 8, 20, 50, 120]:
        for _ in range(4):
            v, C = random_instance(rng, K)
            b = _ww.walrus(v, C)[0]
            ref = ww_block_by_lbfgs(v, C)
            np.testing.assert_allclose(b, ref, rtol=0, atol=1e-6 * ww_block_scale(v, C))
            assert (ww_block_objective(b, v)
                    <= ww_block_objective(ref, v) + 1e-12 * ww_block_scale(v, C) ** 2 * K)


def test_walrus_permutation_equivariance():
    rng = np.random.default_rng(3)
    for _ in range(300):
        K = int(rng.integers(1, 60))
        v, C = random_instance(rng, K)
        b = _ww.walrus(v, C)[0]
        perm = rng.permutation(K)
        bp = _ww.walrus(v[perm], C)[0]
        np.testing.assert_array_equal(bp, b[perm])


def test_walrus_boundary_cases():
    # all zero, single entry, v exactly at C boundaries, tiny and huge values
    for v, C in [([0.0, 0.0], 1.0), ([2.0], 1.0), ([1.0], 1.0), ([0.5], 1.0),
                 ([1e-300, 1e-300], 1.0), ([1e300, -1e300], 1.0), ([3.0, 3.0, 3.0], 1.0),
                 ([4.0, 3.0, 2.0, 1.0], 1.0), ([2.0, 1.0], 1.0)]:
        v = np.array(v)
        b, gam, fallback = _ww.walrus(v, C)
        assert not fallback
        assert ww_block_kkt_violation(b, v, C) <= 1e-12 * ww_block_scale(v, C)
    # K = 1: b = clip(v/2, 0, C)
    for x in np.linspace(-3, 5, 33):
        assert _ww.walrus(np.array([x]), 1.5)[0][0] == np.clip(x / 2, 0, 1.5)


def test_iterative_subsolver_close_to_walrus():
    rng = np.random.default_rng(5)
    for _ in range(200):
        K = int(rng.integers(1, 30))
        v, C = random_instance(rng, K)
        b0 = rng.uniform(0, C, K) * (rng.random(K) < 0.5)
        b = _ww.walrus(v, C)[0]
        bi = _ww.iterative(v, C, b0, eps_sub=1e-13, max_steps=100000)[0]
        np.testing.assert_allclose(bi, b, rtol=0, atol=1e-9 * ww_block_scale(v, C))


# ---------------------------------------------------------------------------------------------
# the BCD solver
# ---------------------------------------------------------------------------------------------

MODES = [True, False]          # shrinking on (the default), off (Wang & Scott's algorithm)


@pytest.mark.parametrize("shrinking", MODES)
def test_dual_monotone_and_W_consistent(shrinking):
    X, y = small_problem()
    k, C = 4, 0.7
    C_i = np.full(X.shape[0], C)
    prev = -np.inf
    for steps in range(1, 201, 3):
        r = solve(X, y, k, C, max_iter=0, max_steps=steps, delta=0.0, shrinking=shrinking)
        assert r.n_steps == steps
        W_ref = ww_weights(X, y, r.beta, k)
        np.testing.assert_allclose(r.W, W_ref, rtol=0, atol=1e-10)
        np.testing.assert_allclose(r.gamma, r.beta.sum(axis=1), atol=1e-12)
        primal, dual = ww_primal_dual(X, y, r.W, r.beta, C_i)
        assert abs(dual - r.dual) <= 1e-10 * max(1, abs(dual))
        assert abs(primal - r.primal) <= 1e-10 * max(1, abs(primal))
        assert dual >= prev - 1e-12 * abs(dual)
        prev = dual
        assert np.all(r.beta >= 0) and np.all(r.beta <= C)


@pytest.mark.parametrize("shrinking", MODES)
def test_convergence_small_problem_vs_generic_qp(shrinking):
    X, y = small_problem()
    k, C = 4, 0.7
    r = solve(X, y, k, C, max_iter=200, delta=0.0, gap_every=1, shrinking=shrinking)
    # (delta = 0 stops only when rounding makes the gap <= 0)
    assert (r.n_iter == 200 or r.converged) and r.n_fallbacks == 0
    gaps = r.gap_history
    assert len(gaps) == r.n_iter
    assert gaps[-1] < 1e-3 * gaps[0]
    assert np.all(gaps >= -1e-9)
    d2 = ww_dual(X, y, k, C)
    assert abs(-r.dual - d2) <= 1e-6 * abs(d2)
    # the primal converges to the same value (strong duality)
    r2 = solve(X, y, k, C, max_iter=2000, delta=1e-12, shrinking=shrinking)
    assert abs(r2.primal - (-d2)) <= 1e-6 * abs(d2)


@pytest.mark.parametrize("shrinking", MODES)
def test_stopping_rule_and_history(shrinking):
    X, y = small_problem(seed=2)
    r = solve(X, y, 4, 1.0, delta=0.01, gap_every=1, shrinking=shrinking)
    assert r.converged
    assert r.gap_history[-1] < 0.01 * r.gap_history[0]
    assert np.all(r.gap_history[:-1] >= 0.01 * r.gap_history[0])
    np.testing.assert_array_equal(r.gap_iterations, np.arange(1, r.n_iter + 1))
    # adaptive schedule: always iteration 1, stops on an evaluated iteration
    ra = solve(X, y, 4, 1.0, delta=0.01, shrinking=shrinking)
    assert ra.gap_iterations[0] == 1 and ra.gap_iterations[-1] == ra.n_iter and ra.converged
    # absolute gap
    rb = solve(X, y, 4, 1.0, delta=0.0, abs_gap=1e-3, gap_every=1, shrinking=shrinking)
    assert rb.converged and rb.gap < 1e-3
    # max_iter
    rc = solve(X, y, 4, 1.0, delta=0.0, max_iter=7, shrinking=shrinking)
    assert rc.n_iter == 7 and not rc.converged and rc.gap_iterations[-1] == 7


@pytest.mark.parametrize("shrinking", MODES)
def test_walrus_and_iterative_bcd_same_primal(shrinking):
    X, y = small_problem(n=120, d=5, k=6, seed=4)
    a = solve(X, y, 6, 0.5, delta=1e-9, max_iter=3000, subsolver="walrus", shrinking=shrinking)
    b = solve(X, y, 6, 0.5, delta=1e-9, max_iter=3000, subsolver="iterative",
              shrinking=shrinking)
    assert abs(a.primal - b.primal) <= 1e-6 * abs(a.primal)
    assert abs(a.dual - b.dual) <= 1e-6 * abs(a.dual)


def test_deterministic_by_seed():
    X, y = small_problem()
    a = solve(X, y, 4, 1.0, max_iter=5, delta=0.0, seed=11)
    b = solve(X, y, 4, 1.0, max_iter=5, delta=0.0, seed=11)
    c = solve(X, y, 4, 1.0, max_iter=5, delta=0.0, seed=12)
    np.testing.assert_array_equal(a.W, b.W)
    assert not np.array_equal(a.W, c.W)


def _liblinear_binary(X, y01, C):
    """LIBLINEAR -s 3's w for class index 0 as +1 (its label order is by first appearance)."""
    model, _ = liblinear_train(np.where(y01 == 0, 1.0, -1.0), X, f"-s 3 -c {C!r} -e 1e-9 -B -1 -q")
    w = liblinear_weights(model)[0]
    return w if model.label[0] == 1 else -w


def test_k2_equals_binary_svm_with_double_C():
    rng = np.random.default_rng(9)
    n, d = 80, 4
    X = rng.standard_normal((n, d))
    y = (X @ rng.standard_normal(d) + 0.8 * rng.standard_normal(n) > 0).astype(np.int32)
    C = 0.3
    r = solve(X, y, 2, C, delta=1e-12, max_iter=20000)
    w_bin = _liblinear_binary(X, y, 2 * C)
    u = w_bin                                 # u = w_0 − w_1 in class-index terms
    p_bin = linear_primal(X, np.where(y == 0, 1.0, -1.0), 2 * C, u)
    assert abs(r.primal - 0.5 * p_bin) <= 1e-6 * p_bin
    np.testing.assert_allclose(r.W[:, 0], -r.W[:, 1], atol=1e-12)
    np.testing.assert_allclose(r.W[:, 0], u / 2, atol=1e-6 * max(1, np.abs(u).max()))


@pytest.mark.parametrize("shrinking", MODES)
def test_zero_rows(shrinking):
    X, y = small_problem(n=30, seed=6)
    k, C = 4, 0.8
    Xz = sp.vstack([X, sp.csr_matrix((5, X.shape[1]))]).tocsr()
    yz = np.concatenate([y, np.array([0, 1, 2, 3, 1], dtype=np.int32)])
    r = solve(Xz, yz, k, C, delta=1e-10, max_iter=5000, shrinking=shrinking)
    np.testing.assert_array_equal(r.beta[-5:], np.full((5, k - 1), C))
    np.testing.assert_array_equal(r.gamma[-5:], np.full(5, C * (k - 1)))
    assert r.gap >= -1e-9 and r.gap <= 1e-6 * r.primal        # no permanent gap C(k−1)
    ref = solve(X, y, k, C, delta=1e-10, max_iter=5000, shrinking=shrinking)
    assert abs(r.primal - (ref.primal + 5 * C * (k - 1))) <= 1e-6 * r.primal
    np.testing.assert_allclose(r.W, ref.W, atol=1e-5)
    if not shrinking:
        assert r.n_steps % X.shape[0] == 0                  # zero rows are never visited
    # all rows zero: nothing to optimise, gap is exactly zero
    ra = solve(sp.csr_matrix((4, 3)), np.array([0, 1, 2, 0], dtype=np.int32), 3, 1.0)
    assert ra.gap == 0.0 and ra.n_steps == 0 and np.all(ra.W == 0)


def test_class_weights_equal_duplicated_rows():
    X, y = small_problem(n=30, seed=8)
    k, C = 4, 0.5
    labels = np.array([10.0, 20.0, 30.0, 40.0])
    p = TrainParams(solver="ww", C=C, eps=1e-10, max_iter=5000, class_weights={20: 2.0})
    m = train_ww(X, y, labels, p)
    dup = np.flatnonzero(y == 1)
    X2 = sp.vstack([X, X[dup]]).tocsr()
    y2 = np.concatenate([y, y[dup]])
    m2 = train_ww(X2, y2, labels, TrainParams(solver="ww", C=C, eps=1e-10, max_iter=5000))
    assert abs(m.train_info["primal"] - m2.train_info["primal"]) <= 1e-6 * m2.train_info["primal"]
    np.testing.assert_allclose(m.coef, m2.coef, atol=1e-4)


def test_bias_is_an_appended_regularised_feature():
    X, y = small_problem(n=50, seed=10)
    k = 4
    labels = np.arange(k, dtype=np.float64) + 1
    p = TrainParams(solver="ww", C=1.0, bias=0.5, eps=1e-10, max_iter=5000)
    m = train_ww(X, y, labels, p)
    Xb = sp.hstack([X, np.full((50, 1), 0.5)]).tocsr()
    r = solve(Xb, y, k, 1.0, delta=1e-10, max_iter=5000)
    np.testing.assert_allclose(m.coef, r.W[:3].T, atol=1e-5)
    np.testing.assert_allclose(m.bias_coef, r.W[3], atol=1e-5)
    assert m.bias == 0.5 and m.multiclass == "ww" and m.solver == "ww"
    F = m.decision_function(X)
    np.testing.assert_allclose(F, Xb @ r.W, atol=1e-4)
    assert abs(m.train_info["primal"] - r.primal) <= 1e-6 * r.primal


def test_label_order_does_not_matter():
    X, y = small_problem(n=60, seed=12)
    k = 4
    perm = np.array([2, 0, 3, 1])            # class c is listed at position perm[c]
    labels = np.array([5.0, -1.0, 7.0, 3.0])
    p = TrainParams(solver="ww", C=0.9, eps=1e-10, max_iter=5000)
    m1 = train_ww(X, y, labels, p)
    labels2 = np.empty(k)
    labels2[perm] = labels
    m2 = train_ww(X, perm[y].astype(np.int32), labels2, p)
    assert abs(m1.train_info["primal"] - m2.train_info["primal"]) <= 1e-6 * m1.train_info["primal"]
    np.testing.assert_allclose(m1.coef, m2.coef[perm], atol=1e-4)
    Xt = sp.csr_matrix(np.random.default_rng(0).standard_normal((200, 3)))
    np.testing.assert_array_equal(m1.predict(Xt), m2.predict(Xt))
    assert m1.coef.shape == (k, 3) and m1.params["subsolver"] == "walrus"
    assert "n_iter" in m1.params and all(isinstance(v, (int, float, str, bool))
                                         for v in m1.params.values())


def test_sparse_high_dimensional():
    rng = np.random.default_rng(13)
    n, d, k = 200, 100_000, 5
    X = sp.random(n, d, density=2e-4, format="csr", random_state=rng)
    y = rng.integers(0, k, n).astype(np.int32)
    labels = np.arange(k, dtype=np.float64)
    m = train_ww(X, y, labels, TrainParams(solver="ww", C=1.0))
    assert m.coef.shape == (k, d)
    info = m.train_info
    assert info["converged"] and info["gap"] < 0.0009 * info["gap_history"][0]
    # essentially separable in 100,000 dimensions: training accuracy is (near) perfect
    assert (m.predict(X) == y).mean() >= 0.95
    assert X.indices.dtype == np.int32
    X64 = sp.csr_matrix((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)),
                        shape=X.shape)
    m64 = train_ww(X64, y, labels, TrainParams(solver="ww", C=1.0))
    np.testing.assert_array_equal(m64.coef, m.coef)


def test_callback_and_errors():
    X, y = small_problem()
    seen = []
    solve(X, y, 4, 1.0, max_iter=5, delta=0.0, callback=lambda it, rel: seen.append((it, rel)))
    assert [s[0] for s in seen] == [1, 2, 3, 4, 5] and seen[0][1] == 1.0

    class Stop(Exception):
        pass

    def cb(it, rel):
        raise Stop

    with pytest.raises(Stop):
        solve(X, y, 4, 1.0, max_iter=5, callback=cb)
    with pytest.raises(ValueError):
        solve(X, y, 4, 1.0, subsolver="shark")
    with pytest.raises(ValueError):
        solve(X, y, 3, 1.0)                   # class index 3 out of range


def test_screening_keeps_block_steps_exact():
    # well separated clusters, many classes: most classes provably stay at 0 and are screened
    rng = np.random.default_rng(14)
    k, n, d = 20, 300, 30
    centers = rng.standard_normal((k, d)) * 3
    y = rng.integers(0, k, n).astype(np.int32)
    X = sp.csr_matrix(centers[y] + 0.3 * rng.standard_normal((n, d)))
    for sub in ("walrus", "iterative"):
        a = solve(X, y, k, 0.5, max_iter=30, delta=0.0, subsolver=sub, screening=0,
                  shrinking=False)
        b = solve(X, y, k, 0.5, max_iter=30, delta=0.0, subsolver=sub, screening=1,
                  shrinking=False)
        assert a.scored_fraction == 1.0 and b.scored_fraction < 1.0
        np.testing.assert_allclose(b.W, a.W, rtol=0, atol=1e-10)
        np.testing.assert_allclose(b.beta, a.beta, rtol=0, atol=1e-10)
    with pytest.raises(ValueError):
        solve(X, y, k, 0.5, screening=1, shrinking=True)


# ---------------------------------------------------------------------------------------------
# shrinking of (point, class) pairs, and Wang & Scott's algorithm unchanged
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n,d,k,C,seed", [(40, 3, 4, 0.7, 0), (60, 5, 6, 5.0, 1),
                                          (80, 4, 3, 0.2, 2), (50, 30, 8, 2.0, 3)])
def test_shrinking_same_optimum(n, d, k, C, seed):
    # with and without shrinking: the optimum of D2 from a generic bounded solve at a tight δ,
    # and the same primal (1e-3 relative) at the default δ
    X, y = small_problem(n=n, d=d, k=k, seed=seed)
    d2 = ww_dual(X, y, k, C)
    for shrinking in MODES:
        tight = solve(X, y, k, C, delta=1e-10, max_iter=20000, shrinking=shrinking)
        assert tight.converged
        assert abs(-tight.dual - d2) <= 1e-6 * abs(d2)
        assert abs(tight.primal + d2) <= 1e-6 * abs(d2)
    on = solve(X, y, k, C, delta=1e-5)
    off = solve(X, y, k, C, delta=1e-5, shrinking=False)
    assert on.converged and off.converged
    assert abs(on.primal - off.primal) <= 1e-3 * off.primal
    assert abs(on.primal + d2) <= 1e-3 * abs(d2)
    # at the default δ = 0.0009 (relative to the first gap): the primal is above the optimum
    # by at most the gap measured on the whole problem at the stop
    r = solve(X, y, k, C)
    assert r.converged and r.gap < 0.0009 * r.gap_history[0]
    assert -1e-9 * abs(d2) <= r.primal + d2 <= r.gap + 1e-9 * abs(d2)


def pair_margins(X, y, beta, k):
    """r_it = 1 − ⟨w_{y_i} − w_{o_i(t)}, x_i⟩ at W(β), recomputed by numpy (n × (k−1))."""
    Z = np.asarray(X @ ww_weights(X, y, beta, k))
    n = X.shape[0]
    o = np.array([[t + 1 if t + 1 != y[i] else 0 for t in range(k - 1)] for i in range(n)])
    return 1.0 - Z[np.arange(n), y][:, None] + Z[np.arange(n)[:, None], o]


def test_shrinking_mechanics():
    X, y = small_problem(n=60, d=5, k=6, seed=1)
    k, C, delta = 6, 5.0, 1e-6
    trace = []
    r = solve(X, y, k, C, delta=delta, max_iter=5000, trace=trace, gap_every=1)
    assert r.converged and len(trace) == r.n_iter and r.n_unshrink >= 1 and r.n_revived >= 1
    assert trace[0]["limit"] == np.inf and not trace[0]["inactive"].any()
    assert trace[0]["revisits"] == 0                       # gap_1 is Algorithm 1's first sweep
    shrunk_any = False
    for s, t in enumerate(trace):
        # an inactive pair sits at a bound and keeps its value until it is revived
        inact = t["inactive"]
        at_bound = (t["beta"] == 0.0) | (t["beta"] == C)
        assert np.all(at_bound[inact])
        shrunk_any |= bool(inact.any())
        after = t["inactive_after"]
        revived = inact & ~after
        assert not np.any(after & ~inact)                  # an evaluation only revives
        assert int(revived.sum()) == t["revived"]
        if t["revived"]:
            # the evaluation revived exactly the shrunk pairs that violate their bound at this
            # W (β = 0 with margin below 1, β = C above it), by numpy from β
            assert t["evaluated"] and t["gap"] >= delta * r.gap_history[0]
            rr = pair_margins(X, y, t["beta"], k)
            b = t["beta"]
            viol = ((b == 0.0) & (rr > 1e-9)) | ((b == C) & (rr < -1e-9))
            calm = ((b == 0.0) & (rr < -1e-9)) | ((b == C) & (rr > 1e-9))
            assert np.all(revived[viol & inact]) and not np.any(revived[calm & inact])
        if s + 1 < len(trace):
            nxt = trace[s + 1]
            if t["full_unshrink"]:
                # no active pair was left: the next sweep visits every pair and shrinks none
                assert nxt["limit"] == np.inf and not nxt["inactive"].any()
            else:
                kept = after & nxt["inactive"]
                np.testing.assert_array_equal(nxt["beta"][kept], t["beta"][kept])
                # nothing inactive becomes active between evaluations
                assert not np.any(after & ~nxt["inactive"])
    assert shrunk_any
    # the stop is the whole problem's gap test: recomputed here from W and β by numpy
    C_i = np.full(X.shape[0], C)
    np.testing.assert_allclose(r.W, ww_weights(X, y, r.beta, k), rtol=0, atol=1e-10)
    np.testing.assert_allclose(r.gamma, r.beta.sum(axis=1), atol=1e-12)
    primal, dual = ww_primal_dual(X, y, r.W, r.beta, C_i)
    assert primal - dual < delta * r.gap_history[0]
    assert trace[-1]["evaluated"]


def outlier_problem(n=80, d=12, k=7, seed=4):
    # separable-ish clusters, plus a few short rows (one or two features) with many
    # classes at a bound: their gap terms grow most between their steps (as on sector.scale),
    # so the solver revisits them after the sweeps
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d)) * 2
    y = rng.integers(0, k, n).astype(np.int32)
    y[:k] = np.arange(k)
    X = centers[y] + rng.standard_normal((n, d))
    for i in range(n - 8, n):
        X[i] = 0.0
        X[i, rng.choice(d, 2, replace=False)] = rng.standard_normal(2) * 3
    return sp.csr_matrix(X), y


@pytest.mark.parametrize("C", [0.3, 4.0])
def test_revisits_and_revival_reach_the_optimum(C):
    # The revisits (more exact block steps on the points whose gap terms grew most) and the
    # revival of violating shrunk pairs at gap evaluations only change the order of exact
    # block steps: the end point is the optimum of D2 from a generic bounded QP, and the
    # primal at the default δ agrees with Wang & Scott's algorithm.
    X, y = outlier_problem()
    k = 7
    trace = []
    r = solve(X, y, k, C, delta=1e-10, max_iter=20000, trace=trace)
    assert r.converged and r.n_revisits > 0 and r.n_revived > 0
    assert sum(t["revisits"] for t in trace) == r.n_revisits
    d2 = ww_dual(X, y, k, C)
    assert abs(-r.dual - d2) <= 1e-6 * abs(d2)
    assert abs(r.primal + d2) <= 1e-6 * abs(d2)
    np.testing.assert_allclose(r.W, ww_weights(X, y, r.beta, k), rtol=0, atol=1e-9)
    on = solve(X, y, k, C, delta=1e-5)
    off = solve(X, y, k, C, delta=1e-5, shrinking=False)
    assert on.converged and off.converged and on.n_revisits > 0
    assert abs(on.primal - off.primal) <= 1e-3 * off.primal
    # at the default δ: above the optimum by at most the gap measured at the stop
    r = solve(X, y, k, C)
    assert r.converged and r.gap < 0.0009 * r.gap_history[0]
    assert -1e-9 * abs(d2) <= r.primal + d2 <= r.gap + 1e-9 * abs(d2)


def test_wrong_shrinking_is_repaired():
    # On this problem the shrinking rule removes pairs that the optimum needs: a pair shrunk at
    # a bound later takes another value, after the whole-problem gap test failed and every pair
    # was made active again. The end point is still the optimum of D2.
    X, y = small_problem()
    k, C = 4, 0.7
    trace = []
    r = solve(X, y, k, C, delta=1e-8, max_iter=5000, trace=trace)
    assert r.converged and r.n_unshrink >= 1
    wrong = {(int(i), int(t)) for tr in trace for i, t in np.argwhere(tr["inactive"])
             if r.beta[i, t] != tr["beta"][i, t]}
    assert (4, 1) in wrong and len(wrong) >= 3
    d2 = ww_dual(X, y, k, C)
    assert abs(-r.dual - d2) <= 1e-6 * abs(d2)
    off = solve(X, y, k, C, delta=1e-8, max_iter=5000, shrinking=False)
    assert abs(r.primal - off.primal) <= 1e-6 * off.primal


@pytest.mark.parametrize("k,C,seed", [(4, 0.7, 3), (3, 5.0, 9)])
def test_paper_mode_is_algorithm_1_bit_for_bit(k, C, seed):
    # shrinking=False is Wang & Scott's Algorithm 1 with exact Walrus blocks, float for float
    X, y = small_problem(n=50, d=6, k=k, seed=seed)
    W, beta = ww_algorithm_1(X, y, k, C, 12, seed)
    r = solve(X, y, k, C, max_iter=12, delta=0.0, seed=seed, shrinking=False)
    assert r.n_iter == 12
    assert r.W.tobytes() == W.tobytes() and r.beta.tobytes() == beta.tobytes()
    on = solve(X, y, k, C, max_iter=12, delta=0.0, seed=seed)
    assert on.W.tobytes() != W.tobytes()


# ---------------------------------------------------------------------------------------------
# bsvm-train -s ww: --ww-subsolver, --ww-shrink, the --max-iter warning
# ---------------------------------------------------------------------------------------------

BIN = Path(sys.executable).parent
HEART = Path(__file__).resolve().parent.parent / "data" / "heart_scale.xz"


def bsvm_train(*args):
    return subprocess.run([str(BIN / "bsvm-train"), *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def test_cli_ww_subsolver_iterative_on_dna(tmp_path, shared_data):
    # bsvm-train -s ww --ww-subsolver iterative -c 1 dna.scale: the model of the walrus run
    # (both solve the blocks to the same optimum, to 1e-6)
    from budgetsvm import model_io
    data = shared_data("dna.scale.xz")
    it, wal = tmp_path / "it.model", tmp_path / "wal.model"
    result = bsvm_train("-s", "ww", "--ww-subsolver", "iterative", "-c", "1", data, it)
    assert result.returncode == 0, result.stderr
    assert 'param subsolver str "iterative"' in it.read_text()
    assert "subsolver = iterative" in result.stdout and "converged = True" in result.stdout
    assert bsvm_train("-s", "ww", "-c", "1", data, wal).returncode == 0
    a, b = model_io.load_model(str(it)), model_io.load_model(str(wal))
    X, _ = read_problem(str(shared_data("dna.scale.t.xz")))
    assert np.mean(a.predict(X) == b.predict(X)) > 0.99
    result = bsvm_train("-s", "ww", "--ww-subsolver", "shark", "-c", "1", data, it)
    assert result.returncode == 2 and "--ww-subsolver" in result.stderr


def test_cli_ww_shrink_none_is_the_paper_model(tmp_path):
    on, none = tmp_path / "on.model", tmp_path / "none.model"
    assert bsvm_train("-s", "ww", "-q", HEART, on).returncode == 0
    assert bsvm_train("-s", "ww", "-q", "--ww-shrink", "none", HEART, none).returncode == 0
    assert 'param ww_shrink str "on"' in on.read_text()
    assert "ww_shrink" not in none.read_text()        # as in models written before the option


def test_cli_ww_max_iter_warning(tmp_path):
    # issue 20 item 4: -s ww stopping at --max-iter says so, as dcd and acf do
    out = tmp_path / "m"
    result = bsvm_train("-s", "ww", "--max-iter", "2", "-e", "1e-9", HEART, out)
    assert result.returncode == 0, result.stderr
    # the summary lines go to stdout, as LIBLINEAR prints them (issue 20 item 6)
    lines = result.stdout.splitlines()
    assert "WARNING: reaching max number of iterations" in lines
    assert "Using a larger --max-iter (0 = unlimited) or a larger -e may help" in lines
    assert "converged = False" in result.stdout and out.exists()
    result = bsvm_train("-s", "ww", HEART, out)
    assert "WARNING" not in result.stdout + result.stderr and "converged = True" in result.stdout


def test_cli_ww_runs_to_liblinear_cs_iteration_limit(tmp_path, shared_data):
    # Without --max-iter, ww stops by its gap test or after 100,000 outer iterations, the limit
    # of LIBLINEAR's Crammer–Singer solver -s 4 (Solver_MCSVM_CS, max_iter = 100000). satimage
    # at C = 32 needs more than 1,000: the default run converges where --max-iter 1000 stops
    # short. Recomputed from the model's W, the default run's primal is above the optimum (an
    # unlimited run at a 100x tighter gap) by at most the duality gap it reports, as weak
    # duality requires of a converged run, and far less than the capped run's.
    from budgetsvm import model_io
    data = shared_data("satimage.scale.xz")
    X, y = read_problem(str(data))
    labels = np.unique(y)
    y_index = np.searchsorted(labels, y).astype(np.int32)

    def primal(model_file):
        model = model_io.load_model(str(model_file))
        order = [list(model.labels).index(label) for label in labels]
        W = model.coef[order].T[:X.shape[1]]          # no -B: no bias weights
        return ww_primal_dual(X, y_index, W, np.zeros((X.shape[0], 1)),
                              np.full(X.shape[0], 32.0))[0]

    default, capped, tight = (tmp_path / name for name in ("default", "capped", "tight"))
    result = bsvm_train("-s", "ww", "-c", "32", data, default)
    assert result.returncode == 0, result.stderr
    assert "converged = True" in result.stdout and "WARNING" not in result.stdout
    gap = float(re.search(r"\bgap = ([0-9.e+-]+)", result.stdout).group(1))
    assert 'param max_iter int 100000' in default.read_text()
    result = bsvm_train("-s", "ww", "-c", "32", "--max-iter", "1000", data, capped)
    assert "WARNING: reaching max number of iterations" in result.stdout
    result = bsvm_train("-s", "ww", "-c", "32", "--max-iter", "0", "-e", "9e-6", data, tight)
    assert "converged = True" in result.stdout
    best = primal(tight)
    assert 0 <= primal(default) - best <= gap
    assert primal(capped) - best > 5 * (primal(default) - best)
