"""Model files: native round trips, LIBLINEAR/LIBSVM interoperability (checked against the official
liblinear/libsvm Python packages as oracles), strict error messages, and the prediction rules."""
import gzip
import io
import lzma
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm import model as model_mod, model_io, threads
from budgetsvm.errors import BsvmError, ModelFormatError
from budgetsvm.model import KernelModel, KernelSpec, LinearModel
from budgetsvm.model_io import FORMAT_VERSION, dumps_model, load_model, save_model
from reference.data import gaussian_classes, random_csr

BIN = pathlib.Path(sys.executable).parent

liblinearutil = pytest.importorskip("liblinear.liblinearutil")
svmutil = pytest.importorskip("libsvm.svmutil")

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEART = ROOT / "data" / "heart_scale.xz"


# ---------------------------------------------------------------------------------------------
# helpers and fixtures
# ---------------------------------------------------------------------------------------------

def same_bits(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def assert_same_model(m1, m2):
    assert type(m1) is type(m2)
    assert same_bits(m1.labels, m2.labels)
    assert same_bits(m1.coef, m2.coef)
    assert m1.multiclass == m2.multiclass and m1.solver == m2.solver
    assert m1.params == m2.params
    assert {k: type(v) for k, v in m1.params.items()} == {k: type(v) for k, v in m2.params.items()}
    for name in ("prob_a", "prob_b"):
        a, b = getattr(m1, name), getattr(m2, name)
        assert (a is None and b is None) or same_bits(a, b)
    if isinstance(m1, LinearModel):
        assert same_bits([m1.bias], [m2.bias]) and same_bits(m1.bias_coef, m2.bias_coef)
    else:
        assert m1.kernel == m2.kernel
        assert m1.sv.shape == m2.sv.shape
        assert np.array_equal(m1.sv.indptr, m2.sv.indptr)
        assert np.array_equal(m1.sv.indices, m2.sv.indices)
        assert same_bits(m1.sv.data, m2.sv.data) and same_bits(m1.rho, m2.rho)
        assert (m1.nr_sv is None and m2.nr_sv is None) or np.array_equal(m1.nr_sv, m2.nr_sv)


def nasty_reals(rng, shape):
    """Random reals with awkward values mixed in (-0.0, subnormals, huge, tiny, 0.1)."""
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-5, 5, size=shape)
    flat = x.reshape(-1)
    special = [-0.0, 5e-324, 1.7976931348623157e308, -2.2250738585072014e-308, 0.1, 1 / 3]
    flat[: min(len(flat), len(special))] = special[: len(flat)]
    return x


ALL_PARAMS = {"C": 0.5, "seed": 7, "maintenance": "merge", "shrinking": True, "gamma_given": None,
              "n_iter": "12 15 9", "class_weights": "", "note": 'quote " and \\ and é\n',
              "eps": 1e-300, "budget": 500, "max_iter_reached": False}


def linear_models(rng):
    models = []
    for multiclass, k in (("binary", 2), ("ovr", 3), ("ww", 2), ("ww", 4)):
        for bias in (-1.0, 1.0, 0.25):
            nr_w = 1 if multiclass == "binary" else k
            labels = np.array([1.0, -1.0]) if k == 2 else np.arange(k, 0, -1) * 1.5
            models.append(LinearModel(labels, nasty_reals(rng, (nr_w, 7)), bias,
                                      rng.standard_normal(nr_w), multiclass, "dcd",
                                      dict(ALL_PARAMS)))
    models.append(LinearModel([3, 7], np.zeros((1, 0)), -1, None, "binary", "acf"))
    return models


def kernel_models(rng):
    models = []
    specs = [KernelSpec("rbf", 0.5), KernelSpec("linear"), KernelSpec("poly", 0.3, 2, 1.25),
             KernelSpec("sigmoid", 0.01, 3, -0.5)]
    for spec in specs:
        sv = random_csr(rng, 9, 6)
        sv.data[0] = -0.0
        models.append(KernelModel([1, -1], spec, sv, nasty_reals(rng, (9, 1)), [0.125],
                                  "binary", "bsca", dict(ALL_PARAMS)))
    models.append(KernelModel([4, 2, 9], specs[0], random_csr(rng, 11, 5),
                              rng.standard_normal((11, 3)), None, "argmax", "bsgd",
                              {"budget": 11, "epochs": 5},
                              prob_a=[-1.0, -2.0, -3.0], prob_b=[0.5, 0.25, 0.0]))
    models.append(KernelModel([1, 2, 3, 4], specs[2], random_csr(rng, 10, 8),
                              rng.standard_normal((10, 3)), rng.standard_normal(6), "ovo",
                              "libsvm", {"svm_type": "c_svc"},
                              nr_sv=[2, 3, 0, 5], prob_a=rng.standard_normal(6),
                              prob_b=rng.standard_normal(6)))
    models.append(KernelModel([0.5, 2.5], specs[0], sp.csr_matrix((0, 3)), np.zeros((0, 1)),
                              [0.0], "binary", "bsgd"))
    return models


@pytest.fixture(scope="module")
def heart():
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(io.BytesIO(lzma.open(HEART).read()))
    return X.tocsr(), y


def three_class(rng, n=150, d=6):
    """A small synthetic 3-class set with labels 5, 2, 9 (first occurrence order 5, 2, 9)."""
    X, y_idx = gaussian_classes(rng, n, rng.standard_normal((3, d)) * 2, every_class_first=True)
    X[np.abs(X) < 0.3] = 0.0
    return sp.csr_matrix(X), np.array([5.0, 2.0, 9.0])[y_idx]


# ---------------------------------------------------------------------------------------------
# native format
# ---------------------------------------------------------------------------------------------

def test_native_round_trip_is_exact_and_byte_identical(tmp_path):
    rng = np.random.default_rng(0)
    for i, m in enumerate(linear_models(rng) + kernel_models(rng)):
        path = tmp_path / f"m{i}.model"
        save_model(m, str(path))
        loaded = load_model(str(path))
        assert_same_model(m, loaded)
        path2 = tmp_path / f"m{i}.again"
        save_model(loaded, str(path2))
        assert path.read_bytes() == path2.read_bytes()
        assert path.read_bytes() == dumps_model(m).encode("ascii")


