"""downsample: an SRL model as a plugin, written only against srl-toolbox's SRL contract (``srl_models.base``).

The state of an image is the image averaged over a grid of ``grid_h x grid_w`` blocks, per channel, then
standardised with the per-feature mean and standard deviation measured on a dataset: "training" measures them.
It is a baseline, not a representation to beat: it keeps where big things are and loses everything small.

srl-toolbox's ``python -m srl_models.train`` trains models built on its ``LearnedSRLModel`` (or ``PCAModel``), which
this one is not (it uses only ``srl_models.base``), so this package brings its own command, which writes a model
folder like srl_models.train does (``exp_config.json`` + ``downsample.npz``; exp_config records the dataset's
``renderer``, so that a run drawing its frames with another renderer is warned)::

    python -m srl_toolbox_cem.downsample --data-folder data/NAME --grid 4 4 --log-folder logs/srl

The folder is then used like any trained model: ``python -m rl_baselines.train --srl-model-path FOLDER ...``, or
listed in config/srl_models.yaml under its env.
"""
from __future__ import annotations

import datetime
import json
import os
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from environments.dataset import Dataset
from srl_models.base import EXP_CONFIG_FILE, BaseSRLModel, SRLType, readExpConfig
from srl_toolbox.cli import CLIParser, UsageError, positiveInt, runCommand
from srl_toolbox.files import atomicPath

NAME = "downsample"
WEIGHTS_FILE = "downsample.npz"
# Standard deviations are at least one grey level, so that a constant block does not blow up
MIN_STD = 1.0 / 255.0


