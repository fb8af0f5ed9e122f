"""gail: Generative Adversarial Imitation Learning (Ho & Ermon, 2016) over an on-policy Stable-Baselines3 learner.

A discriminator D(s, a) learns to tell the expert's transitions (``--gail-dataset``, a dataset recorded with
``python -m environments.dataset_generator --policy RUN``) from the agent's; its output is the only reward the
learner ever receives (rl_baselines.rl_algorithm.gail_discriminator: the expert pipeline, D, the reward wrapper and
the per-rollout update). Stable Baselines 2's ``gail`` drove TRPO; here ``--gail-learner`` picks ppo2 (the
default), a2c or trpo, each with its own hyperparameters and flags. Only on-policy learners: each rollout is
rewarded by the discriminator of its time, where a replay buffer would keep the rewards of older ones.

The env's reward is still recorded by the Monitor under the reward wrapper: the learning curves, the best-model
choice and the evaluations show how well the imitation does on the env's own task.

The model zip is the learner's SB3 zip, naming its learner (``gail_learner``, read back by :meth:`GAILModel.load`),
with the discriminator's weights, optimiser and generator state as one more member (:data:`DISCRIMINATOR_MEMBER`,
read with ``weights_only=True``); replaying a run needs the policy only. A checkpoint's model holds the discriminator
as it was after the update of the last rollout, so a resumed run goes on exactly as an uninterrupted one.
"""
from __future__ import annotations

import argparse
import functools
import os
import zipfile
from typing import Any, ClassVar

from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import CallbackList

from rl_baselines.core import hyperparams as hp
from rl_baselines.core.base import strToBool
from rl_baselines.core.checkpointing import Checkpoint
from rl_baselines.core.hyperparams import NON_NEGATIVE, POSITIVE, Hyperparam, givenFlags
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.rl_algorithm.a2c import A2CModel
from rl_baselines.rl_algorithm.gail_discriminator import (
    REWARD_KINDS,
    Discriminator,
    DiscriminatorUpdate,
    ExpertData,
    GAILRewardVecEnv,
    checkExpertDataset,
    seedNormalisation,
)
from rl_baselines.rl_algorithm.image_features import DEFAULT_FEATURES_EXTRACTOR, FEATURES_EXTRACTORS
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.rl_algorithm.sb3_base import (
    StableBaselinesRLObject,
    learnerHyperparamTable,
    parseOwnOrLearnerHyperparams,
    readModelData,
    sb3Callback,
)
from rl_baselines.rl_algorithm.trpo import TRPOModel
from srl_toolbox.cli import UsageError
from srl_toolbox.devices import runDevice

# The learners GAIL can drive, by --gail-learner name: on-policy, their rollouts rewarded by the discriminator.
LEARNERS: dict[str, type[StableBaselinesRLObject]] = {"ppo2": PPO2Model, "a2c": A2CModel, "trpo": TRPOModel}
DEFAULT_LEARNER = "ppo2"
DISCRIMINATOR_MEMBER = "gail_discriminator.pt"  # not .pth: SB3's load would take it for one of the learner's
GAIL_HYPERPARAMS: dict[str, Hyperparam] = {
    "d_hidden": Hyperparam(100, "units of the discriminator's two tanh layers (and its image features)",
                           bounds=(1, None), search=[64, 100, 256]),
    "d_learning_rate": Hyperparam(1e-3, "discriminator Adam learning rate", bounds=POSITIVE,
                                  search=(1e-5, 1e-2, "log")),
    "d_epochs": Hyperparam(5, "discriminator passes over each rollout", bounds=(1, None), search=(1, 10)),
    "d_batch_size": Hyperparam(64, "agent transitions (with as many expert ones) per discriminator minibatch",
                               bounds=(1, None), search=[32, 64, 128, 256]),
    "d_entcoeff": Hyperparam(1e-3, "entropy bonus of the discriminator's predictions", bounds=NON_NEGATIVE,
                             search=(1e-5, 1e-1, "log")),
    "d_reward": Hyperparam("gail", "the learner's reward: gail = -log(1 - D) (positive), airl = log D - log(1 - D)",
                           choices=REWARD_KINDS, search=list(REWARD_KINDS)),
}


