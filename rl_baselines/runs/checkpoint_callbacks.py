"""The train command's checkpoints as training services (SB3 callbacks, in the list of
:mod:`rl_baselines.runs.training_callbacks`): the periodic ones on a fixed schedule, and the one a stop (Ctrl-C,
SIGTERM) writes before training ends.

Invariants: a checkpoint of an algorithm that has clean points (``CHECKPOINT_AT_CLEAN_POINTS``) is written at one
whenever it can be, periodic or a stop's (within :data:`STOP_WAIT_S`), so that a run resumed from it is the run
never interrupted; the schedule is fixed (a late checkpoint never moves the later ones); a failed save costs one
warning line, never the run.
"""
from __future__ import annotations

import contextlib
import signal
import time
import warnings
from collections.abc import Callable
from typing import Any

from rl_baselines.core.checkpointing import Checkpoint, CheckpointError
from rl_baselines.runs.training_callbacks import ModelSaver, RefreshCallback, TrainingService

# A stop (Ctrl-C, SIGTERM) waits at most this many seconds of training for the algorithm's next clean point, where its
# checkpoint is exact (StopSignalCallback), counted from the first env step after the signal (an evaluation or a save
# in progress at the signal ends first); the pipeline gives a run it stops
# rl_baselines.sweeps.run_attempts.STOP_GRACE_S.
STOP_WAIT_S = 10.0


