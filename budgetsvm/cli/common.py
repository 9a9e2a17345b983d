"""What every command shares: LIBSVM-style argv rewriting, exit codes and one-line errors.

Exit status: 0 success, 1 data/model/IO error (one line on stderr, no traceback), 2 usage
error (click's message), 130 interrupted (SIGINT), 143 terminated (SIGTERM).
"""
import contextlib
import errno
import io
import os
import re
import signal
import sys
import threading
import warnings

import click

from budgetsvm import threads
from budgetsvm.cli import SIGNAL_EXITS, _interrupted_while_starting
from budgetsvm.errors import BsvmError, ParameterError, printable
from budgetsvm.fileio import write_failure

_GLUED_WEIGHT = re.compile(r"^-w([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)$")


# True while run() serves a console script, whose process ends with it (see _run)
_ends_the_process = False

# A console script's process ends once Ctrl-C or SIGTERM is handled, so the threads need not
# be joined: items stuck in one long library call are left behind after this many seconds
# (budgetsvm.threads.abandon_stuck_threads_after), and the command stops within a second.
STUCK_THREAD_SECONDS = 0.5


class Terminated(BaseException):
    """Raised by the SIGTERM handler so that atomic writers clean up as for Ctrl-C."""


def rewrite_glued_weights(argv):
    """LIBSVM's ``-w1 2`` / ``-w-1 5`` become ``--class-weight 1 2`` for click (not after
    ``--``, which ends the options: a file may be named -w1)."""
    out = []
    for position, arg in enumerate(argv):
        if arg == "--":
            return out + argv[position:]
        match = _GLUED_WEIGHT.match(arg)
        out += ["--class-weight", match.group(1)] if match else [arg]
    return out


# The signal whose handler ran in this run, if one did: its exception may come out of the
# command as another (see the end of _run)
_signal_received = None


def _on_sigterm(signum, frame):
    global _signal_received
    _signal_received = signal.SIGTERM
    _ignore_signals()
    raise Terminated()


def _on_sigint(signum, frame):
    global _signal_received
    _signal_received = signal.SIGINT
    _ignore_signals()
    raise KeyboardInterrupt


_shown_warnings = set()
_shown_lock = threading.Lock()


def _show_warning(message, category, filename, lineno, file=None, line=None):
    # Each text once per run: a warning of every fold or one-vs-rest model (a -wLABEL for an
    # absent class, with -b 1 or -v) would repeat, as many times as threads happened to race
    # past Python's own once-per-place registry.
    text = f"warning: {message}"
    with _shown_lock:
        if text in _shown_warnings:
            return
        _shown_warnings.add(text)
    click.echo(text, err=True)


def long_options(command):
    """The --long option names of a click command."""
    return {name for param in command.params for name in getattr(param, "opts", ())
            if name.startswith("--")}


def check_single_dash(argv, names):
    """LIBSVM users type ``-epochs 5``; click would read ``-e pochs``. A single-dash word whose
    double-dash form is one of ``names`` is a usage error that says so."""
    for arg in argv:
        if arg == "--":
            break               # file names from here on
        word = arg.split("=", 1)[0]
        if len(word) > 2 and word[0] == "-" and word[1].isalpha() and "-" + word in names:
            raise ParameterError(f"{word}: long options take two dashes: use -{word}")


def run(command, argv=None, prog_name=None, hint_options=()):
    """Run a click command with our error conventions; never returns.

    Usage errors are one line on stderr (exit 2). hint_options: more --long names (besides the
    command's own) for which a single-dash spelling gets a hint. The warning filters a command
    sets (bsvm-train -q) and the one-line display of warnings end with it; so does its SIGTERM
    handler when argv is given (the caller goes on)."""
    previous_sigterm = signal.getsignal(signal.SIGTERM)
    with warnings.catch_warnings():
        try:
            _run(command, argv, prog_name, hint_options)
        finally:
            if argv is not None and previous_sigterm is not None:
                signal.signal(signal.SIGTERM, previous_sigterm)


