"""The merge objective of two Gaussian-kernel support vectors and its weight degradation, from
their definitions (docs/ALGORITHMS.md §1.5.3, §2.1): the functions a dense grid search maximises
to check the golden-section search and the lookup tables."""
import numpy as np


def merge_objective(a1, a2, h, *, logk=None, kappa=None):
    """s(h) = a1·κ^((1−h)²) + a2·κ^(h²), κ = k(x_m, x_n), the value of the kernel at the merged
    point h·x_m + (1 − h)·x_n. κ is given either as its logarithm logk, computed as
    exp(logk·…) (κ itself may underflow, e.g. logk = −90000), or as κ, computed as a power
    (exact at κ = 0, where 0⁰ = 1)."""
    if logk is not None:
        return a1 * np.exp(logk * (1 - h) ** 2) + a2 * np.exp(logk * h ** 2)
    return a1 * np.power(kappa, (1.0 - h) ** 2) + a2 * np.power(kappa, h * h)


def weight_degradation(m, kappa, h):
    """The weight degradation of merging with weights m and 1 − m at h (coefficients normalised to
    sum 1): m² + (1 − m)² + 2m(1 − m)κ − s(h)²."""
    return (m * m + (1.0 - m) ** 2 + 2.0 * m * (1.0 - m) * kappa
            - merge_objective(m, 1.0 - m, h, kappa=kappa) ** 2)
