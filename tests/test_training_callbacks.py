"""The training services, one at a time (rl_baselines.runs.training_callbacks), and their list
(rl_baselines.runs.callbacks.TrainingCallbacks): driven old-style, at clean points, and by SB3's ``learn``."""
from __future__ import annotations

import json
import os
import signal
import time
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import A2C
from stable_baselines3.common.callbacks import BaseCallback

from rl_baselines.core.base import BaseRLObject, notifyCleanPoint
from rl_baselines.core.checkpointing import Checkpoint, listCheckpoints, runDescription
from rl_baselines.rl_algorithm.sb3_callbacks import sb3Callback
from rl_baselines.runs import checkpoint_callbacks, training_callbacks
from rl_baselines.runs.callbacks import TrainingCallbacks, standardCallbacks
from rl_baselines.runs.checkpoint_callbacks import CheckpointCallback, StopSignalCallback
from rl_baselines.runs.progress_bar import ProgressCallback
from rl_baselines.runs.training_callbacks import (
    N_EPISODES_EVAL,
    BestModelCallback,
    EpisodeFeed,
    EvaluationCallback,
    LivePlotCallback,
    ModelSaver,
    RefreshCallback,
    ScalarLogCallback,
    TrainingService,
)

MONITOR_HEADER = '#{"t_start": 0.0, "env_id": "Fake-v0"}\nr,l,t\n'


class FakeAlgo(BaseRLObject):
    """An algorithm that saves a JSON file and a training state: enough for checkpoints."""

    MODEL_EXTENSION = ".json"
    CHECKPOINT_AT_CLEAN_POINTS: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self.env = None
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        os.makedirs(os.path.dirname(save_path), exist_ok=True)
        with open(save_path, "w", encoding="utf-8") as handle:
            json.dump({"num_timesteps": int(self.num_timesteps)}, handle)

    @classmethod
    def load(cls, *_args: Any, **_kwargs: Any) -> FakeAlgo:
        return cls()

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None,
                  deterministic: bool = False) -> np.ndarray:
        return np.zeros(len(observation), dtype=np.int64)

    def train(self, *_args: Any, **_kwargs: Any) -> None:
        raise NotImplementedError

    def saveTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "state.json"), "w", encoding="utf-8") as handle:
            json.dump({"steps": int(self.num_timesteps)}, handle)
        if replay_buffer_folder is not None:
            os.makedirs(replay_buffer_folder, exist_ok=True)
            with open(os.path.join(replay_buffer_folder, "buffer.json"), "w", encoding="utf-8") as handle:
                json.dump([1, 2, 3], handle)

    def loadTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        with open(os.path.join(folder, "state.json"), encoding="utf-8") as handle:
            self.loaded = (json.load(handle)["steps"], replay_buffer_folder)


class CleanPointAlgo(FakeAlgo):
    CHECKPOINT_AT_CLEAN_POINTS = True


class Learner:
    """What an own learner hands the old-style callback as ``self``."""

    def __init__(self) -> None:
        self.num_timesteps = 0


def _writeEpisodes(run_dir: str, rewards: list[float], length: int = 10) -> None:
    path = os.path.join(run_dir, "monitor", "0.monitor.csv")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    new = not os.path.exists(path)
    with open(path, "a", encoding="utf-8") as handle:
        if new:
            handle.write(MONITOR_HEADER)
        for reward in rewards:
            handle.write(f"{reward},{length},1.0\n")


