"""Command-line options: every option an error message names exists, the bsgd variant constants
(--eta, --radius) reach the solver with the meaning their help gives, and LIBSVM's -wLABEL WEIGHT
is listed in --help (issue 18, items 2 and 5)."""
import ast
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from budgetsvm.io import write_problem
from budgetsvm.model_io import load_model
from reference.data import blobs
from reference.kernels import rbf
from reference.solvers import pegasos_rbf

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "budgetsvm"
HEART = REPO / "data" / "heart_scale.xz"

# Exceptions whose text is shown to the user as a usage error (exit 2).
USAGE_ERRORS = {"ParameterError", "UsageError", "BadParameter"}
# An option as messages write it: -c, -log2c, --max-iter (not "non-negative" or "1e-3").
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*)")


def run(tool, *args, cwd=None):
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, capture_output=True,
                          timeout=300)


# ---------------------------------------------------------------------------------------------
# every option a usage-error message names exists
# ---------------------------------------------------------------------------------------------

def _name(func):
    return func.id if isinstance(func, ast.Name) else \
        func.attr if isinstance(func, ast.Attribute) else None


def _strings(node):
    """The literal text of every string constant (f-string parts included) under node."""
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)]


def _error_calls(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _name(n.func) in USAGE_ERRORS]


def _message_helpers(tree):
    """Functions that put one of their arguments into a usage-error message (e.g.
    params._positive(name, value) -> f"{name} must be positive"): their callers name the
    option."""
    helpers = set()
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = {a.arg for a in func.args.args + func.args.kwonlyargs}
        for call in _error_calls(func):
            used = {n.id for n in ast.walk(call) if isinstance(n, ast.Name)}
            if used & arguments:
                helpers.add(func.name)
    return helpers


def _sources():
    return {path: ast.parse(path.read_text(), filename=str(path))
            for path in sorted(PACKAGE.rglob("*.py"))}


def named_options():
    """{option: sorted 'module' names whose usage-error messages name it}."""
    sources = _sources()
    helpers = set().union(*(_message_helpers(tree) for tree in sources.values()))
    found = {}
    for path, tree in sources.items():
        texts = [s for call in _error_calls(tree) for s in _strings(call)]
        texts += [s for call in ast.walk(tree) if isinstance(call, ast.Call)
                  and _name(call.func) in helpers
                  for arg in call.args + [k.value for k in call.keywords] for s in _strings(arg)]
        module = path.relative_to(REPO).with_suffix("").as_posix().replace("/", ".")
        for text in texts:
            for option in OPTION.findall(text):
                found.setdefault(option, set()).add(module)
    return {option: sorted(modules) for option, modules in found.items()}


def _click_options(command):
    import click
    return {opt for p in command.get_params(click.Context(command))
            for opt in p.opts + p.secondary_opts if opt.startswith("-")}


def command_options():
    """{command: the options its command line accepts}."""
    from budgetsvm.cli import grid, predict, scale, train
    trainer = _click_options(train.command) | {"-w"}     # -wLABEL (cli.common rewrites it)
    passthrough = trainer - {"-c", "-g", "-v", "-q", "-b"}
    return {
        "bsvm-train": trainer,
        "bsvm-grid": passthrough | grid._GRID_WITH_VALUE | grid._GRID_FLAGS |
        {"-resume", "--help", "-c", "-g"},     # -c/-g: named to say "use -log2c/-log2g"
        "bsvm-predict": _click_options(predict.command),
        "bsvm-scale": _click_options(scale.command),
    }


def commands_of(module):
    """The command whose users read a module's messages (library messages: bsvm-train and,
    through its pass-through, bsvm-grid)."""
    for name in ("grid", "predict", "scale"):
        if module in (f"budgetsvm.cli.{name}", f"budgetsvm.{name}") or \
                module.startswith(f"budgetsvm.{name}."):
            return ["bsvm-" + name]
    return ["bsvm-train"]


NAMED = named_options()


def test_the_message_scan_finds_the_options_it_must():
    # Options known to be named in messages (params.py, bsgd.py, cli/grid.py): the
    # scan is not vacuous.
    assert {"--eta", "--radius", "--budget", "--max-iter", "--acf-c", "--ww-subsolver", "-c",
            "-log2c", "--stream", "-v"} <= set(NAMED), sorted(NAMED)


