"""Synthetic data for the oracles and where the tests find the data sets.

The generators draw from numpy's default_rng only (never from budgetsvm._rng), so a test's data
do not depend on the package under test; the same arguments give the same arrays bit for bit.
"""
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parent.parent.parent
DATA = REPO / "data"


def gaussian_classes(rng, n, centers, noise=1.0, labels="random", every_class_first=False):
    """n points around the k given centres (k × d): x_i = c_{y_i} + noise·N(0, I_d), the class
    indices y drawn first: "random" uniformly from the k classes, "balanced" n // k of each class
    in a random order, "cyclic" y_i = i mod k (nothing drawn). every_class_first puts classes
    0, …, k − 1 in the first k rows (after the draw). Returns (X, y)."""
    k, d = centers.shape
    if labels == "cyclic":
        y = np.arange(n) % k
    elif labels == "balanced":
        y = np.repeat(np.arange(k), n // k)
        y = y[rng.permutation(len(y))]
    else:
        y = rng.integers(0, k, n)
    if every_class_first:
        y[:k] = np.arange(k)
    return centers[y] + noise * rng.standard_normal((len(y), d)), y


def signed_blobs(n, d=2, seed=0, spread=1.2):
    """Two classes, y = +1, −1, +1, … (int8): x_i = y_i·μ + spread·N(0, I_d) with μ ~ N(0, I_d),
    then about 15 % of the entries set to 0 (sparse rows, and some rows all zero)."""
    rng = np.random.default_rng(seed)
    mu = rng.standard_normal(d)
    X, c = gaussian_classes(rng, n, np.array([mu, -mu]), spread, labels="cyclic")
    X[rng.random(X.shape) < 0.15] = 0.0
    return X, np.where(c == 0, 1, -1).astype(np.int8)


def blobs(n, k, d=2, seed=0, spread=1.0, zeros=0.2):
    """k classes, y_i = i mod k (int32): x_i = c_{y_i} + spread·N(0, I_d) with the centres
    c ~ N(0, 4 I_d), then each entry set to 0 with probability `zeros` (sparse rows)."""
    rng = np.random.default_rng(seed)
    X, y = gaussian_classes(rng, n, 2.0 * rng.standard_normal((k, d)), spread, labels="cyclic")
    if zeros:
        X[rng.random(X.shape) < zeros] = 0.0
    return X, y.astype(np.int32)


def random_csr(rng, n, d, density=0.4, scale=1.0, values="normal"):
    """A random sparse n × d CSR matrix with sorted indices, about density·n·d stored entries:
    values "normal", N(0, 1)·scale drawn from rng with the positions from a generator seeded by
    rng; values "uniform", U[0, 1)·scale with positions and values drawn from rng."""
    if values == "uniform":
        X = sp.random(n, d, density=density, random_state=rng, format="csr") * scale
    else:
        X = sp.random(n, d, density=density, format="csr", random_state=rng.integers(1 << 30),
                      data_rvs=lambda k: rng.standard_normal(k) * scale)
    X.sort_indices()
    return X


def write_libsvm(path, X, y, digits=6):
    """Write dense X with labels y as a LIBSVM-format file: "label index:value …", the nonzero
    entries only, 1-based indices, values with `digits` significant digits. Returns path."""
    with open(path, "w") as f:
        for row, label in zip(X, y):
            f.write("%g" % label + "".join(f" {j + 1}:{v:.{digits}g}" for j, v in enumerate(row)
                                           if v) + "\n")
    return path


class MissingValue(Exception):
    """read_libsvm_lines: line ``line`` (1-based) has an index with no value on that line."""

    def __init__(self, line):
        super().__init__(f"line {line}: value is missing")
        self.line = line


def read_libsvm_lines(data):
    """LIBSVM-format bytes as (labels, rows), rows a list of {index: value} dicts, read line by
    line as LIBSVM's read_problem does with strtok: a '#' starts a comment, blank lines are
    skipped, tokens are separated by blanks (space, tab, CR, VT, FF), ``qid:N`` is skipped and
    the value of ``index:`` may follow after blanks on the same line; ``index:`` ending its line
    raises MissingValue(line). Well-formed input only otherwise (no other checks)."""
    labels, rows = [], []
    for number, line in enumerate(data.split(b"\n"), 1):
        tokens = line.split(b"#", 1)[0].split()      # bytes.split(): ASCII whitespace
        if not tokens:
            continue
        row, rest = {}, iter(tokens[1:])
        for token in rest:
            if token.startswith(b"qid:"):
                continue
            index, _, value = token.partition(b":")
            if not value:
                value = next(rest, None)
                if value is None:
                    raise MissingValue(number)
            row[int(index)] = float(value)
        labels.append(float(tokens[0]))
        rows.append(row)
    return labels, rows


def pm1(y, positive):
    """Labels as ±1: +1 where y is the label `positive`, −1 elsewhere."""
    return np.where(y == positive, 1.0, -1.0)


def repo_data(name):
    """The path of a data set shipped in the repository's data/ folder."""
    return os.path.join(DATA, name)


def shared_data_path(name):
    """The path of a data set in the folder named by BSVM_DATA: the test skips when the variable
    is unset and fails when it is set but the file is missing."""
    import pytest
    folder = os.environ.get("BSVM_DATA")
    if not folder:
        pytest.skip(f"BSVM_DATA is not set: data set {name} unavailable")
    path = Path(folder) / name
    if not path.exists():
        pytest.fail(f"BSVM_DATA={folder} is set but {name} is missing there")
    return path
