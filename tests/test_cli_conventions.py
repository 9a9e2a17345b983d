"""What LIBSVM/LIBLINEAR users' scripts and habits rely on: summary lines on
stdout, failures found before any work, one-line usage errors, hints for LIBSVM's numbers and
single-dash long options.

"Before any work" is checked with spies on the functions that do the work (reading the data,
training): the property is that they are never called when an option cannot be honoured.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

import budgetsvm.cli.train as cli_train
from budgetsvm import io, model_io

BIN = Path(sys.executable).parent
DATA = Path(__file__).resolve().parent.parent / "data"
HEART = DATA / "heart_scale.xz"


def run(tool, *args, cwd=None):
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, capture_output=True,
                          timeout=300)


def one_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def three_classes(path):
    """heart_scale with a third class (label 2 for every fifth row): a multi-class problem."""
    X, y = io.read_problem(HEART)
    y = y.copy()
    y[::5] = 2
    with open(path, "w") as f:
        for i in range(X.shape[0]):
            row = X[i]
            f.write("%g" % y[i] + "".join(f" {j + 1}:{v:.17g}" for j, v in
                                          zip(row.indices, row.data)) + "\n")
    return path


# ---------------------------------------------------------------------------------------------
# Item: failures that can be found before training are found before training
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if the data are read or a model is trained (bsvm-train in process)."""
    calls = []

    def spy(name):
        def called(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"{name} was called: the check came after the work")
        return called
    monkeypatch.setattr(cli_train, "train", spy("train"))
    monkeypatch.setattr(cli_train, "cross_validation", spy("cross_validation"))
    import budgetsvm._bsgd
    monkeypatch.setattr(budgetsvm._bsgd, "bsgd_solve", spy("bsgd_solve"))
    return calls


