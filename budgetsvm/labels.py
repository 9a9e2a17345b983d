"""Class label order shared by every solver and model format (LIBSVM's convention)."""
import numpy as np

from budgetsvm.errors import BsvmError


def group_classes(y):
    """Return (labels, y_index): labels in order of first appearance, y_index[i] the class of row i.

    As in LIBSVM >= 3.17 and LIBLINEAR, two classes {-1, +1} with -1 seen first are swapped so
    that +1 is label[0]: binary models then treat +1 as the positive class.
    """
    y = np.asarray(y, dtype=np.float64)
    uniq, first, inverse = np.unique(y, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    if len(uniq) == 2 and uniq[order[0]] == -1 and uniq[order[1]] == 1:
        order = order[::-1]
    rank = np.empty(len(uniq), dtype=np.int32)
    rank[order] = np.arange(len(uniq), dtype=np.int32)
    return uniq[order], rank[inverse.ravel()]


def check_integer_labels(labels, path=None):
    """Model files store labels as integers (LIBSVM/LIBLINEAR); refuse anything else clearly."""
    bad = [v for v in labels if not float(v).is_integer()]
    if bad:
        where = f"{path}: " if path else ""
        raise BsvmError(f"{where}class labels must be integers, got {bad[0]!r}")


def format_label(value):
    """A label as LIBSVM prints it (%.17g): integers without a decimal point, and 0 for a label
    read as -0 (LIBSVM and LIBLINEAR keep labels as ints, and -0 == 0 names one class)."""
    return "%.17g" % (value + 0.0)
