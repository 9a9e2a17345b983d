"""Refit of a budgeted kernel SVM on its own support vectors: the default polish of ``bsgd`` and
``bsca`` (docs/ALGORITHMS.md §9, "Refit on the budget").

The budgeted solvers choose B support vectors x̃_1..x̃_B, but their coefficients are those of the
last stochastic iterate, without a bias: noisy from seed to seed, and at large C far from the
best model those vectors can express. Once the vectors are fixed, the best coefficients solve a
convex problem in B + 1 unknowns. With f(x) = Σ_j β_j k(x, x̃_j) + b and ‖f‖² = βᵀK_SS β::

    min_{β, b}  ½ βᵀ K_SS β + Σ_i C_i max(0, 1 − y_i f(x_i))²          C_i = C·w_{y_i}

(squared hinge, as LIBLINEAR's and scikit-learn's LinearSVC default; unregularised bias, as
LIBSVM's rho). Writing K_SS = V Λ Vᵀ and β = T w with T = V_r Λ_r^(−1/2) (eigenvalues above
EIG_RTOL·λ_max) turns it into a linear SVM with identity regularisation on the features K_xS T:
Nyström's feature map with the budgeted solver's support vectors as landmarks.

It is solved by a finite Newton method (Keerthi & DeCoste, JMLR 6, 2005): on the active set
A = {i : y_i f(x_i) < 1} the objective is quadratic, so a Newton step followed by an unchanged
active set is the exact optimum. The Hessian block Σ_A C_i k_i k_iᵀ is updated with the rows that
enter or leave A, so late iterations cost O(n·B), not O(|A|·B²).
"""
import contextlib
import mmap
import threading
import time
from typing import NamedTuple, Optional

import numpy as np
import scipy.linalg as sla

from budgetsvm.errors import TrainingDiverged
from budgetsvm._kernel_block import mirror_upper, rbf_from_dots
from budgetsvm.model import block_ranges, dot_rows, kernel_rows, sv_columns
from budgetsvm.threads import check_cancelled, interruptible, parallel_map

# Eigenvalues of K_SS below this fraction of the largest are dropped: along those directions the
# support vectors are (nearly) dependent and f hardly changes, while their features 1/√λ·vᵀk(x)
# are mostly noise. On a9a (γ = 2⁻⁷, B = 500) this keeps about 255 of 500 directions and halves
# to thirds the refit's time at equal test accuracy; on ijcnn1 it keeps all 500.
EIG_RTOL = 1e-6
# Newton iterations; the finite method ends in far fewer (6–10 on a9a and ijcnn1, B = 500).
MAX_NEWTON_ITER = 100
# Armijo constant and the smallest step of the backtracking line search.
ARMIJO = 1e-4
MIN_STEP = 1e-10
# The kernel block of the rows against the support vectors (n × B doubles) may use this much
# memory; beyond, the refit uses a seeded uniform sample of the rows that fits.
MAX_BLOCK_BYTES = 1 << 30
# Streaming training (--stream) keeps its memory independent of the number of rows: its refit
# uses at most this many sampled rows, with a kernel block of at most STREAM_BLOCK_BYTES.
STREAM_BLOCK_BYTES = 64 << 20
STREAM_MAX_ROWS = 16384
# The Newton method's rank updates gather this many rows of the kernel block at a time
# (_ActiveSums): 2,048 rows of 500 SVs are 8 MB.
UPDATE_ROWS = 2048
# Blocks at least this large are allocated without numpy's request for transparent huge pages
# (block_memory).
SMALL_PAGES_BYTES = 4 << 20
# The refit's errors (TrainingDiverged): the model is then not written.
KERNEL_OVERFLOW = ("training diverged: kernel values of the support vectors are not finite "
                   "(overflow), so the refit on them is undefined; scaled features (bsvm-scale) "
                   "or a smaller -g, -r or -d may help")
EIGH_FAILED = ("training diverged: the eigendecomposition of the support vectors' kernel matrix "
               "failed in the refit; train with --polish none")
REFIT_OVERFLOW = ("training diverged: the sums of the refit on the support vectors overflow "
                  "(kernel values or costs C·w near the largest double); scaled features "
                  "(bsvm-scale), a smaller -c or -w, or a smaller -g, -r or -d may help, or "
                  "train with --polish none")
