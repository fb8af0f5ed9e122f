"""Checked model folders and the checkpoints a run resumes from.

Every folder a model is saved into (the run folder, ``best/``, ``checkpoints/<N>_steps/``) gets a ``manifest.json``
written after the model: algorithm, API version, env id, observation/action spaces, the SRL model's hash (runs on a
trained SRL model) and the SHA-256 of each file of the save. Loading a model (``--resume``, ``--load-rl-model-path``,
``replay.enjoy_baselines``) checks it: another algorithm, env or SRL model, or a file that changed or was cut short,
is refused in one line; a model continued with ``--load-rl-model-path`` must also fit the run's action and
observation spaces (:func:`checkSavedSpaces`).

A checkpoint is a whole folder, written as ``checkpoints/.<N>_steps.partial-XXXX/`` and renamed to
``checkpoints/<N>_steps/`` once complete (files fsynced first), so a kill or a full disk during a save leaves the
previous checkpoints as they were::

    checkpoints/<N>_steps/
        <algo>_model.*  vecnormalize.npz   the model (optimizer state inside) and normalisation statistics
        training_state/                    what the algorithm keeps beyond its model (saveTrainingState)
        replay_buffer/                     off-policy algorithms, every --buffer-save-freq steps (else a manifest
                                           entry points at the newest older one); the two newest buffers are kept
        rng_state.npz                      Python, NumPy and torch generators
        run_state.json                     step counts, monitor/progress lengths, callback state, env episode starts
        manifest.json                      written last

A checkpoint is intact when its manifest reads and every file it lists (its replay buffer's included, wherever that
buffer lies) matches its SHA-256 (:func:`verifyCheckpoint`); a damaged one raises :class:`DamagedCheckpointError`.
``--resume`` skips damaged checkpoints for the newest intact one, whose parts all come from that one folder, and
moves the damaged ones to ``damaged_checkpoints/`` (:func:`moveDamagedCheckpoint`), so that a later checkpoint of the
same step count has its name free. The buffer of the checkpoint before the newest buffer is kept for that fallback.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile
from typing import Any

import gymnasium as gym
import numpy as np

from rl_baselines.core.run_folder import CHECKPOINTS_DIR, RunFolder
from rl_baselines.core.training_state import RNG_FILE, freezeNextReset, restartEpisodes, restoreGlobalRNG
from rl_baselines.envs.factory import NORMALISATION_FILE
from srl_models.config import RUN_RECORD_FILE
from srl_toolbox.cli import UsageError
from srl_toolbox.files import readJson, writeJson, writeNpz

MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = 1
TRAINING_STATE_DIR = "training_state"
REPLAY_BUFFER_DIR = "replay_buffer"
RUN_STATE_FILE = "run_state.json"
_CHECKPOINT_NAME = re.compile(r"^(\d+)_steps$")
_PARTIAL_MARK = ".partial-"


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


def sha256File(path: str) -> str:
    """:return: the SHA-256 of a file, in hex"""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def describeSpace(space: Any) -> dict[str, Any]:
    """
    :param space: a gymnasium space
    :return: a JSON description precise enough to tell two spaces apart (bounds as a hash)
    """

    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.Box):
        bounds = hashlib.sha256(np.ascontiguousarray(space.low).tobytes() + np.ascontiguousarray(space.high).tobytes())
        return {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype), "bounds_sha256": bounds.hexdigest()}
    if isinstance(space, gym.spaces.Dict):
        return {"type": "Dict", "spaces": {key: describeSpace(sub) for key, sub in space.spaces.items()}}
    return {"type": type(space).__name__, "repr": repr(space)}


def runDescription(run_dir: str, args: Any) -> dict[str, Any]:
    """
    :param run_dir: the run folder (its srl_model.json, when the run observes a trained SRL model)
    :param args: the run's arguments (env, srl_model)
    :return: what every manifest of the run records about it: env id, observation mode and SRL model hash
    """

    record_path = os.path.join(run_dir, RUN_RECORD_FILE)
    srl_hash = readJson(record_path).get("hash") if os.path.isfile(record_path) else None
    return {"env": args.env, "srl_model": args.srl_model, "srl_model_hash": srl_hash}


def _spaces(algo: Any) -> dict[str, Any]:
    """:return: the observation and action spaces of an algorithm's env (or of its model), described"""
    for owner in (getattr(algo, "env", None), getattr(algo, "model", None), algo):
        observation_space = getattr(owner, "observation_space", None)
        action_space = getattr(owner, "action_space", None)
        if observation_space is not None and action_space is not None:
            return {"observation_space": describeSpace(observation_space), "action_space": describeSpace(action_space)}
    return {"observation_space": None, "action_space": None}


