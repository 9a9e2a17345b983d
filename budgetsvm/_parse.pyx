"""Inner loops of the LIBSVM-format reader (budgetsvm/io.py holds the policy and the messages)
and of the model-file reader (budgetsvm/model_io.py: headers, policy and messages).

parse_block parses a buffer that ends with a newline into preallocated arrays and stops at the
first malformed line, reporting an error code and the offending token's position. Format:

    label [qid:N] index:value index:value ... [# comment]

Separators are spaces, tabs and a trailing CR; indices are 1-based and strictly ascending.
A value is read on its own line only: 'index:' followed by the line end (after optional blanks)
is an error of that line (MISSING_VALUE), as in LIBSVM's read_problem.

parse_dense_rows and parse_sv_rows read the data sections of model files (weight lines of
linear models, SV lines of kernel models) the same way: whole lines into preallocated arrays,
stopping at the first malformed line, which model_io then explains in Python. They accept
exactly the lines model_io's Python checks accept: tokens separated by spaces, tabs, CR, VT or
FF; finite decimal reals (what Python's float() reads, without '_'); SV features as
index:value with a decimal index in 1..2^31-1 (an optional '+'), strictly increasing.
"""
from libc.stdlib cimport strtod
from libc.math cimport isfinite
from libc.stdint cimport int32_t, int64_t

# Error codes understood by budgetsvm.io (keep in sync with _MESSAGES there).
cdef enum:
    OK = 0
    BAD_LABEL = 1
    MISSING_COLON = 2
    BAD_INDEX = 3
    INDEX_NOT_POSITIVE = 4
    NOT_ASCENDING = 5
    BAD_VALUE = 6
    VALUE_NOT_FINITE = 7
    INDEX_TOO_LARGE = 8
    LABEL_NOT_FINITE = 9
    BAD_QID = 10
    MISSING_VALUE = 11

cdef int64_t MAX_INDEX = 2147483647


cdef inline bint is_space(unsigned char c) noexcept nogil:
    return c == b' ' or c == b'\t' or c == b'\r' or c == b'\v' or c == b'\f'


cdef inline bint ends_token(unsigned char c) noexcept nogil:
    return is_space(c) or c == b'\n' or c == b'#'


def count_lines(const unsigned char[::1] buf, Py_ssize_t length):
    """(newlines, colons) in buf[:length], in one pass without the GIL.

    The reader sizes a block's arrays from these counts before parsing it (a row per line, an
    index:value pair per colon at most). bytes.count would scan the block twice holding the
    GIL, which on a 200 MB file took a fifth of the parse and kept the other threads waiting."""
    cdef const unsigned char* p = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t i, newlines = 0, colons = 0
    if length > buf.shape[0]:
        raise ValueError("length exceeds the buffer")
    with nogil:
        for i in range(length):
            newlines += p[i] == b'\n'
            colons += p[i] == b':'
    return newlines, colons