@pytest.mark.parametrize("option", sorted(NAMED))
def test_every_option_named_in_a_usage_error_exists(option):
    available = command_options()
    missing = [(module, command) for module in NAMED[option] for command in commands_of(module)
               if option not in available[command]]
    assert not missing, f"{option} is named in messages of {NAMED[option]} but is not an " \
                        f"option of {sorted({c for _, c in missing})}"


def test_eta_and_radius_are_bsvm_grid_pass_through_options():
    from budgetsvm.cli.grid import parse_arguments
    options = parse_arguments(["--variant", "mp", "--eta", "0.25", "--radius", "3", "data"])
    assert (options.params.variant, options.params.eta, options.params.radius) == \
        ("mp", 0.25, 3.0)


# ---------------------------------------------------------------------------------------------
# --eta and --radius mean what their help says
# ---------------------------------------------------------------------------------------------

def _write(path, X, y_index):
    with open(path, "w") as stream:
        write_problem(stream, X, np.where(y_index == 0, 1.0, 2.0))


def test_eta_is_the_norma_learning_rate_constant(tmp_path):
    # Oracle: kernel NORMA written out in numpy (η_t = η/√t, explicit shrink of every
    # coefficient), replaying the solver's permutations; no budget maintenance happens. The
    # solver's own iterate is checked: --polish none (the default refit replaces coefficients).
    X, y = blobs(50, 2, d=3, seed=5)
    Xt, _ = blobs(40, 2, d=3, seed=6)
    _write(tmp_path / "train", X, y)
    result = run("bsvm-train", "-q", "--variant", "norma", "--eta", "0.7", "-c", "0.5", "-g",
                 "0.5", "--epochs", "2", "--seed", "3", "--budget", "1000", "--polish", "none",
                 tmp_path / "train", tmp_path / "m")
    assert result.returncode == 0, result.stderr.decode()
    model = load_model(str(tmp_path / "m"))
    assert model.params["variant"] == "norma" and model.params["eta"] == 0.7
    alpha = pegasos_rbf(X, y, 0.5, 0.5, 2, 3, variant="norma", eta=0.7)
    expected = alpha @ rbf(X, Xt, 0.5)
    got = model.decision_function(Xt)[:, 0]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def _weight_norm(model):
    sv = model.sv.toarray()
    coef = model.coef[:, 0]
    return float(np.sqrt(coef @ rbf(sv, sv, model.kernel.gamma) @ coef))


@pytest.mark.parametrize("radius", [0.3, 2.0])
def test_radius_bounds_the_mp_weight_vector(tmp_path, radius):
    # The budgeted margin perceptron projects w onto the ball of radius U after every step, so
    # the final ||w||_H (computed here from the model file with a numpy kernel matrix) is at
    # most U; with this data and η the perceptron steps reach the ball, so ||w|| is U itself.
    X, y = blobs(80, 2, d=3, seed=7, spread=2.0)
    _write(tmp_path / "train", X, y)
    result = run("bsvm-train", "-q", "--variant", "mp", "--eta", "0.5", "--radius", radius,
                 "-g", "0.5", "--budget", "20", "--maintenance", "removal", "--epochs", "2",
                 "--polish", "none", tmp_path / "train", tmp_path / "m")
    assert result.returncode == 0, result.stderr.decode()
    model = load_model(str(tmp_path / "m"))
    assert (model.params["eta"], model.params["radius"]) == (0.5, radius)
    assert _weight_norm(model) == pytest.approx(radius, rel=1e-9)


@pytest.mark.parametrize("args", [["--eta", "0"], ["--eta", "-1"], ["--radius", "0"],
                                  ["--eta", "nan"], ["--radius", "inf"]])
def test_bad_eta_or_radius_is_a_usage_error(tmp_path, args):
    result = run("bsvm-train", "--variant", "mp", *args, HEART, tmp_path / "m")
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert args[0] in err and "Traceback" not in err and "No such option" not in err
    assert not (tmp_path / "m").exists()


