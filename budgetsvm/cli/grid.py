"""bsvm-grid [grid options] [bsvm-train options] training_file — LIBSVM tools/grid.py conventions.

Grid options are parsed here by hand (grid.py's syntax: single-dash words, ``-log2c -5,15,2``
with negative numbers, ``-resume`` with an optional path); everything else is handed to
bsvm-train's own training-option parser, so a pass-through option means exactly what it means
there. The search itself is budgetsvm.grid.run_grid. See docs/GRID.md.
"""
import contextlib
import os
import sys
import warnings

import click

from budgetsvm import grid
from budgetsvm.cli.common import run
from budgetsvm.errors import ParameterError
from budgetsvm.fileio import check_not_an_input, check_output_path, standard_output_alias
from budgetsvm.grid.runners import WorkersDied
from budgetsvm.progress import task_progress

USAGE = """\
Usage: bsvm-grid [grid options] [bsvm-train options] training_file

Cross-validated grid search over C and gamma (LIBSVM tools/grid.py conventions).

Grid options:
  -log2c {begin,end,step | null}  range of log2 C (default -5,15,2); null: do not search C
  -log2g {begin,end,step | null}  range of log2 gamma (default 3,-15,-2); null: bsvm-train's
                                  default gamma. Linear solvers (dcd, acf, ww) search C only.
  -v n                 n-fold cross validation, stratified and seeded by --seed (default 5)
  -b {0|1}             1: every fold's model has its probabilities and predicts the most
                       probable class (bsvm-train -b 1 -v n, as grid.py's -b 1) [0]
  -out {path | null}   result file, one line per point (default <dataset basename>.out)
  -png path            contour plot of the accuracy over log2 C x log2 gamma (matplotlib)
  -resume [path]       reuse the points of an earlier result file (default <dataset>.out);
                       only for the same data, folds and training options
  --budget B1,B2,...   budgeted solvers: search these budgets too (adds budget=<B> to the
                       lines); a single value is bsvm-train's --budget
  -j N, --jobs N       local worker processes (default: number of cores)
  --scheduler tcp://HOST:PORT
                       run the points on a Dask distributed cluster instead
  --shared-path        with --scheduler: workers read training_file at the same path
                       themselves (default: the data are scattered to them)
  --retries N          with --scheduler or -j: retries of a failed task (default 2)
  --connect-timeout S  seconds to wait for the scheduler (default 10)
  --zero-based         read 0-based feature indices
  -q                   quiet: no progress bar or warnings (stdout lines are kept)
  --help               show this message

bsvm-train's training options pass through (all but -c, -g, -v, -b, -q, the model file and
  --stats, --stream, --stream-buffer, --monitor, --monitor-test, --format), e.g.
  -s dcd, -t 2, -B 1, --epochs 10, -w1 2, --seed 3; see bsvm-train --help.
  -n THREADS           threads of every training (bsvm-train's -n; default: the cores
                       divided among the -j workers, 1 with --scheduler)
  -wLABEL WEIGHT       C of class LABEL becomes WEIGHT*C (LIBSVM's form, e.g. -w-1 5;
                       also --class-weight LABEL WEIGHT); repeat it for more classes

Stdout: one line per point `[worker] <log2c> <log2g> <rate> (best c=<C>, g=<g>, rate=<r>)`,
then `best log2c=<x> log2g=<y> rate=<r>` and grid.py's last line `<C> <gamma> <rate>`.
"""

_GRID_WITH_VALUE = {"-log2c", "-log2g", "-v", "-out", "-png", "-gnuplot", "-svmtrain", "-j",
                    "--jobs", "--scheduler", "--retries", "--connect-timeout", "--budget", "-b"}
_METAVAR = "[grid options] [bsvm-train options]"
_GRID_FLAGS = {"--shared-path", "--zero-based", "-q"}


def _int(option, text, minimum):
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise ParameterError(f"{option}: expected an integer, got {text!r}") from None
    if value < minimum:
        raise ParameterError(f"{option}: must be >= {minimum}, got {value}")
    return value


def _budgets(text):
    values = [_int("--budget", part.strip(), 1) for part in text.split(",") if part.strip()]
    if not values:
        raise ParameterError(f"--budget: expected a comma-separated list of budgets, got {text!r}")
    return values


