"""The downsample SRL model on its own: block means, fitting, the model folder, and its registration."""
from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from srl_models.registry import loadSRLModel
from srl_toolbox_cem.downsample import DownsampleSRLModel, blockMeans, main


def _images(n: int = 6, height: int = 10, width: int = 7, channels: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, height, width, channels), dtype=np.uint8)


def test_block_means_by_hand() -> None:
    images = _images()
    means = blockMeans(images, (3, 2))
    rows, cols = [0, 3, 6, 10], [0, 3, 7]  # np.linspace(0, 10, 4) and (0, 7, 3), floored
    for r in range(3):
        for c in range(2):
            block = images[:, rows[r]:rows[r + 1], cols[c]:cols[c + 1], :] / 255.0
            np.testing.assert_allclose(means[:, r, c, :], block.mean(axis=(1, 2)))
    np.testing.assert_allclose(blockMeans(images, (10, 7)), images / 255.0)  # one pixel per block


def test_fit_standardises_and_folder_round_trip(tmp_path) -> None:
    images = _images(n=40)
    model = DownsampleSRLModel((3, 10, 7), (2, 2), exp_config={"env": "MobileRobotGymEnv-v0"})
    model.fit(images)
    states = model.getState(images)
    assert states.shape == (40, 12) and states.dtype == np.float32 and model.state_dim == 12
    np.testing.assert_allclose(states.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(states.std(axis=0), 1.0, atol=1e-4)

    folder = str(tmp_path / "model")
    model.save(folder)
    config = json.load(open(os.path.join(folder, "exp_config.json")))
    assert config["srl_model"] == "downsample" and config["state_dim"] == 12 and config["img_shape"] == [3, 10, 7]
    assert config["weights"] == ["downsample.npz"] and config["env"] == "MobileRobotGymEnv-v0"
    loaded = DownsampleSRLModel.load(folder)
    np.testing.assert_array_equal(loaded.getState(images), states)
    # the toolbox finds it by the name in exp_config.json, through the entry point
    assert type(loadSRLModel(folder)).__name__ == "DownsampleSRLModel"


def test_bad_shapes_and_folders(tmp_path) -> None:
    model = DownsampleSRLModel((3, 10, 7), (2, 2))
    with pytest.raises(ValueError, match=r"encodes images of shape \(10, 7, 3\)"):
        model.getState(_images(height=8))
    with pytest.raises(ValueError, match="does not fit"):
        DownsampleSRLModel((3, 4, 4), (5, 1))
    model.save(str(tmp_path / "model"))
    (tmp_path / "model" / "downsample.npz").write_bytes(b"broken")
    with pytest.raises(ValueError, match="damaged downsample model"):
        DownsampleSRLModel.load(str(tmp_path / "model"))


@pytest.mark.parametrize("umask, mode", [(0o077, 0o600), (0o022, 0o644)], ids=["umask077", "umask022"])
def test_saved_files_get_the_umasks_permissions(tmp_path, umask: int, mode: int) -> None:
    # saved through srl_toolbox.files.atomicPath (docs/plugins.md "Atomic saves"): it chmod-ed them 0644 whatever
    # the umask, so a user's 077 left the model readable by everyone
    model = DownsampleSRLModel((3, 10, 7), (2, 2))
    model.fit(_images())
    previous = os.umask(umask)
    try:
        model.save(str(tmp_path / "model"))
    finally:
        os.umask(previous)
    assert sorted(os.listdir(tmp_path / "model")) == ["downsample.npz", "exp_config.json"]  # no temporary left
    for name in ("downsample.npz", "exp_config.json"):
        assert os.stat(tmp_path / "model" / name).st_mode & 0o777 == mode, name


def test_entry_point_is_declared() -> None:
    points = importlib.metadata.entry_points(group="srl_toolbox.srl_models")
    assert any(p.name == "downsample" and p.value == "srl_toolbox_cem.downsample:DownsampleSRLModel" for p in points)


def test_command_bad_input_is_one_line(tmp_path) -> None:
    result = subprocess.run([sys.executable, "-m", "srl_toolbox_cem.downsample", "--data-folder", str(tmp_path / "nope")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.startswith("error: --data-folder") and result.stderr.count("\n") == 1
    assert not os.listdir(tmp_path)


def test_command_records_the_datasets_renderer(tmp_path, capsys) -> None:
    """The run that uses the model compares its renderer with the dataset's (a warning when they differ)."""
    generated = subprocess.run([sys.executable, "-m", "environments.dataset_generator", "--env", "MobileRobotGymEnv-v0",
                                "--num-episode", "1", "--max-steps", "5", "--img-shape", "3", "16", "16",
                                "--renderer", "tinyrenderer", "--name", "tiny", "--save-path", str(tmp_path),
                                "--no-progress"], capture_output=True, text=True, timeout=300)
    assert generated.returncode == 0, generated.stderr
    assert main(["--data-folder", str(tmp_path / "tiny"), "--grid", "2", "2", "--log-folder",
                 str(tmp_path / "srl")]) == 0
    folder = capsys.readouterr().out.strip().splitlines()[-1].removeprefix("Model folder: ")
    with open(os.path.join(folder, "exp_config.json")) as handle:
        assert json.load(handle)["renderer"] == "tinyrenderer"
