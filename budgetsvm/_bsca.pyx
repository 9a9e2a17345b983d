"""Budgeted stochastic coordinate ascent for the binary kernel SVM dual (BSCA),
docs/ALGORITHMS.md §3.

Problem (C-form, no bias, §3.1)::

    max_{0 ≤ α_i ≤ C_i}  D(α) = Σ_i α_i − ½ Σ_{i,j} α_i α_j y_i y_j k(x_i, x_j),   C_i = C·w_{y_i}

Algorithm 1 of Qaadan, Schüler & Glasmachers (2019), §3.2: per epoch a fresh permutation (same draw
convention as budgetsvm/_bsgd.pyx: the order array is reset to 0..n−1 and shuffled with
rng_shuffle, so budgetsvm._rng.Random(seed).permutation(n), called once per epoch on one Random
object, replays it), then for every i::

    f̃ = Σ_j β_j k(x_i, x̃_j)                               budgeted margin, one kernel row
    δ = clip(α_i + (1 − y_i f̃)/Q_ii, 0, C_i) − α_i          Q_ii = k(x_i, x_i)
    if δ ≠ 0:  α_i += δ;  append (β = y_i δ, x_i, origin i);  maintenance if |M| > B

No learning rate, no scale factor (stored coefficients are the β themselves). Maintenance is the
store's (removal / projection / merge); merging pairs the first SV, argmin |β_j|, with one of
its training label (the robust default; label is passed with every insertion) or of the sign of
its β (the papers' mode), §3.3. A point with Q_ii ≤ 0 (φ(x_i) = 0 for a non-Gaussian kernel) gets
α_i = C_i before the first epoch and is never visited (§0.1, §3.2).

Reference: Qaadan, Schüler & Glasmachers, "Dual SVM training on a budget" (2019), Algorithm 1;
the departures from it (β = y_i·δ, sign-based merge partners in the papers' mode) are listed in
docs/ALGORITHMS.md §3 and §8.
"""
import numpy as np

cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from libc.math cimport INFINITY
from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from budgetsvm._budget cimport SVStore, Store, store_insert
from budgetsvm._csr cimport CsrRows, SparseRow, csr_bind, csr_row
from budgetsvm._kernels cimport kernel_row_sparse, kernel_self, row_dot
from budgetsvm._random cimport Rng, rng_seed, rng_shuffle
from budgetsvm._nogil cimport monotonic_seconds as _now
from budgetsvm._nogil cimport next_signal_poll, poll_signals as _poll_signals

cnp.import_array()


