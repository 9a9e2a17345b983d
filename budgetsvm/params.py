"""Training parameters: one dataclass shared by the CLI, the Python API and grid search, and one
check function run before any work (LIBSVM's check_parameter idea)."""
import dataclasses
import math
import numbers
import sys

from budgetsvm import solvers
from budgetsvm.errors import ParameterError

# The solvers are listed, with what each is, in the registry (budgetsvm/solvers.py).
KERNELS = ("linear", "poly", "rbf", "sigmoid")
MAINTENANCE = ("removal", "projection", "merge")
MERGE_SEARCH = ("gss", "gss-precise", "lookup-h", "lookup-wd")
MERGE_PARTNERS = ("sign", "label")
VARIANTS = ("pegasos", "norma", "mp")
# What bsgd/bsca do after their epochs: refit coefficients and a bias on the support vectors
# (budgetsvm/refit.py), or keep the last iterate as the papers do.
POLISH = ("refit", "none")
LOSSES = ("l1", "l2")                 # dcd/acf: hinge (l1) or squared hinge (l2)
STOPS = ("strict", "classic")         # dcd's stopping test
# The largest values of the integer options, the C types the compiled cores take them in: the
# kernel degree is a C int (as in LIBSVM), and so are --epochs (the n·epochs steps then stay far
# inside the cores' 64-bit step counts) and --budget (the SV store's slots; LIBSVM's counts are
# ints); --max-iter is a Py_ssize_t (any value is "practically unlimited", as 0 is exactly).
INT_MAX = 2**31 - 1
SSIZE_MAX = sys.maxsize
WW_SUBSOLVERS = ("walrus", "iterative")
ON_NONE = ("on", "none")              # --acf-shrink, --ww-shrink


