"""What the tools write can never destroy what they read, and a write that fails is one line
naming the file, exit 1: an output path naming an input file (by any name) is refused before
any work; a full disk, a file size limit or a closed standard output are reported, not
tracebacks; Ctrl-C while the tools start up is the exit of an interrupted run."""
import lzma
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
DATA = Path(__file__).resolve().parent.parent / "data"
HEART = DATA / "heart_scale.xz"


def run(tool, *args, cwd, stdout=subprocess.PIPE, timeout=300, **kw):
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, **kw)


def one_line(result, status):
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def heart(tmp_path):
    path = tmp_path / "heart"
    path.write_bytes(lzma.open(HEART).read())
    return path


@pytest.fixture
def model(tmp_path, heart):
    assert run("bsvm-train", "-q", "-s", "dcd", heart, "m", cwd=tmp_path).returncode == 0
    return tmp_path / "m"


def test_no_output_overwrites_an_input(tmp_path, heart, model):
    original, trained = heart.read_bytes(), model.read_bytes()
    os.symlink(heart, tmp_path / "link")
    cases = [
        (("bsvm-train", "-q", "-s", "dcd", "heart", "heart"), "training file"),
        (("bsvm-train", "-q", "-s", "dcd", "heart", "link"), "training file"),
        (("bsvm-train", "-q", "--budget", "5", "--monitor", "heart", "heart", "m2"),
         "training file"),
        (("bsvm-train", "-q", "--budget", "5", "--monitor", "m2", "heart", "m2"), "model file"),
        (("bsvm-predict", "heart", "m", "heart"), "test file"),
        (("bsvm-predict", "link", "m", "heart"), "test file"),
        (("bsvm-predict", "heart", "m", "m"), "model file"),
        (("bsvm-scale", "-s", "heart", "heart"), "data file"),
        (("bsvm-grid", "-s", "dcd", "-log2c", "0,0,1", "-out", "heart", "heart"), "data file"),
    ]
    for (tool, *args), role in cases:
        line = one_line(run(tool, *args, cwd=tmp_path), 2)
        assert role in line and "refusing to overwrite" in line, line
        assert heart.read_bytes() == original and model.read_bytes() == trained
    assert not (tmp_path / "m2").exists()
    # an input read through "-": the file standard input is (`- < heart` then output heart)
    stdin_cases = [(heart, ("bsvm-predict", "-", "m", "heart"), "test file"),
                   (model, ("bsvm-predict", "heart", "-", "m"), "model file"),
                   (heart, ("bsvm-train", "-q", "-s", "dcd", "-", "heart"), "training file")]
    for source, (tool, *args), role in stdin_cases:
        with open(source, "rb") as stdin:
            line = one_line(run(tool, *args, cwd=tmp_path, stdin=stdin), 2)
        assert role in line and "standard input" in line, line
        assert heart.read_bytes() == original and model.read_bytes() == trained


def test_standard_output_redirected_into_an_input_is_refused(tmp_path, heart, model):
    # `- >> heart` and `1<> heart` write the input itself, as the name /dev/stdout would:
    # refused before any work (exit 2), the input unchanged; standard input the same file too
    original, trained = heart.read_bytes(), model.read_bytes()
    cases = [
        (("bsvm-train", "-q", "-s", "dcd", "heart", "-"), None, "training file (heart)",
         "model file"),
        (("bsvm-predict", "heart", "m", "-"), None, "test file (heart)", "predictions"),
        (("bsvm-scale", "heart"), None, "data file (heart)", "scaled data"),
        (("bsvm-scale", "-"), heart, "data file (standard input)", "scaled data"),
        (("bsvm-grid", "-s", "dcd", "-log2c", "0,0,1", "-log2g", "null", "-out", "-", "heart"),
         None, "data file (heart)", "-out file"),
    ]
    for (tool, *args), stdin_file, role, what in cases:
        for mode in ("ab", "r+b"):                    # >> heart, 1<> heart
            stdin = open(stdin_file, "rb") if stdin_file else subprocess.DEVNULL
            with open(heart, mode) as out:
                result = run(tool, *args, cwd=tmp_path, stdout=out, stdin=stdin)
            if stdin_file:
                stdin.close()
            assert one_line(result, 2) == (f"Usage error: standard output is the {role}: "
                                           f"refusing to write the {what} into it")
            assert heart.read_bytes() == original and model.read_bytes() == trained
    # standard output on another file still works
    with open(tmp_path / "out", "wb") as out:
        assert run("bsvm-predict", "heart", "m", "-", cwd=tmp_path, stdout=out).returncode == 0
    assert len((tmp_path / "out").read_text().splitlines()) == 270


