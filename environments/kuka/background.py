"""The Kuka scene's static bodies (the floor and the table) drawn once per camera, for the "lowpoly" renderer.

pybullet_data's plane (two textured triangles of 200 x 200 m) and table (a textured mesh) are a large part of
TinyRenderer's time on a Kuka frame (docs/architecture.md gives the shares), and nothing about them changes how they
look: they never move, a camera is fixed and TinyRenderer draws no shadows. So the lowpoly scene hides their visuals
(alpha 0: TinyRenderer skips them; their collision shapes, and so physics, are untouched), and
:class:`StaticBackground` draws them alone, once per camera (view, projection and size), in a PyBullet client of its
own, keeping the image and its depth buffer. A frame is then the scene without them, with the background's pixel
wherever the background is nearer than what the scene drew there: the depth test TinyRenderer makes when it draws
every body in one scene. At equal depth the scene's pixel is kept (where neither drew anything, both are the clear
colour).

Invariant: the frame is TinyRenderer's with the static bodies drawn in the scene, pixel for pixel, because a pixel's
colour comes from the nearest body's triangle alone (no shadows, no blending) and its depth is computed the same way
whatever else is drawn; up to TinyRenderer's own jitter: drawing one state again right away now and then gives a pixel
1 level off (with the static bodies drawn or not), while the frames of two runs with the same seed are equal.
tests/test_kuka_renderer.py checks it on every Kuka env and camera.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from environments.bullet import BulletClient, pybullet, silencedCOutput

PLANE_URDF = "plane.urdf"  # pybullet_data's, as the scene loads it
TABLE_URDF = os.path.join("table", "table.urdf")  # pybullet_data's
HIDDEN = (1.0, 1.0, 1.0, 0.0)  # the rgba a hidden visual gets: TinyRenderer draws nothing of it
VISIBLE = (1.0, 1.0, 1.0, 1.0)  # the static bodies' own: their textures' colours


def cameraImage(client: BulletClient, view_matrix: Sequence[float], width: int, height: int,
                projection_matrix: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """
    :param client: the PyBullet client whose scene to draw
    :param view_matrix: the camera's view matrix
    :param width: image width in pixels
    :param height: image height in pixels
    :param projection_matrix: the camera's projection matrix
    :return: TinyRenderer's image, (height, width, 3) uint8, and its depth buffer, (height, width) float32
    """
    _, _, rgba, depth, _ = client.getCameraImage(width, height, view_matrix, projection_matrix,
                                                 renderer=pybullet.ER_TINY_RENDERER,
                                                 flags=pybullet.ER_NO_SEGMENTATION_MASK)
    rgb = np.asarray(rgba, dtype=np.uint8).reshape(height, width, 4)[:, :, :3]
    return rgb, np.asarray(depth, dtype=np.float32).reshape(height, width)


def setVisible(client: BulletClient, uid: int, visible: bool) -> None:
    """
    Show or hide a static body's visuals (hidden: alpha 0, which TinyRenderer skips; collisions are untouched).

    :param client: the body's PyBullet client
    :param uid: the unique id of a static body (PLANE_URDF's or TABLE_URDF's: one link, whose shapes' rgba is
        VISIBLE)
    :param visible: True: rgba VISIBLE; False: HIDDEN
    """
    client.changeVisualShape(uid, -1, rgbaColor=list(VISIBLE if visible else HIDDEN))


class StaticBackground:
    """
    The static bodies alone as TinyRenderer draws them from each camera, with their depth, made on first use and kept.

    :param bodies: (path of the URDF, position) of each static body, as the scene loads it (fixed base, identity
        orientation), in the scene's loading order
    """

    def __init__(self, bodies: Sequence[tuple[str, Sequence[float]]]) -> None:
        self._bodies = [(path, [float(value) for value in position]) for path, position in bodies]
        self._client: BulletClient | None = None
        self._cameras: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def _camera(self, view_matrix: Sequence[float], projection_matrix: Sequence[float], width: int,
                height: int) -> tuple[np.ndarray, np.ndarray]:
        """:return: the static bodies' image from this camera, (height, width, 3) uint8, and its depth buffer"""
        key = (tuple(view_matrix), tuple(projection_matrix), width, height)
        if key not in self._cameras:
            if self._client is None:
                with silencedCOutput():
                    self._client = BulletClient(connection_mode=pybullet.DIRECT)
                for path, position in self._bodies:
                    self._client.loadURDF(path, position, useFixedBase=True)
            rgb, depth = cameraImage(self._client, view_matrix, width, height, projection_matrix)
            self._cameras[key] = (rgb.copy(), depth.copy())
        return self._cameras[key]

    def composite(self, rgb: np.ndarray, depth: np.ndarray, view_matrix: Sequence[float],
                  projection_matrix: Sequence[float]) -> np.ndarray:
        """
        :param rgb: TinyRenderer's image of the scene with the static bodies hidden, (height, width, 3) uint8
        :param depth: its depth buffer, (height, width)
        :param view_matrix: the camera's view matrix
        :param projection_matrix: the camera's projection matrix
        :return: the image with the static bodies wherever they are nearer than the scene, (height, width, 3) uint8
        """
        height, width = depth.shape
        background, background_depth = self._camera(view_matrix, projection_matrix, width, height)
        return np.where((depth <= background_depth)[:, :, None], rgb, background)

    def close(self) -> None:
        """Disconnect the background's client (safe to call twice; a later image connects again)."""
        if self._client is not None:
            self._client.disconnect()
            self._client = None
