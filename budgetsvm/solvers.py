"""The solver registry: one table of what each `-s NAME` is, read by train(), the parameter
checks, the command-line help, the estimators and the grid search instead of spelling names.

Adding a solver is one :func:`register` call with a :class:`SolverSpec` whose ``fit`` has the
signature of every solver wrapper (see SolverSpec); docs/DEVELOPING.md, "Adding a solver",
lists the rest (tests, docs/ALGORITHMS.md).
"""
import dataclasses
import importlib

from budgetsvm.errors import ParameterError

KINDS = ("kernel", "linear")


@dataclasses.dataclass(frozen=True)
class SolverSpec:
    """One ``-s NAME``. ``fit`` trains it; every solver wrapper has the one signature

        fit(X, y_index, labels, params, callback=None, *, monitor=None, monitor_test=None,
            **options) -> model

    X: CSR float64 (n × d); y_index: int32 class of every row in label order; labels: float64
    class labels (labels.group_classes); params: TrainParams; callback(step, text): progress,
    counting up to train.progress_total. monitor(row), monitor_test = (X_test CSR, test class
    indices, −1 for a label unknown to the training data): one dict per epoch; train() passes
    them only when a monitor is asked for and only to solvers registered ``monitorable``, so the
    others may leave them out (the package's own take them and refuse a monitor, check_monitor).
    options: the solver's own keyword-only arguments with defaults (bsgd, bsca: compare_merges;
    ww: gap_every), for the Python API and the benchmarks; train() passes only
    ``sample_weight`` (positive instance weights that multiply the rows' costs C·w_{y_i}), and
    only when the caller gave it: every solver here takes it. The model
    (KernelModel or LinearModel) carries ``train_info``, the solver's diagnostics.
    """
    name: str
    kind: str                     # "kernel" (a kernel model) or "linear" (dense weights)
    fit: object                   # the fit function, or "module:attribute" imported on first use
    description: str              # one line for the command-line help
    estimator: str                # the scikit-learn estimator class that runs it
    default_eps: float | None = None     # -e default (None: the solver has no tolerance)
    # --max-iter default of a linear solver: LIBLINEAR's limit for the same kind of solver
    default_max_iter: int = 1000
    monitorable: bool = False     # --monitor: per-epoch rows
    streamable: bool = False      # --stream: trains from a file read in buffers
    # linear solvers: weight vectors per class (True: k even for two classes, as ww)
    joint_multiclass: bool = False
    # the end-of-training lines: a function (info, stats=False) -> lines, or "module:attribute";
    # None: one "key = value" line of the training statistics
    summary: object = None

    def fit_function(self):
        return _resolve(self.fit)

    def summary_function(self):
        return _resolve(self.summary) if self.summary is not None else None


def _resolve(target):
    if callable(target):
        return target
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


_REGISTRY = {}


def register(spec):
    """Add (or replace) a solver; it is then accepted everywhere by its name."""
    if spec.kind not in KINDS:
        raise ValueError(f"solver kind must be one of {KINDS}, got {spec.kind!r}")
    _REGISTRY[spec.name] = spec
    return spec


def get(name):
    """The spec of solver ``name``, or ParameterError naming the known ones."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ParameterError(f"unknown solver {name!r}; choose one of {', '.join(names())}") \
            from None


def names(kind=None, estimator=None):
    """Registered solver names in registration order, optionally of one kind or estimator."""
    return tuple(s.name for s in _REGISTRY.values()
                 if (kind is None or s.kind == kind) and
                 (estimator is None or s.estimator == estimator))


def check_monitor(name, monitor):
    """ParameterError when a monitor is given to solver ``name`` and it reports no per-epoch rows
    (--monitor)."""
    if monitor is not None and not get(name).monitorable:
        raise ParameterError("--monitor is available for -s "
                             + " and -s ".join(n for n in names() if get(n).monitorable)
                             + " only")


def is_linear(name):
    return name in _REGISTRY and _REGISTRY[name].kind == "linear"


def is_kernel(name):
    return name in _REGISTRY and _REGISTRY[name].kind == "kernel"


# The five solvers (docs/ALGORITHMS.md §1, §3, §4, §5). Linear ones first, as LIBLINEAR lists
# its solvers; bsgd is the command-line default.
register(SolverSpec(
    "dcd", "linear", "budgetsvm.dcd:train_linear",
    "linear SVM by dual coordinate descent with shrinking (LIBLINEAR -s 3 / -s 1)",
    "LinearSVC", default_eps=0.1, summary="budgetsvm.dcd:info_lines"))
register(SolverSpec(
    "acf", "linear", "budgetsvm.dcd:train_linear",
    "linear SVM by dual coordinate descent with adaptive coordinate frequencies",
    "LinearSVC", default_eps=0.1, summary="budgetsvm.dcd:info_lines"))
register(SolverSpec(
    "ww", "linear", "budgetsvm.ww:train_ww",
    "linear Weston-Watkins multi-class SVM (block coordinate descent, Walrus)",
    "WWLinearSVC", default_eps=0.0009, joint_multiclass=True,
    # LIBLINEAR -s 4, the other solver of a joint multi-class SVM, stops at 100,000 iterations:
    # on mnist ww needs ~2,500 at C = 1 and ~10,000 at C = 4 to meet its gap test
    default_max_iter=100000))
register(SolverSpec(
    "bsgd", "kernel", "budgetsvm.bsgd:train_bsgd",
    "budgeted kernel SVM by stochastic gradient descent (the default)",
    "BudgetSVC", monitorable=True, streamable=True))
register(SolverSpec(
    "bsca", "kernel", "budgetsvm.bsca:train_bsca",
    "budgeted kernel SVM by stochastic coordinate ascent on the dual",
    "BudgetSVC", monitorable=True))
