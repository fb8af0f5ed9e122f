"""Wall-clock time to a reward threshold on MobileRobot: the toolbox's ppo2 beside rl_zoo3's PPO, whole processes.

Three runs per seed (``--seeds``, 0 1 2 by default) on one machine, ``--workers`` at a time (2 by default: the two
programs' raw-pixel runs of a seed side by side, each on a core of its own; the learned runs after them), each a whole
process started by this script (interpreter start-up, imports, env construction, training, the periodic evaluations
and the saves all count), one torch thread each (``OMP_NUM_THREADS=1``), the same seed, env settings, evaluation
settings and PPO hyperparameters (ppo2's defaults, with its raw-pixel ones for raw pixels, and its default number of
envs, written into an rl_zoo3 hyperparameters file):

- ``toolbox raw_pixels``: ``python -m rl_baselines.train --algo ppo2 --srl-model raw_pixels`` at every default but
  the CNN, ``--features-extractor nature --precision float32`` (:data:`ZOO_CNN`, :data:`ZOO_PRECISION`: the NatureCNN
  of rl_zoo3's CnnPolicy in float32, so that the two programs train the same network the same way);
- ``toolbox <learned>``: the same on a learned representation (``--learned``, default srl_splits: the best learned
  row of the SRL + RL benchmark on this env), trained first by ``python -m srl_models.prepare`` at its defaults (its
  time is reported on its own line, not added to the run's);
- ``rl_zoo3 raw_pixels``: ``python -m rl_zoo3.train --algo ppo`` with ``--gym-packages environments``, the env's
  raw-pixel keywords, the hyperparameters file and the same evaluation frequency and episodes.

The time to the threshold is the wall time from the process's launch to the end of the first training episode that
ends at or after the first evaluation at or above the threshold (monitor files: their ``t_start`` and each episode's
``t``), so it is exact to within one episode. Raw pixels reach the threshold sooner on some seeds than on others, and
do not hold it (the deterministic evaluations swing), hence several seeds: the report gives each seed's row and, per
run, on how many seeds it reached the threshold and the median wall time to it over those. The threshold is the SRL +
RL benchmark's: 90% of ground truth's mean final evaluation reward over the runs of its default configuration in its
archive (benchmarks/srl_rl_runs.json; ppo2's default envs, 20 seeds on Nav 2D; when that mean is positive), unless
``--threshold`` gives one.

rl_zoo3 does not install beside the toolbox's pins (its Hugging Face integration pulls moviepy, which downgrades
pillow), so ``make bench-zoo`` installs rl_zoo3 and the few modules its train command imports, without their
dependencies, into ``.zoo-packages`` and only the rl_zoo3 process sees them.

``--hyperparam NAME:VALUE ...`` gives both programs the same ppo2 hyperparameters over its defaults (for example
``clip_range_vf:0.2``); those runs have folders of their own (``toolbox_raw_pixels__clip_range_vf-0.2``), so the
default runs' results stay.

Resumable: a finished run writes ``result.json`` in its folder under ``--bench-dir`` and is not run again with the
same settings; each run that ends prints ``[i/N, about X min left]`` over the runs this invocation makes. It takes
long (the README's command table gives the time per seed): start it with ``nice``. The default budget, 200,000 steps,
is about twice the steps at which raw pixels first reach the threshold under ppo2's raw-pixel default, as measured in
both programs (docs/benchmarks.md).

Usage: ``python -m benchmarks.zoo_compare [--budget 200000] [--eval-freq 10000] [--seeds 0 1 2] [--learned srl_splits]
[--threshold R] [--hyperparam NAME:VALUE ...] [--workers 2] [--bench-dir logs/bench_zoo] [--zoo-packages
.zoo-packages] [--quick] [--no-append]`` (``make bench-zoo``).
"""
from __future__ import annotations

import csv
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import numpy as np
import yaml

