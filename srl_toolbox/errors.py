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


# The categories shown as ``warning: <Category>: <message>`` (showOnOneLine(named=True)), by any one-line formatter
_named_categories: list[type[Warning]] = []


def oneLineWarning(message: Any, category: type[Warning]) -> str:
    """
    :param message: a warning's message
    :param category: its category
    :return: the warning as the toolbox prints it, one line ending in a newline: ``warning: <message>``, or ``warning:
        <Category>: <message>`` for a category registered with ``showOnOneLine(named=True)`` (or a subclass of one)
    """
    named = any(issubclass(category, shown) for shown in _named_categories)
    return f"warning: {f'{category.__name__}: ' if named else ''}{' '.join(str(message).split())}\n"


def showOnOneLine(category: type[Warning], named: bool = False) -> None:
    """
    Print the warnings of ``category`` (and its subclasses) as one line wherever they are raised, ``warning:
    <message>`` (the toolbox's own source line would tell the user nothing); every other warning keeps its format.
    Wraps ``warnings.formatwarning`` once per category.

    :param category: a warning class
    :param named: ``warning: <Category>: <message>`` instead, also under a command's formatter
        (:func:`oneLineWarning`, which srl_toolbox.cli.runCommand installs)
    """
    if named and category not in _named_categories:
        _named_categories.append(category)
    format_warning = warnings.formatwarning
    key = f"{category.__module__}.{category.__qualname__}"
    done = getattr(format_warning, "one_line_categories", frozenset())
    if key in done:
        return

    def formatWarning(message: Any, raised: type[Warning], filename: str, lineno: int, line: str | None = None) -> str:
        if issubclass(raised, category):
            return oneLineWarning(message, raised)
        return format_warning(message, raised, filename, lineno, line)

    formatWarning.one_line_categories = done | {key}  # type: ignore[attr-defined]
    warnings.formatwarning = formatWarning


showOnOneLine(UsageWarning)
