"""budgetsvm._format writes doubles exactly as Python's repr(float) does (the oracle): the
shortest string that reads back as the same double, nearest on ties, in CPython's layout; for
LIBSVM and LIBLINEAR model files, exactly as Python's "%.17g" % x does; and LIBSVM data lines
(bsvm-scale's output) with Python's "%g" % x, as svm-scale's printf writes them."""
import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm._format import (format_double, format_libsvm_rows_ascii, format_rows,
                               format_rows_ascii, format_sv_rows_ascii)


def same_as_repr(values):
    values = np.asarray(values, dtype=np.float64).ravel()
    ours = format_rows(values.reshape(-1, 1)).split("\n")[:-1]
    theirs = [repr(v) for v in values.tolist()]
    wrong = [(a, b) for a, b in zip(ours, theirs) if a != b]
    assert len(ours) == len(theirs) and not wrong, wrong[:5]


@pytest.mark.parametrize("value", [
    0.0, -0.0, 1.0, -1.0, 0.1, 0.3, 2 / 3, 100.0, 123.456, 1e15, 1e16, 1e-4, 1e-5, 1.5e-5,
    1e22, 1e23, 9.999999999999999e22, 9007199254740993.0, 123456789012345680.0, 2.0 ** 63,
    5e-324, 2.2250738585072014e-308, 2.225073858507201e-308, 1.7976931348623157e308,
    float("inf"), float("-inf"), float("nan"), -float("nan")])
def test_special_values(value):
    assert format_double(value) == repr(value)


def test_random_bit_patterns():
    # every exponent and mantissa pattern, both signs
    rng = np.random.default_rng(16)
    bits = rng.integers(0, 2 ** 63, 1_000_000, dtype=np.uint64)
    values = (bits | (rng.integers(0, 2, bits.size, dtype=np.uint64) << np.uint64(63))
              ).view(np.float64)
    same_as_repr(values[np.isfinite(values)])


@pytest.mark.parametrize("scale", [1e-300, 1e-8, 1e-3, 1.0, 1e5, 1e12, 1e300])
def test_model_like_values(scale):
    rng = np.random.default_rng(int(np.log10(scale)) + 400)
    values = rng.standard_normal(200_000) * scale
    same_as_repr(values)
    same_as_repr(np.round(values / scale, 3) * scale)       # short decimals
    same_as_repr(np.float32(values / scale).astype(np.float64))   # 24-bit mantissas


def test_powers_integers_and_their_neighbours():
    # powers of two (the interval is asymmetric there), powers of ten (exact decimal ties
    # and the fixed/exponent switch at 1e-4, 1e-5, 1e16), integers, subnormals
    twos = np.ldexp(1.0, np.arange(-1074, 1024))
    tens = 10.0 ** np.arange(-323, 309, dtype=np.float64)
    for base in (twos, tens, np.arange(-70000.0, 70000.0), np.arange(1, 4096) * 5e-324):
        base = base[np.isfinite(base) & (base != 0)]
        for values in (base, np.nextafter(base, 0), np.nextafter(base, np.inf), -base):
            same_as_repr(values[np.isfinite(values)])
    halves = np.arange(1, 20001) + 0.5                  # x.5 ties of short decimals
    same_as_repr(np.concatenate([halves, halves / 1024, halves * 1e-7]))


def test_rows_are_repr_joined_by_spaces():
    rng = np.random.default_rng(1)
    W = rng.standard_normal((300, 7)) * np.where(rng.random((300, 7)) < 0.5, 0.0, 1.0)
    for rows in (W, W.T, W[::3, 1:5], np.zeros((0, 4)), np.zeros((3, 1))):
        assert format_rows(rows) == "".join(" ".join(map(repr, row)) + "\n"
                                            for row in rows.tolist())


def test_sv_rows_are_coefficients_then_one_based_pairs_as_repr():
    rng = np.random.default_rng(2)
    sv = sp.random(200, 3000, density=0.01, format="csr", random_state=3) * 1e3
    sv.data[::7] *= 1e-300                              # subnormal and tiny values too
    coef = rng.standard_normal((200, 3))
    for start, stop in ((0, 200), (37, 91), (5, 5)):
        expected = "".join(
            " ".join([repr(c) for c in coef[r].tolist()]
                     + [f"{j + 1}:{v!r}" for j, v in zip(
                         sv.indices[sv.indptr[r]:sv.indptr[r + 1]].tolist(),
                         sv.data[sv.indptr[r]:sv.indptr[r + 1]].tolist())]) + "\n"
            for r in range(start, stop))
        text = format_sv_rows_ascii(coef[start:stop], sv.indptr[start:stop + 1].astype(np.int64),
                                    sv.indices.astype(np.int32), sv.data)
        assert text.tobytes().decode("ascii") == expected