def test_an_output_name_ending_in_a_slash_replaces_no_file(tmp_path, heart, model):
    # open("x/", "w") fails; the atomic rename went to realpath("x/") == "x"
    (tmp_path / "x").write_text("keep\n")
    for tool, *args in (("bsvm-predict", "heart", "m", "x/"), ("bsvm-train", "-q", "-s", "dcd",
                                                               "heart", "x/"),
                        ("bsvm-predict", "heart", "m", "new/"),
                        ("bsvm-predict", "heart", "m", "x/."),
                        ("bsvm-train", "-q", "-s", "dcd", "heart", "x/new/..")):
        line = one_line(run(tool, *args, cwd=tmp_path), 1)
        assert "names a directory" in line or "it is a directory" in line, line
    assert (tmp_path / "x").read_text() == "keep\n" and not (tmp_path / "new").exists()


def test_a_write_protected_output_file_is_not_replaced(tmp_path, heart, model):
    # open(path, "w") refuses a file without write permission; the rename of the atomic write
    # would not. As root the permission does not apply (to open() either), so the command runs
    # without the capability that overrides it (setpriv), as a user's would.
    prefix = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: file permissions do not apply")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner",
                  "--inh-caps=-all"]
    protected = tmp_path / "protected"
    protected.write_text("keep\n")
    protected.chmod(0o444)
    for tool, *args in (("bsvm-predict", "heart", "m", "protected"),
                        ("bsvm-train", "-q", "-s", "dcd", "heart", "protected"),
                        ("bsvm-scale", "-s", "protected", "-")):
        # standard input a pipe that never ends: refused before any work, or this would hang
        process = subprocess.Popen([*prefix, str(BIN / tool), *args], cwd=tmp_path,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        try:
            out, err = process.communicate(timeout=60)
        finally:
            process.kill()
        line = one_line(subprocess.CompletedProcess(args, process.returncode, out, err), 1)
        assert "protected: cannot write: permission denied" in line, line
    assert protected.read_text() == "keep\n"


def test_a_second_signal_while_stopping_gives_no_traceback(tmp_path, heart):
    # Ctrl-C then, a moment later, SIGTERM (or a second Ctrl-C): the second one arrived while
    # the first was being handled and broke the clean-up with a traceback
    big = tmp_path / "big"
    big.write_bytes(heart.read_bytes() * 200)
    for trial, (second, gap) in enumerate([(signal.SIGTERM, 0.0005), (signal.SIGINT, 0.0005),
                                           (signal.SIGTERM, 0.002), (signal.SIGINT, 0.002),
                                           (signal.SIGTERM, 0.005), (signal.SIGTERM, 0.0002)]):
        process = subprocess.Popen([str(BIN / "bsvm-train"), "-q", "--epochs", "1000", "big",
                                    f"m{trial}"], cwd=tmp_path, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True,
                                   preexec_fn=_default_sigint)
        time.sleep(1.5)
        process.send_signal(signal.SIGINT)
        time.sleep(gap)
        process.send_signal(second)
        _, err = process.communicate(timeout=60)
        assert process.returncode in (130, 143), err
        assert err in ("interrupted\n", "terminated\n"), err
        assert not (tmp_path / f"m{trial}").exists()
    assert not list(tmp_path.glob(".*tmp"))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_disk_is_one_line_naming_the_file(tmp_path, heart, model):
    for tool, *args in [("bsvm-train", "-q", "-s", "dcd", "heart", "/dev/full"),
                        ("bsvm-predict", "heart", "m", "/dev/full"),
                        ("bsvm-scale", "-s", "/dev/full", "heart"),
                        ("bsvm-grid", "-q", "-s", "dcd", "-log2c", "0,0,1", "-out", "/dev/full",
                         "heart")]:
        with open(os.devnull, "w") as devnull:
            line = one_line(run(tool, *args, cwd=tmp_path, stdout=devnull), 1)
        assert line.startswith("/dev/full: cannot write") and \
            line.endswith(": No space left on device"), (tool, line)
    # standard output on a full disk
    for tool, *args in [("bsvm-scale", "heart"), ("bsvm-train", "-q", "-s", "dcd", "heart", "-"),
                        ("bsvm-train", "-q", "-s", "dcd", "-v", "3", "heart")]:
        with open("/dev/full", "w") as full:
            line = one_line(subprocess.run([str(BIN / tool), *args], cwd=tmp_path,
                                           stdout=full, stderr=subprocess.PIPE, text=True), 1)
        assert line == "<stdout>: cannot write: No space left on device", (tool, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heart", "m"]   # no temporary file


def test_a_file_size_limit_is_one_line_and_no_file(tmp_path, heart):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
    result = subprocess.run([str(BIN / "bsvm-train"), "-q", "--budget", "20", "heart", "big"],
                            cwd=tmp_path, capture_output=True, text=True, preexec_fn=limit)
    assert one_line(result, 1) == "big: cannot write: File too large"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heart"]


def test_a_closed_standard_output_is_a_write_error(tmp_path, heart):
    def closed(*args):
        return subprocess.run([str(BIN / args[0]), *args[1:]], cwd=tmp_path, stdout=None,
                              stderr=subprocess.PIPE, text=True, pass_fds=(),
                              preexec_fn=lambda: os.close(1))
    for args in [("bsvm-train", "-q", "-s", "dcd", "-v", "3", "heart"),
                 ("bsvm-scale", "heart"),
                 ("bsvm-train", "-q", "-s", "dcd", "heart", "-"),
                 ("bsvm-train", "-q", "-s", "dcd", "heart", "/dev/stdout")]:
        line = one_line(closed(*args), 1)
        assert line == "<stdout>: cannot write: standard output is closed", (args, line)
    # nothing for stdout: nothing fails
    assert closed("bsvm-train", "-q", "-s", "dcd", "heart", "m").returncode == 0
    assert (tmp_path / "m").exists()


def test_a_closed_standard_input_is_a_read_error(tmp_path, heart, model):
    def closed(*args):
        return subprocess.run([str(BIN / args[0]), *args[1:]], cwd=tmp_path, stdin=None,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: os.close(0))
    for args in [("bsvm-train", "-q", "-s", "dcd", "-", "m2"),
                 ("bsvm-predict", "-", "m", "out"),
                 ("bsvm-predict", "heart", "-", "out"),
                 ("bsvm-scale", "-"),
                 ("bsvm-scale", "-r", "-", "heart"),
                 ("bsvm-grid", "-q", "-log2c", "0,0,1", "-log2g", "null", "-out", "null", "-")]:
        line = one_line(closed(*args), 1)
        assert line == "<stdin>: cannot read: standard input is closed", (args, line)
    assert not (tmp_path / "m2").exists() and not (tmp_path / "out").exists()


def test_a_closed_standard_error_loses_only_the_messages(tmp_path, heart):
    # No progress bar, summary or warning may fail the command (stderr was None), and no file
    # opened later may take descriptor 2: the model is the same as with stderr open
    def closed(*args):
        return subprocess.run([str(BIN / args[0]), *args[1:]], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=None, text=True,
                              preexec_fn=lambda: os.close(2))
    assert closed("bsvm-train", "-s", "dcd", "-w7", "2", "heart", "closed.model").returncode == 0
    assert run("bsvm-train", "-q", "-s", "dcd", "-w7", "2", "heart", "open.model",
               cwd=tmp_path).returncode == 0
    assert (tmp_path / "closed.model").read_bytes() == (tmp_path / "open.model").read_bytes()
    predicted = closed("bsvm-predict", "heart", "open.model", "out")
    assert predicted.returncode == 0 and predicted.stdout.startswith("Accuracy = ")
    failed = closed("bsvm-predict", "heart", "missing.model", "out2")
    assert failed.returncode == 1 and not (tmp_path / "out2").exists()


def test_dev_stdout_as_an_output_is_standard_output(tmp_path, heart, model):
    # /dev/stdout (svm-predict users write it) after `> file` or `| command`: the output goes to
    # standard output as with -, not renamed over the redirection's file (which lost the rest
    # of stdout) nor refused for a pipe's /proc name
    assert run("bsvm-predict", heart, model, "named", cwd=tmp_path).returncode == 0
    expected = (tmp_path / "named").read_text()
    piped = run("bsvm-predict", heart, model, "/dev/stdout", cwd=tmp_path)
    assert piped.returncode == 0 and piped.stdout == expected
    assert piped.stderr.startswith("Accuracy = ")          # as with -, off the predictions
    with open(tmp_path / "redirected", "w") as out:
        result = run("bsvm-predict", heart, model, "/dev/stdout", cwd=tmp_path, stdout=out)
    assert result.returncode == 0 and (tmp_path / "redirected").read_text() == expected
    assert result.stderr.startswith("Accuracy = ")     # the rename lost it before
    # appending to the test file itself (`>> heart`) is refused as naming it is
    with open(heart, "a") as out:
        result = run("bsvm-predict", heart, model, "/dev/stdout", cwd=tmp_path, stdout=out)
    assert one_line(result, 2).endswith("refusing to overwrite it with the predictions")
    trained = run("bsvm-train", "-q", "-s", "dcd", heart, "/dev/stdout", cwd=tmp_path)
    assert trained.returncode == 0 and trained.stdout == model.read_text()
    scaled = run("bsvm-scale", "-s", "/dev/stdout", heart, cwd=tmp_path)
    assert one_line(scaled, 2).startswith("Usage error: -s /dev/stdout: the scaled data go to "
                                          "standard output")


def test_grid_outputs_to_dev_stdout_keep_every_line(tmp_path, heart):
    # bsvm-grid -out /dev/stdout > file: opened by its name, the result file wrote over the
    # lines printed before it ('best c=1log2c=1 ...'), and -png's rename replaced the file
    grid = ("bsvm-grid", "-q", "-s", "dcd", "-log2c", "0,1,1", "-v", "2", "-j", "1")   # in order
    named = run(*grid, "-out", "named.out", heart, cwd=tmp_path)
    assert named.returncode == 0
    expected_results = (tmp_path / "named.out").read_text().splitlines()
    assert len(expected_results) == 2
    with open(tmp_path / "redirected", "w") as out:
        result = run(*grid, "-out", "/dev/stdout", heart, cwd=tmp_path, stdout=out)
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "redirected").read_text().splitlines()
    # every line the grid prints, and the result lines among them, each whole
    assert [line for line in lines if line.startswith("log2c=")] == expected_results
    assert [line for line in lines if not line.startswith("log2c=")] == \
        named.stdout.splitlines()
    # a kernel solver, for a plot over C and gamma
    plot = ("bsvm-grid", "-q", "-log2c", "0,1,1", "-log2g", "-2,-1,1", "-v", "2", "-out", "null",
            "-png", "/dev/stdout")
    with open(tmp_path / "plotted", "w") as out:
        result = run(*plot, heart, cwd=tmp_path, stdout=out)
    if "needs matplotlib" in result.stderr:
        pytest.skip("matplotlib is not installed")
    assert result.returncode == 0, result.stderr
    written = (tmp_path / "plotted").read_bytes()
    text, png = written.split(b"\x89PNG\r\n\x1a\n", 1)
    assert text.decode().startswith("[local] ") and png.endswith(b"IEND\xaeB`\x82")


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)     # as a terminal gives it (test_signals.py)


