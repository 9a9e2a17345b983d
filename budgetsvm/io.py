"""Reading and writing data in the LIBSVM format.

Policy (documented in README.md, "Data files"):

* one instance per line: ``label [qid:N] index:value ...``; indices 1-based and strictly ascending
  (``zero_based=True`` reads 0-based files); labels and values are decimal real numbers;
* spaces and tabs separate tokens; CRLF line ends, trailing whitespace, blank lines and ``#``
  comments (to the end of the line) are accepted; ``qid:N`` is accepted and ignored;
* anything else is an error ``FILE:LINE: problem`` (DataFormatError): a non-numeric, NaN or
  infinite label or value, a missing colon, a missing value (``index:`` ending its line: the
  value is never taken from the next line), a non-integer, non-positive, repeated, descending
  or absurd (> 2^31-1) index;
* ``.gz``, ``.bz2`` and ``.xz`` are decompressed transparently; ``-`` reads standard input.

The result is a scipy CSR matrix (float64 values; int32 column indices while nnz < 2^31, int64
otherwise: scipy keeps indices and row pointers in one dtype) and a float64 label array.
"""
import contextlib
import threading

import numpy as np
import scipy.sparse as sp

from budgetsvm import _parse, threads
from budgetsvm.errors import DataFormatError
from budgetsvm.fileio import DECOMPRESSION_ERRORS, open_input

BLOCK_BYTES = 1 << 23          # read 8 MiB at a time; a longer line grows the block
# read_problem reads 1 MiB blocks: with worker threads, parsing overlaps reading from the first
# megabyte on and a file of a few MB still splits over the threads (the same blocks without).
READ_BLOCK_BYTES = 1 << 20
MAX_INDEX = 2147483647

_MESSAGES = {
    1: "label is not a number: {tok}",
    2: "missing ':' in feature {tok} (expected index:value)",
    3: "index is not an integer: {tok}",
    4: "index must be >= 1 (the LIBSVM format is 1-based; --zero-based reads 0-based "
       "files): {tok}",
    5: "indices must be strictly ascending: {tok} after index {prev}",
    6: "value is not a number: {tok}",
    7: "value is not finite: {tok}",
    8: "index too large (the largest is 2147483647, 2147483646 with --zero-based): {tok}",
    9: "label is not finite: {tok}",
    10: "qid must be a non-negative integer: {tok}",
    11: "value is missing after {tok}",
}


def _show(raw):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        # bytes that are not UTF-8: as Python shows bytes ('\xff' once, not escaped twice)
        shown = repr(raw if len(raw) <= 40 else raw[:37] + b"...")[1:]
        return shown + " (bytes that are not text: is this a LIBSVM data file?)"
    if text.startswith("\ufeff"):
        return "'\\ufeff...' (a UTF-8 byte order mark: save the file without it)"
    return repr(text if len(text) <= 40 else text[:37] + "...")


class _Block:
    __slots__ = ("labels", "indptr", "indices", "values", "first_line", "n_lines", "max_index")


def iter_blocks(path, zero_based=False, block_bytes=BLOCK_BYTES):
    """Parse ``path`` block by block; yields _Block objects (arrays of whole lines).

    Memory is bounded by the block size (plus the longest line), whatever the file size.
    """
    offset = 0 if zero_based else 1
    for raw in _text_blocks(path, block_bytes):
        yield _parse_raw(path, raw, offset)


# A block is read in pieces of at most this size: read(n) allocates n bytes before it reads,
# so a --stream-buffer far above the file's size would ask for memory the file never fills.
READ_PIECE_BYTES = 64 << 20


