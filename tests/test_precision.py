"""``--precision``: what the pixel policy's CNN computes in (float32, or its layers under bfloat16 autocast with
Adam's step fused; auto: bfloat16 where the CPU computes it in hardware).

float32 is what the CNNs always computed (the toolbox's NatureCNN is SB3's, weight for weight); bfloat16 changes the
features (within bfloat16's rounding) and not their dtype, and trains float32 weights; the choice reaches the policy
of a raw-pixel run, args.json and the saved model, a continued model keeps its own, a state warns that the flag does
nothing, and a precision that is not one is a one-line error (tests/test_image_features.py). Whether ppo2 learns as
well in bfloat16 is measured by a benchmark (docs/benchmarks.md), not here.
"""
from __future__ import annotations

import os
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import trainHere
from stable_baselines3 import PPO
from stable_baselines3.common import torch_layers
from stable_baselines3.common.policies import ActorCriticCnnPolicy
from stable_baselines3.dqn.policies import CnnPolicy as DQNCnnPolicy

from benchmarks import srl_speed
from benchmarks.srl_speed import trainArgv
from rl_baselines.core.registry import registered_rl
from rl_baselines.rl_algorithm import image_features
from rl_baselines.rl_algorithm.image_features import (
    FEATURES_EXTRACTORS,
    PRECISIONS,
    NatureCNN,
    extractorName,
    pixelPolicyKeywords,
    precisionOf,
    resolvedPrecision,
)
from rl_baselines.runs import train, train_checks
from rl_baselines.sweeps.recorded import specSettings
from rl_baselines.sweeps.sweep import RunSpec
from srl_toolbox.errors import UsageWarning
from srl_toolbox.files import readJson

SPACE = gym.spaces.Box(0, 255, (3, 64, 64), np.uint8)
PIXELS = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels", "--img-shape", "3", "40", "40"]
SHORT = ["--num-timesteps", "64", "--n-steps", "32", "--batch-size", "32", "--n-epochs", "1"]


def test_the_toolboxs_nature_cnn_is_sb3s_weight_for_weight() -> None:
    """The same seed gives the same weights and, in float32, the same features as SB3's NatureCNN: runs of
    ``--features-extractor nature`` are those made with SB3's class."""
    torch.manual_seed(0)
    ours = NatureCNN(SPACE)
    torch.manual_seed(0)
    theirs = torch_layers.NatureCNN(SPACE)
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    assert all(torch.equal(ours.state_dict()[name], theirs.state_dict()[name]) for name in ours.state_dict())
    images = torch.rand((4, 3, 64, 64))
    assert torch.equal(ours(images), theirs(images))


@pytest.mark.parametrize("extractor", sorted(FEATURES_EXTRACTORS))
def test_bfloat16_gives_float32_features_near_float32s_and_trains_float32_weights(extractor: str) -> None:
    torch.manual_seed(0)
    exact = FEATURES_EXTRACTORS[extractor](SPACE)
    torch.manual_seed(0)
    low = FEATURES_EXTRACTORS[extractor](SPACE, precision="bfloat16")
    images = torch.rand((8, 3, 64, 64))
    features, reference = low(images), exact(images)
    assert features.dtype == torch.float32 and features.shape == reference.shape
    assert not torch.equal(features, reference)  # (computed in bfloat16 indeed)
    assert torch.allclose(features, reference, rtol=0.05, atol=0.02 * float(reference.detach().abs().max()))
    features.sum().backward()
    assert all(p.dtype == torch.float32 and p.grad is not None and p.grad.dtype == torch.float32
               for p in low.parameters())


def test_the_policy_keyword_names_a_precision_only_where_it_is_not_float32() -> None:
    keywords = pixelPolicyKeywords("medium", ActorCriticCnnPolicy, "float32")
    assert keywords == pixelPolicyKeywords("medium", ActorCriticCnnPolicy)
    assert "features_extractor_kwargs" not in keywords
    assert pixelPolicyKeywords("medium", ActorCriticCnnPolicy, "bfloat16")["features_extractor_kwargs"] == {
        "precision": "bfloat16"}
    with pytest.raises(ValueError, match="unknown precision 'half'; valid choices: float32, bfloat16"):
        pixelPolicyKeywords("medium", ActorCriticCnnPolicy, "half")
    assert PRECISIONS == ("float32", "bfloat16")


