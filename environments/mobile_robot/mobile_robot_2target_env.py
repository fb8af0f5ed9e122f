"""MobileRobot2TargetGymEnv: the mobile robot must reach a yellow target, then a red one (original toolbox)."""
from __future__ import annotations

import math
import os

from environments.mobile_robot.mobile_robot_env import URDF_DIR, MobileRobotGymEnv


class MobileRobot2TargetGymEnv(MobileRobotGymEnv):
    """
    Two target discs, yellow at TARGET_POS then red at SECOND_TARGET_POS, to be reached in that order.

    Coming within REWARD_DIST_THRESHOLD of the current target gives +1; on the first target it also makes the second
    one current, and the first disc disappears from the images (so that pixels tell which target is current). The
    second target stays current until the end: every step spent near it gives +1. A bump gives -1 (it overrides
    the +1); ``shape_reward`` gives minus the distance to the current target. ``getTargetPos()`` and the relative
    ground truth use the current target. Episodes last MAX_STEPS = 1500 steps. ``info["is_success"]``: within the
    threshold of the second target. Actions are MobileRobotGymEnv's, continuous ones included.

    :param kwargs: MobileRobotGymEnv's keywords (``random_target`` draws both targets in TARGET_RANGE)
    """

    MAX_STEPS = 1500
    # The target changes during an episode: no goal mode (HER assumes one goal per episode).
    GOAL_CONDITIONED = False
    SECOND_TARGET_POS = (0.4, 3.0)
    TARGET_COLORS = ((1.0, 0.85, 0.0, 1.0), (0.8, 0.0, 0.0, 1.0))
    # A reached target is moved under the floor, out of every camera's sight.
    HIDDEN_Z = -1.0

    def _loadTargets(self) -> None:
        self._targets = [tuple(self.TARGET_POS), tuple(self.SECOND_TARGET_POS)]
        self._target_uids = []
        for (x, y), rgba in zip(self._targets, self.TARGET_COLORS, strict=True):
            uid = self._p.loadURDF(os.path.join(URDF_DIR, "cylinder.urdf"), [x, y, 0.0], useFixedBase=True)
            self._p.changeVisualShape(uid, -1, rgbaColor=list(rgba))
            self._target_uids.append(uid)
        self._setCurrentTarget(0)

    def _setCurrentTarget(self, index: int) -> None:
        self._current_target = index
        self._target_uid = self._target_uids[index]
        self._target_x, self._target_y = self._targets[index]

    def _resetTargets(self) -> None:
        if self.random_target:
            low, high = self.TARGET_RANGE
            rng = self.np_random
            self._targets = [(float(rng.uniform(low, high)), float(rng.uniform(low, high))) for _ in range(2)]
        # Also shows the target hidden in the previous episode.
        for uid, (x, y) in zip(self._target_uids, self._targets, strict=True):
            self._teleport(uid, (x, y, 0.0), (0.0, 0.0, 0.0, 1.0))
        self._setCurrentTarget(0)

    def _taskReward(self, bumped: bool) -> tuple[float, bool]:
        distance = math.hypot(self._robot_x - self._target_x, self._robot_y - self._target_y)
        reached = distance <= self.REWARD_DIST_THRESHOLD
        last = self._current_target == len(self._targets) - 1
        if self.shape_reward:
            reward = -distance
        elif bumped:
            reward = -1.0
        else:
            reward = 1.0 if reached else 0.0
        if reached and not last:
            self._teleport(self._target_uid, (self._target_x, self._target_y, self.HIDDEN_Z), (0.0, 0.0, 0.0, 1.0))
            self._setCurrentTarget(self._current_target + 1)
        return reward, reached and last

    @property
    def currentTarget(self) -> int:
        """Index of the target to reach now: 0 (yellow) then 1 (red)."""
        return self._current_target