def _read_up_to(stream, size):
    """Up to ``size`` bytes of ``stream`` (fewer only at its end), read in pieces of at most
    READ_PIECE_BYTES: memory grows with what is read, not with what was asked."""
    if size <= READ_PIECE_BYTES:
        return stream.read(size)
    pieces, got = [], 0
    while got < size:
        piece = stream.read(min(READ_PIECE_BYTES, size - got))
        if not piece:
            break
        pieces.append(piece)
        got += len(piece)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _text_blocks(path, block_bytes):
    """Yield (text, length, lines before it, its newlines, its colons) for blocks of whole
    lines of ``path``: its first ``length`` bytes are whole lines, counted once here (the line
    numbers need them, the parser sizes its arrays from them). A read error (a corrupt
    compressed stream) is yielded as the exception itself, after the blocks before it, so
    that a parser meets it in file order."""
    stream = open_input(path)
    line_no = 0           # lines consumed before the current block
    carry = b""
    # the pieces of a line longer than a block, joined once its end is read: joining them at
    # every block made a long line quadratic (26 s to reach a CR-only file's line-1 error)
    long_line = []
    try:
        while True:
            try:
                chunk = _read_up_to(stream, block_bytes)
            except DECOMPRESSION_ERRORS as exc:
                yield DataFormatError(path, None, f"cannot read (corrupt or truncated "
                                      f"compressed stream?): {exc}")
                return
            # fewer bytes than asked only at the end: the last line is finished then, newline
            # or not (kept for the next block, it became a block of its own, and --stream
            # trained on it as a buffer of its own)
            at_end = len(chunk) < block_bytes
            if long_line:
                if not at_end and chunk.find(b"\n") < 0:
                    long_line.append(chunk)
                    continue
                data = b"".join(long_line + [chunk])
                long_line = []
            else:
                data = carry + chunk if carry else chunk
            del chunk                 # at most one block of text (plus a carried line) alive
            if not data:
                return
            cut = len(data) if at_end else data.rfind(b"\n") + 1
            if cut == 0:              # a single line longer than the block: read more
                long_line, carry = [data], b""
                continue
            if at_end and not data.endswith(b"\n"):
                data += b"\n"        # last line without a newline
                cut += 1
            carry = data[cut:]
            newlines, colons = _parse.count_lines(data, cut)
            yield data, cut, line_no, newlines, colons
            line_no += newlines
            # Keep this block alive until the next one is read. Freed first (its consumer is
            # done with it), malloc trims the top of the heap and the next block's memory is
            # paged in again: bsvm-predict -n 1 of a 154 MB file took 2.3x the page faults
            # and 10% more time.
            previous = data  # noqa: F841
            if at_end:
                return
    finally:
        if stream is not None and path != "-":
            stream.close()


def _parse_raw(path, raw, offset):
    if isinstance(raw, BaseException):
        raise raw
    data, cut, line_no, n_lines, max_nnz = raw
    return _parse_buffer(path, data, cut, line_no, offset, n_lines, max_nnz)


def _parse_buffer(path, buf, length, line_no, offset, n_lines, max_nnz):
    """Parse the whole lines buf[:length] (without copying them), which hold n_lines newlines
    and max_nnz colons (at most one index:value pair each)."""
    block = _Block()
    block.labels = np.empty(n_lines, dtype=np.float64)
    block.indptr = np.zeros(n_lines + 1, dtype=np.int64)
    block.indices = np.empty(max_nnz, dtype=np.int32)
    block.values = np.empty(max_nnz, dtype=np.float64)
    n_rows, nnz, lines, max_index, error, start, end, prev = _parse.parse_block(
        memoryview(buf)[:length], block.labels, block.indptr, block.indices, block.values, 0,
        offset)
    if error:
        tok = _show(buf[start:end])
        message = _MESSAGES[error].format(tok=tok, prev=prev)
        if error == 4 and offset == 0:          # --zero-based: the index read was negative
            message = f"index must be >= 0 (--zero-based): {tok}"
        line_start = buf.rfind(b"\n", 0, start) + 1
        line_end = buf.find(b"\n", start, length)
        if b"\r" in buf[line_start:line_end].rstrip(b"\r"):
            # a CR inside the line: lines that end with CR alone run together
            message += " (the line holds a CR: old Mac line ends? convert them to LF, e.g. " \
                       "with tr '\\r' '\\n')"
        raise DataFormatError(path, line_no + lines + 1, message)
    block.labels = block.labels[:n_rows]
    block.indptr = block.indptr[:n_rows + 1]
    block.indices = block.indices[:nnz]
    block.values = block.values[:nnz]
    block.first_line = line_no + 1
    block.n_lines = n_lines
    block.max_index = max_index if offset == 1 else max_index + 1
    return block


def _csr(labels, indptr, indices, values, n_features):
    X = sp.csr_matrix((values, indices, indptr), shape=(len(labels), n_features))
    return X, labels


