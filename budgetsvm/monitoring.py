"""The per-epoch diagnostics of the budgeted kernel solvers (--monitor, docs/ALGORITHMS.md §3.5):
budgeted decision values, the primal and dual objectives, test accuracy, and the counters of
the store's merge comparison mode. Computed between epochs, outside the timed training."""
import numpy as np
import scipy.sparse as sp

from budgetsvm.problem import canonical_csr, row_sqnorms
from budgetsvm.threads import parallel_map

# Rows per block of the monitoring's budgeted decision values (store_decision_rows).
STORE_DECISION_ROWS = 2048

# The exact dual needs the kernel matrix of the points with α_i > 0: computed while there are
# at most this many (a 4000 × 4000 block is 128 MB), left blank beyond.
EXACT_DUAL_MAX_POINTS = 4000


def store_decision_rows(store, X, xsq):
    """f̃(x_i) = Σ_j A_j k(x_i, x̃_j) of a binary store for every row of canonical CSR X
    (budgetsvm._bsca.store_decision), blocks of rows spread over the threads of an active
    budgetsvm.threads pool; every row's value is the same whichever thread computes it."""
    from budgetsvm._bsca import store_decision
    data = X.data
    indices = X.indices.astype(np.int32, copy=False)
    indptr = X.indptr.astype(np.int64, copy=False)
    xsq = np.ascontiguousarray(xsq, dtype=np.float64)
    n = X.shape[0]
    out = np.zeros(n)

    def block(start):
        stop = min(n, start + STORE_DECISION_ROWS)
        out[start:stop] = store_decision(store, data, indices, indptr[start:stop + 1],
                                         xsq[start:stop])
    parallel_map(block, range(0, n, STORE_DECISION_ROWS))
    return out


def store_sq_norm(store):
    """Σ_jl A_j A_l k(x̃_j, x̃_l) of a binary store: ‖w‖² of its model before the scale;
    O(B²) kernel evaluations."""
    from budgetsvm._bsca import store_decision
    sv, A, _, _ = store.export()
    S = sp.csr_matrix(sv)
    fs = store_decision(store, S.data, S.indices.astype(np.int32), S.indptr.astype(np.int64),
                        (sv * sv).sum(1))
    return float(A[:, 0] @ fs)


def budgeted_primal(store, scale, X, xsq, y, upper):
    """C-form primal of the binary budgeted model w = scale·Σ_j A_j φ(x̃_j) (§3.5):
    ½‖w‖² + Σ_i upper_i max(0, 1 − y_i w·φ(x_i)); O(B² + nB) kernel evaluations."""
    f = scale * store_decision_rows(store, X, xsq)
    return 0.5 * scale * scale * store_sq_norm(store) + float(upper @ np.maximum(0.0, 1.0 - y * f))


def monitor_accuracy(store, scale, params, gamma, X_test, y_test):
    """Test accuracy of the current store (binary: sign; multi-class: argmax over classes)."""
    from budgetsvm.model import KernelModel, KernelSpec
    sv, A, _, _ = store.export()
    k = A.shape[1] if A.shape[1] > 1 else 2
    spec = KernelSpec(params.kernel, gamma, int(params.degree), float(params.coef0))
    model = KernelModel(np.arange(k, dtype=np.float64), spec,
                        sp.csr_matrix(sv, shape=(sv.shape[0], X_test.shape[1])), A * scale,
                        np.zeros(A.shape[1]), "binary" if k == 2 else "argmax", "bsgd")
    return float(np.mean(model.predict(X_test) == np.asarray(y_test)))


def exact_dual(X, y, alpha, kernel):
    """D(α) = Σ α − ½ Σ_ij α_i α_j y_i y_j k(x_i, x_j) (docs/ALGORITHMS.md §3.5), or None when more
    than EXACT_DUAL_MAX_POINTS coordinates are non-zero. kernel: a model.KernelSpec."""
    active = np.flatnonzero(alpha)
    if active.size > EXACT_DUAL_MAX_POINTS:
        return None
    v = alpha[active] * np.asarray(y, dtype=np.float64)[active]
    S = X[active]
    return float(alpha.sum() - 0.5 * v @ (kernel.kernel_matrix(S, S) @ v))


def bsca_objectives(store, X, y, upper, alpha, xsq=None):
    """Diagnostics of §3.5 in C-form for a binary BSCA state.

    primal = ½ Σ_jl β_j β_l k(x̃_j, x̃_l) + Σ_i C_i max(0, 1 − y_i f̃(x_i)) (exact for the
    budgeted model), dual_tracked = Σ α − ½ Σ_i α_i y_i f̃(x_i) (equal to the exact dual while
    no maintenance has happened). Returns a dict with primal, dual_tracked and f (the budgeted
    decision values on X).
    """
    X = canonical_csr(X)
    if xsq is None:
        xsq = row_sqnorms(X)
    f = store_decision_rows(store, X, xsq)
    y = np.asarray(y, dtype=np.float64)
    out = {"primal": 0.5 * store_sq_norm(store) + float(upper @ np.maximum(0.0, 1.0 - y * f)),
           "dual_tracked": float(alpha.sum() - 0.5 * (alpha * y) @ f), "f": f}
    return out


_COMPARE_KEYS = ("n_compared", "same_as_gss", "same_as_precise", "wd_ratio_mean",
                 "wd_ratio_max", "gss_wd_ratio_mean", "wd_excess_total", "gss_wd_excess_total",
                 "optimal_fraction", "gss_optimal_fraction")


def compare_counters(counters):
    """The comparison-mode counters among a store's counters (SVStore.counters; present when
    the store was built with compare=True)."""
    return {key: counters[key] for key in _COMPARE_KEYS if key in counters}
