"""``python -m replay.gather_results --log-dir DIR``: one table comparing the methods of a sweep.

Walks every run below DIR (a folder with args.json and monitor/), groups runs by (env, srl-model, algo) and
writes ``results.csv`` and ``results.md`` (in DIR unless ``--output-dir``), one row per method and timestep budget:

- runs: the runs (seeds) that trained at least that many steps and had finished an episode by then, or with
  evaluations (below) made an evaluation by then (``no_episode_yet``: those that trained that far without an episode);
- final mean reward: per run the mean reward of its last ``--episode-window`` episodes finished within the budget,
  then the mean +/- standard deviation over runs and the Student-t 95% confidence interval of that mean;
- steps to threshold: per run the env step at which the mean of the last ``--episode-window`` episodes (all of them in
  a run with fewer, as its reward) first reaches the env's threshold; the median over the runs that reached it within
  the budget, and how many did. The threshold is ``--threshold`` when given; else, when the folder has ground-truth
  runs of the env (same algorithm and ``--group-by`` values), ``--threshold-fraction`` (0.9) of their mean final
  reward (when positive); else the env's default (replay.results.DEFAULT_THRESHOLDS); else none. The column
  ``threshold_source`` says which (``given``, ``ground truth``, ``default``);
- wall time: mean over runs of the monitor time of the last episode within the budget (runs without one left out);
- with ``--welch-test METHOD``: the p-value of Welch's t-test (unequal variances) between each method's per-run
  rewards and those of METHOD (an SRL model or an algorithm) with everything else equal.

When every run of a method has deterministic evaluations (``train --eval-freq``, ``evaluations.npz``), the method's
rewards come from them instead of the training episodes (which include exploration noise): a run's reward is the
mean of its last evaluation within the budget, and steps to threshold is the first evaluation whose mean reaches the
threshold; such a method's runs count even without a finished training episode (a run shorter than its env's
episodes). The column ``source`` says which a row used (``evaluation`` or ``training``); ``--training-rewards``
uses the training episodes everywhere. A method measured on training episodes leaves out its runs without a finished
one, with a warning.

Steps are the run's, all envs together (those of ``--num-timesteps`` and ``--eval-freq``): a training episode counts
at the run's step count when it ended, with ``--num-cpu N`` N times its env's own steps (replay.results).
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from replay.results import (
    DEFAULT_THRESHOLDS,
    GROUND_TRUTH_FRACTION,
    GROUP_KEYS,
    Run,
    episodeWindowStepsToThreshold,
    evaluationStepsToThreshold,
    findRuns,
    groupRuns,
    hasEpisodes,
    hasEvaluations,
    meanInterval,
    measuredRuns,
    methodLabel,
    plural,
    warnMixedMethods,
)
from srl_toolbox.cli import (
    CLIParser,
    UsageError,
    checkFolderName,
    checkOutputFiles,
    checkWritableFolder,
    finiteFloat,
    nonEmptyText,
    positiveInt,
    runCommand,
)
from srl_toolbox.files import atomicPath
from srl_toolbox.terminal import HeldWarnings

FINAL = "final"
GROUND_TRUTH = "ground_truth"


def buildParser() -> CLIParser:
    """:return: the command's parser"""
    result = CLIParser(prog="python -m replay.gather_results",
                       description="Compare the methods of a sweep: CSV and Markdown tables of rewards over seeds.")
    result.add_argument("-i", "--log-dir", required=True, help="folder to walk for runs")
    result.add_argument("--timestep-budget", type=positiveInt, nargs="+", default=[], metavar="STEPS",
                        help="also compare at these env-step budgets (the final results are always given)")
    result.add_argument("--episode-window", type=positiveInt, default=100,
                        help="episodes averaged for a run's reward and for the threshold [100]")
    result.add_argument("--threshold", type=finiteFloat, default=None,
                        help="mean reward counted as solved, for every env [per env and algorithm: "
                             "--threshold-fraction of ground truth's mean final reward when the folder has "
                             "ground-truth runs of that env and algorithm, else "
                             f"{', '.join(f'{k} {v:g}' for k, v in DEFAULT_THRESHOLDS.items())}; others none]")
    result.add_argument("--threshold-fraction", type=fraction, default=GROUND_TRUTH_FRACTION, metavar="F",
                        help="threshold of an env with ground-truth runs, as a fraction of their mean final reward "
                             f"(0 < F <= 1) [{GROUND_TRUTH_FRACTION:g}]")
    result.add_argument("--welch-test", default=None, metavar="METHOD",
                        help="baseline SRL model or algorithm for Welch t-test p-values")
    result.add_argument("--group-by", nargs="+", default=[], metavar="KEY",
                        help="more args.json keys that split methods (e.g. continuous_actions shape_reward)")
    result.add_argument("--output-dir", type=nonEmptyText, default=None, help="where results.csv/.md go [the --log-dir]")
    result.add_argument("--training-rewards", action="store_true",
                        help="use the training episodes even for runs with evaluations (evaluations.npz)")
    return result


