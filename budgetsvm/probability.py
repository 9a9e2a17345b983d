"""Probability outputs (``-b 1``): Platt scaling and pairwise coupling.

Fitting (``fit_probability``), for every solver, as svm-train ``-b 1`` does:

* the decision values come from an internal **5-fold stratified cross-validation** on the
  training data (folds from ``train.stratified_folds`` seeded by ``params.seed``, so the same
  seed gives the same probabilities); a fold whose training part lacks a class gives that class
  the decision value -1 (+1 for the class itself), as LIBSVM does for a one-class fold;
* one sigmoid P(positive | f) = 1 / (1 + exp(A·f + B)) is fitted per decision value by
  ``sigmoid_train``: Platt's regularised maximum likelihood with the targets
  t+ = (N+ + 1)/(N+ + 2), t- = 1/(N- + 2), minimised by Newton's method with backtracking as in
  Lin, Lin & Weng (2007), "A note on Platt's probabilistic outputs for support vector machines",
  Algorithm 1 (written from the paper);
* binary models (one decision value, positive ↔ ``labels[0]``) get one (A, B) pair: P(labels[0])
  = r, P(labels[1]) = 1 - r;
* arg-max models (one-vs-rest ``ovr``, Weston–Watkins ``ww``, budgeted ``argmax``) get one pair
  per class, fitted on that class's decision value against the rest; the class probabilities
  are the k one-vs-rest estimates divided by their sum (**multi-class rule**);
* LIBSVM one-vs-one (``ovo``) models read from LIBSVM files keep LIBSVM's pairwise probA/probB
  and are coupled with Wu, Lin & Weng (2004), method 2, iterated exactly as svm-predict does,
  so probabilities match LIBSVM's;
* logistic-regression models read from LIBLINEAR files (LIBLINEAR's -s 0, 6, 7) need no fitted
  sigmoid: their decision values are log-odds, so P = 1 / (1 + exp(-f)) per decision value,
  P(labels[1]) = 1 - P(labels[0]) for two classes and the per-class values divided by their
  sum for more, as LIBLINEAR's predict -b 1 computes them (unclipped).

Every pairwise or one-vs-rest estimate r is computed in the overflow-safe form and clipped to
[1e-7, 1 - 1e-7] (LIBSVM). ``predict_with_proba`` labels a row with the class of largest
probability (first in label order on ties): the rule of svm-predict ``-b 1``, so the printed
label always agrees with the printed probabilities. Plain prediction (without ``-b``) keeps the
decision-value label; the two can differ for a few rows near the boundary, as in LIBSVM. A
logistic-regression model keeps its decision-value label, as LIBLINEAR's predict -b 1 does (the
two agree but where the probabilities tie, e.g. two classes whose values both round to 1).
"""
import numpy as np
import scipy.sparse as sp

from budgetsvm.errors import BsvmError

N_FOLDS = 5
MIN_PROB = 1e-7


# LIBLINEAR's logistic-regression solvers (linear.cpp check_probability_model).
LOGISTIC_SOLVERS = ("L2R_LR", "L1R_LR", "L2R_LR_DUAL")


def is_logistic(model):
    """Whether the model is a LIBLINEAR logistic regression (read from a LIBLINEAR file)."""
    params = getattr(model, "params", None) or {}
    return params.get("solver_type") in LOGISTIC_SOLVERS


def has_probability(model):
    """Whether the model gives probabilities: fitted sigmoids (-b 1, or LIBSVM's probA/probB),
    or a logistic regression's own."""
    return (getattr(model, "prob_a", None) is not None
            and getattr(model, "prob_b", None) is not None) or is_logistic(model)


def sigmoid_predict(f, A, B):
    """1 / (1 + exp(A·f + B)) without overflow (elementwise)."""
    with np.errstate(over="ignore", invalid="ignore"):
        fApB = np.asarray(f, dtype=np.float64) * A + B
    out = np.empty_like(fApB)
    pos = fApB >= 0
    e = np.exp(-fApB[pos])
    out[pos] = e / (1.0 + e)
    out[~pos] = 1.0 / (1.0 + np.exp(fApB[~pos]))
    return out


def _objective(fApB, t):
    """Negative log-likelihood sum over rows of t·log(p) + (1-t)·log(1-p), p = sigmoid."""
    pos = fApB >= 0
    return float(np.sum(np.where(pos, t * fApB + np.log1p(np.exp(-np.abs(fApB))),
                                 (t - 1.0) * fApB + np.log1p(np.exp(-np.abs(fApB))))))


