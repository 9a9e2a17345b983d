"""Opening inputs (plain, .gz, .bz2, .xz or ``-`` for stdin) and writing outputs atomically.

Compression is recognised by the stream's magic bytes, not the file name, so a renamed file
still reads. Outputs go to a temporary file in the target's directory that is renamed over the
target only when everything was written: an interrupted or failed run leaves no partial file.
The result has the permissions a plain ``open(path, "w")`` gives: a new file 0666 less the
umask (as svm-train's and LIBLINEAR's files), a replaced file keeps its mode, a symbolic link is
written through, and a device or pipe (``/dev/null``, a FIFO) is written in place.
"""
import bz2
import contextlib
import errno
import gzip
import io
import lzma
import os
import secrets
import stat
import sys
import zlib

from budgetsvm.errors import BsvmError, DataFormatError, ParameterError, printable_name

class XzStreams(io.RawIOBase):
    """The content of an .xz file as ``xz -d`` gives it: its streams one after the other, the
    stream padding after each (zero bytes, a multiple of four) skipped. lzma.LZMAFile stops at
    padding ("Compressed file ended before the end-of-stream marker was reached") and takes
    anything after the last stream for the end of the file; here padding is read past, and
    other bytes there are an error, as in xz. ``source``: a binary file object, which it reads
    and leaves open."""

    READ_BYTES = 1 << 20

    def __init__(self, source):
        super().__init__()
        self._file = source
        self._stream = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        self._input = b""          # compressed bytes not given to the decompressor yet
        self._done = False

    def readable(self):
        return True

    def readinto(self, buffer):
        if not len(buffer):
            return 0
        data = self._decompress(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def _decompress(self, size):
        while not self._done:
            stream = self._stream
            if stream.eof:
                rest = self._after_padding(stream.unused_data + self._input)
                if self._done:
                    break
                self._stream, self._input = lzma.LZMADecompressor(format=lzma.FORMAT_XZ), rest
                continue
            if stream.needs_input:
                if not self._input:
                    self._input = self._file.read(self.READ_BYTES)
                    if not self._input:
                        raise EOFError("Compressed file ended before the end-of-stream marker "
                                       "was reached")
                data, self._input = stream.decompress(self._input, size), b""
            else:
                data = stream.decompress(b"", size)
            if data:
                return data
        return b""

    def _after_padding(self, rest):
        # the bytes after a stream's zero padding (the next stream), or b"" and done at the end
        zeros = 0
        while True:
            stripped = rest.lstrip(b"\0")
            zeros += len(rest) - len(stripped)
            if stripped:
                break
            rest = self._file.read(self.READ_BYTES)
            if not rest:
                self._done = True
                break
        if zeros % 4:
            raise lzma.LZMAError("the stream padding is not a multiple of four bytes")
        return stripped


# magic bytes → the decompressing reader of a binary file object (which it leaves open)
_MAGIC = (
    (b"\x1f\x8b", lambda source: gzip.GzipFile(fileobj=source)),
    (b"BZh", bz2.BZ2File),
    (b"\xfd7zXZ\x00", XzStreams),
)
DECOMPRESSION_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)
# What writing a file can fail with once it is open: a full disk or quota, the size limit of
# `ulimit -f` (EFBIG), a failing device, a closed descriptor.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO, errno.EBADF,
                          errno.EROFS, errno.EPIPE})


def write_failure(name, exc):
    """BsvmError for an OSError that writing ``name`` raised, or None when it is not a write
    failure (WRITE_ERRNOS)."""
    if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS:
        return BsvmError(f"{name}: cannot write: {exc.strerror or exc}")
    return None


def display_name(path):
    return printable_name(None if path is None else os.fspath(path))


def stdin_buffer(error=DataFormatError):
    """sys.stdin's binary buffer; ``error("-", None, message)`` when the process was started
    with standard input closed (`<&-`: sys.stdin is None)."""
    if sys.stdin is None:
        raise error("-", None, "cannot read: standard input is closed")
    return sys.stdin.buffer


