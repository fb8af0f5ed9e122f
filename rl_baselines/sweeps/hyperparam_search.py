"""``python -m rl_baselines.hyperparam_search``: search an algorithm's hyperparameters with Optuna.

    python -m rl_baselines.hyperparam_search --algo ppo2 --env MobileRobotGymEnv-v0 --srl-model ground_truth \\
        --optimizer tpe --pruner hyperband --n-trials 50 --num-timesteps 50000 [--workers 2] [any train flag]

The search space is the algorithm's ``getOptParam()``; hyperparameters fixed with a forwarded ``--hyperparam``, an
algorithm's own flag (``--n-steps``) or ``--hyperparam-file`` are left out of it. A forwarded flag cannot set what the
search gives every trial (:data:`TRIAL_TRAIN_FLAGS`: ``--seed``, ``--log-dir``..., in any spelling train accepts).
Every input is checked (:func:`prepare`) before anything is written, the budget too: a fixed ``n_steps`` or
``learning_starts`` with which no trial could learn within ``--num-timesteps`` is refused, a searched
``learning_starts`` is sampled below it and a searched ``n_steps`` (ppo1's ``timesteps_per_actorbatch``) at most the
budget // (2 x envs), so that the budget's second half comes after an update
(:func:`rl_baselines.sweeps.search_study.fitSpaceToBudget`). An off-policy trial's ``gradient_steps`` follows its
sampled ``train_freq`` as in the RL Zoo's samplers (unless fixed): equal to it, or for qrdqn ``train_freq //
subsample_steps`` with ``subsample_steps`` sampled from 1, 2, 4, 8 (:func:`_subsampleSteps`). Each trial is one
``python -m rl_baselines.train`` run in a subprocess, its run folder under
``<log-dir>/hyperparam_search/<study>/trial_NNNN/`` (:mod:`rl_baselines.sweeps.search_trials`); the pruner reads the
mean reward of the last ``--eval-episodes`` episodes at ``--n-evaluations`` steps of the run, and the objective is
that mean at ``--num-timesteps`` (episodes that end past it, as a trial finishes its last rollout, are not scored).
With a forwarded ``--eval-freq`` the pruner reads each evaluation's mean reward instead, at the multiple of
``--eval-freq`` it was due at (``--n-evaluations`` is unused), and the objective is the mean of the run's last
evaluation due by ``--num-timesteps``: either way the last value reported to the pruner is the objective.

The study lives in an Optuna storage (:mod:`rl_baselines.sweeps.search_study`): SQLite at
``<log-dir>/hyperparam_search/<study>.db`` by default, or any SQLAlchemy URL (``--storage postgresql://...``) so that
commands on several machines work on one study. ``--workers K`` runs K processes on the storage. Outputs, beside the
trial folders (:mod:`rl_baselines.sweeps.search_outputs`): ``best_hyperparams.yaml`` (``train --hyperparam-file``
reads it), ``search.png`` and ``trials.csv``.
"""
from __future__ import annotations

import json
import math
import os
import re
import signal
import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from environments import registered_env, resolvedRenderer
from rl_baselines.core.hyperparams import plainValues
from rl_baselines.core.plugin_v1 import isV1
from rl_baselines.core.registry import failedPluginsText, registered_rl, unknownAlgoText
from rl_baselines.envs.factory import autoStepsInWorkers
from rl_baselines.runs import train_checks
from rl_baselines.runs.args_format import ARGS_FORMAT_KEY
from rl_baselines.runs.hyperparam_sources import hyperparamStrings
from rl_baselines.runs.monitor_files import runEnvs
from rl_baselines.runs.train import DEFAULT_ALGO, DEFAULT_ENV
from rl_baselines.runs.train_config import TrainConfig
from rl_baselines.sweeps.recorded import trainSettings
from rl_baselines.sweeps.search_outputs import repeatCommand, saveSearchPlot, writeBestParams, writeTrialsCsv
from rl_baselines.sweeps.search_record import createStudy
from rl_baselines.sweeps.search_study import (
    INSTALL_HINT,
    OPTIMIZERS,
    PRUNERS,
    ROLLOUT_PAST,
    ROLLOUT_STEPS,
    ROLLOUTS_IN_BUDGET,
    SUBSAMPLE_STEPS,
    SearchConfig,
    checkSpace,
    fitSpaceToBudget,
    fitSpaceToCaps,
    formatValue,
    gridValues,
    importOptuna,
    rolloutPastBudget,
    samplerSeed,
    sqlitePath,
)
from rl_baselines.sweeps.search_trials import TrialProgress, finishedTrials, runWorkers
from rl_baselines.sweeps.sweep import (
    PATH_SETTINGS,
    canonicalPath,
    ownedFlagProblem,
    parseAlgoArgs,
    trainFlagProblem,
    unknownTrainFlags,
)
from srl_models.config import describeSRLModel
from srl_models.registry import registeredSRL
from srl_toolbox.cli import (
    CLIParser,
    UsageError,
    addProgressArgument,
    addSeedArgument,
    checkWritableFolder,
    nonEmptyText,
    nonNegativeInt,
    positiveInt,
    pythonCommand,
    runCommand,
    seedNumber,
    zooFlagHints,
)
from srl_toolbox.devices import threadsShare, usableCores
from srl_toolbox.plugins import SkippedPluginWarning
from srl_toolbox.signals import ctrlCDeferred, raiseTerminated
from srl_toolbox.terminal import HeldWarnings

