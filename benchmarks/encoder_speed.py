"""The frozen SRL encoder's forward pass on the CPU: milliseconds per batch, per layer, and in the variants weighed
for the RL step (threads, oneDNN, bfloat16), side by side in one process.

The encoder is the backbone every learned SRL model shares (``srl_models.backbone.ConvEncoder``: four strided
convolutions and a linear layer), frozen as a run loads it (``srl_models.registry.freezeModel``: eval mode, no
gradient, channels-last convolutions) and fed as ``LearnedSRLModel.getState`` feeds it (uint8 H x W x C images ->
float in [0, 1]), under ``torch.inference_mode``. Its weights are random: the time does not depend on them. A batch
is ``--batch`` images, one per env of a vectorised step (2: the 2-env rows of ``benchmarks.srl_speed``).

Variants, each timed over ``--calls`` calls after a warm-up, the variants alternated over ``--repeats`` rounds
(median kept):

- ``float32, 1 thread``: the default, as a run encodes (train's torch threads for an MLP policy: one);
- ``float32, 2 threads``: the same with two torch threads, whose idle threads wait as the process's OpenMP says
  (the toolbox's default: passively, ``OMP_WAIT_POLICY=PASSIVE``; the report says which);
- ``float32, contiguous``: the convolutions' weights in the default (channels-first) memory order;
- ``float32, oneDNN off``: ``torch.backends.mkldnn`` disabled (PyTorch's own convolutions);
- ``bfloat16``: weights and images in bfloat16 (its largest state difference from float32 is reported: the states
  the agent sees would change with the machine's bfloat16 support).

Then the default's time per layer (each layer on its own input). Nothing is asserted.
Usage: ``python -m benchmarks.encoder_speed [--batch 2] [--size 64] [--calls 2000] [--repeats 5] [--no-append]``.
"""
from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator

import numpy as np
import torch
from torch import nn

from benchmarks.documents import (
    addResultsArguments,
    appendReport,
    loadNow,
    loadSpanText,
    machineDescription,
    recordedCommand,
    resultsPath,
)
from srl_models.backbone import ConvEncoder
from srl_toolbox import WAIT_VARIABLES
from srl_toolbox.cli import CLIParser, positiveInt, runCommand

STATE_DIM = 32
WARM_UP = 100


def frozenEncoder(size: int, dtype: torch.dtype = torch.float32) -> ConvEncoder:
    """:return: a random encoder of 3 x size x size images, frozen as a run loads it"""
    torch.manual_seed(0)
    encoder = ConvEncoder((3, size, size), STATE_DIM).eval().requires_grad_(False)
    return encoder.to(dtype=dtype, memory_format=torch.channels_last)