def parse_block(const unsigned char[::1] buf, double[::1] labels, int64_t[::1] indptr,
                int32_t[::1] indices, double[::1] values, int64_t nnz_start, int index_offset):
    """Parse buf (which must end with b'\\n') into the output arrays.

    Rows are appended from labels[0] / indptr[1]; indptr[0] must hold nnz_start on entry.
    index_offset is 1 for the LIBSVM format (1-based) and 0 for zero-based files.

    Returns (n_rows, nnz_end, lines_consumed, max_index, error, err_start, err_end, prev_index)
    where error is 0 on success; otherwise n_rows counts the good rows before the bad line,
    lines_consumed is the 0-based line number of the bad line within buf, err_start/err_end
    delimit the offending token and prev_index is the previous index (for NOT_ASCENDING).
    """
    cdef Py_ssize_t n = buf.shape[0]
    cdef const unsigned char* p = &buf[0]
    cdef Py_ssize_t pos = 0, tok, line_start
    cdef Py_ssize_t n_rows = 0, lines = 0
    cdef int64_t nnz = nnz_start, idx = 0, prev = 0, max_index = 0
    cdef int error = OK
    cdef Py_ssize_t err_start = 0, err_end = 0
    cdef char* endp
    cdef double v, label
    cdef unsigned char c
    cdef bint is_qid

    with nogil:
        while pos < n:
            line_start = pos
            # skip leading blanks; blank and comment-only lines are ignored
            while pos < n and is_space(p[pos]):
                pos += 1
            if p[pos] == b'\n' or p[pos] == b'#':
                while p[pos] != b'\n':
                    pos += 1
                pos += 1
                lines += 1
                continue
            # label
            tok = pos
            v = strtod(<const char*>(p + pos), &endp)
            if <Py_ssize_t>(<const unsigned char*>endp - p) == tok or \
                    not ends_token((<const unsigned char*>endp)[0]) or \
                    not _plain_number(p, tok, <Py_ssize_t>(<const unsigned char*>endp - p)):
                error = BAD_LABEL
                err_start = tok
                err_end = _token_end(p, tok)
                break
            if not isfinite(v):
                error = LABEL_NOT_FINITE
                err_start = tok
                err_end = <Py_ssize_t>(<const unsigned char*>endp - p)
                break
            label = v
            pos = <Py_ssize_t>(<const unsigned char*>endp - p)
            prev = 0 if index_offset == 1 else -1
            # features
            while True:
                while is_space(p[pos]):
                    pos += 1
                c = p[pos]
                if c == b'\n' or c == b'#':
                    break
                tok = pos
                is_qid = (p[pos] == b'q' and p[pos + 1] == b'i' and p[pos + 2] == b'd'
                          and p[pos + 3] == b':')
                if is_qid:
                    pos += 4
                    if not (p[pos] >= b'0' and p[pos] <= b'9'):
                        error = BAD_QID
                        break
                    while p[pos] >= b'0' and p[pos] <= b'9':
                        pos += 1
                    if not ends_token(p[pos]):
                        error = BAD_QID
                        break
                    continue
                # index: digits only (an optional '+' is accepted as strtol does)
                if p[pos] == b'+':
                    pos += 1
                if p[pos] == b'-':
                    # '-1' without a colon is a label run into this line (a file without its
                    # last newline, then `cat`), not a negative index
                    error = MISSING_COLON if _token_has_no_colon(p, tok) else INDEX_NOT_POSITIVE
                    break
                if not (p[pos] >= b'0' and p[pos] <= b'9'):
                    error = MISSING_COLON if _token_has_no_colon(p, tok) else BAD_INDEX
                    break
                idx = 0
                while p[pos] >= b'0' and p[pos] <= b'9':
                    if idx <= MAX_INDEX:
                        idx = idx * 10 + (p[pos] - 48)  # 48 == ord('0')
                    pos += 1
                if p[pos] != b':':
                    error = MISSING_COLON if _token_has_no_colon(p, tok) else BAD_INDEX
                    break
                # column idx − index_offset ≤ MAX_INDEX − 1, whichever base the file has: the
                # column is written back 1-based (and read back) in every model format
                if idx - index_offset >= MAX_INDEX:
                    error = INDEX_TOO_LARGE
                    break
                if idx < index_offset:
                    error = INDEX_NOT_POSITIVE
                    break
                if idx <= prev:
                    error = NOT_ASCENDING
                    break
                pos += 1
                # value: blanks may precede it on this line, but strtod would also skip the
                # line end and take the next line's label as the value ('1:' ending a line)
                while is_space(p[pos]):
                    pos += 1
                if p[pos] == b'\n':
                    error = MISSING_VALUE
                    break
                v = strtod(<const char*>(p + pos), &endp)
                if <Py_ssize_t>(<const unsigned char*>endp - p) == pos or \
                        not ends_token((<const unsigned char*>endp)[0]) or \
                        not _plain_number(p, pos, <Py_ssize_t>(<const unsigned char*>endp - p)):
                    error = BAD_VALUE
                    break
                if not isfinite(v):
                    error = VALUE_NOT_FINITE
                    break
                pos = <Py_ssize_t>(<const unsigned char*>endp - p)
                indices[nnz - nnz_start] = <int32_t>(idx - index_offset)
                values[nnz - nnz_start] = v
                nnz += 1
                if idx > max_index:
                    max_index = idx
                prev = idx
            if error != OK:
                err_start = tok
                err_end = _token_end(p, tok)
                break
            # skip an optional comment to the end of the line
            while p[pos] != b'\n':
                pos += 1
            pos += 1
            labels[n_rows] = label
            n_rows += 1
            indptr[n_rows] = nnz
            lines += 1
    return n_rows, nnz, lines, max_index, error, err_start, err_end, prev


cdef inline Py_ssize_t _token_end(const unsigned char* p, Py_ssize_t pos) noexcept nogil:
    while not (is_space(p[pos]) or p[pos] == b'\n'):
        pos += 1
    return pos


cdef inline bint _token_has_no_colon(const unsigned char* p, Py_ssize_t pos) noexcept nogil:
    while not (is_space(p[pos]) or p[pos] == b'\n'):
        if p[pos] == b':':
            return False
        pos += 1
    return True


cdef inline bint _plain_number(const unsigned char* p, Py_ssize_t start,
                               Py_ssize_t end) noexcept nogil:
    """strtod also accepts hexadecimal floats, 'inf' and 'nan'; a data file may only hold
    decimal numbers (inf/nan are caught separately as non-finite)."""
    cdef Py_ssize_t i
    for i in range(start, end):
        if p[i] == b'x' or p[i] == b'X' or p[i] == b'p' or p[i] == b'P':
            return False
    return True


cdef inline bint _is_hex(const unsigned char* p, Py_ssize_t pos) noexcept nogil:
    """strtod reads hexadecimal floats ('0x1p3'); Python's float() and model files do not."""
    if p[pos] == b'+' or p[pos] == b'-':
        pos += 1
    return p[pos] == b'0' and (p[pos + 1] == b'x' or p[pos + 1] == b'X')


