"""Linear Weston–Watkins multi-class SVM by block coordinate descent (docs/ALGORITHMS.md §5).

Problem (primal P, classes 0..k−1, no offsets; a -B bias is an appended constant feature)::

    min_W  P(W) = ½‖W‖²_F + Σ_i C_i Σ_{j≠y_i} max(0, 1 − (w_{y_i} − w_j)ᵀx_i)

solved in the reparametrised dual D2 (§5.3), with K = k − 1 and one block β_i ∈ [0, C_i]^K per
training point::

    min_β  g(β) = ½‖W(β)‖²_F − Σ_i 1ᵀβ_i,   0 ≤ β_it ≤ C_i,
    W(β) = Σ_i x_i (γ_i e_{y_i} − Σ_t β_it e_{o_i(t)})ᵀ,   γ_i = 1ᵀβ_i,
    o_i(t) = t+1 if t+1 ≠ y_i else 0            (t = 0..K−1, the σ-order of §5.3, 0-based)

Minimising g over block i is, after dividing by ‖x_i‖², the subproblem (4) of §5.4::

    min_b ½ bᵀ(I + 11ᵀ)b − vᵀb   s.t. 0 ≤ b ≤ C,
    v_t = (1 − z_{y_i} + z_{o_i(t)})/‖x_i‖² + β_it + γ_i,   z = Wᵀx_i,

which Walrus (Algorithm 2 of Wang & Scott, "An exact solver for the Weston–Watkins SVM
subproblem", ICML 2021; §5.5 here) solves exactly in O(K log K). The Shark-style greedy
coordinate solver (§5.8) is the alternative for comparison. The outer loop is Algorithm 1 of the
same paper (§5.6): one pass over a fresh random permutation per outer iteration, stopping when
the duality gap (§5.7) falls below δ times the gap after the first outer iteration.

Layout: W is d × k row-major (feature-major), so the scores z = Wᵀx_i and the update
W += x_i Δᵀ touch one contiguous row of k values per nonzero of x_i: O(nnz(x_i)·k) per block.
β is n × K row-major. Points with x_i = 0 get β_i = C_i·1 once and are never visited (§0.1).

With shrinking (the default) a block computes only the scores of its active classes: on large
W (sector.scale: 46 MB) one prefetched cache line per needed entry of a row; on W that fits in
cache, class by class with the sum in a register; and the whole row when most classes are
needed. For k ≤ 16 the whole-row kernels are C loops with k a compile-time constant.
"""
import collections

import numpy as np

cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from libc.math cimport INFINITY, ceil, fabs, log
from libc.stdint cimport int32_t, int64_t, uint64_t
from posix.time cimport CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, clock_gettime, timespec

from budgetsvm._csr cimport CsrRows, SparseRow, csr_bind, csr_row
from budgetsvm._random cimport Rng, rng_seed, rng_shuffle, rng_shuffle_fast
from budgetsvm._nogil cimport monotonic_seconds as _now, thread_cpu_seconds as _cpu
from budgetsvm._nogil cimport check_signals as _check_signals

cnp.import_array()

cdef extern from *:
    """
    /* Block steps between two checks for Ctrl-C (each briefly re-acquires the GIL). */
    #define BSVM_WW_SIGNAL_CHECK_EVERY 10000
    /* Relative tolerance of the Walrus KKT comparisons (times max(1, C, max|v|)). */
    #define BSVM_WW_KKT_TOL 1e-12
    /* Adaptive gap schedule: keep evaluation work below about this fraction of the run. */
    #define BSVM_WW_EVAL_FRACTION 0.08
    /* Prefetch the W row of a nonzero this many nonzeros ahead (the rows are scattered). */
    #define BSVM_WW_PREFETCH_AHEAD 8
    /* Shrinking: after a sweep, a pair at a bound is shrunk when it pushes against the bound by
       more than this times the mean |projected gradient| of the active pairs in that sweep. */
    #define BSVM_WW_SHRINK_SHARE 0.5
    /* Shrinking: evaluate the gap (and revive the shrunk pairs that violate their bound) when
       the active pairs' gap terms of a sweep fall below this share of the last measured gap. */
    #define BSVM_WW_STALL_SHARE 0.25
    /* Revisits: after a sweep, points whose gap terms before their step exceeded this many
       times the previous sweep's mean per point are stepped again, up to REVISIT_PASSES times
       while the revisits cost less than REVISIT_BUDGET times the sweep (counted work). */
    #define BSVM_WW_REVISIT_FACTOR 3.0
    #define BSVM_WW_REVISIT_PASSES 8
    #define BSVM_WW_REVISIT_BUDGET 0.5
    /* ... and only when the recorded points are at most this share of the sweep's (a gap
       concentrated on a few points, as on sector.scale; on mnist the revisits were spread over
       many points and made each sweep dearer than they saved). */
    #define BSVM_WW_REVISIT_MAX_SHARE 0.05
    /* Scores of the active classes only while they are fewer than k / this (beyond, the whole
       row of W per nonzero costs no more cache lines). */
    #define BSVM_WW_SUBSET_FACTOR 3
    /* Subset scores with W larger than this many bytes: row by row with the needed entries
       prefetched this many nonzeros ahead; W in cache: class by class, sums in registers. */
    #define BSVM_WW_CACHED_W_BYTES (2 << 20)
    #define BSVM_WW_SUBSET_AHEAD 16
    #define BSVM_PREFETCH(p) __builtin_prefetch((const void*)(p))

    /* Kernels of the shrinking solver for k <= 16 classes. With k a compile-time constant the
       compiler keeps the k sums (or the k changes) in registers; on small k the generic loops
       spend their time on loop control and on sums kept in memory. The arithmetic is that of
       the generic loops (_scores4: four nonzeros at a time, grouped in pairs; the row update:
       row[c] += a*dc[c]), so the results do not depend on which one ran. */
    #define BSVM_SCORES_K(K) { \
        double acc[K]; Py_ssize_t c, q = 0; \
        for (c = 0; c < K; c++) acc[c] = 0.0; \
        for (; q + 4 <= nnz; q += 4) { \
            const double* r0 = W + (Py_ssize_t)ind[q] * K; \
            const double* r1 = W + (Py_ssize_t)ind[q + 1] * K; \
            const double* r2 = W + (Py_ssize_t)ind[q + 2] * K; \
            const double* r3 = W + (Py_ssize_t)ind[q + 3] * K; \
            double a0 = val[q], a1 = val[q + 1], a2 = val[q + 2], a3 = val[q + 3]; \
            for (c = 0; c < K; c++) \
                acc[c] += (a0 * r0[c] + a1 * r1[c]) + (a2 * r2[c] + a3 * r3[c]); \
        } \
        for (; q < nnz; q++) { \
            const double* r0 = W + (Py_ssize_t)ind[q] * K; \
            double a0 = val[q]; \
            for (c = 0; c < K; c++) acc[c] += a0 * r0[c]; \
        } \
        for (c = 0; c < K; c++) z[c] = acc[c]; \
        return 1; }
    static inline int bsvm_scores_small(const double* W, Py_ssize_t k, const double* val,
                                        const int* ind, Py_ssize_t nnz, double* z) {
        switch (k) {
        case 2: BSVM_SCORES_K(2)
        case 3: BSVM_SCORES_K(3)
        case 4: BSVM_SCORES_K(4)
        case 5: BSVM_SCORES_K(5)
        case 6: BSVM_SCORES_K(6)
        case 7: BSVM_SCORES_K(7)
        case 8: BSVM_SCORES_K(8)
        case 9: BSVM_SCORES_K(9)
        case 10: BSVM_SCORES_K(10)
        case 11: BSVM_SCORES_K(11)
        case 12: BSVM_SCORES_K(12)
        case 13: BSVM_SCORES_K(13)
        case 14: BSVM_SCORES_K(14)
        case 15: BSVM_SCORES_K(15)
        case 16: BSVM_SCORES_K(16)
        default: return 0;
        }
    }
    #define BSVM_ROWS_K(K) { \
        double d[K]; Py_ssize_t c, q; \
        for (c = 0; c < K; c++) d[c] = dc[c]; \
        for (q = 0; q < nnz; q++) { \
            double* row = W + (Py_ssize_t)ind[q] * K; \
            double a = val[q]; \
            for (c = 0; c < K; c++) row[c] += a * d[c]; \
        } \
        return 1; }
    static inline int bsvm_rows_small(double* W, Py_ssize_t k, const double* val,
                                      const int* ind, Py_ssize_t nnz, const double* dc) {
        switch (k) {
        case 2: BSVM_ROWS_K(2)
        case 3: BSVM_ROWS_K(3)
        case 4: BSVM_ROWS_K(4)
        case 5: BSVM_ROWS_K(5)
        case 6: BSVM_ROWS_K(6)
        case 7: BSVM_ROWS_K(7)
        case 8: BSVM_ROWS_K(8)
        case 9: BSVM_ROWS_K(9)
        case 10: BSVM_ROWS_K(10)
        case 11: BSVM_ROWS_K(11)
        case 12: BSVM_ROWS_K(12)
        case 13: BSVM_ROWS_K(13)
        case 14: BSVM_ROWS_K(14)
        case 15: BSVM_ROWS_K(15)
        case 16: BSVM_ROWS_K(16)
        default: return 0;
        }
    }
    """
    int scores_small "bsvm_scores_small"(const double* W, Py_ssize_t k, const double* val,
                                         const int32_t* ind, Py_ssize_t nnz,
                                         double* z) noexcept nogil
    int rows_small "bsvm_rows_small"(double* W, Py_ssize_t k, const double* val,
                                     const int32_t* ind, Py_ssize_t nnz,
                                     const double* dc) noexcept nogil
    void PREFETCH "BSVM_PREFETCH"(const void* p) noexcept nogil
    Py_ssize_t PREFETCH_AHEAD "BSVM_WW_PREFETCH_AHEAD"
    Py_ssize_t SIGNAL_CHECK_EVERY "BSVM_WW_SIGNAL_CHECK_EVERY"
    double KKT_TOL "BSVM_WW_KKT_TOL"
    double EVAL_FRACTION "BSVM_WW_EVAL_FRACTION"
    double STALL_SHARE "BSVM_WW_STALL_SHARE"
    double REVISIT_FACTOR "BSVM_WW_REVISIT_FACTOR"
    Py_ssize_t REVISIT_PASSES "BSVM_WW_REVISIT_PASSES"
    double REVISIT_BUDGET "BSVM_WW_REVISIT_BUDGET"
    double REVISIT_MAX_SHARE "BSVM_WW_REVISIT_MAX_SHARE"
    double SHRINK_SHARE "BSVM_WW_SHRINK_SHARE"
    Py_ssize_t SUBSET_FACTOR "BSVM_WW_SUBSET_FACTOR"
    Py_ssize_t CACHED_W_BYTES "BSVM_WW_CACHED_W_BYTES"
    Py_ssize_t SUBSET_AHEAD "BSVM_WW_SUBSET_AHEAD"

