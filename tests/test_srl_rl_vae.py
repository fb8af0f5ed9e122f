"""train and enjoy end to end on a real VAE trained by ``srl_models.train``: from the SRL config or
--srl-model-path, the model's hash checked, the state scales recorded and rebuilt by every reader, and the bad SRL
inputs of train. The encoder wrapper and the model lookup: tests/test_srl_rl.py."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
import torch
import yaml
from conftest import REPO, runFolder, runModule, runTrain, snapshot, trainHere
from learned_states import recordStates

from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from replay import enjoy_baselines
from rl_baselines import api as rl_api
from rl_baselines.core.registry import registered_rl
from rl_baselines.envs.factory import NORMALISATION_FILE, ScaledVecNormalize, findVecNormalize
from rl_baselines.runs import train, train_checks
from rl_baselines.runs.resume import continueCommand
from rl_baselines.runs.run_policy import loadRunPolicy, readRunArgs, readRunConfig
from srl_models.base import EXP_CONFIG_FILE, STATES_FILE, modelHash, modelRecipe
from srl_toolbox.cli import UsageError, pythonCommand

pytestmark = pytest.mark.slow  # whole trainings: left out of `make test-fast`

ENV_ID = "MobileRobotGymEnv-v0"
SMALL = (3, 32, 32)


@pytest.fixture(scope="module")
def vaeFolder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny 32x32 VAE (state dim 8) trained as a user would: record a dataset, then python -m srl_models.train."""
    scratch = tmp_path_factory.mktemp("srl_vae")
    result = runModule("environments.dataset_generator", "--env", ENV_ID, "--num-episode", "2", "--max-steps", "40",
                       "--img-shape", *map(str, SMALL), "--name", "tiny", "--save-path", scratch / "data",
                       "--seed", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    result = runModule("srl_models.train", "--data-folder", scratch / "data" / "tiny", "--srl-model", "vae",
                       "--state-dim", "8", "--epochs", "1", "--batch-size", "32", "--seed", "0", "--log-folder",
                       scratch / "srl", "--no-eval", "--no-progress")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1].split("Model folder: ", 1)[1]


def _readJson(path: str) -> dict:
    with open(path) as handle:
        return json.load(handle)


def _normalisationShape(folder: str) -> tuple:
    with np.load(os.path.join(folder, "vecnormalize.npz"), allow_pickle=False) as data:
        return data["obs.mean"].shape


def test_train_with_vae_from_config_then_enjoy(tmp_path, vaeFolder):
    os.makedirs(tmp_path / "config")
    config = tmp_path / "config" / "srl.yaml"
    config.write_text(yaml.safe_dump({ENV_ID: {"vae": os.path.relpath(vaeFolder, tmp_path / "config")}}))
    run_dir = runFolder(runTrain("--algo", "ppo2", "--env", ENV_ID, "--srl-model", "vae", "--srl-config-file", config,
                                 "--img-shape", *map(str, SMALL), "--num-cpu", "2", "--num-timesteps", "576",
                                 "--hyperparam", "n_steps:64", "--min-episodes-save", "1", "--checkpoint-freq", "256",
                                 "--log-dir", tmp_path / "logs"))
    assert os.path.dirname(run_dir) == os.path.join(str(tmp_path / "logs"), ENV_ID, "vae", "ppo2")
    record = _readJson(os.path.join(run_dir, "srl_model.json"))
    assert record == {"name": "vae", "path": vaeFolder, "hash": modelHash(vaeFolder), "recipe": modelRecipe(vaeFolder),
                      "state_dim": 8, "img_shape": list(SMALL), "env": ENV_ID}
    saved = _readJson(os.path.join(run_dir, "args.json"))
    assert saved["srl_model_path"] == vaeFolder and saved["srl_model"] == "vae"
    # the running mean/std of the 8-dim states beside every saved model
    checkpoints = [os.path.join(run_dir, "checkpoints", name) for name in os.listdir(f"{run_dir}/checkpoints")]
    for folder in [run_dir, os.path.join(run_dir, "best"), *checkpoints]:
        assert _normalisationShape(folder) == (8,), folder
    result = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "60", "--deterministic")
    assert result.returncode == 0, result.stderr
    assert "episode" in result.stdout.lower() or "reward" in result.stdout.lower()


