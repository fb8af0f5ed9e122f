"""Training steps/s of the algorithms on the CPU and on a GPU, side by side, and the device ``--device auto`` picks.

For each run (an algorithm and an observation: ``ground_truth``, an MlpPolicy on the robot's position, or
``raw_pixels``, a CnnPolicy on the 64x64 camera image) ``rl_baselines.train`` trains in this process on
MobileRobotGymEnv-v0 with each device for the same number of steps: default hyperparameters, one env, train's
default torch threads (auto), seed 0, no checkpoints, no live plots, after one warm-up run per device and, where
images are timed, a random walk that fills the sprite renderer's cache from empty (as srl_speed does; a cold cache
would slow whichever device runs first). Steps/s = steps / wall time of the train call (building the env and the
model included). The ``auto`` column is the device ``--device auto`` resolves to for that run on this machine, the
``faster`` column the device that measured faster: they should agree.

Usage: ``python -m benchmarks.device_speed [--runs ALGO:OBSERVATION ...] [--steps N] [--devices cpu cuda]
[--warm-up-steps N] [--no-append]`` (``make bench-device``; on a machine without a GPU only the CPU is measured).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time
from typing import Any
from unittest import mock

import torch

from benchmarks.command import exitOnUsageError, exitStatus
from benchmarks.documents import (
    addResultsArguments,
    appendReport,
    autoThreadsText,
    machineDescription,
    recordedCommand,
    resultsPath,
)
from benchmarks.srl_speed import warmSprites
from environments.mobile_robot.sprite_cache import CACHE_ENV as SPRITE_CACHE_ENV
from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.registry import registered_rl
from rl_baselines.runs import train, train_checks
from srl_toolbox.cli import CLIParser, UsageError, nonNegativeInt, positiveInt, runCommand
from srl_toolbox.devices import resolveDevice

ENV_ID = "MobileRobotGymEnv-v0"
OBSERVATIONS = ("ground_truth", "raw_pixels")
# On-policy (SB3, sb3-contrib, the project's own torch learners) and off-policy learners on states; the two on-policy
# SB3 ones on images too.
DEFAULT_RUNS = ("ppo2:ground_truth", "ppo2:raw_pixels", "a2c:ground_truth", "a2c:raw_pixels", "sac:ground_truth",
                "deepq:ground_truth", "ppo1:ground_truth", "acer:ground_truth", "acktr:ground_truth",
                "trpo:ground_truth", "maskable_ppo:ground_truth", "ppo_lstm:ground_truth")


def parseRun(raw: str) -> tuple[str, str]:
    """
    :param raw: ``ALGO:OBSERVATION``
    :return: (algorithm, observation)
    :raises argparse.ArgumentTypeError: an unknown algorithm or observation
    """
    algo, _, observation = raw.partition(":")
    if algo not in registered_rl:
        raise argparse.ArgumentTypeError(f"unknown algorithm {algo!r} in {raw!r}; valid: {', '.join(sorted(registered_rl))}")
    if observation not in OBSERVATIONS:
        raise argparse.ArgumentTypeError(f"unknown observation {observation!r} in {raw!r}; valid: "
                                         f"{', '.join(OBSERVATIONS)}")
    return algo, observation


def timeRun(algo: str, observation: str, device: str, steps: int, log_dir: str) -> float:
    """:return: steps/s of ``rl_baselines.train`` for ``steps`` steps of ``algo`` on ``observation`` and ``device``:
    the steps it trained (an on-policy learner trains whole rollouts, more than ``steps`` when it is not a multiple)
    over the train call's wall time"""
    actions = [] if ActionType.DISCRETE in registered_rl[algo][2] else ["--continuous-actions"]
    argv = ["--algo", algo, "--env", ENV_ID, "--srl-model", observation, *actions, "--num-timesteps", str(steps),
            "--device", device, "--seed", "0", "--log-dir", log_dir, "--checkpoint-freq", "-1", "--no-vis",
            "--no-progress"]
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the run's own messages
        result = train.trainCommand(argv)
    assert result.exit_code == 0
    return result.num_timesteps / (time.perf_counter() - start)


def autoDevice(algo: str, observation: str) -> str:
    """:return: what ``--device auto`` resolves to for this run on this machine"""
    return train_checks.runDeviceFor(registered_rl[algo][0], "auto", observation)


