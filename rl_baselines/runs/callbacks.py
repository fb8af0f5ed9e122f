"""The callback the train command hands to every algorithm: :class:`TrainingCallbacks`, a Stable-Baselines3
``CallbackList`` of small training services (rl_baselines.runs.training_callbacks: refresh, progress bar, scalar
log, live plot, best model, evaluation, stop signal, checkpoints; the progress bar is
rl_baselines.runs.progress_bar's), also callable in the old toolbox's form.

Two ways to drive it:

- an SB3-backed algorithm passes it to ``model.learn(callback=...)`` (SB3 calls ``on_step`` after each vectorised
  step and ``on_rollout_start`` at each rollout start, the clean point where checkpoints are exact);
- an algorithm written here (or a plugin of API version 1) calls ``callback(locals(), globals()) -> bool`` after
  each vectorised step, with its learner as ``locals()["self"]`` (its ``num_timesteps`` counts the env steps, all
  envs together; False means stop), and ``notifyCleanPoint(callback, num_timesteps)`` (rl_baselines.core.base)
  between two updates. This is the reverse of SB3's ``ConvertCallback``: any list of SB3 callbacks becomes an
  old-style callback with ``TrainingCallbacks([...])``.

Besides driving its callbacks, the list offers the services algorithms use (``logScalars``, ``progressLogger``) and
collects the callbacks' state that each checkpoint records (:meth:`TrainingCallbacks.state`).

:func:`standardCallbacks` builds the train command's list; :class:`TrainingCallback` is the same list built by one
constructor from the same keywords, for code that builds the train command's callbacks as a single object.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, CallbackList

from rl_baselines.core.base import BaseRLObject
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.runs.checkpoint_callbacks import CheckpointCallback, StopSignalCallback
from rl_baselines.runs.monitor_files import MonitorTail
from rl_baselines.runs.progress_bar import ProgressCallback
from rl_baselines.runs.run_logging import RunLogger
from rl_baselines.runs.training_callbacks import (
    N_EPISODES_EVAL,
    PLOT_PERIOD_S,
    BestModelCallback,
    EpisodeFeed,
    EvaluationCallback,
    LivePlotCallback,
    ModelSaver,
    RefreshCallback,
    ScalarLogCallback,
    TrainingService,
    stepsOf,
    walk,
)
from srl_toolbox.files import FolderVanished

__all__ = ["N_EPISODES_EVAL", "PLOT_PERIOD_S", "TrainingCallback", "TrainingCallbacks", "standardCallbacks"]


class TrainingCallbacks(CallbackList):
    """
    SB3's ``CallbackList``, also callable in the old toolbox's form, with the services algorithms use.

    :param callbacks: the callbacks, run in this order at every step
    """

    def __init__(self, callbacks: list[BaseCallback]) -> None:
        super().__init__(list(callbacks))
        self._started = False
        checkpoints = self.find(CheckpointCallback)
        if checkpoints is not None:
            checkpoints.callbacks_state = self.state
            log = self.find(ScalarLogCallback)
            if log is not None:
                checkpoints.before_save = log.beforeCheckpoint
        progress = self.find(ProgressCallback)
        if progress is not None:  # the services say in its bar what they do while no step is counted
            for callback in walk(self.callbacks):
                if isinstance(callback, TrainingService):
                    callback.progress_status = progress.showing
        stop, evaluation = self.find(StopSignalCallback), self.find(EvaluationCallback)
        if stop is not None and evaluation is not None:  # a stop asked during an evaluation is said at once
            evaluation.between_steps = stop.acknowledge

    # --- the list ----------------------------------------------------------------------------------------------

    def find(self, kind: type) -> Any:
        """:return: the first callback of the list (nested ones included) of this kind, None when there is none"""
        return next((callback for callback in walk(self.callbacks) if isinstance(callback, kind)), None)

    def on_training_start(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        self._started = True
        self.locals, self.globals = locals_, globals_
        self.num_timesteps = stepsOf(getattr(self, "model", None))
        self._on_training_start()

    def on_step(self) -> bool:
        self.n_calls += 1
        self.num_timesteps = stepsOf(getattr(self, "model", None))
        return self._on_step()

    # --- the old form ------------------------------------------------------------------------------------------

    def __call__(self, _locals: dict[str, Any], _globals: dict[str, Any]) -> bool:
        """
        One vectorised step of an algorithm written here.

        :param _locals: the learner's locals, its learner as ``"self"`` (``num_timesteps``: env steps so far)
        :param _globals: its globals
        :return: False to stop training
        """
        learner = _locals.get("self")
        if not self._started or learner is not self.model:
            self.init_callback(learner)
            if not self._started:
                self.on_training_start(_locals, _globals)
        return self.on_step()

    def cleanPoint(self, num_timesteps: int) -> None:
        """
        Called (through ``notifyCleanPoint``) by an algorithm written here between two updates, where its saved
        state is exactly what training goes on from: SB3's rollout start, where a checkpoint that fell due is
        written.

        :param num_timesteps: env steps taken so far
        """
        for callback in walk(self.callbacks):
            callback.num_timesteps = int(num_timesteps)
        self.on_rollout_start()

    def close(self, num_timesteps: int) -> None:
        """
        The end of training: a final refresh (best-model check and plot included), then every callback closes. A run
        folder found deleted or moved by a save on the way does not keep the others from closing (progress bar, logs,
        evaluation env); its FolderVanished is raised once they all did.

        :param num_timesteps: env steps taken in total
        :raises srl_toolbox.files.FolderVanished: the run folder was deleted or moved during training
        """
        vanished: FolderVanished | None = None
        refresh = self.find(RefreshCallback)
        steps = [lambda: refresh.refreshAt(num_timesteps, closing=True)] if refresh is not None else []
        steps += [callback.finish for callback in walk(self.callbacks) if isinstance(callback, TrainingService)]
        for step in steps:
            try:
                step()
            except FolderVanished as error:
                vanished = vanished or error
        if vanished is not None:
            raise vanished

    # --- what a checkpoint records -----------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """:return: run_state.json's ``callback`` entry: the state of every callback, merged"""
        merged: dict[str, Any] = {}
        for callback in walk(self.callbacks):
            if isinstance(callback, TrainingService):
                merged.update(callback.state())
        return merged

    def restoreState(self, state: dict[str, Any]) -> None:
        """:param state: the ``callback`` entry of a checkpoint's run_state.json (a resumed run goes on with it)"""
        for callback in walk(self.callbacks):
            if isinstance(callback, TrainingService):
                callback.restoreState(state)

    # --- services for algorithms -------------------------------------------------------------------------------

    def logScalars(self, step: int, values: dict[str, float]) -> None:
        """
        Log scalars of the algorithm, a plugin or the evaluation: progress.csv, the live plots (one window per tag
        group, the tag's part before ``/``) and the tensorboard log when ``--tensorboard-log`` is on (nothing
        without a :class:`ScalarLogCallback` in the list).

        :param step: env steps taken so far (the x axis)
        :param values: scalar values by tag, e.g. ``{"loss/policy": 0.3, "eval/mean_reward": 12.0}``
        """
        log = self.find(ScalarLogCallback)
        if log is not None:
            log.logScalars(step, values)

    def progressLogger(self) -> Any:
        """
        :return: the run's Stable-Baselines3 ``Logger`` (progress.csv, and tensorboard when on) that an algorithm
            built on SB3's logger records into (``model.set_logger(callback.progressLogger())``); None without a
            :class:`ScalarLogCallback` in the list
        """
        log = self.find(ScalarLogCallback)
        return None if log is None else log.progressLogger()

    # --- what the train command reads at the end -----------------------------------------------------------------

    def requestStop(self, signum: int) -> None:
        """Ask training to stop at the next step, after a checkpoint (a signal handler calls this)."""
        self.find(StopSignalCallback).requestStop(signum)

    @property
    def started(self) -> bool:
        """Whether training reached its first step (the model is built): False after a set-up cut short."""
        return self._started

    @property
    def steps_taken(self) -> int:
        """The env steps of the learner the callbacks were called with (0 before the first step): the count of a
        training cut short by a ``KeyboardInterrupt``, whose algorithm never copied it into its own
        ``num_timesteps``."""
        return stepsOf(getattr(self, "model", None))

    @property
    def stop_signal(self) -> int | None:
        """The signal that asked training to stop, None when none did."""
        stop = self.find(StopSignalCallback)
        return None if stop is None else stop.stop_signal

    @property
    def last_checkpoint(self) -> str | None:
        """The folder of the last checkpoint written, None before the first."""
        checkpoints = self.find(CheckpointCallback)
        return None if checkpoints is None else checkpoints.last_checkpoint

    def resumedFrom(self, folder: str, steps: int) -> None:
        """
        A resumed run's last checkpoint is the one it restored, until it writes another.

        :param folder: the checkpoint folder
        :param steps: its step count
        """
        checkpoints = self.find(CheckpointCallback)
        if checkpoints is not None:
            checkpoints.last_checkpoint, checkpoints.last_checkpoint_steps = folder, steps

    @property
    def last_checkpoint_steps(self) -> int | None:
        """The step count of the last checkpoint written, None before the first."""
        checkpoints = self.find(CheckpointCallback)
        return None if checkpoints is None else checkpoints.last_checkpoint_steps

    @property
    def total_timesteps(self) -> int:
        """The step count at which the run ends."""
        return self.find(CheckpointCallback).total_timesteps

    @property
    def monitor(self) -> MonitorTail:
        """The episodes read from the run's monitor files."""
        return self.find(RefreshCallback).feed.monitor

    @property
    def episode_steps(self) -> np.ndarray:
        """The run's step count (all envs together) when each episode read so far ended (EpisodeFeed.steps)."""
        return self.find(RefreshCallback).feed.steps

    def modelPath(self, folder: str) -> str:
        """:return: ``folder/<algo>_model<ext>``"""
        return self.find(CheckpointCallback).saver.modelPath(folder)

    def saveModel(self, folder: str, num_timesteps: int, **extra: Any) -> None:
        """
        Save the model into ``folder`` with its manifest.

        :param folder: destination folder
        :param num_timesteps: the model's step count
        :param extra: more manifest entries
        """
        self.find(CheckpointCallback).saver.save(folder, num_timesteps, **extra)

    def checkpoint(self, num_timesteps: int, training_state: bool = True, **extra: Any) -> str | None:
        """:return: :meth:`CheckpointCallback.save`'s folder (None when the save failed)"""
        return self.find(CheckpointCallback).save(num_timesteps, training_state, **extra)


