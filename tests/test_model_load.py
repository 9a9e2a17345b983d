"""Reading model files as a stream (issue 18, item 4): the data sections go block by block
through the compiled loops into the model's arrays. A large linear model then needs about its
own size in memory; lines split across blocks read exactly; a malformed line anywhere gives the
one-line error naming it, whatever the block size."""
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm import model_io
from budgetsvm.errors import BsvmError, ModelFormatError
from budgetsvm.memory import available, run_measuring_peak
from budgetsvm.model import KernelModel, KernelSpec, LinearModel
from budgetsvm.model_io import dumps_model, load_model, loads_model, save_model
from test_model_io import assert_same_model, kernel_models, linear_models

BIN = Path(sys.executable).parent
BLOCK_SIZES = [1, 2, 7, 64, 4096]


# ---------------------------------------------------------------------------------------------
# memory
# ---------------------------------------------------------------------------------------------

@pytest.mark.skipif(not available(), reason="needs Linux /proc/PID/status")
@pytest.mark.parametrize("format", ["native", "liblinear"])
def test_a_large_linear_model_is_read_in_about_its_own_memory(tmp_path, format):
    # 40,000 features x 50 classes: 16 MB of weights, 40 MB of text. bsvm-predict's peak
    # resident memory with it, less its peak with a 10-feature model of the same classes, must
    # stay below twice the weights: the weights once and a little text, not the whole text
    # split into tokens (which took over 15 times the weights).
    rng = np.random.default_rng(3)
    k, n = 50, 40_000
    peaks = {}
    for name, width in (("tiny", 10), ("large", n)):
        W = rng.standard_normal((k, width))
        save_model(LinearModel(np.arange(1, k + 1), W, -1, None, "ovr", "dcd"),
                   str(tmp_path / name), format=format)
        if name == "large":
            # the weights read back exactly (repr / %.17g round trip)
            assert np.array_equal(load_model(str(tmp_path / name)).coef, W)
    (tmp_path / "test").write_text("".join(f"{i % k + 1} 1:0.5 7:1 {i + 10}:2\n"
                                           for i in range(200)))
    for name in ("tiny", "large"):
        status, peaks[name], err = run_measuring_peak(
            [str(BIN / "bsvm-predict"), "-q", "test", name, "out"], cwd=tmp_path)
        assert status == 0, err
    weights_mb = k * n * 8 / 2**20
    assert peaks["large"] - peaks["tiny"] < 2 * weights_mb, (peaks, weights_mb)


def test_loaded_weights_are_not_copied_for_prediction():
    # The weights stay in the file's feature-major layout: coef.T is C-contiguous, which a
    # sparse-times-dense product uses without a copy of the whole matrix.
    text = dumps_model(LinearModel([1, 2, 3], np.arange(12.0).reshape(3, 4), 1.0,
                                   [7.0, 8.0, 9.0], "ovr", "dcd"))
    model = loads_model(text.encode())
    assert model.coef.T.flags.c_contiguous and np.array_equal(model.coef,
                                                              np.arange(12.0).reshape(3, 4))
    X = sp.csr_matrix([[1.0, 0, 0, 2.0], [0, 0, 0, 0]])
    expected = X.toarray() @ np.arange(12.0).reshape(3, 4).T + np.array([7.0, 8.0, 9.0])
    assert np.array_equal(model.decision_function(X), expected)


# ---------------------------------------------------------------------------------------------
# lines split across blocks
# ---------------------------------------------------------------------------------------------

VARIANTS = {"lf": lambda t: t, "crlf": lambda t: t.replace("\n", "\r\n"),
            "no final newline": lambda t: t[:-1]}


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("block", BLOCK_SIZES)
def test_native_models_read_exactly_whatever_the_block_size(monkeypatch, block, variant):
    monkeypatch.setattr(model_io, "BODY_BLOCK_BYTES", block)
    rng = np.random.default_rng(0)
    for model in linear_models(rng) + kernel_models(rng):
        assert_same_model(model, loads_model(VARIANTS[variant](dumps_model(model)).encode()))


def _writable(models, fmt):
    texts = []
    for model in models:
        try:
            texts.append(dumps_model(model, fmt))
        except BsvmError:
            pass        # non-integer labels, arg-max kernel models: not in that format
    return texts


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("block", BLOCK_SIZES)
def test_liblinear_and_libsvm_files_read_the_same_whatever_the_block_size(monkeypatch, block,
                                                                           variant):
    rng = np.random.default_rng(1)
    texts = _writable(linear_models(rng), "liblinear") + _writable(kernel_models(rng), "libsvm")
    assert len(texts) >= 10
    for text in texts:
        data = VARIANTS[variant](text).encode()
        whole = loads_model(data)          # the data section in one block
        monkeypatch.setattr(model_io, "BODY_BLOCK_BYTES", block)
        assert_same_model(whole, loads_model(data))
        monkeypatch.undo()


