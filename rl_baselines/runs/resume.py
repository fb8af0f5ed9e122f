"""``python -m rl_baselines.train --resume RUN``: continue a run from its last checkpoint, and stop one cleanly.

The arguments come from ``RUN/args.json`` (only ``--no-vis``, ``--no-progress``, ``--port``, ``--device``,
``--torch-threads``, ``--vec-env`` and ``--srl-model-path`` may be given beside ``--resume``; without ``--device`` the
run's recorded device is used when this machine has it, else this machine's; ``--vec-env`` changes where the envs
step, not what they give). ``--srl-model-path`` gives the new folder of the trained
SRL model the run observes, moved since: it must hold the files the run recorded (the hash of srl_model.json), and
once every check passed args.json and srl_model.json record that folder.

The run restarts from its newest intact resumable checkpoint (``checkpoints/<N>_steps/``, every file matching its
checksum in the manifest): the model with its optimizer state, the normalisation statistics, the step
counter, the replay buffer (off-policy algorithms), the random generators, and the callback's state (best mean
reward, next checkpoint, the evaluations counted). The monitor files, progress.csv and evaluations.npz are cut back
to their length at the checkpoint, so the rows written after it (by the killed process) are replaced by the resumed
run's and the learning curve has no duplicate. Each env restarts the episode it was playing at the checkpoint from a
fresh reset with the same start (seed or generator state of that episode), since the env's own state is not saved.
A run killed before its first checkpoint starts again from step 0 in the same folder; a finished run is left as it
is, but for the records of its SRL model's new folder that ``--srl-model-path`` gives (:func:`applyFinishedPlan`),
as a stopped run's are.

Invariant: every part restored (model, normalisation statistics, training state, replay buffer, generators, monitor
and progress lengths) comes from one checkpoint. Newer checkpoints that fail their checksums (a save cut short, a
file damaged on disk) are skipped, reported in one warning line, and moved to ``damaged_checkpoints/`` once every
check passed; with no intact checkpoint left, ``--resume`` refuses in one line and changes nothing.

SIGINT and SIGTERM (:func:`installStopHandlers`) make the training callback write a checkpoint at the next env step
and stop; train then exits with 130 or 143. A second signal during training stops at once; none cuts the final save
short.
"""
from __future__ import annotations

import glob
import os
import shlex
import shutil
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from environments.srl_env import isLearnedSRLModel
from rl_baselines.core.checkpointing import (
    MANIFEST_FILE,
    RUN_STATE_FILE,
    Checkpoint,
    CheckpointError,
    DamagedCheckpointError,
    checkManifest,
    checkpointFolders,
    checkSavedSpaces,
    listCheckpoints,
    readManifest,
)
from rl_baselines.core.plugin_v1 import makeEnv
from rl_baselines.core.registry import algoChoicesText, registered_rl
from rl_baselines.core.run_folder import (
    CHECKPOINTS_DIR,
    DAMAGED_CHECKPOINTS_DIR,
    MONITOR_SUFFIX,
    RunFolder,
    enclosingRun,
    insideRunRefusal,
    recordedPhysicsKeywords,
    runsBelowHint,
)
from rl_baselines.envs.factory import DEFAULT_STATE_SCALE, NORMALISATION_FILE, VEC_ENVS
from rl_baselines.runs.evaluation import keepFirstEvaluations
from rl_baselines.runs.run_logging import TENSORBOARD_RUN_KEY, VISDOM_ENV_KEY
from rl_baselines.runs.run_policy import recordedSRLModelFolder
from rl_baselines.runs.train_config import TrainConfig, upgradeArgsRecord
from srl_models.config import RUN_RECORD_FILE, describeSRLModel
from srl_toolbox.cli import CLIParser, UsageError, checkWritableFolder, nonEmptyText, portNumber, pythonCommand
from srl_toolbox.devices import parseDevice, parseThreads, reuseDevice
from srl_toolbox.files import readJson, removeTemporaries, writeJson
from srl_toolbox.locks import tryLock
from srl_toolbox.settings import checkedSettings
from srl_toolbox.text import counted, withArticle

if TYPE_CHECKING:
    from filelock import BaseFileLock

