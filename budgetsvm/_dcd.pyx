"""Linear SVM by dual coordinate descent (LIBLINEAR's -s 3 / -s 1 solver),
docs/ALGORITHMS.md §4.

The module holds two solvers, ``dcd_solve`` (uniform sweeps with shrinking, §4.2) and
``acf_solve`` (adaptive coordinate frequencies, ACF/AVSF, §4.4), which share everything except
their outer loop:

* ``_Problem`` / ``_as_problem_arrays`` / ``_bind``: validation, the CSR view, ±1 labels,
  per-instance costs C_i, bounds U_i, diagonal shifts D_ii, Q̄_ii = ‖x_i‖² + D_ii, and the
  zero-row rule of §0.1;
* ``_sparse_dot`` / ``_sparse_axpy``: the two O(nnz(x_i)) kernels on one CSR row
  (budgetsvm/_csr.pxd, the cores' shared CSR view);
* ``_check_signals``: Ctrl-C from inside the nogil loop;
* ``_objectives``: the dual (descent form, as LIBLINEAR prints it) and the primal.
"""
import collections

import numpy as np

cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from libc.math cimport INFINITY, copysign, exp, fabs, log
from libc.stdint cimport int32_t, int64_t, uint64_t

from budgetsvm._csr cimport (CSR_NO_INDEX, CsrRows, csr_axpy, csr_bind, csr_dot, csr_prefetch_row,
                            csr_row_sqnorms)
from budgetsvm._random cimport Rng, rng_seed, rng_shuffle, rng_shuffle_fast, rng_uniform
from budgetsvm._nogil cimport check_signals as _check_signals
from budgetsvm._kernels cimport exp_inplace

cnp.import_array()

cdef extern from *:
    """
    /* A step is taken only when the projected gradient exceeds this (LIBLINEAR's 1e-12). */
    #define BSVM_STEP_THRESHOLD 1e-12
    /* Coordinate visits between two checks for Ctrl-C (each briefly re-acquires the GIL). */
    #define BSVM_SIGNAL_CHECK_EVERY 10000
    /* Rows between a row's prefetch and its visit. */
    #define BSVM_PREFETCH_AHEAD 2
    """
    double STEP_THRESHOLD "BSVM_STEP_THRESHOLD"
    Py_ssize_t SIGNAL_CHECK_EVERY "BSVM_SIGNAL_CHECK_EVERY"
    Py_ssize_t PREFETCH_AHEAD "BSVM_PREFETCH_AHEAD"

DcdResult = collections.namedtuple(
    "DcdResult",
    ["w", "alpha", "n_iter", "n_updates", "max_iter_reached", "dual_objective",
     "primal_objective", "n_unshrink"])
DcdResult.__doc__ = """Result of one binary dual CD solve.

w                 float64 (n_features,), w = Σ_i α_i y_i x_i (maintained incrementally)
alpha             float64 (n_rows,), the dual variables
n_iter            outer iterations (sweeps) performed
n_updates         coordinate steps taken (|PG| > 1e-12)
max_iter_reached  True when the loop stopped at max_iter without meeting the stopping test
dual_objective    ½‖w‖² − Σα_i + ½Σ D_ii α_i² (LIBLINEAR's descent form, "Objective value")
primal_objective  ½‖w‖² + Σ C_i ξ_i (L1) or Σ C_i ξ_i² (L2), ξ_i = max(0, 1 − y_i⟨w,x_i⟩)
n_unshrink        how often shrinking was undone for a verification sweep (LIBLINEAR's '*')
"""


# ---------------------------------------------------------------------------------------------
# Shared parts (also used by the ACF solver)
# ---------------------------------------------------------------------------------------------

cdef struct _Problem:
    CsrRows X              # the training rows (budgetsvm/_csr.pxd)
    const double* y        # ±1
    const double* C        # per-instance cost C_i (C times the class weight)
    const double* U        # upper bound of α_i: C_i (L1) or +inf (L2)
    const double* D        # diagonal shift D_ii: 0 (L1) or 1/(2 C_i) (L2)
    const double* QD       # Q̄_ii = ‖x_i‖² + D_ii
    const double* yU       # y_i · U_i: label and bound in one load for the hot loop


cdef inline double _sparse_dot(const double* w, const _Problem* p, Py_ssize_t i) noexcept nogil:
    # return np.dot(w, x_i)
    return csr_dot(&p.X, i, w)


cdef inline void _sparse_axpy(double a, const _Problem* p, Py_ssize_t i, double* w) noexcept nogil:
    # w += a * x_i
    csr_axpy(&p.X, i, a, w)


cdef inline double _acf_step(const _Problem* p, Py_ssize_t i, double ai, double Ui, double g,
                             double yi, double* a, double* w) noexcept nogil:
    # ACF's coordinate step (both of its loops): alpha_i ← clip(alpha_i + g / Q̄_ii, 0, U_i),
    # w += (alpha_new − alpha_i) y_i x_i; returns the dual gain Δ_i that drives the preferences.
    cdef double a_new = ai + g / p.QD[i], mu, delta
    if a_new < 0.0 or a_new > Ui:
        a_new = 0.0 if a_new < 0.0 else Ui
        mu = a_new - ai
        # clipped: |mu|·Q̄_ii < |g|, so the gain keeps g's sign robustly
        delta = mu * (g - 0.5 * mu * p.QD[i])
    else:
        mu = a_new - ai
        # the full Newton step gains exactly g² / (2 Q̄_ii); a row whose ‖x‖² overflows
        # (Q̄_ii = inf) cannot move and gains 0 (g²/inf was inf/inf = NaN, which reached the
        # schedule and made it write out of bounds)
        delta = 0.5 * g * g / p.QD[i] if p.QD[i] != INFINITY else 0.0
    a[i] = a_new
    _sparse_axpy(mu * yi, p, i, w)
    return delta


