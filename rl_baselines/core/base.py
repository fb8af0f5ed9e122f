"""The algorithm contract: BaseRLObject, what every algorithm (built in or plugin) is.

Plugin API version 2 (this class's ``API_VERSION``): an algorithm receives objects, not the run's Namespace --
``train(env, total_timesteps, hyperparams, callback, logger, settings, checkpoint)``,
``makeEnv(settings, env_kwargs, load_path_normalise)`` and ``load(path, settings)``, where ``settings`` is the run's
frozen :class:`rl_baselines.core.run_settings.RunSettings`. A class declaring ``API_VERSION = 1`` is still run,
through the adapter :mod:`rl_baselines.core.plugin_v1` (which also converts a version 1 plugin's Namespace when it
calls this class's helpers). The hyperparameter machinery lives in :mod:`rl_baselines.core.hyperparams`; the
classmethods here are its thin entry points, so that an algorithm overrides one and the others call its override.

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
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np
import torch
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from rl_baselines.core import hyperparams as hp
from rl_baselines.core.algo_types import ActionType, AlgoType
from rl_baselines.core.buffer_memory import BufferKind
from rl_baselines.core.checkpointing import Checkpoint, restoreRun
from rl_baselines.core.hyperparams import OLDER_DECLARATIONS, Hyperparam, Interval, strToBool
from rl_baselines.core.plugin_v1 import (
    CURRENT_API_VERSION,
    SUPPORTED_API_VERSIONS,
    V1_CALL_TAKEN,
    asRunSettings,
    checkpointFromArguments,
    isV1,
    trainFromArguments,
)
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.envs.factory import VecEnvSettings, createEnvs, findVecNormalize

TrainCallback = Callable[[dict[str, Any], dict[str, Any]], bool]

# Extra member written into Stable-Baselines3 zip files: which algorithm saved them (SB3 ignores it on load).
MANIFEST_MEMBER = "srl_toolbox.json"
# What StableBaselinesRLObject.saveTrainingState writes besides the replay buffer.
SB3_STATE_FILE = "sb3.json"

__all__ = ["MANIFEST_MEMBER", "OLDER_DECLARATIONS", "SB3_STATE_FILE", "SUPPORTED_API_VERSIONS", "BaseRLObject",
           "TrainCallback", "actionMaskKeywords", "notifyCleanPoint", "strToBool"]


# Smallest image side SB3's NatureCNN (CnnPolicy) and the torch algorithms' copy of it accept.
MIN_CNN_SIDE = 36


class BaseRLObject(abc.ABC):
    """
    Base class of every RL algorithm, built-in or plugin.

    Subclasses must implement the abstract methods save, load, getAction and train (the registry refuses a plugin
    that leaves one out, naming it); customArguments, getActionProba, getOptParam, makeEnv and the resume pair
    (saveTrainingState, loadTrainingState) are optional. A plugin declares its class under the entry-point group
    ``srl_toolbox.rl_algorithms``.
    """

    # The contract version the class implements: 2 (objects), or 1 (the Namespace, run through core.plugin_v1).
    API_VERSION: ClassVar[int] = CURRENT_API_VERSION
    ALGO_TYPE: ClassVar[AlgoType] = AlgoType.REINFORCEMENT_LEARNING
    ACTION_TYPES: ClassVar[tuple[ActionType, ...]] = (ActionType.DISCRETE, ActionType.CONTINUOUS)
    # Env steps between refreshes of the progress bar, monitor reading and live plot.
    LOG_INTERVAL: ClassVar[int] = 1000
    # Whether train writes progress.csv training rows (``train/*`` values dumped through its logger, as SB3 at each
    # log dump): tensorboard's rollout/ep_rew_mean and ep_len_mean come with each. False: at each refresh instead.
    TRAINING_ROWS: ClassVar[bool] = True
    # Smallest image side (H, W) its network accepts with raw_pixels, checked by train before anything is written
    # (MIN_CNN_SIDE for SB3's NatureCNN and the torch algorithms' copy of it); 0: any size (no CNN, or one that fits
    # any image).
    MIN_IMAGE_SIDE: ClassVar[int] = 0
    # Env steps between best-model checks (mean reward of the last 100 episodes).
    SAVE_INTERVAL: ClassVar[int] = 5000
    # Envs a run steps together when --num-cpu is left out (SB3's n_envs), at most srl_toolbox.cli.MAX_ENVS: the
    # train command resolves and records it; an algorithm that learns better from several declares its own.
    DEFAULT_ENVS: ClassVar[int] = 1
    # Extension of the model file the train command names ``<algo>_model<MODEL_EXTENSION>``.
    MODEL_EXTENSION: ClassVar[str] = ".zip"
    # Whether ``train`` calls ``callback.cleanPoint(num_timesteps)`` (see notifyCleanPoint) between updates, where a
    # checkpoint is exactly what training goes on from; periodic checkpoints then wait for the next one.
    CHECKPOINT_AT_CLEAN_POINTS: ClassVar[bool] = False
    # Whether a resumed run's envs play the episodes in progress at its checkpoint again to where they were
    # (rl_baselines.envs.wrappers.EpisodeStartRNG), for an algorithm whose training goes on from its envs' state then;
    # else each restarts from the episode's start (one that plays a generation again from its start, a plugin's).
    REPLAYS_EPISODES_IN_PROGRESS: ClassVar[bool] = False
    # Whether getAction takes ``action_masks`` (discrete actions the env allows, see actionMaskKeywords): the callers
    # that make the agent act pass them to such a class only, and the train command refuses it an env without masks.
    USES_ACTION_MASKS: ClassVar[bool] = False
    # The rollout or replay buffer a hyperparameter sizes (rl_baselines.core.buffer_memory), None for none: the train
    # command refuses one larger than the machine's memory before anything is written.
    BUFFER: ClassVar[BufferKind | None] = None
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
        hp.deriveDeclarations(cls)
        train = cls.__dict__.get("train")
        if train is not None and not getattr(train, "__isabstractmethod__", False) and not isV1(cls):
            cls.train = _acceptingArguments(train)

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
    def load(cls, load_path: str, settings: RunSettings | None = None) -> BaseRLObject:
        """
        Load a model written by :meth:`save`.

        :param load_path: the model file
        :param settings: the run's settings (from its args.json: device...), None when unknown
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

    # --- hyperparameters: thin entry points of rl_baselines.core.hyperparams --------------------------------------

    @classmethod
    def declaresOldStyle(cls) -> bool:
        """:return: whether the class declares its hyperparameters the older way (hyperparams.declaresOldStyle)"""
        return hp.declaresOldStyle(cls, BaseRLObject)

    @classmethod
    def hyperparamSpec(cls) -> dict[str, Hyperparam]:
        """:return: every hyperparameter with its default, allowed values and search range (hyperparams.hyperparamSpec)"""
        return hp.hyperparamSpec(cls)

    @classmethod
    def addHyperparamArguments(cls, parser: argparse.ArgumentParser, spec: dict[str, Hyperparam] | None = None,
                               group: Any = None) -> argparse.ArgumentParser:
        """One flag per hyperparameter, ``--n-steps`` stored as ``hp_n_steps`` (hyperparams.addHyperparamArguments)."""
        return hp.addHyperparamArguments(cls, parser, spec, group)

    @classmethod
    def _flagValue(cls, name: str, raw: str) -> Any:
        return hp.flagValue(cls, name, raw)

    @classmethod
    def checkHyperparam(cls, name: str, value: Any) -> Any:
        """:return: the value, checked against its choices and bounds (ValueError, one line)"""
        return hp.checkHyperparam(cls, name, value)

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
    def checkSettings(cls, settings: Any) -> Any:
        """
        Check what the algorithm needs of a run beyond its hyperparameters (an input file, a combination of flags),
        before anything is written: the train command's validation calls it (override to add checks).

        :param settings: the run's settings (a TrainConfig, read as attributes like a RunSettings)
        :return: anything (ignored by the caller)
        :raises ValueError: the first problem found (one line)
        """
        return None

    @classmethod
    def workerRole(cls, settings: Any) -> str | None:
        """
        Whether this process only works for a run that another process writes (ppo1 given ``--rank`` > 0): the
        train command then writes nothing (no run folder, model, checkpoint or log) and calls ``train`` with no
        run folder, monitor files, logger or checkpoint.

        :param settings: the run's validated settings (a TrainConfig, read as attributes like a RunSettings)
        :return: None (the default) when this process writes the run, else what it is, for one printed line
        """
        return None

    @classmethod
    def resolveHyperparams(cls, args: RunSettings, train_kwargs: dict[str, Any] | None,
                           saved: dict[str, Any] | None = None) -> dict[str, Any]:
        """The hyperparameters a run uses, checked together; UsageError when they do not fit
        (hyperparams.resolveHyperparams)."""
        return hp.resolveHyperparams(cls, args, train_kwargs, saved)

    @classmethod
    def hyperparamsFromArgs(cls, args: RunSettings, train_kwargs: dict[str, Any] | None,
                            saved: dict[str, Any] | None = None) -> dict[str, Any]:
        """
        Default < ``saved`` (a continued model's) < flag (``args.hp_<name>``) < ``train_kwargs`` (``--hyperparam``);
        a plugin of API version 1 passes its Namespace as ``args`` (hyperparams.hyperparamsFromArgs).
        """
        return hp.hyperparamsFromArgs(cls, args, train_kwargs, saved)

    @classmethod
    def getOptParam(cls) -> dict[str, tuple] | None:
        """
        The hyperparameter search space: ``{name: (type, range)}`` where type is ``int`` or ``float`` with
        ``(low, high)`` (a third element ``"log"`` samples on a log scale), or ``list`` with the choices.

        :return: the search space, or None when the algorithm has no hyperparameters to search (default: the
            ``search`` entries of ``HYPERPARAMS``)
        """
        return hp.searchSpace(cls.HYPERPARAMS)

    @classmethod
    def parserHyperParam(cls, hyperparams: dict[str, str]) -> dict[str, Any]:
        """Cast and check ``--hyperparam KEY:VALUE`` strings; ValueError for an unknown name or a bad value
        (hyperparams.parserHyperParam)."""
        return hp.parserHyperParam(cls, hyperparams)

    @classmethod
    def lossesSeeAugmentedViews(cls, settings: Mapping[str, Any]) -> bool:
        """
        :param settings: a run's settings, by name (``augment`` and the algorithm's own flags)
        :return: whether the losses of the updates learn from augmented views (then the raw-pixel hyperparameter
            defaults, measured on the images as rendered, are not applied): ``augment`` other than none, here
        """
        return settings.get("augment", "none") != "none"

    @classmethod
    def augmentsUpdates(cls) -> bool:
        """
        :return: whether ``train`` augments the image observations its updates learn from as ``settings.augment``
            names them (end-to-end pixel RL: the batches of the updates, never the frames collected); the train
            command refuses ``--augment`` other than ``none`` for an algorithm that does not (default: False)
        """
        return False

    @abc.abstractmethod
    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None, deterministic: bool = False) -> np.ndarray:
        """
        :param observation: a batch of observations, one per env
        :param dones: which envs start a new episode with ``observation`` (their previous step ended one): a
            recurrent policy keeps one state per env and restarts it there (None: no env does)
        :param deterministic: no randomness: the most likely discrete action, and for continuous actions the mode
            of the policy's distribution (a Gaussian's mean, no noise), squashed and clipped like a sampled action;
            the same observation then always gives the same action (for a recurrent policy: at an episode start)
        :return: a batch of actions, one per env

        A class with ``USES_ACTION_MASKS`` also takes ``action_masks=None``: (n_envs, n_actions) bools, True where
        the env allows the action (given by every caller: :func:`actionMaskKeywords`), and never returns a masked
        action; the other classes never receive the keyword.
        """
        raise NotImplementedError

    def getActionProba(self, observation: np.ndarray, dones: np.ndarray | None = None) -> np.ndarray:
        """
        :param observation: a batch of observations
        :param dones: which envs just ended an episode
        :return: action probabilities (discrete: those getAction plays by, one-hot on the action where the policy
            always plays its argmax) or the mean action (continuous), one row per env; a class with
            ``USES_ACTION_MASKS`` also takes ``action_masks`` (as getAction) and gives the masked actions 0
        """
        raise NotImplementedError(f"{getattr(self, 'NAME', type(self).__name__)} has no action distribution")

    def seedActionSampling(self, seed: int) -> None:
        """
        Seed what :meth:`getAction` samples with, for a loaded agent that acts outside training (replay, the Python
        API's evaluation, the dataset generator's ``--policy``, which reseeds it at every episode): torch's global
        generator, which SB3's policies sample from. A class that samples with a generator of its own overrides this
        and calls it. Training never calls it (the run's generators are seeded and checkpointed by the run).

        :param seed: the seed
        """
        torch.manual_seed(seed)

    # --- the env -------------------------------------------------------------------------------------------------

    @classmethod
    def normalisationFolder(cls, settings: RunSettings) -> str | None:
        """
        :param settings: the run's settings (a plugin of API version 1 passes its Namespace)
        :return: the folder of the model training continues from (its normalisation statistics), or None
        """
        return asRunSettings(settings).continue_folder

    @classmethod
    def envKeywords(cls, env_kwargs: dict[str, Any]) -> dict[str, Any]:
        """
        :param env_kwargs: the run's env constructor keywords (``settings.env_kwargs``)
        :return: those :meth:`makeEnv` builds each env with (what the run folder's env_globals.json records);
            override together with makeEnv when it changes them
        """
        return dict(env_kwargs)

    @classmethod
    def makeTrainingEnv(cls, settings: RunSettings, env_kwargs: dict[str, Any] | None = None) -> Any:
        """
        The env of ``train`` (the caller builds it: rl_baselines.core.plugin_v1.trainAlgorithm): :meth:`makeEnv`
        with the normalisation statistics of the model training continues from (restored frozen), switched back to
        updating.

        :param settings: the run's settings (a plugin of API version 1 passes its Namespace)
        :param env_kwargs: env constructor keywords (default: the run's)
        :return: the VecEnv
        """
        env = cls.makeEnv(settings, env_kwargs, load_path_normalise=cls.normalisationFolder(settings))
        vec_normalize = findVecNormalize(env)
        if vec_normalize is not None:
            vec_normalize.training = True  # a restored normaliser keeps adapting while training goes on
        return env

    @classmethod
    def makeEnv(cls, settings: RunSettings, env_kwargs: dict[str, Any] | None = None,
                load_path_normalise: str | None = None) -> Any:
        """
        Build the vectorised training (or replay) env; override to change wrappers.

        :param settings: the run's settings (``num_cpu`` envs; ``monitor_dir``, None for no monitor files, receives
            the monitor CSVs); a plugin of API version 1 passes its Namespace
        :param env_kwargs: env constructor keywords (default: ``settings.env_kwargs``)
        :param load_path_normalise: folder with saved normalisation statistics to restore
        :return: a VecEnv
        """
        settings = asRunSettings(settings)
        env_kwargs = dict(settings.env_kwargs) if env_kwargs is None else env_kwargs
        return createEnvs(VecEnvSettings.fromArgs(settings), env_kwargs, load_path_normalise,
                          monitor_dir=settings.monitor_dir)

    # --- training ------------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def train(self, env: Any, total_timesteps: int, hyperparams: dict[str, Any], callback: TrainCallback,
              logger: Any, settings: RunSettings, checkpoint: Checkpoint | None = None) -> None:
        """
        Learn for ``total_timesteps`` env steps (on from a continued model's count), calling ``callback`` after
        every vectorised step; close ``env`` at the end.

        :param env: the VecEnv to train on, built by the caller with :meth:`makeTrainingEnv`
        :param total_timesteps: env steps to take in this call (all envs together)
        :param hyperparams: every hyperparameter, typed and checked (default < continued model's < flag <
            ``--hyperparam``)
        :param callback: ``callback(_locals, _globals) -> bool`` (see the module docstring)
        :param logger: the Stable-Baselines3 ``Logger`` of the run's progress.csv and tensorboard log, None for
            none (shared: do not close it)
        :param settings: the run's settings (seed, device, run_dir, continue_from, ...)
        :param checkpoint: the checkpoint a resumed run restores (:meth:`restoreTrainingState`), None otherwise
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
    def gpuHelps(cls, image_observations: bool) -> bool:
        """
        Whether ``--device auto`` puts this algorithm's networks on a GPU when there is one: for images (a CNN) yes;
        for a low-dimensional state no: the built-in learners' small MLPs train faster on one CPU thread (the GPU
        waits on transfers and kernel launches; docs/benchmarks.md, "Training on a GPU"). An algorithm with large
        networks on states can say True for them.

        :param image_observations: the run's observations are images (raw pixels), not a low-dimensional state
        :return: True to use the GPU
        """
        return image_observations

    @classmethod
    def threadsHelp(cls, image_observations: bool) -> bool:
        """
        Whether ``--torch-threads auto`` gives this algorithm the process's share of the cores (else one thread):
        where the GPU helps (:meth:`gpuHelps`) unless a class says otherwise. Networks that gain on a GPU can still
        lose on two CPU threads (ppo_lstm on a state: docs/benchmarks.md).

        :param image_observations: the run's observations are images (raw pixels), not a low-dimensional state
        :return: True for the share of the cores
        """
        return cls.gpuHelps(image_observations)

    @classmethod
    def threadsHelpFor(cls, settings: Mapping[str, Any]) -> bool:
        """
        Whether ``--torch-threads auto`` gives this run the process's share of the cores (else one thread), seeing
        the run's settings: by default :meth:`threadsHelp` for its observations (images: ``raw_pixels``). Validation
        and the Python API resolve auto through this hook; an algorithm whose answer depends on its own flags (the
        SB3-backed ones: ``--features-extractor``) overrides it, and one that overrides :meth:`threadsHelp` alone
        keeps its answer.

        :param settings: the run's args.json record: ``srl_model``, the shared flags and the algorithm's own
        :return: True for the share of the cores
        """
        return cls.threadsHelp(settings.get("srl_model") == "raw_pixels")

    @classmethod
    def resolvedOptions(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        """
        The algorithm's own flags whose value is left to the machine (an ``auto``), resolved before args.json records
        them: validation and the sweeps' recorded settings call this hook with the run's settings, its device
        resolved.

        :param settings: the run's args.json record: ``device``, ``srl_model`` and the algorithm's own flags
        :return: name -> the value the run computes with; none here
        """
        return {}

    @classmethod
    def supportsResume(cls) -> bool:
        """:return: whether the class implements saveTrainingState and loadTrainingState"""
        return (cls.saveTrainingState is not BaseRLObject.saveTrainingState
                and cls.loadTrainingState is not BaseRLObject.loadTrainingState)

    @classmethod
    def keepsReplayBuffer(cls) -> bool:
        """:return: whether its checkpoints may hold a replay buffer (``--buffer-save-freq`` applies): here, whether
        it can resume (its saveTrainingState may write one); an algorithm that knows it keeps none says False"""
        return cls.supportsResume()

    @classmethod
    def idleOptions(cls, settings: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
        """
        The algorithm's own flags that do nothing for a run (a sweep passes its flags to every observation it runs:
        train warns once, and args.json records the flag at its default, as a run without it does).

        :param settings: the run's settings, by name (parsed, or as args.json records them, of any format)
        :return: name -> (its default, what the warning says after ``--flag VALUE``), for those among ``settings``
            that do nothing with the others; none here
        """
        return {}

    def keptOptions(self) -> dict[str, Any]:
        """
        The algorithm's own flags that a loaded model keeps from its save whatever a command gives (its network's
        architecture): ``train --load-rl-model-path`` warns once for one given otherwise, and args.json records the
        model's value.

        :return: name -> the loaded model's value; none here
        """
        return {}

    def keptHyperparams(self) -> dict[str, tuple[Any, str]]:
        """
        The hyperparameters that a loaded model keeps from its save whatever a command gives (one that only sets up a
        new model, such as the initial weights): ``train --load-rl-model-path`` warns once for one given otherwise (its
        flag, ``--hyperparam`` or the file), and args.json and hyperparams.yaml record the model's value.

        :return: name -> (the loaded model's value, why a value given for the continued run does nothing); none here
        """
        return {}

    def budgetChunk(self) -> int:
        """
        :return: the env steps an algorithm written here takes between two checks of its step budget, all its envs
            (and processes) together, once its env is set: its training stops at the first multiple of this, counted
            from where it started, at or past the budget (:func:`lastStep`, the progress bar's total); 1 here (an
            SB3-backed algorithm's learner says it itself)
        """
        return 1

    def restoreTrainingState(self, checkpoint: Checkpoint | None) -> bool:
        """
        Resume from ``checkpoint`` (``train --resume``): envs restart their episodes, :meth:`loadTrainingState`,
        then the global random generators. ``train`` calls this once its env and model exist, right before its
        first env step.

        :param checkpoint: what ``train`` received (a plugin of API version 1 passes its Namespace, whose
            ``resume_from`` names the checkpoint)
        :return: whether a checkpoint was restored
        """
        if checkpoint is not None and not isinstance(checkpoint, Checkpoint):
            checkpoint = checkpointFromArguments(checkpoint)
        if checkpoint is None:
            return False
        restoreRun(self, checkpoint)
        return True


def _acceptingArguments(train: Callable[..., None]) -> Callable[..., None]:
    """
    :param train: a version 2 ``train``
    :return: the same, also callable the version 1 way ``train(args, callback, env_kwargs, train_kwargs)`` (a
        version 1 subclass's ``super().train(args, ...)``): converted by rl_baselines.core.plugin_v1
    """

    @functools.wraps(train)
    def accepting(self: BaseRLObject, env: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(env, argparse.Namespace):
            return trainFromArguments(self, train, env, *args, **kwargs)
        return train(self, env, *args, **kwargs)

    setattr(accepting, V1_CALL_TAKEN, True)  # (plugin_v1.declaredVersionConflict: a version 1 subclass may inherit it)
    return accepting


def actionMaskKeywords(algo: Any, env: Any) -> dict[str, np.ndarray]:
    """
    What a caller adds to ``getAction(observation, ...)``: the env's action masks for an algorithm that uses them.

    :param algo: a BaseRLObject, or its class
    :param env: what the agent acts on: a VecEnv (each env's ``action_masks()`` through ``env_method``, which the
        env factory's wrappers pass on), or a single gymnasium env (its wrappers' ``action_masks()``)
    :return: ``{"action_masks": (n_envs, n_actions) bools}`` when ``algo`` has ``USES_ACTION_MASKS``, else ``{}``
        (so that an algorithm without masks keeps its signature)
    """
    if not getattr(algo, "USES_ACTION_MASKS", False):
        return {}
    masks = np.asarray(get_action_masks(env), dtype=bool)
    return {"action_masks": masks if isinstance(env, VecEnv) else masks[None]}


def lastStep(model: Any, start: int, total: int) -> int:
    """
    :param model: the learner (an SB3 model, or an algorithm's own learner)
    :param start: its step count when training starts
    :param total: the step budget it trains to
    :return: the step count at which it stops: an SB3 learner steps all its envs at once, and an on-policy one
        collects whole rollouts (``n_steps`` per env), so it stops at the first whole rollout at or past ``total``,
        counted from ``start`` (a resumed run's checkpoint, taken at a rollout's start); an algorithm written here
        likewise at its :meth:`BaseRLObject.budgetChunk`; ``total`` for any other learner
    """
    if total <= start:
        return total
    if isinstance(model, BaseAlgorithm):
        chunk = model.n_envs * (model.n_steps if isinstance(model, OnPolicyAlgorithm) else 1)
    elif isinstance(model, BaseRLObject):
        chunk = max(1, int(model.budgetChunk()))
    else:
        return total
    return start + -(-(total - start) // chunk) * chunk


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
