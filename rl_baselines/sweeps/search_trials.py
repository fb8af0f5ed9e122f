"""The trials of ``rl_baselines.hyperparam_search``: one train run per trial, the processes running them, progress.

Each trial is one ``python -m rl_baselines.train`` run in a subprocess that leads its own process group, its run
folder under ``<output_dir>/trial_NNNN/``. A subprocess rather than a call in this process: a crashing or leaking
trial (PyBullet, SubprocVecEnv children, GPU memory) cannot take the search down, every trial is an ordinary run
folder that ``replay`` tools read, and a pruned trial is stopped by killing its process group.

The pruner's intermediate values and the objective are the same measure, so that the last value a trial reports is
its objective, and a pruned trial is compared with completed ones on what they are scored on:

- without evaluations, they are read from the run's monitor CSVs as they grow (an episode at the run's step count
  when it ended, all envs together: its env's own steps times the envs its args.json gives): at the env steps
  ``T*k/n``, the mean reward of the last ``eval_episodes`` episodes finished by then (a value is reported only once no
  episode can still end before its step, so it does not depend on polling speed); the objective is that mean at the
  budget (``num_timesteps``, the last of those steps);
- when the search evaluates (a forwarded ``--eval-freq``), from the run's evaluations.npz as the run rewrites it
  (atomically, after each evaluation; a missing or unreadable file is read again at the next poll): each evaluation's
  mean reward, at the multiple of ``eval_freq`` it was due at (as RL Zoo's TrialEvalCallback reports each evaluation's
  mean); the objective is the mean of the last evaluation due by the budget.

A trial trains on past the budget to the end of its last rollout (SB3 finishes it); what comes after the budget
(episodes that end, evaluations due, past it) is neither reported nor scored, so every trial is scored on the same
budget. A failed run is a failed trial (:class:`TrialFailed`), never a pruned one.

An interrupt (Ctrl-C, SIGTERM) stops the trials whose runs are still going (recorded failed, ``interrupted``); a trial
whose run had already exited normally when it came is read to its end and scored as if none had come (recorded
complete), and the interrupt then stops the search. It is held back while a process reads or writes the study (the
trial's start, each poll's reports, the command's reads of the finished trials; :func:`ctrlCDeferred`) and taken
after: a KeyboardInterrupt raised inside Optuna's SQLite access can leave a statement open and the database locked,
and the other processes then wait on the lock past the command's wait for them, their trials left running.
"""
from __future__ import annotations

import glob
import math
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tqdm import tqdm

from rl_baselines.core.run_folder import ARGS_FILE, MANIFEST_FILE, RunFolder
from rl_baselines.runs.evaluation_files import readEvaluations
from rl_baselines.runs.monitor_files import MonitorTail, runEnvsOf
from rl_baselines.sweeps.log_errors import killedBy, lastLogError
from rl_baselines.sweeps.search_study import (
    RUN_PARAMS,
    SCORED_EPISODES,
    SearchConfig,
    formatValue,
    importOptuna,
    loadStudy,
    suggestParams,
    trialParams,
    trialValues,
)
from srl_toolbox.devices import threadsEnvironment
from srl_toolbox.files import readJson
from srl_toolbox.signals import ctrlCDeferred, raiseTerminated, stopSignalsBlocked, unblockStopSignals
from srl_toolbox.terminal import writeAboveBar

# Seconds between two reads of a running trial's monitor files.
POLL_S = 0.5
# The error recorded for a trial an interrupt (Ctrl-C, SIGTERM) stopped
INTERRUPTED = "interrupted"
# Seconds a trial's run that had saved its final model when a Ctrl-C came gets to exit (its last writes), to be scored
# rather than stopped as one still training; a second Ctrl-C stops it at once.
FINISHING_WAIT_S = 10.0


class TrialFailed(Exception):
    """A trial's train run failed (non-zero exit) or finished no episode: the trial is recorded as failed."""


