"""On-policy training runs without torch.distributions' argument checks (the SB3-backed learners and acktr, acer,
ppo1): the same training, and a run that diverges stops with one line (rl_baselines.rl_algorithm.finite_training)."""
from __future__ import annotations

import contextlib
import os
from types import SimpleNamespace
from unittest import mock

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import runModule, trainHere
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.vec_env import DummyVecEnv
from torch.distributions import Distribution, Normal

from rl_baselines.core.registry import registered_rl
from rl_baselines.rl_algorithm import sb3_base, torch_common
from rl_baselines.rl_algorithm.finite_training import (
    FiniteActions,
    FiniteTraining,
    TrainingDiverged,
    divergedInstead,
    parametersFinite,
    withoutArgumentChecks,
)
from srl_toolbox.errors import CommandFailed

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--seed", "0"]
NAN = float("nan")


def test_the_checks_are_off_inside_the_block_and_put_back_after_it():
    before = Distribution._validate_args
    with pytest.raises(RuntimeError, match="leaving"), withoutArgumentChecks():
        Normal(torch.tensor([NAN]), torch.tensor([1.0]))  # not checked here
        assert Distribution._validate_args is False
        raise RuntimeError("leaving the block by an error")
    assert Distribution._validate_args == before
    with pytest.raises(ValueError, match="Expected parameter loc"):  # torch's check again
        Normal(torch.tensor([NAN]), torch.tensor([1.0]))


def _spyTrain(algo_class: type, seen: list[bool]):
    original = algo_class.train

    def train(self, *args, **kwargs):
        seen.append(Distribution._validate_args)
        return original(self, *args, **kwargs)

    return mock.patch.object(algo_class, "train", train)


def _weights(run_dir: str) -> dict[str, torch.Tensor]:
    return PPO.load(os.path.join(run_dir, "ppo2_model.zip"), device="cpu").policy.state_dict()


def test_ppo2_trains_without_the_checks_and_exactly_as_with_them(tmp_path):
    run = ["--algo", "ppo2", *GT, "--num-timesteps", "256", "--hyperparam", "n_steps:64"]
    seen: list[bool] = []
    with _spyTrain(PPO, seen):
        unchecked = trainHere(*run, "--log-dir", tmp_path / "unchecked")
    assert seen and not any(seen)  # every update ran without them
    with mock.patch.object(sb3_base, "withoutArgumentChecks", contextlib.nullcontext):
        checked = trainHere(*run, "--log-dir", tmp_path / "checked")
    ours, torchs = _weights(unchecked), _weights(checked)
    assert ours.keys() == torchs.keys()
    assert all(torch.equal(ours[name], torchs[name]) for name in ours)  # the checks draw no random number


@pytest.mark.parametrize("algo", ["acktr", "acer", "ppo1"])
def test_the_actor_critics_written_here_train_without_the_checks_and_exactly_as_with_them(tmp_path, algo):
    run = ["--algo", algo, *GT, "--num-timesteps", "200"]
    seen: list[bool] = []
    algo_class = registered_rl[algo][0]
    original = algo_class.cleanPoint

    def cleanPoint(self, callback):
        seen.append(Distribution._validate_args)
        return original(self, callback)

    with mock.patch.object(algo_class, "cleanPoint", cleanPoint):
        unchecked = trainHere(*run, "--log-dir", tmp_path / "unchecked")
    assert seen and not any(seen)
    with mock.patch.object(torch_common, "withoutArgumentChecks", contextlib.nullcontext):
        checked = trainHere(*run, "--log-dir", tmp_path / "checked")
    ours, torchs = (torch.load(os.path.join(run_dir, f"{algo}_model.pt"), weights_only=True)
                    for run_dir in (unchecked, checked))
    tensors = [(name, value) for name, value in _flatTensors(ours)]
    assert tensors and all(torch.equal(value, dict(_flatTensors(torchs))[name]) for name, value in tensors)


