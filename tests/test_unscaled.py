"""Features far from unit scale (values in the hundreds, as mnist as distributed): multi-class
BSGD merging must stay finite, a diverged model is never scored, and the user is told to scale.

Oracles: a dense grid search of the merge objective of docs/ALGORITHMS.md §1.5.3; the convex hull of
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
from reference.data import gaussian_classes, write_libsvm
from reference.merging import merge_objective

BIN = Path(sys.executable).parent


def run(tool, *args, cwd=None):
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def hundreds(n=1000, k=3, d=20, seed=0, top=255.0):
    """k classes of n rows, d non-negative features up to a few hundred (pixel-like)."""
    rng = np.random.default_rng(seed)
    X, y = gaussian_classes(rng, n, rng.uniform(0, 1, (k, d)), 0.3)
    return np.clip(X, 0, None) * top, y.astype(np.float64)


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
    best = grid[np.argmax(merge_objective(-1.0, 3.0, grid, logk=logk))]
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


# ---------------------------------------------------------------------------------------------
# A diverged model is never scored: cross-validation is an error, a grid point has no rate
# ---------------------------------------------------------------------------------------------

def heart():
    from budgetsvm import io
    return io.read_problem(Path(__file__).resolve().parent.parent / "data" / "heart_scale.xz")


def raw_bsgd_is_finite(X, y, params):
    """Train with the solver itself (no divergence check) and say whether the model is finite:
    the oracle for which runs diverge (norma with a huge η overflows its scale s)."""
    from budgetsvm.bsgd import train_bsgd
    from budgetsvm.labels import group_classes
    import dataclasses
    labels, y_index = group_classes(y)
    # the solver's own iterate (same steps: same coalescing); the refit (default polish)
    # refuses a diverged one
    model = train_bsgd(sp.csr_matrix(X), y_index, labels,
                       dataclasses.replace(params, polish="none",
                                           coalesce=params.effective_coalesce()))
    return bool(np.isfinite(model.coef).all() and np.isfinite(model.sv.data).all())


def test_cross_validation_of_a_diverged_model_is_an_error():
    from budgetsvm.errors import TrainingDiverged
    from budgetsvm.train import cross_validation, stratified_folds
    X, y = heart()
    params = TrainParams(variant="norma", eta=1e6, budget=50, epochs=1)
    fold = stratified_folds(y, 3, params.seed)
    assert not raw_bsgd_is_finite(X[fold != 0], y[fold != 0], params)     # it does diverge
    with pytest.raises(TrainingDiverged, match="fold 1 of 3: training diverged"):
        cross_validation(X, y, params, 3)
    with pytest.raises(TrainingDiverged, match="training diverged"):
        train(X, y, params)


def test_grid_gives_no_rate_to_a_diverged_point(tmp_path):
    from budgetsvm import grid
    from budgetsvm.train import stratified_folds
    X, y = heart()
    base = TrainParams(variant="norma", eta=1e4, budget=20, epochs=5)
    options = grid.GridOptions(dataset="heart_scale", params=base)
    options.c_range, options.g_range, options.fold, options.jobs = (-4.0, 4.0, 2.0), None, 3, 1
    options.out = str(tmp_path / "g.out")
    lines = []
    result = grid.run_grid(options, X, y, emit=lines.append, warn=lines.append)
    fold = stratified_folds(y, 3, base.seed)
    expected_failed = {p for p in result.order
                       if not all(raw_bsgd_is_finite(X[fold != f], y[fold != f],
                                                     grid.point_params(base, p))
                                  for f in range(3))}
    assert expected_failed and expected_failed != set(result.order)   # some, not all
    assert set(result.failed) == expected_failed
    assert not expected_failed & set(result.results)
    written = grid.read_results(options.out)
    assert set(written) == set(result.order) - expected_failed
    for point in expected_failed:
        line = next(l for l in lines if l.startswith(f"[local] {grid.format_value(point.log2c)} "))
        assert " failed: training diverged" in line, line
    assert result.best_point not in expected_failed
    assert any(l.startswith(f"warning: {len(expected_failed)} of 5 points failed") for l in lines)


# ---------------------------------------------------------------------------------------------
# The commands say once that the features are far from unit scale, and name bsvm-scale
# ---------------------------------------------------------------------------------------------

def notices(stderr):
    return [line for line in stderr.splitlines() if "bsvm-scale" in line]


def test_train_says_once_that_features_are_unscaled(tmp_path):
    X, y = hundreds(n=300)
    write_libsvm(tmp_path / "raw", X, y)
    r = run("bsvm-train", "--budget", "20", "--epochs", "1", "raw", "m", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(notices(r.stderr)) == 1 and "far from unit scale" in r.stderr
    r = run("bsvm-train", "--budget", "20", "--epochs", "1", "-v", "3", "raw", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(notices(r.stderr)) == 1            # once, not once per fold
    assert r.stdout.startswith("Cross Validation Accuracy = ")
    r = run("bsvm-grid", "-log2c", "0,1,1", "-log2g", "null", "-v", "2", "-j", "1",
            "--budget", "20", "--epochs", "1", "-out", "null", "raw", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(notices(r.stderr)) == 1
    assert "overflow" not in r.stderr
    r = run("bsvm-train", "-q", "--budget", "20", "--epochs", "1", "raw", "m", cwd=tmp_path)
    assert r.stderr == ""                          # -q: no notice
    heart_file = Path(__file__).resolve().parent.parent / "data" / "heart_scale.xz"
    r = run("bsvm-train", "--budget", "20", "--epochs", "1", heart_file, "m", cwd=tmp_path)
    assert r.returncode == 0 and notices(r.stderr) == []


def test_mnist_unscaled_trains_a_finite_model(tmp_path, shared_data):
    import lzma
    with lzma.open(shared_data("mnist.xz"), "rt") as f:
        rows = [next(f) for _ in range(20000)]          # mnist as distributed: pixels 0-255
    (tmp_path / "mnist20k").write_text("".join(rows))
    r = run("bsvm-train", "--epochs", "1", "mnist20k", "m", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(notices(r.stderr)) == 1
    from budgetsvm.model_io import load_model
    model = load_model(str(tmp_path / "m"))
    sv = model.sv.toarray()
    assert np.isfinite(sv).all() and np.isfinite(model.coef).all()
    assert sv.min() >= -0.05 * 255 and sv.max() <= 1.05 * 255    # merges stay near the pixels
