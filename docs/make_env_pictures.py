"""Render the camera view of every registered env into docs/images/<env-id>.png (the README's env table).

Usage: ``python docs/make_env_pictures.py [--size 128] [ENV_ID ...]``. Multi-camera envs (6 channels) are written
side by side.
"""
from __future__ import annotations

import argparse
import os

import numpy as np
from PIL import Image

from environments import getEnvClass, registered_env
from srl_toolbox.files import atomicPath

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "images")
# Envs whose first frames are an opening animation: (steps, discrete action) played before the picture. CarRacing
# zooms in on its car over its first simulated second (50 steps); braking keeps the car at its start.
SETTLE = {"CarRacingGymEnv-v0": (60, 3)}


def cameraView(env_id: str, size: int, seed: int = 0) -> np.ndarray:
    """
    :param env_id: a registered env id
    :param size: image side
    :param seed: reset seed
    :return: the first observation (after :data:`SETTLE`'s steps) as an (H, W, 3) or side-by-side (H, 2W, 3) uint8
        image
    """
    env = getEnvClass(env_id)(srl_model="raw_pixels", img_shape=(3, size, size))
    try:
        observation, _ = env.reset(seed=seed)
        steps, action = SETTLE.get(env_id, (0, 0))
        for _ in range(steps):
            observation, *_ = env.step(action)
    finally:
        env.close()
    if observation.shape[-1] == 6:
        observation = np.concatenate([observation[..., :3], observation[..., 3:]], axis=1)
    return observation


def main(argv: list[str] | None = None) -> None:
    """:param argv: command-line arguments"""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("env_ids", nargs="*", help="envs to render [all registered]")
    parser.add_argument("--size", type=int, default=128, help="image side [128]")
    args = parser.parse_args(argv)
    os.makedirs(OUT_DIR, exist_ok=True)
    for env_id in args.env_ids or sorted(registered_env):
        try:
            image = cameraView(env_id, args.size)
        except Exception as error:  # an env that cannot render here is reported, the others still are
            print(f"{env_id}: not rendered ({type(error).__name__}: {error})")
            continue
        path = os.path.join(OUT_DIR, f"{env_id}.png")
        with atomicPath(path) as tmp_path:  # the extension kept: PIL picks PNG from it
            Image.fromarray(image).save(tmp_path)
        print(f"{env_id}: {path}")


if __name__ == "__main__":
    main()