# Flags that may be given with --resume: how the run is shown, what this machine computes it with (the device,
# torch's threads and where the envs step, the same floats either way: left out, the run's own), and where the run's
# trained SRL model is now (left out: where it recorded).
RESUME_FLAGS = ("--no-vis", "--no-progress", "--port", "--device", "--torch-threads", "--vec-env", "--srl-model-path")
# Held (srl_toolbox.locks) by the train process of a run while it trains: a second process on the same run is refused.
LOCK_FILE = ".train.lock"
# Key of args.json holding the hyperparameters the run resolved at its start (from --hyperparam-file and
# --hyperparam), so that a resumed run does not read a hyperparameter file that may have changed since.
RESOLVED_HYPERPARAMS_KEY = "resolved_hyperparams"


@dataclass
class ResumePlan:
    """
    What resuming a run does.

    :param run_dir: the run folder
    :param state: "resume" (from ``checkpoint``), "restart" (no checkpoint: from step 0), "finished", or
        "continue" (an algorithm without saveTrainingState whose run saved a model: only ``--load-rl-model-path
        model_path`` continues it, in a new run folder)
    :param checkpoint: the checkpoint folder to resume from
    :param run_state: its run_state.json
    :param buffer_folder: the replay buffer folder to restore, None for an empty buffer
    :param num_timesteps: the step count training restarts from
    :param target_timesteps: the step count at which the run ends
    :param model_path: for "continue", the model to continue
    :param damaged: the checkpoints newer than ``checkpoint`` that failed their checks (folder, error), newest first
    :param buffer_deleted: ``checkpoint`` names a replay buffer that is no longer on disk (it resumes with an empty
        one)
    :param moved: where :func:`applyPlan` moved the damaged checkpoints
    :param srl_model_path: the folder the run's trained SRL model moved to (its files checked to be those the run
        recorded), which :func:`applyPlan` records in args.json and srl_model.json; None where it did not move
    """

    run_dir: str
    state: str
    checkpoint: str | None = None
    run_state: dict[str, Any] = field(default_factory=dict)
    buffer_folder: str | None = None
    num_timesteps: int = 0
    target_timesteps: int = 0
    model_path: str | None = None
    damaged: list[tuple[str, DamagedCheckpointError]] = field(default_factory=list)
    buffer_deleted: bool = False
    moved: list[str] = field(default_factory=list)
    srl_model_path: str | None = None

    def restorePoint(self) -> Checkpoint | None:
        """:return: the checkpoint a "resume" plan restores (with its replay buffer folder), None for the others"""
        return None if self.checkpoint is None or self.state != "resume" else Checkpoint(self.checkpoint,
                                                                                         self.buffer_folder)


def _resumeParser() -> CLIParser:
    parser = CLIParser(prog="python -m rl_baselines.train --resume RUN", add_help=False)
    parser.add_argument("--resume", required=True, metavar="RUN")
    parser.add_argument("--no-vis", action="store_true", default=None)
    parser.add_argument("--no-progress", action="store_true", default=None)
    parser.add_argument("--port", type=portNumber, default=None)
    parser.add_argument("--device", type=parseDevice, default=None)
    parser.add_argument("--torch-threads", type=parseThreads, default=None)
    parser.add_argument("--vec-env", choices=VEC_ENVS, default=None)
    parser.add_argument("--srl-model-path", type=nonEmptyText, default=None, metavar="FOLDER")
    return parser


def movedSRLModel(run_dir: str, saved: dict[str, Any], given: str | None) -> str | None:
    """
    Where a resumed run finds the trained SRL model it observes when the model's folder moved.

    :param run_dir: the run folder
    :param saved: its args.json (srl_model, srl_model_path)
    :param given: ``--srl-model-path`` given with ``--resume``, None if left out
    :return: the absolute folder of the run's model to use instead of args.json's: ``given``, or without it the
        folder srl_model.json records when args.json's is gone; its files are the ones the run recorded (the hash in
        srl_model.json). None when ``given`` is left out and args.json's folder is there (or the run records none)
    :raises UsageError: ``given`` for a run that observes no trained SRL model, a folder whose files differ (both
        hashes named), or the model gone from where the run recorded it and no ``given`` (the message names
        --srl-model-path) (one line)
    """
    srl_model, recorded = str(saved.get("srl_model")), saved.get("srl_model_path")
    if given is not None and not isLearnedSRLModel(srl_model):
        raise UsageError(f"--srl-model-path {given}: the run in {run_dir!r} observed {srl_model}, not a trained SRL "
                         f"model; leave the flag out")
    if given is None and (not isinstance(recorded, str) or os.path.exists(recorded)):
        return None
    try:
        folder = recordedSRLModelFolder(run_dir, srl_model, given, "--srl-model-path")
    except ValueError as error:
        raise UsageError(f"--resume: {error}") from None
    return folder


