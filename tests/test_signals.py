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


def _default_sigint():
    # A test run started in the background of a non-interactive shell inherits SIGINT ignored,
    # and Python then leaves it ignored; the children must see Ctrl-C as a terminal user would.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen(command, tmp_path):
    return subprocess.Popen([str(c) for c in command], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=_default_sigint)


def start(args, tmp_path):
    return popen([BIN / "bsvm-train", *args], tmp_path)


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


def _stop(process, signum):
    sent = time.monotonic()
    process.send_signal(signum)
    out, err = process.communicate(timeout=15)
    return time.monotonic() - sent, out.decode(), err.decode()


@pytest.fixture(scope="module")
def big_board(tmp_path_factory):
    """A checkerboard file large enough that predicting or streaming it takes seconds."""
    from budgetsvm.datasets import write_checkerboard
    folder = tmp_path_factory.mktemp("signals")
    write_checkerboard(folder / "board.txt", 1_000_000, seed=5)
    subprocess.run([str(BIN / "bsvm-train"), "-q", "--budget", "1000", "--epochs", "1",
                    "-g", "8", "--maintenance", "removal", str(DATA / "a9a.xz"),
                    str(folder / "wide.model")], check=True)
    return folder


@pytest.mark.parametrize("signum, status, word", [(signal.SIGINT, 130, "interrupted"),
                                                  (signal.SIGTERM, 143, "terminated")])
def test_signal_stops_prediction(tmp_path, big_board, signum, status, word):
    # a9a's 1000-SV model on 10^6 board rows: about a minute of kernel evaluations
    process = popen([BIN / "bsvm-predict", big_board / "board.txt", big_board / "wide.model",
                     "out.txt"], tmp_path)
    wait_until_training(process)
    elapsed, _, err = _stop(process, signum)
    assert process.returncode == status, err
    assert elapsed < 1.0, f"took {elapsed:.2f} s to stop"
    assert err.strip() == word
    assert list(tmp_path.iterdir()) == []          # no prediction file, no temporary file


def test_signal_stops_streaming_training(tmp_path, big_board):
    process = start(["--stream", "--stream-buffer", "1", "--budget", "1000", "--epochs",
                     "1000", "-g", "8", str(big_board / "board.txt"), "m.model"], tmp_path)
    wait_until_training(process, 2.5)
    elapsed, _, err = _stop(process, signal.SIGINT)
    assert process.returncode == 130, err
    assert elapsed < 1.0, f"took {elapsed:.2f} s to stop"
    assert err.strip() == "interrupted"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("signum, status, word", [(signal.SIGINT, 130, "interrupted"),
                                                  (signal.SIGTERM, 143, "terminated")])
def test_signal_stops_grid_search_and_the_results_resume(tmp_path, signum, status, word):
    from budgetsvm.grid import read_results
    grid = [str(BIN / "bsvm-grid"), "-s", "bsgd", "--budget", "50", "--epochs", "2",
            "-log2c", "-5,15,2", "-log2g", "-9,-5,4", "-v", "3", "-j", "2", "-q",
            "-out", "grid.out", str(DATA / "a9a.xz")]
    process = popen(grid, tmp_path)
    out_file = tmp_path / "grid.out"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not out_file.exists() or
                                           len(out_file.read_text().splitlines()) < 3):
        time.sleep(0.2)
    assert process.poll() is None, process.communicate()[1].decode()
    elapsed, _, err = _stop(process, signum)
    assert process.returncode == status, err
    assert elapsed < 3.0, f"took {elapsed:.2f} s to stop (workers included)"
    assert err.strip() == word
    lines = out_file.read_text().splitlines()
    done = read_results(out_file)
    assert 3 <= len(done) == len(lines) < 22           # every line written is a whole result
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.out"]
    # resuming computes only the missing points and ends with a full, valid file
    resumed = subprocess.run(grid[:-1] + ["-resume", "grid.out", str(DATA / "a9a.xz")],
                             cwd=tmp_path, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert sum(line.startswith("[resumed]") for line in resumed.stdout.splitlines()) == \
        len(done)
    assert len(read_results(out_file)) == 22


def test_ctrl_c_during_the_refit_eigendecomposition_is_prompt():
    # numpy's eigh of the support vectors' kernel matrix is one call of O(B³) (20 s at
    # B = 5,000) during which the main thread saw no Ctrl-C; it now runs while the main thread
    # waits for it. The oracle: the same call's own duration, measured first in that process.
    code = (
        "import time, numpy as np\n"
        "from budgetsvm.refit import landmark_basis\n"
        "A = np.random.default_rng(0).normal(size=(2500, 2500)); K = A @ A.T\n"
        "t = time.perf_counter(); np.linalg.eigh(K); print(time.perf_counter() - t)\n"
        "print('ready', flush=True); landmark_basis(K)\n")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint,
                               env={**__import__("os").environ, "OPENBLAS_NUM_THREADS": "1"})
    duration = float(process.stdout.readline())
    assert process.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    start = time.perf_counter()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    elapsed = time.perf_counter() - start
    if duration < 1.0:
        pytest.skip(f"eigh took {duration:.2f} s here: too fast to tell")
    assert "KeyboardInterrupt" in err
    assert elapsed < 0.5, (elapsed, duration)
