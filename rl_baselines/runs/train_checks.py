"""The train command's parser and its checks: :func:`validate` checks every input of a run, and resolves what the
flags leave open (the device and torch threads, the renderer, a learned SRL model's folder and image size, the typed
hyperparameters, the steps a continued model already did), before anything is written.

Invariants: nothing here writes to the disk; every refusal is a :class:`UsageError` of one line that names the bad
value and the valid choices; the warnings of the checks are raised here and shown by the caller once the run folder is
made (``HeldWarnings``).
"""
from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from environments import (
    envFlagRefusal,
    envOffers,
    envsWhere,
    getEnvClass,
    registered_env,
    rendererRefusal,
    resolvedRenderer,
)
from environments.registry import unknownEnvText
from environments.srl_env import isLearnedSRLModel
from rl_baselines.core.algo_types import ActionType, AlgoType
from rl_baselines.core.buffer_memory import BufferKind, bufferMemoryRefusal
from rl_baselines.core.checkpointing import checkModelFile, checkSavedSpaces
from rl_baselines.core.hyperparams import pixelDefaultFlags
from rl_baselines.core.plugin_v1 import isV1, loadModel, makeEnv
from rl_baselines.core.registry import algoChoicesText, defaultEnvs, registered_rl
from rl_baselines.core.run_folder import RUN_FOLDER_ATTEMPTS, newStamp, tagRefusal
from rl_baselines.envs.factory import envKwargsFromArgs, resolveVecEnv
from rl_baselines.runs.hyperparam_sources import hyperparamStrings
from rl_baselines.runs.pretrain import checkDataset
from rl_baselines.runs.run_logging import TENSORBOARD_FOLDER_ATTEMPTS, checkTensorboard, tensorboardRunName
from rl_baselines.runs.train_config import RUN_FIELDS, TrainConfig, addFlags, appliedSettings
from srl_models.base import readExpConfig
from srl_models.config import (
    SRLLookupError,
    describeSRLModel,
    frameSettingsWarning,
    latestModelFolder,
    resolveSRLModel,
    trainedFrameSettings,
    trainedRenderer,
)
from srl_models.registry import failedSRLPluginsText, learnedModels
from srl_toolbox.cli import CLIParser, UsageError, checkImageShape, checkNameLength
from srl_toolbox.devices import resolveDevice, resolveThreads
from srl_toolbox.errors import UsageWarning


def baseParser(add_help: bool = True, algo_names: Sequence[str] = (), env_ids: Sequence[str] = (),
               srl_models: Sequence[str] = ()) -> CLIParser:
    """
    :param add_help: add -h/--help (off for the first pass that only finds --algo)
    :param algo_names: installed algorithms, listed in --help
    :param env_ids: installed envs, listed in --help
    :param srl_models: observation modes and SRL model kinds, listed when --srl-model is given without a value
    :return: the parser of the flags every algorithm shares, generated from :class:`TrainConfig`'s fields
    """
    parser = CLIParser(prog="python -m rl_baselines.train", add_help=add_help,
                       description="Train an RL agent on a robot env; see --algo NAME --help for its own flags.")
    return addFlags(parser, algo_names, env_ids, srl_models)


