# The only source of randomness in compiled code: xoshiro256** seeded through splitmix64.
# Platform independent, so the same --seed gives the same model everywhere. Inline, so every
# solver cimports it without a link dependency.
from libc.stdint cimport uint64_t

cdef extern from *:
    """
    /* The high 64 bits of the 128-bit product x*n: uniform in [0, n) up to a bias below
       n / 2^64, without a division (Lemire, "Fast random integer generation in an interval",
       2019). */
    #define BSVM_MULHI64(x, n) ((uint64_t)(((unsigned __int128)(x) * (unsigned __int128)(n)) >> 64))
    """
    uint64_t _mulhi64 "BSVM_MULHI64"(uint64_t x, uint64_t n) noexcept nogil


cdef struct Rng:
    uint64_t s0, s1, s2, s3


cdef inline uint64_t _splitmix64(uint64_t* x) noexcept nogil:
    x[0] += <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t z = x[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline void rng_seed(Rng* r, uint64_t seed) noexcept nogil:
    cdef uint64_t x = seed
    r.s0 = _splitmix64(&x)
    r.s1 = _splitmix64(&x)
    r.s2 = _splitmix64(&x)
    r.s3 = _splitmix64(&x)


cdef inline uint64_t _rotl(uint64_t x, int k) noexcept nogil:
    return (x << k) | (x >> (64 - k))


cdef inline uint64_t rng_next(Rng* r) noexcept nogil:
    cdef uint64_t result = _rotl(r.s1 * 5, 7) * 9
    cdef uint64_t t = r.s1 << 17
    r.s2 ^= r.s0
    r.s3 ^= r.s1
    r.s1 ^= r.s2
    r.s0 ^= r.s3
    r.s2 ^= t
    r.s3 = _rotl(r.s3, 45)
    return result


cdef inline double rng_uniform(Rng* r) noexcept nogil:
    """Uniform double in [0, 1) with 53 random bits."""
    return (rng_next(r) >> 11) * (1.0 / 9007199254740992.0)


cdef inline Py_ssize_t rng_below(Rng* r, Py_ssize_t n) noexcept nogil:
    """Uniform integer in [0, n) without modulo bias (rejection of the short last block)."""
    cdef uint64_t un = <uint64_t>n
    cdef uint64_t threshold = (<uint64_t>0 - un) % un
    cdef uint64_t x = rng_next(r)
    while x < threshold:
        x = rng_next(r)
    return <Py_ssize_t>(x % un)


cdef inline void rng_shuffle(Rng* r, Py_ssize_t* a, Py_ssize_t n) noexcept nogil:
    """Fisher–Yates shuffle of a[0:n], drawing from the back as LIBLINEAR does."""
    cdef Py_ssize_t i, j, tmp
    # the state in a local copy, so that it can stay in registers: the stores to a[] could
    # alias *r (Py_ssize_t and uint64_t may), which made every draw reload it from memory
    cdef Rng local = r[0]
    for i in range(n - 1):
        j = i + rng_below(&local, n - i)
        tmp = a[i]
        a[i] = a[j]
        a[j] = tmp
    r[0] = local


cdef inline void rng_shuffle_fast(Rng* r, Py_ssize_t* a, Py_ssize_t n) noexcept nogil:
    """Fisher–Yates shuffle of a[0:n] with multiply-shift draws: no division per element, a
    different (equally seeded) sequence than rng_shuffle. For loops that shuffle every sweep."""
    cdef Py_ssize_t i, j, tmp
    cdef Rng local = r[0]            # in registers, as in rng_shuffle
    for i in range(n - 1, 0, -1):
        j = <Py_ssize_t>_mulhi64(rng_next(&local), <uint64_t>(i + 1))
        tmp = a[i]
        a[i] = a[j]
        a[j] = tmp
    r[0] = local