def test_bfloat16_steps_adam_fused_where_the_policy_leaves_it_and_float32_keeps_sb3s_adam() -> None:
    """bfloat16's Adam: fused, with SB3's eps of an actor-critic policy (1e-5) or of the others (Adam's own);
    float32's: SB3's, as its defaults build it; a run's own optimizer in ``policy_kwargs`` is kept as given."""
    def adam(policy_class: type, precision: str, **given: object) -> dict:
        keywords = pixelPolicyKeywords("medium", policy_class, precision, given)
        policy = policy_class(SPACE, gym.spaces.Discrete(3), lambda _: 1e-3, **keywords)
        return {"type": type(policy.optimizer), **{name: policy.optimizer.defaults[name] for name in ("eps", "fused")}}

    assert adam(ActorCriticCnnPolicy, "bfloat16") == {"type": torch.optim.Adam, "eps": 1e-5, "fused": True}
    assert adam(ActorCriticCnnPolicy, "float32") == {"type": torch.optim.Adam, "eps": 1e-5, "fused": None}
    assert adam(DQNCnnPolicy, "bfloat16") == {"type": torch.optim.Adam, "eps": 1e-8, "fused": True}
    assert adam(DQNCnnPolicy, "float32") == {"type": torch.optim.Adam, "eps": 1e-8, "fused": None}
    assert adam(ActorCriticCnnPolicy, "bfloat16", optimizer_kwargs={"eps": 1e-6}) == {
        "type": torch.optim.Adam, "eps": 1e-6, "fused": None}
    rms = pixelPolicyKeywords("medium", ActorCriticCnnPolicy, "bfloat16", {"optimizer_class": torch.optim.RMSprop})
    assert "optimizer_kwargs" not in rms and rms["optimizer_class"] is torch.optim.RMSprop


def test_a_model_of_sb3s_own_nature_cnn_reads_as_nature_in_float32() -> None:
    """A zip saved before the toolbox had its own NatureCNN holds SB3's class: still ``nature``, in float32."""
    env = gym.make("CartPole-v1")  # (an image space is not needed to name the class the policy was given)
    model = PPO("MlpPolicy", env, policy_kwargs={"features_extractor_class": torch_layers.FlattenExtractor})
    assert extractorName(model) is None and precisionOf(model) is None
    model.policy_kwargs["features_extractor_class"] = torch_layers.NatureCNN
    assert extractorName(model) == "nature" and precisionOf(model) == "float32"


@pytest.mark.slow
def test_the_flag_reaches_the_policy_args_json_and_a_continued_model(tmp_path) -> None:
    algo = registered_rl["ppo2"][0]
    low = trainHere("--algo", "ppo2", *PIXELS, *SHORT, "--precision", "bfloat16", "--log-dir", tmp_path / "a")
    assert readJson(os.path.join(low, "args.json"))["precision"] == "bfloat16"
    model = algo.load(os.path.join(low, "ppo2_model.zip")).model
    assert model.policy.features_extractor.precision == "bfloat16" and precisionOf(model) == "bfloat16"
    assert model.policy.optimizer.defaults["fused"] is True  # (the zip's policy keywords)

    def continued(*flags: str) -> tuple[str, list[str]]:
        argv = ["--algo", "ppo2", *PIXELS, "--load-rl-model-path", os.path.join(low, "ppo2_model.zip"),
                "--log-dir", str(tmp_path / "c"), *flags]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            config = train_checks.validate(train.parseCommand(argv)[0], registered_rl)
        return config.argsRecord()["precision"], [str(w.message) for w in caught
                                                  if issubclass(w.category, UsageWarning)]

    assert continued() == ("bfloat16", [])  # (the flag left at its default says nothing: the model keeps its own)
    assert continued("--precision", "bfloat16") == ("bfloat16", [])
    # a state has no CNN: one warning, and args.json records the default
    state = trainHere("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", *SHORT,
                      "--precision", "bfloat16", "--log-dir", tmp_path / "d")
    assert readJson(os.path.join(state, "args.json"))["precision"] == "float32"
    default = trainHere("--algo", "ppo2", *PIXELS, *SHORT, "--precision", "float32", "--log-dir", tmp_path / "e")
    assert readJson(os.path.join(default, "args.json"))["precision"] == "float32"
    model = algo.load(os.path.join(default, "ppo2_model.zip")).model
    assert model.policy.features_extractor.precision == "float32" and not model.policy.optimizer.defaults["fused"]


@pytest.mark.parametrize("native", [True, False])
def test_bfloat16_emulated_on_the_cpu_is_one_warning(monkeypatch, tmp_path, native: bool) -> None:
    """A CPU without bfloat16 instructions emulates them (about ten times slower than float32): a run whose pixel
    policy computes in bfloat16 there, new or continued, says so once; float32, a GPU and a native CPU say nothing."""
    monkeypatch.setattr(image_features, "nativeBFloat16", lambda: native)
    assert image_features.emulationWarning("float32", "cpu") is None
    assert image_features.emulationWarning(None, "cpu") is None and image_features.emulationWarning("bfloat16",
                                                                                                      "cuda") is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = trainHere("--algo", "ppo2", *PIXELS, *SHORT, "--precision", "bfloat16", "--log-dir", tmp_path / "a")
        trainHere("--algo", "ppo2", *PIXELS, *SHORT, "--load-rl-model-path", os.path.join(run, "ppo2_model.zip"),
                  "--log-dir", tmp_path / "b")
        trainHere("--algo", "ppo2", *PIXELS, *SHORT, "--log-dir", tmp_path / "c")
    slow = [str(w.message) for w in caught if "emulates" in str(w.message)]
    assert slow == ([] if native else [image_features.emulationWarning("bfloat16", "cpu")] * 2)


