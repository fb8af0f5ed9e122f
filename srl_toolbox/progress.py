"""A progress bar counted in episodes that moves with the steps within them (:class:`EpisodeBar`).

Episodes can last thousands of steps (CarRacing's time limit is 10000): a bar that moves only when an episode ends
stands still for minutes and has no ETA meanwhile. An :class:`EpisodeBar` counts each finished episode as one and each
episode in progress as its steps over the env's step limit (at most one), so its count, rate and ETA move with the
steps; its postfix counts every step played (the finished episodes' and those in progress) and their rate. Without a
step limit (:func:`stepLimit` finds none) the count moves at episode ends only, and the postfix still moves.

Invariants: the count never goes back (an episode in progress only gains steps, and counts one when finished) and
never passes the number of episodes started; a step costs a few dictionary and float operations (tqdm draws at most
every ``mininterval`` and the postfix is only formatted when it draws), so short episodes are not slowed.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Hashable
from typing import Any

from tqdm import tqdm

# The bar is redrawn at most once per this many seconds.
REDRAW_PERIOD_S = 1.0
# The count shown to two decimals when episodes count their steps (0.01 episode: 100 steps of a 10000-step limit).
FRACTION_FORMAT = "{l_bar}{bar}| {n:.2f}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"


def _attribute(env: Any, name: str, unwrapped: bool) -> Any:
    """:return: an env's attribute (of its unwrapped env or of its outermost wrapper; an SB3 VecEnv: its first env's),
    None when it has none"""
    if hasattr(env, "num_envs") and hasattr(env, "get_attr"):
        try:
            return env.get_attr(name, indices=0)[0]
        except AttributeError:
            return None
    return getattr(getattr(env, "unwrapped", env) if unwrapped else env, name, None)


def stepLimit(env: Any) -> int | None:
    """
    :param env: a gymnasium env (wrapped or not), or an SB3 VecEnv (its first env)
    :return: the step count at which its episodes are truncated (an srl env's ``max_steps``, else its spec's
        ``max_episode_steps``), None when it has none
    """
    limit = _attribute(env, "max_steps", unwrapped=True)
    if limit is None:  # (gymnasium's TimeLimit: the spec of the made env, not of its unwrapped one)
        limit = getattr(_attribute(env, "spec", unwrapped=False), "max_episode_steps", None)
    if isinstance(limit, bool) or not isinstance(limit, numbers.Real) or not math.isfinite(limit) or limit < 1:
        return None
    return int(limit)


class EpisodeBar(tqdm):
    """
    A tqdm bar over episodes that advances with their steps (see the module docstring).

    :param total: episodes to play
    :param initial: episodes already played (a resumed recording's)
    :param max_steps: the env's step limit, None when it has none (the count then moves at episode ends)
    :param step_name: what the postfix calls a step ("frames", "steps")
    :param kwargs: tqdm's other arguments (desc, file, disable, leave...)
    """

    def __init__(self, total: int, initial: int = 0, max_steps: int | None = None, step_name: str = "steps",
                 **kwargs: Any) -> None:
        self.max_steps = max_steps if max_steps and max_steps >= 1 else None
        self.step_name = step_name
        self.finished = int(initial)
        self.finished_steps = 0
        self.live: dict[Hashable, int] = {}  # episode in progress -> its steps so far
        self.counted = 0  # the sum of their steps, each at most max_steps (the count's fraction, times max_steps)
        kwargs.setdefault("bar_format", FRACTION_FORMAT if self.max_steps else None)
        kwargs.setdefault("miniters", 0)  # (a time check per step: the postfix moves even when the count does not)
        kwargs.setdefault("mininterval", REDRAW_PERIOD_S)  # (a file or pipe gets a line a second, not ten)
        super().__init__(total=total, initial=initial, unit="episode", **kwargs)

    def step(self, episode: Hashable, steps: int) -> None:
        """
        :param episode: any key naming the episode in progress (its index, the env that plays it)
        :param steps: the steps it has played so far
        """
        previous = self.live.get(episode, 0)
        self.live[episode] = steps
        if self.max_steps is not None:
            self.counted += min(steps, self.max_steps) - min(previous, self.max_steps)
        if not self.disable:
            self._advance()

    def finish(self, episode: Hashable, steps: int) -> None:
        """
        :param episode: the key of an episode that ended (given to :meth:`step` or not)
        :param steps: its length
        """
        previous = self.live.pop(episode, 0)
        if self.max_steps is not None:
            self.counted -= min(previous, self.max_steps)
        self.finished += 1
        self.finished_steps += steps
        if not self.disable:
            self._advance()

    def _advance(self) -> None:
        count = self.finished + (self.counted / self.max_steps if self.max_steps else 0)
        self.update(max(0, count - self.n))  # (never back by a rounding; tqdm draws at most every mininterval)

    def stepsPlayed(self) -> int:
        """:return: the steps of the finished episodes and of those in progress"""
        return self.finished_steps + sum(self.live.values())

    @property
    def format_dict(self) -> dict[str, Any]:
        """tqdm's values for drawing, the postfix with the steps played and their rate (made only when drawn)."""
        values = super().format_dict
        steps = self.stepsPlayed()
        played = f"{self.step_name}={steps}"
        if values["elapsed"] > 0:
            played += f", {self.step_name}/s={steps / values['elapsed']:.0f}"
        values["postfix"] = f"{played}, {values['postfix']}" if values["postfix"] else played
        return values
