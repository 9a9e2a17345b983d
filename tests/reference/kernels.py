"""Kernels in plain numpy, from their definitions (docs/ALGORITHMS.md §0)."""
import numpy as np


def rbf(A, B, gamma):
    """K_ij = exp(−γ ‖a_i − b_j‖²) for dense A (m × d) and B (n × d)."""
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-gamma * np.maximum(d2, 0))