@pytest.mark.parametrize("block_values", [model_io.WEIGHT_BLOCK_VALUES, 7])
def test_weight_rows_written_block_by_block_by_threads_are_the_repr_lines(tmp_path, monkeypatch,
                                                                          block_values):
    # more rows than three formatting blocks: the threads format blocks while the main thread
    # writes the ones before; the file must be the rows' repr lines in order, for any count
    # (block_values 7: blocks of 2 lines of 3 weights, as a wide model's blocks are shortened)
    monkeypatch.setattr(model_io, "WEIGHT_BLOCK_VALUES", block_values)
    rng = np.random.default_rng(5)
    n_features = 3 * model_io.WEIGHT_BLOCK_ROWS + 17
    W = rng.standard_normal((3, n_features)) * 10.0 ** rng.integers(-20, 20, (3, n_features))
    m = LinearModel([1, 2, 3], W, 1.0, [0.5, -0.25, 2.0], "ovr", "dcd", {"C": 1.0})
    expected = "".join(" ".join(map(repr, row)) + "\n" for row in W.T.tolist())
    expected += "0.5 -0.25 2.0\nend\n"
    files = []
    for n_threads in (1, 3):
        path = tmp_path / f"n{n_threads}.model"
        with threads.pool(n_threads):
            save_model(m, str(path))
        text = path.read_text()
        assert text.endswith("\nw\n" + expected)
        files.append(path.read_bytes())
    assert files[0] == files[1] == dumps_model(m).encode("ascii")


def test_native_header_layout():
    m = LinearModel([1, -1], [[0.5, -0.25]], 1.0, [0.125], "binary", "dcd",
                    {"C": 1.0, "loss": "l1", "seed": 1})
    assert dumps_model(m) == (
        f"budgetsvm_model {FORMAT_VERSION}\nmodel_type linear\nsolver dcd\nmulticlass binary\n"
        "nr_class 2\nlabel 1 -1\nnr_feature 2\nbias 1.0\nnr_w 1\n"
        'param C real 1.0\nparam loss str "l1"\nparam seed int 1\n'
        "w\n0.5\n-0.25\n0.125\nend\n")
    k = KernelModel([1, -1], KernelSpec("rbf", 0.5), sp.csr_matrix([[0.0, 2.0], [1.5, 0.0]]),
                    [[0.75], [-0.75]], None, "binary", "bsgd", {"budget": 2})
    assert dumps_model(k).endswith(
        "nr_feature 2\nnr_coef 1\ntotal_sv 2\nrho 0.0\nparam budget int 2\n"
        "SV\n0.75 2:2.0\n-0.75 1:1.5\nend\n")


def test_save_to_stdout_and_read_compressed(tmp_path, capsys):
    m = kernel_models(np.random.default_rng(1))[4]
    save_model(m, "-")
    text = capsys.readouterr().out
    assert text == dumps_model(m)
    path = tmp_path / "m.model.gz"
    path.write_bytes(gzip.compress(text.encode()))
    assert_same_model(m, load_model(str(path)))
    crlf = tmp_path / "crlf.model"
    crlf.write_bytes(text.replace("\n", "\r\n").encode())
    assert_same_model(m, load_model(str(crlf)))


def test_non_finite_or_unrepresentable_models_are_refused(tmp_path):
    frac = LinearModel([0.5, 1.5], [[1.0]], -1, None, "binary", "dcd")
    assert_same_model(frac, load_model_text(tmp_path, dumps_model(frac)))
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    bad = LinearModel([1, -1], [[np.nan, 1.0]], -1, None, "binary", "dcd")
    with pytest.raises(BsvmError, match="non-finite"):
        save_model(bad, str(tmp_path / "x"))
    assert not os.listdir(tmp_path)
    with pytest.raises(BsvmError, match="integer"):
        save_model(frac, str(tmp_path / "x"), format="liblinear")
    argmax = kernel_models(np.random.default_rng(2))[4]
    with pytest.raises(BsvmError, match="one-vs-one"):
        save_model(argmax, str(tmp_path / "x"), format="libsvm")
    with pytest.raises(BsvmError):
        save_model(argmax, str(tmp_path / "x"), format="liblinear")
    assert not os.listdir(tmp_path)


