"""Feature scaling in the conventions of LIBSVM's svm-scale, plus standardisation.

Min-max scaling (svm-scale's rule, feature by feature, implicit zeros included in min and max):

* v == min → lower, v == max → upper, otherwise lower + (upper − lower)·(v − min)/(max − min);
  values outside [min, max] (test data restored with -r) are extrapolated, not clipped;
* a feature with min == max (constant, or absent from every row) is left out of the output;
* a value is written only when its scaled value is non-zero, so with ``-l 0`` sparse data stay
  sparse (with the default ``-l -1`` every implicit zero becomes −1 and the data densify);
* labels are scaled only with ``-y y_lower y_upper`` (same rule over the labels).

Standardisation (``--standardize``): z = (v − mean)/sd with the mean and the population standard
deviation (ddof 0) over all rows, implicit zeros included; features with sd = 0 are left out. A
zero becomes −mean/sd, so standardised data are dense.

Parameter files. Min-max files are svm-scale's (``-s``/``-r`` interchangeable with it)::

    y                      (only with -y)
    y_lower y_upper
    y_min y_max
    x
    lower upper
    index min max          (one line per kept feature, ascending)

Standardisation files replace the ``x`` section with ``standardize`` followed by
``index mean sd`` lines. Numbers are written with %.17g (as svm-scale does), so a restore
reproduces the training transform exactly. Features not listed in a restore file are dropped
(svm-scale scales them to 0).

Scaled values are written as svm-scale writes them, with %g (6 significant digits: the output
is about half the size of exact digits); ``precise=True`` (bsvm-scale --precise) writes the
shortest form that reads back to the same double instead. Labels are written with %.17g, as
svm-scale does.
"""
import contextlib
import math

import numpy as np
import scipy.sparse as sp

from budgetsvm._format import format_libsvm_rows_ascii
from budgetsvm.errors import BsvmError, printable_name
from budgetsvm.fileio import DECOMPRESSION_ERRORS, open_input
from budgetsvm.io import MAX_INDEX

# Dense fill of densified features is built at most this many entries at a time.
MAX_FILL_ENTRIES = 1 << 22
# Per-feature statistics and parameters are arrays over every index up to the largest, as
# svm-scale keeps them; beyond this many bytes a file is refused rather than left to exhaust
# the memory. Bytes per index at the peak (measured, rounded up): the first pass of min-max
# scaling, of --standardize (its moments and their temporary copies), and a restore file's
# parameters.
MAX_FEATURE_BYTES = 4 * 1024 ** 3
FEATURE_BYTES = {"minmax": 56, "standardize": 80, "restore": 16}


def check_width(width, where, kind="standardize"):
    """Raise ScaleError when per-feature arrays up to index ``width`` would be too large."""
    needed = FEATURE_BYTES[kind] * int(width)
    if needed > MAX_FEATURE_BYTES:
        raise ScaleError(f"{where}feature index {width} would need {needed / 1024 ** 3:.1f} GB "
                         "of per-feature statistics (one entry per index up to the largest, "
                         "as svm-scale keeps them)")


class ScaleError(BsvmError):
    pass


class Scaling:
    """A feature transform over 1-based feature indices 1..width.

    kind: 'minmax' (a = min, b = max; lower, upper) or 'standardize' (a = mean, b = sd);
    a, b: float64 arrays (width,) indexed by column (index − 1); keep: bool (width,);
    listed: bool (width,), the columns a restore file lists (default: keep), kept or not (a
    listed min = max is left out without svm-scale's warning for unlisted features);
    y: None or (y_lower, y_upper, y_min, y_max).
    """

    def __init__(self, kind, a, b, keep, lower=-1.0, upper=1.0, y=None, listed=None):
        self.kind = kind
        self.a = np.asarray(a, dtype=np.float64)
        self.b = np.asarray(b, dtype=np.float64)
        self.keep = np.asarray(keep, dtype=bool)
        self.listed = self.keep if listed is None else np.asarray(listed, dtype=bool)
        self.lower, self.upper = float(lower), float(upper)
        self.y = y

    @property
    def width(self):
        return len(self.a)

    def values(self, v, cols):
        """Transformed values of v (array) in columns cols (kept columns only)."""
        a, b = self.a[cols], self.b[cols]
        # overflow (limits or parameters near the range of a double) is reported by transform
        if self.kind == "standardize":
            with np.errstate(over="ignore", invalid="ignore"):
                return (v - a) / b
        lo, up = self.lower, self.upper
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            mid = lo + (up - lo) * (v - a) / (b - a)
        return np.where(v == a, lo, np.where(v == b, up, mid))

    def labels(self, y):
        if self.y is None:
            return y
        y_lower, y_upper, y_min, y_max = self.y
        differs = y != y_min if y_min == y_max else None
        if differs is not None and differs.any():
            # svm-scale divides by y_max − y_min = 0 here and writes inf
            label = float(y[np.argmax(differs)])
            raise ScaleError(f"label {label:g} cannot be scaled: the y range is the single value "
                             f"{y_min:g} (the labels it was taken from were all equal)")
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            mid = y_lower + (y_upper - y_lower) * (y - y_min) / (y_max - y_min)
        return np.where(y == y_min, y_lower, np.where(y == y_max, y_upper, mid))


