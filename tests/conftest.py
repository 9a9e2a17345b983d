"""Shared fixtures. Data sets beyond data/ come from the folder named by BSVM_DATA: unset, the
tests that need them skip with the reason shown; set, a missing file fails the test.

The merge tables that processes save for each other (budgetsvm/_lookup.pyx) go to a folder of
this test session, not to the user's cache folder: BSVM_CACHE_DIR is set for the session and
inherited by the commands the tests run."""
import os

import pytest

from reference.data import DATA, shared_data_path


@pytest.fixture
def shared_data():
    return shared_data_path


@pytest.fixture
def repo_data():
    return DATA


@pytest.fixture(autouse=True, scope="session")
def session_cache_folder(tmp_path_factory):
    os.environ["BSVM_CACHE_DIR"] = str(tmp_path_factory.mktemp("bsvm-cache"))
