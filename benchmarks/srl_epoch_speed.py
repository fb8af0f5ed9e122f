"""Training speed of the SRL models' encoders, and ppo2's steps/s on augmented raw pixels, side by side in one run.

Two measurements on MobileRobotGymEnv-v0, each command run as a user runs it (a subprocess, one torch thread):

- encoders: one dataset (random actions, ``--episodes`` episodes of 250 steps, 64x64, the env's default renderer) is
  recorded once; each model of ``--models`` is trained on it by ``python -m srl_models.train`` (state dimension 32,
  ``--epochs`` epochs, its own defaults: batch, augmentation, pairs), the models alternated over ``--repeats``
  rounds. Per model: the median epoch's wall time (``seconds`` of training_history.json: the epoch's updates and its
  validation), its updates per epoch and batch, the frames per second its updates go through (updates x batch /
  seconds: comparable across batch sizes) and its epoch's time relative to the VAE's;
- pixel agents: ppo2 from raw pixels without ``--augment``, with ``--augment shift`` (its default update, DrAC's
  regulariser) and with ``--augment shift --augment-loss rad`` (``python -m rl_baselines.train``, 1 env, ``--steps``
  steps, no evaluation), alternated over ``--repeats`` rounds; steps/s of the monitor clock (as the SRL +
  RL benchmark reports a run's rate), median, and the ratio.

Nothing is asserted: rates depend on the machine and on what else runs on it (the load average is reported).
Usage: ``python -m benchmarks.srl_epoch_speed [--models vae atc curl ...] [--epochs 2] [--steps 4096] [--no-append]``.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence

from benchmarks.documents import (
    ONE_THREAD,
    addResultsArguments,
    appendReport,
    machineDescription,
    recordedCommand,
    resultsPath,
)
from benchmarks.srl_rl.runs import loadRun
from environments import getEnvClass
from rl_baselines.core.run_folder import ARGS_FILE
from srl_models.train_choices import trainableModels
from srl_toolbox.cli import CLIParser, UsageError, positiveInt, runCommand

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_ID = "MobileRobotGymEnv-v0"
MODELS = ("vae", "autoencoder", "srl_combination", "atc", "curl")
REFERENCE = "vae"
STATE_DIM = 32


def runPython(module: str, arguments: Sequence[str]) -> None:
    """Run ``python -m module arguments`` from the repository root with one torch thread; raise on failure."""
    environment = {**os.environ, **ONE_THREAD}
    result = subprocess.run([sys.executable, "-m", module, *arguments], cwd=ROOT, env=environment, check=False,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"python -m {module} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")


def recordDataset(save_path: str, episodes: int) -> str:
    """:return: the folder of a dataset of ``episodes`` random episodes of 250 steps at 64x64, seed 0"""
    runPython("environments.dataset_generator", ["--env", ENV_ID, "--name", "speed", "--save-path", save_path,
                                                  "--num-episode", str(episodes), "--seed", "0", "--no-progress"])
    return os.path.join(save_path, "speed")


def epochTimes(model_folder: str) -> dict[str, float]:
    """:return: the median epoch's seconds, updates per epoch (the history counts them from the start) and batch size
    of a trained model's folder"""
    with open(os.path.join(model_folder, "training_history.json"), encoding="utf-8") as handle:
        history = json.load(handle)
    with open(os.path.join(model_folder, "exp_config.json"), encoding="utf-8") as handle:
        batch = int(json.load(handle)["batch_size"])
    counts = [epoch["updates"] for epoch in history]
    return {"seconds": statistics.median(epoch["seconds"] for epoch in history),
            "updates": statistics.median(now - before for now, before in zip(counts, [0, *counts[:-1]])),
            "batch": batch}


def trainEncoder(dataset: str, model: str, epochs: int, log_folder: str) -> dict[str, float]:
    """Train ``model`` on the dataset for ``epochs`` epochs; :return: its :func:`epochTimes`"""
    runPython("srl_models.train", ["--data-folder", dataset, "--srl-model", model, "--state-dim", str(STATE_DIM),
                                    "--epochs", str(epochs), "--seed", "0", "--log-folder", log_folder,
                                    "--device", "cpu", "--no-eval", "--no-progress"])
    folders = [os.path.join(root, "") for root, _, files in os.walk(log_folder) if "training_history.json" in files]
    newest = max(folders, key=os.path.getmtime)
    return epochTimes(newest)


# The pixel agents: each one's ``--augment`` value (and further flags), as the table names it.
AGENTS = {"none": ["--augment", "none"], "shift": ["--augment", "shift"],
          "shift --augment-loss rad": ["--augment", "shift", "--augment-loss", "rad"]}


def agentRate(flags: Sequence[str], steps: int, log_dir: str) -> float:
    """:return: ppo2's steps/s from raw pixels (monitor clock) with these train flags"""
    runPython("rl_baselines.train", ["--algo", "ppo2", "--env", ENV_ID, "--srl-model", "raw_pixels", *flags,
                                      "--num-timesteps", str(steps), "--seed", "0", "--no-vis",
                                      "--no-progress", "--log-dir", log_dir])
    runs = [os.path.join(root, "") for root, _, files in os.walk(log_dir) if ARGS_FILE in files]
    return loadRun(max(runs, key=os.path.getmtime)).rate


