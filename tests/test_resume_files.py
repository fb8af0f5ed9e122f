"""The files a resume reads and writes, piece by piece: replay buffers, the global RNGs and CMA-ES's state round
trip; atomic paths; progress.csv and the monitor files of a continued run; the default checkpoint interval. Whole runs
killed, stopped and resumed: tests/test_resume.py."""
from __future__ import annotations

import csv
import errno
import json
import os
import random

import cma
import gymnasium as gym
import numpy as np
import pytest
import stable_baselines3.common.logger as sb3_logger
import torch
from cma.utilities.utils import ElapsedWCTime
from stable_baselines3.common.buffers import DictReplayBuffer

from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from rl_baselines.core.training_state import (
    captureGlobalRNG,
    captureObjectState,
    keepFirstLines,
    loadBuffer,
    progressLogger,
    restoreGlobalRNG,
    restoreObjectState,
    saveBuffer,
)
from rl_baselines.envs import wrappers
from rl_baselines.envs.wrappers import openMonitor
from rl_baselines.runs.monitor_files import loadEpisodes
from rl_baselines.runs.train_loop import checkpointInterval
from srl_toolbox.files import atomicPath


def test_replay_buffers_rng_and_cma_state_round_trip(tmp_path):
    space = gym.spaces.Dict({"observation": gym.spaces.Box(-1, 1, (3,)), "goal": gym.spaces.Box(-1, 1, (2,))})
    buffer = DictReplayBuffer(10, space, gym.spaces.Discrete(4), n_envs=2)
    rng = np.random.default_rng(0)
    for _ in range(7):
        observation = {key: rng.random((2, *sub.shape)).astype(np.float32) for key, sub in space.spaces.items()}
        buffer.add(observation, observation, rng.integers(0, 4, (2, 1)), rng.random(2), np.array([False, True]),
                   [{}, {"TimeLimit.truncated": True}])
    buffer.infos = np.array([[{"bumped": bool(i % 2), "terminal_observation": np.arange(3.0)}] * 2 for i in range(5)])
    assert buffer.full  # 7 transitions per env in 5 places
    saveBuffer(buffer, str(tmp_path / "buffer"), buffer.buffer_size, buffer.buffer_size if buffer.full else buffer.pos)
    restored = DictReplayBuffer(10, space, gym.spaces.Discrete(4), n_envs=2)
    restored.infos = np.array([[{} for _ in range(2)] for _ in range(5)])
    assert loadBuffer(restored, str(tmp_path / "buffer"), restored.buffer_size) == 5
    assert restored.pos == buffer.pos and restored.full == buffer.full
    for key in space.spaces:
        np.testing.assert_array_equal(restored.observations[key], buffer.observations[key])
    np.testing.assert_array_equal(restored.actions, buffer.actions)
    np.testing.assert_array_equal(restored.infos[3, 1]["terminal_observation"], np.arange(3.0))
    assert restored.infos[3, 1]["bumped"] is True
    with pytest.raises(ValueError, match="holds 5 transitions"):
        loadBuffer(DictReplayBuffer(12, space, gym.spaces.Discrete(4), n_envs=2), str(tmp_path / "buffer"), 6)

    state = captureGlobalRNG()
    expected = (np.random.random(), torch.rand(1).item(), random.random())
    restoreGlobalRNG(state)
    assert (np.random.random(), torch.rand(1).item(), random.random()) == expected

    def evolve(strategy: cma.CMAEvolutionStrategy, generations: int) -> list[np.ndarray]:
        asked = []
        for _ in range(generations):
            candidates = strategy.ask()
            strategy.tell(candidates, [float(np.sum(np.square(x - 1))) for x in candidates])
            asked.append(np.array(candidates))
        return asked

    options = {"popsize": 4, "seed": 5, "verbose": -9}
    strategy = cma.CMAEvolutionStrategy(np.zeros(6), 0.3, options)
    evolve(strategy, 4)
    arrays, values = captureObjectState(strategy, "cma")
    json.dumps(values)  # plain values only
    generator = np.random.get_state()
    expected = evolve(strategy, 5)
    rebuilt = cma.CMAEvolutionStrategy(np.array(strategy.mean), 0.5, options)
    restoreObjectState(rebuilt, arrays, values)
    rebuilt.timer = ElapsedWCTime()
    np.random.set_state(generator)
    assert all(np.array_equal(a, b) for a, b in zip(evolve(rebuilt, 5), expected))


