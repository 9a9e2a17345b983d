"""Cross-validated grid search over C, gamma and budget lists (LIBSVM tools/grid.py conventions).

The pieces, usable on their own:

* ranges and job order: :func:`parse_range`, :func:`range_f`, :func:`permute_sequence` and
  :func:`calculate_jobs` reproduce grid.py exactly (coarse to fine: every range midpoint-first,
  rows and columns of the grid interleaved), :func:`job_points` flattens them into
  :class:`Point` objects (a budget list, if any, is the innermost loop);
* the result file: :func:`format_result` writes grid.py's ``log2c=<x> log2g=<y> rate=<r>``
  lines (keys of a dimension not searched omitted, ``budget=<B>`` added for budget lists) and
  :func:`read_results` parses them back for ``-resume``;
* the best point: :func:`select_best` applies grid.py's rule (highest rate; on a tie a point with
  the same gamma (and budget) and a smaller C replaces it) over the points in job order, so the
  answer does not depend on which worker finished first;
* evaluation: the cross-validation accuracy of a point is computed fold by fold (a task is one
  fold of one point), with the stratified, seeded split of :func:`budgetsvm.train.stratified_folds`
  and :func:`budgetsvm.train.train`, i.e. exactly what ``bsvm-train -v`` computes;
* runners: in this process (``-j 1``), a pool of local worker processes that each read the data
  file once (``-j N``), or a Dask distributed cluster (``scheduler=tcp://HOST:PORT``) that gets the
  data by scatter or reads a shared path, with retries;
* :func:`run_grid` ties them together (the library API); grid.py's ``find_parameters``, which
  takes bsvm-grid's arguments, is in :mod:`budgetsvm.cli.grid` (the library never imports the
  command line).
"""
import collections
import dataclasses
import math
import os
import re
import sys
import uuid

import numpy as np

from budgetsvm.errors import BsvmError, ParameterError, TrainingDiverged
from budgetsvm.fileio import atomic_output
from budgetsvm.params import KERNEL_SOLVERS, LINEAR_SOLVERS, TrainParams

DEFAULT_LOG2C = (-5.0, 15.0, 2.0)
DEFAULT_LOG2G = (3.0, -15.0, -2.0)
DEFAULT_FOLDS = 5
DEFAULT_RETRIES = 2
DEFAULT_CONNECT_TIMEOUT = 10.0

Point = collections.namedtuple("Point", "log2c log2g budget")
Point.__doc__ = "One grid point: log2 C, log2 gamma and budget (None for a dimension not searched)."


# ---------------------------------------------------------------------------------------------
# ranges and job order (grid.py's range_f, permute_sequence and calculate_jobs)

def _tidy(value):
    """Round away the float noise of begin + k*step so that points print and match cleanly."""
    value = round(value, 10)
    return 0.0 if value == 0 else value


def parse_range(text, option="-log2c"):
    """``begin,end,step`` → (begin, end, step) floats; ``null`` → None; else ParameterError.

    grid.py accepts a step of either sign; the range is begin, begin+step, ... while it has not
    passed end. A zero step, non-finite numbers or an empty range are errors here.
    """
    if text is None:
        raise ParameterError(f"{option} needs a value: begin,end,step or null")
    if text == "null":
        return None
    parts = text.split(",")
    try:
        begin, end, step = (float(p) for p in parts)
    except ValueError:
        raise ParameterError(f"{option}: expected begin,end,step (three numbers) or null, "
                             f"got {text!r}") from None
    if not all(math.isfinite(v) for v in (begin, end, step)):
        raise ParameterError(f"{option}: begin, end and step must be finite, got {text!r}")
    if step == 0:
        raise ParameterError(f"{option}: step must not be 0, got {text!r}")
    if (step > 0 and begin > end) or (step < 0 and begin < end):
        raise ParameterError(f"{option}: empty range {text!r} (with step {step:g} the range "
                             f"must go from {'low to high' if step > 0 else 'high to low'})")
    if abs(end - begin) / abs(step) > 10000:
        raise ParameterError(f"{option}: {text!r} has more than 10000 values")
    return begin, end, step