def fraction(text: str) -> float:
    """
    :param text: a command-line value
    :return: it as a float in (0, 1]
    :raises argparse.ArgumentTypeError: not a number in (0, 1]
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not in (0, 1]")
    return value


def _trainedTo(run: Run, budget: int | None) -> bool:
    """:return: whether the run counts at ``budget`` env steps (None: the final results, those of finished runs)"""
    if budget is None:
        return run.finished
    if run.trained_timesteps is not None:  # what its saved model trained (manifest), or a finished run's budget
        return run.trained_timesteps >= budget
    episodes = run.episodes
    trained = run.args.get("num_timesteps", math.inf)
    if not hasEpisodes(run):  # (a run kept for its evaluations)
        return trained >= budget
    # A run still training towards its first save: monitor files that end an episode's length (in run steps) before
    # the budget say it did not get there yet
    return trained >= budget and episodes["timesteps"][-1] + episodes["lengths"].max() * run.num_envs > budget


def _runValue(run: Run, budget: int | None, window: int, evaluation: bool = False) -> tuple[float, float] | None:
    """:return: (mean reward of the last ``window`` episodes within ``budget``, or of the last evaluation within it
    with ``evaluation``; monitor time of the last episode within it, nan when none), or None when the run did not
    train that far or finished no episode within it (with ``evaluation``: made no evaluation within it)"""
    episodes = run.episodes
    if not _trainedTo(run, budget):
        return None
    count = _episodesWithin(run, budget)
    if count == 0 and not evaluation:
        return None
    wall_time = float(episodes["times"][count - 1]) if count else math.nan
    if evaluation:
        timesteps = run.evaluations["timesteps"]
        done = int(np.searchsorted(timesteps, budget, side="right")) if budget is not None else timesteps.size
        if done == 0:
            return None
        return float(run.evaluations["results"][done - 1].mean()), wall_time
    return float(episodes["rewards"][:count][-window:].mean()), wall_time


def _meanWallTime(times: Sequence[float]) -> float:
    """:return: the mean of the runs' wall times that are known (nan when none is: no episode ended yet)"""
    known = [time for time in times if not math.isnan(time)]
    return float(np.mean(known)) if known else math.nan


def _episodesWithin(run: Run, budget: int | None) -> int:
    """:return: the training episodes the run finished within ``budget`` env steps (all of them for None)"""
    timesteps = run.episodes["timesteps"]
    return int(timesteps.size if budget is None else np.searchsorted(timesteps, budget, side="right"))


def _runStepsToThreshold(run: Run, threshold: float, window: int, evaluation: bool,
                         budget: int | None = None) -> int | None:
    """:return: the env step at which the mean of the last ``window`` training episodes within ``budget`` (all of
    them when the run finished fewer there: the episodes its reward at that budget averages), or with ``evaluation``
    the mean of an evaluation, first reaches ``threshold``; None if never"""
    if not evaluation:
        count = _episodesWithin(run, budget)
        return episodeWindowStepsToThreshold(run.episodes["timesteps"][:count], run.episodes["rewards"][:count],
                                             threshold, max(1, min(window, count)))
    return evaluationStepsToThreshold(run.evaluations["timesteps"], run.evaluations["results"].mean(axis=1), threshold)