def bsca_solve(SVStore store, const double[::1] data, const int32_t[::1] indices,
               const int64_t[::1] indptr, const double[::1] xsq, const int8_t[::1] y,
               const double[::1] upper, double[::1] alpha, Py_ssize_t epochs=5,
               uint64_t seed=1, callback=None, epoch_callback=None, trace=None):
    """Run BSCA on the CSR rows (data, indices, indptr) into ``store`` (nr_coef = 1).

    y[i] = ±1; upper[i] = C_i; alpha (length n, in/out, normally zeros) holds the dual variables;
    xsq[i] = ‖x_i‖². callback(step, total_steps) about every 0.1 s (with the check for Ctrl-C);
    epoch_callback(epoch, stats) after every epoch (monitoring: the time it takes is not counted
    in the returned seconds); trace(t, i, delta) after every step (tests).
    Returns a dict: t (steps), n_updates (non-zero steps = insertions), n_zero_norm,
    maintenance_seconds (wall time of the insertions that triggered maintenance), seconds
    (solver wall time without the epoch callbacks), epoch_updates (list per epoch).
    """
    cdef Store* st = &store.st
    cdef Py_ssize_t n = indptr.shape[0] - 1
    cdef Py_ssize_t total = n * epochs
    if st.nr_coef != 1:
        raise ValueError("BSCA is binary: the store needs nr_coef = 1")
    if (n <= 0 or y.shape[0] != n or xsq.shape[0] != n or upper.shape[0] != n
            or alpha.shape[0] != n):
        raise ValueError("inconsistent problem arrays")
    order_arr = np.arange(n, dtype=np.intp)
    krow_arr = np.zeros(st.cap)
    coef_arr = np.zeros(1)
    qii_arr = np.zeros(n)
    cdef Py_ssize_t[::1] order = order_arr
    cdef double* krow = <double*>cnp.PyArray_DATA(krow_arr)
    cdef double* coef = <double*>cnp.PyArray_DATA(coef_arr)
    cdef double[::1] qii = qii_arr
    cdef CsrRows R
    csr_bind(&R, data, indices, indptr, st.d)
    cdef SparseRow x
    cdef bint has_callback = callback is not None, has_trace = trace is not None
    cdef bint has_epoch_cb = epoch_callback is not None
    cdef Rng rng
    cdef Py_ssize_t epoch, pos, i, j
    cdef int64_t t = 0, n_upd = 0, n_zero = 0, epoch_upd
    cdef double f, yi, a_new, delta, maint_seconds = 0.0, t0, t_begin, seconds = 0.0
    epoch_updates = []
    # Q_ii = k(x_i, x_i); φ(x_i) = 0 ⇒ α_i = C_i once, never visited (§0.1)
    for i in range(n):
        qii[i] = kernel_self(&st.kernel, xsq[i])
        if not qii[i] > 0.0:
            alpha[i] = upper[i]
            n_zero += 1
    cdef double next_poll = next_signal_poll()
    rng_seed(&rng, seed)
    for epoch in range(epochs):
        t_begin = _now()
        epoch_upd = 0
        with nogil:
            for i in range(n):
                order[i] = i
            rng_shuffle(&rng, &order[0], n)
            for pos in range(n):
                if _poll_signals(&next_poll) and has_callback:
                    with gil:
                        callback(t, total)
                i = order[pos]
                t += 1
                if not qii[i] > 0.0 or xsq[i] == INFINITY:
                    # φ(x_i) = 0 (α_i = C_i above), or ‖x_i‖² overflows: its kernel values
                    # against the SVs are NaN (inf − inf), so it takes no step (train() warns)
                    continue
                x = csr_row(&R, i)
                # f̃ = Σ_j β_j k(x_i, x̃_j)
                kernel_row_sparse(&st.kernel, st.X, st.cap, st.n, st.sq, x, xsq[i], krow)
                f = row_dot(&st.kernel, st.A, krow, st.n)
                yi = <double>y[i]
                # δ = clip(α_i + (1 − y_i f̃)/Q_ii, 0, C_i) − α_i
                a_new = alpha[i] + (1.0 - yi * f) / qii[i]
                if a_new < 0.0:
                    a_new = 0.0
                elif a_new > upper[i]:
                    a_new = upper[i]
                delta = a_new - alpha[i]
                if delta != 0.0:               # exact comparison, as in the seed
                    alpha[i] = a_new
                    coef[0] = yi * delta
                    n_upd += 1
                    epoch_upd += 1
                    if st.n >= st.budget:
                        t0 = _now()
                        store_insert(st, x, xsq[i], coef, i, krow, y[i])
                        maint_seconds += _now() - t0
                    else:
                        store_insert(st, x, xsq[i], coef, i, krow, y[i])
                if has_trace:
                    with gil:
                        trace(t, i, delta)
        seconds += _now() - t_begin
        epoch_updates.append(int(epoch_upd))
        if has_epoch_cb:
            epoch_callback(epoch + 1, {"t": int(t), "n_updates": int(n_upd),
                                       "epoch_updates": int(epoch_upd), "seconds": seconds,
                                       "maintenance_seconds": maint_seconds})
    if has_callback:
        callback(t, total)
    return {"t": t, "n_updates": n_upd, "n_zero_norm": n_zero,
            "maintenance_seconds": maint_seconds, "seconds": seconds,
            "epoch_updates": epoch_updates}


def store_decision(SVStore store, const double[::1] data, const int32_t[::1] indices,
                   const int64_t[::1] indptr, const double[::1] xsq):
    """f̃(x_i) = Σ_j A_j k(x_i, x̃_j) for every CSR row (binary store), O(n·B·nnz)."""
    cdef Store* st = &store.st
    cdef Py_ssize_t n = indptr.shape[0] - 1, i
    if st.nr_coef != 1:
        raise ValueError("binary store expected")
    out_arr = np.zeros(max(n, 0))
    krow_arr = np.zeros(st.cap)
    cdef double[::1] out = out_arr
    cdef double* krow = <double*>cnp.PyArray_DATA(krow_arr)
    cdef CsrRows R
    if n <= 0:
        return out_arr
    csr_bind(&R, data, indices, indptr, st.d)
    with nogil:
        for i in range(n):
            kernel_row_sparse(&st.kernel, st.X, st.cap, st.n, st.sq, csr_row(&R, i), xsq[i],
                              krow)
            out[i] = row_dot(&st.kernel, st.A, krow, st.n)
    return out_arr
