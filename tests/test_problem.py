"""The one training-data layer (budgetsvm/problem.py) that every solver wrapper uses."""
import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm.params import TrainParams
from budgetsvm.problem import (append_bias_column, canonical_csr, class_costs, class_weights,
                               csr_arrays)
from budgetsvm.train import train


def with_duplicates():
    # row 0 holds column 2 twice (1 + 2) and columns out of order; row 1 is canonical
    data = np.array([1.0, 5.0, 2.0, 4.0])
    indices = np.array([2, 0, 2, 1])
    return sp.csr_matrix((data, indices, np.array([0, 3, 4])), shape=(2, 3))


def test_duplicates_are_summed_on_a_copy_and_canonical_input_is_not_copied():
    X = with_duplicates()
    before = (X.data.copy(), X.indices.copy())
    C = canonical_csr(X)
    assert np.array_equal(C.toarray(), [[5.0, 0.0, 3.0], [0.0, 4.0, 0.0]])
    assert C.has_canonical_format and C.dtype == np.float64
    assert np.array_equal(X.data, before[0]) and np.array_equal(X.indices, before[1])
    again = canonical_csr(C)
    assert again.data is C.data or np.shares_memory(again.data, C.data)
    dense = canonical_csr([[0, 1], [2, 0]])
    assert dense.dtype == np.float64 and dense.nnz == 2


def test_row_norms_and_index_types_for_the_cores():
    data, indices, indptr, sq = csr_arrays(canonical_csr(with_duplicates()))
    assert indices.dtype == np.int32 and indptr.dtype == np.int64
    assert np.array_equal(sq, [25.0 + 9.0, 16.0])          # ‖x‖² with the duplicate summed


def test_bias_column():
    B = append_bias_column(canonical_csr(with_duplicates()), 0.5)
    assert np.array_equal(B.toarray(), [[5.0, 0.0, 3.0, 0.5], [0.0, 4.0, 0.0, 0.5]])


def test_class_weights_and_costs():
    params = TrainParams(C=2.0, class_weights={1.0: 3.0, 7.0: 5.0})
    with pytest.warns(UserWarning, match="label 7 specified in weight is not found"):
        assert class_weights(np.array([-1.0, 1.0]), params).tolist() == [1.0, 3.0]
    with pytest.warns(UserWarning):
        assert class_costs(np.array([-1.0, 1.0]), params).tolist() == [2.0, 6.0]


@pytest.mark.parametrize("solver", ["dcd", "acf", "ww", "bsgd", "bsca"])
def test_every_solver_sees_duplicate_indices_summed(solver):
    # the same data with a feature split into two entries of one row trains the same model
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(60, 4))
    y = np.where(dense[:, 0] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    if solver == "ww":
        y[::3] = 2.0
    X = sp.csr_matrix(dense)
    # every stored entry split into two halves under the same index, built as raw CSR arrays
    # (scipy's COO conversion would sum them)
    doubled = sp.csr_matrix((np.repeat(X.data / 2, 2), np.repeat(X.indices, 2), X.indptr * 2),
                            shape=X.shape)
    assert doubled.nnz == 2 * X.nnz and not doubled.has_canonical_format
    params = TrainParams(solver=solver, C=1.0, budget=20, epochs=2, seed=3)
    a, b = train(X, y, params), train(doubled, y, params)
    assert np.array_equal(a.predict(X), b.predict(X))
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-9, atol=1e-12)


def test_checking_the_class_costs_in_a_thread_leaves_the_warning_filters_alone(monkeypatch):
    # train() checks the costs in every fold's thread at once. warnings.catch_warnings swaps
    # the process's filter list: a check that entered while another thread's block was open
    # and left after it had closed put that block's 'ignore' back for good (every later
    # warning of the process was lost).
    import threading
    import warnings
    from budgetsvm import problem
    from budgetsvm.params import TrainParams
    entered, release = threading.Event(), threading.Event()
    real = problem.class_weights

    def held(*args, **kwargs):
        entered.set()
        release.wait(10)
        return real(*args, **kwargs)
    monkeypatch.setattr(problem, "class_weights", held)
    before = list(warnings.filters)
    params = TrainParams(solver="dcd", class_weights={3.0: 2.0})   # label 3 is absent
    check = threading.Thread(target=problem.check_class_costs, args=([-1.0, 1.0], params))
    with warnings.catch_warnings():                      # another thread's block, open
        warnings.simplefilter("ignore")
        check.start()
        assert entered.wait(10)
    release.set()
    check.join(10)
    assert list(warnings.filters) == before
