"""Error types. Every error a user can cause is a BsvmError; the CLI prints its message on one
line and exits with status 1 (data and model problems) without a traceback."""


class BsvmError(Exception):
    """Base class of every error caused by user input (files, models, parameters)."""


def printable(text):
    """``text`` on one line: control characters (a newline in a file name) as Python escapes
    them."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def printable_name(path):
    """A file name for a one-line message: <stdin> for -, else printable(name)."""
    return "<stdin>" if path in (None, "-") else printable(str(path))


def _locate(path, line, message):
    name = printable_name(path)
    return f"{name}:{line}: {message}" if line else f"{name}: {message}"


class _LocatedError(BsvmError):
    """``FILE:LINE: problem``. Pickled with its three parts (an exception is re-created from
    its args, here the one message), so that bsvm-grid's worker processes can pass it back."""

    def __init__(self, path, line, message):
        self.path, self.line, self.problem = path, line, message
        super().__init__(_locate(path, line, message))

    def __reduce__(self):
        return type(self), (self.path, self.line, self.problem)


class DataFormatError(_LocatedError):
    """A malformed LIBSVM data file: ``FILE:LINE: problem``."""


class ModelFormatError(_LocatedError):
    """A malformed or unsupported model file: ``FILE:LINE: problem``."""


class ParameterError(BsvmError):
    """An invalid combination of training parameters (the check_parameter idea of LIBSVM)."""


class OneClassWarning(UserWarning):
    """Training data of a single class: the model predicts that class (train.one_class_model).
    bsvm-train -q silences it, as svm-train -q silences LIBSVM's warning."""


class StreamOrderWarning(UserWarning):
    """--stream buffers that held a single class (the file sorted by label?): a diagnostic,
    which bsvm-train -q silences."""


class OverflowRowsWarning(UserWarning):
    """Training rows whose squared norm ‖x‖² overflows a double: no solver can step on them,
    so they are left out (train.train); a diagnostic, which bsvm-train -q silences."""


class MaxIterWarning(UserWarning):
    """A linear solver stopped at --max-iter in a cross-validation fold, whose model prints no
    summary (a trained model's summary says it: "WARNING: reaching max number of iterations");
    a diagnostic, which bsvm-train -q silences, as LIBLINEAR's train -q silences its warning."""


class TrainingDiverged(BsvmError):
    """Training produced a model with NaN or infinite values: it is never saved or scored."""
