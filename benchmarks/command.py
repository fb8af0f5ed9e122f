"""What the benchmark scripts share on the command line, beside srl_toolbox.cli: their ``main`` returns what it
measured (for tests and other scripts), while ``python -m benchmarks.X`` exits 0, or 2 with one ``error:`` line on
bad input (:func:`srl_toolbox.cli.runCommand`)."""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

from srl_toolbox.cli import USAGE_EXIT_CODE, UsageError


def exitStatus(main: Callable[[Sequence[str] | None], Any]) -> Callable[[Sequence[str] | None], int]:
    """
    :param main: a benchmark's main, returning its measured rows
    :return: a main for :func:`srl_toolbox.cli.runCommand`: the same work, exit status 0
    """
    @functools.wraps(main)
    def command(argv: Sequence[str] | None = None) -> int:
        main(argv)
        return 0

    return command


def exitOnUsageError(main: Callable[[Sequence[str] | None], Any]) -> Callable[[Sequence[str] | None], Any]:
    """
    :param main: a benchmark's main, raising :class:`UsageError` on bad input
    :return: the same main, that ends bad input as the command does even when called from Python: one ``error:``
        line on stderr and ``SystemExit(2)``
    """
    @functools.wraps(main)
    def checked(argv: Sequence[str] | None = None) -> Any:
        try:
            return main(argv)
        except UsageError as error:
            print(f"error: {error}", file=sys.stderr)
            raise SystemExit(USAGE_EXIT_CODE) from None

    return checked