NONFINITE_REFIT = ("the refit on the support vectors gave non-finite coefficients; "
                   "train with --polish none")


def block_memory(shape):
    """An uninitialised float64 array of this shape, for the refit's kernel block.

    numpy asks the kernel for transparent huge pages on large arrays (madvise). On a machine
    whose memory is fragmented, as long-running servers' is, the first touch of such pages waits
    for the kernel to compact memory: on our test machines 0.3–0.4 s of system CPU for ijcnn1's
    200 MB block, half the refit's time, once per process (the pages are reused afterwards). An
    anonymous mmap gets ordinary pages; the block is read sequentially, so huge pages do not
    pay that back. MAP_POPULATE (Linux) maps them all in one call instead of one page fault per
    4 KiB."""
    nbytes = 8 * shape[0] * shape[1]
    if nbytes < SMALL_PAGES_BYTES:
        return np.empty(shape)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)
    return np.frombuffer(mmap.mmap(-1, nbytes, flags=flags), dtype=np.float64).reshape(shape)


def kernel_block(kernel, sv, X):
    """K[i, j] = k(x_i, x̃_j) (n × B) for CSR rows X and support vectors sv (CSR), computed in
    cache-sized blocks as prediction does (BLAS products), the blocks spread over the threads of
    an active pool. kernel: KernelSpec. RBF values come from one fused pass with the vectorised
    exp of the robust default's rows (_kernel_block.rbf_from_dots): the refit is that mode's."""
    svT, sv_sq = sv_columns(sv)
    out = block_memory((X.shape[0], svT.shape[1]))

    def block(bounds):
        start, stop = bounds
        if kernel.kind == "rbf":
            G, a_sq = dot_rows(X, start, stop, svT, out=out[start:stop])
            rbf_from_dots(G, a_sq, sv_sq, kernel.gamma)
        else:
            # an overflow (polynomial kernel) is the caller's to report, without a warning
            with np.errstate(over="ignore", invalid="ignore"):
                kernel_rows(kernel, X, start, stop, svT, sv_sq, out=out[start:stop])
    parallel_map(block, block_ranges(X, svT))
    return out


def landmark_basis(K_SS):
    """(T, T⁺) with T = V_r Λ_r^(−1/2) over the eigenvalues of K_SS above EIG_RTOL·λ_max, so that
    Tᵀ K_SS T = I_r, and T⁺ = Λ_r^(1/2) V_rᵀ (w = T⁺β is the warm start of a given β).

    r = 0 (T is B × 0) when K_SS has no positive eigenvalue: every kernel value of the support
    vectors is 0 (rows without features under a linear or polynomial kernel, or underflow), so
    f = Σ_j β_j k(·, x̃_j) is 0 and the refit is the best offset alone. TrainingDiverged when K_SS
    is not finite (kernel overflow) or its eigendecomposition fails."""
    if not np.all(np.isfinite(K_SS)):
        raise TrainingDiverged(KERNEL_OVERFLOW)
    try:
        # O(B³) in one call: at B = 5,000 it takes 20 s, during which the main thread would
        # not see Ctrl-C (threads.interruptible)
        lam, V = interruptible(np.linalg.eigh, K_SS)
    except np.linalg.LinAlgError:
        raise TrainingDiverged(EIGH_FAILED) from None
    if lam.size == 0 or not lam[-1] > 0:
        return np.zeros((K_SS.shape[0], 0)), np.zeros((0, K_SS.shape[0]))
    keep = lam > EIG_RTOL * lam[-1]
    root = np.sqrt(lam[keep])
    return V[:, keep] / root, root[:, None] * V[:, keep].T


def _objective(w, xi, cost):
    hinge = np.maximum(xi, 0.0)
    return 0.5 * float(w @ w) + float(cost @ (hinge * hinge))


