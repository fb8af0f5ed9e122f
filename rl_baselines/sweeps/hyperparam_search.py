"""``python -m rl_baselines.hyperparam_search``: search an algorithm's hyperparameters with Optuna.

    python -m rl_baselines.hyperparam_search --algo ppo2 --env MobileRobotGymEnv-v0 --srl-model ground_truth \\
        --optimizer tpe --pruner hyperband --n-trials 50 --num-timesteps 50000 [--workers 2] [any train flag]

The search space is the algorithm's ``getOptParam()``; hyperparameters fixed with a forwarded ``--hyperparam`` or
``--hyperparam-file`` are left out of it. Each trial is one ``python -m rl_baselines.train`` run in a subprocess,
its run folder under ``<log-dir>/hyperparam_search/<study>/trial_NNNN/``. A subprocess rather than a call in this
process: a crashing or leaking trial (PyBullet, SubprocVecEnv children, GPU memory) cannot take the search down,
every trial is an ordinary run folder that ``replay`` tools read, and a pruned trial is stopped by killing its
process group. The pruner's intermediate values are read from the run's monitor CSVs as they grow: at the env steps
``T*k/n`` (``--n-evaluations`` n), the mean reward of the last ``--eval-episodes`` episodes finished by then (a
value is reported only once no episode can still end before its step, so it does not depend on polling speed).
The objective is that mean at the end of the run; with a forwarded ``--eval-freq N`` (train's deterministic
evaluations) it is the mean of the run's last evaluation instead, ``--eval-episodes`` deterministic episodes
(read from the trial's evaluations.npz), while the pruner still reads the training episodes.

The study lives in an Optuna storage: SQLite at ``<log-dir>/hyperparam_search/<study>.db`` by default, or any
SQLAlchemy URL (``--storage postgresql://...``) so that commands on several machines work on one study.
``--workers K`` runs K processes on the storage. Outputs, beside the trial folders: ``best_hyperparams.yaml``
(``train --hyperparam-file`` reads it), ``search.png`` (optimisation history and parameter importances) and
``trials.csv``.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import glob
import math
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import yaml
from filelock import FileLock  # a dependency of torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from tqdm import tqdm

from rl_baselines.core.registry import failed_plugins, registered_rl
from rl_baselines.core.run_folder import ARGS_FILE, RunFolder
from rl_baselines.runs import train
from rl_baselines.runs.evaluation import readEvaluations
from rl_baselines.runs.monitor_files import MonitorTail
from rl_baselines.runs.train import DEFAULT_ALGO, DEFAULT_ENV
from rl_baselines.sweeps.sweep import parseAlgoArgs
from srl_toolbox.cli import (
    CLIParser,
    UsageError,
    addProgressArgument,
    addSeedArgument,
    nonNegativeInt,
    positiveInt,
    runCommand,
    seedNumber,
)
from srl_toolbox.files import atomicPath

OPTIMIZERS = ("tpe", "random", "grid")
PRUNERS = ("hyperband", "median", "none")
INSTALL_HINT = "pip install 'srl-toolbox[search]' (or: pip install 'optuna>=3')"
SEARCH_FOLDER = "hyperparam_search"
# Seconds between two reads of a running trial's monitor files.
POLL_S = 0.5
# SQLite answers "database is locked" when another process writes longer than this (Optuna issue #820).
SQLITE_TIMEOUT_S = 60.0
STUDY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# A study remembers what it was created for; a command for another setting must use another study.
STUDY_KEYS = ("algo", "env", "srl_model", "num_timesteps", "eval_episodes")


class TrialFailed(Exception):
    """A trial's train run failed (non-zero exit) or finished no episode: the trial is recorded as failed."""


