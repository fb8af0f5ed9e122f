"""The pixel policies' features extractor (``--features-extractor``): SB3's NatureCNN or the toolbox's SmallCNN.

SmallCNN takes the image sizes NatureCNN takes and costs a fraction of its multiply-adds; both get NatureCNN's heads
in an actor-critic policy (the action and value layers on the features), other policies SB3's own; the flag reaches
the policy of a raw-pixel run, the saved model keeps it and its heads when it is loaded again, and a learned state
never gets a CNN. Whether SmallCNN learns as well as NatureCNN is measured by a benchmark (docs/benchmarks.md), not
here.
"""
from __future__ import annotations

import os
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import runModule, snapshot, trainHere
from sb3_contrib.common.maskable.policies import MaskableActorCriticCnnPolicy
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticCnnPolicy
from stable_baselines3.common.policies import ActorCriticCnnPolicy
from stable_baselines3.common.torch_layers import NatureCNN
from stable_baselines3.sac.policies import CnnPolicy as SACCnnPolicy

from rl_baselines.core.registry import registered_rl
from rl_baselines.rl_algorithm.image_features import (
    FEATURES_EXTRACTORS,
    MediumCNN,
    SmallCNN,
    pixelPolicyKeywords,
)
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.runs import train, train_checks
from srl_toolbox import devices
from srl_toolbox.errors import UsageWarning

PIXELS = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels", "--img-shape", "3", "40", "40"]
SHORT = ["--num-timesteps", "64", "--n-steps", "32", "--batch-size", "32", "--n-epochs", "1"]


def _multiplyAdds(module: torch.nn.Module, shape: tuple[int, ...]) -> int:
    """:return: the multiply-adds of the convolutions and linear layers of one image of ``shape``"""
    total = 0

    def count(layer, inputs, output) -> None:
        nonlocal total
        if isinstance(layer, torch.nn.Conv2d):
            total += output.numel() * layer.in_channels * layer.kernel_size[0] * layer.kernel_size[1]
        elif isinstance(layer, torch.nn.Linear):
            total += layer.in_features * layer.out_features

    hooks = [layer.register_forward_hook(count) for layer in module.modules()]
    with torch.no_grad():
        module(torch.zeros((1, *shape)))
    for hook in hooks:
        hook.remove()
    return total


@pytest.mark.parametrize("side", [64, 48, 36])
@pytest.mark.parametrize("kind, features, filters, fewer", [(SmallCNN, 256, (16, 32, 32), 2.5),
                                                             (MediumCNN, 512, (16, 48, 48), 1.8)])
def test_the_smaller_cnns_take_the_sizes_nature_cnn_takes(side, kind, features, filters, fewer) -> None:
    """Each takes the image sizes NatureCNN takes, gives its features, and costs ``fewer`` times fewer multiply-adds
    than NatureCNN per 64x64 image (SmallCNN about 3, MediumCNN about 2)."""
    space = gym.spaces.Box(0, 255, (3, side, side), np.uint8)
    smaller, nature = kind(space), NatureCNN(space)
    images = torch.rand((5, 3, side, side))
    assert smaller(images).shape == (5, features) and smaller.features_dim == features
    assert [layer.out_channels for layer in smaller.cnn if isinstance(layer, torch.nn.Conv2d)] == list(filters)
    if side == 64:
        ratio = _multiplyAdds(nature, (3, 64, 64)) / _multiplyAdds(smaller, (3, 64, 64))
        assert fewer < ratio < fewer + 1.5, ratio


@pytest.mark.parametrize("extractor", sorted(FEATURES_EXTRACTORS))
def test_every_extractor_gets_nature_cnns_heads_in_an_actor_critic_policy(extractor: str) -> None:
    """SB3 puts two hidden tanh layers of 64 per head after any extractor but NatureCNN; the toolbox gives each the
    heads NatureCNN gets (the action and value layers on the features), and leaves other policies' (SAC's) as SB3
    has them."""
    space, actions = gym.spaces.Box(0, 255, (3, 64, 64), np.uint8), gym.spaces.Discrete(4)
    # ppo2, a2c, trpo, gail's learners; maskable_ppo; ppo_lstm
    for policy_class in (ActorCriticCnnPolicy, MaskableActorCriticCnnPolicy, RecurrentActorCriticCnnPolicy):
        keywords = pixelPolicyKeywords(extractor, policy_class)
        assert keywords == {"features_extractor_class": FEATURES_EXTRACTORS[extractor], "net_arch": []}
        policy = policy_class(space, actions, lambda _: 3e-4, **keywords)
        assert not list(policy.mlp_extractor.parameters())  # no hidden layers before the heads (ppo_lstm: its LSTM)
    policy = ActorCriticCnnPolicy(space, actions, lambda _: 3e-4, **pixelPolicyKeywords(extractor, ActorCriticCnnPolicy))
    features = FEATURES_EXTRACTORS[extractor](space).features_dim
    assert policy.action_net.in_features == policy.value_net.in_features == features
    assert pixelPolicyKeywords(extractor, SACCnnPolicy) == {"features_extractor_class": FEATURES_EXTRACTORS[extractor]}


@pytest.mark.parametrize("kind", [SmallCNN, MediumCNN])
def test_the_smaller_cnns_refuse_what_is_not_an_image(kind) -> None:
    with pytest.raises(ValueError, match=f"{kind.__name__} takes channel-first images"):
        kind(gym.spaces.Box(-1.0, 1.0, (8,), np.float32))


