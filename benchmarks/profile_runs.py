"""Where the time of a whole training run goes: py-spy samples of every process, sorted into what the work is.

Each case runs ``rl_baselines.train --algo ppo2`` as a user would (ppo2's default number of envs and vec env unless
``--num-cpu`` names one, its evaluations included, as the SRL table's runs are) under ``py-spy record
--subprocesses``, so that the env worker processes, the forkserver's children and the main process are all sampled
(cProfile of the main process sees the workers only as waits on a pipe). Idle threads are not sampled: the figures
are samples of threads that run or wait for a core (py-spy reads a thread's state R as active), summed over the
processes. Where the run's processes outnumber the cores, a woken env worker waiting for a core is sampled in its
pipe's recv (inter-process): the table gives the machine's busy CPU seconds over the run (``/proc/stat``) beside the
sampled ones.

Every sample is put in the first category whose rule matches its stack (outermost work first):

- start-up: imports, building the envs and the model, loading the encoder: anything outside PPO's ``learn``;
- evaluation: the deterministic evaluation episodes (their rendering, encoding and policy included);
- PPO update: ``PPO.train`` (minibatches, backward passes, Adam), and the threads of the CNN's shards
  (``rl_baselines.rl_algorithm.sharded_features``: they run only inside it);
- encode: the frozen SRL encoder (in the main process or in the env workers);
- render: the env's camera image (TinyRenderer's getCameraImage, or the sprite renderer);
- physics: the rest of the env's step and reset (PyBullet simulation, reward, bookkeeping);
- inter-process: pipes, pickling and the subprocess vec env's own work;
- logging: monitor files, the logger, checkpoints, progress, visdom;
- policy forward: the policy's forward passes while collecting rollouts;
- other: the rest of the rollout loop (buffers, normalisation, callbacks).

Usage: ``python -m benchmarks.profile_runs [--cases mobile-raw mobile-vae kuka-raw kuka-vae] [--renderers ...]
[--num-cpu N] [--steps N] [--rate HZ] [--keep DIR] [--no-append]`` (also ``make profile``). Needs py-spy (the
``profile`` extra: ``pip install -e .[profile]``).
"""
from __future__ import annotations

import collections
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from benchmarks.command import exitStatus
from benchmarks.documents import addResultsArguments, appendReport, recordedCommand, resultsPath
from benchmarks.srl_speed import trainVAE
from environments import getEnvClass
from environments.srl_env import RENDERERS
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from srl_toolbox.cli import CLIParser, checkWritableFolder, nonEmptyText, positiveInt, runCommand

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOBILE, KUKA = "MobileRobotGymEnv-v0", "KukaButtonGymEnv-v0"


@dataclasses.dataclass(frozen=True)
class Case:
    """One profiled run: the env, its observation and its evaluations, as the SRL table runs it."""

    env: str
    observation: str  # raw_pixels, ground_truth or vae (a VAE trained in the benchmark)
    flags: tuple[str, ...] = ()  # env flags of the dataset and of the run
    run_flags: tuple[str, ...] = ()
    eval_episodes: int = 2


CASES = {
    "mobile-raw": Case(MOBILE, "raw_pixels"),
    "mobile-vae": Case(MOBILE, "vae"),
    "mobile-gt": Case(MOBILE, "ground_truth"),
    "kuka-raw": Case(KUKA, "raw_pixels", ("--random-target",), ("--force-down",), 1),
    "kuka-vae": Case(KUKA, "vae", ("--random-target",), ("--force-down",), 1),
    "kuka-gt": Case(KUKA, "ground_truth", ("--random-target",), ("--force-down",), 1),
}
DEFAULT_CASES = ("mobile-raw", "mobile-vae", "kuka-raw", "kuka-vae")

