"""The SRL + RL benchmark's command line: ``python -m benchmarks.srl_rl`` (``make bench-srl-rl``).

``--help`` explains the step budgets. Invariants: every input is checked (budgets, evaluation frequency, observations,
``--rerun`` envs, ``--renderer``, the archive's format and that of ``--compare-to``, the train flags, prepare's own
checks of each env's prepare command, writable folders) before anything is written or run; ``--quick`` works in its own
folder with its own archive and leaves docs/ untouched; an interrupted run archives the runs that finished before it
exits.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks.documents import addResultsArguments, checkDocument, machineDescription, resultsPath
from benchmarks.srl_rl.archive import collectRuns, loadArchive, recordRuns
from benchmarks.srl_rl.compare import loadComparison
from benchmarks.srl_rl.env_plans import BUDGET_NOTE, PLANS, QUICK_PLANS, derivedPlan
from benchmarks.srl_rl.plans import (
    ARCHIVE_NAME,
    DEFAULT_BENCH_DIR,
    DOC_FILE,
    IMAGE_DIR,
    OBSERVATIONS,
    QUICK_BENCH_DIR,
    QUICK_OBSERVATIONS,
    ROOT,
    RUN_ENVS,
    RUNS_FILE,
    Settings,
    isEnvObservation,
    learnedObservations,
)
from benchmarks.srl_rl.report import report
from benchmarks.srl_rl.running import runEverything
from environments import rendererRefusal
from environments.registry import defaultRenderersText
from environments.srl_env import RENDERERS
from rl_baselines.rl_algorithm.image_features import FEATURES_EXTRACTORS, PRECISION_CHOICES
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.sweeps.executors import checkRayAddress
from rl_baselines.sweeps.sweep import canonicalPath
from srl_models import prepare
from srl_models.train_config import MAX_STATE_DIM
from srl_toolbox.cli import (
    MAX_SEED,
    CLIParser,
    UsageError,
    checkOutputFile,
    checkWritableFolder,
    envCount,
    intInRange,
    nonEmptyText,
    positiveInt,
    seedNumber,
)
from srl_toolbox.files import isInside
from srl_toolbox.text import withArticle

PROG = "python -m benchmarks.srl_rl"


def parseBudgets(values: Sequence[str], envs: Sequence[str]) -> dict[str, int]:
    """
    :param values: ``ENV=STEPS`` items of --budget
    :param envs: the valid env ids (the planned ones and the --env ones)
    :return: env -> steps
    :raises UsageError: malformed item, unknown env, an env given twice (one budget would be dropped) or non-positive
        steps
    """
    budgets = {}
    for value in values:
        env, _, steps = value.partition("=")
        if env not in envs:
            raise UsageError(f"--budget {value!r}: unknown env {env!r}; valid choices: {', '.join(envs)} (ENV=STEPS)")
        if env in budgets:
            raise UsageError(f"--budget {value!r}: {env} is given a budget twice; give each env one ENV=STEPS")
        try:
            budgets[env] = positiveInt(steps)
        except Exception:  # argparse.ArgumentTypeError
            raise UsageError(f"--budget {value!r}: {steps!r} is not a positive number of steps (ENV=STEPS)") from None
    return budgets


class ListOnce(argparse.Action):
    """A list option (``nargs="+"``) given at most once: argparse keeps the last of a flag given twice, which would
    silently drop the first one's values (``--env A --env B`` running B alone)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if getattr(namespace, self.dest, self.default) is not self.default:  # a list this flag set earlier
            raise argparse.ArgumentError(self, f"given twice; give all its values after one {option_string} "
                                               f"({option_string} {self.metavar} {self.metavar} ...)")
        setattr(namespace, self.dest, values)


