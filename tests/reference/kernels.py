"""Kernels in plain numpy, from their definitions (docs/ALGORITHMS.md §0): the oracles of the
kernel values our compiled kernels and the models compute."""
import numpy as np


def rbf(A, B, gamma, block=None):
    """K_ij = exp(−γ ‖a_i − b_j‖²) for dense A (m × d) and B (n × d), in the precision of A and B
    (float32 arrays give a float32 matrix). With block, the rows of K are computed `block` rows
    of A at a time, so that the temporaries stay small next to a large K."""
    if block is not None:
        out = np.empty((A.shape[0], B.shape[0]), np.result_type(A, B))
        for start in range(0, A.shape[0], block):
            out[start:start + block] = rbf(A[start:start + block], B, gamma)
        return out
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-gamma * np.maximum(d2, 0))


def kernel_entrywise(kind, X, S, gamma=0.3, degree=3, coef0=0.5):
    """k(x_i, s_j) entry by entry from the definitions, with LIBSVM's conventions (rbf
    exp(−γ‖x − s‖²), linear ⟨x, s⟩, poly (γ⟨x, s⟩ + coef0)^degree, sigmoid tanh(γ⟨x, s⟩ + coef0)),
    for sparse X and S; the narrower of the two is padded with zero columns."""
    X, S = np.asarray(X.toarray()), np.asarray(S.toarray())
    width = max(X.shape[1], S.shape[1])
    X = np.pad(X, ((0, 0), (0, width - X.shape[1])))
    S = np.pad(S, ((0, 0), (0, width - S.shape[1])))
    out = np.empty((X.shape[0], S.shape[0]))
    for i, x in enumerate(X):
        for j, v in enumerate(S):
            out[i, j] = {"rbf": lambda: np.exp(-gamma * np.sum((x - v) ** 2)),
                         "linear": lambda: x @ v,
                         "poly": lambda: (gamma * (x @ v) + coef0) ** degree,
                         "sigmoid": lambda: np.tanh(gamma * (x @ v) + coef0)}[kind]()
    return out
