"""The LIBSVM-format reader: exact values, the documented tolerance policy, and every
malformed-line kind reported as FILE:LINE with the offending token."""
import bz2
import gzip
import lzma

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetsvm.errors import DataFormatError
from budgetsvm.io import iter_problem_chunks, read_problem, write_problem
from corpus import MALFORMED
from reference.data import MissingValue, read_libsvm_lines


def write(tmp_path, text, name="data.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


def test_exact_values(tmp_path):
    path = write(tmp_path, "+1 1:0.5 3:-2\n-1 2:1e-3\n2\n3 4:7\n")
    X, y = read_problem(path)
    assert X.shape == (4, 4)
    np.testing.assert_array_equal(y, [1, -1, 2, 3])
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, -2, 0], [0, 1e-3, 0, 0],
                                                [0, 0, 0, 0], [0, 0, 0, 7]])
    assert X.dtype == np.float64 and X.indices.dtype == np.int32


def test_tolerated_syntax(tmp_path):
    # CRLF, tabs, several spaces, trailing whitespace, comments, blank lines and qid.
    text = "# header comment\r\n1\t1:1  2:2 \r\n\r\n   \n-1 qid:3 2:5 # trailing\n1 3:1#x\n"
    X, y = read_problem(write(tmp_path, text))
    np.testing.assert_array_equal(y, [1, -1, 1])
    np.testing.assert_array_equal(X.toarray(), [[1, 2, 0], [0, 5, 0], [0, 0, 1]])


def test_last_line_without_newline(tmp_path):
    X, y = read_problem(write(tmp_path, "1 1:1\n-1 2:3"))
    np.testing.assert_array_equal(X.toarray(), [[1, 0], [0, 3]])


def test_zero_based_negative_index_message(tmp_path):
    with pytest.raises(DataFormatError, match=r"index must be >= 0 \(--zero-based\): '-2:1'"):
        read_problem(write(tmp_path, "1 0:1\n-1 -2:1\n"), zero_based=True)


def test_zero_based_option(tmp_path):
    X, _ = read_problem(write(tmp_path, "1 0:1 2:3\n"), zero_based=True)
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 3]])


def test_the_largest_index_is_one_less_when_zero_based(tmp_path):
    # column = index − base ≤ 2^31 − 2 either way, so that every model format, which numbers
    # features from 1 (or keeps a LIBSVM file's 0-based keys), can write and read it back
    path = write(tmp_path, "1 2147483647:1\n")
    assert read_problem(path)[0].shape[1] == 2147483647
    with pytest.raises(DataFormatError, match="index too large"):
        read_problem(path, zero_based=True)
    assert read_problem(write(tmp_path, "1 2147483646:1\n", name="ok"),
                        zero_based=True)[0].shape[1] == 2147483647


@pytest.mark.parametrize("opener, suffix", [(gzip.open, ".gz"), (bz2.open, ".bz2"),
                                            (lzma.open, ".xz"), (lzma.open, ".renamed")])
def test_compressed(tmp_path, opener, suffix):
    path = tmp_path / f"d{suffix}"
    with opener(path, "wb") as f:
        f.write(b"1 1:1\n-1 2:2\n")
    X, y = read_problem(str(path))
    np.testing.assert_array_equal(X.toarray(), [[1, 0], [0, 2]])


def test_blocks_reassemble(tmp_path):
    rng = np.random.default_rng(0)
    lines = []
    for i in range(500):
        idx = np.sort(rng.choice(50, size=rng.integers(0, 6), replace=False)) + 1
        lines.append(f"{i % 3} " + " ".join(f"{j}:{rng.normal()!r}" for j in idx))
    path = write(tmp_path, "\n".join(lines) + "\n")
    X, y = read_problem(path)
    # tiny blocks exercise the carry-over of partial lines between reads
    from budgetsvm import io
    blocks = list(io.iter_blocks(path, block_bytes=97))
    assert sum(len(b.labels) for b in blocks) == 500
    chunks = list(iter_problem_chunks(path, block_bytes=300))
    stacked = np.vstack([np.pad(c.toarray(), ((0, 0), (0, X.shape[1] - c.shape[1])))
                         for c, _ in chunks])
    np.testing.assert_array_equal(stacked, X.toarray())