@dataclasses.dataclass
class SearchConfig:
    """Everything a worker process needs (plain values, so that it pickles for ``multiprocessing`` spawn)."""

    algo: str
    env: str
    srl_model: str
    seed: int
    num_timesteps: int
    optimizer: str
    pruner: str
    storage_url: str
    study_name: str
    output_dir: str
    train_argv: list[str]
    fixed: dict[str, str]
    space: dict[str, tuple]
    eval_episodes: int
    n_evaluations: int
    n_startup_trials: int
    grid_points: int
    search_id: str
    evaluate: bool = False

    @property
    def reportSteps(self) -> list[int]:
        """The env steps at which a trial reports its intermediate value to the pruner."""
        steps = sorted({max(1, self.num_timesteps * k // self.n_evaluations) for k in range(1, self.n_evaluations + 1)})
        return steps


def searchParser() -> CLIParser:
    """
    :return: the parser of the search's own flags (any other flag is forwarded to rl_baselines.train)
    """

    parser = CLIParser(prog="python -m rl_baselines.hyperparam_search", allow_abbrev=False,
                       description="Search an algorithm's hyperparameters (its getOptParam space) with Optuna.",
                       epilog="Any other flag goes to rl_baselines.train for every trial (for example -c, --num-cpu 2, "
                              "--hyperparam n_steps:64 to fix a value and leave it out of the search).")
    parser.add_argument("--algo", default=DEFAULT_ALGO, help=f"algorithm with a search space [{DEFAULT_ALGO}]")
    parser.add_argument("--algo-args", action="append", default=[], metavar="ALGO:FLAGS",
                        help="train flags for --algo, in the pipeline's per-algorithm form (reinforce:--pg-lr=0.01); "
                             "the same as giving FLAGS directly")
    parser.add_argument("--env", default=DEFAULT_ENV, help=f"env id [{DEFAULT_ENV}]")
    parser.add_argument("--srl-model", default="raw_pixels", help="observation / SRL model [raw_pixels]")
    addSeedArgument(parser, help="seed of every trial's run [0]")
    parser.add_argument("--sampler-seed", type=seedNumber, default=None,
                        help="seed of the sampler, mixed with the number of trials already in the study; give each "
                             "command sharing a study its own [--seed]")
    parser.add_argument("--log-dir", default="logs/", help="root folder; the search writes below "
                        f"<log-dir>/{SEARCH_FOLDER}/ [logs/]")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="tpe",
                        help="sampler: tpe (Bayesian, as hyperopt), random, grid [tpe]")
    parser.add_argument("--pruner", choices=PRUNERS, default="hyperband",
                        help="stop bad trials early from their intermediate rewards [hyperband]")
    parser.add_argument("--n-trials", type=positiveInt, default=20, help="trials this command runs, all workers "
                        "together [20]")
    parser.add_argument("--num-timesteps", type=positiveInt, default=int(1e5), help="env steps per trial [1e5]")
    parser.add_argument("--storage", default=None, metavar="URL", help="Optuna storage (SQLAlchemy URL) "
                        f"[sqlite:///<log-dir>/{SEARCH_FOLDER}/<study>.db]")
    parser.add_argument("--study-name", default=None, help="study to create or continue "
                        "[<algo>_<env>_<srl-model>_<optimizer>]")
    parser.add_argument("--workers", type=positiveInt, default=1, help="processes running trials in parallel [1]")
    parser.add_argument("--eval-episodes", type=positiveInt, default=10,
                        help="the objective is the mean reward of the last N episodes; with a forwarded --eval-freq, "
                             "of the run's last evaluation, N deterministic episodes [10]")
    parser.add_argument("--n-evaluations", type=positiveInt, default=10,
                        help="intermediate rewards reported to the pruner per trial [10]")
    parser.add_argument("--n-startup-trials", type=nonNegativeInt, default=5,
                        help="random trials before TPE models the results, and completed trials before the median "
                             "pruner prunes [5]")
    parser.add_argument("--grid-points", type=positiveInt, default=3,
                        help="grid optimizer: values tried per int/float hyperparameter [3]")
    addProgressArgument(parser)
    return parser


def importOptuna() -> Any:
    """
    :return: the optuna module
    :raises UsageError: Optuna is not installed (with the command that installs it)
    """
    try:
        import optuna  # optional dependency (pip install srl-toolbox[search])
    except ImportError:
        raise UsageError(f"hyperparam_search needs Optuna, which is not installed: {INSTALL_HINT}") from None
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # this command prints one line per trial itself
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    return optuna


# --- search space ------------------------------------------------------------------------------------------------


def checkSpace(algo: str, space: Any) -> None:
    """
    :param algo: the algorithm's name (for messages)
    :param space: its ``getOptParam()``: ``{name: (int|float, (low, high)[, "log"])}`` or ``{name: (list, choices)}``
    :raises UsageError: an entry does not follow that format
    """
    if not isinstance(space, dict):
        raise UsageError(f"--algo {algo}: getOptParam() returned {type(space).__name__}, not a dict")
    for name, spec in space.items():
        bad = f"--algo {algo}: search space entry {name!r}: {spec!r} is not "
        if not isinstance(spec, tuple) or len(spec) not in (2, 3) or spec[0] not in (int, float, list):
            raise UsageError(bad + "(int|float, (low, high)[, 'log']) or (list, [choices])")
        if spec[0] is list:
            if not spec[1] or not all(v is None or isinstance(v, (bool, int, float, str)) for v in spec[1]):
                raise UsageError(bad + "a non-empty list of numbers/strings/bools")
            continue
        low, high = spec[1]
        log = len(spec) == 3
        if log and spec[2] != "log" or not low <= high or log and low <= 0:
            raise UsageError(bad + "a range low <= high (low > 0 on a log scale)")


def gridValues(spec: tuple, points: int) -> list:
    """
    :param spec: one search-space entry
    :param points: values per int/float range
    :return: the values the grid optimizer tries (evenly spaced, geometrically for a log scale)
    """
    if spec[0] is list:
        return list(spec[1])
    low, high = spec[1]
    values = np.geomspace(low, high, points) if len(spec) == 3 else np.linspace(low, high, points)
    if spec[0] is int:
        return sorted({int(round(v)) for v in values})
    return sorted({float(v) for v in values})


def suggestParams(trial: Any, space: dict[str, tuple]) -> dict[str, Any]:
    """
    :param trial: an Optuna trial
    :param space: the search space
    :return: the values the sampler chose, by name
    """
    params = {}
    for name, spec in space.items():
        if spec[0] is list:
            params[name] = trial.suggest_categorical(name, list(spec[1]))
        elif spec[0] is int:
            params[name] = trial.suggest_int(name, int(spec[1][0]), int(spec[1][1]), log=len(spec) == 3)
        else:
            params[name] = trial.suggest_float(name, float(spec[1][0]), float(spec[1][1]), log=len(spec) == 3)
    return params


def formatValue(value: Any) -> str:
    """:return: ``value`` as ``--hyperparam`` writes it (repr keeps every digit of a float)"""
    return repr(value) if isinstance(value, float) else str(value)


# --- storage and study -------------------------------------------------------------------------------------------


def _sqlitePath(url: str) -> str | None:
    """:return: the database file of a ``sqlite:///`` URL, None for another kind or an in-memory database"""
    from sqlalchemy.engine import make_url  # installed with optuna (optional)

    parsed = make_url(url)
    return parsed.database if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:") \
        else None


def openStorage(url: str) -> Any:
    """
    Open an Optuna RDB storage; SQLite gets a long lock timeout, and its schema is created under a file lock so that
    several processes opening a new database at once do not race (Optuna issues #820, #5385).

    :param url: SQLAlchemy URL
    :return: an ``optuna.storages.RDBStorage``
    """
    optuna = importOptuna()
    path = _sqlitePath(url)
    if path is None:
        return optuna.storages.RDBStorage(url)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with _fileLock(path):
        return optuna.storages.RDBStorage(url, engine_kwargs={"connect_args": {"timeout": SQLITE_TIMEOUT_S}})


def _fileLock(database: str | None) -> Any:
    """:return: an exclusive lock beside an SQLite database file (a no-op context for another storage)"""
    if database is None:
        return contextlib.nullcontext()

    return FileLock(f"{database}.lock")


def samplerSeed(base: int, known: int) -> int:
    """
    :param base: --sampler-seed (default --seed)
    :param known: trials already in the study when the command starts
    :return: the sampler's seed, mixed from both: a plain sum let two commands on one study (--sampler-seed 0 and 1)
        sample the same hyperparameters when one started one trial after the other (0 + 1 == 1 + 0)
    """

    # below 2**31: worker i adds 7919 i, and numpy's generators take seeds below 2**32
    return int(np.random.SeedSequence([base, known]).generate_state(1)[0]) >> 1


def makeSampler(config: SearchConfig, seed: int) -> Any:
    """
    :param config: the search
    :param seed: the sampler's seed
    :return: the Optuna sampler of ``config.optimizer``
    """
    optuna = importOptuna()
    if config.optimizer == "grid":
        grid = {name: gridValues(spec, config.grid_points) for name, spec in config.space.items()}
        return optuna.samplers.GridSampler(grid, seed=seed)
    if config.optimizer == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    # constant_liar: parallel workers do not all sample next to the same running trial.
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=config.n_startup_trials, constant_liar=True)


def makePruner(config: SearchConfig) -> Any:
    """
    :param config: the search
    :return: the Optuna pruner of ``config.pruner`` (steps are env steps)
    """
    optuna = importOptuna()
    if config.pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=config.reportSteps[0], max_resource=config.num_timesteps,
                                              reduction_factor=3)
    if config.pruner == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=config.n_startup_trials, n_warmup_steps=0)
    return optuna.pruners.NopPruner()


