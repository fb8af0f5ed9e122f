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

:class:`Checkpoint` is the one object a resume goes through: it writes a checkpoint of a training in progress
(:meth:`Checkpoint.capture`), checks it (:meth:`Checkpoint.verify`), reads its run state, cuts the run's monitor
files and progress.csv back to it (:meth:`Checkpoint.rewindRun`) and restores the algorithm from it
(:meth:`Checkpoint.restore`).

A checkpoint is intact when its manifest reads and every file it lists (its replay buffer's included, wherever that
buffer lies) matches its SHA-256 (:func:`verifyCheckpoint`); a damaged one raises :class:`DamagedCheckpointError`.
``--resume`` skips damaged checkpoints for the newest intact one, whose parts all come from that one folder, and
moves the damaged ones to ``damaged_checkpoints/`` (:func:`moveDamagedCheckpoint`), so that a later checkpoint of the
same step count has its name free. The buffer of the checkpoint before the newest buffer is kept for that fallback.
"""
from __future__ import annotations

import glob
import math
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rl_baselines.core.manifests import MANIFEST_FILE as MANIFEST_FILE  # the names of manifests.py are re-exported
from rl_baselines.core.manifests import MANIFEST_FORMAT as MANIFEST_FORMAT
from rl_baselines.core.manifests import CheckpointError as CheckpointError
from rl_baselines.core.manifests import DamagedCheckpointError as DamagedCheckpointError
from rl_baselines.core.manifests import checkFiles as checkFiles
from rl_baselines.core.manifests import checkManifest as checkManifest
from rl_baselines.core.manifests import checkModelFile as checkModelFile
from rl_baselines.core.manifests import describeSpace as describeSpace
from rl_baselines.core.manifests import fileChecksums, filesUnder, spaceMismatch
from rl_baselines.core.manifests import readManifest as readManifest
from rl_baselines.core.manifests import saveModel as saveModel
from rl_baselines.core.manifests import sha256File as sha256File
from rl_baselines.core.manifests import writeManifest as writeManifest
from rl_baselines.core.run_folder import MONITOR_SUFFIX, PARTIAL_CHECKPOINT_MARK, RunFolder
from rl_baselines.core.training_state import (
    FRAME_STACK_FILE,
    RNG_FILE,
    captureEpisodeStarts,
    captureFrameStack,
    captureReturns,
    countLines,
    keepFirstLines,
    resumeEnvs,
)
from srl_models.config import RUN_RECORD_FILE
from srl_toolbox.cli import UsageError
from srl_toolbox.files import readJson, writeJson, writeNpz
from srl_toolbox.global_state import captureGlobalRNG, restoreGlobalRNG

TRAINING_STATE_DIR = "training_state"
REPLAY_BUFFER_DIR = "replay_buffer"
RUN_STATE_FILE = "run_state.json"
_CHECKPOINT_NAME = re.compile(r"^(\d+)_steps$")


def bestToState(best_mean_reward: float) -> float | None:
    """:return: a best mean reward as run_state.json keeps it: None while none is known (-inf), so the file stays
    strict JSON (no ``-Infinity``)"""
    return best_mean_reward if math.isfinite(best_mean_reward) else None


def bestFromState(state: dict[str, Any]) -> float:
    """:return: the best mean reward a checkpoint's callback ``state`` kept (None or absent: -inf, none known)"""
    value = state.get("best_mean_reward")
    return -math.inf if value is None else float(value)


def runDescription(run_dir: str, args: Any) -> dict[str, Any]:
    """
    :param run_dir: the run folder (its srl_model.json, when the run observes a trained SRL model)
    :param args: the run's arguments (env, srl_model)
    :return: what every manifest of the run records about it: env id, observation mode and SRL model hash
    """

    record_path = os.path.join(run_dir, RUN_RECORD_FILE)
    srl_hash = readJson(record_path).get("hash") if os.path.isfile(record_path) else None
    return {"env": args.env, "srl_model": args.srl_model, "srl_model_hash": srl_hash}


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
    model_env = manifest.get("env")
    model_label, run_label = "the model's", "this run's"
    if model_env and model_env != settings.env:  # a model continued on another env: say which
        model_label, run_label = f"the model's ({model_env})", f"this run's ({settings.env})"
    for name, space in spaces.items():
        saved = manifest.get(name)
        mismatch = None if saved is None else spaceMismatch(saved, space, model_label, run_label)
        if mismatch is None:
            continue
        current_type = describeSpace(space)["type"]
        if name == "action_space" and saved.get("type") != current_type:
            kinds = {"Discrete": "discrete", "Box": "continuous"}
            hint = "drop -c/--continuous-actions" if settings.continuous_actions else "add -c/--continuous-actions"
            raise ValueError(f"{settings.continue_from} was trained with {kinds.get(saved['type'], saved['type'])} "
                             f"actions, this run has {kinds.get(current_type, 'other')} actions ({hint})")
        raise ValueError(f"{settings.continue_from} was trained with another {name.replace('_', ' ')} than this "
                         f"run's, with {mismatch}")