def _row_norms(const double[::1] data, const int64_t[::1] indptr):
    """Squared Euclidean norm of every CSR row."""
    cdef CsrRows X
    cdef double dummy = 0.0
    X.data = &data[0] if data.shape[0] > 0 else &dummy
    X.indices = &CSR_NO_INDEX     # not read: the norms need the values only
    X.indptr = &indptr[0]
    X.n_rows = indptr.shape[0] - 1
    out = np.zeros(X.n_rows, dtype=np.float64)
    cdef double[::1] v_out = out
    if X.n_rows > 0:
        with nogil:
            csr_row_sqnorms(&X, &v_out[0])
    return out


def _as_problem_arrays(data, indices, indptr, y, C_i, Py_ssize_t n_features, loss,
                       row_norms=None):
    """Validate the CSR input and build the per-instance arrays shared by DCD and ACF.

    row_norms: the squared row norms if the caller has them (one-vs-rest trains k problems on
    the same rows; dcd.fit_linear computes them once), else computed here.

    Returns (data, indices, indptr, y, C_i, U, D, QD, yU, alpha, order, n_order):
    y ±1 float64; C_i, U, D, QD as in ``_Problem``; alpha the initial duals (0, or U_i for an L1 zero
    row, §0.1); order the rows that the solver visits (every row except L1 zero rows) and
    n_order their number.
    """
    data = np.ascontiguousarray(data, dtype=np.float64)
    indices = np.ascontiguousarray(indices, dtype=np.int32)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    yv = np.asarray(y)
    C_i = np.ascontiguousarray(C_i, dtype=np.float64)
    cdef Py_ssize_t n = indptr.shape[0] - 1
    if n < 0 or yv.shape[0] != n or C_i.shape[0] != n:
        raise ValueError("indptr, y and C_i disagree on the number of rows")
    if indptr[0] != 0 or indptr[n] != data.shape[0] or indices.shape[0] != data.shape[0] \
            or np.any(np.diff(indptr) < 0):
        raise ValueError("malformed CSR structure")
    if indices.shape[0] and (indices.min() < 0 or indices.max() >= n_features):
        raise ValueError("column index out of range [0, n_features)")
    if not np.all(C_i > 0) or not np.all(np.isfinite(C_i)):
        raise ValueError("C_i must be positive and finite")
    if loss not in ("l1", "l2"):
        raise ValueError("loss must be 'l1' or 'l2'")
    # y_i = +1 if label > 0 else -1 (LIBLINEAR's rule)
    ys = np.where(yv > 0, 1.0, -1.0)
    if row_norms is None:
        sq = _row_norms(data, indptr)
    else:
        sq = np.ascontiguousarray(row_norms, dtype=np.float64)
        if sq.shape != (n,):
            raise ValueError("row_norms must have one value per row")
    if loss == "l1":
        U = C_i.copy()
        D = np.zeros(n, dtype=np.float64)
    else:
        U = np.full(n, np.inf)
        D = 0.5 / C_i
    QD = sq + D
    alpha = np.zeros(n, dtype=np.float64)
    # §0.1: an L1 zero row has no quadratic cost, so its optimum is the bound; set it once and
    # never visit it (w is unaffected). L2 rows always have Q̄_ii ≥ D_ii > 0.
    zero = QD <= 0.0
    alpha[zero] = U[zero]
    # A row whose ‖x‖² overflows (Q̄_ii = inf) can take no step (g/Q̄_ii = 0) but kept its
    # gradient in the stopping test, so --max-iter 0 never ended: it is left out at α_i = 0,
    # where it stays in LIBLINEAR too (train() warns about such rows).
    order = np.flatnonzero(~zero & (QD < np.inf)).astype(np.intp)
    return data, indices, indptr, ys, C_i, U, D, QD, ys * U, alpha, order, order.shape[0]


cdef double _DUMMY_DOUBLE = 0.0


cdef int _bind(_Problem* p, const double[::1] data, const int32_t[::1] indices,
               const int64_t[::1] indptr, Py_ssize_t n_features, const double[::1] y,
               const double[::1] C, const double[::1] U, const double[::1] D,
               const double[::1] QD, const double[::1] yU) except -1:
    # Point p at the arrays returned by _as_problem_arrays; the caller keeps them alive.
    csr_bind(&p.X, data, indices, indptr, n_features)
    p.y = p.C = p.U = p.D = p.QD = p.yU = &_DUMMY_DOUBLE
    if p.X.n_rows > 0:
        p.y = &y[0]
        p.C = &C[0]
        p.U = &U[0]
        p.D = &D[0]
        p.QD = &QD[0]
        p.yU = &yU[0]
    return 0


cdef void _objectives(const _Problem* p, const double* w, const double* alpha, bint l2,
                      double* dual, double* primal) noexcept nogil:
    # wnorm = w @ w
    # dual = wnorm/2 - alpha.sum() + (D * alpha**2).sum()/2
    # xi = np.maximum(0, 1 - y * (X @ w)); primal = wnorm/2 + (C * (xi**2 if l2 else xi)).sum()
    cdef Py_ssize_t i, j
    cdef double wnorm = 0.0, asum = 0.0, loss = 0.0, xi
    for j in range(p.X.n_cols):
        wnorm += w[j] * w[j]
    for i in range(p.X.n_rows):
        asum += alpha[i] * (alpha[i] * p.D[i] - 2.0)
        xi = 1.0 - p.y[i] * _sparse_dot(w, p, i)
        if xi > 0.0:
            loss += p.C[i] * (xi * xi if l2 else xi)
    dual[0] = (wnorm + asum) / 2.0
    primal[0] = wnorm / 2.0 + loss


# ---------------------------------------------------------------------------------------------
# Dual coordinate descent with shrinking
# ---------------------------------------------------------------------------------------------