def load_model_text(tmp_path, text, name="given.model"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return load_model(str(path))


# ---------------------------------------------------------------------------------------------
# LIBLINEAR interoperability
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options", ["-s 3", "-s 3 -B 1", "-s 1 -B 0.5", "-s 4", "-s 0"])
def test_liblinear_model_loads_and_predicts_identically(tmp_path, heart, options):
    X, y = heart
    m = liblinearutil.train(y, X, options + " -q")
    path = str(tmp_path / "ll.model")
    liblinearutil.save_model(path, m)
    ours = load_model(path)
    labels, _, values = liblinearutil.predict(y, X, m, "-q")
    assert np.array_equal(ours.predict(X), labels)
    dec = ours.decision_function(X)
    values = np.asarray(values)
    np.testing.assert_allclose(dec[:, :values.shape[1]], values, rtol=1e-13, atol=1e-15)
    if "-s 4" in options:
        # Two-class Crammer-Singer: LIBLINEAR decides by the sign of column 0 only.
        assert ours.multiclass == "binary"
        return
    # Our LIBLINEAR writer reproduces LIBLINEAR's file byte for byte.
    assert dumps_model(ours, "liblinear") == pathlib.Path(path).read_text()


def test_liblinear_two_class_crammer_singer_uses_the_first_column(tmp_path):
    text = ("solver_type MCSVM_CS\nnr_class 2\nlabel 4 6\nnr_feature 1\nbias -1\nw\n"
            "1 5 \n")
    path = tmp_path / "cs.model"
    path.write_text(text)
    ours = load_model(str(path))
    X = sp.csr_matrix(np.array([[1.0], [-1.0], [0.0]]))
    labels, _, _ = liblinearutil.predict([], X, liblinearutil.load_model(str(path)), "-q")
    assert labels == [4, 6, 6]                       # not arg-max (which would give 6 for x = 1)
    assert np.array_equal(ours.predict(X), labels)
    # Written back as MCSVM_CS with columns (w0, -w0): LIBLINEAR predicts the same.
    save_model(ours, str(path), format="liblinear")
    assert path.read_text().endswith("w\n1 -1 \n")


def _with_blank_line_after(text, line_number):
    lines = text.splitlines(keepends=True)
    return "".join(lines[:line_number] + ["\n", "  \n"] + lines[line_number:])


@pytest.mark.parametrize("tool", ["liblinear", "libsvm"])
def test_blank_lines_in_an_official_header_are_skipped_as_the_official_readers_do(
        tmp_path, heart, tool):
    X, y = heart
    path = tmp_path / "official.model"
    if tool == "liblinear":
        liblinearutil.save_model(str(path), liblinearutil.train(y, X, "-s 3 -q"))
        load_theirs, predict_theirs = liblinearutil.load_model, liblinearutil.predict
    else:
        svmutil.svm_save_model(str(path), svmutil.svm_train(y, X, "-c 4 -q"))
        load_theirs, predict_theirs = svmutil.svm_load_model, svmutil.svm_predict
    text = path.read_text()
    blank = tmp_path / "blank.model"
    blank.write_text(_with_blank_line_after(text, 2))
    # the official reader takes the file (fscanf skips blank lines) and predicts as before
    labels_theirs, _, _ = predict_theirs([], X, load_theirs(str(blank)), "-q")
    ours = load_model(str(blank))
    assert_same_model(ours, load_model(str(path)))
    assert np.array_equal(ours.predict(X), labels_theirs)


def test_a_blank_line_in_the_native_header_is_still_refused(tmp_path):
    text = dumps_model(LinearModel([1, 2], np.ones((1, 3)), -1, None, "binary", "dcd"))
    path = tmp_path / "native.model"
    path.write_text(_with_blank_line_after(text, 2))
    with pytest.raises(ModelFormatError, match=":3: empty line in the model header"):
        load_model(str(path))


def test_the_smallest_32_bit_label_is_a_label_of_liblinear_files(tmp_path, heart):
    # C ints hold -2147483648: LIBLINEAR trains on it and writes it; we read its file, and our
    # files with it are read by LIBLINEAR (it was refused both ways)
    X, y = heart
    y = np.where(y < 0, -2.0**31, y)
    theirs = liblinearutil.train(y, X, "-s 3 -q")
    path = tmp_path / "ll.model"
    liblinearutil.save_model(str(path), theirs)
    assert "label 1 -2147483648" in path.read_text()
    labels_theirs, _, _ = liblinearutil.predict([], X, theirs, "-q")
    assert np.array_equal(load_model(str(path)).predict(X), labels_theirs)
    ours = tmp_path / "ours.model"
    save_model(load_model(str(path)), str(ours), format="liblinear")
    assert ours.read_text() == path.read_text()
    model_io.check_format("liblinear", "dcd", np.unique(y))
    with pytest.raises(BsvmError, match="32-bit"):
        model_io.check_format("liblinear", "dcd", np.array([-2.0**31 - 1, 1.0]))


@pytest.mark.parametrize("options", ["-s 3", "-s 3 -B 1", "-s 4 -B 1"])
def test_liblinear_multiclass_model(tmp_path, options):
    X, y = three_class(np.random.default_rng(3))
    m = liblinearutil.train(y, X, options + " -q")
    path = str(tmp_path / "ll.model")
    liblinearutil.save_model(path, m)
    ours = load_model(path)
    assert ours.multiclass == ("ww" if "-s 4" in options else "ovr")
    assert list(ours.labels) == [5, 2, 9]
    labels, _, values = liblinearutil.predict(y, X, m, "-q")
    assert np.array_equal(ours.predict(X), labels)
    np.testing.assert_allclose(ours.decision_function(X), values, rtol=1e-13, atol=1e-15)
    assert dumps_model(ours, "liblinear") == pathlib.Path(path).read_text()


@pytest.mark.parametrize("multiclass,k", [("binary", 2), ("ovr", 3), ("ww", 2), ("ww", 4)])
@pytest.mark.parametrize("bias", [-1.0, 1.0, 2.5])
def test_our_linear_model_exported_predicts_the_same_in_liblinear(tmp_path, multiclass, k, bias):
    rng = np.random.default_rng(k * 10 + int(bias * 2))
    nr_w = 1 if multiclass == "binary" else k
    labels = np.array([3.0, -7.0, 11.0, 0.0])[:k]
    params = {"loss": "l2"} if multiclass == "ovr" else {}
    m = LinearModel(labels, rng.standard_normal((nr_w, 8)), bias, rng.standard_normal(nr_w),
                    multiclass, multiclass if multiclass == "ww" else "dcd", params)
    path = str(tmp_path / "ours.model")
    save_model(m, path, format="liblinear")
    first = pathlib.Path(path).read_text().splitlines()[0]
    assert first == "solver_type " + {"binary": "L2R_L1LOSS_SVC_DUAL", "ovr": "L2R_L2LOSS_SVC_DUAL",
                                      "ww": "MCSVM_CS"}[multiclass]
    # Test rows are wider than the model (features 9..12 must be ignored).
    T = random_csr(rng, 300, 12, density=0.5)
    theirs = liblinearutil.load_model(path)
    labels_ll, _, _ = liblinearutil.predict([], T, theirs, "-q")
    assert np.array_equal(m.predict(T), labels_ll)
    back = load_model(path)
    if multiclass == "ww" and k == 2:
        # Written as (d, -d) with the labels swapped: same predictions, ties included.
        assert back.multiclass == "binary" and list(back.labels) == list(labels[::-1])
        # Exact ties: empty rows and rows with only features the model does not know.
        unseen = random_csr(rng, 5, 12, density=0.5) @ sp.diags([0.0] * 8 + [1.0] * 4)
        T = sp.vstack([sp.csr_matrix((5, 12)), unseen, T]).tocsr()
        assert np.array_equal(back.predict(T), m.predict(T))
        labels_ll, _, _ = liblinearutil.predict([], T, theirs, "-q")
        assert np.array_equal(m.predict(T), labels_ll)
    else:
        assert_same_model(m, _relabel(back, m))


def _relabel(loaded, original):
    """A LIBLINEAR file does not carry our solver name or metadata: compare the rest."""
    loaded.solver, loaded.params = original.solver, original.params
    return loaded


# ---------------------------------------------------------------------------------------------
# LIBSVM interoperability
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel", [0, 1, 2, 3])
@pytest.mark.parametrize("classes", [2, 3])
def test_libsvm_model_loads_and_predicts_identically(tmp_path, heart, kernel, classes):
    X, y = heart
    if classes == 3:
        rng = np.random.default_rng(4)
        y = np.where(y > 0, 1.0, np.where(rng.random(len(y)) < 0.5, 2.0, 3.0))
    m = svmutil.svm_train(y, X, f"-t {kernel} -c 2 -b 1 -q")
    path = str(tmp_path / "svm.model")
    svmutil.svm_save_model(path, m)
    ours = load_model(path)
    assert ours.multiclass == ("binary" if classes == 2 else "ovo")
    assert ours.prob_a is not None and len(ours.prob_a) == classes * (classes - 1) // 2
    # LIBSVM's own prediction from the file it wrote (SV features rounded to %.8g there).
    theirs = svmutil.svm_load_model(path)
    wide = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], 15))
    T = sp.vstack([wide, random_csr(np.random.default_rng(5), 50, 15, density=0.5)]).tocsr()
    labels, _, values = svmutil.svm_predict([], T, theirs, "-q")
    assert np.array_equal(ours.predict(T), labels)
    values = np.asarray(values)
    np.testing.assert_allclose(ours.decision_function(T), values, rtol=1e-9,
                               atol=1e-9 * np.abs(values).max())


