"""Does raw-pixel ppo2 learn at least as well with a smaller CNN as with SB3's NatureCNN, and how much faster is it?

The pixel policy's features extractor is ``--features-extractor nature`` (SB3's NatureCNN), ``medium`` or ``small``
(rl_baselines.rl_algorithm.image_features: MediumCNN, SmallCNN); ``--extractors`` names those measured (NatureCNN and
MediumCNN by default), each other one judged against NatureCNN. Per env of the SRL + RL benchmark (MobileRobotGymEnv-v0,
and KukaButtonGymEnv-v0 with a random target and the arm forced down, with that benchmark's evaluation settings:
benchmarks.srl_rl.env_plans.PLANS), the script runs the real sweep command, ``python -m rl_baselines.pipeline --algo
ppo2`` (nice-d, ``--workers`` runs at a time, one torch thread each, every other setting at train's defaults, ppo2's
number of envs among them; the extractors' sweeps run side by side, sharing the workers):

- ground truth at the SRL + RL benchmark's budget and on its seeds (more than the others where its plan asks for
  more: Nav 2D's leaves some seeds at the wall): 90% of its mean final evaluation reward is the threshold, as in
  docs/srl.md;
- raw pixels with each extractor at ``--budget`` steps, the same seeds: NatureCNN in float32, as SB3 computes it,
  each other extractor in ``--precision`` (train's default without it; ``--precision bfloat16`` judges an
  extractor computing in bfloat16 against NatureCNN in float32).

"As well" means: at least as many seeds reach the threshold, in no more steps (median over the seeds
that reach it). It only says something at a budget where NatureCNN reaches the threshold: the script says when it
does not (raise ``--budget``). "Faster" is the runs' mean training rate (env steps per second of the monitor's clock)
and the wall-clock time to the threshold, measured in the same sweep on the same machine. A run continued after a stop
has no rate (its monitor clock counts the time between its attempts): the table counts such runs in its runs column
and names them below it, being valid continuations, not necessarily the seeds' uninterrupted runs
(benchmarks.srl_rl.runs.continuedNote).

Progress: the sweeps print a line per run that ended (``--no-progress``: side by side, their bars were drawn into each
other), and the benchmark ``[done/total, about X min left] ENV VARIANT seed N`` as each run it does finishes
(benchmarks.progress.Countdown, by steps).
Resumable: every run has a deterministic folder under ``--bench-dir`` (one log folder per observation and
extractor), the pipeline skips finished runs and continues cut ones from their last checkpoint, so the same command
run again does only what is missing (``--report-only`` runs nothing); when a sweep fails, what finished is still
reported and the command exits 1. A finished run made with other train settings than the command's (a train default
changed since: the run id names only the settings given) is deleted before its sweep and run again, and never
reported, as in the SRL + RL benchmark (benchmarks.srl_rl.runs). Hours on 2 cores:
start it with ``nice`` and let it run; a run's steps to the threshold do not depend on the load, its rate does (the
report prints the load).

Usage: ``python -m benchmarks.cnn_features [--envs ENV ...] [--budget 200000] [--eval-freq 10000] [--seeds 3]
[--workers 2] [--extractors NAME ...] [--precision P] [--renderer NAME] [--bench-dir logs/bench_cnn] [--report-only]
[--quick] [--no-append]`` (``make bench-cnn``).
"""
from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.documents import addResultsArguments, appendReport, recordedCommand, resultsPath
from benchmarks.progress import Countdown
from benchmarks.srl_rl.analysis import meanStandardError, rewardThreshold
from benchmarks.srl_rl.cli import checkEvalFreq, checkRenderer
from benchmarks.srl_rl.env_plans import KUKA, MOBILE, PLANS, QUICK_PLANS, EnvPlan
from benchmarks.srl_rl.runs import RunRecord, continuedNote, dropRunsOfOtherSettings, finishedRuns
from environments import defaultRenderer, rendererRefusal
from replay.results import evaluationStepsToThreshold
from rl_baselines.core.registry import defaultEnvs
from rl_baselines.rl_algorithm.image_features import FEATURES_EXTRACTORS, PRECISION_CHOICES
from rl_baselines.sweeps.run_attempts import finishedFolder
from rl_baselines.sweeps.sweep import expandGrid
from srl_toolbox.cli import CLIParser, UsageError, checkWritableFolder, nonEmptyText, positiveInt, runCommand
from srl_toolbox.devices import threadsEnvironment, threadsShare

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NATURE = "nature"  # SB3's NatureCNN, against which each other extractor is judged
EXTRACTORS = (NATURE, "medium")  # --extractors' default: NatureCNN and ppo2's default, MediumCNN
GROUND_TRUTH = "ground_truth"
POLL_S = 5.0  # seconds between two looks for the runs a stage's sweeps finished (the countdown's lines)
ALGO = "ppo2"


