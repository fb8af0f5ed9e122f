"""The callback the train command hands to every algorithm: progress bar, model saves, the live reward curve and the
run's scalar log (``callback.logScalars(step, {tag: value})``: progress.csv, visdom, tensorboard; see
rl_baselines.runs.run_logging).

It follows the old toolbox's form, ``callback(_locals, _globals) -> bool``, called after each vectorised step with
the learner as ``_locals["self"]``. Work happens only every ``log_interval`` env steps, so the per-step cost is one
attribute read and a few comparisons.

Checkpoints (rl_baselines.core.checkpointing) are written every ``checkpoint_freq`` env steps: at the step they fall due,
or, for an algorithm whose ``CHECKPOINT_AT_CLEAN_POINTS`` is set, at its next :meth:`TrainingCallback.cleanPoint`
(between two updates, where the saved state is exactly what training goes on from). After :meth:`requestStop`
(SIGINT/SIGTERM) the next step writes a checkpoint and returns False, which stops training.

With an :class:`rl_baselines.runs.evaluation.Evaluator` (``train --eval-freq``), deterministic evaluation episodes are
played at the first step at or past each multiple of its ``eval_freq``, and ``best/`` holds the model with the best
evaluation mean; without one, ``best/`` holds the model with the best mean training reward over the last
``N_EPISODES_EVAL`` episodes (checked every ``save_interval`` steps).
"""
from __future__ import annotations

import glob
import os
import signal
import time
import warnings
from typing import Any

from tqdm import tqdm

from rl_baselines.core.base import BaseRLObject
from rl_baselines.core.checkpointing import CheckpointError, saveModel, writeCheckpoint
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.core.training_state import captureEpisodeStarts, captureGlobalRNG, countLines
from rl_baselines.runs.monitor_files import MONITOR_SUFFIX, MonitorTail
from rl_baselines.runs.run_logging import RunLogger

# Mean reward over this many recent episodes decides the best model (as in the old toolbox).
N_EPISODES_EVAL = 100
# At most one live-plot refresh per this many seconds.
PLOT_PERIOD_S = 1.0


