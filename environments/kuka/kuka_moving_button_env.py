"""KukaMovingButtonGymEnv: KukaButtonGymEnv whose button slides slowly left and right."""
from __future__ import annotations

from environments.kuka.kuka_button_env import KukaButtonGymEnv


class KukaMovingButtonGymEnv(KukaButtonGymEnv):
    """
    The button slides along y by BUTTON_SPEED per step (in a random initial direction) and turns back when it
    would pass |y| = BUTTON_Y_LIMIT; the target moves with it. Everything else is KukaButtonGymEnv's.

    :param kwargs: the KukaButtonGymEnv keywords
    """

    MAX_STEPS = 1500
    # The target moves during an episode: no goal mode (HER assumes one goal per episode).
    GOAL_CONDITIONED = False
    BUTTON_SPEED = 0.001
    BUTTON_Y_LIMIT = 0.3
    EFFECTOR_BOUNDS = KukaButtonGymEnv.EFFECTOR_BOUNDS_RANDOM_TARGET

    def _onReset(self) -> None:
        self._button_velocity = self.BUTTON_SPEED * (1.0 if self.np_random.random() > 0.5 else -1.0)

    def _beforePhysics(self) -> None:
        """Slide the button one step, bouncing at the limits."""
        position = self._button_positions[0]
        y = position[1] + self._button_velocity
        if abs(y) > self.BUTTON_Y_LIMIT:
            self._button_velocity = -self._button_velocity
            y = position[1] + self._button_velocity
        position[1] = y
        self._teleport(self._button_uids[0], position.tolist(), (0.0, 0.0, 0.0, 1.0))
