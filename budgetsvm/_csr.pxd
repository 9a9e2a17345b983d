# The compiled cores' one view of CSR training rows, and the O(nnz(x)) operations on one sparse
# row (raw pointers, so that hot loops have no memoryview overhead). Inline: no link dependency.
# Row i is x_i = data[indptr[i]:indptr[i+1]] at columns indices[indptr[i]:indptr[i+1]]; the rows
# come canonical from budgetsvm/problem.py (sorted column indices, no duplicates).
#
# csr_row(X, i) gives row i as a SparseRow (values, columns, count); every operation below takes
# a SparseRow, so the same code serves a training row and any other sparse vector (the SV store
# of budgetsvm/_budget.pyx gathers a stored SV or a merged point into one). Each sums in an
# order fixed by the row alone: the floating-point results do not depend on who calls.
from libc.stdint cimport int32_t, int64_t

cdef extern from *:
    """
    /* where CsrRows.data / .indices point when there are no nonzeros (never read) */
    static const double bsvm_csr_no_data = 0.0;
    static const int bsvm_csr_no_index = 0;
    #if defined(__GNUC__)
    #define BSVM_PREFETCH(address) __builtin_prefetch(address)
    #else
    #define BSVM_PREFETCH(address) ((void)0)
    #endif
    """
    const double CSR_NO_DATA "bsvm_csr_no_data"
    const int32_t CSR_NO_INDEX "bsvm_csr_no_index"
    void prefetch "BSVM_PREFETCH"(const void* address) noexcept nogil


cdef struct CsrRows:
    const double* data
    const int32_t* indices
    const int64_t* indptr
    Py_ssize_t n_rows
    Py_ssize_t n_cols


cdef struct SparseRow:
    # one sparse vector: value val[k] at column ind[k], k < nnz
    const double* val
    const int32_t* ind
    Py_ssize_t nnz


cdef inline void csr_bind(CsrRows* X, const double[::1] data, const int32_t[::1] indices,
                          const int64_t[::1] indptr, Py_ssize_t n_cols):
    # Point X at the arrays (the caller keeps them alive); indptr holds n_rows + 1 offsets into
    # data and indices (it may be a slice of a longer indptr: the offsets are absolute).
    X.data = &CSR_NO_DATA
    X.indices = &CSR_NO_INDEX
    if data.shape[0] > 0:
        X.data = &data[0]
        X.indices = &indices[0]
    X.indptr = &indptr[0]
    X.n_rows = indptr.shape[0] - 1
    X.n_cols = n_cols


cdef inline SparseRow csr_row(const CsrRows* X, Py_ssize_t i) noexcept nogil:
    # x_i
    cdef SparseRow x
    cdef int64_t start = X.indptr[i]
    x.val = X.data + start
    x.ind = X.indices + start
    x.nnz = <Py_ssize_t>(X.indptr[i + 1] - start)
    return x


cdef inline double sparse_dot(SparseRow x, const double* w) noexcept nogil:
    # ⟨w, x⟩ for a dense w: four partial sums over the nonzeros k ≡ 0, 1, 2, 3 (mod 4), then
    # (s0 + s1) + (s2 + s3) + the tail in the row's order. One running sum waits an add's
    # latency per nonzero; four let the loads and adds of consecutive nonzeros overlap.
    cdef Py_ssize_t k = 0, n4 = x.nnz - x.nnz % 4
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    while k < n4:
        s0 += w[x.ind[k]] * x.val[k]
        s1 += w[x.ind[k + 1]] * x.val[k + 1]
        s2 += w[x.ind[k + 2]] * x.val[k + 2]
        s3 += w[x.ind[k + 3]] * x.val[k + 3]
        k += 4
    s0 = (s0 + s1) + (s2 + s3)
    while k < x.nnz:
        s0 += w[x.ind[k]] * x.val[k]
        k += 1
    return s0


cdef inline void sparse_axpy(SparseRow x, double a, double* w) noexcept nogil:
    # w += a · x  (dense w)
    cdef Py_ssize_t k
    for k in range(x.nnz):
        w[x.ind[k]] += a * x.val[k]


cdef inline double sparse_sqnorm(SparseRow x) noexcept nogil:
    # ‖x‖², summed in the row's order
    cdef Py_ssize_t k
    cdef double s = 0.0
    for k in range(x.nnz):
        s += x.val[k] * x.val[k]
    return s


