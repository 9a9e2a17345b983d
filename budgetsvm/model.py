"""Model classes and prediction (numpy/scipy only).

Two kinds of models, with the decision rules of docs/ALGORITHMS.md §6 (those of LIBSVM's
svm_predict and LIBLINEAR's predict):

* :class:`LinearModel` -- weight vectors ``coef`` (nr_w, n_features) plus an optional LIBLINEAR
  bias feature. Test features beyond ``n_features`` are ignored (LIBLINEAR).
* :class:`KernelModel` -- support vectors ``sv`` (CSR) with coefficient vectors ``coef``
  (n_sv, nr_coef), a :class:`KernelSpec` and offsets ``rho``. Test features beyond the SVs' width
  still count (LIBSVM): for the RBF kernel they add to ||x - sv||^2.

Label order is that of ``budgetsvm.labels.group_classes``: binary models predict ``labels[0]``
when f(x) > 0 and ``labels[1]`` otherwise (so f = 0 gives ``labels[1]``); arg-max models pick
the lowest class index on ties.

Prediction works on bounded blocks of test rows, so memory does not grow with the test size.
"""
import threading

import numpy as np
import scipy.sparse as sp

from budgetsvm.problem import row_sqnorms

LINEAR_MULTICLASS = ("binary", "ovr", "ww")
KERNEL_MULTICLASS = ("binary", "argmax", "ovo")
KERNEL_KINDS = ("linear", "poly", "rbf", "sigmoid")

# A dense kernel block (test rows x support vectors) is kept below this many float64 entries
# (8 Mi entries = 64 MB); a test block has at most MAX_CHUNK_ROWS rows.
# Kernel blocks of 2 MB stay in cache through the several passes of from_dot (measured about
# twice as fast as 64 MB blocks on ijcnn1 with 500 SVs); the SV matrix is kept dense below 64 MB.
KERNEL_BLOCK_ENTRIES = 1 << 18
DENSE_SV_ENTRIES = 8 * 1024 * 1024
MAX_CHUNK_ROWS = 8000
MIN_CHUNK_ROWS = 64
# Rows with at least this share of nonzeros (of the SVs' width) are multiplied densely (BLAS).
DENSE_ROWS_SHARE = 0.1
# Rows per block of a linear model's decision values when threads share the work.
LINEAR_BLOCK_ROWS = 8192
# Held while a kernel model computes its prediction cache (KernelModel._prepare): threads that
# predict with a fresh model at the same time (bsvm-predict's blocks) compute it once, not one
# copy of the dense SV matrix each.
_PREPARE_LOCK = threading.Lock()


def as_csr(X):
    """``X`` as a float64 CSR matrix with sorted indices (no copy when it already is one)."""
    if sp.issparse(X):
        X = X.tocsr()
    else:
        X = sp.csr_matrix(np.atleast_2d(np.asarray(X, dtype=np.float64)))
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if not X.has_sorted_indices:
        X = X.sorted_indices()
    return X


def with_width(X, width):
    """CSR ``X`` viewed with exactly ``width`` columns.

    Narrower matrices are widened without copying (missing features are zeros); wider ones lose
    the columns from ``width`` on (a column slice, computed by scipy in C).
    """
    if X.shape[1] == width:
        return X
    if X.shape[1] < width:
        return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width), copy=False)
    return X[:, :width]


def _chunks(n_rows, n_cols, dense_width=0):
    """Row ranges such that an (rows x n_cols) float64 block, and the (rows x dense_width)
    dense copy of its rows (0: none), stay below KERNEL_BLOCK_ENTRIES."""
    rows = KERNEL_BLOCK_ENTRIES // max(n_cols, dense_width, 1)
    rows = int(min(MAX_CHUNK_ROWS, max(MIN_CHUNK_ROWS, rows)))
    for start in range(0, n_rows, rows):
        yield start, min(n_rows, start + rows)


