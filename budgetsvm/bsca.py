"""Budgeted stochastic coordinate ascent on the dual, BSCA (docs/ALGORITHMS.md §3): problem setup
and model construction around the compiled core budgetsvm/_bsca.pyx, on the SV store of
budgetsvm/_budget.pyx (s = 1, stored coefficients are β = y·δ). Two classes give one binary
model; k > 2 classes give k one-vs-rest binary models, each with its own budget B, stacked into
one 'argmax' model: coef (Σ n_sv, k), an SV of model c is nonzero only in column c.
"""
import itertools
import threading
import time

import numpy as np
import scipy.sparse as sp

from budgetsvm.budgeted import (check_budgeted, check_self_kernels, epoch_text, model_params,
                                new_store, refit_progress)
from budgetsvm.dcd import ovr_prefix
from budgetsvm.errors import ParameterError, TrainingDiverged
from budgetsvm.monitoring import bsca_objectives, compare_counters, exact_dual, store_decision_rows
from budgetsvm.problem import canonical_csr, class_costs, row_sqnorms
from budgetsvm.refit import (budget_was_full, polish_deferred, polish_model, refit_group,
                             refit_info, row_costs)
from budgetsvm.threads import (WAIT_SECONDS, Cancelled, CpuMeter, SummedProgress,
                               check_cancelled, cpu_metered, current_threads, parallel_map)


def fit_bsca_binary(X, y, upper, params, gamma, *, seed=None, callback=None, monitor=None,
                    trace=None, monitor_test=None, compare_merges=False):
    """One binary BSCA run. X canonical CSR; y ±1 (int8); upper[i] = C_i.

    Returns (store, alpha, info). monitor(row) gets a dict per epoch (epoch, time = training
    seconds so far without monitoring, cpu = the same in CPU seconds of this thread, primal,
    dual_tracked, dual_exact (None beyond monitoring.EXACT_DUAL_MAX_POINTS non-zero α),
    [test_accuracy], merge_fraction = merges / steps of that epoch, n_sv, n_updates); monitoring
    time is excluded. monitor_test: optional (X_test CSR, y_test ±1) for test accuracy per epoch.
    """
    from budgetsvm._bsca import bsca_solve
    n, d = X.shape
    # each step inserts at most one SV
    store = new_store(params, d, 1, gamma, compare_merges, max_insertions=n * int(params.epochs))
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
    check_self_kernels(params, gamma, xsq)
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
    info.update(compare_counters(counters))
    return store, alpha, info


def _shared_support_vectors(svs, origins, d):
    """The SVs of the one-vs-rest models (one canonical CSR matrix per model), each vector
    once: (sv (m, d) CSR, sv_rows), where model c's SVs are the rows sv_rows[c] of sv, in its
    own order. An unmerged SV (origin ≥ 0) is a copy of its training row, which the other
    models store too, so it is shared (the k-th copy of a row in one model with the k-th in
    another: without coalescing a model may hold a row twice); merged points (origin −1) are
    each their own. Without sharing, k models of B SVs each wrote k·B lines of k coefficients:
    63 MB for 400 rows of 200 classes."""
    rows_of = {}                     # (origin, k-th copy in its model) -> row of sv
    vectors, sv_rows = [], []        # vectors: (indices, values) of each row of sv
    for sv_c, origin_c in zip(svs, origins):
        copies = {}
        rows_c = np.empty(len(origin_c), dtype=np.intp)
        for j, origin in enumerate(origin_c.tolist()):
            part = slice(sv_c.indptr[j], sv_c.indptr[j + 1])
            vector = (sv_c.indices[part], sv_c.data[part])
            row = None
            if origin >= 0:
                key = (origin, copies.get(origin, 0))
                copies[origin] = key[1] + 1
                row = rows_of.get(key)
                if row is not None and not (np.array_equal(vectors[row][0], vector[0]) and
                                            np.array_equal(vectors[row][1], vector[1])):
                    row = None               # not the same vector after all: kept apart
                if row is None:
                    rows_of[key] = len(vectors)
            if row is None:
                row = len(vectors)
                vectors.append(vector)
            rows_c[j] = row
        sv_rows.append(rows_c)
    indptr = np.zeros(len(vectors) + 1, dtype=np.int64)
    np.cumsum([len(index) for index, _ in vectors], out=indptr[1:])
    sv = sp.csr_matrix((np.concatenate([v for _, v in vectors] or [np.zeros(0)]),
                        np.concatenate([i for i, _ in vectors] or [np.zeros(0, np.int32)]),
                        indptr), shape=(len(vectors), d))
    return sv, sv_rows


