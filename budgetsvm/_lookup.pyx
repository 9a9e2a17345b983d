"""Lookup merging (docs/ALGORITHMS.md §2) and the canonical golden-section searches of §1.5.3.

The interface for other Cython modules is budgetsvm/_lookup.pxd. This module holds

* ``merge_gss`` / ``gss_merge_h`` / ``robust_merge_h``: the GSS for the merge position h,
  the runtime [0,1] scan and the robust half-interval variant;
* the two tables WD(m,κ) (401×401) and the folded H(m,κ) for m ∈ [½,1] (201×401), computed
  at every node with the robust GSS at ε = 1e-10, lazily, once per process (``get_tables``,
  its rows shared out among the threads that need the tables), or read from the user's cache
  folder where an earlier process saved them;
* vectorised Python wrappers, for tests and diagnostics.
"""
import threading
import time

import numpy as np

cimport numpy as cnp
from libc.math cimport exp, log

cnp.import_array()

cdef extern from *:
    """
    /* tolerance of the table precomputation (docs/ALGORITHMS.md §0.6) */
    #define BSVM_LOOKUP_TABLE_EPS 1e-10
    """
    double TABLE_EPS "BSVM_LOOKUP_TABLE_EPS"

GRID_INTERVALS = LOOKUP_INTERVALS
TABLE_EPS_VALUE = TABLE_EPS


# ---------------------------------------------------------------------------------------------
# Golden-section search
# ---------------------------------------------------------------------------------------------

cdef double merge_gss(double m, double logk, double lo, double hi, double eps,
                      int* iters) noexcept nogil:
    # binary merging: F = s_{m,κ}, i.e. a1 = m, a2 = 1 − m (the search itself: _lookup.pxd)
    return golden_section_max(m, 1.0 - m, logk, lo, hi, eps, False, iters)


cdef inline double _clamp01(double m) noexcept nogil:
    if not (m > 0.0):                  # also NaN
        return 0.0
    return 1.0 if m > 1.0 else m


cdef double gss_merge_h(double m, double kappa, double eps) noexcept nogil:
    m = _clamp01(m)
    if kappa >= 1.0:
        return 0.5                     # identical points: s is constant, take ½
    if not (kappa > 0.0):
        return 1.0 if m >= 0.5 else 0.0   # κ = 0: keep the larger point (removal)
    return merge_gss(m, log(kappa), 0.0, 1.0, eps, NULL)


cdef double robust_merge_h(double m, double kappa, double eps) noexcept nogil:
    m = _clamp01(m)
    if kappa >= 1.0:
        return 0.5
    if not (kappa > 0.0):
        return 1.0 if m >= 0.5 else 0.0
    # s(h) − s(1−h) = (2m−1)(κ^((1−h)²) − κ^(h²)): the global maximum lies in the half on the
    # side of the larger weight, and s is unimodal on each half.
    if m >= 0.5:
        return merge_gss(m, log(kappa), 0.5, 1.0, eps, NULL)
    return merge_gss(m, log(kappa), 0.0, 0.5, eps, NULL)


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------

cdef inline void _table_node(Py_ssize_t i, Py_ssize_t j, double* h, double* wd) noexcept nogil:
    """h and WD at the node m = i/400, κ = j/400 (m ≥ ½): the robust GSS at ε = 1e-10."""
    cdef double m = <double>i / LOOKUP_INTERVALS, kappa = <double>j / LOOKUP_INTERVALS
    if j == LOOKUP_INTERVALS:
        # κ = 1: every h is optimal and WD = 0. The folded table stores the limit h → m
        # (κ → 1⁻) rather than ½, so the last κ-cell interpolates continuously.
        h[0] = m
        wd[0] = 0.0
    else:
        h[0] = robust_merge_h(m, kappa, TABLE_EPS)
        wd[0] = merge_wd(m, kappa, h[0])


cdef void _build_rows(double* wd, double* hf, Py_ssize_t first, Py_ssize_t stop) noexcept nogil:
    """Rows m = first/400 .. (stop−1)/400 (first ≥ 200) of the folded H and of WD."""
    cdef Py_ssize_t i, j, half = LOOKUP_INTERVALS // 2
    for i in range(first, stop):
        for j in range(LOOKUP_NODES):
            _table_node(i, j, &hf[(i - half) * LOOKUP_NODES + j], &wd[i * LOOKUP_NODES + j])