def _argmax_labels(labels, F):
    # np.argmax returns the first maximum: ties go to the lowest class index. A NaN value
    # (an overflow) never wins, as in LIBLINEAR's and LIBSVM's loops (`if (d[i] > d[best])`),
    # except in the first column, where their loops start; np.argmax would pick any NaN.
    if F.shape[0] == 0:
        return np.empty(0, dtype=np.float64)
    nan = np.isnan(F)
    if nan.any():
        F = np.where(nan, -np.inf, F)
        best = np.argmax(F, axis=1)
        best[nan[:, 0]] = 0
        return labels[best]
    return labels[np.argmax(F, axis=1)]


def _binary_labels(labels, f):
    # f > 0 -> labels[0]; f <= 0 (and NaN) -> labels[1].
    return np.where(f > 0, labels[0], labels[1]).astype(np.float64)


def nan_rows_message(count, rows="row(s)"):
    """The warning for rows whose decision values are NaN (bsvm-predict, the estimators'
    predict): LIBSVM and LIBLINEAR predict them silently, as the first or last label."""
    return (f"{count} {rows} have NaN decision values (their kernel values or dot products "
            "overflow: values far beyond the training data's scale?); they are predicted by "
            "LIBSVM's and LIBLINEAR's rule for NaN, not by the model")


def _check_params(params):
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise TypeError("params must be a dict")
    return dict(params)


def _opt_array(values, name):
    if values is None:
        return None
    arr = np.atleast_1d(np.asarray(values, dtype=np.float64)).copy()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional")
    return arr


