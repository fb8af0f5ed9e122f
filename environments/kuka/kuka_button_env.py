"""KukaButtonGymEnv: a Kuka iiwa arm on a table must press a button with its gripper (PyBullet).

The scene (pybullet_data's plane, table and kuka_iiwa with its gripper, plus the project's own button URDFs) is
built once per env; every reset restores a saved snapshot of it, so episodes do not pay for reloading meshes. The
snapshot does not hold PyBullet's contact caches and broadphase pair order, so an episode's floats (not its seeded
draws) depend by up to about 1e-4 on the episodes the env played before (RESET_KEEPS_HISTORY): a sequence of seeded
episodes repeats exactly, and ``reset(options={FRESH_WORLD: True})`` rebuilds the scene first (about nine resets'
time) to give the episode a new env would play. Each env step sets the arm's motor targets once (inverse kinematics
for effector moves, direct targets for joint moves) and then runs PHYSICS_STEPS_PER_ACTION physics steps of 1/240 s,
so that the arm actually travels toward what the action asked before the agent sees the result.

Physics (``physics``, PHYSICS_VERSION 2): PyBullet's constraint solver runs at most SOLVER["default"] iterations per
physics step and stops once its residual is below the threshold; "reference" (150 iterations, PyBullet's threshold
1e-7: physics version 1) is kept to check that the two give the same task: from the same actions, the effector's
positions agree within PHYSICS_TOLERANCE and the rewards and terminations are identical on the sequences of
tests/test_kuka_physics.py. A contact that begins within a fraction of a millimetre can start one step apart, and the
episodes then part (docs/architecture.md gives how often). The time step and the number of physics steps per action
are the reference's.

The variants (random distractors, two buttons in order, a moving button) subclass KukaButtonGymEnv and override
only class constants and the hooks ``_loadExtras``, ``_drawButtonPositions``, ``_onReset`` and ``_beforePhysics``.
The constants are those of the original toolbox's KukaButtonGymEnv unless a comment says otherwise.
"""
from __future__ import annotations

import functools
import math
import os
import tempfile
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from environments.bullet import BulletClient, framingProjection, pybullet, pybullet_data, silencedCOutput
from environments.kuka.background import PLANE_URDF, TABLE_URDF, StaticBackground, cameraImage, setVisible
from environments.srl_env import ENVIRONMENT_SRL_MODES, FRESH_WORLD, SRLGymEnv, continuousAction, discreteActionIndex

# URDFs are resolved from this file, never from the current directory.
URDF_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "urdf")
# renderer "lowpoly": the arm's SDF copy with decimated visual meshes (environments/kuka/make_lowpoly.py)
LOWPOLY_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lowpoly")
LOWPOLY_DATA_PREFIX = "pybullet_data/"  # the SDF copy's uris of pybullet_data's meshes start with this