SEARCH_FOLDER = "hyperparam_search"
STUDY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Train settings the search gives every trial after the forwarded flags (train keeps the last of a flag given twice,
# so a forwarded one would be ignored): their flag, and what to give instead.
TRIAL_TRAIN_FLAGS = {
    **{dest: (flag, f"use hyperparam_search's own {flag}") for dest, flag in (
        ("algo", "--algo"), ("env", "--env"), ("srl_model", "--srl-model"), ("seed", "--seed"),
        ("num_timesteps", "--num-timesteps"), ("eval_episodes", "--eval-episodes"))},
    "log_dir": ("--log-dir", f"use hyperparam_search's own --log-dir (trials run below <log-dir>/{SEARCH_FOLDER}/)"),
    "tag": ("--tag", "each trial's is trial<N>"),
    "run_folder": ("--run-folder", f"each trial's is <log-dir>/{SEARCH_FOLDER}/<study>/trial_NNNN/"),
    "resume": ("--resume", "run the search again to add trials to its study"),
}
TRIAL_FLAGS_SETTER = "hyperparam_search sets it for each trial"

# rl_zoo3's --optimize flags that this command spells otherwise or does not take, and what to give instead (their
# refusal says it, beside train's hints for rl_zoo3's train flags); --n-trials, --pruner, --n-startup-trials,
# --n-evaluations, --storage and --study-name are taken under the same name
RL_ZOO_SEARCH_FLAGS = {
    ("-optimize", "--optimize-hyperparameters"): "not needed: this command is the search",
    ("--sampler",): "--optimizer",
    ("--n-jobs",): "--workers",
    ("--max-total-trials",): "not offered: --n-trials adds that many trials to the study each time",
    ("--optimization-log-path",): f"not needed: trials.csv and search.png are written beside the trial folders, "
                                  f"in <log-dir>/{SEARCH_FOLDER}/<study>/",
    ("--no-optim-plots",): "not needed: the search shows no plot (it writes search.png)",
}


def searchableAlgorithms() -> list[str]:
    """:return: the registered algorithms with a search space (``getOptParam``), plugins included: the valid
    ``--algo`` values"""
    return [name for name, (cls, _, _) in registered_rl.items() if cls.getOptParam()]


def searchParser() -> CLIParser:
    """
    :return: the parser of the search's own flags (any other flag is forwarded to rl_baselines.train)
    """

    parser = CLIParser(prog="python -m rl_baselines.hyperparam_search", allow_abbrev=False,
                       description="Search an algorithm's hyperparameters (its getOptParam space) with Optuna.",
                       epilog="Any other flag goes to rl_baselines.train for every trial (for example -c, --num-cpu 2, "
                              "--hyperparam n_steps:64 to fix a value and leave it out of the search).")
    parser.add_argument("--algo", default=DEFAULT_ALGO,
                        help=f"algorithm with a search space: {', '.join(searchableAlgorithms())} [{DEFAULT_ALGO}]")
    parser.add_argument("--algo-args", action="append", default=[], metavar="ALGO:FLAGS",
                        help="train flags for --algo, in the pipeline's per-algorithm form (a2c:--n-steps=16); "
                             "the same as giving FLAGS directly")
    parser.add_argument("--env", default=DEFAULT_ENV,
                        help=f"env id: {', '.join(sorted(registered_env))} [{DEFAULT_ENV}]")
    parser.addValueChoices({"--algo": ("algorithms with a search space", searchableAlgorithms()),
                            "--env": ("envs", sorted(registered_env)),
                            "--srl-model": ("SRL models", list(registeredSRL()))})
    parser.add_argument("--srl-model", default=TrainConfig.srl_model,
                        help=f"observation / SRL model [{TrainConfig.srl_model}]")
    addSeedArgument(parser, help=f"seed of every trial's run [{TrainConfig.seed}]", default=TrainConfig.seed)
    parser.add_argument("--sampler-seed", type=seedNumber, default=None,
                        help="seed of the sampler, mixed with the number of trials already in the study; give each "
                             "command sharing a study its own [--seed]")
    parser.add_argument("--log-dir", type=nonEmptyText, default=TrainConfig.log_dir, help="root folder; the search "
                        f"writes below <log-dir>/{SEARCH_FOLDER}/ [{TrainConfig.log_dir}]")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="tpe",
                        help="sampler: tpe (Bayesian, as hyperopt), random, grid [tpe]")
    parser.add_argument("--pruner", choices=PRUNERS, default="hyperband",
                        help="stop bad trials early from their intermediate rewards (with a forwarded --eval-freq, "
                             "each evaluation's mean) [hyperband]")
    parser.add_argument("--n-trials", type=positiveInt, default=20, help="trials this command runs, all workers "
                        "together [20]")
    parser.add_argument("--num-timesteps", type=positiveInt, default=int(1e5), help="env steps per trial [1e5]")
    parser.add_argument("--storage", type=nonEmptyText, default=None, metavar="URL", help="Optuna storage (SQLAlchemy URL) "
                        f"[sqlite:///<log-dir>/{SEARCH_FOLDER}/<study>.db]")
    parser.add_argument("--study-name", type=nonEmptyText, default=None, help="study to create or continue "
                        "[<algo>_<env>_<srl-model>_<optimizer>]")
    parser.add_argument("--workers", type=positiveInt, default=1, help="processes running trials in parallel [1]")
    parser.add_argument("--eval-episodes", type=positiveInt, default=10,
                        help="the objective is the mean reward of the last N episodes that ended within "
                             "--num-timesteps (all of them when fewer did); with a forwarded --eval-freq, of the run's "
                             "last evaluation due within it, N deterministic episodes [10]")
    parser.add_argument("--n-evaluations", type=positiveInt, default=10,
                        help="intermediate rewards reported to the pruner per trial, at evenly spaced steps; unused "
                             "with a forwarded --eval-freq, whose evaluations are reported instead [10]")
    parser.add_argument("--n-startup-trials", type=nonNegativeInt, default=5,
                        help="random trials before TPE models the results, and completed trials before the median "
                             "pruner prunes [5]")
    parser.add_argument("--grid-points", type=positiveInt, default=3,
                        help="grid optimizer: values tried per int/float hyperparameter [3]")
    addProgressArgument(parser)
    return parser


