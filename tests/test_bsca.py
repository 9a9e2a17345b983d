"""BSCA and lookup merging in the store: the oracles of docs/ALGORITHMS.md §7.4 (and §7.3 item 6).

The reference is plain numpy stochastic coordinate ascent on a full kernel matrix
(tests/reference/solvers.py), replaying the solver's order through budgetsvm._rng.Random: epoch e
visits the e-th permutation(n) drawn from Random(seed); the optimum is a generic QP solve
(tests/reference/qp.py).
"""
import time

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm._bsca import bsca_solve
from budgetsvm._budget import SVStore
from budgetsvm.bsca import fit_bsca_binary, train_bsca
from budgetsvm.bsgd import train_bsgd
from budgetsvm.labels import group_classes
from budgetsvm.monitoring import bsca_objectives
from budgetsvm.params import TrainParams
from reference.data import blobs, signed_blobs
from reference.kernels import rbf
from reference.objectives import kernel_dual
from reference.qp import kernel_svm_dual
from reference.solvers import sca


def run_core(X, y, C=1.0, gamma=0.5, budget=10**4, epochs=3, seed=3, maintenance="merge",
             merge_search="gss", upper=None, trace=None, partners="sign"):
    Xs = sp.csr_matrix(X)
    n, d = X.shape
    store = SVStore(d, budget, 1, "rbf", gamma, 0.0, 3, maintenance, merge_search,
                    partners=partners)
    alpha = np.zeros(n)
    upper = np.full(n, C) if upper is None else np.asarray(upper, float)
    res = bsca_solve(store, Xs.data, Xs.indices.astype(np.int32), Xs.indptr.astype(np.int64),
                     (X * X).sum(1), y, upper, alpha, epochs=epochs, seed=seed,
                     trace=None if trace is None else (lambda t, i, dl: trace(store, alpha, t, i,
                                                                              dl)))
    return store, alpha, res, upper


@pytest.mark.parametrize("weights", [False, True])
def test_unexceeded_budget_equals_sca(weights):
    X, y = signed_blobs(50, d=3, seed=1)
    K = rbf(X, X, 0.5)
    upper = np.where(y > 0, 1.0, 2.5) if weights else np.full(50, 1.0)
    steps = []
    store, alpha, res, _ = run_core(X, y, upper=upper, epochs=4, seed=7,
                                    trace=lambda st, a, t, i, dl: steps.append(dl))
    ref_alpha, ref_deltas = sca(K, y.astype(float), upper, 4, 7)
    assert store.counters()["n_maintenance"] == 0
    np.testing.assert_allclose(alpha, ref_alpha, rtol=0, atol=1e-10)
    np.testing.assert_allclose(steps, ref_deltas, rtol=0, atol=1e-10)
    # the model aggregated by origin is Σ α_i y_i φ(x_i); one entry per non-zero step
    _, A, origin, _ = store.export()
    agg = np.zeros(50)
    np.add.at(agg, origin, A[:, 0])
    np.testing.assert_allclose(agg, ref_alpha * y, rtol=0, atol=1e-10)
    assert store.n == res["n_updates"] == np.count_nonzero(ref_deltas)


def test_dual_monotone_box_and_tracked_dual_exact_without_maintenance():
    X, y = signed_blobs(40, seed=2)
    K = rbf(X, X, 0.5)
    Xs = sp.csr_matrix(X)
    duals = []

    def trace(store, alpha, t, i, dl):
        assert np.all(alpha >= 0) and np.all(alpha <= 2.0)
        D = kernel_dual(K, y.astype(float), alpha)
        duals.append(D)
        if t % 7 == 0:
            obj = bsca_objectives(store, Xs, y, np.full(40, 2.0), alpha)
            assert abs(obj["dual_tracked"] - D) <= 1e-10 * max(1.0, abs(D))

    run_core(X, y, C=2.0, epochs=5, trace=trace)
    assert np.all(np.diff(duals) >= -1e-12 * np.abs(duals[1:]).max())