def encode(encoder: ConvEncoder, images: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """:return: the states of uint8 (n, H, W, C) images, converted as ``LearnedSRLModel.getState`` converts them"""
    batch = torch.from_numpy(images).permute(0, 3, 1, 2).to(dtype).div_(255.0)
    return encoder(batch)[1]


def millisecondsPerCall(call: Callable[[], object], calls: int) -> float:
    """:return: the mean wall time of ``call`` in ms, in inference mode, after as many warm-up calls (at most
    :data:`WARM_UP`)"""
    with torch.inference_mode():
        for _ in range(min(WARM_UP, calls)):
            call()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        return 1e3 * (time.perf_counter() - start) / calls


@contextlib.contextmanager
def threads(count: int) -> Iterator[None]:
    """Run the block with ``count`` torch threads, then restore the former count."""
    former = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(former)


@contextlib.contextmanager
def oneDNNOff() -> Iterator[None]:
    """Run the block with oneDNN's convolutions off (PyTorch's own), then restore the setting."""
    former = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = former


def measure(batch: int, size: int, calls: int, repeats: int) -> tuple[dict[str, float], float, list[tuple[str, float]]]:
    """
    :return: (variant -> median ms per batch, bfloat16's largest state difference from float32, the default's ms
        per layer)
    """
    images = np.random.default_rng(0).integers(0, 256, (batch, size, size, 3), dtype=np.uint8)
    encoder, half = frozenEncoder(size), frozenEncoder(size, torch.bfloat16)
    plain = frozenEncoder(size).to(memory_format=torch.contiguous_format)
    # variant -> (the setting it runs under, the encoder, the images' dtype)
    variants: dict[str, tuple[Callable[[], contextlib.AbstractContextManager], ConvEncoder, torch.dtype]] = {
        "float32, 1 thread (the default)": (contextlib.nullcontext, encoder, torch.float32),
        "float32, 2 threads": (lambda: threads(2), encoder, torch.float32),
        "float32, contiguous (not channels-last)": (contextlib.nullcontext, plain, torch.float32),
        "float32, oneDNN off": (oneDNNOff, encoder, torch.float32),
        "bfloat16 weights and images": (contextlib.nullcontext, half, torch.bfloat16)}
    times: dict[str, list[float]] = {name: [] for name in variants}
    with threads(1):
        for round_index in range(repeats):
            order = list(variants) if round_index % 2 == 0 else list(reversed(variants))
            for name in order:
                setting, model, dtype = variants[name]
                with setting():
                    times[name].append(millisecondsPerCall(lambda: encode(model, images, dtype), calls))
        with torch.inference_mode():
            difference = float((encode(half, images, torch.bfloat16).float() - encode(encoder, images)).abs().max())
        layers = layerTimes(encoder, images, calls)
    return {name: statistics.median(values) for name, values in times.items()}, difference, layers


def layerTimes(encoder: ConvEncoder, images: np.ndarray, calls: int) -> list[tuple[str, float]]:
    """:return: (layer, ms per batch) for each convolution (with its ReLU) and the linear layer, on its own input"""
    rows = []
    with torch.inference_mode():
        inputs = torch.from_numpy(images).permute(0, 3, 1, 2).float().div_(255.0)
        modules = list(encoder.conv)
        for index in range(0, len(modules), 2):
            convolution, relu = modules[index], modules[index + 1]
            assert isinstance(convolution, nn.Conv2d)
            layer_input = inputs
            rows.append((f"{convolution.in_channels} -> {convolution.out_channels} channels, "
                         f"{layer_input.shape[-1]}x{layer_input.shape[-2]} in", millisecondsPerCall(
                             lambda: relu(convolution(layer_input)), calls)))
            inputs = relu(convolution(inputs))
        features = inputs.flatten(1)
        rows.append((f"linear {features.shape[1]} -> {STATE_DIM}",
                     millisecondsPerCall(lambda: encoder.to_state(features), calls)))
    return rows


def waitPolicyText() -> str:
    """:return: how OpenMP's idle threads wait in this process (what a second thread costs depends on it)"""
    settings = [f"{name}={os.environ[name]}" for name in WAIT_VARIABLES if name in os.environ]
    return ", ".join(settings) or "OpenMP's default (spinning)"


def formatTables(batch: int, times: dict[str, float], difference: float, layers: list[tuple[str, float]]) -> str:
    """:return: the variants' table (ratio to the default) and the default's per-layer table"""
    default = next(iter(times.values()))
    lines = [f"| encoder variant | ms per batch of {batch} | default / variant |", "|---|---:|---:|"]
    lines += [f"| {name} | {value:.3f} | {default / value:.2f}x |" for name, value in times.items()]
    lines += ["", f"bfloat16's largest state difference from float32: {difference:.3g}.", "",
              f"| layer (the default) | ms per batch of {batch} |", "|---|---:|"]
    lines += [f"| {name} | {value:.3f} |" for name, value in layers]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """:param argv: command-line arguments (default: sys.argv[1:]); :return: exit status"""
    parser = CLIParser(prog="python -m benchmarks.encoder_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=positiveInt, default=2, help="images per call, one per env [2]")
    parser.add_argument("--size", type=positiveInt, default=64, choices=(16, 32, 64, 128, 224), metavar="SIZE",
                        help="image height and width: 16, 32, 64, 128 or 224 [64]")
    parser.add_argument("--calls", type=positiveInt, default=2000, help="timed calls per measurement [2000]")
    parser.add_argument("--repeats", type=positiveInt, default=5, help="alternated rounds, median kept [5]")
    addResultsArguments(parser, "the results")
    args = parser.parse_args(argv)
    print(f"Machine: {machineDescription(('torch',))}", flush=True)
    start_load = loadNow()
    times, difference, layers = measure(args.batch, args.size, args.calls, args.repeats)
    tables = formatTables(args.batch, times, difference, layers)
    print(tables)
    if not args.no_append:
        appendReport("The frozen SRL encoder's forward pass on the CPU", recordedCommand("benchmarks.encoder_speed",
                                                                                       argv),
                     f"ConvEncoder (srl_models.backbone) of 3x{args.size}x{args.size} images, state dim {STATE_DIM}, "
                     "random weights, frozen and fed as a run feeds it (channels-last, uint8 -> float in [0, 1], "
                     f"inference mode), one torch thread unless the variant says; {args.calls} calls per "
                     f"measurement, median of {args.repeats} alternated rounds; OpenMP's idle threads: "
                     f"{waitPolicyText()}. Reported, not asserted. {loadSpanText(start_load)}.", tables,
                     packages=("torch",), path=resultsPath(args))
    return 0


if __name__ == "__main__":
    runCommand(main)
