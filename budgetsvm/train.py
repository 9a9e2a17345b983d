"""Training orchestration shared by bsvm-train, bsvm-grid and the Python API: label order,
parameter checks, dispatch to the solver, and stratified cross-validation."""
import contextlib
import threading
import warnings

import numpy as np
import scipy.sparse as sp

from budgetsvm import threads
from budgetsvm._rng import Random
from budgetsvm.errors import (BsvmError, MaxIterWarning, OneClassWarning, ParameterError,
                              TrainingDiverged)
from budgetsvm.labels import group_classes
from budgetsvm.model_io import ensure_finite
from budgetsvm import solvers
from budgetsvm.params import TrainParams, check_params
from budgetsvm.problem import check_class_costs

# Linear solvers keep dense weight vectors: k·d doubles (one per class for one-vs-rest and WW).
# Refuse a dimension whose weights would exceed this many values (2^28 doubles = 2 GiB), so an
# absurd index (say 2^31 − 1) gives a clear error instead of an attempt to allocate 16 GiB.
MAX_LINEAR_WEIGHTS = 1 << 28

# Feature values beyond this magnitude are "far from unit scale": the commands say so once and
# name bsvm-scale (svm-scale's [-1, 1] and standardised data stay well below it).
FAR_FROM_UNIT_SCALE = 100.0

# Cross-validation runs a fold's refit this many folds after its solver (fold_items).
REFIT_LOOKAHEAD = 2

DIVERGED_DECISIONS = ("training diverged: the model's decision values are not finite (NaN or "
                      "infinity); scaled features (bsvm-scale) or a smaller -c may help")


def _solver_function(name):
    # The registry imports a solver's module on first use, so that its compiled core is loaded
    # only when it runs.
    return solvers.get(name).fit_function()


def check_solver(name):
    """Raise the ParameterError train() would raise if solver `name` is not in this build."""
    _solver_function(name)