@dataclasses.dataclass
class TrainParams:
    solver: str = "bsgd"
    # model
    C: float = 1.0
    kernel: str = "rbf"
    gamma: float | None = None        # None: 1/num_features, as LIBSVM
    degree: int = 3
    coef0: float = 0.0
    bias: float = -1.0                # LIBLINEAR -B: < 0 means no bias feature
    class_weights: dict = dataclasses.field(default_factory=dict)   # label -> weight (-wLABEL)
    loss: str = "l1"                  # dcd/acf: hinge (l1, LIBLINEAR -s 3) or squared hinge (l2)
    # optimisation
    eps: float | None = None          # None: per-solver default (the registry's default_eps)
    # outer iterations of linear solvers; 0 = unlimited; None: per-solver default (the
    # registry's default_max_iter: 1000 as LIBLINEAR's dual CD up to 2.41 (300 since 2.42),
    # ww 100000 as its -s 4)
    max_iter: int | None = None
    shrinking: bool = True
    stop: str = "strict"              # dcd stopping test: strict (LIBLINEAR >= 2.42) or classic
    seed: int = 1
    # execution: worker threads (-n; None: the cores available to the process, see
    # budgetsvm/threads.py); never changes a result, so never written into a model
    n_threads: int | None = None
    # budgeted kernel solvers
    budget: int = 500
    epochs: int = 5
    # None: merge with the RBF kernel, removal with the others (merging needs the RBF kernel;
    # projection costs O(B²) per step, e.g. 42 s against removal's 2.5 s with -t 1 on a9a, where
    # the refit makes their accuracy equal)
    maintenance: str | None = None
    merge_search: str = "lookup-wd"
    # bsca: binary merging pairs SVs by their label (the authors' code) or by the sign of β
    # (the papers' mode's); None: label, except with polish "none" (docs/ALGORITHMS.md §3.3)
    merge_partners: str | None = None
    variant: str = "pegasos"
    eta: float | None = None
    radius: float | None = None
    polish: str = "refit"
    # bsgd/bsca: a repeated insertion of a training row adds to its stored slot; None: on,
    # except with polish "none", which reproduces the papers' algorithms (they append)
    coalesce: bool | None = None
    # ACF constants (Glasmachers & Dogan 2013; docs/ALGORITHMS.md §4.4)
    acf_c: float = 0.2
    acf_pmin: float | None = None     # None: 0.1 with shrinking, the paper's 0.05 without
    acf_pmax: float | None = None     # None: 10 with shrinking, the paper's 20 without
    acf_shrink: str = "on"            # on: ACF with shrinking; none: the paper's algorithm as is
    # Weston–Watkins
    ww_subsolver: str = "walrus"
    ww_shrink: str = "on"             # on: shrink pairs at a bound; none: Wang & Scott (2021)
    ww_gap: float | None = None       # optional absolute duality-gap tolerance

    def effective_eps(self):
        # the registry's default (LIBLINEAR's -e default for the dual SVM solvers is 0.1)
        if self.eps is not None:
            return self.eps
        default = solvers.get(self.solver).default_eps
        return 0.1 if default is None else default

    def effective_max_iter(self):
        if self.max_iter is not None:
            return int(self.max_iter)
        return solvers.get(self.solver).default_max_iter

    def shown_max_iter(self):
        """The limit a progress display counts iterations against, 0 for none: --max-iter, else
        the solver's default, except ww's (its gap test ends it long before LIBLINEAR -s 4's
        100,000 iterations, so a share of that limit would say nothing)."""
        if self.max_iter is None and self.solver == "ww":
            return 0
        return self.effective_max_iter()

    def effective_coalesce(self):
        return self.polish != "none" if self.coalesce is None else bool(self.coalesce)

    def effective_acf_bounds(self):
        """(p_min, p_max) of ACF: the given ones, else the defaults of the --acf-shrink mode."""
        on = self.acf_shrink != "none"
        return (self.acf_pmin if self.acf_pmin is not None else (0.1 if on else 0.05),
                self.acf_pmax if self.acf_pmax is not None else (10.0 if on else 20.0))

    def effective_maintenance(self):
        if self.maintenance is not None:
            return self.maintenance
        return "merge" if self.kernel == "rbf" else "removal"

    def effective_merge_partners(self):
        # only bsca's merges can pair coefficients of opposite signs (BSGD's share the label's)
        if self.solver != "bsca" or self.effective_maintenance() != "merge":
            return "sign"
        if self.merge_partners is not None:
            return self.merge_partners
        return "sign" if self.polish == "none" else "label"

    def effective_gamma(self, n_features):
        return self.gamma if self.gamma is not None else 1.0 / max(n_features, 1)


# The one place the defaults live: bsvm-train's options and the estimators read them here.
DEFAULTS = TrainParams()


def _number(value):
    return f"{value:g}" if isinstance(value, numbers.Real) else repr(value)


def is_real(value):
    """A number (numpy's too), not a bool: the Python API hands values over unconverted."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _positive(name, value):
    if not (is_real(value) and math.isfinite(value) and value > 0):
        raise ParameterError(f"{name} must be positive, got {_number(value)}")


def _finite(name, value):
    if not (is_real(value) and math.isfinite(value)):
        raise ParameterError(f"{name} must be a finite number, got {_number(value)}")


def _in_range(name, value, low, high, what=""):
    """ParameterError unless value is a whole number with low <= value <= high (an integer
    option; the Python API could pass 2.5 or None); what: a note on the range."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ParameterError(f"{name} must be a whole number from {low} to {high}{what}, "
                             f"got {value!r}")
    if not low <= value <= high:
        raise ParameterError(f"{name} must be from {low} to {high}{what}, got {value}")


def _one_of(name, value, choices):
    if value not in choices:
        raise ParameterError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