@pytest.mark.parametrize("kernel", [0, 1, 2, 3])
@pytest.mark.parametrize("classes", [2, 3])
def test_libsvm_file_rewritten_byte_identical(tmp_path, kernel, classes):
    # Dyadic feature values print the same with LIBSVM's %.8g and our %.17g.
    rng = np.random.default_rng(6)
    X = sp.csr_matrix(rng.integers(-8, 9, size=(60, 5)) / 8.0)
    y = (np.arange(60) % classes).astype(float) * 2 - 1
    m = svmutil.svm_train(y, X, f"-t {kernel} -g 0.25 -r 0.5 -q")
    path = str(tmp_path / "svm.model")
    svmutil.svm_save_model(path, m)
    assert dumps_model(load_model(path), "libsvm") == pathlib.Path(path).read_text()


@pytest.mark.parametrize("kind", ["linear", "poly", "rbf", "sigmoid"])
def test_our_kernel_model_exported_predicts_the_same_in_libsvm(tmp_path, kind):
    rng = np.random.default_rng(7)
    spec = KernelSpec(kind, gamma=0.2, degree=3, coef0=0.5)
    sv = random_csr(rng, 40, 10)
    m = KernelModel([2, -2], spec, sv, rng.standard_normal((40, 1)), None, "binary", "bsgd",
                    {"budget": 40})
    path = str(tmp_path / "ours.model")
    save_model(m, path, format="libsvm")
    theirs = svmutil.svm_load_model(path)
    # Test rows wider than the SVs: the extra features count (LIBSVM).
    T = random_csr(rng, 300, 14, density=0.5)
    labels, _, values = svmutil.svm_predict([], T, theirs, "-q")
    assert np.array_equal(m.predict(T), labels)
    values = np.asarray(values)
    np.testing.assert_allclose(m.decision_function(T), values, rtol=1e-9,
                               atol=1e-9 * np.abs(values).max())
    # Read back: same decision function (SVs regrouped by sign, LIBSVM's layout).
    back = load_model(path)
    assert back.multiclass == "binary" and list(back.nr_sv) == [
        int((m.coef > 0).sum()), int((m.coef <= 0).sum())]
    np.testing.assert_allclose(back.decision_function(T), m.decision_function(T), rtol=1e-12,
                               atol=1e-12)


def test_a_libsvm_model_with_the_largest_feature_index_predicts_as_svm_predict(tmp_path, heart):
    # Feature 2147483647 on a support vector makes the model 2^31 - 1 features wide; SVᵀ keeps
    # only the columns the SVs use (model.UsedColumns), where a row pointer per feature took
    # 8.4 GB and 20 s. Oracle: svm_predict on the same file.
    import subprocess
    import sys
    from budgetsvm.memory import run_measuring_peak
    path = tmp_path / "wide.model"
    path.write_text("svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 2\n"
                    "rho 0.1\nlabel 1 -1\nnr_sv 1 1\nSV\n1 1:1 2147483647:1\n-1 1:-1 3:0.5\n")
    X, y = heart
    data = tmp_path / "heart"
    data.write_bytes(lzma.open(HEART).read())
    labels, _, values = svmutil.svm_predict([], X, svmutil.svm_load_model(str(path)), "-q")
    model = load_model(str(path))
    assert model.n_features == 2 ** 31 - 1          # indices 1..2^31-1: columns 0..2^31-2
    np.testing.assert_array_equal(model.predict(X), labels)
    np.testing.assert_allclose(model.decision_function(X)[:, 0], np.ravel(values), rtol=1e-12)
    status, peak, err = run_measuring_peak(
        [str(pathlib.Path(sys.executable).parent / "bsvm-predict"), str(data), str(path),
         str(tmp_path / "out")], tmp_path)
    assert status == 0 and peak < 500, (err, peak)
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "out"), labels)


