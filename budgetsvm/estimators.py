"""scikit-learn-compatible estimators: ``BudgetSVC``, ``LinearSVC``, ``WWLinearSVC``.

They train through ``budgetsvm.train.train`` (the code path of bsvm-train) and hold the
resulting model in ``model_``; ``save``/``load`` use the model files of bsvm-train/bsvm-predict,
so a model trained here predicts identically with ``bsvm-predict`` and vice versa.

scikit-learn is optional: when it is importable the estimators derive from its ``BaseEstimator``
and ``ClassifierMixin`` (and pass its ``check_estimator`` suite, except that LinearSVC's and
WWLinearSVC's weighted and repeated rows agree to their tolerance tol, not to the suite's 1e-7:
tests/test_estimators.py); otherwise a small fallback
provides get_params/set_params/score. It is imported when this module is first used, never by
``import budgetsvm``.

Conventions (documented in README.md, "Python API"):

* ``classes_`` is sorted (scikit-learn's order); the model inside keeps LIBSVM's label order
  (first appearance, +1 before −1). ``decision_function`` is reordered accordingly: shape (n,)
  for two classes (positive means ``classes_[1]``), (n, k) in ``classes_`` order otherwise.
* Numeric labels are kept as they are in the model file; other labels (strings) are encoded as
  0..k−1 in ``classes_`` order, and ``save`` refuses them (model files hold numbers).
* ``random_state``: an int is the ``--seed``; ``None`` means the CLI default seed 1, so that
  ``BudgetSVC()`` reproduces ``bsvm-train`` exactly (not a fresh random seed as in
  scikit-learn); a ``numpy.random.RandomState`` draws a seed from it.
* ``class_weight``: a dict {label: weight} (``-wLABEL weight``) or ``'balanced'``
  (weight n/(k·n_c) per class, as scikit-learn).
* ``sample_weight``: instance weights multiply the rows' costs, C·w_{y_i}·sample_weight[i], in
  every solver (the dual box of dcd, acf, ww and bsca, the loss weight of bsgd's steps, and the
  refit's loss); weights of 0 leave their rows out, as if not given (``classes_`` holds the
  classes of the other rows); equal weights w are C·w exactly (the model of
  ``bsvm-train -c C·w``). For probability=True, the internal folds' models are trained with
  their rows' weights and the sigmoid fit is unweighted, as in LIBSVM.
* Bytes: the refit of ``BudgetSVC`` (the default polish) uses BLAS, whose multi-threaded sums
  differ in the last bits from single-threaded ones. The command-line tools run BLAS on one
  thread; to get bsvm-train's model bytes from Python, set OPENBLAS_NUM_THREADS=1 (MKL:
  MKL_NUM_THREADS=1) before numpy is imported. Predictions agree either way.
* ``probability=True`` fits Platt scaling by internal 5-fold CV (budgetsvm.probability) and
  enables ``predict_proba``; ``predict`` stays the decision-value label.
* ``n_jobs``: threads for fit (one-vs-rest models, the refit's columns, the probability
  folds) and for predict/decision_function/predict_proba (blocks of rows), as bsvm-train's
  ``-n``: None (the default) or -1 means the cores available to the process, -2 all but one,
  and the results do not depend on it. Inside a meta-estimator that runs fits in parallel
  itself (GridSearchCV(n_jobs=...)), set n_jobs=1 here.
"""
import numbers
import re
import warnings

import numpy as np
import scipy.sparse as sp

from budgetsvm import probability as _probability
from budgetsvm import solvers as _solvers
from budgetsvm import threads as _threads
from budgetsvm.errors import BsvmError
from budgetsvm.params import DEFAULTS as _D
from budgetsvm.params import OPTIONS as _OPTIONS
from budgetsvm.params import TrainParams, check_params, is_real
from budgetsvm.problem import canonical_csr, check_sparse_structure