class LinearModel:
    """Linear SVM: f_c(x) = <coef[c], x> (+ bias_coef[c] * bias when bias >= 0).

    labels: float64 (k,) in label order; coef: float64 (nr_w, n_features); bias: < 0 means no
    bias feature, else the value b of a constant feature appended as feature n_features+1;
    bias_coef: float64 (nr_w,), the weights of that feature (set to zeros when bias < 0);
    copy=False: use a C- or Fortran-contiguous float64 coef without copying it;
    multiclass: 'binary' (nr_w = 1, k = 2), 'ovr' or 'ww' (nr_w = k, arg-max);
    solver: name of the training method; params: dict of training metadata (str keys; int, float,
    str, bool or None values). prob_a/prob_b: optional Platt parameters, one per weight column.
    """

    def __init__(self, labels, coef, bias, bias_coef, multiclass, solver, params=None, *,
                 prob_a=None, prob_b=None, copy=True):
        self.labels = np.atleast_1d(np.asarray(labels, dtype=np.float64)).copy()
        coef = np.asarray(coef, dtype=np.float64)
        if copy or coef.ndim != 2 or not (coef.flags.c_contiguous or coef.flags.f_contiguous):
            coef = np.array(coef, order="C", ndmin=2)
        # copy=False keeps a contiguous coef as it is: model files store the weights
        # feature-major, so coef.T is C-contiguous, which decision_function multiplies by
        # without a copy; a large model is then held once.
        self.coef = coef
        self.bias = float(bias)
        nr_w = self.coef.shape[0]
        if self.bias < 0 or bias_coef is None:
            self.bias_coef = np.zeros(nr_w)
        else:
            self.bias_coef = np.atleast_1d(np.asarray(bias_coef, dtype=np.float64)).copy()
        self.multiclass = str(multiclass)
        self.solver = str(solver)
        self.params = _check_params(params)
        self.prob_a = _opt_array(prob_a, "prob_a")
        self.prob_b = _opt_array(prob_b, "prob_b")
        self._validate()

    def _validate(self):
        k, nr_w = len(self.labels), self.coef.shape[0]
        if self.labels.ndim != 1 or self.coef.ndim != 2:
            raise ValueError("labels must be 1-D and coef 2-D")
        if self.multiclass not in LINEAR_MULTICLASS:
            raise ValueError(f"multiclass must be one of {LINEAR_MULTICLASS}, "
                             f"got {self.multiclass!r}")
        if self.multiclass == "binary" and (k != 2 or nr_w != 1):
            raise ValueError(f"a binary linear model needs 2 labels and 1 weight vector, "
                             f"got {k} and {nr_w}")
        if self.multiclass != "binary" and nr_w != k:
            raise ValueError(f"a {self.multiclass} linear model needs one weight vector per class "
                             f"({k}), got {nr_w}")
        if self.bias_coef.shape != (nr_w,):
            raise ValueError(f"bias_coef must have shape ({nr_w},), got {self.bias_coef.shape}")
        for name in ("prob_a", "prob_b"):
            value = getattr(self, name)
            if value is not None and len(value) != nr_w:
                raise ValueError(f"{name} must have {nr_w} values, got {len(value)}")

    @property
    def n_features(self):
        return self.coef.shape[1]

    @property
    def n_classes(self):
        return len(self.labels)

    @property
    def nr_w(self):
        return self.coef.shape[0]

    def decision_function(self, X):
        """Decision values (n, nr_w) for the rows of ``X`` (CSR, any width).

        Inside an active budgetsvm.threads pool, blocks of LINEAR_BLOCK_ROWS rows are
        computed in its threads (each row's sum is the same in a block as in the whole)."""
        from budgetsvm.threads import current_threads, parallel_map
        X = as_csr(X)
        n = X.shape[0]
        if current_threads() == 1 or n <= LINEAR_BLOCK_ROWS:
            return self._decision_rows(X)
        out = np.empty((n, self.nr_w))

        def block(start):
            out[start:start + LINEAR_BLOCK_ROWS] = \
                self._decision_rows(X[start:start + LINEAR_BLOCK_ROWS])
        parallel_map(block, range(0, n, LINEAR_BLOCK_ROWS))
        return out

    def _decision_rows(self, X):
        width = min(X.shape[1], self.n_features)
        # Features beyond n_features are ignored (LIBLINEAR); a narrower X uses the first columns.
        F = np.asarray(with_width(X, width) @ self.coef[:, :width].T)
        if F.ndim == 1:
            F = F.reshape(-1, self.nr_w)
        if self.bias >= 0:
            F = F + self.bias_coef * self.bias
        return np.ascontiguousarray(F, dtype=np.float64)

    def predict(self, X):
        """Predicted labels (float64) for the rows of ``X``."""
        return self.labels_from(self.decision_function(X))

    def predict_counting_nan(self, X):
        """(predict(X), how many rows have a NaN decision value)."""
        F = self.decision_function(X)
        return self.labels_from(F), int(np.isnan(F).any(axis=1).sum())

    def labels_from(self, F):
        """Predicted labels from decision values F (as decision_function returns them)."""
        if self.multiclass == "binary":
            return _binary_labels(self.labels, F[:, 0])
        return _argmax_labels(self.labels, F)

    def __repr__(self):
        return (f"LinearModel(solver={self.solver!r}, multiclass={self.multiclass!r}, "
                f"n_classes={self.n_classes}, n_features={self.n_features}, bias={self.bias!r})")