DEF SUB_WALRUS = 0
DEF SUB_ITERATIVE = 1
DEF INSERTION_SORT_MAX = 16      # below this many positive entries, Walrus sorts by insertion

WwResult = collections.namedtuple(
    "WwResult",
    ["W", "beta", "gamma", "n_iter", "n_steps", "primal", "dual", "gap", "gap_iterations",
     "gap_history", "eval_seconds", "solve_seconds", "n_evals", "converged", "n_fallbacks",
     "scored_fraction", "eval_cpu_seconds", "solve_cpu_seconds", "n_unshrink",
     "pair_fraction", "n_revived", "n_revisits"])
WwResult.__doc__ = """Result of one Weston–Watkins BCD solve.

W               float64 (d, k), column j is w_j (feature-major storage)
beta            float64 (n, k−1), block t of row i belongs to class o_i(t)
gamma           float64 (n,), γ_i = Σ_t β_it (cached block sums)
n_iter          outer iterations performed
n_steps         block steps performed (zero rows are not visited)
primal, dual    P(W) and D(β) = Σ_i γ_i − ½‖W‖² at the end (max form); gap = primal − dual
gap_iterations  int64 array: outer iterations at which the gap was evaluated
gap_history     float64 array: the gaps measured there (gap_history[0] is gap_1)
eval_seconds    time spent evaluating primal/dual (excluded from solve_seconds)
solve_seconds   time of the block steps alone (the paper's timer)
n_evals         number of gap evaluations
converged       True when the relative (or absolute) gap test was met
n_fallbacks     Walrus calls that needed the bisection fallback (expected 0)
eval_cpu_seconds, solve_cpu_seconds   the same two timers in CPU time of the solving thread
scored_fraction share of the n_steps·k class scores actually computed (< 1 with screening
                or shrinking)
n_unshrink      how often shrunk pairs were made active again (shrinking only): the gap
                evaluations that revived violating pairs, and the (rare) full un-shrinks
pair_fraction   share of the n_steps·(k−1) (point, class) pairs that were active when visited
                (shrinking only; 1.0 without)
n_revived       shrunk pairs revived by gap evaluations (shrinking only)
n_revisits      block steps of the revisits after the sweeps, included in n_steps
                (shrinking only)
"""


# ---------------------------------------------------------------------------------------------
# Subproblem (4): Walrus, its bisection fallback, and the Shark-style iterative solver
# ---------------------------------------------------------------------------------------------

