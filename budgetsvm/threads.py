"""Worker threads (``-n THREADS``, ``n_jobs``): a fork-join pool over independent parts.

Everything that splits into independent parts (one-vs-rest sub-problems, cross-validation
folds, the decision columns of a refit, blocks of rows) is a list of items handed to
:func:`parallel_map`. The items run in threads of one process, so they share the data and the
model without copies; the compiled solver loops and numpy's BLAS calls release the GIL, which
is what lets the threads run at the same time.

* ``with pool(n_threads):`` makes n worker threads available to every parallel_map below it
  (None: the cores available to the process). ``pool(1)`` (and no pool at all) runs every
  item in the calling thread, in order: the serial path.
* parallel_map is fork-join and may be nested (cross-validation folds whose training maps over
  one-vs-rest classes whose refits map over row blocks). The main thread only coordinates: it
  is where Python delivers Ctrl-C and SIGTERM. A worker that calls parallel_map runs items
  itself until none is left to claim while idle workers help, so nested maps never wait for a
  free thread (no deadlock) and an idle thread joins the inner work of a busy one.
* Results come back in item order and each item computes the same numbers whichever thread
  runs it: the thread count never changes a result.
* Failures are those of the serial loop: when item i fails, the items after it stop at their
  next check (compiled loops check every ~10^4 steps through budgetsvm/_nogil.pxd, Python
  loops call check_cancelled) and the items before it finish; the error of the first failing
  item is re-raised, once, by parallel_map. Ctrl-C and SIGTERM arrive in the main thread as
  KeyboardInterrupt / Terminated while it waits: every item stops and that is re-raised.
"""
import collections
import concurrent.futures
import contextlib
import itertools
import os
import threading
import time

# Seconds between two looks at the main thread's signals while it waits for other threads.
WAIT_SECONDS = 0.05

# After Ctrl-C or SIGTERM, how long a map waits for the items still running to stop before it
# leaves them behind; None (the default, library use): until they stop, so that no thread
# outlives the call. The commands set it (abandon_stuck_threads_after): their process ends
# right after, and one call that cannot be stopped inside an item (numpy's eigh of a refit's
# 4,000 × 4,000 kernel matrix) kept -n 2 runs from stopping for 5-11 s.
_abandon_after = None


def abandon_stuck_threads_after(seconds):
    """After a signal, give up waiting for items still running after ``seconds`` (None: wait
    for them); for a process that ends once the signal is handled (the commands)."""
    global _abandon_after
    _abandon_after = seconds

# Per thread: .pool, the active Pool; .group and .index, the map and item it is working on;
# .meter, the CpuMeter that the thread's work is counted in (cpu_metered).
_local = threading.local()


class Cancelled(Exception):
    """Raised inside an item whose map has stopped it (never reaches the user)."""


def available_cores():
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# mallopt's parameter for the largest number of malloc arenas (glibc's malloc.h)
_M_ARENA_MAX = -8


def is_glibc():
    """Whether the process runs on glibc (the C library that os.confstr names)."""
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (AttributeError, OSError, ValueError):   # Windows, musl, macOS
        return False


def share_one_malloc_arena():
    """Make every thread of this process allocate from one malloc arena; for the commands,
    before they start threads. Returns whether it was set: not where the C library is not
    glibc, nor when the user chose the number (MALLOC_ARENA_MAX or GLIBC_TUNABLES).

    glibc gives each new thread an arena of its own (on 64-bit, up to 8 per core), and memory
    freed in an arena is reused only by allocations from that arena: a part that one thread
    finished (a fold's copy of its rows, a block of test rows) stayed resident while the next
    part allocated anew in another thread's arena, so peak memory grew with the thread count
    beyond the parts that really run at the same time (bsvm-train -s bsgd -v 5 on a9a at
    -n 8: 743 MB, 675 MB with one arena; docs/BENCHMARKS.md, worker threads). Sharing one
    arena cost no measurable time there: the threads allocate mostly while they hold the GIL
    (numpy) or before their compiled loops start; inside them only the budget store's pattern
    buffers grow (budgetsvm/_budget.pyx, rarely), so they seldom wait for the arena's lock."""
    if "MALLOC_ARENA_MAX" in os.environ or \
            "malloc.arena_max" in os.environ.get("GLIBC_TUNABLES", "") or not is_glibc():
        return False
    try:
        import ctypes
        return ctypes.CDLL(None).mallopt(_M_ARENA_MAX, 1) == 1
    except (AttributeError, OSError):               # a glibc without mallopt in reach
        return False


