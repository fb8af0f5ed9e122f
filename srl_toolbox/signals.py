"""Worker processes that leave Ctrl-C and SIGTERM to the process that started them while they import; SIGTERM handled
as a Ctrl-C by a command.

A terminal's Ctrl-C (or ``kill -- -PGID``) reaches every process of the group, a worker that is still importing its
libraries (seconds for torch, PyBullet, the envs) included, and kills it mid-import with a traceback.
:func:`stopSignalsBlocked` starts workers with SIGINT and SIGTERM blocked: the signal stays pending in them and
reaches the starting process at the end of the block. A worker that ignores both for good (an env worker, a ppo1
rank) keeps them blocked; one that stops on them (a search worker) calls :func:`unblockStopSignals` once it runs,
and a signal that came while it imported arrives then. :func:`ctrlCDeferred` holds a Ctrl-C back from code in which
Python would lose it (forking: the standard library's at-fork hooks ignore the KeyboardInterrupt raised in them).

:func:`sigtermAsCtrlC` (every command's :func:`srl_toolbox.cli.runCommand`) makes SIGTERM (``kill PID``,
``timeout``, a batch scheduler) raise :class:`Terminated`, a KeyboardInterrupt: the clean-up a Ctrl-C runs
(``except KeyboardInterrupt``, ``finally``) runs for it too. Invariant: no forked process keeps a SIGTERM handler of
this module (:func:`_defaultSigtermInChild`): ``Pool.terminate()`` and ``Process.terminate()`` end their workers, and
a worker that ignores SIGTERM (an env worker, a ppo1 rank) sets that itself once started. A SIGTERM that lands in
importlib's own code, where a raised exception can be printed and dropped, is sent again a moment later.

:func:`ctrlCTaken` gives a command that stops on a Ctrl-C the SIGINT a process started with ignored (``cmd &`` in a
shell script without job control): Python leaves such a SIGINT ignored, so ``kill -INT`` would not stop it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
from collections.abc import Callable, Iterator
from multiprocessing import resource_tracker
from typing import Any

from srl_toolbox import takeIgnoredSigint

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
# The SIGTERM handlers installed here that a forked process must not keep (it gets SIGTERM's default action)
_NOT_INHERITED: set[Callable[[int, Any], None]] = set()


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a batch scheduler), handled as a Ctrl-C: raised in the main thread, so that
    the code that stops cleanly on a Ctrl-C (``except KeyboardInterrupt``, ``finally``) stops cleanly on it too."""


# A stop signal that lands in importlib's own code is sent again this much later (seconds): see _deferredInImport
RESEND_DELAY = 0.05


def _deferredInImport(signum: int, frame: Any) -> bool:
    """
    A handler raising in importlib's own code can be lost: in a module lock's weakref callback Python prints the
    exception ("Exception ignored in ... _get_module_lock") and goes on, the stop undone. There the signal is sent
    again :data:`RESEND_DELAY` later, from a timer thread, and taken once the import's bookkeeping is done.

    :param signum: the signal
    :param frame: the frame it interrupted
    :return: whether it was deferred (the handler must not raise)
    """
    if frame is None or not frame.f_code.co_filename.startswith("<frozen importlib"):
        return False
    timer = threading.Timer(RESEND_DELAY, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()
    return True


def raiseTerminated(signum: int, frame: Any) -> None:
    """A SIGTERM handler: raise :class:`Terminated` in the main thread (a moment later where it would be lost in
    importlib's own code: :func:`_deferredInImport`)."""
    if not _deferredInImport(signum, frame):
        raise Terminated()


@dataclasses.dataclass
class Termination:
    """What :func:`sigtermAsCtrlC` saw: ``received`` once a SIGTERM was handled (its Terminated raised)."""

    received: bool = False


@contextlib.contextmanager
def sigtermAsCtrlC() -> Iterator[Termination]:
    """
    For the ``with`` block, in the main thread: a SIGTERM raises :class:`Terminated` and sets the yielded
    :class:`Termination`'s ``received`` (a command that catches the KeyboardInterrupt and returns its own exit code
    is then told from one a Ctrl-C stopped). A SIGTERM that is ignored (``nohup``) or already has a handler keeps it,
    and so does one that code in the block set (train ignores both stop signals once its run is saved). Processes
    forked in the block start with SIGTERM's default action.
    """
    termination = Termination()

    def handler(signum: int, frame: Any) -> None:
        if not _deferredInImport(signum, frame):
            termination.received = True
            raise Terminated()

    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield termination
        return
    previous = signal.signal(signal.SIGTERM, handler)
    _NOT_INHERITED.add(handler)
    try:
        yield termination
    finally:
        if signal.getsignal(signal.SIGTERM) is handler:
            signal.signal(signal.SIGTERM, previous)
        _NOT_INHERITED.discard(handler)


def mayTakeSigterm() -> bool:
    """
    :return: whether code that stops on SIGTERM may install a handler of its own for it: in the main thread, with
        SIGTERM at its default action or handled by this module (a command's :func:`sigtermAsCtrlC`). A handler that
        the caller set (a script's, a notebook's) and an ignored SIGTERM are the caller's, and stay in place.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    handler = signal.getsignal(signal.SIGTERM)
    return handler == signal.SIG_DFL or handler is raiseTerminated or handler in _NOT_INHERITED


def _defaultSigtermInChild() -> None:
    """In a forked process: SIGTERM's default action in place of a handler of this module, which would raise in
    code that was never meant to stop on it (a pool's worker: a traceback, or a pool that never ends)."""
    if signal.getsignal(signal.SIGTERM) in _NOT_INHERITED:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _NOT_INHERITED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_defaultSigtermInChild)


@contextlib.contextmanager
def ctrlCTaken() -> Iterator[None]:
    """
    For the ``with`` block, in the main thread: a SIGINT the process ignores (it was started ignoring it) raises
    ``KeyboardInterrupt`` as a Ctrl-C does; a handler already set (Python's own, a command's) is kept. The ignoring
    is put back at the end of the block (unless code in it set a handler of its own).
    """
    if threading.current_thread() is not threading.main_thread() or not takeIgnoredSigint():
        yield
        return
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # (not one that code in the block set)
            signal.signal(signal.SIGINT, signal.SIG_IGN)


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
    handler that was in place (Python's default one raises ``KeyboardInterrupt`` there); so is a SIGTERM that a
    Python handler takes (:func:`sigtermAsCtrlC`'s). Processes forked in the block start with a SIGINT handler that
    only remembers, until they install their own, and with SIGTERM's default action. Outside the main thread, which
    receives no signals, nothing is deferred.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def remember(signum: int, _frame: Any) -> None:
        caught.append(signum)

    deferred = [signal.SIGINT, *([signal.SIGTERM] if callable(signal.getsignal(signal.SIGTERM)) else [])]
    previous = {signum: signal.signal(signum, remember) for signum in deferred}
    _NOT_INHERITED.add(remember)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _NOT_INHERITED.discard(remember)
        for signum in dict.fromkeys(caught):  # in the order they came: the first handler that raises ends it
            handler = previous[signum]
            if callable(handler):
                handler(signum, None)
