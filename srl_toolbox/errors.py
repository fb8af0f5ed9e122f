"""The exceptions every command reports in one line (srl_toolbox.cli.runCommand): bad input, exit 2; a failure the
command names, exit 1. At the bottom of srl_toolbox, so that its lowest modules (files) can raise them too.

:class:`UsageWarning`, input that is taken but does nothing here, prints as one line, ``warning: <message>``, in the
commands and in the Python API alike: importing this module wraps ``warnings.formatwarning`` for that category only
(:func:`showOnOneLine`, which srl_toolbox.plugins uses for its skipped-plugin warnings too; the toolbox's own source
line would tell the user nothing; every other warning keeps its format)."""
from __future__ import annotations

import warnings
from typing import Any


class UsageError(Exception):
    """Bad input from the user: reported as one line on stderr, exit code 2."""


class CommandFailed(Exception):
    """The work failed for a reason the command names in one line (not bad input): ``error: ...`` on stderr, exit
    code 1, no traceback."""


class UsageWarning(UserWarning):
    """Input from the user that is accepted but does nothing here (a flag the env or observation has no use for)."""


def showOnOneLine(category: type[Warning], named: bool = False) -> None:
    """
    Print the warnings of ``category`` (and its subclasses) as one line wherever they are raised, ``warning:
    <message>`` (the toolbox's own source line would tell the user nothing); every other warning keeps its format.
    Wraps ``warnings.formatwarning`` once per category.

    :param category: a warning class
    :param named: ``warning: <Category>: <message>`` instead
    """
    format_warning = warnings.formatwarning
    key = f"{category.__module__}.{category.__qualname__}"
    done = getattr(format_warning, "one_line_categories", frozenset())
    if key in done:
        return

    def formatWarning(message: Any, raised: type[Warning], filename: str, lineno: int, line: str | None = None) -> str:
        if issubclass(raised, category):
            return f"warning: {f'{raised.__name__}: ' if named else ''}{' '.join(str(message).split())}\n"
        return format_warning(message, raised, filename, lineno, line)

    formatWarning.one_line_categories = done | {key}  # type: ignore[attr-defined]
    warnings.formatwarning = formatWarning


showOnOneLine(UsageWarning)