from benchmarks.documents import addResultsArguments, appendReport, recordedCommand, resultsPath
from benchmarks.progress import Countdown
from benchmarks.srl_rl import cli as srl_rl_cli
from benchmarks.srl_rl.analysis import rewardThreshold
from benchmarks.srl_rl.archive import archivedMatches, loadArchive
from benchmarks.srl_rl.env_plans import GROUND_TRUTH, MOBILE, PLANS
from benchmarks.srl_rl.plans import RUNS_FILE
from replay.results import evaluationStepsToThreshold
from rl_baselines.core.hyperparams import hyperparamPairs, plainValues
from rl_baselines.core.run_folder import EVALUATIONS_FILE, MONITOR_DIR, MONITOR_SUFFIX
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from srl_models.train_choices import trainableModels
from srl_toolbox.cli import CLIParser, UsageError, finiteFloat, nonEmptyText, positiveInt, runCommand, seedNumber
from srl_toolbox.files import atomicPath, writeJson

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = MOBILE
ZOO_CNN = "nature"  # SB3 CnnPolicy's features extractor, which rl_zoo3 builds: the toolbox's raw-pixel runs take it
ZOO_PRECISION = "float32"  # and what rl_zoo3 computes it in, whatever ppo2's default
PLAN = PLANS[MOBILE]
RESULT_FILE = "result.json"
ZOO_PACKAGES = os.path.join(ROOT, ".zoo-packages")


def groundTruthThreshold(archive_path: str = RUNS_FILE, env: str = ENV) -> float | None:
    """:return: the SRL + RL benchmark's threshold on ``env``: by its rule
    (:func:`benchmarks.srl_rl.analysis.rewardThreshold`: None without a run, or a mean not positive), over the archived
    ground-truth runs of its default configuration (its seeds, ppo2's default envs), not the runs of other grids the
    archive also keeps"""
    settings = srl_rl_cli.settingsFrom(srl_rl_cli.buildParser().parse_args(["--env", env, "--observations",
                                                                             GROUND_TRUTH]))
    plan = settings.plans[0]
    matches = archivedMatches(loadArchive(archive_path), settings, plan, settings.specs(plan), {})
    return rewardThreshold([float(record["eval_rewards"][-1]) for record in matches.values() if record["eval_rewards"]])


def pixelDefaults() -> dict[str, Any]:
    """:return: ppo2's raw-pixel defaults, where they differ from its defaults (typed, by name)"""
    return {name: spec.pixel_default for name, spec in PPO2Model.HYPERPARAMS.items() if spec.pixel_default is not None}


def pixelNote() -> str:
    """:return: ppo2's raw-pixel defaults in words, for the report"""
    return ", ".join(f"{name} {value}" for name, value in pixelDefaults().items()) or "the same"


def zooHyperparams(steps: int, given: dict[str, Any] | None = None) -> dict[str, Any]:
    """:return: rl_zoo3's hyperparameters file for the env: ppo2's raw-pixel defaults with ``given`` (typed ppo2
    hyperparameters) over them, as SB3 takes them, ppo2's default number of envs, CnnPolicy"""
    params = plainValues({**PPO2Model.DEFAULT_HYPERPARAMS, **pixelDefaults(), **(given or {})})
    return {ENV: {"n_envs": PPO2Model.DEFAULT_ENVS, "n_timesteps": steps, "policy": "CnnPolicy", **params}}


def toolboxCommand(observation: str, steps: int, eval_freq: int, seed: int, log_dir: str,
                   srl_config_file: str | None, given: dict[str, Any] | None = None) -> list[str]:
    """:return: the train command of one toolbox run: ``given`` ppo2 hyperparameters as ``--hyperparam``, raw pixels
    through :data:`ZOO_CNN` in :data:`ZOO_PRECISION`, every other setting at train's default"""
    command = ["-m", "rl_baselines.train", "--algo", "ppo2", "--env", ENV, "--srl-model", observation,
               "--num-timesteps", str(steps), "--eval-freq", str(eval_freq), "--eval-episodes",
               str(PLAN.eval_episodes), "--seed", str(seed), "--log-dir", log_dir, "--no-vis", "--no-progress"]
    command += ["--hyperparam", *(f"{name}:{value}" for name, value in given.items())] if given else []
    command += ["--features-extractor", ZOO_CNN, "--precision", ZOO_PRECISION] if observation == "raw_pixels" else []
    return command + (["--srl-config-file", srl_config_file] if srl_config_file else [])