def validate(args: TrainConfig, registered_rl: dict) -> TrainConfig:
    """
    Check every input before anything is written, and resolve what the flags leave open.

    :param args: the settings as given (frozen: what validation resolves goes into the returned config)
    :param registered_rl: the algorithm table (the valid choices a refusal lists: a command that accepts fewer
        algorithms than train, such as hyperparam_search, passes those only)
    :return: the run's frozen config: the device, the torch threads, a learned SRL model's folder and image size
        resolved, the typed hyperparameters, the env's keywords and the steps a continued model already did; the
        continued model's and the pretraining dataset's paths absolute
    :raises UsageError: on any bad input, with a one-line message
    """
    algo_class, _, action_types = registered_rl[args.algo]
    # the algorithm's own flags not given (a config built in Python) at their defaults, as the command line has them
    given = {*args.flagFields(), *RUN_FIELDS, *args.extra}
    args = args.replace(**{name: value for name, value in algorithmDefaults(args.algo).items() if name not in given})
    args = args.replace(num_cpu=defaultEnvs(args.algo, args.num_cpu))  # (left out: the algorithm's, recorded)
    for flag, value in (("--checkpoint-freq", args.checkpoint_freq), ("--buffer-save-freq", args.buffer_save_freq)):
        if value < -1:
            raise UsageError(f"{flag} {value} is not a step count; valid: a positive number of env steps, 0 or -1")
    if args.tag is not None and (refusal := tagRefusal(args.tag)):
        raise UsageError(refusal)
    if args.tag is not None and not args.run_folder:  # <stamp>_<tag>[_<attempt>], and tensorboard's <env>_..._<that>
        added = len(newStamp()) + len("_") + len(f"_{RUN_FOLDER_ATTEMPTS - 1}")
        if args.tensorboard_log:
            added += len(os.fsencode(tensorboardRunName(args.env, args.srl_model, args.algo, "")))
            added += len(f"_{TENSORBOARD_FOLDER_ATTEMPTS}")  # its sub-folder's suffix when another run has the name
        checkNameLength(args.tag, args.log_dir, "--tag", added, "run folder's name end")
    if args.env not in registered_env:
        raise UsageError(unknownEnvText(args.env))
    env_class = getEnvClass(args.env)
    # --renderer left out: the env's own default, recorded by name (args.json never says None)
    args = args.replace(renderer=resolvedRenderer(args.renderer, args.env))
    args = _chooseSRLModel(args, env_class)
    args = _resolveRunOptions(args, algo_class)  # (after the observation is known: auto depends on it)
    wanted = ActionType.CONTINUOUS if args.continuous_actions else ActionType.DISCRETE
    if wanted not in action_types:
        kind = "continuous" if args.continuous_actions else "discrete"
        hint = "drop -c/--continuous-actions" if args.continuous_actions else "add -c/--continuous-actions"
        supporting = [name for name, entry in registered_rl.items() if wanted in entry[2]]
        raise UsageError(f"--algo {args.algo} does not support {kind} actions ({hint}); algorithms that do: "
                         f"{', '.join(supporting)}")
    if algo_class.USES_ACTION_MASKS and not offersActionMasks(env_class):
        having = envsWhere(offersActionMasks)
        raise UsageError(f"--algo {args.algo} needs action masks, which {args.env} does not offer; envs with masks: "
                         f"{', '.join(having) or 'none installed'}")
    if algo_class.USES_ACTION_MASKS and args.action_repeat > 1:  # a mask holds for the first repeated step only
        raise UsageError(f"--action-repeat {args.action_repeat} is not available with --algo {args.algo} (its action "
                         "masks hold for one env step); valid: 1")
    if args.action_joints:
        if not env_class.ACTION_JOINTS:
            with_joints = envsWhere(lambda env_class: env_class.ACTION_JOINTS)
            raise UsageError(f"--action-joints: {args.env} has no joints to act on; envs with joints: "
                             f"{', '.join(with_joints) or 'none installed'}")
        if not args.continuous_actions:
            raise UsageError("--action-joints needs -c/--continuous-actions (joint actions are continuous)")
    if args.img_shape is not None:
        checkImageShape(args.img_shape)
    pixels = args.srl_model == "raw_pixels" or isLearnedSRLModel(args.srl_model)
    refusal = (envFlagRefusal(args.env, fpv=args.fpv, multi_view=args.multi_view, force_down=args.force_down,
                              random_target=args.random_target, shape_reward=args.shape_reward, pixels=pixels,
                              action_joints=args.action_joints, img_shape=args.img_shape)
               or rendererRefusal(args.renderer, args.env))
    if refusal is not None:
        raise UsageError(refusal)
    _checkGroundTruthScale(args, registered_rl, env_class)
    # what the flags warned of do nothing for is recorded as applied: args.json says what the run did
    args = args.replace(**_appliedWithWarnings(args, algo_class))
    _checkAugment(args, registered_rl)
    if isLearnedSRLModel(args.srl_model):
        args = _resolveSRLModel(args, env_class, registered_rl)
    elif args.latest:
        raise UsageError(f"--latest needs a learned --srl-model ({', '.join(learnedModels())}), not "
                         f"{args.srl_model!r}")
    elif args.srl_config_file is not None and not os.path.isfile(args.srl_config_file):
        # (a sweep passes its file to every run, so it is not refused where it is not read; a missing one is a slip)
        warnings.warn(f"--srl-config-file {args.srl_config_file}: no such file; it is read only to find a learned "
                      f"--srl-model, not {args.srl_model!r}", UsageWarning)
    try:
        hyperparams = algo_class.parserHyperParam(hyperparamStrings(args))
    except ValueError as error:
        sources = [flag for flag, given in (("--hyperparam-file", args.hyperparam_file),
                                            ("--hyperparam", args.hyperparam)) if given]
        raise UsageError(f"{'/'.join(sources) or '--hyperparam'}: {error}") from None
    if args.load_rl_model_path is None:  # (a continued model keeps its own values)
        # the raw-pixel defaults, recorded as flags in args.json (and so in the benchmarks' keys)
        args = args.replace(**pixelDefaultFlags(algo_class, args.srl_model, args.extra, hyperparams, args.augment))
    if args.pretrain_dataset is not None:
        try:
            checkDataset(args.pretrain_dataset, args, registered_rl)
        except ValueError as error:
            raise UsageError(f"--pretrain-dataset: {error}") from None
    try:
        algo_class.checkSettings(args.replace(hyperparams=hyperparams))  # (with --hyperparam-file's values)
    except ValueError as error:
        raise UsageError(str(error)) from None
    # (after checkSettings: an algorithm that takes no raw pixels says so, not what its CNN would need)
    if args.img_shape is not None and args.srl_model == "raw_pixels" and \
            min(args.img_shape[1:]) < algo_class.MIN_IMAGE_SIDE:
        raise UsageError(f"--img-shape {' '.join(map(str, args.img_shape))}: the CNN policy of --algo {args.algo} "
                         f"needs H, W >= {algo_class.MIN_IMAGE_SIDE} with raw_pixels")
    start_timesteps = 0
    if args.load_rl_model_path is None:
        _checkTogether(algo_class, args, hyperparams)
    else:
        if not os.path.isfile(args.load_rl_model_path):
            what = "is a folder, not a model file" if os.path.isdir(args.load_rl_model_path) else "does not exist"
            raise UsageError(f"--load-rl-model-path {args.load_rl_model_path!r} {what}")

        try:
            # the manifest beside the model (if any): same algorithm and observations, files not cut short
            manifest = checkModelFile(args.load_rl_model_path, args.algo, algo_class.API_VERSION,
                                      {"srl_model": args.srl_model, "srl_model_hash": _srlModelHash(args)})
            settings = args.replace(hyperparams=hyperparams, env_kwargs=envKwargsFromArgs(args)).runSettings()
            if manifest is not None:  # same action and observation spaces, before anything is written
                checkSavedSpaces(manifest, settings, algo_class, makeEnv)
            loaded = loadModel(algo_class, args.load_rl_model_path, settings)
        except ValueError as error:
            raise UsageError(f"--load-rl-model-path: {error}") from None
        start_timesteps = loaded.num_timesteps
        args = args.replace(**_keptWithWarnings(args, loaded))
        args, hyperparams = _keptHyperparamsWithWarnings(args, hyperparams, loaded)
        _checkTogether(algo_class, args, hyperparams, continued=True)
    args = args.replace(hyperparams=hyperparams, env_kwargs=envKwargsFromArgs(args), start_timesteps=start_timesteps)
    # the algorithm's own autos (--precision), then auto threads last: they depend on the algorithm's own flags as
    # applied (a continued model's extractor included)
    args = args.replace(**algo_class.resolvedOptions(args.argsRecord()))
    # the files the run reads by path, made absolute for args.json: a --resume from another folder reads the same
    args = args.replace(**{name: os.path.abspath(path) for name, path in (
        ("load_rl_model_path", args.load_rl_model_path), ("pretrain_dataset", args.pretrain_dataset)) if path})
    return args.replace(torch_threads=runThreadsFor(algo_class, args.torch_threads, args.argsRecord()))


