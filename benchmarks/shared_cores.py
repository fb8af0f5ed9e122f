"""ppo2 from raw pixels when runs share the cores: one run alone and two at once, OpenMP's threads waiting passively
or spinning.

Each run is ``python -m rl_baselines.train --algo ppo2 --env MobileRobotGymEnv-v0 --srl-model raw_pixels`` with train's
defaults (``--torch-threads auto``: every usable core for a CNN on images), and its rate is the steps/s SB3 records
at its end (``time/fps`` of progress.csv: env steps and updates since learning began, start-up left out). Variants:

- ``alone-passive``, ``alone-spin``: one run on otherwise idle cores; ``alone-one-thread``: with ``--torch-threads 1``;
- ``two-passive``, ``two-spin``: two runs started together (seeds 0 and 1), each with every core;
- ``two-one-thread``: two runs together with ``--torch-threads 1`` each (what a sweep's workers get).

*passive* is the toolbox's default (``OMP_WAIT_POLICY=PASSIVE``, set by srl_toolbox); *spin* is libgomp's own default
(``GOMP_SPINCOUNT=300000``: an idle thread spins about that many times before it sleeps), which the processes had
before. The variants are alternated, ``--repeats`` rounds; the table gives each round's rate (for two runs: the mean
of the two) and the ratios to ``alone-passive``.

Usage: ``python -m benchmarks.shared_cores [--steps N] [--repeats R] [--variants V ...] [--no-append]`` (also run by
``make bench``).
"""
from __future__ import annotations

import csv
import glob
import os
import subprocess
import sys
import tempfile

from benchmarks.documents import addResultsArguments, appendReport, recordedCommand, resultsPath
from benchmarks.progress import Countdown
from rl_baselines.core.run_folder import PROGRESS_FILE
from srl_toolbox import WAIT_VARIABLES
from srl_toolbox.cli import CLIParser, UsageError, positiveInt, runCommand

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_ID = "MobileRobotGymEnv-v0"
# libgomp's spin count when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set (its env.c)
LIBGOMP_DEFAULT_SPINCOUNT = "300000"
# variant -> (runs at once, wait policy, train's extra flags)
VARIANTS: dict[str, tuple[int, str, tuple[str, ...]]] = {
    "alone-passive": (1, "passive", ()),
    "alone-spin": (1, "spin", ()),
    "alone-one-thread": (1, "passive", ("--torch-threads", "1")),
    "two-passive": (2, "passive", ()),
    "two-spin": (2, "spin", ()),
    "two-one-thread": (2, "passive", ("--torch-threads", "1")),
}
REFERENCE = "alone-passive"


def variantEnvironment(wait: str) -> dict[str, str]:
    """:param wait: ``passive`` or ``spin``
    :return: this process's environment with the runs' OpenMP wait settings"""
    environ = {name: value for name, value in os.environ.items() if name not in WAIT_VARIABLES}
    if wait == "passive":
        environ["OMP_WAIT_POLICY"] = "PASSIVE"
    else:
        environ["GOMP_SPINCOUNT"] = LIBGOMP_DEFAULT_SPINCOUNT  # (the runs' srl_toolbox then sets no policy)
    return environ


def finalRate(log_dir: str) -> float:
    """:param log_dir: the ``--log-dir`` of one run
    :return: the steps/s SB3 recorded last (progress.csv's ``time/fps``)
    :raises RuntimeError: the run wrote no rate"""
    files = glob.glob(os.path.join(log_dir, "**", PROGRESS_FILE), recursive=True)
    rates = []
    if files:
        with open(files[0], newline="", encoding="utf-8") as handle:
            rates = [float(row["time/fps"]) for row in csv.DictReader(handle) if row.get("time/fps")]
    if not rates:
        raise RuntimeError(f"no steps/s recorded under {log_dir}")
    return rates[-1]


def measure(variant: str, steps: int, scratch: str) -> float:
    """
    :param variant: a key of :data:`VARIANTS`
    :param steps: each run's ``--num-timesteps``
    :param scratch: a folder for the runs
    :return: the runs' mean steps/s
    """
    count, wait, flags = VARIANTS[variant]
    environ = variantEnvironment(wait)
    folders = [tempfile.mkdtemp(prefix=f"{variant}-", dir=scratch) for _ in range(count)]
    processes = [subprocess.Popen(
        [sys.executable, "-m", "rl_baselines.train", "--algo", "ppo2", "--env", ENV_ID, "--srl-model", "raw_pixels",
         "--num-timesteps", str(steps), "--seed", str(seed), "--log-dir", folder, "--no-vis", "--no-progress", *flags],
        cwd=ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for seed, folder in enumerate(folders)]
    for process in processes:
        _, error = process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"{variant}: a run failed (exit {process.returncode}): {error.strip()[-500:]}")
    return sum(finalRate(folder) for folder in folders) / count


def main(argv: list[str] | None = None) -> None:
    """:param argv: command-line arguments; :raises UsageError: bad input, before any work"""
    parser = CLIParser(prog="python -m benchmarks.shared_cores", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=positiveInt, default=3072, help="env steps of each run [3072]")
    parser.add_argument("--repeats", type=positiveInt, default=2, help="alternated rounds [2]")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS), metavar="V",
                        help=f"what to measure, side by side: {', '.join(VARIANTS)} [all]")
    addResultsArguments(parser)
    args = parser.parse_args(argv)
    if args.steps < 128:
        raise UsageError(f"--steps {args.steps}: below one ppo2 rollout (128 steps), no rate is recorded")
    variants = list(dict.fromkeys(args.variants))
    rates: dict[str, list[float]] = {variant: [] for variant in variants}
    countdown = Countdown(args.repeats * len(variants),
                          sum(VARIANTS[variant][0] for variant in variants) * args.repeats * args.steps)
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.repeats):
            for variant in variants:
                rates[variant].append(measure(variant, args.steps, scratch))
                print(f"{countdown.tick(VARIANTS[variant][0] * args.steps)} round {round_ + 1} {variant}: "
                      f"{rates[variant][-1]:.0f} steps/s per run", flush=True)
    reference = rates.get(REFERENCE)
    rows = ["| variant | runs at once | steps/s per run (each round) | / alone, passive (each round) |",
            "|---|---:|---:|---:|"]
    for variant in variants:
        ratios = (", ".join(f"{rate / base:.2f}x" for rate, base in zip(rates[variant], reference))
                  if reference else "n/a")
        rows.append(f"| {variant} | {VARIANTS[variant][0]} | {', '.join(f'{rate:.0f}' for rate in rates[variant])} "
                    f"| {ratios} |")
    table = "\n".join(rows)
    print(table)
    if not args.no_append:
        appendReport("ppo2 from raw pixels on shared cores: OpenMP's threads waiting passively or spinning",
                     recordedCommand("benchmarks.shared_cores", argv),
                     f"{ENV_ID}, train's defaults (64x64 images, NatureCNN, --torch-threads auto), {args.steps} steps "
                     f"per run, steps/s = progress.csv's last time/fps; {args.repeats} alternated rounds. passive: "
                     f"OMP_WAIT_POLICY=PASSIVE (the default); spin: libgomp's own default (GOMP_SPINCOUNT="
                     f"{LIBGOMP_DEFAULT_SPINCOUNT}).", table, packages=("torch", "stable_baselines3", "pybullet"),
                     path=resultsPath(args))


if __name__ == "__main__":
    runCommand(main)
