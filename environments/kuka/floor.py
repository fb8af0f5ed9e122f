"""The Kuka scene's floor drawn once per camera, for the "lowpoly" renderer.

pybullet_data's plane (two textured triangles of 200 x 200 m) is a large part of TinyRenderer's time on a Kuka frame
(docs/architecture.md gives the share), and nothing in the scene changes how it looks: it is static, the camera is fixed
and TinyRenderer draws no shadows. So the lowpoly scene hides the plane's visual (alpha 0: TinyRenderer skips it; its
collision box, and so physics, are untouched), and :class:`FloorImages` draws the plane alone, once per camera (view,
projection and size), in a PyBullet client of its own. A frame is then the scene without the floor, with the floor image
in every pixel no triangle covered (the depth buffer's clear value there).

Invariant: the frame is TinyRenderer's with the visible plane drawn in the scene, pixel for pixel, because nothing in
the scene lies below the floor and TinyRenderer decides a pixel's coverage by the same rule with or without the
plane; up to TinyRenderer's own jitter: drawing one state again right away now and then gives a pixel 1 level off
(with the plane drawn or not), while the frames of two runs with the same seed are
equal. tests/test_kuka_renderer.py checks it on every Kuka env and camera.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from environments.bullet import BulletClient, pybullet, pybullet_data, silencedCOutput

PLANE_URDF = "plane.urdf"  # pybullet_data's, as the scene loads it
HIDDEN = (1.0, 1.0, 1.0, 0.0)  # the rgba a hidden visual gets: TinyRenderer draws nothing of it
SKY_VIEW = pybullet.computeViewMatrix([0.0, 0.0, 10.0], [0.0, 0.0, 20.0], [0.0, 1.0, 0.0])


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


class FloorImages:
    """
    The plane alone as TinyRenderer draws it from each camera, made on first use and kept.

    :param plane_position: where the scene loads the plane (fixed base, identity orientation)
    """

    def __init__(self, plane_position: Sequence[float]) -> None:
        self._plane_position = [float(value) for value in plane_position]
        self._client: BulletClient | None = None
        self._cameras: dict[tuple, tuple[np.ndarray, float]] = {}

    def _camera(self, view_matrix: Sequence[float], projection_matrix: Sequence[float], width: int,
                height: int) -> tuple[np.ndarray, float]:
        """:return: the floor's image from this camera and the depth buffer's value where nothing is drawn"""
        key = (tuple(view_matrix), tuple(projection_matrix), width, height)
        if key not in self._cameras:
            if self._client is None:
                with silencedCOutput():
                    self._client = BulletClient(connection_mode=pybullet.DIRECT)
                self._client.loadURDF(os.path.join(pybullet_data.getDataPath(), PLANE_URDF), self._plane_position,
                                      useFixedBase=True)
            floor = cameraImage(self._client, view_matrix, width, height, projection_matrix)[0].copy()
            # the clear value depends on the projection only: a camera looking up from above the plane draws nothing
            clear = float(cameraImage(self._client, SKY_VIEW, width, height, projection_matrix)[1].max())
            self._cameras[key] = (floor, clear)
        return self._cameras[key]

    def composite(self, rgb: np.ndarray, depth: np.ndarray, view_matrix: Sequence[float],
                  projection_matrix: Sequence[float]) -> np.ndarray:
        """
        :param rgb: TinyRenderer's image of the scene with the plane hidden, (height, width, 3) uint8
        :param depth: its depth buffer, (height, width)
        :param view_matrix: the camera's view matrix
        :param projection_matrix: the camera's projection matrix
        :return: the image with the floor where nothing was drawn, (height, width, 3) uint8
        """
        height, width = depth.shape
        floor, clear = self._camera(view_matrix, projection_matrix, width, height)
        return np.where((depth >= clear)[:, :, None], floor, rgb)

    def close(self) -> None:
        """Disconnect the floor's client (safe to call twice; a later image connects again)."""
        if self._client is not None:
            self._client.disconnect()
            self._client = None
