"""CarRacingGymEnv: gymnasium's CarRacing (Box2D) behind the SRLGymEnv interface.

gymnasium draws CarRacing frames with pygame on an off-screen surface, so the env runs headless (no DISPLAY, no
window). Three changes to how it renders, through a small subclass: frames come at the size of the requested
observation (instead of 96x96, then resized); in ground-truth mode no frame is drawn at all; and the road and grass
are placed on screen with numpy in one go instead of one Python loop per polygon, which draws exactly the same
pixels (the speed it gives is in docs/architecture.md).
"""
from __future__ import annotations

import math
import os
import warnings
from typing import Any

# pygame prints a banner on import unless told otherwise; gymnasium's car_racing imports it.
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

with warnings.catch_warnings():
    # Box2D's SWIG bindings trip "builtin type ... has no __module__ attribute" on import.
    warnings.simplefilter("ignore", DeprecationWarning)
    from gymnasium.envs.box2d import car_racing  # noqa: E402
from gymnasium.utils import EzPickle  # noqa: E402
from pygame import gfxdraw  # noqa: E402

from environments.srl_env import SRLGymEnv, continuousAction, discreteActionIndex  # noqa: E402


class _SizedCarRacing(car_racing.CarRacing):
    """
    CarRacing (continuous actions) whose "state_pixels" frame has a chosen size, or is skipped.

    A copy or an unpickled one is built anew from these two arguments (CarRacing's EzPickle would pass its own).

    :param frame_size: (width, height) of the per-step frame, None to draw no frame
    :param render_mode: "rgb_array", or "human" for a pygame window (needs a display)
    """

    def __init__(self, frame_size: tuple[int, int] | None, render_mode: str) -> None:
        super().__init__(render_mode=render_mode, continuous=True)
        EzPickle.__init__(self, frame_size, render_mode)
        self.frame_size = frame_size
        # Size of the next image made from the drawing surface; None: the size CarRacing asks for.
        self._image_size: tuple[int, int] | None = None
        # Polygons of the road being drawn (rebuilt when reset makes a new road_poly list).
        self._polygons_of: list | None = None
        self._polygons = np.zeros((0, 4, 2))
        self._polygon_colors: list = []
        self._n_grass = 0

    def _render(self, mode: str) -> Any:
        if mode == "state_pixels":
            if self.frame_size is None:
                return None
            self._image_size = self.frame_size
        try:
            return super()._render(mode)
        finally:
            self._image_size = None

    def renderImage(self, size: tuple[int, int]) -> np.ndarray:
        """:param size: (width, height)  :return: the full-detail frame (the "rgb_array" drawing) at that size"""
        self._image_size = size
        try:
            return super()._render("rgb_array")
        finally:
            self._image_size = None

    def _create_image_array(self, screen: Any, size: tuple[int, int]) -> np.ndarray:
        return super()._create_image_array(screen, self._image_size or size)

    def _render_road(self, zoom: float, translation: tuple[float, float], angle: float) -> None:
        """CarRacing._render_road, with the per-polygon transform and visibility test done on arrays."""
        bounds = car_racing.PLAYFIELD
        field = [(bounds, bounds), (bounds, -bounds), (-bounds, -bounds), (-bounds, bounds)]
        self._draw_colored_polygon(self.surf, field, self.bg_color, zoom, translation, angle, clip=False)
        if self._polygons_of is not self.road_poly or len(self._polygons) != self._n_grass + len(self.road_poly):
            self._cachePolygons()
        points = _rotate(self._polygons, angle)
        # The same float operations, in the same order, as CarRacing._draw_colored_polygon.
        points[..., 0] = points[..., 0] * zoom + translation[0]
        points[..., 1] = points[..., 1] * zoom + translation[1]
        margin = car_racing.MAX_SHAPE_DIM
        inside = ((points[..., 0] >= -margin) & (points[..., 0] <= car_racing.WINDOW_W + margin)
                  & (points[..., 1] >= -margin) & (points[..., 1] <= car_racing.WINDOW_H + margin))
        for index in np.flatnonzero(inside.any(axis=1)):
            if index < self._n_grass:
                color = self.grass_color
            else:
                color = [int(c) for c in self._polygon_colors[index]]
            polygon = points[index].tolist()
            gfxdraw.aapolygon(self.surf, polygon, color)
            gfxdraw.filled_polygon(self.surf, polygon, color)

    def _cachePolygons(self) -> None:
        """Grass patches then road polygons (as CarRacing draws them) in one array; colours kept by reference,
        since a tile's colour changes when the car drives over it."""
        dim = car_racing.GRASS_DIM
        grass = [[(dim * x + dim, dim * y + 0), (dim * x + 0, dim * y + 0), (dim * x + 0, dim * y + dim),
                  (dim * x + dim, dim * y + dim)] for x in range(-20, 20, 2) for y in range(-20, 20, 2)]
        road = [[(p[0], p[1]) for p in polygon] for polygon, _ in self.road_poly]
        self._polygons = np.array(grass + road, dtype=np.float64).reshape(-1, 4, 2)
        self._n_grass = len(grass)
        self._polygon_colors = [None] * len(grass) + [color for _, color in self.road_poly]
        self._polygons_of = self.road_poly