def test_round_trip_through_writer(tmp_path):
    X, y = read_problem(write(tmp_path, "1 1:0.1 3:1e-300\n-7 2:123456789.123456789\n"))
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        write_problem(f, X, y)
    X2, y2 = read_problem(str(out))
    assert (X != X2).nnz == 0 and np.array_equal(y, y2)


def test_matches_scikit_learn_reader(repo_data, tmp_path):
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    plain = tmp_path / "heart"
    plain.write_bytes(lzma.open(repo_data / "heart_scale.xz").read())
    X, y = read_problem(str(repo_data / "heart_scale.xz"))
    X2, y2 = sklearn_datasets.load_svmlight_file(str(plain))
    assert (X != X2).nnz == 0 and np.array_equal(y, y2)


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_line(tmp_path, case):
    content, line, words = MALFORMED[case]
    path = write(tmp_path, content)
    with pytest.raises(DataFormatError) as err:
        read_problem(path)
    message = str(err.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert words in message
    assert "\n" not in message


def test_value_after_blanks_on_its_line(tmp_path):
    # as LIBSVM's strtok(NULL, " \t"): blanks may separate a value from its colon on one line
    X, y = read_problem(write(tmp_path, "1 1: 2\n-1 1:\t3 2:  4\r\n1 2: \t-5 # c\n"))
    np.testing.assert_array_equal(y, [1, -1, 1])
    np.testing.assert_array_equal(X.toarray(), [[2, 0], [3, 4], [0, -5]])


@pytest.mark.parametrize("ending", ["\n", "\r\n", " \n", "\t\r\n", ""])
@pytest.mark.parametrize("zero_based", [False, True])
def test_missing_value_line_number_at_every_block_size(tmp_path, ending, zero_based):
    # 'index:' ends line 12, before more lines (or at the end of the file without a newline):
    # the error names line 12 whichever block the line falls in, the last line of a block too
    # (the strtod after the colon must not read on into the lines carried to the next block)
    from budgetsvm import io
    head = "1 1:1 2:0.5\n-1 2:2\n" * 5 + "# comment\n" + "-1 1:1 3:" + ending
    content = head + ("1 1:1 2:0.5\n-1 2:2\n" * 5 if ending else "")
    path = write(tmp_path, content)
    sizes = range(8, len(content) + 16)
    # block_bytes == len(head): the first block ends with the bad line (its newline included)
    assert len(head) in sizes and head.endswith("\n" if ending else ":")
    for block_bytes in sizes:
        with pytest.raises(DataFormatError) as err:
            list(io.iter_blocks(path, zero_based, block_bytes))
        assert str(err.value) == f"{path}:12: value is missing after '3:'", block_bytes


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_missing_value_at_a_block_end_with_threads(tmp_path, monkeypatch, n_threads):
    from budgetsvm import io, threads
    head = "1 1:1 2:0.5\n-1 2:2\n" * 200 + "-1 1:1 3: \r\n"
    path = write(tmp_path, head + "1 1:1 2:0.5\n-1 2:2\n" * 200)
    for block_bytes in (len(head), len(head) // 2, len(head) // 3, 97):
        monkeypatch.setattr(io, "READ_BLOCK_BYTES", block_bytes)
        with threads.pool(n_threads), pytest.raises(DataFormatError) as err:
            read_problem(path)
        assert str(err.value) == f"{path}:401: value is missing after '3:'", block_bytes


_BLANKS = st.sampled_from([" ", "\t", "  ", " \t", "\t\v "])
_GAPS = st.sampled_from(["", "", "", " ", "\t", " \t "])      # colon to value, one line
_ENDS = st.sampled_from(["\n", "\n", "\r\n", " \n", "\t\r\n", " # note 1:\n", "#x\r\n"])
_EXTRA = st.sampled_from(["", "", "", "", "\n", "\r\n", " \t\n", "# 1:2\n"])
_NUMBERS = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-1000, 1000)
_ROWS = st.lists(st.tuples(_NUMBERS, st.dictionaries(st.integers(1, 40), _NUMBERS, max_size=6),
                           st.booleans()), min_size=1, max_size=20)


@st.composite
def _libsvm_text(draw, missing_value=False):
    """Well-formed LIBSVM text with random blanks, line ends, comments, blank lines and qid;
    with missing_value, one line ends with 'index:' (then blanks, no comment)."""
    rows = draw(_ROWS)
    bad = draw(st.integers(0, len(rows) - 1)) if missing_value else -1
    lines = [draw(_EXTRA)]
    for r, (label, features, qid) in enumerate(rows):
        parts = [draw(st.sampled_from(["", " ", "\t"])), repr(label)]
        if qid:
            parts.append(draw(_BLANKS) + "qid:%d" % draw(st.integers(0, 99)))
        parts += [draw(_BLANKS) + f"{j}:" + draw(_GAPS) + repr(features[j])
                  for j in sorted(features)]
        if r == bad:
            parts.append(draw(_BLANKS) + "%d:" % (max(features, default=0) + 1)
                         + draw(st.sampled_from(["", " ", "\t", " \r", "\r"])))
            end = draw(st.sampled_from(["\n", "\r\n"]))
        else:
            end = draw(_ENDS)
        lines.append("".join(parts) + end + draw(_EXTRA))
    text = "".join(lines)
    if draw(st.booleans()):
        text = text[:-1] if text.endswith("\n") else text    # no newline after the last line
    return text.encode()


def _read_rows(path, block_bytes):
    from budgetsvm import io
    labels, rows = [], []
    for block in io.iter_blocks(path, block_bytes=block_bytes):
        labels += block.labels.tolist()
        for i in range(len(block.labels)):
            lo, hi = block.indptr[i], block.indptr[i + 1]
            rows.append(dict(zip((block.indices[lo:hi] + 1).tolist(),
                                 block.values[lo:hi].tolist())))
    return labels, rows


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_libsvm_text(), st.integers(16, 400))
def test_well_formed_text_reads_as_the_reference_reader(tmp_path, text, block_bytes):
    path = write(tmp_path, text)
    labels, rows = read_libsvm_lines(text)
    assert _read_rows(path, block_bytes) == (labels, rows)
    assert _read_rows(path, 1 << 20) == (labels, rows)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_libsvm_text(missing_value=True), st.integers(16, 400))
