"""bsvm-grid (issue 7): grid.py's job order and file format, CV accuracy against an independent
computation, resume, local worker processes, Dask, plots and one-line errors."""
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from budgetsvm import grid
from budgetsvm.cli.grid import find_parameters, main, parse_arguments
from budgetsvm.errors import ParameterError
from budgetsvm.io import read_problem
from budgetsvm.params import TrainParams
from budgetsvm.train import cross_validation, stratified_folds, train

REPO = Path(__file__).resolve().parent.parent
HEART = REPO / "data" / "heart_scale.xz"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def heart():
    return read_problem(str(HEART))


def run_cli(argv, capsys):
    """bsvm-grid in this process: (exit status, stdout lines, stderr text)."""
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    captured = capsys.readouterr()
    return exc.value.code, captured.out.splitlines(), captured.err


def run_subprocess(argv, timeout=60):
    exe = BIN / "bsvm-grid"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c",
                                            "from budgetsvm.cli.grid import main; main()"]
    return subprocess.run(cmd + [str(a) for a in argv], capture_output=True, text=True,
                          timeout=timeout)


def out_lines(path):
    return sorted(Path(path).read_text().splitlines())


def kernel_solver_or_skip():
    """bsgd if this build has it, else skip (the lead removes the skip when BSGD lands)."""
    from budgetsvm.train import _solver_function
    try:
        _solver_function("bsgd")
    except ParameterError as exc:
        pytest.skip(f"needs a kernel solver: {exc}")
    return "bsgd"


# ---------------------------------------------------------------------------------------------
# grid.py's ranges and job order, checked by hand

def test_range_f_matches_grid_py():
    assert grid.range_f(-5, 15, 2) == [-5, -3, -1, 1, 3, 5, 7, 9, 11, 13, 15]
    assert grid.range_f(3, -15, -2) == [3, 1, -1, -3, -5, -7, -9, -11, -13, -15]
    assert grid.range_f(0, 1, 0.25) == [0, 0.25, 0.5, 0.75, 1]
    assert grid.range_f(-1, 1, 0.1)[-1] == 1            # no float drift drops the end point
    assert grid.range_f(0, 5, 2) == [0, 2, 4]


def test_range_f_with_a_step_below_the_spacing_of_doubles_ends():
    # begin == end: grid.py's loop gives begin alone (its begin + step > end at once); a step
    # that does not move begin + k*step used to loop forever (10 + 1e-30 == 10)
    assert grid.range_f(10, 10, 1e-30) == [10]
    assert grid.range_f(-3, -3, -1e-300) == [-3]
    assert grid.range_f(1e308, 1e308, 1) == [1e308]
    assert grid.parse_range("10,10,1e-30") == (10, 10, 1e-30)
    with pytest.raises(ParameterError, match=r"-log2c: 2\^1e\+308 is out of the range"):
        grid.parse_range("1e308,1e308,1", "-log2c")


def test_permute_sequence_by_hand():
    assert grid.permute_sequence([0, 1, 2, 3, 4, 5, 6]) == [3, 1, 5, 0, 4, 2, 6]
    # grid.py's default C range: midpoint 5, then -1 and 11, ...
    assert grid.permute_sequence(grid.range_f(-5, 15, 2)) == \
        [5, -1, 11, -3, 9, 3, 15, -5, 7, 1, 13]
    assert grid.permute_sequence([1]) == [1]
    assert grid.permute_sequence([]) == []


def test_calculate_jobs_interleaves_rows_and_columns_by_hand():
    # c: [-1, 0, 1] -> [0, -1, 1]; g: [1, 0, -1] -> [0, 1, -1]
    jobs = grid.calculate_jobs((-1, 1, 1), (1, -1, -1))
    assert jobs == [[], [(0, 0)], [(0, 1)], [(-1, 0), (-1, 1)], [(0, -1), (-1, -1)],
                    [(1, 0), (1, 1), (1, -1)]]
    points = grid.job_points((-1, 1, 1), (1, -1, -1), [100, 200])
    assert [(p.log2c, p.log2g, p.budget) for p in points[:4]] == \
        [(0, 0, 100), (0, 0, 200), (0, 1, 100), (0, 1, 200)]
    assert len(points) == 18 and len(set(points)) == 18


def test_calculate_jobs_one_dimension():
    assert [p.log2c for p in grid.job_points((-5, 15, 2), None)] == \
        [5, -1, 11, -3, 9, 3, 15, -5, 7, 1, 13]
    assert all(p.log2g is None and p.budget is None for p in grid.job_points((-5, 15, 2), None))
    assert [p.log2g for p in grid.job_points(None, (1, 3, 1))] == [2, 1, 3]


@pytest.mark.parametrize("text", ["1,2", "a,b,c", "1,5,0", "5,1,1", "1,5,-1", "1,inf,1", ""])
def test_parse_range_rejects(text):
    with pytest.raises(ParameterError):
        grid.parse_range(text, "-log2c")


def test_parse_range_accepts():
    assert grid.parse_range("null") is None
    assert grid.parse_range("-5,15,2") == (-5, 15, 2)
    assert grid.parse_range("3,-15,-2") == (3, -15, -2)


# C = 2^x and gamma = 2^x must be positive finite doubles: -1074 <= x < 1024 (2^-1075 rounds to 0)
@pytest.mark.parametrize("option", ["-log2c", "-log2g"])
@pytest.mark.parametrize("text, shown", [("1024,1024,1", "1024"), ("1020,1030,5", "1030"),
                                         ("1023.5,1024.5,1", "1024.5"), ("-1075,-1075,1", "-1075"),
                                         ("-2000,-2000,1", "-2000"), ("0,-1080,-4", "-1080")])
def test_log2_ranges_beyond_a_double_are_refused(option, text, shown):
    message = f"{option}: 2^{shown} is out of the range of a double"
    with pytest.raises(ParameterError, match=message.replace("^", r"\^")):
        grid.parse_range(text, option)
    # the library API too (GridOptions not built by parse_range)
    triple = tuple(float(v) for v in text.split(","))
    ranges = {"c_range": triple} if option == "-log2c" else {"g_range": triple}
    options = grid.GridOptions(dataset="x", params=TrainParams(solver="bsgd"), **ranges)
    with pytest.raises(ParameterError, match=message.replace("^", r"\^")):
        grid.searched_dimensions(options)


