"""Env worker start: the seconds ``createEnvs`` takes to build N envs in worker processes, beside Stable-Baselines3's
``SubprocVecEnv`` of the same env functions as it comes.

Both start their workers with SB3's default method (forkserver). ``createEnvs`` has the forkserver import the env
factory (and so torch, gymnasium, PyBullet and the envs) once before it forks the workers; plain ``SubprocVecEnv``
leaves each worker to import them itself. Each measurement runs in a fresh interpreter (as a command starts) and
times two builds of the envs, each up to their first ``reset``: the first, which a ``python -m rl_baselines.train
--num-cpu N`` pays at its start, and a second in the same process (a loop of API runs, evaluation envs), which finds
the forkserver started. Only the builds are timed, not the interpreter's own imports. The two ways alternate,
``--repeats`` times each; the median is kept.

Usage: ``python -m benchmarks.env_start [--envs N ...] [--repeats R] [--no-append]`` (also run by ``make bench``);
appends a section to docs/benchmarks.md unless ``--no-append``.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from benchmarks.command import exitStatus
from benchmarks.documents import addResultsArguments, appendReport, recordedCommand, resultsPath
from srl_toolbox.cli import MAX_ENVS, CLIParser, intInRange, positiveInt, runCommand

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_ID = "MobileRobotGymEnv-v0"
WAYS = ("SubprocVecEnv", "createEnvs")
# Run in a fresh interpreter: build the envs twice the given way, print the two durations as JSON.
CHILD = """
import functools, json, sys, time
from stable_baselines3.common.vec_env import SubprocVecEnv
from rl_baselines.envs import factory

def build(way, count):
    settings = factory.VecEnvSettings(env_id=sys.argv[3], num_envs=count, seed=0, srl_model="ground_truth")
    if way == "createEnvs":
        return factory.createEnvs(settings)
    thunks = [functools.partial(factory.makeSingleEnv, settings.env_id, {"srl_model": "ground_truth"}, rank, None, 1,
                                False) for rank in range(count)]
    return SubprocVecEnv(thunks)

if __name__ == "__main__":
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        venv = build(sys.argv[1], int(sys.argv[2]))
        venv.reset()
        seconds.append(time.perf_counter() - start)
        venv.close()
    print(json.dumps(seconds))
"""


def timeStarts(way: str, count: int) -> list[float]:
    """
    :param way: one of :data:`WAYS`
    :param count: envs to build
    :return: seconds of the first and second build in a fresh interpreter
    """
    result = subprocess.run([sys.executable, "-c", CHILD, way, str(count), ENV_ID], capture_output=True, text=True,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}, timeout=600, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"the {way} measurement failed: {result.stderr.strip().splitlines()[-1:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def run(env_counts: list[int], repeats: int) -> list[dict]:
    """:return: per env count, the median first and second build seconds of each way"""
    rows = []
    for count in env_counts:
        measured: dict[str, list[list[float]]] = {way: [] for way in WAYS}
        for repeat in range(repeats):
            for way in (WAYS if repeat % 2 == 0 else WAYS[::-1]):
                measured[way].append(timeStarts(way, count))
        row = {"envs": count}
        for way in WAYS:
            row[way] = [statistics.median(seconds[build] for seconds in measured[way]) for build in (0, 1)]
        rows.append(row)
        print(f"{count} envs: " + ", ".join(f"{way} {row[way][0]:.2f} s then {row[way][1]:.2f} s" for way in WAYS),
              flush=True)
    return rows


def table(rows: list[dict]) -> str:
    """:return: the markdown table of the rows"""
    lines = ["| envs | SubprocVecEnv: first, second build (s) | createEnvs: first, second build (s) | "
             "speed-up first, second |", "|---|---|---|---|"]
    for row in rows:
        plain, ours = row["SubprocVecEnv"], row["createEnvs"]
        lines.append(f"| {row['envs']} | {plain[0]:.2f}, {plain[1]:.2f} | {ours[0]:.2f}, {ours[1]:.2f} | "
                     f"{plain[0] / ours[0]:.2f}x, {plain[1] / ours[1]:.2f}x |")
    return "\n".join(lines)


def buildParser() -> CLIParser:
    """:return: the command's parser"""
    parser = CLIParser(prog="python -m benchmarks.env_start", description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", type=intInRange(2, MAX_ENVS), default=[2, 4, 8], metavar="N",
                        help="env counts to measure, each at least 2 (one env is built without workers) [2 4 8]")
    parser.add_argument("--repeats", type=positiveInt, default=3, help="measurements per way and count, median "
                        "kept [3]")
    addResultsArguments(parser, "the results")
    return parser


def main(argv: list[str] | None = None) -> list[dict]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: the measured rows
    :raises UsageError: bad input, before any work
    """
    args = buildParser().parse_args(argv)
    rows = run(args.envs, args.repeats)
    markdown = table(rows)
    print(markdown)
    if not args.no_append:
        notes = (f"{ENV_ID} with ground truth, worker processes started by SB3's default method (forkserver); each "
                 f"measurement in a fresh interpreter, its imports not timed: the seconds to build the envs up to "
                 f"their first reset, twice in one process (the first build starts the forkserver); "
                 f"SubprocVecEnv of the toolbox's env functions and createEnvs alternated, median of {args.repeats}.")
        appendReport("Env worker start: createEnvs / SB3 SubprocVecEnv", recordedCommand("benchmarks.env_start", argv),
                     notes, markdown, path=resultsPath(args))
    return rows


if __name__ == "__main__":
    runCommand(exitStatus(main))