def pipelined_refits(fit_model, models, kernel, X, y_index, class_cost, params, labels,
                     callback, progress, sample_weight, after_solves):
    """The k one-vs-rest solves of train_bsca and the refit of each model (polish 'refit'),
    as 2k work items in the active pool: ("solve", c) for every c, then ("refit", c), which
    waits for its own solve. Items are claimed in that order: every solve starts as early as
    before, and a thread that finds no solve left to start takes the next model's refit,
    which begins once that model's solve has ended, while the last solves still run (3
    classes on 2 threads: the third solve runs beside the first refit).
    after_solves(): called once every solve has ended well, before this returns or raises
    (the monitor rows go out even when a refit fails, as they did before the refit began).
    Returns (fit_model's results, the GroupFit of every model, the CPU seconds of the refits
    in all threads).

    Model c's refit is refit_model's group c (refit_group) on the same support vectors in the
    same order, so the model is the same, bit for bit, as with the refit after all solves,
    and does not depend on the thread count. A model whose solve diverged is refused at the
    end of its solve, so that, as before, that error comes before any refit's."""
    from budgetsvm.model_io import DIVERGED
    k = len(labels)
    fitted, fits = [None] * k, [None] * k
    solved = [threading.Event() for _ in range(k)]
    cost_all = row_costs(class_cost, y_index, sample_weight)
    meter = CpuMeter()

    def refit_report(c):
        # the bar stays at the solves' steps so far: the other models' solves may still run
        show = refit_progress(callback, lambda: progress.total, labels[c])
        if show is None:
            return None
        show(0)
        count = itertools.count(1)
        return lambda: show(next(count))

    def run(item):
        phase, c = item
        if phase == "solve":
            try:
                result = fit_model(c)
                sv, coef, _, _ = result
                if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(sv.data))):
                    raise TrainingDiverged(DIVERGED)    # a diverged iterate has nothing to refit
                fitted[c] = result
            finally:
                solved[c].set()
            return
        # the model's own solve comes earlier in the items: it runs, or has failed (and then
        # this item is stopped: check_cancelled raises)
        while not solved[c].wait(WAIT_SECONDS):
            check_cancelled()
        if fitted[c] is None:
            raise Cancelled()          # the solve's error, from an earlier item, is raised
        sv, coef, _, info = fitted[c]
        with cpu_metered(meter):
            fits[c] = refit_group(kernel, sv, coef.reshape(-1, 1), np.zeros(1), [c], k, X,
                                  y_index, cost_all, seed=int(params.seed),
                                  check_solver=budget_was_full(info)[0],
                                  on_iteration=refit_report(c))

    try:
        parallel_map(run, [("solve", c) for c in models] + [("refit", c) for c in models])
    finally:
        if all(result is not None for result in fitted):
            after_solves()
    return fitted, fits, meter.seconds


def apply_refits(model, fits, refit_seconds, sv_rows, n, polish):
    """The one-vs-rest model with the refit of every model (fits: pipelined_refits' GroupFit
    per model; a model whose solver's coefficients classify better keeps them), and the
    train_info of refit_model."""
    for c, fit in enumerate(fits):
        if not fit.kept:
            model.coef[sv_rows[c], c] = fit.coef[:, 0]
            model.rho[c] = fit.rho[0]
    model._prepared = None
    info = refit_info(fits, n)
    info["refit_seconds"] = refit_seconds
    model.params["polish"] = polish
    model.train_info.update(info)
    return model