def test_numbers_read_as_pythons_float_reads_them():
    # Every spelling a model file may use, against float() as the oracle.
    tokens = ["1", "-0.0", "+.5", "5.", "1e-400", "4.9e-324", "1.7976931348623157e308", "1E5",
              "0.1", "-123456789012345678901234567890", "00012.5000", "2.2250738585072014e-308"]
    text = ("solver_type L2R_L1LOSS_SVC_DUAL\nnr_class 2\nlabel 1 -1\n"
            f"nr_feature {len(tokens)}\nbias -1\nw\n" + "".join(f"{t} \n" for t in tokens))
    model = loads_model(text.encode())
    expected = np.array([float(t) for t in tokens])
    assert model.coef[0].tobytes() == expected.tobytes()
    sv_text = ("svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 1\nrho 0\n"
               "label 1 -1\nnr_sv 1 0\nSV\n" + tokens[1] + " " +
               " ".join(f"+{i + 1}:{t}" if i % 2 else f"{i + 1}:{t}"
                        for i, t in enumerate(tokens)) + "\n")
    kernel = loads_model(sv_text.encode())
    assert kernel.sv.data.tobytes() == expected.tobytes()
    assert np.array_equal(kernel.sv.indices, np.arange(len(tokens)))


# ---------------------------------------------------------------------------------------------
# malformed data lines: the line and the problem, at any position and block size
# ---------------------------------------------------------------------------------------------

ROWS = 12


def _linear_text(fmt):
    W = np.round(np.random.default_rng(2).standard_normal((3, ROWS)), 3)
    return dumps_model(LinearModel([1, 2, 3], W, -1, None, "ovr", "dcd"), fmt)


def _kernel_text(fmt):
    rng = np.random.default_rng(4)
    sv = np.round(rng.standard_normal((ROWS, 5)), 2) * (rng.random((ROWS, 5)) < .6)
    sv[:, 0] = 1.0     # every SV has feature 1, so that each line has an index:value pair
    sv = sp.csr_matrix(sv)
    coef = np.round(rng.standard_normal((ROWS, 1)), 3)
    return dumps_model(KernelModel([1, -1], KernelSpec("rbf", 0.5), sv, coef, [0.25], "binary",
                                   "bsgd"), fmt)


def _data_lines(text, key):
    lines = text.split("\n")
    first = lines.index(key) + 1
    return lines, first


# (corruption of one weight line "a b c", expected message after "FILE:LINE: ")
WEIGHT_DAMAGE = [
    (lambda v: ["abc"] + v[1:], "weight: 'abc' is not a number"),
    (lambda v: v[:1] + ["nan"] + v[2:], "weight: 'nan' is not a finite number"),
    (lambda v: v[:2] + ["-inf"], "weight: '-inf' is not a finite number"),
    (lambda v: ["0x1p3"] + v[1:], "weight: '0x1p3' is not a number"),
    (lambda v: ["1_0"] + v[1:], "weight: '1_0' is not a number"),
    (lambda v: v[:2], "expected 3 values in a weight line, found 2"),
    (lambda v: v + ["1"], "expected 3 values in a weight line, found 4"),
    (lambda v: [], "expected 3 values in a weight line, found 0"),
    (lambda v: ["1:2"] + v[1:], "weight: '1:2' is not a number"),
]


@pytest.mark.parametrize("block", [7, 4096])
@pytest.mark.parametrize("fmt", ["native", "liblinear"])
@pytest.mark.parametrize("damage", range(len(WEIGHT_DAMAGE)))
def test_a_bad_weight_line_is_named_wherever_it_is(monkeypatch, fmt, block, damage):
    monkeypatch.setattr(model_io, "BODY_BLOCK_BYTES", block)
    change, message = WEIGHT_DAMAGE[damage]
    lines, first = _data_lines(_linear_text(fmt), "w")
    for row in (0, 5, ROWS - 1):
        bad = list(lines)
        bad[first + row] = " ".join(change(bad[first + row].split()))
        with pytest.raises(ModelFormatError) as info:
            loads_model("\n".join(bad).encode(), "m")
        assert str(info.value) == f"m:{first + row + 1}: {message}"


