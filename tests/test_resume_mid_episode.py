"""A run resumed from a checkpoint taken mid-episode: each env plays the episode in progress again to where it was.

- the wrapper (rl_baselines.envs.wrappers.EpisodeStartRNG): the actions since the episode's start are recorded as
  given; restarted with them, a fresh env stands where the first one stood, and the Monitor counts the whole episode;
  an episode too long to replay, or an env that does not repeat its steps, restarts from its start (one warning);
- the algorithms that go on from their envs (SB3's on-policy ppo2, envs in the training process and in workers, and
  its stacked frames with --num-stack, off-policy sac with its replay buffer and ddpg with its Ornstein-Uhlenbeck
  noise, which SB3's learn would reset, ppo_lstm with its LSTM states, her with the episodes in progress in its
  buffer; the toolbox's deepq, acer, acktr, ppo1 and random_agent): stopped after a checkpoint taken mid-episode and
  resumed, the run is the uninterrupted one: the same monitor rows, progress.csv rows and final weights (networks and
  optimizers).
"""
from __future__ import annotations

import csv
import glob
import json
import os
import signal
import warnings
import zipfile
from io import BytesIO

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import interruptThenResume, stoppedRun, trainHere

from rl_baselines.core.checkpointing import listCheckpoints, readManifest
from rl_baselines.envs.wrappers import EpisodeStartRNG, openMonitor
from rl_baselines.runs import checkpoint_callbacks, train
from rl_baselines.runs.callbacks import TrainingCallbacks
from rl_baselines.runs.training_callbacks import EvaluationCallback

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--seed", "3"]


def _wrapped(env_id: str, monitor_file: str | None = None) -> gym.Env:
    """:return: the env as the factory wraps it: the Monitor, and EpisodeStartRNG outermost"""
    return EpisodeStartRNG(openMonitor(gym.make(env_id), monitor_file, info_keywords=()))


def test_the_episode_in_progress_is_played_again_to_where_it_was(tmp_path) -> None:
    first = _wrapped("Pendulum-v1", str(tmp_path / "first"))  # continuous actions (float32 arrays)
    observation, _ = first.reset(seed=5)
    actions = np.random.default_rng(0).uniform(-2, 2, (40, 1)).astype(np.float32)
    for action in actions[:30]:
        observation, *_ = first.step(action)
    start = json.loads(json.dumps(first.episodeStart()))  # what a checkpoint's run_state.json keeps
    assert start["seed"] == 5 and len(start["actions"]) == 30 and start["action_dtype"] == "float32"

    second = _wrapped("Pendulum-v1", str(tmp_path / "second"))
    second.reset(seed=11)  # another episode first, as a resumed run's envs are made
    second.restartEpisode(start, replay=True)
    replayed, _ = second.reset()
    assert np.array_equal(replayed, observation) and second.continuedEpisode()
    assert second.episodeStart() == first.episodeStart()  # (a later checkpoint would record the same)
    for action in actions[30:]:
        assert all(np.array_equal(one, two) for one, two in zip(first.step(action), second.step(action)))
    assert second.env.rewards == first.env.rewards  # the Monitor counts the whole episode

    # without replay (an algorithm that plays its episodes again from their start): the episode's start only
    third = _wrapped("Pendulum-v1")
    third.restartEpisode(start, replay=False)
    restarted, _ = third.reset()
    assert np.array_equal(restarted, gym.make("Pendulum-v1").reset(seed=5)[0])
    assert third.episodeStart()["actions"] == [] and not third.continuedEpisode()


def test_discrete_actions_are_played_again_as_numpy_integers() -> None:
    first = _wrapped("CartPole-v1")
    first.reset(seed=2)
    for action in np.array([0, 1, 1, 0, 1], dtype=np.int64):
        observation, *_ = first.step(action)
    start = json.loads(json.dumps(first.episodeStart()))
    assert start["actions"] == [0, 1, 1, 0, 1] and start["action_dtype"] == "int64"
    second = _wrapped("CartPole-v1")
    second.restartEpisode(start, replay=True)
    played = []
    original = second.env.step
    second.env.step = lambda action: played.append(action) or original(action)
    assert np.array_equal(second.reset()[0], observation)
    assert all(isinstance(action, np.int64) for action in played) and len(played) == 5


def test_an_episode_too_long_to_replay_restarts_from_its_start(monkeypatch) -> None:
    monkeypatch.setattr(EpisodeStartRNG, "MAX_REPLAYED_STEPS", 3)
    first = _wrapped("CartPole-v1")
    first.reset(seed=2)
    for _ in range(4):
        first.step(np.int64(0))
    assert first.episodeStart()["actions"] is None
    second = _wrapped("CartPole-v1")
    second.restartEpisode(first.episodeStart(), replay=True)
    assert np.array_equal(second.reset()[0], gym.make("CartPole-v1").reset(seed=2)[0])


