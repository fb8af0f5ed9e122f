"""SRL + RL benchmark: does a learned state representation help ppo2 learn? One table and one figure per env.

For each env of :data:`PLANS` (MobileRobotGymEnv-v0, the 2-D navigation task, and KukaButtonGymEnv-v0 with a random
target, the arm task) the script

1. prepares every learned observation of :data:`OBSERVATIONS` with ``python -m srl_models.prepare`` (one call per env
   with all the model names: one dataset per env, every model trained on it, evaluated (GTC, KNN-MSE) and registered
   in the benchmark's own SRL config file ``<bench-dir>/srl_models.yaml``, so that the user's config/srl_models.yaml
   is never touched; prepare reuses a dataset and the models whose settings did not change);
2. trains ppo2 on every observation, ``--seeds`` seeds each, with ``python -m rl_baselines.pipeline`` (one call per
   env, ``nice``-d): a fixed step budget per env and a deterministic evaluation every ``eval_freq`` steps
   (``--eval-freq``/``--eval-episodes`` of train, ``evaluations.npz`` in each run folder). The pipeline gives each
   run a deterministic folder and skips the finished ones, so the benchmark as a whole is resumable: a re-run does only
   what is missing. A finished run whose learned model was trained again since (the hash its ``srl_model.json``
   recorded differs from the registered model's) is deleted first, so that no table mixes two models;
3. analyses the finished runs of this configuration (exactly the runs the pipeline's grid names, so runs of other
   budgets or seeds in the same folder are ignored) and writes the section ``Does SRL help?`` of docs/srl.md (between
   :data:`START_MARKER` and :data:`END_MARKER`, replaced atomically on every run), one learning-curve PNG per env in
   docs/images/, and the steps/s of ppo2 per observation with the benchmark's wall time in docs/benchmarks.md.

Per env and observation, over the seeds: the final evaluation reward (mean of the last evaluation's episodes) as mean
+/- standard error; the steps to the threshold (the first evaluation at or above :data:`THRESHOLD_FRACTION` of
ground truth's mean final evaluation reward; the median over the seeds that reached it, and how many did); the area
under the evaluation curve divided by the steps it spans (so it reads as the mean evaluation reward over training, in
reward units: larger when a method learns sooner); the GTC of the representation (from prepare's evaluation); and the
p-value of Welch's t-test (``scipy.stats.ttest_ind(equal_var=False)``) of the final rewards against raw pixels. Beside
it: the published figures of Raffin et al. (:data:`ANCHOR`) and a comparison as fractions of ground truth. An
observation or a seed that has no finished run yet is marked as missing: the tables are written from what exists.

The speed table is appended to docs/benchmarks.md by the invocation that finishes the last missing run. ``--quick``
checks the whole chain (prepare on tiny datasets, about a thousand steps per run, 2 seeds, 3 observations) in a few
minutes, in its own folder, writing the section and the figures there rather than into docs/. ``--report-only``
rewrites the section and the figures from the finished runs without running anything.

Usage: ``python benchmarks/srl_rl.py [--quick] [--env ENV ...] [--observations OBS ...] [--seeds 3] [--budget ENV=STEPS
...] [--workers 2] [--report-only] [--no-doc] [--no-append]`` (``make bench-srl-rl``). ``--help`` explains the step
budgets.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks.report import appendReport, machineDescription  # noqa: E402
from srl_toolbox.cli import CLIParser, UsageError, checkWritableFolder, positiveInt, runCommand  # noqa: E402

MOBILE = "MobileRobotGymEnv-v0"
KUKA = "KukaButtonGymEnv-v0"
ALGO = "ppo2"
GROUND_TRUTH = "ground_truth"
RAW_PIXELS = "raw_pixels"
# The observations compared, in table order: the env's own two, then the learned models (prepared by
# srl_models.prepare), the reference encoders (supervised, random, pca) first.
OBSERVATIONS = (GROUND_TRUTH, RAW_PIXELS, "supervised", "random", "pca", "autoencoder", "vae", "inverse",
                "robotic_priors", "srl_combination", "srl_splits")
QUICK_OBSERVATIONS = (GROUND_TRUTH, RAW_PIXELS, "vae")
THRESHOLD_FRACTION = 0.9
SECTION_TITLE = "## Does SRL help?"
START_MARKER = "<!-- bench-srl-rl: start (written by benchmarks/srl_rl.py; edits inside are replaced) -->"
END_MARKER = "<!-- bench-srl-rl: end -->"
DOC_FILE = os.path.join(ROOT, "docs", "srl.md")
IMAGE_DIR = os.path.join(ROOT, "docs", "images")
DEFAULT_BENCH_DIR = os.path.join("logs", "bench_srl_rl")
QUICK_BENCH_DIR = os.path.join("logs", "bench_srl_rl_quick")
TIMING_FILE = "timing.json"
PAPER = ("Raffin et al., \"Decoupling feature extraction from policy learning: assessing benefits of state "
         "representation learning in goal based robotics\" (2019)")


@dataclasses.dataclass(frozen=True)
class EnvPlan:
    """
    What the benchmark runs on one env.

    :param env: env id
    :param task: the task's name in the paper's table
    :param steps: env steps per run
    :param eval_freq: env steps between two evaluations
    :param eval_episodes: episodes per evaluation
    :param flags: env flags shared by the dataset (prepare) and the runs (train), e.g. ``--random-target``
    :param episode_length: typical evaluation episode length, for the time estimate only
    :param prepare_flags: further prepare flags (the quick mode's tiny datasets)
    """

    env: str
    task: str
    steps: int
    eval_freq: int
    eval_episodes: int
    flags: tuple[str, ...] = ()
    episode_length: int = 250
    prepare_flags: tuple[str, ...] = ()


# Step budgets, chosen from measurements with ground truth (ppo2, 2 seeds, see BUDGET_NOTE) and the cost of the
# pixel-based runs; BUDGET_NOTE is shown by --help and written into the docs section.
PLANS = {
    MOBILE: EnvPlan(MOBILE, "Nav 2D", steps=50_000, eval_freq=5_000, eval_episodes=5),
    # a deterministic arm that has not learned yet plays the whole 1000 steps of an episode: 3 evaluation episodes
    KUKA: EnvPlan(KUKA, "Arm random target", steps=50_000, eval_freq=5_000, eval_episodes=3,
                  flags=("--random-target",), episode_length=500),
}
QUICK_PLANS = {
    MOBILE: EnvPlan(MOBILE, "Nav 2D", steps=1024, eval_freq=512, eval_episodes=1,
                    prepare_flags=("--episodes", "2", "--epochs", "1")),
    # an untrained deterministic arm often plays the whole 1000 steps of an episode: one short evaluation
    KUKA: EnvPlan(KUKA, "Arm random target", steps=512, eval_freq=512, eval_episodes=1, flags=("--random-target",),
                  episode_length=1000, prepare_flags=("--episodes", "10", "--epochs", "1")),
}
BUDGET_NOTE = (
    "Step budgets: ground truth should converge and the pixel-based runs be measured clearly, in about 3-4 hours on 2 "
    "cores. Measured with `python -m rl_baselines.train --algo ppo2 --srl-model ground_truth --no-vis` (seeds 0 and "
    "1, mean training reward of the last 50 episodes, exploration included): on MobileRobotGymEnv-v0 it is 208-212 "
    "after 30k steps, 223-228 after 40k and 226-230 up to 60k, so 50k steps (an evaluation of 5 episodes of 250 steps "
    "every 5k); on KukaButtonGymEnv-v0 with --random-target seed 0 reached about 60 (rewards per episode count the "
    "steps in contact with the button) after 30k steps and stayed at 36-60 up to 80k, while seed 1 was still near 0 "
    "after 40k (its arm avoided the table and hovered: 700-step episodes), so 50k steps (an evaluation of 3 episodes "
    "every 5k; an arm that has not learned plays whole 1000-step episodes): ground truth is slower and more "
    "seed-dependent there, and a longer budget (--budget KukaButtonGymEnv-v0=100000) costs about 2 hours more. The "
    "pixel-based runs take most of the time: rendering (and encoding) every frame, ppo2 runs about 170-280 steps/s on "
    "MobileRobot and about 100-150 on Kuka (TinyRenderer at about 175 frames/s), against about 1,800 and 700 with "
    "ground truth; 2 runs at a time on 2 cores. Estimate on 2 free cores: prepare about 30 minutes per env (9 models, "
    "one after the other), the runs about 1.2 hours on MobileRobot and 2.2 hours on Kuka: about 4.4 hours in all (the "
    "script prints its own estimate, and the time left as it goes).")

# Raffin et al., PPO, 10 seeds, state dim 200, 20k random-policy samples: mean reward +/- standard error at the end of
# training (navigation: at most 250 per episode; arm: at most 5). Keys: this project's observation names.
ANCHOR: dict[str, dict[str, tuple[float, float]]] = {
    GROUND_TRUTH: {MOBILE: (234.4, 1.3), KUKA: (4.2, 0.5)},
    "supervised": {MOBILE: (213.5, 6.0), KUKA: (3.1, 0.3)},
    RAW_PIXELS: {MOBILE: (231.5, 3.1), KUKA: (2.6, 0.3)},
    "random": {MOBILE: (208.0, 6.1), KUKA: (4.1, 0.3)},
    "autoencoder": {MOBILE: (192.6, 8.9), KUKA: (3.4, 0.3)},
    "srl_combination": {MOBILE: (183.6, 9.6), KUKA: (2.9, 0.3)},
    "srl_splits": {MOBILE: (232.1, 2.2), KUKA: (3.7, 0.3)},
    "robotic_priors": {MOBILE: (6.2, 3.1)},
}
ANCHOR_NOTE = (f"Paper: {PAPER}; PPO, 10 seeds, state dimension 200, 20k samples of a random policy, mean reward "
               "+/- standard error at the end of training (at most 250 on navigation, 5 on the arm). Their SRL splits: "
               "reconstruction + reward on 198 dimensions, inverse dynamics on 2, weights 1/1/2. The arm's rewards "
               "are on another scale here: KukaButtonGymEnv-v0 gives +1 for every step the gripper touches the button "
               "and ends an episode after 5 such steps in a row (or 1000 steps), so a return can reach the hundreds; "
               "compare the fractions of ground truth in the last column, not the rewards.")
# Rough steps/s of one ppo2 run beside another on 2 free cores, for the time estimate before any run finished (then
# the finished runs' own rates are used): docs/benchmarks.md has ppo2 at about 1,800 steps/s with ground truth on
# MobileRobot, 168 with raw pixels and 209-281 with a VAE; Kuka renders about 175 frames/s and steps about 700/s.
EXPECTED_RATE = {MOBILE: {GROUND_TRUTH: 1500.0, RAW_PIXELS: 168.0, "learned": 220.0},
                 KUKA: {GROUND_TRUTH: 600.0, RAW_PIXELS: 100.0, "learned": 125.0}}
EXPECTED_PREPARE_S = 200.0  # one learned model trained and evaluated by prepare, one after the other


# --- plans and commands ----------------------------------------------------------------------------------------------


def learnedObservations(observations: Sequence[str]) -> list[str]:
    """
    :param observations: observation names
    :return: those that are learned SRL models (prepared by ``srl_models.prepare``), in order
    """
    from srl_models.registry import learnedModels

    learned = set(learnedModels())
    return [name for name in observations if name in learned]


def shown(command: Sequence[str], nice: int = 0) -> str:
    """
    :param command: a command line without the interpreter
    :param nice: niceness it runs with (0: none)
    :return: it as typed in a shell from the repository root
    """
    return " ".join([*(["nice", "-n", str(nice)] if nice else []), "python", *(shlex.quote(part) for part in command)])


@dataclasses.dataclass
class Settings:
    """
    Everything one invocation of the benchmark runs and reads.

    :param plans: the envs' plans, in order
    :param observations: the observations compared, in table order
    :param learned: those prepared by ``srl_models.prepare``
    :param seeds: seeds per observation
    :param first_seed: the first seed (then +1, +2, ...)
    :param bench_dir: the benchmark's folder as given to the commands (relative to the repository root when inside
        it, so that the run ids do not depend on where the checkout lives)
    :param srl_seed: seed of the datasets and the SRL trainings
    :param prepare_extra: further prepare flags (state dimension, epochs, episodes)
    :param workers: runs at a time
    :param nice: niceness of prepare and the runs
    :param no_progress: no progress bars in prepare and the pipeline
    :param own_datasets: record the datasets in ``<bench-dir>/data`` (the quick mode's tiny ones) rather than in
        prepare's default folder, where other prepare commands with the same settings reuse them
    """

    plans: list[EnvPlan]
    observations: list[str]
    learned: list[str]
    seeds: int
    first_seed: int = 0
    bench_dir: str = DEFAULT_BENCH_DIR
    srl_seed: int = 0
    prepare_extra: list[str] = dataclasses.field(default_factory=list)
    workers: int = 2
    nice: int = 10
    no_progress: bool = False
    own_datasets: bool = False

    @property
    def config_file(self) -> str:
        """The benchmark's SRL config file, where prepare registers the models."""
        return os.path.join(self.bench_dir, "srl_models.yaml")

    @property
    def runs_dir(self) -> str:
        """Root of the run folders."""
        return os.path.join(self.bench_dir, "runs")

    @property
    def srl_dir(self) -> str:
        """Root of the SRL model folders."""
        return os.path.join(self.bench_dir, "srl")

    @property
    def timing_file(self) -> str:
        """The accumulated wall time of the stages."""
        return os.path.join(self.bench_dir, TIMING_FILE)

    def trainFlags(self, plan: EnvPlan) -> list[str]:
        """
        :param plan: an env's plan
        :return: the train flags every run of the env gets (besides algo, env, srl-model, seed)
        """
        return [*plan.flags, "--num-timesteps", str(plan.steps), "--eval-freq", str(plan.eval_freq),
                "--eval-episodes", str(plan.eval_episodes), "--srl-config-file", self.config_file]

    def pipelineCommand(self, plan: EnvPlan, observations: Sequence[str] | None = None) -> list[str]:
        """
        :param plan: an env's plan
        :param observations: the observations to run (default: all)
        :return: the pipeline command line (without the interpreter)
        """
        return ["-m", "rl_baselines.pipeline", "--algo", ALGO, "--env", plan.env, "--srl-model",
                *(self.observations if observations is None else observations), "--num-iteration", str(self.seeds),
                "--seed", str(self.first_seed), "--log-dir", self.runs_dir, "--workers", str(self.workers), "--no-vis",
                *(["--no-progress"] if self.no_progress else []), *self.trainFlags(plan)]

    def prepareCommand(self, plan: EnvPlan) -> list[str]:
        """
        :param plan: an env's plan
        :return: the prepare command line (without the interpreter): all the learned models at once, on one dataset
        """
        return ["-m", "srl_models.prepare", "--env", plan.env, "--srl-model", *self.learned, *plan.flags, "--seed",
                str(self.srl_seed), "--num-cpu", str(self.workers), "--log-folder", self.srl_dir, "--srl-config-file",
                self.config_file, *(["--data-folder", os.path.join(self.bench_dir, "data")] if self.own_datasets
                                    else []), *plan.prepare_flags, *self.prepare_extra,
                *(["--no-progress"] if self.no_progress else [])]

    def specs(self, plan: EnvPlan) -> list[Any]:
        """
        :param plan: an env's plan
        :return: the pipeline's run specs (rl_baselines.sweeps.sweep.RunSpec, with their run ids) of this configuration
        """
        from rl_baselines.sweeps.sweep import expandGrid

        return expandGrid([ALGO], [plan.env], self.observations, range(self.first_seed, self.first_seed + self.seeds),
                          self.trainFlags(plan), os.path.join(ROOT, self.runs_dir), ROOT)

    def fingerprint(self) -> str:
        """:return: a short hash of what the benchmark computes (keys the accumulated wall time)"""
        text = json.dumps([[dataclasses.asdict(plan) for plan in self.plans], self.observations, self.seeds,
                           self.first_seed, self.srl_seed, self.prepare_extra], sort_keys=True)
        return hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]