# ---------------------------------------------------------------------------------------------
# -wLABEL WEIGHT in --help
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("tool", ["bsvm-train", "bsvm-grid"])
def test_help_lists_the_glued_class_weight_form(tool):
    result = run(tool, "--help")
    assert result.returncode == 0, result.stderr.decode()
    rows = [line.strip() for line in result.stdout.decode().splitlines()]
    assert any(row.startswith("-wLABEL WEIGHT") for row in rows), result.stdout.decode()


def test_the_glued_form_shown_in_help_is_the_class_weight_option(tmp_path):
    # -w-1 5 as the help shows it multiplies C of class -1 by 5: the same model as
    # --class-weight -1 5, and not the unweighted one.
    models = []
    for args in (["-w-1", "5"], ["--class-weight", "-1", "5"], []):
        path = tmp_path / f"m{len(models)}"
        result = run("bsvm-train", "-q", "-s", "dcd", *args, HEART, path)
        assert result.returncode == 0, result.stderr.decode()
        models.append(path.read_bytes())
    assert models[0] == models[1] != models[2]


def test_defaults_live_in_one_place():
    # bsvm-train's option defaults, the estimators' and TrainParams' are the same values: the
    # CLI and the estimators read them from params.DEFAULTS (the oracle: TrainParams itself,
    # constructed with no argument, and LIBSVM/LIBLINEAR's documented values for a few)
    import dataclasses
    import inspect

    from budgetsvm.cli.train import command
    from budgetsvm.estimators import BudgetSVC, LinearSVC, WWLinearSVC
    from budgetsvm.params import TrainParams
    fields = {f.name: f.default for f in dataclasses.fields(TrainParams)
              if f.default is not dataclasses.MISSING}
    checked = 0
    for param in command.params:
        if param.name in fields and isinstance(param.default, (int, float, str)):
            value = param.default
            expected = fields[param.name]
            if param.name == "shrinking":
                value = value == "1"
            assert value == expected, (param.name, value, expected)
            checked += 1
    assert checked >= 15
    assert fields["C"] == 1.0 and fields["budget"] == 500 and fields["max_iter"] is None
    # --max-iter: LIBLINEAR's limits, 1000 for its dual CD (-s 3) and 100000 for -s 4
    assert [TrainParams(solver=s).effective_max_iter() for s in ("dcd", "acf", "ww")] == \
        [1000, 1000, 100000]
    for cls in (BudgetSVC, LinearSVC, WWLinearSVC):
        for name, p in inspect.signature(cls).parameters.items():
            key = {"subsolver": "ww_subsolver"}.get(name, name)
            if key in fields and p.default is not None and key != "solver" and \
                    (cls is not WWLinearSVC or key != "bias"):
                assert p.default == fields[key], (cls.__name__, name)


def test_the_table_has_every_training_parameter():
    # every TrainParams field is an option of the table (bsvm-train's parser is built from it),
    # except the ones the table names as the Python API's only
    import dataclasses

    from budgetsvm.cli.train import command
    from budgetsvm.params import API_ONLY, OPTIONS, TrainParams
    fields = {f.name for f in dataclasses.fields(TrainParams)}
    assert fields - set(OPTIONS) == set(API_ONLY)
    declared = {param.name: param for param in command.params}
    for name in fields - set(API_ONLY):
        assert OPTIONS[name].type is not None and name in declared, name
        assert OPTIONS[name].flags[0] in declared[name].opts, name


# A bad value of every checked option, as typed.
BAD_VALUES = [("C", "-c", "0"), ("C", "-c", "-1"), ("gamma", "-g", "-1"), ("eps", "-e", "0"),
              ("degree", "-d", "-1"), ("seed", "--seed", "-1"),
              ("seed", "--seed", str(2**63)), ("n_threads", "-n", "0"),
              ("max_iter", "--max-iter", "-1"), ("budget", "--budget", "0"),
              ("epochs", "--epochs", "0"), ("eta", "--eta", "nan"), ("radius", "--radius", "0"),
              ("acf_c", "--acf-c", "0"), ("acf_pmin", "--acf-pmin", "2"),
              ("acf_pmax", "--acf-pmax", "0.5"), ("kernel", "-t", "9"), ("kernel", "-t", "4"),
              ("solver", "-s", "nosuch"),
              # just above the upper bounds (INTEGER_BOUNDS below)
              ("degree", "-d", str(2**31)), ("epochs", "--epochs", str(2**31)),
              ("budget", "--budget", str(2**31)), ("max_iter", "--max-iter", str(2**63))]