@pytest.mark.parametrize("delay", [0.1, 0.15])
def test_ctrl_c_while_starting_up_is_one_line(tmp_path, heart, delay):
    # at these delays the tool is importing numpy and scipy (this whole command takes about
    # 0.2 s: at 0.2 s it had finished in 14 of 15 trials and the test skipped)
    process = subprocess.Popen([str(BIN / "bsvm-train"), "-q", "-s", "dcd", "heart", "m"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=_default_sigint)
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    if process.returncode == 0:
        pytest.skip("the command had finished before the signal")
    assert process.returncode == 130, err
    assert err == "interrupted\n"
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("command", [("bsvm-predict", "heart", "m", "OUT"),
                                     ("bsvm-train", "-q", "-s", "dcd", "heart", "OUT"),
                                     ("bsvm-scale", "-s", "OUT", "heart")])
def test_an_output_that_is_a_pipe_named_by_dev_fd_is_written(tmp_path, heart, model, command):
    """A shell's >(command) hands the tool a pipe as /dev/fd/N, a link to "pipe:[inode]" that
    names no file: it is written in place, as svm-predict, svm-train and svm-scale write it,
    and what comes out of the pipe is what a file output gets."""
    expected = tmp_path / "expected"
    file_run = run(*[str(expected) if a == "OUT" else a for a in command], cwd=tmp_path)
    assert file_run.returncode == 0, file_run.stderr
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [str(BIN / command[0]), *[f"/dev/fd/{write_end}" if a == "OUT" else a
                                      for a in command[1:]]],
            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=(write_end,))
        os.close(write_end)
        write_end = None
        with os.fdopen(read_end, "rb") as pipe:
            read_end = None
            received = pipe.read()
        assert process.wait(timeout=120) == 0, process.stderr.read()
        process.stderr.close()
    finally:
        for fd in (read_end, write_end):
            if fd is not None:
                os.close(fd)
    assert received == expected.read_bytes() and received