def _appliedWithWarnings(args: TrainConfig, algo_class: type) -> dict[str, Any]:
    """
    :param args: the run's settings
    :param algo_class: its algorithm's class
    :return: the settings that do nothing for the run, at what it applies (:func:`appliedSettings`), after one
        warning for each given otherwise among the run options and the algorithm's own flags (the env's flags and
        the observation's warn where they are checked)
    """
    record = args.argsRecord()
    applied = appliedSettings(record)
    reasons = {"eval_episodes": "does nothing without --eval-freq N (evaluations are off by default, unlike "
                                "rl_zoo3's)",
               "min_episodes_save": f"does nothing with --eval-freq {args.eval_freq}: the evaluations choose the best "
                                    "model",
               "buffer_save_freq": f"does nothing: --algo {args.algo} keeps no replay buffer",
               **{name: "does nothing without --pretrain-dataset" for name in ("pretrain_epochs", "pretrain_lr")},
               **{name: why for name, (_, why) in algo_class.idleOptions(record).items()}}
    for name, why in reasons.items():
        if name in applied and record[name] != applied[name]:
            warnings.warn(f"--{name.replace('_', '-')} {record[name]} {why}", UsageWarning)
    return applied


def _keptWithWarnings(args: TrainConfig, loaded: Any) -> dict[str, Any]:
    """
    :param args: the run's settings
    :param loaded: the model it continues (``--load-rl-model-path``)
    :return: the algorithm's flags the model keeps from its save (``BaseRLObject.keptOptions``), at its values,
        after one warning for each given otherwise (one left at its default says nothing)
    """
    kept_options = getattr(loaded, "keptOptions", None)  # (a plugin of API version 1 may have none)
    kept = {name: value for name, value in (kept_options() if callable(kept_options) else {}).items()
            if name in args.extra}
    defaults = algorithmDefaults(args.algo)
    for name, value in kept.items():
        given = args.extra[name]
        if given != value and given != defaults.get(name):
            warnings.warn(f"--{name.replace('_', '-')} {given} does nothing with --load-rl-model-path: the continued "
                          f"model keeps its own, {value}", UsageWarning)
    return kept


