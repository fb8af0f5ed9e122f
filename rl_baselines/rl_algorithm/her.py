"""her: Hindsight Experience Replay (Andrychowicz et al., 2017) over an off-policy algorithm, for goal-based envs.

The env runs in its goal-conditioned mode (``goal_conditioned=True``, see environments/srl_env.py): observations
are a Dict of the ground truth, the achieved goal (robot position) and the desired goal (target position), and the
env's ``compute_reward`` gives the reward of any goal. Stable-Baselines3's HerReplayBuffer stores real episodes and
adds, for each sampled transition, ``n_sampled_goal`` copies whose desired goal is a position reached later in the
episode (``future``), at its end (``final``) or anywhere in it (``episode``), rewarded by ``compute_reward``: a
robot that missed the target still learns how to reach where it went.

``--her-algo`` picks the learner, with its own hyperparameters and flags: sac, td3, ddpg (continuous actions, the
project's wrappers) or deepq (discrete) - Stable-Baselines3's DQN, not the project's deepq, whose prioritized
replay samples stored transitions by TD error while HER rewrites their goals and rewards at sampling time; SB3's DQN
takes HerReplayBuffer as it is (the project's deepq settings are kept: lr 5e-4, batch 64, target copy every 500
steps, exploration 0.2 -> 0.02, no double Q or dueling heads).

The replay buffer is not saved. A model loaded only to act (``replay.enjoy_baselines``) gets a one-slot plain buffer,
since SB3 builds a HerReplayBuffer only with an env; continuing training (``--load-rl-model-path``) builds a new
HerReplayBuffer on the training env, and collects ``learning_starts`` steps again (with random actions, as at the
start) before learning resumes: HER samples finished episodes only.
"""
from __future__ import annotations

import argparse
from typing import Any, ClassVar

from stable_baselines3 import DQN
from stable_baselines3.common.buffers import DictReplayBuffer
from stable_baselines3.her import HerReplayBuffer

from environments import envsWhere, getEnvClass, registered_env
from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.checkpointing import Checkpoint
from rl_baselines.core.hyperparams import CLIP_NORM, Hyperparam, Interval, givenFlags
from rl_baselines.core.plugin_v1 import asRunSettings
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.rl_algorithm.ddpg import DDPGModel
from rl_baselines.rl_algorithm.learner_flags import (
    addLearnerHyperparamFlags,
    addLrScheduleFlag,
    learnerHyperparamTable,
    parseOwnOrLearnerHyperparams,
)
from rl_baselines.rl_algorithm.model_data import readModelData
from rl_baselines.rl_algorithm.off_policy import OffPolicyRLObject, replayHyperparams, replaySearchSpace
from rl_baselines.rl_algorithm.sac import SACModel
from rl_baselines.rl_algorithm.td3 import TD3Model
from srl_toolbox.cli import UsageError
from srl_toolbox.devices import runDevice

GOAL_SELECTION_STRATEGIES = ("future", "final", "episode")
# HER's own hyperparameters (the learner's come from its class).
HER_HYPERPARAMS: dict[str, Hyperparam] = {
    "n_sampled_goal": Hyperparam(4, "relabelled goals per real transition", bounds=(1, None), search=(1, 8)),
    "goal_selection_strategy": Hyperparam("future", "relabelled goals: reached later in the episode (future), at "
                                          "its end (final), or anywhere in it (episode)",
                                          choices=GOAL_SELECTION_STRATEGIES, search=list(GOAL_SELECTION_STRATEGIES)),
}
HER_DEFAULTS: dict[str, Any] = {name: hyperparam.default for name, hyperparam in HER_HYPERPARAMS.items()}
# What a model loaded without an env gets instead of its HerReplayBuffer (it only acts).
REPLAY_ONLY_BUFFER = {"replay_buffer_class": DictReplayBuffer, "replay_buffer_kwargs": {}, "buffer_size": 1}


