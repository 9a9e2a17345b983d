"""bsvm-scale [options] data_file — svm-scale's conventions (budgetsvm/scale.py), output to stdout.

Two passes over the file (statistics, then output), block by block: memory does not grow with
the file. The blocks are parsed (and, in the output pass, scaled and formatted) in the worker
threads of -n while the main thread reads the next ones and writes the output in file order.
Standard input and named pipes cannot be read twice: they are spooled to a temporary file
first. With -r the first pass only checks the file and finds the features the restore file
does not list.
"""
import contextlib
import math
import shutil
import sys
import tempfile

import click
import numpy as np

from budgetsvm import fileio, io, threads
from budgetsvm.cli.common import info, run
from budgetsvm.errors import BsvmError, DataFormatError
from budgetsvm.fileio import (atomic_output, check_not_an_input, check_output_path,
                              standard_output_alias)
from budgetsvm.scale import (ScaleError, dumps_scaling, fit_scaling, format_rows, load_scaling,
                             transform)


@contextlib.contextmanager
def _rereadable(path):
    """A path that can be read twice: stdin, and a pipe given by name (a FIFO, or bash's
    <(command) as /dev/fd/N), are copied to a temporary file."""
    if path != "-" and not fileio.is_pipe(path):
        yield path
        return
    source = contextlib.nullcontext(fileio.stdin_buffer()) if path == "-" else \
        open(path, "rb")
    with source as stream, \
            tempfile.NamedTemporaryFile(prefix="bsvm-scale.", suffix=".tmp") as spool:
        try:
            shutil.copyfileobj(stream, spool, 1 << 20)
            spool.flush()
        except OSError as exc:
            if fileio.write_failure(spool.name, exc) is None:
                raise           # a read error: reported as one of the input
            # not standard output's: the copy of the input in the temporary folder
            raise BsvmError(f"{fileio.display_name(path)}: cannot copy it to a temporary file "
                            f"in {tempfile.gettempdir()} (it is read twice): "
                            f"{exc.strerror or exc}") from None
        yield spool.name


@contextlib.contextmanager
def _naming(data_file):
    """A problem of the scaling itself (no data, an overflow) names the data file."""
    try:
        yield
    except ScaleError as exc:
        raise ScaleError(f"{fileio.display_name(data_file)}: {exc}") from None


@contextlib.contextmanager
def _blocks(path, shown, work=lambda X, y: (X, y), zero_based=False):
    """``with _blocks(...) as results``: work(X, y) of every block of path that holds rows, in
    file order, computed in the worker threads (io.map_problem_chunks); an error names the
    file as the user gave it."""
    try:
        with io.map_problem_chunks(path, work, zero_based) as results:
            yield results
    except DataFormatError as exc:
        if path == shown:
            raise
        raise DataFormatError(shown, exc.line, exc.problem) from None


@click.command(context_settings={"help_option_names": ["--help"], "max_content_width": 100})
@click.option("-l", "lower", type=float, help="x scaling lower limit [-1]")
@click.option("-u", "upper", type=float, help="x scaling upper limit [+1]")
@click.option("-y", "y_range", type=(float, float), metavar="Y_LOWER Y_UPPER",
              help="also scale the labels to [Y_LOWER, Y_UPPER] [no]")
@click.option("-s", "save_file", metavar="FILE", help="save the scaling parameters to FILE")
@click.option("-r", "restore_file", metavar="FILE",
              help="restore the scaling parameters from FILE (svm-scale's format)")
@click.option("--standardize", is_flag=True,
              help="mean 0 and standard deviation 1 instead of [lower, upper] (densifies zeros)")
@click.option("--precise", is_flag=True,
              help="write the scaled values exactly (shortest round-trip digits) instead of "
                   "svm-scale's %g (6 significant digits)")
@click.option("--zero-based", is_flag=True,
              help="feature indices start at 0, in the data file, the output and the -s/-r "
                   "file (as bsvm-train --zero-based reads them)")
