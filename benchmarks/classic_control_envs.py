"""CartPole-v1 and Pendulum-v1 (gymnasium) behind the SRLGymEnv interface, declared to the command line as a plugin.

The train command accepts only envs declared under the ``srl_toolbox.environments`` entry points, so
:func:`writePluginMetadata` writes a throw-away package metadata folder declaring these two classes; put on a run's
PYTHONPATH, it makes them trainable exactly as a third-party env plugin would be, with nothing in the project changed.
The observation is the gymnasium state (the ground truth). This module is imported by every run that uses the plugin:
it imports no part of the train command.
"""
from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from environments.srl_env import SRLGymEnv

CARTPOLE = "CartPole-v1"
PENDULUM = "Pendulum-v1"


class ClassicControlEnv(SRLGymEnv):
    """
    A gymnasium classic-control env behind the SRLGymEnv interface: its state is the ground truth.

    :param srl_model: only "ground_truth"
    :param is_discrete: must match the wrapped env's action space
    :param seed: seed of the first reset
    :param kwargs: the other SRLGymEnv keywords (unused by the task; random_target and shape_reward refused)
    """

    GYM_ID = ""
    DISCRETE = True
    SRL_MODES = ("ground_truth",)
    RELATIVE_POS = False
    RANDOM_TARGET = False  # no target to move, no distance to reward
    SHAPED_REWARD = False

    def __init__(self, *, srl_model: str = "ground_truth", is_discrete: bool = True, seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(srl_model=srl_model, is_discrete=is_discrete, relative_pos=False, seed=seed, **kwargs)
        if is_discrete != self.DISCRETE:
            raise ValueError(f"{self.GYM_ID} has {'discrete' if self.DISCRETE else 'continuous'} actions only")
        self._env = gym.make(self.GYM_ID)
        self.observation_space = self._env.observation_space
        self.action_space = self._env.action_space
        self._state = np.zeros(self.observation_space.shape, dtype=np.float32)
        self._next_seed = seed

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """
        :param seed: reseeds the wrapped env when given (else the constructor's seed, once)
        :param options: passed to the wrapped env
        :return: (state, info)
        """
        super().reset(seed=seed)
        seed, self._next_seed = (seed if seed is not None else self._next_seed), None
        self._state, info = self._env.reset(seed=seed, options=options)
        return self._state, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """:param action: an action of the wrapped env"""
        self._state, reward, terminated, truncated, info = self._env.step(action)
        info["is_success"] = self.isSuccess(terminated, truncated)  # the monitor files record it
        return self._state, float(reward), terminated, truncated, info

    def isSuccess(self, terminated: bool, truncated: bool) -> bool:
        """
        :param terminated: the episode failed or reached a terminal state
        :param truncated: the time limit ended it
        :return: whether the last step counts as a success
        """
        raise NotImplementedError

    def close(self) -> None:
        """Close the wrapped env."""
        self._env.close()

    def getTargetPos(self) -> np.ndarray:
        """:return: zeros (the task has no target)"""
        return np.zeros_like(self._state)

    def getRobotPos(self) -> np.ndarray:
        """:return: the gymnasium state"""
        return np.asarray(self._state)


class CartPoleSRLEnv(ClassicControlEnv):
    """gymnasium's CartPole-v1 (500 steps, +1 per step upright)."""

    GYM_ID, DISCRETE, MAX_STEPS = CARTPOLE, True, 500

    def isSuccess(self, terminated: bool, truncated: bool) -> bool:
        """:return: the pole stayed up until the time limit"""
        return bool(truncated and not terminated)

    @staticmethod
    def getGroundTruthDim() -> int:
        """:return: 4 (cart position and velocity, pole angle and angular velocity)"""
        return 4


class PendulumSRLEnv(ClassicControlEnv):
    """gymnasium's Pendulum-v1 (200 steps, reward minus the cost of angle, speed and torque)."""

    GYM_ID, DISCRETE, MAX_STEPS = PENDULUM, False, 200

    def isSuccess(self, terminated: bool, truncated: bool) -> bool:
        """:return: the pendulum is within about 18 degrees of upright"""
        return bool(self._state[0] > 0.95)

    @staticmethod
    def getGroundTruthDim() -> int:
        """:return: 3 (cos, sin of the angle, angular velocity)"""
        return 3


def writePluginMetadata(folder: str) -> str:
    """
    Declare CartPole-v1 and Pendulum-v1 under ``srl_toolbox.environments`` in a package metadata folder.

    :param folder: where to create it (put it on PYTHONPATH to make the entry points visible)
    :return: the ``.dist-info`` folder written
    """
    dist_info = os.path.join(folder, "srl_toolbox_learning_benchmark-0.0.0.dist-info")
    os.makedirs(dist_info, exist_ok=True)
    with open(os.path.join(dist_info, "METADATA"), "w", encoding="utf-8") as metadata:
        metadata.write("Metadata-Version: 2.1\nName: srl-toolbox-learning-benchmark\nVersion: 0.0.0\n")
    with open(os.path.join(dist_info, "entry_points.txt"), "w", encoding="utf-8") as entry_points:
        entry_points.write(f"[srl_toolbox.environments]\n{CARTPOLE} = benchmarks.classic_control_envs:CartPoleSRLEnv\n"
                           f"{PENDULUM} = benchmarks.classic_control_envs:PendulumSRLEnv\n")
    return dist_info
