"""SpriteCache: the mobile robots' sprites kept on disk, so that each is rendered once per machine.

The sprite renderer (environments/mobile_robot/sprite_renderer.py) draws each moving body (robot, targets) from up
to PHASES x PHASES sprites per grid point, each one TinyRenderer call. Every env process would otherwise render its
own, over its first thousands of steps; with this cache, the first process on a machine renders them and every later
one (env workers, the runs of a sweep, tests) reads them.

One file per group of sprites, ``<folder>/sprites/<digest>.npz``: the digest covers everything a sprite's pixels
depend on (the cache's format, PyBullet's version, the sprite renderer's source code, the image size, the view and
projection matrices, the grid and phase settings, the body's visual shapes, its height and orientation); inside, one
entry per grid point and phase.
The folder is ``$SRL_TOOLBOX_CACHE`` when set (empty: no cache on disk), else ``$XDG_CACHE_HOME/srl-toolbox``, else
``~/.cache/srl-toolbox``. Invariants:

- a sprite read from the file is the arrays TinyRenderer gave when it was rendered: an image never depends on whether
  its sprites came from the disk (TinyRenderer is deterministic on one machine and PyBullet version);
- a file is replaced atomically, under a lock, merged with what is on disk: processes that render at the same time
  add their sprites and lose none of another's;
- a file that cannot be read or does not hold this format is ignored with one warning (a :class:`SpriteCacheWarning`,
  which worker processes that mute their other warnings let through), by the one process that finds it so under the
  lock and removes it: the others find no file; its sprites are rendered again and written by the next save;
- a folder that cannot be written costs one warning per process, never the run (not one per group of sprites: the
  other groups then keep theirs in memory without trying it again).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import warnings
import zipfile
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from srl_toolbox.files import writeNpz
from srl_toolbox.locks import acquireLock, lockPathFor

# Bump when a sprite's arrays or the file's layout change: older files are then never read.
CACHE_FORMAT = 1
CACHE_ENV = "SRL_TOOLBOX_CACHE"
# A process saves its new sprites once it has rendered this many (and when its env closes).
SAVE_EVERY = 256
# What np.load and _unpack raise on a file that is cut short, overwritten or of another format.
_DAMAGED_FILE_ERRORS = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)
# (grid x, grid y, phase row, phase column)
SpriteKey = tuple[int, int, int, int]
# (top, left, rgb uint8 (h, w, 3), depth float32 (h, w), mask bool (h, w), anchor (row, column)), None: not in view
SpriteArrays = tuple[int, int, np.ndarray, np.ndarray, np.ndarray, tuple[float, float]] | None
# The sprite folders this process failed to write into (warned about once): later saves there are not tried.
_unwritable_folders: set[str] = set()


class SpriteCacheWarning(UserWarning):
    """A sprite file ignored or not written: shown by worker processes too (dataset_generator's mute the rest)."""


def cacheFolder() -> str | None:
    """:return: the folder of the sprite files, None when ``$SRL_TOOLBOX_CACHE`` is set empty (no disk cache)"""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return os.path.join(configured, "sprites") if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "srl-toolbox", "sprites")


def groupDigest(parts: Iterable[Any]) -> str:
    """:return: the file name stem of a group of sprites: a digest of the repr of everything they depend on"""
    text = repr((CACHE_FORMAT, *parts))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _pack(sprites: dict[SpriteKey, SpriteArrays]) -> dict[str, np.ndarray]:
    """:return: the npz arrays of sprites of any sizes: their keys, boxes and anchors, and the pixels concatenated"""
    keys = sorted(sprites)
    present = [key for key in keys if sprites[key] is not None]
    boxes = np.array([(*sprites[key][:2], *sprites[key][4].shape) for key in present], dtype=np.int64).reshape(-1, 4)
    anchors = np.array([sprites[key][5] for key in present], dtype=np.float64).reshape(-1, 2)

    def joined(index: int, dtype: Any, channels: tuple[int, ...] = ()) -> np.ndarray:
        parts = [sprites[key][index].reshape(-1, *channels) for key in present]
        return np.concatenate(parts).astype(dtype) if parts else np.zeros((0, *channels), dtype)

    return {"format": np.array(CACHE_FORMAT), "keys": np.array(keys, dtype=np.int64).reshape(-1, 4),
            "present": np.array([sprites[key] is not None for key in keys], dtype=bool),
            "boxes": boxes, "anchors": anchors, "rgb": joined(2, np.uint8, (3,)), "depth": joined(3, np.float32),
            "mask": joined(4, bool)}


