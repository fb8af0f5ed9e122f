"""
Checks of an env's observations against its declared ``observation_space``, as gymnasium's PassiveEnvChecker does
for ``gymnasium.make`` (which neither the training env factory nor the dataset generator calls): a plugin env whose
images are float64 for a uint8 space is trained on, or recorded, as something else than it meant.

- :func:`observationProblem`: how one observation does not fit a space (None if it fits);
- :func:`warnObservationProblem`: the one-line :class:`ObservationSpaceWarning` naming the env, the method and the
  problem (the dataset generator's, whose workers hand their problems to the parent);
- :class:`ObservationCheck`: a wrapper checking the first observations of ``reset`` and ``step``
  (:mod:`rl_baselines.envs.factory`'s).
"""
from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np

from srl_toolbox.errors import showOnOneLine
from srl_toolbox.text import withArticle


class ObservationSpaceWarning(UserWarning):
    """An env's observation does not fit its declared ``observation_space`` (a plugin env's bug: an image of float64
    for a uint8 space is cast, or trained on, as something else than the env meant)."""


showOnOneLine(ObservationSpaceWarning, named=True)  # (also in env worker processes, which import this module)


def _describe(array: np.ndarray) -> str:
    """:return: an array's dtype, shape and range of values, e.g. ``float64 (32, 32, 3) in [0, 1]``"""
    values = f" in [{array.min():.6g}, {array.max():.6g}]" if array.size and array.dtype.kind in "biuf" else ""
    return f"{array.dtype} {array.shape}{values}"


def observationProblem(observation: Any, space: gym.Space) -> str | None:
    """
    :param observation: an observation of an env
    :param space: the env's ``observation_space``
    :return: how ``observation`` does not fit ``space`` (its dtype, shape and values beside the space's), None if
        it fits; a Box's dtype must be the space's (a float64 image for a uint8 space does not fit, though it can be
        cast), a Dict's entries are checked each, other spaces by ``space.contains``
    """
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(observation, dict) or set(observation) != set(space.spaces):
            keys = sorted(observation) if isinstance(observation, dict) else type(observation).__name__
            return f"keys {keys}, declared {sorted(space.spaces)}"
        for key, entry in space.spaces.items():
            problem = observationProblem(observation[key], entry)
            if problem is not None:
                return f"[{key!r}] {problem}"
        return None
    if not isinstance(space, gym.spaces.Box):
        return None if space.contains(observation) else f"{observation!r}, not in {space}"
    declared = f"declared {space.dtype} {space.shape} in [{space.low.min():.6g}, {space.high.max():.6g}]"
    if not isinstance(observation, np.ndarray):
        return f"{withArticle(type(observation).__name__)}, not a numpy array ({declared})"
    if observation.dtype != space.dtype or observation.shape != space.shape:
        return f"{_describe(observation)}, {declared}"
    if not space.contains(observation):
        return f"{_describe(observation)}, outside the bounds: {declared}"
    return None


def warnObservationProblem(env_id: str, method: str, problem: str, stacklevel: int = 2) -> None:
    """
    Warn (:class:`ObservationSpaceWarning`, one line) that an observation does not fit its space.

    :param env_id: the env's id
    :param method: the method that returned the observation ("reset" or "step")
    :param problem: what :func:`observationProblem` said
    :param stacklevel: as warnings.warn's, from the caller of this function
    """
    warnings.warn(f"{env_id}: the observation of {method}() does not fit its observation_space: {problem}",
                  ObservationSpaceWarning, stacklevel=stacklevel + 1)


class ObservationCheck(gym.Wrapper):
    """
    Checks the first observation of ``reset`` and the first of ``step`` against the env's ``observation_space``,
    warning once (:class:`ObservationSpaceWarning`, one line naming the env) where one does not fit; then hands each
    call straight to the env (the wrapper leaves its own methods: later steps cost nothing).

    :param env: the env, unwrapped (its own observations)
    :param env_id: its id, for the warning
    """

    def __init__(self, env: gym.Env, env_id: str) -> None:
        super().__init__(env)
        self.env_id = env_id

    def _check(self, observation: Any, method: str) -> None:
        problem = observationProblem(observation, self.env.observation_space)
        if problem is not None:
            self.reset, self.step = self.env.reset, self.env.step  # type: ignore[method-assign] (one warning)
            warnObservationProblem(self.env_id, method, problem, stacklevel=2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        self.reset = self.env.reset  # type: ignore[method-assign]
        observation, info = self.env.reset(seed=seed, options=options)
        self._check(observation, "reset")
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.step = self.env.step  # type: ignore[method-assign]
        result = self.env.step(action)
        self._check(result[0], "step")
        return result
