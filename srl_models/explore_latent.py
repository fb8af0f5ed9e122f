"""Look inside a decoding SRL model: decode a grid of latent states into images.

    python -m srl_models.explore_latent --model-folder logs/srl/mr/<run> [--grid 7] [--dims D0 D1]
                                        [--range LOW HIGH] [--output FILE.png] [--vis --port 8097]

Two latent dimensions (--dims; by default the first two the decoder reads: 0 1, or the first two of a split model's
decoding part) sweep their range (from the 5th to the 95th percentile of the dataset's encoded frames, or
``--range LOW HIGH``); the others stay at the mean of those states. The decoded images form one PNG grid (default
<model folder>/latent_grid_<d0>_<d1>.png); with --vis the grid also goes to a visdom window (--port chooses the
server: without --vis it is one warning, as nothing is drawn).
"""
from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Sequence

import numpy as np

from environments.dataset import Dataset
from srl_models import plotting
from srl_models.base import BaseSRLModel
from srl_models.evaluate import encodeDataset, openModelDataset
from srl_models.metrics import sampleIndices
from srl_models.registry import loadSRLModel, registeredSRL
from srl_toolbox.cli import (
    DEFAULT_VISDOM_PORT,
    CLIParser,
    UsageError,
    addOptInVisdomFlags,
    addProgressArgument,
    addSeedArgument,
    addVisdomArguments,
    checkOutputFile,
    finiteFloat,
    intInRange,
    positiveInt,
    pythonCommand,
    runCommand,
)
from srl_toolbox.plots import describe, quietVisdom, visdomClientClass
from srl_toolbox.terminal import HeldWarnings

PERCENTILES = (5.0, 95.0)  # the sweep stays inside the states the encoder actually produces
MAX_GRID = 30


def decodingModels() -> list[str]:
    """:return: registered learned models whose class decodes states into images"""
    return [name for name, (model_class, _) in registeredSRL().items() if getattr(model_class, "DECODES", False)]


def decodedDims(model: BaseSRLModel) -> range:
    """:return: the state dimensions a decoding model's decoder reads: a split model's decoding loss owns a part of
    the state (srl_splits), every other decoding model reads all of it"""
    network = getattr(model, "network", None)
    if network is None or getattr(network, "decoder_name", None) is None:
        return range(model.state_dim)
    return range(model.state_dim)[network.parts[network.decoder_name]]


def latentGrid(model: BaseSRLModel, states: np.ndarray, dims: tuple[int, int], grid: int,
               value_range: tuple[float, float] | None = None) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """
    :param model: a decoding model
    :param states: (n, state_dim) encoded frames: their mean fixes the other dimensions, their percentiles the range
    :param dims: the two latent dimensions to sweep (columns, rows)
    :param grid: values per dimension
    :param value_range: (low, high) for both swept dimensions instead of the percentiles
    :return: uint8 (grid * grid, H, W, C) decoded images, row-major (row i: dims[1] = values[1][i], column j:
        dims[0] = values[0][j]), and the values of both dimensions
    """
    centre = states.mean(axis=0)
    if value_range is None:
        low, high = np.percentile(states, PERCENTILES, axis=0)
        values = tuple(np.linspace(low[d], high[d], grid) for d in dims)
    else:
        values = tuple(np.linspace(value_range[0], value_range[1], grid) for _ in dims)
    latent = np.tile(centre, (grid * grid, 1)).astype(np.float32)
    rows, cols = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")
    latent[:, dims[0]] = values[0][cols.ravel()]
    latent[:, dims[1]] = values[1][rows.ravel()]
    images = np.asarray(model.decode(latent))
    if images.dtype != np.uint8 or images.ndim != 4 or len(images) != grid * grid:
        raise ValueError(f"{type(model).__name__}.decode returned {images.dtype} {images.shape}, expected uint8 "
                         f"({grid * grid}, H, W, C)")
    return images, values


def showInVisdom(images: np.ndarray, grid: int, port: int, title: str, window: str,
                 server: str = "http://127.0.0.1") -> bool:
    """
    Send the grid to a visdom window; an unreachable server costs one warning, never the command.

    :param images: uint8 (grid * grid, H, W, 3)
    :param grid: images per row
    :param port: the visdom server's port
    :param title: window title
    :param window: window id (the same id replaces the previous grid)
    :param server: the server's address, with its scheme
    :return: whether the window was sent
    """
    try:
        with quietVisdom():  # its own log lines would repeat our warning
            # the toolbox's client: its requests time out (visdom's own wait forever on a server that never answers)
            client = visdomClientClass()(server=server, port=port, env="srl_explore_latent",
                                          use_incoming_socket=False, raise_exceptions=True)
            client.images(np.transpose(images, (0, 3, 1, 2)), nrow=grid, padding=1, win=window,
                          opts={"title": title})
    except Exception as error:  # ConnectionError mostly: the PNG is already written, keep going
        warnings.warn(f"the visdom server at {server}:{port} cannot be reached ({describe(error)}); the grid "
                      f"is only in the PNG. Start one with `{pythonCommand()} -m replay.visdom_server --port {port}`",
                      UserWarning, stacklevel=2)
        return False
    return True


