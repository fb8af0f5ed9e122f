"""PyBullet, imported and connected without the banner lines its C code prints ("pybullet build time: ..." on
stderr at import, "argv[0]=" on stdout at connect), which would otherwise clutter every command's output."""
from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def silencedCOutput() -> Iterator[None]:
    """Send what C code writes to file descriptors 1 and 2 to /dev/null for the duration of the block."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:  # no real file descriptors (embedded interpreter): nothing to silence
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


with silencedCOutput():
    import pybullet  # noqa: E402
    import pybullet_data  # noqa: E402
    from pybullet_utils.bullet_client import BulletClient  # noqa: E402

__all__ = ["BulletClient", "framingProjection", "pybullet", "pybullet_data", "silencedCOutput"]


def framingProjection(fov: float, width: int, height: int, near: float, far: float) -> list[float]:
    """
    :param fov: the camera's field of view in degrees, as a square frame has it (vertical and horizontal)
    :return: PyBullet's projection matrix for a ``width`` x ``height`` frame that shows at least what the square frame
        shows: a wider frame sees more at the sides (PyBullet keeps ``fov`` vertical), a taller one keeps ``fov``
        horizontal and sees more above and below (at ``fov`` vertical it cut the sides of the scene off)
    """
    if width < height:
        fov = math.degrees(2 * math.atan(math.tan(math.radians(fov) / 2) * height / width))
    return pybullet.computeProjectionMatrixFOV(fov=fov, aspect=width / height, nearVal=near, farVal=far)
