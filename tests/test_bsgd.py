"""BSGD and budget maintenance: the oracles of docs/ALGORITHMS.md §7.2.

The references are plain numpy (tests/reference: Pegasos / NORMA and the Crammer–Singer step
with an explicit shrink of every coefficient on full kernel matrices, the merge objective; here:
least squares, grid searches) and replay the solver's index order through budgetsvm._rng.Random:
epoch e visits the e-th permutation(n) drawn from Random(seed).
"""
import time

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm._budget import SVStore, gss
from budgetsvm._bsgd import bsgd_solve
from budgetsvm._rng import Random
from budgetsvm.bsgd import fit_bsgd, train_bsgd
from budgetsvm.labels import group_classes
from budgetsvm.params import TrainParams
from reference.data import blobs
from reference.kernels import rbf
from reference.merging import merge_objective
from reference.solvers import crammer_singer_step, pegasos_rbf


def run_core(X, y_index, nr_coef, C=1.0, gamma=0.5, budget=10**6, epochs=1, seed=3,
             maintenance="removal", variant="pegasos", class_weight=None, trace=None,
             kernel="rbf", track_q=False, **kw):
    """Run the compiled loop on dense X; returns (store, result)."""
    Xs = sp.csr_matrix(X)
    n, d = X.shape
    k = int(y_index.max()) + 1
    store = SVStore(d, min(budget, 10**5), nr_coef, kernel, gamma, 0.0, 3, maintenance,
                    "gss", track_q=track_q or variant == "mp")
    cw = np.ones(k) if class_weight is None else np.asarray(class_weight, float)
    res = bsgd_solve(store, Xs.data, Xs.indices.astype(np.int32), Xs.indptr.astype(np.int64),
                     (X * X).sum(1), y_index, cw, n * C, variant=variant, epochs=epochs,
                     seed=seed, trace=None if trace is None else (lambda t, s: trace(store, t, s)),
                     **kw)
    return store, res


def aggregate(store, s, n):
    """True coefficients summed per training row (origin), shape (n, nr_coef)."""
    _, A, origin, _ = store.export()
    out = np.zeros((n, A.shape[1]))
    np.add.at(out, origin, A * s)
    return out


# ---------------------------------------------------------------------------------------------
# Golden-section search and merging
# ---------------------------------------------------------------------------------------------

def test_gss_iteration_counts():
    assert gss(0.3, 0.7, -1.0, 0.0, 1.0, 0.01)[1] == 10
    assert gss(0.3, 0.7, -1.0, 0.0, 1.0, 1e-10)[1] == 48


@pytest.mark.parametrize("seed", range(5))
def test_gss_matches_dense_grid(seed):
    rng = np.random.default_rng(seed)
    grid = np.linspace(0, 1, 100001)
    for _ in range(40):
        m, kappa = rng.uniform(0.02, 0.98), rng.uniform(0.15, 0.99)   # unimodal: κ > e^−2
        logk = np.log(kappa)
        values = merge_objective(m, 1 - m, grid, logk=logk)
        h_grid = grid[np.argmax(values)]
        h, _ = gss(m, 1 - m, logk, 0.0, 1.0, 0.01)
        assert abs(h - h_grid) < 0.01
        lo, hi = (0.5, 1.0) if m >= 0.5 else (0.0, 0.5)
        h_precise, _ = gss(m, 1 - m, logk, lo, hi, 1e-10)
        assert merge_objective(m, 1 - m, h_precise, logk=logk) >= values.max() - 1e-12
        assert abs(h_precise - h_grid) < 2e-4


WORKED = [((0.0, 0.0), 0.2), ((1.0, 0.0), 0.6), ((0.0, 1.5), 0.4), ((2.0, 2.0), -0.5),
          ((0.5, 0.5), -1.0)]


def worked_store(budget):
    st = SVStore(2, budget, 1, "rbf", 0.5, maintenance="merge")
    for i, (x, a) in enumerate(WORKED):
        st.insert(np.array(x), a, origin=i)
    return st