def range_f(begin, end, step):
    """grid.py's range_f: begin, begin+step, ... up to end inclusive (works for floats)."""
    seq = []
    k = 0
    while True:
        value = begin + k * step
        # a tolerance so that -1,1,0.1 includes 1 despite binary rounding
        if step > 0 and value > end + 1e-9 * abs(step):
            break
        if step < 0 and value < end - 1e-9 * abs(step):
            break
        seq.append(_tidy(value))
        k += 1
    return seq


def permute_sequence(seq):
    """grid.py's permute_sequence: midpoint first, then the halves interleaved, recursively."""
    n = len(seq)
    if n <= 1:
        return list(seq)
    mid = int(n / 2)
    left = permute_sequence(seq[:mid])
    right = permute_sequence(seq[mid + 1:])
    ret = [seq[mid]]
    while left or right:
        if left:
            ret.append(left.pop(0))
        if right:
            ret.append(right.pop(0))
    return ret


def calculate_jobs(c_range, g_range):
    """grid.py's calculate_jobs: a list of lines, each a list of (log2c, log2g) pairs.

    c_range / g_range: (begin, end, step) or None (dimension not searched: its value is None).
    """
    c_seq = permute_sequence(range_f(*c_range)) if c_range is not None else [None]
    g_seq = permute_sequence(range_f(*g_range)) if g_range is not None else [None]
    nr_c = float(len(c_seq))
    nr_g = float(len(g_seq))
    i, j = 0, 0
    jobs = []
    while i < nr_c or j < nr_g:
        if i / nr_c < j / nr_g:
            # increase C resolution
            jobs.append([(c_seq[i], g_seq[k]) for k in range(j)])
            i += 1
        else:
            # increase gamma resolution
            jobs.append([(c_seq[k], g_seq[j]) for k in range(i)])
            j += 1
    return jobs


def job_points(c_range, g_range, budgets=None):
    """All points in job order: grid.py's order of (C, gamma), each with every budget in turn."""
    budgets = [None] if not budgets else list(dict.fromkeys(budgets))
    return [Point(c, g, b) for line in calculate_jobs(c_range, g_range) for (c, g) in line
            for b in budgets]


# ---------------------------------------------------------------------------------------------
# the result file

def format_value(value):
    """A log2 value as written to .out and stdout: integers without '.0', else shortest repr."""
    value = _tidy(float(value))
    return str(int(value)) if value.is_integer() else repr(value)


def format_rate(rate):
    return repr(float(rate))


def format_result(point, rate):
    """One .out line (without the newline): ``log2c=<x> log2g=<y> [budget=<B>] rate=<r>``."""
    fields = []
    if point.log2c is not None:
        fields.append(f"log2c={format_value(point.log2c)}")
    if point.log2g is not None:
        fields.append(f"log2g={format_value(point.log2g)}")
    if point.budget is not None:
        fields.append(f"budget={point.budget}")
    fields.append(f"rate={format_rate(rate)}")
    return " ".join(fields)


_RATE = re.compile(r"rate=([0-9.]+)")
_LOG2C = re.compile(r"log2c=([0-9.eE+-]+)")
_LOG2G = re.compile(r"log2g=([0-9.eE+-]+)")
_BUDGET = re.compile(r"budget=([0-9]+)")


def parse_result_line(line):
    """(Point, rate) from a .out line, or None for a line without a rate (grid.py's regexes)."""
    rate = _RATE.search(line)
    if not rate:
        return None
    try:
        c = _LOG2C.search(line)
        g = _LOG2G.search(line)
        b = _BUDGET.search(line)
        point = Point(_tidy(float(c.group(1))) if c else None,
                      _tidy(float(g.group(1))) if g else None,
                      int(b.group(1)) if b else None)
        return point, float(rate.group(1))
    except ValueError:
        return None