def read_problem(path, zero_based=False, n_features=None, allow_empty=False):
    """Read a whole LIBSVM-format file: returns (X, y).

    n_features, if given, fixes the width (larger indices are an error for the caller to
    avoid); otherwise it is the largest index in the file, as LIBSVM does.
    """
    offset = 0 if zero_based else 1

    def parse(raw):
        return _parse_raw(path, raw, offset)
    with contextlib.closing(_text_blocks(path, READ_BLOCK_BYTES)) as texts:
        if threads.current_threads() > 1 and \
                threading.current_thread() is threading.main_thread():
            # The main thread reads (and decompresses) blocks while the pool's threads parse
            # those read before. The blocks are the serial loop's, so are the arrays and the
            # first error in file order (a bad line, or a corrupt stream after it).
            with threads.ordered_map(parse, texts) as parsed:
                blocks = list(parsed)
        else:
            blocks = [parse(raw) for raw in texts]
    if not blocks or sum(len(b.labels) for b in blocks) == 0:
        if allow_empty:
            return sp.csr_matrix((0, n_features or 0)), np.empty(0)
        raise DataFormatError(path, None, "no data (the file is empty or has only comments)")
    width = max(b.max_index for b in blocks)
    if n_features is not None:
        if width > n_features:
            raise DataFormatError(path, None, f"has index {width} > n_features={n_features}")
        width = n_features
    if len(blocks) == 1:
        b = blocks[0]
        return _csr(b.labels, b.indptr, b.indices, b.values, width)
    shifts = np.cumsum([0] + [len(b.values) for b in blocks[:-1]])
    indptr = np.concatenate([blocks[0].indptr[:1]] +
                            [b.indptr[1:] + s for b, s in zip(blocks, shifts)])
    labels = np.concatenate([b.labels for b in blocks])
    indices = np.concatenate([b.indices for b in blocks])
    values = np.concatenate([b.values for b in blocks])
    return _csr(labels, indptr, indices, values, width)


def iter_problem_chunks(path, zero_based=False, block_bytes=BLOCK_BYTES):
    """Stream a file as (X_chunk, y_chunk) pairs, each as wide as its own largest index.

    Used by streaming training and bsvm-scale so that memory does not grow with the file.
    """
    for raw in _text_blocks(path, block_bytes):
        chunk = _parse_chunk(path, raw, zero_based)
        if chunk is not None:
            yield chunk


@contextlib.contextmanager
def map_problem_chunks(path, work, zero_based=False, block_bytes=READ_BLOCK_BYTES, ahead=None,
                       pool=None):
    """``with map_problem_chunks(path, work) as results:`` iterates over work(X_chunk, y_chunk)
    of every block of ``path`` that holds rows, in file order. The blocks are parsed, and work
    done, in the active pool's threads (budgetsvm/threads.py) while this thread reads (and
    decompresses) the next ones; a bad line's error comes out in file order, as the serial
    loop gives it. Leaving the block stops the work in flight (threads.ordered_map).

    ahead: blocks read and handed to the threads before the caller takes the first result,
    the one it takes included (default: one per thread, plus one); pool: threads.Pool to
    work in instead of the active pool."""
    def parse_and_work(text_box):
        # the text comes in a one-item list emptied here, so that this item does not keep it
        # (ordered_map holds an item until its result is taken)
        chunk = _parse_chunk(path, text_box.pop(), zero_based)
        threads.check_cancelled()         # stopped meanwhile (Ctrl-C): skip the work
        return None if chunk is None else work(*chunk)
    texts = ([text] for text in _text_blocks(path, block_bytes))
    n_threads = pool.n_threads if pool is not None else threads.current_threads()
    with contextlib.closing(texts), \
            threads.ordered_map(parse_and_work, texts, ahead=ahead or n_threads + 1,
                                pool=pool) as results:
        # filter, not a generator expression, which would keep the last result (a whole
        # --stream buffer) alive while the next is read and parsed
        yield filter(lambda result: result is not None, results)


def _parse_chunk(path, raw, zero_based):
    """(X_chunk, y_chunk) of one block of _text_blocks, None if it holds no row; raises the
    DataFormatError of its first bad line (or of the unreadable stream it stands for)."""
    b = _parse_raw(path, raw, 0 if zero_based else 1)
    if not len(b.labels):
        return None
    return _csr(b.labels, b.indptr, b.indices, b.values, b.max_index)


def write_problem(stream, X, y):
    """Write (X, y) in the LIBSVM format with full precision (repr of floats) to a text stream."""
    X = sp.csr_matrix(X)
    X.sort_indices()
    indptr, indices, data = X.indptr, X.indices, X.data
    for i in range(X.shape[0]):
        lo, hi = indptr[i], indptr[i + 1]
        feats = " ".join(f"{j + 1}:{v!r}" for j, v in zip(indices[lo:hi].tolist(),
                                                          data[lo:hi].tolist()))
        label = "%.17g" % y[i]
        stream.write(f"{label} {feats}\n" if feats else f"{label}\n")
