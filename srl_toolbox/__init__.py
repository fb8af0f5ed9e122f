"""srl-toolbox: what every package uses (files: atomic saves; cli: the parser and shared flags; errors; settings: a
command's flags as dataclass fields; plugins, locks, devices, signals, progress, plots...), below all of them. This
module holds the distribution's version, defined once here, and the one line a Ctrl-C during a command's start-up
prints.

setup.py reads ``__version__`` from this file (without importing it), and rl_baselines, srl_models, environments
and replay re-export it, so ``python -m rl_baselines.train --version`` and ``pip show srl-toolbox`` always agree.
This package sits below every other one and imports none of the project's modules; every package's ``__init__``
imports it before anything else, so it runs before a command's module imports its libraries (seconds of torch,
gymnasium, pybullet...).

A Ctrl-C in those seconds comes before the command's :func:`srl_toolbox.cli.runCommand`, which turns a later one into
``Interrupted`` (exit 130). In a process started as ``python -m <package>.<command>`` of the project's packages (and
only there: a program that imports them keeps Python's own handling), :func:`interruptedHook` is ``sys.excepthook``:
a Ctrl-C that no code caught prints that same line, ``Interrupted``, instead of a traceback of the imports, and the
interpreter then ends as Python does for one (by SIGINT: 130 in a shell); any other exception is printed as before.
Such a process started with SIGINT ignored (``cmd &`` in a shell script) takes it from that moment on
(:func:`takeIgnoredSigint`).

Importing it also makes OpenMP's threads (torch's intra-op threads on the CPU: libgomp) wait passively
(:func:`passiveOpenMP`): ``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets ``OMP_WAIT_POLICY`` or
``GOMP_SPINCOUNT``. A waiting thread then sleeps instead of spinning, so that processes whose threads together
outnumber the cores (two trainings at once, each with every core) do not spin away each other's time. It takes effect
in a process that had not loaded torch yet (every command, the processes they start) and changes no result (the
threads' sums are split as before).
"""
from __future__ import annotations

import os
import signal
import sys
from collections.abc import MutableMapping, Sequence
from types import TracebackType

__version__ = "0.2.0.dev0"

# The packages whose modules are commands (``python -m <package>.<module>``)
COMMAND_PACKAGES = ("benchmarks", "environments", "replay", "rl_baselines", "srl_models", "srl_toolbox")
# The variables that say how OpenMP's idle threads wait: the OpenMP standard's and libgomp's spin count.
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
# Options of the interpreter that take the next argument as their value
_OPTIONS_WITH_VALUE = ("-W", "-X")


def commandModule(argv: Sequence[str]) -> str | None:
    """
    :param argv: the interpreter's command line (``sys.orig_argv``)
    :return: the module of ``python [options] -m MODULE ...``, None for a script, ``-c`` or an interactive session
    """
    arguments = iter(argv[1:])
    for argument in arguments:
        if argument == "-m":
            return next(arguments, None)
        if argument.startswith("-m"):
            return argument[2:]
        if argument in _OPTIONS_WITH_VALUE:
            next(arguments, None)
        elif argument == "-" or argument.startswith("-c") or not argument.startswith("-"):
            return None  # stdin, -c, or a script
    return None


def isProjectCommand(argv: Sequence[str]) -> bool:
    """:return: whether ``argv`` (``sys.orig_argv``) runs a module of :data:`COMMAND_PACKAGES` with ``-m``"""
    module = commandModule(argv)
    return module is not None and module.split(".")[0] in COMMAND_PACKAGES


def passiveOpenMP(environ: MutableMapping[str, str]) -> bool:
    """
    :param environ: a process's environment (``os.environ``), set before torch loads OpenMP
    :return: whether ``OMP_WAIT_POLICY=PASSIVE`` was set in it: when none of :data:`WAIT_VARIABLES` is set (a user's
        own choice, an empty value included, is kept)
    """
    if any(name in environ for name in WAIT_VARIABLES):
        return False
    environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return True


def interruptedHook(kind: type[BaseException], value: BaseException, traceback: TracebackType | None) -> None:
    """
    ``sys.excepthook`` of a project command (installed only over Python's own): an uncaught KeyboardInterrupt prints
    ``Interrupted`` (runCommand's line); any other exception is printed by Python's hook.
    """
    if issubclass(kind, KeyboardInterrupt):
        print("Interrupted", file=sys.stderr, flush=True)
    else:
        sys.__excepthook__(kind, value, traceback)


def takeIgnoredSigint() -> bool:
    """
    In a command started with SIGINT ignored (``cmd &`` in a shell script without job control): take it from here, by
    Python's own handler, as :func:`srl_toolbox.signals.ctrlCTaken` does once the command runs, so that a
    ``kill -INT`` in the seconds the command imports its libraries stops it.

    :return: whether SIGINT was ignored (and is now taken)
    """
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        return False
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return True


if isProjectCommand(getattr(sys, "orig_argv", ())):
    takeIgnoredSigint()
    if sys.excepthook is sys.__excepthook__:
        sys.excepthook = interruptedHook

passiveOpenMP(os.environ)
