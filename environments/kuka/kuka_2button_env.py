"""Kuka2ButtonGymEnv: KukaButtonGymEnv with two buttons to press in order, the lighter one first."""
from __future__ import annotations

import numpy as np

from environments.kuka.kuka_button_env import KukaButtonGymEnv


class Kuka2ButtonGymEnv(KukaButtonGymEnv):
    """
    Two buttons side by side: the light (yellow) one must be pressed first, for N_CONTACTS_BEFORE_TERMINATION steps
    (counted over the episode), then the dark (green) one. Each step pressing the button whose turn it is gives +1;
    pressing the other gives nothing. The target (ground truth, shaped reward) is the button whose turn it is; the episode ends
    when the second button has been pressed long enough (or on the table), or after MAX_STEPS steps.

    :param kwargs: the KukaButtonGymEnv keywords (max_distance defaults to MAX_DISTANCE = 2)
    """

    MAX_STEPS = 1500
    # The target changes during an episode: no goal mode (HER assumes one goal per episode).
    GOAL_CONDITIONED = False
    MAX_DISTANCE = 2.0
    BUTTON_URDFS = ("button.urdf", "button_dark.urdf")
    BUTTON_POSITIONS = ((0.5, 0.125, -0.2), (0.5, -0.125, -0.2))
    # random_target: x moves by up to +/- BUTTON_RANDOM_RANGE[0], each button moves away from the other along y
    # by up to BUTTON_RANDOM_RANGE[1].
    BUTTON_RANDOM_RANGE = (0.15, 0.175)
    EFFECTOR_BOUNDS = KukaButtonGymEnv.EFFECTOR_BOUNDS_RANDOM_TARGET

    def _drawButtonPositions(self) -> np.ndarray:
        positions = np.array(self.BUTTON_POSITIONS, dtype=np.float64)
        if self.random_target:
            half_x, spread_y = self.BUTTON_RANDOM_RANGE
            positions[:, 0] += self.np_random.uniform(-half_x, half_x, 2)
            positions[:, 1] += np.sign(positions[:, 1]) * self.np_random.uniform(0.0, spread_y, 2)
        return positions
