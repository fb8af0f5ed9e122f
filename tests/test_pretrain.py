"""Behaviour cloning before RL (``--pretrain-dataset``): the pretrained policy imitates a scripted expert."""
from __future__ import annotations

import argparse
import json
import os

import gymnasium
import numpy as np
import pytest
from conftest import runFolder, runModule, runTrain, snapshot
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from environments import getEnvClass
from environments.dataset import Dataset
from rl_baselines.runs.pretrain import loadDataset, pretrainFromArgs

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

ENV = "MobileRobotGymEnv-v0"


def expertAction(relative: np.ndarray) -> np.ndarray:
    """Scripted MobileRobot expert: step along the axis with the larger gap toward the target (actions -x, +x, -y, +y)."""
    along_x = np.abs(relative[:, 0]) >= np.abs(relative[:, 1])
    return np.where(along_x, np.where(relative[:, 0] > 0, 0, 1), np.where(relative[:, 1] > 0, 2, 3)).astype(np.int64)


def writeDataset(folder: str, n_episodes: int = 40, steps: int = 25, continuous: bool = False, env: str = ENV,
                 seed: int = 0) -> str:
    """An expert dataset in the generator's format (ground truth only: no images are needed for it)."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder)
    robots = rng.uniform(0.3, 3.7, size=(n_episodes * steps, 2)).astype(np.float32)
    targets = rng.uniform(0.3, 3.7, size=(n_episodes, 2)).astype(np.float32)
    relative = robots - np.repeat(targets, steps, axis=0)
    if continuous:
        actions = np.clip(-relative, -1, 1).astype(np.float32)  # move toward the target
    else:
        actions = expertAction(relative)
    starts = np.zeros(len(robots), dtype=bool)
    starts[::steps] = True
    name = os.path.basename(folder)
    np.savez(os.path.join(folder, "preprocessed_data.npz"), actions=actions,
             rewards=np.zeros(len(robots), np.float32), episode_starts=starts)
    np.savez(os.path.join(folder, "ground_truth.npz"), ground_truth_states=robots, target_positions=targets,
             images_path=np.array([f"{name}/record_{i // steps:03d}/frame{i % steps:06d}" for i in range(len(robots))]))
    with open(os.path.join(folder, "dataset_config.json"), "w") as handle:
        json.dump({"env": env, "relative_pos": True, "img_shape": [3, 64, 64], "image_format": "jpg",
                   "continuous_actions": continuous, "multi_view": False, "version": 1}, handle)
    return folder


def normalised(run_dir: str, states: np.ndarray) -> np.ndarray:
    with np.load(os.path.join(run_dir, "vecnormalize.npz")) as data:
        return np.clip((states - data["obs.mean"]) / np.sqrt(data["obs.var"] + data["epsilon"]),
                       -data["clip_obs"], data["clip_obs"]).astype(np.float32)


def heldOutStates(n: int = 500) -> np.ndarray:
    return np.random.default_rng(123).uniform(-3.4, 3.4, size=(n, 2)).astype(np.float32)


def test_loadDatasetRelative(tmp_path):
    folder = writeDataset(str(tmp_path / "data"), n_episodes=3, steps=4)
    states, actions = loadDataset(folder, "ground_truth")
    with np.load(os.path.join(folder, "ground_truth.npz")) as data:
        expected = data["ground_truth_states"] - np.repeat(data["target_positions"], 4, axis=0)
    np.testing.assert_allclose(states, expected)
    assert np.array_equal(actions, expertAction(expected))


def test_pretrainPpo2MatchesExpert(tmp_path):
    data = writeDataset(str(tmp_path / "data"))
    common = ("--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "64",
              "--n-steps", "64", "--seed", "1", "--log-dir", str(tmp_path / "logs"))
    # the dataset named relative to the working folder; args.json records it absolute (a --resume reads it from any)
    pretrained = runFolder(runTrain(*common, "--pretrain-dataset", "data", "--pretrain-epochs", "15",
                                    cwd=str(tmp_path)))
    assert json.load(open(os.path.join(pretrained, "args.json")))["pretrain_dataset"] == data
    plain = runFolder(runTrain(*common, "--tag", "plain"))
    states = heldOutStates()
    expert = expertAction(states)
    agreement = {}
    for run in (pretrained, plain):
        model = PPO.load(os.path.join(run, "ppo2_model.zip"), device="cpu")
        actions, _ = model.predict(normalised(run, states), deterministic=True)
        agreement[run] = float(np.mean(actions == expert))
    print(f"agreement pretrained {agreement[pretrained]:.3f}, plain {agreement[plain]:.3f}")
    assert agreement[pretrained] > 0.9, agreement
    assert agreement[plain] < 0.5, agreement


def test_pretrainSacActorCorrelates(tmp_path):
    """Continuous case in-process (an off-policy learn would dominate the time): the squashed-Gaussian actor."""
    data = writeDataset(str(tmp_path / "data"), n_episodes=20, continuous=True)
    venv = VecNormalize(DummyVecEnv([lambda: getEnvClass(ENV)(srl_model="ground_truth", is_discrete=False)]),
                        norm_reward=False)
    model = SAC("MlpPolicy", venv, seed=0, device="cpu")
    args = argparse.Namespace(pretrain_dataset=data, srl_model="ground_truth", img_shape=None, pretrain_epochs=20,
                              pretrain_lr=3e-3, seed=0)
    results = pretrainFromArgs(model, venv, args)
    states = heldOutStates()
    actions, _ = model.predict(venv.normalize_obs(states), deterministic=True)
    expert = np.clip(-states, -1, 1)
    for axis in range(2):
        assert np.corrcoef(actions[:, axis], expert[:, axis])[0, 1] > 0.9
    assert results["val_mse"] < 0.1, results
    venv.close()


@pytest.mark.parametrize("case", ["missing", "other_env", "continuous_flag", "cannot_pretrain"])
def test_badPretrainInputs(tmp_path, case):
    data = writeDataset(str(tmp_path / "data"), n_episodes=2, steps=3, env="OtherEnv-v0" if case == "other_env" else ENV)
    args = ["--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "64",
            "--log-dir", str(tmp_path / "logs"), "--pretrain-dataset", data, "--no-vis"]
    if case == "missing":
        args[args.index(data)] = str(tmp_path / "nowhere")
    if case == "continuous_flag":
        args.append("-c")
    if case == "cannot_pretrain":
        args[1] = "random_agent"
    before = snapshot(str(tmp_path))
    result = runModule("rl_baselines.train", *args)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if "--pretrain-dataset" in line]
    assert len(lines) == 1, result.stderr
    if case == "cannot_pretrain":
        assert "ppo2" in lines[0] and "sac" in lines[0]
    assert snapshot(str(tmp_path)) == before
    assert not os.path.exists(tmp_path / "logs")


def test_loadGeneratorImages(tmp_path):
    """A dataset recorded by the generator (then renamed) loads as images at the run's shape."""
    result = runModule("environments.dataset_generator", "--save-path", tmp_path, "--name", "gen", "--num-episode", "1",
                       "--max-steps", "6", "--no-progress")
    assert result.returncode == 0, result.stderr
    os.rename(tmp_path / "gen", tmp_path / "renamed")
    images, actions = loadDataset(str(tmp_path / "renamed"), "raw_pixels", (3, 40, 48))
    assert images.shape == (len(actions), 40, 48, 3) and images.dtype == np.uint8
    assert images.std() > 0  # real pictures, not a blank buffer