def test_box_budget_and_same_sign_merges_every_step():
    # Large C and a narrow kernel: many negative steps, so β of both signs meet in the budget.
    X, y = signed_blobs(80, seed=3, spread=1.5)
    C, B = 10.0, 12
    state = {"prev": {}, "max_stamp": -1, "merges": 0, "neg": 0, "checked": 0}

    def trace(store, alpha, t, i, dl):
        assert np.all(alpha >= 0) and np.all(alpha <= C)
        assert store.n <= B
        _, A, origin, stamp = store.export()
        cur = dict(zip(stamp.tolist(), A[:, 0].tolist()))
        prev = dict(state["prev"])
        if dl != 0.0:
            state["max_stamp"] += 1
            prev[state["max_stamp"]] = y[i] * dl          # the inserted entry
        merges = store.counters()["n_merges"]
        if merges > state["merges"]:
            state["max_stamp"] += 1                         # the merged z
            gone = [prev[s] for s in prev if s not in cur]
            assert len(gone) == 2
            am, an = gone
            assert np.sign(am) == np.sign(an) and am != 0
            m = am / (am + an)
            assert 0 < m < 1 or m == 1.0
            state["checked"] += 1
        state["merges"] = merges
        state["neg"] += int(dl < 0)
        state["prev"] = cur
        assert max(cur) == state["max_stamp"] or not cur

    run_core(X, y, C=C, gamma=2.0, budget=B, epochs=4, trace=trace)
    assert state["checked"] > 50
    assert state["neg"] > 20             # negative steps: entries of sign −y_i were inserted


@pytest.mark.parametrize("merge_search", ["gss", "lookup-wd"])
def test_label_partners_merge_rows_of_one_label(merge_search):
    # Partners by label: bsca_solve gives the store each row's label, so every merge takes two
    # entries of one training label (z keeps it), also when their β have opposite signs (an
    # entry of a negative step); by sign such pairs never meet.
    X, y = signed_blobs(80, seed=3, spread=1.5)
    C, B = 10.0, 12
    state = {"prev": {}, "max_stamp": -1, "merges": 0, "checked": 0, "opposite": 0}

    def trace(store, alpha, t, i, dl):
        _, A, origin, stamp = store.export()
        cur = {s: (a, None) for s, a in zip(stamp.tolist(), A[:, 0].tolist())}
        prev = dict(state["prev"])
        if dl != 0.0:
            state["max_stamp"] += 1
            prev[state["max_stamp"]] = (y[i] * dl, int(y[i]))     # the inserted entry
        for s in cur:
            if s in prev:
                cur[s] = (cur[s][0], prev[s][1])                    # labels carry over
        merges = store.counters()["n_merges"]
        if merges > state["merges"]:
            state["max_stamp"] += 1                                 # the merged z
            gone = [prev[s] for s in prev if s not in cur]
            assert len(gone) == 2
            (am, label_m), (an, label_n) = gone
            assert label_m == label_n
            state["opposite"] += int((am >= 0) != (an >= 0))
            cur[state["max_stamp"]] = (cur[state["max_stamp"]][0], label_m)
            state["checked"] += 1
        state["merges"] = merges
        state["prev"] = cur

    run_core(X, y, C=C, gamma=2.0, budget=B, epochs=4, trace=trace, partners="label",
             merge_search=merge_search)
    assert state["checked"] > 50 and state["opposite"] > 5


def test_sca_reaches_qp_optimum():
    X, y = signed_blobs(60, seed=4)
    C = 1.0
    K = rbf(X, X, 0.5)
    store, alpha, res, upper = run_core(X, y, C=C, epochs=300, budget=60 * 300)
    assert store.counters()["n_maintenance"] == 0
    D_opt = kernel_svm_dual(K, y, C)
    D = kernel_dual(K, y.astype(float), alpha)
    assert D >= D_opt - 1e-6 * abs(D_opt)
    assert abs(D - D_opt) <= 1e-6 * abs(D_opt)
    P = bsca_objectives(store, sp.csr_matrix(X), y, upper, alpha)["primal"]
    assert 0 <= P - D <= 1e-6 * abs(D)


def problem(k, n=150, seed=5):
    X, c = blobs(n, k, d=3, seed=seed, zeros=0)
    labels, y_index = group_classes(np.array([3.0, -1.0, 8.0, 2.0])[c])
    return sp.csr_matrix(X), y_index, labels


@pytest.mark.parametrize("merge_search", ["gss", "lookup-wd", "lookup-h"])
def test_train_bsca_binary_model_equals_store(merge_search):
    X, y_index, labels = problem(2)
    p = TrainParams(solver="bsca", C=4.0, gamma=0.5, budget=15, epochs=3, seed=2,
                    merge_search=merge_search)
    model = train_bsca(X, y_index, labels, p)
    assert model.multiclass == "binary" and model.n_sv <= 15
    info = model.train_info
    # every non-zero step is one insertion: added to its row's slot (coalesced) or appended,
    # and every merge takes one entry away
    assert info["n_merges"] > 0
    assert info["n_merges"] == info["n_updates"] - info["n_coalesced"] - model.n_sv
    acc = (model.predict(X) == labels[y_index]).mean()
    assert acc > 0.8
    m2 = train_bsca(X, y_index, labels, p)
    np.testing.assert_array_equal(model.coef, m2.coef)