def learnerHyperparams() -> dict[str, list[tuple[str, Any]]]:
    """:return: every learner hyperparameter, with the (--gail-learner name, default) of each learner that has it"""
    return learnerHyperparamTable(LEARNERS)


def learnerChoice(raw: str) -> str:
    """argparse type of ``--gail-learner``: one of :data:`LEARNERS`, else a one-line refusal"""
    if raw not in LEARNERS:
        raise argparse.ArgumentTypeError(f"{raw!r} cannot learn from the discriminator's reward; valid: "
                                         f"{', '.join(LEARNERS)} (on-policy learners)")
    return raw


def savedModelData(load_path: str) -> dict[str, Any]:
    """
    :param load_path: a model zip written by GAILModel.save
    :return: the SB3 "data" member (the model's attributes), where ``gail_learner`` names the learner
    :raises ValueError: not a gail model
    """
    data = readModelData(load_path)
    if data.get("gail_learner") not in LEARNERS:
        raise ValueError(f"{load_path} does not name the learner GAIL trained (gail_learner "
                         f"{data.get('gail_learner')!r}); valid: {', '.join(LEARNERS)}")
    return data


def savedDiscriminator(load_path: str) -> bytes:
    """
    :param load_path: a model zip written by GAILModel.save
    :return: its discriminator member
    :raises ValueError: the zip has none
    """
    try:
        with zipfile.ZipFile(load_path) as archive:
            return archive.read(DISCRIMINATOR_MEMBER)
    except (OSError, KeyError, zipfile.BadZipFile):
        raise ValueError(f"{load_path} holds no discriminator ({DISCRIMINATOR_MEMBER})") from None