def prepare(args: Mapping[str, Any], train_argv: list[str]) -> tuple[SearchConfig, type]:
    """
    Check every input before anything is written.

    :param args: the search's parsed flags, by name
    :param train_argv: the flags forwarded to train
    :return: (the search, the algorithm class)
    :raises UsageError: on any bad input
    """

    searchable = searchableAlgorithms()
    if args["algo"] not in registered_rl:  # (the valid choices: the algorithms this command accepts)
        raise UsageError(f"unknown --algo {args['algo']!r}{unknownAlgoText(args['algo'])}; valid choices: "
                         f"{', '.join(searchable)}{failedPluginsText()}")
    algo_class = registered_rl[args["algo"]][0]
    space = algo_class.getOptParam()
    if not space:
        raise UsageError(f"--algo {args['algo']} has no search space (getOptParam); algorithms with one: "
                         f"{', '.join(searchable)}")
    checkSpace(args["algo"], space)

    train_argv = [*train_argv, *parseAlgoArgs(args["algo_args"], [args["algo"]]).get(args["algo"], [])]
    shared = ["--algo", args["algo"], "--env", args["env"], "--srl-model", args["srl_model"], "--seed", str(args["seed"]),
              "--num-timesteps", str(args["num_timesteps"])]
    try:
        problem = trainFlagProblem(args["algo"], train_argv, TRIAL_TRAIN_FLAGS, TRIAL_FLAGS_SETTER)
    except UsageError as error:  # (flags train cannot parse)
        raise UsageError(f"train flags: {error}") from None
    if problem is not None:
        raise UsageError(problem)
    train_parser = train_checks.algorithmParser(algo_class, train_checks.baseParser())
    try:
        train_args = TrainConfig.fromValues(vars(train_parser.parse_args([*train_argv, *shared])))
    except UsageError as error:
        raise UsageError(f"train flags: {error}") from None
    fixed = {**hyperparamStrings(train_args), **_flaggedHyperparams(train_args)}
    pinned = _pinnedBounds(algo_class, space, fixed)
    # (the algorithms this command accepts: a refusal lists those as the valid choices, not random_agent)
    checked = train_checks.validate(train_args.replace(hyperparam=(*train_args.hyperparam, *pinned.values())),
                                    {name: registered_rl[name] for name in searchable})
    # (the study records, and the trials train with, the flags as given: a pinned bound is still searched)
    resolved = checked.replace(hyperparam=tuple(item for item in checked.hyperparam if item not in pinned.values()),
                               hyperparams={name: value for name, value in checked.hyperparams.items()
                                            if name not in pinned})
    run_envs = runEnvs(checked.argsRecord())  # (--num-cpu resolved: the algorithm's default when left out)
    hyperparams = _resolvedHyperparams(algo_class, checked)
    # (typed; a value fixed by the algorithm's own flag, --n-steps 512, is in resolved.hyperparams only once resolved)
    fixed_values = {**resolved.hyperparams, **{name: hyperparams[name] for name in fixed if name in hyperparams}}
    _checkFixedBudget(fixed_values, checked.num_cpu, run_envs, args["num_timesteps"])
    space = fitSpaceToBudget(args["algo"], {name: spec for name, spec in space.items() if name not in fixed},
                             args["num_timesteps"], run_envs)
    space, at_most = fitSpaceToCaps(args["algo"], space, getattr(algo_class, "SEARCH_AT_MOST", {}), hyperparams)
    subsample_steps = _subsampleSteps(algo_class, space, fixed, hyperparams)
    if subsample_steps is not None and len(subsample_steps) > 1:
        space[SUBSAMPLE_STEPS] = (list, subsample_steps)
    if not space:
        raise UsageError("every hyperparameter of the search space is fixed by --hyperparam/--hyperparam-file; "
                         "nothing to search")
    if args["n_evaluations"] > args["num_timesteps"]:
        raise UsageError(f"--n-evaluations {args['n_evaluations']} is more than --num-timesteps {args['num_timesteps']}")
    if train_args.eval_freq > args["num_timesteps"]:
        raise UsageError(f"--eval-freq {train_args.eval_freq} is more than --num-timesteps {args['num_timesteps']}: no "
                         f"trial would evaluate")
    if args["optimizer"] == "grid":
        _checkGridSize(space, args["grid_points"])
    study_name = args["study_name"] or f"{args['algo']}_{args['env']}_{args['srl_model']}_{args['optimizer']}"
    if not STUDY_NAME.match(study_name):
        raise UsageError(f"--study-name {study_name!r}: use letters, digits, '.', '_' and '-' only, starting with a "
                         f"letter or digit")
    checkWritableFolder(args["log_dir"], "--log-dir")  # (before the storage URL, which is made from it)
    root = os.path.join(args["log_dir"], SEARCH_FOLDER)
    storage_url = args["storage"] or f"sqlite:///{os.path.abspath(os.path.join(root, study_name + '.db'))}"
    _checkStorageUrl(storage_url)
    database = sqlitePath(storage_url) if args["storage"] else None  # (the default's folder is the search's own)
    if database is not None and not os.path.isdir(os.path.dirname(os.path.abspath(database))):
        raise UsageError(f"--storage {storage_url!r}: the folder {os.path.dirname(os.path.abspath(database))} does not "
                         f"exist; create it first, or give another path")
    config = SearchConfig(
        algo=args["algo"], env=args["env"], srl_model=args["srl_model"], seed=args["seed"],
        num_timesteps=args["num_timesteps"],
        optimizer=args["optimizer"], pruner=args["pruner"], storage_url=storage_url, study_name=study_name,
        output_dir=os.path.abspath(os.path.join(root, study_name)), train_argv=list(train_argv), fixed=fixed,
        space=space, eval_episodes=args["eval_episodes"], n_evaluations=args["n_evaluations"],
        n_startup_trials=args["n_startup_trials"], grid_points=args["grid_points"], search_id=uuid.uuid4().hex,
        eval_freq=train_args.eval_freq, threads=threadsShare(args["workers"]), num_cpu=checked.num_cpu,
        envs_in_process=trialEnvsInProcess(train_args.vec_env, checked, min(args["workers"], args["n_trials"])),
        run_envs=run_envs,
        train_settings=studySettings(resolved), setting_flags=settingFlags(train_parser),
        rollout_hyperparams=plainValues({name: hyperparams[name] for name in ("n_steps", "batch_size")
                                         if hyperparams.get(name) is not None}),
        normalised=getattr(algo_class, "NORMALISED_ADVANTAGES", None), subsample_steps=subsample_steps,
        at_most=at_most)
    return config, algo_class


