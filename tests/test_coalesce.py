"""Coalescing of repeated insertions (--coalesce): a training row that is inserted again while
its unmerged entry is still stored adds its coefficients to that entry (docs/ALGORITHMS.md §1.3).

Oracles: the decision function is unchanged by coalescing while no maintenance happens (the same
sum of kernel terms, grouped); with B ≥ n no maintenance ever happens, so budgeted SGD and SCA
equal their unbudgeted numpy references over several epochs (docs/ALGORITHMS.md §7.2 item 2, §7.4
item 2); no two stored entries of the same row after any step, whatever the maintenance; the stored
vectors are distinct; streaming numbers rows globally.
"""
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm import io
from budgetsvm._bsca import bsca_solve
from budgetsvm._bsgd import bsgd_solve
from budgetsvm._budget import SVStore
from budgetsvm._rng import Random
from budgetsvm.bsca import train_bsca
from budgetsvm.bsgd import train_bsgd
from budgetsvm.problem import csr_arrays
from budgetsvm.labels import group_classes
from budgetsvm.params import TrainParams
from budgetsvm.stream import train_bsgd_stream
from reference.data import signed_blobs
from reference.kernels import rbf
from reference.solvers import pegasos, sca

DATA = Path(__file__).resolve().parent.parent / "data"


def check_distinct_origins(store):
    """No two stored entries come from the same training row (merged points have origin −1)."""
    _, _, origin, _ = store.export()
    rows = origin[origin >= 0]
    assert len(np.unique(rows)) == len(rows)


def test_bsgd_with_budget_n_equals_unbudgeted_pegasos_over_epochs():
    X, y = signed_blobs(60, d=3, spread=1.3)
    Xs = sp.csr_matrix(X)
    store = SVStore(3, 60, 1, "rbf", 0.5, 0.0, 3, "removal", "gss", coalesce=True)
    y_index = np.where(y > 0, 0, 1).astype(np.int32)
    res = bsgd_solve(store, *csr_arrays(Xs), y_index, np.ones(2), 60 * 2.0, epochs=4, seed=5)
    counters = store.counters()
    assert counters["n_maintenance"] == 0 and counters["n_coalesced"] > 0
    sv, A, origin, _ = store.export()
    assert len(np.unique(origin)) == len(origin)          # one entry per row
    alpha = np.zeros(60)
    alpha[origin] = A[:, 0] * res["s"]
    np.testing.assert_allclose(alpha, pegasos(rbf(X, X, 0.5), y, 2.0, 4, 5),
                               rtol=1e-10, atol=1e-12)


def test_bsca_with_budget_n_equals_unbudgeted_sca_over_epochs():
    X, y = signed_blobs(50, d=3, seed=1, spread=1.3)
    Xs = sp.csr_matrix(X)
    K = rbf(X, X, 0.5)
    store = SVStore(3, 50, 1, "rbf", 0.5, 0.0, 3, "merge", "gss", coalesce=True)
    alpha = np.zeros(50)
    data, indices, indptr, xsq = csr_arrays(Xs)
    bsca_solve(store, data, indices, indptr, xsq, y.astype(np.int8), np.full(50, 1.0), alpha,
               epochs=6, seed=7)
    assert store.counters()["n_maintenance"] == 0 and store.n <= 50
    # plain SCA with the same order
    ref, _ = sca(K, y, np.full(50, 1.0), 6, 7)
    np.testing.assert_allclose(alpha, ref, atol=1e-10)
    _, A, origin, _ = store.export()
    beta = np.zeros(50)
    beta[origin] = A[:, 0]
    np.testing.assert_allclose(beta, ref * y, atol=1e-10)


