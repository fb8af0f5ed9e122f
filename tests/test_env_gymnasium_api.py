"""Gymnasium API details of every env the toolbox registers (gymnasium.make after ``import environments``)."""
from __future__ import annotations

import copy
import ctypes.util
import os
import subprocess
import sys
import textwrap
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from environments import getEnvClass
from environments.observation_check import ObservationSpaceWarning
from environments.registry import registerAll
from environments.srl_env import discreteActionIndex
from rl_baselines.envs.factory import makeSingleEnv

UNANSWERED_DISPLAY = ":9071"  # an X display no server answers on
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


@pytest.mark.parametrize("env_id", TOOLBOX_ENVS)
def test_step_or_render_before_reset_is_refused_in_one_line(env_id: str) -> None:
    """An env class used directly (not through gymnasium.make, whose OrderEnforcing refuses it) failed deep inside on
    a step before its first reset (KukaMovingButton: AttributeError _button_velocity; CarRacing: an empty
    AssertionError) or played a step from a scene never reset; a copy is built anew, so it must be reset too. render()
    is refused the same way (CarRacing returned None in rgb_array mode: no track before the first reset)."""
    env = getEnvClass(env_id)(srl_model="ground_truth", render_mode="rgb_array")
    copied = copy.deepcopy(env)
    try:
        for instance in (env, copied):
            name = type(instance).__name__
            for method, call in (("step", lambda: instance.step(0)), ("render", instance.render)):
                with pytest.raises(RuntimeError, match=rf"^{name}\.{method}\(\) before reset\(\): call reset\(\) first$"):
                    call()
        env.reset(seed=0)
        env.step(0)
        assert env.render().ndim == 3
    finally:
        copied.close()
        env.close()


@pytest.mark.skipif(ctypes.util.find_library("X11") is None or not sys.platform.startswith("linux"),
                    reason="no Xlib to ask an X server with")
