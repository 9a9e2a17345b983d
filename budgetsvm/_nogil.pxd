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


cdef inline double next_signal_poll() noexcept nogil:
    # when poll_signals checks next: 0.1 s from now, well within the 1 s in which Ctrl-C must
    # stop every thread
    return monotonic_seconds() + 0.1


cdef inline int poll_signals(double* next_poll) except -1 nogil:
    # Time-based check_signals for loops whose step costs vary by orders of magnitude (a budgeted
    # step with thousands of classes takes milliseconds, a binary one microseconds): a fixed step
    # count left Ctrl-C waiting 20-80 s on multi-class data. One clock read per step (a vDSO
    # call, tens of nanoseconds) against a kernel row of B entries per step.
    # Returns 1 when it checked (the caller's cue to report progress), else 0; start with
    # next_poll = next_signal_poll().
    if monotonic_seconds() < next_poll[0]:
        return 0
    next_poll[0] = next_signal_poll()
    check_signals()
    return 1


cdef inline int _check_cancelled() except -1:
    from budgetsvm.threads import check_cancelled
    check_cancelled()
    return 0
