"""Reading and writing model files (docs/MODEL_FORMAT.md).

Three formats:

* ``native``: ``budgetsvm_model 1`` then ``key value...`` header lines, a data section (``w`` or
  ``SV``) and a final ``end`` line. Holds every model type; numbers are written with ``repr``
  (shortest exact form), so a round trip is exact and the same model always gives the same bytes.
* ``liblinear``: the file LIBLINEAR's ``save_model`` writes, for linear models.
* ``libsvm``: the file LIBSVM's ``svm_save_model`` writes, for binary and
  one-vs-one kernel models; SV feature values at full precision.

``load_model`` recognises the format from the first line and is strict: unknown keys, wrong
counts, truncation, non-numeric or non-finite numbers, a newer format version or a data file
given as a model raise ModelFormatError ``FILE:LINE: message``.

Reading streams the file: the header line by line, then the data section (weight or SV lines)
block by block through the compiled loops of budgetsvm/_parse.pyx straight into the model's
arrays, as the data reader does. Memory is the model plus one block of text. A malformed data
section stops the compiled loop at its first bad line; the Python checks of this module then run
over the lines from there on and give the message (the lines before it are known to be good).
"""
import contextlib
import io
import itertools
import json
import math
import re
import threading

import numpy as np
import scipy.sparse as sp

from budgetsvm import _parse
from budgetsvm._format import format_rows_ascii, format_sv_rows_ascii
from budgetsvm.errors import BsvmError, ModelFormatError, TrainingDiverged
from budgetsvm.fileio import DECOMPRESSION_ERRORS, atomic_output, open_input
from budgetsvm.labels import check_integer_labels, format_label
from budgetsvm.model import KernelModel, KernelSpec, LinearModel

FORMAT_NAME = "budgetsvm_model"
FORMAT_VERSION = 1
FORMATS = ("native", "liblinear", "libsvm")

# LIBLINEAR solver names; the position is the -s number (linear.cpp solver_type_table).
LIBLINEAR_CLASSIFIERS = ("L2R_LR", "L2R_L2LOSS_SVC_DUAL", "L2R_L2LOSS_SVC", "L2R_L1LOSS_SVC_DUAL",
                         "MCSVM_CS", "L1R_L2LOSS_SVC", "L1R_LR", "L2R_LR_DUAL")
LIBLINEAR_OTHERS = {"L2R_L2LOSS_SVR": "regression", "L2R_L2LOSS_SVR_DUAL": "regression",
                    "L2R_L1LOSS_SVR_DUAL": "regression", "ONECLASS_SVM": "one-class"}
# Weston-Watkins written under its own name (readable by us, not by LIBLINEAR).
LIBLINEAR_ARGMAX = ("MCSVM_CS", "MCSVM_WW")

LIBSVM_KERNELS = {"linear": "linear", "polynomial": "poly", "rbf": "rbf", "sigmoid": "sigmoid"}
LIBSVM_KERNEL_NAMES = {v: k for k, v in LIBSVM_KERNELS.items()}
LIBSVM_TYPES = ("c_svc", "nu_svc")
LIBSVM_OTHERS = {"one_class": "one-class", "epsilon_svr": "regression", "nu_svr": "regression"}

MAX_INDEX = 2**31 - 1
# class labels in LIBSVM/LIBLINEAR files are C ints: [-2^31, 2^31 - 1] (LIBLINEAR trains on
# -2147483648 and writes it)
MIN_LABEL = -2**31
# Data sections are parsed this many bytes of text at a time (plus the rest of a line); 1 MiB
# is as fast as larger blocks (sector.scale's 65 MB model) and keeps the text held small.
BODY_BLOCK_BYTES = 1 << 20
# A header line is read whole; a file whose line before the data is longer than this (LIBSVM's
# rho line of 1,000 classes is about 10 MB) is no model file (/dev/zero, a binary file).
HEADER_LINE_MAX_BYTES = 1 << 26
_INT = re.compile(rb"[+-]?[0-9]+\Z")
_WORD = re.compile(r"[A-Za-z0-9_.:+\-]+\Z")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")

# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------

# Lines of a linear model's weights and of a kernel model's SVs formatted per block: up to
# WEIGHT_BLOCK_ROWS weight lines of at most WEIGHT_BLOCK_VALUES numbers in all (up to 1.6 MB of
# buffer, about 0.7 MB of text). With -n, one block per thread and one more are in flight: a
# wide one-vs-rest model (sector.scale: 105 classes, 1.2 MB per 1,024 lines) keeps them this
# size; smaller blocks (16,384 numbers) made its writing 10 % slower.
WEIGHT_BLOCK_ROWS = 1024
WEIGHT_BLOCK_VALUES = 65536
SV_BLOCK_ROWS = 1024


