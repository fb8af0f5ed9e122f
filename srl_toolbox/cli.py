"""Command-line plumbing of every srl-toolbox command: one parser class, one-line errors with exit code 2.

- :class:`CLIParser`: an ``argparse.ArgumentParser`` whose errors raise :class:`UsageError` (one line, no usage
  block; an unrecognized flag close to one of the command's is followed by the flag meant: :func:`flagsMeant`, one
  of another tool's that the command names, such as rl_zoo3's, by its equivalent: :meth:`CLIParser.addFlagHints`)
  and which offers ``--version``;
- :func:`runCommand`: runs a command's ``main``, printing a UsageError as ``error: ...`` and exiting with code 2, a
  :class:`CommandFailed` as ``error: ...`` with code 1, an OS error that the environment caused (a full or read-only
  disk: srl_toolbox.files.ENVIRONMENT_ERRNOS) as ``error: could not write PATH: REASON`` with code 1, a Ctrl-C as
  ``Interrupted`` (130) and a SIGTERM, stopping the command as a Ctrl-C does, as ``Terminated`` (143), and warnings
  as one ``warning: ...`` line (srl_toolbox.terminal holds a command's warnings until its checks pass, so that a
  refused command prints its error alone);
- argparse types that name the bad value and the valid range (:func:`positiveInt`, :func:`nonNegativeInt`,
  :func:`seedNumber`, :func:`intInRange`, :func:`portNumber`, :func:`envCount`, :func:`nonEmptyText`),
  :func:`checkImageShape` (the camera's ``--img-shape`` of every command), :func:`checkWritableFolder` and
  :func:`checkOutputFile` / :func:`checkOutputFiles` (which also refuse a dangling symbolic link on the path, and a
  name longer than the file system allows once srl-toolbox adds its temporary suffix: :func:`checkNameLength`);
- shared argument groups (:func:`addSeedArgument`, :func:`addProgressArgument`, :func:`addVisdomArguments`), so that a
  flag means the same in every command.

Invariant: validation raises before anything is written; nothing here writes a file.
"""
from __future__ import annotations

import argparse
import difflib
import errno
import itertools
import math
import os
import re
import shlex
import shutil
import sys
import tempfile
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn

from srl_toolbox import __version__
from srl_toolbox.errors import CommandFailed as CommandFailed  # in errors (below files, which raises it): re-exported
from srl_toolbox.errors import UsageError as UsageError
from srl_toolbox.errors import oneLineWarning
from srl_toolbox.files import TEMPORARY_NAME_EXTRA, environmentError
from srl_toolbox.signals import ctrlCTaken, sigtermAsCtrlC
from srl_toolbox.terminal import discardStdout, showAboveBars

USAGE_EXIT_CODE = 2
# The exit code of a command stopped by a Ctrl-C (128 + SIGINT, as a shell reports it).
INTERRUPTED_EXIT_CODE = 130
# The exit code of a command stopped by SIGTERM (128 + SIGTERM), which it handles as a Ctrl-C
TERMINATED_EXIT_CODE = 143
# Seeds are what numpy.random.seed accepts (SB3 seeds numpy, random and torch with the same number).
MAX_SEED = 2**32 - 1
# The largest count a flag takes (steps, episodes, windows): beyond it NumPy's int64 arithmetic overflows.
MAX_COUNT = 10**15
# The most parallel envs a command starts (one process each): a typo such as 1e30 would exhaust the memory.
MAX_ENVS = 256
# The most frames --num-stack stacks: each multiplies the observation, and the rollout or replay buffer holds every
# observation (a typo such as 100000 asked for terabytes after the run folder was written).
MAX_STACK = 64
# A camera image's sides (--img-shape 3 H W of every command): smaller ones lose the scene, and a typo such as 1e5
# would allocate gigabytes per frame.
MIN_IMAGE_SIDE = 16
MAX_IMAGE_SIDE = 4096
IMAGE_SIDES = f"{MIN_IMAGE_SIDE}..{MAX_IMAGE_SIDE}"
# A file name's longest length in bytes where the file system does not say (os.pathconf's PC_NAME_MAX)
DEFAULT_NAME_MAX = 255
# The errnos reported as "could not write" (the others of ENVIRONMENT_ERRNOS, such as a refused permission, may come
# from reading: "could not use")
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})