@pytest.mark.parametrize("field,flag,text", BAD_VALUES)
def test_check_params_is_the_only_check_of_a_value(tmp_path, capsys, field, flag, text):
    # The oracle: check_params' message for the same value in TrainParams. bsvm-train and
    # bsvm-grid's pass-through say exactly that (one line, exit 2), naming the flag as typed.
    from budgetsvm.cli import grid as cli_grid
    from budgetsvm.cli import train as cli_train
    from budgetsvm.errors import ParameterError
    from budgetsvm.params import OPTIONS, TrainParams, check_params
    kind = OPTIONS[field].type
    value = kind(text) if kind in (int, float) else text
    with pytest.raises(ParameterError) as expected:
        check_params(TrainParams(**{field: value}))
    assert str(expected.value).startswith(flag)
    with pytest.raises(SystemExit) as status:
        cli_train.main([flag, text, str(HEART), str(tmp_path / "m")])
    assert status.value.code == 2
    assert capsys.readouterr().err == f"Usage error: {expected.value}\n"
    assert not (tmp_path / "m").exists()
    with pytest.raises(ParameterError) as grid_error:
        cli_grid.training_params([flag, text])
    assert str(grid_error.value) == str(expected.value)


# ---------------------------------------------------------------------------------------------
# the integer options' ranges: the C types of the compiled cores (a C int for the kernel degree,
# --epochs and --budget, a Py_ssize_t for --max-iter); at the bound accepted, beyond a usage error
# ---------------------------------------------------------------------------------------------

INT_MAX, SSIZE_MAX = 2**31 - 1, 2**63 - 1
INTEGER_BOUNDS = [("degree", "-d", 0, INT_MAX), ("epochs", "--epochs", 1, INT_MAX),
                  ("budget", "--budget", 1, INT_MAX), ("max_iter", "--max-iter", 0, SSIZE_MAX)]


@pytest.mark.parametrize("field,flag,low,high", INTEGER_BOUNDS)
def test_integer_options_accept_their_range_and_name_it_beyond(field, flag, low, high):
    from budgetsvm.errors import ParameterError
    from budgetsvm.params import TrainParams, check_params
    for value in (low, high):
        check_params(TrainParams(**{field: value}))
    for value in (low - 1, high + 1, 2**64):
        with pytest.raises(ParameterError) as error:
            check_params(TrainParams(**{field: value}))
        assert str(error.value).startswith(f"{flag} must be from {low} to {high}")
        assert str(error.value).endswith(f"got {value}")


def hs60(tmp_path):
    from budgetsvm.io import read_problem
    X, y = read_problem(str(HEART))
    path = tmp_path / "hs60"
    with open(path, "w") as stream:
        write_problem(stream, X[:60], y[:60])
    return path


@pytest.mark.parametrize("args", [
    ["-t", "1", "--maintenance", "removal", "-d", "3000000000"],    # was OverflowError (SVStore)
    ["-s", "bsca", "-t", "1", "--maintenance", "removal", "-d", str(2**31)],
    ["--epochs", str(2**63)],                                       # was OverflowError (ssize_t)
    ["-s", "bsca", "--epochs", str(2**31)],
    ["-s", "dcd", "--max-iter", str(2**63)],                         # was OverflowError (ssize_t)
    ["-s", "ww", "--max-iter", str(2**63)],
    ["--budget", str(2**31)],
])
def test_integer_options_beyond_their_range_are_one_line_usage_errors(tmp_path, args):
    result = run("bsvm-train", "-q", *args, hs60(tmp_path), tmp_path / "m")
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert len(stderr.splitlines()) == 1 and "Traceback" not in stderr
    flag = args[-2]
    assert stderr.startswith(f"Usage error: {flag} must be from ") and " to " in stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("args", [
    ["-t", "1", "--maintenance", "removal", "-d", str(INT_MAX)],
    ["-s", "bsca", "-t", "1", "--maintenance", "removal", "-d", str(INT_MAX)],
    ["-s", "dcd", "--max-iter", str(SSIZE_MAX)],
    ["-s", "acf", "--max-iter", str(SSIZE_MAX)],
    # ww allocated a gap history of max_iter + 2 entries up front: "out of memory" on 60 rows
    ["-s", "ww", "--max-iter", "10000000000000"],
    ["-s", "ww", "--max-iter", str(SSIZE_MAX)],
])
def test_integer_options_at_their_bound_train(tmp_path, args):
    result = run("bsvm-train", "-q", *args, hs60(tmp_path), tmp_path / "m")
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    model = load_model(str(tmp_path / "m"))
    if "-d" in args:
        assert model.kernel.degree == INT_MAX