def sigmoid_targets(positive):
    """Platt's smoothed targets for boolean ``positive`` (True = the class of P)."""
    positive = np.asarray(positive, dtype=bool)
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    return np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def sigmoid_train(f, positive, max_iter=100, min_step=1e-10, sigma=1e-12, eps=1e-5):
    """Fit (A, B) of P(positive | f) = 1/(1 + exp(A f + B)) by Newton's method with backtracking.

    f: decision values (n,); positive: booleans (n,). Returns (A, B). The objective is the
    negative log-likelihood with Platt's smoothed targets; the Hessian gets sigma on its
    diagonal; the step is halved until the sufficient-decrease test holds; the iteration stops
    when both gradient components are below eps (Lin, Lin & Weng 2007, Algorithm 1).
    """
    f = np.asarray(f, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    t = sigmoid_targets(positive)
    A, B = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))
    fval = _objective(f * A + B, t)
    for _ in range(max_iter):
        p = sigmoid_predict(f, A, B)          # P(positive)
        q = 1.0 - p
        d2 = p * q
        h11 = sigma + float(np.dot(f * f, d2))
        h22 = sigma + float(d2.sum())
        h21 = float(np.dot(f, d2))
        d1 = t - p
        g1 = float(np.dot(f, d1))
        g2 = float(d1.sum())
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            newA, newB = A + step * dA, B + step * dB
            newf = _objective(f * newA + newB, t)
            if newf < fval + 1e-4 * step * gd:
                A, B, fval = newA, newB, newf
                break
            step /= 2.0
        else:
            break                             # line search failed: keep the last point
    return A, B


def _clipped(f, A, B):
    # LIBSVM's min(max(p, min_prob), 1 − min_prob) also turns a NaN p (a NaN decision value)
    # into min_prob; np.clip would pass it through
    p = sigmoid_predict(f, A, B)
    return np.clip(np.where(np.isnan(p), MIN_PROB, p), MIN_PROB, 1.0 - MIN_PROB)


def pairwise_coupling(R):
    """Wu–Lin–Weng method 2 for every row: R (n, k, k) with R[:, i, j] = r_ij ≈ P(i | i or j).

    The same fixed-point iteration as LIBSVM's multiclass_probability (at most max(100, k)
    sweeps, stop when max_t |(Qp)_t - p'Qp| < 0.005/k), vectorised over rows.
    """
    n, k, _ = R.shape
    Q = -R.transpose(0, 2, 1) * R                  # Q_tj = -r_jt r_tj (t != j)
    diag = np.einsum("nij,nij->nj", R, R) - np.einsum("nii->ni", R) ** 2   # sum_j!=t r_jt^2
    idx = np.arange(k)
    Q[:, idx, idx] = diag
    p = np.full((n, k), 1.0 / k)
    active = np.arange(n)
    eps = 0.005 / k
    for _ in range(max(100, k)):
        if active.size == 0:
            break
        pr, Qr = p[active], Q[active]
        # Qp and p'Qp recomputed at every sweep, for numerical accuracy (as LIBSVM does).
        Qpr = np.einsum("ntj,nj->nt", Qr, pr)
        pQp = np.einsum("nt,nt->n", pr, Qpr)
        keep = np.max(np.abs(Qpr - pQp[:, None]), axis=1) >= eps
        active, pr, Qr, Qpr, pQp = active[keep], pr[keep], Qr[keep], Qpr[keep], pQp[keep]
        if active.size == 0:
            break
        for t in range(k):
            qtt = Qr[:, t, t]
            diff = (-Qpr[:, t] + pQp) / qtt
            pr[:, t] += diff
            scale = 1.0 + diff
            pQp = (pQp + diff * (diff * qtt + 2.0 * Qpr[:, t])) / scale / scale
            Qpr = (Qpr + diff[:, None] * Qr[:, t, :]) / scale[:, None]
            pr /= scale[:, None]
        p[active] = pr
    return p


def proba_from_decision(model, F):
    """Class probabilities (n, k) in the model's label order from its decision values F."""
    if not has_probability(model):
        raise BsvmError("the model has no probability information (train it with -b 1)")
    F = np.asarray(F, dtype=np.float64)
    if F.ndim == 1:
        F = F[:, None]
    k = len(model.labels)
    if is_logistic(model):
        P = sigmoid_predict(F, -1.0, 0.0)           # 1 / (1 + exp(-f))
        if k == 2:
            return np.column_stack([P[:, 0], 1.0 - P[:, 0]])
        return P / P.sum(axis=1, keepdims=True)
    A, B = model.prob_a, model.prob_b
    multiclass = model.multiclass
    if multiclass == "binary":
        r = _clipped(F[:, 0], A[0], B[0])
        return np.column_stack([r, 1.0 - r])
    if multiclass == "ovo":
        if k == 2:
            r = _clipped(F[:, 0], A[0], B[0])
            return np.column_stack([r, 1.0 - r])
        R = np.zeros((F.shape[0], k, k))
        pair = 0
        for i in range(k):
            for j in range(i + 1, k):
                r = _clipped(F[:, pair], A[pair], B[pair])
                R[:, i, j] = r
                R[:, j, i] = 1.0 - r
                pair += 1
        return pairwise_coupling(R)
    # One-vs-rest rule for arg-max models: normalised one-vs-rest estimates.
    P = np.column_stack([_clipped(F[:, c], A[c], B[c]) for c in range(k)])
    return P / P.sum(axis=1, keepdims=True)


