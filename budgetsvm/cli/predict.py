"""bsvm-predict [options] test_file model_file output_file — svm-predict's conventions."""
import warnings

import click
import numpy as np

from budgetsvm import io, model_io, threads
from budgetsvm.cli.common import info, run
from budgetsvm.errors import BsvmError, DataFormatError
from budgetsvm.fileio import (atomic_output, check_not_an_input, check_output_path,
                              display_name, standard_output_alias)
from budgetsvm.labels import format_label
from budgetsvm.model import nan_rows_message
from budgetsvm.probability import has_probability, is_logistic, predict_with_proba
from budgetsvm.progress import task_progress

# Text parsed per block: the rows, their predictions and the output lines of a block are alive
# while it is predicted (a few times this size; with -n, up to twice as many blocks as threads
# at a time), whatever the size of the test file.
PREDICT_BLOCK_BYTES = 1 << 20


@click.command(context_settings={"help_option_names": ["--help"], "max_content_width": 100})
@click.option("-b", "probability", type=click.Choice(["0", "1"]), default="0",
              help="1: write a 'labels ...' header and per-class probabilities, as svm-predict "
                   "(the label is then the most probable class) [0]")
@click.option("-q", "quiet", is_flag=True, help="quiet mode: no accuracy line, no progress")
@click.option("--zero-based", is_flag=True,
              help="read 0-based feature indices (the test file's, and a LIBSVM model's: its "
                   "indices are those of its training data)")
@click.option("-n", "n_threads", type=click.IntRange(min=1), metavar="THREADS",
              help="worker threads predicting blocks of the test file [default: the cores "
                   "available]; the predictions do not depend on it")
@click.argument("test_file")
@click.argument("model_file")
@click.argument("output_file")
def command(probability, quiet, zero_based, n_threads, test_file, model_file, output_file):
    """Predict TEST_FILE with MODEL_FILE and write one label per line to OUTPUT_FILE.

    Any of the three may be - (stdin/stdout; only one of the inputs). The accuracy line goes to
    stdout, or to stderr when the predictions themselves go to stdout.
    """
    if quiet:
        # numpy's notes on overflowing values: -q means no diagnostics (as bsvm-train -q)
        warnings.filterwarnings("ignore", category=RuntimeWarning)
    if test_file == "-" and model_file == "-":
        raise click.UsageError("TEST_FILE and MODEL_FILE cannot both be standard input")
    # the file a name stands for, /dev/stdout's too (`>> test_file`), is checked before the
    # name becomes -
    check_not_an_input(("predictions", output_file),
                       [("test file", test_file), ("model file", model_file)])
    output_file = standard_output_alias(output_file)
    check_output_path(output_file)
    model = model_io.load_model(model_file, zero_based=zero_based)
    if probability == "1" and not has_probability(model):
        how = ("a LIBLINEAR model needs logistic regression (its -s 0, 6 or 7)"
               if model.solver == "liblinear" else "train it with -b 1")
        raise BsvmError(f"{display_name(model_file)}: the model has no probability information: "
                        f"{how}, or predict without -b 1")
    if probability == "0" and has_probability(model) and not is_logistic(model):
        # svm-predict's notice (LIBLINEAR's predict gives none for its logistic regressions)
        info("notice: the model supports probability estimates; add -b 1 to write them", quiet)

    def predict_block(X, y):
        # One block of the test file: its output lines and how many it got right. The
        # blocks are parsed and predicted in the worker threads while this thread reads the
        # next ones (io.map_problem_chunks).
        if probability == "1":
            # svm-predict -b 1: "predicted p1 ... pk", all with %g (the label too, unlike
            # the plain output's %.17g).
            predicted, P = predict_with_proba(model, X)
            text = "".join("%g" % v + "".join(" %g" % p for p in row) + "\n"
                           for v, row in zip(predicted.tolist(), P.tolist()))
            undefined = int(np.isnan(P).any(axis=1).sum())
        else:
            F = model.decision_function(X)
            predicted = model.labels_from(F)
            text = "".join(format_label(v) + "\n" for v in predicted.tolist())
            undefined = int(np.isnan(F).any(axis=1).sum())
        return text, int((predicted == y).sum()), len(y), undefined

    correct = total = undefined = 0
    with threads.pool(n_threads), task_progress("predicting", quiet=quiet) as update, \
            atomic_output(output_file) as out:
        # The test file is streamed block by block: memory does not grow with its size. The
        # -b 1 header goes out with the first block, so that a test file without rows leaves
        # nothing on standard output either (a file output is atomic anyway).
        header = "labels" + "".join(" " + format_label(v) for v in model.labels.tolist()) + \
            "\n" if probability == "1" else ""
        with io.map_problem_chunks(test_file, predict_block, zero_based,
                                   PREDICT_BLOCK_BYTES) as results:
            for text, right, rows, nan_rows in results:
                out.write(header + text)
                header = ""
                correct += right
                total += rows
                undefined += nan_rows
                update(completed=total, info=f"{total} rows")
        if total == 0:
            raise DataFormatError(test_file, None, "no data (the file is empty or has only "
                                  "comments)")
    if undefined:
        # LIBSVM and LIBLINEAR predict such rows silently (as the first or last label)
        info("warning: " + nan_rows_message(undefined, "test row(s)"), quiet)
    if not quiet:
        accuracy = 100.0 * correct / total if total else 0.0
        # LIBLINEAR's predict prints the line without svm-predict's "(classification)"
        suffix = "" if model.solver == "liblinear" else " (classification)"
        click.echo("Accuracy = %g%% (%d/%d)%s" % (accuracy, correct, total, suffix),
                   err=output_file == "-")


def main(argv=None):
    run(command, argv, prog_name="bsvm-predict")
