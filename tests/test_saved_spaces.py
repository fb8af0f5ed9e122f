"""A saved model continued on another env (``--load-rl-model-path``) is refused when its spaces differ, in one line
that describes both spaces alike and names what differs (dtype, shape, bounds, ...) and, across envs, both envs."""
from __future__ import annotations

import os
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
from conftest import runModule, trainHere

from rl_baselines.core.checkpointing import checkSavedSpaces
from rl_baselines.core.manifests import describeSpace, spaceDifferences, spaceMismatch

DISCRETE = gym.spaces.Discrete(4)


class _Settings(SimpleNamespace):
    def replace(self, **changes) -> _Settings:
        return _Settings(**{**vars(self), **changes})


class _Env(SimpleNamespace):
    def close(self) -> None:
        pass


def _refusal(saved_space: gym.Space, model_env: str, run_space: gym.Space, run_env: str) -> str:
    manifest = {"env": model_env, "observation_space": describeSpace(saved_space),
                "action_space": describeSpace(DISCRETE)}
    settings = _Settings(env=run_env, continue_from="run/ppo2_model.zip", continuous_actions=False)
    make_env = lambda algo_class, settings: _Env(observation_space=run_space, action_space=DISCRETE)  # noqa: E731
    with pytest.raises(ValueError) as refused:
        checkSavedSpaces(manifest, settings, object, make_env)
    return str(refused.value)


def test_other_bounds_on_another_env_are_named_with_both_envs() -> None:
    message = _refusal(gym.spaces.Box(-2, 2, (2,), np.float32), "OmnirobotEnv-v0",
                       gym.spaces.Box(-1000, 1000, (2,), np.float32), "CarRacingGymEnv-v0")
    assert message == ("run/ppo2_model.zip was trained with another observation space than this run's, with different "
                       "bounds: the model's (OmnirobotEnv-v0) Box(float32, shape [2], low -2, high 2); this run's "
                       "(CarRacingGymEnv-v0) Box(float32, shape [2], low -1000, high 1000)")


def test_dtype_shape_and_array_bounds_are_named_on_the_same_env() -> None:
    low = np.array([-1.0, 0.0, 0.5], np.float32)
    message = _refusal(gym.spaces.Box(low, 1.0, (3,), np.float32), "MobileRobotGymEnv-v0",
                       gym.spaces.Box(0, 255, (3, 4), np.uint8), "MobileRobotGymEnv-v0")
    assert message.endswith("with different dtype and shape and bounds: the model's Box(float32, shape [3], low min "
                            "-1 max 0.5, high 1); this run's Box(uint8, shape [3, 4], low 0, high 255)"), message
    assert "\n" not in message


def test_a_manifest_without_the_bounds_summary_still_matches_and_says_so() -> None:
    """Manifests written before the summary have only the bounds' hash: the same space still fits."""
    space = gym.spaces.Box(-1, 1, (2,), np.float32)
    old = {key: value for key, value in describeSpace(space).items() if key != "bounds"}
    assert spaceDifferences(old, describeSpace(space)) == []
    assert spaceMismatch(old, space, "the model's", "this run's") is None
    other = spaceMismatch(old, gym.spaces.Box(-3, 3, (2,), np.float32), "the model's", "this run's")
    assert other == ("different bounds: the model's Box(float32, shape [2], bounds not recorded); this run's "
                     "Box(float32, shape [2], low -3, high 3)")
    old_dict = {"type": "Dict", "spaces": {"x": old}}
    assert spaceMismatch(old_dict, gym.spaces.Dict({"x": space}), "a", "b") is None
    assert spaceDifferences(old_dict, describeSpace(gym.spaces.Dict({"x": DISCRETE}))) == ["'x' type"]


def test_discrete_actions_of_another_size_are_named() -> None:
    assert spaceMismatch(describeSpace(gym.spaces.Discrete(6)), DISCRETE, "the model's", "this run's") == (
        "different size: the model's Discrete(6); this run's Discrete(4)")


def test_command_omnirobot_model_on_car_racing(tmp_path) -> None:
    """The QA report's command: a model trained on Omnirobot continued on CarRacing (same dtype and shape)."""
    run = trainHere("--algo", "ppo2", "--env", "OmnirobotEnv-v0", "--srl-model", "ground_truth", "--num-timesteps",
                    "128", "--log-dir", tmp_path / "logs")
    log_dir = tmp_path / "rt"
    result = runModule("rl_baselines.train", "--algo", "ppo2", "--env", "CarRacingGymEnv-v0", "--srl-model",
                       "ground_truth", "--load-rl-model-path", os.path.join(run, "ppo2_model.zip"), "--num-timesteps",
                       "200", "--no-vis", "--log-dir", log_dir)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "another observation space than this run's, with different bounds: the model's (OmnirobotEnv-v0) " \
           "Box(float32, shape [2], low " in lines[0], lines[0]
    assert "this run's (CarRacingGymEnv-v0) Box(float32, shape [2], low -1000, high 1000)" in lines[0], lines[0]
    assert not os.path.exists(log_dir)
