"""The Optuna side of ``rl_baselines.hyperparam_search``: the search's settings, the search space, the storage and the
sampler and pruner a process opens the study with.

A search space is an algorithm's ``getOptParam()``, ``{name: (int|float, (low, high)[, "log"])}`` or
``{name: (list, choices)}``; :func:`checkSpace` refuses any other entry before Optuna sees it. A study lives in an
Optuna RDB storage: SQLite (opened with a long lock timeout, its schema created under a file lock, so that several
processes can share one file) or any SQLAlchemy URL. What a study records, and the command that creates or continues
it, are in :mod:`rl_baselines.sweeps.search_record` (above this module: it imports this one, never the reverse); a
``--workers`` process only loads the study (:func:`loadStudy`). Optuna (and SQLAlchemy, installed with it) is an
optional dependency (``srl-toolbox[search]``), imported when a function needs it, through :func:`importOptuna`, which
names the install command when it is missing.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from filelock import FileLock  # a dependency of torch

from rl_baselines.core.hyperparams import normalisationRefusal
from srl_toolbox.cli import UsageError
from srl_toolbox.locks import lockPathFor

OPTIMIZERS = ("tpe", "random", "grid")
PRUNERS = ("hyperband", "median", "none")
INSTALL_HINT = "pip install 'srl-toolbox[search]' (or: pip install 'optuna>=3')"
# SQLite answers "database is locked" when another process writes longer than this (Optuna issue #820).
SQLITE_TIMEOUT_S = 60.0
# A running trial records a heartbeat this often (seconds); one whose heartbeat is older than the grace period (its
# command killed, its machine lost) is marked failed when a trial of the study next starts (Optuna's heartbeat), so
# that it does not stay running in the study for ever (a pending point TPE's constant liar keeps avoiding). The grace
# period outlasts two heartbeats delayed by SQLite's lock timeout.
HEARTBEAT_S = 30
HEARTBEAT_GRACE_S = 150
# the error of a failed trial that recorded none of its own: failed that way
STALE_TRIAL_ERROR = "no result recorded: the command running it stopped (killed, or its machine lost)"


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
    train_argv: list[str]  # as given: every trial's command repeats them
    fixed: dict[str, str]
    space: dict[str, tuple]
    eval_episodes: int
    n_evaluations: int
    n_startup_trials: int
    grid_points: int
    search_id: str
    eval_freq: int = 0  # train's --eval-freq, forwarded: each trial evaluates every eval_freq steps (0: never)
    threads: int | None = None  # each trial's torch threads: its share of the cores (None: train's own auto)
    num_cpu: int = 1  # each trial's envs (train's --num-cpu)
    # each trial steps its envs in its training process (--vec-env dummy added to its command): a trial left one core
    # whose envs would step in workers by --vec-env auto, as a sweep's run (rl_baselines.sweeps.pipeline.localLayout)
    envs_in_process: bool = False
    run_envs: int = 0  # the envs a trial's rollout steps all together: ppo1's processes times num_cpu (0: num_cpu)
    # what the forwarded train flags set, as the study compares them (JSON values; hyperparam_search.studySettings)
    train_settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    # each train setting's flag, as a user types it (``hp_gamma``: ``--gamma``), for the messages that name one
    setting_flags: dict[str, str] = dataclasses.field(default_factory=dict)
    # what a trial's rollout and minibatches are made of where it samples neither: n_steps and batch_size as train
    # resolves them (fixed or default), and what the algorithm normalises its advantages over (its
    # NORMALISED_ADVANTAGES): :func:`trialParams` fits the sampled values to them
    rollout_hyperparams: dict[str, Any] = dataclasses.field(default_factory=dict)
    normalised: str | None = None
    # where a trial's gradient_steps follows its sampled train_freq (an off-policy algorithm's
    # SEARCH_SUBSAMPLE_STEPS, gradient_steps not fixed): the subsample_steps values (more than one: sampled, as
    # SUBSAMPLE_STEPS in the space), else None (:func:`trialParams`)
    subsample_steps: list[int] | None = None
    # a sampled hyperparameter that cannot exceed another sampled one (the algorithm's SEARCH_AT_MOST: ars's
    # top_population, num_population): its bound's name; :func:`trialParams` caps it (:func:`fitSpaceToCaps`)
    at_most: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def evaluate(self) -> bool:
        """Each trial evaluates (a forwarded ``--eval-freq``): its objective comes from its evaluations."""
        return self.eval_freq > 0

    @property
    def trialFlags(self) -> list[str]:
        """The train flags every trial gets, but its folder, tag and sampled hyperparameters (``--no-vis`` and
        ``--no-progress`` aside, which change no result): they train the task the search optimised."""
        flags = [*self.train_argv, "--algo", self.algo, "--env", self.env, "--srl-model", self.srl_model,
                 "--seed", str(self.seed), "--num-timesteps", str(self.num_timesteps)]
        if self.evaluate:
            flags += ["--eval-episodes", str(self.eval_episodes)]
        return flags

    @property
    def reportSteps(self) -> Sequence[int]:
        """The env steps at which a trial may report an intermediate value to the pruner, increasing, the last one the
        step the objective is measured at: ``n_evaluations`` evenly spaced steps up to ``num_timesteps``, or, when the
        search evaluates, the multiples of ``eval_freq`` up to it (each evaluation is reported at the multiple it was
        due at; with more envs than ``eval_freq`` an evaluation can cover several multiples, which then get none)."""
        if self.evaluate:
            return range(self.eval_freq, self.num_timesteps + 1, self.eval_freq)
        return sorted({max(1, self.num_timesteps * k // self.n_evaluations) for k in range(1, self.n_evaluations + 1)})


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


# The hyperparameters that are an on-policy learner's steps per env between two updates (ppo1's the steps of each of
# its processes' envs): a trial whose first rollout passes the budget cannot learn within it
ROLLOUT_STEPS = ("n_steps", "timesteps_per_actorbatch")
# The rollouts a trial's budget must hold (a searched ROLLOUT_STEPS is cut to fit: :func:`fitSpaceToBudget`; a fixed
# one that does not fit is refused): with fewer, every episode scored would come before the first update
ROLLOUTS_IN_BUDGET = 2


def rolloutPastBudget(n_steps: Any, num_envs: int, budget: int) -> int | None:
    """
    :param n_steps: an on-policy trial's steps per env before each update (absent: None)
    :param num_envs: its envs (--num-cpu)
    :param budget: its env steps (--num-timesteps)
    :return: the steps of its first rollout (n_steps x envs) when the budget holds fewer than
        :data:`ROLLOUTS_IN_BUDGET` of them (the trial would be scored on episodes before its first update), else None
    """
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, float)):
        return None
    rollout = int(n_steps) * num_envs
    return rollout if rollout * ROLLOUTS_IN_BUDGET > budget else None


def _cutTo(spec: tuple, limit: int) -> tuple | None:
    """
    :param spec: a search-space entry of a number (checked: :func:`checkSpace`)
    :param limit: the largest value to keep
    :return: the entry with its values above ``limit`` left out (a range's high end lowered to it, a list's numbers
        above it dropped), None when none is left
    """
    if spec[0] is list:
        kept = [value for value in spec[1] if isinstance(value, bool) or not isinstance(value, (int, float))
                or value <= limit]
        return (list, kept) if kept else None
    low, high = spec[1]
    return (spec[0], (low, min(high, spec[0](limit))), *spec[2:]) if low <= limit else None


def _offered(spec: tuple) -> str:
    """:return: the values a search-space entry offers, as a message writes them (``1, 2`` or ``32..2048``)"""
    return ", ".join(map(str, spec[1])) if spec[0] is list else f"{spec[1][0]}..{spec[1][1]}"


def fitSpaceToBudget(algo: str, space: dict[str, tuple], budget: int, envs: int = 1) -> dict[str, tuple]:
    """
    :param algo: the algorithm's name (for messages)
    :param space: the search space (checked: :func:`checkSpace`)
    :param budget: each trial's env steps (--num-timesteps)
    :param envs: the envs a trial's rollout steps all together (--num-cpu, times ppo1's processes)
    :return: the space cut to the values with which a trial learns within the budget and is scored on what it
        learned, so that none is sampled that cannot: ``learning_starts`` (the steps an off-policy learner takes
        before it learns) below the budget, and an on-policy learner's steps per env between updates
        (:data:`ROLLOUT_STEPS`) at most ``budget // (ROLLOUTS_IN_BUDGET x envs)``: the budget holds two rollouts, so
        that its second half at least comes after an update (the objective's episodes and evaluations are its last
        ones within the budget; with one rollout they all came from the untrained policy, and trials differing only in
        what the update does scored alike); a range's high end is lowered, a list's values above it are dropped (a
        study's budget and envs are part of the setting it records, so its choices stay the same across its trials)
    :raises UsageError: the budget leaves none of one of these hyperparameters' values
    """
    fitted = dict(space)
    for name in ROLLOUT_STEPS:
        if name in space:
            fitted[name] = _cutTo(space[name], budget // (ROLLOUTS_IN_BUDGET * envs))
            if fitted[name] is None:
                rollouts = ROLLOUTS_IN_BUDGET * envs
                # fixing it is advice only where a value of at least 1 fits
                fixing = (f", or fix {name} with --hyperparam {name}:N (N x {envs} at most "
                          f"{budget // ROLLOUTS_IN_BUDGET})" if budget // rollouts >= 1 else "")
                raise UsageError(f"--num-timesteps {budget}: every {name} the search space of {algo} offers "
                                 f"({_offered(space[name])}) x {envs} env(s) makes a rollout past half of it, so no "
                                 f"trial would be scored after an update; give a larger --num-timesteps (at least "
                                 f"{rollouts} x the smallest){fixing}")
    if "learning_starts" in space:
        fitted["learning_starts"] = _cutTo(space["learning_starts"], budget - 1)
        if fitted["learning_starts"] is None:
            raise UsageError(f"--num-timesteps {budget}: every learning_starts the search space of {algo} offers "
                             f"({_offered(space['learning_starts'])}) is at or above it, so no trial would learn; give "
                             f"a larger --num-timesteps, or fix it below the budget with --hyperparam learning_starts:N")
    return fitted


def _raiseTo(spec: tuple, limit: int | float) -> tuple | None:
    """:return: a search-space entry of a number with its values below ``limit`` left out (a range's low end raised to
        it, a list's numbers below it dropped), None when none is left"""
    if spec[0] is list:
        kept = [value for value in spec[1] if isinstance(value, bool) or not isinstance(value, (int, float))
                or value >= limit]
        return (list, kept) if kept else None
    low, high = spec[1]
    return (spec[0], (max(low, spec[0](limit)), high), *spec[2:]) if limit <= high else None


def fitSpaceToCaps(algo: str, space: dict[str, tuple], at_most: Mapping[str, str],
                   values: Mapping[str, Any]) -> tuple[dict[str, tuple], dict[str, str]]:
    """
    :param algo: the algorithm's name (for messages)
    :param space: the search space, less the fixed hyperparameters (checked: :func:`checkSpace`)
    :param at_most: the algorithm's ``SEARCH_AT_MOST``: a hyperparameter's name, the name of the one it cannot exceed
        (train refuses a trial whose value does: ars's ``top_population`` above ``num_population``)
    :param values: every hyperparameter as a trial trains with it where it samples none (fixed or default)
    :return: (the space fitted so that no trial samples a pair train refuses, the pairs both sampled): where the bound
        is fixed, the capped hyperparameter's values above it are left out (:func:`_cutTo`); where the capped one is
        fixed, the bound's values below it; where both are sampled, :func:`trialParams` caps each trial's value
    :raises UsageError: a fixed value leaves none of the other's values
    """
    fitted, sampled = dict(space), {}
    for name, bound in at_most.items():
        if name in space and bound in space:
            sampled[name] = bound
            continue
        if name in space and isinstance(values.get(bound), (int, float)):
            fitted[name], kept, fixed = _cutTo(space[name], values[bound]), name, bound
        elif bound in space and isinstance(values.get(name), (int, float)):
            fitted[bound], kept, fixed = _raiseTo(space[bound], values[name]), bound, name
        else:
            continue
        if fitted[kept] is None:
            raise UsageError(f"{fixed} {values[fixed]}: every {kept} the search space of {algo} offers "
                             f"({_offered(space[kept])}) makes {name} exceed {bound}, which train refuses; fix "
                             f"{kept} with --hyperparam {kept}:N, or give another {fixed}")
    return fitted, sampled


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


# A trial's user attribute: the hyperparameters it trained with another value of than it sampled (batch_size cut to its
# rollout), or that it derived from those it sampled (gradient_steps from train_freq)
RUN_PARAMS = "run_params"
# A trial's user attribute, scored on training episodes: how many its objective averages, fewer than --eval-episodes
# when fewer ended within the budget
SCORED_EPISODES = "scored_episodes"
# A search-space entry that is no hyperparameter: what a trial's gradient_steps divides its train_freq by (the RL
# Zoo's dqn sampler); train never gets it, the trial's values and outputs leave it out (:func:`trialValues`)
SUBSAMPLE_STEPS = "subsample_steps"
# What a trial's pruned_before_start reason says when its first rollout passed the budget (not a refusal of train's)
ROLLOUT_PAST = "the first update comes after"


def _noLoneSample(rollout: int, batch_size: int) -> int | None:
    """
    :param rollout: the samples of a rollout (n_steps x envs)
    :param batch_size: a minibatch size of at most ``rollout``
    :return: the largest minibatch size from 2 to ``batch_size`` that leaves no last minibatch of 1 sample of the
        rollout (``batch_size`` itself when it leaves none), None when there is none
    """
    return next((size for size in range(batch_size, 1, -1) if size == rollout or rollout % size != 1), None)


def _fitLastMinibatch(params: dict[str, Any], merged: dict[str, Any], num_cpu: int) -> None:
    """
    Fit the sampled values of a learner that normalises the advantages of every minibatch, the last one too
    (``"every_minibatch"``), so that its rollout leaves no last minibatch of 1 sample (NaN): a sampled ``batch_size``
    is lowered to the next size that leaves none (:func:`_noLoneSample`: 32 of a 65-step rollout trains as 31), else a
    sampled ``n_steps`` (``batch_size`` fixed) is lowered by 1, which leaves none (its rollout then leaves 1 - num_cpu
    modulo ``batch_size``, 1 only where num_cpu is a multiple of it, whose rollouts leave no remainder at all).
    ``params`` (sampled) and ``merged`` (every value the trial trains with) are updated.
    """
    if not isinstance(merged.get("n_steps"), int) or not isinstance(merged.get("batch_size"), int):
        return
    rollout, batch_size = merged["n_steps"] * num_cpu, merged["batch_size"]
    if batch_size >= rollout or rollout % batch_size != 1:
        return
    if "batch_size" in params:
        fitted = _noLoneSample(rollout, batch_size)
        if fitted is not None:
            params["batch_size"] = merged["batch_size"] = fitted
    elif "n_steps" in params and params["n_steps"] > 1:
        params["n_steps"] = merged["n_steps"] = params["n_steps"] - 1


def trialParams(params: dict[str, Any], config: SearchConfig) -> tuple[dict[str, Any], str | None]:
    """
    Fit sampled hyperparameters to each other, as RL Zoo's samplers do: a ``batch_size`` above the rollout (``n_steps``
    x envs, sampled or not) trains as one minibatch of the rollout (SB3 cuts it, with a warning), so it is cut to the
    rollout; for a learner that normalises every minibatch's advantages, the last one's too (ppo_lstm, maskable_ppo),
    a last minibatch of 1 sample is fitted away (:func:`_fitLastMinibatch`); where ``config.subsample_steps`` ties
    them, a sampled ``train_freq`` sets ``gradient_steps`` to ``max(train_freq // subsample_steps, 1)`` (the sampled
    :data:`SUBSAMPLE_STEPS`, else the one value), as the RL Zoo's samplers do, so that no trial takes more than one
    gradient step per env step; a hyperparameter that cannot exceed another sampled one (``config.at_most``: ars's
    ``top_population``, ``num_population``) is capped at its value. The trial trains with and records the values it
    trains with.

    :param params: the sampled hyperparameters
    :param config: the search
    :return: (the hyperparameters the trial trains with, why it cannot train at all or None): its first rollout
        (:data:`ROLLOUT_STEPS` x envs) past the budget, or a minibatch train refuses
        (:func:`rl_baselines.core.hyperparams.normalisationRefusal`)
    """
    params = dict(params)
    envs = config.run_envs or config.num_cpu
    for name in ROLLOUT_STEPS:
        rollout = rolloutPastBudget(params.get(name), envs, config.num_timesteps)
        if rollout is not None:
            return params, (f"{name} {params[name]} x {envs} env(s): {ROLLOUT_PAST} {rollout} steps, "
                            f"past half of --num-timesteps {config.num_timesteps}")
    merged = {**config.rollout_hyperparams, **params}
    if "batch_size" in params and isinstance(merged.get("n_steps"), int):
        params["batch_size"] = min(params["batch_size"], merged["n_steps"] * config.num_cpu)
        merged["batch_size"] = params["batch_size"]
    if config.normalised == "every_minibatch":
        _fitLastMinibatch(params, merged, config.num_cpu)
    for name, bound in config.at_most.items():
        if name in params and bound in params:
            params[name] = min(params[name], params[bound])
    subsample = params.pop(SUBSAMPLE_STEPS, None)
    if config.subsample_steps and isinstance(params.get("train_freq"), int):
        params["gradient_steps"] = max(params["train_freq"] // (subsample or config.subsample_steps[0]), 1)
    return params, normalisationRefusal(config.normalised, config.algo, merged, config.num_cpu)


def trialValues(trial: Any) -> dict[str, Any]:
    """:return: the hyperparameters a trial sampled or derived (:func:`trialParams`), by name, each at the value it
        trained with (no :data:`SUBSAMPLE_STEPS`, which is none)"""
    values = {**trial.params, **trial.user_attrs.get(RUN_PARAMS, {})}
    return {name: value for name, value in values.items() if name != SUBSAMPLE_STEPS}


def trialError(trial: Any) -> str:
    """:return: why a trial failed (its ``error`` attribute; :data:`STALE_TRIAL_ERROR` for a failed one without, as
        a trial left running by a killed command is failed), '' for a trial that did not fail"""
    if "error" in trial.user_attrs:
        return str(trial.user_attrs["error"])
    return STALE_TRIAL_ERROR if trial.state.name == "FAIL" else ""


def formatValue(value: Any) -> str:
    """:return: ``value`` as ``--hyperparam`` writes it (repr keeps every digit of a float)"""
    return repr(value) if isinstance(value, float) else str(value)


# --- storage and study -------------------------------------------------------------------------------------------


def sqlitePath(url: str) -> str | None:
    """:return: the database file of a ``sqlite:///`` URL, None for another kind or an in-memory database"""
    from sqlalchemy.engine import make_url  # installed with optuna (optional)

    parsed = make_url(url)
    return parsed.database if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:") \
        else None


def openStorage(url: str) -> Any:
    """
    Open an Optuna RDB storage; SQLite gets a long lock timeout, and its schema is created under a file lock so that
    several processes opening a new database at once do not race (Optuna issues #820, #5385). Its running trials
    record a heartbeat (:data:`HEARTBEAT_S`): one left running by a command that was killed is failed when a trial
    next starts.

    :param url: SQLAlchemy URL
    :return: an ``optuna.storages.RDBStorage``
    """
    optuna = importOptuna()
    heartbeat = {"heartbeat_interval": HEARTBEAT_S, "grace_period": HEARTBEAT_GRACE_S}
    path = sqlitePath(url)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # (heartbeat_interval)
        if path is None:
            return optuna.storages.RDBStorage(url, **heartbeat)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with storageLock(path):
            return optuna.storages.RDBStorage(url, engine_kwargs={"connect_args": {"timeout": SQLITE_TIMEOUT_S}},
                                              **heartbeat)


def storageLock(database: str | None) -> Any:
    """:param database: an SQLite database file (:func:`sqlitePath`), None for another storage
    :return: an exclusive lock on an SQLite database file, in the temporary folder (a refused --storage leaves
    nothing beside the file), or a no-op context for another storage"""
    if database is None:
        return contextlib.nullcontext()
    return FileLock(lockPathFor(database))


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
    :return: the Optuna pruner of ``config.pruner`` (steps are env steps); Hyperband's resources are the first and
        last report steps (:attr:`SearchConfig.reportSteps`: with evaluations, ``eval_freq`` and the last multiple of
        it within the budget, the step of the evaluation scored)
    """
    optuna = importOptuna()
    if config.pruner == "hyperband":
        steps = config.reportSteps
        return optuna.pruners.HyperbandPruner(min_resource=steps[0], max_resource=steps[-1], reduction_factor=3)
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
