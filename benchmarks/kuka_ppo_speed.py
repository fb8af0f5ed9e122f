"""ppo2 steps/s on the SRL table's Kuka task: the goal's reference configuration against the default, and between.

``rl_baselines.train --algo ppo2`` (default hyperparameters, no evaluation, no checkpoints) runs on
KukaButtonGymEnv-v0 with ``--random-target --force-down``, as ``make bench-srl-rl`` runs it, for each observation
(ground truth, raw pixels with SB3's CnnPolicy, a VAE of state dim 32 trained in the benchmark on a small dataset)
in these configurations:

- ``reference``: physics version 1, TinyRenderer, one env, one torch thread: the configuration of the goal's
  baseline rates. The physics is selected by running the command with the env class's default solver settings
  temporarily set to the reference ones, which reaches the env because one env lives in this process;
- the default physics on one env, with each renderer of the env for images (train's default threads): what the
  physics and the renderers gain alone;
- the default: the default physics, the env's default renderer and ppo2's default number of envs (worker processes,
  ``--vec-env auto``), what a user gets.

Configurations are interleaved, repeated, and the median kept. Steps/s = env steps of every env / wall time of PPO's
``learn``. The goal (ground truth and a learned representation each at least 1.5x the reference's rate, by default)
is read from the default configuration and reported, not asserted; a faster configuration is reported beside it.

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
from replay.results import plural
from rl_baselines.core.registry import defaultEnvs
from rl_baselines.runs import train
from srl_toolbox.cli import CLIParser, positiveInt, runCommand

ENV_ID = "KukaButtonGymEnv-v0"
FLAGS = ("--random-target",)
RUN_FLAGS = ("--force-down",)
OBSERVATIONS = ("ground_truth", "vae", "raw_pixels")
GOAL = 1.5
VAE_EPISODES, VAE_EPOCHS = 6, 2  # the VAE trained in the benchmark: its speed, not its quality, is measured


Configuration = tuple[str, str, str, int]  # observation, physics, renderer, envs


def defaultConfiguration(observation: str) -> Configuration:
    """:return: what ``train --algo ppo2`` runs by default on the task: the default physics, the env's default renderer
    for images (ground truth draws nothing: TinyRenderer, as the reference names it) and ppo2's default envs"""
    renderer = REFERENCE_RENDERER if observation == "ground_truth" else defaultRenderer(ENV_ID)
    return observation, "default", renderer, defaultEnvs("ppo2")


def configurations() -> list[Configuration]:
    """:return: (observation, physics, renderer, envs) of every measurement: the reference, the default physics on one
    env with each renderer, and the default (see the module's docstring)"""
    rows = []
    for observation in OBSERVATIONS:
        rows.append((observation, "reference", REFERENCE_RENDERER, 1))
        renderers = KukaButtonGymEnv.RENDERERS if observation != "ground_truth" else (REFERENCE_RENDERER,)
        rows += [(observation, "default", renderer, 1) for renderer in renderers]
        if defaultConfiguration(observation) not in rows:
            rows.append(defaultConfiguration(observation))
    return rows


def timeRun(observation: str, physics: str, renderer: str, envs: int, steps: int, log_dir: str,
            model_folder: str) -> float:
    """
    :return: PPO steps/s of one train command (the steps it trained: whole rollouts of every env)
    """
    timers = Timers()
    restore = timers.wrap(PPO, "learn", "learn")
    argv = ["--algo", "ppo2", "--env", ENV_ID, "--num-timesteps", str(steps), "--log-dir", log_dir, "--no-vis",
            "--no-progress", "--checkpoint-freq", "-1", "--seed", "0", "--renderer", renderer, *FLAGS, *RUN_FLAGS,
            "--num-cpu", str(envs), "--torch-threads", "1" if physics == "reference" else "0"]
    argv += ["--srl-model-path", model_folder] if observation == "vae" else ["--srl-model", observation]
    solver = {"default": KukaButtonGymEnv.SOLVER["reference"]} if physics == "reference" else {}
    try:
        with mock.patch.dict(KukaButtonGymEnv.SOLVER, solver), contextlib.redirect_stdout(io.StringIO()):
            result = train.trainCommand(argv)
        assert result.exit_code == 0
    finally:
        restore()
    return result.num_timesteps / timers.seconds["learn"]


