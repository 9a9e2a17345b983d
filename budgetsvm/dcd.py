"""Linear SVMs trained in the dual (LIBLINEAR's -s 3 and -s 1): problem setup, class weights and
the multi-class strategy around the compiled cores in budgetsvm/_dcd.pyx (dcd: uniform sweeps
with shrinking; acf: adaptive coordinate frequencies, docs/ALGORITHMS.md §4.4).

Follows LIBLINEAR's train() (linear.cpp): the -B bias is an appended constant feature (so its
weight is regularised), two classes give one model with label[0] as the positive class and
weight_label0·C versus weight_label1·C, and k > 2 classes give k one-vs-rest models where
class r uses weight_r·C for its own rows and plain C for the rest.
"""
import time

import numpy as np

from budgetsvm._rng import sub_seed
from budgetsvm.errors import ParameterError
from budgetsvm.labels import format_label
from budgetsvm.problem import append_bias_column, canonical_csr, class_costs
from budgetsvm.solvers import check_monitor
from budgetsvm.threads import SummedProgress, parallel_map


def _dcd_core(params):
    from budgetsvm import _dcd
    return _dcd.dcd_solve, {"shrinking": bool(params.shrinking), "stop": params.stop}


def _acf_core(params):
    from budgetsvm import _dcd
    pmin, pmax = params.effective_acf_bounds()
    return _dcd.acf_solve, {"c": float(params.acf_c), "pmin": float(pmin), "pmax": float(pmax),
                            "shrink": params.acf_shrink}


# solver name -> function(params) returning (core, solver-specific keyword arguments).
# Every core is called as core(data, indices, indptr, y, C_i, n_features, eps=, max_iter=,
# loss=, seed=, callback=, row_norms=, **specific) and returns an object with the DcdResult
# fields.
CORES = {"dcd": _dcd_core, "acf": _acf_core}

# What each core passes to its callback as the violation of the last outer iteration.
VIOLATION = {"dcd": "M-m", "acf": "max|PG|"}


def iteration_text(iteration, max_iter):
    """'12/1000' for the progress display; '12' when max_iter is 0 (unlimited)."""
    return f"{iteration}/{max_iter}" if max_iter else f"{iteration}"


def ovr_prefix(label, k, done):
    """Which one-vs-rest sub-problem a progress text is about, and how many are done."""
    return "" if k == 2 else f"class {label:g} ({done}/{k} done)  "


def subproblems(y_index, labels, params):
    """Yield (positive label, y as ±1 int8, per-row cost C_i) for every binary sub-problem."""
    costs = class_costs(labels, params)
    y_index = np.asarray(y_index)
    for r in range(1 if len(labels) == 2 else len(labels)):
        yield subproblem(y_index, labels, costs, params, r)


def subproblem(y_index, labels, costs, params, r):
    """(positive label, y as ±1 int8, per-row cost C_i) of binary sub-problem r; costs from
    class_costs. Two classes: one problem, label[0] against label[1]; more: class r
    against the rest."""
    positive = y_index == r
    if len(labels) == 2:
        return labels[0], np.where(positive, 1, -1).astype(np.int8), \
            np.where(positive, costs[0], costs[1])
    return labels[r], np.where(positive, 1, -1).astype(np.int8), \
        np.where(positive, costs[r], float(params.C))


def fit_linear(X, y_index, labels, params, callback=None, sample_weight=None):
    """Train the binary or one-vs-rest problems; returns (coef, bias_coef, multiclass, info).
    sample_weight: positive weights of the rows, which multiply their costs C_i (None: 1).

    coef is float64 (nr_w, n_features) without the bias column, bias_coef (nr_w,) the bias
    weights (zeros when params.bias < 0), multiclass 'binary' or 'ovr', info one dict per
    sub-problem (see train_linear).
    """
    if params.solver not in CORES:
        raise ParameterError(f"-s {params.solver}: not a linear dual solver available here")
    core, specific = CORES[params.solver](params)
    X = canonical_csr(X)
    n_features = X.shape[1]
    if params.bias >= 0:
        X = append_bias_column(X, float(params.bias))
    data = X.data
    indices = X.indices.astype(np.int32, copy=False)
    indptr = X.indptr.astype(np.int64, copy=False)
    k = len(labels)
    multiclass = "binary" if k == 2 else "ovr"
    eps = params.effective_eps()
    max_iter = params.effective_max_iter()
    from budgetsvm import _dcd
    row_norms = _dcd._row_norms(data, indptr)      # once for all one-vs-rest problems
    coef = np.zeros((1 if k == 2 else k, n_features))
    bias_coef = np.zeros(coef.shape[0])
    costs = class_costs(labels, params)
    y_index = np.asarray(y_index)
    violation = VIOLATION.get(params.solver, "violation")
    progress = SummedProgress(callback)

    def solve(r):
        # One sub-problem; the sub-problems share the data and run on the -n threads
        # (budgetsvm/threads.py), each with its own generator (sub_seed).
        label, y, C_i = subproblem(y_index, labels, costs, params, r)
        if sample_weight is not None:
            C_i = C_i * sample_weight
        report = None if callback is None else progress.reporter(
            lambda gap, it: ovr_prefix(label, k, progress.done) +
            f"iter {iteration_text(it, max_iter)}  {violation} = {gap:.3g}")
        seed = sub_seed(params.seed, r)
        start = time.perf_counter()
        res = core(data, indices, indptr, y, C_i, X.shape[1], eps=eps,
                   max_iter=max_iter, loss=params.loss, seed=seed, callback=report,
                   row_norms=row_norms, **specific)
        seconds = time.perf_counter() - start
        progress.finished()
        coef[r] = res.w[:n_features]
        if params.bias >= 0:
            bias_coef[r] = res.w[n_features]
        return {
            "label": float(label),
            "n_iter": int(res.n_iter),
            "n_updates": int(res.n_updates),
            "max_iter_reached": bool(res.max_iter_reached),
            "dual_objective": float(res.dual_objective),
            "primal_objective": float(res.primal_objective),
            "n_sv": int(np.count_nonzero(res.alpha > 0)),
            "n_unshrink": int(getattr(res, "n_unshrink", 0)),
            "seed": seed,
            "seconds": seconds,
        }

    info = parallel_map(solve, range(coef.shape[0]))
    return coef, bias_coef, multiclass, info


