"""The train command's training services, one job each, as Stable-Baselines3 callbacks (``BaseCallback``).

They are combined in a list (:class:`rl_baselines.runs.callbacks.TrainingCallbacks`, an SB3 ``CallbackList``) that
an SB3-backed algorithm passes to ``model.learn(callback=...)`` and an algorithm written here drives in the old
toolbox's form (``callback(locals(), globals())`` after each vectorised step, ``notifyCleanPoint(callback, n)``
between updates). The train command's list, in the order of every step::

    RefreshCallback        every LOG_INTERVAL env steps: reads the new episodes of the monitor files, then runs
        ProgressCallback       the progress bar (ETA, episodes, mean reward; rl_baselines.runs.progress_bar), also
                               moved at the steps between two refreshes and told of SB3's rollout starts and ends
        ScalarLogCallback      the run's scalar log: episodes and pending rows into progress.csv/tensorboard/visdom
        LivePlotCallback       the live reward curve (visdom), at most once per PLOT_PERIOD_S
        BestModelCallback      best/: the best mean training reward, every SAVE_INTERVAL env steps
    EvaluationCallback     deterministic evaluation episodes every --eval-freq steps (best/ then follows them)
    StopSignalCallback     after SIGINT/SIGTERM: a checkpoint (at the next clean point when one comes within
                           STOP_WAIT_S), then stop                      (rl_baselines.runs.checkpoint_callbacks)
    CheckpointCallback     checkpoints every --checkpoint-freq steps on a fixed schedule (each at the first clean
                           point at or after its due step when the algorithm has them), each after the episodes up
                           to its step and the pending row are logged and the scalar log is flushed to disk (ditto)

Invariants: a callback does its work only when its interval has passed, so the per-step cost is a few comparisons
(and the progress bar's count, redrawn at most once a second: about a microsecond); a callback never draws from a
random generator, so the trained agent is the same with or without them; a failed save (full disk) costs one
warning line, never the run; a run folder deleted or moved while training (it no longer holds its args.json) stops
the run at the next save, which would have made it again (``FolderVanished``, exit 1). Each
callback keeps in :meth:`TrainingService.state` what a checkpoint records of it (run_state.json's ``callback``
entry), and :meth:`TrainingService.finish` closes it once training ended; what it does while no step is counted
(an evaluation, a checkpoint) it says in the progress bar (:meth:`TrainingService.busy`).
"""
from __future__ import annotations

import contextlib
import os
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from tqdm import tqdm

from rl_baselines.core.base import BaseRLObject, lastStep
from rl_baselines.core.checkpointing import bestFromState, bestToState, saveModel
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.runs.monitor_files import MonitorTail
from rl_baselines.runs.run_logging import RunLogger

# Mean reward over this many recent episodes decides the best model (as in the old toolbox).
N_EPISODES_EVAL = 100
# At most one live-plot refresh per this many seconds.
PLOT_PERIOD_S = 1.0


def stepsOf(learner: Any) -> int:
    """:return: the env steps a learner (an SB3 model, or ``_locals["self"]`` of an own learner) took so far"""
    return int(getattr(learner, "num_timesteps", 0))