def test_an_env_that_does_not_repeat_its_steps_starts_afresh_with_a_warning() -> None:
    first = _wrapped("CartPole-v1")
    first.reset(seed=2)
    for _ in range(5):
        first.step(np.int64(1))
    start = first.episodeStart()
    start["actions"] = [1] * 200  # more than the pole stays up: the replay ends the episode
    second = _wrapped("CartPole-v1")
    second.restartEpisode(start, replay=True)
    with pytest.warns(UserWarning, match=r"ended after \d+ of its 200 replayed steps .* it starts afresh"):
        observation, _ = second.reset()
    assert second.episodeStart()["actions"] == [] and observation.shape == (4,) and not second.continuedEpisode()


def _monitorRows(run_dir: str) -> dict[str, list[tuple[str, str]]]:
    rows = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "monitor", "*.monitor.csv"))):
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()[1:]
        rows[os.path.basename(path)] = [(row["r"], row["l"]) for row in csv.DictReader(lines)]
    return rows


def _progressRows(run_dir: str) -> list[dict[str, str]]:
    with open(os.path.join(run_dir, "progress.csv"), encoding="utf-8") as handle:
        return [{name: value for name, value in row.items() if name not in ("time/fps", "time/time_elapsed")}
                for row in csv.DictReader(handle)]


def _flat(tree: object, prefix: str = "") -> dict[str, object]:
    """:return: every leaf of a model file's content (nested dicts and lists), by its path"""
    if isinstance(tree, dict) or isinstance(tree, (list, tuple)):
        items = tree.items() if isinstance(tree, dict) else enumerate(tree)
        return {path: leaf for key, value in items for path, leaf in _flat(value, f"{prefix}/{key}").items()}
    return {prefix: tree}


def _weights(run_dir: str, algo: str) -> dict[str, object]:
    """:return: the final model's tensors (SB3's policy, the torch algorithms' networks and optimizers) or values"""
    (path,) = glob.glob(os.path.join(run_dir, f"{algo}_model.*"))
    if path.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            return torch.load(BytesIO(archive.read("policy.pth")), weights_only=True)
    if path.endswith(".pt"):
        return _flat(torch.load(path, weights_only=True))
    with open(path, encoding="utf-8") as handle:
        return _flat(json.load(handle))


def _normalisation(run_dir: str) -> dict[str, np.ndarray]:
    """:return: the arrays of the final model's vecnormalize.npz (none where the run normalises nothing)"""
    path = os.path.join(run_dir, "vecnormalize.npz")
    if not os.path.isfile(path):
        return {}
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def _sameWeights(run_dir: str, reference: str, algo: str) -> bool:
    """:return: whether two runs' final models hold the same tensors (bit for bit) and values, and their
    normalisation statistics the same numbers (the reward's too: a resumed run's went on from a zero return)"""
    resumed, uninterrupted = _weights(run_dir, algo), _weights(reference, algo)
    statistics, expected = _normalisation(run_dir), _normalisation(reference)
    return resumed.keys() == uninterrupted.keys() and all(
        torch.equal(one, two) if isinstance(one, torch.Tensor) else one == two
        for one, two in ((resumed[name], uninterrupted[name]) for name in uninterrupted)) and \
        statistics.keys() == expected.keys() and all(np.array_equal(statistics[name], expected[name])
                                                     for name in expected)


