"""The partial folder a dataset is recorded into (``<save-path>/.<name>.partial/``) until it is complete.

Invariants: a folder named ``<name>`` is always a complete dataset (:func:`publish` renames the partial folder in one
step); the partial folder's lock (:data:`LOCK_FILE`) is held by the one process writing it, and released by the
operating system when that process and its workers are gone; each finished episode's arrays are one file of
:data:`EPISODES_FOLDER`, written atomically, so :func:`finishedEpisodes` lists exactly the episodes a resumed run
keeps; :data:`SETTINGS_FILE` holds the recording's settings, which a resumed run must repeat.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
from typing import TYPE_CHECKING, Any

from srl_toolbox.cli import UsageError
from srl_toolbox.locks import tryLock

if TYPE_CHECKING:
    from filelock import BaseFileLock

SETTINGS_FILE = "generation.json"
EPISODES_FOLDER = "episodes"
LOCK_FILE = ".lock"
# The bytes the partial folder's name adds to the dataset's: ".<name>.partial"
PARTIAL_NAME_EXTRA = len("." + ".partial")


def partialFolder(save_path: str, name: str) -> str:
    """:return: the partial folder of the dataset ``name`` in ``save_path``: ``<save_path>/.<name>.partial``"""
    return os.path.join(save_path, f".{name}.partial")


def finishedEpisodes(partial_dir: str) -> set[int]:
    """:return: the episodes of a partial folder whose arrays are written"""
    folder = os.path.join(partial_dir, EPISODES_FOLDER)
    if not os.path.isdir(folder):
        return set()
    return {int(name[len("episode_"):-len(".npz")]) for name in os.listdir(folder)
            if name.startswith("episode_") and name.endswith(".npz") and ".tmp" not in name}


def lockFolder(partial_dir: str, wait: float = 3.0) -> BaseFileLock:
    """
    Take the partial folder's lock (released by the operating system when this process and its workers are gone).

    :param partial_dir: the partial dataset folder
    :param wait: seconds to wait for a process that is dying (after a kill) to release it
    :return: the held lock
    :raises UsageError: another generator is writing this dataset
    """
    lock = tryLock(os.path.join(partial_dir, LOCK_FILE), wait)
    if lock is None:
        raise UsageError(f"{partial_dir} is being written by another dataset_generator process")
    return lock


def flattenSettings(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """:return: nested dicts flattened to dotted keys (env_kwargs.max_steps), to name what differs"""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            flat.update(flattenSettings(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def settingsDiffering(partial_dir: str, settings: dict[str, Any]) -> list[tuple[str, Any, Any]] | None:
    """
    :param partial_dir: a partial folder
    :param settings: the recording's settings now
    :return: (dotted setting, value the folder was started with, value now) for each setting that differs, sorted by
        name (a value missing on one side is None); None when the folder has no readable SETTINGS_FILE
    """
    try:
        with open(os.path.join(partial_dir, SETTINGS_FILE), encoding="utf-8") as handle:
            saved = json.load(handle)
    except (OSError, ValueError):
        return None
    current = flattenSettings(settings)
    saved = flattenSettings(saved) if isinstance(saved, dict) else {}
    if current.get("env_kwargs.action_joints"):  # force_down, once given to joint moves, never changed them
        saved.pop("env_kwargs.force_down", None)
    return [(key, saved.get(key), current.get(key)) for key in sorted(set(saved) | set(current))
            if saved.get(key) != current.get(key)]


def _shown(value: Any) -> str:
    """:return: a setting's value as a refusal shows it (a string bare, a missing one ``unset``, others as JSON)"""
    return "unset" if value is None else value if isinstance(value, str) else json.dumps(value)


def differingText(differing: list[tuple[str, Any, Any]]) -> str:
    """:return: :func:`settingsDiffering`'s settings as a resume refusal names them: ``seed was 0, now 8; ...``"""
    return "; ".join(f"{key} was {_shown(then)}, now {_shown(now)}" for key, then, now in differing)


def clearFolder(folder: str) -> None:
    """Empty a folder but keep it (and its lock file, which this process holds)."""
    for entry in os.listdir(folder):
        if entry == LOCK_FILE:
            continue
        path = os.path.join(folder, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def publish(partial_dir: str, final_dir: str, lock: BaseFileLock) -> None:
    """
    Rename the finished partial folder to its final name (replacing an older dataset under --force).

    :param partial_dir: the finished partial folder
    :param final_dir: the dataset's final folder
    :param lock: the partial folder's lock, released and its file removed first (Windows cannot remove a held one)
    """
    lock.release()
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(partial_dir, LOCK_FILE))
    if os.path.exists(final_dir):
        old_dir = os.path.join(os.path.dirname(final_dir), f".{os.path.basename(final_dir)}.old-{os.getpid()}")
        os.rename(final_dir, old_dir)
        os.rename(partial_dir, final_dir)
        shutil.rmtree(old_dir)
    else:
        os.rename(partial_dir, final_dir)