def goalVerdicts(rates: dict[Configuration, float]) -> str:
    """
    :param rates: median steps/s per configuration
    :return: one sentence per observation: the default configuration against the reference one (physics version 1,
        TinyRenderer, one env), the default physics and renderer on one env beside it, and a faster configuration
    """
    sentences = []
    for observation in OBSERVATIONS:
        reference = rates[(observation, "reference", REFERENCE_RENDERER, 1)]
        default = defaultConfiguration(observation)
        _, _, renderer, envs = default
        rate = rates[default]
        verdict = "met" if rate >= GOAL * reference else "not met"
        drawn = "" if observation == "ground_truth" else f"drawn by {renderer}, "
        sentence = (f"{observation}: default ({drawn}{plural(envs, 'env')}) {rate / reference:.2f}x the reference "
                    f"(physics version 1, {REFERENCE_RENDERER}, 1 env; {verdict} by default, goal {GOAL:g}x)")
        one_env = (observation, "default", renderer, 1)
        if envs != 1 and one_env in rates:
            sentence += f", {rates[one_env] / reference:.2f}x on 1 env"
        best_rate, best = max((value, configuration) for configuration, value in rates.items()
                              if configuration[0] == observation and configuration[1] == "default")
        if best_rate > rate and best != one_env:
            sentence += f", {best_rate / reference:.2f}x with --renderer {best[2]} on {plural(best[3], 'env')}"
        sentences.append(sentence + ".")
    return " ".join(sentences)


def main(argv: list[str] | None = None) -> dict[Configuration, float]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: median steps/s per (observation, physics, renderer, envs)
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
    samples: dict[Configuration, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        model_folder = trainVAE(scratch, VAE_EPISODES, VAE_EPOCHS, ENV_ID, FLAGS)
        print(f"VAE trained in {time.perf_counter() - start:.0f} s", flush=True)
        timeRun("ground_truth", "default", REFERENCE_RENDERER, 1, 256, os.path.join(scratch, "warmup"), model_folder)
        countdown = Countdown(args.repeats * len(configurations()))
        for repeat in range(args.repeats):
            order = configurations() if repeat % 2 == 0 else configurations()[::-1]
            for configuration in order:
                rate = timeRun(*configuration, args.steps, os.path.join(scratch, "runs"), model_folder)
                samples.setdefault(configuration, []).append(rate)
                print(f"  {countdown.tick()} {' / '.join(configuration[:3])} / {plural(configuration[3], 'env')}: "
                      f"{rate:,.0f} steps/s", flush=True)
    rates = {configuration: statistics.median(values) for configuration, values in samples.items()}
    lines = ["| observation | physics | renderer | envs | ppo2 steps/s (median) | vs the reference |",
             "|---|---|---|---:|---:|---:|"]
    for (observation, physics, renderer, envs), rate in rates.items():
        reference = rates[(observation, "reference", REFERENCE_RENDERER, 1)]
        lines.append(f"| {observation} | {physics} | {renderer} | {envs} | {rate:,.0f} | {rate / reference:.2f}x |")
    table = "\n".join(lines)
    goals = goalVerdicts(rates)
    print(table)
    print(goals)
    if not args.no_append:
        command = recordedCommand("benchmarks.kuka_ppo_speed", argv)
        reference_iterations, reference_residual = KukaButtonGymEnv.SOLVER["reference"]
        appendReport(
            f"ppo2 on {ENV_ID} (--random-target --force-down): physics, renderers and envs", command,
            f"ppo2 default hyperparameters, no evaluation; the reference: physics version 1, TinyRenderer, 1 env in "
            f"this process, one torch thread (issue 27's start); the default: the default physics, the env's default "
            f"renderer, ppo2's default {plural(defaultEnvs('ppo2'), 'env')} (`--vec-env auto`); between them the "
            f"default physics on 1 env with each renderer; torch threads train's default but for the reference "
            f"({autoThreadsText()}), {args.steps} steps per "
            f"measurement, median of {args.repeats} (configurations interleaved, every other round reversed); "
            f"steps/s over PPO's learn(). Reference physics: {reference_iterations} solver iterations, residual "
            f"{reference_residual:g} (version 1). {vaeText(VAE_EPISODES, VAE_EPOCHS, ENV_ID)}, state dim 32. "
            f"{goals} Reported, not asserted. {loadSpanText(load_start)}.",
            table, packages=("torch", "stable_baselines3", "pybullet"), path=resultsPath(args))
    return rates


if __name__ == "__main__":
    runCommand(exitStatus(main))