def _keptHyperparamsWithWarnings(args: TrainConfig, hyperparams: dict[str, Any],
                                 loaded: Any) -> tuple[TrainConfig, dict[str, Any]]:
    """
    :param args: the run's settings
    :param hyperparams: its typed ``--hyperparam-file``/``--hyperparam`` values
    :param loaded: the model it continues (``--load-rl-model-path``)
    :return: both with the hyperparameters the model keeps (``BaseRLObject.keptHyperparams``) at its values, where its
        flag, ``--hyperparam`` or the file gave them, after one warning for each given otherwise: args.json (the flag,
        the ``--hyperparam`` items) and hyperparams.yaml record what the run trained with
    """
    kept_hyperparams = getattr(loaded, "keptHyperparams", None)  # (a plugin of API version 1 may have none)
    hyperparams, changes, items = dict(hyperparams), {}, list(args.hyperparam)
    for name, (value, why) in (kept_hyperparams() if callable(kept_hyperparams) else {}).items():
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        given = args.extra.get(f"hp_{name}")
        if given is not None and given != value:
            warnings.warn(f"--{name.replace('_', '-')} {given} does nothing with --load-rl-model-path: {why} "
                          f"(recorded as its {name}, {shown})", UsageWarning)
            changes[f"hp_{name}"] = value
        if name in hyperparams and hyperparams[name] != value:
            warnings.warn(f"{name} {hyperparams[name]} (--hyperparam-file/--hyperparam) does nothing with "
                          f"--load-rl-model-path: {why} (recorded as its {name}, {shown})", UsageWarning)
            hyperparams[name] = value
            items = [item for item in items if item.partition(":")[0] != name] + [f"{name}:{shown}"]
    return args.replace(hyperparam=items, **changes), hyperparams