def buildParser() -> CLIParser:
    """:return: the benchmark's parser"""
    parser = CLIParser(prog=PROG, description="SRL + RL benchmark: does a learned state representation help ppo2 "
                       "learn? One table and one figure per env.", epilog=BUDGET_NOTE)
    parser.add_argument("--env", nargs="+", action=ListOnce, default=list(PLANS), metavar="ENV",
                        help=f"registered envs with ground truth [the planned ones: {' '.join(PLANS)}]; another env "
                             "needs --budget ENV=STEPS, --eval-freq and --eval-episodes")
    parser.add_argument("--observations", nargs="+", action=ListOnce, choices=list(OBSERVATIONS), default=None,
                        metavar="OBS",
                        help=f"observations [all: {' '.join(OBSERVATIONS)}; --quick: {' '.join(QUICK_OBSERVATIONS)}]")
    parser.add_argument("--seeds", type=positiveInt, default=None,
                        help="seeds per observation, ground truth at least its plan's ("
                             + ", ".join(f"{plan.ground_truth_seeds} on {plan.env}" for plan in PLANS.values()
                                         if plan.ground_truth_seeds) + ") [5; --quick: 2]")
    parser.add_argument("--first-seed", type=seedNumber, default=0, help="seeds are FIRST, FIRST+1, ... [0]")
    parser.add_argument("--budget", nargs="+", action=ListOnce, default=[], metavar="ENV=STEPS",
                        help="env steps per run for an env, instead of the plan's "
                             f"[{', '.join(f'{p.env}={p.steps}' for p in PLANS.values())}]")
    parser.add_argument("--eval-freq", type=positiveInt, default=None, help="steps between evaluations "
                        f"[{', '.join(f'{p.env} {p.eval_freq}' for p in PLANS.values())}]")
    parser.add_argument("--eval-episodes", type=positiveInt, default=None, help="episodes per evaluation "
                        f"[{', '.join(f'{p.env} {p.eval_episodes}' for p in PLANS.values())}]")
    parser.add_argument("--srl-seed", type=seedNumber, default=0, help="seed of the datasets and SRL trainings [0]")
    parser.add_argument("--state-dim", type=intInRange(1, MAX_STATE_DIM), default=None,
                        help=f"SRL state dimension, 1..{MAX_STATE_DIM} [prepare's per env]")
    parser.add_argument("--srl-epochs", type=positiveInt, default=None, help="SRL training epochs [prepare's per env]")
    parser.add_argument("--srl-episodes", type=positiveInt, default=None, help="dataset episodes [prepare's per env]")
    parser.add_argument("--workers", type=positiveInt, default=2, help="runs at a time [2]")
    parser.add_argument("--envs", type=envCount, default=RUN_ENVS, metavar="N",
                        help=f"envs per ppo2 run (train's --num-cpu) [{RUN_ENVS}: ppo2's default; 1 finds the runs "
                             "archived with one env, ppo2's default until 2026-12-05]")
    parser.add_argument("--features-extractor", choices=sorted(FEATURES_EXTRACTORS), default=None, metavar="NAME",
                        help=f"the raw-pixel rows' CNN (train's --features-extractor: "
                             f"{', '.join(sorted(FEATURES_EXTRACTORS))}) [ppo2's default, "
                             f"{PPO2Model.DEFAULT_FEATURES_EXTRACTOR}; nature finds the runs archived with NatureCNN, "
                             "ppo2's default until 2026-12-06]")
    parser.add_argument("--precision", choices=PRECISION_CHOICES, default=None,
                        help="what the raw-pixel rows' CNN computes in (train's --precision) "
                             f"[ppo2's default, {PPO2Model.DEFAULT_PRECISION}; auto: bfloat16 on a CPU with bfloat16 "
                             "instructions, else float32]")
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="where the pipeline runs the runs: local processes, or Ray tasks on a cluster "
                             "(pip install 'srl-toolbox[ray]'; prepare still runs here) [local]")
    parser.add_argument("--ray-address", default=None, metavar="HOST:PORT",
                        help="the Ray cluster of --executor ray (also auto or ray://HOST:PORT): its workers must "
                             "share the bench folder and this checkout at the same paths [a local instance]")
    parser.add_argument("--nice", type=int, choices=range(0, 20), default=10, metavar="0..19",
                        help="niceness of prepare and the runs [10]")
    parser.add_argument("--bench-dir", type=nonEmptyText, default=None,
                        help="the benchmark's folder: SRL config file, models, runs (prepare's datasets go to data/ "
                        "of the folder the commands run in, the repository root or the current directory, where "
                        "other prepare commands reuse them; --quick: <bench-dir>/data); relative to the current "
                        f"directory [{DEFAULT_BENCH_DIR}; --quick: {QUICK_BENCH_DIR}]")
    parser.add_argument("--runs-file", type=nonEmptyText, default=None,
                        help="the archive of finished runs, written by every report and reused by later invocations "
                        "with the same settings "
                        f"[{os.path.relpath(RUNS_FILE, ROOT)}; --quick: <bench-dir>/{ARCHIVE_NAME}]")
    parser.add_argument("--compare-to", type=nonEmptyText, default=None, metavar="FILE",
                        help="an archive of finished runs (the format of --runs-file, or that file itself): after each "
                             "env's table, a table of its runs against those of FILE with the same run and SRL "
                             "settings but other train settings or another physics version (e.g. another renderer, "
                             "Kuka's physics version 1): final rewards, whether they differ by at most twice the "
                             "combined standard error, and what differs [none]")
    parser.add_argument("--renderer", default=None, metavar="NAME",
                        help="what draws the images, for prepare's datasets and the runs (train --renderer) of the "
                             "envs that offer it: tinyrenderer (every env), sprites (mobile robots), lowpoly (Kuka "
                             "arms); the other envs keep their default [not passed: each env's default: "
                             f"{defaultRenderersText()}]")
    parser.add_argument("--rerun", nargs="+", action=ListOnce, default=[], metavar="ENV",
                        help="ignore the archived runs of these envs: prepare and run them again (the runs finished in "
                             "the bench folder are still kept); their new runs replace the archived records")
    parser.add_argument("--doc", type=nonEmptyText, default=None,
                        help="markdown file whose 'Does SRL help?' block is replaced (added at the end of a file "
                        "without it; a new file in an existing folder is made) "
                        "[docs/srl.md; --quick: <bench-dir>/srl_rl.md]")
    parser.add_argument("--image-dir", type=nonEmptyText, default=None, help="folder of the learning-curve PNGs "
                        "[docs/images; --quick: <bench-dir>/images]")
    parser.add_argument("--report-only", action="store_true", help="run nothing: write the section and the figures "
                        "from the finished runs")
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing it, and draw (and "
                        "link) no figure unless --image-dir is given; the finished runs are archived all the same "
                        "(--runs-file: a trial run names its own, or takes --quick)")
    addResultsArguments(parser, "the speed table")
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
    seeds = args.seeds or (2 if args.quick else 5)
    if args.first_seed + seeds - 1 > MAX_SEED:
        raise UsageError(f"--first-seed {args.first_seed} with {seeds} seeds: the last seed, "
                         f"{args.first_seed + seeds - 1}, is beyond {MAX_SEED} (a seed is 0..2**32-1)")
    budgets = parseBudgets(args.budget, list(dict.fromkeys([*base_plans, *args.env])))
    if args.ray_address and args.executor != "ray":
        raise UsageError(f"--ray-address {args.ray_address}: only with --executor ray")
    if args.ray_address:  # before prepare writes anything (the pipeline would find out only after it)
        checkRayAddress(args.ray_address)
    plans = []
    for env in dict.fromkeys(args.env):
        if env not in base_plans:  # any registered env with ground truth: its plan from the flags
            plan = derivedPlan(env, budgets.get(env), args.eval_freq, args.eval_episodes, args.quick)
            checkEvalFreq(plan.eval_freq, plan.steps, f"{env} run")
            plans.append(plan)
            continue
        plan = dataclasses.replace(base_plans[env], steps=budgets.get(env, base_plans[env].steps))
        plan = dataclasses.replace(plan, eval_freq=args.eval_freq or min(plan.eval_freq, plan.steps),
                                   eval_episodes=args.eval_episodes or plan.eval_episodes)
        checkEvalFreq(plan.eval_freq, plan.steps, f"{env} run")
        plans.append(plan)
    observations = list(dict.fromkeys(args.observations or (QUICK_OBSERVATIONS if args.quick else OBSERVATIONS)))
    learned = learnedObservations(observations)
    unknown = [name for name in observations if name not in learned and not isEnvObservation(name)]
    if unknown:
        raise UsageError(f"--observations {' '.join(unknown)}: not an installed learned SRL model")
    bench_dir = os.path.abspath(args.bench_dir or (QUICK_BENCH_DIR if args.quick else DEFAULT_BENCH_DIR))
    base = next((folder for folder in (ROOT, os.getcwd()) if isInside(bench_dir, folder)), ROOT)
    extra = [*(["--state-dim", str(args.state_dim)] if args.state_dim else []),
             *(["--epochs", str(args.srl_epochs)] if args.srl_epochs else []),
             *(["--episodes", str(args.srl_episodes)] if args.srl_episodes else [])]
    archive = (os.path.abspath(args.runs_file) if args.runs_file
               else os.path.join(bench_dir, ARCHIVE_NAME) if args.quick else RUNS_FILE)
    if args.renderer is not None:
        checkRenderer(args.renderer, [plan.env for plan in plans])
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
    return Settings(plans, observations, learned, seeds, args.first_seed,
                    canonicalPath(bench_dir, base), args.srl_seed,
                    extra, args.workers, args.nice, args.no_progress, own_datasets=args.quick, base=base,
                    archive_file=archive, extra_plans=others, executor=args.executor,
                    ray_address=args.ray_address, renderer=args.renderer, envs=args.envs,
                    pixel_flags=pixelFlags(args))