def test_scale_reads_a_named_pipe_twice(tmp_path, heart):
    expected = run("bsvm-scale", "heart", cwd=tmp_path)
    assert expected.returncode == 0 and expected.stdout.count("\n") == 270
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    process = subprocess.Popen([str(BIN / "bsvm-scale"), "fifo"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(fifo, "wb") as writer:
        writer.write(heart.read_bytes())
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert out == expected.stdout


@pytest.mark.parametrize("args, words", [(("-r", "-", "-"), "standard input"),
                                         (("-s", "-", "heart"), "-s -")])
def test_scale_stdin_and_stdout_clashes_are_usage_errors(tmp_path, heart, args, words):
    assert words in one_line(run("bsvm-scale", *args, cwd=tmp_path, stdin=subprocess.DEVNULL), 2)


def test_stream_training_refuses_a_pipe(tmp_path):
    # --stream reads its file once per epoch: a pipe would hang on the second pass
    os.mkfifo(tmp_path / "fifo")
    line = one_line(run("bsvm-train", "--stream", "fifo", "m", cwd=tmp_path, timeout=60), 2)
    assert "pipe" in line


def test_unwritable_model_paths_fail_before_training(tmp_path, heart, model):
    kept = model.read_bytes()
    os.symlink("/nonexistent-dir/x", tmp_path / "dangling")
    for name, message in [("", "cannot write to an empty file name"),
                          ("m/", "m/: cannot write: a name ending in '/' names a directory"),
                          ("dangling", "dangling: cannot write: no such directory "
                                       "'/nonexistent-dir' (where the link points)")]:
        # -c 1e6 -e 1e-9 would take many seconds: the check comes first
        result = run("bsvm-train", "-q", "-s", "dcd", "-c", "1e6", "-e", "1e-9", "heart", name,
                     cwd=tmp_path, timeout=20)
        assert one_line(result, 1) == message
    assert model.read_bytes() == kept
    # a link to a missing file in an existing directory is written through, as open() does
    os.symlink("target", tmp_path / "link")
    assert run("bsvm-train", "-q", "-s", "dcd", "heart", "link", cwd=tmp_path).returncode == 0
    assert (tmp_path / "target").read_bytes() == kept


def test_devices_are_not_taken_for_the_same_file(tmp_path, heart, model):
    # /dev/null read and written is not a file that writing would destroy (a terminal as
    # /dev/stdin and /dev/stdout is the same case): no refusal; the empty test file is the error
    line = one_line(run("bsvm-predict", "/dev/null", "m", "/dev/null", cwd=tmp_path), 1)
    assert "refusing" not in line and "no data" in line


def test_importing_the_commands_leaves_ctrl_c_alone():
    # the start-up handler belongs to the bsvm-* commands, not to programs importing them
    code = ("import signal, budgetsvm.cli.train, budgetsvm.cli.predict; "
            "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            preexec_fn=_default_sigint, timeout=60)
    assert result.stdout == "True\n", result.stderr


def test_ctrl_c_with_a_broken_stderr_is_still_130(tmp_path, heart):
    # the report of the interruption could not be written (stderr a pipe whose reader has
    # gone): the exit status of an interrupted run stays 130, not the write error's 1
    big = tmp_path / "big"
    big.write_bytes(heart.read_bytes() * 100)
    process = subprocess.Popen([str(BIN / "bsvm-train"), "-q", "--epochs", "1000", "big", "m"],
                               cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               preexec_fn=_default_sigint)
    process.stderr.close()
    time.sleep(1.5)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130
    assert not (tmp_path / "m").exists()


def test_a_user_who_cannot_write_dev_may_write_to_dev_null(tmp_path):
    # `svm-predict test model /dev/null` keeps only the accuracy line; the check for a writable
    # directory refused /dev/null (and any device or FIFO) to every user but root
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the commands as the user nobody")
    shared = Path(__import__("tempfile").mkdtemp(dir="/tmp"))
    try:
        shared.chmod(0o755)
        model = shared / "m"
        run("bsvm-train", "-q", "-s", "dcd", HEART, model, cwd=shared)
        model.chmod(0o644)
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        probe = subprocess.run([*as_nobody, sys.executable, "-c", "import budgetsvm"],
                               capture_output=True)
        if probe.returncode != 0:
            pytest.skip("the user nobody cannot run this checkout's Python")
        for argv in ([BIN / "bsvm-predict", HEART, model, "/dev/null"],
                     [BIN / "bsvm-train", "-q", "-s", "dcd", HEART, "/dev/null"]):
            result = subprocess.run([*as_nobody, *map(str, argv)], capture_output=True,
                                    text=True, timeout=120)
            assert result.returncode == 0, result.stderr
        assert result.stderr == ""
    finally:
        shutil.rmtree(shared)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("interruption", [KeyboardInterrupt, SystemExit])
def test_an_interruption_while_the_output_opens_is_not_a_write_error(tmp_path, monkeypatch,
                                                                     binary, interruption):
    # Ctrl-C or SIGTERM (the commands raise an exception of their own for it) can arrive
    # inside io.open, which then closes the file it made before passing the exception on.
    # The interruption must come out, not an error about the descriptor (once "cannot write:
    # Bad file descriptor", exit 1), and neither the file replaced nor a temporary file left.
    import builtins
    import io
    from budgetsvm.fileio import atomic_output
    target = tmp_path / "out"
    target.write_text("precious\n")
    real_open = io.open
    calls = []

    def interrupted_open(*args, **kwargs):
        stream = real_open(*args, **kwargs)
        calls.append(args[0])
        stream.close()                      # what io.open does with its object on an error
        raise interruption()
    monkeypatch.setattr(io, "open", interrupted_open)
    monkeypatch.setattr(builtins, "open", interrupted_open)
    with pytest.raises(interruption):
        with atomic_output(str(target), binary=binary) as stream:
            stream.write(b"new\n" if binary else "new\n")
    monkeypatch.undo()
    assert calls, "the output was not opened through io.open"
    assert target.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