cdef void _mirror_rows(double* wd) noexcept nogil:
    """WD rows m < ½ are the mirror images WD(m,κ) = WD(1−m,κ) (Lemma 1's symmetry, exact in
    arithmetic): 80,601 searches instead of 161,201. tests/test_lookup.py checks the mirrored
    rows against independent searches at m < ½ (on [0,½]) and a dense h-grid."""
    cdef Py_ssize_t i, j
    for i in range(LOOKUP_INTERVALS // 2):
        for j in range(LOOKUP_NODES):
            wd[i * LOOKUP_NODES + j] = wd[(LOOKUP_INTERVALS - i) * LOOKUP_NODES + j]


cdef class MergeLookup:
    """The two merge tables of §2.3 (read-only numpy arrays) and their interpolation."""

    def __cinit__(self):
        # Allocated here, filled by get_tables (_TableBuild): every node is computed once, by
        # whichever thread claims its row.
        wd = np.empty((LOOKUP_NODES, LOOKUP_NODES), dtype=np.float64)
        hf = np.empty((LOOKUP_HALF_NODES, LOOKUP_NODES), dtype=np.float64)
        self.wd_table = wd
        self.h_table = hf
        self.tables.wd = <double*>cnp.PyArray_DATA(wd)
        self.tables.h_folded = <double*>cnp.PyArray_DATA(hf)

    def _fill_rows(self, Py_ssize_t first, Py_ssize_t stop):
        cdef double* wd = <double*>self.tables.wd
        cdef double* hf = <double*>self.tables.h_folded
        with nogil:
            _build_rows(wd, hf, first, stop)

    def _finish(self, double seconds, double cpu_seconds):
        with nogil:
            _mirror_rows(<double*>self.tables.wd)
        self.wd_table.flags.writeable = False
        self.h_table.flags.writeable = False
        self.build_seconds = seconds
        self.build_cpu_seconds = cpu_seconds
        self.from_file = None

    # For tests.
    def wd(self, m, kappa):
        """Lookup-WD: interpolated normalised WD(m, κ), broadcast over arrays."""
        return _vectorised(_OP_LOOKUP_WD, m, kappa, 0.0, &self.tables)

    # For tests.
    def h(self, m, kappa):
        """Lookup-h: interpolated h(m, κ) from the folded table, broadcast over arrays."""
        return _vectorised(_OP_LOOKUP_H, m, kappa, 0.0, &self.tables)

    def __repr__(self):
        origin = (f"read from {self.from_file}" if self.from_file is not None else
                  f"built in {self.build_seconds:.3f} s ({self.build_cpu_seconds:.3f} s CPU)")
        return (f"<MergeLookup {LOOKUP_NODES}x{LOOKUP_NODES} WD, {LOOKUP_HALF_NODES}x"
                f"{LOOKUP_NODES} folded h, {origin}>")


cdef MergeLookup _TABLES = None
# Rows of the folded table handed out per claim (8 of the 201: a few ms each).
BUILD_CHUNK_ROWS = 8


class _TableBuild:
    """The build in progress: the rows m ≥ ½ go out in chunks to any thread that asks. The
    parts of one training (folds, one-vs-rest models) each need the tables at their start, so
    the threads that would wait for one builder compute rows with it, and idle workers of the
    pool join in (budgetsvm.threads): the build is no longer a serial step of -n runs."""

    def __init__(self):
        self.path = None               # where the finished tables are saved (cache_path)
        self.tables = MergeLookup()
        self.next_row = LOOKUP_INTERVALS // 2
        self.rows_done = 0
        self.start = time.perf_counter()
        self.start_cpu = time.process_time()

    def help(self):
        """Compute chunks of rows until none is left to claim."""
        tables = self.tables
        while True:
            with _build_changed:
                first = self.next_row
                if first >= LOOKUP_NODES:
                    return
                stop = min(first + BUILD_CHUNK_ROWS, LOOKUP_NODES)
                self.next_row = stop
            tables._fill_rows(first, stop)
            with _build_changed:
                self.rows_done += stop - first
                _build_changed.notify_all()


_build_changed = threading.Condition()
_build = None


# ---------------------------------------------------------------------------------------------
# The tables on disk
# ---------------------------------------------------------------------------------------------
# The build takes about 0.13 s of CPU, a tenth of a default bsgd run on ijcnn1, in every process
# that merges with a table. A built table is therefore kept in the user's cache folder and read
# back (about 0.02 s of CPU) by later processes. Its name carries a digest of this compiled module, so a
# rebuilt module never reads another's tables; the file is written atomically with a digest of
# its tables; a file that is not a regular file, cannot be read, has the wrong shape or digest
# or disagrees with a fresh search at a few nodes is ignored and replaced. BSVM_CACHE_DIR names
# the folder (empty: no file is read or written); by default $XDG_CACHE_HOME/budgetsvm (when
# absolute), else ~/.cache/budgetsvm (when there is a home folder; else nothing is cached).

# Nodes (m index, κ index) of the WD table recomputed to check a cached file, bit for bit.
CHECK_NODES = ((200, 0), (200, 55), (263, 17), (300, 241), (333, 54), (371, 399), (400, 1),
               (250, 400), (211, 333), (399, 2), (287, 123), (355, 300))


def cache_folder():
    """The folder of the cached tables, or None when caching is off: BSVM_CACHE_DIR='' or no
    absolute folder to use (a relative $XDG_CACHE_HOME is ignored, as the XDG specification
    says; with no home folder, as for a user id without a passwd entry, nothing is cached
    rather than a folder named '~' made in the working directory)."""
    import os
    from pathlib import Path
    folder = os.environ.get("BSVM_CACHE_DIR")
    if folder is not None:
        return Path(os.path.expanduser(folder)) if folder else None
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "budgetsvm"


def cache_path():
    """The file of this build of the module's tables, or None when caching is off (also when
    this module's file cannot be read to name it: caching is only ever an optimisation)."""
    import hashlib
    folder = cache_folder()
    if folder is None:
        return None
    try:
        with open(__file__, "rb") as module:
            digest = hashlib.sha256(module.read()).hexdigest()[:16]
    except OSError:
        return None
    return folder / f"merge-tables-{LOOKUP_NODES}-{digest}.npz"


def _tables_digest(wd, hf):
    """SHA-256 of the two tables' bytes, stored with them: a file edited after it was written
    (the nodes checked below are a dozen of 161,000) is not used."""
    import hashlib
    digest = hashlib.sha256(np.ascontiguousarray(wd).tobytes())
    digest.update(np.ascontiguousarray(hf).tobytes())
    return np.frombuffer(digest.digest(), dtype=np.uint8)


def _read_cached(path):
    """The tables in path as a finished MergeLookup, or None if it is missing or not right."""
    import os
    import stat
    cdef double h, node_wd
    try:
        # a regular file only: np.load of a FIFO would wait for a writer forever
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with np.load(path, allow_pickle=False) as saved:
            wd, hf, digest = saved["wd"], saved["h_folded"], saved["digest"]
    except Exception:                  # missing, unreadable, truncated, not an npz, no digest
        return None
    if (wd.dtype != np.float64 or hf.dtype != np.float64
            or wd.shape != (LOOKUP_NODES, LOOKUP_NODES)
            or hf.shape != (LOOKUP_HALF_NODES, LOOKUP_NODES)
            or not np.array_equal(digest, _tables_digest(wd, hf))):
        return None
    for i, j in CHECK_NODES:
        _table_node(i, j, &h, &node_wd)
        if hf[i - LOOKUP_INTERVALS // 2, j] != h or wd[i, j] != node_wd:
            return None
    tables = MergeLookup()
    tables.wd_table[...] = wd
    tables.h_table[...] = hf
    tables._finish(0.0, 0.0)
    tables.from_file = str(path)
    return tables


def _write_cached(path, MergeLookup tables):
    """Save the tables to path atomically; a folder that cannot be written is not an error."""
    import os
    import tempfile
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".merge-tables-",
                                             suffix=".npz")
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, wd=tables.wd_table, h_folded=tables.h_table,
                         digest=_tables_digest(tables.wd_table, tables.h_table))
            # readable by the other users of a shared BSVM_CACHE_DIR (mkstemp makes it 0600)
            os.chmod(temporary, 0o644)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass


