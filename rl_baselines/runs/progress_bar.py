"""The train command's progress bar: :class:`ProgressCallback`, the training service (an SB3 callback) that shows
the steps, the rate, the ETA, the episodes and the mean reward of the last episodes in a tqdm bar on stderr
(:class:`TrainingBar`).

The bar moves with every step (at each refresh of its :class:`RefreshCallback` and at the steps between two) and is
redrawn at most once per ``REDRAW_PERIOD_S``, and at once when the run starts doing something that counts no step:
``updating`` after a rollout of an SB3-backed algorithm that took ``REDRAW_PERIOD_S`` or more (from SB3's rollout end
to the next rollout start), ``evaluating``, ``saving checkpoint`` and, once a stop was asked, ``stopping at the end
of this update`` (a service's :meth:`TrainingService.busy`; several at once are shown side by side, each until its
own end). Its rate is the steps per second since training started, updates, evaluations and saves included, so
that every redraw's rate and ETA agree with its elapsed time. Its total is the step the learner stops at
(:func:`lastStep`: the budget rounded up to whole rollouts of all its envs, an SB3 learner's or one written here),
so that the ETA covers the last rollout: the bar is first drawn when training starts, once the envs and the learner
are built and that total is known. A learner with a warm-up (``learning_starts``: an off-policy algorithm's
random-action steps, far faster than the training after them) shows ``warm-up: learning starts at step N`` and no
ETA until that step, and its rate then counts from that step.

Invariants: the bar reads the learner's ``learning_starts``, envs and rollout length and the clock only, never a
random generator, so a run trains the same with or without it; a disabled bar (``--no-progress``) prints nothing; it
starts no thread of its own.
"""
from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Iterator
from typing import Any

from tqdm import tqdm

from rl_baselines.core.base import lastStep
from rl_baselines.runs.training_callbacks import N_EPISODES_EVAL, EpisodeFeed, TrainingService
from srl_toolbox.progress import REDRAW_PERIOD_S

# The bar is redrawn at most once per REDRAW_PERIOD_S as steps are counted (as the episode bars); a rollout at least
# this long shows "updating" at its end (the updates after a rollout of a few steps, SAC's, are too short to say so).
UPDATING = "updating"


class TrainingBar(tqdm):
    """
    A tqdm bar whose rate counts from a given time and step (:meth:`countRateFrom`: the start of training, or of
    learning after a warm-up) rather than tqdm's moving average, computed at each redraw (a redraw after a pause shows
    the rate and ETA of its elapsed time), and that leaves out the ETA while :attr:`eta` is False.
    """

    NO_ETA_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, {rate_fmt}{postfix}]"
    # (time, step) the rate counts from; None (while tqdm's constructor draws the bar): tqdm's rate
    rate_origin: tuple[float, float] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.countRateFrom(self.n)

    def now(self) -> float:
        """:return: the bar's clock (tqdm's: ``time.time``), in seconds"""
        return self._time()

    def startClock(self) -> None:
        """Time training from now: elapsed time and rate (the bar was made while the envs and model were built)."""
        if not self.disable:
            self.start_t = self.last_print_t = self.now()
            self.countRateFrom(self.n)

    def countRateFrom(self, step: float) -> None:
        """:param step: the step count the rate counts from, from now on"""
        if not self.disable:
            self.rate_origin = (self.now(), step)

    @property
    def eta(self) -> bool:
        """Whether the bar shows the ETA (tqdm's default format)."""
        return self.bar_format is None

    @eta.setter
    def eta(self, shown: bool) -> None:
        self.bar_format = None if shown else self.NO_ETA_FORMAT

    @property
    def format_dict(self) -> dict[str, Any]:
        values = super().format_dict
        if self.rate_origin is not None:  # (also in the last line: tqdm disables a bar it closes, then draws it)
            since, step = self.rate_origin
            elapsed = self.now() - since
            # (0, not None: tqdm would fall back on its own average; 0 shows "?" for the rate and the ETA)
            values["rate"] = (self.n - step) / elapsed if elapsed > 0 and self.n > step else 0
        return values