# --- checkpoints -------------------------------------------------------------------------------------------------


def _newPartialFolder(parent: str, num_timesteps: int) -> str:
    """:return: a new folder for a checkpoint being written, made with the umask's permissions as the run's other
    folders (mkdtemp's would be private, 0o700: other users could not replay the checkpoints)"""
    while True:
        folder = os.path.join(parent, f".{num_timesteps}_steps{PARTIAL_CHECKPOINT_MARK}{secrets.token_hex(4)}")
        try:
            os.mkdir(folder, 0o777)
            return folder
        except FileExistsError:
            continue


def checkpointFolders(run_dir: str) -> list[tuple[int, str]]:
    """
    :param run_dir: a run folder
    :return: (step count, folder) of every renamed checkpoint folder (``<N>_steps``: made whole before the rename,
        its manifest written last), whether or not its manifest is still there, oldest first
    """
    parent = RunFolder(run_dir).checkpoints_dir
    found = []
    for name in os.listdir(parent) if os.path.isdir(parent) else []:
        match = _CHECKPOINT_NAME.match(name)
        if match and os.path.isdir(os.path.join(parent, name)):
            found.append((int(match.group(1)), os.path.join(parent, name)))
    return sorted(found)


def listCheckpoints(run_dir: str) -> list[tuple[int, str]]:
    """
    :param run_dir: a run folder
    :return: (step count, folder) of every complete checkpoint (renamed, with a manifest), oldest first
    """
    return [(steps, folder) for steps, folder in checkpointFolders(run_dir)
            if os.path.isfile(os.path.join(folder, MANIFEST_FILE))]


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
                    save_buffer: bool, frame_stack: np.ndarray | None = None, **extra: Any) -> str:
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
    :param frame_stack: the envs' stacked frames (training_state.captureFrameStack), None for none
    :param extra: more manifest entries (finished, stopped_by, ...)
    :return: the checkpoint folder
    :raises CheckpointError: the save failed (disk full, ...); the temporary folder is removed, older checkpoints
        are untouched
    """

    parent = RunFolder(run_dir).checkpoints_dir
    final = os.path.join(parent, f"{int(num_timesteps)}_steps")
    if os.path.isdir(final):
        return final  # no step since that checkpoint: same state
    previous = listCheckpoints(run_dir)
    tmp = None
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = _newPartialFolder(parent, int(num_timesteps))
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
        if frame_stack is not None:
            writeNpz(os.path.join(tmp, FRAME_STACK_FILE), {"frames": frame_stack})
        writeJson(os.path.join(tmp, RUN_STATE_FILE), run_state)
        buffer_files = filesUnder(os.path.join(tmp, REPLAY_BUFFER_DIR)) if buffer_ref == REPLAY_BUFFER_DIR else []
        writeManifest(tmp, algo, algo_name, run_info, num_timesteps, filesUnder(tmp, skip=REPLAY_BUFFER_DIR),
                      resumable=bool(training_state), replay_buffer=buffer_ref,
                      replay_buffer_files=fileChecksums(os.path.join(tmp, REPLAY_BUFFER_DIR), buffer_files), **extra)
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
    :param folder: a checkpoint folder
    :return: (its manifest, the replay buffer folder it resumes with, None for none or one deleted since): see
        :meth:`Checkpoint.verify`
    :raises DamagedCheckpointError: the first file that is missing, unreadable or differs
    """
    checkpoint = Checkpoint(folder)
    return checkpoint.verify(), checkpoint.buffer_folder


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


