"""The progress line of a long benchmark: how many of its items are done, and about how long the rest will take.

A benchmark that runs for minutes prints ``[done/total, about X min left]`` before what each finished item measured
(:class:`Countdown`), so that a watcher knows how far it is and when it will end.
"""
from __future__ import annotations

import time
from collections.abc import Callable


class Countdown:
    """
    Counts the finished items of a benchmark and estimates the time left: the time since the countdown began per unit
    of work done, times the work left. Items of different sizes give their size (env steps, say), so that a long item
    still to come does not read as a short one; by default every item is one unit.

    Invariants: the count never exceeds the total; the estimate is never negative.
    """

    def __init__(self, total: int, work: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        """
        :param total: the number of items
        :param work: the work of all the items together, in the unit of :meth:`tick`'s ``size`` [``total``]
        :param clock: seconds, monotonic (the time begins to count now)
        """
        self.total, self.work, self.clock = total, float(total if work is None else work), clock
        self.done, self.work_done, self.began = 0, 0.0, clock()

    def tick(self, size: float = 1.0) -> str:
        """
        Count one more item done.

        :param size: its work (1 by default)
        :return: ``[done/total, about X min left]``
        """
        self.done, self.work_done = min(self.done + 1, self.total), self.work_done + size
        elapsed = self.clock() - self.began
        left = elapsed / self.work_done * max(self.work - self.work_done, 0.0) if self.work_done > 0 else 0.0
        return f"[{self.done}/{self.total}, about {left / 60:.0f} min left]"