cdef inline void sparse_scatter(SparseRow x, double* out, Py_ssize_t stride) noexcept nogil:
    # out[c·stride] = x_c for the nonzero columns c of x (the other entries are left alone)
    cdef Py_ssize_t k
    for k in range(x.nnz):
        out[<Py_ssize_t>x.ind[k] * stride] = x.val[k]


cdef inline SparseRow sparse_gather(const double* v, Py_ssize_t stride, Py_ssize_t d,
                                    double* val, int32_t* ind) noexcept nogil:
    # the nonzeros of the dense vector (v[0], v[stride], …, v[(d−1)·stride]), written to val and
    # ind (room for d each) in column order
    cdef SparseRow x
    cdef Py_ssize_t c, nnz = 0
    cdef double e
    for c in range(d):
        e = v[c * stride]
        if e != 0.0:
            ind[nnz] = <int32_t>c
            val[nnz] = e
            nnz += 1
    x.val = val
    x.ind = ind
    x.nnz = nnz
    return x


cdef extern from *:
    """
    /* out[j] = sum_k val[k] M[ind[k]*ld + j] for j < n, in tiles of 16 columns: a tile's 16
       sums stay in registers across the nonzeros, where one axpy per nonzero over all n
       columns loads and stores out again for every nonzero. Each out[j] is still
       0 + v_0 M_0j + v_1 M_1j + ... in the nonzeros' order: the same bits as the axpys.
       16, not 32 or 64: with wider tiles gcc kept the sums in memory and was slower than the
       axpys (ijcnn1's 13 nonzeros against 500 vectors). */
    #define BSVM_DOT_TILE 16
    static inline void bsvm_sparse_dot_columns(const double* val, const int32_t* ind,
                                               Py_ssize_t nnz, const double* M, Py_ssize_t ld,
                                               Py_ssize_t n, double* out) {
        Py_ssize_t j0 = 0;
        for (; j0 + BSVM_DOT_TILE <= n; j0 += BSVM_DOT_TILE) {
            double acc[BSVM_DOT_TILE];
            for (int l = 0; l < BSVM_DOT_TILE; l++) acc[l] = 0.0;
            for (Py_ssize_t k = 0; k < nnz; k++) {
                const double v = val[k];
                const double* col = M + (Py_ssize_t)ind[k] * ld + j0;
                for (int l = 0; l < BSVM_DOT_TILE; l++) acc[l] += v * col[l];
            }
            for (int l = 0; l < BSVM_DOT_TILE; l++) out[j0 + l] = acc[l];
        }
        for (Py_ssize_t j = j0; j < n; j++) out[j] = 0.0;
        for (Py_ssize_t k = 0; k < nnz; k++) {
            const double v = val[k];
            const double* col = M + (Py_ssize_t)ind[k] * ld;
            for (Py_ssize_t j = j0; j < n; j++) out[j] += v * col[j];
        }
    }
    """
    void _sparse_dot_columns "bsvm_sparse_dot_columns"(
        const double* val, const int32_t* ind, Py_ssize_t nnz, const double* M, Py_ssize_t ld,
        Py_ssize_t n, double* out) noexcept nogil


cdef inline void sparse_dot_columns(SparseRow x, const double* M, Py_ssize_t ld, Py_ssize_t n,
                                    double* out) noexcept nogil:
    # out[j] = Σ_c x_c M[c·ld + j] for j < n: x against the n columns of a dense feature-major
    # matrix (the SV store's X, ld = its cap)
    _sparse_dot_columns(x.val, x.ind, x.nnz, M, ld, n, out)


cdef inline void csr_prefetch_row(const CsrRows* X, Py_ssize_t i) noexcept nogil:
    # ask for the start of row i's values and columns ahead of its use (a hint, no effect on
    # results): coordinate methods visit rows in random order, so every row begins with a
    # cache miss that the hardware prefetcher cannot foresee
    cdef int64_t start = X.indptr[i]
    prefetch(X.data + start)
    prefetch(X.indices + start)


cdef inline double csr_dot(const CsrRows* X, Py_ssize_t i, const double* w) noexcept nogil:
    # ⟨w, x_i⟩, summed as sparse_dot sums
    return sparse_dot(csr_row(X, i), w)


cdef inline void csr_axpy(const CsrRows* X, Py_ssize_t i, double a, double* w) noexcept nogil:
    # w += a · x_i
    sparse_axpy(csr_row(X, i), a, w)


cdef inline void csr_row_sqnorms(const CsrRows* X, double* out) noexcept nogil:
    # out[i] = ‖x_i‖², summed in the row's order
    cdef Py_ssize_t i
    for i in range(X.n_rows):
        out[i] = sparse_sqnorm(csr_row(X, i))
