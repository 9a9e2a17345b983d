"""Budgeted kernel SVM solvers: problem setup and model construction around the compiled cores.

``train_bsgd`` — budgeted SGD (ALGORITHMS.md §1, budgetsvm/_bsgd.pyx) on the SV store of
budgetsvm/_budget.pyx. Two classes give one binary model (label[0] is y = +1); k > 2 classes give
one Crammer–Singer model with a coefficient per class per SV ('argmax' prediction).
"""
import time
import warnings

import numpy as np
import scipy.sparse as sp

from budgetsvm.errors import BsvmError, ParameterError

# The dense SV store needs 8·d·(B+1) bytes (budgetsvm/_budget.pxd); refuse beyond this.
MAX_STORE_BYTES = 8 * 1024 ** 3

# The maintenance search methods available in this version (lookup-* arrive with issue 4).
AVAILABLE_MERGE_SEARCH = ("gss", "gss-precise")


def _canonical_csr(X):
    X = sp.csr_matrix(X, dtype=np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def class_weight_vector(labels, params):
    """The -wi weight of every class in label order (1 where none is given)."""
    labels = np.asarray(labels, dtype=np.float64)
    w = np.ones(len(labels))
    for label, weight in params.class_weights.items():
        hit = np.flatnonzero(labels == float(label))
        if hit.size == 0:
            warnings.warn(f"class label {float(label):g} specified in weight is not found",
                          stacklevel=3)
        w[hit] *= weight
    return w


def _model_params(params, n, d, gamma, extra):
    meta = {
        "C": float(params.C), "kernel": params.kernel, "gamma": float(gamma),
        "degree": int(params.degree), "coef0": float(params.coef0),
        "budget": int(params.budget), "epochs": int(params.epochs),
        "maintenance": params.maintenance, "variant": params.variant,
        "seed": int(params.seed), "n_train": int(n), "n_features": int(d),
    }
    if params.maintenance == "merge":
        meta["merge_search"] = params.merge_search
    meta.update(extra)
    return meta


def fit_bsgd(X, y_index, n_classes, params, callback=None, trace=None, **solver_options):
    """Run BSGD; returns (sv dense (n_sv, d), coef (n_sv, nr_coef) true coefficients,
    origin (n_sv,), info dict). ``trace``/``solver_options`` are passed to the core (tests)."""
    from budgetsvm._bsgd import bsgd_solve
    from budgetsvm._budget import SVStore
    if params.maintenance == "merge" and params.merge_search not in AVAILABLE_MERGE_SEARCH:
        raise ParameterError(f"--merge-search {params.merge_search}: not yet available")
    if params.maintenance == "merge" and params.kernel != "rbf":
        raise ParameterError("--maintenance merge needs the RBF kernel")
    X = _canonical_csr(X)
    n, d = X.shape
    gamma = params.effective_gamma(d)
    store_bytes = 8 * d * (int(params.budget) + 1)
    if params.maintenance == "projection":
        store_bytes += 16 * (int(params.budget) + 1) ** 2
    if store_bytes > MAX_STORE_BYTES:
        raise BsvmError(f"the support-vector store would need {store_bytes / 1024 ** 3:.1f} GB "
                        f"({d} features x budget {params.budget}, stored densely); "
                        "use a smaller --budget")
    nr_coef = 1 if n_classes == 2 else n_classes
    class_weight = solver_options.pop("class_weight")
    variant = params.variant
    eta = params.eta if params.eta is not None else 1.0
    radius = params.radius if params.radius is not None else 1.0
    if variant in ("norma", "mp") and not (eta > 0):
        raise ParameterError("--eta must be positive")
    if variant == "mp" and not (radius > 0):
        raise ParameterError("--radius must be positive")
    store = SVStore(d, int(params.budget), nr_coef, params.kernel, gamma, float(params.coef0),
                    int(params.degree), params.maintenance,
                    params.merge_search if params.maintenance == "merge" else "gss",
                    track_q=(variant == "mp"))
    xsq = np.bincount(np.repeat(np.arange(n), np.diff(X.indptr)), weights=X.data * X.data,
                      minlength=n).astype(np.float64)
    report = None
    if callback is not None:
        def report(step, total):
            callback(step, f"#SV {store.n}")
    start = time.perf_counter()
    res = bsgd_solve(store, X.data, X.indices.astype(np.int32, copy=False),
                     X.indptr.astype(np.int64, copy=False), xsq,
                     np.asarray(y_index, dtype=np.int32), class_weight,
                     float(n) * float(params.C), variant=variant, eta=float(eta),
                     radius=float(radius), epochs=int(params.epochs), seed=int(params.seed),
                     callback=report, trace=trace, **solver_options)
    seconds = time.perf_counter() - start
    sv, A, origin, _ = store.export()
    coef = A * res["s"]
    counters = store.counters()
    info = {
        "n_steps": int(res["t"]), "n_sv": int(store.n), "n_violations": int(res["n_violations"]),
        "n_maintenance": int(counters["n_maintenance"]), "n_merges": int(counters["n_merges"]),
        "n_removals": int(counters["n_removals"]),
        "n_projections": int(counters["n_projections"]),
        "n_inspan": int(counters["n_inspan"]), "n_renorm": int(res["n_renorm"]),
        "train_seconds": seconds, "maintenance_seconds": float(res["maintenance_seconds"]),
        "gamma": gamma, "scale": res["s"],
    }
    return sv, coef, origin, info


def train_bsgd(X, y_index, labels, params, callback=None):
    """Train a budgeted kernel SVM by BSGD; returns a KernelModel.

    X: CSR float64 (n × d); y_index: int32 class of every row in label order; labels: float64
    class labels (labels.group_classes); params: TrainParams (C, kernel, gamma (None: 1/d),
    degree, coef0, class_weights, seed, budget, epochs, maintenance, merge_search, variant,
    eta, radius). callback(step, info) is called about every 10⁴ steps.

    The model holds the SVs in list order (oldest first, merged points where they were
    appended) with true coefficients; rho is zero (no bias). ``model.train_info`` (not saved)
    has n_steps, n_sv, n_violations, n_maintenance, n_merges, n_removals, n_projections,
    n_inspan, n_renorm, train_seconds, maintenance_seconds (wall time of the insertions that
    triggered maintenance), gamma, scale.
    """
    from budgetsvm.model import KernelModel, KernelSpec
    labels = np.asarray(labels, dtype=np.float64)
    k = len(labels)
    if k < 2:
        raise ParameterError("BSGD needs at least two classes")
    X = _canonical_csr(X)
    n, d = X.shape
    sv, coef, origin, info = fit_bsgd(X, y_index, k, params, callback,
                                      class_weight=class_weight_vector(labels, params))
    gamma = info["gamma"]
    kernel = KernelSpec(params.kernel, gamma, int(params.degree), float(params.coef0))
    multiclass = "binary" if k == 2 else "argmax"
    meta = _model_params(params, n, d, gamma, {})
    model = KernelModel(labels, kernel, sp.csr_matrix(sv, shape=(sv.shape[0], d)), coef,
                        np.zeros(coef.shape[1]), multiclass, "bsgd", params=meta)
    model.train_info = info
    return model