def read_results(path):
    """The finished points of a .out file, in file order: {Point: rate}.

    A last line without its newline was cut off by a killed run (its rate may be truncated), so
    it is ignored and the point computed again.
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as exc:
        raise BsvmError(f"{path}: cannot read the file to resume: "
                        f"{exc.strerror or exc}") from None
    lines = text.split("\n")
    complete = lines[:-1]           # the piece after the last newline is incomplete (or empty)
    results = {}
    for line in complete:
        parsed = parse_result_line(line.strip())
        if parsed is not None:
            results[parsed[0]] = parsed[1]
    return results


def _drop_incomplete_line(path):
    """Cut a last line without its newline (left by a killed run; read_results ignores it)."""
    with open(path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


class ResultFile:
    """The -out file: truncated (or appended to, with -resume), one flushed line per point."""

    def __init__(self, path, append):
        self.path = path
        try:
            if append and os.path.exists(path):
                _drop_incomplete_line(path)
            self.file = open(path, "a" if append else "w", encoding="utf-8")
        except OSError as exc:
            raise BsvmError(f"{path}: cannot write the result file: "
                            f"{exc.strerror or exc}") from None

    def write(self, point, rate):
        try:
            self.file.write(format_result(point, rate) + "\n")
            self.file.flush()
        except OSError as exc:
            raise BsvmError(f"{self.path}: cannot write the result file: "
                            f"{exc.strerror or exc}") from None

    def close(self):
        self.file.close()


# ---------------------------------------------------------------------------------------------
# the best point

def better(point, rate, best_point, best_rate):
    """grid.py's update rule: a higher rate, or the same rate with the same gamma (and budget)
    and a smaller C."""
    if best_point is None or rate > best_rate:
        return True
    return (rate == best_rate and point.log2g == best_point.log2g
            and point.budget == best_point.budget
            and point.log2c is not None and best_point.log2c is not None
            and point.log2c < best_point.log2c)


def select_best(results, order=None):
    """(best Point, best rate) of {Point: rate}, visiting points in ``order`` (job order) first
    and any others (resumed points outside the grid) before them, as grid.py reads resumed
    points first. (None, -1) when there are no results."""
    order = list(order or [])
    in_order = set(order)
    visit = [p for p in results if p not in in_order] + [p for p in order if p in results]
    best_point, best_rate = None, -1.0
    for point in visit:
        if better(point, results[point], best_point, best_rate):
            best_point, best_rate = point, results[point]
    return best_point, best_rate


def best_values(point):
    """{'c': C, 'g': gamma, 'budget': B} of a point (keys of unsearched dimensions omitted)."""
    values = {}
    if point is None:
        return values
    if point.log2c is not None:
        values["c"] = 2.0 ** point.log2c
    if point.log2g is not None:
        values["g"] = 2.0 ** point.log2g
    if point.budget is not None:
        values["budget"] = point.budget
    return values


# ---------------------------------------------------------------------------------------------
# evaluation of one fold of one point

def point_params(base, point):
    """The TrainParams of a point: base with C, gamma and budget of the point."""
    changes = {}
    if point.log2c is not None:
        changes["C"] = 2.0 ** point.log2c
    if point.log2g is not None:
        changes["gamma"] = 2.0 ** point.log2g
    if point.budget is not None:
        changes["budget"] = int(point.budget)
    return dataclasses.replace(base, **changes)


def rate_from_correct(correct, n):
    """The accuracy bsvm-train -v prints (%g, 6 significant digits), as a float like grid.py's."""
    return float("%g" % (100.0 * (correct / n)))   # as bsvm-train: 100 * mean(right)


