"""bsvm-train [options] training_file [model_file] — LIBSVM/LIBLINEAR letters, click parsing."""
import dataclasses
import os
import warnings

import click
import numpy as np

from budgetsvm import io, model_io, solvers, threads
from budgetsvm.fileio import (atomic_output, check_not_an_input, check_output_path, is_pipe,
                              is_regular_file, standard_output_alias)
from budgetsvm.cli.common import info, run
from budgetsvm.errors import (BsvmError, MaxIterWarning, OneClassWarning, OverflowRowsWarning,
                              StreamOrderWarning, printable_name)
from budgetsvm.params import OPTIONS, TrainParams, check_params, option_notices
from budgetsvm.progress import task_progress
from budgetsvm.train import (cross_validation, largest_value, progress_total, scale_notice,
                             small_classes, summary_lines, train,
                             usable_folds)

# LIBSVM's (svm-train) and LIBLINEAR's (train) -s numbers: (what it is, the solver to use).
LIBSVM_NUMBERS = {
    "0": ("C-SVC", "use -s bsgd (or bsca)"),
    "1": ("nu-SVC", "nearest: -s bsgd (or bsca), with -c in place of nu"),
    "2": ("one-class SVM", None), "3": ("epsilon-SVR", None), "4": ("nu-SVR", None)}
LIBLINEAR_NUMBERS = {
    "0": ("logistic regression", "nearest: -s dcd (hinge loss)"),
    "1": ("L2-loss SVC, dual", "use -s dcd --loss l2"),
    "2": ("L2-loss SVC, primal", "use -s dcd --loss l2"),
    "3": ("L1-loss SVC, dual", "use -s dcd"),
    "4": ("Crammer-Singer multi-class SVC", "nearest: -s ww (Weston-Watkins multi-class)"),
    "5": ("L1-regularised L2-loss SVC", "nearest: -s dcd --loss l2 (L2-regularised)"),
    "6": ("L1-regularised logistic regression", "nearest: -s dcd (hinge loss, L2)"),
    "7": ("logistic regression, dual", "nearest: -s dcd (hinge loss)"),
    "11": ("L2-loss SVR", None), "12": ("L2-loss SVR, dual", None),
    "13": ("L1-loss SVR, dual", None), "21": ("one-class SVM", None)}


def solver_number_hint(value):
    """One line saying which solver name is nearest to LIBSVM's and LIBLINEAR's -s value."""
    parts = []
    for tool, table in (("LIBSVM", LIBSVM_NUMBERS), ("LIBLINEAR", LIBLINEAR_NUMBERS)):
        if value in table:
            what, use = table[value]
            parts.append(f"{tool}'s -s {value} ({what}): "
                         f"{use or 'no counterpart (budgetsvm trains classifiers)'}")
    known = "; ".join(parts) if parts else f"-s {value} is neither LIBSVM's nor LIBLINEAR's"
    return (f"solvers are chosen by name, not number (LIBSVM's and LIBLINEAR's numbers clash): "
            f"{known}; the names are {', '.join(solvers.names())}")


def _solver(ctx, param, value):
    # LIBSVM's and LIBLINEAR's -s numbers get a hint; other names are checked by check_params
    if value is not None and value.lstrip("-").isdigit():
        raise click.BadParameter(solver_number_hint(value.lstrip("+")))
    # a name in any case, as -t takes RBF (-s BSGD is -s bsgd)
    if value is not None and value.lower() in solvers.names():
        return value.lower()
    return value


def _positive(ctx, param, value):
    if value is not None and not value > 0:
        raise click.BadParameter(f"must be positive, got {value:g}")
    return value


# --stream-buffer: at most a mebibyte of mebibytes (1 TiB of text per buffer)
MAX_STREAM_BUFFER_MB = float(1 << 20)