def best_offset(f, y, cost):
    """argmin_b Σ_i cost_i max(0, 1 − y_i (f_i + b))² for fixed decision values f (exact).

    The derivative is monotone and piecewise linear in b with a kink at t_i = y_i − f_i, where
    row i enters (y_i = −1) or leaves (y_i = +1) the active set; its root lies between two
    consecutive kinks, found by binary search over the sorted kinks."""
    t = y - f
    pos = y > 0
    tp, cp = t[pos], cost[pos]
    tn, cn = t[~pos], cost[~pos]
    op, on = np.argsort(tp), np.argsort(tn)
    tp, cp, tn, cn = tp[op], cp[op], tn[on], cn[on]
    # suffix sums over positives (t_i > b), prefix sums over negatives (t_i < b)
    cp_suf = np.concatenate([np.cumsum(cp[::-1])[::-1], [0.0]])
    sp_suf = np.concatenate([np.cumsum((cp * tp)[::-1])[::-1], [0.0]])
    cn_pre = np.concatenate([[0.0], np.cumsum(cn)])
    sn_pre = np.concatenate([[0.0], np.cumsum(cn * tn)])

    def slope_parts(b):
        # φ'(b)/2 = (C(b))·b − S(b) over the rows active at b
        i = np.searchsorted(tp, b, side="right")
        j = np.searchsorted(tn, b, side="left")
        return cp_suf[i] + cn_pre[j], sp_suf[i] + sn_pre[j]

    kinks = np.unique(np.concatenate([tp, tn]))
    if kinks.size == 0:
        return 0.0
    lo, hi = 0, kinks.size - 1
    c, s = slope_parts(kinks[hi])
    if c * kinks[hi] - s <= 0.0:          # still descending after the last kink
        return float(s / c) if c > 0 else float(kinks[hi])
    c, s = slope_parts(kinks[lo])
    if c * kinks[lo] - s >= 0.0:          # already ascending at the first kink
        return float(s / c) if c > 0 else float(kinks[lo])
    while hi - lo > 1:                    # φ'(kinks[lo]) < 0 < φ'(kinks[hi])
        mid = (lo + hi) // 2
        c, s = slope_parts(kinks[mid])
        if c * kinks[mid] - s < 0.0:
            lo = mid
        else:
            hi = mid
    # on (kinks[lo], kinks[hi]) the active set is fixed: φ' is linear there
    c, s = slope_parts(0.5 * (kinks[lo] + kinks[hi]))
    return float(np.clip(s / c, kinks[lo], kinks[hi])) if c > 0 else float(kinks[lo])


class _ActiveSums:
    """Sums over an active set A in the feature space z_i = Tᵀk_i of the refit: Σ c_i z_i z_iᵀ
    (upper triangle), Σ c_i z_i, Σ c_i y_i z_i, Σ c_i, Σ c_i y_i. They are kept up to date
    with the rows that enter or leave A.

    A moved row costs B·r + r²/2 multiply-adds mapped by T first (z_i = Tᵀk_i, then the rank
    update of M), but B²/2 when the rank update is done on the kernel rows themselves and the
    sum mapped once, Tᵀ(Σ c_i k_i k_iᵀ)T, which costs B·r·(B + r) for the whole move. Each
    move takes the cheaper way (ijcnn1, B = r = 500: the kernel rows' way from about 1,000
    moved rows; the first active sets hold 4,000–10,600)."""

    def __init__(self, K, T, cost, y):
        self.K, self.T, self.cost, self.y = K, T, cost, y
        self.reset()

    def reset(self):
        r = self.T.shape[1]
        self.M = np.zeros((r, r), order="F")
        self.m, self.q = np.zeros(r), np.zeros(r)
        self.s = self.sy = 0.0
        self.active = np.zeros(self.K.shape[0], dtype=bool)

    def _add(self, moves):
        """Add sign·(the sums over rows) for each (rows, sign) of moves (boolean masks).

        The rows are gathered UPDATE_ROWS at a time: the copies of their kernel rows (and
        features) are then a few MB, where one copy of a first active set of half the rows was
        as large as the kernel block itself."""
        moves = [(np.flatnonzero(rows), sign) for rows, sign in moves if rows.any()]
        if not moves:
            return
        n_sv, r = self.T.shape
        moved = sum(rows.size for rows, _ in moves)
        in_kernel_space = _update_in_kernel_space(moved, n_sv, r)
        # the rank updates go to a B × B sum mapped at the end, or straight to M
        target = np.zeros((n_sv, n_sv), order="F") if in_kernel_space else self.M
        for rows, sign in moves:
            m, q = np.zeros(target.shape[0]), np.zeros(target.shape[0])
            for start in range(0, rows.size, UPDATE_ROWS):
                chunk = rows[start:start + UPDATE_ROWS]
                c = self.cost[chunk]
                # the rows in the space of the rank update: kernel rows k_i or z_i = Tᵀk_i
                Z = self.K[chunk] if in_kernel_space else self.K[chunk] @ self.T
                m += c @ Z
                q += (c * self.y[chunk]) @ Z
                # sign Σ c_i z_i z_iᵀ as a rank-|chunk| update (BLAS syrk, upper triangle);
                # the transpose of the C-ordered rows is the Fortran-ordered matrix BLAS reads
                Z *= np.sqrt(c)[:, None]
                if Z.shape[1]:     # r = 0 (f is the offset alone): M is 0 × 0, BLAS refuses it
                    target = _syrk(sign, Z.T, beta=1.0, c=target, overwrite_c=True)
            if in_kernel_space:
                m, q = m @ self.T, q @ self.T
            c = self.cost[rows]
            self.m += sign * m
            self.q += sign * q
            self.s += sign * float(c.sum())
            self.sy += sign * float((c * self.y[rows]).sum())
        if in_kernel_space:
            # symmetric now: its transpose, a C-ordered view, is the product's left factor (in
            # the memory order the product has always read, so the same bits)
            mirror_upper(target)
            self.M += self.T.T @ (target.T @ self.T)
        else:
            self.M = target

    def move_to(self, active):
        entering, leaving = active & ~self.active, self.active & ~active
        if np.count_nonzero(entering) + np.count_nonzero(leaving) > np.count_nonzero(active):
            self.reset()                   # cheaper to sum the new set from scratch
            entering, leaving = active, np.zeros_like(active)
        self._add([(entering, 1.0), (leaving, -1.0)])
        self.active = active

    def full_M(self):
        """M as the full symmetric matrix of its upper triangle, filled in place (the rank
        updates read and keep only the upper one), as a C-ordered view: its transpose, equal
        to it, in the memory order that the products with it have always read (the same bits)."""
        mirror_upper(self.M)
        return self.M.T


