"""``train --resume`` of a run on a trained SRL model whose folder moved since the run stopped.

``--srl-model-path`` gives the model's new folder: it is checked against the hash the run recorded in srl_model.json
(another model is refused in one line naming both hashes, nothing written), the run goes on as the uninterrupted one,
and args.json and srl_model.json then record the new folder, so that replay and a later ``--resume`` find the model
without the flag (a finished run's records too, with nothing trained). Without the flag, a model gone from its
recorded folder is refused in one line naming it.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil

import numpy as np
import pytest
from conftest import interruptedRun, snapshot

from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from replay import enjoy_baselines
from rl_baselines import api as rl_api
from rl_baselines.runs import train
from rl_baselines.runs.train_config import TrainConfig
from srl_models.base import EXP_CONFIG_FILE, modelHash
from srl_models.pca import PCAModel
from srl_toolbox.cli import UsageError

ENV_ID = "MobileRobotGymEnv-v0"
SMALL = (3, 32, 32)


def _fittedPCA(folder: str) -> str:
    """:return: ``folder``, holding a PCA (32 numbers) of 40 frames of the env played with random actions"""
    env, frames = MobileRobotGymEnv(srl_model="pca", img_shape=SMALL, max_steps=20), []
    frame, _ = env.reset(seed=0)
    for action in np.random.default_rng(0).integers(4, size=40):
        frames.append(frame)
        frame, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            frame, _ = env.reset()
    env.close()
    model = PCAModel(32, SMALL, {"env": ENV_ID, "renderer": "sprites"})
    model.fit(np.asarray(frames))
    model.save(folder)
    return folder


def _progressRows(run_dir: str) -> list[dict[str, str]]:
    """:return: the run's progress.csv rows, without their wall-clock columns"""
    with open(os.path.join(run_dir, "progress.csv"), encoding="utf-8") as handle:
        return [{name: value for name, value in row.items() if name not in ("time/fps", "time/time_elapsed")}
                for row in csv.DictReader(handle)]


def _readJson(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def test_a_run_whose_srl_model_moved_resumes_from_its_new_folder(tmp_path, monkeypatch):
    """One env, episodes of 250 steps, stopped at 600 after the checkpoint at 500 (as the learned-state resume test of
    tests/test_srl_rl.py): the resumed run's progress.csv is the uninterrupted run's."""
    model = _fittedPCA(str(tmp_path / "model"))
    args = ["--env", ENV_ID, "--srl-model-path", model, "--algo", "ppo2", "--seed", "1", "--num-cpu", "1",
            "--num-timesteps", "625", "--checkpoint-freq", "500", "--hyperparam", "n_steps:125", "batch_size:125"]
    reference = train.trainCommand(["--no-vis", "--no-progress", "--log-dir", str(tmp_path / "reference"), *args])
    assert reference.exit_code == 0
    run_dir = interruptedRun(monkeypatch, str(tmp_path / "stopped"), args, at_step=600)
    moved = shutil.move(model, str(tmp_path / "moved"))
    other = shutil.copytree(moved, str(tmp_path / "other"))
    with open(os.path.join(other, EXP_CONFIG_FILE), "a") as handle:
        handle.write("\n")  # same settings, other bytes: another model
    before = snapshot(run_dir)
    gone = rf"SRL model folder '{re.escape(model)}' does not exist; moved\? give its new folder with --srl-model-path$"
    with pytest.raises(UsageError, match=gone):
        train.main(["--resume", run_dir])
    hashes = rf"\(hash {modelHash(other)[:12]}, run recorded {modelHash(moved)[:12]}\)"
    with pytest.raises(UsageError, match=rf"'{re.escape(other)}' is not the run's pca model '{re.escape(model)}': its "
                                         rf"files differ {hashes}"):
        train.main(["--resume", run_dir, "--srl-model-path", other])
    with pytest.raises(UsageError, match=hashes):  # the Python API passes it on
        rl_api.makeConfig(resume=run_dir, srl_model_path=other)
    assert snapshot(run_dir) == before
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress", "--srl-model-path", moved]) == 0
    assert len(_progressRows(reference.run_dir)) == 5 and _progressRows(run_dir) == _progressRows(reference.run_dir)
    # the run records where the model is now: replay and a later --resume find it without the flag
    assert _readJson(os.path.join(run_dir, "args.json"))["srl_model_path"] == moved
    record = _readJson(os.path.join(run_dir, "srl_model.json"))
    assert record["path"] == moved and record["hash"] == modelHash(moved)
    assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10"]) == 0
    assert train.main(["--resume", run_dir, "--no-vis"]) == 0  # finished: nothing to resume


def test_the_new_folder_is_refused_for_a_run_without_a_trained_srl_model(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "args.json").write_text(json.dumps(TrainConfig(algo="ppo2", env=ENV_ID,
                                                              srl_model="ground_truth").argsRecord()))
    before = snapshot(str(run_dir))
    with pytest.raises(UsageError, match=r"--srl-model-path .*: the run in '.*' observed ground_truth, not a trained "
                                         r"SRL model; leave the flag out$"):
        train.main(["--resume", str(run_dir), "--srl-model-path", str(tmp_path)])
    assert snapshot(str(run_dir)) == before


def test_a_finished_run_records_the_new_folder_of_its_srl_model(tmp_path, capsys):
    """Nothing to resume, but the moved model's folder is recorded as for a stopped run: replay and a later --resume
    find it without the flag (before, the flag was checked and dropped, and the run kept refusing without it)."""
    model = _fittedPCA(str(tmp_path / "model"))
    result = train.trainCommand(["--no-vis", "--no-progress", "--log-dir", str(tmp_path / "logs"), "--env", ENV_ID,
                                 "--srl-model-path", model, "--algo", "ppo2", "--num-cpu", "1", "--num-timesteps",
                                 "128", "--hyperparam", "n_steps:64", "batch_size:64"])
    assert result.exit_code == 0
    run_dir, moved = result.run_dir, shutil.move(model, str(tmp_path / "moved"))
    with pytest.raises(UsageError, match="give its new folder with --srl-model-path$"):
        train.main(["--resume", run_dir])
    capsys.readouterr()
    assert train.main(["--resume", run_dir, "--no-vis", "--srl-model-path", moved]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        f"SRL model: now in {moved} (same files); args.json and srl_model.json record it",
        "Already finished (128 steps): nothing to resume"]
    assert _readJson(os.path.join(run_dir, "args.json"))["srl_model_path"] == moved
    assert _readJson(os.path.join(run_dir, "srl_model.json"))["path"] == moved
    assert train.main(["--resume", run_dir, "--no-vis"]) == 0
    assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10"]) == 0
