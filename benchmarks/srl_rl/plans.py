"""The SRL + RL benchmark's plans: what one invocation runs, and its command lines.

:class:`Settings` holds one invocation: the envs' plans (benchmarks.srl_rl.env_plans: PLANS, or QUICK_PLANS with
``--quick``), the observations in table order (:data:`OBSERVATIONS`: the env's own two, the learned models, the
:data:`VARIANTS`), the seeds and the bench folder. It makes the prepare command (every learned model of an env on one
dataset), the pipeline commands and the run specs. Invariants:

- the run specs are exactly those of the pipeline commands (the same train flags, through
  rl_baselines.sweeps.sweep.expandGrid): the runs a report reads are the runs the commands made;
- a variant is an observation (a learned model, or raw pixels) with further train flags that set args.json
  settings to given values: its runs have run ids, rows and archive keys of their own, on the model that prepare
  trained for the others (a variant of raw pixels needs none); a run belongs to a variant's row only when every one of
  those settings has the variant's value (not merely a truthy one: train records ``augment: "none"`` for every plain
  run);
- the paths are this checkout's (:data:`ROOT`); the bench folder is relative to :attr:`Settings.base`;
- ``--renderer NAME`` goes to prepare and to the runs of the envs that offer it (:meth:`Settings.envRenderer`); the
  other envs, and every env without ``--renderer``, draw with their own default renderer (:meth:`Settings.drawnBy`,
  environments.defaultRenderer); the models of datasets drawn by another renderer than :data:`CONFIG_RENDERER` are
  registered in a config file of their own (:meth:`Settings.configFile`), so that two renderers' models never replace
  each other in one bench folder (their datasets and model folders are apart already: prepare names a dataset after
  its renderer).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
from collections.abc import Collection, Sequence
from typing import Any

from benchmarks.documents import shownPath
from benchmarks.srl_rl.env_plans import (
    GROUND_TRUTH,
    KUKA,
    MOBILE,
    PLANS,
    RAW_PIXELS,
    EnvPlan,
)
from environments.registry import defaultRenderer, rendererRefusal
from replay.results import GROUND_TRUTH_FRACTION
from rl_baselines.runs.args_format import withAddedSettings
from rl_baselines.sweeps.sweep import expandGrid
from srl_models import prepare
from srl_models.registry import learnedModels
from srl_toolbox.text import counted as counted  # (re-exported: the benchmark's modules count with it)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ALGO = "ppo2"
# Envs per run (train's --num-cpu): ppo2's default, given to every run so that a later default of train changes no
# archived run (--envs 1: ppo2's default until 2026-12-05, docs/srl.md, "Four envs per update")
RUN_ENVS = 4
GT_SCALE = "srl_splits_gt_scale"
RAW_PIXELS_SHIFT = "raw_pixels_shift"
# The env's own observations: no learned model, hence no GTC and no probe.
ENV_OBSERVATIONS = (GROUND_TRUTH, RAW_PIXELS)
# The observations compared, in table order: the env's own two, then the learned models (prepared by
# srl_models.prepare), the reference encoders (supervised, random, pca) first, the 2018 losses, then the contrastive
# models (atc, curl), then the variants (VARIANTS).
OBSERVATIONS = (GROUND_TRUTH, RAW_PIXELS, "supervised", "random", "pca", "autoencoder", "vae", "inverse",
                "robotic_priors", "srl_combination", "srl_splits", "atc", "curl", GT_SCALE, RAW_PIXELS_SHIFT)
QUICK_OBSERVATIONS = (GROUND_TRUTH, RAW_PIXELS, "vae")
THRESHOLD_FRACTION = GROUND_TRUTH_FRACTION
SECTION_TITLE = "## Does SRL help?"
START_MARKER = "<!-- bench-srl-rl: start (written by python -m benchmarks.srl_rl; edits inside are replaced) -->"
END_MARKER = "<!-- bench-srl-rl: end -->"
DOC_FILE = os.path.join(ROOT, "docs", "srl.md")
IMAGE_DIR = os.path.join(ROOT, "docs", "images")
DEFAULT_BENCH_DIR = os.path.join("logs", "bench_srl_rl")
QUICK_BENCH_DIR = os.path.join("logs", "bench_srl_rl_quick")
TIMING_FILE = "timing.json"
# The renderer of the models registered in <bench-dir>/srl_models.yaml (every model prepared before --renderer
# existed): the models of another renderer's datasets go to <bench-dir>/srl_models_<renderer>.yaml.
CONFIG_RENDERER = "tinyrenderer"
SUMMARY_IMAGE = "srl_rl_summary.png"  # the figure over the tasks, in the image folder
# The archive of finished runs, committed: what later sessions and fresh clones report and reuse.
RUNS_FILE = os.path.join(ROOT, "benchmarks", "srl_rl_runs.json")
ARCHIVE_NAME = "srl_rl_runs.json"  # --quick: its own archive, in its bench folder
PAPER = ("Raffin et al., \"Decoupling feature extraction from policy learning: assessing benefits of state "
         "representation learning in goal based robotics\" (2019)")


@dataclasses.dataclass(frozen=True)
class Variant:
    """
    An observation handed to the agent with further train flags: a row of its own, with runs of its own (their run
    ids and archive keys differ from the plain runs of its model), on the model that prepare trained for the others.

    :param model: the observation it varies: a learned model, or raw pixels
    :param flags: the train flags its runs get besides the env's (each flag followed by its values, as separate
        items)
    :param settings: the args.json settings those flags set, at the values its runs record (True for a switch;
        ``"shift"`` for ``--augment shift``), which tell its runs from the model's plain ones: a run with any of them
        at another value is not the variant's
    :param description: what it is, for the docs section
    """

    model: str
    flags: tuple[str, ...]
    settings: dict[str, Any]
    description: str


VARIANTS = {
    GT_SCALE: Variant("srl_splits", ("--srl-ground-truth-scale",), {"srl_ground_truth_scale": True},
                      "srl_splits handed to the agent at the size of the env's ground truth (train's "
                      "--srl-ground-truth-scale: the normalised state times sqrt(ground-truth dim / state dim))"),
    RAW_PIXELS_SHIFT: Variant(RAW_PIXELS, ("--augment", "shift"), {"augment": "shift"},
                              "raw pixels with train's --augment shift, ppo2's default augmented update (DrAC's policy "
                              "regulariser, --augment-loss drac): the losses on the images as rendered, plus 0.1 x the "
                              "KL divergence from the policy on each minibatch's images to the policy on the same "
                              "images shifted at random by up to 4 pixels; the runs of --augment-loss rad (RAD: the "
                              "losses on the shifted views) are this row's earlier settings"),
}


def modelName(observation: str) -> str:
    """:return: the learned model (or env observation) an observation's runs use: a variant's model, else itself"""
    return VARIANTS[observation].model if observation in VARIANTS else observation


def isEnvObservation(observation: str) -> bool:
    """:return: the observation's runs use no learned model (ground truth, raw pixels, or a variant of one of them):
    it has no GTC and no probe"""
    return modelName(observation) in ENV_OBSERVATIONS


def _unlessGiven(flags: Sequence[str], given: Sequence[str]) -> list[str]:
    """:return: ``flags`` (``--flag value`` pairs) without the flags that ``given`` sets again (the command shows each
    flag once, with the value it takes)"""
    return [item for pair in zip(flags[::2], flags[1::2]) if pair[0] not in given for item in pair]


def recordingProcesses(workers: int, env_id: str, prepare_flags: Sequence[str]) -> int:
    """
    :param workers: the runs at a time (--workers)
    :param env_id: the env prepared
    :param prepare_flags: prepare's ``--flag value`` pairs, ``--episodes`` among them where the episodes are given
    :return: prepare's --num-cpu: ``workers``, but no more than the episodes recorded (prepare refuses more)
    """
    episodes = [int(value) for flag, value in zip(prepare_flags[::2], prepare_flags[1::2]) if flag == "--episodes"]
    return min(workers, episodes[-1] if episodes else prepare.envDefaults(env_id).episodes)


def variantFlags(observation: str) -> tuple[str, ...]:
    """:return: the train flags an observation's runs get besides the env's (a variant's, else none)"""
    return VARIANTS[observation].flags if observation in VARIANTS else ()


def hasFlags(train_args: Sequence[str], flags: Sequence[str]) -> bool:
    """
    :param train_args: train command-line items (``--flag value`` or ``--flag=value``)
    :param flags: flags, each followed by the values it takes, e.g. ``("--augment", "shift", "--augment-loss",
        "rad")``
    :return: each flag's last occurrence (the one argparse keeps) is followed by exactly its values
    """
    items = [part for item in train_args
             for part in (item.split("=", 1) if item.startswith("--") and "=" in item else [item])]
    starts = [index for index, item in enumerate(flags) if item.startswith("--")] + [len(flags)]
    for start, end in zip(starts, starts[1:]):
        places = [index for index, item in enumerate(items) if item == flags[start]]
        if not places or tuple(items[places[-1]:places[-1] + end - start]) != tuple(flags[start:end]):
            return False
    return True


def specObservation(spec: Any) -> str:
    """
    :param spec: a run spec (rl_baselines.sweeps.sweep.RunSpec)
    :return: the observation (row) it belongs to: a variant when its model and its flag with the variant's values are
        the variant's
    """
    for name, variant in VARIANTS.items():
        if spec.srl_model == variant.model and hasFlags(spec.train_args, variant.flags):
            return name
    return str(spec.srl_model)


def argsObservation(args: dict[str, Any]) -> str:
    """
    :param args: a run's args.json
    :return: the observation (row) it belongs to: a variant when its model is the variant's and its settings have
        the variant's values (a setting added to train since the run was recorded read as args.json's upgrade rules
        give it: ``augment_loss`` rad for an augmented run made before the flag)
    """
    args = withAddedSettings(args)
    for name, variant in VARIANTS.items():
        if args.get("srl_model") == variant.model and all(setting in args and args[setting] == value
                                                          for setting, value in variant.settings.items()):
            return name
    return str(args["srl_model"])


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
def learnedObservations(observations: Sequence[str]) -> list[str]:
    """
    :param observations: observation names
    :return: those that use a learned SRL model (prepared by ``srl_models.prepare``; the variants of one included),
        in order
    """
    learned = set(learnedModels())
    return [name for name in observations if modelName(name) in learned]


def shown(command: Sequence[str], nice: int = 0) -> str:
    """
    :param command: a command line without the interpreter
    :param nice: niceness it runs with (0: none)
    :return: it as typed in a shell from the repository root
    """
    return " ".join([*(["nice", "-n", str(nice)] if nice else []), "python", *(shlex.quote(part) for part in command)])


def duration(seconds: float) -> str:
    """:return: seconds as ``1 h 05 min``, ``12 min`` or ``40 s``"""
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def displayPath(path: str) -> str:
    """
    :param path: a file or folder
    :return: it relative to the repository root when inside it, else absolute
    """
    return shownPath(path, ROOT)


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
    :param executor: where the pipeline runs the runs: ``local`` processes or ``ray`` tasks (rl_baselines.pipeline
        --executor); prepare always runs here
    :param ray_address: the Ray cluster of the ``ray`` executor (None: the pipeline starts a local instance)
    :param renderer: ``--renderer`` of prepare and of the runs, for the envs that offer it (None: not passed, each
        env's default)
    :param envs: each run's envs (train's ``--num-cpu``)
    :param pixel_flags: train's flags of the pixel policy's CNN for every run (``--features-extractor``,
        ``--precision``; none: ppo2's defaults; idle on a state)
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
    executor: str = "local"
    ray_address: str | None = None
    renderer: str | None = None
    envs: int = RUN_ENVS
    pixel_flags: tuple[str, ...] = ()

    @property
    def config_file(self) -> str:
        """The benchmark's SRL config file of the models trained on :data:`CONFIG_RENDERER`'s datasets."""
        return os.path.join(self.bench_dir, "srl_models.yaml")

    def envRenderer(self, env: str) -> str | None:
        """
        :param env: an env id
        :return: the ``--renderer`` its prepare and runs get: :attr:`renderer` when the env offers it
            (environments.rendererRefusal), else None (the env keeps its default)
        """
        if self.renderer is None or rendererRefusal(self.renderer, env) is not None:
            return None
        return self.renderer

    def drawnBy(self, env: str) -> str:
        """:return: the renderer that draws the env's images in its runs and datasets: :meth:`envRenderer`, else the
        env's own default (environments.defaultRenderer), which prepare and train resolve ``--renderer`` to"""
        return self.envRenderer(env) or defaultRenderer(env)

    def configFile(self, env: str) -> str:
        """
        :param env: an env id
        :return: the SRL config file where prepare registers the env's models and its runs read them:
            :attr:`config_file` for :data:`CONFIG_RENDERER`'s images, ``srl_models_<renderer>.yaml`` for another's
        """
        drawn = self.drawnBy(env)
        return self.config_file if drawn == CONFIG_RENDERER else os.path.join(self.bench_dir,
                                                                              f"srl_models_{drawn}.yaml")

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
        """:return: the train flags every run of the env (``plan``) gets, besides algo, env, srl-model and seed"""
        renderer = self.envRenderer(plan.env)
        return [*plan.flags, *plan.run_flags, *(["--renderer", renderer] if renderer else []), "--num-timesteps",
                str(plan.steps), "--eval-freq", str(plan.eval_freq), "--eval-episodes", str(plan.eval_episodes),
                "--num-cpu", str(self.envs), "--srl-config-file", self.configFile(plan.env),
                *self.pixel_flags]

    def pipelineCommand(self, plan: EnvPlan, observations: Sequence[str] | None = None,
                        seeds: Sequence[int] | None = None) -> list[str]:
        """
        :param plan: an env's plan
        :param observations: the observations to run, all with the same :func:`variantFlags` (default: the
            benchmark's without a variant's flags)
        :param seeds: consecutive seeds to run (default: all of the first observation's, :meth:`seedRange`)
        :return: the pipeline command line (without the interpreter)
        """
        if observations is None:
            observations = [name for name in self.observations if not variantFlags(name)]
        flags = {variantFlags(name) for name in observations}
        if len(flags) != 1:
            raise ValueError(f"observations with different train flags in one pipeline command: {observations}")
        seeds = list(seeds) if seeds is not None else list(self.seedRange(plan, observations[0]))
        return ["-m", "rl_baselines.pipeline", "--algo", ALGO, "--env", plan.env, "--srl-model",
                *(modelName(name) for name in observations), "--num-iteration", str(len(seeds)),
                "--seed", str(seeds[0]), "--log-dir", self.runs_dir, "--workers", str(self.workers), "--no-vis",
                *(["--no-progress"] if self.no_progress else []), *self.executorFlags(), *self.trainFlags(plan),
                *flags.pop()]

    def executorFlags(self) -> list[str]:
        """:return: the pipeline's executor flags (none for local processes)"""
        if self.executor == "local":
            return []
        return ["--executor", self.executor, *(["--ray-address", self.ray_address] if self.ray_address else [])]

    def seedRange(self, plan: EnvPlan, observation: str) -> range:
        """
        :param plan: an env's plan
        :param observation: one of :attr:`observations`
        :return: the observation's seeds on the env: :attr:`seeds` from :attr:`first_seed`, or ground truth's
            :attr:`EnvPlan.ground_truth_seeds` where the plan asks for more
        """
        count = plan.groundTruthSeedCount(self.seeds) if observation == GROUND_TRUTH else self.seeds
        return range(self.first_seed, self.first_seed + count)

    def seedCounts(self, plan: EnvPlan) -> dict[str, int]:
        """:return: observation -> the runs the configuration asks for on the env (:meth:`seedRange`)"""
        return {name: len(self.seedRange(plan, name)) for name in self.observations}

    def groundTruthSeeds(self, env_plans: Sequence[EnvPlan]) -> dict[EnvPlan, int]:
        """:return: plan -> ground truth's seeds, for the envs where it is compared on more seeds than the others"""
        counts = {plan: self.seedCounts(plan).get(GROUND_TRUTH, self.seeds) for plan in env_plans}
        return {plan: count for plan, count in counts.items() if count != self.seeds}

    def gridCommands(self, plan: EnvPlan) -> list[list[str]]:
        """
        :param plan: an env's plan
        :return: the pipeline commands of the whole grid: one per set of train flags and seeds (the plain
            observations, ground truth's own where it has more seeds, then each variant's)
        """
        groups: dict[tuple[tuple[str, ...], range], list[str]] = {}
        for name in self.observations:
            groups.setdefault((variantFlags(name), self.seedRange(plan, name)), []).append(name)
        return [self.pipelineCommand(plan, names) for names in groups.values()]

    def pipelineCommands(self, plan: EnvPlan, specs: Sequence[Any],
                         finished: Collection[tuple[str, int]] = ()) -> list[list[str]]:
        """
        :param plan: an env's plan
        :param specs: the runs to give the pipeline (it skips the finished ones itself)
        :param finished: (observation, seed) of runs finished in the bench folder, which a command may cover besides
            ``specs`` (the pipeline skips them)
        :return: as few pipeline command lines as cover these runs, and no run outside them and ``finished``: one
            per set of train flags whose observations and seed range hold no other run (all its runs at once, over
            every worker), else one per set of observations that need the same seeds and per stretch of
            consecutive seeds (one command for a grid without variants)
        """
        seeds_of: dict[str, set[int]] = {}
        for spec in specs:
            seeds_of.setdefault(specObservation(spec), set()).add(int(spec.seed))
        by_flags: dict[tuple[str, ...], list[str]] = {}
        for name in self.observations:
            if name in seeds_of:
                by_flags.setdefault(variantFlags(name), []).append(name)
        commands = []
        for names in by_flags.values():
            every = set().union(*(seeds_of[name] for name in names))
            span = range(min(every), max(every) + 1)
            if all(seed in seeds_of[name] or (name, seed) in finished for name in names for seed in span):
                commands.append(self.pipelineCommand(plan, names, list(span)))
                continue
            groups: dict[tuple[int, ...], list[str]] = {}
            for name in names:
                groups.setdefault(tuple(sorted(seeds_of[name])), []).append(name)
            for seeds, group in groups.items():
                stretch = [seeds[0]]
                for seed in [*seeds[1:], None]:
                    if seed is not None and seed == stretch[-1] + 1:
                        stretch.append(seed)
                        continue
                    commands.append(self.pipelineCommand(plan, group, stretch))
                    stretch = [seed] if seed is not None else []
        return commands

    def prepareCommand(self, plan: EnvPlan) -> list[str]:
        """
        :param plan: an env's plan
        :return: the prepare command line (without the interpreter): all the learned models at once, on one dataset
        """
        renderer = self.envRenderer(plan.env)
        dataset_flags = [*_unlessGiven(plan.prepare_flags, self.prepare_extra), *self.prepare_extra]
        return ["-m", "srl_models.prepare", "--env", plan.env, "--srl-model", *self.models, *plan.flags,
                *(["--renderer", renderer] if renderer else []), "--seed", str(self.srl_seed), "--num-cpu",
                str(recordingProcesses(self.workers, plan.env, dataset_flags)), "--log-folder", self.srl_dir,
                "--srl-config-file", self.configFile(plan.env),
                *(["--data-folder", os.path.join(self.bench_dir, "data")] if self.own_datasets else []),
                *dataset_flags, *(["--no-progress"] if self.no_progress else [])]

    def specs(self, plan: EnvPlan) -> list[Any]:
        """
        :param plan: an env's plan
        :return: the pipeline's run specs (rl_baselines.sweeps.sweep.RunSpec, with their run ids) of this configuration:
            the plain observations' (those with ground truth's seeds in its own group where it has more), then each
            variant's (:func:`specObservation` tells which row a spec is)
        """
        runs_dir = os.path.join(self.base, self.runs_dir)
        plain = [name for name in self.observations if name not in VARIANTS]
        specs = []
        for seeds in dict.fromkeys(self.seedRange(plan, name) for name in plain):
            specs += expandGrid([ALGO], [plan.env], [name for name in plain if self.seedRange(plan, name) == seeds],
                                seeds, self.trainFlags(plan), runs_dir, self.base)
        for name in self.observations:
            if name in VARIANTS:
                specs += expandGrid([ALGO], [plan.env], [modelName(name)], self.seedRange(plan, name),
                                    [*self.trainFlags(plan), *variantFlags(name)], runs_dir, self.base)
        return specs

    def fingerprint(self) -> str:
        """:return: a short hash of what the benchmark computes (keys the accumulated wall time)"""
        settings = [[dataclasses.asdict(plan) for plan in self.plans], self.observations, self.seeds, self.first_seed,
                    self.srl_seed, self.prepare_extra]
        text = json.dumps(settings + ([self.renderer] if self.renderer is not None else []), sort_keys=True)
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
        if not self.learned:
            return None
        args = prepare.buildParser().parse_args(self.prepareCommand(plan)[2:])
        defaults = prepare.envDefaults(plan.env)
        return {"seed": int(args.seed), "state_dim": args.state_dim or defaults.state_dim,
                "epochs": args.epochs or defaults.epochs, "episodes": args.episodes or defaults.episodes,
                "img_size": int(args.img_shape[1]) if args.img_shape else defaults.img_size}
