"""Worker processes that leave Ctrl-C and SIGTERM to the process that started them while they import.

A terminal's Ctrl-C (or ``kill -- -PGID``) reaches every process of the group, a worker that is still importing its
libraries (seconds for torch, PyBullet, the envs) included, and kills it mid-import with a traceback.
:func:`stopSignalsBlocked` starts workers with SIGINT and SIGTERM blocked: the signal stays pending in them and
reaches the starting process at the end of the block. A worker that ignores both for good (an env worker, a ppo1
rank) keeps them blocked; one that stops on them (a search worker) calls :func:`unblockStopSignals` once it runs,
and a signal that came while it imported arrives then. :func:`ctrlCDeferred` holds a Ctrl-C back from code in which
Python would lose it (forking: the standard library's at-fork hooks ignore the KeyboardInterrupt raised in them).
"""
from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from multiprocessing import resource_tracker

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def stopSignalsBlocked() -> Iterator[None]:
    """
    Block SIGINT and SIGTERM in this thread for the ``with`` block: the processes started in it (and a forkserver or
    spawned interpreter with them) begin with both blocked. Multiprocessing's resource tracker is started first:
    starting it unblocks both signals. Without ``signal.pthread_sigmask`` (Windows) nothing is blocked.
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def unblockStopSignals() -> None:
    """In a worker started by :func:`stopSignalsBlocked` that stops on SIGINT and SIGTERM: take them again (one that
    came meanwhile is handled now)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


@contextlib.contextmanager
def ctrlCDeferred() -> Iterator[None]:
    """
    A SIGINT during the ``with`` block is remembered instead of handled, and handled when the block ends by the
    handler that was in place (Python's default one raises ``KeyboardInterrupt`` there). Processes forked in the
    block start with a handler that only remembers, until they install their own. In the main thread only.
    """
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught and callable(previous):
            previous(signal.SIGINT, None)