def welchDimension(method: str, runs: Sequence[Run]) -> int:
    """
    :param method: the --welch-test value
    :param runs: all runs
    :return: the position in a method key that ``method`` names (1: srl_model, 2: algo)
    :raises UsageError: no run uses that SRL model or algorithm
    """
    srl_models = sorted({str(run.args["srl_model"]) for run in runs})
    algos = sorted({str(run.args["algo"]) for run in runs})
    if method in srl_models:
        return GROUP_KEYS.index("srl_model")
    if method in algos:
        return GROUP_KEYS.index("algo")
    raise UsageError(f"--welch-test {method!r} is no SRL model or algorithm of these runs; valid choices: "
                     f"{', '.join(srl_models + [a for a in algos if a not in srl_models])}")


def groundTruthThresholds(groups: dict[tuple, list[Run]], window: int, evaluated: dict[tuple, bool],
                          share: float = GROUND_TRUTH_FRACTION) -> dict[tuple, float]:
    """
    :param groups: method key -> runs (replay.results.groupRuns)
    :param window: episodes averaged
    :param evaluated: method key -> its rewards come from the evaluations
    :param share: the fraction of ground truth's reward
    :return: (env, algo, *group_by values) -> ``share`` x the mean final reward of its ground-truth runs, for those
        whose mean is positive (a fraction of a negative reward would be easier to reach than the reward itself)
    """
    result = {}
    for key, members in groups.items():
        if key[1] != GROUND_TRUTH:
            continue
        values = [v[0] for run in members if (v := _runValue(run, None, window, evaluated[key])) is not None]
        if values and float(np.mean(values)) > 0:
            result[(key[0], *key[2:])] = share * float(np.mean(values))
    return result


def gather(runs: Sequence[Run], budgets: Sequence[int], window: int, threshold: float | None,
           welch: str | None, group_by: Sequence[str] = (), training_rewards: bool = False,
           share: float = GROUND_TRUTH_FRACTION) -> list[dict[str, Any]]:
    """
    :param runs: the runs
    :param budgets: env-step budgets (the final results come first)
    :param window: episodes averaged
    :param threshold: mean reward to reach for every env (None: ``share`` of ground truth's mean final reward where
        the runs have ground-truth runs of the env, algorithm and group, else the env's default, else none)
    :param welch: baseline method for Welch's t-test, or None
    :param group_by: extra args.json keys splitting methods
    :param training_rewards: use the training episodes even for methods whose runs all have evaluations
    :param share: the fraction of ground truth's mean final reward that is an env's threshold
    :return: one row per (budget, method); ``source`` says whether its rewards are evaluations or training episodes,
        ``threshold_source`` where its threshold comes from (given, ground truth, default; None without one)
    :raises UsageError: no run is left to measure (replay.results.measuredRuns), or ``welch`` names no method
    """
    runs = measuredRuns(runs, group_by, training_rewards)  # (those without an episode: for their evaluations only)
    groups = groupRuns(runs, group_by)
    dimension = welchDimension(welch, runs) if welch is not None else None
    evaluated = {key: not training_rewards and hasEvaluations(members) for key, members in groups.items()}
    references = groundTruthThresholds(groups, window, evaluated, share)
    rows = []
    for budget in [None, *sorted(set(budgets))]:
        values = {key: [(run, v) for run in members
                        if (v := _runValue(run, budget, window, evaluated[key])) is not None]
                  for key, members in groups.items()}
        for key, members in values.items():
            rewards = [v[0] for _, v in members]
            mean, std, low, high = meanInterval(rewards)
            reference = references.get((key[0], *key[2:]))
            env_threshold, source = ((threshold, "given") if threshold is not None
                                     else (reference, "ground truth") if reference is not None
                                     else (DEFAULT_THRESHOLDS.get(key[0]), "default"))
            steps = []
            if env_threshold is not None:
                steps = [s for run, _ in members
                         if (s := _runStepsToThreshold(run, env_threshold, window, evaluated[key], budget)) is not None
                         and (budget is None or s <= budget)]
            row = {**dict(zip((*GROUP_KEYS, *group_by), key)), "budget": FINAL if budget is None else budget,
                   "source": "evaluation" if evaluated[key] else "training", "runs": len(members),
                   "seeds": " ".join(str(run.seed) for run, _ in members),
                   "mean_reward": mean, "std_reward": std, "ci95_low": low, "ci95_high": high,
                   "threshold": env_threshold, "threshold_source": source if env_threshold is not None else None,
                   "reached": len(steps) if env_threshold is not None else None,
                   "median_steps_to_threshold": float(np.median(steps)) if steps else None,
                   "mean_wall_time_s": _meanWallTime([v[1] for _, v in members]),
                   "fewest_episodes": min((_episodesWithin(run, budget) for run, _ in members), default=0),
                   "no_episode_yet": sum(_trainedTo(run, budget) and not _episodesWithin(run, budget)
                                         for run in groups[key]),
                   "welch_vs": None, "welch_p_value": None}
            if dimension is not None:
                base_key = key[:dimension] + (welch,) + key[dimension + 1:]
                if base_key != key and base_key in values:
                    row["welch_vs"] = welch
                    baseline = [v[0] for _, v in values[base_key]]
                    if len(rewards) >= 2 and len(baseline) >= 2:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")  # zero variance on both sides: nan, said as such
                            row["welch_p_value"] = float(stats.ttest_ind(rewards, baseline, equal_var=False).pvalue)
            rows.append(row)
    return rows


