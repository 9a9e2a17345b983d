"""Compiled part of the refit of a budgeted kernel SVM on its own support vectors (refit.py,
docs/ALGORITHMS.md §"Refit on the budget"): the kernel block K[i, j] = k(x_i, x̃_j) of the
training rows against the B support vectors, the only O(n·B·nnz) step of the refit.

The support vectors are given feature-major and dense (d × B), as the SV store keeps them
(budgetsvm/_budget.pxd), so one sparse row costs nnz(x) contiguous axpys of length B followed by
B kernel evaluations (budgetsvm/_kernels.pxd): the same arithmetic as a BSGD or BSCA margin.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t

from budgetsvm._kernels cimport (KERNEL_LINEAR, KERNEL_POLY, KERNEL_RBF, KERNEL_SIGMOID, Kernel,
                                 kernel_row_sparse)
from budgetsvm._nogil cimport check_signals as _check_signals

cnp.import_array()

KERNEL_KINDS = {"linear": KERNEL_LINEAR, "poly": KERNEL_POLY, "rbf": KERNEL_RBF,
                "sigmoid": KERNEL_SIGMOID}

# Rows between two checks for Ctrl-C.
cdef Py_ssize_t SIGNAL_EVERY = 4096


def kernel_rows(const double[:, ::1] sv_by_feature, const double[::1] sv_sq, kind,
                double gamma, double coef0, int degree, const double[::1] data,
                const int32_t[::1] indices, const int64_t[::1] indptr, const double[::1] xsq,
                double[:, ::1] out):
    """out[i, j] = k(x_i, x̃_j) for the CSR rows (data, indices, indptr) and the B support
    vectors given as sv_by_feature (d × B, C order: row k holds feature k of every SV) with
    squared norms sv_sq. xsq[i] = ‖x_i‖². Every column index must be < d."""
    cdef Py_ssize_t d = sv_by_feature.shape[0], B = sv_by_feature.shape[1]
    cdef Py_ssize_t n = indptr.shape[0] - 1, i
    cdef Kernel kernel
    if kind not in KERNEL_KINDS:
        raise ValueError(f"unknown kernel {kind!r}")
    if out.shape[0] != n or out.shape[1] != B or sv_sq.shape[0] != B or xsq.shape[0] != n:
        raise ValueError("inconsistent kernel block shapes")
    if indices.shape[0] and (np.min(indices) < 0 or np.max(indices) >= d):
        raise ValueError("a row has a feature beyond the support vectors' width")
    if B == 0 or n == 0:
        return
    kernel.kind = KERNEL_KINDS[kind]
    kernel.gamma = gamma
    kernel.coef0 = coef0
    kernel.degree = degree
    cdef const double* X = &sv_by_feature[0, 0] if d > 0 else NULL
    cdef const double* val = &data[0] if data.shape[0] > 0 else NULL
    cdef const int32_t* ind = &indices[0] if indices.shape[0] > 0 else NULL
    with nogil:
        for i in range(n):
            if i % SIGNAL_EVERY == 0 and i > 0:
                _check_signals()
            kernel_row_sparse(&kernel, X, B, B, &sv_sq[0], val + indptr[i], ind + indptr[i],
                              indptr[i + 1] - indptr[i], xsq[i], &out[i, 0])
