"""Budgeted stochastic gradient descent for kernel SVMs (BSGD), docs/ALGORITHMS.md §1.

Problem (λ-form, no bias, λ = 1/(nC) so that -c keeps LIBSVM's meaning, §0.3)::

    binary        min_w  λ/2 ‖w‖² + 1/n Σ_i w_{y_i} max(0, 1 − y_i ⟨w, φ(x_i)⟩)
    multi-class   min_W  λ/2 Σ_r ‖w_r‖² + 1/n Σ_i w_{y_i} max(0, 1 + f_{r_i}(x_i) − f_{y_i}(x_i))
                  (Crammer–Singer, r_i = argmax_{r ≠ y_i} f_r(x_i), ties to the lowest r)

y_i = +1 for label[0] and −1 for label[1] (binary); w_c is the -w weight of class c (C_c = C·w_c),
applied by scaling the hinge step: a violating step adds η_t·w_{y_i}·y_i·φ(x_i) (binary) or
±η_t·w_{y_i}·φ(x_i) at classes y_i / r_i (multi-class).

Step t (global counter, one epoch = n steps in a fresh permutation, §0.4)::

    f  = s·Σ_j a_j k(x̃_j, x_i)           margin test with w_t (strict "< 1"), one kernel row
    s ← s·(1 − η_t λ)   (skipped at t = 1)
    if violated: append x_i with a = η_t w y_i / s, then budget maintenance if |M| > B
    (mp) ball projection: s ← s·min(1, U/‖w‖), ‖w‖² = s²Q with Q kept by the store
    renormalise (a ← s·a, s ← 1) when s < 1e-100 or s > 1e100

Variants (§1.6): pegasos η_t = 1/(λt) (s_t = 1/t; then a = w y nC exactly, computed as such);
norma η_t = η/√t; mp (budgeted margin perceptron) η_t = η, λ = 0, radius U.

Model: w = s·Σ_j a_j φ(x̃_j), the SV store of budgetsvm/_budget.pxd (dense feature-major SVs,
O(B·nnz(x)) contiguous work per margin). Maintenance: removal, projection or merging (§1.5).

Random order: one Rng seeded with `seed`; before epoch e the order array is reset to
0..n−1 and shuffled with rng_shuffle. budgetsvm._rng.Random(seed).permutation(n), called once
per epoch on one Random object, replays it exactly.

References: Wang, Crammer, Vucetic, "Breaking the curse of kernelization: budgeted stochastic
gradient descent for large-scale SVM training", JMLR 13 (2012), Algorithm 1 and §5–§6;
Shalev-Shwartz et al., "Pegasos", Math. Prog. 127 (2011).
"""
import numpy as np

cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from libc.math cimport INFINITY, sqrt
from libc.stdint cimport int32_t, int64_t, uint64_t
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from budgetsvm._budget cimport SVStore, Store, store_insert, store_scale
from budgetsvm._csr cimport CsrRows, SparseRow, csr_bind, csr_row
from budgetsvm._kernels cimport kernel_row_sparse, row_dot
from budgetsvm._random cimport Rng, rng_seed, rng_shuffle
from budgetsvm._nogil cimport monotonic_seconds as _now
from budgetsvm._nogil cimport next_signal_poll, poll_signals as _poll_signals

cnp.import_array()

VARIANTS = {"pegasos": 0, "norma": 1, "mp": 2}
cdef enum:
    VARIANT_PEGASOS = 0
    VARIANT_NORMA = 1
    VARIANT_MP = 2


