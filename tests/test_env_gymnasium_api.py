"""Gymnasium API details of every env the toolbox registers (gymnasium.make after ``import environments``)."""
from __future__ import annotations

import gymnasium as gym
import pytest

from environments.registry import registerAll

TOOLBOX_ENVS = sorted(env_id for env_id, entry_point in registerAll().items()
                      if entry_point.startswith("environments."))


@pytest.mark.parametrize("env_id", TOOLBOX_ENVS)
def test_np_random_seed_is_the_seed_keyword(env_id: str) -> None:
    """An env built with seed=s reported np_random_seed -1 (gymnasium's "unknown seed") until a seeded reset."""
    env = gym.make(env_id, srl_model="ground_truth", seed=11)
    try:
        assert env.unwrapped.np_random_seed == 11
        env.reset()
        assert env.unwrapped.np_random_seed == 11
        env.reset(seed=5)
        assert env.unwrapped.np_random_seed == 5
    finally:
        env.close()
    env = gym.make(env_id, srl_model="ground_truth")  # unseeded: the seed drawn from the OS's entropy
    try:
        assert env.unwrapped.np_random_seed >= 0
    finally:
        env.close()


@pytest.mark.parametrize("env_id", TOOLBOX_ENVS)
def test_a_closed_env_refuses_to_be_used_in_one_line(env_id: str) -> None:
    """reset, step or render after close() failed deep inside (AttributeError on None, PyBullet's "Not connected to
    physics server"), or went on (Omnirobot); close() twice stays allowed."""
    env = gym.make(env_id, srl_model="ground_truth", render_mode="rgb_array")
    env.reset(seed=0)
    env.close()
    env.close()
    name = type(env.unwrapped).__name__
    for method, call in (("reset", lambda: env.reset(seed=0)), ("step", lambda: env.unwrapped.step(0)),
                         ("render", env.unwrapped.render)):
        with pytest.raises(RuntimeError, match=rf"^{name}\.{method}\(\) after close\(\): .*make a new env$"):
            call()