SV_DAMAGE = [
    (lambda t: ["abc"] + t[1:], "SV coefficient: 'abc' is not a number"),
    (lambda t: ["inf"] + t[1:], "SV coefficient: 'inf' is not a finite number"),
    (lambda t: t[:1] + ["1-2.0"] + t[2:], "feature '1-2.0' is not index:value"),
    (lambda t: t[:1] + ["1:"] + t[2:], "feature '1:' is not index:value"),
    (lambda t: t[:1] + ["1:2:3"] + t[2:], "feature '1:2:3' is not index:value"),
    (lambda t: t[:1] + ["x:1"] + t[2:], "feature index 'x' is not an integer"),
    (lambda t: t[:1] + ["1_0:1"] + t[2:], "feature index '1_0' is not an integer"),
    (lambda t: t[:1] + ["0:1"] + t[2:], "feature index 0 is out of range (indices start at 1)"),
    (lambda t: t[:1] + ["-3:1"] + t[2:],
     "feature index -3 is out of range (indices start at 1)"),
    (lambda t: t[:1] + ["99999999999999999999:1"],
     "feature index 99999999999999999999 is out of range (indices start at 1)"),
    (lambda t: t[:1] + ["1:nan"] + t[2:], "feature value: 'nan' is not a finite number"),
    (lambda t: t[:1] + ["1:0x10"] + t[2:], "feature value: '0x10' is not a number"),
    (lambda t: t + ["1:1"], "feature indices must increase: 1 after"),
    (lambda t: [], "expected 1 coefficient in an SV line, found 0 values"),
    (lambda t: ["2:1"], "expected a coefficient, found '2:1'"),
]


@pytest.mark.parametrize("block", [7, 4096])
@pytest.mark.parametrize("fmt", ["native", "libsvm"])
@pytest.mark.parametrize("damage", range(len(SV_DAMAGE)))
def test_a_bad_sv_line_is_named_wherever_it_is(monkeypatch, fmt, block, damage):
    monkeypatch.setattr(model_io, "BODY_BLOCK_BYTES", block)
    change, message = SV_DAMAGE[damage]
    lines, first = _data_lines(_kernel_text(fmt), "SV")
    for row in (0, 5, ROWS - 1):
        bad = list(lines)
        bad[first + row] = " ".join(change(bad[first + row].split()))
        with pytest.raises(ModelFormatError) as info:
            loads_model("\n".join(bad).encode(), "m")
        assert str(info.value).startswith(f"m:{first + row + 1}: {message}"), str(info.value)


@pytest.mark.parametrize("block", [7, 4096])
@pytest.mark.parametrize("fmt", ["native", "liblinear", "libsvm"])
def test_truncated_files(monkeypatch, fmt, block):
    monkeypatch.setattr(model_io, "BODY_BLOCK_BYTES", block)
    text = _kernel_text(fmt) if fmt == "libsvm" else _linear_text(fmt)
    lines, first = _data_lines(text, "SV" if fmt == "libsvm" else "w")
    what = "SV" if fmt == "libsvm" else "weight"
    # cut after whole lines: the message says how many data lines arrived
    for kept in (0, 1, ROWS - 1):
        cut = "\n".join(lines[:first + kept]) + "\n"
        with pytest.raises(ModelFormatError) as info:
            loads_model(cut.encode(), "m")
        assert str(info.value) == f"m: the file ends after {kept} of {ROWS} {what} lines " \
                                  f"(truncated?)"
    # cut anywhere: the same one-line error (or, without an 'end' line, the same shorter model)
    # as when the data section is one block
    data = text.encode()
    start = len("\n".join(lines[:first]))
    for cut in range(start, len(data) - 1):
        small = _outcome(data[:cut])
        monkeypatch.setattr(model_io, "BODY_BLOCK_BYTES", 1 << 20)
        whole = _outcome(data[:cut])
        monkeypatch.setattr(model_io, "BODY_BLOCK_BYTES", block)
        if isinstance(whole, str):
            assert small == whole and "\n" not in small
        else:
            assert fmt != "native"
            assert_same_model(whole, small)


def _outcome(data):
    try:
        return loads_model(data, "m")
    except ModelFormatError as exc:
        return str(exc)


def test_a_header_count_beyond_memory_is_a_truncated_file():
    text = ("solver_type L2R_L1LOSS_SVC_DUAL\nnr_class 3\nlabel 1 2 3\nnr_feature 2147483647\n"
            "bias -1\nw\n1 2 3\n4 5 6\n")
    with pytest.raises(ModelFormatError, match=r"^m: the file ends after 2 of 2147483647 "
                                               r"weight lines \(truncated\?\)$"):
        loads_model(text.encode(), "m")
    sv = ("svm_type c_svc\nkernel_type linear\nnr_class 3\ntotal_sv 2147483647\nrho 0 0 0\n"
          "label 1 2 3\nnr_sv 2147483645 1 1\nSV\n1 1 1:1\n")
    with pytest.raises(ModelFormatError, match=r"^m: the file ends after 1 of 2147483647 SV"):
        loads_model(sv.encode(), "m")


def test_a_huge_feature_index_is_a_one_line_error_in_bsvm_predict(tmp_path):
    import subprocess
    model = tmp_path / "m"
    model.write_text("svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 1\n"
                     "rho 0\nlabel 1 -1\nnr_sv 1 0\nSV\n1 99999999999999999999:1\n")
    test = tmp_path / "t"
    test.write_text("1 1:1\n")
    result = subprocess.run([str(BIN / "bsvm-predict"), test, model, tmp_path / "out"],
                            capture_output=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.decode() == (f"{model}:10: feature index 99999999999999999999 is out of "
                                      "range (indices start at 1)\n")
