"""Synthetic data sets written in the LIBSVM format (benchmarks and tests of large inputs).

``write_checkerboard``: the checkerboard problem of Wang, Crammer and Vucetic (JMLR
2012): x uniform on [0, 1]², label (−1)^(⌊4x₁⌋ + ⌊4x₂⌋) (a 4×4 board), each feature then
standardised with the exact moments of U[0, 1] (mean ½, standard deviation 1/√12), so that any
number of rows can be written in chunks without a second pass.
"""
import numpy as np

from budgetsvm.fileio import atomic_output

CHUNK_ROWS = 200_000


def checkerboard(n, seed):
    """(X dense (n, 2) standardised, y ±1) — the same rows write_checkerboard writes."""
    rows = list(_checkerboard_chunks(n, seed))
    return np.vstack([r[0] for r in rows]), np.concatenate([r[1] for r in rows])


def _checkerboard_chunks(n, seed):
    rng = np.random.default_rng(seed)
    for start in range(0, n, CHUNK_ROWS):
        x = rng.random((min(CHUNK_ROWS, n - start), 2))
        y = np.where((np.floor(4 * x[:, 0]) + np.floor(4 * x[:, 1])) % 2 == 0, 1, -1)
        yield (x - 0.5) * np.sqrt(12.0), y


def write_checkerboard(path, n, seed=1):
    """Write n checkerboard rows (``±1 1:x1 2:x2``, 6 decimals) to path, atomically."""
    with atomic_output(path) as stream:
        for z, y in _checkerboard_chunks(n, seed):
            lines = np.char.add(np.where(y > 0, "+1 1:", "-1 1:"),
                                np.char.mod("%.6f", z[:, 0]))
            lines = np.char.add(np.char.add(lines, " 2:"), np.char.mod("%.6f", z[:, 1]))
            stream.write("\n".join(lines.tolist()))
            stream.write("\n")