def _flatTensors(value, prefix: str = ""):
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _flatTensors(item, f"{prefix}/{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _flatTensors(item, f"{prefix}/{index}")


@pytest.mark.parametrize("algo, step", [("ppo1", 128), ("acer", 40)])
def test_a_diverged_actor_critic_written_here_stops_with_one_line(tmp_path, algo, step):
    result = runModule("rl_baselines.train", "--no-vis", "--no-progress", "--algo", algo, *GT, "--num-timesteps",
                       "600", "--learning-rate", "1e20", "--log-dir", tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr == (f"error: training diverged by step {step}: the policy's parameters hold NaN or inf (a "
                             f"smaller learning rate usually helps)\n")


def test_an_off_policy_learner_keeps_the_checks(tmp_path):
    seen: list[bool] = []
    with _spyTrain(SAC, seen):
        trainHere("--algo", "sac", "-c", *GT, "--num-timesteps", "120", "--hyperparam", "learning_starts:100",
                  "--log-dir", tmp_path)
    assert seen and all(seen)


def test_a_diverged_on_policy_run_stops_with_one_line_before_acting_on_its_weights(tmp_path):
    result = runModule("rl_baselines.train", "--no-vis", "--no-progress", "--algo", "ppo2", *GT, "--num-timesteps",
                       "512", "--hyperparam", "n_steps:16", "--learning-rate", "1e20", "--log-dir", tmp_path)  # x 4 envs
    assert result.returncode == 1, result.stderr
    assert result.stderr == ("error: training diverged by step 64: the policy's parameters hold NaN or inf (a smaller "
                             "learning rate usually helps)\n")


@pytest.mark.parametrize("algo, step", [("qrdqn", "1,000"), ("deepq", "500")])  # (deepq: at its target copy)
def test_an_off_policy_run_is_checked_now_and_then(tmp_path, algo, step):
    result = runModule("rl_baselines.train", "--no-vis", "--no-progress", "--algo", algo, *GT, "--num-timesteps",
                       "1100", "--hyperparam", "learning_starts:50", "--learning-rate", "1e20", "--log-dir", tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"error: training diverged by step {step}: the policy's parameters hold NaN")


@pytest.mark.parametrize("algo, words", [
    ("td3", "training diverged at step 52: the policy's actions hold NaN or inf (from its parameters or from the "
            "observations it acted on)"),
    ("sac", "training diverged by step 51: the policy's parameters hold NaN or inf (a smaller learning rate usually "
            "helps)"),
])
def test_a_diverged_sb3_off_policy_run_stops_with_one_line_before_an_env_steps_with_nan(tmp_path, algo, words):
    # td3's NaN action is refused on its way to the envs; sac's Gaussian fails torch's check first
    result = runModule("rl_baselines.train", "--no-vis", "--no-progress", "--algo", algo, "-c", *GT, "--num-timesteps",
                       "300", "--hyperparam", "learning_starts:50", "--learning-rate", "1e20", "--log-dir", tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr == f"error: {words}\n"


class _CountingVecEnv(DummyVecEnv):
    def __init__(self) -> None:
        super().__init__([lambda: gym.make("Pendulum-v1")])
        self.stepped = 0

    def step_async(self, actions: np.ndarray) -> None:
        self.stepped += 1
        super().step_async(actions)


def test_an_action_with_nan_or_inf_never_reaches_the_envs():
    venv = _CountingVecEnv()
    finite = FiniteActions(venv, lambda: 12)
    finite.reset()
    finite.step(np.array([[0.5]], dtype=np.float32))
    for bad in (NAN, float("inf")):
        with pytest.raises(TrainingDiverged, match="^training diverged at step 12: the policy's actions hold NaN"):
            finite.step(np.array([[bad]], dtype=np.float32))
    assert venv.stepped == 1


def test_an_error_is_divergence_only_when_the_parameters_hold_nan():
    network = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="env's own"), divergedInstead([network], lambda: 3):
        raise ValueError("env's own")
    with torch.no_grad():
        network.bias[0] = NAN
    with pytest.raises(CommandFailed, match="^could not write"), divergedInstead([network], lambda: 3):
        raise CommandFailed("could not write x: No space left on device")
    with pytest.raises(TrainingDiverged, match="^training diverged by step 3: ") as caught, \
            divergedInstead([network], lambda: 3):
        raise ValueError("Expected parameter loc")
    assert isinstance(caught.value.__cause__, ValueError)


def _stepCheck(**local_values) -> FiniteTraining:
    check = FiniteTraining()
    check.model = SimpleNamespace(num_timesteps=7)
    check.locals = local_values
    return check


@pytest.mark.parametrize("local_values, words", [
    ({"actions": np.array([[0.5, NAN]], dtype=np.float32)}, "training diverged at step 7: the policy's actions"),
    ({"actions": np.array([2]), "new_obs": np.array([[np.inf, 0.0]])}, "the env returned an observation holding"),
    ({"actions": np.array([2]), "new_obs": {"observation": np.zeros((1, 2)), "desired_goal": np.array([[NAN]])}},
     "the env returned an observation holding"),
], ids=["nan-action", "inf-observation", "nan-goal"])
def test_a_step_with_nan_or_inf_is_refused(local_values, words):
    with pytest.raises(TrainingDiverged, match=words):
        _stepCheck(**local_values)._on_step()


def test_finite_steps_and_arrays_that_cannot_hold_nan_pass():
    assert _stepCheck(actions=np.array([3]), new_obs=np.zeros((1, 8, 8, 3), dtype=np.uint8))._on_step()
    assert _stepCheck(actions=np.array([[0.1, -0.2]]), new_obs={"a": np.ones((1, 2))})._on_step()
    assert _stepCheck()._on_step()  # (a learner whose locals name neither)


def test_the_parameter_check_sees_one_bad_weight_and_an_overflowing_sum():
    network = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    assert parametersFinite(network)
    with torch.no_grad():
        network[1].bias[0] = np.inf
    assert not parametersFinite(network)
    with torch.no_grad():
        network[1].bias[0] = 0.0
        network[0].weight.fill_(3e38)  # each finite, their sum not: diverged all the same
    assert not parametersFinite(network)
    assert parametersFinite(torch.nn.Module())  # no parameters


def test_the_parameters_are_checked_at_most_once_per_period():
    check = FiniteTraining(every=1000)
    check.model = SimpleNamespace(num_timesteps=10, policy=torch.nn.Linear(2, 2))
    check._on_rollout_start()  # the first rollout start: checked
    with torch.no_grad():
        check.model.policy.weight[0, 0] = NAN
    check.model.num_timesteps = 999
    check._on_rollout_start()  # 989 steps later: not yet
    check.model.num_timesteps = 1010
    with pytest.raises(TrainingDiverged, match="by step 1,010"):
        check._on_rollout_start()