def variantDir(bench_dir: str, variant: str) -> str:
    """:return: the log folder of one variant (``ground_truth``, or a features extractor's name)"""
    return os.path.join(bench_dir, variant)


def observationOf(variant: str) -> str:
    """:return: the train ``--srl-model`` of a variant's runs"""
    return GROUND_TRUTH if variant == GROUND_TRUTH else "raw_pixels"


def precisionOf(variant: str, precision: str | None) -> str | None:
    """:return: the ``--precision`` of a variant's runs: float32 for NatureCNN (as SB3 computes it), ``precision`` for
    the other extractors (None: train's default), None for ground truth (no CNN)"""
    if variant == GROUND_TRUTH:
        return None
    return "float32" if variant == NATURE else precision


def trainFlags(plan: EnvPlan, variant: str, steps: int, eval_freq: int, renderer: str | None = None,
               precision: str | None = None) -> list[str]:
    """
    :param plan: the env's settings (benchmarks.srl_rl.env_plans)
    :param variant: ``ground_truth`` or a features extractor
    :param steps: env steps per run
    :param eval_freq: env steps between evaluations
    :param renderer: the raw-pixel runs' --renderer (None: the env's default)
    :param precision: the judged extractors' --precision (:func:`precisionOf`; None: train's default)
    :return: the train flags of the variant's runs besides algorithm, env, observation and seed
    """
    extractor = [] if variant == GROUND_TRUTH else ["--features-extractor", variant]
    if variant != GROUND_TRUTH and renderer is not None:
        extractor += ["--renderer", renderer]
    if (computed_in := precisionOf(variant, precision)) is not None:
        extractor += ["--precision", computed_in]
    return [*plan.flags, *plan.run_flags, "--num-timesteps", str(steps), "--eval-freq", str(eval_freq),
            "--eval-episodes", str(plan.eval_episodes), *extractor]


def sweepCommand(plan: EnvPlan, variant: str, steps: int, eval_freq: int, seeds: int, workers: int,
                 bench_dir: str, renderer: str | None = None, precision: str | None = None) -> list[str]:
    """
    :param plan: the env's settings (benchmarks.srl_rl.env_plans)
    :param variant: ``ground_truth`` or a features extractor
    :param steps: env steps per run
    :param eval_freq: env steps between evaluations
    :param seeds: seeds 0 .. seeds - 1
    :param workers: runs at a time
    :param bench_dir: the benchmark's folder
    :param renderer: the raw-pixel runs' --renderer (None: the env's default)
    :param precision: the judged extractors' --precision (None: train's default)
    :return: the pipeline command line, without the interpreter
    """
    # --no-progress: a line per run that ended, not a bar (side by side, one sweep's bar was drawn into the other's;
    # the benchmark's countdown says how far it is)
    return ["-m", "rl_baselines.pipeline", "--algo", ALGO, "--env", plan.env, "--srl-model", observationOf(variant),
            "--num-iteration", str(seeds), "--seed", "0", "--log-dir", variantDir(bench_dir, variant),
            "--workers", str(workers), "--no-vis", "--no-progress",
            *trainFlags(plan, variant, steps, eval_freq, renderer, precision)]