class KukaButtonGymEnv(SRLGymEnv):
    """
    A Kuka iiwa arm must press a button on the table in front of it.

    Actions move the end effector (the arm's last link, whose orientation is held pointing down) or the arm's
    joints; the motor targets are always the current (live) position plus the move, clipped to the work box, so
    no hidden target runs ahead of the arm. Discrete(6): -x, +x, -y, +y, -z, +z by DELTA_V (+ noise); with
    ``force_down`` action 5 goes down as well. Continuous: a Box(-1, 1, (3,)) move scaled by DELTA_V_CONTINUOUS.
    Joints (``action_joints``, continuous only): a Box(-1, 1, (7,)) move of the arm joints scaled by DELTA_THETA.

    Reward: +1 while the gripper touches the button's cap (a press), -1 when the effector is farther than
    ``max_distance`` from the target or the arm touches the table (this overrides a press), 0 otherwise. With
    ``shape_reward``: minus the effector-target distance; with continuous actions, an episode that ends on presses
    gives SUCCESS_REWARD and one that ends on the table gives FAILURE_REWARD instead, so that ending early never
    pays. An episode terminates after N_CONTACTS_BEFORE_TERMINATION steps pressing (counted over the episode, as the
    original S-RL toolbox does: a return is at most N_CONTACTS_BEFORE_TERMINATION, and releasing the button to press
    it again gains nothing) or when the arm touches the table, and is truncated after ``max_steps`` steps.
    ``info["hit_table"]`` tells a table contact.

    Goal mode (``goal_conditioned=True``, ground truth only): Dict observations whose entries are the effector's
    absolute xyz (observation and achieved_goal) and the target, the press point above the button (desired_goal).
    A reward must then be a function of the goals, which a contact is not: the sparse reward becomes +1 within
    GOAL_DISTANCE_THRESHOLD of the target, -1 beyond ``max_distance`` from it or on a table contact (read from
    ``info["hit_table"]``), 0 otherwise, and ``info["is_success"]`` "within the threshold" (a centred gripper first
    touches the cap 6 mm above the target). With ``shape_reward`` it is minus the distance, without the end-of-episode
    bonuses. Terminations are unchanged (presses, table).

    :param multi_view: stack a second camera's image with the first: (H, W, 6) pixel observations
    :param force_down: discrete action 5 moves down instead of up, continuous z moves are never upward (the old
        toolbox's default; here off, so that the six discrete actions are +/- x, y, z); refused with action_joints
    :param max_distance: radius around the target beyond which the effector is outside the work area
        (-1 reward); None for the class's MAX_DISTANCE
    :param goal_conditioned: the goal mode above (srl_model "ground_truth" only; relative_pos is ignored)
    :param physics: "default", or "reference": the solver settings of physics version 1 (see the module docstring)
    :param renderer: what draws the arm in camera images, both with PyBullet's TinyRenderer: "tinyrenderer" (the
        reference: pybullet_data's meshes, ~14,800 triangles) or "lowpoly" (the same SDF with its visual meshes
        decimated to a tenth, environments/kuka/lowpoly/; collision meshes, masses and inertias are the original's,
        so physics is bit-identical and only the images differ, within the bounds of tests/test_kuka_renderer.py;
        the static floor and table are drawn once per camera and put wherever they are nearer than the rest, which
        changes no pixel: environments/kuka/background.py); None: the class's DEFAULT_RENDERER
    :param kwargs: the SRLGymEnv keywords: srl_model ("ground_truth": effector xyz, relative to the target when
        relative_pos; "joints": the 7 arm joint angles; "joints_position": those angles then the ground truth;
        "raw_pixels" or a learned model: uint8 images), relative_pos, is_discrete, action_joints, random_target
        (a new button position every reset), shape_reward, renders, img_shape (default (3, 64, 64)), max_steps,
        seed, render_mode, render_size
    """

    SRL_MODES = ENVIRONMENT_SRL_MODES  # every env-computed mode: ground_truth, raw_pixels, joints, joints_position
    RENDERERS = ("tinyrenderer", "lowpoly")
    # What draws the images when no renderer is given: the decimated arm, whose frames stay within the tested bounds
    # of TinyRenderer's and whose benchmark grid reaches the reference's conclusions (docs/architecture.md).
    DEFAULT_RENDERER = "lowpoly"
    ACTION_JOINTS = True
    PLOT_TYPE = "3D"
    GROUND_TRUTH_UNIT = "m"
    ACTION_NAMES = ("-x", "+x", "-y", "+y", "-z", "+z")
    CONTINUOUS_ACTION_NAMES = ("x move", "y move", "z move")
    MAX_STEPS = 1000
    GOAL_CONDITIONED = True
    GOAL_PENALTY_INFO_KEY = "hit_table"
    # Goal mode: the effector is on target within this distance (a discrete move is 3 cm).
    GOAL_DISTANCE_THRESHOLD = 0.02

    # --- physics
    PHYSICS_VERSION = 2
    RESET_KEEPS_HISTORY = True
    # A seeded reset builds the scene anew too (as FRESH_WORLD), for a scene whose reset amplifies that history into
    # whole pixels (KukaRandButton's dropped distractors), so that reset(seed=s) repeats its episode, as gymnasium's
    # check_env asks and as evaluations (reseeded each time) need
    SEEDED_RESET_BUILDS_ANEW = False
    TIME_STEP = 1.0 / 240.0
    # physics name -> (constraint solver iterations per physics step at most, residual below which it stops)
    SOLVER = {"default": (50, 1e-5), "reference": (150, 1e-7)}
    # The largest distance (m) between the effector's positions under the two physics, from the same actions, as
    # long as their contacts agree (measured: under 1 mm, up to 2.8 mm while pressing a button).
    PHYSICS_TOLERANCE = 0.003
    GRAVITY = -10.0
    # Physics steps per env step (0.1 s, a 10 Hz controller): enough for the arm to cover most of a discrete move
    # at its motors' speed limit. The old toolbox ran one, so its effector lagged far behind the commands.
    PHYSICS_STEPS_PER_ACTION = 24
    # gymnasium's frame rate (RecordVideo, save_video, players): one env step is PHYSICS_STEPS_PER_ACTION * TIME_STEP
    # = 0.1 s of simulated time, so 10 frames per second show the arm at its real speed
    metadata = {**SRLGymEnv.metadata, "render_fps": round(1.0 / (PHYSICS_STEPS_PER_ACTION * TIME_STEP))}
    SETTLE_STEPS = 500  # when the scene is built, before its state is saved for resets
    RESET_SETTLE_STEPS = 0  # at each reset: the saved state is at rest and only fixed buttons were moved
    # --- scene (z up; the table top is at z = -0.194)
    PLANE_POS = (0.0, 0.0, -1.0)
    TABLE_POS = (0.5, 0.0, -0.82)
    ROBOT_POS = (-0.1, 0.0, -0.15)
    BUTTON_URDFS = ("button.urdf",)
    BUTTON_POSITIONS = ((0.5, 0.0, -0.2),)  # base of each button, pressed in this order
    # random_target: the button moves by up to these (x, y) half-ranges
    BUTTON_RANDOM_RANGE = (0.15, 0.3)
    BUTTON_CAP_LINK = 0
    BUTTON_REST_HEIGHT = 0.01  # glider position the button's weak motor holds (its upper limit)
    BUTTON_SPRING_FORCE = 5.0
    # The target: the effector's height above the button's base when the fingertips are halfway down the cap's
    # travel (measured: first touch at 0.345, cap fully down at 0.335).
    BUTTON_TARGET_HEIGHT = 0.34
    # --- arm: pybullet_data's kuka_iiwa with its two-finger gripper
    ROBOT_SDF = "kuka_iiwa/kuka_with_gripper2.sdf"
    N_ARM_JOINTS = 7
    EFFECTOR_LINK = 6  # inverse kinematics and the ground truth use this link's frame
    EFFECTOR_EULER = (0.0, -math.pi, 0.0)  # gripper pointing down
    REST_POSE = (0.006418, 0.413184, -0.011401, -1.589317, 0.005379, 1.137684, -0.006539, 0.000048, -0.299912,
                 0.0, -0.000043, 0.299960, 0.0, -0.000200)
    MOTOR_FORCE = 200.0
    MOTOR_MAX_VELOCITY = 0.35
    POSITION_GAIN, VELOCITY_GAIN = 0.3, 1.0
    GRIPPER_FORCE = 2.5  # finger motors: weak, the fingers give a little on contact
    IK_JOINT_DAMPING = 1e-5
    # Work box of the effector: ((x_min, x_max), (y_min, y_max), (z_min, z_max)); wider with random_target.
    EFFECTOR_BOUNDS = ((0.50, 0.65), (-0.17, 0.22), (0.0, 0.5))
    EFFECTOR_BOUNDS_RANDOM_TARGET = ((0.35, 0.65), (-0.3, 0.3), (0.0, 0.5))
    # --- actions
    DELTA_V = 0.03
    NOISE_STD = 0.01
    DELTA_V_CONTINUOUS = 0.0035
    NOISE_STD_CONTINUOUS = 0.0001
    DELTA_THETA = 0.1
    NOISE_STD_JOINTS = 0.002
    N_RANDOM_ACTIONS_AT_INIT = 5
    # action_masks: a discrete move whose clipped motor target advances the effector less than this (m) is masked.
    MASK_MIN_MOVE = 0.001
    # --- task
    MAX_DISTANCE = 0.8
    N_CONTACTS_BEFORE_TERMINATION = 5
    SUCCESS_REWARD = 50.0
    FAILURE_REWARD = -250.0
    # --- cameras (TinyRenderer)
    CAMERA_TARGET_POS = (0.316, -0.2, -0.1)
    CAMERA_DISTANCE = 1.1
    CAMERA_YAW = 145.0
    CAMERA_PITCH = -36.0
    CAMERA_TARGET_POS_2 = (0.316, 0.316, -0.105)
    CAMERA_DISTANCE_2 = 1.05
    CAMERA_YAW_2 = 32.0
    CAMERA_PITCH_2 = -13.0
    CAMERA_ROLL = 0.0
    CAMERA_FOV = 60.0
    CAMERA_NEAR, CAMERA_FAR = 0.1, 100.0

    def __init__(self, *, multi_view: bool = False, force_down: bool = False, max_distance: float | None = None,
                 physics: str = "default", renderer: str | None = None, **kwargs: Any) -> None:
        # Set first so that close() works whatever fails below.
        self._p: BulletClient | None = None
        self._background: StaticBackground | None = None
        super().__init__(renderer=renderer, **kwargs)
        renderer = self.renderer
        if physics not in self.SOLVER:
            raise ValueError(f"physics must be one of {', '.join(self.SOLVER)}, got {physics!r}")
        self.physics = physics
        if self.is_discrete and self.action_joints:
            raise ValueError("action_joints needs continuous actions (is_discrete=False)")
        if force_down and self.action_joints:
            raise ValueError("force_down restricts the effector's moves, which action_joints does not make: pass "
                             "force_down=False")
        self.multi_view = bool(multi_view)
        self.force_down = bool(force_down)
        self.max_distance = float(self.MAX_DISTANCE if max_distance is None else max_distance)
        if not self.max_distance > 0:
            raise ValueError(f"max_distance must be positive, got {max_distance}")
        self._uses_pixels = self.usesPixels
        _, height, width = self.img_shape

        if self.is_discrete:
            self.action_space = gym.spaces.Discrete(6)
        else:
            n_actions = self.N_ARM_JOINTS if self.action_joints else 3
            self.action_space = gym.spaces.Box(-1.0, 1.0, (n_actions,), dtype=np.float32)
        self.observation_space = self._makeObservationSpace()
        if self.init_seed is not None:
            self.action_space.seed(self.init_seed)

        bounds = self.EFFECTOR_BOUNDS_RANDOM_TARGET if self.random_target else self.EFFECTOR_BOUNDS
        self._bounds_low = np.array([b[0] for b in bounds])
        self._bounds_high = np.array([b[1] for b in bounds])
        down = -1.0 if self.force_down else 1.0
        self._discrete_moves = np.array([[-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, down]],
                                        dtype=np.float64)

        # Episode state (set properly by reset()).
        self._button_positions = np.array(self.BUTTON_POSITIONS, dtype=np.float64)
        self._current_button = 0
        self._presses = 0
        self._step_counter = 0
        self._effector_pos = np.zeros(3)

        with silencedCOutput():
            self._p = BulletClient(connection_mode=pybullet.GUI if self.renders else pybullet.DIRECT)
        # lowpoly draws the floor and the table once per camera (environments/kuka/background.py); the GUI keeps them
        self._background = (StaticBackground(self._staticBodies()) if renderer == "lowpoly" and not self.renders
                            else None)
        self._bindPyBullet()
        self._buildScene()
        self._setupCameras(width, height)

    # --- construction -------------------------------------------------------------------------------------------

    def _makeObservationSpace(self) -> gym.spaces.Box | gym.spaces.Dict:
        if self._uses_pixels:
            return self.pixelObservationSpace(cameras=2 if self.multi_view else 1)
        # Generous bounds: the arm reaches about 1.3 m from its base; revolute joints stay within +/- pi.
        n_joints = self.N_ARM_JOINTS
        if self.srl_model == "joints":
            return gym.spaces.Box(-2 * math.pi, 2 * math.pi, (n_joints,), dtype=np.float32)
        position_bound = 4.0
        if self.srl_model == "joints_position":
            high = np.array([2 * math.pi] * n_joints + [position_bound] * 3, dtype=np.float32)
            return gym.spaces.Box(-high, high, dtype=np.float32)
        ground_truth = gym.spaces.Box(-position_bound, position_bound, (3,), dtype=np.float32)
        return self.goalObservationSpace(ground_truth) if self.goal_conditioned else ground_truth

    def _bindPyBullet(self) -> None:
        """Bind the per-step PyBullet functions to this client once: BulletClient's lookup costs as much as a call."""
        client = self._p._client
        bind = functools.partial
        self._stepSimulation = bind(pybullet.stepSimulation, physicsClientId=client)
        self._getLinkState = bind(pybullet.getLinkState, physicsClientId=client)
        self._getJointStates = bind(pybullet.getJointStates, physicsClientId=client)
        self._getContactPoints = bind(pybullet.getContactPoints, physicsClientId=client)
        self._setJointMotorControl = bind(pybullet.setJointMotorControl2, physicsClientId=client)
        self._inverseKinematics = bind(pybullet.calculateInverseKinematics, physicsClientId=client)
        self._teleport = bind(pybullet.resetBasePositionAndOrientation, physicsClientId=client)

    def _staticBodies(self) -> tuple[tuple[str, tuple[float, float, float]], ...]:
        """:return: (URDF path, position) of the bodies that never move, plane then table: the scene loads them (fixed
        base), lowpoly's background draws them"""
        data = pybullet_data.getDataPath()
        return (os.path.join(data, PLANE_URDF), self.PLANE_POS), (os.path.join(data, TABLE_URDF), self.TABLE_POS)

    def _buildScene(self) -> None:
        """Load plane, table, arm and buttons, bring the arm to its rest pose and save that state for resets."""
        p = self._p
        p.configureDebugVisualizer(pybullet.COV_ENABLE_GUI, 0)
        iterations, residual = self.SOLVER[self.physics]
        p.setPhysicsEngineParameter(numSolverIterations=iterations, solverResidualThreshold=residual)
        p.setTimeStep(self.TIME_STEP)
        p.setGravity(0.0, 0.0, self.GRAVITY)
        data = pybullet_data.getDataPath()
        self._plane_uid, self._table_uid = (p.loadURDF(path, list(position), useFixedBase=True)
                                            for path, position in self._staticBodies())
        if self._background is not None:
            for uid in (self._plane_uid, self._table_uid):
                setVisible(p, uid, False)
        self._robot_uid = self._loadRobot(data)
        p.resetBasePositionAndOrientation(self._robot_uid, list(self.ROBOT_POS), [0.0, 0.0, 0.0, 1.0])
        self._button_uids = [p.loadURDF(os.path.join(URDF_DIR, urdf), list(position), useFixedBase=True)
                             for urdf, position in zip(self.BUTTON_URDFS, self.BUTTON_POSITIONS)]

        n_joints = p.getNumJoints(self._robot_uid)
        infos = [p.getJointInfo(self._robot_uid, j) for j in range(n_joints)]
        self._arm_joints = list(range(self.N_ARM_JOINTS))
        self._arm_lower = np.array([infos[j][8] for j in self._arm_joints])
        self._arm_upper = np.array([infos[j][9] for j in self._arm_joints])
        # IK returns one value per movable joint (the gripper's fixed joints excluded); the arm's come first.
        movable = [j for j in range(n_joints) if infos[j][2] != pybullet.JOINT_FIXED]
        self._ik_damping = [self.IK_JOINT_DAMPING] * len(movable)
        self._effector_orientation = p.getQuaternionFromEuler(list(self.EFFECTOR_EULER))
        for joint, angle in enumerate(self.REST_POSE):
            p.resetJointState(self._robot_uid, joint, angle)
        self._loadExtras()
        self._resetMotors()
        for _ in range(self.SETTLE_STEPS):
            self._stepSimulation()
        self._initial_state = p.saveState()
        if self.renders:
            p.resetDebugVisualizerCamera(self.CAMERA_DISTANCE, self.CAMERA_YAW, self.CAMERA_PITCH,
                                         list(self.CAMERA_TARGET_POS))

    def _loadRobot(self, data: str) -> int:
        """
        :param data: pybullet_data's folder
        :return: the arm's body id: pybullet_data's ROBOT_SDF, or with renderer "lowpoly" its copy in LOWPOLY_DIR,
            written with absolute uris to a temporary folder for loading (an SDF's uris are relative to its folder)
        """
        if self.renderer != "lowpoly":
            return self._p.loadSDF(os.path.join(data, self.ROBOT_SDF))[0]
        with open(os.path.join(LOWPOLY_DIR, os.path.basename(self.ROBOT_SDF))) as file:
            text = file.read()
        text = text.replace("<uri>" + LOWPOLY_DATA_PREFIX, "<uri>" + os.path.join(data, ""))
        text = text.replace("<uri>link_", "<uri>" + os.path.join(LOWPOLY_DIR, "link_"))
        with tempfile.TemporaryDirectory(prefix="kuka_lowpoly_") as folder:
            path = os.path.join(folder, "robot.sdf")
            with open(path, "w") as file:
                file.write(text)
            return self._p.loadSDF(path)[0]

    def _resetMotors(self) -> None:
        """Motor targets are not part of a saved state: set them to the rest pose, the buttons' caps up."""
        for joint, angle in enumerate(self.REST_POSE):
            arm = joint < self.N_ARM_JOINTS
            self._setJointMotorControl(self._robot_uid, joint, pybullet.POSITION_CONTROL, targetPosition=angle,
                                       force=self.MOTOR_FORCE if arm else self.GRIPPER_FORCE)
        for uid in self._button_uids:
            self._setJointMotorControl(uid, 0, pybullet.POSITION_CONTROL, targetPosition=self.BUTTON_REST_HEIGHT,
                                       force=self.BUTTON_SPRING_FORCE)

    def _setupCameras(self, width: int, height: int) -> None:
        """Compute the fixed view and projection matrices once."""
        def view(target: Sequence[float], distance: float, yaw: float, pitch: float) -> tuple[float, ...]:
            return pybullet.computeViewMatrixFromYawPitchRoll(cameraTargetPosition=list(target), distance=distance,
                                                              yaw=yaw, pitch=pitch, roll=self.CAMERA_ROLL,
                                                              upAxisIndex=2)

        self._view_matrix = view(self.CAMERA_TARGET_POS, self.CAMERA_DISTANCE, self.CAMERA_YAW, self.CAMERA_PITCH)
        self._view_matrix_2 = view(self.CAMERA_TARGET_POS_2, self.CAMERA_DISTANCE_2, self.CAMERA_YAW_2,
                                   self.CAMERA_PITCH_2)
        self._obs_projection = framingProjection(self.CAMERA_FOV, width, height, self.CAMERA_NEAR, self.CAMERA_FAR)
        # Never smaller than pixel observations; ground truth has no image size of its own.
        self._render_side = max(self.render_size, height, width) if self._uses_pixels else self.render_size
        self._render_projection = pybullet.computeProjectionMatrixFOV(
            fov=self.CAMERA_FOV, aspect=1.0, nearVal=self.CAMERA_NEAR, farVal=self.CAMERA_FAR)

    # --- hooks for the variants -----------------------------------------------------------------------------------

    def _drawButtonPositions(self) -> np.ndarray:
        """:return: the base position of each button for a new episode, float (n_buttons, 3)"""
        positions = np.array(self.BUTTON_POSITIONS, dtype=np.float64)
        if self.random_target:
            half_x, half_y = self.BUTTON_RANDOM_RANGE
            positions[:, 0] += self.np_random.uniform(-half_x, half_x, len(positions))
            positions[:, 1] += self.np_random.uniform(-half_y, half_y, len(positions))
        return positions

    def _loadExtras(self) -> None:
        """Called once while the scene is built, before its state is saved (variants load more bodies here)."""

    def _onReset(self) -> None:
        """Called at reset after the buttons are placed, before the scene settles (variants add objects here)."""

    def _beforePhysics(self) -> None:
        """Called at every step after the action's motor targets are set, before the physics steps."""

    # --- gymnasium API ------------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """
        Start a new episode: the saved scene (arm at rest), the buttons placed (randomly with random_target),
        RESET_SETTLE_STEPS physics steps, then N_RANDOM_ACTIONS_AT_INIT random actions.

        :param seed: reseeds the env's random generator when given (and builds the scene anew first where
            SEEDED_RESET_BUILDS_ANEW)
        :param options: ``{FRESH_WORLD: True}`` builds the scene anew first (the episode a new env would play)
        :return: (first observation, info)
        """
        super().reset(seed=seed)
        if (options and options.get(FRESH_WORLD)) or (seed is not None and self.SEEDED_RESET_BUILDS_ANEW):
            self._p.removeState(self._initial_state)
            self._p.resetSimulation()
            self._buildScene()
        self._p.restoreState(self._initial_state)
        self._resetMotors()
        self._button_positions = self._drawButtonPositions()
        for uid, position in zip(self._button_uids, self._button_positions):
            self._teleport(uid, position.tolist(), (0.0, 0.0, 0.0, 1.0))
        self._current_button = 0
        self._presses = 0
        self._step_counter = 0
        self._onReset()
        for _ in range(self.RESET_SETTLE_STEPS):
            self._stepSimulation()
        # Link frames are stale after restoreState until PyBullet recomputes them.
        self._effector_pos = np.array(self._getLinkState(self._robot_uid, self.EFFECTOR_LINK,
                                                         computeForwardKinematics=True)[4])
        rng = self.np_random
        for _ in range(self.N_RANDOM_ACTIONS_AT_INIT):
            if self.action_joints:
                self._moveJoints(self.DELTA_THETA * rng.normal(size=self.N_ARM_JOINTS))
            elif self.is_discrete:
                move = np.zeros(3)
                move[rng.integers(3)] = self.DELTA_V * (1.0 if rng.random() > 0.5 else -1.0)
                self._moveEffector(move)
            else:
                direction = rng.normal(size=3)
                self._moveEffector(self.DELTA_V_CONTINUOUS * direction / np.linalg.norm(direction))
            self._runPhysics()
        return self._observation(), {}

    def step(self, action: int | np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """
        :param action: a Discrete(6) index, or a continuous move in [-1, 1] (3 effector axes, or one per arm joint
            with action_joints); values outside [-1, 1] are clipped
        :return: (observation, reward, terminated, truncated, {"is_success": the correct button is pressed (goal
            mode: the effector is within GOAL_DISTANCE_THRESHOLD of the target), "hit_table": the arm touches it})
        """
        self._checkOpen("step")
        rng = self.np_random
        if self.is_discrete:
            index = discreteActionIndex(action, 6)
            self._moveEffector(self._discrete_moves[index] * (self.DELTA_V + rng.normal(0.0, self.NOISE_STD)))
        else:
            move = np.clip(continuousAction(action, self.action_space.shape[0]), -1.0, 1.0)
            if self.action_joints:
                self._moveJoints(move * (self.DELTA_THETA + rng.normal(0.0, self.NOISE_STD_JOINTS)))
            else:
                move = move * (self.DELTA_V_CONTINUOUS + rng.normal(0.0, self.NOISE_STD_CONTINUOUS))
                if self.force_down:
                    move[2] = -abs(move[2])
                self._moveEffector(move)
        self._beforePhysics()
        self._runPhysics()
        self._step_counter += 1
        reward, terminated, success, hit_table = self._evaluate()
        truncated = self._step_counter >= self.max_steps
        info = {"is_success": success, "hit_table": hit_table}
        if self.goal_conditioned:
            observation, reward = self.goalTransition(info)
            return observation, reward, terminated, truncated, info
        return self._observation(), reward, terminated, truncated, info

    def actionNames(self) -> tuple[str, ...] | None:
        """:return: SRLGymEnv.actionNames, with action 5 named "-z (force_down)" with ``force_down``, and the
        joints named "joint i" with ``action_joints``"""
        if self.action_joints:
            return tuple(f"joint {index}" for index in range(self.N_ARM_JOINTS))
        names = super().actionNames()
        if names is not None and self.is_discrete and self.force_down:
            names = (*names[:5], "-z (force_down)")
        return names

    def action_masks(self) -> np.ndarray:
        """
        :return: one bool per discrete action, False for the moves that the work box's clipping turns into no-ops:
            the motor target it gives moves the effector by less than MASK_MIN_MOVE in the action's direction
            (the effector at, or within MASK_MIN_MOVE of, that side of the box)
        :raises ValueError: the env has continuous actions
        """
        self._checkMaskable()
        moves = self._discrete_moves * self.DELTA_V
        targets = np.clip(self._effector_pos + moves, self._bounds_low, self._bounds_high)
        progress = np.sum((targets - self._effector_pos) * self._discrete_moves, axis=1)
        return progress >= self.MASK_MIN_MOVE

    def render(self) -> np.ndarray | None:
        """
        :return: in "rgb_array" mode, the first camera's view as uint8 (S, S, 3) with S = max(render_size,
            observation size in pixel modes); None otherwise (the GUI shows the scene itself with renders=True)
        """
        self._checkOpen("render")
        if self.render_mode == "rgb_array":
            side = self._render_side
            return self._cameraImage(self._view_matrix, side, side, self._render_projection)
        return None

    def close(self) -> None:
        """Disconnect this env's PyBullet clients (safe to call twice)."""
        if self._background is not None:
            self._background.close()
        if self._p is not None:
            self._p.disconnect()
            self._p = None
        super().close()

    # --- arm motion ---------------------------------------------------------------------------------------------

    def _moveEffector(self, move: np.ndarray) -> None:
        """
        Aim the arm's joints (inverse kinematics) at the effector's live position plus ``move``, clipped to the
        work box, gripper pointing down.

        :param move: (dx, dy, dz) in metres
        """
        target = np.clip(self._effector_pos + move, self._bounds_low, self._bounds_high)
        joint_targets = self._inverseKinematics(self._robot_uid, self.EFFECTOR_LINK, target.tolist(),
                                                self._effector_orientation, jointDamping=self._ik_damping)
        self._setArmTargets(joint_targets)

    def _moveJoints(self, move: np.ndarray) -> None:
        """:param move: one angle change per arm joint (radians), added to the live angles within the joint limits"""
        self._setArmTargets(np.clip(self.getJoints().astype(np.float64) + move, self._arm_lower, self._arm_upper))

    def _setArmTargets(self, joint_targets: Any) -> None:
        for joint in self._arm_joints:
            # setJointMotorControlArray has no maximum velocity: one call per joint.
            self._setJointMotorControl(self._robot_uid, joint, pybullet.POSITION_CONTROL,
                                       targetPosition=joint_targets[joint], targetVelocity=0.0,
                                       force=self.MOTOR_FORCE, maxVelocity=self.MOTOR_MAX_VELOCITY,
                                       positionGain=self.POSITION_GAIN, velocityGain=self.VELOCITY_GAIN)

    def _runPhysics(self) -> None:
        for _ in range(self.PHYSICS_STEPS_PER_ACTION):
            self._stepSimulation()
        self._readEffector()

    def _readEffector(self) -> None:
        # Index 4 is the link frame, the point inverse kinematics places (index 0 is the centre of mass).
        self._effector_pos = np.array(self._getLinkState(self._robot_uid, self.EFFECTOR_LINK)[4])

    # --- task -------------------------------------------------------------------------------------------------

    def _pressedButton(self) -> int | None:
        """:return: the index of a button whose cap the robot touches (the current one first), None if none"""
        order = [self._current_button] + [i for i in range(len(self._button_uids)) if i != self._current_button]
        for index in order:
            if self._getContactPoints(bodyA=self._robot_uid, bodyB=self._button_uids[index],
                                      linkIndexB=self.BUTTON_CAP_LINK):
                return index
        return None

    def _evaluate(self) -> tuple[float, bool, bool, bool]:
        """
        Score the state the last step reached and advance the button sequence.

        :return: (reward, terminated, success: the current button is pressed, the arm touches the table)
        """
        target = self.getTargetPos()
        pressed = self._pressedButton() == self._current_button
        hit_table = bool(self._getContactPoints(bodyA=self._robot_uid, bodyB=self._table_uid))
        distance = float(np.linalg.norm(self._effector_pos - target))
        outside = distance > self.max_distance

        done = False
        self._presses += int(pressed)  # over the episode, not in a row: releasing and pressing again gains nothing
        if self._presses >= self.N_CONTACTS_BEFORE_TERMINATION:
            if self._current_button == len(self._button_uids) - 1:
                done = True
            else:  # on to the next button in the order
                self._current_button += 1
                self._presses = 0
        terminated = done or hit_table

        if outside or hit_table:
            reward = -1.0
        else:
            reward = 1.0 if pressed else 0.0
        if self.shape_reward:
            if not self.is_discrete and terminated:
                reward = self.SUCCESS_REWARD if done else self.FAILURE_REWARD
            else:
                reward = -distance
        return reward, terminated, pressed, hit_table

    # --- observations and state ---------------------------------------------------------------------------------

    def _cameraImage(self, view_matrix: Any, width: int, height: int, projection_matrix: Any) -> np.ndarray:
        rgb, depth = cameraImage(self._p, view_matrix, width, height, projection_matrix)
        if self._background is not None:
            rgb = self._background.composite(rgb, depth, view_matrix, projection_matrix)
        return np.ascontiguousarray(rgb)

    def _observation(self) -> np.ndarray | dict[str, np.ndarray]:
        if self.goal_conditioned:
            return self.goalObservation()
        if self._uses_pixels:
            _, height, width = self.img_shape
            image = self._cameraImage(self._view_matrix, width, height, self._obs_projection)
            if self.multi_view:
                second = self._cameraImage(self._view_matrix_2, width, height, self._obs_projection)
                image = np.concatenate((image, second), axis=2)
            return image
        if self.srl_model == "joints":
            return self.getJoints()
        if self.srl_model == "joints_position":
            return np.concatenate((self.getJoints(), self.getSRLState()))
        return self.getSRLState()

    def goalThreshold(self) -> float:
        """:return: GOAL_DISTANCE_THRESHOLD"""
        return self.GOAL_DISTANCE_THRESHOLD

    def goalPenalty(self, distance: np.ndarray, info: Any) -> np.ndarray:
        """:return: a table contact (from the info) or an effector beyond max_distance from the goal"""
        return super().goalPenalty(distance, info) | (distance > self.max_distance)

    def getJoints(self) -> np.ndarray:
        """:return: the arm's live joint angles, float32 (N_ARM_JOINTS,)"""
        states = self._getJointStates(self._robot_uid, self._arm_joints)
        return np.array([state[0] for state in states], dtype=np.float32)

    def getTargetPos(self) -> np.ndarray:
        """:return: where the effector is when it presses the current button, float32 (3,)"""
        target = self._button_positions[self._current_button].copy()
        target[2] += self.BUTTON_TARGET_HEIGHT
        return target.astype(np.float32)

    def getButtonPositions(self) -> np.ndarray:
        """:return: the base position of every button (in pressing order), float32 (n_buttons, 3)"""
        return self._button_positions.astype(np.float32)

    def getRobotPos(self) -> np.ndarray:
        """:return: the effector's (x, y, z), float32"""
        return self._effector_pos.astype(np.float32)

    @staticmethod
    def getGroundTruthDim() -> int:
        """:return: 3, the ground truth is the effector's (x, y, z)"""
        return 3

    @classmethod
    def physicsKeywords(cls, version: int) -> dict[str, Any] | None:
        """:return: the keywords that simulate physics version ``version``: 1 is "reference" (the module docstring)"""
        return {"physics": "reference"} if version == 1 else super().physicsKeywords(version)