class HERDQNModel(OffPolicyRLObject):
    """Stable-Baselines3's DQN with the project's deepq settings: the discrete learner of her (not registered)."""

    SB3_CLASS = DQN
    NAME = "deepq"
    ACTION_TYPES = (ActionType.DISCRETE,)
    # Not searched by itself: her's search space is the one every learner shares (HERModel.getOptParam).
    HYPERPARAMS = {
        **replayHyperparams(learning_rate=5e-4, batch_size=64, searched=False),
        "target_update_interval": Hyperparam(500, "env steps between target network copies", bounds=(1, None)),
        "exploration_fraction": Hyperparam(0.2, "fraction of the run over which epsilon decays",
                                           bounds=Interval(0, 1)),
        "exploration_final_eps": Hyperparam(0.02, "epsilon at the end of the decay", bounds=Interval(0, 1)),
        "max_grad_norm": Hyperparam(10.0, "gradient clipping norm", bounds=CLIP_NORM),
    }


# The learners HER can drive, by --her-algo name.
BASE_ALGOS: dict[str, type[OffPolicyRLObject]] = {"sac": SACModel, "td3": TD3Model, "ddpg": DDPGModel,
                                                  "deepq": HERDQNModel}


def baseHyperparams() -> dict[str, list[tuple[str, Any]]]:
    """:return: every learner hyperparameter, with the (--her-algo name, default) of each learner that has it"""
    return learnerHyperparamTable(BASE_ALGOS)


def savedModelData(load_path: str) -> dict[str, Any]:
    """
    :param load_path: a model zip written by HERModel.save
    :return: the SB3 "data" member (JSON: the model's attributes), where ``her_algo`` names a learner
    :raises ValueError: not a her model
    """
    data = readModelData(load_path)
    her_algo = data.get("her_algo")
    if her_algo not in BASE_ALGOS:
        raise ValueError(f"{load_path} does not name the algorithm HER trained (her_algo {her_algo!r}); valid: "
                         f"{', '.join(BASE_ALGOS)}")
    return data


def firstEpisodesSteps(num_cpu: int, env_id: str) -> int:
    """
    :param num_cpu: the run's parallel envs
    :param env_id: the run's env
    :return: env steps (all envs together) by which every env has finished an episode (no early termination)
    """

    return int(num_cpu) * int(getEnvClass(env_id).MAX_STEPS)


