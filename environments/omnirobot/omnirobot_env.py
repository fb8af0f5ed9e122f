"""OmnirobotEnv: an omnidirectional robot on a floor, seen by a fixed overhead camera, drawn with OpenCV.

An image-based simulator, self-contained: the floor is a procedural tiled texture (no file, no download, no socket
to a real robot), the robot and the target are markers drawn on the floor plane, and a pinhole camera above the arena
projects the plane into the image through a homography computed once per image size. No GUI and no display are
involved, and in ground-truth mode nothing is drawn at all.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import cv2
import gymnasium as gym
import numpy as np

from environments.srl_env import SRLGymEnv, continuousAction, discreteActionIndex


class OmnirobotEnv(SRLGymEnv):
    """
    An omnidirectional robot in a 1.7 m x 1.7 m arena must reach a target marker.

    Discrete actions move the robot by STEP_SIZE: 0 FORWARD (+x), 1 BACKWARD (-x), 2 LEFT (+y), 3 RIGHT (-y);
    continuous actions are a 2-D move ``clip(a, -1, 1) * STEP_SIZE``. A move that would take the robot's centre out
    of the arena ([-0.85, 0.85] on each axis) is refused and counts as a bump. Reward: +1 when the robot is closer
    than REWARD_DIST_THRESHOLD to the target (it wins over a bump), else -1 on a bump, else 0; with
    ``shape_reward``, minus the distance (the original ignored that flag). Episodes never terminate; they are
    truncated after ``max_steps`` steps. The robot starts uniformly in INIT_RANGE on each axis.

    ``random_target``: the original defaulted to True here (a new target every episode). This env keeps the
    keyword default of every SRLGymEnv, False, which means a fixed target at TARGET_POS; pass
    ``random_target=True`` (``-r`` on the command line) for the original behaviour (target uniform in INIT_RANGE).

    :param srl_model: "ground_truth" (robot (x, y), float32 (2,)), "raw_pixels" (uint8 (H, W, 3) camera image) or a
        learned SRL model name (pixels too)
    :param kwargs: the other SRLGymEnv keywords; ``action_joints``, ``renders`` and ``render_mode="human"`` (there is
        no window: use ``render_mode="rgb_array"``) are refused, ``gymnasium.make(..., render_mode="human")`` too (the
        class lists "human" so that gymnasium passes it here rather than wrap the env in its own window; an instance
        lists only "rgb_array")
    """

    SRL_MODES = ("ground_truth", "raw_pixels")
    ACTION_JOINTS = False
    PLOT_TYPE = "2D"
    GROUND_TRUTH_UNIT = "m"
    ACTION_NAMES = ("+x (forward)", "-x (backward)", "+y (left)", "-y (right)")
    CONTINUOUS_ACTION_NAMES = ("x move", "y move")
    MAX_STEPS = 250
    WINDOW = False  # no window to show the scene in (renders=True and render_mode="human" are refused)

    STEP_SIZE = 0.1
    REWARD_DIST_THRESHOLD = 0.2
    # Where the robot's centre may be (the arena), and where robot and random targets are drawn from.
    ARENA_BOUNDS = (-0.85, 0.85)
    INIT_RANGE = (-0.7, 0.7)
    TARGET_POS = (0.4, 0.4)
    ROBOT_RADIUS = 0.1
    TARGET_RADIUS = 0.09
    # Overhead pinhole camera, slightly behind the arena centre and looking at it; image up is +y, right is +x.
    CAMERA_POSITION = (0.0, -0.5, 2.2)
    CAMERA_LOOK_AT = (0.0, 0.05, 0.0)
    CAMERA_FOV = 53.0  # degrees, vertical and horizontal (square pixels)
    # Procedural floor: square tiles of FLOOR_TILE m, drawn once from FLOOR_SEED (the same floor for every env).
    FLOOR_TILE = 0.25
    FLOOR_SEED = 1234
    FLOOR_HALF_SIZE = 1.5
    ROBOT_COLOR = (40, 70, 170)
    HEADING_COLOR = (245, 245, 245)
    TARGET_COLOR = (220, 40, 40)

    def __init__(self, **kwargs: Any) -> None:
        """:param kwargs: the SRLGymEnv keywords (an unknown one raises TypeError)"""
        if kwargs.get("renders") or kwargs.get("render_mode") == "human":
            raise ValueError("OmnirobotEnv has no window to show the scene in (renders=True, render_mode='human'); "
                             "valid render_mode: rgb_array (show the images render() returns)")
        super().__init__(**kwargs)
        self.metadata = {**self.metadata, "render_modes": ["rgb_array"]}  # what this instance renders (check_env)
        _, height, width = self.img_shape
        self._uses_pixels = self.usesPixels
        if self.is_discrete:
            self.action_space = gym.spaces.Discrete(4)
        else:
            self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
        if self._uses_pixels:
            self.observation_space = self.pixelObservationSpace()
        else:
            self.observation_space = gym.spaces.Box(-2.0, 2.0, (2,), dtype=np.float32)
        if self.init_seed is not None:
            self.action_space.seed(self.init_seed)
        step = self.STEP_SIZE
        self._discrete_moves = ((step, 0.0), (-step, 0.0), (0.0, step), (0.0, -step))
        self._robot_x, self._robot_y = 0.0, 0.0
        self._target_x, self._target_y = self.TARGET_POS
        self._step_counter = 0
        # Per image size (width, height): (homography floor -> pixels, background image). Built on first use.
        self._views: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._render_side = max(self.render_size, height, width) if self._uses_pixels else self.render_size
        angles = np.linspace(0.0, 2 * math.pi, 32, endpoint=False)
        self._unit_circle = np.stack((np.cos(angles), np.sin(angles)), axis=1)

    # --- gymnasium API --------------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """
        :param seed: reseeds the env's random generator when given
        :param options: unused
        :return: (first observation, info)
        """
        super().reset(seed=seed)
        low, high = self.INIT_RANGE
        self._robot_x = float(self.np_random.uniform(low, high))
        self._robot_y = float(self.np_random.uniform(low, high))
        if self.random_target:
            self._target_x = float(self.np_random.uniform(low, high))
            self._target_y = float(self.np_random.uniform(low, high))
        self._step_counter = 0
        return self._observation(), {}

    def step(self, action: int | np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """
        :param action: a Discrete(4) index (FORWARD, BACKWARD, LEFT, RIGHT) or a 2-D move in [-1, 1]
        :return: (observation, reward, terminated (always False), truncated, {"is_success": near the target})
        """
        self._checkOpen("step")
        if self.is_discrete:
            index = discreteActionIndex(action, 4)
            dx, dy = self._discrete_moves[index]
        else:
            move = continuousAction(action, 2)
            dx = min(max(float(move[0]), -1.0), 1.0) * self.STEP_SIZE
            dy = min(max(float(move[1]), -1.0), 1.0) * self.STEP_SIZE
        x, y = self._robot_x + dx, self._robot_y + dy
        low, high = self.ARENA_BOUNDS
        bumped = not (low <= x <= high and low <= y <= high)
        if not bumped:
            self._robot_x, self._robot_y = x, y
        self._step_counter += 1
        distance = math.hypot(self._robot_x - self._target_x, self._robot_y - self._target_y)
        success = distance < self.REWARD_DIST_THRESHOLD
        if self.shape_reward:
            reward = -distance
        elif success:
            reward = 1.0
        else:
            reward = -1.0 if bumped else 0.0
        truncated = self._step_counter >= self.max_steps
        return self._observation(), reward, False, truncated, {"is_success": success}

    def render(self) -> np.ndarray | None:
        """
        :return: in "rgb_array" mode the camera image, uint8 (S, S, 3) with S = max(render_size, observation size in
            pixel modes); None otherwise
        """
        self._checkOpen("render")
        if self.render_mode == "rgb_array":
            return self._draw(self._render_side, self._render_side)
        return None

    # --- observations and state -----------------------------------------------------------------------------------

    def _observation(self) -> np.ndarray:
        if self._uses_pixels:
            _, height, width = self.img_shape
            return self._draw(width, height)
        return self.getSRLState()

    def getSRLState(self) -> np.ndarray:
        """:return: float32 robot (x, y), minus the target's (x, y) when relative_pos (no drawing)."""
        if self.relative_pos:
            return np.array((self._robot_x - self._target_x, self._robot_y - self._target_y), dtype=np.float32)
        return np.array((self._robot_x, self._robot_y), dtype=np.float32)

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

    # --- camera and drawing -----------------------------------------------------------------------------------------

    def floorToImage(self, points: np.ndarray, width: int, height: int) -> np.ndarray:
        """
        :param points: floor points (x, y) in metres, shape (n, 2)
        :param width: image width in pixels
        :param height: image height in pixels
        :return: their pixel coordinates (column, row), float (n, 2)
        """
        homography, _ = self._view(width, height)
        return _project(homography, points)

    def _view(self, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
        key = (width, height)
        if key not in self._views:
            homography = cameraHomography(self.CAMERA_POSITION, self.CAMERA_LOOK_AT, self.CAMERA_FOV, width, height)
            self._views[key] = (homography, self._floorImage(homography, width, height))
        return self._views[key]

    def _floorImage(self, homography: np.ndarray, width: int, height: int) -> np.ndarray:
        """The floor texture seen by the camera: warped at 4x (at least 256 px) then area-averaged down."""
        texture, texture_to_floor = floorTexture(self.FLOOR_HALF_SIZE, self.FLOOR_TILE, self.ARENA_BOUNDS,
                                                 self.FLOOR_SEED)
        scale = max(4, math.ceil(256 / min(width, height)))
        upscale = np.diag([scale, scale, 1.0])
        # Pixel centres: image (c + 0.5) * scale - 0.5 of the big image is c of the small one, to within a constant
        # that INTER_AREA cancels.
        big = cv2.warpPerspective(texture, upscale @ homography @ texture_to_floor, (width * scale, height * scale),
                                  flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=(60, 60, 60))
        return cv2.resize(big, (width, height), interpolation=cv2.INTER_AREA)

    def _draw(self, width: int, height: int) -> np.ndarray:
        homography, background = self._view(width, height)
        image = background.copy()
        self._fillFloorPolygon(image, homography, self._unit_circle * self.TARGET_RADIUS + (self._target_x,
                                                                                            self._target_y),
                               self.TARGET_COLOR)
        robot = (self._robot_x, self._robot_y)
        self._fillFloorPolygon(image, homography, self._unit_circle * self.ROBOT_RADIUS + robot, self.ROBOT_COLOR)
        # Heading mark: the robot faces +x.
        radius = self.ROBOT_RADIUS
        arrow = np.array(((0.8 * radius, 0.0), (-0.4 * radius, 0.5 * radius), (-0.4 * radius, -0.5 * radius)))
        self._fillFloorPolygon(image, homography, arrow + robot, self.HEADING_COLOR)
        return image

    @staticmethod
    def _fillFloorPolygon(image: np.ndarray, homography: np.ndarray, points: np.ndarray,
                          color: tuple[int, int, int]) -> None:
        # 4 fractional bits: sub-pixel positions, so that small moves still change small images.
        pixels = np.round(_project(homography, points) * 16).astype(np.int32)
        cv2.fillPoly(image, [pixels], color, lineType=cv2.LINE_AA, shift=4)


def cameraHomography(position: tuple[float, float, float], look_at: tuple[float, float, float], fov: float,
                     width: int, height: int) -> np.ndarray:
    """
    The homography that maps floor points (x, y, z=0) to the pixels of a pinhole camera.

    :param position: camera centre (x, y, z) in metres
    :param look_at: the point the optical axis goes through
    :param fov: field of view in degrees, across the image's smaller side
    :param width: image width in pixels
    :param height: image height in pixels
    :return: 3x3 matrix H with (column, row, 1) ~ H @ (x, y, 1)
    """
    eye = np.asarray(position, dtype=np.float64)
    forward = np.asarray(look_at, dtype=np.float64) - eye
    forward /= np.linalg.norm(forward)
    # Camera axes (OpenCV convention: x right, y down, z forward); +y on the floor points up in the image.
    right = np.cross(forward, (0.0, 1.0, 0.0))
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    rotation = np.stack((right, down, forward))
    focal = (min(width, height) / 2) / math.tan(math.radians(fov) / 2)
    intrinsics = np.array(((focal, 0.0, width / 2), (0.0, focal, height / 2), (0.0, 0.0, 1.0)))
    translation = -rotation @ eye
    return intrinsics @ np.column_stack((rotation[:, 0], rotation[:, 1], translation))


@functools.lru_cache(maxsize=4)
def floorTexture(half_size: float, tile: float, arena_bounds: tuple[float, float], seed: int,
                 resolution: int = 600) -> tuple[np.ndarray, np.ndarray]:
    """
    A procedural floor: tiles of slightly different shades with grain and grout lines, and a dark tape line on
    the arena's border; outside the arena the floor is darker.

    :param half_size: the texture covers [-half_size, half_size] metres on each axis
    :param tile: tile side in metres
    :param arena_bounds: (low, high) of the arena on each axis
    :param seed: seed of the texture's noise
    :param resolution: texture side in pixels
    :return: (RGB uint8 texture, 3x3 matrix mapping texture (column, row, 1) to floor (x, y, 1)), both read-only
        (cached: every env shares them)
    """
    rng = np.random.default_rng(seed)
    metres_per_pixel = 2 * half_size / resolution
    centres = (np.arange(resolution) + 0.5) * metres_per_pixel - half_size
    xs = centres[None, :]
    ys = -centres[:, None]  # row 0 is the top: the largest y
    n_tiles = math.ceil(2 * half_size / tile) + 1
    tile_shade = rng.uniform(-14, 14, size=(n_tiles, n_tiles))
    ix = ((xs + half_size) // tile).astype(int)
    iy = ((ys + half_size) // tile).astype(int)
    base = np.array((196.0, 182.0, 160.0))  # light wood
    shade = tile_shade[iy, ix] + rng.normal(0.0, 6.0, size=(resolution, resolution))
    image = base[None, None, :] + shade[:, :, None]
    grout = (np.abs(((xs + half_size) % tile) - tile / 2) > tile / 2 - 0.008) | \
            (np.abs(((ys + half_size) % tile) - tile / 2) > tile / 2 - 0.008)
    image[grout] = (120.0, 110.0, 100.0)
    low, high = arena_bounds
    inside = (xs >= low) & (xs <= high) & (ys >= low) & (ys <= high)
    image[~inside] *= 0.6
    tape = 0.025
    near_border = (np.minimum(np.abs(xs - low), np.abs(xs - high)) < tape) & (ys >= low - tape) & (ys <= high + tape)
    near_border |= (np.minimum(np.abs(ys - low), np.abs(ys - high)) < tape) & (xs >= low - tape) & (xs <= high + tape)
    image[near_border] = (30.0, 30.0, 30.0)
    texture = np.clip(image, 0, 255).astype(np.uint8)
    texture_to_floor = np.array(((metres_per_pixel, 0.0, -half_size + metres_per_pixel / 2),
                                 (0.0, -metres_per_pixel, half_size - metres_per_pixel / 2),
                                 (0.0, 0.0, 1.0)))
    texture.flags.writeable = False
    texture_to_floor.flags.writeable = False
    return texture, texture_to_floor


def _project(homography: np.ndarray, points: np.ndarray) -> np.ndarray:
    projected = np.asarray(points, dtype=np.float64) @ homography[:, :2].T + homography[:, 2]
    return projected[:, :2] / projected[:, 2:3]
