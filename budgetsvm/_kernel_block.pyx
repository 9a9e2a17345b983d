"""The refit's compiled helpers (budgetsvm/refit.py, docs/ALGORITHMS.md §9.3): RBF kernel values
of a dense block of dot products in one pass, for its n × B kernel block, and the in-place
mirror of the upper triangle that BLAS syrk fills.

numpy's form of the same formula (KernelSpec.from_dot: scale, add both norms, clamp, scale,
exp) makes six passes over the block with libm-accurate exp; here each row goes through
kernel_row_from_dots of budgetsvm/_kernels.pxd as the robust default's kernel rows do (exponents,
then the vectorised exp_inplace: within 3 ulp, the same bits on every machine), while it is
still in the cache. Prediction keeps
from_dot, so that its decision values do not change.
"""
from budgetsvm._kernels cimport KERNEL_RBF, Kernel, kernel_row_from_dots


def rbf_from_dots(double[:, ::1] block, const double[::1] row_sq, const double[::1] col_sq,
                  double gamma):
    """In place: block[i, j] = exp(−γ·max(row_sq[i] + col_sq[j] − 2·block[i, j], 0)), the RBF
    kernel of rows with squared norms row_sq against columns with squared norms col_sq, given
    their dot products in block."""
    cdef Py_ssize_t n = block.shape[0], m = block.shape[1], i
    # each row as a kernel row of the robust default's solvers (the same arithmetic, the same bits)
    cdef Kernel rbf
    rbf.kind, rbf.gamma, rbf.coef0, rbf.degree, rbf.fast_rows = KERNEL_RBF, gamma, 0.0, 0, True
    if row_sq.shape[0] != n or col_sq.shape[0] != m:
        raise ValueError("the squared norms do not match the block's shape")
    if m == 0:
        return
    with nogil:
        for i in range(n):
            kernel_row_from_dots(&rbf, &block[i, 0], m, row_sq[i], &col_sq[0])


def mirror_upper(double[::1, :] a):
    """In place: a[i, j] = a[j, i] for i > j, so that the square Fortran-ordered a is the
    symmetric matrix of its upper triangle (BLAS syrk fills only that). The upper triangle is
    not touched, so the result has the bits of numpy's triu(a) + triu(a, 1).T without its four
    temporary arrays."""
    cdef Py_ssize_t n = a.shape[0], i, j
    if a.shape[1] != n:
        raise ValueError("the matrix is not square")
    with nogil:
        # column j of the lower triangle (contiguous in Fortran order) from row j of the upper
        for j in range(n):
            for i in range(j + 1, n):
                a[i, j] = a[j, i]