def _pinnedBounds(algo_class: type, space: Mapping[str, tuple], fixed: Mapping[str, str]) -> dict[str, str]:
    """
    :param algo_class: the algorithm
    :param space: its search space
    :param fixed: the hyperparameters fixed for every trial (``--hyperparam``, the file, the algorithm's own flag)
    :return: ``--hyperparam`` items (by the bound's name) that validate the search's train flags with each searched
        bound of a fixed capped hyperparameter (the algorithm's ``SEARCH_AT_MOST``: ars's ``num_population`` of a
        fixed ``top_population``) at the fixed value, not at its default: the space is raised to it
        (:func:`fitSpaceToCaps`, which refuses a value above the space), so the default never trains
    """
    return {bound: f"{bound}:{fixed[name]}" for name, bound in getattr(algo_class, "SEARCH_AT_MOST", {}).items()
            if name in fixed and bound in space and bound not in fixed}


def _subsampleSteps(algo_class: type, space: Mapping[str, tuple], fixed: Mapping[str, str],
                    hyperparams: Mapping[str, Any]) -> list[int] | None:
    """
    :param algo_class: the algorithm
    :param space: its search space, less the fixed hyperparameters
    :param fixed: the hyperparameters fixed for every trial (``--hyperparam``, the file, the algorithm's own flag)
    :param hyperparams: every hyperparameter as a trial trains with it where it samples none
    :return: the values of ``subsample_steps`` a trial's ``gradient_steps`` follows its sampled ``train_freq`` by
        (the algorithm's ``SEARCH_SUBSAMPLE_STEPS``: :func:`rl_baselines.sweeps.search_study.trialParams`), None
        where it does not: ``train_freq`` not sampled, ``gradient_steps`` fixed, sampled by itself or not the
        algorithm's
    """
    values = getattr(algo_class, "SEARCH_SUBSAMPLE_STEPS", None)
    if not values or "train_freq" not in space or "gradient_steps" in space or "gradient_steps" in fixed \
            or "gradient_steps" not in hyperparams:
        return None
    return [int(value) for value in values]