try:  # scikit-learn is optional
    from sklearn.base import BaseEstimator as _Base
    from sklearn.base import ClassifierMixin as _Mixin
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted
    try:
        from sklearn.utils.validation import validate_data as _validate_data
    except ImportError:  # scikit-learn < 1.6
        def _validate_data(est, *args, **kw):
            return est._validate_data(*args, **kw)
    from sklearn.exceptions import ConvergenceWarning
    HAVE_SKLEARN = True
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    HAVE_SKLEARN = False

    class ConvergenceWarning(UserWarning):
        """A solver stopped at max_iter before its stopping tolerance (scikit-learn's name)."""

    class _Base:
        """get_params/set_params over the __init__ arguments (scikit-learn's contract)."""

        @classmethod
        def _get_param_names(cls):
            import inspect
            sig = inspect.signature(cls.__init__)
            return sorted(p for p in sig.parameters if p != "self")

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}")
                setattr(self, key, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class _Mixin:
        _estimator_type = "classifier"

        def score(self, X, y, sample_weight=None):
            pred = self.predict(X)
            return float(np.average(pred == np.asarray(y), weights=sample_weight))

    def check_classification_targets(y):
        if np.asarray(y).dtype.kind == "f" and not np.all(np.mod(y, 1) == 0):
            raise ValueError("Unknown label type: continuous targets")

    def check_is_fitted(est, attributes=None):
        if not hasattr(est, "model_"):
            raise AttributeError(f"This {type(est).__name__} instance is not fitted yet")

    def _validate_data(est, X, y=None, reset=True, accept_sparse=None, **kw):
        X = X if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError("Expected a 2-D array")
        if not np.all(np.isfinite(X.data if sp.issparse(X) else X)):
            raise ValueError("Input contains NaN or infinity")
        if reset:
            est.n_features_in_ = X.shape[1]
        elif hasattr(est, "n_features_in_") and X.shape[1] != est.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is "
                             f"expecting {est.n_features_in_} features as input")
        if y is None:
            return X
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        if len(y) != X.shape[0]:
            raise ValueError("X and y have inconsistent numbers of samples")
        return X, y


def _available_if_probability(method):
    """``method`` exists only on estimators with probability=True (scikit-learn's pattern)."""
    if HAVE_SKLEARN:
        from sklearn.utils._available_if import available_if

        def check(self):
            if not self.probability:
                raise AttributeError("predict_proba is available only with probability=True")
            return True
        return available_if(check)(method)
    return method


