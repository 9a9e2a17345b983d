"""Python access to the package's RNG (budgetsvm/_random.pxd) for cross-validation folds and for
tests that replay a solver's index sequence in plain numpy."""
import numpy as np

from libc.stdint cimport uint64_t
from budgetsvm._random cimport Rng, rng_seed, rng_next, rng_uniform, rng_below, rng_shuffle


cdef class Random:
    cdef Rng state

    def __init__(self, uint64_t seed):
        rng_seed(&self.state, seed)

    def next_uint64(self):
        return rng_next(&self.state)

    def uniform(self):
        return rng_uniform(&self.state)

    def below(self, Py_ssize_t n):
        if n <= 0:
            raise ValueError("n must be positive")
        return rng_below(&self.state, n)

    def shuffle(self, Py_ssize_t[::1] a):
        """Shuffle a (intp array) in place exactly as the solvers do."""
        rng_shuffle(&self.state, &a[0], a.shape[0]) if a.shape[0] > 0 else None

    def permutation(self, Py_ssize_t n):
        a = np.arange(n, dtype=np.intp)
        self.shuffle(a)
        return a