def get_tables():
    """The merge tables of this process (read from the cache folder or built on first call,
    then kept). Threads that call it during the build compute part of it and return when all of
    it is done."""
    global _TABLES, _build
    if _TABLES is not None:
        return _TABLES
    with _build_changed:
        if _TABLES is not None:
            return _TABLES
        if _build is None:
            path = cache_path()
            cached = _read_cached(path) if path is not None else None
            if cached is not None:
                _TABLES = cached
                return _TABLES
            _build = _TableBuild()
            _build.path = path
        build = _build
    from budgetsvm.threads import current_threads, parallel_map
    try:
        parallel_map(lambda _: build.help(), range(current_threads()))
        with _build_changed:
            while build.rows_done < LOOKUP_HALF_NODES:
                _build_changed.wait()
            if _TABLES is None:
                build.tables._finish(time.perf_counter() - build.start,
                                     time.process_time() - build.start_cpu)
                if build.path is not None:
                    _write_cached(build.path, build.tables)
                _TABLES = build.tables
                _build = None
    except BaseException:
        with _build_changed:
            if _build is build:        # interrupted: the next call starts a fresh build
                _build = None
        raise
    return _TABLES


cdef const MergeTables* merge_tables() except NULL:
    cdef MergeLookup t = get_tables()
    return &t.tables


