"""Reading the SB3 Monitor CSVs of a run (``monitor/<rank>.monitor.csv``: a ``#{json}`` line, then ``r,l,t,...``).

Episodes of all envs are merged in the order of the vectorized step at which they ended (then by file), which every
run of a seed repeats. The timestep of an episode is, given the run's number of envs (they step together), the run's
step count when it ended: its env's own step count times the envs, the unit of ``--num-timesteps`` and
``--eval-freq`` (:meth:`MonitorTail.runSteps`; a run folder's envs: :func:`runEnvs`), which training's logs and plots,
the sweep's live plots and the results tools all use; without it, the cumulative sum of the episode lengths up to it,
as in the old toolbox's plots (the same with one env, earlier with several). An episode's wall time is counted from
the earliest ``t_start`` of the files' headers, as SB3's ``load_results`` does (each file's ``t`` counts from its own
env's start), and is the time by which it and every episode merged before it had ended (the steps were reached then),
so that it only grows along the merged episodes.

A row that is not an episode (a short row, a non-number, the NUL bytes a crash can leave) is skipped and recorded in
:attr:`MonitorTail.damaged`: the last line of a file may be torn by a crash mid-write, and is ignored; one with rows
after it means the file is damaged, and :func:`loadEpisodes` refuses the folder (:class:`MonitorFileError`).
"""
from __future__ import annotations

import csv
import glob
import json
import os
from typing import Any

import numpy as np

from rl_baselines.core.run_folder import MONITOR_SUFFIX as MONITOR_SUFFIX  # re-exported
from rl_baselines.core.run_folder import readRunArgs

# The columns an episode row must have (SB3's Monitor writes them first).
EPISODE_COLUMNS = ("r", "l", "t")


class MonitorFileError(ValueError):
    """A monitor file with a damaged row before its last line: its episodes cannot be trusted."""