def test_printf_g17_is_pythons_percent_format():
    # the LIBSVM/LIBLINEAR files' numbers: every exponent and mantissa pattern, both signs,
    # signed zeros, subnormals, the extremes and the switches to exponent notation
    rng = np.random.default_rng(17)
    bits = rng.integers(0, 2 ** 64, 200_000, dtype=np.uint64)
    values = bits.view(np.float64)
    special = [0.0, -0.0, 0.1, 1e-4, 1e-5, 1e16, 1e17, 123456789012345678.0, 5e-324,
               2.2250738585072014e-308, 1.7976931348623157e308, -2.0 ** 63]
    for value in special + values[np.isfinite(values)].tolist():
        assert format_double(value, printf_g17=True) == "%.17g" % value


def test_printf_g17_rows_are_liblinear_and_libsvm_lines():
    # LIBLINEAR's weight lines and LIBSVM's SV lines: every number followed by a space
    rng = np.random.default_rng(3)
    W = rng.standard_normal((300, 7)) * np.where(rng.random((300, 7)) < 0.5, 0.0, 1e-3)
    for rows in (W, W.T, W[::3, 1:5], np.zeros((0, 4))):
        assert format_rows_ascii(rows, printf_g17=True).tobytes().decode("ascii") == "".join(
            "".join("%.17g " % v for v in row) + "\n" for row in rows.tolist())
    sv = sp.random(200, 3000, density=0.01, format="csr", random_state=4) * 1e3
    sv.data[::7] *= 1e-300
    coef = rng.standard_normal((200, 2))
    for start, stop in ((0, 200), (37, 91), (5, 5)):
        expected = "".join(
            "".join(["%.17g " % c for c in coef[r].tolist()]
                    + ["%d:%.17g " % (j + 1, v) for j, v in zip(
                        sv.indices[sv.indptr[r]:sv.indptr[r + 1]].tolist(),
                        sv.data[sv.indptr[r]:sv.indptr[r + 1]].tolist())]) + "\n"
            for r in range(start, stop))
        text = format_sv_rows_ascii(coef[start:stop], sv.indptr[start:stop + 1].astype(np.int64),
                                    sv.indices.astype(np.int32), sv.data, printf_g17=True)
        assert text.tobytes().decode("ascii") == expected


def libsvm_lines(labels, X, exact):
    """The oracle: svm-scale's printf calls, "%.17g " for the label and "%d:%g " per value
    (1-based indices, in stored order; repr without a trailing ".0" for exact), then a
    newline."""
    def value(v):
        if not exact:
            return "%g" % v
        text = repr(v)
        return text[:-2] if text.endswith(".0") else text
    X = sp.csr_matrix(X)
    return "".join(
        "%.17g " % label + "".join(f"{j + 1}:{value(v)} " for j, v in
                                   zip(X.indices[X.indptr[i]:X.indptr[i + 1]].tolist(),
                                       X.data[X.indptr[i]:X.indptr[i + 1]].tolist())) + "\n"
        for i, label in enumerate(np.asarray(labels).tolist())).encode("ascii")


def ours(labels, X, exact):
    X = sp.csr_matrix(X)
    return format_libsvm_rows_ascii(np.asarray(labels, dtype=np.float64),
                                    X.indptr.astype(np.int64), X.indices.astype(np.int32),
                                    X.data, exact).tobytes()


@pytest.mark.parametrize("exact", [False, True])
def test_libsvm_lines_are_svm_scale_lines(exact):
    # few distinct values repeated (the table of %g texts serves them), signed zeros, every
    # magnitude, large indices, empty rows, labels of every kind
    rng = np.random.default_rng(5)
    levels = np.concatenate([np.arange(256) / 255 * 2 - 1, [-0.0, 1e-300, -1e300, 5e-324,
                                                            123456.5, 1234567.0, 0.1 + 0.2]])
    X = sp.random(300, 3000, density=0.05, random_state=rng, format="csr")
    X.data = rng.choice(levels, X.nnz)
    X = sp.vstack([X, sp.csr_matrix((2, 3000))], format="csr")
    wide = sp.csr_matrix(([0.5, -2.0], [0, 2**31 - 2], [0, 2]), shape=(1, 2**31 - 1))
    labels = rng.choice([1.0, -1.0, 0.5, 1e20, -3.0, 2.0**60], X.shape[0])
    assert ours(labels, X, exact) == libsvm_lines(labels, X, exact)
    assert ours([7.0], wide, exact) == b"7 1:0.5 2147483647:-2 \n"


def test_libsvm_lines_with_more_distinct_values_than_the_table_holds():
    # past 2^19 distinct values the rest are formatted one at a time: the same text
    rng = np.random.default_rng(6)
    n, d = 7000, 100
    X = sp.csr_matrix(rng.standard_normal((n, d)) * 10.0 ** rng.integers(-30, 30, (n, d)))
    assert X.nnz > 2**19 + 100_000 and len(np.unique(X.data)) == X.nnz
    labels = np.arange(n, dtype=np.float64)
    assert ours(labels, X, False) == libsvm_lines(labels, X, False)
