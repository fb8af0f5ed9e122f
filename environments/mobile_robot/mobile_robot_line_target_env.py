"""MobileRobotLineTargetGymEnv: the mobile robot must reach a yellow band across the arena (original toolbox)."""
from __future__ import annotations

import math
import os

import numpy as np

from environments.mobile_robot.mobile_robot_env import URDF_DIR, MobileRobotGymEnv


class MobileRobotLineTargetGymEnv(MobileRobotGymEnv):
    """
    The target is a yellow band (0.5 m wide) running along y across the whole arena, centred on x = LINE_X.

    Only x matters: the robot is on target when its x is within REWARD_DIST_THRESHOLD = 0.1 m of the reach line
    ``LINE_X - LINE_OFFSET``; that gives +1 per step, a bump -1 (it overrides the +1), and ``shape_reward`` minus
    the x distance. ``getTargetPos()`` is the point of the reach line at mid-arena, ``(LINE_X - LINE_OFFSET, 2)``,
    so that it has the ground truth's two dimensions (the original returned the 1-D x, which its relative ground
    truth then broadcast against (x, y)); the relative ground truth is thus (x distance to the line, y - 2).
    Actions and everything else are MobileRobotGymEnv's. In goal mode the goals are (x, y) points too, and only
    their x distance counts (``goalDistance``).

    :param kwargs: MobileRobotGymEnv's keywords (``random_target`` draws LINE_X in LINE_X_RANGE)
    """

    REWARD_DIST_THRESHOLD = 0.1
    TARGET_LINE_AXIS = 0  # the reach line x = getTargetPos()[0]
    LINE_X = 3.6
    LINE_OFFSET = 0.2
    # The original drew LINE_X in [0.4, 3.6]; below 0.525 the reach line is out of the robot's reach (its x stays
    # >= 0.425), so the range starts at 0.6.
    LINE_X_RANGE = (0.6, 3.6)
    TARGET_POS = (LINE_X - LINE_OFFSET, 2.0)

    def _loadTargets(self) -> None:
        self._line_x = self.LINE_X
        self._target_uid = self._p.loadURDF(os.path.join(URDF_DIR, "wall_target.urdf"), self._bandPosition(),
                                            self._bandOrientation(), useFixedBase=True)

    def _bandPosition(self) -> list[float]:
        return [self._line_x, (self.MIN_Y + self.MAX_Y) / 2, 0.0]

    def _bandOrientation(self) -> list[float]:
        return [0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)]  # a quarter turn: along y

    def _resetTargets(self) -> None:
        if self.random_target:
            self._line_x = float(self.np_random.uniform(*self.LINE_X_RANGE))
            self._teleport(self._target_uid, self._bandPosition(), self._bandOrientation())
        self._target_x = self._line_x - self.LINE_OFFSET
        self._target_y = self.TARGET_POS[1]

    def _taskReward(self, bumped: bool) -> tuple[float, bool]:
        distance = abs(self._robot_x - self._target_x)
        success = distance <= self.REWARD_DIST_THRESHOLD
        if self.shape_reward:
            return -distance, success
        if bumped:
            return -1.0, success
        return (1.0 if success else 0.0), success

    def goalDistance(self, achieved_goal: np.ndarray, desired_goal: np.ndarray) -> np.ndarray:
        """:return: the x distances (the band spans the arena along y)"""
        return np.abs(achieved_goal[..., 0] - desired_goal[..., 0])

    @property
    def lineX(self) -> float:
        """x of the band's centre line."""
        return self._line_x