def loadStudy(config: SearchConfig, seed: int = 0) -> Any:
    """
    :param config: the search
    :param seed: the sampler's seed
    :return: the study (it must exist), with this process's sampler and pruner
    """
    optuna = importOptuna()
    return optuna.load_study(study_name=config.study_name, storage=openStorage(config.storage_url),
                             sampler=makeSampler(config, seed), pruner=makePruner(config))


def createStudy(config: SearchConfig) -> Any:
    """
    Create the study, or continue it when it exists and was made for the same setting.

    :param config: the search
    :return: the study
    :raises UsageError: the storage cannot be opened, or the study holds another setting's trials
    """
    optuna = importOptuna()
    path = _sqlitePath(config.storage_url)
    try:
        storage = openStorage(config.storage_url)
        with _fileLock(path):
            study = optuna.create_study(storage=storage, study_name=config.study_name, direction="maximize",
                                        load_if_exists=True)
    except (ImportError, ValueError, OSError) as error:
        raise UsageError(f"--storage {config.storage_url}: {str(error).splitlines()[0]}") from None
    except Exception as error:  # SQLAlchemy's OperationalError and friends: unreachable server, bad file
        if type(error).__module__.startswith("sqlalchemy"):
            raise UsageError(f"--storage {config.storage_url}: {str(error).splitlines()[0]}") from None
        raise
    wanted = {key: getattr(config, key) for key in STUDY_KEYS}
    recorded = {key: study.user_attrs[key] for key in STUDY_KEYS if key in study.user_attrs}
    if recorded and recorded != wanted:
        differ = ", ".join(f"{key} {recorded.get(key)!r} (asked {wanted[key]!r})" for key in STUDY_KEYS
                           if recorded.get(key) != wanted[key])
        raise UsageError(f"study {config.study_name!r} in {config.storage_url} was made for {differ}; "
                         f"choose another --study-name")
    if not recorded:
        for key, value in wanted.items():
            study.set_user_attr(key, value)
    return study