def test_worked_merge_example():
    st = worked_store(5)                       # five entries, no maintenance yet
    h, az, wd = st.evaluate_merge(0, 1, "gss-precise")
    assert h == pytest.approx(0.19766598, abs=1e-7)
    assert az == pytest.approx(0.73335069, abs=1e-8)
    assert wd == pytest.approx(7.7641209e-3, rel=1e-7)
    h, az, wd = st.evaluate_merge(0, 2, "gss-precise")
    assert h == pytest.approx(0.20459770, abs=1e-7)
    assert wd == pytest.approx(2.1777919e-2, rel=1e-7)
    h, az, wd = st.evaluate_merge(0, 1, "gss")
    assert h == pytest.approx(0.19756081, abs=1e-8)
    assert wd == pytest.approx(7.7641259e-3, rel=1e-7)
    # Budget 4: the fifth insertion merges A (smallest) with B (least WD); z appended last.
    st = worked_store(4)
    X, A, origin, _ = st.export()
    assert list(origin) == [2, 3, 4, -1]
    assert st.counters()["n_merges"] == 1
    assert X[-1, 1] == 0.0 and X[-1, 0] == pytest.approx(0.80233402, abs=1e-3)
    assert A[-1, 0] == pytest.approx(0.73335069, abs=1e-7)
    np.testing.assert_array_equal(A[:3, 0], [0.4, -0.5, -1.0])


@pytest.mark.parametrize("nr_coef", [1, 3])
def test_merge_wd_equals_feature_space_norm(nr_coef):
    rng = np.random.default_rng(7)
    gamma = 0.3
    st = SVStore(4, 30, nr_coef, "rbf", gamma, maintenance="merge")
    for i in range(12):
        x = rng.normal(size=4)
        if nr_coef == 1:
            coef = abs(rng.normal()) + 0.1
        else:
            coef = rng.normal(size=nr_coef)
            coef -= coef.mean()
        st.insert(x, coef, origin=i)
    X = st.export()[0][np.argsort(st.slot_order())]      # slot order
    A = st.export()[1][np.argsort(st.slot_order())]
    for m in range(12):
        for n in range(12):
            if m == n:
                continue
            for method in ("gss", "gss-precise", "final"):
                h, az, wd = st.evaluate_merge(m, n, method)
                z = h * X[m] + (1 - h) * X[n]
                P = np.vstack([X[m], X[n], z])
                K = rbf(P, P, gamma)
                coefs = np.vstack([A[m], A[n], -np.atleast_1d(az)])
                brute = np.einsum("ir,ij,jr->", coefs, K, coefs)
                assert wd == pytest.approx(brute, abs=1e-12 * max(1.0, np.abs(coefs).max() ** 2))
                kappa = rbf(X[m:m + 1], X[n:n + 1], gamma)[0, 0]
                assert K[0, 2] == pytest.approx(kappa ** ((1 - h) ** 2), rel=1e-12, abs=1e-300)
                if nr_coef == 1:
                    assert 0.0 <= h <= 1.0


def test_binary_merges_only_same_sign():
    rng = np.random.default_rng(1)
    st = SVStore(3, 6, 1, "rbf", 0.5, maintenance="merge")
    coef_of = {}                                      # stamp -> stored coefficient
    next_stamp = 0
    for i in range(80):
        a = rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 2.0)
        merges = st.counters()["n_merges"]
        coef_of[next_stamp] = a                       # stamps count insertions, z included
        next_stamp += 1
        st.insert(rng.normal(size=3), a, origin=i)
        _, A, origin, stamp = st.export()
        if st.counters()["n_merges"] > merges:
            gone = set(coef_of) - set(stamp.tolist())
            assert len(gone) == 2 and origin[-1] == -1 and stamp[-1] == next_stamp
            signs = {np.sign(coef_of.pop(g)) for g in gone}
            assert signs == {np.sign(A[-1, 0])}       # same-sign pair, z keeps the sign
            coef_of[next_stamp] = A[-1, 0]
            next_stamp += 1
        assert st.n <= 6
    assert st.counters()["n_merges"] > 50