@click.option("-n", "n_threads", type=click.IntRange(min=1), metavar="THREADS",
              help="worker threads parsing and scaling blocks of the file [default: the cores "
                   "available]; the output does not depend on it")
@click.argument("data_file")
def command(lower, upper, y_range, save_file, restore_file, standardize, precise, zero_based,
            n_threads, data_file):
    """Scale DATA_FILE (LIBSVM format; .gz/.bz2/.xz or - for stdin) and write it to stdout."""
    with threads.pool(n_threads):
        _scale(lower, upper, y_range, save_file, restore_file, standardize, precise, data_file,
               zero_based)


def _scale(lower, upper, y_range, save_file, restore_file, standardize, precise, data_file,
           zero_based=False):
    if save_file is not None and restore_file is not None:
        raise click.UsageError("cannot use -r and -s simultaneously")
    if restore_file == "-" and data_file == "-":
        raise click.UsageError("-r - and DATA_FILE - cannot both be standard input")
    if standard_output_alias(save_file) == "-":
        raise click.UsageError(f"-s {save_file}: the scaled data go to standard output; give the "
                               "parameters a file")
    check_not_an_input(("scaling parameters", save_file), [("data file", data_file)])
    check_not_an_input(("scaled data", "-"), [("data file", data_file),
                                              ("restore file", restore_file)])
    check_output_path(save_file)        # before the pass over the data, not after it
    if restore_file is not None:
        if lower is not None or upper is not None or y_range is not None or standardize:
            info("notice: -l/-u/-y/--standardize are ignored with -r: the restore file "
                 "defines the transform", False)
        scaling = load_scaling(restore_file, zero_based)
        _restore(scaling, restore_file, data_file, precise, zero_based)
        return
    lower = -1.0 if lower is None else lower
    upper = 1.0 if upper is None else upper
    for name, pair in (("-l/-u", (lower, upper)), ("-y", y_range or (0.0, 1.0))):
        if not (all(math.isfinite(v) for v in pair) and math.isfinite(pair[1] - pair[0])):
            raise click.UsageError(f"{name}: the limits and their difference must be finite "
                                   f"numbers, got {pair[0]:g} and {pair[1]:g}")
    if standardize and (lower != -1.0 or upper != 1.0):
        raise click.UsageError("-l/-u do not apply with --standardize")
    if not upper > lower:
        raise click.UsageError(f"inconsistent lower/upper specification: -l {lower:g} "
                               f"-u {upper:g} (upper must be greater)")
    if y_range is not None and not y_range[1] > y_range[0]:
        raise click.UsageError("inconsistent -y specification (y_upper must be greater)")
    with _rereadable(data_file) as path, _naming(data_file):
        with _blocks(path, data_file, zero_based=zero_based) as blocks:
            scaling, n_rows, nnz = fit_scaling(blocks, lower, upper, y_range, standardize)
        if save_file is None:
            new_nnz = _output(scaling, path, data_file, precise, zero_based)
        else:
            # the parameters are written first (a full disk fails before any output, as in
            # svm-scale) but take the place of an existing file only once the scaled data are
            # out: a run that fails or is stopped while writing them leaves that file unchanged
            with atomic_output(save_file) as out:
                out.write(dumps_scaling(scaling, zero_based))
                out.flush()
                try:
                    new_nnz = _output(scaling, path, data_file, precise, zero_based)
                except OSError as exc:
                    # standard output's failure, not the parameter file's (atomic_output would
                    # name that file)
                    raise fileio.write_failure("<stdout>", exc) or exc from None
    _warn_if_denser(nnz, new_nnz, standardize)


def _warn_if_denser(nnz, new_nnz, standardize):
    if new_nnz > nnz and not standardize:
        info(f"WARNING: scaling raised the non-zeros from {nnz} to {new_nnz}; if feature values "
             "are non-negative and sparse, use -l 0 rather than the default -l -1", False)


