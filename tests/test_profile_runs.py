"""benchmarks.profile_runs: how py-spy's stacks of a training run are sorted into categories."""
from __future__ import annotations

import time

import pytest

from benchmarks.profile_runs import (
    CASES,
    CATEGORIES,
    categorise,
    envsText,
    machineBusySeconds,
    readProfile,
    trainArguments,
)
from rl_baselines.rl_algorithm.ppo2 import PPO2Model

MAIN = 'process 1:"python -m rl_baselines.train"'
LEARN = (f"{MAIN};<module> (rl_baselines/train.py:5);"
         "OnPolicyAlgorithm.learn (stable_baselines3/common/on_policy_algorithm.py:337)")
WORKER = (f'{MAIN};process 2:"python -c from multiprocessing.forkserver import main";'
          "_worker (stable_baselines3/common/vec_env/subproc_vec_env.py:33)")


@pytest.mark.parametrize("stack, category", [
    (f"{MAIN};<module> (rl_baselines/train.py:5);_find_and_load (<frozen importlib._bootstrap>:1176)", "start-up"),
    (f"{LEARN};PPO.train (stable_baselines3/ppo/ppo.py:219);backward (torch/autograd/__init__.py:395)", "PPO update"),
    (f"{LEARN};collect_rollouts (stable_baselines3/common/on_policy_algorithm.py:190);"
     "SRLEncoderVecEnv.encode (rl_baselines/envs/srl_encoder.py:80);Conv2d.forward (torch/nn/modules/conv.py:565)",
     "encode"),
    (f"{WORKER};WorkerEncoder.observation (rl_baselines/envs/srl_encoder.py:150);"
     "LearnedSRLModel.getState (srl_models/models.py:110)", "encode"),
    (f"{LEARN};Evaluator.evaluate (rl_baselines/runs/evaluation.py:200);"
     "MobileRobotGymEnv._cameraImage (environments/mobile_robot/mobile_robot_env.py:273)", "evaluation"),
    (f"{WORKER};MobileRobotGymEnv.step (environments/mobile_robot/mobile_robot_env.py:320);"
     "SpriteRenderer._paste (environments/mobile_robot/sprite_renderer.py:251)", "render"),
    (f"{WORKER};KukaButtonGymEnv.step (environments/kuka/kuka_button_env.py:350)", "physics"),
    (f"{WORKER};_ConnectionBase.recv (multiprocessing/connection.py:251)", "inter-process"),
    (f"{LEARN};Monitor.step (stable_baselines3/common/monitor.py:95)", "logging"),
    (f"{LEARN};collect_rollouts (stable_baselines3/common/on_policy_algorithm.py:180);"
     "ActorCriticPolicy.forward (stable_baselines3/common/policies.py:640)", "policy forward"),
    (f"{LEARN};RolloutBuffer.add (stable_baselines3/common/buffers.py:480)", "other"),
    (f"{MAIN};_bootstrap (threading.py:1002);_worker (concurrent/futures/thread.py:83);"
     "_withGradients (rl_baselines/rl_algorithm/sharded_features.py:61);Conv2d.forward (torch/nn/modules/conv.py:565)",
     "PPO update"),  # a shard's thread of ppo2's pixel update
])
def test_stacks_go_to_their_category(stack, category):
    assert category in CATEGORIES
    assert categorise(stack) == category


def test_a_raw_profile_is_summed_by_category(tmp_path):
    path = tmp_path / "profile.txt"
    path.write_text(f"{LEARN};PPO.train (stable_baselines3/ppo/ppo.py:219) 7\n"
                    f"{LEARN};PPO.train (stable_baselines3/ppo/ppo.py:230) 3\n"
                    f"{MAIN};<module> (rl_baselines/train.py:5) 5\n")
    assert readProfile(str(path)) == {"PPO update": 10, "start-up": 5}


def test_runs_are_profiled_at_ppo2s_default_envs_unless_told():
    case = CASES["mobile-raw"]
    default = trainArguments(case, "sprites", 4096, "/tmp/runs", None)
    assert "--num-cpu" not in default  # as a user leaves it: ppo2's DEFAULT_ENVS and its vec env
    assert envsText(None).startswith(f"{PPO2Model.DEFAULT_ENVS} envs (its default")
    told = trainArguments(case, "sprites", 4096, "/tmp/runs", None, 1)
    assert told[told.index("--num-cpu") + 1] == "1"
    assert envsText(1) == "1 env" and envsText(2) == "2 envs (--num-cpu 2)"


def test_the_machines_busy_time_is_read_from_proc_stat_and_grows_with_work():
    before = machineBusySeconds()
    assert before is not None and before > 0  # Linux: /proc/stat
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:  # 0.3 s of this process's CPU
        pass
    assert machineBusySeconds() - before >= 0.2  # clock ticks of 10 ms: counted in whole ticks