def test_a_dataset_recorded_with_force_down_needs_it(tmp_path):
    # A random Kuka dataset is recorded with --force-down (action 5 moves down): cloning it into a run whose action 5
    # moves up was accepted silently.
    result = runModule("environments.dataset_generator", "--env", "KukaButtonGymEnv-v0", "--num-episode", "1",
                       "--max-steps", "4", "--img-shape", "3", "16", "16", "--name", "kuka", "--save-path",
                       str(tmp_path / "data"), "--no-progress")
    assert result.returncode == 0, result.stderr
    data = str(tmp_path / "data" / "kuka")
    with open(os.path.join(data, "dataset_config.json")) as handle:
        config = json.load(handle)
    assert config["force_down"] is True
    args = ["--algo", "ppo2", "--env", "KukaButtonGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps", "64",
            "--log-dir", str(tmp_path / "logs"), "--pretrain-dataset", data, "--no-vis"]
    before = snapshot(str(tmp_path))
    result = runModule("rl_baselines.train", *args)
    assert result.returncode == 2, result.stderr
    assert "--force-down" in result.stderr.strip().splitlines()[-1], result.stderr
    assert snapshot(str(tmp_path)) == before
    # the run's action space takes the actions either way: only the recorded meaning tells them apart
    dataset = Dataset.open(data)
    space = gymnasium.spaces.Discrete(6)
    dataset.checkActions(False, False, space, force_down=True)
    # a dataset written before dataset_config.json had the key: env_globals.json says it
    del config["force_down"]
    with open(os.path.join(data, "dataset_config.json"), "w") as handle:
        json.dump(config, handle)
    with pytest.raises(ValueError, match="add --force-down"):
        Dataset.open(data).checkActions(False, False, space, force_down=False)
    # mobile robots have no such keyword: nothing to check
    mobile = writeDataset(str(tmp_path / "mobile"), n_episodes=2, steps=3)
    Dataset.open(mobile).checkActions(False, False, gymnasium.spaces.Discrete(4), force_down=True)