def test_train_with_model_path_and_enjoy_checks_the_hash(tmp_path, vaeFolder, monkeypatch):
    copy = shutil.copytree(vaeFolder, str(tmp_path / "copy"))
    threads = torch.get_num_threads()
    with monkeypatch.context() as share:  # trained in this process, with a share of 2 threads (OMP_NUM_THREADS)
        share.setenv("OMP_NUM_THREADS", "2")
        try:
            run_dir = trainHere("--algo", "ppo2", "--env", ENV_ID, "--srl-model-path", copy, "--num-timesteps", "128",
                                "--hyperparam", "n_steps:64", "--log-dir", tmp_path / "logs")
        finally:
            torch.set_num_threads(threads)
    saved = _readJson(os.path.join(run_dir, "args.json"))
    # the kind and the image size come from the model folder
    assert saved["srl_model"] == "vae" and saved["img_shape"] == list(SMALL) and saved["srl_model_path"] == copy
    assert saved["torch_threads"] == 1  # auto for the MLP policy of a learned state, whatever the process's share
    with open(os.path.join(copy, EXP_CONFIG_FILE), "a") as handle:
        handle.write("\n")  # same settings, other bytes: another model as far as the run knows
    result = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "10")
    assert result.returncode == 2 and "changed since the run was trained" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    # a copy with the recorded files replays (the original folder is one)
    assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10", "--srl-model-path", vaeFolder]) == 0
    # the recorded folder gone: the message names the flag (the parameter in Python) that gives its new place
    shutil.move(copy, str(tmp_path / "moved"))
    with pytest.raises(UsageError, match=r"does not exist; moved\? give its new folder with --srl-model-path$"):
        enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10"])
    with pytest.raises(UsageError, match=r"does not exist; moved\? give its new folder with srl_model_path$"):
        rl_api.loadRun(run_dir)
    os.remove(os.path.join(run_dir, "srl_model.json"))
    with pytest.raises(UsageError, match="holds no srl_model.json"):
        enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10"])


def test_the_participation_scale_is_recorded_and_rebuilt_by_every_reader(tmp_path, vaeFolder):
    model = shutil.copytree(vaeFolder, str(tmp_path / "model"))
    expected = recordStates(model, 8, directions=3)
    run_dir = runFolder(runTrain("--algo", "ppo2", "--env", ENV_ID, "--srl-model-path", model, "--srl-state-scale",
                                 "participation", "--num-timesteps", "128", "--hyperparam", "n_steps:64",
                                 "--log-dir", tmp_path / "logs"))
    assert _readJson(os.path.join(run_dir, "args.json"))["srl_state_scale"] == "participation"
    with np.load(os.path.join(run_dir, NORMALISATION_FILE)) as data:
        assert float(data["scale"]) == pytest.approx(expected)
    os.remove(os.path.join(model, STATES_FILE))  # what the run recorded wins over what the folder holds now
    args = readRunArgs(run_dir, "--log-dir")
    env = registered_rl["ppo2"][0].makeEnv(args, load_path_normalise=run_dir)
    normaliser = findVecNormalize(env)
    assert isinstance(normaliser, ScaledVecNormalize) and normaliser.scale == pytest.approx(expected)
    policy = loadRunPolicy(run_dir)
    raw = MobileRobotGymEnv(srl_model="vae", img_shape=SMALL)
    pixels = raw.reset(seed=0)[0]
    np.testing.assert_allclose(policy.observation(raw, pixels),
                               normaliser.normalize_obs(policy.encoder.getState(pixels[None])), rtol=1e-5, atol=1e-6)
    raw.close()
    env.close()
    assert "--srl-state-scale participation" in continueCommand(readRunConfig(run_dir, "--log-dir"), None, 64)


def test_the_state_scale_beside_the_ground_truth_scale_warns_that_it_does_nothing(tmp_path, vaeFolder):
    argv = ["--algo", "ppo2", "--env", ENV_ID, "--srl-model-path", vaeFolder, "--srl-ground-truth-scale",
            "--srl-state-scale", "participation", "--log-dir", str(tmp_path), "--no-vis"]
    with pytest.warns(UserWarning, match="--srl-state-scale participation does nothing: --srl-ground-truth-scale "
                                         "replaces it"):
        train_checks.validate(train.parseCommand(argv)[0], registered_rl)
    assert not os.listdir(tmp_path)


