"""LIBLINEAR (the liblinear-official package) as an oracle: an independent implementation of the
linear SVMs whose printed objective and weights the tests compare with ours."""
import ctypes
import os
import tempfile

import numpy as np
import pytest
import scipy.sparse as sp

_libc = ctypes.CDLL(None)


def seed_liblinear(seed=1):
    """srand(seed): LIBLINEAR draws its coordinate orders from the C library's rand(), which it
    never seeds, so without this a call's result (and, at a tight -e, whether it converges
    within its 1000 iterations) depends on the LIBLINEAR calls that ran before it."""
    _libc.srand(seed)


def liblinear_train(y, X, options, seed=1):
    """Train LIBLINEAR and return (model, what its C code printed on file descriptor 1); the test
    skips when liblinear-official is not installed. LIBLINEAR draws its coordinate orders from
    the C library's rand(), which it never seeds: srand(seed) first makes a call's result
    independent of the LIBLINEAR calls of the tests that ran before it in the process."""
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    seed_liblinear(seed)
    fd, path = tempfile.mkstemp()
    saved = os.dup(1)
    try:
        _libc.fflush(None)
        os.dup2(fd, 1)
        model = liblinear.train(np.asarray(y, dtype=np.float64), sp.csr_matrix(X), options)
        _libc.fflush(None)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(fd)
    with open(path) as f:
        out = f.read()
    os.unlink(path)
    return model, out


def liblinear_objectives(out):
    """The dual objective values LIBLINEAR printed ("Objective value = …"), one per sub-problem;
    fails when it stopped at its iteration cap."""
    assert "reaching max number of iterations" not in out, out
    return [float(line.split("=")[1]) for line in out.splitlines()
            if line.startswith("Objective value")]


def liblinear_weights(model):
    """LIBLINEAR's weights as (nr_w, nr_feature [+1 for the bias]) in its label order."""
    nr_w = model.nr_class if model.nr_class > 2 else 1
    rows = model.nr_feature + (1 if model.bias >= 0 else 0)
    W = np.ctypeslib.as_array(model.w, (rows * nr_w,)).reshape(rows, nr_w).T.copy()
    return W