def variantSuffix(given: dict[str, Any]) -> str:
    """:return: what the folders of runs with ``given`` hyperparameters add to their name ("" for ppo2's defaults),
    so that they never replace the default runs' results"""
    return "".join(f"__{name}-{value}" for name, value in sorted(given.items()))


def zooCommand(steps: int, eval_freq: int, seed: int, log_dir: str, hyperparams_file: str) -> list[str]:
    """:return: rl_zoo3's train command, with the raw-pixel env keywords the toolbox's train gives the env"""
    return ["-m", "rl_zoo3.train", "--algo", "ppo", "--env", ENV, "--gym-packages", "environments",
            "-conf", hyperparams_file, "--env-kwargs", "srl_model:'raw_pixels'", "is_discrete:True",
            "-n", str(steps), "--eval-freq", str(eval_freq), "--eval-episodes", str(PLAN.eval_episodes),
            "--seed", str(seed), "-f", log_dir, "--vec-env", "dummy"]


def readMonitor(path: str) -> tuple[float, np.ndarray, np.ndarray]:
    """:return: (the monitor's t_start, cumulative env steps at each episode end, seconds since t_start there)"""
    with open(path) as stream:
        header = json.loads(stream.readline().lstrip("#"))
        rows = list(csv.DictReader(stream))
    lengths = np.array([int(row["l"]) for row in rows], dtype=np.int64)
    return float(header["t_start"]), np.cumsum(lengths), np.array([float(row["t"]) for row in rows])


def secondsToStep(launch: float, monitor_file: str, step: int) -> float | None:
    """:return: wall seconds from ``launch`` to the end of the first episode ending at or after ``step``"""
    t_start, ends, seconds = readMonitor(monitor_file)
    index = int(np.searchsorted(ends, step))
    return None if index >= ends.size else t_start + float(seconds[index]) - launch


def runResult(folder: str, monitor_file: str, launch: float, wall: float, threshold: float) -> dict[str, Any]:
    """:return: what a finished run reports: steps and seconds to the threshold, final evaluation, wall time"""
    with np.load(os.path.join(folder, EVALUATIONS_FILE)) as data:  # SB3 EvalCallback's name: the zoo's runs too
        steps, rewards = data["timesteps"], data["results"].mean(axis=1)
    reach = evaluationStepsToThreshold(steps, rewards, threshold)
    return {"steps_to_threshold": reach, "final_eval": float(rewards[-1]) if rewards.size else None,
            "seconds_to_threshold": None if reach is None else secondsToStep(launch, monitor_file, reach),
            "wall_s": wall, "steps": int(readMonitor(monitor_file)[1][-1]) if os.path.getsize(monitor_file) else 0}


def timedRun(command: list[str], env: dict[str, str], log_file: str) -> tuple[float, float]:
    """Run ``python <command>`` with its output in ``log_file``; :return: (launch time, wall seconds)"""
    launch = time.time()
    with open(log_file, "w") as log:
        code = subprocess.run([sys.executable, *command], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
                              ).returncode
    if code != 0:
        raise RuntimeError(f"{' '.join(command[:3])} failed (exit {code}); see {log_file}")
    return launch, time.time() - launch


def childEnv(extra_path: str | None = None) -> dict[str, str]:
    """:return: the environment of a run: one torch thread; ``extra_path`` first on PYTHONPATH"""
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(
        path for path in (extra_path, ROOT, os.environ.get("PYTHONPATH")) if path))


def storedResult(folder: str, settings: dict[str, Any]) -> dict[str, Any] | None:
    """:return: the result a case's folder holds when it was made with the same settings, else None (it is run)"""
    result_path = os.path.join(folder, RESULT_FILE)
    if not os.path.isfile(result_path):
        return None
    with open(result_path) as stream:
        stored = json.load(stream)
    return stored if stored.get("settings") == settings else None