def _stream_buffer(ctx, param, value):
    value = _positive(ctx, param, value)
    if value is not None and not value <= MAX_STREAM_BUFFER_MB:
        raise click.BadParameter(f"must be at most {MAX_STREAM_BUFFER_MB:.0f} (MB), got {value:g}")
    return value


def _at_least(minimum):
    def check(ctx, param, value):
        if value is not None and value < minimum:
            raise click.BadParameter(f"must be >= {minimum}, got {value}")
        return value
    return check


class _ClassWeightOption(click.Option):
    """--class-weight, listed in --help under LIBSVM's glued form -wLABEL WEIGHT too, the one
    users type (budgetsvm.cli.common rewrites it to --class-weight before click parses)."""

    def get_help_record(self, ctx):
        names, text = super().get_help_record(ctx)
        return f"-wLABEL WEIGHT, {names}", text


def _aliases(aliases):
    """A value typed in any case, or one of its other spellings (-t 2), as the table's value;
    anything else is left as typed, for check_params to refuse."""
    def convert(ctx, param, value):
        return value if value is None else aliases.get(value.lower(), value)
    return convert


def _zero_one(ctx, param, value):
    return value == "1"


def _label_weights(ctx, param, value):
    # a label given twice (-w1 2 -w1 3, or -w+1 2 -w1 3) gets the product of its weights, as
    # LIBSVM and LIBLINEAR multiply C by every weight that names its class
    weights = {}
    for label, weight in value:
        weights[label] = weights.get(label, 1.0) * weight
    return weights


class _ThreadCount(click.ParamType):
    """-n THREADS: an integer (check_params asks for >= 1); a fraction is LIBSVM's nu."""
    name = "integer"

    def convert(self, value, param, ctx):
        try:
            return int(value)
        except ValueError:
            pass
        try:
            fraction = 0.0 < float(value) < 1.0
        except ValueError:
            fraction = False
        if fraction:
            self.fail(f"{value!r}: -n is the number of worker threads (LIBLINEAR's -n); "
                      f"LIBSVM's -n (the nu of nu-SVC) has no counterpart: nearest: -s bsgd "
                      f"(or bsca) with -c in place of nu", param, ctx)
        self.fail(f"{value!r} is not a valid integer", param, ctx)


# What the command line adds to an option of the table: LIBSVM's -s numbers and nu get a hint.
_CALLBACKS = {"solver": _solver}
_TYPES = {"n_threads": _ThreadCount()}


def _click_option(option):
    """The click option of one entry of params.OPTIONS: its flags, a parser for its type, its
    default (TrainParams'), its help. Values are checked by check_params, not here."""
    default, kind = option.default, option.type
    decls = [option.flags[0], option.name]
    kw = {"help": option.help_text() or None, "metavar": option.metavar, "hidden": option.hidden,
          "callback": _CALLBACKS.get(option.name)}
    if kind is bool and len(option.flags) == 2:         # --x/--no-x; None: the field's default
        decls, kind = ["/".join(option.flags), option.name], None
    elif kind is bool:                                  # LIBSVM's 0/1 (-h)
        kind, default, kw["callback"] = click.Choice(["0", "1"]), "1" if default else "0", \
            _zero_one
    elif kind is dict:                                  # -wLABEL WEIGHT, repeated
        kind, default = (float, float), ()
        kw.update(multiple=True, cls=_ClassWeightOption, callback=_label_weights)
    elif isinstance(kind, tuple) and option.aliases:
        kind, kw["callback"] = str, _aliases({**{v: v for v in kind}, **option.aliases})
    elif isinstance(kind, tuple):
        kind = click.Choice(kind, case_sensitive=False)  # --loss L2 is --loss l2
    kw.update(type=_TYPES.get(option.name, kind), default=default,
              show_default=option.show_default and default not in (None, ()))
    return click.option(*decls, **kw)


# bsvm-train's options that define a model, in the table's order (--help lists them so)
_TRAINING_OPTIONS = [_click_option(option) for option in OPTIONS.values()
                     if option.type is not None]


