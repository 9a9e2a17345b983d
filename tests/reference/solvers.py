"""The solvers' algorithms written from their publications in plain numpy / Python, replaying the
compiled solvers' visiting order through budgetsvm._rng (for the budgeted solvers: epoch e visits
the e-th Random(seed).permutation(n)), so that a compiled solver must equal them float for float
or up to rounding:
kernel Pegasos / NORMA (Shalev-Shwartz et al. 2011; Kivinen et al. 2004; docs/ALGORITHMS.md §1)
and its Crammer–Singer multi-class step (§1.4) on a full kernel matrix, without a budget;
stochastic coordinate ascent on the dual (§3); adaptive coordinate frequencies, Algorithms 3–5 of
Glasmachers & Dogan 2013 (§4.4); the Weston–Watkins block coordinate descent, Algorithm 1 of
Wang & Scott 2021 (§5.6)."""
import math

import numpy as np

from budgetsvm import _ww
from budgetsvm._rng import Random
from reference.kernels import rbf


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


def sca(K, y, upper, epochs, seed, on_epoch=None):
    """Stochastic coordinate ascent on the SVM dual without bias (box [0, upper_i]), each step
    computing the exact decision value from column i of K; returns α and every step's δ.
    on_epoch(epoch, α), if given, is called after each epoch (epoch = 1, 2, …)."""
    n = len(y)
    alpha = np.zeros(n)
    rng = Random(seed)
    deltas = []
    for epoch in range(1, epochs + 1):
        for i in rng.permutation(n):
            f = (alpha * y) @ K[:, i]
            new = min(max(alpha[i] + (1.0 - y[i] * f) / K[i, i], 0.0), upper[i])
            deltas.append(new - alpha[i])
            alpha[i] = new
        if on_epoch is not None:
            on_epoch(epoch, alpha)
    return alpha, np.array(deltas)


def pegasos_rbf(X, y_index, C, gamma, epochs, seed, class_weight=(1.0, 1.0),
                variant="pegasos", eta=1.0):
    """pegasos on the RBF kernel matrix of dense X for binary class indices (class 0 is +1,
    class 1 is −1) with per-class weights: the unbudgeted run a budgeted one without
    maintenance must equal."""
    y = np.where(y_index == 0, 1.0, -1.0)
    return pegasos(rbf(X, X, gamma), y, C, epochs, seed,
                   weights=np.asarray(class_weight)[y_index], variant=variant, eta=eta)


def crammer_singer_step(alpha, K, y, i, t, nC, w):
    """One step of multi-class kernel Pegasos with the Crammer–Singer loss, in place on the
    aggregated coefficients alpha (n × k): the shrink by (t − 1)/t of every coefficient, then, if
    row i (class y_i, weight w_{y_i}) violates the margin against its runner-up class r,
    α_{i,y_i} += (nC/t)·w and α_{i,r} −= (nC/t)·w (docs/ALGORITHMS.md §1.4)."""
    f = alpha.T @ K[:, i]
    k = alpha.shape[1]
    others = [r for r in range(k) if r != y[i]]
    runner = others[int(np.argmax(f[others]))]
    eta_t = nC / t
    if t > 1:
        alpha *= (t - 1) / t
    if 1 + f[runner] - f[y[i]] > 0:
        alpha[i, y[i]] += eta_t * w[y[i]]
        alpha[i, runner] -= eta_t * w[y[i]]


def row_dot(w, data, ind, start, stop):
    """⟨w, x⟩ for the sparse row data[start:stop] at columns ind[start:stop], summed as the
    linear solvers sum it (budgetsvm/_csr.pxd): four partial sums over the nonzeros k ≡ 0, 1,
    2, 3 (mod 4) from start, combined as (s0 + s1) + (s2 + s3), then the tail in order."""
    s = [0.0, 0.0, 0.0, 0.0]
    end4 = start + (stop - start) // 4 * 4
    for k in range(start, end4):
        s[(k - start) % 4] += w[ind[k]] * data[k]
    total = (s[0] + s[1]) + (s[2] + s[3])
    for k in range(end4, stop):
        total += w[ind[k]] * data[k]
    return total