def runOnce(name: str, settings: dict[str, Any], bench_dir: str, threshold: float,
            build: Any, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """
    Run one case unless its folder already holds a result with the same settings.

    :param name: the case's folder name
    :param settings: what must match for a stored result to be reused
    :param bench_dir: the benchmark's folder
    :param threshold: the reward threshold
    :param build: ``build(folder) -> (command, environment, run folder glob, monitor file glob)``
    :param extra: facts of this invocation stored with the result when the run is made (not compared)
    :return: the run's result, with ``reused`` saying whether it came from an earlier invocation
    """
    folder = os.path.join(bench_dir, name)
    stored = storedResult(folder, settings)
    if stored is not None:
        return {**stored, "reused": True}
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    command, env, run_glob, monitor_glob = build(folder)
    print(f"{name}: python {' '.join(command)}\n", end="", flush=True)  # one write: runs start side by side
    launch, wall = timedRun(command, env, os.path.join(folder, "output.log"))
    run_folder = sorted(glob.glob(os.path.join(folder, run_glob)))[-1]
    monitor_file = sorted(glob.glob(os.path.join(run_folder, monitor_glob)))[0]
    result = {"settings": settings, "command": "python " + " ".join(command), **(extra or {}),
              **runResult(run_folder, monitor_file, launch, wall, threshold)}
    writeJson(os.path.join(folder, RESULT_FILE), result, sort_keys=False)
    return {**result, "reused": False}


def prepareModel(learned: str, bench_dir: str, quick: bool) -> tuple[str, float]:
    """
    Train the learned model with srl_models.prepare at its defaults, silent (its output in a log file), after one line
    that says so: the runs start only when it is done.

    :return: (its config file, wall seconds)
    """
    config_file = os.path.join(bench_dir, "srl_models.yaml")
    command = ["-m", "srl_models.prepare", "--env", ENV, "--srl-model", learned, "--data-folder",
               os.path.join(bench_dir, "data"), "--log-folder", os.path.join(bench_dir, "srl"),
               "--srl-config-file", config_file, "--no-progress"]
    if quick:
        command += ["--episodes", "2", "--epochs", "1"]
    log_file = os.path.join(bench_dir, f"prepare_{learned}.log")
    print(f"preparing the learned model {learned} on {ENV} (srl_models.prepare: a dataset and a training; may take "
          f"minutes, seconds when already prepared), before any run; log: {log_file}", flush=True)
    launch, wall = timedRun(command, childEnv(), log_file)
    return config_file, wall


def _fmt(value: float | None, unit: str = "", digits: int = 0) -> str:
    return "not reached" if value is None else f"{value:,.{digits}f}{unit}"


def table(rows: Sequence[tuple[str, int, dict[str, Any]]]) -> str:
    """:return: the markdown table of the runs: (row name, seed, result) each"""
    lines = ["| run | seed | steps to threshold | wall time to threshold | final eval reward "
             "| steps in finished episodes | whole process |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, seed, result in rows:
        lines.append(f"| {name} | {seed} | {_fmt(result['steps_to_threshold'])} "
                     f"| {_fmt(result['seconds_to_threshold'], ' s')} | {_fmt(result['final_eval'], digits=1)} "
                     f"| {result['steps']:,} | {result['wall_s']:,.0f} s |")
    return "\n".join(lines)


def summary(rows: Sequence[tuple[str, int, dict[str, Any]]]) -> str:
    """:return: one line per run: on how many seeds it reached the threshold, and the median time over those"""
    lines = []
    for name in dict.fromkeys(name for name, _, _ in rows):
        results = [result for row, _, result in rows if row == name]
        reached = [result for result in results if result["steps_to_threshold"] is not None]
        steps = [result["steps_to_threshold"] for result in reached]
        seconds = [result["seconds_to_threshold"] for result in reached if result["seconds_to_threshold"] is not None]
        median = (f": median {statistics.median(steps):,.0f} steps" if steps else "") + \
            (f", {statistics.median(seconds):,.0f} s" if seconds else "")
        lines.append(f"- {name}: reached the threshold on {len(reached)} of {len(results)} seed(s){median}")
    return "\n".join(lines)


def buildParser() -> CLIParser:
    parser = CLIParser(prog="python -m benchmarks.zoo_compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=positiveInt, default=200_000, help="env steps per run [200000]")
    parser.add_argument("--eval-freq", type=positiveInt, default=10_000, help="env steps between evaluations [10000]")
    parser.add_argument("--seeds", type=seedNumber, nargs="+", default=[0, 1, 2], help="seeds: 3 runs each [0 1 2]")
    parser.add_argument("--learned", default="srl_splits", help="the learned representation's SRL model [srl_splits]")
    parser.add_argument("--threshold", type=finiteFloat, default=None,
                        help="reward threshold [90%% of the archived ground-truth runs' final evaluation reward]")
    parser.add_argument("--bench-dir", type=nonEmptyText, default=os.path.join("logs", "bench_zoo"),
                        help="runs' folder [logs/bench_zoo]")
    parser.add_argument("--zoo-packages", default=ZOO_PACKAGES, help="where make bench-zoo installed rl_zoo3 "
                        "[.zoo-packages in the repository]")
    parser.add_argument("--hyperparam", nargs="+", default=[], metavar="NAME:VALUE",
                        help="ppo2 hyperparameters given to both programs over its defaults (the toolbox's --hyperparam, "
                             "rl_zoo3's hyperparameters file); their runs get folders of their own [none]")
    parser.add_argument("--workers", type=positiveInt, default=2,
                        help="runs at a time: 2 runs both programs' raw pixels side by side [2]")
    parser.add_argument("--quick", action="store_true", help="tiny runs (1,024 steps), to check the chain")
    addResultsArguments(parser, "the result")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = buildParser().parse_args(argv)
    given = hyperparamPairs(PPO2Model, args.hyperparam)
    suffix, variant = variantSuffix(given), "".join(f", {name} {value}" for name, value in given.items())
    learned = args.learned
    if learned not in trainableModels():  # what srl_models.prepare trains (a plugin's learned model: not)
        raise UsageError(f"--learned: unknown or not a trainable SRL model {learned!r}; choose from "
                         f"{', '.join(trainableModels())}")
    threshold = args.threshold if args.threshold is not None else groundTruthThreshold()
    if threshold is None:
        raise UsageError(f"--threshold: no archived ground-truth run of {ENV} with a positive mean final reward in "
                         f"{RUNS_FILE}; give one")
    if not os.path.isfile(os.path.join(args.zoo_packages, "rl_zoo3", "train.py")):
        raise UsageError(f"--zoo-packages: no rl_zoo3 in {args.zoo_packages}; run make bench-zoo (it installs it)")
    steps, eval_freq = (1024, 512) if args.quick else (args.budget, args.eval_freq)
    bench_dir = os.path.abspath(args.bench_dir + ("_quick" if args.quick else ""))
    os.makedirs(bench_dir, exist_ok=True)
    hyperparams_file = os.path.join(bench_dir, f"zoo_hyperparams{suffix}.yml")
    with atomicPath(hyperparams_file) as tmp_path, open(tmp_path, "w") as stream:
        yaml.safe_dump(zooHyperparams(steps, given), stream)
    config_file, prepare_s = prepareModel(learned, bench_dir, args.quick)
    common = {"steps": steps, "eval_freq": eval_freq, "threshold": threshold}
    if given:  # (absent for the defaults: the results made before the option stay reusable)
        common["hyperparams"] = {name: str(value) for name, value in given.items()}
    if PPO2Model.DEFAULT_ENVS != 1:  # (absent at one env: the results made with one stay reusable)
        common["n_envs"] = PPO2Model.DEFAULT_ENVS
    invocation = {"workers": args.workers}

    def buildToolbox(observation: str, seed: int) -> Callable[[str], tuple]:
        def build(folder: str) -> tuple:
            srl = config_file if observation == learned else None
            return (toolboxCommand(observation, steps, eval_freq, seed, folder, srl, given), childEnv(),
                    os.path.join("*", "*", "ppo2", "*"), os.path.join(MONITOR_DIR, "*" + MONITOR_SUFFIX))
        return build

    def buildZoo(seed: int) -> Callable[[str], tuple]:
        def build(folder: str) -> tuple:
            return (zooCommand(steps, eval_freq, seed, folder, hyperparams_file), childEnv(args.zoo_packages),
                    os.path.join("ppo", f"{ENV}_*"), "*" + MONITOR_SUFFIX)
        return build
    seeds = list(dict.fromkeys(args.seeds))
    # (row, seed, folder, observation, build, facts kept with a new result), in the order they start: each seed's two
    # raw-pixel runs (side by side with 2 workers), then the learned runs, which keep the time of the prepare that
    # trained their model (a later prepare reuses it in seconds)
    raw_name, zoo_name = f"toolbox ppo2, raw_pixels{variant}", f"rl_zoo3 ppo, raw_pixels{variant}"
    learned_name = f"toolbox ppo2, {learned}{variant}"
    cases = [case for seed in seeds for case in (
        (raw_name, seed, f"toolbox_raw_pixels{suffix}", "raw_pixels", buildToolbox("raw_pixels", seed), invocation),
        (zoo_name, seed, f"zoo_raw_pixels{suffix}", "raw_pixels", buildZoo(seed), invocation))]
    cases += [(learned_name, seed, f"toolbox_{learned}{suffix}", learned, buildToolbox(learned, seed),
               {**invocation, "prepare_s": prepare_s}) for seed in seeds]
    # a raw-pixel result made under other raw-pixel defaults is not reused
    defaults = pixelDefaults()
    pixel = {"pixel_defaults": {name: str(value) for name, value in defaults.items()}} if defaults else {}
    jobs = [(row, seed, os.path.join(f"seed_{seed}", folder),
             {**common, "seed": seed, "obs": observation, **(pixel if observation == "raw_pixels" else {})},
             build, extra) for row, seed, folder, observation, build, extra in cases]
    # the count and the time left are those of the runs this invocation makes (a stored result takes no time)
    countdown = Countdown(sum(storedResult(os.path.join(bench_dir, name), settings) is None
                              for _, _, name, settings, _, _ in jobs))
    print(f"{countdown.total} of {len(jobs)} run(s) to make ({len(jobs) - countdown.total} stored in {bench_dir})",
          flush=True)
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        futures = {pool.submit(runOnce, name, settings, bench_dir, threshold, build, extra): (row, seed)
                   for row, seed, name, settings, build, extra in jobs}
        done = {}
        for future in as_completed(futures):
            (row, seed), result = futures[future], future.result()
            done[row, seed] = result
            if not result["reused"]:
                print(f"{countdown.tick()} {row}, seed {seed}: "
                      f"{_fmt(result['steps_to_threshold'])} steps to the threshold, "
                      f"{result['wall_s']:,.0f} s in all", flush=True)
        rows = [(row, seed, done[row, seed]) for row in (raw_name, learned_name, zoo_name) for seed in seeds]
    prepare_s = next(result for row, _, result in rows if row == learned_name).get("prepare_s", prepare_s)
    workers = sorted({result.get("workers", 1) for _, _, result in rows})
    report = table(rows) + "\n\n" + summary(rows)
    print(report)
    print(f"prepare ({learned}): {prepare_s:,.0f} s (when its run was made)")
    if not args.no_append and not args.quick:
        appendReport(
            f"Time to threshold on {ENV}: the toolbox's ppo2 and rl_zoo3's PPO (whole processes)",
            recordedCommand("benchmarks.zoo_compare", argv),
            f"Seeds {' '.join(map(str, seeds))}, {steps:,} steps per run, an evaluation of {PLAN.eval_episodes} "
            f"episodes every {eval_freq:,} steps, threshold {threshold:.2f} (90% of ground truth's final reward in the "
            f"SRL + RL archive); ppo2's default hyperparameters{variant.replace(', ', ' with ', 1)} in both (rl_zoo3 "
            f"from a hyperparameters file; from raw pixels {pixelNote()}), one "
            f"env, one torch thread, {' or '.join(map(str, workers))} run(s) at a time (each a process on a core of "
            f"its own; with 2, both programs' raw pixels of a seed side by side). Wall time from the process's launch "
            f"to the end of the first episode at or after the evaluation that reached the threshold. The learned "
            f"model was trained by srl_models.prepare in {prepare_s:,.0f} s, not included.",
            report, packages=("torch", "stable_baselines3", "pybullet"), target="bench-zoo", path=resultsPath(args))
    return 0


if __name__ == "__main__":
    runCommand(main)