def test_train_bsca_one_vs_rest():
    X, y_index, labels = problem(3)
    p = TrainParams(solver="bsca", C=4.0, gamma=0.5, budget=12, epochs=3, seed=2,
                    merge_search="lookup-wd")
    rows = []
    model = train_bsca(X, y_index, labels, p, monitor=rows.append)
    assert model.multiclass == "argmax" and model.coef.shape[1] == 3
    assert all(info["n_sv"] <= 12 for info in model.train_info["per_model"])
    assert len(rows) == 9 and {r["model"] for r in rows} == {0, 1, 2}

    def terms(sv, coef):
        # the (support vector, coefficient) pairs of one decision function, in a fixed order
        dense = sv.toarray()
        return sorted((tuple(dense[j]), coef[j]) for j in np.flatnonzero(coef))
    # each column equals the binary class-c-vs-rest run (a training row that several models
    # keep unmerged is one row of the model, with a coefficient in each of their columns)
    for c in range(3):
        y_c = np.where(y_index == c, 0, 1).astype(np.int32)
        binary = train_bsca(X, y_c, np.array([1.0, 0.0]), p)
        assert terms(model.sv, model.coef[:, c]) == terms(binary.sv, binary.coef[:, 0])
        assert model.rho[c] == binary.rho[0]
    assert (model.predict(X) == labels[y_index]).mean() > 0.8


def test_zero_norm_points_linear_kernel():
    X, y = signed_blobs(30, seed=6)
    X[[3, 8]] = 0.0
    Xs = sp.csr_matrix(X)
    store = SVStore(2, 1000, 1, "linear", 1.0, 0.0, 3, "removal", "gss")
    alpha = np.zeros(30)
    res = bsca_solve(store, Xs.data, Xs.indices.astype(np.int32), Xs.indptr.astype(np.int64),
                     (X * X).sum(1), y, np.full(30, 0.7), alpha, epochs=3, seed=1)
    assert res["n_zero_norm"] == 2 and alpha[3] == alpha[8] == 0.7
    _, _, origin, _ = store.export()
    assert 3 not in origin and 8 not in origin


def test_monitor_rows_and_tracked_dual():
    X, y_index, labels = problem(2)
    rows = []
    p = TrainParams(solver="bsca", C=1.0, gamma=0.5, budget=500, epochs=3, seed=2)
    train_bsca(X, y_index, labels, p, monitor=rows.append, monitor_test=(X, y_index))
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert all(r["merge_fraction"] == 0 for r in rows)
    assert all(r["primal"] >= r["dual_tracked"] - 1e-9 for r in rows)   # exact dual: no merge
    # without maintenance the tracked dual is the exact one (§3.5)
    for r in rows:
        assert r["dual_exact"] == pytest.approx(r["dual_tracked"], rel=1e-9, abs=1e-9)
    assert rows[-1]["test_accuracy"] > 0.8
    assert np.all(np.diff([r["time"] for r in rows]) >= 0)


def test_monitor_exact_dual_with_merging(monkeypatch):
    from budgetsvm import monitoring
    X, y = signed_blobs(120, d=3, seed=4)
    params = TrainParams(solver="bsca", C=2.0, gamma=0.5, budget=8, epochs=2, seed=3,
                         merge_search="gss")
    rows = []
    store, alpha, info = fit_bsca_binary(
        sp.csr_matrix(X), y, np.full(120, 2.0), params, 0.5, monitor=rows.append)
    assert info["n_merges"] > 0
    # the exact dual of the final α from a dense numpy kernel matrix
    assert rows[-1]["dual_exact"] == pytest.approx(kernel_dual(rbf(X, X, 0.5), y, alpha), rel=1e-10)
    assert rows[-1]["dual_exact"] != pytest.approx(rows[-1]["dual_tracked"], rel=1e-6)
    monkeypatch.setattr(monitoring, "EXACT_DUAL_MAX_POINTS", 5)
    rows.clear()
    fit_bsca_binary(sp.csr_matrix(X), y, np.full(120, 2.0), params, 0.5, monitor=rows.append)
    assert all(r["dual_exact"] is None for r in rows)       # too many points: left blank


