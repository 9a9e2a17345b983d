"""A sixth solver added through the registry alone (tests/test_registry.py): "centroid", the
linear classifier w = mean of the positive rows − mean of the negative rows (one-vs-rest for
more classes), b = −½ (‖μ₊‖² − ‖μ₋‖²) as a bias feature. Registering it touches no module of the
package; every tool must then accept -s centroid."""
import numpy as np

from budgetsvm import solvers
from budgetsvm.model import LinearModel
from budgetsvm.problem import canonical_csr


def train_centroid(X, y_index, labels, params, callback=None):
    X = canonical_csr(X)
    k = len(labels)
    rows = [0] if k == 2 else range(k)
    coef, bias_coef = [], []
    for r in rows:
        positive = np.asarray(y_index) == r
        mu_pos = np.asarray(X[positive].mean(axis=0)).ravel()
        mu_neg = np.asarray(X[~positive].mean(axis=0)).ravel()
        coef.append(mu_pos - mu_neg)
        bias_coef.append(-0.5 * (mu_pos @ mu_pos - mu_neg @ mu_neg))
    if callback is not None:
        callback(1, "centroids")
    return LinearModel(labels, np.array(coef), 1.0, np.array(bias_coef),
                       "binary" if k == 2 else "ovr", "centroid", {"C": float(params.C)})


solvers.register(solvers.SolverSpec(
    "centroid", "linear", train_centroid, "nearest class mean (a test of the registry)",
    "LinearSVC"))
