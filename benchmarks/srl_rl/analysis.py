"""The SRL + RL benchmark's analysis: one table, verdicts and one learning-curve figure per env, from its runs.

Per env and observation, over the seeds: the final evaluation reward (mean of the last evaluation's episodes) as mean
+/- standard error; the steps to the threshold (replay.results.evaluationStepsToThreshold: the first evaluation at or
above :data:`THRESHOLD_FRACTION` of ground truth's mean final evaluation reward; the median over the seeds that
reached it, and how many did); the area under the evaluation curve divided by the steps it spans (the mean evaluation
reward over training, in reward units: larger when a method learns sooner); the GTC and the linear probe's R^2 of the
representation (a learned model's; none for raw pixels and their variants); and the p-value of Welch's t-test
(``scipy.stats.ttest_ind(equal_var=False)``) of the final rewards against raw pixels.
Beside it: the published figures of Raffin et al. (:data:`ANCHOR`) and a comparison as fractions of ground truth.
Invariant: the tables are written from what exists; an observation or a seed without a finished run is marked
missing, never guessed; the runs column counts the runs continued after a stop (benchmarks.srl_rl.runs.continuedNote).
"""
from __future__ import annotations

import dataclasses
import math
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure
from scipy import stats

from benchmarks.srl_rl.env_plans import GROUND_TRUTH, PLANS, RAW_PIXELS, EnvPlan
from benchmarks.srl_rl.models import modelMetrics
from benchmarks.srl_rl.plans import (
    ANCHOR,
    GT_SCALE,
    OBSERVATIONS,
    RAW_PIXELS_SHIFT,
    THRESHOLD_FRACTION,
    VARIANTS,
    counted,
    isEnvObservation,
    modelName,
)
from benchmarks.srl_rl.runs import RunRecord, dateSpan
from replay.results import aggregateEvaluations, evaluationStepsToThreshold
from rl_baselines.core.run_folder import EVALUATIONS_FILE
from srl_toolbox.files import atomicPath


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


def rewardThreshold(finals: Sequence[float]) -> float | None:
    """
    The one rule for the threshold of "steps to threshold", in every benchmark that has one (docs/srl.md).

    :param finals: ground truth's final evaluation rewards, one per seed
    :return: :data:`THRESHOLD_FRACTION` x their mean; None without a value, or when the mean is not positive (a
        fraction of a negative reward lies above it, and ground truth itself would not reach it)
    """
    mean = meanStandardError(finals)[0]
    return THRESHOLD_FRACTION * mean if len(finals) and mean > 0 else None


def welchPValue(values: Sequence[float], baseline: Sequence[float]) -> float:
    """
    :param values: a method's final rewards, one per seed
    :param baseline: the baseline's
    :return: the two-sided p-value of Welch's t-test (unequal variances); nan with fewer than 2 values on a side or
        no variance on both
    """
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


def summariseEnv(records: Sequence[RunRecord], observations: Sequence[str], expected: int | Mapping[str, int],
                 notes: dict[str, str] | None = None) -> tuple[list[ObservationSummary], float | None]:
    """
    :param records: the env's finished runs
    :param observations: the rows, in order
    :param expected: runs per observation this configuration asks for (observation -> runs where they differ)
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
            note = (note + "; " if note else "") + f"{without} finished run(s) without {EVALUATIONS_FILE}"
        asked = expected if isinstance(expected, int) else expected[name]
        rows.append(ObservationSummary(name, runs, asked, finals, meanStandardError(finals),
                                       meanStandardError([normalisedArea(r.eval_steps, r.eval_rewards) for r in runs]),
                                       note=note))
    reference = next((row for row in rows if row.observation == GROUND_TRUTH and row.finals), None)
    threshold = rewardThreshold(reference.finals) if reference is not None else None
    baseline = next((row.finals for row in rows if row.observation == RAW_PIXELS), [])
    for row in rows:
        if threshold is not None:
            row.reach = [evaluationStepsToThreshold(r.eval_steps, r.eval_rewards, threshold) for r in row.runs]
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


def tableDigits(rows: Sequence[ObservationSummary]) -> int:
    """:return: the decimals of a table's rewards: 1 when every final reward shown is at least 20, else 2"""
    return 1 if all(abs(r.final[0]) >= 20 for r in rows if r.finals) else 2