def pixelFlags(args: Any) -> tuple[str, ...]:
    """:return: the train flags of the raw-pixel rows' CNN that the command gives (``--features-extractor``,
    ``--precision``), for every run"""
    return (*(("--features-extractor", args.features_extractor) if args.features_extractor else ()),
            *(("--precision", args.precision) if args.precision else ()))


def checkEvalFreq(eval_freq: int, steps: int, run: str) -> None:
    """
    :param eval_freq: env steps between evaluations (--eval-freq)
    :param steps: env steps of a run
    :param run: what the run is, for the message (``MobileRobotGymEnv-v0 run``)
    :raises UsageError: ``eval_freq`` is more than ``steps`` (no evaluation would run), or ``steps`` is not a multiple
        of it (the last evaluation, the table's final reward, would come before the budget's end)
    """
    if eval_freq > steps:
        raise UsageError(f"--eval-freq {eval_freq} is more than the {steps} steps of {withArticle(run)}: no evaluation "
                         f"would run")
    if steps % eval_freq:
        below, above = steps // eval_freq * eval_freq, (steps // eval_freq + 1) * eval_freq
        raise UsageError(f"the {steps} steps of {withArticle(run)} are not a multiple of --eval-freq {eval_freq}: its "
                         f"last evaluation, the final reward, would be at step {below}; valid budgets: {below}, "
                         f"{above}, ... (or another --eval-freq)")