def offersActionMasks(env_class: type) -> bool:
    """:return: whether the env class defines ``action_masks()`` (SRLGymEnv.offersActionMasks; an env plugin not
    derived from SRLGymEnv: the method itself)"""
    offers = getattr(env_class, "offersActionMasks", None)
    return bool(offers()) if callable(offers) else callable(getattr(env_class, "action_masks", None))


def _checkTogether(algo_class: type, args: TrainConfig, hyperparams: dict[str, Any], continued: bool = False) -> None:
    """
    :param algo_class: the algorithm's class
    :param args: the run's settings (its ``hp_*`` flags)
    :param hyperparams: the typed values of --hyperparam-file and --hyperparam
    :param continued: it continues a loaded model (``--load-rl-model-path``: its saved values but those given now)
    :raises UsageError: the hyperparameters do not fit together (``resolveHyperparams``, as training calls it; an API
        version 1 plugin resolves its own), or size a buffer beyond the machine's memory (:func:`bufferMemoryRefusal`):
        a new run's, or a size given now (a continued model's saved one fit when loaded; a v1 plugin's own unknown)
    """
    v1, kind = isV1(algo_class), getattr(algo_class, "BUFFER", None)
    sized_by = kind.hyperparam if isinstance(kind, BufferKind) else None
    if (v1 or continued) and sized_by not in hyperparams and (v1 or args.extra.get(f"hp_{sized_by}") is None):
        return
    resolved = dict(hyperparams) if v1 else algo_class.resolveHyperparams(
        args.replace(hyperparams=hyperparams, env_kwargs=envKwargsFromArgs(args)).runSettings(), dict(hyperparams))
    if refusal := bufferMemoryRefusal(algo_class, args, resolved):
        raise UsageError(refusal)


def _checkGroundTruthScale(args: TrainConfig, algorithms: dict, env_class: type) -> None:
    """
    :param args: the run's settings (srl_ground_truth_scale, srl_model, algo, env)
    :param algorithms: the algorithm table (name -> (class, ...))
    :param env_class: the env's class
    :raises UsageError: ``--srl-ground-truth-scale`` without a learned SRL model (``--srl-state-scale`` there, or
        beside ``--srl-ground-truth-scale``: a warning),
        with an algorithm that normalises states itself (the evolution strategies drop the VecNormalize that applies
        the scale), or on an env without a ground-truth size
    """
    if args.srl_state_scale != "none" and not isLearnedSRLModel(args.srl_model):  # (a sweep passes it to all)
        warnings.warn(f"--srl-state-scale {args.srl_state_scale} scales a learned SRL state: it does nothing for "
                      f"--srl-model {args.srl_model!r}")
    if not args.srl_ground_truth_scale:
        return
    if args.srl_state_scale != "none" and isLearnedSRLModel(args.srl_model):  # (a sweep's cell may add the former)
        warnings.warn(f"--srl-state-scale {args.srl_state_scale} does nothing: --srl-ground-truth-scale replaces it")
    if not isLearnedSRLModel(args.srl_model):
        raise UsageError(f"--srl-ground-truth-scale scales a learned SRL state, not --srl-model {args.srl_model!r}; "
                         f"learned models: {', '.join(learnedModels())}")
    if algorithms[args.algo][0].ALGO_TYPE == AlgoType.EVOLUTION_STRATEGIES:
        others = [name for name, entry in sorted(algorithms.items())
                  if entry[0].ALGO_TYPE != AlgoType.EVOLUTION_STRATEGIES]
        raise UsageError(f"--srl-ground-truth-scale: --algo {args.algo} normalises states itself; algorithms that "
                         f"take it: {', '.join(others)}")
    try:
        env_class.getGroundTruthDim()
    except NotImplementedError:
        raise UsageError(f"--srl-ground-truth-scale: {args.env} has no ground-truth state size") from None