def _filesUnder(folder: str, skip: str | None = None) -> list[str]:
    """:return: every file below ``folder`` (relative paths, sorted), except those below the subfolder ``skip``"""
    found = []
    for root, _, names in os.walk(folder):
        relative_root = os.path.relpath(root, folder)
        if skip is not None and (relative_root == skip or relative_root.startswith(skip + os.sep)):
            continue
        found += [os.path.normpath(os.path.join(relative_root, name)) for name in names if name != MANIFEST_FILE]
    return sorted(found)


def _checksums(folder: str, names: list[str]) -> dict[str, str]:
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
                **run_info, **_spaces(algo), "num_timesteps": int(num_timesteps),
                "files": _checksums(folder, files), **extra}
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


def checkSavedSpaces(manifest: dict[str, Any], settings: Any, algo_class: type, make_env: Any) -> None:
    """
    Refuse to continue a saved model on an env whose action or observation space differs from the one it was
    trained on (its manifest records them), before anything is written: one env is built with the algorithm's
    ``makeEnv`` (no monitor files) and closed.

    :param manifest: the manifest beside the model (``settings.continue_from``)
    :param settings: the run's settings (a RunSettings)
    :param algo_class: the algorithm's class (its ``makeEnv``)
    :param make_env: ``make_env(algo_class, settings)`` builds the class's env (rl_baselines.core.plugin_v1.makeEnv,
        for either API version)
    :raises ValueError: the spaces differ (one line)
    """

    if manifest.get("action_space") is None and manifest.get("observation_space") is None:
        return
    env = make_env(algo_class, settings.replace(num_cpu=1, monitor_dir=None))
    try:
        spaces = {"action_space": env.action_space, "observation_space": env.observation_space}
    finally:
        env.close()
    for name, space in spaces.items():
        saved = manifest.get(name)
        if saved is None or saved == describeSpace(space):
            continue
        if name == "action_space" and saved.get("type") != describeSpace(space)["type"]:
            kinds = {"Discrete": "discrete", "Box": "continuous"}
            hint = "drop -c/--continuous-actions" if settings.continuous_actions else "add -c/--continuous-actions"
            raise ValueError(f"{settings.continue_from} was trained with {kinds.get(saved['type'], saved['type'])} "
                             f"actions, this run has {kinds.get(describeSpace(space)['type'], 'other')} actions "
                             f"({hint})")
        shown = ", ".join(f"{key} {value}" for key, value in saved.items() if key != "bounds_sha256")
        raise ValueError(f"{settings.continue_from} was trained with another {name.replace('_', ' ')} ({shown}) "
                         f"than this run's {space}")


# --- checkpoints -------------------------------------------------------------------------------------------------


def checkpointsFolder(run_dir: str) -> str:
    """:return: ``run_dir/checkpoints``"""
    return os.path.join(run_dir, CHECKPOINTS_DIR)


def listCheckpoints(run_dir: str) -> list[tuple[int, str]]:
    """
    :param run_dir: a run folder
    :return: (step count, folder) of every complete checkpoint (renamed, with a manifest), oldest first
    """
    parent = checkpointsFolder(run_dir)
    found = []
    for name in os.listdir(parent) if os.path.isdir(parent) else []:
        match = _CHECKPOINT_NAME.match(name)
        folder = os.path.join(parent, name)
        if match and os.path.isfile(os.path.join(folder, MANIFEST_FILE)):
            found.append((int(match.group(1)), folder))
    return sorted(found)


def removePartialCheckpoints(run_dir: str) -> int:
    """:return: how many unfinished checkpoint folders (a save cut by a kill) were deleted"""
    parent = checkpointsFolder(run_dir)
    partial = [name for name in os.listdir(parent) if _PARTIAL_MARK in name] if os.path.isdir(parent) else []
    for name in partial:
        shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
    return len(partial)


def _fsyncTree(folder: str) -> None:
    """Flush every file below ``folder`` and the folders themselves to disk (the rename must not outrun them)."""
    for root, _, names in os.walk(folder):
        for name in names:
            with open(os.path.join(root, name), "rb") as handle:
                os.fsync(handle.fileno())
        _fsyncFolder(root)


