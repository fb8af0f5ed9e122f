"""ppo2's training steps/s with several envs in worker processes or in the training process, side by side.

The measurement behind ``--vec-env auto`` (each env class's ``stepsInWorkers``): for each case (an env, an
observation and the renderer of its images), ``rl_baselines.train --algo ppo2`` (default hyperparameters, train's
default torch threads, ``--num-cpu`` envs, 2 by default) runs in this process with ``--vec-env subproc`` (SB3's
SubprocVecEnv: a worker process per env, each stepping on its own core, observations sent back through a pipe) and
``--vec-env dummy`` (SB3's DummyVecEnv: the envs one after another in the training process), alternated over rounds,
the order reversed every other round. Steps/s = env steps / wall time of PPO's ``learn`` (env construction and model
loading excluded); the table gives each one's median over the rounds, their ratio, and what ``auto`` chooses. A
learned case uses a VAE trained first by the benchmark (:func:`benchmarks.srl_speed.trainVAE`: its speed does not
depend on its quality); the sprite cache starts empty and is filled by a random walk first, as a machine's first
sprite runs do. Reported, not asserted.

Usage: ``python -m benchmarks.vec_env_speed [--cases ENV:OBSERVATION[:RENDERER] ...] [--num-cpu N] [--steps N]
[--rounds R] [--no-append] [--results-file FILE]``
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
from typing import Any
from unittest import mock

from stable_baselines3 import PPO

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
from benchmarks.srl_speed import Timers, trainVAE, warmSprites
from environments import registered_env, resolvedRenderer
from environments.mobile_robot.sprite_cache import CACHE_ENV as SPRITE_CACHE_ENV
from environments.registry import rendererRefusal
from rl_baselines.envs.factory import resolveVecEnv
from rl_baselines.runs import train
from srl_toolbox.cli import CLIParser, UsageError, positiveInt, runCommand

DEFAULT_CASES = ("MobileRobotGymEnv-v0:ground_truth", "MobileRobotGymEnv-v0:vae:sprites",
                 "MobileRobotGymEnv-v0:raw_pixels:sprites", "MobileRobotGymEnv-v0:vae:tinyrenderer",
                 "MobileRobotGymEnv-v0:raw_pixels:tinyrenderer", "KukaButtonGymEnv-v0:ground_truth",
                 "KukaButtonGymEnv-v0:raw_pixels:lowpoly")
VEC_ENVS = ("subproc", "dummy")
VAE_EPISODES, VAE_EPOCHS = 6, 2


def parseCase(text: str) -> tuple[str, str, str | None]:
    """
    :param text: ``ENV:OBSERVATION`` or ``ENV:OBSERVATION:RENDERER`` (OBSERVATION: ground_truth, raw_pixels or vae)
    :return: (env id, observation, renderer or None for the env's default)
    :raises argparse.ArgumentTypeError: a malformed case, an unknown env or observation, a renderer the env lacks
    """
    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[0] not in registered_env or parts[1] not in ("ground_truth", "raw_pixels",
                                                                                        "vae"):
        raise argparse.ArgumentTypeError(f"{text!r} is not ENV:OBSERVATION[:RENDERER] with a registered env and an "
                                         "observation of ground_truth, raw_pixels, vae")
    refusal = rendererRefusal(parts[2], parts[0]) if len(parts) == 3 else None
    if refusal is not None:  # (before any case is measured, not when the run of this one starts)
        raise argparse.ArgumentTypeError(f"{text!r}: {refusal.replace('--renderer', 'renderer')}")
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


def timedRate(argv: list[str]) -> float:
    """:param argv: a train command line
    :return: its env steps per second of PPO's ``learn``"""
    timers = Timers()
    restore = timers.wrap(PPO, "learn", "learn")
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the run's own messages
            result = train.trainCommand(argv)
    finally:
        restore()
    if result.exit_code != 0:
        raise RuntimeError(f"train {' '.join(argv)} ended with exit code {result.exit_code}")
    return result.num_timesteps / timers.seconds["learn"]


def caseArgv(case: tuple[str, str, str | None], vae: str | None, num_cpu: int, steps: int, log_dir: str) -> list[str]:
    """:return: the train command line of a case (without --vec-env)"""
    env_id, observation, renderer = case
    argv = ["--algo", "ppo2", "--env", env_id, "--num-timesteps", str(steps), "--num-cpu", str(num_cpu), "--log-dir",
            log_dir, "--no-vis", "--no-progress", "--checkpoint-freq", "-1", "--seed", "0"]
    argv += ["--srl-model-path", vae] if observation == "vae" else ["--srl-model", observation]
    return argv + (["--renderer", renderer] if renderer else [])


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: one row per case
    """
    parser = CLIParser(prog="python -m benchmarks.vec_env_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=parseCase, nargs="+", default=[parseCase(case) for case in DEFAULT_CASES],
                        metavar="ENV:OBSERVATION[:RENDERER]", help=f"what to measure [{' '.join(DEFAULT_CASES)}]")
    parser.add_argument("--num-cpu", type=positiveInt, default=2, help="parallel envs [2]")
    parser.add_argument("--steps", type=positiveInt, default=4096, help="env steps per measurement [4096]")
    parser.add_argument("--rounds", type=positiveInt, default=3, help="rounds of both --vec-env values [3]")
    addResultsArguments(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.num_cpu < 2:
        raise UsageError(f"--num-cpu {args.num_cpu}: one env steps in the training process either way; give 2 or more")
    print(f"Machine: {machineDescription(('torch', 'stable_baselines3', 'pybullet'))}", flush=True)
    load_start = loadNow()
    rows = []
    with tempfile.TemporaryDirectory() as scratch, mock.patch.dict(os.environ,
                                                                   {SPRITE_CACHE_ENV: os.path.join(scratch, "cache")}):
        if any(case[0].startswith("MobileRobot") for case in args.cases):
            warmSprites()
        vaes: dict[str, str] = {}
        for env_id in dict.fromkeys(case[0] for case in args.cases if case[1] == "vae"):
            vaes[env_id] = trainVAE(os.path.join(scratch, env_id), VAE_EPISODES, VAE_EPOCHS, env_id)
        log_dir = os.path.join(scratch, "runs")
        timedRate(caseArgv(args.cases[0], vaes.get(args.cases[0][0]), args.num_cpu, 512, log_dir))  # first calls
        for case in args.cases:
            rates: dict[str, list[float]] = {vec_env: [] for vec_env in VEC_ENVS}
            for round_index in range(args.rounds):
                for vec_env in (VEC_ENVS if round_index % 2 == 0 else VEC_ENVS[::-1]):
                    rates[vec_env].append(timedRate([*caseArgv(case, vaes.get(case[0]), args.num_cpu, args.steps,
                                                               log_dir), "--vec-env", vec_env]))
            env_id, observation, renderer = case
            shown_renderer = "" if observation == "ground_truth" else resolvedRenderer(renderer, env_id)
            auto = resolveVecEnv("auto", args.num_cpu, env_id, resolvedRenderer(renderer, env_id), observation)
            row = {"env": env_id, "observation": observation, "renderer": shown_renderer,
                   **{vec_env: statistics.median(values) for vec_env, values in rates.items()},
                   "rounds": rates, "auto": auto}
            row["ratio"] = row["dummy"] / row["subproc"]
            rows.append(row)
            print(f"{env_id} {observation} {shown_renderer}: subproc {row['subproc']:,.0f}, dummy {row['dummy']:,.0f} "
                  f"steps/s ({row['ratio']:.2f}x), auto: {auto}", flush=True)
    table = ("| env | observation | renderer | subproc steps/s | dummy steps/s | dummy / subproc | auto | rounds "
             "(subproc; dummy) |\n|---|---|---|---:|---:|---:|---|---|\n")
    table += "\n".join(
        f"| {row['env']} | {row['observation']} | {row['renderer']} | {row['subproc']:,.0f} | {row['dummy']:,.0f} | "
        f"{row['ratio']:.2f}x | {row['auto']} | "
        f"{', '.join(f'{rate:,.0f}' for rate in row['rounds']['subproc'])}; "
        f"{', '.join(f'{rate:,.0f}' for rate in row['rounds']['dummy'])} |" for row in rows)
    print(table, flush=True)
    if not args.no_append:
        appendReport(
            f"In-process envs: --vec-env dummy against subproc, {args.num_cpu} envs", recordedCommand(
                "benchmarks.vec_env_speed", argv),
            f"ppo2 default hyperparameters, train's default torch threads, {args.num_cpu} envs, {args.steps} steps per "
            f"measurement, {args.rounds} rounds of both values alternated (the order reversed every other round), "
            f"median steps/s over PPO's learn(); vae: a VAE of state dim 32 trained in the benchmark ({VAE_EPISODES} "
            f"episodes of 100 steps, {VAE_EPOCHS} epochs). Reported, not asserted. {loadSpanText(load_start)} "
            f"({len(os.sched_getaffinity(0))} cores).",
            table, packages=("torch", "stable_baselines3", "pybullet"), path=resultsPath(args))
    return rows


if __name__ == "__main__":
    runCommand(exitStatus(main))
