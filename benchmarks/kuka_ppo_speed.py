"""ppo2 steps/s on the SRL table's Kuka task under the reference and the default physics, and with each renderer.

``rl_baselines.train --algo ppo2`` (default hyperparameters, 1 env, no evaluation, no checkpoints) runs in this
process on KukaButtonGymEnv-v0 with ``--random-target --force-down``, as ``make bench-srl-rl`` runs it, for each
observation (ground truth, raw pixels with SB3's CnnPolicy, a VAE of state dim 32 trained in the benchmark on a small
dataset), each physics (``reference``: physics version 1; the default) and, for images, each renderer of the env. The
reference physics is selected by running the same command with the env class's default solver settings temporarily
set to the reference ones (one env: it lives in this process), on one torch thread (``--torch-threads 1``); the
default physics with train's default threads. Configurations are interleaved, repeated, and the median kept.

Steps/s = env steps / wall time of PPO's ``learn``. The goal (ground truth and a learned representation each
at least 1.5x the rate of the reference physics with TinyRenderer, by default) is reported, not asserted.

Usage: ``python -m benchmarks.kuka_ppo_speed [--steps N] [--repeats R] [--no-append]``.
"""
from __future__ import annotations

import contextlib
import io
import os
import statistics
import tempfile
import time
from unittest import mock

import torch
from stable_baselines3 import PPO

from benchmarks.command import exitStatus
from benchmarks.documents import (
    addResultsArguments,
    appendReport,
    autoThreadsText,
    loadNow,
    loadSpanText,
    machineDescription,
    recordedCommand,
    resultsPath,
)
from benchmarks.progress import Countdown
from benchmarks.srl_speed import Timers, trainVAE, vaeText
from environments.kuka.kuka_button_env import KukaButtonGymEnv
from environments.registry import defaultRenderer
from environments.srl_env import REFERENCE_RENDERER
from rl_baselines.runs import train
from srl_toolbox.cli import CLIParser, positiveInt, runCommand

ENV_ID = "KukaButtonGymEnv-v0"
FLAGS = ("--random-target",)
RUN_FLAGS = ("--force-down",)
OBSERVATIONS = ("ground_truth", "vae", "raw_pixels")
GOAL = 1.5
VAE_EPISODES, VAE_EPOCHS = 6, 2  # the VAE trained in the benchmark: its speed, not its quality, is measured


def configurations() -> list[tuple[str, str, str]]:
    """:return: (observation, physics, renderer) of every measurement"""
    rows = []
    for observation in OBSERVATIONS:
        rows.append((observation, "reference", REFERENCE_RENDERER))
        renderers = KukaButtonGymEnv.RENDERERS if observation != "ground_truth" else (REFERENCE_RENDERER,)
        rows += [(observation, "default", renderer) for renderer in renderers]
    return rows


def timeRun(observation: str, physics: str, renderer: str, steps: int, log_dir: str, model_folder: str) -> float:
    """
    :return: PPO steps/s of one train command (the steps it trained: whole rollouts)
    """
    timers = Timers()
    restore = timers.wrap(PPO, "learn", "learn")
    argv = ["--algo", "ppo2", "--env", ENV_ID, "--num-timesteps", str(steps), "--log-dir", log_dir, "--no-vis",
            "--no-progress", "--checkpoint-freq", "-1", "--seed", "0", "--renderer", renderer, *FLAGS, *RUN_FLAGS,
            "--torch-threads", "1" if physics == "reference" else "0"]
    argv += ["--srl-model-path", model_folder] if observation == "vae" else ["--srl-model", observation]
    solver = {"default": KukaButtonGymEnv.SOLVER["reference"]} if physics == "reference" else {}
    try:
        with mock.patch.dict(KukaButtonGymEnv.SOLVER, solver), contextlib.redirect_stdout(io.StringIO()):
            result = train.trainCommand(argv)
        assert result.exit_code == 0
    finally:
        restore()
    return result.num_timesteps / timers.seconds["learn"]


