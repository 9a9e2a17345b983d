"""Features far from unit scale (values in the hundreds, as mnist as distributed): multi-class
BSGD merging must stay finite, a diverged model is never scored, and the user is told to scale.

Oracles: a dense grid search of the merge objective of ALGORITHMS.md §1.5.3; the convex hull of
the training data (a merged point is h·x̃_m + (1−h)·x̃_n with h near [0, 1] when the points are
far apart, so it cannot leave the data's range by much); finiteness of every model value.
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm._budget import SVStore
from budgetsvm.params import TrainParams
from budgetsvm.train import train

BIN = Path(sys.executable).parent


def run(tool, *args, cwd=None):
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def hundreds(n=1000, k=3, d=20, seed=0, top=255.0):
    """k classes of n rows, d non-negative features up to a few hundred (pixel-like)."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(0, 1, (k, d))
    y = rng.integers(0, k, n)
    X = np.clip(centers[y] + 0.3 * rng.standard_normal((n, d)), 0, None) * top
    return X, y.astype(np.float64)


def write_libsvm(path, X, y):
    with open(path, "w") as f:
        for row, label in zip(X, y):
            f.write("%g" % label + "".join(f" {j + 1}:{v:.6g}" for j, v in enumerate(row) if v)
                    + "\n")


def merge_objective(a1, a2, logk, h):
    return a1 * np.exp(logk * (1 - h) ** 2) + a2 * np.exp(logk * h ** 2)


@pytest.mark.parametrize("distance", [1.0, 30.0, 300.0])
@pytest.mark.parametrize("method,tol", [("gss", 0.01), ("gss-precise", 1e-6)])
def test_multiclass_merge_h_on_the_negative_interval(distance, method, tol):
    # A_m = (1, 0, −1), A_n = (−2, 1, 1): m^(r) = −1, 0 (class 2 sums to 0 and is skipped), so
    # a1 = −1, a2 = 3 and h is searched on [−5, 0]. At γ‖x̃_m − x̃_n‖² = 900 or 90000 the
    # objective underflows to 0 away from h = 0; the search must still find the maximum there.
    store = SVStore(2, 5, 3, "rbf", 1.0, 0.0, 3, "merge", "gss")
    store.insert(np.array([1.0, 2.0]), np.array([1.0, 0.0, -1.0]))
    store.insert(np.array([1.0 + distance, 2.0]), np.array([-2.0, 1.0, 1.0]))
    h, _, wd = store.evaluate_merge(0, 1, method)
    logk = -distance ** 2
    grid = np.linspace(-5.0, 0.0, 2_000_001)
    best = grid[np.argmax(merge_objective(-1.0, 3.0, logk, grid))]
    assert abs(h - best) <= tol + 2.5e-6, (h, best)
    assert np.isfinite(wd)


def test_multiclass_bsgd_stays_in_the_data_range():
    X, y = hundreds()
    model = train(sp.csr_matrix(X), y, TrainParams(budget=30, epochs=1))
    sv = model.sv.toarray()
    assert np.isfinite(sv).all() and np.isfinite(model.coef).all()
    # merged points interpolate (h ∈ [0, 1]) or extrapolate by at most the GSS tolerance
    assert np.abs(sv).max() <= 1.05 * np.abs(X).max()
    assert (model.sv.shape[0] == 30) and (model.coef.shape[1] == 3)
