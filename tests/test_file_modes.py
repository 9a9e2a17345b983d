"""Output files get the permissions a plain open() gives (issue 18, item 3): a new file is 0666
less the umask, as svm-train's and LIBLINEAR's, and a replaced file keeps its mode, while the
writes stay atomic. Checked through the commands with real umask values."""
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
HEART = Path(__file__).resolve().parent.parent / "data" / "heart_scale.xz"


def run(umask, tool, *args, cwd):
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, capture_output=True,
                          timeout=300, preexec_fn=lambda: os.umask(umask))


def _model(folder):
    path = folder / "given.model"
    if not path.exists():
        result = run(0o022, "bsvm-train", "-q", "-s", "dcd", HEART, path, cwd=folder)
        assert result.returncode == 0, result.stderr.decode()
    return path


# Every writer of a file a user names: (command arguments with OUT for the file, True when the
# file is written atomically, i.e. through a temporary file renamed over it).
WRITERS = {
    "model": (lambda d: ["bsvm-train", "-q", "-s", "dcd", HEART, "OUT"], True),
    "model (liblinear format)": (
        lambda d: ["bsvm-train", "-q", "-s", "dcd", "--format", "liblinear", HEART, "OUT"], True),
    "predictions": (lambda d: ["bsvm-predict", "-q", HEART, _model(d), "OUT"], True),
    "bsvm-scale -s": (lambda d: ["bsvm-scale", "-s", "OUT", HEART], True),
    "monitor csv": (lambda d: ["bsvm-train", "-q", "--budget", "10", "--epochs", "1",
                               "--monitor", "OUT", HEART, d / "m"], True),
    # The .out file is appended to point by point (resumable), so it is not renamed into place.
    "grid .out": (lambda d: ["bsvm-grid", "-q", "-s", "dcd", "-log2c", "-1,0,1", "-v", "2",
                             "-j", "1", "-out", "OUT", HEART], False),
    "grid png": (lambda d: ["bsvm-grid", "-q", "--budget", "10", "--epochs", "1", "-log2c",
                            "-1,0,1", "-log2g", "-1,0,1", "-v", "2", "-j", "1", "-out", "null",
                            "-png", "OUT", HEART], True),
}


def write(name, folder, out, umask):
    command, _ = WRITERS[name]
    args = [out if a == "OUT" else a for a in command(folder)]
    result = run(umask, *args, cwd=folder)
    assert result.returncode == 0, result.stderr.decode()
    assert out.stat().st_size > 0


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002], ids=["022", "077", "002"])
@pytest.mark.parametrize("name", list(WRITERS))
def test_new_files_get_0666_less_the_umask(tmp_path, name, umask):
    out = tmp_path / "out"
    write(name, tmp_path, out, umask)
    assert mode(out) == 0o666 & ~umask, oct(mode(out))
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("umask", [0o022, 0o077], ids=["022", "077"])
@pytest.mark.parametrize("name", list(WRITERS))
def test_replaced_files_keep_their_mode_and_are_replaced_atomically(tmp_path, name, umask):
    out = tmp_path / "out"
    out.write_bytes(b"old content\n")
    out.chmod(0o640)
    inode = out.stat().st_ino
    write(name, tmp_path, out, umask)
    assert mode(out) == 0o640, oct(mode(out))
    assert out.read_bytes() != b"old content\n"
    # Written atomically: the content went to a new file (created while the old one still
    # existed, so its inode differs) renamed over the old one; a reader never sees a partial
    # file. The grid's .out file is rewritten in place (same inode).
    assert (out.stat().st_ino != inode) == WRITERS[name][1]
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_failed_write_leaves_the_old_file_and_its_mode(tmp_path):
    out = tmp_path / "out"
    out.write_bytes(b"old predictions\n")
    out.chmod(0o640)
    bad = tmp_path / "bad"
    bad.write_text("1 1:1\n" * 100 + "1 1:oops\n")
    result = run(0o022, "bsvm-predict", bad, _model(tmp_path), out, cwd=tmp_path)
    assert result.returncode == 1
    assert out.read_bytes() == b"old predictions\n" and mode(out) == 0o640
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_symbolic_link_is_written_through(tmp_path):
    real = tmp_path / "real"
    real.write_bytes(b"old\n")
    real.chmod(0o640)
    link = tmp_path / "link"
    link.symlink_to(real)
    result = run(0o077, "bsvm-predict", "-q", HEART, _model(tmp_path), link, cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert len(real.read_text().splitlines()) == 270 and mode(real) == 0o640


def test_a_fifo_is_written_in_place_not_replaced(tmp_path):
    # As `bsvm-predict test model /dev/null` must not replace /dev/null (renaming over a device
    # node would), a named pipe stays a pipe and its reader gets the predictions.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run(0o022, "bsvm-predict", "-q", HEART, _model(tmp_path), fifo, cwd=tmp_path)
    reader.join(timeout=60)
    if reader.is_alive() and stat.S_ISFIFO(fifo.lstat().st_mode):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))    # release the waiting reader
    assert result.returncode == 0, result.stderr.decode()
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert len(received[0].decode().splitlines()) == 270


def test_a_directory_as_output_is_a_one_line_error(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    result = run(0o022, "bsvm-train", "-q", "-s", "dcd", HEART, folder, cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 1 and "Traceback" not in err
    assert err.strip() == f"{folder}: cannot write: it is a directory"
    assert folder.is_dir() and not list(folder.iterdir()) and not list(tmp_path.glob(".*.tmp"))
