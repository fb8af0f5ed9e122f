"""The callback the train command hands to every algorithm: progress bar, model saves and the live reward curve.

It follows the old toolbox's form, ``callback(_locals, _globals) -> bool``, called after each vectorised step with
the learner as ``_locals["self"]``. Work happens only every ``log_interval`` env steps, so the per-step cost is one
attribute read and one comparison.
"""
from __future__ import annotations

import os
import time
from typing import Any

from tqdm import tqdm

from rl_baselines.base_classes import BaseRLObject
from rl_baselines.monitor_files import MonitorTail

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
    ) -> None:
        self.algo = algo
        self.algo_name = algo_name
        self.run_dir = run_dir
        self.log_interval = max(1, int(log_interval))
        self.save_interval = max(1, int(save_interval))
        self.checkpoint_freq = int(checkpoint_freq)
        self.min_episodes_save = int(min_episodes_save)
        self.plotter = plotter
        self.monitor = MonitorTail(os.path.join(run_dir, "monitor"))
        self.best_mean_reward = -float("inf")
        self.num_timesteps = start_timesteps
        self._next_refresh = start_timesteps + self.log_interval
        self._next_best_check = start_timesteps + self.save_interval
        self._next_checkpoint = start_timesteps + self.checkpoint_freq if self.checkpoint_freq > 0 else None
        self._last_plot = 0.0
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
        return True

    def refresh(self, num_timesteps: int, force_plot: bool = False) -> None:
        """
        Read new episodes, move the progress bar, and save or plot when their intervals have passed.

        :param num_timesteps: env steps taken so far
        :param force_plot: send the curve whatever the time since the last one
        """
        self._progress.update(num_timesteps - self.num_timesteps)
        self.num_timesteps = num_timesteps
        new_episodes = self.monitor.poll()
        if self.monitor.rewards:
            self._progress.set_postfix(episodes=len(self.monitor.rewards),
                                       mean_reward=f"{self.monitor.meanReward(N_EPISODES_EVAL):.2f}", refresh=False)
        now = time.monotonic()
        if self.plotter is not None and (new_episodes or force_plot) and (force_plot or now - self._last_plot >= PLOT_PERIOD_S):
            self._last_plot = now
            self.plotter.update(self.monitor.timesteps, self.monitor.rewards)
        if num_timesteps >= self._next_best_check:
            self._next_best_check = num_timesteps + self.save_interval
            self.saveIfBest()
        if self._next_checkpoint is not None and num_timesteps >= self._next_checkpoint:
            self._next_checkpoint = num_timesteps + self.checkpoint_freq
            self.algo.save(self.modelPath(os.path.join(self.run_dir, "checkpoints", f"{num_timesteps}_steps")))
            self.algo.save(self.modelPath(self.run_dir))

    def saveIfBest(self) -> bool:
        """
        Save ``best/`` when the mean reward of the last episodes beats every earlier check.

        :return: whether a new best model was saved
        """
        if len(self.monitor.rewards) < max(1, self.min_episodes_save):
            return False
        mean_reward = self.monitor.meanReward(N_EPISODES_EVAL)
        if mean_reward <= self.best_mean_reward:
            return False
        self.best_mean_reward = mean_reward
        self.algo.save(self.modelPath(os.path.join(self.run_dir, "best")))
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