def resolve(n_threads):
    """The number of threads ``n_threads`` asks for: None → available_cores(); ≥ 1 as given.

    Negative values count back from the available cores as joblib's n_jobs does (-1 = all of
    them, -2 = all but one), never below 1."""
    if n_threads is None:
        return available_cores()
    n_threads = int(n_threads)
    if n_threads == 0:
        raise ValueError("the number of threads must not be 0")
    if n_threads < 0:
        return max(1, available_cores() + 1 + n_threads)
    return n_threads


class Pool:
    """n worker threads (a ThreadPoolExecutor), started as they are first needed."""

    def __init__(self, n_threads):
        self.n_threads = n_threads
        self._executor = None
        self._lock = threading.Lock()
        self.abandoned = False      # a map left items running (abandon_stuck_threads_after)

    def submit(self, function):
        with self._lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self.n_threads, thread_name_prefix="bsvm-worker")
            return self._executor.submit(function)

    def shutdown(self):
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=not self.abandoned, cancel_futures=True)


def active_pool():
    return getattr(_local, "pool", None)


def current_threads():
    """Threads available to a parallel_map called here (1 outside any pool)."""
    active = active_pool()
    return 1 if active is None else active.n_threads


@contextlib.contextmanager
def pool(n_threads=None):
    """Make ``n_threads`` threads available to the parallel_map calls inside the block.

    Inside an active pool (a nested call, e.g. a training inside a cross-validation fold) the
    active pool is kept: the outer call already decided how many threads there are."""
    if active_pool() is not None:
        yield active_pool()
        return
    n = resolve(n_threads)
    if n <= 1:
        yield None
        return
    new = Pool(n)
    _local.pool = new
    try:
        yield new
    finally:
        _local.pool = None
        new.shutdown()


def _stopped(group, index):
    """Whether item ``index`` of ``group``, or the item of an enclosing map that runs it, has
    been stopped."""
    while group is not None:
        if index >= group.stop_from:
            return True
        group, index = group.parent, group.parent_index
    return False


def check_cancelled():
    """Raise Cancelled when the item this thread works on has been stopped (cheap: call it
    often in long Python loops; the compiled loops call it through check_signals)."""
    if _stopped(getattr(_local, "group", None), getattr(_local, "index", 0)):
        raise Cancelled()


class CpuMeter:
    """CPU seconds of one piece of work, summed over every thread that does a part of it
    (cpu_metered): process_time cannot tell it from other work that runs at the same time
    (the other one-vs-rest models' solves)."""

    def __init__(self):
        self.seconds = 0.0
        self._lock = threading.Lock()

    def add(self, seconds):
        with self._lock:
            self.seconds += seconds


@contextlib.contextmanager
def cpu_metered(meter):
    """Count the CPU time of the block in ``meter``: this thread's, and that of the items of
    the maps it starts (nested too) which other threads run, and of interruptible calls."""
    previous = getattr(_local, "meter", None)
    _local.meter = meter
    start = time.thread_time()
    try:
        yield meter
    finally:
        meter.add(time.thread_time() - start)
        _local.meter = previous