@pytest.mark.parametrize("merge_search", ["gss", "gss-precise", "lookup-h", "lookup-wd"])
@pytest.mark.parametrize("fast_rows", [False, True])
def test_label_partners_merge_within_a_label(merge_search, fast_rows):
    """Partners by label (BSCA's --merge-partners label): every merge takes two entries of one
    training label, whatever their signs, and z keeps that label (a mislabelled z would be
    paired across labels later). A pair of opposite signs becomes the vector of larger |a| with
    a_L + a_S·κ, its best merge on [0, 1] (brute force over h); a pair of one sign is merged
    as by sign."""
    rng = np.random.default_rng(4)
    gamma, budget = 0.5, 6
    st = SVStore(3, budget, 1, "rbf", gamma, maintenance="merge", merge_search=merge_search,
                 partners="label", fast_rows=fast_rows)
    entry = {}                                        # stamp -> (label, coefficient, x)
    next_stamp = 0
    opposite = 0
    for i in range(120):
        label = int(rng.choice([-1, 1]))
        a = rng.choice([-1.0, 1.0]) * rng.uniform(0.1, 2.0)
        x = rng.normal(size=3)
        merges = st.counters()["n_merges"]
        entry[next_stamp] = (label, a, x)
        next_stamp += 1
        st.insert(x, a, origin=i, label=label)
        X, A, origin, stamp = st.export()
        if st.counters()["n_merges"] > merges:
            gone = sorted(set(entry) - set(stamp.tolist()))
            assert len(gone) == 2 and origin[-1] == -1 and stamp[-1] == next_stamp
            (lab_m, a_m, x_m), (lab_n, a_n, x_n) = entry.pop(gone[0]), entry.pop(gone[1])
            assert lab_m == lab_n
            if (a_m >= 0) != (a_n >= 0):
                opposite += 1
                (a_big, x_big), (a_small, x_small) = sorted(
                    [(a_m, x_m), (a_n, x_n)], key=lambda e: -abs(e[0]))
                kappa = rbf(x_big[None], x_small[None], gamma)[0, 0]
                np.testing.assert_array_equal(X[-1], x_big)
                assert A[-1, 0] == pytest.approx(a_big + a_small * kappa, rel=1e-12)
                h = np.linspace(0.0, 1.0, 2001)          # |α_z(h)| is largest at the end
                alpha_z = a_m * kappa ** ((1 - h) ** 2) + a_n * kappa ** (h ** 2)
                assert abs(A[-1, 0]) >= np.abs(alpha_z).max() * (1 - 1e-12)
            entry[next_stamp] = (lab_m, A[-1, 0], X[-1])
            next_stamp += 1
        assert st.n <= budget
    assert st.counters()["n_merges"] > 100 and opposite > 10


def test_merge_fallback_when_smallest_has_no_partner():
    st = SVStore(1, 2, 1, "rbf", 1.0, maintenance="merge")
    for i, a in enumerate([0.1, -1.0, -2.0]):
        st.insert(np.array([float(i)]), a, origin=i)
    _, A, origin, _ = st.export()
    assert list(origin) == [0, -1] and A[0, 0] == 0.1 and A[1, 0] < -2.0


# ---------------------------------------------------------------------------------------------
# Removal and projection
# ---------------------------------------------------------------------------------------------

def test_removal_picks_smallest_then_oldest():
    st = SVStore(2, 3, 1, "rbf", 1.0, maintenance="removal")
    for i, a in enumerate([1.0, -0.5, 2.0, 0.5]):
        st.insert(np.array([i, 0.0]), a, origin=i)
    assert list(st.export()[2]) == [0, 2, 3]        # |−0.5| = |0.5|: the older one goes
    st.insert(np.array([9.0, 0.0]), 3.0, origin=4)
    assert list(st.export()[2]) == [0, 2, 4]


def test_projection_inverse_and_coefficients():
    rng = np.random.default_rng(2)
    gamma, B = 0.4, 6
    st = SVStore(3, B, 2, "rbf", gamma, maintenance="projection")
    for i in range(40):
        x = rng.normal(size=3)
        coef = rng.normal(size=2)
        if st.n == B:
            X0, A0 = st.export()[:2]
            P = np.vstack([X0, x])
            Aall = np.vstack([A0, coef])
            norms = (Aall ** 2).sum(1)
            p = int(np.argmin(norms))
            keep = [j for j in range(B + 1) if j != p]
            K = rbf(P[keep], P[keep], gamma)
            kp = rbf(P[keep], P[p:p + 1], gamma)[:, 0]
            d = np.linalg.lstsq(K, kp, rcond=None)[0]
            expected = Aall[keep] + np.outer(d, Aall[p])
            wd_expected = norms[p] * (1 - kp @ d)
            wd_before = st.counters()["wd_total"]
        st.insert(x, coef, origin=i)
        Xs = st.export()[0][np.argsort(st.slot_order())]
        K = rbf(Xs, Xs, gamma)
        np.testing.assert_allclose(st.inverse(), np.linalg.inv(K), rtol=1e-8,
                                   atol=1e-8 * np.abs(np.linalg.inv(K)).max())
        if i >= B:
            np.testing.assert_allclose(st.export()[1], expected, rtol=1e-8, atol=1e-10)
            assert st.counters()["wd_total"] - wd_before == pytest.approx(wd_expected, rel=1e-7)
    assert st.n == B and st.counters()["n_projections"] == 40 - B