cdef inline void _insertion_sort_desc(double* a, Py_ssize_t* idx, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t r, s
    cdef double key
    cdef Py_ssize_t key_idx
    for r in range(1, n):
        key = a[r]
        key_idx = idx[r]
        s = r - 1
        while s >= 0 and a[s] < key:
            a[s + 1] = a[s]
            idx[s + 1] = idx[s]
            s -= 1
        a[s + 1] = key
        idx[s + 1] = key_idx


cdef double _bisection(const double* v, Py_ssize_t K, double C, double* b) noexcept nogil:
    # γ* = root of ψ(γ) = γ − Σ_t clip(v_t − γ, 0, C) on [0, max v]; b = clip(v − γ*, 0, C)
    cdef double lo = 0.0, hi = 0.0, mid, psi, bt, s
    cdef Py_ssize_t t, it
    for t in range(K):
        if v[t] > hi:
            hi = v[t]
    for it in range(2000):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        psi = mid
        for t in range(K):
            bt = v[t] - mid
            if bt > C:
                bt = C
            if bt > 0.0:
                psi -= bt
        if psi < 0.0:
            lo = mid
        else:
            hi = mid
    mid = 0.5 * (lo + hi)
    s = 0.0
    for t in range(K):
        bt = v[t] - mid
        if bt > C:
            bt = C
        if bt < 0.0:
            bt = 0.0
        b[t] = bt
        s += bt
    return s


cdef inline void _sift_down(double* hv, Py_ssize_t* hi, Py_ssize_t size,
                            Py_ssize_t r) noexcept nogil:
    # restore the max-heap property below position r
    cdef double x = hv[r]
    cdef Py_ssize_t xi = hi[r], c
    while True:
        c = 2 * r + 1
        if c >= size:
            break
        if c + 1 < size and hv[c + 1] > hv[c]:
            c += 1
        if hv[c] <= x:
            break
        hv[r] = hv[c]
        hi[r] = hi[c]
        r = c
    hv[r] = x
    hi[r] = xi


cdef inline Py_ssize_t _heap_pop(double* hv, Py_ssize_t* hi, Py_ssize_t size, double* value,
                                 Py_ssize_t* pos) noexcept nogil:
    # value, pos = the largest entry of the max-heap hv[0:size] and its position; returns the
    # heap's new size
    value[0] = hv[0]
    pos[0] = hi[0]
    size -= 1
    hv[0] = hv[size]
    hi[0] = hi[size]
    _sift_down(hv, hi, size, 0)
    return size


cdef double _walrus(const double* v, Py_ssize_t K, double C, double* b,
                    double* u, Py_ssize_t* tau, double* hv, Py_ssize_t* hi,
                    int* fallback) noexcept nogil:
    """Exact minimiser b of ½bᵀ(I+11ᵀ)b − vᵀb over [0, C]^K; returns γ = 1ᵀb (§5.5).

    u, tau, hv, hi are scratch arrays of length K. fallback[0] is set to 1 if no event passed
    the KKT check and bisection was used instead (never observed).
    """
    cdef Py_ssize_t t, p = 0, m = 0, nU = 0, r, q, hsize
    cdef double vmax = 0.0, S = 0.0, Sc = 0.0, St, x, gam = 0.0, bt, tol, s
    cdef bint ok
    fallback[0] = 0
    # 1. Trivial case: the positive entries of v go to hv (positions in hi).
    for t in range(K):
        b[t] = 0.0
        if fabs(v[t]) > vmax:
            vmax = fabs(v[t])
        if v[t] > 0.0:
            hv[p] = v[t]
            hi[p] = t
            p += 1
    if p == 0:
        return 0.0
    if K == 1:
        # one variable: ½·2b² − vb, so b = clip(v/2, 0, C)
        bt = 0.5 * v[0]
        b[0] = bt if bt < C else C
        return b[0]
    # 2. Sort: u[:q] = sorted(v[v > 0], reverse=True)[:q], tau = their positions. Short lists
    # are insertion-sorted at once; long ones go through a max-heap and are popped lazily
    # (u[r] is needed only up to r = m ≤ p), as the authors' heaps do: O(p + m log p).
    hsize = p
    if p <= INSERTION_SORT_MAX:
        for r in range(p):
            u[r] = hv[r]
            tau[r] = hi[r]
        _insertion_sort_desc(u, tau, p)
        q = p
    else:
        for r in range(p // 2 - 1, -1, -1):
            _sift_down(hv, hi, p, r)
        q = 0
    tol = KKT_TOL * (vmax if vmax > C else C)
    if tol < KKT_TOL:
        tol = KKT_TOL
    # 3-5. Sweep the events in decreasing order of value: Entry(r) at u_r, Exit(r) at u_r − C.
    # Both sequences are already sorted, so they are merged on the fly (Entry first on ties).
    # State: upper = u[0:nU], free = u[nU:m], lower = u[m:p]; S = Σ free.
    # S is summed with Neumaier compensation (Sc): with hundreds of tied free entries a plain
    # running sum drifts by more than the 1e-12 KKT tolerance.
    ok = False
    while True:
        if m < p and q == m:
            # pop the next largest value: u[q] = max(heap)
            hsize = _heap_pop(hv, hi, hsize, &u[q], &tau[q])
            q += 1
        if m < p and (nU == m or u[m] >= u[nU] - C):
            x = u[m]                  # Entry(m): m becomes free
            m += 1
        elif nU < m:
            x = -u[nU]                # Exit(nU): nU moves from free to upper
            nU += 1
        else:
            break
        St = S + x
        if fabs(S) >= fabs(x):
            Sc += (S - St) + x
        else:
            Sc += (x - St) + S
        S = St
        gam = (C * nU + (S + Sc)) / (1 + m - nU)
        if m < p and q == m:
            hsize = _heap_pop(hv, hi, hsize, &u[q], &tau[q])
            q += 1
        # KKT: u_{nU} − C ≥ γ ≥ u_{nU+1} − C and u_m ≥ γ ≥ u_{m+1} (1-based, ±∞ sentinels)
        if nU > 0 and u[nU - 1] - C < gam - tol:
            continue
        if nU < p and gam < u[nU] - C - tol:
            continue
        if m > 0 and u[m - 1] < gam - tol:
            continue
        if m < p and gam < u[m] - tol:
            continue
        ok = True
        break
    if not ok:
        fallback[0] = 1
        return _bisection(v, K, C, b)
    # 6. b[tau[:nU]] = C; b[tau[nU:m]] = clip(u[nU:m] − γ, 0, C); the rest stays 0.
    s = 0.0
    for r in range(nU):
        b[tau[r]] = C
        s += C
    for r in range(nU, m):
        bt = u[r] - gam
        if bt > C:
            bt = C
        if bt < 0.0:
            bt = 0.0
        b[tau[r]] = bt
        s += bt
    return s


cdef double _iterative(double* r, Py_ssize_t K, double sq, double C, double* b,
                       double eps_sub, Py_ssize_t max_steps) noexcept nogil:
    """Shark-style greedy coordinate descent on (4), warm-started at b (§5.8); returns 1ᵀb.

    r_t = 1 − (w_y − w_{o(t)})ᵀx_i on entry (the unscaled negative gradient at b; overwritten).
    """
    cdef Py_ssize_t step, t, best
    cdef double viol, best_viol, new, d, s
    for step in range(max_steps):
        # best = argmax_t of the projected violation
        best = -1
        best_viol = 0.0
        for t in range(K):
            if r[t] > 0.0 and b[t] < C:
                viol = r[t]
            elif r[t] < 0.0 and b[t] > 0.0:
                viol = -r[t]
            else:
                continue
            if viol > best_viol:
                best_viol = viol
                best = t
        if best < 0 or best_viol < eps_sub:
            break
        # Newton step on coordinate best (diagonal 2‖x‖²), clipped to the box.
        new = b[best] + r[best] / (2.0 * sq)
        if new > C:
            new = C
        if new < 0.0:
            new = 0.0
        d = new - b[best]
        b[best] = new
        # r −= d·‖x‖²·(1 + e_best)
        d *= sq
        for t in range(K):
            r[t] -= d
        r[best] -= d
    s = 0.0
    for t in range(K):
        s += b[t]
    return s


# ---------------------------------------------------------------------------------------------
# One block step of the BCD loop (§5.6)
# ---------------------------------------------------------------------------------------------

cdef struct _Work:
    # scratch arrays, allocated once per solve
    double* z          # k scores
    double* v          # K subproblem inputs (or the gradient r for the iterative solver)
    double* b          # K new block values
    double* dc         # k per-class changes of the coefficient of x_i
    double* u          # K sorted values (Walrus)
    Py_ssize_t* tau    # K positions (Walrus)
    double* hv         # K heap values (Walrus)
    Py_ssize_t* hi     # K heap positions (Walrus)
    Py_ssize_t* act    # k classes whose coefficient changed
    int subsolver
    double eps_sub
    Py_ssize_t max_sub
    long long n_fallbacks
    double ops         # work counter (multiply-adds, roughly) for the gap schedule
    # safe screening (see _block_step); screen = 0 disables it
    int screen
    double* zl         # k: scores of the current point when last computed exactly
    double* Ll         # k: L at that time
    double* L          # k: L_c = Σ over past updates of ‖Δw_c‖ (path length of w_c)
    unsigned char* need  # k: 1 for classes whose score is computed this step
    Py_ssize_t* needl  # k: list of those classes
    double nrm         # ‖x_i‖ of the current point
    double n_scored    # scores computed (Σ nneed), to report how much screening saves
    bint cached_W      # W fits in cache (shrinking: how to compute the scores of a subset)


cdef inline void _scores(const double* W, Py_ssize_t k, const double* val, const int32_t* ind,
                         Py_ssize_t nnz, double* z) noexcept nogil:
    # z = W.T @ x  (W is d × k row-major: one contiguous row of k per nonzero)
    cdef Py_ssize_t c, q, line
    cdef const double* row
    cdef const double* ahead
    cdef double a
    for c in range(k):
        z[c] = 0.0
    for q in range(nnz):
        if q + PREFETCH_AHEAD < nnz:
            ahead = W + <Py_ssize_t>ind[q + PREFETCH_AHEAD] * k
            for line in range(0, k, 8):            # one cache line = 8 doubles
                PREFETCH(ahead + line)
        a = val[q]
        row = W + <Py_ssize_t>ind[q] * k
        for c in range(k):
            z[c] += a * row[c]


cdef inline void _scores4(const double* W, Py_ssize_t k, const double* val,
                          const int32_t* ind, Py_ssize_t nnz, double* z) noexcept nogil:
    # z = W.T @ x like _scores, four nonzeros at a time: z[c] is loaded and stored once per
    # four rows, which shortens the chain of dependent additions through memory (on small k
    # that chain, not the arithmetic, bounds the speed). A different summation order than
    # _scores, so used only by the shrinking solver.
    cdef Py_ssize_t c, q = 0, line
    cdef const double* r0
    cdef const double* r1
    cdef const double* r2
    cdef const double* r3
    cdef const double* ahead
    cdef double a0, a1, a2, a3
    if scores_small(W, k, val, ind, nnz, z):
        return
    for c in range(k):
        z[c] = 0.0
    while q + 4 <= nnz:
        if k > 8 and q + 4 + PREFETCH_AHEAD <= nnz:
            for line in range(4):
                ahead = W + <Py_ssize_t>ind[q + PREFETCH_AHEAD + line] * k
                for c in range(0, k, 8):
                    PREFETCH(ahead + c)
        a0 = val[q]
        a1 = val[q + 1]
        a2 = val[q + 2]
        a3 = val[q + 3]
        r0 = W + <Py_ssize_t>ind[q] * k
        r1 = W + <Py_ssize_t>ind[q + 1] * k
        r2 = W + <Py_ssize_t>ind[q + 2] * k
        r3 = W + <Py_ssize_t>ind[q + 3] * k
        for c in range(k):
            z[c] += (a0 * r0[c] + a1 * r1[c]) + (a2 * r2[c] + a3 * r3[c])
        q += 4
    while q < nnz:
        a0 = val[q]
        r0 = W + <Py_ssize_t>ind[q] * k
        for c in range(k):
            z[c] += a0 * r0[c]
        q += 1


cdef inline void _scores_subset(const double* W, Py_ssize_t k, const double* val,
                                const int32_t* ind, Py_ssize_t nnz, const Py_ssize_t* cls,
                                Py_ssize_t ncls, Py_ssize_t ahead, double* z) noexcept nogil:
    # z[cls] = W[x.indices][:, cls].T @ x.data row by row (one cache line per needed class and
    # nonzero); ahead > 0: those lines are prefetched that many nonzeros ahead (W not in cache)
    cdef Py_ssize_t q, j, c
    cdef double a
    cdef const double* row
    for j in range(ncls):
        z[cls[j]] = 0.0
    for q in range(nnz):
        if ahead > 0 and q + ahead < nnz:
            row = W + <Py_ssize_t>ind[q + ahead] * k
            for j in range(ncls):
                PREFETCH(row + cls[j])
        a = val[q]
        row = W + <Py_ssize_t>ind[q] * k
        for j in range(ncls):
            c = cls[j]
            z[c] += a * row[c]


cdef inline Py_ssize_t _block_changes(Py_ssize_t k, Py_ssize_t y, Py_ssize_t npairs,
                                      const int32_t* pairs, const double* b, double* beta_i,
                                      double* dc, Py_ssize_t* cls) noexcept nogil:
    # Δ = b − β_i over the block's pairs t = pairs[j] (t = j when pairs is NULL), β_i ← b;
    # dc = per-class change of the coefficient of x_i: dc[y] = ΣΔ, dc[o(t)] = −Δ_t; cls[0:nact]
    # = the classes whose coefficient changed (y last). Returns nact, 0 when nothing changed.
    cdef Py_ssize_t j, t, c, nact = 0
    cdef double d, sumd = 0.0
    for c in range(k):
        dc[c] = 0.0
    for j in range(npairs):
        t = j if pairs == NULL else pairs[j]
        d = b[j] - beta_i[t]
        if d != 0.0:
            c = t + 1 if t + 1 != y else 0
            dc[c] = -d
            cls[nact] = c
            nact += 1
            sumd += d
            beta_i[t] = b[j]
    if nact == 0:
        return 0
    dc[y] = sumd
    cls[nact] = y
    return nact + 1


cdef inline void _add_changes(double* W, Py_ssize_t k, const double* val, const int32_t* ind,
                              Py_ssize_t nnz, const double* dc, const Py_ssize_t* cls,
                              Py_ssize_t nact, bint small_rows, _Work* w) noexcept nogil:
    # W += x dcᵀ, dc nonzero on the nact classes cls[0:nact] only; small_rows: the whole-row
    # update goes through rows_small for k ≤ 16
    cdef Py_ssize_t q, j, c
    cdef double a
    cdef double* row
    w.ops += <double>(nnz * nact if 4 * nact <= k else nnz * k) * 0.5   # rows are in cache
    if 4 * nact <= k:
        # few classes changed: W[f, cls] += x_f * dc[cls] for each nonzero x_f
        for q in range(nnz):
            a = val[q]
            row = W + <Py_ssize_t>ind[q] * k
            for j in range(nact):
                c = cls[j]
                row[c] += a * dc[c]
    elif not (small_rows and rows_small(W, k, val, ind, nnz, dc)):
        # W[f, :] += x_f * dc (contiguous row of k)
        for q in range(nnz):
            a = val[q]
            row = W + <Py_ssize_t>ind[q] * k
            for c in range(k):
                row[c] += a * dc[c]


cdef double _block_step(double* W, Py_ssize_t k, const double* val, const int32_t* ind,
                        Py_ssize_t nnz, double sq, Py_ssize_t y, double C, double* beta_i,
                        double gamma_i, _Work* w) noexcept nogil:
    """Minimise g over block i exactly (Walrus) or approximately (iterative); update β_i and W.

    Returns the new block sum γ_i. sq = ‖x_i‖² > 0.
    """
    cdef Py_ssize_t K = k - 1, t, c, j, nact, nneed = k
    cdef double zy, inv_sq, gam, drift, zy_lb, z_ub
    cdef int fb = 0
    cdef double* z = w.z
    cdef double* v = w.v
    cdef double* b = w.b
    cdef double* dc = w.dc
    cdef Py_ssize_t* act = w.act
    cdef unsigned char* need = w.need
    cdef Py_ssize_t* needl = w.needl
    inv_sq = 1.0 / sq
    if w.screen:
        # Safe screening. Since the last exact score of class c for this point, w_c has moved
        # by at most L_c − Ll_c, so |z_c − zl_c| ≤ (L_c − Ll_c)·‖x_i‖. A class with β_it = 0
        # whose upper bound of v_t is ≤ 0 stays at b_t = 0 (entries with v_t ≤ 0 are always 0
        # in the minimiser of (4), §5.4), so its score is not needed: the block step is still
        # exact. Only the scores of the remaining classes are computed.
        drift = (w.L[y] - w.Ll[y]) * w.nrm * (1.0 + 1e-9)
        zy_lb = w.zl[y] - drift - 1e-12 * (1.0 + fabs(w.zl[y]))
        nneed = 1
        needl[0] = y
        need[y] = 1
        for t in range(K):
            c = t + 1 if t + 1 != y else 0
            if beta_i[t] == 0.0:
                drift = (w.L[c] - w.Ll[c]) * w.nrm * (1.0 + 1e-9)
                z_ub = w.zl[c] + drift + 1e-12 * (1.0 + fabs(w.zl[c]))
                if (1.0 - zy_lb + z_ub) * inv_sq + gamma_i < 0.0:
                    continue
            need[c] = 1
            needl[nneed] = c
            nneed += 1
        if 3 * nneed > k:
            nneed = k
    if nneed == k:
        _scores(W, k, val, ind, nnz, z)
        w.ops += <double>(nnz * k + 4 * k)
        if w.screen:
            for c in range(k):
                w.zl[c] = z[c]
                w.Ll[c] = w.L[c]
                need[c] = 1
    else:
        # z[need] = W[x.indices][:, need].T @ x.data (one cache line per needed class and row)
        _scores_subset(W, k, val, ind, nnz, needl, nneed, 0, z)
        for j in range(nneed):
            c = needl[j]
            w.zl[c] = z[c]
            w.Ll[c] = w.L[c]
        w.ops += <double>(nnz * nneed * 2 + 4 * k)
    w.n_scored += nneed
    zy = z[y]
    if w.subsolver == SUB_WALRUS:
        # v_t = (1 − z_y + z_{o(t)})/‖x‖² + β_it + γ_i   (screened classes: v_t ≤ 0, set to 0)
        for t in range(K):
            c = t + 1 if t + 1 != y else 0
            if not w.screen or need[c]:
                v[t] = (1.0 - zy + z[c]) * inv_sq + beta_i[t] + gamma_i
            else:
                v[t] = 0.0
        gam = _walrus(v, K, C, b, w.u, w.tau, w.hv, w.hi, &fb)
        w.n_fallbacks += fb
    else:
        # r_t = 1 − z_y + z_{o(t)}, b warm-started at β_i   (screened classes: frozen at 0)
        for t in range(K):
            c = t + 1 if t + 1 != y else 0
            if not w.screen or need[c]:
                v[t] = 1.0 - zy + z[c]
            else:
                v[t] = -INFINITY
            b[t] = beta_i[t]
        gam = _iterative(v, K, sq, C, b, w.eps_sub, w.max_sub)
    if w.screen:
        for c in range(k):
            need[c] = 0
    # Δ = b − β_i;  dc = per-class change: dc[y] = ΣΔ, dc[o(t)] = −Δ_t;  W += x dcᵀ
    nact = _block_changes(k, y, K, NULL, b, beta_i, dc, act)
    if nact == 0:
        return gamma_i
    if w.screen:
        # path lengths: ‖Δw_c‖ = |dc_c|·‖x_i‖
        for j in range(nact):
            c = act[j]
            w.L[c] += fabs(dc[c]) * w.nrm
    _add_changes(W, k, val, ind, nnz, dc, act, nact, False, w)
    return gam


cdef struct _Shrink:
    # state of the (instance, class) shrinking of one sweep (see _block_step_shrinking)
    double limit       # shrink a pair at a bound that pushes against it by more than this
    double gap_active  # Σ over the visited active pairs of their duality-gap terms
    long long n_pairs  # active pairs visited in this sweep
    double sum_pg      # Σ |projected gradient| over them


cdef double _block_step_shrinking(double* W, Py_ssize_t k, const double* val,
                                  const int32_t* ind, Py_ssize_t nnz, double sq, Py_ssize_t y,
                                  double C, double* beta_i, double gamma_i, int32_t* act,
                                  Py_ssize_t* n_act, _Work* w, _Shrink* sh) noexcept nogil:
    """The block step of _block_step restricted to the active pairs act[0:n_act] of point i.

    The other pairs stay at their bound (0 or C), so the block subproblem (4) over the active
    pairs A is (4) again with v_A shifted by the fixed sum Σ_{t∉A} β_it (exact: Walrus still
    solves the restricted block exactly). Before the step, an active pair at a bound whose
    gradient pushes against it by more than sh.limit leaves the active set (swapped behind the
    active ones): LIBLINEAR's shrinking in the box-constrained dual D2, where
    r_t = 1 − (w_y − w_{o(t)})ᵀx_i = −∂g/∂β_it, so β_it = 0 with r_t < −limit (margin above
    1 + limit) or β_it = C with r_t > limit. Its gap term (C − β)·max(r, 0) + β·max(−r, 0) is
    added to sh.gap_active (the duality gap is the sum of these terms over all pairs).
    Returns the new γ_i = Σ_t β_it.
    """
    cdef Py_ssize_t K = k - 1, t, c, q, j, nact, na = n_act[0], nneed
    cdef double zy, inv_sq, gam, gam_a, fixed, r, b, pg, vblock = 0.0, acc
    cdef int fb = 0
    cdef int32_t tmp
    cdef double* z = w.z
    cdef double* v = w.v
    cdef double* bb = w.b
    cdef double* dc = w.dc
    cdef Py_ssize_t* cls = w.act
    cdef Py_ssize_t* needl = w.needl
    inv_sq = 1.0 / sq
    # scores of class y and of the active pairs' classes: the whole row of W per nonzero when
    # that is most of it, else one entry (one cache line) per needed class
    nneed = na + 1
    if SUBSET_FACTOR * nneed > k:
        _scores4(W, k, val, ind, nnz, z)
        w.ops += <double>(nnz * k + 4 * k)
        w.n_scored += k
    else:
        needl[0] = y
        for j in range(na):
            t = act[j]
            needl[j + 1] = t + 1 if t + 1 != y else 0
        if w.cached_W:
            # class by class: the sum stays in a register, the loads are independent
            for j in range(nneed):
                c = needl[j]
                acc = 0.0
                for q in range(nnz):
                    acc += val[q] * W[<Py_ssize_t>ind[q] * k + c]
                z[c] = acc
        else:
            # row by row: the needed entries are scattered over a row of W that is not in
            # cache, so each one's line is prefetched ahead
            _scores_subset(W, k, val, ind, nnz, needl, nneed, SUBSET_AHEAD, z)
        w.ops += <double>(nnz * nneed * 2 + 4 * nneed)
        w.n_scored += nneed
    zy = z[y]
    # r_t for the active pairs, shrinking the ones that push against their bound; v[j] = r_t
    gam_a = 0.0
    j = 0
    while j < na:
        t = act[j]
        c = t + 1 if t + 1 != y else 0
        r = 1.0 - zy + z[c]
        b = beta_i[t]
        if b == 0.0:
            if r < -sh.limit:
                na -= 1
                tmp = act[j]; act[j] = act[na]; act[na] = tmp
                continue
            pg = r if r > 0.0 else 0.0
            sh.gap_active += C * pg
        elif b == C:
            if r > sh.limit:
                na -= 1
                tmp = act[j]; act[j] = act[na]; act[na] = tmp
                continue
            pg = r if r < 0.0 else 0.0
            sh.gap_active -= C * pg
        else:
            pg = r
            sh.gap_active += (C - b) * r if r > 0.0 else -b * r
        if fabs(pg) > vblock:
            vblock = fabs(pg)
        sh.sum_pg += fabs(pg)
        v[j] = r
        gam_a += b
        j += 1
    n_act[0] = na
    sh.n_pairs += na
    if na == 0 or vblock <= 1e-12:
        return gamma_i                  # nothing to optimise (LIBLINEAR skips such blocks too)
    fixed = gamma_i - gam_a             # Σ of the shrunk pairs' β (those at C)
    if w.subsolver == SUB_WALRUS:
        # (4) over the active pairs: v_t = r_t/‖x‖² + β_it + Σ_{s∈A} β_is
        for j in range(na):
            v[j] = v[j] * inv_sq + beta_i[act[j]] + gam_a
        gam = _walrus(v, na, C, bb, w.u, w.tau, w.hv, w.hi, &fb)
        w.n_fallbacks += fb
    else:
        for j in range(na):
            bb[j] = beta_i[act[j]]
        gam = _iterative(v, na, sq, C, bb, w.eps_sub, w.max_sub)
    # Δ = b − β_i on the active pairs; dc = per-class change of the coefficient of x_i
    nact = _block_changes(k, y, na, act, bb, beta_i, dc, cls)
    if nact == 0:
        return gamma_i
    _add_changes(W, k, val, ind, nnz, dc, cls, nact, True, w)
    return gam + fixed


# ---------------------------------------------------------------------------------------------
# Objectives (§5.7), timing, signals
# ---------------------------------------------------------------------------------------------

cdef struct _Problem:
    CsrRows X              # the training rows (budgetsvm/_csr.pxd)
    const int32_t* y       # class index 0..k−1
    const double* C        # per-instance cost C_i
    Py_ssize_t k


cdef inline double _row_hinge(const double* z, Py_ssize_t k, double zy) noexcept nogil:
    # Σ_{j≠y} max(0, 1 − z_y + z_j) of one point from its scores z (z_y = its class's score)
    cdef Py_ssize_t j
    cdef double li = 0.0, h
    for j in range(k):
        h = 1.0 - zy + z[j]
        if h > 0.0:
            li += h
    return li - 1.0               # the j = y term contributed exactly max(0, 1) = 1


cdef void _objectives(const _Problem* p, const double* W, const double* gamma, double* z,
                      double* primal, double* dual, bint fast=False) noexcept nogil:
    # wsq = ‖W‖²;  P = ½wsq + Σ_i C_i Σ_{j≠y_i} max(0, 1 − z_{y_i} + z_j);  D = Σ_i γ_i − ½wsq
    cdef Py_ssize_t i, k = p.k
    cdef Py_ssize_t f, dk = p.X.n_cols * p.k
    cdef SparseRow x
    cdef double wsq = 0.0, loss = 0.0, gsum = 0.0
    for f in range(dk):
        wsq += W[f] * W[f]
    for i in range(p.X.n_rows):
        x = csr_row(&p.X, i)
        if fast:
            _scores4(W, k, x.val, x.ind, x.nnz, z)
        else:
            _scores(W, k, x.val, x.ind, x.nnz, z)
        loss += p.C[i] * _row_hinge(z, k, z[p.y[i]])
        gsum += gamma[i]
    primal[0] = 0.5 * wsq + loss
    dual[0] = gsum - 0.5 * wsq


cdef void _objectives_shrinking(const _Problem* p, const double* W, const double* gamma,
                                const double* beta, int32_t* act, Py_ssize_t act_stride,
                                Py_ssize_t* n_act, double* z, double* primal, double* dual,
                                long long* n_revived) noexcept nogil:
    # _objectives(fast=True) (but ‖W‖² summed in four parts) that also revives the shrunk pairs
    # that violate their bound at this W: β = 0 with r_t > 0 (margin below 1) or β = C_i with
    # r_t < 0. These are the shrunk pairs whose gap terms are positive (the gap is the sum of the
    # pairs' terms, §5.6), so afterwards the active pairs hold the whole gap. The scores are the
    # evaluation's own, so the check costs O(K) per row on top of it.
    cdef Py_ssize_t i, j, t, c, na, y, K = p.k - 1, k = p.k
    cdef Py_ssize_t f, dk = p.X.n_cols * p.k
    cdef SparseRow x
    cdef double wsq = 0.0, loss = 0.0, gsum = 0.0, zy, r, b, Ci
    cdef int32_t* a
    cdef int32_t tmp
    cdef long long revived = 0
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    # ‖W‖² with four independent sums: one running sum is bound by the latency of its additions
    # (about a third of an evaluation on sector.scale), four by the memory bandwidth
    f = 0
    while f + 4 <= dk:
        s0 += W[f] * W[f]
        s1 += W[f + 1] * W[f + 1]
        s2 += W[f + 2] * W[f + 2]
        s3 += W[f + 3] * W[f + 3]
        f += 4
    while f < dk:
        s0 += W[f] * W[f]
        f += 1
    wsq = (s0 + s1) + (s2 + s3)
    for i in range(p.X.n_rows):
        x = csr_row(&p.X, i)
        _scores4(W, k, x.val, x.ind, x.nnz, z)
        y = p.y[i]
        zy = z[y]
        Ci = p.C[i]
        loss += Ci * _row_hinge(z, k, zy)
        gsum += gamma[i]
        a = act + i * act_stride
        na = n_act[i]
        for j in range(na, K):
            t = a[j]
            c = t + 1 if t + 1 != y else 0
            r = 1.0 - zy + z[c]
            b = beta[i * K + t]
            if (b == 0.0 and r > 0.0) or (b == Ci and r < 0.0):
                tmp = a[na]; a[na] = a[j]; a[j] = tmp
                na += 1
                revived += 1
        n_act[i] = na
    primal[0] = 0.5 * wsq + loss
    dual[0] = gsum - 0.5 * wsq
    n_revived[0] = revived


# ---------------------------------------------------------------------------------------------
# The solver
# ---------------------------------------------------------------------------------------------

cdef inline int _step_limit(long long n_steps, long long max_steps,
                            Py_ssize_t* until_check) except -1 nogil:
    # 1 once max_steps block steps are done (max_steps = 0: no limit), else 0 after a check for
    # Ctrl-C every SIGNAL_CHECK_EVERY steps (which raises out of the sweep)
    if max_steps > 0 and n_steps >= max_steps:
        return 1
    until_check[0] -= 1
    if until_check[0] == 0:
        until_check[0] = SIGNAL_CHECK_EVERY
        _check_signals()
    return 0


def _as_arrays(data, indices, indptr, y, C_i, Py_ssize_t n_features, Py_ssize_t n_classes):
    data = np.ascontiguousarray(data, dtype=np.float64)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    if n_features > np.iinfo(np.int32).max:
        raise ValueError("more than 2^31 − 1 features are not supported")
    indices = np.ascontiguousarray(indices, dtype=np.int32)
    y = np.ascontiguousarray(y, dtype=np.int32)
    C_i = np.ascontiguousarray(C_i, dtype=np.float64)
    n = indptr.shape[0] - 1
    if n < 0 or y.shape[0] != n or C_i.shape[0] != n:
        raise ValueError("indptr, y and C_i disagree on the number of rows")
    if n_classes < 2:
        raise ValueError("the Weston–Watkins SVM needs at least two classes")
    nnz = int(indptr[n]) if n >= 0 else 0
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or nnz > data.shape[0] \
            or data.shape[0] != indices.shape[0]:
        raise ValueError("malformed CSR arrays")
    if nnz and (indices[:nnz].min() < 0 or indices[:nnz].max() >= n_features):
        raise ValueError("feature index out of range")
    if n and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError("class index out of range")
    if n and not np.all(C_i > 0):
        raise ValueError("C_i must be positive")
    return data, indices, indptr, y, C_i


def ww_solve(data, indices, indptr, y, C_i, Py_ssize_t n_features, Py_ssize_t n_classes, *,
             double delta=0.0009, double abs_gap=0.0, Py_ssize_t max_iter=1000,
             subsolver="walrus", double eps_sub=1e-6, Py_ssize_t max_sub_steps=0,
             Py_ssize_t gap_every=0, long long max_steps=0, int screening=-1, uint64_t seed=1,
             callback=None, shrinking=True, trace=None):
    """Weston–Watkins SVM by block coordinate descent on D2 (docs/ALGORITHMS.md §5.6,
    Algorithm 1 of Wang & Scott, ICML 2021), exact blocks by Walrus (§5.5) or Shark-style
    iterations (§5.8).

    Given: CSR rows (data float64, indices in [0, n_features), indptr; any bias column already
    appended), y the class index 0..n_classes−1 of every row, C_i the per-instance cost (C times
    the class weight of y_i), the stopping rule gap_t < delta·gap_1 (or gap_t < abs_gap when
    abs_gap > 0) checked whenever the gap is evaluated, max_iter outer iterations (0 = unlimited),
    subsolver 'walrus' or 'iterative' (eps_sub, max_sub_steps: its tolerance and step limit,
    0 = 10·k), gap_every (evaluate the gap every that many outer iterations; 0 = adaptive:
    after iteration 1, then whenever the block steps have done ~11.5 times the work of one
    evaluation (so evaluation stays below ~8 % of the run), or sooner when the linear rate
    measured between the last two evaluations predicts that the stopping test will pass;
    always at the end),
    max_steps (stop after that many block steps; 0 = no limit; for tests), the RNG seed (a fresh
    permutation per outer iteration) and an optional callback(iteration, gap/gap_1) called once
    per outer iteration with the last measured relative gap. screening: 1 on, 0 or −1 (default)
    off: experimental safe screening of classes whose block entry provably stays
    0 (see _block_step); it needs 2·n·k doubles and never changes the block minimiser; not with
    shrinking.

    shrinking=False is Algorithm 1 of Wang & Scott (2021) as published. shrinking=True (the default
    of -s ww): each point keeps a list of active pairs (t, the class o(t)); a block step computes
    the scores of y and of the active classes only, drops pairs at a bound that push against it by
    more than half the mean |projected gradient| of the previous sweep, and solves (4) over the rest
    exactly (_block_step_shrinking); a point with no active pair leaves the sweep. The first sweep
    shrinks nothing. After each sweep from the second on, the points whose gap terms before their
    step exceeded 3 times the previous sweep's mean are stepped again (revisits: up to 8 passes,
    at most half the sweep's work). The stopping rule is unchanged: it is the duality gap of the
    whole problem, evaluated on the same schedule plus whenever the active pairs' own gap terms
    fall below the target or below a quarter of the last measured gap; every evaluation that
    fails revives the shrunk pairs that violate their bound at that W (it has all the scores).
    trace (for tests, shrinking only) receives one dict per outer iteration: limit (the
    shrinking threshold it used), beta and inactive (β and the pairs left inactive by the sweep
    and its revisits, before the evaluation), inactive_after (after it), revived (pairs revived),
    full_unshrink (every pair made active: only when none was left), unshrunk (either),
    revisits (block steps of the revisits), evaluated and gap.

    Returns a WwResult. A pending Ctrl-C is noticed within 10^4 block steps and raises
    KeyboardInterrupt; an exception raised by the callback propagates.
    """
    if subsolver not in ("walrus", "iterative"):
        raise ValueError("subsolver must be 'walrus' or 'iterative'")
    if max_iter < 0 or gap_every < 0 or max_steps < 0 or max_sub_steps < 0:
        raise ValueError("iteration limits must be >= 0")
    if not delta >= 0 or not abs_gap >= 0:
        raise ValueError("delta and abs_gap must be >= 0")
    data, indices, indptr, y, C_i = _as_arrays(data, indices, indptr, y, C_i, n_features,
                                               n_classes)
    cdef Py_ssize_t n = indptr.shape[0] - 1
    cdef Py_ssize_t k = n_classes, K = n_classes - 1, d = n_features

    # sq_i = ‖x_i‖²;  rows with sq_i = 0 get β_i = C_i·1 once and are never visited (§0.1)
    sq = np.bincount(np.repeat(np.arange(n), np.diff(indptr)), weights=data[:indptr[n]] ** 2,
                     minlength=n).astype(np.float64) if n else np.zeros(0)
    W = np.zeros((d, k), dtype=np.float64)
    beta = np.zeros((n, K), dtype=np.float64)
    gamma = np.zeros(n, dtype=np.float64)
    zero = sq == 0.0
    beta[zero, :] = C_i[zero, None]
    gamma[zero] = C_i[zero] * K
    order = np.flatnonzero(~zero).astype(np.intp)
    # the gap history grows by doubling as evaluations happen (below): nothing proportional to
    # max_iter is allocated, so a large --max-iter costs no memory (0 = unlimited, as LIBLINEAR)
    hist_cap = 64
    hist_it = np.zeros(hist_cap, dtype=np.int64)
    hist_gap = np.zeros(hist_cap, dtype=np.float64)
    # scratch (numpy-owned, freed with the arrays)
    z = np.zeros(k, dtype=np.float64)
    dc = np.zeros(k, dtype=np.float64)
    vv = np.zeros(max(K, 1), dtype=np.float64)
    bb = np.zeros(max(K, 1), dtype=np.float64)
    uu = np.zeros(max(K, 1), dtype=np.float64)
    hv = np.zeros(max(K, 1), dtype=np.float64)
    hi = np.zeros(max(K, 1), dtype=np.intp)
    tau = np.zeros(max(K, 1), dtype=np.intp)
    act = np.zeros(k, dtype=np.intp)
    if shrinking and screening > 0:
        raise ValueError("screening and shrinking exclude each other")
    # shrinking: act[i, 0:n_act[i]] are the active pairs t of point i
    act_pairs = np.tile(np.arange(max(K, 1), dtype=np.int32), (n if shrinking else 1, 1))
    n_act = np.full(n if shrinking else 1, K, dtype=np.intp)
    if screening < 0:
        # Off by default: on sector.scale the path-length bound screened only ~2 % of the
        # class scores (the bound accumulates every update of w_c over an epoch).
        screening = 0
    shape_s = (n if screening else 1, k)
    zl = np.zeros(shape_s, dtype=np.float64)
    Ll = np.zeros(shape_s, dtype=np.float64)
    Lc = np.zeros(k, dtype=np.float64)
    need = np.zeros(k, dtype=np.uint8)
    needl = np.zeros(k, dtype=np.intp)
    nrm = np.sqrt(sq)

    cdef const double[::1] v_data = data
    cdef const int32_t[::1] v_indices = indices
    cdef const int64_t[::1] v_indptr = indptr
    cdef const int32_t[::1] v_y = y
    cdef const double[::1] v_C = C_i
    cdef const double[::1] v_sq = sq
    cdef double[:, ::1] v_W = W
    cdef double[:, ::1] v_beta = beta
    cdef double[::1] v_gamma = gamma
    cdef Py_ssize_t[::1] v_order = order
    cdef int64_t[::1] v_hist_it = hist_it
    cdef double[::1] v_hist_gap = hist_gap
    cdef double[::1] v_z = z, v_dc = dc, v_v = vv, v_b = bb, v_u = uu
    cdef Py_ssize_t[::1] v_tau = tau, v_act = act, v_hi = hi
    cdef double[::1] v_hv = hv
    cdef double[:, ::1] v_zl = zl, v_Ll = Ll
    cdef double[::1] v_Lc = Lc
    cdef const double[::1] v_nrm = nrm
    cdef cnp.uint8_t[::1] v_need = need
    cdef Py_ssize_t[::1] v_needl = needl
    cdef double dummy = 0.0
    cdef int32_t dummy_int = 0
    cdef Py_ssize_t dummy_index = 0

    cdef _Problem p
    csr_bind(&p.X, v_data, v_indices, v_indptr, d)
    p.y = &v_y[0] if n > 0 else &dummy_int
    p.C = &v_C[0] if n > 0 else &dummy
    p.k = k
    cdef const double* sqp = &v_sq[0] if n > 0 else &dummy
    cdef double* Wp = &v_W[0, 0] if d > 0 else &dummy
    cdef double* betap = &v_beta[0, 0] if n > 0 else &dummy
    cdef double* gammap = &v_gamma[0] if n > 0 else &dummy
    cdef Py_ssize_t* index = &v_order[0] if order.shape[0] > 0 else &dummy_index
    cdef Py_ssize_t n_visit = order.shape[0]

    cdef _Work w
    w.z = &v_z[0]
    w.v = &v_v[0]
    w.b = &v_b[0]
    w.dc = &v_dc[0]
    w.u = &v_u[0]
    w.hv = &v_hv[0]
    w.hi = &v_hi[0]
    w.tau = &v_tau[0]
    w.act = &v_act[0]
    w.subsolver = SUB_WALRUS if subsolver == "walrus" else SUB_ITERATIVE
    w.eps_sub = eps_sub
    w.max_sub = max_sub_steps if max_sub_steps > 0 else 10 * k
    w.n_fallbacks = 0
    w.ops = 0.0
    w.screen = screening
    w.n_scored = 0.0
    w.cached_W = d * k * 8 <= CACHED_W_BYTES
    w.L = &v_Lc[0]
    w.need = &v_need[0]
    w.needl = &v_needl[0]
    w.zl = &v_zl[0, 0]
    w.Ll = &v_Ll[0, 0]
    w.nrm = 0.0
    cdef double* zlp = &v_zl[0, 0]
    cdef double* Llp = &v_Ll[0, 0]
    cdef const double* nrmp = &v_nrm[0] if n > 0 else &dummy
    cdef int32_t[:, ::1] v_act_pairs = act_pairs
    cdef Py_ssize_t[::1] v_n_act = n_act
    cdef int32_t* actp = &v_act_pairs[0, 0]
    cdef Py_ssize_t* nactp = &v_n_act[0]
    cdef bint shrink = shrinking
    cdef Py_ssize_t n_active = n_visit, act_stride = max(K, 1)
    cdef long long n_unshrink = 0, pair_visits = 0, revived = 0, n_revived = 0
    # revisits: revp[0:n_rev] = the points to step again after the sweep
    cdef long long n_revisits = 0, revisits_before = 0, n_full = 0, full_before = 0
    cdef Py_ssize_t n_rev = 0, rows_seen = 0, rp, j, n_visit_before = 0
    cdef double rev_thr = INFINITY, g_before
    cdef _Shrink sweep
    cdef double ops_start = 0.0, ops_sweep
    rev_arr = np.zeros(max(n, 1), dtype=np.intp)
    cdef Py_ssize_t[::1] v_rev = rev_arr
    cdef Py_ssize_t* revp = &v_rev[0]
    cdef _Shrink sh
    sh.limit = INFINITY
    sh.gap_active = 0.0
    sh.n_pairs = 0
    cdef double limit_used = INFINITY
    cdef long long unshrink_before = 0
    # work of one gap evaluation, in the units of w.ops
    cdef double eval_ops = <double>indptr[n] * k + <double>d * k + <double>n * k

    cdef bint has_callback = callback is not None
    cdef Py_ssize_t it = 0, s, i, n_evals = 0, next_eval = 1, last_eval_it = -1, interval
    cdef long long n_steps = 0
    cdef Py_ssize_t until_check = SIGNAL_CHECK_EVERY
    cdef bint converged = False, step_limit = False
    cdef double t0, t1, e, t_solve = 0.0, t_eval = 0.0, c0, c1, c_solve = 0.0, c_eval = 0.0
    cdef double primal = 0.0, dual = 0.0, gap = INFINITY, gap1 = INFINITY, rel = 1.0
    cdef double prev_gap = INFINITY, rate, ahead
    cdef Py_ssize_t prev_it = 0
    cdef SparseRow x
    cdef Rng rng
    rng_seed(&rng, seed)

    with nogil:
        while max_iter == 0 or it < max_iter:
            t0 = _now()
            c0 = _cpu()
            limit_used = sh.limit
            unshrink_before = n_unshrink
            full_before = n_full
            revisits_before = n_revisits
            if not shrink:
                # index = rng.permutation(index)
                rng_shuffle(&rng, index, n_visit)
                for s in range(n_visit):
                    if _step_limit(n_steps, max_steps, &until_check):
                        step_limit = True
                        break
                    i = index[s]
                    x = csr_row(&p.X, i)
                    if w.screen:
                        w.zl = zlp + i * k
                        w.Ll = Llp + i * k
                        w.nrm = nrmp[i]
                    gammap[i] = _block_step(Wp, k, x.val, x.ind, x.nnz, sqp[i], p.y[i], p.C[i],
                                            betap + i * K, gammap[i], &w)
                    n_steps += 1
            else:
                # the active points in a fresh order; a point whose pairs are all shrunk leaves
                # (swapped behind the active ones, as LIBLINEAR's solvers do)
                rng_shuffle_fast(&rng, index, n_active)
                n_visit_before = n_active
                ops_start = w.ops
                sh.gap_active = 0.0
                sh.n_pairs = 0
                sh.sum_pg = 0.0
                s = 0
                n_rev = 0
                while s < n_active:
                    if _step_limit(n_steps, max_steps, &until_check):
                        step_limit = True
                        break
                    i = index[s]
                    x = csr_row(&p.X, i)
                    g_before = sh.gap_active
                    gammap[i] = _block_step_shrinking(
                        Wp, k, x.val, x.ind, x.nnz, sqp[i], p.y[i], p.C[i], betap + i * K,
                        gammap[i], actp + i * act_stride, nactp + i, &w, &sh)
                    n_steps += 1
                    if sh.gap_active - g_before > rev_thr:
                        # the gap terms of this point had grown far beyond the mean since its
                        # last step: it is visited again after the sweep
                        revp[n_rev] = i
                        n_rev += 1
                    if nactp[i] == 0:
                        n_active -= 1
                        index[s] = index[n_active]
                        index[n_active] = i
                        continue
                    s += 1
                # the sweep's statistics drive shrinking and the schedule; the revisits below
                # only add their pairs to pair_visits
                sweep = sh
                rows_seen = s + (n_visit_before - n_active)
                if not step_limit and n_rev > 0 and n_rev <= REVISIT_MAX_SHARE * rows_seen:
                    # Revisits (§5.6): the few points whose gap terms grew most between two of
                    # their steps (on sector.scale short rows with many classes at a bound
                    # hold most of the gap) get up to REVISIT_PASSES more exact block steps,
                    # in sweep order, while they cost less than REVISIT_BUDGET times the sweep.
                    # No pair is shrunk in them.
                    sh.limit = INFINITY
                    ops_sweep = w.ops - ops_start
                    ops_start = w.ops
                    for rp in range(REVISIT_PASSES):
                        if w.ops - ops_start > REVISIT_BUDGET * ops_sweep or step_limit:
                            break
                        for j in range(n_rev):
                            i = revp[j]
                            if nactp[i] == 0:
                                continue
                            if _step_limit(n_steps, max_steps, &until_check):
                                step_limit = True
                                break
                            x = csr_row(&p.X, i)
                            gammap[i] = _block_step_shrinking(
                                Wp, k, x.val, x.ind, x.nnz, sqp[i], p.y[i], p.C[i],
                                betap + i * K, gammap[i], actp + i * act_stride, nactp + i, &w,
                                &sh)
                            n_steps += 1
                            n_revisits += 1
                pair_visits += sh.n_pairs
                sh = sweep
                # next sweep: revisit the points whose gap terms before their step exceed
                # REVISIT_FACTOR times this sweep's mean (none in the first sweep, so gap_1 is
                # Algorithm 1's)
                rev_thr = REVISIT_FACTOR * sh.gap_active / (rows_seen if rows_seen > 0 else 1)
            t_solve += _now() - t0
            c_solve += _cpu() - c0
            if step_limit:
                break
            it += 1
            if shrink and trace is not None:
                with gil:
                    # the pairs left inactive by this sweep, and β, before any un-shrinking
                    inactive = np.zeros((n, K), dtype=bool)
                    for i in range(n):
                        inactive[i, act_pairs[i, n_act[i]:]] = True
                    beta_end = beta.copy()
            if shrink:
                # After this sweep, a pair at a bound is shrunk when it pushes against the bound
                # by more than half the mean |projected gradient| of the active pairs in this
                # sweep. (LIBLINEAR compares with the extreme values of the previous sweep; with
                # k − 1 pairs per point a few far violators keep those large, and on sector.scale
                # almost nothing shrank.)
                sh.limit = SHRINK_SHARE * sh.sum_pg / (sh.n_pairs if sh.n_pairs > 0 else 1)
                # The active pairs' own (stale, per-visit) gap terms fell below the target, or
                # below STALL_SHARE of the last measured gap: either the whole gap followed (the
                # test may pass) or the shrunk pairs now hold it and the sweeps stall on a
                # converged sub-problem. An evaluation tells, and revives those pairs.
                if gap1 < INFINITY and (sh.gap_active < delta * gap1
                                        or sh.gap_active < STALL_SHARE * gap):
                    if next_eval > it:
                        next_eval = it
            if it >= next_eval or it == max_iter:
                # gap = P(W) − D(β); the solve timer is paused (as in the paper)
                t1 = _now()
                c1 = _cpu()
                if shrink:
                    _objectives_shrinking(&p, Wp, gammap, betap, actp, act_stride, nactp, w.z,
                                          &primal, &dual, &revived)
                else:
                    _objectives(&p, Wp, gammap, w.z, &primal, &dual, False)
                e = _now() - t1
                t_eval += e
                c_eval += _cpu() - c1
                gap = primal - dual
                last_eval_it = it
                if n_evals == v_hist_gap.shape[0]:
                    with gil:
                        hist_it = np.concatenate([hist_it, np.zeros_like(hist_it)])
                        hist_gap = np.concatenate([hist_gap, np.zeros_like(hist_gap)])
                        v_hist_it = hist_it
                        v_hist_gap = hist_gap
                v_hist_it[n_evals] = it
                v_hist_gap[n_evals] = gap
                n_evals += 1
                if n_evals == 1:
                    gap1 = gap
                rel = gap / gap1 if gap1 > 0.0 else 0.0
                if gap <= 0.0 or gap < delta * gap1 or (abs_gap > 0.0 and gap < abs_gap):
                    converged = True
                elif shrink:
                    # the evaluation revived the shrunk pairs that violate their bound: the
                    # active pairs now hold the whole gap
                    if revived > 0:
                        # the points that left the sweep and got a pair back return to it
                        for s in range(n_active, n_visit):
                            i = index[s]
                            if nactp[i] > 0:
                                index[s] = index[n_active]
                                index[n_active] = i
                                n_active += 1
                        n_unshrink += 1
                        n_revived += revived
                    if n_active == 0:
                        # no pair is active and none violates, yet the test failed (rounding):
                        # un-shrink every pair; the next sweep visits all of them without
                        # shrinking
                        for s in range(n_visit):
                            nactp[index[s]] = K
                        n_active = n_visit
                        sh.limit = INFINITY
                        n_unshrink += 1
                        n_full += 1
                if gap_every > 0:
                    next_eval = it + gap_every
                else:
                    # evaluate again once the block steps have done ~(1/f − 1) times the work
                    # of an evaluation (counted, not timed, so the model is reproducible)
                    interval = <Py_ssize_t>ceil(eval_ops * (1.0 / EVAL_FRACTION - 1.0)
                                                / (w.ops / it + 1e-300))
                    if interval < 1:
                        interval = 1
                    next_eval = it + interval
                    # BCD converges linearly (§5.6): from the rate between the last two
                    # evaluations, predict when gap < δ·gap_1 and look there if that is sooner.
                    if n_evals >= 2 and gap > 0.0 and prev_gap > gap and delta > 0.0:
                        rate = log(gap / prev_gap) / (it - prev_it)
                        ahead = log(delta * gap1 / gap) / rate
                        if ahead < <double>interval:
                            next_eval = it + (<Py_ssize_t>ceil(ahead) if ahead > 1.0 else 1)
                prev_gap = gap
                prev_it = it
            if has_callback:
                with gil:
                    callback(it, rel)
            if shrink and trace is not None:
                with gil:
                    inactive_after = np.zeros((n, K), dtype=bool)
                    for i in range(n):
                        inactive_after[i, act_pairs[i, n_act[i]:]] = True
                    trace.append({"limit": limit_used, "beta": beta_end, "inactive": inactive,
                                  "unshrunk": n_unshrink > unshrink_before,
                                  "revived": revived if last_eval_it == it else 0,
                                  "full_unshrink": n_full > full_before,
                                  "inactive_after": inactive_after,
                                  "revisits": n_revisits - revisits_before,
                                  "evaluated": last_eval_it == it, "gap": gap})
            if converged:
                break
        if step_limit or last_eval_it != it or n_evals == 0:
            # final values for the report (counted as evaluation time)
            t1 = _now()
            c1 = _cpu()
            _objectives(&p, Wp, gammap, w.z, &primal, &dual, shrink)
            t_eval += _now() - t1
            c_eval += _cpu() - c1
            gap = primal - dual

    return WwResult(W, beta, gamma, it, n_steps, primal, dual, primal - dual,
                    hist_it[:n_evals].copy(), hist_gap[:n_evals].copy(), t_eval, t_solve,
                    n_evals, bool(converged), int(w.n_fallbacks),
                    w.n_scored / max(1.0, <double>n_steps * k), c_eval, c_solve, n_unshrink,
                    pair_visits / max(1.0, <double>n_steps * K) if shrink else 1.0,
                    n_revived, n_revisits)


# ---------------------------------------------------------------------------------------------
# Single-vector entry points. For tests.
# ---------------------------------------------------------------------------------------------

def walrus(v, double C):
    """(b, γ, used_fallback): the exact minimiser of ½bᵀ(I+11ᵀ)b − vᵀb over [0, C]^K. For tests."""
    if not C > 0:
        raise ValueError("C must be positive")
    cdef double[::1] vv = np.ascontiguousarray(v, dtype=np.float64).copy()
    cdef Py_ssize_t K = vv.shape[0]
    b = np.zeros(K, dtype=np.float64)
    cdef double[::1] bv = b
    cdef double[::1] u = np.zeros(max(K, 1), dtype=np.float64)
    cdef Py_ssize_t[::1] tau = np.zeros(max(K, 1), dtype=np.intp)
    cdef double[::1] hv = np.zeros(max(K, 1), dtype=np.float64)
    cdef Py_ssize_t[::1] hi = np.zeros(max(K, 1), dtype=np.intp)
    cdef int fb = 0
    cdef double gam = 0.0
    if K > 0:
        with nogil:
            gam = _walrus(&vv[0], K, C, &bv[0], &u[0], &tau[0], &hv[0], &hi[0], &fb)
    return b, gam, bool(fb)


def bisection(v, double C):
    """(b, γ) by bisection on ψ(γ) = γ − Σ clip(v − γ, 0, C) (§5.4): the fallback. For tests."""
    cdef double[::1] vv = np.ascontiguousarray(v, dtype=np.float64).copy()
    cdef Py_ssize_t K = vv.shape[0]
    b = np.zeros(K, dtype=np.float64)
    cdef double[::1] bv = b
    cdef double gam = 0.0
    if K > 0:
        gam = _bisection(&vv[0], K, C, &bv[0])
    return b, gam


def iterative(v, double C, b0=None, double eps_sub=1e-6, Py_ssize_t max_steps=0):
    """(b, γ) from the Shark-style greedy solver of (4) (‖x‖² = 1, r = v − (I+11ᵀ)b0),
    warm-started at b0 (default 0), at most max_steps steps (0 = 10·(K+1)). For tests."""
    v = np.ascontiguousarray(v, dtype=np.float64)
    cdef Py_ssize_t K = v.shape[0]
    b = np.zeros(K) if b0 is None else np.array(b0, dtype=np.float64)
    r = v - b - b.sum()
    cdef double[::1] rv = r
    cdef double[::1] bv = b
    cdef double gam = 0.0
    if max_steps == 0:
        max_steps = 10 * (K + 1)
    if K > 0:
        gam = _iterative(&rv[0], K, 1.0, C, &bv[0], eps_sub, max_steps)
    return b, gam


def block_step(double[:, ::1] W, x_indices, x_values, Py_ssize_t y, double[::1] beta_i,
               double gamma_i, double C, subsolver="walrus", double eps_sub=1e-6):
    """One BCD block step (§5.6) on the point x (sparse: indices, values) of class y.

    W (d, k) and beta_i (k−1,) are updated in place; returns the new γ_i. For tests.
    """
    cdef Py_ssize_t k = W.shape[1], K = k - 1
    cdef const int32_t[::1] ind = np.ascontiguousarray(x_indices, dtype=np.int32)
    cdef const double[::1] val = np.ascontiguousarray(x_values, dtype=np.float64)
    cdef Py_ssize_t nnz = ind.shape[0]
    if beta_i.shape[0] != K or not 0 <= y < k or val.shape[0] != nnz:
        raise ValueError("shape mismatch")
    sq = float(np.dot(val, val))
    if sq == 0:
        raise ValueError("x must be non-zero")
    z = np.zeros(k); dc = np.zeros(k); vv = np.zeros(K); bb = np.zeros(K); uu = np.zeros(K)
    hv = np.zeros(K)
    tau = np.zeros(K, dtype=np.intp); act = np.zeros(k, dtype=np.intp); hi = np.zeros(K, dtype=np.intp)
    cdef double[::1] v_z = z, v_dc = dc, v_v = vv, v_b = bb, v_u = uu, v_hv = hv
    cdef Py_ssize_t[::1] v_tau = tau, v_act = act, v_hi = hi
    cdef _Work w
    w.z = &v_z[0]; w.v = &v_v[0]; w.b = &v_b[0]; w.dc = &v_dc[0]; w.u = &v_u[0]
    w.tau = &v_tau[0]; w.act = &v_act[0]; w.hv = &v_hv[0]; w.hi = &v_hi[0]
    w.subsolver = SUB_WALRUS if subsolver == "walrus" else SUB_ITERATIVE
    w.eps_sub = eps_sub
    w.max_sub = 10 * k
    w.ops = 0.0
    w.screen = 0
    w.n_scored = 0.0
    w.cached_W = True
    w.zl = NULL; w.Ll = NULL; w.L = NULL; w.need = NULL; w.needl = NULL; w.nrm = 0.0
    w.n_fallbacks = 0
    cdef int32_t dummy_int = 0
    cdef double dummy = 0.0
    return _block_step(&W[0, 0], k, &val[0] if nnz else &dummy, &ind[0] if nnz else &dummy_int,
                       nnz, sq, y, C, &beta_i[0], gamma_i, &w)
