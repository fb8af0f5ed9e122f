"""Atomic file writes: every save goes to a temporary file in the same folder, then is renamed over the target.

They live in environments (the bottom of the dependency order) because the dataset generator and srl_models save
files too; rl_baselines.files is where the RL side imports them from.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def atomicPath(path: str) -> Iterator[str]:
    """
    Yield a temporary path beside ``path``; on success it replaces ``path`` in one rename, on error it is removed.

    :param path: the final file path
    :return: a context manager yielding the temporary path (it keeps the final path's extension)
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    base, ext = os.path.splitext(os.path.basename(path))
    fd, tmp_path = tempfile.mkstemp(prefix=f".{base}.", suffix=f".tmp{ext}", dir=folder)
    os.close(fd)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)


def writeJson(path: str, data: Any, sort_keys: bool = True) -> None:
    """
    Write ``data`` as indented JSON, atomically.

    :param path: destination file
    :param data: JSON-serialisable object
    :param sort_keys: sort the keys (False where their order means something, like a model's losses)
    """
    with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=sort_keys)
        handle.write("\n")


def readJson(path: str) -> Any:
    """
    :param path: a JSON file
    :return: its content
    """
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def sha256File(path: str) -> str:
    """
    :param path: a file
    :return: the SHA-256 of its content, in hex (read in blocks: model and buffer files can be large)
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