def train_bsca(X, y_index, labels, params, callback=None, *, monitor=None, monitor_test=None,
               compare_merges=False, sample_weight=None):
    """Train a budgeted kernel SVM by BSCA (docs/ALGORITHMS.md §3); returns a KernelModel. The
    fit signature of every solver (solvers.SolverSpec).

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
    sample_weight: positive instance weights (the Python API's): the box of α_i is
    [0, C·w_{y_i}·sample_weight[i]], and the refit weighs row i's loss alike.
    """
    from budgetsvm.model import KernelModel, KernelSpec
    labels = np.asarray(labels, dtype=np.float64)
    k = len(labels)
    if k < 2:
        raise ParameterError("BSCA needs at least two classes")
    X = canonical_csr(X)
    n, d = X.shape
    check_budgeted(params, d, n * int(params.epochs))
    gamma = params.effective_gamma(d)
    y_index = np.asarray(y_index, dtype=np.int32)
    class_cost = class_costs(labels, params)
    upper = class_cost[y_index]
    if sample_weight is not None:
        upper = upper * sample_weight
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
        mt = None
        if test is not None:
            # ±1 of this model's class against the rest; binary, a test row of a label the
            # training data lack (index −1) is 0, an error whatever the model predicts (for
            # k > 2 it is one of the rest, as the class-vs-rest task has it)
            mt = (test[0], np.where(test[1] == c, 1, -1 if k > 2 else
                                    np.where(test[1] == 1, -1, 0)))
        label = labels[c]
        report = None if callback is None else progress.reporter(
            lambda text, steps: ovr_prefix(label, k, progress.done) + text)
        store, alpha, info = fit_bsca_binary(X, y, upper, params, gamma, callback=report,
                                             monitor=mon, monitor_test=mt,
                                             compare_merges=compare_merges)
        progress.finished()
        sv, A, origin, _ = store.export()
        # sparse at once: k dense exports of B × d (105 of 220 MB each on sector.scale) held
        # until the last model ends ran out of memory
        return sp.csr_matrix(sv), A[:, 0], origin, info

    kernel = KernelSpec(params.kernel, gamma, int(params.degree), float(params.coef0))
    # One-vs-rest with the refit: model c's refit needs only its own solve, so it is a work
    # item of its own, claimed after every solve (pipelined_refits): the threads that finish
    # their solves refit the models solved so far while the last solves run.
    pipelined = k > 2 and params.polish == "refit" and not polish_deferred()

    def hand_over_monitor_rows():
        for c in models:
            for row in rows[c]:
                monitor(row)

    if pipelined:
        fitted, fits, refit_seconds = pipelined_refits(
            fit_model, models, kernel, X, y_index, class_cost, params, labels, callback,
            progress, sample_weight, after_solves=hand_over_monitor_rows)
    else:
        fitted = parallel_map(fit_model, models)
        hand_over_monitor_rows()
    svs = [sv for sv, _, _, _ in fitted]
    coefs = [a for _, a, _, _ in fitted]
    infos = [info for _, _, _, info in fitted]
    if k == 2:
        sv, coef, multiclass = svs[0], coefs[0].reshape(-1, 1), "binary"
        info = dict(infos[0])
    else:
        sv, sv_rows = _shared_support_vectors(svs, [origin for _, _, origin, _ in fitted], d)
        coef = np.zeros((sv.shape[0], k))
        for c, a in enumerate(coefs):
            coef[sv_rows[c], c] = a
        multiclass = "argmax"
        info = {key: sum(i[key] for i in infos) for key in
                ("n_steps", "n_sv", "n_updates", "n_zero_norm", "n_maintenance", "n_merges",
                 "n_removals", "n_projections", "n_inspan", "n_merge_evals", "n_coalesced",
                 "train_seconds",
                 "maintenance_seconds")}
        info["merge_fraction"] = info["n_merges"] / max(info["n_steps"], 1)
        info["per_model"] = infos
        info["sv_rows"] = sv_rows          # model c's SVs: rows sv_rows[c] of the model's SVs
    info["gamma"] = gamma
    meta = model_params(params, n, d, gamma, {"multiclass_scheme": "ovr"} if k > 2 else {})
    meta.pop("variant", None)
    model = KernelModel(labels, kernel, sp.csr_matrix(sv, shape=(sv.shape[0], d)), coef,
                        np.zeros(coef.shape[1]), multiclass, "bsca", params=meta)
    model.train_info = info
    if pipelined:
        return apply_refits(model, fits, refit_seconds, sv_rows, n, params.polish)
    # one-vs-rest: model c is refitted on its own support vectors, in its own order
    groups = None if k == 2 else [(sv_rows[c], [c]) for c in models]
    return polish_model(model, X, y_index, class_cost, params, groups=groups,
                        on_iteration=refit_progress(callback, progress.total),
                        row_weight=sample_weight)