def _fsyncFolder(folder: str) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # some file systems cannot sync a folder
    finally:
        os.close(descriptor)


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}{' (disk full?)' if error.errno == 28 else ''}"
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def writeCheckpoint(run_dir: str, algo: Any, algo_name: str, run_info: dict[str, Any], num_timesteps: int,
                    run_state: dict[str, Any], rng_arrays: dict[str, np.ndarray] | None, training_state: bool,
                    save_buffer: bool, **extra: Any) -> str:
    """
    Write ``checkpoints/<num_timesteps>_steps/`` as a whole: into a temporary folder, renamed when complete.

    :param run_dir: the run folder
    :param algo: the algorithm (its ``save``, and ``saveTrainingState`` when ``training_state``)
    :param algo_name: registered name
    :param run_info: from :func:`runDescription`
    :param num_timesteps: the step count
    :param run_state: what run_state.json keeps (monitor/progress lengths, callback state, env episode starts)
    :param rng_arrays: global generator states (training_state.captureGlobalRNG), None to leave them out
    :param training_state: also write the algorithm's training state (it supports resuming)
    :param save_buffer: write the replay buffer too (else the manifest names the newest older one, if any)
    :param extra: more manifest entries (finished, stopped_by, ...)
    :return: the checkpoint folder
    :raises CheckpointError: the save failed (disk full, ...); the temporary folder is removed, older checkpoints
        are untouched
    """

    parent = checkpointsFolder(run_dir)
    final = os.path.join(parent, f"{int(num_timesteps)}_steps")
    if os.path.isdir(final):
        return final  # no step since that checkpoint: same state
    previous = listCheckpoints(run_dir)
    tmp = None
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{int(num_timesteps)}_steps{_PARTIAL_MARK}", dir=parent)
        algo.save(os.path.join(tmp, f"{algo_name}_model{algo.MODEL_EXTENSION}"))
        buffer_ref = None
        if training_state:
            buffer_folder = os.path.join(tmp, REPLAY_BUFFER_DIR) if save_buffer else None
            algo.saveTrainingState(os.path.join(tmp, TRAINING_STATE_DIR), buffer_folder)
            if buffer_folder is not None and os.path.isdir(buffer_folder):
                buffer_ref = REPLAY_BUFFER_DIR
            else:
                buffer_ref = _newestBuffer(previous)
        if rng_arrays is not None:
            writeNpz(os.path.join(tmp, RNG_FILE), rng_arrays)
        writeJson(os.path.join(tmp, RUN_STATE_FILE), run_state)
        buffer_files = _filesUnder(os.path.join(tmp, REPLAY_BUFFER_DIR)) if buffer_ref == REPLAY_BUFFER_DIR else []
        writeManifest(tmp, algo, algo_name, run_info, num_timesteps, _filesUnder(tmp, skip=REPLAY_BUFFER_DIR),
                      resumable=bool(training_state), replay_buffer=buffer_ref,
                      replay_buffer_files=_checksums(os.path.join(tmp, REPLAY_BUFFER_DIR), buffer_files), **extra)
        _fsyncTree(tmp)
        os.rename(tmp, final)
        tmp = None
        _fsyncFolder(parent)
    except (OSError, ValueError, RuntimeError) as error:
        kept = f"the previous one ({previous[-1][0]} steps) is intact" if previous else "no earlier checkpoint"
        raise CheckpointError(f"checkpoint at {num_timesteps} steps not saved: {_reason(error)}; {kept}") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if buffer_ref == REPLAY_BUFFER_DIR:
        # Two replay buffers on disk (they can take gigabytes): this one, and the newest older one, which a resume
        # falling back from a damaged newest checkpoint goes on with.
        owners = [folder for _, folder in previous if os.path.isdir(os.path.join(folder, REPLAY_BUFFER_DIR))]
        for folder in owners[:-1]:
            shutil.rmtree(os.path.join(folder, REPLAY_BUFFER_DIR), ignore_errors=True)
    return final


def _newestBuffer(previous: list[tuple[int, str]]) -> str | None:
    """:return: the replay buffer folder of the newest earlier checkpoint that has one, relative to a new one"""
    for _, folder in reversed(previous):
        if os.path.isdir(os.path.join(folder, REPLAY_BUFFER_DIR)):
            return os.path.join("..", os.path.basename(folder), REPLAY_BUFFER_DIR)
    return None