def test_callback_and_interrupt():
    X, y_index, labels = problem(2, n=300)
    calls = []
    p = TrainParams(solver="bsca", gamma=0.5, budget=20, epochs=70)      # 21,000 steps
    train_bsca(X, y_index, labels, p, callback=lambda step, info: calls.append(step))
    assert calls == sorted(calls) and calls[-1] == 21000
    # the check for Ctrl-C and the progress report with it come about every 0.1 s, not every
    # 10⁴ steps: 300 steps slowed to ≥ 2 ms each (the trace sleeps) take ≥ 0.6 s, so ≥ 5 reports
    X2, y2, _ = problem(2, n=300)
    y_pm = np.where(y2 == 0, 1, -1).astype(np.int8)
    calls.clear()
    fit_bsca_binary(X2, y_pm, np.ones(300), TrainParams(solver="bsca", budget=20, epochs=1), 0.5,
                    callback=lambda step, info: calls.append(step),
                    trace=lambda t, i, delta: time.sleep(0.002))
    assert len(calls) >= 5 and calls == sorted(set(calls)) and 0 < calls[0] and calls[-1] <= 300

    def stop(step, info):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_bsca(X, y_index, labels, p, callback=stop)


# ---------------------------------------------------------------------------------------------
# Lookup merging inside the store (§2.5)
# ---------------------------------------------------------------------------------------------

def test_store_lookup_evaluations_against_precise():
    rng = np.random.default_rng(0)
    d = 3
    store = SVStore(d, 400, 1, "rbf", 0.7, 0.0, 3, "merge", "gss")
    for _ in range(300):
        store.insert(rng.normal(size=d), rng.uniform(0.01, 2.0) * rng.choice([-1, 1]))
    _, A, _, _ = store.export()
    order = store.slot_order()
    slots_A = np.empty(store.n)
    slots_A[order] = A[:, 0]
    checked = 0
    for _ in range(400):
        m, n = rng.choice(store.n, 2, replace=False)
        if np.sign(slots_A[m]) != np.sign(slots_A[n]):
            continue
        _, _, wd_p = store.evaluate_merge(m, n, "gss-precise")
        h_w, az_w, wd_w = store.evaluate_merge(m, n, "lookup-wd")
        h_h, az_h, wd_h = store.evaluate_merge(m, n, "lookup-h")
        scale = (slots_A[m] + slots_A[n]) ** 2
        assert np.isnan(h_w) and np.isnan(az_w)
        assert abs(wd_w - wd_p) <= 1e-4 * scale
        assert wd_h >= wd_p - 1e-12 * scale and wd_h - wd_p <= 1e-4 * scale
        checked += 1
    assert checked > 100


def test_multiclass_merging_ignores_lookup():
    # Crammer–Singer BSGD merging always uses GSS: identical models whatever --merge-search.
    X, y_index, labels = problem(3)
    models = [train_bsgd(X, y_index, labels,
                         TrainParams(solver="bsgd", C=4.0, gamma=0.5, budget=10, epochs=2,
                                     seed=5, merge_search=ms))
              for ms in ("gss", "lookup-wd", "lookup-h")]
    assert models[0].train_info["n_merges"] > 0
    for m in models[1:]:
        np.testing.assert_array_equal(m.coef, models[0].coef)


def test_bsgd_lookup_wd_accuracy_close_to_gss(repo_data):
    # §7.3 item 6, reduced: a9a subset, 3 seeds per method, differences within 3 sd (+0.5 pt).
    from budgetsvm.io import read_problem
    X, y = read_problem(repo_data / "a9a.xz")
    Xt, yt = read_problem(repo_data / "a9a.t.xz", n_features=X.shape[1])
    X, y, Xt, yt = X[:4000], y[:4000], Xt[:4000], yt[:4000]
    labels, y_index = group_classes(y)
    acc = {}
    for ms in ("gss", "lookup-wd"):
        acc[ms] = []
        for seed in (1, 2, 3):
            p = TrainParams(solver="bsgd", C=32, gamma=0.0078125, budget=50, epochs=2,
                            seed=seed, merge_search=ms)
            model = train_bsgd(X, y_index, labels, p)
            assert model.train_info["n_merges"] > 1000
            acc[ms].append((model.predict(Xt) == yt).mean())
    a, b = np.array(acc["gss"]), np.array(acc["lookup-wd"])
    sd = max(a.std(ddof=1), b.std(ddof=1), 0.005)
    assert abs(a.mean() - b.mean()) < 3 * sd, acc