def _standardParts(algo: BaseRLObject, algo_name: str, run_dir: str, total_timesteps: int, start_timesteps: int,
                   log_interval: int, save_interval: int, checkpoint_freq: int, min_episodes_save: int, plotter: Any,
                   progress: bool, run_info: dict[str, Any] | None, buffer_save_freq: int, evaluator: Any,
                   run_logger: Any, num_envs: int) -> list[BaseCallback]:
    """The train command's callbacks, in their order (see :func:`standardCallbacks`)."""
    run_logger = run_logger if run_logger is not None else RunLogger(run_dir, plotter=plotter)
    feed = EpisodeFeed(RunFolder(run_dir).monitor_dir, num_envs)
    saver = ModelSaver(algo, algo_name, run_dir, run_info)
    best = BestModelCallback(saver, feed, save_interval, min_episodes_save, start_timesteps,
                             by_evaluation=evaluator is not None)
    on_refresh: list[BaseCallback] = [ProgressCallback(feed, total_timesteps, start_timesteps, progress),
                                      ScalarLogCallback(run_logger, feed)]
    if plotter is not None:
        on_refresh.append(LivePlotCallback(plotter, feed))
    refresh = RefreshCallback(feed, log_interval, start_timesteps, [*on_refresh, best])
    checkpoints = CheckpointCallback(saver, max(0, checkpoint_freq), buffer_save_freq, total_timesteps,
                                     start_timesteps)
    evaluation = [] if evaluator is None else [
        EvaluationCallback(evaluator, run_logger, plotter, best, total_timesteps, start_timesteps)]
    return [refresh, *evaluation, StopSignalCallback(refresh, checkpoints), checkpoints]