def sweepSpecs(plan: EnvPlan, variant: str, steps: int, eval_freq: int, seeds: int, bench_dir: str,
               renderer: str | None = None, precision: str | None = None) -> list[Any]:
    """:return: the run specs (rl_baselines.sweeps.sweep.RunSpec) of the sweep that :func:`sweepCommand` runs with
    the same arguments from the repository's root"""
    return expandGrid([ALGO], [plan.env], [observationOf(variant)], range(seeds),
                      trainFlags(plan, variant, steps, eval_freq, renderer, precision), variantDir(bench_dir, variant),
                      ROOT)


def variantSeeds(plan: EnvPlan, variant: str, seeds: int) -> int:
    """:return: the variant's seeds on the env: ``seeds``, or ground truth's count in the SRL + RL benchmark's plan
    where it is larger (:meth:`benchmarks.srl_rl.env_plans.EnvPlan.groundTruthSeedCount`), so that both benchmarks
    measure the threshold alike"""
    return plan.groundTruthSeedCount(seeds) if variant == GROUND_TRUTH else seeds


def thresholdOf(ground_truth: Sequence[RunRecord]) -> float | None:
    """:return: the threshold of ground truth's final evaluation rewards, by the SRL + RL benchmark's rule
    (:func:`benchmarks.srl_rl.analysis.rewardThreshold`: None without evaluations or when their mean is not positive)"""
    return rewardThreshold([float(record.eval_rewards[-1]) for record in ground_truth if record.eval_rewards.size])


def reachSteps(records: Sequence[RunRecord], threshold: float) -> list[int | None]:
    """:return: per run, the first evaluation's steps at or above the threshold (None: never)"""
    return [evaluationStepsToThreshold(record.eval_steps, record.eval_rewards, threshold) for record in records]


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def labelOf(extractor: str, precision: str | None) -> str:
    """:return: how the report names an extractor's runs: its name, and the precision the judged ones compute in
    when ``--precision`` was given"""
    return extractor if precision is None or extractor == NATURE else f"{extractor}, {precision}"


def judged(env: str, extractor: str, facts: tuple[int, float | None, float],
           nature: tuple[int, float | None, float], precision: str | None = None) -> str:
    """
    :param env: env id
    :param extractor: a features extractor other than NatureCNN
    :param precision: the --precision it computed in (None: train's default)
    :param facts: its seeds at the threshold, median steps to it (None: no seed), mean training rate (nan: none)
    :param nature: the same of NatureCNN, which reached the threshold on at least one seed
    :return: the verdict line: "as well" is at least as many seeds at the threshold, in no more steps (median)
    """
    (count, steps, rate), (nature_count, nature_steps, nature_rate) = facts, nature
    as_well = count > nature_count or (count == nature_count and steps is not None and steps <= nature_steps)
    name = FEATURES_EXTRACTORS[extractor].__name__ + ("" if precision is None else f" in {precision}")
    return (f"{env}: {name} "
            f"{'learns at least as well as' if as_well else 'learns less well than'} NatureCNN (reached {count} vs "
            f"{nature_count} seeds, median {'-' if steps is None else f'{steps:,.0f}'} vs {nature_steps:,.0f} steps); "
            + ("training rate n/a (no run with a rate on both sides)." if math.isnan(rate) or math.isnan(nature_rate)
               else f"training rate {rate / nature_rate:.2f}x NatureCNN's."))


