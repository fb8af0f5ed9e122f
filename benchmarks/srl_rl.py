"""SRL + RL benchmark: does a learned state representation help ppo2 learn? One table and one figure per env.

For each env of :data:`PLANS` (MobileRobotGymEnv-v0, the 2-D navigation task, and KukaButtonGymEnv-v0 with a random
target, the arm task) the script

1. prepares every learned model of :data:`OBSERVATIONS` with ``python -m srl_models.prepare`` (one call per env
   with all the model names: one dataset per env, every model trained on it, evaluated (GTC, KNN-MSE) and registered
   in the benchmark's own SRL config file ``<bench-dir>/srl_models.yaml``, so that the user's config/srl_models.yaml
   is never touched; prepare reuses a dataset and the models whose settings did not change);
2. trains ppo2 on every observation, ``--seeds`` seeds each, with ``python -m rl_baselines.pipeline`` (one call per
   env, and one per :data:`VARIANTS` entry, a learned model with further train flags and a row of its own;
   ``nice``-d): a fixed step budget per env and a deterministic evaluation every ``eval_freq`` steps
   (``--eval-freq``/``--eval-episodes`` of train, ``evaluations.npz`` in each run folder). The pipeline gives each
   run a deterministic folder and skips the finished ones, so the benchmark as a whole is resumable: a re-run does only
   what is missing. A finished run whose learned model was trained again since with other settings or code (the
   hash its ``srl_model.json`` recorded differs from the registered model's, and so does the recipe:
   :func:`sameModel`) is deleted first, so that no table mixes two recipes;
3. analyses the finished runs of this configuration (exactly the runs the pipeline's grid names, so runs of other
   budgets or seeds in the same folder are ignored) and writes the section ``Does SRL help?`` of docs/srl.md (between
   :data:`START_MARKER` and :data:`END_MARKER`, replaced atomically on every run), one learning-curve PNG per env in
   docs/images/, and the steps/s of ppo2 per observation with the benchmark's wall time in docs/benchmarks.md.

The archive of finished runs, :data:`RUNS_FILE` (``benchmarks/srl_rl_runs.json``, committed), keeps the benchmark's
results beyond the bench folder (``logs/`` is not in the repository, and the whole benchmark takes longer than one
working session). Every report (a normal invocation's last step, ``--report-only``, and an interrupted run) records
each finished run of the grid there: env, observation, seed, the settings that make runs comparable (the env plan's
steps, evaluation frequency and episodes, env flags; for a learned observation the SRL settings as prepare resolves
them: seed, state dimension, epochs, dataset episodes, image size), the evaluation curve, steps/s, wall time, the
learned model's hash, recipe, GTC and KNN-MSE, the day it finished, the machine and the invocation's fingerprint. The file is
JSON with sorted keys, one record per :func:`archiveKey` (the settings, readable), rewritten atomically and only when
a record changes. Invariants:

- a run is identified by its env, observation, seed and those settings: a record of other settings is never used;
- the report covers every env of the plan set that has runs (the ``--env`` ones always): an expected run missing
  from the bench folder is taken from the archive, and the tables, the figures and the section say which runs came
  from it and when; the GTC column of an archived run comes from its recorded model facts;
- an env whose runs are all archived is neither prepared nor run (``--rerun ENV`` ignores its archived records); of a
  partly archived env only the runs the archive lacks go to the pipeline;
- no table mixes two recipes: when this invocation's prepare registers a model whose hash and recipe
  (srl_models.base.modelRecipe: exp_config without what training produced and without the dataset's location)
  differ from an archived record's (same settings), the record is dropped and the run made again, as the run folders
  are (:func:`dropStaleRuns`); the report leaves out an archived record whose model differs so from the one
  registered in the bench folder. Another training of the same recipe (prepare on another machine, whose weights
  may differ in the last bits, or again after its folder was lost) keeps the records, so that a benchmark longer
  than a session finishes in the next one; the GTC column then shows the mean over the trainings the runs used and
  says how many (:func:`reportedModels`);
- ``--quick`` keeps its own archive in its bench folder, never :data:`RUNS_FILE`.

Per env and observation, over the seeds: the final evaluation reward (mean of the last evaluation's episodes) as mean
+/- standard error; the steps to the threshold (the first evaluation at or above :data:`THRESHOLD_FRACTION` of
ground truth's mean final evaluation reward; the median over the seeds that reached it, and how many did); the area
under the evaluation curve divided by the steps it spans (so it reads as the mean evaluation reward over training, in
reward units: larger when a method learns sooner); the GTC of the representation (from prepare's evaluation); and the
p-value of Welch's t-test (``scipy.stats.ttest_ind(equal_var=False)``) of the final rewards against raw pixels. Beside
it: the published figures of Raffin et al. (:data:`ANCHOR`) and a comparison as fractions of ground truth. An
observation or a seed that has no finished run yet is marked as missing: the tables are written from what exists.

The speed table (every run of the chosen envs, those archived by earlier invocations included, with the machine each
group ran on) is appended to docs/benchmarks.md by the invocation that finishes the last missing run. ``--quick``
checks the whole chain (prepare on tiny datasets, about a thousand steps per run, 2 seeds, 3 observations) in a few
minutes, in its own folder, writing the section and the figures there rather than into docs/. ``--report-only``
archives the finished runs and rewrites the section and the figures without running anything.

The bench folder (``--bench-dir``, default ``logs/bench_srl_rl``) is relative to the current directory. The commands
run in the repository root with paths relative to it when the folder lies there; a folder in the current directory
outside the repository (another checkout's, whose runs were named after its relative paths) keeps its relative
paths: the commands then run there, importing this checkout's code. The archive and the docs are always this
checkout's.

Usage: ``python benchmarks/srl_rl.py [--quick] [--env ENV ...] [--observations OBS ...] [--seeds 3] [--budget ENV=STEPS
...] [--workers 2] [--report-only] [--no-doc] [--no-append] [--rerun ENV ...] [--runs-file FILE]``
(``make bench-srl-rl``). ``--help`` explains the step budgets.
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
from collections.abc import Collection, Sequence
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
GT_SCALE = "srl_splits_gt_scale"
# The observations compared, in table order: the env's own two, then the learned models (prepared by
# srl_models.prepare), the reference encoders (supervised, random, pca) first, then the variants (VARIANTS).
OBSERVATIONS = (GROUND_TRUTH, RAW_PIXELS, "supervised", "random", "pca", "autoencoder", "vae", "inverse",
                "robotic_priors", "srl_combination", "srl_splits", GT_SCALE)
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
# The archive of finished runs, committed: what later sessions and fresh clones report and reuse.
RUNS_FILE = os.path.join(ROOT, "benchmarks", "srl_rl_runs.json")
ARCHIVE_NAME = "srl_rl_runs.json"  # --quick: its own archive, in its bench folder
PAPER = ("Raffin et al., \"Decoupling feature extraction from policy learning: assessing benefits of state "
         "representation learning in goal based robotics\" (2019)")


@dataclasses.dataclass(frozen=True)
class Variant:
    """
    A learned model handed to the agent with further train flags: a row of its own, with runs of its own (their run
    ids and archive keys differ from the model's plain runs), on the model that prepare trained for the others.

    :param model: the learned model it uses
    :param flags: the train flags its runs get besides the env's
    :param arg: the args.json setting those flags turn on, which tells its runs from the model's plain ones
    :param description: what it is, for the docs section
    """

    model: str
    flags: tuple[str, ...]
    arg: str
    description: str


VARIANTS = {
    GT_SCALE: Variant("srl_splits", ("--srl-ground-truth-scale",), "srl_ground_truth_scale",
                      "srl_splits handed to the agent at the size of the env's ground truth (train's "
                      "--srl-ground-truth-scale: the normalised state times sqrt(ground-truth dim / state dim))"),
}


def modelName(observation: str) -> str:
    """:return: the learned model (or env observation) an observation's runs use: a variant's model, else itself"""
    return VARIANTS[observation].model if observation in VARIANTS else observation


def variantFlags(observation: str) -> tuple[str, ...]:
    """:return: the train flags an observation's runs get besides the env's (a variant's, else none)"""
    return VARIANTS[observation].flags if observation in VARIANTS else ()


def specObservation(spec: Any) -> str:
    """
    :param spec: a run spec (rl_baselines.sweeps.sweep.RunSpec)
    :return: the observation (row) it belongs to: a variant when its model and flags are the variant's
    """
    for name, variant in VARIANTS.items():
        if spec.srl_model == variant.model and all(flag in spec.train_args for flag in variant.flags):
            return name
    return str(spec.srl_model)


def argsObservation(args: dict[str, Any]) -> str:
    """
    :param args: a run's args.json
    :return: the observation (row) it belongs to: a variant when its model and setting are the variant's
    """
    for name, variant in VARIANTS.items():
        if args.get("srl_model") == variant.model and args.get(variant.arg):
            return name
    return str(args["srl_model"])


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
    :param run_flags: env flags of the runs only, e.g. ``--force-down``: the arm moves as in the datasets, which
        environments.dataset_generator always records with force_down
    """

    env: str
    task: str
    steps: int
    eval_freq: int
    eval_episodes: int
    flags: tuple[str, ...] = ()
    episode_length: int = 250
    prepare_flags: tuple[str, ...] = ()
    run_flags: tuple[str, ...] = ()


# Step budgets, chosen from measurements with ground truth (ppo2, 2 seeds, see BUDGET_NOTE) and the cost of the
# pixel-based runs; BUDGET_NOTE is shown by --help and written into the docs section.
PLANS = {
    MOBILE: EnvPlan(MOBILE, "Nav 2D", steps=50_000, eval_freq=5_000, eval_episodes=5),
    # a deterministic arm that has not learned yet plays the whole 1000 steps of an episode: 3 evaluation episodes
    KUKA: EnvPlan(KUKA, "Arm random target", steps=50_000, eval_freq=5_000, eval_episodes=3,
                  flags=("--random-target",), episode_length=500, run_flags=("--force-down",)),
}
QUICK_PLANS = {
    MOBILE: EnvPlan(MOBILE, "Nav 2D", steps=1024, eval_freq=512, eval_episodes=1,
                    prepare_flags=("--episodes", "2", "--epochs", "1")),
    # an untrained deterministic arm often plays the whole 1000 steps of an episode: one short evaluation
    KUKA: EnvPlan(KUKA, "Arm random target", steps=512, eval_freq=512, eval_episodes=1, flags=("--random-target",),
                  episode_length=1000, prepare_flags=("--episodes", "10", "--epochs", "1"), run_flags=("--force-down",)),
}
BUDGET_NOTE = (
    "Step budgets: ground truth should converge and the pixel-based runs be measured clearly, in about 3-4 hours on 2 "
    "cores. Measured with `python -m rl_baselines.train --algo ppo2 --srl-model ground_truth --no-vis` (seeds 0 and "
    "1, mean training reward of the last 50 episodes, exploration included): on MobileRobotGymEnv-v0 it is 208-212 "
    "after 30k steps, 223-228 after 40k and 226-230 up to 60k, so 50k steps (an evaluation of 5 episodes of 250 steps "
    "every 5k); on KukaButtonGymEnv-v0 with --random-target --force-down (the arm moves as in its dataset, never "
    "up) the deterministic evaluation (3 episodes, at most 5 each) reached the maximum, 5.0, after 15k steps (seed 0) "
    "and 25k (seed 1) and stayed there up to 35k, so 50k steps too (an evaluation of 3 episodes every 5k). Without "
    "--force-down the arm may move up, and ground truth (seed 0) learned to hover above the table for whole "
    "1000-step episodes without pressing once in 50k steps. The "
    "pixel-based runs take most of the time: rendering (and encoding) every frame, 2 runs at a time with their "
    "evaluations, ppo2 ran 82-142 steps/s on MobileRobot (911 with ground truth) and 48-87 on Kuka (172 with ground "
    "truth; docs/benchmarks.md). Measured: prepare about 7 minutes per env on free cores (9 models, one after the "
    "other), the runs 3 h 53 min of train commands on MobileRobot (about 1 h 56 min 2 at a time; 2026-11-24, under "
    "load) and 6 h 15 min on Kuka (about 3 h 07 min; 2026-11-25): about 5 h 20 min in all on 2 cores (the script "
    "prints its own estimate, and the time left as it goes).")

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
               "are on the paper's scale: KukaButtonGymEnv-v0 gives +1 for every step the gripper touches the button, "
               "-1 outside the work area or on the table, and ends an episode after 5 steps pressing in all (or on "
               "the table, or after 1000 steps), as the original toolbox does, so a return is at most 5.")
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
    :return: those that use a learned SRL model (prepared by ``srl_models.prepare``; the variants of one included),
        in order
    """
    from srl_models.registry import learnedModels

    learned = set(learnedModels())
    return [name for name in observations if modelName(name) in learned]


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
    :param learned: those that use a learned model (prepared by ``srl_models.prepare``; variants included)
    :param seeds: seeds per observation
    :param first_seed: the first seed (then +1, +2, ...)
    :param bench_dir: the benchmark's folder as given to the commands (relative to ``base`` when inside it, so that
        the run ids do not depend on where the checkout lives)
    :param srl_seed: seed of the datasets and the SRL trainings
    :param prepare_extra: further prepare flags (state dimension, epochs, episodes)
    :param workers: runs at a time
    :param nice: niceness of prepare and the runs
    :param no_progress: no progress bars in prepare and the pipeline
    :param own_datasets: record the datasets in ``<bench-dir>/data`` (the quick mode's tiny ones) rather than in
        prepare's default folder, where other prepare commands with the same settings reuse them
    :param base: the folder the commands run in, which a relative ``bench_dir`` is relative to (the repository root,
        or the current directory when the bench folder lies there and not in the repository)
    :param archive_file: the archive of finished runs that are reported and reused (:data:`RUNS_FILE`; None: none)
    :param extra_plans: the plan set's other envs, reported (never run) when they have finished or archived runs
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
    base: str = ROOT
    archive_file: str | None = None
    extra_plans: list[EnvPlan] = dataclasses.field(default_factory=list)

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

    @property
    def models(self) -> list[str]:
        """The learned models that prepare trains: those of :attr:`learned`, a variant's once, in order."""
        return list(dict.fromkeys(modelName(name) for name in self.learned))

    def trainFlags(self, plan: EnvPlan) -> list[str]:
        """
        :param plan: an env's plan
        :return: the train flags every run of the env gets (besides algo, env, srl-model, seed)
        """
        return [*plan.flags, *plan.run_flags, "--num-timesteps", str(plan.steps), "--eval-freq", str(plan.eval_freq),
                "--eval-episodes", str(plan.eval_episodes), "--srl-config-file", self.config_file]

    def pipelineCommand(self, plan: EnvPlan, observations: Sequence[str] | None = None,
                        seeds: Sequence[int] | None = None) -> list[str]:
        """
        :param plan: an env's plan
        :param observations: the observations to run, all with the same :func:`variantFlags` (default: the
            benchmark's without a variant's flags)
        :param seeds: consecutive seeds to run (default: all of the benchmark's)
        :return: the pipeline command line (without the interpreter)
        """
        seeds = list(seeds) if seeds is not None else list(range(self.first_seed, self.first_seed + self.seeds))
        if observations is None:
            observations = [name for name in self.observations if not variantFlags(name)]
        flags = {variantFlags(name) for name in observations}
        if len(flags) != 1:
            raise ValueError(f"observations with different train flags in one pipeline command: {observations}")
        return ["-m", "rl_baselines.pipeline", "--algo", ALGO, "--env", plan.env, "--srl-model",
                *(modelName(name) for name in observations), "--num-iteration", str(len(seeds)),
                "--seed", str(seeds[0]), "--log-dir", self.runs_dir, "--workers", str(self.workers), "--no-vis",
                *(["--no-progress"] if self.no_progress else []), *self.trainFlags(plan), *flags.pop()]

    def gridCommands(self, plan: EnvPlan) -> list[list[str]]:
        """
        :param plan: an env's plan
        :return: the pipeline commands of the whole grid: one per set of train flags (the plain observations, then
            each variant's)
        """
        groups: dict[tuple[str, ...], list[str]] = {}
        for name in self.observations:
            groups.setdefault(variantFlags(name), []).append(name)
        return [self.pipelineCommand(plan, names) for names in groups.values()]

    def pipelineCommands(self, plan: EnvPlan, specs: Sequence[Any]) -> list[list[str]]:
        """
        :param plan: an env's plan
        :param specs: the runs to give the pipeline (it skips the finished ones itself)
        :return: as few pipeline command lines as cover exactly these runs: one per set of observations that need the
            same seeds and train flags and per stretch of consecutive seeds (one command for a grid without variants)
        """
        seeds_of: dict[str, set[int]] = {}
        for spec in specs:
            seeds_of.setdefault(specObservation(spec), set()).add(int(spec.seed))
        groups: dict[tuple[tuple[str, ...], tuple[int, ...]], list[str]] = {}
        for name in self.observations:
            if name in seeds_of:
                groups.setdefault((variantFlags(name), tuple(sorted(seeds_of[name]))), []).append(name)
        commands = []
        for (_, seeds), names in groups.items():
            stretch = [seeds[0]]
            for seed in [*seeds[1:], None]:
                if seed is not None and seed == stretch[-1] + 1:
                    stretch.append(seed)
                    continue
                commands.append(self.pipelineCommand(plan, names, stretch))
                stretch = [seed] if seed is not None else []
        return commands

    def prepareCommand(self, plan: EnvPlan) -> list[str]:
        """
        :param plan: an env's plan
        :return: the prepare command line (without the interpreter): all the learned models at once, on one dataset
        """
        return ["-m", "srl_models.prepare", "--env", plan.env, "--srl-model", *self.models, *plan.flags, "--seed",
                str(self.srl_seed), "--num-cpu", str(self.workers), "--log-folder", self.srl_dir, "--srl-config-file",
                self.config_file, *(["--data-folder", os.path.join(self.bench_dir, "data")] if self.own_datasets
                                    else []), *plan.prepare_flags, *self.prepare_extra,
                *(["--no-progress"] if self.no_progress else [])]

    def specs(self, plan: EnvPlan) -> list[Any]:
        """
        :param plan: an env's plan
        :return: the pipeline's run specs (rl_baselines.sweeps.sweep.RunSpec, with their run ids) of this configuration:
            the plain observations', then each variant's (:func:`specObservation` tells which row a spec is)
        """
        from rl_baselines.sweeps.sweep import expandGrid

        seeds = range(self.first_seed, self.first_seed + self.seeds)
        runs_dir = os.path.join(self.base, self.runs_dir)
        specs = expandGrid([ALGO], [plan.env], [name for name in self.observations if name not in VARIANTS], seeds,
                           self.trainFlags(plan), runs_dir, self.base)
        for name in self.observations:
            if name in VARIANTS:
                specs += expandGrid([ALGO], [plan.env], [modelName(name)], seeds,
                                    [*self.trainFlags(plan), *variantFlags(name)], runs_dir, self.base)
        return specs

    def fingerprint(self) -> str:
        """:return: a short hash of what the benchmark computes (keys the accumulated wall time)"""
        text = json.dumps([[dataclasses.asdict(plan) for plan in self.plans], self.observations, self.seeds,
                           self.first_seed, self.srl_seed, self.prepare_extra], sort_keys=True)
        return hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]

    def reportPlans(self) -> list[EnvPlan]:
        """:return: the envs the report covers (the chosen ones and :attr:`extra_plans`), in the order of PLANS"""
        order = list(PLANS)
        return sorted([*self.plans, *self.extra_plans],
                      key=lambda plan: order.index(plan.env) if plan.env in order else len(order))

    @staticmethod
    def runSettings(plan: EnvPlan) -> dict[str, Any]:
        """
        :param plan: an env's plan
        :return: the settings that make two runs of the env comparable (with the observation and the seed)
        """
        return {"algo": ALGO, "steps": plan.steps, "eval_freq": plan.eval_freq, "eval_episodes": plan.eval_episodes,
                "flags": [*plan.flags, *plan.run_flags]}

    def srlSettings(self, plan: EnvPlan) -> dict[str, int] | None:
        """
        :param plan: an env's plan
        :return: the settings of its learned models as prepare resolves them (its per-env defaults filled in):
            seed, state_dim, epochs, episodes, img_size; None when no learned model is compared
        """
        from srl_models import prepare

        if not self.learned:
            return None
        args = prepare.buildParser().parse_args(self.prepareCommand(plan)[2:])
        defaults = prepare.envDefaults(plan.env)
        return {"seed": int(args.seed), "state_dim": args.state_dim or defaults.state_dim,
                "epochs": args.epochs or defaults.epochs, "episodes": args.episodes or defaults.episodes,
                "img_size": int(args.img_shape[1]) if args.img_shape else defaults.img_size}


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
    :return: gtc (mean), knn_mse (nan when not evaluated), state_dim, hash and recipe (None when the folder cannot
        be read)
    """
    from srl_models.config import describeSRLModel

    facts: dict[str, Any] = {"gtc": math.nan, "knn_mse": math.nan, "state_dim": None, "hash": None, "recipe": None,
                             "folder": folder}
    try:
        record = describeSRLModel(folder)
        facts.update(state_dim=record["state_dim"], hash=record["hash"], recipe=record["recipe"])
    except (ValueError, OSError, KeyError):
        return facts
    for key, name, field in (("gtc", "gt_correlation.json", "mean"), ("knn_mse", "knn_mse.json", "knn_mse")):
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                facts[key] = float(json.load(handle)[field])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return facts


def sameModel(current: dict[str, Any] | None, recorded: dict[str, Any] | None) -> bool:
    """
    :param current: facts of the model registered now (:func:`modelFacts`; None: none registered)
    :param recorded: the model facts a run recorded (its srl_model.json, or an archived record's ``model``)
    :return: False only when both are known and differ: other files (hash) and not two trainings of one recipe (the
        same settings and code, trained on another machine or again after its folder was lost; see
        srl_models.base.modelRecipe)
    """
    if current is None or recorded is None or current.get("hash") is None or recorded.get("hash") is None:
        return True
    if current["hash"] == recorded["hash"]:
        return True
    return current.get("recipe") is not None and current.get("recipe") == recorded.get("recipe")


def dropStaleRuns(folders: Sequence[str], models: dict[str, dict[str, Any]]) -> list[str]:
    """
    Delete the finished runs whose learned model is no longer the registered one (trained again with other
    settings or code: :func:`sameModel`), so that the pipeline runs them again with the current model.

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
        if not sameModel(models.get(record.get("name")), record):
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
    :param model: the learned model the run used (its srl_model.json: hash, state_dim; an archived record also has
        gtc and knn_mse), None for ground truth and raw pixels
    :param finished: the day it finished (YYYY-MM-DD), empty when unknown
    :param archived: it comes from the archive of finished runs, not from a run folder
    :param machine: the machine it ran on (archived records), empty when unknown
    """

    run: Any
    eval_steps: np.ndarray
    eval_rewards: np.ndarray
    rate: float = math.nan
    wall: float = math.nan
    model: dict[str, Any] | None = None
    finished: str = ""
    archived: bool = False
    machine: str = ""

    @property
    def env(self) -> str:
        """The run's env id."""
        return str(self.run.args["env"])

    @property
    def observation(self) -> str:
        """The run's row: its --srl-model, or the variant its settings make it (:func:`argsObservation`)."""
        return argsObservation(self.run.args)

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
    done = readJson(marker) if os.path.isfile(marker) else {}
    wall = float(done.get("wall_time_s", math.nan))
    model_file = os.path.join(folder, "srl_model.json")
    model = readJson(model_file) if os.path.isfile(model_file) else None
    model = {"hash": model.get("hash"), "state_dim": model.get("state_dim")} if isinstance(model, dict) else None
    finished = str(done.get("finished_at", ""))[:10]
    return RunRecord(run, steps, rewards, rate, wall, model, finished)


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


def reportedModels(records: Sequence[RunRecord], registered: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """
    :param records: an env's runs in the report (bench folder and archive)
    :param registered: :func:`registeredFacts` of the env
    :return: learned model name -> the facts its GTC column shows: those of the model its runs used (the registered
        one's for a run made with it, else the run's recorded facts; the registered model's when it has no run). When
        its runs used several trainings of one recipe (:func:`sameModel`), the mean GTC and KNN-MSE over those whose
        GTC is known, with ``trainings`` set to their count
    """
    used: dict[str, dict[str, dict[str, Any]]] = {}
    for record in records:
        if record.model is None or record.model.get("hash") is None:
            continue
        current = registered.get(modelName(record.observation))
        model = current if current is not None and current.get("hash") == record.model["hash"] else record.model
        used.setdefault(record.observation, {})[record.model["hash"]] = model
    facts = dict(registered)
    for name, models in used.items():
        values = list(models.values())
        if len(values) == 1:
            facts[name] = values[0]
            continue
        combined: dict[str, Any] = {"state_dim": values[0].get("state_dim"), "trainings": len(values)}
        for key in ("gtc", "knn_mse"):
            known = [float(value[key]) for value in values
                     if value.get(key) is not None and not math.isnan(float(value[key]))]
            combined[key] = float(np.mean(known)) if known else math.nan
        facts[name] = combined
    return facts


def envTable(env: str, rows: Sequence[ObservationSummary], threshold: float | None,
             models: dict[str, dict[str, Any]]) -> str:
    """
    :param env: env id
    :param rows: its summaries
    :param threshold: its threshold (None: not defined)
    :param models: learned model name -> :func:`modelFacts` (or :func:`reportedModels`' combined facts)
    :return: the markdown table
    """
    reference = next((row for row in rows if row.observation == GROUND_TRUTH and row.finals), None)
    lines = ["| observation | runs | final eval reward (mean +/- SE) | steps to threshold (median, reached) | "
             "AUC / steps (mean +/- SE) | GTC (state dim) | p (Welch vs raw pixels) | paper (mean +/- SE) | "
             "here vs paper |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    digits = 1 if all(abs(r.final[0]) >= 20 for r in rows if r.finals) else 2
    for row in rows:
        paper, comparison = anchorComparison(row, env, reference)
        facts = models.get(row.observation, models.get(modelName(row.observation)))
        if row.observation == GROUND_TRUTH:
            gtc = "1 (the state itself)"
        elif row.observation == RAW_PIXELS:
            gtc = "- (pixels)"
        elif facts is not None:
            gtc = "n/a" if facts.get("gtc") is None or math.isnan(facts["gtc"]) else f"{facts['gtc']:.3f}"
            detail = [f"{facts['state_dim']}"] if facts.get("state_dim") is not None else []
            if facts.get("trainings"):
                detail.append(f"mean of {facts['trainings']} trainings")
            if detail:
                gtc += f" ({'; '.join(detail)})"
        else:
            gtc = "not prepared"
        runs = f"{len(row.runs)}/{row.expected}"
        archived = sum(record.archived for record in row.runs)
        if archived:
            runs += f" ({archived} archived)"
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


# Panels of the learning-curve figure: each learned model beside the two references (ground truth, raw pixels), a few
# at a time so that the curves stay readable; a learned observation of no panel gets one of its own.
PANELS = (("supervised", "random", "pca"), ("autoencoder", "vae"), ("inverse", "robotic_priors"),
          ("srl_combination", "srl_splits", GT_SCALE))


# matplotlib's default cycle without its grey (C7), which raw pixels' reference curve uses
LEARNED_COLORS = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8", "C9")


def panelGroups(observations: Sequence[str]) -> list[list[str]]:
    """
    :param observations: the observations of the report, in order
    :return: the learned observations of each panel (:data:`PANELS` order; one empty panel when none is learned)
    """
    learned = [name for name in observations if name not in (GROUND_TRUTH, RAW_PIXELS)]
    groups = [[name for name in panel if name in learned] for panel in PANELS]
    groups = [group for group in groups if group]
    others = [name for name in learned if not any(name in panel for panel in PANELS)]
    return groups + ([others] if others else []) or [[]]


def plotEnv(path: str, plan: EnvPlan, rows: Sequence[ObservationSummary], threshold: float | None) -> None:
    """
    Write the env's learning curves as a PNG, atomically: one panel per group of :data:`PANELS`, each with ground truth
    and raw pixels for reference; per observation the mean over seeds and a band of +/- one standard error (with 3
    seeds a 95% band is 4.3 standard errors wide and hides the curves), the threshold dotted.

    :param path: the PNG file
    :param plan: the env's plan
    :param rows: its summaries
    :param threshold: its threshold (dotted line, and in the title)
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from srl_toolbox.files import atomicPath

    data = {label: (x, y) for label, x, y in curves(rows)}
    groups = panelGroups([row.observation for row in rows])
    columns = min(2, len(groups))
    lines = math.ceil(len(groups) / columns)
    figure = Figure(figsize=(6.5 * columns, 3.6 * lines + 1.0), dpi=100)
    FigureCanvasAgg(figure)
    panels = figure.subplots(lines, columns, squeeze=False, sharex=True, sharey=True).ravel()
    styles = {GROUND_TRUTH: {"color": "black", "linestyle": "-"}, RAW_PIXELS: {"color": "0.55", "linestyle": "--"}}
    for axes, group in zip(panels, groups):
        for name in [GROUND_TRUTH, RAW_PIXELS, *group]:
            if name not in data:
                continue
            x, y = data[name]
            model = modelName(name)  # a variant: its model's colour, dash-dotted
            style = styles.get(name, {"color": LEARNED_COLORS[OBSERVATIONS.index(model) % len(LEARNED_COLORS)
                                                              if model in OBSERVATIONS else 0],
                                      "linestyle": "-." if name in VARIANTS else "-"})
            mean = y.mean(axis=0)
            axes.plot(x, mean, linewidth=2 if name in group else 1.5, marker="o", markersize=3,
                      label=f"{name} ({y.shape[0]} runs)", **style)
            if y.shape[0] >= 2:
                error = y.std(axis=0, ddof=1) / math.sqrt(y.shape[0])
                axes.fill_between(x, mean - error, mean + error, color=style["color"], alpha=0.15, linewidth=0)
        if threshold is not None:
            axes.axhline(threshold, color="0.4", linestyle=":", linewidth=1)
        axes.grid(True, alpha=0.3)
        axes.legend(loc="best", fontsize=8)
    for axes in panels[len(groups):]:
        axes.set_visible(False)
    title = f"ppo2 on {plan.env}" + (f" (threshold {threshold:.2f}, dotted)" if threshold is not None else "")
    shown = [record for row in rows for record in row.runs]
    archived = [record for record in shown if record.archived]
    if archived:
        title += (f"\n{len(shown)} runs, {len(archived)} of them from the archive" if len(archived) < len(shown)
                  else f"\n{len(shown)} runs from the archive") + f", finished {dateSpan(shown)}"
    figure.suptitle(title + "\nmean over seeds, band +/- 1 standard error")
    figure.supxlabel("env steps")
    figure.supylabel(f"evaluation reward (deterministic, mean of {plan.eval_episodes} episodes)")
    figure.tight_layout()
    with atomicPath(path) as tmp_path:
        figure.savefig(tmp_path, format="png")


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


def processors(records: Sequence[RunRecord], here: str) -> list[str]:
    """
    :param records: runs
    :param here: this machine's description (that of the runs not archived)
    :return: the processor names of the machines they ran on, sorted, without the unknown ones
    """
    return sorted({(record.machine or here).split(",")[0] for record in records if record.machine or here})


def speedRows(records: Sequence[RunRecord], here: str = "") -> list[dict[str, Any]]:
    """
    :param records: every finished run
    :param here: this machine's description, for the runs of the bench folder (an archived run names its own)
    :return: per (env, observation), envs in the order of the records and observations in that of
        :data:`OBSERVATIONS` (others after them): runs, steps per run, mean steps/s (monitor clock), mean wall time per
        run and the machines the runs ran on (their processor names; "" when not recorded)
    """
    keys = list(dict.fromkeys((r.env, r.observation) for r in records))
    envs = list(dict.fromkeys(env for env, _ in keys))
    keys.sort(key=lambda key: (envs.index(key[0]), OBSERVATIONS.index(key[1]) if key[1] in OBSERVATIONS
                               else len(OBSERVATIONS)))
    rows = []
    for key in keys:
        group = [r for r in records if (r.env, r.observation) == key]
        rates = [r.rate for r in group if not math.isnan(r.rate)]
        walls = [r.wall for r in group if not math.isnan(r.wall)]
        rows.append({"env": key[0], "observation": key[1], "runs": len(group), "steps": max(r.steps for r in group),
                     "rate": float(np.mean(rates)) if rates else math.nan,
                     "wall": float(np.mean(walls)) if walls else math.nan,
                     "machines": ", ".join(processors(group, here))})
    return rows


def speedTable(rows: Sequence[dict[str, Any]]) -> str:
    """
    :param rows: :func:`speedRows`
    :return: the markdown table
    """
    lines = ["| env | observation | runs | steps per run | ppo2 steps/s | wall time per run | machine |",
             "|---|---|---:|---:|---:|---:|---|"]
    for row in rows:
        rate = "n/a" if math.isnan(row["rate"]) else f"{row['rate']:,.0f}"
        wall = "n/a" if math.isnan(row["wall"]) else f"{row['wall'] / 60:.1f} min"
        lines.append(f"| {row['env']} | {row['observation']} | {row['runs']} | {row['steps']:,} | {rate} | {wall} | "
                     f"{row.get('machines') or 'n/a'} |")
    return "\n".join(lines)


def counted(number: int, noun: str) -> str:
    """:return: ``1 run``, ``2 runs``: the number and the noun, plural unless the number is 1"""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def duration(seconds: float) -> str:
    """:return: seconds as ``1 h 05 min``, ``12 min`` or ``40 s``"""
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def runTimeNote(records: dict[str, Sequence[RunRecord]], workers: int, here: str) -> str:
    """
    The benchmark's run time from the runs themselves: it covers the archived runs, whose invocations' stage times
    belong to other bench folders (another session, another machine).

    :param records: env -> the runs shown for it
    :param workers: runs at a time
    :param here: this machine's description (that of the runs not archived)
    :return: per env, the summed wall time of its runs' train commands and that sum divided by ``workers``; empty
        when no run has a recorded wall time
    """
    parts = []
    for env, group in records.items():
        walls = [record.wall for record in group if not math.isnan(record.wall)]
        if walls:
            machines = processors(group, here)
            parts.append(f"{env} {counted(len(walls), 'run')}, {duration(sum(walls))} of train commands (about "
                         f"{duration(sum(walls) / max(1, workers))} with {counted(workers, 'run')} at a time"
                         + (f", {'; '.join(machines)}" if machines else "") + ")")
    return "; ".join(parts)


def sectionText(plans: Sequence[EnvPlan], tables: dict[str, str], texts: dict[str, list[str]],
                images: dict[str, str], facts: dict[str, Any]) -> str:
    """
    :param plans: the envs' plans, in order
    :param tables: env -> markdown table
    :param texts: env -> verdict sentences
    :param images: env -> the PNG path relative to the document
    :param facts: command, seeds, machine, wall, thresholds (env -> value or None), commands (list of str),
        archived (env -> the sentence about its archived runs, for the envs that have some), archive (the archive
        file as shown, None without one), variants (name -> description, of the variants among the rows)
    :return: the section's content, without its heading (:data:`SECTION_TITLE`)
    """
    archive = facts.get("archive")
    reuse = (f" Every finished run is recorded in `{archive}` and reused by later invocations with the same settings: "
             "an env whose runs are all there is neither prepared nor run again (`--rerun ENV` runs it again), and the "
             "section covers every env that has runs, in the bench folder or archived (counted as *archived* in the "
             "tables)." if archive else "")
    parts = [
        f"Written by `{facts['command']}` (`make bench-srl-rl`); re-running it replaces this section and does only "
        f"what is missing (datasets, models and runs whose settings did not change are reused).{reuse} ppo2 with its "
        f"default hyperparameters learns each task from each observation, {facts['seeds']} seeds each; every learned "
        "model of an env is trained on the same dataset by `python -m srl_models.prepare`, with its per-env defaults. A "
        "deterministic evaluation (separate env, same wrappers, normalisation statistics of the training env) runs "
        "every `eval_freq` steps."
        + "".join(f" *{name}* is {description}." for name, description in facts.get("variants", {}).items()), "",
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
                  f"{plan.eval_freq:,} steps" + (f" ({' '.join([*plan.flags, *plan.run_flags])})"
                                                 if plan.flags or plan.run_flags else ""))
        threshold_text = (f"threshold {threshold:.2f}" if threshold is not None
                          else "no threshold (ground truth has no positive final reward yet)")
        archived = facts.get("archived", {}).get(plan.env)
        parts += [f"### {plan.env} ({plan.task})", "", f"{budget}; {threshold_text}."
                  + (f" {archived}" if archived else ""), "", tables[plan.env], "",
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
            missing[specObservation(spec)] = missing.get(specObservation(spec), 0) + 1
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
                    from_scratch: bool = False, archived: Collection[tuple[str, int]] = ()) -> float:
    """
    :param settings: the benchmark's settings
    :param plan: an env's plan
    :param measured: (env, observation) -> steps/s of finished runs
    :param from_scratch: every model and run, whatever exists already
    :param archived: (observation, seed) of the runs taken from the archive (not run; none of them: no prepare)
    :return: the seconds its prepare (models not registered yet) and its missing runs are expected to take
    """
    specs = settings.specs(plan)
    prepared = {} if from_scratch else registeredModels(settings.config_file, plan.env)
    to_prepare = sum(1 for name in settings.models if name not in prepared)
    if not from_scratch and archived and len(archived) >= len(specs):
        to_prepare = 0
    missing = ({name: settings.seeds for name in settings.observations} if from_scratch
               else missingRuns([spec for spec in specs if (specObservation(spec), int(spec.seed)) not in archived]))
    runs = sum(count * expectedRunSeconds(plan, name, measured) for name, count in missing.items())
    return to_prepare * EXPECTED_PREPARE_S + runs / settings.workers


# --- the archive of finished runs ------------------------------------------------------------------------------------


def displayPath(path: str) -> str:
    """
    :param path: a file or folder
    :return: it relative to the repository root when inside it, else absolute
    """
    relative = os.path.relpath(os.path.abspath(path), ROOT)
    return os.path.abspath(path) if relative.startswith("..") else relative


def dateSpan(records: Sequence[RunRecord]) -> str:
    """
    :param records: runs
    :return: the days they finished, ``D`` or ``D1 to D2`` (``on an unknown day`` when none is known)
    """
    days = sorted({record.finished for record in records if record.finished})
    if not days:
        return "on an unknown day"
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def _jsonNumber(value: float | None) -> float | None:
    """:return: ``value`` as a float, None for nan or None (JSON has no nan)"""
    return None if value is None or math.isnan(float(value)) else float(value)


def _floatOrNan(value: Any) -> float:
    """:return: ``value`` as a float, nan for None"""
    return math.nan if value is None else float(value)


def archiveKey(env: str, observation: str, seed: int, run: dict[str, Any], srl: dict[str, int] | None) -> str:
    """
    :param env: env id
    :param observation: the observation
    :param seed: the run's seed
    :param run: :meth:`Settings.runSettings` of the env
    :param srl: :meth:`Settings.srlSettings` of the env for a learned observation, None for the others (their runs do
        not depend on the SRL settings)
    :return: the record's key in the archive, readable: every setting that makes two runs comparable
    """
    parts = [env, observation, f"seed{seed}", str(run["algo"]), f"steps{run['steps']}",
             f"eval{run['eval_freq']}x{run['eval_episodes']}", *run["flags"]]
    if srl is not None:
        parts.append("srl " + " ".join(f"{key}={srl[key]}" for key in sorted(srl)))
    return " ".join(parts)


ARCHIVE_FIELDS = ("env", "observation", "seed", "run", "srl", "eval_timesteps", "eval_rewards")


def loadArchive(path: str | None) -> dict[str, dict[str, Any]]:
    """
    :param path: the archive file (None: no archive)
    :return: key (:func:`archiveKey`) -> record; empty when there is no archive or no file yet
    :raises UsageError: the file is not an archive of runs (one line)
    """
    from srl_toolbox.files import readJson

    if path is None or not os.path.isfile(path):
        return {}
    try:
        data = readJson(path)
    except (ValueError, OSError) as error:
        raise UsageError(f"--runs-file {path!r}: cannot be read as JSON ({error})") from None
    if not isinstance(data, dict):
        raise UsageError(f"--runs-file {path!r}: not a JSON object of run records")
    for key, record in data.items():
        lacking = [name for name in ARCHIVE_FIELDS if not isinstance(record, dict) or name not in record]
        if lacking:
            raise UsageError(f"--runs-file {path!r}: the record {key!r} lacks {', '.join(lacking)}")
    return data


def archiveEntry(settings: Settings, plan: EnvPlan, record: RunRecord, srl: dict[str, int] | None,
                 registered: dict[str, Any] | None, machine: str) -> tuple[str, dict[str, Any]]:
    """
    :param settings: the benchmark's settings
    :param plan: the run's env plan
    :param record: a finished run of the bench folder
    :param srl: the env's SRL settings when the run's observation is learned, else None
    :param registered: :func:`modelFacts` of the model registered for the observation (None: none); its GTC, KNN-MSE
        and recipe are recorded when it is the model the run used (same hash)
    :param machine: the machine's description
    :return: (key, record) as the archive keeps them
    """
    run = Settings.runSettings(plan)
    model = None
    if srl is not None and record.model is not None:
        model = {"hash": record.model.get("hash"), "recipe": record.model.get("recipe"),
                 "state_dim": record.model.get("state_dim"), "gtc": None, "knn_mse": None}
        if registered is not None and registered.get("hash") is not None and registered["hash"] == model["hash"]:
            model.update(gtc=_jsonNumber(registered.get("gtc")), knn_mse=_jsonNumber(registered.get("knn_mse")),
                         recipe=registered.get("recipe") or model["recipe"])
    entry = {"env": record.env, "observation": record.observation, "seed": record.seed, "run": run, "srl": srl,
             "fingerprint": settings.fingerprint(),
             "eval_timesteps": [int(step) for step in record.eval_steps],
             "eval_rewards": [float(reward) for reward in record.eval_rewards],
             "rate": _jsonNumber(record.rate), "wall": _jsonNumber(record.wall), "model": model,
             "date": record.finished or time.strftime("%Y-%m-%d"), "machine": machine}
    return archiveKey(record.env, record.observation, record.seed, run, srl), entry


# Not compared when a run is archived again: the same run seen by another invocation (another observation set, a
# report on another machine) keeps its first record.
_NOT_COMPARED = ("fingerprint", "machine")


def writeArchive(path: str, entries: dict[str, dict[str, Any]], dropped: Sequence[str] = ()
                 ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """
    Add records to the archive (a record with the same key is replaced unless only :data:`_NOT_COMPARED` differ) and
    remove others; the file is rewritten atomically, with sorted keys, only when something changed.

    :param path: the archive file
    :param entries: key -> record to add
    :param dropped: keys to remove
    :return: (the archive as written, the keys added, replaced or removed)
    """
    from srl_toolbox.files import writeJson

    archive = loadArchive(path)
    changed = [key for key in dropped if archive.pop(key, None) is not None]

    def compared(record: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in record.items() if key not in _NOT_COMPARED}

    for key, entry in entries.items():
        if key in archive and compared(archive[key]) == compared(json.loads(json.dumps(entry))):
            continue
        archive[key] = entry
        changed.append(key)
    if changed:
        writeJson(path, archive, sort_keys=True)
    return archive, changed


def registeredFacts(settings: Settings, env: str) -> dict[str, dict[str, Any]]:
    """
    :param settings: the benchmark's settings
    :param env: env id
    :return: model name -> :func:`modelFacts` of the models registered for the env in the bench folder
    """
    return {name: modelFacts(folder) for name, folder in registeredModels(settings.config_file, env).items()}


def collectRuns(settings: Settings, plans: Sequence[EnvPlan]
                ) -> tuple[dict[str, list[RunRecord]], dict[str, dict[str, dict[str, Any]]]]:
    """
    :param settings: the benchmark's settings
    :param plans: env plans
    :return: (env -> the finished runs of its grid in the bench folder, env -> :func:`registeredFacts`)
    """
    found, models = {}, {}
    for plan in plans:
        models[plan.env] = registeredFacts(settings, plan.env)
        found[plan.env] = loadRuns(finishedRunFolders(settings.specs(plan)))
    return found, models


def recordRuns(settings: Settings, plans: Sequence[EnvPlan], found: dict[str, list[RunRecord]],
               models: dict[str, dict[str, dict[str, Any]]], machine: str) -> dict[str, dict[str, Any]]:
    """
    Archive the finished runs of the bench folder in ``settings.archive_file`` (nothing without one).

    :param settings: the benchmark's settings
    :param plans: the env plans of ``found``
    :param found: env -> finished runs (:func:`collectRuns`)
    :param models: env -> registered models' facts (:func:`collectRuns`)
    :param machine: the machine's description
    :return: the archive after the update
    """
    if settings.archive_file is None:
        return {}
    entries = {}
    for plan in plans:
        srl = settings.srlSettings(plan)
        for record in found[plan.env]:
            learned = record.observation in settings.learned
            key, entry = archiveEntry(settings, plan, record, srl if learned else None,
                                      models[plan.env].get(modelName(record.observation)), machine)
            entries[key] = entry
    archive, changed = writeArchive(settings.archive_file, entries)
    if changed:
        print(f"Archived {len(changed)} run(s) in {displayPath(settings.archive_file)} ({len(archive)} in all)",
              flush=True)
    return archive


def archivedMatches(archive: dict[str, dict[str, Any]], settings: Settings, plan: EnvPlan, specs: Sequence[Any],
                    registered: dict[str, dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """
    :param archive: the archive (:func:`loadArchive`)
    :param settings: the benchmark's settings
    :param plan: an env's plan
    :param specs: run specs of the env
    :param registered: :func:`registeredFacts` of the env; a learned observation's record is left out when the bench
        folder registers another model for it (:func:`sameModel`: no table mixes two recipes)
    :return: (observation, seed) -> the archived record with the same settings, for the specs that have one
    """
    if not archive:
        return {}
    run, srl = Settings.runSettings(plan), settings.srlSettings(plan)
    matches = {}
    for spec in specs:
        observation = specObservation(spec)
        learned = observation in settings.learned
        expected_srl = srl if learned else None
        entry = archive.get(archiveKey(plan.env, observation, int(spec.seed), run, expected_srl))
        if entry is None or entry.get("run") != run or entry.get("srl") != expected_srl:
            continue
        if learned and not sameModel(registered.get(modelName(observation)), entry.get("model")):
            continue
        matches[(observation, int(spec.seed))] = entry
    return matches


def dropStaleRecords(settings: Settings, plan: EnvPlan, models: dict[str, dict[str, Any]]) -> list[str]:
    """
    Remove from the archive the records of the env, with the current settings, whose learned model is no longer the
    registered one (trained again by this invocation's prepare with other settings or code: :func:`sameModel`), as
    :func:`dropStaleRuns` does with run folders. A record of another training of the same recipe is kept.

    :param settings: the benchmark's settings
    :param plan: the env's plan
    :param models: model name -> :func:`modelFacts` of the models registered now
    :return: the keys removed
    """
    archive = loadArchive(settings.archive_file)
    if not archive:
        return []
    run, srl = Settings.runSettings(plan), settings.srlSettings(plan)
    stale = []
    for key, entry in archive.items():
        model = modelName(entry["observation"])
        if (entry["env"], entry["run"], entry["srl"]) != (plan.env, run, srl) or model not in models:
            continue
        if not sameModel(models[model], entry.get("model")):
            stale.append(key)
    if stale:
        writeArchive(settings.archive_file, {}, stale)
    return stale


def recordFromArchive(entry: dict[str, Any]) -> RunRecord:
    """
    :param entry: an archived record
    :return: the run as the analysis reads it (``archived`` set; its model facts with nan for a missing GTC/KNN-MSE)
    """
    from replay.results import Run

    steps = np.asarray(entry["eval_timesteps"], dtype=np.float64)
    rewards = np.asarray(entry["eval_rewards"], dtype=np.float64)
    args = {"env": entry["env"], "srl_model": entry["observation"], "seed": int(entry["seed"]),
            "algo": entry["run"]["algo"], "num_timesteps": int(entry["run"]["steps"])}
    evaluations = {"timesteps": steps, "results": rewards[:, None]} if steps.size else None
    model = entry.get("model")
    if model is not None:
        model = {**model, "gtc": _floatOrNan(model.get("gtc")), "knn_mse": _floatOrNan(model.get("knn_mse"))}
    run = Run(f"archive: {archiveKey(entry['env'], entry['observation'], int(entry['seed']), entry['run'], entry['srl'])}",
              args, {}, evaluations)
    return RunRecord(run, steps, rewards, _floatOrNan(entry.get("rate")), _floatOrNan(entry.get("wall")), model,
                     str(entry.get("date", "")), archived=True, machine=str(entry.get("machine", "")))


def archiveNote(records: Sequence[RunRecord], path: str) -> str:
    """
    :param records: an env's runs in the report
    :param path: the archive file
    :return: the sentence that says which of them come from the archive, when, and on which machine
    """
    archived = [record for record in records if record.archived]
    machines = sorted({record.machine for record in archived if record.machine})
    where = f" on {'; '.join(machines)}" if machines else ""
    source = f"the archive of finished runs (`{displayPath(path)}`)"
    if len(archived) == len(records):
        return f"The {len(records)} runs shown come from {source}: finished {dateSpan(archived)}{where}."
    return (f"{len(archived)} of these {len(records)} runs come from {source} (finished {dateSpan(archived)}{where}); "
            "the others from the bench folder.")


# --- running ---------------------------------------------------------------------------------------------------------


class _Stopped(BaseException):
    """SIGTERM: stop the stage in flight like a Ctrl-C."""


def _raiseStopped(signum: int, frame: Any) -> None:
    raise _Stopped()


def stageEnvironment(cwd: str) -> dict[str, str] | None:
    """
    :param cwd: the folder a stage runs in
    :return: the environment of a stage run outside the repository root (None: inherit this one): the project is
        imported from the repository root, never from ``cwd`` (another checkout), in the stage and its children
    """
    if os.path.abspath(cwd) == ROOT:
        return None
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONSAFEPATH": "1", "PYTHONPATH": os.pathsep.join([ROOT, path]) if path else ROOT}


def runStage(command: Sequence[str], nice: int, cwd: str = ROOT) -> int:
    """
    Run ``python COMMAND`` in ``cwd`` (:attr:`Settings.base`), niced, its output on this terminal. On Ctrl-C (which
    reaches it too) or SIGTERM (passed on) it gets a minute to stop its own runs cleanly before it is killed.

    :param command: the command line without the interpreter
    :param nice: niceness
    :param cwd: the folder it runs in (the bench folder's paths are relative to it)
    :return: its exit code
    """
    prefix = ["nice", "-n", str(nice)] if nice and shutil.which("nice") else []
    process = subprocess.Popen([*prefix, sys.executable, *command], cwd=cwd, env=stageEnvironment(cwd))
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
    Prepare the env's learned models and drop the runs made with models that were trained again since with other
    settings or code.

    :param settings: the benchmark's settings
    :param plan: the env's plan
    :return: (the observations that can run, whether prepare failed for some)
    """
    command = settings.prepareCommand(plan)
    print(f"\n[{plan.env}] preparing {counted(len(settings.models), 'learned model')}: {shown(command, settings.nice)}",
          flush=True)
    began = time.perf_counter()
    code = runStage(command, settings.nice, settings.base)
    addTiming(settings.timing_file, settings.fingerprint(), f"prepare {plan.env}", time.perf_counter() - began)
    models = registeredFacts(settings, plan.env)
    absent = [name for name in settings.learned
              if modelName(name) not in models or models[modelName(name)]["hash"] is None]
    if code != 0 or absent:
        print(f"warning: prepare exited with code {code}; not usable on {plan.env}: {', '.join(absent) or 'none'} "
              "(their rows stay missing)", file=sys.stderr, flush=True)
    for folder in dropStaleRuns(finishedRunFolders(settings.specs(plan)), models):
        print(f"dropped {displayPath(folder)}: its SRL model was trained again since, with other settings or code",
              flush=True)
    for key in dropStaleRecords(settings, plan, models):
        print(f"dropped the archived run {key!r} from {displayPath(str(settings.archive_file))}: its SRL model was "
              "trained again since, with other settings or code", flush=True)
    return [name for name in settings.observations if name not in absent], code != 0 or bool(absent)


def runEverything(settings: Settings, rerun: Collection[str] = ()) -> tuple[bool, int]:
    """
    Prepare the models and run the sweeps, env after env, with an estimate of the time left. The runs archived with
    the same settings (:func:`archivedMatches`) are not run again, and an env whose runs are all archived is neither
    prepared nor run, unless it is in ``rerun``.

    :param settings: the benchmark's settings
    :param rerun: envs whose archived runs are ignored
    :return: (whether a stage failed, runs finished by this invocation)
    """
    from rl_baselines.sweeps.sweep import finishedFolder

    archive = loadArchive(settings.archive_file)
    specs = {plan.env: settings.specs(plan) for plan in settings.plans}
    archived = {plan.env: {} if plan.env in rerun else archivedMatches(archive, settings, plan, specs[plan.env],
                                                                        registeredFacts(settings, plan.env))
                for plan in settings.plans}
    measured: dict[tuple[str, str], list[float]] = {}
    for plan in settings.plans:
        records = [*loadRuns(finishedRunFolders(specs[plan.env])), *map(recordFromArchive, archived[plan.env].values())]
        for record in records:
            measured.setdefault((record.env, record.observation), []).append(record.rate)
    rates = {key: float(np.nanmean(values)) for key, values in measured.items() if not np.isnan(values).all()}
    estimates = {plan.env: estimateSeconds(settings, plan, rates, archived=archived[plan.env])
                 for plan in settings.plans}

    def pending(env: str) -> list[Any]:
        return [spec for spec in specs[env] if (specObservation(spec), int(spec.seed)) not in archived[env]
                and finishedFolder(spec) is None]

    missing_before = sum(len(pending(plan.env)) for plan in settings.plans)
    whole = sum(estimateSeconds(settings, plan, rates, from_scratch=True) for plan in settings.plans)
    print(f"Plan: {', '.join(f'{p.env} {p.steps:,} steps per run' for p in settings.plans)}; "
          f"{len(settings.observations)} observations x {settings.seeds} seeds; {missing_before} runs to do"
          + (f" ({sum(map(len, archived.values()))} archived)" if any(archived.values()) else "")
          + f"; estimated time left {duration(sum(estimates.values()))} ({counted(settings.workers, 'run')} at a time; the "
          f"whole benchmark: about {duration(whole)} on {counted(settings.workers, 'free core')})", flush=True)
    failed, start, planned, given = False, time.perf_counter(), 0.0, []
    for index, plan in enumerate(settings.plans):
        if archived[plan.env] and len(archived[plan.env]) == len(specs[plan.env]):
            print(f"\n[{plan.env}] all {len(specs[plan.env])} runs are archived in "
                  f"{displayPath(str(settings.archive_file))} (finished "
                  f"{dateSpan([recordFromArchive(entry) for entry in archived[plan.env].values()])}): not prepared "
                  f"or run again (--rerun {plan.env} runs it again)", flush=True)
        else:
            observations = list(settings.observations)
            if settings.learned:
                observations, prepare_failed = prepareEnv(settings, plan)
                failed |= prepare_failed
                if archived[plan.env]:  # prepare may have dropped stale records
                    archived[plan.env] = archivedMatches(loadArchive(settings.archive_file), settings, plan,
                                                         specs[plan.env], registeredFacts(settings, plan.env))
            todo = pending(plan.env)
            runnable = [spec for spec in specs[plan.env]
                        if (specObservation(spec), int(spec.seed)) not in archived[plan.env]
                        and specObservation(spec) in observations]
            if not todo:
                print(f"\n[{plan.env}] every run has finished" + (" or is archived" if archived[plan.env] else ""),
                      flush=True)
            elif runnable:
                if archived[plan.env]:
                    print(f"\n[{plan.env}] {len(archived[plan.env])} runs are archived in "
                          f"{displayPath(str(settings.archive_file))}: not run again (--rerun {plan.env} runs them)",
                          flush=True)
                given += [spec for spec in todo if specObservation(spec) in observations]
                for command in settings.pipelineCommands(plan, runnable):
                    print(f"\n[{plan.env}] ppo2 runs: {shown(command, settings.nice)}", flush=True)
                    began = time.perf_counter()
                    try:
                        code = runStage(command, settings.nice, settings.base)
                    finally:  # an interrupted stage's time counts too: the next invocation goes on from there
                        addTiming(settings.timing_file, settings.fingerprint(), f"runs {plan.env}",
                                  time.perf_counter() - began)
                    failed |= code != 0
        planned += estimates[plan.env]
        elapsed = time.perf_counter() - start
        left = sum(estimates[p.env] for p in settings.plans[index + 1:]) * max(0.1, elapsed / max(planned, 1.0))
        print(f"[{index + 1}/{len(settings.plans)} envs done] elapsed {duration(elapsed)}"
              + (f", estimated time left {duration(left)}" if index + 1 < len(settings.plans) else ""), flush=True)
    return failed, sum(1 for spec in given if finishedFolder(spec) is not None)


def report(settings: Settings, command: str, machine: str, doc: str | None, image_dir: str | None,
           append: bool, rerun: Collection[str] = ()) -> int:
    """
    Archive the finished runs of the bench folder (:func:`recordRuns`), then analyse the runs of every env of the
    report (:meth:`Settings.reportPlans`: the chosen envs, and the others that have runs), those of the bench folder
    completed by the archived records with the same settings; write the section, the figures and (when ``append``
    and no run of the chosen envs is missing) the speed table of the bench folder's runs. Nothing is written to the
    docs when no run of this configuration has finished or is archived (the docs keep their last results).

    :param settings: the benchmark's settings
    :param command: the benchmark's command line, as recorded
    :param machine: the machine's description
    :param doc: the markdown file whose block is replaced (None: print the section)
    :param image_dir: the folder of the PNGs (None: no figure)
    :param append: append the speed table to docs/benchmarks.md when every run has finished
    :param rerun: envs whose archived records are not used (they are being run again)
    :return: 1 when some expected run of the chosen envs has neither finished nor been archived, else 0
    """
    from srl_toolbox.files import readJson

    chosen = {plan.env for plan in settings.plans}
    candidates = settings.reportPlans()
    found, models = collectRuns(settings, candidates)
    archive = recordRuns(settings, candidates, found, models, machine)
    used: dict[str, list[RunRecord]] = {}
    expected: dict[str, int] = {}
    for plan in candidates:
        specs = settings.specs(plan)
        records = list(found[plan.env])
        if archive and plan.env not in rerun:
            have = {(record.observation, record.seed) for record in records}
            matches = archivedMatches(archive, settings, plan,
                                      [spec for spec in specs if (specObservation(spec), int(spec.seed)) not in have],
                                      models[plan.env])
            records += [recordFromArchive(entry) for entry in matches.values()]
        if records or plan.env in chosen:
            used[plan.env], expected[plan.env] = records, len(specs)
    if not any(used.values()):
        print(f"No run of this configuration has finished in {settings.runs_dir}"
              + (f" or is archived in {displayPath(settings.archive_file)}" if settings.archive_file else "")
              + ": nothing written")
        return 1
    plans = [plan for plan in candidates if plan.env in used]
    fresh, listed, tables, texts, images, thresholds, notes_archive = [], [], {}, {}, {}, {}, {}
    missing = 0
    for plan in plans:
        records = used[plan.env]
        facts = reportedModels(records, models[plan.env])
        notes = {name: "not prepared" for name in settings.learned
                 if name not in facts and modelName(name) not in facts}
        absent = expected[plan.env] - len(records)
        if plan.env in chosen:
            missing += absent
            fresh += [record for record in records if not record.archived]
            listed += records
        elif absent:
            print(f"{plan.env} (not among --env): {absent} run(s) neither finished in {settings.runs_dir} nor "
                  "archived")
        if any(record.archived for record in records):
            notes_archive[plan.env] = archiveNote(records, str(settings.archive_file))
        rows, threshold = summariseEnv(records, settings.observations, settings.seeds, notes)
        thresholds[plan.env] = threshold
        tables[plan.env] = envTable(plan.env, rows, threshold, facts)
        texts[plan.env] = verdicts(rows, threshold, settings.learned)
        png = os.path.join(image_dir or IMAGE_DIR, f"srl_rl_{plan.env}.png")
        if image_dir is not None and any(row.runs for row in rows):
            os.makedirs(image_dir, exist_ok=True)
            plotEnv(png, plan, rows, threshold)
            print(f"Figure: {os.path.relpath(png)}")
        images[plan.env] = os.path.relpath(png, os.path.dirname(doc) if doc else ROOT)
        print(f"\n{plan.env}\n{tables[plan.env]}\n" + "\n".join(texts[plan.env])
              + (f"\n{notes_archive[plan.env]}" if plan.env in notes_archive else ""), flush=True)
    stages = readJson(settings.timing_file).get(settings.fingerprint(), {}) if os.path.isfile(
        settings.timing_file) else {}
    wall = (f"{duration(sum(stages.values()))} in all ("
            + ", ".join(f"{stage} {duration(seconds)}" for stage, seconds in stages.items())
            + f"), {counted(settings.workers, 'run')} at a time, niceness {settings.nice}, summed over the invocations"
            + ("; the archived runs are not included" if notes_archive else "")
            if stages else "not measured (no stage has run with these settings"
            + (" in this bench folder; the archived runs are not included)" if notes_archive else ")"))
    runs_time = runTimeNote(used, settings.workers, machine)
    if runs_time:
        wall += f". Run time of the runs shown, from their own records: {runs_time}"
    commands = []
    for plan in plans:
        if settings.learned:
            commands.append(shown(settings.prepareCommand(plan), settings.nice))
        commands += [shown(command, settings.nice) for command in settings.gridCommands(plan)]
    facts = {"command": command, "seeds": settings.seeds, "machine": machine, "wall": wall,
             "thresholds": thresholds, "commands": commands, "archived": notes_archive,
             "archive": displayPath(settings.archive_file) if settings.archive_file else None,
             "variants": {name: VARIANTS[name].description for name in settings.observations if name in VARIANTS}}
    section = sectionText(plans, tables, texts, images, facts)
    if doc is None:
        print(f"\n{SECTION_TITLE}\n\n{section}")
    else:
        writeMarked(doc, section)
        print(f"\nWrote the section {SECTION_TITLE[3:]!r} of {os.path.relpath(doc)}")
    print(f"Wall time: {wall}")
    if missing:
        print(f"{missing} expected run(s) have not finished: the same command again runs only those")
    elif append and fresh:
        notes = (f"ppo2 (default hyperparameters, one env and one torch thread per run, {settings.workers} runs at a "
                 f"time, niceness {settings.nice}) on each observation as `make bench-srl-rl` ran it: steps/s = "
                 "training steps per second of the run's monitor clock (env creation to the last episode, the "
                 "periodic evaluations included), wall time = the whole train command (start-up, SRL model loading "
                 f"and evaluations included), means over the runs. Wall time of the whole benchmark: {wall}. Load "
                 f"average at the end: {os.getloadavg()[0]:.1f} (other work shared the machine when it is above "
                 f"{settings.workers}).")
        if any(record.archived for record in listed):
            notes += (" The runs of these envs archived by earlier invocations (a benchmark longer than a session) are "
                      "included: the machine column says where each group ran, and rates of different machines do "
                      "not compare.")
        appendReport("ppo2 on SRL representations (the SRL + RL benchmark)", command, notes,
                     speedTable(speedRows(listed, machine)), packages=("torch", "stable_baselines3", "pybullet"),
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
    parser.add_argument("--bench-dir", default=None, help="the benchmark's folder: SRL config file, models, runs; "
                        f"relative to the current directory [{DEFAULT_BENCH_DIR}; --quick: {QUICK_BENCH_DIR}]")
    parser.add_argument("--runs-file", default=None, help="the archive of finished runs, written by every report and "
                        "reused by later invocations with the same settings "
                        f"[{os.path.relpath(RUNS_FILE, ROOT)}; --quick: <bench-dir>/{ARCHIVE_NAME}]")
    parser.add_argument("--rerun", nargs="+", choices=list(PLANS), default=[], metavar="ENV",
                        help="ignore the archived runs of these envs: prepare and run them again (the runs finished in "
                             "the bench folder are still kept); their new runs replace the archived records")
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
    :raises UsageError: a budget, evaluation frequency, observation or --rerun env that cannot be used
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
    bench_dir = os.path.abspath(args.bench_dir or (QUICK_BENCH_DIR if args.quick else DEFAULT_BENCH_DIR))
    base = next((folder for folder in (ROOT, os.getcwd()) if isInside(bench_dir, folder)), ROOT)
    extra = [*(["--state-dim", str(args.state_dim)] if args.state_dim else []),
             *(["--epochs", str(args.srl_epochs)] if args.srl_epochs else []),
             *(["--episodes", str(args.srl_episodes)] if args.srl_episodes else [])]
    archive = (os.path.abspath(args.runs_file) if args.runs_file
               else os.path.join(bench_dir, ARCHIVE_NAME) if args.quick else RUNS_FILE)
    rerun = [env for env in args.rerun if env not in dict.fromkeys(args.env)]
    if rerun:
        raise UsageError(f"--rerun {' '.join(rerun)}: not among the envs run (--env {' '.join(args.env)})")
    others = []
    for env in base_plans:
        if env in args.env:
            continue
        plan = dataclasses.replace(base_plans[env], steps=budgets.get(env, base_plans[env].steps))
        plan = dataclasses.replace(plan, eval_freq=args.eval_freq or min(plan.eval_freq, plan.steps),
                                   eval_episodes=args.eval_episodes or plan.eval_episodes)
        if plan.eval_freq <= plan.steps:  # else no run of it can exist: not reported
            others.append(plan)
    return Settings(plans, observations, learned, args.seeds or (2 if args.quick else 3), args.first_seed,
                    os.path.relpath(bench_dir, base) if isInside(bench_dir, base) else bench_dir, args.srl_seed,
                    extra, args.workers, args.nice, args.no_progress, own_datasets=args.quick, base=base,
                    archive_file=archive, extra_plans=others)


def isInside(path: str, folder: str) -> bool:
    """
    :param path: an absolute path
    :param folder: an absolute folder
    :return: ``path`` is ``folder`` or lies below it
    """
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == os.path.abspath(folder)


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code (0: every run finished; 1: something failed or is missing)
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = buildParser().parse_args(argv)
    settings = settingsFrom(args)
    bench_dir = os.path.join(settings.base, settings.bench_dir)
    loadArchive(settings.archive_file)  # a broken archive is refused before anything runs
    doc = None if args.no_doc else (os.path.abspath(args.doc) if args.doc
                                    else os.path.join(bench_dir, "srl_rl.md") if args.quick else DOC_FILE)
    image_dir = (os.path.abspath(args.image_dir) if args.image_dir else None if args.no_doc
                 else os.path.join(bench_dir, "images") if args.quick else IMAGE_DIR)
    checkWritableFolder(bench_dir, "--bench-dir")
    if image_dir is not None:
        checkWritableFolder(image_dir, "--image-dir")
    if doc is not None:
        checkWritableFolder(os.path.dirname(doc), "--doc")
    if settings.archive_file is not None:
        checkWritableFolder(os.path.dirname(settings.archive_file), "--runs-file")
    for plan in settings.plans:
        settings.specs(plan)  # train's parser checks the shared flags before anything runs
    os.chdir(settings.base)  # the commands and their paths are relative to the base folder
    machine = machineDescription(("torch", "stable_baselines3", "pybullet"))
    print(f"Machine: {machine}", flush=True)
    failed, finished_now = False, 0
    if not args.report_only:
        os.makedirs(bench_dir, exist_ok=True)
        try:
            failed, finished_now = runEverything(settings, args.rerun)
        except KeyboardInterrupt:
            try:  # the runs that finished survive in the archive even if the bench folder does not
                plans = settings.reportPlans()
                recordRuns(settings, plans, *collectRuns(settings, plans), machine)
            except KeyboardInterrupt:
                pass
            print("\nInterrupted: the same command again goes on from there (python benchmarks/srl_rl.py "
                  "--report-only ... writes the section from the runs that finished)", file=sys.stderr)
            return 130
    command = " ".join(["python benchmarks/srl_rl.py", *argv])
    append = not (args.quick or args.no_append) and finished_now > 0
    code = report(settings, command, machine, doc, image_dir, append, args.rerun)
    return 1 if failed else code


if __name__ == "__main__":
    runCommand(main)
