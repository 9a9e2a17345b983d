"""Python access to the package's RNG (budgetsvm/_random.pxd) for cross-validation folds and for
tests that replay a solver's index sequence in plain numpy, and the one rule that derives the
seed of a sub-problem from --seed."""
import numpy as np

from libc.stdint cimport uint64_t
from budgetsvm._random cimport Rng, rng_seed, rng_next, rng_uniform, rng_below, rng_shuffle


# Golden-ratio increment (splitmix64's): the seeds of consecutive sub-problems are distinct and
# their xoshiro streams unrelated once splitmix64 has mixed them.
SEED_STRIDE = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1


def sub_seed(seed, index):
    """The seed of sub-problem ``index`` (0, 1, ...) of a run with ``seed``: each one-vs-rest
    sub-problem of dcd/acf draws from its own generator seeded so, whatever thread solves it
    and in whatever order. (The one-vs-rest models of bsca all use ``seed`` itself, each with
    its own generator: the papers' setting, kept as it was.)"""
    return (int(seed) + int(index) * SEED_STRIDE) & MASK64


cdef class Random:
    cdef Rng state

    def __init__(self, uint64_t seed):
        rng_seed(&self.state, seed)

    def set_state(self, uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3):
        """Set the raw xoshiro256** state (for checking the published test vectors)."""
        self.state.s0, self.state.s1, self.state.s2, self.state.s3 = s0, s1, s2, s3

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
