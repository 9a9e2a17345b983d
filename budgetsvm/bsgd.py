"""Budgeted stochastic gradient descent, BSGD (docs/ALGORITHMS.md §1): problem setup and model
construction around the compiled core budgetsvm/_bsgd.pyx, on the SV store of
budgetsvm/_budget.pyx. Two classes give one binary model (label[0] is y = +1); k > 2 classes give
one Crammer–Singer model with a coefficient per class per SV ('argmax' prediction).
"""
import time

import numpy as np
import scipy.sparse as sp

from budgetsvm.budgeted import (check_budgeted, check_self_kernels, epoch_text, model_params,
                                new_store, refit_progress)
from budgetsvm.errors import ParameterError
from budgetsvm.monitoring import budgeted_primal, compare_counters, monitor_accuracy
from budgetsvm.problem import canonical_csr, class_weights, csr_arrays
from budgetsvm.refit import polish_model


def _variant_constants(params):
    """(η, U) of a BSGD run: --eta and --radius, 1 when not given (η: norma and mp; U: mp)."""
    return (float(params.eta) if params.eta is not None else 1.0,
            float(params.radius) if params.radius is not None else 1.0)


def bsgd_setup(params, d, n_classes, compare_merges=False, max_insertions=None):
    """Check the BSGD options for d features and build the empty SV store (coalescing repeated
    insertions when params.effective_coalesce()); max_insertions: the run's steps (None when
    unknown, as in --stream), see budgeted.store_budget.

    Returns (store, solver keyword arguments for bsgd_solve: variant, eta, radius, gamma)."""
    check_budgeted(params, d, max_insertions)
    gamma = params.effective_gamma(d)
    variant = params.variant
    eta, radius = _variant_constants(params)
    nr_coef = 1 if n_classes == 2 else n_classes
    store = new_store(params, d, nr_coef, gamma, compare_merges, track_q=(variant == "mp"),
                      max_insertions=max_insertions)
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
    info.update(compare_counters(counters))
    return info


def fit_bsgd(X, y_index, n_classes, params, callback=None, *, monitor=None, monitor_test=None,
             compare_merges=False, trace=None, **solver_options):
    """Run BSGD; returns (sv dense (n_sv, d), coef (n_sv, nr_coef) true coefficients,
    origin (n_sv,), info dict). ``trace``/``solver_options`` are passed to the core (tests);
    compare_merges: comparison mode of the store (diagnostics, slower), its counters go to info.

    monitor(row): called after every epoch with epoch, time (training seconds so far, monitoring
    excluded), cpu (the same in CPU seconds of the training thread), primal (C-form, binary
    only), merge_fraction (merges / steps of the epoch), n_sv and, with monitor_test = (X_test
    CSR, test class indices), test_accuracy. The epochs then run one call of the core each, with
    the order the uninterrupted run would use: the model is the same with or without
    monitoring."""
    from budgetsvm._bsgd import bsgd_solve
    from budgetsvm._rng import Random
    X = canonical_csr(X)
    n, d = X.shape
    # each step inserts at most one SV (a caller's own visiting order: no bound known)
    max_insertions = None if "order" in solver_options else n * int(params.epochs)
    store, options, gamma = bsgd_setup(params, d, n_classes, compare_merges, max_insertions)
    class_weight = solver_options.pop("class_weight")
    options.update(solver_options)
    data, indices, indptr, xsq = csr_arrays(X)
    check_self_kernels(params, gamma, xsq)
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
        upper = float(params.C) * class_weight[y_index] * options.get("row_weight", 1.0)
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
                row["test_accuracy"] = monitor_accuracy(store, res["s"], params, gamma,
                                                         *monitor_test)
            monitor(row)
    sv, A, origin, _ = store.export()
    info = bsgd_info(store, res, seconds, maintenance_seconds, gamma)
    return sv, A * res["s"], origin, info


def train_bsgd(X, y_index, labels, params, callback=None, *, monitor=None, monitor_test=None,
               compare_merges=False, sample_weight=None):
    """Train a budgeted kernel SVM by BSGD; returns a KernelModel. The fit signature of every
    solver (solvers.SolverSpec).

    X: CSR float64 (n × d); y_index: int32 class of every row in label order; labels: float64
    class labels (labels.group_classes); params: TrainParams (C, kernel, gamma (None: 1/d),
    degree, coef0, class_weights, seed, budget, epochs, maintenance, merge_search, variant,
    eta, radius). callback(step, info) is called about every 0.1 s. monitor(row) and
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
    sample_weight: positive instance weights (the Python API's): the loss term of row i is
    weighted by w_{y_i}·sample_weight[i], in the steps and in the refit.
    """
    labels = np.asarray(labels, dtype=np.float64)
    if len(labels) < 2:
        raise ParameterError("BSGD needs at least two classes")
    X = canonical_csr(X)
    if monitor_test is not None:
        monitor_test = (canonical_csr(monitor_test[0]), np.asarray(monitor_test[1]))
    class_weight = class_weights(labels, params)
    extra = {} if sample_weight is None else \
        {"row_weight": np.ascontiguousarray(sample_weight, dtype=np.float64)}
    sv, coef, origin, info = fit_bsgd(X, y_index, len(labels), params, callback,
                                      monitor=monitor, monitor_test=monitor_test,
                                      compare_merges=compare_merges, class_weight=class_weight,
                                      **extra)
    model = bsgd_model(labels, params, X.shape[0], X.shape[1], sv, coef, info)
    return polish_model(model, X, y_index, float(params.C) * class_weight, params,
                        on_iteration=refit_progress(callback, X.shape[0] * int(params.epochs)),
                        row_weight=sample_weight)


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
    meta = model_params(params, n, d, gamma, extra)
    model = KernelModel(labels, kernel, sp.csr_matrix(sv, shape=(sv.shape[0], d)), coef,
                        np.zeros(coef.shape[1]), multiclass, "bsgd", params=meta)
    model.train_info = info
    return model
