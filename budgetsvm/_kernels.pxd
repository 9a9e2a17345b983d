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
# stored SVs are nnz(x) contiguous axpys of length n (sparse_dot_columns, budgetsvm/_csr.pxd):
# O(n·nnz(x)) work on contiguous memory.
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
    if K.kind == KERNEL_RBF:
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
