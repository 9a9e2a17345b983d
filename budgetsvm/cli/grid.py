"""bsvm-grid: cross-validated grid search over C and gamma (placeholder until its issue lands)."""
import click

from budgetsvm.cli.common import run


@click.command(context_settings={"help_option_names": ["--help"],
                                 "ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def command(args):
    """Grid search over C and gamma (not yet available in this version)."""
    raise click.UsageError("bsvm-grid is not yet available in this version; "
                           "use bsvm-train -v FOLDS for one point")


def main(argv=None):
    run(command, argv, prog_name="bsvm-grid")