class _Group:
    """The items of one map. Items are claimed in order; stop_from is the first item that
    must not run or must stop (len(items): none), lowered when an item fails or a signal
    arrives (under the lock; a signal also assigns it before taking the lock, so that a
    second signal cannot keep the other threads from seeing it)."""

    def __init__(self, function, items, pool_):
        self.function = function
        self.items = items
        self.pool = pool_
        self.parent = getattr(_local, "group", None)
        self.parent_index = getattr(_local, "index", 0)
        # the creating thread's items are counted by its own cpu_metered block; the items
        # other threads run, here
        self.meter = getattr(_local, "meter", None)
        self.owner = threading.get_ident()
        self.results = [None] * len(items)
        self.stop_from = len(items)
        self.error = None
        self.error_index = len(items)
        self.incomplete = False              # an item ended with Cancelled
        self._next = 0
        self._running = 0
        self._cond = threading.Condition()

    def _claim(self):
        with self._cond:
            if self._next >= min(len(self.items), self.stop_from) or \
                    _stopped(self.parent, self.parent_index):
                return None
            index = self._next
            self._next += 1
            self._running += 1
            return index

    def fail(self, exc, index):
        """Item ``index`` raised exc: the items after it stop; the first failure is kept."""
        if isinstance(exc, Cancelled):
            self.incomplete = True
            return
        with self._cond:
            if index < self.error_index:
                self.error, self.error_index = exc, index
                self.stop_from = min(self.stop_from, index + 1)
            self._cond.notify_all()

    def interrupt(self, exc):
        """A signal in the main thread: every item stops, and exc is what the map raises."""
        self.stop_from = 0
        with self._cond:
            # again under the lock: a fail() that read stop_from before the write above would
            # otherwise put its larger value back
            self.stop_from = 0
            self.error, self.error_index = exc, -1
            self._cond.notify_all()

    def work(self):
        """Run items until none is left to claim. Only threads that never receive signals run
        this (pool threads, and callers other than the main thread), so the bookkeeping
        below cannot be cut short by a KeyboardInterrupt."""
        saved = (getattr(_local, "pool", None), getattr(_local, "group", None),
                 getattr(_local, "index", 0), getattr(_local, "meter", None))
        _local.pool, _local.group = self.pool, self
        meter = self.meter if threading.get_ident() != self.owner else None
        if meter is not None:
            _local.meter = meter
        try:
            while True:
                index = self._claim()
                if index is None:
                    return
                _local.index = index
                start = time.thread_time() if meter is not None else 0.0
                try:
                    self.results[index] = self.function(self.items[index])
                except BaseException as exc:      # noqa: B902 - re-raised by parallel_map
                    self.fail(exc, index)
                finally:
                    if meter is not None:
                        meter.add(time.thread_time() - start)
                    with self._cond:
                        self._running -= 1
                        self._cond.notify_all()
        finally:
            _local.pool, _local.group, _local.index, _local.meter = saved

    def release(self):
        """Drop the items, the function, the results and the error (the caller has taken
        them) once the map is finished. A helper submitted while every pool thread was busy
        (a nested map inside the items of an outer one) waits in the executor's queue until a
        thread is free, holding this group: without this, it would keep the map's arrays
        alive until then (every fold's kernel block through a whole cross-validation). The
        late helper then finds nothing to claim."""
        with self._cond:
            self.items, self.function, self.results, self.error = (), None, None, None

    def _finished(self):
        return self._running == 0 and (
            self._next >= min(len(self.items), self.stop_from) or
            _stopped(self.parent, self.parent_index))

    def wait(self):
        """Wait until no thread works on the map any more. A signal arriving meanwhile
        (KeyboardInterrupt, Terminated: the main thread) stops every item, and the wait goes
        on until the other threads have stopped (within ~10^4 solver steps), so that no
        thread outlives the call; or, in the commands, at most _abandon_after seconds more
        (an item inside one long library call cannot stop sooner)."""
        deadline = None
        while True:
            try:
                with self._cond:
                    while not self._finished():
                        if deadline is not None and time.monotonic() >= deadline:
                            self.pool.abandoned = True
                            return
                        self._cond.wait(WAIT_SECONDS)
                return
            except BaseException as exc:          # noqa: B902 - signals while waiting
                self.interrupt(exc)
                if deadline is None and _abandon_after is not None:
                    deadline = time.monotonic() + _abandon_after