def _csvValue(value: Any) -> str:
    if value is None or isinstance(value, float) and math.isnan(value):
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def writeCsv(path: str, rows: Sequence[dict[str, Any]]) -> None:
    """
    :param path: the CSV file
    :param rows: rows of :func:`gather`
    """
    with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(rows[0]))
        for row in rows:
            writer.writerow([_csvValue(value) for value in row.values()])


def _number(value: float, digits: int = 2) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _threshold(value: float) -> str:
    """:return: a threshold to the rewards' precision (2 decimals), without trailing zeros: ``150``, ``21.74``"""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def paddedTable(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """
    :param head: the column names
    :param rows: each row's cells, one per column
    :return: the lines of a Markdown table whose cells are padded to their column's widest, so that the raw text
        reads as a table too (as pandas' ``to_markdown`` writes one)
    """
    widths = [max(3, *(len(cells[index]) for cells in (head, *rows))) for index in range(len(head))]
    return ["| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths)) + " |"
            for cells in (head, ["-" * width for width in widths], *rows)]


def markdown(rows: Sequence[dict[str, Any]], window: int, welch: str | None, group_by: Sequence[str] = (),
             unfinished: int = 0) -> str:
    """
    :param rows: rows of :func:`gather`
    :param window: the episode window (for the header)
    :param welch: the baseline method, if any
    :param group_by: extra method keys
    :param unfinished: the unfinished runs measured (left out of the final table, said under it)
    :return: the Markdown tables, one per budget
    """
    head = ["env", "srl model", "algo", *group_by, "runs", "reward, mean ± std", "measured on", "95% CI",
            "steps to threshold (median, reached)", "wall time"]
    if welch is not None:
        head.append(f"p (Welch vs {welch})")
    lines = ["# Results", ""]
    for budget in dict.fromkeys(row["budget"] for row in rows):
        lines += [f"## {'Final' if budget == FINAL else f'At {budget:,} steps'}", ""]
        table = []
        for row in (r for r in rows if r["budget"] == budget):
            if row["runs"] == 0:
                steps = "n/a"  # (no run to have reached it: "measured on" says why)
            elif row["threshold"] is None:
                steps = "no threshold"
            elif row["median_steps_to_threshold"] is None:
                steps = f"{_threshold(row['threshold'])} not reached ({row['reached']}/{row['runs']})"
            else:
                steps = f"{row['median_steps_to_threshold']:,.0f} ({row['reached']}/{row['runs']})"
            reward = (f"{_number(row['mean_reward'])} ± {_number(row['std_reward'])}" if row["runs"] >= 2
                      else _number(row["mean_reward"]))
            interval = (f"[{_number(row['ci95_low'])}, {_number(row['ci95_high'])}]" if row["runs"] >= 2 else "n/a")
            wall = row["mean_wall_time_s"]
            if row["runs"] == 0 and row.get("no_episode_yet"):
                source = f"no episode finished within {budget:,} steps"
            elif row["runs"] == 0:
                source = "no run finished" if budget == FINAL else f"no run trained to {budget:,} steps"
            elif row["source"] == "evaluation":
                source = "last evaluation (deterministic)"
            else:
                source = ("last training episode" if window == 1 else f"last {window} training episodes") + (
                    f" (all {row['fewest_episodes']} of a shorter run)" if row["fewest_episodes"] < window else "")
            cells = [row["env"], row["srl_model"], row["algo"], *(str(row[name]) for name in group_by),
                     str(row["runs"]), reward, source, interval, steps,
                     "n/a" if math.isnan(wall) else f"{wall:.0f} s" if wall < 600 else f"{wall / 60:.1f} min"]
            if welch is not None:
                p_value = row["welch_p_value"]
                if welch in (row["srl_model"], row["algo"]):
                    cells.append("baseline")
                elif row["welch_vs"] is None:
                    cells.append("no baseline runs")
                else:
                    cells.append("n/a" if p_value is None or math.isnan(p_value) else f"{p_value:.3g}")
            table.append(cells)
        lines += paddedTable(head, table)
        if budget == FINAL and unfinished:
            lines += ["", f"{unfinishedNote(unfinished)}."]
        lines.append("")
    # one per env, algorithm and --group-by values (a group's own ground-truth runs give its threshold); the methods
    # of an env with the same threshold from the same source (the env's default) share one entry
    thresholds = sorted({(row["env"], ", ".join([row["algo"], *(f"{name}={row[name]}" for name in group_by)]),
                          row["threshold"], row["threshold_source"]) for row in rows if row["threshold"] is not None})
    shared: dict[tuple[str, float, str], list[str]] = {}
    for env, method, value, source in thresholds:
        shared.setdefault((env, value, source), []).append(method)
    if shared:
        lines.append("Thresholds: " + ", ".join(f"{env} ({'; '.join(methods)}) {_threshold(value)} ({source})"
                                                for (env, value, source), methods in shared.items()) + ".")
        lines.append("")
    if missing := missingThresholds(rows, group_by):
        lines += ["No threshold: " + ", ".join(f"{env} ({'; '.join(sorted(methods))}): {why}"
                                               for (env, why), methods in sorted(missing.items()))
                  + "; give --threshold R for the steps to R.", ""]
    return "\n".join(lines)


def missingThresholds(rows: Sequence[dict[str, Any]], group_by: Sequence[str] = ()) -> dict[tuple[str, str], list[str]]:
    """
    :param rows: rows of :func:`gather`
    :param group_by: extra method keys
    :return: (env, why) -> the methods (algorithm and group values) of the measured final rows that have no threshold,
        why being what the default rule lacked: a finished ground-truth run of the same env, algorithm and group, or a
        positive mean final reward of those runs (90% of a negative one would be easier to reach than it)
    """
    finals = [row for row in rows if row["budget"] == FINAL and row["runs"] > 0]
    missing: dict[tuple[str, str], list[str]] = {}
    for row in (row for row in finals if row["threshold"] is None):
        method = ", ".join([row["algo"], *(f"{name}={row[name]}" for name in group_by)])
        truth = next((other for other in finals if other["srl_model"] == GROUND_TRUTH and all(
            other[name] == row[name] for name in ("env", "algo", *group_by))), None)
        why = ("no finished ground-truth run" if truth is None else
               f"ground truth's mean final reward {_number(truth['mean_reward'])} is not positive")
        methods = missing.setdefault((row["env"], why), [])
        if method not in methods:
            methods.append(method)
    return missing


def unfinishedNote(count: int) -> str:
    """:return: what the final results say of the ``count`` unfinished runs they leave out"""
    return (f"{plural(count, 'unfinished run')} (still training, or stopped before --num-timesteps) left out of the "
            f"final results: a reward before the budget is not a final reward; "
            f"{'it counts' if count == 1 else 'they count'} only at the --timestep-budget values reached")


def checkedInputs(argv: Sequence[str] | None = None, write: bool = True
                  ) -> tuple[argparse.Namespace, list[Run], str | None, str | None]:
    """
    The command's checks: its flags, its runs and (``write``) its output files; nothing is written.

    :param argv: command-line arguments (default: sys.argv[1:])
    :param write: check the output files (else none is written: the Python API's table alone)
    :return: the parsed flags, the runs measured, the CSV and Markdown paths (None without ``write``)
    :raises UsageError: bad input (one line): ``--welch-test`` naming no method of the runs included
    :warns: the runs skipped, and the unfinished ones taken
    """
    args: argparse.Namespace = buildParser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.threshold is not None and args.threshold_fraction != GROUND_TRUTH_FRACTION:
        raise UsageError(f"--threshold-fraction {args.threshold_fraction:g} sets the threshold from ground truth's runs, "
                         f"and --threshold {args.threshold:g} sets it outright: give one of them")
    # (unfinished runs count at the budgets they reached; those without an episode, by their evaluations)
    runs = measuredRuns(findRuns(args.log_dir, args.group_by, unfinished=True, evaluation_only=True), args.group_by,
                        args.training_rewards)
    if args.welch_test is not None:  # (refused before the tables' warnings of pooled methods are shown)
        welchDimension(args.welch_test, runs)
    unfinished = [run.path for run in runs if not run.finished]
    if unfinished:
        warnings.warn(f"{unfinishedNote(len(unfinished))}, e.g. {unfinished[0]}")
    if not write:
        return args, runs, None, None
    output_dir = args.output_dir or args.log_dir
    csv_path, md_path = os.path.join(output_dir, "results.csv"), os.path.join(output_dir, "results.md")
    flag = "--output-dir" if args.output_dir else "--log-dir"
    checkFolderName(output_dir, flag, "results.csv and results.md are written in it")
    checkWritableFolder(output_dir, flag)  # (a file given as the folder: named as given, not as results.csv in it)
    checkOutputFiles((csv_path, md_path), flag)
    return args, runs, csv_path, md_path


def tables(args: argparse.Namespace, runs: Sequence[Run]) -> tuple[list[dict[str, Any]], str]:
    """
    :param args: the command's flags (:func:`checkedInputs`)
    :param runs: the runs measured
    :return: the rows of :func:`gather` and their Markdown tables (:func:`markdown`)
    :raises UsageError: ``--welch-test`` names no method of the runs
    :warns: methods whose finished runs differ in other settings (replay.results.warnMixedMethods)
    """
    groups = groupRuns(runs, args.group_by)
    # the final results pool the finished runs (an unfinished one differs in its budget by nature)
    warnMixedMethods({key: finished for key, members in groups.items()
                      if (finished := [run for run in members if run.finished])}, args.group_by)
    rows = gather(runs, args.timestep_budget, args.episode_window, args.threshold, args.welch_test, args.group_by,
                  args.training_rewards, args.threshold_fraction)
    unfinished = sum(not run.finished for run in runs)
    return rows, markdown(rows, args.episode_window, args.welch_test, args.group_by, unfinished)


def writeTables(csv_path: str, md_path: str, rows: Sequence[dict[str, Any]], text: str) -> None:
    """Write ``results.csv`` (:func:`writeCsv`) and ``results.md`` (``text``), each atomically."""
    writeCsv(csv_path, rows)
    with atomicPath(md_path) as tmp_path, open(tmp_path, "w", encoding="utf-8") as handle:
        handle.write(text)


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    :raises UsageError: bad input (one line), before any warning of the checks is shown (they are once the checks
        pass)
    """
    with HeldWarnings():
        args, runs, csv_path, md_path = checkedInputs(argv)
    assert csv_path is not None and md_path is not None
    rows, text = tables(args, runs)
    writeTables(csv_path, md_path, rows, text)
    print(text)
    groups = groupRuns(runs, args.group_by)
    unfinished = sum(not run.finished for run in runs)
    # each method as aggregate_plots names it: env, algo, SRL model and the --group-by values as name=value
    methods = {f"{row['env']} {methodLabel(tuple(row[name] for name in (*GROUP_KEYS, *args.group_by)), args.group_by)}":
               row["source"] for row in rows}
    evaluated = sorted(label for label, source in methods.items() if source == "evaluation")
    if args.training_rewards:
        print("Rewards from training episodes (--training-rewards)")
    elif not evaluated:
        print("Rewards from training episodes (no method has evaluations for all its runs)")
    else:
        print(f"Rewards from evaluations (evaluations.npz) for: {', '.join(evaluated)}"
              + ("; the other methods from training episodes" if len(evaluated) < len(methods) else ""))
    left_out = f" ({unfinished} unfinished: not in the final results)" if unfinished else ""
    print(f"{plural(len(runs), 'run')}{left_out}, {plural(len(groups), 'method')}: {csv_path}, {md_path}")
    return 0


if __name__ == "__main__":
    runCommand(main)
