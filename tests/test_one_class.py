"""Training data of a single class: the model that LIBSVM and LIBLINEAR train there.

Oracles: LIBSVM's and LIBLINEAR's own programs (libsvm-official, liblinear-official): the model
file svm-train writes for one class, and the labels svm_predict and LIBLINEAR's predict give
with such files, ours and theirs. LIBSVM's README: "if training data are in only one class
..., the label in the training data is directly returned when testing".
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BIN = Path(sys.executable).parent
ONE_CLASS = "3 1:1 2:0.5\n3 2:1\n3 1:0.25 3:2\n3 3:-1\n"
TEST = "3 1:1\n-1 2:1 3:4\n5 1:0.5\n7 4:2\n"       # other labels, a feature unseen in training
WARNING = ("warning: the training data has only one class (label 3): the model predicts it "
           "for every row, as LIBSVM's and LIBLINEAR's do\n")


def run(tool, *args, cwd=None):
    return subprocess.run([str(BIN / tool), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "one").write_text(ONE_CLASS)
    (tmp_path / "test").write_text(TEST)
    return tmp_path / "one", tmp_path / "test"


def predictions(path):
    return [float(v) for v in path.read_text().split()]


@pytest.mark.parametrize("solver, fmt", [("dcd", "native"), ("dcd", "liblinear"),
                                         ("acf", "native"), ("ww", "native"),
                                         ("ww", "liblinear"), ("bsgd", "native"),
                                         ("bsgd", "libsvm"), ("bsca", "native")])
def test_every_row_gets_the_one_label(tmp_path, files, solver, fmt):
    one, test = files
    trained = run("bsvm-train", "-s", solver, "--format", fmt, one, tmp_path / "m")
    assert trained.returncode == 0, trained.stderr
    assert trained.stderr == WARNING                 # one line
    assert trained.stdout == ""                      # no solver ran: no summary lines
    quiet = run("bsvm-train", "-q", "-s", solver, "--format", fmt, one, tmp_path / "q")
    assert quiet.stderr == ""                        # -q silences it, as svm-train -q
    assert (tmp_path / "q").read_bytes() == (tmp_path / "m").read_bytes()
    predicted = run("bsvm-predict", test, tmp_path / "m", tmp_path / "p")
    assert predicted.returncode == 0, predicted.stderr
    assert predictions(tmp_path / "p") == [3.0] * 4
    # LIBLINEAR's predict prints its accuracy line without svm-predict's "(classification)"
    suffix = "" if fmt == "liblinear" else " (classification)"
    assert predicted.stdout == f"Accuracy = 25% (1/4){suffix}\n"


@pytest.mark.parametrize("probability", [False, True])
def test_the_libsvm_file_is_svm_train_s_byte_for_byte(tmp_path, files, probability):
    svmutil = pytest.importorskip("libsvm.svmutil")
    one, _ = files
    y, x = svmutil.svm_read_problem(str(one))
    theirs = tmp_path / "theirs"
    svmutil.svm_save_model(str(theirs), svmutil.svm_train(
        y, x, "-q -g 0.25" + (" -b 1" if probability else "")))
    ours = tmp_path / "ours"
    trained = run("bsvm-train", "-q", "-s", "bsgd", "-g", "0.25", "--format", "libsvm",
                  *(["-b", "1"] if probability else []), one, ours)
    assert trained.returncode == 0, trained.stderr
    assert ours.read_bytes() == theirs.read_bytes()


def test_libsvm_and_liblinear_predict_the_label_with_our_files(tmp_path, files):
    svmutil = pytest.importorskip("libsvm.svmutil")
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    one, test = files
    y, x = svmutil.svm_read_problem(str(test))
    run("bsvm-train", "-q", "-s", "bsgd", "-b", "1", "--format", "libsvm", one, tmp_path / "k")
    labels, _, probabilities = svmutil.svm_predict(y, x, svmutil.svm_load_model(
        str(tmp_path / "k")), "-b 1 -q")
    assert labels == [3.0] * 4 and probabilities == [[1.0]] * 4
    for solver in ("dcd", "ww"):
        run("bsvm-train", "-q", "-s", solver, "--format", "liblinear", one, tmp_path / solver)
        labels, _, _ = liblinearutil.predict(y, x, liblinearutil.load_model(
            str(tmp_path / solver)), "-q")
        assert labels == [3.0] * 4


def test_their_one_class_models_predict_the_label_here(tmp_path, files):
    svmutil = pytest.importorskip("libsvm.svmutil")
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    one, test = files
    y, x = svmutil.svm_read_problem(str(one))
    svmutil.svm_save_model(str(tmp_path / "svm"), svmutil.svm_train(y, x, "-q -b 1"))
    liblinearutil.save_model(str(tmp_path / "linear"), liblinearutil.train(y, x, "-q"))
    for model in ("svm", "linear"):
        result = run("bsvm-predict", test, tmp_path / model, tmp_path / "p")
        assert result.returncode == 0, result.stderr
        assert predictions(tmp_path / "p") == [3.0] * 4
    result = run("bsvm-predict", "-b", "1", test, tmp_path / "svm", tmp_path / "p")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "p").read_text() == "labels 3\n" + "3 1\n" * 4


@pytest.mark.parametrize("solver", ["dcd", "bsgd"])
def test_probability_one(tmp_path, files, solver):
    one, test = files
    assert run("bsvm-train", "-q", "-s", solver, "-b", "1", one, tmp_path / "m").returncode == 0
    result = run("bsvm-predict", "-b", "1", test, tmp_path / "m", tmp_path / "p")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "p").read_text() == "labels 3\n" + "3 1\n" * 4


def test_streamed_and_in_memory_one_class_models_are_the_same(tmp_path, files):
    one, _ = files
    for name, extra in (("stream", ["--stream"]), ("memory", [])):
        result = run("bsvm-train", *extra, one, tmp_path / name)
        assert result.returncode == 0, result.stderr
        assert result.stderr == WARNING
    assert (tmp_path / "stream").read_bytes() == (tmp_path / "memory").read_bytes()


def test_a_libsvm_file_of_one_class_with_support_vectors_is_refused(tmp_path):
    # svm_train never writes one: a single class trains no pair, so no SV
    path = tmp_path / "m"
    path.write_text("svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 1\ntotal_sv 1\nrho\n"
                    "label 3\nnr_sv 1\nSV\n1 1:1\n")
    result = run("bsvm-predict", path, path, tmp_path / "p")
    assert result.returncode == 1
    assert result.stderr == f"{path}:5: a model of one class (nr_class 1) has no support " \
                            "vectors, not 1\n"


def test_the_estimators_refuse_one_class_as_scikit_learn_does():
    from budgetsvm.estimators import BudgetSVC
    with pytest.raises(ValueError, match="at least two classes"):
        BudgetSVC().fit(np.eye(3), [1, 1, 1])


def test_a_nu_svc_file_of_one_class_is_written_back_as_libsvm_wrote_it(tmp_path, files):
    svmutil = pytest.importorskip("libsvm.svmutil")
    one, _ = files
    y, x = svmutil.svm_read_problem(str(one))
    theirs = tmp_path / "theirs"
    svmutil.svm_save_model(str(theirs), svmutil.svm_train(y, x, "-q -s 1 -t 1 -d 2 -b 1"))
    from budgetsvm import model_io
    model_io.save_model(model_io.load_model(str(theirs)), str(tmp_path / "ours"),
                        format="libsvm")
    assert (tmp_path / "ours").read_bytes() == theirs.read_bytes()


def test_one_class_with_an_absurd_index_is_the_dense_weights_error(tmp_path):
    # the size check of linear models comes first: no 16 GiB of zero weights
    path = tmp_path / "wide"
    path.write_text("3 2147483000:1\n3 1:1\n")
    result = run("bsvm-train", "-s", "dcd", path, tmp_path / "m")
    assert result.returncode == 1
    assert "dense weights" in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "m").exists()


def test_a_loaded_one_class_model_in_an_estimator(tmp_path, files):
    # its decision values are those of its one column (0), its predictions the label
    from budgetsvm.estimators import BudgetSVC
    one, _ = files
    run("bsvm-train", "-q", one, tmp_path / "m")
    estimator = BudgetSVC.load(str(tmp_path / "m"))
    X = np.array([[1.0, 0.0, 2.0], [0.0, 5.0, 0.0]])
    np.testing.assert_array_equal(estimator.decision_function(X), [0.0, 0.0])
    np.testing.assert_array_equal(estimator.predict(X), [3.0, 3.0])


def test_monitor_of_one_class_writes_no_file(tmp_path, files):
    one, _ = files
    result = run("bsvm-train", "--monitor", tmp_path / "epochs.csv", one, tmp_path / "m")
    assert result.returncode == 0, result.stderr
    assert "no epoch to record" in result.stderr
    assert not (tmp_path / "epochs.csv").exists() and (tmp_path / "m").exists()


def test_a_weight_for_an_absent_label_is_warned_of_as_with_two_classes(tmp_path, files):
    # svm_train runs its weight loop for one class too: "class label 5 specified in weight is
    # not found"; -w3 (the class present) is silent
    one, _ = files
    result = run("bsvm-train", "-w5", "2", "-w3", "4", one, tmp_path / "m")
    assert result.returncode == 0, result.stderr
    assert result.stderr == WARNING + \
        "warning: class label 5 specified in weight is not found\n"