def plusMinus(pair: tuple[float, float], digits: int) -> str:
    """:return: ``(mean, standard error)`` as the tables show it: ``mean +/- error``, the mean alone when the error is
    nan (one seed), ``n/a`` without a mean"""
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
    :return: (the paper's figure, the comparison); "not recorded here" for an env whose published figures
        :data:`ANCHOR` does not hold
    """
    if env not in ANCHOR[GROUND_TRUTH]:
        return "not recorded here", "-"
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


def reportedModels(records: Sequence[RunRecord], registered: dict[str, dict[str, Any]],
                   measured: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """
    :param records: an env's runs in the report (bench folder and archive)
    :param registered: the facts of the models registered for the env (benchmarks.srl_rl.models.registeredFacts)
    :param measured: model hash -> facts with metrics that the archive holds (benchmarks.srl_rl.archive.measuredModels)
    :return: learned model name -> the facts its GTC column shows: those of the model its runs used (the registered
        one's for a run made with it, else the archive's for that model, else the run's recorded facts; the
        registered model's when it has no run). When
        its runs used several trainings of one recipe (models.sameModel), the mean of each metric (models.modelMetrics:
        GTC, KNN-MSE, any other) over those where it is known, with ``trainings`` set to their count
    """
    used: dict[str, dict[str, dict[str, Any]]] = {}
    for record in records:
        if record.model is None or record.model.get("hash") is None:
            continue
        current = registered.get(modelName(record.observation))
        model = current if current is not None and current.get("hash") == record.model["hash"] else \
            (measured or {}).get(record.model["hash"], record.model)
        used.setdefault(record.observation, {})[record.model["hash"]] = model
    facts = dict(registered)
    for name, models in used.items():
        values = list(models.values())
        if len(values) == 1:
            facts[name] = values[0]
            continue
        combined: dict[str, Any] = {"state_dim": values[0].get("state_dim"), "trainings": len(values)}
        for key in dict.fromkeys(name for value in values for name in modelMetrics(value)):
            known = [metric for value in values if not math.isnan(metric := modelMetrics(value).get(key, math.nan))]
            combined[key] = float(np.mean(known)) if known else math.nan
        facts[name] = combined
    return facts


def _metric(facts: dict[str, Any], name: str) -> str:
    """:return: a model's metric to 3 decimals, ``n/a`` when its facts do not hold it (a model evaluated before the
    metric existed) or hold nan"""
    value = facts.get(name)
    return "n/a" if value is None or math.isnan(float(value)) else f"{float(value):.3f}"


def envTable(env: str, rows: Sequence[ObservationSummary], threshold: float | None,
             models: dict[str, dict[str, Any]]) -> str:
    """
    :param env: env id
    :param rows: its summaries
    :param threshold: its threshold (None: not defined)
    :param models: learned model name -> its facts (benchmarks.srl_rl.models.modelFacts, or
        :func:`reportedModels`' combined facts)
    :return: the markdown table; the two paper columns only for a planned env (one of the paper's tasks: an env
        without a plan is none of them)
    """
    reference = next((row for row in rows if row.observation == GROUND_TRUTH and row.finals), None)
    with_paper = env in PLANS
    columns = ["observation", "runs", "final eval reward (mean +/- SE)", "steps to threshold (median, reached)",
               "AUC / steps (mean +/- SE)", "GTC (state dim)", "probe R^2", "p (Welch vs raw pixels)",
               *(["paper (mean +/- SE)", "here vs paper"] if with_paper else [])]
    alignments = ["---", *["---:"] * (len(columns) - 2), "---" if with_paper else "---:"]
    lines = [f"| {' | '.join(columns)} |", f"|{'|'.join(alignments)}|"]
    digits = tableDigits(rows)
    for row in rows:
        paper, comparison = anchorComparison(row, env, reference)
        facts = models.get(row.observation, models.get(modelName(row.observation)))
        if modelName(row.observation) == GROUND_TRUTH:
            gtc, probe = "1 (the state itself)", "1"
        elif isEnvObservation(row.observation):  # raw pixels, or a variant of them: no learned state
            gtc, probe = "- (pixels)", "-"
        elif facts is not None:
            gtc, probe = _metric(facts, "gtc"), _metric(facts, "probe_r2")
            detail = [f"{facts['state_dim']}"] if facts.get("state_dim") is not None else []
            if facts.get("trainings"):
                detail.append(f"mean of {facts['trainings']} trainings")
            if detail:
                gtc += f" ({'; '.join(detail)})"
        else:
            gtc, probe = "not prepared", ""
        runs = f"{len(row.runs)}/{row.expected}"
        archived = sum(record.archived for record in row.runs)
        continued = sum(record.continued for record in row.runs)
        counts = [*([f"{archived} archived"] if archived else []), *([f"{continued} continued"] if continued else [])]
        if counts:
            runs += f" ({', '.join(counts)})"
        if not row.runs:
            lines.append(f"| {row.observation} | {runs} | missing{': ' + row.note if row.note else ''} | | | {gtc} | "
                         f"{probe} | |" + (f" {paper} | |" if with_paper else ""))
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
        final = plusMinus(row.final, digits) + (f" ({row.note})" if row.note else "")
        lines.append(f"| {row.observation} | {runs} | {final} | {reach} | {plusMinus(row.area, digits)} | {gtc} | {probe} | "
                     f"{p_value} |" + (f" {paper} | {comparison} |" if with_paper else ""))
    return "\n".join(lines)


def verdicts(rows: Sequence[ObservationSummary], threshold: float | None, learned: Sequence[str]) -> list[str]:
    """
    :param rows: an env's summaries
    :param threshold: its threshold
    :param learned: the learned observation names
    :return: sentences that answer the question from the figures; the comparisons with raw pixels cover the learned
        rows and the variants of raw pixels (``raw_pixels_shift``)
    """
    reference = next((row for row in rows if row.observation == GROUND_TRUTH and row.finals), None)
    pixels = next((row for row in rows if row.observation == RAW_PIXELS and row.finals), None)
    done = [row for row in rows if row.observation in learned and row.finals]
    compared = [row for row in rows if row.finals and (row.observation in learned or (
        row.observation in VARIANTS and modelName(row.observation) == RAW_PIXELS))]
    sentences = []
    if reference is None:
        return ["No ground-truth run has finished yet: no threshold and no comparison."]
    if learned:
        level = reference.final[0] - (0.0 if math.isnan(reference.final[1]) else reference.final[1])
        close = [row.observation for row in done if row.final[0] >= level]
        within = ("at or above ground truth's (one seed: no standard error)" if math.isnan(reference.final[1]) else
                  "within one standard error of ground truth's or above")
        sentences.append(f"Learned representations whose mean final reward is {within} ({level:.2f}): "
                         f"{', '.join(close) or 'none'}.")
    if threshold is not None and pixels is not None:
        pixel_median, pixel_share = medianReach(pixels), reachedShare(pixels)
        faster = [row.observation for row in compared if (median := medianReach(row)) is not None
                  and (pixel_median is None or reachedShare(row) > pixel_share
                       or (reachedShare(row) == pixel_share and median < pixel_median))]
        pixel_text = ("raw pixels never reached it" if pixel_median is None
                      else f"raw pixels: median {pixel_median:,.0f} steps, {pixel_share:.0%} of the seeds")
        sentences.append(f"Reaching the threshold ({threshold:.2f}) with a larger share of the seeds than raw pixels, "
                         f"or as large a share in fewer steps ({pixel_text}): {', '.join(faster) or 'none'}.")
    if pixels is not None:
        different = [f"{row.observation} ({'better' if row.final[0] > pixels.final[0] else 'worse'})" for row in compared
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


# Panels of the learning-curve figure: each learned model (and each variant) beside the two references (ground truth,
# raw pixels), a few at a time so that the curves stay readable; an observation of no panel gets one of its own.
PANELS = (("supervised", "random", "pca"), ("autoencoder", "vae"), ("inverse", "robotic_priors"),
          ("srl_combination", "srl_splits", GT_SCALE), ("atc", "curl", RAW_PIXELS_SHIFT))


# matplotlib's default cycle without its grey (C7), which raw pixels' reference curve uses
# one colour per learned model of OBSERVATIONS (by its place there; none of raw pixels' grey): no two alike
LEARNED_COLORS = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8", "C9", "navy", "teal", "magenta", "goldenrod")


def panelGroups(observations: Sequence[str]) -> list[list[str]]:
    """
    :param observations: the observations of the report, in order
    :return: the observations of each panel but the two references (:data:`PANELS` order; one empty panel when there
        are none)
    """
    drawn = [name for name in observations if name not in (GROUND_TRUTH, RAW_PIXELS)]
    groups = [[name for name in panel if name in drawn] for panel in PANELS]
    groups = [group for group in groups if group]
    others = [name for name in drawn if not any(name in panel for panel in PANELS)]
    return groups + ([others] if others else []) or [[]]


# A variant's colour: its model's with each channel times this (raw pixels' grey with --augment shift a darker grey)
VARIANT_SHADE = 0.6
REFERENCE_STYLES = {GROUND_TRUTH: {"color": "black", "linestyle": "-"}, RAW_PIXELS: {"color": "0.55", "linestyle": "--"}}


def curveStyle(name: str) -> dict[str, Any]:
    """
    :param name: an observation
    :return: its curve's colour and line style in every figure: ground truth black, raw pixels grey dashed, a learned
        model a colour of its own (:data:`LEARNED_COLORS` by its place in :data:`OBSERVATIONS`), a variant its model's
        colour darkened (:data:`VARIANT_SHADE`) and dash-dotted
    """
    if name in REFERENCE_STYLES:
        return dict(REFERENCE_STYLES[name])
    model = modelName(name)
    if model in REFERENCE_STYLES:
        color = REFERENCE_STYLES[model]["color"]
    else:
        color = LEARNED_COLORS[OBSERVATIONS.index(model) % len(LEARNED_COLORS) if model in OBSERVATIONS else 0]
    if name not in VARIANTS:
        return {"color": color, "linestyle": "-"}
    return {"color": to_hex(tuple(VARIANT_SHADE * channel for channel in to_rgb(color))), "linestyle": "-."}


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
    data = {label: (x, y) for label, x, y in curves(rows)}
    groups = panelGroups([row.observation for row in rows])
    columns = min(2, len(groups))
    lines = math.ceil(len(groups) / columns)
    figure = Figure(figsize=(6.5 * columns, 3.6 * lines + 1.0), dpi=100)
    FigureCanvasAgg(figure)
    panels = figure.subplots(lines, columns, squeeze=False, sharex=True, sharey=True).ravel()
    for axes, group in zip(panels, groups):
        for name in [GROUND_TRUTH, RAW_PIXELS, *group]:
            if name not in data:
                continue
            x, y = data[name]
            style = curveStyle(name)
            mean = y.mean(axis=0)
            axes.plot(x, mean, linewidth=2 if name in group else 1.5, marker="o", markersize=3,
                      label=f"{name} ({counted(y.shape[0], 'run')})", **style)
            if y.shape[0] >= 2:
                error = y.std(axis=0, ddof=1) / math.sqrt(y.shape[0])
                axes.fill_between(x, mean - error, mean + error, color=style["color"], alpha=0.15, linewidth=0)
        if threshold is not None:
            axes.axhline(threshold, color="0.4", linestyle=":", linewidth=1)
        axes.grid(True, alpha=0.3)
        axes.legend(loc="best", fontsize=8)
    for index in range(len(groups), len(panels)):  # an empty panel: the one above it is its column's bottom
        panels[index].set_visible(False)
        panels[index - columns].tick_params(labelbottom=True)
    title = f"ppo2 on {plan.env}" + (f" (threshold {threshold:.2f}, dotted)" if threshold is not None else "")
    shown = [record for row in rows for record in row.runs]
    archived = [record for record in shown if record.archived]
    if archived:
        title += (f"\n{len(shown)} runs, {len(archived)} of them from the archive" if len(archived) < len(shown)
                  else f"\n{len(shown)} runs from the archive") + f", finished {dateSpan(shown)}"
    figure.suptitle(title + "\nmean over seeds, band +/- 1 standard error")
    figure.supxlabel("env steps")
    figure.supylabel(f"evaluation reward (deterministic, mean of {counted(plan.eval_episodes, 'episode')})")
    figure.tight_layout()
    with atomicPath(path) as tmp_path:
        figure.savefig(tmp_path, format="png")