class _BudgetSVMBase(_Mixin, _Base):
    """Shared fit/predict machinery; subclasses define _train_params() and _ESTIMATOR, the name
    under which the solver registry (budgetsvm/solvers.py) lists the solvers they run."""

    _ESTIMATOR = None

    @property
    def _SOLVERS(self):
        return _solvers.names(estimator=self._ESTIMATOR)

    # -- scikit-learn tags ---------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"requires_y": True}

    # -- parameters ----------------------------------------------------------------------
    def _seed(self):
        rs = self.random_state
        if rs is None:
            return 1
        if isinstance(rs, numbers.Integral):
            if rs < 0:
                raise ValueError(f"random_state must be >= 0, got {rs}")
            return int(rs)
        if isinstance(rs, np.random.RandomState):
            return int(rs.randint(0, 2**31 - 1))
        raise ValueError(f"random_state must be None, an int or a RandomState, got {rs!r}")

    def _class_weights(self, y_values, counts):
        cw = self.class_weight
        if cw is None:
            return {}
        if isinstance(cw, str):
            if cw != "balanced":
                raise ValueError(f"class_weight must be a dict or 'balanced', got {cw!r}")
            n, k = counts.sum(), len(counts)
            return {float(v): float(n / (k * c)) for v, c in zip(y_values, counts)}
        if not isinstance(cw, dict):
            raise ValueError(f"class_weight must be a dict or 'balanced', got {cw!r}")
        out = {}
        for label, weight in cw.items():
            matches = np.flatnonzero(self.classes_ == label)
            if len(matches) == 0:
                raise ValueError(f"class_weight: label {label!r} is not in the training data")
            # checked here, where the label is the caller's (the model's may be an encoding)
            if not (is_real(weight) and np.isfinite(weight) and weight > 0):
                raise ValueError(f"class_weight[{label!r}] must be a positive number, got "
                                 f"{weight!r}")
            out[float(self._values_[matches[0]])] = float(weight)
        return out

    def _threads(self):
        try:
            if self.n_jobs is not None and (not isinstance(self.n_jobs, numbers.Integral)
                                            or isinstance(self.n_jobs, bool)):
                raise TypeError
            return _threads.resolve(self.n_jobs)
        except (TypeError, ValueError):
            raise ValueError(f"n_jobs must be None or a non-zero integer, got "
                             f"{self.n_jobs!r}") from None

    def _check_solver(self):
        if self.solver not in self._SOLVERS:
            raise ValueError(f"solver must be one of {', '.join(self._SOLVERS)}, "
                             f"got {self.solver!r}")

    # -- fitting -------------------------------------------------------------------------
    def __sklearn_is_fitted__(self):
        return hasattr(self, "model_")

    def fit(self, X, y, sample_weight=None):
        """Train on X (dense or sparse, n × d) and labels y; returns self.

        A fit that fails or is interrupted (Ctrl-C) leaves the estimator as it was: the fitted
        attributes of an earlier fit stay together, or a fresh estimator stays unfitted."""
        before = {name: value for name, value in vars(self).items() if _is_fitted(name)}
        try:
            return self._fit(X, y, sample_weight)
        except BaseException:
            for name in [name for name in vars(self) if _is_fitted(name)]:
                delattr(self, name)
            vars(self).update(before)
            raise

    def _fit(self, X, y, sample_weight):
        self._check_solver()
        check_sparse_structure(X)       # before scikit-learn's conversions, which trust it
        X, y = _validate_data(self, X, y, accept_sparse=["csr", "csc", "coo"],
                              dtype=np.float64, reset=True)
        check_classification_targets(y)
        X = _as_csr(X)
        scale, row_weight = 1.0, None
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=np.float64)
            if w.ndim == 0:                  # a number: every row's weight (scikit-learn's)
                w = np.full(X.shape[0], float(w))
            if w.shape != (X.shape[0],):
                raise ValueError(f"sample_weight has shape {w.shape}, expected "
                                 f"({X.shape[0]},)")
            if not np.all(np.isfinite(w)) or (w < 0).any():
                raise ValueError("sample_weight must be finite and non-negative")
            positive = w > 0
            if not positive.any():
                raise ValueError("sample_weight: all weights are zero")
            if not positive.all():
                X, y, w = X[positive], y[positive], w[positive]
            if np.all(w == w[0]):
                # equal weights are C times the weight: the model of bsvm-train -c C·w
                scale = float(w[0])
            else:
                row_weight = w
        # the classes of the rows trained on: a row of weight 0 is left out as if not given
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        y_idx = y_idx.ravel()
        if _labels_are_numbers(self.classes_):
            self._values_ = self.classes_.astype(np.float64)
        else:
            self._values_ = np.arange(len(self.classes_), dtype=np.float64)
        present, counts = np.unique(y_idx, return_counts=True)
        if len(present) < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least two classes; "
                             f"got 1 class ({self.classes_[present[0]]!r})")
        _check_flag("probability", self.probability)
        params = self._train_params(X)
        params.seed = self._seed()
        params.class_weights = self._class_weights(self._values_[present], counts)
        params.n_threads = self._threads()
        y_values = self._values_[y_idx]
        from budgetsvm.train import train
        try:
            check_params(params)        # before C is scaled, so that C=None names C
            params.C = float(params.C) * scale
            if not (np.isfinite(params.C) and params.C > 0):
                raise ValueError(f"C = {self.C!r} times the equal sample_weight ({scale:g}) is "
                                 f"{params.C:g}: it must be a finite positive number")
            if self.probability:
                self.model_ = _probability.train_with_probability(X, y_values, params,
                                                                  sample_weight=row_weight)
            else:
                self.model_ = train(X, y_values, params, sample_weight=row_weight)
        except BsvmError as exc:
            raise ValueError(self._in_parameter_names(str(exc))) from None
        self._setup_order()
        info = getattr(self.model_, "train_info", None)
        n_iter = _n_iter(info)
        if n_iter is not None:
            self.n_iter_ = n_iter
        from budgetsvm.train import max_iter_reached
        if max_iter_reached(info):
            warnings.warn(f"{type(self).__name__}: the solver stopped at max_iter before its "
                          "stopping tolerance tol was met; increase max_iter (0 = unlimited) "
                          "or tol", ConvergenceWarning, stacklevel=3)
        return self

    # parameter names of the estimator for TrainParams fields (their bsvm-train flags are in
    # params.OPTIONS): error messages name the parameter the caller gave, not the flag
    _PARAMETERS = {"solver": "solver", "C": "C", "class_weights": "class_weight",
                   "seed": "random_state", "n_threads": "n_jobs"}

    def _in_parameter_names(self, message):
        """message (written for bsvm-train) with its flags replaced by this estimator's
        parameter names: '-c must be positive' -> 'C must be positive', '--maintenance merge
        needs ... (-t 2)' -> "maintenance='merge' needs ... (kernel='rbf')", '-w3' ->
        'class_weight[3]'."""
        by_flag = {}
        for field, parameter in self._PARAMETERS.items():
            for flag in _OPTIONS[field].flags:
                by_flag[flag] = (parameter, _OPTIONS[field])

        def rename(match):
            flag, value = match.group(1), match.group(2)
            if flag not in by_flag:
                if re.fullmatch(r"-w[-+.\w]+", flag):      # -wLABEL
                    return f"class_weight[{flag[2:]}]" + (f" {value}" if value else "")
                return match.group(0)
            parameter, option = by_flag[flag]
            choices = option.type if isinstance(option.type, tuple) else ()
            chosen = (option.aliases or {}).get(value, value) if value else None
            if chosen in choices:
                return f"{parameter}={chosen!r}"
            return parameter + (f" {value}" if value else "")
        return re.sub(r"(?<![\w-])(--?[A-Za-z][\w-]*)(?: ([\w.+-]+))?", rename, message)

    def _setup_order(self):
        """Map model label order (first appearance) to classes_ order (sorted)."""
        labels = self.model_.labels
        self._order_ = np.array([int(np.flatnonzero(labels == v)[0]) if (labels == v).any()
                                 else -1 for v in self._values_])

    # -- prediction ----------------------------------------------------------------------
    def _check_X(self, X):
        check_is_fitted(self, "model_")
        check_sparse_structure(X)
        X = _validate_data(self, X, accept_sparse=["csr", "csc", "coo"], dtype=np.float64,
                           reset=False)
        return _as_csr(X)

    def decision_function(self, X):
        """(n,) for two classes (> 0 means classes_[1]); (n, k) in classes_ order otherwise.

        LIBSVM one-vs-one models loaded from files give their k(k−1)/2 pairwise values in the
        file's pair order."""
        X = self._check_X(X)
        with _threads.pool(self._threads()):
            F = self.model_.decision_function(X)
        model = self.model_
        if model.multiclass == "ovo" and len(self.classes_) > 2:
            return F
        if len(self.classes_) == 1:
            return F[:, 0]                  # a model of one class (loaded): 0 for every row
        if F.shape[1] == 1:
            # positive ↔ model.labels[0]
            return F[:, 0] if model.labels[0] == self._values_[1] else -F[:, 0]
        F = F[:, self._order_]
        if len(self.classes_) == 2:
            return F[:, 1] - F[:, 0]
        return F

    def predict(self, X):
        """Predicted classes (the decision-value label, as bsvm-predict without -b)."""
        X = self._check_X(X)
        with _threads.pool(self._threads()):
            values, undefined = self.model_.predict_counting_nan(X)
        if undefined:
            from budgetsvm.model import nan_rows_message
            warnings.warn(nan_rows_message(undefined), RuntimeWarning, stacklevel=2)
        return self.classes_[np.searchsorted(self._values_, values)]

    @_available_if_probability
    def predict_proba(self, X):
        """Class probabilities (n, k) in classes_ order (models fitted with probability=True)."""
        X = self._check_X(X)
        if not _probability.has_probability(self.model_):
            raise ValueError("the model has no probability information: fit with "
                             "probability=True")
        with _threads.pool(self._threads()):
            return _probability.predict_proba(self.model_, X)[:, self._order_]

    @_available_if_probability
    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))

    # -- model files ---------------------------------------------------------------------
    def save(self, path, format="native"):
        """Write the model file bsvm-predict reads (format: native, liblinear or libsvm),
        atomically; ``-`` writes it to standard output, as bsvm-train does."""
        check_is_fitted(self, "model_")
        if not _labels_are_numbers(self.classes_):
            raise ValueError("save() needs numeric class labels that are exact as float64 "
                             "numbers: model files store labels as such numbers")
        from budgetsvm.model_io import save_model
        try:
            save_model(self.model_, path, format)
        except BsvmError as exc:
            raise ValueError(str(exc)) from None

    @classmethod
    def load(cls, path, zero_based=False):
        """An estimator holding the model in file ``path`` (any format bsvm-predict reads).

        Its hyperparameters are the constructor defaults (plus the solver named in the file);
        only ``model_`` is taken from the file. With probability information in the file,
        ``probability`` is True. zero_based: a LIBSVM file's feature indices start at 0 (a
        model of 0-based data, bsvm-predict --zero-based); column j of X is index j then."""
        return cls._from_model(_load_model(path, zero_based))

    @classmethod
    def _from_model(cls, model):
        from budgetsvm.model import KernelModel
        est = cls()
        if cls is not _BudgetSVMBase:
            expected = BudgetSVC if isinstance(model, KernelModel) else \
                (WWLinearSVC if model.multiclass == "ww" else LinearSVC)
            if not issubclass(cls, expected) and not issubclass(expected, cls):
                est = expected()
        if model.solver in est._SOLVERS:
            est.solver = model.solver
        est.probability = _probability.has_probability(model)
        est.model_ = model
        est.classes_ = np.sort(model.labels)
        est._values_ = est.classes_.copy()
        if model.solver != "libsvm":
            est.n_features_in_ = int(model.n_features)
        # else no n_features_in_, so X of any width is taken, as by bsvm-predict: a LIBSVM file
        # gives no width, only the largest feature index of its support vectors (none at all
        # for a model of one class), below the training data's when the top features are on
        # no support vector
        est._setup_order()
        return est


