"""One run's scalar log: progress.csv, the live visdom plots and, with ``--tensorboard-log``, a tensorboard log.

A :class:`RunLogger` belongs to the training callback and is shared by everything that logs during the run:

- the algorithm's own statistics: Stable-Baselines3's logger (``train/*``, ``time/*``, ``rollout/*``) and the
  torch algorithms' ``logStats`` go through :meth:`RunLogger.progressLogger`, one SB3 ``Logger`` that writes
  progress.csv and, when tensorboard is on, the same values into the run's tensorboard writer;
- any scalar an algorithm, a plugin or the evaluation wants to show: :meth:`RunLogger.logScalars` (what
  ``callback.logScalars(step, {...})`` calls), into progress.csv, the tensorboard log and one small visdom window per
  tag group (the tag's part before ``/``); a progress.csv row of such scalars holds one step's, and none of the values
  the algorithm recorded for its own next row;
- finished episodes (read from the monitor files by the callback): :meth:`RunLogger.logEpisodes` writes each one's
  reward and length (``episode/reward``, ``episode/length``) against env steps;
- the means of the last 100 episodes (``rollout/ep_rew_mean``, ``rollout/ep_len_mean``) reach tensorboard with every
  training row of progress.csv, at its step, as SB3 writes them at each log dump: an SB3 algorithm's own values, the
  monitor's episodes for the algorithms written here (a row per dump, so one point per step and the same points as
  progress.csv). An algorithm that writes no training rows (``TRAINING_ROWS = False``: random_agent) gets them at
  each refresh instead, at the step of the last new episode.

There is one ``SummaryWriter`` per run, in ``<--tensorboard-log>/<env>_<srl-model>_<algo>_<run folder name>/``, or
``<that name>_2``, ``_3``, ... where another run's folder holds that name: a new run claims its folder
(:func:`claimTensorboardFolder`) and args.json records its name (:data:`TENSORBOARD_RUN_KEY`; a run recorded without
it uses the first name). A resumed or restarted run writes into the folder its args.json names, a resumed one with
``purge_step`` one past its checkpoint's step N: tensorboard keeps what the stopped process wrote up to step N (all
that is logged at step N, an SB3 log dump's row included, comes before the checkpoint taken at N) and hides what it
wrote at later steps, which the resumed run writes again from N + 1 on (an episode that ended by step N stays the
stopped process's), so each step has one point. For that to hold after a kill, each checkpoint is preceded by
:meth:`RunLogger.flush` (the callback first logs the episodes that ended since its last refresh and writes the pending
row): everything logged up to its step is on disk when it is written, not in the writer's buffer or a row to come.
A checkpoint keeps the values recorded for the next progress.csv row (:meth:`RunLogger.pendingState`, the running
means of an algorithm's statistics included), which a run resumed from it puts back, so that its rows are the
uninterrupted run's. Visdom points are sent at most once per second (a dead server costs one warning).
"""
from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common.logger import TensorBoardOutputFormat

from rl_baselines.core.run_folder import RunFolder
from rl_baselines.core.training_state import (
    pendingLogValues,
    progressLogger,
    restorePendingLogValues,
    silentLogger,
)
from srl_toolbox.cli import UsageError, checkWritableFolder
from srl_toolbox.files import nameFileOnError

# Episodes averaged by rollout/ep_rew_mean and rollout/ep_len_mean (as Stable-Baselines3's ep_info_buffer).
MEAN_EPISODES = 100
# The episode-mean keys of a progress.csv row (SB3's and the rows RunLogger completes).
EPISODE_KEYS_PREFIX = "rollout/ep_"
# At most one batch of visdom scalar points per this many seconds.
VISDOM_PERIOD_S = 1.0


def checkTensorboard(folder: str) -> None:
    """
    Check ``--tensorboard-log`` before anything is written.

    :param folder: the tensorboard root folder
    :raises UsageError: the tensorboard package is missing, or the folder cannot be written (one line)
    """
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401
    except ImportError:
        raise UsageError(f"--tensorboard-log {folder!r} needs the tensorboard package: pip install tensorboard "
                         f"(or pip install 'srl-toolbox[tensorboard]')") from None
    checkWritableFolder(folder, "--tensorboard-log")


# Keys of args.json naming where a run's logs go, chosen once for the run: its tensorboard sub-folder under
# --tensorboard-log (written when the run is created; absent without --tensorboard-log), and its visdom environment
# (None until the run's plotter first reaches a server and picks it, then that name; absent in a run recorded before
# these keys: its resumes draw into tensorboardRunName's name).
TENSORBOARD_RUN_KEY = "tensorboard_run"
VISDOM_ENV_KEY = "visdom_env"
# Names a new run tries for a tensorboard folder of its own: the run's name, then <name>_2, ...
TENSORBOARD_FOLDER_ATTEMPTS = 1000


