"""Training-time outputs put an episode at the run's step count when it ended, all envs together (its env's own step
count times the envs, as ``num_timesteps``, ``--eval-freq`` and the results tools count), not at the sum of the
lengths of the episodes finished before it: the tensorboard / progress episodes, the live plots, learning_curve.png
and the sweep's live plots. With one env both are the same."""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
from conftest import trainHere

from rl_baselines.runs import train_loop
from rl_baselines.runs.monitor_files import MonitorTail, runEnvs
from rl_baselines.runs.run_logging import RunLogger
from rl_baselines.runs.training_callbacks import EpisodeFeed, LivePlotCallback, RefreshCallback, ScalarLogCallback
from rl_baselines.sweeps.plots import SweepCurves
from rl_baselines.sweeps.search_trials import trialRun
from rl_baselines.sweeps.sweep import RunSpec

LENGTH = 10


def _writeMonitors(monitor_dir: str, episodes_per_env: list[int]) -> None:
    """One monitor file per env, each of ``LENGTH``-step episodes."""
    os.makedirs(monitor_dir, exist_ok=True)
    for env, episodes in enumerate(episodes_per_env):
        with open(os.path.join(monitor_dir, f"{env}.monitor.csv"), "w", encoding="utf-8") as handle:
            handle.write('#{"t_start": 0.0, "env_id": "Fake-v0"}\nr,l,t\n')
            handle.writelines(f"{index}.0,{LENGTH},{index + 1.0}\n" for index in range(episodes))


class _Logger:
    def __init__(self) -> None:
        self.steps: list[int] = []

    def startClock(self, step: int) -> None:
        pass

    def logEpisodes(self, timesteps: Any, rewards: list, lengths: list) -> None:
        self.steps = [int(step) for step in timesteps]

    def dumpPending(self) -> None:
        pass


class _Plotter:
    def __init__(self) -> None:
        self.steps: list[int] = []

    def update(self, timesteps: Any, rewards: list) -> None:
        self.steps = [int(step) for step in timesteps]


def test_with_two_envs_the_logged_and_plotted_episodes_are_at_the_runs_step(tmp_path):
    """Two envs, two 10-step episodes each: they ended at the run's steps 20, 20, 40, 40 (their env's 10th and 20th
    steps); the sum of the lengths put them at 10, 20, 30, 40."""
    _writeMonitors(str(tmp_path / "monitor"), [2, 2])
    feed = EpisodeFeed(str(tmp_path / "monitor"), num_envs=2)
    logger, plotter = _Logger(), _Plotter()
    RefreshCallback(feed, 1, 0, [ScalarLogCallback(logger, feed), LivePlotCallback(plotter, feed)]).refreshAt(
        40, closing=True)
    assert logger.steps == plotter.steps == [20, 20, 40, 40]
    assert list(feed.steps) == [2 * LENGTH, 2 * LENGTH, 4 * LENGTH, 4 * LENGTH]


def test_with_one_env_the_steps_are_the_sum_of_the_lengths_as_before(tmp_path):
    _writeMonitors(str(tmp_path / "monitor"), [3])
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    feed.poll()
    assert list(feed.steps) == list(feed.monitor.timesteps) == [10, 20, 30]
    tail = MonitorTail(str(tmp_path / "monitor"))
    tail.poll()
    assert list(tail.runSteps(1)) == list(tail.runSteps(None)) == [10, 20, 30]
    tail.close()


def test_the_sweeps_live_plots_count_the_envs_of_the_runs_args_json(tmp_path):
    spec = RunSpec("ppo2", "Fake-v0", "ground_truth", 0, (), "abc", str(tmp_path))
    run_dir = os.path.join(spec.parent, f"01-01-26_00h00_00_{spec.run_id}")
    _writeMonitors(os.path.join(run_dir, "monitor"), [1, 1])
    with open(os.path.join(run_dir, "args.json"), "w", encoding="utf-8") as handle:
        json.dump({"num_cpu": 2}, handle)
    sent = []

    class Plotter:
        enabled = True

        def updateCurve(self, env: str, srl_model: str, name: str, timesteps: Any, rewards: Any) -> None:
            sent.append([int(step) for step in timesteps])

    curves = SweepCurves(Plotter())
    curves.refresh([spec])
    curves.close()
    assert sent == [[20, 20]]  # (the sum of the lengths: 10, 20)


def test_a_search_trials_steps_count_ppo1s_processes_from_its_args_json(tmp_path):
    """The pruner's steps were the envs of --num-cpu alone: a ppo1 trial with --num-workers 2 put each episode at
    half the run's step."""
    assert trialRun(str(tmp_path)) is None  # train has not written args.json yet
    run_dir = tmp_path / "Fake-v0" / "ground_truth" / "ppo1" / "run"
    run_dir.mkdir(parents=True)
    (run_dir / "args.json").write_text(json.dumps({"num_cpu": 2, "num_workers": 2}))
    assert trialRun(str(tmp_path)) == (str(run_dir), 4)


def test_runEnvs_counts_ppo1s_processes():
    assert runEnvs({"num_cpu": 2, "num_workers": 3}) == 6 and runEnvs({"num_cpu": 2, "world_size": 4}) == 8
    assert runEnvs({}) == runEnvs({"num_cpu": True}) == runEnvs({"num_cpu": None}) == 1


def test_a_two_env_runs_learning_curve_and_logged_episodes_are_at_the_runs_step(tmp_path, monkeypatch):
    """A tiny run with --num-cpu 2: learning_curve.png and the logged episodes (tensorboard, progress) put each
    episode at its env's own step count times 2."""
    curves, logged = [], []
    original_save, original_log = train_loop.saveLearningCurve, RunLogger.logEpisodes

    def saveLearningCurve(timesteps: Any, *args: Any, **kwargs: Any) -> None:
        curves.append(np.asarray(timesteps).tolist())
        original_save(timesteps, *args, **kwargs)

    def logEpisodes(self: RunLogger, timesteps: Any, rewards: list, lengths: list) -> None:
        logged.append(np.asarray(timesteps).tolist())
        original_log(self, timesteps, rewards, lengths)

    monkeypatch.setattr(train_loop, "saveLearningCurve", saveLearningCurve)
    monkeypatch.setattr(RunLogger, "logEpisodes", logEpisodes)
    run_dir = trainHere("--algo", "random_agent", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                        "--num-cpu", "2", "--num-timesteps", "1000", "--log-dir", tmp_path)
    # each env's own step count at each of its episodes' ends, times the 2 envs, in the order they ended
    ends = []
    for env in (0, 1):
        with open(os.path.join(run_dir, "monitor", f"{env}.monitor.csv"), encoding="utf-8") as handle:
            lengths = [int(line.split(",")[1]) for line in handle.read().splitlines()[2:]]
        ends += [(int(step), env) for step in np.cumsum(lengths)]
    expected = [2 * step for step, _ in sorted(ends)]
    assert len(expected) >= 2 and curves == [expected] and logged[-1] == expected
