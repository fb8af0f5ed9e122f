"""Statistics over few runs and several tasks, after rliable (Agarwal et al., "Deep reinforcement learning at the edge
of the statistical precipice", 2021), in numpy.

- :func:`interquartileMean`: the mean of the middle 50% of the pooled scores of all runs and tasks
  (``scipy.stats.trim_mean(scores, 0.25)``, rliable's ``aggregate_iqm``);
- :func:`stratifiedBootstrap`: a percentile confidence interval of such a statistic, resampling the runs of each task
  with replacement, task by task (each resample keeps every task's number of runs: rliable's
  ``StratifiedBootstrap``, whose ``get_interval_estimates`` uses the percentile method);
- :func:`performanceProfile`: the share of runs, all tasks pooled, whose score is above each threshold tau
  (rliable's run-score distribution), with its stratified bootstrap band;
- :func:`spearmanInterval`: Spearman's rank correlation between two paired samples with a percentile bootstrap
  interval over the pairs.

Invariants: every function is deterministic for a given ``seed`` (``numpy.random.default_rng``); a task may have any
number of runs (at least one); nothing here reads or writes files. rliable itself is not imported: rliable 1.2.0
installs beside the project's pins, but arch 7.2.0, which it needs, fails to import with pandas 3.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

REPS = 10_000  # bootstrap resamples (rliable's default is 50,000; the intervals move by less than 0.01 here)
LEVEL = 0.95
TRIM = 0.25  # the interquartile mean: a quarter cut at each end


def interquartileMean(scores: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """
    :param scores: scores (any shape)
    :param axis: the axis to average over (None: all the scores)
    :return: the mean of the scores left once the lowest and the highest quarter are cut (as many as
        ``int(0.25 * n)`` at each end)
    """
    return stats.trim_mean(scores, TRIM, axis=axis)


def _pooledResamples(tasks: Sequence[np.ndarray], reps: int, seed: int) -> np.ndarray:
    """
    :param tasks: each task's scores, one per run
    :param reps: resamples
    :param seed: the generator's seed
    :return: (reps, runs of all tasks): each row the runs of each task drawn with replacement from that task's runs
    """
    rng = np.random.default_rng(seed)
    drawn = [np.asarray(task, dtype=np.float64)[rng.integers(0, len(task), size=(reps, len(task)))] for task in tasks]
    return np.concatenate(drawn, axis=1)


def stratifiedBootstrap(tasks: Sequence[Sequence[float]], statistic: Callable[[np.ndarray], np.ndarray],
                        reps: int = REPS, level: float = LEVEL, seed: int = 0) -> tuple[float, float, float]:
    """
    :param tasks: each task's scores, one per run (at least one run per task)
    :param statistic: maps (resamples, pooled runs) to one value per resample (e.g. ``lambda x:
        interquartileMean(x, axis=1)``)
    :param reps: resamples
    :param level: the interval's coverage
    :param seed: the generator's seed
    :return: (the statistic of the pooled scores, the interval's lower and upper bounds: the (1 - level) / 2 and
        (1 + level) / 2 percentiles of the resampled statistic)
    :raises ValueError: no task, or a task without runs
    """
    arrays = [np.asarray(task, dtype=np.float64) for task in tasks]
    if not arrays or any(array.size == 0 for array in arrays):
        raise ValueError("a stratified bootstrap needs at least one task and one run per task")
    point = float(statistic(np.concatenate(arrays)[None, :])[0])
    values = statistic(_pooledResamples(arrays, reps, seed))
    low, high = np.percentile(values, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return point, float(low), float(high)


def performanceProfile(tasks: Sequence[Sequence[float]], taus: np.ndarray, reps: int = REPS, level: float = LEVEL,
                       seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    :param tasks: each task's normalised scores, one per run
    :param taus: the thresholds
    :param reps: resamples
    :param level: the band's coverage
    :param seed: the generator's seed
    :return: (share of the pooled runs whose score is above each tau, the band's lower and upper bounds), each of
        the shape of ``taus``
    """
    arrays = [np.asarray(task, dtype=np.float64) for task in tasks]
    pooled = np.concatenate(arrays)
    taus = np.asarray(taus, dtype=np.float64)
    shares = (pooled[None, :] > taus[:, None]).mean(axis=1)
    resampled = _pooledResamples(arrays, reps, seed)  # (reps, runs)
    low, high = np.empty_like(taus), np.empty_like(taus)
    for index, tau in enumerate(taus):
        values = (resampled > tau).mean(axis=1)
        low[index], high[index] = np.percentile(values, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return shares, low, high


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """:return: Spearman's rho, nan when either side is constant"""
    if np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.spearmanr(x, y).statistic)


def spearmanInterval(x: Sequence[float], y: Sequence[float], reps: int = REPS, level: float = LEVEL,
                     seed: int = 0) -> tuple[float, float, float]:
    """
    :param x: one value per item (e.g. a representation metric per model)
    :param y: the paired values (e.g. the mean final reward per model)
    :param reps: resamples of the pairs
    :param level: the interval's coverage
    :param seed: the generator's seed
    :return: (Spearman's rho, the interval's lower and upper bounds over the resamples where it is defined); nan
        everywhere below 3 pairs or when either side is constant
    """
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xs.size < 3 or xs.size != ys.size:
        return math.nan, math.nan, math.nan
    rho = _spearman(xs, ys)
    if math.isnan(rho):
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, xs.size, size=(reps, xs.size))
    # ranks per resample (ties averaged), then Pearson's correlation of the ranks: Spearman's rho, vectorised
    rx, ry = stats.rankdata(xs[indices], axis=1), stats.rankdata(ys[indices], axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    norm = np.sqrt((rx ** 2).sum(axis=1) * (ry ** 2).sum(axis=1))
    defined = norm > 0
    values = (rx * ry).sum(axis=1)[defined] / norm[defined]
    if values.size == 0:
        return rho, math.nan, math.nan
    low, high = np.percentile(values, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return rho, float(low), float(high)
