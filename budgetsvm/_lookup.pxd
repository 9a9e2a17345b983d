# Lookup tables for binary merging with the Gaussian kernel (docs/ALGORITHMS.md §2) and the
# canonical golden-section searches for the merge position h (§1.5.3).
#
# For a same-sign pair (α_m, α_n) with κ = k(x̃_m, x̃_n) and m = α_m/(α_m+α_n):
#
#   s_{m,κ}(h) = m κ^((1−h)²) + (1−m) κ^(h²)
#   h(m,κ)     = argmax_{h∈[0,1]} s_{m,κ}(h)
#   WD(m,κ)    = m² + (1−m)² + 2m(1−m)κ − s_{m,κ}(h(m,κ))²     (normalised; pair WD = (α_m+α_n)²·WD)
#
# Tables (built by budgetsvm._lookup.get_tables(), ≈ 0.13 s of CPU, once per process, or read
# from the user's cache folder where an earlier process left them):
#
#   wd        float64 (401, 401) row-major, wd[i*401 + j] = WD(i/400, j/400)
#   h_folded  float64 (201, 401) row-major, h_folded[i*401 + j] = h(½ + i/400, j/400), the mode
#             in [½,1] (the right-hand limit at m = ½). For m < ½, h(m,κ) = 1 − H(1−m,κ), so an
#             interpolation never straddles the jump of h on {½} × [0, e^-2]. At κ = 1 (any h
#             is optimal) it holds the limit h = m of κ → 1⁻ instead of ½, so the last κ-cell
#             does not interpolate towards a value that is off the curve by up to ½.
#
# Usage from another Cython module (the pointers stay valid for the life of the process):
#
#   from budgetsvm._lookup cimport MergeTables, merge_tables, lookup_wd, lookup_h
#   cdef const MergeTables* T = merge_tables()      # with the GIL, once (builds on first use)
#   with nogil:
#       wd_pair = (am + an) * (am + an) * lookup_wd(T, am / (am + an), kappa)
#       h = lookup_h(T, am / (am + an), kappa)
from libc.math cimport exp, pow

cdef extern from *:
    """
    /* (sqrt(5) - 1) / 2, the golden-section ratio */
    #define BSVM_GSS_RHO 0.6180339887498948482
    """
    double GSS_RHO "BSVM_GSS_RHO"

cdef enum:
    LOOKUP_INTERVALS = 400        # grid step δ = 1/400 on both axes
    LOOKUP_NODES = 401            # nodes per axis (row length of both tables)
    LOOKUP_HALF_NODES = 201       # m-nodes of the folded h-table (m = ½ .. 1)


cdef struct MergeTables:
    const double* wd              # (LOOKUP_NODES, LOOKUP_NODES)
    const double* h_folded        # (LOOKUP_HALF_NODES, LOOKUP_NODES)


cdef class MergeLookup:
    cdef MergeTables tables
    cdef readonly object wd_table        # numpy (401, 401), read-only; owns tables.wd
    cdef readonly object h_table         # numpy (201, 401), read-only; owns tables.h_folded
    cdef readonly double build_seconds       # wall clock of the build
    cdef readonly double build_cpu_seconds   # process CPU time of the build
    cdef public object from_file             # the cached file it was read from, or None


# The cached tables of this process, built on first call (needs the GIL; raises on failure).
cdef const MergeTables* merge_tables() except NULL


# ---- golden-section searches (§1.5.3), canonical for every solver ---------------------------

cdef inline double merge_objective(double a1, double a2, double logk, double h) noexcept nogil:
    # F(h) = a1 κ^((1−h)²) + a2 κ^(h²), κ = exp(logk); binary merging has a1 = m, a2 = 1 − m
    return a1 * exp(logk * (1.0 - h) * (1.0 - h)) + a2 * exp(logk * h * h)


cdef inline double golden_section_max(double a1, double a2, double logk, double lo, double hi,
                                      double eps, bint zero_ties_up, int* iters) noexcept nogil:
    """The one golden-section search of the package (merging in _budget.pyx, the lookup tables
    and the runtime scans here): maximum of F on [lo, hi], looping while b − a ≥ eps and
    returning (a + b)/2; on [0,1] that is 10 iterations for eps = 0.01 and 48 for eps = 1e-10.
    iters (may be NULL) gets the count. A tie F(p) = F(q) keeps the lower part [a, q], except
    with zero_ties_up a tie at F(p) = F(q) = 0 (both probes underflowed), which keeps the upper
    part [p, b] (the multi-class search on [−5, 0], docs/ALGORITHMS.md §1.5.3)."""
    cdef double a = lo, b = hi
    cdef double p = b - GSS_RHO * (b - a), q = a + GSS_RHO * (b - a)
    cdef double Fp = merge_objective(a1, a2, logk, p), Fq = merge_objective(a1, a2, logk, q)
    cdef int it = 0
    while b - a >= eps:
        if Fp > Fq or (Fp == Fq and not (zero_ties_up and Fp == 0.0)):
            b = q
            q = p
            Fq = Fp
            p = b - GSS_RHO * (b - a)
            Fp = merge_objective(a1, a2, logk, p)
        else:
            a = p
            p = q
            Fp = Fq
            q = a + GSS_RHO * (b - a)
            Fq = merge_objective(a1, a2, logk, q)
        it += 1
    if iters != NULL:
        iters[0] = it
    return 0.5 * (a + b)


