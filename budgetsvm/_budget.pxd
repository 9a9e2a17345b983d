# Support-vector store and budget maintenance shared by the budgeted kernel solvers (BSGD now,
# BSCA later), docs/ALGORITHMS.md §1.2 and §1.5.
#
# Representation (one Store, buffers owned by the SVStore object that wraps it):
#
#   X       float64 (d, cap), feature-major: X[k*cap + j] is feature k of SV slot j. A margin
#           evaluation of a sparse row x against the n stored SVs is nnz(x) contiguous axpys of
#           length n (budgetsvm/_csr.pxd, budgetsvm/_kernels.pxd): O(n·nnz(x)), no Python, no
#           allocation.
#   sq      float64 (cap,)  cached ‖x̃_j‖²;   kd float64 (cap,) cached k(x̃_j, x̃_j)
#   A       float64 (cap, nr_coef), row-major: stored coefficients a_j (binary, nr_coef = 1) or
#           coefficient vectors A_j (Crammer–Singer, nr_coef = k). Any sign: the solver decides
#           what they mean (BSGD: true α_j = s·a_j with its global scale s; BSCA: β_j).
#   origin  int64 (cap,)  training row an entry came from, −1 for a merged point
#   stamp   int64 (cap,)  insertion counter. Deletion moves the last slot into the hole (O(d),
#           O(nnz) with patterns), so slots are not in list order; the stamp *is* the list
#           order of docs/ALGORITHMS.md §1.2 (appended at the end, merged z appended at the end)
#           and breaks every tie
#           ("lowest list position" = smallest stamp = oldest).
#   G       float64 (cap, cap), projection only: inverse of the kernel matrix of the stored SVs
#           (slot-indexed like X), kept by bordering/downdating in O(B²) per step (§1.5.2).
#
# cap = B + 1: an insertion may take the store to B + 1 entries, maintenance brings it back to B.
# Memory: 8·d·(B+1) bytes for X, 8·(B+1)·(nr_coef + 4) for the per-SV arrays, plus
# 8·(B+1)² for G with projection; scratch is O(B + d). Example: mnist (d = 780), B = 500:
# 3.1 MB; a9a (d = 123): 0.5 MB. A very wide sparse problem (d ≥ 10⁶) needs a sparse store,
# which this representation does not offer.
from libc.stdint cimport int8_t, int32_t, int64_t

from budgetsvm._csr cimport SparseRow
from budgetsvm._kernels cimport Kernel
from budgetsvm._lookup cimport MergeTables

cdef enum Maintenance:
    MAINT_REMOVAL = 0
    MAINT_PROJECTION = 1
    MAINT_MERGE = 2

cdef enum MergeSearch:
    SEARCH_GSS = 0            # GSS on [0,1], ε = 0.01 ("GSS-standard" of Glasmachers & Qaadan 2018)
    SEARCH_GSS_PRECISE = 1    # robust GSS (half interval), ε = 1e-10
    SEARCH_LOOKUP_H = 2       # h from the folded table, α_z and WD by the closed forms (§2.5)
    SEARCH_LOOKUP_WD = 3      # WD = (α_m+α_n)²·WD_table(m,κ); h, α_z only for the winner (§2.5)
    # Lookup applies to binary merges only; multi-class merging uses SEARCH_GSS (§2.5).


