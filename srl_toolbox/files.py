"""Atomic file writes: every save goes to a temporary file in the same folder, then is renamed over the target.

Every package saves through these (the dataset generator, srl_models, the RL runs, the replay tools), so they live in
srl_toolbox, the bottom of the dependency order. Invariant: a reader sees either the old file or the new one, never a
partial write. An error that the environment caused (a full or read-only disk, see :func:`environmentError`)
names the final file when the OS error itself names none (a write to an open file), so that a command's one-line
error can say which file was not written. A process killed during a save leaves its temporary file
(``.<name>.<8 hex digits>.tmp<ext>``, :data:`TEMPORARY_NAME`); :func:`removeTemporaries` deletes those, and only
those, where a command takes a folder back (``train --resume``). A folder being filled that is deleted or moved
meanwhile is not silently made again by the next save when its writer checks :func:`checkFolderStays` first
(:class:`FolderVanished`: one line, exit 1). A set of files that belong together (a measurement's results) is
written into a staging folder that :func:`atomicFolder` renames into place at the end, so that it appears whole.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from srl_toolbox.errors import CommandFailed

# Permissions asked for when the temporary file is created: the umask then applies, so the file ends with the mode
# that open(path, "w") would have given it (tempfile.mkstemp's files are private, 0o600).
_NEW_FILE_MODE = 0o666
# The names _createTemporary gives: "." + the final name's stem + "." + 8 hex digits + ".tmp" + its extension.
TEMPORARY_NAME = re.compile(r"^\.(?P<stem>.+)\.(?P<token>[0-9a-f]{8})\.tmp(?P<ext>\.[^.]*)?$")
# The bytes a temporary name adds to the final one: ".<base>.<8 hex>.tmp<ext>" (see _createTemporary); the longest
# suffix srl-toolbox adds to a name it is given (a dataset's partial folder, ".<name>.partial", adds 9).
TEMPORARY_NAME_EXTRA = len("." + "." + "0" * 8 + ".tmp")
# The names newFolder tries: the stem, then stem_2 ... stem_1000
NEW_FOLDER_ATTEMPTS = 1000
# The errno of an OS error the environment caused, not the program: a full disk or quota, a read-only or immutable
# file system, a refused permission, a file over the size limit, a name over the file system's limit. Commands
# report these in one line (srl_toolbox.cli.runCommand); any other OSError is a bug and keeps its traceback.
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EPERM, errno.EACCES, errno.EFBIG,
                                errno.ENAMETOOLONG})


def environmentError(error: BaseException | None) -> OSError | None:
    """
    :param error: an exception
    :return: the OS error of :data:`ENVIRONMENT_ERRNOS` that it is or that caused it (its ``__cause__`` /
        ``__context__`` chain: torch.save's RuntimeError on a full disk holds the OSError as its context), or None
    """
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in ENVIRONMENT_ERRNOS:
            return error
        error = error.__cause__ or error.__context__
    return None


def nameFileOnError(error: BaseException, path: str) -> None:
    """
    Name ``path`` in the environment's OS error behind ``error`` (see :func:`environmentError`) when that error names
    no file (a failed write to an open file), so that the message says which file was not written.

    :param error: an exception being raised
    :param path: the file that was being written
    """
    found = environmentError(error)
    if found is not None and found.filename is None:
        found.filename = path


@contextlib.contextmanager
def atomicPath(path: str) -> Iterator[str]:
    """
    Yield a temporary path beside ``path``; on success it replaces ``path`` in one rename, on error it is removed.

    :param path: the final file path
    :return: a context manager yielding the temporary path (it keeps the final path's extension)
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp_path = _createTemporary(folder, os.path.basename(path))
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    except Exception as error:
        nameFileOnError(error, path)
        raise
    finally:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)


@contextlib.contextmanager
def atomicFolder(path: str, merge: bool = False) -> Iterator[str]:
    """
    Yield a new, empty staging folder beside ``path`` (``.<name>.<8 hex digits>.tmp``, named as
    :func:`_createTemporary` names files), to be filled in the block. When the block ends without an exception the
    staging folder takes the place of ``path`` (a folder already there is moved aside, replaced and then deleted);
    with ``merge``, for a folder that holds other files too (a model folder), its files instead replace those of the
    same names in ``path``, one rename each, all at the end. On any exception (Ctrl-C included) it is deleted.
    Invariant: ``path`` never holds part of what the block writes: the old content, or all of the new one (absent, for
    the instant between the two renames of a replacement). A process killed (SIGKILL) in the block leaves its staging
    folder, which no reader takes for ``path``.

    :param path: the final folder
    :param merge: move the staging folder's files into ``path`` rather than replace ``path``
    :return: a context manager yielding the staging folder
    """
    parent, name = os.path.split(os.path.abspath(path))
    os.makedirs(path if merge else parent, exist_ok=True)
    staging = _createTemporary(path if merge else parent, name, directory=True)
    try:
        yield staging
        if merge:
            for entry in sorted(os.listdir(staging)):
                os.replace(os.path.join(staging, entry), os.path.join(path, entry))
        elif os.path.isdir(path):
            old = _createTemporary(parent, name, directory=True)
            os.rmdir(old)  # (a free name beside it, not yet a folder: rename cannot replace one everywhere)
            os.rename(path, old)
            os.rename(staging, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, path)
    finally:
        if os.path.isdir(staging):
            shutil.rmtree(staging, ignore_errors=True)


def missingFolders(folder: str) -> list[str]:
    """:return: ``folder`` and those of its parents that do not exist yet, innermost first (what making it makes)"""
    missing, path = [], os.path.abspath(folder)
    while not os.path.lexists(path) and path != os.path.dirname(path):
        missing.append(path)
        path = os.path.dirname(path)
    return missing


@contextlib.contextmanager
def newFolder(stem: str, keep: tuple[type[BaseException], ...] = ()) -> Iterator[str]:
    """
    Make a new folder, ``stem`` or, when that name is taken, ``stem_2``, ``stem_3``... (each made by one
    ``os.mkdir``, so that two processes choosing a name at the same moment never share a folder), and yield its path.
    When the block raises (Ctrl-C included), delete it with the parent folders made for it that are left empty
    (another process's files in one keep it), so that a failed command leaves nothing behind; an exception of
    ``keep`` is passed on with nothing deleted.

    :param stem: the folder's name when free
    :param keep: exceptions that leave everything as it is (the folder deleted or moved meanwhile: no longer ours)
    :return: a context manager giving the new folder's path
    """
    parent = os.path.dirname(os.path.abspath(stem))
    made = missingFolders(parent)
    folder = None
    try:
        os.makedirs(parent, exist_ok=True)
        for attempt in range(1, NEW_FOLDER_ATTEMPTS + 1):
            candidate = stem if attempt == 1 else f"{stem}_{attempt}"
            try:
                os.mkdir(candidate)
            except FileExistsError:
                continue
            folder = candidate
            break
        else:
            raise FileExistsError(errno.EEXIST, f"no free name among {stem} ... _{NEW_FOLDER_ATTEMPTS}", stem)
        yield folder
    except keep:
        raise
    except BaseException:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        for path in made:
            try:
                os.rmdir(path)
            except OSError:  # not empty (another run's folder in it), or already gone
                break
        raise


def _createTemporary(folder: str, name: str, *, directory: bool = False) -> str:
    """
    Create an empty, unique temporary file ``.<base>.<random>.tmp<ext>`` in ``folder``: hidden, marked ``.tmp``, and
    ending with the final name's extension, since matplotlib, imageio, OpenCV, np.savez and SB3 pick the format (or
    add a suffix) from it. With ``directory``, an empty folder ``.<name>.<random>.tmp`` (the umask's permissions).

    :param folder: the final file's folder
    :param name: the final file's name
    :param directory: make a folder instead of a file
    :return: the temporary file's path
    :raises FileExistsError: no free name after many tries (not expected: 32 random bits each)
    """
    base, ext = (name, "") if directory else os.path.splitext(name)
    for _ in range(100):
        tmp_path = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.tmp{ext}")
        try:
            if directory:
                os.mkdir(tmp_path, 0o777)
            else:
                os.close(os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _NEW_FILE_MODE))
        except FileExistsError:
            continue
        return tmp_path
    raise FileExistsError(f"no free temporary name for {name} in {folder}")