# GSS maximising s_{m,κ} on [lo, hi] with log κ given (κ ∈ (0,1)), loop while (b − a) ≥ eps,
# returns (a+b)/2. iters (may be NULL) receives the iteration count (10 for eps = 0.01 and 48 for
# eps = 1e-10 on [0,1]). No degenerate-case handling: see the two functions below.
cdef double merge_gss(double m, double logk, double lo, double hi, double eps,
                      int* iters) noexcept nogil

# Runtime scan ('gss': eps = 0.01, faithful to the GSS-standard of Glasmachers & Qaadan 2018;
# may find the minor mode when s is bimodal): GSS on [0,1]. κ ≥ 1 → ½; κ ≤ 0 → 1 if m ≥ ½
# else 0; m clamped to [0,1].
cdef double gss_merge_h(double m, double kappa, double eps) noexcept nogil

# Robust variant (tables, 'gss-precise' with eps = 1e-10, final placement with eps = 1e-3):
# GSS on [½,1] if m ≥ ½, else on [0,½]. Same degenerate cases as gss_merge_h.
cdef double robust_merge_h(double m, double kappa, double eps) noexcept nogil


# ---- closed forms ----------------------------------------------------------------------------

cdef inline double merge_s(double m, double kappa, double h) noexcept nogil:
    # s_{m,κ}(h) = m κ^((1−h)²) + (1−m) κ^(h²); pow(0, 0) = 1 covers κ = 0.
    return m * pow(kappa, (1.0 - h) * (1.0 - h)) + (1.0 - m) * pow(kappa, h * h)


cdef inline double merge_wd(double m, double kappa, double h) noexcept nogil:
    # normalised WD = m² + (1−m)² + 2m(1−m)κ − s_{m,κ}(h)²
    cdef double s = merge_s(m, kappa, h)
    return m * m + (1.0 - m) * (1.0 - m) + 2.0 * m * (1.0 - m) * kappa - s * s


# ---- bilinear interpolation (§2.4) ----------------------------------------------------------

cdef inline double bilinear(const double* table, Py_ssize_t n_m_nodes, double m_lo, double m,
                            double kappa) noexcept nogil:
    """Bilinear interpolation of a table with rows m = m_lo + i/400 (i < n_m_nodes) and columns
    κ = j/400 (j ≤ 400): x = (m − m_lo)·400, i = min(⌊x⌋, n_m_nodes − 2), likewise j ≤ 399.
    Queries outside the table (and NaN) are clamped onto it, so no access is ever out of bounds."""
    cdef double x = (m - m_lo) * LOOKUP_INTERVALS
    cdef double y = kappa * LOOKUP_INTERVALS
    cdef double xmax = <double>(n_m_nodes - 1)
    if not (x > 0.0):                  # also NaN
        x = 0.0
    elif x > xmax:
        x = xmax
    if not (y > 0.0):
        y = 0.0
    elif y > LOOKUP_INTERVALS:
        y = LOOKUP_INTERVALS
    cdef Py_ssize_t i = <Py_ssize_t>x, j = <Py_ssize_t>y
    if i > n_m_nodes - 2:
        i = n_m_nodes - 2
    if j > LOOKUP_INTERVALS - 1:
        j = LOOKUP_INTERVALS - 1
    cdef double tx = x - i, ty = y - j
    cdef const double* t0 = table + i * LOOKUP_NODES + j      # T[i, j]
    cdef const double* t1 = t0 + LOOKUP_NODES                 # T[i+1, j]
    return ((1.0 - tx) * (1.0 - ty) * t0[0] + tx * (1.0 - ty) * t1[0]
            + (1.0 - tx) * ty * t0[1] + tx * ty * t1[1])


cdef inline double lookup_wd(const MergeTables* t, double m, double kappa) noexcept nogil:
    # Lookup-WD: normalised WD(m,κ); multiply by (α_m+α_n)² for the pair.
    return bilinear(t.wd, LOOKUP_NODES, 0.0, m, kappa)


cdef inline double lookup_h(const MergeTables* t, double m, double kappa) noexcept nogil:
    # Lookup-h from the folded table: H(m,κ) for m ≥ ½, 1 − H(1−m,κ) for m < ½.
    if m >= 0.5:
        return bilinear(t.h_folded, LOOKUP_HALF_NODES, 0.5, m, kappa)
    if not (m >= 0.0):                 # negative or NaN: clamp to 0
        m = 0.0
    return 1.0 - bilinear(t.h_folded, LOOKUP_HALF_NODES, 0.5, 1.0 - m, kappa)