def _is_fitted(name):
    """An attribute that fit sets (scikit-learn's trailing underscore), not a parameter."""
    return name.endswith("_") and not name.startswith("__")


def _labels_are_numbers(classes):
    """Whether the (sorted, distinct) labels are kept as their float64 values: numbers that
    float64 holds exactly (int64 labels above 2^53 would collapse into one class)."""
    if classes.dtype.kind not in "biuf":
        return False
    values = classes.astype(np.float64)
    with np.errstate(invalid="ignore"):     # 2^63 - 1 rounds to 2^63, beyond int64
        back = values.astype(classes.dtype)
    return bool(np.all(np.isfinite(values)) and len(np.unique(values)) == len(classes)
                and np.array_equal(back, classes))


def _check_flag(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def _n_iter(info):
    """Outer iterations from a model's train_info (the largest over binary problems)."""
    from budgetsvm.train import problem_infos
    values = [int(d["n_iter"]) for d in problem_infos(info)
              if isinstance(d.get("n_iter"), numbers.Integral)]
    return max(values) if values else None


def _as_csr(X):
    X = canonical_csr(X)          # never sums the caller's duplicates in place
    if X.indices.dtype != np.int32 and X.shape[1] < 2**31 and X.nnz < 2**31:
        X.indices = X.indices.astype(np.int32)
        X.indptr = X.indptr.astype(np.int32)
    return X


def _load_model(path, zero_based):
    """model_io.load_model with Python's exceptions: FileNotFoundError for a file that does not
    exist, ValueError for one that is not a model file (as save raises ValueError)."""
    import errno
    import os
    from budgetsvm.model_io import load_model
    if os.fspath(path) != "-" and not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, "no such file", os.fspath(path))
    try:
        return load_model(path, zero_based=zero_based)
    except BsvmError as exc:
        raise ValueError(str(exc)) from None