class GAILModel(StableBaselinesRLObject):
    """
    GAIL with the discriminator of rl_baselines.rl_algorithm.gail_discriminator and the learner ``--gail-learner``.
    The class's ``SB3_CLASS`` is the default learner's (PPO); ``train`` and ``load`` set the run's on the instance.
    """

    NAME = "gail"
    SB3_CLASS: ClassVar[type | None] = PPO
    LOG_INTERVAL = 1024
    SAVE_INTERVAL = 4096
    # GAIL's own; the learner's are those of its class (learnerHyperparams), resolved by hyperparamsFromArgs.
    HYPERPARAMS = GAIL_HYPERPARAMS

    def __init__(self) -> None:
        super().__init__()
        self.gail_learner: str = DEFAULT_LEARNER
        self.discriminator: Discriminator | None = None

    # --- command line ----------------------------------------------------------------------------------------

    @classmethod
    def customArguments(cls, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        group = parser.add_argument_group("gail (defaults in brackets)")
        group.add_argument("--gail-dataset", type=os.path.abspath, default=None, metavar="DIR",
                           help="the expert's episodes: a dataset recorded with python -m "
                                "environments.dataset_generator --policy RUN (frames as png for pixels) [required]")
        group.add_argument("--gail-learner", type=learnerChoice, default=None, metavar="LEARNER",
                           help=f"the learner rewarded by the discriminator: {', '.join(LEARNERS)} "
                                f"[{DEFAULT_LEARNER}; the saved one with --load-rl-model-path]")
        cls.addHyperparamArguments(parser, group=group)
        learner = parser.add_argument_group("hyperparameters of the --gail-learner learner (defaults per learner)")
        for name, owners in learnerHyperparams().items():
            default = owners[0][1]
            kind = strToBool if isinstance(default, bool) else functools.partial(LEARNERS[owners[0][0]]._flagValue,
                                                                                 name)
            defaults = ", ".join(f"{algo}: {value}" for algo, value in owners)
            learner.add_argument(f"--{name.replace('_', '-')}", dest=f"hp_{name}", type=kind, default=None,
                                 metavar=type(default).__name__.upper(), help=f"[{defaults}]")
        learner.add_argument("--lr-schedule", choices=["constant", "linear"], default=cls.DEFAULT_LR_SCHEDULE,
                             help=f"learning-rate schedule [{cls.DEFAULT_LR_SCHEDULE}]")
        learner.add_argument("--features-extractor", choices=sorted(FEATURES_EXTRACTORS),
                             default=DEFAULT_FEATURES_EXTRACTOR,
                             help=f"image features extractor of the pixel policy [{DEFAULT_FEATURES_EXTRACTOR}]")
        return parser

    @classmethod
    def learnerName(cls, settings: Any) -> str:
        """
        :param settings: the run's settings (a RunSettings, a TrainConfig, or the train command's parsed arguments)
        :return: the ``--gail-learner`` given, else a continued model's, else ppo2
        """
        learner = getattr(settings, "gail_learner", None)
        if learner is None:
            load_path = settings.continue_from if isinstance(settings, RunSettings) else settings.load_rl_model_path
            try:
                learner = savedModelData(load_path)["gail_learner"] if load_path else None
            except ValueError:
                pass  # the train command reports an unusable model itself
        return learner or DEFAULT_LEARNER

    @classmethod
    def checkSettings(cls, settings: Any) -> str:
        """
        Check that the run fits GAIL, before anything is written (the train command's validation calls it).

        :param settings: the run's settings (a RunSettings or a TrainConfig)
        :return: the learner's name (:meth:`learnerName`)
        :raises ValueError: one line: an unknown learner, a hyperparameter of another learner, no dataset, or a
            dataset of another env, action kind or observation format
        """
        learner = cls.learnerName(settings)
        if learner not in LEARNERS:
            raise ValueError(f"--gail-learner {learner!r} cannot learn from the discriminator's reward; valid: "
                             f"{', '.join(LEARNERS)} (on-policy learners)")
        given = set(givenFlags(settings, learnerHyperparams()))
        raw = settings.arguments.get("hyperparam") if isinstance(settings, RunSettings) else settings.hyperparam
        given.update(item.partition(":")[0] for item in raw or ())
        given.update(getattr(settings, "hyperparam_overrides", None) or getattr(settings, "hyperparams", None) or {})
        own = {*LEARNERS[learner].DEFAULT_HYPERPARAMS, *GAIL_HYPERPARAMS}
        for name in sorted(given):
            if name not in own and name in learnerHyperparams():
                raise ValueError(f"{name} (--{name.replace('_', '-')}) is not a hyperparameter of --gail-learner "
                                 f"{learner}; its hyperparameters: {', '.join(sorted(own))}")
        path = getattr(settings, "gail_dataset", None)
        if not path:
            raise ValueError("--algo gail needs --gail-dataset DIR, expert episodes recorded with python -m "
                             "environments.dataset_generator --policy RUN")
        try:
            checkExpertDataset(path, settings)
        except ValueError as error:
            raise ValueError(f"--gail-dataset: {error}") from None
        return learner

    @classmethod
    def parserHyperParam(cls, hyperparams: dict[str, str]) -> dict[str, Any]:
        """Cast ``--hyperparam`` values: GAIL's own with its spec, the learners' with their class."""
        return parseOwnOrLearnerHyperparams(cls, GAIL_HYPERPARAMS, hyperparams, LEARNERS)

    @classmethod
    def hyperparamsFromArgs(cls, args: RunSettings, train_kwargs: dict[str, Any] | None,
                            saved: dict[str, Any] | None = None) -> dict[str, Any]:
        """The learner's hyperparameters (its class's), then GAIL's own (default < flag < ``--hyperparam``)."""
        given = dict(train_kwargs or {})
        learner = {k: v for k, v in given.items() if k not in GAIL_HYPERPARAMS}
        values = LEARNERS[cls.learnerName(args)].hyperparamsFromArgs(args, learner)
        values.update(hp.hyperparamsFromArgs(cls, args, {k: v for k, v in given.items() if k in GAIL_HYPERPARAMS}))
        return values

    @classmethod
    def makeModelKwargs(cls, settings: RunSettings, hyperparams: dict[str, Any], env: Any) -> dict[str, Any]:
        """The learner's constructor keywords (GAIL's own hyperparameters are the discriminator's)."""
        learner = {k: v for k, v in hyperparams.items() if k not in GAIL_HYPERPARAMS}
        return LEARNERS[cls.learnerName(settings)].makeModelKwargs(settings, learner, env)

    # --- persistence -----------------------------------------------------------------------------------------

    def zipMembers(self) -> dict[str, bytes]:
        """:return: the discriminator's state, saved inside the model zip"""
        return {} if self.discriminator is None else {DISCRIMINATOR_MEMBER: self.discriminator.toBytes()}

    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        # SB3 saves the model's attributes: the file names its learner, so that load picks the right SB3 class.
        self.model.gail_learner = self.gail_learner
        super().save(save_path, _locals)

    @classmethod
    def load(cls, load_path: str, settings: RunSettings | None = None) -> GAILModel:
        """
        :param load_path: a model zip written by :meth:`save`
        :param settings: the run's settings (its device); a ``gail_learner`` other than the saved one is refused
        :return: the model, ready to act (the discriminator is not needed for that: ``train`` reads it)
        """
        cls.readManifest(load_path)
        obj = cls()
        obj.gail_learner = savedModelData(load_path)["gail_learner"]
        wanted = None if settings is None else settings.option("gail_learner")
        if wanted is not None and wanted != obj.gail_learner:
            raise ValueError(f"{load_path} was trained with --gail-learner {obj.gail_learner}, not {wanted}")
        obj.SB3_CLASS = LEARNERS[obj.gail_learner].SB3_CLASS
        obj.model = cls.loadSB3Model(obj.SB3_CLASS, load_path, settings)
        obj.num_timesteps = obj.model.num_timesteps
        return obj

    # --- training --------------------------------------------------------------------------------------------

    def train(self, env: Any, total_timesteps: int, hyperparams: dict[str, Any], callback: Any, logger: Any,
              settings: RunSettings, checkpoint: Checkpoint | None = None) -> None:
        try:
            self.gail_learner = self.checkSettings(settings)  # done by the train command's validation; here for others
            expert = ExpertData.load(settings.option("gail_dataset"), env, settings.srl_model)
            discriminator = Discriminator(env.observation_space, env.action_space, hyperparams["d_hidden"],
                                          hyperparams["d_learning_rate"], settings.seed, runDevice(settings.device))
            if settings.continue_from:  # a continued or resumed model goes on with its discriminator
                discriminator.loadBytes(savedDiscriminator(settings.continue_from))
                if "d_learning_rate" in {*givenFlags(settings, GAIL_HYPERPARAMS), *settings.hyperparam_overrides}:
                    for group in discriminator.optimizer.param_groups:  # given now: over the saved one
                        group["lr"] = hyperparams["d_learning_rate"]
        except (ValueError, RuntimeError) as error:  # RuntimeError: saved weights of another d_hidden
            env.close()
            raise UsageError(str(error).splitlines()[0]) from None
        self.SB3_CLASS = LEARNERS[self.gail_learner].SB3_CLASS
        self.discriminator = discriminator
        if not settings.continue_from:  # (a continued or resumed run restored its own statistics)
            seedNormalisation(env, expert)
        rewarded = GAILRewardVecEnv(env, discriminator, hyperparams["d_reward"])
        learner = {k: v for k, v in hyperparams.items() if k not in GAIL_HYPERPARAMS}
        self.prepareTraining(rewarded, learner, logger, settings, checkpoint, callback)
        update = DiscriminatorUpdate(discriminator, expert, rewarded, hyperparams["d_epochs"],
                                     hyperparams["d_batch_size"], hyperparams["d_entcoeff"])
        # the training callback first: a rollout's discriminator update follows its step callbacks
        self.model.learn(total_timesteps=total_timesteps, callback=CallbackList([sb3Callback(callback), update]),
                         reset_num_timesteps=not settings.continue_from)
        self.num_timesteps = self.model.num_timesteps
        self.env.close()
