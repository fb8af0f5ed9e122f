"""The exceptions every command reports in one line (srl_toolbox.cli.runCommand): bad input, exit 2; a failure the
command names, exit 1. At the bottom of srl_toolbox, so that its lowest modules (files) can raise them too."""
from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user: reported as one line on stderr, exit code 2."""


class CommandFailed(Exception):
    """The work failed for a reason the command names in one line (not bad input): ``error: ...`` on stderr, exit
    code 1, no traceback."""
