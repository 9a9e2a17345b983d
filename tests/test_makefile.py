"""The Makefile rebuilds only what changed (issue: `make test` reinstalled the package every time).

Checked with make's dry run from an up-to-date build (as `make test` leaves it before running
pytest): ``make -n -W FILE target`` prints the commands make would run had FILE just changed,
without running them or touching any file.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def dry_run(*args):
    r = subprocess.run(["make", "-n", *args], cwd=REPO, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    # make's own remarks ("make: Nothing to be done for ...") are not commands
    return [line for line in r.stdout.splitlines() if line.strip() and
            not line.startswith("make")]


@pytest.fixture(scope="module", autouse=True)
def up_to_date():
    if not (REPO / "Makefile").exists():
        pytest.skip("no Makefile (not a source checkout)")
    if dry_run("install-test"):
        pytest.skip("the build is not up to date (run make install-test): the dry runs "
                    "describe changes from an up-to-date build")


def compiles(commands):
    return [c for c in commands if "build_ext" in c or re.search(r"pip install .*-e \.", c)]


def test_nothing_is_rebuilt_when_nothing_changed():
    assert dry_run("install-test") == []
    assert dry_run("test") == ["$(BIN)/python -m pytest -q".replace("$(BIN)", ".venv/bin")]
    assert dry_run("-W", "README.md", "-W", "budgetsvm/train.py", "install-test") == []


@pytest.mark.parametrize("source", ["budgetsvm/_rng.pyx", "budgetsvm/_budget.pxd", "setup.py"])
def test_a_changed_extension_source_compiles_once_in_place(source):
    commands = dry_run("-W", source, "install-test")
    assert not [c for c in commands if "pip install" in c]        # nothing is reinstalled
    builds = compiles(commands)
    assert len(builds) == 1 and "build_ext --inplace" in builds[0], commands
    assert "--force" not in builds[0]                  # build_ext recompiles changed modules only
    announce = commands.index(builds[0]) - 1           # one line says what is being built
    assert commands[announce].startswith("echo ") and "Compiling" in commands[announce]


def test_a_changed_pyproject_reinstalls_and_compiles_once():
    commands = dry_run("-W", "pyproject.toml", "install-test")
    editable = [c for c in commands if re.search(r"pip install .*-e \.", c)]
    assert len(editable) == 1 and editable[0].startswith("BSVM_ONLY=none "), commands
    assert len([c for c in compiles(commands) if "build_ext" in c]) == 1


def test_demo_writes_its_outputs_under_build():
    commands = dry_run("-W", "README.md", "demo")
    runs = [c.split() for c in commands if "scripts/demo.py" in c]
    assert len(runs) == 1, commands
    run = runs[0]
    # scripts/demo.py writes its model and predictions into --out (tests/test_demo.py)
    out = run[run.index("--out") + 1]
    assert out.startswith("build/"), run
    assert not [c for c in commands if "pip install" in c or "build_ext" in c]