def acf_paper(X, y, C, eps, loss="l1", seed=1, c=0.2, pmin=0.05, pmax=20.0):
    """Algorithms 3–5 of Glasmachers & Dogan (2013) with Algorithm 4's schedule and the [JC] guards
    of docs/ALGORITHMS.md §4.4, one plain-Python float operation at a time, drawing from the
    solvers' generator (budgetsvm._rng) in the same order. Returns (w, alpha, sweeps, updates)."""
    n_rows = X.shape[0]
    data, ind, ptr = X.data, X.indices, X.indptr
    ys = np.where(np.asarray(y) > 0, 1.0, -1.0)
    C_i = np.full(n_rows, float(C))
    sq = [sum(data[k] * data[k] for k in range(ptr[i], ptr[i + 1])) for i in range(n_rows)]
    U = C_i if loss == "l1" else np.full(n_rows, np.inf)
    D = np.zeros(n_rows) if loss == "l1" else 0.5 / C_i
    QD = [sq[i] + D[i] for i in range(n_rows)]
    alpha = [U[i] if QD[i] <= 0 else 0.0 for i in range(n_rows)]
    order = [i for i in range(n_rows) if QD[i] > 0]
    n = len(order)
    w = [0.0] * X.shape[1]
    pref = [1.0] * n_rows
    rng = Random(seed)
    inv_n = 1.0 / n
    fade = 1.0 - inv_n
    delta_ref, first, canstop, sweeps, updates = 0.0, True, True, 0, 0
    while True:
        # Algorithm 4 (N summed exactly; the last row, or N ≤ 1e-6·n, takes the rest)
        N = 0.0
        for i in order:
            N += pref[i]
        schedule, j = [], 0
        for k, i in enumerate(order):
            r = n - j
            mi = float(r) if k == n - 1 or N <= 1e-6 * n else min(float(r), pref[i] * r / N)
            ni = int(mi)
            if mi - ni > 0.0 and rng.uniform() < mi - ni:
                ni += 1
            schedule += [i] * ni
            j += ni
            N -= pref[i]
        schedule = np.array(schedule, dtype=np.intp)
        rng.shuffle(schedule)
        v = 0.0
        for i in schedule:
            s = row_dot(w, data, ind, ptr[i], ptr[i + 1])
            g = 1.0 - ys[i] * s - (alpha[i] * D[i] if loss == "l2" else 0.0)
            pg = 0.0 if (alpha[i] == 0.0 and g < 0.0) or (alpha[i] == U[i] and g > 0.0) else g
            v = max(v, abs(pg))
            delta = 0.0
            if abs(pg) > 1e-12:
                a_new = alpha[i] + g / QD[i]
                if a_new < 0.0 or a_new > U[i]:
                    a_new = 0.0 if a_new < 0.0 else U[i]
                    mu = a_new - alpha[i]
                    delta = mu * (g - 0.5 * mu * QD[i])
                else:
                    mu = a_new - alpha[i]
                    delta = 0.5 * g * g / QD[i]
                alpha[i] = a_new
                for k in range(ptr[i], ptr[i + 1]):
                    w[ind[k]] += (mu * ys[i]) * data[k]
                updates += 1
            if first:
                delta_ref += delta * inv_n
            else:
                if delta_ref > 0.0:
                    pref[i] = min(max(pref[i] * math.exp(c * (delta / delta_ref - 1.0)), pmin),
                                  pmax)
                delta_ref = fade * delta_ref + delta * inv_n
        sweeps += 1
        first = False
        if v < eps:
            if canstop:
                return np.array(w), np.array(alpha), sweeps, updates
            pref = [1.0] * n_rows
            canstop = True
        else:
            canstop = False


def ww_algorithm_1(X, y, k, C, iterations, seed):
    """Algorithm 1 of Wang & Scott (2021) (§5.6) in plain Python floats: a fresh permutation from
    the solvers' generator per outer iteration, the k scores summed nonzero by nonzero, v as in
    §5.4, the block solved by Walrus (the _ww.walrus entry point: tests/test_ww.py checks it on its
    own against exact rationals, enumeration and L-BFGS-B) and W updated by x_i Δᵀ. Returns
    (W, β)."""
    n, d = X.shape
    K = k - 1
    data, ind, ptr = X.data, X.indices, X.indptr
    W = np.zeros((d, k))
    beta = np.zeros((n, K))
    gamma = np.zeros(n)
    sq = np.zeros(n)
    for i in range(n):
        for q in range(ptr[i], ptr[i + 1]):
            sq[i] += data[q] ** 2
    order = np.array([i for i in range(n) if sq[i] > 0], dtype=np.intp)
    rng = Random(seed)
    for _ in range(iterations):
        rng.shuffle(order)
        for i in order:
            z = [0.0] * k
            for q in range(ptr[i], ptr[i + 1]):
                for c in range(k):
                    z[c] += data[q] * W[ind[q], c]
            cls = [t + 1 if t + 1 != y[i] else 0 for t in range(K)]
            inv_sq = 1.0 / sq[i]
            v = np.array([(1.0 - z[y[i]] + z[c]) * inv_sq + beta[i, t] + gamma[i]
                          for t, c in enumerate(cls)])
            b, gam, _ = _ww.walrus(v, C)
            dc = [0.0] * k
            sumd = 0.0
            for t, c in enumerate(cls):
                delta = b[t] - beta[i, t]
                if delta != 0.0:
                    dc[c] = -delta
                    sumd += delta
                    beta[i, t] = b[t]
            if sumd == 0.0 and all(x == 0.0 for x in dc):
                continue
            dc[y[i]] = sumd
            gamma[i] = gam
            for q in range(ptr[i], ptr[i + 1]):
                for c in range(k):
                    if dc[c] != 0.0:
                        W[ind[q], c] += data[q] * dc[c]
    return W, beta