def _resolvedHyperparams(algo_class: type, resolved: TrainConfig) -> dict[str, Any]:
    """
    :param algo_class: the algorithm
    :param resolved: the trials' train settings, validated
    :return: every hyperparameter as a trial trains with it where it samples none (fixed by ``--hyperparam``, the
        file or the algorithm's own flag, else the algorithm's default), typed; empty for a plugin of API version 1,
        which resolves its own in its train
    """
    if isV1(algo_class):
        return {}
    return algo_class.resolveHyperparams(resolved.runSettings(), dict(resolved.hyperparams))


def _flaggedHyperparams(train_args: TrainConfig) -> dict[str, str]:
    """
    :param train_args: the trials' train settings as given (before the raw-pixel defaults are added)
    :return: the hyperparameters set by the algorithm's own flags (``--n-steps 64``: ``{"n_steps": "64"}``): fixed
        for every trial as ``--hyperparam`` fixes them, not searched (a sampled value would override the flag)
    """
    return {name.removeprefix("hp_"): str(value) for name, value in train_args.extra.items()
            if name.startswith("hp_") and value is not None}


def _checkFixedBudget(fixed: Mapping[str, Any], num_cpu: int, run_envs: int, budget: int) -> None:
    """
    :param fixed: the hyperparameters every trial gets (``--hyperparam``, ``--hyperparam-file``), typed
    :param num_cpu: each trial's envs per process (--num-cpu)
    :param run_envs: each trial's envs in all (ppo1's processes times --num-cpu)
    :param budget: --num-timesteps
    :raises UsageError: no trial could be scored after learning within the budget: a fixed ``n_steps`` (ppo1's
        ``timesteps_per_actorbatch``) whose first rollout (it x envs) is past half of it (:func:`rolloutPastBudget`),
        or a fixed ``learning_starts`` at or above it (a searched range of either is cut to the budget:
        :func:`fitSpaceToBudget`)
    """
    for name in ROLLOUT_STEPS:
        rollout = rolloutPastBudget(fixed.get(name), run_envs, budget)
        if rollout is not None:
            envs = "--num-cpu" if run_envs == num_cpu else "--num-cpu x ppo1's processes"
            most = budget // (ROLLOUTS_IN_BUDGET * run_envs)  # (0: no n_steps fits these envs)
            smaller = f"{name} at most {most}" if most >= 1 else f"fewer envs ({envs})"
            raise UsageError(f"{name} {fixed[name]} x {run_envs} env(s) ({envs}) = {rollout} steps before the "
                             f"first update, more than half of --num-timesteps {budget}: every trial would be scored "
                             f"on episodes before its first update; give {smaller} or --num-timesteps at least "
                             f"{ROLLOUTS_IN_BUDGET * rollout}")
    learning_starts = fixed.get("learning_starts")
    if isinstance(learning_starts, (int, float)) and learning_starts >= budget:
        raise UsageError(f"learning_starts {learning_starts} is not below --num-timesteps {budget}: no trial would "
                         f"learn; give a smaller learning_starts or a larger --num-timesteps")


