"""The command-line tools (bsvm-train, bsvm-predict, bsvm-grid, bsvm-scale).

Before numpy is loaded, the BLAS libraries are limited to one thread. A multi-threaded BLAS
splits sums differently with the number of threads, which changes the last bits of the refit of
bsgd/bsca (and of kernel decision values): with one BLAS thread a model file depends only on the
data, the options and the seed, not on the machine's core count or the environment. The tools'
own parallelism does not come from BLAS.
"""
import os
import signal
import sys

for _variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS"):
    os.environ[_variable] = "1"


# what an interrupted run prints and its exit status, by signal (here and in common)
SIGNAL_EXITS = {signal.SIGINT: ("interrupted", 130), signal.SIGTERM: ("terminated", 143)}


def _interrupted_while_starting(signum, frame):
    # Ctrl-C or SIGTERM while the tools import numpy and scipy (a few tenths of a second): the
    # exit of an interrupted run (130, or 143 for SIGTERM, which would otherwise kill the
    # process), without the traceback of a KeyboardInterrupt inside an import. The process ends
    # here: nothing is written before common.run takes over, so there is nothing to clean up.
    # Raising SystemExit instead, Python could run this inside a callback that only prints its
    # exceptions ("Exception ignored in ... SystemExit: 130"), an import that catches every
    # exception could swallow it, and a second signal during the unwinding killed the process.
    message, status = SIGNAL_EXITS.get(signum, SIGNAL_EXITS[signal.SIGINT])
    try:
        os.write(2, (message + "\n").encode())
    except OSError:
        pass                            # standard error closed: the status still tells
    os._exit(status)


def _in_a_worker_process():
    # bsvm-grid's spawned pool workers import the command's module too (with its argv, while
    # multiprocessing prepares them: the command itself has not imported it yet); they are
    # stopped by SIGTERM and must die of it, not raise SystemExit inside a task
    return "multiprocessing" in sys.modules


# In the bsvm-* commands only (a program that imports this package keeps its signals), until
# common.run takes over; a signal that the shell made the process ignore stays ignored.
if os.path.basename(sys.argv[0] if sys.argv else "").startswith("bsvm-"):
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_starting)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL and not _in_a_worker_process():
        signal.signal(signal.SIGTERM, _interrupted_while_starting)
    # after the handlers: these imports (compression modules, hashlib) take 10-25 ms
    from budgetsvm.fileio import hold_closed_standard_streams
    hold_closed_standard_streams()
    # before the command's modules import scipy.sparse: about 70 ms less start-up
    from budgetsvm.lean_import import import_scipy_sparse
    import_scipy_sparse()
    # before any worker thread allocates: one malloc arena for all of them (lower peak memory)
    from budgetsvm.threads import share_one_malloc_arena
    share_one_malloc_arena()