def bufferFolder(checkpoint: str, manifest: dict[str, Any]) -> str | None:
    """
    :param checkpoint: a checkpoint folder
    :param manifest: its manifest
    :return: the replay buffer folder it resumes with, checked, or None (none saved, or deleted since)
    :raises DamagedCheckpointError: the buffer's files differ from their checksums
    """
    reference = manifest.get("replay_buffer")
    if not reference:
        return None
    folder = os.path.normpath(os.path.join(checkpoint, reference))
    if not os.path.isdir(folder):
        return None
    if reference == REPLAY_BUFFER_DIR:
        checkFiles(folder, manifest.get("replay_buffer_files", {}))
    else:
        owner = os.path.dirname(folder)
        owner_manifest = readManifest(owner) or {}
        checkFiles(folder, owner_manifest.get("replay_buffer_files", {}))
    return folder


def verifyCheckpoint(folder: str) -> tuple[dict[str, Any], str | None]:
    """
    Check that a checkpoint is intact: its manifest reads and every file it lists, its replay buffer's included,
    matches its SHA-256 (reading only).

    :param folder: a checkpoint folder
    :return: (its manifest, the replay buffer folder it resumes with, None for none or one deleted since)
    :raises DamagedCheckpointError: the first file that is missing, unreadable or differs
    """
    manifest = readManifest(folder)
    if manifest is None:
        path = os.path.join(folder, MANIFEST_FILE)
        raise DamagedCheckpointError(f"{path} is missing", path, "is missing")
    checkFiles(folder, manifest["files"])
    return manifest, bufferFolder(folder, manifest)


def moveDamagedCheckpoint(run_dir: str, folder: str) -> str:
    """
    Move a damaged checkpoint out of ``checkpoints/`` into ``damaged_checkpoints/`` (one rename, nothing deleted):
    kept for inspection, no longer listed, its name free for the checkpoint the resumed run writes at that step.

    :param run_dir: the run folder
    :param folder: the checkpoint folder
    :return: its new path (``damaged_checkpoints/<N>_steps``, or ``<N>_steps-2``, ... when that name is taken)
    """
    parent = RunFolder(run_dir).damaged_checkpoints_dir
    os.makedirs(parent, exist_ok=True)
    name = os.path.basename(os.path.normpath(folder))
    target, attempt = os.path.join(parent, name), 1
    while os.path.exists(target):
        attempt += 1
        target = os.path.join(parent, f"{name}-{attempt}")
    os.rename(folder, target)
    _fsyncFolder(parent)
    _fsyncFolder(os.path.dirname(os.path.normpath(folder)))
    return target


@dataclasses.dataclass
class Checkpoint:
    """
    The checkpoint a resumed run restores (``train --resume``), handed to the algorithm's ``train``.

    :param folder: the checkpoint folder (``checkpoints/<N>_steps``)
    :param buffer_folder: the replay-buffer folder to restore, None to start with an empty buffer
    """

    folder: str
    buffer_folder: str | None = None

    def restore(self, algo: Any) -> None:
        """
        The last step of resuming, once the algorithm built its env and loaded the checkpoint's model: check the
        spaces, make every env restart its episode from the same start, restore the algorithm's training state
        (loadTrainingState) and then the global random generators.

        :param algo: the algorithm (its ``env`` built)
        :raises UsageError: the env's spaces differ from the checkpoint's, or its training state does not fit
        """
        folder = self.folder
        manifest = readManifest(folder) or {}
        for name in ("observation_space", "action_space"):
            space = getattr(algo.env, name, None)
            if manifest.get(name) is not None and space is not None and describeSpace(space) != manifest[name]:
                raise UsageError(f"--resume: {folder} was saved with another {name.replace('_', ' ')} than this "
                                 f"env's {space}")
        run_state = readJson(os.path.join(folder, RUN_STATE_FILE))
        restartEpisodes(algo.env, run_state.get("episode_starts"))
        freezeNextReset(algo.env)
        try:
            algo.loadTrainingState(os.path.join(folder, TRAINING_STATE_DIR), self.buffer_folder)
        except (ValueError, KeyError, OSError) as error:
            raise UsageError(f"--resume: the training state in {folder} does not fit ({error})") from None
        rng_path = os.path.join(folder, RNG_FILE)
        if os.path.isfile(rng_path):
            with np.load(rng_path, allow_pickle=False) as data:
                restoreGlobalRNG(data)


def restoreRun(algo: Any, checkpoint: Checkpoint) -> None:
    """
    :param algo: the algorithm (its ``env`` built, the checkpoint's model loaded)
    :param checkpoint: the checkpoint to restore (:meth:`Checkpoint.restore`)
    """
    checkpoint.restore(algo)