def training_options(function):
    """The bsvm-train options that define a model; bsvm-grid passes the same ones through."""
    for option in reversed(_TRAINING_OPTIONS):
        function = option(function)
    return function


def given_options(ctx):
    """(values, given): every parsed option of ctx, and the names of those typed on the command
    line (a default never triggers a notice)."""
    from click.core import ParameterSource
    given = {name for name in ctx.params
             if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE}
    return ctx.params, given


def params_from_options(options):
    """TrainParams from the parsed training options (a dict of the names declared above),
    checked by check_params before any work (exit 2)."""
    fields = {field.name for field in dataclasses.fields(TrainParams)}
    if options.get("gamma") == 0:
        # svm-train takes -g 0 for its default, 1/num_features (grid scripts pass it)
        options = {**options, "gamma": None}
    params = TrainParams(**{name: value for name, value in options.items() if name in fields})
    check_params(params)
    return params


@click.command(context_settings={"help_option_names": ["--help"], "max_content_width": 100})
@training_options
@click.option("-v", "folds", type=int, callback=_at_least(2),
              help="n-fold cross validation: print the accuracy instead of writing a model")
@click.option("-q", "quiet", is_flag=True, help="quiet mode: no progress or diagnostics")
@click.option("--stats", is_flag=True,
              help="also print solver statistics (coordinate updates of dcd/acf)")
@click.option("-b", "probability", type=click.Choice(["0", "1"]), default="0",
              help="1: fit a probability model (Platt scaling by internal 5-fold CV) [0]")
@click.option("--format", "model_format",
              type=click.Choice(["native", "liblinear", "libsvm"], case_sensitive=False),
              default="native", show_default=True,
              help="model file format (liblinear: linear models; libsvm: binary or one-class "
                   "kernel models)")
@click.option("--zero-based", is_flag=True,
              help="read 0-based feature indices (a --format libsvm model keeps them: its "
                   "indices are those of its training data)")
@click.option("--monitor", "monitor_file", metavar="FILE",
              help="bsgd/bsca: write a CSV per epoch (time, primal, [tracked dual,] merge fraction...)")
@click.option("--monitor-test", "monitor_test_file", metavar="FILE",
              help="with --monitor: also record the test accuracy on this file")
@click.option("--stream", is_flag=True,
              help="bsgd: train from the file in buffers, never holding it in memory "
                   "(shuffles within a buffer only: shuffle the file first)")
@click.option("--stream-buffer", "stream_buffer", type=float, default=16, show_default=True,
              callback=_stream_buffer, metavar="MB",
              help="with --stream: megabytes of text per buffer (the shuffle window)")
