"""Doubles as text exactly as Python's ``repr(float)`` writes them, in compiled code without the
GIL, so that the rows of a large model file can be formatted in the worker threads
(budgetsvm/threads.py) and much faster than one ``repr`` call per number.

``repr`` writes the shortest decimal string that reads back as the same double and, among the
strings of that length, the one nearest to it (ties to even). The digits come from the Ryū
algorithm (U. Adams, "Ryū: fast float-to-string conversion", PLDI 2018, §3–§4), written here
from the paper: the interval of decimals that read back as x is scaled by a power of 10 with
one 64 × 128-bit multiplication (precomputed 125-bit approximations of 5^±q, exact enough that
the dropped bits never matter), then digits are removed while the interval still holds two
candidates. The layout is CPython's (Objects/floatobject.c, repr style 'r'): fixed notation
when the decimal point falls at -4 < decpt ≤ 16 (with ".0" after an integer), else d.ddde±XX
with at least two exponent digits; "inf", "-inf", "nan", "-0.0". tests/test_format.py
compares every form with ``repr``. LIBSVM data lines (bsvm-scale's output) take C's "%g" from
snprintf, once per distinct value.
"""
import numpy as np

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, uint8_t
from libc.stdio cimport snprintf
from libc.string cimport memcpy

cdef extern from *:
    """
    /* floor(m * mul / 2^j) for the 128-bit multiplier mul = mul[1]·2^64 + mul[0], j >= 64:
       (m·mul) / 2^64 = m·mul[1] + floor(m·mul[0] / 2^64) exactly. */
    typedef unsigned __int128 bsvm_u128;
    static inline uint64_t bsvm_mul_shift64(uint64_t m, const uint64_t* mul, int32_t j) {
        bsvm_u128 b0 = (bsvm_u128) m * mul[0];
        bsvm_u128 b2 = (bsvm_u128) m * mul[1];
        return (uint64_t) (((b0 >> 64) + b2) >> (j - 64));
    }
    """
    uint64_t mul_shift64 "bsvm_mul_shift64"(uint64_t m, const uint64_t* mul,
                                            int32_t j) noexcept nogil

# Bits kept of 5^i (POW5) and of 2^k / 5^i (POW5_INV): Ryū's choice for doubles.
cdef int32_t POW5_BITS = 125
cdef int32_t POW5_INV_BITS = 125
# The longest text of one double: "-" + 17 digits + "." + "e-308".
MAX_CHARS = 25


def _tables():
    """POW5[i] = the top 125 bits of 5^i (i < 326); POW5_INV[i] = ⌊2^(bits(5^i) − 1 + 125) /
    5^i⌋ + 1 (i < 342), each as (low, high) 64-bit words: exact integer arithmetic."""
    mask = (1 << 64) - 1
    inv = np.empty((342, 2), dtype=np.uint64)
    fwd = np.empty((326, 2), dtype=np.uint64)
    for i in range(342):
        p = 5 ** i
        v = (1 << (p.bit_length() - 1 + 125)) // p + 1
        inv[i, 0], inv[i, 1] = v & mask, v >> 64
    for i in range(326):
        p = 5 ** i
        b = p.bit_length()
        v = p >> (b - 125) if b > 125 else p << (125 - b)
        fwd[i, 0], fwd[i, 1] = v & mask, v >> 64
    return inv, fwd


_POW5_INV_ARRAY, _POW5_ARRAY = _tables()
cdef const uint64_t[:, ::1] _POW5_INV = _POW5_INV_ARRAY
cdef const uint64_t[:, ::1] _POW5 = _POW5_ARRAY


cdef inline int32_t _pow5_bits(int32_t e) noexcept nogil:
    # ⌈log2(5^e)⌉ (1 for e = 0), for 0 <= e <= 3528
    return <int32_t>(((<uint32_t>e) * 1217359) >> 19) + 1


cdef inline uint32_t _log10_pow2(int32_t e) noexcept nogil:
    # ⌊log10(2^e)⌋ for 0 <= e <= 1650
    return ((<uint32_t>e) * 78913) >> 18


cdef inline uint32_t _log10_pow5(int32_t e) noexcept nogil:
    # ⌊log10(5^e)⌋ for 0 <= e <= 2620
    return ((<uint32_t>e) * 732923) >> 20


