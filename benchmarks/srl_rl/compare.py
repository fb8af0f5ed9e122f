"""The SRL + RL benchmark against earlier runs (``--compare-to FILE``): do runs made with other train settings or
another physics version of the env (another renderer, Kuka's physics version 1) reach the same final rewards?

``FILE`` is an archive of finished runs in the format of benchmarks.srl_rl.archive (it may be the ``--runs-file``
itself). For each env of the report and each observation of its table, the *earlier* records are those of ``FILE``
with the same env, observation, run settings (:meth:`Settings.runSettings`) and, for a learned observation, the same
SRL settings, of a seed among the planned ones, but NOT the planned run's own settings: another train-settings digest
(benchmarks.srl_rl.archive.settingsDigest) or another physics version. The learned model may differ (no
benchmarks.srl_rl.models.sameModel here: a model trained on another renderer's images is another model). Invariants:

- the earlier records of one observation are grouped by their settings (the train settings but the seed, and the
  physics version); one group is compared, the one with the most planned seeds, ties broken by the latest day it
  finished, and the table says which when there were several;
- the final reward of a run is the one the main table shows (benchmarks.srl_rl.analysis.summariseEnv: the last
  evaluation's mean), mean +/- standard error over seeds on each side; a row is *within* when the difference of the
  means is at most twice the combined standard error ``sqrt(SE_now^2 + SE_earlier^2)``, and not compared (``n/a``)
  with fewer than 2 seeds on a side;
- what differs is named from the records: each train setting whose value differs (``renderer tinyrenderer ->
  sprites``, earlier -> now) and the physics version (``physics 1 -> 2``).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence
from typing import Any

from benchmarks.srl_rl.analysis import ObservationSummary, plusMinus, summariseEnv, tableDigits
from benchmarks.srl_rl.archive import loadArchive, recordFromArchive, settingsDigest, withoutSeed
from benchmarks.srl_rl.env_plans import EnvPlan
from benchmarks.srl_rl.plans import Settings, specObservation
from rl_baselines.sweeps.recorded import envPhysics, specSettings, trainSettings
from srl_toolbox.cli import UsageError

FLAG = "--compare-to"


def loadComparison(path: str) -> dict[str, dict[str, Any]]:
    """
    :param path: the archive file to compare with
    :return: key -> record, its train settings read as a run's args.json would be (rl_baselines.sweeps.recorded.trainSettings)
    :raises UsageError: the file is missing, unreadable or not an archive of runs of this format (one line)
    """
    if not os.path.exists(path):
        raise UsageError(f"{FLAG} {path!r}: no such file")
    if not os.path.isfile(path):
        raise UsageError(f"{FLAG} {path!r}: not a file")
    return loadArchive(path, FLAG)


@dataclasses.dataclass
class EarlierGroup:
    """
    Earlier records of one observation made with one set of settings.

    :param train: their train settings but the seed
    :param physics: the env's physics version they were made with
    :param records: the archived records, one per seed, by seed
    """

    train: dict[str, Any]
    physics: int
    records: list[dict[str, Any]]

    @property
    def seeds(self) -> list[int]:
        """The seeds of its records, in order."""
        return [int(record["seed"]) for record in self.records]

    @property
    def latest(self) -> str:
        """The last day one of its runs finished (YYYY-MM-DD; empty when none is known)."""
        return max((str(record.get("date", "")) for record in self.records), default="")


def earlierGroups(archive: dict[str, dict[str, Any]], settings: Settings, plan: EnvPlan, specs: Sequence[Any]
                  ) -> dict[str, list[EarlierGroup]]:
    """
    :param archive: the records compared with (:func:`loadComparison`)
    :param settings: the benchmark's settings
    :param plan: an env's plan
    :param specs: its run specs (:meth:`Settings.specs`)
    :return: observation -> the groups of its earlier records (see the module's docstring), in the order found
    """
    run, srl, physics = Settings.runSettings(plan), settings.srlSettings(plan), envPhysics(plan.env)
    planned: dict[str, dict[int, str]] = {}
    for spec in specs:
        planned.setdefault(specObservation(spec), {})[int(spec.seed)] = settingsDigest(specSettings(spec))
    groups: dict[str, dict[str, EarlierGroup]] = {}
    for entry in archive.values():
        observation, seed = str(entry["observation"]), int(entry["seed"])
        if entry["env"] != plan.env or seed not in planned.get(observation, {}) or entry["run"] != run:
            continue
        if entry["srl"] != (srl if observation in settings.learned else None):
            continue
        train, version = trainSettings(entry["train"]), int(entry.get("physics", 1))
        if (settingsDigest(train), version) == (planned[observation][seed], physics):
            continue  # the planned run's own settings
        shared = withoutSeed(train)
        name = json.dumps([shared, version], sort_keys=True)
        group = groups.setdefault(observation, {}).setdefault(name, EarlierGroup(shared, version, []))
        group.records.append(entry)
    for found in groups.values():
        for group in found.values():
            group.records.sort(key=lambda record: int(record["seed"]))
    return {observation: list(found.values()) for observation, found in groups.items()}


def chosenGroup(groups: Sequence[EarlierGroup]) -> EarlierGroup:
    """:return: the group compared: the most seeds, then the latest day (the first found of equals)"""
    return max(groups, key=lambda group: (len(group.seeds), group.latest))


def _shown(value: Any) -> str:
    """:return: a setting's value in a few characters: a string as it is, anything else as JSON"""
    return value if isinstance(value, str) else json.dumps(value)


def settingsChanges(earlier: dict[str, Any], now: dict[str, Any], earlier_physics: int, physics: int) -> list[str]:
    """
    :param earlier: the earlier runs' train settings (without the seed)
    :param now: the planned runs' train settings (without the seed)
    :param earlier_physics: the earlier runs' physics version
    :param physics: the env's physics version now
    :return: ``name earlier -> now`` for every setting whose value differs (``(absent)`` for a setting one side does
        not record), sorted by name, then ``physics A -> B`` when the versions differ
    """
    changes = []
    for name in sorted(set(earlier) | set(now)):
        if name not in now or name not in earlier or earlier[name] != now[name]:
            before = _shown(earlier[name]) if name in earlier else "(absent)"
            changes.append(f"{name} {before} -> {_shown(now[name]) if name in now else '(absent)'}")
    if earlier_physics != physics:
        changes.append(f"physics {earlier_physics} -> {physics}")
    return changes


@dataclasses.dataclass
class ComparisonRow:
    """
    One observation now against its earlier runs.

    :param observation: the observation
    :param now: its row of the main table
    :param earlier: the same summary of the chosen group's runs (None: no earlier run)
    :param changes: what differs (:func:`settingsChanges`)
    :param groups: how many groups of earlier settings there were
    :param group: the group compared (None: none)
    """

    observation: str
    now: ObservationSummary
    earlier: ObservationSummary | None = None
    changes: list[str] = dataclasses.field(default_factory=list)
    groups: int = 0
    group: EarlierGroup | None = None

    @property
    def compared(self) -> bool:
        """At least 2 seeds on each side."""
        return self.earlier is not None and len(self.now.finals) >= 2 and len(self.earlier.finals) >= 2

    @property
    def difference(self) -> float:
        """Mean final reward now minus earlier (nan without both)."""
        if self.earlier is None or not self.now.finals or not self.earlier.finals:
            return math.nan
        return self.now.final[0] - self.earlier.final[0]

    @property
    def bound(self) -> float:
        """Twice the combined standard error (nan unless :attr:`compared`)."""
        if not self.compared:
            return math.nan
        assert self.earlier is not None
        return 2 * math.hypot(self.now.final[1], self.earlier.final[1])

    @property
    def within(self) -> bool | None:
        """Whether the difference is at most :attr:`bound` (None: not compared)."""
        return abs(self.difference) <= self.bound if self.compared else None


def compareEnv(archive: dict[str, dict[str, Any]], settings: Settings, plan: EnvPlan, specs: Sequence[Any],
               rows: Sequence[ObservationSummary]) -> list[ComparisonRow]:
    """
    :param archive: the records compared with (:func:`loadComparison`)
    :param settings: the benchmark's settings
    :param plan: an env's plan
    :param specs: its run specs
    :param rows: its main table's rows (benchmarks.srl_rl.analysis.summariseEnv)
    :return: one comparison per row, in the table's order
    """
    groups = earlierGroups(archive, settings, plan, specs)
    planned = {specObservation(spec): withoutSeed(specSettings(spec)) for spec in specs}
    physics = envPhysics(plan.env)
    result = []
    for row in rows:
        found = groups.get(row.observation, [])
        if not found:
            result.append(ComparisonRow(row.observation, row))
            continue
        group = chosenGroup(found)
        (earlier,), _ = summariseEnv([recordFromArchive(entry) for entry in group.records], [row.observation],
                                     len(group.records))
        changes = settingsChanges(group.train, planned.get(row.observation, {}), group.physics, physics)
        result.append(ComparisonRow(row.observation, row, earlier, changes, len(found), group))
    return result


def comparisonTable(rows: Sequence[ComparisonRow]) -> str:
    """
    :param rows: an env's comparisons (:func:`compareEnv`)
    :return: the markdown table
    """
    lines = ["| observation | runs now | final now (mean +/- SE) | runs earlier | final earlier (mean +/- SE) | "
             "difference | within 2 x combined SE | what differs |", "|---|---:|---:|---:|---:|---:|---|---|"]
    digits = tableDigits([row.now for row in rows] + [row.earlier for row in rows if row.earlier is not None])
    for row in rows:
        now = plusMinus(row.now.final, digits) if row.now.finals else "n/a"
        if row.earlier is None:
            lines.append(f"| {row.observation} | {len(row.now.finals)} | {now} | 0 | n/a | | n/a | no earlier run |")
            continue
        earlier = plusMinus(row.earlier.final, digits) if row.earlier.finals else "n/a"
        difference = "n/a" if math.isnan(row.difference) else f"{row.difference:+.{digits}f}"
        within = "n/a" if row.within is None else "yes" if row.within else "no"
        what = ", ".join(row.changes) or "nothing recorded"
        if row.groups > 1 and row.group is not None:
            what += (f" (of {row.groups} earlier settings, the one with the most seeds ({len(row.group.seeds)}), "
                     f"then the latest{', ' + row.group.latest if row.group.latest else ''})")
        lines.append(f"| {row.observation} | {len(row.now.finals)} | {now} | {len(row.earlier.finals)} | {earlier} | "
                     f"{difference} | {within} | {what} |")
    return "\n".join(lines)


def comparisonLine(rows: Sequence[ComparisonRow]) -> str:
    """
    :param rows: an env's comparisons
    :return: ``N of M rows within twice the combined standard error; outside: ...`` (M: the rows compared), and how
        many rows were not compared
    """
    compared = [row for row in rows if row.compared]
    outside = [f"{row.observation} ({row.difference:+.3g})" for row in compared if not row.within]
    text = (f"{sum(bool(row.within) for row in compared)} of {len(compared)} rows within twice the combined standard "
            f"error; outside: {', '.join(outside) or 'none'}")
    left = len(rows) - len(compared)
    if left:
        text += f" ({left} not compared: no earlier run, or fewer than 2 seeds on a side)"
    return text + "."


def comparisonSection(archive: dict[str, dict[str, Any]], path: str, settings: Settings, plan: EnvPlan,
                      specs: Sequence[Any], rows: Sequence[ObservationSummary]) -> str:
    """
    :param archive: the records compared with (:func:`loadComparison`)
    :param path: their file, as shown
    :param settings: the benchmark's settings
    :param plan: an env's plan
    :param specs: its run specs
    :param rows: its main table's rows
    :return: the subsection that follows the env's table: its heading, the table and :func:`comparisonLine`; one
        sentence when no row has an earlier run
    """
    compared = compareEnv(archive, settings, plan, specs, rows)
    heading = f"#### Against earlier runs (`{path}`)"
    if not any(row.earlier is not None for row in compared):
        return (f"{heading}\n\nNo run of {plan.env} in `{path}` with the same run and SRL settings and other train "
                "settings or another physics version.")
    return f"{heading}\n\n{comparisonTable(compared)}\n\n{comparisonLine(compared)}"