class TrainingService(BaseCallback):
    """
    An SB3 callback that also runs under an algorithm written here, whose ``_locals["self"]`` may be any object
    with a ``num_timesteps`` attribute (read with a default of 0), and that a parent can run at a given step
    (:meth:`at`).
    """

    # Says in the progress bar what the service is doing while no step is counted (ProgressCallback.showing, set by
    # the list the service is in); None: nothing is said.
    progress_status: Callable[[str], contextlib.AbstractContextManager[None]] | None = None

    def on_training_start(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        self.locals, self.globals = locals_, globals_
        self.num_timesteps = stepsOf(getattr(self, "model", None))
        self._on_training_start()

    def on_step(self) -> bool:
        return self.at(stepsOf(getattr(self, "model", None)))

    def at(self, num_timesteps: int) -> bool:
        """
        Run this callback's step at a given step count (a parent that knows it calls this).

        :param num_timesteps: env steps taken so far
        :return: False to stop training
        """
        self.n_calls += 1
        self.num_timesteps = int(num_timesteps)
        return self._on_step()

    def _on_step(self) -> bool:
        return True

    def between(self, num_timesteps: int) -> None:
        """
        Called by a parent at each step at which it does not run this callback (:class:`RefreshCallback`: between
        two refreshes; nothing by default, so a parent leaves out the callbacks that keep this).

        :param num_timesteps: env steps taken so far
        """

    def busy(self, what: str) -> contextlib.AbstractContextManager[None]:
        """
        :param what: what the service does while no step is counted, e.g. ``evaluating``
        :return: a context during which the progress bar says it (:attr:`progress_status`)
        """
        return contextlib.nullcontext() if self.progress_status is None else self.progress_status(what)

    def children(self) -> list[BaseCallback]:
        """:return: the callbacks this one runs (none by default)"""
        return []

    def state(self) -> dict[str, Any]:
        """:return: what a checkpoint keeps of this callback (run_state.json's ``callback`` entry; none by default)"""
        return {}

    def restoreState(self, state: dict[str, Any]) -> None:
        """:param state: run_state.json's ``callback`` entry of the checkpoint a resumed run goes on from"""

    def finish(self) -> None:
        """Close what the callback holds open, once training ended (after the final refresh)."""


class EpisodeFeed:
    """
    The run's monitor files read as training goes (a :class:`MonitorTail`), shared by the callbacks that show or
    judge episodes. Only :class:`RefreshCallback` polls it.

    :param monitor_dir: the run's monitor folder
    :param num_envs: the run's envs, stepped together (monitor_files.runEnvs): the unit of :attr:`steps`
    """

    def __init__(self, monitor_dir: str, num_envs: int = 1) -> None:
        self.monitor = MonitorTail(monitor_dir)
        self.num_envs = int(num_envs)
        # episodes read by the last poll, and whether that poll was the final one (plots are then sent at once)
        self.new_episodes = 0
        self.closing = False
        self._read_ahead = 0  # episodes read since the last poll by readAhead: the next poll counts them as new

    def poll(self, closing: bool = False) -> int:
        """
        :param closing: this is the refresh at the end of training
        :return: how many episodes were read
        """
        self.new_episodes = self._read_ahead + self.monitor.poll()
        self._read_ahead = 0
        self.closing = closing
        return self.new_episodes

    @property
    def steps(self) -> np.ndarray:
        """The run's step count (all envs together, as ``num_timesteps``) when each episode read so far ended."""
        return self.monitor.runSteps(self.num_envs)

    def readAhead(self) -> int:
        """
        Read the episodes ended since the last poll, between two refreshes (a checkpoint logs them first); the next
        poll still counts them as new.

        :return: how many episodes were read
        """
        read = self.monitor.poll()
        self._read_ahead += read
        return read


class ModelSaver:
    """
    Saves the model being trained into a folder with its manifest (rl_baselines.core.checkpointing.saveModel).

    :param algo: the algorithm being trained
    :param algo_name: its registered name (the model file is ``<algo_name>_model<ext>``)
    :param run_dir: the run folder
    :param run_info: what the manifests record about the run (checkpointing.runDescription); None: a plain
        ``algo.save`` without manifest, and no checkpoints
    """

    def __init__(self, algo: BaseRLObject, algo_name: str, run_dir: str, run_info: dict[str, Any] | None) -> None:
        self.algo = algo
        self.algo_name = algo_name
        self.run_dir = run_dir
        self.run_info = run_info
        # A run folder (it holds its args.json: the train command's) must keep it until the last save; a bare folder
        # a script gives the callbacks is not watched.
        self.watched = RunFolder.isRun(run_dir)

    def checkRunFolder(self) -> None:
        """:raises srl_toolbox.files.FolderVanished: the watched run folder was deleted or moved
        (RunFolder.checkStays)"""
        if self.watched:
            RunFolder(self.run_dir).checkStays()

    def modelPath(self, folder: str) -> str:
        """:return: ``folder/<algo>_model<ext>``"""
        return os.path.join(folder, f"{self.algo_name}_model{self.algo.MODEL_EXTENSION}")

    def save(self, folder: str, num_timesteps: int, **extra: Any) -> None:
        """
        :param folder: destination folder
        :param num_timesteps: the model's step count (in its manifest)
        :param extra: more manifest entries
        :raises OSError: the save failed
        :raises srl_toolbox.files.FolderVanished: the run folder was deleted or moved (nothing saved)
        """
        self.checkRunFolder()
        path = self.modelPath(folder)
        if self.run_info is None:
            self.algo.save(path)
        else:
            saveModel(self.algo, path, self.algo_name, self.run_info, num_timesteps, **extra)


class RefreshCallback(TrainingService):
    """
    Every ``log_interval`` env steps (counted from the step of the previous refresh, as SB3's EveryNTimesteps), read
    the new episodes of the monitor files and run its callbacks, in order, at that step; at the steps between, call
    the :meth:`TrainingService.between` of those that have one; pass SB3's rollout starts and ends on to them all.

    :param feed: the monitor files, read here
    :param log_interval: env steps between refreshes
    :param start_timesteps: the step count training starts from
    :param callbacks: what runs at each refresh
    """

    def __init__(self, feed: EpisodeFeed, log_interval: int, start_timesteps: int,
                 callbacks: list[BaseCallback]) -> None:
        super().__init__()
        self.feed = feed
        self.log_interval = max(1, int(log_interval))
        self.next_refresh = int(start_timesteps) + self.log_interval
        self.callbacks = list(callbacks)
        for callback in self.callbacks:
            callback.parent = self
        self.every_step = [callback for callback in self.callbacks if isinstance(callback, TrainingService)
                           and type(callback).between is not TrainingService.between]

    def children(self) -> list[BaseCallback]:
        return self.callbacks

    def state(self) -> dict[str, Any]:
        # a resumed run refreshes at the steps the uninterrupted one does (its log rows and plot points fall there)
        return {"next_refresh": self.next_refresh}

    def restoreState(self, state: dict[str, Any]) -> None:
        self.next_refresh = int(state.get("next_refresh", self.next_refresh))

    def _init_callback(self) -> None:
        for callback in self.callbacks:
            callback.init_callback(self.model)

    def _on_training_start(self) -> None:
        for callback in self.callbacks:
            callback.on_training_start(self.locals, self.globals)

    def _on_step(self) -> bool:
        if self.num_timesteps < self.next_refresh:
            for callback in self.every_step:
                callback.between(self.num_timesteps)
            return True
        self.next_refresh = self.num_timesteps + self.log_interval
        return self.refreshAt(self.num_timesteps)

    def _on_rollout_start(self) -> None:
        for callback in self.callbacks:
            callback.on_rollout_start()

    def _on_rollout_end(self) -> None:
        for callback in self.callbacks:
            callback.on_rollout_end()

    def refreshAt(self, num_timesteps: int, closing: bool = False) -> bool:
        """
        Read the new episodes and run the callbacks now, whatever the interval (a stop, the end of training).

        :param num_timesteps: env steps taken so far
        :param closing: the final refresh (plots are sent at once)
        :return: False when a callback asks to stop
        """
        self.feed.poll(closing)
        keep_going = True
        for callback in self.callbacks:
            run = callback.at(num_timesteps) if isinstance(callback, TrainingService) else callback.on_step()
            keep_going = run and keep_going
        return keep_going

    def finish(self) -> None:
        self.feed.monitor.close()


class ScalarLogCallback(TrainingService):
    """
    The run's scalar log (:class:`RunLogger`: progress.csv, visdom, tensorboard): at each refresh the new episodes
    and the rows pending; between refreshes it is the service ``callback.logScalars(step, {tag: value})`` and the
    shared SB3 logger (``callback.progressLogger()``) that algorithms record into.

    :param run_logger: the run's scalar log
    :param feed: the episodes read so far
    """

    def __init__(self, run_logger: RunLogger, feed: EpisodeFeed) -> None:
        super().__init__()
        self.run_logger = run_logger
        self.feed = feed
        self.finished = False
        run_logger.read_episodes = self._readAhead

    def _readAhead(self) -> None:
        """Log the episodes ended since the last refresh (those of the other ranks' monitor files too, written
        between updates), as a training row or a checkpoint is written"""
        if not self.finished and self.feed.readAhead():
            self._logEpisodes()

    def _on_training_start(self) -> None:
        self.run_logger.startClock(self.num_timesteps)

    def _on_step(self) -> bool:
        if self.feed.new_episodes:
            self._logEpisodes()
        self.run_logger.dumpPending()
        return True

    def _logEpisodes(self) -> None:
        monitor = self.feed.monitor
        self.run_logger.logEpisodes(self.feed.steps, monitor.rewards, monitor.lengths)

    def beforeCheckpoint(self) -> None:
        """
        Before a checkpoint: log the episodes ended since the last refresh, write the row pending (scalars logged
        since the last row: a generation's, which would otherwise wait for the next refresh) and put the log on disk,
        so that all it holds up to the checkpoint's step (what a run resumed from it keeps) is there after a kill
        (nothing once training ended: the final refresh logged everything and the log is closed).
        """
        if self.finished:
            return
        self._readAhead()
        self.run_logger.dumpPending()
        self.run_logger.flush()

    def state(self) -> dict[str, Any]:
        # the values recorded for the next row (an algorithm's running means): a resumed run's next row is the same
        return {"pending_log": self.run_logger.pendingState()}

    def restoreState(self, state: dict[str, Any]) -> None:
        self.run_logger.restorePendingState(state.get("pending_log", {}))
        # the episodes of the monitor files, cut back to the checkpoint: the uninterrupted run's log held them when it
        # wrote the checkpoint (beforeCheckpoint), and its rows until the next refresh average them (tensorboard has
        # them already: RunLogger skips the steps up to the checkpoint's; the next poll counts them as new, as the
        # uninterrupted run's counts those read by the checkpoint)
        if self.feed.readAhead():
            self._logEpisodes()

    def logScalars(self, step: int, values: dict[str, float]) -> None:
        """
        :param step: env steps taken so far (the x axis)
        :param values: scalar values by tag, e.g. ``{"loss/policy": 0.3}`` (one live-plot window per tag group)
        """
        self.run_logger.logScalars(step, values)

    def progressLogger(self) -> Any:
        """:return: the run's SB3 ``Logger`` (progress.csv, and tensorboard when on)"""
        return self.run_logger.progressLogger()

    def finish(self) -> None:
        self.finished = True
        self.run_logger.close()


class LivePlotCallback(TrainingService):
    """
    The live reward curve (visdom): sent at a refresh that read new episodes, at most once per PLOT_PERIOD_S, and
    at the final refresh whatever the time.

    :param plotter: a VisdomPlotter (its ``update(timesteps, rewards)``)
    :param feed: the episodes read so far
    """

    def __init__(self, plotter: Any, feed: EpisodeFeed) -> None:
        super().__init__()
        self.plotter = plotter
        self.feed = feed
        self.plotted_at = 0.0

    def _on_step(self) -> bool:
        now = time.monotonic()
        closing = self.feed.closing
        if (self.feed.new_episodes or closing) and (closing or now - self.plotted_at >= PLOT_PERIOD_S):
            self.plotted_at = now
            self.plotter.update(self.feed.steps, self.feed.monitor.rewards)
        return True


class BestModelCallback(TrainingService):
    """
    ``best/``: the model with the best mean training reward over the last N_EPISODES_EVAL episodes, checked at the
    first refresh every ``save_interval`` env steps and at the end of training, once ``min_episodes_save`` episodes
    ended. With ``by_evaluation`` the evaluations decide instead (:class:`EvaluationCallback` calls
    :meth:`saveEvaluated`); the check count goes on either way (checkpoints record it).

    :param saver: saves the model
    :param feed: the episodes read so far
    :param save_interval: env steps between checks
    :param min_episodes_save: episodes needed before a best model is saved
    :param start_timesteps: the step count training starts from
    :param by_evaluation: evaluations decide ``best/``
    """

    def __init__(self, saver: ModelSaver, feed: EpisodeFeed, save_interval: int, min_episodes_save: int,
                 start_timesteps: int = 0, by_evaluation: bool = False) -> None:
        super().__init__()
        self.saver = saver
        self.feed = feed
        self.save_interval = max(1, int(save_interval))
        self.min_episodes_save = int(min_episodes_save)
        self.next_check = int(start_timesteps) + self.save_interval
        self.by_evaluation = by_evaluation
        self.best_mean_reward = -float("inf")

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next_check:
            self.next_check = self.num_timesteps + self.save_interval
            self.saveIfBest()
        return True

    def saveIfBest(self) -> bool:
        """
        Save ``best/`` when the mean reward of the last episodes beats every earlier check (not ``by_evaluation``).

        :return: whether a new best model was saved
        """
        monitor = self.feed.monitor
        if self.by_evaluation or len(monitor.rewards) < max(1, self.min_episodes_save):
            return False
        mean_reward = monitor.meanReward(N_EPISODES_EVAL)
        if mean_reward <= self.best_mean_reward:
            return False
        self.best_mean_reward = mean_reward
        return self._save(self.num_timesteps, mean_reward=mean_reward)

    def saveEvaluated(self, num_timesteps: int, mean_reward: float) -> bool:
        """
        :param num_timesteps: the step of the evaluation
        :param mean_reward: its mean reward, better than every earlier evaluation's
        :return: whether ``best/`` was saved
        """
        return self._save(num_timesteps, mean_reward=mean_reward, selected_by="evaluation")

    def _save(self, num_timesteps: int, **extra: Any) -> bool:
        try:
            with self.busy("saving best model"):
                self.saver.save(RunFolder(self.saver.run_dir).best_dir, num_timesteps, **extra)
        except OSError as error:  # a full disk costs the best model, not the run
            warnings.warn(f"best model not saved: {error.strerror}", stacklevel=3)
            return False
        return True

    def state(self) -> dict[str, Any]:
        return {"best_mean_reward": bestToState(self.best_mean_reward), "next_best_check": self.next_check}

    def restoreState(self, state: dict[str, Any]) -> None:
        self.best_mean_reward = bestFromState(state)
        self.next_check = int(state.get("next_best_check", self.next_check))

    def finish(self) -> None:
        self.saveIfBest()


class EvaluationCallback(TrainingService):
    """
    Deterministic evaluation episodes (an :class:`rl_baselines.runs.evaluation.Evaluator`) at the first step at or
    past each multiple of its ``eval_freq``, recorded in evaluations.npz, a line above the progress bar, the scalar
    log (``eval/mean_reward``, ``eval/std_reward``) and the live plot's evaluation window; a mean better than every
    earlier one goes to ``best``.

    :param evaluator: plays and records the episodes
    :param run_logger: the run's scalar log
    :param plotter: the live plots (its ``updateEvaluation``), or None
    :param best: saves ``best/`` on a new best evaluation, or None
    :param total_timesteps: the step budget training goes to (None: not known): a run that stops before its first
        evaluation is due says so when training starts
    :param start_timesteps: the step count training starts from (None: the learner's when its callbacks start, which
        for an algorithm written here is after its first step)
    """

    # Called after each step of the evaluation's episodes (the list sets it: StopSignalCallback.acknowledge, so that
    # a stop asked during a long evaluation is said at once); None: nothing is called.
    between_steps: Callable[[], None] | None = None

    def __init__(self, evaluator: Any, run_logger: RunLogger, plotter: Any = None,
                 best: BestModelCallback | None = None, total_timesteps: int | None = None,
                 start_timesteps: int | None = None) -> None:
        super().__init__()
        self.evaluator = evaluator
        self.run_logger = run_logger
        self.plotter = plotter
        self.best = best
        self.total_timesteps = total_timesteps
        self.start_timesteps = start_timesteps

    def _on_training_start(self) -> None:
        if self.total_timesteps is None:
            return
        start = self.num_timesteps if self.start_timesteps is None else self.start_timesteps
        end = lastStep(getattr(self, "model", None), start, self.total_timesteps)
        if end > self.num_timesteps and not self.evaluator.due(end):
            warnings.warn(f"--eval-freq {self.evaluator.eval_freq}: this run ends at step {end}, before its first "
                          f"evaluation (due at step {self.evaluator.next_eval}): no evaluation will be made")

    def _on_step(self) -> bool:
        if self.evaluator.due(self.num_timesteps):
            self.evaluate(self.num_timesteps)
        return True

    def evaluate(self, num_timesteps: int) -> float:
        """
        :param num_timesteps: env steps taken so far
        :return: the evaluation's mean reward
        """
        evaluator = self.evaluator
        with self.busy("evaluating"):
            mean_reward, std_reward = evaluator.evaluate(num_timesteps, between_steps=self.between_steps)
        tqdm.write(f"Evaluation at {num_timesteps} steps: mean reward {mean_reward:.2f} +/- {std_reward:.2f} "
                   f"({evaluator.n_episodes} episode{'s' if evaluator.n_episodes > 1 else ''})")
        # progress.csv and tensorboard under SB3's EvalCallback tags, in a row of its own at the evaluation's step as
        # EvalCallback dumps it (a later row would pair it with training values recorded after it); the live plot has
        # its own evaluation window
        scalars = {"eval/mean_reward": mean_reward, "eval/std_reward": std_reward,
                   "eval/mean_ep_length": float(np.mean(evaluator.ep_lengths[-1]))}
        if evaluator.successes[-1]:  # (the env reports is_success)
            scalars["eval/success_rate"] = float(np.mean(evaluator.successes[-1]))
        self.run_logger.logScalars(num_timesteps, scalars, plot=False)
        self.run_logger.dumpPending(num_timesteps)
        if self.plotter is not None and hasattr(self.plotter, "updateEvaluation"):
            self.plotter.updateEvaluation(*evaluator.means())
        if mean_reward > evaluator.best_mean_reward:
            evaluator.best_mean_reward = mean_reward
            if self.best is not None:
                self.best.saveEvaluated(num_timesteps, mean_reward)
        return mean_reward

    def state(self) -> dict[str, Any]:
        return {"evaluation": self.evaluator.state()}

    def restoreState(self, state: dict[str, Any]) -> None:
        self.evaluator.restoreState(state.get("evaluation", {}))

    def finish(self) -> None:
        self.evaluator.close()


def walk(callbacks: list[BaseCallback]) -> Iterator[BaseCallback]:
    """:return: the callbacks and, after each, those it runs (depth first, in order)"""
    for callback in callbacks:
        yield callback
        nested = callback.children() if isinstance(callback, TrainingService) else getattr(callback, "callbacks", [])
        yield from walk(list(nested))