def _update_in_kernel_space(moved, n_sv, r):
    """Whether _ActiveSums updates M for this many moved rows on the kernel rows (then maps the
    sum by T) rather than on the mapped rows: the way with fewer multiply-adds."""
    via_features = moved * (n_sv * r + r * r / 2)
    via_kernel_rows = moved * n_sv * n_sv / 2 + n_sv * r * (n_sv + r)
    return via_kernel_rows < via_features


def _syrk(alpha, a, **kw):
    from scipy.linalg.blas import dsyrk
    return dsyrk(alpha, a, **kw)


# Its sums overflow only when the kernel values are near the largest double, and that is
# reported as TrainingDiverged: no numpy warnings.
@np.errstate(over="ignore", invalid="ignore")
def newton_refit(K, T, y, cost, w=None, b=0.0, max_iter=MAX_NEWTON_ITER, fit_bias=True,
                 on_iteration=None, f=None):
    """Minimise ½‖w‖² + Σ_i cost_i max(0, 1 − y_i f_i)², f = K T w + b, over (w, b) (over w
    alone, b fixed, when fit_bias is False).

    K (n × B), T (B × r), y ±1 (n,), cost > 0 (n,), (w, b) the starting point (zeros when w is
    None). f: K T w when the caller has it (saves a pass over K). Returns (w, b, info) with
    info = {iterations, objective, converged, n_active}.
    on_iteration() is called at the start of every Newton iteration (progress display).
    """
    r = T.shape[1]
    y = np.asarray(y, dtype=np.float64)
    cost = np.asarray(cost, dtype=np.float64)
    w = np.zeros(r) if w is None else np.array(w, dtype=np.float64)
    b = float(b)
    xi = 1.0 - y * ((K @ (T @ w) if f is None else f) + b)
    objective = _objective(w, xi, cost)
    sums = _ActiveSums(K, T, cost, y)
    converged = False
    H = np.empty((r + 1, r + 1))
    iteration = 0
    for iteration in range(1, max_iter + 1):
        check_cancelled()          # a worker thread stops here when its map has failed
        if on_iteration is not None:
            on_iteration()
        sums.move_to(xi > 0.0)
        M = sums.full_M()
        # Σ_A c_i y_i ξ_i z_i = q − M w − m b, because y_i² = 1: no pass over the rows
        g = np.append(w - 2.0 * (sums.q - M @ w - sums.m * b),
                      -2.0 * (sums.sy - float(sums.m @ w) - sums.s * b))
        np.multiply(M, 2.0, out=H[:r, :r])
        H[:r, :r].flat[::r + 1] += 1.0
        H[:r, r] = H[r, :r] = 2.0 * sums.m
        # An empty active set leaves b without curvature (and without gradient): keep it fixed.
        H[r, r] = 2.0 * sums.s if sums.s > 0.0 else 1.0
        if not fit_bias:
            H[:r, r] = H[r, :r] = 0.0
            H[r, r], g[r] = 1.0, 0.0
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(H))):
            raise TrainingDiverged(REFIT_OVERFLOW)     # Σ c_i z_i z_iᵀ beyond the doubles
        try:
            step = -sla.cho_solve(sla.cho_factor(H, check_finite=False), g, check_finite=False)
        except np.linalg.LinAlgError:
            step = -np.linalg.lstsq(H, g, rcond=None)[0]
        slope = float(g @ step)
        if not slope < 0.0:
            converged = True       # no descent direction left: at the optimum up to rounding
            break
        d_w, d_b = step[:r], float(step[r])
        y_df = y * (K @ (T @ d_w) + d_b)
        t = 1.0
        while t >= MIN_STEP:
            xi_new = xi - t * y_df
            objective_new = _objective(w + t * d_w, xi_new, cost)
            if objective_new <= objective + ARMIJO * t * slope:
                break
            t *= 0.5
        else:
            # No step down to MIN_STEP decreases the objective enough (rounding near the
            # optimum, or a direction spoilt by an ill-conditioned H): keep the last point, as
            # an untried step could raise the objective.
            break
        w = w + t * d_w
        b += t * d_b
        xi = xi_new
        improvement = objective - objective_new
        objective = objective_new
        # Finite termination: a full Newton step that keeps the active set lands on the exact
        # minimiser of the quadratic on that set, which is the optimum.
        if t == 1.0 and np.array_equal(xi > 0.0, sums.active):
            converged = True
            break
        # (every step taken passed the Armijo test, so the improvement is never negative)
        if improvement <= 1e-15 * max(abs(objective), 1.0):
            converged = True
            break
    return w, b, {"iterations": iteration, "objective": objective, "converged": converged,
                  "n_active": int(np.count_nonzero(xi > 0.0))}


