"""--device: spelling and availability checks, the recorded device, and runs recorded on a GPU loaded on a CPU.

No GPU is needed: CUDA's presence is simulated by monkeypatching torch.cuda, and a GPU-trained run is simulated by
a run folder whose args.json records ``cuda:0``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import runModule, trainHere

from rl_baselines.core.registry import registered_rl
from rl_baselines.core.training_state import RNG_FILE, captureGlobalRNG, restoreGlobalRNG
from rl_baselines.rl_algorithm.acer import ACERModel
from rl_baselines.runs import train, train_checks
from rl_baselines.runs.resume import loadResumeArgs
from rl_baselines.runs.run_policy import readRunArgs
from rl_baselines.runs.train_checks import baseParser
from srl_toolbox import devices
from srl_toolbox.cli import UsageError
from srl_toolbox.devices import checkedDevice, parseDevice, resolveDevice, reuseDevice, runDevice
from srl_toolbox.files import writeNpz

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]


def _fakeCuda(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)


def test_spellings() -> None:
    for raw, value in (("auto", "auto"), ("CPU", "cpu"), ("cuda", "cuda"), ("cuda:3", "cuda:3")):
        assert parseDevice(raw) == value
    for raw in ("tpu", "cuda:x", "cuda:-1", "cuda:", "gpu", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="valid choices: auto, cpu, cuda, cuda:N"):
            parseDevice(raw)


def test_resolution_without_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    _fakeCuda(monkeypatch, 0)
    assert resolveDevice("auto") == "cpu" and resolveDevice("cpu") == "cpu"
    for raw in ("cuda", "cuda:0", "cuda:1"):
        with pytest.raises(ValueError, match="no CUDA GPU.*valid choices here: auto, cpu"):
            resolveDevice(raw)
    # a run recorded on a GPU: this machine's device, with a note; asked for explicitly: refused
    assert reuseDevice("cuda:0", None) == ("cpu", "the run was trained on cuda:0, which this machine lacks: using cpu")
    assert reuseDevice(None, None) == ("cpu", None)  # a run folder older than --device
    with pytest.raises(ValueError, match="no CUDA GPU"):
        reuseDevice("cpu", "cuda")
    assert runDevice("cuda:1") == "cpu"
    assert runDevice(None) == "cpu"


def test_checked_device_is_a_usage_error_naming_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    _fakeCuda(monkeypatch, 1)
    assert checkedDevice("auto") == "cuda:0" and checkedDevice("CPU") == "cpu"
    with pytest.raises(UsageError, match=r"^--device: 'tpu' is not a device; valid choices: auto, cpu, cuda, cuda:N$"):
        checkedDevice("tpu")
    with pytest.raises(UsageError, match=r"^--device cuda:1: this machine has 1 CUDA GPU\(s\).*cuda:0$"):
        checkedDevice("cuda:1")
    _fakeCuda(monkeypatch, 0)
    with pytest.raises(UsageError, match=r"^--device cuda: this machine has no CUDA GPU"):
        checkedDevice("cuda")


def test_resolution_with_two_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    _fakeCuda(monkeypatch, 2)
    assert resolveDevice("auto") == "cuda:0"
    assert resolveDevice("cuda") == "cuda:0" and resolveDevice("cuda:1") == "cuda:1"
    with pytest.raises(ValueError, match="has 2 CUDA GPU.*cuda:0, cuda:1"):
        resolveDevice("cuda:2")
    assert reuseDevice("cpu", None) == ("cpu", None)  # the run's own device, not auto's
    assert reuseDevice("cuda:1", None) == ("cuda:1", None)
    assert reuseDevice("cuda:1", "cpu") == ("cpu", None)


def test_auto_takes_the_gpu_only_where_it_helps(monkeypatch: pytest.MonkeyPatch) -> None:
    _fakeCuda(monkeypatch, 1)
    # every built-in learner's MLP on a state runs faster on the CPU, a CNN policy on images on the GPU
    for algo in ("ppo2", "a2c", "sac", "deepq", "acer", "ppo1"):
        assert not registered_rl[algo][0].gpuHelps(False) and registered_rl[algo][0].gpuHelps(True), algo
    assert resolveDevice("auto", gpu_helps=False) == "cpu" and resolveDevice("cuda", gpu_helps=False) == "cuda:0"

    def recorded(*argv: str) -> str:
        return train_checks.validate(train.parseCommand([*argv, "--no-vis"])[0], registered_rl).device

    assert recorded("--algo", "ppo2", *GT) == "cpu"
    assert recorded("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels") == "cuda:0"
    assert recorded("--algo", "ppo2", *GT, "--device", "cuda") == "cuda:0"
    assert recorded("--algo", "sac", *GT, "-c") == "cpu"
    # ppo_lstm's LSTM gains on a GPU on a state too (measured on an H200), with one thread: two lose on 2 cores, on
    # images too
    lstm = registered_rl["ppo_lstm"][0]
    assert lstm.gpuHelps(False) and not lstm.threadsHelp(False) and not lstm.threadsHelp(True)
    assert recorded("--algo", "ppo_lstm", *GT) == "cuda:0"
    assert train_checks.runThreadsFor(lstm, 0, {"srl_model": "ground_truth"}) == 1
    assert train_checks.runThreadsFor(registered_rl["ppo2"][0], 0, {"srl_model": "ground_truth"}) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setattr(devices, "maxThreads", lambda: 4)  # (auto takes at most the machine's CPUs)
    assert train_checks.runThreadsFor(registered_rl["sac"][0], 0, {"srl_model": "raw_pixels"}) == 3  # (NatureCNN)
    # a2c's, acktr's, acer's and ppo_lstm's updates ran faster on one thread than on two, on images too (measured, 2
    # cores)
    for algo in ("a2c", "acktr", "acer", "ppo_lstm"):
        assert train_checks.runThreadsFor(registered_rl[algo][0], 0, {"srl_model": "raw_pixels"}) == 1, algo
    assert train_checks.runThreadsFor(registered_rl["a2c"][0], 2, {"srl_model": "raw_pixels"}) == 2  # (asked: given)


def _autoThreads(*argv: str) -> int:
    """:return: the torch threads validation records for a train command under --torch-threads auto"""
    return train_checks.validate(train.parseCommand([*argv, "--no-vis"])[0], registered_rl).torch_threads


def test_auto_threads_see_the_features_extractor(monkeypatch: pytest.MonkeyPatch) -> None:
    # maskable_ppo's SmallCNN ran faster on one thread than on two (2 cores), NatureCNN level: auto follows the
    # extractor; ppo2 trains every extractor in a shard per thread and takes the share whatever its extractor
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(devices, "usableCores", lambda: 4)
    monkeypatch.setattr(devices, "maxThreads", lambda: 4)  # (--torch-threads 2 is accepted on a 1-CPU machine too)
    pixels = ["--algo", "maskable_ppo", "--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels"]
    assert _autoThreads(*pixels, "--features-extractor", "small") == 1
    assert _autoThreads(*pixels, "--features-extractor", "medium") == 1
    assert _autoThreads(*pixels, "--features-extractor", "nature") == 4
    assert _autoThreads(*pixels) == 4  # (NatureCNN, maskable_ppo's default)
    assert _autoThreads(*pixels, "--features-extractor", "small", "--torch-threads", "2") == 2  # (asked: given)
    for extractor in ("small", "medium", "nature"):
        assert _autoThreads("--algo", "ppo2", *pixels[2:], "--features-extractor", extractor) == 4
    masked = registered_rl["maskable_ppo"][0]
    assert train_checks.runThreadsFor(masked, 0, {"srl_model": "raw_pixels", "features_extractor": "small"}) == 1
    assert train_checks.runThreadsFor(masked, 0, {"srl_model": "ground_truth", "features_extractor": "small"}) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # a sweep's share: NatureCNN takes it, SmallCNN and MediumCNN one
    assert train_checks.runThreadsFor(masked, 0, {"srl_model": "raw_pixels", "features_extractor": "nature"}) == 3
    assert train_checks.runThreadsFor(masked, 0, {"srl_model": "raw_pixels", "features_extractor": "small"}) == 1
    assert train_checks.runThreadsFor(masked, 0, {"srl_model": "raw_pixels", "features_extractor": "medium"}) == 1
    # the others keep their answer whatever the extractor (ppo2: the share, its CNN sharded)
    for algo, threads in (("ppo2", 3), ("sac", 3), ("td3", 3), ("deepq", 3), ("trpo", 3), ("a2c", 1)):
        settings = {"srl_model": "raw_pixels", "features_extractor": "small"}
        assert train_checks.runThreadsFor(registered_rl[algo][0], 0, settings) == threads, algo
    assert train_checks.runThreadsFor(registered_rl["maskable_ppo"][0], 0, {"srl_model": "raw_pixels"}) == 3
    assert train_checks.runThreadsFor(registered_rl["ppo2"][0], 0, {"srl_model": "raw_pixels"}) == 3


def test_a_one_parameter_threads_help_override_still_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    # a plugin written against threadsHelp(cls, image_observations) alone: auto resolves as before, settings or not

    class OneThreadOnImages(ACERModel):
        @classmethod
        def threadsHelp(cls, image_observations: bool) -> bool:
            return not image_observations

    class SharedOnImages(registered_rl["a2c"][0]):  # an SB3-backed built-in's subclass, its own answer
        @classmethod
        def threadsHelp(cls, image_observations: bool) -> bool:
            return image_observations

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setattr(devices, "maxThreads", lambda: 4)  # (auto takes at most the machine's CPUs)
    for extractor in ("small", "nature"):
        pixels = {"srl_model": "raw_pixels", "features_extractor": extractor}
        assert train_checks.runThreadsFor(OneThreadOnImages, 0, pixels) == 1
        assert train_checks.runThreadsFor(OneThreadOnImages, 0, {"srl_model": "ground_truth"}) == 3
        assert train_checks.runThreadsFor(SharedOnImages, 0, pixels) == 3
        assert train_checks.runThreadsFor(SharedOnImages, 0, {"srl_model": "ground_truth"}) == 1


@pytest.mark.parametrize("device", ["tpu", "cuda:x", "cuda:-1", "cuda"])
def test_bad_device_is_a_one_line_error_that_writes_nothing(tmp_path, device: str) -> None:
    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    log_dir = tmp_path / "logs"
    result = runModule("rl_baselines.train", "--device", device, *GT, "--log-dir", log_dir, "--no-vis")
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert "--device" in result.stderr and ("valid choices" in result.stderr)
    if device == "cuda":
        assert "no CUDA GPU" in result.stderr
    assert not log_dir.exists()


def _recordCuda(run_dir: str) -> None:
    path = os.path.join(run_dir, "args.json")
    args = json.load(open(path))
    args["device"] = "cuda:0"  # as a run trained on a GPU records it
    json.dump(args, open(path, "w"))


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["ppo2", "acer"])
def test_a_run_recorded_on_a_gpu_replays_on_this_machine(tmp_path, algo: str) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    run_dir = trainHere("--algo", algo, *GT, "--num-timesteps", "256", "--log-dir", tmp_path,
                        *(["--n-steps", "64"] if algo == "ppo2" else []))  # in this process: the replay is tested
    assert json.load(open(os.path.join(run_dir, "args.json")))["device"] == "cpu"  # auto, resolved here
    _recordCuda(run_dir)
    result = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "20")
    assert result.returncode == 0, result.stderr
    assert "Device: the run was trained on cuda:0, which this machine lacks: using cpu" in result.stdout
    refused = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "20", "--device", "cuda")
    assert refused.returncode == 2 and "no CUDA GPU" in refused.stderr
    # the model itself loads onto the CPU whatever its args.json says

    algo_class = registered_rl[algo][0]
    model = algo_class.load(os.path.join(run_dir, f"{algo}_model{algo_class.MODEL_EXTENSION}"),
                            readRunArgs(run_dir, "--log-dir"))
    device = model.model.device if algo == "ppo2" else next(model.policy.parameters()).device
    assert device.type == "cpu"


def test_resume_uses_the_run_device_or_this_machine(tmp_path, capsys) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")

    run_dir = trainHere("--algo", "ppo2", *GT, "--num-timesteps", "128", "--n-steps", "64", "--log-dir",
                        tmp_path / "logs")
    args, _ = loadResumeArgs(["--resume", run_dir], registered_rl, baseParser)
    assert args.device == "cpu"
    copy = str(tmp_path / "gpu_run")
    shutil.copytree(run_dir, copy)
    _recordCuda(copy)
    args, _ = loadResumeArgs(["--resume", copy], registered_rl, baseParser)
    assert args.device == "cpu"
    assert "the run was trained on cuda:0, which this machine lacks: using cpu" in capsys.readouterr().out
    args, _ = loadResumeArgs(["--resume", copy, "--device", "cpu"], registered_rl, baseParser)
    assert args.device == "cpu"
    result = runModule("rl_baselines.train", "--resume", copy, "--device", "cuda")
    assert result.returncode == 2 and "no CUDA GPU" in result.stderr


def test_torch_model_file_loads_onto_the_requested_device(tmp_path) -> None:
    """The model file is read with map_location: its tensors land on the CPU, then on the networks' device."""
    model = ACERModel()
    model.setup(gym.spaces.Box(-1, 1, (4,), dtype="float32"), gym.spaces.Discrete(3), {})
    model.env = None
    path = str(tmp_path / "acer_model.pt")
    model.save(path)
    calls = []
    original = torch.load

    def recordingLoad(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    torch.load = recordingLoad
    try:
        loaded = ACERModel.load(path, argparse.Namespace(device="cpu"))
    finally:
        torch.load = original
    assert calls and all(call.get("map_location") == "cpu" and call.get("weights_only") for call in calls)
    assert loaded.device == torch.device("cpu")
    assert all(torch.equal(a, b) for a, b in zip(model.policy.state_dict().values(),
                                                 loaded.policy.state_dict().values()))


def test_a_checkpoint_keeps_the_gpus_generators(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """A policy on a GPU draws its actions (sac), target noise (td3) and --augment offsets from the CUDA generators:
    the checkpoint's rng_state.npz keeps each device's, and a resume sets them back (on the devices the machine
    has). Simulated: two CPU generators stand for the GPUs' generators."""
    _fakeCuda(monkeypatch, 2)
    gpus = [torch.Generator().manual_seed(seed) for seed in (1, 2)]
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: [gpu.get_state() for gpu in gpus])
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device: gpus[device].set_state(state))

    def draws() -> list[float]:
        return [torch.rand(3, generator=gpu).sum().item() for gpu in gpus]

    writeNpz(str(tmp_path / RNG_FILE), captureGlobalRNG())  # as a checkpoint writes it
    expected = draws()
    with np.load(tmp_path / RNG_FILE, allow_pickle=False) as saved:
        restoreGlobalRNG(saved)
    assert draws() == expected
    _fakeCuda(monkeypatch, 0)  # a GPU run resumed on a CPU-only machine: nothing to set, nothing refused
    with np.load(tmp_path / RNG_FILE, allow_pickle=False) as saved:
        restoreGlobalRNG(saved)
    assert draws() != expected