def open_input(path, error=DataFormatError):
    """Binary stream of the (decompressed) content of ``path``; ``-`` is standard input.

    Problems opening the file raise ``error(path, None, message)``.
    """
    if path == "-":
        raw = stdin_buffer(error)
    else:
        try:
            if os.path.isdir(path):
                raise error(path, None, "is a directory, not a file")
            raw = open(path, "rb")
        except FileNotFoundError:
            raise error(path, None, "no such file") from None
        except PermissionError:
            raise error(path, None, "permission denied") from None
        except OSError as exc:
            raise error(path, None, f"cannot open: {exc.strerror or exc}") from None
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    try:
        head = buffered.peek(6)[:6]
    except OSError as exc:
        # a device that opens but cannot be read (/dev/fuse, /proc/self/mem), a failing disk:
        # the input's error, not a traceback or standard output's
        if path != "-":
            buffered.close()
        raise error(path, None, f"cannot read: {exc.strerror or exc}") from None
    for magic, opener in _MAGIC:
        if head.startswith(magic):
            # The reader reads on from this buffer, which holds the bytes peeked (a pipe, a
            # FIFO or bash's <(command), cannot be opened again to read them twice); a file
            # closes with the reader, standard input stays open.
            return io.BufferedReader(_Decompressed(opener(buffered),
                                                   None if path == "-" else buffered),
                                     DECOMPRESSED_BUFFER_BYTES)
    return buffered


DECOMPRESSED_BUFFER_BYTES = 1 << 20


class _Decompressed(io.RawIOBase):
    """A decompressing reader over a file object it leaves open, closing that file object (when
    given one) with itself."""

    def __init__(self, reader, owned=None):
        super().__init__()
        self._reader, self._owned = reader, owned

    def readable(self):
        return True

    def readinto(self, buffer):
        return self._reader.readinto(buffer)

    def close(self):
        if not self.closed:
            try:
                self._reader.close()
            finally:
                if self._owned is not None:
                    self._owned.close()
        super().close()


# The standard descriptors (0, 1, 2) the process was started without (hold_closed_standard_streams)
CLOSED_AT_START = set()