def check_params(p: TrainParams):
    """Raise ParameterError naming the option for the first invalid setting. The only check of
    the values: bsvm-train's and bsvm-grid's options are parsed (types, the choices of OPTIONS)
    but checked here, as the estimators' parameters are."""
    if p.solver not in solvers.names():
        raise ParameterError(f"-s: unknown solver {p.solver!r}; use one of "
                             f"{', '.join(solvers.names())}")
    _positive("-c", p.C)
    if p.n_threads is not None and not (isinstance(p.n_threads, numbers.Integral) and p.n_threads >= 1):
        raise ParameterError(f"-n must be a whole number of threads >= 1, got {p.n_threads}")
    if not (isinstance(p.seed, numbers.Integral) and 0 <= p.seed <= 2**63 - 1):
        raise ParameterError(f"--seed must be a whole number from 0 to 2^63-1, got {p.seed}")
    if p.eps is not None:
        _positive("-e", p.eps)
    if p.gamma is not None:
        _positive("-g", p.gamma)
    if p.kernel not in KERNELS:
        hint = " (the precomputed kernel, -t 4, is not supported)" \
            if str(p.kernel).lower() in ("4", "precomputed") else ""
        raise ParameterError(f"-t: unknown kernel {p.kernel!r}{hint}; use 0-3 or "
                             f"{', '.join(KERNELS)}")
    _in_range("-d", p.degree, 0, INT_MAX)
    _finite("-B", p.bias)
    for label, weight in p.class_weights.items():
        if not math.isfinite(label):
            raise ParameterError(f"-w: the label {label:g} is not a finite number")
        if not (is_real(weight) and math.isfinite(weight) and weight > 0):
            raise ParameterError(f"-w{label:g} must be positive, got {_number(weight)}")
    _finite("-r", p.coef0)
    if p.max_iter is not None:
        _in_range("--max-iter", p.max_iter, 0, SSIZE_MAX, " (0 = unlimited)")
    _in_range("--budget", p.budget, 1, INT_MAX)
    _in_range("--epochs", p.epochs, 1, INT_MAX)
    if p.maintenance is not None:
        _one_of("--maintenance", p.maintenance, MAINTENANCE)
    _one_of("--merge-search", p.merge_search, MERGE_SEARCH)
    if p.merge_partners is not None:
        _one_of("--merge-partners", p.merge_partners, MERGE_PARTNERS)
    _one_of("--variant", p.variant, VARIANTS)
    _one_of("--polish", p.polish, POLISH)
    if p.coalesce is not None and not isinstance(p.coalesce, bool):
        raise ParameterError(f"--coalesce must be on or off (True, False or None for the "
                             f"default), got {p.coalesce!r}")
    if p.eta is not None:
        _positive("--eta", p.eta)
    if p.radius is not None:
        _positive("--radius", p.radius)
    if solvers.is_kernel(p.solver) and p.maintenance == "merge" and p.kernel != "rbf":
        raise ParameterError("--maintenance merge needs the RBF kernel (-t 2); use "
                             "--maintenance removal or --maintenance projection with other "
                             "kernels")
    _one_of("--loss", p.loss, LOSSES)
    _one_of("--stop", p.stop, STOPS)
    _one_of("--ww-subsolver", p.ww_subsolver, WW_SUBSOLVERS)
    _one_of("--ww-shrink", p.ww_shrink, ON_NONE)
    _one_of("--acf-shrink", p.acf_shrink, ON_NONE)
    _positive("--acf-c", p.acf_c)
    if p.acf_pmin is not None:
        _positive("--acf-pmin", p.acf_pmin)
        if p.acf_pmin > 1:
            raise ParameterError(f"--acf-pmin must be <= 1 (preferences start at 1), "
                                 f"got {_number(p.acf_pmin)}")
    if p.acf_pmax is not None and not (math.isfinite(p.acf_pmax) and p.acf_pmax >= 1):
        raise ParameterError(f"--acf-pmax must be a finite number >= 1, "
                             f"got {_number(p.acf_pmax)}")


