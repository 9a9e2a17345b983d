"""Evaluating a grid point fold by fold (the stratified, seeded folds and the training of
``bsvm-train -v``), and the runners that do it: in this process (-j 1), a pool of worker
processes that read the data file once each (-j N), or a Dask cluster."""
import contextlib
import dataclasses
import os
import signal
import sys
import tempfile
import threading
import uuid
import warnings

import numpy as np

from budgetsvm.errors import BsvmError, ParameterError, TrainingDiverged

DEFAULT_RETRIES = 2
DEFAULT_CONNECT_TIMEOUT = 10.0


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


def fold_correct(X, y, fold_of_row, params, fold, probability=False):
    """Rows of ``fold`` predicted right by a model trained on the other folds (TrainingDiverged
    when that model or its decision values are not finite); probability: the model is trained
    with its probabilities and predicts the most probable class (bsvm-train -b 1 -v)."""
    test = fold_of_row == fold
    if not test.any():
        return 0
    if probability:
        from budgetsvm.probability import fold_predictions_with_probability as predictions
    else:
        from budgetsvm.train import fold_predictions as predictions
    return int(np.count_nonzero(predictions(X, y, test, params) == y[test]))


def fold_outcome(X, y, fold_of_row, params, fold, probability=False):
    """fold_correct, or the reason (a str) when training diverged: the point then has no rate,
    but the search goes on."""
    try:
        return fold_correct(X, y, fold_of_row, params, fold, probability)
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


def data_fingerprint(X, y):
    """A digest of the data (labels, the CSR arrays and the shape): the worker processes that
    read the file again check that they read what bsvm-grid read."""
    import hashlib
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.asarray(X.shape, dtype=np.int64).tobytes())
    for array, dtype in ((y, np.float64), (X.indptr, np.int64), (X.indices, np.int64),
                         (X.data, np.float64)):
        digest.update(np.ascontiguousarray(array, dtype=dtype).tobytes())
    return digest.hexdigest()


def load_source(path, zero_based, nr_fold, seed, fingerprint=None):
    """(X, y, fold_of_row) of a data file, read once per process. fingerprint: the
    data_fingerprint of the data bsvm-grid read; DataFormatError when the file holds other
    data now (changed or replaced since), whose rates would be wrong."""
    key = (os.path.abspath(path), bool(zero_based), int(nr_fold), int(seed), fingerprint)
    if key not in _DATA:
        from budgetsvm.io import read_problem
        from budgetsvm.train import stratified_folds
        X, y = read_problem(path, zero_based=zero_based)
        if fingerprint is not None and data_fingerprint(X, y) != fingerprint:
            from budgetsvm.errors import DataFormatError
            raise DataFormatError(path, None, "changed since bsvm-grid read it (the worker "
                                  "processes read it again and found other data): run the "
                                  "search on a file that stays as it is")
        _DATA[key] = (X, y, stratified_folds(y, nr_fold, seed))
    return _DATA[key]


# local pool workers
_WORKER = {}


class SavedData:
    """The data read from standard input or a pipe, saved for the pool's workers in a file of
    the temporary folder (removed by PoolRunner.close). Sent along through the pipes that start
    the workers, they made the parent wait in each start until the worker had imported
    numpy and read them: a signal meanwhile cut them short (the worker printed an
    UnpicklingError traceback) and left the pool half started. A path keeps every start short."""

    def __init__(self, X, y, fold_of_row):
        self.path = None
        try:
            with tempfile.NamedTemporaryFile(prefix="bsvm-grid-", suffix=".npz",
                                             delete=False) as file:
                self.path = file.name
                np.savez(file, data=X.data, indices=X.indices, indptr=X.indptr,
                         shape=np.array(X.shape), y=y, fold_of_row=fold_of_row)
        except BaseException as exc:
            self.remove()
            if isinstance(exc, OSError):
                where = self.path or tempfile.gettempdir()
                raise BsvmError(f"{where}: cannot save the data for the worker processes "
                                f"({exc.strerror or exc})") from None
            raise

    def load(self):
        import scipy.sparse as sp
        with np.load(self.path, allow_pickle=False) as saved:
            X = sp.csr_matrix((saved["data"], saved["indices"], saved["indptr"]),
                              shape=tuple(int(n) for n in saved["shape"]))
            return X, saved["y"], saved["fold_of_row"]

    def remove(self):
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


