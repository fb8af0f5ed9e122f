"""Sweeps of the arm: where a sweep's runs step their envs when the runs' envs outnumber the cores.

The same sweep (ppo2 with its default 4 envs, KukaButtonGymEnv-v0 with the SRL + RL benchmark's flags and evaluation,
``--runs`` seeds of ``--steps`` steps) for each observation, from an empty log dir, as a
``python -m rl_baselines.pipeline`` subprocess; the figure is the command's wall time, in three layouts:

- the default: the pipeline's own choice (on 2 cores: 2 runs at a time, each stepping its envs in its training process,
  rl_baselines.sweeps.pipeline.localLayout);
- one run at a time, its envs in worker processes (``--workers 1``);
- 2 runs at a time, their envs in worker processes (``--workers 2 --vec-env subproc``).

Every layout gives the same runs float for float (tests/test_vec_env.py); only the time differs. Odd repetitions go
in reverse order.

Usage: ``python -m benchmarks.sweep_layout [--steps N] [--runs N] [--repeats R] [--observations OBS ...]
[--no-append]``
"""
from __future__ import annotations

import os
import statistics
import tempfile
from collections.abc import Sequence

from benchmarks.documents import addResultsArguments, appendReport, loadNow, loadSpanText, recordedCommand, resultsPath
from benchmarks.srl_rl.env_plans import KUKA, PLANS
from benchmarks.sweep_speed import addSweepArguments, runSweep
from srl_toolbox.cli import CLIParser, runCommand
from srl_toolbox.devices import usableCores

OBSERVATIONS = ("ground_truth", "raw_pixels")
DEFAULT = "the default"
# layout -> the pipeline flags that give it
LAYOUTS = {
    DEFAULT: [],
    "1 run at a time, envs in workers": ["--workers", "1"],
    "2 runs at a time, envs in workers": ["--workers", "2", "--vec-env", "subproc"],
}


def sweepFlags(steps: int) -> list[str]:
    """
    :param steps: env steps per run
    :return: the runs' train flags besides their step budget: the SRL + RL benchmark's on the arm (its env flags,
        its evaluation episodes every ``steps`` // 3 steps, at most its own frequency)
    """
    plan = PLANS[KUKA]
    return [*plan.flags, *plan.run_flags, "--eval-freq",
            str(min(plan.eval_freq, max(1, steps // 3))), "--eval-episodes", str(plan.eval_episodes)]


def layoutTable(walls: dict[str, dict[str, list[float]]], runs: int) -> str:
    """
    :param walls: observation -> layout -> the sweep's wall times (s), one per repetition
    :param runs: runs in each sweep
    :return: markdown table: each layout's median wall time, runs per minute, and the default's time over its time
    """
    lines = ["| observation | layout | sweep wall time (s) | runs/min | the default's time / this one's |",
             "|---|---|---:|---:|---:|"]
    for observation, by_layout in walls.items():
        default = statistics.median(by_layout[DEFAULT])
        for layout, values in by_layout.items():
            wall = statistics.median(values)
            lines.append(f"| {observation} | {layout} | {wall:.1f} | {runs / wall * 60:.2f} | {default / wall:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """:param argv: command-line arguments; :raises UsageError: bad input, before any work"""
    parser = CLIParser(prog="python -m benchmarks.sweep_layout", description=__doc__.split("\n\n")[0])
    addSweepArguments(parser, steps=12_000, runs=2, repeats=1)
    parser.add_argument("--observations", nargs="+", choices=OBSERVATIONS, default=list(OBSERVATIONS),
                        help=f"observations measured [{' '.join(OBSERVATIONS)}]")
    addResultsArguments(parser)
    args = parser.parse_args(argv)
    flags = sweepFlags(args.steps)
    load_start = loadNow()
    walls = {observation: {layout: [] for layout in LAYOUTS} for observation in args.observations}
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(args.repeats):
            order = list(LAYOUTS.items())[::-1 if repeat % 2 else 1]
            for observation in args.observations:
                for index, (layout, extra) in enumerate(order):
                    log_dir = os.path.join(scratch, f"{observation}_r{repeat}_{index}")
                    wall, run_mean = runSweep(log_dir, args.runs, args.steps, [*extra, *flags], {}, env_id=KUKA,
                                              srl_model=observation)
                    walls[observation][layout].append(wall)
                    print(f"repeat {repeat}: {observation}, {layout}: {wall:.1f} s (one run {run_mean:.1f} s)",
                          flush=True)
    table = layoutTable(walls, args.runs)
    print(table)
    if not args.no_append:
        appendReport(
            "Sweeps of the arm: where the runs' envs step", recordedCommand("benchmarks.sweep_layout", argv),
            f"{args.runs} runs of ppo2 (its default 4 envs) on {KUKA} ({' '.join(flags)}) per sweep, each layout "
            f"from an empty log dir, the pipeline command's wall time (median of {args.repeats}, every other "
            f"repetition in reverse order), {usableCores()} usable cores; every layout gives the same runs. "
            f"{loadSpanText(load_start)} (the sweeps' own processes count: 2 runs with 4 env workers each are 10).",
            table,
            packages=("torch", "stable_baselines3", "pybullet"), path=resultsPath(args))


if __name__ == "__main__":
    runCommand(main)
