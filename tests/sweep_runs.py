"""What the pipeline's tests share: the tiny sweep they run, the check of one of its finished runs, and a sweep run
while the test goes on (its runs' processes found by their pid files)."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import threading
import time

import pytest
from conftest import runModule

from rl_baselines.sweeps.run_attempts import DONE_FILE, PID_FILE, finishedFolder

ENVS = ["MobileRobotGymEnv-v0", "MobileRobot1DGymEnv-v0"]
SRL_MODELS = ["ground_truth", "raw_pixels"]
# Tiny runs of one env: PPO rollouts of 128 steps x 3, one finished 250-step episode each; 36x36 is the CNN's smallest
# input.
TRAIN_FLAGS = ["--num-timesteps", "300", "--img-shape", "3", "36", "36", "--random-target", "--num-cpu", "1"]
SWEEP_TIMEOUT_S = 600


def checkFinishedRun(spec) -> str:
    """:return: the folder of ``spec``'s finished run, checked against the spec and the tiny sweep's flags"""
    folder = finishedFolder(spec)
    assert folder is not None, spec.label
    marker = json.load(open(os.path.join(folder, DONE_FILE)))
    assert marker["returncode"] == 0 and marker["run_id"] == spec.run_id and marker["spec"]["seed"] == spec.seed
    saved = json.load(open(os.path.join(folder, "args.json")))
    assert (saved["algo"], saved["env"], saved["srl_model"], saved["seed"], saved["tag"]) == (
        spec.algo, spec.env, spec.srl_model, spec.seed, spec.run_id)
    assert saved["no_vis"] and saved["num_timesteps"] == 300 and saved["random_target"]
    assert os.path.isfile(os.path.join(folder, "ppo2_model.zip"))
    assert not os.path.exists(os.path.join(folder, PID_FILE))
    return folder


def waitForFile(pattern: str, sweep: Sweep, timeout: float) -> str:
    """:return: the first file matching ``pattern`` once one appears while ``sweep`` runs (fails the test if not)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = glob.glob(pattern)
        if found:
            return found[0]
        assert sweep.is_alive(), "the pipeline ended before the run started"
        time.sleep(0.05)
    pytest.fail(f"{pattern} did not appear")


class Sweep(threading.Thread):
    """``python -m rl_baselines.pipeline args`` (forked from the warm interpreter: runModule) while the test goes on;
    ``result`` is the finished command once joined."""

    def __init__(self, *args: str) -> None:
        super().__init__(daemon=True)
        self.args, self.result = args, None

    def run(self) -> None:
        self.result = runModule("rl_baselines.pipeline", *self.args, timeout=SWEEP_TIMEOUT_S)

    def finish(self) -> subprocess.CompletedProcess:
        """:return: the finished command (after its timeout at most)"""
        self.join(SWEEP_TIMEOUT_S + 60)
        assert self.result is not None, "the pipeline did not finish"
        return self.result


def trainPid(pid_file: str) -> int:
    """:return: the pid in a run's pid file (written atomically: empty only if read before the rename)"""
    pid = ""
    while not pid:
        pid = open(pid_file).read().strip()
    return int(pid)
