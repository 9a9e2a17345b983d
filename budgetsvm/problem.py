"""The one training-data layer: how every solver wrapper turns what the user gave (a CSR or dense
matrix, the labels, -c and -wi) into what the compiled cores read.

* :func:`canonical_csr`: float64 CSR with sorted column indices and no duplicate index in a row
  (a duplicate would count twice in ‖x_i‖² and in a dot product), copied only when needed;
* :func:`csr_arrays`: its arrays with the index types of the cores (int32 indices, int64
  indptr) and the squared row norms;
* :func:`append_bias_column`: LIBLINEAR's bias feature (-B) as one more column;
* :func:`class_weights` / :func:`class_costs`: the -wi weight and C·weight of every class.
"""
import warnings

import numpy as np
import scipy.sparse as sp

from budgetsvm.errors import ParameterError


def canonical_csr(X):
    """``X`` (sparse or dense) as canonical float64 CSR; no copy when it already is one."""
    X = sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else \
        sp.csr_matrix(np.asarray(X, dtype=np.float64))
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()                 # also sorts the indices
    return X


def row_sqnorms(X):
    """Squared Euclidean norm of every row of CSR ``X`` (all of its columns); inf where it
    overflows (values near 1e154 or beyond), which the RBF kernel turns into k = 0."""
    n = X.shape[0]
    rows = np.repeat(np.arange(n), np.diff(X.indptr))
    with np.errstate(over="ignore"):
        return np.bincount(rows, weights=X.data * X.data, minlength=n).astype(np.float64)


def csr_arrays(X):
    """(data, int32 indices, int64 indptr, row squared norms) of a canonical CSR matrix."""
    return (X.data, X.indices.astype(np.int32, copy=False),
            X.indptr.astype(np.int64, copy=False), row_sqnorms(X))


def append_bias_column(X, bias):
    """CSR X with one more column, of constant value ``bias``, at index X.shape[1]."""
    n, d = X.shape
    indptr = X.indptr.astype(np.int64)
    nnz = int(indptr[-1])
    new_indptr = indptr + np.arange(n + 1, dtype=np.int64)
    is_bias = np.zeros(nnz + n, dtype=bool)
    is_bias[new_indptr[1:] - 1] = True           # the last entry of every new row
    indices = np.empty(nnz + n, dtype=np.int32)
    data = np.empty(nnz + n, dtype=np.float64)
    indices[~is_bias] = X.indices[:nnz]
    data[~is_bias] = X.data[:nnz]
    indices[is_bias] = d
    data[is_bias] = bias
    return sp.csr_matrix((data, indices, new_indptr), shape=(n, d + 1))


def class_weights(labels, params, warn=True):
    """The -wi weight of every class in label order (1 where none is given).

    Weights given for labels absent from the training data are ignored with a warning (unless
    ``warn`` is false), as LIBSVM and LIBLINEAR do."""
    labels = np.asarray(labels, dtype=np.float64)
    w = np.ones(len(labels))
    for label, weight in params.class_weights.items():
        hit = np.flatnonzero(labels == float(label))
        if hit.size == 0 and warn:
            warnings.warn(f"class label {float(label):g} specified in weight is not found",
                          stacklevel=3)
        w[hit] *= weight
    return w


def class_costs(labels, params, warn=True):
    """C times the -wi weight of every class, in label order (LIBLINEAR's weighted_C); warn:
    class_weights' warning about weights of absent labels.

    Raises ParameterError when a product overflows to infinity or underflows to 0 (each factor
    is checked on its own, the product only here): no solver is defined for it."""
    weights = class_weights(labels, params, warn)
    with np.errstate(over="ignore", under="ignore"):
        costs = float(params.C) * weights
    bad = np.flatnonzero(~(np.isfinite(costs) & (costs > 0)))
    if bad.size:
        r = int(bad[0])
        raise ParameterError(f"-c {float(params.C):g} times -w{float(labels[r]):g} "
                             f"{weights[r]:g} is {costs[r]:g}: the cost of a class must be a "
                             f"finite positive number")
    return costs


def check_class_costs(labels, params):
    """class_costs' check alone, before any work (and before a grid search opens its result
    file), without its warnings: the solver gives those when it computes the costs. (Not by
    warnings.catch_warnings: it swaps the process's filters, and train() runs in several
    threads at once, whose swaps could leave 'ignore' in place for good.)"""
    class_costs(labels, params, warn=False)
