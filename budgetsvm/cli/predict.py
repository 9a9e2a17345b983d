"""bsvm-predict [options] test_file model_file output_file — svm-predict's conventions."""
import click

from budgetsvm import io, model_io
from budgetsvm.cli.common import run
from budgetsvm.errors import DataFormatError
from budgetsvm.fileio import atomic_output
from budgetsvm.labels import format_label
from budgetsvm.progress import task_progress


@click.command(context_settings={"help_option_names": ["--help"], "max_content_width": 100})
@click.option("-b", "probability", type=click.Choice(["0"]), default="0",
              help="probability estimates (not available yet in this version)")
@click.option("-q", "quiet", is_flag=True, help="quiet mode: no accuracy line, no progress")
@click.option("--zero-based", is_flag=True, help="read 0-based feature indices")
@click.argument("test_file")
@click.argument("model_file")
@click.argument("output_file")
def command(probability, quiet, zero_based, test_file, model_file, output_file):
    """Predict TEST_FILE with MODEL_FILE and write one label per line to OUTPUT_FILE.

    Any of the three may be - (stdin/stdout; only one of the inputs). The accuracy line goes to
    stdout, or to stderr when the predictions themselves go to stdout.
    """
    if test_file == "-" and model_file == "-":
        raise click.UsageError("TEST_FILE and MODEL_FILE cannot both be standard input")
    model = model_io.load_model(model_file)
    correct = total = 0
    with task_progress("predicting", quiet=quiet) as update, \
            atomic_output(output_file) as out:
        # The test file is streamed block by block: memory does not grow with its size.
        for X, y in io.iter_problem_chunks(test_file, zero_based=zero_based):
            predicted = model.predict(X)
            out.write("".join(format_label(v) + "\n" for v in predicted.tolist()))
            correct += int((predicted == y).sum())
            total += len(y)
            update(completed=total, info=f"{total} rows")
        if total == 0:
            raise DataFormatError(test_file, None, "no data (the file is empty or has only "
                                  "comments)")
    if not quiet:
        accuracy = 100.0 * correct / total if total else 0.0
        click.echo("Accuracy = %g%% (%d/%d) (classification)" % (accuracy, correct, total),
                   err=output_file == "-")


def main(argv=None):
    run(command, argv, prog_name="bsvm-predict")