def recordSRLModelFolder(run_dir: str, folder: str) -> bool:
    """
    Point a run's records at the new folder of its trained SRL model (the same files, checked by
    :func:`movedSRLModel`): srl_model.json's ``path`` (what replay reads), then args.json's ``srl_model_path`` (what
    ``--resume`` reads; written second, so that a resume of a run stopped between the two finds the model through
    srl_model.json). Each file is written atomically, and only where it records another folder.

    :param run_dir: the run folder (its lock held)
    :param folder: the model's absolute folder
    :return: whether a record changed
    """
    run_folder, changed = RunFolder(run_dir), False
    for path, key in ((run_folder.srl_model_file, "path"), (run_folder.args_file, "srl_model_path")):
        record = readJson(path)
        if record.get(key) != folder:
            writeJson(path, {**record, key: folder})
            changed = True
    return changed


def modelFiles(run_dir: str) -> list[str]:
    """:return: the model files saved in a run folder itself (not best/ nor checkpoints/; not the SRL model's record,
    srl_model.json, which the name pattern matches too)"""
    return sorted(path for path in glob.glob(os.path.join(run_dir, "*_model.*"))
                  if os.path.isfile(path) and os.path.basename(path) != RUN_RECORD_FILE)


def notARunRefusal(run_dir: str) -> str:
    """
    :param run_dir: the folder given to ``--resume``, holding no args.json
    :return: the refusal's line: the run it is inside and the command that resumes it (from the run's newest intact
        checkpoint: no flag chooses an older one), else the runs below it (:func:`runsBelowHint`)
    """
    inside = insideRunRefusal("--resume", run_dir)
    if inside is None:
        return f"--resume {run_dir!r} is not a run folder (no args.json){runsBelowHint(run_dir)}"
    refusal, run, below = inside
    note = (" (it continues from the run's newest intact checkpoint; it cannot start from a chosen one)"
            if below.split("/")[0] == CHECKPOINTS_DIR else "")
    return f"{refusal}: give --resume {run}{note}"


def planResume(run_dir: str, resumable: bool | None = None) -> ResumePlan:
    """
    Decide how a run folder is continued, reading only (the pipeline can call this to know what ``--resume``
    would do). The checkpoint to resume from is the newest resumable one whose files all match their checksums;
    the damaged ones newer than it are listed in the plan.

    :param run_dir: a run folder written by rl_baselines.train
    :param resumable: whether the run's algorithm implements saveTrainingState (None: look its name up in the
        registry)
    :return: the plan: finished, resume from a checkpoint, restart from step 0, or continue its model elsewhere
    :raises UsageError: not a run, or it cannot be resumed (saved by an older version without manifests, or every
        resumable checkpoint damaged) (one line)
    """
    if not os.path.isfile(RunFolder(run_dir).args_file):
        raise UsageError(notARunRefusal(run_dir))
    try:
        run_manifest = readManifest(run_dir)
    except CheckpointError:
        run_manifest = None  # the latest model's manifest is only read to know whether the run finished
    if run_manifest is not None and run_manifest.get("finished"):
        steps = int(run_manifest.get("num_timesteps", 0))
        return ResumePlan(run_dir, "finished", num_timesteps=steps, target_timesteps=steps)
    if not (_algoResumable(run_dir) if resumable is None else resumable):
        return _planWithoutTrainingState(run_dir, run_manifest)
    damaged: list[tuple[str, DamagedCheckpointError]] = []
    for steps, folder in reversed(checkpointFolders(run_dir)):
        try:
            manifest = readManifest(folder)
        except DamagedCheckpointError as error:
            damaged.append((folder, error))
            continue
        if manifest is None:  # written last into a checkpoint made whole before its rename: deleted since
            path = os.path.join(folder, MANIFEST_FILE)
            damaged.append((folder, DamagedCheckpointError(f"{path} is missing", path, "is missing")))
            continue
        if manifest.get("finished"):
            return ResumePlan(run_dir, "finished", folder, num_timesteps=steps, target_timesteps=steps)
        if not manifest.get("resumable"):
            continue
        checkpoint = Checkpoint(folder)
        try:
            manifest = checkpoint.verify()
            run_state = checkpoint.runState()
        except DamagedCheckpointError as error:
            damaged.append((folder, error))
            continue
        buffer_folder = checkpoint.buffer_folder
        return ResumePlan(run_dir, "resume", folder, run_state, buffer_folder=buffer_folder,
                          num_timesteps=int(run_state["num_timesteps"]),
                          target_timesteps=int(run_state["target_timesteps"]), damaged=damaged,
                          buffer_deleted=bool(manifest.get("replay_buffer")) and buffer_folder is None)
    if damaged:
        error = damaged[0][1]
        others = {1: "", 2: "; so is the one before it"}.get(len(damaged), f"; so are the {len(damaged) - 1} before it")
        raise UsageError(f"--resume: no intact checkpoint to resume from: {error}{others}; start the run again in a "
                         f"new folder")
    if run_manifest is None and modelFiles(run_dir):
        raise UsageError(f"--resume: {run_dir} holds a model but no checkpoint with a manifest (saved by an older "
                         f"version, or killed while saving it); it cannot be resumed: start the run again in a new "
                         f"folder")
    return ResumePlan(run_dir, "restart")


