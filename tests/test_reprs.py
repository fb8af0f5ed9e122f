"""The Python API's result objects have short reprs: what they hold at a glance, not every setting."""
from __future__ import annotations

import argparse

import numpy as np

from replay.api import ResultsTable, RunCurve
from rl_baselines.api import RunConfig, SweepResult
from rl_baselines.runs.loaded_run import LoadedRun
from rl_baselines.runs.train_config import TrainConfig, TrainResult


class FakeModel:
    def __repr__(self) -> str:
        return "<a long model repr> " * 50


def test_train_config_repr_names_the_run_and_what_differs_from_the_defaults():
    assert repr(TrainConfig()) == "TrainConfig(algo='ppo2', env='KukaButtonGymEnv-v0', srl_model='raw_pixels')"
    config = TrainConfig(env="MobileRobotGymEnv-v0", srl_model="ground_truth", num_timesteps=256, seed=3,
                         hyperparams={"n_steps": 64}, env_kwargs={"renderer": "sprites"}, start_timesteps=10,
                         extra={"hp_n_steps": None, "lr_schedule": "linear"}, run_dir="/runs/a")
    assert repr(config) == ("TrainConfig(algo='ppo2', env='MobileRobotGymEnv-v0', srl_model='ground_truth', seed=3, "
                            "num_timesteps=256, hyperparams={'n_steps': 64}, extra={'lr_schedule': 'linear'}, "
                            "start_timesteps=10)")


def test_train_result_repr_names_the_model_by_its_type():
    result = TrainResult(0, "/runs/a", FakeModel(), 256, 1.5, TrainConfig(seed=2))
    assert repr(result) == ("TrainResult(exit_code=0, run_dir='/runs/a', num_timesteps=256, mean_reward=1.5, "
                            "model=FakeModel, args=TrainConfig(algo='ppo2', env='KukaButtonGymEnv-v0', "
                            "srl_model='raw_pixels', seed=2))")
    assert "model=None" in repr(TrainResult(0, "/runs/a", None, 0, float("nan"), TrainConfig()))


def test_run_config_repr_is_its_command():
    config = RunConfig(TrainConfig(seed=1), ("--seed", "1"))
    assert repr(config) == "RunConfig(command='python -m rl_baselines.train --seed 1')"
    resumed = RunConfig(TrainConfig(), ("--resume", "/runs/a"), plan=argparse.Namespace(run_dir="/runs/a"))
    assert repr(resumed).endswith(", resumes='/runs/a')")


def test_loaded_run_repr_leaves_the_arguments_out():
    args = argparse.Namespace(algo="sac", env="MobileRobotGymEnv-v0", srl_model="vae",
                              **{f"setting{i}": i for i in range(50)})
    loaded = LoadedRun("/runs/a", args, object, FakeModel(), "/runs/a/best", "/srl/vae", checkpoint_steps=None)
    assert repr(loaded) == ("LoadedRun(run_dir='/runs/a', algo='sac', env='MobileRobotGymEnv-v0', srl_model='vae', "
                            "model_folder='/runs/a/best', checkpoint_steps=None)")


def test_sweep_result_repr_counts_the_runs_by_state():
    runs = [{"state": "done", "run_folder": "/s/1"}, {"state": "done", "run_folder": "/s/2"},
            {"state": "failed", "run_folder": None}]
    assert repr(SweepResult(1, "/s/sweep_x.json", runs)) == ("SweepResult(exit_code=1, log_dir='/s', "
                                                             "runs=<3: 2 done, 1 failed>)")


def test_results_table_shows_its_markdown_in_notebooks_and_print():
    table = ResultsTable([{"env": "E"}, {"env": "F"}], "| a |\n|---|\n| 1 |\n", ("/r/1",))
    assert repr(table) == "ResultsTable(rows=<2 rows>, run_dirs=<1 run>, files=())"
    assert str(table) == table._repr_markdown_() == "| a |\n|---|\n| 1 |\n"


def test_run_curve_repr_counts_episodes_and_evaluations():
    steps = np.arange(1, 301)
    curve = RunCurve("/runs/a", {"algo": "ppo2", "big": list(range(100))}, steps, steps * 1.0, steps, steps * 1.0,
                     np.array([100, 200]), np.array([1.0, 2.0]), True)
    assert repr(curve) == ("RunCurve(run_dir='/runs/a', episodes=300, last_episode_end=300, evaluations=2, "
                           "finished=True)")
    empty = RunCurve("/runs/b", {}, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), None, None, False)
    assert repr(empty) == ("RunCurve(run_dir='/runs/b', episodes=0, last_episode_end=None, evaluations=None, "
                           "finished=False)")