class KernelSpec:
    """A LIBSVM-convention kernel: linear u'v, poly (gamma u'v + coef0)^degree,
    rbf exp(-gamma |u-v|^2), sigmoid tanh(gamma u'v + coef0)."""

    def __init__(self, kind="rbf", gamma=1.0, degree=3, coef0=0.0):
        if kind not in KERNEL_KINDS:
            raise ValueError(f"kernel kind must be one of {KERNEL_KINDS}, got {kind!r}")
        self.kind = kind
        self.gamma = float(gamma)
        self.degree = int(degree)
        self.coef0 = float(coef0)

    def __eq__(self, other):
        return (isinstance(other, KernelSpec) and self.kind == other.kind
                and self.gamma == other.gamma and self.degree == other.degree
                and self.coef0 == other.coef0)

    def __repr__(self):
        return (f"KernelSpec({self.kind!r}, gamma={self.gamma!r}, degree={self.degree}, "
                f"coef0={self.coef0!r})")

    def from_dot(self, G, A_sqnorm=None, B_sqnorm=None):
        """Turn the dot-product block G = A B' (modified in place) into kernel values."""
        kind = self.kind
        if kind == "linear":
            return G
        if kind == "rbf":
            # ||a - b||^2 = |a|^2 + |b|^2 - 2 a.b, clamped at 0 against rounding.
            huge = not (np.isfinite(A_sqnorm).all() and np.isfinite(B_sqnorm).all())
            with np.errstate(over="ignore", invalid="ignore"):
                G *= -2.0
                G += A_sqnorm[:, None]
                G += B_sqnorm[None, :]
                if huge:
                    # a row whose |x|^2 overflows (values near 1e154 or more): inf - inf is
                    # nan where the distance is in fact beyond any double: k = 0 there
                    G[np.isnan(G)] = np.inf
            np.maximum(G, 0.0, out=G)
            G *= -self.gamma
            return np.exp(G, out=G)
        G *= self.gamma
        G += self.coef0
        if kind == "poly":
            return np.power(G, self.degree, out=G)
        return np.tanh(G, out=G)

    def kernel_matrix(self, A, B, A_sqnorm=None, B_sqnorm=None):
        """Dense kernel matrix (nA, nB) between the rows of CSR ``A`` and ``B``.

        Widths may differ: the narrower matrix counts as padded with zero columns, so for the
        RBF kernel a feature present in only one of them still adds to the distance.
        """
        A, B = as_csr(A), as_csr(B)
        width = max(A.shape[1], B.shape[1])
        A, B = with_width(A, width), with_width(B, width)
        G = (A @ B.T).toarray()
        if self.kind == "rbf":
            if A_sqnorm is None:
                A_sqnorm = row_sqnorms(A)
            if B_sqnorm is None:
                B_sqnorm = row_sqnorms(B)
        return self.from_dot(np.ascontiguousarray(G, dtype=np.float64), A_sqnorm, B_sqnorm)

    __call__ = kernel_matrix


class UsedColumns:
    """SVᵀ over the feature columns that some support vector uses, renumbered 0..m−1, for
    support vectors far wider than those columns: a LIBSVM model with a feature index of
    2147483647 is 2^31 − 1 features wide, and SVᵀ in CSR would need a row pointer per possible
    feature (8.4 GB, where LIBSVM's sparse dot products need nothing). restrict() renumbers
    the rows of X likewise; the products sum the same terms in the same order as over the
    full width, so the kernel values are the same numbers."""

    def __init__(self, sv):
        self.columns = np.unique(sv.indices)
        compact = sp.csr_matrix((sv.data, np.searchsorted(self.columns, sv.indices), sv.indptr),
                                shape=(sv.shape[0], len(self.columns)))
        self.matrix = compact.T.tocsr()
        self.shape = (sv.shape[1], sv.shape[0])          # svT's: (width, number of SVs)

    def restrict(self, A):
        """CSR A (canonical, indptr from 0) without its entries outside the used columns, the
        others renumbered as in ``matrix``."""
        position = np.searchsorted(self.columns, A.indices)
        keep = position < len(self.columns)
        keep[keep] = self.columns[position[keep]] == A.indices[keep]
        kept_before = np.concatenate([[0], np.cumsum(keep)])
        return sp.csr_matrix((A.data[keep], position[keep], kept_before[A.indptr]),
                             shape=(A.shape[0], len(self.columns)))


# Support vectors at least this wide, using fewer than one column in USED_COLUMNS_SHARE of
# their width, take UsedColumns as their SVᵀ.
USED_COLUMNS_WIDTH = 1 << 20
USED_COLUMNS_SHARE = 8