def train(X, y, params: TrainParams, callback=None, monitor=None, monitor_test=None,
          sample_weight=None, *, warn_overflow=True):
    """Train a model on CSR X (n × d) and labels y with the solver named in params, on
    params.n_threads threads (budgetsvm/threads.py; the model does not depend on them).
    Labels of a single class give one_class_model's model (with a OneClassWarning).

    monitor(row) (bsgd, bsca) receives one dict per epoch: time, objectives, merge fraction, and
    test accuracy on monitor_test = (X_test, y_test) when given (test labels unknown to the
    training data count as errors).

    sample_weight: positive finite instance weights, one per row (the Python API's; the
    command line has none): row i's cost is C·w_{y_i}·sample_weight[i] in every solver.
    warn_overflow=False: no OverflowRowsWarning (cross-validation folds: their caller warns
    once, about the rows of the whole data)."""
    check_params(params)
    X = sp.csr_matrix(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.shape[0] == 0:
        raise BsvmError("the training data is empty")
    options = {}
    if sample_weight is not None:
        sample_weight = np.ascontiguousarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != (X.shape[0],):
            raise BsvmError(f"sample_weight needs one weight per row ({X.shape[0]}), got shape "
                            f"{sample_weight.shape}")
        if not (np.all(np.isfinite(sample_weight)) and np.all(sample_weight > 0)):
            raise BsvmError("sample_weight must be positive and finite")
        options["sample_weight"] = sample_weight
    labels, y_index = group_classes(y)
    spec = solvers.get(params.solver)
    if spec.kind == "linear":
        n_weights = (1 if len(labels) == 2 and not spec.joint_multiclass else len(labels)) * \
            (X.shape[1] + (params.bias >= 0))
        if n_weights > MAX_LINEAR_WEIGHTS:
            raise BsvmError(
                f"{X.shape[1]} features × {len(labels)} classes need {n_weights} dense weights "
                f"({n_weights * 8 / 2**30:.1f} GiB); linear solvers accept at most "
                f"{MAX_LINEAR_WEIGHTS} (2 GiB): are the feature indices right?")
    if len(labels) < 2:
        return one_class_model(labels[0], params, X.shape[1])
    check_class_costs(labels, params)
    overflow = overflow_rows_warning(X, params)
    if overflow is not None and warn_overflow:
        import warnings
        warnings.warn(overflow, stacklevel=2)
    if sample_weight is not None:
        _check_row_costs(labels, y_index, params, sample_weight)
    # The fit signature of solvers.SolverSpec; monitor and monitor_test only when asked for, so
    # that a solver that is not monitorable may leave them out.
    solvers.check_monitor(params.solver, monitor)
    monitoring = {}
    if monitor is not None:
        monitoring["monitor"] = monitor
        if monitor_test is not None:
            X_test, y_test = monitor_test
            X_test = sp.csr_matrix(X_test, dtype=np.float64)
            if X_test.shape[1] != X.shape[1]:      # monitoring only: match the training width
                X_test = sp.hstack([X_test, sp.csr_matrix((X_test.shape[0], max(
                    0, X.shape[1] - X_test.shape[1])))]).tocsr()[:, :X.shape[1]]
            position = {float(v): i for i, v in enumerate(labels)}
            y_test = np.array([position.get(float(v), -1) for v in y_test], dtype=np.int32)
            monitoring["monitor_test"] = (X_test, y_test)
    with threads.pool(params.n_threads):
        return ensure_finite(_solver_function(params.solver)(X, y_index, labels, params,
                                                             callback=callback, **monitoring,
                                                             **options))


EVERY_ROW_OVERFLOWS = ("every training row has a squared norm that overflows a double (values "
                       "near 1e154 or beyond), so no solver can step on any: scale the data "
                       "(bsvm-scale)")


def overflow_rows_warning(X, params=None):
    """Rows whose ‖x‖² overflows: every solver leaves them out (dcd, acf, ww at α = 0 as
    LIBLINEAR's steps leave them; bsgd and bsca skip them). With params, a linear solver's bias
    feature (-B) counts in ‖x‖², as it is one more column of every row. Returns the
    OverflowRowsWarning about them (None when there are none); BsvmError when no row is left
    (the model would be silently constant)."""
    from budgetsvm.problem import row_sqnorms
    sq = row_sqnorms(X)
    bias = -1.0 if params is None or solvers.get(params.solver).kind != "linear" \
        else float(params.bias)
    if bias >= 0:
        with np.errstate(over="ignore"):
            sq = sq + bias * bias
    overflow = np.flatnonzero(np.isinf(sq))
    if overflow.size and overflow.size == X.shape[0]:
        if bias >= 0 and np.isinf(bias * bias):
            raise BsvmError(f"-B {bias:g}: the bias feature's square overflows a double (values "
                            "near 1e154 or beyond), so no solver can step on any row: use a "
                            "smaller -B")
        raise BsvmError(EVERY_ROW_OVERFLOWS)
    return overflow_warning(overflow.size, overflow[0]) if overflow.size else None


def warn_overflow_rows(X, params=None, stacklevel=3):
    """overflow_rows_warning, warned."""
    import warnings
    warning = overflow_rows_warning(X, params)
    if warning is not None:
        warnings.warn(warning, stacklevel=stacklevel)


def overflow_warning(count, first):
    """The OverflowRowsWarning about ``count`` rows, the first of them row ``first`` (0-based)."""
    from budgetsvm.errors import OverflowRowsWarning
    return OverflowRowsWarning(
        f"{count} training row(s) (the first: row {first + 1}) have a squared norm that "
        "overflows a double (values near 1e154 or beyond): no solver can step on them, so they "
        "are left out; scaling the data (bsvm-scale) keeps them")


def _check_row_costs(labels, y_index, params, sample_weight):
    """Raise BsvmError when C·w_{y_i}·sample_weight[i] overflows or underflows for a row."""
    from budgetsvm.problem import class_costs
    with np.errstate(over="ignore", under="ignore"):
        # without catch_warnings, which is not thread-safe (check_class_costs)
        costs = class_costs(labels, params, warn=False)[y_index] * sample_weight
    bad = np.flatnonzero(~(np.isfinite(costs) & (costs > 0)))
    if bad.size:
        i = int(bad[0])
        raise BsvmError(f"C times the class weight times sample_weight[{i}] "
                        f"({sample_weight[i]:g}) is {costs[i]:g}: a row's cost must be a finite "
                        "positive number")


def one_class_model(label, params: TrainParams, n_features):
    """The model of training data whose rows all have the one class ``label``, with a
    OneClassWarning: it predicts ``label`` for every row, as LIBSVM's and LIBLINEAR's models
    of such data do (LIBSVM's README: "the label in the training data is directly returned
    when testing"). params.solver's kind of model, so that it is written in that solver's
    formats, with a single decision value, 0 for every row, and arg-max over one class. No
    solver runs: a linear model has zero weights (LIBLINEAR trains its one-vs-rest problem
    with every label +1, whose weights differ, but its prediction is the same arg-max over
    one class), a kernel model no support vector (as LIBSVM's, which trains no pair)."""
    from budgetsvm.model import KernelModel, KernelSpec, LinearModel
    from budgetsvm.problem import class_weights
    warnings.warn(f"the training data has only one class (label {label:g}): the model "
                  "predicts it for every row, as LIBSVM's and LIBLINEAR's do",
                  OneClassWarning, stacklevel=2)
    labels = np.array([float(label)])
    class_weights(labels, params)            # a -wi for an absent label: LIBSVM's warning
    spec = solvers.get(params.solver)
    if spec.kind == "linear":
        # the loss names the LIBLINEAR solver_type of --format liblinear
        model = LinearModel(labels, np.zeros((1, n_features)), float(params.bias), None,
                            "ww" if spec.joint_multiclass else "ovr", params.solver,
                            {"loss": params.loss})
    else:
        kernel = KernelSpec(params.kernel, params.effective_gamma(n_features),
                            int(params.degree), float(params.coef0))
        model = KernelModel(labels, kernel, sp.csr_matrix((0, n_features)), np.zeros((0, 1)),
                            np.zeros(1), "argmax", params.solver)
    model.train_info = {}                         # no solver ran: no summary lines
    return model


def progress_total(params: TrainParams, n_rows, n_classes):
    """What the callback of train() counts up to, for a progress bar: steps (epochs × rows,
    per one-vs-rest model of bsca) for the kernel solvers, outer iterations against --max-iter
    (per one-vs-rest problem of dcd and acf) for the linear ones (TrainParams.shown_max_iter);
    None when that is 0: unlimited, or ww without --max-iter."""
    binary = n_classes <= 2
    if params.solver == "bsgd":
        return int(params.epochs) * n_rows
    if params.solver == "bsca":
        return int(params.epochs) * n_rows * (1 if binary else n_classes)
    max_iter = params.shown_max_iter()
    if not max_iter:
        return None
    return max_iter * (1 if binary or params.solver == "ww" else n_classes)


def predict_scored(model, X):
    """model.predict(X) for scoring (cross-validation, grid search), or TrainingDiverged when a
    decision value is NaN or infinite: the label of such a row is arbitrary, so is the rate."""
    with np.errstate(over="ignore", invalid="ignore"):
        F = model.decision_function(X)
    if not np.isfinite(F).all():
        raise TrainingDiverged(DIVERGED_DECISIONS)
    return model.labels_from(F)


def scale_notice(largest):
    """The one-line notice for data whose largest absolute feature value is ``largest``, or
    None when it is not far from unit scale."""
    if not largest > FAR_FROM_UNIT_SCALE:
        return None
    return (f"notice: feature values reach {largest:g}, far from unit scale; kernels and "
            "solvers work best on scaled features: see bsvm-scale (e.g. bsvm-scale -l 0 "
            "-s scaling train > train.scaled, then bsvm-scale -r scaling test > test.scaled)")


def largest_value(X):
    """max |x_ij| over the stored values of a sparse matrix (0 for an empty one)."""
    data = sp.csr_matrix(X).data
    return float(np.abs(data).max()) if data.size else 0.0


def stratified_folds(y, nr_fold, seed):
    """Fold number of every row: per class, a seeded shuffle dealt round-robin into the folds.

    Like LIBSVM's stratified split, a class smaller than nr_fold is allowed (some folds simply
    get none of it). Deterministic for a given seed.
    """
    y = np.asarray(y)
    if nr_fold < 2:
        raise ParameterError(f"-v: number of folds must be >= 2, got {nr_fold}")
    if nr_fold > len(y):
        raise ParameterError(f"-v: {nr_fold} folds but only {len(y)} training rows")
    rng = Random(seed)
    labels, y_index = group_classes(y)
    fold = np.empty(len(y), dtype=np.int64)
    start = 0
    for c in range(len(labels)):
        members = np.flatnonzero(y_index == c)
        rng.shuffle(members)
        fold[members] = (np.arange(len(members)) + start) % nr_fold
        start += len(members)      # continue dealing where the previous class stopped
    return fold


def usable_folds(nr_fold, n_rows):
    """(folds, warning): LIBSVM's and LIBLINEAR's rule for -v with more folds than rows, which
    they run as leave-one-out (one fold per row) with a warning; else (nr_fold, None)."""
    if nr_fold <= n_rows or nr_fold < 2 or n_rows < 2:
        return nr_fold, None                # stratified_folds refuses what is left
    return n_rows, (f"warning: -v {nr_fold} asks for more folds than the {n_rows} training "
                    f"rows: using {n_rows} folds (leave-one-out cross validation)")


def small_classes(y, nr_fold):
    """Labels with fewer rows than folds (a warning, as LIBSVM accepts them); none for
    leave-one-out (as many folds as rows), where every class has fewer by construction."""
    if nr_fold >= len(y):
        return []
    values, counts = np.unique(np.asarray(y), return_counts=True)
    return [v for v, c in zip(values, counts) if c < nr_fold]


def fold_predictions(X, y, test, params, callback=None):
    """Labels of the rows ``test`` (a boolean mask) predicted by a model trained on the others.
    A training part with a single class predicts it for every row, as the one-class model that
    LIBSVM and LIBLINEAR train there does (a class rarer than the folds is absent from some
    training parts)."""
    return _finish_fold(X, y, test, _train_fold(X, y, test, params, callback, defer=False))


FOLD_MAX_ITER = ("the solver stopped at --max-iter before its stopping tolerance in a "
                 "cross-validation fold; a larger --max-iter (0 = unlimited) or a larger -e may "
                 "help")


def problem_infos(info):
    """A model's train_info as a list of dicts, one per binary problem (or the one of it)."""
    if isinstance(info, dict):
        info = [info]
    return [d for d in info if isinstance(d, dict)] if isinstance(info, (list, tuple)) else []


def max_iter_reached(info):
    """Whether a linear solver (or one of its one-vs-rest problems) stopped at max_iter, from a
    model's train_info."""
    return any(d.get("max_iter_reached") for d in problem_infos(info))


def warn_fold_max_iter(model):
    """A MaxIterWarning when a fold's model stopped at --max-iter: cross-validation prints only
    its accuracy, where a trained model's summary has LIBLINEAR's warning. The one-line display
    of the commands shows the text once, however many folds (and grid points) reach it."""
    if max_iter_reached(getattr(model, "train_info", None)):
        warnings.warn(FOLD_MAX_ITER, MaxIterWarning, stacklevel=2)
    return model


def _train_fold(X, y, test, params, callback=None, defer=True):
    """The first half of fold_predictions: the training on the rows outside ``test``, with its
    refit put off (refit.deferred_polish) when ``defer``. Returns (model, the refits put off,
    None), or (None, [], the label) when the training part has a single class."""
    present = np.unique(y[~test])
    if len(present) == 1:
        return None, [], present[0]
    deferring = contextlib.nullcontext([])
    if defer:
        from budgetsvm.refit import deferred_polish     # scipy.linalg: only when it trains
        deferring = deferred_polish()
    with deferring as pending:
        model = train(X[~test], y[~test], params, callback=callback, warn_overflow=False)
    return warn_fold_max_iter(model), pending, None


def _finish_fold(X, y, test, trained):
    """The second half of fold_predictions: the refit put off, on the same rows (taken out of
    X again rather than kept meanwhile), and the predictions of the rows ``test``."""
    model, pending, only_label = trained
    if model is None:
        return np.full(int(np.count_nonzero(test)), only_label)
    if pending:
        rows = X[~test]
        for deferred in pending:
            model = ensure_finite(deferred.run(rows))
    return predict_scored(model, X[test])


def fold_items(nr_fold, lookahead=REFIT_LOOKAHEAD):
    """The work items of cross-validation, in the order they are run (and claimed by the
    threads): ("train", f) is fold f's solver run, ("finish", f) its refit and predictions,
    `lookahead` folds later. The solver runs are sequential and the refits split across the
    threads, so this order starts every solver run as soon as possible and keeps the threads
    busy to the end (5 folds on 2 threads: the last fold's solver runs while the other thread
    refits the folds before), with at most lookahead + 1 solved folds waiting. When several
    folds fail, the error reported is the one of the earliest item in this order (a later
    fold's solver run comes before an earlier fold's refit); the order does not depend on the
    thread count, so neither does the error."""
    items = []
    for f in range(nr_fold):
        items.append(("train", f))
        if f >= lookahead:
            items.append(("finish", f - lookahead))
    items += [("finish", f) for f in range(max(nr_fold - lookahead, 0), nr_fold)]
    return items


def cross_validation(X, y, params: TrainParams, nr_fold, callback=None, on_fold=None):
    """Predicted label of every row, each by a model trained without its fold.

    The folds are trained and predicted at the same time on params.n_threads threads (each
    fold model with its own generators, seeded as a run on that fold alone would be), so the
    result does not depend on the thread count. on_fold(f) is called after fold f (0-based)
    has been predicted, for progress displays (in completion order, from any thread).
    With -b 1: probability.cross_validation_with_probability."""
    check_params(params)
    X = sp.csr_matrix(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    warn_overflow_rows(X, params)    # once, about the whole data (the folds do not warn)
    fold = stratified_folds(y, nr_fold, params.seed)
    predicted = np.empty(len(y))
    trained = [None] * nr_fold
    solved = [threading.Event() for _ in range(nr_fold)]

    def run(item):
        phase, f = item
        test = fold == f
        if not test.any():
            return
        with naming_the_fold(f, nr_fold):
            if phase == "train":
                try:
                    trained[f] = _train_fold(X, y, test, params, callback=callback)
                finally:
                    solved[f].set()
                return
            # the fold's own solver run comes earlier in the items: it runs, or has failed
            # (and then this item is stopped: check_cancelled raises)
            while not solved[f].wait(threads.WAIT_SECONDS):
                threads.check_cancelled()
            if trained[f] is None:
                # the solver run failed: its error, from an earlier item, is the one raised
                raise threads.Cancelled()
            predicted[test] = _finish_fold(X, y, test, trained[f])
            trained[f] = None
        if on_fold is not None:
            on_fold(f)

    with threads.pool(params.n_threads):
        threads.parallel_map(run, fold_items(nr_fold))
    return predicted


@contextlib.contextmanager
def naming_the_fold(f, nr_fold):
    """A fold whose training diverged says which fold it was."""
    try:
        yield
    except TrainingDiverged as exc:
        raise TrainingDiverged(f"fold {f + 1} of {nr_fold}: {exc}") from None


def summary_lines(model, stats=False):
    """End-of-training summary lines (LIBLINEAR's lines for the linear CD solvers); bsvm-train
    prints them on stdout, as LIBSVM and LIBLINEAR do."""
    info = getattr(model, "train_info", None)
    if not info:
        return []
    summary = solvers.get(model.solver).summary_function() if model.solver in solvers.names() \
        else None
    if summary is not None:
        return summary(info, stats=stats)
    if isinstance(info, dict):
        shown = {k: v for k, v in info.items() if not isinstance(v, (list, tuple, np.ndarray))}
        lines = [", ".join(f"{k} = {v:.6g}" if isinstance(v, float) else f"{k} = {v}"
                           for k, v in shown.items())]
        if info.get("max_iter_reached"):
            # -s ww: the warning and hint that dcd.info_lines prints for dcd and acf
            lines += ["WARNING: reaching max number of iterations",
                      "Using a larger --max-iter (0 = unlimited) or a larger -e may help"]
        return lines
    return []