def test_used_columns_give_the_kernel_values_of_the_full_width():
    # the products over the SVs' used columns sum the same terms in the same order as over the
    # full width: the same numbers, bit for bit
    rng = np.random.default_rng(3)
    width = model_mod.USED_COLUMNS_WIDTH + 5
    sv = random_csr(rng, 30, 40, density=0.3)
    columns = np.sort(rng.choice(width, 40, replace=False))
    sv = sp.csr_matrix((sv.data, columns[sv.indices], sv.indptr), shape=(30, width))
    X = sp.vstack([random_csr(rng, 200, 40, density=0.3)]).tocsr()
    X = sp.csr_matrix((X.data, columns[X.indices], X.indptr), shape=(200, width))
    X = sp.hstack([X, random_csr(rng, 200, 7, density=0.5)]).tocsr()   # and wider than SVs
    svT, sv_sq = model_mod.sv_columns(sv)
    assert isinstance(svT, model_mod.UsedColumns)
    full = sv.T.tocsr()
    for start, stop in model_mod.block_ranges(X, svT):
        ours, a_sq = model_mod.dot_rows(X, start, stop, svT)
        plain, _ = model_mod.dot_rows(X, start, stop, full)
        np.testing.assert_array_equal(ours, plain)


def test_libsvm_files_of_zero_based_data_keep_its_indices(tmp_path, heart):
    # A LIBSVM model's feature indices are keys of its training data, which svm-predict matches
    # with the test file's. Data written 0-based (scikit-learn's dump_svmlight_file default):
    # svm-train's model has index 0 and bsvm-predict --zero-based reads it as svm_predict
    # does; bsvm-train --zero-based --format libsvm writes indices that svm_predict matches
    # with the same 0-based file; 1-based reading refuses index 0 with a hint.
    import subprocess
    import sys
    from sklearn.datasets import dump_svmlight_file
    X, y = heart
    data = tmp_path / "heart0"
    dump_svmlight_file(X, y, str(data), zero_based=True)
    y0, x0 = svmutil.svm_read_problem(str(data))
    assert min(min(row) for row in x0 if row) == 0
    bin_dir = pathlib.Path(sys.executable).parent

    def run(tool, *args):
        return subprocess.run([str(bin_dir / tool), *map(str, args)], capture_output=True,
                              text=True, timeout=120)
    theirs_file, ours_file = tmp_path / "theirs.model", tmp_path / "ours.model"
    svmutil.svm_save_model(str(theirs_file), svmutil.svm_train(y0, x0, "-g 0.1 -q"))
    trained = run("bsvm-train", "-q", "--zero-based", "--format", "libsvm", "-g", "0.1",
                  "--budget", "60", data, ours_file)
    assert trained.returncode == 0, trained.stderr
    for model_file in (theirs_file, ours_file):
        expected, _, _ = svmutil.svm_predict(y0, x0, svmutil.svm_load_model(str(model_file)),
                                             "-q")
        out = tmp_path / "out"
        result = run("bsvm-predict", "--zero-based", data, model_file, out)
        assert result.returncode == 0, result.stderr
        np.testing.assert_array_equal(np.loadtxt(out), expected)
    # the same data 1-based: the 1-based model file has the same SV lines, one index up
    plain = tmp_path / "plain.model"
    assert run("bsvm-train", "-q", "--format", "libsvm", "-g", "0.1", "--budget", "60",
               HEART, plain).returncode == 0
    def one_up(token):
        index, colon, value = token.partition(":")
        return f"{int(index) + 1}:{value}" if colon else token

    def sv_lines(path):
        return path.read_text().split("SV\n")[1].splitlines()
    assert [" ".join(map(one_up, line.split())) for line in sv_lines(ours_file)] == \
        [" ".join(line.split()) for line in sv_lines(plain)]
    refused = run("bsvm-predict", data, theirs_file, tmp_path / "none")
    assert refused.returncode == 1 and not (tmp_path / "none").exists()
    assert refused.stderr.strip() == (f"{theirs_file}:10: feature index 0 is out of range "
                                      "(indices start at 1); a LIBSVM model of 0-based data "
                                      "is read with --zero-based (zero_based=True in Python)")
    # the estimators read it the same way (column j of X is index j)
    from budgetsvm.estimators import load as load_estimator
    expected, _, _ = svmutil.svm_predict(y0, x0, svmutil.svm_load_model(str(theirs_file)), "-q")
    np.testing.assert_array_equal(load_estimator(str(theirs_file), zero_based=True).predict(X),
                                  expected)


# ---------------------------------------------------------------------------------------------
# malformed files
# ---------------------------------------------------------------------------------------------

GOOD_NATIVE = dumps_model(KernelModel([1, -1], KernelSpec("rbf", 0.5),
                                      sp.csr_matrix([[0.0, 2.0], [1.5, 0.0]]), [[0.75], [-0.75]],
                                      None, "binary", "bsgd", {"budget": 2}))
GOOD_LIBLINEAR = ("solver_type L2R_L1LOSS_SVC_DUAL\nnr_class 2\nlabel 1 -1\nnr_feature 2\n"
                  "bias -1\nw\n0.5 \n-0.25 \n")
GOOD_LIBSVM = ("svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 2\nrho 0.1\n"
               "label 1 -1\nnr_sv 1 1\nSV\n1 1:0.5 3:1 \n-1 2:0.25 \n")

