"""Train one run in its prepared run folder, then save it: the part of ``python -m rl_baselines.train`` after its
validation and run folder (rl_baselines.runs.train), also used by the Python API through it.

:func:`trainInRunFolder` seeds Python, NumPy and torch with the run's seed and sets torch's threads to the recorded
count before the algorithm is built, so the same config trains the same run. A stop signal ends training at a
checkpoint (exit 128 + signal), a second Ctrl-C at once (exit 130, no checkpoint); either way the model is saved
unless training never started, and a run that reached its step count writes its final checkpoint first. A run folder
deleted or moved during training (it lost its args.json) ends the run at the next save, before that save could make
the folder again: ``FolderVanished``, one line, exit 1, the env and the callbacks closed. A run that finished no
training episode writes no learning_curve.png, and says so.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import sys
from typing import Any

import torch
from stable_baselines3.common.utils import set_random_seed

from rl_baselines.core.checkpointing import Checkpoint, runDescription
from rl_baselines.core.plugin_v1 import trainAlgorithm
from rl_baselines.core.run_folder import LEARNING_CURVE_FILE, RunFolder, readRunArgs
from rl_baselines.envs.factory import closeBrokenWorkers
from rl_baselines.runs.callbacks import standardCallbacks
from rl_baselines.runs.evaluation import Evaluator
from rl_baselines.runs.monitor_files import loadEpisodes, runEnvs
from rl_baselines.runs.resume import continueCommand, installStopHandlers
from rl_baselines.runs.run_logging import (
    TENSORBOARD_RUN_KEY,
    VISDOM_ENV_KEY,
    RunLogger,
    sharedProgressLogger,
    tensorboardRunName,
)
from rl_baselines.runs.train_config import TrainConfig, TrainResult
from srl_toolbox.cli import pythonCommand
from srl_toolbox.files import FolderVanished, readJson, writeJson
from srl_toolbox.plots import VisdomPlotter, saveLearningCurve
from srl_toolbox.text import counted


def trainInRunFolder(config: TrainConfig, plan: Any, algo_class: type) -> TrainResult:
    """
    Train until the step count, a stop signal or a second Ctrl-C, then save the model and the learning curve.

    :param config: the run's config, with its prepared run folder (``run_dir``) and the steps already done
        (``start_timesteps``)
    :param plan: the resume plan (None for a new run)
    :param algo_class: the algorithm's class
    :return: the outcome: exit code (0 done, 1 model not saved, 128 + signal when stopped, 130 on a second Ctrl-C),
        the trained agent, its step count and mean training reward
    """
    run_dir, start_timesteps = config.run_dir, config.start_timesteps
    print(f"Run folder: {run_dir}", flush=True)
    config = config.replace(monitor_dir=RunFolder(run_dir).monitor_dir)
    os.makedirs(config.monitor_dir, exist_ok=plan is not None)
    plotter = None
    if not config.no_vis:
        visdom_env, own_env = _visdomEnv(config, plan)
        plotter = VisdomPlotter(port=config.port, env_name=visdom_env,
                                title=f"{config.env} {config.srl_model}", legend=config.algo,
                                episode_window=config.episode_window, announce=True, own_env=own_env,
                                on_env=(lambda name: _recordVisdomEnv(run_dir, name)) if own_env else None)
    torch.set_num_threads(config.torch_threads)  # the recorded count: float sums split as in the run's first process
    set_random_seed(config.seed)  # Python, NumPy and torch, whatever the algorithm; envs are seeded by makeEnv
    algo = algo_class()
    resuming = plan is not None and plan.state == "resume"
    total_timesteps = plan.target_timesteps if resuming else start_timesteps + config.num_timesteps
    first_budget = int(readJson(RunFolder(run_dir).args_file)["num_timesteps"]) if resuming else None
    checkpoint_freq = checkpointInterval(config.checkpoint_freq, config.num_timesteps, first_budget)
    run_logger = _runLogger(config, algo_class, plotter, start_timesteps if resuming else None)
    evaluator = None
    if config.eval_freq > 0:
        evaluator = Evaluator(algo, config, dict(config.env_kwargs), config.eval_freq, config.eval_episodes, run_dir,
                              start_timesteps)
    # the training services (rl_baselines.runs.training_callbacks) in one SB3 CallbackList, also callable old-style
    callback = standardCallbacks(
        algo, config.algo, run_dir, total_timesteps=total_timesteps,
        start_timesteps=start_timesteps, log_interval=algo_class.LOG_INTERVAL,
        save_interval=algo_class.SAVE_INTERVAL, checkpoint_freq=max(0, checkpoint_freq),
        min_episodes_save=config.min_episodes_save, plotter=plotter, progress=not config.no_progress,
        run_info=runDescription(run_dir, config), buffer_save_freq=config.buffer_save_freq, evaluator=evaluator,
        run_logger=run_logger, num_envs=runEnvs(config.argsRecord()))
    if resuming:
        callback.restoreState(plan.run_state.get("callback", {}))
        if config.resume_from:  # the checkpoint a stop before the next one names: --resume goes on from it again
            callback.resumedFrom(config.resume_from, plan.num_timesteps)
    # SIGINT/SIGTERM: checkpoint, then stop (a second one: at once); the final save, which no signal cuts short
    uninstall_handlers, interrupted = installStopHandlers(callback.requestStop), False
    try:
        try:
            # plugin API v2: the env, the step budget, the hyperparameters, the callback, the logger, the checkpoint;
            # v1: the run's Namespace, a copy of its own (core.plugin_v1)
            checkpoint = Checkpoint(config.resume_from, config.resume_buffer) if config.resume_from else None
            trainAlgorithm(algo, config.runSettings(), config.num_timesteps, callback,
                           sharedProgressLogger(callback, run_dir)[0], checkpoint)
        except KeyboardInterrupt:  # a second Ctrl-C: stop without a checkpoint
            interrupted = True
        except FolderVanished:  # the run folder was deleted or moved: close everything, save nothing more
            _closeCutEnv(algo)
            with contextlib.suppress(FolderVanished):
                callback.close(max(int(algo.num_timesteps), callback.steps_taken))
            raise
        installStopHandlers(callback.requestStop, rearm=False)  # (uninstall_handlers puts back the first ones)
        try:
            return _saveAndReport(config, algo, algo_class, callback, checkpoint_freq, interrupted)
        finally:
            if interrupted:
                _closeCutEnv(algo)
    finally:
        uninstall_handlers()


def _visdomEnv(config: TrainConfig, plan: Any) -> tuple[str, bool]:
    """:return: the run's visdom env and whether its plotter picks it (``own_env``): the name args.json records; a
    new run, or one that has not reached a server yet (recorded None): the run's name, or its first free
    ``_2``, ``_3``, ... (recorded then); a run recorded before the key: its name, as it drew into"""
    name = tensorboardRunName(config.env, config.srl_model, config.algo, config.run_dir)
    recorded = readJson(RunFolder(config.run_dir).args_file)
    if VISDOM_ENV_KEY not in recorded:
        return name, plan is None
    chosen = recorded[VISDOM_ENV_KEY]
    return (name, True) if chosen is None else (str(chosen), False)


def _recordVisdomEnv(run_dir: str, name: str) -> None:
    """Record the visdom env a run's plotter chose in its args.json (a run folder gone meanwhile: nothing; the run
    ends at its next save)"""
    folder = RunFolder(run_dir)
    try:
        writeJson(folder.args_file, {**readJson(folder.args_file), VISDOM_ENV_KEY: name})
    except (OSError, ValueError):
        pass


def _closeCutEnv(algo: Any) -> None:
    """Close the env of a training a second Ctrl-C cut short (an algorithm closes its own when training returns):
    its worker processes ignore SIGINT and SIGTERM, so the interpreter's exit, which waits for them, would hang."""
    env = getattr(algo, "env", None)
    if env is not None and callable(getattr(env, "close", None)):
        try:
            env.close()
        except (BrokenPipeError, ConnectionResetError, EOFError):
            closeBrokenWorkers(env)  # (the algorithm's own close, cut short by that Ctrl-C, had ended some workers)
        except Exception as error:  # (closing twice, or a plugin's env: the run's outcome stands)
            print(f"warning: the env was not closed ({type(error).__name__}: {error})", file=sys.stderr)


