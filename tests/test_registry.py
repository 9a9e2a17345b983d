"""The solver registry (budgetsvm/solvers.py) is the only place that knows the solvers: a sixth
solver registered from outside the package (tests/plugins/toy_solver.py) shows up in
bsvm-train --help, trains from the command line and writes a model bsvm-predict reads, is
accepted by the estimators and by bsvm-grid, and gets the option notices of its kind, without
touching any other module. Each check runs in a fresh interpreter that registers the toy first."""
import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm import solvers
from budgetsvm.errors import ParameterError

REPO = Path(__file__).resolve().parent.parent
HEART = REPO / "data" / "heart_scale.xz"
PLUGINS = Path(__file__).resolve().parent / "plugins"


def with_toy(code):
    """Run python code after registering the toy solver; returns the CompletedProcess."""
    prelude = f"import sys; sys.path.insert(0, {str(PLUGINS)!r}); import toy_solver\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True,
                          text=True, timeout=300, cwd=REPO)


def cli(module, *argv):
    return with_toy(f"from budgetsvm.cli.{module} import main\n"
                    f"main({[str(a) for a in argv]!r})")


def test_the_five_solvers_are_registered():
    assert solvers.names() == ("dcd", "acf", "ww", "bsgd", "bsca")
    assert solvers.names("kernel") == ("bsgd", "bsca")
    assert "centroid" not in solvers.names()            # the toy stays in its own processes


def test_every_solver_wrapper_has_the_one_fit_signature():
    # SolverSpec's signature: five leading arguments, the monitor keyword-only, then the
    # solver's own keyword-only options
    KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY
    for name in solvers.names():
        parameters = list(inspect.signature(solvers.get(name).fit_function()).parameters.values())
        assert [p.name for p in parameters[:5]] == ["X", "y_index", "labels", "params",
                                                      "callback"], name
        assert parameters[4].default is None
        assert [(p.name, p.kind, p.default) for p in parameters[5:7]] == [
            ("monitor", KEYWORD_ONLY, None), ("monitor_test", KEYWORD_ONLY, None)], name
        assert all(p.kind == KEYWORD_ONLY for p in parameters[5:]), name


def test_a_solver_that_is_not_monitorable_refuses_a_monitor():
    from budgetsvm.labels import group_classes
    from budgetsvm.params import TrainParams
    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]]))
    labels, y_index = group_classes(np.array([1.0, -1.0, 1.0, -1.0]))
    for name in ("dcd", "acf", "ww"):
        with pytest.raises(ParameterError, match="--monitor is available for -s bsgd and -s bsca"):
            solvers.get(name).fit_function()(X, y_index, labels, TrainParams(solver=name),
                                             monitor=print)


def test_a_registered_solver_is_in_the_help_and_trains_from_the_command_line(tmp_path):
    help_text = cli("train", "--help")
    assert help_text.returncode == 0, help_text.stderr
    assert "centroid" in help_text.stdout
    model = tmp_path / "m"
    trained = cli("train", "-s", "centroid", HEART, model)
    assert trained.returncode == 0, trained.stderr
    assert "solver centroid" in model.read_text()
    out = tmp_path / "out"
    predicted = cli("predict", HEART, model, out)
    assert predicted.returncode == 0, predicted.stderr
    # the oracle: the nearest-mean rule computed here in numpy
    from budgetsvm.io import read_problem
    X, y = read_problem(str(HEART))
    X = X.toarray()
    mu = {c: X[y == c].mean(axis=0) for c in (1.0, -1.0)}
    first = y[0]                                    # label order: first appearance
    other = -first
    score = X @ (mu[first] - mu[other]) - 0.5 * (mu[first] @ mu[first] - mu[other] @ mu[other])
    expected = np.where(score > 0, first, other)
    assert np.array_equal(np.loadtxt(out), expected)
    # an option of the kernel solvers gets the notice of a linear solver
    notice = cli("train", "-s", "centroid", "--budget", "30", HEART, tmp_path / "m2")
    assert "notice: --budget has no effect with -s centroid" in notice.stderr


def test_a_registered_solver_runs_in_the_estimators_and_the_grid():
    result = with_toy(
        "from budgetsvm.estimators import LinearSVC\n"
        "from budgetsvm.io import read_problem\n"
        f"X, y = read_problem({str(HEART)!r})\n"
        "est = LinearSVC(solver='centroid').fit(X, y)\n"
        "print('accuracy', (est.predict(X) == y).mean())\n"
        # -j 1: the search in this process (worker processes start fresh interpreters that
        # know only the solvers registered on import of the package)
        "from budgetsvm.cli.grid import find_parameters\n"
        f"rate, best = find_parameters({str(HEART)!r}, '-s centroid -log2c -1,1,1 -j 1 -out null')\n"
        "print('grid', rate, sorted(best))\n")
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert float(lines["accuracy"]) > 0.7
    assert lines["grid"].endswith("['c']")              # a linear solver: C only
