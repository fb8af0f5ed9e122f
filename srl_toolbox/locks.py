"""Exclusive file locks that work on Linux, macOS and Windows (the ``filelock`` package: flock or LockFileEx).

A lock is held by an open file of this process, so the operating system drops it when the process ends, even when
it is killed; a lock file left behind by a dead process is therefore never mistaken for a live holder. The lock
file itself may stay on disk after release (it does on Unix), so callers that list a folder skip it by name.
"""
from __future__ import annotations

import hashlib
import os
import tempfile

from filelock import BaseFileLock, FileLock, Timeout

__all__ = ["acquireLock", "lockPathFor", "tryLock"]


def tryLock(path: str, wait: float = 0.0) -> BaseFileLock | None:
    """
    Take an exclusive lock on ``path`` (created if missing) without blocking for longer than ``wait`` seconds.

    :param path: the lock file
    :param wait: seconds to keep trying while another process (or another lock object of this one) holds it
    :return: the held lock (release it with ``.release()``), or None when someone else still holds it
    """
    lock = FileLock(path, timeout=wait, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        return None
    return lock


def acquireLock(path: str) -> BaseFileLock:
    """
    Take an exclusive lock on ``path`` (created if missing), waiting as long as another holder keeps it.

    :param path: the lock file
    :return: the held lock (release it with ``.release()``)
    """
    lock = FileLock(path, timeout=-1, thread_local=False)
    lock.acquire()
    return lock


def lockPathFor(target: str) -> str:
    """
    A lock file for ``target`` in the system's temporary folder, so that locking never leaves a file beside it.

    :param target: the file or folder the lock protects
    :return: the lock file's path (the same for every spelling of ``target``)
    """
    digest = hashlib.sha256(os.path.realpath(target).encode("utf-8")).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"srl-toolbox-{digest}.lock")
