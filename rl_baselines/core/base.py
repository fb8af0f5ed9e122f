"""The algorithm contract: BaseRLObject, what every algorithm (built in or plugin) is.

Method names are camelCase because published plugins depend on them (docs/architecture.md).

The training callback a learner receives is the old toolbox's: ``callback(_locals, _globals) -> bool``, called
once per vectorised env step, where ``_locals["self"]`` has a ``num_timesteps`` attribute (the env steps taken so
far, all envs together). Returning False stops training. Stable-Baselines3's ``learn(callback=...)`` accepts this
form directly; algorithms written here call it themselves.
"""
from __future__ import annotations

import abc
import argparse
import functools
import os
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from rl_baselines.core.algo_types import ActionType, AlgoType
from rl_baselines.core.checkpointing import restoreRun
from rl_baselines.core.hyperparams import Hyperparam, Interval, givenFlags
from rl_baselines.envs.factory import VecEnvSettings, createEnvs, envKwargsFromArgs, findVecNormalize
from srl_toolbox.cli import UsageError

TrainCallback = Callable[[dict[str, Any], dict[str, Any]], bool]

# Extra member written into Stable-Baselines3 zip files: which algorithm saved them (SB3 ignores it on load).
MANIFEST_MEMBER = "srl_toolbox.json"
# What StableBaselinesRLObject.saveTrainingState writes besides the replay buffer.
SB3_STATE_FILE = "sb3.json"
# The declarations of hyperparameters written before HYPERPARAMS (still read, for plugins written then).
OLDER_DECLARATIONS = ("DEFAULT_HYPERPARAMS", "HYPERPARAM_CHOICES", "HYPERPARAM_BOUNDS", "getOptParam")