def fold_correct(X, y, fold_of_row, params, fold):
    """Rows of ``fold`` predicted right by a model trained on the other folds (TrainingDiverged
    when that model or its decision values are not finite)."""
    from budgetsvm.train import predict_scored, train
    test = fold_of_row == fold
    if not test.any():
        return 0
    model = train(X[~test], y[~test], params)
    return int(np.count_nonzero(predict_scored(model, X[test]) == y[test]))


def fold_outcome(X, y, fold_of_row, params, fold):
    """fold_correct, or the reason (a str) when training diverged: the point then has no rate,
    but the search goes on."""
    try:
        return fold_correct(X, y, fold_of_row, params, fold)
    except TrainingDiverged as exc:
        return str(exc)


def cv_rate(X, y, params, nr_fold):
    """Cross-validation accuracy (percent, as bsvm-train -v prints it) of one parameter set."""
    from budgetsvm.train import stratified_folds
    fold_of_row = stratified_folds(y, nr_fold, params.seed)
    correct = sum(fold_correct(X, y, fold_of_row, params, f) for f in range(nr_fold))
    return rate_from_correct(correct, len(y))


# Per-process cache of loaded data sets (a worker reads a file once, whatever the number of
# points it evaluates): key -> (X, y, fold_of_row).
_DATA = {}


def load_source(path, zero_based, nr_fold, seed):
    """(X, y, fold_of_row) of a data file, read once per process."""
    key = (os.path.abspath(path), bool(zero_based), int(nr_fold), int(seed))
    if key not in _DATA:
        from budgetsvm.io import read_problem
        from budgetsvm.train import stratified_folds
        X, y = read_problem(path, zero_based=zero_based)
        _DATA[key] = (X, y, stratified_folds(y, nr_fold, seed))
    return _DATA[key]


# local pool workers
_WORKER = {}


def _pool_init(source, zero_based, nr_fold, seed):
    """Pool initializer: load the data once (a path is read here; stdin data arrive pickled)."""
    if isinstance(source, str):
        _WORKER["data"] = load_source(source, zero_based, nr_fold, seed)
    else:
        _WORKER["data"] = source


def _pool_task(params, fold):
    X, y, fold_of_row = _WORKER["data"]
    return fold_outcome(X, y, fold_of_row, params, fold), "local"


def dask_task(source, zero_based, nr_fold, params, fold):
    """One fold of one point on a Dask worker. ``source`` is the scattered (X, y, fold_of_row)
    tuple, or a path every worker can read (read once per worker process and cached)."""
    if isinstance(source, str):
        X, y, fold_of_row = load_source(source, zero_based, nr_fold, params.seed)
    else:
        X, y, fold_of_row = source
    try:
        from distributed import get_worker
        name = get_worker().address
    except Exception:           # pragma: no cover - outside a worker
        name = "dask"
    return fold_outcome(X, y, fold_of_row, params, fold), name


# ---------------------------------------------------------------------------------------------
# runners: each yields (task index, correct, worker name) as tasks finish

class InlineRunner:
    """-j 1: every task in this process, in job order, on the data already loaded."""

    def __init__(self, X, y, fold_of_row):
        self.data = (X, y, fold_of_row)

    def run(self, tasks):
        X, y, fold_of_row = self.data
        for index, (params, fold) in enumerate(tasks):
            yield index, fold_outcome(X, y, fold_of_row, params, fold), "local"

    def close(self, abort=False):
        pass