# (category, pattern searched in the stack of frames joined by ";"), in order: the first match wins.
RULES = (
    ("evaluation", re.compile(r"evaluate_policy|EvalCallback|rl_baselines/runs/evaluation\.py")),
    ("PPO update", re.compile(r"PPO\.train \(stable_baselines3|sharded_features\.py")),
    ("encode", re.compile(r"SRLEncoderVecEnv\.encode|WorkerEncoder\.|getState \(srl_models")),
    ("render", re.compile(r"_cameraImage|sprite_renderer\.py|getObservation|_render|\.render \(environments")),
    ("physics", re.compile(r"\(environments/")),
    ("logging", re.compile(r"monitor\.py|logger\.py|run_logging|visdom|checkpoint|tqdm|\.save \(|dump")),
    ("inter-process", re.compile(r"multiprocessing/|pickle|subproc_vec_env\.py")),
    ("policy forward", re.compile(r"policies\.py|torch/")),
)
CATEGORIES = ("start-up", *(name for name, _ in RULES), "other")
LEARN = re.compile(r"OnPolicyAlgorithm\.learn \(|_worker \(stable_baselines3|sharded_features\.py")


def categorise(stack: str) -> str:
    """
    :param stack: one py-spy raw (collapsed) stack, frames joined by ";" outermost first, process frames included
    :return: its category (one of CATEGORIES)
    """
    if not LEARN.search(stack):
        return "start-up"
    for name, pattern in RULES:
        if pattern.search(stack):
            return name
    return "other"


def readProfile(path: str) -> dict[str, int]:
    """
    :param path: py-spy's ``--format raw`` output (one "stack count" per line)
    :return: samples per category
    """
    counts: collections.Counter[str] = collections.Counter()
    with open(path) as handle:
        for line in handle:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if stack:
                counts[categorise(stack)] += int(count)
    return dict(counts)


