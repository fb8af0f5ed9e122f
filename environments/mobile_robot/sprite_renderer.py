"""SpriteRenderer: the mobile robot's top-down camera images drawn with numpy from layers PyBullet renders once.

The scene of the mobile-robot envs only changes by teleporting bodies (the robot, the targets) without rotating
them, and the top-down camera is fixed. So a frame is the background (floor and walls, every moving body hidden)
with each moving body's sprite pasted over it, depth-tested pixel by pixel against what is already drawn (a body
hides another, or a wall, exactly where TinyRenderer's depth buffer would).

A sprite is the body alone in the scene (walls hidden too), rendered by TinyRenderer near the point of a grid of its
position plane nearest to the body (a cell spans CELL_PIXELS pixels of the image), with its depth and its mask
(segmentation). The grid point is moved by less than a pixel so that the body's image has the same sub-pixel phase
as the one to draw (to 1 / PHASES of a pixel), and the sprite is pasted shifted by whole pixels. Rendering near the
body keeps what perspective does to a tall body (its top moves further from the optical axis than its base) within a
fraction of a pixel; the phase keeps TinyRenderer's aliased edges where it puts them, but for about one pixel of the
robot's edges per frame (TinyRenderer samples its thin parts: its outline changes with a shift of a 16th of a pixel).

Invariants:

- every layer (background, sprite) is rendered with all other moving bodies hidden under the floor, and is keyed
  by image size, projection and the body's grid point, phase, height and orientation: an image depends only on the
  current poses, never on what was drawn before (same poses, same pixels, in any order);
- layers are made lazily, on first need, and kept for the env's life; the camera's view matrix never changes;
- the sprites are also kept on disk (environments/mobile_robot/sprite_cache.py), so that each is
  rendered once per machine; a sprite read from there is the one TinyRenderer rendered;
- only the top-down camera: the first-person view (``fpv``) is rendered by PyBullet, which is left with every body
  where the env put it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from environments.bullet import pybullet
from environments.mobile_robot.sprite_cache import SpriteCache, cacheFolder, groupDigest

# Grid of sprite positions: one per CELL_PIXELS pixels of the image (a grid point is at most CELL_PIXELS / 2 away).
CELL_PIXELS = 8.0
# Sub-pixel positions of a body's image that get a sprite of their own, per axis (what is left is rounded).
PHASES = 8
# This module's code: a sprite on disk is used only by the code that rendered it
with open(__file__, "rb") as _source:
    _SOURCE_DIGEST = hashlib.sha256(_source.read()).hexdigest()
# Where the other moving bodies go while a layer is rendered: under the floor, out of the camera's sight.
HIDDEN_Z = -10.0
# A body below this height is hidden by the env itself (a reached target): nothing to draw.
VISIBLE_MIN_Z = -0.5


@dataclasses.dataclass(frozen=True)
class _Sprite:
    """One body rendered alone: its pixels in the bounding box of its mask, and where its grid point projects."""

    top: int
    left: int
    rgb: np.ndarray  # uint8 (h, w, 3)
    depth: np.ndarray  # float32 (h, w), TinyRenderer's depth buffer
    mask: np.ndarray  # bool (h, w)
    anchor: tuple[float, float]  # (row, column) of the grid point's projection


@dataclasses.dataclass
class _View:
    """The layers of one image size: the background and the sprites made so far."""

    width: int
    height: int
    projection: tuple[float, ...]
    transform: np.ndarray  # 4 x 4, world -> clip coordinates
    cell: float  # grid spacing in metres
    metres_per_pixel: np.ndarray  # 2 x 2: (dx, dy) of a (row, column) move on the floor
    rgb: np.ndarray
    depth: np.ndarray
    sprites: dict[tuple, _Sprite | None] = dataclasses.field(default_factory=dict)
    # the sprites on disk, one group per (body, height, orientation)
    caches: dict[tuple, SpriteCache] = dataclasses.field(default_factory=dict)


class SpriteRenderer:
    """
    Top-down camera images of a scene whose moving bodies are only translated, drawn from cached layers.

    :param client_id: the PyBullet client of the scene
    :param view_matrix: the fixed top-down camera's view matrix (PyBullet's, column-major)
    :param moving_bodies: the unique ids of the bodies that move (robot, targets)
    :param static_bodies: the unique ids of the bodies that never move and may hide a moving one (walls), hidden
        while sprites are rendered; the floor, and any other body, is background only
    """

    def __init__(self, client_id: int, view_matrix: Sequence[float], moving_bodies: Sequence[int],
                 static_bodies: Sequence[int]) -> None:
        self._client = client_id
        self._view_matrix = tuple(float(value) for value in view_matrix)
        self._moving_bodies = tuple(moving_bodies)
        self._static_bodies = tuple(static_bodies)
        self._views: dict[tuple, _View] = {}
        # The same projection object of the env is passed at every call: found by identity first (the object is
        # kept in the entry, so its id is not reused), by value otherwise.
        self._by_identity: dict[tuple[int, int, int], tuple[Any, _View]] = {}
        self._heights: dict[int, float] = {}
        self._cache_folder = cacheFolder()

    def close(self) -> None:
        """Save the sprites rendered since the last save to the disk cache."""
        for view in self._views.values():
            for cache in view.caches.values():
                cache.save()

    # --- public ---------------------------------------------------------------------------------------------

    def image(self, width: int, height: int, projection_matrix: Sequence[float]) -> np.ndarray:
        """
        :param width: image width in pixels
        :param height: image height in pixels
        :param projection_matrix: PyBullet projection matrix matching width / height
        :return: the top-down camera's RGB image of the current poses, uint8 (height, width, 3), a new array
        """
        known = self._by_identity.get((width, height, id(projection_matrix)))
        if known is not None:
            view = known[1]
        else:
            key = (width, height, tuple(float(value) for value in projection_matrix))
            view = self._views.get(key)
            if view is None:
                view = self._views[key] = self._makeView(width, height, key[2])
            self._by_identity[(width, height, id(projection_matrix))] = (projection_matrix, view)
        frame = view.rgb.copy()
        depth = view.depth.copy()
        for uid, position, orientation in self._poses(self._moving_bodies):
            if position[2] < VISIBLE_MIN_Z:
                continue
            self._paste(view, frame, depth, uid, position, orientation)
        return frame

    # --- layers -----------------------------------------------------------------------------------------------

    def _poses(self, bodies: Sequence[int]) -> list[tuple[int, tuple[float, float, float], tuple[float, ...]]]:
        client = self._client
        poses = []
        for uid in bodies:
            position, orientation = pybullet.getBasePositionAndOrientation(uid, physicsClientId=client)
            poses.append((uid, position, orientation))
        return poses

    def _render(self, width: int, height: int, projection: Sequence[float]) -> tuple[np.ndarray, ...]:
        _, _, rgba, depth, segmentation = pybullet.getCameraImage(
            width, height, self._view_matrix, projection, renderer=pybullet.ER_TINY_RENDERER,
            physicsClientId=self._client)
        rgba = np.asarray(rgba, dtype=np.uint8).reshape(height, width, 4)
        depth = np.asarray(depth, dtype=np.float32).reshape(height, width)
        segmentation = np.asarray(segmentation).reshape(height, width)
        return np.ascontiguousarray(rgba[:, :, :3]), depth, segmentation

    def _alone(self, shown: int | None, position: Sequence[float] = (), orientation: Sequence[float] = ()
               ) -> list[tuple[int, tuple, tuple]]:
        """
        Hide every moving body but ``shown`` (put at position / orientation), and with it shown, the static
        bodies too (a sprite is the body alone on the floor: what hides it is found by the depth test).

        :return: the poses to restore
        """
        bodies = self._moving_bodies if shown is None else self._moving_bodies + self._static_bodies
        poses = self._poses(bodies)
        for uid, body_position, body_orientation in poses:
            if uid == shown:
                pybullet.resetBasePositionAndOrientation(uid, position, orientation, physicsClientId=self._client)
            else:
                pybullet.resetBasePositionAndOrientation(uid, (body_position[0], body_position[1], HIDDEN_Z),
                                                         body_orientation, physicsClientId=self._client)
        return poses

    def _restore(self, poses: list[tuple[int, tuple, tuple]]) -> None:
        for uid, position, orientation in poses:
            pybullet.resetBasePositionAndOrientation(uid, position, orientation, physicsClientId=self._client)

    def _makeView(self, width: int, height: int, projection: tuple[float, ...]) -> _View:
        saved = self._alone(None)
        try:
            rgb, depth, _ = self._render(width, height, projection)
        finally:
            self._restore(saved)
        view_m = np.asarray(self._view_matrix, dtype=np.float64).reshape(4, 4).T
        projection_m = np.asarray(projection, dtype=np.float64).reshape(4, 4).T
        view = _View(width, height, projection, projection_m @ view_m, 0.0, np.eye(2), rgb, depth)
        # Grid spacing: CELL_PIXELS pixels on the floor at the image centre; the floor's pixel -> metre map there.
        centre = np.array(self._project(view, (0.0, 0.0, 0.0)))
        jacobian = np.stack([np.array(self._project(view, (1.0, 0.0, 0.0))) - centre,
                             np.array(self._project(view, (0.0, 1.0, 0.0))) - centre], axis=1)
        view.cell = CELL_PIXELS / float(np.abs(jacobian).max())
        view.metres_per_pixel = np.linalg.inv(jacobian)
        return view

    @staticmethod
    def _project(view: _View, point: Sequence[float]) -> tuple[float, float]:
        """:return: (row, column) of a world point in the view's image (pixel units, continuous)"""
        clip = view.transform @ np.array((point[0], point[1], point[2], 1.0))
        ndc_x, ndc_y = clip[0] / clip[3], clip[1] / clip[3]
        return (1.0 - ndc_y) * 0.5 * view.height, (ndc_x + 1.0) * 0.5 * view.width

    def _bodyHeight(self, uid: int) -> float:
        """:return: the height above the body's base of the middle of its bounding box (where its shift is taken)"""
        height = self._heights.get(uid)
        if height is None:
            position, _ = pybullet.getBasePositionAndOrientation(uid, physicsClientId=self._client)
            low, high = pybullet.getAABB(uid, physicsClientId=self._client)
            for link in range(pybullet.getNumJoints(uid, physicsClientId=self._client)):
                link_low, link_high = pybullet.getAABB(uid, link, physicsClientId=self._client)
                low = np.minimum(low, link_low)
                high = np.maximum(high, link_high)
            height = self._heights[uid] = (float(low[2]) + float(high[2])) / 2 - float(position[2])
        return height

    def _sprite(self, view: _View, uid: int, grid: tuple[float, float, float], orientation: tuple[float, ...]
                ) -> _Sprite | None:
        saved = self._alone(uid, grid, orientation)
        try:
            rgb, depth, segmentation = self._render(view.width, view.height, view.projection)
        finally:
            self._restore(saved)
        mask = segmentation == uid
        rows, columns = np.nonzero(mask)
        if rows.size == 0:
            return None
        top, bottom, left, right = rows.min(), rows.max() + 1, columns.min(), columns.max() + 1
        anchor = self._project(view, (grid[0], grid[1], grid[2] + self._bodyHeight(uid)))
        return _Sprite(int(top), int(left), rgb[top:bottom, left:right].copy(), depth[top:bottom, left:right].copy(),
                       mask[top:bottom, left:right].copy(), anchor)

    def _paste(self, view: _View, frame: np.ndarray, depth: np.ndarray, uid: int, position: Sequence[float],
               orientation: Sequence[float]) -> None:
        cell = view.cell
        grid_x, grid_y = round(position[0] / cell), round(position[1] / cell)
        lift = self._bodyHeight(uid)
        row, column = self._project(view, (position[0], position[1], position[2] + lift))
        # sub-pixel phase of the body's image, in 1 / PHASES of a pixel
        phase_row, phase_column = round((row % 1.0) * PHASES) % PHASES, round((column % 1.0) * PHASES) % PHASES
        # The env teleports bodies to the same heights and orientations: PyBullet hands back the same floats.
        key = (uid, grid_x, grid_y, phase_row, phase_column, position[2], orientation)
        if key in view.sprites:
            sprite = view.sprites[key]
        else:
            sprite = view.sprites[key] = self._cachedSprite(view, uid, (grid_x, grid_y, phase_row, phase_column),
                                                            position[2], tuple(orientation), lift)
        if sprite is not None:
            self._blit(view, frame, depth, sprite, round(row - sprite.anchor[0]), round(column - sprite.anchor[1]))

    def _cachedSprite(self, view: _View, uid: int, key: tuple[int, int, int, int], height: float,
                      orientation: tuple[float, ...], lift: float) -> _Sprite | None:
        """:return: a body's sprite at a grid point and phase, from the disk cache or rendered"""
        group = (uid, height, orientation)
        cache = view.caches.get(group)
        if cache is None:
            visuals = pybullet.getVisualShapeData(uid, physicsClientId=self._client)
            digest = groupDigest((importlib.metadata.version("pybullet"), _SOURCE_DIGEST, view.width, view.height,
                                  view.projection, self._view_matrix, CELL_PIXELS, PHASES, visuals, height,
                                  orientation))
            cache = view.caches[group] = SpriteCache(digest, self._cache_folder)

        def render() -> tuple | None:
            grid_x, grid_y, phase_row, phase_column = key
            cell = view.cell
            # the grid point moved (less than a pixel) so that its image has that phase
            # (a few Newton steps: the floor's pixel -> metre map is the one of the image centre)
            moved = np.array((grid_x * cell, grid_y * cell))
            grid_row, grid_column = self._project(view, (moved[0], moved[1], height + lift))
            wanted = np.array((math.floor(grid_row) + phase_row / PHASES, math.floor(grid_column) + phase_column / PHASES))
            for _ in range(3):
                projected = self._project(view, (moved[0], moved[1], height + lift))
                moved = moved + view.metres_per_pixel @ (wanted - projected)
            sprite = self._sprite(view, uid, (moved[0], moved[1], height), orientation)
            return None if sprite is None else (sprite.top, sprite.left, sprite.rgb, sprite.depth, sprite.mask,
                                                sprite.anchor)

        arrays = cache.get(key, render)
        return None if arrays is None else _Sprite(*arrays)

    @staticmethod
    def _blit(view: _View, frame: np.ndarray, depth: np.ndarray, sprite: _Sprite | None, shift_rows: int,
              shift_columns: int) -> None:
        """Draw a sprite, moved by whole pixels, where it is nearer than what the frame already holds."""
        if sprite is None:
            return
        top = sprite.top + shift_rows
        left = sprite.left + shift_columns
        sprite_height, sprite_width = sprite.mask.shape
        # the part of the sprite inside the image
        clip_top, clip_left = max(0, -top), max(0, -left)
        clip_bottom = min(sprite_height, view.height - top)
        clip_right = min(sprite_width, view.width - left)
        if clip_top >= clip_bottom or clip_left >= clip_right:
            return
        rows = slice(top + clip_top, top + clip_bottom)
        columns = slice(left + clip_left, left + clip_right)
        sprite_depth = sprite.depth[clip_top:clip_bottom, clip_left:clip_right]
        depth_region = depth[rows, columns]
        drawn = sprite.mask[clip_top:clip_bottom, clip_left:clip_right] & (sprite_depth < depth_region)
        frame[rows, columns][drawn] = sprite.rgb[clip_top:clip_bottom, clip_left:clip_right][drawn]
        depth_region[drawn] = sprite_depth[drawn]
