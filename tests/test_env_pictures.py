"""The README's env table: a camera view of every registered env, drawn by docs/make_env_pictures.py."""
from __future__ import annotations

import os
import runpy

from environments import registered_env

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PICTURES = runpy.run_path(os.path.join(REPO, "docs", "make_env_pictures.py"))  # its functions, main not run


def test_every_registered_env_has_its_picture_in_the_readme_named_by_its_id() -> None:
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    for env_id in registered_env:
        assert f"| ![{env_id} camera view](docs/images/{env_id}.png) | `{env_id}` |" in readme
        assert os.path.isfile(os.path.join(REPO, "docs", "images", f"{env_id}.png"))


def test_car_racing_is_pictured_after_its_opening_zoom() -> None:
    """CarRacing's first frames zoom in from the whole track (two thirds of the image black); the picture is taken
    after that, the car on its track."""
    image = PICTURES["cameraView"]("CarRacingGymEnv-v0", 64)
    assert image.shape == (64, 64, 3)
    assert (image.max(axis=2) < 20).mean() < 0.2  # the black bar of CarRacing's indicators only