def trainArguments(case: Case, renderer: str, steps: int, log_dir: str, model_folder: str | None,
                   num_cpu: int | None = None) -> list[str]:
    """
    :param num_cpu: envs of the run; None: ppo2's default (``--num-cpu`` left out, as a user leaves it)
    :return: the train command's arguments for one case (evaluations every steps / 2)
    """
    envs = [] if num_cpu is None else ["--num-cpu", str(num_cpu)]
    arguments = ["--algo", "ppo2", "--env", case.env, "--num-timesteps", str(steps), *envs,
                 "--eval-freq", str(steps // 2), "--eval-episodes", str(case.eval_episodes), "--log-dir", log_dir,
                 "--no-vis", "--no-progress", "--seed", "0", *case.flags, *case.run_flags,
                 "--renderer", renderer]  # by name: whatever the env's default
    arguments += ["--srl-model-path", model_folder] if case.observation == "vae" else ["--srl-model", case.observation]
    return arguments


def envsText(num_cpu: int | None) -> str:
    """:return: the runs' envs in words, for the report"""
    if num_cpu is None:
        return f"{PPO2Model.DEFAULT_ENVS} envs (its default, with its default --vec-env auto)"
    return "1 env" if num_cpu == 1 else f"{num_cpu} envs (--num-cpu {num_cpu})"


def machineBusySeconds() -> float | None:
    """:return: the CPU time all of this machine's cores have spent busy since boot, in seconds (``/proc/stat``: user,
    nice, system, irq and softirq); None where there is no ``/proc/stat``"""
    try:
        with open("/proc/stat") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(value) for value in fields[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def profileRun(py_spy: str, arguments: list[str], output: str, rate: int) -> tuple[float, float | None]:
    """
    :return: wall time of the whole train process (seconds), sampled by py-spy into ``output``, and the machine's
        busy CPU seconds meanwhile (:func:`machineBusySeconds`, py-spy's own sampling included; None: unknown)
    """
    command = [py_spy, "record", "--subprocesses", "--nonblocking", "--format", "raw", "--rate", str(rate), "-o",
               output, "--", sys.executable, "-m", "rl_baselines.train", *arguments]
    busy = machineBusySeconds()
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    wall = time.perf_counter() - start
    after = machineBusySeconds()
    return wall, None if busy is None or after is None else after - busy


def main(argv: list[str] | None = None) -> list[dict]:
    """:param argv: command-line arguments; :return: the rows; :raises UsageError: bad input, before any work"""
    parser = CLIParser(prog="python -m benchmarks.profile_runs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(DEFAULT_CASES),
                        help=f"runs to profile [{' '.join(DEFAULT_CASES)}]")
    parser.add_argument("--renderers", nargs="+", choices=RENDERERS, default=list(RENDERERS),
                        help="renderers, each a run of its own, of the cases whose env has them [all]")
    parser.add_argument("--num-cpu", type=positiveInt,
                        help=f"envs of each run [ppo2's default, {PPO2Model.DEFAULT_ENVS}, and its default vec env]")
    parser.add_argument("--steps", type=positiveInt, default=4096, help="training steps per run [4096]")
    parser.add_argument("--rate", type=positiveInt, default=100, help="py-spy samples per second [100]")
    parser.add_argument("--keep", type=nonEmptyText, help="folder to keep the raw profiles in (flame graphs: flamegraph.pl)")
    addResultsArguments(parser)
    args = parser.parse_args(argv)
    if args.keep is not None:
        checkWritableFolder(args.keep, "--keep")
    py_spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(py_spy):
        parser.error("py-spy is not installed (pip install -e .[profile], or make profile)")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        models: dict[str, str] = {}
        for name in args.cases:
            case = CASES[name]
            if case.observation == "vae" and case.env not in models:
                models[case.env] = trainVAE(os.path.join(scratch, case.env), 6, 2, case.env, case.flags)
            having = getEnvClass(case.env).RENDERERS
            for renderer in [renderer for renderer in args.renderers if renderer in having]:
                label = f"{case.env} {case.observation}, {renderer}"
                output = os.path.join(args.keep or scratch, f"{name}-{renderer}.txt")
                os.makedirs(os.path.dirname(output), exist_ok=True)
                arguments = trainArguments(case, renderer, args.steps, os.path.join(scratch, "runs"),
                                           models.get(case.env), args.num_cpu)
                wall, busy = profileRun(py_spy, arguments, output, args.rate)
                counts = readProfile(output)
                total = sum(counts.values())
                row = {"run": label, "wall": wall, "cpu": total / args.rate, "busy": busy,
                       **{category: counts.get(category, 0) / args.rate for category in CATEGORIES}}
                rows.append(row)
                print(f"{label}: {wall:.0f} s wall, {row['cpu']:.0f} s sampled: " + ", ".join(
                    f"{category} {100 * counts.get(category, 0) / total:.0f}%" for category in CATEGORIES), flush=True)
    header = "| run | wall s | sampled CPU s | machine busy s | " + " | ".join(CATEGORIES) + " |"
    lines = [header, "|---|---:|---:|---:|" + "---:|" * len(CATEGORIES)]
    for row in rows:
        busy = "?" if row["busy"] is None else f"{row['busy']:.0f}"
        lines.append(f"| {row['run']} | {row['wall']:.0f} | {row['cpu']:.0f} | {busy} | "
                     + " | ".join(f"{100 * row[category] / row['cpu']:.0f}%" for category in CATEGORIES) + " |")
    table = "\n".join(lines)
    print(table)
    if not args.no_append:
        command = recordedCommand("benchmarks.profile_runs", argv)
        appendReport(
            "Where a training run's time goes (py-spy, every process)", command,
            f"ppo2 at its default hyperparameters, {envsText(args.num_cpu)}, {args.steps} steps, deterministic "
            f"evaluations every {args.steps // 2} steps (2 episodes on MobileRobot, 1 on Kuka with --random-target "
            "--force-down); the VAE (state dim 32) is trained in the benchmark on 6 episodes for 2 epochs. py-spy "
            f"--subprocesses at {args.rate} Hz, idle threads not sampled: each category's column is its share of the "
            "samples of all the run's processes. py-spy samples a thread that runs or waits for a core (its state R): "
            "where the run's processes outnumber the cores, an env worker's wait for a core once woken is sampled in "
            "its pipe's recv (inter-process), and the sampled CPU seconds exceed the machine's busy time (/proc/stat "
            "over the run, py-spy's own sampling included). Wall time includes py-spy's start and the process's "
            "start-up. Categories: see the module docstring of benchmarks/profile_runs.py.",
            table, packages=("torch", "stable_baselines3", "pybullet"), target="profile", path=resultsPath(args))
    return rows


if __name__ == "__main__":
    runCommand(exitStatus(main))
