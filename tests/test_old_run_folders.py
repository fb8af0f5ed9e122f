"""A run folder written by the first release (0.1.0) loads as it did: its args.json is upgraded once to the current
format, so the readers above the loader find every setting, and the run replays, evaluates and plans its resume.

``tests/data/run_0.1.0/ppo2_seed2`` was written by srl-toolbox 0.1.0 (ppo2 on MobileRobot's ground truth, stopped by
SIGTERM at 3,754 of 100,000 steps; the older checkpoints were removed to keep it small). Its args.json has no format
key and lacks the flags added since (``device``, ``force_down``, ``eval_freq``, ...) and records unset algorithm flags
as null.
"""
from __future__ import annotations

import argparse
import os
import shutil

import pytest
from conftest import runModule

from rl_baselines import api
from rl_baselines.core.registry import registered_rl
from rl_baselines.runs.resume import checkPlan, loadResumeArgs
from rl_baselines.runs.run_policy import readRunArgs
from rl_baselines.runs.train_checks import baseParser, validate
from rl_baselines.runs.train_config import (
    ARGS_FORMAT,
    ARGS_FORMAT_KEY,
    UPGRADES,
    TrainConfig,
    readArgsRecord,
    upgradeArgsRecord,
)
from srl_toolbox.cli import UsageError
from srl_toolbox.files import readJson

OLD_RUN = os.path.join(os.path.dirname(__file__), "data", "run_0.1.0", "ppo2_seed2")


@pytest.fixture
def old_run(tmp_path) -> str:
    """:return: a copy of the 0.1.0 run folder (loading may write, the committed one stays as it is)"""
    copy = tmp_path / "ppo2_seed2"
    shutil.copytree(OLD_RUN, copy)
    return str(copy)


def test_the_committed_folder_is_of_the_first_format() -> None:
    saved = readJson(os.path.join(OLD_RUN, "args.json"))
    assert ARGS_FORMAT_KEY not in saved
    missing = set(TrainConfig.flagFields()) - set(saved)
    assert {"device", "force_down", "eval_freq", "srl_ground_truth_scale"} <= missing


def test_the_loader_fills_every_setting_once(old_run) -> None:
    saved = readJson(os.path.join(old_run, "args.json"))
    record = readArgsRecord(old_run)
    assert record[ARGS_FORMAT_KEY] == ARGS_FORMAT
    assert set(TrainConfig.flagFields()) <= set(record)
    assert record["device"] == "cpu"  # what 0.1.0 trained on (it had no --device)
    assert not record["force_down"] and record["eval_freq"] == 0 and not record["srl_ground_truth_scale"]
    assert {key: record[key] for key in saved} == saved  # what the run recorded is kept as it was
    assert upgradeArgsRecord(record) == record  # upgrading is done once: a current record is left as it is
    config = TrainConfig.fromRecord(saved)
    assert (config.algo, config.seed, config.num_timesteps, config.device) == ("ppo2", 2, 100000, "cpu")
    assert config.hp_n_steps is None and config.lr_schedule == "constant"  # the algorithm's own flags, as extra
    args = readRunArgs(old_run, "--log-dir")
    assert isinstance(args, argparse.Namespace) and args.device == "cpu" and args.num_stack == 1


def test_a_newer_format_is_refused_in_one_line(old_run) -> None:
    with pytest.raises(ValueError, match="format 99"):
        upgradeArgsRecord({**readJson(os.path.join(old_run, "args.json")), ARGS_FORMAT_KEY: 99})
    with pytest.raises(ValueError, match="not a mapping"):
        upgradeArgsRecord(["algo", "ppo2"])


def test_the_old_run_replays_and_evaluates(old_run, tmp_path) -> None:
    loaded = api.loadRun(old_run)
    assert loaded.args.srl_model == "ground_truth" and loaded.model.num_timesteps > 0
    evaluation = api.evaluateAgent(loaded, episodes=1)
    assert len(evaluation.episode_rewards) == 1
    result = runModule("replay.enjoy_baselines", "--log-dir", old_run, "--num-timesteps", "30", "--deterministic")
    assert result.returncode == 0, result.stderr


def test_the_old_run_plans_its_resume(old_run) -> None:
    args, plan = loadResumeArgs(["--resume", old_run], registered_rl, baseParser)
    assert plan.state == "resume" and plan.num_timesteps == 3754 and plan.target_timesteps == 100000
    config = validate(args, registered_rl)
    checkPlan(plan, config, registered_rl["ppo2"][0])  # the checkpoint matches the run: nothing refused
    assert config.device == "cpu" and config.argsRecord()[ARGS_FORMAT_KEY] == ARGS_FORMAT
    assert config.num_timesteps == 100000 and config.seed == 2


def test_a_damaged_args_json_is_a_one_line_error(old_run) -> None:
    with open(os.path.join(old_run, "args.json"), "w", encoding="utf-8") as handle:
        handle.write('{"algo": "ppo2", "args_format": "two"}')
    with pytest.raises(UsageError, match="args.json"):
        loadResumeArgs(["--resume", old_run], registered_rl, baseParser)
    with pytest.raises(ValueError, match="args.json"):
        readRunArgs(old_run, "--log-dir")


def test_every_setting_is_in_the_current_format_or_an_upgrade() -> None:
    """A setting added to TrainConfig without an upgrade rule would leave older args.json files without it: adding
    one means raising ARGS_FORMAT and saying, in UPGRADES, which value reproduces the runs written before."""
    first_release = set(readJson(os.path.join(OLD_RUN, "args.json")))
    added = set(TrainConfig.flagFields()) - first_release
    upgraded = set().union(*UPGRADES.values())
    assert added <= upgraded, f"settings without an upgrade rule: {sorted(added - upgraded)}"
    with pytest.raises(ValueError, match="lacks seed"):
        upgradeArgsRecord({key: value for key, value in readJson(os.path.join(OLD_RUN, "args.json")).items()
                           if key != "seed"})
