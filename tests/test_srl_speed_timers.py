"""benchmarks.srl_speed's timers: a timed method keeps its signature, and training runs under a timed PPO.learn."""
from __future__ import annotations

import inspect
from typing import Any

from stable_baselines3 import PPO

from benchmarks import srl_speed
from benchmarks.srl_speed import Timers
from tests.conftest import trainHere


def test_a_timed_method_keeps_its_signature_and_counts_its_time(monkeypatch):
    """Each call's time is added to its label's: two calls of 2 s and 3 s on a fake clock make 5 s."""
    class Owner:
        def work(self, steps: int, log_interval: int = 3) -> int:
            return steps

    clock = iter([10.0, 12.0, 20.0, 23.0])
    monkeypatch.setattr(srl_speed.time, "perf_counter", lambda: next(clock))
    timers = Timers()
    restore = timers.wrap(Owner, "work", "work")
    try:
        assert list(inspect.signature(Owner.work).parameters) == ["self", "steps", "log_interval"]
        assert Owner().work(5) == 5 and Owner().work(7, log_interval=1) == 7
        assert timers.seconds == {"work": 5.0}
    finally:
        restore()
    assert Owner.work.__name__ == "work" and Owner().work(1) == 1  # restored: no fake clock read any more


def test_ppo_trains_under_the_benchmark_timer_and_under_a_plain_wrapper(tmp_path, monkeypatch):
    """The train command reads learn's log_interval default: neither a timed learn nor a ``(*args, **kwargs)``
    wrapper without its signature may break it."""
    timers = Timers()
    restore = timers.wrap(PPO, "learn", "learn")
    try:
        trainHere("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps",
                  "64", "--log-dir", tmp_path / "timed", "--seed", "0", "--checkpoint-freq", "-1")
    finally:
        restore()
    assert timers.seconds["learn"] > 0.0
    original = PPO.learn

    def plain(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs)

    monkeypatch.setattr(PPO, "learn", plain)
    trainHere("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps",
              "64", "--log-dir", tmp_path / "plain", "--seed", "0", "--checkpoint-freq", "-1")