def meanWithin(timesteps: np.ndarray, rewards: Sequence[float], step: int, eval_episodes: int) -> float | None:
    """
    :param timesteps: the run's env steps (all envs together) at the end of each finished episode (increasing)
    :param rewards: the episodes' rewards
    :param step: an env step count
    :param eval_episodes: how many episodes to average
    :return: the mean reward of the last ``eval_episodes`` episodes that ended by ``step``, None if none had
    """
    known = int(np.searchsorted(timesteps, step, side="right"))
    if known == 0:
        return None
    return float(np.mean(rewards[:known][-eval_episodes:]))


def lastEvaluationWithin(evaluations: dict[str, np.ndarray], eval_freq: int, step: int) -> int | None:
    """
    :param evaluations: a run's evaluations.npz arrays
    :param eval_freq: its evaluation period: an evaluation is played at the first step at or past each multiple of it
        (past it by less than the envs with several), with the policy of the rollouts that ended before that multiple
    :param step: an env step count
    :return: the index of the last evaluation due by ``step`` (at a multiple of ``eval_freq`` not above it), None if
        none was
    """
    due = np.asarray(evaluations["timesteps"], dtype=np.int64) // eval_freq * eval_freq
    within = np.flatnonzero(due <= step)
    return int(within[-1]) if within.size else None


class _EpisodeReporter:
    """Reports a trial's intermediate rewards at fixed env steps as its monitor files grow."""

    def __init__(self, trial: Any, steps: Sequence[int], eval_episodes: int) -> None:
        self.trial = trial
        self.steps = steps
        self.eval_episodes = eval_episodes
        self.next = 0

    def update(self, timesteps: np.ndarray, rewards: Sequence[float], finished: bool) -> int | None:
        """
        :param timesteps: the run's env steps (all envs together) at the end of each finished episode
        :param rewards: the episodes' rewards
        :param finished: the run has ended (no episode can still come)
        :return: the step at which the pruner stopped the trial, or None
        """
        while self.next < len(self.steps):
            step = self.steps[self.next]
            if not finished and (len(timesteps) == 0 or timesteps[-1] < step):
                break  # an episode ending before ``step`` may still be written
            self.next += 1
            value = meanWithin(timesteps, rewards, step, self.eval_episodes)
            if value is None:
                continue
            self.trial.report(value, step)
            if self.trial.should_prune():
                return step
        return None


class _EvaluationReporter:
    """
    Reports a trial's evaluations as its run writes them: each one's mean reward at the multiple of ``eval_freq`` it
    was due at (:func:`lastEvaluationWithin`), those due by ``last_step`` only.

    :param trial: the Optuna trial
    :param eval_freq: the run's evaluation period
    :param last_step: the last step to report (the last multiple of ``eval_freq`` within the budget: the evaluation
        due there, or the last one before it, is the objective)
    """

    def __init__(self, trial: Any, eval_freq: int, last_step: int) -> None:
        self.trial = trial
        self.eval_freq = eval_freq
        self.last_step = last_step
        self.next = 0  # evaluations read so far

    def update(self, run_dir: str | None) -> int | None:
        """
        :param run_dir: the run folder (None while the run has not made it): its evaluations.npz is read, missing or
            unreadable meaning no evaluation yet (the run rewrites it atomically, with every evaluation so far)
        :return: the step at which the pruner stopped the trial, or None
        """
        try:
            evaluations = readEvaluations(run_dir) if run_dir is not None else None
        except ValueError:
            evaluations = None
        if evaluations is None:
            return None
        due = np.asarray(evaluations["timesteps"], dtype=np.int64) // self.eval_freq * self.eval_freq
        while self.next < len(due):
            index, step = self.next, int(due[self.next])
            self.next += 1
            if step > self.last_step:
                continue  # due after the budget: not scored
            self.trial.report(float(np.mean(evaluations["results"][index])), step)
            if self.trial.should_prune():
                return step
        return None


