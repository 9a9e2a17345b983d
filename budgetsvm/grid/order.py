"""The grid and its job order: grid.py's ranges (range_f), permute_sequence and calculate_jobs
(coarse to fine), flattened into Points (a budget list is the innermost loop)."""
import collections
import math

from budgetsvm.errors import ParameterError

DEFAULT_LOG2C = (-5.0, 15.0, 2.0)
DEFAULT_LOG2G = (3.0, -15.0, -2.0)
# At most this many points in a grid (each range may have 10,000 values, their product not):
# 10^8 points would take gigabytes before the first one ran.
MAX_POINTS = 100_000

Point = collections.namedtuple("Point", "log2c log2g budget")
Point.__doc__ = "One grid point: log2 C, log2 gamma and budget (None for a dimension not searched)."


def _tidy(value):
    """Round away the float noise of begin + k*step so that points print and match cleanly."""
    value = round(value, 10)
    return 0.0 if value == 0 else value


def parse_range(text, option="-log2c"):
    """``begin,end,step`` → (begin, end, step) floats; ``null`` → None; else ParameterError.

    grid.py accepts a step of either sign; the range is begin, begin+step, ... while it has not
    passed end. A zero step, non-finite numbers or an empty range are errors here.
    """
    if text is None:
        raise ParameterError(f"{option} needs a value: begin,end,step or null")
    if text == "null":
        return None
    parts = text.split(",")
    try:
        begin, end, step = (float(p) for p in parts)
    except ValueError:
        raise ParameterError(f"{option}: expected begin,end,step (three numbers) or null, "
                             f"got {text!r}") from None
    if not all(math.isfinite(v) for v in (begin, end, step)):
        raise ParameterError(f"{option}: begin, end and step must be finite, got {text!r}")
    if step == 0:
        raise ParameterError(f"{option}: step must not be 0, got {text!r}")
    if (step > 0 and begin > end) or (step < 0 and begin < end):
        raise ParameterError(f"{option}: empty range {text!r} (with step {step:g} the range "
                             f"must go from {'low to high' if step > 0 else 'high to low'})")
    if abs(end - begin) / abs(step) > 10000:
        raise ParameterError(f"{option}: {text!r} has more than 10000 values")
    check_exponents((begin, end, step), option)
    return begin, end, step


def is_double_exponent(x):
    """Whether 2^x is a positive finite double (-1074 <= x < 1024), as C = 2^x and gamma = 2^x
    must be."""
    try:
        return 0.0 < 2.0 ** x < math.inf
    except OverflowError:
        return False


def check_exponents(log2_range, option):
    """ParameterError naming option when 2^x is not a positive finite double for a value x of
    the range (begin, end, step) (None: nothing to check)."""
    if log2_range is None:
        return
    values = range_f(*log2_range)
    for x in (min(values), max(values)) if values else ():
        if not is_double_exponent(x):
            shown = str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"
            raise ParameterError(f"{option}: 2^{shown} is out of the range of a double "
                                 "(2^x is a positive finite double for -1074 <= x < 1024)")


def range_f(begin, end, step):
    """grid.py's range_f: begin, begin+step, ... up to end inclusive (works for floats)."""
    seq = []
    # the last index, with half a step to spare for rounding: the stop when begin + k*step no
    # longer moves (a step below the spacing of doubles at begin, e.g. 10,10,1e-30)
    last = abs(end - begin) / abs(step) + 0.5
    k = 0
    while k <= last:
        value = begin + k * step
        # a tolerance so that -1,1,0.1 includes 1 despite binary rounding
        if step > 0 and value > end + 1e-9 * abs(step):
            break
        if step < 0 and value < end - 1e-9 * abs(step):
            break
        value = _tidy(value)
        if not seq or value != seq[-1]:     # steps below _tidy's resolution: each value once
            seq.append(value)
        k += 1
    return seq


def permute_sequence(seq):
    """grid.py's permute_sequence: midpoint first, then the halves interleaved, recursively."""
    n = len(seq)
    if n <= 1:
        return list(seq)
    mid = int(n / 2)
    left = permute_sequence(seq[:mid])
    right = permute_sequence(seq[mid + 1:])
    ret = [seq[mid]]
    while left or right:
        if left:
            ret.append(left.pop(0))
        if right:
            ret.append(right.pop(0))
    return ret


def calculate_jobs(c_range, g_range):
    """grid.py's calculate_jobs: a list of lines, each a list of (log2c, log2g) pairs.

    c_range / g_range: (begin, end, step) or None (dimension not searched: its value is None).
    """
    c_seq = permute_sequence(range_f(*c_range)) if c_range is not None else [None]
    g_seq = permute_sequence(range_f(*g_range)) if g_range is not None else [None]
    nr_c = float(len(c_seq))
    nr_g = float(len(g_seq))
    i, j = 0, 0
    jobs = []
    while i < nr_c or j < nr_g:
        if i / nr_c < j / nr_g:
            # increase C resolution
            jobs.append([(c_seq[i], g_seq[k]) for k in range(j)])
            i += 1
        else:
            # increase gamma resolution
            jobs.append([(c_seq[k], g_seq[j]) for k in range(i)])
            j += 1
    return jobs


def count_points(c_range, g_range, budgets=None):
    """How many points the grid has (job_points without building them)."""
    count = 1
    for log2_range in (c_range, g_range):
        if log2_range is not None:
            count *= len(range_f(*log2_range))
    return count * max(len(set(budgets or ())), 1)


def job_points(c_range, g_range, budgets=None):
    """All points in job order: grid.py's order of (C, gamma), each with every budget in turn."""
    budgets = [None] if not budgets else list(dict.fromkeys(budgets))
    return [Point(c, g, b) for line in calculate_jobs(c_range, g_range) for (c, g) in line
            for b in budgets]
