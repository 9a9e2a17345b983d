"""Streaming BSGD training: data larger than memory (bsvm-train --stream).

BSGD is an online method: each step needs one row and the model. Streaming training therefore
never holds the training file in memory:

1. a first cheap pass over the file counts the rows n, finds the largest index d and the labels
   in order of first appearance (λ = 1/(nC), the default γ = 1/d and the label order need them);
2. every epoch re-reads the file in buffers of about ``buffer_bytes`` of text (whole lines) and
   visits the rows of each buffer in a seeded random order, continuing the global step counter
   t and the scale of the model from one buffer to the next (budgetsvm/_bsgd.pyx, ``state``).

With --polish refit (the default) the rows of a seeded uniform sample (at most
refit.STREAM_MAX_ROWS, and at most refit.STREAM_BLOCK_BYTES of kernel block) are kept while the
last epoch reads them, and the model is refitted on them (budgetsvm/refit.py).

Memory: the SV store (8·d·(B+1) bytes, as in memory) plus one buffer plus the refit's sample,
whatever the number of rows; with -n 2 or more threads, one more buffer, parsed in a worker
thread while the solver steps through the one before.

The difference from in-memory training: the shuffle is a permutation *within* each buffer, not
of the whole file, so rows from different buffers are never interleaved and a file sorted by
label trains badly (shuffle it once beforehand, e.g. with `shuf`). With one buffer holding the
whole file, the streamed model is the in-memory one of the same seed: both draw one permutation
per epoch from the same seeded generator (tests/test_stream.py checks it).
"""
import contextlib
import time
import warnings

import numpy as np
import scipy.sparse as sp

from budgetsvm import threads
from budgetsvm.errors import BsvmError, DataFormatError, StreamOrderWarning
from budgetsvm.io import map_problem_chunks
from budgetsvm.labels import group_classes

# Text read per buffer (the shuffle window); parsed rows take about as much memory again.
DEFAULT_BUFFER_MB = 16
# More distinct labels than this is not a classification problem (and would not be bounded).
MAX_CLASSES = 1 << 16


def scan(path, zero_based=False, stats=None):
    """First pass: (n rows, d = largest index, labels in label order (group_classes)).

    The blocks are parsed in the active pool's threads (io.map_problem_chunks); what is found
    does not depend on their size, so they are those of the in-memory reader, not buffers.
    stats (a dict), if given, receives largest: the largest absolute feature value."""
    if path == "-":
        raise BsvmError("--stream reads the training file more than once: give a file, not -")

    def summary(X, y):
        # (rows, width, largest |value|, labels in order of first appearance) of one block
        uniq, first = np.unique(y, return_index=True)
        return (X.shape[0], X.shape[1], float(np.abs(X.data).max()) if X.nnz else 0.0,
                uniq[np.argsort(first)])

    n, d, seen = 0, 0, []
    known = set()
    largest = 0.0
    with map_problem_chunks(path, summary, zero_based) as summaries:
        for rows, width, block_largest, block_labels in summaries:
            n += rows
            d = max(d, width)
            largest = max(largest, block_largest)
            for value in block_labels:
                if value not in known:
                    known.add(value)
                    seen.append(value)
            if len(seen) > MAX_CLASSES:
                raise DataFormatError(path, None, f"more than {MAX_CLASSES} distinct labels: "
                                      "is this a regression data set?")
    if n == 0:
        raise DataFormatError(path, None, "no data (the file is empty or has only comments)")
    labels, _ = group_classes(np.asarray(seen, dtype=np.float64))
    if stats is not None:
        stats["largest"] = largest
    return n, d, labels


@contextlib.contextmanager
def _parser_thread():
    """A pool of one thread that parses the streamed buffers (None on one thread). Not the
    active pool: a buffer parsed by each of its n threads in turn would leave a buffer's worth
    of freed memory in each thread's malloc arena (glibc keeps it for reuse), and memory would
    grow with -n (mnist scaled, 16 MB buffers, B = 100, the epochs: 247 MB with -n 8 on the
    pool's threads, 210 MB on this one thread, about 190 MB with -n 2 either way; measured
    before the commands shared one malloc arena, threads.share_one_malloc_arena, so it still
    holds for library use)."""
    if threads.current_threads() <= 1:
        yield None
        return
    parser = threads.Pool(1)
    try:
        yield parser
    finally:
        parser.shutdown()


