# Kernel evaluation helpers shared by the budgeted kernel solvers (BSGD, BSCA),
# docs/ALGORITHMS.md §0.2.
#
# LIBSVM conventions, with u·v the dot product:
#   linear   k(u,v) = u·v
#   poly     k(u,v) = (gamma u·v + coef0)^degree
#   rbf      k(u,v) = exp(-gamma ‖u − v‖²),  ‖u − v‖² = ‖u‖² + ‖v‖² − 2 u·v clamped at ≥ 0
#   sigmoid  k(u,v) = tanh(gamma u·v + coef0)
#
# Support vectors live in a dense feature-major matrix X (d × cap, X[k*cap + j] is feature k
# of SV j; see budgetsvm/_budget.pxd), so the dot products of one sparse row x with all n
# stored SVs read nnz(x) contiguous columns of length n (sparse_dot_columns, budgetsvm/_csr.pxd,
# 16 SVs at a time): O(n·nnz(x)) work on contiguous memory.
# Everything here is inline, noexcept and nogil: header-only, no link dependency.
from libc.math cimport exp, pow, tanh

from budgetsvm._csr cimport SparseRow, sparse_dot_columns

cdef enum KernelKind:
    KERNEL_LINEAR = 0
    KERNEL_POLY = 1
    KERNEL_RBF = 2
    KERNEL_SIGMOID = 3


