"""The SRL side's Python API (srl_models.api): the commands' folders and models, their refusals before anything is
written, the caller's generators and threads left alone, and the package's lazy names. (Its examples in
docs/python_api.md run in tests/test_api.py.)"""
from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import REPO

import srl_models
from environments import dataset_generator
from srl_models import api as srl
from srl_models import prepare
from srl_models.train import main as trainMain
from srl_toolbox.cli import pythonCommand

TINY = {"num_episode": 3, "max_steps": 20, "img_shape": [3, 32, 32], "renderer": "sprites"}


@pytest.fixture(scope="module")
def tinyData(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A dataset of 3 episodes of 20 frames at 32x32, recorded through the API."""
    root = tmp_path_factory.mktemp("srl_api")
    return srl.recordDataset("MobileRobotGymEnv-v0", save_path=str(root / "data"), name="tiny", **TINY)


def modelStates(folder: str) -> np.ndarray:
    """:return: the states a model folder's encoder gives for a fixed ramp of frames"""
    frames = (np.arange(4 * 32 * 32 * 3) % 251).astype(np.uint8).reshape(4, 32, 32, 3)
    return srl.loadSRLModel(folder).getState(frames)


def test_record_train_measure_load_as_the_commands_do(tinyData, tmp_path, capsys) -> None:
    assert tinyData.endswith(os.path.join("data", "tiny"))
    assert os.path.isfile(os.path.join(tinyData, "dataset_config.json"))
    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)
    generators = random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state().clone()
    threads = torch.get_num_threads()
    folder = srl.trainSRLModel(tinyData, "vae", state_dim=4, epochs=2, log_folder=str(tmp_path / "api"))
    scores = srl.evaluateSRLModel(folder, k=3)
    states = modelStates(folder)
    # the caller's generators and threads as they were (training and loading seed the global ones)
    assert random.getstate() == generators[0] and np.array_equal(np.random.get_state()[1], generators[1])
    assert torch.equal(torch.get_rng_state(), generators[2]) and torch.get_num_threads() == threads
    assert states.shape == (4, 4) and states.dtype == np.float32
    assert 0 <= scores.gtc <= 1 and len(scores.gtc_per_dimension) == 2 and scores.knn_mse > 0
    assert scores.probe_r2 is not None and scores.probe_skipped is None
    assert os.path.isfile(os.path.join(scores.output_folder, "gt_correlation.json"))
    # the command with the same flags trains the same model
    assert trainMain(["--data-folder", tinyData, "--srl-model", "vae", "--state-dim", "4", "--epochs", "2",
                      "--log-folder", str(tmp_path / "cli"), "--no-progress"]) == 0
    cli_folder = capsys.readouterr().out.strip().splitlines()[-1].removeprefix("Model folder: ")
    np.testing.assert_array_equal(modelStates(cli_folder), states)


