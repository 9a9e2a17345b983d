"""Same data, options and --seed give a byte-identical model file, for every solver; a different
seed gives a different model where the solver is stochastic in its result."""
import subprocess
import sys
from pathlib import Path

import pytest

from budgetsvm.train import check_solver
from budgetsvm.errors import ParameterError

BIN = Path(sys.executable).parent
DATA = Path(__file__).resolve().parent.parent / "data"

SOLVER_OPTIONS = {
    "dcd": ["-c", "1"],
    "acf": ["-c", "1"],
    "ww": ["-c", "1"],
    "bsgd": ["--budget", "30", "--epochs", "2", "-c", "4"],
    "bsca": ["--budget", "30", "--epochs", "2", "-c", "4"],
}


def train(tmp_path, name, solver, seed):
    path = tmp_path / name
    result = subprocess.run([str(BIN / "bsvm-train"), "-q", "-s", solver, *SOLVER_OPTIONS[solver],
                             "--seed", str(seed), str(DATA / "heart_scale.xz"), str(path)],
                            capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    return path.read_bytes()


@pytest.mark.parametrize("solver", sorted(SOLVER_OPTIONS))
def test_same_seed_same_bytes(tmp_path, solver):
    try:
        check_solver(solver)
    except ParameterError as exc:
        pytest.skip(str(exc))
    first = train(tmp_path, "a", solver, 5)
    assert first == train(tmp_path, "b", solver, 5)
    if solver in ("bsgd", "bsca"):
        # budgeted solvers keep different support vectors for a different visiting order
        assert first != train(tmp_path, "c", solver, 6)


def test_model_bytes_do_not_depend_on_the_blas_threads(tmp_path):
    # A multi-threaded BLAS sums in another order; the tools run it on one thread, so the refit
    # of a budgeted model (kernel blocks, eigendecomposition, Newton steps: all BLAS) gives the
    # same bytes whatever the environment asks for.
    import os
    models = []
    for threads in ("1", "2", "4"):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads,
                   MKL_NUM_THREADS=threads)
        path = tmp_path / f"m{threads}"
        subprocess.run([str(BIN / "bsvm-train"), "-q", "-c", "32", "-g", "0.0078125",
                        str(DATA / "a9a.xz"), str(path)], env=env, check=True, timeout=600)
        models.append(path.read_bytes())
    assert models[0] == models[1] == models[2]
