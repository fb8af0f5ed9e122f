"""The SRL + RL benchmark's finished runs, as the analysis reads them, and the settings that make them comparable.

A finished run of the bench folder is the pipeline's run folder of a spec (``done.json``): its args.json, its
monitor files and its deterministic evaluations (``evaluations.npz``) become a :class:`RunRecord`. Invariants:

- a run's train settings (rl_baselines.sweeps.recorded.trainSettings: those of its train command line that change a
  result) key it in the archive, so that a later change of a train default makes the benchmark run again instead of
  reusing old records;
- a finished run whose args.json says it was made with other train settings than its spec's (a default changed
  since), or with another physics version of its env, is not this configuration's
  (rl_baselines.sweeps.recorded.changedSettings): skipped by the report, deleted before the runs
  (:func:`dropRunsOfOtherSettings`);
- an unreadable run folder is skipped with a warning, never fatal: the report says which runs are missing;
- a run continued after a stop (done.json's ``attempts`` above 1) is marked ``continued`` and the reports say so
  (:func:`continuedNote`): it is a valid continuation of its seed's run, not necessarily the run never interrupted.
"""
from __future__ import annotations

import dataclasses
import math
import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.srl_rl.plans import argsObservation, specObservation
from replay.results import Run
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.runs.evaluation import readEvaluations
from rl_baselines.runs.monitor_files import episodeRate, loadEpisodes, runEnvs
from rl_baselines.sweeps.recorded import changedSettings, otherPhysics, otherSettings, specSettings
from rl_baselines.sweeps.run_attempts import DONE_FILE, finishedFolder
from srl_toolbox.files import readJson


@dataclasses.dataclass
class RunRecord:
    """
    What the analysis needs from one finished run.

    :param run: the run as the comparison tools read it (args, episodes, evaluations)
    :param eval_steps: timesteps of the evaluations, shape (n,) (empty without evaluations.npz)
    :param eval_rewards: mean reward of each evaluation's episodes, shape (n,)
    :param rate: training steps per second of the monitor clock (evaluations included), nan when unknown (and for a
        run continued after a stop, whose clock counts the time between its attempts)
    :param wall: seconds of the whole train command (the sweep's done.json: summed over a continued run's attempts),
        nan when unknown
    :param model: the learned model the run used (its srl_model.json: hash, state_dim; an archived record also has
        gtc and knn_mse), None for ground truth and raw pixels
    :param finished: the day it finished (YYYY-MM-DD), empty when unknown
    :param archived: it comes from the archive of finished runs, not from a run folder
    :param machine: the machine it ran on (archived records), empty when unknown
    :param train: its train settings (rl_baselines.sweeps.recorded.trainSettings; those of its spec for a run of the
        bench folder, the recorded ones for an archived run), None when unknown
    :param continued: the run was continued after a stop (its train process took more than one attempt): a valid
        continuation of its seed's run, not necessarily the run never interrupted (docs/reliability.md, Resume)
    """

    run: Any
    eval_steps: np.ndarray
    eval_rewards: np.ndarray
    rate: float = math.nan
    wall: float = math.nan
    model: dict[str, Any] | None = None
    finished: str = ""
    archived: bool = False
    machine: str = ""
    train: dict[str, Any] | None = None
    continued: bool = False

    @property
    def env(self) -> str:
        """The run's env id."""
        return str(self.run.args["env"])

    @property
    def observation(self) -> str:
        """The run's row: its --srl-model, or the variant its settings make it (:func:`argsObservation`)."""
        return argsObservation(self.run.args)

    @property
    def seed(self) -> int:
        """The run's seed."""
        return int(self.run.args["seed"])

    @property
    def steps(self) -> int:
        """The env steps it was asked to train."""
        return int(self.run.args.get("num_timesteps", 0))