def blockMeans(images: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """
    :param images: uint8 (n, H, W, C)
    :param grid: (rows, columns) of blocks, at most (H, W); blocks differ by at most one pixel in size
    :return: float64 (n, rows, columns, C) mean of each block in [0, 1]
    """
    images = np.asarray(images, dtype=np.float64) / 255.0
    _, height, width, _ = images.shape
    row_starts = np.linspace(0, height, grid[0] + 1).astype(int)[:-1]
    col_starts = np.linspace(0, width, grid[1] + 1).astype(int)[:-1]
    sums = np.add.reduceat(np.add.reduceat(images, row_starts, axis=1), col_starts, axis=2)
    rows = np.diff(np.append(row_starts, height))
    cols = np.diff(np.append(col_starts, width))
    return sums / (rows[None, :, None, None] * cols[None, None, :, None])


class DownsampleSRLModel(BaseSRLModel):
    """
    State = standardised block means of the image (see the module docstring); ``state_dim = C * rows * columns``.

    :param img_shape: (channels, height, width) of the images it encodes
    :param grid: (rows, columns) of blocks
    :param exp_config: the settings written to exp_config.json
    """

    API_VERSION = 1
    SRL_TYPE = SRLType.LEARNED

    def __init__(self, img_shape: tuple[int, int, int], grid: tuple[int, int] = (4, 4),
                 exp_config: dict[str, Any] | None = None) -> None:
        channels, height, width = (int(v) for v in img_shape)
        grid = (int(grid[0]), int(grid[1]))
        if not (1 <= grid[0] <= height and 1 <= grid[1] <= width):
            raise ValueError(f"grid {grid[0]}x{grid[1]} does not fit {height}x{width} images")
        super().__init__(channels * grid[0] * grid[1], (channels, height, width), exp_config)
        self.grid = grid
        self.mean = np.zeros(self.state_dim)
        self.std = np.ones(self.state_dim)

    def features(self, observations: np.ndarray) -> np.ndarray:
        """
        :param observations: uint8 (n, H, W, C) at the model's image shape
        :return: float64 (n, state_dim) block means, before standardisation
        """
        observations = np.asarray(observations)
        channels, height, width = self.img_shape
        if observations.ndim != 4 or observations.shape[1:] != (height, width, channels):
            raise ValueError(f"downsample encodes images of shape ({height}, {width}, {channels}), got "
                             f"{observations.shape[1:]}")
        return blockMeans(observations, self.grid).reshape(len(observations), -1)

    def fit(self, images: np.ndarray) -> None:
        """
        Measure the per-feature mean and standard deviation on a set of images.

        :param images: uint8 (n, H, W, C), n >= 1
        """
        features = self.features(images)
        self.mean = features.mean(axis=0)
        self.std = np.maximum(features.std(axis=0), MIN_STD)

    def getState(self, observations: np.ndarray) -> np.ndarray:
        return ((self.features(observations) - self.mean) / self.std).astype(np.float32)

    def save(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        # srl_toolbox.files.atomicPath (docs/plugins.md "Atomic saves"): one rename, the umask's permissions
        with atomicPath(os.path.join(folder, WEIGHTS_FILE)) as tmp_path, open(tmp_path, "wb") as handle:
            np.savez(handle, mean=self.mean, std=self.std)
        config = {**self.exp_config, "srl_model": NAME, "state_dim": self.state_dim, "img_shape": list(self.img_shape),
                  "grid": list(self.grid), "weights": [WEIGHTS_FILE], "api_version": self.API_VERSION}
        self.exp_config = config
        # Written last: a folder with exp_config.json is complete
        with atomicPath(os.path.join(folder, EXP_CONFIG_FILE)) as tmp_path, open(tmp_path, "w") as handle:
            handle.write(json.dumps(config, indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, folder: str, device: str = "cpu") -> DownsampleSRLModel:
        config = readExpConfig(folder)
        if config["srl_model"] != NAME:
            raise ValueError(f"{folder!r} holds SRL model {config['srl_model']!r}, not {NAME!r}")
        try:
            model = cls(tuple(config["img_shape"]), tuple(config["grid"]), exp_config=config)
            with np.load(os.path.join(folder, WEIGHTS_FILE), allow_pickle=False) as data:
                mean, std = data["mean"].astype(np.float64), data["std"].astype(np.float64)
        except (KeyError, TypeError, ValueError, OSError, zipfile.BadZipFile) as error:
            raise ValueError(f"{folder!r} is a damaged downsample model ({type(error).__name__}: {error})") from None
        if mean.shape != (model.state_dim,) or std.shape != (model.state_dim,) or not np.all(std > 0):
            raise ValueError(f"{folder!r} is a damaged downsample model (statistics of shape {mean.shape}, expected "
                             f"({model.state_dim},))")
        model.mean, model.std = mean, std
        return model


def makeParser() -> CLIParser:
    """:return: the parser of ``python -m srl_toolbox_cem.downsample``"""
    parser = CLIParser(prog="python -m srl_toolbox_cem.downsample",
                           description="Fit the downsample SRL model on a dataset and write its model folder.")
    parser.add_argument("--data-folder", required=True, help="a dataset recorded by environments.dataset_generator")
    parser.add_argument("--grid", type=positiveInt, nargs=2, default=[4, 4], metavar=("ROWS", "COLUMNS"),
                        help="blocks per image [4 4]")
    parser.add_argument("--log-folder", default=os.path.join("logs", "srl"), help="root of model folders [logs/srl]")
    parser.add_argument("--max-images", type=positiveInt, default=2000,
                        help="images the statistics are measured on, evenly spread over the dataset [2000]")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: ``sys.argv[1:]``)
    :return: exit code; the last line printed is ``Model folder: PATH``
    """
    args = makeParser().parse_args(argv)
    try:
        dataset = Dataset.open(args.data_folder)
        dataset.require("images_path", purpose="the downsample model")
    except ValueError as error:
        raise UsageError(f"--data-folder: {error}") from None
    img_shape = dataset.img_shape
    if args.grid[0] > img_shape[1] or args.grid[1] > img_shape[2]:
        raise UsageError(f"--grid {args.grid[0]} {args.grid[1]} is finer than the dataset's {img_shape[1]}x"
                         f"{img_shape[2]} images")
    rows = np.unique(np.linspace(0, len(dataset) - 1, min(args.max_images, len(dataset))).round().astype(int))
    try:
        images = dataset.loadImages(rows)
    except ValueError as error:
        raise UsageError(f"--data-folder: {error}") from None
    name = os.path.basename(os.path.normpath(args.data_folder))
    model = DownsampleSRLModel(img_shape, tuple(args.grid), exp_config={
        "env": dataset.env_id, "renderer": dataset.renderer, "data_folder": os.path.abspath(args.data_folder),
        "n_images": int(len(rows)), "losses": {}, "seed": 0})
    model.fit(images)
    stamp = datetime.datetime.now().strftime("%y-%m-%d_%Hh%M_%S")
    folder = os.path.join(args.log_folder, name, f"{stamp}_{NAME}_ST_DIM{model.state_dim}")
    suffix = 0
    while os.path.exists(folder + (f"_{suffix}" if suffix else "")):
        suffix += 1
    folder += f"_{suffix}" if suffix else ""
    model.save(folder)
    print(f"downsample: {model.state_dim}-dimensional states from {len(rows)} images of {args.data_folder}")
    print(f"Model folder: {folder}")
    return 0


if __name__ == "__main__":
    runCommand(main)
