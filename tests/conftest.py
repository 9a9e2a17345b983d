"""Shared fixtures. Data sets beyond data/ come from the folder named by BSVM_DATA: unset, the
tests that need them skip with the reason shown; set, a missing file fails the test."""
import pytest

from reference.data import DATA, shared_data_path


@pytest.fixture
def shared_data():
    return shared_data_path


@pytest.fixture
def repo_data():
    return DATA
