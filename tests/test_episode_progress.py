"""Progress bars over episodes move with the steps within them (a CarRacing episode lasts up to 10000 steps)."""
from __future__ import annotations

import io
import sys
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import tqdm.std
from stable_baselines3.common.vec_env import DummyVecEnv

from environments import dataset_generator
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from rl_baselines.runs.evaluation import Evaluator
from srl_toolbox.progress import REDRAW_PERIOD_S, EpisodeBar, stepLimit


@pytest.fixture
def counts(monkeypatch) -> list[float]:
    """Every count a tqdm bar reaches through update (the bars under test call it; it draws or not)."""
    seen: list[float] = []
    update = tqdm.std.tqdm.update

    def recording(self, n=1):
        shown = update(self, n)
        seen.append(float(self.n))
        return shown

    monkeypatch.setattr(tqdm.std.tqdm, "update", recording)
    return seen


def test_an_episode_bar_counts_the_steps_of_the_episodes_in_progress():
    stream = io.StringIO()
    bar = EpisodeBar(total=4, initial=1, max_steps=100, step_name="frames", file=stream, mininterval=0)
    bar.step("a", 25)
    bar.step("b", 50)
    assert bar.n == pytest.approx(1.75) and bar.stepsPlayed() == 75
    bar.step("a", 250)  # past the limit: one episode at most
    assert bar.n == pytest.approx(2.5)
    bar.finish("a", 250)  # finished: one, whatever its length
    assert bar.n == pytest.approx(2.5) and bar.stepsPlayed() == 300
    bar.finish("b", 60)  # ended early: the count jumps to the next episode, never back
    assert bar.n == pytest.approx(3)
    bar.close()
    assert "3.00/4" in stream.getvalue() and "frames=310" in stream.getvalue()

    stream = io.StringIO()
    bar = EpisodeBar(total=2, max_steps=None, file=stream, mininterval=0)  # no step limit: whole episodes only
    bar.step(0, 10)
    assert bar.n == 0 and "steps=10" in stream.getvalue()  # the postfix moves all the same
    bar.finish(0, 12)
    assert bar.n == 1 and "| 1/2 " in stream.getvalue()
    bar.close()


def test_the_step_limit_is_the_srl_envs_or_the_specs():
    env = MobileRobotGymEnv(max_steps=40, img_shape=(3, 32, 32))
    try:
        assert stepLimit(env) == 40
    finally:
        env.close()
    env = gym.make("CartPole-v1")
    assert stepLimit(env) == 500
    env.close()
    # a numpy integer is a limit; an infinite one (or a flag) is none, and does not stop the bar
    assert [stepLimit(SimpleNamespace(max_steps=limit)) for limit in (np.int64(50), float("inf"), True)] == \
        [50, None, None]
    bar = EpisodeBar(total=1, file=io.StringIO())
    assert bar.mininterval == REDRAW_PERIOD_S  # (a log file gets a line a second, not ten)
    bar.close()


@pytest.mark.parametrize("num_cpu", [1, 2])
def test_the_generators_bar_moves_within_an_episode(tmp_path, monkeypatch, counts, num_cpu):
    """The bar moved only when an episode ended: nothing moved for minutes on CarRacing, and no ETA existed."""
    monkeypatch.setattr(dataset_generator, "POLL_SECONDS", 0.002, raising=False)  # (the workers' steps, read often)
    config = dataset_generator.parseConfig(["--env", "MobileRobotGymEnv-v0", "--img-shape", "3", "32", "32",
                                            "--max-steps", "120", "--num-episode", str(num_cpu),
                                            "--num-cpu", str(num_cpu), "--save-path", str(tmp_path)])
    assert dataset_generator.generate(config) == 0
    within = [n for n in counts if 0 < n % 1 < 1 - 1e-9]
    assert within, f"the bar only reached {sorted(set(counts))}"
    assert counts == sorted(counts) and counts[-1] == pytest.approx(num_cpu)


class RandomActions:
    """An agent that acts at random (getAction, as a BaseRLObject)."""

    def __init__(self, env) -> None:
        self.env = None  # (no normalised training env)
        self.space = env.action_space

    def getAction(self, observation, dones=None, deterministic=True):
        return np.array([self.space.sample() for _ in range(len(observation))])


def test_the_evaluation_bar_moves_within_an_episode(counts, monkeypatch):
    """train's periodic evaluations played whole episodes with nothing moving (the training bar waits meanwhile)."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # (shown on a terminal only)
    env = DummyVecEnv([lambda: MobileRobotGymEnv(srl_model="ground_truth", max_steps=80)])
    evaluator = Evaluator(RandomActions(env), SimpleNamespace(seed=0, no_progress=False), None, eval_freq=1,
                          n_episodes=2)
    evaluator.env = env
    try:
        evaluator.evaluate(1)
    finally:
        evaluator.close()
    assert [n for n in counts if 0 < n % 1 < 1 - 1e-9], f"the bar only reached {sorted(set(counts))}"
    assert counts == sorted(counts) and counts[-1] == pytest.approx(2)


def test_the_evaluation_calls_back_after_each_of_its_steps():
    """What cannot wait for an evaluation's end (the progress bar saying that a stop was asked) is called after each
    of its episodes' steps, with or without a bar."""
    env = DummyVecEnv([lambda: MobileRobotGymEnv(srl_model="ground_truth", max_steps=30)])
    evaluator = Evaluator(RandomActions(env), SimpleNamespace(seed=0, no_progress=True), None, eval_freq=1,
                          n_episodes=2)
    evaluator.env = env
    calls: list[int] = []
    try:
        evaluator.evaluate(1, between_steps=lambda: calls.append(1))
    finally:
        evaluator.close()
    assert len(calls) == sum(evaluator.ep_lengths[-1]) > 2


@pytest.mark.parametrize("terminal", [True, False])
def test_the_evaluation_bar_counts_agent_steps_on_a_terminal_only(counts, monkeypatch, terminal):
    """With --action-repeat 4 an episode in progress was counted against the env's step limit (a quarter at most,
    then a jump to one); in a file or a pipe each redraw of the second bar was a line and a cursor move."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    limits = []
    original = EpisodeBar.__init__

    def recording(self, *args, **kwargs):
        limits.append(kwargs.get("max_steps"))
        original(self, *args, **kwargs)

    monkeypatch.setattr(EpisodeBar, "__init__", recording)
    env = DummyVecEnv([lambda: MobileRobotGymEnv(srl_model="ground_truth", max_steps=82)])
    evaluator = Evaluator(RandomActions(env), SimpleNamespace(seed=0, no_progress=False, action_repeat=4), None,
                          eval_freq=1, n_episodes=1)
    evaluator.env = env
    try:
        evaluator.evaluate(1)
    finally:
        evaluator.close()
    assert limits == [21]  # ceil(82 / 4) agent steps
    assert bool(counts) == terminal  # a hidden bar counts nothing