def _checkAugment(args: TrainConfig, algorithms: dict) -> None:
    """
    :param args: the run's settings (augment, srl_model, algo)
    :param algorithms: the algorithm table (name -> (class, ...))
    :raises UsageError: ``--augment`` other than none with an algorithm that does not augment its updates, or on
        observations that are not camera images
    """
    if args.augment == "none":
        return
    if not algorithms[args.algo][0].augmentsUpdates():
        supporting = [name for name, entry in sorted(algorithms.items()) if entry[0].augmentsUpdates()]
        raise UsageError(f"--augment {args.augment}: --algo {args.algo} does not augment its updates; algorithms "
                         f"that do: {', '.join(supporting) or 'none installed'}")
    if args.srl_model != "raw_pixels":
        raise UsageError(f"--augment {args.augment} augments camera images: it needs --srl-model raw_pixels, not "
                         f"{args.srl_model!r} (a state)")


def runDeviceFor(algo_class: type, device: str | None, srl_model: str) -> str:
    """
    :param algo_class: the run's algorithm
    :param device: ``--device`` (None: auto)
    :param srl_model: the run's observation
    :return: the device the run computes on, on this machine: ``auto`` takes the GPU only where the algorithm's
        ``gpuHelps`` says so for these observations (images: ``raw_pixels``)
    :raises ValueError: a bad spelling, or CUDA asked where torch sees no such GPU (one line)
    """
    return resolveDevice(device or "auto", algo_class.gpuHelps(srl_model == "raw_pixels"))


def runThreadsFor(algo_class: type, asked: int, settings: Mapping[str, Any]) -> int:
    """
    :param algo_class: the run's algorithm
    :param asked: ``--torch-threads`` (0: auto)
    :param settings: the run's args.json record (``TrainConfig.argsRecord``): its observation and the algorithm's own
        flags (``--features-extractor``)
    :return: the torch threads the run computes with: auto gives the process's share of the cores where the
        algorithm's networks gain from threads for these settings (``threadsHelpFor``, by default ``threadsHelp``
        for the observations, itself by default ``gpuHelps``: a CNN on ``raw_pixels``), else one thread
    """
    return resolveThreads(asked, algo_class.threadsHelpFor(settings))


def _resolveRunOptions(args: TrainConfig, algo_class: type) -> TrainConfig:
    """
    Resolve ``--device`` to this machine's device and ``--vec-env`` to ``subproc`` or ``dummy`` (both recorded so in
    args.json), and check ``--tensorboard-log``. (``--torch-threads`` is resolved at the end of :func:`validate`,
    once the algorithm's own flags are final: :func:`runThreadsFor`.)

    :param args: the run's settings (device, srl_model, vec_env, tensorboard_log)
    :param algo_class: the run's algorithm (where ``auto`` puts it: :func:`runDeviceFor`)
    :return: the settings with the resolved device and vec env
    :raises UsageError: CUDA asked where there is none, tensorboard not installed, DIR not a writable folder
    :warns: ``--vec-env subproc`` with one env, which always steps in the training process
    """
    if args.vec_env == "subproc" and args.num_cpu == 1:
        warnings.warn("--vec-env subproc does nothing with one env (--num-cpu 1): it steps in the training process",
                      UsageWarning)
    try:
        args = args.replace(device=runDeviceFor(algo_class, args.device, args.srl_model),
                            vec_env=resolveVecEnv(args.vec_env, args.num_cpu, args.env,
                                                  resolvedRenderer(args.renderer, args.env), args.srl_model))
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.tensorboard_log:
        checkTensorboard(args.tensorboard_log)
    return args