@pytest.mark.parametrize(("call", "message"), [
    (lambda data, logs: srl.trainSRLModel(data, "vae", epoch=2, log_folder=logs),
     "unrecognized keyword epoch=2: the keywords are the long flags of python -m srl_models.train --help with _ for - "
     "(did you mean epochs?)"),
    (lambda data, logs: srl.trainSRLModel(data, "vae", no_progress=True, log_folder=logs),
     "unrecognized keyword no_progress=True: the API's keyword is progress=True or False"),
    (lambda data, logs: srl.trainSRLModel(data, "vae", epochs=0, log_folder=logs),
     "argument --epochs: '0' must be a positive integer"),
    (lambda data, logs: srl.trainSRLModel(data, "vae", state_dim=[4, 4], log_folder=logs),
     "argument --state-dim: '[4, 4]' is not an integer (1..4096)"),
    (lambda data, logs: srl.trainSRLModel(data, "pca", epochs=3, log_folder=logs),
     "--epochs 3: --srl-model pca trains no loss"),
    (lambda data, logs: srl.trainSRLModel(data, "vae", progress="yes", log_folder=logs),
     "progress 'yes' must be True or False"),
    (lambda data, logs: srl.recordDataset("NoSuchEnv-v0", save_path=logs), "unknown --env 'NoSuchEnv-v0'"),
    (lambda data, logs: srl.recordDataset("MobileRobotGymEnv-v0", num_episode=-1, save_path=logs),
     "argument --num-episode: '-1' must be a positive integer"),
    (lambda data, logs: srl.prepareSRLModels("MobileRobotGymEnv-v0", "pca", episode=3, log_folder=logs),
     "unrecognized keyword episode=3: the keywords are the long flags of python -m srl_models.prepare --help with _ "
     "for - (did you mean episodes?)"),
    (lambda data, logs: srl.prepareSRLModels("MobileRobotGymEnv-v0", "pca", force="yes", log_folder=logs),
     "force 'yes' must be True or False"),
    (lambda data, logs: srl.prepareSRLModels("MobileRobotGymEnv-v0", "nope", log_folder=logs, data_folder=logs),
     "nope"),
    (lambda data, logs: srl.evaluateSRLModel(data, k=3), "is not an SRL model folder"),
    (lambda data, logs: srl.evaluateSRLModel(logs, k="3"), "k '3' must be an integer >= 1"),
    # (the command it suggests runs with this interpreter, as every command the toolbox prints does)
    (lambda data, logs: srl.loadSRLModel(data),
     f"is not an SRL model folder (no exp_config.json); train one with {pythonCommand()} -m srl_models.train"),
    (lambda data, logs: srl.loadSRLModel(5), "model_folder 5 must be a folder's path"),
])
def test_bad_input_is_the_commands_one_line_and_nothing_written(tinyData, tmp_path, call, message) -> None:
    logs = str(tmp_path / "out")
    before = sorted(os.listdir(tinyData))
    with pytest.raises(srl.UsageError) as error:
        call(tinyData, logs)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert not os.path.exists(logs) and sorted(os.listdir(tinyData)) == before


def test_prepare_registers_the_models_for_the_runs(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rows = srl.prepareSRLModels("MobileRobotGymEnv-v0", ["pca"], episodes=2, state_dim=3, img_shape=[3, 32, 32],
                                renderer="sprites", num_cpu=1, srl_config_file="srl.yaml", random_target=False)
    assert [row["model"] for row in rows] == ["pca"] and not rows[0]["reused"]
    assert os.path.isdir(rows[0]["folder"]) and "pca" in (tmp_path / "srl.yaml").read_text()
    again = srl.prepareSRLModels("MobileRobotGymEnv-v0", "pca", episodes=2, state_dim=3, img_shape=[3, 32, 32],
                                 renderer="sprites", num_cpu=1, srl_config_file="srl.yaml")
    assert again[0]["reused"] and again[0]["folder"] == rows[0]["folder"]


def test_an_interrupted_recording_is_a_keyboard_interrupt(tmp_path, monkeypatch) -> None:
    # the commands end with exit code 130 after a Ctrl-C; from Python that is the KeyboardInterrupt itself
    monkeypatch.setattr(dataset_generator, "recordDataset", lambda config: None)
    with pytest.raises(KeyboardInterrupt):
        srl.recordDataset("MobileRobotGymEnv-v0", save_path=str(tmp_path), **TINY)

    def interrupted(argv):
        raise SystemExit(130)

    monkeypatch.setattr(prepare, "prepare", interrupted)
    with pytest.raises(KeyboardInterrupt):
        srl.prepareSRLModels("MobileRobotGymEnv-v0", "pca")


def test_package_exports_the_api_lazily() -> None:
    assert set(srl_models._API_NAMES) == set(srl.__all__)
    assert srl_models.trainSRLModel is srl.trainSRLModel and "loadSRLModel" in dir(srl_models)
    with pytest.raises(AttributeError):
        srl_models.noSuchName  # noqa: B018
    code = "import sys, srl_models.train; print('srl_models.api' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                         env={**os.environ, "PYTHONPATH": REPO})
    assert out.stdout.strip() == "False", out.stderr