ctypedef struct Store:
    Kernel kernel
    Py_ssize_t d              # number of features
    Py_ssize_t cap            # number of slots (budget + 1)
    Py_ssize_t budget
    Py_ssize_t n              # stored SVs, 0 <= n <= cap
    Py_ssize_t nr_coef
    int maintenance           # a Maintenance
    int merge_search          # a MergeSearch
    const MergeTables* tables # lookup tables (lookup-h / lookup-wd), else NULL
    double* X                 # (d, cap)
    double* sq                # (cap,)
    double* kd                # (cap,)
    double* A                 # (cap, nr_coef)
    int64_t* origin           # (cap,)
    int64_t* stamp            # (cap,)
    # binary merging's partner classes: by the sign of A (False) or by label (True, the
    # BSCA authors' rule, docs/ALGORITHMS.md §3.3); label[j] = ±1 is the training label of
    # slot j's rows (an insertion's, or its merged pair's common one)
    bint by_label
    int8_t* label             # (cap,)
    int64_t next_stamp
    double* G                 # (cap, cap) or NULL
    # scratch (no allocation per step)
    double* row               # (cap,) a kernel row of a stored SV
    double* row2              # (cap,)
    double* u                 # (cap,)
    double* vec               # (max(cap, nr_coef) ,) per-class / per-slot temporaries
    double* vec2              # (max(cap, nr_coef),)
    double* zcol              # (d,)
    double* nzval             # (d,) nonzeros of one stored column
    int32_t* nzind            # (d,)
    double* work              # (cap, cap) projection refactorisation, or NULL
    # Sparsity patterns (wide data, d >= SVStore's patterns_from): pat[j] lists, in increasing
    # order, the features that may be non-zero in slot j (pat_n[j] of them, room for
    # pat_room[j]); NULL: unknown, scan all d. With patterns every free slot's column is zero,
    # so inserting, deleting, gathering and merging cost O(nnz) instead of O(d) strided
    # accesses (sector.scale, d = 55,197: about 1 ms per deletion). pat == NULL: off.
    int32_t** pat
    Py_ssize_t* pat_n
    Py_ssize_t* pat_room
    int32_t* uind             # (d,) scratch: the union of two patterns (merging)
    double inspan_tol         # in-span threshold on the Schur complement (relative to κ₀)
    # coalescing (optional, docs/ALGORITHMS.md §1.3/§3.2): a repeated insertion of a training row
    # (origin ≥ 0) whose unmerged entry is still stored adds its coefficients to that entry
    # instead of taking a new slot. The entry is found by a scan of origin, O(B) per insertion
    # (cheap next to the O(B·nnz) margin), so memory does not grow with the number of rows.
    bint coalesce
    int64_t n_coalesced       # insertions added to an existing slot
    # ‖w‖² tracking (budgeted margin perceptron): Q = Σ_r ‖Σ_j A_j^(r) φ(x̃_j)‖²
    bint track_q
    double Q
    # counters
    int64_t n_maintenance     # maintenance events (|M| reached B + 1)
    int64_t n_merges
    int64_t n_removals
    int64_t n_projections     # maintenance by projection
    int64_t n_inspan          # new points projected at once (Schur complement ≤ 1e-10·κ₀)
    int64_t n_refactor        # projection inverse recomputed from scratch
    int64_t n_since_refactor
    double wd_total           # Σ of the weight degradations (stored units)
    int64_t n_merge_evals     # per-candidate merge evaluations during the scans
    # comparison mode (diagnostics, Glasmachers & Qaadan 2018, Table 3): every binary merge is
    # also scanned with gss and gss-precise; agreement of the chosen partners and WD ratios to the
    # precise minimum
    bint compare
    int64_t n_compared        # binary merges compared
    int64_t n_same_as_gss     # configured method chose the partner gss would choose
    int64_t n_same_as_precise # ... the partner gss-precise would choose
    double ratio_sum          # Σ WD_precise(chosen) / WD_precise(min)   (pairs with min > 0)
    double ratio_gss_sum      # Σ WD_precise(gss choice) / WD_precise(min)
    double ratio_max          # max of the configured method's ratio
    int64_t n_ratio           # terms of the two sums
    double wd_chosen_sum      # Σ WD_precise(chosen) over all compared merges
    double wd_gss_sum         # Σ WD_precise(gss choice)
    double wd_min_sum         # Σ WD_precise(min)
    int64_t n_optimal         # chosen partner attains the precise minimum (ties count)
    int64_t n_gss_optimal     # gss's partner attains it


cdef class SVStore:
    cdef Store st
    cdef object _arrays       # the numpy buffers behind the pointers of st

    cdef void reset(self) noexcept nogil


cdef bint store_insert(Store* st, SparseRow x, double xsq, const double* coef, int64_t origin,
                       const double* krow, int8_t label) noexcept nogil
cdef void store_maintain(Store* st) noexcept nogil
cdef void store_scale(Store* st, double factor) noexcept nogil
cdef void store_sv_kernel_row(Store* st, Py_ssize_t p, double* out) noexcept nogil
cdef double merge_eval(Store* st, Py_ssize_t m, Py_ssize_t n, double logk, int method,
                       double* h_out, double* az_out) noexcept nogil
cdef double gss_max(double a1, double a2, double logk, double lo, double hi, double eps,
                    int* iters) noexcept nogil