def finishedRunFolders(specs: Sequence[Any]) -> list[str]:
    """
    :param specs: run specs
    :return: the folders of those that finished (done.json), in spec order
    """
    from rl_baselines.sweeps.sweep import finishedFolder

    return [folder for spec in specs if (folder := finishedFolder(spec)) is not None]


# --- the prepared models ---------------------------------------------------------------------------------------------


def registeredModels(config_file: str, env: str) -> dict[str, str]:
    """
    :param config_file: the benchmark's SRL config file
    :param env: env id
    :return: model name -> absolute folder registered for the env (empty when the file or the env is missing)
    """
    from srl_models.config import SRLLookupError, configFolder, readSRLConfig

    try:
        mapping = readSRLConfig(config_file)
    except SRLLookupError:
        return {}
    return {name: configFolder(config_file, folder) for name, folder in mapping.get(env, {}).items()}


def modelFacts(folder: str) -> dict[str, Any]:
    """
    :param folder: a prepared model folder
    :return: gtc (mean, nan when not evaluated), state_dim, hash (None when the folder cannot be read)
    """
    from srl_models.config import describeSRLModel

    facts: dict[str, Any] = {"gtc": math.nan, "state_dim": None, "hash": None, "folder": folder}
    try:
        record = describeSRLModel(folder)
        facts.update(state_dim=record["state_dim"], hash=record["hash"])
    except (ValueError, OSError, KeyError):
        return facts
    try:
        with open(os.path.join(folder, "gt_correlation.json"), encoding="utf-8") as handle:
            facts["gtc"] = float(json.load(handle)["mean"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return facts


def dropStaleRuns(folders: Sequence[str], models: dict[str, dict[str, Any]]) -> list[str]:
    """
    Delete the finished runs whose learned model is no longer the registered one (trained again with other
    settings), so that the pipeline runs them again with the current model.

    :param folders: finished run folders
    :param models: model name -> :func:`modelFacts` of the registered model
    :return: the deleted folders
    """
    from srl_toolbox.files import readJson

    dropped = []
    for folder in folders:
        record_path = os.path.join(folder, "srl_model.json")
        if not os.path.isfile(record_path):
            continue
        record = readJson(record_path)
        current = models.get(record.get("name"))
        if current is not None and current["hash"] is not None and current["hash"] != record.get("hash"):
            shutil.rmtree(folder)
            dropped.append(folder)
    return dropped


# --- reading the runs ------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class RunRecord:
    """
    What the analysis needs from one finished run.

    :param run: the run as the comparison tools read it (args, episodes, evaluations)
    :param eval_steps: timesteps of the evaluations, shape (n,) (empty without evaluations.npz)
    :param eval_rewards: mean reward of each evaluation's episodes, shape (n,)
    :param rate: training steps per second of the monitor clock (evaluations included), nan when unknown
    :param wall: seconds of the whole train command (the sweep's done.json), nan when unknown
    """

    run: Any
    eval_steps: np.ndarray
    eval_rewards: np.ndarray
    rate: float = math.nan
    wall: float = math.nan

    @property
    def env(self) -> str:
        """The run's env id."""
        return str(self.run.args["env"])

    @property
    def observation(self) -> str:
        """The run's --srl-model."""
        return str(self.run.args["srl_model"])

    @property
    def seed(self) -> int:
        """The run's seed."""
        return int(self.run.args["seed"])

    @property
    def steps(self) -> int:
        """The env steps it was asked to train."""
        return int(self.run.args.get("num_timesteps", 0))


def loadRun(folder: str) -> RunRecord:
    """
    :param folder: a run folder of ``rl_baselines.train`` (args.json, monitor/, evaluations.npz when evaluated)
    :return: its record (empty evaluation arrays when it has no evaluations.npz)
    :raises OSError, ValueError, KeyError: args.json is missing or unreadable, or evaluations.npz is malformed
    """
    from replay.results import Run
    from rl_baselines.runs.evaluation import readEvaluations
    from rl_baselines.runs.monitor_files import loadEpisodes
    from srl_toolbox.files import readJson

    args = readJson(os.path.join(folder, "args.json"))
    if not isinstance(args, dict) or not all(key in args for key in ("env", "srl_model", "seed")):
        raise ValueError("args.json lacks env, srl_model or seed")
    episodes = loadEpisodes(os.path.join(folder, "monitor"))
    evaluations = readEvaluations(folder)
    run = Run(folder, args, episodes, evaluations)
    curve = run.evaluationCurve()
    steps, rewards = curve if curve is not None else (np.zeros(0), np.zeros(0))
    trained, clock = episodes["timesteps"], episodes["times"]
    rate = float(trained[-1] / clock.max()) if trained.size and clock.max() > 0 else math.nan
    marker = os.path.join(folder, "done.json")
    wall = float(readJson(marker).get("wall_time_s", math.nan)) if os.path.isfile(marker) else math.nan
    return RunRecord(run, steps, rewards, rate, wall)


# --- the analysis ----------------------------------------------------------------------------------------------------


def stepsToThreshold(steps: np.ndarray, rewards: np.ndarray, threshold: float) -> int | None:
    """
    :param steps: timesteps of the evaluations
    :param rewards: their mean rewards
    :param threshold: the reward to reach
    :return: the timestep of the first evaluation at or above ``threshold``, None when none is
    """
    reached = np.flatnonzero(np.asarray(rewards) >= threshold)
    return int(steps[reached[0]]) if reached.size else None


def normalisedArea(steps: np.ndarray, rewards: np.ndarray) -> float:
    """
    :param steps: timesteps of the evaluations (increasing)
    :param rewards: their mean rewards
    :return: the area under the evaluation curve (trapezoids) divided by the steps it spans, i.e. the mean evaluation
        reward over training; the single value for one evaluation, nan for none
    """
    if len(steps) == 0:
        return math.nan
    if len(steps) == 1:
        return float(rewards[0])
    return float(np.trapezoid(rewards, steps) / (steps[-1] - steps[0]))


def meanStandardError(values: Sequence[float]) -> tuple[float, float]:
    """
    :param values: one value per seed
    :return: (mean, standard error of the mean: sample std / sqrt(n)); nan error below 2 values
    """
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        return math.nan, math.nan
    if array.size < 2:
        return float(array.mean()), math.nan
    return float(array.mean()), float(array.std(ddof=1) / math.sqrt(array.size))


def welchPValue(values: Sequence[float], baseline: Sequence[float]) -> float:
    """
    :param values: a method's final rewards, one per seed
    :param baseline: the baseline's
    :return: the two-sided p-value of Welch's t-test (unequal variances); nan with fewer than 2 values on a side or
        no variance on both
    """
    from scipy import stats

    if len(values) < 2 or len(baseline) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both constant: nan, shown as n/a
        return float(stats.ttest_ind(values, baseline, equal_var=False).pvalue)


@dataclasses.dataclass
class ObservationSummary:
    """
    One row of an env's table.

    :param observation: the observation name
    :param runs: its finished runs with evaluations, by seed
    :param expected: runs this configuration asks for
    :param finals: final evaluation reward per run
    :param final: (mean, standard error) of the finals
    :param area: (mean, standard error) of :func:`normalisedArea`
    :param reach: steps to the threshold per run (None: not reached)
    :param p_value: Welch's test against raw pixels (nan when not computable)
    :param note: why the row is empty or incomplete
    """

    observation: str
    runs: list[RunRecord]
    expected: int
    finals: list[float]
    final: tuple[float, float]
    area: tuple[float, float]
    reach: list[int | None] = dataclasses.field(default_factory=list)
    p_value: float = math.nan
    note: str = ""


def summariseEnv(records: Sequence[RunRecord], observations: Sequence[str], expected: int,
                 notes: dict[str, str] | None = None) -> tuple[list[ObservationSummary], float | None]:
    """
    :param records: the env's finished runs
    :param observations: the rows, in order
    :param expected: runs per observation this configuration asks for
    :param notes: observation -> why it has no run (not prepared, ...)
    :return: (one summary per observation, the threshold: :data:`THRESHOLD_FRACTION` x ground truth's mean final
        evaluation reward, None without ground-truth runs or when that reward is not positive)
    """
    notes = notes or {}
    rows = []
    for name in observations:
        runs = sorted((r for r in records if r.observation == name and len(r.eval_steps)), key=lambda r: r.seed)
        without = sum(1 for r in records if r.observation == name and not len(r.eval_steps))
        finals = [float(r.eval_rewards[-1]) for r in runs]
        note = notes.get(name, "")
        if without:
            note = (note + "; " if note else "") + f"{without} finished run(s) without evaluations.npz"
        rows.append(ObservationSummary(name, runs, expected, finals, meanStandardError(finals),
                                       meanStandardError([normalisedArea(r.eval_steps, r.eval_rewards) for r in runs]),
                                       note=note))
    reference = next((row for row in rows if row.observation == GROUND_TRUTH and row.finals), None)
    threshold = None
    if reference is not None and reference.final[0] > 0:
        threshold = THRESHOLD_FRACTION * reference.final[0]
    baseline = next((row.finals for row in rows if row.observation == RAW_PIXELS), [])
    for row in rows:
        if threshold is not None:
            row.reach = [stepsToThreshold(r.eval_steps, r.eval_rewards, threshold) for r in row.runs]
        if row.observation != RAW_PIXELS:
            row.p_value = welchPValue(row.finals, baseline)
    return rows, threshold


def medianReach(row: ObservationSummary) -> float | None:
    """:return: the median steps to the threshold over the runs that reached it, None when none did"""
    reached = [steps for steps in row.reach if steps is not None]
    return float(np.median(reached)) if reached else None


def reachedShare(row: ObservationSummary) -> float:
    """:return: the share of the row's runs that reached the threshold (0 without runs)"""
    return sum(steps is not None for steps in row.reach) / len(row.runs) if row.runs else 0.0


def _pm(pair: tuple[float, float], digits: int) -> str:
    mean, error = pair
    if math.isnan(mean):
        return "n/a"
    return f"{mean:.{digits}f}" if math.isnan(error) else f"{mean:.{digits}f} +/- {error:.{digits}f}"


def anchorComparison(row: ObservationSummary, env: str, reference: ObservationSummary | None) -> tuple[str, str]:
    """
    Compare a row with the paper as fractions of ground truth's final reward (the tasks' reward scales are alike but
    not equal): "agrees" when the two fractions differ by less than twice their combined standard error (each
    error divided by its ground truth's mean), "higher here" / "lower here" otherwise.

    :param row: the row
    :param env: env id
    :param reference: the ground-truth row
    :return: (the paper's figure, the comparison)
    """
    published = ANCHOR.get(row.observation, {}).get(env)
    if published is None:
        return "not in the paper", "-"
    paper = f"{published[0]:.1f} +/- {published[1]:.1f}"
    paper_gt = ANCHOR[GROUND_TRUTH][env]
    if reference is None or not row.finals or math.isnan(reference.final[0]) or reference.final[0] <= 0:
        return paper, "n/a"
    here, here_error = row.final[0] / reference.final[0], row.final[1] / reference.final[0]
    there, there_error = published[0] / paper_gt[0], published[1] / paper_gt[0]
    text = f"{100 * here:.0f}% vs {100 * there:.0f}% of ground truth"
    if row.observation == GROUND_TRUTH:
        return paper, f"reference ({row.final[0] / paper_gt[0]:.2f}x the paper's reward)"
    spread = math.hypot(0.0 if math.isnan(here_error) else here_error, there_error)
    if abs(here - there) < 2 * spread:
        return paper, f"agrees: {text}"
    return paper, f"{'higher' if here > there else 'lower'} here: {text}"


def envTable(env: str, rows: Sequence[ObservationSummary], threshold: float | None,
             models: dict[str, dict[str, Any]]) -> str:
    """
    :param env: env id
    :param rows: its summaries
    :param threshold: its threshold (None: not defined)
    :param models: learned model name -> :func:`modelFacts`
    :return: the markdown table
    """
    reference = next((row for row in rows if row.observation == GROUND_TRUTH and row.finals), None)
    lines = ["| observation | runs | final eval reward (mean +/- SE) | steps to threshold (median, reached) | "
             "AUC / steps (mean +/- SE) | GTC (state dim) | p (Welch vs raw pixels) | paper (mean +/- SE) | "
             "here vs paper |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    digits = 1 if all(abs(r.final[0]) >= 20 for r in rows if r.finals) else 2
    for row in rows:
        paper, comparison = anchorComparison(row, env, reference)
        if row.observation == GROUND_TRUTH:
            gtc = "1 (the state itself)"
        elif row.observation == RAW_PIXELS:
            gtc = "- (pixels)"
        elif row.observation in models:
            facts = models[row.observation]
            gtc = "n/a" if math.isnan(facts["gtc"]) else f"{facts['gtc']:.3f}"
            if facts["state_dim"] is not None:
                gtc += f" ({facts['state_dim']})"
        else:
            gtc = "not prepared"
        runs = f"{len(row.runs)}/{row.expected}"
        if not row.runs:
            lines.append(f"| {row.observation} | {runs} | missing{': ' + row.note if row.note else ''} | | | {gtc} | | "
                         f"{paper} | |")
            continue
        if threshold is None:
            reach = "no threshold"
        else:
            median = medianReach(row)
            count = sum(steps is not None for steps in row.reach)
            reach = (f"not reached (0/{len(row.runs)})" if median is None
                     else f"{median:,.0f} ({count}/{len(row.runs)})")
        p_value = ("baseline" if row.observation == RAW_PIXELS
                   else "n/a" if math.isnan(row.p_value) else f"{row.p_value:.3g}")
        final = _pm(row.final, digits) + (f" ({row.note})" if row.note else "")
        lines.append(f"| {row.observation} | {runs} | {final} | {reach} | {_pm(row.area, digits)} | {gtc} | "
                     f"{p_value} | {paper} | {comparison} |")
    return "\n".join(lines)


def verdicts(rows: Sequence[ObservationSummary], threshold: float | None, learned: Sequence[str]) -> list[str]:
    """
    :param rows: an env's summaries
    :param threshold: its threshold
    :param learned: the learned observation names
    :return: sentences that answer the question from the figures
    """
    reference = next((row for row in rows if row.observation == GROUND_TRUTH and row.finals), None)
    pixels = next((row for row in rows if row.observation == RAW_PIXELS and row.finals), None)
    done = [row for row in rows if row.observation in learned and row.finals]
    sentences = []
    if reference is None:
        return ["No ground-truth run has finished yet: no threshold and no comparison."]
    if learned:
        level = reference.final[0] - (0.0 if math.isnan(reference.final[1]) else reference.final[1])
        close = [row.observation for row in done if row.final[0] >= level]
        sentences.append("Learned representations whose mean final reward is within one standard error of ground "
                         f"truth's or above ({level:.2f}): {', '.join(close) or 'none'}.")
    if threshold is not None and pixels is not None:
        pixel_median, pixel_share = medianReach(pixels), reachedShare(pixels)
        faster = [row.observation for row in done if (median := medianReach(row)) is not None
                  and (pixel_median is None or reachedShare(row) > pixel_share
                       or (reachedShare(row) == pixel_share and median < pixel_median))]
        pixel_text = ("raw pixels never reached it" if pixel_median is None
                      else f"raw pixels: median {pixel_median:,.0f} steps, {pixel_share:.0%} of the seeds")
        sentences.append(f"Reaching the threshold ({threshold:.2f}) with a larger share of the seeds than raw pixels, "
                         f"or as large a share in fewer steps ({pixel_text}): {', '.join(faster) or 'none'}.")
    if pixels is not None:
        different = [f"{row.observation} ({'better' if row.final[0] > pixels.final[0] else 'worse'})" for row in done
                     if not math.isnan(row.p_value) and row.p_value < 0.05]
        sentences.append(f"Final reward different from raw pixels' at p < 0.05 (Welch): "
                         f"{', '.join(different) or 'none'}.")
    return sentences


def curves(rows: Sequence[ObservationSummary]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """
    :param rows: an env's summaries
    :return: (label, evaluation timesteps, rewards of shape (runs, points)) per observation with runs, at the
        evaluation steps its runs share (replay.results.aggregateEvaluations)
    """
    from replay.results import aggregateEvaluations

    result = []
    for row in rows:
        if not row.runs:
            continue
        try:
            x, y = aggregateEvaluations([record.run for record in row.runs])
        except ValueError as error:
            print(f"warning: no curve for {row.observation}: {error}", file=sys.stderr)
            continue
        result.append((row.observation, x, y))
    return result


def plotEnv(path: str, plan: EnvPlan, rows: Sequence[ObservationSummary], threshold: float | None) -> None:
    """
    Write the env's learning curves (mean and 95% confidence band over seeds per observation) as a PNG, atomically.

    :param path: the PNG file
    :param plan: the env's plan
    :param rows: its summaries
    :param threshold: its threshold (in the title)
    """
    from replay.aggregate_plots import plotCurves

    title = f"ppo2 on {plan.env}" + (f" (threshold {threshold:.2f})" if threshold is not None else "")
    plotCurves(path, curves(rows), title, "env steps",
               f"evaluation reward (deterministic, mean of {plan.eval_episodes} episodes)")


# --- the docs --------------------------------------------------------------------------------------------------------


def replaceMarked(text: str, body: str) -> str:
    """
    :param text: a markdown document
    :param body: the section's new content (without its heading)
    :return: the document with the text between :data:`START_MARKER` and :data:`END_MARKER` replaced by ``body``
        (markers kept), or :data:`SECTION_TITLE`, the markers and ``body`` appended when the document has no markers.
        The heading stays outside the markers, so that a script replacing the section before it (up to the next
        level-2 heading, as benchmarks/srl_table.py does) never takes a marker with it.
    """
    body = body.strip("\n")
    start, end = text.find(START_MARKER), text.find(END_MARKER)
    if start >= 0 and end > start:
        return text[:start] + f"{START_MARKER}\n{body}\n" + text[end:]
    prefix = text.rstrip("\n") + "\n\n" if text.strip() else ""
    return f"{prefix}{SECTION_TITLE}\n\n{START_MARKER}\n{body}\n{END_MARKER}\n"


def writeMarked(path: str, body: str) -> None:
    """
    Replace (or append) the benchmark's section of a markdown file atomically (:func:`replaceMarked`); the file is
    created when missing.

    :param path: the markdown file
    :param body: the section's content, without its heading
    """
    from srl_toolbox.files import atomicPath

    text = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8") as handle:
        handle.write(replaceMarked(text, body))


def speedRows(records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """
    :param records: every finished run
    :return: per (env, observation): runs, steps per run, mean steps/s (monitor clock) and mean wall time per run
    """
    rows = []
    for key in dict.fromkeys((r.env, r.observation) for r in records):
        group = [r for r in records if (r.env, r.observation) == key]
        rates = [r.rate for r in group if not math.isnan(r.rate)]
        walls = [r.wall for r in group if not math.isnan(r.wall)]
        rows.append({"env": key[0], "observation": key[1], "runs": len(group), "steps": max(r.steps for r in group),
                     "rate": float(np.mean(rates)) if rates else math.nan,
                     "wall": float(np.mean(walls)) if walls else math.nan})
    return rows


def speedTable(rows: Sequence[dict[str, Any]]) -> str:
    """
    :param rows: :func:`speedRows`
    :return: the markdown table
    """
    lines = ["| env | observation | runs | steps per run | ppo2 steps/s | wall time per run |",
             "|---|---|---:|---:|---:|---:|"]
    for row in rows:
        rate = "n/a" if math.isnan(row["rate"]) else f"{row['rate']:,.0f}"
        wall = "n/a" if math.isnan(row["wall"]) else f"{row['wall'] / 60:.1f} min"
        lines.append(f"| {row['env']} | {row['observation']} | {row['runs']} | {row['steps']:,} | {rate} | {wall} |")
    return "\n".join(lines)


def duration(seconds: float) -> str:
    """:return: seconds as ``1 h 05 min``, ``12 min`` or ``40 s``"""
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def sectionText(plans: Sequence[EnvPlan], tables: dict[str, str], texts: dict[str, list[str]],
                images: dict[str, str], facts: dict[str, Any]) -> str:
    """
    :param plans: the envs' plans, in order
    :param tables: env -> markdown table
    :param texts: env -> verdict sentences
    :param images: env -> the PNG path relative to the document
    :param facts: command, seeds, machine, wall, thresholds (env -> value or None), commands (env -> list of str)
    :return: the section's content, without its heading (:data:`SECTION_TITLE`)
    """
    parts = [
        f"Written by `{facts['command']}` (`make bench-srl-rl`); re-running it replaces this section and does only "
        "what is missing (datasets, models and runs whose settings did not change are reused). ppo2 with its default "
        f"hyperparameters learns each task from each observation, {facts['seeds']} seeds each; every learned model of "
        "an env is trained on the same dataset by `python -m srl_models.prepare`, with its per-env defaults. A "
        "deterministic evaluation (separate env, same wrappers, normalisation statistics of the training env) runs "
        "every `eval_freq` steps.", "",
        "How to read the tables: *final eval reward* is the mean reward of the last evaluation's episodes, mean +/- "
        f"standard error over seeds; *threshold* = {THRESHOLD_FRACTION:.0%} of ground truth's mean final evaluation "
        "reward, and *steps to threshold* the first evaluation at or above it (median over the seeds that reached it, "
        "and how many did); *AUC / steps* is the area under the evaluation curve divided by the steps it spans (the "
        "mean evaluation reward over training: larger when a method learns sooner); *GTC* is the ground-truth "
        "correlation of the representation measured by prepare on its dataset; *p* is Welch's t-test "
        "(`scipy.stats.ttest_ind(equal_var=False)`) of the final rewards against raw pixels. *Here vs paper* "
        "compares fractions of each side's ground truth: *agrees* when they differ by less than twice their combined "
        "standard error. A row marked missing has no finished run yet.", "",
        BUDGET_NOTE, "",
        ANCHOR_NOTE, "",
        f"- Machine: {facts['machine']}",
        f"- Wall time of the benchmark: {facts['wall']}", "",
        "Commands (from the repository root):", "", "```bash", *facts["commands"], "```", "",
    ]
    for plan in plans:
        threshold = facts["thresholds"].get(plan.env)
        budget = (f"{plan.steps:,} steps per run, an evaluation of {plan.eval_episodes} episodes every "
                  f"{plan.eval_freq:,} steps" + (f" ({' '.join(plan.flags)})" if plan.flags else ""))
        threshold_text = (f"threshold {threshold:.2f}" if threshold is not None
                          else "no threshold (ground truth has no positive final reward yet)")
        parts += [f"### {plan.env} ({plan.task})", "", f"{budget}; {threshold_text}.", "", tables[plan.env], "",
                  *texts[plan.env], "", f"![ppo2 learning curves on {plan.env}]({images[plan.env]})", ""]
    return "\n".join(parts)


# --- timing and the time estimate ------------------------------------------------------------------------------------


def addTiming(path: str, key: str, stage: str, seconds: float) -> dict[str, float]:
    """
    Add a stage's seconds to the benchmark's accumulated wall time (summed over invocations), atomically.

    :param path: the timing file
    :param key: the settings' fingerprint
    :param stage: the stage's name
    :param seconds: seconds it took this time
    :return: the accumulated seconds per stage of these settings
    """
    from srl_toolbox.files import readJson, writeJson

    data = readJson(path) if os.path.isfile(path) else {}
    stages = data.setdefault(key, {})
    stages[stage] = stages.get(stage, 0.0) + seconds
    writeJson(path, data)
    return stages


def expectedRunSeconds(plan: EnvPlan, observation: str, measured: dict[tuple[str, str], float]) -> float:
    """
    :param plan: the env's plan
    :param observation: the observation
    :param measured: (env, observation) -> steps/s of its finished runs
    :return: a guess of one run's seconds, training and evaluations
    """
    kind = observation if observation in (GROUND_TRUTH, RAW_PIXELS) else "learned"
    rate = measured.get((plan.env, observation)) or EXPECTED_RATE.get(plan.env, {}).get(kind, 200.0)
    evaluation = (plan.steps // plan.eval_freq) * plan.eval_episodes * plan.episode_length
    return 5.0 + plan.steps / rate + evaluation / (1.25 * rate)  # evaluation steps skip the updates


def missingRuns(specs: Sequence[Any]) -> dict[str, int]:
    """
    :param specs: an env's run specs
    :return: observation -> runs not finished yet
    """
    from rl_baselines.sweeps.sweep import finishedFolder

    missing: dict[str, int] = {}
    for spec in specs:
        if finishedFolder(spec) is None:
            missing[spec.srl_model] = missing.get(spec.srl_model, 0) + 1
    return missing


def loadRuns(folders: Sequence[str]) -> list[RunRecord]:
    """
    :param folders: finished run folders
    :return: their records (an unreadable one is skipped with a warning)
    """
    records = []
    for folder in folders:
        try:
            records.append(loadRun(folder))
        except (OSError, ValueError, KeyError) as error:
            print(f"warning: skipping {folder}: {error}", file=sys.stderr)
    return records


def estimateSeconds(settings: Settings, plan: EnvPlan, measured: dict[tuple[str, str], float],
                    from_scratch: bool = False) -> float:
    """
    :param settings: the benchmark's settings
    :param plan: an env's plan
    :param measured: (env, observation) -> steps/s of finished runs
    :param from_scratch: every model and run, whatever exists already
    :return: the seconds its prepare (models not registered yet) and its missing runs are expected to take
    """
    prepared = {} if from_scratch else registeredModels(settings.config_file, plan.env)
    to_prepare = sum(1 for name in settings.learned if name not in prepared)
    missing = ({name: settings.seeds for name in settings.observations} if from_scratch
               else missingRuns(settings.specs(plan)))
    runs = sum(count * expectedRunSeconds(plan, name, measured) for name, count in missing.items())
    return to_prepare * EXPECTED_PREPARE_S + runs / settings.workers


# --- running ---------------------------------------------------------------------------------------------------------


class _Stopped(BaseException):
    """SIGTERM: stop the stage in flight like a Ctrl-C."""


def _raiseStopped(signum: int, frame: Any) -> None:
    raise _Stopped()


def runStage(command: Sequence[str], nice: int) -> int:
    """
    Run ``python COMMAND`` from the repository root, niced, its output on this terminal. On Ctrl-C (which reaches it
    too) or SIGTERM (passed on) it gets a minute to stop its own runs cleanly before it is killed.

    :param command: the command line without the interpreter
    :param nice: niceness
    :return: its exit code
    """
    prefix = ["nice", "-n", str(nice)] if nice and shutil.which("nice") else []
    process = subprocess.Popen([*prefix, sys.executable, *command], cwd=ROOT)
    previous = signal.signal(signal.SIGTERM, _raiseStopped)
    try:
        return process.wait()
    except (KeyboardInterrupt, _Stopped) as stop:
        if isinstance(stop, _Stopped) and process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raise KeyboardInterrupt from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def prepareEnv(settings: Settings, plan: EnvPlan) -> tuple[list[str], bool]:
    """
    Prepare the env's learned models and drop the runs made with models that were trained again since.

    :param settings: the benchmark's settings
    :param plan: the env's plan
    :return: (the observations that can run, whether prepare failed for some)
    """
    command = settings.prepareCommand(plan)
    print(f"\n[{plan.env}] preparing {len(settings.learned)} learned models: {shown(command, settings.nice)}",
          flush=True)
    began = time.perf_counter()
    code = runStage(command, settings.nice)
    addTiming(settings.timing_file, settings.fingerprint(), f"prepare {plan.env}", time.perf_counter() - began)
    models = {name: modelFacts(folder) for name, folder in registeredModels(settings.config_file, plan.env).items()}
    absent = [name for name in settings.learned if name not in models or models[name]["hash"] is None]
    if code != 0 or absent:
        print(f"warning: prepare exited with code {code}; not usable on {plan.env}: {', '.join(absent) or 'none'} "
              "(their rows stay missing)", file=sys.stderr, flush=True)
    for folder in dropStaleRuns(finishedRunFolders(settings.specs(plan)), models):
        print(f"dropped {os.path.relpath(folder, ROOT)}: its SRL model was trained again since", flush=True)
    return [name for name in settings.observations if name not in absent], code != 0 or bool(absent)


def runEverything(settings: Settings) -> tuple[bool, int]:
    """
    Prepare the models and run the sweeps, env after env, with an estimate of the time left.

    :param settings: the benchmark's settings
    :return: (whether a stage failed, runs finished by this invocation)
    """
    measured = {}
    for plan in settings.plans:
        for record in loadRuns(finishedRunFolders(settings.specs(plan))):
            measured.setdefault((record.env, record.observation), []).append(record.rate)
    rates = {key: float(np.nanmean(values)) for key, values in measured.items() if not np.isnan(values).all()}
    estimates = {plan.env: estimateSeconds(settings, plan, rates) for plan in settings.plans}
    missing_before = sum(sum(missingRuns(settings.specs(plan)).values()) for plan in settings.plans)
    whole = sum(estimateSeconds(settings, plan, rates, from_scratch=True) for plan in settings.plans)
    print(f"Plan: {', '.join(f'{p.env} {p.steps:,} steps per run' for p in settings.plans)}; "
          f"{len(settings.observations)} observations x {settings.seeds} seeds; {missing_before} runs to do; "
          f"estimated time left {duration(sum(estimates.values()))} ({settings.workers} runs at a time; the whole "
          f"benchmark: about {duration(whole)} on {settings.workers} free cores)", flush=True)
    failed, start, planned = False, time.perf_counter(), 0.0
    for index, plan in enumerate(settings.plans):
        observations = list(settings.observations)
        if settings.learned:
            observations, prepare_failed = prepareEnv(settings, plan)
            failed |= prepare_failed
        if not missingRuns(settings.specs(plan)):
            print(f"\n[{plan.env}] every run has finished", flush=True)
        elif observations:
            command = settings.pipelineCommand(plan, observations)
            print(f"\n[{plan.env}] ppo2 runs: {shown(command, settings.nice)}", flush=True)
            began = time.perf_counter()
            code = runStage(command, settings.nice)
            addTiming(settings.timing_file, settings.fingerprint(), f"runs {plan.env}", time.perf_counter() - began)
            failed |= code != 0
        planned += estimates[plan.env]
        elapsed = time.perf_counter() - start
        left = sum(estimates[p.env] for p in settings.plans[index + 1:]) * max(0.1, elapsed / max(planned, 1.0))
        print(f"[{index + 1}/{len(settings.plans)} envs done] elapsed {duration(elapsed)}"
              + (f", estimated time left {duration(left)}" if index + 1 < len(settings.plans) else ""), flush=True)
    missing_after = sum(sum(missingRuns(settings.specs(plan)).values()) for plan in settings.plans)
    return failed, max(0, missing_before - missing_after)


def report(settings: Settings, command: str, machine: str, doc: str | None, image_dir: str | None,
           append: bool) -> int:
    """
    Analyse the finished runs; write the section, the figures and (when ``append`` and nothing is missing) the speed
    table. Nothing is written when no run of this configuration has finished (the docs keep their last results).

    :param settings: the benchmark's settings
    :param command: the benchmark's command line, as recorded
    :param machine: the machine's description
    :param doc: the markdown file whose block is replaced (None: print the section)
    :param image_dir: the folder of the PNGs (None: no figure)
    :param append: append the speed table to docs/benchmarks.md when every run has finished
    :return: 1 when some expected run has not finished, else 0
    """
    from srl_toolbox.files import readJson

    all_records, tables, texts, images, thresholds = [], {}, {}, {}, {}
    missing = 0
    if not any(finishedRunFolders(settings.specs(plan)) for plan in settings.plans):
        print(f"No run of this configuration has finished in {settings.runs_dir}: nothing written")
        return 1
    for plan in settings.plans:
        models = {name: modelFacts(folder) for name, folder in registeredModels(settings.config_file, plan.env).items()}
        notes = {name: "not prepared" for name in settings.learned if name not in models}
        specs = settings.specs(plan)
        records = loadRuns(finishedRunFolders(specs))
        all_records += records
        missing += len(specs) - len(records)
        rows, threshold = summariseEnv(records, settings.observations, settings.seeds, notes)
        thresholds[plan.env] = threshold
        tables[plan.env] = envTable(plan.env, rows, threshold, models)
        texts[plan.env] = verdicts(rows, threshold, settings.learned)
        png = os.path.join(image_dir or IMAGE_DIR, f"srl_rl_{plan.env}.png")
        if image_dir is not None and any(row.runs for row in rows):
            os.makedirs(image_dir, exist_ok=True)
            plotEnv(png, plan, rows, threshold)
            print(f"Figure: {os.path.relpath(png)}")
        images[plan.env] = os.path.relpath(png, os.path.dirname(doc) if doc else ROOT)
        print(f"\n{plan.env}\n{tables[plan.env]}\n" + "\n".join(texts[plan.env]), flush=True)
    stages = readJson(settings.timing_file).get(settings.fingerprint(), {}) if os.path.isfile(
        settings.timing_file) else {}
    wall = (f"{duration(sum(stages.values()))} in all ("
            + ", ".join(f"{stage} {duration(seconds)}" for stage, seconds in stages.items())
            + f"), {settings.workers} runs at a time, niceness {settings.nice}, summed over the invocations"
            if stages else "not measured (no stage has run with these settings)")
    commands = []
    for plan in settings.plans:
        if settings.learned:
            commands.append(shown(settings.prepareCommand(plan), settings.nice))
        commands.append(shown(settings.pipelineCommand(plan), settings.nice))
    facts = {"command": command, "seeds": settings.seeds, "machine": machine, "wall": wall,
             "thresholds": thresholds, "commands": commands}
    section = sectionText(settings.plans, tables, texts, images, facts)
    if doc is None:
        print(f"\n{SECTION_TITLE}\n\n{section}")
    else:
        writeMarked(doc, section)
        print(f"\nWrote the section {SECTION_TITLE[3:]!r} of {os.path.relpath(doc)}")
    print(f"Wall time: {wall}")
    if missing:
        print(f"{missing} expected run(s) have not finished: the same command again runs only those")
    elif append and all_records:
        notes = (f"ppo2 (default hyperparameters, one env and one torch thread per run, {settings.workers} runs at a "
                 f"time, niceness {settings.nice}) on each observation as `make bench-srl-rl` ran it: steps/s = "
                 "training steps per second of the run's monitor clock (env creation to the last episode, the "
                 "periodic evaluations included), wall time = the whole train command (start-up, SRL model loading "
                 f"and evaluations included), means over the runs. Wall time of the whole benchmark: {wall}. Load "
                 f"average at the end: {os.getloadavg()[0]:.1f} (other work shared the machine when it is above "
                 f"{settings.workers}).")
        appendReport("ppo2 on SRL representations (the SRL + RL benchmark)", command, notes,
                     speedTable(speedRows(all_records)), packages=("torch", "stable_baselines3", "pybullet"),
                     target="bench-srl-rl")
        print("Appended the speed table to docs/benchmarks.md")
    return 1 if missing else 0


# --- the command line ------------------------------------------------------------------------------------------------


def parseBudgets(values: Sequence[str], envs: Sequence[str]) -> dict[str, int]:
    """
    :param values: ``ENV=STEPS`` items of --budget
    :param envs: the valid env ids
    :return: env -> steps
    :raises UsageError: malformed item, unknown env or non-positive steps
    """
    budgets = {}
    for value in values:
        env, _, steps = value.partition("=")
        if env not in envs:
            raise UsageError(f"--budget {value!r}: unknown env {env!r}; valid choices: {', '.join(envs)} (ENV=STEPS)")
        try:
            budgets[env] = positiveInt(steps)
        except Exception:  # argparse.ArgumentTypeError
            raise UsageError(f"--budget {value!r}: {steps!r} is not a positive number of steps (ENV=STEPS)") from None
    return budgets


def buildParser() -> CLIParser:
    """:return: the benchmark's parser"""
    parser = CLIParser(prog="python benchmarks/srl_rl.py", description=__doc__.split("\n")[0], epilog=BUDGET_NOTE)
    parser.add_argument("--env", nargs="+", choices=list(PLANS), default=list(PLANS), help="envs [both]")
    parser.add_argument("--observations", nargs="+", choices=list(OBSERVATIONS), default=None, metavar="OBS",
                        help=f"observations [all: {' '.join(OBSERVATIONS)}; --quick: {' '.join(QUICK_OBSERVATIONS)}]")
    parser.add_argument("--seeds", type=positiveInt, default=None, help="seeds per observation [3; --quick: 2]")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds are FIRST, FIRST+1, ... [0]")
    parser.add_argument("--budget", nargs="+", default=[], metavar="ENV=STEPS",
                        help="env steps per run for an env, instead of the plan's "
                             f"[{', '.join(f'{p.env}={p.steps}' for p in PLANS.values())}]")
    parser.add_argument("--eval-freq", type=positiveInt, default=None, help="steps between evaluations "
                        f"[{', '.join(f'{p.env} {p.eval_freq}' for p in PLANS.values())}]")
    parser.add_argument("--eval-episodes", type=positiveInt, default=None, help="episodes per evaluation "
                        f"[{', '.join(f'{p.env} {p.eval_episodes}' for p in PLANS.values())}]")
    parser.add_argument("--srl-seed", type=int, default=0, help="seed of the datasets and SRL trainings [0]")
    parser.add_argument("--state-dim", type=positiveInt, default=None, help="SRL state dimension [prepare's per env]")
    parser.add_argument("--srl-epochs", type=positiveInt, default=None, help="SRL training epochs [prepare's per env]")
    parser.add_argument("--srl-episodes", type=positiveInt, default=None, help="dataset episodes [prepare's per env]")
    parser.add_argument("--workers", type=positiveInt, default=2, help="runs at a time [2]")
    parser.add_argument("--nice", type=int, choices=range(0, 20), default=10, metavar="0..19",
                        help="niceness of prepare and the runs [10]")
    parser.add_argument("--bench-dir", default=None, help="the benchmark's folder: SRL config file, models, runs "
                        f"[{DEFAULT_BENCH_DIR}; --quick: {QUICK_BENCH_DIR}]")
    parser.add_argument("--doc", default=None, help="markdown file whose 'Does SRL help?' block is replaced "
                        "[docs/srl.md; --quick: <bench-dir>/srl_rl.md]")
    parser.add_argument("--image-dir", default=None, help="folder of the learning-curve PNGs "
                        "[docs/images; --quick: <bench-dir>/images]")
    parser.add_argument("--report-only", action="store_true", help="run nothing: write the section and the figures "
                        "from the finished runs")
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing it, and draw no "
                        "figure unless --image-dir is given")
    parser.add_argument("--no-append", action="store_true", help="do not append the speed table to docs/benchmarks.md")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars in prepare and the pipeline")
    parser.add_argument("--quick", action="store_true", help="tiny datasets and budgets, 2 seeds, 3 observations, in "
                        "its own folder: checks the whole chain in a few minutes; docs/ untouched")
    return parser


def settingsFrom(args: Any) -> Settings:
    """
    :param args: the parsed command line
    :return: the benchmark's settings
    :raises UsageError: a budget, evaluation frequency or observation that cannot be used
    """
    base_plans = QUICK_PLANS if args.quick else PLANS
    budgets = parseBudgets(args.budget, list(base_plans))
    plans = []
    for env in dict.fromkeys(args.env):
        plan = dataclasses.replace(base_plans[env], steps=budgets.get(env, base_plans[env].steps))
        plan = dataclasses.replace(plan, eval_freq=args.eval_freq or min(plan.eval_freq, plan.steps),
                                   eval_episodes=args.eval_episodes or plan.eval_episodes)
        if plan.eval_freq > plan.steps:
            raise UsageError(f"--eval-freq {plan.eval_freq} is more than the {plan.steps} steps of a {env} run: no "
                             "evaluation would run")
        plans.append(plan)
    observations = list(dict.fromkeys(args.observations or (QUICK_OBSERVATIONS if args.quick else OBSERVATIONS)))
    learned = learnedObservations(observations)
    unknown = [name for name in observations if name not in learned and name not in (GROUND_TRUTH, RAW_PIXELS)]
    if unknown:
        raise UsageError(f"--observations {' '.join(unknown)}: not an installed learned SRL model")
    bench_dir = os.path.join(ROOT, args.bench_dir or (QUICK_BENCH_DIR if args.quick else DEFAULT_BENCH_DIR))
    relative = os.path.relpath(bench_dir, ROOT)
    extra = [*(["--state-dim", str(args.state_dim)] if args.state_dim else []),
             *(["--epochs", str(args.srl_epochs)] if args.srl_epochs else []),
             *(["--episodes", str(args.srl_episodes)] if args.srl_episodes else [])]
    return Settings(plans, observations, learned, args.seeds or (2 if args.quick else 3), args.first_seed,
                    bench_dir if relative.startswith("..") else relative, args.srl_seed, extra, args.workers,
                    args.nice, args.no_progress, own_datasets=args.quick)


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code (0: every run finished; 1: something failed or is missing)
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = buildParser().parse_args(argv)
    settings = settingsFrom(args)
    bench_dir = os.path.join(ROOT, settings.bench_dir)
    doc = None if args.no_doc else (os.path.abspath(args.doc) if args.doc
                                    else os.path.join(bench_dir, "srl_rl.md") if args.quick else DOC_FILE)
    image_dir = (os.path.abspath(args.image_dir) if args.image_dir else None if args.no_doc
                 else os.path.join(bench_dir, "images") if args.quick else IMAGE_DIR)
    checkWritableFolder(bench_dir, "--bench-dir")
    if image_dir is not None:
        checkWritableFolder(image_dir, "--image-dir")
    if doc is not None:
        checkWritableFolder(os.path.dirname(doc), "--doc")
    for plan in settings.plans:
        settings.specs(plan)  # train's parser checks the shared flags before anything runs
    os.chdir(ROOT)  # the commands and their paths are relative to the repository root
    machine = machineDescription(("torch", "stable_baselines3", "pybullet"))
    print(f"Machine: {machine}", flush=True)
    failed, finished_now = False, 0
    if not args.report_only:
        os.makedirs(bench_dir, exist_ok=True)
        try:
            failed, finished_now = runEverything(settings)
        except KeyboardInterrupt:
            print("\nInterrupted: the same command again goes on from there (python benchmarks/srl_rl.py "
                  "--report-only ... writes the section from the runs that finished)", file=sys.stderr)
            return 130
    command = " ".join(["python benchmarks/srl_rl.py", *argv])
    append = not (args.quick or args.no_append) and finished_now > 0
    code = report(settings, command, machine, doc, image_dir, append)
    return 1 if failed else code


if __name__ == "__main__":
    runCommand(main)