def _srlModelHash(args: TrainConfig) -> str | None:
    """:return: the hash of the trained SRL model the run observes (its folder resolved by validate), else None"""
    if args.srl_model_path is None:
        return None

    return describeSRLModel(args.srl_model_path)["hash"]


def _chooseSRLModel(args: TrainConfig, env_class: type) -> TrainConfig:
    """
    Check --srl-model, and with --srl-model-path take the model name from the folder when --srl-model is left at
    its default.

    :param args: the run's settings (srl_model, srl_model_path)
    :param env_class: the env's class (its SRL_MODES)
    :return: the settings, with the folder's model name as srl_model where it was left at its default
    :raises UsageError: unknown name, or an env-computed mode combined with --srl-model-path
    """
    path = args.srl_model_path
    if path is not None:
        if args.srl_model != "raw_pixels" and not isLearnedSRLModel(args.srl_model):
            raise UsageError(f"--srl-model {args.srl_model} is computed by the env and cannot be combined with "
                             f"--srl-model-path (a trained model); drop one of them")
        if args.srl_model == "raw_pixels":  # the default: the folder says which model it holds
            try:
                args = args.replace(srl_model=str(readExpConfig(os.path.abspath(path))["srl_model"]))
            except ValueError as error:
                raise UsageError(f"--srl-model-path {path}: {error}") from None
            if not isLearnedSRLModel(args.srl_model):
                raise UsageError(f"--srl-model-path {path} names {args.srl_model!r}, which is not a trained model")
        return args  # the folder is checked with the rest in _resolveSRLModel
    if args.srl_model not in env_class.SRL_MODES and args.srl_model not in learnedModels():
        raise UsageError(f"unknown --srl-model {args.srl_model!r} for {args.env}; valid choices: "
                         f"{', '.join(env_class.SRL_MODES)} (computed by the env), or a trained model of kind "
                         f"{', '.join(learnedModels()) or '(none installed)'}{failedSRLPluginsText(args.srl_model)}")
    return args


def _resolveSRLModel(args: TrainConfig, env_class: type, registered_rl: dict) -> TrainConfig:
    """
    Find and check the trained SRL model of a learned --srl-model; record its absolute folder in
    ``srl_model_path`` and, without --img-shape, take the model's image size.

    :param args: the run's settings (env, srl_model, srl_model_path, srl_config_file, img_shape, fpv, multi_view)
    :param env_class: the env's class (its SRL_MODES, suggested when no trained model is configured)
    :param registered_rl: the algorithm table (the action kinds of the run's algorithm)
    :return: the settings with the model's folder (and image size)
    :raises UsageError: the model cannot be found or does not fit the run (one line)
    """
    channels = 6 if args.fpv or args.multi_view else 3
    img_shape = (channels, *args.img_shape[1:]) if args.img_shape is not None else None
    prepare_flags = [f"--{k.replace('_', '-')}" for k in ("random_target", "multi_view", "fpv") if getattr(args, k)]
    prepare_flags += ["--img-shape", *map(str, args.img_shape)] if args.img_shape is not None else []
    origin = None
    try:
        if args.latest:
            if args.srl_model_path is not None:
                raise UsageError("--latest picks the model folder itself: drop --srl-model-path")
            # resolved: args.json records the folder (latest off), so that --resume keeps this model
            latest = latestModelFolder(args.srl_log_folder, args.env, args.srl_model, img_shape, channels,
                                       prepare_flags)
            args = args.replace(srl_model_path=latest, latest=False)
            origin = f"--latest's choice {latest}"
            print(f"--latest: using the {args.srl_model} model {args.srl_model_path}", flush=True)
        folder = resolveSRLModel(args.env, args.srl_model, args.srl_config_file, args.srl_model_path,
                                 img_shape=img_shape, channels=channels, prepare_flags=prepare_flags, origin=origin)
    except SRLLookupError as error:
        raise UsageError(f"--srl-model {args.srl_model!r}: {error}; valid choices without a trained model: "
                         f"{', '.join(env_class.SRL_MODES)}") from None
    except ValueError as error:
        raise UsageError(f"--srl-model {args.srl_model}: {error}") from None
    args = args.replace(srl_model_path=folder)
    exp_config = readExpConfig(folder)
    if args.img_shape is None:
        args = args.replace(img_shape=(3, *exp_config["img_shape"][1:]))
    trained_on = trainedRenderer(exp_config)  # None: not recorded by a plugin's model, unknown
    if trained_on not in (None, args.renderer):
        warnings.warn(f"the SRL model was trained on {trained_on} frames and this run draws them with "
                      f"--renderer {args.renderer}: its states may differ (--renderer {trained_on} gives the frames it "
                      "was trained on)", stacklevel=2)
    mismatch = frameSettingsWarning(trainedFrameSettings(exp_config), runFrameSettings(args, env_class),
                                    _fixedFrameSettings(args, registered_rl))
    if mismatch is not None:
        warnings.warn(mismatch, stacklevel=2)
    return args