class Recorder(TrainingService):
    """Records the steps it runs at."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[int] = []
        self.rollout_starts: list[int] = []

    def _on_step(self) -> bool:
        self.steps.append(self.num_timesteps)
        return True

    def _on_rollout_start(self) -> None:
        self.rollout_starts.append(self.num_timesteps)


class FakeRunLogger:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def logEpisodes(self, timesteps: Any, rewards: list, lengths: list) -> None:
        self.calls.append(("episodes", len(rewards)))

    def dumpPending(self, step: int | None = None) -> None:
        self.calls.append(("dump",) if step is None else ("dump", step))

    def startClock(self, step: int) -> None:
        self.clock_started_at = step

    def logScalars(self, step: int, values: dict, plot: bool = True) -> None:
        self.calls.append(("scalars", step, dict(values), plot))

    def progressLogger(self) -> str:
        return "shared logger"

    def flush(self) -> None:
        self.calls.append(("flush",))

    def pendingState(self) -> dict:
        return {}

    def restorePendingState(self, pending: dict) -> None:
        self.calls.append(("restore", pending))

    def close(self) -> None:
        self.calls.append(("close",))


class FakeSaver:
    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self.saved: list[tuple] = []

    def save(self, folder: str, num_timesteps: int, **extra: Any) -> None:
        self.saved.append((os.path.relpath(folder, self.run_dir), num_timesteps, extra))


def _drive(callback: Any, learner: Learner, steps: range) -> list[bool]:
    answers = []
    for step in steps:
        learner.num_timesteps = step
        answers.append(callback({"self": learner}, {}))
    return answers


def test_refresh_runs_its_callbacks_every_log_interval_from_the_start_and_reads_new_episodes(tmp_path):
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    recorder = Recorder()
    callbacks = TrainingCallbacks([RefreshCallback(feed, 100, 50, [recorder])])
    _writeEpisodes(str(tmp_path), [1.0, 2.0])
    learner = Learner()
    _drive(callbacks, learner, range(60, 400, 30))  # 60, 90, ..., 390
    # the first step at or past 150, then 100 steps after each refresh's own step
    assert recorder.steps == [150, 270, 390]
    assert len(feed.monitor.rewards) == 2 and feed.new_episodes == 0


def test_a_resumed_refresh_keeps_the_uninterrupted_runs_steps(tmp_path):
    """The checkpoint (at 200 here) records the next refresh: resumed, the refreshes fall at 270 and 390 as in the
    run never stopped (counted from the resume step, they fell at 300 and 420)."""
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    uninterrupted = TrainingCallbacks([RefreshCallback(feed, 100, 50, [Recorder()])])
    _drive(uninterrupted, Learner(), range(60, 201, 30))  # 60, ..., 180: refreshed at 150
    recorder = Recorder()
    resumed = TrainingCallbacks([RefreshCallback(EpisodeFeed(str(tmp_path / "monitor")), 100, 200, [recorder])])
    resumed.restoreState(json.loads(json.dumps(uninterrupted.state())))
    _drive(resumed, Learner(), range(210, 400, 30))
    assert recorder.steps == [270, 390]


def test_progress_bar_moves_to_the_step_and_shows_the_episodes(tmp_path, capsys):
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    _writeEpisodes(str(tmp_path), [1.0, 3.0])
    progress = ProgressCallback(feed, total_timesteps=1000, start_timesteps=100)
    feed.poll()
    progress.on_training_start({}, {})  # (the bar is drawn from training's start)
    progress.at(400)
    assert progress.bar.n == 400
    assert progress.bar.postfix == "episodes=2, mean_reward=2.00"
    progress.finish()
    assert "400/1000" in capsys.readouterr().err
    # a last rollout past the budget ends the bar full (it showed "1024steps", without a total)
    past = ProgressCallback(feed, total_timesteps=1000, start_timesteps=0)
    past.on_training_start({}, {})
    past.at(1024)
    past.finish()
    assert "1024/1024" in capsys.readouterr().err


def test_the_progress_bar_times_training_not_the_building_of_the_envs_and_model(tmp_path):
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    progress = ProgressCallback(feed, total_timesteps=1000, start_timesteps=0)  # shown from the start...
    shown_at = progress.bar.start_t
    time.sleep(0.05)  # (the envs and the model are built)
    _drive(TrainingCallbacks([RefreshCallback(feed, 10, 0, [progress])]), Learner(), range(10, 30, 10))
    assert progress.bar.start_t > shown_at and progress.bar.n == 20  # ... its clock starts with training
    progress.finish()


def test_scalar_log_writes_new_episodes_and_pending_rows_and_serves_algorithms(tmp_path):
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    run_logger = FakeRunLogger()
    log = ScalarLogCallback(run_logger, feed)
    callbacks = TrainingCallbacks([RefreshCallback(feed, 10, 0, [log])])
    learner = Learner()
    _writeEpisodes(str(tmp_path), [1.0])
    _drive(callbacks, learner, range(10, 30, 10))  # two refreshes: one episode, then none
    assert run_logger.calls == [("episodes", 1), ("dump",), ("dump",)]
    assert run_logger.clock_started_at == 10  # the rows' wall-clock columns count from the start of training
    callbacks.logScalars(20, {"loss/policy": 0.5})
    assert run_logger.calls[-1] == ("scalars", 20, {"loss/policy": 0.5}, True)
    assert callbacks.progressLogger() == "shared logger"
    callbacks.close(20)
    assert run_logger.calls[-1] == ("close",)


def test_live_plot_waits_for_new_episodes_and_its_period_except_at_the_end(tmp_path, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(training_callbacks.time, "monotonic", lambda: clock[0])
    sent = []

    class Plotter:
        def update(self, timesteps: Any, rewards: list) -> None:
            sent.append(len(rewards))

    feed = EpisodeFeed(str(tmp_path / "monitor"))
    refresh = RefreshCallback(feed, 1, 0, [LivePlotCallback(Plotter(), feed)])
    refresh.refreshAt(1)  # no episode yet
    _writeEpisodes(str(tmp_path), [1.0])
    refresh.refreshAt(2)
    _writeEpisodes(str(tmp_path), [1.0])
    clock[0] += 0.5
    refresh.refreshAt(3)  # new episode, but within the period
    refresh.refreshAt(4, closing=True)  # the end: sent whatever the time
    assert sent == [1, 2]


def test_best_model_follows_the_training_reward_after_enough_episodes(tmp_path):
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    saver = FakeSaver(str(tmp_path))
    best = BestModelCallback(saver, feed, save_interval=100, min_episodes_save=3)
    refresh = RefreshCallback(feed, 1, 0, [best])
    _writeEpisodes(str(tmp_path), [1.0, 2.0])
    refresh.refreshAt(100)  # two episodes: fewer than min_episodes_save
    _writeEpisodes(str(tmp_path), [3.0])
    refresh.refreshAt(150)  # not due before 200
    refresh.refreshAt(200)
    _writeEpisodes(str(tmp_path), [0.0] * N_EPISODES_EVAL)
    refresh.refreshAt(300)  # worse: kept
    assert saver.saved == [("best", 200, {"mean_reward": 2.0})]
    assert best.state() == {"best_mean_reward": 2.0, "next_best_check": 400}
    restored = BestModelCallback(saver, feed, save_interval=100, min_episodes_save=3)
    restored.restoreState(best.state())
    assert restored.state() == best.state()
    # evaluations decide instead: the training reward saves nothing
    by_evaluation = BestModelCallback(FakeSaver(str(tmp_path)), feed, 100, 1, by_evaluation=True)
    by_evaluation.at(500)
    by_evaluation.finish()
    assert by_evaluation.saver.saved == [] and by_evaluation.next_check == 600


class FakeEvaluator:
    n_episodes = 2

    def __init__(self, means: list[float]) -> None:
        self.means_left = list(means)
        self.best_mean_reward = -float("inf")
        self.evaluated: list[int] = []
        self.closed = False
        self.ep_lengths: list[list[int]] = []
        self.successes: list[list[bool]] = []

    def due(self, num_timesteps: int) -> bool:
        return num_timesteps % 100 == 0

    def evaluate(self, num_timesteps: int, between_steps=None) -> tuple[float, float]:
        self.evaluated.append(num_timesteps)
        for _step in range(2):  # (the episodes' steps)
            if between_steps is not None:
                between_steps()
        self.ep_lengths.append([10, 20])
        self.successes.append([True, False] if len(self.evaluated) > 1 else [])  # the first: no is_success
        return self.means_left.pop(0), 0.5

    def state(self) -> dict[str, Any]:
        return {"count": len(self.evaluated)}

    def restoreState(self, state: dict[str, Any]) -> None:
        self.evaluated = [0] * state["count"]

    def close(self) -> None:
        self.closed = True


def test_evaluation_records_each_one_and_saves_best_on_a_new_best(tmp_path, capsys):
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    saver = FakeSaver(str(tmp_path))
    best = BestModelCallback(saver, feed, 1000, 1, by_evaluation=True)
    evaluator, run_logger = FakeEvaluator([1.0, 0.5, 2.0]), FakeRunLogger()
    evaluation = EvaluationCallback(evaluator, run_logger, None, best)
    for step in range(50, 350, 50):
        evaluation.at(step)
    assert evaluator.evaluated == [100, 200, 300]
    assert saver.saved == [("best", 100, {"mean_reward": 1.0, "selected_by": "evaluation"}),
                           ("best", 300, {"mean_reward": 2.0, "selected_by": "evaluation"})]
    # SB3's EvalCallback's tags (eval/success_rate only where the env reports is_success), and the std beside them
    assert run_logger.calls[0] == ("scalars", 100, {"eval/mean_reward": 1.0, "eval/std_reward": 0.5,
                                                    "eval/mean_ep_length": 15.0}, False)
    assert run_logger.calls[2] == ("scalars", 200, {"eval/mean_reward": 0.5, "eval/std_reward": 0.5,
                                                    "eval/mean_ep_length": 15.0, "eval/success_rate": 0.5}, False)
    assert run_logger.calls[1] == ("dump", 100)  # its own progress.csv row at its step, as SB3's EvalCallback writes
    assert "Evaluation at 200 steps: mean reward 0.50 +/- 0.50 (2 episodes)" in capsys.readouterr().out
    assert evaluation.state() == {"evaluation": {"count": 3}}
    evaluation.finish()
    assert evaluator.closed


def _checkpoints(run_dir: str, algo: FakeAlgo, freq: int, buffer_save_freq: int = 0) -> CheckpointCallback:
    run_info = runDescription(run_dir, type("Args", (), {"env": "Fake-v0", "srl_model": "ground_truth"}))
    return CheckpointCallback(ModelSaver(algo, "fake", run_dir, run_info), freq, buffer_save_freq,
                              total_timesteps=1000)


def test_checkpoints_fall_due_at_their_step_with_the_state_of_every_callback(tmp_path):
    run_dir = str(tmp_path)
    algo = FakeAlgo()
    checkpoints = _checkpoints(run_dir, algo, freq=100, buffer_save_freq=200)
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    best = BestModelCallback(FakeSaver(run_dir), feed, 500, 1)
    callbacks = TrainingCallbacks([RefreshCallback(feed, 50, 0, [best]), checkpoints])
    learner = Learner()
    for step in range(30, 330, 30):
        algo.num_timesteps = step
        _drive(callbacks, learner, range(step, step + 1))
    # due at 100, 200, 300: each at the first step at or after it (the late one at 120 does not delay the next)
    assert [steps for steps, _ in listCheckpoints(run_dir)] == [120, 210, 300]
    # the replay buffer every 200 steps (the newest checkpoint names the older buffer)
    assert os.path.isdir(os.path.join(run_dir, "checkpoints", "120_steps", "replay_buffer"))
    assert not os.path.isdir(os.path.join(run_dir, "checkpoints", "210_steps", "replay_buffer"))
    run_state = Checkpoint(os.path.join(run_dir, "checkpoints", "210_steps")).runState()
    assert run_state["num_timesteps"] == 210 and run_state["target_timesteps"] == 1000
    assert set(run_state["callback"]) == {"best_mean_reward", "next_best_check", "last_buffer_save", "next_refresh",
                                          "next_checkpoint"}
    assert run_state["callback"]["last_buffer_save"] == 120 and run_state["callback"]["next_best_check"] == 500
    assert run_state["callback"]["next_checkpoint"] == 300
    # made with the umask's permissions, as the run's other folders (mkdtemp's 0o700 hid them from other users)
    os.makedirs(os.path.join(run_dir, "made_here"))
    assert os.stat(os.path.join(run_dir, "checkpoints", "210_steps")).st_mode == \
        os.stat(os.path.join(run_dir, "made_here")).st_mode
    # no best yet: strict JSON (null, not -Infinity), read back as -inf
    with open(os.path.join(run_dir, "checkpoints", "210_steps", "run_state.json"), encoding="utf-8") as handle:
        strict = json.loads(handle.read(), parse_constant=lambda name: pytest.fail(f"run_state.json holds {name}"))
    assert strict["callback"]["best_mean_reward"] is None
    restored = BestModelCallback(FakeSaver(run_dir), feed, 500, 1)
    restored.restoreState(run_state["callback"])
    assert restored.best_mean_reward == -float("inf")
    # the latest model beside the run, with its manifest
    assert json.load(open(os.path.join(run_dir, "fake_model.json")))["num_timesteps"] == 300
    assert callbacks.last_checkpoint == os.path.join(run_dir, "checkpoints", "300_steps")


def test_checkpoints_wait_for_clean_points_old_style_and_in_sb3(tmp_path):
    run_dir = str(tmp_path)
    algo = CleanPointAlgo()
    checkpoints = _checkpoints(run_dir, algo, freq=100)
    callbacks = TrainingCallbacks([checkpoints])
    learner = Learner()
    _drive(callbacks, learner, range(0, 260, 10))
    assert listCheckpoints(run_dir) == []  # due at 100, but no clean point yet
    notifyCleanPoint(callbacks, 250)
    assert [steps for steps, _ in listCheckpoints(run_dir)] == [250]
    # SB3's rollout start is the clean point: learn takes the list as it is
    recorder = Recorder()
    sb3_list = TrainingCallbacks([recorder])
    assert sb3Callback(sb3_list) is sb3_list
    model = A2C("MlpPolicy", "CartPole-v1", n_steps=5, seed=0, device="cpu")
    model.learn(20, callback=sb3_list)
    assert recorder.steps == list(range(1, 21))
    assert recorder.rollout_starts == [0, 5, 10, 15]


def _cleanPointCheckpoints(run_dir: str, clean_points: range, freq: int = 400, start: int = 0,
                           state: dict[str, Any] | None = None) -> CheckpointCallback:
    """A checkpoint callback of a clean-point algorithm, its state restored from ``state``, notified at each step
    of ``clean_points`` (as SB3's rollout starts), then the final save at the last step plus one rollout."""
    run_info = runDescription(run_dir, type("Args", (), {"env": "Fake-v0", "srl_model": "ground_truth"}))
    checkpoints = CheckpointCallback(ModelSaver(CleanPointAlgo(), "fake", run_dir, run_info), freq, 0,
                                     total_timesteps=2000, start_timesteps=start)
    callbacks = TrainingCallbacks([checkpoints])
    if state is not None:
        callbacks.restoreState(state)
    for step in clean_points:
        checkpoints.saver.algo.num_timesteps = step
        notifyCleanPoint(callbacks, step)
    last = clean_points[-1] + clean_points.step
    callbacks.checkpoint(last, training_state=False, finished=True)
    return checkpoints


def test_checkpoints_keep_a_fixed_schedule_at_clean_points(tmp_path):
    """The k-th checkpoint falls due at k x the interval (ppo2's default: 2,000 steps, five per run, every 400) and is
    written at the first clean point (a rollout start, every 128 steps) at or after it: 512, 896, 1280, 1664, then
    the final save at 2048. Counting the interval from the step of the late save instead wrote 512, 1024, 1536, 2048:
    four."""
    run_dir = str(tmp_path / "run")
    _cleanPointCheckpoints(run_dir, range(0, 2048, 128))
    assert [steps for steps, _ in listCheckpoints(run_dir)] == [512, 896, 1280, 1664, 2048]
    # a clean point past several due steps writes one checkpoint, and the next is still on the schedule
    sparse = str(tmp_path / "sparse")
    _cleanPointCheckpoints(sparse, range(0, 2000, 500), freq=200)
    assert [steps for steps, _ in listCheckpoints(sparse)] == [500, 1000, 1500, 2000]
    # a run that continues a model at step 1000 counts its schedule from there
    continued = str(tmp_path / "continued")
    _cleanPointCheckpoints(continued, range(1000, 3048, 128), start=1000)
    assert [steps for steps, _ in listCheckpoints(continued)] == [1512, 1896, 2280, 2664, 3048]


def test_a_resumed_run_keeps_the_checkpoint_schedule(tmp_path):
    """The checkpoint at 512 records the next due step (800): resumed from it, the run writes the uninterrupted run's
    checkpoints. A checkpoint written before the due step was recorded schedules from its own step, as the run that
    wrote it did."""
    run_dir = str(tmp_path / "run")
    _cleanPointCheckpoints(run_dir, range(0, 640, 128))
    state = Checkpoint(os.path.join(run_dir, "checkpoints", "512_steps")).runState()["callback"]
    assert state["next_checkpoint"] == 800
    resumed = str(tmp_path / "resumed")
    _cleanPointCheckpoints(resumed, range(512, 2048, 128), start=512, state=state)
    assert [steps for steps, _ in listCheckpoints(resumed)] == [896, 1280, 1664, 2048]
    old = str(tmp_path / "old")
    _cleanPointCheckpoints(old, range(512, 2048, 128), start=512, state={"last_buffer_save": 512})
    assert [steps for steps, _ in listCheckpoints(old)] == [1024, 1408, 1792, 2048]


def test_a_stop_signal_refreshes_checkpoints_and_stops(tmp_path):
    run_dir = str(tmp_path)
    algo = FakeAlgo()
    checkpoints = _checkpoints(run_dir, algo, freq=0)
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    recorder = Recorder()
    refresh = RefreshCallback(feed, 1000, 0, [recorder])
    stop = StopSignalCallback(refresh, checkpoints)
    callbacks = TrainingCallbacks([refresh, stop, checkpoints])
    learner = Learner()
    assert _drive(callbacks, learner, range(10, 40, 10)) == [True, True, True]
    callbacks.requestStop(signal.SIGTERM)
    algo.num_timesteps = 40
    assert _drive(callbacks, learner, range(40, 41)) == [False]
    assert recorder.steps == [40] and callbacks.stop_signal == signal.SIGTERM
    (steps, folder), = listCheckpoints(run_dir)
    assert steps == 40 and Checkpoint(folder).manifest()["stopped_by"] == "SIGTERM"


def test_a_stop_waits_for_the_next_clean_point_at_most_its_wait(tmp_path, monkeypatch):
    """An algorithm with clean points: after the signal the steps go on until the next clean point, which writes the
    stop's checkpoint, and the step after it stops training; where the wait passes first, the next step writes it
    and stops (mid-rollout, as for an algorithm without clean points). The wait counts from the first step after the
    signal: what was in progress when it came (here a minute, as an evaluation's episodes from pixels) is not
    counted."""
    clock = [100.0]
    monkeypatch.setattr(checkpoint_callbacks.time, "monotonic", lambda: clock[0])
    for case, (before_step, after_step, clean_point, answers, written) in {
            "in time": (0.0, 9.0, 50, [True, True, False], 50),
            "in time after a minute's evaluation": (60.0, 9.0, 50, [True, True, False], 50),
            "too late": (0.0, 11.0, None, [True, False], 40)}.items():
        run_dir = str(tmp_path / case)
        algo = CleanPointAlgo()
        checkpoints = CheckpointCallback(ModelSaver(algo, "fake", run_dir, runDescription(run_dir, type(
            "Args", (), {"env": "Fake-v0", "srl_model": "ground_truth"}))), 0, 0, total_timesteps=1000)
        callbacks = TrainingCallbacks([StopSignalCallback(None, checkpoints, wait_s=10.0), checkpoints])
        learner = Learner()
        assert _drive(callbacks, learner, range(10, 30, 10)) == [True, True]
        callbacks.requestStop(signal.SIGTERM)
        clock[0] += before_step
        algo.num_timesteps = 30
        first = _drive(callbacks, learner, range(30, 31))
        clock[0] += after_step
        algo.num_timesteps = 40
        first += _drive(callbacks, learner, range(40, 41))
        if clean_point is not None:
            algo.num_timesteps = clean_point
            notifyCleanPoint(callbacks, clean_point)
            first += _drive(callbacks, learner, range(clean_point + 10, clean_point + 11))
        assert first == answers, case
        (steps, folder), = listCheckpoints(run_dir)
        assert steps == written and Checkpoint(folder).manifest()["stopped_by"] == "SIGTERM", case


def test_a_checkpoint_first_logs_the_episodes_since_the_last_refresh_and_flushes_the_log(tmp_path):
    """What a run resumed from a checkpoint keeps of the stopped process's log (up to the checkpoint's step) is on
    disk before the checkpoint is, even with no refresh since those episodes ended (a kill right after it)."""
    run_dir = str(tmp_path)
    algo = FakeAlgo()
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    run_logger = FakeRunLogger()
    run_logger.flush = lambda: run_logger.calls.append(("flush", listCheckpoints(run_dir)))
    plotted = []

    class Plotter:
        def update(self, timesteps: Any, rewards: list) -> None:
            plotted.append(len(rewards))

    refresh = RefreshCallback(feed, 1000, 0, [ScalarLogCallback(run_logger, feed), LivePlotCallback(Plotter(), feed)])
    callbacks = TrainingCallbacks([refresh, _checkpoints(run_dir, algo, freq=100)])
    _writeEpisodes(run_dir, [1.0, 2.0])
    algo.num_timesteps = 100
    _drive(callbacks, Learner(), range(100, 101))
    assert [steps for steps, _ in listCheckpoints(run_dir)] == [100]
    assert run_logger.calls == [("episodes", 2), ("dump",), ("flush", [])]  # the pending row too
    # the next refresh still counts them as new (the live plot is sent)
    refresh.refreshAt(150)
    assert feed.new_episodes == 2 and plotted == [2]
    # the final checkpoint comes after the log is closed: it is left alone
    callbacks.close(150)
    calls = list(run_logger.calls)
    assert calls[-1] == ("close",)
    callbacks.checkpoint(150, training_state=False, finished=True)
    assert run_logger.calls == calls


def test_the_standard_list_records_the_checkpoint_state_of_earlier_versions(tmp_path):
    run_dir = str(tmp_path)
    algo = FakeAlgo()
    run_info = runDescription(run_dir, type("Args", (), {"env": "Fake-v0", "srl_model": "ground_truth"}))
    evaluator = FakeEvaluator([1.0])
    callbacks = standardCallbacks(algo, "fake", run_dir, 1000, checkpoint_freq=100, progress=False,
                                  run_info=run_info, evaluator=evaluator, run_logger=FakeRunLogger())
    kinds = [type(callback) for callback in callbacks.callbacks]
    assert kinds == [RefreshCallback, EvaluationCallback, StopSignalCallback, CheckpointCallback]
    algo.num_timesteps = 100
    _drive(callbacks, Learner(), range(100, 101))
    run_state = Checkpoint(os.path.join(run_dir, "checkpoints", "100_steps")).runState()
    # (an earlier checkpoint's lacks pending_log, and one before the fixed schedule next_checkpoint)
    assert set(run_state["callback"]) == {"best_mean_reward", "next_best_check", "last_buffer_save", "evaluation",
                                          "next_refresh", "pending_log", "next_checkpoint"}
    assert run_state["callback"]["evaluation"] == {"count": 1}
    callbacks.close(100)
    assert evaluator.closed


def test_any_sb3_callback_is_driven_old_style(tmp_path):
    class Counter(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[int] = []

        def _on_step(self) -> bool:
            self.seen.append(self.num_timesteps)
            return self.num_timesteps < 30

    counter = Counter()
    answers = _drive(TrainingCallbacks([counter]), Learner(), range(10, 50, 10))
    assert counter.seen == [10, 20, 30, 40] and answers == [True, True, False, False]


@pytest.mark.parametrize("with_buffer", [True, False])
def test_checkpoint_restores_from_its_own_folder(tmp_path, with_buffer):
    run_dir = str(tmp_path)
    algo = FakeAlgo()
    algo.num_timesteps = 70
    checkpoints = _checkpoints(run_dir, algo, freq=10, buffer_save_freq=0 if with_buffer else -1)
    folder = checkpoints.save(70)
    checkpoint = Checkpoint(folder)
    checkpoint.verify()
    assert (checkpoint.buffer_folder is not None) == with_buffer
    restored = FakeAlgo()
    checkpoint.restore(restored)
    assert restored.loaded == (70, checkpoint.buffer_folder)
    assert checkpoint.modelPath() == os.path.join(folder, "fake_model.json")