def claimTensorboardFolder(root: str, name: str) -> str:
    """
    Make a new run's tensorboard folder, one no other run writes into.

    :param root: the ``--tensorboard-log`` folder
    :param name: the run's name (:func:`tensorboardRunName`)
    :return: the sub-folder made, ``name`` or, where a folder of that name exists (another run's), the first free
        of ``<name>_2``, ``<name>_3``, ...
    :raises OSError: no free name, or the folder cannot be made
    """
    os.makedirs(root, exist_ok=True)
    for attempt in range(1, TENSORBOARD_FOLDER_ATTEMPTS + 1):
        chosen = name if attempt == 1 else f"{name}_{attempt}"
        try:
            os.mkdir(os.path.join(root, chosen))
            return chosen
        except FileExistsError:
            continue
    raise FileExistsError(f"no free tensorboard folder for {name} in {root}")


def tensorboardRunName(env: str, srl_model: str, algo: str, run_dir: str) -> str:
    """
    :param env: the env id
    :param srl_model: the observation
    :param algo: the algorithm
    :param run_dir: the run folder
    :return: the run's name: its sub-folder under ``--tensorboard-log`` and its visdom environment, but for
        another run's of the same name (:func:`claimTensorboardFolder`, ``VisdomPlotter``'s ``own_env``)
    """
    return f"{env}_{srl_model}_{algo}_{os.path.basename(os.path.normpath(run_dir))}"


def _sharedTensorboardFormat(writer: Any, episode_means: bool) -> Any:
    """:return: an SB3 KVWriter writing into ``writer`` (owned by the RunLogger), the episode means only when
    ``episode_means`` (else RunLogger.logEpisodes writes them)"""

    class _SharedTensorBoardFormat(TensorBoardOutputFormat):
        def __init__(self) -> None:  # no writer of its own: the run's
            self.writer = writer
            self._is_closed = False

        def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
            kept = [key for key in key_values if episode_means or not key.startswith(EPISODE_KEYS_PREFIX)]
            super().write({key: key_values[key] for key in kept}, {key: key_excluded.get(key) for key in kept}, step)

        def close(self) -> None:
            self.writer.flush()  # the RunLogger closes the writer

    return _SharedTensorBoardFormat()


