"""Worker threads (-n, n_jobs; budgetsvm/threads.py) never change a result.

Oracles: the run on one thread (-n 1, the serial path: every part in the main thread, in
order) for the files of every solver, of cross-validation, of the probability models and of
prediction; the serial loop's exception for a failing part; the exit codes and the absence
of any output file after Ctrl-C/SIGTERM for runs interrupted in their worker threads.
"""
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm import threads
from budgetsvm.model import KernelModel, KernelSpec
from reference.data import write_libsvm

BIN = Path(sys.executable).parent
DATA = Path(__file__).resolve().parent.parent / "data"

SOLVERS = {
    "dcd": ["-s", "dcd", "-c", "1"],
    "acf": ["-s", "acf", "-c", "1"],
    "ww": ["-s", "ww", "-c", "1"],
    "bsgd": ["-s", "bsgd", "--budget", "40", "--epochs", "2", "-c", "4"],
    "bsca": ["-s", "bsca", "--budget", "40", "--epochs", "2", "-c", "4"],
    "bsgd-none": ["-s", "bsgd", "--budget", "40", "--epochs", "2", "-c", "4",
                  "--polish", "none"],
    "bsca-none": ["-s", "bsca", "--budget", "40", "--epochs", "2", "-c", "4",
                  "--polish", "none"],
}


