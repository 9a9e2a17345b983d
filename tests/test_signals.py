"""Ctrl-C and SIGTERM stop a running command promptly, with status 130/143, a one-line message,
and no model or prediction file (the compiled loops check for signals themselves)."""
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
DATA = Path(__file__).resolve().parent.parent / "data"

# Runs for minutes if not interrupted: tiny tolerance, no iteration cap, large C.
LONG_TRAINING = {
    "dcd": ["-s", "dcd", "-c", "1000", "-e", "1e-12", "--max-iter", "0"],
    "acf": ["-s", "acf", "-c", "1000", "-e", "1e-12", "--max-iter", "0"],
    "ww": ["-s", "ww", "-c", "1000", "-e", "1e-12", "--max-iter", "0"],
    "bsgd": ["-s", "bsgd", "--budget", "1000", "--epochs", "1000", "-c", "32"],
    "bsca": ["-s", "bsca", "--budget", "1000", "--epochs", "1000", "-c", "32"],
}


def start(args, tmp_path):
    return subprocess.Popen([str(BIN / "bsvm-train"), *args], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_until_training(process, seconds=1.5):
    """Give the child time to import, read the data and enter the solver loop."""
    time.sleep(seconds)
    assert process.poll() is None, process.communicate()[1].decode()


@pytest.mark.parametrize("solver", sorted(LONG_TRAINING))
@pytest.mark.parametrize("signum, status, word", [(signal.SIGINT, 130, "interrupted"),
                                                  (signal.SIGTERM, 143, "terminated")])
def test_signal_stops_training(tmp_path, solver, signum, status, word):
    process = start([*LONG_TRAINING[solver], str(DATA / "a9a.xz"), "m.model"], tmp_path)
    wait_until_training(process)
    sent = time.monotonic()
    process.send_signal(signum)
    _, err = process.communicate(timeout=10)
    elapsed = time.monotonic() - sent
    assert process.returncode == status, err.decode()
    assert elapsed < 1.0, f"took {elapsed:.2f} s to stop"
    assert err.decode().strip() == word
    assert list(tmp_path.iterdir()) == []          # no model, no temporary file
