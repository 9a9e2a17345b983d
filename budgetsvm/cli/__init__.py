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


if os.path.basename(sys.argv[0] if sys.argv else "").startswith("bsvm-"):
    from budgetsvm.fileio import hold_closed_standard_streams
    hold_closed_standard_streams()


def _interrupted_while_starting(signum, frame):
    # Ctrl-C while the tools import numpy and scipy (a few tenths of a second): the exit of
    # an interrupted run, without the traceback of a KeyboardInterrupt inside an import. An
    # import that catches every exception can swallow this SystemExit, so common.run also
    # looks at the flag before it starts the work.
    _interrupted_while_starting.happened = True
    sys.stderr.write("interrupted\n")
    raise SystemExit(130)


_interrupted_while_starting.happened = False


# In the bsvm-* commands only (a program that imports this package keeps its Ctrl-C), until
# common.run takes over and restores Python's handler; a SIGINT that the shell made the process
# ignore stays ignored.
if os.path.basename(sys.argv[0] if sys.argv else "").startswith("bsvm-") and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_starting)
