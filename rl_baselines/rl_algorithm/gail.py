"""gail: Generative Adversarial Imitation Learning (Ho & Ermon, 2016) over an on-policy Stable-Baselines3 learner.

A discriminator D(s, a) learns to tell the expert's transitions (``--gail-dataset``, a dataset recorded with
``python -m environments.dataset_generator --policy RUN``) from the agent's; its output is the only reward the
learner ever receives (rl_baselines.rl_algorithm.gail_discriminator: the expert pipeline, D, the reward wrapper and
the per-rollout update). Stable Baselines 2's ``gail`` drove TRPO; here ``--gail-learner`` picks ppo2 (the
default), a2c or trpo, each with its own hyperparameters and flags. Only on-policy learners: each rollout is
rewarded by the discriminator of its time, where a replay buffer would keep the rewards of older ones.

The env's reward is still recorded by the Monitor under the reward wrapper: the learning curves, the best-model
choice and the evaluations show how well the imitation does on the env's own task.

The model zip is the learner's SB3 zip, naming its learner (``gail_learner``, read back by :meth:`GAILModel.load`)
and holding GAIL's own hyperparameters (``d_hidden``... as attributes of its "data" member: a continued model goes on
with them unless flags override them, and a ``d_hidden`` other than the saved one is refused before anything is
written), with the discriminator's weights, optimiser and generator state as one more member
(:data:`DISCRIMINATOR_MEMBER`, read with ``weights_only=True``); replaying a run needs the policy only.

The learner is a setting as well as a flag: ``gail_learner`` in ``--hyperparam-file``/``--hyperparam`` chooses it
(``--gail-learner`` agrees with it or is refused), and a run's hyperparams.yaml records it, so that the file alone
repeats the run. A checkpoint's model holds the discriminator
as it was after the update of the last rollout, so a resumed run goes on exactly as an uninterrupted one.
"""
from __future__ import annotations

import argparse
import io
import os
import zipfile
from typing import Any, ClassVar

import torch
from stable_baselines3 import PPO

from rl_baselines.core import hyperparams as hp
from rl_baselines.core.checkpointing import Checkpoint
from rl_baselines.core.hyperparams import LAYER_UNITS, NON_NEGATIVE, POSITIVE, Hyperparam, givenFlags
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
from rl_baselines.rl_algorithm.image_features import addFeaturesExtractorFlags
from rl_baselines.rl_algorithm.kept_settings import refuseOtherThanSaved
from rl_baselines.rl_algorithm.learner_flags import (
    addLearnerHyperparamFlags,
    addLrScheduleFlag,
    learnerHyperparamTable,
    parseOwnOrLearnerHyperparams,
)
from rl_baselines.rl_algorithm.model_data import hyperparamsInData, readModelData
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject
from rl_baselines.rl_algorithm.trpo import TRPOModel
from rl_baselines.runs.hyperparam_sources import hyperparamStrings
from srl_toolbox.cli import UsageError
from srl_toolbox.devices import runDevice