# The option table (issue 17 item 3): for every training option its flags, type, default, help
# and the solvers that read it. bsvm-train's click options (budgetsvm/cli/train.py, whose
# training options bsvm-grid passes through) are built from it, the estimators' defaults are
# TrainParams' (DEFAULTS), and check_params above is the only check of the values. The table
# also says which solver reads which option (issue 20 item 2): an option given on the command
# line that the solver does not read gets a one-line notice; a contradiction is a usage error.
# The keys are the names under which bsvm-train parses the options: TrainParams fields where
# there is one, else the command's own options (-v, -q, --format...), which bsvm-train declares
# itself and which are listed here (type None) for the notices only.
@dataclasses.dataclass(frozen=True)
class Option:
    name: str                          # the TrainParams field (or bsvm-train's parameter name)
    flags: tuple                       # as the user types them (the first is named in messages)
    # the solvers that read it: names, "all" / "kernel" / "linear" for every registered solver
    # (of that kind, budgetsvm/solvers.py), or a test of a SolverSpec, so that a solver added to
    # the registry is covered
    readers: object
    # the value's type, from which the command line builds its parser: float, int, str, bool
    # (one flag: LIBSVM's 0/1 value; two: a --x/--no-x switch), dict (repeated LABEL WEIGHT
    # pairs) or a tuple of the accepted values; None: an option bsvm-train declares itself
    type: object = None
    help: str = ""                     # the --help text; "{solvers}": the registered solvers
    metavar: str | None = None
    aliases: dict | None = None        # other spellings of the values (-t 2 for rbf); any case
    show_default: bool = True          # add [default: ...] to the help (when it is not None)
    hidden: bool = False
    when: object = None                # values -> bool: read only then (by those solvers)
    needs: str = ""                    # what `when` asks for, in words (--variant norma or mp)
    contradiction: object = None       # (solver, values) -> bool: a usage error, not a notice
    reason: str = ""                   # why nobody reads it (-m)

    @property
    def default(self):
        """TrainParams' default (DEFAULTS), None for an option that is not a field."""
        return getattr(DEFAULTS, self.name, None)

    def help_text(self):
        return self.help.replace("{solvers}", ", ".join(solvers.names()))

    @property
    def solvers(self):
        """The registered solvers that read the option, in registry order."""
        if callable(self.readers):
            return tuple(n for n in solvers.names() if self.readers(solvers.get(n)))
        if self.readers == "all":
            return solvers.names()
        if self.readers in solvers.KINDS:
            return solvers.names(self.readers)
        return tuple(n for n in solvers.names() if n in self.readers)


_ALL = "all"
_KERNEL = "kernel"
_LINEAR = "linear"


def _monitorable(spec):
    return spec.monitorable


def _streamable(spec):
    return spec.streamable


def _kernel_contradiction(solver, values):
    return solvers.is_linear(solver) and values.get("kernel") not in (None, "linear")


def _always(solver, values):
    return True


def _merging(values):
    # the options of merging are read when it maintains the budget: given, or the default
    return values.get("maintenance") == "merge" or \
        values.get("maintenance") is None and values.get("kernel", "rbf") == "rbf"


_MERGING = "--maintenance merge (the default with -t 2)"


# LIBSVM's -t numbers, and the long name of the polynomial kernel
KERNEL_ALIASES = {"0": "linear", "1": "poly", "2": "rbf", "3": "sigmoid", "polynomial": "poly"}