@pytest.mark.parametrize("text", ["1023,1023,1", "-1074,-1074,1", "1023.5,1023.5,1",
                                  "-1074,1023,1"])
def test_log2_ranges_at_the_edges_of_a_double_are_accepted(text):
    triple = tuple(float(v) for v in text.split(","))
    assert grid.parse_range(text, "-log2g") == triple
    # each with the other range's default (both at -1074,1023,1 are more points than a grid
    # may have)
    for ranges in ({"c_range": triple}, {"g_range": triple}):
        grid.searched_dimensions(grid.GridOptions(dataset="x", params=TrainParams(solver="bsgd"),
                                                  **ranges))


# ---------------------------------------------------------------------------------------------
# result file and best point

def test_out_lines_and_resume_parser(tmp_path):
    P = grid.Point
    assert grid.format_result(P(-5.0, 3.0, None), 83.7037) == "log2c=-5 log2g=3 rate=83.7037"
    assert grid.format_result(P(0.5, None, None), 80.0) == "log2c=0.5 rate=80.0"
    assert grid.format_result(P(1.0, -7.0, 200), 90.1) == "log2c=1 log2g=-7 budget=200 rate=90.1"
    f = tmp_path / "r.out"
    # grid.py's own lines (floats with .0) read as well; the cut-off last line is ignored
    f.write_text("log2c=-5.0 log2g=3.0 rate=83.7037\nlog2c=1 log2g=-7 budget=200 rate=90.1\n"
                 "junk\nlog2c=7 log2g=1 rate=8")
    assert grid.read_results(f) == {P(-5, 3, None): 83.7037, P(1, -7, 200): 90.1}


def test_resume_ignores_points_no_grid_has(tmp_path, capsys, hs60):
    # a log2 value whose 2^x is no positive finite double (a range refuses it) is read as an
    # unreadable line: skipped, where its best-point line was an OverflowError traceback
    resume = tmp_path / "r.out"
    resume.write_text("log2c=2000 rate=99\nlog2c=-1075 log2g=1 rate=98\nlog2c=1e999 rate=97\n"
                      "log2c=1 rate=60\n")
    assert grid.read_results(resume) == {grid.Point(1, None, None): 60.0}
    status, out, err = run_cli(["-q", "-s", "dcd", "-v", "3", "-log2c", "1,3,2", "-resume",
                                resume, "-out", "null", hs60], capsys)
    assert status == 0 and err == ""
    assert out[0].startswith("[resumed] 1 60.0") and out[-2].startswith("best log2c=")


def test_best_point_tie_rule_of_grid_py():
    P = grid.Point
    order = [P(5, 0, None), P(-1, 0, None), P(-3, 1, None), P(-3, 0, None)]
    results = {order[0]: 80.0, order[1]: 84.0, order[2]: 84.0, order[3]: 84.0}
    # -1 first; -3 with another gamma does not replace it; -3 with the same gamma does
    assert grid.select_best(results, order) == (P(-3, 0, None), 84.0)
    results[order[3]] = 83.9
    assert grid.select_best(results, order) == (P(-1, 0, None), 84.0)
    assert grid.select_best({}, order) == (None, -1.0)


# ---------------------------------------------------------------------------------------------
# CV accuracy against an independent computation