def _damage(folder: str, error: DamagedCheckpointError) -> str:
    """:return: the damaged file, relative to its checkpoint, and what is wrong with it"""
    return f"{os.path.relpath(error.path, folder)} {error.problem}"


def fallbackNote(plan: ResumePlan) -> str | None:
    """
    :param plan: an applied resume plan
    :return: the one line that says which damaged checkpoints were skipped, where they went and which checkpoint
        the run resumes from instead; None when the newest checkpoint was intact
    """
    if not plan.damaged:
        return None
    newest, error = plan.damaged[0]
    where = f", moved to {plan.moved[0]}" if len(plan.moved) == 1 else \
        f", moved to {os.path.dirname(plan.moved[0])}" if plan.moved else ""
    if len(plan.damaged) == 1:
        what = f"checkpoint {newest} is damaged ({_damage(newest, error)}){where}"
    else:
        names = ", ".join(os.path.basename(folder) for folder, _ in plan.damaged)
        what = f"checkpoints {names} are damaged (the newest, {newest}: {_damage(newest, error)}){where}"
    buffer = " (its replay buffer is no longer on disk: the buffer starts empty)" if plan.buffer_deleted else ""
    return (f"{what}; resuming from the newest intact one, {plan.checkpoint} at {plan.num_timesteps} steps"
            f"{buffer}")


def _algoResumable(run_dir: str) -> bool:
    """:return: whether the algorithm named in the run's args.json implements saveTrainingState (True if unknown)"""

    try:
        algo = readJson(RunFolder(run_dir).args_file).get("algo")
    except (OSError, ValueError, AttributeError):
        return True
    return algo not in registered_rl or registered_rl[algo][0].supportsResume()


def _planWithoutTrainingState(run_dir: str, run_manifest: dict[str, Any] | None) -> ResumePlan:
    """
    The plan of an unfinished run whose algorithm cannot resume: its newest saved model (the run's own, or its
    newest checkpoint's) is continued with ``--load-rl-model-path`` in a new run folder; with none saved, the run
    starts again in a new folder (model_path None). The folder itself is never changed.

    :param run_dir: the run folder
    :param run_manifest: the manifest of the run's own model, None without one
    :return: a "continue" plan (model_path or None, the steps it holds, the run's target)
    """
    model_path, steps = None, 0
    checkpoints = listCheckpoints(run_dir)
    if run_manifest is not None and modelFiles(run_dir):
        listed = [path for path in modelFiles(run_dir) if os.path.basename(path) in run_manifest["files"]]
        if listed:
            model_path, steps = listed[0], int(run_manifest.get("num_timesteps", 0))
    if model_path is None:
        for checkpoint_steps, folder in reversed(checkpoints):
            try:
                manifest = readManifest(folder) or {}
            except CheckpointError:
                continue
            names = [name for name in manifest.get("files", {}) if "_model." in name and os.sep not in name]
            if names:
                model_path, steps = os.path.join(folder, names[0]), checkpoint_steps
                break
    target = None
    for _, folder in reversed(checkpoints):
        try:
            target = int(readJson(os.path.join(folder, RUN_STATE_FILE))["target_timesteps"])
            break
        except (OSError, ValueError, KeyError, TypeError):
            continue
    if target is None:
        try:
            target = int(readJson(RunFolder(run_dir).args_file)["num_timesteps"])
        except (OSError, ValueError, KeyError, TypeError):
            target = steps
    return ResumePlan(run_dir, "continue", num_timesteps=steps, target_timesteps=target, model_path=model_path)