def loadRun(folder: str) -> RunRecord:
    """
    :param folder: a run folder of ``rl_baselines.train`` (args.json, monitor/, evaluations.npz when evaluated)
    :return: its record (empty evaluation arrays when it has no evaluations.npz)
    :raises OSError, ValueError, KeyError: args.json is missing or unreadable, or evaluations.npz is malformed
    """
    paths = RunFolder(folder)
    args = readJson(paths.args_file)
    if not isinstance(args, dict) or not all(key in args for key in ("env", "srl_model", "seed")):
        raise ValueError("args.json lacks env, srl_model or seed")
    episodes = loadEpisodes(paths.monitor_dir, runEnvs(args))
    evaluations = readEvaluations(folder)
    run = Run(folder, args, episodes, evaluations, num_envs=runEnvs(args))
    curve = run.evaluationCurve()
    steps, rewards = curve if curve is not None else (np.zeros(0), np.zeros(0))
    marker = os.path.join(folder, DONE_FILE)
    done = readJson(marker) if os.path.isfile(marker) else {}
    # a run continued after a stop: its monitor clock counts the time between its attempts, so no rate
    resumed = int(done.get("attempts", 1)) > 1
    rate = episodeRate(episodes) if not resumed else math.nan
    wall = float(done.get("wall_time_s", math.nan))
    model_file = paths.srl_model_file
    model = readJson(model_file) if os.path.isfile(model_file) else None
    model = {"hash": model.get("hash"), "state_dim": model.get("state_dim")} if isinstance(model, dict) else None
    finished = str(done.get("finished_at", ""))[:10]
    return RunRecord(run, steps, rewards, rate, wall, model, finished, continued=resumed)


CONTINUED_SENTENCE = ("such a run is a valid continuation of its seed's run, not necessarily the run never interrupted "
                      "(docs/reliability.md, Resume: one resumed from a stop's own checkpoint written mid-rollout "
                      "(before 2026-12-07, or where the update in progress did not end within 10 s of the stop), "
                      "from one taken mid-episode before 2026-12-06, or on an env whose images do not repeat exactly, "
                      "plays other steps and may count more of them)")


def continuedNote(labels: Sequence[str], total: int) -> str:
    """
    :param labels: the runs continued after a stop (:attr:`RunRecord.continued`), as the report names them
        (``raw_pixels seed 1``)
    :param total: the runs shown
    :return: the sentence that names them and says what such a run is (empty when there is none)
    """
    if not labels:
        return ""
    verb = "was" if len(labels) == 1 else "were"
    return (f"{len(labels)} of these {total} runs {verb} continued after a stop ({', '.join(labels)}): "
            f"{CONTINUED_SENTENCE}.")


def loadRuns(folders: Sequence[str]) -> list[RunRecord]:
    """
    :param folders: finished run folders
    :return: their records (an unreadable one is skipped with a warning)
    """
    records = []
    for folder in folders:
        try:
            records.append(loadRun(folder))
        except (OSError, ValueError, KeyError) as error:
            print(f"warning: skipping {folder}: {error}", file=sys.stderr)
    return records


def finishedRunFolders(specs: Sequence[Any]) -> list[str]:
    """
    :param specs: run specs
    :return: the folders of those that finished (done.json), in spec order
    """
    return [folder for spec in specs if (folder := finishedFolder(spec)) is not None]


def missingRuns(specs: Sequence[Any]) -> dict[str, int]:
    """
    :param specs: an env's run specs
    :return: observation -> runs not finished yet
    """
    missing: dict[str, int] = {}
    for spec in specs:
        if finishedFolder(spec) is None:
            missing[specObservation(spec)] = missing.get(specObservation(spec), 0) + 1
    return missing


def dateSpan(records: Sequence[RunRecord]) -> str:
    """
    :param records: runs
    :return: the days they finished, ``D`` or ``D1 to D2`` (``on an unknown day`` when none is known)
    """
    days = sorted({record.finished for record in records if record.finished})
    if not days:
        return "on an unknown day"
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def finishedRuns(specs: Sequence[Any]) -> list[RunRecord]:
    """
    :param specs: run specs
    :return: the records of those that finished, in spec order, each with its spec's train settings
        (rl_baselines.sweeps.recorded.specSettings); a run made with other train settings
        (rl_baselines.sweeps.recorded.otherSettings) or unreadable is skipped with a warning
    """
    records = []
    for spec in specs:
        folder = finishedFolder(spec)
        if folder is None:
            continue
        train = specSettings(spec)
        for record in loadRuns([folder]):
            changed = otherSettings(train, record.run.args) + otherPhysics(spec, folder)
            if changed:
                print(f"warning: skipping {folder}: made with other train settings ({', '.join(changed)})",
                      file=sys.stderr)
                continue
            records.append(dataclasses.replace(record, train=train))
    return records


def dropRunsOfOtherSettings(specs: Sequence[Any]) -> list[str]:
    """
    Delete the finished runs made with other train settings than their spec's or another physics version of their env
    (rl_baselines.sweeps.recorded.changedSettings), so that the pipeline, which takes a run folder by its run
    id, runs them again with the current ones.

    :param specs: run specs
    :return: the deleted folders
    """
    dropped = []
    for spec in specs:
        folder = finishedFolder(spec)
        if folder is None:
            continue
        if changedSettings(spec, folder):
            shutil.rmtree(folder)
            dropped.append(folder)
    return dropped