class CLIParser(argparse.ArgumentParser):
    """
    An ArgumentParser whose errors are one line (no usage block) and exit with code 2. A parser with ``-h`` also
    has ``--version`` (srl-toolbox's version; parsers built without help are internal first passes).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.flag_hints: dict[str, str] = {}
        self.value_choices: dict[str, str] = {}  # flag -> the values it takes, for a flag given without one
        self._command_line: list[str] = []  # the arguments being parsed, for error()
        if self.add_help:
            self.add_argument("--version", action="version", version=f"%(prog)s (srl-toolbox {__version__})",
                              help="print the srl-toolbox version and exit")

    def addFlagHints(self, hints: Mapping[str, str]) -> None:
        """:param hints: flags the command does not take but users of another tool type (rl_zoo3's ``-n``), each
            with what its refusal says instead of a close flag (``rl_zoo3's -n is --num-timesteps here``)"""
        self.flag_hints.update(hints)

    def addValueChoices(self, choices: Mapping[str, tuple[str, Iterable[str]]]) -> None:
        """:param choices: flags whose values are checked after parsing (no argparse ``choices``: a registry's
            names, refused with a close match), each with what they are and the names (``"--algo": ("algorithms",
            names)``), named when the flag is given without a value"""
        self.value_choices.update({flag: f"{kind}: {', '.join(names)}" for flag, (kind, names) in choices.items()
                                   if names})

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:
        # kept for error(): a missing required flag is refused before the unrecognized ones are named
        self._command_line = list(sys.argv[1:] if args is None else args)
        # a hinted flag argparse would take as an abbreviation (train's --render: --renderer) is refused with its hint
        options = self._option_string_actions
        abbreviated = {flag for flag in self.flag_hints if flag.startswith("--") and flag not in options
                       and any(option.startswith(flag) for option in options)} if self.allow_abbrev else set()
        for arg in itertools.takewhile(lambda arg: arg != "--", self._command_line):
            if str(arg).split("=", 1)[0] in abbreviated:
                self.error(f"{UNRECOGNIZED}{arg}")
        return super().parse_known_args(args, namespace)

    def _hintsFor(self, args: Sequence[str]) -> list[str]:
        """:return: the hints of the flags among ``args`` (``--flag`` or ``--flag=value``) that have one, once each"""
        flags = [str(arg).split("=", 1)[0] for arg in args]
        return list(dict.fromkeys(self.flag_hints[flag] for flag in flags if flag in self.flag_hints))

    def error(self, message: str) -> NoReturn:
        if message.startswith(UNRECOGNIZED):
            args = message.removeprefix(UNRECOGNIZED).split()
            meant = flagsMeant([arg for arg in args if arg.split("=", 1)[0] not in self.flag_hints],
                               self._option_string_actions)
            said = self._hintsFor(args) + ([f"did you mean {meant}?"] if meant else [])
            message += f" ({'; '.join(said)})" if said else ""
        elif message.startswith(REQUIRED):  # another tool's spelling of the flag missing (rl_zoo3's -f for --log-dir)
            said = self._hintsFor(self._command_line)
            message += f" ({'; '.join(said)})" if said else ""
        elif missing := _MISSING_VALUE.match(message):
            # a flag given without its value names the values it takes, as argparse's "invalid choice" does
            action = self._option_string_actions.get(missing.group(1))
            named = [self.value_choices[flag] for flag in getattr(action, "option_strings", ())
                     if flag in self.value_choices]
            if choices := getattr(action, "choices", None):
                message += f" (choose from {', '.join(repr(str(choice)) for choice in choices)})"
            elif named:
                message += f" ({named[0]})"
        raise UsageError(message)


def zooFlagHints(zoo_flags: Mapping[tuple[str, ...], str]) -> dict[str, str]:
    """
    :param zoo_flags: rl_zoo3's spellings of a flag that a command does not take -> what to give instead (a flag or
        a command), or why none is needed
    :return: each spelling -> its refusal's hint for :meth:`CLIParser.addFlagHints` (``rl_zoo3's -n/--n-timesteps
        is --num-timesteps here``, ``rl_zoo3's --n-eval-envs: not offered: ...``)
    """
    return {flag: f"rl_zoo3's {'/'.join(flags)}" + (f" is {instead} here" if instead.startswith(("-", "python"))
                                                    else f": {instead}")
            for flags, instead in zoo_flags.items() for flag in flags}


UNRECOGNIZED = "unrecognized arguments: "  # argparse's message for arguments no option takes
REQUIRED = "the following arguments are required: "  # argparse's message for required flags not given
WINDOW_HINT = "no window opens here: python -m replay.enjoy_baselines --log-dir RUN --render plays an agent in one"
# argparse's message for a flag given without its value (its first spelling: "-c/--continuous" names -c)
_MISSING_VALUE = re.compile(r"argument ([^\s/:]+)(?:/\S+)?: expected (?:one|at least one|\d+) arguments?$")


def flagsMeant(args: Sequence[str], options: Iterable[str]) -> str:
    """
    :param args: command-line arguments that no option took
    :param options: the option strings of the command
    :return: the long options closest to the long flags among ``args`` (``--algo`` for ``--algos``, ``--env`` for
        ``--envs=X``), joined by `` / ``; '' when none is close (difflib ratio 0.75 on the names without dashes).
        A flag's negation is never offered for it (``--render`` for ``--no-render``, or the reverse): it means the
        opposite.
    """
    names = {option[2:]: option for option in sorted(options) if option.startswith("--")}
    meant = []
    for arg in args:
        if not arg.startswith("--"):
            continue
        name = arg.split("=", 1)[0][2:]
        close = [match for match in names if f"no-{match}" != name and f"no-{name}" != match]
        meant += [names[match] for match in difflib.get_close_matches(name, close, n=1, cutoff=0.75)]
    return " / ".join(dict.fromkeys(meant))


def runCommand(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None = None) -> NoReturn:
    """
    Run a command's ``main``, turning UsageError into ``error: ...`` on stderr and exit code 2, CommandFailed into
    ``error: ...`` and exit code 1, and a Ctrl-C that the command does not handle itself into ``Interrupted`` and
    exit code 130 (no traceback). SIGTERM (``kill``, ``timeout``, a batch scheduler) stops a command that installs
    no handler of its own as a Ctrl-C does (:func:`srl_toolbox.signals.sigtermAsCtrlC`: the same clean-up runs):
    ``Terminated`` and exit code 143, or the command's own lines and 143 where it returns 130 for the interrupt. A
    process started with SIGINT ignored (``cmd &`` in a shell script without job control) stops on one all the same
    (:func:`srl_toolbox.signals.ctrlCTaken`).
    Warnings print as one line each, ``warning: <message>`` (``warning: <Category>: <message>`` for a skipped
    plugin's: :func:`srl_toolbox.errors.oneLineWarning`), above any progress bar.

    :param main: the command's main function
    :param argv: its arguments (default: sys.argv[1:])
    """
    # one line per warning, whatever the library wrote (SB3's minibatch advice spans three); the categories shown
    # named (a skipped plugin's, whenever a registry loads) keep their name
    warnings.formatwarning = lambda message, category, *args, **kwargs: oneLineWarning(message, category)
    warnings.showwarning = showAboveBars(warnings.showwarning)
    with sigtermAsCtrlC() as termination:
        try:
            with ctrlCTaken():
                code = main(argv)
        except UsageError as error:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(USAGE_EXIT_CODE)
        except CommandFailed as error:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(1)
        except KeyboardInterrupt:
            print("Terminated" if termination.received else "Interrupted", file=sys.stderr)
            sys.exit(TERMINATED_EXIT_CODE if termination.received else INTERRUPTED_EXIT_CODE)
        except BrokenPipeError:  # the output was piped into a reader that stopped (`| head`): end quietly
            discardStdout()
            sys.exit(1)
        except Exception as error:
            found = environmentError(error)
            if found is None:  # a bug: its traceback
                raise
            print(f"error: {environmentErrorText(found)}", file=sys.stderr)
            sys.exit(1)
        if code == INTERRUPTED_EXIT_CODE and termination.received:  # it handled the SIGTERM as a Ctrl-C, lines too
            code = TERMINATED_EXIT_CODE
    sys.exit(code or 0)


def environmentErrorText(error: OSError) -> str:
    """
    :param error: an OS error of srl_toolbox.files.ENVIRONMENT_ERRNOS
    :return: one line: ``could not write PATH: No space left on device`` (``could not use`` for a refused permission
        or a name too long, which may come from a read; no path when the error names none)
    """
    verb = "write" if error.errno in _WRITE_ERRNOS else "use"
    path = error.filename
    where = f" {os.fsdecode(path)}" if isinstance(path, (str, bytes)) else ""
    return f"could not {verb}{where}: {error.strerror or os.strerror(error.errno)}"


def _number(raw: str) -> float:
    """
    :param raw: a command-line string
    :return: its value as a float
    :raises argparse.ArgumentTypeError: not a number
    """
    try:
        return float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number") from None


def finiteFloat(raw: str) -> float:
    """
    argparse type: a finite number (not nan or inf).

    :param raw: the command-line string
    :return: the value
    """
    value = _number(raw)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{raw!r} must be a finite number")
    return value


def positiveInt(raw: str) -> int:
    """
    argparse type: an integer > 0 and at most MAX_COUNT (scientific notation such as 1e3 accepted).

    :param raw: the command-line string
    :return: the value
    """
    value = _number(raw)
    if not value.is_integer() or value <= 0:
        raise argparse.ArgumentTypeError(f"{raw!r} must be a positive integer")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{raw!r} is too large (at most {MAX_COUNT:.0e})")
    return int(value)


def envCount(raw: str) -> int:
    """
    argparse type: a number of parallel envs (processes), 1..MAX_ENVS.

    :param raw: the command-line string
    :return: the value
    """
    if _number(raw) > MAX_ENVS:
        raise argparse.ArgumentTypeError(f"{raw!r} is more parallel envs than this command starts (1..{MAX_ENVS}: "
                                         "each is a process)")
    return positiveInt(raw)


def stackCount(raw: str) -> int:
    """
    argparse type: a number of frames stacked per observation, 1..MAX_STACK.

    :param raw: the command-line string
    :return: the value
    """
    if _number(raw) > MAX_STACK:
        raise argparse.ArgumentTypeError(f"{raw!r} is more frames than a stack holds (1..{MAX_STACK}: each frame "
                                         "multiplies the observation and its buffers)")
    return positiveInt(raw)


def nonEmptyText(raw: str) -> str:
    """argparse type of a text flag (a path, a name): an empty value is refused (``--log-dir ""`` meant the current
    folder, a forgotten variable in a script)."""
    if not raw.strip():
        raise argparse.ArgumentTypeError(f"{raw!r} is empty: give a value, or leave the flag out")
    return raw


def hasControlCharacter(text: str) -> bool:
    """:return: whether ``text`` holds a control character (a newline, a tab...), which no name of a file or folder
    should: it breaks the lines that name it (logs, CSV, markdown tables)"""
    return any(unicodedata.category(char) == "Cc" for char in text)


def visdomEnvName(raw: str) -> str:
    """argparse type of a visdom environment's name: not empty, no path separator, not starting with "." (the server
    saves an environment as ``<name>.json`` and finds it by URL: ``../x`` reached another page and failed there)."""
    name = nonEmptyText(raw)
    if "/" in name or "\\" in name or name.startswith("."):
        raise argparse.ArgumentTypeError(f"{raw!r} is not a visdom environment name: no '/' or '\\', not starting "
                                         "with '.'")
    return name


def positiveFloat(raw: str) -> float:
    """
    argparse type: a finite number > 0.

    :param raw: the command-line string
    :return: the value
    """
    value = _number(raw)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{raw!r} must be a positive number")
    return value


def seedNumber(raw: str) -> int:
    """
    argparse type: a random seed, an integer in 0..2**32-1.

    :param raw: the command-line string
    :return: the value
    """
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not an integer") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{raw!r} is out of range: a seed is 0..{MAX_SEED} (2**32-1)")
    return value


def intInRange(low: int, high: int | None = None) -> Callable[[str], int]:
    """
    An argparse type: an integer in ``low..high`` (no upper bound when ``high`` is None).

    :param low: the smallest value accepted
    :param high: the largest value accepted, or None
    :return: the type function (its errors name the value and the range)
    """
    span = f"{low}..{high}" if high is not None else f">= {low}"

    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{raw!r} is not an integer ({span})") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{raw!r} is out of range ({span})")
        return value

    parse.__name__ = f"integer {span}"
    return parse


