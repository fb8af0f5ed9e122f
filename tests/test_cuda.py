"""--device cuda on a machine with a CUDA GPU: every built-in algorithm trains there, a learned SRL model trains and
encodes there, and what a GPU wrote replays on the CPU.

Skipped where torch sees no GPU (CI has none); test_devices.py covers the device choice there with a simulated GPU.
Every command runs in a real process (``warm=False``): the warm interpreter forks, and a process forked after CUDA
was initialised cannot use it.
"""
from __future__ import annotations

import glob
import json
import os

import numpy as np
import pytest
import torch
from conftest import interruptThenResume, runFolder, runModule, runTrain
from test_determinism import ALGO_ARGS, monitorRows

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.checkpointing import readManifest
from rl_baselines.core.registry import registered_rl
from rl_baselines.envs.factory import VecEnvSettings, createEnvs, encodeInWorkers
from rl_baselines.envs.srl_encoder import SRLEncoderVecEnv, loadEncoder
from rl_baselines.runs import train
from rl_baselines.runs.callbacks import TrainingCallbacks
from rl_baselines.runs.run_policy import readRunArgs
from srl_models.registry import loadSRLModel

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine"),
              pytest.mark.slow]

ENV = "MobileRobotGymEnv-v0"
GT = ["--env", ENV, "--srl-model", "ground_truth", "--shape-reward"]
DEVICE, RECORDED = "cuda", "cuda:0"  # the flag, and the device a run records with it


def _recordedDevice(run_dir: str) -> str:
    with open(os.path.join(run_dir, "args.json"), encoding="utf-8") as handle:
        return json.load(handle)["device"]


def _parameterDevices(module: torch.nn.Module) -> set[str]:
    return {parameter.device.type for parameter in module.parameters()}


@pytest.mark.parametrize("algo", sorted(registered_rl))
def test_every_algorithm_trains_on_the_gpu(tmp_path, algo: str) -> None:
    actions = [] if ActionType.DISCRETE in registered_rl[algo][2] else ["-c"]
    result = runTrain("--algo", algo, *GT, *actions, "--num-timesteps", "500", "--seed", "0", "--device", DEVICE,
                      "--log-dir", str(tmp_path), *ALGO_ARGS.get(algo, []), warm=False)
    run_dir = runFolder(result)
    assert _recordedDevice(run_dir) == RECORDED
    assert glob.glob(os.path.join(run_dir, f"{algo}_model*"))


def test_ppo2_on_the_gpu_replays_on_the_cpu(tmp_path) -> None:
    run_dir = runFolder(runTrain("--algo", "ppo2", *GT, "--num-timesteps", "256", "--n-steps", "64", "--device",
                                 DEVICE, "--log-dir", str(tmp_path / "logs"), warm=False))
    assert _recordedDevice(run_dir) == RECORDED
    algo_class = registered_rl["ppo2"][0]
    model_file = os.path.join(run_dir, f"ppo2_model{algo_class.MODEL_EXTENSION}")
    assert algo_class.load(model_file, readRunArgs(run_dir, "--log-dir")).model.device.type == DEVICE

    on_gpu = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "20", warm=False)
    assert on_gpu.returncode == 0, on_gpu.stderr
    on_cpu = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "20", "--device", "cpu",
                       warm=False)
    assert on_cpu.returncode == 0, on_cpu.stderr


