"""The package's random generator written from its publications, in plain Python integers.

splitmix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", 2014) expands a
64-bit seed into the 256-bit state of xoshiro256** (Blackman & Vigna, "Scrambled linear
pseudorandom number generators", 2021); docs/ALGORITHMS.md §10.1 says how the solvers use them.
"""
MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15


def splitmix64(x):
    """Yield the outputs of splitmix64 started from state x."""
    while True:
        x = (x + GOLDEN_GAMMA) & MASK64
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        yield z ^ (z >> 31)


def _rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & MASK64


class Xoshiro256StarStar:
    def __init__(self, state):
        self.s = list(state)

    @classmethod
    def seeded(cls, seed):
        """The state the package derives from --seed: four splitmix64 outputs."""
        mix = splitmix64(seed & MASK64)
        return cls([next(mix) for _ in range(4)])

    def next(self):
        s = self.s
        result = (_rotl((s[1] * 5) & MASK64, 7) * 9) & MASK64
        t = (s[1] << 17) & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result

    def uniform(self):
        """A double in [0, 1) from the top 53 bits."""
        return (self.next() >> 11) / 2.0 ** 53

    def below(self, n):
        """Uniform in [0, n): reject the 2^64 mod n lowest outputs, then reduce modulo n."""
        threshold = (-n) % (1 << 64) % n
        x = self.next()
        while x < threshold:
            x = self.next()
        return x % n

    def shuffle(self, a):
        """Fisher–Yates (Knuth's Algorithm P) from the front: a[i] swaps with a[i + below(n - i)]."""
        a = list(a)
        n = len(a)
        for i in range(n - 1):
            j = i + self.below(n - i)
            a[i], a[j] = a[j], a[i]
        return a