# Run arguments that decide the env and the observations: a model continued with --load-rl-model-path needs them.
_CONTINUE_FLAGS = (("algo", "--algo"), ("env", "--env"), ("srl_model", "--srl-model"),
                   ("srl_model_path", "--srl-model-path"), ("num_stack", "--num-stack"),
                   ("action_repeat", "--action-repeat"), ("num_cpu", "--num-cpu"), ("seed", "--seed"),
                   ("log_dir", "--log-dir"), ("hyperparam_file", "--hyperparam-file"),
                   # by name always: the renderer the run drew with, whatever the env's default is when it continues
                   ("renderer", "--renderer"))
_CONTINUE_SWITCHES = (("continuous_actions", "-c"), ("action_joints", "--action-joints"),
                      ("random_target", "--random-target"), ("shape_reward", "--shape-reward"), ("fpv", "--fpv"),
                      ("multi_view", "--multi-view"), ("force_down", "--force-down"),
                      ("srl_ground_truth_scale", "--srl-ground-truth-scale"))

# How the run trained and what it wrote, given where the run set them (a value other than train's default): the
# continued run augments, evaluates, checkpoints and names itself as the run did
_CONTINUE_SETTINGS = (("augment", "--augment"), ("eval_freq", "--eval-freq"), ("eval_episodes", "--eval-episodes"),
                      ("checkpoint_freq", "--checkpoint-freq"), ("buffer_save_freq", "--buffer-save-freq"),
                      ("min_episodes_save", "--min-episodes-save"), ("episode_window", "--episode-window"),
                      ("tag", "--tag"))


def continueCommand(args: TrainConfig, model_path: str | None, remaining_timesteps: int) -> str:
    """
    The command that continues a run's model in a new run folder (what an algorithm without saveTrainingState
    offers instead of ``--resume``).

    :param args: the run's arguments
    :param model_path: the model to continue, None when the run saved none (the command then starts it again)
    :param remaining_timesteps: env steps the run had left
    :return: a ``python -m rl_baselines.train ... --load-rl-model-path MODEL`` command line, shell-quoted, started
        with this interpreter (:func:`pythonCommand`: the line is only printed), with the run's env, observation and
        hyperparameter flags and its other settings where it set them (:data:`_CONTINUE_SETTINGS`, ``--vec-env``)
    """
    words = ["-m", "rl_baselines.train"]
    for name, flag in _CONTINUE_FLAGS:
        value = getattr(args, name)
        if value is not None:
            words += [flag, str(value)]
    words += [flag for name, flag in _CONTINUE_SWITCHES if getattr(args, name)]
    for name, flag in _CONTINUE_SETTINGS:
        value = getattr(args, name)
        if value is not None and value != getattr(TrainConfig, name):
            words += [flag, str(value)]
    if args.num_cpu > 1 and args.vec_env != TrainConfig.vec_env:  # (one env: always in this process)
        words += ["--vec-env", args.vec_env]
    if args.img_shape:
        words += ["--img-shape", *map(str, args.img_shape)]
    if args.srl_state_scale != DEFAULT_STATE_SCALE:
        words += ["--srl-state-scale", args.srl_state_scale]
    for name, value in sorted(args.extra.items()):
        if name.startswith("hp_") and value is not None:
            words += [f"--{name[3:].replace('_', '-')}", str(value)]
    resolved = getattr(args, RESOLVED_HYPERPARAMS_KEY, None)
    pairs = resolved if isinstance(resolved, dict) else dict(
        item.partition(":")[::2] for item in args.hyperparam or [])
    if pairs:
        words += ["--hyperparam", *(f"{key}:{value}" for key, value in pairs.items())]
    words += ["--num-timesteps", str(max(1, int(remaining_timesteps)))]
    if model_path is not None:
        words += ["--load-rl-model-path", model_path]
    return f"{pythonCommand()} {shlex.join(words)}"


def runStatus(run_dir: str) -> str:
    """
    For rl_baselines.pipeline: what ``train --resume RUN`` would do with a run folder.

    :param run_dir: a run folder
    :return: "finished", "resume" (from a checkpoint), "restart" (from step 0, same folder), "continue" (an
        algorithm without saveTrainingState: its model goes on only in a new folder) or "unusable" (not a run, or
        one that cannot be resumed: start it again in a new folder)
    """
    try:
        return planResume(run_dir).state
    except UsageError:
        return "unusable"