# ---------------------------------------------------------------------------------------------
# Statistics (first pass)
# ---------------------------------------------------------------------------------------------

class _Stats:
    """Running per-feature statistics over blocks (implicit zeros counted)."""

    def __init__(self, moments=True):
        self.moments = moments      # mean and m2: only --standardize needs them
        self.n = 0
        self.width = 0
        self.vmin = np.zeros(0)
        self.vmax = np.zeros(0)
        self.count = np.zeros(0, dtype=np.int64)
        self.mean = np.zeros(0)
        self.m2 = np.zeros(0)
        self.y_min, self.y_max = math.inf, -math.inf
        self.nnz = 0

    def _grow(self, width):
        if width <= self.width:
            return
        check_width(width, "", "standardize" if self.moments else "minmax")
        extra = width - self.width
        self.vmin = np.concatenate([self.vmin, np.full(extra, np.inf)])
        self.vmax = np.concatenate([self.vmax, np.full(extra, -np.inf)])
        self.count = np.concatenate([self.count, np.zeros(extra, dtype=np.int64)])
        if self.moments:
            self.mean = np.concatenate([self.mean, np.zeros(extra)])
            self.m2 = np.concatenate([self.m2, np.zeros(extra)])
        self.width = width

    def add(self, X, y):
        X = sp.csr_matrix(X)
        nb = X.shape[0]
        if nb == 0:
            return
        self._grow(X.shape[1])
        w = self.width
        cols, vals = X.indices, X.data
        np.minimum.at(self.vmin, cols, vals)
        np.maximum.at(self.vmax, cols, vals)
        self.nnz += len(vals)
        total = self.n + nb
        if not self.moments:
            # the columns of this block only: min-max scaling of data with large, scattered
            # indices (hashed features) costs nothing per index of the whole width
            present, counts = np.unique(cols, return_counts=True)
            self.count[present] += counts
            self.n = total
        else:
            cnt = np.bincount(cols, minlength=w)
            self.count += cnt
            # Chan et al.'s pairwise update of mean and sum of squared deviations (an overflow
            # here is reported by fit_scaling when it standardizes)
            with np.errstate(over="ignore", invalid="ignore"):
                bmean = np.bincount(cols, weights=vals, minlength=w) / nb
                bm2 = np.bincount(cols, weights=(vals - bmean[cols]) ** 2, minlength=w) + \
                    (nb - cnt) * bmean ** 2
                delta = bmean - self.mean
                self.mean = self.mean + delta * (nb / total)
                self.m2 = self.m2 + bm2 + delta ** 2 * (self.n * nb / total)
            self.n = total
        if len(y):
            self.y_min = min(self.y_min, float(y.min()))
            self.y_max = max(self.y_max, float(y.max()))

    def minmax(self):
        has_zero = self.count < self.n
        vmin = np.where(has_zero, np.minimum(self.vmin, 0.0), self.vmin)
        vmax = np.where(has_zero, np.maximum(self.vmax, 0.0), self.vmax)
        return vmin, vmax


