"""The error a failed run's or trial's log ends with, on one line: what the sweep and the search print for it.

Light on purpose (the standard library only): a hyperparameter search's worker processes import it, and they start
without torch or the algorithms (tests/test_search_imports.py).
"""
from __future__ import annotations

import os
import re
import signal

# The line a Python traceback ends with: the exception's (dotted) name, then its message if any
_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(: |$)")
_MESSAGE_LINES = 10
# The most characters of a log's last line that are said (an exception's message is said whole)
_LAST_LINE_CHARS = 300


def lastLogError(log_path: str) -> str:
    """:return: the error a log ends with (:func:`logError` of its last 4 KiB), "" when it cannot be read"""
    try:
        with open(log_path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 4096))
            return logError(handle.read().decode("utf-8", "replace"))
    except OSError:
        return ""


def logError(text: str) -> str:
    """
    :param text: the end of a log
    :return: the error it ends with, on one line: after a Python traceback, its exception and the whole of its
        message (``ValueError: Expected parameter loc ... found invalid values: tensor([[nan, nan]])``, not only the
        message's last line), else its last non-empty line, its first 300 characters and ``...`` when longer
    """
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    frames = [index for index, line in enumerate(lines)
              if line.startswith(("Traceback (most recent call last):", '  File "'))]
    if frames:  # the exception is the first line after the last frame that is not indented (code, carets)
        start = next((index for index in range(frames[-1] + 1, len(lines)) if not lines[index][:1].isspace()), None)
        # ... when the log ends with it (a message of a few lines), not with other output after a traceback
        if start is not None and _EXCEPTION.match(lines[start]) and len(lines) - start <= _MESSAGE_LINES:
            return " ".join(" ".join(lines[start:]).split())
    if not lines:
        return ""
    last = lines[-1].strip()
    return last if len(last) <= _LAST_LINE_CHARS else last[:_LAST_LINE_CHARS] + "..."


def killedBy(returncode: int | None) -> str | None:
    """:return: ``killed by SIGKILL`` for a process a signal ended (a negative exit code: it wrote nothing of it, so
    its log's last line says nothing of why it ended), None for another end"""
    if returncode is None or returncode >= 0:
        return None
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"