def standardCallbacks(algo: BaseRLObject, algo_name: str, run_dir: str, total_timesteps: int, *,
                      start_timesteps: int = 0, log_interval: int = 1000, save_interval: int = 5000,
                      checkpoint_freq: int = 0, min_episodes_save: int = 100, plotter: Any = None,
                      progress: bool = True, run_info: dict[str, Any] | None = None, buffer_save_freq: int = 0,
                      evaluator: Any = None, run_logger: Any = None, num_envs: int = 1) -> TrainingCallbacks:
    """
    The train command's list: a refresh every ``log_interval`` steps (progress bar, scalar log, live plot when
    ``plotter`` is given, best model), the evaluation (with ``evaluator``), the stop signal and the checkpoints.

    :param algo: the algorithm being trained (its ``save`` writes the models)
    :param algo_name: registered name, used in file names
    :param run_dir: the run folder
    :param total_timesteps: the step count at which training ends (for the progress bar)
    :param start_timesteps: the step count training starts from (non-zero when continuing a saved model)
    :param log_interval: env steps between refreshes (monitor, progress bar, plot)
    :param save_interval: env steps between best-model checks
    :param checkpoint_freq: env steps between periodic checkpoints (0: none)
    :param min_episodes_save: episodes needed before a best model is saved
    :param plotter: a VisdomPlotter, or None without live plots
    :param progress: show a progress bar
    :param run_info: what the manifests record about the run (checkpointing.runDescription); None: none written
    :param buffer_save_freq: env steps between replay-buffer saves, at checkpoints (0: at every checkpoint, -1: never)
    :param evaluator: plays evaluation episodes every ``eval_freq`` steps and then decides ``best/`` (None: no
        evaluation, ``best/`` follows the training reward)
    :param run_logger: the run's scalar log (rl_baselines.runs.run_logging.RunLogger); None: progress.csv and
        ``plotter`` only
    :param num_envs: the run's envs, stepped together (rl_baselines.runs.monitor_files.runEnvs): an episode is
        logged and plotted at its env's own step count times them, the run's step count when it ended
    :return: the list
    """
    return TrainingCallbacks(_standardParts(algo, algo_name, run_dir, total_timesteps, start_timesteps, log_interval,
                                            save_interval, checkpoint_freq, min_episodes_save, plotter, progress,
                                            run_info, buffer_save_freq, evaluator, run_logger, num_envs))


class TrainingCallback(TrainingCallbacks):
    """
    The train command's list built by one constructor from the parameters of :func:`standardCallbacks`, for code that
    takes the callbacks as a single object; code that needs other callbacks combines them itself.
    """

    def __init__(self, algo: BaseRLObject, algo_name: str, run_dir: str, total_timesteps: int,
                 start_timesteps: int = 0, log_interval: int = 1000, save_interval: int = 5000,
                 checkpoint_freq: int = 0, min_episodes_save: int = 100, plotter: Any = None, progress: bool = True,
                 run_info: dict[str, Any] | None = None, buffer_save_freq: int = 0, evaluator: Any = None,
                 run_logger: Any = None, num_envs: int = 1) -> None:
        super().__init__(_standardParts(algo, algo_name, run_dir, total_timesteps, start_timesteps, log_interval,
                                        save_interval, checkpoint_freq, min_episodes_save, plotter, progress,
                                        run_info, buffer_save_freq, evaluator, run_logger, num_envs))
