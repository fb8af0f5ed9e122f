"""The one adapter between the algorithm contract's two versions, and the one place that calls an algorithm's
``makeEnv``, ``load`` and ``train`` for the commands.

Plugin API version 2 (``BaseRLObject.API_VERSION = 2``, every built-in algorithm) hands an algorithm objects: a
frozen :class:`rl_baselines.core.run_settings.RunSettings`, the env (built by the caller through the class's
``makeTrainingEnv``), the step budget, the resolved hyperparameters, the callback, the logger and an optional
:class:`rl_baselines.core.checkpointing.Checkpoint`. Version 1 handed it the run's ``argparse.Namespace``: a class
declaring ``API_VERSION = 1`` (the bundled ``cem`` plugin, any plugin written before version 2) is called with a
fresh Namespace made from :attr:`RunSettings.arguments` (the values the train command parsed), exactly as before::

    v1                                              v2
    train(args, callback, env_kwargs, train_kwargs) train(env, total_timesteps, hyperparams, callback, logger,
                                                          settings, checkpoint)
    args.num_timesteps                              total_timesteps
    args.seed, args.device, args.run_dir, ...       settings.seed, settings.device, settings.run_dir, ...
    args.load_rl_model_path                         settings.continue_from
    args.resume_from, args.resume_buffer            checkpoint.folder, checkpoint.buffer_folder
    env_kwargs                                      settings.env_kwargs (the env itself: env)
    train_kwargs                                    settings.hyperparam_overrides (resolved: hyperparams)
    makeEnv(args, env_kwargs, load_path_normalise)  makeEnv(settings, env_kwargs, load_path_normalise)
    load(path, args)                                load(path, settings)

The other direction is covered too: a version 1 plugin calling the base class's helpers with its Namespace
(``super().makeEnv(args, ...)``, ``self.makeTrainingEnv(args, ...)``, ``self.restoreTrainingState(args)``) gets them
converted here (:func:`settingsFromArguments`, :func:`checkpointFromArguments`).

Invariant: a version 1 algorithm never sees a RunSettings, a version 2 one never sees a Namespace.
"""
from __future__ import annotations

import argparse
import inspect
from typing import Any

from rl_baselines.core.checkpointing import Checkpoint
from rl_baselines.core.run_settings import ARGUMENT_NAMES, RunSettings
from rl_baselines.envs.factory import envKwargsFromArgs
from srl_toolbox.errors import CommandFailed
from srl_toolbox.plugins import apiMajor

# The contract versions this toolbox runs: version 2 natively, version 1 through this adapter.
CURRENT_API_VERSION = 2
SUPPORTED_API_VERSIONS = (1, 2)
# The arguments training passes to a version 2 algorithm's train, in order
V2_TRAIN_ARGUMENTS = ("env", "total_timesteps", "hyperparams", "callback", "logger", "settings", "checkpoint")
# The attribute of a version 2 train that also takes version 1's call (BaseRLObject wraps each version 2 train so)
V1_CALL_TAKEN = "takes_v1_call"


def isV1(algo_class: type) -> bool:
    """
    :param algo_class: an algorithm class
    :return: whether it implements plugin API version 1 (the Namespace contract): it declares ``API_VERSION = 1``,
        or its ``train`` has version 1's signature ``train(self, args, callback, ...)`` (version 1 did not ask a
        plugin to declare its version: one that inherited the base class's then is version 1 by its ``train``)
    """
    if apiMajor(getattr(algo_class, "API_VERSION", None)) == 1:
        return True
    train = getattr(algo_class, "train", None)
    try:
        parameters = list(inspect.signature(train).parameters) if train is not None else []
    except (TypeError, ValueError):
        return False
    return parameters[1:2] == ["args"]


def _takes(function: Any, *args: Any, **kwargs: Any) -> bool:
    """:return: whether ``function(None, *args, **kwargs)`` binds to its signature (one it has none of: True)"""
    try:
        inspect.signature(function).bind(None, *args, **kwargs)
    except TypeError:
        return False
    except ValueError:  # (no signature to read)
        return True
    return True