cdef inline Py_ssize_t _real(const unsigned char* p, Py_ssize_t pos, double* out) noexcept nogil:
    """Parse the finite decimal real starting at p[pos] and ending a token; returns the position
    after it, or -1 when the token is anything else (also NaN and infinities)."""
    cdef char* endp
    cdef double v
    cdef Py_ssize_t end
    if is_space(p[pos]) or p[pos] == b'\n':
        return -1               # an empty token ('3:'); strtod would skip to the next one
    v = strtod(<const char*>(p + pos), &endp)
    end = <Py_ssize_t>(<const unsigned char*>endp - p)
    if end == pos or not (is_space(p[end]) or p[end] == b'\n') or _is_hex(p, pos) \
            or not isfinite(v):
        return -1
    out[0] = v
    return end


cdef inline Py_ssize_t _reals(const unsigned char* p, Py_ssize_t pos, double* out,
                              Py_ssize_t count) noexcept nogil:
    # `count` blank-separated reals of one line into out; the position after the last, or −1
    # when the line ends early or a field is not a number
    cdef Py_ssize_t c
    for c in range(count):
        while is_space(p[pos]):
            pos += 1
        if p[pos] == b'\n':
            return -1
        pos = _real(p, pos, &out[c])
        if pos < 0:
            return -1
    return pos


def parse_dense_rows(const unsigned char[::1] buf, double[:, ::1] out, Py_ssize_t row):
    """Parse the lines of buf (which must end with b'\\n') into out[row], out[row + 1], ...:
    each line exactly out.shape[1] reals. Stops when out is full, buf is used up or at the first
    malformed line.

    Returns (rows parsed, bytes consumed, ok); consumed is the offset just after the last parsed
    line, where the malformed line starts when ok is False.
    """
    cdef Py_ssize_t n = buf.shape[0], ncols = out.shape[1], rows_max = out.shape[0]
    cdef const unsigned char* p = &buf[0] if n > 0 else NULL
    cdef Py_ssize_t pos = 0, line_start = 0, r = row
    cdef bint ok = True
    if n == 0:
        return 0, 0, True
    with nogil:
        while pos < n and r < rows_max:
            line_start = pos
            pos = _reals(p, pos, &out[r, 0], ncols)
            if pos < 0:
                ok = False
                break
            while is_space(p[pos]):
                pos += 1
            if p[pos] != b'\n':
                ok = False
                break
            pos += 1
            r += 1
    return r - row, (pos if ok else line_start), ok


def parse_sv_rows(const unsigned char[::1] buf, double[:, ::1] coef, Py_ssize_t row,
                  int64_t[::1] indptr, int32_t[::1] indices, double[::1] values,
                  int64_t index_base=1):
    """Parse SV lines of buf (which must end with b'\\n'): coef.shape[1] reals into coef[row],
    coef[row + 1], ..., then the features index:value; stops when coef is full, buf is used up
    or at the first malformed line.

    Features go to indices (0-based: the file's index − index_base, 1 or, for a LIBSVM model of
    0-based data, 0) and values from position 0; indptr[0] must be 0 and gets
    indptr[i + 1] = the end of the i-th parsed line's features (indptr has room for every line
    of buf, indices and values for every ':' in it).

    Returns (rows parsed, bytes consumed, nnz, ok, largest index), as parse_dense_rows.
    """
    cdef Py_ssize_t n = buf.shape[0], ncoef = coef.shape[1], rows_max = coef.shape[0]
    cdef const unsigned char* p = &buf[0] if n > 0 else NULL
    cdef Py_ssize_t pos = 0, line_start = 0, r = row, nnz = 0
    cdef int64_t idx, prev, max_index = 0
    cdef bint ok = True
    if n == 0:
        return 0, 0, 0, True, 0
    with nogil:
        while pos < n and r < rows_max:
            line_start = pos
            pos = _reals(p, pos, &coef[r, 0], ncoef)
            if pos < 0:
                ok = False
                break
            prev = index_base - 1
            while True:
                while is_space(p[pos]):
                    pos += 1
                if p[pos] == b'\n':
                    break
                if p[pos] == b'+':
                    pos += 1
                if not (p[pos] >= b'0' and p[pos] <= b'9'):
                    ok = False
                    break
                idx = 0
                while p[pos] >= b'0' and p[pos] <= b'9':
                    if idx <= MAX_INDEX:
                        idx = idx * 10 + (p[pos] - 48)  # 48 == ord('0')
                    pos += 1
                if p[pos] != b':' or idx < index_base or idx - index_base >= MAX_INDEX \
                        or idx <= prev:
                    ok = False
                    break
                pos = _real(p, pos + 1, &values[nnz])
                if pos < 0:
                    ok = False
                    break
                indices[nnz] = <int32_t>(idx - index_base)
                nnz += 1
                prev = idx
                if idx > max_index:
                    max_index = idx
            if not ok:
                break
            pos += 1
            r += 1
            indptr[r - row] = nnz
    if not ok:
        pos = line_start
        nnz = indptr[r - row]
    return r - row, pos, nnz, ok, max_index