@exitOnUsageError
def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: one row per run: algorithm, observation, steps/s per device, auto's device and the faster one; bad input
        ends with one ``error:`` line and SystemExit(2), before any work
    """
    parser = CLIParser(prog="python -m benchmarks.device_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", type=parseRun, default=[parseRun(run) for run in DEFAULT_RUNS],
                        metavar="ALGO:OBSERVATION", help=f"what to time [{' '.join(DEFAULT_RUNS)}]")
    parser.add_argument("--steps", type=positiveInt, default=2048, help="env steps per run [2048]")
    gpu = ["cuda"] if torch.cuda.is_available() else []
    parser.add_argument("--devices", nargs="+", choices=["cpu", "cuda"], default=["cpu", *gpu],
                        help=f"devices to compare [{' '.join(['cpu', *gpu])}]")
    parser.add_argument("--warm-up-steps", type=nonNegativeInt, default=20_000,
                        help="random steps filling the sprite cache before images are timed [20000]")
    addResultsArguments(parser)
    args = parser.parse_args(argv)
    if "cuda" in args.devices and not gpu:
        raise UsageError("--devices cuda: this machine has no CUDA GPU that torch can use; valid choices here: cpu")
    devices = [resolveDevice(device) for device in args.devices]
    print(f"Machine: {machineDescription(('torch', 'stable_baselines3'))}", flush=True)
    rows = []
    images = any(observation == "raw_pixels" for _, observation in args.runs)
    with tempfile.TemporaryDirectory() as scratch, mock.patch.dict(os.environ,
                                                                   {SPRITE_CACHE_ENV: os.path.join(scratch, "cache")}):
        if images:
            seconds, sprites = warmSprites(args.warm_up_steps)
            print(f"sprite cache: {sprites:,} sprites rendered in {seconds:.0f} s by {args.warm_up_steps:,} random "
                  "steps from empty", flush=True)
        for device in devices:  # imports, CUDA's context, first kernels
            timeRun("ppo2", "ground_truth", device, 256, os.path.join(scratch, "warmup"))
        for algo, observation in args.runs:
            rates = {device: timeRun(algo, observation, device, args.steps, os.path.join(scratch, "runs"))
                     for device in devices}
            row = {"algo": algo, "observation": observation, "rates": rates, "auto": autoDevice(algo, observation),
                   "faster": max(rates, key=rates.__getitem__)}
            rows.append(row)
            print(f"  {algo} {observation}: " + ", ".join(f"{device} {rate:,.0f} steps/s" for device, rate in
                                                         rates.items()) + f"; auto: {row['auto']}", flush=True)
    lines = ["| algorithm | observation | " + " | ".join(f"{device} steps/s" for device in devices)
             + " | auto | faster |", "|---|---|" + "---:|" * len(devices) + "---|---|"]
    for row in rows:
        lines.append(f"| {row['algo']} | {row['observation']} | "
                     + " | ".join(f"{row['rates'][device]:,.0f}" for device in devices)
                     + f" | {row['auto']} | {row['faster']} |")
    table = "\n".join(lines)
    print(table)
    agree = sum(row["auto"] == row["faster"] for row in rows)
    print(f"auto picks the faster device for {agree} of {len(rows)} runs")
    if not args.no_append:
        appendReport(f"Training speed per device, {ENV_ID}", recordedCommand("benchmarks.device_speed", argv),
                     f"rl_baselines.train in this process, default hyperparameters, one env, train's default torch "
                     f"threads ({autoThreadsText()}), "
                     f"{args.steps} steps per run (on-policy learners: whole rollouts, the steps trained "
                     f"counted) after a warm-up run per device"
                     + (f" and {args.warm_up_steps:,} random steps filling the sprite cache" if images else "")
                     + "; steps/s over the whole train call "
                     f"(env and model construction included). auto: the device `--device auto` resolves to for the "
                     f"run; auto picks the faster device for {agree} of {len(rows)} runs.", table,
                     packages=("torch", "stable_baselines3"), target="bench-device", path=resultsPath(args))
    return rows


if __name__ == "__main__":
    runCommand(exitStatus(main))
