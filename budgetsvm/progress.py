"""Progress display on stderr with rich; silent with -q or when stderr is not a terminal.

Solvers know nothing about terminals: they call a callback, which this module turns into a
rich progress bar (the print-hook idea of LIBLINEAR's set_print_string_function)."""
import contextlib
import sys

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)


def stderr_console():
    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


def progress_enabled(quiet):
    return not quiet and sys.stderr.isatty()


@contextlib.contextmanager
def task_progress(description, total=None, quiet=False):
    """Yield update(completed=None, advance=None, info=None); a no-op when disabled."""
    if not progress_enabled(quiet):
        yield lambda **kwargs: None
        return
    columns = [SpinnerColumn(), TextColumn("[bold]{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
    columns += [TimeElapsedColumn(), TextColumn("{task.fields[info]}")]
    with Progress(*columns, console=stderr_console(), transient=True) as progress:
        task = progress.add_task(description, total=total, info="")

        def update(completed=None, advance=None, info=None):
            fields = {} if info is None else {"info": info}
            if completed is not None:
                progress.update(task, completed=completed, **fields)
            elif advance is not None:
                progress.update(task, advance=advance, **fields)
            elif fields:
                progress.update(task, **fields)

        yield update