def test_a_run_interrupted_on_the_gpu_resumes_on_the_cpu(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = TrainingCallbacks.on_step

    def interrupted(self) -> bool:
        if self.num_timesteps >= 128:
            raise KeyboardInterrupt
        return original(self)

    monkeypatch.setattr(TrainingCallbacks, "on_step", interrupted)
    log_dir = str(tmp_path / "logs")
    assert train.main(["--algo", "ppo2", *GT, "--num-timesteps", "256", "--n-steps", "64", "--checkpoint-freq", "64",
                       "--device", DEVICE, "--log-dir", log_dir, "--no-vis", "--no-progress"]) == 130
    monkeypatch.setattr(TrainingCallbacks, "on_step", original)
    (run_dir,) = glob.glob(os.path.join(log_dir, "*", "*", "*", "*"))
    assert _recordedDevice(run_dir) == RECORDED
    assert train.main(["--resume", run_dir, "--device", "cpu", "--no-vis", "--no-progress"]) == 0
    manifest = readManifest(run_dir)
    assert manifest["finished"] and manifest["num_timesteps"] == 256
    assert _recordedDevice(run_dir) == RECORDED  # args.json keeps the run's own arguments; --device is this resume's


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_a_run_stopped_on_the_gpu_resumes_as_the_uninterrupted_run(tmp_path, monkeypatch: pytest.MonkeyPatch,
                                                                  algo: str) -> None:
    """sac samples its actions and td3 its target noise from the GPU's generator, which the checkpoint keeps:
    stopped at step 400, resumed from the checkpoint at 250 (an episode end), the run is the uninterrupted one."""
    args = ["--algo", algo, *GT, "-c", "--num-timesteps", "750", "--checkpoint-freq", "250", "--seed", "0",
            "--device", DEVICE, "--hyperparam", "learning_starts:100", "batch_size:16", "train_freq:5"]
    assert train.main([*args, "--log-dir", str(tmp_path / "reference"), "--no-vis", "--no-progress"]) == 0
    (reference,) = glob.glob(str(tmp_path / "reference" / "*" / "*" / "*" / "*"))
    run_dir = interruptThenResume(monkeypatch, str(tmp_path / "stopped"), args, at_step=400)
    assert monitorRows(run_dir) == monitorRows(reference)
    resumed, uninterrupted = (registered_rl[algo][0].load(os.path.join(folder, f"{algo}_model.zip")).model.policy
                              for folder in (run_dir, reference))
    assert all(torch.equal(mine, theirs.to(mine.device))
               for mine, theirs in zip(resumed.state_dict().values(), uninterrupted.state_dict().values()))


def test_auto_gives_a_cnn_policy_the_gpu_and_ppo_on_a_state_the_cpu(tmp_path) -> None:
    pixels = runFolder(runTrain("--algo", "ppo2", "--env", ENV, "--srl-model", "raw_pixels", "--num-cpu", "2",
                                "--num-timesteps", "256", "--n-steps", "64", "--device", "auto", "--log-dir",
                                str(tmp_path), warm=False))
    assert _recordedDevice(pixels) == RECORDED
    state = runFolder(runTrain("--algo", "ppo2", *GT, "--num-timesteps", "256", "--n-steps", "64", "--log-dir",
                               str(tmp_path), warm=False))
    assert _recordedDevice(state) == "cpu"


def test_a_learned_model_trains_and_encodes_on_the_gpu(tmp_path) -> None:
    data = tmp_path / "data"
    made = runModule("environments.dataset_generator", "--env", ENV, "--name", "tiny", "--save-path", data,
                     "--num-episode", 4, "--max-steps", 50, "--seed", 0, "--no-progress", warm=False)
    assert made.returncode == 0, made.stderr
    trained = runModule("srl_models.train", "--data-folder", data / "tiny", "--srl-model", "vae", "--state-dim", 8,
                        "--epochs", 2, "--batch-size", 32, "--seed", 0, "--device", DEVICE, "--log-folder",
                        tmp_path / "srl", "--no-progress", warm=False)
    assert trained.returncode == 0, trained.stderr
    (config,) = glob.glob(str(tmp_path / "srl" / "tiny" / "*" / "exp_config.json"))
    folder = os.path.dirname(config)
    evaluated = runModule("srl_models.evaluate", "--model-folder", folder, "--device", DEVICE, warm=False)
    assert evaluated.returncode == 0, evaluated.stderr

    # the run's encoder: on the GPU, in this process, one batch for both envs; the same states as on the CPU
    settings = VecEnvSettings(env_id=ENV, num_envs=2, seed=0, srl_model="vae", srl_model_path=folder, device=DEVICE)
    assert not encodeInWorkers(settings, "tinyrenderer")
    venv = createEnvs(settings)
    try:
        encoder = venv.venv
        assert isinstance(encoder, SRLEncoderVecEnv) and _parameterDevices(encoder.model.network) == {DEVICE}
        states = venv.reset()
        assert states.shape == (2, 8) and np.all(np.isfinite(states))
        images = encoder.venv.reset()
        on_cpu = loadEncoder(folder, device="cpu").getState(images)
        np.testing.assert_allclose(encoder.encode(images), on_cpu, rtol=1e-3, atol=1e-3)
    finally:
        venv.close()
    assert _parameterDevices(loadSRLModel(folder, device=DEVICE).network) == {DEVICE}

    run_dir = runFolder(runTrain("--algo", "ppo2", "--env", ENV, "--srl-model-path", folder, "--num-cpu", "2",
                                 "--num-timesteps", "256", "--n-steps", "64", "--device", DEVICE, "--log-dir",
                                 str(tmp_path / "logs"), warm=False))
    assert _recordedDevice(run_dir) == RECORDED