# The learners GAIL can drive, by --gail-learner name: on-policy, their rollouts rewarded by the discriminator.
LEARNERS: dict[str, type[StableBaselinesRLObject]] = {"ppo2": PPO2Model, "a2c": A2CModel, "trpo": TRPOModel}
DEFAULT_LEARNER = "ppo2"
DISCRIMINATOR_MEMBER = "gail_discriminator.pt"  # not .pth: SB3's load would take it for one of the learner's
# The learner's name among the hyperparameters (--hyperparam-file, --hyperparam, hyperparams.yaml): --gail-learner.
LEARNER_KEY = "gail_learner"
GAIL_HYPERPARAMS: dict[str, Hyperparam] = {
    "d_hidden": Hyperparam(100, "units of the discriminator's two tanh layers (and its image features)",
                           bounds=LAYER_UNITS, search=[64, 100, 256]),
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


# The hyperparameter names that are GAIL's, not its learner's: the discriminator's and the learner's name.
OWN_KEYS = frozenset({*GAIL_HYPERPARAMS, LEARNER_KEY})


def givenHyperparams(settings: Any) -> dict[str, Any]:
    """:param settings: a RunSettings or a TrainConfig
    :return: the typed ``--hyperparam-file``/``--hyperparam`` values"""
    return dict((settings.hyperparam_overrides if isinstance(settings, RunSettings)
                 else getattr(settings, "hyperparams", None)) or {})


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


def savedDiscriminatorHidden(load_path: str) -> int | None:
    """:param load_path: a model zip written by GAILModel.save
    :return: the units of its discriminator's layers (d_hidden), read off its weights; None where unreadable"""
    try:
        state = torch.load(io.BytesIO(savedDiscriminator(load_path)), map_location="cpu", weights_only=True)
        return int(state["weights"]["head.0.weight"].shape[0])
    except (ValueError, RuntimeError, KeyError, TypeError, AttributeError, IndexError, EOFError, OSError):
        return None


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
        learner = addLearnerHyperparamFlags(parser, LEARNERS,
                                            "hyperparameters of the --gail-learner learner (defaults per learner)")
        addLrScheduleFlag(learner, cls.DEFAULT_LR_SCHEDULE)
        addFeaturesExtractorFlags(learner, cls.DEFAULT_FEATURES_EXTRACTOR, cls.DEFAULT_PRECISION)
        # args.json records the learner the run trains, not null: resolved right after parsing (as her's
        # --her-algo). A resumed run's arguments are read without it: an older args.json's null still resolves.
        parse_args = parser.parse_args

        def parseAndResolve(args: Any = None, namespace: Any = None) -> Any:
            parsed = parse_args(args, namespace)
            if getattr(parsed, "gail_learner", None) is None:
                parsed.gail_learner = cls.parsedLearner(parsed)
            return parsed

        parser.parse_args = parseAndResolve
        return parser

    @classmethod
    def parsedLearner(cls, parsed: argparse.Namespace) -> str | None:
        """
        :param parsed: the train command's parsed arguments, ``--gail-learner`` not given
        :return: the learner :meth:`learnerName` finds with ``--hyperparam-file``/``--hyperparam`` read, None when
            they cannot be read (validation then refuses them in one line)
        """
        try:
            strings = hyperparamStrings(argparse.Namespace(**{**vars(parsed), "extra": vars(parsed)}))
            given = {LEARNER_KEY: cls.parserHyperParam(strings)[LEARNER_KEY]} if LEARNER_KEY in strings else {}
        except (UsageError, ValueError):
            return None
        return cls.learnerName(argparse.Namespace(**{**vars(parsed), "hyperparams": given}))

    @classmethod
    def learnerName(cls, settings: Any) -> str:
        """
        :param settings: the run's settings (a RunSettings, a TrainConfig, or the train command's parsed arguments)
        :return: the ``--gail-learner`` given, else the ``gail_learner`` of ``--hyperparam-file``/``--hyperparam``,
            else a continued model's, else ppo2
        """
        learner = getattr(settings, "gail_learner", None) or givenHyperparams(settings).get(LEARNER_KEY)
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
        :raises ValueError: one line: an unknown learner, a hyperparameter of another learner, a ``d_hidden`` other
            than a continued model's, no dataset, or a dataset of another env, action kind or observation format, or
            with actions or states the run cannot take
        """
        return cls._checkRun(settings)

    @classmethod
    def _checkRun(cls, settings: Any, action_space: Any = None) -> str:
        """:meth:`checkSettings`, with the run's action space when its env is built (None: one env is built)"""
        learner = cls.learnerName(settings)
        if learner not in LEARNERS:
            raise ValueError(f"--gail-learner {learner!r} cannot learn from the discriminator's reward; valid: "
                             f"{', '.join(LEARNERS)} (on-policy learners)")
        values = givenHyperparams(settings)
        flag = getattr(settings, "gail_learner", None)
        if flag is not None and values.get(LEARNER_KEY, flag) != flag:
            raise ValueError(f"--gail-learner {flag} disagrees with {LEARNER_KEY}: {values[LEARNER_KEY]} of "
                             "--hyperparam-file/--hyperparam; give one of them")
        given = set(givenFlags(settings, learnerHyperparams()))
        raw = settings.arguments.get("hyperparam") if isinstance(settings, RunSettings) else settings.hyperparam
        given.update(item.partition(":")[0] for item in raw or ())
        given.update(values)
        own = {*LEARNERS[learner].DEFAULT_HYPERPARAMS, *GAIL_HYPERPARAMS}
        for name in sorted(given):
            if name not in own and name in learnerHyperparams():
                raise ValueError(f"{name} (--{name.replace('_', '-')}) is not a hyperparameter of --gail-learner "
                                 f"{learner}; its hyperparameters: {', '.join(sorted(own))}")
        refuseOtherThanSaved(settings, ["d_hidden"], cls.savedHyperparams, {
            "d_hidden": "has a discriminator of d_hidden {saved}, whose layers cannot change size"})
        path = getattr(settings, "gail_dataset", None)
        if not path:
            raise ValueError("--algo gail needs --gail-dataset DIR, expert episodes recorded with python -m "
                             "environments.dataset_generator --policy RUN")
        try:
            checkExpertDataset(path, settings, action_space)
        except ValueError as error:
            raise ValueError(f"--gail-dataset: {error}") from None
        return learner

    @classmethod
    def parserHyperParam(cls, hyperparams: dict[str, str]) -> dict[str, Any]:
        """Cast ``--hyperparam`` values: GAIL's own with its spec, ``gail_learner`` as ``--gail-learner``, the
        learners' with their class."""
        hyperparams = dict(hyperparams)
        parsed: dict[str, Any] = {}
        if LEARNER_KEY in hyperparams:
            learner = str(hyperparams.pop(LEARNER_KEY))
            if learner not in LEARNERS:
                raise ValueError(f"{LEARNER_KEY} {learner!r} cannot learn from the discriminator's reward; valid: "
                                 f"{', '.join(LEARNERS)} (on-policy learners)")
            parsed[LEARNER_KEY] = learner
        parsed.update(parseOwnOrLearnerHyperparams(cls, GAIL_HYPERPARAMS, hyperparams, LEARNERS))
        return parsed

    @classmethod
    def hyperparamsFromArgs(cls, args: RunSettings, train_kwargs: dict[str, Any] | None,
                            saved: dict[str, Any] | None = None) -> dict[str, Any]:
        """
        The learner's hyperparameters (its class's), then GAIL's own (default < a continued model's ``saved`` <
        flag < ``--hyperparam``), then the learner's name (``gail_learner``: hyperparams.yaml repeats the run).
        """
        given, saved = dict(train_kwargs or {}), dict(saved or {})
        learner_name = cls.learnerName(args)
        values = LEARNERS[learner_name].hyperparamsFromArgs(
            args, {k: v for k, v in given.items() if k not in OWN_KEYS},
            {k: v for k, v in saved.items() if k not in OWN_KEYS})
        values.update(hp.hyperparamsFromArgs(cls, args, {k: v for k, v in given.items() if k in GAIL_HYPERPARAMS},
                                             {k: v for k, v in saved.items() if k in GAIL_HYPERPARAMS}))
        values[LEARNER_KEY] = learner_name
        return values

    @classmethod
    def savedHyperparams(cls, load_path: str) -> dict[str, Any] | None:
        """
        :param load_path: a model zip written by :meth:`save`
        :return: the hyperparameters it keeps: its learner's and GAIL's own (a zip written before GAIL's were
            saved: ``d_hidden`` read off its discriminator's weights)
        :raises ValueError: not a gail model (one line)
        """
        cls.readManifest(load_path)
        data = savedModelData(load_path)
        learner = LEARNERS[data["gail_learner"]]
        saved = hyperparamsInData(data, learner.HYPERPARAMS, learner.parserHyperParam)
        saved.update(hyperparamsInData(data, GAIL_HYPERPARAMS, cls.parserHyperParam))
        if "d_hidden" not in saved and (hidden := savedDiscriminatorHidden(load_path)) is not None:
            saved["d_hidden"] = hidden
        return saved

    @classmethod
    def makeModelKwargs(cls, settings: RunSettings, hyperparams: dict[str, Any], env: Any) -> dict[str, Any]:
        """The learner's constructor keywords (GAIL's own hyperparameters are the discriminator's)."""
        learner = {k: v for k, v in hyperparams.items() if k not in OWN_KEYS}
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
        wanted = None if settings is None else (settings.option("gail_learner")
                                                or settings.hyperparam_overrides.get(LEARNER_KEY))
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
            # done by the train command's validation; here for others
            self.gail_learner = self._checkRun(settings, env.action_space)
            expert = ExpertData.load(settings.option("gail_dataset"), env, settings.srl_model)
            discriminator = Discriminator(env.observation_space, env.action_space, hyperparams["d_hidden"],
                                          hyperparams["d_learning_rate"], settings.seed, runDevice(settings.device))
            if settings.continue_from:  # a continued or resumed model goes on with its discriminator
                try:
                    discriminator.loadBytes(savedDiscriminator(settings.continue_from))
                except RuntimeError:  # weights of another d_hidden (refused by the train command's validation)
                    own = savedDiscriminatorHidden(settings.continue_from)
                    raise ValueError(f"d_hidden {hyperparams['d_hidden']}: {settings.continue_from} has a "
                                     f"discriminator of d_hidden {own}; valid: {own}") from None
                if "d_learning_rate" in {*givenFlags(settings, GAIL_HYPERPARAMS), *settings.hyperparam_overrides}:
                    for group in discriminator.optimizer.param_groups:  # given now: over the saved one
                        group["lr"] = hyperparams["d_learning_rate"]
        except ValueError as error:
            env.close()
            raise UsageError(str(error)) from None
        self.SB3_CLASS = LEARNERS[self.gail_learner].SB3_CLASS
        self.discriminator = discriminator
        if not settings.continue_from:  # (a continued or resumed run restored its own statistics)
            seedNormalisation(env, expert)
        rewarded = GAILRewardVecEnv(env, discriminator, hyperparams["d_reward"])
        learner = {k: v for k, v in hyperparams.items() if k not in OWN_KEYS}
        self.prepareTraining(rewarded, learner, logger, settings, checkpoint, callback)
        for name in GAIL_HYPERPARAMS:  # saved with the model (its "data"): a continued run goes on with them
            setattr(self.model, name, hyperparams[name])
        update = DiscriminatorUpdate(discriminator, expert, rewarded, hyperparams["d_epochs"],
                                     hyperparams["d_batch_size"], hyperparams["d_entcoeff"])
        # the training callback first: a rollout's discriminator update follows its step callbacks
        self.learnModel(total_timesteps, callback, settings, update)
        self.num_timesteps = self.model.num_timesteps
        self.env.close()
