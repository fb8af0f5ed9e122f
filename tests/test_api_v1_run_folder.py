"""A run folder and checkpoint written under plugin API version 1 load, replay and resume under version 2: the
manifests record ``api_version: 1`` and the version check accepts what the algorithm's version and the earlier ones
wrote (a newer one is refused in one line).

``tests/data/run_api_v1/ppo2_seed3`` was written by srl-toolbox at commit 54256c4, the last of API version 1, with::

    python -m rl_baselines.train --algo ppo2 --env MobileRobotGymEnv-v0 --srl-model ground_truth \\
        --num-timesteps 5000 --checkpoint-freq 250 --hyperparam n_steps:125 batch_size:25 n_epochs:2 \\
        --no-vis --no-progress --seed 3 --tag v1

stopped by SIGTERM at 860 steps (its checkpoint ``checkpoints/860_steps``; the older checkpoints and the
learning-curve image were removed to keep it small).
"""
from __future__ import annotations

import os
import shutil

import pytest
from conftest import runModule

from rl_baselines import api
from rl_baselines.core.checkpointing import CheckpointError, checkManifest, readManifest
from rl_baselines.core.registry import registered_rl
from rl_baselines.runs import train
from rl_baselines.runs.monitor_files import loadEpisodes
from rl_baselines.runs.resume import loadResumeArgs
from rl_baselines.runs.train_checks import baseParser
from srl_toolbox.files import readJson

V1_RUN = os.path.join(os.path.dirname(__file__), "data", "run_api_v1", "ppo2_seed3")
CHECKPOINT = os.path.join(V1_RUN, "checkpoints", "860_steps")


@pytest.fixture
def v1_run(tmp_path) -> str:
    """:return: a copy of the committed version 1 run folder (resuming writes into it)"""
    copy = tmp_path / "ppo2_seed3"
    shutil.copytree(V1_RUN, copy)
    return str(copy)


def test_the_committed_folder_was_written_under_api_version_1() -> None:
    assert registered_rl["ppo2"][0].API_VERSION == 2
    for folder in (V1_RUN, CHECKPOINT):
        assert readJson(os.path.join(folder, "manifest.json"))["api_version"] == 1
    manifest = readManifest(CHECKPOINT)
    checkManifest(manifest, CHECKPOINT, "ppo2", 2)  # accepted by a version 2 class
    with pytest.raises(CheckpointError, match="API version 3"):  # a newer version is refused in one line
        checkManifest({**manifest, "api_version": 3}, CHECKPOINT, "ppo2", 2, check_files=False)


def test_the_v1_run_loads_and_replays(v1_run) -> None:
    loaded = api.loadRun(v1_run)
    assert loaded.model.num_timesteps == 860 and loaded.args.seed == 3
    evaluation = api.evaluateAgent(loaded, episodes=1)
    assert len(evaluation.episode_rewards) == 1
    result = runModule("replay.enjoy_baselines", "--log-dir", v1_run, "--num-timesteps", "30", "--deterministic")
    assert result.returncode == 0, result.stderr


def test_the_v1_run_resumes_to_its_end(v1_run, capsys) -> None:
    args, plan = loadResumeArgs(["--resume", v1_run], registered_rl, baseParser)
    assert plan.state == "resume" and plan.num_timesteps == 860 and plan.target_timesteps == 5000
    capsys.readouterr()
    assert train.main(["--resume", v1_run, "--no-vis", "--no-progress"]) == 0
    out = capsys.readouterr().out
    # what the code of API version 1 (commit 54256c4) prints resuming this folder: the same run, step for step
    # (rollouts of 125 steps from 860 end at 5110)
    assert "Done: 5110 steps, 20 episodes, mean reward (last 100) -8.45" in out
    manifest = readJson(os.path.join(v1_run, "manifest.json"))
    assert manifest["num_timesteps"] == 5110 and manifest["api_version"] == 2  # saved by the version 2 class
    episodes = loadEpisodes(os.path.join(v1_run, "monitor"))
    assert len(episodes["lengths"]) == 20 and sum(episodes["lengths"]) == 5000  # the version 1 rows kept
    assert registered_rl["ppo2"][0].load(os.path.join(v1_run, "ppo2_model.zip")).num_timesteps == 5110
