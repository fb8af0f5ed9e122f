"""Running the SRL + RL benchmark: prepare the learned models and run the missing runs, env after env.

For each env of the plan: ``python -m srl_models.prepare`` (every learned model on one dataset, registered in the
bench folder's SRL config file), then ``python -m rl_baselines.pipeline`` for the runs neither finished in the bench
folder nor archived with the same settings, ``nice``-d, with an estimate of the time left. Invariants:

- resumable: the pipeline gives each run a deterministic folder and skips the finished ones, so a re-run does only
  what is missing; an interrupted stage's time counts in the accumulated wall time (``<bench-dir>/timing.json``);
- the missing runs of one set of train flags go to one pipeline command, over every worker, whenever its grid holds
  no other run than finished ones (:meth:`Settings.pipelineCommands`);
- an env whose runs are all archived is neither prepared nor run (``--rerun ENV`` ignores its archived records);
- a finished run, or an archived record, whose learned model was trained again since with other settings or code is
  dropped first (benchmarks.srl_rl.models.sameModel), so that no table mixes two recipes; so is a finished run made
  with other train settings (rl_baselines.sweeps.recorded.changedSettings);
- a stage runs in :attr:`Settings.base` importing this checkout's code, even from another checkout's folder.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from benchmarks.srl_rl.archive import archivedMatches, dropStaleRecords, loadArchive, recordFromArchive
from benchmarks.srl_rl.env_plans import (
    EXPECTED_PREPARE_S,
    EXPECTED_STAGE_START_S,
    EXPECTED_START_S,
    EnvPlan,
    expectedRate,
)
from benchmarks.srl_rl.models import dropStaleRuns, registeredFacts, registeredModels
from benchmarks.srl_rl.plans import (
    ENV_OBSERVATIONS,
    ROOT,
    Settings,
    counted,
    displayPath,
    duration,
    isEnvObservation,
    modelName,
    shown,
    specObservation,
)
from benchmarks.srl_rl.runs import dateSpan, dropRunsOfOtherSettings, finishedRunFolders, loadRuns, missingRuns
from rl_baselines.sweeps.run_attempts import finishedFolder
from srl_toolbox.files import readJson, writeJson


def addTiming(path: str, key: str, stage: str, seconds: float) -> dict[str, float]:
    """
    Add a stage's seconds to the benchmark's accumulated wall time (summed over invocations), atomically.

    :param path: the timing file
    :param key: the settings' fingerprint
    :param stage: the stage's name
    :param seconds: seconds it took this time
    :return: the accumulated seconds per stage of these settings
    """
    data = readJson(path) if os.path.isfile(path) else {}
    stages = data.setdefault(key, {})
    stages[stage] = stages.get(stage, 0.0) + seconds
    writeJson(path, data)
    return stages


def observationKind(observation: str) -> str:
    """:return: ``ground_truth``, ``raw_pixels`` (a variant: its model's kind) or ``learned``"""
    return modelName(observation) if isEnvObservation(observation) else "learned"


def expectedRunSeconds(plan: EnvPlan, observation: str, measured: dict[tuple[str, str], float]) -> float:
    """
    :param plan: the env's plan
    :param observation: the observation
    :param measured: (env, observation) -> mean seconds of the whole train command of its finished runs with these
        settings (evaluations and start-up included)
    :return: a guess of one run's seconds: the observation's measured mean; else the mean over the env's measured
        observations of the same kind (ground truth, raw pixels, learned), times the observation's own ratio to its
        kind's mean on the other envs where both are measured (DrAC's slower updates on a new task); else the
        start-up of a train command (:data:`EXPECTED_START_S`) and the steps at the kind's expected rate
        (:func:`expectedRate`: an env without rates of its own gets its robot's, or the slowest), its evaluation
        episodes counted at full length
    """
    if (plan.env, observation) in measured:
        return measured[plan.env, observation]
    kind = observationKind(observation)

    def kindMean(where: str) -> float | None:
        same = [seconds for (env, name), seconds in measured.items()
                if env == where and name != observation and observationKind(name) == kind]
        return float(np.mean(same)) if same else None

    here = kindMean(plan.env)
    if here is not None:
        ratios = [seconds / mean for (env, name), seconds in measured.items()
                  if name == observation and (mean := kindMean(env))]
        return here * (float(np.mean(ratios)) if ratios else 1.0)
    rate = expectedRate(plan.env, kind)
    evaluation = (plan.steps // plan.eval_freq) * plan.eval_episodes * plan.episode_length
    return EXPECTED_START_S + plan.steps / rate + evaluation / (1.25 * rate)  # evaluation steps skip the updates


def measuredSeconds(settings: Settings, archive: dict[str, dict[str, Any]]) -> dict[tuple[str, str], float]:
    """
    :param settings: the benchmark's settings
    :param archive: the archive of finished runs
    :return: (env, observation) -> mean seconds of the whole train commands of its finished runs with these settings
        (in the bench folder or archived), for the observations of ``settings`` and the env's own two (ground truth,
        raw pixels), which a variant's first runs on an env are estimated from (:func:`expectedRunSeconds`) when they
        are not benchmarked this time
    """
    reference = dataclasses.replace(settings, observations=list(dict.fromkeys([*settings.observations,
                                                                               *ENV_OBSERVATIONS])))
    measured: dict[tuple[str, str], list[float]] = {}
    for plan in reference.plans:
        specs = reference.specs(plan)
        found = archivedMatches(archive, reference, plan, specs, registeredFacts(reference, plan.env))
        for record in [*loadRuns(finishedRunFolders(specs)), *map(recordFromArchive, found.values())]:
            if np.isfinite(record.wall):
                measured.setdefault((record.env, record.observation), []).append(record.wall)
    return {key: float(np.mean(values)) for key, values in measured.items()}


def estimateSeconds(settings: Settings, plan: EnvPlan, measured: dict[tuple[str, str], float],
                    from_scratch: bool = False, archived: Collection[tuple[str, int]] = ()) -> float:
    """
    :param settings: the benchmark's settings
    :param plan: an env's plan
    :param measured: (env, observation) -> mean seconds of its finished runs (:func:`expectedRunSeconds`)
    :param from_scratch: every model and run, whatever exists already
    :param archived: (observation, seed) of the runs taken from the archive (not run; none of them: no prepare)
    :return: the seconds its prepare (models not registered yet) and its missing runs are expected to take, the
        start of each pipeline command that runs them included (:data:`EXPECTED_STAGE_START_S`)
    """
    specs = settings.specs(plan)
    prepared = {} if from_scratch else registeredModels(settings.configFile(plan.env), plan.env)
    to_prepare = sum(1 for name in settings.models if name not in prepared)
    if not from_scratch and archived and len(archived) >= len(specs):
        to_prepare = 0
    todo = specs if from_scratch else [spec for spec in specs if (specObservation(spec), int(spec.seed)) not in archived
                                       and finishedFolder(spec) is None]
    missing = settings.seedCounts(plan) if from_scratch else missingRuns(todo)
    seconds = [expectedRunSeconds(plan, name, measured) for name, count in missing.items() for _ in range(count)]
    # (``workers`` at a time, never more at once than there are runs, nor less wall than the longest one takes)
    runs = max(sum(seconds) / min(settings.workers, len(seconds)), max(seconds)) if seconds else 0.0
    stages = len(settings.pipelineCommands(plan, todo, finishedKeys(specs))) if todo else 0
    return to_prepare * EXPECTED_PREPARE_S + stages * EXPECTED_STAGE_START_S + runs


def finishedKeys(specs: Sequence[Any]) -> set[tuple[str, int]]:
    """:return: (observation, seed) of the runs among ``specs`` finished in the bench folder (a pipeline command
    may cover them: it skips them)"""
    return {(specObservation(spec), int(spec.seed)) for spec in specs if finishedFolder(spec) is not None}


class _Stopped(BaseException):
    """SIGTERM: stop the stage in flight like a Ctrl-C."""


def _raiseStopped(signum: int, frame: Any) -> None:
    raise _Stopped()


def stageEnvironment(cwd: str) -> dict[str, str] | None:
    """
    :param cwd: the folder a stage runs in
    :return: the environment of a stage run outside the repository root (None: inherit this one): the project is
        imported from the repository root, never from ``cwd`` (another checkout), in the stage and its children
    """
    if os.path.abspath(cwd) == ROOT:
        return None
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONSAFEPATH": "1", "PYTHONPATH": os.pathsep.join([ROOT, path]) if path else ROOT}


def runStage(command: Sequence[str], nice: int, cwd: str = ROOT) -> int:
    """
    Run ``python COMMAND`` in ``cwd`` (:attr:`Settings.base`), niced, its output on this terminal. It runs in a session
    of its own, so that a stop reaches it exactly once, from here: a Ctrl-C (of the terminal, or SIGINT to this
    process alone) is passed on as SIGINT and SIGTERM as SIGTERM, and it gets a minute to stop its own runs cleanly
    before it is killed.

    :param command: the command line without the interpreter
    :param nice: niceness
    :param cwd: the folder it runs in (the bench folder's paths are relative to it)
    :return: its exit code
    """
    prefix = ["nice", "-n", str(nice)] if nice and shutil.which("nice") else []
    process = subprocess.Popen([*prefix, sys.executable, *command], cwd=cwd, env=stageEnvironment(cwd),
                               start_new_session=True)
    previous = signal.signal(signal.SIGTERM, _raiseStopped)
    try:
        return process.wait()
    except (KeyboardInterrupt, _Stopped) as stop:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM if isinstance(stop, _Stopped) else signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raise KeyboardInterrupt from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def prepareEnv(settings: Settings, plan: EnvPlan) -> tuple[list[str], bool]:
    """
    Prepare the env's learned models and drop the runs made with models that were trained again since with other
    settings or code.

    :param settings: the benchmark's settings
    :param plan: the env's plan
    :return: (the observations that can run, whether prepare failed for some)
    """
    command = settings.prepareCommand(plan)
    print(f"\n[{plan.env}] preparing {counted(len(settings.models), 'learned model')}: {shown(command, settings.nice)}",
          flush=True)
    began = time.perf_counter()
    code = runStage(command, settings.nice, settings.base)
    addTiming(settings.timing_file, settings.fingerprint(), f"prepare {plan.env}", time.perf_counter() - began)
    models = registeredFacts(settings, plan.env)
    absent = [name for name in settings.learned
              if modelName(name) not in models or models[modelName(name)]["hash"] is None]
    if code != 0 or absent:
        print(f"warning: prepare exited with code {code}; not usable on {plan.env}: {', '.join(absent) or 'none'} "
              "(their rows stay missing)", file=sys.stderr, flush=True)
    for folder in dropStaleRuns(finishedRunFolders(settings.specs(plan)), models):
        print(f"dropped {displayPath(folder)}: its SRL model was trained again since, with other settings or code",
              flush=True)
    for key in dropStaleRecords(settings, plan, models):
        print(f"dropped the archived run {key!r} from {displayPath(str(settings.archive_file))}: its SRL model was "
              "trained again since, with other settings or code", flush=True)
    return [name for name in settings.observations if name not in absent], code != 0 or bool(absent)


def runEverything(settings: Settings, rerun: Collection[str] = ()) -> tuple[bool, int]:
    """
    Prepare the models and run the sweeps, env after env, with an estimate of the time left. The runs archived with
    the same settings (:func:`archivedMatches`) are not run again, and an env whose runs are all archived is neither
    prepared nor run, unless it is in ``rerun``.

    :param settings: the benchmark's settings
    :param rerun: envs whose archived runs are ignored
    :return: (whether a stage failed, runs finished by this invocation)
    """
    archive = loadArchive(settings.archive_file)
    specs = {plan.env: settings.specs(plan) for plan in settings.plans}
    for plan in settings.plans:
        for folder in dropRunsOfOtherSettings(specs[plan.env]):
            print(f"dropped {displayPath(folder)}: made with other train settings than this configuration's (a train "
                  "default changed since)", flush=True)
    archived = {plan.env: {} if plan.env in rerun else archivedMatches(archive, settings, plan, specs[plan.env],
                                                                        registeredFacts(settings, plan.env))
                for plan in settings.plans}
    seconds = measuredSeconds(settings, archive)
    estimates = {plan.env: estimateSeconds(settings, plan, seconds, archived=archived[plan.env])
                 for plan in settings.plans}

    def pending(env: str) -> list[Any]:
        return [spec for spec in specs[env] if (specObservation(spec), int(spec.seed)) not in archived[env]
                and finishedFolder(spec) is None]

    missing_before = sum(len(pending(plan.env)) for plan in settings.plans)
    whole = sum(estimateSeconds(settings, plan, seconds, from_scratch=True) for plan in settings.plans)
    print(f"Plan: {', '.join(f'{p.env} {p.steps:,} steps per run' for p in settings.plans)}; "
          f"{counted(len(settings.observations), 'observation')} x {counted(settings.seeds, 'seed')}"
          + "".join(f" (ground truth {count} on {plan.env})"
                    for plan, count in settings.groundTruthSeeds(settings.plans).items())
          + f"; {counted(missing_before, 'run')} to do"
          + (f" ({sum(map(len, archived.values()))} archived)" if any(archived.values()) else "")
          + f"; estimated time left {duration(sum(estimates.values()))} ({counted(settings.workers, 'run')} at a time; the "
          f"whole benchmark: about {duration(whole)} on {counted(settings.workers, 'free core')})", flush=True)
    failed, start, planned, given = False, time.perf_counter(), 0.0, []
    for index, plan in enumerate(settings.plans):
        if archived[plan.env] and len(archived[plan.env]) == len(specs[plan.env]):
            print(f"\n[{plan.env}] all {len(specs[plan.env])} runs are archived in "
                  f"{displayPath(str(settings.archive_file))} (finished "
                  f"{dateSpan([recordFromArchive(entry) for entry in archived[plan.env].values()])}): not prepared "
                  f"or run again (--rerun {plan.env} runs it again)", flush=True)
        else:
            observations = list(settings.observations)
            if settings.learned:
                observations, prepare_failed = prepareEnv(settings, plan)
                failed |= prepare_failed
                if archived[plan.env]:  # prepare may have dropped stale records
                    archived[plan.env] = archivedMatches(loadArchive(settings.archive_file), settings, plan,
                                                         specs[plan.env], registeredFacts(settings, plan.env))
            todo = pending(plan.env)
            runnable = [spec for spec in specs[plan.env]
                        if (specObservation(spec), int(spec.seed)) not in archived[plan.env]
                        and specObservation(spec) in observations]
            if not todo:
                print(f"\n[{plan.env}] every run has finished" + (" or is archived" if archived[plan.env] else ""),
                      flush=True)
            elif runnable:
                if archived[plan.env]:
                    print(f"\n[{plan.env}] {len(archived[plan.env])} runs are archived in "
                          f"{displayPath(str(settings.archive_file))}: not run again (--rerun {plan.env} runs them)",
                          flush=True)
                given += [spec for spec in todo if specObservation(spec) in observations]
                for command in settings.pipelineCommands(plan, runnable, finishedKeys(specs[plan.env])):
                    print(f"\n[{plan.env}] ppo2 runs: {shown(command, settings.nice)}", flush=True)
                    began = time.perf_counter()
                    try:
                        code = runStage(command, settings.nice, settings.base)
                    finally:  # an interrupted stage's time counts too: the next invocation goes on from there
                        addTiming(settings.timing_file, settings.fingerprint(), f"runs {plan.env}",
                                  time.perf_counter() - began)
                    failed |= code != 0
        planned += estimates[plan.env]
        elapsed = time.perf_counter() - start
        left = sum(estimates[p.env] for p in settings.plans[index + 1:]) * max(0.1, elapsed / max(planned, 1.0))
        print(f"[{index + 1}/{len(settings.plans)} envs done] elapsed {duration(elapsed)}"
              + (f", estimated time left {duration(left)}" if index + 1 < len(settings.plans) else ""), flush=True)
    return failed, sum(1 for spec in given if finishedFolder(spec) is not None)
