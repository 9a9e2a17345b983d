"""What every command shares: LIBSVM-style argv rewriting, exit codes and one-line errors.

Exit status: 0 success, 1 data/model/IO error (one line on stderr, no traceback), 2 usage
error (click's message), 130 interrupted (SIGINT), 143 terminated (SIGTERM).
"""
import os
import re
import signal
import sys
import warnings

import click

from budgetsvm.errors import BsvmError, ParameterError

_GLUED_WEIGHT = re.compile(r"^-w([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)$")


class Terminated(BaseException):
    """Raised by the SIGTERM handler so that atomic writers clean up as for Ctrl-C."""


def rewrite_glued_weights(argv):
    """LIBSVM's ``-w1 2`` / ``-w-1 5`` become ``--class-weight 1 2`` for click."""
    out = []
    for arg in argv:
        match = _GLUED_WEIGHT.match(arg)
        out += ["--class-weight", match.group(1)] if match else [arg]
    return out


def _on_sigterm(signum, frame):
    raise Terminated()


def _show_warning(message, category, filename, lineno, file=None, line=None):
    click.echo(f"warning: {message}", err=True)


def run(command, argv=None, prog_name=None):
    """Run a click command with our error conventions; never returns."""
    argv = sys.argv[1:] if argv is None else list(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    warnings.showwarning = _show_warning        # library warnings: one line, no source echo
    try:
        command.main(args=rewrite_glued_weights(argv), prog_name=prog_name,
                     standalone_mode=False)
    except click.exceptions.Abort:
        _fail("interrupted", 130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except ParameterError as exc:
        click.echo(f"Usage error: {exc}", err=True)
        sys.exit(2)
    except BsvmError as exc:
        _fail(str(exc), 1)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Terminated:
        _fail("terminated", 143)
    except BrokenPipeError:
        # the reader of our stdout went away (e.g. `| head`): not an error worth a traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    except MemoryError:
        _fail("out of memory", 1)
    sys.exit(0)


def _fail(message, status):
    click.echo(f"{message.splitlines()[0] if message else 'error'}", err=True)
    sys.exit(status)


def info(message, quiet):
    """Diagnostics go to stderr so that stdout carries only results."""
    if not quiet:
        click.echo(message, err=True)