ctypedef struct Kernel:
    int kind          # a KernelKind
    double gamma
    double coef0
    int degree
    # The robust default's vectorised row arithmetic: rbf rows through exp_inplace instead
    # of libm's exp, and coefficient sums over a row in 8 lanes (row_dot). The papers' mode
    # keeps libm's exp and the in-order sum, so that it reproduces the published algorithms'
    # models bit for bit (docs/ALGORITHMS.md §0.2).
    bint fast_rows


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* v[j] = exp(v[j]) for v[j] <= 709, within 3 ulp of the exact value (0 below -708, where
       exp is subnormal or 0; the rbf kernel rows pass v <= 0, ACF's preferences log p in
       [log p_min, log p_max]). Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, with ln2
       split so that k*LN2_HI is exact; exp(r) by its Taylor polynomial of degree 12 (truncation error
       below 2e-16); 2^k built in the exponent bits. Branch-free, so that the compiler
       vectorises the loop: about 4x faster than calling libm's exp per entry. Plain IEEE
       arithmetic (no fused multiply-add, see setup.py): the same bits on every machine. */
    static inline void bsvm_exp_inplace(double* v, Py_ssize_t n) {
        const double LOG2E = 1.4426950408889634074;
        const double LN2_HI = 6.93147180369123816490e-01;
        const double LN2_LO = 1.90821492927058770002e-10;
        const double SHIFTER = 6755399441055744.0;      /* 1.5 * 2^52: rounds to an integer */
        int64_t shifter_bits;
        memcpy(&shifter_bits, &SHIFTER, sizeof shifter_bits);
        for (Py_ssize_t j = 0; j < n; j++) {
            double x = v[j];
            double xc = x < -708.0 ? -708.0 : x;
            double t = xc * LOG2E + SHIFTER;             /* the low bits of t hold k */
            double k = t - SHIFTER;
            double r = (xc - k * LN2_HI) - k * LN2_LO;
            double p = 1.0 / 479001600.0;
            p = p * r + 1.0 / 39916800.0;
            p = p * r + 1.0 / 3628800.0;
            p = p * r + 1.0 / 362880.0;
            p = p * r + 1.0 / 40320.0;
            p = p * r + 1.0 / 5040.0;
            p = p * r + 1.0 / 720.0;
            p = p * r + 1.0 / 120.0;
            p = p * r + 1.0 / 24.0;
            p = p * r + 1.0 / 6.0;
            p = p * r + 0.5;
            p = p * r + 1.0;
            p = p * r + 1.0;
            int64_t t_bits, scale_bits;
            memcpy(&t_bits, &t, sizeof t_bits);
            scale_bits = (t_bits - shifter_bits + 1023) << 52;    /* 2^k */
            double scale;
            memcpy(&scale, &scale_bits, sizeof scale);
            v[j] = x < -708.0 ? 0.0 : p * scale;
        }
    }
    """
    void exp_inplace "bsvm_exp_inplace"(double* v, Py_ssize_t n) noexcept nogil


cdef extern from *:
    """
    /* sum_j a[j] b[j] in 8 interleaved partial sums, added pairwise at the end: the compiler
       turns the lanes into one vector, where the in-order sum waits for every add in turn.
       The lanes are written out in C, so the result does not depend on the vector width. */
    static inline double bsvm_dot_lanes(const double* a, const double* b, Py_ssize_t n) {
        double s[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        double tail = 0.0;
        Py_ssize_t j = 0;
        for (; j + 8 <= n; j += 8)
            for (int l = 0; l < 8; l++)
                s[l] += a[j + l] * b[j + l];
        for (; j < n; j++)
            tail += a[j] * b[j];
        return (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))) + tail;
    }
    """
    double dot_lanes "bsvm_dot_lanes"(const double* a, const double* b, Py_ssize_t n) noexcept nogil


cdef inline double row_dot(const Kernel* K, const double* coef, const double* krow,
                           Py_ssize_t n) noexcept nogil:
    """Σ_j coef[j]·krow[j], the decision value of a row from its kernel row: in 8 lanes with
    K.fast_rows, else in order."""
    cdef Py_ssize_t j
    cdef double f = 0.0
    if K.fast_rows:
        return dot_lanes(coef, krow, n)
    for j in range(n):
        f += coef[j] * krow[j]
    return f


cdef inline double sqdist_from_dot(double dot, double sqa, double sqb) noexcept nogil:
    # d2 = max(‖a‖² + ‖b‖² − 2 a·b, 0)
    cdef double d2 = sqa + sqb - 2.0 * dot
    return d2 if d2 > 0.0 else 0.0


cdef inline double kernel_from_dot(const Kernel* K, double dot, double sqa,
                                   double sqb) noexcept nogil:
    """k(a, b) from a·b and the cached squared norms (the norms matter for rbf only)."""
    if K.kind == KERNEL_RBF:
        return exp(-K.gamma * sqdist_from_dot(dot, sqa, sqb))
    if K.kind == KERNEL_LINEAR:
        return dot
    if K.kind == KERNEL_POLY:
        return pow(K.gamma * dot + K.coef0, K.degree)
    return tanh(K.gamma * dot + K.coef0)


cdef inline double kernel_self(const Kernel* K, double sq) noexcept nogil:
    """k(a, a) from ‖a‖² (1 for rbf)."""
    if K.kind == KERNEL_RBF:
        return 1.0
    return kernel_from_dot(K, sq, sq, sq)


cdef inline void kernel_row_from_dots(const Kernel* K, double* out, Py_ssize_t n, double xsq,
                                      const double* sq) noexcept nogil:
    # out[j] = k(x, sv_j) given out[j] = x·sv_j, xsq = ‖x‖², sq[j] = ‖sv_j‖²
    cdef Py_ssize_t j
    cdef double g = K.gamma, c0 = K.coef0, d2
    if K.kind == KERNEL_RBF and K.fast_rows:
        for j in range(n):
            d2 = xsq + sq[j] - 2.0 * out[j]
            out[j] = -g * d2 if d2 > 0.0 else 0.0
        exp_inplace(out, n)
    elif K.kind == KERNEL_RBF:
        for j in range(n):
            d2 = xsq + sq[j] - 2.0 * out[j]
            if d2 < 0.0:
                d2 = 0.0
            out[j] = exp(-g * d2)
    elif K.kind == KERNEL_LINEAR:
        pass
    elif K.kind == KERNEL_POLY:
        for j in range(n):
            out[j] = pow(g * out[j] + c0, K.degree)
    else:
        for j in range(n):
            out[j] = tanh(g * out[j] + c0)


cdef inline void kernel_row_sparse(const Kernel* K, const double* X, Py_ssize_t cap,
                                   Py_ssize_t n, const double* sq, SparseRow x, double xsq,
                                   double* out) noexcept nogil:
    """out[j] = k(x, sv_j) for the n stored SVs; x sparse with ‖x‖² = xsq."""
    sparse_dot_columns(x, X, cap, n, out)
    kernel_row_from_dots(K, out, n, xsq, sq)
