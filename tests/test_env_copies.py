"""Copies of envs (``copy.deepcopy``, ``pickle``) are new envs built from the same constructor arguments.

Every SRLGymEnv is a ``gymnasium.utils.EzPickle`` (environments/srl_env.py): a copy has its own simulator (its own
PyBullet connection), so that dropping it never disconnects the original or an env made later, and it starts as a
fresh env built with the original's keywords would (spaces, seeded and unseeded resets, steps), not in the original's
state. Every env id the toolbox registers is checked, with non-default keywords, in ground-truth mode.
"""
from __future__ import annotations

import copy
import gc
import pickle
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from environments.car_racing.car_env import _SizedCarRacing
from environments.registry import getEnvClass, registerAll

TOOLBOX_ENVS = sorted(env_id for env_id, entry_point in registerAll().items()
                      if entry_point.startswith("environments."))
COPIERS: dict[str, Callable[[Any], Any]] = {
    "deepcopy": copy.deepcopy,
    "pickle": lambda env: pickle.loads(pickle.dumps(env)),
}
N_STEPS = 3


def _keywords(env_id: str) -> dict[str, Any]:
    """:return: ground-truth constructor keywords of ``env_id``, as many of them not the defaults as it takes"""
    env_class = getEnvClass(env_id)
    keywords: dict[str, Any] = {"srl_model": "ground_truth", "relative_pos": False, "is_discrete": False,
                                "max_steps": 7, "seed": 11}
    other = next((r for r in env_class.RENDERERS if r != env_class.DEFAULT_RENDERER), None)
    if other is not None:  # (every env takes the keyword; one that draws its own images offers its default only)
        keywords["renderer"] = other
    if env_class.acceptsKeyword("max_distance"):
        keywords["max_distance"] = 0.7
    return keywords


def _play(env: gym.Env, seed: int | None) -> list[np.ndarray]:
    """:return: the reset's observation then those and the rewards of N_STEPS fixed actions"""
    observation, _ = env.reset(seed=seed)
    played = [np.asarray(observation)]
    for step in range(N_STEPS):
        if isinstance(env.action_space, gym.spaces.Discrete):
            action = step % int(env.action_space.n)
        else:
            action = np.full(env.action_space.shape, 0.5 if step % 2 else -0.5, dtype=np.float32)
        observation, reward, _, _, _ = env.step(action)
        played += [np.asarray(observation), np.asarray(reward)]
    return played


def _assertSamePlay(first: list[np.ndarray], second: list[np.ndarray]) -> None:
    assert len(first) == len(second)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


# each env copied one way, the two ways alternating over the sorted ids (both reach EzPickle's __reduce__ and the
# env's __setstate__): each family (arms, mobile robots) is copied both ways
@pytest.mark.parametrize("env_id, copier", [(env_id, sorted(COPIERS)[index % 2])
                                            for index, env_id in enumerate(TOOLBOX_ENVS)])
def test_copy_is_an_independent_env_built_with_the_same_keywords(env_id: str, copier: str) -> None:
    keywords = _keywords(env_id)
    original = gym.make(env_id, **keywords)
    fresh = gym.make(env_id, **keywords)
    later = None
    try:
        _play(original, seed=3)  # the state a copy must not take over
        duplicate = COPIERS[copier](original)
        assert duplicate.unwrapped is not original.unwrapped
        for name, value in keywords.items():  # the keywords round-trip (those the env keeps as attributes)
            if hasattr(fresh.unwrapped, name) and name != "seed":
                assert getattr(duplicate.unwrapped, name) == getattr(fresh.unwrapped, name), name
        assert duplicate.observation_space == fresh.observation_space
        assert duplicate.action_space == fresh.action_space
        client = getattr(original.unwrapped, "_p", None)
        if client is not None:  # PyBullet envs: a connection of its own
            assert duplicate.unwrapped._p._client != client._client
        # Not the original's state: a fresh env's, its generator seeded by the seed keyword.
        _assertSamePlay(_play(duplicate, seed=None), _play(fresh, seed=None))
        del duplicate
        gc.collect()
        expected = _play(fresh, seed=8)
        _assertSamePlay(_play(original, seed=8), expected)  # the original survives its copy
        later = gym.make(env_id, **keywords)
        del original
        gc.collect()
        original = None
        _assertSamePlay(_play(later, seed=8), expected)  # and dropping the original leaves a later env alone
    finally:
        for env in (original, fresh, later):
            if env is not None:
                env.close()


def test_registered_id_keywords_round_trip() -> None:
    """An id registered with keywords of its own (as a user's gym.register does): its copies keep them."""
    env_id = "MobileRobotCopiesTest-v0"
    gym.register(id=env_id, entry_point=getEnvClass("MobileRobotGymEnv-v0"),
                 kwargs={"random_target": True, "max_steps": 9, "fpv": True})
    try:
        env = gym.make(env_id, srl_model="ground_truth", seed=2)
        for duplicate in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
            built = duplicate.unwrapped
            assert (built.random_target, built.max_steps, built.fpv, built.init_seed) == (True, 9, True, 2)
            _assertSamePlay(_play(duplicate, seed=4), _play(env, seed=4))
            duplicate.close()
        env.close()
    finally:
        gym.registry.pop(env_id, None)


@pytest.mark.parametrize("copier", sorted(COPIERS))
def test_car_racing_simulator_copies_with_its_own_arguments(copier: str) -> None:
    """CarRacingGymEnv's CarRacing subclass (another constructor than CarRacing's EzPickle records) copies too."""
    car = _SizedCarRacing((32, 24), render_mode="rgb_array")
    duplicate = COPIERS[copier](car)
    try:
        assert duplicate is not car and duplicate.frame_size == (32, 24)
        frame, _ = duplicate.reset(seed=1)
        np.testing.assert_array_equal(frame, car.reset(seed=1)[0])
        assert frame.shape == (24, 32, 3)
    finally:
        duplicate.close()
        car.close()