def train_linear(X, y_index, labels, params, callback=None, *, monitor=None, monitor_test=None,
                 sample_weight=None):
    """Train a LinearModel by dual coordinate descent (solver params.solver: 'dcd' or 'acf'). The
    fit signature of every solver (solvers.SolverSpec); neither is monitorable: a monitor is
    refused.

    X: CSR float64 (n × d) without the bias column; y_index: class number of every row in
    label order; labels: the class labels (labels.group_classes); params: TrainParams (uses C,
    eps, max_iter, shrinking, stop, loss, bias, class_weights, seed; acf_c, acf_pmin, acf_pmax for
    acf). callback(iteration, info) is called once per outer iteration (iteration counted across
    the one-vs-rest sub-problems, info a short text with the current violation: M − m for dcd,
    max|PG| for acf).

    The model's ``params`` is the metadata dict of ``metadata`` (solver, loss, C, eps, bias,
    class_weights, max_iter, shrinking, stop, seed, n_iter per sub-problem as "12 15 9",
    max_iter_reached; acf also acf_c, acf_pmin, acf_pmax). It also has ``train_info``: a list
    with one dict per sub-problem (one for two classes, k for one-vs-rest), keys label (the
    positive class), n_iter, n_updates, max_iter_reached, dual_objective (LIBLINEAR's
    "Objective value"), primal_objective, n_sv, n_unshrink (dcd: shrinking undone; acf: canstop
    resets), seed, seconds.
    ``info_lines(model.train_info)`` renders LIBLINEAR's messages. sample_weight: positive
    instance weights (the Python API's): row i's cost is C·w_{y_i}·sample_weight[i].
    """
    from budgetsvm.model import LinearModel
    check_monitor(params.solver, monitor)
    coef, bias_coef, multiclass, info = fit_linear(X, y_index, labels, params, callback,
                                                   sample_weight)
    # coef is this training's own array: the model keeps it (a copy of sector.scale's 105 ×
    # 55,197 weights took 0.18 s of page faults, serial time that threads cannot shorten)
    model = LinearModel(np.asarray(labels), coef, float(params.bias), bias_coef, multiclass,
                        params.solver, params=metadata(params, info), copy=False)
    model.train_info = info
    return model


def metadata(params, info):
    """Training metadata for LinearModel.params (str keys; scalar values only)."""
    # every digit of the weights (%g kept 6); an integer one without ".0", as before
    weights = " ".join(f"{format_label(float(label))}:{repr(float(w)).removesuffix('.0')}"
                       for label, w in sorted(params.class_weights.items()))
    extra = {}
    if params.solver == "acf":
        pmin, pmax = params.effective_acf_bounds()
        extra = {"acf_c": float(params.acf_c), "acf_pmin": float(pmin), "acf_pmax": float(pmax)}
        if params.acf_shrink != "none":
            # absent means the paper's algorithm, as in every model written before the option
            extra["acf_shrink"] = params.acf_shrink
    if params.solver == "dcd":
        # acf reads neither -h nor --stop (its shrinking is --acf-shrink): not recorded for it
        extra = {"shrinking": bool(params.shrinking), "stop": params.stop}
    return {
        "solver": params.solver,
        "loss": params.loss,
        "C": float(params.C),
        "eps": float(params.effective_eps()),
        "bias": float(params.bias),
        "class_weights": weights,
        "max_iter": params.effective_max_iter(),
        "seed": int(params.seed),
        "n_iter": " ".join(str(sub["n_iter"]) for sub in info),     # one per sub-problem
        "max_iter_reached": any(sub["max_iter_reached"] for sub in info),
        **extra,
    }


def info_lines(train_info, solver_hint=True, stats=False):
    """LIBLINEAR's end-of-training messages for every sub-problem, as a list of lines.

    stats=True adds, after each "#iter" line, the coordinate updates (steps with |PG| > 1e-12)
    and, at the end, their totals over the sub-problems: the step counts that Glasmachers &
    Dogan (2013) compare in their Tables 2–3 ("#iter" counts outer iterations: sweeps of the
    active set for dcd, sweeps of n scheduled steps for acf).
    """
    lines = []
    for sub in train_info:
        lines.append(f"optimization finished, #iter = {sub['n_iter']}")
        if stats:
            lines.append(f"#updates = {sub['n_updates']}")
        if sub["max_iter_reached"]:
            lines.append("WARNING: reaching max number of iterations")
            if solver_hint:
                lines.append("Using a larger --max-iter (0 = unlimited) or a larger -e may help")
        lines.append("Objective value = %f" % sub["dual_objective"])
        lines.append(f"nSV = {sub['n_sv']}")
    if stats and len(train_info) > 1:
        lines.append(f"total: #iter = {sum(sub['n_iter'] for sub in train_info)}, "
                     f"#updates = {sum(sub['n_updates'] for sub in train_info)}")
    return lines
