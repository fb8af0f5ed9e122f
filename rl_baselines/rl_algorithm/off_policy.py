"""What the replay-buffer algorithms (ddpg, td3, sac, tqc, qrdqn) share: the declarations of their common
hyperparameters (buffer, discount, update rhythm, search ranges; :func:`replayHyperparams`), action noise for the
deterministic actors (kept through a resume), and the action distribution of the squashed-Gaussian ones.

Each algorithm module only names its SB3 class and its own hyperparameters on top of :class:`OffPolicyRLObject`.
"""
from __future__ import annotations

import argparse
from typing import Any, ClassVar

import numpy as np
import torch
from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

from rl_baselines.core.buffer_memory import REPLAY
from rl_baselines.core.hyperparams import DISCOUNT, NON_NEGATIVE, POSITIVE, Hyperparam, Interval
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.core.training_state import shadowOnce
from rl_baselines.rl_algorithm.augmented_buffers import AugmentedReplayBuffer
from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject

NOISE_TYPES = ("none", "normal", "ou")

# Shared defaults. The buffer holds 100k transitions (the old toolbox's --memory-limit): plenty for the 250-step
# robot episodes, and about 2.5 GB of uint8 frames with 64x64 raw pixels (lower --buffer-size there).
# 1000 uniformly random steps (four 250-step robot episodes) fill it before the first update (SB3's default: 100).
REPLAY_DEFAULTS: dict[str, Any] = {
    "buffer_size": 100_000,
    "learning_starts": 1000,
    "gamma": 0.99,
    "train_freq": 1,
    "gradient_steps": 1,
}


def replayHyperparams(learning_rate: float, batch_size: int, train_freq: int = REPLAY_DEFAULTS["train_freq"],
                      searched: bool = True) -> dict[str, Hyperparam]:
    """
    :param learning_rate: the algorithm's default learning rate
    :param batch_size: its default batch size
    :param train_freq: its default number of env steps between updates
    :param searched: give them their search ranges (False: leave them out of the search)
    :return: the hyperparameters every off-policy algorithm shares, with the defaults of :data:`REPLAY_DEFAULTS`, in
        the order of their search space (the algorithm adds its own after them); ``gradient_steps`` is not searched
        by itself: a search derives it from the trial's ``train_freq``
        (:attr:`OffPolicyRLObject.SEARCH_SUBSAMPLE_STEPS`)
    """

    def entry(default: Any, description: str, bounds: Any, search: Any) -> Hyperparam:
        return Hyperparam(default, description, bounds=bounds, search=search if searched else None)

    return {
        "learning_rate": entry(learning_rate, "learning rate", POSITIVE, (1e-5, 1e-2, "log")),
        "gamma": entry(REPLAY_DEFAULTS["gamma"], "discount factor", DISCOUNT, (0.9, 0.9999)),
        "batch_size": entry(batch_size, "transitions per gradient step", (1, None), [32, 64, 128, 256]),
        "buffer_size": entry(REPLAY_DEFAULTS["buffer_size"], "replay buffer size, in transitions", (1, None),
                             [10_000, 100_000, 1_000_000]),
        "learning_starts": entry(REPLAY_DEFAULTS["learning_starts"], "env steps (random actions) before learning",
                                 NON_NEGATIVE, (100, 10_000)),
        "train_freq": entry(train_freq, "env steps between updates", (1, None), (1, 16)),
        "gradient_steps": entry(REPLAY_DEFAULTS["gradient_steps"], "gradient steps per update (-1: as many as env "
                                "steps)", (-1, None), None),
    }


def replaySearchSpace() -> dict[str, tuple]:
    """:return: the search ranges every off-policy algorithm shares (those of :func:`replayHyperparams`)"""
    shared = replayHyperparams(learning_rate=3e-4, batch_size=64)  # (the defaults play no part in the ranges)
    return {name: hyperparam.optParam() for name, hyperparam in shared.items() if hyperparam.search is not None}


class NoiseType(str):
    """``--noise-type`` value: one of :data:`NOISE_TYPES` (a str, so args.json and the model file keep a string)."""

    def __new__(cls, raw: str) -> NoiseType:
        if raw not in NOISE_TYPES:
            raise argparse.ArgumentTypeError(f"{raw!r} is not one of {', '.join(NOISE_TYPES)}")
        return super().__new__(cls, raw)


class EntCoef(str):
    """``--ent-coef`` value of sac/tqc: ``auto`` (learned), ``auto_<initial value>``, or a fixed positive number."""

    def __new__(cls, raw: str) -> EntCoef:
        number = None if raw == "auto" else raw.removeprefix("auto_")
        try:
            valid = number is None or float(number) > 0
        except ValueError:
            valid = False
        if not valid:
            raise argparse.ArgumentTypeError(f"{raw!r} is not auto, auto_<initial value> or a positive number")
        return super().__new__(cls, raw)


# Soft target updates (sac, tqc, td3, ddpg).
TAU = Hyperparam(0.005, "soft update coefficient of the target networks", bounds=Interval(0, 1),
                 search=(0.001, 0.05, "log"))
# The entropy coefficient of sac and tqc (searched over a grid; any EntCoef value can be given).
ENT_COEF = Hyperparam(EntCoef("auto"), "entropy coefficient: auto (learned), auto_<initial value>, or a fixed "
                      "positive number", search=["auto", 0.1, 0.01, 0.001, 0.0001])