# The errors of a folder that refuses new files (its permissions, a read-only mount or an immutable folder); another
# error when a file is created in it (a pseudo file system's ENOENT, a full disk) is named as what failed
_REFUSED_WRITE_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


# The endings of the files the commands write: an output folder still to be made that ends so is a file's name given
# for the folder (``--output-dir plots/a.png``), refused by :func:`checkFolderName`
OUTPUT_FILE_SUFFIXES = (".png", ".jpg", ".jpeg", ".svg", ".pdf", ".gif", ".mp4", ".csv", ".md", ".npz", ".json")


def checkFolderName(folder: str, flag: str, writes: str) -> None:
    """
    :param folder: an output folder (made later if missing)
    :param flag: the option that gave it
    :param writes: what the command writes in it, a clause of the message (``results.csv and results.md are written
        in it``)
    :raises UsageError: a folder still to be made whose name ends like a file (:data:`OUTPUT_FILE_SUFFIXES`): the
        command would make a folder of that name and write its files inside (``x.png/trajectory.png``)
    """
    if not os.path.isdir(folder) and os.path.splitext(folder.rstrip("/"))[1].lower() in OUTPUT_FILE_SUFFIXES:
        raise UsageError(f"{flag} {folder!r} takes a folder, not a file name: {writes}")