# In bsvm-train's --help order; the notices come in this order too.
OPTIONS = {o.name: o for o in (
    Option("solver", ("-s",), _ALL, str, metavar="NAME", show_default=False,
           help="solver: {solvers} (names only; default bsgd with the RBF kernel)"),
    Option("kernel", ("-t",), _KERNEL, KERNELS, aliases=KERNEL_ALIASES, metavar="TYPE",
           show_default=False, contradiction=_kernel_contradiction,
           help="kernel: 0/linear, 1/poly, 2/rbf (default), 3/sigmoid"),
    Option("C", ("-c",), _ALL, float, help="cost C (LIBSVM meaning)"),
    Option("gamma", ("-g",), _KERNEL, float, help="kernel gamma [default 1/num_features]"),
    Option("degree", ("-d",), _KERNEL, int, help="polynomial degree (0 to 2^31-1)"),
    Option("coef0", ("-r",), _KERNEL, float, help="kernel coef0"),
    Option("eps", ("-e",), _LINEAR, float,
           help="stopping tolerance [dcd/acf 0.1, ww 0.0009 relative gap]"),
    Option("bias", ("-B",), _LINEAR, float,
           help="linear solvers: append a constant feature of this value if >= 0 (LIBLINEAR)"),
    Option("shrinking", ("-h",), ("dcd",), bool, show_default=False,
           help="shrinking heuristics for dcd (1 = on)"),
    Option("cache_mb", ("-m",), (), float, hidden=True, reason="budgetsvm keeps no kernel cache"),
    Option("class_weights", ("--class-weight", "-wLABEL"), _ALL, dict, metavar="LABEL WEIGHT",
           help="C of class LABEL becomes WEIGHT*C; repeat it for more classes (a label given "
                "twice: the product, as LIBSVM)"),
    Option("seed", ("--seed",), _ALL, int,
           help="random seed, 0 to 2^63-1 (same seed, data and options give the same model)"),
    Option("n_threads", ("-n",), _ALL, int, metavar="THREADS",
           help="worker threads (>= 1) for the independent parts (one-vs-rest models, folds, "
                "refits, prediction blocks) [default: the cores available]; the model does "
                "not depend on it"),
    Option("max_iter", ("--max-iter",), _LINEAR, int,
           help="linear solvers: maximum outer iterations, 0 (unlimited) to 2^63-1 "
                "[dcd/acf 1000 (LIBLINEAR up to 2.41; 300 since), ww 100000 (as LIBLINEAR -s 4)]"),
    Option("loss", ("--loss",), ("dcd", "acf"), LOSSES,
           help="dcd/acf: hinge (l1, LIBLINEAR -s 3) or squared hinge (l2, -s 1)"),
    Option("stop", ("--stop",), ("dcd",), STOPS,
           help="dcd stopping test: LIBLINEAR >= 2.42 (strict) or classic"),
    Option("budget", ("--budget",), _KERNEL, int,
           help="bsgd/bsca: maximum number of support vectors (1 to 2^31-1)"),
    Option("epochs", ("--epochs",), _KERNEL, int,
           help="bsgd/bsca: passes over the data (1 to 2^31-1)"),
    Option("maintenance", ("--maintenance",), _KERNEL, MAINTENANCE,
           help="bsgd/bsca: budget maintenance [merge with -t 2, else removal]"),
    Option("merge_search", ("--merge-search",), _KERNEL, MERGE_SEARCH,
           when=_merging, needs=_MERGING,
           help="bsgd/bsca: how merging finds its partner (lookup-*: binary merges; "
                "multi-class BSGD merges search by golden section, lookup-* as gss)"),
    Option("merge_partners", ("--merge-partners",), ("bsca",), MERGE_PARTNERS,
           when=_merging, needs=_MERGING,
           help="bsca: merge a support vector with one of the same training label (label, as "
                "the authors' code; a partner of the other sign is projected onto the larger of "
                "the two) or of the same coefficient sign (sign) [label; sign with --polish "
                "none, which reproduces the paper]"),
    Option("variant", ("--variant",), ("bsgd",), VARIANTS, help="bsgd: learning-rate variant"),
    Option("coalesce", ("--coalesce", "--no-coalesce"), _KERNEL, bool,
           help="bsgd/bsca: add a repeated insertion of a training row to its stored slot "
                "instead of taking a new one, so that the budget counts distinct vectors [on; "
                "off with --polish none, which reproduces the papers]"),
    Option("polish", ("--polish",), _KERNEL, POLISH,
           help="bsgd/bsca: after the epochs, refit the coefficients and a bias on the support "
                "vectors (refit) or keep the last iterate, as the papers (none)"),
    Option("eta", ("--eta",), ("bsgd",), float, metavar="ETA",
           when=lambda v: v.get("variant") in ("norma", "mp"), needs="--variant norma or mp",
           help="bsgd --variant norma/mp: learning-rate constant (norma: ETA/sqrt(t) at step t; "
                "mp: ETA) [default 1]"),
    Option("radius", ("--radius",), ("bsgd",), float, metavar="U",
           when=lambda v: v.get("variant") == "mp", needs="--variant mp",
           help="bsgd --variant mp: radius of the ball the weight vector is projected onto "
                "after every step [default 1]"),
    Option("acf_c", ("--acf-c",), ("acf",), float,
           help="acf: preference change rate c (Glasmachers & Dogan 2013)"),
    Option("acf_pmin", ("--acf-pmin",), ("acf",), float,
           help="acf: smallest coordinate preference [0.1; --acf-shrink none: 0.05]"),
    Option("acf_pmax", ("--acf-pmax",), ("acf",), float,
           help="acf: largest coordinate preference [10; --acf-shrink none: 20]"),
    Option("acf_shrink", ("--acf-shrink",), ("acf",), ON_NONE,
           help="acf: shrink rows stuck at a bound (on), or the algorithm of Glasmachers & "
                "Dogan (2013) as published (none)"),
    Option("ww_subsolver", ("--ww-subsolver",), ("ww",), WW_SUBSOLVERS,
           help="ww: block subproblem solver, exact (walrus) or Shark-style greedy coordinate "
                "steps (iterative)"),
    Option("ww_shrink", ("--ww-shrink",), ("ww",), ON_NONE,
           help="ww: shrink (point, class) pairs stuck at a bound (on), or the algorithm of "
                "Wang & Scott (2021) as published (none)"),
    # bsvm-train's options that do not define the model (declared in budgetsvm/cli/train.py)
    Option("folds", ("-v",), _ALL),
    Option("quiet", ("-q",), _ALL),
    Option("stats", ("--stats",), ("dcd", "acf")),
    Option("probability", ("-b",), _ALL),
    Option("model_format", ("--format",), _ALL),
    Option("zero_based", ("--zero-based",), _ALL),
    Option("monitor_file", ("--monitor",), _monitorable, contradiction=_always),
    Option("monitor_test_file", ("--monitor-test",), _monitorable, contradiction=_always),
    Option("stream", ("--stream",), _streamable, contradiction=_always),
    Option("stream_buffer", ("--stream-buffer",), _streamable,
           when=lambda v: bool(v.get("stream")), needs="--stream"),
    Option("help", ("--help",), _ALL),
)}
# TrainParams fields that are no bsvm-train option (the Python API's only)
API_ONLY = ("ww_gap",)