def _without_option(argv, name):
    """argv without the occurrences of option ``name`` and their values."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == name:
            skip = True
        else:
            kept.append(arg)
    return kept


def split_arguments(argv):
    """(grid option dict, pass-through argv, dataset) from bsvm-grid's argv."""
    argv = list(argv)
    if not argv:
        raise click.UsageError("give a training file")
    dataset = argv[-1]
    if dataset.startswith("-") and dataset != "-":
        raise click.UsageError(f"the training file must come last, got option {dataset!r}")
    options = argv[:-1]
    found = {}
    passthrough = []
    i = 0
    while i < len(options):
        arg = options[i]
        name, eq, glued = arg.partition("=")
        if not arg.startswith("--") and name not in _GRID_WITH_VALUE | {"-resume"}:
            name, eq, glued = arg, "", ""      # -w1=2 and such pass through whole
        if arg[:2] in ("-c", "-g") and name not in _GRID_WITH_VALUE:
            # -c 5, and the glued forms bsvm-train's parser takes (-c5, -c.01, -c+1, -g-1)
            raise ParameterError("Use -log2c and -log2g.")
        if arg[:2] in ("-v", "-j", "-b") and len(arg) > 2 and arg[2:].lstrip("+-").isdigit():
            name, eq, glued = arg[:2], "=", arg[2:]          # -v3, -j2 as bsvm-train's -v3
        if name == "-resume":
            if eq:
                found["-resume"] = glued
            elif i + 1 < len(options) and not options[i + 1].startswith("-"):
                found["-resume"] = options[i + 1]
                i += 1
            else:
                found["-resume"] = ""          # the default: <dataset basename>.out
        elif name in _GRID_WITH_VALUE:
            if eq:
                value = glued
            elif i + 1 < len(options):
                value = options[i + 1]
                i += 1
            else:
                # the last word went to the data file: `bsvm-grid data -log2c 1,5,2`?
                raise ParameterError(f"{name} needs a value (the training file comes last, "
                                     f"after every option, as in grid.py)")
            if name == "--budget":
                # the last --budget wins, a list or a single budget (bsvm-train's --budget)
                budgets = _budgets(value)
                found.pop(name, None)
                passthrough = _without_option(passthrough, "--budget")
                if len(budgets) == 1:
                    passthrough += ["--budget", str(budgets[0])]
                else:
                    found[name] = budgets
            else:
                found[name] = value
        elif name in _GRID_FLAGS:
            found[name] = True
        else:
            passthrough.append(arg)
        i += 1
    return found, passthrough, dataset


def _training_parser():
    from budgetsvm.cli.train import training_options

    @click.command(name="bsvm-grid", add_help_option=False, options_metavar=_METAVAR)
    @training_options
    def passthrough(**options):
        return options
    return passthrough


def training_params(passthrough, dataset=None):
    """TrainParams from pass-through bsvm-train options (bsvm-train's own parser and checks);
    dataset: the word taken for the training file, for a hint."""
    from budgetsvm.cli.train import given_options, params_from_options
    from budgetsvm.params import option_notices
    command = _training_parser()
    try:
        with command.make_context("bsvm-grid", list(passthrough)) as ctx:
            params = params_from_options(ctx.params)
            notices = option_notices(params.solver, *given_options(ctx))
    except click.NoSuchOption as exc:
        from budgetsvm.cli.common import long_options
        from budgetsvm.cli.train import command as train_command
        if exc.option_name in long_options(train_command) - long_options(command):
            # --stats, --stream, --monitor, --format...: bsvm-train's, for a model it writes
            raise ParameterError(f"{exc.option_name}: a bsvm-train option that bsvm-grid does "
                                 "not take (a search trains cross-validation folds and writes "
                                 "no model)") from None
        raise
    except click.BadOptionUsage as exc:
        # `bsvm-grid heart -B 1`: the last word, no file, was taken for the data file
        if passthrough and passthrough[-1] == exc.option_name and dataset is not None \
                and dataset != "-" and not os.path.exists(dataset):
            exc.message = (exc.message.rstrip(".") + " (the training file comes last, after "
                           "every option, as in grid.py)")
        raise
    return params, notices