def test_atomic_path_keeps_the_suffix_the_mode_and_the_previous_file(tmp_path):
    path = str(tmp_path / "curves.npz")
    with atomicPath(path) as tmp:
        assert os.path.basename(tmp).startswith(".curves.") and tmp.endswith(".tmp.npz")
        np.savez(tmp, x=np.arange(3))  # given a path, np.savez adds ".npz" unless it ends with it
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask  # like open(path, "w"), not mkstemp's private 0o600
    with pytest.raises(OSError), atomicPath(path) as tmp:
        np.savez(tmp, x=np.arange(5))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    np.testing.assert_array_equal(np.load(path)["x"], np.arange(3))
    assert os.listdir(tmp_path) == ["curves.npz"]


def test_progress_csv_of_a_resumed_run_is_never_left_cut(tmp_path, monkeypatch):
    kept = "a,b\n1,2\n"
    (tmp_path / "progress.csv").write_text(kept)

    class FullDiskFile:
        def __init__(self, file):
            self.file = file

        def write(self, _text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def close(self):
            self.file.close()

    class FullDiskCSV(sb3_logger.CSVOutputFormat):
        def __init__(self, filename):
            super().__init__(filename)  # SB3 opens it with "w+": a file opened in place is empty from here
            self.file = FullDiskFile(self.file)

    monkeypatch.setattr(sb3_logger, "CSVOutputFormat", FullDiskCSV)
    with pytest.raises(OSError):
        progressLogger(str(tmp_path))
    monkeypatch.undo()
    assert (tmp_path / "progress.csv").read_text() == kept and os.listdir(tmp_path) == ["progress.csv"]
    logger = progressLogger(str(tmp_path))
    logger.record("a", 3)
    logger.record("b", 4)
    logger.dump(0)
    logger.close()
    assert (tmp_path / "progress.csv").read_text() == kept + "3,4\n" and os.listdir(tmp_path) == ["progress.csv"]


def test_a_continued_monitor_counts_the_time_trained_not_the_time_stopped(tmp_path, monkeypatch) -> None:
    """A resumed run's monitor rows go on from its last row's wall time (the run lay stopped for an hour here), so
    gather_results' wall time is the time the run trained; the header keeps the original start."""
    path = tmp_path / "0.monitor.csv"
    path.write_text('#{"t_start": 1000.0, "env_id": "None"}\nr,l,t\n1.0,250,12.5\n')
    monkeypatch.setattr(wrappers.time, "time", lambda: 4612.5)  # a fake clock: an hour after the last row
    env = openMonitor(MobileRobotGymEnv(), str(tmp_path / "0"), ())
    try:
        assert env.t_start == 4600.0  # the next row's t goes on from 12.5 s, not from 3612.5
    finally:
        env.close()
    assert path.read_text().startswith('#{"t_start": 1000.0, ')  # the header is the original one


def test_an_env_without_is_success_gets_an_empty_monitor_cell(tmp_path):
    """SB3's Monitor requires every info keyword: a plugin env whose steps report no ``is_success`` raised KeyError
    at its first episode end (train crashed with a traceback); the cell is empty and reads back as NaN."""
    env = openMonitor(gym.make("CartPole-v1"), str(tmp_path / "0"), ("is_success",))
    try:
        env.reset(seed=0)
        info = {}
        for _ in range(500):
            *_, terminated, truncated, info = env.step(0)
            if terminated or truncated:
                break
        assert info.get("is_success") is None and info["episode"]["is_success"] == ""
    finally:
        env.close()
    rows = list(csv.DictReader(open(tmp_path / "0.monitor.csv").read().splitlines()[1:]))
    assert len(rows) == 1 and rows[0]["is_success"] == ""
    assert np.isnan(loadEpisodes(str(tmp_path))["successes"][0])


def test_the_default_checkpoint_interval_is_the_first_attempts() -> None:
    """0 means five checkpoints per run: a resumed run (whose config holds only the steps left) kept five per
    attempt, so checkpoints came twice as often after resuming half-way. The whole run's steps are its args.json's
    --num-timesteps (a run that continued a model at step S counts its own steps, not S + them)."""
    assert checkpointInterval(0, 3000) == 600 and checkpointInterval(700, 3000) == 700
    assert checkpointInterval(-1, 3000) == -1
    assert checkpointInterval(0, 1500, first_budget=3000) == 600
    assert checkpointInterval(250, 1500, first_budget=3000) == 250


def test_keep_first_lines_only_cuts(tmp_path):
    """A resume rewinds progress.csv to the rows of its checkpoint: a file with fewer rows, or a last row cut short
    by a crash, loses that piece and gains no empty row."""
    path = tmp_path / "progress.csv"
    for content, n_lines, kept in (("a,b\n1,2\n", 5, "a,b\n1,2\n"), ("a,b\n1,2\n3,4\n", 2, "a,b\n1,2\n"),
                                   ("a,b\n1,2\n3,", 5, "a,b\n1,2\n"), ("", 3, "")):
        path.write_text(content)
        keepFirstLines(str(path), n_lines)
        assert path.read_text() == kept, content