# --- one trial ---------------------------------------------------------------------------------------------------


class _Reporter:
    """Reports a trial's intermediate rewards at fixed env steps as its monitor files grow."""

    def __init__(self, trial: Any, steps: list[int], eval_episodes: int) -> None:
        self.trial = trial
        self.steps = steps
        self.eval_episodes = eval_episodes
        self.next = 0

    def update(self, timesteps: np.ndarray, rewards: Sequence[float], finished: bool) -> int | None:
        """
        :param timesteps: cumulative env steps at the end of each finished episode
        :param rewards: the episodes' rewards
        :param finished: the run has ended (no episode can still come)
        :return: the step at which the pruner stopped the trial, or None
        """
        while self.next < len(self.steps):
            step = self.steps[self.next]
            if not finished and (len(timesteps) == 0 or timesteps[-1] < step):
                break  # an episode ending before ``step`` may still be written
            self.next += 1
            known = int(np.searchsorted(timesteps, step, side="right"))
            if known == 0:
                continue
            self.trial.report(float(np.mean(rewards[:known][-self.eval_episodes:])), step)
            if self.trial.should_prune():
                return step
        return None


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


def _lastLine(path: str) -> str:
    """:return: the last non-empty line of a log file (the error of a failed run)"""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


class TrialObjective:
    """
    The Optuna objective: one train run per trial, in a subprocess.

    :param config: the search
    """

    def __init__(self, config: SearchConfig) -> None:
        self.config = config

    def trainCommand(self, run_root: str, number: int, params: dict[str, Any]) -> list[str]:
        """
        :param run_root: the train command's --log-dir
        :param number: the trial number
        :param params: the sampled hyperparameters
        :return: the train command line
        """
        c = self.config
        command = [sys.executable, "-m", "rl_baselines.train", *c.train_argv, "--algo", c.algo, "--env", c.env,
                   "--srl-model", c.srl_model, "--seed", str(c.seed), "--num-timesteps", str(c.num_timesteps),
                   "--log-dir", run_root, "--tag", f"trial{number}", "--no-vis", "--no-progress"]
        if c.evaluate:
            command += ["--eval-episodes", str(c.eval_episodes)]
        if params:  # after the forwarded ones: train's --hyperparam keeps the last value of a name
            command += ["--hyperparam", *(f"{name}:{formatValue(value)}" for name, value in params.items())]
        return command

    def __call__(self, trial: Any) -> float:
        """
        :param trial: the Optuna trial
        :return: the mean reward of the last ``eval_episodes`` episodes of the run (of its last evaluation when the
            search evaluates)
        :raises optuna.TrialPruned: the pruner stopped it
        :raises TrialFailed: the run failed or finished no episode
        """
        import optuna  # optional dependency (pip install srl-toolbox[search])


        params = suggestParams(trial, self.config.space)
        trial.set_user_attr("search_id", self.config.search_id)
        trial.set_user_attr("fixed_hyperparams", self.config.fixed)
        folder = _trialFolder(self.config.output_dir, trial.number)
        trial.set_user_attr("trial_dir", folder)
        log_path = os.path.join(folder, "train.log")
        with open(log_path, "w", encoding="utf-8") as log:
            child = subprocess.Popen(self.trainCommand(folder, trial.number, params), stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        reporter = _Reporter(trial, self.config.reportSteps, self.config.eval_episodes)
        tail = None
        try:
            while True:
                finished = child.poll() is not None  # checked before reading: a finished run's files are complete
                if tail is None:
                    found = glob.glob(os.path.join(glob.escape(folder), "*", "*", "*", "*", ARGS_FILE))
                    if found:
                        trial.set_user_attr("run_dir", os.path.dirname(found[0]))
                        tail = MonitorTail(RunFolder(os.path.dirname(found[0])).monitor_dir)
                if tail is not None:
                    tail.poll()
                timesteps = tail.timesteps if tail is not None else np.zeros(0, dtype=np.int64)
                rewards = tail.rewards if tail is not None else []
                if finished and child.returncode != 0:
                    break  # a crash is a failed trial, not a pruned one
                pruned_at = reporter.update(timesteps, rewards, finished)
                if pruned_at is not None:
                    raise optuna.TrialPruned(f"pruned at step {pruned_at}")
                if finished:
                    break
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            trial.set_user_attr("error", "interrupted")
            raise
        finally:
            _stopChild(child)
            if tail is not None:
                tail.close()
        if child.returncode != 0:
            message = f"train exited with code {child.returncode}: {_lastLine(log_path)} (log: {log_path})"
            trial.set_user_attr("error", message)
            raise TrialFailed(message)
        if not rewards:
            message = f"no episode finished within {self.config.num_timesteps} steps; raise --num-timesteps"
            trial.set_user_attr("error", message)
            raise TrialFailed(message)
        if self.config.evaluate:
            evaluations = readEvaluations(trial.user_attrs["run_dir"])
            if evaluations is None or evaluations["timesteps"].size == 0:
                message = f"the run wrote no evaluation (evaluations.npz) in {trial.user_attrs['run_dir']}"
                trial.set_user_attr("error", message)
                raise TrialFailed(message)
            return float(np.mean(evaluations["results"][-1]))
        return float(np.mean(rewards[-self.config.eval_episodes:]))


# --- workers and progress ----------------------------------------------------------------------------------------


def runWorker(config: SearchConfig, n_trials: int, seed: int, callbacks: Sequence[Any] = ()) -> None:
    """
    Run ``n_trials`` trials of the study in this process.

    :param config: the search
    :param n_trials: how many
    :param seed: the sampler's seed
    :param callbacks: Optuna callbacks ``(study, frozen_trial)`` called after each trial
    """
    study = loadStudy(config, seed)
    study.optimize(TrialObjective(config), n_trials=n_trials, catch=(TrialFailed,), callbacks=list(callbacks))


def _workerMain(config: SearchConfig, n_trials: int, seed: int) -> None:
    """Entry point of a ``--workers`` process."""
    try:
        runWorker(config, n_trials, seed)
    except KeyboardInterrupt:
        sys.exit(130)


class TrialProgress:
    """
    One progress bar over this command's trials, and one line per finished trial.

    :param total: trials this command runs
    :param enabled: show the bar
    """

    def __init__(self, total: int, enabled: bool) -> None:
        self.bar = tqdm(total=total, unit="trial", desc="trials", disable=not enabled, dynamic_ncols=True)
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
        self.counts[state] = self.counts.get(state, 0) + 1
        if state == "COMPLETE":
            self.best = max(self.best, trial.value)
            params = ", ".join(f"{name}={formatValue(value)}" for name, value in trial.params.items())
            line = f"trial {trial.number}: mean reward {trial.value:.2f} ({params})"
        elif state == "PRUNED":
            step = trial.last_step
            value = trial.intermediate_values.get(step, float("nan")) if step is not None else float("nan")
            line = f"trial {trial.number}: pruned at step {step} (mean reward then {value:.2f})"
        else:
            line = f"trial {trial.number}: failed: {trial.user_attrs.get('error', 'see its train.log')}"
        self.bar.write(line)
        self.bar.set_postfix(best=f"{self.best:.2f}", pruned=self.counts["PRUNED"], failed=self.counts["FAIL"])
        self.bar.update(1)

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()


def _finishedTrials(study: Any, search_id: str) -> list[Any]:
    """:return: this command's finished trials, by number"""
    from optuna.trial import TrialState  # optional dependency (srl-toolbox[search])

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
        runWorker(config, n_trials, seed, callbacks=[lambda _study, trial: progress.trialDone(trial)])
        return 0

    context = multiprocessing.get_context("spawn")  # no fork of a process holding database connections
    processes = [context.Process(target=_workerMain, args=(config, share, seed + 7919 * index))
                 for index, share in enumerate(shares)]
    for process in processes:
        process.start()
    interrupted = False
    try:
        while any(process.is_alive() for process in processes):
            for trial in _finishedTrials(study, config.search_id):
                progress.trialDone(trial)
            time.sleep(1.0)
    except KeyboardInterrupt:  # the workers got it too: they stop their trials and record them as failed
        interrupted = True
    finally:
        for process in processes:
            process.join(30)
            if process.is_alive():
                process.terminate()
                process.join()
    for trial in _finishedTrials(study, config.search_id):
        progress.trialDone(trial)
    if interrupted:
        raise KeyboardInterrupt
    return sum(process.exitcode != 0 for process in processes)


# --- outputs -----------------------------------------------------------------------------------------------------


def writeBestParams(path: str, study: Any, config: SearchConfig, algo_class: type) -> dict[str, Any]:
    """
    Write the best trial's hyperparameters (the fixed ones included) as YAML for ``train --hyperparam-file``.

    :param path: the YAML file
    :param study: the study (at least one completed trial)
    :param config: the search
    :param algo_class: the algorithm (types the fixed values)
    :return: the hyperparameters written
    """


    best = study.best_trial
    fixed = algo_class.parserHyperParam(best.user_attrs.get("fixed_hyperparams", {}))
    values = {**fixed, **best.params}
    header = (f"# Best trial {best.number} of Optuna study {config.study_name} ({config.storage_url}):\n"
              f"# mean reward of the last {config.eval_episodes} episodes {best.value:.4f} after "
              f"{config.num_timesteps} steps of {config.algo} on {config.env} ({config.srl_model}).\n"
              f"# python -m rl_baselines.train --algo {config.algo} --env {config.env} --srl-model "
              f"{config.srl_model} --hyperparam-file {path}\n")
    with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8") as handle:
        handle.write(header)
        yaml.safe_dump(values, handle, sort_keys=True, default_flow_style=False)
    return values


def writeTrialsCsv(path: str, study: Any) -> None:
    """
    :param path: the CSV file: one row per trial (number, state, value, last reported step, duration, run folder,
        error, then one column per hyperparameter)
    :param study: the study
    """

    trials = study.get_trials(deepcopy=False)
    names = sorted({name for trial in trials for name in trial.params})
    with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["number", "state", "value", "last_step", "duration_s", "run_dir", "error", *names])
        for trial in trials:
            duration = trial.duration.total_seconds() if trial.duration is not None else ""
            writer.writerow([trial.number, trial.state.name.lower(), "" if trial.value is None else trial.value,
                             "" if trial.last_step is None else trial.last_step, duration,
                             trial.user_attrs.get("run_dir", ""), trial.user_attrs.get("error", ""),
                             *(formatValue(trial.params[n]) if n in trial.params else "" for n in names)])