def train_in_process(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        cli_train.main([str(a) for a in args])
    captured = capsys.readouterr()
    return exc.value.code, captured.out, captured.err


@pytest.mark.parametrize("extra", [["-s", "dcd"], ["-s", "bsgd"], ["--stream"]])
def test_missing_output_directory_fails_before_reading_data(tmp_path, capsys, monkeypatch,
                                                           no_work, extra):
    monkeypatch.setattr(cli_train.io, "read_problem", lambda *a, **k: no_work.append("read"))
    monkeypatch.chdir(tmp_path)
    status, out, err = train_in_process(capsys, *extra, HEART, "nodir/m")
    assert status == 1
    assert one_line(err) == "nodir/m: cannot write: no such directory 'nodir'"
    assert no_work == [] and out == ""
    (tmp_path / "adir").mkdir()
    status, out, err = train_in_process(capsys, *extra, HEART, "adir")
    assert status == 1 and one_line(err) == "adir: cannot write: it is a directory"
    status, out, err = train_in_process(capsys, "--monitor", "nodir/csv", HEART, "m")
    assert status == 1 and "nodir/csv: cannot write" in one_line(err)
    assert no_work == []


@pytest.mark.parametrize("solver,fmt", [("dcd", "libsvm"), ("acf", "libsvm"), ("ww", "libsvm"),
                                        ("bsgd", "liblinear"), ("bsca", "liblinear")])
def test_format_that_cannot_hold_the_solvers_model_fails_before_reading_data(
        tmp_path, capsys, monkeypatch, no_work, solver, fmt):
    monkeypatch.setattr(cli_train.io, "read_problem", lambda *a, **k: no_work.append("read"))
    status, out, err = train_in_process(capsys, "-s", solver, "--format", fmt, HEART,
                                        tmp_path / "m")
    assert status == 2
    assert f"--format {fmt}" in one_line(err) and f"-s {solver}" in err
    assert no_work == [] and not (tmp_path / "m").exists()


@pytest.mark.parametrize("solver,stream", [("bsgd", False), ("bsca", False), ("bsgd", True)])
def test_libsvm_format_with_three_classes_fails_before_training(tmp_path, capsys, monkeypatch,
                                                                no_work, solver, stream):
    data = three_classes(tmp_path / "three")
    status, out, err = train_in_process(capsys, "-s", solver, "--format", "libsvm",
                                        *(["--stream"] if stream else []), data, tmp_path / "m")
    assert status == 2
    assert "3 classes" in one_line(err)
    assert no_work == [] and not (tmp_path / "m").exists()
    # the oracle: a model of these data really cannot be written in that format
    monkeypatch.undo()
    X, y = io.read_problem(data)
    from budgetsvm.params import TrainParams
    from budgetsvm.train import train
    model = train(X, y, TrainParams(solver=solver, budget=10, epochs=1))
    with pytest.raises(Exception, match="one-vs-one"):
        model_io.dumps_model(model, "libsvm")


def test_non_integer_labels_with_a_liblinear_file_fail_before_training(tmp_path, capsys,
                                                                      no_work):
    data = tmp_path / "half"
    data.write_text("0.5 1:1\n1.5 1:-1\n0.5 1:2\n")
    status, out, err = train_in_process(capsys, "-s", "dcd", "--format", "liblinear", data,
                                        tmp_path / "m")
    assert status == 2 and "0.5" in one_line(err) and no_work == []


# ---------------------------------------------------------------------------------------------
# Item: summary lines on stdout (LIBSVM/LIBLINEAR print them there), unless stdout is the model
# ---------------------------------------------------------------------------------------------

def test_liblinear_summary_lines_go_to_stdout(tmp_path):
    r = run("bsvm-train", "-s", "dcd", HEART, "m", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode().splitlines()
    assert out[0].startswith("optimization finished, #iter = ")
    assert out[1].startswith("Objective value = ") and out[2].startswith("nSV = ")
    assert r.stderr == b""


def test_budgeted_summary_line_goes_to_stdout(tmp_path):
    r = run("bsvm-train", "--budget", "20", "--epochs", "1", HEART, "m", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().startswith("n_steps = 270, n_sv = 20, ")
    assert r.stderr == b""


def test_summary_lines_leave_stdout_to_the_model(tmp_path):
    r = run("bsvm-train", "-s", "dcd", HEART, "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert run("bsvm-train", "-s", "dcd", "-q", HEART, "m", cwd=tmp_path).returncode == 0
    assert r.stdout == (tmp_path / "m").read_bytes()       # stdout is the model, byte for byte
    assert r.stderr.decode().startswith("optimization finished, #iter = ")


def test_quiet_prints_no_summary(tmp_path):
    r = run("bsvm-train", "-q", "-s", "dcd", HEART, "m", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == b"" and r.stderr == b""


# ---------------------------------------------------------------------------------------------
# Item: LIBSVM habits — -s numbers, single-dash long options, one-line usage errors
# ---------------------------------------------------------------------------------------------

# LIBSVM's svm-train -s and LIBLINEAR's train -s numbers: the classification ones
# and the solver options that train the same model family here.
SAME_PROBLEM = {("LIBSVM", "0"): ["-s", "bsgd"], ("LIBLINEAR", "1"): ["-s", "dcd", "--loss", "l2"],
                ("LIBLINEAR", "2"): ["-s", "dcd", "--loss", "l2"],
                ("LIBLINEAR", "3"): ["-s", "dcd"], ("LIBLINEAR", "4"): ["-s", "ww"]}
NO_COUNTERPART = [("LIBSVM", "2"), ("LIBSVM", "3"), ("LIBSVM", "4"), ("LIBLINEAR", "11"),
                  ("LIBLINEAR", "12"), ("LIBLINEAR", "13"), ("LIBLINEAR", "21")]


def solver_error(number):
    r = run("bsvm-train", "-s", number, HEART)
    assert r.returncode == 2
    return one_line(r.stderr.decode())


@pytest.mark.parametrize("number", ["0", "1", "2", "3", "4", "5", "6", "7", "11", "12", "13",
                                    "21"])
def test_solver_numbers_name_the_nearest_solver(tmp_path, number):
    line = solver_error(number)
    assert line.startswith("Usage error: Invalid value for '-s': solvers are chosen by name")
    suggested = dict(re.findall(r"(LIBSVM|LIBLINEAR)'s -s \d+ \([^)]*\): "
                                r"(?:use|nearest:) (-s [a-z]+(?: --loss l[12])?)", line))
    for (tool, value), options in SAME_PROBLEM.items():
        if value == number:
            assert suggested[tool] == " ".join(options), line
    for tool, value in NO_COUNTERPART:
        if value == number:
            assert f"{tool}'s -s {number} (" in line and tool not in suggested, line
    assert suggested or number in {v for _, v in NO_COUNTERPART}
    for options in suggested.values():        # every suggestion is a valid command
        r = run("bsvm-train", "-q", "--budget", "10", "--epochs", "1", *options.split(), HEART,
                tmp_path / "m")
        assert r.returncode == 0, (options, r.stderr)


@pytest.mark.parametrize("tool", ["bsvm-train", "bsvm-grid"])
def test_libsvm_nu_given_to_n_names_what_n_is_here(tmp_path, tool):
    # svm-train -s 1 -n 0.5 sets nu; here -n counts threads. The suggested options train.
    line = one_line(run(tool, "-n", "0.5", HEART).stderr.decode())
    assert line.startswith("Usage error: Invalid value for '-n': '0.5': -n is the number of "
                           "worker threads (LIBLINEAR's -n); LIBSVM's -n (the nu of nu-SVC)")
    suggested = re.search(r"nearest: (-s [a-z]+) \(or ([a-z]+)\) with -c", line)
    for options in (suggested[1], f"-s {suggested[2]}"):
        r = run("bsvm-train", "-q", "--budget", "10", "--epochs", "1", *options.split(), HEART,
                tmp_path / "m")
        assert r.returncode == 0, (options, r.stderr)
    for whole_number in ("1.5", "x"):
        line = one_line(run(tool, "-n", whole_number, HEART).stderr.decode())
        assert f"'{whole_number}' is not a valid integer" in line and "nu" not in line


@pytest.mark.parametrize("tool,args,hint", [
    ("bsvm-train", ["-epochs", "5", HEART], "--epochs"),
    ("bsvm-train", ["-budget=10", HEART], "--budget"),
    ("bsvm-train", ["-stream", HEART], "--stream"),
    ("bsvm-grid", ["-log2c", "0,1,1", "-epochs", "5", HEART], "--epochs"),
    ("bsvm-grid", ["-jobs", "2", HEART], "--jobs"),
    ("bsvm-scale", ["-precise", HEART], "--precise"),
    ("bsvm-predict", ["-zero-based", HEART, "m", "out"], "--zero-based"),
])
def test_single_dash_long_option_gets_a_hint(tool, args, hint):
    r = run(tool, *args)
    assert r.returncode == 2
    line = one_line(r.stderr.decode())
    assert line == f"Usage error: {hint[1:]}: long options take two dashes: use {hint}"


@pytest.mark.parametrize("tool,args", [
    ("bsvm-train", []), ("bsvm-train", ["-Z", HEART]), ("bsvm-train", ["-c", "abc", HEART]),
    ("bsvm-train", ["-t", "9", HEART]), ("bsvm-train", ["-h", "2", HEART]),
    ("bsvm-train", [HEART, "m", "extra"]), ("bsvm-predict", [HEART]),
    ("bsvm-predict", ["-b", "3", HEART, "m", "o"]), ("bsvm-grid", []),
    ("bsvm-grid", ["-s", "1", HEART]), ("bsvm-grid", ["-c", "1", HEART]),
    ("bsvm-scale", []), ("bsvm-scale", ["-l", "x", HEART]), ("bsvm-scale", ["-s", "a", "-r", "b",
                                                                            HEART]),
])
def test_usage_errors_are_one_line(tool, args):
    r = run(tool, *args)
    assert r.returncode == 2, r.stderr
    line = one_line(r.stderr.decode())
    assert line.startswith("Usage error: ")
    assert r.stdout == b""


def test_a_label_written_minus_zero_is_printed_as_liblinear_prints_it(tmp_path):
    # LIBSVM and LIBLINEAR keep labels as ints, so a label "-0" is class 0 and printed "0"; the
    # model file (any format) and the predictions say 0, never "-0"
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    data = tmp_path / "minus_zero"
    data.write_text("-0 1:1\n1 1:-1\n0 1:0.5\n1 1:-0.5\n")
    y, x = liblinearutil.svm_read_problem(str(data))
    theirs, _, _ = liblinearutil.predict(y, x, liblinearutil.train(y, x, "-q"), "-q")
    expected = "".join(f"{int(v)}\n" for v in theirs)
    for fmt in ("native", "liblinear"):
        model, out = tmp_path / f"m.{fmt}", tmp_path / f"out.{fmt}"
        assert run("bsvm-train", "-q", "-s", "dcd", "--format", fmt, data, model).returncode == 0
        assert re.search(r"^label 0 1$", model.read_text(), re.M)
        assert run("bsvm-predict", data, model, out).returncode == 0
        assert out.read_text() == expected


def test_a_newline_in_a_file_name_stays_inside_the_one_line_error(tmp_path):
    # the message names the file with its newline escaped, then the line and the problem,
    # instead of stopping at the newline
    bad = tmp_path / "bad\nname"
    bad.write_text("1 1:x\n")
    result = run("bsvm-train", "-s", "dcd", bad.name, "m", cwd=tmp_path)
    assert result.returncode == 1 and not (tmp_path / "m").exists()
    assert one_line(result.stderr.decode()) == "bad\\nname:1: value is not a number: '1:x'"
    assert run("bsvm-train", "-q", "-s", "dcd", HEART, "good", cwd=tmp_path).returncode == 0
    result = run("bsvm-predict", HEART, "good", "no such dir\t/out", cwd=tmp_path)
    assert one_line(result.stderr.decode()).startswith("no such dir\\t/out: ")


def test_a_repeated_class_weight_multiplies_as_in_liblinear(tmp_path):
    # LIBSVM and LIBLINEAR multiply C by every weight naming the class: -w1 2 -w1 3 is -w1 6
    # (the last one won). Oracle: liblinear-official's weights for the two option strings.
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    heart = tmp_path / "heart"
    heart.write_bytes(__import__("lzma").open(HEART).read())
    y, x = liblinearutil.svm_read_problem(str(heart))
    # -s 2 (the primal Newton method): deterministic, so the two runs are comparable exactly
    repeated = liblinearutil.train(y, x, "-s 2 -e 1e-6 -q -w1 2 -w1 3").get_decfun()[0]
    product = liblinearutil.train(y, x, "-s 2 -e 1e-6 -q -w1 6").get_decfun()[0]
    last = liblinearutil.train(y, x, "-s 2 -e 1e-6 -q -w1 3").get_decfun()[0]
    assert repeated == pytest.approx(product, rel=1e-9)
    assert repeated != pytest.approx(last, rel=1e-3)
    for args, name in ((["-w1", "2", "-w+1", "3"], "a"), (["-w1", "6"], "b")):
        result = subprocess.run([str(BIN / "bsvm-train"), "-q", "-s", "dcd", *args, heart,
                                 tmp_path / name], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_double_dash_ends_the_options_for_file_names_like_options(tmp_path):
    # `-- -w1 model`: -w1 is the training file (the glued-weight rewrite and the single-dash
    # hint took it for an option)
    (tmp_path / "-w1").write_bytes(__import__("lzma").open(HEART).read())
    (tmp_path / "-epochs").write_bytes((tmp_path / "-w1").read_bytes())
    for data in ("-w1", "-epochs"):
        result = subprocess.run([str(BIN / "bsvm-train"), "-q", "-s", "dcd", "--", data,
                                 "out"], cwd=tmp_path, capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "out").exists()
        (tmp_path / "out").unlink()


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux's /proc")
def test_a_file_that_opens_but_cannot_be_read_is_one_line(tmp_path):
    # the first read (the sniffing of a compressed format) raised outside the reader's errors:
    # a traceback, or '<stdout>: cannot write: Input/output error'
    for tool, args in (("bsvm-train", ["-s", "dcd", "/proc/self/mem", "m"]),
                       ("bsvm-scale", ["/proc/self/mem"])):
        result = subprocess.run([str(BIN / tool), *args], cwd=tmp_path, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr.startswith("/proc/self/mem: cannot read: "), result.stderr
        assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("signum,status,word", [(2, 130, "interrupted"), (15, 143, "terminated")])
def test_signal_whose_exit_an_import_swallowed_still_ends_the_run(tmp_path, signum, status, word):
    # a SIGINT (or SIGTERM) during the imports raised SystemExit inside them; an import that
    # caught it let the run go on, replace the model and exit 0 after printing 'interrupted'
    # (and Python, running the handler inside an import lock's callback, printed "Exception
    # ignored ... SystemExit: 130"). The handler now ends the process itself: here it runs
    # inside code that catches every exception, as such an import would.
    (tmp_path / "m").write_text("old\n")
    code = ("import sys; sys.argv = ['bsvm-train', '-q', '-s', 'dcd', sys.argv[1], 'm']\n"
            "import budgetsvm.cli as cli\n"
            "try:\n"
            f"    cli._interrupted_while_starting({signum}, None)\n"
            "except BaseException:\n"
            "    pass\n"
            "from budgetsvm.cli.train import main; main()\n")
    result = subprocess.run([sys.executable, "-c", code, str(HEART)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == status and result.stderr == f"{word}\n"
    assert (tmp_path / "m").read_text() == "old\n"


def test_sigterm_during_the_imports_is_exit_143(tmp_path):
    # SIGTERM before common.run installs its handler (the imports of numpy and scipy) killed
    # the process by the signal (-15) instead of the exit 143 of a terminated run
    (tmp_path / "m").write_text("old\n")
    code = ("import sys; sys.argv = ['bsvm-train', '-q', '-s', 'dcd', sys.argv[1], 'm']\n"
            "import os, signal, time, budgetsvm.cli\n"
            "os.kill(os.getpid(), signal.SIGTERM)\n"
            "time.sleep(30)\n")
    result = subprocess.run([sys.executable, "-c", code, str(HEART)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 143 and result.stderr == "terminated\n"
    assert (tmp_path / "m").read_text() == "old\n"


def _run_command_script(prelude, body):
    """Run a console script's process (common.run without argv, so it ends with os._exit) whose
    click command's body is ``body``, after the module-level lines ``prelude``; SIGINT raises
    KeyboardInterrupt, as in a terminal."""
    code = ("import multiprocessing, os, signal, sys\n"
            "sys.argv = ['bsvm-test']\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "import click\n"
            "from budgetsvm.cli import common\n"
            + prelude
            + "@click.command()\n"
            "def command():\n"
            + body
            + "common.run(command)\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("signum,status,word", [(2, 130, "interrupted"), (15, 143, "terminated")])
def test_a_signal_whose_exception_python_changed_into_another_is_one_line(signum, status, word):
    # bsvm-grid -png imports matplotlib when it starts; a SIGTERM inside a class body's
    # __set_name__ there came out as RuntimeError (Python 3.11 wraps what __set_name__ raises)
    # and ended the run with a traceback and exit 1. Any error that ends a run after the
    # signal reports the signal.
    result = _run_command_script("class Named:\n"
                                 "    def __set_name__(self, owner, name):\n"
                                 f"        os.kill(os.getpid(), {signum})\n"
                                 "        for _ in range(10 ** 6):\n"
                                 "            pass\n",
                                 "    class Imported:\n"
                                 "        attribute = Named()\n"
                                 "    print('not interrupted')\n")
    assert result.returncode == status and result.stderr == f"{word}\n", result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("signum,status,word", [(2, 130, "interrupted"), (15, 143, "terminated")])
def test_a_signal_while_a_process_pool_is_alive_is_one_line(signum, status, word):
    # bsvm-grid -j N interrupted while its process pool shut down: the pool's named semaphores
    # were still referenced at the command's os._exit, which skips multiprocessing's exit-time
    # clean-up, and its resource tracker printed "There appear to be 5 leaked semaphore
    # objects to clean up at shutdown" after 'terminated' (a helper: 8 runs in about 300).
    # Here the command holds such a semaphore when the signal comes.
    result = _run_command_script("held = []\n",
                                 "    held.append(multiprocessing.get_context('spawn').Lock())\n"
                                 f"    os.kill(os.getpid(), {signum})\n"
                                 "    for _ in range(10 ** 7):\n"
                                 "        pass\n")
    assert result.returncode == status and result.stderr == f"{word}\n", result.stderr


def test_shell_completion_still_prints_its_script():
    # click's main() answered _BSVM_TRAIN_COMPLETE=bash_source; the tools call the command
    # themselves now and must still do it (else a shell's start-up file prints a usage error)
    result = subprocess.run([str(BIN / "bsvm-train")], capture_output=True, text=True,
                            timeout=60, env={**__import__("os").environ,
                                             "_BSVM_TRAIN_COMPLETE": "bash_source"})
    assert result.returncode == 0, result.stderr
    assert "_bsvm_train_completion()" in result.stdout


def test_gamma_0_is_svm_train_s_default_gamma(tmp_path):
    # svm-train sets gamma = 1/num_features when -g is 0 (its read_problem); grid scripts pass
    # -g 0 for "the default". Oracle: the gamma of libsvm-official's model with -g 0.
    svmutil = pytest.importorskip("libsvm.svmutil")
    heart = tmp_path / "heart"
    heart.write_bytes(__import__("lzma").open(HEART).read())
    y, x = svmutil.svm_read_problem(str(heart))
    svmutil.svm_save_model(str(tmp_path / "theirs"), svmutil.svm_train(y, x, "-q -g 0"))
    theirs = [line for line in (tmp_path / "theirs").read_text().splitlines()
              if line.startswith("gamma ")]
    for args, name in ((["-g", "0"], "zero"), ([], "default")):
        result = subprocess.run([str(BIN / "bsvm-train"), "-q", "--budget", "20", *args,
                                 "--format", "libsvm", heart, tmp_path / name],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "zero").read_bytes() == (tmp_path / "default").read_bytes()
    ours = [line for line in (tmp_path / "zero").read_text().splitlines()
            if line.startswith("gamma ")]
    assert float(ours[0].split()[1]) == float(theirs[0].split()[1]) == 1 / 13


def test_a_second_run_in_one_process_shows_its_warnings_and_keeps_the_callers_sigterm(
        tmp_path, capsys):
    # main(argv) from a script or a test: each run shows its own warnings (they are shown
    # once per run, not once per process), and the caller's SIGTERM handler is back after it.
    import signal
    one_class = tmp_path / "one"
    one_class.write_text("1 1:1\n1 1:2\n")
    before = signal.getsignal(signal.SIGTERM)
    for _ in range(2):
        status, _, err = train_in_process(capsys, "-s", "dcd", one_class, tmp_path / "m")
        assert status == 0
        assert "warning: the training data has only one class" in err
    assert signal.getsignal(signal.SIGTERM) == before


@pytest.mark.parametrize("module", ["budgetsvm.fileio", "numpy", "scipy.sparse",
                                    "scipy._lib.array_api_compat.numpy"])
def test_ctrl_c_during_any_import_of_the_commands_is_one_line(tmp_path, module):
    # Ctrl-C arrives while this module is imported (an import hook sends it): the commands'
    # start-up handler must already be in place. budgetsvm.fileio (compression modules,
    # hashlib: 10-25 ms) was imported before it was installed, and the signal then ended the
    # process with a KeyboardInterrupt traceback. The scipy modules are imported while
    # budgetsvm.lean_import has numpy's listings trimmed.
    code = (
        "import importlib.abc, os, signal, sys, time\n"
        "sys.argv = ['bsvm-train', '-q', '-s', 'dcd', 'data', 'm']\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "class Interrupt(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        f"        if name == {module!r}:\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "            time.sleep(0.5)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from budgetsvm.cli.train import main\n"
        "print('not interrupted')\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 130 and result.stderr == "interrupted\n", result.stderr
    assert result.stdout == ""


def test_a_signal_after_the_work_is_written_does_not_end_in_a_traceback(tmp_path, capsys,
                                                                         monkeypatch):
    # The model is written; a Ctrl-C that arrives while the command replaces its handlers
    # (the handler raised inside signal.signal there, outside every except) must not turn a
    # finished run into a traceback: the run ends with status 0 and its model.
    from budgetsvm.cli import common
    real = common._ignore_signals
    calls = []

    def interrupted_once():
        calls.append(1)
        if len(calls) == 1:              # the signal arrives inside the first call
            raise KeyboardInterrupt
        real()
    monkeypatch.setattr(common, "_ignore_signals", interrupted_once)
    status, _, err = train_in_process(capsys, "-q", "-s", "dcd", HEART, tmp_path / "m")
    assert status == 0 and err == ""
    assert (tmp_path / "m").exists() and len(calls) == 2
