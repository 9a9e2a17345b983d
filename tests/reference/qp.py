"""The SVM problems solved to high accuracy by scipy's generic optimisers (SLSQP, L-BFGS-B) on
their textbook formulations: nothing here shares code or a decomposition with our solvers, so
an optimum found by both is the problem's optimum, not an artefact of our method."""
import itertools

import numpy as np
from scipy.optimize import minimize

from reference.objectives import ww_block_kkt_violation, ww_block_objective, ww_block_scale


def linear_svm_primal(X, y, C_i, loss):
    """min ½‖w‖² + Σ C_i ξ_i (or ξ_i²) s.t. y_i⟨w,x_i⟩ + ξ_i ≥ 1, ξ ≥ 0 by SLSQP over (w, ξ).

    A generic constrained solve that shares nothing with our code; w is unique. Returns (w, the
    optimal value).
    """
    Xd = X.toarray()
    n, d = Xd.shape
    A = np.hstack([y[:, None] * Xd, np.eye(n)])

    def f(v):
        w, xi = v[:d], v[d:]
        if loss == "l2":
            return 0.5 * w @ w + np.sum(C_i * xi ** 2), np.concatenate([w, 2 * C_i * xi])
        return 0.5 * w @ w + np.sum(C_i * xi), np.concatenate([w, C_i])

    res = minimize(f, np.concatenate([np.zeros(d), np.ones(n)]), jac=True, method="SLSQP",
                   bounds=[(None, None)] * d + [(0, None)] * n,
                   constraints=[{"type": "ineq", "fun": lambda v: A @ v - 1.0,
                                 "jac": lambda v: A}],
                   options={"ftol": 1e-15, "maxiter": 10000})
    return res.x[:d], res.fun


def kernel_svm_dual(K, y, C):
    """max D(α) = Σα − ½ αᵀQα, Q_ij = y_i y_j K_ij, over the box [0, C]^n (the SVM dual without
    bias) by L-BFGS-B on −D. Returns the optimal dual value D*."""
    n = len(y)
    Q = (y[:, None] * y[None, :]) * K
    opt = minimize(lambda a: 0.5 * a @ Q @ a - a.sum(), np.zeros(n),
                   jac=lambda a: Q @ a - 1.0, method="L-BFGS-B",
                   bounds=[(0, C)] * n,
                   options={"ftol": 1e-16, "gtol": 1e-12, "maxiter": 10000})
    return -opt.fun


def ww_dual(X, y, k, C):
    """The Weston–Watkins dual (D2 of Wang & Scott 2021): min g(β) = ½‖W(β)‖² − Σβ over
    [0, C]^{n×(k−1)} by L-BFGS-B, W(β) written as a dense tensor of ±1 per (i, t, class).
    Returns the optimal value g* (= −D*)."""
    n = X.shape[0]
    Xd = X.toarray()
    K = k - 1
    M = np.zeros((n, K, k))   # coefficient of x_i in w_c per unit of β_it
    for i in range(n):
        for t in range(K):
            c = t + 1 if t + 1 != y[i] else 0
            M[i, t, y[i]] += 1.0
            M[i, t, c] -= 1.0

    def fg(bflat):
        B = bflat.reshape(n, K)
        A = np.einsum("it,itc->ic", B, M)
        W = Xd.T @ A
        g = 0.5 * (W * W).sum() - B.sum()
        grad = np.einsum("ic,itc->it", Xd @ W, M) - 1.0
        return g, grad.ravel()

    res = minimize(fg, np.zeros(n * K), jac=True, method="L-BFGS-B", bounds=[(0, C)] * (n * K),
                   options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 20000, "maxcor": 30})
    return res.fun


def ww_block_by_enumeration(v, C):
    """The minimiser of the Weston–Watkins block subproblem (4) over [0, C]^K by trying every
    upper/free/lower partition (3^K) and keeping the KKT point (unique by strict convexity)."""
    K = len(v)
    best = None
    for part in itertools.product((0, 1, 2), repeat=K):      # 0 lower, 1 free, 2 upper
        part = np.array(part)
        nU, nF = int((part == 2).sum()), int((part == 1).sum())
        gam = (C * nU + v[part == 1].sum()) / (1 + nF)
        b = np.where(part == 2, C, np.where(part == 1, v - gam, 0.0))
        if ww_block_kkt_violation(b, v, C) <= 1e-12 * ww_block_scale(v, C):
            if best is None or ww_block_objective(b, v) < ww_block_objective(best, v):
                best = b
    return best


def ww_block_by_lbfgs(v, C):
    """The minimiser of the Weston–Watkins block subproblem (4) over [0, C]^K by L-BFGS-B."""
    K = len(v)
    res = minimize(lambda b: ww_block_objective(b, v), np.zeros(K),
                   jac=lambda b: b + b.sum() - v,
                   method="L-BFGS-B", bounds=[(0, C)] * K,
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000})
    return res.x


def reduced_objective(beta_b, K_xS, K_SS, y, cost):
    """The refit's reduced problem in β-space, ½βᵀK_SSβ + Σ c_i max(0, 1 − y_i(K_xS β + b))²,
    and its gradient in (β, b)."""
    beta, b = beta_b[:-1], beta_b[-1]
    xi = np.maximum(1.0 - y * (K_xS @ beta + b), 0.0)
    value = 0.5 * beta @ K_SS @ beta + cost @ (xi * xi)
    g_f = -2.0 * cost * y * xi
    return value, np.append(K_SS @ beta + K_xS.T @ g_f, g_f.sum())


def reduced_refit(K_xS, K_SS, y, cost, bias=True):
    """The reduced problem (reduced_objective) solved by a generic quasi-Newton method (scipy
    L-BFGS-B); without bias, b is held at 0 by its bounds. Returns (β, b, the optimal value)."""
    start = np.zeros(K_SS.shape[0] + 1)
    bounds = [(None, None)] * K_SS.shape[0] + [(None, None) if bias else (0.0, 0.0)]
    res = minimize(reduced_objective, start, args=(K_xS, K_SS, y, cost), jac=True,
                   method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 50000, "maxfun": 100000, "ftol": 1e-15, "gtol": 1e-11})
    return res.x[:-1], res.x[-1], res.fun