def loadResumeArgs(argv: Sequence[str], registered_rl: dict, base_parser: Callable[..., Any]
                   ) -> tuple[TrainConfig, ResumePlan]:
    """
    Rebuild a run's arguments from its args.json and plan its continuation; nothing on disk changes here.

    :param argv: the command line (``--resume RUN`` and the flags of RESUME_FLAGS)
    :param registered_rl: the algorithm table
    :param base_parser: rl_baselines.runs.train_checks.baseParser
    :return: (the run's settings, as given: not validated again; the plan)
    :raises UsageError: other flags, a folder that is not a run, an algorithm without resume support, a checkpoint
        that does not match the run or whose files changed, the run's SRL model gone or another one given with
        ``--srl-model-path`` (:func:`movedSRLModel`) (one line)
    """
    given, unknown = _resumeParser().parse_known_args(list(argv))
    if unknown:
        raise UsageError(f"--resume takes the run's arguments from its args.json; only {', '.join(RESUME_FLAGS)} may "
                         f"be given with it, not {unknown[0]!r}")
    run_dir = given.resume.rstrip("/") or given.resume
    if not os.path.isdir(run_dir):  # a file of a run (its args.json) names that run
        raise UsageError(notARunRefusal(run_dir) if os.path.isfile(run_dir) and enclosingRun(run_dir) is not None
                         else f"--resume {run_dir!r} is not a folder")
    try:
        saved = readJson(RunFolder(run_dir).args_file)
    except FileNotFoundError:
        raise UsageError(notARunRefusal(run_dir)) from None
    except (OSError, ValueError) as error:
        raise UsageError(f"--resume: {run_dir}/args.json is unreadable ({error})") from None
    if not isinstance(saved, dict) or "algo" not in saved:  # (valid JSON, not a run's: edited, or another tool's)
        what = "names no algorithm" if isinstance(saved, dict) else f"holds {withArticle(type(saved).__name__)}"
        raise UsageError(f"--resume: {run_dir}/args.json {what}: not the settings of a run of rl_baselines.train")
    if saved["algo"] not in registered_rl:
        raise UsageError(f"--resume: {run_dir}/args.json names algorithm {saved['algo']!r}, which is not installed"
                         f"{algoChoicesText(str(saved['algo']), typed=False)}")
    algo_class = registered_rl[saved["algo"]][0]
    try:
        saved = upgradeArgsRecord(saved)
    except ValueError as error:
        raise UsageError(f"--resume: {run_dir}/args.json: {error}") from None
    moved_srl_model = movedSRLModel(run_dir, saved, given.srl_model_path)
    # the algorithm's own flags at their defaults (an unset one is not recorded), then what the run recorded
    # (parse_known_args: the checks an algorithm adds to its parser's parse_args judge whole commands, not defaults;
    # her's refuses the bare defaults' raw_pixels, and no her run could be resumed)
    defaults = vars(algo_class.customArguments(base_parser()).parse_known_args(["--algo", saved["algo"]])[0])
    values = {**defaults, **saved}
    if RESOLVED_HYPERPARAMS_KEY in saved:
        values["hyperparam"] = [f"{key}:{value}" for key, value in saved[RESOLVED_HYPERPARAMS_KEY].items()]
        values["hyperparam_file"] = None
    for name in ("no_vis", "no_progress", "port", "torch_threads", "vec_env"):
        if getattr(given, name) is not None:
            values[name] = getattr(given, name)
    values["resume"], values["run_folder"] = None, None
    for name in (VISDOM_ENV_KEY, TENSORBOARD_RUN_KEY):  # where its logs go: the train loop reads them from args.json
        values.pop(name, None)
    try:  # the device asked for now, else the run's own when this machine has it, else this machine's
        values["device"], note = reuseDevice(saved.get("device"), given.device)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if note:
        print(f"Device: {note}")
    if moved_srl_model is not None:
        values["srl_model_path"] = moved_srl_model
    try:  # each recorded value as its flag reads it (an edited args.json: "seed": -5), before anything is written
        args = checkedSettings(TrainConfig.fromValues(values))
    except UsageError as error:
        raise UsageError(f"--resume: {run_dir}/args.json holds a value its flag refuses: {error}") from None
    plan = planResume(run_dir, algo_class.supportsResume())
    if plan.state == "continue":
        what = "continue its model in a new run" if plan.model_path else "it saved no model yet: start it again"
        raise UsageError(f"--resume: algorithm {saved['algo']} does not implement saveTrainingState/"
                         f"loadTrainingState, so its runs cannot be resumed; {what} with: "
                         f"{continueCommand(args, plan.model_path, plan.target_timesteps - plan.num_timesteps)}")
    plan.srl_model_path = moved_srl_model
    if plan.state == "resume":
        # the checkpoint's model replaces it (validate must not load the old one); behaviour cloning happened before
        # the first step
        args = args.replace(load_rl_model_path=None, pretrain_dataset=None)
    return args, plan