# ppo2: 2 envs of 250-step episodes, rollouts of 2 x 128 steps: the checkpoint due at 300 is written at the rollout
# start at 512, 6 steps into each env's second episode. The others: one env, a clean point at 300 (sac every 4 steps,
# ddpg, her, deepq and random_agent every step, acer and acktr after an update of 20 steps, ppo1 of 100), 50 steps
# into the second episode; ppo_lstm's (rollouts of 128 steps) at 384, 134 steps into it.
MID_EPISODE = {
    "ppo2-in-process": (["--algo", "ppo2", "--num-cpu", "2", "--vec-env", "dummy", "--num-timesteps", "1024"], 512),
    "ppo2-workers": (["--algo", "ppo2", "--num-cpu", "2", "--vec-env", "subproc", "--num-timesteps", "1024"], 512),
    "ppo2-stacked": (["--algo", "ppo2", "--num-cpu", "2", "--num-stack", "3", "--num-timesteps", "1024"], 512),
    "sac": (["--algo", "sac", "-c", "--num-timesteps", "600", "--hyperparam", "learning_starts:100", "batch_size:32",
             "train_freq:4"], 300),
    "ddpg": (["--algo", "ddpg", "-c", "--num-timesteps", "600", "--hyperparam", "learning_starts:100"], 300),
    "ppo_lstm": (["--algo", "ppo_lstm", "--num-timesteps", "768"], 384),
    "her": (["--algo", "her", "-c", "--num-timesteps", "600", "--learning-starts", "250"], 300),
    "deepq": (["--algo", "deepq", "--num-timesteps", "600", "--hyperparam", "learning_starts:100"], 300),
    "random_agent": (["--algo", "random_agent", "--num-timesteps", "600"], 300),
    "acer": (["--algo", "acer", "--num-timesteps", "600", "--hyperparam", "replay_start:100", "replay_ratio:1"], 300),
    "acktr": (["--algo", "acktr", "--num-timesteps", "600"], 300),
    "ppo1": (["--algo", "ppo1", "--num-timesteps", "600", "--timesteps-per-actorbatch", "100", "--nminibatches", "4",
              "--optim-epochs", "2"], 300),
    # 2 workers of one env each, updates of 2 x 100 steps: the checkpoint at 400, each env 200 steps into its episode
    "ppo1-workers": (["--algo", "ppo1", "--num-workers", "2", "--num-timesteps", "800", "--timesteps-per-actorbatch",
                      "100", "--nminibatches", "4", "--optim-epochs", "2"], 400),
}


@pytest.mark.parametrize("case", sorted(MID_EPISODE))
def test_a_run_resumed_mid_episode_is_the_uninterrupted_run(tmp_path, monkeypatch, case) -> None:
    run_args, checkpoint = MID_EPISODE[case]
    args = [*GT, *run_args, "--checkpoint-freq", "300"]
    reference = trainHere("--log-dir", tmp_path / "reference", *args)
    run_dir = interruptThenResume(monkeypatch, str(tmp_path / "stopped"), args, at_step=checkpoint + 100)
    with open(os.path.join(run_dir, "checkpoints", f"{checkpoint}_steps", "run_state.json"), encoding="utf-8") as file:
        starts = json.load(file)["episode_starts"]
    assert all(0 < len(start["actions"]) < 250 for start in starts), starts  # taken mid-episode

    assert _monitorRows(run_dir) == _monitorRows(reference)
    assert _progressRows(run_dir) == _progressRows(reference)
    assert _sameWeights(run_dir, reference, run_args[1])


# A Ctrl-C mid-rollout, and the clean point its checkpoint waits for: ppo2 (2 envs, rollouts of 2 x 128 steps) at
# 600, the next rollout's start at 768; sac (train_freq 4) at 301, 304; acktr (updates of 20 steps) at 310, 320.
STOPPED = {
    "ppo2": (["--algo", "ppo2", "--num-cpu", "2", "--vec-env", "dummy", "--num-timesteps", "1024"], 600, 768),
    "sac": (["--algo", "sac", "-c", "--num-timesteps", "500", "--hyperparam", "learning_starts:100", "batch_size:32",
             "train_freq:4"], 301, 304),
    "acktr": (["--algo", "acktr", "--num-timesteps", "500"], 310, 320),
}


@pytest.mark.parametrize("case", sorted(STOPPED))
def test_a_stop_checkpoints_at_the_end_of_the_update_in_progress_and_resumes_as_the_uninterrupted_run(
        tmp_path, monkeypatch, case) -> None:
    """A Ctrl-C (or SIGTERM) mid-rollout: the run goes on to the end of the update in progress and writes its stop
    checkpoint there, a clean point, so that the resumed run is the uninterrupted one (the same monitor rows,
    progress.csv rows and final weights); it was written at the signal's step, mid-rollout, and resumed as another
    run. With no clean point within STOP_WAIT_S seconds, the checkpoint is written at once, as before."""
    run_args, stop_at, clean_point = STOPPED[case]
    args = [*GT, *run_args, "--checkpoint-freq", "5000"]
    reference = trainHere("--log-dir", tmp_path / "reference", *args)
    run_dir = stoppedRun(monkeypatch, str(tmp_path / "stopped"), args, stop_at)
    (steps, checkpoint), = listCheckpoints(run_dir)
    assert steps == clean_point and readManifest(checkpoint)["stopped_by"] == "SIGINT"
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    assert _monitorRows(run_dir) == _monitorRows(reference)
    assert _progressRows(run_dir) == _progressRows(reference)
    assert _sameWeights(run_dir, reference, run_args[1])

    monkeypatch.setattr(checkpoint_callbacks, "STOP_WAIT_S", 0.0)  # the clean point comes too late
    run_dir = stoppedRun(monkeypatch, str(tmp_path / "at once"), args, stop_at)
    (steps, checkpoint), = listCheckpoints(run_dir)
    assert steps == stop_at and readManifest(checkpoint)["stopped_by"] == "SIGINT"