def dcd_solve(data, indices, indptr, y, C_i, Py_ssize_t n_features, *, double eps=0.1,
              Py_ssize_t max_iter=1000, bint shrinking=True, stop="strict", loss="l1",
              uint64_t seed=1, callback=None, row_norms=None):
    """Solve one binary L2-regularised SVM by dual coordinate descent with shrinking.

    Problem (descent form, as in LIBLINEAR)::

        min_α  f(α) = ½ αᵀ Q̄ α − eᵀα   s.t. 0 ≤ α_i ≤ U_i,
        Q̄ = Q + D,  Q_ij = y_i y_j x_iᵀx_j,

        L1-loss (hinge, LIBLINEAR -s 3):           U_i = C_i, D_ii = 0
        L2-loss (squared hinge, LIBLINEAR -s 1):   U_i = ∞,   D_ii = 1/(2 C_i)

    dual of  min_w ½‖w‖² + Σ_i C_i ξ_i (L1) or Σ_i C_i ξ_i² (L2),  ξ_i = max(0, 1 − y_i wᵀx_i),
    with w = Σ_i α_i y_i x_i kept up to date after every step.
    See Algorithm 3 of Hsieh et al., ICML 2008, in the projected-gradient form of LIBLINEAR's
    solve_l2r_l1l2_svc (docs/ALGORITHMS.md §4.2, §4.3). Written in ascent form below:
    g_i = 1 − y_i wᵀx_i − D_ii α_i = −∇_i f(α), and PG the projected g_i.

    Given: CSR rows (data float64, indices int32 in [0, n_features), indptr int64; any bias
    column already appended), y (> 0 means +1, else −1), C_i the per-instance cost (C times the
    class weight), the tolerance eps, max_iter outer iterations (0 = unlimited), shrinking on/off,
    stop 'strict' (LIBLINEAR ≥ 2.42: M − m ≤ ε and |M|, |m| ≤ ε), 'classic' (M − m ≤ ε) or 'pg'
    (max|PG| < ε, ACF's rule: the common criterion Glasmachers & Dogan (2013) state for their
    comparison, docs/ALGORITHMS.md §4.4),
    loss 'l1' or 'l2', the RNG seed (a fresh permutation of the active rows per outer iteration),
    an optional callback(iteration, M − m) called once per outer iteration, and optionally the
    squared row norms (row_norms) when the caller has them.

    Returns a DcdResult (w, alpha, counters and both objectives). A pending Ctrl-C is noticed
    within SIGNAL_CHECK_EVERY coordinate visits and raises KeyboardInterrupt.
    """
    if stop not in ("strict", "classic", "pg"):
        raise ValueError("stop must be 'strict', 'classic' or 'pg'")
    if not eps > 0:
        raise ValueError("eps must be positive")
    if max_iter < 0:
        raise ValueError("max_iter must be >= 0")
    (data, indices, indptr, ys, C_i, U, D, QD, yU, alpha, order, n_order) = _as_problem_arrays(
        data, indices, indptr, y, C_i, n_features, loss, row_norms)
    w = np.zeros(n_features, dtype=np.float64)

    cdef _Problem p
    _bind(&p, data, indices, indptr, n_features, ys, C_i, U, D, QD, yU)
    cdef double[::1] v_w = w
    cdef double[::1] v_alpha = alpha
    cdef Py_ssize_t[::1] v_index = order
    cdef double dummy = 0.0
    cdef Py_ssize_t dummy_index = 0

    cdef double* wp = &v_w[0] if n_features > 0 else &dummy
    cdef double* a = &v_alpha[0] if p.X.n_rows > 0 else &dummy
    cdef Py_ssize_t* index = &v_index[0] if n_order > 0 else &dummy_index

    cdef bint strict = stop == "strict"
    cdef bint pg_rule = stop == "pg"
    cdef bint l2 = loss == "l2"
    cdef bint has_callback = callback is not None
    cdef Py_ssize_t n = n_order            # rows the solver visits
    cdef Py_ssize_t active_size = n
    cdef Py_ssize_t it = 0, s, i, tmp
    cdef long long n_updates = 0
    cdef Py_ssize_t n_unshrink = 0
    cdef Py_ssize_t until_check = SIGNAL_CHECK_EVERY
    cdef bint converged = False
    cdef double M, m, M_old = INFINITY, m_old = -INFINITY
    cdef double g, PG, Ui, yi, a_old, a_new
    cdef double dual = 0.0, primal = 0.0
    cdef Rng rng
    rng_seed(&rng, seed)

    with nogil:
        while max_iter == 0 or it < max_iter:
            M = -INFINITY
            m = INFINITY
            # index[:active_size] = rng.permutation(index[:active_size])
            rng_shuffle(&rng, index, active_size)
            s = 0
            while s < active_size:
                until_check -= 1
                if until_check == 0:
                    until_check = SIGNAL_CHECK_EVERY
                    _check_signals()
                if s + PREFETCH_AHEAD < active_size:
                    csr_prefetch_row(&p.X, index[s + PREFETCH_AHEAD])
                i = index[s]
                # y_i and U_i from one array (fewer cache lines per random visit)
                Ui = p.yU[i]
                yi = copysign(1.0, Ui)
                Ui = fabs(Ui)
                # g = 1 - y[i] * (w @ x_i) - D[i] * alpha[i]
                g = 1.0 - yi * _sparse_dot(wp, &p, i)
                if l2:
                    g -= a[i] * p.D[i]
                PG = 0.0
                if a[i] == 0.0:
                    if shrinking and g < m_old:
                        # shrink: at the lower bound and pushing against it hard
                        active_size -= 1
                        tmp = index[s]; index[s] = index[active_size]; index[active_size] = tmp
                        continue
                    elif g > 0.0:
                        PG = g
                elif a[i] == Ui:
                    if shrinking and g > M_old:
                        active_size -= 1
                        tmp = index[s]; index[s] = index[active_size]; index[active_size] = tmp
                        continue
                    elif g < 0.0:
                        PG = g
                else:
                    PG = g
                if PG > M:
                    M = PG
                if PG < m:
                    m = PG
                if fabs(PG) > STEP_THRESHOLD:
                    # alpha[i] = np.clip(alpha[i] + g / QD[i], 0, U[i])
                    a_old = a[i]
                    a_new = a_old + g / p.QD[i]
                    if a_new < 0.0:
                        a_new = 0.0
                    if a_new > Ui:
                        a_new = Ui
                    a[i] = a_new
                    # w += (alpha_new - alpha_old) * y[i] * x_i
                    _sparse_axpy((a_new - a_old) * yi, &p, i, wp)
                    n_updates += 1
                s += 1
            it += 1
            if M < m:
                # Nothing was visited (every active row was shrunk in this sweep): no violation
                # is left among the active rows, so go on to the verification sweep.
                M = 0.0
                m = 0.0
            if has_callback:
                with gil:
                    callback(it, M - m)
            if (fabs(M) < eps and fabs(m) < eps) if pg_rule else \
                    (M - m <= eps and (not strict or (fabs(M) <= eps and fabs(m) <= eps))):
                if active_size == n:
                    converged = True
                    break
                # un-shrink, then verify with a full sweep
                active_size = n
                M_old = INFINITY
                m_old = -INFINITY
                n_unshrink += 1
                continue
            M_old = M if M > 0.0 else INFINITY
            m_old = m if m < 0.0 else -INFINITY

        _objectives(&p, wp, a, l2, &dual, &primal)

    return DcdResult(w, alpha, it, n_updates, not converged, dual, primal, n_unshrink)