def test_ww_gap_history_grows_with_the_evaluations():
    # nothing is allocated for max_iter: the history of gap evaluations (one per iteration here,
    # more than the 64 it starts with) is the same for 0 (unlimited) and the largest --max-iter
    import scipy.sparse as sp

    from budgetsvm import _ww
    from budgetsvm.io import read_problem
    from budgetsvm.labels import group_classes
    X, y = read_problem(str(HEART))
    X = sp.csr_matrix(X)
    _, y_index = group_classes(y)
    runs = {max_iter: _ww.ww_solve(X.data, X.indices, X.indptr.astype(np.int64),
                                   np.asarray(y_index, dtype=np.int32), np.ones(X.shape[0]),
                                   X.shape[1], 2, delta=1e-7, max_iter=max_iter, gap_every=1)
            for max_iter in (0, 100, SSIZE_MAX)}
    assert runs[0].converged and runs[0].n_iter > 64
    for max_iter in (100, SSIZE_MAX):
        n = min(runs[0].n_iter, max_iter)
        assert runs[max_iter].n_iter == n == len(runs[max_iter].gap_history)
        np.testing.assert_array_equal(runs[max_iter].gap_history, runs[0].gap_history[:n])
        np.testing.assert_array_equal(runs[max_iter].gap_iterations, np.arange(1, n + 1))


def test_budget_at_its_bound_is_refused_by_the_store_size_check(tmp_path):
    # the bound is the option's; the store of INT_MAX slots is refused for its size (exit 1)
    # where the rows are not known in advance (--stream)
    result = run("bsvm-train", "-q", "--stream", "--budget", INT_MAX, hs60(tmp_path),
                 tmp_path / "m")
    stderr = result.stderr.decode()
    assert result.returncode == 1 and len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith("the support-vector store would need")
    assert stderr.rstrip().endswith("use a smaller --budget")
    assert not (tmp_path / "m").exists()


def test_a_store_too_large_for_one_support_vector_points_at_the_feature_indices(tmp_path):
    # index 2^31 - 1 with --budget 1: 8 bytes x 2^31 x 2 slots is over the 8 GiB bound, which
    # no budget can fix
    data = tmp_path / "wide"
    data.write_text("+1 2147483647:1\n-1 1:1\n")
    result = run("bsvm-train", "-q", "--budget", "1", data, tmp_path / "m")
    stderr = result.stderr.decode()
    assert result.returncode == 1 and len(stderr.splitlines()) == 1, stderr
    assert stderr == ("the support-vector store would need 32.0 GB (2147483647 features x "
                      "budget 1, stored densely); are the feature indices right (the largest "
                      "is 2147483647)?\n")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_a_budget_beyond_the_steps_is_the_run_without_maintenance(tmp_path, solver):
    # 60 rows × 5 epochs insert at most 300 SVs: --budget 2^31-1 (a user's "unbudgeted" run)
    # needs 300 slots, where the store of 2^31 slots was refused (368 GB); the model is that of
    # --budget 300 (maintenance runs in neither), byte for byte but for its budget line
    data = hs60(tmp_path)
    models = {}
    for budget in (INT_MAX, 300):
        result = run("bsvm-train", "-q", "-s", solver, "--budget", budget, data,
                     tmp_path / str(budget))
        assert result.returncode == 0, result.stderr.decode()
        lines = (tmp_path / str(budget)).read_text().splitlines(keepends=True)
        assert f"param budget int {budget}\n" in lines
        models[budget] = [line for line in lines if not line.startswith("param budget ")]
    assert models[INT_MAX] == models[300]


