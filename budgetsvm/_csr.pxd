# The compiled cores' one view of CSR training rows, and the O(nnz(x_i)) operations on one row
# (raw pointers, so that hot loops have no memoryview overhead). Inline: no link dependency.
# Row i is x_i = data[indptr[i]:indptr[i+1]] at columns indices[indptr[i]:indptr[i+1]]; the rows
# come canonical from budgetsvm/problem.py (sorted column indices, no duplicates).
from libc.stdint cimport int32_t, int64_t


cdef struct CsrRows:
    const double* data
    const int32_t* indices
    const int64_t* indptr
    Py_ssize_t n_rows
    Py_ssize_t n_cols


cdef inline double csr_dot(const CsrRows* X, Py_ssize_t i, const double* w) noexcept nogil:
    # ⟨w, x_i⟩, summed in the row's order
    cdef int64_t k = X.indptr[i], end = X.indptr[i + 1]
    cdef const double* val = X.data
    cdef const int32_t* ind = X.indices
    cdef double s = 0.0
    while k < end:
        s += w[ind[k]] * val[k]
        k += 1
    return s


cdef inline void csr_axpy(const CsrRows* X, Py_ssize_t i, double a, double* w) noexcept nogil:
    # w += a · x_i
    cdef int64_t k = X.indptr[i], end = X.indptr[i + 1]
    cdef const double* val = X.data
    cdef const int32_t* ind = X.indices
    while k < end:
        w[ind[k]] += a * val[k]
        k += 1


cdef inline void csr_row_sqnorms(const CsrRows* X, double* out) noexcept nogil:
    # out[i] = ‖x_i‖², summed in the row's order
    cdef Py_ssize_t i
    cdef int64_t k
    cdef double s
    for i in range(X.n_rows):
        s = 0.0
        for k in range(X.indptr[i], X.indptr[i + 1]):
            s += X.data[k] * X.data[k]
        out[i] = s