# ---------------------------------------------------------------------------------------------
# Adaptive coordinate frequencies (ACF / AVSF)
# ---------------------------------------------------------------------------------------------

# Preference bounds by mode: 1/20 and 20 for the algorithm of Glasmachers & Dogan (2013); with
# shrinking (which removes the stuck rows that p_min was for) the narrower [0.1, 10] measured
# better: on w8a at C = 100 it needed 2.6x fewer visits, on a9a 1.3x fewer, on sector.scale the
# same.
ACF_PMIN = {"none": 0.05, "on": 0.1}
ACF_PMAX = {"none": 20.0, "on": 10.0}

AcfResult = collections.namedtuple("AcfResult", DcdResult._fields + ("preferences", "n_visits"))
AcfResult.__doc__ = """Result of one binary ACF solve: the DcdResult fields, read as follows, plus
the preferences.

n_iter            sweeps performed (each visits exactly n coordinates, n = rows not fixed at
                  their bound by the zero-row rule; with shrinking, the active rows)
n_updates         coordinate steps taken (|PG| > 1e-12), as in DcdResult
max_iter_reached  True when the loop stopped at max_iter sweeps without meeting the stopping test
n_unshrink        canstop resets: how often a sweep with max|PG| < ε was not accepted and the
                  preferences were reset to 1 (and every row un-shrunk) for a verifying
                  uniform sweep
preferences       float64 (n_rows,), the final p_i ∈ [p_min, p_max] (NaN for an L1 zero row,
                  which is fixed at α_i = C_i and never visited)
n_visits          coordinate visits (scheduled steps, each computing one g_i)
"""


cdef double _acf_schedule(const double* pref, const Py_ssize_t* order, Py_ssize_t n, Rng* rng,
                          Py_ssize_t* out) noexcept nogil:
    # Algorithm 4 of Glasmachers & Dogan (2013) with the [JC] guards of docs/ALGORITHMS.md §4.4:
    # out[0:n] receives the rows order[0:n], row i about n·p_i/Σp times (exactly that in
    # expectation), then shuffled. Returns Σp, summed exactly (it also resynchronises the solver's
    # running P).
    #   r = n - j remaining slots, N = Σ of the preferences not yet dealt with
    #   m_i = r (last row, or N ≤ 1e-6·n) else min(r, p_i·r/N); n_i = floor(m_i) + Bernoulli(frac)
    cdef Py_ssize_t k, i, j = 0, r, ni
    cdef double total = 0.0, N, mi, frac
    for k in range(n):
        total += pref[order[k]]
    N = total
    for k in range(n):
        i = order[k]
        r = n - j
        if k == n - 1 or N <= 1e-6 * n:
            mi = <double>r
        else:
            mi = pref[i] * r / N
            if mi > r:
                mi = <double>r
        ni = <Py_ssize_t>mi
        frac = mi - ni
        if frac > 0.0 and rng_uniform(rng) < frac:
            ni += 1
        while ni > 0:
            out[j] = i
            j += 1
            ni -= 1
        N -= pref[i]
    # out[:n] = rng.permutation(out[:n])
    rng_shuffle(rng, out, n)
    return total


def acf_schedule(preferences, uint64_t seed=1, Py_ssize_t n_draws=1, bint systematic=False):
    """Draw n_draws schedules for the fixed preferences, one RNG stream: Algorithm 4 of
    Glasmachers & Dogan (2013) (the paper's ACF), or with systematic=True the systematic sampling
    of the shrinking ACF.

    For tests. Returns int64 (n_draws, n): row r holds the indices 0..n-1 of draw r.
    """
    p = np.ascontiguousarray(preferences, dtype=np.float64)
    cdef Py_ssize_t n = p.shape[0], r
    if n_draws < 0 or p.ndim != 1 or not np.all(p > 0):
        raise ValueError("preferences must be a positive vector and n_draws >= 0")
    order = np.arange(n, dtype=np.intp)
    out = np.zeros((n_draws, n), dtype=np.intp)
    if n == 0 or n_draws == 0:
        return out.astype(np.int64)
    cdef const double[::1] v_p = p
    cdef Py_ssize_t[::1] v_order = order
    cdef Py_ssize_t[:, ::1] v_out = out
    cdef Rng rng
    rng_seed(&rng, seed)
    with nogil:
        for r in range(n_draws):
            if systematic:
                _systematic_schedule(&v_p[0], &v_order[0], n, &rng, &v_out[r, 0])
            else:
                _acf_schedule(&v_p[0], &v_order[0], n, &rng, &v_out[r, 0])
    return out.astype(np.int64)


