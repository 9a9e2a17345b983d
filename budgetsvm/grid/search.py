"""The search: GridOptions in, GridResult out (``run_grid``, the library API), with the output
lines of grid.py, the threads each training gets, and the checks made before any work."""
import dataclasses
import os
import sys

from budgetsvm import solvers
from budgetsvm.errors import BsvmError, ParameterError, TrainingDiverged
from budgetsvm.fileio import is_regular_file
from budgetsvm.labels import group_classes
from budgetsvm.grid.order import (DEFAULT_LOG2C, DEFAULT_LOG2G, MAX_POINTS, Point,
                                  check_exponents, count_points, job_points, range_f)
from budgetsvm.grid.plot import plot_contour
from budgetsvm.grid.results import (ResultFile, best_values, better, format_rate, format_result,
                                    format_value, point_fields, read_results, select_best)
from budgetsvm.grid.runners import (DEFAULT_CONNECT_TIMEOUT, DEFAULT_RETRIES, DaskRunner,
                                    InlineRunner, PoolRunner, check_scheduler_address,
                                    connect_dask, data_fingerprint, point_params,
                                    rate_from_correct)
from budgetsvm.params import TrainParams
from budgetsvm.problem import check_class_costs

DEFAULT_FOLDS = 5


@dataclasses.dataclass
class GridOptions:
    """Everything bsvm-grid needs besides the data. ``params`` are the pass-through training
    parameters (their C, gamma and budget are replaced at every point)."""
    dataset: str
    params: TrainParams = dataclasses.field(default_factory=TrainParams)
    c_range: tuple | None = DEFAULT_LOG2C
    g_range: tuple | None = DEFAULT_LOG2G
    budgets: list | None = None
    fold: int = DEFAULT_FOLDS
    out: str | None = None          # None: no result file
    png: str | None = None
    resume: str | None = None
    jobs: int | None = None         # None: number of cores
    scheduler: str | None = None
    shared_path: bool = False
    retries: int = DEFAULT_RETRIES
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    zero_based: bool = False
    probability: bool = False       # -b 1: the folds score the most probable class
    quiet: bool = False
    g_given: bool = False           # -log2g given explicitly (notice when it is dropped)
    notices: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class GridResult:
    best_point: Point | None
    best_rate: float
    results: dict                   # Point -> rate, every point known (resumed and computed)
    computed: list                  # the points computed in this run, in completion order
    order: list                     # the job order
    failed: dict = dataclasses.field(default_factory=dict)  # Point -> reason (no rate)

    @property
    def best(self):
        return best_values(self.best_point)


def searched_dimensions(options):
    """(c_range, g_range, budgets) actually searched: linear solvers (and the linear kernel)
    have no gamma; budget lists only for the budgeted solvers. Raises ParameterError."""
    p = options.params
    c_range, g_range, budgets = options.c_range, options.g_range, options.budgets
    check_exponents(c_range, "-log2c")
    check_exponents(g_range, "-log2g")
    notices = []
    linear_solver = solvers.is_linear(p.solver)
    if linear_solver or p.kernel == "linear":
        if g_range is not None and options.g_given:
            what = f"-s {p.solver} is a linear solver" if linear_solver \
                else "the linear kernel has no gamma"
            notices.append(f"notice: {what}: -log2g is ignored (searching C only)")
        g_range = None
    if budgets and not solvers.is_kernel(p.solver):
        raise ParameterError(f"--budget lists apply to the budgeted solvers "
                             f"({', '.join(solvers.names('kernel'))}), not to -s {p.solver}")
    n_points = count_points(c_range, g_range, budgets)
    if n_points > MAX_POINTS:
        searched = [name for name, dimension in (("-log2c", c_range), ("-log2g", g_range),
                                                 ("--budget", budgets)) if dimension]
        raise ParameterError(f"the grid has {n_points} points ({' x '.join(searched)}), more "
                             f"than {MAX_POINTS}; use fewer values")
    if c_range is None and g_range is None and not budgets:
        raise ParameterError("-log2c and -log2g should not be null simultaneously"
                             if not linear_solver else
                             f"-log2c null: -s {p.solver} searches C only, nothing to search")
    return c_range, g_range, budgets, notices


