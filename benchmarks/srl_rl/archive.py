"""The SRL + RL benchmark's archive of finished runs: what later invocations and fresh clones report and reuse.

:data:`benchmarks.srl_rl.plans.RUNS_FILE` (``benchmarks/srl_rl_runs.json``, committed) keeps the benchmark's results
beyond the bench folder (``logs/`` is not in the repository, and the whole benchmark takes hours). Every report
records each finished run of the grid there (benchmarks.archive: sorted keys, rewritten atomically and only when a
record changes): env, observation, seed, the settings that make runs comparable, the evaluation curve, steps/s, wall
time, the learned model's hash, recipe and metrics (GTC, KNN-MSE, the linear probe's R^2 when it was evaluated), the
day it finished, the machine, the invocation's fingerprint, and ``continued: true`` for a run continued after a
stop. Invariants:

- a report never loses a measured fact: a run whose model is no longer the registered one (prepare trained its
  recipe again) gets the metrics and recipe an archived record holds for that model (same hash;
  :func:`withArchivedModel`);

- a record's key (:func:`archiveKey`) names everything that changes its result: the env plan's steps, evaluation
  frequency and episodes and env flags, readable; for a learned observation the SRL settings as prepare resolves
  them (seed, state dimension, epochs, dataset episodes, image size); and a digest of the run's train settings
  (rl_baselines.sweeps.recorded.trainSettings: every setting of args.json that changes a result), which the record holds
  in full (a variant's flags are train settings: ``raw_pixels_shift``'s ``augment: "shift"`` gives its runs keys
  of their own besides their observation name, while ``augment: "none"`` is left out, keeping the earlier records'
  keys). A later change of a train default (the number of envs, a renderer flag, a network flag) changes the key
  of every planned run: the benchmark runs again instead of reusing records of other settings; and the env's physics
  version (environments' PHYSICS_VERSION) when it is not 1, the version every record before it was made with: a
  change of an env's simulation (Kuka's physics version 2) runs its grid again; the record holds it (``physics``,
  absent: 1);
- a record is used only when its key, its plan settings, its SRL settings and its train settings are the planned
  run's, and (learned observations) when its model is the registered one or another training of its recipe
  (benchmarks.srl_rl.models.sameModel);
- the file holds records of format :data:`FORMAT` only: a record of another format is refused with a message, never
  half-read;
- ``--quick`` keeps its own archive in its bench folder, never the committed one.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.archive import ArchiveError, loadRecords, writeRecords
from benchmarks.srl_rl.env_plans import EnvPlan
from benchmarks.srl_rl.models import modelMetrics, registeredFacts, sameModel
from benchmarks.srl_rl.plans import Settings, displayPath, modelName, specObservation
from benchmarks.srl_rl.runs import RunRecord, dateSpan, finishedRuns
from replay.results import Run
from rl_baselines.runs.args_format import UPGRADES
from rl_baselines.sweeps.recorded import envPhysics, specSettings, trainSettings
from srl_toolbox.cli import UsageError

# The records' format: 2 keys and records a run by its train settings too (``train``).
FORMAT = 2
ARCHIVE_FIELDS = ("format", "env", "observation", "seed", "run", "srl", "train", "eval_timesteps", "eval_rewards")
# args.json's format when the archive's first records were written (format 2 of this file): a train setting added
# since (a later upgrade rule) is left out of the digest at the value that reproduces the runs made before it, so
# that those runs keep their keys; at any other value (``--renderer sprites``) it is in. The renderer is compared with
# that value (tinyrenderer, the reference), not with the env's default: runs record it resolved (specSettings), so an
# env whose default becomes another renderer gives its runs other keys and Kuka's tinyrenderer records keep theirs.
FIRST_ARGS_FORMAT = 2
LATER_SETTINGS = {name: value for version, rule in UPGRADES.items() if version >= FIRST_ARGS_FORMAT
                  for name, value in rule.items()}
# Not compared when a run is archived again: the same run seen by another invocation (another observation set, a
# report on another machine) keeps its first record.
NOT_COMPARED = ("fingerprint", "machine")


def _jsonNumber(value: float | None) -> float | None:
    """:return: ``value`` as a float, None for nan or None (JSON has no nan)"""
    return None if value is None or math.isnan(float(value)) else float(value)


def _floatOrNan(value: Any) -> float:
    """:return: ``value`` as a float, nan for None"""
    return math.nan if value is None else float(value)


def settingsDigest(train: dict[str, Any]) -> str:
    """
    :param train: train settings (rl_baselines.sweeps.recorded.trainSettings)
    :return: their short hash, the same on every machine; the settings of :data:`LATER_SETTINGS` at their upgrade
        value are left out
    """
    digested = {name: value for name, value in train.items()
                if not (name in LATER_SETTINGS and value == LATER_SETTINGS[name])}
    return hashlib.sha1(json.dumps(digested, sort_keys=True).encode("utf-8")).hexdigest()[:12]


def withoutSeed(train: dict[str, Any]) -> dict[str, Any]:
    """:return: train settings without the seed: what the runs of one observation share across seeds"""
    return {name: value for name, value in train.items() if name != "seed"}


def archiveKey(env: str, observation: str, seed: int, run: dict[str, Any], srl: dict[str, int] | None,
               train: dict[str, Any], physics: int = 1) -> str:
    """
    :param env: env id
    :param observation: the observation
    :param seed: the run's seed
    :param run: :meth:`Settings.runSettings` of the env
    :param srl: :meth:`Settings.srlSettings` of the env for a learned observation, None for the others (their runs do
        not depend on the SRL settings)
    :param train: the run's train settings (rl_baselines.sweeps.recorded.trainSettings)
    :param physics: the env's physics version the run was made with (named in the key unless 1)
    :return: the record's key in the archive: the plan's and the SRL settings readable, the train settings digested
    """
    parts = [env, observation, f"seed{seed}", str(run["algo"]), f"steps{run['steps']}",
             f"eval{run['eval_freq']}x{run['eval_episodes']}", *run["flags"]]
    if srl is not None:
        parts.append("srl " + " ".join(f"{key}={srl[key]}" for key in sorted(srl)))
    parts.append(f"train {settingsDigest(train)}")
    if physics != 1:
        parts.append(f"physics{physics}")
    return " ".join(parts)


def recordProblem(record: dict[str, Any]) -> str | None:
    """:return: why an archived record is not one of this format (None: it is)"""
    lacking = [name for name in ARCHIVE_FIELDS if name not in record]
    if lacking:
        return f"lacks {', '.join(lacking)}"
    if record["format"] != FORMAT:
        return f"is of format {record['format']!r}, not {FORMAT}"
    return None


def loadArchive(path: str | None, flag: str = "--runs-file") -> dict[str, dict[str, Any]]:
    """
    :param path: the archive file (None: no archive)
    :param flag: the option that named it, for the error message
    :return: key (:func:`archiveKey`) -> record, its train settings read as a run's args.json would be (a setting
        added since takes the value of its upgrade rule); empty when there is no archive or no file yet
    :raises UsageError: the file is not an archive of runs of this format (one line)
    """
    if path is None:
        return {}
    try:
        records = loadRecords(path, recordProblem)
    except ArchiveError as error:
        raise UsageError(f"{flag} {path!r}: {error}") from None
    return {key: {**record, "train": trainSettings(record["train"])} for key, record in records.items()}


def writeArchive(path: str, entries: dict[str, dict[str, Any]], dropped: Sequence[str] = ()
                 ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """
    Add records to the archive (a record with the same key is replaced unless only :data:`NOT_COMPARED` differ) and
    remove others (benchmarks.archive.writeRecords).

    :param path: the archive file
    :param entries: key -> record to add
    :param dropped: keys to remove
    :return: (the archive as written, the keys added, replaced or removed)
    :raises UsageError: the file is not an archive of runs of this format (one line)
    """
    try:
        return writeRecords(path, entries, dropped, NOT_COMPARED, recordProblem)
    except ArchiveError as error:
        raise UsageError(f"--runs-file {path!r}: {error}") from None


def archiveEntry(settings: Settings, plan: EnvPlan, record: RunRecord, srl: dict[str, int] | None,
                 registered: dict[str, Any] | None, machine: str) -> tuple[str, dict[str, Any]]:
    """
    :param settings: the benchmark's settings
    :param plan: the run's env plan
    :param record: a finished run of the bench folder, with its train settings, made with its env's physics version
        of now (benchmarks.srl_rl.runs.finishedRuns skips the others)
    :param srl: the env's SRL settings when the run's observation is learned, else None
    :param registered: the facts (benchmarks.srl_rl.models.modelFacts) of the model registered for the observation
        (None: none); its metrics (GTC, KNN-MSE and any other it holds: models.modelMetrics) and recipe are recorded
        when it is the model the run used (same hash)
    :param machine: the machine's description
    :return: (key, record) as the archive keeps them
    """
    run = Settings.runSettings(plan)
    model = None
    if srl is not None and record.model is not None:
        model = {"hash": record.model.get("hash"), "recipe": record.model.get("recipe"),
                 "state_dim": record.model.get("state_dim"), "gtc": None, "knn_mse": None}
        if registered is not None and registered.get("hash") is not None and registered["hash"] == model["hash"]:
            model.update({name: _jsonNumber(value) for name, value in modelMetrics(registered).items()},
                         recipe=registered.get("recipe") or model["recipe"])
    entry = {"format": FORMAT, "env": record.env, "observation": record.observation, "seed": record.seed, "run": run,
             "srl": srl, "train": record.train, "fingerprint": settings.fingerprint(),
             "eval_timesteps": [int(step) for step in record.eval_steps],
             "eval_rewards": [float(reward) for reward in record.eval_rewards],
             "rate": _jsonNumber(record.rate), "wall": _jsonNumber(record.wall), "model": model,
             "date": record.finished or time.strftime("%Y-%m-%d"), "machine": machine}
    if record.continued:  # absent: a run never stopped (and every record written before this field)
        entry["continued"] = True
    physics = envPhysics(record.env)
    if physics != 1:
        entry["physics"] = physics
    return archiveKey(record.env, record.observation, record.seed, run, srl, record.train or {}, physics), entry


def measuredModels(archive: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """:return: model hash -> the model facts an archived record holds with its metrics (GTC known)"""
    return {model["hash"]: model for record in archive.values()
            if (model := record.get("model")) and model.get("hash") and model.get("gtc") is not None}


def withArchivedModel(entry: dict[str, Any], measured: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """
    :param entry: a run's record as :func:`archiveEntry` makes it now
    :param measured: the archive's measured models (:func:`measuredModels`)
    :return: the entry, with the archived facts (metrics and recipe) of its model when the entry lacks them and the
        archive has them: the run's model is no longer the registered one (prepare trained its recipe again), but
        an earlier report measured it (same hash); a report never forgets what an earlier one measured
    """
    model = entry.get("model")
    if model is None or model.get("gtc") is not None or model.get("hash") not in measured:
        return entry
    known = measured[model["hash"]]
    return {**entry, "model": {**model, **{name: value for name, value in known.items() if value is not None}}}


def collectRuns(settings: Settings, plans: Sequence[EnvPlan]
                ) -> tuple[dict[str, list[RunRecord]], dict[str, dict[str, dict[str, Any]]]]:
    """
    :param settings: the benchmark's settings
    :param plans: env plans
    :return: (env -> the finished runs of its grid in the bench folder, with their train settings, env -> the facts
        of its registered models: benchmarks.srl_rl.models.registeredFacts)
    """
    found, models = {}, {}
    for plan in plans:
        models[plan.env] = registeredFacts(settings, plan.env)
        found[plan.env] = finishedRuns(settings.specs(plan))
    return found, models


def recordRuns(settings: Settings, plans: Sequence[EnvPlan], found: dict[str, list[RunRecord]],
               models: dict[str, dict[str, dict[str, Any]]], machine: str) -> dict[str, dict[str, Any]]:
    """
    Archive the finished runs of the bench folder in ``settings.archive_file`` (nothing without one).

    :param settings: the benchmark's settings
    :param plans: the env plans of ``found``
    :param found: env -> finished runs (:func:`collectRuns`)
    :param models: env -> registered models' facts (:func:`collectRuns`)
    :param machine: the machine's description
    :return: the archive after the update
    """
    if settings.archive_file is None:
        return {}
    measured = measuredModels(loadArchive(settings.archive_file))
    entries = {}
    for plan in plans:
        srl = settings.srlSettings(plan)
        for record in found[plan.env]:
            if record.train is None:  # its train settings are unknown: not archived
                continue
            learned = record.observation in settings.learned
            key, entry = archiveEntry(settings, plan, record, srl if learned else None,
                                      models[plan.env].get(modelName(record.observation)), machine)
            entries[key] = withArchivedModel(entry, measured)
    archive, changed = writeArchive(settings.archive_file, entries)
    if changed:
        print(f"Archived {len(changed)} run(s) in {displayPath(settings.archive_file)} ({len(archive)} in all)",
              flush=True)
    return archive


def archivedMatches(archive: dict[str, dict[str, Any]], settings: Settings, plan: EnvPlan, specs: Sequence[Any],
                    registered: dict[str, dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """
    :param archive: the archive (:func:`loadArchive`, or as :func:`writeArchive` returns it)
    :param settings: the benchmark's settings
    :param plan: an env's plan
    :param specs: run specs of the env
    :param registered: the facts of the models registered for the env; a learned observation's record is left
        out when the bench folder registers another model for it (sameModel: no table mixes two recipes)
    :return: (observation, seed) -> the archived record with the same settings, for the specs that have one
    """
    if not archive:
        return {}
    run, srl, physics = Settings.runSettings(plan), settings.srlSettings(plan), envPhysics(plan.env)
    matches = {}
    for spec in specs:
        observation = specObservation(spec)
        learned = observation in settings.learned
        expected_srl = srl if learned else None
        train = specSettings(spec)
        entry = archive.get(archiveKey(plan.env, observation, int(spec.seed), run, expected_srl, train, physics))
        # the record's train settings read as loadArchive reads them (an archive as just written holds them raw)
        if entry is None or ((entry["run"], entry["srl"], trainSettings(entry["train"]), entry.get("physics", 1))
                             != (run, expected_srl, train, physics)):
            continue
        if learned and not sameModel(registered.get(modelName(observation)), entry.get("model")):
            continue
        matches[(observation, int(spec.seed))] = entry
    return matches


def dropStaleRecords(settings: Settings, plan: EnvPlan, models: dict[str, dict[str, Any]]) -> list[str]:
    """
    Remove from the archive the records of the env, with the current settings, whose learned model is no longer the
    registered one (trained again by this invocation's prepare with other settings or code: sameModel), as
    benchmarks.srl_rl.models.dropStaleRuns does with run folders. A record of another training of the same recipe is kept.

    :param settings: the benchmark's settings
    :param plan: the env's plan
    :param models: model name -> the facts of the models registered now
    :return: the keys removed; a record of other train settings than the plan's runs (another renderer, whose models
        are registered apart) or of another physics version is not this configuration's and is kept
    """
    archive = loadArchive(settings.archive_file)
    if not archive:
        return []
    run, srl, physics = Settings.runSettings(plan), settings.srlSettings(plan), envPhysics(plan.env)
    planned = {settingsDigest(withoutSeed(specSettings(spec))) for spec in settings.specs(plan)}
    stale = []
    for key, entry in archive.items():
        model = modelName(entry["observation"])
        if (entry["env"], entry["run"], entry["srl"]) != (plan.env, run, srl) or model not in models:
            continue
        train = settingsDigest(withoutSeed(trainSettings(entry["train"])))
        if train not in planned or entry.get("physics", 1) != physics:
            continue
        if not sameModel(models[model], entry.get("model")):
            stale.append(key)
    if stale:
        writeArchive(settings.archive_file, {}, stale)
    return stale


def entryKey(entry: dict[str, Any]) -> str:
    """:return: the key of an archived record as :func:`loadArchive` returns it (its train settings read as now): its
    key in the archive, unless that reading changed since the record was written (an upgrade rule, the value recorded
    for a flag that does nothing for the run), which leaves the archive's key stale and the run unfound"""
    return archiveKey(entry["env"], entry["observation"], int(entry["seed"]), entry["run"], entry["srl"],
                      entry["train"], int(entry.get("physics", 1)))