def acf_solve(data, indices, indptr, y, C_i, Py_ssize_t n_features, *, double eps=0.1,
              Py_ssize_t max_iter=1000, loss="l1", uint64_t seed=1, callback=None,
              double c=0.2, pmin=None, pmax=None, trace=None, shrink="on",
              row_norms=None):
    """Solve one binary L2-regularised SVM by dual coordinate descent with adaptive coordinate
    frequencies (ACF, also called AVSF).

    Problem: the same as ``dcd_solve`` (descent form, as in LIBLINEAR)::

        min_α  f(α) = ½ αᵀ Q̄ α − eᵀα   s.t. 0 ≤ α_i ≤ U_i,   Q̄ = Q + D,  Q_ij = y_i y_j x_iᵀx_j,
        L1-loss: U_i = C_i, D_ii = 0;   L2-loss: U_i = ∞, D_ii = 1/(2 C_i);   w = Σ_i α_i y_i x_i.

    shrink="none", the paper's algorithm: instead of uniform sweeps with shrinking, every
    coordinate carries a preference p_i ∈ [pmin, pmax] and each sweep of n steps visits
    coordinate i about n·p_i/Σp times (the schedule of Algorithm 4). After every step the
    preference follows the step's exact dual gain Δ = μ(g_i − μ Q̄_ii/2) relative to a fading
    average Δ_ref (Algorithm 5):
    p_i ← clip(p_i · exp(c·(Δ/Δ_ref − 1)), pmin, pmax),  Δ_ref ← (1 − 1/n)·Δ_ref + Δ/n.
    The first sweep is a uniform permutation that only accumulates Δ_ref = mean Δ. A sweep whose
    largest projected-gradient magnitude v is below eps ends the run only if it was a uniform
    sweep (canstop); otherwise the preferences are reset to 1 and one uniform sweep verifies.
    There is no shrinking: coordinates stuck at a bound gain Δ = 0 and decay to pmin.
    See Algorithms 3–5 of Glasmachers & Dogan, "Accelerated coordinate descent with adaptive
    coordinate frequencies", ACML 2013, and docs/ALGORITHMS.md §4.4; the Δ_ref > 0 guard and
    the schedule guards are the [JC] calls made there.

    shrink="on" (the default of -s acf), the same preferences and steps over an active set that
    shrinks as in LIBLINEAR (§4.2): a row at a bound whose g pushes against it by more than half
    the largest |PG| of the previous sweep leaves the active set (not in the first sweep, nor in
    the sweep after an un-shrink). Paper ACF spends most of its visits on such rows, whose
    preferences need ~15 visits to decay to pmin, and sweeps all n rows where the baseline's
    active set is small (n ≫ d). A sweep has one step per active row; Δ_ref fades over one sweep.
    A sweep with v < eps ends the run only if it was a uniform sweep of all rows; otherwise every
    row is un-shrunk, p is reset to 1 and a sweep of all rows verifies: it takes no step (so when
    it passes, max|PG| < eps holds at the returned w, and its margins give both objectives) and
    drops at once the rows the last threshold would drop (so when it fails, the next sweep is
    not another sweep of all rows). Schedules use systematic sampling
    (acf_schedule(systematic=True)) and shuffles by multiply-shift: the same expectation as
    Algorithm 4 with one random number per sweep instead of one per row. The preference bounds
    default to ACF_PMIN["on"], ACF_PMAX["on"].

    Given: the CSR problem, y, C_i, loss, seed and row_norms as for ``dcd_solve``; eps the
    tolerance on max|PG| of a sweep; max_iter the cap on sweeps (0 = unlimited); c, pmin, pmax the
    ACF constants (seed defaults 1/5, 1/20, 20; with shrinking pmin and pmax default to
    ACF_SHRINK_PMIN, ACF_SHRINK_PMAX); callback(sweep, v) once per sweep; trace (for
    tests) a list that receives one dict per sweep: schedule (rows visited, in order),
    p_start / p_end (preferences before and after the sweep), P (the running Σp at the end of
    the sweep; with shrinking Σp over the active rows when the schedule was drawn), min_delta
    (smallest Δ of the sweep), v, first (first sweep) and reset (a canstop reset followed); with
    shrinking also active (the rows active at the start of the sweep), shrunk (the rows shrunk
    in it), limit (its shrinking threshold) and alpha (α at its end).

    Returns an AcfResult (DcdResult fields plus the final preferences). A pending Ctrl-C is
    noticed within SIGNAL_CHECK_EVERY coordinate steps and raises KeyboardInterrupt.
    """
    if not eps > 0:
        raise ValueError("eps must be positive")
    if max_iter < 0:
        raise ValueError("max_iter must be >= 0")
    if shrink not in ("on", "none"):
        raise ValueError("shrink must be 'on' or 'none'")
    if pmin is None:
        pmin = ACF_PMIN[shrink]
    if pmax is None:
        pmax = ACF_PMAX[shrink]
    if not (c > 0 and 0 < pmin <= 1.0 <= pmax < INFINITY):
        raise ValueError("need c > 0 and 0 < pmin <= 1 <= pmax < inf")
    cdef double p_lo = pmin, p_hi = pmax
    (data, indices, indptr, ys, C_i, U, D, QD, yU, alpha, order, n_order) = _as_problem_arrays(
        data, indices, indptr, y, C_i, n_features, loss, row_norms)
    if shrink == "on":
        return _acf_shrinking(data, indices, indptr, n_features, ys, C_i, U, D, QD, yU, alpha,
                              order, n_order, eps, max_iter, loss == "l2", seed, callback, c,
                              p_lo, p_hi, trace)
    w = np.zeros(n_features, dtype=np.float64)
    pref = np.full(alpha.shape[0], np.nan)
    pref[order] = 1.0
    sched = np.zeros(max(n_order, 1), dtype=np.intp)

    cdef _Problem p
    _bind(&p, data, indices, indptr, n_features, ys, C_i, U, D, QD, yU)
    cdef double[::1] v_w = w
    cdef double[::1] v_alpha = alpha
    cdef double[::1] v_pref = pref
    cdef Py_ssize_t[::1] v_order = order
    cdef Py_ssize_t[::1] v_sched = sched
    cdef double dummy = 0.0
    cdef Py_ssize_t dummy_index = 0

    cdef double* wp = &v_w[0] if n_features > 0 else &dummy
    cdef double* a = &v_alpha[0] if p.X.n_rows > 0 else &dummy
    cdef double* pp = &v_pref[0] if p.X.n_rows > 0 else &dummy
    cdef Py_ssize_t* index = &v_order[0] if n_order > 0 else &dummy_index
    cdef Py_ssize_t* schedule = &v_sched[0]

    cdef bint l2 = loss == "l2"
    cdef bint has_callback = callback is not None
    cdef bint has_trace = trace is not None
    cdef Py_ssize_t n = n_order            # rows the solver visits; every sweep has n steps
    cdef double inv_n = 1.0 / n if n > 0 else 0.0
    cdef double fade = 1.0 - inv_n
    cdef Py_ssize_t it = 0, s, k, i
    cdef long long n_updates = 0
    cdef Py_ssize_t n_reset = 0
    cdef Py_ssize_t until_check = SIGNAL_CHECK_EVERY
    cdef bint converged = False, first_sweep = True, canstop = True, reset
    cdef double P = <double>n, delta_ref = 0.0, v, min_delta
    cdef double g, PG, Ui, yi, ai, delta, p_new
    cdef double dual = 0.0, primal = 0.0
    cdef Rng rng
    rng_seed(&rng, seed)
    p_start = None

    with nogil:
        while max_iter == 0 or it < max_iter:
            # Algorithm 4: schedule = rows drawn by preference, shuffled; P = pref.sum() exactly
            P = _acf_schedule(pp, index, n, &rng, schedule)
            if has_trace:
                with gil:
                    p_start = pref.copy()
            v = 0.0
            min_delta = INFINITY
            for s in range(n):
                until_check -= 1
                if until_check == 0:
                    until_check = SIGNAL_CHECK_EVERY
                    _check_signals()
                i = schedule[s]
                Ui = p.yU[i]
                yi = copysign(1.0, Ui)
                Ui = fabs(Ui)
                ai = a[i]
                # g = 1 - y[i] * (w @ x_i) - D[i] * alpha[i]
                g = 1.0 - yi * _sparse_dot(wp, &p, i)
                if l2:
                    g -= ai * p.D[i]
                # PG = g, except 0 where g pushes against the bound α_i sits at
                PG = g
                if (ai == 0.0 and g < 0.0) or (ai == Ui and g > 0.0):
                    PG = 0.0
                # v = max(v, |PG|)
                if fabs(PG) > v:
                    v = fabs(PG)
                delta = 0.0
                if fabs(PG) > STEP_THRESHOLD:
                    delta = _acf_step(&p, i, ai, Ui, g, yi, a, wp)
                    n_updates += 1
                if delta < min_delta:
                    min_delta = delta
                if first_sweep:
                    # delta_ref = mean gain of the first sweep
                    delta_ref += delta * inv_n
                else:
                    # Algorithm 5: p_i *= exp(c (Δ/Δ_ref - 1)), clipped; fading average of Δ
                    if delta_ref > 0.0:
                        p_new = pp[i] * exp(c * (delta / delta_ref - 1.0))
                        if not p_new >= p_lo:       # NaN (an inf/inf gain ratio) too
                            p_new = p_lo
                        elif p_new > p_hi:      # also catches exp overflow to +inf
                            p_new = p_hi
                        P += p_new - pp[i]
                        pp[i] = p_new
                    delta_ref = fade * delta_ref + delta * inv_n
            it += 1
            if has_callback:
                with gil:
                    callback(it, v)
            reset = False
            if v < eps:
                if canstop:
                    converged = True
                else:
                    # not a uniform sweep: reset p and verify with a plain uniform sweep
                    reset = True
            else:
                canstop = False
            if has_trace:
                with gil:
                    trace.append({"schedule": sched[:n].copy(), "p_start": p_start,
                                  "p_end": pref.copy(), "P": P, "min_delta": min_delta,
                                  "v": v, "first": first_sweep, "reset": reset})
            first_sweep = False
            if converged:
                break
            if reset:
                for k in range(n):
                    pp[index[k]] = 1.0
                P = <double>n
                canstop = True
                n_reset += 1

        _objectives(&p, wp, a, l2, &dual, &primal)

    return AcfResult(w, alpha, it, n_updates, not converged, dual, primal, n_reset, pref,
                     it * n)


