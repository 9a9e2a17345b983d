"""The budgeted solvers' unbudgeted algorithms in plain numpy on a full kernel matrix, replaying
the compiled solvers' visiting order (epoch e visits the e-th Random(seed).permutation(n)):
kernel Pegasos / NORMA (Shalev-Shwartz et al. 2011; Kivinen et al. 2004; docs/ALGORITHMS.md §1)
and stochastic coordinate ascent on the dual (docs/ALGORITHMS.md §3)."""
import numpy as np

from budgetsvm._rng import Random


def pegasos(K, y, C, epochs, seed, weights=None, variant="pegasos", eta=1.0):
    """Kernel Pegasos (or NORMA, η_t = η/√t) with an explicit coefficient per training row and
    the shrink of every coefficient each step; y = ±1, weights the per-row class weights.
    Returns α, with f(x) = Σ α_i k(x_i, x)."""
    n = len(y)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    lam = 1.0 / (n * C)
    alpha = np.zeros(n)
    rng, t = Random(seed), 0
    for _ in range(epochs):
        for i in rng.permutation(n):
            t += 1
            f = alpha @ K[:, i]
            eta_t = 1.0 / (lam * t) if variant == "pegasos" else eta / np.sqrt(t)
            if t > 1:
                alpha *= 1.0 - eta_t * lam
            if y[i] * f < 1:
                alpha[i] += eta_t * y[i] * w[i]
    return alpha


def sca(K, y, upper, epochs, seed):
    """Stochastic coordinate ascent on the SVM dual without bias; returns α and every step's δ."""
    n = len(y)
    alpha = np.zeros(n)
    rng = Random(seed)
    deltas = []
    for _ in range(epochs):
        for i in rng.permutation(n):
            f = (alpha * y) @ K[:, i]
            new = min(max(alpha[i] + (1.0 - y[i] * f) / K[i, i], 0.0), upper[i])
            deltas.append(new - alpha[i])
            alpha[i] = new
    return alpha, np.array(deltas)