def test_comparison_mode_counters():
    X, y_index, labels = problem(2, n=300)
    p = TrainParams(solver="bsgd", C=8.0, gamma=0.5, budget=15, epochs=2, seed=4,
                    merge_search="lookup-wd")
    plain = train_bsgd(X, y_index, labels, p)
    model = train_bsgd(X, y_index, labels, p, compare_merges=True)
    np.testing.assert_array_equal(model.coef, plain.coef)     # diagnostics change nothing
    info = model.train_info
    assert info["n_compared"] == info["n_merges"] > 0
    assert 0.5 < info["same_as_precise"] <= 1 and 0.5 < info["same_as_gss"] <= 1
    assert 1.0 <= info["wd_ratio_mean"] <= info["wd_ratio_max"]
    assert info["gss_wd_ratio_mean"] >= 1.0
    # totals: Σ chosen WD ≥ Σ minimal WD; a partner that is the precise one attains the minimum
    assert info["wd_excess_total"] >= 1.0 and info["gss_wd_excess_total"] >= 1.0
    assert info["same_as_precise"] <= info["optimal_fraction"] <= 1.0
    assert info["same_as_gss"] <= 1.0 and 0.0 < info["gss_optimal_fraction"] <= 1.0
    p.merge_search = "gss-precise"
    precise = train_bsgd(X, y_index, labels, p, compare_merges=True).train_info
    assert precise["same_as_precise"] == 1.0 and precise["wd_ratio_max"] == 1.0
    assert precise["optimal_fraction"] == 1.0 and precise["wd_excess_total"] == 1.0


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_monitor_cpu_excludes_the_monitoring(solver):
    # the rows' cpu is the training thread's CPU time in the core: it leaves out what the
    # monitor itself spends (here a busy loop of at least 0.1 CPU seconds per epoch)
    X, y_index, labels = problem(2)
    rows = []

    def monitor(row):
        rows.append(row)
        start = time.thread_time()
        while time.thread_time() - start < 0.1:
            pass

    p = TrainParams(solver=solver, C=1.0, gamma=0.5, budget=20, epochs=3, seed=2)
    start = time.thread_time()
    (train_bsca if solver == "bsca" else train_bsgd)(X, y_index, labels, p, monitor=monitor)
    total = time.thread_time() - start
    cpu = [r["cpu"] for r in rows]
    assert cpu[0] > 0 and np.all(np.diff(cpu) >= 0)
    assert cpu[-1] <= total - 0.3


@pytest.mark.parametrize("solver", ["bsca", "bsgd"])
def test_a_kernel_that_overflows_is_a_diverged_run(tmp_path, solver):
    # (γ x·x + r)^d beyond a double: bsca divided each step by k(x, x) = inf, every step was
    # 0 and it wrote a constant model (exit 0) where bsgd reports the overflow
    import subprocess
    import sys
    from pathlib import Path
    heart = Path(__file__).resolve().parent.parent / "data" / "heart_scale.xz"
    (tmp_path / "m").write_text("old\n")
    result = subprocess.run([str(Path(sys.executable).parent / "bsvm-train"), "-s", solver,
                             "-t", "1", "-g", "1e300", "--maintenance", "removal", heart,
                             tmp_path / "m"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.startswith("training diverged: the kernel value k(x, x) of every "
                                    "training row overflows"), result.stderr
    assert (tmp_path / "m").read_text() == "old\n"


def test_one_vs_rest_models_share_the_support_vectors_they_have_in_common():
    # each one-vs-rest model is the binary model of its class against the rest (same seed, same
    # costs): the multi-class model's column c gives that model's decision values, while a
    # training row stored by several models is one SV line (it was one per model: k·B lines of
    # k coefficients)
    import scipy.sparse as sp
    from budgetsvm.bsca import train_bsca
    from budgetsvm.labels import group_classes
    from budgetsvm.params import TrainParams
    rng = np.random.default_rng(5)
    k = 6
    centers = rng.normal(scale=3.0, size=(k, 3))
    y = np.repeat(np.arange(1.0, k + 1), 5)
    X = sp.csr_matrix(centers[(y - 1).astype(int)] + rng.normal(scale=0.3, size=(len(y), 3)))
    labels, y_index = group_classes(y)
    params = TrainParams(solver="bsca", C=2.0, gamma=0.2, budget=50, epochs=3, seed=4)
    model = train_bsca(X, y_index, labels, params)
    # no merging (budget above n): every SV is a training row, each stored once
    assert model.n_sv <= len(y)
    assert len({tuple(row) for row in model.sv.toarray()}) == model.n_sv
    for c in range(k):
        binary = train_bsca(X, np.where(y_index == c, 0, 1).astype(np.int32),
                            np.array([labels[c], 0.0]), params)
        np.testing.assert_allclose(model.decision_function(X)[:, c],
                                   binary.decision_function(X)[:, 0], rtol=1e-12, atol=1e-12)