def default_jobs():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def training_threads(options, n_points, dask=False):
    """Threads of every fold's training (bsvm-train's -n, passed through): as given, else the
    cores left to each local worker process (1 on a Dask cluster, whose workers run several
    tasks at a time themselves)."""
    if options.params.n_threads is not None:
        return options.params.n_threads
    if options.scheduler or dask:
        return 1
    from budgetsvm.threads import available_cores
    jobs = min(options.jobs or default_jobs(), n_points * options.fold)
    return max(1, available_cores() // max(jobs, 1))


def _fmt_opt(value):
    return "None" if value is None else format_value(value)


def point_line(worker, point, rate, best_point, best_rate):
    """grid.py's stdout line: ``[worker] <log2c> <log2g> <rate> (best c=<C>, g=<g>, rate=<r>)``
    (values of unsearched dimensions omitted; ``budget=<B>`` for budget lists)."""
    parts = ([f"[{worker}]"] + point_fields(point, format_value, format_value)
             + [format_rate(rate)])
    best = [] if best_point is None else point_fields(
        best_point, lambda x: f"c={2.0 ** x!r}", lambda y: f"g={2.0 ** y!r}")
    best.append(f"rate={format_rate(best_rate)}")
    return " ".join(parts) + " (best " + ", ".join(best) + ")"


def failed_line(worker, point, reason, best_point, best_rate):
    """The stdout line of a point without a rate: ``[worker] <log2c> <log2g> failed: <reason>
    (best ...)``, so that no script reads a rate for it."""
    line = point_line(worker, point, 0.0, best_point, best_rate)
    head, _, best = line.partition(" (best ")
    reason = reason.split(";")[0]
    return head.rsplit(" ", 1)[0] + f" failed: {reason} (best " + best


def best_lines(best_point, best_rate):
    """The two last stdout lines: ``best log2c=… log2g=… rate=…`` and grid.py's
    ``<C> <gamma> <rate>`` (actual values, not logs)."""
    if best_point is None:
        return ["best rate=-1", "-1"]
    first = "best " + format_result(best_point, best_rate)
    values = point_fields(best_point, lambda x: repr(2.0 ** x), lambda y: repr(2.0 ** y),
                          with_budget=False)
    return [first, " ".join(values + [format_rate(best_rate)])]


def run_grid(options, X=None, y=None, emit=print, warn=None, progress=None, on_result=None,
             client=None):
    """Run the search; returns a GridResult.

    X, y: the data if already loaded (else read from options.dataset). emit(line) receives the
    stdout lines (one per point, then the two best lines); warn(line) the diagnostics;
    progress(done, total, info) is called as tasks finish (done counts points, fractionally);
    on_result(point, rate) after each computed point. ``client``: an existing Dask Client to use
    instead of connecting to options.scheduler.
    """
    from budgetsvm.train import (largest_value, overflow_rows_warning, scale_notice, small_classes,
                                 stratified_folds, usable_folds)
    warn = warn or (lambda line: None if options.quiet else print(line, file=sys.stderr))
    c_range, g_range, budgets, notices = searched_dimensions(options)
    for line in notices:
        warn(line)
    if options.fold < 2:
        raise ParameterError(f"-v: number of folds must be >= 2, got {options.fold}")
    _check_solver(options.params.solver)
    if options.scheduler and client is None:
        check_scheduler_address(options.scheduler)      # before the data are read
    order = job_points(c_range, g_range, budgets)
    if options.png:
        check_plot(c_range, g_range)                    # not after the whole search
    # opened at the first result: a run that fails or is interrupted before any point has a
    # rate leaves an existing -out file as it was; tried now, not after the first point
    out = ResultFile(options.out, append=bool(options.resume), emit=emit) if options.out \
        else None
    if out:
        out.check()
    resumed = read_results(options.resume) if options.resume else {}
    foreign = [p for p in resumed if not _same_dimensions(p, c_range, g_range, budgets)]
    if foreign:
        # a line of another search (log2c=1 rate=99 in a C x gamma search): never a best point
        # that lacks a searched value
        warn(f"warning: {options.resume}: {len(foreign)} line(s) are not points of this search "
             f"(other dimensions, e.g. '{format_result(foreign[0], resumed[foreign[0]])}'); "
             "ignored")
        resumed = {p: rate for p, rate in resumed.items() if p not in foreign}

    if X is None:
        from budgetsvm.io import read_problem
        X, y = read_problem(options.dataset, zero_based=options.zero_based)
    folds, warning = usable_folds(options.fold, len(y))
    if warning:
        warn(warning)
        options = dataclasses.replace(options, fold=folds)
    fold_of_row = stratified_folds(y, options.fold, options.params.seed)
    for label in small_classes(y, options.fold):
        warn(f"warning: class {label:g} has fewer rows than the {options.fold} folds")
    notice = scale_notice(largest_value(X))
    if notice:
        warn(notice)
    # rows whose ‖x‖² overflows: once here, about the whole data (the folds do not warn), and an
    # error before any work when no row is left
    overflow = overflow_rows_warning(X, options.params)
    if overflow is not None:
        warn(f"warning: {overflow}")

    todo = [p for p in order if p not in resumed]
    # a C of the grid whose cost overflows with a -w weight: refused before the result file
    # is opened (and an earlier one emptied)
    labels = group_classes(y)[0]
    if len(labels) > 1:
        for point in todo:
            check_class_costs(labels, point_params(options.params, point))
    results = dict(resumed)
    computed = []
    failed = {}                # a point whose training diverged: its reason, and no rate
    runner = _make_runner(options, X, y, fold_of_row, len(todo), client, warn) if todo else None
    try:
        best_point, best_rate = None, -1.0
        for point in resumed:                       # grid.py lists resumed points first
            if better(point, results[point], best_point, best_rate):
                best_point, best_rate = point, results[point]
            emit(point_line("resumed", point, results[point], best_point, best_rate))
        if todo:
            base = dataclasses.replace(options.params,
                                       n_threads=training_threads(options, len(todo),
                                                                    client is not None))
            tasks = [(point_params(base, p), f, options.probability) for p in todo
                     for f in range(options.fold)]
            correct = [0] * len(todo)
            reason = [None] * len(todo)
            remaining = [options.fold] * len(todo)
            folds_done = 0
            best_point, best_rate = select_best(results, order)
            if progress:
                progress(0, len(todo), _best_info(best_point, best_rate))
            for index, n_correct, worker in runner.run(tasks):
                k = index // options.fold
                if isinstance(n_correct, str):
                    reason[k] = reason[k] or n_correct
                else:
                    correct[k] += n_correct
                remaining[k] -= 1
                folds_done += 1
                if remaining[k] == 0 and reason[k]:
                    # never a rate from a diverged model: the point is an error line, it is
                    # not written to the result file (-resume computes it again)
                    failed[todo[k]] = reason[k]
                    emit(failed_line(worker, todo[k], reason[k], best_point, best_rate))
                elif remaining[k] == 0:
                    point = todo[k]
                    rate = rate_from_correct(correct[k], len(y))
                    results[point] = rate
                    computed.append(point)
                    if out:
                        out.write(point, rate)
                    best_point, best_rate = select_best(results, order)
                    emit(point_line(worker, point, rate, best_point, best_rate))
                    if on_result:
                        on_result(point, rate)
                if progress:
                    progress(folds_done / options.fold, len(todo),
                             _best_info(best_point, best_rate))
            runner.close()
    except BaseException:
        if runner:
            runner.close(abort=True)
        raise
    finally:
        if out:
            out.close()
    if failed:
        first = next(iter(failed.values()))
        if not results:
            raise TrainingDiverged(f"grid search: no point has a rate: {first}")
        warn(f"warning: {len(failed)} of {len(order)} points failed and have no rate "
             f"({first})")
    best_point, best_rate = select_best(results, order)
    for line in best_lines(best_point, best_rate):
        emit(line)
    result = GridResult(best_point, best_rate, results, computed, order, failed)
    if options.png:
        plot_contour(options.png, results, best_point, best_rate,
                     title=os.path.basename(options.dataset), warn=warn)
    return result


def _best_info(best_point, best_rate):
    if best_point is None:
        return "best: -"
    return "best " + format_result(best_point, best_rate)


def _check_solver(solver):
    """Fail before any work if the solver is not in this build (the error train() would raise)."""
    from budgetsvm.train import check_solver
    check_solver(solver)


def _same_dimensions(point, c_range, g_range, budgets):
    """Whether a (resumed) point has a value for exactly the dimensions searched."""
    return ((point.log2c is None) == (c_range is None)
            and (point.log2g is None) == (g_range is None)
            and (point.budget is None) == (not budgets))


def check_plot(c_range, g_range):
    """Before the search: -png needs at least two values of both log2 C and log2 gamma, and
    matplotlib."""
    if c_range is None or g_range is None or len(range_f(*c_range)) < 2 or \
            len(range_f(*g_range)) < 2:
        raise ParameterError("-png needs a search over both C and gamma, with at least two "
                             "values of each")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise BsvmError("-png needs matplotlib (pip install 'budgetsvm[plot]')") from None


def _make_runner(options, X, y, fold_of_row, n_points, client, warn):
    # Workers read the data file themselves only when it can be read again: a pipe, a FIFO or
    # bash's <(command) was read once, by this process, and its data are sent instead.
    rereadable = options.dataset != "-" and is_regular_file(options.dataset)
    if options.scheduler or client is not None:
        own = client is None
        if options.shared_path and not rereadable:
            raise ParameterError("--shared-path needs a regular data file, not standard input "
                                 "or a pipe")
        if own:
            client = connect_dask(options.scheduler, options.connect_timeout)
        return DaskRunner(client, (X, y, fold_of_row), options.dataset, options.zero_based,
                          options.fold, shared_path=options.shared_path,
                          retries=options.retries, own_client=own,
                          fingerprint=data_fingerprint(X, y) if options.shared_path else None)
    jobs = options.jobs or default_jobs()
    jobs = min(jobs, n_points * options.fold)
    if jobs <= 1:
        return InlineRunner(X, y, fold_of_row)
    # workers that read the file again check that it still holds these data
    source, fingerprint = (options.dataset, data_fingerprint(X, y)) if rereadable \
        else ((X, y, fold_of_row), None)
    return PoolRunner(jobs, source, options.zero_based, options.fold, options.params.seed,
                      retries=options.retries, warn=warn, fingerprint=fingerprint)