def checkPlan(plan: ResumePlan, args: TrainConfig, algo_class: type) -> None:
    """
    Check the checkpoint against the run (after rl_baselines.runs.train_checks.validate resolved the SRL model):
    algorithm, API version, env, observation mode, SRL model hash (its checksums were checked by :func:`planResume`).

    :param plan: from :func:`loadResumeArgs`
    :param args: the validated arguments
    :param algo_class: the algorithm's class
    :raises UsageError: mismatch, monitor files shorter than at the checkpoint, a progress.csv that is not text or
        has fewer rows than at the checkpoint
    """
    if plan.state != "resume":
        return
    srl_hash = None
    if args.srl_model_path:
        try:
            srl_hash = describeSRLModel(args.srl_model_path)["hash"]
        except ValueError as error:
            raise UsageError(f"--resume: the run's SRL model: {error}") from None
    advice = f"; delete {plan.checkpoint} to resume from the checkpoint before it"
    try:
        manifest = readManifest(plan.checkpoint) or {}
        checkManifest(manifest, plan.checkpoint, args.algo, algo_class.API_VERSION,
                      {"env": args.env, "srl_model": args.srl_model, "srl_model_hash": srl_hash}, check_files=False)
    except CheckpointError as error:
        raise UsageError(f"--resume: {error}{advice}") from None
    try:  # the env its settings build takes the checkpoint's actions and observations (an edited args.json: -c)
        checkSavedSpaces(manifest, args.runSettings().replace(continue_from=plan.checkpoint), algo_class, makeEnv)
    except ValueError as error:
        raise UsageError(f"--resume: {plan.run_dir}/args.json does not rebuild the checkpoint's env: {error}") from None
    monitor_dir = RunFolder(plan.run_dir).monitor_dir
    for name, size in plan.run_state.get("monitor", {}).items():
        path = os.path.join(monitor_dir, name)
        if not os.path.isfile(path) or os.path.getsize(path) < int(size):
            raise UsageError(f"--resume: {path} is missing or shorter than at the checkpoint ({size} bytes): the "
                             f"run's episodes cannot be continued")
    progress, rows = RunFolder(plan.run_dir).progress_file, int(plan.run_state.get("progress_lines") or 0)
    if rows:  # (cut to its checkpoint's rows and continued: text of at least that many lines)
        try:
            with open(progress, encoding="utf-8") as handle:
                lines = handle.read().count("\n")
        except (OSError, UnicodeDecodeError) as error:
            why = "is not text (not UTF-8)" if isinstance(error, UnicodeDecodeError) else \
                f"cannot be read ({error.strerror or error})"
            raise UsageError(f"--resume: {progress} {why}: the run's progress rows cannot be continued") from None
        if lines < rows:
            raise UsageError(f"--resume: {progress} has {counted(lines, 'line')}, fewer than the "
                             f"{rows} at the checkpoint: the run's progress rows cannot be continued")


