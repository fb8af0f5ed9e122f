"""Steps/s of every registered env, in ground-truth mode and with 64x64 pixels drawn by the env's default renderer
(random discrete actions, resets included, one process, median of 3 short runs).

The bare-PyBullet comparisons of the two base scenes are in env_speed.py (mobile robot) and kuka_speed.py (arm); the
variants run the same code paths plus their own objects. Usage: ``python -m benchmarks.all_envs_speed [--seconds S]
[--no-append] [ENV_ID ...]`` (also run by ``make bench``).
"""
from __future__ import annotations

import os
import statistics
import time

from benchmarks.documents import addResultsArguments, appendReport, machineDescription, recordedCommand, resultsPath
from environments import getEnvClass, registered_env
from environments.registry import defaultRenderer
from srl_toolbox.cli import CLIParser, UsageError, positiveFloat, runCommand

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_REPETITIONS = 3


def stepsPerSecond(env_id: str, srl_model: str, seconds: float) -> float:
    """
    :param env_id: a registered env id
    :param srl_model: "ground_truth" or "raw_pixels"
    :param seconds: how long to step
    :return: env steps per second, resets included
    """
    env = getEnvClass(env_id)(srl_model=srl_model, img_shape=(3, 64, 64), seed=0)
    env.action_space.seed(0)
    env.reset(seed=0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(10):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            if terminated or truncated:
                env.reset()
    rate = steps / (time.perf_counter() - start)
    env.close()
    return rate


def main(argv: list[str] | None = None) -> None:
    """:param argv: command-line arguments; :raises UsageError: bad input (an unknown env), before any work"""
    parser = CLIParser(prog="python -m benchmarks.all_envs_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("env_ids", nargs="*", metavar="ENV_ID", help="envs to measure [all registered]")
    parser.add_argument("--seconds", type=positiveFloat, default=2.0, help="duration of each run [2]")
    addResultsArguments(parser)
    args = parser.parse_args(argv)
    unknown = [env_id for env_id in args.env_ids if env_id not in registered_env]
    if unknown:
        raise UsageError(f"unknown env {unknown[0]!r}; valid choices: {', '.join(sorted(registered_env))}")
    print(f"Machine: {machineDescription()}", flush=True)
    lines = ["| env | ground_truth steps/s | raw_pixels 64x64 steps/s | drawn by |", "|---|---:|---:|---|"]
    print("\n".join(lines), flush=True)
    for env_id in args.env_ids or sorted(registered_env):
        rates = [statistics.median(stepsPerSecond(env_id, mode, args.seconds) for _ in range(N_REPETITIONS))
                 for mode in ("ground_truth", "raw_pixels")]
        lines.append(f"| {env_id} | {rates[0]:,.0f} | {rates[1]:,.0f} | {defaultRenderer(env_id)} |")
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    if not args.no_append:
        command = recordedCommand("benchmarks.all_envs_speed", argv)
        appendReport("Environment speed, every env", command,
                     f"One process, random discrete actions, resets included; median of {N_REPETITIONS} runs of "
                     f"{args.seconds:g} s; Kuka: one step = 24 physics steps; images drawn by each env's "
                     "default renderer (drawn by).", table, path=resultsPath(args))


if __name__ == "__main__":
    runCommand(main)