def _flag(use, value):
    # a --x/--no-x pair: name the one given
    return use.flags[1] if len(use.flags) == 2 and value is False and \
        use.flags[1].startswith("--no-") else use.flags[0]


def option_notices(solver, values, given):
    """The notice lines for the options in ``given`` (the names, as in OPTIONS, of the options
    typed on the command line: defaults never count) that solver ``solver`` does not read;
    values: name -> parsed value of every option. Raises ParameterError for a contradiction
    (a kernel with a linear solver; an option available for other solvers only)."""
    lines = []
    for name, use in OPTIONS.items():
        if name not in given:
            continue
        value = values.get(name)
        flag = _flag(use, value)
        readers = ", ".join(use.solvers)
        if solver not in use.solvers:
            if use.contradiction is not None and use.contradiction(solver, values):
                if name == "kernel":
                    raise ParameterError(
                        f"-t {value}: -s {solver} is a linear solver; a kernel needs "
                        f"-s {' or -s '.join(solvers.names('kernel'))}")
                raise ParameterError(f"{flag} is available for -s {' and -s '.join(use.solvers)}"
                                     f" only")
            why = use.reason or f"it is read by -s {readers}"
            lines.append(f"notice: {flag} has no effect with -s {solver} ({why})")
        elif use.when is not None and not use.when(values):
            lines.append(f"notice: {flag} has no effect with -s {solver} without {use.needs}")
    return lines
