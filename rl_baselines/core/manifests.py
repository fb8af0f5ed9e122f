"""Manifests: what a saved model folder records about its save, and the checks a loader makes against it.

Every folder a model is saved into gets a ``manifest.json`` written after the model (:func:`writeManifest`):
algorithm, API version, env id, observation/action spaces (:func:`describeSpace`), the SRL model's hash and the
SHA-256 of each file of the save. :func:`checkManifest` and :func:`checkModelFile` refuse, in one line, another
algorithm, env or SRL model, or a file that changed or was cut short (:class:`DamagedCheckpointError`).
rl_baselines.core.checkpointing builds checkpoints on these.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import gymnasium as gym
import numpy as np

from rl_baselines.core.run_folder import MANIFEST_FILE as MANIFEST_FILE  # (re-exported: the module's file)
from rl_baselines.envs.factory import NORMALISATION_FILE
from srl_toolbox.files import readJson, sha256File, writeJson

MANIFEST_FORMAT = 1


class CheckpointError(ValueError):
    """A model folder or checkpoint that cannot be used or written (the message is one line)."""


class DamagedCheckpointError(CheckpointError):
    """
    A saved file that is missing, unreadable or differs from its checksum (cut short by a kill, damaged on disk).

    :param message: the one-line message
    :param path: the file
    :param problem: what is wrong with it, without its path (one line)
    """

    def __init__(self, message: str, path: str, problem: str) -> None:
        super().__init__(message)
        self.path = path
        self.problem = problem


def describeSpace(space: Any) -> dict[str, Any]:
    """
    :param space: a gymnasium space
    :return: a JSON description precise enough to tell two spaces apart (bounds as a hash), with a Box's bounds
        summarised for messages (``bounds``, :func:`boundsText`: shown, not compared; older manifests lack it)
    """

    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.Box):
        bounds = hashlib.sha256(np.ascontiguousarray(space.low).tobytes() + np.ascontiguousarray(space.high).tobytes())
        return {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
                "bounds_sha256": bounds.hexdigest(), "bounds": boundsText(space)}
    if isinstance(space, gym.spaces.Dict):
        return {"type": "Dict", "spaces": {key: describeSpace(sub) for key, sub in space.spaces.items()}}
    return {"type": type(space).__name__, "repr": repr(space)}


def boundsText(space: gym.spaces.Box) -> str:
    """:return: a Box's bounds in a few words: ``low -1000, high 1000`` when every element has the same, else their
    minimum and maximum (``low min -1 max 0, high min 1 max 255``)"""
    parts = []
    for name, values in (("low", space.low), ("high", space.high)):
        values = np.asarray(values, dtype=np.float64)
        if values.size == 0:
            parts.append(f"{name} none")
        elif values.min() == values.max():
            parts.append(f"{name} {values.min():g}")
        else:
            parts.append(f"{name} min {values.min():g} max {values.max():g}")
    return ", ".join(parts)


# what differs between two described spaces, by entry (bounds_sha256: the bounds), in the order messages name them
_COMPARED = (("type", "type"), ("dtype", "dtype"), ("shape", "shape"), ("bounds_sha256", "bounds"), ("n", "size"),
             ("start", "start"), ("repr", "space"))


def spaceDifferences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """
    :param saved: a space as :func:`describeSpace` described it (a manifest's, maybe an older version's)
    :param current: another, described now
    :return: what differs (``type``, ``dtype``, ``shape``, ``bounds``, ``size``, ``start``; a Dict's subspaces as
        ``'key' bounds`` or ``subspaces``), empty when the two are the same space (the ``bounds`` summary is not
        compared: the hash is)
    """

    if saved.get("type") != current.get("type"):
        return ["type"]
    if saved.get("type") == "Dict":
        saved_spaces, current_spaces = saved.get("spaces") or {}, current.get("spaces") or {}
        if set(saved_spaces) != set(current_spaces):
            return ["subspaces"]
        return [f"{key!r} {difference}" for key in sorted(saved_spaces)
                for difference in spaceDifferences(saved_spaces[key], current_spaces[key])]
    return [name for key, name in _COMPARED if saved.get(key) != current.get(key)]


def spaceText(described: dict[str, Any]) -> str:
    """:return: a space that :func:`describeSpace` described, in one line, e.g. ``Box(float32, shape [2], low -1000,
    high 1000)`` (a Box of an older manifest: ``bounds not recorded``)"""
    kind = described.get("type")
    if kind == "Box":
        return (f"Box({described.get('dtype')}, shape {described.get('shape')}, "
                f"{described.get('bounds', 'bounds not recorded')})")
    if kind == "Discrete":
        start = described.get("start", 0)
        return f"Discrete({described.get('n')}{f', start {start}' if start else ''})"
    if kind == "Dict":
        subspaces = described.get("spaces") or {}
        return "Dict(" + ", ".join(f"{key!r}: {spaceText(sub)}" for key, sub in subspaces.items()) + ")"
    return str(described.get("repr", kind))


def spaceMismatch(saved: dict[str, Any], space: Any, saved_label: str, current_label: str) -> str | None:
    """
    :param saved: a space as a manifest recorded it
    :param space: the gymnasium space to compare with it
    :param saved_label: whose the saved space is, for the message (``the model's (OmnirobotEnv-v0)``)
    :param current_label: whose ``space`` is (``this run's (CarRacingGymEnv-v0)``)
    :return: None when they are the same space, else what differs and both spaces, described alike (one line):
        ``different bounds: the model's ... Box(...); this run's ... Box(...)``
    """

    current = describeSpace(space)
    differences = spaceDifferences(saved, current)
    if not differences:
        return None
    return (f"different {' and '.join(differences)}: {saved_label} {spaceText(saved)}; "
            f"{current_label} {spaceText(current)}")


def spacesOf(algo: Any) -> dict[str, Any]:
    """:return: the observation and action spaces of an algorithm's env (or of its model), described"""
    for owner in (getattr(algo, "env", None), getattr(algo, "model", None), algo):
        observation_space = getattr(owner, "observation_space", None)
        action_space = getattr(owner, "action_space", None)
        if observation_space is not None and action_space is not None:
            return {"observation_space": describeSpace(observation_space), "action_space": describeSpace(action_space)}
    return {"observation_space": None, "action_space": None}


def filesUnder(folder: str, skip: str | None = None) -> list[str]:
    """:return: every file below ``folder`` (relative paths, sorted), except those below the subfolder ``skip``"""
    found = []
    for root, _, names in os.walk(folder):
        relative_root = os.path.relpath(root, folder)
        if skip is not None and (relative_root == skip or relative_root.startswith(skip + os.sep)):
            continue
        found += [os.path.normpath(os.path.join(relative_root, name)) for name in names if name != MANIFEST_FILE]
    return sorted(found)


def fileChecksums(folder: str, names: list[str]) -> dict[str, str]:
    return {name: sha256File(os.path.join(folder, name)) for name in names}


def writeManifest(folder: str, algo: Any, algo_name: str, run_info: dict[str, Any], num_timesteps: int,
                  files: list[str], **extra: Any) -> dict[str, Any]:
    """
    Write ``folder/manifest.json`` (atomically) describing a save.

    :param folder: the saved folder
    :param algo: the algorithm (its spaces and API version)
    :param algo_name: its registered name
    :param run_info: from :func:`runDescription`
    :param num_timesteps: env steps the saved model was trained for
    :param files: the files of the save, relative to ``folder``
    :param extra: more entries (finished, resumable, replay_buffer, ...)
    :return: the manifest
    """
    manifest = {"format": MANIFEST_FORMAT, "algo": algo_name, "api_version": int(type(algo).API_VERSION),
                **run_info, **spacesOf(algo), "num_timesteps": int(num_timesteps),
                "files": fileChecksums(folder, files), **extra}
    writeJson(os.path.join(folder, MANIFEST_FILE), manifest)
    return manifest


def saveModel(algo: Any, model_path: str, algo_name: str, run_info: dict[str, Any], num_timesteps: int,
              **extra: Any) -> None:
    """
    Save a model (and its normalisation statistics) with the manifest of that save beside it.

    :param algo: the algorithm
    :param model_path: the model file
    :param algo_name: registered name
    :param run_info: from :func:`runDescription`
    :param num_timesteps: its step count
    :param extra: more manifest entries
    """

    folder = os.path.dirname(os.path.abspath(model_path))
    algo.save(model_path)
    files = [name for name in (os.path.basename(model_path), NORMALISATION_FILE)
             if os.path.isfile(os.path.join(folder, name))]
    writeManifest(folder, algo, algo_name, run_info, num_timesteps, files, **extra)


def readManifest(folder: str) -> dict[str, Any] | None:
    """
    :param folder: a model folder
    :return: its manifest, None when it has none (saved by an older version)
    :raises CheckpointError: unreadable manifest
    """
    path = os.path.join(folder, MANIFEST_FILE)
    if not os.path.isfile(path):
        return None
    try:
        manifest = readJson(path)
    except (OSError, ValueError) as error:
        raise DamagedCheckpointError(f"{path} is unreadable ({error})", path, f"is unreadable ({error})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise DamagedCheckpointError(f"{path} is not a manifest (no file list)", path, "is not a manifest (no file list)")
    return manifest


def checkFiles(folder: str, checksums: dict[str, str]) -> None:
    """
    :param folder: a folder
    :param checksums: relative path -> SHA-256
    :raises DamagedCheckpointError: a file is missing or differs (cut short, changed since)
    """
    for name, expected in checksums.items():
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise DamagedCheckpointError(f"{path} is missing (listed in {os.path.join(folder, MANIFEST_FILE)})",
                                         path, "is missing")
        if sha256File(path) != expected:
            size = os.path.getsize(path)
            problem = "does not match its checksum: cut short or changed since it was saved"
            raise DamagedCheckpointError(f"{path} ({size} bytes) does not match its checksum in "
                                         f"{os.path.join(folder, MANIFEST_FILE)}: cut short or changed since it was "
                                         f"saved", path, f"({size} bytes) {problem}")


def checkManifest(manifest: dict[str, Any], folder: str, algo_name: str | None = None, api_version: int | None = None,
                  expected: dict[str, Any] | None = None, check_files: bool = True) -> None:
    """
    :param manifest: a manifest
    :param folder: its folder (for messages and checksums)
    :param algo_name: the algorithm that must have written it
    :param api_version: the contract version the loading class implements: it reads what that version and the
        earlier ones wrote (a run folder or checkpoint of API version 1 loads, replays and resumes under version 2)
    :param expected: entries that must match (env, srl_model, srl_model_hash, observation_space, ...)
    :param check_files: also check the files' checksums (False: :func:`verifyCheckpoint` did)
    :raises CheckpointError: the first mismatch, in one line
    """
    if algo_name is not None and manifest.get("algo") != algo_name:
        raise CheckpointError(f"{folder} holds a model of algorithm {manifest.get('algo')!r}, not {algo_name!r}")
    saved_version = manifest.get("api_version")
    if api_version is not None and saved_version is not None and not (
            isinstance(saved_version, int) and 1 <= saved_version <= int(api_version)):
        raise CheckpointError(f"{folder} was saved by API version {manifest.get('api_version')} of {algo_name}, "
                              f"this one implements version {api_version}")
    for key, value in (expected or {}).items():
        if key in manifest and manifest[key] != value:
            saved = manifest[key]
            if key == "srl_model_hash":
                saved, value = str(saved)[:12], str(value)[:12]
            elif isinstance(value, dict):
                saved, value = json.dumps(saved, sort_keys=True), json.dumps(value, sort_keys=True)
            raise CheckpointError(f"{folder} was saved with {key} {saved}, this run has {value}")
    if check_files:
        checkFiles(folder, manifest["files"])


def checkModelFile(model_path: str, algo_name: str, api_version: int | None = None,
                   expected: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """
    Check a model file against the manifest beside it (models saved before manifests existed pass unchecked).

    :param model_path: the model file
    :param algo_name: the algorithm loading it
    :param api_version: the loading class's API version
    :param expected: manifest entries that must match
    :return: the manifest, or None when there is none
    :raises CheckpointError: mismatch, or a file cut short or changed (one line)
    """
    folder = os.path.dirname(os.path.abspath(model_path))
    manifest = readManifest(folder)
    if manifest is None:
        return None
    if os.path.basename(model_path) not in manifest["files"]:
        raise CheckpointError(f"{model_path} is not the model listed in {os.path.join(folder, MANIFEST_FILE)}")
    checkManifest(manifest, folder, algo_name, api_version, expected)
    return manifest