class BaseRLObject(abc.ABC):
    """
    Base class of every RL algorithm, built-in or plugin.

    Subclasses must implement the abstract methods save, load, getAction and train (the registry refuses a plugin
    that leaves one out, naming it); customArguments, getActionProba, getOptParam, makeEnv and the resume pair
    (saveTrainingState, loadTrainingState) are optional. A plugin declares its class under the entry-point group
    ``srl_toolbox.rl_algorithms``.
    """

    # A plugin built for another major version is refused with a clear message.
    API_VERSION: ClassVar[int] = 1
    ALGO_TYPE: ClassVar[AlgoType] = AlgoType.REINFORCEMENT_LEARNING
    ACTION_TYPES: ClassVar[tuple[ActionType, ...]] = (ActionType.DISCRETE, ActionType.CONTINUOUS)
    # Env steps between refreshes of the progress bar, monitor reading and live plot.
    LOG_INTERVAL: ClassVar[int] = 1000
    # Env steps between best-model checks (mean reward of the last 100 episodes).
    SAVE_INTERVAL: ClassVar[int] = 5000
    # Extension of the model file the train command names ``<algo>_model<MODEL_EXTENSION>``.
    MODEL_EXTENSION: ClassVar[str] = ".zip"
    # Whether ``train`` calls ``callback.cleanPoint(num_timesteps)`` (see notifyCleanPoint) between updates, where a
    # checkpoint is exactly what training goes on from; periodic checkpoints then wait for the next one.
    CHECKPOINT_AT_CLEAN_POINTS: ClassVar[bool] = False
    # The hyperparameter spec (rl_baselines.core.hyperparams): each hyperparameter declared once. When a class declares
    # it, DEFAULT_HYPERPARAMS, HYPERPARAM_CHOICES and HYPERPARAM_BOUNDS are derived from it, and customArguments,
    # parserHyperParam, getOptParam and hyperparamsFromArgs work from it.
    HYPERPARAMS: ClassVar[dict[str, Hyperparam]] = {}
    # Derived from HYPERPARAMS (read-only views); plugins written before it set them by hand (hyperparamSpec reads them).
    DEFAULT_HYPERPARAMS: ClassVar[dict[str, Any]] = {}
    HYPERPARAM_CHOICES: ClassVar[dict[str, tuple[Any, ...]]] = {}
    HYPERPARAM_BOUNDS: ClassVar[dict[str, Interval | tuple[float | None, float | None]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        spec = cls.__dict__.get("HYPERPARAMS")
        if spec:
            for name, hyperparam in spec.items():
                if not isinstance(hyperparam, Hyperparam):
                    raise TypeError(f"{cls.__name__}.HYPERPARAMS[{name!r}] is a {type(hyperparam).__name__}, "
                                    f"not a rl_baselines.core.hyperparams.Hyperparam")
            both = [name for name in OLDER_DECLARATIONS[:3] if name in cls.__dict__]
            if both:
                raise TypeError(f"{cls.__name__} declares HYPERPARAMS and {', '.join(both)}: declare each "
                                f"hyperparameter once, in HYPERPARAMS (the others are derived from it)")
            cls.DEFAULT_HYPERPARAMS = {name: h.default for name, h in spec.items()}
            cls.HYPERPARAM_CHOICES = {name: h.choices for name, h in spec.items() if h.choices is not None}
            cls.HYPERPARAM_BOUNDS = {name: h.interval for name, h in spec.items() if h.bounds is not None}

    def __init__(self) -> None:
        self.num_timesteps = 0

    @abc.abstractmethod
    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        """
        Persist the model (and its normalisation statistics beside it), atomically.

        :param save_path: the model file to write
        :param _locals: the learner's locals when called from a callback (optional)
        """
        raise NotImplementedError

    @classmethod
    @abc.abstractmethod
    def load(cls, load_path: str, args: argparse.Namespace | None = None) -> BaseRLObject:
        """
        Load a model written by :meth:`save`.

        :param load_path: the model file
        :param args: the run's arguments (from args.json), if needed to rebuild the model
        :return: an instance ready for getAction
        :raises ValueError: the file is corrupt or was written by another algorithm
        """
        raise NotImplementedError

    @classmethod
    def customArguments(cls, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        """
        Add the algorithm's own command-line flags: by default one per hyperparameter of ``HYPERPARAMS``
        (:meth:`addHyperparamArguments`); an override adding more flags calls ``super().customArguments(parser)``.

        :param parser: the train command's parser
        :return: the same parser
        """
        if cls.HYPERPARAMS:
            cls.addHyperparamArguments(parser)
        return parser

    # --- hyperparameters (rl_baselines.core.hyperparams) ---------------------------------------------------------------

    @classmethod
    def declaresOldStyle(cls) -> bool:
        """
        :return: whether the class declares its hyperparameters the older way (a plugin of API version 1 may): the
            class, or a parent below the nearest one that declares ``HYPERPARAMS``, sets ``DEFAULT_HYPERPARAMS``,
            ``HYPERPARAM_CHOICES``, ``HYPERPARAM_BOUNDS`` or ``getOptParam`` itself
        """
        for klass in cls.__mro__:
            if klass is BaseRLObject:
                return False
            if klass.__dict__.get("HYPERPARAMS"):
                return False
            if any(name in klass.__dict__ for name in OLDER_DECLARATIONS):
                return True
        return False

    @classmethod
    def hyperparamSpec(cls) -> dict[str, Hyperparam]:
        """
        :return: every hyperparameter with its default, allowed values and search range: ``HYPERPARAMS``, or for a
            class declared the older way (:meth:`declaresOldStyle`), the view of its ``DEFAULT_HYPERPARAMS``,
            ``HYPERPARAM_CHOICES``, ``HYPERPARAM_BOUNDS`` and ``getOptParam`` (with the help of an inherited
            ``HYPERPARAMS`` entry of the same name)
        """
        if not cls.declaresOldStyle():
            return dict(cls.HYPERPARAMS)
        choices = getattr(cls, "HYPERPARAM_CHOICES", {}) or {}
        bounds = getattr(cls, "HYPERPARAM_BOUNDS", {}) or {}
        space = cls.getOptParam() or {}
        spec = {}
        for name, default in (getattr(cls, "DEFAULT_HYPERPARAMS", {}) or {}).items():
            search = space.get(name)
            if search is not None:
                search = list(search[1]) if search[0] is list else (*search[1], *search[2:])
            inherited = cls.HYPERPARAMS.get(name)
            spec[name] = Hyperparam.unchecked(default, help=inherited.help if inherited is not None else "",
                                              choices=choices.get(name), bounds=bounds.get(name), search=search)
        return spec

    @classmethod
    def addHyperparamArguments(cls, parser: argparse.ArgumentParser, spec: dict[str, Hyperparam] | None = None,
                               group: Any = None) -> argparse.ArgumentParser:
        """
        One flag per hyperparameter (``n_steps`` -> ``--n-steps``, stored as ``args.hp_n_steps``, None when not
        given): booleans are switches that also take a value (``--dueling``, ``--dueling false``), strings with
        choices list them, the others are typed and checked by :meth:`parserHyperParam` when parsed (a bad value is a
        one-line usage error).

        :param parser: the train command's parser
        :param spec: the hyperparameters (default: :meth:`hyperparamSpec`)
        :param group: the argument group to add the flags to (default: a new one, "<NAME> hyperparameters")
        :return: the same parser
        """
        spec = cls.hyperparamSpec() if spec is None else spec
        title = getattr(cls, "NAME", "") or cls.__name__
        group = parser.add_argument_group(f"{title} hyperparameters (defaults in brackets)") if group is None else group
        for name, hyperparam in spec.items():
            flag, dest, default = f"--{name.replace('_', '-')}", f"hp_{name}", hyperparam.default
            described = f"{hyperparam.help} " if hyperparam.help else ""
            if isinstance(default, bool):
                group.add_argument(flag, dest=dest, type=strToBool, nargs="?", const=True, default=None,
                                   metavar="BOOL", help=f"{described}switch; '{flag} false' turns it off [{default}]")
            elif isinstance(default, str) and hyperparam.choices is not None:
                group.add_argument(flag, dest=dest, choices=hyperparam.choices, default=None,
                                   help=f"{described}[{default}]")
            else:
                group.add_argument(flag, dest=dest, type=functools.partial(cls._flagValue, name), default=None,
                                   metavar=type(default).__name__.upper(), help=f"{described}[{default}]")
        return parser

    @classmethod
    def _flagValue(cls, name: str, raw: str) -> Any:
        try:
            return cls.checkHyperparam(name, cls.parserHyperParam({name: raw})[name])
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    @classmethod
    def checkHyperparam(cls, name: str, value: Any) -> Any:
        """
        :param name: a hyperparameter
        :param value: its typed value
        :return: the value
        :raises ValueError: not one of its choices, or out of its bounds (one line)
        """
        hyperparam = cls.hyperparamSpec().get(name)
        problem = None if hyperparam is None else hyperparam.problem(value)
        if problem is not None:
            raise ValueError(f"hyperparameter {name!r} {problem}, got {value!r}")
        return value

    @classmethod
    def checkHyperparams(cls, hyperparams: dict[str, Any]) -> None:
        """
        Check every hyperparameter, and how they fit together (override to add such checks).

        :param hyperparams: all the hyperparameters of a run
        :raises ValueError: the first problem found (one line)
        """
        for name, value in hyperparams.items():
            cls.checkHyperparam(name, value)

    @classmethod
    def resolveHyperparams(cls, args: argparse.Namespace, train_kwargs: dict[str, Any] | None,
                           saved: dict[str, Any] | None = None) -> dict[str, Any]:
        """
        The hyperparameters a training run uses (:meth:`hyperparamsFromArgs`), checked together
        (:meth:`checkHyperparams`).

        :param args: parsed arguments
        :param train_kwargs: typed ``--hyperparam`` values
        :param saved: the hyperparameters of a model training continues from
        :return: every hyperparameter, typed
        :raises UsageError: they do not fit together (the train command cannot check this before the run folder
            exists: a continued model's saved values take part)
        """
        # (an override written for the older two-argument form is called as such when there is nothing saved)
        hyperparams = (cls.hyperparamsFromArgs(args, train_kwargs) if saved is None
                       else cls.hyperparamsFromArgs(args, train_kwargs, saved))
        try:
            cls.checkHyperparams(hyperparams)
        except ValueError as error:
            raise UsageError(str(error)) from None
        return hyperparams

    @classmethod
    def hyperparamsFromArgs(cls, args: argparse.Namespace, train_kwargs: dict[str, Any] | None,
                            saved: dict[str, Any] | None = None) -> dict[str, Any]:
        """
        Which setting wins: the default, then the saved model's value (``saved``, when continuing one), then the
        flag, then ``--hyperparam`` (``train_kwargs``).

        :param args: parsed arguments (the ``hp_*`` flags of :meth:`addHyperparamArguments`)
        :param train_kwargs: typed ``--hyperparam`` values
        :param saved: the hyperparameters of a model training continues from
        :return: every hyperparameter, typed
        """
        spec = cls.hyperparamSpec()
        hyperparams = {name: hyperparam.default for name, hyperparam in spec.items()}
        hyperparams.update(saved or {})
        hyperparams.update(givenFlags(args, spec))
        hyperparams.update(train_kwargs or {})
        return hyperparams

    @abc.abstractmethod
    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None, deterministic: bool = False) -> np.ndarray:
        """
        :param observation: a batch of observations, one per env
        :param dones: which envs just ended an episode (for recurrent policies)
        :param deterministic: no randomness: the most likely discrete action, and for continuous actions the mode
            of the policy's distribution (a Gaussian's mean, no noise), squashed and clipped like a sampled action;
            the same observation then always gives the same action
        :return: a batch of actions, one per env
        """
        raise NotImplementedError

    def getActionProba(self, observation: np.ndarray, dones: np.ndarray | None = None) -> np.ndarray:
        """
        :param observation: a batch of observations
        :param dones: which envs just ended an episode
        :return: action probabilities (discrete) or the mean action (continuous), one row per env
        """
        raise NotImplementedError(f"{type(self).__name__} has no action distribution")

    @classmethod
    def getOptParam(cls) -> dict[str, tuple] | None:
        """
        The hyperparameter search space: ``{name: (type, range)}`` where type is ``int`` or ``float`` with
        ``(low, high)`` (a third element ``"log"`` samples on a log scale), or ``list`` with the choices.

        :return: the search space, or None when the algorithm has no hyperparameters to search (default: the
            ``search`` entries of ``HYPERPARAMS``)
        """
        space = {name: h.optParam() for name, h in cls.HYPERPARAMS.items() if h.search is not None}
        return space or None

    @classmethod
    def parserHyperParam(cls, hyperparams: dict[str, str]) -> dict[str, Any]:
        """
        Cast ``--hyperparam KEY:VALUE`` strings with the types of :meth:`getOptParam` (a value of a searched list
        is taken as the list has it) and of the defaults, and check them against the spec's choices and bounds
        (:meth:`checkHyperparam`).

        :param hyperparams: raw strings by name
        :return: typed values by name
        :raises ValueError: unknown name or a value of the wrong type
        """
        space = cls.getOptParam() or {}
        defaults = {name: hyperparam.default for name, hyperparam in cls.hyperparamSpec().items()}
        types = {name: spec[0] for name, spec in space.items()}
        for name, value in defaults.items():
            types.setdefault(name, type(value))
        parsed: dict[str, Any] = {}
        for name, raw in hyperparams.items():
            if name not in types:
                valid = ", ".join(sorted(types)) or "none"
                raise ValueError(f"unknown hyperparameter {name!r} for this algorithm; valid names: {valid}")
            if types[name] is list:
                parsed[name] = _castChoice(name, raw, space[name][1], defaults.get(name))
            else:
                parsed[name] = _castValue(name, raw, types[name])
        for name, value in parsed.items():  # choices and bounds of the spec (none for a class without them)
            cls.checkHyperparam(name, value)
        return parsed

    @classmethod
    def normalisationFolder(cls, args: argparse.Namespace) -> str | None:
        """
        :param args: the run's arguments
        :return: the folder of the model training continues from (``args.load_rl_model_path``: its normalisation
            statistics), or None
        """
        load_path = args.load_rl_model_path
        return os.path.dirname(os.path.abspath(load_path)) if load_path else None

    def makeTrainingEnv(self, args: argparse.Namespace, env_kwargs: dict[str, Any] | None = None) -> Any:
        """
        The env of ``train``: :meth:`makeEnv` with the normalisation statistics of the model training continues from
        (restored frozen), switched back to updating.

        :param args: the run's arguments
        :param env_kwargs: env constructor keywords
        :return: the VecEnv
        """
        env = self.makeEnv(args, env_kwargs, load_path_normalise=self.normalisationFolder(args))
        vec_normalize = findVecNormalize(env)
        if vec_normalize is not None:
            vec_normalize.training = True  # a restored normaliser keeps adapting while training goes on
        return env

    @classmethod
    def makeEnv(
        cls,
        args: argparse.Namespace,
        env_kwargs: dict[str, Any] | None = None,
        load_path_normalise: str | None = None,
    ) -> Any:
        """
        Build the vectorised training (or replay) env; override to change wrappers.

        :param args: the run's arguments; ``args.monitor_dir`` (None: no monitor files) receives the monitor CSVs
        :param env_kwargs: env constructor keywords
        :param load_path_normalise: folder with saved normalisation statistics to restore
        :return: a VecEnv
        """

        if env_kwargs is None:
            env_kwargs = envKwargsFromArgs(args)
        return createEnvs(VecEnvSettings.fromArgs(args), env_kwargs, load_path_normalise, monitor_dir=args.monitor_dir)

    @abc.abstractmethod
    def train(
        self,
        args: argparse.Namespace,
        callback: TrainCallback,
        env_kwargs: dict[str, Any] | None = None,
        train_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """
        Build the env and learn for ``args.num_timesteps`` steps, calling ``callback`` after every vectorised step.

        :param args: the run's arguments
        :param callback: ``callback(_locals, _globals) -> bool`` (see the module docstring)
        :param env_kwargs: env constructor keywords
        :param train_kwargs: hyperparameters parsed from ``--hyperparam``
        """
        raise NotImplementedError

    # --- resuming (optional: an algorithm without these cannot be resumed with train --resume) ---------------------

    def saveTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        """
        Write what continuing training needs beyond the model file (which holds the weights, the optimizer state
        and the step count): the algorithm's own random generators, schedules, search state... as NumPy arrays
        or JSON, never pickle. Called by the training callback from inside ``train`` (the env is open). The global
        generators (Python, NumPy, torch) and the envs' are saved by the caller.

        :param folder: a new folder for these files (created by the method)
        :param replay_buffer_folder: where to write the replay buffer this time, None to leave it out
        :raises NotImplementedError: the algorithm cannot resume (the default)
        """
        raise NotImplementedError

    def loadTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        """
        Restore what :meth:`saveTrainingState` wrote. Called through :meth:`restoreTrainingState` once ``train``
        has built its env and loaded the checkpoint's model, before the first env step.

        :param folder: the folder saveTrainingState wrote
        :param replay_buffer_folder: a replay buffer folder to restore, None to start with an empty buffer
        :raises ValueError: the state does not fit this run (one line)
        """
        raise NotImplementedError

    @classmethod
    def savedHyperparams(cls, load_path: str) -> dict[str, Any] | None:
        """
        The hyperparameters a saved model file keeps, for an algorithm whose model file holds them (training that
        continues the model goes on with them unless flags override them); None (the default) for the others.

        :param load_path: the model file given to ``--load-rl-model-path``
        :return: name -> value, or None
        """
        return None

    @classmethod
    def supportsResume(cls) -> bool:
        """:return: whether the class implements saveTrainingState and loadTrainingState"""
        return (cls.saveTrainingState is not BaseRLObject.saveTrainingState
                and cls.loadTrainingState is not BaseRLObject.loadTrainingState)

    def restoreTrainingState(self, args: argparse.Namespace) -> bool:
        """
        Resume from the checkpoint ``args.resume_from`` (set by ``train --resume``): envs restart their episodes,
        :meth:`loadTrainingState`, then the global random generators. ``train`` calls this once its env and model
        exist, right before its first env step.

        :param args: the run's arguments
        :return: whether a checkpoint was restored
        """
        if not args.resume_from:
            return False

        restoreRun(self, args)
        return True


def notifyCleanPoint(callback: Any, num_timesteps: int) -> None:
    """
    Tell the training callback that the algorithm is between two updates (see CHECKPOINT_AT_CLEAN_POINTS); a plain
    function callback is left alone.

    :param callback: the callback ``train`` received
    :param num_timesteps: env steps taken so far
    """
    clean_point = getattr(callback, "cleanPoint", None)
    if clean_point is not None:
        clean_point(int(num_timesteps))


def _castValue(name: str, raw: str, kind: Any) -> Any:
    if isinstance(kind, type) and issubclass(kind, str) and kind is not str:
        try:  # a str subclass whose constructor checks the value (see rl_baselines.core.hyperparams)
            return kind(raw)
        except (argparse.ArgumentTypeError, ValueError) as error:
            raise ValueError(f"hyperparameter {name!r}: {error}") from None
    try:
        if kind is bool:
            if raw.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return raw.lower() in ("true", "1")
        if kind is int:
            value = float(raw)
            if not value.is_integer():
                raise ValueError
            return int(value)
        if kind is float:
            return float(raw)
        if kind is list or isinstance(kind, tuple):
            return raw
        return kind(raw)
    except ValueError:
        type_name = getattr(kind, "__name__", str(kind))
        raise ValueError(f"hyperparameter {name!r} needs a {type_name} value, got {raw!r}") from None


def _castChoice(name: str, raw: str, choices: Any, default: Any) -> Any:
    """A categorical hyperparameter: the choice written as ``raw`` (typed as in the search space); a value off the
    list is accepted only for a numeric hyperparameter or one of a checking str type (the list is then just a search
    grid), as that type reads it."""
    for choice in choices:
        if raw == str(choice):
            return choice
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return _castValue(name, raw, type(default))
    if isinstance(default, str) and type(default) is not str:  # a checking str type: the list is a search grid
        return _castValue(name, raw, type(default))
    raise ValueError(f"hyperparameter {name!r} must be one of {', '.join(map(str, choices))}, got {raw!r}")


def strToBool(raw: str) -> bool:
    """
    argparse type: a boolean written true/false, 1/0 or yes/no.

    :param raw: the command-line string
    :return: the value
    """
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {raw!r}")
