"""Support-vector store and budget maintenance (removal, projection, merging),
docs/ALGORITHMS.md §1.5.

The representation and its memory bound are described in budgetsvm/_budget.pxd. Maintenance is
triggered when an insertion takes the store to B + 1 entries and brings it back to B, greedily
keeping the weight degradation WD = ‖w_before − w_after‖² small (Wang, Crammer & Vucetic 2012,
eq. (12); for several coefficient columns WD = Σ_r ‖Δ^(r)‖²):

* removal     delete p = argmin_j ‖A_j‖²·k(x̃_j,x̃_j); WD = ‖A_p‖²·k_pp.
* projection  project φ(x̃_p) onto the span of the other SVs (Wang et al. 2012, eqs. (14)–(15))
              with the inverse G = K⁻¹ kept by bordering on insertion and downdating on
              deletion, O(B²) per step (docs/ALGORITHMS.md §1.5.2 steps 1–5).
* merge       (Gaussian kernel) replace α_mφ(x̃_m) + α_nφ(x̃_n) by α_zφ(z), z = h x̃_m + (1−h) x̃_n;
              m = the smallest SV, n = the partner of least WD (Wang et al. 2012, eqs. (16)–(19)),
              h by golden-section search (GSS, ε = 0.01), the winner placed again by a robust
              GSS at ε = 1e-3 (the reference code of Qaadan and Glasmachers).

Every formula is 1-homogeneous in the coefficients, so the store works on stored coefficients
of either sign whatever global scale the solver keeps (BSGD: α = s·a; BSCA: β, s = 1).
Binary merging pairs coefficients of the same *sign* (§3.3), which for BSGD is the same class.

Scan and per-candidate evaluation are separate: ``merge_eval`` returns h, α_z and WD for one
pair and switches on the search method, so lookup tables (§2) plug in there.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, NAN, exp, fabs, sqrt
from libc.stdint cimport int8_t, int32_t, int64_t
from libc.stdlib cimport calloc, free, realloc

from budgetsvm._csr cimport (SparseRow, sparse_dot_columns, sparse_gather, sparse_scatter,
                             sparse_sqnorm)
from budgetsvm._kernels cimport (KERNEL_LINEAR, KERNEL_POLY, KERNEL_RBF, KERNEL_SIGMOID, Kernel,
                                 exp_inplace, kernel_from_dot, kernel_row_from_dots,
                                 kernel_row_sparse, kernel_self)
from budgetsvm._lookup cimport (MergeTables, golden_section_max, lookup_h, lookup_wd,
                               merge_tables)

cnp.import_array()

# Features from which the store keeps sparsity patterns (SVStore's patterns_from). Below it the
# O(d) column loops cost less than the patterns' bookkeeping.
PATTERNS_FROM = 2048

cdef extern from *:
    """
    /* GSS tolerances on the interval length (docs/ALGORITHMS.md §0.6) */
    #define BSVM_GSS_EPS 0.01
    #define BSVM_GSS_PRECISE_EPS 1e-10
    #define BSVM_GSS_FINAL_EPS 1e-3
    /* A new point whose Schur complement is <= this * k(x,x) is in the span
       (docs/ALGORITHMS.md §1.5.2, departure). A threshold of 1e-10, measured on a9a (C = 32,
       γ = 2^-7, B = 500, 5 epochs), lets cond(K) reach ~1e21, the incremental inverse degrades
       (‖GK − I‖ ≈ 1) and test accuracy drops to 65.5 %; with 1e-6, cond(K) stays ~1e7,
       ‖GK − I‖ ≈ 1e-6 and accuracy is 83.7 %. SVStore(inspan_tol=1e-10) restores the smaller
       value. */
    #define BSVM_INSPAN_TOL 1e-6
    /* exp(x) is 0 in double precision below about -745.13 */
    #define BSVM_UNDERFLOW_LOG (-745.2)
    /* multi-class merge: class r is skipped when |A_m + A_n| <= this * (|A_m| + |A_n|) */
    #define BSVM_ZERO_SUM_TOL 1e-12
    /* search method of the final placement of a chosen merge pair (internal) */
    #define BSVM_SEARCH_FINAL (-1)
    """
    double GSS_EPS "BSVM_GSS_EPS"
    double GSS_PRECISE_EPS "BSVM_GSS_PRECISE_EPS"
    double GSS_FINAL_EPS "BSVM_GSS_FINAL_EPS"
    double INSPAN_TOL "BSVM_INSPAN_TOL"
    double ZERO_SUM_TOL "BSVM_ZERO_SUM_TOL"
    double UNDERFLOW_LOG "BSVM_UNDERFLOW_LOG"
    int SEARCH_FINAL "BSVM_SEARCH_FINAL"

KERNEL_KINDS = {"linear": KERNEL_LINEAR, "poly": KERNEL_POLY, "rbf": KERNEL_RBF,
                "sigmoid": KERNEL_SIGMOID}
MAINTENANCE_KINDS = {"removal": MAINT_REMOVAL, "projection": MAINT_PROJECTION,
                     "merge": MAINT_MERGE}
MERGE_SEARCH_KINDS = {"gss": SEARCH_GSS, "gss-precise": SEARCH_GSS_PRECISE,
                      "lookup-h": SEARCH_LOOKUP_H, "lookup-wd": SEARCH_LOOKUP_WD}


# ---------------------------------------------------------------------------------------------
# Golden-section search and the per-candidate merge evaluation
# ---------------------------------------------------------------------------------------------

cdef double gss_max(double a1, double a2, double logk, double lo, double hi, double eps,
                    int* iters) noexcept nogil:
    """Golden-section search for the maximum of F(h) = a1 κ^((1−h)²) + a2 κ^(h²) on [lo, hi]
    (the package's one search, golden_section_max in _lookup.pxd; a tie keeps the lower part)."""
    return golden_section_max(a1, a2, logk, lo, hi, eps, False, iters)


cdef inline double _binary_h(double m, double logk, int method) noexcept nogil:
    # h* = argmax_h m κ^((1−h)²) + (1−m) κ^(h²)
    if logk == 0.0:
        return 0.5                     # κ = 1: identical points, any h; take ½
    if logk * 0.25 < UNDERFLOW_LOG:
        # κ^(1/4) underflows (vectors hundreds of kernel widths apart, unscaled data): every probe
        # of the searches is 0 and their ties would stop at h = ½ with α_z = 0, losing both
        # vectors. The κ → 0 limit instead: keep the vector of larger weight (§1.5.3).
        return 1.0 if m >= 0.5 else 0.0
    if method == SEARCH_GSS:
        return gss_max(m, 1.0 - m, logk, 0.0, 1.0, GSS_EPS, NULL)
    # Robust variant: the global maximum lies on the side of the larger weight (§1.5.3).
    cdef double eps = GSS_PRECISE_EPS if method == SEARCH_GSS_PRECISE else GSS_FINAL_EPS
    if m >= 0.5:
        return gss_max(m, 1.0 - m, logk, 0.5, 1.0, eps, NULL)
    return gss_max(m, 1.0 - m, logk, 0.0, 0.5, eps, NULL)


cdef inline double _project_pair(double a_m, double a_n, double kappa, double* h_out,
                                 double* az_out) noexcept nogil:
    # A binary pair of opposite signs (partners by label, §3.3): F(h) = a_m κ^((1−h)²) +
    # a_n κ^(h²) is monotone on [0, 1], so the searches' maximum of |F| there is an end: the
    # vector of larger |a| keeps its place and the other is projected onto it (α_z = a_L +
    # a_S κ, WD = a_S² (1 − κ²)); a tie keeps m's place.
    if fabs(a_m) >= fabs(a_n):
        h_out[0] = 1.0
        az_out[0] = a_m + a_n * kappa
        return a_n * a_n * (1.0 - kappa * kappa)
    h_out[0] = 0.0
    az_out[0] = a_n + a_m * kappa
    return a_m * a_m * (1.0 - kappa * kappa)


cdef double merge_eval(Store* st, Py_ssize_t m, Py_ssize_t n, double logk, int method,
                       double* h_out, double* az_out) noexcept nogil:
    """Merge of stored SVs m and n (log κ = −γ‖x̃_m − x̃_n‖² given): h, α_z and WD.

    Writes h to h_out and the nr_coef merged coefficients to az_out; returns WD in stored
    units. method: SEARCH_GSS / SEARCH_GSS_PRECISE / SEARCH_LOOKUP_H / SEARCH_LOOKUP_WD for the
    scan, SEARCH_FINAL for the final placement (robust GSS at ε = 1e-3).
    Binary: A_m and A_n share their sign (so m ∈ (0,1]), except for partners by label, whose
    pairs of opposite signs take the closed form of _project_pair.

    Lookup (binary only, §2.5; st.tables must be set):
    * SEARCH_LOOKUP_WD returns (A_m+A_n)²·WD_table(m,κ) and computes neither h nor α_z
      (h_out = NaN, az_out untouched): the caller places the winner with SEARCH_FINAL.
    * SEARCH_LOOKUP_H takes h from the folded table; α_z and WD by the closed forms.
    Multi-class merging ignores the lookup methods and uses GSS at ε = 0.01 (§2.5).
    """
    cdef Py_ssize_t r, nc = st.nr_coef
    cdef const double* Am = st.A + m * nc
    cdef const double* An = st.A + n * nc
    cdef double kappa = exp(logk), h, km, kn, wd = 0.0, a1 = 0.0, a2 = 0.0, ssum, mr, eps
    cdef bint any_class = False
    if nc == 1:
        if (Am[0] >= 0.0) != (An[0] >= 0.0):
            return _project_pair(Am[0], An[0], kappa, h_out, az_out)
        ssum = Am[0] + An[0]
        if method == SEARCH_LOOKUP_WD:
            # WD_pair = (α_m+α_n)²·WD(m,κ); sign-free because WD is 2-homogeneous
            h_out[0] = NAN
            return ssum * ssum * lookup_wd(st.tables, Am[0] / ssum, kappa)
        # Binary: m = α_m/(α_m+α_n); α_z = α_m κ^((1−h)²) + α_n κ^(h²);
        # WD = α_m² + α_n² − α_z² + 2 α_m α_n κ
        if method == SEARCH_LOOKUP_H:
            h = 0.5 if logk == 0.0 else lookup_h(st.tables, Am[0] / ssum, kappa)
        else:
            h = _binary_h(Am[0] / ssum, logk, method)
        km = exp(logk * (1.0 - h) * (1.0 - h))
        kn = exp(logk * h * h)
        az_out[0] = Am[0] * km + An[0] * kn
        h_out[0] = h
        return Am[0] * Am[0] + An[0] * An[0] - az_out[0] * az_out[0] + 2.0 * Am[0] * An[0] * kappa
    # Multi-class (Wang et al. 2012, multi-class merging): F(h) = a1 κ^((1−h)²) + a2 κ^(h²)
    # with a1 = Σ_r m^(r), a2 = Σ_r (1 − m^(r)) over the classes whose sum A_m^(r) + A_n^(r) is
    # not (numerically) 0.
    for r in range(nc):
        ssum = Am[r] + An[r]
        if fabs(ssum) > ZERO_SUM_TOL * (fabs(Am[r]) + fabs(An[r])):
            mr = Am[r] / ssum
            a1 += mr
            a2 += 1.0 - mr
            any_class = True
    if not any_class or logk == 0.0:
        h = 0.5
    else:
        # lookup methods: multi-class merging always uses GSS (§2.5)
        eps = GSS_EPS if (method == SEARCH_GSS or method == SEARCH_LOOKUP_H
                          or method == SEARCH_LOOKUP_WD) else (
            GSS_PRECISE_EPS if method == SEARCH_GSS_PRECISE else GSS_FINAL_EPS)
        if a1 > 0.0 and a2 > 0.0:
            h = gss_max(a1, a2, logk, 0.0, 1.0, eps, NULL)
        elif a1 > 0.0:
            h = gss_max(a1, a2, logk, 1.0, 6.0, eps, NULL)
        else:
            # Far apart points (γ‖x̃_m − x̃_n‖² in the hundreds, as with unscaled features)
            # make F underflow to exactly 0 at both probes: F(p) = F(q) = 0. F(0) ≥ 1 (a2 ≥ 1 +
            # |a1|) and F → 0 at the far end, so such a tie must move towards 0. Keeping the
            # lower part there (as on [1,6], where it is right) walked h to −5: z = −5x̃_m + 6x̃_n,
            # and repeated merges of z grew its features ×11 a time until they overflowed.
            h = golden_section_max(a1, a2, logk, -5.0, 0.0, eps, True, NULL)
    km = exp(logk * (1.0 - h) * (1.0 - h))
    kn = exp(logk * h * h)
    for r in range(nc):
        # WD = Σ_r (A_m² + A_n² + 2κ A_m A_n − A_z²)
        az_out[r] = Am[r] * km + An[r] * kn
        wd += Am[r] * Am[r] + An[r] * An[r] + 2.0 * kappa * Am[r] * An[r] - az_out[r] * az_out[r]
    h_out[0] = h
    return wd


# ---------------------------------------------------------------------------------------------
# Store primitives
# ---------------------------------------------------------------------------------------------

cdef inline double _coef_sqnorm(const Store* st, Py_ssize_t j) noexcept nogil:
    # ‖A_j‖²
    cdef Py_ssize_t r
    cdef double v = 0.0
    cdef const double* a = st.A + j * st.nr_coef
    for r in range(st.nr_coef):
        v += a[r] * a[r]
    return v


cdef inline SparseRow _gather_column(Store* st, Py_ssize_t p) noexcept nogil:
    # nzind, nzval = np.nonzero(X[:, p]), X[nonzero, p]   (the scratch nzval/nzind); through
    # the slot's pattern when it has one (the same row: the pattern is in column order)
    cdef SparseRow x
    cdef Py_ssize_t t, nnz = 0
    cdef int32_t c
    cdef double e
    if st.pat == NULL or st.pat[p] == NULL:
        return sparse_gather(st.X + p, st.cap, st.d, st.nzval, st.nzind)
    for t in range(st.pat_n[p]):
        c = st.pat[p][t]
        e = st.X[<Py_ssize_t>c * st.cap + p]
        if e != 0.0:
            st.nzind[nnz] = c
            st.nzval[nnz] = e
            nnz += 1
    x.val = st.nzval
    x.ind = st.nzind
    x.nnz = nnz
    return x


cdef inline void _drop_pattern(Store* st, Py_ssize_t j) noexcept nogil:
    # slot j's pattern becomes unknown (NULL): O(d) scans for it
    free(st.pat[j])
    st.pat[j] = NULL
    st.pat_room[j] = 0


cdef void _set_pattern(Store* st, Py_ssize_t j, const int32_t* ind, Py_ssize_t nnz) noexcept nogil:
    # pat[j] = ind[:nnz] when ind increases strictly (a canonical row), else NULL (unknown:
    # O(d) scans for this slot); NULL as well when memory runs out
    cdef Py_ssize_t t
    cdef int32_t* room
    for t in range(1, nnz):
        if ind[t] <= ind[t - 1]:
            _drop_pattern(st, j)
            return
    if st.pat[j] == NULL or st.pat_room[j] < nnz:
        room = <int32_t*>realloc(st.pat[j], max(nnz, 16) * sizeof(int32_t))
        if room == NULL:
            _drop_pattern(st, j)
            return
        st.pat[j] = room
        st.pat_room[j] = max(nnz, 16)
    for t in range(nnz):
        st.pat[j][t] = ind[t]
    st.pat_n[j] = nnz


cdef void _zero_column(Store* st, Py_ssize_t j) noexcept nogil:
    # X[:, j] = 0, through its pattern when it has one
    cdef Py_ssize_t t, k
    if st.pat[j] != NULL:
        for t in range(st.pat_n[j]):
            st.X[<Py_ssize_t>st.pat[j][t] * st.cap + j] = 0.0
    else:
        for k in range(st.d):
            st.X[k * st.cap + j] = 0.0


cdef void store_sv_kernel_row(Store* st, Py_ssize_t p, double* out) noexcept nogil:
    """out[j] = k(x̃_p, x̃_j) for all stored j (O(n·nnz(x̃_p)))."""
    kernel_row_sparse(&st.kernel, st.X, st.cap, st.n, st.sq, _gather_column(st, p), st.sq[p],
                      out)


cdef void _model_dot_row(const Store* st, const double* krow, double* g) noexcept nogil:
    # g[r] = Σ_j A[j, r] krow[j]     (g = A[:n].T @ krow)
    cdef Py_ssize_t j, r, nc = st.nr_coef
    cdef const double* a
    for r in range(nc):
        g[r] = 0.0
    for j in range(st.n):
        a = st.A + j * nc
        for r in range(nc):
            g[r] += a[r] * krow[j]


cdef inline void _finish_append(Store* st, Py_ssize_t j, double sq, const double* coef,
                                int64_t origin, int8_t label) noexcept nogil:
    # slot j now holds the vector: record its norm, coefficients, origin, label (0: the sign
    # of its first coefficient) and age; n += 1
    cdef Py_ssize_t r
    st.label[j] = label if label != 0 else (1 if coef[0] >= 0.0 else -1)
    st.sq[j] = sq
    st.kd[j] = kernel_self(&st.kernel, sq)
    for r in range(st.nr_coef):
        st.A[j * st.nr_coef + r] = coef[r]
    st.origin[j] = origin
    st.stamp[j] = st.next_stamp
    st.next_stamp += 1
    st.n += 1


cdef void _append_sparse(Store* st, SparseRow x, double xsq, const double* coef,
                         int64_t origin, int8_t label) noexcept nogil:
    # X[:, n] = x; A[n] = coef; n += 1
    cdef Py_ssize_t k, j = st.n
    if st.pat != NULL:
        # the free slot's column is zero already
        _set_pattern(st, j, x.ind, x.nnz)
    else:
        for k in range(st.d):
            st.X[k * st.cap + j] = 0.0
    sparse_scatter(x, st.X + j, st.cap)
    _finish_append(st, j, xsq, coef, origin, label)


cdef void _append_dense(Store* st, const double* z, const double* coef,
                        int64_t origin, int8_t label) noexcept nogil:
    # X[:, n] = z (dense, length d); A[n] = coef; n += 1 (with patterns: the nonzeros of z)
    cdef Py_ssize_t k, nnz = 0, j = st.n
    cdef double zsq = 0.0
    for k in range(st.d):
        st.X[k * st.cap + j] = z[k]
        zsq += z[k] * z[k]
        if st.pat != NULL and z[k] != 0.0:
            st.uind[nnz] = <int32_t>k
            nnz += 1
    if st.pat != NULL:
        _set_pattern(st, j, st.uind, nnz)
    _finish_append(st, j, zsq, coef, origin, label)


cdef Py_ssize_t _pattern_union(Store* st, Py_ssize_t m, Py_ssize_t n) noexcept nogil:
    # st.uind[:size] = the sorted union of the patterns of slots m and n (both set); the size
    cdef Py_ssize_t a = 0, b = 0, size = 0, na = st.pat_n[m], nb = st.pat_n[n]
    cdef const int32_t* pa = st.pat[m]
    cdef const int32_t* pb = st.pat[n]
    while a < na or b < nb:
        if b >= nb or (a < na and pa[a] < pb[b]):
            st.uind[size] = pa[a]
            a += 1
        elif a >= na or pb[b] < pa[a]:
            st.uind[size] = pb[b]
            b += 1
        else:
            st.uind[size] = pa[a]
            a += 1
            b += 1
        size += 1
    return size


cdef void _append_union(Store* st, Py_ssize_t size, const double* coef,
                        int8_t label) noexcept nogil:
    # _append_dense(z = st.zcol) when z is zero outside st.uind[:size] (a merge of two slots with
    # patterns): O(size) instead of O(d), the same column and the same ‖z‖² (the terms left out
    # are 0); the zcol entries are cleared for the next merge
    cdef Py_ssize_t t, k, nnz = 0, j = st.n
    cdef double zsq = 0.0, e
    for t in range(size):
        k = st.uind[t]
        e = st.zcol[k]
        st.zcol[k] = 0.0
        zsq += e * e
        if e != 0.0:
            st.X[k * st.cap + j] = e
            st.uind[nnz] = <int32_t>k
            nnz += 1
    _set_pattern(st, j, st.uind, nnz)
    _finish_append(st, j, zsq, coef, -1, label)


cdef void _move_column(Store* st, Py_ssize_t src, Py_ssize_t dst) noexcept nogil:
    # X[:, dst] = X[:, src]. With patterns (where column dst is zero on entry) over src's
    # pattern, then X[:, src] = 0 and the two slots swap pattern buffers, so that the freed slot
    # keeps a zero column and a buffer to reuse.
    cdef Py_ssize_t k, t, size, cap = st.cap
    cdef int32_t* pattern
    if st.pat == NULL or st.pat[src] == NULL:
        for k in range(st.d):
            st.X[k * cap + dst] = st.X[k * cap + src]
            if st.pat != NULL:
                st.X[k * cap + src] = 0.0
    else:
        for t in range(st.pat_n[src]):
            k = st.pat[src][t]
            st.X[k * cap + dst] = st.X[k * cap + src]
            st.X[k * cap + src] = 0.0
    if st.pat != NULL:
        pattern = st.pat[dst]
        st.pat[dst] = st.pat[src]
        st.pat[src] = pattern
        size = st.pat_n[dst]
        st.pat_n[dst] = st.pat_n[src]
        st.pat_n[src] = size
        size = st.pat_room[dst]
        st.pat_room[dst] = st.pat_room[src]
        st.pat_room[src] = size


cdef void _delete(Store* st, Py_ssize_t p) noexcept nogil:
    # Delete slot p: the last slot moves into the hole (list order lives in stamp). With
    # patterns every free slot's column is zero, so p's is cleared first.
    cdef Py_ssize_t r, i, last = st.n - 1, cap = st.cap
    if st.pat != NULL:
        _zero_column(st, p)
    if p != last:
        _move_column(st, last, p)
        st.sq[p] = st.sq[last]
        st.kd[p] = st.kd[last]
        for r in range(st.nr_coef):
            st.A[p * st.nr_coef + r] = st.A[last * st.nr_coef + r]
        st.origin[p] = st.origin[last]
        st.label[p] = st.label[last]
        st.stamp[p] = st.stamp[last]
        if st.G != NULL:
            # G[p, :] = G[last, :]; G[:, p] = G[:, last]   (G[p,p] ends as G[last,last])
            for i in range(st.n):
                st.G[p * cap + i] = st.G[last * cap + i]
            for i in range(st.n):
                st.G[i * cap + p] = st.G[i * cap + last]
    st.n = last


cdef inline bint _partner_positive(const Store* st, Py_ssize_t j) noexcept nogil:
    # the partner class of binary slot j: A ≥ 0, or label +1 with partners by label (§3.3)
    return st.label[j] > 0 if st.by_label else st.A[j] >= 0.0


cdef Py_ssize_t _smallest(const Store* st, bint with_partner) noexcept nogil:
    """argmin_j ‖A_j‖²·k(x̃_j,x̃_j), ties to the oldest entry (smallest stamp).

    with_partner (binary merging): only entries whose partner class (_partner_positive: the
    sign of A, or the label) has at least two members are eligible, i.e. the smallest SV that
    has a merge partner (§1.5.3). Returns −1 when nothing is eligible.
    """
    cdef Py_ssize_t j, best = -1, n_pos = 0
    cdef double v, best_v = INFINITY
    cdef bint positive
    if with_partner:
        for j in range(st.n):
            if _partner_positive(st, j):
                n_pos += 1
    for j in range(st.n):
        positive = _partner_positive(st, j) if with_partner else False
        if with_partner and ((positive and n_pos < 2) or (not positive and st.n - n_pos < 2)):
            continue
        v = _coef_sqnorm(st, j) * st.kd[j]
        if best < 0 or v < best_v or (v == best_v and st.stamp[j] < st.stamp[best]):
            best = j
            best_v = v
    return best


# ---------------------------------------------------------------------------------------------
# ‖w‖² tracking (only for the budgeted margin perceptron's ball projection, §1.6)
# ---------------------------------------------------------------------------------------------

cdef void _q_remove(Store* st, Py_ssize_t p) noexcept nogil:
    # Q ← ‖w − A_p φ_p‖² = Q − 2 Σ_r A_p^r g_p^r + ‖A_p‖² k_pp,   g_p = A.T @ K[:, p]
    cdef Py_ssize_t r
    cdef double dot = 0.0
    store_sv_kernel_row(st, p, st.row2)
    _model_dot_row(st, st.row2, st.vec2)
    for r in range(st.nr_coef):
        dot += st.A[p * st.nr_coef + r] * st.vec2[r]
    st.Q += -2.0 * dot + _coef_sqnorm(st, p) * st.kd[p]


# ---------------------------------------------------------------------------------------------
# Maintenance
# ---------------------------------------------------------------------------------------------

cdef void _remove(Store* st) noexcept nogil:
    cdef Py_ssize_t p = _smallest(st, False)
    st.wd_total += _coef_sqnorm(st, p) * st.kd[p]
    if st.track_q:
        _q_remove(st, p)
    _delete(st, p)
    st.n_removals += 1


cdef inline double _log_kappa(const Store* st, Py_ssize_t m, Py_ssize_t j) noexcept nogil:
    """log κ = −γ‖x̃_m − x̃_j‖² ≤ 0 of stored SVs m and j, from st.row[j] = x̃_m·x̃_j."""
    cdef double logk = -st.kernel.gamma * (st.sq[m] + st.sq[j] - 2.0 * st.row[j])
    if logk > 0.0:
        logk = 0.0
    return logk


cdef void _compare_scan(Store* st, Py_ssize_t m, Py_ssize_t chosen) noexcept nogil:
    """Comparison mode: rescan the partners of m (binary) with gss and gss-precise and count
    whether they agree with `chosen`; WD ratios are measured with the precise WD. st.row must
    hold the dot products x̃_m·x̃_j (as in _merge)."""
    cdef Py_ssize_t j, b_gss = -1, b_pre = -1
    cdef double logk, wd, h, w_gss = INFINITY, w_pre = INFINITY, w_chosen = 0.0
    cdef double w_gss_pre = 0.0, r
    cdef double az[1]
    cdef bint positive = _partner_positive(st, m)
    for j in range(st.n):
        if j == m or positive != _partner_positive(st, j):
            continue
        logk = _log_kappa(st, m, j)
        wd = merge_eval(st, m, j, logk, SEARCH_GSS, &h, az)
        if b_gss < 0 or wd < w_gss or (wd == w_gss and st.stamp[j] < st.stamp[b_gss]):
            b_gss = j
            w_gss = wd
        wd = merge_eval(st, m, j, logk, SEARCH_GSS_PRECISE, &h, az)
        if b_pre < 0 or wd < w_pre or (wd == w_pre and st.stamp[j] < st.stamp[b_pre]):
            b_pre = j
            w_pre = wd
        if j == chosen:
            w_chosen = wd
        if j == b_gss:
            w_gss_pre = wd
    st.n_compared += 1
    st.n_same_as_gss += chosen == b_gss
    st.n_same_as_precise += chosen == b_pre
    # Partners are often tied (equal rows, binary features): "attains the minimum" counts a
    # tied partner as agreement, which "same partner" does not.
    st.n_optimal += w_chosen <= w_pre * (1.0 + 1e-9)
    st.n_gss_optimal += w_gss_pre <= w_pre * (1.0 + 1e-9)
    st.wd_chosen_sum += w_chosen
    st.wd_gss_sum += w_gss_pre
    st.wd_min_sum += w_pre
    if w_pre > 0.0:
        r = w_chosen / w_pre
        st.ratio_sum += r
        st.ratio_gss_sum += w_gss_pre / w_pre
        if r > st.ratio_max:
            st.ratio_max = r
        st.n_ratio += 1


cdef (Py_ssize_t, double) _scan_lookup_wd(Store* st, Py_ssize_t m) noexcept nogil:
    """The binary lookup-WD scan of _merge for the robust default (fast_rows): the partner of
    least (α_m+α_n)²·WD(m,κ) among the SVs of m's partner class, ties to the oldest, and its
    log κ (a partner of the other sign, by label: _project_pair's WD).
    The same choice as merge_eval's scan, but κ of every SV comes first, from log κ through the
    vectorised exp_inplace (into st.row2; st.row keeps the dot products x̃_m·x̃_j):
    libm's exp per candidate was a third of the scan."""
    cdef Py_ssize_t j, best = -1, n = st.n
    cdef double am = st.A[m], ssum, wd, h, az
    cdef double best_wd = INFINITY
    cdef bint positive = _partner_positive(st, m)
    for j in range(n):
        st.row2[j] = _log_kappa(st, m, j)
    exp_inplace(st.row2, n)
    for j in range(n):
        if j == m or positive != _partner_positive(st, j):
            continue
        if (am >= 0.0) != (st.A[j] >= 0.0):
            wd = _project_pair(am, st.A[j], st.row2[j], &h, &az)
        else:
            ssum = am + st.A[j]
            wd = ssum * ssum * lookup_wd(st.tables, am / ssum, st.row2[j])
        st.n_merge_evals += 1
        if best < 0 or wd < best_wd or (wd == best_wd and st.stamp[j] < st.stamp[best]):
            best = j
            best_wd = wd
    return best, _log_kappa(st, m, best)


cdef void _merge(Store* st) noexcept nogil:
    cdef Py_ssize_t j, k, r, t, union_size, m, best = -1, nc = st.nr_coef
    cdef int8_t label
    cdef bint positive
    cdef SparseRow z
    cdef bint binary = nc == 1
    cdef double am, wd, best_wd = INFINITY, h, logk, best_logk = 0.0, gm_dot = 0.0
    cdef double* az = st.vec
    m = _smallest(st, binary)
    if m < 0:                       # B = 1, two SVs of different signs (labels): no pair
        _remove(st)
        return
    am = st.A[m * nc]
    if binary and am == 0.0:        # a zero coefficient: removal costs nothing
        if st.track_q:
            _q_remove(st, m)
        _delete(st, m)
        st.n_removals += 1
        return
    # Squared distances from x̃_m: row[j] = x̃_m · x̃_j
    sparse_dot_columns(_gather_column(st, m), st.X, st.cap, st.n, st.row)
    if (binary and st.merge_search == SEARCH_LOOKUP_WD and st.kernel.fast_rows
            and not st.track_q):
        best, best_logk = _scan_lookup_wd(st, m)
    else:
        # Scan the partners: least WD, ties to the oldest.
        positive = _partner_positive(st, m)
        for j in range(st.n):
            if j == m:
                continue
            if binary and positive != _partner_positive(st, j):
                continue
            logk = _log_kappa(st, m, j)
            wd = merge_eval(st, m, j, logk, st.merge_search, &h, az)
            st.n_merge_evals += 1
            if best < 0 or wd < best_wd or (wd == best_wd and st.stamp[j] < st.stamp[best]):
                best = j
                best_wd = wd
                best_logk = logk
    if st.compare and binary:
        _compare_scan(st, m, best)
    # Final placement of the chosen pair: robust GSS at ε = 1e-3 (precise search keeps its h),
    # also after a lookup scan (§1.5.3 "final position", §2.5).
    wd = merge_eval(st, m, best, best_logk,
                    SEARCH_GSS_PRECISE if st.merge_search == SEARCH_GSS_PRECISE else SEARCH_FINAL,
                    &h, az)
    # z = h x̃_m + (1 − h) x̃_best (over the union of their patterns when both have one: the
    # entries outside it are 0; the zcol is zero there between merges)
    union_size = -1
    if st.pat != NULL and st.pat[m] != NULL and st.pat[best] != NULL:
        union_size = _pattern_union(st, m, best)
        for t in range(union_size):
            k = st.uind[t]
            st.zcol[k] = h * st.X[k * st.cap + m] + (1.0 - h) * st.X[k * st.cap + best]
    else:
        for k in range(st.d):
            st.zcol[k] = h * st.X[k * st.cap + m] + (1.0 - h) * st.X[k * st.cap + best]
    if st.track_q:
        # Q ← Q − 2⟨w, Δ⟩ + ‖Δ‖², Δ = A_m φ_m + A_n φ_n − A_z φ_z, ⟨w, Δ⟩ through kernel rows
        kernel_row_from_dots(&st.kernel, st.row, st.n, st.sq[m], st.sq)
        _model_dot_row(st, st.row, st.vec2)
        for r in range(nc):
            gm_dot += st.A[m * nc + r] * st.vec2[r]
        store_sv_kernel_row(st, best, st.row2)
        _model_dot_row(st, st.row2, st.vec2)
        for r in range(nc):
            gm_dot += st.A[best * nc + r] * st.vec2[r]
        z = sparse_gather(st.zcol, 1, st.d, st.nzval, st.nzind)
        kernel_row_sparse(&st.kernel, st.X, st.cap, st.n, st.sq, z, sparse_sqnorm(z), st.row2)
        _model_dot_row(st, st.row2, st.vec2)
        for r in range(nc):
            gm_dot -= az[r] * st.vec2[r]
        st.Q += -2.0 * gm_dot + wd
    # Delete the larger slot first so the smaller index stays valid, then append z (the pair's
    # label: the same by label; by sign, that of m, whose sign z keeps).
    label = st.label[m]
    if m > best:
        _delete(st, m)
        _delete(st, best)
    else:
        _delete(st, best)
        _delete(st, m)
    if union_size >= 0:
        _append_union(st, union_size, az, label)
    else:
        _append_dense(st, st.zcol, az, -1, label)
        if st.pat != NULL:
            for k in range(st.d):      # zcol stays zero between merges (see above)
                st.zcol[k] = 0.0
    st.wd_total += wd
    st.n_merges += 1


cdef bint _spd_inverse(Store* st) noexcept nogil:
    """G = inv(K) of the stored SVs from scratch by Cholesky (O(n³)); False if K is not PD."""
    cdef Py_ssize_t i, j, k, n = st.n, cap = st.cap
    cdef double s
    cdef double* W = st.work
    cdef double* L = st.G           # L⁻¹ is built in G, then G = L⁻ᵀ L⁻¹ is built in W
    # W = K
    for j in range(n):
        store_sv_kernel_row(st, j, st.row2)
        for i in range(n):
            W[j * cap + i] = st.row2[i]
    # Cholesky K = L Lᵀ in the lower triangle of W
    for j in range(n):
        s = W[j * cap + j]
        for k in range(j):
            s -= W[j * cap + k] * W[j * cap + k]
        if not s > 0.0:
            return False
        W[j * cap + j] = sqrt(s)
        for i in range(j + 1, n):
            s = W[i * cap + j]
            for k in range(j):
                s -= W[i * cap + k] * W[j * cap + k]
            W[i * cap + j] = s / W[j * cap + j]
    # L⁻¹ (lower triangular) by forward substitution, into G
    for j in range(n):
        for i in range(j):
            L[i * cap + j] = 0.0
        L[j * cap + j] = 1.0 / W[j * cap + j]
        for i in range(j + 1, n):
            s = 0.0
            for k in range(j, i):
                s += W[i * cap + k] * L[k * cap + j]
            L[i * cap + j] = -s / W[i * cap + i]
    # W = L⁻ᵀ L⁻¹:  W[i, j] = Σ_{k ≥ max(i,j)} L⁻¹[k, i] L⁻¹[k, j]
    for i in range(n):
        for j in range(i, n):
            s = 0.0
            for k in range(j, n):
                s += L[k * cap + i] * L[k * cap + j]
            W[i * cap + j] = s
            W[j * cap + i] = s
    for i in range(n):
        for j in range(n):
            st.G[i * cap + j] = W[i * cap + j]
    st.n_refactor += 1
    st.n_since_refactor = 0
    return True


cdef bint _border(Store* st, const double* coef, double xsq, const double* krow) noexcept nogil:
    """Grow G = K⁻¹ by the new point (kernel column krow, §1.5.2 step 1) before it is appended.

    Returns False, after projecting the point onto the current SVs (A_j += coef·u_j), when its
    Schur complement c = κ₀ − kᵀG k is ≤ 1e-10·κ₀: the point is then not appended.
    """
    cdef Py_ssize_t i, j, r, n = st.n, cap = st.cap, nc = st.nr_coef
    cdef double kappa0 = kernel_self(&st.kernel, xsq), c = kappa0, ui, dot = 0.0, cc = 0.0
    cdef double* u = st.u
    for i in range(n):
        # u = G @ k
        ui = 0.0
        for j in range(n):
            ui += st.G[i * cap + j] * krow[j]
        u[i] = ui
        c -= krow[i] * ui
    if c <= st.inspan_tol * kappa0:
        if st.track_q:
            # w gains coef · Σ_j u_j φ_j: Q += 2 coef·g + ‖coef‖² (κ₀ − c), g = A.T @ krow
            _model_dot_row(st, krow, st.vec2)
            for r in range(nc):
                dot += coef[r] * st.vec2[r]
                cc += coef[r] * coef[r]
            st.Q += 2.0 * dot + cc * (kappa0 - c)
        for j in range(n):
            for r in range(nc):
                st.A[j * nc + r] += coef[r] * u[j]
        st.n_inspan += 1
        return False
    # G ← [[G + u uᵀ/c, −u/c], [−uᵀ/c, 1/c]]
    for i in range(n):
        ui = u[i] / c
        for j in range(n):
            st.G[i * cap + j] += ui * u[j]
        st.G[i * cap + n] = -ui
        st.G[n * cap + i] = -ui
    st.G[n * cap + n] = 1.0 / c
    return True


cdef void _project(Store* st) noexcept nogil:
    cdef Py_ssize_t i, j, r, p, n, cap = st.cap, nc = st.nr_coef
    cdef double gpp, dj, gi, wd
    if st.n_since_refactor >= 10 * st.budget:
        _spd_inverse(st)
    p = _smallest(st, False)
    gpp = st.G[p * cap + p]
    if not gpp > 0.0:
        if _spd_inverse(st):
            gpp = st.G[p * cap + p]
        if not gpp > 0.0:          # K numerically singular: fall back to removal
            _remove(st)
            return
    n = st.n
    # d = −G[−p, p] / G[p, p];  A_j += A_p d_j;  WD = ‖A_p‖²/G_pp
    for j in range(n):
        if j == p:
            continue
        dj = -st.G[j * cap + p] / gpp
        for r in range(nc):
            st.A[j * nc + r] += st.A[p * nc + r] * dj
    wd = _coef_sqnorm(st, p) / gpp
    st.wd_total += wd
    if st.track_q:
        st.Q -= wd
    # G ← G[−p,−p] − G[−p,p] G[p,−p] / G[p,p]  (row/column p are dropped by _delete)
    for i in range(n):
        if i == p:
            continue
        gi = st.G[i * cap + p] / gpp
        for j in range(n):
            st.G[i * cap + j] -= gi * st.G[p * cap + j]
    _delete(st, p)
    st.n_projections += 1
    st.n_since_refactor += 1


cdef void store_maintain(Store* st) noexcept nogil:
    """Bring the store from B + 1 entries back to B with the configured strategy."""
    st.n_maintenance += 1
    if st.maintenance == MAINT_MERGE:
        _merge(st)
    elif st.maintenance == MAINT_PROJECTION:
        _project(st)
    else:
        _remove(st)


cdef bint store_insert(Store* st, SparseRow x, double xsq, const double* coef, int64_t origin,
                       const double* krow, int8_t label) noexcept nogil:
    """Append the sparse point x with stored coefficients coef, then maintain the budget.

    krow[j] = k(x, x̃_j) for the current SVs (the solver's margin row); label: x's training
    label ±1 (binary merging by label), or 0 for the sign of coef[0]. With projection a point
    in the span of the SVs is projected at once instead (returns False). With coalescing on, a
    row (origin) that is still stored unmerged gets coef added to its slot: no new slot, no
    maintenance (returns False).
    """
    cdef Py_ssize_t r, j = -1
    cdef double dot = 0.0, cc = 0.0
    if st.coalesce and origin >= 0:
        for r in range(st.n):
            if st.origin[r] == origin:
                j = r
                break
    if j < 0 and st.maintenance == MAINT_PROJECTION:
        if not _border(st, coef, xsq, krow):
            return False
    if st.track_q:
        # Q ← Q + 2 coef·g + ‖coef‖² κ₀,  g = A.T @ krow
        _model_dot_row(st, krow, st.vec2)
        for r in range(st.nr_coef):
            dot += coef[r] * st.vec2[r]
            cc += coef[r] * coef[r]
        st.Q += 2.0 * dot + cc * kernel_self(&st.kernel, xsq)
    if j >= 0:
        # the same point: w + Σ_r coef_r φ(x) either way (Q's update above holds as well), and
        # the span of the SVs is unchanged (projection's inverse stays valid)
        for r in range(st.nr_coef):
            st.A[j * st.nr_coef + r] += coef[r]
        st.n_coalesced += 1
        return False
    _append_sparse(st, x, xsq, coef, origin, label)
    if st.n > st.budget:
        store_maintain(st)
    return True


cdef void store_scale(Store* st, double factor) noexcept nogil:
    # A[:n] *= factor (renormalisation of a global scale into the stored coefficients)
    cdef Py_ssize_t j
    for j in range(st.n * st.nr_coef):
        st.A[j] *= factor
    st.Q *= factor * factor


# ---------------------------------------------------------------------------------------------
# Python object owning the buffers
# ---------------------------------------------------------------------------------------------

cdef class SVStore:
    """Owner of a Store: SVs of dimension d, at most budget + 1 of them, nr_coef coefficients
    each. kernel: 'rbf' | 'linear' | 'poly' | 'sigmoid'; maintenance: 'removal' |
    'projection' | 'merge'; merge_search: 'gss' | 'gss-precise' | 'lookup-h' | 'lookup-wd'
    (lookup: binary merges only, multi-class merging uses 'gss'); track_q: keep ‖w‖²;
    compare: comparison mode for binary merging (rescans every merge with gss and gss-precise,
    see counters()); coalesce: a repeated insertion of a training row (its origin) is added to
    its stored unmerged entry; fast_rows: rbf kernel rows with exp_inplace
    (budgetsvm/_kernels.pxd) instead of libm's exp; patterns_from: from this many features
    on, each slot keeps its sparsity pattern (Store.pat), which gives the same store in
    O(nnz) instead of O(d) per insertion and maintenance; partners: binary merging pairs SVs
    by the sign of their coefficient ('sign') or by their training label ('label', §3.3)."""

    def __init__(self, Py_ssize_t d, Py_ssize_t budget, Py_ssize_t nr_coef=1, kernel="rbf",
                 double gamma=1.0, double coef0=0.0, int degree=3, maintenance="merge",
                 merge_search="gss", bint track_q=False, double inspan_tol=INSPAN_TOL,
                 bint compare=False, bint coalesce=False, bint fast_rows=False,
                 Py_ssize_t patterns_from=PATTERNS_FROM, partners="sign"):
        if budget < 1 or nr_coef < 1 or d < 0:
            raise ValueError("need budget >= 1, nr_coef >= 1, d >= 0")
        cap = budget + 1
        if kernel not in KERNEL_KINDS or maintenance not in MAINTENANCE_KINDS:
            raise ValueError(f"unknown kernel {kernel!r} or maintenance {maintenance!r}")
        if merge_search not in MERGE_SEARCH_KINDS:
            raise ValueError(f"merge search {merge_search!r} is not available here")
        if partners not in ("sign", "label"):
            raise ValueError(f"merge partners {partners!r}: use 'sign' or 'label'")
        arrays = {
            "X": np.zeros(max(d, 1) * cap), "sq": np.zeros(cap), "kd": np.zeros(cap),
            "A": np.zeros(cap * nr_coef), "origin": np.full(cap, -1, dtype=np.int64),
            "stamp": np.zeros(cap, dtype=np.int64), "label": np.zeros(cap, dtype=np.int8),
            "row": np.zeros(cap),
            "row2": np.zeros(cap), "u": np.zeros(cap), "vec": np.zeros(max(cap, nr_coef)),
            "vec2": np.zeros(max(cap, nr_coef)), "zcol": np.zeros(max(d, 1)),
            "nzval": np.zeros(max(d, 1)), "nzind": np.zeros(max(d, 1), dtype=np.int32),
        }
        if maintenance == "projection":
            arrays["G"] = np.zeros(cap * cap)
            arrays["work"] = np.zeros(cap * cap)
        self._arrays = arrays
        st = &self.st
        st.kernel.kind = KERNEL_KINDS[kernel]
        st.kernel.gamma = gamma
        st.kernel.coef0 = coef0
        st.kernel.degree = degree
        st.kernel.fast_rows = fast_rows
        st.d = d
        st.cap = cap
        st.budget = budget
        st.nr_coef = nr_coef
        st.maintenance = MAINTENANCE_KINDS[maintenance]
        st.merge_search = MERGE_SEARCH_KINDS[merge_search]
        # Lookup tables: built once per process (needs the GIL), valid for its lifetime; only
        # binary merges use them (multi-class merging searches by GSS, §2.5)
        st.tables = merge_tables() \
            if merge_search in ("lookup-h", "lookup-wd") and nr_coef == 1 else NULL
        st.X = _dptr(arrays["X"])
        st.sq = _dptr(arrays["sq"])
        st.kd = _dptr(arrays["kd"])
        st.A = _dptr(arrays["A"])
        st.origin = _iptr(arrays["origin"])
        st.stamp = _iptr(arrays["stamp"])
        st.label = <int8_t*>cnp.PyArray_DATA(arrays["label"])
        st.by_label = partners == "label"
        st.row = _dptr(arrays["row"])
        st.row2 = _dptr(arrays["row2"])
        st.u = _dptr(arrays["u"])
        st.vec = _dptr(arrays["vec"])
        st.vec2 = _dptr(arrays["vec2"])
        st.zcol = _dptr(arrays["zcol"])
        st.nzval = _dptr(arrays["nzval"])
        st.nzind = <int32_t*>cnp.PyArray_DATA(arrays["nzind"])
        st.G = _dptr(arrays["G"]) if "G" in arrays else NULL
        st.coalesce = coalesce
        st.work = _dptr(arrays["work"]) if "work" in arrays else NULL
        st.track_q = track_q
        st.inspan_tol = inspan_tol
        st.compare = compare
        st.pat = NULL
        st.pat_n = NULL
        st.pat_room = NULL
        if d >= patterns_from:
            arrays["uind"] = np.zeros(max(d, 1), dtype=np.int32)
            st.uind = <int32_t*>cnp.PyArray_DATA(arrays["uind"])
            st.pat_n = <Py_ssize_t*>calloc(cap, sizeof(Py_ssize_t))
            st.pat_room = <Py_ssize_t*>calloc(cap, sizeof(Py_ssize_t))
            st.pat = <int32_t**>calloc(cap, sizeof(int32_t*))
            if st.pat == NULL or st.pat_n == NULL or st.pat_room == NULL:
                raise MemoryError()
        self.reset()

    def __dealloc__(self):
        cdef Py_ssize_t j
        if self.st.pat != NULL:
            for j in range(self.st.cap):
                free(self.st.pat[j])
        free(self.st.pat)
        free(self.st.pat_n)
        free(self.st.pat_room)

    cdef void reset(self) noexcept nogil:
        self.st.n = 0
        self.st.next_stamp = 0
        self.st.Q = 0.0
        self.st.n_maintenance = 0
        self.st.n_merges = 0
        self.st.n_removals = 0
        self.st.n_projections = 0
        self.st.n_inspan = 0
        self.st.n_refactor = 0
        self.st.n_since_refactor = 0
        self.st.wd_total = 0.0
        self.st.n_merge_evals = 0
        self.st.n_coalesced = 0
        self.st.n_compared = 0
        self.st.n_same_as_gss = 0
        self.st.n_same_as_precise = 0
        self.st.ratio_sum = 0.0
        self.st.ratio_gss_sum = 0.0
        self.st.ratio_max = 0.0
        self.st.n_ratio = 0
        self.st.wd_chosen_sum = 0.0
        self.st.wd_gss_sum = 0.0
        self.st.wd_min_sum = 0.0
        self.st.n_optimal = 0
        self.st.n_gss_optimal = 0

    @property
    def n(self):
        return self.st.n

    @property
    def Q(self):
        return self.st.Q

    def counters(self):
        """Maintenance counters as a dict of ints (plus wd_total, a float in stored units).

        In comparison mode also n_compared, same_as_gss / same_as_precise (fractions of the
        compared merges whose partner equals the gss / gss-precise choice), wd_ratio_mean,
        wd_ratio_max (precise WD of the chosen pair over the precise minimum) and
        gss_wd_ratio_mean (the same for the partner gss would have chosen); wd_excess_total and
        gss_wd_excess_total (Σ precise WD of the chosen / gss's pairs over Σ of the minima: the
        mean of ratios is dominated by merges whose minimum is nearly 0), optimal_fraction and
        gss_optimal_fraction (fraction of merges whose partner attains the precise minimum,
        ties included)."""
        if self.st.compare:
            nc, nr = max(self.st.n_compared, 1), max(self.st.n_ratio, 1)
            total = self.st.wd_min_sum if self.st.wd_min_sum > 0.0 else 1.0
            extra = {"n_compared": self.st.n_compared,
                     "same_as_gss": self.st.n_same_as_gss / nc,
                     "same_as_precise": self.st.n_same_as_precise / nc,
                     "wd_ratio_mean": self.st.ratio_sum / nr,
                     "wd_ratio_max": self.st.ratio_max,
                     "gss_wd_ratio_mean": self.st.ratio_gss_sum / nr,
                     "wd_excess_total": self.st.wd_chosen_sum / total,
                     "gss_wd_excess_total": self.st.wd_gss_sum / total,
                     "optimal_fraction": self.st.n_optimal / nc,
                     "gss_optimal_fraction": self.st.n_gss_optimal / nc}
        else:
            extra = {}
        return extra | {"n_maintenance": self.st.n_maintenance, "n_merges": self.st.n_merges,
                "n_removals": self.st.n_removals, "n_projections": self.st.n_projections,
                "n_inspan": self.st.n_inspan, "n_refactor": self.st.n_refactor,
                "n_merge_evals": self.st.n_merge_evals, "wd_total": self.st.wd_total,
                "n_coalesced": self.st.n_coalesced}

    def export(self):
        """(sv dense (n, d), A (n, nr_coef), origin (n,), stamp (n,)) in list order (by stamp)."""
        n, d, cap, nc = self.st.n, self.st.d, self.st.cap, self.st.nr_coef
        order = np.argsort(self._arrays["stamp"][:n], kind="stable")
        X = self._arrays["X"][:d * cap].reshape(d, cap)[:, :n].T[order]
        A = self._arrays["A"][:cap * nc].reshape(cap, nc)[:n][order]
        return (np.ascontiguousarray(X), np.ascontiguousarray(A),
                self._arrays["origin"][:n][order].copy(), self._arrays["stamp"][:n][order].copy())

    # For tests.
    def insert(self, x, coef, origin=-1, label=0):
        """Append dense x (length d) with coefficients coef and training label (±1; 0: the sign
        of coef), then maintain (returns appended)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        coef = np.ascontiguousarray(np.atleast_1d(coef), dtype=np.float64)
        if x.shape[0] != self.st.d or coef.shape[0] != self.st.nr_coef:
            raise ValueError("x must have d entries and coef nr_coef")
        ind = np.flatnonzero(x).astype(np.int32)
        val = np.ascontiguousarray(x[ind])
        krow = self.kernel_row(x)
        cdef double[::1] v = val if len(val) else np.zeros(1)
        cdef int32_t[::1] ii = ind if len(ind) else np.zeros(1, dtype=np.int32)
        cdef SparseRow xs = SparseRow(&v[0], &ii[0], len(ind))
        cdef double[::1] c = coef
        cdef double[::1] kr = np.ascontiguousarray(np.append(krow, 0.0))
        return bool(store_insert(&self.st, xs, float(x @ x), &c[0], origin, &kr[0], label))

    # For tests.
    def kernel_row(self, x):
        """k(x, x̃_j) for the stored SVs, in slot order."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        ind = np.flatnonzero(x).astype(np.int32)
        cdef double[::1] v = np.ascontiguousarray(x[ind]) if len(ind) else np.zeros(1)
        cdef int32_t[::1] ii = ind if len(ind) else np.zeros(1, dtype=np.int32)
        cdef SparseRow xs = SparseRow(&v[0], &ii[0], len(ind))
        out = np.zeros(self.st.cap)
        cdef double[::1] o = out
        kernel_row_sparse(&self.st.kernel, self.st.X, self.st.cap, self.st.n, self.st.sq, xs,
                          float(x @ x), &o[0])
        return out[:self.st.n]

    # For tests.
    def slot_order(self):
        """Slot index of every entry in list order."""
        return np.argsort(self._arrays["stamp"][:self.st.n], kind="stable")

    # For tests.
    def inverse(self):
        """The maintained G = K⁻¹ (slot order), projection only."""
        if self.st.G == NULL:
            raise ValueError("no inverse: maintenance is not projection")
        n, cap = self.st.n, self.st.cap
        return self._arrays["G"].reshape(cap, cap)[:n, :n].copy()

    # For tests.
    def evaluate_merge(self, Py_ssize_t m, Py_ssize_t n, method="gss"):
        """(h, α_z, WD) of merging slots m and n with the scan method ('gss', 'gss-precise',
        'lookup-h', 'lookup-wd': h and α_z are NaN) or 'final' (robust GSS at 1e-3)."""
        if not (0 <= m < self.st.n and 0 <= n < self.st.n and m != n):
            raise IndexError("bad slots")
        code = SEARCH_FINAL if method == "final" else MERGE_SEARCH_KINDS[method]
        if code in (SEARCH_LOOKUP_H, SEARCH_LOOKUP_WD) and self.st.tables == NULL:
            self.st.tables = merge_tables()
        d, cap = self.st.d, self.st.cap
        X = self._arrays["X"][:d * cap].reshape(d, cap)
        d2 = max(float(((X[:, m] - X[:, n]) ** 2).sum()), 0.0)
        cdef double h
        az = np.full(self.st.nr_coef, np.nan)
        cdef double[::1] a = az
        wd = merge_eval(&self.st, m, n, -self.st.kernel.gamma * d2, code, &h, &a[0])
        return h, (az[0] if self.st.nr_coef == 1 else az), wd

    # For tests.
    def maintain(self):
        store_maintain(&self.st)


cdef inline double* _dptr(cnp.ndarray a):
    return <double*>cnp.PyArray_DATA(a)


cdef inline int64_t* _iptr(cnp.ndarray a):
    return <int64_t*>cnp.PyArray_DATA(a)


# For tests.
def gss(double a1, double a2, double logk, double lo=0.0, double hi=1.0, double eps=0.01,
        bint zero_ties_up=False):
    """Golden-section maximisation of a1 κ^((1−h)²) + a2 κ^(h²): returns (h, iterations).
    zero_ties_up: an underflowed tie F(p) = F(q) = 0 keeps the upper part (the multi-class
    search on [−5, 0])."""
    cdef int iters = 0
    h = golden_section_max(a1, a2, logk, lo, hi, eps, zero_ties_up, &iters)
    return h, iters