@click.argument("training_file")
@click.argument("model_file", required=False)
def command(folds, quiet, stats, probability, model_format, zero_based, monitor_file,
            monitor_test_file, stream, stream_buffer, training_file, model_file,
            **options):
    """Train an SVM on TRAINING_FILE (LIBSVM format; .gz/.bz2/.xz or - for stdin) and write
    MODEL_FILE (default: the training file's base name + .model; - for stdout)."""
    params = params_from_options(options)       # the values first: a bad one is one line
    for line in option_notices(params.solver, *given_options(click.get_current_context())):
        info(line, quiet)
    if quiet:
        # svm-train -q silences LIBSVM's one-class warning too
        warnings.filterwarnings("ignore", category=OneClassWarning)
        warnings.filterwarnings("ignore", category=StreamOrderWarning)
        warnings.filterwarnings("ignore", category=OverflowRowsWarning)
        warnings.filterwarnings("ignore", category=MaxIterWarning)
        # and numpy's notes on overflowing values (the outcome, a refusal or a model, is
        # reported either way): -q means no diagnostics
        warnings.filterwarnings("ignore", category=RuntimeWarning)
    if probability == "1" and model_format == "liblinear" and folds is None:
        # (-v writes no model file: its folds' probabilities need no format)
        raise click.UsageError("-b 1: LIBLINEAR model files have no probability parameters; "
                               "use --format native")
    if folds is not None:
        # cross validation writes no model and no monitor file (as -b 1, a notice)
        for given, option in ((monitor_file, "--monitor"), (monitor_test_file,
                                                            "--monitor-test")):
            if given is not None:
                info(f"notice: {option} has no effect with -v (no model is trained to "
                     "monitor)", quiet)
        monitor_file = monitor_test_file = None
    if model_file is None and folds is None:
        if training_file == "-":
            raise click.UsageError("give a MODEL_FILE when the training data come from stdin")
        model_file = os.path.basename(training_file) + ".model"
    # /dev/stdout after `> file` or `| command` is written as - (fileio.standard_output_alias);
    # the file the name stands for is checked against the inputs before it becomes -
    named_model, model_file = model_file, standard_output_alias(model_file)
    named_monitor, monitor_file = monitor_file, standard_output_alias(monitor_file)
    if folds is None:
        # everything that does not need the data is checked before reading it
        model_io.check_format(model_format, params.solver)
        check_output_path(model_file)
        _check_monitor_usage(params, monitor_file, monitor_test_file)
        inputs = [("training file", training_file), ("--monitor-test file", monitor_test_file)]
        check_not_an_input(("model file", named_model), inputs)
        check_not_an_input(("--monitor file", named_monitor),
                           inputs + [("model file", named_model)])
        if monitor_file == "-" and model_file == "-":
            raise click.UsageError("--monitor - and the model file - would both go to "
                                   "standard output")
        if monitor_test_file == "-" and training_file == "-":
            raise click.UsageError("--monitor-test - and the training file - cannot both "
                                   "be standard input")
    if stream:
        _check_stream_usage(params, training_file, folds, probability, monitor_file)
        from budgetsvm.stream import train_bsgd_stream

        def after_scan(n, d, labels, largest):
            model_io.check_format(model_format, params.solver, labels)
            _scale_notice(largest, quiet)
            update(total=progress_total(params, n, len(labels)))   # known after the first pass
        with task_progress("bsgd (streaming)", quiet=quiet,
                           transient=False) as update, threads.pool(params.n_threads):
            update(info="first pass: counting rows and classes")
            model = train_bsgd_stream(training_file, params, zero_based=zero_based,
                                      buffer_mb=stream_buffer, after_scan=after_scan,
                                      callback=lambda it, info_: update(completed=it,
                                                                        info=info_))
        _print_summary(model, stats, model_file == "-", quiet)
        with threads.pool(params.n_threads):
            model_io.save_model(model, model_file, format=model_format, zero_based=zero_based)
        return
    with threads.pool(params.n_threads):        # blocks are parsed while the next are read
        X, y = io.read_problem(training_file, zero_based=zero_based)
    _scale_notice(largest_value(X), quiet)
    if folds is not None:
        if len(y) < 2:
            # bad data rather than bad usage: it names the file, exit 1
            raise BsvmError(f"{printable_name(training_file)}: {len(y)} training row: cross "
                            "validation (-v) needs at least 2")
        folds, warning = usable_folds(folds, len(y))
        if warning:
            # even with -q, as svm-train and LIBLINEAR's train print it: the run is not the
            # one asked for
            info(warning, False)
        for label in small_classes(y, folds):
            info(f"warning: class {label:g} has fewer rows than the {folds} folds", quiet)
        with task_progress(f"{folds}-fold cross validation", total=folds, quiet=quiet) as update:
            if probability == "1":
                # each fold model with its probabilities, scored by them (as svm-train)
                from budgetsvm.probability import cross_validation_with_probability
                predicted = cross_validation_with_probability(
                    X, y, params, folds, on_fold=lambda f: update(advance=1))
            else:
                predicted = cross_validation(X, y, params, folds,
                                             on_fold=lambda f: update(advance=1))
        accuracy = 100.0 * np.mean(predicted == y)
        click.echo("Cross Validation Accuracy = %g%%" % accuracy)
        return
    model_io.check_format(model_format, params.solver, np.unique(y))   # classes from the data
    total = progress_total(params, X.shape[0], len(np.unique(y)))
    rows = []
    with threads.pool(params.n_threads):
        monitor_test = io.read_problem(monitor_test_file, zero_based=zero_based) \
            if monitor_test_file else None
    monitor = rows.append if monitor_file else None
    if probability == "1":
        # the model and the internal folds of the probability fit train at the same time
        from budgetsvm.probability import N_FOLDS, train_with_probability
        with task_progress(f"{params.solver} + probability ({N_FOLDS}-fold "
                           "CV)", total=total, quiet=quiet, transient=False) as update:
            model = train_with_probability(
                X, y, params, callback=lambda it, info_: update(completed=it, info=info_),
                monitor=monitor, monitor_test=monitor_test)
    else:
        with task_progress(params.solver, total=total, quiet=quiet,
                           transient=False) as update:
            model = train(X, y, params,
                          callback=lambda it, info_: update(completed=it, info=info_),
                          monitor=monitor, monitor_test=monitor_test)
    if monitor_file and rows:
        write_monitor_csv(monitor_file, rows)
    elif monitor_file:
        info(f"notice: --monitor: no epoch to record (no solver ran): {monitor_file} is not "
             "written", quiet)
    _print_summary(model, stats, "-" in (model_file, monitor_file), quiet)
    with threads.pool(params.n_threads):         # the weight lines are formatted in threads
        model_io.save_model(model, model_file, format=model_format, zero_based=zero_based)