@dataclass
class Checkpoint:
    """
    One checkpoint, the one place that writes, checks, reads and restores what a run resumes from: the model (with
    its optimizer state), the normalisation statistics, the algorithm's training state, the replay buffer, the
    random generators, the lengths of the monitor files and progress.csv, the step counts and the callbacks' state
    (run_state.json). Every part it restores comes from its own folder (and its buffer folder).

    :param folder: the checkpoint folder (``checkpoints/<N>_steps/``)
    :param buffer_folder: the replay buffer folder it resumes with (its own ``replay_buffer/`` or an older
        checkpoint's; set by :meth:`verify`), None for an empty buffer
    """

    folder: str
    buffer_folder: str | None = None

    @classmethod
    def capture(cls, run_dir: str, algo: Any, algo_name: str, run_info: dict[str, Any], num_timesteps: int,
                target_timesteps: int, callback_state: dict[str, Any] | Callable[[], dict[str, Any]],
                training_state: bool, save_buffer: bool, **extra: Any) -> Checkpoint:
        """
        Write the checkpoint of a training in progress (from inside ``train``, its env open): the global generators
        first (before anything of the save could draw from them), each env's episode start, then the files
        (:func:`writeCheckpoint`).

        :param run_dir: the run folder
        :param algo: the algorithm
        :param algo_name: its registered name
        :param run_info: from :func:`runDescription`
        :param num_timesteps: env steps taken so far
        :param target_timesteps: the step count at which the run ends
        :param callback_state: what the training callbacks keep (run_state.json's ``callback``), or a function
            returning it
        :param training_state: include the algorithm's training state, episode starts and generators' use
        :param save_buffer: write the replay buffer too
        :param extra: more manifest entries (finished, stopped_by)
        :return: the checkpoint
        :raises CheckpointError: the save failed; older checkpoints are untouched
        """
        rng = captureGlobalRNG()
        episode_starts = captureEpisodeStarts(getattr(algo, "env", None)) if training_state else None
        frame_stack = captureFrameStack(getattr(algo, "env", None)) if training_state else None
        returns = captureReturns(getattr(algo, "env", None)) if training_state else None
        run_state = runStateRecord(run_dir, num_timesteps, target_timesteps, episode_starts,
                                   callback_state() if callable(callback_state) else callback_state, returns)
        return cls(writeCheckpoint(run_dir, algo, algo_name, run_info, num_timesteps, run_state, rng, training_state,
                                   save_buffer, frame_stack, **extra))

    def manifest(self) -> dict[str, Any]:
        """
        :return: its manifest
        :raises DamagedCheckpointError: missing or unreadable
        """
        manifest = readManifest(self.folder)
        if manifest is None:
            path = os.path.join(self.folder, MANIFEST_FILE)
            raise DamagedCheckpointError(f"{path} is missing", path, "is missing")
        return manifest

    def verify(self) -> dict[str, Any]:
        """
        Check that it is intact (reading only): its manifest reads and every file it lists, its replay buffer's
        included, matches its SHA-256; sets :attr:`buffer_folder`.

        :return: its manifest
        :raises DamagedCheckpointError: the first file that is missing, unreadable or differs
        """
        manifest = self.manifest()
        checkFiles(self.folder, manifest["files"])
        self.buffer_folder = bufferFolder(self.folder, manifest)
        return manifest

    def runState(self) -> dict[str, Any]:
        """
        :return: its run_state.json, with the step counts as integers
        :raises DamagedCheckpointError: unreadable, or without the step counts
        """
        path = os.path.join(self.folder, RUN_STATE_FILE)
        try:
            run_state = readJson(path)
            for key in ("num_timesteps", "target_timesteps"):
                run_state[key] = int(run_state[key])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise DamagedCheckpointError(f"{path} is unreadable ({error})", path, f"is unreadable ({error})") from None
        return run_state

    def modelPath(self) -> str:
        """:return: its model file (named in its manifest)"""
        return os.path.join(self.folder, next(name for name in self.manifest()["files"]
                                              if "_model." in name and os.sep not in name))

    def rewindRun(self, run_dir: str, run_state: dict[str, Any]) -> None:
        """
        Cut the run's monitor files and progress.csv back to their length at this checkpoint (the rows written
        after it are replayed by the resumed run; monitor files it did not know are deleted).

        :param run_dir: the run folder
        :param run_state: its :meth:`runState`
        """
        sizes = run_state.get("monitor", {})
        for path in glob.glob(os.path.join(RunFolder(run_dir).monitor_dir, f"*{MONITOR_SUFFIX}")):
            name = os.path.basename(path)
            if name in sizes:
                os.truncate(path, int(sizes[name]))
            else:
                os.remove(path)
        keepFirstLines(RunFolder(run_dir).progress_file, int(run_state.get("progress_lines", 0)))

    def moveAside(self, run_dir: str) -> str:
        """:return: :func:`moveDamagedCheckpoint` of this (damaged) checkpoint: its new path"""
        return moveDamagedCheckpoint(run_dir, self.folder)

    def restore(self, algo: Any) -> None:
        """
        The last step of resuming, once the algorithm built its env and loaded this checkpoint's model: check the
        spaces, make every env restart its episode from the same start, restore the algorithm's training state
        (``loadTrainingState`` with :attr:`buffer_folder`) and then the global random generators.

        :param algo: the algorithm (its ``env`` built)
        :raises UsageError: the env's spaces differ from the checkpoint's, or its training state does not fit
        """
        folder = self.folder
        manifest = readManifest(folder) or {}
        for name in ("observation_space", "action_space"):
            space = getattr(algo.env, name, None)
            mismatch = None if manifest.get(name) is None or space is None else spaceMismatch(
                manifest[name], space, "the checkpoint's", "this env's")
            if mismatch is not None:
                raise UsageError(f"--resume: {folder} was saved with another {name.replace('_', ' ')} than this "
                                 f"env's, with {mismatch}")
        run_state = readJson(os.path.join(folder, RUN_STATE_FILE))
        replay = getattr(type(algo), "REPLAYS_EPISODES_IN_PROGRESS", False)
        stack_path = os.path.join(folder, FRAME_STACK_FILE)
        frames = None
        if replay and os.path.isfile(stack_path):  # (given back only to envs that go on with their episodes)
            with np.load(stack_path, allow_pickle=False) as data:
                frames = data["frames"]
        resumeEnvs(algo.env, run_state.get("episode_starts"), frames, replay, run_state.get("returns"))
        try:
            algo.loadTrainingState(os.path.join(folder, TRAINING_STATE_DIR), self.buffer_folder)
        except (ValueError, KeyError, OSError) as error:
            raise UsageError(f"--resume: the training state in {folder} does not fit ({error})") from None
        rng_path = os.path.join(folder, RNG_FILE)
        if os.path.isfile(rng_path):
            with np.load(rng_path, allow_pickle=False) as data:
                restoreGlobalRNG(data)