def goalVerdicts(rates: dict[tuple[str, str, str], float]) -> str:
    """
    :param rates: median steps/s per configuration
    :return: one sentence per observation: the default configuration (the default physics and, for images, the env's
        default renderer) against the reference one (physics version 1, TinyRenderer); a faster option beside it
    """
    sentences = []
    for observation in OBSERVATIONS:
        reference = rates[(observation, "reference", REFERENCE_RENDERER)]
        renderer = REFERENCE_RENDERER if observation == "ground_truth" else defaultRenderer(ENV_ID)
        default = rates[(observation, "default", renderer)]
        best = max((rate, name) for (observed, physics, name), rate in rates.items()
                   if observed == observation and physics == "default")
        verdict = "met" if default >= GOAL * reference else "not met"
        drawn = "" if observation == "ground_truth" else f", drawn by {renderer}"
        sentence = (f"{observation}: default{drawn} {default / reference:.2f}x the reference physics with "
                    f"{REFERENCE_RENDERER} ({verdict} by default, goal {GOAL:g}x)")
        if best[1] != renderer:
            sentence += f", {best[0] / reference:.2f}x with --renderer {best[1]}"
        sentences.append(sentence + ".")
    return " ".join(sentences)


def main(argv: list[str] | None = None) -> dict[tuple[str, str, str], float]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: median steps/s per (observation, physics, renderer)
    :raises UsageError: bad input, before any work (the VAE's training included)
    """
    parser = CLIParser(prog="python -m benchmarks.kuka_ppo_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=positiveInt, default=2048, help="env steps per measurement [2048]")
    parser.add_argument("--repeats", type=positiveInt, default=3,
                        help="measurements per configuration, median kept [3]")
    addResultsArguments(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the VAE's training (not measured); each measured run sets its own (--torch-threads)
    print(f"Machine: {machineDescription(('torch', 'stable_baselines3', 'pybullet'))}")
    load_start = loadNow()
    samples: dict[tuple[str, str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        model_folder = trainVAE(scratch, VAE_EPISODES, VAE_EPOCHS, ENV_ID, FLAGS)
        print(f"VAE trained in {time.perf_counter() - start:.0f} s", flush=True)
        timeRun("ground_truth", "default", REFERENCE_RENDERER, 256, os.path.join(scratch, "warmup"), model_folder)
        countdown = Countdown(args.repeats * len(configurations()))
        for repeat in range(args.repeats):
            order = configurations() if repeat % 2 == 0 else configurations()[::-1]
            for configuration in order:
                rate = timeRun(*configuration, args.steps, os.path.join(scratch, "runs"), model_folder)
                samples.setdefault(configuration, []).append(rate)
                print(f"  {countdown.tick()} {' / '.join(configuration)}: "
                      f"{rate:,.0f} steps/s", flush=True)
    rates = {configuration: statistics.median(values) for configuration, values in samples.items()}
    lines = ["| observation | physics | renderer | ppo2 steps/s (median) | vs reference physics, tinyrenderer |",
             "|---|---|---|---:|---:|"]
    for (observation, physics, renderer), rate in rates.items():
        reference = rates[(observation, "reference", REFERENCE_RENDERER)]
        lines.append(f"| {observation} | {physics} | {renderer} | {rate:,.0f} | {rate / reference:.2f}x |")
    table = "\n".join(lines)
    goals = goalVerdicts(rates)
    print(table)
    print(goals)
    if not args.no_append:
        command = recordedCommand("benchmarks.kuka_ppo_speed", argv)
        reference_iterations, reference_residual = KukaButtonGymEnv.SOLVER["reference"]
        appendReport(
            f"ppo2 on {ENV_ID} (--random-target --force-down): physics and renderers", command,
            f"ppo2 default hyperparameters, 1 env, no evaluation, torch threads: 1 with the reference physics, "
            f"train's default with the default physics ({autoThreadsText()}), {args.steps} steps per "
            f"measurement, median of {args.repeats} (configurations interleaved, every other round reversed); "
            f"steps/s over PPO's learn(). Reference physics: {reference_iterations} solver iterations, residual "
            f"{reference_residual:g} (version 1). {vaeText(VAE_EPISODES, VAE_EPOCHS, ENV_ID)}, state dim 32. "
            f"{goals} Reported, not asserted. {loadSpanText(load_start)}.",
            table, packages=("torch", "stable_baselines3", "pybullet"), path=resultsPath(args))
    return rates


if __name__ == "__main__":
    runCommand(exitStatus(main))