def test_projection_linear_kernel_projects_in_span_points():
    # Linear kernel in 2-D: after two independent SVs every new point is in their span.
    st = SVStore(2, 5, 1, "linear", maintenance="projection")
    pts = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0], [-1.0, 4.0]])
    coefs = [0.5, -1.0, 2.0, 0.25]
    for i, (x, a) in enumerate(zip(pts, coefs)):
        st.insert(x, a, origin=i)
    assert st.n == 2 and st.counters()["n_inspan"] == 2
    X, A = st.export()[:2]
    np.testing.assert_allclose(A[:, 0] @ X, np.asarray(coefs) @ pts, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# BSGD against plain numpy references
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("epochs,class_weight", [(1, (1.0, 1.0)), (3, (1.0, 1.0)),
                                                 (2, (2.0, 0.5))])
def test_bsgd_equals_numpy_pegasos(epochs, class_weight):
    X, y = blobs(60, 2, d=3, seed=4)
    C, gamma = 2.0, 0.5
    seen = {}

    def trace(store, t, s):
        seen.setdefault("s", []).append(s)

    store, res = run_core(X, y, 1, C=C, gamma=gamma, epochs=epochs, class_weight=class_weight,
                          trace=trace)
    assert store.counters()["n_maintenance"] == 0
    ref = pegasos_rbf(X, y, C, gamma, epochs, 3, class_weight)
    got = aggregate(store, res["s"], 60)[:, 0]
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
    # Invariants: s_t = 1/t and |a_j| = w_j nC.
    t = np.arange(1, len(seen["s"]) + 1)
    np.testing.assert_allclose(seen["s"], 1.0 / t, rtol=1e-12)
    _, A, origin, _ = store.export()
    np.testing.assert_allclose(np.abs(A[:, 0]), np.asarray(class_weight)[y[origin]] * 60 * C,
                               rtol=1e-12)


def test_bsgd_norma_equals_numpy():
    X, y = blobs(50, 2, d=3, seed=5)
    store, res = run_core(X, y, 1, C=0.5, gamma=0.5, epochs=2, variant="norma", eta=0.7)
    ref = pegasos_rbf(X, y, 0.5, 0.5, 2, 3, variant="norma", eta=0.7)
    np.testing.assert_allclose(aggregate(store, res["s"], 50)[:, 0], ref, rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("variant", ["pegasos", "norma"])
def test_renormalisation_keeps_decision_values(variant):
    X, y = blobs(80, 2, d=3, seed=6)
    Xt = np.random.default_rng(0).normal(size=(20, 3))
    values = []
    for low in (1e-100, 1.1):                  # 1.1: renormalise after every step
        # No maintenance: with it, rounding-level differences may change a discrete choice
        # (e.g. the exact ties among equal |a_j|), which is not what this oracle is about.
        store, res = run_core(X, y, 1, epochs=2, variant=variant, eta=0.9, renorm_low=low)
        sv, A = store.export()[:2]
        values.append(rbf(Xt, sv, 0.5) @ (A[:, 0] * res["s"]))
        if low > 1:
            assert res["n_renorm"] == res["t"]
    np.testing.assert_allclose(values[1], values[0], rtol=1e-9, atol=1e-9 * np.abs(values[0]).max())


@pytest.mark.parametrize("maintenance", ["removal", "projection", "merge"])
@pytest.mark.parametrize("k", [2, 3])
def test_budget_respected_every_step(maintenance, k):
    X, y = blobs(90, k, d=3, seed=8)
    B = 7

    def trace(store, t, s):
        assert store.n <= B
        if k > 2 and t % 5 == 0:
            A = store.export()[1]
            assert np.all(np.abs(A.sum(1)) <= 1e-12 * max(1.0, np.abs(A).max()))

    store, res = run_core(X, y, 1 if k == 2 else k, budget=B, epochs=2,
                          maintenance=maintenance, trace=trace)
    assert store.n == B and store.counters()["n_maintenance"] > 0


def test_multiclass_equals_numpy_step_by_step():
    X, y = blobs(45, 3, d=3, seed=9, spread=1.5)
    C, gamma, n = 1.5, 0.5, 45
    K = rbf(X, X, gamma)
    w = np.array([1.0, 2.0, 0.5])
    alpha = np.zeros((n, 3))
    rng = Random(3)
    order = np.concatenate([rng.permutation(n) for _ in range(2)])

    def trace(store, t, s):
        crammer_singer_step(alpha, K, y, order[t - 1], t, n * C, w)
        np.testing.assert_allclose(aggregate(store, s, n), alpha, rtol=1e-10,
                                   atol=1e-10 * max(1.0, np.abs(alpha).max()))
        A = store.export()[1]
        assert np.all(np.abs(A.sum(1)) <= 1e-12 * max(1.0, np.abs(A).max()))

    store, res = run_core(X, y, 3, C=C, gamma=gamma, epochs=2, class_weight=w, trace=trace)
    assert res["t"] == 90 and store.counters()["n_maintenance"] == 0


@pytest.mark.parametrize("maintenance", ["removal", "projection", "merge"])
@pytest.mark.parametrize("k", [2, 3])
def test_mp_tracks_norm_and_stays_in_ball(maintenance, k):
    X, y = blobs(60, k, d=3, seed=10)
    U = 3.0
    gamma = 0.5

    def trace(store, t, s):
        if t % 7:
            return
        sv, A = store.export()[:2]
        Q = np.einsum("ir,ij,jr->", A, rbf(sv, sv, gamma), A)
        assert store.Q == pytest.approx(Q, rel=1e-8, abs=1e-10)
        assert s * np.sqrt(max(Q, 0)) <= U * (1 + 1e-9)

    run_core(X, y, 1 if k == 2 else k, gamma=gamma, budget=8, epochs=2, variant="mp", eta=0.5,
             radius=U, maintenance=maintenance, trace=trace)


# ---------------------------------------------------------------------------------------------
# Python entry point
# ---------------------------------------------------------------------------------------------

def problem(k, n=120, seed=11):
    X, y = blobs(n, k, d=4, seed=seed)
    labels, y_index = group_classes(np.array([5.0, -2.0, 7.0, 1.0])[y])
    return sp.csr_matrix(X), y_index, labels


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("maintenance", ["merge", "projection", "removal"])
def test_same_seed_same_model(k, maintenance):
    X, y_index, labels = problem(k)
    p = TrainParams(solver="bsgd", C=4.0, gamma=0.5, budget=10, epochs=2, seed=5,
                    maintenance=maintenance)
    m1, m2 = (train_bsgd(X, y_index, labels, p) for _ in range(2))
    np.testing.assert_array_equal(m1.coef, m2.coef)
    np.testing.assert_array_equal(m1.sv.toarray(), m2.sv.toarray())
    assert m1.params == m2.params and m1.multiclass == ("binary" if k == 2 else "argmax")
    assert m1.n_sv == 10 and m1.coef.shape[1] == (1 if k == 2 else k)
    p.seed = 6
    m3 = train_bsgd(X, y_index, labels, p)
    assert not np.array_equal(m1.coef, m3.coef)
    acc = (m1.predict(X) == labels[y_index]).mean()
    assert acc > 0.8
    info = m1.train_info
    assert info["n_steps"] == 240 and info["n_sv"] == 10 and info["n_maintenance"] > 0
    assert set(info) >= {"n_merges", "maintenance_seconds", "train_seconds"}


def test_model_decision_equals_scaled_store():
    X, y_index, labels = problem(2)
    p = TrainParams(solver="bsgd", C=4.0, gamma=0.5, budget=12, epochs=2, seed=2,
                    polish="none")
    model = train_bsgd(X, y_index, labels, p)
    sv, coef, origin, info = fit_bsgd(X, y_index, 2, p, class_weight=np.ones(2))
    f = rbf(X.toarray(), sv, 0.5) @ coef[:, 0]
    np.testing.assert_allclose(model.decision_function(X)[:, 0], f, rtol=1e-10, atol=1e-12)
    assert model.params["budget"] == 12 and model.params["maintenance"] == "merge"


def test_lookup_search_available_and_gamma_default():
    # lookup-h / lookup-wd arrived with issue 4 (tests/test_bsca.py has their oracles)
    X, y_index, labels = problem(2)
    p = TrainParams(solver="bsgd", merge_search="lookup-wd", budget=5)
    assert train_bsgd(X, y_index, labels, p).n_sv <= 5
    p = TrainParams(solver="bsgd", budget=5, epochs=1)
    assert train_bsgd(X, y_index, labels, p).kernel.gamma == 0.25


@pytest.mark.parametrize("kernel", ["linear", "poly"])
def test_other_kernels_with_removal_and_projection(kernel):
    X, y_index, labels = problem(2)
    for maintenance in ("removal", "projection"):
        p = TrainParams(solver="bsgd", kernel=kernel, gamma=0.2, coef0=1.0, degree=2,
                        budget=8, epochs=2, maintenance=maintenance)
        model = train_bsgd(X, y_index, labels, p)
        assert model.n_sv <= 8 and np.isfinite(model.coef).all()


def test_callback_and_interrupt():
    X, y_index, labels = problem(2, n=300)
    calls = []
    p = TrainParams(solver="bsgd", gamma=0.5, budget=20, epochs=70)   # 21,000 steps
    train_bsgd(X, y_index, labels, p, callback=lambda step, info: calls.append(step))
    assert calls == sorted(calls) and calls[-1] == 21000

    def stop(step, info):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_bsgd(X, y_index, labels, p, callback=stop)


def test_progress_and_ctrl_c_checks_are_timed():
    # A step costs microseconds (binary, small budget) to milliseconds (thousands of classes):
    # checks every 10⁴ steps left Ctrl-C waiting 20-80 s on multi-class data. Steps slowed to
    # ≥ 2 ms each (the trace sleeps) must still see the check, and the progress report made
    # with it, about every 0.1 s: 300 such steps take ≥ 0.6 s, so ≥ 5 reports.
    X, y_index, labels = problem(2, n=300)
    p = TrainParams(solver="bsgd", gamma=0.5, budget=20, epochs=1, polish="none")
    calls = []
    fit_bsgd(X, y_index, 2, p, callback=lambda step, info: calls.append(step),
             class_weight=np.ones(2), trace=lambda t, s: time.sleep(0.002))
    assert len(calls) >= 5 and calls == sorted(set(calls)) and 0 < calls[0] and calls[-1] <= 300


def test_must_show_a9a_seed1(repo_data):
    from budgetsvm.io import read_problem
    X, y = read_problem(repo_data / "a9a.xz")
    Xt, yt = read_problem(repo_data / "a9a.t.xz", n_features=X.shape[1])
    labels, y_index = group_classes(y)
    p = TrainParams(solver="bsgd", C=32, gamma=0.0078125, budget=500, epochs=5, seed=1)
    model = train_bsgd(X, y_index, labels, p)
    assert (model.predict(Xt) == yt).mean() >= 0.815      # measured 0.8358


def test_must_show_dna(shared_data):
    from budgetsvm.io import read_problem
    X, y = read_problem(shared_data("dna.scale.xz"))
    Xt, yt = read_problem(shared_data("dna.scale.t.xz"), n_features=X.shape[1])
    labels, y_index = group_classes(y)
    for seed in (1, 2, 3):
        p = TrainParams(solver="bsgd", C=8, gamma=0.03125, budget=200, epochs=5, seed=seed)
        model = train_bsgd(X, y_index, labels, p)
        assert model.multiclass == "argmax"
        assert (model.predict(Xt) == yt).mean() >= 0.93     # measured 0.938-0.944


def test_projection_inverse_stays_accurate_on_near_duplicates():
    # A smooth kernel on few distinct binary points (as in a9a): without a sensible in-span
    # threshold cond(K) explodes and G = K⁻¹ drifts away from inv(K).
    rng = np.random.default_rng(12)
    base = (rng.random((25, 6)) < 0.4).astype(float)
    st = SVStore(6, 40, 1, "rbf", 2 ** -3, maintenance="projection")
    for i in range(400):
        x = base[rng.integers(25)] + 1e-4 * rng.normal(size=6) * (rng.random() < 0.5)
        st.insert(x, rng.choice([-1.0, 1.0]), origin=i)
    Xs = st.export()[0][np.argsort(st.slot_order())]
    K = rbf(Xs, Xs, 2 ** -3)
    assert np.abs(st.inverse() @ K - np.eye(len(K))).max() < 1e-6
    assert st.counters()["n_inspan"] > 0


@pytest.mark.parametrize("method", ["gss", "gss-precise", "final"])
@pytest.mark.parametrize("weights", [(1.0, 1.0), (0.4, 1.0), (1.0, 0.3)])
def test_merging_far_apart_vectors_keeps_the_larger_one(method, weights):
    # κ = exp(−γ d²) with γ d² = 22,500: κ^(1/4) underflows, so every golden-section probe is 0.
    # The κ → 0 limit of the merge (the weight degradation of any h is then α_m² + α_n² − α_z²)
    # keeps the vector of larger weight with its own coefficient: WD = the smaller one squared,
    # not α_m² + α_n² (both lost, α_z = 0).
    am, an = weights
    store = SVStore(2, 4, 1, "rbf", 1.0, 0.0, 3, "removal", "gss")
    store.insert(np.array([0.0, 0.0]), am)
    store.insert(np.array([150.0, 0.0]), an)
    h, az, wd = store.evaluate_merge(0, 1, method)
    assert wd == pytest.approx(min(am, an) ** 2, rel=1e-12)
    assert az == pytest.approx(max(am, an), rel=1e-12)
    assert h == (1.0 if am >= an else 0.0)


# ---------------------------------------------------------------------------------------------
# The vectorised exp of the robust default's rbf rows (budgetsvm/_kernels.pxd, exp_inplace)
# ---------------------------------------------------------------------------------------------

def test_fast_rows_rows_are_within_3_ulp_of_libm_exp():
    # Stored vectors on a line at distances whose −γ d² spans [−760, 0]: the same arguments
    # through libm's exp (fast_rows off) and through exp_inplace (on).
    gamma = 0.5
    dist = np.concatenate([[0.0, 1e-9, 1e-4], np.sqrt(np.linspace(0.0, 1520.0, 997))])
    S = np.zeros((dist.size, 2))
    S[:, 0] = dist
    rows = []
    for fast in (False, True):
        store = SVStore(2, dist.size, 1, "rbf", gamma, fast_rows=fast)
        for i, s in enumerate(S):
            store.insert(s, 1.0, i)
        rows.append(store.kernel_row(np.zeros(2)))
    exact, fast = rows
    assert fast[0] == 1.0                                   # d² = 0 gives exactly 1
    normal = exact > 1e-306
    ulps = np.abs(fast - exact)[normal] / np.spacing(exact[normal])
    assert ulps.max() <= 3.0
    # below e^-708 the fast rows are 0, where exp itself is at most ~1e-307
    assert np.all(fast[~normal] <= exact[~normal] + 1e-306)
    assert np.all(fast[gamma * dist ** 2 > 708.0] == 0.0)


def test_robust_default_uses_fast_rows_papers_mode_libm():
    # new_store (what bsgd and bsca train with) gives the fast rows to the robust default and
    # libm's to the papers' mode (--polish none), which must reproduce their models bit for bit
    from budgetsvm.budgeted import new_store
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3)) * 2.0
    x = rng.normal(size=3)

    def row(store):
        for i, s in enumerate(X):
            store.insert(s, 1.0, i)
        return store.kernel_row(x)
    rows = {polish: row(new_store(TrainParams(polish=polish, budget=80), 3, 1, 0.37))
            for polish in ("refit", "none")}
    fast = row(SVStore(3, 80, 1, "rbf", 0.37, fast_rows=True))
    libm = row(SVStore(3, 80, 1, "rbf", 0.37, fast_rows=False))
    assert np.any(fast != libm)                  # the two exps differ somewhere on these rows
    np.testing.assert_array_equal(rows["refit"], fast)
    np.testing.assert_array_equal(rows["none"], libm)
    np.testing.assert_allclose(fast, rbf(x[None, :], X, 0.37)[0], rtol=1e-13)