def train_bsgd_stream(path, params, zero_based=False, buffer_mb=DEFAULT_BUFFER_MB,
                      callback=None, after_scan=None):
    """Train BSGD by streaming ``path`` (see the module docstring); returns a KernelModel.

    after_scan(n, d, labels, largest) is called after the first pass, before any training (the
    caller's checks that need the data: number of classes, scale); it may raise.
    callback(step, info) about every 0.1 s, as train_bsgd. model.train_info as train_bsgd,
    plus n_buffers (buffers per epoch) and single_class_buffers (buffers holding one class only:
    a sign that the file is sorted by label; a warning is issued). A file of a single class
    gives train.one_class_model's model (no epoch runs, train_info is empty)."""
    from budgetsvm._bsgd import bsgd_solve
    from budgetsvm._rng import Random
    from budgetsvm.bsgd import bsgd_info, bsgd_model, bsgd_setup
    from budgetsvm.budgeted import epoch_text, refit_progress
    from budgetsvm.budgeted import SELF_KERNEL_OVERFLOW, finite_self_kernels
    from budgetsvm.errors import TrainingDiverged
    from budgetsvm.problem import canonical_csr, check_class_costs, class_weights, csr_arrays
    from budgetsvm.train import EVERY_ROW_OVERFLOWS, overflow_warning
    from budgetsvm.params import check_params
    from budgetsvm.model_io import ensure_finite
    check_params(params)
    if params.solver != "bsgd":
        raise BsvmError("--stream is available for -s bsgd only (an online method)")
    buffer_bytes = max(int(buffer_mb * (1 << 20)), 1 << 16)
    stats = {}
    n, d, labels = scan(path, zero_based, stats)
    if after_scan is not None:
        after_scan(n, d, labels, stats["largest"])
    if len(labels) < 2:
        from budgetsvm.train import one_class_model
        return one_class_model(labels[0], params, d)
    check_class_costs(labels, params)
    store, options, gamma = bsgd_setup(params, d, len(labels))
    class_weight = class_weights(labels, params)
    # label → class index by binary search in the sorted labels
    sorted_labels = np.sort(labels)
    rank_of_sorted = np.argsort(labels)
    nC = float(n) * float(params.C)
    epochs = int(params.epochs)
    report = None
    if callback is not None:
        def report(step, total):
            callback(step, epoch_text(step, total, epochs, store.n))
    # The refit (--polish refit) needs rows after the last epoch: keep a seeded sample of them,
    # as large as its kernel block allows (all rows when they fit, as in memory).
    from budgetsvm.refit import STREAM_BLOCK_BYTES, STREAM_MAX_ROWS, polish_model, refit_rows
    keep = None
    if params.polish != "none":
        keep = refit_rows(n, int(params.budget), int(params.seed), STREAM_BLOCK_BYTES,
                          STREAM_MAX_ROWS, streaming=True)
        keep = np.arange(n) if keep is None else keep
    kept_X, kept_y = [], []
    rng, res = Random(int(params.seed)), None
    seconds = maintenance_seconds = 0.0
    rows_seen, n_buffers, single_class = 0, 0, 0
    # rows whose ‖x‖² overflows (the core skips them) and rows whose k(x, x) is finite, seen in
    # the first epoch: the warning and the refusals of train() on data in memory
    overflow_rows, first_overflow, bad_kernels, usable_kernels = 0, -1, False, False

    def prepare(X, y):
        # A buffer's class indices and solver arrays. With -n 2 or more this runs in a worker
        # thread on the next buffer while the solver steps through the current one
        # (map_problem_chunks, one buffer ahead); the buffers and their order are the same.
        # What the first pass did not see is reported by the loop below, which knows the
        # buffer's first row: (the row in the buffer, what it has).
        position = np.searchsorted(sorted_labels, y)
        position = np.minimum(position, len(sorted_labels) - 1)
        unseen = np.flatnonzero(sorted_labels[position] != y)
        if len(unseen):
            return None, None, None, (int(unseen[0]), f"label {y[unseen[0]]:g}")
        if X.shape[1] > d:
            row = int(np.searchsorted(X.indptr, np.argmax(X.indices >= d), side="right")) - 1
            return None, None, None, (row, f"a feature index above {d}")
        return X, rank_of_sorted[position].astype(np.int32), csr_arrays(X), None

    with _parser_thread() as parser:
        for epoch in range(epochs):
            rows_seen = 0
            with map_problem_chunks(path, prepare, zero_based, buffer_bytes, ahead=2,
                                    pool=parser) as buffers:
                for X, y_index, arrays, unseen in buffers:
                    if unseen is not None:
                        raise BsvmError(f"{path}: the file changed during training: its data "
                                        f"row {rows_seen + unseen[0] + 1} (epoch {epoch + 1}) "
                                        f"has {unseen[1]}, which the first pass did not see")
                    if rows_seen + X.shape[0] > n:
                        raise BsvmError(f"{path}: the file changed during training: it has "
                                        f"more than the {n} data rows of the first pass")
                    if keep is not None and epoch == epochs - 1:
                        lo, hi = np.searchsorted(keep, [rows_seen, rows_seen + X.shape[0]])
                        if hi > lo:
                            picked = keep[lo:hi] - rows_seen
                            kept_X.append(sp.csr_matrix(X[picked], shape=(hi - lo, d)))
                            kept_y.append(y_index[picked])
                    first_row = rows_seen
                    rows_seen += X.shape[0]
                    if epoch == 0:
                        n_buffers += 1
                        if X.shape[0] > 1 and np.all(y_index == y_index[0]):
                            single_class += 1
                        xsq = arrays[3]
                        overflow = np.flatnonzero(np.isinf(xsq))
                        if overflow.size and first_overflow < 0:
                            first_overflow = first_row + int(overflow[0])
                        overflow_rows += overflow.size
                        finite = finite_self_kernels(params, gamma, xsq)
                        bad_kernels |= not finite.all()
                        usable_kernels |= bool((finite & (xsq > 0)).any())
                    start = time.perf_counter()
                    # arrays: data, indices, indptr and the rows' squared norms
                    res = bsgd_solve(store, *arrays, y_index, class_weight, nC,
                                     callback=report, order=rng.permutation(X.shape[0]), state=res,
                                     total_steps=n * epochs, origin_offset=first_row, **options)
                    seconds += time.perf_counter() - start
                    maintenance_seconds += res["maintenance_seconds"]
                    # let this buffer go before the next is read: two buffers at most, not three
                    del X, y_index, arrays
            if rows_seen != n:
                raise BsvmError(f"{path}: the file changed during training "
                                f"({rows_seen} rows instead of {n})")
            if epoch == 0:
                if overflow_rows == n:
                    raise BsvmError(EVERY_ROW_OVERFLOWS)
                if bad_kernels and not usable_kernels:
                    raise TrainingDiverged(SELF_KERNEL_OVERFLOW)
                if overflow_rows:
                    warnings.warn(overflow_warning(overflow_rows, first_overflow),
                                  stacklevel=2)
    if single_class:
        warnings.warn(f"{single_class} of {n_buffers} stream buffers held a single class: is "
                      f"{path} sorted by label? Streaming shuffles only within a buffer; "
                      "shuffle the file first", StreamOrderWarning, stacklevel=2)
    sv, A, _, _ = store.export()
    info = bsgd_info(store, res, seconds, maintenance_seconds, gamma)
    info.update(n_buffers=n_buffers, single_class_buffers=single_class)
    model = ensure_finite(bsgd_model(labels, params, n, d, sv, A * res["s"], info))
    if keep is None:
        return model
    X_kept = canonical_csr(sp.vstack(kept_X, format="csr"))
    return ensure_finite(polish_model(model, X_kept, np.concatenate(kept_y),
                                      float(params.C) * class_weight, params,
                                      on_iteration=refit_progress(callback, n * epochs)))