def test_folds_stratified_and_deterministic(heart):
    X, y = heart
    folds = stratified_folds(y, 5, 1)
    assert np.array_equal(folds, stratified_folds(y, 5, 1))
    assert not np.array_equal(folds, stratified_folds(y, 5, 2))
    for label in np.unique(y):
        per_fold = np.bincount(folds[y == label], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1          # every class spread evenly
    sizes = np.bincount(folds, minlength=5)
    assert sizes.max() - sizes.min() <= 1


def test_cv_accuracy_equals_independent_computation(heart, tmp_path, capsys):
    X, y = heart
    log2c = -1
    params = TrainParams(solver="dcd", C=2.0 ** log2c, seed=3)
    folds = stratified_folds(y, 4, 3)
    predicted = np.full(len(y), np.nan)
    for f in range(4):                            # train on the other folds, predict fold f
        model = train(X[folds != f], y[folds != f], params)
        predicted[folds == f] = model.predict(X[folds == f])
    expected = float("%g" % (100.0 * np.mean(predicted == y)))
    assert float("%g" % (100.0 * np.mean(cross_validation(X, y, params, 4) == y))) == expected
    assert grid.cv_rate(X, y, params, 4) == expected
    out = tmp_path / "cv.out"
    status, lines, _ = run_cli(["-s", "dcd", "--seed", 3, "-v", 4, "-log2c", "-1,-1,1",
                                "-j", 1, "-out", out, "-q", HEART], capsys)
    assert status == 0
    assert out.read_text() == f"log2c=-1 rate={expected!r}\n"
    assert lines[-2:] == [f"best log2c=-1 rate={expected!r}", f"0.5 {expected!r}"]


# ---------------------------------------------------------------------------------------------
# the command: stdout, linear solvers, resume, -j

def test_linear_solver_searches_c_only(tmp_path, capsys):
    out = tmp_path / "h.out"
    status, lines, err = run_cli(["-s", "dcd", "-log2c", "-3,3,2", "-log2g", "-1,1,1", "-j", 1,
                                  "-out", out, HEART], capsys)
    assert status == 0
    assert "-log2g is ignored" in err
    rows = out.read_text().splitlines()
    assert [r.split()[0] for r in rows] == ["log2c=1", "log2c=-1", "log2c=3", "log2c=-3"]
    assert all("log2g" not in r and len(r.split()) == 2 for r in rows)
    assert lines[0].startswith("[local] 1 ") and "(best c=2.0, rate=" in lines[0]
    best = grid.select_best(grid.read_results(out), grid.job_points((-3, 3, 2), None))
    assert lines[-2] == "best " + grid.format_result(*best)
    assert lines[-1] == f"{2.0 ** best[0].log2c!r} {best[1]!r}"


def test_default_out_name_and_null(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli(["-s", "dcd", "-log2c", "0,1,1", "-j", 1, "-q", HEART], capsys)[0] == 0
    assert (tmp_path / "heart_scale.xz.out").exists()
    os.remove(tmp_path / "heart_scale.xz.out")
    assert run_cli(["-s", "dcd", "-log2c", "0,1,1", "-out", "null", "-j", 1, HEART],
                   capsys)[0] == 0
    assert not list(tmp_path.iterdir())


def test_resume_computes_only_missing_points(tmp_path, capsys):
    full = tmp_path / "full.out"
    args = ["-s", "dcd", "-log2c", "-6,6,1", "-v", 3, "-j", 1, "-q"]
    status, full_lines, _ = run_cli(args + ["-out", full, HEART], capsys)
    assert status == 0
    rows = full.read_text().splitlines()
    assert len(rows) == 13
    cut = tmp_path / "cut.out"                   # a killed run: 5 lines and half of the 6th
    cut.write_text("\n".join(rows[:5]) + "\n" + rows[5][:9])
    status, lines, _ = run_cli(args + ["-out", cut, "-resume", cut, HEART], capsys)
    assert status == 0
    assert sum(line.startswith("[resumed]") for line in lines) == 5
    assert sum(line.startswith("[local]") for line in lines) == 8
    assert out_lines(cut) == sorted(rows)
    assert lines[-2:] == full_lines[-2:]
    # nothing left to compute: the -resume default path is <dataset basename>.out
    os.chdir(tmp_path)
    try:
        Path("heart_scale.xz.out").write_text(full.read_text())
        status, lines, _ = run_cli(args + ["-resume", HEART], capsys)
    finally:
        os.chdir(REPO)
    assert status == 0
    assert not any(line.startswith("[local]") for line in lines)
    assert lines[-2:] == full_lines[-2:]


def test_local_workers_give_the_same_lines(tmp_path, capsys):
    one, two = tmp_path / "j1.out", tmp_path / "j2.out"
    args = ["-s", "dcd", "-log2c", "-7,7,1", "-q"]
    status1, lines1, _ = run_cli(args + ["-j", 1, "-out", one, HEART], capsys)
    status2, lines2, _ = run_cli(args + ["-j", 2, "-out", two, HEART], capsys)
    assert status1 == status2 == 0
    assert out_lines(one) == out_lines(two)
    assert len(out_lines(one)) == 15
    assert lines1[-2:] == lines2[-2:]


def test_find_parameters_module_api():
    rate, best = find_parameters(str(HEART), "-s dcd -log2c -3,1,2 -j 1 -out null")
    assert set(best) == {"c"} and 40 < rate <= 100
    assert best["c"] in (0.125, 0.5, 2.0)


@pytest.mark.parametrize("guarded", [True, False])
def test_find_parameters_from_a_script_with_worker_processes(tmp_path, guarded):
    """Local workers are spawned processes, which import the calling script again: a guarded
    script gets the result of -j 1; an unguarded one gets an error that says what to do
    (grid.py's threads needed no guard, so its users' scripts often have none)."""
    call = (f"print(find_parameters({str(HEART)!r}, '-s dcd -log2c -3,1,2 -v 3 -j 2 "
            "-out null'))")
    body = (f"if __name__ == '__main__':\n    {call}\n" if guarded else call + "\n")
    script = tmp_path / "search.py"
    script.write_text("from budgetsvm.cli.grid import find_parameters\n" + body)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    if guarded:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == str(find_parameters(
            str(HEART), "-s dcd -log2c -3,1,2 -v 3 -j 1 -out null"))
    else:
        assert proc.returncode != 0
        # the traceback's last line, not always stderr's: multiprocessing's resource tracker
        # may warn after it, at exit
        error = [line for line in proc.stderr.splitlines() if line.startswith(
            "budgetsvm.grid.runners.WorkersDied: ")]
        assert len(error) == 1, proc.stderr
        assert "worker processes died" in error[0]
        assert "if __name__ == \"__main__\":" in error[0] and "-j 1" in error[0]


# ---------------------------------------------------------------------------------------------
# errors: one line, exit 1 or 2, no traceback; small classes warn

@pytest.mark.parametrize("argv, status, text", [
    (["-s", "dcd", "-log2c", "1,5", HEART], 2, "-log2c"),
    (["-s", "dcd", "-log2c", "5,1,1", HEART], 2, "empty range"),
    (["-s", "dcd", "-log2c", "null", HEART], 2, "nothing to search"),
    (["-s", "dcd", "-v", "1", HEART], 2, "-v"),
    (["-s", "dcd", HEART, "-log2c", "0,1,1"], 2, "-log2c needs a value (the training file "
                                                 "comes last"),
    (["-s", "dcd", "-c", "1", HEART], 2, "Use -log2c and -log2g."),
    # the value of the last option taken for the data file: say so, not only what click saw
    (["-s", "dcd", HEART, "-B", "1"], 2, "Option '-B' requires an argument (the training file "
                                         "comes last, after every option, as in grid.py)"),
    # the glued forms bsvm-train's parser takes (-c.01 searched nothing but gamma at C = 0.01)
    (["-log2c", "null", "-c.01", HEART], 2, "Use -log2c and -log2g."),
    (["-s", "dcd", "-c-1", HEART], 2, "Use -log2c and -log2g."),
    (["-log2c", "null", "-g.001", HEART], 2, "Use -log2c and -log2g."),
    # each range may have 10,000 values, their product not (10^8 points ran out of memory)
    (["-log2c", "-1000,1000,0.2", "-log2g", "-1000,1000,0.2", HEART], 2,
     "the grid has 100020001 points (-log2c x -log2g), more than 100000"),
    # -png: known before the search, not warned about after it
    (["-s", "dcd", "-log2c", "0,1,1", "-png", "p.png", HEART], 2,
     "-png needs a search over both C and gamma"),
    (["-log2c", "0,1,1", "-log2g", "0,0,1", "-png", "p.png", HEART], 2,
     "-png needs a search over both C and gamma, with at least two values of each"),
    (["-s", "dcd", "--budget", "10,20", HEART], 2, "--budget"),
    # --connect-timeout without a scheduler was accepted silently (--shared-path was refused);
    # an empty --scheduler ran the search locally
    (["-s", "dcd", "-log2c", "0,1,1", "--connect-timeout", "3", HEART], 2,
     "--connect-timeout is a --scheduler option"),
    (["-s", "dcd", "-log2c", "0,1,1", "--scheduler", "", HEART], 2,
     "--scheduler needs the scheduler's address (HOST:PORT)"),
    # bsvm-train's options for the model it writes: click said "No such option" (help said
    # every bsvm-train option passes through)
    (["-s", "dcd", "-log2c", "0,1,1", "--stats", HEART], 2,
     "--stats: a bsvm-train option that bsvm-grid does not take"),
    (["-s", "dcd", "-log2c", "0,1,1", "--monitor", "m", HEART], 2,
     "--monitor: a bsvm-train option that bsvm-grid does not take"),
    (["-s", "dcd", "-resume", "missing.out", HEART], 2, "missing.out"),
    (["-s", "dcd", "-out", "null", "no-such-file"], 1, "no-such-file"),
    (["-s", "dcd", "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "1", "-out", "null",
      HEART], 1, "cannot reach the Dask scheduler"),
    # malformed addresses: dask's Client waited out the connect timeout, then printed an
    # 'Exception ignored' traceback while it failed to close
    (["-s", "dcd", "--scheduler", "localhost", "--connect-timeout", "1", HEART], 2,
     "--scheduler localhost: not a scheduler address (missing port number"),
    (["-s", "dcd", "--scheduler", "tcp://host:abc", "--connect-timeout", "1", HEART], 2,
     "--scheduler tcp://host:abc: not a scheduler address"),
    (["-s", "dcd", "--scheduler", "foo://host:1", "--connect-timeout", "1", HEART], 2,
     "unknown address scheme 'foo'"),
    (["-s", "dcd", "--scheduler", "host:65536", "--connect-timeout", "1", HEART], 2,
     "port 65536 is not in 1..65535"),
    (["-s", "dcd", "--scheduler", "inproc://x", "--connect-timeout", "1", HEART], 2,
     "an inproc:// scheduler lives inside another process"),
    # dask's own timeout parser refused inf with a long list of time units
    (["-s", "dcd", "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "inf", HEART], 2,
     "--connect-timeout must be a positive number of seconds"),
    # a websocket address is a URL that dask opens as given: checked by connecting
    (["-s", "dcd", "--scheduler", "ws://127.0.0.1:1/", "--connect-timeout", "1", "-out",
      "null", HEART], 1, "cannot reach the Dask scheduler"),
])
def test_errors_are_one_line(argv, status, text, tmp_path):
    if "--scheduler" in argv:
        pytest.importorskip("distributed", reason="the dist extra (dask) is not installed")
    proc = run_subprocess(argv)
    assert proc.returncode == status, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert text in proc.stderr
    assert proc.stdout == ""



@pytest.fixture(scope="module")
def hs60(tmp_path_factory):
    """The first 60 rows of heart_scale (fast cross-validation at extreme parameters)."""
    X, y = read_problem(str(HEART))
    from budgetsvm.io import write_problem
    path = tmp_path_factory.mktemp("hs60") / "hs60"
    with open(path, "w") as stream:
        write_problem(stream, X[:60], y[:60])
    return path


@pytest.mark.parametrize("args", [["-s", "dcd", "-log2c", "1024,1024,1"],
                                  ["-s", "dcd", "-log2c", "-2000,-2000,1"],
                                  ["-s", "bsgd", "-log2g", "1024,1024,1"],
                                  ["-s", "bsgd", "-log2g", "-2000,-2000,1"]])
def test_log2_beyond_a_double_is_a_one_line_usage_error(args, hs60):
    # was OverflowError (34, 'Numerical result out of range') above, and "-c must be positive,
    # got 0" below, an option bsvm-grid forbids
    proc = run_subprocess(["-q", "-v", "3", *args, "-out", "null", hs60])
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith(f"Usage error: {args[2]}: 2^") and "range of a double" in lines[0]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_library_warnings_are_one_line_once_and_q_silences_them(jobs, hs60):
    # a -wLABEL of a class the data lack warns in every fold of every point: worker processes
    # (-j 2) printed each one with its source line, and -q (no warnings: docs/GRID.md) let it
    # through; LIBSVM prints it once
    args = ["-s", "dcd", "-w3", "5", "-log2c", "0,1,1", "-v", "3", "-j", jobs, "-out", "null",
            hs60]
    proc = run_subprocess(args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == ["warning: class label 3 specified in weight is not found"]
    quiet = run_subprocess(["-q", *args])
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert results_of(quiet.stdout) == results_of(proc.stdout)


def results_of(stdout):
    """The points' results (each progress line without its best-so-far part, which with -j 2
    depends on the order the points finish in, as in LIBSVM's grid.py) and the final lines."""
    lines = stdout.splitlines()
    return sorted(line.split(" (best ")[0] for line in lines[:-2]), lines[-2:]


# bsgd with removal: with merging, gamma = 2^1023 ends in a model with non-finite values (a
# diverged run, reported as such), which is no concern of the range check
KERNEL_EDGE = ["-s", "bsgd", "--budget", "10", "--maintenance", "removal", "-log2c", "0,0,1"]


@pytest.mark.parametrize("args", [["-s", "dcd", "-log2c", "1023,1023,1"],
                                  ["-s", "dcd", "-log2c", "-1074,-1074,1"],
                                  [*KERNEL_EDGE, "-log2g", "1023,1023,1"],
                                  [*KERNEL_EDGE, "-log2g", "-1074,-1074,1"]])
def test_log2_at_the_edges_of_a_double_searches(args, hs60):
    proc = run_subprocess(["-q", "-v", "3", *args, "-out", "null", hs60])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and proc.stdout.splitlines()[-2].startswith("best log2c=")


def test_class_smaller_than_folds_is_a_warning(tmp_path, capsys):
    data = tmp_path / "small.txt"
    rows = [f"{1 if i % 2 else -1} 1:{i / 20:.3f} 2:{(i % 7) / 7:.3f}" for i in range(20)]
    rows += ["2 1:0.5 2:0.5", "2 1:0.4 2:0.6"]          # class 2: 2 rows < 3 folds
    data.write_text("\n".join(rows) + "\n")
    status, lines, err = run_cli(["-s", "dcd", "-v", 3, "-log2c", "0,1,1", "-j", 1,
                                  "-out", "null", data], capsys)
    assert status == 0
    assert "warning: class 2 has fewer rows than the 3 folds" in err
    assert len(lines) == 4


# ---------------------------------------------------------------------------------------------
# kernel solvers: C x gamma grid, budget lists, -png (skipped until BSGD lands)

def test_png_contour_plot(tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    P = grid.Point
    results = {P(c, g, None): 80 + 2 * np.exp(-((c - 1) ** 2 + (g + 3) ** 2) / 8)
               for c in range(-3, 6, 2) for g in range(-7, 2, 2)}
    best = grid.select_best(results, list(results))
    png = tmp_path / "g.png"
    assert grid.plot_contour(png, results, *best, title="synthetic")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_kernel_grid_budget_list_and_png(tmp_path, capsys):
    solver = kernel_solver_or_skip()
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    out, png = tmp_path / "g.out", tmp_path / "g.png"
    args = ["-s", solver, "--budget", "20,40", "-log2c", "-1,3,2", "-log2g", "-5,-1,2", "-v", 3,
            "-j", 2, "-q", "-out", out, "-png", png, HEART]
    status, lines, _ = run_cli(args, capsys)
    assert status == 0
    rows = out.read_text().splitlines()
    assert len(rows) == 3 * 3 * 2
    assert all(r.split()[0].startswith("log2c=") and r.split()[1].startswith("log2g=")
               and r.split()[2] in ("budget=20", "budget=40") for r in rows)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(lines[-1].split()) == 3               # <C> <gamma> <rate>
    status, again, _ = run_cli(args[:-1] + ["-resume", out, HEART], capsys)
    assert status == 0 and not any(line.startswith("[local]") for line in again)
    assert again[-2:] == lines[-2:]


# ---------------------------------------------------------------------------------------------
# Dask

@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("distributed",
                                      reason="the dist extra (dask) is not installed")
    import logging
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=":0",
                                       silence_logs=logging.CRITICAL)
    yield cluster
    cluster.close()


GRID_ARGS = ["-s", "dcd", "-log2c", "-8,12,0.5", "-v", 5, "-q"]


@pytest.fixture(scope="module")
def reference_lines(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "j1.out"
    grid.run_grid(parse_arguments([str(a) for a in GRID_ARGS + ["-j", 1, "-out", out, HEART]]),
                  emit=lambda line: None)
    return out_lines(out)


@pytest.mark.parametrize("mode", [[], ["--shared-path"]], ids=["scatter", "shared-path"])
def test_dask_local_cluster_gives_the_same_lines(dask_cluster, reference_lines, mode, tmp_path,
                                                 capsys):
    out = tmp_path / "dask.out"
    status, lines, _ = run_cli(GRID_ARGS + mode + ["--scheduler", dask_cluster.scheduler_address,
                                                   "-out", out, HEART], capsys)
    assert status == 0
    assert out_lines(out) == reference_lines
    assert lines[0].startswith("[tcp://127.0.0.1:")


def test_dask_worker_killed_mid_search(reference_lines, tmp_path):
    distributed = pytest.importorskip("distributed",
                                      reason="the dist extra (dask) is not installed")
    import logging
    out = tmp_path / "killed.out"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=":0",
                                  silence_logs=logging.CRITICAL) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        pids = client.run(os.getpid)
        assert len(pids) == 2
        victim = sorted(pids.values())[0]
        killed = threading.Event()

        def kill_once(point, rate):
            if not killed.is_set():
                killed.set()
                os.kill(victim, signal.SIGKILL)      # a worker process this test started

        options = parse_arguments([str(a) for a in GRID_ARGS + ["-out", out, HEART]])
        result = grid.run_grid(options, emit=lambda line: None, on_result=kill_once,
                               client=client)
        assert killed.is_set()
        assert victim not in client.run(os.getpid).values()
    assert out_lines(out) == reference_lines
    assert len(result.computed) == len(reference_lines)


def test_local_worker_killed_mid_search(reference_lines, tmp_path, capsys):
    import multiprocessing
    before = {p.pid for p in multiprocessing.active_children()}
    killed = []

    def kill_once(point, rate):
        if not killed:
            mine = [p for p in multiprocessing.active_children() if p.pid not in before]
            if mine:
                killed.append(mine[0].pid)
                os.kill(mine[0].pid, signal.SIGKILL)     # a pool worker this test started

    out = tmp_path / "killed-local.out"
    options = parse_arguments([str(a) for a in GRID_ARGS + ["-j", 2, "-out", out, HEART]])
    warnings = []
    result = grid.run_grid(options, emit=lambda line: None, on_result=kill_once,
                           warn=warnings.append)
    assert killed
    assert any(line.startswith("warning: a worker process died") for line in warnings)
    assert capsys.readouterr().err == ""              # it goes through warn (off with -q)
    assert out_lines(out) == reference_lines
    assert len(result.computed) == len(reference_lines)


def test_unreachable_scheduler_keeps_the_out_file(tmp_path, capsys):
    pytest.importorskip("distributed", reason="the dist extra (dask) is not installed")
    out = tmp_path / "keep.out"
    out.write_text("log2c=1 rate=80.0\n")
    status, lines, err = run_cli(["-s", "dcd", "--scheduler", "tcp://127.0.0.1:1",
                                  "--connect-timeout", 1, "-out", out, HEART], capsys)
    assert status == 1 and lines == []
    assert out.read_text() == "log2c=1 rate=80.0\n"


def test_plot_never_replaces_the_results(tmp_path):
    # -png naming the -out file (also the default <dataset>.out) or the -resume file wrote the
    # plot over the results, exit 0
    data = tmp_path / "heart"
    data.write_bytes(__import__("lzma").open(HEART).read())
    (tmp_path / "r.out").write_text("log2c=0 log2g=-1 rate=50\n")
    grid_args = ["-log2c", "0,1,1", "-log2g", "-2,-1,1", "-v", "2"]
    for extra, role in [(["-out", "x.out", "-png", "x.out"], "-out file"),
                        (["-png", "heart.out"], "-out file"),
                        (["-out", "o.out", "-resume", "r.out", "-png", "r.out"], "-resume file")]:
        proc = subprocess.run([str(BIN / "bsvm-grid"), *grid_args, *extra, "heart"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().endswith(f"is the {role}: refusing to overwrite it with the "
                                            "-png file"), proc.stderr
        assert proc.stdout == ""
    assert (tmp_path / "r.out").read_text() == "log2c=0 log2g=-1 rate=50\n"


def test_png_without_matplotlib_fails_before_the_search(tmp_path):
    stub = tmp_path / "stub" / "matplotlib"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(stub.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([str(BIN / "bsvm-grid"), "-log2c", "0,1,1", "-log2g", "-2,-1,1",
                           "-out", "g.out", "-png", "g.png", str(HEART)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == "-png needs matplotlib (pip install 'budgetsvm[plot]')"
    assert proc.stdout == "" and not (tmp_path / "g.out").exists()


def test_a_failed_search_leaves_the_result_file_as_it_was(tmp_path):
    # every point fails (an overflowing kernel): the -out file of an earlier run was emptied
    # before any point had a rate
    out = tmp_path / "keep.out"
    out.write_text("log2c=1 log2g=-3 rate=80\n")
    proc = run_subprocess(["-log2c", "5,5,1", "-log2g", "-1,-1,1", "-v", "3", "-out", out,
                           "-t", "1", "-d", "2147483647", "--maintenance", "removal", HEART])
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("grid search: no point has a rate")
    assert out.read_text() == "log2c=1 log2g=-3 rate=80\n"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_pipe_as_the_data_file_with_worker_processes(tmp_path, jobs):
    # /dev/stdin (or bash's <(command), a FIFO): the workers reopened the path, which gave
    # 135 lines of tracebacks ('/dev/stdin: no data') and emptied -out; a FIFO hung
    args = ["-s", "dcd", "-log2c", "-1,3,2", "-v", "3", "-j", jobs]
    regular = run_subprocess(args + ["-out", tmp_path / "regular.out", HEART])
    assert regular.returncode == 0, regular.stderr
    text = __import__("lzma").open(HEART).read()
    exe = BIN / "bsvm-grid"
    piped = subprocess.run([str(exe), *args, "-out", str(tmp_path / "piped.out"), "/dev/stdin"],
                           input=text, capture_output=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == b""
    assert out_lines(tmp_path / "piped.out") == out_lines(tmp_path / "regular.out")
    assert piped.stdout.decode().splitlines()[-1] == regular.stdout.splitlines()[-1]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    process = subprocess.Popen([str(exe), *args, "-out", "null", str(fifo)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open(fifo, "wb") as writer:
        writer.write(text)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert out.decode().splitlines()[-1] == regular.stdout.splitlines()[-1]


def test_resumed_lines_of_another_search_are_never_the_best(tmp_path):
    # a rate above 100, log2c=nan (read as a line without C), or a line without a searched
    # dimension ('rate=99', 'log2c=1 rate=99' in a C x gamma search) became the best point
    P = grid.Point
    assert grid.parse_result_line("log2c=nan log2g=-3 rate=99") is None
    assert grid.parse_result_line("log2c=1 log2g=-3 rate=184.5") is None
    assert grid.parse_result_line("log2c=1 budget=0 rate=5") is None
    assert grid.parse_result_line("log2c=1 log2g=-3 rate=100") == (P(1, -3, None), 100.0)
    resume = tmp_path / "r.out"
    resume.write_text("rate=99\nlog2c=nan log2g=-3 rate=99\nlog2c=1 log2g=-3 rate=184.5\n"
                      "log2c=1 rate=99\n")
    args = ["-log2c", "-1,1,2", "-log2g", "-3,-1,2", "-v", "3", "-out", "null"]
    fresh = run_subprocess(args + [HEART])
    resumed = run_subprocess(args + ["-resume", resume, HEART])
    assert fresh.returncode == 0 and resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[-2:] == fresh.stdout.splitlines()[-2:]
    assert "[resumed]" not in resumed.stdout
    assert resumed.stderr.strip() == (
        f"warning: {resume}: 2 line(s) are not points of this search (other dimensions, e.g. "
        "'rate=99.0'); ignored")


def test_grid_options_as_bsvm_train_takes_them():
    # -v3 and -j2 glued (bsvm-train -v3 works; bsvm-grid said "No such option '-v'"); the last
    # --budget wins, a list or a single budget (a later --budget 20 was ignored)
    options = parse_arguments(["-v3", "-j2", "-log2c", "0,1,1", str(HEART)])
    assert options.fold == 3 and options.jobs == 2
    # -resume=path ('Invalid value for -r'), and the other grid words with =
    options = parse_arguments(["-resume=" + str(HEART), "-log2c=0,1,1", str(HEART)])
    assert options.resume == str(HEART) and options.c_range == (0.0, 1.0, 1.0)
    options = parse_arguments(["--budget", "5,10", "--budget", "20", str(HEART)])
    assert options.budgets is None and options.params.budget == 20
    options = parse_arguments(["--budget", "20", "--budget", "5,10", str(HEART)])
    assert options.budgets == [5, 10] and options.params.budget != 20
    # steps below the values' resolution: each point once (101 jobs were 11 points)
    assert grid.range_f(0, 1e-9, 1e-11) == [0.0, 1e-10, 2e-10, 3e-10, 4e-10, 5e-10, 6e-10,
                                            7e-10, 8e-10, 9e-10, 1e-09]


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)     # as a terminal gives it


@pytest.mark.parametrize("delay", [0.6, 0.9])
def test_ctrl_c_while_the_workers_start_is_one_line(tmp_path, delay):
    # Ctrl-C reaches the whole process group: workers still starting Python printed their own
    # 'interrupted' (or a KeyboardInterrupt traceback) besides the parent's
    process = subprocess.Popen([str(BIN / "bsvm-grid"), "-j", "2", "-v", "3", "-out", "g.out",
                                str(HEART)], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=_default_sigint)
    threading.Event().wait(delay)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    if process.returncode == 0:
        pytest.skip("the search had finished before the signal")
    assert process.returncode == 130, err
    assert err.strip() == "interrupted"


def test_result_lines_to_standard_output_go_where_the_grid_lines_go(heart):
    # -out -: the result lines went to sys.stdout at the first point, which rich's progress bar
    # had replaced by a proxy to the terminal (stderr); they go through emit as the grid's own
    X, y = heart
    lines = []
    options = grid.GridOptions(dataset="heart", params=TrainParams(solver="dcd"),
                               c_range=(0.0, 1.0, 1.0), g_range=None, fold=2, out="-", jobs=1)
    result = grid.run_grid(options, X=X, y=y, emit=lines.append, warn=lambda line: None)
    results = [line for line in lines if line.startswith("log2c=")]
    assert sorted(results) == sorted(grid.format_result(p, r) for p, r in result.results.items())
    assert len(results) == 2


def test_an_unwritable_result_file_fails_before_the_search(tmp_path):
    # a name the directory check passes but open() refuses was reported after the first point
    long_name = tmp_path / ("a" * 300 + ".out")
    proc = run_subprocess(["-s", "dcd", "-log2c", "0,1,1", "-v", "2", "-out", long_name, HEART])
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith("cannot write the result file: File name too long")
    assert proc.stdout == ""                                    # no point was computed
    # the trial leaves nothing behind, and an existing file as it was
    options = grid.GridOptions(dataset="x", out=str(tmp_path / "new.out"))
    grid.ResultFile(options.out, append=False).check()
    assert not (tmp_path / "new.out").exists()
    (tmp_path / "old.out").write_text("log2c=1 rate=5\n")
    grid.ResultFile(str(tmp_path / "old.out"), append=False).check()
    assert (tmp_path / "old.out").read_text() == "log2c=1 rate=5\n"


def test_the_ctrl_c_mask_of_starting_workers_is_always_restored():
    from budgetsvm.grid.runners import _workers_start_uninterrupted
    before = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    with _workers_start_uninterrupted():
        assert signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, ())
    assert signal.pthread_sigmask(signal.SIG_BLOCK, ()) == before
    with pytest.raises(KeyboardInterrupt):
        with _workers_start_uninterrupted():
            raise KeyboardInterrupt
    assert signal.pthread_sigmask(signal.SIG_BLOCK, ()) == before


class _Held(Exception):
    pass


def test_sigterm_while_the_workers_start_is_raised_after_the_submits():
    # SIGTERM inside the submits (the pool's manager thread starting) left the pool half
    # started: its shutdown raised "cannot join thread before it is started", a traceback
    # with exit 1 instead of 143. It is held meanwhile and raised once the block ends, with
    # the handler that was in place before.
    from budgetsvm.grid.runners import _workers_start_uninterrupted

    def raising(signum, frame):
        raise _Held
    before = signal.signal(signal.SIGTERM, raising)
    try:
        reached_the_end = False
        with pytest.raises(_Held):
            with _workers_start_uninterrupted():
                os.kill(os.getpid(), signal.SIGTERM)
                threading.Event().wait(0.05)        # a handler would have run by now
                reached_the_end = True
        assert reached_the_end
        assert signal.getsignal(signal.SIGTERM) is raising
        with _workers_start_uninterrupted():            # no signal: nothing raised
            pass
        assert signal.getsignal(signal.SIGTERM) is raising
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.mark.parametrize("signum,status,word", [(2, 130, "interrupted"), (15, 143, "terminated")])
def test_a_signal_while_workers_start_on_piped_data_is_one_line(tmp_path, signum, status, word):
    # Data from standard input went to each worker through the pipe that starts it, and the
    # parent waited there until the worker had started Python: a signal then cut the data
    # short (the worker printed an UnpicklingError traceback) and the pool's semaphores were
    # reported leaked, in 35 of 40 trials at 0.25-0.9 s. The workers now load a saved copy,
    # which is removed. The signal comes while they start (a path a worker reads when it
    # starts, then the search's first points).
    # heart_scale 50 times over: data larger than a pipe's buffer (64 KiB), which is when the
    # parent had to wait for a starting worker to read them
    import lzma
    (tmp_path / "data").write_bytes(lzma.open(HEART).read() * 50)
    saved = tmp_path / "tmp"
    saved.mkdir()
    env = {**os.environ, "TMPDIR": str(saved)}
    for delay in (0.3, 0.6):
        with open(tmp_path / "data", "rb") as data:
            process = subprocess.Popen([str(BIN / "bsvm-grid"), "-j", "2", "-v", "3", "-out",
                                        "null", "-"], stdin=data, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, env=env,
                                       start_new_session=True, preexec_fn=_default_sigint)
            threading.Event().wait(delay)
            if signum == signal.SIGINT:
                os.killpg(process.pid, signum)      # as a terminal sends Ctrl-C
            else:
                process.send_signal(signum)         # as kill(1) sends SIGTERM
            _, err = process.communicate(timeout=60)
        if process.returncode == 0:
            continue                                # finished before the signal
        assert process.returncode == status and err == f"{word}\n", err
    assert list(saved.iterdir()) == []             # the saved data are removed


def test_piped_data_that_cannot_be_saved_for_the_workers_is_one_line(tmp_path):
    # -j 2 on standard input saves the data for the workers (SavedData); a write that fails
    # (a full disk; here a file size limit, with SIGXFSZ ignored so that the write fails
    # instead of killing the process) is one line naming the file, exit 1, no file left
    import resource

    def file_size_limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    with open(HEART, "rb") as data:
        result = subprocess.run([str(BIN / "bsvm-grid"), "-j", "2", "-v", "3", "-out", "null",
                                 "-"], stdin=data, capture_output=True, text=True, timeout=60,
                                env={**os.environ, "TMPDIR": str(tmp_path)},
                                preexec_fn=file_size_limit)
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(str(tmp_path / "bsvm-grid-"))
    assert result.stderr.endswith(": cannot save the data for the worker processes "
                                  "(File too large)\n")
    assert list(tmp_path.iterdir()) == []


def test_workers_on_piped_data_get_the_rates_of_workers_that_read_the_file(tmp_path):
    # the oracle: the same search with the workers reading the file themselves
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    args = ["-q", "-s", "dcd", "-log2c", "-3,3,3", "-v", "3", "-j", "2", "-out", "null"]
    with open(HEART, "rb") as data:
        piped = subprocess.run([str(BIN / "bsvm-grid"), *args, "-"], stdin=data, env=env,
                               capture_output=True, text=True, timeout=120)
    read = run_subprocess([*args, HEART])
    assert piped.returncode == read.returncode == 0, piped.stderr + read.stderr
    # with -j 2 each progress line's best-so-far depends on the order the points finish in
    assert results_of(piped.stdout) == results_of(read.stdout)
    assert list(tmp_path.iterdir()) == []          # the saved data are removed


def test_a_missing_option_value_before_an_existing_file_gets_no_hint():
    proc = run_subprocess(["-s", "dcd", "-B", HEART])
    assert proc.returncode == 2
    assert "Option '-B' requires an argument" in proc.stderr
    assert "comes last" not in proc.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_b_1_rates_are_bsvm_train_b_1_v(tmp_path, jobs):
    # grid.py passes -b 1 to svm-train -v; bsvm-grid refused it ("No such option '-b'"). The
    # oracle: bsvm-train -b 1 -v 3 at every point, in its own process
    result = run_subprocess(["-q", "-b", "1", "-s", "dcd", "-log2c", "-3,3,3", "-v", "3",
                             "-j", jobs, "-out", "null", HEART])
    assert result.returncode == 0, result.stderr
    rates = {float(line.split()[1]): float(line.split()[2])
             for line in result.stdout.splitlines() if line.startswith("[local]")}
    assert sorted(rates) == [-3.0, 0.0, 3.0]
    for log2c, rate in rates.items():
        trained = subprocess.run([str(BIN / "bsvm-train"), "-q", "-b", "1", "-s", "dcd", "-v",
                                  "3", "-c", repr(2.0 ** log2c), HEART], capture_output=True,
                                 text=True, timeout=120)
        assert trained.stdout == f"Cross Validation Accuracy = {rate:g}%\n"
    assert run_subprocess(["-b", "2", "-s", "dcd", HEART]).returncode == 2


@pytest.mark.parametrize("error", ["data", "model"])
def test_located_errors_survive_pickling(error):
    # the -j workers send their exceptions back pickled; an exception is rebuilt from its
    # args, which held only the one message: the FILE:LINE errors could not be rebuilt, and
    # the parent saw a broken pool instead of the error
    import pickle
    from budgetsvm.errors import DataFormatError, ModelFormatError
    kind = DataFormatError if error == "data" else ModelFormatError
    original = kind("some/file", 7, "index must be >= 1")
    copy = pickle.loads(pickle.dumps(original))
    assert type(copy) is kind and str(copy) == "some/file:7: index must be >= 1"
    assert (copy.path, copy.line, copy.problem) == ("some/file", 7, "index must be >= 1")


def test_a_data_file_the_workers_cannot_read_is_the_readers_error_in_the_parent(tmp_path):
    # a file that changed after the parent read it: each worker's read fails, and the parent
    # raises that error (FILE:LINE), as reading it in process does, not "workers died"
    from budgetsvm.errors import DataFormatError
    from budgetsvm.grid.runners import PoolRunner
    bad = tmp_path / "changed"
    bad.write_text("+1 1:1\n-1 2:1 1:1\n")
    with pytest.raises(DataFormatError) as in_process:
        read_problem(str(bad))
    runner = PoolRunner(1, str(bad), False, 2, 1, retries=0)
    try:
        with pytest.raises(DataFormatError) as from_worker:
            list(runner.run([(TrainParams(solver="dcd"), 0)]))
    finally:
        runner.close(abort=True)
    assert str(from_worker.value) == str(in_process.value)


def test_workers_that_read_other_data_than_bsvm_grid_fail_the_search(tmp_path):
    # the -j workers read the file again: replaced after bsvm-grid read it, it gave rates of
    # other data (41% for 84%), exit 0; now the reader's kind of one-line error
    from budgetsvm.errors import DataFormatError
    from budgetsvm.grid.runners import PoolRunner, data_fingerprint
    path = tmp_path / "d"
    path.write_text("+1 1:1 2:0.5\n-1 1:-1\n+1 2:1\n-1 1:-0.5 2:-1\n")
    X, y = read_problem(str(path))
    read = data_fingerprint(X, y)
    task = (TrainParams(solver="dcd"), 0)
    runner = PoolRunner(1, str(path), False, 2, 1, retries=0, fingerprint=read)
    try:
        assert len(list(runner.run([task]))) == 1            # the same data: the search runs
    finally:
        runner.close(abort=True)
    path.write_text("+1 1:1 2:0.5\n-1 1:-1\n+1 2:1\n-1 1:-0.5 2:-2\n")   # one value changed
    runner = PoolRunner(1, str(path), False, 2, 1, retries=0, fingerprint=read)
    try:
        with pytest.raises(DataFormatError, match="changed since bsvm-grid read it"):
            list(runner.run([task]))
    finally:
        runner.close(abort=True)


def _grid_against_a_listener(greeting, timeout):
    """bsvm-grid with --scheduler at a local port whose server accepts every connection, sends
    ``greeting`` (nothing for b"") and keeps it open: (the completed process, the port)."""
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()
    held = []

    def serve():
        while not stop.is_set():
            try:
                connection = listener.accept()[0]
            except OSError:
                continue
            if greeting:
                connection.sendall(greeting)
            held.append(connection)
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        port = listener.getsockname()[1]
        proc = run_subprocess(["-s", "dcd", "-log2c", "0,1,1", "-out", "null",
                               "--connect-timeout", str(timeout), "--scheduler",
                               f"tcp://127.0.0.1:{port}", HEART])
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()
    return proc, port


def test_a_scheduler_address_that_never_answers_as_dask_is_one_line_after_the_timeout():
    # a service that takes the connection and never answers (an HTTP port, the dashboard's):
    # dask's connect timeout does not cover its handshake, and bsvm-grid waited for ever
    # (run_subprocess's 60 s timeout fails the test then)
    pytest.importorskip("distributed", reason="the dist extra (dask) is not installed")
    proc, port = _grid_against_a_listener(b"", 1)
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert proc.stderr == (f"--scheduler tcp://127.0.0.1:{port}: no answer from a Dask "
                           "scheduler within 1 s (the address takes connections: another "
                           "service's port, such as the dashboard's?)\n")


def test_a_scheduler_address_that_answers_in_another_protocol_says_so():
    # an SSH server's banner, read by dask as its frame sizes, gave "Unable to allocate
    # 2.82 EiB for an array" as the reason
    pytest.importorskip("distributed", reason="the dist extra (dask) is not installed")
    proc, port = _grid_against_a_listener(b"SSH-2.0-OpenSSH_9.2\r\n", 3)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == (f"--scheduler tcp://127.0.0.1:{port}: cannot reach the Dask "
                           "scheduler within 3 s (what answered there does not speak Dask's "
                           "protocol)\n")