def recordFromArchive(entry: dict[str, Any]) -> RunRecord:
    """
    :param entry: an archived record
    :return: the run as the analysis reads it (``archived`` set; its model facts with nan for a missing GTC/KNN-MSE)
    """
    steps = np.asarray(entry["eval_timesteps"], dtype=np.float64)
    rewards = np.asarray(entry["eval_rewards"], dtype=np.float64)
    args = {"env": entry["env"], "srl_model": entry["observation"], "seed": int(entry["seed"]),
            "algo": entry["run"]["algo"], "num_timesteps": int(entry["run"]["steps"])}
    evaluations = {"timesteps": steps, "results": rewards[:, None]} if steps.size else None
    model = entry.get("model")
    if model is not None:
        model = {**model, **modelMetrics(model)}
    return RunRecord(Run(f"archive: {entryKey(entry)}", args, {}, evaluations), steps, rewards,
                     _floatOrNan(entry.get("rate")),
                     _floatOrNan(entry.get("wall")), model, str(entry.get("date", "")), archived=True,
                     machine=str(entry.get("machine", "")), train=entry["train"],
                     continued=bool(entry.get("continued", False)))


def archiveNote(records: Sequence[RunRecord], path: str) -> str:
    """
    :param records: an env's runs in the report
    :param path: the archive file
    :return: the sentence that says which of them come from the archive, when, and on which machine
    """
    archived = [record for record in records if record.archived]
    machines = sorted({record.machine for record in archived if record.machine})
    where = f" on {'; '.join(machines)}" if machines else ""
    source = f"the archive of finished runs (`{displayPath(path)}`)"
    if len(archived) == len(records):
        return f"The {len(records)} runs shown come from {source}: finished {dateSpan(archived)}{where}."
    return (f"{len(archived)} of these {len(records)} runs come from {source} (finished {dateSpan(archived)}{where}); "
            "the others from the bench folder.")