def summarise(env: str, threshold: float, rows: dict[str, list[RunRecord]], seeds: int,
              precision: str | None = None) -> tuple[str, str]:
    """
    :param env: env id
    :param threshold: the env's threshold
    :param rows: features extractor -> its finished runs
    :param seeds: seeds asked for
    :param precision: the judged extractors' --precision (None: train's default)
    :return: (markdown table, followed by the note naming the runs continued after a stop when there are some;
        verdict lines); the training rate is the mean over the runs that have one (n/a when none has)
    """
    lines = ["| features extractor | runs | final eval reward (mean +/- SE) | steps to threshold (median, reached) | "
             "training rate (steps/s, mean) | wall-clock to threshold (median) |",
             "|---|---:|---:|---:|---:|---:|"]
    facts: dict[str, tuple[int, float | None, float]] = {}
    continued: list[str] = []
    for extractor, records in rows.items():
        reached = [(steps, record.rate) for steps, record in zip(reachSteps(records, threshold), records)
                   if steps is not None]
        median_steps = _median([steps for steps, _ in reached])
        wall = _median([steps / rate for steps, rate in reached if rate and not math.isnan(rate)])
        rates = [record.rate for record in records if not math.isnan(record.rate)]  # a continued run has none
        rate = statistics.mean(rates) if rates else math.nan
        final = meanStandardError([float(record.eval_rewards[-1]) for record in records if record.eval_rewards.size])
        facts[extractor] = (len(reached), median_steps, rate)
        label = labelOf(extractor, precision)
        continued += [f"{label} seed {record.seed}" for record in records if record.continued]
        runs = f"{len(records)}/{seeds}" + (f" ({n} continued)" if (n := sum(r.continued for r in records)) else "")
        lines.append(f"| {label} | {runs} | {final[0]:.2f} +/- {final[1]:.2f} | "
                     f"{'not reached' if median_steps is None else f'{median_steps:,.0f}'} ({len(reached)}/"
                     f"{len(records)}) | {'n/a' if math.isnan(rate) else f'{rate:.0f}'} | "
                     f"{'-' if wall is None else f'{wall / 60:.1f} min'} |")
    verdict = []
    others = [extractor for extractor in rows if extractor != NATURE]
    if NATURE in rows and others:
        if not all(rows.values()):
            verdict.append(f"{env}: not every extractor has a finished run yet (run the command again to go on).")
        elif facts[NATURE][0] == 0:
            verdict.append(f"{env}: NatureCNN did not reach the threshold ({threshold:.2f}) on any seed: the budget is "
                           f"too small to judge (raise --budget).")
        else:
            verdict += [judged(env, extractor, facts[extractor], facts[NATURE], precision) for extractor in others]
    note = continuedNote(continued, sum(len(records) for records in rows.values()))
    return "\n".join(lines) + (f"\n\n{note}" if note else ""), "\n".join(verdict)


def buildParser() -> CLIParser:
    parser = CLIParser(prog="python -m benchmarks.cnn_features", description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", default=[MOBILE, KUKA], choices=sorted(PLANS), metavar="ENV",
                        help=f"envs ({', '.join(sorted(PLANS))}) [{MOBILE} {KUKA}]")
    parser.add_argument("--budget", type=positiveInt, default=200_000, help="env steps per raw-pixel run [200000]")
    parser.add_argument("--eval-freq", type=positiveInt, default=10_000,
                        help="env steps between evaluations of a raw-pixel run [10000]")
    parser.add_argument("--seeds", type=positiveInt, default=3, help="seeds per variant [3]")
    parser.add_argument("--workers", type=positiveInt, default=2, help="runs at a time [2]")
    parser.add_argument("--bench-dir", type=nonEmptyText, default=os.path.join("logs", "bench_cnn"),
                        help="where the runs go (resumable) [logs/bench_cnn]")
    parser.add_argument("--extractors", nargs="+", default=list(EXTRACTORS), choices=sorted(FEATURES_EXTRACTORS),
                        metavar="NAME", help=f"features extractors ({', '.join(sorted(FEATURES_EXTRACTORS))}), "
                        f"each judged against nature [{' '.join(EXTRACTORS)}]")
    parser.add_argument("--precision", choices=PRECISION_CHOICES, default=None,
                        help=f"what the judged extractors compute in ({', '.join(PRECISION_CHOICES)}); NatureCNN "
                             "computes in float32, as SB3 does [train's default]")
    parser.add_argument("--renderer", default=None,
                        help="the raw-pixel runs' --renderer (e.g. sprites on the mobile robot), which every env of "
                             "--envs must offer [the env's default]")
    parser.add_argument("--report-only", action="store_true", help="run nothing: report the finished runs")
    parser.add_argument("--quick", action="store_true",
                        help="a check of the machinery: the SRL + RL benchmark's quick plans, --budget 1024, "
                             "--eval-freq 512, one seed, nothing appended")
    addResultsArguments(parser, "the tables")
    return parser