class HERModel(OffPolicyRLObject):
    """
    Hindsight experience replay with SB3's HerReplayBuffer and MultiInputPolicy over the learner ``--her-algo``.
    ``learning_starts`` defaults to the learner's (1000) or, if more, to the steps by which every env has ended an
    episode (``--num-cpu`` x the env's episode length): HER cannot sample before that.
    """

    NAME = "her"
    ACTION_TYPES = (ActionType.DISCRETE, ActionType.CONTINUOUS)
    SB3_CLASS: ClassVar[type | None] = None  # the learner's, set per instance by train and load
    POLICIES = {"pixels": "MultiInputPolicy", "state": "MultiInputPolicy"}
    AUGMENTED_BUFFER = None  # its buffer is HER's (goal-conditioned dict observations): no --augment
    # HER's own; the learner's are those of its class (baseHyperparams), resolved by hyperparamsFromArgs.
    HYPERPARAMS = HER_HYPERPARAMS

    def __init__(self) -> None:
        super().__init__()
        self.her_algo: str | None = None

    # --- command line ----------------------------------------------------------------------------------------

    @classmethod
    def customArguments(cls, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        group = parser.add_argument_group("her (defaults in brackets)")
        group.add_argument("--her-algo", choices=list(BASE_ALGOS), default=None,
                           help="learner: sac, td3, ddpg (continuous, -c) or deepq (discrete, Stable-Baselines3's "
                                "DQN) [sac with -c, else deepq; the saved one with --load-rl-model-path]")
        cls.addHyperparamArguments(parser, group=group)
        learner = addLearnerHyperparamFlags(
            parser, BASE_ALGOS, "hyperparameters of the --her-algo learner (defaults per learner)",
            "learning_starts defaults to at least --num-cpu x the env's episode length (HER samples finished episodes)")
        addLrScheduleFlag(learner, cls.DEFAULT_LR_SCHEDULE)
        # The train command checks every input before writing anything, but its checks (action type, observation)
        # cannot know --her-algo: check right after parsing, as one more parser error.
        parse_args = parser.parse_args

        def parseAndCheck(args: Any = None, namespace: Any = None) -> Any:
            parsed = parse_args(args, namespace)
            try:
                parsed.her_algo = cls.checkRun(parsed)
            except ValueError as error:
                parser.error(str(error))
            return parsed

        parser.parse_args = parseAndCheck
        return parser

    @classmethod
    def learnerName(cls, settings: Any) -> str:
        """
        :param settings: the run's settings (a RunSettings, a TrainConfig, or the train command's parsed arguments)
        :return: the learner's ``--her-algo`` name: the one given, else a continued model's, else sac with
            continuous actions and deepq with discrete ones
        """
        her_algo = getattr(settings, "her_algo", None)
        if her_algo is None:
            load_path = settings.continue_from if isinstance(settings, RunSettings) else settings.load_rl_model_path
            try:
                her_algo = savedModelData(load_path)["her_algo"] if load_path else None
            except ValueError:
                pass  # the train command reports an unusable model itself
        return her_algo or ("sac" if settings.continuous_actions else "deepq")

    @classmethod
    def checkRun(cls, settings: Any) -> str:
        """
        Check that the run fits HER (called on the train command's parsed arguments, and by ``train``).

        :param settings: the run's settings (a RunSettings, a TrainConfig, or the train command's parsed arguments)
        :return: the learner's name (:meth:`learnerName`)
        :raises ValueError: one line naming the bad value and the valid choices
        """

        continuous = bool(settings.continuous_actions)
        her_algo = cls.learnerName(settings)
        wanted = ActionType.CONTINUOUS if continuous else ActionType.DISCRETE
        if wanted not in BASE_ALGOS[her_algo].ACTION_TYPES:
            fitting = [name for name, base in BASE_ALGOS.items() if wanted in base.ACTION_TYPES]
            kind, hint = ("continuous", "drop -c") if continuous else ("discrete", "add -c")
            raise ValueError(f"--her-algo {her_algo} does not support {kind} actions ({hint}); --her-algo "
                             f"choices that do: {', '.join(fitting)}")
        if settings.srl_model != "ground_truth":
            raise ValueError(f"--algo her needs the goal-conditioned observation, --srl-model ground_truth; got "
                             f"{settings.srl_model!r}; valid choices: ground_truth")
        for flag, value in (("--num-stack", settings.num_stack), ("--action-repeat", settings.action_repeat)):
            if value > 1:
                raise ValueError(f"{flag} {value} is not available with --algo her (HER recomputes each step's "
                                 f"reward from the goal it reached); valid: 1")
        if settings.env not in registered_env:
            return her_algo  # the train command reports an unknown env
        if not getattr(getEnvClass(settings.env), "GOAL_CONDITIONED", False):
            having = envsWhere(lambda env_class: getattr(env_class, "GOAL_CONDITIONED", False))
            raise ValueError(f"--algo her needs an env with a goal-conditioned mode, {settings.env} has none; envs "
                             f"that have one: {', '.join(having)}")
        given: dict[str, Any] = givenFlags(settings, baseHyperparams())
        raw = settings.arguments.get("hyperparam") if isinstance(settings, RunSettings) else settings.hyperparam
        given.update((key, value) for key, _, value in (item.partition(":") for item in raw or ()))
        # the typed --hyperparam / --hyperparam-file values: a RunSettings' hyperparam_overrides, a TrainConfig's
        # hyperparams
        given.update(getattr(settings, "hyperparam_overrides", None) or getattr(settings, "hyperparams", None) or {})
        cls.checkGivenHyperparams(her_algo, firstEpisodesSteps(settings.num_cpu, settings.env), given)
        return her_algo

    @classmethod
    def checkSettings(cls, settings: Any) -> Any:
        """:meth:`checkRun`, before anything is written (the train command's validation calls it: a run built in
        Python is not parsed by the train command's parser, which also calls it)."""
        cls.checkRun(settings)
        return super().checkSettings(settings)

    @classmethod
    def checkGivenHyperparams(cls, her_algo: str, first_episodes_steps: int, given: dict[str, Any]) -> None:
        """
        :param her_algo: the learner
        :param first_episodes_steps: env steps by which every env has finished an episode (firstEpisodesSteps)
        :param given: hyperparameters set by flags, --hyperparam or a file (values typed or as strings)
        :raises ValueError: one belongs to another learner, or learning_starts is too short for HER (names of no
            learner are left to parserHyperParam)
        """
        own = {*BASE_ALGOS[her_algo].DEFAULT_HYPERPARAMS, *HER_DEFAULTS}
        for name in given:
            if name not in own and name in baseHyperparams():
                raise ValueError(f"{name} (--{name.replace('_', '-')}) is not a hyperparameter of --her-algo "
                                 f"{her_algo}; its hyperparameters: {', '.join(sorted(own))}")
        try:
            learning_starts = int(float(given["learning_starts"])) if "learning_starts" in given else None
        except ValueError:
            return  # a bad value: the train command reports it
        if learning_starts is not None and learning_starts < first_episodes_steps:
            raise ValueError(f"learning_starts {learning_starts} is too small for HER, which samples finished "
                             f"episodes only: at least --num-cpu x the episode length, {first_episodes_steps}")

    @classmethod
    def parserHyperParam(cls, hyperparams: dict[str, str]) -> dict[str, Any]:
        """Cast ``--hyperparam`` values: HER's own with its spec, the learners' with their class."""
        return parseOwnOrLearnerHyperparams(cls, HER_DEFAULTS, hyperparams, BASE_ALGOS)

    @classmethod
    def getOptParam(cls) -> dict[str, tuple]:
        """:return: the search ranges every learner shares, then HER's own (its spec's; learning_starts stays at its
            default: HER needs it at least one episode long). The one built-in that adds to its spec's space: the
            learner's hyperparameters are not in HER's spec, their defaults depend on ``--her-algo``."""
        space = {name: spec for name, spec in replaySearchSpace().items() if name != "learning_starts"}
        return {**space, **super().getOptParam()}

    # --- the learner's hyperparameters ------------------------------------------------------------------------

    @classmethod
    def hyperparamsFromArgs(cls, args: RunSettings, train_kwargs: dict[str, Any] | None,
                            saved: dict[str, Any] | None = None) -> dict[str, Any]:
        """The learner's hyperparameters (its class's), HER's own, and learning_starts at least the first episodes'
        length unless given (nothing is saved: a continued model keeps its own)."""
        hyperparams = BASE_ALGOS[cls.learnerName(args)].hyperparamsFromArgs(args, train_kwargs)
        flags = givenFlags(args, [*HER_DEFAULTS, "learning_starts"])
        for name, default in HER_DEFAULTS.items():
            hyperparams.setdefault(name, flags.get(name, default))
        if "learning_starts" not in flags and "learning_starts" not in (train_kwargs or {}):
            hyperparams["learning_starts"] = max(hyperparams["learning_starts"],
                                                 firstEpisodesSteps(args.num_cpu, args.env))
        return hyperparams

    @classmethod
    def makeModelKwargs(cls, settings: RunSettings, hyperparams: dict[str, Any], env: Any) -> dict[str, Any]:
        """
        The learner's keywords (action noise...) plus the HER buffer. When continuing a saved model (then given
        only the overridden hyperparameters), the buffer is rebuilt when ``--n-sampled-goal`` or
        ``--goal-selection-strategy`` is given (the other one then takes its default), and learning starts
        ``learning_starts`` steps after the saved step count.
        """
        learner_hyperparams = {k: v for k, v in hyperparams.items() if k not in HER_DEFAULTS}
        her = {k: v for k, v in hyperparams.items() if k in HER_DEFAULTS}
        kwargs = BASE_ALGOS[cls.learnerName(settings)].makeModelKwargs(settings, learner_hyperparams, env)
        load_path = settings.continue_from
        if her or not load_path:
            # copy_info_dict: compute_reward reads the goal-independent penalty (a bump...) from each step's info.
            kwargs["replay_buffer_class"] = HerReplayBuffer
            kwargs["replay_buffer_kwargs"] = {**HER_DEFAULTS, **her, "copy_info_dict": True}
        if load_path:
            learning_starts = kwargs.get("learning_starts", cls.hyperparamsFromArgs(settings, None)["learning_starts"])
            kwargs["learning_starts"] = int(savedModelData(load_path)["num_timesteps"]) + learning_starts
        return kwargs

    # --- env, persistence, training ---------------------------------------------------------------------------

    @classmethod
    def makeEnv(cls, settings: RunSettings, env_kwargs: dict[str, Any] | None = None,
                load_path_normalise: str | None = None) -> Any:
        """The env in its goal-conditioned mode (the goals stay unnormalised, see rl_baselines.envs.factory)."""

        settings = asRunSettings(settings)  # (a caller written for API version 1 passes a Namespace)
        env_kwargs = cls.envKeywords(dict(settings.env_kwargs) if env_kwargs is None else env_kwargs)
        return super().makeEnv(settings, env_kwargs, load_path_normalise)

    @classmethod
    def envKeywords(cls, env_kwargs: dict[str, Any]) -> dict[str, Any]:
        """:return: the run's keywords in the goal-conditioned mode (env_globals.json records them so; a run
        recorded before without it is built the same, here)"""
        return {**env_kwargs, "goal_conditioned": True}

    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        # SB3 saves the model's attributes: the file names its learner, so that load picks the right SB3 class.
        self.model.her_algo = self.her_algo
        super().save(save_path, _locals)

    @classmethod
    def load(cls, load_path: str, settings: RunSettings | None = None) -> HERModel:
        """
        :param load_path: a model zip written by :meth:`save`
        :param settings: the run's settings; a ``her_algo`` other than the saved learner is refused
        :return: the model, with a one-slot plain replay buffer (enough to act; train builds its own)
        """
        cls.readManifest(load_path)
        saved = savedModelData(load_path)
        her_algo = saved["her_algo"]
        wanted = None if settings is None else settings.option("her_algo")
        if wanted is not None and wanted != her_algo:
            raise ValueError(f"{load_path} was trained with --her-algo {her_algo}, not {wanted}")
        obj = cls()
        obj.her_algo = her_algo
        sb3_class = BASE_ALGOS[her_algo].SB3_CLASS
        device = runDevice(None if settings is None else settings.device)
        try:
            obj.model = sb3_class.load(load_path, device=device, custom_objects=REPLAY_ONLY_BUFFER)
        except Exception as error:  # SB3 raises many kinds for a damaged archive
            raise ValueError(f"{load_path} could not be loaded by her: {type(error).__name__}: {error}") from None
        # The one-slot buffer is for acting only: keep the saved settings, so that a re-saved model still trains.
        obj.model.replay_buffer_class = HerReplayBuffer
        obj.model.replay_buffer_kwargs = saved["replay_buffer_kwargs"]
        obj.model.buffer_size = saved["buffer_size"]
        obj.num_timesteps = obj.model.num_timesteps
        return obj

    def train(self, env: Any, total_timesteps: int, hyperparams: dict[str, Any], callback: Any, logger: Any,
              settings: RunSettings, checkpoint: Checkpoint | None = None) -> None:
        try:
            self.her_algo = self.checkRun(settings)  # already done by the train command's validation; here for others
        except ValueError as error:
            env.close()
            raise UsageError(str(error)) from None
        self.SB3_CLASS = BASE_ALGOS[self.her_algo].SB3_CLASS
        super().train(env, total_timesteps, hyperparams, callback, logger, settings, checkpoint)