def applyPlan(plan: ResumePlan, config: TrainConfig) -> TrainConfig:
    """
    Bring the run folder back to the checkpoint (or to an empty run for a restart), after every check passed:
    delete unfinished checkpoint folders and the temporary files of saves cut short (``.<name>.<8 hex>.tmp<ext>``,
    srl_toolbox.files.TEMPORARY_NAME, and no other file; damaged_checkpoints/ is left as it is), move the damaged
    ones newer than the checkpoint to ``damaged_checkpoints/`` (``plan.moved``), cut the monitor files, progress.csv
    and evaluations.npz to their length at the checkpoint; record the SRL model's new folder
    (``plan.srl_model_path``: :func:`recordSRLModelFolder`).

    :param plan: a checked plan
    :param config: the run's validated config
    :return: the config pointed at the checkpoint (the model to load, resume_from, resume_buffer, the step budget
        left); for a restart, the config as it was; both with the physics version the run recorded (a Kuka run of
        version 1 goes on under it: recordedPhysicsKeywords)
    """

    run_dir, run_folder = plan.run_dir, RunFolder(plan.run_dir)
    monitor_dir = run_folder.monitor_dir
    _recordMovedSRLModel(plan)
    config = config.replace(env_kwargs={**config.env_kwargs, **recordedPhysicsKeywords(run_dir, config.env)})
    RunFolder(run_dir).removePartialCheckpoints()
    removeTemporaries(run_dir, skip=(DAMAGED_CHECKPOINTS_DIR,))  # (the run's lock is held: no save is under way)
    plan.moved = [Checkpoint(folder).moveAside(run_dir) for folder, _ in plan.damaged]
    if plan.state == "restart":
        for path in [*glob.glob(os.path.join(monitor_dir, f"*{MONITOR_SUFFIX}")), run_folder.progress_file,
                     *modelFiles(run_dir), os.path.join(run_dir, NORMALISATION_FILE),
                     os.path.join(run_dir, MANIFEST_FILE), run_folder.evaluations_file]:
            if os.path.isfile(path):
                os.remove(path)
        for saved in (run_folder.best_dir, run_folder.checkpoints_dir):
            shutil.rmtree(saved, ignore_errors=True)
        return config
    checkpoint = plan.restorePoint()
    checkpoint.rewindRun(run_dir, plan.run_state)  # rows written after the checkpoint are replayed
    # evaluations made after the checkpoint are made again
    keepFirstEvaluations(run_dir, int(plan.run_state.get("callback", {}).get("evaluation", {}).get("count", 0)))
    return config.replace(load_rl_model_path=checkpoint.modelPath(), resume_from=checkpoint.folder,
                          resume_buffer=checkpoint.buffer_folder,
                          num_timesteps=plan.target_timesteps - plan.num_timesteps)


def _recordMovedSRLModel(plan: ResumePlan) -> None:
    """Record ``plan.srl_model_path`` (checked by :func:`movedSRLModel`) in the run's records, saying so when they
    change (the run's lock held)."""
    if plan.srl_model_path is not None and recordSRLModelFolder(plan.run_dir, plan.srl_model_path):
        print(f"SRL model: now in {plan.srl_model_path} (same files); args.json and srl_model.json record it")


def applyFinishedPlan(plan: ResumePlan) -> None:
    """
    ``--resume`` of a finished run: nothing is trained and nothing else changes, but a new folder of its trained SRL
    model given with ``--srl-model-path`` (``plan.srl_model_path``, its files checked to be the run's) is recorded
    in args.json and srl_model.json as for a stopped run, so that replay and the Python API's loadRun find the
    model without the flag.

    :param plan: a "finished" plan from :func:`loadResumeArgs`
    :raises UsageError: the run folder is not writable, or another process holds its lock (one line, nothing written)
    """
    if plan.srl_model_path is None:
        return
    checkWritableFolder(plan.run_dir, "--resume")
    run_lock = lockRun(plan.run_dir)
    try:
        _recordMovedSRLModel(plan)
    finally:
        run_lock.release()


def lockRun(run_dir: str) -> BaseFileLock:
    """
    Take the run's lock for the life of this process (the OS drops it when the process ends, even by SIGKILL).

    :param run_dir: the run folder
    :return: the held lock (keep a reference to it; ``.release()`` gives it back)
    :raises UsageError: another process holds it (the run is training right now), or a folder (or another thing
        that is not a file) is in the lock file's place
    """
    path = os.path.join(run_dir, LOCK_FILE)
    if os.path.lexists(path) and not os.path.isfile(path):
        raise UsageError(f"--resume: {path} is not a file (the run's lock file): remove it, then resume")
    handle = tryLock(path)
    if handle is None:
        raise UsageError(f"--resume: {run_dir} is being trained by another process right now (it holds "
                         f"{LOCK_FILE}); stop that one first") from None
    return handle


def installStopHandlers(request_stop: Callable[[int], None], rearm: bool = True) -> Callable[[], None]:
    """
    SIGINT and SIGTERM call ``request_stop(signum)`` (the callback saves a checkpoint and stops at the next step);
    with ``rearm``, a second one of the same kind stops at once (SIGINT: a ``KeyboardInterrupt``; SIGTERM: its
    default action). Without it (the final save, once training has ended) every signal only calls ``request_stop``:
    nothing cuts the save and the summary short.

    :param request_stop: called with the signal number
    :param rearm: whether a first signal makes the next one of its kind stop at once
    :return: a function that puts the previous handlers back; outside the main thread (a run trained in a thread of
        a notebook or a script), where Python neither installs handlers nor delivers signals, nothing is installed
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, _frame: Any) -> None:
        request_stop(signum)
        if rearm:
            signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}

    def uninstall() -> None:
        for signum, old in previous.items():
            signal.signal(signum, old)

    return uninstall