# Settings the study records with its own keys (search flags that train gets too), and the hyperparameter sources
# (their typed values count instead), or that name a version (args.json's format)
_OWN_SETTINGS = frozenset({"algo", "env", "srl_model", "seed", "num_timesteps", "eval_episodes", "hyperparam",
                           "hyperparam_file", ARGS_FORMAT_KEY})


def trialEnvsInProcess(vec_env: str, checked: TrainConfig, trials_at_once: int) -> bool:
    """
    :param vec_env: ``--vec-env`` as given
    :param checked: the trials' train settings, validated (``--num-cpu`` and the renderer resolved)
    :param trials_at_once: the workers that run trials (at most the trials)
    :return: each trial steps its envs in its training process (``--vec-env dummy``, the same floats): ``--vec-env``
        auto would step them in workers while the trials at a time leave each one core, as a sweep's runs
        (rl_baselines.sweeps.pipeline.localLayout)
    """
    return usableCores() // max(1, trials_at_once) <= 1 and autoStepsInWorkers(
        vec_env, checked.num_cpu, checked.env, resolvedRenderer(checked.renderer, checked.env), checked.srl_model)


def studySettings(resolved: TrainConfig) -> dict[str, Any]:
    """
    :param resolved: the trials' train settings, validated (the renderer, a learned SRL model's folder resolved)
    :return: what the forwarded train flags set, as a study compares them (JSON values): the settings that change a
        result (:func:`rl_baselines.sweeps.recorded.trainSettings`: not ``--device``, ``--port``...) as train's parser
        gives them, whatever their spelling or order, but the study's own keys; an algorithm's flag left unset as
        None; the fixed hyperparameters typed (``--hyperparam``, ``--hyperparam-file``) and the learned SRL model by
        its hash (not its folder); a path as :func:`rl_baselines.sweeps.sweep.canonicalPath` spells it
    """
    settings = {**trainSettings(resolved.argsRecord()),
                **{name: None for name, value in resolved.extra.items() if name.startswith("hp_") and value is None}}
    settings = {name: canonicalPath(value, os.getcwd()) if name in PATH_SETTINGS and isinstance(value, str) else value
                for name, value in settings.items() if name not in _OWN_SETTINGS}
    settings["hyperparams"] = plainValues(dict(resolved.hyperparams))
    settings["srl_model_hash"] = describeSRLModel(resolved.srl_model_path)["hash"] if resolved.srl_model_path else None
    return json.loads(json.dumps(settings, default=str))


