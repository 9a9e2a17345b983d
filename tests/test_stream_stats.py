"""Statistics of BSGD runs that are split into several calls of the core (--stream buffers,
--monitor epochs) are those of the uninterrupted run.

Oracle: the uninterrupted run itself. With one buffer holding the whole file the streamed model
is byte-identical to the in-memory one (same seeded permutations), so every counter must agree;
with several buffers, the core run on the whole data in the concatenated buffer orders.
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from budgetsvm._bsgd import bsgd_solve
from budgetsvm._budget import SVStore
from budgetsvm._rng import Random
from budgetsvm.datasets import write_checkerboard
from budgetsvm.io import read_problem
from budgetsvm.bsgd import fit_bsgd, train_bsgd
from budgetsvm.problem import csr_arrays
from budgetsvm.labels import group_classes
from budgetsvm.params import TrainParams
from budgetsvm.stream import train_bsgd_stream

BIN = Path(sys.executable).parent
# every counter of train_info (timings differ from run to run and are left out)
COUNTERS = ("n_steps", "n_sv", "n_violations", "n_maintenance", "n_merges", "n_removals",
            "n_projections", "n_inspan", "n_renorm", "n_merge_evals")


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    path = tmp_path_factory.mktemp("board") / "train.txt"
    write_checkerboard(path, 4000, seed=7)
    return path


@pytest.mark.parametrize("classes", [2, 3])
def test_resumed_core_reports_the_counters_of_the_whole_run(classes):
    rng = np.random.default_rng(classes)
    X = rng.normal(size=(200, 4))
    y = (np.arange(200) % classes).astype(np.int32)
    import scipy.sparse as sp
    data, indices, indptr, xsq = csr_arrays(sp.csr_matrix(X))
    nr_coef = 1 if classes == 2 else classes
    order = np.concatenate([Random(1).permutation(200), Random(2).permutation(200)])
    # renorm_low = 0.5 renormalises the pegasos scale s = c/t often: n_renorm is exercised too
    opts = dict(renorm_low=0.5)
    whole = SVStore(4, 12, nr_coef, "rbf", 0.5, 0.0, 3, "merge", "gss")
    res_whole = bsgd_solve(whole, data, indices, indptr, xsq, y, np.ones(classes), 400.0,
                           order=order, **opts)
    pieces = SVStore(4, 12, nr_coef, "rbf", 0.5, 0.0, 3, "merge", "gss")
    res = None
    for part in np.split(order, [50, 199, 333]):
        res = bsgd_solve(pieces, data, indices, indptr, xsq, y, np.ones(classes), 400.0,
                         order=part, state=res, **opts)
    assert res_whole["n_renorm"] > 0 and res_whole["n_violations"] > 0
    for key in ("t", "n_violations", "n_renorm"):
        assert res[key] == res_whole[key], key


@pytest.mark.parametrize("maintenance", ["merge", "removal"])
def test_one_buffer_stream_reports_the_in_memory_counters(board, maintenance):
    params = TrainParams(solver="bsgd", C=10.0, gamma=2.0, budget=25, epochs=4, seed=2,
                         maintenance=maintenance)
    X, y = read_problem(str(board))
    labels, y_index = group_classes(y)
    memory = train_bsgd(X, y_index, labels, params)
    streamed = train_bsgd_stream(str(board), params, buffer_mb=64)
    assert streamed.train_info["n_buffers"] == 1
    np.testing.assert_array_equal(memory.sv.toarray(), streamed.sv.toarray())
    np.testing.assert_array_equal(memory.coef, streamed.coef)
    for key in COUNTERS:
        assert streamed.train_info[key] == memory.train_info[key], key
    assert memory.train_info["n_violations"] > memory.train_info["n_steps"] // 20


def test_several_buffers_report_the_counters_of_the_core_run(board):
    params = TrainParams(solver="bsgd", C=10.0, gamma=2.0, budget=25, epochs=2, seed=2,
                         merge_search="gss")
    streamed = train_bsgd_stream(str(board), params, buffer_mb=1 / 16)
    from budgetsvm.io import iter_problem_chunks
    sizes = [c[0].shape[0] for c in iter_problem_chunks(str(board), block_bytes=1 << 16)]
    assert streamed.train_info["n_buffers"] == len(sizes) >= 2
    rng, offsets = Random(2), np.cumsum([0] + sizes[:-1])
    order = np.concatenate([np.concatenate([rng.permutation(m) + o
                                            for m, o in zip(sizes, offsets)])
                            for _ in range(2)])
    X, y = read_problem(str(board))
    labels, y_index = group_classes(y)
    store = SVStore(2, 25, 1, "rbf", 2.0, 0.0, 3, "merge", "gss")
    data, indices, indptr, xsq = csr_arrays(X)
    res = bsgd_solve(store, data, indices, indptr, xsq, y_index, np.ones(2), 4000 * 10.0,
                     order=order)
    assert streamed.train_info["n_violations"] == res["n_violations"]
    assert streamed.train_info["n_merges"] == store.counters()["n_merges"]


@pytest.mark.parametrize("classes", [2, 3])
def test_monitored_run_reports_the_counters_of_the_plain_run(board, classes):
    X, y = read_problem(str(board))
    y_index = (np.arange(X.shape[0]) % classes if classes > 2 else group_classes(y)[1])
    y_index = np.asarray(y_index, dtype=np.int32)
    params = TrainParams(solver="bsgd", C=10.0, gamma=2.0, budget=25, epochs=3, seed=4)
    plain = fit_bsgd(X, y_index, classes, params, class_weight=np.ones(classes))[3]
    monitored = fit_bsgd(X, y_index, classes, params, class_weight=np.ones(classes),
                         monitor=lambda row: None)[3]
    for key in COUNTERS:
        assert monitored[key] == plain[key], key


def test_cli_stream_and_memory_print_the_same_statistics(board, tmp_path):
    def train(*extra):
        r = subprocess.run([str(BIN / "bsvm-train"), "-c", "10", "-g", "2", "--budget", "25",
                            "--epochs", "3", *extra, str(board), "m"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        stats = dict(item.split(" = ") for item in r.stdout.strip().split(", "))
        return {k: v for k, v in stats.items() if not k.endswith("seconds")}, \
            (tmp_path / "m").read_bytes()
    memory_stats, memory_model = train()
    stream_stats, stream_model = train("--stream", "--stream-buffer", "64")
    assert stream_model == memory_model
    assert {k: stream_stats[k] for k in memory_stats} == memory_stats
    assert stream_stats["n_buffers"] == "1"