def run(tool, *args, cwd=None, check=True):
    result = subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, capture_output=True,
                            text=True, timeout=600)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def write_blobs(path, n=600, k=4, d=12, seed=3):
    """k overlapping Gaussian classes (labels 1..k) in d dimensions, LIBSVM format."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = rng.standard_normal((k, d))[y] + 1.5 * rng.standard_normal((n, d))
    return write_libsvm(path, X, y + 1, digits=5)


@pytest.fixture(scope="module")
def blobs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("threads")
    return write_blobs(folder / "blobs.txt"), write_blobs(folder / "blobs.t", n=300, seed=4)


def data_sets(blobs):
    return {"binary": DATA / "heart_scale.xz", "multi-class": blobs[0]}


@pytest.mark.parametrize("kind", ["binary", "multi-class"])
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_model_files_do_not_depend_on_the_threads(tmp_path, blobs, solver, kind):
    data = data_sets(blobs)[kind]
    models = {}
    for n in (1, 2, 3):
        run("bsvm-train", "-q", *SOLVERS[solver], "-n", n, data, tmp_path / f"m{n}")
        models[n] = (tmp_path / f"m{n}").read_bytes()
    assert models[1] == models[2] == models[3]        # cmp of the files


def write_two_bad_lines(path, n_rows=150_000, first_bad=100_000, second_bad=140_000):
    """A data file of n_rows lines with two bad ones, in its third and fourth 1 MiB blocks:
    line first_bad + 1 has the value '3:x', line second_bad + 1 descending indices."""
    rows = [b"%d 1:0.%06d 5:-0.25 13:1\n" % (1 if i % 3 else -1, i) for i in range(n_rows)]
    rows[first_bad] = b"1 1:0.5 3:x\n"
    rows[second_bad] = b"1 2:1 1:1\n"
    path.write_bytes(b"".join(rows))
    blocks = path.stat().st_size / (1 << 20)
    assert 2 < first_bad / n_rows * blocks < 3 < second_bad / n_rows * blocks
    return path


@pytest.mark.parametrize("polish", ["refit", "none"])
def test_streamed_models_do_not_depend_on_the_threads(tmp_path, polish):
    # --stream parses the next buffer in a worker thread while the solver runs (and the first
    # pass's blocks in all of them): the buffers, their order and so the model stay the same
    data = write_blobs(tmp_path / "big.txt", n=4000)
    models = {}
    for n in (1, 2, 3):
        run("bsvm-train", "-q", "--stream", "--stream-buffer", "0.0625", "--polish", polish,
            *SOLVERS["bsgd"][2:], "-n", n, data, tmp_path / f"m{n}")
        models[n] = (tmp_path / f"m{n}").read_bytes()
    assert data.stat().st_size > 6 * 65536          # six buffers and more
    assert models[1] == models[2] == models[3]


def test_a_bad_line_in_a_late_block_of_a_streamed_file_is_the_error_of_one_thread(tmp_path):
    # the first pass of --stream parses 1 MiB blocks in the worker threads: the first bad
    # line's error, with its line number, and no model file, as with -n 1
    data = write_two_bad_lines(tmp_path / "d")
    for n in (1, 3):
        result = run("bsvm-train", "-q", "--stream", "-n", n, data, tmp_path / f"m{n}",
                     check=False)
        assert result.returncode == 1
        assert result.stderr == f"{data}:100001: value is not a number: '3:x'\n"
        assert not (tmp_path / f"m{n}").exists()


@pytest.mark.parametrize("fmt", ["liblinear", "libsvm"])
def test_library_format_files_do_not_depend_on_the_threads(tmp_path, fmt):
    # LIBLINEAR's weight lines (one per feature) and LIBSVM's SV lines are formatted in blocks
    # of 1,024 rows by the worker threads: more than one block here
    rng = np.random.default_rng(5)
    if fmt == "liblinear":
        X = sp.random(300, 2600, density=0.01, random_state=6).toarray()
        y = rng.integers(0, 3, 300)
        options = ["-s", "dcd", "-c", "1", "-B", "1"]
    else:
        X = rng.standard_normal((2600, 5))
        y = (X[:, 0] + rng.standard_normal(2600) > 0).astype(int)
        options = ["-s", "bsgd", "--budget", "2500", "--epochs", "1", "-g", "2"]
    data = write_libsvm(tmp_path / "train.txt", X, y)
    files = []
    for n in (1, 3):
        run("bsvm-train", "-q", *options, "--format", fmt, "-n", n, data, tmp_path / f"m{n}")
        files.append((tmp_path / f"m{n}").read_bytes())
    assert files[0] == files[1] and files[0].count(b"\n") > 1100


def test_the_threads_are_not_written_into_the_model(tmp_path, blobs):
    run("bsvm-train", "-q", "-s", "dcd", "-n", "3", blobs[0], tmp_path / "m")
    run("bsvm-train", "-q", "-s", "dcd", blobs[0], tmp_path / "d")       # default: all cores
    assert (tmp_path / "m").read_bytes() == (tmp_path / "d").read_bytes()
    assert b"thread" not in (tmp_path / "m").read_bytes()


@pytest.mark.parametrize("solver", ["dcd", "ww", "bsgd", "bsca"])
def test_cross_validation_does_not_depend_on_the_threads(blobs, solver):
    outputs = {n: run("bsvm-train", *SOLVERS[solver], "-v", "5", "-n", n, blobs[0]).stdout
               for n in (1, 3)}
    assert outputs[1] == outputs[3]
    assert outputs[1].startswith("Cross Validation Accuracy = ")


@pytest.mark.parametrize("kind", ["binary", "multi-class"])
@pytest.mark.parametrize("solver", ["dcd", "ww", "bsgd", "bsca"])
def test_probability_models_and_outputs_do_not_depend_on_the_threads(tmp_path, blobs, solver,
                                                                     kind):
    data = data_sets(blobs)[kind]
    test = blobs[1] if kind == "multi-class" else data
    files = {}
    for n in (1, 3):
        run("bsvm-train", "-q", *SOLVERS[solver], "-b", "1", "-n", n, data, tmp_path / f"m{n}")
        run("bsvm-predict", "-q", "-b", "1", "-n", n, test, tmp_path / f"m{n}",
            tmp_path / f"p{n}")
        files[n] = ((tmp_path / f"m{n}").read_bytes(), (tmp_path / f"p{n}").read_bytes())
    assert files[1] == files[3]


@pytest.mark.parametrize("solver", ["dcd", "bsgd", "bsca"])
def test_prediction_files_do_not_depend_on_the_threads(tmp_path, blobs, solver):
    # a9a.t: 16281 rows, 3 text blocks of bsvm-predict and two linear row blocks per block
    train, test = (DATA / "a9a.xz", DATA / "a9a.t.xz") if solver != "bsca" else blobs
    run("bsvm-train", "-q", *SOLVERS[solver], train, tmp_path / "m")
    outputs = {}
    for n in (1, 2, 3):
        result = run("bsvm-predict", "-n", n, test, tmp_path / "m", tmp_path / f"p{n}")
        outputs[n] = ((tmp_path / f"p{n}").read_bytes(), result.stdout)
    assert outputs[1] == outputs[2] == outputs[3]


def test_monitor_files_list_the_epochs_in_model_order(tmp_path, blobs):
    # bsca one-vs-rest with monitoring: the rows of the k models come in model order, epoch
    # by epoch, whatever thread trained which model; the model file is the same
    rows = {}
    for n in (1, 3):
        run("bsvm-train", "-q", *SOLVERS["bsca"], "--monitor", tmp_path / f"mon{n}",
            "--monitor-test", blobs[1], "-n", n, blobs[0], tmp_path / f"m{n}")
        lines = (tmp_path / f"mon{n}").read_text().splitlines()
        header = lines[0].split(",")
        rows[n] = [[line.split(",")[header.index(key)] for key in
                    ("model", "epoch", "primal", "n_sv", "test_accuracy")] for line in lines[1:]]
    assert rows[1] == rows[3]
    assert [(r[0], r[1]) for r in rows[1]] == [(str(c), str(e)) for c in range(4)
                                               for e in (1, 2)]
    assert (tmp_path / "m1").read_bytes() == (tmp_path / "m3").read_bytes()


def test_grid_passes_the_threads_through(tmp_path):
    results = {}
    for n in (1, 3):
        out = run("bsvm-grid", "-s", "bsca", "--budget", "20", "--epochs", "1", "-log2c",
                  "-1,1,2", "-log2g", "-3,-3,1", "-v", "3", "-j", "1", "-n", n, "-out",
                  tmp_path / f"g{n}.out", DATA / "heart_scale.xz", cwd=tmp_path)
        results[n] = ((tmp_path / f"g{n}.out").read_text(), out.stdout.splitlines()[-1])
    assert results[1] == results[3]


def test_estimators_do_not_depend_on_n_jobs(blobs):
    from budgetsvm import io
    from budgetsvm.estimators import BudgetSVC, LinearSVC, WWLinearSVC
    X, y = io.read_problem(blobs[0])
    Xt, _ = io.read_problem(blobs[1], n_features=X.shape[1])
    for make in (lambda n: BudgetSVC(solver="bsca", budget=30, epochs=2, n_jobs=n,
                                     probability=True),
                 lambda n: LinearSVC(n_jobs=n), lambda n: WWLinearSVC(n_jobs=n)):
        one, three = make(1).fit(X, y), make(3).fit(X, y)
        assert np.array_equal(one.decision_function(Xt), three.decision_function(Xt))
        assert np.array_equal(one.predict(Xt), three.predict(Xt))
        if one.probability:
            assert np.array_equal(one.predict_proba(Xt), three.predict_proba(Xt))
    with pytest.raises(ValueError, match="n_jobs"):
        LinearSVC(n_jobs=0).fit(X, y)


@pytest.mark.parametrize("nr_fold", [2, 3, 5, 10, 31])
def test_every_fold_is_solved_once_and_finished_after_its_solver(nr_fold):
    # the order in which cross-validation hands out its work (train.fold_items): each fold's
    # solver run once, its refit and predictions once and later, two folds later (the
    # lookahead) or at the end, and the solver runs in fold order
    from budgetsvm.train import REFIT_LOOKAHEAD, fold_items
    items = fold_items(nr_fold)
    assert sorted(items) == sorted([("train", f) for f in range(nr_fold)] +
                                   [("finish", f) for f in range(nr_fold)])
    position = {item: i for i, item in enumerate(items)}
    assert [f for phase, f in items if phase == "train"] == list(range(nr_fold))
    for f in range(nr_fold):
        later = min(f + REFIT_LOOKAHEAD, nr_fold - 1)
        assert position[("finish", f)] > position[("train", later)]
        if f + REFIT_LOOKAHEAD + 1 < nr_fold:
            assert position[("finish", f)] < position[("train", f + REFIT_LOOKAHEAD + 1)]


def test_a_scored_fold_is_refitted_on_the_threads(monkeypatch, blobs):
    # bsvm-grid scores a point fold by fold (train.fold_predictions, outside any pool of its
    # own): the refit must run inside the training's pool, not be put off past it (a spy on
    # the real refit records the threads it had)
    from budgetsvm import io, refit
    from budgetsvm.params import TrainParams
    from budgetsvm.train import fold_predictions
    seen = []
    real = refit.refit_model

    def spy(*args, **kwargs):
        seen.append(threads.current_threads())
        return real(*args, **kwargs)
    monkeypatch.setattr(refit, "refit_model", spy)
    X, y = io.read_problem(str(blobs[0]))
    test = np.arange(len(y)) % 5 == 0
    params = TrainParams(solver="bsgd", budget=40, epochs=1, n_threads=2)
    predicted = fold_predictions(X, y, test, params)
    assert seen == [2] and predicted.shape == (int(test.sum()),)


def _spy_on_bsca(monkeypatch, y, fail_class=None):
    """Record (phase, class index, start, end) of every one-vs-rest solve and refit of bsca
    (the real ones) on rows labelled y, and make the solve of ``fail_class`` raise instead."""
    from budgetsvm.labels import group_classes
    _, y_index = group_classes(y)
    monkeypatch.undo()                     # the spies of an earlier call are taken off
    from budgetsvm import bsca
    from budgetsvm.errors import TrainingDiverged
    events, lock = [], threading.Lock()

    def timed(phase, real, positive):
        def spy(*args, **kwargs):
            start = time.perf_counter()
            c = positive(args, kwargs)
            if phase == "solve" and c == fail_class:
                time.sleep(0.05)          # the other threads are at work meanwhile
                raise TrainingDiverged(f"training diverged: class {c}")
            result = real(*args, **kwargs)
            with lock:
                events.append((phase, c, start, time.perf_counter()))
            return result
        return spy
    monkeypatch.setattr(bsca, "fit_bsca_binary", timed(
        "solve", bsca.fit_bsca_binary,
        lambda args, kwargs: int(y_index[np.argmax(args[1] > 0)])))
    monkeypatch.setattr(bsca, "refit_group", timed(
        "refit", bsca.refit_group, lambda args, kwargs: args[4][0]))
    return events


@pytest.mark.parametrize("case", ["plain", "weighted", "sampled rows"])
def test_one_vs_rest_bsca_refits_each_model_after_its_own_solve(monkeypatch, blobs, case):
    # the k solves and k refits are 2k work items (bsca.pipelined_refits): a model's refit
    # starts once its own solve has ended, possibly before the other solves end, and the
    # model has the bits of the refit after all solves (refit.refit_model, as cross-validation
    # runs it: deferred), on every thread count; also with class weights and instance weights
    # (the rows' costs), and with the refit on a seeded sample of the rows (a block limit)
    from budgetsvm import io, refit
    from budgetsvm.params import TrainParams
    from budgetsvm.train import train
    X, y = io.read_problem(str(blobs[0]))
    params = TrainParams(solver="bsca", budget=40, epochs=2, C=4.0, n_threads=1)
    weights = None
    if case == "weighted":
        params = TrainParams(**dict(vars(params), class_weights={2.0: 3.0, 4.0: 0.5}))
        weights = 0.5 + np.arange(len(y)) % 3
    limit = {"sampled rows": 8 * 40 * 200}.get(case, refit.MAX_BLOCK_BYTES)   # 200 rows of 40 SVs
    with refit.deferred_polish() as pending:
        monkeypatch.setattr(refit, "MAX_BLOCK_BYTES", limit)
        serial = train(X, y, params, sample_weight=weights)
    serial = pending[0].run(X)
    assert (serial.train_info["refit_rows"] == 200) == (case == "sampled rows")
    for n_threads in (1, 2, 3):
        events = _spy_on_bsca(monkeypatch, y)
        monkeypatch.setattr(refit, "MAX_BLOCK_BYTES", limit)
        model = train(X, y, TrainParams(**dict(vars(params), n_threads=n_threads)),
                      sample_weight=weights)
        assert model.coef.tobytes() == serial.coef.tobytes()
        assert model.rho.tobytes() == serial.rho.tobytes()
        for key in ("refit_iterations", "refit_rank", "refit_kept_solver", "refit_objective",
                    "refit_converged", "refit_rows"):
            assert model.train_info[key] == serial.train_info[key]
        assert 0.0 < model.train_info["refit_seconds"] < 60.0
        assert model.params == serial.params
        ends = {(phase, c): end for phase, c, _, end in events}
        assert sorted(ends) == sorted((phase, c) for phase in ("refit", "solve")
                                      for c in range(4))
        for phase, c, start, _ in events:
            if phase == "refit":
                assert start >= ends["solve", c]


def test_a_later_solve_that_diverges_is_the_error_before_an_earlier_refits(monkeypatch, blobs):
    # the serial loop's order: every solve comes before every refit, so a solve whose model
    # diverged (non-finite coefficients, refused at the end of that solve) is the error even
    # when an earlier model's refit fails too and fails first in time, at any thread count
    from budgetsvm import bsca, io
    from budgetsvm.errors import TrainingDiverged
    from budgetsvm.labels import group_classes
    from budgetsvm.params import TrainParams
    from budgetsvm.train import train
    X, y = io.read_problem(str(blobs[0]))
    _, y_index = group_classes(y)
    last = int(y_index.max())
    real_solve, real_refit = bsca.fit_bsca_binary, bsca.refit_group

    class DivergedStore:
        def __init__(self, store):
            self.store = store

        def export(self):
            sv, A, origin, stamp = self.store.export()
            return sv, np.full_like(A, np.nan), origin, stamp

    def solve(*args, **kwargs):
        store, alpha, info = real_solve(*args, **kwargs)
        if int(y_index[np.argmax(args[1] > 0)]) == last:
            time.sleep(0.2)                   # meanwhile the refit of class 0 fails
            store = DivergedStore(store)
        return store, alpha, info

    def refit_group(*args, **kwargs):
        if args[4] == [0]:
            raise TrainingDiverged("training diverged: the refit of class 0")
        return real_refit(*args, **kwargs)
    monkeypatch.setattr(bsca, "fit_bsca_binary", solve)
    monkeypatch.setattr(bsca, "refit_group", refit_group)
    for n_threads in (1, 2, 3):
        with pytest.raises(TrainingDiverged, match="non-finite values"):
            train(X, y, TrainParams(solver="bsca", budget=40, epochs=2, n_threads=n_threads))


def test_a_failing_one_vs_rest_solve_is_the_error_and_its_refit_never_runs(monkeypatch, blobs):
    # the serial loop's error (the solve of class 1 comes before every refit), on any thread
    # count; the failed model is not refitted
    from budgetsvm import io
    from budgetsvm.errors import TrainingDiverged
    from budgetsvm.params import TrainParams
    from budgetsvm.train import train
    X, y = io.read_problem(str(blobs[0]))
    for n_threads in (1, 3):
        events = _spy_on_bsca(monkeypatch, y, fail_class=1)
        with pytest.raises(TrainingDiverged, match="^training diverged: class 1$"):
            train(X, y, TrainParams(solver="bsca", budget=40, epochs=2, n_threads=n_threads))
        assert ("refit", 1) not in {(phase, c) for phase, c, _, _ in events}


# ---------------------------------------------------------------------------------------------
# failures and signals
# ---------------------------------------------------------------------------------------------

def test_a_failing_fold_is_one_error_line_as_on_one_thread():
    # norma with a huge learning rate overflows (tests/test_unscaled.py checks that it does)
    options = ["-s", "bsgd", "--variant", "norma", "--eta", "1e6", "--budget", "50",
               "--epochs", "1", "-v", "3", DATA / "heart_scale.xz"]
    results = {n: run("bsvm-train", "-n", n, *options, check=False) for n in (1, 3)}
    for result in results.values():
        assert result.returncode == 1
        assert result.stdout == ""
        assert len(result.stderr.splitlines()) == 1
        assert result.stderr.startswith("fold 1 of 3: training diverged")
    assert results[1].stderr == results[3].stderr


@pytest.mark.parametrize("options", [[], ["-l", "0"], ["--precise", "-y", "0", "1"]])
def test_scaled_files_do_not_depend_on_the_threads(tmp_path, options):
    # a9a: 2.3 MB, three 1 MiB blocks for each pass; the parameter files too
    outputs = {}
    for n in (1, 2, 3):
        result = run("bsvm-scale", "-n", n, *options, "-s", tmp_path / f"s{n}", DATA / "a9a.xz")
        outputs[n] = (result.stdout, (tmp_path / f"s{n}").read_bytes())
    assert outputs[1] == outputs[2] == outputs[3]
    assert outputs[1][0].count("\n") == 32561


def test_a_bad_line_in_a_late_block_of_bsvm_scale_is_the_error_of_one_thread(tmp_path):
    # bad lines in the third and fourth 1 MiB blocks: the first one's error, with its line
    # number, for either pass (-r skips the first), as with -n 1
    data = write_two_bad_lines(tmp_path / "d")
    (tmp_path / "p").write_text("x\n-1 1\n1 0 1\n")
    for restore in ([], ["-r", tmp_path / "p"]):
        results = {n: run("bsvm-scale", "-n", n, *restore, data, check=False) for n in (1, 3)}
        for result in results.values():
            assert result.returncode == 1
            assert result.stderr == f"{data}:100001: value is not a number: '3:x'\n"
        assert results[1].stdout == results[3].stdout


def test_a_bad_line_of_the_test_file_is_the_error_of_one_thread(tmp_path):
    # bsvm-predict parses its 1 MiB text blocks in the worker threads: two bad lines in the
    # third and fourth blocks give the first one's error, with its line number in the file
    # (the oracle: the line written bad here, and the -n 1 run), and no output file.
    run("bsvm-train", "-q", "-s", "dcd", DATA / "heart_scale.xz", tmp_path / "m")
    first_bad = 100_000
    test = write_two_bad_lines(tmp_path / "t", first_bad=first_bad)
    results = {n: run("bsvm-predict", "-n", n, test, tmp_path / "m", tmp_path / f"p{n}",
                      check=False) for n in (1, 3)}
    for n, result in results.items():
        assert result.returncode == 1
        assert result.stderr == f"{test}:{first_bad + 1}: value is not a number: '3:x'\n"
        assert not (tmp_path / f"p{n}").exists()

def test_the_first_failing_item_is_raised_and_the_later_ones_stop():
    # The serial loop's exception (item 2's, though item 5 fails first in time); item 4,
    # running meanwhile, is stopped; item 0 and 1, before the failure, finish.
    started = threading.Event()
    finished, stopped = [], []

    def item(i):
        if i == 5:
            raise KeyError("item 5")
        if i == 2:
            started.wait(60)
            time.sleep(0.05)
            raise ValueError("item 2")
        if i == 4:
            started.set()
            deadline = time.monotonic() + 60
            try:
                while time.monotonic() < deadline:
                    threads.check_cancelled()
                    time.sleep(0.001)
            except threads.Cancelled:
                stopped.append(i)
                raise
        finished.append(i)
        return i

    with threads.pool(4):
        with pytest.raises(ValueError, match="item 2"):
            threads.parallel_map(item, range(8))
    assert stopped == [4]
    assert {0, 1} <= set(finished) and not set(finished) & {5, 6, 7}
    with pytest.raises(ValueError, match="item 2"):         # the same as one thread
        threads.parallel_map(lambda i: item(i) if i != 4 else i, range(8))


def test_nested_maps_give_the_serial_results():
    def outer(i):
        return threads.parallel_map(lambda j: (i, j, threads.parallel_map(abs, [-i, -j])),
                                    range(i + 1))
    with threads.pool(3):
        parallel = threads.parallel_map(outer, range(7))
    assert parallel == [outer(i) for i in range(7)]


def test_a_finished_inner_map_holds_nothing_while_its_late_helper_waits():
    # Both pool threads run outer items, so the helper that item 0's inner map submits waits
    # in the executor's queue until the outer map ends. Once the inner map has returned, its
    # function and items must be free (a cross-validation fold's kernel block used to stay
    # alive until the last fold): the object that only the inner items refer to is collected.
    class Payload:
        pass

    outer_done = threading.Event()
    collected = []

    def outer(i):
        if i == 1:
            outer_done.wait(60)           # keeps the second thread busy meanwhile
            return i
        try:
            payload = Payload()
            alive = weakref.ref(payload)
            inner = threads.parallel_map(lambda item: isinstance(item, Payload), [payload] * 3)
            assert inner == [True, True, True]
            del payload
            gc.collect()
            collected.append(alive() is None)
        finally:
            outer_done.set()
        return i

    with threads.pool(2):
        assert threads.parallel_map(outer, range(2)) == [0, 1]
    assert collected == [True]


def test_threads_that_predict_with_a_fresh_model_share_one_prediction_cache():
    # bsvm-predict's first blocks reach a freshly loaded model in several threads at once:
    # they must all get the one cache (dense SV matrix, norms), not one copy each.
    rng = np.random.default_rng(0)
    sv = sp.csr_matrix(rng.random((3000, 600)))
    model = KernelModel([1.0, -1.0], KernelSpec("rbf", gamma=0.1), sv,
                        rng.standard_normal((3000, 1)), np.zeros(1), "binary", "bsgd")
    start = threading.Barrier(6)
    caches = [None] * 6

    def prepare(i):
        start.wait(60)
        caches[i] = model._prepare()
    workers = [threading.Thread(target=prepare, args=(i,)) for i in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert all(cache is caches[0] for cache in caches)
    assert np.array_equal(caches[0][0], sv.T.toarray())


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def long_blobs(tmp_path_factory):
    return write_blobs(tmp_path_factory.mktemp("long") / "long.txt", n=3000, k=5)


LONG_RUNS = {
    "one-vs-rest dcd": ["-s", "dcd", "-c", "1000", "-e", "1e-12", "--max-iter", "0"],
    "one-vs-rest bsca": ["-s", "bsca", "--budget", "500", "--epochs", "100000"],
    "cross-validation": ["-s", "bsgd", "--budget", "200", "--epochs", "100000", "-v", "5"],
    "streaming": ["-s", "bsgd", "--budget", "200", "--epochs", "100000", "--stream",
                  "--stream-buffer", "0.0625"],
    "probability folds": ["-s", "acf", "-c", "1000", "-e", "1e-12", "--max-iter", "0",
                          "-b", "1"],
}


@pytest.mark.parametrize("run_name", sorted(LONG_RUNS))
@pytest.mark.parametrize("signum, status, word", [(signal.SIGINT, 130, "interrupted"),
                                                  (signal.SIGTERM, 143, "terminated")])
def test_signals_stop_every_thread(tmp_path, long_blobs, run_name, signum, status, word):
    process = subprocess.Popen([str(BIN / "bsvm-train"), "-n", "3", *LONG_RUNS[run_name],
                                str(long_blobs), "m.model"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=_default_sigint)
    time.sleep(2.0)                  # imported, read, and inside the solvers' threads
    assert process.poll() is None, process.communicate()[1].decode()
    sent = time.monotonic()
    process.send_signal(signum)
    _, err = process.communicate(timeout=30)
    elapsed = time.monotonic() - sent
    assert process.returncode == status, err.decode()
    assert err.decode().strip() == word
    assert elapsed < 1.0, f"took {elapsed:.2f} s to stop"
    assert list(tmp_path.iterdir()) == []            # no model, no temporary file


@pytest.fixture
def ctrl_c_raises():
    # SIGINT as KeyboardInterrupt, also where pytest was started with it ignored (a
    # background job of a non-interactive shell: Python then installs no handler)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _ordered_map_interrupted_after(seconds, item, items, ahead, check=lambda: None):
    """ordered_map(item, items) on a pool of 2 threads, read to its end, with Ctrl-C arriving
    after this many seconds: the block must raise KeyboardInterrupt; then check() runs, still
    inside the pool (whose end would wait for items left running)."""
    timer = _interrupt_main_thread_after(seconds)
    try:
        with threads.pool(2):
            with pytest.raises(KeyboardInterrupt):
                with threads.ordered_map(item, items, ahead=ahead) as results:
                    list(results)
            check()
    finally:
        timer.cancel()


def _interrupt_main_thread_after(seconds):
    timer = threading.Timer(seconds, lambda: signal.pthread_kill(threading.main_thread().ident,
                                                                   signal.SIGINT))
    timer.start()
    return timer


def test_ordered_map_waits_for_the_item_whose_result_a_signal_interrupted(ctrl_c_raises):
    # Ctrl-C while the caller waits for item 0's result: leaving the block must stop and wait
    # for every item in flight, item 0 included (it was taken out of the queue before its
    # result was in, and then left running past the block).
    finished = []

    def item(i):
        if i == 0:
            time.sleep(1.0)               # one call that cannot be stopped
        finished.append(i)
        return i

    def item_0_had_finished():
        assert 0 in finished, "the block was left while item 0 still ran"
    _ordered_map_interrupted_after(0.2, item, range(4), ahead=2, check=item_0_had_finished)


def test_commands_leave_an_item_stuck_in_one_call_behind_after_a_signal():
    # The commands' process ends once a signal is handled, so a map gives up on an item that
    # cannot stop (numpy's eigh of a refit's large kernel matrix, in a worker at -n 2) after
    # abandon_stuck_threads_after's seconds; a library caller (the default) waits for it, so
    # that no thread outlives the call. The oracle: the item's own duration.
    code = (
        "import os, sys, time\n"
        "from budgetsvm import threads\n"
        "threads.abandon_stuck_threads_after(float(sys.argv[1]) if sys.argv[1] else None)\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    with threads.pool(2):\n"
        "        threads.parallel_map(lambda i: time.sleep(4), range(2))\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    os._exit(130)\n")
    for abandon, lower, upper in (("0.3", 0.0, 1.5), ("", 3.0, 30.0)):
        process = subprocess.Popen([sys.executable, "-c", code, abandon],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=_default_sigint)
        assert process.stdout.readline().strip() == "ready"
        time.sleep(0.3)
        start = time.perf_counter()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
        elapsed = time.perf_counter() - start
        assert process.returncode == 130 and out.strip() == "interrupted", err
        assert lower <= elapsed < upper, (abandon, elapsed)


def test_ordered_map_raises_an_items_error_before_a_later_read_error():
    # The serial loop raises item 0's error before it reads item 2; reading ahead must not
    # let the iterable's own later failure (a MemoryError joining a long line) come first.
    def blocks():
        yield 0
        yield 1
        raise RuntimeError("reading block 2 failed")

    def parse(block):
        if block == 0:
            time.sleep(0.2)
            raise ValueError("block 0 has a bad line")
        return block

    with pytest.raises(ValueError, match="block 0"):
        list(map(parse, blocks()))                       # the serial loop
    with threads.pool(2):
        with pytest.raises(ValueError, match="block 0"):
            with threads.ordered_map(parse, blocks(), ahead=4) as results:
                list(results)
        taken = []
        with pytest.raises(RuntimeError, match="block 2"):
            with threads.ordered_map(abs, blocks(), ahead=4) as results:
                taken.extend(results)
        assert taken == [0, 1]                           # the read error after the items


def test_a_signal_while_ordered_map_stops_its_items_after_an_error_is_not_lost(ctrl_c_raises):
    # Item 0 fails; while leaving the block waits for the items in flight, Ctrl-C arrives: it
    # is what comes out (the commands: 130), not the item's error (1).
    def item(i):
        if i == 0:
            raise ValueError("block 0 has a bad line")
        time.sleep(0.6)
        return i

    _ordered_map_interrupted_after(0.2, item, range(3), ahead=3)


# Four threads that are alive at the same time each allocate with malloc, then the process
# counts the heaps (arenas) that glibc's malloc_info lists. glibc gives every new thread an
# arena of its own while there are fewer than 8 per core, so without a limit there are 5.
ARENA_COUNT = """
import ctypes, os, sys, tempfile, threading
if sys.argv[1] == "command":
    sys.argv[0] = "bsvm-train"            # what the commands' processes see
import budgetsvm.cli
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
together = threading.Barrier(4)
def allocate():
    libc.malloc(100)
    together.wait()
workers = [threading.Thread(target=allocate) for _ in range(4)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
fd, path = tempfile.mkstemp()
os.close(fd)
info = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, info)
libc.fclose(info)
print(open(path).read().count("<heap nr="))
os.remove(path)
"""


@pytest.mark.skipif(not threads.is_glibc(), reason="malloc arenas and malloc_info are glibc's")
@pytest.mark.parametrize("process, user_setting, heaps", [
    ("command", {}, 1),            # the commands: one arena for every thread
    ("library", {}, 5),            # a program that imports the package keeps glibc's default
    ("command", {"MALLOC_ARENA_MAX": "3"}, 3),                         # the user's choice wins
    ("command", {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}, 2),    # in either form
])
def test_the_commands_threads_share_one_malloc_arena(process, user_setting, heaps):
    env = {k: v for k, v in os.environ.items()
           if k not in ("MALLOC_ARENA_MAX", "GLIBC_TUNABLES")}
    env.update(user_setting)
    result = subprocess.run([sys.executable, "-c", ARENA_COUNT, process], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == heaps
