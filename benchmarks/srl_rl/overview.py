"""The SRL + RL benchmark over its tasks: normalised scores, their interquartile mean with stratified bootstrap
intervals, performance profiles, one summary figure, and which representation metric predicts the agent's reward.

A run's *score* is its final evaluation reward divided by ground truth's mean final evaluation reward on its task
(1: as good as ground truth). Per observation, over the tasks where ground truth has a positive mean final reward
and the observation has runs: the interquartile mean (IQM) and the mean of the pooled scores, each with a 95%
stratified bootstrap interval (benchmarks.srl_rl.bootstrap: the runs resampled within each task), and the run-score
performance profile (the share of runs above each score tau). The metric correlation is Spearman's rank correlation,
per task, between a representation metric of the learned models (every numeric metric their records hold: GTC,
KNN-MSE and any other an SRL model's evaluation records) and the models' mean final reward, with a 95% bootstrap
interval over the models. Invariants: an observation is compared over the tasks where it has runs, and the table says
on how many; nothing is computed from a task without a ground-truth reference; the bootstrap is seeded (the same
runs give the same section).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from benchmarks.srl_rl.analysis import ObservationSummary, curveStyle
from benchmarks.srl_rl.bootstrap import interquartileMean, performanceProfile, spearmanInterval, stratifiedBootstrap
from benchmarks.srl_rl.env_plans import GROUND_TRUTH, RAW_PIXELS
from benchmarks.srl_rl.models import METRICS, modelMetrics
from benchmarks.srl_rl.plans import OBSERVATIONS, VARIANTS, counted, modelName
from srl_toolbox.files import atomicPath

# Metrics where lower is better (a negative correlation with the reward is the expected sign).
LOWER_IS_BETTER = ("knn_mse",)
METRIC_NAMES = {"gtc": "GTC", "knn_mse": "KNN-MSE", "probe_r2": "linear probe R^2"}
TAUS = np.linspace(0.0, 1.2, 61)
PROFILE_CURVES = 5  # ground truth, raw pixels and the best other rows by IQM


def normalisedScores(rows_by_task: dict[str, Sequence[ObservationSummary]]) -> dict[str, dict[str, np.ndarray]]:
    """
    :param rows_by_task: env -> its rows (analysis.summariseEnv)
    :return: observation -> env -> its runs' final rewards divided by ground truth's mean final reward on the env,
        for the envs whose ground truth has a positive mean final reward and where the observation has runs
    """
    scores: dict[str, dict[str, np.ndarray]] = {}
    for env, rows in rows_by_task.items():
        reference = next((row for row in rows if row.observation == GROUND_TRUTH and row.finals), None)
        if reference is None or not reference.final[0] > 0:
            continue
        for row in rows:
            if row.finals:
                scores.setdefault(row.observation, {})[env] = np.asarray(row.finals) / reference.final[0]
    return scores


def scoredTasks(rows_by_task: dict[str, Sequence[ObservationSummary]]) -> list[str]:
    """:return: the envs of ``rows_by_task`` (in its order) whose ground truth has a positive mean final reward: the
    tasks of the statistics over the tasks and of the summary figure (none: neither is made)"""
    return [env for env in rows_by_task if env in normalisedScores(rows_by_task).get(GROUND_TRUTH, {})]


def aggregateRows(scores: dict[str, dict[str, np.ndarray]], seed: int = 0) -> list[dict[str, Any]]:
    """
    :param scores: :func:`normalisedScores`
    :param seed: the bootstrap's seed
    :return: per observation (in :data:`OBSERVATIONS` order, others after): tasks, runs, iqm and mean as (point,
        low, high) of their 95% stratified bootstrap intervals
    """
    order = sorted(scores, key=lambda name: OBSERVATIONS.index(name) if name in OBSERVATIONS else len(OBSERVATIONS))
    rows = []
    for name in order:
        tasks = list(scores[name].values())
        rows.append({"observation": name, "tasks": list(scores[name]), "runs": sum(len(task) for task in tasks),
                     "iqm": stratifiedBootstrap(tasks, lambda x: interquartileMean(x, axis=1), seed=seed),
                     "mean": stratifiedBootstrap(tasks, lambda x: x.mean(axis=1), seed=seed)})
    return rows


def _interval(triple: tuple[float, float, float]) -> str:
    point, low, high = triple
    return f"{point:.2f} [{low:.2f}, {high:.2f}]"


def aggregateTable(rows: Sequence[dict[str, Any]], task_count: int) -> str:
    """
    :param rows: :func:`aggregateRows`
    :param task_count: the tasks with a ground-truth reference
    :return: the markdown table
    """
    lines = ["| observation | tasks | runs | IQM of scores [95% CI] | mean of scores [95% CI] |",
             "|---|---:|---:|---:|---:|"]
    for row in rows:
        tasks = f"{len(row['tasks'])}/{task_count}"
        lines.append(f"| {row['observation']} | {tasks} | {row['runs']} | {_interval(row['iqm'])} | "
                     f"{_interval(row['mean'])} |")
    return "\n".join(lines)


def profileObservations(rows: Sequence[dict[str, Any]], task_count: int) -> list[str]:
    """
    :param rows: :func:`aggregateRows`
    :param task_count: the tasks with a ground-truth reference
    :return: the observations drawn in the performance profile: ground truth, raw pixels and the other rows on every
        task (learned models, variants) with the highest IQM (the highest mean among equal IQMs), :data:`PROFILE_CURVES`
        in all
    """
    complete = [row for row in rows if len(row["tasks"]) == task_count]
    fixed = [row["observation"] for row in complete if row["observation"] in (GROUND_TRUTH, RAW_PIXELS)]
    learned = sorted((row for row in complete if row["observation"] not in (GROUND_TRUTH, RAW_PIXELS)),
                     key=lambda row: (-row["iqm"][0], -row["mean"][0]))
    return fixed + [row["observation"] for row in learned[:max(0, PROFILE_CURVES - len(fixed))]]


def plotSummary(path: str, scores: dict[str, dict[str, np.ndarray]], rows: Sequence[dict[str, Any]],
                tasks: Sequence[str], seed: int = 0) -> None:
    """
    Write the summary figure as a PNG, atomically: the IQM of each observation's scores with its 95% interval (left),
    and the performance profiles of :func:`profileObservations` with their 95% bands (right).

    :param path: the PNG file
    :param scores: :func:`normalisedScores`
    :param rows: :func:`aggregateRows`
    :param tasks: the tasks with a ground-truth reference, in order
    :param seed: the bootstrap's seed
    """
    figure = Figure(figsize=(13, 0.35 * len(rows) + 3.2), dpi=100)
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.2]})
    names = [row["observation"] for row in rows][::-1]
    for position, name in enumerate(names):
        row = next(row for row in rows if row["observation"] == name)
        point, low, high = row["iqm"]
        style = curveStyle(name)
        left.plot([low, high], [position, position], color=style["color"], linewidth=6, alpha=0.45,
                  solid_capstyle="butt")
        left.plot([point], [position], marker="|", markersize=14, color=style["color"])
    left.set_yticks(range(len(names)))
    left.set_yticklabels([f"{name} ({len(next(r for r in rows if r['observation'] == name)['tasks'])}/{len(tasks)})"
                          for name in names], fontsize=9)
    left.axvline(1.0, color="0.4", linestyle=":", linewidth=1)
    left.set_xlabel("IQM of the scores (final reward / ground truth's mean), 95% stratified bootstrap CI")
    left.grid(True, axis="x", alpha=0.3)
    task_count = len(tasks)
    for name in profileObservations(rows, task_count):
        shares, low, high = performanceProfile(list(scores[name].values()), TAUS, seed=seed)
        style = curveStyle(name)
        right.plot(TAUS, shares, label=name, linewidth=2, **style)
        right.fill_between(TAUS, low, high, color=style["color"], alpha=0.15, linewidth=0)
    right.set_xlabel("score tau (final reward / ground truth's mean)")
    right.set_ylabel("share of runs with score > tau")
    right.set_ylim(-0.02, 1.02)
    right.grid(True, alpha=0.3)
    right.legend(loc="lower left", fontsize=8)
    figure.suptitle(f"ppo2 over {counted(task_count, 'task')}: {', '.join(tasks)}\nIQM per observation (left; tasks with runs "
                    "in brackets), performance profiles with 95% bands (right)", fontsize=10)
    figure.tight_layout()
    with atomicPath(path) as tmp_path:
        figure.savefig(tmp_path, format="png")


def metricNames(models_by_task: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """
    :param models_by_task: env -> learned model name -> its facts (analysis.reportedModels)
    :return: the metrics the models' facts hold (benchmarks.srl_rl.models.modelMetrics) with a finite value for some
        model: GTC and KNN-MSE first, then the others in the order found
    """
    found: dict[str, None] = {}
    for models in models_by_task.values():
        for facts in models.values():
            found.update({name: None for name, value in modelMetrics(facts).items() if math.isfinite(value)})
    return [name for name in METRICS if name in found] + [name for name in found if name not in METRICS]


def correlationRows(rows_by_task: dict[str, Sequence[ObservationSummary]],
                    models_by_task: dict[str, dict[str, dict[str, Any]]], learned: Sequence[str],
                    seed: int = 0) -> list[dict[str, Any]]:
    """
    :param rows_by_task: env -> its rows
    :param models_by_task: env -> learned model name -> its facts
    :param learned: the learned observations
    :param seed: the bootstrap's seed
    :return: per env and metric: the models counted (learned observations with runs and a finite metric; a variant
        is not counted, its model is its plain row's), Spearman's rho between the metric and their mean final reward,
        and its 95% bootstrap interval
    """
    result = []
    metrics = metricNames(models_by_task)
    for env, rows in rows_by_task.items():
        for metric in metrics:
            models = models_by_task.get(env, {})
            pairs = []
            for row in rows:
                if row.observation not in learned or row.observation in VARIANTS or not row.finals:
                    continue
                facts = models.get(row.observation, models.get(modelName(row.observation)))
                value = modelMetrics(facts).get(metric, math.nan)
                if math.isfinite(value):
                    pairs.append((row.observation, value, row.final[0]))
            rho, low, high = spearmanInterval([p[1] for p in pairs], [p[2] for p in pairs], seed=seed)
            result.append({"env": env, "metric": metric, "models": [p[0] for p in pairs], "rho": rho, "low": low,
                           "high": high})
    return result


def correlationTable(rows: Sequence[dict[str, Any]]) -> str:
    """
    :param rows: :func:`correlationRows`
    :return: the markdown table
    """
    lines = ["| task | metric | models | Spearman rho with the final reward [95% CI] |", "|---|---|---:|---:|"]
    for row in rows:
        name = METRIC_NAMES.get(row["metric"], row["metric"])
        if row["metric"] in LOWER_IS_BETTER:
            name += " (lower is better)"
        if math.isnan(row["rho"]):
            value = "n/a (fewer than 3 models, or no spread)"
        elif math.isnan(row["low"]):
            value = f"{row['rho']:.2f}"
        else:
            value = f"{row['rho']:.2f} [{row['low']:.2f}, {row['high']:.2f}]"
        lines.append(f"| {row['env']} | {name} | {len(row['models'])} | {value} |")
    return "\n".join(lines)


def overviewSection(rows_by_task: dict[str, Sequence[ObservationSummary]],
                    models_by_task: dict[str, dict[str, dict[str, Any]]], learned: Sequence[str],
                    image: str | None, image_path: str | None, seed: int = 0) -> str:
    """
    :param rows_by_task: env -> its rows (analysis.summariseEnv), in the report's order
    :param models_by_task: env -> learned model name -> its facts (analysis.reportedModels)
    :param learned: the learned observations
    :param image: the summary PNG's path relative to the document (None: no figure)
    :param image_path: where to write the summary PNG (None: not drawn)
    :param seed: the bootstrap's seed
    :return: the markdown of the two subsections (over the tasks, which says why it has no table when no task has a
        positive ground-truth reference to divide by; which metric predicts the reward, which needs none)
    """
    scores = normalisedScores(rows_by_task)
    tasks = scoredTasks(rows_by_task)
    skipped = [env for env in rows_by_task if env not in tasks]  # no positive ground-truth reward to divide by
    parts = _overTheTasks(scores, tasks, image, image_path, seed, skipped) if tasks else [
        "### Over the tasks", "", "No IQM of scores over the tasks: a score divides a run's final reward by ground "
        "truth's mean final reward on its task, and no task here has a positive one"
        + (f" ({', '.join(skipped)})" if skipped else "") + ".", ""]
    correlations = correlationRows(rows_by_task, models_by_task, learned, seed)
    if correlations:
        parts += ["### Which metric predicts the agent's success?", "",
                  "Spearman's rank correlation, per task, between each representation metric the learned models "
                  "record and their mean final evaluation reward, with a 95% bootstrap confidence interval over the "
                  "models (10,000 resamples, percentile method). A positive rho for GTC, or a negative one for "
                  "KNN-MSE (lower is better), means the metric ranks the models as the agent does; an interval that "
                  "spans 0 means the models measured cannot tell.", "", correlationTable(correlations), ""]
    return "\n".join(parts)


def _overTheTasks(scores: dict[str, dict[str, np.ndarray]], tasks: list[str], image: str | None, image_path: str | None,
                  seed: int, skipped: Sequence[str] = ()) -> list[str]:
    """:return: the lines of the IQM table over ``tasks`` (their normalised ``scores``) and its figure; the
    ``skipped`` tasks (without a positive ground-truth reward) are named as left out"""
    rows = aggregateRows(scores, seed)
    if image_path is not None:
        plotSummary(image_path, scores, rows, tasks, seed)
    parts = ["### Over the tasks", "",
             f"A run's *score* is its final evaluation reward divided by ground truth's mean final evaluation reward "
             f"on its task (1: as good as ground truth), over {counted(len(tasks), 'task')}: {', '.join(tasks)}"
             + (f" (left out, without a positive ground-truth mean final reward: {', '.join(skipped)})"
                if skipped else "")
             + ". Per "
             "observation, the interquartile mean (IQM: the mean of the middle half of the pooled scores of its runs "
             "on every task, robust to a few failed seeds) and the mean, each with a 95% stratified bootstrap "
             "confidence interval (10,000 resamples of the runs within each task, percentile method), as rliable "
             "(Agarwal et al. 2021) defines them (below 4 runs in all the IQM cuts nothing and is the mean); *tasks* "
             "says on how many tasks it has runs. The figure adds the "
             "performance profiles: the share of runs whose score is above tau, with 95% bands, of "
             + ", ".join(profileObservations(rows, len(tasks)))
             + " (ground truth, raw pixels and the other rows on every task with the highest IQM, then mean).", "",
             aggregateTable(rows, len(tasks)), ""]
    if image is not None:
        parts += [f"![IQM and performance profiles over the tasks]({image})", ""]
    return parts