def _unpack(arrays: Any) -> dict[SpriteKey, SpriteArrays]:
    """:return: the sprites of a file's arrays (:func:`_pack`'s layout)"""
    if int(arrays["format"]) != CACHE_FORMAT:
        raise ValueError(f"format {int(arrays['format'])}, not {CACHE_FORMAT}")
    sprites: dict[SpriteKey, SpriteArrays] = {}
    boxes, anchors, rgb, depth, mask = (arrays[name] for name in ("boxes", "anchors", "rgb", "depth", "mask"))
    start, index = 0, 0
    for key, present in zip(arrays["keys"], arrays["present"], strict=True):
        if not present:
            sprites[tuple(int(value) for value in key)] = None
            continue
        top, left, height, width = (int(value) for value in boxes[index])
        end = start + height * width
        sprites[tuple(int(value) for value in key)] = (
            top, left, rgb[start:end].reshape(height, width, 3), depth[start:end].reshape(height, width),
            mask[start:end].reshape(height, width), (float(anchors[index][0]), float(anchors[index][1])))
        start, index = end, index + 1
    return sprites


class SpriteCache:
    """
    The sprites of one group (one body at one height and orientation, in one view) this process knows, with those of
    the disk file.

    :param digest: the group's :func:`groupDigest`
    :param folder: where the files are (None: memory only)
    """

    def __init__(self, digest: str, folder: str | None) -> None:
        self._path = os.path.join(folder, f"{digest}.npz") if folder else None
        self._new: dict[SpriteKey, SpriteArrays] = {}
        self._warned = False
        self.sprites: dict[SpriteKey, SpriteArrays] = self._firstRead() if self._path else {}

    def _load(self) -> dict[SpriteKey, SpriteArrays]:
        """:return: the file's sprites, {} when there is none; raises one of _DAMAGED_FILE_ERRORS on a damaged one"""
        if self._path is None or not os.path.isfile(self._path):
            return {}
        with np.load(self._path) as arrays:
            return _unpack(arrays)

    def _firstRead(self) -> dict[SpriteKey, SpriteArrays]:
        """:return: the file's sprites; a damaged file: {}, with one warning from the one process that finds it
        damaged under the lock and removes it (a process that cannot take the lock warns and leaves it)"""
        try:
            return self._load()
        except _DAMAGED_FILE_ERRORS:
            pass
        try:
            lock = acquireLock(lockPathFor(self._path))
        except OSError:
            return self._read()
        try:
            return self._load()  # another process has replaced or removed it meanwhile
        except _DAMAGED_FILE_ERRORS as error:
            self._warnDamaged(error)
            with contextlib.suppress(OSError):  # (a folder that refuses it refuses the save too: that one warns)
                os.remove(self._path)
            return {}
        finally:
            lock.release()

    def _read(self) -> dict[SpriteKey, SpriteArrays]:
        """:return: the file's sprites, {} when there is none or it cannot be read (one warning)"""
        try:
            return self._load()
        except _DAMAGED_FILE_ERRORS as error:
            self._warnDamaged(error)
            return {}

    def _warnDamaged(self, error: Exception) -> None:
        """Warn that the file is ignored, once per file and process (a save re-reads it)."""
        if not self._warned:
            self._warned = True
            warnings.warn(f"sprite cache {self._path} ignored ({error}); it is rewritten", SpriteCacheWarning,
                          stacklevel=4)

    def get(self, key: SpriteKey, render: Callable[[], SpriteArrays]) -> SpriteArrays:
        """
        :param key: (grid x, grid y, phase row, phase column)
        :param render: renders the sprite when no one has yet
        :return: the sprite's arrays (None: the body is out of the image there)
        """
        if key in self.sprites:
            return self.sprites[key]
        sprite = self.sprites[key] = self._new[key] = render()
        if len(self._new) >= SAVE_EVERY:
            self.save()
        return sprite

    def save(self) -> None:
        """Add this process's new sprites to the file (merged under its lock, replaced atomically)."""
        if self._path is None or not self._new:
            return
        folder = os.path.dirname(self._path)
        if folder in _unwritable_folders:  # (warned about already: the sprites stay in memory)
            self._path, self._new = None, {}
            return
        try:
            lock = acquireLock(lockPathFor(self._path))
            try:
                merged = {**self._read(), **self._new}
                writeNpz(self._path, _pack(merged))
                self.sprites.update(merged)
            finally:
                lock.release()
        except OSError as error:
            _unwritable_folders.add(folder)
            warnings.warn(f"sprite cache {folder} not written ({error}); the sprites stay in memory",
                          SpriteCacheWarning, stacklevel=2)
            self._path = None
        self._new = {}