def sv_columns(sv):
    """The support vectors as the right-hand side of kernel_blocks: (SVᵀ, dense when it is
    small, else CSR, or UsedColumns when the SVs are far wider than the columns they use;
    their squared norms)."""
    sv = as_csr(sv)
    if sv.shape[0] * sv.shape[1] <= DENSE_SV_ENTRIES:
        svT = sv.T.toarray(order="C")        # straight into C order: no second dense copy
    elif sv.shape[1] >= USED_COLUMNS_WIDTH and \
            USED_COLUMNS_SHARE * len(np.unique(sv.indices)) < sv.shape[1]:
        svT = UsedColumns(sv)
    else:
        svT = sv.T.tocsr()
    return svT, row_sqnorms(sv)


def kernel_blocks(kernel, X, svT, sv_sq):
    """Yield (start, stop, K) with K[i, j] = k(x_{start+i}, sv_j) for bounded blocks of the rows
    of X (CSR, any width), given svT and sv_sq from sv_columns (sv_sq may be None unless rbf)."""
    X = as_csr(X)
    for start, stop in block_ranges(X, svT):
        yield start, stop, kernel_rows(kernel, X, start, stop, svT, sv_sq)


def block_ranges(X, svT):
    """The (start, stop) row ranges of kernel_blocks: they depend on the sizes only, so a
    block computes the same numbers whichever thread computes it (budgetsvm/threads.py).
    Where dot_rows will copy the rows densely (dense SVs, and rows about as dense as its
    test asks), the copy bounds the rows too: mnist's 784 columns at B = 100 would otherwise
    make a 16 MB copy per block, one per thread."""
    X = as_csr(X)
    width = svT.shape[0]
    dense = isinstance(svT, np.ndarray) and X.nnz >= DENSE_ROWS_SHARE * X.shape[0] * width
    return list(_chunks(X.shape[0], svT.shape[1], width if dense else 0))


def dot_rows(X, start, stop, svT, out=None, norms=True):
    """The dot products of rows start:stop of CSR X with the support vectors (svT from
    sv_columns), and the rows' squared norms (None unless norms): the two parts of kernel_rows
    before from_dot.
    out: a C-contiguous float64 (stop − start) × B array to fill and return (the dense product
    is computed in it: no temporary block, no copy)."""
    width = svT.shape[0]
    A = X[start:stop]
    # Features of X beyond the SVs' width do not enter the dot products, but still count
    # in |x|^2 for the RBF distance (LIBSVM).
    a_sq = row_sqnorms(A) if norms else None
    if isinstance(svT, UsedColumns):
        A_w, svT = svT.restrict(as_csr(A)), svT.matrix
    else:
        A_w = with_width(A, width)
    if isinstance(svT, np.ndarray) and A_w.nnz >= DENSE_ROWS_SHARE * A_w.shape[0] * A_w.shape[1]:
        # fairly dense rows: a BLAS matrix product wins
        return np.matmul(A_w.toarray(), svT, out=out), a_sq
    G = A_w @ svT
    G = np.ascontiguousarray(G.toarray() if sp.issparse(G) else G, dtype=np.float64)
    if out is not None:
        out[...] = G
        G = out
    return G, a_sq


def kernel_rows(kernel, X, start, stop, svT, sv_sq, out=None):
    """The kernel block of rows start:stop of CSR X against the support vectors (one block of
    kernel_blocks). Its BLAS products and numpy ufuncs release the GIL: blocks computed in
    threads run at the same time. out: as in dot_rows."""
    G, a_sq = dot_rows(X, start, stop, svT, out=out, norms=kernel.kind == "rbf")
    return kernel.from_dot(G, a_sq, sv_sq)