def runStateRecord(run_dir: str, num_timesteps: int, target_timesteps: int, episode_starts: Any,
                   callback_state: dict[str, Any], returns: list[float] | None = None) -> dict[str, Any]:
    """
    :param run_dir: the run folder
    :param num_timesteps: env steps taken so far
    :param target_timesteps: the step count at which the run ends
    :param episode_starts: each env's current episode start (training_state.captureEpisodeStarts), or None
    :param callback_state: what the training callbacks keep
    :param returns: each env's discounted return so far that a VecNormalize keeps (training_state.captureReturns),
        or None
    :return: a checkpoint's run_state.json: counts, the monitor files' and progress.csv's lengths, the callbacks'
        state, the envs' episode starts and returns, the time
    """
    run_folder = RunFolder(run_dir)
    return {
        "num_timesteps": int(num_timesteps),
        "target_timesteps": int(target_timesteps),
        "monitor": {os.path.basename(path): os.path.getsize(path)
                    for path in sorted(glob.glob(os.path.join(run_folder.monitor_dir, f"*{MONITOR_SUFFIX}")))},
        "progress_lines": countLines(run_folder.progress_file),
        "episode_starts": episode_starts,
        "returns": returns,
        "callback": callback_state,
        "time": time.time(),
    }


def restoreRun(algo: Any, checkpoint: Checkpoint) -> None:
    """
    :param algo: the algorithm (its ``env`` built, the checkpoint's model loaded)
    :param checkpoint: the checkpoint to restore (:meth:`Checkpoint.restore`)
    """
    checkpoint.restore(algo)
