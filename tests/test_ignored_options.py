"""Options a solver does not read (issue 20 item 2): a one-line notice, and the model is
byte-identical to the one trained without the option (the oracle that the option really is
ignored); options it reads give no notice and change the model; a kernel with a linear solver
is a usage error. Driven by budgetsvm.params.OPTIONS, which must cover every option."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from budgetsvm.params import OPTIONS
from budgetsvm.solvers import names as solver_names

SOLVERS = solver_names()

REPO = Path(__file__).resolve().parent.parent
HEART = REPO / "data" / "heart_scale.xz"
BIN = Path(sys.executable).parent

# A non-default value of every option (as typed), and what its run adds to the baseline (the
# condition under which the option is read).
SAMPLE = {
    "kernel": ["-t", "0"], "C": ["-c", "4"], "gamma": ["-g", "0.5"], "degree": ["-d", "2"],
    "coef0": ["-r", "1"], "eps": ["-e", "0.5"], "bias": ["-B", "1"], "shrinking": ["-h", "0"],
    "cache_mb": ["-m", "100"], "class_weights": ["-w1", "2"], "seed": ["--seed", "7"],
    "n_threads": ["-n", "1"], "max_iter": ["--max-iter", "3"], "loss": ["--loss", "l2"],
    "stop": ["--stop", "classic"], "budget": ["--budget", "50"], "epochs": ["--epochs", "2"],
    "maintenance": ["--maintenance", "removal"], "merge_search": ["--merge-search", "gss"],
    "merge_partners": ["--merge-partners", "sign"],
    "variant": ["--variant", "norma"], "coalesce": ["--no-coalesce"],
    "polish": ["--polish", "none"], "eta": ["--eta", "2"], "radius": ["--radius", "2"],
    "acf_c": ["--acf-c", "0.5"], "acf_pmin": ["--acf-pmin", "0.2"],
    "acf_pmax": ["--acf-pmax", "5"], "acf_shrink": ["--acf-shrink", "none"],
    "ww_subsolver": ["--ww-subsolver", "iterative"], "ww_shrink": ["--ww-shrink", "none"],
    "stats": ["--stats"], "stream_buffer": ["--stream-buffer", "8"],
}
CONDITION = {"eta": ["--variant", "norma"], "radius": ["--variant", "mp"],
             "stream_buffer": ["--stream"]}
# Options that never change a model (execution, output) or are tested elsewhere.
NOT_MODEL = {"n_threads", "stats", "stream_buffer", "solver", "folds", "quiet", "probability",
             "model_format", "zero_based", "help", "monitor_file", "monitor_test_file",
             "stream", "cache_mb"}


def train(tmp_path, solver, *args):
    model = tmp_path / f"m{len(list(tmp_path.iterdir()))}"
    r = subprocess.run([BIN / "bsvm-train", "-s", solver, *args, HEART, model],
                       capture_output=True, text=True)
    return r, (model.read_bytes() if model.exists() else None)


_BASELINES = {}


def baseline(tmp_path, solver, *args):
    """The model trained without the option under test (once per module and arguments)."""
    key = (solver, args)
    if key not in _BASELINES:
        r, model = train(tmp_path, solver, *args)
        assert r.returncode == 0 and model, r.stderr
        _BASELINES[key] = model
    return _BASELINES[key]


def ignored_cases():
    for name, use in OPTIONS.items():
        for solver in SOLVERS:
            if name in SAMPLE and solver not in use.solvers:     # -t 0: linear, no contradiction
                yield solver, name


def read_cases():
    for name, use in OPTIONS.items():
        for solver in use.solvers:
            if name not in NOT_MODEL:
                yield solver, name


def test_every_option_has_a_sample():
    assert set(OPTIONS) - set(SAMPLE) <= NOT_MODEL


@pytest.mark.parametrize("solver,name", list(ignored_cases()))
def test_ignored_option_gives_one_notice_and_the_same_model(tmp_path, solver, name):
    base_model = baseline(tmp_path, solver)
    r, model = train(tmp_path, solver, *SAMPLE[name])
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("notice: "), r.stderr
    flag = OPTIONS[name].flags[-1 if name == "coalesce" else 0]
    assert f" {flag} " in lines[0] and f"-s {solver}" in lines[0]
    assert model == base_model


@pytest.mark.parametrize("solver,name", list(read_cases()))
def test_read_option_gives_no_notice_and_changes_the_model(tmp_path, solver, name):
    extra = CONDITION.get(name, [])
    if name == "kernel":           # bsgd/bsca: polynomial instead of RBF (merging needs RBF)
        extra, sample = ["--maintenance", "removal"], ["-t", "1"]
    else:
        sample = SAMPLE[name]
    base_model = baseline(tmp_path, solver, *extra)
    r, model = train(tmp_path, solver, *extra, *sample)
    assert r.returncode == 0 and "notice" not in r.stderr, r.stderr
    assert model != base_model


@pytest.mark.parametrize("name,solver,without", [
    ("eta", "bsgd", []), ("radius", "bsgd", ["--variant", "norma"]),
    ("merge_search", "bsgd", ["--maintenance", "removal"]),
    ("merge_search", "bsgd", ["-t", "1"]),      # the default maintenance there is removal
    ("merge_search", "bsca", ["--maintenance", "projection", "--budget", "50"]),
    ("merge_partners", "bsca", ["--maintenance", "removal", "--budget", "50"]),
    ("stream_buffer", "bsgd", [])])
def test_option_read_only_under_a_condition(tmp_path, name, solver, without):
    base_model = baseline(tmp_path, solver, *without)
    r, model = train(tmp_path, solver, *without, *SAMPLE[name])
    assert r.returncode == 0 and model == base_model
    assert r.stderr.splitlines() == [
        f"notice: {OPTIONS[name].flags[0]} has no effect with -s {solver} without "
        f"{OPTIONS[name].needs}"]


def test_defaults_never_give_a_notice(tmp_path):
    for solver in SOLVERS:
        r, model = train(tmp_path, solver)
        assert r.returncode == 0 and r.stderr == "" and model


@pytest.mark.parametrize("solver", ["dcd", "acf", "ww"])
@pytest.mark.parametrize("kernel", ["rbf", "2", "poly", "sigmoid"])
def test_kernel_with_linear_solver_is_a_usage_error(tmp_path, solver, kernel):
    r, model = train(tmp_path, solver, "-t", kernel, "-g", "0.5")
    assert r.returncode == 2 and model is None and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "-t" in lines[0] and f"-s {solver}" in lines[0]
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args", [["--monitor", "x.csv"], ["--stream"]])
def test_option_of_other_solvers_only_is_a_usage_error(tmp_path, args):
    r, model = train(tmp_path, "dcd", *args)
    assert r.returncode == 2 and model is None and len(r.stderr.splitlines()) == 1


def test_several_ignored_options_give_one_line_each(tmp_path):
    base_model = baseline(tmp_path, "bsgd")
    r, model = train(tmp_path, "bsgd", "-B", "1", "-e", "0.5", "--loss", "l2", "-h", "0")
    assert model == base_model
    lines = r.stderr.splitlines()
    assert len(lines) == 4 and all(line.startswith("notice: ") for line in lines)
    for flag in ("-B", "-e", "--loss", "-h"):
        assert sum(f" {flag} " in line for line in lines) == 1


def test_quiet_silences_the_notices(tmp_path):
    r, _ = train(tmp_path, "dcd", "-q", "--budget", "3")
    assert r.returncode == 0 and r.stderr == ""


def test_table_covers_every_option_of_help():
    from budgetsvm.cli.train import command
    text = subprocess.run([BIN / "bsvm-train", "--help"], capture_output=True,
                          text=True).stdout
    shown = set(re.findall(r"^\s+(-[-A-Za-z][-\w]*)", text, re.M))
    shown |= set(re.findall(r"^\s+-[-\w]+(?: \S+)?, (-[-A-Za-z][-\w]*)", text, re.M))
    assert len(shown) > 40
    declared = {flag for param in command.params
                for flag in (*param.opts, *param.secondary_opts) if flag.startswith("-")}
    flags = {flag for use in OPTIONS.values() for flag in use.flags}
    assert shown - flags == set()
    assert declared - flags == set()
    assert {param.name for param in command.params if param.opts[0].startswith("-")} \
        <= set(OPTIONS)


def test_grid_applies_the_same_table(tmp_path):
    grid = [BIN / "bsvm-grid", "-log2c", "1,1,1", "-v", "2", "-out", "null"]
    r = subprocess.run([*grid, "-s", "dcd", "--budget", "30", HEART], capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.returncode == 0
    assert r.stderr.splitlines() == [
        "notice: --budget has no effect with -s dcd (it is read by -s bsgd, bsca)"]
    r = subprocess.run([*grid, "-s", "dcd", "-t", "rbf", HEART], capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and r.stdout == ""