def trialRun(folder: str) -> tuple[str, int] | None:
    """
    :param folder: a trial's folder
    :return: its run folder and the run's envs (monitor_files.runEnvs of its args.json: ``--num-cpu`` times ppo1's
        processes), None while train has not written args.json
    """
    found = glob.glob(os.path.join(glob.escape(folder), "*", "*", "*", "*", ARGS_FILE))
    envs = runEnvsOf(os.path.dirname(found[0])) if found else None
    return None if envs is None else (os.path.dirname(found[0]), envs)


class _TrialWatch:
    """
    Follows a trial's run as it writes its files: its monitor files (or evaluations) read at each :meth:`poll`, the
    intermediate values reported to the pruner.

    :param trial: the Optuna trial
    :param folder: the trial's folder
    :param episodes: reports the training episodes' means
    :param evaluations: reports the evaluations' means instead, when the search evaluates (None: it does not)
    """

    def __init__(self, trial: Any, folder: str, episodes: _EpisodeReporter,
                 evaluations: _EvaluationReporter | None) -> None:
        self.trial, self.folder, self.episodes, self.evaluations = trial, folder, episodes, evaluations
        self.tail: MonitorTail | None = None
        self.run_dir: str | None = None
        self.num_envs = 1
        self.timesteps = np.zeros(0, dtype=np.int64)  # the run's steps at each episode's end (all envs together)
        self.rewards: Sequence[float] = []

    def poll(self, finished: bool) -> bool:
        """
        Read what the run wrote since the last poll and report what can be.

        :param finished: the run has ended (its files are complete)
        :return: ``finished``
        :raises optuna.TrialPruned: the pruner stopped it
        """
        if self.tail is None:
            found = trialRun(self.folder)
            if found is not None:
                self.run_dir, self.num_envs = found
                self.trial.set_user_attr("run_dir", self.run_dir)
                self.tail = MonitorTail(RunFolder(self.run_dir).monitor_dir)
        if self.tail is not None:
            self.tail.poll()
            # (the run's steps at each episode's end: with several envs, not the sum of the lengths so far)
            self.timesteps, self.rewards = self.tail.endSteps(self.num_envs), self.tail.rewards
        if self.evaluations is None:
            pruned_at = self.episodes.update(self.timesteps, self.rewards, finished)
        else:
            pruned_at = self.evaluations.update(self.run_dir)
        if pruned_at is not None:
            raise importOptuna().TrialPruned(f"pruned at step {pruned_at}")
        return finished

    def restart(self) -> None:
        """Read the monitor files from their start at the next poll (a poll was cut short); what was reported stays
        reported."""
        self.close()
        self.tail = None

    def close(self) -> None:
        """Close the monitor files."""
        if self.tail is not None:
            self.tail.close()


def savedFinalModel(folder: str) -> bool:
    """:param folder: a trial's folder
    :return: whether its run saved its final model (the manifest beside the run's model says finished): it trained to
        its end, and what is left is its last writes and its exit"""
    found = trialRun(folder)
    try:  # (read as JSON: a search worker does not import what rl_baselines.core.manifests does, torch's SB3)
        manifest = None if found is None else readJson(os.path.join(found[0], MANIFEST_FILE))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("finished") is True


def _trialFolder(output_dir: str, number: int) -> str:
    """:return: a new folder for trial ``number`` (suffixed if an earlier study left one of that name)"""
    os.makedirs(output_dir, exist_ok=True)
    for attempt in range(1000):
        folder = os.path.join(output_dir, f"trial_{number:04d}" + (f"_{attempt}" if attempt else ""))
        try:
            os.mkdir(folder)
            return folder
        except FileExistsError:
            continue
    raise TrialFailed(f"cannot create a folder for trial {number} in {output_dir}")


def _stopChild(child: subprocess.Popen) -> None:
    """
    Stop a trial's train process and its own children (it leads its own process group). SIGKILL at once: on SIGTERM
    train would write a checkpoint and its model, work a stopped (pruned or interrupted) trial never uses.
    """
    if child.poll() is not None:
        return
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    child.wait(30)