def measure(models: Sequence[str], episodes: int, epochs: int, steps: int, repeats: int
            ) -> tuple[list[dict[str, float | str]], list[dict[str, float | str]]]:
    """
    :return: (one row per model: model, seconds, updates, batch; one row per augmentation: augment, rate), medians
        over ``repeats`` alternated rounds
    """
    encoders: dict[str, list[dict[str, float]]] = {model: [] for model in models}
    agents: dict[str, list[float]] = {label: [] for label in AGENTS}
    with tempfile.TemporaryDirectory(prefix="srl_epoch_speed_") as folder:
        dataset = recordDataset(os.path.join(folder, "data"), episodes)
        for round_index in range(repeats):
            for model in models:
                encoders[model].append(trainEncoder(dataset, model, epochs,
                                                    os.path.join(folder, "srl", f"{model}_{round_index}")))
                print(f"  {model}: {encoders[model][-1]['seconds']:.1f} s per epoch", flush=True)
            for number, (augment, rates) in enumerate(agents.items()):
                rates.append(agentRate(AGENTS[augment], steps, os.path.join(folder, "runs", f"{number}_{round_index}")))
                print(f"  ppo2 raw pixels, --augment {augment}: {rates[-1]:.0f} steps/s", flush=True)
    encoder_rows: list[dict[str, float | str]] = [
        {"model": model, **{key: statistics.median(run[key] for run in runs) for key in ("seconds", "updates", "batch")}}
        for model, runs in encoders.items()]
    agent_rows: list[dict[str, float | str]] = [{"augment": augment, "rate": statistics.median(rates)}
                                                for augment, rates in agents.items()]
    return encoder_rows, agent_rows


def formatTables(encoder_rows: Sequence[dict], agent_rows: Sequence[dict]) -> str:
    """:return: the two markdown tables: encoders (relative to the VAE's epoch when measured), then agents"""
    reference = next((row["seconds"] for row in encoder_rows if row["model"] == REFERENCE), None)
    lines = ["| model | seconds per epoch | updates per epoch (batch) | ms per update | frames/s through the updates "
             f"| epoch / {REFERENCE}'s |", "|---|---:|---:|---:|---:|---:|"]
    for row in encoder_rows:
        ratio = f"{row['seconds'] / reference:.2f}" if reference else "-"
        lines.append(f"| {row['model']} | {row['seconds']:.1f} | {row['updates']:.0f} ({row['batch']:.0f}) | "
                     f"{1000 * row['seconds'] / row['updates']:.0f} | {row['updates'] * row['batch'] / row['seconds']:,.0f}"
                     f" | {ratio} |")
    base = agent_rows[0]["rate"]
    lines += ["", "| ppo2 from raw pixels | steps/s | ratio to --augment none |", "|---|---:|---:|"]
    lines += [f"| --augment {row['augment']} | {row['rate']:,.0f} | {row['rate'] / base:.2f} |" for row in agent_rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """:param argv: command-line arguments (default: sys.argv[1:]); :return: exit status"""
    parser = CLIParser(prog="python -m benchmarks.srl_epoch_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=sorted(trainableModels()),
                        metavar="MODEL", help=f"SRL models trained by srl_models.train [{' '.join(MODELS)}]")
    parser.add_argument("--episodes", type=positiveInt, default=8, help="dataset episodes of 250 steps [8]")
    parser.add_argument("--epochs", type=positiveInt, default=2, help="epochs per training [2]")
    episode = getEnvClass(ENV_ID).MAX_STEPS  # the monitor clock's steps/s needs one finished episode
    parser.add_argument("--steps", type=positiveInt, default=4096,
                        help=f"ppo2 steps per raw-pixel run, at least one episode ({episode}) [4096]")
    parser.add_argument("--repeats", type=positiveInt, default=1, help="alternated rounds, median kept [1]")
    addResultsArguments(parser, "the results")
    args = parser.parse_args(argv)
    if args.steps < episode:
        raise UsageError(f"--steps {args.steps}: below one episode of {ENV_ID}; the steps/s of the monitor clock "
                         f"needs a finished episode: give at least {episode}")
    print(f"Machine: {machineDescription()}", flush=True)
    encoder_rows, agent_rows = measure(args.models, args.episodes, args.epochs, args.steps, args.repeats)
    tables = formatTables(encoder_rows, agent_rows)
    print(tables)
    if not args.no_append:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        appendReport("SRL encoders' training speed, and ppo2 on augmented raw pixels", recordedCommand(
            "benchmarks.srl_epoch_speed", argv),
            f"{ENV_ID}, the env's default renderer. Encoders: a dataset of {args.episodes} random episodes of 250 "
            f"steps at 64x64 (seed 0), each model trained by srl_models.train (state dimension {STATE_DIM}, "
            f"{args.epochs} epochs, its own batch and defaults, no evaluation, one torch thread, one training at a "
            f"time); seconds per epoch = the median epoch of training_history.json (its updates and its validation). "
            f"Agents: ppo2 from raw pixels, 1 env, {args.steps} steps, no evaluation, one torch thread, steps/s of "
            f"the monitor clock. Median of {args.repeats} alternated round(s); load average {load:.1f} when the run "
            "ended.", tables, packages=("torch", "stable_baselines3", "pybullet"), target="bench-encoders",
            path=resultsPath(args))
    return 0


if __name__ == "__main__":
    runCommand(main)