def test_human_mode_with_a_display_whose_x_server_does_not_answer() -> None:
    """DISPLAY set to an X server that does not answer (a stale ssh -X session): PyBullet's GUI ended the whole
    process with exit code 1 and no message (its own is silenced with its banner), and CarRacing played on without a
    window. Each env now refuses in one line, and an instance lists only rgb_array (gymnasium's check_env passes)."""
    script = textwrap.dedent("""
        import gymnasium, environments
        for env_id in ("KukaButtonGymEnv-v0", "MobileRobotGymEnv-v0", "CarRacingGymEnv-v0"):
            try:
                gymnasium.make(env_id, srl_model="ground_truth", render_mode="human")
            except RuntimeError as error:
                print(env_id, error)
            env = gymnasium.make(env_id, srl_model="ground_truth")
            print(env_id, env.unwrapped.metadata["render_modes"])
            env.close()
        print("alive")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "DISPLAY": UNANSWERED_DISPLAY})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "alive", result.stdout
    for env_id in ("KukaButtonGymEnv-v0", "MobileRobotGymEnv-v0", "CarRacingGymEnv-v0"):
        assert (f"{env_id} renders=True (or render_mode='human') needs a display (cannot connect to the X server of "
                f"DISPLAY={UNANSWERED_DISPLAY}); use renders=False and render_mode='rgb_array', or run under a display "
                "(e.g. xvfb-run)") in lines, result.stdout
        assert f"{env_id} ['rgb_array']" in lines, result.stdout


@pytest.mark.parametrize("env_id", TOOLBOX_ENVS)
def test_the_first_observations_fit_the_observation_space(env_id: str) -> None:
    """The factory checks an env's first observations against its space (ObservationSpaceWarning): the toolbox's
    own envs give none, in their states and in their images."""
    for mode in [mode for mode in ("ground_truth", "raw_pixels") if mode in getEnvClass(env_id).SRL_MODES]:
        env = makeSingleEnv(env_id, {"srl_model": mode, "img_shape": (3, 32, 32), "seed": 0})
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", ObservationSpaceWarning)
                env.reset(seed=0)
                env.step(env.action_space.sample())
        finally:
            env.close()


@pytest.mark.parametrize("env_id", ["MobileRobotGymEnv-v0", "OmnirobotEnv-v0", "KukaButtonGymEnv-v0",
                                    "CarRacingGymEnv-v0"])  # one per step() of its own
def test_a_discrete_action_that_is_no_integer_is_refused_in_one_line(env_id: str) -> None:
    """1.5 was taken as action 1 and "1" as 1 (int() of them), an array of shape (1,) failed in numpy's TypeError; the
    integers of every kind, and integer-valued floats, still step."""
    env = gym.make(env_id, srl_model="ground_truth").unwrapped
    try:
        env.reset(seed=0)
        for action in (1, np.int64(1), np.array(1), 1.0, np.float32(1.0)):
            env.step(action)
        for action in (1.5, "1", np.array([1]), float("nan"), -1, 4 if env_id != "KukaButtonGymEnv-v0" else 6):
            with pytest.raises(ValueError, match=r"^discrete action must be an integer in \[0, \d\), got \S+$"):
                env.step(action)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["MobileRobotGymEnv-v0", "OmnirobotEnv-v0", "KukaButtonGymEnv-v0",
                                    "CarRacingGymEnv-v0"])  # one per step() of its own
def test_a_continuous_action_that_is_not_finite_is_refused_in_one_line(env_id: str) -> None:
    """The mobile robots and Omnirobot took a NaN move as a bump (-1, the robot kept still) and an infinite one as a
    full move, where the Kuka arms and CarRacing refused both, as gymnasium's Box.contains does; an array of another
    shape with as many values ([[0.5], [0.5]]) is refused too."""
    env = gym.make(env_id, srl_model="ground_truth", is_discrete=False).unwrapped
    try:
        env.reset(seed=0)
        size = env.action_space.shape[0]
        env.step(np.zeros(size))
        for bad in (np.nan, np.inf, -np.inf):
            action = np.zeros(size)
            action[0] = bad
            with pytest.raises(ValueError, match=r"^continuous action must be \d finite value"):
                env.step(action)
        # another shape holding as many values, as gymnasium's Box.contains refuses it (it was taken, flattened); one
        # env's action as a batch of one is taken (SB3's predict on a batched observation)
        env.step(np.zeros((1, size)))
        for bad in (np.zeros((size, 1)), np.zeros((1, 1, size)), 0.5):
            with pytest.raises(ValueError, match=rf"^continuous action must be {size} finite values.* of shape "
                                                 rf"\({size},\), got "):
                env.step(bad)
        env.step(list(np.zeros(size)))  # (a list of the values, as Box.contains takes one)
    finally:
        env.close()


def test_discrete_action_index() -> None:
    assert discreteActionIndex(np.uint8(2), 3) == 2 and discreteActionIndex(np.array(2.0), 3) == 2
    assert discreteActionIndex(True, 2) == 1
    for action in (3, np.inf, np.array([[0]]), None, 0.5, np.array("0")):
        with pytest.raises(ValueError, match=r"^discrete action must be an integer in \[0, 3\), got "):
            discreteActionIndex(action, 3)


@pytest.mark.parametrize("keyword", ["is_discrete", "relative_pos", "random_target", "shape_reward", "renders",
                                     "action_joints", "goal_conditioned"])
def test_a_switch_keyword_that_is_no_bool_is_refused_in_one_line(keyword: str) -> None:
    """is_discrete="no" made a discrete env (a non-empty text is true), and the text stayed in the attribute."""
    with pytest.raises(ValueError, match=rf"^{keyword} must be True or False, got 'no'$"):
        gym.make("MobileRobotGymEnv-v0", srl_model="ground_truth", **{keyword: "no"})
    env = gym.make("MobileRobotGymEnv-v0", srl_model="ground_truth", is_discrete=np.False_)
    try:
        assert env.unwrapped.is_discrete is False and isinstance(env.action_space, gym.spaces.Box)
    finally:
        env.close()


@pytest.mark.parametrize(("keyword", "value", "message"), [
    ("render_size", (96, 96), r"render_size must be a positive integer \(the side of render\(\)'s square image\), "
                              r"got \(96, 96\)"),
    ("render_size", 64.5, r"render_size must be a positive integer .*, got 64\.5"),
    ("render_size", "96", r"render_size must be a positive integer .*, got '96'"),
    ("max_steps", "10", r"max_steps must be a positive integer, got '10'"),
    ("img_shape", (3, 32.5, 32), r"img_shape must be \(3, height, width\) with positive integer sizes, got "
                                 r"\(3, 32\.5, 32\)"),
    ("img_shape", "3 32 32", r"img_shape must be .*, got '3 32 32'"),
    ("img_shape", 32, r"img_shape must be .*, got 32"),
])
def test_a_size_keyword_that_is_no_whole_number_is_refused_in_one_line(keyword: str, value: Any,
                                                                       message: str) -> None:
    """A tuple render_size failed in int() (a TypeError gymnasium wrapped with its kwargs), a fractional size was
    rounded down silently, and a text max_steps failed comparing a str with an int."""
    with pytest.raises(ValueError, match=rf"^{message}$"):
        gym.make("OmnirobotEnv-v0", srl_model="raw_pixels", render_mode="rgb_array", **{keyword: value})
    env = gym.make("OmnirobotEnv-v0", srl_model="raw_pixels", render_mode="rgb_array", render_size=np.int64(40),
                   img_shape=[3, 24.0, np.int32(24)], max_steps=5.0)
    try:
        env.reset(seed=0)
        assert env.render().shape == (40, 40, 3) and env.observation_space.shape == (24, 24, 3)
        assert env.unwrapped.max_steps == 5
    finally:
        env.close()
