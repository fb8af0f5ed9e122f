"""KukaRandButtonGymEnv: KukaButtonGymEnv with distracting objects scattered on the table and a ball kicked around."""
from __future__ import annotations

import os

import numpy as np

from environments.bullet import pybullet, pybullet_data
from environments.kuka.kuka_button_env import KukaButtonGymEnv


class KukaRandButtonGymEnv(KukaButtonGymEnv):
    """
    The KukaButton task with N_OBJECTS distractors (ducks, lego bricks, small cubes) dropped at random places on
    the table at every reset, never on the button, and a small ball kicked in a random horizontal direction at
    step BALL_KICK_FIRST_STEP and every BALL_KICK_PERIOD steps after. The distractors only change what the
    camera sees and what the arm may bump into: rewards and ground truth are those of KukaButtonGymEnv.

    :param kwargs: the KukaButtonGymEnv keywords
    """

    # The set of objects is fixed (it cycles through OBJECT_URDFS); their places and headings are drawn per episode.
    N_OBJECTS = 10
    OBJECT_URDFS = ("duck_vhacd.urdf", "lego/lego.urdf", "cube_small.urdf")
    OBJECT_X_RANGE = (0.35, 0.65)
    OBJECT_Y_RANGE = (-0.3, 0.3)
    OBJECT_Z = -0.1  # dropped from just above the table top
    RESET_SETTLE_STEPS = 500  # the dropped objects (ducks rock for a while) come to rest
    # 500 steps of tumbling objects turn the contact caches' 1e-4 into pixels: reset(seed=s) rebuilds the scene
    SEEDED_RESET_BUILDS_ANEW = True
    OBJECT_BUTTON_CLEARANCE = 0.1  # no object centre within this half-side square around a button
    BALL_URDF = "sphere_small.urdf"
    BALL_POS = (0.25, -0.2, 0.1)
    BALL_KICK_FIRST_STEP = 10
    BALL_KICK_PERIOD = 100
    BALL_KICK_FORCE = 10.0  # horizontal, in a random direction; applied for one physics step
    BALL_KICK_UP = 1.0

    def _loadExtras(self) -> None:
        """Load the distractors (in a row at the far end of the table) and the ball."""
        data = pybullet_data.getDataPath()
        self._object_uids = [
            self._p.loadURDF(os.path.join(data, self.OBJECT_URDFS[i % len(self.OBJECT_URDFS)]),
                             [1.1, -0.4 + 0.08 * i, self.OBJECT_Z])
            for i in range(self.N_OBJECTS)
        ]
        self._ball_uid = self._p.loadURDF(os.path.join(data, self.BALL_URDF), list(self.BALL_POS))

    def _onReset(self) -> None:
        """Scatter the distractors on the table, away from the buttons (the ball starts where it was saved)."""
        rng = self.np_random
        buttons = self._button_positions[:, :2]
        for uid in self._object_uids:
            while True:
                xy = np.array([rng.uniform(*self.OBJECT_X_RANGE), rng.uniform(*self.OBJECT_Y_RANGE)])
                if np.all(np.max(np.abs(buttons - xy), axis=1) > self.OBJECT_BUTTON_CLEARANCE):
                    break
            orientation = self._p.getQuaternionFromEuler([0.0, 0.0, float(rng.uniform(-np.pi, np.pi))])
            self._teleport(uid, [float(xy[0]), float(xy[1]), self.OBJECT_Z], orientation)

    def _beforePhysics(self) -> None:
        """Kick the ball on schedule."""
        step = self._step_counter
        if step >= self.BALL_KICK_FIRST_STEP and (step - self.BALL_KICK_FIRST_STEP) % self.BALL_KICK_PERIOD == 0:
            direction = self.np_random.normal(size=2)
            direction *= self.BALL_KICK_FORCE / max(float(np.linalg.norm(direction)), 1e-9)
            position = self._p.getBasePositionAndOrientation(self._ball_uid)[0]
            self._p.applyExternalForce(self._ball_uid, -1, [float(direction[0]), float(direction[1]),
                                                            self.BALL_KICK_UP], position, pybullet.WORLD_FRAME)
