"""RunFolder owns the names of a run folder's files: the train command writes them, the readers find them."""
from __future__ import annotations

import datetime
import os
import re

from conftest import runFolder, runTrain

from rl_baselines.core import run_folder
from rl_baselines.core.run_folder import RunFolder, newStamp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_paths_and_stamp() -> None:
    run = RunFolder("/logs/env/gt/ppo2/run")
    assert run.args_file == "/logs/env/gt/ppo2/run/args.json"
    assert run.monitor_dir == "/logs/env/gt/ppo2/run/monitor"
    assert run.evaluations_file.endswith("/evaluations.npz") and run.srl_model_file.endswith("/srl_model.json")
    assert newStamp(datetime.datetime(2026, 11, 24, 1, 2, 3)) == "26-11-24_01h02_03"


def test_a_trained_run_is_a_run_folder(tmp_path) -> None:
    result = runTrain("--algo", "random_agent", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                      "--num-timesteps", "300", "--log-dir", tmp_path)
    run_dir = runFolder(result)
    run = RunFolder(run_dir)
    assert RunFolder.isRun(run_dir) and not RunFolder.isRun(os.path.dirname(run_dir))
    for path in (run.args_file, run.env_globals_file, run.learning_curve_file):
        assert os.path.isfile(path), path
    assert re.fullmatch(r"\d\d-\d\d-\d\d_\d\dh\d\d_\d\d_seed0", os.path.basename(run_dir))


def test_no_module_spells_the_file_names_itself() -> None:
    """A name changes in one line: the RL, replay and benchmark modules ask RunFolder (or its constants) for every
    path."""
    names = [run_folder.ARGS_FILE, run_folder.ENV_GLOBALS_FILE, run_folder.PROGRESS_FILE, run_folder.EVALUATIONS_FILE,
             run_folder.HYPERPARAMS_FILE, run_folder.LEARNING_CURVE_FILE, run_folder.STAMP_FORMAT,
             run_folder.DAMAGED_CHECKPOINTS_DIR]
    offenders = []
    for package in ("rl_baselines", "replay", "benchmarks"):
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                path = os.path.join(folder, name)
                if not name.endswith(".py") or path == run_folder.__file__:
                    continue
                text = open(path, encoding="utf-8").read()
                offenders += [f"{os.path.relpath(path, ROOT)}: {spelled}" for spelled in names
                              if f'"{spelled}"' in text or f"'{spelled}'" in text]
    assert not offenders, offenders