def bsgd_solve(SVStore store, const double[::1] data, const int32_t[::1] indices,
               const int64_t[::1] indptr, const double[::1] xsq, const int32_t[::1] y_index,
               const double[::1] class_weight, double nC, variant="pegasos", double eta=1.0,
               double radius=1.0, Py_ssize_t epochs=1, uint64_t seed=1, callback=None,
               trace=None, double renorm_low=1e-100,
               double renorm_high=1e100, order=None, state=None, total_steps=None,
               int64_t origin_offset=0, row_weight=None):
    """Run BSGD on the CSR rows (data, indices, indptr) into ``store``.

    store.nr_coef == 1 gives the binary problem (class 0 → y = +1, class 1 → y = −1), otherwise
    Crammer–Singer with store.nr_coef classes. xsq[i] = ‖x_i‖²; class_weight[c] = w_c; nC = n·C
    = 1/λ. callback(step, total_steps) is called about every 0.1 s (with the check for Ctrl-C),
    trace(t, s) after every step (tests). Returns a dict: s (final scale: true coefficients are s·A), t,
    n_violations, n_renorm (both counted from the start of the run, see state),
    maintenance_seconds (wall time of this call's insertions that triggered maintenance), c_peg
    (the pegasos scale constant, see state).

    Resuming (streaming, per-epoch monitoring): ``order`` (intp positions into the given rows)
    replaces the epochs: the rows are visited once in that order, without shuffling.
    ``state`` = the dict a previous call returned (t, s, c_peg, n_violations, n_renorm)
    continues the global step counter, the scale and the counters, so that calls over
    consecutive pieces of the data (with nC of the whole problem) take exactly the steps, and
    report the statistics, of one uninterrupted run. total_steps is what the callback reports
    as the total (default: the steps of this call). An inserted row i is recorded with origin
    origin_offset + i (its row number in the whole data when the call covers one piece of it),
    which is what coalescing (a store made with coalesce=True) keys on. row_weight (n,):
    positive instance weights that multiply class_weight[y_i] (the Python API's sample_weight).
    """
    cdef Store* st = &store.st
    cdef Py_ssize_t n = indptr.shape[0] - 1
    cdef Py_ssize_t nc = st.nr_coef, total
    cdef Py_ssize_t n_visit = n
    cdef bint given_order = order is not None
    cdef int var = VARIANTS[variant]
    if n <= 0 or y_index.shape[0] != n or xsq.shape[0] != n:
        raise ValueError("inconsistent problem arrays")
    if var == VARIANT_MP and not st.track_q:
        raise ValueError("the mp variant needs a store with track_q=True")
    if nc == 2:
        raise ValueError("two classes use the binary form (nr_coef = 1)")
    if given_order:
        order_arr = np.ascontiguousarray(order, dtype=np.intp)
        n_visit = order_arr.shape[0]
        if n_visit and (order_arr.min() < 0 or order_arr.max() >= n):
            raise ValueError("order holds a row outside the problem")
        epochs = 1
    else:
        order_arr = np.arange(n, dtype=np.intp)
    total = n_visit * epochs if total_steps is None else total_steps
    krow_arr = np.zeros(st.cap)
    g_arr = np.zeros(nc)
    coef_arr = np.zeros(nc)
    cdef Py_ssize_t[::1] visit = order_arr
    cdef const double[::1] row_weight_view
    cdef const double* rw = NULL               # NULL: every row weighs 1
    if row_weight is not None:
        row_weight_view = np.ascontiguousarray(row_weight, dtype=np.float64)
        if row_weight_view.shape[0] != n:
            raise ValueError("row_weight needs one weight per row")
        if n > 0:
            rw = &row_weight_view[0]
    cdef double* krow = <double*>cnp.PyArray_DATA(krow_arr)
    cdef double* g = <double*>cnp.PyArray_DATA(g_arr)
    cdef double* coef = <double*>cnp.PyArray_DATA(coef_arr)
    cdef CsrRows R
    csr_bind(&R, data, indices, indptr, st.d)
    cdef SparseRow x
    cdef bint has_callback = callback is not None, has_trace = trace is not None
    cdef Rng rng
    cdef Py_ssize_t epoch, pos, i, j, r, yc, runner
    cdef int64_t t = 0, n_viol = 0, n_renorm = 0
    cdef double s = 1.0, c_peg = 1.0, eta_t, f, fy, fr, wnorm, wy, step
    cdef bint violated
    cdef double maint_seconds = 0.0, t0
    cdef double lam = 0.0 if var == VARIANT_MP else 1.0 / nC
    cdef const double* a
    if state is not None:
        t = state["t"]
        s = state["s"]
        c_peg = state["c_peg"]
        n_viol = state.get("n_violations", 0)
        n_renorm = state.get("n_renorm", 0)
    cdef int64_t t_first = t
    cdef double next_poll = next_signal_poll()
    rng_seed(&rng, seed)
    with nogil:
        for epoch in range(epochs):
            if not given_order:
                for i in range(n):
                    visit[i] = i
                rng_shuffle(&rng, &visit[0], n)
            for pos in range(n_visit):
                if _poll_signals(&next_poll) and has_callback:
                    with gil:
                        callback(t, total)
                i = visit[pos]
                if xsq[i] == INFINITY:
                    # ‖x_i‖² overflows: its kernel values are NaN (inf − inf), so it takes no
                    # step (train() warns about such rows)
                    continue
                t += 1
                yc = y_index[i]
                wy = class_weight[yc]
                if rw != NULL:
                    wy = wy * rw[i]
                x = csr_row(&R, i)
                # krow = k(x_i, X̃);  g = A.T @ krow  (the margin row, kept for projection)
                kernel_row_sparse(&st.kernel, st.X, st.cap, st.n, st.sq, x, xsq[i], krow)
                for r in range(nc):
                    g[r] = 0.0
                if nc == 1:
                    g[0] = row_dot(&st.kernel, st.A, krow, st.n)
                else:
                    for j in range(st.n):
                        a = st.A + j * nc
                        for r in range(nc):
                            g[r] += a[r] * krow[j]
                # Learning rate and shrink s ← s(1 − η_t λ) (not at t = 1).
                if var == VARIANT_PEGASOS:
                    eta_t = nC / t
                elif var == VARIANT_NORMA:
                    eta_t = eta / sqrt(<double>t)
                else:
                    eta_t = eta
                # Margin test with w_t: f = s·g (before the shrink).
                runner = -1
                if nc == 1:
                    step = (1.0 if yc == 0 else -1.0) * wy
                    violated = (1.0 if yc == 0 else -1.0) * s * g[0] < 1.0
                else:
                    # r_t = argmax_{r ≠ y} f_r (lowest r on ties); violated if 1 + f_r − f_y > 0
                    fy = s * g[yc]
                    fr = 0.0
                    for r in range(nc):
                        if r != yc and (runner < 0 or s * g[r] > fr):
                            runner = r
                            fr = s * g[r]
                    violated = 1.0 + fr - fy > 0.0
                    step = wy
                if t > 1:
                    if var == VARIANT_PEGASOS:
                        s = c_peg / t               # Π_{τ≤t} (τ−1)/τ = 1/t, without drift
                    elif var == VARIANT_NORMA:
                        s *= 1.0 - eta_t * lam
                if violated:
                    n_viol += 1
                    # stored coefficient η_t·step/s  (pegasos: η_t/s_t = nC/c exactly)
                    if var == VARIANT_PEGASOS:
                        step *= nC / c_peg
                    else:
                        step *= eta_t / s
                    if nc == 1:
                        coef[0] = step
                    else:
                        for r in range(nc):
                            coef[r] = 0.0
                        coef[yc] = step
                        coef[runner] = -step
                    if st.n >= st.budget:
                        # this insertion triggers maintenance: time it (insertion included)
                        t0 = _now()
                        store_insert(st, x, xsq[i], coef, origin_offset + i, krow, 0)
                        maint_seconds += _now() - t0
                    else:
                        store_insert(st, x, xsq[i], coef, origin_offset + i, krow, 0)
                if var == VARIANT_MP and st.Q > 0.0:
                    # w ← min(1, U/‖w‖)·w, ‖w‖ = s√Q
                    wnorm = s * sqrt(st.Q)
                    if wnorm > radius:
                        s *= radius / wnorm
                if s < renorm_low or s > renorm_high:
                    # A ← s·A, s ← 1
                    store_scale(st, s)
                    if var == VARIANT_PEGASOS:
                        c_peg = <double>t           # keeps s_{t'} = c/t' = s·t/t'
                    s = 1.0
                    n_renorm += 1
                if has_trace:
                    with gil:
                        trace(t, s)
        if has_callback:
            with gil:
                callback(t, total)
    return {"s": s, "t": t, "n_violations": n_viol, "n_renorm": n_renorm,
            "maintenance_seconds": maint_seconds, "c_peg": c_peg}
