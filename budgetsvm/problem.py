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


def check_sparse_structure(X):
    """Raise ValueError when a sparse X's index arrays do not fit its shape. scipy checks them
    neither when a matrix is built from (data, indices, indptr) nor when it converts one, and
    the compiled code (scipy's conversions, our solvers and predictions) would then read and
    write out of bounds. The usual cause: a LIBSVM file's 1-based indices kept with shape
    (n, largest index). O(nnz), vectorised; the matrix is not changed."""
    if not sp.issparse(X):
        return
    n_rows, n_cols = X.shape

    def bad(what):
        raise ValueError(f"X is a malformed {X.format} matrix of shape {X.shape}: {what} "
                         "(1-based indices, as in a LIBSVM file, need the shape (n, largest "
                         "index + 1) or the indices minus 1)")
    if X.format in ("csr", "csc", "bsr"):
        major, minor = (n_rows, n_cols) if X.format != "csc" else (n_cols, n_rows)
        if X.format == "bsr":
            block_rows, block_cols = X.blocksize
            major, minor = major // block_rows, minor // block_cols
        indptr, indices = np.asarray(X.indptr), np.asarray(X.indices)
        if indptr.shape != (major + 1,) or indptr[0] != 0 or (np.diff(indptr) < 0).any():
            bad(f"its indptr is not {major + 1} non-decreasing offsets from 0")
        stored = int(indptr[-1])
        if stored > len(indices) or stored > X.data.shape[0]:
            bad(f"its indptr ends at {stored}, beyond its {len(indices)} indices")
        used = indices[:stored]
        if stored and (used.min() < 0 or used.max() >= minor):
            name = "row" if X.format == "csc" else "column"
            low, high = int(used.min()), int(used.max())
            bad(f"a {name} index ({low if low < 0 else high}) is outside [0, {minor})")
    elif X.format == "coo":
        rows, cols = X.row, X.col
        for name, index, size in (("row", rows, n_rows), ("column", cols, n_cols)):
            if len(index) and (index.min() < 0 or index.max() >= size):
                low, high = int(index.min()), int(index.max())
                bad(f"a {name} index ({low if low < 0 else high}) is outside [0, {size})")


def canonical_csr(X):
    """``X`` (sparse or dense) as canonical float64 CSR; no copy when it already is one.
    Raises ValueError for a sparse X whose indices do not fit its shape."""
    check_sparse_structure(X)
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
