"""MobileRobotGymEnv: a robot moving on a 4 m x 4 m floor toward a target, seen by a top-down camera (PyBullet).

The robot (pybullet_data's racecar) is teleported by the actions, there are no dynamics: PyBullet is only used as
a scene renderer, so nothing is simulated and, in ground-truth mode, nothing is rendered either.
The constants are those of the original toolbox's MobileRobotGymEnv.

Variants (1D, two targets, line target) subclass MobileRobotGymEnv and override its small hooks: the walls and
targets of the scene (``_wallPlacements``, ``_loadTargets``), where episodes start (``_sampleStart``,
``_resetTargets``), the moves (``_discreteMoves``, CONTINUOUS_ACTION_DIM) and the reward (``_taskReward``).
"""
from __future__ import annotations

import functools
import math
import os
from typing import Any

import gymnasium as gym
import numpy as np

from environments.bullet import BulletClient, framingProjection, pybullet, pybullet_data, silencedCOutput
from environments.mobile_robot.sprite_renderer import SpriteRenderer
from environments.srl_env import REFERENCE_RENDERER, SRLGymEnv, continuousAction, discreteActionIndex

# URDFs are resolved from this file, never from the current directory.
URDF_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "urdf")


class MobileRobotGymEnv(SRLGymEnv):
    """
    A mobile robot in a walled 4 m x 4 m arena must reach a yellow target disc.

    Discrete actions move the robot by STEP_SIZE along one axis (0: -x, 1: +x, 2: -y, 3: +y); continuous actions
    are a 2-D move ``clip(a, -1, 1) * STEP_SIZE``; the robot always faces +x (it is teleported, never turned). A
    move that would bring the robot closer than the collision margins to a wall is reverted and counts as a bump.
    Reward: +1 for each step spent within REWARD_DIST_THRESHOLD of the target, -1 on a bump (it overrides the +1),
    0 otherwise; with ``shape_reward`` it is minus the distance to the target. Episodes never terminate; they are
    truncated after ``max_steps`` steps. ``info["bumped"]`` tells a bump.

    Goal mode (``goal_conditioned=True``, ground truth only): Dict observations whose three entries are the robot's
    absolute (x, y) (observation and achieved_goal) and the target's (desired_goal). ``compute_reward`` gives the
    same rewards as above as a function of the goals, the bump's -1 read from ``info["bumped"]`` (a bump does not
    depend on the goal); rewards are computed from the float32 observations, so they equal the normal mode's except
    for a distance within float32 rounding of the threshold.

    :param srl_model: "ground_truth" (robot position, float32 (2,)), "raw_pixels" (uint8 (H, W, 3) top-down image)
        or a learned SRL model name (pixels too, the RL side encodes them)
    :param fpv: pixel observations stack a first-person view from the robot (looking along +x) behind the top
        view: uint8 (H, W, 6), channels 0-2 top view, 3-5 first person. No effect on ground truth or ``render()``
    :param relative_pos: ground truth is the robot position minus the target position
    :param is_discrete: Discrete(4) actions (True) or a Box(-1, 1, (2,)) move (False)
    :param action_joints: not available for this robot (must be False)
    :param random_target: draw the target uniformly in TARGET_RANGE at every reset
    :param shape_reward: reward is minus the distance to the target
    :param renders: open the PyBullet GUI (needs a display)
    :param img_shape: (channels, height, width) of pixel observations, channels must be 3; default (3, 64, 64)
    :param max_steps: episode length, None for MAX_STEPS
    :param seed: seed of the env's random generator (``reset(seed=...)`` reseeds it)
    :param render_mode: "rgb_array" (``render()`` returns an image) or "human"
    :param render_size: side of the square image returned by ``render()`` in "rgb_array" mode (with pixel
        observations, at least their size is used)
    :param goal_conditioned: the goal mode above (srl_model "ground_truth" only; relative_pos is ignored)
    """

    SRL_MODES = ("ground_truth", "raw_pixels")
    # The values of the renderer keyword (--renderer).
    RENDERERS = (REFERENCE_RENDERER, "sprites")
    # What draws the images when no renderer is given (train/prepare/dataset_generator --renderer left out): the
    # sprites, whose frames stay within the tested bounds of TinyRenderer's (README, "Environments").
    DEFAULT_RENDERER = "sprites"
    ACTION_JOINTS = False
    PLOT_TYPE = "2D"
    GROUND_TRUTH_UNIT = "m"
    # The top-down camera (CAMERA_YAW 90) shows x growing down the frame (the wall x=0 at the top) and y growing to
    # the right (the wall y=0 on the left)
    GROUND_TRUTH_VIEW = ("down", "right")
    ACTION_NAMES = ("-x", "+x", "-y", "+y")
    CONTINUOUS_ACTION_NAMES = ("x move", "y move")
    MAX_STEPS = 250
    GOAL_CONDITIONED = True
    GOAL_PENALTY_INFO_KEY = "bumped"

    STEP_SIZE = 0.1
    REWARD_DIST_THRESHOLD = 0.4
    # Arena [MIN_X, MAX_X] x [MIN_Y, MAX_Y], walls centred on its edges.
    MIN_X, MAX_X = 0.0, 4.0
    MIN_Y, MAX_Y = 0.0, 4.0
    WALL_LENGTH, WALL_THICKNESS = 4.0, 0.1
    # Robot footprint: the racecar's length lies along x.
    ROBOT_LENGTH, ROBOT_WIDTH = 0.65, 0.2
    COLLISION_MARGIN = 0.1
    # Where the robot's centre may be: a move leaving these bounds is reverted (a bump).
    ROBOT_X_BOUNDS = (MIN_X + COLLISION_MARGIN + ROBOT_LENGTH / 2, MAX_X - COLLISION_MARGIN - ROBOT_LENGTH / 2)
    ROBOT_Y_BOUNDS = (MIN_Y + COLLISION_MARGIN + ROBOT_WIDTH / 2, MAX_Y - COLLISION_MARGIN - ROBOT_WIDTH / 2)
    # Start position: uniform in START_CENTER +/- START_HALF_RANGE on each axis.
    START_CENTER = (2.0, 2.0)
    START_HALF_RANGE = 4.0 / 3.0
    TARGET_POS = (3.6, 3.0)
    # random_target: uniform in [TARGET_RANGE[0], TARGET_RANGE[1]] on each axis.
    TARGET_RANGE = (0.4, 3.6)
    TARGET_RADIUS = 0.18
    WALL_COLORS = {"y=0": [0.8, 0.0, 0.0, 1.0], "x=4": [0.0, 0.0, 0.0, 1.0],
                   "y=4": [0.0, 0.8, 0.0, 1.0], "x=0": [0.0, 0.0, 0.8, 1.0]}
    # Top-down camera. Pitch -90 does not degenerate: PyBullet rotates the up vector with the camera.
    CAMERA_TARGET_POS = (2.0, 2.0, 0.0)
    CAMERA_DISTANCE = 4.4
    CAMERA_YAW = 90.0
    CAMERA_PITCH = -90.0
    CAMERA_ROLL = 0.0
    CAMERA_FOV = 60.0
    CAMERA_NEAR, CAMERA_FAR = 0.1, 100.0
    # First-person camera (fpv): at the robot's nose, above its stereo camera (the racecar's origin is its rear
    # axle, its front is 0.4 m ahead), looking along +x and down by FPV_PITCH degrees.
    FPV_EYE_OFFSET = (0.42, 0.0, 0.15)
    FPV_PITCH = -17.0
    FPV_FOV = 90.0
    FPV_NEAR = 0.02
    # Continuous actions: a move along x and y (variants may keep x only).
    CONTINUOUS_ACTION_DIM = 2

    @classmethod
    def stepsInWorkers(cls, renderer: str, images: bool) -> bool:
        """:return: True for TinyRenderer's images only: the robot is teleported (no physics), and a state or a
        sprite frame costs less than a worker's round trip (docs/benchmarks.md, "In-process envs")"""
        return images and renderer == REFERENCE_RENDERER

    def __init__(self, *, fpv: bool = False, renderer: str | None = None, **kwargs: Any) -> None:
        """
        :param fpv: stack a first-person view with the top view in pixel observations (6 channels)
        :param renderer: "tinyrenderer" or "sprites" (see the class); None: the class's DEFAULT_RENDERER
        :param kwargs: the SRLGymEnv keywords (an unknown one raises TypeError)
        :raises ValueError: an unknown renderer
        """
        # Set first so that close() works whatever fails below.
        self._p: BulletClient | None = None
        super().__init__(renderer=renderer, **kwargs)
        renderer = self.renderer
        self.fpv = bool(fpv)
        _, height, width = self.img_shape
        self._uses_pixels = self.usesPixels

        self._discrete_moves = self._discreteMoves()
        self._n_discrete = len(self._discrete_moves)
        self._move_y = self.CONTINUOUS_ACTION_DIM == 2
        if self.is_discrete:
            self.action_space = gym.spaces.Discrete(self._n_discrete)
        else:
            self.action_space = gym.spaces.Box(-1.0, 1.0, (self.CONTINUOUS_ACTION_DIM,), dtype=np.float32)
        if self._uses_pixels:
            self.observation_space = self.pixelObservationSpace()
            if self.fpv:
                self.observation_space = self.pixelObservationSpace(cameras=2)
        else:
            self.observation_space = gym.spaces.Box(-4.0, 4.0, (self.getGroundTruthDim(),), dtype=np.float32)
            if self.goal_conditioned:
                self.observation_space = self.goalObservationSpace(self.observation_space)
        if self.init_seed is not None:
            self.action_space.seed(self.init_seed)

        self._x_low, self._x_high = self.ROBOT_X_BOUNDS
        self._y_low, self._y_high = self.ROBOT_Y_BOUNDS
        self._robot_x, self._robot_y = self.START_CENTER
        self._target_x, self._target_y = self.TARGET_POS
        self._step_counter = 0

        with silencedCOutput():
            self._p = BulletClient(connection_mode=pybullet.GUI if self.renders else pybullet.DIRECT)
        self._buildScene()
        # The per-step teleport goes through a bound function: BulletClient's attribute lookup costs as much as
        # the call itself. Camera calls stay on self._p: the lookup is nothing next to rendering.
        self._teleport = functools.partial(pybullet.resetBasePositionAndOrientation,
                                           physicsClientId=self._p._client)

        # Matrices are fixed: compute them once.
        self._view_matrix = pybullet.computeViewMatrixFromYawPitchRoll(
            cameraTargetPosition=list(self.CAMERA_TARGET_POS), distance=self.CAMERA_DISTANCE, yaw=self.CAMERA_YAW,
            pitch=self.CAMERA_PITCH, roll=self.CAMERA_ROLL, upAxisIndex=2)
        self._obs_projection = framingProjection(self.CAMERA_FOV, width, height, self.CAMERA_NEAR, self.CAMERA_FAR)
        # Never smaller than pixel observations; ground truth has no image size of its own.
        self._render_side = max(self.render_size, height, width) if self._uses_pixels else self.render_size
        self._render_projection = pybullet.computeProjectionMatrixFOV(
            fov=self.CAMERA_FOV, aspect=1.0, nearVal=self.CAMERA_NEAR, farVal=self.CAMERA_FAR)
        if self.fpv:
            self._fpv_projection = pybullet.computeProjectionMatrixFOV(
                fov=self.FPV_FOV, aspect=width / height, nearVal=self.FPV_NEAR, farVal=self.CAMERA_FAR)
            pitch = math.radians(self.FPV_PITCH)
            self._fpv_forward = (math.cos(pitch), 0.0, math.sin(pitch))
        self._sprites = (SpriteRenderer(self._p._client, self._view_matrix, self._movingBodies(), self._wall_uids)
                         if renderer == "sprites" else None)

    # --- hooks for the variants ---------------------------------------------------------------------------------

    def _discreteMoves(self) -> tuple[tuple[float, float], ...]:
        """:return: the (dx, dy) move of each discrete action"""
        step = self.STEP_SIZE
        return ((-step, 0.0), (step, 0.0), (0.0, -step), (0.0, step))

    def _wallPlacements(self) -> list[tuple[list[float], list[float], list[float]]]:
        """:return: (position, orientation quaternion, rgba) of each wall (wall.urdf lies along x)"""
        mid_x, mid_y = (self.MIN_X + self.MAX_X) / 2, (self.MIN_Y + self.MAX_Y) / 2
        along_y = list(pybullet.getQuaternionFromEuler([0.0, 0.0, math.pi / 2]))
        along_x = [0.0, 0.0, 0.0, 1.0]
        colors = self.WALL_COLORS
        return [([mid_x, self.MIN_Y, 0.0], along_x, colors["y=0"]),
                ([self.MAX_X, mid_y, 0.0], along_y, colors["x=4"]),
                ([mid_x, self.MAX_Y, 0.0], along_x, colors["y=4"]),
                ([self.MIN_X, mid_y, 0.0], along_y, colors["x=0"])]

    def _loadTargets(self) -> None:
        """Load the target body (``self._target_uid``) at the current target position."""
        self._target_uid = self._p.loadURDF(os.path.join(URDF_DIR, "cylinder.urdf"),
                                            [self._target_x, self._target_y, 0.0], useFixedBase=True)

    def _sampleStart(self) -> tuple[float, float]:
        """:return: a random start (x, y) for the robot, drawn from self.np_random"""
        rng = self.np_random
        center_x, center_y = self.START_CENTER
        half = self.START_HALF_RANGE
        return center_x + float(rng.uniform(-half, half)), center_y + float(rng.uniform(-half, half))

    def _resetTargets(self) -> None:
        """Place the target(s) for a new episode: a random position when random_target, else where it is."""
        if self.random_target:
            low, high = self.TARGET_RANGE
            self._target_x = float(self.np_random.uniform(low, high))
            self._target_y = float(self.np_random.uniform(low, high))
            self._teleport(self._target_uid, (self._target_x, self._target_y, 0.0), (0.0, 0.0, 0.0, 1.0))

    def _taskReward(self, bumped: bool) -> tuple[float, bool]:
        """
        Called once per step, after the move.

        :param bumped: the move was refused (the robot hit a wall margin)
        :return: (reward, success) where success is "within REWARD_DIST_THRESHOLD of the target"
        """
        distance = math.hypot(self._robot_x - self._target_x, self._robot_y - self._target_y)
        success = distance <= self.REWARD_DIST_THRESHOLD
        if self.shape_reward:
            return -distance, success
        if bumped:
            return -1.0, success
        return (1.0 if success else 0.0), success

    # --- scene ------------------------------------------------------------------------------------------------

    def _buildScene(self) -> None:
        """Load the plane, the walls, the target(s) and the robot (all fixed, no dynamics)."""
        p = self._p
        p.configureDebugVisualizer(pybullet.COV_ENABLE_GUI, 0)
        self._plane_uid = p.loadURDF(os.path.join(pybullet_data.getDataPath(), "plane.urdf"), [0.0, 0.0, 0.0],
                                     useFixedBase=True)
        wall_urdf = os.path.join(URDF_DIR, "wall.urdf")
        self._wall_uids = []
        for position, orientation, rgba in self._wallPlacements():
            uid = p.loadURDF(wall_urdf, position, orientation, useFixedBase=True)
            p.changeVisualShape(uid, -1, rgbaColor=rgba)
            self._wall_uids.append(uid)
        self._loadTargets()
        self._robot_uid = p.loadURDF(os.path.join(pybullet_data.getDataPath(), "racecar", "racecar.urdf"),
                                     [self._robot_x, self._robot_y, 0.0], useFixedBase=True)
        if self.renders:
            p.resetDebugVisualizerCamera(self.CAMERA_DISTANCE, self.CAMERA_YAW, self.CAMERA_PITCH,
                                         list(self.CAMERA_TARGET_POS))

    def _movingBodies(self) -> list[int]:
        """:return: the unique ids of the bodies that move (robot, targets): all but the plane and the walls"""
        static = {self._plane_uid, *self._wall_uids}
        ids = (self._p.getBodyUniqueId(index) for index in range(self._p.getNumBodies()))
        return [uid for uid in ids if uid not in static]

    def _cameraImage(self, width: int, height: int, projection_matrix: Any, view_matrix: Any = None) -> np.ndarray:
        """
        :param width: image width in pixels
        :param height: image height in pixels
        :param projection_matrix: PyBullet projection matrix matching width / height
        :param view_matrix: PyBullet view matrix, None for the top-down camera
        :return: the camera's RGB image, uint8 (height, width, 3), drawn by the env's renderer (the first-person
            view always by TinyRenderer)
        """
        if view_matrix is None:
            if self._sprites is not None:
                return self._sprites.image(width, height, projection_matrix)
            view_matrix = self._view_matrix
        rgba = self._p.getCameraImage(width, height, view_matrix, projection_matrix,
                                      renderer=pybullet.ER_TINY_RENDERER,
                                      flags=pybullet.ER_NO_SEGMENTATION_MASK)[2]
        # PyBullet built with numpy hands back a (height, width, 4) uint8 array: reshape is a view, and dropping
        # alpha into a contiguous array is the only copy.
        rgba = np.asarray(rgba, dtype=np.uint8).reshape(height, width, 4)
        return np.ascontiguousarray(rgba[:, :, :3])

    # --- gymnasium API ------------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """
        Start a new episode: random robot start, and a random target when random_target.

        :param seed: reseeds the env's random generator when given
        :param options: unused
        :return: (first observation, info)
        """
        super().reset(seed=seed)
        self._robot_x, self._robot_y = self._sampleStart()
        self._resetTargets()
        self._step_counter = 0
        self._teleport(self._robot_uid, (self._robot_x, self._robot_y, 0.0), (0.0, 0.0, 0.0, 1.0))
        return self._observation(), {}

    def step(self, action: int | np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """
        :param action: a discrete move index, or a continuous move in [-1, 1] (scaled by STEP_SIZE)
        :return: (observation, reward, terminated (always False), truncated, {"is_success": within threshold,
            "bumped": the move was refused})
        """
        self._checkOpen("step")
        if self.is_discrete:
            index = discreteActionIndex(action, self._n_discrete)
            dx, dy = self._discrete_moves[index]
        else:
            move = continuousAction(action, self.CONTINUOUS_ACTION_DIM)
            step = self.STEP_SIZE
            dx = min(max(float(move[0]), -1.0), 1.0) * step
            dy = min(max(float(move[1]), -1.0), 1.0) * step if self._move_y else 0.0
        x = self._robot_x + dx
        y = self._robot_y + dy
        bumped = not (self._x_low <= x <= self._x_high and self._y_low <= y <= self._y_high)
        if not bumped:
            self._robot_x, self._robot_y = x, y
            self._teleport(self._robot_uid, (x, y, 0.0), (0.0, 0.0, 0.0, 1.0))
        self._step_counter += 1
        reward, success = self._taskReward(bumped)
        truncated = self._step_counter >= self.max_steps
        info = {"is_success": success, "bumped": bumped}
        if self.goal_conditioned:
            observation, reward = self.goalTransition(info)
            return observation, reward, False, truncated, info
        return self._observation(), reward, False, truncated, info

    def action_masks(self) -> np.ndarray:
        """
        :return: one bool per discrete action, False for the moves that would bump a wall (the step would revert
            them), computed with the step's own test
        :raises ValueError: the env has continuous actions
        """
        self._checkMaskable()
        return np.array([self._x_low <= self._robot_x + dx <= self._x_high
                         and self._y_low <= self._robot_y + dy <= self._y_high
                         for dx, dy in self._discrete_moves], dtype=bool)

    def render(self) -> np.ndarray | None:
        """
        :return: in "rgb_array" mode, the top-down view as uint8 (S, S, 3) with S = max(render_size, observation
            size in pixel modes); None otherwise (the GUI shows the scene itself in "human" mode with renders=True)
        """
        self._checkOpen("render")
        if self.render_mode == "rgb_array":
            side = self._render_side
            return self._cameraImage(side, side, self._render_projection)
        return None

    def close(self) -> None:
        """Save the sprite renderer's new sprites, disconnect this env's PyBullet client (safe to call twice)."""
        if self._sprites is not None:
            self._sprites.close()
        if self._p is not None:
            self._p.disconnect()
            self._p = None
        super().close()

    # --- observations and state ---------------------------------------------------------------------------------

    def _observation(self) -> np.ndarray | dict[str, np.ndarray]:
        if self.goal_conditioned:
            return self.goalObservation()
        if self._uses_pixels:
            _, height, width = self.img_shape
            top = self._cameraImage(width, height, self._obs_projection)
            if self.fpv:
                return np.concatenate((top, self._firstPersonImage(width, height)), axis=2)
            return top
        return self.getSRLState()

    def _firstPersonImage(self, width: int, height: int) -> np.ndarray:
        """:return: the first-person view from the robot's nose, uint8 (height, width, 3)"""
        off_x, off_y, off_z = self.FPV_EYE_OFFSET
        eye = (self._robot_x + off_x, self._robot_y + off_y, off_z)
        forward = self._fpv_forward
        view = pybullet.computeViewMatrix(eye, (eye[0] + forward[0], eye[1] + forward[1], eye[2] + forward[2]),
                                          (0.0, 0.0, 1.0))
        return self._cameraImage(width, height, self._fpv_projection, view)

    def getSRLState(self) -> np.ndarray:
        """:return: float32 robot (x, y), minus the target's (x, y) when relative_pos (no rendering)."""
        # The base method's quantity (computed in float64, then cast) without its intermediate arrays: this runs
        # every step.
        if self.relative_pos:
            return np.array((self._robot_x - self._target_x, self._robot_y - self._target_y), dtype=np.float32)
        return np.array((self._robot_x, self._robot_y), dtype=np.float32)

    def goalThreshold(self) -> float:
        """:return: REWARD_DIST_THRESHOLD, the distance within which the robot is on target"""
        return self.REWARD_DIST_THRESHOLD

    def getTargetPos(self) -> np.ndarray:
        """:return: the target's (x, y), float32."""
        return np.array((self._target_x, self._target_y), dtype=np.float32)

    def getRobotPos(self) -> np.ndarray:
        """:return: the robot's (x, y), float32."""
        return np.array((self._robot_x, self._robot_y), dtype=np.float32)

    @staticmethod
    def getGroundTruthDim() -> int:
        """:return: 2, the ground truth is the robot's (x, y)."""
        return 2