@pytest.mark.parametrize("maintenance", ["removal", "projection", "merge"])
def test_rows_stay_distinct_through_every_deletion_and_merge(maintenance):
    X, y = signed_blobs(40, d=3, seed=2, spread=1.3)
    Xs = sp.csr_matrix(X)
    # B = 30 of 40 rows: maintenance happens, and rows are revisited while still stored
    store = SVStore(3, 30, 1, "rbf", 0.5, 0.0, 3, maintenance, "gss", coalesce=True)
    y_index = np.where(y > 0, 0, 1).astype(np.int32)
    seen = []

    def trace(t, s):
        check_distinct_origins(store)
        seen.append(store.n)

    bsgd_solve(store, *csr_arrays(Xs), y_index, np.ones(2), 40 * 4.0, epochs=4, seed=1,
               trace=trace)
    counters = store.counters()
    assert max(seen) <= 30 and counters["n_coalesced"] > 0 and counters["n_maintenance"] > 0


def test_coalescing_keeps_the_decision_function_without_maintenance():
    X, y = signed_blobs(40, d=3, seed=3, spread=1.3)
    Xs = sp.csr_matrix(X)
    y_index = np.where(y > 0, 0, 1).astype(np.int32)
    out = []
    for rows in (False, True):
        store = SVStore(3, 1000, 1, "rbf", 0.5, 0.0, 3, "removal", "gss", coalesce=rows)
        res = bsgd_solve(store, *csr_arrays(Xs), y_index, np.ones(2), 40.0, epochs=3, seed=2)
        sv, A, _, _ = store.export()
        out.append((rbf(X, sv, 0.5) @ A[:, 0] * res["s"], store.n))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12, atol=1e-12)
    assert out[1][1] < out[0][1]


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_budget_counts_distinct_vectors(solver):
    X, y = io.read_problem(str(DATA / "heart_scale.xz"))
    labels, y_index = group_classes(y)
    train = train_bsgd if solver == "bsgd" else train_bsca
    plain = train(X, y_index, labels, TrainParams(solver=solver, budget=500, polish="none"))
    merged = train(X, y_index, labels, TrainParams(solver=solver, budget=500, polish="none",
                                                   coalesce=True))
    rows = X.toarray()
    distinct = len(np.unique(rows, axis=0))
    assert merged.n_sv <= distinct
    assert len(np.unique(merged.sv.toarray(), axis=0)) == merged.n_sv
    # without coalescing the 500 slots hold repeated copies of the same rows
    assert len(np.unique(plain.sv.toarray(), axis=0)) < plain.n_sv


def test_streaming_coalesces_by_global_row_number(tmp_path):
    X, y = signed_blobs(3000, d=2, seed=4, spread=1.3)
    path = tmp_path / "d.txt"
    with open(path, "w") as f:
        for row, label in zip(X, y):
            f.write(f"{label:+d} " + " ".join(f"{k + 1}:{float(v)!r}" for k, v in enumerate(row)
                                               if v != 0) + "\n")
    params = TrainParams(solver="bsgd", C=1.0, gamma=0.5, budget=3000, epochs=3, seed=3,
                         coalesce=True, polish="none")
    streamed = train_bsgd_stream(str(path), params, buffer_mb=1 / 16)    # 64 KiB buffers
    assert streamed.train_info["n_buffers"] >= 2 and streamed.train_info["n_coalesced"] > 0
    # reference: the core over the whole data in the streamed order, rows numbered globally
    from budgetsvm.io import iter_problem_chunks
    sizes = [c[0].shape[0] for c in iter_problem_chunks(str(path), block_bytes=1 << 16)]
    rng, offsets = Random(3), np.cumsum([0] + sizes[:-1])
    order = np.concatenate([np.concatenate([rng.permutation(m) + o
                                            for m, o in zip(sizes, offsets)])
                            for _ in range(3)])
    Xr, yr = io.read_problem(str(path))
    labels, y_index = group_classes(yr)
    store = SVStore(2, 3000, 1, "rbf", 0.5, 0.0, 3, "merge", "lookup-wd", coalesce=True)
    res = bsgd_solve(store, *csr_arrays(Xr), y_index, np.ones(2), 3000 * 1.0, order=order)
    sv, A, _, _ = store.export()
    np.testing.assert_array_equal(streamed.sv.toarray(), sv)
    np.testing.assert_array_equal(streamed.coef, A * res["s"])