def declaredVersionConflict(algo_class: type) -> str | None:
    """
    :param algo_class: an algorithm class
    :return: why it cannot run, None when it can: it declares ``API_VERSION`` 2 (in itself or in a class it derives
        from) and has version 1's ``train(self, args, ...)`` there or in a class above (that class's author declared
        version 2 with version 1's ``train`` in view). A version 1 ``train`` below the declaration (a subclass of a
        built-in algorithm, or of BaseRLObject, which declares the current version) is version 1 by its ``train``,
        which version 1 did not ask to declare, and runs through this adapter. Or it declares version 1 and has a
        ``train`` of version 2's signature that cannot take version 1's call (:func:`_v2TrainOnV1`).
    """
    if apiMajor(getattr(algo_class, "API_VERSION", None)) == 1:
        return _v2TrainOnV1(algo_class)
    if apiMajor(getattr(algo_class, "API_VERSION", None)) != 2 or not isV1(algo_class):
        return None
    declaring, training = _definers(algo_class)
    if not issubclass(declaring, training):
        return None
    where, origin = _whereDefined(algo_class)
    return (f"{algo_class.__name__} declares API_VERSION {algo_class.API_VERSION!r}{where}, but its train"
            f"{inspect.signature(algo_class.train)}{origin} is version 1's; version 2's takes (self, env, "
            "total_timesteps, hyperparams, callback, logger, settings, checkpoint=None): declare API_VERSION = 1 "
            "to run it through the version 1 adapter, or move it to version 2 (docs/plugins.md, API version 1)")


def _definers(algo_class: type) -> tuple[type, type]:
    """:return: the classes of ``algo_class``'s MRO that declare its ``API_VERSION`` and define its ``train``"""
    return (next(klass for klass in algo_class.__mro__ if "API_VERSION" in vars(klass)),
            next(klass for klass in algo_class.__mro__ if "train" in vars(klass)))


def _whereDefined(algo_class: type) -> tuple[str, str]:
    """:return: `` (in Base)`` where a base class declares the version, `` (from Base)`` where one defines ``train``
    (each empty when ``algo_class`` does it itself), for the refusals' messages"""
    declaring, training = _definers(algo_class)
    return ("" if declaring is algo_class else f" (in {declaring.__name__})",
            "" if training is algo_class else f" (from {training.__name__})")


def _v2TrainOnV1(algo_class: type) -> str | None:
    """
    :param algo_class: an algorithm class declaring ``API_VERSION`` 1 (in itself or in a class it derives from)
    :return: why it cannot run, None when it can: its ``train`` takes version 2's arguments (self, env,
        total_timesteps, hyperparams, callback, logger, settings, checkpoint) and cannot take the call this adapter
        makes, ``train(args, callback, env_kwargs=..., train_kwargs=...)``, so training would start with a TypeError.
        A ``train`` that takes both (``*args, **kwargs``), or a built-in version 2 ``train`` inherited (it converts
        version 1's call itself: :data:`V1_CALL_TAKEN`), is not refused.
    """
    train = getattr(algo_class, "train", None)
    if train is None or getattr(train, V1_CALL_TAKEN, False) or _takes(train, "args", "callback", env_kwargs=None,
                                                                          train_kwargs=None):
        return None
    if not _takes(train, *V2_TRAIN_ARGUMENTS):
        return None  # (neither version's: train's own error names it)
    where, origin = _whereDefined(algo_class)
    return (f"{algo_class.__name__} declares API_VERSION {algo_class.API_VERSION!r}{where}, but its train"
            f"{inspect.signature(train)}{origin} is version 2's; version 1's takes (self, args, callback, "
            "env_kwargs=None, train_kwargs=None): declare API_VERSION = 2 to run it as version 2, "
            "or write it as version 1's (docs/plugins.md, API version 1)")


def namespaceOf(settings: RunSettings) -> argparse.Namespace:
    """
    :param settings: a run's settings
    :return: a new Namespace of the run's arguments (plugin API version 1), the algorithm's to change
    """
    return argparse.Namespace(**dict(settings.arguments))


def settingsFromArguments(args: argparse.Namespace) -> RunSettings:
    """
    :param args: the run's arguments in the Namespace form of plugin API version 1 (every train flag, the run's
        folders, the algorithm's own flags)
    :return: the same run's settings
    """
    values = dict(vars(args))
    fields = {name: values[ARGUMENT_NAMES.get(name, name)] for name in RunSettings.__dataclass_fields__
              if ARGUMENT_NAMES.get(name, name) in values and name not in ("options", "arguments", "env_kwargs")}
    known = set(fields) | set(ARGUMENT_NAMES.values())
    options = {name: value for name, value in values.items() if name not in known}
    return RunSettings(**fields, env_kwargs=envKwargsFromArgs(args), options=options, arguments=values)


def asRunSettings(settings: Any) -> RunSettings:
    """
    :param settings: a RunSettings, or the Namespace a caller written for version 1 passes instead (to ``makeEnv``,
        ``makeTrainingEnv``, ``normalisationFolder``)
    :return: the RunSettings
    """
    return settings if isinstance(settings, RunSettings) else settingsFromArguments(settings)


def checkpointFromArguments(args: argparse.Namespace) -> Checkpoint | None:
    """
    :param args: the run's arguments in the Namespace form of plugin API version 1
    :return: the checkpoint a resumed run restores (``args.resume_from``, ``args.resume_buffer``), None otherwise
    """
    folder = getattr(args, "resume_from", None)
    return Checkpoint(folder, getattr(args, "resume_buffer", None)) if folder else None


