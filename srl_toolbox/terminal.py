"""What srl-toolbox commands print to the terminal beside their progress bars: a line above a bar, warnings on lines
of their own above the bars, warnings held back until a command's checks pass, and the output discarded once its
reader has gone.

Invariants: nothing here changes what a command does, only where and when its lines appear; a command whose checks
refuse it prints its one-line error alone (:class:`HeldWarnings`).
"""
from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

from tqdm import tqdm

from srl_toolbox.errors import UsageError


def discardStdout() -> None:
    """Send the rest of the standard output to /dev/null: its reader has gone (`| head`, or a `| tee` a Ctrl-C
    stopped), and each later write, Python's flush at exit included, would fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def writeAboveBar(bar: Any, text: str) -> None:
    """
    Print a line above a tqdm bar and flush it; once the output's reader has gone (a Ctrl-C in a terminal also stops
    the `| tee` a sweep prints to), the rest of the output is discarded, so that the command still stops and records
    its runs and writes its files.

    :param bar: a tqdm bar (disabled or not)
    :param text: the line
    """
    try:
        bar.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        discardStdout()


def showAboveBars(shown: Callable[..., None]) -> Callable[..., None]:
    """
    :param shown: a ``warnings.showwarning`` (Python's, which writes the formatted warning or records it inside
        ``warnings.catch_warnings(record=True)``)
    :return: ``shown`` run with the progress bars of its stream cleared first and drawn again below (tqdm's
        ``external_write_mode``), so that a warning gets a line of its own instead of being glued to a bar's line;
        ``shown`` itself when it is such a function already
    """
    if getattr(shown, "above_bars", False):
        return shown

    def showWarning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
                    line: str | None = None) -> None:
        with tqdm.external_write_mode(file=sys.stderr if file is None else file):
            shown(message, category, filename, lineno, file, line)

    showWarning.above_bars = True  # type: ignore[attr-defined]
    return showWarning


class HeldWarnings:
    """
    The warnings of a command's checks, held back until they pass (a context manager): a command its checks then
    refuse (:class:`UsageError`) prints its one-line error only, not the warnings of flags it never ran with; a
    command they accept shows them at :meth:`release` (or at the end of the block, whatever else ends it), in the
    order they were raised. The filters apply when a warning is raised, as without holding (each shown once); only
    ``warnings.showwarning`` waits, and is put back at the release. Warnings of the ``shown_at_once`` categories
    (about the installation, not the command: a plugin that failed to load) are shown as they are raised.
    """

    def __init__(self, shown_at_once: tuple[type[Warning], ...] = ()) -> None:
        self._held: list[tuple[Any, ...]] | None = None
        self._shown: Callable[..., None] | None = None
        self._shown_at_once = shown_at_once

    def __enter__(self) -> HeldWarnings:
        self._held, self._shown = [], warnings.showwarning
        warnings.showwarning = self._hold
        return self

    def _hold(self, *args: Any) -> None:
        if self._held is None or issubclass(args[1], self._shown_at_once):  # (or a hook kept past the release)
            assert self._shown is not None
            self._shown(*args)
        else:
            self._held.append(args)

    def _stop(self) -> list[tuple[Any, ...]]:
        """:return: the warnings held, holding none from now on (``warnings.showwarning`` put back)"""
        held, self._held = self._held or [], None
        if warnings.showwarning == self._hold:
            warnings.showwarning = self._shown
        return held

    def release(self) -> None:
        """Show the warnings held (the checks passed), and the later ones as they are raised."""
        for args in self._stop():
            assert self._shown is not None
            self._shown(*args)

    def __exit__(self, exc_type: type[BaseException] | None, *_: Any) -> None:
        if exc_type is not None and issubclass(exc_type, UsageError):
            self._stop()  # refused: the one-line error alone
        else:
            self.release()
