"""rl_baselines.rl_algorithm.sharded_features: a pixel policy's CNN trained in shards, one per thread (ppo2 from raw
pixels on two torch threads or more)."""
from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import interruptThenResume, trainHere
from same_seed import parameterDigest

from rl_baselines.core.registry import registered_rl
from rl_baselines.rl_algorithm import sharded_features
from rl_baselines.rl_algorithm.image_features import FEATURES_EXTRACTORS
from rl_baselines.rl_algorithm.sharded_features import MIN_SHARD_ROWS, shardedUpdates
from rl_baselines.runs import train, train_checks
from srl_toolbox import devices

SPACE = gym.spaces.Box(0, 255, (3, 40, 40), np.uint8)


def extractor(name: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return FEATURES_EXTRACTORS[name](SPACE)


def images(rows: int) -> torch.Tensor:
    return torch.rand((rows, *SPACE.shape), generator=torch.Generator().manual_seed(2))


def gradients(module: torch.nn.Module, observations: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """:return: the features and the parameters' gradients of a weighted sum of them (a grad_fn of its own)"""
    module.zero_grad(set_to_none=True)
    features = module(observations)
    weights = torch.linspace(-1, 1, features.shape[1])
    (features * weights).sum().backward()
    return features.detach(), [parameter.grad.clone() for parameter in module.parameters()]


@pytest.mark.parametrize("name", sorted(FEATURES_EXTRACTORS))
@pytest.mark.parametrize("shards", [2, 3])
def test_sharded_features_are_the_same_and_gradients_the_same_up_to_rounding_and_repeat_bit_for_bit(name, shards):
    module, observations = extractor(name), images(50)  # (shards of unequal rows with 3)
    features, plain = gradients(module, observations)
    threads = torch.get_num_threads()
    with shardedUpdates(module, shards):
        assert torch.get_num_threads() == 1
        first_features, first = gradients(module, observations)
        _, second = gradients(module, observations)
    assert torch.get_num_threads() == threads
    assert torch.equal(first_features, features)  # each row computed alone
    for a, b, c in zip(plain, first, second, strict=True):
        assert torch.equal(b, c)  # same shards, same bits
        # the same sums in another order: each element within a rounding error of the tensor's scale (a small
        # element is the difference of larger terms; 2.5e-6 of the scale at most measured, on AMD and Intel)
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-4 * float(a.abs().max()))
    assert not any(torch.equal(a, b) for a, b in zip(plain, first))  # (sharded: the sums were split)


@pytest.fixture
def shardCalls(monkeypatch) -> list[tuple[str, int]]:
    """:return: (thread name, torch threads) of each shard's forward pass from now on"""
    calls, original = [], sharded_features._withGradients

    def recorded(*args):
        calls.append((threading.current_thread().name, torch.get_num_threads()))
        return original(*args)
    monkeypatch.setattr(sharded_features, "_withGradients", recorded)
    return calls


def test_the_shards_threads_compute_on_one_torch_thread_and_stop_after(shardCalls):
    module = extractor("medium")
    seen = shardCalls
    with shardedUpdates(module, 2):
        gradients(module, images(32))
    assert sorted(name.startswith("features-shard") for name, _ in seen) == [False, True]
    assert {count for _, count in seen} == {1}
    assert not any(thread.name.startswith("features-shard") for thread in threading.enumerate())


def test_without_gradients_or_with_few_rows_the_extractor_computes_unsharded():
    module = extractor("small")
    with shardedUpdates(module, 2):
        assert type(module(images(2 * MIN_SHARD_ROWS)).grad_fn).__name__ == "_ShardedFeaturesBackward"
        assert type(module(images(2 * MIN_SHARD_ROWS - 1)).grad_fn).__name__ != "_ShardedFeaturesBackward"
        with torch.no_grad():
            assert module(images(64)).grad_fn is None
    assert type(module(images(64)).grad_fn).__name__ != "_ShardedFeaturesBackward"  # (outside: as ever)
    with shardedUpdates(module, 1):  # one shard: nothing changes
        assert type(module(images(64)).grad_fn).__name__ != "_ShardedFeaturesBackward"


def test_a_second_backward_and_an_error_in_a_shard_are_raised():
    module = extractor("small")
    with shardedUpdates(module, 2):
        features = module(images(32))
        features.sum().backward(retain_graph=True)
        with pytest.raises(RuntimeError, match="backpropagated twice"):
            features.sum().backward()

        def failing(observations):
            if threading.current_thread().name.startswith("features-shard"):
                raise ValueError("a shard failed")
            return type(module).features(module, observations)
        module.features = failing
        with pytest.raises(ValueError, match="a shard failed"):
            module(images(32))
    assert module._shard_pool is None and module._shards == 1


@pytest.mark.skipif(devices.maxThreads() < 2, reason="--torch-threads 2 needs 2 CPUs")
def test_ppo2_from_raw_pixels_trains_in_shards_on_two_threads_and_repeats_itself(tmp_path, monkeypatch, shardCalls):
    """--torch-threads 2: the CNN's minibatches in two shards (none with 1), and the same seed gives the same
    parameters; auto gives ppo2 every usable core whatever its extractor."""
    flags = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels", "--img-shape", "3", "40",
             "40", "--num-timesteps", "128", "--n-steps", "32", "--batch-size", "32", "--n-epochs", "2", "--seed", "3"]
    runs = {label: trainHere(*flags, "--torch-threads", threads, "--log-dir", tmp_path / label)
            for label, threads in (("one", "1"), ("two", "2"), ("again", "2"))}
    shard_threads = [name for name, _ in shardCalls]
    # two runs of 8 minibatches (4 per epoch), each in 2 shards: one on the training thread, one on the shard's
    assert len(shard_threads) == 2 * 8 * 2 and shard_threads.count("MainThread") == 2 * 8
    assert parameterDigest(runs["two"]) == parameterDigest(runs["again"]) != parameterDigest(runs["one"])
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(devices, "usableCores", lambda: 2)
    for name in sorted(FEATURES_EXTRACTORS):
        argv = [*flags, "--features-extractor", name, "--log-dir", str(tmp_path / "auto")]
        assert train_checks.validate(train.parseCommand(argv)[0], registered_rl).torch_threads == 2


@pytest.mark.skipif(devices.maxThreads() < 2, reason="--torch-threads 2 needs 2 CPUs")
def test_a_sharded_run_stopped_and_resumed_ends_as_the_uninterrupted_one(tmp_path, monkeypatch):
    """--resume keeps the recorded 2 threads, so the resumed updates are sharded as the first ones (Adam's fused
    state included): the same parameters, bit for bit."""
    args = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels", "--img-shape", "3", "40",
            "40", "--num-timesteps", "96", "--n-steps", "32", "--batch-size", "32", "--n-epochs", "2",
            "--checkpoint-freq", "32", "--seed", "3", "--num-cpu", "1", "--torch-threads", "2"]
    reference = trainHere(*args, "--log-dir", tmp_path / "reference")
    resumed = interruptThenResume(monkeypatch, str(tmp_path / "stopped"), args, 40)
    assert parameterDigest(resumed) == parameterDigest(reference)
