"""``python -m rl_baselines.check_plugin ALGO``: check that an algorithm keeps the contract of
rl_baselines.core.base.BaseRLObject, the way gymnasium's ``check_env`` checks an env.

The same checks run from a plugin's own tests with :func:`checkPlugin` (it raises :class:`PluginCheckError`, an
AssertionError, naming the first broken rule). Each action type the algorithm declares is checked on a real env,
through the train command as a user runs it:

1. the class: a BaseRLObject subclass of this API version, ACTION_TYPES, MODEL_EXTENSION, the contract methods,
   saveTrainingState and loadTrainingState both or neither, a well-formed hyperparameter spec and search space;
2. train a few hundred steps: the model file ``<algo>_model<ext>`` exists with the umask's permissions (not 0600),
   holds the step count, and the normalisation statistics are saved beside it when the env normalises; an algorithm
   of API version 2 with ``TRAINING_ROWS`` True wrote a progress.csv row;
3. load: missing and foreign files raise ValueError; the replay env restores the normalisation frozen;
4. replay: actions fit the action space, ``deterministic=True`` gives the same actions every call, and a save/load
   round trip gives the same actions (compared with ``dones`` all True: a recurrent policy restarts its state at an
   episode start, and one that carries it on from the previous episode fails);
5. continue with ``--load-rl-model-path``: the step count goes on and the normalisation keeps adapting;
6. same seed, same model: a second run with the same seed acts the same.

The observation is checked first, as bad input (exit code 2, not a broken rule): an env mode, or a learned model
found and checked the way train does it (``--srl-model-path FOLDER``, or the default SRL config file).

Everything is written in a temporary folder (or ``folder``), removed at the end unless kept.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from environments import getEnvClass, registered_env
from environments.registry import unknownEnvText
from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.base import BaseRLObject, actionMaskKeywords
from rl_baselines.core.checkpointing import readManifest
from rl_baselines.core.hyperparams import Hyperparam
from rl_baselines.core.plugin_v1 import SUPPORTED_API_VERSIONS, declaredVersionConflict, isV1, loadModel, makeEnv
from rl_baselines.core.registry import failed_plugins, registered_rl
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.envs.factory import NORMALISATION_FILE, findVecNormalize
from rl_baselines.runs import train
from rl_baselines.runs.train_config import TrainConfig, readArgsRecord
from srl_models.base import readExpConfig
from srl_models.config import resolveSRLModel
from srl_models.registry import failedSRLPluginsText, learnedModels, registeredSRL
from srl_toolbox.cli import (
    CLIParser,
    CommandFailed,
    UsageError,
    addSeedArgument,
    checkWritableFolder,
    nonEmptyText,
    positiveInt,
    runCommand,
)
from srl_toolbox.plugins import apiMajor

DEFAULT_ENV = "MobileRobotGymEnv-v0"
DEFAULT_SRL_MODEL = "ground_truth"
DEFAULT_TIMESTEPS = 300
# Observations the replay checks act on.
REPLAY_STEPS = 20


class PluginCheckError(AssertionError):
    """A rule of the algorithm contract that the plugin breaks (the message is one line)."""


def _fail(message: str) -> None:
    raise PluginCheckError(message)


def checkClass(algo_class: type) -> list[str]:
    """
    Check the class itself (no env, nothing written).

    :param algo_class: the algorithm's class
    :return: the checks passed, one line each
    :raises PluginCheckError: the first rule broken
    """

    passed = []
    if not isinstance(algo_class, type) or not issubclass(algo_class, BaseRLObject):
        _fail(f"{algo_class!r} is not a subclass of rl_baselines.core.base.BaseRLObject")
    if apiMajor(algo_class.API_VERSION) not in SUPPORTED_API_VERSIONS:
        _fail(f"API_VERSION {algo_class.API_VERSION!r} is not a major version this srl-toolbox runs "
              f"({', '.join(map(str, SUPPORTED_API_VERSIONS))})")
    conflict = declaredVersionConflict(algo_class)
    if conflict is not None:
        _fail(conflict)
    types = algo_class.ACTION_TYPES
    if not isinstance(types, tuple) or not types or not all(isinstance(t, ActionType) for t in types):
        _fail(f"ACTION_TYPES {types!r} is not a non-empty tuple of ActionType")
    if not (isinstance(algo_class.MODEL_EXTENSION, str) and algo_class.MODEL_EXTENSION.startswith(".")):
        _fail(f"MODEL_EXTENSION {algo_class.MODEL_EXTENSION!r} is not a file extension such as '.zip'")
    passed.append("class: BaseRLObject subclass, API version, ACTION_TYPES, MODEL_EXTENSION")
    for method in ("save", "load", "getAction", "train"):
        if getattr(algo_class, method) is getattr(BaseRLObject, method) or (
                method == "load" and algo_class.load.__func__ is BaseRLObject.load.__func__):
            _fail(f"{algo_class.__name__} does not implement {method}")
    own = [name for name in ("saveTrainingState", "loadTrainingState")
           if getattr(algo_class, name) is not getattr(BaseRLObject, name)]
    if len(own) == 1:
        _fail(f"{algo_class.__name__} implements {own[0]} only: saveTrainingState and loadTrainingState go together")
    passed.append(f"methods: save, load, getAction, train; resume support: {'yes' if own else 'no'}")
    for name, hyperparam in algo_class.HYPERPARAMS.items():
        if not isinstance(hyperparam, Hyperparam):
            _fail(f"HYPERPARAMS[{name!r}] is not a Hyperparam")
    spec = algo_class.hyperparamSpec()
    for name, hyperparam in spec.items():
        problem = hyperparam.problem(hyperparam.default)
        if problem is not None:
            _fail(f"hyperparameter {name!r}: default {hyperparam.default!r} {problem}")
    space = algo_class.getOptParam()
    if space is not None:
        if not isinstance(space, dict):
            _fail(f"getOptParam() returned {type(space).__name__}, not a dict or None")
        for name, entry in space.items():
            kind = entry[0] if isinstance(entry, tuple) and entry else None
            if kind is list:
                if not isinstance(entry[1], (list, tuple)) or not entry[1]:
                    _fail(f"getOptParam()[{name!r}] = {entry!r}: (list, [choices]) needs choices")
            elif kind in (int, float):
                low, high = entry[1]
                if not low < high or entry[2:] not in ((), ("log",)) or (entry[2:] == ("log",) and low <= 0):
                    _fail(f"getOptParam()[{name!r}] = {entry!r} is not (type, (low, high)) or (type, (low, high), "
                          f"'log') with 0 < low < high")
            else:
                _fail(f"getOptParam()[{name!r}] = {entry!r} is not (int|float, (low, high)[, 'log']) or "
                      f"(list, [choices])")
            if name in spec:
                default = spec[name].default
                try:
                    parsed = algo_class.parserHyperParam({name: str(default)})[name]
                except ValueError as error:
                    _fail(f"parserHyperParam refuses the default of {name!r}: {error}")
                if parsed != default:
                    _fail(f"parserHyperParam({{{name!r}: {str(default)!r}}}) gives {parsed!r}, not the default")
    parser = algo_class.customArguments(argparse.ArgumentParser(add_help=False))
    if not isinstance(parser, argparse.ArgumentParser):
        _fail("customArguments does not return the parser")
    parser.parse_known_args([])  # the defaults (a check the class adds to parse_args judges a whole train command)
    passed.append(f"hyperparameters: {len(spec)} declared, {len(space or {})} searched, flags parse")
    return passed


def _trainArgs(name: str, folder: str, env: str, srl_model: str, continuous: bool, num_timesteps: int, seed: int,
               extra: Sequence[str] = (), srl_model_path: str | None = None) -> list[str]:
    return ["--algo", name, "--env", env, "--srl-model", srl_model, "--num-timesteps", str(num_timesteps),
            "--seed", str(seed), "--log-dir", folder, "--no-vis", "--no-progress", "--checkpoint-freq", "-1",
            *(["-c"] if continuous else []), *(["--srl-model-path", srl_model_path] if srl_model_path else []), *extra]


def checkObservation(env: str, srl_model: str | None, srl_model_path: str | None = None) -> str:
    """
    Check the observation of the runs, as train would (bad input, not a rule the algorithm breaks).

    :param env: a registered env id
    :param srl_model: an env mode or a learned model kind; None (or raw_pixels) with ``srl_model_path``: the
        folder's kind; None without: ground_truth
    :param srl_model_path: a trained SRL model folder, None to look a learned ``srl_model`` up in the default SRL
        config file
    :return: the observation mode (``srl_model``, or the folder's kind)
    :raises UsageError: unknown mode, or no usable trained model (one line)
    """
    modes = getEnvClass(env).SRL_MODES
    if srl_model_path is not None and srl_model in (None, "raw_pixels"):  # (as train: the folder says which model)
        try:
            srl_model = str(readExpConfig(os.path.abspath(srl_model_path))["srl_model"])
        except ValueError as error:
            raise UsageError(f"--srl-model-path {srl_model_path}: {error}") from None
    srl_model = srl_model or DEFAULT_SRL_MODEL
    if srl_model_path is not None and srl_model in modes:
        raise UsageError(f"--srl-model {srl_model} is computed by the env and cannot be combined with "
                         f"--srl-model-path (a trained model); drop one of them")
    if srl_model_path is None and srl_model not in modes and srl_model not in learnedModels():
        raise UsageError(f"unknown --srl-model {srl_model!r} for {env}; valid choices: {', '.join(modes)}, "
                         f"or a trained model of kind {', '.join(learnedModels()) or '(none installed)'}"
                         f"{failedSRLPluginsText(srl_model)}")
    if srl_model_path is not None or srl_model in learnedModels():
        try:
            resolveSRLModel(env, srl_model, model_path=srl_model_path, channels=3)
        except ValueError as error:
            raise UsageError(f"--srl-model {srl_model!r}: {error}") from None
    return srl_model


def _train(argv: list[str]) -> str:
    """:return: the run folder of ``python -m rl_baselines.train argv``, run in this process (output kept quiet)"""

    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output):
            code = train.main(argv)
    except UsageError as error:
        _fail(f"train {' '.join(argv)} refused: {error}")
    if code != 0:
        _fail(f"train {' '.join(argv)} exited with {code}: {output.getvalue().strip().splitlines()[-1:]}")
    folders = [line[len("Run folder: "):] for line in output.getvalue().splitlines() if line.startswith("Run folder: ")]
    return folders[-1]


def _runSettings(run_dir: str) -> RunSettings:
    """:return: a trained run's settings, with one env and no monitor files nor run folder"""
    return TrainConfig.fromRecord(readArgsRecord(run_dir)).runSettings().replace(num_cpu=1, monitor_dir=None,
                                                                                 run_dir=None)


def _load(algo_class: type, model_path: str, settings: RunSettings, kind: str) -> Any:
    """:return: the model ``load`` rebuilds from ``model_path``; a ``load`` that returns no agent is a broken rule"""
    try:
        return loadModel(algo_class, model_path, settings)
    except CommandFailed as error:
        _fail(f"{kind}: {error}")


def _actionProblem(action: np.ndarray, space: Any, num_envs: int) -> str | None:
    action = np.asarray(action)
    if isinstance(space, gym.spaces.Discrete):
        if action.shape != (num_envs,) or not np.issubdtype(action.dtype, np.integer):
            return f"getAction gave {action.dtype} of shape {action.shape}, expected {num_envs} integer actions"
        if np.any(action < space.start) or np.any(action >= space.start + space.n):
            return f"getAction gave {action.tolist()}, outside {space}"
        return None
    if action.shape != (num_envs, *space.shape):
        return f"getAction gave shape {action.shape}, expected {(num_envs, *space.shape)}"
    if not np.all(np.isfinite(action)):
        return "getAction gave a non-finite action"
    if np.any(action < space.low - 1e-6) or np.any(action > space.high + 1e-6):
        return f"getAction gave actions outside the bounds of {space} (clip them to low/high)"
    return None


def _batchProblem(model: Any, observation: Any, env: Any) -> str | None:
    """
    :param model: a freshly loaded model (no recurrent state yet)
    :param observation: one step's observations of ``env``
    :param env: the replay VecEnv
    :return: what is wrong with ``model``'s deterministic actions for the observations of twice as many envs (as
        ``--num-cpu 2`` gives them; one action for the batch leaves an env worker waiting for ever), None if nothing
    """
    def doubled(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: doubled(item) for key, item in value.items()}
        return np.concatenate([value, value])

    masks = {key: doubled(value) for key, value in actionMaskKeywords(model, env).items()}
    problem = _actionProblem(model.getAction(doubled(observation), deterministic=True, **masks), env.action_space,
                             2 * env.num_envs)
    return None if problem is None else f"for a batch of {2 * env.num_envs} observations {problem}"


def _observations(env: Any, model: Any, steps: int) -> list[np.ndarray]:
    """:return: the observations of ``steps`` replay steps (acting with the model, deterministic, ``dones`` marking
        each episode start as the replay does)"""
    observation = env.reset()
    dones = np.ones(env.num_envs, dtype=bool)
    seen = [observation]
    for _ in range(steps):
        observation, _, dones, _ = env.step(model.getAction(observation, dones, deterministic=True,
                                                            **actionMaskKeywords(model, env)))
        seen.append(observation)
    return seen


def _startActions(model: Any, observation: Any) -> np.ndarray:
    """:return: ``model``'s deterministic actions for ``observation`` as the first of every env's episode
        (``dones`` all True: a recurrent policy acts from a fresh state, so that the same observation gives the
        same action whatever was played before)"""
    dones = np.ones(len(next(iter(observation.values())) if isinstance(observation, dict) else observation),
                    dtype=bool)
    return np.asarray(model.getAction(observation, dones, deterministic=True), dtype=np.float64)


def _sameActions(first: Any, second: Any, observations: list[np.ndarray]) -> bool:
    """:return: whether ``first`` and ``second`` take the same deterministic actions at each observation, each
        taken as an episode's first (:func:`_startActions`)"""
    return all(np.allclose(_startActions(first, obs), _startActions(second, obs), atol=1e-6) for obs in observations)


def _hasRows(progress_file: str) -> bool:
    """:return: whether progress.csv holds a row below its header"""
    try:
        with open(progress_file, encoding="utf-8") as handle:
            return sum(1 for line in handle if line.strip()) > 1
    except FileNotFoundError:
        return False


def _normalisationCount(folder: str) -> float | None:
    path = os.path.join(folder, NORMALISATION_FILE)
    if not os.path.isfile(path):
        return None
    with np.load(path, allow_pickle=False) as data:
        counts = [float(data[key]) for key in data.files if key.startswith("obs") and key.endswith(".count")]
    return sum(counts)


def checkActionType(name: str, algo_class: type, continuous: bool, folder: str, env: str = DEFAULT_ENV,
                    srl_model: str = DEFAULT_SRL_MODEL, num_timesteps: int = DEFAULT_TIMESTEPS, seed: int = 0,
                    check_seed: bool = True, srl_model_path: str | None = None) -> list[str]:
    """
    Train, save, load, replay and continue the algorithm with one action type.

    :param name: the registered algorithm name
    :param algo_class: its class
    :param continuous: continuous actions (``-c``)
    :param folder: where the runs are written
    :param env: the env id
    :param srl_model: the observation
    :param num_timesteps: env steps of each training
    :param seed: the seed
    :param check_seed: also train a second run with the same seed and compare
    :param srl_model_path: the trained SRL model folder of a learned ``srl_model`` (train's ``--srl-model-path``)
    :return: the checks passed, one line each
    :raises PluginCheckError: the first rule broken
    """

    kind = "continuous" if continuous else "discrete"
    passed = []
    run_dir = _train(_trainArgs(name, folder, env, srl_model, continuous, num_timesteps, seed, (), srl_model_path))
    model_path = os.path.join(run_dir, f"{name}_model{algo_class.MODEL_EXTENSION}")
    if not os.path.isfile(model_path):
        _fail(f"{kind}: train wrote no {os.path.basename(model_path)} (save must write the path it is given)")
    mode = os.stat(model_path).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    if mode & 0o044 != 0o644 & ~umask & 0o044:
        _fail(f"{kind}: {model_path} has permissions {oct(mode)}, not the umask's {oct(0o666 & ~umask)} "
              f"(save through srl_toolbox.files.atomicPath, not tempfile.mkstemp)")
    args = _runSettings(run_dir)
    env_probe = makeEnv(algo_class, args)
    normalised = findVecNormalize(env_probe) is not None
    env_probe.close()
    if normalised and not os.path.isfile(os.path.join(run_dir, NORMALISATION_FILE)):
        _fail(f"{kind}: makeEnv normalises observations but save wrote no {NORMALISATION_FILE} beside the model "
              f"(call rl_baselines.envs.factory.saveNormalisation(self.env, folder) in save)")
    if algo_class.TRAINING_ROWS and not isV1(algo_class) and not _hasRows(RunFolder(run_dir).progress_file):
        _fail(f"{kind}: TRAINING_ROWS is True but train wrote no training rows to progress.csv in {num_timesteps} "
              f"steps (log train/* values through logger or callback.logScalars, or set TRAINING_ROWS = False; "
              f"one that logs less often is checked with more --num-timesteps)")
    passed.append(f"{kind}: trained {num_timesteps} steps, model file with the umask's permissions"
                  f"{', normalisation saved' if normalised else ''}")

    for bad, what in ((os.path.join(folder, "missing_model" + algo_class.MODEL_EXTENSION), "a missing file"),
                      (RunFolder(run_dir).args_file, "a foreign file")):
        try:
            loadModel(algo_class, bad, args)
        except ValueError:
            continue
        except Exception as error:  # the contract: ValueError, one line
            _fail(f"load of {what} raised {type(error).__name__} ({error}), not ValueError")
        _fail(f"load of {what} ({bad}) did not raise ValueError")
    model = _load(algo_class, model_path, args, kind)

    saved_steps = int((readManifest(run_dir) or {}).get("num_timesteps", -1))
    if int(model.num_timesteps) != saved_steps or saved_steps < num_timesteps:
        _fail(f"{kind}: the loaded model has num_timesteps {model.num_timesteps}, the run trained {saved_steps} "
              f"(at least {num_timesteps}); train must count env steps in self.num_timesteps and save must keep it")
    passed.append(f"{kind}: load restores the step count; missing and foreign files raise ValueError")

    replay_env = makeEnv(algo_class, args, load_path_normalise=run_dir)
    try:
        vec_normalize = findVecNormalize(replay_env)
        if vec_normalize is not None and vec_normalize.training:
            _fail(f"{kind}: the replay env's normalisation is still updating (makeEnv must pass load_path_normalise "
                  f"on, which restores it frozen)")
        observations = _observations(replay_env, model, REPLAY_STEPS)
        for observation in observations[:3]:
            problem = _actionProblem(model.getAction(observation, deterministic=True), replay_env.action_space,
                                     replay_env.num_envs)
            if problem is not None:
                _fail(f"{kind}: {problem}")
            problem = _actionProblem(model.getAction(observation, deterministic=False), replay_env.action_space,
                                     replay_env.num_envs)
            if problem is not None:
                _fail(f"{kind}: (deterministic=False) {problem}")
        problem = _batchProblem(_load(algo_class, model_path, args, kind), observations[0], replay_env)
        if problem is not None:
            _fail(f"{kind}: {problem}")
        if not _sameActions(model, model, observations):
            _fail(f"{kind}: getAction(deterministic=True) gives different actions for the same observation "
                  f"at an episode start (use the distribution's mode/mean, no sampling; a recurrent policy restarts "
                  f"its state where dones is True)")
        resaved = os.path.join(folder, f"resaved_{kind}", f"{name}_model{algo_class.MODEL_EXTENSION}")
        os.makedirs(os.path.dirname(resaved), exist_ok=True)
        model.save(resaved)
        if not _sameActions(model, _load(algo_class, resaved, args, kind), observations):
            _fail(f"{kind}: a save/load round trip changes the deterministic actions")
    finally:
        replay_env.close()
    passed.append(f"{kind}: replay actions fit {args.env}'s action space, deterministic actions repeat, "
                  f"save/load keeps them")

    more = _train(_trainArgs(name, folder, env, srl_model, continuous, num_timesteps, seed,
                             ["--load-rl-model-path", model_path, "--tag", "continued"], srl_model_path))
    continued = _load(algo_class, os.path.join(more, os.path.basename(model_path)), args, kind)
    if continued.num_timesteps < saved_steps + num_timesteps:
        _fail(f"{kind}: continuing with --load-rl-model-path gave {continued.num_timesteps} steps, expected at least "
              f"{saved_steps} + {num_timesteps} (count from the loaded model's num_timesteps)")
    before, after = _normalisationCount(run_dir), _normalisationCount(more)
    if before is not None and after is not None and after <= before:
        _fail(f"{kind}: the normalisation statistics stopped updating when training continued (set "
              f"findVecNormalize(self.env).training = True after makeEnv restored them)")
    passed.append(f"{kind}: --load-rl-model-path continues the step count"
                  f"{' and the normalisation statistics' if before is not None else ''}")

    if check_seed:
        again = _train(_trainArgs(name, folder, env, srl_model, continuous, num_timesteps, seed, ["--tag", "again"],
                                  srl_model_path))
        twin = _load(algo_class, os.path.join(again, os.path.basename(model_path)), args, kind)
        if not _sameActions(model, twin, observations):
            _fail(f"{kind}: two runs with seed {seed} give different models (seed every generator of yours with "
                  f"the run's seed: settings.seed, args.seed in a version 1 plugin)")
        passed.append(f"{kind}: same seed, same model")
    return passed


def checkPlugin(algo: str, env: str = DEFAULT_ENV, srl_model: str | None = DEFAULT_SRL_MODEL,
                num_timesteps: int = DEFAULT_TIMESTEPS, continuous: bool | None = None, folder: str | None = None,
                seed: int = 0, check_seed: bool = True, report: Callable[[str], None] | None = None,
                srl_model_path: str | None = None) -> list[str]:
    """
    Check that an installed algorithm keeps the contract (see the module docstring); use it in a plugin's tests::

        def test_contract(tmp_path):
            checkPlugin("my_algo", folder=str(tmp_path))

    :param algo: the registered ``--algo`` name
    :param env: the env to train on
    :param srl_model: its observation (``ground_truth``: low-dimensional states, normalised by default; a learned
        model kind is looked up in the default SRL config file); None with ``srl_model_path``: the folder's kind
    :param num_timesteps: env steps of each training run
    :param continuous: check only continuous (True) or only discrete (False) actions; None: every declared type
    :param folder: where to write the runs (kept); None: a temporary folder, removed at the end
    :param seed: the seed of the runs
    :param check_seed: also train a second run with the same seed and compare the models
    :param report: called with each check passed (e.g. ``print``)
    :param srl_model_path: a trained SRL model folder to observe through (train's ``--srl-model-path``)
    :return: the checks passed, one line each
    :raises PluginCheckError: the first rule broken (one line)
    :raises UsageError: unknown env or observation, or no usable trained SRL model (bad input, one line)
    """

    if algo not in registered_rl:
        reason = f" (it failed to load: {failed_plugins[algo]})" if algo in failed_plugins else ""
        _fail(f"{algo!r} is not a registered algorithm{reason}; registered: {', '.join(registered_rl)}")
    algo_class, _, action_types = registered_rl[algo]
    if env not in registered_env:
        raise UsageError(unknownEnvText(env))
    srl_model = checkObservation(env, srl_model, srl_model_path)
    report = report or (lambda line: None)
    passed = []
    for line in checkClass(algo_class):
        report(line)
        passed.append(line)
    kinds = [kind == ActionType.CONTINUOUS for kind in (ActionType.DISCRETE, ActionType.CONTINUOUS)
             if kind in action_types]
    if continuous is not None:
        if continuous not in kinds:
            _fail(f"{algo} does not declare {'continuous' if continuous else 'discrete'} actions in ACTION_TYPES")
        kinds = [continuous]
    work = folder if folder is not None else tempfile.mkdtemp(prefix=f"check_plugin_{algo}_")
    try:
        for is_continuous in kinds:
            for line in checkActionType(algo, algo_class, is_continuous, work, env, srl_model, num_timesteps, seed,
                                        check_seed, srl_model_path):
                report(line)
                passed.append(line)
    finally:
        if folder is None:
            shutil.rmtree(work, ignore_errors=True)
    return passed


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: 0 when every check passed, 1 when one failed
    :raises UsageError: bad input: unknown algorithm, env or observation, no usable trained SRL model (exit code 2)
    """
    parser = CLIParser(prog="python -m rl_baselines.check_plugin",
                       description="Check that an algorithm plugin keeps the BaseRLObject contract: train a few "
                                   "hundred steps, save, load, replay, continue.")
    parser.add_argument("algo", help="the registered --algo name")
    parser.add_argument("--env", default=DEFAULT_ENV, help=f"env id [{DEFAULT_ENV}]")
    parser.add_argument("--srl-model", default=None,
                        help=f"observation: a mode the env computes, or a learned model kind, looked up in the default "
                             f"SRL config file as train does [{DEFAULT_SRL_MODEL}; with --srl-model-path, the "
                             f"folder's kind]")
    parser.addValueChoices({"--env": ("envs", sorted(registered_env)),
                            "--srl-model": ("SRL models", list(registeredSRL()))})
    parser.add_argument("--srl-model-path", type=nonEmptyText, default=None, metavar="FOLDER",
                        help="observe through this trained SRL model folder (as train's --srl-model-path)")
    parser.add_argument("--num-timesteps", type=positiveInt, default=DEFAULT_TIMESTEPS,
                        help=f"env steps of each training run [{DEFAULT_TIMESTEPS}]")
    actions = parser.add_mutually_exclusive_group()
    actions.add_argument("-c", "--continuous-actions", dest="continuous", action="store_const", const=True,
                         default=None, help="check continuous actions only")
    actions.add_argument("--discrete-actions", dest="continuous", action="store_const", const=False,
                         help="check discrete actions only")
    addSeedArgument(parser, help="seed of the runs [0]")
    parser.add_argument("--no-seed-check", action="store_true", help="skip the second same-seed run")
    parser.add_argument("--keep", type=nonEmptyText, default=None, metavar="FOLDER",
                        help="write the runs into FOLDER and keep them [a temporary folder, removed]")
    args = parser.parse_args(argv)

    if args.algo not in registered_rl:
        skipped = ("; plugins that failed to load: " + "; ".join(f"{name} ({reason})" for name, reason in
                                                                  sorted(failed_plugins.items()))) if failed_plugins else ""
        raise UsageError(f"unknown algorithm {args.algo!r}; valid choices: {', '.join(registered_rl)}{skipped}")
    if args.env not in registered_env:
        raise UsageError(unknownEnvText(args.env))

    srl_model = checkObservation(args.env, args.srl_model, args.srl_model_path)
    kind = {True: ActionType.CONTINUOUS, False: ActionType.DISCRETE}.get(args.continuous)
    if kind is not None and kind not in registered_rl[args.algo][2]:
        declared = " and ".join(sorted(t.name.lower() for t in registered_rl[args.algo][2]))
        raise UsageError(f"{'-c' if args.continuous else '--discrete-actions'}: {args.algo} declares {declared} actions "
                         f"only; leave the flag out to check every declared kind")
    if args.keep is not None:
        checkWritableFolder(args.keep, "--keep")
    try:
        checkPlugin(args.algo, args.env, srl_model, args.num_timesteps, args.continuous, args.keep, args.seed,
                    not args.no_seed_check, report=lambda line: print(f"ok: {line}", flush=True),
                    srl_model_path=args.srl_model_path)
    except PluginCheckError as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 1
    print(f"{args.algo}: every check passed")
    return 0


if __name__ == "__main__":
    runCommand(main)