def removeTemporaries(folder: str, skip: tuple[str, ...] = ()) -> list[str]:
    """
    Delete the temporary files that saves cut short (a kill) left below ``folder``: the files named as
    :func:`_createTemporary` names them (:data:`TEMPORARY_NAME`), and nothing else. Only for a folder no process is
    writing (its lock held).

    :param folder: the folder, searched with its sub-folders
    :param skip: names of sub-folders (at any depth) not searched
    :return: the deleted files' paths
    """
    removed = []
    for root, folders, names in os.walk(folder):
        folders[:] = [name for name in folders if name not in skip]
        for name in names:
            path = os.path.join(root, name)
            if TEMPORARY_NAME.match(name) and os.path.isfile(path) and not os.path.islink(path):
                os.remove(path)
                removed.append(path)
    return sorted(removed)


class FolderVanished(CommandFailed):
    """A folder a command was filling was deleted or moved meanwhile: ``error: ...`` on stderr, exit code 1, and
    nothing more is saved (a save would make the folder again, holding only part of what it should)."""


def checkFolderStays(folder: str, marker: str, what: str, doing: str) -> None:
    """
    Before a save into ``folder``: stop the command when the folder no longer holds ``marker``, a file written when
    it was made (its deletion or a rename took it away).

    :param folder: the folder being filled
    :param marker: a file in it that stays for its whole life (a run's args.json)
    :param what: what the folder is, for the message ("the run folder")
    :param doing: what the command was doing ("training")
    :raises FolderVanished: it is gone (one line)
    """
    if not os.path.isfile(os.path.join(folder, marker)):
        raise FolderVanished(f"{what} {folder} disappeared while {doing} (deleted or moved?): nothing more is saved")