def interruptible(function, *args):
    """function(*args), called in a helper thread while the main thread waits for it, when the
    caller is the main thread: one library call that holds the GIL for long (numpy's eigh of a
    5,000 × 5,000 kernel matrix: 20 s) would otherwise keep Ctrl-C and SIGTERM from the main
    thread until it returns. When a signal ends the wait, the call is left to finish in its
    daemon thread (the command exits; a Python caller gets KeyboardInterrupt at once)."""
    if threading.current_thread() is not threading.main_thread():
        return function(*args)
    outcome = {}
    meter = getattr(_local, "meter", None)

    def call():
        start = time.thread_time()
        try:
            outcome["result"] = function(*args)
        except BaseException as exc:            # noqa: B902 - re-raised in the caller
            outcome["error"] = exc
        finally:
            if meter is not None:
                meter.add(time.thread_time() - start)

    thread = threading.Thread(target=call, name="bsvm-interruptible", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(WAIT_SECONDS)               # signals are handled between the waits
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def parallel_map(function, items):
    """[function(item) for item in items], with the items spread over the active pool's
    threads (see the module docstring): the same results, and the same exception, as that
    loop.

    The main thread only coordinates (it is where signals arrive); any other calling thread
    (a pool thread running an outer item) works on the items itself."""
    items = list(items)
    active = active_pool()
    if active is None or len(items) <= 1:
        return [function(item) for item in items]
    group = _Group(function, items, active)
    coordinator = threading.current_thread() is threading.main_thread()
    helpers = min(active.n_threads, len(items)) - (0 if coordinator else 1)
    try:
        for _ in range(helpers):
            active.submit(group.work)
        if not coordinator:
            group.work()
    except BaseException as exc:                 # noqa: B902 - e.g. Ctrl-C while submitting
        group.interrupt(exc)
    group.wait()
    results, error = group.results, group.error
    group.release()
    if error is not None:
        raise error
    if group.incomplete or _stopped(group.parent, group.parent_index):
        raise Cancelled()                 # an enclosing map stopped this one
    return results


class ordered_map:
    """``with ordered_map(function, iterable) as results:`` yields function(item) for every
    item, in order, while the items are computed up to ``ahead`` at a time (default: twice
    the threads) in the active pool's threads; the iterable is consumed in the calling
    thread as results are taken (bsvm-predict: the main thread reads blocks of the test
    file while the workers parse and predict the blocks read before). An item's exception
    is raised when its result is taken, as the serial loop would raise it; leaving the block
    (done, an error, Ctrl-C) stops the work still in flight and waits for it. Without an
    active pool the items are computed one by one in the calling thread. pool: a Pool to use
    instead of the active one (bsvm-train --stream keeps its buffers on one parser thread)."""

    def __init__(self, function, iterable, ahead=None, pool=None):
        self.function = function
        self.iterable = iterable
        self.pool = pool if pool is not None else active_pool()
        self.ahead = ahead or 2 * (self.pool.n_threads if self.pool is not None else 1)
        self.group = _Group(None, (), self.pool)
        self.group.stop_from = float("inf")
        self.pending = collections.deque()

    def __enter__(self):
        return self._results() if self.pool is not None else map(self.function, self.iterable)

    def __exit__(self, exc_type, exc, traceback):
        self.group.stop_from = 0              # nothing runs that has not finished yet
        # a signal that ends the block, or arrives while it waits here, bounds the wait as in
        # _Group.wait (abandon_stuck_threads_after); one arriving here is raised afterwards,
        # in place of an error already on its way out (Ctrl-C must not become exit status 1)
        signalled = None
        deadline = None
        if exc is not None and not isinstance(exc, Exception) and _abandon_after is not None:
            deadline = time.monotonic() + _abandon_after
        while self.pending:
            try:
                timeout = None if deadline is None else deadline - time.monotonic()
                if timeout is not None and timeout <= 0:
                    self.pool.abandoned = True
                    break
                concurrent.futures.wait([self.pending[0]], timeout=timeout)
            except BaseException as caught:      # noqa: B902 - signals while waiting
                signalled = signalled or caught
                if deadline is None and _abandon_after is not None:
                    deadline = time.monotonic() + _abandon_after
                continue
            if self.pending[0].done():
                self.pending.popleft()
        if signalled is not None and (exc is None or isinstance(exc, Exception)):
            raise signalled
        return False

    def _run(self, item, index):
        saved = (getattr(_local, "pool", None), getattr(_local, "group", None),
                 getattr(_local, "index", 0))
        _local.pool, _local.group, _local.index = self.pool, self.group, index
        try:
            check_cancelled()
            return self.function(item)
        finally:
            _local.pool, _local.group, _local.index = saved

    def _results(self):
        items = iter(self.iterable)
        for index in itertools.count():
            try:
                item = next(items)
            except StopIteration:
                break
            except Exception as exc:              # noqa: B902 - raised in its turn
                # the iterable failed (a read error) while earlier items were in flight: its
                # error comes after theirs, as in the serial loop, not before
                failed = concurrent.futures.Future()
                failed.set_exception(exc)
                self.pending.append(failed)
                break
            self.pending.append(self.pool.submit(lambda item=item, index=index:
                                                 self._run(item, index)))
            while len(self.pending) >= self.ahead:
                yield self._take()
        while self.pending:
            yield self._take()

    def _take(self):
        # the future leaves pending once its result is in: a signal during result() leaves
        # it there, for __exit__ to stop and wait for
        result = self.pending[0].result()
        self.pending.popleft()
        return result


class SummedProgress:
    """Steps summed over sub-problems that may run at the same time, for a progress
    callback(total, info): reporter(describe) gives each sub-problem its own
    report(steps, value), which adds the sub-problem's new steps to the total and calls
    callback(total, describe(value, steps)). finished() counts the sub-problems done (shown
    by the one-vs-rest texts)."""

    def __init__(self, callback):
        self.callback = callback
        self.total = 0
        self.done = 0
        self._lock = threading.Lock()

    def finished(self):
        with self._lock:
            self.done += 1

    def reporter(self, describe):
        last = [0]

        def report(steps, value):
            with self._lock:
                self.total += steps - last[0]
                last[0] = steps
                total = self.total
            self.callback(total, describe(value, steps))
        return report
