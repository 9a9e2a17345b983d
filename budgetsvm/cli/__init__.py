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


def _hold_closed_standard_streams():
    # Started with standard input, output or error closed (`<&-`, `>&-`, `2>&-`), Python leaves
    # sys.stdin/stdout/stderr None. Their descriptors go to /dev/null, so that no file opened
    # later takes descriptor 0, 1 or 2 (a model file on descriptor 2 would receive whatever is
    # written to "stderr"). sys.stdin stays None (reading "-" then says it is closed, fileio),
    # sys.stdout too (common.run makes its writes fail), and messages to a closed stderr go
    # nowhere instead of failing the command.
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is None:
            try:
                os.fstat(fd)
            except OSError:
                null = os.open(os.devnull, os.O_RDWR)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")


if os.path.basename(sys.argv[0] if sys.argv else "").startswith("bsvm-"):
    _hold_closed_standard_streams()


def _interrupted_while_starting(signum, frame):
    # Ctrl-C while the tools import numpy and scipy (a few tenths of a second): the exit of
    # an interrupted run, without the traceback of a KeyboardInterrupt inside an import.
    sys.stderr.write("interrupted\n")
    raise SystemExit(130)


# In the bsvm-* commands only (a program that imports this package keeps its Ctrl-C), until
# common.run takes over and restores Python's handler; a SIGINT that the shell made the process
# ignore stays ignored.
if os.path.basename(sys.argv[0] if sys.argv else "").startswith("bsvm-") and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_starting)