def makeEnv(algo_class: type, settings: RunSettings, env_kwargs: dict[str, Any] | None = None,
            load_path_normalise: str | None = None) -> Any:
    """
    :param algo_class: an algorithm class of either version
    :param settings: the run's settings (one env, no monitor files... as the caller wants them)
    :param env_kwargs: env constructor keywords (default: the run's)
    :param load_path_normalise: folder of normalisation statistics to restore, frozen
    :return: the class's VecEnv
    """
    if isV1(algo_class):
        return algo_class.makeEnv(namespaceOf(settings), env_kwargs, load_path_normalise=load_path_normalise)
    return algo_class.makeEnv(settings, env_kwargs, load_path_normalise=load_path_normalise)


def loadModel(algo_class: type, load_path: str, settings: RunSettings | None = None) -> Any:
    """
    :param algo_class: an algorithm class of either version
    :param load_path: a model file its ``save`` wrote
    :param settings: the run's settings (device...), None when unknown
    :return: the loaded agent
    :raises ValueError: missing, corrupt or foreign file (one line)
    :raises CommandFailed: the class's ``load`` returned no agent (None, ...): the plugin's bug, in one line
    """
    if isV1(algo_class):
        model = algo_class.load(load_path, None if settings is None else namespaceOf(settings))
    else:
        model = algo_class.load(load_path, settings)
    if not callable(getattr(model, "getAction", None)):
        raise CommandFailed(f"{algo_class.__module__}.{algo_class.__qualname__}.load returned {type(model).__name__}, "
                            f"not an agent: load must return the loaded model (an instance of the class)")
    return model


def trainAlgorithm(algo: Any, settings: RunSettings, total_timesteps: int, callback: Any, logger: Any = None,
                   checkpoint: Checkpoint | None = None) -> None:
    """
    Train ``algo`` for ``total_timesteps`` env steps: version 2 gets the env (the class's ``makeTrainingEnv``: the
    normalisation of the model it continues from, updating) and its resolved hyperparameters (default < continued
    model's < flag < ``--hyperparam``, checked together); version 1 gets the Namespace and builds them itself.

    :param algo: a new instance of an algorithm class of either version
    :param settings: the run's settings
    :param total_timesteps: env steps to take in this call (counted on from a continued model's)
    :param callback: the training callback, passed through as given
    :param logger: the SB3 Logger of the run's progress.csv and tensorboard, None for the algorithm's default
    :param checkpoint: the checkpoint a resumed run restores, None otherwise
    :raises UsageError: the hyperparameters do not fit together, or the run does not fit the algorithm (one line)
    """
    algo_class = type(algo)
    if isV1(algo_class):
        args = namespaceOf(settings)
        args.num_timesteps = int(total_timesteps)
        args.resume_from = None if checkpoint is None else checkpoint.folder
        args.resume_buffer = None if checkpoint is None else checkpoint.buffer_folder
        algo.train(args, callback, env_kwargs=dict(settings.env_kwargs),
                   train_kwargs=dict(settings.hyperparam_overrides))
        return
    saved = algo_class.savedHyperparams(settings.continue_from) if settings.continue_from else None
    hyperparams = algo_class.resolveHyperparams(settings, dict(settings.hyperparam_overrides), saved)
    env = algo_class.makeTrainingEnv(settings)
    algo.train(env, int(total_timesteps), hyperparams, callback, logger, settings, checkpoint)


def trainFromArguments(algo: Any, train: Any, args: argparse.Namespace, callback: Any,
                       env_kwargs: dict[str, Any] | None = None, train_kwargs: dict[str, Any] | None = None) -> None:
    """
    A version 2 ``train`` called the version 1 way, ``train(args, callback, env_kwargs, train_kwargs)``: by a
    version 1 subclass of a built-in algorithm (``super().train(args, ...)``) or by code written for version 1.
    The env, hyperparameters and checkpoint are made from ``args`` as :func:`trainAlgorithm` makes them.

    :param algo: the algorithm
    :param train: the version 2 ``train`` function to call (unbound)
    :param args: the run's arguments in the Namespace form
    :param callback: the training callback
    :param env_kwargs: env constructor keywords (default: from ``args``)
    :param train_kwargs: typed ``--hyperparam`` values
    """
    settings = settingsFromArguments(args).replace(hyperparam_overrides=dict(train_kwargs or {}))
    if env_kwargs is not None:
        settings = settings.replace(env_kwargs=env_kwargs)
    algo_class = type(algo)
    saved = algo_class.savedHyperparams(settings.continue_from) if settings.continue_from else None
    hyperparams = algo_class.resolveHyperparams(settings, dict(train_kwargs or {}), saved)
    env = algo_class.makeTrainingEnv(settings)
    train(algo, env, int(args.num_timesteps), hyperparams, callback, None, settings, checkpointFromArguments(args))