class MonitorTail:
    """
    Follows the monitor files of a folder, reading only what was appended since the last :meth:`poll`.

    :param folder: the folder holding ``*.monitor.csv`` files (they may appear later)
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder
        # path -> (handle, column names, pending partial line, env steps of the episodes read from it)
        self._files: dict[str, tuple] = {}
        self._starts: dict[str, float] = {}  # path -> its header's t_start (files without one: 0)
        self.rewards: list[float] = []
        self.lengths: list[int] = []
        self.times: list[float] = []
        self.successes: list[float] = []
        self.env_steps: list[int] = []  # each episode's end: its own env's step count (the run's vectorized step)
        # path -> (line number, text) of its rows that are not episodes; _followed: a line came after one of them
        self.damaged: dict[str, list[tuple[int, str]]] = {}
        self._followed: dict[str, bool] = {}
        self._line_numbers: dict[str, int] = {}

    def poll(self) -> int:
        """
        :return: how many episodes were read since the last call
        """
        rows: list[tuple[int, str, float, float, int, float]] = []
        for path in sorted(glob.glob(os.path.join(self.folder, f"*{MONITOR_SUFFIX}"))):
            if path not in self._files:
                if os.path.isdir(path):  # (not a file of episodes: said as a damaged row, as a foreign header is)
                    self.damaged.setdefault(path, [(0, "is a folder, not a file")])
                    self._followed[path] = True
                    continue
                # bytes that are not UTF-8 (a damaged file) read as U+FFFD: their rows are damaged rows, not a crash
                self._files[path] = (open(path, encoding="utf-8", errors="replace", newline=""), None, "", 0)
            handle, columns, pending, env_steps = self._files[path]
            text = pending + handle.read()
            lines = text.split("\n")
            pending = lines.pop()  # an incomplete last line waits for the next poll
            for raw in lines:
                line = raw.strip()
                number = self._line_numbers[path] = self._line_numbers.get(path, 0) + 1
                if line and self.damaged.get(path):
                    self._followed[path] = True  # a damaged row with a line after it: not a torn last line
                if line.startswith("#") and columns is None:
                    try:
                        self._starts[path] = float(json.loads(line[1:]).get("t_start", 0.0))
                    except (ValueError, AttributeError, TypeError):
                        self._starts[path] = 0.0
                    continue
                if not line or line.startswith("#"):
                    continue
                if columns is None:
                    columns = _fields(line)
                    if not all(name in columns for name in EPISODE_COLUMNS):
                        columns = []  # not SB3's header: no row of this file is read
                        self.damaged.setdefault(path, []).append((number, line))
                    continue
                row = _episodeRow(columns, line)
                if row is None:
                    self.damaged.setdefault(path, []).append((number, line))
                    continue
                env_steps += row[2]
                rows.append((env_steps, path, *row))
            self._files[path] = (handle, columns, pending, env_steps)
        # The envs of a vectorized run step together, so an episode that ended at its env's n-th step ended at the
        # run's n-th vectorized step: ordering by it (then by file) is the same on every run of a seed, where the
        # wall time ``t`` can swap two envs' episodes that ended at the same step.
        rows.sort(key=lambda row: row[:2])
        first_start = min(self._starts.values(), default=0.0)
        for env_steps, path, wall_time, reward, length, success in rows:
            # when this episode and every one merged before it had ended (two envs' clocks may put an episode that
            # ended at a later vectorized step a few milliseconds before the one merged ahead of it)
            # (the offset first: a file's start is a Unix time, whose float sum with a small time would round it)
            ended = wall_time + (self._starts.get(path, first_start) - first_start)
            self.times.append(max(ended, self.times[-1]) if self.times else ended)
            self.rewards.append(reward)
            self.lengths.append(length)
            self.successes.append(success)
            self.env_steps.append(int(env_steps))
        return len(rows)

    def damagedFiles(self) -> list[str]:
        """
        :return: one line per file with a damaged row before its last line (a torn last line is left out), e.g.
            ``.../0.monitor.csv line 7: 'abc,250,3.0,False' is not an episode row`` (``.../0.monitor.csv is a folder,
            not a file`` for a folder)
        """
        return [f"{path} {rows[0][1]}" if rows[0][0] == 0 else
                f"{path} line {rows[0][0]}: {rows[0][1][:40]!r} is not an episode row"
                for path, rows in sorted(self.damaged.items()) if self._followed.get(path)]

    @property
    def timesteps(self) -> np.ndarray:
        """Cumulative env steps at the end of each episode (the sum of the lengths so far: SB3's plotting axis)."""
        return np.cumsum(np.asarray(self.lengths, dtype=np.int64))

    def endSteps(self, num_envs: int) -> np.ndarray:
        """
        :param num_envs: the run's number of envs (the monitor files of one run, stepped together)
        :return: the run's step count (all envs together, as ``num_timesteps`` and ``--num-timesteps`` count it)
            when each episode ended: its env's own step count times the envs; with one env, :attr:`timesteps`
        """
        return np.maximum.accumulate(np.asarray(self.env_steps, dtype=np.int64)) * int(num_envs) \
            if self.env_steps else np.zeros(0, dtype=np.int64)

    def runSteps(self, num_envs: int | None) -> np.ndarray:
        """
        :param num_envs: the run's number of envs (:func:`runEnvs`); None: unknown
        :return: each episode's step: :meth:`endSteps`, or :attr:`timesteps` with ``num_envs`` None or 1
        """
        return self.endSteps(num_envs) if num_envs is not None and num_envs > 1 else self.timesteps

    def meanReward(self, last: int = 100) -> float:
        """
        :param last: how many recent episodes to average
        :return: the mean reward of the last episodes (nan before the first one)
        """
        return float(np.mean(self.rewards[-last:])) if self.rewards else float("nan")

    def close(self) -> None:
        """Close the open files."""
        for handle, *_ in self._files.values():
            handle.close()
        self._files.clear()


def loadEpisodes(folder: str, num_envs: int | None = None) -> dict[str, np.ndarray]:
    """
    Read every episode of a run's monitor folder.

    :param folder: the folder holding ``*.monitor.csv``
    :param num_envs: the run's number of envs (stepped together); None: unknown
    :return: arrays ``timesteps`` (the run's step count when each episode ended, :meth:`MonitorTail.endSteps`; with
        ``num_envs`` None or 1, the sum of the lengths so far), ``rewards``, ``lengths``, ``times`` (wall time since
        start), ``successes``
    :raises MonitorFileError: a file has a damaged row before its last line (a torn last line is ignored)
    """
    tail = MonitorTail(folder)
    tail.poll()
    tail.close()
    damaged = tail.damagedFiles()
    if damaged:
        raise MonitorFileError(damaged[0])
    return {
        "timesteps": tail.runSteps(num_envs),
        "rewards": np.asarray(tail.rewards, dtype=np.float64),
        "lengths": np.asarray(tail.lengths, dtype=np.int64),
        "times": np.asarray(tail.times, dtype=np.float64),
        "successes": np.asarray(tail.successes, dtype=np.float64),
    }


def runEnvs(args: dict[str, Any]) -> int:
    """
    :param args: a run's args.json
    :return: the envs that stepped together in the run: ``--num-cpu`` per process times ppo1's processes
        (``--world-size``, else ``--num-workers``); 1 where args.json does not say
    """
    def count(name: str) -> int:
        value = args.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1

    return count("num_cpu") * (count("world_size") if args.get("world_size") else count("num_workers"))


def episodeRate(episodes: dict[str, np.ndarray]) -> float:
    """
    :param episodes: from :func:`loadEpisodes`
    :return: the env steps played until the last episode ended (every env's, their lengths summed) per second of
        the monitor clock; nan without an episode or a clock
    """
    clock = float(episodes["times"].max()) if episodes["times"].size else 0.0
    return float(episodes["lengths"].sum()) / clock if clock > 0 else float("nan")


def runEnvsOf(run_dir: str) -> int | None:
    """
    :param run_dir: a run folder
    :return: :func:`runEnvs` of its args.json, None when it has none or it cannot be read (not written yet: train
        writes it atomically; a folder of monitor files only; a damaged file)
    """
    args = readRunArgs(run_dir)
    return None if args is None else runEnvs(args)


def _episodeRow(columns: list[str], line: str) -> tuple[float, float, int, float] | None:
    """
    :param columns: the file's column names
    :param line: one row
    :return: (t, r, l, is_success or nan), None when the row is not an episode (another field count, not numbers)
    """
    fields = _fields(line)
    if not columns or len(fields) != len(columns):
        return None
    values = dict(zip(columns, fields))
    try:
        wall_time, reward, length = float(values["t"]), float(values["r"]), int(values["l"])
    except ValueError:
        return None
    try:
        success = float(values["is_success"]) if values.get("is_success") not in (None, "") else np.nan
    except ValueError:
        success = float(values["is_success"] == "True")
    return wall_time, reward, length, success


def _fields(line: str) -> list[str]:
    """:return: the CSV fields of one line ([] when it is not CSV)"""
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return []