def tidyStoppedTrial(folder: str) -> None:
    """
    After a trial's train process ended otherwise than by finishing (pruned or interrupted: SIGKILLed; failed):
    delete the checkpoint a save it was making left half-written, and the trial's folder itself when its run had not
    begun (nothing in it but an empty train.log: stopped as it started).

    :param folder: the trial's folder (its run lies in ``<folder>/<env>/<observation>/<algo>/<run>/``)
    """
    for run_dir in glob.glob(os.path.join(glob.escape(folder), "*", "*", "*", "*")):
        RunFolder(run_dir).removePartialCheckpoints()
    names = os.listdir(folder) if os.path.isdir(folder) else None
    log = os.path.join(folder, "train.log")
    if names == [] or (names == ["train.log"] and os.path.getsize(log) == 0):
        shutil.rmtree(folder, ignore_errors=True)


class TrialObjective:
    """
    The Optuna objective: one train run per trial, in a subprocess.

    :param config: the search
    :param tick: called at every poll of a running trial (the progress bar's redraw, :meth:`TrialProgress.tick`, when
        the trials run in the command's own process), or None
    """

    def __init__(self, config: SearchConfig, tick: Callable[[], None] | None = None) -> None:
        self.config = config
        self.tick = tick
        # an interrupt (Ctrl-C, or SIGTERM's Terminated) that came as a trial's run had already ended normally: raised
        # once the trial is recorded (:meth:`raiseInterrupt`)
        self.interrupted: KeyboardInterrupt | None = None

    def trainCommand(self, run_root: str, number: int, params: dict[str, Any]) -> list[str]:
        """
        :param run_root: the train command's --log-dir
        :param number: the trial number
        :param params: the sampled hyperparameters
        :return: the train command line
        """
        command = [sys.executable, "-m", "rl_baselines.train", *self.config.trialFlags, "--log-dir", run_root,
                   "--tag", f"trial{number}", "--no-vis", "--no-progress",
                   *(["--vec-env", "dummy"] if self.config.envs_in_process else [])]
        if params:  # after the forwarded ones: train's --hyperparam keeps the last value of a name
            command += ["--hyperparam", *(f"{name}:{formatValue(value)}" for name, value in params.items())]
        return command

    def _start(self, trial: Any) -> tuple[dict[str, Any], str]:
        """
        Record the trial's settings and sample its hyperparameters.

        :param trial: the Optuna trial
        :return: the values it trains with, and its new folder
        :raises optuna.TrialPruned: its sampled values would train past the budget, or train would refuse them
        """
        # first: finishedTrials finds this command's trials by it, the ones pruned before they start too
        trial.set_user_attr("search_id", self.config.search_id)
        trial.set_user_attr("fixed_hyperparams", self.config.fixed)
        trial.set_user_attr("train_flags", self.config.trialFlags)  # (the best trial's repeat command)
        sampled = suggestParams(trial, self.config.space)
        params, reason = trialParams(sampled, self.config)
        changed = {name: value for name, value in params.items() if name not in sampled or value != sampled[name]}
        if changed:  # (the outputs give the values it trained with)
            trial.set_user_attr(RUN_PARAMS, changed)
        if reason is not None:
            # its first rollout alone would train past the budget, and be compared with trials that stopped at it; or
            # train would refuse its minibatches
            trial.set_user_attr("pruned_before_start", reason)
            raise importOptuna().TrialPruned(reason)
        folder = _trialFolder(self.config.output_dir, trial.number)
        trial.set_user_attr("trial_dir", folder)
        return params, folder

    def __call__(self, trial: Any) -> float:
        """
        :param trial: the Optuna trial
        :return: the mean reward of the last ``eval_episodes`` episodes that ended within ``num_timesteps`` steps (of
            its last evaluation due by then when the search evaluates), the last intermediate value reported; the run
            trains on to the end of its last rollout, and what comes after the budget is not scored
        :raises optuna.TrialPruned: the pruner stopped it
        :raises TrialFailed: the run failed or finished no episode
        """
        folder = None
        try:
            with ctrlCDeferred():  # (writes to the study: a stop is taken after them)
                params, folder = self._start(trial)
        except KeyboardInterrupt:  # (it came as the trial started: recorded as one that was running)
            trial.set_user_attr("error", INTERRUPTED)
            if folder is not None:  # (made, still empty)
                tidyStoppedTrial(folder)
            raise
        log_path = os.path.join(folder, "train.log")
        with open(log_path, "w", encoding="utf-8") as log:
            environ = None if self.config.threads is None else threadsEnvironment(self.config.threads)
            child = subprocess.Popen(self.trainCommand(folder, trial.number, params), stdout=log, env=environ,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        steps = self.config.reportSteps
        watch = _TrialWatch(trial, folder, _EpisodeReporter(trial, steps, self.config.eval_episodes),
                            _EvaluationReporter(trial, self.config.eval_freq, steps[-1]) if self.config.evaluate
                            else None)
        try:
            try:
                while True:
                    code = child.poll()  # (before reading: a finished run's files are complete)
                    if code not in (None, 0):
                        break  # (a crash is a failed trial, not a pruned one: not read)
                    with ctrlCDeferred():  # (it reports to the study)
                        if watch.poll(code is not None):
                            break
                    if self.tick is not None:
                        self.tick()
                    time.sleep(POLL_S)
            except KeyboardInterrupt as interrupt:
                if child.poll() is None and savedFinalModel(folder):  # trained to its end: let it exit
                    try:
                        child.wait(FINISHING_WAIT_S)
                    except (subprocess.TimeoutExpired, KeyboardInterrupt):  # (a second Ctrl-C: stopped below)
                        pass
                if child.poll() != 0:  # still running (stopped below), or failed
                    trial.set_user_attr("error", INTERRUPTED)
                    raise
                # it had ended normally when the interrupt came: read afresh (a read may have been cut), score it,
                # and let the interrupt stop the search once Optuna has recorded the trial (:meth:`raiseInterrupt`)
                self.interrupted = interrupt
                watch.restart()
                watch.poll(True)
        finally:
            _stopChild(child)
            watch.close()
            if child.returncode != 0:
                tidyStoppedTrial(folder)
        if child.returncode != 0:
            why = killedBy(child.returncode) or lastLogError(log_path)
            message = f"train exited with code {child.returncode}: {why} (log: {log_path})"
            trial.set_user_attr("error", message)
            raise TrialFailed(message)
        try:
            return self.score(trial, watch.timesteps, watch.rewards)
        except KeyboardInterrupt as interrupt:  # (the run ended normally: its score is still read)
            self.interrupted = interrupt
            return self.score(trial, watch.timesteps, watch.rewards)

    def raiseInterrupt(self, study: Any, trial: Any) -> None:
        """
        An Optuna callback: raise the interrupt (Ctrl-C, SIGTERM) that came as a trial's run had already ended
        normally, now that the trial is recorded with its score (:meth:`__call__` defers it).

        :raises KeyboardInterrupt: one was deferred
        """
        interrupt, self.interrupted = self.interrupted, None
        if interrupt is not None:
            raise interrupt

    def score(self, trial: Any, timesteps: np.ndarray, rewards: Sequence[float]) -> float:
        """
        :param trial: the Optuna trial, its run finished (``run_dir`` recorded when the search evaluates)
        :param timesteps: the run's env steps (all envs together) at the end of each of its episodes
        :param rewards: the episodes' rewards
        :return: the trial's objective (see :meth:`__call__`): the same value as its last intermediate one (at the
            budget without evaluations, at the step its last evaluation within the budget was due with them);
            without evaluations the trial records how many episodes it averages (``SCORED_EPISODES``)
        :raises TrialFailed: no episode ended, or no evaluation was due, within the budget, or evaluations.npz is
            unreadable
        """
        budget = self.config.num_timesteps
        value = meanWithin(timesteps, rewards, budget, self.config.eval_episodes)
        if value is None:
            message = f"no episode finished within {budget} steps; raise --num-timesteps"
            trial.set_user_attr("error", message)
            raise TrialFailed(message)
        if not self.config.evaluate:
            ended = int(np.searchsorted(timesteps, budget, side="right"))
            trial.set_user_attr(SCORED_EPISODES, min(ended, self.config.eval_episodes))
            return value
        run_dir = trial.user_attrs["run_dir"]
        try:
            evaluations = readEvaluations(run_dir)
        except ValueError as error:
            trial.set_user_attr("error", str(error))
            raise TrialFailed(str(error)) from None
        last = None if evaluations is None else lastEvaluationWithin(evaluations, self.config.eval_freq, budget)
        if last is None:
            message = f"the run wrote no evaluation due within {budget} steps (evaluations.npz) in {run_dir}"
            trial.set_user_attr("error", message)
            raise TrialFailed(message)
        return float(np.mean(evaluations["results"][last]))


# --- workers and progress ----------------------------------------------------------------------------------------


def runWorker(config: SearchConfig, n_trials: int, seed: int, callbacks: Sequence[Any] = (),
              tick: Callable[[], None] | None = None) -> None:
    """
    Run ``n_trials`` trials of the study in this process.

    :param config: the search
    :param n_trials: how many
    :param seed: the sampler's seed
    :param callbacks: Optuna callbacks ``(study, frozen_trial)`` called after each trial
    :param tick: called at every poll of a running trial (the progress bar's redraw), or None
    :raises KeyboardInterrupt: an interrupt (Ctrl-C, SIGTERM): the trials still running are stopped and recorded
        failed; one whose run had already ended normally is scored (and recorded complete) first
    """
    study = loadStudy(config, seed)
    objective = TrialObjective(config, tick)
    study.optimize(objective, n_trials=n_trials, catch=(TrialFailed,),
                   callbacks=[*callbacks, objective.raiseInterrupt])  # (last: after the others saw the trial)


def _workerMain(config: SearchConfig, n_trials: int, seed: int) -> None:
    """Entry point of a ``--workers`` process. It stops on the SIGTERM the command passes on (:func:`runWorkers`) and
    ignores SIGINT, so that a stop reaches it once, whether a Ctrl-C went to the process group or to the command
    alone."""
    signal.signal(signal.SIGTERM, raiseTerminated)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        unblockStopSignals()  # started with both blocked: a Ctrl-C that came while it imported arrives here
        runWorker(config, n_trials, seed)
    except KeyboardInterrupt:
        sys.exit(130)


class TrialProgress:
    """
    One progress bar over this command's trials, and one line per finished trial.

    :param total: trials this command runs
    :param enabled: show the bar
    :param evaluates: the trials' values are evaluation means (a forwarded ``--eval-freq``): the lines say so
    """

    def __init__(self, total: int, enabled: bool, evaluates: bool = False) -> None:
        self.measure = "evaluation mean reward" if evaluates else "mean reward"
        # (smoothing 0: the ETA from the average rate since the start, recomputed at each redraw, :meth:`tick`)
        self.bar = tqdm(total=total, unit="trial", desc="trials", disable=not enabled, dynamic_ncols=True, smoothing=0)
        self.interactive = enabled and sys.stderr.isatty()  # (redrawn by the clock on a terminal only, not in a file)
        self.seen: set[int] = set()
        self.counts = {"COMPLETE": 0, "PRUNED": 0, "FAIL": 0}
        self.best = -math.inf

    def trialDone(self, trial: Any) -> None:
        """
        :param trial: a finished ``optuna.trial.FrozenTrial``
        """
        if trial.number in self.seen:
            return
        self.seen.add(trial.number)
        state = trial.state.name
        # a trial an interrupt stopped is recorded failed; the bar counts it stopped, not finished (nor in its ETA)
        stopped = state == "FAIL" and trial.user_attrs.get("error") == INTERRUPTED
        counted = "STOPPED" if stopped else state
        self.counts[counted] = self.counts.get(counted, 0) + 1
        if state == "COMPLETE":
            self.best = max(self.best, trial.value)
            params = ", ".join(f"{name}={formatValue(value)}" for name, value in trialValues(trial).items())
            line = f"trial {trial.number}: {self.measure} {trial.value:.2f} ({params})"
        elif state == "PRUNED" and "pruned_before_start" in trial.user_attrs:
            line = f"trial {trial.number}: pruned before it started ({trial.user_attrs['pruned_before_start']})"
        elif state == "PRUNED":
            step = trial.last_step
            value = trial.intermediate_values.get(step, float("nan")) if step is not None else float("nan")
            line = f"trial {trial.number}: pruned at step {step} ({self.measure} then {value:.2f})"
        else:
            line = f"trial {trial.number}: failed: {trial.user_attrs.get('error', 'see its train.log')}"
        writeAboveBar(self.bar, line)
        self.bar.set_postfix(best=f"{self.best:.2f}" if self.counts["COMPLETE"] else "none yet",
                             pruned=self.counts["PRUNED"], failed=self.counts["FAIL"],
                             **({"stopped": self.counts["STOPPED"]} if self.counts.get("STOPPED") else {}))
        if not stopped:
            self.bar.update(1)
        else:
            self.bar.refresh()

    def tick(self) -> None:
        """Redraw the bar on a terminal, its elapsed time and ETA moving on while trials run (called about once a
        second)."""
        if self.interactive:
            self.bar.refresh()

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()


def finishedTrials(study: Any, search_id: str) -> list[Any]:
    """:return: this command's finished trials, by number"""
    TrialState = importOptuna().trial.TrialState
    states = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
    return [t for t in study.get_trials(deepcopy=False, states=states) if t.user_attrs.get("search_id") == search_id]


def runWorkers(config: SearchConfig, study: Any, n_trials: int, workers: int, seed: int,
               progress: TrialProgress) -> int:
    """
    Run the trials in ``workers`` processes (this one when 1), all on the same storage.

    :param config: the search
    :param study: the study (read to follow the workers)
    :param n_trials: trials in all
    :param workers: processes
    :param seed: base seed of the samplers (worker i samples with seed + 7919 i)
    :param progress: the progress display
    :return: how many workers failed
    """
    workers = min(workers, n_trials)
    shares = [n_trials // workers + (1 if i < n_trials % workers else 0) for i in range(workers)]
    if workers == 1:
        runWorker(config, n_trials, seed, callbacks=[lambda _study, trial: progress.trialDone(trial)],
                  tick=progress.tick)  # (the bar's clock and ETA move while a trial runs, as with several workers)
        return 0

    context = multiprocessing.get_context("spawn")  # no fork of a process holding database connections
    processes = [context.Process(target=_workerMain, args=(config, share, seed + 7919 * index))
                 for index, share in enumerate(shares)]
    interrupted = False
    try:
        # a Ctrl-C while a worker imports reaches it once it runs, not mid-import (and this process after the starts)
        with stopSignalsBlocked():
            for process in processes:
                process.start()
        while any(process.is_alive() for process in processes):
            with ctrlCDeferred():  # (a stop is taken after the read)
                finished = finishedTrials(study, config.search_id)
            for trial in finished:
                progress.trialDone(trial)
            progress.tick()
            time.sleep(1.0)
    except KeyboardInterrupt:  # pass it on as SIGTERM (the workers ignore SIGINT): they stop their trials, failed
        interrupted = True
        for process in processes:
            if process.is_alive():
                os.kill(process.pid, signal.SIGTERM)
    finally:
        for process in processes:
            process.join(30)
            if process.is_alive():
                process.terminate()
                process.join()
    for trial in finishedTrials(study, config.search_id):
        progress.trialDone(trial)
    if interrupted:
        raise KeyboardInterrupt
    return sum(process.exitcode != 0 for process in processes)
