"""What the pipeline's tests share: the tiny sweep they run and the check of one of its finished runs."""
from __future__ import annotations

import json
import os

from rl_baselines.sweeps.run_attempts import DONE_FILE, PID_FILE, finishedFolder

ENVS = ["MobileRobotGymEnv-v0", "MobileRobot1DGymEnv-v0"]
SRL_MODELS = ["ground_truth", "raw_pixels"]
# Tiny runs: one PPO rollout of 128 steps x 3, one finished 250-step episode each; 36x36 is the CNN's smallest input.
TRAIN_FLAGS = ["--num-timesteps", "300", "--img-shape", "3", "36", "36", "--random-target"]
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
