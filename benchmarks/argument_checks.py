"""ppo2's steps/s without torch.distributions' argument checks (the default) and with them, side by side.

An on-policy SB3 learner trains without torch's per-call checks of its distributions' arguments
(rl_baselines.rl_algorithm.finite_training, whose cheaper checks stand in for them). Here the same ppo2 run of
:mod:`benchmarks.srl_speed` (MobileRobotGymEnv-v0, the sprites, default hyperparameters and threads, in this process)
is timed both ways for each observation, the two alternated over ``--rounds`` rounds (the order reversed every other
round); the figure is the ratio of the medians, unchecked / checked. The VAE is trained first as srl_speed trains it.

Usage: ``python -m benchmarks.argument_checks [--steps N] [--num-cpu N] [--rounds R] [--modes M ...] [--no-append]``
"""
from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
from typing import Any
from unittest import mock

import torch

from benchmarks.command import exitStatus
from benchmarks.documents import (
    addResultsArguments,
    appendReport,
    loadNow,
    loadSpanText,
    machineDescription,
    recordedCommand,
    resultsPath,
)
from benchmarks.srl_speed import ENV_ID, LEARNED_MODES, WARM_UP_STEPS, timeRun, trainVAE, vaeText, warmSprites
from environments.mobile_robot.sprite_cache import CACHE_ENV as SPRITE_CACHE_ENV
from rl_baselines.rl_algorithm import sb3_base
from srl_toolbox.cli import CLIParser, positiveInt, runCommand

MODES = ("ground_truth", "vae", "raw_pixels")


def timeBothWays(mode: str, num_cpu: int, steps: int, scratch: str, model_folder: str, rounds: int) -> dict[str, Any]:
    """:return: the rates (steps/s over PPO's learn) without and with torch's argument checks, and the ratio of their
    medians"""
    rates: dict[bool, list[float]] = {False: [], True: []}
    for round_index in range(rounds):
        for checked in (False, True) if round_index % 2 == 0 else (True, False):
            patch = mock.patch.object(sb3_base, "withoutArgumentChecks", contextlib.nullcontext) if checked \
                else contextlib.nullcontext()
            with patch:
                rate = timeRun(mode, num_cpu, steps, os.path.join(scratch, "runs"), model_folder, "sprites")["rate"]
            rates[checked].append(rate)
            print(f"  {mode}, {'with' if checked else 'without'} the checks: {rate:,.0f} steps/s", flush=True)
    return {"mode": mode, "unchecked": rates[False], "checked": rates[True],
            "ratio": statistics.median(rates[False]) / statistics.median(rates[True])}


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: one row per observation
    """
    parser = CLIParser(prog="python -m benchmarks.argument_checks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=positiveInt, default=8192, help="env steps per measurement [8192]")
    parser.add_argument("--num-cpu", type=positiveInt, default=2, help="parallel envs [2]")
    parser.add_argument("--rounds", type=positiveInt, default=4, help="measurements each way per observation [4]")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=["ground_truth", "vae"],
                        help=f"observations [ground_truth vae; choices: {' '.join(MODES)}]")
    addResultsArguments(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the VAE's training (not measured); each measured run sets its own
    print(f"Machine: {machineDescription(('torch', 'stable_baselines3'))}", flush=True)
    load_start = loadNow()
    rows = []
    with tempfile.TemporaryDirectory() as scratch, mock.patch.dict(os.environ,
                                                                   {SPRITE_CACHE_ENV: os.path.join(scratch, "cache")}):
        warmSprites()
        start = time.perf_counter()
        model_folder = trainVAE(scratch, 6, 2) if set(args.modes) & set(LEARNED_MODES) else ""
        print(f"sprite cache and VAE ready in {time.perf_counter() - start:.0f} s", flush=True)
        timeRun("ground_truth", 1, 512, os.path.join(scratch, "warmup"), model_folder)  # imports, first calls
        for mode in args.modes:
            rows.append(timeBothWays(mode, args.num_cpu, args.steps, scratch, model_folder, args.rounds))
    lines = ["| ppo2, observation | without the checks (steps/s) | with them (steps/s) | without / with (medians) |",
             "|---|---|---|---:|"]
    for row in rows:
        lines.append(f"| {row['mode']} | {', '.join(f'{rate:,.0f}' for rate in row['unchecked'])} | "
                     f"{', '.join(f'{rate:,.0f}' for rate in row['checked'])} | {row['ratio']:.2f}x |")
    table = "\n".join(lines)
    print(table)
    if not args.no_append:
        appendReport(
            "ppo2 without and with torch.distributions' argument checks", recordedCommand("benchmarks.argument_checks",
                                                                                            argv),
            f"{ENV_ID}, the sprites, {args.num_cpu} env(s), ppo2's default hyperparameters and torch threads, "
            f"{args.steps:,} steps per measurement, the two alternated over {args.rounds} rounds; steps/s over PPO's "
            f"learn(); {vaeText(6, 2)}; sprite cache filled first by {WARM_UP_STEPS:,} random steps. Reported, not "
            f"asserted. {loadSpanText(load_start)}.",
            table, packages=("torch", "stable_baselines3"), path=resultsPath(args))
    return rows


if __name__ == "__main__":
    runCommand(exitStatus(main))