class ProgressCallback(TrainingService):
    """
    The progress bar: steps, rate, ETA, the episode count and the mean reward of the last N_EPISODES_EVAL episodes,
    and what the run is doing while it counts no step (see the module's description).

    :param feed: the episodes read so far
    :param total_timesteps: the step count at which training ends
    :param start_timesteps: the step count training starts from
    :param enabled: False hides the bar (``--no-progress``)
    """

    def __init__(self, feed: EpisodeFeed, total_timesteps: int, start_timesteps: int, enabled: bool = True) -> None:
        super().__init__()
        self.feed = feed
        self.shown_timesteps = int(start_timesteps)
        # (miniters=1: a time check at every step, so a slower phase is redrawn as often as a faster one; delay: not
        # drawn before training starts, when the learner's last step, the bar's total, is known)
        self.bar = TrainingBar(total=total_timesteps, initial=start_timesteps, unit="steps", dynamic_ncols=True,
                               disable=not enabled, smoothing=0, mininterval=REDRAW_PERIOD_S, miniters=1,
                               delay=math.inf)
        self.activity: str | None = None  # UPDATING, from the end of a long rollout to the next rollout's start
        # what the services' contexts say (showing), in the order they began; each ends on its own, in any order (a
        # stop acknowledged during an evaluation outlasts it)
        self.statuses: list[tuple[object, str]] = []
        self.learning_starts: int | None = None  # the step at which the warm-up in progress ends
        self.episodes = ""  # the episode count and mean reward, as shown
        self.rollout_started_at = 0.0

    def _on_training_start(self) -> None:
        # the bar times training only (its rate, elapsed time and ETA are the training's, as SB3's time/fps and
        # ProgressBarCallback's), and is drawn from here on, with its final total
        if self.bar.disable:
            return
        self.bar.delay = 0
        self.bar.startClock()
        self.rollout_started_at = self.bar.start_t
        model = getattr(self, "model", None)
        total = self.bar.total
        if total is not None:  # (counted from the run's start: an algorithm written here starts its callbacks after
            # its first step)
            self.bar.total = total = lastStep(model, self.shown_timesteps, total)
        learning_starts = getattr(model, "learning_starts", None)
        if isinstance(learning_starts, numbers.Integral) and self.num_timesteps < learning_starts and (
                total is None or learning_starts < total):  # (a run that never learns is timed as it goes)
            self.learning_starts = int(learning_starts)
            self.bar.eta = False
            self._setPostfix()
        self.bar.refresh()

    def _on_step(self) -> bool:
        self.between(self.num_timesteps)
        monitor = self.feed.monitor
        if monitor.rewards:
            self.episodes = f"episodes={len(monitor.rewards)}, mean_reward={monitor.meanReward(N_EPISODES_EVAL):.2f}"
            self._setPostfix()
        return True

    def between(self, num_timesteps: int) -> None:
        bar = self.bar
        if bar.disable:
            return
        if bar.total is not None and num_timesteps > bar.total:
            bar.total = num_timesteps  # a last rollout past the budget: the bar ends full, not totalless
        if self.learning_starts is not None and num_timesteps >= self.learning_starts:
            self.learning_starts = None  # the warm-up is over: the rate counts from here, the ETA follows it
            bar.countRateFrom(num_timesteps)
            bar.eta = True
            self._setPostfix()
        bar.update(num_timesteps - self.shown_timesteps)  # (tqdm redraws it once REDRAW_PERIOD_S passed)
        self.shown_timesteps = num_timesteps

    def _on_rollout_start(self) -> None:
        if self.bar.disable:
            return
        self.rollout_started_at = self.bar.now()
        if self.activity == UPDATING:
            self.activity = None
            self._setPostfix()  # (drawn with the next steps)

    def _on_rollout_end(self) -> None:
        if not self.bar.disable and self.bar.now() - self.rollout_started_at >= REDRAW_PERIOD_S:
            self._show(UPDATING)

    @contextlib.contextmanager
    def showing(self, activity: str) -> Iterator[None]:
        """
        Say what the run is doing while it counts no step (what a service's ``busy`` does): drawn at once, beside
        what other contexts still say, until the context ends.

        :param activity: e.g. ``evaluating``
        """
        token = object()
        self.statuses.append((token, activity))
        self._redraw()
        try:
            yield
        finally:
            self.statuses = [status for status in self.statuses if status[0] is not token]
            self._setPostfix()

    def _show(self, activity: str) -> None:
        self.activity = activity
        self._redraw()

    def _redraw(self) -> None:
        self._setPostfix()
        if not self.bar.disable:
            self.bar.refresh()

    def _setPostfix(self) -> None:
        warm_up = f"warm-up: learning starts at step {self.learning_starts}" if self.learning_starts is not None else ""
        parts = (self.activity, *(text for _token, text in self.statuses), warm_up, self.episodes)
        self.bar.set_postfix_str(", ".join(part for part in parts if part), refresh=False)

    def finish(self) -> None:
        self.activity, self.learning_starts, self.statuses = None, None, []  # the last line says none of them
        self.bar.eta = True
        self._setPostfix()
        self.bar.close()
