"""Budgeted kernel SVM solvers: problem setup and model construction around the compiled cores.

``train_bsgd`` — budgeted SGD (docs/ALGORITHMS.md §1, budgetsvm/_bsgd.pyx) on the SV store of
budgetsvm/_budget.pyx. Two classes give one binary model (label[0] is y = +1); k > 2 classes give
one Crammer–Singer model with a coefficient per class per SV ('argmax' prediction).

``train_bsca`` — budgeted stochastic coordinate ascent on the dual (docs/ALGORITHMS.md §3,
budgetsvm/_bsca.pyx) on the same store (s = 1, stored coefficients are β = y·δ). Two classes give
one binary model; k > 2 classes give k one-vs-rest binary models, each with its own budget B,
stacked into one 'argmax' model: coef (Σ n_sv, k), an SV of model c is nonzero only in column c.
"""
import time

import numpy as np
import scipy.sparse as sp

from budgetsvm.errors import BsvmError, ParameterError
from budgetsvm.problem import canonical_csr, class_costs, class_weights, csr_arrays, row_sqnorms
from budgetsvm.refit import polish_model
from budgetsvm.linear import ovr_prefix
from budgetsvm.threads import SummedProgress, current_threads, parallel_map

# The dense SV store needs 8·d·(B+1) bytes (budgetsvm/_budget.pxd); refuse beyond this.
MAX_STORE_BYTES = 8 * 1024 ** 3

# The maintenance search methods (lookup-*: binary merges; Crammer–Singer merging uses gss).
AVAILABLE_MERGE_SEARCH = ("gss", "gss-precise", "lookup-h", "lookup-wd")

# Rows per block of the monitoring's budgeted decision values (store_decision_rows).
STORE_DECISION_ROWS = 2048


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
    if params.effective_coalesce():         # absent: the papers' appending (and older models)
        meta["coalesce"] = True
    meta.update(extra)
    return meta