def checkWritableFolder(folder: str, flag: str, value: str | None = None) -> None:
    """
    Refuse an output folder that cannot be written, before any work: a file in its path, a symbolic link to nothing
    (dangling, or a loop) in its path, a folder still to be made whose name is longer than the file system allows, or
    a folder (or, when it is still to be made, its nearest existing parent) that refuses new files. The check creates
    a nameless temporary file and leaves nothing behind; it also catches what ``os.access`` misses (root on a
    read-only or immutable folder).

    :param folder: the folder the command will write into (made later if missing)
    :param flag: the option that gave it, for the message (e.g. ``--log-dir``)
    :param value: the flag's value when it is no folder but a file to write into ``folder`` (named by the message as
        given); None: ``folder`` itself
    :raises UsageError: the folder cannot be written: "is not writable" where it refuses new files (permissions, a
        read-only mount), else "cannot create files in" it or its nearest existing parent, with the system's reason
    """
    given = folder if value is None else value
    existing = os.path.abspath(folder)
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if os.path.islink(existing) and not os.path.exists(existing):  # dangling, or a loop
        try:
            os.stat(existing)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise UsageError(f"{flag} {given!r}: {existing!r} is a symbolic link in a loop: give another "
                                 f"folder") from None
        raise UsageError(f"{flag} {given!r}: {existing!r} is a symbolic link to {os.readlink(existing)!r}, which is "
                         f"missing: create it or give another folder")
    name_max = nameMax(existing)
    for part in os.path.relpath(os.path.abspath(folder), existing).split(os.sep):
        if len(os.fsencode(part)) > name_max:
            raise UsageError(f"{flag} {given!r}: the folder name {part!r} is {len(os.fsencode(part))} bytes, over "
                             f"the file system's {name_max}")
    if not os.path.isdir(existing):
        raise UsageError(f"{flag} {given!r}: {existing!r} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=existing, prefix=".write_check"):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        made = existing != os.path.abspath(folder) or value is not None
        if error.errno not in _REFUSED_WRITE_ERRNOS:  # (e.g. /proc: ENOENT) not a refusal: say what failed
            where = (f"{existing!r} (the nearest existing folder of its path)" if existing != os.path.abspath(folder)
                     else f"{existing!r}" if made else "it")
            raise UsageError(f"{flag} {given!r}: cannot create files in {where}: {reason}") from None
        where = f" (its parent {existing!r})" if made else ""
        raise UsageError(f"{flag} {given!r}{where} is not writable: {reason}") from None


def checkOutputFile(path: str, flag: str) -> None:
    """
    Refuse an output file's path before any work: a folder at the path itself (the final rename onto it would fail
    after all the work), a name that is only an extension (``.png``: a hidden file), or a folder for it that cannot
    be written (see :func:`checkWritableFolder`).

    :param path: the file the command will write (made or replaced later)
    :param flag: the option that gave it, for the message (e.g. ``--output``)
    :raises UsageError: the file cannot be written there
    """
    checkOutputFiles([path], flag)


def checkOutputFiles(paths: Iterable[str], flag: str) -> None:
    """
    :func:`checkOutputFile` for several files: each path, and each distinct folder once.

    :param paths: the files the command will write
    :param flag: the option that gave them, for the message
    :raises UsageError: a file cannot be written there
    """
    paths = list(paths)
    for path in paths:
        if os.path.isdir(path):
            raise UsageError(f"{flag} {path!r} is a folder, not a file: give the file's path")
        if re.fullmatch(r"\.[A-Za-z0-9]+", os.path.basename(path)):  # (``--video .gif``: a hidden file named .gif)
            raise UsageError(f"{flag} {path!r} names no file, only its extension: give a name before it (e.g. "
                             f"out{os.path.basename(path)})")
        checkNameLength(os.path.basename(path), os.path.dirname(os.path.abspath(path)), flag, TEMPORARY_NAME_EXTRA,
                        "file name", value=path)
    folders: dict[str, str] = {}  # each folder once, named by the first file given into it
    for path in paths:
        folders.setdefault(os.path.dirname(os.path.abspath(path)), path)
    for folder, path in folders.items():
        checkWritableFolder(folder, flag, value=path)


def nameMax(folder: str) -> int:
    """:return: the longest file name, in bytes, of the file system of ``folder`` or of its nearest existing parent
    (DEFAULT_NAME_MAX where it does not say)"""
    existing = os.path.abspath(folder)
    while not os.path.isdir(existing) and existing != os.path.dirname(existing):
        existing = os.path.dirname(existing)
    try:
        return int(os.pathconf(existing, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return DEFAULT_NAME_MAX


def checkNameLength(name: str, folder: str, flag: str, extra: int, what: str = "name", value: str | None = None
                    ) -> None:
    """
    Refuse a name that srl-toolbox will make longer than the file system takes (a temporary file adds
    srl_toolbox.files.TEMPORARY_NAME_EXTRA bytes, a dataset's partial folder 9, a run folder its time stamp).

    :param name: the name as given (a file's or a folder's, without its folder)
    :param folder: where it will be created (the file system whose limit applies)
    :param flag: the option that gave it, for the message
    :param extra: the most bytes srl-toolbox adds to it
    :param what: what the name is, for the message
    :param value: the option's value, when it is not ``name`` itself (a path)
    :raises UsageError: too long
    """
    name_max = nameMax(folder)
    size, limit = len(os.fsencode(name)), name_max - extra
    if size > limit:
        shown = f"{flag} {value!r}: the {what} {name!r}" if value is not None else f"{flag} {name!r}: the {what}"
        raise UsageError(f"{shown} is {size} bytes, over the {limit} allowed here (the file system's names are at "
                         f"most {name_max} bytes and srl-toolbox adds up to {extra} to this one)")


def checkImageShape(shape: Sequence[int], flag: str = "--img-shape") -> None:
    """
    Refuse a camera image shape other than 3 H W with H, W in MIN_IMAGE_SIDE..MAX_IMAGE_SIDE (the one bound of
    train, the dataset generator and srl_models.prepare).

    :param shape: (C, H, W)
    :param flag: the option that gave it, for the message
    :raises UsageError: a bad shape
    """
    channels, height, width = shape
    if channels != 3 or not (MIN_IMAGE_SIDE <= height <= MAX_IMAGE_SIDE and MIN_IMAGE_SIDE <= width <= MAX_IMAGE_SIDE):
        raise UsageError(f"{flag} {' '.join(map(str, shape))} is not 3 H W with H, W in {IMAGE_SIDES}")


def nonNegativeInt(raw: str) -> int:
    """
    argparse type: an integer >= 0 and at most MAX_COUNT (scientific notation such as 1e3 accepted).

    :param raw: the command-line string
    :return: the value
    """
    value = _number(raw)
    if not value.is_integer() or value < 0:
        raise argparse.ArgumentTypeError(f"{raw!r} must be a non-negative integer")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{raw!r} is too large (at most {MAX_COUNT:.0e})")
    return int(value)


def portNumber(raw: str) -> int:
    """
    argparse type: a TCP port in 1..65535.

    :param raw: the command-line string
    :return: the port
    """
    try:
        value = positiveInt(raw)
    except argparse.ArgumentTypeError:  # (0, -1, "abc": the same refusal, naming the ports)
        value = 0
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a port number (1..65535)")
    return value


# --- shared argument groups: a flag means the same in every command ------------------------------------------------

DEFAULT_VISDOM_PORT = 8097


def addSeedArgument(parser: argparse.ArgumentParser, help: str = "random seed [0]", default: int | None = 0) -> None:
    """
    ``--seed``: what numpy.random.seed accepts (0..2**32-1), checked before anything is written.

    :param parser: the command's parser
    :param help: the flag's help text (it should say what the seed drives and the default)
    :param default: the default seed (None: the command picks)
    """
    parser.add_argument("--seed", type=seedNumber, default=default, help=help)


def addProgressArgument(parser: argparse.ArgumentParser, help: str = "no progress bar") -> None:
    """
    ``--no-progress``: no progress bar (for logs and CI); the command still prints one line when it ends.

    :param parser: the command's parser
    :param help: the flag's help text
    """
    parser.add_argument("--no-progress", action="store_true", help=help)


def addVisdomArguments(parser: argparse.ArgumentParser, no_vis: bool = True,
                       port_help: str = f"visdom server port [{DEFAULT_VISDOM_PORT}]") -> None:
    """
    ``--port`` (the visdom server's) and, when ``no_vis``, ``--no-vis`` (no live plots). A server that is not
    running costs one warning, never the command.

    :param parser: the command's parser
    :param no_vis: whether to add ``--no-vis``
    :param port_help: the help text of ``--port``
    """
    if no_vis:
        parser.add_argument("--no-vis", action="store_true", help="no live visdom plots")
    parser.add_argument("--port", type=portNumber, default=DEFAULT_VISDOM_PORT, help=port_help)


def addOptInVisdomFlags(parser: argparse.ArgumentParser, vis_help: str, no_vis_help: str) -> None:
    """
    ``--vis`` (opt in to visdom) and ``--no-vis`` (the default, the flag of train and the sweeps, accepted so that a
    user's habit is no error), one or the other, to ``args.vis``.

    :param parser: the command's parser
    :param vis_help: what ``--vis`` adds
    :param no_vis_help: what the command does without visdom
    """
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--vis", action="store_true", help=vis_help)
    group.add_argument("--no-vis", dest="vis", action="store_false", default=False,
                       help=f"{no_vis_help} (the default; train's flag, accepted here too)")


def pythonCommand() -> str:
    """:return: how to start this interpreter in a command a user pastes, shell-quoted: ``python`` when it is the one
    on PATH (or the interpreter's path is unknown), else its path (relative below the working directory:
    ``.venv/bin/python`` when a Makefile target ran it)"""
    found = shutil.which("python")
    if not sys.executable or found is not None and os.path.realpath(found) == os.path.realpath(sys.executable):
        return "python"
    relative = os.path.relpath(sys.executable)
    return shlex.quote(relative if not relative.startswith("..") else sys.executable)