MALFORMED = [
    # (name, content, line or None, message fragment)
    ("truncated", GOOD_NATIVE[: GOOD_NATIVE.index("SV\n") + 12], 17, "truncated"),
    ("no_end", GOOD_NATIVE.replace("end\n", ""), None, "truncated"),
    ("newer", GOOD_NATIVE.replace("budgetsvm_model 1", "budgetsvm_model 7"), 1,
     f"model format version 7 is newer than this program supports ({FORMAT_VERSION})"),
    ("bad_version", GOOD_NATIVE.replace("budgetsvm_model 1", "budgetsvm_model x"), 1, "version"),
    ("unknown_key", GOOD_NATIVE.replace("total_sv 2\n", "total_sv 2\ncolour red\n"), 14,
     "unknown key 'colour'"),
    ("duplicate_key", GOOD_NATIVE.replace("total_sv 2\n", "total_sv 2\ntotal_sv 2\n"), 14,
     "duplicate"),
    ("too_many_sv", GOOD_NATIVE.replace("total_sv 2", "total_sv 3"), 19, "3 SV lines"),
    ("too_few_sv", GOOD_NATIVE.replace("total_sv 2", "total_sv 1"), 18, "expected 'end'"),
    ("wrong_rho_count", GOOD_NATIVE.replace("rho 0.0", "rho 0.0 1.0"), 14, "'rho' needs 1 value"),
    ("nan_coef", GOOD_NATIVE.replace("0.75 2:2.0", "nan 2:2.0"), 17, "not a finite number"),
    ("inf_feature", GOOD_NATIVE.replace("2:2.0", "2:inf"), 17, "not a finite number"),
    ("text_coef", GOOD_NATIVE.replace("-0.75 1:1.5", "abc 1:1.5"), 18, "'abc' is not a number"),
    ("bad_pair", GOOD_NATIVE.replace("2:2.0", "2-2.0"), 17, "not index:value"),
    ("index_order", GOOD_NATIVE.replace("0.75 2:2.0", "0.75 2:2.0 1:1.0"), 17, "must increase"),
    # 'index:' ending an SV line: an error of that line, not the next line's coefficient
    ("value_at_line_end", GOOD_NATIVE.replace("0.75 2:2.0", "0.75 2:"), 17,
     "feature '2:' is not index:value"),
    ("value_at_line_end_blank", GOOD_NATIVE.replace("0.75 2:2.0", "0.75 2: \r"), 17,
     "feature '2:' is not index:value"),
    ("index_zero", GOOD_NATIVE.replace("1:1.5", "0:1.5"), 18, "out of range"),
    ("index_beyond", GOOD_NATIVE.replace("1:1.5", "3:1.5"), 18, "exceeds nr_feature"),
    ("bad_param", GOOD_NATIVE.replace("param budget int 2", "param budget int two"), 15,
     "not an integer"),
    ("data_file", "+1 1:0.5 3:0.25\n-1 2:1\n", 1, "does not look like a model file"),
    ("other_file", "SVM-light Version V6.02\n0 # kernel type\n", 1,
     "does not look like a model file"),
    ("empty", "", None, "does not look like a model file"),
    ("ll_regression", GOOD_LIBLINEAR.replace("L2R_L1LOSS_SVC_DUAL", "L2R_L2LOSS_SVR"), 1,
     "regression"),
    ("ll_oneclass", GOOD_LIBLINEAR.replace("L2R_L1LOSS_SVC_DUAL", "ONECLASS_SVM"), 1, "one-class"),
    ("ll_unknown_solver", GOOD_LIBLINEAR.replace("L2R_L1LOSS_SVC_DUAL", "FANCY"), 1, "unknown"),
    ("ll_too_few_w", GOOD_LIBLINEAR.replace("nr_feature 2", "nr_feature 3"), None, "truncated"),
    ("ll_too_many_w", GOOD_LIBLINEAR.replace("nr_feature 2", "nr_feature 1"), 8, "unexpected"),
    ("ll_wrong_label_count", GOOD_LIBLINEAR.replace("label 1 -1", "label 1"), 3,
     "'label' needs 2 values"),
    ("ll_unknown_key", GOOD_LIBLINEAR.replace("bias -1\n", "bias -1\nfoo 1\n"), 6,
     "unknown key 'foo'"),
    ("ll_two_columns", GOOD_LIBLINEAR.replace("0.5 \n", "0.5 0.5\n"), 7, "expected 1 value"),
    ("svm_one_class", GOOD_LIBSVM.replace("c_svc", "one_class"), 1, "one_class"),
    ("svm_epsilon_svr", GOOD_LIBSVM.replace("c_svc", "epsilon_svr"), 1, "epsilon_svr"),
    ("svm_precomputed", GOOD_LIBSVM.replace("kernel_type rbf", "kernel_type precomputed"), 2,
     "precomputed"),
    ("svm_no_gamma", GOOD_LIBSVM.replace("gamma 0.5\n", ""), 8, "'gamma'"),
    ("svm_nr_sv_sum", GOOD_LIBSVM.replace("nr_sv 1 1", "nr_sv 1 2"), 8, "adds up to 3"),
    ("svm_truncated", GOOD_LIBSVM[:-12], None, "truncated"),
    ("svm_unknown_key", GOOD_LIBSVM.replace("SV\n", "weird 1\nSV\n"), 9, "unknown key 'weird'"),
    ("svm_value_at_line_end", GOOD_LIBSVM.replace("3:1 \n", "3: \n"), 10,
     "feature '3:' is not index:value"),
]