def epoch_text(step, total, epochs, n_sv):
    """'epoch 3/5  #SV 500' for the progress display: the core reports its step of total =
    epochs × rows."""
    rows = max(total // max(int(epochs), 1), 1)
    return f"epoch {min(step // rows + 1, int(epochs))}/{int(epochs)}  #SV {n_sv}"


def refit_progress(callback, steps):
    """The refit's on_iteration(count) as a progress callback (the bar stays at ``steps``, the
    solver's last step), or None without a callback."""
    if callback is None:
        return None
    return lambda count: callback(steps, f"refit  iteration {count}" if count else
                                  "refit  kernel rows")


def _variant_constants(params):
    """(η, U) of a BSGD run: --eta and --radius, 1 when not given (η: norma and mp; U: mp)."""
    return (float(params.eta) if params.eta is not None else 1.0,
            float(params.radius) if params.radius is not None else 1.0)


def bsgd_setup(params, d, n_classes, compare_merges=False):
    """Check the BSGD options for d features and build the empty SV store (coalescing repeated
    insertions when params.effective_coalesce()).

    Returns (store, solver keyword arguments for bsgd_solve: variant, eta, radius, gamma)."""
    from budgetsvm._budget import SVStore
    _check_budgeted(params, d)
    gamma = params.effective_gamma(d)
    variant = params.variant
    eta, radius = _variant_constants(params)
    if variant in ("norma", "mp") and not (eta > 0):
        raise ParameterError("--eta must be positive")
    if variant == "mp" and not (radius > 0):
        raise ParameterError("--radius must be positive")
    nr_coef = 1 if n_classes == 2 else n_classes
    store = SVStore(d, int(params.budget), nr_coef, params.kernel, gamma, float(params.coef0),
                    int(params.degree), params.maintenance,
                    params.merge_search if params.maintenance == "merge" else "gss",
                    track_q=(variant == "mp"), compare=compare_merges,
                    coalesce=params.effective_coalesce())
    return store, {"variant": variant, "eta": float(eta), "radius": float(radius)}, gamma


def bsgd_info(store, res, seconds, maintenance_seconds, gamma):
    """The train_info dict of a BSGD run (see train_bsgd)."""
    counters = store.counters()
    info = {
        "n_steps": int(res["t"]), "n_sv": int(store.n), "n_violations": int(res["n_violations"]),
        "n_maintenance": int(counters["n_maintenance"]), "n_merges": int(counters["n_merges"]),
        "n_removals": int(counters["n_removals"]),
        "n_projections": int(counters["n_projections"]),
        "n_inspan": int(counters["n_inspan"]), "n_renorm": int(res["n_renorm"]),
        "n_merge_evals": int(counters["n_merge_evals"]),
        "n_coalesced": int(counters["n_coalesced"]),
        "train_seconds": seconds, "maintenance_seconds": float(maintenance_seconds),
        "gamma": gamma, "scale": res["s"],
    }
    info.update(_compare_counters(counters))
    return info


def fit_bsgd(X, y_index, n_classes, params, callback=None, trace=None, compare_merges=False,
             monitor=None, monitor_test=None, **solver_options):
    """Run BSGD; returns (sv dense (n_sv, d), coef (n_sv, nr_coef) true coefficients,
    origin (n_sv,), info dict). ``trace``/``solver_options`` are passed to the core (tests);
    compare_merges: comparison mode of the store (diagnostics, slower), its counters go to info.

    monitor(row): called after every epoch with epoch, time (training seconds so far, monitoring
    excluded), cpu (the same in CPU seconds of the training thread), primal (C-form, binary only), merge_fraction (merges / steps of the epoch), n_sv
    and, with monitor_test = (X_test CSR, test class indices), test_accuracy. The epochs then run
    one call of the core each, with the order the uninterrupted run would use: the model is the
    same with or without monitoring."""
    from budgetsvm._bsgd import bsgd_solve
    from budgetsvm._rng import Random
    X = canonical_csr(X)
    n, d = X.shape
    store, options, gamma = bsgd_setup(params, d, n_classes, compare_merges)
    class_weight = solver_options.pop("class_weight")
    options.update(solver_options)
    data, indices, indptr, xsq = csr_arrays(X)
    y_index = np.asarray(y_index, dtype=np.int32)
    nC = float(n) * float(params.C)
    report = None
    if callback is not None:
        def report(step, total):
            callback(step, epoch_text(step, total, params.epochs, store.n))
    epochs, seed = int(params.epochs), int(params.seed)
    if monitor is None:
        start = time.perf_counter()
        res = bsgd_solve(store, data, indices, indptr, xsq, y_index, class_weight, nC,
                         epochs=epochs, seed=seed, callback=report, trace=trace, **options)
        seconds = time.perf_counter() - start
        maintenance_seconds = res["maintenance_seconds"]
    else:
        # Random(seed).permutation replays the core's per-epoch shuffle (budgetsvm/_bsgd.pyx).
        rng, res, seconds, maintenance_seconds, merges = Random(seed), None, 0.0, 0.0, 0
        cpu = 0.0        # CPU time of this thread in the core (the core runs in the caller)
        upper = float(params.C) * class_weight[y_index]
        for epoch in range(1, epochs + 1):
            order = rng.permutation(n)
            start, start_cpu = time.perf_counter(), time.thread_time()
            res = bsgd_solve(store, data, indices, indptr, xsq, y_index, class_weight, nC,
                             callback=report, trace=trace, order=order, state=res,
                             total_steps=n * epochs, **options)
            seconds += time.perf_counter() - start
            cpu += time.thread_time() - start_cpu
            maintenance_seconds += res["maintenance_seconds"]
            total_merges = store.counters()["n_merges"]
            row = {"epoch": epoch, "time": seconds, "cpu": cpu,
                   "merge_fraction": (total_merges - merges) / n, "n_sv": store.n}
            merges = total_merges
            if n_classes == 2:
                y = np.where(y_index == 0, 1.0, -1.0)
                row["primal"] = budgeted_primal(store, res["s"], X, xsq, y, upper)
            if monitor_test is not None:
                row["test_accuracy"] = _monitor_accuracy(store, res["s"], params, gamma,
                                                         *monitor_test)
            monitor(row)
    sv, A, origin, _ = store.export()
    info = bsgd_info(store, res, seconds, maintenance_seconds, gamma)
    return sv, A * res["s"], origin, info


def store_decision_rows(store, X, xsq):
    """f̃(x_i) = Σ_j A_j k(x_i, x̃_j) of a binary store for every row of canonical CSR X
    (budgetsvm._bsca.store_decision), blocks of rows spread over the threads of an active
    budgetsvm.threads pool; every row's value is the same whichever thread computes it."""
    from budgetsvm._bsca import store_decision
    data = X.data
    indices = X.indices.astype(np.int32, copy=False)
    indptr = X.indptr.astype(np.int64, copy=False)
    xsq = np.ascontiguousarray(xsq, dtype=np.float64)
    n = X.shape[0]
    out = np.zeros(n)

    def block(start):
        stop = min(n, start + STORE_DECISION_ROWS)
        out[start:stop] = store_decision(store, data, indices, indptr[start:stop + 1],
                                         xsq[start:stop])
    parallel_map(block, range(0, n, STORE_DECISION_ROWS))
    return out


def budgeted_primal(store, scale, X, xsq, y, upper):
    """C-form primal of the binary budgeted model w = scale·Σ_j A_j φ(x̃_j) (§3.5):
    ½‖w‖² + Σ_i upper_i max(0, 1 − y_i w·φ(x_i)); O(B² + nB) kernel evaluations."""
    from budgetsvm._bsca import store_decision
    f = scale * store_decision_rows(store, X, xsq)
    sv, A, _, _ = store.export()
    S = sp.csr_matrix(sv)
    fs = store_decision(store, S.data, S.indices.astype(np.int32), S.indptr.astype(np.int64),
                        (sv * sv).sum(1))
    return 0.5 * scale * scale * float(A[:, 0] @ fs) + float(upper @ np.maximum(0.0, 1.0 - y * f))


def _monitor_accuracy(store, scale, params, gamma, X_test, y_test):
    """Test accuracy of the current store (binary: sign; multi-class: argmax over classes)."""
    from budgetsvm.model import KernelModel, KernelSpec
    sv, A, _, _ = store.export()
    k = A.shape[1] if A.shape[1] > 1 else 2
    spec = KernelSpec(params.kernel, gamma, int(params.degree), float(params.coef0))
    model = KernelModel(np.arange(k, dtype=np.float64), spec,
                        sp.csr_matrix(sv, shape=(sv.shape[0], X_test.shape[1])), A * scale,
                        np.zeros(A.shape[1]), "binary" if k == 2 else "argmax", "bsgd")
    return float(np.mean(model.predict(X_test) == np.asarray(y_test)))


_COMPARE_KEYS = ("n_compared", "same_as_gss", "same_as_precise", "wd_ratio_mean",
                 "wd_ratio_max", "gss_wd_ratio_mean", "wd_excess_total", "gss_wd_excess_total",
                 "optimal_fraction", "gss_optimal_fraction")


def _compare_counters(counters):
    return {key: counters[key] for key in _COMPARE_KEYS if key in counters}


def train_bsgd(X, y_index, labels, params, callback=None, compare_merges=False, monitor=None,
               monitor_test=None):
    """Train a budgeted kernel SVM by BSGD; returns a KernelModel.

    X: CSR float64 (n × d); y_index: int32 class of every row in label order; labels: float64
    class labels (labels.group_classes); params: TrainParams (C, kernel, gamma (None: 1/d),
    degree, coef0, class_weights, seed, budget, epochs, maintenance, merge_search, variant,
    eta, radius). callback(step, info) is called about every 10⁴ steps. monitor(row) and
    monitor_test = (X_test, y_index_test): one row per epoch, see fit_bsgd.

    The model holds the SVs in list order (oldest first, merged points where they were
    appended). With params.polish = 'refit' (the default) the coefficients and rho = −b are
    those of the refit on these SVs (budgetsvm/refit.py, which adds refit_* to train_info);
    with 'none' they are the solver's last iterate (true coefficients, rho zero: no bias).
    ``model.train_info`` (not saved)
    has n_steps, n_sv, n_violations, n_maintenance, n_merges, n_removals, n_projections,
    n_inspan, n_renorm, train_seconds, maintenance_seconds (wall time of the insertions that
    triggered maintenance), gamma, scale, n_merge_evals; with compare_merges=True (binary
    merging diagnostics, Glasmachers & Qaadan 2018, Table 3; slower) also n_compared, same_as_gss,
    same_as_precise, wd_ratio_mean, wd_ratio_max, gss_wd_ratio_mean, wd_excess_total,
    gss_wd_excess_total, optimal_fraction, gss_optimal_fraction (SVStore.counters).
    """
    labels = np.asarray(labels, dtype=np.float64)
    if len(labels) < 2:
        raise ParameterError("BSGD needs at least two classes")
    X = canonical_csr(X)
    if monitor_test is not None:
        monitor_test = (canonical_csr(monitor_test[0]), np.asarray(monitor_test[1]))
    class_weight = class_weights(labels, params)
    sv, coef, origin, info = fit_bsgd(X, y_index, len(labels), params, callback,
                                      compare_merges=compare_merges, monitor=monitor,
                                      monitor_test=monitor_test, class_weight=class_weight)
    model = bsgd_model(labels, params, X.shape[0], X.shape[1], sv, coef, info)
    return polish_model(model, X, y_index, float(params.C) * class_weight, params,
                        on_iteration=refit_progress(callback, X.shape[0] * int(params.epochs)))


def bsgd_model(labels, params, n, d, sv, coef, info):
    """The KernelModel of a BSGD run on n rows of d features (train_info = info)."""
    from budgetsvm.model import KernelModel, KernelSpec
    gamma = info["gamma"]
    kernel = KernelSpec(params.kernel, gamma, int(params.degree), float(params.coef0))
    multiclass = "binary" if len(labels) == 2 else "argmax"
    eta, radius = _variant_constants(params)
    # The constants the variant used (pegasos has none): the model file says how it was trained.
    extra = {"eta": eta} if params.variant == "norma" else \
        {"eta": eta, "radius": radius} if params.variant == "mp" else {}
    meta = _model_params(params, n, d, gamma, extra)
    model = KernelModel(labels, kernel, sp.csr_matrix(sv, shape=(sv.shape[0], d)), coef,
                        np.zeros(coef.shape[1]), multiclass, "bsgd", params=meta)
    model.train_info = info
    return model


# ---------------------------------------------------------------------------------------------
# BSCA
# ---------------------------------------------------------------------------------------------

def _check_budgeted(params, d):
    if params.maintenance == "merge" and params.merge_search not in AVAILABLE_MERGE_SEARCH:
        raise ParameterError(f"--merge-search {params.merge_search}: not yet available")
    if params.maintenance == "merge" and params.kernel != "rbf":
        raise ParameterError("--maintenance merge needs the RBF kernel")
    if int(params.budget) < 1:
        raise ParameterError("--budget must be at least 1")
    store_bytes = 8 * d * (int(params.budget) + 1)
    if params.maintenance == "projection":
        store_bytes += 16 * (int(params.budget) + 1) ** 2
    if store_bytes > MAX_STORE_BYTES:
        raise BsvmError(f"the support-vector store would need {store_bytes / 1024 ** 3:.1f} GB "
                        f"({d} features x budget {params.budget}, stored densely); "
                        "use a smaller --budget")


# The exact dual needs the kernel matrix of the points with α_i > 0: computed while there are
# at most this many (a 4000 × 4000 block is 128 MB), left blank beyond.
EXACT_DUAL_MAX_POINTS = 4000


def exact_dual(X, y, alpha, kernel):
    """D(α) = Σ α − ½ Σ_ij α_i α_j y_i y_j k(x_i, x_j) (docs/ALGORITHMS.md §3.5), or None when more
    than EXACT_DUAL_MAX_POINTS coordinates are non-zero. kernel: a model.KernelSpec."""
    active = np.flatnonzero(alpha)
    if active.size > EXACT_DUAL_MAX_POINTS:
        return None
    v = alpha[active] * np.asarray(y, dtype=np.float64)[active]
    S = X[active]
    return float(alpha.sum() - 0.5 * v @ (kernel.kernel_matrix(S, S) @ v))


def bsca_objectives(store, X, y, upper, alpha, xsq=None):
    """Diagnostics of §3.5 in C-form for a binary BSCA state.

    primal = ½ Σ_jl β_j β_l k(x̃_j, x̃_l) + Σ_i C_i max(0, 1 − y_i f̃(x_i)) (exact for the
    budgeted model), dual_tracked = Σ α − ½ Σ_i α_i y_i f̃(x_i) (equal to the exact dual while
    no maintenance has happened). Returns a dict with primal, dual_tracked and f (the budgeted
    decision values on X).
    """
    from budgetsvm._bsca import store_decision
    X = canonical_csr(X)
    if xsq is None:
        xsq = row_sqnorms(X)
    f = store_decision_rows(store, X, xsq)
    sv, A, _, _ = store.export()
    S = sp.csr_matrix(sv)
    fs = store_decision(store, S.data, S.indices.astype(np.int32), S.indptr.astype(np.int64),
                        (sv * sv).sum(1))
    y = np.asarray(y, dtype=np.float64)
    out = {"primal": 0.5 * float(A[:, 0] @ fs) + float(upper @ np.maximum(0.0, 1.0 - y * f)),
           "dual_tracked": float(alpha.sum() - 0.5 * (alpha * y) @ f), "f": f}
    return out


def fit_bsca_binary(X, y, upper, params, gamma, *, seed=None, callback=None, monitor=None,
                    trace=None, monitor_test=None, compare_merges=False):
    """One binary BSCA run. X canonical CSR; y ±1 (int8); upper[i] = C_i.

    Returns (store, alpha, info). monitor(row) gets a dict per epoch (epoch, time = training
    seconds so far without monitoring, cpu = the same in CPU seconds of this thread, primal, dual_tracked, dual_exact (None beyond
    EXACT_DUAL_MAX_POINTS non-zero α), [test_accuracy],
    merge_fraction = merges / steps of that epoch, n_sv, n_updates); monitoring time is excluded.
    monitor_test: optional (X_test CSR, y_test ±1) for test accuracy per epoch.
    """
    from budgetsvm._bsca import bsca_solve
    from budgetsvm._budget import SVStore
    n, d = X.shape
    store = SVStore(d, int(params.budget), 1, params.kernel, gamma, float(params.coef0),
                    int(params.degree), params.maintenance,
                    params.merge_search if params.maintenance == "merge" else "gss",
                    compare=compare_merges, coalesce=params.effective_coalesce())
    xsq = row_sqnorms(X)
    alpha = np.zeros(n)
    y = np.asarray(y, dtype=np.int8)
    upper = np.ascontiguousarray(upper, dtype=np.float64)
    indices = X.indices.astype(np.int32, copy=False)
    indptr = X.indptr.astype(np.int64, copy=False)
    report = None
    if callback is not None:
        def report(step, total):
            callback(step, epoch_text(step, total, params.epochs, store.n))
    epoch_cb = None
    if monitor is not None:
        from budgetsvm.model import KernelSpec
        # CPU time of this thread (the core runs in the caller), monitoring excluded
        last = {"merges": 0, "start_cpu": time.thread_time(), "monitor_cpu": 0.0}
        kernel = KernelSpec(params.kernel, gamma, int(params.degree), float(params.coef0))

        def epoch_cb(epoch, stats):
            enter = time.thread_time()
            obj = bsca_objectives(store, X, y, upper, alpha, xsq)
            merges = store.counters()["n_merges"]
            row = {"epoch": epoch, "time": stats["seconds"],
                   "cpu": enter - last["start_cpu"] - last["monitor_cpu"],
                   "primal": obj["primal"],
                   "dual_tracked": obj["dual_tracked"],
                   "dual_exact": exact_dual(X, y, alpha, kernel),
                   "merge_fraction": (merges - last["merges"]) / n,
                   "n_sv": store.n, "n_updates": stats["epoch_updates"]}
            last["merges"] = merges
            if monitor_test is not None:
                Xt, yt = monitor_test
                ft = store_decision_rows(store, Xt, row_sqnorms(Xt))
                row["test_accuracy"] = float(np.mean(np.where(ft > 0, 1, -1) == yt))
            monitor(row)
            last["monitor_cpu"] += time.thread_time() - enter
    res = bsca_solve(store, X.data, indices, indptr, xsq, y, upper, alpha,
                     epochs=int(params.epochs), seed=int(params.seed if seed is None else seed),
                     callback=report, epoch_callback=epoch_cb, trace=trace)
    counters = store.counters()
    info = {
        "n_steps": int(res["t"]), "n_sv": int(store.n), "n_updates": int(res["n_updates"]),
        "n_zero_norm": int(res["n_zero_norm"]), "epoch_updates": list(res["epoch_updates"]),
        "n_maintenance": int(counters["n_maintenance"]), "n_merges": int(counters["n_merges"]),
        "n_removals": int(counters["n_removals"]),
        "n_projections": int(counters["n_projections"]), "n_inspan": int(counters["n_inspan"]),
        "n_merge_evals": int(counters["n_merge_evals"]),
        "n_coalesced": int(counters["n_coalesced"]),
        "train_seconds": float(res["seconds"]),
        "maintenance_seconds": float(res["maintenance_seconds"]),
        "merge_fraction": counters["n_merges"] / max(int(res["t"]), 1),
    }
    info.update(_compare_counters(counters))
    return store, alpha, info


def train_bsca(X, y_index, labels, params, callback=None, monitor=None, monitor_test=None,
               compare_merges=False):
    """Train a budgeted kernel SVM by BSCA (docs/ALGORITHMS.md §3); returns a KernelModel.

    Arguments as train_bsgd (params.variant/eta/radius are ignored). Binary: y = +1 for
    label[0], −1 for label[1], C_i = C·w_{y_i}. k > 2 classes: one-vs-rest, model c trained on
    y = +1 for class c and −1 otherwise (C_i = C·w of the row's own class), each with budget B
    and the same seed; 'argmax' over the k decision values.

    monitor(row): called per epoch (per binary model, row["model"] = class index for k > 2) with
    time (training seconds, monitoring excluded), primal, dual_tracked, dual_exact, merge_fraction,
    n_sv, n_updates and, with monitor_test = (X_test, y_index_test), test_accuracy.
    ``model.train_info`` (not saved): n_steps, n_sv, n_updates, n_maintenance, n_merges,
    n_removals, n_projections, n_inspan, n_merge_evals, merge_fraction, train_seconds,
    maintenance_seconds, gamma, (k > 2) per_model: the info dict of every binary model;
    compare_merges: the comparison-mode counters of train_bsgd (per binary model).
    """
    from budgetsvm.model import KernelModel, KernelSpec
    labels = np.asarray(labels, dtype=np.float64)
    k = len(labels)
    if k < 2:
        raise ParameterError("BSCA needs at least two classes")
    X = canonical_csr(X)
    n, d = X.shape
    _check_budgeted(params, d)
    gamma = params.effective_gamma(d)
    y_index = np.asarray(y_index, dtype=np.int32)
    class_cost = class_costs(labels, params)
    upper = class_cost[y_index]
    test = None
    if monitor_test is not None:
        test = (canonical_csr(monitor_test[0]), np.asarray(monitor_test[1], dtype=np.int32))
    models = [0] if k == 2 else list(range(k))
    progress = SummedProgress(callback)
    # In threads, the monitor's rows are kept and handed over in model order at the end, as
    # one thread produces them (serially they go out at once, during training).
    serial = current_threads() == 1
    rows = {c: [] for c in models}

    def fit_model(c):
        # One binary model; the k one-vs-rest models share the data and run on the -n
        # threads, each with its own generator seeded with --seed (the papers' setting).
        y = np.where(y_index == c, 1, -1).astype(np.int8)
        mon = None
        if monitor is not None:
            def mon(row, c=c):
                if k > 2:
                    row["model"] = c
                monitor(row) if serial else rows[c].append(row)
        mt = None if test is None else (test[0], np.where(test[1] == c, 1, -1))
        label = labels[c]
        report = None if callback is None else progress.reporter(
            lambda text, steps: ovr_prefix(label, k, progress.done) + text)
        store, alpha, info = fit_bsca_binary(X, y, upper, params, gamma, callback=report,
                                             monitor=mon, monitor_test=mt,
                                             compare_merges=compare_merges)
        progress.finished()
        sv, A, _, _ = store.export()
        return sv, A[:, 0], info

    fitted = parallel_map(fit_model, models)
    svs = [sv for sv, _, _ in fitted]
    coefs = [a for _, a, _ in fitted]
    infos = [info for _, _, info in fitted]
    for c in models:
        for row in rows[c]:
            monitor(row)
    kernel = KernelSpec(params.kernel, gamma, int(params.degree), float(params.coef0))
    if k == 2:
        sv, coef, multiclass = svs[0], coefs[0].reshape(-1, 1), "binary"
        info = dict(infos[0])
    else:
        sv = np.vstack(svs) if svs else np.zeros((0, d))
        coef = np.zeros((sv.shape[0], k))
        row = 0
        for c, a in enumerate(coefs):
            coef[row:row + a.size, c] = a
            row += a.size
        multiclass = "argmax"
        info = {key: sum(i[key] for i in infos) for key in
                ("n_steps", "n_sv", "n_updates", "n_zero_norm", "n_maintenance", "n_merges",
                 "n_removals", "n_projections", "n_inspan", "n_merge_evals", "n_coalesced",
                 "train_seconds",
                 "maintenance_seconds")}
        info["merge_fraction"] = info["n_merges"] / max(info["n_steps"], 1)
        info["per_model"] = infos
    info["gamma"] = gamma
    meta = _model_params(params, n, d, gamma, {"multiclass_scheme": "ovr"} if k > 2 else {})
    meta.pop("variant", None)
    model = KernelModel(labels, kernel, sp.csr_matrix(sv, shape=(sv.shape[0], d)), coef,
                        np.zeros(coef.shape[1]), multiclass, "bsca", params=meta)
    model.train_info = info
    # one-vs-rest: model c is refitted on its own support vectors
    bounds = np.cumsum([0] + [i["n_sv"] for i in infos])
    groups = None if k == 2 else [(np.arange(bounds[c], bounds[c + 1]), [c]) for c in models]
    return polish_model(model, X, y_index, class_cost, params, groups=groups,
                        on_iteration=refit_progress(callback, progress.total))