def settingFlags(parser: Any) -> dict[str, str]:
    """
    :param parser: train's parser of the algorithm (its own flags included)
    :return: each setting's flag as a user types it, by the setting's name (``hp_gamma``: ``--gamma``): its first long
        option (``--continuous-actions``, not ``-c``)
    """
    return {action.dest: next((flag for flag in action.option_strings if flag.startswith("--")),
                              action.option_strings[0])
            for action in parser._actions if action.option_strings}


# The most points a grid search may have (Optuna's GridSampler lists them all in memory: about 700 MB per million);
# every algorithm's default grid (--grid-points 3) is below it (acer's, the largest: 1.06 million).
MAX_GRID = 4 * 10**6


def _checkGridSize(space: dict[str, tuple], points: int) -> None:
    """:raises UsageError: a grid of more than MAX_GRID points (--grid-points values per range, every list value)"""
    size = 1
    for spec in space.values():
        size *= len(gridValues(spec, min(points, MAX_GRID + 1)))
        if size > MAX_GRID:
            raise UsageError(f"--grid-points {points}: the grid of the {len(space)} hyperparameters searched has more "
                             f"than {MAX_GRID:,} points (Optuna lists them all in memory); give fewer points, or fix "
                             f"some hyperparameters with --hyperparam NAME:VALUE")


def _prunedBeforeStartText(reasons: list[str], budget: int) -> str:
    """
    :param reasons: why each trial of the study was pruned before it started (its ``pruned_before_start``), in order
    :param budget: --num-timesteps
    :return: the summary of a search none of whose trials ran: how many were pruned for each cause (a first rollout
        past the budget, sampled values train refuses), the last reason, and what to change for each cause
    """
    past = [reason for reason in reasons if ROLLOUT_PAST in reason]
    refused = [reason for reason in reasons if ROLLOUT_PAST not in reason]
    counts, advice = [], []
    if past:
        name = past[-1].split()[0]
        counts.append(f"{len(past)} for a first rollout past half of --num-timesteps {budget}")
        advice.append(f"give a larger budget, or fix {name} with --hyperparam {name}:N")
    if refused:
        name = refused[-1].split()[0]
        counts.append(f"{len(refused)} for sampled values train refuses")
        advice.append(f"fix {name} with --hyperparam {name}:N (a value train accepts)")
    return (f"No completed trial, so no best hyperparameters: every trial was pruned before it started, "
            f"{', '.join(counts)} (the last: {reasons[-1]}); {'; '.join(advice)}")


def _checkStorageUrl(storage_url: str) -> None:
    """
    :param storage_url: --storage, or the default SQLite file's URL
    :raises UsageError: not a database URL, a database SQLAlchemy does not know (naming the usual ones), or one whose
        driver module is not installed (naming it)
    """
    try:
        from sqlalchemy.engine import make_url  # installed with optuna (optional)
        from sqlalchemy.exc import NoSuchModuleError
    except ImportError:
        raise UsageError(f"hyperparam_search needs Optuna, which is not installed: {INSTALL_HINT}") from None
    try:
        url = make_url(storage_url)
    except Exception as error:  # sqlalchemy.exc.ArgumentError
        raise UsageError(f"--storage {storage_url!r} is not a database URL ({error})") from None
    try:
        dialect = url.get_dialect()
    except NoSuchModuleError:
        raise UsageError(f"--storage {storage_url!r}: unknown database {url.drivername!r}; valid choices: "
                         "sqlite:///PATH, postgresql://USER:PASSWORD@HOST/DB, mysql://USER:PASSWORD@HOST/DB (or "
                         "another database SQLAlchemy knows)") from None
    try:
        dialect.import_dbapi()
    except ImportError as error:
        raise UsageError(f"--storage {storage_url!r}: the driver of {url.drivername} is not installed ({error}); "
                         "install it with pip") from None


