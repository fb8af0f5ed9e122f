"""The exceptions every command reports in one line (srl_toolbox.cli.runCommand): bad input, exit 2; a failure the
command names, exit 1. At the bottom of srl_toolbox, so that its lowest modules (files) can raise them too.

:class:`UsageWarning`, input that is taken but does nothing here, prints as one line, ``warning: <message>``, in the
commands and in the Python API alike: importing this module wraps ``warnings.formatwarning`` for that category only
(the toolbox's own source line would tell the user nothing; every other warning keeps its format)."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any


class UsageError(Exception):
    """Bad input from the user: reported as one line on stderr, exit code 2."""


class CommandFailed(Exception):
    """The work failed for a reason the command names in one line (not bad input): ``error: ...`` on stderr, exit
    code 1, no traceback."""


class UsageWarning(UserWarning):
    """Input from the user that is accepted but does nothing here (a flag the env or observation has no use for)."""


def _oneLineForUsageWarnings(format_warning: Callable[..., str]) -> Callable[..., str]:
    """:return: ``format_warning``, except for UsageWarning: one line, ``warning: <message>``"""

    def formatWarning(message: Any, category: type[Warning], filename: str, lineno: int,
                      line: str | None = None) -> str:
        if issubclass(category, UsageWarning):
            return f"warning: {' '.join(str(message).split())}\n"
        return format_warning(message, category, filename, lineno, line)

    formatWarning.usage_warnings_one_line = True  # type: ignore[attr-defined]
    return formatWarning


if not getattr(warnings.formatwarning, "usage_warnings_one_line", False):
    warnings.formatwarning = _oneLineForUsageWarnings(warnings.formatwarning)
