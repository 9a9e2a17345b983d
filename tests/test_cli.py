"""End-to-end tests of the installed commands: exit codes, one-line errors, no partial output,
and the LIBSVM-style lines that scripts parse."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from corpus import MALFORMED

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


@pytest.mark.parametrize("tool", ["bsvm-train", "bsvm-grid"])
def test_more_folds_than_rows_is_leave_one_out_as_liblinear(tmp_path, tool):
    # LIBLINEAR (and LIBSVM) run -v n > rows as leave-one-out, with a warning. With a tight
    # tolerance every fold's model is the optimum, so the accuracy is LIBLINEAR's own.
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    plain = tmp_path / "heart"
    plain.write_bytes(__import__("lzma").open(DATA / "heart_scale.xz").read())
    y, x = liblinearutil.svm_read_problem(str(plain))
    theirs = liblinearutil.train(y, x, "-s 3 -c 1 -e 0.00001 -v 300 -q")
    options = ["-s", "dcd", "-e", "0.00001", "-v", "300"]
    if tool == "bsvm-grid":
        options += ["-log2c", "0,0,1", "-log2g", "null", "-out", "null"]
    result = run(tool, *options, plain, cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert err.splitlines() == ["warning: -v 300 asks for more folds than the 270 training rows: "
                                "using 270 folds (leave-one-out cross validation)"]
    out = result.stdout.decode()
    rate = re.fullmatch(r"Cross Validation Accuracy = ([\d.]+)%\n", out) if tool == "bsvm-train" \
        else re.search(r"^1\.0 ([\d.]+)$", out, re.M)
    assert rate, out
    assert float(rate.group(1)) == pytest.approx(theirs, abs=1e-3)     # %g: 6 digits


def test_a_fold_whose_training_part_has_one_class_predicts_it_as_liblinear(tmp_path):
    # One row of class -1: in leave-one-out its fold trains on +1 rows only. LIBLINEAR trains a
    # one-class model there, which predicts +1; so must we (not fail with "only one class").
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    rows = __import__("lzma").open(DATA / "heart_scale.xz").read().decode().splitlines()
    plain = tmp_path / "rare"
    plain.write_text("\n".join([r for r in rows if r.startswith("+1")][:30]
                               + [next(r for r in rows if r.startswith("-1"))]) + "\n")
    y, x = liblinearutil.svm_read_problem(str(plain))
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
    (["-c", "0"], "-c"), (["-c", "-1"], "-c"), (["-g", "0"], "-g"), (["-e", "0"], "-e"),
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