def _run(command, argv, prog_name, hint_options):
    global _ends_the_process, _signal_received
    _signal_received = None
    # a console script (argv from the command line) exits when this returns; a call with argv
    # (tests, scripts) goes on, and keeps its signal handlers
    _ends_the_process = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    with _shown_lock:
        _shown_warnings.clear()             # once per run, not once per process
    if _ends_the_process:
        threads.abandon_stuck_threads_after(STUCK_THREAD_SECONDS)
    if signal.getsignal(signal.SIGINT) in (_interrupted_while_starting,
                                           signal.default_int_handler):
        # KeyboardInterrupt from here; in the command's own process the first one also
        # ignores the signals that follow, which would break the clean-up with a traceback
        signal.signal(signal.SIGINT, _on_sigint if _ends_the_process
                      else signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)
    warnings.showwarning = _show_warning        # library warnings: one line, no source echo
    if sys.stdout is None:
        # started with standard output closed (`>&-`): what goes there fails as a write
        # error at the first flush, instead of vanishing (a -v result) or a traceback
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(_ClosedOutput()), encoding="ascii")
    try:
        names = long_options(command) | set(hint_options)
        takes_weights = "--class-weight" in names
        if takes_weights:
            argv = rewrite_glued_weights(argv)
        given = list(argv)                      # click's parser consumes argv
        check_single_dash(argv, names)
        # the command itself rather than click's main(), which answers Ctrl-C with a blank
        # line on stderr (closing a terminal's ^C echo) even when stderr is a file or a pipe
        name = prog_name or command.name
        if hasattr(command, "_main_shell_completion"):
            # what main() does first: with _BSVM_TRAIN_COMPLETE=bash_source (a shell's start-up
            # file) click prints the completion script and exits
            command._main_shell_completion({}, name)
        try:
            with command.make_context(name, argv) as ctx:
                command.invoke(ctx)
        except click.exceptions.Exit as exc:     # --help, ctx.exit()
            if exc.exit_code:
                sys.exit(exc.exit_code)
        sys.stdout.flush()                      # a full disk shows here, not at exit
    except click.exceptions.Abort:
        _fail("interrupted", 130)
    except click.UsageError as exc:
        name = prog_name or command.name
        message = exc.format_message().rstrip('.')
        if isinstance(exc, click.NoSuchOption) and exc.option_name == "-w" and takes_weights:
            # -wLABEL with a label that is not a number (-wnan 2): click knows no -w
            glued = next((arg for arg in given if arg.startswith("-w")), "-w")
            message = f"{glued}: the LABEL of -wLABEL WEIGHT must be a number (e.g. -w-1 5)"
        click.echo(printable(f"Usage error: {message} (see {name} --help)"), err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except ParameterError as exc:
        click.echo(printable(f"Usage error: {exc}"), err=True)
        sys.exit(2)
    except BsvmError as exc:
        _fail(str(exc), 1)
    except KeyboardInterrupt:
        if sys.stderr is not None and sys.stderr.isatty():
            click.echo(err=True)                # the terminal echoed ^C without a line end
        _fail("interrupted", 130)
    except EOFError:
        # a compressed input that ends early, where no reader named it (click's main() took
        # it for an interruption)
        _fail("unexpected end of a compressed input (truncated file?)", 1)
    except Terminated:
        _fail("terminated", 143)
    except BrokenPipeError:
        # the reader of our stdout went away (e.g. `| head`): not an error worth a traceback
        _silence_stdout()
        sys.exit(1)
    except MemoryError:
        _fail("out of memory", 1)
    except OSError as exc:
        # files are named by atomic_output; what is left is standard output
        failure = write_failure("<stdout>", exc)
        if failure is None:
            if _signal_received is None:
                raise
            _fail("", 1)                    # the interruption's (see _fail)
        _silence_stdout()
        _fail(str(failure), 1)
    except Exception:
        if _signal_received is None:
            raise
        # the signal's exception came out as another one: Python 3.11 turns an exception
        # raised in a class body's __set_name__ (a module being imported, such as matplotlib
        # for bsvm-grid -png) into a RuntimeError
        _fail("", 1)
    # the work is done and written: the exit is not interrupted, not even by a signal that
    # arrives while the handlers are being replaced (it raised here, outside the try above:
    # a traceback and exit status -2 or 1)
    while True:
        try:
            _ignore_signals()
            break
        except (KeyboardInterrupt, Terminated):
            continue
    _exit(0)


class _ClosedOutput(io.RawIOBase):
    """The standard output of a process started without one: the first write fails (EBADF),
    the later ones (what is left in the buffer when Python exits) are dropped."""

    failed = False

    def writable(self):
        return True

    def write(self, data):
        if self.failed:
            return len(data)
        self.failed = True
        raise OSError(errno.EBADF, "standard output is closed")


def _silence_stdout():
    # what is still buffered for the failed stdout must not fail again at exit
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        sys.stdout = open(os.devnull, "w")


def _ignore(signum, frame):
    pass


def _ignore_signals():
    """From the report of the end on: a second Ctrl-C or a SIGTERM a moment after the first
    (a double key press, a supervisor's follow-up) would interrupt the message or the exit's
    wait for the worker threads with a traceback."""
    if _ends_the_process:
        for signum in (signal.SIGINT, signal.SIGTERM):
            # a handler that does nothing, not SIG_IGN: a signal already caught but not yet
            # handled would find SIG_IGN and print "ignored due to race condition"
            signal.signal(signum, _ignore)


def _fail(message, status):
    if _signal_received is not None:
        # after Ctrl-C or SIGTERM, whatever error ends the run (one of the interrupted work's
        # clean-up, or the signal's exception changed into another) reports the interruption
        message, status = SIGNAL_EXITS[_signal_received]
    _ignore_signals()
    # one line: a newline or other control character inside (a file name's) is escaped, not
    # taken as the end of the message; a stderr that cannot take it (a pipe whose reader has
    # gone) must not change the exit status
    with contextlib.suppress(OSError):
        click.echo(printable(message.strip()) if message.strip() else "error", err=True)
    _exit(status)


def _exit(status):
    """sys.exit(status); in the command's own process, os._exit after flushing the standard
    streams. The clean-up (temporary files, worker processes) has run as the exception unwound
    (or the work has finished); the interpreter's finalisation would restore the default signal
    handlers, so a signal in its last moments would end the process as killed (-2, -15)
    instead of with this status, and threads still inside an interrupted loop need no join."""
    if _ends_the_process:
        _release_multiprocessing_semaphores()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)
    sys.exit(status)


def _release_multiprocessing_semaphores():
    """What multiprocessing does at a normal interpreter exit and os._exit skips: its exit-time
    finalizers (priority >= 0), which unlink the named semaphores of a process pool still
    referenced, such as bsvm-grid's after Ctrl-C or SIGTERM interrupted its shutdown. Left
    behind, multiprocessing's resource tracker reported them as leaked semaphore objects, with
    a warning after 'interrupted'. In a thread given 0.5 s, so that a lock held by an
    interrupted thread cannot hold up the exit."""
    util = sys.modules.get("multiprocessing.util")
    run_finalizers = getattr(util, "_run_finalizers", None)
    if run_finalizers is None:
        return
    finalizers = threading.Thread(target=run_finalizers, args=(0,), daemon=True)
    with contextlib.suppress(Exception):
        finalizers.start()
        finalizers.join(0.5)


def info(message, quiet):
    """Diagnostics go to stderr so that stdout carries only results."""
    if not quiet:
        click.echo(message, err=True)