cdef inline bint _multiple_of_pow5(uint64_t v, uint32_t p) noexcept nogil:
    # 5^p divides v (v > 0)
    cdef uint32_t count = 0
    while v % 5 == 0:
        v //= 5
        count += 1
    return count >= p


cdef inline void _shortest(uint64_t mantissa, uint32_t exponent, uint64_t* digits,
                           int32_t* exp10) noexcept nogil:
    """The shortest, nearest decimal digits*10^exp10 of the positive finite double with these
    IEEE fields (Ryū, §3: steps 1–4)."""
    cdef int32_t e2, e10, k, i, j, removed = 0
    cdef uint64_t m2, mv, vr, vp, vm, output
    cdef uint32_t q, mm_shift
    cdef bint accept_bounds, vm_zeros = False, vr_zeros = False, round_up = False
    cdef uint8_t last_removed = 0
    cdef const uint64_t* mul
    # step 1: x = m2 · 2^e2, two more bits for the interval's half-way points
    if exponent == 0:
        e2 = 1 - 1023 - 52 - 2
        m2 = mantissa
    else:
        e2 = <int32_t>exponent - 1023 - 52 - 2
        m2 = (<uint64_t>1 << 52) | mantissa
    accept_bounds = (m2 & 1) == 0       # round-half-even reading maps the bounds to x
    mv = 4 * m2
    # the lower neighbour is closer (half the gap) at a power of two
    mm_shift = 1 if (mantissa != 0 or exponent <= 1) else 0
    # steps 2–3: u = mv − 1 − mm_shift, v = mv, w = mv + 2, times 2^e2, as decimals ·10^-e10
    if e2 >= 0:
        q = _log10_pow2(e2) - (1 if e2 > 3 else 0)
        e10 = <int32_t>q
        k = POW5_INV_BITS + _pow5_bits(<int32_t>q) - 1
        i = -e2 + <int32_t>q + k
        mul = &_POW5_INV[q, 0]
        vr = mul_shift64(mv, mul, i)
        vp = mul_shift64(mv + 2, mul, i)
        vm = mul_shift64(mv - 1 - mm_shift, mul, i)
        if q <= 21:
            # exact (no bits dropped) when 5^q divides the scaled value
            if mv % 5 == 0:
                vr_zeros = _multiple_of_pow5(mv, q)
            elif accept_bounds:
                vm_zeros = _multiple_of_pow5(mv - 1 - mm_shift, q)
            elif _multiple_of_pow5(mv + 2, q):
                vp -= 1                   # the exact upper bound is excluded
    else:
        q = _log10_pow5(-e2) - (1 if -e2 > 1 else 0)
        e10 = <int32_t>q + e2
        i = -e2 - <int32_t>q
        k = _pow5_bits(i) - POW5_BITS
        j = <int32_t>q - k
        mul = &_POW5[i, 0]
        vr = mul_shift64(mv, mul, j)
        vp = mul_shift64(mv + 2, mul, j)
        vm = mul_shift64(mv - 1 - mm_shift, mul, j)
        if q <= 1:
            # mv has two trailing zero bits, so these are exact
            vr_zeros = True
            if accept_bounds:
                vm_zeros = mm_shift == 1
            else:
                vp -= 1
        elif q < 63:
            # exact when 2^q divides mv
            vr_zeros = (mv & ((<uint64_t>1 << q) - 1)) == 0
    # step 4: remove digits while vm < vp still leaves a shorter candidate
    if vm_zeros or vr_zeros:
        while vp // 10 > vm // 10:
            vm_zeros = vm_zeros and vm % 10 == 0
            vr_zeros = vr_zeros and last_removed == 0
            last_removed = <uint8_t>(vr % 10)
            vr //= 10
            vp //= 10
            vm //= 10
            removed += 1
        if vm_zeros:
            while vm % 10 == 0:
                vr_zeros = vr_zeros and last_removed == 0
                last_removed = <uint8_t>(vr % 10)
                vr //= 10
                vp //= 10
                vm //= 10
                removed += 1
        if vr_zeros and last_removed == 5 and vr % 2 == 0:
            last_removed = 4              # an exact tie: round half to even
        output = vr + (1 if ((vr == vm and (not accept_bounds or not vm_zeros))
                             or last_removed >= 5) else 0)
    else:
        if vp // 100 > vm // 100:
            round_up = vr % 100 >= 50
            vr //= 100
            vp //= 100
            vm //= 100
            removed += 2
        while vp // 10 > vm // 10:
            round_up = vr % 10 >= 5
            vr //= 10
            vp //= 10
            vm //= 10
            removed += 1
        output = vr + (1 if (vr == vm or round_up) else 0)
    digits[0] = output
    exp10[0] = e10 + removed