def parse_arguments(argv):
    """GridOptions from bsvm-grid's argv (grid options, bsvm-train options, training file)."""
    found, passthrough, dataset = split_arguments(argv)
    params, notices = training_params(passthrough, dataset)
    title = "stdin" if dataset == "-" else os.path.basename(dataset)
    options = grid.GridOptions(dataset=dataset, params=params)
    if "-log2c" in found:
        options.c_range = grid.parse_range(found["-log2c"], "-log2c")
    if "-log2g" in found:
        options.g_range = grid.parse_range(found["-log2g"], "-log2g")
        options.g_given = options.g_range is not None
    if "-v" in found:
        options.fold = _int("-v", found["-v"], 2)
    out = found.get("-out", f"{title}.out")
    options.out = None if out == "null" else out
    options.png = found.get("-png")
    if "-resume" in found:
        options.resume = found["-resume"] or f"{title}.out"
        if not os.path.exists(options.resume):
            raise ParameterError(f"-resume: file for resumption not found: {options.resume}")
    for role, path in (("-out file", options.out), ("-png file", options.png)):
        check_output_path(path)               # before the search, not after it
        check_not_an_input((role, path), [("data file", dataset)])
    # the plot must not replace the results read (-resume) or written (-out; with -resume it is
    # appended to, so it may be the -resume file)
    check_not_an_input(("-png file", options.png), [("-resume file", options.resume)])
    # /dev/stdout after `> file` or `| command` is written as - (fileio.standard_output_alias):
    # opened by its name, the result lines would overwrite the lines printed before them, and
    # the plot's atomic rename would replace the redirection's file
    options.out = standard_output_alias(options.out)
    options.png = standard_output_alias(options.png)
    check_not_an_input(("-png file", options.png), [("-out file", options.out)])
    options.budgets = found.get("--budget")
    if "-j" in found or "--jobs" in found:
        options.jobs = _int("-j", found.get("-j", found.get("--jobs")), 1)
    options.scheduler = found.get("--scheduler")
    if options.scheduler is not None and not options.scheduler.strip():
        raise ParameterError("--scheduler needs the scheduler's address (HOST:PORT)")
    options.shared_path = bool(found.get("--shared-path"))
    if options.shared_path and not options.scheduler:
        raise ParameterError("--shared-path is a --scheduler option")
    if "--retries" in found:
        options.retries = _int("--retries", found["--retries"], 0)
    if "--connect-timeout" in found:
        if not options.scheduler:
            raise ParameterError("--connect-timeout is a --scheduler option")
        try:
            options.connect_timeout = float(found["--connect-timeout"])
        except ValueError:
            options.connect_timeout = -1.0
        # finite: Dask's timeout parser refuses inf with a long message of its own
        if not 0 < options.connect_timeout < float("inf"):
            raise ParameterError("--connect-timeout must be a positive number of seconds")
    if found.get("-b", "0") not in ("0", "1"):
        raise ParameterError(f"-b: expected 0 or 1, got {found['-b']!r}")
    options.probability = found.get("-b") == "1"
    options.zero_based = bool(found.get("--zero-based"))
    options.quiet = bool(found.get("-q"))
    if "-svmtrain" in found:
        notices.append("notice: -svmtrain is ignored: bsvm-grid trains in-process")
    if found.get("-gnuplot", "null") != "null":
        notices.append("notice: -gnuplot is ignored: use -png FILE for a matplotlib contour plot")
    options.notices = notices
    return options


def find_parameters(dataset_pathname, options="", quiet=True, emit=None):
    """grid.py's ``find_parameters``: options as a string or list of bsvm-grid arguments;
    returns (best_rate, {'c': C, 'g': gamma[, 'budget': B]})."""
    argv = options.split() if isinstance(options, str) else list(options)
    grid_options = parse_arguments(argv + [str(dataset_pathname)])
    if quiet:
        grid_options.quiet = True
    try:
        result = grid.run_grid(grid_options, emit=emit or (lambda line: None))
    except WorkersDied as exc:
        # the usual cause from Python: the spawned workers import the calling script again,
        # and its unguarded call starts workers of its own, which multiprocessing refuses
        raise WorkersDied(f"{exc} (with local worker processes, -j above 1 as by default "
                          "on more than one core, a script must call find_parameters under "
                          "'if __name__ == \"__main__\":', because each worker starts by "
                          "importing the script; or pass -j 1)") from None
    return result.best_rate, result.best


@click.command(context_settings={"help_option_names": [], "ignore_unknown_options": True,
                                 "allow_interspersed_args": False},
               add_help_option=False, options_metavar=_METAVAR)
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="training_file")
def command(args):
    """Cross-validated grid search over C and gamma (see bsvm-grid --help)."""
    if not args:
        raise click.UsageError("give a training file")
    if "--help" in args:
        click.echo(USAGE, nl=False)
        return
    options = parse_arguments(args)
    quiet = options.quiet
    if quiet:
        # -q: no warnings of the library either (a -wLABEL of an absent class, the solvers'
        # notes), as bsvm-train -q; run() restores the filters when the command ends
        warnings.simplefilter("ignore")

    def warn(line):
        if not quiet:
            print(line, file=sys.stderr, flush=True)

    for line in options.notices:
        warn(line)
    real_stdout = sys.stdout

    def emit(line):
        if real_stdout.isatty():
            print(line, flush=True)        # through rich's redirection while the bar shows
        else:
            real_stdout.write(line + "\n")
            real_stdout.flush()

    with contextlib.ExitStack() as stack:
        state = {}

        def progress(done, total, info):
            if "update" not in state:
                state["update"] = stack.enter_context(
                    task_progress(f"grid search, {total} points", total=total, quiet=quiet))
            state["update"](completed=done, info=info)

        grid.run_grid(options, emit=emit, warn=warn, progress=progress)


def main(argv=None):
    from budgetsvm.cli.common import long_options
    grid_long = {name for name in _GRID_WITH_VALUE | _GRID_FLAGS if name.startswith("--")}
    run(command, argv, prog_name="bsvm-grid",
        hint_options=long_options(_training_parser()) | grid_long | {"--help"})