def hold_closed_standard_streams():
    """For the bsvm-* commands, at start-up. Started with standard input, output or error closed
    (`<&-`, `>&-`, `2>&-`), Python leaves sys.stdin/stdout/stderr None. Their descriptors go to
    /dev/null (inherited by child processes, as the grid's workers), so that no file opened
    later takes descriptor 0, 1 or 2 (a model file on descriptor 2 would receive whatever is
    written to "stderr"). sys.stdin stays None (reading "-" then says it is closed), sys.stdout
    too (common.run makes its writes fail, and /dev/stdout is taken for -), and messages to a
    closed stderr go nowhere instead of failing the command."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is None:
            try:
                os.fstat(fd)
            except OSError:
                null = os.open(os.devnull, os.O_RDWR)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
                os.set_inheritable(fd, True)
                CLOSED_AT_START.add(fd)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")


def standard_output_alias(path):
    """``-`` when ``path`` names this process's standard output as a regular file or a pipe
    (/dev/stdout, /dev/fd/1, /proc/self/fd/1 after `> file` or `| command`), else ``path``.

    Written through its name, the atomic rename would put a new file in place of the
    redirection's (and what else goes to standard output would be lost), and a pipe's
    /proc name cannot be opened beside; svm-predict users write such paths. Terminals and
    other devices are written in place through their name as before."""
    if path in (None, "-"):
        return path
    try:
        named, ours = os.stat(path), os.fstat(1)
    except (OSError, ValueError):
        return path
    # a closed standard output is held on /dev/null: /dev/stdout then means it too, and the
    # write fails as -'s does ("standard output is closed") instead of vanishing
    if (named.st_dev, named.st_ino) == (ours.st_dev, ours.st_ino) and \
            (stat.S_ISREG(ours.st_mode) or stat.S_ISFIFO(ours.st_mode)
             or stat.S_ISSOCK(ours.st_mode) or 1 in CLOSED_AT_START):
        return "-"
    return path


@contextlib.contextmanager
def atomic_output(path, binary=False):
    """Yield a writable file for ``path``; ``-`` writes to standard output.

    For a regular file the content goes to a hidden temporary file in the same directory,
    renamed over ``path`` on success and removed on any failure, including KeyboardInterrupt.
    """
    if path == "-":
        if binary:
            sys.stdout.flush()            # text written before goes first
        stream = sys.stdout.buffer if binary else sys.stdout
        yield stream
        stream.flush()
        return
    try:
        with _atomic_file(path, binary) as stream:
            yield stream
    except OSError as exc:
        failure = write_failure(path, exc)
        if failure is None:
            raise
        raise failure from None


def _names_a_directory(path):
    """A name that open(path, "w") refuses whatever exists there: one ending in '/', '.' or
    '..' (realpath drops them: "out/" or "out/." would name a file "out")."""
    name = os.fspath(path)
    return name.endswith(("/", os.sep)) or os.path.basename(name) in (".", "..")


@contextlib.contextmanager
def _atomic_file(path, binary):
    if _names_a_directory(path):
        raise BsvmError(f"{path}: cannot write: it names a directory")
    try:
        # what the path stands for, through symbolic links as open() goes; stat of the path
        # itself, not of its realpath: a pipe passed as /dev/fd/N (a shell's >(command)) is a
        # link to "pipe:[inode]", which names no file
        existing = os.stat(path)
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise BsvmError(f"{path}: cannot write: {exc.strerror or exc}") from None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise BsvmError(f"{path}: cannot write: it is a directory")
    if existing is not None and not os.access(path, os.W_OK):
        # the rename would replace a write-protected file, which open(path, "w") refuses
        raise BsvmError(f"{path}: cannot write: permission denied")
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        # A device or a pipe: renaming over it would replace the device node itself. Opened
        # without O_CREAT: a name that has gone meanwhile is an error, not a new file.
        try:
            stream = _open_output(path, binary, "w",
                                  lambda name, _: os.open(name, os.O_WRONLY | os.O_TRUNC
                                                          | os.O_CLOEXEC))
        except OSError as exc:
            raise BsvmError(f"{path}: cannot write: {exc.strerror or exc}") from None
        with stream:
            yield stream
        return
    target = os.path.realpath(path)     # the file a symbolic link names: the rename replaces it
    try:
        stream, tmp = _create_beside(target, binary)
    except OSError as exc:
        raise BsvmError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with stream:
            if existing is not None:
                os.fchmod(stream.fileno(), stat.S_IMODE(existing.st_mode) & 0o777)
            yield stream
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise BsvmError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _create_beside(target, binary):
    """(stream, name) of a new hidden file in target's directory, open for writing. Created
    as open(target, "w") would create target (mode 0666 less the umask, and a default ACL of
    the directory); tempfile.mkstemp would create it 0600.

    The file is opened by its name (mode "x": O_CREAT | O_EXCL), so that the file object owns
    its descriptor from the start. Handing os.fdopen a descriptor of ours instead, Ctrl-C or
    SIGTERM inside os.fdopen (its encoding lookup can import a module) had the descriptor
    closed by io and then closed again by the clean-up: EBADF, reported as "cannot write:
    Bad file descriptor" with exit status 1, in place of the interruption."""
    directory, base = os.path.split(target)
    for _ in range(100):
        tmp = os.path.join(directory, f".{base}.{secrets.token_hex(4)}.tmp")
        try:
            return _open_output(tmp, binary, "x"), tmp
        except FileExistsError:
            continue
        except BaseException:
            # interrupted (or failed) after the file may have been created: the name, new
            # and random, is then ours
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    raise FileExistsError(f"no free temporary name beside {target}")