def test_a_state_is_warned_once_that_the_flag_does_nothing(tmp_path) -> None:
    argv = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--precision",
            "bfloat16", "--log-dir", str(tmp_path)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = train_checks.validate(train.parseCommand(argv)[0], registered_rl)
    messages = [str(w.message) for w in caught if "precision" in str(w.message)]
    assert messages == ["--precision bfloat16 sets what the pixel policy's CNN computes in; it does nothing for "
                        "--srl-model 'ground_truth', a state read by an MLP"]
    assert config.argsRecord()["precision"] == "float32"


def test_the_speed_benchmarks_row_of_bfloat16_is_ppo2s_default_cnn_with_the_flag(tmp_path) -> None:
    """``python -m benchmarks.srl_speed``'s raw_pixels_bfloat16 row: ppo2's default CNN, ``--precision bfloat16``;
    its raw_pixels row: ppo2's defaults, float32."""
    rows = {}
    for mode in ("raw_pixels", "raw_pixels_bfloat16", "raw_pixels_nature"):
        argv = trainArgv("ppo2", mode, 4, 1024, str(tmp_path), "", "sprites")
        config = train.parseCommand(argv)[0]
        rows[mode] = (config.features_extractor, config.precision)
    assert rows == {"raw_pixels": ("medium", "float32"), "raw_pixels_bfloat16": ("medium", "bfloat16"),
                    "raw_pixels_nature": ("nature", "float32")}


@pytest.mark.parametrize("native", [True, False])
def test_the_speed_benchmark_times_bfloat16_only_where_it_is_not_emulated(monkeypatch, native: bool) -> None:
    """A CPU without bfloat16 instructions would emulate it (about ten times slower than float32): its row is left
    out there, kept on a GPU; vae_other needs several envs."""
    monkeypatch.setattr(image_features, "nativeBFloat16", lambda: native)
    assert ("raw_pixels_bfloat16" in srl_speed.measuredModes(4, "cpu")) == native
    assert "raw_pixels_bfloat16" in srl_speed.measuredModes(4, "cuda")
    assert "vae_other" not in srl_speed.measuredModes(1, "cpu") and "vae_other" in srl_speed.measuredModes(2, "cpu")
    assert {*srl_speed.measuredModes(2, "cuda")} == {*srl_speed.MODES}


@pytest.mark.parametrize("native", [True, False])
def test_auto_is_bfloat16_where_the_cpu_computes_it_else_float32_resolved_before_args_json(monkeypatch, tmp_path,
                                                                                           native: bool) -> None:
    """``--precision auto``: bfloat16 on a CPU with bfloat16 instructions, float32 elsewhere (and on a GPU), as
    validation records it and as the sweeps' recorded settings read a spec (so a finished run is found), for every
    SB3-backed algorithm; a state records float32; the default stays float32."""
    monkeypatch.setattr(image_features, "nativeBFloat16", lambda: native)
    expected = "bfloat16" if native else "float32"
    assert resolvedPrecision("auto", "cpu") == expected and resolvedPrecision("auto", "cuda") == "float32"
    assert resolvedPrecision("float32", "cpu") == "float32" and resolvedPrecision("bfloat16", "cuda") == "bfloat16"
    assert registered_rl["ppo2"][0].DEFAULT_PRECISION == "float32"  # (auto failed the learning rule: README)

    def recorded(algo: str, srl_model: str, *flags: str) -> tuple[str, list[str]]:
        argv = ["--algo", algo, "--env", "MobileRobotGymEnv-v0", "--srl-model", srl_model, "--log-dir", str(tmp_path),
                *flags]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            config = train_checks.validate(train.parseCommand(argv)[0], registered_rl)
        return config.argsRecord()["precision"], [str(w.message) for w in caught if "precision" in str(w.message)]

    auto = ("--precision", "auto")
    assert recorded("ppo2", "raw_pixels") == ("float32", [])
    assert recorded("ppo2", "raw_pixels", *auto) == (expected, [])
    assert recorded("a2c", "raw_pixels", *auto) == (expected, [])
    assert recorded("ppo2", "ground_truth", *auto)[0] == "float32"
    spec = RunSpec("ppo2", "MobileRobotGymEnv-v0", "raw_pixels", 0, auto, "x", ".")
    assert specSettings(spec)["precision"] == expected
    assert specSettings(RunSpec("ppo2", "MobileRobotGymEnv-v0", "ground_truth", 0, auto, "x", "."))["precision"] == (
        "float32")
    assert not os.listdir(tmp_path)