def fit_scaling(blocks, lower=-1.0, upper=1.0, y_range=None, standardize=False):
    """Scaling fitted on an iterable of (X, y) blocks; returns (Scaling, n_rows, nnz)."""
    stats = _Stats(moments=standardize)
    for X, y in blocks:
        stats.add(X, y)
    if stats.n == 0:
        raise ScaleError("no data (the file is empty or has only comments)")
    y = None
    if y_range is not None:
        y = (float(y_range[0]), float(y_range[1]), stats.y_min, stats.y_max)
    if standardize:
        sd = np.sqrt(np.maximum(stats.m2 / stats.n, 0.0))
        overflow = ~(np.isfinite(sd) & np.isfinite(stats.mean))
        if overflow.any():
            raise ScaleError(f"feature {int(np.argmax(overflow)) + 1}: its values are too large "
                             "to standardize (their variance is beyond the range of a double)")
    vmin, vmax = stats.minmax()
    if standardize:
        # constant by the exact min and max: the rounded running variance of a constant
        # feature can be 1e-14 instead of 0, which kept it as a column of made-up values
        # (and a restored test value a little off became 1e15)
        return Scaling("standardize", stats.mean, sd, (vmin != vmax) & (sd > 0), y=y), \
            stats.n, stats.nnz
    return Scaling("minmax", vmin, vmax, vmin != vmax, lower, upper, y), stats.n, stats.nnz


# ---------------------------------------------------------------------------------------------
# Transform (second pass)
# ---------------------------------------------------------------------------------------------

def transform(scaling, X, y):
    """(X', y') for a block: CSR with scaling.width columns, zeros not stored."""
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sort_indices()
    n, width = X.shape[0], scaling.width
    if X.shape[1] > width:
        X = X[:, :width]
    elif X.shape[1] < width:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(n, width))
    keep = scaling.keep
    rows = np.repeat(np.arange(n), np.diff(X.indptr))
    cols, vals = X.indices, X.data
    sel = keep[cols]
    rows, cols, vals = rows[sel], cols[sel], scaling.values(vals[sel], cols[sel])
    kept = np.flatnonzero(keep)
    zero_value = scaling.values(np.zeros(len(kept)), kept)
    dense = kept[zero_value != 0]
    out = sp.csr_matrix((vals, (rows, cols)), shape=(n, width))
    if len(dense):
        z = zero_value[zero_value != 0]
        pos = np.full(width, -1)
        pos[dense] = np.arange(len(dense))
        fill_rows = max(1, MAX_FILL_ENTRIES // len(dense))
        parts = []
        for start in range(0, n, fill_rows):
            stop = min(n, start + fill_rows)
            fill = np.tile(z, (stop - start, 1))
            inside = (rows >= start) & (rows < stop) & (pos[cols] >= 0)
            fill[rows[inside] - start, pos[cols[inside]]] = 0.0    # explicit values win
            F = sp.csr_matrix(fill)
            parts.append(sp.csr_matrix((F.data, dense[F.indices], F.indptr),
                                       shape=(stop - start, width)))
        out = out + sp.vstack(parts, format="csr")
    out.eliminate_zeros()
    out.sort_indices()
    labels = scaling.labels(np.asarray(y, dtype=np.float64))
    _check_finite(out.data, out.indices, "feature")
    _check_finite(labels, None, "label")
    return out, labels


def _check_finite(values, columns, what):
    """Scaled values beyond the range of a double (inf, or nan from inf − inf) come from limits
    or parameters near it (-u 1e308, a restored range of 1e308): an error, not inf in the data."""
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.argmax(bad))
        where = f"{what} {int(columns[i]) + 1}" if columns is not None else f"a {what}"
        raise ScaleError(f"scaling {where} gives {values[i]:g}: beyond the range of a double "
                         "(the scaling limits or parameters are too large)")


def format_rows(X, y, precise=False, zero_based=False):
    """LIBSVM-format lines of (X, y) as ASCII bytes, as svm-scale writes them: ``label
    index:value ... `` per row (each item followed by a space); labels as "%.17g", values as
    "%g", or exactly (shortest round-trip form, no trailing ".0") when ``precise``; indices
    0-based (column j is index j) when ``zero_based``, as the file read."""
    X = sp.csr_matrix(X)
    indices = X.indices.astype(np.int32, copy=False)
    if zero_based:
        indices = indices - np.int32(1)     # the formatter writes column + 1
    return format_libsvm_rows_ascii(np.ascontiguousarray(y, dtype=np.float64),
                                    X.indptr.astype(np.int64, copy=False), indices,
                                    np.ascontiguousarray(X.data, dtype=np.float64),
                                    precise).tobytes()