def saveSearchPlot(path: str, study: Any, title: str) -> None:
    """
    PNG with the optimisation history (value per trial, best so far, pruned trials at their last intermediate
    value) and the parameter importances (PED-ANOVA, which needs no scikit-learn).

    :param path: the PNG file
    :param study: the study
    :param title: the figure's title
    """
    import optuna  # optional dependency (pip install srl-toolbox[search])
    from optuna.trial import TrialState  # optional dependency (srl-toolbox[search])


    figure = Figure(figsize=(13, 5), dpi=100)
    FigureCanvasAgg(figure)
    history, importance = figure.subplots(1, 2)
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    pruned = [t for t in study.get_trials(deepcopy=False, states=(TrialState.PRUNED,)) if t.last_step is not None]
    if complete:
        numbers = [t.number for t in complete]
        values = [t.value for t in complete]
        history.scatter(numbers, values, color="tab:blue", label="completed")
        history.step(numbers, np.maximum.accumulate(values), where="post", color="tab:red", label="best so far")
    if pruned:
        history.scatter([t.number for t in pruned], [t.intermediate_values[t.last_step] for t in pruned],
                        color="gray", marker="x", label="pruned (last intermediate value)")
    if complete or pruned:
        history.legend(loc="best")
    history.set_xlabel("trial")
    history.xaxis.set_major_locator(MaxNLocator(integer=True))
    history.set_ylabel("mean episode reward")
    history.set_title("optimisation history")
    history.grid(True, alpha=0.3)
    importance.set_title("hyperparameter importance")
    importances: dict[str, float] = {}
    if len(complete) >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # PED-ANOVA needs no scikit-learn (Optuna's default from 5.0; older versions default to fANOVA, which does)
            evaluator = getattr(optuna.importance, "PedAnovaImportanceEvaluator", None)
            try:
                importances = optuna.importance.get_param_importances(
                    study, evaluator=evaluator() if evaluator is not None else None)
            except (ImportError, ValueError, RuntimeError, ZeroDivisionError):
                importances = {}
    if importances:
        names = list(importances)[::-1]
        importance.barh(names, [importances[n] for n in names], color="tab:green")
        importance.set_xlabel("importance (PED-ANOVA, normalised)")
    else:
        reason = "needs two completed trials" if len(complete) < 2 else "not computable (scikit-learn missing?)"
        importance.text(0.5, 0.5, reason, ha="center", va="center", transform=importance.transAxes)
    figure.suptitle(title)
    figure.tight_layout()
    with atomicPath(path) as tmp_path:
        figure.savefig(tmp_path, format="png")