# ---------------------------------------------------------------------------------------------
# ACF with shrinking (the default of -s acf; `shrink="none"` above is the paper's algorithm)
# ---------------------------------------------------------------------------------------------

cdef double _systematic_schedule(const double* pref, const Py_ssize_t* rows, Py_ssize_t n,
                                 Rng* rng, Py_ssize_t* out) noexcept nogil:
    # out[0:n]: the rows[0:n], rows[k] n·pref[k]/Σpref times in expectation, shuffled; returns
    # Σpref (pref[k] is the preference of rows[k]). Systematic sampling: one uniform offset u,
    # and the k-th row gets ⌊u + n·S_k/Σp⌋ − ⌊u + n·S_{k−1}/Σp⌋ slots (S_k the prefix sums),
    # i.e. the floor or the ceiling of its expected count. The same expectation as Algorithm 4
    # of Glasmachers & Dogan (2013) with one random number per sweep instead of one per row.
    cdef Py_ssize_t k, i, j = 0, c, m
    cdef double total = 0.0, scale, cum
    for k in range(n):
        total += pref[k]
    if not (total > 0.0 and total < INFINITY):
        # cannot happen while every p lies in [p_min, p_max]; if it did, a NaN cum would make
        # the slot counts garbage: fall back to one slot per row
        for k in range(n):
            out[k] = rows[k]
        rng_shuffle_fast(rng, out, n)
        return <double>n
    scale = n / total
    cum = rng_uniform(rng)
    for k in range(n):
        i = rows[k]
        cum += pref[k] * scale
        c = <Py_ssize_t>cum
        if c > n or k == n - 1:
            c = n                      # rounding never loses or adds a slot
        # Row k fills the slots j..c-1. Most rows get 0 or 1 slots in no pattern that a branch
        # predictor learns, so slot j is written either way (a row with no slot leaves it to
        # the next row) and only counts of 2 or more take the loop.
        if j < n:
            out[j] = i
        m = j + 1
        while m < c:
            out[m] = i
            m += 1
        j = c
    rng_shuffle_fast(rng, out, n)
    return total


