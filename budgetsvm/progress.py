"""Progress display on stderr with rich; silent with -q or when stderr is not a terminal.

Solvers know nothing about terminals: they call a callback, which this module turns into a
rich progress bar (the print-hook idea of LIBLINEAR's set_print_string_function).

rich is imported only when a bar is shown: with -q, or when stderr is not a terminal (pipes,
scripts, benchmarks), its import would be a tenth of the command's start-up for nothing."""
import contextlib
import sys


def progress_enabled(quiet):
    return not quiet and sys.stderr.isatty()


@contextlib.contextmanager
def task_progress(description, total=None, quiet=False, transient=True):
    """Yield update(completed=None, advance=None, info=None, total=None); a no-op when
    disabled. Without a total (unknown or unlimited) the bar pulses and the percentage and
    remaining time stay blank; the info text (epoch, iteration, violation...) still shows.
    transient=False leaves the last state on the terminal (training's final epoch and time)."""
    if not progress_enabled(quiet):
        yield lambda **kwargs: None
        return
    from rich.console import Console
    from rich.table import Column
    from rich.progress import (BarColumn, Progress, TaskProgressColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)
    # On a narrow terminal the info text is cut, never the bar or the times (rich shrinks the
    # columns that may wrap).
    fixed = {"no_wrap": True}
    columns = [TextColumn("[bold]{task.description}", table_column=Column(**fixed)),
               BarColumn(bar_width=16, table_column=Column(**fixed)), TaskProgressColumn(table_column=Column(**fixed)),
               TimeElapsedColumn(table_column=Column(min_width=7, **fixed)),
               TextColumn("eta", table_column=Column(**fixed)),
               TimeRemainingColumn(table_column=Column(min_width=7, **fixed)),
               TextColumn("{task.fields[info]}",
                          table_column=Column(overflow="ellipsis"))]
    console = Console(file=sys.stderr, highlight=False, soft_wrap=True)
    # rich sends what is printed to stdout while the bar shows through its console, to stderr:
    # only right when stdout is the terminal too; a pipe or file would lose the results
    with Progress(*columns, console=console, transient=transient,
                  redirect_stdout=sys.stdout.isatty()) as progress:
        task = progress.add_task(description, total=total, info="")
        phase = [""]

        def update(completed=None, advance=None, info=None, total=None):
            # The bar is redrawn ten times a second; when the phase (the info's first word:
            # first pass, epoch, class, iter, refit) changes, the last state of the old one is
            # drawn first, so that it is always seen (epoch E/E at 100% before the refit).
            if info is not None and (info.split() or [""])[0] != phase[0]:
                if phase[0]:
                    progress.refresh()
                phase[0] = (info.split() or [""])[0]
            fields = {} if info is None else {"info": info}
            if total is not None:
                fields["total"] = total
            if completed is not None:
                progress.update(task, completed=completed, **fields)
            elif advance is not None:
                progress.update(task, advance=advance, **fields)
            elif fields:
                progress.update(task, **fields)

        yield update