@pytest.mark.parametrize("name,content,line,fragment", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_model_files_give_one_line_errors(tmp_path, name, content, line, fragment):
    path = tmp_path / f"{name}.model"
    path.write_text(content)
    with pytest.raises(ModelFormatError) as info:
        load_model(str(path))
    message = str(info.value)
    assert "\n" not in message
    prefix = f"{path}:{line}: " if line else f"{path}: "
    assert message.startswith(prefix), message
    assert fragment in message, message


def test_good_fixtures_load(tmp_path):
    assert load_model_text(tmp_path, GOOD_NATIVE).n_sv == 2
    assert load_model_text(tmp_path, GOOD_LIBLINEAR).n_features == 2
    m = load_model_text(tmp_path, GOOD_LIBSVM)
    assert m.n_features == 3 and m.multiclass == "binary"
    ww = load_model_text(tmp_path, GOOD_LIBLINEAR.replace("L2R_L1LOSS_SVC_DUAL", "MCSVM_WW")
                         .replace("nr_class 2\nlabel 1 -1", "nr_class 3\nlabel 1 -1 2")
                         .replace("0.5 \n-0.25 \n", "0.5 1 0\n-0.25 2 0\n"))
    assert ww.multiclass == "ww" and ww.coef.shape == (3, 2)
    nu = load_model_text(tmp_path, GOOD_LIBSVM.replace("c_svc", "nu_svc"))
    assert nu.params["svm_type"] == "nu_svc"


def test_missing_file_is_a_model_format_error(tmp_path):
    with pytest.raises(ModelFormatError, match="no such file"):
        load_model(str(tmp_path / "absent.model"))


# ---------------------------------------------------------------------------------------------
# prediction rules on hand-made models
# ---------------------------------------------------------------------------------------------

def test_linear_binary_tie_and_extra_features():
    m = LinearModel([4, 9], [[1.0, -1.0]], -1, None, "binary", "dcd")
    X = sp.csr_matrix(np.array([[1.0, 1.0, 5.0], [2.0, 1.0, 0.0], [0.0, 1.0, -9.0],
                                [0.0, 0.0, 100.0]]))
    # Feature 3 is beyond n_features and ignored: f = 0, 1, -1, 0.
    np.testing.assert_array_equal(m.decision_function(X)[:, 0], [0.0, 1.0, -1.0, 0.0])
    np.testing.assert_array_equal(m.predict(X), [9, 4, 9, 9])     # f = 0 -> labels[1]
    narrow = sp.csr_matrix(np.array([[3.0], [-1.0]]))
    np.testing.assert_array_equal(m.predict(narrow), [4, 9])


def test_linear_bias_and_argmax_ties():
    coef = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    m = LinearModel([7, 8, 9], coef, 2.0, [0.5, 0.5, -0.5], "ovr", "dcd")
    X = sp.csr_matrix(np.array([[1.0, 1.0], [0.0, 0.0], [2.0, 0.0], [0.0, 3.0]]))
    F = m.decision_function(X)
    np.testing.assert_array_equal(F, [[2, 2, 1], [1, 1, -1], [3, 1, 1], [1, 4, 2]])
    np.testing.assert_array_equal(m.predict(X), [7, 7, 7, 8])     # ties -> lowest index
    ww = LinearModel([7, 8], np.zeros((2, 2)), -1, None, "ww", "ww")
    np.testing.assert_array_equal(ww.predict(X), [7, 7, 7, 7])


def test_kernel_rbf_counts_features_beyond_the_svs():
    sv = sp.csr_matrix(np.array([[1.0, 0.0]]))
    m = KernelModel([1, -1], KernelSpec("rbf", 0.5), sv, [[2.0]], [0.0], "binary", "bsgd")
    X = sp.csr_matrix(np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 2.0], [0.0, 1.0, 0.0]]))
    expected = 2.0 * np.exp(-0.5 * np.array([0.0, 4.0, 2.0]))
    np.testing.assert_allclose(m.decision_function(X)[:, 0], expected, rtol=1e-15)
    # A narrower test matrix counts the SVs' extra features.
    np.testing.assert_allclose(m.decision_function(sp.csr_matrix((1, 1)))[:, 0],
                               [2.0 * np.exp(-0.5)], rtol=1e-15)
    spec = KernelSpec("rbf", 0.5)
    np.testing.assert_allclose(spec.kernel_matrix(X, sv)[:, 0], expected / 2, rtol=1e-15)