def _fixedFrameSettings(args: TrainConfig, registered_rl: dict) -> dict[str, str]:
    """
    :param args: the run's settings (algo, continuous_actions)
    :param registered_rl: the installed algorithms (registry entries: class, algo types, action types)
    :return: the frame settings the run's algorithm does not let it change, each with why: continuous_actions where
        the algorithm has one kind of action only (its -c or its absence would be refused)
    """
    if len(registered_rl[args.algo][2]) > 1:
        return {}
    kind = "continuous" if args.continuous_actions else "discrete"
    return {"continuous_actions": f"--algo {args.algo} acts only with {kind} actions"}


def runFrameSettings(args: TrainConfig, env_class: type) -> dict[str, bool | None]:
    """
    :param args: the run's settings (env, random_target, continuous_actions, action_joints, force_down)
    :param env_class: the env's class
    :return: the env settings that shape the run's frames (environments.dataset.FRAME_SETTINGS) as the env uses
        them: -r only where the env offers a random target (as datasets record it), force_down None where the env
        has no such keyword
    """
    return {"random_target": bool(args.random_target) and envOffers(args.env, "random_target"),
            "continuous_actions": bool(args.continuous_actions), "action_joints": bool(args.action_joints),
            "force_down": bool(args.force_down) if env_class.acceptsKeyword("force_down") else None}


def algorithmClass(algo: str, default: bool = False) -> type:
    """
    :param algo: an algorithm name
    :param default: it is the command's default (``--algo`` left out), which the message says when it was skipped
    :return: its class
    :raises UsageError: not installed (the message lists the installed ones and the plugins that failed to load,
        and why a plugin of that name was skipped)
    """
    if algo not in registered_rl:
        raise UsageError(f"unknown --algo {algo!r}{algoChoicesText(algo, default)}")
    return registered_rl[algo][0]


def algorithmDefaults(algo: str) -> dict[str, Any]:
    """
    :param algo: an installed algorithm's name
    :return: every flag of the train command with this algorithm, at its default (the checks an algorithm adds to
        its parser's ``parse_args`` judge whole commands, not defaults: they are not run)
    """
    return vars(algorithmParser(registered_rl[algo][0]).parse_known_args(["--algo", algo])[0])


def algorithmParser(algo_class: type, parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """
    :param algo_class: an algorithm's class
    :param parser: the shared flags' parser to start from (default: :func:`baseParser` listing every algorithm and env)
    :return: the train command's parser with the algorithm's own flags (plugin API v1 declares them on it), and
        ``--num-cpu`` left out at the algorithm's ``DEFAULT_ENVS`` (what its own checks and the sweeps read)
    """
    parser = parser or baseParser(algo_names=list(registered_rl), env_ids=sorted(registered_env))
    parser.set_defaults(num_cpu=algo_class.DEFAULT_ENVS)
    return algo_class.customArguments(parser)