class KernelModel:
    """Kernel SVM over support vectors.

    labels (k,); kernel: KernelSpec; sv: CSR (n_sv, n_features); coef: (n_sv, nr_coef) true
    coefficients; rho: offsets subtracted from the decision values; multiclass:
    'binary' (nr_coef = 1, f = K coef[:,0] - rho[0]), 'argmax' (nr_coef = k,
    f_r = K coef[:,r] - rho[r], rho zeros for our solvers), or 'ovo' (LIBSVM one-vs-one: nr_coef =
    k-1, nr_sv SVs per class in label order, rho of length k(k-1)/2, voting as LIBSVM);
    solver: name; params: training metadata; nr_sv: int array (required for 'ovo') or None;
    prob_a/prob_b: optional Platt parameters (one per binary decision value).
    """

    def __init__(self, labels, kernel, sv, coef, rho, multiclass, solver, params=None,
                 nr_sv=None, *, prob_a=None, prob_b=None):
        self.labels = np.atleast_1d(np.asarray(labels, dtype=np.float64)).copy()
        if not isinstance(kernel, KernelSpec):
            raise TypeError("kernel must be a KernelSpec")
        self.kernel = kernel
        self.sv = sp.csr_matrix(as_csr(sv), dtype=np.float64, copy=True)
        self.sv.sum_duplicates()
        coef = np.asarray(coef, dtype=np.float64)
        if coef.ndim == 1:
            coef = coef.reshape(-1, 1)
        self.coef = np.array(coef, dtype=np.float64, order="C")
        self.multiclass = str(multiclass)
        n_dec = self._n_decision_values()
        self.rho = np.zeros(n_dec) if rho is None else \
            np.atleast_1d(np.asarray(rho, dtype=np.float64)).copy()
        self.solver = str(solver)
        self.params = _check_params(params)
        self.nr_sv = None if nr_sv is None else np.asarray(nr_sv, dtype=np.int64).copy()
        self.prob_a = _opt_array(prob_a, "prob_a")
        self.prob_b = _opt_array(prob_b, "prob_b")
        self._validate(n_dec)
        self._prepared = None

    def _n_decision_values(self):
        k = len(self.labels)
        if self.multiclass == "ovo":
            return k * (k - 1) // 2
        return self.coef.shape[1]

    def _validate(self, n_dec):
        k, nr_coef = len(self.labels), self.coef.shape[1]
        if self.multiclass not in KERNEL_MULTICLASS:
            raise ValueError(f"multiclass must be one of {KERNEL_MULTICLASS}, "
                             f"got {self.multiclass!r}")
        if self.coef.shape[0] != self.sv.shape[0]:
            raise ValueError(f"coef has {self.coef.shape[0]} rows for {self.sv.shape[0]} SVs")
        expected = {"binary": 1, "argmax": k, "ovo": k - 1}[self.multiclass]
        if self.multiclass == "binary" and k != 2:
            raise ValueError(f"a binary kernel model needs 2 labels, got {k}")
        if nr_coef != expected:
            raise ValueError(f"a {self.multiclass} kernel model with {k} classes needs {expected} "
                             f"coefficient columns, got {nr_coef}")
        if self.rho.shape != (n_dec,):
            raise ValueError(f"rho must have {n_dec} values, got {self.rho.shape}")
        if self.multiclass == "ovo":
            if self.nr_sv is None:
                raise ValueError("a one-vs-one kernel model needs nr_sv")
        if self.nr_sv is not None:
            if self.nr_sv.shape != (k,) or (self.nr_sv < 0).any() or \
                    self.nr_sv.sum() != self.sv.shape[0]:
                raise ValueError("nr_sv must give k non-negative counts summing to the "
                                 "number of SVs")
        for name in ("prob_a", "prob_b"):
            value = getattr(self, name)
            if value is not None and len(value) != n_dec:
                raise ValueError(f"{name} must have {n_dec} values, got {len(value)}")

    @property
    def n_features(self):
        return self.sv.shape[1]

    @property
    def n_classes(self):
        return len(self.labels)

    @property
    def n_sv(self):
        return self.sv.shape[0]

    def _prepare(self):
        """Cache what every prediction block needs: SV' (dense when small), SV norms, and the
        coefficient matrix mapping kernel values to decision values."""
        prepared = self._prepared
        if prepared is not None:
            return prepared
        with _PREPARE_LOCK:
            if self._prepared is None:
                svT, sv_sq = sv_columns(self.sv)
                M = self._ovo_coefficients() if self.multiclass == "ovo" else self.coef
                self._prepared = (svT, sv_sq, M)
            return self._prepared

    def _ovo_coefficients(self):
        # Pair p = (i, j), i < j: SVs of class i use coefficient column j-1, SVs of class j
        # column i (LIBSVM's one-vs-one layout); other SVs do not take part.
        k = len(self.labels)
        start = np.concatenate([[0], np.cumsum(self.nr_sv)])
        M = np.zeros((self.n_sv, k * (k - 1) // 2))
        p = 0
        for i in range(k):
            for j in range(i + 1, k):
                M[start[i]:start[i + 1], p] = self.coef[start[i]:start[i + 1], j - 1]
                M[start[j]:start[j + 1], p] = self.coef[start[j]:start[j + 1], i]
                p += 1
        return M

    def _blocks(self, X):
        """Yield (start, stop, decision values) for bounded blocks of test rows."""
        X = as_csr(X)
        svT, _, _ = self._prepare()
        for start, stop in block_ranges(X, svT):
            yield start, stop, self._block(X, start, stop)

    def _block(self, X, start, stop):
        svT, sv_sq, M = self._prepare()
        return kernel_rows(self.kernel, X, start, stop, svT, sv_sq) @ M - self.rho

    def _map_blocks(self, X, out, convert):
        """out[start:stop] = convert(decision values) for every block, the blocks spread over
        the threads of an active budgetsvm.threads pool (serial without one)."""
        from budgetsvm.threads import parallel_map
        svT, _, _ = self._prepare()          # cached once, before any thread reads it

        def block(bounds):
            start, stop = bounds
            out[start:stop] = convert(self._block(X, start, stop))
        parallel_map(block, block_ranges(X, svT))
        return out

    def decision_function(self, X):
        """Decision values: (n, nr_coef) for 'binary'/'argmax', (n, k(k-1)/2) for 'ovo'."""
        X = as_csr(X)
        return self._map_blocks(X, np.empty((X.shape[0], len(self.rho))), lambda F: F)

    def predict(self, X):
        """Predicted labels (float64) for the rows of ``X``."""
        X = as_csr(X)
        return self._map_blocks(X, np.empty(X.shape[0], dtype=np.float64), self._labels_from)

    def predict_counting_nan(self, X):
        """(predict(X), how many rows have a NaN decision value), block by block as predict
        (the n × k decision values are never held at once)."""
        X = as_csr(X)
        out = self._map_blocks(X, np.empty((X.shape[0], 2)), lambda F: np.column_stack(
            [self._labels_from(F), np.isnan(F).any(axis=1)]))
        return out[:, 0].copy(), int(out[:, 1].sum())

    def labels_from(self, F):
        """Predicted labels from decision values F (as decision_function returns them)."""
        return self._labels_from(F)

    def _labels_from(self, F):
        if self.multiclass == "binary":
            return _binary_labels(self.labels, F[:, 0])
        if self.multiclass == "argmax":
            return _argmax_labels(self.labels, F)
        # One-vs-one voting: d_p > 0 is a vote for i, else for j; the first class (in label
        # order) with the most votes wins.
        k = len(self.labels)
        votes = np.zeros((F.shape[0], k), dtype=np.int64)
        p = 0
        for i in range(k):
            for j in range(i + 1, k):
                positive = F[:, p] > 0
                votes[:, i] += positive
                votes[:, j] += ~positive
                p += 1
        return _argmax_labels(self.labels, votes)

    def __repr__(self):
        return (f"KernelModel(solver={self.solver!r}, multiclass={self.multiclass!r}, "
                f"n_classes={self.n_classes}, n_sv={self.n_sv}, kernel={self.kernel!r})")
