"""Linear Weston–Watkins multi-class SVM (``-s ww``, docs/ALGORITHMS.md §5) around the compiled
block coordinate descent of budgetsvm/_ww.pyx.

* The -B bias is an appended constant feature, so its weights are regularised (LIBLINEAR style,
  §0.5); the model stores them as ``bias_coef``.
* Class weights (-wi) become per-instance costs C_i = C·w_{y_i}: the hinge terms of point i are
  all weighted by the weight of its own class, and its dual block lives in [0, C_i]^{k−1}.
  (This is the natural WW analogue of LIBLINEAR's weighted_C; Wang & Scott (2021) have no
  class weights.)
* The model is k weight vectors with the arg-max rule (ties → lowest class index), also for
  k = 2; it is written to LIBLINEAR files as MCSVM_CS, the one solver type stock LIBLINEAR both
  accepts and predicts by arg-max of w_kᵀx.

``model.train_info`` holds diagnostics (not written into the model file): n_iter, n_steps,
primal, dual, gap, gap_history, gap_iterations, eval_seconds, train_seconds (block steps only;
wall time), eval_cpu_seconds, train_cpu_seconds (the same in CPU time), subsolver, converged,
max_iter_reached (stopped by --max-iter before the gap test passed), shrink, n_unshrink,
n_revived, n_revisits (shrinking: pairs revived by gap evaluations, block steps of revisits).
"""
import numpy as np

from budgetsvm.model import LinearModel
from budgetsvm.problem import append_bias_column, canonical_csr, class_costs, row_sqnorms
from budgetsvm.solvers import check_monitor


def train_ww(X, y_index, labels, params, callback=None, *, monitor=None, monitor_test=None,
             gap_every=0, sample_weight=None):
    """Train a Weston–Watkins linear SVM on CSR X (n × d) with classes y_index in 0..k−1. The
    fit signature of every solver (solvers.SolverSpec); not monitorable: a monitor is refused.

    gap_every: evaluate the duality gap every that many outer iterations (0 = adaptive schedule
    that keeps evaluation under ~10 % of the run; 1 = every iteration, as in Wang & Scott's
    plots). sample_weight: positive instance weights (the Python API's): C_i = C·w_{y_i}·weight.
    """
    from budgetsvm import _ww
    check_monitor("ww", monitor)
    X = canonical_csr(X)
    labels = np.asarray(labels, dtype=np.float64)
    y_index = np.asarray(y_index, dtype=np.int32)
    k = len(labels)
    n, d = X.shape
    bias = float(params.bias)
    if bias >= 0:
        X = append_bias_column(X, bias)
    costs = class_costs(labels, params)
    C_i = costs[y_index] if n else np.zeros(0)
    if sample_weight is not None:
        C_i = C_i * sample_weight          # instance weights multiply the costs
    steppable = np.isfinite(row_sqnorms(X))
    if not steppable.all():
        # a row whose ‖x‖² overflows takes no step (β_i stays 0, as in LIBLINEAR's -s 4), and
        # its gap term would keep the stopping test from ever passing: it is left out (train()
        # warns); W is the same as with it at β_i = 0
        X, y_index, C_i = X[steppable], y_index[steppable], C_i[steppable]
    max_iter = params.effective_max_iter()
    report = None
    if callback is not None:
        from budgetsvm.dcd import iteration_text
        shown_limit = params.shown_max_iter()       # 0 under the default: the count alone

        def report(iteration, relative_gap):
            callback(iteration, f"iter {iteration_text(iteration, shown_limit)}  "
                                f"gap/gap_1 = {relative_gap:.3g}")
    result = _ww.ww_solve(
        X.data, X.indices, X.indptr.astype(np.int64), y_index, C_i, X.shape[1], k,
        delta=float(params.effective_eps()),
        abs_gap=float(params.ww_gap) if params.ww_gap else 0.0,
        max_iter=max_iter, subsolver=params.ww_subsolver,
        gap_every=int(gap_every), seed=int(params.seed) & ((1 << 64) - 1), callback=report,
        shrinking=params.ww_shrink == "on")
    W = result.W                                   # (d [+1], k), column j = w_j
    # W is feature-major like LIBLINEAR's w, so coef = W[:d].T is Fortran-contiguous and the model
    # keeps it without a copy (copying 46 MB on sector.scale cost ~6 % of the training)
    coef = W[:d].T
    bias_coef = W[d].copy() if bias >= 0 else None
    meta = {"C": float(params.C), "eps": float(params.effective_eps()),
            "max_iter": max_iter, "seed": int(params.seed),
            "subsolver": params.ww_subsolver, "n_iter": int(result.n_iter),
            "converged": bool(result.converged)}
    if params.ww_gap:
        meta["ww_gap"] = float(params.ww_gap)
    if params.ww_shrink != "none":
        # absent means the algorithm of Wang & Scott (2021), as in every model written before
        # the option
        meta["ww_shrink"] = params.ww_shrink
    model = LinearModel(labels, coef, bias, bias_coef, "ww", "ww", meta, copy=False)
    model.train_info = {
        "n_iter": int(result.n_iter), "n_steps": int(result.n_steps),
        "primal": float(result.primal), "dual": float(result.dual), "gap": float(result.gap),
        "gap_history": result.gap_history, "gap_iterations": result.gap_iterations,
        "eval_seconds": float(result.eval_seconds),
        "train_seconds": float(result.solve_seconds),
        "eval_cpu_seconds": float(result.eval_cpu_seconds),
        "train_cpu_seconds": float(result.solve_cpu_seconds),
        "subsolver": params.ww_subsolver, "converged": bool(result.converged),
        "max_iter_reached": bool(not result.converged and max_iter > 0
                                 and result.n_iter >= max_iter),
        "n_fallbacks": int(result.n_fallbacks), "shrink": params.ww_shrink,
        "n_unshrink": int(result.n_unshrink), "n_revived": int(result.n_revived),
        "n_revisits": int(result.n_revisits)}
    return model