class CheckpointCallback(TrainingService):
    """
    Checkpoints (rl_baselines.core.checkpointing) on a fixed schedule: the k-th falls due at ``start_timesteps`` +
    k x ``checkpoint_freq`` env steps, and is written at the first step at or after it, or, for an algorithm whose
    ``CHECKPOINT_AT_CLEAN_POINTS`` is set, at its first clean point at or after it (SB3's rollout start, or
    ``notifyCleanPoint``: between two updates, where the saved state is exactly what training goes on from). The wait
    for a clean point never moves the later ones; a clean point past several due steps writes one checkpoint. The
    next due step is in the checkpoint's state, so a resumed run writes its checkpoints where the uninterrupted run
    does (a checkpoint written before it was recorded schedules from its own step). The replay buffer goes into a
    checkpoint every ``buffer_save_freq`` env steps; the latest model is saved beside the run with each checkpoint.

    :param saver: saves the model (its run folder and manifest information)
    :param checkpoint_freq: env steps between periodic checkpoints (0: none)
    :param buffer_save_freq: env steps between replay-buffer saves, at checkpoints (0: at every one, -1: never)
    :param total_timesteps: the step count at which the run ends (recorded for ``--resume``)
    :param start_timesteps: the step count training starts from
    """

    def __init__(self, saver: ModelSaver, checkpoint_freq: int, buffer_save_freq: int, total_timesteps: int,
                 start_timesteps: int = 0) -> None:
        super().__init__()
        self.saver = saver
        self.checkpoint_freq = int(checkpoint_freq)
        self.buffer_save_freq = int(buffer_save_freq)
        self.total_timesteps = int(total_timesteps)
        self.next_checkpoint = int(start_timesteps) + self.checkpoint_freq if self.checkpoint_freq > 0 else None
        algo_class = type(saver.algo)
        self.resumable = algo_class.supportsResume()
        self.clean_points = self.resumable and bool(getattr(algo_class, "CHECKPOINT_AT_CLEAN_POINTS", False))
        self.buffer_saved_at: int | None = None
        self.last_checkpoint: str | None = None
        self.last_checkpoint_steps: int | None = None  # its step count
        # What run_state.json's "callback" entry records: every callback's state (set by the list it is in).
        self.callbacks_state: Callable[[], dict[str, Any]] = self.state
        # Run before each checkpoint (set by the list: the scalar log's ScalarLogCallback.beforeCheckpoint).
        self.before_save: Callable[[], None] | None = None

    def _due(self) -> bool:
        return self.next_checkpoint is not None and self.num_timesteps >= self.next_checkpoint

    def _on_step(self) -> bool:
        if not self.clean_points and self._due():
            self.save(self.num_timesteps)
        return True

    def _on_rollout_start(self) -> None:
        if self._due():
            self.save(self.num_timesteps)

    def save(self, num_timesteps: int, training_state: bool = True, **extra: Any) -> str | None:
        """
        Write ``checkpoints/<num_timesteps>_steps/`` and the latest model beside the run, after ``before_save`` (the
        run's log up to this step logged and on disk). A failed save (disk full) costs one warning line; the earlier
        checkpoints stay as they were.

        :param num_timesteps: env steps taken so far
        :param training_state: include the algorithm's training state (when it supports resuming)
        :param extra: more manifest entries (finished, stopped_by)
        :return: the checkpoint folder, None when the save failed or the saver has no run information
        """
        if self.next_checkpoint is not None and num_timesteps >= self.next_checkpoint:
            # the first due step after this one, on the schedule: a late save does not delay the next ones
            self.next_checkpoint += ((num_timesteps - self.next_checkpoint) // self.checkpoint_freq + 1) * \
                self.checkpoint_freq
        saver = self.saver
        if saver.run_info is None:
            return None
        saver.checkRunFolder()  # (FolderVanished stops the run: not a warning)
        if self.before_save is not None:
            self.before_save()
        resumable = self.resumable and training_state
        save_buffer = resumable and self.buffer_save_freq >= 0 and (
            self.buffer_saved_at is None or num_timesteps - self.buffer_saved_at >= self.buffer_save_freq)
        previous_buffer_save = self.buffer_saved_at
        if save_buffer:
            self.buffer_saved_at = num_timesteps  # before the callbacks' state is read into run_state.json
        try:
            with self.busy("saving checkpoint"):
                folder = Checkpoint.capture(saver.run_dir, saver.algo, saver.algo_name, saver.run_info,
                                            num_timesteps, self.total_timesteps, self.callbacks_state, resumable,
                                            save_buffer, **extra).folder
                saver.save(saver.run_dir, num_timesteps, **extra)
        except (CheckpointError, OSError) as error:
            self.buffer_saved_at = previous_buffer_save
            message = str(error) if isinstance(error, CheckpointError) else f"latest model not saved: {error.strerror}"
            warnings.warn(message, stacklevel=3)
            return None
        self.last_checkpoint, self.last_checkpoint_steps = folder, num_timesteps
        return folder

    def state(self) -> dict[str, Any]:
        return {"last_buffer_save": self.buffer_saved_at, "next_checkpoint": self.next_checkpoint}

    def restoreState(self, state: dict[str, Any]) -> None:
        self.buffer_saved_at = state.get("last_buffer_save")
        # (an older checkpoint has no next_checkpoint: the schedule goes on from its step, start_timesteps)
        if self.next_checkpoint is not None and state.get("next_checkpoint") is not None:
            self.next_checkpoint = int(state["next_checkpoint"])


class StopSignalCallback(TrainingService):
    """
    After :meth:`requestStop` (SIGINT/SIGTERM, through rl_baselines.runs.resume.installStopHandlers): a checkpoint
    whose manifest says ``stopped_by``, then training stops.

    - An algorithm that checkpoints at clean points (``CHECKPOINT_AT_CLEAN_POINTS``) goes on to its next one after a
      step of this process (the end of the update in progress: SB3's next rollout start, or ``notifyCleanPoint``) and
      writes the checkpoint there, as a periodic one: a run resumed from it is the run never stopped. Training stops
      at the step after.
    - Where no clean point comes within ``wait_s`` seconds (a long rollout or generation), and for the other
      algorithms, the next step refreshes the progress and the log, writes the checkpoint and stops: the resumed run
      is a valid continuation, its rollout started at the stop. The seconds count from the first step after the
      signal, so what was in progress when it came (an evaluation's episodes, a checkpoint's save, an env step) ends
      first and does not use up the wait.
    - The progress bar says that the run is stopping from the first step after the signal, or sooner where work that
      counts no step calls :meth:`acknowledge` as it goes (an evaluation does, after each of its steps).

    :param refresh: refreshed before a checkpoint written between clean points, or None
    :param checkpoints: writes the checkpoint
    :param wait_s: the longest wait for a clean point, in seconds (:data:`STOP_WAIT_S`)
    """

    def __init__(self, refresh: RefreshCallback | None, checkpoints: CheckpointCallback,
                 wait_s: float | None = None) -> None:
        super().__init__()
        self.refresh = refresh
        self.checkpoints = checkpoints
        self.wait_s = STOP_WAIT_S if wait_s is None else float(wait_s)
        self.stop_signal: int | None = None
        self.waiting_since: float | None = None  # the first step after the signal (time.monotonic)
        self.saved = False
        self._status: contextlib.ExitStack | None = None  # the progress bar saying that the run is stopping

    def requestStop(self, signum: int) -> None:
        """
        Ask training to stop (from a signal handler: only flags).

        :param signum: the signal received
        """
        self.stop_signal = signum

    def _save(self) -> None:
        self.saved = True
        self.finish()
        self.checkpoints.save(self.num_timesteps, stopped_by=signal.Signals(self.stop_signal).name)

    def _on_rollout_start(self) -> None:
        # (not the rollout start before the first step: the state the run started from, step 0 or its checkpoint's)
        if self.stop_signal is not None and not self.saved and self.checkpoints.clean_points and self.n_calls > 0:
            self._save()  # (the list's checkpoints come after: one due at this step is this one)

    def acknowledge(self) -> None:
        """Once a stop was asked, have the progress bar say so (once: from then on until the run ends); nothing
        before. Safe to call at any time outside a signal handler, which must not draw."""
        if self.stop_signal is None or self.saved or self._status is not None:
            return
        self._status = contextlib.ExitStack()
        self._status.enter_context(self.busy(
            "stopping at the end of this update" if self.checkpoints.clean_points else "stopping at the next step"))

    def _on_step(self) -> bool:
        if self.stop_signal is None:
            return True
        if self.saved:
            return False
        if self.waiting_since is None:
            self.waiting_since = time.monotonic()
        if self.checkpoints.clean_points and time.monotonic() - self.waiting_since < self.wait_s:
            self.acknowledge()
            return True
        if self.refresh is not None:
            self.refresh.refreshAt(self.num_timesteps)
        self._save()
        return False

    def finish(self) -> None:
        if self._status is not None:
            self._status.close()
