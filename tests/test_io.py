"""The LIBSVM-format reader: exact values, the documented tolerance policy, and every
malformed-line kind reported as FILE:LINE with the offending token."""
import bz2
import gzip
import lzma

import numpy as np
import pytest

from budgetsvm.errors import DataFormatError
from budgetsvm.io import iter_problem_chunks, read_problem, write_problem
from corpus import MALFORMED


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


def test_zero_based_option(tmp_path):
    X, _ = read_problem(write(tmp_path, "1 0:1 2:3\n"), zero_based=True)
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 3]])


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