def noiseHyperparams(noise_type: str, noise_std: float) -> dict[str, Hyperparam]:
    """
    :param noise_type: the default exploration noise (one of :data:`NOISE_TYPES`)
    :param noise_std: its default standard deviation
    :return: the exploration-noise hyperparameters of the deterministic actors (td3, ddpg)
    """
    return {
        "noise_type": Hyperparam(NoiseType(noise_type), "exploration noise: none, normal (Gaussian) or ou "
                                 "(Ornstein-Uhlenbeck)", search=list(NOISE_TYPES)),
        "noise_std": Hyperparam(noise_std, "standard deviation of the exploration noise", bounds=NON_NEGATIVE,
                                search=(0.0, 1.0)),
    }


def makeActionNoise(noise_type: str, noise_std: float, n_actions: int) -> Any:
    """
    :param noise_type: none, normal (Gaussian, independent per step) or ou (Ornstein-Uhlenbeck, correlated in time)
    :param noise_std: standard deviation of the noise, in the [-1, 1] action scale of the policy
    :param n_actions: action dimension
    :return: an SB3 ActionNoise, or None for ``none``
    """

    if noise_type not in NOISE_TYPES:
        raise ValueError(f"noise type {noise_type!r} is not one of {', '.join(NOISE_TYPES)}")
    if noise_type == "none":
        return None
    mean, sigma = np.zeros(n_actions), float(noise_std) * np.ones(n_actions)
    if noise_type == "normal":
        return NormalActionNoise(mean=mean, sigma=sigma)
    return OrnsteinUhlenbeckActionNoise(mean=mean, sigma=sigma)


class OffPolicyRLObject(StableBaselinesRLObject):
    """
    Base of the replay-buffer algorithms. Subclasses whose HYPERPARAMS hold ``noise_type`` and ``noise_std``
    get exploration noise added to their deterministic actions (SB3's ``action_noise``); the noise is saved with the
    model and rebuilt on ``--load-rl-model-path`` when either noise flag is given (the other one then takes its
    default). ``--augment`` shifts each replay sample's observations and next observations independently (DrQ).
    """

    AUGMENTED_BUFFER = AugmentedReplayBuffer
    BUFFER = REPLAY
    # How a hyperparameter search ties gradient_steps to train_freq, as the RL Zoo's samplers do: a trial that samples
    # train_freq (gradient_steps fixed by no one) trains max(train_freq // subsample_steps, 1) gradient steps per
    # update, subsample_steps sampled from these values (one value: not sampled). (1,), the Zoo's sac, td3 and tqc:
    # one gradient step per env step; its dqn's (1, 2, 4, 8): one per 1 to 8 env steps. Sampled apart, 16 gradient
    # steps per env step made a trial 16-64x as long as the defaults'.
    SEARCH_SUBSAMPLE_STEPS: ClassVar[tuple[int, ...]] = (1,)

    @classmethod
    def keepsReplayBuffer(cls) -> bool:
        """:return: whether its checkpoints hold its replay buffer (those of an algorithm that can resume)"""
        return cls.supportsResume()

    @classmethod
    def makeModelKwargs(cls, settings: RunSettings, hyperparams: dict[str, Any], env: Any) -> dict[str, Any]:
        kwargs = super().makeModelKwargs(settings, hyperparams, env)
        noise_type = kwargs.pop("noise_type", None)
        noise_std = kwargs.pop("noise_std", None)
        if noise_type is not None or noise_std is not None:
            defaults = cls.DEFAULT_HYPERPARAMS
            kwargs["action_noise"] = makeActionNoise(
                str(noise_type if noise_type is not None else defaults["noise_type"]),
                noise_std if noise_std is not None else defaults["noise_std"],
                int(np.prod(env.action_space.shape)))
        return kwargs

    def loadTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        """
        SB3's, then keep the action noise the checkpoint's model holds through the reset SB3's ``learn`` gives it as
        it starts: an Ornstein-Uhlenbeck process goes on from its state mid-episode, as in the uninterrupted run (an
        env's noise is reset at the end of its episodes anyway).
        """
        super().loadTrainingState(folder, replay_buffer_folder)
        noise = getattr(self.model, "action_noise", None)
        if noise is not None:
            shadowOnce(noise, "reset", lambda reset, *args, **kwargs: None)

    def getActionProba(self, observation: np.ndarray, dones: np.ndarray | None = None) -> np.ndarray:
        """
        :return: the mean action of a squashed-Gaussian actor (sac, tqc), in the env's action bounds: the action
            ``getAction(..., deterministic=True)`` takes
        :raises NotImplementedError: the policy is deterministic (ddpg, td3) or epsilon-greedy on Q-values (qrdqn)
        """

        actor = getattr(self.model, "actor", None)
        if actor is None or not hasattr(actor, "get_action_dist_params"):
            raise NotImplementedError(f"{self.NAME} has no action distribution (its policy is deterministic or greedy)")
        obs_tensor, _ = self.inferencePolicy().obs_to_tensor(observation)
        with torch.no_grad():
            mean_actions, _, _ = actor.get_action_dist_params(obs_tensor)
        return self.model.policy.unscale_action(torch.tanh(mean_actions).cpu().numpy())