class TrainingCallback:
    """
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
    :param run_logger: the run's scalar log (rl_baselines.runs.run_logging.RunLogger); None: progress.csv and ``plotter``
        only
    """

    def __init__(
        self,
        algo: BaseRLObject,
        algo_name: str,
        run_dir: str,
        total_timesteps: int,
        start_timesteps: int = 0,
        log_interval: int = 1000,
        save_interval: int = 5000,
        checkpoint_freq: int = 0,
        min_episodes_save: int = 100,
        plotter: Any = None,
        progress: bool = True,
        run_info: dict[str, Any] | None = None,
        buffer_save_freq: int = 0,
        evaluator: Any = None,
        run_logger: Any = None,
    ) -> None:

        self.algo = algo
        self.algo_name = algo_name
        self.run_dir = run_dir
        self.log_interval = max(1, int(log_interval))
        self.save_interval = max(1, int(save_interval))
        self.checkpoint_freq = int(checkpoint_freq)
        self.min_episodes_save = int(min_episodes_save)
        self.plotter = plotter
        self.run_logger = run_logger if run_logger is not None else RunLogger(run_dir, plotter=plotter)
        self.monitor = MonitorTail(RunFolder(run_dir).monitor_dir)
        self.best_mean_reward = -float("inf")
        self.num_timesteps = start_timesteps
        self._next_refresh = start_timesteps + self.log_interval
        self._next_best_check = start_timesteps + self.save_interval
        self._next_checkpoint = start_timesteps + self.checkpoint_freq if self.checkpoint_freq > 0 else None
        self._last_plot = 0.0
        self.total_timesteps = int(total_timesteps)
        self.run_info = run_info
        self.buffer_save_freq = int(buffer_save_freq)
        self._last_buffer_save: int | None = None
        self.resumable = type(algo).supportsResume()
        self.clean_points = self.resumable and bool(getattr(algo, "CHECKPOINT_AT_CLEAN_POINTS", False))
        self.evaluator = evaluator
        self.stop_signal: int | None = None
        self.last_checkpoint: str | None = None
        self._progress = tqdm(total=total_timesteps, initial=start_timesteps, unit="steps", dynamic_ncols=True,
                              disable=not progress, smoothing=0.1)

    def modelPath(self, folder: str) -> str:
        """
        :param folder: where the model goes
        :return: ``folder/<algo>_model<ext>``
        """
        return os.path.join(folder, f"{self.algo_name}_model{self.algo.MODEL_EXTENSION}")

    def __call__(self, _locals: dict[str, Any], _globals: dict[str, Any]) -> bool:
        learner = _locals.get("self")
        num_timesteps = int(getattr(learner, "num_timesteps", 0))
        if num_timesteps >= self._next_refresh:
            self._next_refresh = num_timesteps + self.log_interval
            self.refresh(num_timesteps)
        if self.evaluator is not None and self.evaluator.due(num_timesteps):
            self.evaluate(num_timesteps)
        if self.stop_signal is not None:
            self.refresh(num_timesteps)
            self.checkpoint(num_timesteps, stopped_by=signal.Signals(self.stop_signal).name)
            return False
        if not self.clean_points and self._next_checkpoint is not None and num_timesteps >= self._next_checkpoint:
            self.checkpoint(num_timesteps)
        return True

    def cleanPoint(self, num_timesteps: int) -> None:
        """
        Called by the algorithm between two updates, where its saved state is exactly what training goes on from:
        write the checkpoint that fell due since the last one.

        :param num_timesteps: env steps taken so far
        """
        if self._next_checkpoint is not None and num_timesteps >= self._next_checkpoint:
            self.checkpoint(num_timesteps)

    def requestStop(self, signum: int) -> None:
        """
        Ask training to stop at the next step, after writing a checkpoint (from a signal handler: only a flag).

        :param signum: the signal received
        """
        self.stop_signal = signum

    def refresh(self, num_timesteps: int, force_plot: bool = False) -> None:
        """
        Read new episodes, move the progress bar, and save or plot when their intervals have passed.

        :param num_timesteps: env steps taken so far
        :param force_plot: send the curve whatever the time since the last one
        """
        self._progress.update(num_timesteps - self.num_timesteps)
        self.num_timesteps = num_timesteps
        new_episodes = self.monitor.poll()
        if new_episodes:
            self.run_logger.logEpisodes(self.monitor.timesteps, self.monitor.rewards, self.monitor.lengths)
        self.run_logger.dumpPending()
        if self.monitor.rewards:
            self._progress.set_postfix(episodes=len(self.monitor.rewards),
                                       mean_reward=f"{self.monitor.meanReward(N_EPISODES_EVAL):.2f}", refresh=False)
        now = time.monotonic()
        due = force_plot or now - self._last_plot >= PLOT_PERIOD_S
        if self.plotter is not None and (new_episodes or force_plot) and due:
            self._last_plot = now
            self.plotter.update(self.monitor.timesteps, self.monitor.rewards)
        if num_timesteps >= self._next_best_check:
            self._next_best_check = num_timesteps + self.save_interval
            self.saveIfBest()

    def logScalars(self, step: int, values: dict[str, float]) -> None:
        """
        Log scalars of the algorithm, a plugin or the evaluation: progress.csv, the live plots (one window per tag
        group, the tag's part before ``/``) and the tensorboard log when ``--tensorboard-log`` is on.

        :param step: env steps taken so far (the x axis)
        :param values: scalar values by tag, e.g. ``{"loss/policy": 0.3, "eval/mean_reward": 12.0}``
        """
        self.run_logger.logScalars(step, values)

    def progressLogger(self) -> Any:
        """
        :return: the run's Stable-Baselines3 ``Logger`` (progress.csv, and tensorboard when on): an algorithm built
            on SB3's logger records into it and dumps it (``model.set_logger(callback.progressLogger())``)
        """
        return self.run_logger.progressLogger()

    def saveModel(self, folder: str, num_timesteps: int | None = None, **extra: Any) -> None:
        """
        Save the model into ``folder`` with its manifest (a plain ``save`` without run information).

        :param folder: destination folder
        :param num_timesteps: the model's step count (default: the last one the callback saw)
        :param extra: more manifest entries
        """
        path = self.modelPath(folder)
        if self.run_info is None:
            self.algo.save(path)
        else:
            steps = self.num_timesteps if num_timesteps is None else num_timesteps
            saveModel(self.algo, path, self.algo_name, self.run_info, steps, **extra)

    def runState(self, num_timesteps: int, episode_starts: Any) -> dict[str, Any]:
        """
        :param num_timesteps: env steps taken so far
        :param episode_starts: each env's current episode start (training_state.captureEpisodeStarts)
        :return: what a checkpoint's run_state.json keeps to resume the run: counts, the monitor files' and
            progress.csv's lengths, the callback's own state
        """

        monitor_dir = RunFolder(self.run_dir).monitor_dir
        return {
            "num_timesteps": int(num_timesteps),
            "target_timesteps": self.total_timesteps,
            "monitor": {os.path.basename(path): os.path.getsize(path)
                        for path in sorted(glob.glob(os.path.join(monitor_dir, f"*{MONITOR_SUFFIX}")))},
            "progress_lines": countLines(RunFolder(self.run_dir).progress_file),
            "episode_starts": episode_starts,
            "callback": {"best_mean_reward": self.best_mean_reward, "next_best_check": self._next_best_check,
                         "last_buffer_save": self._last_buffer_save,
                         **({"evaluation": self.evaluator.state()} if self.evaluator is not None else {})},
            "time": time.time(),
        }

    def restoreState(self, state: dict[str, Any]) -> None:
        """
        :param state: the ``callback`` entry of a checkpoint's run_state.json (a resumed run goes on with it)
        """
        self.best_mean_reward = float(state.get("best_mean_reward", -float("inf")))
        self._next_best_check = int(state.get("next_best_check", self._next_best_check))
        self._last_buffer_save = state.get("last_buffer_save")
        if self.evaluator is not None:
            self.evaluator.restoreState(state.get("evaluation", {}))

    def checkpoint(self, num_timesteps: int, training_state: bool = True, **extra: Any) -> str | None:
        """
        Write ``checkpoints/<num_timesteps>_steps/`` and the latest model beside the run. A failed save (disk full)
        costs one warning line; the earlier checkpoints stay as they were.

        :param num_timesteps: env steps taken so far
        :param training_state: include the algorithm's training state (when it supports resuming)
        :param extra: more manifest entries (finished, stopped_by)
        :return: the checkpoint folder, None when the save failed or no run information was given
        """

        if self.checkpoint_freq > 0:
            self._next_checkpoint = num_timesteps + self.checkpoint_freq
        if self.run_info is None:
            return None
        resumable = self.resumable and training_state
        save_buffer = resumable and self.buffer_save_freq >= 0 and (
            self._last_buffer_save is None or num_timesteps - self._last_buffer_save >= self.buffer_save_freq)
        rng = captureGlobalRNG()  # before anything else of the save could draw from the generators
        episode_starts = captureEpisodeStarts(getattr(self.algo, "env", None)) if resumable else None
        previous_buffer_save = self._last_buffer_save
        if save_buffer:
            self._last_buffer_save = num_timesteps
        try:
            folder = writeCheckpoint(self.run_dir, self.algo, self.algo_name, self.run_info, num_timesteps,
                                     self.runState(num_timesteps, episode_starts), rng, resumable, save_buffer,
                                     **extra)
            self.saveModel(self.run_dir, num_timesteps, **extra)
        except (CheckpointError, OSError) as error:
            self._last_buffer_save = previous_buffer_save
            message = str(error) if isinstance(error, CheckpointError) else f"latest model not saved: {error.strerror}"
            warnings.warn(message, stacklevel=2)
            return None
        self.last_checkpoint = folder
        return folder

    def evaluate(self, num_timesteps: int) -> float:
        """
        Play the evaluation episodes, record them (evaluations.npz, live plot, a line above the progress bar) and
        save ``best/`` when their mean beats every earlier evaluation.

        :param num_timesteps: env steps taken so far
        :return: the evaluation's mean reward
        """
        mean_reward, std_reward = self.evaluator.evaluate(num_timesteps)
        tqdm.write(f"Evaluation at {num_timesteps} steps: mean reward {mean_reward:.2f} +/- {std_reward:.2f} "
                   f"({self.evaluator.n_episodes} episode{'s' if self.evaluator.n_episodes > 1 else ''})")
        # progress.csv and tensorboard under SB3's EvalCallback tags; the live plot has its own evaluation window
        self.run_logger.logScalars(num_timesteps, {"eval/mean_reward": mean_reward, "eval/std_reward": std_reward},
                                   plot=False)
        if self.plotter is not None and hasattr(self.plotter, "updateEvaluation"):
            self.plotter.updateEvaluation(*self.evaluator.means())
        if mean_reward > self.evaluator.best_mean_reward:
            self.evaluator.best_mean_reward = mean_reward
            try:
                self.saveModel(os.path.join(self.run_dir, "best"), num_timesteps, mean_reward=mean_reward,
                               selected_by="evaluation")
            except OSError as error:  # a full disk costs the best model, not the run
                warnings.warn(f"best model not saved: {error.strerror}", stacklevel=2)
        return mean_reward

    def saveIfBest(self) -> bool:
        """
        Save ``best/`` when the mean reward of the last episodes beats every earlier check (only without an
        evaluator: with one, evaluations decide ``best/``).

        :return: whether a new best model was saved
        """
        if self.evaluator is not None or len(self.monitor.rewards) < max(1, self.min_episodes_save):
            return False
        mean_reward = self.monitor.meanReward(N_EPISODES_EVAL)
        if mean_reward <= self.best_mean_reward:
            return False
        self.best_mean_reward = mean_reward
        try:
            self.saveModel(os.path.join(self.run_dir, "best"), mean_reward=mean_reward)
        except OSError as error:  # a full disk costs the best model, not the run
            warnings.warn(f"best model not saved: {error.strerror}", stacklevel=2)
            return False
        return True

    def close(self, num_timesteps: int) -> None:
        """
        Final refresh (best-model check and plot included), then close the progress bar and the monitor files.

        :param num_timesteps: env steps taken in total
        """
        self.refresh(num_timesteps, force_plot=True)
        self.saveIfBest()
        self._progress.close()
        self.monitor.close()
        if self.evaluator is not None:
            self.evaluator.close()
        self.run_logger.close()