# --- command -----------------------------------------------------------------------------------------------------


def prepare(args: argparse.Namespace, train_argv: list[str]) -> tuple[SearchConfig, type]:
    """
    Check every input before anything is written.

    :param args: the search's parsed flags
    :param train_argv: the flags forwarded to train
    :return: (the search, the algorithm class)
    :raises UsageError: on any bad input
    """

    if args.algo not in registered_rl:
        skipped = f"; plugins that failed to load: {', '.join(sorted(failed_plugins))}" if failed_plugins else ""
        raise UsageError(f"unknown --algo {args.algo!r}; valid choices: {', '.join(registered_rl)}{skipped}")
    algo_class = registered_rl[args.algo][0]
    space = algo_class.getOptParam()
    if not space:
        searchable = [name for name, (cls, _, _) in registered_rl.items() if cls.getOptParam()]
        raise UsageError(f"--algo {args.algo} has no search space (getOptParam); algorithms with one: "
                         f"{', '.join(searchable)}")
    checkSpace(args.algo, space)

    train_argv = [*train_argv, *parseAlgoArgs(getattr(args, "algo_args", []), [args.algo]).get(args.algo, [])]
    if any(item == "--tag" or item.startswith("--tag=") for item in train_argv):
        raise UsageError("--tag is set by hyperparam_search for each trial (trial<N>)")
    shared = ["--algo", args.algo, "--env", args.env, "--srl-model", args.srl_model, "--seed", str(args.seed),
              "--num-timesteps", str(args.num_timesteps)]
    try:
        train_args = algo_class.customArguments(train.baseParser()).parse_args([*train_argv, *shared])
    except UsageError as error:
        raise UsageError(f"train flags: {error}") from None
    train.validate(train_args, registered_rl)
    fixed = train.hyperparamStrings(train_args)
    space = {name: spec for name, spec in space.items() if name not in fixed}
    if not space:
        raise UsageError("every hyperparameter of the search space is fixed by --hyperparam/--hyperparam-file; "
                         "nothing to search")
    if args.n_evaluations > args.num_timesteps:
        raise UsageError(f"--n-evaluations {args.n_evaluations} is more than --num-timesteps {args.num_timesteps}")
    if train_args.eval_freq > args.num_timesteps:
        raise UsageError(f"--eval-freq {train_args.eval_freq} is more than --num-timesteps {args.num_timesteps}: no "
                         f"trial would evaluate")
    study_name = args.study_name or f"{args.algo}_{args.env}_{args.srl_model}_{args.optimizer}"
    if not STUDY_NAME.match(study_name):
        raise UsageError(f"--study-name {study_name!r}: use letters, digits, '.', '_' and '-' only")
    root = os.path.join(args.log_dir, SEARCH_FOLDER)
    storage_url = args.storage or f"sqlite:///{os.path.abspath(os.path.join(root, study_name + '.db'))}"
    try:
        from sqlalchemy.engine import make_url  # installed with optuna (optional)

        make_url(storage_url)
    except ImportError:
        raise UsageError(f"hyperparam_search needs Optuna, which is not installed: {INSTALL_HINT}") from None
    except Exception as error:  # sqlalchemy.exc.ArgumentError
        raise UsageError(f"--storage {storage_url!r} is not a database URL ({error})") from None
    config = SearchConfig(
        algo=args.algo, env=args.env, srl_model=args.srl_model, seed=args.seed, num_timesteps=args.num_timesteps,
        optimizer=args.optimizer, pruner=args.pruner, storage_url=storage_url, study_name=study_name,
        output_dir=os.path.abspath(os.path.join(root, study_name)), train_argv=list(train_argv), fixed=fixed,
        space=space, eval_episodes=args.eval_episodes, n_evaluations=args.n_evaluations,
        n_startup_trials=args.n_startup_trials, grid_points=args.grid_points, search_id=uuid.uuid4().hex,
        evaluate=train_args.eval_freq > 0)
    return config, algo_class


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code: 0 when at least one trial of the study completed
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args, train_argv = searchParser().parse_known_args(argv)
    importOptuna()
    config, algo_class = prepare(args, train_argv)
    study = createStudy(config)
    known = len(study.trials)
    print(f"Study {config.study_name} ({config.storage_url}): {known} earlier trials; searching "
          f"{', '.join(config.space)}", flush=True)
    progress = TrialProgress(args.n_trials, enabled=not args.no_progress)
    interrupted = False
    try:
        sampler_seed = samplerSeed(args.seed if args.sampler_seed is None else args.sampler_seed, known)
        failed_workers = runWorkers(config, study, args.n_trials, args.workers, sampler_seed, progress)
    except KeyboardInterrupt:
        interrupted, failed_workers = True, 0
        for trial in _finishedTrials(study, config.search_id):  # the interrupted ones too
            progress.trialDone(trial)
    finally:
        progress.close()
    return _finish(study, config, algo_class, progress, failed_workers, interrupted)