# ---------------------------------------------------------------------------------------------
# Parameter files
# ---------------------------------------------------------------------------------------------

def dumps_scaling(scaling, zero_based=False):
    out = []
    if scaling.y is not None:
        out += ["y", "%.17g %.17g" % scaling.y[:2], "%.17g %.17g" % scaling.y[2:]]
    if scaling.kind == "standardize":
        out.append("standardize")
    else:
        out += ["x", "%.17g %.17g" % (scaling.lower, scaling.upper)]
    for j in np.flatnonzero(scaling.keep).tolist():
        out.append("%d %.17g %.17g" % (j + (0 if zero_based else 1), scaling.a[j],
                                       scaling.b[j]))
    return "\n".join(out) + "\n"


def load_scaling(path, zero_based=False):
    """Read an svm-scale parameter file (or our standardisation file); zero_based: its feature
    indices start at 0 (written by bsvm-scale --zero-based -s)."""
    base = 0 if zero_based else 1
    stream = open_input(path, error=lambda p, line, msg: ScaleError(
        f"{printable_name(p)}: {msg}"))
    try:
        raw = stream.read()
    except DECOMPRESSION_ERRORS:
        raise ScaleError(f"{printable_name(path)}: cannot read (corrupt or truncated "
                         "compressed stream?)") from None
    finally:
        with contextlib.suppress(*DECOMPRESSION_ERRORS):
            stream.close()
    try:
        lines = raw.decode("ascii").splitlines()
    except UnicodeDecodeError:
        raise ScaleError(f"{path}: not a scaling parameter file (not plain text)") from None

    def fail(no, msg):
        raise ScaleError(f"{path}:{no}: {msg}")

    def numbers(no, count, what):
        parts = lines[no - 1].split() if no <= len(lines) else []
        if len(parts) != count:
            fail(no, f"expected {what}")
        try:
            vals = [float(p) for p in parts]
        except ValueError:
            fail(no, f"expected {what}, got {lines[no - 1].strip()!r}")
        if not all(math.isfinite(v) for v in vals):
            fail(no, f"{what} must be finite")
        return vals

    no = 1
    y = None
    if lines and lines[0].strip() == "y":
        y_lower, y_upper = numbers(2, 2, "y_lower y_upper")
        y_min, y_max = numbers(3, 2, "y_min y_max")
        y = (y_lower, y_upper, y_min, y_max)
        no = 4
    if no > len(lines):
        fail(no, "missing 'x' (or 'standardize') section")
    head = lines[no - 1].strip()
    if head == "x":
        kind = "minmax"
        lower, upper = numbers(no + 1, 2, "lower upper")
        no += 2
    elif head == "standardize":
        kind, lower, upper = "standardize", -1.0, 1.0
        no += 1
    else:
        fail(no, f"expected 'x' or 'standardize', got {head[:40]!r}")
    entries = {}
    prev = base - 1
    for i in range(no, len(lines) + 1):
        if not lines[i - 1].strip():
            continue
        parts = lines[i - 1].split()
        if len(parts) != 3 or not parts[0].lstrip("+").isdigit():
            fail(i, "expected 'index min max'" if kind == "minmax" else "expected 'index mean sd'")
        index = int(parts[0])
        if index <= prev:
            fail(i, f"indices must be ascending and >= {base}, got {index}")
        if index > MAX_INDEX:
            fail(i, f"index {index} is beyond the largest of the LIBSVM format ({MAX_INDEX})")
        check_width(index + 1 - base, f"{path}:{i}: ", "restore")
        a, b = numbers(i, 3, "index and two numbers")[1:]
        if kind == "standardize" and not b > 0:
            fail(i, f"sd must be positive, got {b:g}")
        entries[index] = (a, b)
        prev = index
    width = prev + 1 - base
    a, b = np.zeros(width), np.zeros(width)
    keep = np.zeros(width, dtype=bool)
    listed = np.zeros(width, dtype=bool)
    for index, (lo, hi) in entries.items():
        a[index - base], b[index - base] = lo, hi
        keep[index - base] = lo != hi if kind == "minmax" else True
        listed[index - base] = True
    return Scaling(kind, a, b, keep, lower, upper, y, listed)
