"""End-to-end tests of the installed commands: exit codes, one-line errors, no partial output,
and the LIBSVM-style lines that scripts parse."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from corpus import MALFORMED
from reference.peers import seed_liblinear

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"


def run(tool, *args, cwd=None, stdin=None):
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, input=stdin,
                          capture_output=True, timeout=300)


def assert_one_line_error(result, status, startswith=None):
    err = result.stderr.decode()
    assert result.returncode == status, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    if startswith:
        assert lines[0].startswith(startswith), lines[0]
    return lines[0]


def test_train_predict_heart_scale(tmp_path):
    model = tmp_path / "heart.model"
    result = run("bsvm-train", "-s", "dcd", "-c", "1", "-q", DATA / "heart_scale.xz", model)
    assert result.returncode == 0, result.stderr.decode()
    out = tmp_path / "pred"
    result = run("bsvm-predict", DATA / "heart_scale.xz", model, out)
    assert result.returncode == 0, result.stderr.decode()
    match = re.fullmatch(r"Accuracy = ([\d.]+)% \((\d+)/270\) \(classification\)\n",
                         result.stdout.decode())
    assert match, result.stdout
    predictions = np.loadtxt(out)
    assert set(predictions) <= {-1.0, 1.0} and len(predictions) == 270
    truth = np.array([float(line.split()[0]) for line in
                      __import__("lzma").open(DATA / "heart_scale.xz").read().decode().splitlines()])
    assert int(match.group(2)) == int((predictions == truth).sum())


def test_default_model_name_in_current_directory(tmp_path):
    result = run("bsvm-train", "-s", "dcd", "-q", DATA / "heart_scale.xz", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert (tmp_path / "heart_scale.xz.model").exists()


def test_pipe_train_to_predict(tmp_path):
    out = tmp_path / "out"
    cmd = (f"{BIN / 'bsvm-train'} -s dcd -q {DATA / 'heart_scale.xz'} - | "
           f"{BIN / 'bsvm-predict'} {DATA / 'heart_scale.xz'} - {out}")
    result = subprocess.run(cmd, shell=True, capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().startswith("Accuracy = ")
    assert len(out.read_text().splitlines()) == 270


def test_predictions_to_stdout_keep_accuracy_on_stderr(tmp_path):
    model = tmp_path / "m"
    run("bsvm-train", "-s", "dcd", "-q", DATA / "heart_scale.xz", model)
    result = run("bsvm-predict", DATA / "heart_scale.xz", model, "-")
    assert result.returncode == 0
    assert len(result.stdout.decode().splitlines()) == 270
    assert result.stderr.decode().startswith("Accuracy = ")


def test_cross_validation_line(tmp_path):
    result = run("bsvm-train", "-s", "dcd", "-v", "5", "-q", DATA / "heart_scale.xz",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert re.fullmatch(r"Cross Validation Accuracy = [\d.]+%\n", result.stdout.decode())
    assert not list(tmp_path.iterdir())          # -v writes no model


FOLD_MAX_ITER = ("warning: the solver stopped at --max-iter before its stopping tolerance in a "
                 "cross-validation fold; a larger --max-iter (0 = unlimited) or a larger -e may "
                 "help")


@pytest.mark.parametrize("extra", [[], ["-b", "1"]])
def test_cross_validation_says_when_folds_stop_at_max_iter(tmp_path, extra):
    # the oracle: the training summary's own warning (LIBLINEAR's) for the same options; -v
    # prints only the accuracy, so its folds' models reaching --max-iter went unsaid
    heart = DATA / "heart_scale.xz"
    for max_iter, reached in (("2", True), ("0", False)):
        options = ["-s", "dcd", "--max-iter", max_iter, *extra]
        summary = run("bsvm-train", *options, heart, tmp_path / "m")
        assert summary.returncode == 0, summary.stderr.decode()
        assert ("WARNING: reaching max number of iterations" in summary.stdout.decode()) \
            == reached
        cv = run("bsvm-train", *options, "-v", "5", heart)
        assert cv.returncode == 0, cv.stderr.decode()
        assert cv.stderr.decode().splitlines() == ([FOLD_MAX_ITER] if reached else [])
        quiet = run("bsvm-train", *options, "-v", "5", "-q", heart)
        assert quiet.stderr.decode() == "" and quiet.stdout == cv.stdout
    for jobs in ("1", "2"):
        grid = run("bsvm-grid", "-s", "dcd", "--max-iter", "2", *extra, "-log2c", "0,1,1",
                   "-v", "3", "-j", jobs, "-out", "null", heart)
        assert grid.returncode == 0, grid.stderr.decode()
        assert grid.stderr.decode().splitlines() == [FOLD_MAX_ITER]


@pytest.mark.parametrize("tool", ["bsvm-train", "bsvm-grid"])
def test_more_folds_than_rows_is_leave_one_out_as_liblinear(tmp_path, tool):
    # LIBLINEAR (and LIBSVM) run -v n > rows as leave-one-out, with a warning. With a tight
    # tolerance every fold's model is the optimum, so the accuracy is LIBLINEAR's own.
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    plain = tmp_path / "heart"
    plain.write_bytes(__import__("lzma").open(DATA / "heart_scale.xz").read())
    y, x = liblinearutil.svm_read_problem(str(plain))
    seed_liblinear()                   # its folds' orders: the same in any test order
    theirs = liblinearutil.train(y, x, "-s 3 -c 1 -e 0.00001 -v 300 -q")
    options = ["-s", "dcd", "-e", "0.00001", "-v", "300"]
    if tool == "bsvm-grid":
        options += ["-log2c", "0,0,1", "-log2g", "null", "-out", "null"]
    result = run(tool, *options, plain, cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 0, err
    # at this tolerance the folds reach --max-iter, as LIBLINEAR's reach its own cap (its
    # train -v without -q prints its warning for each of the 270)
    assert err.splitlines() == ["warning: -v 300 asks for more folds than the 270 training rows: "
                                "using 270 folds (leave-one-out cross validation)", FOLD_MAX_ITER]
    out = result.stdout.decode()
    rate = re.fullmatch(r"Cross Validation Accuracy = ([\d.]+)%\n", out) if tool == "bsvm-train" \
        else re.search(r"^1\.0 ([\d.]+)$", out, re.M)
    assert rate, out
    assert float(rate.group(1)) == pytest.approx(theirs, abs=1e-3)     # %g: 6 digits


def test_quiet_still_warns_that_the_folds_are_leave_one_out_as_svm_train(tmp_path):
    # svm-train -q and LIBLINEAR's train -q print this warning (fprintf to stderr, not their
    # quiet-able info()): the cross validation is not the one asked for
    five = tmp_path / "five"
    five.write_bytes(b"".join(__import__("lzma").open(DATA / "heart_scale.xz").readlines()[:5]))
    result = run("bsvm-train", "-q", "-s", "dcd", "-v", "10", five, cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr.decode().splitlines() == [
        "warning: -v 10 asks for more folds than the 5 training rows: using 5 folds "
        "(leave-one-out cross validation)"]
    assert re.fullmatch(r"Cross Validation Accuracy = [\d.]+%\n", result.stdout.decode())


def test_a_fold_whose_training_part_has_one_class_predicts_it_as_liblinear(tmp_path):
    # One row of class -1: in leave-one-out its fold trains on +1 rows only. LIBLINEAR trains a
    # one-class model there, which predicts +1; so must we (not fail with "only one class").
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    rows = __import__("lzma").open(DATA / "heart_scale.xz").read().decode().splitlines()
    plain = tmp_path / "rare"
    plain.write_text("\n".join([r for r in rows if r.startswith("+1")][:30]
                               + [next(r for r in rows if r.startswith("-1"))]) + "\n")
    y, x = liblinearutil.svm_read_problem(str(plain))
    seed_liblinear()                   # its folds' orders: the same in any test order
    theirs = liblinearutil.train(y, x, "-s 3 -c 1 -e 0.00001 -v 31 -q")
    for tool, extra in (("bsvm-train", []),
                        ("bsvm-grid", ["-log2c", "0,0,1", "-log2g", "null", "-out", "null"])):
        result = run(tool, "-q", "-s", "dcd", "-e", "0.00001", "-v", "31", *extra, plain,
                     cwd=tmp_path)
        assert result.returncode == 0, result.stderr.decode()
        out = result.stdout.decode()
        rate = re.search(r"Accuracy = ([\d.]+)%$", out, re.M) if tool == "bsvm-train" \
            else re.search(r"^1\.0 ([\d.]+)$", out, re.M)
        assert float(rate.group(1)) == pytest.approx(theirs, abs=1e-3)
        assert theirs < 100          # the lone -1 row is predicted +1


def test_glued_class_weight_changes_the_model(tmp_path):
    plain, weighted = tmp_path / "a", tmp_path / "b"
    run("bsvm-train", "-s", "dcd", "-q", DATA / "heart_scale.xz", plain)
    result = run("bsvm-train", "-s", "dcd", "-q", "-w-1", "5", DATA / "heart_scale.xz", weighted)
    assert result.returncode == 0, result.stderr.decode()
    assert plain.read_bytes() != weighted.read_bytes()


def test_same_seed_same_model_bytes(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for path in (a, b):
        run("bsvm-train", "-s", "dcd", "-q", "--seed", "7", DATA / "heart_scale.xz", path)
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_data_one_line_exit_1_no_model(tmp_path, case):
    content, line, words = MALFORMED[case]
    data = tmp_path / "bad.txt"
    data.write_bytes(content.encode() if isinstance(content, str) else content)
    model = tmp_path / "bad.model"
    result = run("bsvm-train", "-s", "dcd", data, model, cwd=tmp_path)
    message = assert_one_line_error(result, 1, startswith=f"{data}:{line}: ")
    assert words in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt"]


def test_empty_training_file(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("")
    assert "no data" in assert_one_line_error(run("bsvm-train", "-s", "dcd", empty,
                                                  tmp_path / "m"), 1)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("probability", ["0", "1"])
def test_empty_test_file_writes_nothing_to_standard_output(tmp_path, probability):
    # no partial output: with -b 1 the 'labels' header went to stdout before the error
    assert run("bsvm-train", "-q", "-b", "1", "-s", "dcd", DATA / "heart_scale.xz",
               tmp_path / "m").returncode == 0
    empty = tmp_path / "empty"
    empty.write_text("")
    result = run("bsvm-predict", "-q", "-b", probability, empty, tmp_path / "m", "-")
    assert "no data" in assert_one_line_error(result, 1, startswith=str(empty))
    assert result.stdout == b""


MALFORMED_MODELS = {
    "truncated": lambda good: good[: len(good) // 2],
    "unknown_key": lambda good: good.replace("nr_class", "nr_klass", 1),
    "nan_coefficient": lambda good: re.sub(r"\n(-?[\d.e+-]+) ?\n", "\nnan\n", good, count=1),
    "data_file": lambda good: "1 1:0.5 2:1\n-1 3:1\n",
    "libsvm_one_class": lambda good: ("svm_type one_class\nkernel_type rbf\ngamma 0.5\n"
                                      "nr_class 2\ntotal_sv 1\nrho 0.1\nSV\n1 1:1\n"),
    "libsvm_precomputed": lambda good: ("svm_type c_svc\nkernel_type precomputed\nnr_class 2\n"
                                        "total_sv 1\nrho 0\nlabel 1 -1\nnr_sv 1 0\nSV\n1 0:1\n"),
    "liblinear_regression": lambda good: ("solver_type L2R_L2LOSS_SVR\nnr_class 2\n"
                                          "nr_feature 1\nbias -1\nw\n0.5\n"),
    "empty": lambda good: "",
}


@pytest.mark.parametrize("case", sorted(MALFORMED_MODELS))
def test_malformed_model_one_line_exit_1_no_output(tmp_path, case):
    good_path = tmp_path / "good.model"
    run("bsvm-train", "-s", "dcd", "-q", "--format", "liblinear", DATA / "heart_scale.xz",
        good_path)
    bad = tmp_path / "bad.model"
    bad.write_text(MALFORMED_MODELS[case](good_path.read_text()))
    out = tmp_path / "out"
    result = run("bsvm-predict", DATA / "heart_scale.xz", bad, out)
    assert_one_line_error(result, 1, startswith=f"{bad}")
    assert not out.exists()


@pytest.mark.parametrize("args, option", [
    (["-c", "0"], "-c"), (["-c", "-1"], "-c"), (["-g", "-1"], "-g"), (["-e", "0"], "-e"),
    (["-v", "1"], "-v"), (["--budget", "0"], "--budget"), (["--epochs", "0"], "--epochs"),
    (["-s", "3"], "-s"), (["-s", "nosuch"], "-s"), (["-t", "4"], "-t"), (["-h", "2"], "-h"),
    (["--max-iter", "-1"], "--max-iter"),
])
def test_bad_options_exit_2_naming_the_option(tmp_path, args, option):
    result = run("bsvm-train", "-s", "dcd", *args, DATA / "heart_scale.xz", tmp_path / "m")
    assert result.returncode == 2, result.stderr.decode()
    assert option in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()
    assert not (tmp_path / "m").exists()


def test_default_solver_is_budgeted_rbf_svm(tmp_path):
    # svm-train's default is an RBF C-SVC; ours is BSGD with the RBF kernel and gamma 1/13
    result = run("bsvm-train", "-q", "--budget", "50", DATA / "heart_scale.xz", tmp_path / "m")
    assert result.returncode == 0, result.stderr.decode()
    header = (tmp_path / "m").read_text().split("\nSV\n")[0]
    assert "solver bsgd" in header and "kernel_type rbf" in header
    assert f"gamma {1 / 13!r}" in header


def test_m_option_is_accepted_with_a_notice(tmp_path):
    result = run("bsvm-train", "-s", "dcd", "-m", "300", DATA / "heart_scale.xz",
                 tmp_path / "m")
    assert result.returncode == 0 and "-m" in result.stderr.decode()


def test_missing_files(tmp_path):
    assert_one_line_error(run("bsvm-train", "-s", "dcd", tmp_path / "nope", tmp_path / "m"),
                          1, startswith=f"{tmp_path / 'nope'}: no such file")
    assert_one_line_error(run("bsvm-predict", DATA / "heart_scale.xz", tmp_path / "nope",
                              tmp_path / "out"), 1)
    assert not (tmp_path / "out").exists()


def test_bad_test_file_leaves_no_prediction_file(tmp_path):
    model = tmp_path / "m"
    run("bsvm-train", "-s", "dcd", "-q", DATA / "heart_scale.xz", model)
    test = tmp_path / "test"
    test.write_text("1 1:1\n" * 100 + "1 1:oops\n")
    out = tmp_path / "out"
    assert_one_line_error(run("bsvm-predict", test, model, out), 1,
                          startswith=f"{test}:101: value is not a number")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "test"]


def test_liblinear_predict_agrees_with_exported_model(tmp_path):
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    model = tmp_path / "a9a.liblinear"
    result = run("bsvm-train", "-s", "dcd", "-c", "1", "-B", "1", "-q", "--format", "liblinear",
                 DATA / "a9a.xz", model)
    assert result.returncode == 0, result.stderr.decode()
    ours = tmp_path / "ours"
    assert run("bsvm-predict", "-q", DATA / "a9a.t.xz", model, ours).returncode == 0
    plain = tmp_path / "a9a.t"
    plain.write_bytes(__import__("lzma").open(DATA / "a9a.t.xz").read())
    y, x = liblinearutil.svm_read_problem(str(plain))
    theirs, _, _ = liblinearutil.predict(y, x, liblinearutil.load_model(str(model)), "-q")
    np.testing.assert_array_equal(np.loadtxt(ours), theirs)


def test_libsvm_predict_agrees_with_exported_bsgd_model(tmp_path):
    svmutil = pytest.importorskip("libsvm.svmutil")
    model = tmp_path / "heart.libsvm"
    result = run("bsvm-train", "-s", "bsgd", "--budget", "60", "-c", "8", "-q",
                 "--format", "libsvm", DATA / "heart_scale.xz", model)
    assert result.returncode == 0, result.stderr.decode()
    ours = tmp_path / "ours"
    assert run("bsvm-predict", "-q", DATA / "heart_scale.xz", model, ours).returncode == 0
    plain = tmp_path / "heart"
    plain.write_bytes(__import__("lzma").open(DATA / "heart_scale.xz").read())
    y, x = svmutil.svm_read_problem(str(plain))
    theirs, _, _ = svmutil.svm_predict(y, x, svmutil.svm_load_model(str(model)), "-q")
    np.testing.assert_array_equal(np.loadtxt(ours), theirs)


# ---------------------------------------------------------------------------------------------
# --monitor, -v and warnings (found by a review)

def _heart_text():
    return __import__("lzma").open(DATA / "heart_scale.xz").read()


def _test_accuracy(csv):
    lines = csv.read_text().splitlines()
    column = lines[0].split(",").index("test_accuracy")
    return [float(line.split(",")[column]) for line in lines[1:]]


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_monitor_test_rows_of_unknown_labels_are_errors(tmp_path, solver):
    # bsca counted a test row whose label the training data lack as its negative class
    heart = tmp_path / "heart"
    heart.write_bytes(_heart_text())
    other = tmp_path / "label5"
    other.write_text("".join("5" + line[line.index(" "):] + "\n"
                             for line in heart.read_text().splitlines()))
    result = run("bsvm-train", "-q", "-s", solver, "--epochs", "2", "--monitor", "m.csv",
                 "--monitor-test", other, heart, "m", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert _test_accuracy(tmp_path / "m.csv") == [0.0, 0.0]


def test_monitor_test_reads_zero_based_files_as_the_training_file(tmp_path):
    # --monitor-test ignored --zero-based: its 1-based reading shifted every feature
    text = _heart_text().decode()
    zero = "".join(" ".join([line.split()[0]] + [f"{int(i) - 1}:{v}" for i, v in
                                                 (f.split(":") for f in line.split()[1:])])
                   + "\n" for line in text.splitlines())
    (tmp_path / "heart0").write_text(zero)
    result = run("bsvm-train", "-q", "--polish", "none", "--epochs", "2", "--zero-based",
                 "--monitor", "m.csv", "--monitor-test", "heart0", "heart0", "m", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    predicted = run("bsvm-predict", "--zero-based", "heart0", "m", "p", cwd=tmp_path)
    correct, total = map(int, re.search(r"\((\d+)/(\d+)\)", predicted.stdout.decode()).groups())
    # the last epoch's iterate is the model (--polish none)
    assert _test_accuracy(tmp_path / "m.csv")[-1] == pytest.approx(correct / total)


def test_monitor_and_model_cannot_both_be_standard_output(tmp_path):
    heart = tmp_path / "heart"
    heart.write_bytes(_heart_text())
    assert_one_line_error(run("bsvm-train", "-q", "--monitor", "-", heart, "-"), 2,
                          "Usage error: --monitor - and the model file - would both go to "
                          "standard output")
    assert_one_line_error(run("bsvm-train", "-q", "--monitor", "m", "--monitor-test", "-", "-",
                              "out", cwd=tmp_path, stdin=heart.read_bytes()), 2,
                          "Usage error: --monitor-test - and the training file - cannot both")
    # --monitor - with a model file: stdout is the CSV alone (the summary went after it)
    result = run("bsvm-train", "--epochs", "2", "--monitor", "-", heart, "m", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[0].startswith("epoch,") and len(lines) == 3
    assert all(len(line.split(",")) == len(lines[0].split(",")) for line in lines)
    assert "n_sv = " in result.stderr.decode()


def test_cross_validation_takes_no_model_or_monitor(tmp_path):
    heart = tmp_path / "heart"
    heart.write_bytes(_heart_text())
    # stdin data with -v needed a model file that it never wrote
    piped = run("bsvm-train", "-s", "dcd", "-v", "5", "-", stdin=heart.read_bytes())
    named = run("bsvm-train", "-s", "dcd", "-v", "5", heart)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == named.stdout and named.stdout.startswith(b"Cross Validation")
    # --monitor with -v was dropped silently, its path unchecked
    result = run("bsvm-train", "-v", "3", "--epochs", "1", "--monitor", "/nonexistent/x",
                 "--monitor-test", "/nonexistent/y", heart)
    assert result.returncode == 0, result.stderr
    assert result.stderr.decode().splitlines() == [
        "notice: --monitor has no effect with -v (no model is trained to monitor)",
        "notice: --monitor-test has no effect with -v (no model is trained to monitor)"]
    # one training row: bad data (exit 1, the file named), not bad usage
    (tmp_path / "one").write_text("1 1:1\n")
    assert_one_line_error(run("bsvm-train", "-v", "5", "one", cwd=tmp_path), 1,
                          "one: 1 training row: cross validation (-v) needs at least 2")


def test_a_warning_of_every_fold_is_printed_once(tmp_path):
    heart = tmp_path / "heart"
    heart.write_bytes(_heart_text())
    # -w9 for an absent class, warned by every internal fold of -b 1 from threads: 5 to 6
    # copies, a different number from run to run
    for _ in range(3):
        result = run("bsvm-train", "-s", "dcd", "-b", "1", "-w9", "2", heart, "m", cwd=tmp_path)
        assert result.returncode == 0
        assert result.stderr.decode().splitlines() == [
            "warning: class label 9 specified in weight is not found"]


@pytest.mark.parametrize("solver", ["dcd", "bsgd"])
def test_cross_validation_with_probability_scores_the_probability_labels(tmp_path, solver):
    # svm-train -b 1 -v n trains every fold with its probabilities and scores the class of
    # largest probability (svm_cross_validation); -b 1 had no effect with -v. The oracle: each
    # fold trained and predicted by the commands, with -b 1, on files of its rows.
    from budgetsvm.train import stratified_folds
    rows = _heart_text().decode().splitlines()
    y = np.array([float(row.split()[0]) for row in rows])
    fold = stratified_folds(y, 5, 1)
    correct = 0
    for f in range(5):
        (tmp_path / "train").write_text("".join(r + "\n" for r, g in zip(rows, fold) if g != f))
        (tmp_path / "test").write_text("".join(r + "\n" for r, g in zip(rows, fold) if g == f))
        assert run("bsvm-train", "-q", "-s", solver, "-b", "1", "train", "m",
                   cwd=tmp_path).returncode == 0
        predicted = run("bsvm-predict", "-b", "1", "test", "m", "out", cwd=tmp_path)
        correct += int(re.search(r"\((\d+)/\d+\)", predicted.stdout.decode()).group(1))
    expected = "Cross Validation Accuracy = %g%%\n" % (100.0 * correct / len(rows))
    for threads in ("1", "2"):
        result = run("bsvm-train", "-q", "-s", solver, "-b", "1", "-v", "5", "-n", threads,
                     DATA / "heart_scale.xz", cwd=tmp_path)
        assert result.returncode == 0, result.stderr.decode()
        assert result.stdout.decode() == expected
    if solver == "dcd":
        # -v writes no model: a model format without probabilities is no reason to refuse
        result = run("bsvm-train", "-q", "-s", solver, "-b", "1", "-v", "5", "--format",
                     "liblinear", DATA / "heart_scale.xz", cwd=tmp_path)
        assert result.returncode == 0, result.stderr.decode()
        assert result.stdout.decode() == expected


def test_names_of_solvers_and_choices_in_any_case(tmp_path):
    # -t RBF is -t rbf (svm-train users type either); -s BSCA, --maintenance MERGE, --loss L2
    # likewise: the model is the one of the lower-case command, byte for byte
    pairs = [(["-s", "BSCA", "--maintenance", "MERGE", "--merge-search", "LOOKUP-WD", "-t", "RBF"],
              ["-s", "bsca", "--maintenance", "merge", "--merge-search", "lookup-wd", "-t", "rbf"]),
             (["-s", "DCD", "--loss", "L2"], ["-s", "dcd", "--loss", "l2"])]
    for upper, lower in pairs:
        models = []
        for k, options in enumerate((upper, lower)):
            models.append(tmp_path / f"m{k}")
            r = run("bsvm-train", "-q", *options, "-c", "4", DATA / "heart_scale.xz", models[-1])
            assert r.returncode == 0, r.stderr.decode()
        assert models[0].read_bytes() == models[1].read_bytes()
    # an unknown name keeps the spelling the user typed in its error
    line = assert_one_line_error(run("bsvm-train", "-s", "FOO", DATA / "heart_scale.xz",
                                     tmp_path / "x"), 2)
    assert "'FOO'" in line


def test_format_names_in_any_case(tmp_path):
    models = []
    for name in ("LIBSVM", "libsvm"):
        models.append(tmp_path / name)
        r = run("bsvm-train", "-q", "--format", name, "-c", "4", DATA / "heart_scale.xz",
                models[-1])
        assert r.returncode == 0, r.stderr.decode()
    assert models[0].read_bytes() == models[1].read_bytes()
    assert models[0].read_text().startswith("svm_type c_svc")
