"""Adaptive coordinate frequencies (ACF/AVSF, _dcd.pyx acf_solve), docs/ALGORITHMS.md §4.4, §7.5.

Two modes: shrink="none" is Algorithms 3–5 of Glasmachers & Dogan (2013) as published; shrink="on"
(the default of -s acf) adds LIBLINEAR-style shrinking of rows stuck at a bound, with un-shrinking
and a verifying uniform sweep before it stops, and draws its schedules by systematic sampling.

Oracles: the baseline dual CD solver and LIBLINEAR (liblinear-official) for the optimum, a generic
QP solve on tiny problems, numpy recomputations of w, the projected gradients and the
objectives, a plain-Python replay of Algorithms 3–5 (the paper mode must match it bit for bit),
and exact statistics of the schedules (with negative controls that a wrong schedule must fail).
The mechanics (preferences, Σp, Δ ≥ 0, first sweep, canstop reset, shrinking) are checked on the
per-sweep trace the solver records for tests.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm import _dcd
from budgetsvm.io import read_problem
from budgetsvm.labels import group_classes
from budgetsvm.dcd import fit_linear, info_lines
from budgetsvm.params import TrainParams
from reference.data import pm1, repo_data, shared_data_path
from reference.objectives import linear_primal, projected_gradient, rel
from reference.peers import liblinear_objectives, liblinear_train, liblinear_weights
from reference.qp import linear_svm_primal
from reference.solvers import acf_paper

PMIN, PMAX = 0.05, 20.0
MODES = ["on", "none"]


def acf(X, y, C, **kw):
    X = sp.csr_matrix(X)
    C_i = np.broadcast_to(np.asarray(C, dtype=np.float64), (X.shape[0],)).copy()
    return _dcd.acf_solve(X.data, X.indices, X.indptr, y, C_i, X.shape[1], **kw), C_i


@pytest.fixture(scope="module")
def heart():
    return read_problem(repo_data("heart_scale.xz"))


@pytest.fixture(scope="module")
def a9a():
    return read_problem(repo_data("a9a.xz"))


def params(solver, **kw):
    return TrainParams(**{"solver": solver, **kw})


# ---------------------------------------------------------------------------------------------
# 1. The same optimum as the baseline and LIBLINEAR (§7.5)
# ---------------------------------------------------------------------------------------------

def compare_three(X, y, C, eps):
    """ACF with and without shrinking, the baseline and LIBLINEAR -s 3 on the same (binary or
    one-vs-rest) problem."""
    labels, y_index = group_classes(y)
    ours = {mode: fit_linear(X, y_index, labels, params("acf", C=C, eps=eps, max_iter=0,
                                                          acf_shrink=mode))[3] for mode in MODES}
    _, _, _, base = fit_linear(X, y_index, labels, params("dcd", C=C, eps=eps, max_iter=0))
    model, out = liblinear_train(y, X, f"-s 3 -c {C} -e {eps} -B -1")
    objectives = liblinear_objectives(out)      # asserts LIBLINEAR stayed inside its cap
    W_lib = liblinear_weights(model)
    assert list(model.get_labels()) == list(labels)
    assert len(ours["on"]) == len(ours["none"]) == len(base) == len(objectives) == W_lib.shape[0]
    C_i = np.full(X.shape[0], C)
    for r, (a, p, b) in enumerate(zip(ours["on"], ours["none"], base)):
        assert not a["max_iter_reached"] and not p["max_iter_reached"]
        assert not b["max_iter_reached"]
        lib_primal = linear_primal(X, pm1(y, labels[r]), C_i, W_lib[r])
        # ACF with and without shrinking and the baseline reach the same optimum ...
        assert rel(a["primal_objective"], p["primal_objective"]) < 1e-3
        for sub in (a, p):
            assert rel(sub["primal_objective"], b["primal_objective"]) < 1e-3
        # ... and all agree with LIBLINEAR's printed (dual) objective and its weights' primal
        for sub in (a, p, b):
            assert rel(sub["dual_objective"], objectives[r]) < 1e-3
            assert rel(sub["primal_objective"], lib_primal) < 1e-3
    return ours["on"], base


def test_a9a_same_optimum_as_baseline_and_liblinear(a9a):
    X, y = a9a
    compare_three(X, y, C=0.1, eps=0.01)


def test_w8a_same_optimum_as_baseline_and_liblinear():
    X, y = read_problem(shared_data_path("w8a.xz"))
    compare_three(X, y, C=0.1, eps=0.01)


def test_sector_same_optimum_as_baseline_and_liblinear():
    # eps 0.002: at 0.01 (and 0.005) the primal values of the stopping rules (max|PG| < eps
    # against M − m ≤ eps) differ by up to 1e-3 relative on a few of the 105 sub-problems
    X, y = read_problem(shared_data_path("sector.scale.xz"))
    ours, _ = compare_three(X, y, C=1.0, eps=0.002)
    assert len(ours) == 105


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("data,C", [("heart", 0.1), ("heart", 1.0), ("a9a", 0.1)])
def test_same_primal_as_baseline_at_eps_1e3(heart, a9a, data, C, mode):
    # §7.5 item 4: baseline (shrinking) and ACF agree to 1e-4 relative at ε = 1e-3
    X, y = heart if data == "heart" else a9a
    yb = pm1(y, 1.0)
    ours, C_i = acf(X, yb, C, eps=1e-3, max_iter=0, shrink=mode)
    base = _dcd.dcd_solve(X.data, X.indices, X.indptr, yb, C_i, X.shape[1], eps=1e-3,
                          max_iter=0)
    assert not ours.max_iter_reached and not base.max_iter_reached
    assert rel(ours.primal_objective, base.primal_objective) < 1e-4


# ---------------------------------------------------------------------------------------------
# 2. Maintained w, objectives and the stopping guarantee
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loss,eps", [("l1", 0.1), ("l1", 0.01), ("l1", 0.001), ("l2", 0.01)])
def test_w_objectives_and_final_projected_gradient(a9a, loss, eps, mode):
    X, y = a9a
    yb = pm1(y, 1.0)
    res, C_i = acf(X, yb, 0.1, eps=eps, max_iter=0, loss=loss, shrink=mode)
    assert not res.max_iter_reached and res.n_iter >= 2 and res.n_updates > 0
    # w = X.T @ (alpha * y)
    w = X.T @ (res.alpha * yb)
    assert np.abs(res.w - w).max() <= 1e-10 * np.abs(w).max()
    D = 0.5 / C_i if loss == "l2" else 0.0
    dual = 0.5 * w @ w - res.alpha.sum() + 0.5 * np.sum(D * res.alpha ** 2)
    assert rel(res.dual_objective, dual) < 1e-10
    assert rel(res.primal_objective, linear_primal(X, yb, C_i, w, loss)) < 1e-10
    # One numpy sweep without updates after termination. Not guaranteed in theory: the
    # stopping sweep measures each |PG_i| before its own step, and later steps of that sweep
    # move w again; those steps are all below eps, so the drift is small in practice.
    pg = projected_gradient(X, yb, C_i, res.alpha, res.w, loss)
    assert np.abs(pg).max() <= eps * (1 + 1e-9)


@pytest.mark.parametrize("mode", MODES)
def test_max_iter_guard(a9a, mode):
    X, y = a9a
    res, _ = acf(X, pm1(y, 1.0), 1.0, eps=1e-6, max_iter=3, shrink=mode)
    assert res.n_iter == 3 and res.max_iter_reached
    assert 0 < res.n_updates <= 3 * X.shape[0]
    labels, y_index = group_classes(y)
    _, _, _, info = fit_linear(X, y_index, labels, params("acf", C=1.0, eps=1e-6, max_iter=3))
    assert info[0]["max_iter_reached"]
    assert "WARNING: reaching max number of iterations" in info_lines(info)


# ---------------------------------------------------------------------------------------------
# 3. The schedule of Algorithm 4
# ---------------------------------------------------------------------------------------------

DRAWS = 10_000


def multiplicity_ok(schedules, p):
    """Mean count of every index within 4 standard errors of n·p_i/Σp (exact where the count
    never varies); schedules: (draws, n) integer array."""
    draws, n = schedules.shape
    counts = np.zeros((draws, n))
    np.add.at(counts, (np.repeat(np.arange(draws), n), schedules.ravel()), 1)
    expected = n * p / p.sum()
    mean = counts.mean(axis=0)
    se = counts.std(axis=0, ddof=1) / np.sqrt(draws)
    return bool(np.all(np.abs(mean - expected) <= np.maximum(4 * se, 1e-9)))


def schedule_without_rescaling(p, rng, draws):
    # wrong: m_i = p_i·n/Σp with randomised rounding and no use of the remaining slots; the
    # list is cut or padded (with the last index) to length n
    n = len(p)
    out = np.empty((draws, n), dtype=np.int64)
    m = n * p / p.sum()
    for r in range(draws):
        k = np.floor(m).astype(int) + (rng.random(n) < m - np.floor(m))
        s = np.repeat(np.arange(n), k)[:n]
        out[r] = np.concatenate([s, np.full(n - len(s), n - 1)])
    return out


def schedule_with_stale_total(p, rng, draws):
    # wrong: forgets to subtract p_i from N, so later indices get too little and the last one
    # takes the remainder
    n = len(p)
    out = np.empty((draws, n), dtype=np.int64)
    for r in range(draws):
        s, j = [], 0
        for i in range(n):
            left = n - j
            mi = left if i == n - 1 else min(left, p[i] * left / p.sum())
            k = int(mi) + (rng.random() < mi - int(mi))
            s += [i] * k
            j += k
        out[r] = s
    return out


@pytest.fixture(scope="module")
def fixed_p():
    rng = np.random.default_rng(3)
    return np.exp(rng.uniform(np.log(PMIN), np.log(PMAX), size=60))


def test_schedule_multiplicity(fixed_p):
    s = _dcd.acf_schedule(fixed_p, seed=11, n_draws=DRAWS)
    assert s.shape == (DRAWS, len(fixed_p))                       # length n, always
    assert s.min() >= 0 and s.max() < len(fixed_p)
    assert multiplicity_ok(s, fixed_p)
    # shuffled: the first slot is not always the lowest index present
    assert len(np.unique(s[:, 0])) > 10


def test_schedule_negative_controls(fixed_p):
    rng = np.random.default_rng(4)
    uniform = np.array([rng.permutation(len(fixed_p)) for _ in range(DRAWS)])
    assert not multiplicity_ok(uniform, fixed_p)
    assert not multiplicity_ok(schedule_without_rescaling(fixed_p, rng, DRAWS), fixed_p)
    assert not multiplicity_ok(schedule_with_stale_total(fixed_p, rng, 300), fixed_p)
    # and the checker accepts the exact expectation of a correct schedule
    assert multiplicity_ok(_dcd.acf_schedule(fixed_p, seed=12, n_draws=DRAWS), fixed_p)


@pytest.mark.parametrize("p", [[1.0], [PMIN, PMAX], [PMAX, PMIN, PMIN, PMIN],
                               [1.0, 1.0, 1.0, 1.0, 1.0]])
def test_schedule_edge_cases(p):
    p = np.asarray(p)
    s = _dcd.acf_schedule(p, seed=5, n_draws=DRAWS)
    assert s.shape == (DRAWS, len(p))
    assert multiplicity_ok(s, p)
    if np.all(p == 1.0):
        # p ≡ 1: every draw is a permutation
        assert np.all(np.sort(s, axis=1) == np.arange(len(p)))


def test_schedule_seeded():
    p = np.linspace(0.1, 3.0, 25)
    for systematic in (False, True):
        a = _dcd.acf_schedule(p, seed=7, n_draws=5, systematic=systematic)
        assert np.array_equal(a, _dcd.acf_schedule(p, seed=7, n_draws=5, systematic=systematic))
        assert not np.array_equal(a, _dcd.acf_schedule(p, seed=8, n_draws=5,
                                                      systematic=systematic))


@pytest.mark.parametrize("p", ["fixed", [1.0], [PMIN, PMAX], [PMAX, PMIN, PMIN, PMIN],
                               [1.0, 1.0, 1.0, 1.0, 1.0]])
def test_systematic_schedule(fixed_p, p):
    # the shrinking mode's schedule: the same expectation n·p_i/Σp as Algorithm 4, and every
    # count is the floor or the ceiling of it (systematic sampling), unlike Algorithm 4's
    p = fixed_p if isinstance(p, str) else np.asarray(p)
    n = len(p)
    s = _dcd.acf_schedule(p, seed=13, n_draws=DRAWS, systematic=True)
    assert s.shape == (DRAWS, n) and s.min() >= 0 and s.max() < n
    assert multiplicity_ok(s, p)
    counts = np.zeros((DRAWS, n))
    np.add.at(counts, (np.repeat(np.arange(DRAWS), n), s.ravel()), 1)
    expected = n * p / p.sum()
    assert np.all(counts >= np.floor(expected - 1e-9))
    assert np.all(counts <= np.ceil(expected + 1e-9))
    if n > 10:
        assert len(np.unique(s[:, 0])) > 10                          # shuffled
        # negative control: Algorithm 4's counts are not confined to floor/ceiling
        a4 = _dcd.acf_schedule(p, seed=13, n_draws=DRAWS)
        c4 = np.zeros((DRAWS, n))
        np.add.at(c4, (np.repeat(np.arange(DRAWS), n), a4.ravel()), 1)
        assert np.any((c4 < np.floor(expected - 1e-9)) | (c4 > np.ceil(expected + 1e-9)))


def test_preferences_from_their_logarithms():
    # the shrinking mode keeps log p and takes p = exp(log p) in one vectorised pass per sweep:
    # within 3 ulp of exp, exactly p_min / p_max at (and beyond) the clipped logarithms, exactly
    # 1 at log p = 0, and NaN for the rows never visited
    pmin, pmax = 0.1, 10.0
    inner = np.linspace(np.log(pmin), np.log(pmax), 2001)[1:-1]
    logp = np.concatenate([inner, [0.0, -0.0, np.log(pmin), np.log(pmax), np.log(pmin) - 1.0,
                                   np.log(pmax) + 1.0, np.nan]])
    order = np.arange(logp.size - 1)
    p = _dcd._preference_array(logp, order, pmin, pmax)
    exact = np.exp(inner)
    ulps = np.abs(p[:inner.size] - exact) / np.spacing(exact)
    assert ulps.max() <= 3.0 and np.all((p[:inner.size] >= pmin) & (p[:inner.size] <= pmax))
    assert list(p[inner.size:-1]) == [1.0, 1.0, pmin, pmax, pmin, pmax]
    assert np.isnan(p[-1])


# ---------------------------------------------------------------------------------------------
# 4. Mechanics of Algorithms 3 and 5, on the per-sweep trace
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss,C", [("l1", 1.0), ("l1", 10.0), ("l2", 1.0)])
def test_trace_mechanics(heart, loss, C):
    # the paper's algorithm (no shrinking)
    X, y = heart
    yb = pm1(y, 1.0)
    n = X.shape[0]
    trace = []
    res, _ = acf(X, yb, C, eps=1e-3, max_iter=0, loss=loss, trace=trace, seed=2, shrink="none")
    assert not res.max_iter_reached and len(trace) == res.n_iter
    rows = np.arange(n)
    assert trace[0]["first"] and not any(t["first"] for t in trace[1:])
    # the first sweep is a permutation (p ≡ 1)
    assert np.array_equal(np.sort(trace[0]["schedule"]), rows)
    assert np.all(trace[0]["p_start"] == 1.0)
    adapted = False
    for k, t in enumerate(trace):
        assert len(t["schedule"]) == n                                   # length n, always
        assert np.all((t["p_end"] >= PMIN) & (t["p_end"] <= PMAX))       # p ∈ [p_min, p_max]
        assert abs(t["P"] - t["p_end"].sum()) <= 1e-9 * t["p_end"].sum()  # running P = Σp
        assert t["min_delta"] >= 0.0                                     # every step gains
        adapted |= bool(np.any(t["p_end"] != 1.0))
        if t["reset"]:
            # a canstop reset is followed by a uniform sweep: p ≡ 1 and a permutation
            nxt = trace[k + 1]
            assert t["v"] < 1e-3
            assert np.all(nxt["p_start"] == 1.0)
            assert np.array_equal(np.sort(nxt["schedule"]), rows)
    assert adapted
    assert res.n_unshrink == sum(t["reset"] for t in trace) >= 1
    # stopping is accepted only after a uniform sweep (the first one, or one after a reset)
    last = trace[-1]
    assert last["v"] < 1e-3 and not last["reset"]
    assert len(trace) == 1 or trace[-2]["reset"]
    assert np.all(last["p_start"] == 1.0)
    assert np.array_equal(res.preferences, last["p_end"])
    # sweeps that did not meet the test cleared canstop: no reset right after them
    for k in range(1, len(trace)):
        if trace[k - 1]["v"] >= 1e-3:
            assert not trace[k]["reset"] or trace[k]["v"] < 1e-3


def stuck_problem():
    # Two clusters near the margin plus far, correctly classified points (α stays 0) and far
    # mislabelled points (L1: α stays at C).
    rng = np.random.default_rng(8)
    near = np.vstack([rng.normal([1, 0], 0.5, size=(30, 2)),
                      rng.normal([-1, 0], 0.5, size=(30, 2))])
    far_ok = np.array([[25.0, 1.0], [-25.0, 1.0], [30.0, -2.0], [-30.0, 0.0]])
    far_bad = np.array([[20.0, 0.0], [-20.0, 0.0]])
    X = sp.csr_matrix(np.vstack([near, far_ok, far_bad]))
    y = np.concatenate([np.ones(30), -np.ones(30), [1, -1, 1, -1], [-1, 1]])
    return X, y, np.arange(60, 64), np.arange(64, 66)


def test_stuck_variables_decay_to_pmin():
    # The paper's algorithm, never stopping: the stuck rows' preferences reach p_min (every
    # visit gains Δ = 0 and multiplies p by exp(−c)).
    X, y, ok, bad = stuck_problem()
    res, C_i = acf(X, y, 1.0, eps=1e-300, max_iter=400, seed=4, shrink="none")
    assert res.max_iter_reached
    assert np.all(res.alpha[ok] == 0.0) and np.all(res.alpha[bad] == C_i[bad])
    np.testing.assert_array_equal(res.preferences[ok], PMIN)
    np.testing.assert_array_equal(res.preferences[bad], PMIN)


def test_stuck_variables_are_shrunk():
    # With shrinking the same rows leave the active set instead: each is shrunk at its bound,
    # pushing against it, within a few sweeps, and afterwards only the checking sweeps that
    # follow an un-shrink visit it again, each dropping it at once (the run never meets eps).
    X, y, ok, bad = stuck_problem()
    trace = []
    res, C_i = acf(X, y, 1.0, eps=1e-300, max_iter=400, seed=4, trace=trace)
    assert res.max_iter_reached
    w = X.T @ (res.alpha * y)
    g = 1.0 - y * (X @ w)
    for rows, sign in ((ok, -1.0), (bad, 1.0)):
        for i in rows:
            bound = 0.0 if sign < 0 else C_i[i]
            when = next(k for k, t in enumerate(trace) if i in t["shrunk"])
            assert when < 20 and trace[when]["alpha"][i] == bound
            for k in range(when + 1, len(trace)):
                if i in trace[k]["schedule"]:
                    assert trace[k - 1]["reset"] and i in trace[k]["shrunk"]
            assert res.alpha[i] == bound and sign * g[i] > 0      # still pushing at the end


@pytest.mark.parametrize("loss,C", [("l1", 1.0), ("l1", 10.0), ("l2", 1.0)])
def test_trace_mechanics_with_shrinking(heart, loss, C):
    X, y = heart
    yb = pm1(y, 1.0)
    n = X.shape[0]
    rows = np.arange(n)
    trace = []
    res, C_i = acf(X, yb, C, eps=1e-3, max_iter=0, loss=loss, trace=trace, seed=2)
    assert not res.max_iter_reached and len(trace) == res.n_iter
    U = C_i if loss == "l1" else np.full(n, np.inf)
    # the first sweep: a permutation of all rows, nothing shrunk (no threshold yet)
    assert trace[0]["first"] and np.array_equal(np.sort(trace[0]["schedule"]), rows)
    assert trace[0]["limit"] == np.inf and len(trace[0]["shrunk"]) == 0
    shrunk_any = False
    for k, t in enumerate(trace):
        active = t["active"]
        # a sweep visits only active rows, as many steps as there are active rows
        assert len(t["schedule"]) == len(active) and np.all(np.isin(t["schedule"], active))
        assert np.all(np.isin(t["shrunk"], active))
        assert np.all((t["p_end"] >= PMIN) & (t["p_end"] <= PMAX))
        assert abs(t["P"] - t["p_start"][active].sum()) <= 1e-9 * max(1.0, t["P"])
        assert t["min_delta"] >= 0.0
        # a shrunk row sits at a bound (and keeps it while shrunk)
        for i in t["shrunk"]:
            assert t["alpha"][i] == 0.0 or t["alpha"][i] == U[i]
            shrunk_any = True
        if k > 0:
            prev = trace[k - 1]
            if prev["reset"]:
                # un-shrunk: all rows, p ≡ 1, a permutation that only measures: no step, no
                # change of p; the rows it drops push against their bound by more than the
                # threshold of the sweep before the reset
                assert np.array_equal(active, rows) and np.all(t["p_start"] == 1.0)
                assert np.array_equal(np.sort(t["schedule"]), rows)
                assert np.array_equal(t["alpha"], prev["alpha"])
                assert np.array_equal(t["p_end"], t["p_start"])
                w = X.T @ (t["alpha"] * yb)
                g = 1.0 - yb * (X @ w) - (t["alpha"] / (2 * C_i) if loss == "l2" else 0.0)
                dropped = t["shrunk"]
                assert np.all(((t["alpha"][dropped] == 0) & (g[dropped] < -prev["limit"]))
                              | ((t["alpha"][dropped] == U[dropped])
                                 & (g[dropped] > prev["limit"])))
            else:
                # the threshold is half the largest violation of the previous sweep
                assert t["limit"] == 0.5 * prev["v"]
                remaining = np.setdiff1d(prev["active"], prev["shrunk"])
                assert np.array_equal(active, remaining)
        if t["reset"]:
            assert t["v"] < 1e-3
    assert shrunk_any
    # stop only after a sweep with p ≡ 1 over all rows that met the test
    last = trace[-1]
    assert last["v"] < 1e-3 and not last["reset"]
    assert np.array_equal(last["active"], rows) and np.all(last["p_start"] == 1.0)
    assert len(trace) == 1 or trace[-2]["reset"]
    assert res.n_unshrink == sum(t["reset"] for t in trace)
    assert np.array_equal(res.preferences, last["p_end"])


def test_wrong_shrinking_is_repaired():
    # A tiny random problem on which the shrinking rule removes a row that the optimum needs:
    # row 11 is shrunk at a bound, and its α moves again after the verifying sweep un-shrinks
    # it. The final solution is still the QP optimum and meets the stopping test on every row.
    rng = np.random.default_rng(1)
    n, d = 40, 3
    X = sp.csr_matrix(rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.8))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    for C, eps in ((1.0, 1e-8), (10.0, 1e-8), (1.0, 1e-3)):
        trace = []
        res, C_i = acf(X, y, C, eps=eps, max_iter=0, trace=trace, seed=1)
        assert not res.max_iter_reached and res.n_unshrink >= 1
        wrong = {int(i) for t in trace for i in t["shrunk"] if res.alpha[i] != t["alpha"][i]}
        assert 11 in wrong                         # a decision that had to be undone
        pg = projected_gradient(X, y, C_i, res.alpha, res.w)
        assert np.abs(pg).max() <= eps * (1 + 1e-9)
        if eps == 1e-8:
            w, fun = linear_svm_primal(X, y, C_i, "l1")
            np.testing.assert_allclose(res.w, w, rtol=0, atol=1e-6 * max(1, np.abs(w).max()))
            assert abs(res.primal_objective - fun) <= 1e-6 * max(1, fun)
        none, _ = acf(X, y, C, eps=eps, max_iter=0, seed=1, shrink="none")
        assert rel(res.primal_objective, none.primal_objective) < 1e-3


@pytest.mark.parametrize("loss,C,eps,seed", [("l1", 1.0, 1e-3, 3), ("l2", 1.0, 1e-3, 5),
                                             ("l1", 0.1, 0.01, 7)])
def test_paper_mode_is_algorithms_3_to_5_bit_for_bit(heart, loss, C, eps, seed):
    # shrink="none" is the published algorithm exactly: the same floats, the same sweeps
    X, y = heart
    yb = pm1(y, 1.0)
    w, alpha, sweeps, updates = acf_paper(X, yb, C, eps, loss=loss, seed=seed)
    res, _ = acf(X, yb, C, eps=eps, max_iter=0, loss=loss, seed=seed, shrink="none")
    assert (res.n_iter, res.n_updates) == (sweeps, updates)
    assert res.w.tobytes() == w.tobytes() and res.alpha.tobytes() == alpha.tobytes()
    # and the shrinking mode is a different run to the same optimum
    on, _ = acf(X, yb, C, eps=eps, max_iter=0, loss=loss, seed=seed)
    assert on.w.tobytes() != w.tobytes()
    assert rel(on.primal_objective, res.primal_objective) < 1e-3


@pytest.mark.parametrize("mode", MODES)
def test_custom_constants(heart, mode):
    X, y = heart
    yb = pm1(y, 1.0)
    trace = []
    res, _ = acf(X, yb, 10.0, eps=1e-3, max_iter=0, c=0.5, pmin=0.2, pmax=3.0, trace=trace,
                 shrink=mode)
    for t in trace:
        assert np.all((t["p_end"] >= 0.2) & (t["p_end"] <= 3.0))
    assert any(np.any(t["p_end"] == 0.2) for t in trace)
    ref, _ = acf(X, yb, 10.0, eps=1e-3, max_iter=0, shrink=mode)
    assert rel(res.primal_objective, ref.primal_objective) < 1e-3
    with pytest.raises(ValueError):
        acf(X, yb, 1.0, pmin=2.0)
    with pytest.raises(ValueError):
        acf(X, yb, 1.0, c=0.0)
    with pytest.raises(ValueError):
        acf(X, yb, 1.0, shrink="off")


# ---------------------------------------------------------------------------------------------
# 5. Seeds, zero rows, interface
# ---------------------------------------------------------------------------------------------

def test_seeds(heart):
    X, y = heart
    yb = pm1(y, 1.0)
    a, _ = acf(X, yb, 1.0, eps=1e-3, max_iter=0, seed=7)
    b, _ = acf(X, yb, 1.0, eps=1e-3, max_iter=0, seed=7)
    c, _ = acf(X, yb, 1.0, eps=1e-3, max_iter=0, seed=8)
    assert a.w.tobytes() == b.w.tobytes() and a.alpha.tobytes() == b.alpha.tobytes()
    assert a.preferences.tobytes() == b.preferences.tobytes()
    assert (a.n_iter, a.n_updates) == (b.n_iter, b.n_updates)
    assert a.w.tobytes() != c.w.tobytes()
    assert rel(a.primal_objective, c.primal_objective) < 1e-4


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loss", ["l1", "l2"])
def test_zero_rows(heart, loss, mode):
    X, y = heart
    yb = pm1(y, 1.0)
    Z = sp.csr_matrix((3, X.shape[1]))
    Xz = sp.vstack([Z[:2], X, Z[2:]]).tocsr()
    yz = np.concatenate([[1.0, -1.0], yb, [1.0]])
    C = 0.5
    trace = []
    res, C_i = acf(Xz, yz, C, eps=1e-6, max_iter=0, loss=loss, trace=trace, shrink=mode)
    ref, _ = acf(X, yb, C, eps=1e-6, max_iter=0, loss=loss, shrink=mode)
    zero = [0, 1, len(yz) - 1]
    np.testing.assert_allclose(res.alpha[zero], C if loss == "l1" else 2 * C, rtol=1e-6)
    np.testing.assert_allclose(res.w, ref.w, rtol=0, atol=1e-5)
    assert abs(res.primal_objective - ref.primal_objective - 3 * C) < 1e-4
    if loss == "l1":
        # fixed at the bound once, never scheduled; every sweep has n = rows − 3 steps
        assert np.all(np.isnan(res.preferences[zero]))
        for t in trace:
            # paper: every sweep has n = rows − 3 steps; shrinking: one per active row
            steps = len(yz) - 3 if mode == "none" else len(t["active"])
            assert len(t["schedule"]) == steps and not np.isin(zero, t["schedule"]).any()
    # The paper's stopping sweep measures each |PG_i| before its own step, and later steps of
    # that sweep move w, so a fresh check may exceed eps slightly; with shrinking the stopping
    # sweep takes no step, so it holds at the returned w.
    pg = projected_gradient(Xz, yz, C_i, res.alpha, res.w, loss)
    assert np.abs(pg).max() <= (2e-6 if mode == "none" else 1e-6 * (1 + 1e-9))


def test_all_zero_problem():
    res, _ = acf(sp.csr_matrix((4, 3)), np.array([1.0, -1.0, 1.0, 1.0]), 2.0)
    assert res.n_iter == 1 and not res.max_iter_reached and res.n_updates == 0
    np.testing.assert_array_equal(res.alpha, 2.0)
    assert res.primal_objective == 8.0 and res.dual_objective == -8.0


def test_callback_once_per_sweep(heart):
    X, y = heart
    calls = []
    res, _ = acf(X, pm1(y, 1.0), 1.0, eps=0.01, callback=lambda it, v: calls.append((it, v)))
    assert [c[0] for c in calls] == list(range(1, res.n_iter + 1))
    assert calls[-1][1] < 0.01 and all(v >= 0 for _, v in calls)


def test_fit_linear_acf_one_vs_rest_with_weights_and_stats():
    # the multi-class, class-weight and bias plumbing is shared with dcd: same optimum
    rng = np.random.default_rng(5)
    centers = rng.normal(size=(4, 6))
    y = np.repeat([3.0, 1.0, 7.0, 2.0], 40)
    X = sp.csr_matrix(centers[np.repeat(np.arange(4), 40)] + rng.normal(size=(160, 6)))
    labels, y_index = group_classes(y)
    kw = dict(C=0.5, eps=1e-4, max_iter=0, bias=1.0, class_weights={1.0: 2.0, 7.0: 0.25})
    coef_a, b_a, multi, info_a = fit_linear(X, y_index, labels, params("acf", **kw))
    coef_d, b_d, _, info_d = fit_linear(X, y_index, labels, params("dcd", **kw))
    assert multi == "ovr" and coef_a.shape == (4, 6)
    for a, d in zip(info_a, info_d):
        assert rel(a["primal_objective"], d["primal_objective"]) < 1e-4
    np.testing.assert_allclose(np.c_[coef_a, b_a], np.c_[coef_d, b_d], atol=1e-2)
    lines = info_lines(info_a, stats=True)
    assert lines.count(f"#updates = {info_a[0]['n_updates']}") >= 1
    assert lines[-1] == (f"total: #iter = {sum(i['n_iter'] for i in info_a)}, "
                         f"#updates = {sum(i['n_updates'] for i in info_a)}")
    assert "#updates" not in " ".join(info_lines(info_a))


def test_train_and_cli_acf(heart, tmp_path):
    from budgetsvm.train import train
    X, y = heart
    model = train(X, y, params("acf", C=1.0, eps=0.01, bias=1.0, acf_c=0.3))
    assert model.solver == "acf" and model.params["acf_c"] == 0.3
    assert model.params["acf_shrink"] == "on"
    assert np.mean(model.predict(X) == y) > 0.8
    # the paper mode writes the parameters of the models written before --acf-shrink existed
    paper = train(X, y, params("acf", C=1.0, eps=0.01, bias=1.0, acf_shrink="none"))
    assert "acf_shrink" not in paper.params
    assert set(paper.params) == set(model.params) - {"acf_shrink"}
    from click.testing import CliRunner
    from budgetsvm.cli.train import command
    out = tmp_path / "m"
    result = CliRunner().invoke(command, ["-s", "acf", "-c", "1", "-e", "0.01",
                                          str(repo_data("heart_scale.xz")), str(out)])
    assert result.exit_code == 0, result.output
    assert 'param acf_shrink str "on"' in out.read_text()
    result = CliRunner().invoke(command, ["-s", "acf", "--acf-shrink", "none", "-c", "1", "-e",
                                          "0.01", str(repo_data("heart_scale.xz")), str(out)])
    assert result.exit_code == 0, result.output
    assert "acf_shrink" not in out.read_text()
    result = CliRunner().invoke(command, ["-s", "acf", "--acf-shrink", "off",
                                          str(repo_data("heart_scale.xz")), str(out)])
    assert result.exit_code == 2 and "--acf-shrink" in result.output
