"""MobileRobot1DGymEnv: the mobile robot on a line (y = 0), reaching a target along x (original toolbox constants)."""
from __future__ import annotations

import numpy as np

from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv


class MobileRobot1DGymEnv(MobileRobotGymEnv):
    """
    The robot moves along the x axis only (y stays 0) toward a yellow disc at x = 3.6.

    Discrete actions: 0: -x, 1: +x (STEP_SIZE); continuous: a 1-D move ``clip(a, -1, 1) * STEP_SIZE`` (the original
    refused continuous actions). Rewards, bumps (x outside ROBOT_X_BOUNDS), truncation and the keywords are
    MobileRobotGymEnv's. Ground truth is the robot's x (minus the target's x when relative_pos). The scene has one
    red wall running along the track, just beside it (the original put it on the track, under the robot), seen by
    the top-down camera centred on (2, 0).

    :param kwargs: MobileRobotGymEnv's keywords (``random_target`` draws the target's x in TARGET_RANGE)
    """

    START_CENTER = (2.0, 0.0)
    TARGET_POS = (3.6, 0.0)
    # The robot's y is pinned to 0: every move keeps it there.
    ROBOT_Y_BOUNDS = (0.0, 0.0)
    WALL_Y = -0.3
    WALL_COLOR = (0.8, 0.0, 0.0, 1.0)
    CAMERA_TARGET_POS = (2.0, 0.0, 0.0)
    CONTINUOUS_ACTION_DIM = 1
    ACTION_NAMES = ("-x", "+x")
    CONTINUOUS_ACTION_NAMES = ("x move",)

    def _discreteMoves(self) -> tuple[tuple[float, float], ...]:
        return ((-self.STEP_SIZE, 0.0), (self.STEP_SIZE, 0.0))

    def _wallPlacements(self) -> list[tuple[list[float], list[float], list[float]]]:
        mid_x = (self.MIN_X + self.MAX_X) / 2
        return [([mid_x, self.WALL_Y, 0.0], [0.0, 0.0, 0.0, 1.0], list(self.WALL_COLOR))]

    def _sampleStart(self) -> tuple[float, float]:
        half = self.START_HALF_RANGE
        return self.START_CENTER[0] + float(self.np_random.uniform(-half, half)), 0.0

    def _resetTargets(self) -> None:
        if self.random_target:
            low, high = self.TARGET_RANGE
            self._target_x = float(self.np_random.uniform(low, high))
            self._teleport(self._target_uid, (self._target_x, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))

    def getSRLState(self) -> np.ndarray:
        """:return: float32 (x,), minus the target's x when relative_pos (no rendering)."""
        if self.relative_pos:
            return np.array((self._robot_x - self._target_x,), dtype=np.float32)
        return np.array((self._robot_x,), dtype=np.float32)

    def getTargetPos(self) -> np.ndarray:
        """:return: the target's x, float32 (1,)."""
        return np.array((self._target_x,), dtype=np.float32)

    def getRobotPos(self) -> np.ndarray:
        """:return: the robot's x, float32 (1,)."""
        return np.array((self._robot_x,), dtype=np.float32)

    @staticmethod
    def getGroundTruthDim() -> int:
        """:return: 1, the ground truth is the robot's x."""
        return 1