def checkRenderers(renderer: str | None, envs: Sequence[str]) -> None:
    """
    :param renderer: --renderer (None: each env's default)
    :param envs: --envs: the raw-pixel runs of each draw with the renderer
    :raises UsageError: an env that does not offer it (none of them: the SRL + RL benchmark's refusal, with the
        renderers they offer)
    """
    if renderer is None:
        return
    checkRenderer(renderer, envs)
    for env in envs:
        refusal = rendererRefusal(renderer, env)
        if refusal is not None:
            raise UsageError(refusal)


def waitCounting(processes: Sequence[tuple[str, Any]], watched: dict[str, tuple[str, int, Any]],
                 countdown: Countdown) -> list[tuple[str, int]]:
    """
    Wait for a stage's sweeps, printing ``[done/total, about X min left] ENV VARIANT seed N`` as each run finishes.

    :param processes: (variant, its sweep's process)
    :param watched: the stage's runs to do, by run id: (label, steps, spec)
    :param countdown: the benchmark's countdown over every run it does
    :return: (variant, its sweep's exit code), in the order of ``processes``
    """
    pending = dict(watched)
    while True:
        ended = all(process.poll() is not None for _, process in processes)
        for run_id, (label, steps, spec) in list(pending.items()):
            if finishedFolder(spec) is not None:
                del pending[run_id]
                print(f"{countdown.tick(steps)} {label}", flush=True)
        if ended:
            return [(variant, process.returncode) for variant, process in processes]
        time.sleep(POLL_S)