def _gridLeft(study: Any, config: SearchConfig) -> tuple[int, int]:
    """
    :param study: the study
    :param config: a grid search
    :return: (the grid's points, those no finished trial of the study tried on this grid): Optuna's GridSampler
        tries a point again once every one was tried, and stops a search at the last one
    """
    grid = {name: gridValues(spec, config.grid_points) for name, spec in config.space.items()}
    size = math.prod(len(values) for values in grid.values())
    tried = {trial.system_attrs["grid_id"] for trial in study.get_trials(deepcopy=False)
             if trial.state.is_finished() and "grid_id" in trial.system_attrs
             and trial.system_attrs.get("search_space") == grid}
    return size, size - len(tried)


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code: 0 when at least one trial of the study completed
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    # the checks' warnings (a train flag that does nothing here) wait until they pass: a refused search prints its
    # one-line error alone (a plugin that failed to load is said whatever happens)
    with HeldWarnings(shown_at_once=(SkippedPluginWarning,)):
        parser = searchParser()
        args, train_argv = parser.parse_known_args(argv)
        # (a flag the search sets spelled whole first: train's parser would refuse a bare --resume as needing a value)
        unknown = ownedFlagProblem(train_argv, TRIAL_TRAIN_FLAGS, TRIAL_FLAGS_SETTER) or unknownTrainFlags(
            [args.algo], train_argv, parser._option_string_actions, "hyperparam_search",
            zooFlagHints(RL_ZOO_SEARCH_FLAGS))
        if unknown is not None:
            raise UsageError(unknown)
        importOptuna()
        config, algo_class = prepare(vars(args), train_argv)
        study = createStudy(config)
    known = len(study.trials)
    tied = "" if config.subsample_steps is None else (
        " (gradient_steps: train_freq // subsample_steps, at least 1)" if len(config.subsample_steps) > 1
        else " (gradient_steps: train_freq)")
    print(f"Study {config.study_name} ({config.storage_url}): {known} earlier trials; searching "
          f"{', '.join(config.space)}{tied}", flush=True)
    n_trials = args.n_trials
    if config.optimizer == "grid":
        size, left = _gridLeft(study, config)
        if left == 0:
            print(f"Nothing to run: the grid's {size} point(s) have all been tried (the study holds {known} trials); "
                  "give another --grid-points or --study-name to search another grid", flush=True)
            return 0
        if left < n_trials:
            print(f"--n-trials {n_trials}: the grid has {left} of its {size} point(s) left to try; running {left}",
                  flush=True)
            n_trials = left
    progress = TrialProgress(n_trials, enabled=not args.no_progress, evaluates=config.evaluate)
    interrupted = False
    previous_sigterm = signal.signal(signal.SIGTERM, raiseTerminated)
    try:
        sampler_seed = samplerSeed(args.seed if args.sampler_seed is None else args.sampler_seed, known)
        failed_workers = runWorkers(config, study, n_trials, args.workers, sampler_seed, progress)
    except KeyboardInterrupt:
        interrupted, failed_workers = True, 0
        for trial in finishedTrials(study, config.search_id):  # the interrupted ones too
            progress.trialDone(trial)
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
        progress.close()
    with ctrlCDeferred():  # a (second) Ctrl-C or SIGTERM while the outputs are written stops the command after them
        return _finish(study, config, algo_class, progress, failed_workers, interrupted)


def _finish(study: Any, config: SearchConfig, algo_class: type, progress: TrialProgress, failed_workers: int,
            interrupted: bool) -> int:
    """Write the outputs and print the summary; :return: the exit code"""
    TrialState = importOptuna().trial.TrialState
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
        trials = study.get_trials(deepcopy=False)
        if trials and all("pruned_before_start" in trial.user_attrs for trial in trials):  # none ran: no train.log
            print(_prunedBeforeStartText([trial.user_attrs["pruned_before_start"] for trial in trials],
                                         config.num_timesteps), file=sys.stderr)
        else:
            errors = [trial.user_attrs["error"] for trial in trials if trial.user_attrs.get("error")]
            last = f" (the last trial's error: {errors[-1]})" if errors else ""
            print(f"No completed trial, so no best hyperparameters{last}; each trial's error is in "
                  f"{os.path.join(config.output_dir, 'trials.csv')}, its output in its train.log", file=sys.stderr)
        return 130 if interrupted else 1
    yaml_path = os.path.join(config.output_dir, "best_hyperparams.yaml")
    values = writeBestParams(yaml_path, study, config, algo_class)
    best = study.best_trial
    print(f"Best trial {best.number}: {progress.measure} {best.value:.2f} with "
          f"{', '.join(f'{k}={formatValue(v)}' for k, v in values.items())}")
    print(f"Best hyperparameters: {yaml_path}")
    print(f"  {repeatCommand(best, config, yaml_path, pythonCommand())}")
    return 130 if interrupted else (1 if failed_workers else 0)


if __name__ == "__main__":
    runCommand(main)