def _column_ranges(columns, low, high=None, counts=None):
    """(columns, min, max, count) per distinct column (sorted), reduced from entries
    (column, low, high, count): values alone (high = low, count 1), or the ranges of several
    blocks concatenated (what _merge_ranges folds)."""
    high = low if high is None else high
    counts = np.ones(len(columns), np.int64) if counts is None else counts
    order = np.argsort(columns, kind="stable")
    unique, first = np.unique(columns[order], return_index=True)
    if len(unique) == 0:
        return unique, np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
    return (unique, np.minimum.reduceat(low[order], first),
            np.maximum.reduceat(high[order], first), np.add.reduceat(counts[order], first))


def _merge_ranges(a, b):
    """The _column_ranges of the values behind two of them."""
    return _column_ranges(*(np.concatenate([x, y]) for x, y in zip(a, b)))


def _varying_columns(ranges, rows):
    """The columns (sorted) whose values over ``rows`` rows are not all equal, the implicit
    zeros of the rows that do not store them included (svm-scale's min != max)."""
    unique, low, high, counts = ranges
    zeros = counts < rows
    low, high = np.where(zeros, np.minimum(low, 0.0), low), \
        np.where(zeros, np.maximum(high, 0.0), high)
    return unique[low != high]


def _restore(scaling, restore_file, data_file, precise, zero_based=False):
    """-r: a first pass checks the whole file (so that a bad line writes nothing, as without -r)
    and finds the features the restore file does not list, which are left out (svm-scale scales
    them to 0, with a warning for each); then the output pass."""
    listed = scaling.listed

    def check(X, y):
        # per column the restore file does not list: (column, min, max, count) of its values
        columns, values = X.indices, X.data
        unlisted = columns >= len(listed)
        unlisted[~unlisted] = ~listed[columns[~unlisted]]
        return X.shape[0], X.nnz, _column_ranges(columns[unlisted], values[unlisted])

    with _rereadable(data_file) as path, _naming(data_file):
        rows = nnz = 0
        ranges = _column_ranges(np.zeros(0, np.int32), np.zeros(0))
        with _blocks(path, data_file, check, zero_based) as results:
            for block_rows, block_nnz, block_ranges in results:
                rows += block_rows
                nnz += block_nnz
                # folded block by block: memory of the unlisted columns, not of their values
                ranges = _merge_ranges(ranges, block_ranges)
        varying = _varying_columns(ranges, rows)
        if len(varying):
            # svm-scale's warning, for the features whose values vary in the data (one line
            # for all of them instead of one each)
            info(f"WARNING: {len(varying)} feature index(es) of {fileio.display_name(data_file)}"
                 f" (the first: {int(varying[0]) + (0 if zero_based else 1)}) are not in the "
                 "scaling file "
                 f"{fileio.display_name(restore_file)}: they are scaled to 0 (left out), as "
                 "svm-scale does", False)
        new_nnz = _output(scaling, path, data_file, precise, zero_based)
    _warn_if_denser(nnz, new_nnz, scaling.kind == "standardize")


def _output(scaling, path, shown, precise=False, zero_based=False):
    """Write the scaled lines of path to stdout; return how many values they hold."""
    def scaled_text(X, y):
        Xs, ys = transform(scaling, X, y)
        return format_rows(Xs, ys, precise, zero_based), Xs.nnz
    sys.stdout.flush()
    binary = getattr(sys.stdout, "buffer", None)    # the lines are ASCII bytes already
    nnz = 0
    with _blocks(path, shown, scaled_text, zero_based) as results:
        for text, block_nnz in results:
            nnz += block_nnz
            if binary is not None:
                binary.write(text)
            else:
                sys.stdout.write(text.decode("ascii"))
    (binary or sys.stdout).flush()
    return nnz


def main(argv=None):
    run(command, argv, prog_name="bsvm-scale")


if __name__ == "__main__":
    main()