cdef void _preferences(const double* logp, const Py_ssize_t* rows, Py_ssize_t n, double lmin,
                       double lmax, double pmin, double pmax, double* out) noexcept nogil:
    # out[k] = p of rows[k] = exp(logp[rows[k]]) by the vectorised exp_inplace (within 3 ulp),
    # exactly p_min and p_max at the bounds of log p and never outside them; log p = 0 gives 1
    cdef Py_ssize_t k
    cdef double v, q
    for k in range(n):
        out[k] = logp[rows[k]]
    exp_inplace(out, n)
    for k in range(n):
        # selects, not branches: the loop stays vectorised
        v = logp[rows[k]]
        q = out[k]
        q = pmin if q < pmin else q
        q = pmax if q > pmax else q
        q = pmin if v <= lmin else q
        q = pmax if v >= lmax else q
        out[k] = q


def _preference_array(logp, order, double pmin, double pmax):
    """p of every row from log p (NaN for rows never visited), as the schedule computes it."""
    out = np.full(logp.shape[0], np.nan)
    rows = np.ascontiguousarray(order, dtype=np.intp)
    values = np.zeros(max(rows.shape[0], 1))
    cdef const double[::1] v_logp = logp
    cdef const Py_ssize_t[::1] v_rows = rows
    cdef double[::1] v_values = values
    if rows.shape[0] > 0:
        _preferences(&v_logp[0], &v_rows[0], rows.shape[0], log(pmin), log(pmax), pmin, pmax,
                     &v_values[0])
    out[rows] = values[:rows.shape[0]]
    return out