def writeJson(path: str, data: Any, sort_keys: bool = True, indent: int | None = 2,
              default: Callable[[Any], Any] | None = None) -> None:
    """
    Write ``data`` as JSON, atomically.

    :param path: destination file
    :param data: JSON-serialisable object (with ``default``)
    :param sort_keys: sort the keys (False where their order means something, like a model's losses)
    :param indent: spaces per level (None: one line, for large machine-read files)
    :param default: turns an object json cannot write into one it can (json.dump's ``default``)
    """
    with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=indent, sort_keys=sort_keys, default=default)
        handle.write("\n")


# What numpy.load raises on an .npz file that is unreadable, cut short, empty or corrupt (its zip member's data).
NPZ_READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error)


def writeNpz(path: str, arrays: Mapping[str, np.ndarray]) -> None:
    """
    Write arrays to an uncompressed npz file, atomically (uncompressed: buffers and datasets can be large, and
    this is fast).

    :param path: destination file (written through a file object, so np.savez adds no ``.npz`` to it)
    :param arrays: name -> array
    """
    with atomicPath(path) as tmp_path, open(tmp_path, "wb") as handle:
        np.savez(handle, **arrays)


# The first bytes of an .npz file (a zip archive; an empty one starts with its end record), as numpy.load tells them
NPZ_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06")


class NotNpzFile(ValueError):
    """A file read as an .npz archive that is not one (damaged, or another file under that name): one line naming
    it, in place of numpy's message for it, which advises loading it with pickle."""


def loadNpz(path: str, what: str | None = None) -> Any:
    """
    ``numpy.load(path, allow_pickle=False)`` of an .npz archive (use it as a context manager).

    :param path: the file
    :param what: what it should be, for the message ("a dataset file"; default: an .npz file)
    :return: numpy's NpzFile
    :raises NotNpzFile: it does not start as a zip archive does (a text file, another format): "PATH is damaged or not
        WHAT (not an .npz archive)"; numpy's own message would advise allow_pickle=True, running code from the file
    :raises OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error: (NPZ_READ_ERRORS) unreadable, cut short
    """
    with open(path, "rb") as handle:
        start = handle.read(len(NPZ_SIGNATURES[0]))
    if start and not start.startswith(NPZ_SIGNATURES):  # (an empty one: numpy's EOFError, "No data left in file")
        raise NotNpzFile(f"{path} is damaged or not {what} (not an .npz archive)" if what
                         else f"{path} is damaged or not an .npz file")
    return np.load(path, allow_pickle=False)


def torchLoadFailure(error: BaseException) -> str | None:
    """
    Why ``torch.load(..., weights_only=True)`` refused a file, in place of torch's message for it, which advises
    loading it again with ``weights_only=False`` (running code from the file) and runs over several lines.

    :param error: what torch.load raised
    :return: "damaged or not a file of tensors (REASON)", REASON the weights-only unpickler's own line; for a file
        cut short (torch's zip reader fails), "damaged or cut short (REASON)", REASON the reader's first sentence (its
        message goes on with advice over several sentences); None for any other error (its message says what is
        wrong)
    """
    message = str(error)
    if "PytorchStreamReader failed" in message:
        first = message.strip().splitlines()[0].split(". ")[0].rstrip(".")
        return f"damaged or cut short ({first[:200]})"
    if "Weights only load failed" not in message:
        return None
    _, _, after = message.partition("WeightsUnpickler error:")
    reason = next((line.strip() for line in after.splitlines() if line.strip()), "")
    return "damaged or not a file of tensors" + (f" ({reason[:200]})" if reason else "")


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


def isInside(path: str, folder: str) -> bool:
    """
    :param path: a path (relative ones from the current directory)
    :param folder: a folder (likewise)
    :return: ``path`` is ``folder`` or lies below it
    """
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == os.path.abspath(folder)
