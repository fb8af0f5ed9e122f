"""Sweep throughput of ``rl_baselines.pipeline``: 8 short ppo2 runs with 1 and 2 local workers, and through Ray.

Every configuration runs the same sweep (ppo2, MobileRobotGymEnv-v0, ground truth, seeds 0-7, ``--steps`` each) from
scratch as a user would, as a ``python -m rl_baselines.pipeline`` subprocess; the figure is the command's wall time.
Configurations: local with ``--workers 1`` and ``--workers 2``; Ray with the pipeline's own local instance (its start
and stop included); Ray against an instance started beforehand (``--ray-address``, per-task cost only). Target: 2
workers >= 0.9 x 2 the throughput of 1 on 2 free cores.

Usage: ``python -m benchmarks.sweep_speed [--steps N] [--runs N] [--repeats R] [--no-ray] [--no-append]``
(also run by ``make bench``).
"""
from __future__ import annotations

import glob
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.documents import addResultsArguments, appendReport, recordedCommand, resultsPath
from srl_toolbox.cli import CLIParser, positiveInt, runCommand
from srl_toolbox.files import readJson

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_ID = "MobileRobotGymEnv-v0"
# A Ray head on the loopback address (no dashboard) that stops when its stdin closes.
RAY_HEAD = """
import os, sys
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
import ray
# "local": a new instance, even where RAY_ADDRESS is set or `ray start` ran on this machine (ray.init would join it)
ray.init(address="local", num_cpus=int(sys.argv[1]), include_dashboard=False, object_store_memory=200 * 1024 ** 2,
         logging_level="ERROR")
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()
ray.shutdown()
"""


def runSweep(log_dir: str, runs: int, steps: int, extra: list[str], env: dict[str, str], env_id: str = ENV_ID,
             srl_model: str = "ground_truth") -> tuple[float, float]:
    """
    :param log_dir: an empty folder for the sweep
    :param runs: seeds (runs) in the sweep
    :param steps: env steps per run
    :param extra: executor flags (and other train flags)
    :param env: extra environment variables
    :param env_id: the runs' env
    :param srl_model: their observation
    :return: (wall time of the command in s, mean wall time of one run in s)
    """
    command = [sys.executable, "-m", "rl_baselines.pipeline", "--algo", "ppo2", "--env", env_id, "--srl-model",
               srl_model, "--num-iteration", str(runs), "--num-timesteps", str(steps), "--log-dir", log_dir,
               "--no-vis", "--no-progress", *extra]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **env})
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")
    (state_file,) = glob.glob(os.path.join(log_dir, "sweep_*.json"))
    run_times = [run["wall_time_s"] for run in readJson(state_file)["runs"]]
    return wall, statistics.mean(run_times)


def addSweepArguments(parser: CLIParser, steps: int, runs: int, repeats: int) -> None:
    """The flags of a benchmark that times sweeps, with their defaults: env steps per run, runs in each sweep and
    repetitions (every other one in reverse order)."""
    parser.add_argument("--steps", type=positiveInt, default=steps, help=f"env steps per run [{steps}]")
    parser.add_argument("--runs", type=positiveInt, default=runs, help=f"runs in each sweep [{runs}]")
    parser.add_argument("--repeats", type=positiveInt, default=repeats,
                        help=f"repetitions, every other one in reverse order; median kept [{repeats}]")


