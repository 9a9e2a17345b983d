"""Shared fixtures. Data sets beyond data/ come from the folder named by BSVM_DATA: unset, the
tests that need them skip with the reason shown; set, a missing file fails the test."""
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"


def shared_data_path(name):
    folder = os.environ.get("BSVM_DATA")
    if not folder:
        pytest.skip(f"BSVM_DATA is not set: data set {name} unavailable")
    path = Path(folder) / name
    if not path.exists():
        pytest.fail(f"BSVM_DATA={folder} is set but {name} is missing there")
    return path


@pytest.fixture
def shared_data():
    return shared_data_path


@pytest.fixture
def repo_data():
    return DATA
