# Small helpers every compiled solver loop shares (inline: no link dependency).
from cpython.exc cimport PyErr_CheckSignals
from posix.time cimport CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, clock_gettime, timespec


cdef inline double monotonic_seconds() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <double>ts.tv_sec + 1e-9 * <double>ts.tv_nsec


cdef inline double thread_cpu_seconds() noexcept nogil:
    # CPU time of this thread: the fair timer on a shared machine
    cdef timespec ts
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return <double>ts.tv_sec + 1e-9 * <double>ts.tv_nsec


cdef inline int check_signals() except -1 nogil:
    # Re-acquire the GIL just long enough to run Python's signal handlers; a pending Ctrl-C
    # raises KeyboardInterrupt here and unwinds out of the nogil loop (callers complete every
    # step before checking, so their state stays consistent). Signals reach the main thread
    # only: a loop in a worker thread (-n) stops here when its parallel map has failed or was
    # interrupted (budgetsvm.threads.Cancelled).
    with gil:
        PyErr_CheckSignals()
        _check_cancelled()
    return 0


cdef inline int _check_cancelled() except -1:
    from budgetsvm.threads import check_cancelled
    check_cancelled()
    return 0