def checkpointInterval(checkpoint_freq: int, num_timesteps: int, first_budget: int | None = None) -> int:
    """:return: env steps between checkpoints: ``--checkpoint-freq``, or for 0 five per run, of the whole run's steps
    (``first_budget``, the ``--num-timesteps`` its args.json records, for a resumed run, whose ``num_timesteps`` are
    only the steps left: the interval stays the first attempt's); -1: none"""
    if checkpoint_freq != 0:
        return checkpoint_freq
    return max(1, (num_timesteps if first_budget is None else first_budget) // 5)


def _saveAndReport(config: TrainConfig, algo: Any, algo_class: type, callback: Any, checkpoint_freq: int,
                   interrupted: bool) -> TrainResult:
    """After training (``interrupted``: by a second Ctrl-C, without a checkpoint; before the first step, without a
    model to save): the final checkpoint and model, the learning curve and the console's last lines; :return: the
    outcome (see :func:`trainInRunFolder`)"""
    run_dir, built = config.run_dir, not interrupted or callback.started
    taken = max(int(algo.num_timesteps), callback.steps_taken if interrupted else 0)  # (a cut learn left it behind)
    num_timesteps = taken if built else config.start_timesteps
    callback.close(num_timesteps)
    finished = not interrupted and num_timesteps >= callback.total_timesteps
    try:
        if finished and checkpoint_freq >= 0:
            callback.checkpoint(num_timesteps, training_state=False, finished=True)
        if built:
            callback.saveModel(run_dir, num_timesteps, finished=finished)
    except FolderVanished:
        raise
    except Exception as error:  # (a plugin's save may refuse its own state: the run's outcome, not a traceback)
        reason = error.strerror if isinstance(error, OSError) else f"{type(error).__name__}: {error}"
        print(f"error: the model was not saved in {run_dir}: {reason}", file=sys.stderr)
        return TrainResult(1, run_dir, algo, num_timesteps, callback.monitor.meanReward(), config)
    _writeLearningCurve(callback, config)
    mean_reward = callback.monitor.meanReward()
    stopped = callback.stop_signal is not None and not finished and not interrupted  # (by its stop checkpoint)
    state = "Done" if finished else "Stopped" if stopped else "Interrupted"
    episodes = len(callback.monitor.rewards)
    saved = callback.last_checkpoint_steps
    # a stop at a clean point plays a step past its checkpoint, which a resumed run plays again
    behind = (f" (--resume goes on from the checkpoint at step {saved})"
              if (stopped or interrupted) and saved is not None and saved < num_timesteps
              and algo_class.supportsResume() else "")
    print(f"{state}: {num_timesteps} steps{behind}, {counted(episodes, 'episode')}, mean reward (last 100) "
          + (f"{mean_reward:.2f}" if episodes else "n/a (no episode finished)"))
    if (stopped or interrupted) and callback.last_checkpoint is not None and algo_class.supportsResume():
        print(f"Checkpoint: {callback.last_checkpoint}; continue with: {pythonCommand()} -m rl_baselines.train "
              f"--resume {shlex.quote(run_dir)}")
    elif (stopped or interrupted) and os.path.isfile(callback.modelPath(run_dir)):
        command = continueCommand(config, callback.modelPath(run_dir), callback.total_timesteps - num_timesteps)
        if algo_class.supportsResume():  # (a second Ctrl-C before the first checkpoint)
            print(f"No checkpoint yet (--resume {shlex.quote(run_dir)} would start the run again from step 0); "
                  f"continue its model in a new run folder with: {command}")
        else:  # --resume would refuse
            print(f"{config.algo} cannot be resumed (no saveTrainingState); continue its model with: {command}")
    print(f"Run folder: {run_dir}")
    code = 128 + int(callback.stop_signal) if stopped else 130 if interrupted else 0
    return TrainResult(code, run_dir, algo if built else None, num_timesteps, mean_reward, config)


def completeLearningCurve(run_dir: str) -> bool:
    """
    Draw the learning_curve.png of a finished run that has none (stopped, a SIGKILL, between its final checkpoint and
    its curve), from its monitor files, as the run would have drawn it.

    :param run_dir: a finished run folder
    :return: whether it was drawn (not when the run has its curve, no finished episode, or unreadable records)
    """
    folder = RunFolder(run_dir)
    args = readRunArgs(run_dir)
    if os.path.exists(folder.learning_curve_file) or args is None:
        return False
    try:
        episodes = loadEpisodes(folder.monitor_dir, runEnvs(args))
    except (OSError, ValueError):  # (MonitorFileError is one)
        return False
    if not episodes["rewards"].size:
        return False
    window = args.get("episode_window")
    saveLearningCurve(episodes["timesteps"], episodes["rewards"], window if isinstance(window, int) and window > 0
                      else TrainConfig.episode_window, folder.learning_curve_file,
                      title=f"{args.get('env')} {args.get('srl_model')} {args.get('algo')}")
    return True


def _runLogger(config: TrainConfig, algo_class: type, plotter: Any, purge_step: int | None) -> Any:
    """
    :param config: the run's config (run_dir, tensorboard_log, env, srl_model, algo)
    :param algo_class: the algorithm's class (its TRAINING_ROWS)
    :param plotter: the live plots, or None
    :param purge_step: a resumed run's checkpoint step (tensorboard hides what came after it), else None
    :return: the run's RunLogger (progress.csv, visdom, and tensorboard with --tensorboard-log, in the folder its
        args.json names, else DIR/<run name>/)
    """
    tensorboard_dir = None
    if config.tensorboard_log:
        name = readJson(RunFolder(config.run_dir).args_file).get(TENSORBOARD_RUN_KEY)  # (None: recorded before it)
        tensorboard_dir = os.path.join(config.tensorboard_log, name or tensorboardRunName(
            config.env, config.srl_model, config.algo, config.run_dir))
        print(f"Tensorboard log: {tensorboard_dir} (tensorboard --logdir {config.tensorboard_log})")
    return RunLogger(config.run_dir, tensorboard_dir, plotter, purge_step, algo_class.TRAINING_ROWS)


def _writeLearningCurve(callback: Any, config: TrainConfig) -> None:
    """learning_curve.png, the training episodes' rewards; a run that finished none (shorter than its env's episodes)
    has none, and says so in one line"""
    folder = RunFolder(config.run_dir)
    if not callback.monitor.rewards:
        evaluated = os.path.isfile(folder.evaluations_file)  # (an evaluation was made)
        plots = f"{pythonCommand()} -m replay.plots -i {shlex.quote(config.run_dir)}"
        print(f"No {LEARNING_CURVE_FILE}: no training episode finished"
              + (f"; its evaluations: {plots}" if evaluated else ""))
        return
    folder.checkStays()
    saveLearningCurve(callback.episode_steps, callback.monitor.rewards, config.episode_window,
                      folder.learning_curve_file,
                      title=f"{config.env} {config.srl_model} {config.algo}")
