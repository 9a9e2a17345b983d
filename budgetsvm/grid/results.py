"""The results file (grid.py's ``log2c=<x> log2g=<y> rate=<r>`` lines, ``budget=<B>`` for budget
lists; read back for -resume) and the choice of the best point (grid.py's tie rule, in job
order, so that it does not depend on which worker finished first)."""
import os
import re

from budgetsvm.errors import BsvmError
from budgetsvm.grid.order import Point, _tidy, is_double_exponent


def format_value(value):
    """A log2 value as written to .out and stdout: integers without '.0', else shortest repr."""
    value = _tidy(float(value))
    return str(int(value)) if value.is_integer() else repr(value)


def format_rate(rate):
    return repr(float(rate))


def point_fields(point, log2c, log2g, with_budget=True):
    """The texts of the dimensions a grid point has (unsearched ones are None): log2c(x) and
    log2g(y) for its logs, then ``budget=<B>`` (unless with_budget is False)."""
    fields = []
    if point.log2c is not None:
        fields.append(log2c(point.log2c))
    if point.log2g is not None:
        fields.append(log2g(point.log2g))
    if with_budget and point.budget is not None:
        fields.append(f"budget={point.budget}")
    return fields


def format_result(point, rate):
    """One .out line (without the newline): ``log2c=<x> log2g=<y> [budget=<B>] rate=<r>``."""
    return " ".join(point_fields(point, lambda x: f"log2c={format_value(x)}",
                                 lambda y: f"log2g={format_value(y)}")
                    + [f"rate={format_rate(rate)}"])


_RATE = re.compile(r"rate=([0-9.]+)")
# a key's whole value, so that log2c=nan is an unreadable value, not a line without log2c
_LOG2C = re.compile(r"log2c=(\S+)")
_LOG2G = re.compile(r"log2g=(\S+)")
_BUDGET = re.compile(r"budget=(\S+)")


def parse_result_line(line):
    """(Point, rate) from a .out line, or None for a line without a rate (grid.py's regexes),
    with a rate outside 0..100, or with a value no grid has (2^x not a positive finite double,
    check_exponents; a budget that is not a positive integer)."""
    rate = _RATE.search(line)
    if not rate:
        return None
    try:
        c = _LOG2C.search(line)
        g = _LOG2G.search(line)
        b = _BUDGET.search(line)
        point = Point(_tidy(float(c.group(1))) if c else None,
                      _tidy(float(g.group(1))) if g else None,
                      int(b.group(1)) if b else None)
        value = float(rate.group(1))
    except ValueError:
        return None
    if not all(is_double_exponent(x) for x in point[:2] if x is not None):
        return None
    if (point.budget is not None and point.budget < 1) or not 0.0 <= value <= 100.0:
        return None
    return point, value


def read_results(path):
    """The finished points of a .out file, in file order: {Point: rate}.

    A last line without its newline was cut off by a killed run (its rate may be truncated), so
    it is ignored and the point computed again.
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as exc:
        raise BsvmError(f"{path}: cannot read the file to resume: "
                        f"{exc.strerror or exc}") from None
    lines = text.split("\n")
    complete = lines[:-1]           # the piece after the last newline is incomplete (or empty)
    results = {}
    for line in complete:
        parsed = parse_result_line(line.strip())
        if parsed is not None:
            results[parsed[0]] = parsed[1]
    return results


def _drop_incomplete_line(path):
    """Cut a last line without its newline (left by a killed run; read_results ignores it)."""
    with open(path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


class ResultFile:
    """The -out file: truncated (or appended to, with -resume), one flushed line per point;
    ``-``: the lines go to ``emit`` (standard output, as the grid's own lines). The file is
    opened at the first line, so that a run that fails or is interrupted before any point has
    a rate leaves an existing file as it was; check() tries it before the search."""

    def __init__(self, path, append, emit=print):
        self.path = path
        self.append = append
        self.emit = emit
        self.file = None

    def _failure(self, exc):
        return BsvmError(f"{self.path}: cannot write the result file: {exc.strerror or exc}")

    def check(self):
        """BsvmError now, not after the first point, when the file cannot be opened for
        writing (a name too long, no permission); creates nothing, changes nothing."""
        if self.path == "-":
            return
        existed = os.path.lexists(self.path)
        try:
            with open(self.path, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise self._failure(exc) from None
        if not existed:
            os.unlink(self.path)

    def _open(self):
        try:
            if self.append and os.path.exists(self.path):
                _drop_incomplete_line(self.path)
            return open(self.path, "a" if self.append else "w", encoding="utf-8")
        except OSError as exc:
            raise self._failure(exc) from None

    def write(self, point, rate):
        if self.path == "-":
            self.emit(format_result(point, rate))
            return
        if self.file is None:
            self.file = self._open()
        try:
            self.file.write(format_result(point, rate) + "\n")
            self.file.flush()
        except OSError as exc:
            raise self._failure(exc) from None

    def close(self):
        try:
            if self.file is not None:
                self.file.close()
        except OSError as exc:
            raise self._failure(exc) from None


# ---------------------------------------------------------------------------------------------
# the best point

def better(point, rate, best_point, best_rate):
    """grid.py's update rule: a higher rate, or the same rate with the same gamma (and budget)
    and a smaller C."""
    if best_point is None or rate > best_rate:
        return True
    return (rate == best_rate and point.log2g == best_point.log2g
            and point.budget == best_point.budget
            and point.log2c is not None and best_point.log2c is not None
            and point.log2c < best_point.log2c)


def select_best(results, order=None):
    """(best Point, best rate) of {Point: rate}, visiting points in ``order`` (job order) first
    and any others (resumed points outside the grid) before them, as grid.py reads resumed
    points first. (None, -1) when there are no results."""
    order = list(order or [])
    in_order = set(order)
    visit = [p for p in results if p not in in_order] + [p for p in order if p in results]
    best_point, best_rate = None, -1.0
    for point in visit:
        if better(point, results[point], best_point, best_rate):
            best_point, best_rate = point, results[point]
    return best_point, best_rate


def best_values(point):
    """{'c': C, 'g': gamma, 'budget': B} of a point (keys of unsearched dimensions omitted)."""
    values = {}
    if point is None:
        return values
    if point.log2c is not None:
        values["c"] = 2.0 ** point.log2c
    if point.log2g is not None:
        values["g"] = 2.0 ** point.log2g
    if point.budget is not None:
        values["budget"] = point.budget
    return values
