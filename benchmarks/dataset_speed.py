"""Dataset generation speed: frames/s of ``python -m environments.dataset_generator`` with 1 and 2 processes.

Each measurement runs the command as a user would (a subprocess) on MobileRobotGymEnv-v0 with random actions,
64x64 JPEG images and full 250-step episodes, into a temporary folder. Two figures per run: the recording rate the
generator prints (from the first episode started to the last finished: env steps, rendering and image writing) and
the end-to-end rate (frames / wall time of the whole command, Python start-up and the final merge included).
1- and 2-process runs alternate, and the median of ``--repeats`` is kept. The 2-process speed-up is reported, not
asserted: it depends on how many cores are really free.

Usage: ``python -m benchmarks.dataset_speed [--episodes N] [--repeats R] [--no-append]``; appends a section to
docs/benchmarks.md unless ``--no-append``.
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.command import exitStatus
from benchmarks.documents import addResultsArguments, appendReport, machineDescription, recordedCommand, resultsPath
from srl_toolbox.cli import CLIParser, UsageError, positiveInt, runCommand

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_ID = "MobileRobotGymEnv-v0"
IMG_SIDE = 64
# The 2-process run splits the episodes between its processes: each needs one at least.
MIN_EPISODES = 2
RATE = re.compile(r"\((\d+) episodes, (\d+) frames, (\d+) frames/s with (\d+) process")


def timeGeneration(num_cpu: int, episodes: int, save_path: str) -> tuple[float, float]:
    """
    :param num_cpu: worker processes
    :param episodes: episodes to record
    :param save_path: folder of the dataset (a fresh name per call)
    :return: (recording frames/s as printed by the generator, end-to-end frames/s)
    """
    name = f"bench_{num_cpu}_{time.monotonic_ns()}"
    command = [sys.executable, "-m", "environments.dataset_generator", "--env", ENV_ID, "--name", name,
               "--save-path", save_path, "--num-episode", str(episodes), "--num-cpu", str(num_cpu),
               "--img-shape", "3", str(IMG_SIDE), str(IMG_SIDE), "--no-progress"]
    start = time.perf_counter()
    result = subprocess.run(command, check=False, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    match = RATE.search(result.stdout)
    if result.returncode != 0 or match is None:
        raise RuntimeError(f"generator failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    frames = int(match.group(2))
    return float(match.group(3)), frames / wall


def run(episodes: int, repeats: int) -> list[dict[str, float]]:
    """
    :param episodes: episodes per run
    :param repeats: runs per process count (alternated)
    :return: one row per process count: num_cpu, recording (frames/s), end_to_end (frames/s)
    """
    rates: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory(prefix="dataset_speed_") as save_path:
        for _ in range(repeats):
            for num_cpu, runs in rates.items():
                runs.append(timeGeneration(num_cpu, episodes, save_path))
                print(f"  {num_cpu} process(es): {runs[-1][0]:.0f} frames/s recording, {runs[-1][1]:.0f} end to end",
                      flush=True)
    return [{"num_cpu": num_cpu, "recording": statistics.median(r[0] for r in runs),
             "end_to_end": statistics.median(r[1] for r in runs)} for num_cpu, runs in rates.items()]


def formatTable(rows: list[dict[str, float]]) -> str:
    """:param rows: as returned by run()
    :return: a markdown table with the 2-process / 1-process ratios"""
    base = rows[0]
    lines = ["| processes | recording frames/s | end-to-end frames/s | speed-up (recording) | speed-up (end to end) |",
             "|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['num_cpu']} | {row['recording']:,.0f} | {row['end_to_end']:,.0f} | "
                     f"{row['recording'] / base['recording']:.2f} | {row['end_to_end'] / base['end_to_end']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: the measured rows
    :raises UsageError: bad input, before any work
    """
    parser = CLIParser(prog="python -m benchmarks.dataset_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=positiveInt, default=8,
                        help=f"episodes of 250 frames per run, at least {MIN_EPISODES} [8]")
    parser.add_argument("--repeats", type=positiveInt, default=3,
                        help="runs per process count, median kept [3]")
    addResultsArguments(parser, "the results")
    args = parser.parse_args(argv)
    if args.episodes < MIN_EPISODES:
        raise UsageError(f"--episodes {args.episodes}: the 2-process run needs at least {MIN_EPISODES} episodes "
                         f"(one per process); give {MIN_EPISODES} or more")
    print(f"Machine: {machineDescription()}")
    rows = run(args.episodes, args.repeats)
    table = formatTable(rows)
    print(table)
    if not args.no_append:
        command = recordedCommand("benchmarks.dataset_speed", argv)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        appendReport("Dataset generation speed, MobileRobotGymEnv", command,
                     f"Random actions, {args.episodes} episodes x 250 frames, {IMG_SIDE}x{IMG_SIDE} JPEG, one "
                     f"subprocess per run, 1 and 2 processes alternated, median of {args.repeats}. Recording = the "
                     f"rate the generator prints (episodes only); end to end = frames / wall time of the command. "
                     f"Target: about 2x with 2 processes on 2 free cores (reported, not asserted); load average "
                     f"{load:.1f} when the run ended.", table, packages=("pybullet", "numpy", "opencv-python-headless"),
                     path=resultsPath(args))
    return rows


if __name__ == "__main__":
    runCommand(exitStatus(main))