# ---------------------------------------------------------------------------------------------
# Vectorised wrappers (for tests and diagnostics)
# ---------------------------------------------------------------------------------------------

cdef enum:
    _OP_LOOKUP_WD = 0
    _OP_LOOKUP_H = 1
    _OP_GSS_H = 2
    _OP_ROBUST_H = 3


cdef object _vectorised(int op, m, kappa, double eps, const MergeTables* t):
    scalar = np.ndim(m) == 0 and np.ndim(kappa) == 0
    mb, kb = np.broadcast_arrays(np.asarray(m, dtype=np.float64),
                                 np.asarray(kappa, dtype=np.float64))
    cdef double[::1] mm = np.ascontiguousarray(mb).ravel()
    cdef double[::1] kk = np.ascontiguousarray(kb).ravel()
    out = np.empty(mm.shape[0], dtype=np.float64)
    cdef double[::1] o = out
    cdef Py_ssize_t k, n = mm.shape[0]
    with nogil:
        for k in range(n):
            if op == _OP_LOOKUP_WD:
                o[k] = lookup_wd(t, mm[k], kk[k])
            elif op == _OP_LOOKUP_H:
                o[k] = lookup_h(t, mm[k], kk[k])
            elif op == _OP_GSS_H:
                o[k] = gss_merge_h(mm[k], kk[k], eps)
            else:
                o[k] = robust_merge_h(mm[k], kk[k], eps)
    return float(out[0]) if scalar else out.reshape(mb.shape)


# For tests.
def gss_h(m, kappa, double eps=0.01):
    """h by GSS on [0,1] (the runtime 'gss' scan at eps = 0.01), broadcast over arrays."""
    return _vectorised(_OP_GSS_H, m, kappa, eps, NULL)


# For tests.
def robust_h(m, kappa, double eps=1e-10):
    """h by the robust half-interval GSS ('gss-precise' at 1e-10), broadcast over arrays."""
    return _vectorised(_OP_ROBUST_H, m, kappa, eps, NULL)


# For tests.
def gss_max(double m, double kappa, double lo=0.0, double hi=1.0, double eps=0.01):
    """The plain GSS of §1.5.3 for s_{m,κ} on [lo, hi] (κ ∈ (0,1)): returns (h, iterations)."""
    if not (0.0 < kappa < 1.0):
        raise ValueError("gss_max needs 0 < kappa < 1 (degenerate cases: gss_h, robust_h)")
    cdef int iters = 0
    h = merge_gss(m, log(kappa), lo, hi, eps, &iters)
    return h, iters


# For tests.
def merge_wd_normalised(m, kappa, h):
    """m² + (1−m)² + 2m(1−m)κ − s_{m,κ}(h)², broadcast over arrays."""
    m, kappa, h = (np.asarray(v, dtype=np.float64) for v in (m, kappa, h))
    s = m * np.power(kappa, (1.0 - h) ** 2) + (1.0 - m) * np.power(kappa, h * h)
    out = m * m + (1.0 - m) ** 2 + 2.0 * m * (1.0 - m) * kappa - s * s
    return float(out) if out.ndim == 0 else out


# For tests.
def merge_s_value(double m, double kappa, double h):
    """s_{m,κ}(h) through the compiled closed form."""
    return merge_s(m, kappa, h)