def _pool_init(source, zero_based, nr_fold, seed, fingerprint=None):
    """Pool initializer: load the data once (a regular file is read here, the data of stdin or
    a pipe from their SavedData). Ctrl-C is left to the parent, which stops the workers; a file
    that cannot be read (changed since the parent read it) is the error of every task, raised
    in the parent as one line, where an exception here would break the pool with a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # also if started with Ctrl-C unblocked
    try:
        if isinstance(source, SavedData):
            _WORKER["data"] = source.load()
        else:
            _WORKER["data"] = load_source(source, zero_based, nr_fold, seed, fingerprint)
    except BsvmError as exc:
        _WORKER["error"] = exc


def _pool_task(params, fold, probability=False):
    """One fold of one point in a worker process: (outcome, "local", warnings), the warnings
    it raised as (category, text) for the parent to show (show_worker_warnings): a worker has
    neither the one-line display of warnings nor the -q filter, so it would print each with
    its source line, once per fold and point."""
    if "error" in _WORKER:
        raise _WORKER["error"]
    X, y, fold_of_row = _WORKER["data"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = fold_outcome(X, y, fold_of_row, params, fold, probability)
    return outcome, "local", [(w.category, str(w.message)) for w in caught]


def show_worker_warnings(caught):
    """Raise again, in this process, the warnings a worker process recorded: its filters (-q)
    and its one-line display, which shows each text once (cli.common), decide what is seen."""
    for category, text in caught:
        warnings.warn(text, category, stacklevel=2)


def dask_task(source, zero_based, nr_fold, params, fold, probability=False, fingerprint=None):
    """One fold of one point on a Dask worker. ``source`` is the scattered (X, y, fold_of_row)
    tuple, or a path every worker can read (read once per worker process and cached, and
    checked against the fingerprint of the data bsvm-grid read)."""
    if isinstance(source, str):
        X, y, fold_of_row = load_source(source, zero_based, nr_fold, params.seed, fingerprint)
    else:
        X, y, fold_of_row = source
    try:
        from distributed import get_worker
        name = get_worker().address
    except Exception:           # pragma: no cover - outside a worker
        name = "dask"
    return fold_outcome(X, y, fold_of_row, params, fold, probability), name


class WorkersDied(BsvmError):
    """The local worker processes died more often than PoolRunner restarts them."""


# ---------------------------------------------------------------------------------------------
# runners: each yields (task index, correct, worker name) as tasks finish

class InlineRunner:
    """-j 1: every task in this process, in job order, on the data already loaded."""

    def __init__(self, X, y, fold_of_row):
        self.data = (X, y, fold_of_row)

    def run(self, tasks):
        X, y, fold_of_row = self.data
        for index, task in enumerate(tasks):
            yield index, fold_outcome(X, y, fold_of_row, *task), "local"

    def close(self, abort=False):
        pass


@contextlib.contextmanager
def _workers_start_uninterrupted():
    """Around the pool's creation and the submits that start its processes. A signal that
    interrupted them could leave the pool half started: its manager thread not yet running (its
    shutdown then raised RuntimeError: a traceback and exit 1) or a worker spawned but not
    registered, which was never stopped. The starts are short (the workers get a path:
    SavedData), so the signals wait for their end:
    - Ctrl-C is blocked, so that the workers start with it blocked (a signal mask is
      inherited). Ctrl-C reaches the whole process group, and a worker still starting Python
      printed a line or a traceback of its own; the parent stops the workers
      (close(abort=True)), and a Ctrl-C that arrives meanwhile reaches it once unblocked.
    - SIGTERM (in the main thread, where its handler can be set) is held, not blocked: the
      workers must stay killable by close(abort=True)'s terminate(). It is raised again when
      the block ends."""
    held = []

    def hold(signum, frame):
        held.append(signum)
    previous_term = None
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is not None:
        previous_term = signal.signal(signal.SIGTERM, hold)
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, ())     # the mask, unchanged
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        yield
    finally:
        try:
            # restored even when a pending Ctrl-C is raised by the call that blocked it
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        finally:
            # unless a Ctrl-C's handler has replaced it meanwhile (the commands then ignore
            # the signals that follow)
            if previous_term is not None and signal.getsignal(signal.SIGTERM) is hold:
                signal.signal(signal.SIGTERM, previous_term)
                if held:
                    signal.raise_signal(signal.SIGTERM)


class PoolRunner:
    """-j N: N worker processes (spawned, so safe with threads); each loads the data once in the
    pool initializer. A pool that breaks (a worker killed) is rebuilt and its unfinished tasks
    resubmitted, up to ``retries`` times."""

    def __init__(self, n_workers, source, zero_based, nr_fold, seed, retries=DEFAULT_RETRIES,
                 warn=None, fingerprint=None):
        """source: the path of a data file the workers read again (fingerprint: the
        data_fingerprint of what the caller read from it, which the workers check), or the data
        (X, y, fold_of_row) of one they cannot (saved for them when the pool first starts)."""
        self.n_workers = n_workers
        self.source = source
        self.options = (zero_based, nr_fold, seed, fingerprint)
        self.saved = None
        self.retries = retries
        self.executor = None
        self.warn = warn or (lambda line: print(line, file=sys.stderr))

    def _start(self, tasks, pending):
        """A new pool with the pending tasks submitted: {future: task index}."""
        import concurrent.futures
        import multiprocessing
        source = self.source
        if not isinstance(source, str):
            if self.saved is None:
                self.saved = SavedData(*source)
            source = self.saved
        # multiprocessing's resource tracker process first: CPython unblocks SIGINT in the
        # thread that starts it, which inside the block would let the workers spawned after
        # it start with Ctrl-C unblocked
        from multiprocessing import resource_tracker
        resource_tracker.ensure_running()
        with _workers_start_uninterrupted():
            self.executor = concurrent.futures.ProcessPoolExecutor(
                max_workers=self.n_workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_pool_init, initargs=(source, *self.options))
            return {self.executor.submit(_pool_task, *tasks[i]): i for i in sorted(pending)}

    def run(self, tasks):
        import concurrent.futures
        from concurrent.futures.process import BrokenProcessPool
        pending = set(range(len(tasks)))
        failures = 0
        while pending:
            futures = self._start(tasks, pending)
            try:
                for future in concurrent.futures.as_completed(futures):
                    index = futures[future]
                    correct, name, caught = future.result()
                    show_worker_warnings(caught)
                    pending.discard(index)
                    yield index, correct, name
            except BrokenProcessPool:
                failures += 1
                self._stop()
                if failures > self.retries:
                    raise WorkersDied("grid search: local worker processes died "
                                      f"{failures} times; giving up") from None
                self.warn(f"warning: a worker process died; restarting the pool for "
                          f"{len(pending)} unfinished tasks")
            finally:
                if self.executor is not None and not pending:
                    self.close()

    def _stop(self, abort=False):
        if self.executor is None:
            return
        if abort:
            # interrupted or failed: do not wait for the points still running
            for process in list(getattr(self.executor, "_processes", {}).values()):
                process.terminate()
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.executor = None

    def close(self, abort=False):
        """Stop the pool (abort: without waiting for the points still running) and remove the
        saved data."""
        try:
            self._stop(abort)
        finally:
            if self.saved is not None:
                self.saved.remove()
                self.saved = None


def check_scheduler_address(address):
    """ParameterError unless ``address`` is a scheduler address that dask.distributed can parse
    (``[tcp://]HOST:PORT``, or another of its schemes). Given a malformed one, dask's Client
    waits out the whole connect timeout, and then as long again to close. Without dask,
    nothing to check: connect_dask says that dask is missing."""
    try:
        from distributed.comm import parse_address
        from distributed.comm.addressing import parse_host_port
        from distributed.comm.registry import get_backend
    except ImportError:
        return
    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
        if scheme in ("tcp", "tls"):
            # ws:// and wss:// are URLs, which dask's connector opens as they are given
            _, port = parse_host_port(location)
            if not 0 < port < 65536:
                raise ValueError(f"port {port} is not in 1..65535")
        elif scheme == "inproc":
            raise ValueError("an inproc:// scheduler lives inside another process, which "
                             "bsvm-grid cannot reach")
    except ValueError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ParameterError(f"--scheduler {address}: not a scheduler address ({reason}); "
                             f"give tcp://HOST:PORT (a scheduler listens on port 8786 "
                             f"unless told otherwise)") from None


# how long past --connect-timeout a connection that hangs in dask's handshake is waited for
CONNECT_GRACE_SECONDS = 2.0


def connect_dask(address, timeout=DEFAULT_CONNECT_TIMEOUT):
    """A dask.distributed Client of the scheduler at ``address``; one-line BsvmError if dask is
    missing or the scheduler does not answer within ``timeout`` seconds (run_grid has
    checked the address: check_scheduler_address)."""
    try:
        import distributed
    except ImportError:
        raise BsvmError("--scheduler needs dask.distributed: pip install 'budgetsvm[dist]'") \
            from None
    import logging
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.CRITICAL)    # its retry warnings would break the one-line error
    outcome = {}

    def connect():
        try:
            outcome["client"] = distributed.Client(address, timeout=timeout,
                                                   set_as_default=False)
        except BaseException as exc:          # noqa: B902 - reported by the caller
            outcome["error"] = exc
    try:
        # dask's timeout covers the connection, not its handshake: a service that accepts the
        # connection and never answers as a scheduler (an HTTP port such as the dashboard's)
        # kept Client() waiting for ever. A daemon thread is abandoned at the deadline.
        thread = threading.Thread(target=connect, name="bsvm-dask-connect", daemon=True)
        thread.start()
        thread.join(timeout + CONNECT_GRACE_SECONDS)
        if thread.is_alive():
            raise BsvmError(f"--scheduler {address}: no answer from a Dask scheduler within "
                            f"{timeout:g} s (the address takes connections: another service's "
                            "port, such as the dashboard's?)")
        if "error" in outcome:
            exc = outcome["error"]
            if not isinstance(exc, Exception):
                raise exc
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if isinstance(exc, MemoryError):
                # dask read another service's bytes (an SSH banner) as its message sizes
                reason = "what answered there does not speak Dask's protocol"
            raise BsvmError(f"--scheduler {address}: cannot reach the Dask scheduler "
                            f"within {timeout:g} s ({reason})") from None
        return outcome["client"]
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
                 retries=DEFAULT_RETRIES, own_client=False, fingerprint=None):
        self.client = client
        self.fingerprint = fingerprint       # of the data read from path (shared_path)
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
        for index, task in enumerate(tasks):
            future = self.client.submit(dask_task, source, self.zero_based, self.nr_fold,
                                        *task, fingerprint=self.fingerprint,
                                        key=f"bsvm-grid-{token}-{index}",
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