@pytest.mark.parametrize("n_sv", [5, 8, 61])          # below one lane block, exactly one, a tail
def test_lane_sums_of_the_decision_value(n_sv):
    # store_decision = Σ_j A_j k(x, x̃_j): with fast_rows the products summed in 8 interleaved
    # lanes, added pairwise, then the tail (the order is part of the definition: same bits on
    # every machine); without, in order. Replayed here operation by operation.
    from budgetsvm._bsca import store_decision
    rng = np.random.default_rng(n_sv)
    S, x = rng.normal(size=(n_sv, 4)), rng.normal(size=(1, 4))
    coef = rng.normal(size=n_sv)
    xs = sp.csr_matrix(x)
    values = {}
    for fast in (False, True):
        store = SVStore(4, n_sv, 1, "linear", fast_rows=fast)      # linear: krow is exact dots
        for i in range(n_sv):
            store.insert(S[i], coef[i], i)
        _, A, _, _ = store.export()
        krow = store.kernel_row(x[0])
        values[fast] = store_decision(store, xs.data, xs.indices.astype(np.int32),
                                      xs.indptr.astype(np.int64), (x * x).sum(1))[0]
    prod = A[:, 0] * krow
    in_order = 0.0
    for p in prod:
        in_order += p
    full = (n_sv // 8) * 8
    lanes = np.zeros(8)
    for start in range(0, full, 8):
        lanes = lanes + prod[start:start + 8]
    tail = 0.0
    for p in prod[full:]:
        tail += p
    lanes_sum = (((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
                 ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))) + tail
    assert values[False] == in_order
    assert values[True] == lanes_sum


@pytest.mark.parametrize("n_sv", [5, 16, 37, 61])     # below one tile, exactly one, tails
def test_dot_products_with_the_svs_are_summed_in_the_rows_order(n_sv):
    # sparse_dot_columns (budgetsvm/_csr.pxd) computes 16 SVs at a time, but every x·x̃_j is
    # still 0 + x_c1 x̃_j,c1 + x_c2 x̃_j,c2 + ... over x's nonzeros in column order: replayed
    # here with Python floats, bit for bit (linear kernel: the kernel row is the dot products)
    rng = np.random.default_rng(n_sv)
    S = rng.normal(size=(n_sv, 7))
    x = rng.normal(size=7) * (rng.random(7) < 0.7)
    store = SVStore(7, n_sv, 1, "linear")
    for i in range(n_sv):
        store.insert(S[i], 1.0, i)
    X = store.export()[0]                     # the stored SVs in slot order
    expected = []
    for sv in X:
        dot = 0.0
        for c in np.flatnonzero(x):
            dot += float(x[c]) * float(sv[c])
        expected.append(dot)
    assert store.kernel_row(x).tolist() == expected


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("maintenance", ["merge", "removal", "projection"])
@pytest.mark.parametrize("polish", ["refit", "none"])
def test_sparsity_patterns_give_the_dense_store_s_model(monkeypatch, solver, k, maintenance,
                                                        polish):
    # Wide data keep each slot's sparsity pattern (budgetsvm/_budget.pxd, Store.pat) so that
    # insertion and maintenance cost O(nnz) instead of O(d): the same arithmetic, so the model
    # must be the dense store's to the last bit, with coalescing (refit) and without (none),
    # merges of merged points and slot moves included. Sparse rows over 40 features, a budget
    # of 8 that 120 rows × 3 epochs keep at work.
    from budgetsvm import _budget
    from budgetsvm.train import train
    rng = np.random.default_rng(3)
    X, c = blobs(120, k, d=40, seed=11, zeros=0.0)
    X[rng.random(X.shape) < 0.8] = 0.0
    y = np.array([3.0, -1.0, 8.0])[c]
    p = TrainParams(solver=solver, gamma=0.05, budget=8, epochs=3, maintenance=maintenance,
                    polish=polish, n_threads=1)
    models = []
    for patterns_from in (10**9, 0):
        monkeypatch.setattr(_budget, "PATTERNS_FROM", patterns_from)
        model = train(sp.csr_matrix(X), y, p)
        models.append((model.sv.toarray().tobytes(), model.coef.tobytes(), model.rho.tobytes()))
    assert models[0] == models[1]
    assert p.effective_maintenance() != "merge" or model.train_info["n_merges"] > 0
