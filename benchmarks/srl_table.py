"""SRL benchmark: every registered learned SRL model, trained on the same dataset, measured by GTC and KNN-MSE.

For each env (MobileRobotGymEnv-v0, KukaButtonGymEnv-v0) the script records one dataset with the real generator
(``python -m environments.dataset_generator``, random policy, seeded, 64x64), then trains every model of
``srl_models.registry.learnedModels()`` on it with the real command line (``python -m srl_models.train``, the same
state dimension, seed, epochs and batch size for all, pca and random, which train no loss, taking no epochs or batch
size; early stopping and best-epoch selection as the command does),
two at a time with one torch thread each, with ``--no-eval``: each model is then measured by ``python -m
srl_models.evaluate`` (the evaluation the train command runs at its end, as a separate command so that a failed one
is retried without training again), and the figures are read from the ``gt_correlation.json`` and ``knn_mse.json``
it writes into the model folder. A registered model that ``srl_models.train`` cannot train (a plugin with its own
training command) is listed as skipped, with the reason.

Reference rows: ``supervised`` (regresses the ground truth: the upper bound of a learned encoder) is also trained
with one state dimension per ground-truth dimension, ``random`` (a frozen random encoder) is the lower bound, and
``ground truth`` scores the true state itself on the same frames (GTC 1, the smallest KNN-MSE there is).

The state dimension is 8 by default: GTC keeps, for each ground-truth dimension, the best |correlation| over all
learned dimensions, so a wide state raises it by chance (a random encoder's GTC grows with the state size); 8 is
small enough for that to stay low and large enough for the split model (6 + 2) and for 3-D ground truth.

The table goes into docs/srl.md under :data:`SECTION` (replacing it when it exists: benchmarks.documents), with the
commands, the machine and the load; the model folders are printed, with a ``config/srl_models.yaml``-style mapping
to paste (the shipped file is left alone: a fresh clone has no such folders).

Usage: ``python -m benchmarks.srl_table [--quick] [--env ENV ...] [--state-dim 8] [--epochs 10] [--jobs 2] [--no-doc]``
(``make bench-srl``, whose time is in the README's command table; ``--quick`` runs every model on tiny datasets in a
temporary folder and writes nothing).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import numpy as np

from benchmarks.documents import (
    ONE_THREAD,
    checkDocument,
    machineDescription,
    makeNote,
    recordedCommand,
    replaceHeadingSection,
    rewriteDocument,
    shownCommand,
)
from benchmarks.progress import Countdown
from srl_models.metrics import gtCorrelation, knnMse
from srl_models.registry import learnedModels, registeredSRL
from srl_models.train_choices import trainableModels, trainsLoss
from srl_toolbox.cli import CLIParser, checkWritableFolder, positiveInt, runCommand, seedNumber

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MOBILE = "MobileRobotGymEnv-v0"
KUKA = "KukaButtonGymEnv-v0"
SECTION = "## Results on MobileRobot and KukaButton"
DOC_FILE = os.path.join(ROOT, "docs", "srl.md")
CONFIG_DIR = os.path.join(ROOT, "config")
GT_LABELS = {MOBILE: ("x", "y"), KUKA: ("x", "y", "z")}


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """
    The recorded dataset of one env.

    :param name: dataset name (folder under the data path)
    :param episodes: episodes to record
    :param max_steps: episode length cap (None: the env's own)
    """

    name: str
    episodes: int
    max_steps: int | None = None


# MobileRobot: 20 random episodes of 250 steps = 5000 frames. Kuka's random episodes end after about 25 steps (the arm
# leaves the work area or presses the button), so 160 episodes give about 4000 frames.
DATASETS = {MOBILE: DatasetSpec("srl_bench_mobile", 20, 250), KUKA: DatasetSpec("srl_bench_kuka", 160)}
QUICK_DATASETS = {MOBILE: DatasetSpec("srl_bench_mobile", 2, 40), KUKA: DatasetSpec("srl_bench_kuka", 6)}


@dataclasses.dataclass(frozen=True)
class Job:
    """
    One training: a registered model on one env's dataset.

    :param env: env id
    :param model: registered model name
    :param state_dim: --state-dim (None: the command's default, the ground truth's size for supervised)
    :param label: the table's model column
    """

    env: str
    model: str
    state_dim: int | None
    label: str


@dataclasses.dataclass
class Result:
    """
    What one training gave.

    :param job: the training
    :param command: the command line as run (relative paths)
    :param wall: seconds of the whole command (image loading and evaluation included)
    :param folder: the model folder (None on failure)
    :param error: the last line of a failed command
    :param metrics: gtc (per_dimension, mean), knn_mse, losses, epochs (from the folder's JSON files)
    """

    job: Job
    command: str
    wall: float
    folder: str | None = None
    error: str | None = None
    metrics: dict[str, Any] = dataclasses.field(default_factory=dict)


def datasetCommand(env: str, spec: DatasetSpec, seed: int, data_path: str, num_cpu: int) -> list[str]:
    """
    :param env: env id
    :param spec: what to record
    :param seed: master seed of the generator
    :param data_path: folder of the datasets
    :param num_cpu: generator processes
    :return: the generator's command line (without the interpreter)
    """
    return ["-m", "environments.dataset_generator", "--env", env, "--num-episode", str(spec.episodes),
            *(["--max-steps", str(spec.max_steps)] if spec.max_steps else []), "--name", spec.name,
            "--save-path", data_path, "--seed", str(seed), "--img-shape", "3", "64", "64",
            "--num-cpu", str(min(num_cpu, spec.episodes)), "--no-progress", "-f"]


def trainCommand(data_folder: str, job: Job, args: argparse.Namespace) -> list[str]:
    """
    :param data_folder: the dataset folder
    :param job: the training
    :param args: the benchmark's settings (epochs, batch size, seed, log folder)
    :return: the training command line (without the interpreter); pca and random, which train no loss, take no
        epochs or batch size
    """
    return ["-m", "srl_models.train", "--data-folder", data_folder, "--srl-model", job.model,
            *(["--state-dim", str(job.state_dim)] if job.state_dim else []),
            *(["--epochs", str(args.epochs), "--batch-size", str(args.batch_size)] if trainsLoss(job.model) else []),
            "--seed", str(args.seed), "--log-folder", args.log_folder, "--device", "cpu", "--no-eval", "--no-progress"]


def runProcess(command: list[str], log_path: str) -> tuple[int, str, float]:
    """
    Run ``python COMMAND`` from the repository root with one thread per library, its output into a log file.

    :param command: the command line without the interpreter
    :param log_path: where stdout and stderr go
    :return: (exit code, stdout and stderr, wall seconds)
    """
    env = {**os.environ, **ONE_THREAD}
    start = time.perf_counter()
    result = subprocess.run([sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True,
                            check=False)
    wall = time.perf_counter() - start
    output = result.stdout + result.stderr
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as log:
        log.write(f"$ {shownCommand(command)}\n{output}")
    return result.returncode, output, wall


def readMetrics(folder: str) -> dict[str, Any]:
    """
    :param folder: an evaluated model folder
    :return: gtc (per_dimension, mean), knn_mse, losses (text), epochs (text), n_samples
    :raises OSError, ValueError: the evaluation files are missing or unreadable
    """
    def load(name: str) -> dict[str, Any]:
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            return json.load(handle)

    config, gtc, knn = load("exp_config.json"), load("gt_correlation.json"), load("knn_mse.json")
    losses = " ".join(f"{name}:{weight:g}" for name, weight in config.get("losses", {}).items())
    if config.get("split_dims"):
        losses += " (dims " + ", ".join(f"{name} {dims}" for name, dims in config["split_dims"].items()) + ")"
    if "epochs_trained" in config:
        epochs = f"{config['epochs_trained']} (best {config['best_epoch']}, on {config.get('selected_on', 'val')})"
    else:
        epochs = "fit" if config["srl_model"] == "pca" else "untrained"
    return {"gtc": gtc, "knn_mse": float(knn["knn_mse"]), "k": int(knn.get("k", 5)),
            "n_samples": int(knn.get("n_samples", 0)), "state_dim": int(config["state_dim"]),
            "losses": losses or ("PCA of the images" if config["srl_model"] == "pca" else "none (frozen)"),
            "epochs": epochs}


def evaluateCommand(folder: str) -> list[str]:
    """
    :param folder: a model folder
    :return: the evaluation command line (without the interpreter), with the defaults of the train command's own
        evaluation (k 5, at most 2000 frames, seed 0, CPU)
    """
    return ["-m", "srl_models.evaluate", "--model-folder", folder, "--no-progress"]


def runTraining(job: Job, data_folder: str, args: argparse.Namespace) -> Result:
    """
    Train one model through the command line (--no-eval), then evaluate it with srl_models.evaluate and read the
    JSON files that writes. The evaluation is a separate command so that a failed one is retried once without
    training again.

    :param job: the training
    :param data_folder: the env's dataset
    :param args: the benchmark's settings
    :return: the result (with ``error`` set when a command failed)
    """
    command = trainCommand(data_folder, job, args)
    log_stem = os.path.join(args.log_folder, "bench_logs", f"{os.path.basename(data_folder)}_{job.label}")
    code, output, wall = runProcess(command, f"{log_stem}.log")
    result = Result(job, shownCommand(command), wall)
    folders = re.findall(r"^Model folder: (.+)$", output, re.MULTILINE)
    if code != 0 or not folders:
        lines = output.strip().splitlines() or ["no output"]
        result.error = f"exit {code}: {lines[-1][:200]} (log: {os.path.relpath(f'{log_stem}.log', ROOT)})"
        return result
    result.folder = os.path.join(ROOT, folders[-1].strip())  # printed relative to the repository root
    for _ in range(2):  # a failed evaluation is retried once (the shared checkout may be mid-edit)
        code, output, _ = runProcess(evaluateCommand(folders[-1].strip()), f"{log_stem}_evaluate.log")
        if code == 0:
            break
        time.sleep(30)
    try:
        result.metrics = readMetrics(result.folder)
    except (OSError, ValueError, KeyError) as error:
        lines = output.strip().splitlines() or ["no output"]
        result.error = f"evaluation failed ({lines[-1][:200]}): {error}"
    return result


def modelJobs(env: str, state_dim: int) -> tuple[list[Job], list[str]]:
    """
    :param env: env id
    :param state_dim: the common state dimension
    :return: (one job per trainable learned model plus the ground-truth-sized supervised reference, notes on the
        registered models that srl_models.train cannot train)
    """
    trainable = trainableModels()
    jobs, skipped = [], []
    for name in learnedModels():
        if name in trainable:
            jobs.append(Job(env, name, state_dim, name))
        else:
            module = registeredSRL()[name][0].__module__
            skipped.append(f"`{name}` ({module}): `srl_models.train` trains LearnedSRLModel and "
                           f"PCAModel classes; this one has its own training command")
    if "supervised" in trainable:
        jobs.append(Job(env, "supervised", None, "supervised (state dim = ground truth's)"))
    return jobs, skipped


def expectedCost(job: Job) -> int:
    """
    :param job: a training
    :return: a rough rank of its duration (decoders and several losses cost more), to start the long ones first
    """
    model_class = trainableModels()[job.model]
    losses = getattr(model_class, "DEFAULT_LOSSES", {}) or {}
    return len(losses) + (2 if losses and getattr(model_class, "DECODES", False) else 0)


def runAll(jobs: list[Job], data_folders: dict[str, str], args: argparse.Namespace) -> list[Result]:
    """
    :param jobs: every training, all envs together
    :param data_folders: env id -> dataset folder
    :param args: the benchmark's settings (jobs at a time)
    :return: the results, in the order of ``jobs``; each one is printed as it finishes, after the count and the time
        left (the trainings weighed by :func:`expectedCost`, plus one)
    """
    order = sorted(range(len(jobs)), key=lambda i: -expectedCost(jobs[i]))
    sizes = [expectedCost(job) + 1 for job in jobs]
    countdown = Countdown(len(jobs), work=sum(sizes))
    results: dict[int, Result] = {}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(runTraining, jobs[i], data_folders[jobs[i].env], args): i for i in order}
        for future in as_completed(futures):
            result = future.result()
            results[futures[future]] = result
            status = (f"GTC {result.metrics['gtc']['mean']:.3f}, KNN-MSE {result.metrics['knn_mse']:.4g}"
                      if not result.error else f"FAILED: {result.error}")
            print(f"{countdown.tick(sizes[futures[future]])} {result.job.env} {result.job.label}: {status} "
                  f"({result.wall:.0f} s)", flush=True)
    return [results[i] for i in range(len(jobs))]


def worseThanRandom(results: list[Result]) -> list[str]:
    """
    :param results: one env's results
    :return: labels of the models that score worse than ``random`` on both GTC and KNN-MSE (a sign of a bug or of
        too little training)
    """
    random_row = next((r for r in results if r.job.model == "random" and r.metrics), None)
    if random_row is None:
        return []
    return [r.job.label for r in results if r.metrics and r is not random_row
            and r.metrics["gtc"]["mean"] < random_row.metrics["gtc"]["mean"]
            and r.metrics["knn_mse"] > random_row.metrics["knn_mse"]]


def groundTruthRow(results: list[Result]) -> dict[str, Any] | None:
    """
    Score the ground truth itself on the frames the models were measured on.

    :param results: one env's results
    :return: gtc, knn_mse and a note, or None when no model was evaluated
    """
    evaluated = [r for r in results if not r.error]
    if not evaluated:
        return None
    with np.load(os.path.join(evaluated[0].folder, "states.npz")) as first:
        ground_truth, indices = first["ground_truth"], first["indices"]
    same = True
    for result in evaluated[1:]:
        with np.load(os.path.join(result.folder, "states.npz")) as other:
            same &= bool(np.array_equal(other["indices"], indices))
    return {"gtc": gtCorrelation(ground_truth, ground_truth),
            "knn_mse": knnMse(ground_truth, ground_truth, evaluated[0].metrics["k"]), "same_frames": same}


def markdownTable(env: str, results: list[Result], reference: dict[str, Any] | None) -> str:
    """
    :param env: env id (for the ground-truth dimension names)
    :param results: its results
    :param reference: :func:`groundTruthRow`
    :return: the markdown table
    """
    labels = GT_LABELS.get(env)
    per_dim_header = f"GTC per dimension ({', '.join(labels)})" if labels else "GTC per dimension"
    lines = [f"| model | losses | state dim | epochs run | GTC mean | {per_dim_header} | KNN-MSE | train time |",
             "|---|---|---:|---|---:|---|---:|---:|"]
    for result in results:
        if result.error:
            lines.append(f"| {result.job.label} | failed: {result.error} | | | | | | {result.wall:.0f} s |")
            continue
        metrics = result.metrics
        per_dim = ", ".join(f"{value:.3f}" for value in metrics["gtc"]["per_dimension"])
        lines.append(f"| {result.job.label} | {metrics['losses']} | {metrics['state_dim']} | {metrics['epochs']} | "
                     f"{metrics['gtc']['mean']:.3f} | {per_dim} | {metrics['knn_mse']:.4g} | {result.wall:.0f} s |")
    if reference:
        per_dim = ", ".join(f"{value:.3f}" for value in reference["gtc"]["per_dimension"])
        lines.append(f"| ground truth itself (reference) | none | {len(reference['gtc']['per_dimension'])} | | "
                     f"{reference['gtc']['mean']:.3f} | {per_dim} | {reference['knn_mse']:.4g} | |")
    return "\n".join(lines)


def yamlMapping(results: list[Result]) -> str:
    """
    :param results: every result
    :return: ``config/srl_models.yaml``-style text mapping each env to its trained folders (relative to config/,
        as that file reads them); the ground-truth-sized supervised reference is left out (one folder per name)
    """
    lines = []
    for env in dict.fromkeys(r.job.env for r in results):
        lines.append(f"{env}:")
        for result in results:
            if result.job.env == env and result.folder and result.job.state_dim is not None:
                lines.append(f"  {result.job.model}: {os.path.relpath(os.path.abspath(result.folder), CONFIG_DIR)}")
    return "\n".join(lines)


def foldersText(results: list[Result], temporary: bool) -> str:
    """
    :param results: every result
    :param temporary: the folders are in --quick's temporary folder, removed when the command ends
    :return: what the command prints of the model folders: each one (or its error), then the lines that register
        them in config/srl_models.yaml, unless they are temporary
    """
    lines = ["", "Model folders (temporary: removed at the end of --quick):" if temporary else "Model folders:"]
    lines += [f"  {result.job.env} {result.job.label}: {result.folder or result.error}" for result in results]
    if not temporary:
        lines += ["", "To use them by name, add to config/srl_models.yaml (paths relative to config/):",
                  yamlMapping(results)]
    return "\n".join(lines)


def sectionText(envs: list[str], tables: dict[str, str], dataset_commands: dict[str, str],
                dataset_notes: dict[str, str], results: list[Result], skipped: list[str], args: argparse.Namespace,
                facts: dict[str, str]) -> str:
    """
    :param envs: env ids, in order
    :param tables: env id -> markdown table
    :param dataset_commands: env id -> the generator command
    :param dataset_notes: env id -> what the dataset holds
    :param results: every result (for the model list and the notes)
    :param skipped: registered models not trained, with the reason
    :param args: the benchmark's settings
    :param facts: machine, load before/after, wall time, command
    :return: the docs/srl.md section
    """
    models = list(dict.fromkeys(r.job.model for r in results if r.job.state_dim is not None))
    first = next(r for r in results if r.job.state_dim is not None)
    template = first.command.replace(f"--srl-model {first.job.model}", "--srl-model $M")
    template = template.replace(f"data/{DATASETS[first.job.env].name}", "data/$DATA")
    reference = next((r for r in results if r.job.state_dim is None), None)
    k = next((r.metrics["k"] for r in results if r.metrics), 5)
    samples = {r.job.env: r.metrics["n_samples"] for r in results if r.metrics}
    parts = [
        SECTION, "",
        f"Written by `{facts['command']}`{makeNote('bench-srl', facts['command'])}; re-running replaces this "
        "section. Every registered "
        f"learned model is trained on the same dataset per env, with the same settings: state dimension "
        f"{args.state_dim}, seed {args.seed}, at most {args.epochs} epochs, batch size {args.batch_size} (but `pca` "
        "and `random`, which train no loss), the "
        "command's defaults otherwise (Adam 1e-3, 10% of the episodes held out, patience 10, the best epoch kept: the "
        "last at which a loss term reached a new low, on validation, on training for `robotic_priors`), "
        "on the CPU, two trainings at a time with one "
        "torch thread each. Each model is then measured by `python -m srl_models.evaluate` with its defaults, the "
        "evaluation the train command runs at its end (GTC and KNN-MSE with "
        f"k = {k} on a seeded sample of at most 2000 frames of the training dataset: "
        + ", ".join(f"{samples.get(env, '?')} on {env}" for env in envs)
        + "; the same frames for every model).",
        "",
        f"Why state dimension {args.state_dim}: GTC keeps the best |correlation| over all learned dimensions, so a "
        "wide state scores higher by chance (a random encoder of dimension 32 looks better than one of dimension "
        "8); a small common size keeps that bias low and equal for all models, and still leaves room for the "
        "split model and the 3-D ground truth of Kuka.",
        "",
        "How to read the rows: `supervised` regresses the ground truth, the upper bound of what an encoder can learn "
        "from these images (with a state larger than the ground truth, through a linear head, so its GTC is that of "
        "its best single dimension; the `supervised (state dim = ground truth's)` row has one state dimension per "
        "ground-truth dimension); `random` is a frozen randomly initialised encoder, the lower bound; `ground truth "
        "itself` scores the true state on the same frames (GTC 1 by definition, and the smallest KNN-MSE there is: "
        "what remains is the distance to the nearest recorded frames). KNN-MSE is in squared ground-truth units "
        "(MobileRobot: the arena's, Kuka: metres, hence its small values); lower is better. Train time = the whole "
        "training command (start-up and image loading included, evaluation not), beside another training on a "
        "shared machine: indicative only. Epochs run: how many ran (early stopping may end before the maximum) and "
        "which one was kept.",
        "",
        f"- Machine: {facts['machine']}",
        f"- Load (`uptime`): before `{facts['load_before']}`; after `{facts['load_after']}` (other work was running "
        "when the load average is above 2)",
        f"- Wall time of the whole benchmark: {facts['wall']}",
    ]
    if skipped:
        parts.append("- Not trained: " + "; ".join(skipped))
    parts += ["", "Commands (from the repository root; the script sets `OMP_NUM_THREADS=1` for each):", "", "```bash"]
    for env in envs:
        parts.append(dataset_commands[env])
    parts.append(f"for M in {' '.join(models)}; do   # DATA = {' or '.join(DATASETS[e].name for e in envs)}")
    parts.append(f"  {template}   # prints Model folder: F")
    parts.append(f"  {shownCommand(evaluateCommand('F'))}")
    parts.append("done")
    if reference:
        parts.append(reference.command.replace(f"data/{DATASETS[reference.job.env].name}", "data/$DATA")
                     + "   # supervised, state dim = the ground truth's")
    parts += ["```", ""]
    for env in envs:
        worse = worseThanRandom([r for r in results if r.job.env == env])
        verdict = (f"Worse than `random` on both scores: {', '.join(worse)}." if worse
                   else "No model scores worse than `random` on both scores.")
        parts += [f"### {env}", "", dataset_notes[env], "", tables[env], "", verdict, ""]
    return "\n".join(parts)


def datasetNote(data_folder: str) -> str:
    """
    :param data_folder: a recorded dataset
    :return: one line: episodes, frames, mean episode length, reward counts
    """
    with np.load(os.path.join(data_folder, "preprocessed_data.npz")) as data:
        starts, rewards = data["episode_starts"], data["rewards"]
    n_episodes = int(np.count_nonzero(starts))
    values, counts = np.unique(rewards, return_counts=True)
    reward_text = ", ".join(f"{value:g}: {count}" for value, count in zip(values, counts))
    return (f"Dataset `{os.path.relpath(data_folder, ROOT)}`: {n_episodes} episodes, {len(starts)} frames "
            f"(mean episode length {len(starts) / max(n_episodes, 1):.0f}), rewards per value {{{reward_text}}}.")


def uptime() -> str:
    """:return: the ``uptime`` line (or the load averages when the command is missing)"""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average: " + ", ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> None:
    """:param argv: command-line arguments; :raises UsageError: bad input, before any work"""
    parser = CLIParser(prog="python -m benchmarks.srl_table", description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", nargs="+", choices=list(DATASETS), default=list(DATASETS), help="envs [both]")
    parser.add_argument("--state-dim", type=positiveInt, default=8, help="state dimension of every model [8]")
    parser.add_argument("--epochs", type=positiveInt, default=10, help="maximum epochs of every model [10]")
    parser.add_argument("--batch-size", type=positiveInt, default=64, help="minibatch size [64]")
    parser.add_argument("--seed", type=seedNumber, default=0, help="seed of the datasets and the trainings [0]")
    parser.add_argument("--jobs", type=positiveInt, default=2, help="trainings at a time (and generator processes) [2]")
    parser.add_argument("--data-path", default="data", help="folder of the datasets [data]")
    parser.add_argument("--log-folder", default=os.path.join("logs", "srl_bench"), help="root of the model folders "
                        "[logs/srl_bench]")
    parser.add_argument("--doc", default=DOC_FILE, help="markdown file whose results section is replaced (added at "
                        "the end of a file without it; a new file in an existing folder is made) [docs/srl.md]")
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing it")
    parser.add_argument("--quick", action="store_true", help="tiny datasets, 1 epoch, in a temporary folder: checks "
                        "that every model runs; writes nothing")
    args = parser.parse_args(argv)
    args.doc = os.path.abspath(args.doc)
    os.chdir(ROOT)  # the data and log paths are relative to the repository root, as in the recorded commands
    if not args.quick:  # (--quick writes in a temporary folder of its own)
        checkWritableFolder(args.data_path, "--data-path")
        checkWritableFolder(args.log_folder, "--log-folder")
        if not args.no_doc:
            checkDocument(args.doc, "--doc")
    script_command = recordedCommand("benchmarks.srl_table", argv)
    scratch = tempfile.TemporaryDirectory(prefix="srl_table_") if args.quick else None
    specs = QUICK_DATASETS if args.quick else DATASETS
    if scratch:
        args.data_path, args.log_folder, args.epochs = (os.path.join(scratch.name, "data"),
                                                        os.path.join(scratch.name, "logs"), 1)
    facts = {"command": script_command, "machine": machineDescription(("torch", "numpy", "pybullet")),
             "load_before": uptime()}
    print(f"Machine: {facts['machine']}\nLoad: {facts['load_before']}", flush=True)
    start = time.perf_counter()

    data_folders, dataset_commands, dataset_notes = {}, {}, {}
    for env in args.env:
        command = datasetCommand(env, specs[env], args.seed, args.data_path, args.jobs)
        print(f"Recording: {shownCommand(command)}", flush=True)
        log_path = os.path.join(args.log_folder, "bench_logs", f"{specs[env].name}_dataset.log")
        code, output, wall = runProcess(command, log_path)
        if code != 0:
            sys.exit(f"error: the dataset of {env} failed (exit {code}): {output.strip().splitlines()[-1:]}")
        data_folders[env] = os.path.join(args.data_path, specs[env].name)
        dataset_commands[env] = shownCommand(command)
        dataset_notes[env] = datasetNote(os.path.join(ROOT, data_folders[env])) + f" Recorded in {wall:.0f} s."
        print(dataset_notes[env], flush=True)

    jobs, skipped = [], []
    for env in args.env:
        env_jobs, skipped = modelJobs(env, args.state_dim)
        jobs += env_jobs
    for note in skipped:
        print(f"skipped: {note}")
    results = runAll(jobs, data_folders, args)
    elapsed = time.perf_counter() - start
    facts["load_after"] = uptime()
    facts["wall"] = f"{elapsed / 60:.1f} min (datasets and {len(jobs)} trainings)"

    tables = {}
    for env in args.env:
        env_results = [r for r in results if r.job.env == env]
        reference = groundTruthRow(env_results)
        if reference and not reference["same_frames"]:
            print(f"warning: the models of {env} were not measured on the same frames", file=sys.stderr)
        tables[env] = markdownTable(env, env_results, reference)
        print(f"\n{env}\n{tables[env]}")
        for label in worseThanRandom(env_results):
            print(f"warning: {env} {label} scores worse than random on both GTC and KNN-MSE", file=sys.stderr)
    print(foldersText(results, temporary=args.quick))
    print(f"\n{len(jobs)} trainings; wall time {facts['wall']}; load after: {facts['load_after']}")
    section = sectionText(args.env, tables, dataset_commands, dataset_notes, results, skipped, args, facts)
    if args.quick or args.no_doc:
        if args.no_doc and not args.quick:
            print("\n" + section)
    else:
        rewriteDocument(args.doc, lambda text: replaceHeadingSection(text, SECTION, section))
        print(f"wrote the section {SECTION[3:]!r} of {os.path.relpath(args.doc)}")
    if scratch:
        scratch.cleanup()
    if any(r.error for r in results):
        sys.exit(1)


if __name__ == "__main__":
    runCommand(main)
