"""Does an SRL model trained on one renderer's frames keep its GTC on the other's? (TinyRenderer against each env's own)

Every env with a renderer besides the reference, TinyRenderer, is measured against it: the mobile robots' sprites and
the Kuka arms' lowpoly (the env class's ``RENDERERS``). For each env the script records datasets with the real
generator (``python -m environments.dataset_generator``, random policy, the same seed and settings): one per
renderer, in JPEG files (the generator's default) to train on, and the same two in PNG files for the reference below.
It checks that they all hold the same trajectory (actions, rewards, episode starts, ground truth, targets and frame
names identical: the renderer only draws; the benchmark stops otherwise, since the frames would not show the same
states). It then trains models on each JPEG dataset with the real command (``python -m srl_models.train``: the same
model, state dimension, epochs and batch size, one model per ``--seeds`` seed; ``--no-eval``), two at a time with one
torch thread each, and measures each model's GTC as ``srl_models.evaluate`` computes it
(``srl_models.metrics.gtCorrelation`` on a seeded subset of at most ``--max-samples`` frames, against the dataset's
ground truth), in this process, without writing into the model folders: on both renderers' JPEG frames, and on its
own renderer's PNG frames. Every dataset gives the same rows, hence the same states and ground truth: a model's GTCs
differ only by the pixels.

The bound: a model's GTC on the other renderer's frames is within 0.02 of its GTC on its own renderer's
frames. Reported per model, not asserted: the script exits 0 either way (a different trajectory is an error). The
reference column says how much the same model's GTC moves when only the JPEG compression is taken away from its own
renderer's frames (a change of the pixels that carries no information either): a renderer difference of that size
is the model's sensitivity to any small change of the pixels, not a renderer's fault.

The state dimension is 8 by default, as in the SRL table (benchmarks.srl_table): GTC keeps the best |correlation|
over the learned dimensions, so a wide state raises it by chance.

Usage: ``python -m benchmarks.renderer_gtc [--envs ENV ...] [--srl-model vae] [--seeds 0 1 2] [--episodes 16]
[--max-steps 100] [--epochs 8] [--state-dim 8] [--keep DIR] [--no-append]`` (``make bench-renderer-gtc``: the four
mobile robots, the default, most of the time going to the trainings; ``--envs KukaButtonGymEnv-v0`` measures an arm
against lowpoly).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from benchmarks.command import exitStatus
from benchmarks.documents import (
    ONE_THREAD,
    addResultsArguments,
    appendReport,
    machineDescription,
    recordedCommand,
    resultsPath,
    shownCommand,
)
from environments import getEnvClass, registered_env
from environments.dataset import ARRAY_KEYS, Dataset
from environments.srl_env import REFERENCE_RENDERER
from srl_models.evaluate import encodeDataset, prepareEvaluation
from srl_models.metrics import gtCorrelation
from srl_models.train_choices import trainableModels, trainsLoss
from srl_toolbox.cli import (
    CLIParser,
    UsageError,
    checkWritableFolder,
    nonEmptyText,
    positiveInt,
    runCommand,
    seedNumber,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOBILE_ROBOTS = ("MobileRobotGymEnv-v0", "MobileRobot2TargetGymEnv-v0", "MobileRobot1DGymEnv-v0",
                 "MobileRobotLineTargetGymEnv-v0")
IMAGE_FORMATS = ("jpg", "png")  # the models train on JPEG files (the generator's default); PNG: the reference
BOUND = 0.02
# A row's GTCs: on the reference renderer's frames and on the env's other renderer's (the row's "renderer")
SIDES = ("reference", "other")


def otherRenderer(env_id: str) -> str | None:
    """:return: the renderer of the registered env ``env_id`` besides the reference (its class's ``RENDERERS``), None
        for an env that has only the reference"""
    others = [name for name in getattr(getEnvClass(env_id), "RENDERERS", ()) if name != REFERENCE_RENDERER]
    return others[0] if others else None


def measuredEnvs() -> list[str]:
    """:return: the registered envs with a renderer besides the reference, in registration order"""
    return [env_id for env_id in registered_env if otherRenderer(env_id) is not None]


def runPython(command: list[str], env: dict[str, str] | None = None) -> str:
    """
    Run ``python COMMAND`` from the repository root.

    :param command: the command line without the interpreter
    :param env: extra environment variables
    :return: its stdout
    :raises RuntimeError: a non-zero exit (with the last lines of its output)
    """
    result = subprocess.run([sys.executable, *command], cwd=ROOT, env={**os.environ, **(env or {})},
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-5:])
        raise RuntimeError(f"{shownCommand(command)} exited {result.returncode}:\n{tail}")
    return result.stdout


def datasetName(renderer: str, image_format: str) -> str:
    """:return: the folder name of the dataset drawn by ``renderer`` in ``image_format`` files"""
    return renderer if image_format == "jpg" else f"{renderer}_{image_format}"


def datasetCommand(env_id: str, renderer: str, args: argparse.Namespace, save_path: str,
                   image_format: str = "jpg") -> list[str]:
    """:return: the generator's command line (without the interpreter) of one env's dataset drawn by ``renderer``"""
    return ["-m", "environments.dataset_generator", "--env", env_id, "--renderer", renderer, "--num-episode",
            str(args.episodes), "--max-steps", str(args.max_steps), "--name", datasetName(renderer, image_format),
            "--save-path", save_path, "--seed", str(args.data_seed), "--image-format", image_format,
            "--num-cpu", str(min(args.num_cpu, args.episodes)), "--no-progress", "-f"]


def trainCommand(data_folder: str, seed: int, args: argparse.Namespace, log_folder: str) -> list[str]:
    """:return: the training command line (without the interpreter) of the model trained on ``data_folder`` (pca and
    random, which train no loss, take no epochs or batch size)"""
    return ["-m", "srl_models.train", "--data-folder", data_folder, "--srl-model", args.srl_model, "--state-dim",
            str(args.state_dim),
            *(["--epochs", str(args.epochs), "--batch-size", str(args.batch_size)] if trainsLoss(args.srl_model)
              else []),
            "--seed", str(seed), "--log-folder", log_folder, "--device", "cpu", "--no-eval", "--no-progress"]


def trajectoryDifferences(first: str, second: str) -> list[str]:
    """
    :param first: a dataset folder
    :param second: another, recorded with the same settings and seed by another renderer
    :return: the arrays (of environments.dataset.ARRAY_KEYS) that differ or that only one has; frame names are
        compared without the dataset's name. Empty: the same trajectory.
    """
    datasets = Dataset.open(first), Dataset.open(second)
    differ = []
    for key in ARRAY_KEYS:
        present = [dataset.has(key) for dataset in datasets]
        if not any(present):
            continue
        if not all(present):
            differ.append(key)
            continue
        arrays = [dataset[key] for dataset in datasets]
        if key == "images_path":
            arrays = [np.array([str(stem).split("/", 1)[-1] for stem in array]) for array in arrays]
        if arrays[0].shape != arrays[1].shape or not np.array_equal(arrays[0], arrays[1]):
            differ.append(key)
    return differ


def modelGTC(model_folder: str, data_folder: str, max_samples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """
    A model's GTC on a dataset's frames, as srl_models.evaluate computes it, without writing into the model folder.

    :param model_folder: a model folder written by srl_models.train
    :param data_folder: a dataset of the model's env and image size
    :param max_samples: most frames measured (a seeded subset beyond)
    :param seed: seed of the subset
    :return: {"per_dimension": [...], "mean": float}
    """
    evaluation = prepareEvaluation(model_folder, data_folder, max_samples=max_samples, seed=seed)
    states = encodeDataset(evaluation.model, evaluation.dataset, evaluation.indices, progress=False)
    return gtCorrelation(states, evaluation.ground_truth)


def measureEnv(env_id: str, args: argparse.Namespace, scratch: str) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """
    Record the datasets (each renderer's, in JPEG files to train on and in PNG files for the reference), check that
    they hold one trajectory, train the models on the JPEG ones and measure each on both renderers' JPEG frames and
    on its own renderer's PNG frames.

    :param env_id: an env of :func:`measuredEnvs`
    :param args: the benchmark's settings
    :param scratch: folder of the datasets and models
    :return: one row per trained model (``gtc`` keyed by ``reference`` and ``other``, the renderer being ``renderer``),
        and the seconds spent recording, training and measuring
    :raises RuntimeError: a command failed, or the renderers gave different trajectories
    """
    other_renderer = otherRenderer(env_id)
    assert other_renderer is not None, env_id
    renderers = (REFERENCE_RENDERER, other_renderer)
    data_path, log_folder = os.path.join(scratch, env_id, "data"), os.path.join(scratch, env_id, "srl")
    seconds = {}
    start = time.perf_counter()
    folders = {}
    for image_format in IMAGE_FORMATS:
        for renderer in renderers:
            name = datasetName(renderer, image_format)
            runPython(datasetCommand(env_id, renderer, args, data_path, image_format))
            folders[name] = os.path.join(data_path, name)
    for name, folder in folders.items():
        differ = trajectoryDifferences(folders[renderers[0]], folder)
        if differ:
            raise RuntimeError(f"{env_id}: the same seed gave different {', '.join(differ)} in the datasets "
                               f"{renderers[0]} and {name}: the renderer changed the trajectory")
    seconds["record"] = time.perf_counter() - start

    start = time.perf_counter()

    def train(job: tuple[str, int]) -> str:
        renderer, seed = job
        output = runPython(trainCommand(folders[renderer], seed, args, log_folder), env=ONE_THREAD)
        found = re.findall(r"^Model folder: (.+)$", output, re.MULTILINE)
        if not found:
            raise RuntimeError(f"srl_models.train on {folders[renderer]} printed no model folder")
        return os.path.join(ROOT, found[-1].strip())  # absolute already, or relative to the repository root

    jobs = [(renderer, seed) for seed in args.seeds for renderer in renderers]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        models = dict(zip(jobs, pool.map(train, jobs), strict=True))
    seconds["train"] = time.perf_counter() - start

    start = time.perf_counter()
    rows = []
    for trained_on, seed in jobs:
        own_png = datasetName(trained_on, "png")
        gtc = {frames: modelGTC(models[trained_on, seed], folders[frames], args.max_samples, args.data_seed)
               for frames in (*renderers, own_png)}
        other = renderers[1 - renderers.index(trained_on)]
        difference = abs(gtc[other]["mean"] - gtc[trained_on]["mean"])
        rows.append({"env": env_id, "renderer": other_renderer, "trained_on": trained_on, "seed": seed,
                     "gtc": {side: gtc[frames]["mean"] for side, frames in zip(SIDES, renderers, strict=True)},
                     "gtc_png": gtc[own_png]["mean"],
                     "per_dimension": {side: gtc[frames]["per_dimension"]
                                       for side, frames in zip(SIDES, renderers, strict=True)},
                     "difference": difference, "within": difference <= BOUND,
                     "png_difference": abs(gtc[own_png]["mean"] - gtc[trained_on]["mean"]),
                     "model": models[trained_on, seed]})
    seconds["measure"] = time.perf_counter() - start
    return rows, seconds


def table(rows: list[dict[str, Any]]) -> str:
    """:return: the markdown table of the rows of :func:`measureEnv`"""
    lines = [f"| env | trained on | seed | GTC on {REFERENCE_RENDERER} frames | GTC on the other renderer's frames | "
             f"\\|difference\\| | within {BOUND:g} | reference: GTC on own PNG frames | reference \\|difference\\| |",
             "|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['env']} | {row['trained_on']} | {row['seed']} | {row['gtc']['reference']:.3f} | "
                     f"{row['gtc']['other']:.3f} ({row['renderer']}) | {row['difference']:.3f} | "
                     f"{'yes' if row['within'] else 'no'} | {row['gtc_png']:.3f} | {row['png_difference']:.3f} |")
    return "\n".join(lines)


def summary(rows: list[dict[str, Any]]) -> str:
    """:return: the markdown table of the rows' means over the seeds, per env and renderer trained on"""
    lines = [f"| env | trained on | models | mean GTC on {REFERENCE_RENDERER} frames | mean GTC on the other "
             f"renderer's frames | mean \\|difference\\| | largest \\|difference\\| | within {BOUND:g} | reference: mean "
             "\\|difference\\| JPEG/PNG |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["env"], row["trained_on"]), []).append(row)
    for (env_id, trained_on), group in groups.items():
        differences = [row["difference"] for row in group]
        lines.append(f"| {env_id} | {trained_on} | {len(group)} | "
                     f"{np.mean([row['gtc']['reference'] for row in group]):.3f} | "
                     f"{np.mean([row['gtc']['other'] for row in group]):.3f} ({group[0]['renderer']}) | "
                     f"{np.mean(differences):.3f} | "
                     f"{max(differences):.3f} | {sum(row['within'] for row in group)}/{len(group)} | "
                     f"{np.mean([row['png_difference'] for row in group]):.3f} |")
    return "\n".join(lines)


def parseArgs(argv: list[str] | None) -> argparse.Namespace:
    """:return: the benchmark's settings"""
    parser = CLIParser(prog="python -m benchmarks.renderer_gtc", description=__doc__.split("\n\n")[0])
    envs = measuredEnvs()
    parser.add_argument("--envs", nargs="+", default=list(MOBILE_ROBOTS), choices=envs, metavar="ENV",
                        help=f"envs to measure, each against its other renderer: {', '.join(envs)} [the four mobile "
                        "robots]")
    parser.add_argument("--srl-model", default="vae", help="the model srl_models.train trains (one it can train: "
                        f"{', '.join(trainableModels())}) [vae]")
    parser.add_argument("--state-dim", type=positiveInt, default=8, help="state dimension [8]")
    parser.add_argument("--episodes", type=positiveInt, default=16, help="episodes of each dataset [16]")
    parser.add_argument("--max-steps", type=positiveInt, default=100, help="steps per episode [100]")
    parser.add_argument("--epochs", type=positiveInt, default=8, help="training epochs [8]")
    parser.add_argument("--batch-size", type=positiveInt, default=32, help="training batch size [32]")
    parser.add_argument("--seeds", type=seedNumber, nargs="+", default=[0, 1, 2],
                        help="training seeds: one model per seed and renderer [0 1 2]")
    parser.add_argument("--data-seed", type=seedNumber, default=0,
                        help="seed of both datasets and of the measured subset [0]")
    parser.add_argument("--max-samples", type=positiveInt, default=2000, help="most frames measured per GTC [2000]")
    parser.add_argument("--num-cpu", type=positiveInt, default=2, help="processes of the dataset generator [2]")
    parser.add_argument("--jobs", type=positiveInt, default=2, help="trainings at a time, one torch thread each [2]")
    parser.add_argument("--keep", type=nonEmptyText, metavar="DIR", default=None,
                        help="keep the datasets and models in DIR [a temporary folder, removed]")
    addResultsArguments(parser)
    args = parser.parse_args(argv)
    if args.srl_model not in trainableModels():  # srl_models.train would refuse it only after the datasets
        raise UsageError(f"--srl-model: unknown or not a trainable model {args.srl_model!r}; choose from "
                         f"{', '.join(trainableModels())}")
    if args.keep is not None:
        checkWritableFolder(args.keep, "--keep")
    args.seeds = list(dict.fromkeys(args.seeds))
    return args


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: one row per env and trained model
    """
    args = parseArgs(argv)
    packages = ("torch", "pybullet", "numpy")
    print(f"Machine: {machineDescription(packages)}", flush=True)
    load_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows: list[dict[str, Any]] = []
    timings: dict[str, dict[str, float]] = {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as temporary:
        scratch = os.path.abspath(args.keep) if args.keep else temporary
        for env_id in args.envs:
            env_rows, timings[env_id] = measureEnv(env_id, args, scratch)
            rows += env_rows
            for row in env_rows:
                print(f"  {env_id}, trained on {row['trained_on']}, seed {row['seed']}: GTC "
                      f"{row['gtc']['reference']:.3f} on {REFERENCE_RENDERER} frames, {row['gtc']['other']:.3f} on "
                      f"{row['renderer']} frames, |difference| {row['difference']:.3f}; {row['gtc_png']:.3f} on its "
                      f"renderer's PNG frames (reference |difference| {row['png_difference']:.3f})", flush=True)
            print(f"  {env_id}: same trajectory with both renderers; " + ", ".join(
                f"{part} {value:.0f} s" for part, value in timings[env_id].items()), flush=True)
    wall = time.perf_counter() - start
    markdown = table(rows) + "\n\nMeans over the seeds:\n\n" + summary(rows)
    within = sum(row["within"] for row in rows)
    print(markdown)
    print(f"{within}/{len(rows)} models within {BOUND:g}; {wall / 60:.1f} min in all")
    if not args.no_append:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        command = recordedCommand("benchmarks.renderer_gtc", argv)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        shared = ("other work shared the CPU: the times are longer than on a quiet machine"
                  if max(load_start, load) > cores else "a quiet machine")
        timing = "; ".join(f"{env_id}: " + ", ".join(f"{part} {value:.0f} s" for part, value in parts.items())
                           for env_id, parts in timings.items())
        notes = (f"Per env, two datasets of {args.episodes} random episodes of at most {args.max_steps} steps at "
                 f"64x64, seed {args.data_seed}, one per renderer (the same trajectory with both: actions, rewards, "
                 f"ground truth, targets identical, checked); `{args.srl_model}` trained on each by srl_models.train "
                 f"(state dimension {args.state_dim}, {args.epochs} epochs, batch size {args.batch_size}, seeds "
                 f"{' '.join(map(str, args.seeds))}, CPU, "
                 f"{'one training at a time' if args.jobs == 1 else f'{args.jobs} trainings side by side'} with one "
                 "torch thread each); "
                 f"each model's GTC (as srl_models.evaluate computes it: at most {args.max_samples} seeded frames of "
                 f"up to {args.episodes * args.max_steps}) on both renderers' frames, the same states; reference: its "
                 f"GTC on its own renderer's frames stored as PNG instead of JPEG (the same rows). Bound: "
                 f"|difference| <= {BOUND:g} (issue 27), reported, not asserted: {within}/{len(rows)} models within. "
                 f"Wall time {wall / 60:.1f} min ({timing}). Load average {load_start:.1f} at the start, {load:.1f} at "
                 f"the end on {cores} cores ({shared}).")
        others = sorted({row["renderer"] for row in rows})
        appendReport(f"GTC across renderers: TinyRenderer / {', '.join(others)}", command, notes, markdown,
                     packages=packages, target="bench-renderer-gtc", path=resultsPath(args))
    return rows


if __name__ == "__main__":
    runCommand(exitStatus(main))
