"""The monitor files of a sweep's runs, followed as they grow: for the live plots (plots.SweepCurves) and for the
sweep bar's ETA (:class:`SweepWork`).

A run is followed in its latest attempt's folder (rl_baselines.sweeps.run_attempts.runAttempts), a new attempt's once
it exists. Its steps are its step count when its last episode ended, all envs together (the envs its args.json gives,
rl_baselines.runs.monitor_files.runEnvs), as training's own plots count them; its budget is args.json's
``num_timesteps``. A run whose folder or args.json cannot be read (not written yet, or on another machine of a Ray
cluster without a shared file system) is followed as having made no steps.
"""
from __future__ import annotations

import os
from collections.abc import Iterable

from rl_baselines.core.run_folder import RunFolder, readRunArgs
from rl_baselines.runs.monitor_files import MonitorTail, runEnvs
from rl_baselines.sweeps.run_attempts import runAttempts
from rl_baselines.sweeps.sweep import RunSpec


class RunTails:
    """Each run's monitor files, followed in its latest attempt's folder."""

    def __init__(self) -> None:
        self._tails: dict[str, tuple[str, MonitorTail]] = {}  # run id -> (run folder, its tail)
        self._args: dict[str, dict] = {}  # run folder -> its args.json, once it could be read

    def tail(self, spec: RunSpec) -> tuple[str, MonitorTail] | None:
        """
        :param spec: a run
        :return: (its latest attempt's folder, the tail of its monitor files; poll it for what is new), None while it
            has no folder
        """
        known = self._tails.get(spec.run_id)
        if known is None or not os.path.isdir(known[0]):
            attempts = runAttempts(spec)
            if not attempts:
                return None
            if known is not None:
                known[1].close()
            known = (attempts[-1], MonitorTail(RunFolder(attempts[-1]).monitor_dir))
            self._tails[spec.run_id] = known
        return known

    def args(self, folder: str) -> dict | None:
        """:return: the args.json of the run in ``folder``, None while it cannot be read (train writes it atomically)"""
        if folder not in self._args:
            args = readRunArgs(folder)
            if args is None:
                return None
            self._args[folder] = args
        return self._args[folder]

    def runEnvs(self, folder: str) -> int | None:
        """:return: the envs of the run in ``folder`` (:func:`runEnvs` of its args.json), None while unreadable"""
        args = self.args(folder)
        return None if args is None else runEnvs(args)

    def close(self) -> None:
        """Close the monitor files."""
        for _, tail in self._tails.values():
            tail.close()
        self._tails.clear()


class SweepWork:
    """
    How much of a sweep's runs this invocation did and has left, in runs: a run in flight counts the share of its
    budget its monitor files show (its steps when its last episode ended), a run that ended counts whole, so that the
    sweep's ETA moves before any run ends (a sweep of as many runs as workers had none until the first ended).
    Progress a continued run had made before this invocation is not counted as done here.

    :param specs: the runs this invocation does
    """

    def __init__(self, specs: Iterable[RunSpec]) -> None:
        self._specs = {spec.run_id: spec for spec in specs}
        self._tails = RunTails()
        self._first: dict[str, float] = {}  # run id -> its share done when first seen by this invocation
        self._now: dict[str, float] = {}  # run id -> its share done now
        self._failed: set[str] = set()

    def _share(self, spec: RunSpec) -> float | None:
        """:return: the share of its budget the run's monitor files show, None while they cannot say"""
        known = self._tails.tail(spec)
        if known is None:
            return None
        folder, tail = known
        tail.poll()
        args = self._tails.args(folder)
        budget = None if args is None else args.get("num_timesteps")
        if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0 or not tail.rewards:
            return None
        return min(1.0, float(tail.runSteps(runEnvs(args))[-1]) / budget)

    def follow(self, running: Iterable[RunSpec]) -> None:
        """:param running: the runs in flight: read what their monitor files gained"""
        for spec in running:
            if spec.run_id not in self._specs or spec.run_id in self._failed or self._now.get(spec.run_id) == 1.0:
                continue
            share = self._share(spec)
            if share is not None:
                self._first.setdefault(spec.run_id, share)
                self._now[spec.run_id] = share

    def ended(self, run_id: str, done: bool) -> None:
        """
        :param run_id: a run that ended: nothing of it is left to do
        :param done: it trained its budget here (counted whole), else (it failed, or another pipeline ran it) it
            counts as far as it was seen to get here
        """
        if run_id not in self._specs:
            return
        if done:
            self._first.setdefault(run_id, self._now.get(run_id, 0.0))
            self._now[run_id] = 1.0
        else:
            self._failed.add(run_id)

    def amounts(self) -> tuple[float, float]:
        """:return: (runs' worth done by this invocation, runs' worth left)"""
        done = sum(self._now[run_id] - self._first[run_id] for run_id in self._now)
        return done, sum(1.0 - self._now.get(run_id, 0.0) for run_id in self._specs if run_id not in self._failed)

    def close(self) -> None:
        """Close the monitor files."""
        self._tails.close()