def load(path, zero_based=False):
    """The estimator for a model file: BudgetSVC (kernel), WWLinearSVC (Weston–Watkins) or
    LinearSVC (other linear models); zero_based as in BudgetSVC.load."""
    from budgetsvm.model import KernelModel
    model = _load_model(path, zero_based)
    cls = BudgetSVC if isinstance(model, KernelModel) else \
        (WWLinearSVC if model.multiclass == "ww" else LinearSVC)
    return cls._from_model(model)


class BudgetSVC(_BudgetSVMBase):
    """Budgeted kernel SVM (bsvm-train -s bsgd|bsca).

    Parameters map to bsvm-train options: solver (-s), C (-c), kernel (-t: 'rbf', 'linear',
    'poly', 'sigmoid'), gamma (-g; None or 'auto' → 1/n_features, as LIBSVM; 'scale' →
    1/(n_features · X.var()), scikit-learn SVC's default), degree (-d), coef0 (-r), budget
    (--budget), epochs (--epochs), maintenance (None: 'merge' with kernel='rbf', else
    'removal'), merge_search, merge_partners (bsca: 'sign' or 'label'), variant, eta (--eta;
    None → 1), radius (--radius; None → 1),
    polish (--polish: 'refit', the default, refits coefficients and a bias on the support
    vectors; 'none' keeps the solver's last iterate as the papers do), coalesce
    (--coalesce/--no-coalesce; None: on unless polish='none'), class_weight (-w), random_state
    (--seed; None → 1), probability (-b 1), n_jobs (-n; None → the cores).
    """

    _ESTIMATOR = "BudgetSVC"
    _PARAMETERS = {**_BudgetSVMBase._PARAMETERS, **{name: name for name in (
        "kernel", "gamma", "degree", "coef0", "budget", "epochs", "maintenance", "merge_search",
        "merge_partners", "variant", "eta", "radius", "polish", "coalesce")}}

    # defaults: TrainParams' (budgetsvm/params.py, DEFAULTS), the ones bsvm-train has
    def __init__(self, solver=_D.solver, C=_D.C, kernel=_D.kernel, gamma=_D.gamma,
                 degree=_D.degree, coef0=_D.coef0, budget=_D.budget, epochs=_D.epochs,
                 maintenance=_D.maintenance, merge_search=_D.merge_search,
                 merge_partners=_D.merge_partners, variant=_D.variant, eta=_D.eta,
                 radius=_D.radius, polish=_D.polish, coalesce=_D.coalesce, class_weight=None,
                 random_state=None, probability=False, n_jobs=None):
        self.solver = solver
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.budget = budget
        self.epochs = epochs
        self.maintenance = maintenance
        self.merge_search = merge_search
        self.merge_partners = merge_partners
        self.variant = variant
        self.eta = eta
        self.radius = radius
        self.polish = polish
        self.coalesce = coalesce
        self.class_weight = class_weight
        self.random_state = random_state
        self.probability = probability
        self.n_jobs = n_jobs

    def _train_params(self, X):
        return TrainParams(solver=self.solver, C=self.C, kernel=self.kernel,
                           gamma=_kernel_gamma(self.gamma, X),
                           degree=self.degree, coef0=self.coef0, budget=self.budget,
                           epochs=self.epochs, maintenance=self.maintenance,
                           merge_search=self.merge_search,
                           merge_partners=self.merge_partners, variant=self.variant, eta=self.eta,
                           radius=self.radius, polish=self.polish, coalesce=self.coalesce)