def test_kernel_binary_tie_argmax_tie_and_ovo_votes():
    sv = sp.csr_matrix(np.array([[1.0], [2.0]]))
    lin = KernelSpec("linear")
    b = KernelModel([1, -1], lin, sv, [[1.0], [-0.5]], [0.0], "binary", "bsgd")
    X = sp.csr_matrix(np.array([[0.0], [1.0], [-1.0]]))
    np.testing.assert_array_equal(b.decision_function(X)[:, 0], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(b.predict(X), [-1, -1, -1])    # f = 0 -> labels[1]
    a = KernelModel([3, 5, 6], lin, sv, [[1.0, 1.0, 0.0], [0.0, 0.0, 0.25]], None, "argmax", "bsgd")
    np.testing.assert_array_equal(a.predict(X), [3, 3, 6])       # ties -> lowest index
    # One-vs-one, k = 3: each SV is its own class; SV of class 2 absent (nr_sv 1, 1, 0).
    o = KernelModel([10, 20, 30], lin, sv, [[1.0, 1.0], [-1.0, 0.0]], [0.0, 0.5, 0.0], "ovo",
                    "libsvm", nr_sv=[1, 1, 0])
    F = o.decision_function(sp.csr_matrix(np.array([[1.0], [0.0], [-1.0]])))
    # pairs (0,1): x - 2x = -x; (0,2): x - 0.5; (1,2): 0 (class 1's coef column 1 is 0).
    np.testing.assert_allclose(F, [[-1.0, 0.5, 0.0], [0.0, -0.5, 0.0], [1.0, -1.5, 0.0]])
    # x = 1: votes go to 1, 0, 2 (one each: tie -> class 0); x = 0: to 1, 2, 2; x = -1: 0, 2, 2.
    np.testing.assert_array_equal(o.predict(sp.csr_matrix(np.array([[1.0], [0.0], [-1.0]]))),
                                  [10, 30, 30])


def test_kernel_prediction_in_chunks_matches_one_block(monkeypatch):
    rng = np.random.default_rng(8)
    for m in kernel_models(rng)[:6]:
        m.coef = rng.standard_normal(m.coef.shape)
        T = random_csr(rng, 500, 7)
        full = m.decision_function(T)
        monkeypatch.setattr(model_mod, "KERNEL_BLOCK_ENTRIES", 50)
        monkeypatch.setattr(model_mod, "MIN_CHUNK_ROWS", 7)
        fresh = load_model_text_str(dumps_model(m))
        np.testing.assert_allclose(fresh.decision_function(T), full, rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(fresh.predict(T), m.predict(T))
        monkeypatch.undo()
        if m.multiclass == "ovo":
            continue
        # An explicit kernel matrix agrees with the model's decision values.
        K = m.kernel.kernel_matrix(T, m.sv)
        np.testing.assert_allclose(K @ m.coef - m.rho, full[:, : m.coef.shape[1]], rtol=1e-12,
                                   atol=1e-12)


def test_kernel_blocks_bound_the_dense_copy_of_their_rows():
    # rows dense enough for the BLAS product are copied densely: a block then has
    # KERNEL_BLOCK_ENTRIES / max(B, d) rows (the copy is bounded too); sparse rows keep / B
    from budgetsvm.model import KERNEL_BLOCK_ENTRIES, block_ranges, sv_columns
    rng = np.random.default_rng(5)
    d, n_sv, n = 2000, 100, 20_000
    svT, _ = sv_columns(sp.csr_matrix(rng.random((n_sv, d))))
    dense_rows = sp.random(n, d, density=0.5, format="csr", random_state=1)
    sparse_rows = sp.random(n, d, density=0.01, format="csr", random_state=1)
    for X, height in ((dense_rows, KERNEL_BLOCK_ENTRIES // d),
                      (sparse_rows, KERNEL_BLOCK_ENTRIES // n_sv)):
        ranges = block_ranges(X, svT)
        assert [stop - start for start, stop in ranges[:-1]] == [height] * (len(ranges) - 1)
        assert ranges[0][0] == 0 and ranges[-1][1] == n


def load_model_text_str(text):
    from budgetsvm.model_io import loads_model
    return loads_model(text.encode(), "<test>")


@pytest.mark.parametrize("content", [bytes(range(256)), b"\x00\x01svm_type c_svc\n",
                                     b"\x89PNG\r\n\x1a\n\x00\x00", b"1 1:\xff\xfe\n"])
def test_binary_data_is_not_taken_for_a_data_file(tmp_path, content):
    (tmp_path / "m").write_bytes(content)
    with pytest.raises(ModelFormatError, match="binary data, not text") as caught:
        load_model(tmp_path / "m")
    assert caught.value.line == 1


def _official_model_files(tmp_path):
    """A LIBSVM and a LIBLINEAR (-B 1) model file of heart, written by the official tools."""
    svmutil = pytest.importorskip("libsvm.svmutil")
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    heart = tmp_path / "heart"
    heart.write_bytes(lzma.open(pathlib.Path(__file__).resolve().parent.parent / "data" /
                                "heart_scale.xz").read())
    y, x = svmutil.svm_read_problem(str(heart))
    svmutil.svm_save_model(str(tmp_path / "libsvm.model"), svmutil.svm_train(y, x, "-q"))
    liblinearutil.save_model(str(tmp_path / "liblinear.model"),
                             liblinearutil.train(y, x, "-s 3 -B 1 -q"))
    return heart, tmp_path / "libsvm.model", tmp_path / "liblinear.model"


@pytest.mark.parametrize("cut", [2, 12, 70])
def test_a_model_cut_inside_its_last_line_is_refused(tmp_path, cut):
    # LIBSVM and LIBLINEAR end every line: a copy cut inside the last line read on as a shorter
    # number (0.6493203 for 0.64932031321290551) and predicted other labels, exit 0
    heart, *models = _official_model_files(tmp_path)
    for model in models:
        text = model.read_bytes()
        assert text.endswith(b"\n") and not text.endswith(b"\n\n")
        end = len(text) - cut
        while not text[end - 1:end].isdigit():      # a cut inside a number
            end -= 1
        (tmp_path / "cut.model").write_bytes(text[:end])
        lines = text[:end].count(b"\n") + 1
        r = subprocess.run([str(BIN / "bsvm-predict"), heart, tmp_path / "cut.model",
                            tmp_path / "out"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and not (tmp_path / "out").exists(), r.stderr
        assert r.stderr == (f"{tmp_path / 'cut.model'}:{lines}: the file ends in the middle of "
                            "this line (truncated?): model files end every line with a line "
                            "end\n")


def test_an_endless_first_line_is_no_model(tmp_path):
    # /dev/zero has no line end: the header line was read without limit, to the memory's end
    r = subprocess.run([str(BIN / "bsvm-predict"), "-", "/dev/zero", tmp_path / "out"],
                       input="1 1:1\n", capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("/dev/zero:1: ") and len(r.stderr.splitlines()) == 1, r.stderr


def test_accuracy_lines_are_those_of_the_tool_that_wrote_the_model(tmp_path):
    # svm-predict: "Accuracy = x% (a/b) (classification)"; LIBLINEAR's predict: no suffix.
    # The counts are checked against the official tools' own predictions.
    svmutil = pytest.importorskip("libsvm.svmutil")
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    heart, libsvm_model, liblinear_model = _official_model_files(tmp_path)
    y, x = svmutil.svm_read_problem(str(heart))
    for model, suffix, labels in (
            (libsvm_model, " (classification)",
             svmutil.svm_predict(y, x, svmutil.svm_load_model(str(libsvm_model)), "-q")[0]),
            (liblinear_model, "",
             liblinearutil.predict(y, x, liblinearutil.load_model(str(liblinear_model)),
                                   "-q")[0])):
        r = subprocess.run([str(BIN / "bsvm-predict"), heart, model, tmp_path / "out"],
                           capture_output=True, text=True, timeout=60)
        correct = int(np.sum(np.array(labels) == np.array(y)))
        assert r.stdout == "Accuracy = %g%% (%d/%d)%s\n" % (100.0 * correct / len(y), correct,
                                                            len(y), suffix)


def test_a_whole_last_line_without_its_line_end_is_read(tmp_path):
    # the official writers put a space after every value; a file whose final newline alone is
    # missing (LIBSVM and LIBLINEAR read it) predicts as the whole file
    heart, *models = _official_model_files(tmp_path)
    for model in models:
        (tmp_path / "nonl.model").write_bytes(model.read_bytes()[:-1])
        for name, path in (("full", model), ("nonl", tmp_path / "nonl.model")):
            r = subprocess.run([str(BIN / "bsvm-predict"), heart, path, tmp_path / name],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
        assert (tmp_path / "full").read_bytes() == (tmp_path / "nonl").read_bytes()
