"""Run specs of a sweep: grid expansion, its checks, deterministic run ids. Shared by ``rl_baselines.pipeline`` and
the other commands that launch many training runs; rl_baselines/sweeps/run_attempts.py runs one spec.

A run spec is ``(algo, env, srl_model, seed, train flags)``. Its run id is a short hash of that spec, where the
train flags count by their parsed values that differ from train's defaults (so flag order, aliases such as ``-c``
and explicit default values do not change the id), and a file or folder by the place it names, relative to the
directory the run starts in where it lies under it (so ``--srl-config-file`` given relative or absolute is one id).
A setting that does nothing for the run (``--img-shape`` of a ground-truth run: idleSettings; ppo2's ``--augment-loss``
without ``--augment`` and the other settings train warns do nothing: appliedSettings) counts at what the run applies,
so it leaves the id; a run finished while the id held it (:attr:`RunSpec.earlier_id`) is found as finished too.
A run lives in the folder train would give it, ``<log-dir>/<env>/<srl-model>/<algo>/<YY-MM-DD_HHhMM_SS>_<run id>/``
(:attr:`RunSpec.parent` holds it; its files and completion markers: rl_baselines/sweeps/run_attempts.py).
Nothing here writes to disk: specs and checks are computed in this process.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import itertools
import json
import os
import shlex
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from environments import defaultRenderer, registered_env
from environments.srl_env import REFERENCE_RENDERER
from rl_baselines.core.registry import failedPluginsText, unknownAlgoText
from rl_baselines.core.registry import registered_rl as installed_algorithms
from rl_baselines.runs.hyperparam_sources import readHyperparamFile
from rl_baselines.runs.train_checks import algorithmParser, baseParser, validate
from rl_baselines.runs.train_config import TrainConfig, appliedSettings
from srl_toolbox.cli import UNRECOGNIZED, UsageError, flagsMeant
from srl_toolbox.files import isInside

RUN_ID_LENGTH = 10
# Train settings that do not change what a run computes (or that the sweep sets itself): left out of the run id.
NOT_IN_RUN_ID = frozenset({"algo", "env", "srl_model", "seed", "log_dir", "tag", "run_folder", "no_vis", "port",
                           "no_progress", "buffer_save_freq", "resume"})
# Train settings naming a file or folder: the run id counts a place however it is spelled (see :func:`canonicalPath`).
PATH_SETTINGS = frozenset({"srl_model_path", "srl_config_file", "hyperparam_file", "load_rl_model_path",
                           "srl_log_folder"})
# Train flags the sweep sets for every run.
RESERVED_TRAIN_FLAGS = {"tag": "--tag (the sweep names each run folder after its run id)",
                        "run_folder": "--run-folder (the sweep creates each run folder)",
                        "resume": "--resume (a sweep run again resumes its unfinished runs itself)"}
# Train settings the sweep's grid gives each run (train keeps the last of a flag given twice, so one among the train
# flags would override the cell's own): their flag, and the pipeline flag that sets them (see trainFlagProblem).
GRID_TRAIN_FLAGS = {"algo": ("--algo", "use the pipeline's own --algo"),
                    "env": ("--env", "use the pipeline's own --env"),
                    "srl_model": ("--srl-model", "use the pipeline's own --srl-model"),
                    "seed": ("--seed", "use the pipeline's own --seed and --num-iteration"),
                    "log_dir": ("--log-dir", "use the pipeline's own --log-dir")}
_NOT_GIVEN = object()


@dataclass(frozen=True)
class RunSpec:
    """
    One training run of a sweep.

    :param algo: algorithm name
    :param env: env id
    :param srl_model: observation mode or SRL model name
    :param seed: the run's seed
    :param train_args: other ``rl_baselines.train`` flags, as given on the command line
    :param run_id: short hash of the spec (see :func:`runId`)
    :param log_dir: absolute root of the run folders
    :param cwd: directory the run starts in (relative paths in ``train_args`` are relative to it)
    :param earlier_id: its id while ids held its idle settings (None: the same), by which it is found finished then
    """

    algo: str
    env: str
    srl_model: str
    seed: int
    train_args: tuple[str, ...]
    run_id: str
    log_dir: str
    cwd: str = field(default_factory=os.getcwd)
    earlier_id: str | None = None

    @property
    def label(self) -> str:
        """Human-readable name: ``algo env srl_model seedN``."""
        return f"{self.algo} {self.env} {self.srl_model} seed{self.seed}"

    @property
    def parent(self) -> str:
        """The folder holding this run's folder (train's layout)."""
        return os.path.join(self.log_dir, self.env, self.srl_model, self.algo)

    def trainArgv(self, run_folder: str) -> list[str]:
        """
        :param run_folder: the run folder train must use
        :return: the arguments of ``python -m rl_baselines.train`` (live plots and progress bar off: the sweep
            draws the plots and its log file is no terminal)
        """
        return ["--algo", self.algo, "--env", self.env, "--srl-model", self.srl_model, "--seed", str(self.seed),
                "--log-dir", self.log_dir, "--tag", self.run_id, "--run-folder", run_folder, "--no-vis",
                "--no-progress", *self.train_args]

    def toDict(self) -> dict[str, Any]:
        """:return: the spec as plain JSON values"""
        data = {key: value for key, value in asdict(self).items() if key != "earlier_id" or value is not None}
        data["train_args"] = list(self.train_args)
        return data


def unique(values: Iterable[str]) -> list[str]:
    """
    :param values: names, possibly repeated
    :return: each name once, in first-seen order
    """
    return list(dict.fromkeys(values))


@functools.cache
def trainParser(algo: str) -> argparse.ArgumentParser:
    """
    :param algo: a registered algorithm
    :return: ``rl_baselines.train``'s parser for it (shared flags + the algorithm's own)
    """
    return algorithmParser(installed_algorithms[algo][0], baseParser())


def unknownTrainFlags(algos: Sequence[str], train_args: Sequence[str], own_flags: Iterable[str] = (),
                      command: str = "the sweep", hints: Mapping[str, str] | None = None) -> str | None:
    """
    :param algos: the sweep's algorithms (those not installed are skipped: they are refused by name)
    :param train_args: the flags the sweep passes to every run (those it does not read itself)
    :param own_flags: the sweep's own option strings, offered beside train's as the flag meant
    :param command: the sweep's name in the message
    :param hints: another tool's spellings of the sweep's own settings -> their hint (``zooFlagHints``), beside
        (and over) train's hints for rl_zoo3's train flags
    :return: one line for the arguments that train takes with none of ``algos`` (``unrecognized arguments: --algos
        ppo2 (neither the sweep's flags nor train's; did you mean --algo?)``, or, for another algorithm's own flag,
        ``unrecognized arguments: --augment-loss rad (train takes it with --algo ppo2, not with sac)``; an rl_zoo3
        flag is named with its equivalent, as train names it: ``unrecognized arguments: -n 500 (rl_zoo3's
        -n/--n-timesteps is --num-timesteps here)``), None when it takes them all
    """
    known = [algo for algo in unique(algos) if algo in installed_algorithms]
    if not known or not train_args:
        return None
    left = [trainParser(algo).parse_known_args(["--algo", algo, *train_args])[1] for algo in known]
    unknown = [arg for arg in left[0] if all(arg in rest for rest in left[1:])]
    if not unknown:
        return None
    flags = [arg.split("=", 1)[0] for arg in unknown if arg.startswith("-")]
    owners = [algo for algo in sorted(installed_algorithms) if algo not in known
              and any(flag in trainParser(algo)._option_string_actions for flag in flags)]
    if owners:  # an algorithm's own flag, given to a sweep of others
        return (f"{UNRECOGNIZED}{' '.join(unknown)} (train takes {'them' if len(flags) > 1 else 'it'} with --algo "
                f"{', '.join(owners)}, not with {', '.join(known)})")
    hinted = {**getattr(trainParser(known[0]), "flag_hints", {}), **(hints or {})}
    options = [*own_flags, *(option for algo in known for option in trainParser(algo)._option_string_actions)]
    meant = flagsMeant([arg for arg in unknown if arg.split("=", 1)[0] not in hinted], options)
    said = ([f"neither {command}'s flags nor train's"] if not flags or any(flag not in hinted for flag in flags)
            else [])
    said += list(dict.fromkeys(hinted[flag] for flag in flags if flag in hinted))
    said += [f"did you mean {meant}?"] if meant else []
    return f"{UNRECOGNIZED}{' '.join(unknown)} ({'; '.join(said)})"


@functools.cache
def _trainDefaults(algo: str) -> dict[str, Any]:
    """:return: train's default settings with this algorithm (parse_known_args: not the checks an algorithm adds to
    parse_args, which judge whole commands)"""
    return vars(trainParser(algo).parse_known_args(["--algo", algo])[0])


def parseTrainArgs(algo: str, env: str, srl_model: str, seed: int, train_args: Sequence[str]) -> dict[str, Any]:
    """
    Parse a run's train command in this process (nothing is written).

    :param algo: a registered algorithm
    :param env: env id
    :param srl_model: observation mode or SRL model name
    :param seed: seed
    :param train_args: other train flags
    :return: train's parsed arguments, by name
    :raises UsageError: a flag train (with this algorithm) does not accept
    """
    argv = ["--algo", algo, "--env", env, "--srl-model", srl_model, "--seed", str(seed), *train_args]
    return vars(trainParser(algo).parse_args(argv))


def canonicalPath(path: str, cwd: str) -> str:
    """
    :param path: a file or folder as given to train, relative to ``cwd`` or absolute
    :param cwd: the directory the run starts in
    :return: the same place spelled one way: relative to ``cwd`` where it lies under it, else absolute; normalised
    """
    absolute = os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))
    return os.path.relpath(absolute, cwd) if isInside(absolute, cwd) else absolute


def canonicalArgs(algo: str, args: Mapping[str, Any], cwd: str | None = None, idle: bool = False) -> dict[str, Any]:
    """
    :param algo: the algorithm the arguments were parsed for
    :param args: train's parsed arguments, by name (:func:`parseTrainArgs`)
    :param cwd: the directory the run starts in, which relative paths are read from (default: the current one)
    :param idle: keep the settings that do nothing for the run at their values (the run
        ids made before they were left out)
    :return: the settings that differ from train's defaults, except those in :data:`NOT_IN_RUN_ID`, those that do
        nothing for the run read as it applies them unless ``idle`` (train_config's ``appliedSettings``, its
        ``idleSettings`` among them: ``--augment-loss rad`` without ``--augment`` is the default's id), with the
        :data:`PATH_SETTINGS` spelled by :func:`canonicalPath` (and a ``--hyperparam-file`` with the hyperparameters
        it gives: :func:`_hyperparamFileSetting`); the renderer as train resolves it (left out: the env's
        default), named unless it is the reference renderer, so that an explicit ``--renderer`` of the env's default
        gives the same id and the runs made before keep theirs
    """
    defaults = {**_trainDefaults(algo), "renderer": REFERENCE_RENDERER}
    cwd = cwd or os.getcwd()
    args = {key: canonicalPath(value, cwd) if key in PATH_SETTINGS and isinstance(value, str) else value
            for key, value in args.items()}
    if isinstance(args.get("hyperparam_file"), str):
        args["hyperparam_file"] = _hyperparamFileSetting(args["hyperparam_file"], str(args.get("env")), cwd)
    if args.get("renderer") is None:  # (an unknown env, which train refuses, names none)
        args["renderer"] = defaultRenderer(args["env"]) if args.get("env") in registered_env else REFERENCE_RENDERER
    if not idle:  # (the idleSettings at train's defaults: img_shape None, srl_state_scale none)
        args.update(appliedSettings(args))
    return {key: value for key, value in sorted(args.items())
            if key not in NOT_IN_RUN_ID and defaults.get(key) != value}


def _hyperparamFileSetting(path: str, env: str, cwd: str) -> str | dict[str, Any]:
    """
    :param path: a ``--hyperparam-file``, as :func:`canonicalPath` spells it
    :param env: the run's env (the section an rl_zoo3-style file gives)
    :param cwd: the directory the run starts in
    :return: the file and the hyperparameters it gives now, so that a run id changes when the file is edited (as a
        new ``--hyperparam`` would change it); the path alone for a file train will refuse (with its own message)
    """
    try:
        values = readHyperparamFile(os.path.join(cwd, os.path.expanduser(path)), env)
    except UsageError:
        return path
    return {"path": path, "hyperparams": values}


def runId(algo: str, env: str, srl_model: str, seed: int, settings: dict[str, Any]) -> str:
    """
    :param algo: algorithm name
    :param env: env id
    :param srl_model: observation mode or SRL model name
    :param seed: seed
    :param settings: the other train settings (see :func:`canonicalArgs`)
    :return: a short hex hash of the spec, the same in every process and on every machine
    """
    text = json.dumps({"algo": algo, "env": env, "srl_model": srl_model, "seed": int(seed), "args": settings},
                      sort_keys=True, default=str)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:RUN_ID_LENGTH]


def makeSpec(algo: str, env: str, srl_model: str, seed: int, train_args: Sequence[str], log_dir: str,
             cwd: str | None = None) -> RunSpec:
    """
    :param algo: a registered algorithm
    :param env: env id
    :param srl_model: observation mode or SRL model name
    :param seed: seed
    :param train_args: other train flags
    :param log_dir: root of the run folders (made absolute)
    :param cwd: directory the run starts in (default: the current one)
    :return: the run spec with its run id (and its earlier one, where a setting that does nothing for the run changed it)
    :raises UsageError: a flag train does not accept
    """
    args = parseTrainArgs(algo, env, srl_model, seed, train_args)
    run_id = runId(algo, env, srl_model, seed, canonicalArgs(algo, args, cwd))
    earlier_id = runId(algo, env, srl_model, seed, canonicalArgs(algo, args, cwd, idle=True))
    return RunSpec(algo, env, srl_model, int(seed), tuple(train_args), run_id, os.path.abspath(log_dir),
                   os.path.abspath(cwd or os.getcwd()), earlier_id if earlier_id != run_id else None)


def parseAlgoArgs(items: Sequence[str], algos: Sequence[str]) -> dict[str, list[str]]:
    """
    The per-algorithm form of train flags, ``--algo-args ALGO:FLAGS`` (``ppo2:--ent-coef=0.01``, or several flags
    in one quoted string: ``"ppo2:--n-steps 64 --gamma 0.9"``); the flags go to that algorithm's runs only, after
    the flags shared by every run. Whether train accepts them is checked with the rest (:func:`checkGrid`).

    :param items: the ``--algo-args`` values, in order (several for one algorithm add up)
    :param algos: the algorithms of the command (``--algo``)
    :return: algorithm -> its own train flags
    :raises UsageError: not ALGO:FLAGS, an algorithm not in ``algos``, or unbalanced quotes (one line)
    """
    flags: dict[str, list[str]] = {}
    for item in items:
        algo, separator, text = item.partition(":")
        if not separator or not algo or not text.strip():
            raise UsageError(f"--algo-args {item!r} is not ALGO:FLAGS (for example ppo2:--ent-coef=0.01)")
        if algo not in algos:
            raise UsageError(f"--algo-args {item!r}: {algo!r} is not an algorithm of this command; valid choices: "
                             f"{', '.join(unique(algos))}")
        try:
            words = shlex.split(text)
        except ValueError as error:
            raise UsageError(f"--algo-args {item!r}: {error}") from None
        if not words[0].startswith("-"):
            raise UsageError(f"--algo-args {item!r}: {words[0]!r} is not a flag (FLAGS start with -)")
        flags.setdefault(algo, []).extend(words)
    return flags


def expandGrid(algos: Sequence[str], envs: Sequence[str], srl_models: Sequence[str], seeds: Sequence[int],
               train_args: Sequence[str], log_dir: str, cwd: str | None = None,
               algo_args: dict[str, list[str]] | None = None) -> list[RunSpec]:
    """
    Every combination as a run spec, seeds outermost so that every method gets its first seed early.

    :param algos: algorithm names (repeats dropped)
    :param envs: env ids
    :param srl_models: observation modes / SRL model names
    :param seeds: seeds
    :param train_args: train flags shared by every run
    :param log_dir: root of the run folders
    :param cwd: directory the runs start in (default: the current one)
    :param algo_args: each algorithm's own train flags (:func:`parseAlgoArgs`), after the shared ones
    :return: the run specs (call :func:`checkGrid` first for a readable refusal of bad combinations)
    """
    algo_args = algo_args or {}
    return [makeSpec(algo, env, srl_model, seed, [*train_args, *algo_args.get(algo, [])], log_dir, cwd)
            for seed in dict.fromkeys(seeds)
            for algo, env, srl_model in itertools.product(unique(algos), unique(envs), unique(srl_models))]


def ownedFlagProblem(train_args: Sequence[str], owned: Mapping[str, tuple[str, str]], setter: str) -> str | None:
    """:return: :func:`trainFlagProblem`'s line for a flag of ``owned`` spelled whole among ``train_args``, said
    before train parses them (a bare ``--resume`` would be refused as a flag that expects a value), or None"""
    for flag, instead in owned.values():
        if any(word.split("=", 1)[0] == flag for word in train_args):
            return f"{flag} cannot be a train flag (in --algo-args or passed on to train): {setter}; {instead}"
    return None


def trainFlagProblem(algo: str, train_args: Sequence[str], owned: Mapping[str, tuple[str, str]], setter: str
                     ) -> str | None:
    """
    :param algo: a registered algorithm
    :param train_args: the train flags of its runs (shared and ``--algo-args``)
    :param owned: the train settings the command sets for each run itself: setting -> (its train flag, what to give
        instead), such as :data:`GRID_TRAIN_FLAGS`
    :param setter: who sets them (``the sweep sets it for each run``)
    :return: why the train flags cannot set one of them, in any spelling train accepts (``--seed=7``, an abbreviation
        such as ``--se 7``), naming the flag as spelled, or None
    :raises UsageError: flags train cannot parse
    """
    problem = ownedFlagProblem(train_args, owned, setter)
    if problem is not None:
        return problem
    given, _ = trainParser(algo).parse_known_args(
        list(train_args), argparse.Namespace(**{dest: _NOT_GIVEN for dest in owned}))
    for dest, (flag, instead) in owned.items():
        if getattr(given, dest) is not _NOT_GIVEN:
            spelled = next((word.split("=", 1)[0] for word in train_args
                            if len(word.split("=", 1)[0]) > 2 and flag.startswith(word.split("=", 1)[0])), flag)
            name = flag if spelled == flag else f"{spelled} ({flag})"
            return f"{name} cannot be a train flag (in --algo-args or passed on to train): {setter}; {instead}"
    return None


def reservedFlagProblem(train_args: Sequence[str]) -> str | None:
    """:return: one line for a train flag the sweep sets itself (:data:`RESERVED_TRAIN_FLAGS`) among ``train_args``,
    said before train parses them (a bare ``--resume`` would be refused as a flag that expects a value), or None"""
    for arg in train_args:
        for key, flag in RESERVED_TRAIN_FLAGS.items():
            if arg.split("=", 1)[0] == "--" + key.replace("_", "-"):
                return f"{flag} cannot be passed"
    return None


def _combinationProblem(algo: str, env: str, srl_model: str, train_args: Sequence[str], registered_rl: dict
                        ) -> str | None:
    """:return: why train would refuse this combination (its one-line message), or None"""

    if algo not in registered_rl:
        return (f"unknown --algo {algo!r}{unknownAlgoText(algo)}; valid choices: {', '.join(registered_rl)}"
                f"{failedPluginsText()}")
    try:
        problem = trainFlagProblem(algo, train_args, GRID_TRAIN_FLAGS, "the sweep sets it for each run")
        if problem is not None:
            return problem
        args = parseTrainArgs(algo, env, srl_model, 0, train_args)
        for key, flag in RESERVED_TRAIN_FLAGS.items():
            if args[key] is not None:
                return f"{flag} cannot be passed"
        # writes nothing; resolves learned SRL models through config/srl_models.yaml
        validate(TrainConfig.fromValues(args), registered_rl)
        if 0 < args["eval_freq"] > args["num_timesteps"]:  # (train warns at its start, in the run's train.log only)
            return (f"--eval-freq {args['eval_freq']} is more than --num-timesteps {args['num_timesteps']}: no run "
                    f"would evaluate; lower --eval-freq or raise --num-timesteps")
    except UsageError as error:
        return str(error)
    return None


def _describeGroup(combinations: list[tuple[str, str, str]], axes: tuple[list[str], list[str], list[str]]) -> str:
    """
    :param combinations: bad (algo, env, srl_model) triples sharing one reason
    :param axes: every algo, env and SRL model of the sweep
    :return: ``a x b x c`` for each, or one line with ``*`` for "every value" and ``|`` between values when the
        triples form a full product
    """
    parts = [unique(combo[i] for combo in combinations) for i in range(3)]
    if len(combinations) > 1 and len(combinations) == len(parts[0]) * len(parts[1]) * len(parts[2]):
        return " x ".join("*" if len(values) == len(axis) else "|".join(values) for values, axis in zip(parts, axes))
    return ", ".join(" x ".join(combo) for combo in combinations)


def checkGrid(algos: Sequence[str], envs: Sequence[str], srl_models: Sequence[str], train_args: Sequence[str],
              registered_rl: dict | None = None, algo_args: dict[str, list[str]] | None = None) -> None:
    """
    Check every (algo, env, SRL model) combination as train would, without writing anything.

    :param algos: algorithm names
    :param envs: env ids
    :param srl_models: observation modes / SRL model names
    :param train_args: train flags shared by every run
    :param registered_rl: the algorithm table (default: the installed algorithms)
    :param algo_args: each algorithm's own train flags (:func:`parseAlgoArgs`), after the shared ones
    :raises UsageError: one line, ``N bad combinations (algo x env x srl-model): COMBINATIONS (reason); ...``
    :warns: each of train's warnings once (a flag that does nothing for some runs), naming the combinations it is
        about when they are not the whole grid (``... [for 2 of 4 combinations (algo x env x srl-model): ppo2 x * x
        ground_truth]``); none when it refuses (the refusal alone)
    """
    algo_args = algo_args or {}
    if registered_rl is None:
        registered_rl = installed_algorithms
    axes = (unique(algos), unique(envs), unique(srl_models))
    reasons: dict[str, list[tuple[str, str, str]]] = {}
    warned: dict[tuple[str, type[Warning]], list[tuple[str, str, str]]] = {}
    combinations = list(itertools.product(*axes))
    for combo in combinations:
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            reason = _combinationProblem(*combo, [*train_args, *algo_args.get(combo[0], [])], registered_rl)
        for record in records:
            cells = warned.setdefault((str(record.message), record.category), [])
            if combo not in cells:
                cells.append(combo)
        if reason is not None:
            reasons.setdefault(reason, []).append(combo)
    if reasons:  # (before the warnings: a refused sweep prints its one-line error alone)
        count = sum(len(combos) for combos in reasons.values())
        listed = "; ".join(f"{_describeGroup(combos, axes)} ({reason})" for reason, combos in reasons.items())
        raise UsageError(f"{count} bad combination{'s' if count > 1 else ''} (algo x env x srl-model): {listed}")
    for (message, category), cells in warned.items():
        if len(cells) < len(combinations):
            message += (f" [for {len(cells)} of {len(combinations)} combinations (algo x env x srl-model): "
                        f"{_describeGroup(cells, axes)}]")
        warnings.warn(message, category, stacklevel=2)


def sweepId(specs: Sequence[RunSpec]) -> str:
    """
    :param specs: the sweep's runs
    :return: a short hash of their run ids (names the sweep's state file and visdom env)
    """
    return hashlib.sha1(" ".join(sorted(spec.run_id for spec in specs)).encode()).hexdigest()[:RUN_ID_LENGTH]