def startRayHead(cpus: int, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """:return: (the head process, its address)"""
    head = subprocess.Popen([sys.executable, "-c", RAY_HEAD, str(cpus)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, **env})
    address = head.stdout.readline().strip()
    if not address:
        raise RuntimeError("the Ray head did not start")
    return head, address


def stopRayHead(head: subprocess.Popen) -> None:
    """Close the head's stdin (it shuts Ray down) and wait for it."""
    head.stdin.close()
    try:
        head.wait(timeout=60)
    except subprocess.TimeoutExpired:
        head.kill()
        head.wait()


def main(argv: list[str] | None = None) -> None:
    """:param argv: command-line arguments; :raises UsageError: bad input, before any work"""
    parser = CLIParser(prog="python -m benchmarks.sweep_speed", description=__doc__.split("\n\n")[0])
    addSweepArguments(parser, steps=4000, runs=8, repeats=2)
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray executor")
    addResultsArguments(parser)
    args = parser.parse_args(argv)
    has_ray = not args.no_ray
    if has_ray:
        try:
            import ray  # noqa: F401
        except ImportError:
            print("Ray is not installed: measuring the local executor only")
            has_ray = False
    # Ray >= 2.59 asks for a token: a throwaway one, shared by the head and the pipeline.
    ray_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)}
    configs = {"local, 1 worker": (["--workers", "1"], False), "local, 2 workers": (["--workers", "2"], False)}
    if has_ray:
        configs["ray, own local instance, 2 workers"] = (["--executor", "ray", "--workers", "2"], False)
        configs["ray, running instance, 2 workers"] = (["--executor", "ray", "--workers", "2"], True)
    load_before = os.getloadavg()
    walls: dict[str, list[float]] = {name: [] for name in configs}
    run_means: dict[str, list[float]] = {name: [] for name in configs}
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(args.repeats):
            # Odd repetitions go in reverse order, so that a load that drifts over time hits every configuration alike.
            order = list(configs.items())[::-1 if repeat % 2 else 1]
            for index, (name, (extra, needs_head)) in enumerate(order):
                log_dir = os.path.join(scratch, f"r{repeat}_{index}")
                head = None
                try:
                    if needs_head:
                        head, address = startRayHead(2, ray_env)
                        extra = [*extra, "--ray-address", address]
                    wall, run_mean = runSweep(log_dir, args.runs, args.steps, extra, ray_env)
                finally:
                    if head is not None:
                        stopRayHead(head)
                walls[name].append(wall)
                run_means[name].append(run_mean)
                print(f"repeat {repeat}: {name}: {wall:.1f} s ({args.runs / wall * 60:.1f} runs/min, one run "
                      f"{run_mean:.1f} s)", flush=True)
    load_after = os.getloadavg()
    wall = {name: statistics.median(values) for name, values in walls.items()}
    base, local2 = wall["local, 1 worker"], wall["local, 2 workers"]
    lines = ["| executor | sweep wall time (s) | runs/min | speed-up vs 1 worker | mean run wall time (s) |",
             "|---|---:|---:|---:|---:|"]
    for name in configs:
        lines.append(f"| {name} | {wall[name]:.1f} | {args.runs / wall[name] * 60:.1f} | {base / wall[name]:.2f} | "
                     f"{statistics.median(run_means[name]):.1f} |")
    if has_ray:
        for name in [n for n in configs if n.startswith("ray")]:
            overhead = wall[name] - local2
            lines.append(f"| Ray overhead, {name.split(', ', 1)[1]} (vs local, 2 workers) | {overhead:+.1f} | | | "
                         f"{overhead / args.runs:+.2f} per run |")
    table = "\n".join(lines)
    print(table)
    busy = ": other processes were competing for the cores" if max(load_before[0], load_after[0]) > 2.5 else ""
    if not args.no_append:
        command = recordedCommand("benchmarks.sweep_speed", argv)
        appendReport(
            "Sweep throughput, rl_baselines.pipeline", command,
            f"{args.runs} runs of ppo2 on {ENV_ID} (ground truth, {args.steps} steps, 1 env each, one torch thread), "
            f"each configuration from an empty log dir, end-to-end wall time of the pipeline command (median of "
            f"{args.repeats}, every other repetition in reverse order); "
            "a run's time includes its process start and imports (about 3 s). Target: 2 workers "
            f">= 1.8x 1 worker on 2 free cores. Machine load average (1 min) {load_before[0]:.1f} before, "
            f"{load_after[0]:.1f} after{busy}.", table,
            packages=("ray", "torch", "stable_baselines3") if has_ray else ("torch", "stable_baselines3"),
            path=resultsPath(args))


if __name__ == "__main__":
    runCommand(main)
