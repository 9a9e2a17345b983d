"""Adaptive coordinate frequencies (ACF/AVSF, _dcd.pyx acf_solve), ALGORITHMS.md §4.4, §7.5.

Oracles: the baseline dual CD solver and LIBLINEAR (liblinear-official) for the optimum, a generic
QP solve on tiny problems, numpy recomputations of w, the projected gradients and the
objectives, and exact statistics of the schedule of Algorithm 4 (with negative controls that a
wrong schedule must fail). The mechanics (preferences, Σp, Δ ≥ 0, first sweep, canstop reset) are
checked on the per-sweep trace the solver records for tests.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm import _dcd
from budgetsvm.labels import group_classes
from budgetsvm.linear import fit_linear, info_lines
from budgetsvm.params import TrainParams

# Shared helpers of the baseline's tests (tests/ is on sys.path).
from test_dcd import (liblinear_objectives, liblinear_train, liblinear_weights, pm1, primal,
                      projected_gradient, read, rel, repo_data, shared_data)

PMIN, PMAX = 0.05, 20.0


def acf(X, y, C, **kw):
    X = sp.csr_matrix(X)
    C_i = np.broadcast_to(np.asarray(C, dtype=np.float64), (X.shape[0],)).copy()
    return _dcd.acf_solve(X.data, X.indices, X.indptr, y, C_i, X.shape[1], **kw), C_i


@pytest.fixture(scope="module")
def heart():
    return read(repo_data("heart_scale.xz"))


@pytest.fixture(scope="module")
def a9a():
    return read(repo_data("a9a.xz"))


def params(solver, **kw):
    return TrainParams(**{"solver": solver, **kw})


# ---------------------------------------------------------------------------------------------
# 1. The same optimum as the baseline and LIBLINEAR (§7.5)
# ---------------------------------------------------------------------------------------------

def compare_three(X, y, C, eps):
    """ACF, the baseline and LIBLINEAR -s 3 on the same (binary or one-vs-rest) problem."""
    labels, y_index = group_classes(y)
    _, _, _, ours = fit_linear(X, y_index, labels, params("acf", C=C, eps=eps, max_iter=0))
    _, _, _, base = fit_linear(X, y_index, labels, params("dcd", C=C, eps=eps, max_iter=0))
    model, out = liblinear_train(y, X, f"-s 3 -c {C} -e {eps} -B -1")
    objectives = liblinear_objectives(out)      # asserts LIBLINEAR stayed inside its cap
    W_lib = liblinear_weights(model)
    assert list(model.get_labels()) == list(labels)
    assert len(ours) == len(base) == len(objectives) == W_lib.shape[0]
    C_i = np.full(X.shape[0], C)
    for r, (a, b) in enumerate(zip(ours, base)):
        assert not a["max_iter_reached"] and not b["max_iter_reached"]
        lib_primal = primal(X, pm1(y, labels[r]), C_i, W_lib[r])
        # ACF and the baseline reach the same optimum ...
        assert rel(a["primal_objective"], b["primal_objective"]) < 1e-3
        # ... and both agree with LIBLINEAR's printed (dual) objective and its weights' primal
        for sub in (a, b):
            assert rel(sub["dual_objective"], objectives[r]) < 1e-3
            assert rel(sub["primal_objective"], lib_primal) < 1e-3
    return ours, base


def test_a9a_same_optimum_as_baseline_and_liblinear(a9a):
    X, y = a9a
    compare_three(X, y, C=0.1, eps=0.01)


def test_w8a_same_optimum_as_baseline_and_liblinear():
    X, y = read(shared_data("w8a.xz"))
    compare_three(X, y, C=0.1, eps=0.01)


def test_sector_same_optimum_as_baseline_and_liblinear():
    X, y = read(shared_data("sector.scale.xz"))
    ours, _ = compare_three(X, y, C=1.0, eps=0.01)
    assert len(ours) == 105


@pytest.mark.parametrize("data,C", [("heart", 0.1), ("heart", 1.0), ("a9a", 0.1)])
def test_same_primal_as_baseline_at_eps_1e3(heart, a9a, data, C):
    # §7.5 item 4: baseline (shrinking) and ACF agree to 1e-4 relative at ε = 1e-3
    X, y = heart if data == "heart" else a9a
    yb = pm1(y, 1.0)
    ours, C_i = acf(X, yb, C, eps=1e-3, max_iter=0)
    base = _dcd.dcd_solve(X.data, X.indices, X.indptr, yb, C_i, X.shape[1], eps=1e-3,
                          max_iter=0)
    assert not ours.max_iter_reached and not base.max_iter_reached
    assert rel(ours.primal_objective, base.primal_objective) < 1e-4


# ---------------------------------------------------------------------------------------------
# 2. Maintained w, objectives and the stopping guarantee
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss,eps", [("l1", 0.1), ("l1", 0.01), ("l1", 0.001), ("l2", 0.01)])
def test_w_objectives_and_final_projected_gradient(a9a, loss, eps):
    X, y = a9a
    yb = pm1(y, 1.0)
    res, C_i = acf(X, yb, 0.1, eps=eps, max_iter=0, loss=loss)
    assert not res.max_iter_reached and res.n_iter >= 2 and res.n_updates > 0
    # w = X.T @ (alpha * y)
    w = X.T @ (res.alpha * yb)
    assert np.abs(res.w - w).max() <= 1e-10 * np.abs(w).max()
    D = 0.5 / C_i if loss == "l2" else 0.0
    dual = 0.5 * w @ w - res.alpha.sum() + 0.5 * np.sum(D * res.alpha ** 2)
    assert rel(res.dual_objective, dual) < 1e-10
    assert rel(res.primal_objective, primal(X, yb, C_i, w, loss)) < 1e-10
    # One numpy sweep without updates after termination. Not guaranteed in theory: the
    # stopping sweep measures each |PG_i| before its own step, and later steps of that sweep
    # move w again; those steps are all below eps, so the drift is small in practice.
    pg = projected_gradient(X, yb, C_i, res.alpha, res.w, loss)
    assert np.abs(pg).max() <= eps * (1 + 1e-9)


def test_max_iter_guard(a9a):
    X, y = a9a
    res, _ = acf(X, pm1(y, 1.0), 1.0, eps=1e-6, max_iter=3)
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
    a = _dcd.acf_schedule(p, seed=7, n_draws=5)
    assert np.array_equal(a, _dcd.acf_schedule(p, seed=7, n_draws=5))
    assert not np.array_equal(a, _dcd.acf_schedule(p, seed=8, n_draws=5))


# ---------------------------------------------------------------------------------------------
# 4. Mechanics of Algorithms 3 and 5, on the per-sweep trace
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss,C", [("l1", 1.0), ("l1", 10.0), ("l2", 1.0)])
def test_trace_mechanics(heart, loss, C):
    X, y = heart
    yb = pm1(y, 1.0)
    n = X.shape[0]
    trace = []
    res, _ = acf(X, yb, C, eps=1e-3, max_iter=0, loss=loss, trace=trace, seed=2)
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


def test_stuck_variables_decay_to_pmin():
    # Two clusters near the margin plus far, correctly classified points (α stays 0) and far
    # mislabelled points (L1: α stays at C). Without stopping, their preferences reach p_min
    # (every visit gains Δ = 0 and multiplies p by exp(−c)).
    rng = np.random.default_rng(8)
    near = np.vstack([rng.normal([1, 0], 0.5, size=(30, 2)),
                      rng.normal([-1, 0], 0.5, size=(30, 2))])
    far_ok = np.array([[25.0, 1.0], [-25.0, 1.0], [30.0, -2.0], [-30.0, 0.0]])
    far_bad = np.array([[20.0, 0.0], [-20.0, 0.0]])
    X = sp.csr_matrix(np.vstack([near, far_ok, far_bad]))
    y = np.concatenate([np.ones(30), -np.ones(30), [1, -1, 1, -1], [-1, 1]])
    res, C_i = acf(X, y, 1.0, eps=1e-300, max_iter=400, seed=4)
    assert res.max_iter_reached
    ok, bad = np.arange(60, 64), np.arange(64, 66)
    assert np.all(res.alpha[ok] == 0.0) and np.all(res.alpha[bad] == C_i[bad])
    np.testing.assert_array_equal(res.preferences[ok], PMIN)
    np.testing.assert_array_equal(res.preferences[bad], PMIN)


def test_custom_constants(heart):
    X, y = heart
    yb = pm1(y, 1.0)
    trace = []
    res, _ = acf(X, yb, 10.0, eps=1e-3, max_iter=0, c=0.5, pmin=0.2, pmax=3.0, trace=trace)
    for t in trace:
        assert np.all((t["p_end"] >= 0.2) & (t["p_end"] <= 3.0))
    assert any(np.any(t["p_end"] == 0.2) for t in trace)
    ref, _ = acf(X, yb, 10.0, eps=1e-3, max_iter=0)
    assert rel(res.primal_objective, ref.primal_objective) < 1e-3
    with pytest.raises(ValueError):
        acf(X, yb, 1.0, pmin=2.0)
    with pytest.raises(ValueError):
        acf(X, yb, 1.0, c=0.0)


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


@pytest.mark.parametrize("loss", ["l1", "l2"])
def test_zero_rows(heart, loss):
    X, y = heart
    yb = pm1(y, 1.0)
    Z = sp.csr_matrix((3, X.shape[1]))
    Xz = sp.vstack([Z[:2], X, Z[2:]]).tocsr()
    yz = np.concatenate([[1.0, -1.0], yb, [1.0]])
    C = 0.5
    trace = []
    res, C_i = acf(Xz, yz, C, eps=1e-6, max_iter=0, loss=loss, trace=trace)
    ref, _ = acf(X, yb, C, eps=1e-6, max_iter=0, loss=loss)
    zero = [0, 1, len(yz) - 1]
    np.testing.assert_allclose(res.alpha[zero], C if loss == "l1" else 2 * C, rtol=1e-6)
    np.testing.assert_allclose(res.w, ref.w, rtol=0, atol=1e-5)
    assert abs(res.primal_objective - ref.primal_objective - 3 * C) < 1e-4
    if loss == "l1":
        # fixed at the bound once, never scheduled; every sweep has n = rows − 3 steps
        assert np.all(np.isnan(res.preferences[zero]))
        for t in trace:
            assert len(t["schedule"]) == len(yz) - 3 and not np.isin(zero, t["schedule"]).any()
    pg = projected_gradient(Xz, yz, C_i, res.alpha, res.w, loss)
    assert np.abs(pg).max() <= 1e-6 * (1 + 1e-9)


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
    assert np.mean(model.predict(X) == y) > 0.8
    from click.testing import CliRunner
    from budgetsvm.cli.train import command
    out = tmp_path / "m"
    result = CliRunner().invoke(command, ["-s", "acf", "-c", "1", "-e", "0.01",
                                          str(repo_data("heart_scale.xz")), str(out)])
    assert result.exit_code == 0, result.output
    assert out.exists()