def _rotate(points: np.ndarray, angle: float) -> np.ndarray:
    """
    pygame's Vector2.rotate_rad on an array of points, bit for bit: the angle is first brought into [0, 2 pi), and
    multiples of pi/2 (within pygame's epsilon) are exact swaps.

    :param points: (..., 2) array
    :param angle: radians
    :return: a new (..., 2) array
    """
    epsilon = 1e-6
    angle = math.fmod(angle, 2 * math.pi)
    if angle < 0:
        angle += 2 * math.pi
    x, y = points[..., 0], points[..., 1]
    if math.fmod(angle + epsilon, math.pi / 2) < 2 * epsilon:
        quarter = int((angle + epsilon) / (math.pi / 2)) % 4
        rotated = ((x, y), (-y, x), (-x, -y), (y, -x))[quarter]
        return np.stack(rotated, axis=-1)
    sin, cos = math.sin(angle), math.cos(angle)
    return np.stack((cos * x - sin * y, sin * x + cos * y), axis=-1)


class CarRacingGymEnv(SRLGymEnv):
    """
    Drive a car around a random track (gymnasium's CarRacing-v3 task), seen from above.

    Discrete actions: 0 steer left, 1 steer right, 2 accelerate (gas 1), 3 brake (1). Continuous actions (3) in
    [-1, 1]: steering (-1 left, +1 right, used as is), gas and brake, each mapped linearly from [-1, 1] to
    CarRacing's [0, 1] (-1: none, +1: full). Reward: CarRacing's, -0.1 per step plus 1000/N for each of the N track
    tiles visited for the first time, and -100 (terminating) when the car leaves the playfield. The episode
    terminates when the lap is done, and is truncated after ``max_steps`` steps (MAX_STEPS = 10000).
    ``info["is_success"]``: the lap is finished.

    Ground truth: the car's (x, y) in CarRacing's world units. ``getTargetPos()``: the centre of the track
    LOOKAHEAD segments ahead of the track point nearest to the car, (x, y) like the ground truth (the original
    padded it to its 5-D ground truth), so the relative ground truth points the way to go along the track. Each
    reset draws a new track from the env's seeded generator: the same seed gives the same tracks.

    :param srl_model: "ground_truth" (float32 (2,)), "raw_pixels" (uint8 (H, W, 3) CarRacing's top-down view that
        follows the car, drawn at that size) or a learned SRL model name (pixels too)
    :param kwargs: the other SRLGymEnv keywords, but ``random_target`` (each reset draws a new track, which the target
        follows) and ``shape_reward`` (the reward is the tiles'), which it refuses;
        ``renders=True`` opens CarRacing's pygame window (needs a display)
    """

    # gymnasium's frame rate: CarRacing's, one step is 1/FPS s of simulated time (its pygame window shows that rate)
    metadata = {**SRLGymEnv.metadata, "render_fps": car_racing.FPS}
    SRL_MODES = ("ground_truth", "raw_pixels")
    ACTION_JOINTS = False
    PLOT_TYPE = "2D"
    MAX_STEPS = 10000
    LOOKAHEAD = 5
    RANDOM_TARGET = False
    SHAPED_REWARD = False
    PLAYFIELD = car_racing.PLAYFIELD
    # Discrete action -> CarRacing's (steering, gas, brake).
    DISCRETE_ACTIONS = ((-1.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    ACTION_NAMES = ("steer left", "steer right", "gas", "brake")
    CONTINUOUS_ACTION_NAMES = ("steering", "gas", "brake")

    def __init__(self, **kwargs: Any) -> None:
        """:param kwargs: the SRLGymEnv keywords (an unknown one raises TypeError)"""
        self._car: _SizedCarRacing | None = None
        super().__init__(**kwargs)
        _, height, width = self.img_shape
        self._uses_pixels = self.usesPixels
        if self.is_discrete:
            self.action_space = gym.spaces.Discrete(len(self.DISCRETE_ACTIONS))
        else:
            self.action_space = gym.spaces.Box(-1.0, 1.0, (3,), dtype=np.float32)
        if self._uses_pixels:
            self.observation_space = self.pixelObservationSpace()
        else:
            bound = 3.0 * self.PLAYFIELD  # the car ends its episode soon after |x| or |y| > PLAYFIELD
            self.observation_space = gym.spaces.Box(-bound, bound, (2,), dtype=np.float32)
        if self.init_seed is not None:
            self.action_space.seed(self.init_seed)
        self._discrete_actions = [np.array(a) for a in self.DISCRETE_ACTIONS]
        self._render_side = max(self.render_size, height, width) if self._uses_pixels else self.render_size
        self._car = _SizedCarRacing((width, height) if self._uses_pixels else None,
                                    render_mode="human" if self.renders else "rgb_array")
        self._track_xy = np.zeros((0, 2))
        self._step_counter = 0
        self._frame: np.ndarray | None = None

    # --- gymnasium API --------------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """
        Start on a new track drawn from the env's random generator.

        :param seed: reseeds the env's random generator when given
        :param options: unused
        :return: (first observation, info)
        """
        super().reset(seed=seed)
        track_seed = int(self.np_random.integers(2**31 - 1))
        self._frame, _ = self._car.reset(seed=track_seed)
        self._track_xy = np.array([(x, y) for _, _, x, y in self._car.track], dtype=np.float64)
        self._step_counter = 0
        return self._observation(), {}

    def step(self, action: int | np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """
        :param action: a Discrete(4) index, or (steering, gas, brake) in [-1, 1]
        :return: (observation, reward, terminated, truncated, {"is_success": lap finished})
        """
        self._checkOpen("step")
        if self.is_discrete:
            index = discreteActionIndex(action, len(self._discrete_actions))
            command = self._discrete_actions[index]
        else:
            values = continuousAction(action, 3, " (steering, gas, brake)")
            clipped = np.clip(values, -1.0, 1.0)
            command = np.array((clipped[0], (clipped[1] + 1.0) / 2.0, (clipped[2] + 1.0) / 2.0))
        self._frame, reward, terminated, _, info = self._car.step(command)
        self._step_counter += 1
        truncated = self._step_counter >= self.max_steps and not terminated
        return self._observation(), float(reward), terminated, truncated, {
            "is_success": bool(info.get("lap_finished", False))}

    def render(self) -> np.ndarray | None:
        """
        :return: in "rgb_array" mode the full-detail frame, uint8 (S, S, 3) with S = max(render_size, observation
            size in pixel modes); None otherwise
        """
        self._checkOpen("render")
        if self.render_mode == "rgb_array" and self._car is not None and self._car.car is not None:
            return self._car.renderImage((self._render_side, self._render_side))
        return None

    def close(self) -> None:
        """Release CarRacing's Box2D world and pygame resources (safe to call twice)."""
        if self._car is not None:
            self._car.close()
            self._car = None
        super().close()

    # --- observations and state -----------------------------------------------------------------------------------

    def _observation(self) -> np.ndarray:
        if self._uses_pixels:
            return self._frame
        return self.getSRLState()

    def getRobotPos(self) -> np.ndarray:
        """:return: the car's (x, y), float32."""
        x, y = self._car.car.hull.position
        return np.array((x, y), dtype=np.float32)

    def getTargetPos(self) -> np.ndarray:
        """:return: the track centre LOOKAHEAD segments ahead of the track point nearest to the car, float32."""
        x, y = self._car.car.hull.position
        nearest = int(np.argmin((self._track_xy[:, 0] - x) ** 2 + (self._track_xy[:, 1] - y) ** 2))
        return self._track_xy[(nearest + self.LOOKAHEAD) % len(self._track_xy)].astype(np.float32)

    @staticmethod
    def getGroundTruthDim() -> int:
        """:return: 2, the ground truth is the car's (x, y)."""
        return 2

    @property
    def tilesVisited(self) -> int:
        """Number of track tiles the car has driven over this episode."""
        return int(self._car.tile_visited_count)