def test_missing_value_is_found_on_the_reference_reader_line(tmp_path, text, block_bytes):
    path = write(tmp_path, text)
    with pytest.raises(MissingValue) as reference:
        read_libsvm_lines(text)
    for size in (block_bytes, 1 << 20):
        with pytest.raises(DataFormatError) as err:
            _read_rows(path, size)
        assert err.value.line == reference.value.line
        assert err.value.problem.startswith("value is missing after "), str(err.value)


def test_line_number_after_many_blocks(tmp_path):
    path = write(tmp_path, "1 1:1\n" * 10000 + "1 1:x\n")
    from budgetsvm import io
    with pytest.raises(DataFormatError, match=r":10001: value is not a number"):
        list(io.iter_blocks(path, block_bytes=1000))


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n"])
def test_empty_file(tmp_path, content):
    with pytest.raises(DataFormatError, match="no data"):
        read_problem(write(tmp_path, content))


def test_missing_and_directory(tmp_path):
    with pytest.raises(DataFormatError, match="no such file"):
        read_problem(str(tmp_path / "nope"))
    with pytest.raises(DataFormatError, match="is a directory"):
        read_problem(str(tmp_path))


def test_corrupt_xz(tmp_path):
    good = lzma.compress(b"1 1:1\n" * 1000)
    path = write(tmp_path, good[: len(good) // 2], name="cut.xz")
    with pytest.raises(DataFormatError, match="compressed"):
        read_problem(path)


@pytest.mark.parametrize("tail, labels, error", [
    (b"", [1], None), (b"\0" * 4, [1], None), (b"\0" * 12, [1], None),
    (b"\0" * 4 + lzma.compress(b"-1 2:2\n") + b"\0" * 8, [1, -1], None),
    (b"\0" * 3, None, "padding is not a multiple of four"), (b"junk", None, "compressed"),
    (b"\0" * 4 + b"junk" * 10, None, "compressed")])
def test_xz_streams_and_padding_as_xz_reads_them(tmp_path, tail, labels, error):
    # An .xz file is streams, each followed by zero padding in fours (the xz file format,
    # section 2.2): xz -d reads all of it, so must we (lzma.LZMAFile stopped at padding);
    # other bytes after a stream are an error, as in xz. Oracle: the xz program.
    import shutil
    import subprocess
    path = tmp_path / "d.xz"
    path.write_bytes(lzma.compress(b"1 1:1\n") + tail)
    if error:
        with pytest.raises(DataFormatError, match=error):
            read_problem(str(path))
    else:
        assert read_problem(str(path))[1].tolist() == labels
    if shutil.which("xz"):
        checked = subprocess.run(["xz", "-t", str(path)], capture_output=True)
        assert (checked.returncode == 0) == (error is None)


@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2", ".xz"])
def test_closing_an_input_closes_its_file(tmp_path, suffix):
    # the decompressing readers are handed the path, so they own the file and close it
    import gc
    import os
    import warnings

    from budgetsvm.fileio import open_input
    data = b"1 1:0.5\n-1 2:1\n"
    write = {"": lambda p, d: p.write_bytes(d), ".gz": lambda p, d: p.write_bytes(
        gzip.compress(d)), ".bz2": lambda p, d: p.write_bytes(bz2.compress(d)),
             ".xz": lambda p, d: p.write_bytes(lzma.compress(d))}[suffix]
    path = tmp_path / f"d{suffix}"
    write(path, data)
    before = len(os.listdir("/proc/self/fd"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        stream = open_input(str(path))
        assert stream.read() == data
        stream.close()
        del stream
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert len(os.listdir("/proc/self/fd")) == before


# --------------------------------------------------------------------------------------------
# Reading with worker threads (-n): the calling thread reads blocks, the pool parses them
# --------------------------------------------------------------------------------------------

def _same_problem(a, b):
    (Xa, ya), (Xb, yb) = a, b
    return (Xa.shape == Xb.shape and Xa.indptr.dtype == Xb.indptr.dtype
            and Xa.indices.dtype == Xb.indices.dtype and ya.tobytes() == yb.tobytes()
            and all(getattr(Xa, f).tobytes() == getattr(Xb, f).tobytes()
                    for f in ("indptr", "indices", "data")))


def _mixed_lines(n=600, seed=0):
    """Short rows, empty rows, comments, CRLF and one row much longer than a block."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        width = 400 if i == 250 else int(rng.integers(0, 6))
        idx = np.sort(rng.choice(500, size=width, replace=False)) + 1
        end = "\r\n" if i % 7 == 0 else "\n"
        lines.append(f"{i % 3} " + " ".join(f"{j}:{rng.normal()!r}" for j in idx) + end)
        if i % 50 == 0:
            lines.append("# a comment\n")
    return "".join(lines)


@pytest.mark.parametrize("suffix", ["", ".xz"])
@pytest.mark.parametrize("n_threads", [2, 3])
def test_threads_read_the_serial_problem(tmp_path, monkeypatch, suffix, n_threads):
    from budgetsvm import io, threads
    text = _mixed_lines().encode()
    path = write(tmp_path, lzma.compress(text) if suffix else text, name="d" + suffix)
    serial = read_problem(path)
    monkeypatch.setattr(io, "READ_BLOCK_BYTES", 97)      # hundreds of blocks
    with threads.pool(n_threads):
        assert _same_problem(read_problem(path), serial)
        assert _same_problem(read_problem(path, zero_based=True),
                             _serial_read(path, zero_based=True))


def _serial_read(path, **kwargs):
    from budgetsvm import threads
    with threads.pool(1):
        return read_problem(path, **kwargs)


def _cut_after(packed, n_bytes):
    """The shortest prefix of the xz stream ``packed`` that decompresses to ≥ n_bytes."""
    lo, hi = 0, len(packed)
    while lo < hi:
        mid = (lo + hi) // 2
        if len(lzma.LZMADecompressor().decompress(packed[:mid])) >= n_bytes:
            hi = mid
        else:
            lo = mid + 1
    return packed[:lo]


def test_threads_report_the_first_error_in_file_order(tmp_path, monkeypatch):
    # Two bad lines in different blocks, and xz streams cut before, just after (within the
    # blocks read ahead) and well after the first: with 3 threads the message is always the
    # one-thread reader's (the first error in file order, a bad line or the cut), whichever
    # block a thread finishes first.
    from budgetsvm import io, threads
    text = ("1 1:1\n" * 10000 + "1 1:x\n" + "1 1:1\n" * 5000 + "1 2:y\n").encode()
    rng = np.random.default_rng(0)
    tail = "".join(f"1 1:{v!r}\n" for v in rng.normal(size=20000)).encode()
    packed = lzma.compress(text + tail, preset=0)
    bad_at = text.index(b"1:x")
    monkeypatch.setattr(io, "READ_BLOCK_BYTES", 1000)
    cases = [(text, "bad.txt")] + [(_cut_after(packed, bad_at + shift), f"cut{shift}.xz")
                                   for shift in (-30000, 1500, 3000, 200000)]
    kinds = []
    for content, name in cases:
        path = write(tmp_path, content, name=name)
        with pytest.raises(DataFormatError) as serial:
            _serial_read(path)
        with threads.pool(3), pytest.raises(DataFormatError) as threaded:
            read_problem(path)
        assert str(threaded.value) == str(serial.value), name
        kinds.append("line" if ":10001: value is not a number: '1:x'" in str(serial.value)
                     else "cut" if "compressed" in str(serial.value) else str(serial.value))
    assert kinds == ["line", "cut", "line", "line", "line"]


def test_threads_report_a_truncated_stream(tmp_path, monkeypatch):
    from budgetsvm import io, threads
    good = lzma.compress(b"1 1:1\n" * 100000)
    path = write(tmp_path, good[: len(good) // 2], name="cut.xz")
    monkeypatch.setattr(io, "READ_BLOCK_BYTES", 4096)
    with threads.pool(2), pytest.raises(DataFormatError, match="compressed"):
        read_problem(path)


@given(st.binary(max_size=300), st.data())
def test_count_lines_counts_as_bytes_count(buf, data):
    # The compiled counter that sizes each block's arrays, against Python's own bytes.count on
    # every prefix length (a block is parsed up to its last newline, not to its end).
    from budgetsvm import _parse
    length = data.draw(st.integers(0, len(buf)))
    assert _parse.count_lines(buf, length) == (buf.count(b"\n", 0, length),
                                               buf.count(b":", 0, length))
    with pytest.raises(ValueError):
        _parse.count_lines(buf, len(buf) + 1)


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_a_compressed_pipe_is_read_once(tmp_path, compress):
    # A pipe holding compressed data (bash's <(command) as /dev/fd/N, or a FIFO): its first
    # bytes, read to recognise the compression, stay with the decompressing reader. Opening
    # the path again lost them from a /dev/fd pipe ('corrupt stream') and waited forever for a
    # second writer on a FIFO (run as a command with a timeout here, so as not to hang).
    import os
    import subprocess
    import sys
    import threading
    text = b"".join(b"%d 1:%d 3:0.5\n" % (1 if i % 3 else -1, i) for i in range(2000))
    plain = write(tmp_path, text.decode())
    X0, y0 = read_problem(plain)
    data = compress(text)
    assert len(data) < 60000                      # fits a pipe's buffer: written up front
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    os.close(write_end)
    try:
        X, y = read_problem(f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
    assert (X != X0).nnz == 0 and np.array_equal(y, y0)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as out:
            out.write(data)
    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    bin_dir = os.path.dirname(sys.executable)
    result = subprocess.run([os.path.join(bin_dir, "bsvm-train"), "-q", "-s", "dcd", str(fifo),
                             str(tmp_path / "fifo.model")], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert subprocess.run([os.path.join(bin_dir, "bsvm-train"), "-q", "-s", "dcd", plain,
                           str(tmp_path / "plain.model")]).returncode == 0
    assert (tmp_path / "fifo.model").read_bytes() == (tmp_path / "plain.model").read_bytes()