def main(argv: list[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code (0; 1: a sweep failed, its finished runs reported)
    :raises UsageError: bad input, before anything is run or written
    """
    args = buildParser().parse_args(argv)
    checkRenderers(args.renderer, args.envs)
    bench_dir = os.path.join(ROOT, args.bench_dir)  # (the sweeps start in the repository's root)
    if not args.report_only:
        checkWritableFolder(bench_dir, "--bench-dir")
    elif os.path.exists(bench_dir) and not os.path.isdir(bench_dir):
        raise UsageError(f"--bench-dir {args.bench_dir!r} is a file, not a folder of runs")
    plans = QUICK_PLANS if args.quick else PLANS
    if args.quick:
        args.budget, args.eval_freq, args.seeds, args.no_append = 1024, 512, 1, True
    checkEvalFreq(args.eval_freq, args.budget, "raw-pixel run (--budget)")
    started = time.time()
    load_before = os.getloadavg()[0]
    failed = []  # the sweeps that exited non-zero
    # per env, ground truth first (the threshold), then the extractors' sweeps side by side, sharing the workers
    stages = [(plans[env], stage) for env in ([] if args.report_only else args.envs) for stage in (
        [(GROUND_TRUTH, plans[env].steps, plans[env].eval_freq, args.workers)],
        [(extractor, args.budget, args.eval_freq, max(1, args.workers // len(args.extractors)))
         for extractor in args.extractors])]
    sweeps = {}  # (env, variant) -> its runs' specs
    for plan, stage in stages:
        for variant, steps, eval_freq, _ in stage:
            specs = sweepSpecs(plan, variant, steps, eval_freq, variantSeeds(plan, variant, args.seeds), bench_dir,
                               args.renderer, args.precision)
            for folder in dropRunsOfOtherSettings(specs):
                print(f"dropped {os.path.relpath(folder, ROOT)}: made with other train settings than this "
                      "command's (a train default changed since)", flush=True)
            sweeps[plan.env, variant] = specs
    todo = {spec.run_id: (f"{plan.env} {variant} seed {spec.seed}", steps, spec)
            for plan, stage in stages for variant, steps, *_ in stage for spec in sweeps[plan.env, variant]
            if finishedFolder(spec) is None}
    countdown = Countdown(len(todo), sum(steps for _, steps, _ in todo.values()))
    for plan, stage in stages:
        processes = []
        for variant, steps, eval_freq, workers in stage:
            command = sweepCommand(plan, variant, steps, eval_freq, len(sweeps[plan.env, variant]), workers, bench_dir,
                                   args.renderer, args.precision)
            print(f"{plan.env} {variant}: python {' '.join(command)}", flush=True)
            # the stage's sweeps share the cores: each run gets its share as torch threads, as in one sweep
            environ = threadsEnvironment(threadsShare(sum(workers for *_, workers in stage)))
            processes.append((variant, subprocess.Popen(["nice", "-n", "10", sys.executable, *command], cwd=ROOT,
                                                        env=environ)))
        watched = {run_id: todo[run_id] for variant, *_ in stage for spec in sweeps[plan.env, variant]
                   if (run_id := spec.run_id) in todo}
        for variant, code in waitCounting(processes, watched, countdown):
            if code != 0:
                failed.append(f"{variant} on {plan.env}")
                print(f"warning: the {variant} sweep on {plan.env} exited {code}; its finished runs are reported",
                      file=sys.stderr)
    tables, verdicts = [], []
    for env in args.envs:
        plan = plans[env]
        truth_seeds = variantSeeds(plan, GROUND_TRUTH, args.seeds)
        ground_truth = finishedRuns(sweepSpecs(plan, GROUND_TRUTH, plan.steps, plan.eval_freq, truth_seeds, bench_dir))
        threshold = thresholdOf(ground_truth)
        if threshold is None:
            verdicts.append(f"{env}: no threshold: " + ("ground truth's mean final evaluation reward is not positive"
                                                         if any(record.eval_rewards.size for record in ground_truth)
                                                         else "no finished ground-truth run yet"))
            continue
        rows = {extractor: finishedRuns(sweepSpecs(plan, extractor, args.budget, args.eval_freq, args.seeds, bench_dir,
                                                   args.renderer, args.precision)) for extractor in args.extractors}
        table, verdict = summarise(env, threshold, rows, args.seeds, args.precision)
        tables.append(f"**{env}** (threshold {threshold:.2f}: 90% of ground truth's mean final evaluation reward "
                      f"at {plan.steps:,} steps, over {len(ground_truth)} of its {truth_seeds} seeds)\n\n{table}")
        verdicts.append(verdict)
    report = "\n\n".join(tables)
    print(report)
    print("\n".join(verdict for verdict in verdicts if verdict))
    if not args.no_append and tables:
        computed_in = "at train's default precision" if args.precision is None else f"in {args.precision}"
        drawnBy = "each env's default: " + ", ".join(f"{env} {defaultRenderer(env)}" for env in args.envs)
        notes = (f"ppo2 from raw pixels (train's defaults: {defaultEnvs('ppo2')} envs, n_steps 128, "
                 f"batch 64, 10 epochs; renderer "
                 f"{args.renderer or drawnBy}), {args.seeds} "
                 f"seeds, {args.budget:,} steps per run, evaluations every {args.eval_freq:,} steps, with each features "
                 f"extractor (--features-extractor), NatureCNN in float32, the others {computed_in}; ground truth, "
                 f"on the SRL + RL benchmark's seeds, gives the "
                 f"threshold. Runs made by rl_baselines.pipeline under {args.bench_dir} ({args.workers} at a time), "
                 f"reported when finished; "
                 f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
                 f"{(time.time() - started) / 60:.0f} min this invocation. "
                 + " ".join(verdict for verdict in verdicts if verdict))
        appendReport("Raw-pixel ppo2: features extractors vs NatureCNN, steps to threshold", recordedCommand(
            "benchmarks.cnn_features", argv), notes, report, target="bench-cnn", path=resultsPath(args))
    if failed:
        print(f"error: {len(failed)} sweep(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    runCommand(main)