def _start(K, T, w_solver, y, cost):
    """Starting point (w, b, K T w) of the Newton method: the solver's own coefficients, scaled
    by the α ∈ {1, ½, …, 2⁻¹⁰} and shifted by the offset b*(α) (best_offset) of least objective,
    or w = 0 with its best offset when that is lower.

    The direction of the solver's iterate is a good start (from it, ijcnn1 and a9a need about
    5× less time than from zero: the first active set is small), but its length is not the
    refit's (Pegasos' coefficients are about y·nC/t; a blown-up learning rate makes them huge),
    and a collapsed iterate is mostly a shifted one. Scaling f = K T w costs nothing: f(αw) = αf.
    """
    candidates = [(np.zeros_like(w_solver), np.zeros_like(y))]
    with np.errstate(over="ignore", invalid="ignore"):
        f = K @ (T @ w_solver)
        if np.all(np.isfinite(f)) and np.all(np.isfinite(w_solver)):
            candidates += [(alpha * w_solver, alpha * f) for alpha in 0.5 ** np.arange(11)]
    best = None
    for w, f_w in candidates:
        with np.errstate(over="ignore", invalid="ignore"):     # a huge iterate: value inf
            b = best_offset(f_w, y, cost)
            value = _objective(w, 1.0 - y * (f_w + b), cost)
        if best is None or value < best[0]:
            best = (value, w, b, f_w)
    return best[1], best[2], best[3]