def test_a_stop_before_the_first_step_checkpoints_at_the_first_clean_point_after_it(tmp_path, monkeypatch) -> None:
    """A Ctrl-C while the run starts (its envs being made, before SB3's first rollout start): not a checkpoint of the
    state it started from (step 0; for a resumed run its checkpoint's step, whose folder exists: "not saved"), but
    one at the end of the first update; the runs resumed from those are the uninterrupted run."""
    args = [*GT, *STOPPED["ppo2"][0], "--checkpoint-freq", "5000"]
    reference = trainHere("--log-dir", tmp_path / "reference", *args)
    original = TrainingCallbacks.on_training_start

    def stoppedAtStart(self, *start) -> None:
        self.requestStop(signal.SIGINT)
        original(self, *start)

    monkeypatch.setattr(TrainingCallbacks, "on_training_start", stoppedAtStart)
    log_dir = str(tmp_path / "stopped")
    assert train.main(["--no-vis", "--no-progress", "--log-dir", log_dir, *args]) == 130
    (run_dir,) = glob.glob(os.path.join(log_dir, "*", "*", "*", "*"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a checkpoint not saved is a warning)
        assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 130
    assert [steps for steps, _ in listCheckpoints(run_dir)] == [256, 512]
    monkeypatch.setattr(TrainingCallbacks, "on_training_start", original)
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    assert _monitorRows(run_dir) == _monitorRows(reference) and _progressRows(run_dir) == _progressRows(reference)
    assert _sameWeights(run_dir, reference, "ppo2")


def test_a_stop_during_an_evaluation_still_waits_for_the_end_of_the_update(tmp_path, monkeypatch) -> None:
    """A stop that comes while an evaluation plays its episodes (from pixels on the arm, longer than STOP_WAIT_S): the
    wait for the clean point counts from the step after the evaluation, so the checkpoint is still at the end of the
    update in progress and the resumed run is the uninterrupted one, its evaluations included."""
    args = [*GT, *STOPPED["ppo2"][0], "--checkpoint-freq", "5000", "--eval-freq", "500", "--eval-episodes", "1"]
    reference = trainHere("--log-dir", tmp_path / "reference", *args)
    offset = [0.0]  # seconds the clock jumped: the evaluation took a minute
    monotonic = checkpoint_callbacks.time.monotonic
    monkeypatch.setattr(checkpoint_callbacks.time, "monotonic", lambda: monotonic() + offset[0])
    evaluate, on_step, running = EvaluationCallback.evaluate, TrainingCallbacks.on_step, []

    def step(self) -> bool:
        running[:] = [self]  # the run's list, whose stop the evaluation asks for
        return on_step(self)

    def slowEvaluation(self, num_timesteps: int) -> None:
        running[0].requestStop(signal.SIGINT)
        evaluate(self, num_timesteps)
        offset[0] += 60.0

    monkeypatch.setattr(TrainingCallbacks, "on_step", step)
    monkeypatch.setattr(EvaluationCallback, "evaluate", slowEvaluation)
    log_dir = str(tmp_path / "stopped")
    assert train.main(["--no-vis", "--no-progress", "--log-dir", log_dir, *args]) == 130
    monkeypatch.setattr(EvaluationCallback, "evaluate", evaluate)
    monkeypatch.setattr(TrainingCallbacks, "on_step", on_step)
    (run_dir,) = glob.glob(os.path.join(log_dir, "*", "*", "*", "*"))
    (steps, checkpoint), = listCheckpoints(run_dir)
    # (the evaluation at 500, in the rollout of steps 256-512: the wait counted from the signal, it was at 500)
    assert steps == 512 and readManifest(checkpoint)["stopped_by"] == "SIGINT"
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    assert _monitorRows(run_dir) == _monitorRows(reference) and _progressRows(run_dir) == _progressRows(reference)
    assert _sameWeights(run_dir, reference, "ppo2")
    evaluations = [np.load(os.path.join(folder, "evaluations.npz")) for folder in (run_dir, reference)]
    assert all(np.array_equal(evaluations[0][key], evaluations[1][key]) for key in ("timesteps", "results"))
