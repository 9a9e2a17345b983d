"""Streaming BSGD (issue 8) and per-epoch BSGD monitoring.

Oracles: resuming the core over pieces of the visiting order takes exactly the steps of one
uninterrupted call; streaming with one buffer is byte-identical to in-memory training (the same
seeded permutations); with several buffers it equals the core run on the whole data in the
concatenated buffer orders; peak memory does not grow with the number of rows.
"""
import dataclasses
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm._bsgd import bsgd_solve
from budgetsvm._budget import SVStore
from budgetsvm._rng import Random
from budgetsvm.datasets import checkerboard, write_checkerboard
from budgetsvm.io import iter_problem_chunks, read_problem
from budgetsvm.bsgd import fit_bsgd, train_bsgd
from budgetsvm.problem import csr_arrays
from budgetsvm.labels import group_classes
from budgetsvm.memory import available, run_measuring_peak
from budgetsvm.params import TrainParams
from budgetsvm.stream import scan, train_bsgd_stream
from reference.kernels import rbf

BIN = Path(sys.executable).parent


def _problem(n=300, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = sp.random(n, 6, density=0.6, random_state=seed, format="csr")
    y = rng.integers(0, classes, n).astype(np.int32)
    return X, y


def _store(nr_coef=1, maintenance="merge", variant="pegasos"):
    return SVStore(6, 15, nr_coef, "rbf", 0.7, 0.0, 3, maintenance, "gss",
                   track_q=(variant == "mp"))


@pytest.mark.parametrize("variant", ["pegasos", "norma", "mp"])
@pytest.mark.parametrize("classes", [2, 3])
def test_resumed_core_takes_the_same_steps(variant, classes):
    X, y = _problem(classes=classes)
    data, indices, indptr, xsq = csr_arrays(X)
    nr_coef = 1 if classes == 2 else classes
    weights = np.ones(classes)
    order = np.concatenate([Random(5).permutation(300), Random(6).permutation(300)])
    opts = dict(variant=variant, eta=0.5, radius=3.0)
    whole = _store(nr_coef, variant=variant)
    res_whole = bsgd_solve(whole, data, indices, indptr, xsq, y, weights, 300 * 2.0,
                           order=order, **opts)
    pieces = _store(nr_coef, variant=variant)
    res = None
    for part in np.split(order, [7, 250, 431]):
        res = bsgd_solve(pieces, data, indices, indptr, xsq, y, weights, 300 * 2.0,
                         order=part, state=res, **opts)
    assert res["t"] == res_whole["t"] == 600
    assert res["s"] == res_whole["s"]
    for a, b in zip(whole.export(), pieces.export()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("classes", [2, 3])
def test_monitoring_leaves_the_model_unchanged(classes):
    X, y = _problem(classes=classes, seed=2)
    params = TrainParams(solver="bsgd", C=4.0, gamma=0.7, budget=20, epochs=3, seed=9)
    weights = np.ones(classes)
    plain = fit_bsgd(X, y, classes, params, class_weight=weights)
    rows = []
    monitored = fit_bsgd(X, y, classes, params, class_weight=weights, monitor=rows.append,
                         monitor_test=(X, y))
    np.testing.assert_array_equal(plain[0], monitored[0])
    np.testing.assert_array_equal(plain[1], monitored[1])
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    # the last row describes the solver's final iterate (the model before any refit): its
    # accuracy on X, recomputed from the model trained with --polish none
    labels = np.arange(classes, dtype=np.float64)
    model = train_bsgd(X, y, labels, dataclasses.replace(params, polish="none"))
    assert rows[-1]["test_accuracy"] == pytest.approx(np.mean(model.predict(X) == y))
    if classes == 2:
        # C-form primal ½‖w‖² + C Σ hinge, computed densely from the exported model
        sv, coef = plain[0], plain[1][:, 0]
        Xd = X.toarray()
        K = rbf(sv, sv, 0.7)
        f = rbf(Xd, sv, 0.7) @ coef
        ypm = np.where(y == 0, 1.0, -1.0)
        primal = 0.5 * coef @ K @ coef + 4.0 * np.maximum(0, 1 - ypm * f).sum()
        assert rows[-1]["primal"] == pytest.approx(primal, rel=1e-10)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    folder = tmp_path_factory.mktemp("board")
    path = folder / "train.txt"
    write_checkerboard(path, 6000, seed=4)
    return path


def test_checkerboard_file_matches_the_generator(board):
    X, y = read_problem(str(board))
    Xg, yg = checkerboard(6000, 4)
    np.testing.assert_array_equal(y, yg)
    np.testing.assert_allclose(X.toarray(), Xg, atol=5e-7)
    # the label is the colour of the 4x4 cell of the unstandardised point
    u = Xg / np.sqrt(12.0) + 0.5
    assert np.all(yg == np.where((np.floor(4 * u[:, 0]) + np.floor(4 * u[:, 1])) % 2, -1, 1))


def test_scan_counts_rows_width_and_label_order(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("-1 3:1\n5 1:2\n# comment\n\n+1 7:0.5\n5 2:1\n")
    n, d, labels = scan(str(path))
    assert (n, d) == (4, 7)
    np.testing.assert_array_equal(labels, group_classes([-1, 5, 1, 5])[0])


def test_one_buffer_stream_equals_in_memory_training(board):
    params = TrainParams(solver="bsgd", C=10.0, gamma=2.0, budget=30, epochs=3, seed=3)
    X, y = read_problem(str(board))
    labels, y_index = group_classes(y)
    memory = train_bsgd(X, y_index, labels, params)
    streamed = train_bsgd_stream(str(board), params, buffer_mb=64)
    assert streamed.train_info["n_buffers"] == 1
    np.testing.assert_array_equal(memory.sv.toarray(), streamed.sv.toarray())
    np.testing.assert_array_equal(memory.coef, streamed.coef)
    np.testing.assert_array_equal(memory.rho, streamed.rho)
    assert memory.rho[0] != 0.0                  # the refit (default polish) ran on both


def test_stream_refit_uses_a_seeded_sample_of_the_last_epoch(board, monkeypatch):
    from budgetsvm import refit
    monkeypatch.setattr(refit, "STREAM_BLOCK_BYTES", 8 * 30 * 1000)   # 1000 of 6000 rows
    params = TrainParams(solver="bsgd", C=10.0, gamma=2.0, budget=30, epochs=2, seed=3)
    streamed = train_bsgd_stream(str(board), params, buffer_mb=1 / 16)
    unpolished = train_bsgd_stream(str(board), dataclasses.replace(params, polish="none"),
                                   buffer_mb=1 / 16)
    np.testing.assert_array_equal(streamed.sv.toarray(), unpolished.sv.toarray())
    assert streamed.train_info["refit_rows"] == 1000
    # the same refit, applied in memory to the rows the sample names, gives the same model
    X, y = read_problem(str(board))
    labels, y_index = group_classes(y)
    rows = refit.refit_rows(6000, 30, 3, 8 * 30 * 1000, refit.STREAM_MAX_ROWS, streaming=True)
    refit.polish_model(unpolished, X[rows], y_index[rows], np.full(2, 10.0), params)
    np.testing.assert_array_equal(streamed.coef, unpolished.coef)
    np.testing.assert_array_equal(streamed.rho, unpolished.rho)


def test_buffered_stream_equals_core_in_buffer_order(board):
    params = TrainParams(solver="bsgd", C=10.0, gamma=2.0, budget=30, epochs=2, seed=3,
                         merge_search="gss", polish="none")
    buffer_mb = 1 / 16                      # 64 KiB of text: several buffers of whole lines
    streamed = train_bsgd_stream(str(board), params, buffer_mb=buffer_mb)
    sizes = [c[0].shape[0] for c in iter_problem_chunks(str(board), block_bytes=1 << 16)]
    assert streamed.train_info["n_buffers"] == len(sizes) > 2
    # reference: the core on the whole data, visiting each buffer in its seeded permutation
    rng, offsets = Random(3), np.cumsum([0] + sizes[:-1])
    order = np.concatenate([np.concatenate([rng.permutation(m) + o
                                            for m, o in zip(sizes, offsets)])
                            for _ in range(2)])
    X, y = read_problem(str(board))
    labels, y_index = group_classes(y)
    store = SVStore(2, 30, 1, "rbf", 2.0, 0.0, 3, "merge", "gss")
    data, indices, indptr, xsq = csr_arrays(X)
    res = bsgd_solve(store, data, indices, indptr, xsq, y_index, np.ones(2), 6000 * 10.0,
                     order=order)
    sv, A, _, _ = store.export()
    np.testing.assert_array_equal(streamed.sv.toarray(), sv)
    np.testing.assert_array_equal(streamed.coef, A * res["s"])


def test_sorted_file_warns(tmp_path):
    path = tmp_path / "sorted.txt"
    X, y = checkerboard(8000, 1)
    order = np.argsort(y, kind="stable")
    path.write_text("".join(f"{y[i]:+d} 1:{X[i, 0]:.6f} 2:{X[i, 1]:.6f}\n" for i in order))
    params = TrainParams(solver="bsgd", C=1.0, gamma=2.0, budget=10, epochs=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train_bsgd_stream(str(path), params, buffer_mb=1 / 16)
    assert any("sorted by label" in str(w.message) for w in caught)
    # a diagnostic: bsvm-train prints it once, and -q silences it (it did not)
    for quiet, lines in ((False, 1), (True, 0)):
        result = subprocess.run([str(BIN / "bsvm-train"), *(["-q"] if quiet else []), "--stream",
                                 "--stream-buffer", "0.0625", "--budget", "10", "--epochs", "1",
                                 "-c", "1", "-g", "2", str(path), str(tmp_path / "m")],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert sum("sorted by label" in line for line in result.stderr.splitlines()) == lines


def test_the_streamed_refit_sample_is_uniform_in_memory_independent_of_the_rows():
    from budgetsvm import refit
    # uniform over the k-subsets: all 10 pairs of 5 rows, 20,000 seeds, chi-square against
    # the uniform counts (99.9% quantile of chi-square with 9 degrees of freedom: 27.9)
    counts = {}
    for seed in range(20000):
        pair = tuple(refit.sample_rows(5, 2, seed).tolist())
        counts[pair] = counts.get(pair, 0) + 1
    assert len(counts) == 10
    chi2 = sum((c - 2000) ** 2 / 2000 for c in counts.values())
    assert chi2 < 27.9, counts
    # distinct, sorted, in range, seeded; and no array of the n rows (8 GB here)
    import tracemalloc
    tracemalloc.start()
    rows = refit.sample_rows(10 ** 9, 16384, 7)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20, peak
    assert len(np.unique(rows)) == 16384 and np.all(np.diff(rows) > 0)
    assert rows[0] >= 0 and rows[-1] < 10 ** 9
    assert np.array_equal(rows, refit.sample_rows(10 ** 9, 16384, 7))


@pytest.mark.parametrize("line, unseen", [
    ("3 1:0.5 2:0.5\n", "label 3"),
    # it said "a feature index above those of the first pass, which the first pass did not see"
    ("1 1:0.5 3:0.5\n", "a feature index above 2")])
def test_a_file_that_changes_names_the_row(tmp_path, board, line, unseen):
    # the first pass is over; then the file is replaced (a rename, as an editor saves): the
    # epoch that reads the new file names the row and what the first pass did not see
    import threading
    import time
    rows = board.read_text().splitlines(keepends=True)
    changed = rows[:4000] + [line] + rows[4001:]
    (tmp_path / "new").write_text("".join(changed))
    (tmp_path / "train").write_text("".join(rows))

    def replace():
        time.sleep(1.0)
        os.replace(tmp_path / "new", tmp_path / "train")
    thread = threading.Thread(target=replace)
    thread.start()
    result = _run(["--stream", "-q", "--epochs", "100000", "--budget", "30", "train", "m"],
                  tmp_path)
    thread.join()
    assert result.returncode == 1 and not (tmp_path / "m").exists()
    assert result.stderr.startswith("train: the file changed during training: its data row "
                                    "4001 (epoch "), result.stderr
    assert result.stderr.endswith(f"has {unseen}, which the first pass did not see\n")


def test_stream_refuses_a_device(tmp_path):
    # a terminal as /dev/stdin was read once per pass (one ^D each), then 'the file changed'
    import pty
    master, slave = pty.openpty()
    try:
        result = subprocess.run([str(BIN / "bsvm-train"), "--stream", "/dev/stdin", "m"],
                                cwd=tmp_path, stdin=slave, capture_output=True, text=True,
                                timeout=60)
    finally:
        os.close(slave)
        os.close(master)
    assert result.returncode == 2 and "give a file, not -, a pipe or a device" in result.stderr


def _run(args, cwd):
    return subprocess.run([str(BIN / "bsvm-train"), *args], cwd=cwd, capture_output=True,
                          text=True)


@pytest.mark.parametrize("args, word", [
    (["--stream", "-"], "give a file"),
    (["--stream", "-s", "dcd", "TRAIN"], "-s bsgd only"),
    (["--stream", "-v", "3", "TRAIN"], "-v cannot"),
    (["--stream", "-b", "1", "TRAIN"], "-b 1 cannot"),
    (["--stream", "--stream-buffer", "0", "TRAIN"], "must be positive"),
    (["--stream", "--stream-buffer", "inf", "TRAIN"], "must be at most 1048576 (MB), got inf"),
    (["--stream", "--stream-buffer", "1e13", "TRAIN"], "must be at most 1048576 (MB), got 1e+13"),
])
def test_stream_usage_errors(tmp_path, board, args, word):
    args = [str(board) if a == "TRAIN" else a for a in args]
    result = _run(args + ["m.model"], tmp_path)
    assert result.returncode == 2, result.stderr
    assert word in result.stderr
    assert not (tmp_path / "m.model").exists()


def test_stream_cli_writes_the_same_model_as_in_memory(tmp_path, board):
    common = ["-c", "10", "-g", "2", "--budget", "30", "--epochs", "2", "--seed", "7", "-q"]
    assert _run([*common, "--stream", str(board), "a.model"], tmp_path).returncode == 0
    assert _run([*common, str(board), "b.model"], tmp_path).returncode == 0
    assert (tmp_path / "a.model").read_bytes() == (tmp_path / "b.model").read_bytes()


@pytest.mark.parametrize("ending", [b"", b"\r", b" # a comment"])
def test_a_last_line_without_a_newline_streams_as_the_in_memory_model(tmp_path, board, ending):
    # the unfinished last line became a buffer of its own (two buffers for a file that one
    # holds): the model differed from the in-memory one, which the README promises
    text = board.read_bytes()
    assert text.endswith(b"\n")
    cut = tmp_path / "cut"
    cut.write_bytes(text[:-1] + ending)
    common = ["-c", "10", "-g", "2", "--budget", "30", "--epochs", "2", "--seed", "7", "-q"]
    assert _run([*common, "--stream", str(cut), "a.model"], tmp_path).returncode == 0
    assert _run([*common, str(board), "b.model"], tmp_path).returncode == 0
    assert (tmp_path / "a.model").read_bytes() == (tmp_path / "b.model").read_bytes()


def test_a_buffer_larger_than_the_file_takes_the_memory_of_the_file(tmp_path):
    # --stream-buffer 1048576 (1 TiB, the largest) on a 27 KB file: the buffer holds the file,
    # not 1 TiB asked for up front (read(n) allocates n bytes first, which failed as 'out of
    # memory'), and the model is the default buffer's, which holds the whole file as well
    import lzma
    heart = tmp_path / "heart"
    heart.write_bytes(lzma.open(Path(__file__).resolve().parent.parent / "data"
                                / "heart_scale.xz").read())
    status, peak, err = run_measuring_peak([str(BIN / "bsvm-train"), "-q", "--stream",
                                            "--stream-buffer", "1048576", "heart", "big"],
                                           tmp_path)
    assert status == 0 and peak < 1000, (err, peak)
    assert _run(["-q", "--stream", "heart", "default"], tmp_path).returncode == 0
    assert (tmp_path / "big").read_bytes() == (tmp_path / "default").read_bytes()


# ---------------------------------------------------------------------------------------------
# Peak memory does not grow with the number of rows (issue 8: checked at 10^5 and 10^6 rows)
# ---------------------------------------------------------------------------------------------

def _peak_rss_mb(command, cwd):
    status, peak, err = run_measuring_peak(command, cwd)
    assert status == 0, err
    assert peak > 0
    return peak


@pytest.fixture(scope="module")
def boards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rss")
    for n in (10 ** 5, 10 ** 6):
        write_checkerboard(folder / f"cb{n}", n, seed=n)
    return folder


@pytest.mark.skipif(not available(), reason="needs Linux /proc/PID/status")
def test_streaming_memory_does_not_grow_with_rows(boards):
    train = [str(BIN / "bsvm-train"), "-q", "-c", "0.01", "-g", "16", "--budget", "20",
             "--epochs", "1", "--maintenance", "removal"]
    small = _peak_rss_mb([*train, "--stream", "--stream-buffer", "0.5", "cb100000", "s.model"],
                         boards)
    large = _peak_rss_mb([*train, "--stream", "--stream-buffer", "0.5", "cb1000000",
                          "l.model"], boards)
    # control: in-memory training holds the 10^6 rows (about 26 MB of text, 40 MB parsed)
    in_memory = _peak_rss_mb([*train, "cb1000000", "m.model"], boards)
    assert large - small < 8, (small, large)
    assert in_memory - large > 25, (large, in_memory)
    predict = [str(BIN / "bsvm-predict")]
    p_small = _peak_rss_mb([*predict, "cb100000", "l.model", "p1"], boards)
    p_large = _peak_rss_mb([*predict, "cb1000000", "l.model", "p2"], boards)
    assert p_large - p_small < 8, (p_small, p_large)