def _check_monitor_usage(params, monitor_file, monitor_test_file):
    if monitor_test_file == "":
        raise click.UsageError("--monitor-test needs a file name")
    if monitor_test_file and not monitor_file:
        raise click.UsageError("--monitor-test needs --monitor FILE")
    if monitor_file and not solvers.get(params.solver).monitorable:
        raise click.UsageError("--monitor is available for -s " + " and -s ".join(
            n for n in solvers.names() if solvers.get(n).monitorable) + " only")
    check_output_path(monitor_file)


def _scale_notice(largest, quiet):
    notice = scale_notice(largest)
    if notice:
        info(notice, quiet)


def _print_summary(model, stats, stdout_taken, quiet):
    """The end-of-training lines (optimization finished, Objective value, nSV...) go to stdout,
    where LIBSVM and LIBLINEAR print them and scripts grep them, unless stdout carries the
    model (model file -) or the --monitor CSV (stdout_taken: then to stderr); -q suppresses
    them."""
    if quiet:
        return
    for line in summary_lines(model, stats=stats):
        click.echo(line, err=stdout_taken)


def _check_stream_usage(params, training_file, folds, probability, monitor_file):
    """--stream trains BSGD from a re-readable file, without the whole-data features."""
    if not solvers.get(params.solver).streamable:
        raise click.UsageError("--stream is available for -s " + " and -s ".join(
            n for n in solvers.names() if solvers.get(n).streamable) + " only (an online method)")
    if training_file == "-" or is_pipe(training_file) or (
            os.path.exists(training_file) and not os.path.isdir(training_file)
            and not is_regular_file(training_file)):
        # a terminal (/dev/stdin) or a device would be read once per pass, and wait for them
        raise click.UsageError("--stream reads the training file once per epoch (plus a "
                               "first pass): give a file, not -, a pipe or a device")
    for given, option in ((folds is not None, "-v"), (probability == "1", "-b 1"),
                          (monitor_file, "--monitor")):
        if given:
            raise click.UsageError(f"{option} cannot be combined with --stream")


def write_monitor_csv(path, rows):
    """One CSV line per monitored epoch (columns: the union of the rows' keys, in order)."""
    import csv
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with atomic_output(path) as stream:
        writer = csv.DictWriter(stream, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv=None):
    run(command, argv, prog_name="bsvm-train")