def buildParser() -> CLIParser:
    """:return: the command-line parser"""
    parser = CLIParser(prog="python -m srl_models.explore_latent",
                           description="Decode a grid over two latent dimensions of a decoding SRL model into a PNG "
                                       "(and a visdom window with --vis).")
    parser.add_argument("--model-folder", required=True, help="a model folder written by srl_models.train")
    parser.add_argument("--data-folder", default=None,
                        help="dataset whose encoded frames set the ranges [the one the model was trained on]")
    parser.add_argument("--grid", type=positiveInt, default=7, help=f"values per dimension, 2..{MAX_GRID} [7]")
    parser.add_argument("--dims", type=intInRange(0), nargs=2, default=None, metavar=("D0", "D1"),
                        help="the two latent dimensions swept, columns then rows [the first two its decoder reads: "
                             "0 1, or the first two of a split model's decoding part]")
    parser.add_argument("--range", type=finiteFloat, nargs=2, default=None, metavar=("LOW", "HIGH"),
                        help="values swept on both dims, e.g. -3 3 for a VAE's prior [5th to 95th percentile of the "
                             "encoded frames]")
    parser.add_argument("--output", default=None, help="PNG file [<model folder>/latent_grid_<D0>_<D1>.png]")
    parser.add_argument("--max-samples", type=positiveInt, default=2000,
                        help="frames encoded for the mean and ranges [2000]")
    addSeedArgument(parser, help="seed of the frame subset [0]")
    addOptInVisdomFlags(parser, "also show the grid in a visdom window", "the PNG only, no visdom")
    addVisdomArguments(parser, no_vis=False, port_help="visdom server port [8097]")
    addProgressArgument(parser)
    return parser


def checkedInput(args: argparse.Namespace) -> tuple[BaseSRLModel, str, tuple[int, int], str, Dataset]:
    """
    The command's checks: its flags, its model and dataset, its output; nothing is written.

    :param args: the parsed command line
    :return: the decoding model, its registered name, the two dims swept, the PNG path and the dataset
    :raises UsageError: bad input (one line)
    :warns: --port without --vis: it chooses where --vis draws, and nothing is drawn in visdom without it
    """
    if not args.vis and args.port != DEFAULT_VISDOM_PORT:
        warnings.warn("--port chooses where --vis draws; without --vis nothing is drawn in visdom")
    if not 2 <= args.grid <= MAX_GRID:
        raise UsageError(f"--grid {args.grid}: choose 2..{MAX_GRID} values per dimension")
    if args.range is not None and not (np.isfinite(args.range).all() and args.range[0] < args.range[1]):
        raise UsageError(f"--range {args.range[0]} {args.range[1]}: give finite LOW < HIGH")
    if args.output is not None and not args.output.lower().endswith(".png"):
        raise UsageError(f"--output {args.output!r}: the grid is written as PNG, give a .png file")
    try:
        config, dataset = openModelDataset(args.model_folder, args.data_folder, need_ground_truth=False,
                                           use="explore its latent space with")
        model = loadSRLModel(args.model_folder)
    except ValueError as error:
        raise UsageError(str(error)) from None
    name = config["srl_model"]
    if not model.DECODES:
        if name in decodingModels():  # a model of losses chosen at training, none of which decodes
            losses = config.get("losses")
            raise UsageError(f"the {name!r} model in {args.model_folder!r} was trained without a decoding loss"
                             + (f" (its losses: {', '.join(map(str, losses))})" if losses else "")
                             + ": train it with autoencoder, dae or vae among its --losses to sweep its latent space")
        raise UsageError(f"the {name!r} model in {args.model_folder!r} does not decode states into images; models "
                         f"that decode: {', '.join(decodingModels()) or 'none installed'}")
    decoded = decodedDims(model)
    if len(decoded) < 2:
        raise UsageError(f"the {name!r} model in {args.model_folder!r} decodes from {len(decoded)} latent dimension: "
                         "the grid sweeps two (train it with --state-dim 2 or more)")
    dims = (decoded[0], decoded[1]) if args.dims is None else tuple(args.dims)
    if dims[0] == dims[1] or not all(d in decoded for d in dims):
        part = "" if len(decoded) == model.state_dim else f" (the part of the state of {name}'s decoding loss)"
        raise UsageError(f"--dims {dims[0]} {dims[1]}: give two different latent dimensions in "
                         f"{decoded[0]}..{decoded[-1]}, the ones its decoder reads{part}")
    output = args.output or os.path.join(args.model_folder, f"latent_grid_{dims[0]}_{dims[1]}.png")
    if not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        raise UsageError(f"--output {output!r}: the folder does not exist")
    checkOutputFile(output, "--output" if args.output else "--model-folder")
    return model, name, dims, output, dataset


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    :raises UsageError: bad input (one line), before any warning of the checks is shown (they are once the checks
        pass)
    :warns: --port without --vis (it chooses where --vis draws)
    """
    with HeldWarnings():
        args = buildParser().parse_args(argv)
        model, name, dims, output, dataset = checkedInput(args)

    indices = sampleIndices(len(dataset), args.max_samples, args.seed)
    states = encodeDataset(model, dataset, indices, progress=not args.no_progress)
    images, values = latentGrid(model, states, dims, args.grid, args.range)
    images = plotting.displayable(images)
    title = f"{name} (state dim {model.state_dim}): latent dims {dims[0]} x {dims[1]}"
    plotting.plotLatentGrid(images, values, dims, output, title=title)
    print(f"Latent grid: {output}")
    if args.vis and showInVisdom(images, args.grid, args.port, title, f"latent_{name}_{dims[0]}_{dims[1]}"):
        print(f"Sent to visdom at http://127.0.0.1:{args.port} (env srl_explore_latent)")
    return 0


if __name__ == "__main__":
    runCommand(main)