class RunLogger:
    """
    :param run_dir: the run folder (progress.csv), None for no file
    :param tensorboard_dir: this run's tensorboard folder, None without tensorboard
    :param plotter: the run's VisdomPlotter, None without live plots
    :param purge_step: a resumed run's step count (its checkpoint's): tensorboard keeps the events the earlier
        process wrote up to this step and hides those after it, which this one writes again
    :param training_rows: whether the algorithm writes training rows (its ``TRAINING_ROWS``): tensorboard's episode
        means come with them; False: with each refresh (logEpisodes)
    """

    def __init__(self, run_dir: str | None, tensorboard_dir: str | None = None, plotter: Any = None,
                 purge_step: int | None = None, training_rows: bool = True) -> None:
        self.run_dir = run_dir
        self.training_rows = training_rows
        self.tensorboard_dir = tensorboard_dir
        self.plotter = plotter
        self.writer: Any = None
        if tensorboard_dir is not None:
            from torch.utils.tensorboard import SummaryWriter  # optional dependency: tensorboard (--tensorboard-log)

            # the checkpoint's own step is the earlier process's (what was logged at it came before the checkpoint)
            self.writer = SummaryWriter(log_dir=tensorboard_dir, purge_step=int(purge_step) + 1 if purge_step else None)
        self._purge_step = int(purge_step or 0)
        self._progress: Any = None
        self._pending: set[str] = set()
        self._pending_step = 0
        self._episodes_logged = 0
        self._episode_means: dict[str, float] = {}  # rollout/ep_rew_mean, rollout/ep_len_mean as of the last refresh
        # Reads the episodes ended since the last refresh into :meth:`logEpisodes` (the training callbacks set it), so
        # that a training row's episode means hold every episode on disk by its step, whatever the refresh interval.
        self.read_episodes: Callable[[], None] | None = None
        # the episodes read at the last refresh: (the run's step count at each one's end, rewards, lengths)
        self._episodes: tuple[np.ndarray, list[float], list[int]] = (np.zeros(0), [], [])
        self._visdom_points: dict[str, list[tuple[float, float]]] = defaultdict(list)
        self._visdom_sent_at = 0.0
        self._clock_start = (self._purge_step, time.monotonic())  # (env steps, time) this process started from

    def progressLogger(self) -> Any:
        """
        :return: the run's Stable-Baselines3 ``Logger`` (progress.csv, a resumed run's continued, plus the
            tensorboard log when on); algorithms record into it and dump it themselves
        """
        if self._progress is None:
            if self.run_dir is not None:
                self._progress = progressLogger(self.run_dir)
            else:
                self._progress = silentLogger()
            if self.writer is not None:
                self._progress.output_formats.append(_sharedTensorboardFormat(self.writer, self.training_rows))
            self._progress.dump = self._dumpWithEpisodes(self._progress.dump)
        return self._progress

    def _dumpWithEpisodes(self, dump: Any) -> Any:
        """:return: the logger's ``dump``, adding to a training row what SB3's own rows have and the rows of the
        algorithms written here lack: ``rollout/ep_rew_mean`` and ``rollout/ep_len_mean`` (the last 100 of the
        monitor's episodes that ended by the row's step: a row written later, e.g. a generation's pending row, still
        describes its own step), ``time/time_elapsed`` and ``time/fps`` (seconds and env steps per second since this
        process started the run, or resumed it)"""

        def dumpWithEpisodes(step: int = 0) -> None:
            names = self._progress.name_to_value
            if any(name.startswith("train/") for name in names):
                if not any(name.startswith(EPISODE_KEYS_PREFIX) for name in names):
                    if self.read_episodes is not None:
                        self.read_episodes()
                    for tag, value in self._episodeMeansAt(step).items():
                        self._progress.record(tag, value)  # and to tensorboard with the row (if training_rows)
                start_step, start_time = self._clock_start
                elapsed = max(time.monotonic() - start_time, 1e-9)
                if "time/time_elapsed" not in names:
                    self._progress.record("time/time_elapsed", int(elapsed), exclude="tensorboard")
                if "time/fps" not in names:
                    self._progress.record("time/fps", int(max(step - start_step, 0) / elapsed))
            try:
                dump(step)
            except Exception as error:  # a full disk: the one-line error names progress.csv (the OS error does not)
                if self.run_dir is not None:
                    nameFileOnError(error, RunFolder(self.run_dir).progress_file)
                raise

        return dumpWithEpisodes

    def logScalars(self, step: int, values: dict[str, float], plot: bool = True) -> None:
        """
        Log scalars at an env step count: tensorboard now; progress.csv with the next row (the algorithm's next
        dump, the callback's next refresh, or before one of these tags is logged again, so no value is lost);
        visdom within a second.

        :param step: env steps taken so far (the x axis)
        :param values: scalar values by tag, e.g. ``{"loss/policy": 0.3, "eval/mean_reward": 12.0}``
        :param plot: also draw them in a live visdom window of their own (False for values with a window already)
        """
        step = int(step)
        values = {str(tag): float(value) for tag, value in values.items()}
        if self.writer is not None:
            for tag, value in values.items():
                self.writer.add_scalar(tag, value, step)
        if self.run_dir is not None:
            progress = self.progressLogger()
            if self._pending and (self._pending & set(values) or step != self._pending_step):
                self.dumpPending(self._pending_step)  # logged again, or at another step: the earlier values' row first
            self._pending_step = step
            for tag, value in values.items():
                progress.record(tag, value, exclude="tensorboard")  # tensorboard has it already
                self._pending.add(tag)
        if plot and self.plotter is not None and hasattr(self.plotter, "scalars"):
            for tag, value in values.items():
                self._visdom_points[tag].append((step, value))
            self.flushPlots()

    def flushPlots(self, force: bool = False) -> None:
        """
        Send the buffered scalar points to visdom (at most once per VISDOM_PERIOD_S unless forced).

        :param force: send whatever the time since the last batch
        """
        now = time.monotonic()
        if not self._visdom_points or (not force and now - self._visdom_sent_at < VISDOM_PERIOD_S):
            return
        self._visdom_sent_at = now
        points, self._visdom_points = dict(self._visdom_points), defaultdict(list)
        self.plotter.scalars(points)

    def dumpPending(self, step: int | None = None) -> None:
        """
        Write a progress.csv row for scalars logged since the last row when the algorithm did not write one.

        :param step: the row's step count (None: that of the last logScalars)
        """
        if self._progress is None or not self._pending:
            return
        progress = self._progress
        if self._pending & set(progress.name_to_value):
            step = self._pending_step if step is None else int(step)
            # what the algorithm recorded for its own next row (SB3's train/* values, the running means of logStats,
            # gail's discriminator values) stays for that row: this one holds only the scalars logged for it
            aside = {name: (progress.name_to_value.pop(name), progress.name_to_count.pop(name, None),
                            progress.name_to_excluded.pop(name, None))
                     for name in list(progress.name_to_value) if name not in self._pending}
            progress.record("time/total_timesteps", step, exclude="tensorboard")
            progress.dump(step)
            for name, (value, count, excluded) in aside.items():
                progress.name_to_value[name] = value
                if count is not None:
                    progress.name_to_count[name] = count
                if excluded is not None:
                    progress.name_to_excluded[name] = excluded
        self._pending.clear()

    def startClock(self, step: int) -> None:
        """:param step: env steps taken when training starts (a resumed run's checkpoint step): the rows' own
            ``time/time_elapsed`` and ``time/fps`` count from here, as SB3's count from the start of ``learn``"""
        self._clock_start = (int(step), time.monotonic())

    def _episodeMeansAt(self, step: int) -> dict[str, float]:
        """:return: ``rollout/ep_rew_mean`` and ``rollout/ep_len_mean`` of the last 100 episodes read that ended by
        env step ``step`` (none when no episode had)"""
        ends, rewards, lengths = self._episodes
        ended = np.flatnonzero(np.asarray(ends) <= step)[-MEAN_EPISODES:]
        if not len(ended):
            return {}
        return {"rollout/ep_rew_mean": float(np.mean(np.asarray(rewards)[ended])),
                "rollout/ep_len_mean": float(np.mean(np.asarray(lengths)[ended]))}

    def logEpisodes(self, timesteps: np.ndarray, rewards: list[float], lengths: list[int]) -> None:
        """
        Write the episodes not yet logged to tensorboard (a resumed run: those ending after its checkpoint), and the
        means of the last 100 at the last one's step when the algorithm writes no training rows.

        :param timesteps: the run's step count (all envs together) at the end of each episode so far
        :param rewards: every episode's reward so far
        :param lengths: every episode's length so far
        """
        self._episodes = (np.asarray(timesteps), rewards, lengths)
        if len(rewards):
            self._episode_means = {"rollout/ep_rew_mean": float(np.mean(rewards[-MEAN_EPISODES:])),
                                   "rollout/ep_len_mean": float(np.mean(lengths[-MEAN_EPISODES:]))}
        if self.writer is None:
            return
        new = range(self._episodes_logged, len(rewards))
        self._episodes_logged = len(rewards)
        written = False
        for index in new:
            step = int(timesteps[index])
            if step <= self._purge_step:
                continue  # ended by the checkpoint: the process that wrote the checkpoint logs it
            self.writer.add_scalar("episode/reward", float(rewards[index]), step)
            self.writer.add_scalar("episode/length", float(lengths[index]), step)
            written = True
        if written and not self.training_rows:
            step = int(timesteps[len(rewards) - 1])
            for tag, value in self._episode_means.items():
                self.writer.add_scalar(tag, value, step)

    def pendingState(self) -> dict[str, Any]:
        """:return: what a checkpoint keeps of the next progress.csv row: the values recorded for it, the running
        means of an algorithm's statistics (``record_mean``) included (core.training_state.pendingLogValues)"""
        return {} if self._progress is None else pendingLogValues(self._progress)

    def restorePendingState(self, pending: dict[str, Any]) -> None:
        """:param pending: :meth:`pendingState` of the checkpoint a resumed run goes on from: its next row is the
            uninterrupted run's (its running means go on over the updates made before the checkpoint)"""
        if pending:
            restorePendingLogValues(self.progressLogger(), pending)

    def flush(self) -> None:
        """Put what was logged so far on disk: the tensorboard writer's buffered events (progress.csv's rows are
        flushed as each is written; the values of the row not yet written stay pending)."""
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        """Write what is pending and close the files (the algorithm may no longer log after this)."""
        self.dumpPending()
        if self.plotter is not None and hasattr(self.plotter, "scalars"):
            self.flushPlots(force=True)
        if self._progress is not None:
            self._progress.close()
            self._progress = None
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def logScalars(callback: Any, step: int, values: dict[str, float]) -> None:
    """
    Log scalars through the training callback an algorithm received (nothing for a plain function callback).

    :param callback: the callback ``train`` received
    :param step: env steps taken so far
    :param values: scalar values by tag
    """
    log = getattr(callback, "logScalars", None)
    if log is not None:
        log(int(step), values)


def sharedProgressLogger(callback: Any, run_dir: str | None) -> tuple[Any, bool]:
    """
    :param callback: the callback ``train`` received
    :param run_dir: the run folder (``args.run_dir``), None when training from Python without one
    :return: (the SB3 logger an algorithm records into, whether the algorithm owns it and must close it): the
        callback's shared one when it offers one, else a progress.csv logger of the run folder (or a silent one)
    """
    shared = getattr(callback, "progressLogger", None)
    logger = shared() if shared is not None else None
    if logger is not None:
        return logger, False
    return RunLogger(run_dir).progressLogger(), True
