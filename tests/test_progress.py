"""The training progress display (issue 20 item 5): on a terminal, stderr shows the epoch (or
iteration) against its total, a bar with a percentage, the elapsed time and an ETA; nothing
with -q or when stderr is not a terminal; the model is the same with and without it. The
commands run under a real pseudo-terminal (stderr only: stdout stays a pipe)."""
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HEART = REPO / "data" / "heart_scale.xz"
A9A = REPO / "data" / "a9a.xz"
BIN = Path(sys.executable).parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TIME = r"\d+:\d\d:\d\d"


def run_on_terminal(*args, tool="bsvm-train"):
    """(exit code, stdout, the text written to the terminal with ANSI escapes removed)."""
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="200", TERM="xterm")
    process = subprocess.Popen([BIN / tool, *map(str, args)], stdout=subprocess.PIPE,
                               stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:          # EIO: the terminal's last writer has gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    stdout = process.stdout.read().decode()
    process.wait()
    return process.returncode, stdout, ANSI.sub("", b"".join(chunks).decode(errors="replace"))


def states(text):
    """Every rendered state of the progress line (carriage returns and newlines split them)."""
    return [part for part in re.split(r"[\r\n]", text) if part.strip()]


@pytest.fixture(scope="module")
def multiclass(tmp_path_factory):
    """Four classes, 1,200 rows, 8 features (a fixed file: no generator involved)."""
    path = tmp_path_factory.mktemp("data") / "four"
    lines = []
    for i in range(1200):
        c = i % 4
        features = " ".join(f"{j}:{((i * 7 + j * 13) % 17) / 17 + (j % 4 == c):.4f}"
                            for j in range(1, 9))
        lines.append(f"{c} {features}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bsgd_epochs_percentage_and_times(tmp_path):
    code, stdout, shown = run_on_terminal("--epochs", "5", A9A, tmp_path / "m")
    assert code == 0 and "n_sv = 500" in stdout
    # the last state of the epochs is drawn before the refit begins
    final = [s for s in states(shown) if "epoch 5/5" in s]
    assert any(re.search(rf"100% {TIME} eta {TIME} epoch 5/5  #SV 500", s) for s in final)
    assert "100%" in shown and "refit" in shown and "#SV 500" in shown


def test_model_is_the_same_with_and_without_the_display(tmp_path):
    code, _, shown = run_on_terminal("--epochs", "2", A9A, tmp_path / "shown")
    assert code == 0 and "epoch 2/2" in shown
    quiet = subprocess.run([BIN / "bsvm-train", "--epochs", "2", A9A, tmp_path / "piped"],
                           capture_output=True, text=True)
    assert quiet.returncode == 0
    assert (tmp_path / "shown").read_bytes() == (tmp_path / "piped").read_bytes()


def test_no_progress_when_quiet_or_not_a_terminal(tmp_path):
    code, stdout, shown = run_on_terminal("-q", "--epochs", "2", HEART, tmp_path / "q")
    assert code == 0 and shown == "" and stdout == ""
    piped = subprocess.run([BIN / "bsvm-train", "--epochs", "2", HEART, tmp_path / "p"],
                           capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stderr == ""
    assert (tmp_path / "q").read_bytes() == (tmp_path / "p").read_bytes()


@pytest.mark.parametrize("solver,options,expected", [
    ("dcd", (), r"iter \d+/1000  M-m = "), ("acf", (), r"iter \d+/1000  max\|PG\| = "),
    ("ww", ("--max-iter", "1000"), r"iter \d+/1000  gap/gap_1 = ")])
def test_linear_iterations_against_max_iter(tmp_path, solver, options, expected):
    code, _, shown = run_on_terminal("-s", solver, *options, HEART, tmp_path / "m")
    assert code == 0 and re.search(expected, shown)
    assert re.search(rf"\d+% {TIME} eta", shown)


def test_ww_under_its_default_limit_shows_the_count_without_a_percentage(tmp_path):
    # the gap test ends ww long before LIBLINEAR -s 4's 100,000 iterations, its default limit
    code, _, shown = run_on_terminal("-s", "ww", HEART, tmp_path / "m")
    assert code == 0 and re.search(r"iter \d+  gap/gap_1 = ", shown)
    assert "%" not in shown and "/100000" not in shown


def test_unlimited_iterations_show_the_count_without_a_percentage(tmp_path):
    code, _, shown = run_on_terminal("-s", "dcd", "--max-iter", "0", HEART, tmp_path / "m")
    assert code == 0 and re.search(r"iter \d+  M-m = ", shown)
    assert "%" not in shown


def test_one_vs_rest_names_the_class_and_counts_the_done(tmp_path, multiclass):
    code, _, shown = run_on_terminal("-s", "dcd", "-n", "2", multiclass, tmp_path / "m")
    assert code == 0 and re.search(r"class \d \([0-3]/4 done\)  iter \d+/1000", shown)
    code, _, shown = run_on_terminal("-s", "bsca", "--epochs", "30", "-n", "2", multiclass,
                                     tmp_path / "b")
    assert code == 0 and re.search(r"class \d \([0-3]/4 done\)  epoch 30/30  #SV \d+", shown)
    # the steps of the four models, summed over the two threads, fill the bar
    assert "100%" in shown and "refit  iteration" in shown


def test_stream_shows_epochs_against_the_rows_of_the_first_pass(tmp_path):
    code, _, shown = run_on_terminal("--stream", "--epochs", "3", A9A, tmp_path / "m")
    assert code == 0 and "epoch 3/3" in shown and "100%" in shown
    assert "first pass" in shown


@pytest.mark.parametrize("tool, args", [
    ("bsvm-predict", [HEART, "{model}", "-"]), ("bsvm-predict", ["-b", "1", HEART, "{model}", "-"]),
    ("bsvm-predict", [HEART, "{model}", "/dev/stdout"]),
    ("bsvm-train", ["-s", "bsgd", "--budget", "30", HEART, "-"])])
def test_results_on_standard_output_stay_there_while_the_bar_shows(tmp_path, tool, args):
    # with stderr a terminal and stdout a pipe, the results went through rich's redirection
    # to the terminal: the pipe got nothing (exit 0). The oracle: the same command with -q.
    model = tmp_path / "m"
    assert run_on_terminal("-q", "-b", "1", "--budget", "30", HEART, model)[0] == 0
    args = [str(a).replace("{model}", str(model)) for a in args]
    status, shown, _ = run_on_terminal(*args, tool=tool)
    quiet = subprocess.run([BIN / tool, "-q", *args], capture_output=True, text=True)
    assert status == 0 and quiet.returncode == 0
    assert shown == quiet.stdout and len(shown.splitlines()) >= 20