def checkRenderer(renderer: str, envs: Sequence[str]) -> None:
    """
    :param renderer: --renderer
    :param envs: the envs run
    :raises UsageError: none of them offers it (the renderers they offer are named)
    """
    if any(rendererRefusal(renderer, env) is None for env in envs):
        return
    offered = [name for name in RENDERERS if any(rendererRefusal(name, env) is None for env in envs)]
    raise UsageError(f"--renderer {renderer}: none of the envs run ({', '.join(envs)}) offers it; valid choices: "
                     f"{', '.join(offered)}")


def checkPrepare(settings: Settings) -> None:
    """
    Run prepare's own checks of each env's prepare command (they write nothing), so that a dataset or model setting
    prepare refuses is refused before the bench folder is made rather than by prepare, env after env, after it.

    :param settings: the benchmark's settings
    :raises UsageError: prepare refuses a command; its flags are named as this command's (--srl-episodes, ...)
    """
    if not settings.models:
        return
    for plan in settings.plans:
        command = settings.prepareCommand(plan)[2:]  # (without "-m srl_models.prepare"; paths relative to the base)
        try:
            prepare.checkCommand(command)
        except UsageError as error:
            raise UsageError(re.sub(r"(?<![\w-])--(episodes|epochs|seed)\b", r"--srl-\1", str(error))) from None


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
    if args.compare_to is not None:
        loadComparison(os.path.abspath(args.compare_to))  # so is a missing or broken one to compare with
    doc = None if args.no_doc else (os.path.abspath(args.doc) if args.doc
                                    else os.path.join(bench_dir, "srl_rl.md") if args.quick else DOC_FILE)
    image_dir = (os.path.abspath(args.image_dir) if args.image_dir else None if args.no_doc
                 else os.path.join(bench_dir, "images") if args.quick else IMAGE_DIR)
    checkWritableFolder(bench_dir, "--bench-dir")
    if image_dir is not None:
        checkWritableFolder(image_dir, "--image-dir")
    if doc is not None:  # (--quick's default document lies in the bench folder, made later)
        (checkDocument if args.doc else checkOutputFile)(doc, "--doc")
    if settings.archive_file is not None:
        checkOutputFile(settings.archive_file, "--runs-file")
    for plan in settings.plans:
        settings.specs(plan)  # train's parser checks the shared flags before anything runs
    os.chdir(settings.base)  # the commands and their paths are relative to the base folder
    if not args.report_only:
        checkPrepare(settings)
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
            print(f"\nInterrupted: the same command again goes on from there ({PROG} --report-only ... writes the "
                  "section from the runs that finished)", file=sys.stderr)
            return 130
    command = " ".join([PROG, *argv])
    append = not (args.quick or args.no_append) and finished_now > 0
    code = report(settings, command, machine, doc, image_dir, append, args.rerun,
                  os.path.abspath(args.compare_to) if args.compare_to is not None else None, resultsPath(args))
    return 1 if failed else code