class PoolRunner:
    """-j N: N worker processes (spawned, so safe with threads); each loads the data once in the
    pool initializer. A pool that breaks (a worker killed) is rebuilt and its unfinished tasks
    resubmitted, up to ``retries`` times."""

    def __init__(self, n_workers, source, zero_based, nr_fold, seed, retries=DEFAULT_RETRIES):
        self.n_workers = n_workers
        self.initargs = (source, zero_based, nr_fold, seed)
        self.retries = retries
        self.executor = None

    def _start(self):
        import concurrent.futures
        import multiprocessing
        self.executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=self.n_workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_pool_init, initargs=self.initargs)

    def run(self, tasks):
        import concurrent.futures
        from concurrent.futures.process import BrokenProcessPool
        pending = set(range(len(tasks)))
        failures = 0
        while pending:
            self._start()
            futures = {self.executor.submit(_pool_task, *tasks[i]): i for i in sorted(pending)}
            try:
                for future in concurrent.futures.as_completed(futures):
                    index = futures[future]
                    correct, name = future.result()
                    pending.discard(index)
                    yield index, correct, name
            except BrokenProcessPool:
                failures += 1
                self.close()
                if failures > self.retries:
                    raise BsvmError("grid search: local worker processes died "
                                    f"{failures} times; giving up") from None
                print(f"warning: a worker process died; restarting the pool for "
                      f"{len(pending)} unfinished tasks", file=sys.stderr)
            finally:
                if self.executor is not None and not pending:
                    self.close()

    def close(self, abort=False):
        if self.executor is None:
            return
        if abort:
            # interrupted or failed: do not wait for the points still running
            for process in list(getattr(self.executor, "_processes", {}).values()):
                process.terminate()
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.executor = None


def connect_dask(address, timeout=DEFAULT_CONNECT_TIMEOUT):
    """A dask.distributed Client of the scheduler at ``address``; one-line BsvmError if dask is
    missing or the scheduler does not answer within ``timeout`` seconds."""
    try:
        import distributed
    except ImportError:
        raise BsvmError("--scheduler needs dask.distributed: pip install 'budgetsvm[dist]'") \
            from None
    import logging
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.CRITICAL)    # its retry warnings would break the one-line error
    try:
        return distributed.Client(address, timeout=timeout, set_as_default=False)
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BsvmError(f"--scheduler {address}: cannot reach the Dask scheduler "
                        f"within {timeout:g} s ({reason})") from None
    finally:
        logger.setLevel(level)


class DaskRunner:
    """Tasks on a Dask distributed cluster.

    Data: ``shared_path`` False scatters (X, y, fold_of_row) to every worker once (broadcast, so
    a dead worker's copy is not the only one); True sends only the path and every worker
    process reads the file itself, once (it must see the same file at the same path).
    Failed tasks are retried ``retries`` times; a task on a worker that dies is rescheduled by
    the scheduler on another worker.
    """

    def __init__(self, client, data, path, zero_based, nr_fold, shared_path=False,
                 retries=DEFAULT_RETRIES, own_client=False):
        self.client = client
        self.own_client = own_client
        self.path = path
        self.zero_based = zero_based
        self.nr_fold = nr_fold
        self.shared_path = shared_path
        self.retries = retries
        self.data = data
        self.futures = []

    def run(self, tasks):
        from distributed import as_completed
        if self.shared_path:
            source = os.path.abspath(self.path)
        else:
            source = self.client.scatter(self.data, broadcast=True, hash=False)
        token = uuid.uuid4().hex[:12]
        futures = {}
        for index, (params, fold) in enumerate(tasks):
            future = self.client.submit(dask_task, source, self.zero_based, self.nr_fold,
                                        params, fold, key=f"bsvm-grid-{token}-{index}",
                                        retries=self.retries, priority=len(tasks) - index,
                                        pure=False)
            futures[future.key] = index
            self.futures.append(future)
        for future in as_completed(self.futures, loop=self.client.loop):
            index = futures[future.key]
            try:
                correct, name = future.result()
            except BsvmError:
                raise
            except Exception as exc:
                reason = str(exc).splitlines()[0] if str(exc) else ""
                raise BsvmError(f"grid search: task {index} failed on the cluster after "
                                f"{self.retries} retries: {type(exc).__name__}: {reason}"
                                ) from None
            yield index, correct, name

    def close(self, abort=False):
        for future in self.futures:
            if not future.done():
                future.cancel()
        self.futures = []
        if self.own_client:
            try:
                self.client.close()
            except Exception:
                pass