cdef inline Py_ssize_t _put(char* out, const char* text) noexcept nogil:
    cdef Py_ssize_t n = 0
    while text[n] != 0:
        out[n] = text[n]
        n += 1
    return n


cdef Py_ssize_t write_double(double value, char* out) noexcept nogil:
    """Write repr(value) to out (at most MAX_CHARS bytes, no terminator); return its length."""
    cdef uint64_t bits, mantissa, digits
    cdef uint32_t exponent
    cdef int32_t exp10, decpt, length, x, t
    cdef Py_ssize_t pos = 0
    cdef char buf[20]
    memcpy(&bits, &value, 8)
    mantissa = bits & ((<uint64_t>1 << 52) - 1)
    exponent = <uint32_t>((bits >> 52) & 0x7FF)
    if exponent == 0x7FF:
        if mantissa != 0:
            return _put(out, b"nan")
        return _put(out, b"-inf" if (bits >> 63) else b"inf")
    if bits >> 63:
        out[pos] = b'-'
        pos += 1
    if exponent == 0 and mantissa == 0:
        return pos + _put(out + pos, b"0.0")
    _shortest(mantissa, exponent, &digits, &exp10)
    length = 0
    while digits > 0:                       # buf[0:length] = the digits, last first
        buf[length] = <char>(48 + digits % 10)
        digits //= 10
        length += 1
    decpt = length + exp10                  # x = 0.d1d2...dn × 10^decpt
    if -4 < decpt <= 16:
        if decpt <= 0:
            out[pos] = b'0'
            out[pos + 1] = b'.'
            pos += 2
            for t in range(-decpt):
                out[pos] = b'0'
                pos += 1
            for t in range(length - 1, -1, -1):
                out[pos] = buf[t]
                pos += 1
        else:
            for t in range(length):
                if t == decpt:
                    out[pos] = b'.'
                    pos += 1
                out[pos] = buf[length - 1 - t]
                pos += 1
            if decpt >= length:
                for t in range(decpt - length):
                    out[pos] = b'0'
                    pos += 1
                out[pos] = b'.'
                out[pos + 1] = b'0'
                pos += 2
        return pos
    out[pos] = buf[length - 1]
    pos += 1
    if length > 1:
        out[pos] = b'.'
        pos += 1
        for t in range(length - 2, -1, -1):
            out[pos] = buf[t]
            pos += 1
    x = decpt - 1
    out[pos] = b'e'
    out[pos + 1] = b'-' if x < 0 else b'+'
    pos += 2
    if x < 0:
        x = -x
    if x >= 100:
        out[pos] = <char>(48 + x // 100)
        pos += 1
    out[pos] = <char>(48 + (x // 10) % 10)
    out[pos + 1] = <char>(48 + x % 10)
    return pos + 2


cdef inline Py_ssize_t write_printf_g17(double value, char* out) noexcept nogil:
    """Write value as C's printf (and Python's %-operator) write "%.17g" (the LIBSVM and
    LIBLINEAR model files' numbers, at most 24 bytes); return the length. out must have room
    for one more byte (snprintf's terminator, which the next character overwrites)."""
    return snprintf(out, 25, "%.17g", value)


cdef inline Py_ssize_t _write_value(double value, char* out, bint printf_g17) noexcept nogil:
    """Write one number of a line; return the length. As repr writes it, to follow a
    separating space; or (printf_g17) as "%.17g " with its trailing space, as LIBSVM and
    LIBLINEAR write every number of their lines."""
    cdef Py_ssize_t n
    if not printf_g17:
        return write_double(value, out)
    n = write_printf_g17(value, out)
    out[n] = b' '
    return n + 1


cdef inline Py_ssize_t _write_row(const double[:, :] values, Py_ssize_t r, char* out,
                                  bint printf_g17) noexcept nogil:
    """Write row r's values (_write_value; repr's separated by single spaces); return the
    length."""
    cdef Py_ssize_t c, pos = 0
    for c in range(values.shape[1]):
        if c > 0 and not printf_g17:
            out[pos] = b' '
            pos += 1
        pos += _write_value(values[r, c], out + pos, printf_g17)
    return pos


def format_rows_ascii(const double[:, :] values, bint printf_g17=False):
    """The rows of a 2-D array (any strides) as ASCII text lines in a uint8 array: the values
    of a row as repr writes them, separated by single spaces, each line ending with a newline.
    With printf_g17, each value as "%.17g " instead (LIBLINEAR's weight lines). Runs without
    the GIL; the array can be written to a binary file as it is (no copy)."""
    cdef Py_ssize_t n = values.shape[0], m = values.shape[1], r, pos = 0
    buffer = np.empty(n * (m * (MAX_CHARS + 1) + 1), dtype=np.uint8)
    cdef unsigned char[::1] text = buffer
    cdef char* out = <char*>&text[0] if text.shape[0] > 0 else NULL
    with nogil:
        for r in range(n):
            pos += _write_row(values, r, out + pos, printf_g17)
            out[pos] = b'\n'
            pos += 1
    return buffer[:pos]


def format_rows(const double[:, :] values):
    """format_rows_ascii as a str."""
    return format_rows_ascii(values).tobytes().decode("ascii")


cdef inline Py_ssize_t _write_index(int64_t value, char* out) noexcept nogil:
    """Write a non-negative integer in decimal; return its length."""
    cdef char digits[20]
    cdef Py_ssize_t n = 0, i
    while True:
        digits[n] = <char>(48 + value % 10)
        n += 1
        value //= 10
        if value == 0:
            break
    for i in range(n):
        out[i] = digits[n - 1 - i]
    return n


def format_sv_rows_ascii(const double[:, :] coef, const int64_t[:] indptr,
                         const int32_t[:] indices, const double[:] values,
                         bint printf_g17=False, int64_t index_base=1):
    """The native format's SV lines of a CSR matrix of SVs (0-based indices) in a uint8 array:
    row i's coefficients, then " index:value" for its entries with 1-based indices (column +
    index_base), values and coefficients as repr writes them, each line ending with a newline.
    With printf_g17, LIBSVM's SV lines instead: each coefficient as "%.17g " and each entry as
    "index:%.17g " (every number followed by a space). Runs without the GIL."""
    cdef Py_ssize_t n = coef.shape[0], m = coef.shape[1], r, k, pos = 0
    cdef Py_ssize_t nnz = indptr[n] - indptr[0] if n > 0 else 0
    buffer = np.empty(n * (m * (MAX_CHARS + 1) + 1) + nnz * (MAX_CHARS + 12), dtype=np.uint8)
    cdef unsigned char[::1] text = buffer
    cdef char* out = <char*>&text[0] if text.shape[0] > 0 else NULL
    with nogil:
        for r in range(n):
            pos += _write_row(coef, r, out + pos, printf_g17)
            for k in range(indptr[r], indptr[r + 1]):
                if not printf_g17:
                    out[pos] = b' '
                    pos += 1
                pos += _write_index(<int64_t>indices[k] + index_base, out + pos)
                out[pos] = b':'
                pos += 1
                pos += _write_value(values[k], out + pos, printf_g17)
            out[pos] = b'\n'
            pos += 1
    return buffer[:pos]


def format_double(double value, bint printf_g17=False):
    """repr(value) computed by write_double, or "%.17g" % value by write_printf_g17 (for
    tests)."""
    cdef char out[32]
    cdef Py_ssize_t n = write_printf_g17(value, out) if printf_g17 else write_double(value, out)
    return out[:n].decode("ascii")


# ---------------------------------------------------------------------------------------------
# LIBSVM data lines (bsvm-scale's output)
# ---------------------------------------------------------------------------------------------

# The %g texts of at most G_TABLE_SLOTS / 2 distinct values are kept (a table of 12 bytes per
# slot, 16 bytes of text per value): scaled data hold few distinct values (mnist's 256 pixel
# levels); past this many, the values not yet seen are formatted one call at a time.
cdef Py_ssize_t G_TABLE_SLOTS = 1 << 20
cdef Py_ssize_t G_TEXT_BYTES = 16          # "%g" writes at most 13 ("-1.23457e-308")


cdef inline Py_ssize_t _write_g(double value, char* out) noexcept nogil:
    """Write value as C's printf "%g" (svm-scale's values); return the length."""
    return snprintf(out, G_TEXT_BYTES, "%g", value)


cdef inline Py_ssize_t _write_short(double value, char* out) noexcept nogil:
    """repr(value) without a trailing ".0" (an integral value as an integer); return the
    length."""
    cdef Py_ssize_t n = write_double(value, out)
    if n >= 2 and out[n - 2] == b'.' and out[n - 1] == b'0':
        n -= 2
    return n


def format_libsvm_rows_ascii(const double[:] labels, const int64_t[:] indptr,
                             const int32_t[:] indices, const double[:] values,
                             bint exact=False):
    """LIBSVM data lines "label index:value ... " of a CSR matrix (0-based indices written
    1-based) in a uint8 array, byte for byte as svm-scale writes them (its printf calls
    "%.17g " for the label and "%d:%g " per value, then a newline: so every line ends in a
    space): labels as "%.17g", values as "%g" (6 significant digits), or with exact as repr
    writes them without a trailing ".0" (they read back as the same doubles). Runs
    without the GIL. The "%g" text of each distinct value is made once and looked up by the
    value's bits (snprintf costs about 0.2 µs a call; scaled data hold few distinct values)."""
    cdef Py_ssize_t n = labels.shape[0], r, k, pos = 0, length, used = 0, slot
    cdef Py_ssize_t nnz = indptr[n] - indptr[0] if n > 0 else 0
    # a table of twice the values (a power of two, 16 to G_TABLE_SLOTS slots): small blocks
    # do not pay for a large one
    cdef int shift = 60
    while (<Py_ssize_t>1 << (64 - shift)) < min(2 * nnz, G_TABLE_SLOTS):
        shift -= 1
    cdef Py_ssize_t slots = <Py_ssize_t>1 << (64 - shift)
    cdef uint64_t bits, mask = slots - 1
    cdef double v
    buffer = np.empty(n * (MAX_CHARS + 2) + nnz * (MAX_CHARS + 13), dtype=np.uint8)
    cdef unsigned char[::1] text = buffer
    cdef char* out = <char*>&text[0] if text.shape[0] > 0 else NULL
    keys_array = np.empty(slots if not exact and nnz > 0 else 0, dtype=np.uint64)
    codes_array = np.full(keys_array.shape[0], -1, dtype=np.int32)
    texts_array = np.empty((slots // 2 if keys_array.shape[0] else 0, G_TEXT_BYTES),
                           dtype=np.uint8)
    cdef uint64_t[::1] keys = keys_array
    cdef int32_t[::1] codes = codes_array
    cdef unsigned char[:, ::1] texts = texts_array
    with nogil:
        for r in range(n):
            pos += write_printf_g17(labels[r], out + pos)
            for k in range(indptr[r], indptr[r + 1]):
                out[pos] = b' '
                pos += 1
                pos += _write_index(<int64_t>indices[k] + 1, out + pos)
                out[pos] = b':'
                pos += 1
                v = values[k]
                if exact:
                    pos += _write_short(v, out + pos)
                    continue
                memcpy(&bits, &v, 8)
                # open addressing, Fibonacci hashing of the bits; the table is at most half
                # full, so every probe sequence reaches the value's slot or an empty one
                slot = <Py_ssize_t>(((bits * <uint64_t>0x9E3779B97F4A7C15) >> shift) & mask)
                while codes[slot] >= 0 and keys[slot] != bits:
                    slot = (slot + 1) & mask
                if codes[slot] >= 0:
                    length = texts[codes[slot], G_TEXT_BYTES - 1]
                    memcpy(out + pos, &texts[codes[slot], 0], length)
                    pos += length
                elif used < slots // 2:
                    length = _write_g(v, <char*>&texts[used, 0])
                    texts[used, G_TEXT_BYTES - 1] = <unsigned char>length
                    keys[slot] = bits
                    codes[slot] = <int32_t>used
                    used += 1
                    memcpy(out + pos, &texts[used - 1, 0], length)
                    pos += length
                else:
                    pos += _write_g(v, out + pos)
            out[pos] = b' '
            out[pos + 1] = b'\n'
            pos += 2
    return buffer[:pos]
