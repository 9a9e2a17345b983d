"""The command-line tools (bsvm-train, bsvm-predict, bsvm-grid, bsvm-scale).

Before numpy is loaded, the BLAS libraries are limited to one thread. A multi-threaded BLAS
splits sums differently with the number of threads, which changes the last bits of the refit of
bsgd/bsca (and of kernel decision values): with one BLAS thread a model file depends only on the
data, the options and the seed, not on the machine's core count or the environment. The tools'
own parallelism does not come from BLAS.
"""
import os

for _variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS"):
    os.environ[_variable] = "1"