# ---------------------------------------------------------------------------------------------
# the search

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
    notices = []
    if p.solver in LINEAR_SOLVERS or p.kernel == "linear":
        if g_range is not None and options.g_given:
            what = f"-s {p.solver} is a linear solver" if p.solver in LINEAR_SOLVERS \
                else "the linear kernel has no gamma"
            notices.append(f"notice: {what}: -log2g is ignored (searching C only)")
        g_range = None
    if budgets and p.solver not in KERNEL_SOLVERS:
        raise ParameterError(f"--budget lists apply to the budgeted solvers "
                             f"({', '.join(KERNEL_SOLVERS)}), not to -s {p.solver}")
    if c_range is None and g_range is None and not budgets:
        raise ParameterError("-log2c and -log2g should not be null simultaneously"
                             if p.solver not in LINEAR_SOLVERS else
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
    parts = [f"[{worker}]"]
    if point.log2c is not None:
        parts.append(format_value(point.log2c))
    if point.log2g is not None:
        parts.append(format_value(point.log2g))
    if point.budget is not None:
        parts.append(f"budget={point.budget}")
    parts.append(format_rate(rate))
    best = []
    if best_point is not None:
        if best_point.log2c is not None:
            best.append(f"c={2.0 ** best_point.log2c!r}")
        if best_point.log2g is not None:
            best.append(f"g={2.0 ** best_point.log2g!r}")
        if best_point.budget is not None:
            best.append(f"budget={best_point.budget}")
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
    values = []
    if best_point.log2c is not None:
        values.append(repr(2.0 ** best_point.log2c))
    if best_point.log2g is not None:
        values.append(repr(2.0 ** best_point.log2g))
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
    from budgetsvm.train import largest_value, scale_notice, small_classes, stratified_folds
    warn = warn or (lambda line: None if options.quiet else print(line, file=sys.stderr))
    c_range, g_range, budgets, notices = searched_dimensions(options)
    for line in notices:
        warn(line)
    if options.fold < 2:
        raise ParameterError(f"-v: number of folds must be >= 2, got {options.fold}")
    _check_solver(options.params.solver)
    order = job_points(c_range, g_range, budgets)
    resumed = read_results(options.resume) if options.resume else {}

    if X is None:
        from budgetsvm.io import read_problem
        X, y = read_problem(options.dataset, zero_based=options.zero_based)
    fold_of_row = stratified_folds(y, options.fold, options.params.seed)   # checks folds <= rows
    for label in small_classes(y, options.fold):
        warn(f"warning: class {label:g} has fewer rows than the {options.fold} folds")
    notice = scale_notice(largest_value(X))
    if notice:
        warn(notice)

    todo = [p for p in order if p not in resumed]
    results = dict(resumed)
    computed = []
    failed = {}                # a point whose training diverged: its reason, and no rate
    # the runner first: a scheduler that does not answer must not clobber an existing -out file
    runner = _make_runner(options, X, y, fold_of_row, len(todo), client) if todo else None
    try:
        out = ResultFile(options.out, append=bool(options.resume)) if options.out else None
    except BaseException:
        if runner:
            runner.close(abort=True)
        raise
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
            tasks = [(point_params(base, p), f) for p in todo for f in
                     range(options.fold)]
            correct = [0] * len(todo)
            reason = [None] * len(todo)
            remaining = [options.fold] * len(todo)
            folds_done = 0
            best_point, best_rate = select_best(results, order)
            if progress:
                progress(0, len(todo), _best_info(best_point, best_rate))
            try:
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
            except BaseException:
                runner.close(abort=True)
                raise
            runner.close()
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


def _make_runner(options, X, y, fold_of_row, n_points, client):
    if options.scheduler or client is not None:
        own = client is None
        if own:
            client = connect_dask(options.scheduler, options.connect_timeout)
        if options.shared_path and options.dataset == "-":
            raise ParameterError("--shared-path needs a data file, not stdin")
        return DaskRunner(client, (X, y, fold_of_row), options.dataset, options.zero_based,
                          options.fold, shared_path=options.shared_path,
                          retries=options.retries, own_client=own)
    jobs = options.jobs or default_jobs()
    jobs = min(jobs, n_points * options.fold)
    if jobs <= 1:
        return InlineRunner(X, y, fold_of_row)
    source = options.dataset if options.dataset != "-" else (X, y, fold_of_row)
    return PoolRunner(jobs, source, options.zero_based, options.fold, options.params.seed,
                      retries=options.retries)


# ---------------------------------------------------------------------------------------------
# the contour plot

def plot_contour(path, results, best_point, best_rate, title="", warn=None):
    """A contour plot of CV accuracy over log2 C × log2 gamma (at the best point's budget),
    grid.py style: levels every 0.5% from 3% below the best. Warns and skips if matplotlib is
    missing or the grid has fewer than 2 values in a dimension."""
    warn = warn or (lambda line: print(line, file=sys.stderr))
    if best_point is None or best_point.log2c is None or best_point.log2g is None:
        warn("warning: -png needs a search over both C and gamma; no plot written")
        return False
    try:
        import matplotlib
        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        warn("warning: -png needs matplotlib (pip install 'budgetsvm[plot]'); no plot written")
        return False
    pts = {(p.log2c, p.log2g): r for p, r in results.items()
           if p.log2c is not None and p.log2g is not None and p.budget == best_point.budget}
    cs = sorted({c for c, _ in pts})
    gs = sorted({g for _, g in pts})
    if len(cs) < 2 or len(gs) < 2:
        warn("warning: -png needs at least 2 values of log2c and of log2g; no plot written")
        return False
    Z = np.full((len(gs), len(cs)), np.nan)
    for (c, g), r in pts.items():
        Z[gs.index(g), cs.index(c)] = r
    Z = np.ma.masked_invalid(Z)
    begin = round(float(Z.max())) - 3
    levels = np.arange(begin, float(Z.max()) + 0.5, 0.5)
    fig, ax = plt.subplots(figsize=(7, 5.5), dpi=100)
    try:
        if len(levels) >= 2:
            filled = ax.contourf(cs, gs, Z, levels=levels, cmap="viridis", extend="min")
            lines = ax.contour(cs, gs, Z, levels=levels, colors="k", linewidths=0.6)
            ax.clabel(lines, fontsize=7, fmt="%g")
            fig.colorbar(filled, ax=ax, label="CV accuracy (%)")
        else:
            mesh = ax.pcolormesh(cs, gs, Z, shading="nearest", cmap="viridis")
            fig.colorbar(mesh, ax=ax, label="CV accuracy (%)")
        ax.plot([best_point.log2c], [best_point.log2g], "r*", markersize=12)
        ax.set_xlabel("log2(C)")
        ax.set_ylabel("log2(gamma)")
        budget = f"  budget = {best_point.budget}" if best_point.budget is not None else ""
        ax.set_title(f"{title}\nBest log2(C) = {format_value(best_point.log2c)}  "
                     f"log2(gamma) = {format_value(best_point.log2g)}  "
                     f"accuracy = {format_rate(best_rate)}%\n"
                     f"C = {2.0 ** best_point.log2c!r}  gamma = {2.0 ** best_point.log2g!r}"
                     f"{budget}", fontsize=9)
        fig.tight_layout()
        try:
            # atomically and with open()'s permissions, as every output (budgetsvm/fileio.py)
            with atomic_output(path, binary=True) as stream:
                fig.savefig(stream, format="png")
        except OSError as exc:
            raise BsvmError(f"{path}: cannot write the plot: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return True