def predict_proba(model, X):
    """Class probabilities (n, k) of the rows of X, columns in the model's label order."""
    return proba_from_decision(model, model.decision_function(X))


def predict_with_proba(model, X):
    """(labels, probabilities) of the rows of X as predict -b 1 gives them: svm-predict's label
    is the class of largest probability (first on ties); LIBLINEAR's, for its logistic
    regressions, the decision-value label."""
    F = model.decision_function(X)
    P = proba_from_decision(model, F)
    if is_logistic(model):
        return model.labels_from(F), P
    if P.shape[0] == 0:
        return np.empty(0), P
    return model.labels[np.argmax(P, axis=1)], P


def _heldout_fold(X, y, params, fold, f, sample_weight=None):
    """What fold f contributes to the held-out decision values: None (no rows), ("one", the
    only class of its training part or None), or ("model", its model's decision values on
    the fold, the model's labels, its multiclass)."""
    from budgetsvm.train import train
    test = fold == f
    if not test.any():
        return None
    y_train = y[~test]
    present = np.unique(y_train)
    if len(present) < 2:
        return "one", (present[0] if len(present) else None)
    sub = train(X[~test], y_train, params,
                sample_weight=None if sample_weight is None else sample_weight[~test],
                warn_overflow=False)
    return "model", (sub.decision_function(X[test]), sub.labels, sub.multiclass)


def _place(F, test, outcome, model):
    """Write fold outcome (_heldout_fold) into the held-out decision values F (columns follow
    ``model``'s decision values, in its label order; fold models whose label order differs
    are mapped onto it)."""
    labels = model.labels
    k = len(labels)
    n_dec = F.shape[1]
    kind, value = outcome
    if kind == "one":
        # LIBSVM's rule for a one-class fold: +1 if that class is the positive one, else -1.
        only = value
        if n_dec == 1:
            F[test, 0] = 0.0 if only is None else (1.0 if only == labels[0] else -1.0)
        else:
            F[test] = -1.0
            if only is not None:
                F[test, int(np.flatnonzero(labels == only)[0])] = 1.0
        return
    G, sub_labels, sub_multiclass = value
    if n_dec == 1:
        sign = 1.0 if sub_labels[0] == labels[0] else -1.0
        F[test, 0] = sign * G[:, 0] if G.shape[1] == 1 else \
            G[:, 0] - G[:, 1] if sub_labels[0] == labels[0] else G[:, 1] - G[:, 0]
        return
    block = np.full((int(test.sum()), k), -1.0)
    if sub_multiclass == "binary":
        # A two-class fold model of a k-class problem: ±f for its two classes.
        for c, sgn in ((sub_labels[0], 1.0), (sub_labels[1], -1.0)):
            block[:, int(np.flatnonzero(labels == c)[0])] = sgn * G[:, 0]
    else:
        for col, c in enumerate(sub_labels):
            block[:, int(np.flatnonzero(labels == c)[0])] = G[:, col]
    F[test] = block


def _heldout_decision_values(X, y, params, model, outcomes=None, sample_weight=None):
    """Decision values of every training row from models trained without its fold.

    Columns follow ``model``'s decision values (labels order). The folds are trained at the
    same time in the threads of params.n_threads (budgetsvm/threads.py), each fold model with
    its own generators, so the values do not depend on the thread count. outcomes: the
    _heldout_fold results when already computed (train_with_probability)."""
    from budgetsvm import threads
    from budgetsvm.train import stratified_folds
    n = X.shape[0]
    nr_fold = min(N_FOLDS, n)
    fold = stratified_folds(y, nr_fold, params.seed)
    if outcomes is None:
        with threads.pool(params.n_threads):
            outcomes = threads.parallel_map(
                lambda f: _heldout_fold(X, y, params, fold, f, sample_weight), range(nr_fold))
    F = np.zeros((n, 1 if model.multiclass == "binary" else len(model.labels)))
    for f, outcome in enumerate(outcomes):
        if outcome is not None:
            _place(F, fold == f, outcome, model)
    return F


