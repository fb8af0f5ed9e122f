"""The one adapter every Stable-Baselines3-backed algorithm shares: StableBaselinesRLObject.

A subclass names its SB3 (or sb3-contrib) class, its hyperparameter spec (``HYPERPARAMS``) and its policies. The
flags, the typing and range checks of ``--hyperparam`` and the search space come from the spec through
BaseRLObject, as for every algorithm; the adapter only turns the typed values into constructor keywords
(:meth:`StableBaselinesRLObject.makeModelKwargs`), builds the model on the env ``train`` receives
(:meth:`StableBaselinesRLObject.prepareTraining`, the start of every SB3-backed ``train``), saves SB3 zips with the
toolbox's manifest member, and adapts the toolbox's training callback to SB3's ``learn``. Its checkpoints are taken at
clean points (the start of a rollout), so that a resumed run goes on exactly as an uninterrupted one.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import operator
import os
import warnings
import zipfile
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.her import HerReplayBuffer

from rl_baselines.core.base import (
    MANIFEST_MEMBER,
    MIN_CNN_SIDE,
    SB3_STATE_FILE,
    BaseRLObject,
    TrainCallback,
)
from rl_baselines.core.buffer_memory import ROLLOUT, BufferKind
from rl_baselines.core.checkpointing import Checkpoint
from rl_baselines.core.hyperparams import givenFlags, normalisationRefusal, plainValues
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.core.training_state import (
    episodesContinued,
    generatorState,
    loadBuffer,
    pendingLogValues,
    restorePendingLogValues,
    saveBuffer,
    setGeneratorState,
)
from rl_baselines.envs.factory import saveNormalisation
from rl_baselines.rl_algorithm.augmented_buffers import AugmentedBuffer, bufferKeywords
from rl_baselines.rl_algorithm.finite_training import (
    PARAMETER_CHECK_STEPS,
    FiniteActions,
    FiniteTraining,
    divergedInstead,
    withoutArgumentChecks,
)
from rl_baselines.rl_algorithm.image_features import (
    DEFAULT_FEATURES_EXTRACTOR,
    DEFAULT_PRECISION,
    addFeaturesExtractorFlags,
    emulationWarning,
    extractorName,
    pixelPolicyKeywords,
    precisionOf,
    resolvedPrecision,
)
from rl_baselines.rl_algorithm.learner_flags import addLrScheduleFlag
from rl_baselines.rl_algorithm.model_data import (
    LinearSchedule,
    hyperparamsInData,
    linearSchedule,
    readModelData,
)
from rl_baselines.rl_algorithm.sb3_callbacks import (
    PendingEpisodes,
    RolloutLogs,
    learnDefault,
    restartSB3Rollout,
    sb3Callback,
)
from rl_baselines.rl_algorithm.sharded_features import shardedUpdates
from rl_baselines.runs.pretrain import pretrainFromArgs
from rl_baselines.runs.run_logging import sharedProgressLogger
from srl_toolbox.cli import UsageError
from srl_toolbox.devices import runDevice
from srl_toolbox.files import atomicPath, readJson, writeJson
from srl_toolbox.optimizers import multiTensorSteps


class StableBaselinesRLObject(BaseRLObject):
    """
    Adapter for algorithms that Stable-Baselines3 or sb3-contrib implement.

    A subclass names its ``SB3_CLASS`` and ``HYPERPARAMS`` (rl_baselines.core.hyperparams), whose names are SB3_CLASS
    constructor keywords (or become some through :meth:`makeModelKwargs`); every hyperparameter becomes a command-line
    flag (``n_steps`` -> ``--n-steps``), and ``--hyperparam`` overrides both.
    """

    SB3_CLASS: ClassVar[type | None] = None
    NAME: ClassVar[str] = ""
    MIN_IMAGE_SIDE: ClassVar[int] = MIN_CNN_SIDE  # SB3's NatureCNN
    DEFAULT_LR_SCHEDULE: ClassVar[str] = "constant"
    # SB3 policy name for image observations (raw_pixels) and for low-dimensional states (anything else).
    POLICIES: ClassVar[dict[str, str]] = {"pixels": "CnnPolicy", "state": "MlpPolicy"}
    # Checkpoints wait for the start of a rollout (after the previous update): see sb3Callback.
    CHECKPOINT_AT_CLEAN_POINTS: ClassVar[bool] = True
    REPLAYS_EPISODES_IN_PROGRESS: ClassVar[bool] = True  # learn goes on from the env's state (restartSB3Rollout)
    # The buffer whose batches hold the augmented views of ``--augment`` (rl_baselines.rl_algorithm.augmented_buffers),
    # None for an algorithm that does not augment its updates.
    AUGMENTED_BUFFER: ClassVar[AugmentedBuffer | None] = None
    # The samples over which the learner normalises its advantages (SB3's normalize_advantage, on by default and kept
    # so by the toolbox), each needing at least 2 (one sample's standard deviation is NaN): "rollout" (trpo: the
    # n_steps x --num-cpu samples), "minibatches" (ppo2: each minibatch of batch_size, SB3 skipping a last one of 1
    # sample), "every_minibatch" (ppo_lstm, maskable_ppo: each one, the last included); None: no normalisation.
    # :func:`normalisationRefusal` checks the rollout and the last minibatch before anything is written; a minibatch
    # size of 1 is out of the spec's batch_size bounds.
    NORMALISED_ADVANTAGES: ClassVar[str | None] = None
    # SB3's rollout buffer of the on-policy learners (OffPolicyRLObject: its replay buffer)
    BUFFER: ClassVar[BufferKind | None] = ROLLOUT
    # --torch-threads auto on raw pixels by --features-extractor, where measured for the algorithm (docs/benchmarks.md,
    # "Torch threads per algorithm on images"): True the process's share of the cores, False one thread; an extractor
    # not listed gets threadsHelp's answer (:meth:`threadsHelpFor`)
    EXTRACTOR_THREADS_HELP: ClassVar[Mapping[str, bool]] = {}
    # True: on the CPU, the pixel policy's CNN computes each training minibatch in shards, one per torch thread of the
    # run, each shard on one (rl_baselines.rl_algorithm.sharded_features; ppo2); False: torch's threads split each
    # operation
    SHARDED_PIXEL_UPDATES: ClassVar[bool] = False
    # --features-extractor's default: the pixel policy's CNN (a key of FEATURES_EXTRACTORS) where the run names none
    DEFAULT_FEATURES_EXTRACTOR: ClassVar[str] = DEFAULT_FEATURES_EXTRACTOR
    # --precision's default: what that CNN computes in (one of PRECISION_CHOICES; auto: resolvedOptions)
    DEFAULT_PRECISION: ClassVar[str] = DEFAULT_PRECISION

    def __init__(self) -> None:
        super().__init__()
        self.model: Any = None
        self.env: Any = None
        # An on-policy learner's rollouts over the whole run, a resumed one's included (checkpoints keep the count).
        self.rollouts = 0
        # (infos, dones) of the step whose callbacks run now, which SB3 adds to its episode buffers after them
        # (:class:`PendingEpisodes`); None outside a step's callbacks
        self.pending_infos: tuple[Any, Any] | None = None

    # --- command line ----------------------------------------------------------------------------------------

    @classmethod
    def customArguments(cls, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        """One flag per hyperparameter (BaseRLObject.addHyperparamArguments), ``--lr-schedule``,
        ``--features-extractor`` and ``--precision`` (:func:`addLrScheduleFlag`, :func:`addFeaturesExtractorFlags`)."""
        group = parser.add_argument_group(f"{cls.NAME} hyperparameters (defaults in brackets)")
        cls.addHyperparamArguments(parser, group=group)
        addLrScheduleFlag(group, cls.DEFAULT_LR_SCHEDULE)
        addFeaturesExtractorFlags(group, cls.DEFAULT_FEATURES_EXTRACTOR, cls.DEFAULT_PRECISION)
        return parser

    @classmethod
    def checkSettings(cls, settings: Any) -> Any:
        """
        Also refuses raw pixels where the SB3 class has no policy on images (:data:`POLICIES`' ``pixels`` missing
        from its ``policy_aliases``: sb3-contrib's CrossQ, ARS), before anything is written.

        :param settings: the run's settings (a RunSettings or a TrainConfig)
        :raises ValueError: one line naming the algorithm and the observations it takes
        """
        policy, sb3_class = cls.POLICIES["pixels"], getattr(cls, "SB3_CLASS", None)
        if getattr(settings, "srl_model", None) == "raw_pixels" and sb3_class is not None and \
                policy not in getattr(sb3_class, "policy_aliases", {}):
            raise ValueError(f"--srl-model raw_pixels: --algo {cls.NAME} learns with {sb3_class.__name__}, which has "
                             f"no {policy} (no policy on images); give it a state: ground_truth or a learned SRL model")
        return super().checkSettings(settings)

    def seedActionSampling(self, seed: int) -> None:
        """torch's generator, and what SB3's epsilon-greedy predict (dqn, qrdqn) draws from: NumPy's global generator
        and the model's action space."""
        super().seedActionSampling(seed)
        np.random.seed(seed)
        if getattr(self, "model", None) is not None:
            self.model.action_space.seed(seed)

    @classmethod
    def idleOptions(cls, settings: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
        """``--features-extractor`` and ``--precision`` on a state (the pixel policy's flags, which do nothing there:
        train warns once of each, not a refusal, and args.json records the algorithm's defaults)."""
        if settings.get("srl_model") == "raw_pixels":
            return {}
        idle = f"it does nothing for --srl-model {settings.get('srl_model')!r}, a state read by an MLP"
        options = {"features_extractor": (cls.DEFAULT_FEATURES_EXTRACTOR, "chooses the pixel policy's CNN "
                                          f"(--srl-model raw_pixels); {idle}"),
                   "precision": (cls.DEFAULT_PRECISION, f"sets what the pixel policy's CNN computes in; {idle}")}
        return {name: option for name, option in options.items() if name in settings}

    @classmethod
    def resolvedOptions(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        """``--precision auto`` on raw pixels: bfloat16 or float32 for the run's device (:func:`resolvedPrecision`)"""
        if settings.get("precision") != "auto" or settings.get("srl_model") != "raw_pixels":
            return {}
        return {"precision": resolvedPrecision("auto", str(settings.get("device") or "cpu"))}

    @classmethod
    def threadsHelpFor(cls, settings: Mapping[str, Any]) -> bool:
        """On raw pixels, the answer :data:`EXTRACTOR_THREADS_HELP` gives for the run's ``--features-extractor``
        where it lists it (ppo2's SmallCNN: one thread); otherwise :meth:`threadsHelp`'s."""
        extractor = settings.get("features_extractor", cls.DEFAULT_FEATURES_EXTRACTOR)
        if settings.get("srl_model") == "raw_pixels" and extractor in cls.EXTRACTOR_THREADS_HELP:
            return cls.EXTRACTOR_THREADS_HELP[extractor]
        return super().threadsHelpFor(settings)

    def keptOptions(self) -> dict[str, Any]:
        """``--features-extractor`` and ``--precision``: the CNN the loaded pixel model was built with and what it
        computes in (none for a state's MLP);
        ``--lr-schedule linear`` for a model saved with its :class:`LinearSchedule` (its learning rate keeps decaying
        unless ``--learning-rate`` gives another start)"""
        kept = {} if (name := extractorName(self.model)) is None else {"features_extractor": name,
                                                                        "precision": precisionOf(self.model)}
        if isinstance(getattr(self.model, "learning_rate", None), LinearSchedule):
            kept["lr_schedule"] = "linear"
        return kept

    @classmethod
    def keepsReplayBuffer(cls) -> bool:
        """:return: False: an on-policy learner keeps no replay buffer (OffPolicyRLObject's does)"""
        return False

    @classmethod
    def resolveHyperparams(cls, args: RunSettings, train_kwargs: dict[str, Any] | None,
                           saved: dict[str, Any] | None = None) -> dict[str, Any]:
        """Also refuses rollouts and minibatches too small for the learner's advantage normalisation
        (:func:`normalisationRefusal`), which SB3 would meet with an assertion or NaN losses once training started."""
        hyperparams = super().resolveHyperparams(args, train_kwargs, saved)
        refusal = normalisationRefusal(cls.NORMALISED_ADVANTAGES, cls.NAME, hyperparams,
                                       int(getattr(args, "num_cpu", 1)))
        if refusal is not None:
            raise UsageError(refusal)
        return hyperparams

    @classmethod
    def makeModelKwargs(cls, settings: RunSettings, hyperparams: dict[str, Any], env: Any) -> dict[str, Any]:
        """
        Turn typed hyperparameters into SB3_CLASS constructor keywords; override to build objects from them (action
        noise from ``noise_type``/``noise_std``, ...). Also called with only the overridden hyperparameters when a
        saved model is loaded to continue training. ``--lr-schedule linear`` then turns ``learning_rate`` into a
        schedule (:meth:`modelKwargs`).

        :param settings: the run's settings
        :param hyperparams: hyperparameters by name (from :meth:`hyperparamsFromArgs`)
        :param env: the training VecEnv
        :return: constructor keywords (default: the hyperparameters, each as the library takes it: ``none`` of a
            :class:`~rl_baselines.core.hyperparams.NoneOrPositive` as None)
        """
        return plainValues(hyperparams)

    @classmethod
    def augmentsUpdates(cls) -> bool:
        """:return: whether the algorithm declares an :attr:`AUGMENTED_BUFFER`"""
        return cls.AUGMENTED_BUFFER is not None

    @classmethod
    def bufferAugmentation(cls, settings: RunSettings) -> str:
        """:return: the augmentation the :attr:`AUGMENTED_BUFFER` applies to the batches: ``--augment``'s"""
        return settings.augment

    def prepareUpdates(self, settings: RunSettings) -> None:
        """
        What the model's updates need besides its constructor's keywords, once the model is made or loaded (an
        algorithm's hook: drac.AugmentLossChoice attaches DrAC's regulariser); nothing here.

        :param settings: the run's settings
        """

    @classmethod
    def modelKwargs(cls, settings: RunSettings, hyperparams: dict[str, Any], env: Any) -> dict[str, Any]:
        """
        :param settings: the run's settings (``lr_schedule``, ``augment``)
        :param hyperparams: typed hyperparameters by name
        :param env: the training VecEnv
        :return: :meth:`makeModelKwargs`, with a number ``learning_rate`` decaying linearly under
            ``--lr-schedule linear``, and, for an algorithm with an :attr:`AUGMENTED_BUFFER`, the buffer of
            :meth:`bufferAugmentation` (SB3's own for ``none``: also what a continued model trained with a shift
            then gets)
        """
        kwargs = cls.makeModelKwargs(settings, hyperparams, env)
        if cls.AUGMENTED_BUFFER is not None:
            kwargs.update(bufferKeywords(cls.AUGMENTED_BUFFER, cls.bufferAugmentation(settings)))
        rate = kwargs.get("learning_rate")
        if settings.option("lr_schedule", "constant") == "linear" and rate is not None and not callable(rate):
            kwargs["learning_rate"] = linearSchedule(float(rate))
        return kwargs

    # --- persistence -------------------------------------------------------------------------------------------

    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        with atomicPath(save_path) as tmp_path, self._pendingEpisodesCounted():
            self.model.save(tmp_path)
            with zipfile.ZipFile(tmp_path, "a") as archive:
                archive.writestr(MANIFEST_MEMBER, json.dumps({"algo": self.NAME, "api_version": self.API_VERSION}))
                for name, data in self.zipMembers().items():
                    archive.writestr(name, data)
        saveNormalisation(self.env, os.path.dirname(os.path.abspath(save_path)))

    @contextlib.contextmanager
    def _pendingEpisodesCounted(self) -> Iterator[None]:
        """While a callback of a step saves the model (a checkpoint), its episode buffers (the rollout/ep_* means,
        which a resumed run goes on from) hold the episodes that ended at that step, as they will once SB3 adds them;
        put back as they were afterwards."""
        model, pending = self.model, self.pending_infos
        if pending is None or pending[0] is None or getattr(model, "ep_info_buffer", None) is None:
            yield
            return
        before = (copy.copy(model.ep_info_buffer), copy.copy(model.ep_success_buffer))
        model._update_info_buffer(*pending)  # (SB3's own, as it will call it after the step's callbacks)
        try:
            yield
        finally:
            model.ep_info_buffer, model.ep_success_buffer = before

    def zipMembers(self) -> dict[str, bytes]:
        """:return: more members for the model zip, by name (none here; SB3's load ignores all but its own and
            ``.pth`` files, so a name must not end in ``.pth``)"""
        return {}

    @classmethod
    def readManifest(cls, load_path: str) -> dict[str, Any]:
        """
        :param load_path: a model zip written by :meth:`save`
        :return: its manifest (which algorithm wrote it)
        :raises ValueError: missing, not a model zip, or written by another algorithm
        """
        if not os.path.isfile(load_path):
            raise ValueError(f"no model file at {load_path}")
        if not zipfile.is_zipfile(load_path):
            raise ValueError(f"{load_path} is not a saved model (not a zip archive)")
        try:
            with zipfile.ZipFile(load_path) as archive:
                names = archive.namelist()
                manifest = json.loads(archive.read(MANIFEST_MEMBER)) if MANIFEST_MEMBER in names else {}
                if "data" not in names:
                    raise ValueError(f"{load_path} is not a Stable-Baselines3 model (no 'data' member)")
        except (zipfile.BadZipFile, json.JSONDecodeError, OSError) as error:
            raise ValueError(f"{load_path} is corrupt ({error})") from None
        saved_by = manifest.get("algo")
        if saved_by is not None and saved_by != cls.NAME:
            raise ValueError(f"{load_path} was saved by algorithm {saved_by!r}, not {cls.NAME!r}")
        return manifest

    @classmethod
    def savedHyperparams(cls, load_path: str) -> dict[str, Any] | None:
        """
        :param load_path: a model zip written by :meth:`save`
        :return: the declared hyperparameters the zip's "data" member holds as plain values (read as the flags read
            them), which training that continues the model keeps unless flags override them; one SB3 keeps as a
            serialised object (a schedule such as clip_range, train_freq's tuple) is left out. The model is not built.
        :raises ValueError: not a model of this algorithm (one line)
        """
        cls.readManifest(load_path)
        return hyperparamsInData(readModelData(load_path), cls.HYPERPARAMS, cls.parserHyperParam)

    @classmethod
    def load(cls, load_path: str, settings: RunSettings | None = None) -> StableBaselinesRLObject:
        cls.readManifest(load_path)
        obj = cls()
        obj.model = cls.loadSB3Model(cls.SB3_CLASS, load_path, settings)
        obj.num_timesteps = obj.model.num_timesteps
        return obj

    @classmethod
    def loadSB3Model(cls, sb3_class: type[BaseAlgorithm], load_path: str, settings: RunSettings | None) -> BaseAlgorithm:
        """
        :param sb3_class: the SB3 class that wrote the zip
        :param load_path: the model zip
        :param settings: the run's settings (its device; None: the default device)
        :return: the SB3 model on the run's device (a GPU-trained model loads on a CPU)
        :raises ValueError: a damaged archive, in one line naming this algorithm
        """
        device = runDevice(None if settings is None else settings.device)
        try:
            return sb3_class.load(load_path, device=device)
        except Exception as error:  # SB3 raises many kinds for a damaged archive
            raise ValueError(f"{load_path} could not be loaded by {cls.NAME}: {type(error).__name__}: {error}") from None

    def saveTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        """
        The model zip already holds the weights, optimizer state, step and episode counters, schedules and action
        noise; this adds the action space's generator (random actions before learning starts), the logger's
        values not yet written to progress.csv (with the outputs each is kept from), an on-policy learner's rollout
        count (:class:`RolloutLogs`) and the replay buffer's arrays (off-policy algorithms).
        """

        os.makedirs(folder, exist_ok=True)
        logger = getattr(self.model, "_logger", None)
        pending = {} if logger is None else pendingLogValues(logger)
        writeJson(os.path.join(folder, SB3_STATE_FILE),
                  {"action_space_rng": generatorState(self.model.action_space.np_random), "logger": pending,
                   "rollouts": self.rollouts})
        buffer = getattr(self.model, "replay_buffer", None)
        if replay_buffer_folder is not None and buffer is not None:
            saveBuffer(buffer, replay_buffer_folder, buffer.buffer_size, buffer.buffer_size if buffer.full else buffer.pos)

    def loadTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        """Restore saveTrainingState's files, then reset the envs (starting the episodes in progress again)."""

        state = readJson(os.path.join(folder, SB3_STATE_FILE))
        setGeneratorState(self.model.action_space.np_random, state.get("action_space_rng"))
        logger = getattr(self.model, "_logger", None)
        if logger is not None:
            restorePendingLogValues(logger, state.get("logger", {}))
        self.rollouts = int(state.get("rollouts", 0))
        buffer = getattr(self.model, "replay_buffer", None)
        if replay_buffer_folder is not None and buffer is not None:
            loadBuffer(buffer, replay_buffer_folder, buffer.buffer_size)
        # SB3's learn goes on from this reset (restoreTrainingState froze the normalisation statistics for it).
        restartSB3Rollout(self.model)
        if isinstance(buffer, HerReplayBuffer) and replay_buffer_folder is not None and \
                not episodesContinued(self.model.env):
            with warnings.catch_warnings():  # the episodes in progress end here: they started again at the reset
                warnings.simplefilter("ignore")
                buffer.truncate_last_trajectory()

    # --- acting ----------------------------------------------------------------------------------------------

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None, deterministic: bool = False) -> np.ndarray:
        action, _ = self.model.predict(observation, deterministic=deterministic)
        return action

    def inferencePolicy(self) -> Any:
        """:return: the SB3 policy in evaluation mode, as SB3's ``predict`` puts it (a batch-normalising layer, as
        CrossQ's, must not take the statistics of what it is shown); for the action distributions replay draws"""
        self.model.policy.set_training_mode(False)
        return self.model.policy

    def getActionProba(self, observation: np.ndarray, dones: np.ndarray | None = None) -> np.ndarray:
        policy = self.inferencePolicy()
        obs_tensor, _ = policy.obs_to_tensor(observation)
        with torch.no_grad():
            distribution = policy.get_distribution(obs_tensor).distribution
        if hasattr(distribution, "probs"):
            return distribution.probs.cpu().numpy()
        return distribution.mean.cpu().numpy()

    # --- training --------------------------------------------------------------------------------------------

    def prepareTraining(self, env: Any, hyperparams: dict[str, Any], logger: Any, settings: RunSettings,
                        checkpoint: Checkpoint | None, callback: TrainCallback) -> None:
        """
        The start of ``train``, up to the first env step: the model (new, seeded with ``settings.seed``; continued
        from ``settings.continue_from`` with the hyperparameters given now over the saved ones; or as checkpointed
        when resuming; one warning where its CNN would compute in bfloat16 emulated: :func:`emulationWarning`),
        behaviour cloning (``--pretrain-dataset``), :meth:`prepareUpdates`, the logger, then the resumed state
        (:meth:`restoreTrainingState`).

        :param env: the training VecEnv
        :param hyperparams: the run's hyperparameters, resolved
        :param logger: the run's SB3 Logger, None for the callback's shared one (or a silent one)
        :param settings: the run's settings
        :param checkpoint: the checkpoint a resumed run restores, None otherwise
        :param callback: the training callback (its shared progress logger, when ``logger`` is None)
        """
        load_path = settings.continue_from
        self.env = env
        device = runDevice(settings.device)
        if load_path and checkpoint is not None:
            self.readManifest(load_path)
            self.model = self.SB3_CLASS.load(load_path, env=self.env, device=device)  # as checkpointed
        elif load_path:
            self.readManifest(load_path)
            # Hyperparameters given on this command line override the saved ones; the rest are kept.
            given = {*givenFlags(settings, hyperparams), *settings.hyperparam_overrides}
            overrides = {k: v for k, v in hyperparams.items() if k in given}
            if "learning_rate" not in overrides and settings.option("lr_schedule", "constant") == "linear":
                rate = readModelData(load_path).get("learning_rate")  # a number: it trained at a constant rate
                if isinstance(rate, (int, float)) and not isinstance(rate, bool):
                    overrides["learning_rate"] = float(rate)  # which modelKwargs turns into the linear schedule
            custom = self.modelKwargs(settings, overrides, self.env)
            self.model = self.SB3_CLASS.load(load_path, env=self.env, device=device, custom_objects=custom)
            # a new run's episode means (rollout/ep_rew_mean) are of its own episodes, as its summary's and as
            # rl_zoo3's continued runs', not of the saved model's last ones, which SB3 keeps in the zip
            self.model.ep_info_buffer = self.model.ep_success_buffer = None
        else:
            pixels = settings.srl_model == "raw_pixels"
            kwargs = self.modelKwargs(settings, hyperparams, self.env)
            policy = self.POLICIES["pixels" if pixels else "state"]
            if pixels:
                extractor = settings.option("features_extractor", self.DEFAULT_FEATURES_EXTRACTOR)
                precision = resolvedPrecision(settings.option("precision", self.DEFAULT_PRECISION), device)
                kwargs["policy_kwargs"] = pixelPolicyKeywords(extractor, self.SB3_CLASS.policy_aliases[policy],
                                                              precision, kwargs.get("policy_kwargs", {}))
            self.model = self.SB3_CLASS(policy, self.env, seed=settings.seed, device=device, verbose=0, **kwargs)
        slow = emulationWarning(precisionOf(self.model), self.model.device)
        if slow is not None:
            warnings.warn(slow, stacklevel=2)
        if settings.pretrain_dataset:
            pretrainFromArgs(self.model, self.env, settings)  # behaviour cloning, before RL starts
        self.prepareUpdates(settings)
        # progress.csv (a resumed run's goes on) and tensorboard: the run's logger; without one the callback's shared
        # one, or without a run folder a silent one (SB3 would otherwise make an empty /tmp/SB3-<date> folder)
        self.model.set_logger(logger if logger is not None else sharedProgressLogger(callback, settings.run_dir)[0])
        self.restoreTrainingState(checkpoint)

    def train(self, env: Any, total_timesteps: int, hyperparams: dict[str, Any], callback: TrainCallback,
              logger: Any, settings: RunSettings, checkpoint: Checkpoint | None = None) -> None:
        self.prepareTraining(env, hyperparams, logger, settings, checkpoint, callback)
        self.learnModel(total_timesteps, callback, settings)
        self.num_timesteps = self.model.num_timesteps
        self.env.close()

    def learnModel(self, total_timesteps: int, callback: TrainCallback, settings: RunSettings,
                   *more: BaseCallback) -> None:
        """
        SB3's ``learn`` with the training callback (an SB3 one, the train command's TrainingCallbacks, as it is; an
        old-style one adapted: :func:`sb3Callback`; the callbacks read num_timesteps from the SB3 model), then
        ``more`` callbacks; :class:`FiniteTraining` and :class:`PendingEpisodes` before them all, and an on-policy
        learner's log rows written by :class:`RolloutLogs` after them. An on-policy learner's ``learn`` runs without
        torch.distributions' argument checks, which FiniteTraining stands in for (its parameters are checked at each
        rollout start, before any action is drawn from them: rl_baselines.rl_algorithm.finite_training); an
        off-policy learner steps its envs through :class:`FiniteActions`, and an error raised while the policy's
        parameters hold NaN or inf ends the run as TrainingDiverged. The model's optimizers (those SB3 saves) step their
        tensors together (srl_toolbox.optimizers: the same floats in fewer Python calls). With
        :data:`SHARDED_PIXEL_UPDATES`, a pixel policy's CNN on the CPU trains in shards across torch's threads
        (:func:`shardedUpdates`; its optimizer steps fused there).

        :param total_timesteps: the step count at which training ends
        :param callback: the training callback ``train`` received
        :param settings: the run's settings (a continued or resumed model goes on with its step count)
        :param more: SB3 callbacks run after it (gail's discriminator update)
        """
        on_policy = isinstance(self.model, OnPolicyAlgorithm)
        callbacks = [FiniteTraining(0 if on_policy else PARAMETER_CHECK_STEPS), PendingEpisodes(self),
                     sb3Callback(callback), *more]
        options: dict[str, Any] = {}
        if on_policy:
            log_interval = learnDefault(type(self.model), "log_interval")
            callbacks.append(RolloutLogs(self, log_interval))
            options["log_interval"] = None  # (SB3 would count the rollouts from this learn's start)
        saved = [operator.attrgetter(name)(self.model) for name in self.model._get_torch_save_params()[0]]
        optimizers = [part for part in saved if isinstance(part, torch.optim.Optimizer)]
        multiTensorSteps(optimizers)
        model_env = self.model.env
        if not on_policy:  # (its actions reach the envs before any callback sees them)
            self.model.env = FiniteActions(model_env, lambda: self.model.num_timesteps)
        try:
            shards = torch.get_num_threads() if self.SHARDED_PIXEL_UPDATES and self.model.device.type == "cpu" else 1
            with divergedInstead([self.model.policy], lambda: self.model.num_timesteps), \
                    withoutArgumentChecks() if on_policy else contextlib.nullcontext(), \
                    shardedUpdates(self.model.policy, shards, optimizers):
                self.model.learn(total_timesteps=total_timesteps, callback=CallbackList(callbacks),
                                 reset_num_timesteps=not settings.continue_from, **options)
        finally:
            self.model.env = model_env
