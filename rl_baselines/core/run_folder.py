"""RunFolder: the names of everything a run folder holds, and the stamp of a new one, in one place.

A run folder is ``<log-dir>/<env>/<srl-model>/<algo>/<stamp>_<tag>`` (docs/architecture.md, "Files on disk"). Every
module that writes or reads a run's files asks a :class:`RunFolder` for their paths instead of spelling the names,
so a name changes in one line. Invariant: a folder is a run when it holds ``args.json`` and a ``monitor`` folder; a
run whose folder loses its ``args.json`` while it trains (deleted or moved) saves nothing more
(:meth:`RunFolder.checkStays`).
"""
from __future__ import annotations

import dataclasses
import datetime
import os
import shutil
import warnings
from typing import Any

from environments import getEnvClass
from environments.srl_env import ENV_GLOBALS_FILE
from srl_models.base import RUN_RECORD_FILE
from srl_toolbox.cli import hasControlCharacter
from srl_toolbox.files import checkFolderStays, readJson

STAMP_FORMAT = "%y-%m-%d_%Hh%M_%S"
# The names a new run folder may take: <stamp>_<tag>, then <stamp>_<tag>_1 ... _999
RUN_FOLDER_ATTEMPTS = 1000
ARGS_FILE = "args.json"
MONITOR_DIR = "monitor"
# One Monitor CSV per env in MONITOR_DIR: <rank>.monitor.csv (SB3's Monitor adds the suffix, ``Monitor.EXT``, to the
# name it is given; spelled here so that readers of run folders need not import Stable-Baselines3)
MONITOR_SUFFIX = ".monitor.csv"
PROGRESS_FILE = "progress.csv"
LEARNING_CURVE_FILE = "learning_curve.png"
EVALUATIONS_FILE = "evaluations.npz"
HYPERPARAMS_FILE = "hyperparams.yaml"
CHECKPOINTS_DIR = "checkpoints"
PARTIAL_CHECKPOINT_MARK = ".partial-"  # in the name of a checkpoint folder still being written
# The best model so far (by evaluation with --eval-freq, else by mean training reward), saved as the latest is
BEST_DIR = "best"
DAMAGED_CHECKPOINTS_DIR = "damaged_checkpoints"
# Beside each saved model (the run folder's, a checkpoint's, best/): its files' checksums and what it is
# (rl_baselines.core.manifests); named here so that readers of run folders need not import what manifests.py does
MANIFEST_FILE = "manifest.json"


def newStamp(now: datetime.datetime | None = None) -> str:
    """
    :param now: the time to stamp (default: now)
    :return: the stamp a new run folder's name starts with (``YY-MM-DD_HHhMM_SS``)
    """
    return (now or datetime.datetime.now()).strftime(STAMP_FORMAT)


def tagRefusal(tag: str) -> str | None:
    """
    :param tag: a ``--tag``, the end of a new run folder's name (``<stamp>_<tag>``)
    :return: why it cannot be (one line), None when it can: a name, never a path, without control characters
    """
    if not tag or any(separator in tag for separator in filter(None, ("/", os.sep, os.altsep, "\0"))):
        return f"--tag {tag!r}: it ends the run folder's name, so it cannot be empty nor hold '/' (a path)"
    if hasControlCharacter(tag):
        return f"--tag {tag!r}: it ends the run folder's name, so it cannot hold a control character (a newline, a tab)"
    return None


@dataclasses.dataclass(frozen=True)
class RunFolder:
    """
    The paths of a run folder's files.

    :param path: the run folder
    """

    path: str

    @property
    def args_file(self) -> str:
        """:return: the run's arguments (JSON)"""
        return os.path.join(self.path, ARGS_FILE)

    @property
    def env_globals_file(self) -> str:
        """:return: the env's constants (JSON)"""
        return os.path.join(self.path, ENV_GLOBALS_FILE)

    @property
    def monitor_dir(self) -> str:
        """:return: the folder of the Monitor CSVs, one per env"""
        return os.path.join(self.path, MONITOR_DIR)

    @property
    def progress_file(self) -> str:
        """:return: the algorithm's logged values (CSV)"""
        return os.path.join(self.path, PROGRESS_FILE)

    @property
    def learning_curve_file(self) -> str:
        """:return: the episode-reward curve (PNG)"""
        return os.path.join(self.path, LEARNING_CURVE_FILE)

    @property
    def evaluations_file(self) -> str:
        """:return: the deterministic evaluations (SB3 EvalCallback keys), with --eval-freq"""
        return os.path.join(self.path, EVALUATIONS_FILE)

    @property
    def hyperparams_file(self) -> str:
        """:return: the hyperparameters the run used (YAML)"""
        return os.path.join(self.path, HYPERPARAMS_FILE)

    @property
    def srl_model_file(self) -> str:
        """:return: the trained SRL model the run observed (name, path, hash), when it observed one"""
        return os.path.join(self.path, RUN_RECORD_FILE)

    @property
    def best_dir(self) -> str:
        """:return: the folder of the best model so far (its model file, normalisation and manifest)"""
        return os.path.join(self.path, BEST_DIR)

    @property
    def checkpoints_dir(self) -> str:
        """:return: the folder of the periodic checkpoints"""
        return os.path.join(self.path, CHECKPOINTS_DIR)

    def removePartialCheckpoints(self) -> int:
        """:return: how many unfinished checkpoint folders (``.<N>_steps.partial-XXXX``: a save cut by a kill) were
        deleted"""
        parent = self.checkpoints_dir
        partial = [name for name in os.listdir(parent) if PARTIAL_CHECKPOINT_MARK in name] if os.path.isdir(
            parent) else []
        for name in partial:
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        return len(partial)

    @property
    def damaged_checkpoints_dir(self) -> str:
        """:return: where ``--resume`` moves checkpoints that failed their checksums (kept as evidence)"""
        return os.path.join(self.path, DAMAGED_CHECKPOINTS_DIR)

    def checkStays(self) -> None:
        """
        Before a save into the run while it trains: stop it when its folder was deleted or moved meanwhile (it no
        longer holds its args.json), rather than make the folder again with part of a run in it. One os.stat.

        :raises srl_toolbox.files.FolderVanished: it is gone (one line, exit 1)
        """
        checkFolderStays(self.path, ARGS_FILE, "the run folder", "training")

    @classmethod
    def isRun(cls, folder: str) -> bool:
        """
        :param folder: a folder
        :return: whether it holds a run (its args.json and monitor folder)
        """
        run = cls(folder)
        return os.path.isfile(run.args_file) and os.path.isdir(run.monitor_dir)