def _kernel_gamma(gamma, X):
    """BudgetSVC's gamma for TrainParams: scikit-learn's 'scale', 1 / (n_features · X.var())
    with the variance over every entry of X, zeros included (1 when X is constant), and 'auto',
    1 / n_features (LIBSVM's default, as None); a number passes through (check_params judges
    it)."""
    if not isinstance(gamma, str):
        return gamma
    if gamma == "auto":
        return None
    if gamma != "scale":
        raise ValueError(f"gamma must be a positive number, 'scale', 'auto' or None, "
                         f"got {gamma!r}")
    n, d = X.shape
    entries = float(n) * float(d)
    if entries == 0:
        return None
    mean = float(X.data.sum()) / entries
    variance = float(X.data @ X.data) / entries - mean * mean
    return 1.0 / (d * variance) if variance > 0 else 1.0


_LOSSES = {"l1": "l1", "hinge": "l1", "l2": "l2", "squared_hinge": "l2"}


class LinearSVC(_BudgetSVMBase):
    """Linear SVM by dual coordinate descent (bsvm-train -s dcd|acf), one-vs-rest for k > 2.

    C (-c), loss ('l1'/'hinge' or 'l2'/'squared_hinge', --loss), tol (-e; None → 0.1),
    max_iter (--max-iter; None → 1000, 0 → unlimited), fit_intercept/intercept_scaling (-B intercept_scaling when
    fit_intercept, else -B -1; the intercept is regularised, as LIBLINEAR's), class_weight,
    random_state (--seed), probability (-b 1), n_jobs (-n). Note: fit_intercept=True is the
    default here (scikit-learn's), while bsvm-train's default is -B -1; loss defaults to 'l1'
    (the hinge, bsvm-train's and LIBLINEAR -s 3's), scikit-learn's LinearSVC to squared_hinge.
    """

    _ESTIMATOR = "LinearSVC"
    _PARAMETERS = {**_BudgetSVMBase._PARAMETERS, "eps": "tol", "max_iter": "max_iter",
                   "loss": "loss", "bias": "intercept_scaling"}

    def __init__(self, solver="dcd", C=_D.C, loss=_D.loss, tol=_D.eps, max_iter=_D.max_iter,
                 fit_intercept=True, intercept_scaling=1.0, class_weight=None,
                 random_state=None, probability=False, n_jobs=None):
        self.solver = solver
        self.C = C
        self.loss = loss
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.random_state = random_state
        self.probability = probability
        self.n_jobs = n_jobs

    def _train_params(self, X):
        if not isinstance(self.loss, str) or self.loss not in _LOSSES:
            raise ValueError(f"loss must be one of {', '.join(_LOSSES)}, got {self.loss!r}")
        _check_flag("fit_intercept", self.fit_intercept)
        scaling = self.intercept_scaling
        if self.fit_intercept and not (is_real(scaling) and scaling > 0):
            raise ValueError(f"intercept_scaling must be a positive number, got {scaling!r}")
        return TrainParams(solver=self.solver, C=self.C, loss=_LOSSES[self.loss], eps=self.tol,
                           max_iter=self.max_iter,
                           bias=float(scaling) if self.fit_intercept else -1.0)

    @property
    def coef_(self):
        """Weights (1, d) for two classes (positive → classes_[1]), (k, d) otherwise."""
        return _linear_coef(self)[0]

    @property
    def intercept_(self):
        return _linear_coef(self)[1]


