"""What a plugin wrapping an SB3 class gets right without code of its own: getActionProba (what replay's
--plotting draws) computes with the policy in evaluation mode, as SB3's predict does (CrossQ's batch-normalising
layers, left in training mode, took the statistics of a batch of one observation, which became NaN, and the replay's
next action raised); raw pixels are refused before anything is written where the SB3 class has no policy on
images, also at an --img-shape its CNN would refuse."""
from __future__ import annotations

from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import sb3_contrib
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from rl_baselines.core.algo_types import ActionType, AlgoType
from rl_baselines.core.registry import registered_rl
from rl_baselines.rl_algorithm.off_policy import OffPolicyRLObject
from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject
from rl_baselines.runs import train, train_checks
from srl_toolbox.cli import UsageError


class _CrossQ(OffPolicyRLObject):
    """A plugin's wrapper of sb3-contrib's CrossQ (its actor and critics normalise their inputs in batches)."""

    NAME, SB3_CLASS = "crossq_test", sb3_contrib.CrossQ


def test_the_mean_action_leaves_the_batch_statistics_alone() -> None:
    torch.manual_seed(0)
    wrapper = object.__new__(_CrossQ)
    wrapper.model = sb3_contrib.CrossQ("MlpPolicy", gym.make("Pendulum-v1"), learning_starts=0, seed=0)
    wrapper.model.policy.set_training_mode(True)  # (as training leaves it)
    statistics = {name: value.clone() for name, value in wrapper.model.policy.state_dict().items()
                  if name.endswith(("ra_mean", "ra_var", "steps"))}
    observation = np.array([[1.0, 0.0, 0.5]], dtype=np.float32)
    for _ in range(3):
        mean = wrapper.getActionProba(observation)
        assert mean.shape == (1, 1) and np.all(np.isfinite(mean))
    after = wrapper.model.policy.state_dict()
    assert statistics and all(torch.equal(value, after[name]) for name, value in statistics.items())
    action, _ = wrapper.model.predict(observation, deterministic=True)
    assert np.all(np.isfinite(action))


class _NormalisedFeatures(BaseFeaturesExtractor):
    """A features extractor with a BatchNorm layer (a plugin's policy)."""

    def __init__(self, observation_space: gym.Space) -> None:
        super().__init__(observation_space, features_dim=4)
        self.net = torch.nn.Sequential(torch.nn.Linear(observation_space.shape[0], 4), torch.nn.BatchNorm1d(4))

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.net(observations)


class _PPO(StableBaselinesRLObject):
    NAME, SB3_CLASS = "ppo_test", PPO


def test_the_action_probabilities_leave_the_batch_statistics_alone() -> None:
    wrapper = object.__new__(_PPO)
    wrapper.model = PPO("MlpPolicy", gym.make("CartPole-v1"), n_steps=64, seed=0,
                        policy_kwargs={"features_extractor_class": _NormalisedFeatures})
    wrapper.model.policy.set_training_mode(True)
    batch_norm = wrapper.model.policy.features_extractor.net[1]
    before = batch_norm.running_mean.clone(), batch_norm.running_var.clone()
    probabilities = wrapper.getActionProba(np.array([[0.1, 0.0, -0.1, 0.2]], dtype=np.float32))
    assert probabilities.shape == (1, 2) and np.all(np.isfinite(probabilities))
    assert torch.equal(batch_norm.running_mean, before[0]) and torch.equal(batch_norm.running_var, before[1])


def test_raw_pixels_are_refused_where_the_sb3_class_has_no_policy_on_images() -> None:
    """A plugin wrapping CrossQ (no CnnPolicy) failed on raw pixels with a KeyError traceback, its run folder written:
    its settings are refused in one line before anything is written."""
    pixels, state = SimpleNamespace(srl_model="raw_pixels"), SimpleNamespace(srl_model="ground_truth")
    with pytest.raises(ValueError, match=r"^--srl-model raw_pixels: --algo crossq_test learns with CrossQ, which has "
                                         r"no CnnPolicy \(no policy on images\); give it a state: ground_truth or a "
                                         r"learned SRL model$"):
        _CrossQ.checkSettings(pixels)
    assert _CrossQ.checkSettings(state) is None and _PPO.checkSettings(pixels) is None


def test_a_small_image_for_an_algorithm_without_a_cnn_names_the_missing_policy(tmp_path, monkeypatch) -> None:
    """``--img-shape 3 32 32`` with raw pixels said "the CNN policy of --algo crossq_test needs H, W >= 36", for an
    algorithm that has no CNN policy at all: the algorithm's own refusal comes first."""
    monkeypatch.setitem(registered_rl, "crossq_test", (_CrossQ, AlgoType.REINFORCEMENT_LEARNING, [ActionType.CONTINUOUS]))
    argv = ["--algo", "crossq_test", "--env", "MobileRobotGymEnv-v0", "-c", "--srl-model", "raw_pixels",
            "--img-shape", "3", "32", "32", "--log-dir", str(tmp_path / "logs")]
    with pytest.raises(UsageError, match=r"^--srl-model raw_pixels: --algo crossq_test learns with CrossQ, which has "
                                         r"no CnnPolicy"):
        train_checks.validate(train.parseCommand(argv)[0], registered_rl)
    assert not (tmp_path / "logs").exists()