def newestRunBelow(folder: str) -> tuple[str | None, int]:
    """
    :param folder: a folder that is not a run (a train ``--log-dir``, an env's or an algorithm's folder below it)
    :return: the run folders below it (each holding its args.json; hidden folders and a run's own subfolders are not
        searched): the newest by its args.json's modification time (None when there is none), and how many there are
    """
    newest, newest_time, count = None, -1.0, 0
    for root, subfolders, _ in os.walk(folder):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        if root == folder or not os.path.isfile(os.path.join(root, ARGS_FILE)):
            continue
        subfolders.clear()
        count += 1
        try:
            written = os.path.getmtime(os.path.join(root, ARGS_FILE))
        except OSError:  # (removed meanwhile)
            continue
        if written > newest_time:
            newest, newest_time = root, written
    return newest, count


def enclosingRun(folder: str, levels: int = 3) -> tuple[str, str] | None:
    """
    :param folder: a folder that is not a run (one given for a run: a checkpoint's, ``best/``, ``monitor/``)
    :param levels: how many folders up to look
    :return: (the nearest run folder above it, holding its args.json; ``folder``'s path below that run, with ``/``),
        None when none of the ``levels`` folders above holds a run
    """
    below: list[str] = []
    current = os.path.abspath(folder)
    for _ in range(levels):
        current, name = os.path.split(current)
        if not name:
            return None
        below.insert(0, name)
        if os.path.isfile(os.path.join(current, ARGS_FILE)):
            return current, "/".join(below)
    return None


def insideRunRefusal(flag: str, folder: str) -> tuple[str, str, str] | None:
    """
    :param flag: the option that named the folder, for the line
    :param folder: a folder given for a run (or for runs below it) that holds no run, or a file of a run
    :return: (the start of the refusal's line, ``FLAG 'FOLDER' is checkpoints/512_steps/ inside the run RUN, not a run
        folder`` (a file: ``is args.json inside the run``), to which the caller adds the command that names the run;
        the run; ``folder``'s path below it), None when no run holds it (:func:`enclosingRun`)
    """
    inside = enclosingRun(folder)
    if inside is None:
        return None
    run, below = inside
    shown = below if os.path.isfile(folder) else f"{below}/"
    return f"{flag} {folder!r} is {shown} inside the run {run}, not a run folder", run, below


def runsBelowHint(folder: str) -> str:
    """
    :param folder: a folder given for one run that is none (a run's root, as train's ``--log-dir``)
    :return: the end of the refusal's line that names the run meant: ``: the newest of the 5 below it is PATH`` (``:
        the one below it is PATH``), empty when no run is below it
    """
    newest, count = newestRunBelow(folder)
    if newest is None:
        return ""
    return f": the one below it is {newest}" if count == 1 else f": the newest of the {count} below it is {newest}"


def readRunArgs(folder: str) -> dict[str, Any] | None:
    """
    :param folder: a run folder
    :return: its args.json, None when it has none or it cannot be read (not written yet: train writes it atomically;
        a folder of monitor files only; a damaged file; JSON that is not an object)
    """
    try:
        args = readJson(RunFolder(folder).args_file)
    except (OSError, ValueError):
        return None
    return args if isinstance(args, dict) else None


def runPhysics(folder: str) -> int:
    """
    :param folder: a run folder
    :return: the physics version its env_globals.json records (1 when the file or the constant is absent: the runs
        made before envs recorded one; also when the file cannot be read)
    """
    path = RunFolder(folder).env_globals_file
    if not os.path.isfile(path):
        return 1
    try:
        recorded = readJson(path)
    except (OSError, ValueError):
        return 1
    constants = recorded.get("constants") if isinstance(recorded, dict) else None
    return int(constants.get("PHYSICS_VERSION", 1)) if isinstance(constants, dict) else 1


def recordedPhysicsKeywords(folder: str, env_id: str) -> dict[str, Any]:
    """
    What replay, ``--resume`` and the dataset generator add to a run's env keywords (its args.json does not say).

    :param folder: a run folder
    :param env_id: its env, registered
    :return: the env keywords that rebuild the physics version the run was made with (:func:`runPhysics`; a Kuka run
        of version 1: ``{"physics": "reference"}``, the env's ``physicsKeywords``), {} for the env's current version,
        and {} after one warning for a version the env cannot rebuild
    """
    env_class = getEnvClass(env_id)
    recorded, current = runPhysics(folder), int(getattr(env_class, "PHYSICS_VERSION", 1))
    if recorded == current:
        return {}
    keywords = getattr(env_class, "physicsKeywords", lambda version: None)(recorded)
    if keywords is None:
        warnings.warn(f"the run in {folder!r} was made with physics version {recorded} of {env_id}, which simulates "
                      f"only version {current} now: its episodes may differ", stacklevel=2)
        return {}
    return dict(keywords)