def test_ground_truth_scale_is_recorded_and_rebuilt_by_every_reader(tmp_path, vaeFolder):
    run_dir = runFolder(runTrain("--algo", "ppo2", "--env", ENV_ID, "--srl-model-path", vaeFolder,
                                 "--srl-ground-truth-scale", "--num-timesteps", "128", "--hyperparam", "n_steps:64",
                                 "--eval-freq", "64", "--eval-episodes", "1", "--log-dir", tmp_path / "logs"))
    assert _readJson(os.path.join(run_dir, "args.json"))["srl_ground_truth_scale"] is True
    assert os.path.isfile(os.path.join(run_dir, "evaluations.npz"))
    args = readRunArgs(run_dir, "--log-dir")
    assert "--srl-ground-truth-scale" in continueCommand(readRunConfig(run_dir, "--log-dir"), None, 64).split()
    # replay and evaluation build the env from args.json: the VAE's 8 numbers times sqrt(2/8)
    env = registered_rl["ppo2"][0].makeEnv(args, load_path_normalise=run_dir)
    normaliser = findVecNormalize(env)
    assert isinstance(normaliser, ScaledVecNormalize) and normaliser.scale == pytest.approx(0.5)
    # the dataset generator's replayed agent (rl_baselines.runs.run_policy) sees what the run's env gives
    policy = loadRunPolicy(run_dir)
    raw = MobileRobotGymEnv(srl_model="vae", img_shape=SMALL)
    pixels = raw.reset(seed=0)[0]
    expected = normaliser.normalize_obs(policy.encoder.getState(pixels[None]))
    np.testing.assert_allclose(policy.observation(raw, pixels), expected, rtol=1e-5, atol=1e-6)
    raw.close()
    env.close()
    assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10"]) == 0


# (case, extra arguments, message); the first four run as a subprocess (exit code 2), the others in this process
BAD_INPUTS = [
    ("missing folder", ["--srl-model-path", "{tmp}/missing"], "does not exist"),
    ("another env", ["--env", "MobileRobot1DGymEnv-v0", "--srl-model-path", "{vae}"],
     "was trained on MobileRobotGymEnv-v0 images, not MobileRobot1DGymEnv-v0"),
    ("other image size", ["--srl-model-path", "{vae}", "--img-shape", "3", "64", "64"],
     "encodes 3x32x32 images but the run's camera gives 3x64x64"),
    ("unknown name", ["--srl-model", "nope"], "unknown --srl-model 'nope' for MobileRobotGymEnv-v0; valid choices: "),
    ("foreign folder", ["--srl-model-path", "{tmp}"], "is not an SRL model folder"),
    ("other kind", ["--srl-model", "autoencoder", "--srl-model-path", "{vae}"],
     "holds a 'vae' model, not 'autoencoder'"),
    ("env mode with a folder", ["--srl-model", "ground_truth", "--srl-model-path", "{vae}"], "cannot be combined"),
    ("no model for the env", ["--srl-model", "vae", "--srl-config-file", f"{REPO}/config/srl_models.yaml"],
     "has no trained SRL model for MobileRobotGymEnv-v0"),
    ("name not in the config", ["--srl-model", "autoencoder", "--srl-config-file", "{tmp}/srl.yaml"],
     "has no 'autoencoder' model for MobileRobotGymEnv-v0 (models it has for MobileRobotGymEnv-v0: vae); train and "
     "register one with {python} -m srl_models.prepare --env MobileRobotGymEnv-v0 --srl-model autoencoder "
     "--srl-config-file "),
    ("two cameras", ["--srl-model-path", "{vae}", "--fpv"], "encodes 3-channel images (one camera)"),
    ("scale without a learned state", ["--srl-model", "ground_truth", "--srl-ground-truth-scale"],
     "--srl-ground-truth-scale scales a learned SRL state, not --srl-model 'ground_truth'; learned models: "),
    ("scale with an evolution strategy", ["--algo", "ars", "--srl-model-path", "{vae}", "--srl-ground-truth-scale"],
     "--srl-ground-truth-scale: --algo ars normalises states itself; algorithms that take it: "),
]


@pytest.mark.parametrize("case, extra, message", BAD_INPUTS, ids=[case[0] for case in BAD_INPUTS])
def test_bad_srl_inputs_are_refused(tmp_path, vaeFolder, case, extra, message):
    (tmp_path / "srl.yaml").write_text(yaml.safe_dump({ENV_ID: {"vae": vaeFolder}}))
    argv = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--num-timesteps", "64", "--log-dir",
            str(tmp_path / "logs"), "--no-vis",
            *[arg.format(tmp=tmp_path, vae=vaeFolder) for arg in extra]]
    before = snapshot(str(tmp_path))
    if BAD_INPUTS.index((case, extra, message)) < 4:
        result = runModule("rl_baselines.train", *argv)
        assert result.returncode == 2, result.stderr
        error = result.stderr.strip()
        assert error.startswith("error: ") and len(error.splitlines()) == 1
    else:
        with pytest.raises(UsageError) as raised:
            train.main(argv)
        error = str(raised.value)
        assert "\n" not in error
    assert message.replace("{python}", pythonCommand()) in error  # (printed: the interpreter that ran it)
    assert snapshot(str(tmp_path)) == before and not os.path.exists(tmp_path / "logs")