def _linear_coef(est):
    check_is_fitted(est, "model_")
    m = est.model_
    coef, icpt = m.coef, m.bias_coef * max(m.bias, 0.0)
    if m.multiclass == "binary":
        sign = 1.0 if m.labels[0] == est._values_[1] else -1.0
        return sign * coef, sign * icpt
    coef, icpt = coef[est._order_], icpt[est._order_]
    if len(est.classes_) == 2:
        return (coef[1] - coef[0])[None, :], np.array([icpt[1] - icpt[0]])
    return coef, icpt


class WWLinearSVC(_BudgetSVMBase):
    """Weston–Watkins multi-class linear SVM (bsvm-train -s ww).

    C (-c), tol (-e; None → 0.0009 relative gap), max_iter (--max-iter; None → 100000, as
    LIBLINEAR -s 4), bias (-B; default 1,
    a constant feature of that value, < 0 for none), subsolver (--ww-subsolver: 'walrus' or
    'iterative'), class_weight, random_state (--seed), probability (-b 1), n_jobs (-n).
    """

    _ESTIMATOR = "WWLinearSVC"
    _PARAMETERS = {**_BudgetSVMBase._PARAMETERS, "eps": "tol", "max_iter": "max_iter",
                   "bias": "bias", "ww_subsolver": "subsolver"}

    def __init__(self, solver="ww", C=_D.C, tol=_D.eps, max_iter=_D.max_iter, bias=1.0,
                 subsolver=_D.ww_subsolver, class_weight=None, random_state=None, probability=False,
                 n_jobs=None):
        self.solver = solver
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.bias = bias
        self.subsolver = subsolver
        self.class_weight = class_weight
        self.random_state = random_state
        self.probability = probability
        self.n_jobs = n_jobs

    def _train_params(self, X):
        return TrainParams(solver=self.solver, C=self.C, eps=self.tol, max_iter=self.max_iter,
                           bias=float(self.bias) if is_real(self.bias) else self.bias,
                           ww_subsolver=self.subsolver)

    @property
    def coef_(self):
        return _linear_coef(self)[0]

    @property
    def intercept_(self):
        return _linear_coef(self)[1]