@pytest.mark.parametrize("algo, default", [("ppo2", "medium"), ("maskable_ppo", "nature"), ("a2c", "nature"),
                                           ("sac", "nature"), ("gail", "nature")])
def test_each_algorithm_has_its_own_default_extractor(algo, default) -> None:
    """ppo2 trains MediumCNN on raw pixels unless told otherwise (it learned both robots' tasks as NatureCNN did, faster:
    docs/benchmarks.md); the others keep SB3's NatureCNN. On a state the flag does nothing, and args.json records the
    algorithm's default."""
    argv = ["--algo", algo, "--env", "MobileRobotGymEnv-v0", "--no-vis"]
    assert train.parseCommand([*argv, "--srl-model", "raw_pixels"])[0].features_extractor == default
    state = {"srl_model": "ground_truth", "features_extractor": "small"}
    assert registered_rl[algo][0].idleOptions(state)["features_extractor"][0] == default


@pytest.mark.slow
def test_the_flag_reaches_the_policy_and_the_saved_model_keeps_it(tmp_path) -> None:
    algo = registered_rl["ppo2"][0]
    small = trainHere("--algo", "ppo2", *PIXELS, *SHORT, "--features-extractor", "small", "--log-dir", tmp_path / "a")
    model = algo.load(os.path.join(small, "ppo2_model.zip")).model
    assert isinstance(model.policy.features_extractor, SmallCNN)
    assert model.policy_kwargs["net_arch"] == [] and not list(model.policy.mlp_extractor.parameters())
    default = trainHere("--algo", "ppo2", *PIXELS, *SHORT, "--log-dir", tmp_path / "b")
    model = algo.load(os.path.join(default, "ppo2_model.zip")).model
    assert isinstance(model.policy.features_extractor, MediumCNN)  # (ppo2's default)
    # a model continued from the saved one keeps its extractor, whatever the flag says
    continued = trainHere("--algo", "ppo2", *PIXELS, *SHORT, "--load-rl-model-path",
                          os.path.join(small, "ppo2_model.zip"), "--log-dir", tmp_path / "c")
    assert isinstance(algo.load(os.path.join(continued, "ppo2_model.zip")).model.policy.features_extractor, SmallCNN)
    # a learned or ground-truth state has no image: the MLP policy, the flag has nothing to reach
    state = trainHere("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", *SHORT,
                      "--features-extractor", "small", "--log-dir", tmp_path / "d")
    assert not isinstance(algo.load(os.path.join(state, "ppo2_model.zip")).model.policy.features_extractor, SmallCNN)


@pytest.mark.slow
def test_a_continued_model_keeps_its_extractor_one_warning_and_args_json_says_which(tmp_path, monkeypatch) -> None:
    """--features-extractor small with --load-rl-model-path of a NatureCNN model did nothing (the model keeps its own
    CNN) without a word, and args.json recorded small: one warning, and args.json records the model's extractor, as
    it does for a SmallCNN model continued without the flag (it recorded nature). ``--torch-threads auto`` follows
    the extractor that trains (an algorithm whose SmallCNN trains on one thread, as ppo2's did before its pixel
    updates were sharded, and maskable_ppo's does)."""
    models = {name: os.path.join(trainHere("--algo", "ppo2", *PIXELS, *SHORT, "--features-extractor", name,
                                           "--log-dir", tmp_path / name), "ppo2_model.zip")
              for name in ("nature", "small")}

    def continued(model: str, *flags: str) -> tuple[str, list[str]]:
        argv = ["--algo", "ppo2", *PIXELS, "--load-rl-model-path", model, "--log-dir", str(tmp_path / "c"), *flags]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            config = train_checks.validate(train.parseCommand(argv)[0], registered_rl)
        return config.argsRecord()["features_extractor"], [str(w.message) for w in caught
                                                           if issubclass(w.category, UsageWarning)]

    assert continued(models["nature"], "--features-extractor", "small") == ("nature", [
        "--features-extractor small does nothing with --load-rl-model-path: the continued model keeps its own, nature"])
    assert continued(models["small"]) == ("small", [])  # (the flag left at its default: nothing to warn of)
    assert continued(models["small"], "--features-extractor", "small") == ("small", [])
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(devices, "usableCores", lambda: 4)
    monkeypatch.setattr(PPO2Model, "EXTRACTOR_THREADS_HELP", {"small": False})

    def autoThreads(model: str, *flags: str) -> int:
        argv = ["--algo", "ppo2", *PIXELS, "--load-rl-model-path", model, "--log-dir", str(tmp_path / "c"), *flags]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return train_checks.validate(train.parseCommand(argv)[0], registered_rl).torch_threads

    assert autoThreads(models["small"]) == 1 and autoThreads(models["nature"], "--features-extractor", "small") == 4
    assert not os.path.exists(tmp_path / "c")


@pytest.mark.parametrize("flag, value, choices", [("--features-extractor", "resnet", ("nature", "small")),
                                                  ("--precision", "half", ("float32", "bfloat16"))])
def test_an_unknown_extractor_or_precision_is_a_one_line_error(tmp_path, flag, value, choices) -> None:
    result = runModule("rl_baselines.train", "--algo", "ppo2", *PIXELS, flag, value, "--log-dir", str(tmp_path),
                       "--no-vis")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"'{value}'" in lines[0] and all(choice in lines[0] for choice in choices), lines[0]
    assert snapshot(str(tmp_path)) == {}