def test_store_size_check_counts_the_slots_of_rows_without_features():
    # 0 features: the store still holds ten numbers per slot (it took 16 GB at --budget 2^31-1)
    from budgetsvm.budgeted import check_budgeted
    from budgetsvm.errors import BsvmError
    from budgetsvm.params import TrainParams
    with pytest.raises(BsvmError, match="would need"):
        check_budgeted(TrainParams(budget=INT_MAX), 0)
    check_budgeted(TrainParams(budget=1000), 0)


@pytest.mark.parametrize("solver", ["dcd", "acf", "ww", "bsgd", "bsca"])
@pytest.mark.parametrize("c,weight,product", [("1e308", "10", "inf"), ("1e-300", "1e-300", "0")])
def test_a_class_cost_that_overflows_is_a_usage_error(tmp_path, solver, c, weight, product):
    # C times a -wLABEL weight must be finite and positive for every solver (each factor is,
    # and the product overflows or underflows in IEEE double): one line, exit 2, no model; a
    # grid search stops before it opens its result file, which keeps an earlier run's lines
    args = ["-s", solver, "-c", c, "-w1", weight]
    result = run("bsvm-train", "-q", *args, HEART, tmp_path / "m")
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0] == f"Usage error: -c {float(c):g} times -w1 {float(weight):g} is " \
        f"{product}: the cost of a class must be a finite positive number"
    assert not (tmp_path / "m").exists()
    assert run("bsvm-train", "-q", *args, "-v", "3", HEART).returncode == 2
    if solver == "bsgd":
        assert run("bsvm-train", "-q", "--stream", *args, HEART, tmp_path / "m").returncode == 2
        assert not (tmp_path / "m").exists()
    earlier = tmp_path / "grid.out"
    earlier.write_text("log2c=0 rate=80.0\n")
    grid = run("bsvm-grid", "-q", "-s", solver, "-w1", weight, "-log2c", "1023,1023,1",
               "-log2g", "null", "-v", "3", "-out", earlier, HEART) if product == "inf" else None
    if grid is not None:
        assert grid.returncode == 2 and b"Traceback" not in grid.stderr
        assert earlier.read_text() == "log2c=0 rate=80.0\n"


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
@pytest.mark.parametrize("kernel", ["0", "1", "3"])
def test_other_kernels_default_to_removal(tmp_path, solver, kernel):
    # svm-train -t 0 trains; merging (the RBF default) needs the RBF kernel, so with the other
    # kernels the default is removal: the same model, byte for byte, as --maintenance removal,
    # where an explicit --maintenance merge stays a usage error
    X, y = blobs(80, 2, d=3, seed=7, spread=2.0)
    _write(tmp_path / "train", X, y)
    common = ["-q", "-s", solver, "-t", kernel, "--budget", "10", tmp_path / "train"]
    default = run("bsvm-train", *common, tmp_path / "default")
    removal = run("bsvm-train", "--maintenance", "removal", *common, tmp_path / "removal")
    assert default.returncode == removal.returncode == 0, default.stderr.decode()
    assert (tmp_path / "default").read_bytes() == (tmp_path / "removal").read_bytes()
    merge = run("bsvm-train", "--maintenance", "merge", *common, tmp_path / "merge")
    assert merge.returncode == 2 and b"needs the RBF kernel" in merge.stderr


@pytest.mark.parametrize("tool", ["bsvm-train", "bsvm-grid"])
def test_a_weight_label_that_is_not_a_number_is_named(tmp_path, tool):
    # -wnan 2: click knew no -w and said "No such option '-w'"
    result = run(tool, "-s", "dcd", "-wnan", "2", hs60(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.decode() == (f"Usage error: -wnan: the LABEL of -wLABEL WEIGHT must be a "
                                      f"number (e.g. -w-1 5) (see {tool} --help)\n")


def test_the_model_records_every_digit_of_the_class_weights(tmp_path):
    # the record said 1:1.23457 (%g) for -w1 1.23456789
    model = tmp_path / "m"
    assert run("bsvm-train", "-q", "-s", "dcd", "-w1", "1.23456789", "-w-1", "2",
               hs60(tmp_path), model).returncode == 0
    assert load_model(model).params["class_weights"] == "-1:2 1:1.23456789"