def _weight_block_rows(rows):
    """Weight lines per formatted block for a (lines × values per line) array."""
    return max(1, min(WEIGHT_BLOCK_ROWS, WEIGHT_BLOCK_VALUES // max(rows.shape[1], 1)))


def save_model(model, path, format="native", zero_based=False):
    """Write ``model`` to ``path`` (``-`` = standard output) atomically in ``format``.

    zero_based: the model was trained on data with 0-based feature indices (--zero-based). A
    LIBSVM file's feature indices are keys of the data it was trained on (svm-predict matches
    them with the test file's), so it then gets 0-based ones too; the native and LIBLINEAR
    formats store the features 1-based (feature j of the model) whatever the data's were.

    Raises BsvmError when the model cannot be written in that format (non-integer labels for
    LIBSVM/LIBLINEAR files, a multi-class budgeted model as LIBSVM, non-finite values).
    The file is written piece by piece as it is formatted: weight rows or support vectors in
    blocks that the worker threads format while the calling thread writes those before.
    """
    with contextlib.closing(_model_pieces(model, format, zero_based)) as pieces:
        first = next(pieces)                  # the checks, before any file is opened
        with atomic_output(path, binary=True) as stream:
            stream.write(first)
            for piece in pieces:
                stream.write(piece)


def dumps_model(model, format="native", zero_based=False):
    """The content of the model file as a string (LF line ends)."""
    return b"".join(_model_pieces(model, format, zero_based)).decode("ascii")


def _model_pieces(model, format, zero_based=False):
    """The model file as consecutive pieces of ASCII bytes (bytes or uint8 arrays); the first
    comes after every check that can refuse the model."""
    if format not in FORMATS:
        raise BsvmError(f"unknown model format {format!r}; choose one of {', '.join(FORMATS)}")
    if not isinstance(model, (LinearModel, KernelModel)):
        raise TypeError(f"not a model: {type(model).__name__}")
    _check_finite(model)
    if format == "native":
        return _native_pieces(model)
    if format == "liblinear":
        if not isinstance(model, LinearModel):
            raise BsvmError("the liblinear model format holds linear models only; "
                            "write kernel models in the native or libsvm format")
        if model.prob_a is not None or model.prob_b is not None:
            # bsvm-train -b 1 --format liblinear is refused before training for this reason
            raise BsvmError("LIBLINEAR model files have no probability parameters: write a "
                            "model with Platt's probabilities in the native format")
        return _liblinear_pieces(model)
    if not isinstance(model, KernelModel):
        raise BsvmError("the libsvm model format holds kernel models only; "
                        "write linear models in the native or liblinear format")
    return _libsvm_pieces(model, 0 if zero_based else 1)


def _pieces(header, body, tail=()):
    """The file's pieces: the header lines (formatted already, so that their checks have run),
    then the body's rows block by block (_formatted_blocks), then the tail's pieces."""
    header = ("\n".join(header) + "\n").encode("ascii")

    def pieces():
        yield header
        yield from _formatted_blocks(*body)
        yield from tail
    return pieces()


def check_format(format, solver, labels=None):
    """Raise ParameterError when a model of ``solver`` (trained on data with these class
    ``labels``, if known) cannot be written in ``format``: the checks dumps_model makes, done
    before training so that a run does not end in an error after all its work."""
    from budgetsvm.errors import ParameterError
    from budgetsvm import solvers
    if format not in FORMATS:
        raise ParameterError(f"--format: unknown model format {format!r}; choose one of "
                             f"{', '.join(FORMATS)}")
    if format == "liblinear" and solvers.is_kernel(solver):
        raise ParameterError(f"--format liblinear holds linear models; -s {solver} trains a "
                             "kernel model: use --format native (or libsvm for one or two "
                             "classes)")
    if format == "libsvm" and solvers.is_linear(solver):
        raise ParameterError(f"--format libsvm holds kernel models; -s {solver} trains a linear "
                             "model: use --format native or liblinear")
    if labels is None or format == "native":
        return
    if format == "libsvm" and len(labels) > 2:
        raise ParameterError(f"--format libsvm: the data have {len(labels)} classes and a "
                             f"multi-class -s {solver} model (arg-max over classes) has no "
                             "LIBSVM one-vs-one form: use --format native")
    bad = [v for v in np.asarray(labels, dtype=np.float64).tolist()
           if not v.is_integer() or not MIN_LABEL <= v <= MAX_INDEX]
    if bad:
        raise ParameterError(f"--format {format}: LIBSVM/LIBLINEAR files store class labels as "
                             f"32-bit integers, got {bad[0]:.17g}: use --format native")


def is_finite(model):
    """True when every number of the model (coefficients, SVs, bias, kernel, Platt) is finite."""
    arrays = [model.labels, model.coef, np.asarray([getattr(model, "bias", 0.0)])]
    if isinstance(model, LinearModel):
        arrays.append(model.bias_coef)
    else:
        arrays += [model.rho, model.sv.data, np.asarray([model.kernel.gamma, model.kernel.coef0])]
    arrays += [a for a in (model.prob_a, model.prob_b) if a is not None]
    return all(np.isfinite(a).all() for a in arrays)


DIVERGED = ("training diverged: the model contains non-finite values (NaN or infinity); "
            "scaled features (bsvm-scale), a smaller -c or a smaller learning rate may help")


def ensure_finite(model):
    """The model itself, or TrainingDiverged when a value is NaN or infinite: such a model is
    never written, used for prediction or scored in cross-validation."""
    if not is_finite(model):
        raise TrainingDiverged(DIVERGED)
    return model


def _check_finite(model):
    if not is_finite(model):
        raise BsvmError("the model contains non-finite values (NaN or infinity), "
                        "probably from a diverged training run; not writing it")


def _word(value, what):
    value = str(value)
    if not _WORD.match(value):
        raise ValueError(f"{what} {value!r} must be a non-empty word of letters, digits and _.:+-")
    return value


def _reals(values):
    return " ".join(map(repr, np.asarray(values, dtype=np.float64).tolist()))


def _param_line(name, value):
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"parameter name {name!r} must be an identifier")
    if value is None:
        return f"param {name} none"
    if isinstance(value, (bool, np.bool_)):
        return f"param {name} bool {'true' if value else 'false'}"
    if isinstance(value, (int, np.integer)):
        return f"param {name} int {int(value)}"
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise BsvmError(f"training parameter {name} = {value} is not finite; not writing it")
        return f"param {name} real {float(value)!r}"
    if isinstance(value, str):
        # A JSON string literal: any text, ASCII-escaped, on one line.
        return f"param {name} str {json.dumps(value)}"
    raise TypeError(f"parameter {name}: cannot store a {type(value).__name__} in a model file")


def _native_pieces(model):
    """The native file's pieces: the header (and a kernel model's SV lines), then a linear
    model's weight rows block by block. The header is formatted when the generator is made,
    so that its checks (names, parameter values) run before the file is opened."""
    linear = isinstance(model, LinearModel)
    out = [f"{FORMAT_NAME} {FORMAT_VERSION}",
           f"model_type {'linear' if linear else 'kernel'}",
           f"solver {_word(model.solver, 'solver name')}",
           f"multiclass {model.multiclass}",
           f"nr_class {model.n_classes}",
           " ".join(["label"] + [format_label(v) for v in model.labels.tolist()])]
    if linear:
        out += [f"nr_feature {model.n_features}",
                f"bias {model.bias!r}",
                f"nr_w {model.nr_w}"]
    else:
        kernel = model.kernel
        out += [f"kernel_type {kernel.kind}",
                f"gamma {kernel.gamma!r}",
                f"degree {kernel.degree}",
                f"coef0 {kernel.coef0!r}",
                f"nr_feature {model.n_features}",
                f"nr_coef {model.coef.shape[1]}",
                f"total_sv {model.n_sv}",
                f"rho {_reals(model.rho)}".rstrip()]
        if model.nr_sv is not None:
            out.append(" ".join(["nr_sv"] + [str(int(v)) for v in model.nr_sv]))
    if model.prob_a is not None:
        out.append(f"probA {_reals(model.prob_a)}")
    if model.prob_b is not None:
        out.append(f"probB {_reals(model.prob_b)}")
    out += [_param_line(name, model.params[name]) for name in sorted(model.params)]
    if linear:
        out.append("w")
        rows = model.coef.T
        body = (rows.shape[0], _weight_block_rows(rows), _row_block_formatter(rows))
        tail = [format_rows_ascii(model.bias_coef[None, :])] if model.bias >= 0 else []
    else:
        out.append("SV")
        body = (model.n_sv, SV_BLOCK_ROWS, _sv_block_formatter(model.coef, model.sv))
        tail = []
    return _pieces(out, body, tail + [b"end\n"])


def _row_block_formatter(rows, printf_g17=False):
    """format_block(start, stop): the weight lines of rows start..stop-1, as repr writes the
    numbers (native) or as "%.17g " each (printf_g17: LIBLINEAR's)."""
    return lambda start, stop: format_rows_ascii(rows[start:stop], printf_g17)


def _sv_block_formatter(coef, sv, printf_g17=False, index_base=1):
    """format_block(start, stop): the SV lines of SVs start..stop-1 with 1-based indices (0-based
    with index_base 0): the native format's "c1 ... ck i:v ..." with everything as repr writes
    it, or (printf_g17) LIBSVM's, every number as "%.17g " (LIBSVM writes features with %.8g;
    here %.17g)."""
    indptr = np.ascontiguousarray(sv.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(sv.indices, dtype=np.int32)
    values = np.ascontiguousarray(sv.data, dtype=np.float64)
    return lambda start, stop: format_sv_rows_ascii(coef[start:stop], indptr[start:stop + 1],
                                                    indices, values, printf_g17,
                                                    index_base)


def _formatted_blocks(n_rows, block_rows, format_block):
    """The ASCII uint8 arrays format_block(start, stop) of consecutive blocks of block_rows
    rows, formatted by budgetsvm._format without the GIL: with an active budgetsvm.threads
    pool, by its threads while the calling (main) thread takes those before (and writes
    them)."""
    from budgetsvm import threads
    starts = range(0, n_rows, block_rows)

    def block(start):
        return format_block(start, min(start + block_rows, n_rows))
    if threads.current_threads() > 1 and \
            threading.current_thread() is threading.main_thread():
        # one block formatted ahead per thread and one more: the writes keep up, and the
        # text in flight stays a few MB at any thread count
        with threads.ordered_map(block, starts, ahead=threads.current_threads() + 1) \
                as formatted:
            yield from formatted
    else:
        yield from map(block, starts)


def _int_labels(model, labels=None):
    labels = model.labels if labels is None else labels
    check_integer_labels(labels.tolist())
    if ((labels < MIN_LABEL) | (labels > MAX_INDEX)).any():
        raise BsvmError("class labels must fit in a 32-bit integer for LIBSVM/LIBLINEAR files")
    return " ".join(["label"] + ["%d" % v for v in labels.tolist()])


def _liblinear_layout(model):
    """(solver_type, labels, coef, bias_coef) written for a linear model, as LIBLINEAR lays
    them out: the weight rows are coef's columns (one per feature), then bias_coef if the
    model has a bias feature.

    Arg-max models (Weston-Watkins, and one-vs-rest with two classes) are written as MCSVM_CS,
    the only LIBLINEAR solver that predicts by arg-max over k columns. For two classes, however,
    LIBLINEAR decides an MCSVM_CS model by the sign of the first column alone
    (linear.cpp predict_values), so two-class arg-max models are written as (d, -d) with
    d = w1 - w0 and the two labels listed in swapped order.
    """
    stored = model.params.get("solver_type")
    stored = stored if isinstance(stored, str) and stored in LIBLINEAR_CLASSIFIERS else None
    k = model.n_classes
    coef, bias_coef = model.coef, model.bias_coef
    if model.multiclass == "ww" or (model.multiclass == "ovr" and k == 2):
        solver = "MCSVM_CS"
    elif model.multiclass == "binary" and stored == "MCSVM_CS":
        solver = "MCSVM_CS"     # read from a two-class MCSVM_CS file: keep its name
    elif stored is not None and stored != "MCSVM_CS":
        solver = stored
    else:
        solver = "L2R_L2LOSS_SVC_DUAL" if model.params.get("loss") == "l2" else \
            "L2R_L1LOSS_SVC_DUAL"
    labels = model.labels
    if solver == "MCSVM_CS" and k == 2:
        if model.multiclass == "binary":
            d, db = coef[0], bias_coef[0]
        else:
            # Arg-max picks label[0] when f0 >= f1 (ties included) while LIBLINEAR picks its
            # first label when d > 0: list the labels swapped with d = f1 - f0, so that even
            # ties (e.g. rows with only unseen features) predict the same.
            d, db = coef[1] - coef[0], bias_coef[1] - bias_coef[0]
            labels = labels[::-1]
        coef, bias_coef = np.vstack([d, -d]), np.array([db, -db])
    return solver, labels, coef, bias_coef


def _liblinear_pieces(model):
    solver, labels, coef, bias_coef = _liblinear_layout(model)
    header = [f"solver_type {solver}",
              f"nr_class {model.n_classes}",
              _int_labels(model, labels),
              f"nr_feature {model.n_features}",
              "bias %.17g" % model.bias,
              "w"]
    rows = coef.T
    body = (rows.shape[0], _weight_block_rows(rows),
            _row_block_formatter(rows, printf_g17=True))
    tail = [format_rows_ascii(bias_coef[None, :], printf_g17=True)] if model.bias >= 0 else []
    return _pieces(header, body, tail)


def _libsvm_pieces(model, index_base=1):
    if model.n_classes == 1 and model.n_sv == 0:
        # a one-class model (train.one_class_model) as LIBSVM writes its own: nr_class 1, no
        # support vector, no pair (empty rho, probA and probB lines); svm-predict returns the
        # label for every row
        out = _libsvm_kernel_lines(model.kernel, model.params.get("svm_type")) + [
            "nr_class 1", "total_sv 0", "rho", _int_labels(model)]
        if model.prob_a is not None and model.prob_b is not None:
            out += ["probA", "probB"]
        return _pieces(out + ["nr_sv 0", "SV"], (0, 1, None))
    if model.multiclass == "argmax":
        raise BsvmError("a multi-class budgeted kernel model (one coefficient per class and "
                        "arg-max prediction) cannot be written in LIBSVM's one-vs-one layout; "
                        "use the native format")
    kernel = model.kernel
    coef, sv = model.coef, model.sv
    if model.multiclass == "binary":
        # LIBSVM groups SVs by class: positive coefficients (label[0]) first (svm_save_model's
        # order).
        positive = coef[:, 0] > 0
        order = np.concatenate([np.flatnonzero(positive), np.flatnonzero(~positive)])
        coef, sv = coef[order], sv[order]
        nr_sv = [int(positive.sum()), int((~positive).sum())]
    else:
        nr_sv = model.nr_sv.tolist()
    svm_type = model.params.get("svm_type")
    out = _libsvm_kernel_lines(kernel, svm_type)
    out += [f"nr_class {model.n_classes}",
            f"total_sv {model.n_sv}",
            "rho" + "".join(" %.17g" % v for v in model.rho.tolist()),
            _int_labels(model)]
    if model.prob_a is not None:
        out.append("probA" + "".join(" %.17g" % v for v in model.prob_a.tolist()))
    if model.prob_b is not None:
        out.append("probB" + "".join(" %.17g" % v for v in model.prob_b.tolist()))
    out.append("nr_sv" + "".join(f" {v}" for v in nr_sv))
    out.append("SV")
    return _pieces(out, (model.n_sv, SV_BLOCK_ROWS,
                         _sv_block_formatter(coef, sv, printf_g17=True,
                                             index_base=index_base)))


def _libsvm_kernel_lines(kernel, svm_type=None):
    """svm_type, kernel_type and the kernel's parameters, as svm_save_model writes them."""
    out = [f"svm_type {svm_type if svm_type in LIBSVM_TYPES else 'c_svc'}",
           f"kernel_type {LIBSVM_KERNEL_NAMES[kernel.kind]}"]
    if kernel.kind == "poly":
        out.append(f"degree {kernel.degree}")
    if kernel.kind != "linear":
        out.append("gamma %.17g" % kernel.gamma)
    if kernel.kind in ("poly", "sigmoid"):
        out.append("coef0 %.17g" % kernel.coef0)
    return out


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def load_model(path, zero_based=False):
    """Read a native, LIBLINEAR or LIBSVM model file (recognised by its first line).

    zero_based: the data the model is used with have 0-based feature indices (--zero-based);
    a LIBSVM file's indices are keys of its training data (save_model), so they are read as
    0-based too."""
    stream = open_input(path, error=ModelFormatError)
    try:
        return _Reader(stream, path, zero_based).read()
    finally:
        if path != "-":
            stream.close()


def loads_model(data, path="<string>"):
    """Parse the bytes of a model file; ``path`` names it in error messages."""
    return _Reader(io.BytesIO(data), path).read()


def _split_lines(data):
    """Lines of ``data`` without their line ends (\\n or \\r\\n); a final line end ends the last
    line rather than starting an empty one."""
    if not data:
        return []
    lines = data.replace(b"\r\n", b"\n").split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


def _show(token, limit=40):
    text = token.decode("ascii", "replace") if isinstance(token, bytes) else str(token)
    return repr(text if len(text) <= limit else text[:limit] + "...")


class _Header:
    """Header fields ``key -> (line number, value tokens)`` of one model file."""

    def __init__(self, reader, fields, end_line, kind):
        self.reader, self.fields, self.end_line, self.kind = reader, fields, end_line, kind

    def __contains__(self, key):
        return key in self.fields

    def line(self, key):
        return self.fields[key][0]

    def values(self, key, count=None):
        if key not in self.fields:
            self.reader.fail(self.end_line, f"the {self.kind} header has no '{key}' line")
        line, values = self.fields[key]
        if count is not None and len(values) != count:
            self.reader.fail(line, f"'{key}' needs {count} value{'s' * (count != 1)}, "
                                   f"found {len(values)}")
        return line, values

    def word(self, key, choices=None):
        line, (value,) = self.values(key, 1)
        value = value.decode("ascii", "replace")
        if choices is not None and value not in choices:
            self.reader.fail(line, f"unknown {key} {_show(value)}; expected one of "
                                   f"{', '.join(choices)}")
        return value

    def int(self, key, minimum=0):
        line, (value,) = self.values(key, 1)
        return self.reader.integer(value, line, key, minimum)

    def ints(self, key, count, minimum=0):
        line, values = self.values(key, count)
        return np.array([self.reader.integer(v, line, key, minimum) for v in values],
                        dtype=np.int64)

    def real(self, key):
        line, (value,) = self.values(key, 1)
        return float(self.reader.real_tokens([value], lambda i: line, key)[0])

    def reals(self, key, count):
        line, values = self.values(key, count)
        return self.reader.real_tokens(values, lambda i: line, key)


class _Reader:
    """One model file read from a binary stream: ``lines`` holds the lines read so far (index i
    is line i + 1, without its line end); data sections are parsed from the stream directly."""

    def __init__(self, stream, path, zero_based=False):
        self.stream, self.path = stream, path
        self.lines = []
        self.at_end = False
        # the first feature index of a LIBSVM file's support vectors (load_model's zero_based)
        self.libsvm_base = 0 if zero_based else 1

    def fail(self, line, message):
        raise ModelFormatError(self.path, line, message)

    # -- the stream -----------------------------------------------------------------------------

    def _read(self, size=-1):
        try:
            return self.stream.read(size)
        except DECOMPRESSION_ERRORS as exc:
            raise ModelFormatError(self.path, None, f"cannot read: {exc}") from None

    def has_line(self, index):
        """Read lines up to index ``index`` if the file has that many; True when it has."""
        while len(self.lines) <= index and not self.at_end:
            try:
                raw = self.stream.readline(HEADER_LINE_MAX_BYTES)
            except DECOMPRESSION_ERRORS as exc:
                raise ModelFormatError(self.path, None, f"cannot read: {exc}") from None
            if len(raw) == HEADER_LINE_MAX_BYTES and not raw.endswith(b"\n"):
                self.fail(len(self.lines) + 1, f"a line longer than "
                          f"{HEADER_LINE_MAX_BYTES >> 20} MiB before the data: not a model file")
            if not raw.endswith(b"\n"):
                self.at_end = True
                if not raw:
                    break
            self.lines += _split_lines(raw)
        return len(self.lines) > index

    def read_all_lines(self):
        if not self.at_end:
            self.lines += _split_lines(self._read())
            self.at_end = True

    # -- numbers --------------------------------------------------------------------------------

    def integer(self, token, line, what, minimum=0):
        if not _INT.match(token):
            self.fail(line, f"{what}: {_show(token)} is not an integer")
        value = int(token)
        if value < minimum or value > MAX_INDEX:
            self.fail(line, f"{what}: {value} is out of range")
        return value

    def real_tokens(self, tokens, line_of, what):
        """float64 array of ``tokens``; ``line_of(i)`` gives the line of token i for errors."""
        try:
            if any(b"_" in t for t in tokens):
                raise ValueError
            values = np.fromiter(map(float, tokens), dtype=np.float64, count=len(tokens))
        except ValueError:
            for i, token in enumerate(tokens):
                try:
                    if b"_" in token:
                        raise ValueError
                    float(token)
                except ValueError:
                    self.fail(line_of(i), f"{what}: {_show(token)} is not a number")
            raise
        finite = np.isfinite(values)
        if not finite.all():
            i = int(np.argmin(finite))
            self.fail(line_of(i), f"{what}: {_show(tokens[i])} is not a finite number")
        return values

    # -- structure ------------------------------------------------------------------------------

    def read(self):
        if not self.has_line(0) or not self.lines[0].strip():
            self.read_all_lines()      # is there anything at all?
        lines = self.lines
        if not any(line.strip() for line in lines):
            self.fail(None, "empty file: does not look like a model file")
        first = lines[0].split()
        key = first[0] if first else b""
        if key == FORMAT_NAME.encode():
            return self.read_native(first)
        if key == b"solver_type":
            return self.read_liblinear()
        if key == b"svm_type":
            return self.read_libsvm()
        if not first:
            self.fail(1, "empty first line: does not look like a model file")
        if not _is_text(lines[0]):
            self.fail(1, "not a model file: it starts with binary data, not text")
        if b":" in lines[0] or _looks_numeric(key):
            self.fail(1, "does not look like a model file: it looks like a LIBSVM data file "
                         "(were the data and model file names swapped?)")
        self.fail(1, f"does not look like a model file: it starts with {_show(key)}, not "
                     f"'{FORMAT_NAME}', 'solver_type' (LIBLINEAR) or 'svm_type' (LIBSVM)")

    def header(self, start, keys, ends, kind, repeated=()):
        """Read ``key value...`` lines from index ``start`` up to a line whose key is in ``ends``.

        Returns (fields, repeated_lines, index of the end line, the end key). Keys may come in
        any order; each at most once except those in ``repeated``. Blank lines are refused in
        the native header and skipped in LIBSVM's and LIBLINEAR's, as their fscanf readers do."""
        fields, extra = {}, {k: [] for k in repeated}
        i = start - 1
        while self.has_line(i + 1):
            i += 1
            tokens = self.lines[i].split()
            if not tokens:
                if kind != "model":
                    continue
                self.fail(i + 1, f"empty line in the {kind} header")
            key = tokens[0].decode("ascii", "replace")
            if key in ends:
                return _Header(self, fields, i + 1, kind), extra, i, key
            if key in extra:
                extra[key].append((i + 1, self.lines[i]))
            elif key in keys:
                if key in fields:
                    self.fail(i + 1, f"duplicate '{key}' line")
                fields[key] = (i + 1, tokens[1:])
            else:
                self.fail(i + 1, f"unknown key {_show(key)} in the {kind} header")
        self.fail(None, f"the file ends inside the {kind} header, before a "
                        f"{' or '.join(repr(e) for e in ends)} line (truncated?)")

    # -- data sections --------------------------------------------------------------------------

    def allocate(self, shape, explain):
        """An empty float64 array for a data section, or the error ``explain`` finds in the
        file when the header's counts cannot be allocated (a damaged header, most likely)."""
        try:
            return np.empty(shape, dtype=np.float64)
        except (MemoryError, ValueError):
            explain(0, self._read())
            raise

    def dense_body(self, start, count, ncols, what, native):
        """The ``count`` data lines from index ``start`` (where the stream stands), ``ncols``
        reals each, as a (count, ncols) array (feature-major for weights, as in the file)."""
        def explain(done, rest):
            self.explain(start, done, count, rest, lambda s, c, d: (
                native and self.early_end(s, c, what, done=d),
                self.dense_rows(s, c, ncols, what, done=d)))
        W = self.allocate((count, ncols), explain)
        self.stream_rows(start, count, lambda buf, cut, done: _parse.parse_dense_rows(
            memoryview(buf)[:cut], W, done), explain)
        return W

    def sv_body(self, start, count, ncoef, native, what="SV", base=None):
        """``count`` SV lines from index ``start``: (coef (count, ncoef), indptr, indices
        (0-based), values), see sv_rows (``base``: a LIBSVM file's first feature index)."""
        def explain(done, rest):
            self.explain(start, done, count, rest, lambda s, c, d: (
                native and self.early_end(s, c, what, done=d),
                self.sv_rows(s, c, ncoef, what, done=d, base=base)))
        coef = self.allocate((count, ncoef), explain)
        blocks = []

        def parse(buf, cut, done):
            lines, pairs = _parse.count_lines(buf, cut)
            indptr = np.zeros(min(lines, count - done) + 1, dtype=np.int64)
            indices, values = np.empty(pairs, dtype=np.int32), np.empty(pairs, dtype=np.float64)
            rows, used, nnz, ok, _ = _parse.parse_sv_rows(memoryview(buf)[:cut], coef, done,
                                                          indptr, indices, values,
                                                          1 if base is None else base)
            blocks.append((indptr[1:rows + 1], indices[:nnz], values[:nnz]))
            return rows, used, ok

        self.stream_rows(start, count, parse, explain)
        indptr = np.zeros(count + 1, dtype=np.int64)
        row = offset = 0
        for ends, indices, _ in blocks:
            indptr[row + 1:row + 1 + len(ends)] = ends + offset
            row, offset = row + len(ends), offset + len(indices)
        indices = np.concatenate([b[1] for b in blocks] + [np.empty(0, dtype=np.int32)])
        values = np.concatenate([b[2] for b in blocks] + [np.empty(0)])
        return coef, indptr, indices, values

    def stream_rows(self, start, count, parse, explain):
        """Feed the data lines, in blocks of whole lines, to ``parse(buffer, length, rows done)``
        (which returns rows parsed, bytes used and ok) until ``count`` rows are parsed; a bad
        line or an early end of file goes to ``explain(rows done, text from there on)``. The
        lines after the data are then read into ``lines`` (for the end checks)."""
        assert len(self.lines) == start
        done, carry = 0, b""
        while done < count:
            chunk = self._read(BODY_BLOCK_BYTES)
            data = carry + chunk if carry else chunk
            if not chunk and data and not data.endswith(b"\n"):
                if data.endswith((b" ", b"\t", b"\r")):
                    # the writers put a space after every value: a whole last line whose line
                    # end is missing (LIBSVM and LIBLINEAR read it)
                    data += b"\n"
                else:
                    # cut inside a number (a copy that stopped): read as it is, it would give
                    # other numbers (the last weight 0.6493203 for 0.64932031321290551)
                    self.fail(start + done + data.count(b"\n") + 1,
                              "the file ends in the middle of this line (truncated?): model "
                              "files end every line with a line end")
            cut = data.rfind(b"\n") + 1
            used = 0
            if cut:
                rows, used, ok = parse(data, cut, done)
                done += rows
                if not ok:
                    explain(done, data[used:] + self._read())
                    self.fail(start + done + 1, "malformed data line")   # explained: not reached
            carry = data[used:]
            del data
            if not chunk:
                break
        if done < count:
            explain(done, carry)
            self.fail(None, "the file ends inside the data lines (truncated?)")  # not reached
        self.lines += [None] * count      # parsed: only their number matters from here on
        self.lines += _split_lines(carry + self._read())
        self.at_end = True

    def explain(self, start, done, count, rest, check):
        """Raise the error of a data section whose first ``done`` of ``count`` lines (from index
        ``start``) are good, ``rest`` being the text from the next line on: the Python checks
        run over those lines, with the order of checks and the messages of a whole-file read.
        They accept what the compiled loops accept, so they find the problem."""
        self.lines = self.lines[:start] + [None] * done + _split_lines(rest)
        self.at_end = True
        check(start + done, count - done, done)

    def dense_rows(self, start, count, ncols, what, done=0):
        """Parse ``count`` lines from index ``start``, each with ``ncols`` reals (``done``: good
        lines before ``start``, for the messages)."""
        rows = self.lines[start:start + count]
        if len(rows) < count:
            self.fail(None, f"the file ends after {len(rows) + done} of {count + done} {what} "
                            f"lines (truncated?)")
        tokens = [row.split() for row in rows]
        for i, t in enumerate(tokens):
            if len(t) != ncols:
                self.fail(start + i + 1, f"expected {ncols} value{'s' * (ncols != 1)} in a "
                                         f"{what} line, found {len(t)}")
        flat = list(itertools.chain.from_iterable(tokens))
        values = self.real_tokens(flat, lambda j: start + j // max(ncols, 1) + 1, what)
        return values.reshape(count, ncols)

    def sv_rows(self, start, count, ncoef, what="SV", done=0, base=None):
        """Parse ``count`` SV lines: ``ncoef`` coefficients then index:value pairs with
        increasing indices from 1 (native files) or ``base`` (LIBSVM files: 1, or 0 for a model
        of 0-based data). Returns (coef (count, ncoef), indptr, indices (0-based), data).
        (``done``: good lines before ``start``, for the messages.)"""
        libsvm, base = base is not None, 1 if base is None else base
        rows = self.lines[start:start + count]
        if len(rows) < count:
            self.fail(None, f"the file ends after {len(rows) + done} of {count + done} {what} "
                            f"lines (truncated?)")
        coef_tokens, feat_tokens = [], []
        nnz = np.zeros(count + 1, dtype=np.int64)
        for i, row in enumerate(rows):
            tokens = row.split()
            if len(tokens) < ncoef:
                self.fail(start + i + 1, f"expected {ncoef} coefficient{'s' * (ncoef != 1)} "
                                         f"in an {what} line, found {len(tokens)} values")
            pairs = tokens[ncoef:]
            if row.count(b":") != len(pairs) or any(p.count(b":") != 1 for p in pairs):
                self._bad_pairs(start + i + 1, tokens[:ncoef], pairs)
            coef_tokens += tokens[:ncoef]
            feat_tokens += pairs
            nnz[i + 1] = len(pairs)
        indptr = np.cumsum(nnz)

        def line_of_coef(j):
            return start + j // max(ncoef, 1) + 1

        def line_of_feature(j):
            return start + int(np.searchsorted(indptr, j, side="right")) - 1 + 1

        coef = self.real_tokens(coef_tokens, line_of_coef, f"{what} coefficient")
        split = b" ".join(feat_tokens).replace(b":", b" ").split()
        if len(split) != 2 * len(feat_tokens):
            for j, pair in enumerate(feat_tokens):
                if len(pair.split(b":")) != 2 or not all(pair.split(b":")):
                    self.fail(line_of_feature(j), f"feature {_show(pair)} is not index:value")
        index_tokens = split[0::2]
        for j, token in enumerate(index_tokens):
            if not _INT.match(token):
                self.fail(line_of_feature(j), f"feature index {_show(token)} is not an integer")
        numbers = [int(token) for token in index_tokens]
        data = self.real_tokens(split[1::2], line_of_feature, "feature value")
        for j, value in enumerate(numbers):
            if not base <= value <= MAX_INDEX - 1 + base:
                hint = "; a LIBSVM model of 0-based data is read with --zero-based " \
                    "(zero_based=True in Python)" \
                    if libsvm and value == 0 else ""
                self.fail(line_of_feature(j), f"feature index {value} is out of range "
                                              f"(indices start at {base}){hint}")
        indices = np.array(numbers, dtype=np.int64)
        if len(indices) > 1:
            bad = np.diff(indices) <= 0
            bounds = indptr[1:-1]
            bounds = bounds[(bounds > 0) & (bounds < len(indices))]
            bad[bounds - 1] = False
            if bad.any():
                j = int(np.argmax(bad)) + 1
                self.fail(line_of_feature(j), f"feature indices must increase: {indices[j]} "
                                              f"after {indices[j - 1]}")
        return coef.reshape(count, ncoef), indptr, indices - base, data

    def _bad_pairs(self, line, coefs, pairs):
        for token in coefs:
            if b":" in token:
                self.fail(line, f"expected a coefficient, found {_show(token)}")
        for pair in pairs:
            if pair.count(b":") != 1:
                self.fail(line, f"feature {_show(pair)} is not index:value")

    def trailing(self, index, what):
        """Nothing but blank lines may follow the data (LIBSVM/LIBLINEAR files)."""
        for i in range(index, len(self.lines)):
            if self.lines[i].strip():
                self.fail(i + 1, f"unexpected text after the last {what} line "
                                 f"(wrong count in the header?)")

    # -- native ---------------------------------------------------------------------------------

    def read_native(self, first):
        if len(first) != 2:
            self.fail(1, f"the first line must be '{FORMAT_NAME} VERSION'")
        if not _INT.match(first[1]) or int(first[1]) < 1:
            self.fail(1, f"invalid model format version {_show(first[1])}")
        version = int(first[1])
        if version > FORMAT_VERSION:
            self.fail(1, f"model format version {version} is newer than this program supports "
                         f"({FORMAT_VERSION}); upgrade budgetsvm to read it")
        keys = ("model_type", "solver", "multiclass", "nr_class", "label", "nr_feature", "bias",
                "nr_w", "kernel_type", "gamma", "degree", "coef0", "nr_coef", "total_sv", "rho",
                "nr_sv", "probA", "probB")
        h, extra, end, end_key = self.header(1, keys, ("w", "SV"), "model", repeated=("param",))
        model_type = h.word("model_type", ("linear", "kernel"))
        linear = model_type == "linear"
        allowed = {"model_type", "solver", "multiclass", "nr_class", "label", "nr_feature",
                   "probA", "probB"}
        allowed |= {"bias", "nr_w"} if linear else {"kernel_type", "gamma", "degree", "coef0",
                                                    "nr_coef", "total_sv", "rho", "nr_sv"}
        for key in h.fields:
            if key not in allowed:
                self.fail(h.line(key), f"'{key}' does not belong in a {model_type} model")
        if end_key != ("w" if linear else "SV"):
            self.fail(end + 1, f"a {model_type} model's data starts with "
                               f"'{'w' if linear else 'SV'}', not '{end_key}'")
        if len(self.lines[end].split()) != 1:
            self.fail(end + 1, f"unexpected text after '{end_key}'")
        solver = h.word("solver")
        if not _WORD.match(solver):
            self.fail(h.line("solver"), f"invalid solver name {_show(solver)}")
        params = self.native_params(extra["param"])
        k = h.int("nr_class", 1)
        labels = self.labels(h, k, integer=False)
        n = h.int("nr_feature")
        if linear:
            multiclass = h.word("multiclass", ("binary", "ovr", "ww"))
            bias = h.real("bias")
            nr_w = h.int("nr_w", 1)
            expected = 1 if multiclass == "binary" else k
            if multiclass == "binary" and k != 2:
                self.fail(h.line("nr_class"), f"a binary model has 2 classes, not {k}")
            if nr_w != expected:
                self.fail(h.line("nr_w"), f"a {multiclass} model with {k} classes has "
                                          f"nr_w {expected}, not {nr_w}")
            prob_a, prob_b = self.probs(h, nr_w)
            rows = n + (1 if bias >= 0 else 0)
            W = self.dense_body(end + 1, rows, nr_w, "weight", native=True)
            self.native_end(end + 1 + rows, f"{rows} weight")
            # coef = W[:n].T is a view: a large model is not copied (model.LinearModel).
            return LinearModel(labels, W[:n].T, bias, W[n] if bias >= 0 else None, multiclass,
                               solver, params, prob_a=prob_a, prob_b=prob_b, copy=False)
        multiclass = h.word("multiclass", ("binary", "argmax", "ovo"))
        kind = h.word("kernel_type", ("linear", "poly", "rbf", "sigmoid"))
        gamma, coef0 = h.real("gamma"), h.real("coef0")
        degree = h.int("degree")
        nr_coef = h.int("nr_coef")
        l = h.int("total_sv")
        expected = {"binary": 1, "argmax": k, "ovo": k - 1}[multiclass]
        if multiclass == "binary" and k != 2:
            self.fail(h.line("nr_class"), f"a binary model has 2 classes, not {k}")
        if nr_coef != expected:
            self.fail(h.line("nr_coef"), f"a {multiclass} model with {k} classes has "
                                         f"nr_coef {expected}, not {nr_coef}")
        n_dec = k * (k - 1) // 2 if multiclass == "ovo" else nr_coef
        rho = h.reals("rho", n_dec)
        nr_sv = None
        if "nr_sv" in h or multiclass == "ovo":
            nr_sv = h.ints("nr_sv", k)
            if nr_sv.sum() != l:
                self.fail(h.line("nr_sv"), f"nr_sv adds up to {nr_sv.sum()}, not total_sv {l}")
        prob_a, prob_b = self.probs(h, n_dec)
        coef, indptr, indices, data = self.sv_body(end + 1, l, nr_coef, native=True)
        if len(indices) and indices.max() >= n:
            j = int(np.argmax(indices >= n))
            row = int(np.searchsorted(indptr, j, side="right"))
            self.fail(end + row + 1, f"feature index {indices[j] + 1} exceeds nr_feature {n}")
        self.native_end(end + 1 + l, f"{l} SV")
        sv = sp.csr_matrix((data, indices, indptr), shape=(l, n))
        return KernelModel(labels, KernelSpec(kind, gamma, degree, coef0), sv, coef, rho,
                           multiclass, solver, params, nr_sv, prob_a=prob_a, prob_b=prob_b)

    def early_end(self, start, count, what, done=0):
        """An 'end' line among the data lines means the header's count is too large."""
        try:
            j = self.lines.index(b"end", start, start + count)
        except ValueError:
            return
        self.fail(j + 1, f"found 'end' after {j - start + done} of {count + done} {what} lines "
                         f"(wrong count in the header?)")

    def native_end(self, index, what):
        if index >= len(self.lines):
            self.fail(None, "the file ends without its 'end' line (truncated?)")
        if self.lines[index].strip() != b"end":
            self.fail(index + 1, f"expected 'end' after {what} lines, found "
                                 f"{_show(self.lines[index].strip())} (wrong count in the header?)")
        self.trailing(index + 1, "'end'")

    def native_params(self, entries):
        params = {}
        for line, raw in entries:
            tokens = raw.split(None, 3)[1:]
            if len(tokens) < 2:
                self.fail(line, "a param line is 'param NAME TYPE VALUE'")
            name = tokens[0].decode("ascii", "replace")
            kind = tokens[1].decode("ascii", "replace")
            if not _NAME.match(name):
                self.fail(line, f"invalid parameter name {_show(name)}")
            if name in params:
                self.fail(line, f"duplicate parameter {_show(name)}")
            if kind == "none":
                if len(tokens) != 2:
                    self.fail(line, "a 'none' parameter has no value")
                params[name] = None
                continue
            if len(tokens) != 3:
                self.fail(line, "a param line is 'param NAME TYPE VALUE'")
            value = tokens[2].strip()
            if kind != "str" and len(value.split()) != 1:
                self.fail(line, f"parameter {name}: one value expected, found {_show(value)}")
            if kind == "int":
                if not _INT.match(value):
                    self.fail(line, f"parameter {name}: {_show(value)} is not an integer")
                params[name] = int(value)
            elif kind == "real":
                number = self.real_tokens([value], lambda i: line, f"parameter {name}")
                params[name] = float(number[0])
            elif kind == "bool":
                if value not in (b"true", b"false"):
                    self.fail(line, f"parameter {name}: expected true or false, "
                                    f"found {_show(value)}")
                params[name] = value == b"true"
            elif kind == "str":
                try:
                    text = json.loads(value.decode("ascii"))
                except (UnicodeDecodeError, ValueError):
                    text = None
                if not isinstance(text, str):
                    self.fail(line, f"parameter {name}: expected a double-quoted string, "
                                    f"found {_show(value)}")
                params[name] = text
            else:
                self.fail(line, f"parameter {name}: unknown type {_show(kind)} "
                                f"(int, real, str, bool or none)")
        return params

    def labels(self, h, k, integer):
        line, values = h.values("label", k)
        if integer:
            return np.array([self.integer(v, line, "label", MIN_LABEL) for v in values],
                            dtype=np.float64)
        labels = h.reals("label", k)
        if len(np.unique(labels)) != k:
            self.fail(line, "the labels are not distinct")
        return labels

    def probs(self, h, count):
        return (h.reals("probA", count) if "probA" in h else None,
                h.reals("probB", count) if "probB" in h else None)

    # -- LIBLINEAR ------------------------------------------------------------------------------

    def read_liblinear(self):
        keys = ("solver_type", "nr_class", "label", "nr_feature", "bias", "rho")
        h, _, end, _ = self.header(0, keys, ("w",), "LIBLINEAR model")
        line, values = h.values("solver_type", 1)
        solver = values[0].decode("ascii", "replace")
        if solver in LIBLINEAR_OTHERS:
            self.fail(line, f"LIBLINEAR {LIBLINEAR_OTHERS[solver]} models ({solver}) are not "
                            f"supported; only classification models can be read")
        if solver not in LIBLINEAR_CLASSIFIERS + LIBLINEAR_ARGMAX:
            self.fail(line, f"unknown LIBLINEAR solver type {_show(solver)}")
        if "rho" in h:
            self.fail(h.line("rho"), "'rho' belongs to one-class models only")
        if len(self.lines[end].split()) != 1:
            self.fail(end + 1, "unexpected text after 'w'")
        k = h.int("nr_class", 1)
        labels = self.labels(h, k, integer=True)
        if len(np.unique(labels)) != k:
            self.fail(h.line("label"), "the labels are not distinct")
        n = h.int("nr_feature")
        bias = h.real("bias")
        argmax = solver in LIBLINEAR_ARGMAX
        nr_w = 1 if (k == 2 and not argmax) else k
        multiclass = "ww" if argmax else ("binary" if k == 2 else "ovr")
        rows = n + (1 if bias >= 0 else 0)
        W = self.dense_body(end + 1, rows, nr_w, "weight", native=False)
        self.trailing(end + 1 + rows, "weight")
        if argmax and k == 2:
            # LIBLINEAR predicts a two-class MCSVM_CS model by the sign of the first column
            # (linear.cpp predict_values), not by arg-max: keep that column as a binary model.
            W, multiclass = W[:, :1], "binary"
        return LinearModel(labels, W[:n].T, bias, W[n] if bias >= 0 else None, multiclass,
                           "liblinear", {"solver_type": solver}, copy=False)

    # -- LIBSVM ---------------------------------------------------------------------------------

    def read_libsvm(self):
        keys = ("svm_type", "kernel_type", "degree", "gamma", "coef0", "nr_class", "total_sv",
                "rho", "label", "probA", "probB", "prob_density_marks", "nr_sv")
        # Refuse unsupported model types on their own line, before anything else.
        i = -1
        while self.has_line(i + 1):
            i += 1
            tokens = self.lines[i].split()
            if tokens[:1] == [b"SV"]:
                break
            if len(tokens) == 2 and tokens[0] == b"svm_type":
                name = tokens[1].decode("ascii", "replace")
                if name in LIBSVM_OTHERS:
                    self.fail(i + 1, f"LIBSVM {LIBSVM_OTHERS[name]} models ({name}) are not "
                                     f"supported; only c_svc and nu_svc classification models "
                                     f"can be read")
            if len(tokens) == 2 and tokens[0] == b"kernel_type" and tokens[1] == b"precomputed":
                self.fail(i + 1, "LIBSVM models with a precomputed kernel are not supported "
                                 "(they refer to training rows by number, not by features)")
        h, _, end, _ = self.header(0, keys, ("SV",), "LIBSVM model")
        svm_type = h.word("svm_type", LIBSVM_TYPES)
        kernel_name = h.word("kernel_type", tuple(LIBSVM_KERNELS))
        kind = LIBSVM_KERNELS[kernel_name]
        if "prob_density_marks" in h:
            self.fail(h.line("prob_density_marks"), "'prob_density_marks' belongs to one-class "
                                                    "models only")
        needs = {"poly": ("degree", "gamma", "coef0"), "rbf": ("gamma",),
                 "sigmoid": ("gamma", "coef0"), "linear": ()}[kind]
        for key in ("degree", "gamma", "coef0"):
            if key in needs and key not in h:
                self.fail(end + 1, f"the header has no '{key}' line, needed by the "
                                   f"{kernel_name} kernel")
        degree = h.int("degree") if "degree" in h else 3
        gamma = h.real("gamma") if "gamma" in h else 0.0
        coef0 = h.real("coef0") if "coef0" in h else 0.0
        k = h.int("nr_class", 1)
        l = h.int("total_sv")
        if k == 1 and l > 0:
            # LIBSVM's model of one class has no support vector (svm_train trains no pair)
            self.fail(h.line("total_sv"), f"a model of one class (nr_class 1) has no support "
                                          f"vectors, not {l}")
        labels = self.labels(h, k, integer=True)
        if len(np.unique(labels)) != k:
            self.fail(h.line("label"), "the labels are not distinct")
        pairs = k * (k - 1) // 2
        rho = h.reals("rho", pairs)
        nr_sv = h.ints("nr_sv", k)
        if nr_sv.sum() != l:
            self.fail(h.line("nr_sv"), f"nr_sv adds up to {nr_sv.sum()}, not total_sv {l}")
        prob_a, prob_b = self.probs(h, pairs)
        coef, indptr, indices, data = self.sv_body(end + 1, l, k - 1, native=False,
                                                   base=self.libsvm_base)
        self.trailing(end + 1 + l, "SV")
        width = int(indices.max()) + 1 if len(indices) else 0
        sv = sp.csr_matrix((data, indices, indptr), shape=(l, width))
        if k == 1:
            # every row gets the label (svm_predict's vote over no pair): the one-class model
            # of train.one_class_model, one decision value 0 and arg-max; probA/probB (no
            # values) mean probability 1, which any sigmoid gives it
            has_prob = prob_a is not None and prob_b is not None
            return KernelModel(labels, KernelSpec(kind, gamma, degree, coef0), sv,
                               np.zeros((0, 1)), np.zeros(1), "argmax", "libsvm",
                               {"svm_type": svm_type}, prob_a=np.zeros(1) if has_prob else None,
                               prob_b=np.zeros(1) if has_prob else None)
        return KernelModel(labels, KernelSpec(kind, gamma, degree, coef0), sv, coef, rho,
                           "binary" if k == 2 else "ovo", "libsvm", {"svm_type": svm_type},
                           nr_sv, prob_a=prob_a, prob_b=prob_b)


def _is_text(line):
    """Printable ASCII and UTF-8 text with tabs (model files are ASCII; a data file may hold
    UTF-8 comments): no control bytes, no invalid UTF-8."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c.isprintable() or c in "\t\r" for c in text)


def _looks_numeric(token):
    try:
        float(token)
    except ValueError:
        return False
    return True