def _open_output(name, binary, mode, opener=None):
    """A file object for writing ``name`` (mode "w" or "x"): bytes, or ASCII text with LF line
    ends."""
    if binary:
        return open(name, mode + "b", opener=opener)
    return open(name, mode, encoding="ascii", newline="\n", opener=opener)


def is_regular_file(path):
    """Whether ``path`` names a regular file, which another process can open and read again
    (not stdin, a pipe, a FIFO or a device)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def is_pipe(path):
    """Whether ``path`` names a pipe (a FIFO, or bash's <(command) as /dev/fd/N): it can be
    read only once."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False           # a missing file: reading it reports the error


def check_not_an_input(output, inputs):
    """Raise ParameterError (a usage error) when the output (role, path) names the same file as
    one of the inputs (role, path), through links and other names: writing it would destroy
    that input before, or while, it is read. An input ``-`` is the file standard input reads
    (``- < file``), an output ``-`` the file standard output writes (``>> file``, ``1<> file``);
    paths that do not exist pass."""
    out_role, out_path = output
    if out_path is None:
        return
    for in_role, in_path in inputs:
        if in_path is None:
            continue
        try:
            # "-": the file standard input reads (`- < file`), which the output would replace
            in_stat = os.fstat(0) if in_path == "-" else os.stat(in_path)
            out_stat = os.fstat(1) if out_path == "-" else os.stat(out_path)
        except OSError:         # one does not exist (yet): two outputs may still be one path
            same = "-" not in (in_path, out_path) and \
                os.path.realpath(out_path) == os.path.realpath(in_path)
        else:
            # devices and pipes (a terminal as /dev/stdin and /dev/stdout, /dev/null) are
            # written in place and read as streams: only a regular file can be overwritten
            same = stat.S_ISREG(out_stat.st_mode) and os.path.samestat(out_stat, in_stat)
        if same:
            named = " (standard input)" if in_path == "-" else \
                "" if os.fspath(in_path) == os.fspath(out_path) else f" ({in_path})"
            if out_path == "-":
                raise ParameterError(f"standard output is the {in_role}{named}: refusing to "
                                     f"write the {out_role} into it")
            raise ParameterError(f"{out_path}: is the {in_role}{named}: refusing to overwrite "
                                 f"it with the {out_role}")


def check_output_path(path):
    """Raise BsvmError unless ``path`` can be written by atomic_output: its directory exists and
    is writable, and the path itself is not a directory. Called before any long work, so that a
    typo in an output path fails at once rather than after training (``-`` always passes)."""
    if path in (None, "-"):
        return
    if not os.fspath(path):
        raise BsvmError("cannot write to an empty file name")
    if os.fspath(path).endswith(("/", os.sep)) and not os.path.isdir(path):
        raise BsvmError(f"{path}: cannot write: a name ending in '/' names a directory")
    if os.path.isdir(path) or _names_a_directory(path):
        raise BsvmError(f"{path}: cannot write: it is a directory")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise BsvmError(f"{path}: cannot write: permission denied")
        if not os.path.isfile(path):
            # a device or a FIFO (/dev/null, /dev/stdout) is written in place (atomic_output),
            # so its directory, which users may not write (/dev), does not matter
            return
    # a symbolic link is written through, to its target: that target's directory must exist
    linked = os.path.islink(path)
    directory = os.path.dirname(os.path.realpath(path) if linked else os.path.abspath(path))
    if not os.path.isdir(directory):
        missing = directory if linked else (os.path.dirname(path) or directory)
        raise BsvmError(f"{path}: cannot write: no such directory {missing!r}"
                        + (" (where the link points)" if linked else ""))
    if not os.access(directory, os.W_OK | os.X_OK):
        raise BsvmError(f"{path}: cannot write: permission denied (directory {directory!r})")