def fit_probability(X, y, params, model, outcomes=None, sample_weight=None):
    """Fit the Platt parameters of ``model`` (trained on X, y with params) in place; returns it.
    sample_weight: the instance weights of the training (the folds' models are trained with
    their rows' weights; the sigmoid fit itself is unweighted, as in LIBSVM).

    Raises BsvmError for one-vs-one models (our solvers never produce them).
    """
    if model.multiclass == "ovo":
        raise BsvmError("probability fitting for one-vs-one models is not supported")
    if model.n_classes == 1:
        # one class (train.one_class_model): its probability is 1 whatever the sigmoid, as the
        # multi-class rule divides its one estimate by itself; (0, 0) gives 1/2 before that
        model.prob_a, model.prob_b = np.zeros(1), np.zeros(1)
        return model
    X = sp.csr_matrix(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    F = _heldout_decision_values(X, y, params, model, outcomes, sample_weight)
    # rows whose ‖x‖² overflows were left out of the training; their decision values (1e199
    # and beyond) would overflow the sigmoid fit's sums and leave A = 0: left out here too
    from budgetsvm.problem import row_sqnorms
    fitted = np.isfinite(row_sqnorms(X))
    if not fitted.all():
        F, y = F[fitted], y[fitted]
    labels = model.labels
    if model.multiclass == "binary":
        pairs = [sigmoid_train(F[:, 0], y == labels[0])]
    else:
        pairs = [sigmoid_train(F[:, c], y == labels[c]) for c in range(len(labels))]
    model.prob_a = np.array([a for a, _ in pairs], dtype=np.float64)
    model.prob_b = np.array([b for _, b in pairs], dtype=np.float64)
    return model


def train_with_probability(X, y, params, callback=None, monitor=None, monitor_test=None,
                           sample_weight=None, *, warn_overflow=True):
    """``train.train`` (with callback, monitor and monitor_test) followed by
    ``fit_probability`` (svm-train -b 1). The model and the internal folds' models are
    independent trainings: they run at the same time in the threads of params.n_threads,
    with the results of one thread."""
    from budgetsvm import threads
    from budgetsvm.train import check_params, stratified_folds, train
    check_params(params)
    X = sp.csr_matrix(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.shape[0] < 2 or np.all(y == y[0]):
        # nothing to split (no rows: train's error) or one class: no sigmoid to fit
        return fit_probability(X, y, params, train(X, y, params, callback=callback,
                                                   monitor=monitor, monitor_test=monitor_test,
                                                   sample_weight=sample_weight,
                                                   warn_overflow=warn_overflow))
    nr_fold = min(N_FOLDS, X.shape[0])
    fold = stratified_folds(y, nr_fold, params.seed)

    def part(index):
        if index == 0:
            return train(X, y, params, callback=callback, monitor=monitor,
                         monitor_test=monitor_test, sample_weight=sample_weight,
                         warn_overflow=warn_overflow)
        return _heldout_fold(X, y, params, fold, index - 1, sample_weight)

    with threads.pool(params.n_threads):
        results = threads.parallel_map(part, range(1 + nr_fold))
    return fit_probability(X, y, params, results[0], outcomes=results[1:],
                           sample_weight=sample_weight)


def fold_predictions_with_probability(X, y, test, params):
    """train.fold_predictions with -b 1: the rows ``test`` (a boolean mask) labelled by the class
    of largest probability of a model trained with its probabilities on the other rows (a
    training part of one class predicts it). TrainingDiverged when that model is not finite."""
    from budgetsvm.model_io import ensure_finite
    present = np.unique(y[~test])
    if len(present) == 1:
        return np.full(int(np.count_nonzero(test)), present[0])
    from budgetsvm.train import warn_fold_max_iter
    model = ensure_finite(train_with_probability(X[~test], y[~test], params,
                                                 warn_overflow=False))
    return predict_with_proba(warn_fold_max_iter(model), X[test])[0]


def cross_validation_with_probability(X, y, params, nr_fold, on_fold=None):
    """train.cross_validation for -b 1, as svm-train -b 1 -v: every fold's model is trained
    with its probabilities (train_with_probability, its own internal folds) on the other folds,
    and predicts the class of largest probability (predict_with_proba); a training part of one
    class predicts it. Same folds, threads and determinism as train.cross_validation."""
    from budgetsvm import threads
    from budgetsvm.train import (check_params, naming_the_fold, stratified_folds,
                                 warn_overflow_rows)
    check_params(params)
    X = sp.csr_matrix(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    warn_overflow_rows(X, params)    # once, about the whole data (the folds do not warn)
    fold = stratified_folds(y, nr_fold, params.seed)
    predicted = np.empty(len(y))

    def run(f):
        test = fold == f
        if not test.any():
            return
        with naming_the_fold(f, nr_fold):
            predicted[test] = fold_predictions_with_probability(X, y, test, params)
        if on_fold is not None:
            on_fold(f)

    with threads.pool(params.n_threads):
        threads.parallel_map(run, range(nr_fold))
    return predicted