def _finish(study: Any, config: SearchConfig, algo_class: type, progress: TrialProgress, failed_workers: int,
            interrupted: bool) -> int:
    """Write the outputs and print the summary; :return: the exit code"""
    from optuna.trial import TrialState  # optional dependency (srl-toolbox[search])

    counts = progress.counts
    print(f"{'Interrupted' if interrupted else 'Done'}: {counts['COMPLETE']} completed, {counts['PRUNED']} pruned, "
          f"{counts['FAIL']} failed trials; the study holds {len(study.trials)}")
    if failed_workers:
        print(f"warning: {failed_workers} worker process(es) ended with an error", file=sys.stderr)
    os.makedirs(config.output_dir, exist_ok=True)
    writeTrialsCsv(os.path.join(config.output_dir, "trials.csv"), study)
    plot_path = os.path.join(config.output_dir, "search.png")
    saveSearchPlot(plot_path, study, f"{config.study_name}: {config.algo} on {config.env} ({config.srl_model})")
    print(f"Plot: {plot_path}")
    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        print("No completed trial, so no best hyperparameters; see the trials' train.log in "
              f"{config.output_dir}", file=sys.stderr)
        return 130 if interrupted else 1
    yaml_path = os.path.join(config.output_dir, "best_hyperparams.yaml")
    values = writeBestParams(yaml_path, study, config, algo_class)
    best = study.best_trial
    print(f"Best trial {best.number}: mean reward {best.value:.2f} with "
          f"{', '.join(f'{k}={formatValue(v)}' for k, v in values.items())}")
    print(f"Best hyperparameters: {yaml_path}")
    print(f"  python -m rl_baselines.train --algo {config.algo} --env {config.env} --srl-model {config.srl_model} "
          f"--hyperparam-file {yaml_path}")
    return 130 if interrupted else (1 if failed_workers else 0)


if __name__ == "__main__":
    runCommand(main)