def _acf_shrinking(data, indices, indptr, Py_ssize_t n_features, ys, C_i, U, D, QD, yU, alpha,
                   order, Py_ssize_t n_order, double eps, Py_ssize_t max_iter, bint l2,
                   uint64_t seed, callback, double c, double pmin, double pmax, trace):
    # The ACF loop of acf_solve (Algorithms 3 and 5 of Glasmachers & Dogan 2013) over an active
    # set of rows that shrinks as in LIBLINEAR (docs/ALGORITHMS.md §4.2). See acf_solve's docstring.
    w = np.zeros(n_features, dtype=np.float64)
    # log p_i (NaN for the rows never visited): Algorithm 5's multiplicative update is an
    # addition here, and the schedule takes p = exp(log p) of the active rows in one
    # vectorised pass per sweep instead of one libm exp per step
    logp = np.full(alpha.shape[0], np.nan)
    logp[order] = 0.0
    sched = np.zeros(max(n_order, 1), dtype=np.intp)
    active_pref = np.zeros(max(n_order, 1), dtype=np.float64)
    shrunk = np.zeros(max(alpha.shape[0], 1), dtype=np.uint8)

    cdef _Problem p
    _bind(&p, data, indices, indptr, n_features, ys, C_i, U, D, QD, yU)
    cdef double[::1] v_w = w
    cdef double[::1] v_alpha = alpha
    cdef double[::1] v_logp = logp
    cdef Py_ssize_t[::1] v_order = order
    cdef Py_ssize_t[::1] v_sched = sched
    cdef unsigned char[::1] v_shrunk = shrunk
    cdef double dummy = 0.0
    cdef Py_ssize_t dummy_index = 0

    cdef double* wp = &v_w[0] if n_features > 0 else &dummy
    cdef double* a = &v_alpha[0] if p.X.n_rows > 0 else &dummy
    cdef double* lp = &v_logp[0] if p.X.n_rows > 0 else &dummy
    # index[0:active] are the active rows; index[active:n] the shrunk ones
    cdef Py_ssize_t* index = &v_order[0] if n_order > 0 else &dummy_index
    cdef Py_ssize_t* schedule = &v_sched[0]
    cdef double[::1] v_active_pref = active_pref
    cdef double* apref = &v_active_pref[0]
    cdef unsigned char* out = &v_shrunk[0]

    cdef bint has_callback = callback is not None
    cdef bint has_trace = trace is not None
    cdef Py_ssize_t n = n_order
    cdef Py_ssize_t active = n, s, k, i, j, tmp
    cdef double inv_len = 0.0, fade = 0.0
    cdef double lmin = log(pmin), lmax = log(pmax)
    cdef Py_ssize_t it = 0
    cdef long long n_updates = 0
    cdef Py_ssize_t n_reset = 0
    cdef Py_ssize_t until_check = SIGNAL_CHECK_EVERY
    cdef bint converged = False, first_sweep = True, canstop = True, uniform = True, reset
    cdef bint checking = False             # this sweep only measures (after an un-shrink)
    cdef bint checked = False              # the last sweep was such a sweep
    cdef double check_limit = INFINITY
    cdef long long n_visits = 0
    cdef double margin, loss = 0.0, asum, wnorm
    # rows fixed at their bound by the zero-row rule: ξ_i = 1, so C_i·1 in either loss
    cdef double zero_loss = float(np.sum(C_i[np.isnan(logp)])) if alpha.shape[0] else 0.0
    cdef double P, delta_ref = 0.0, v, min_delta
    cdef double M, m, limit = INFINITY
    cdef double g, PG, Ui, yi, ai, delta, lp_new
    cdef double dual = 0.0, primal = 0.0
    cdef Rng rng
    rng_seed(&rng, seed)
    p_start = None
    active_start = None

    with nogil:
        while max_iter == 0 or it < max_iter:
            if uniform:
                # p ≡ 1 on the active rows: the schedule is a permutation of them
                for k in range(active):
                    schedule[k] = index[k]
                rng_shuffle_fast(&rng, schedule, active)
                P = <double>active
            else:
                _preferences(lp, index, active, lmin, lmax, pmin, pmax, apref)
                P = _systematic_schedule(apref, index, active, &rng, schedule)
            if has_trace:
                with gil:
                    p_start = _preference_array(logp, order, pmin, pmax)
                    active_start = np.sort(order[:active])
            # Δ_ref fades over one sweep of the active rows (Glasmachers & Dogan: over n steps)
            inv_len = 1.0 / active if active > 0 else 0.0
            fade = 1.0 - inv_len
            M = -INFINITY
            m = INFINITY
            min_delta = INFINITY
            loss = 0.0
            n_visits += active
            for s in range(active):
                until_check -= 1
                if until_check == 0:
                    until_check = SIGNAL_CHECK_EVERY
                    _check_signals()
                if s + PREFETCH_AHEAD < active:
                    csr_prefetch_row(&p.X, schedule[s + PREFETCH_AHEAD])
                i = schedule[s]
                if out[i]:
                    continue                  # shrunk earlier in this sweep
                Ui = p.yU[i]
                yi = copysign(1.0, Ui)
                Ui = fabs(Ui)
                ai = a[i]
                # g = 1 - y[i] * (w @ x_i) - D[i] * alpha[i]
                margin = 1.0 - yi * _sparse_dot(wp, &p, i)
                g = margin
                if l2:
                    g -= ai * p.D[i]
                if checking:
                    # measure only: max|PG| of every row at the same w, and the primal's loss;
                    # rows that the threshold of the shrunk phase would drop are dropped at
                    # once, so that a failed check is not followed by another sweep of all rows
                    PG = g
                    if ai == 0.0 and g < 0.0:
                        PG = 0.0
                        if g < -check_limit:
                            out[i] = 1
                    elif ai == Ui and g > 0.0:
                        PG = 0.0
                        if g > check_limit:
                            out[i] = 1
                    if PG > M:
                        M = PG
                    if PG < m:
                        m = PG
                    if margin > 0.0:
                        loss += p.C[i] * (margin * margin if l2 else margin)
                    continue
                # Shrink a row that sits at a bound and pushes against it harder than half the
                # largest |PG| of the previous sweep; otherwise PG as in §4.2.
                if ai == 0.0:
                    if g < -limit:
                        out[i] = 1
                        continue
                    PG = g if g > 0.0 else 0.0
                elif ai == Ui:
                    if g > limit:
                        out[i] = 1
                        continue
                    PG = g if g < 0.0 else 0.0
                else:
                    PG = g
                if PG > M:
                    M = PG
                if PG < m:
                    m = PG
                delta = 0.0
                if fabs(PG) > STEP_THRESHOLD:
                    delta = _acf_step(&p, i, ai, Ui, g, yi, a, wp)
                    n_updates += 1
                if delta < min_delta:
                    min_delta = delta
                if first_sweep:
                    delta_ref += delta * inv_len
                else:
                    # Algorithm 5 in logarithms: log p_i += c (Δ/Δ_ref − 1), clipped to
                    # [log p_min, log p_max] (an overflow to +inf too); fading average of Δ
                    if delta_ref > 0.0:
                        if delta == 0.0:
                            lp_new = lp[i] - c
                        else:
                            lp_new = lp[i] + c * (delta / delta_ref - 1.0)
                        if not lp_new >= lmin:      # NaN (an inf/inf gain ratio) too
                            lp_new = lmin
                        elif lp_new > lmax:
                            lp_new = lmax
                        if lp_new != 0.0:
                            uniform = False
                        lp[i] = lp_new
                    delta_ref = fade * delta_ref + delta * inv_len
            it += 1
            # move the rows shrunk in this sweep behind the active ones
            j = 0
            for k in range(active):
                if not out[index[k]]:
                    tmp = index[j]; index[j] = index[k]; index[k] = tmp
                    j += 1
            active = j
            # v = max|PG| of the sweep (0 if every visited row was shrunk)
            v = 0.0
            if M > v:
                v = M
            if -m > v:
                v = -m
            if has_callback:
                with gil:
                    callback(it, v)
            reset = False
            checked = checking
            if v < eps:
                # stop after a uniform sweep of all rows: a checking sweep (rows it dropped
                # were measured too), or the first sweep if nothing was shrunk
                if canstop and (checked or active == n):
                    converged = True
                else:
                    reset = True
            else:
                canstop = False
            if checking:
                checking = False
                min_delta = 0.0
            if has_trace:
                with gil:
                    trace.append({"schedule": sched[:len(active_start)].copy(),
                                  "p_start": p_start,
                                  "p_end": _preference_array(logp, order, pmin, pmax), "P": P,
                                  "min_delta": min_delta, "v": v, "first": first_sweep,
                                  "reset": reset, "active": active_start,
                                  "shrunk": np.sort(order[active:len(active_start)]),
                                  "limit": limit, "alpha": alpha.copy()})
            first_sweep = False
            if converged:
                break
            if reset:
                # un-shrink, reset the preferences and verify with a sweep of all rows that
                # takes no step: if it meets the test, it has measured every |PG_i| (and the
                # primal) at the returned w
                for k in range(n):
                    out[index[k]] = 0
                    lp[index[k]] = 0.0
                active = n
                uniform = True
                canstop = True
                checking = True
                check_limit = limit
                limit = INFINITY
                n_reset += 1
            else:
                limit = 0.5 * v

        if converged and checked:
            # the last sweep measured every row at the returned w: the objectives from it
            wnorm = 0.0
            for j in range(p.X.n_cols):
                wnorm += wp[j] * wp[j]
            asum = 0.0
            for i in range(p.X.n_rows):
                asum += a[i] * (a[i] * p.D[i] - 2.0)
            dual = (wnorm + asum) / 2.0
            primal = wnorm / 2.0 + loss + zero_loss
        else:
            _objectives(&p, wp, a, l2, &dual, &primal)

    return AcfResult(w, alpha, it, n_updates, not converged, dual, primal, n_reset,
                     _preference_array(logp, order, pmin, pmax),
                     n_visits)