def refit_rows(n, n_sv, seed, max_bytes=None, max_rows=None, streaming=False):
    """Rows used by the refit: all of them (None), or a seeded uniform sample (in row order)
    when the kernel block of n rows against n_sv support vectors would exceed max_bytes
    (default MAX_BLOCK_BYTES) or n exceeds max_rows. streaming: the sample is drawn in memory
    that does not grow with n (sample_rows); else from a permutation of the n rows (the rows
    are in memory anyway, and the models of earlier versions stay the same)."""
    max_bytes = MAX_BLOCK_BYTES if max_bytes is None else max_bytes
    limit = max(max_bytes // (8 * max(n_sv, 1)), 1)
    if max_rows is not None:
        limit = min(limit, max_rows)
    if n <= limit:
        return None
    if streaming:
        return sample_rows(n, limit, seed)
    from budgetsvm._rng import Random
    return np.sort(Random(seed).permutation(n)[:limit])


def sample_rows(n, k, seed):
    """k distinct rows of range(n), sorted: a seeded uniform sample by Floyd's algorithm (Bentley
    & Floyd 1987), in O(k) memory: a permutation of n rows to take k of them would cost 8n bytes
    (800 MB for a streamed file of 10^8 rows)."""
    from budgetsvm._rng import Random
    rng = Random(seed)
    chosen = set()
    for j in range(n - k, n):
        t = rng.below(j + 1)            # uniform in 0..j
        chosen.add(j if t in chosen else t)
    return np.array(sorted(chosen), dtype=np.int64)


def training_errors(F, y, weights=None):
    """How many rows the decision values F (rows × columns, as a model's) classify wrongly, as
    the model predicts: binary, f > 0 is label[0] (y = 0); 'argmax', the column of the largest
    value (the first on ties). With weights (one per row), their sum over those rows instead."""
    predicted = (F[:, 0] <= 0.0).astype(y.dtype) if F.shape[1] == 1 else np.argmax(F, axis=1)
    wrong = predicted != y
    if weights is None:
        return int(np.count_nonzero(wrong))
    return float(np.sum(weights[wrong]))


def _group_errors(F, y_index, columns, n_cols, weights=None):
    """training_errors of a refit group's decision values F (its columns): one column c is
    class c against the rest (binary: label[0] against label[1]); several columns are the
    model's classes among them (a row of another class counts as an error)."""
    if len(columns) == 1:
        return training_errors(F, np.where(y_index == (columns[0] if n_cols > 1 else 0), 0, 1),
                               weights)
    position = np.full(n_cols, -1)
    position[columns] = np.arange(len(columns))
    return training_errors(F, position[y_index], weights)


def refit_model(model, X, y_index, class_cost, seed, groups=None, on_iteration=None,
                keep_better_solver=True, row_weight=None):
    """Replace the coefficients and offsets of a binary or 'argmax' KernelModel by the refit on
    its own support vectors, in place, and return info: refit_seconds, refit_iterations,
    refit_rows, refit_rank (per group), refit_converged, refit_objective (the optimal value of
    the refit problem, summed over the decision columns), refit_kept_solver (the groups left
    as the solver made them).

    keep_better_solver: True, False, or one bool per group: a group so marked keeps the solver's
    coefficients and offsets when the rows they classify wrongly weigh less than the refit's
    (_group_errors, each row weighted by its class's cost C·w_c as in both problems, so without
    -wi the counts decide; on a tie the refit wins), so that a one-vs-rest model of bsca is the
    binary model of its class. The refit minimises the squared hinge, whose large penalties on
    far misclassified rows can cost accuracy when few support vectors must separate overlapping
    classes (skin_nonskin at B = 100, docs/ALGORITHMS.md §9.7). polish_model marks the groups
    whose budget was full (budget_was_full).

    X: canonical CSR training rows; y_index: class of every row (label order); class_cost[c] =
    C·w_c; row_weight: positive instance weights that multiply the rows' costs (None: 1).
    groups: list of (support-vector row indices, decision columns) fitted together
    (default: every SV for every column); a column c is fitted as class c against the rest
    (binary: label[0] against label[1]). Each column gets rho[c] = −b.

    The groups, and the columns of a group, are independent Newton solves: inside an active
    budgetsvm.threads pool they run in its threads (each group's sample of rows comes from its
    own generator seeded with ``seed``), so the result does not depend on the thread count.
    refit_seconds is the CPU time of the process during the refit (all its threads).
    on_iteration(count): progress, with the Newton iterations begun so far over all columns
    (0 at the start, before the kernel rows are computed).
    """
    start = time.process_time()
    y_index = np.asarray(y_index)
    n = X.shape[0]
    n_cols = model.coef.shape[1]
    if groups is None:
        groups = [(np.arange(model.n_sv), list(range(n_cols)))]
    if isinstance(keep_better_solver, bool):
        keep_better_solver = [keep_better_solver] * len(groups)
    if len(keep_better_solver) != len(groups):
        raise ValueError("keep_better_solver needs one flag per refit group")
    cost_all = row_costs(class_cost, y_index, row_weight)
    coef = model.coef.copy()
    rho = model.rho.copy()
    count, lock = [0], threading.Lock()
    if on_iteration is not None:
        on_iteration(0)            # the kernel rows come first: the refit has begun

    def newton_started():
        with lock:
            count[0] += 1
            begun = count[0]
        on_iteration(begun)

    def fit_group(group_and_check):
        (sv_rows, columns), check_solver = group_and_check
        sv_rows = np.asarray(sv_rows, dtype=np.intp)
        fit = refit_group(model.kernel, model.sv[sv_rows], model.coef[np.ix_(sv_rows, columns)],
                          model.rho[columns], columns, n_cols, X, y_index, cost_all, seed=seed,
                          check_solver=check_solver,
                          on_iteration=None if on_iteration is None else newton_started)
        if not fit.kept:                    # else the group's coefficients stay the solver's
            for j, c in enumerate(columns):
                coef[sv_rows, c] = fit.coef[:, j]
                rho[c] = fit.rho[j]
        return fit

    info = refit_info(parallel_map(fit_group, list(zip(groups, keep_better_solver))), n)
    model.coef[:] = coef
    model.rho[:] = rho
    model._prepared = None
    info["refit_seconds"] = time.process_time() - start
    return info


class GroupFit(NamedTuple):
    """A refit group's result (refit_group): coef (its support vectors × its columns) and rho
    (per column) of the refit, kept (the solver's coefficients classify the group's rows
    better, so they stay), rows (the sampled training rows, or None for all), rank (of the
    landmark basis) and newtons (newton_refit's info per column)."""
    coef: np.ndarray
    rho: np.ndarray
    kept: bool
    rows: Optional[np.ndarray]
    rank: int
    newtons: list


def row_costs(class_cost, y_index, row_weight=None):
    """The cost of every training row in the refit: C·w of its class (class_cost[y_index]),
    times its instance weight (row_weight, None: 1)."""
    cost = np.asarray(class_cost, dtype=np.float64)[y_index]
    return cost if row_weight is None else cost * row_weight


def refit_group(kernel, S, coef_S, rho_S, columns, n_cols, X, y_index, cost_all, *, seed,
                check_solver, on_iteration=None):
    """The refit of one group of refit_model: support vectors S (CSR) with the solver's
    coefficients coef_S (|S| × len(columns)) and offsets rho_S for the decision columns
    ``columns`` of a model with n_cols of them (1: binary); X, y_index, cost_all: the training
    rows, their classes and costs. Returns a GroupFit. Its columns are independent Newton
    solves, in the active pool's threads. on_iteration(): called as each Newton iteration
    begins."""
    rows = refit_rows(X.shape[0], S.shape[0], seed)
    Xr, yr, cr = X, y_index, cost_all
    if rows is not None:
        Xr, yr, cr = X[rows], y_index[rows], cost_all[rows]
    if S.shape[0] == 0:
        # no support vector: as for rank 0, the refit is the best constant classifier
        K, T, T_pinv = np.zeros((Xr.shape[0], 0)), np.zeros((0, 0)), np.zeros((0, 0))
    else:
        T, T_pinv = landmark_basis(kernel_block(kernel, S, S))
        K = kernel_block(kernel, S, Xr)
        if not np.all(np.isfinite(K)):
            raise TrainingDiverged(KERNEL_OVERFLOW)

    def fit_column(j):
        # binary: label[0] is y = +1; 'argmax': class c against the rest
        c = columns[j]
        y = np.where(yr == (c if n_cols > 1 else 0), 1.0, -1.0)
        w0, b0, f0 = _start(K, T, T_pinv @ np.ascontiguousarray(coef_S[:, j]), y, cr)
        w, b, newton = newton_refit(K, T, y, cr, w0, b0, f=f0, on_iteration=on_iteration)
        if not np.all(np.isfinite(w)) or not np.isfinite(b):
            raise TrainingDiverged(NONFINITE_REFIT)
        return T @ w, 0.0 - b, newton       # 0.0 − b: ρ = 0.0, not −0.0, when b = 0
    fitted = parallel_map(fit_column, range(len(columns)))
    beta = np.column_stack([beta for beta, _, _ in fitted]) if fitted else \
        np.zeros((S.shape[0], 0))
    offsets = np.array([offset for _, offset, _ in fitted])
    kept = False
    if check_solver:
        # both models' decision values on the group's rows, from its kernel block
        with np.errstate(over="ignore", invalid="ignore"):   # inf/NaN: an error there
            F_solver = K @ coef_S - rho_S
            F_refit = K @ beta - offsets
        kept = _group_errors(F_solver, yr, columns, n_cols, cr) < \
            _group_errors(F_refit, yr, columns, n_cols, cr)
    return GroupFit(beta, offsets, bool(kept), rows, int(T.shape[1]),
                    [newton for _, _, newton in fitted])


def refit_info(fits, n):
    """refit_model's info (refit_seconds aside) from the GroupFit of every group, in order;
    n: the number of training rows."""
    info = {"refit_iterations": 0, "refit_rows": n, "refit_rank": [], "refit_converged": True,
            "refit_objective": 0.0, "refit_kept_solver": 0}
    for fit in fits:
        if fit.rows is not None:
            info["refit_rows"] = int(fit.rows.size)
        info["refit_rank"].append(fit.rank)
        info["refit_kept_solver"] += int(fit.kept)
        for newton in fit.newtons:
            info["refit_iterations"] += newton["iterations"]
            info["refit_objective"] += newton["objective"]
            info["refit_converged"] &= newton["converged"]
    return info


def budget_was_full(train_info):
    """One flag per refit group (one-vs-rest bsca: per class model, from train_info's
    per_model; else the one model): did budget maintenance run? Only then is the solver's model
    a budgeted approximation that may classify better than the refit (docs/ALGORITHMS.md §9.7).
    Below the budget the solver kept every row it stepped on and can fit the training rows as
    closely as its kernel allows, so fewer training errors no longer mean a better classifier."""
    return [info.get("n_maintenance", 0) > 0
            for info in train_info.get("per_model", [train_info])]


# Per thread: the list that polish_model hands its work to inside deferred_polish(), or None.
_deferral = threading.local()


@contextlib.contextmanager
def deferred_polish():
    """Inside the block, polish_model (of a training run in this thread) does not refit: it
    appends a DeferredPolish to the list this yields and returns the model as the solver made
    it. Cross-validation trains every fold's solver first and refits later, so that the
    sequential solves start as early as the threads allow (budgetsvm/train.py)."""
    pending = []
    previous = getattr(_deferral, "pending", None)
    _deferral.pending = pending
    try:
        yield pending
    finally:
        _deferral.pending = previous


def polish_deferred():
    """Is a deferred_polish() block active in this thread (polish_model would put off the
    refit)?"""
    return getattr(_deferral, "pending", None) is not None


class DeferredPolish:
    """The refit that polish_model put off (deferred_polish): run(X) does it, on the same
    training rows X (any CSR form: they are put in canonical form as the solver had them),
    and returns the model. It keeps the model and the labels, not the rows."""

    def __init__(self, model, y_index, class_cost, params, groups, on_iteration, row_weight):
        self.model, self.y_index, self.class_cost = model, y_index, class_cost
        self.params, self.groups, self.on_iteration = params, groups, on_iteration
        self.row_weight = row_weight

    def run(self, X):
        from budgetsvm.problem import canonical_csr
        return polish_model(self.model, canonical_csr(X), self.y_index, self.class_cost,
                            self.params, groups=self.groups, on_iteration=self.on_iteration,
                            row_weight=self.row_weight)


def polish_model(model, X, y_index, class_cost, params, groups=None, on_iteration=None,
                 row_weight=None):
    """Apply params.polish to a model fresh from bsgd or bsca (in place): 'refit' refits its
    coefficients and offsets (refit_model) and records it in model.params and train_info;
    'none' leaves the model exactly as the solver made it. Inside deferred_polish() the refit
    is recorded for later instead (a DeferredPolish)."""
    if params.polish == "none":
        return model
    pending = getattr(_deferral, "pending", None)
    if pending is not None:
        pending.append(DeferredPolish(model, y_index, class_cost, params, groups,
                                      on_iteration, row_weight))
        return model
    from budgetsvm.model_io import ensure_finite
    ensure_finite(model)                   # a diverged iterate has nothing to refit
    info = refit_model(model, X, y_index, class_cost, int(params.seed), groups=groups,
                       on_iteration=on_iteration,
                       keep_better_solver=budget_was_full(model.train_info),
                       row_weight=row_weight)
    model.params["polish"] = params.polish
    model.train_info.update(info)
    return model
