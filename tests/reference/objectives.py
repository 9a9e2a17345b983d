"""The SVM objectives, gradients and weight vectors recomputed in numpy from their definitions
(docs/ALGORITHMS.md §3, §4, §5), from a solver's returned α, β or w alone: a solver's own figures
are checked against them, never against themselves."""
import numpy as np


def rel(a, b):
    """|a − b| / max(|a|, |b|): the relative difference of two objective values."""
    return abs(a - b) / max(abs(a), abs(b))


def linear_primal(X, y, C_i, w, loss="l1"):
    """½‖w‖² + Σ C_i ξ_i (loss "l1") or Σ C_i ξ_i² ("l2"), ξ_i = max(0, 1 − y_i⟨w, x_i⟩)."""
    xi = np.maximum(0.0, 1.0 - y * (X @ w))
    return 0.5 * w @ w + np.sum(C_i * (xi ** 2 if loss == "l2" else xi))


def projected_gradient(X, y, C_i, alpha, w, loss="l1"):
    """The projected gradient of the linear SVM dual in ascent form, of every coordinate,
    recomputed from α and w: g_i = 1 − y_i⟨w, x_i⟩ − D_ii α_i, D_ii = 0 (l1) or 1/(2C_i) (l2),
    projected on the box [0, C_i] (l1) or [0, ∞) (l2)."""
    D = 0.5 / C_i if loss == "l2" else np.zeros_like(C_i)
    U = np.full_like(C_i, np.inf) if loss == "l2" else C_i
    g = 1.0 - y * (X @ w) - D * alpha
    return np.where(alpha <= 0, np.maximum(g, 0), np.where(alpha >= U, np.minimum(g, 0), g))


def kernel_dual(K, y, alpha):
    """The SVM dual without bias, D(α) = Σα − ½ (α∘y)ᵀ K (α∘y)."""
    v = alpha * y
    return alpha.sum() - 0.5 * v @ K @ v


def ww_block_objective(b, v):
    """The Weston–Watkins block subproblem (4) of Wang & Scott (2021): ½ bᵀ(I + 11ᵀ)b − vᵀb."""
    return 0.5 * (b @ b + b.sum() ** 2) - v @ b


def ww_block_scale(v, C):
    """The size of a block subproblem (v, C), max(1, C, ‖v‖_∞): tolerances scale with it."""
    return max(1.0, C, float(np.max(np.abs(v))) if len(v) else 0.0)


def ww_block_kkt_violation(b, v, C):
    """Max projected-gradient violation of (4) at b on the box [0, C]^K (the gradient
    b + (1ᵀb)1 − v), and b's distance from the box."""
    g = b + b.sum() - v
    lower = b <= 0
    upper = b >= C
    free = ~lower & ~upper
    viol = np.zeros_like(b)
    viol[free] = np.abs(g[free])
    viol[lower] = np.maximum(0.0, -g[lower])
    viol[upper] = np.maximum(0.0, g[upper])
    feas = max(0.0, -float(b.min(initial=0.0)), float(b.max(initial=0.0)) - C)
    return max(float(viol.max(initial=0.0)), feas)


def ww_weights(X, y, beta, k):
    """W(β) = Σ_i x_i (γ_i e_{y_i} − Σ_t β_it e_{o_i(t)})ᵀ, from scratch (d × k), with
    γ_i = Σ_t β_it and o_i(t) the t-th class other than y_i (t + 1, or 0 in y_i's place)."""
    n = X.shape[0]
    A = np.zeros((n, k))          # A[i, c]: coefficient of x_i in w_c
    for i in range(n):
        A[i, y[i]] += beta[i].sum()
        for t in range(k - 1):
            c = t + 1 if t + 1 != y[i] else 0
            A[i, c] -= beta[i, t]
    return np.asarray(X.T @ A)


def ww_primal_dual(X, y, W, beta, C_i):
    """The Weston–Watkins primal ½‖W‖² + Σ_i C_i Σ_{c ≠ y_i} max(0, 1 − ⟨w_{y_i} − w_c, x_i⟩)
    and dual Σβ − ½‖W‖², at (W, β)."""
    Z = np.asarray(X @ W)
    zy = Z[np.arange(len(y)), y]
    H = np.maximum(0.0, 1.0 - zy[:, None] + Z)
    H[np.arange(len(y)), y] = 0.0
    wsq = float((W * W).sum())
    return 0.5 * wsq + float((C_i * H.sum(axis=1)).sum()), float(beta.sum()) - 0.5 * wsq
