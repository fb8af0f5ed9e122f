"""The SRL + RL benchmark's statistics (benchmarks.srl_rl.bootstrap) on small synthetic tables whose answers are known
by hand: the interquartile mean, the stratified bootstrap (resampling within each task), the performance profile and
Spearman's correlation with its interval."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from benchmarks.srl_rl import analysis, bootstrap, overview


def _iqm(x: np.ndarray) -> np.ndarray:
    return bootstrap.interquartileMean(x, axis=1)


def test_interquartile_mean_is_the_mean_of_the_middle_half() -> None:
    assert bootstrap.interquartileMean(np.arange(8.0)) == pytest.approx(3.5)  # (2 + 3 + 4 + 5) / 4
    assert bootstrap.interquartileMean(np.array([-100.0, 1, 2, 1000])) == pytest.approx(1.5)  # outliers cut


def test_the_bootstrap_resamples_within_each_task() -> None:
    # task A's runs all score 0, task B's all 1, 4 runs each: every stratified resample holds four 0s and four 1s, so
    # its IQM is exactly 0.5; resampling the 8 runs together would give anything from 0 to 1
    point, low, high = bootstrap.stratifiedBootstrap([[0.0] * 4, [1.0] * 4], _iqm, reps=2000)
    assert (point, low, high) == (0.5, 0.5, 0.5)
    # one task of two runs, 0 and 1: a resample's mean is 0, 0.5 or 1 (probabilities 1/4, 1/2, 1/4), so the 95%
    # interval spans [0, 1]; the median of the resampled means is 0.5
    point, low, high = bootstrap.stratifiedBootstrap([[0.0, 1.0]], lambda x: x.mean(axis=1), reps=4000)
    assert (point, low, high) == (0.5, 0.0, 1.0)
    point, low, high = bootstrap.stratifiedBootstrap([[0.0, 1.0]], lambda x: x.mean(axis=1), reps=4000, level=0.4)
    assert (low, high) == (0.5, 0.5)  # the middle 40% of the resamples are all 0.5 (half of them are)
    # deterministic for a seed, different for another
    table = [[0.1, 0.5, 0.9, 0.3, 0.7], [1.0, 1.2, 0.8, 0.95, 1.1]]
    assert bootstrap.stratifiedBootstrap(table, _iqm, seed=3) == bootstrap.stratifiedBootstrap(table, _iqm, seed=3)
    assert bootstrap.stratifiedBootstrap(table, _iqm, seed=3) != bootstrap.stratifiedBootstrap(table, _iqm, seed=4)
    with pytest.raises(ValueError, match="one run per task"):
        bootstrap.stratifiedBootstrap([[1.0], []], _iqm)


def test_performance_profile_counts_the_runs_above_each_tau() -> None:
    shares, low, high = bootstrap.performanceProfile([[0.2, 0.6], [1.0, 1.4]], np.array([0.0, 0.5, 1.0, 2.0]),
                                                     reps=2000)
    np.testing.assert_array_equal(shares, [1.0, 0.75, 0.25, 0.0])
    assert low[0] == high[0] == 1.0 and low[-1] == high[-1] == 0.0  # every run above 0, none above 2
    # above 0.5: task B's two runs always, task A's 0.6 drawn 0, 1 or 2 times: 2/4, 3/4 or 4/4
    assert (low[1], high[1]) == (0.5, 1.0)


def test_spearman_with_its_interval() -> None:
    x, y = [1.0, 2.0, 3.0, 4.0, 5.0], [10.0, 20.0, 30.0, 40.0, 50.0]
    rho, low, high = bootstrap.spearmanInterval(x, y, reps=500)
    assert rho == pytest.approx(1.0) and low == pytest.approx(1.0) and high == pytest.approx(1.0)  # every resample
    rho, low, high = bootstrap.spearmanInterval(x, y[::-1], reps=500)
    assert rho == pytest.approx(-1.0) and high == pytest.approx(-1.0)
    rho, low, high = bootstrap.spearmanInterval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1.0, 3.0, 2.0, 5.0, 4.0, 6.0])
    assert rho == pytest.approx(1 - 6 * 4 / (6 * 35))  # four swapped neighbours: sum of d^2 = 4
    assert -1.0 <= low < rho < high <= 1.0
    assert all(math.isnan(v) for v in bootstrap.spearmanInterval([1.0, 2.0], [1.0, 2.0]))  # too few models
    assert all(math.isnan(v) for v in bootstrap.spearmanInterval([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))  # constant


def _row(name: str, finals: list[float]) -> analysis.ObservationSummary:
    return analysis.ObservationSummary(name, [], len(finals), finals, analysis.meanStandardError(finals),
                                       (math.nan, math.nan))


def test_scores_over_tasks_and_the_metric_correlation() -> None:
    rows = {"A-v0": [_row("ground_truth", [200.0, 200.0]), _row("vae", [100.0, 200.0, 300.0]),
                     _row("pca", [0.0, 40.0]), _row("autoencoder", [20.0]), _row("srl_splits_gt_scale", [200.0]),
                     _row("raw_pixels", [])],
            "B-v0": [_row("ground_truth", [4.0, 6.0]), _row("vae", [5.0, 5.0])],
            "C-v0": [_row("ground_truth", [0.0]), _row("vae", [1.0])]}  # no positive reference: left out
    scores = overview.normalisedScores(rows)
    assert set(scores["vae"]) == {"A-v0", "B-v0"} and "raw_pixels" not in scores
    np.testing.assert_allclose(scores["vae"]["A-v0"], [0.5, 1.0, 1.5])
    np.testing.assert_allclose(scores["vae"]["B-v0"], [1.0, 1.0])
    aggregate = {row["observation"]: row for row in overview.aggregateRows(scores)}
    # vae's pooled scores 0.5, 1, 1.5, 1, 1: the IQM cuts one at each end -> (1 + 1 + 1) / 3; the mean is 1
    assert aggregate["vae"]["iqm"][0] == pytest.approx(1.0) and aggregate["vae"]["runs"] == 5
    assert aggregate["pca"]["tasks"] == ["A-v0"] and aggregate["pca"]["mean"][0] == pytest.approx(0.1)
    table = overview.aggregateTable(list(aggregate.values()), 2)
    assert "| vae | 2/2 | 5 | 1.00 [" in table and "| pca | 1/2 | 2 | 0.10 [0.00, 0.20] |" in table
    assert overview.profileObservations(list(aggregate.values()), 2) == ["ground_truth", "vae"]
    # the section names the profile's curves; equal IQMs are ranked by their mean (the first row listed was drawn)
    text = overview.overviewSection(rows, {}, ["vae"], None, None)
    assert "with 95% bands, of ground_truth, vae (ground truth, raw pixels and the other rows on every task" in text
    tied = [{"observation": name, "tasks": ["A-v0"], "iqm": (1.0, 0.9, 1.0), "mean": (mean, 0.0, 1.0)}
            for name, mean in (("inverse", 0.95), ("supervised", 1.02), ("vae", 0.97))]
    assert overview.profileObservations(tied, 1)[:2] == ["supervised", "vae"]
    # the metrics come from what the models' facts hold: a probe key of any name is correlated too
    facts = {"vae": {"gtc": 0.9, "knn_mse": 0.01, "probe_r2": 0.8, "state_dim": 8, "hash": "h"},
             "pca": {"gtc": 0.1, "knn_mse": 0.05, "probe_r2": 0.1, "state_dim": 8},
             "autoencoder": {"gtc": 0.5, "knn_mse": 0.02, "probe_r2": None, "state_dim": 8},
             "srl_splits": {"gtc": 0.0, "knn_mse": 1.0, "state_dim": 8}}
    assert overview.metricNames({"A-v0": facts}) == ["gtc", "knn_mse", "probe_r2"]
    learned = ["vae", "pca", "autoencoder", "srl_splits_gt_scale"]
    correlations = {(row["env"], row["metric"]): row
                    for row in overview.correlationRows(rows, {"A-v0": facts, "B-v0": {}}, learned)}
    # A: mean final rewards vae 200, pca 20, autoencoder 20 (a tie)
    gtc = correlations[("A-v0", "gtc")]
    assert gtc["models"] == ["vae", "pca", "autoencoder"]  # the variant's model is its plain row's: not counted
    assert gtc["rho"] == pytest.approx(stats.spearmanr([0.9, 0.1, 0.5], [200.0, 20.0, 20.0]).statistic)
    assert correlations[("A-v0", "probe_r2")]["models"] == ["vae", "pca"]  # a missing probe: not counted
    assert math.isnan(correlations[("A-v0", "probe_r2")]["rho"]) and math.isnan(correlations[("B-v0", "gtc")]["rho"])
    assert "| A-v0 | KNN-MSE (lower is better) | 3 |" in overview.correlationTable(list(correlations.values()))


def test_an_env_without_a_positive_reference_keeps_its_metric_correlation() -> None:
    """Ground truth at or below 0 (nothing to divide the scores by): no IQM table, said in one line (the section
    vanished without a word), but Spearman's table, which needs no reference, is still given."""
    rows = {"C-v0": [_row("ground_truth", [-5.0]), _row("vae", [1.0, 2.0]), _row("pca", [0.0]),
                     _row("autoencoder", [3.0])]}
    facts = {"vae": {"gtc": 0.5, "knn_mse": 0.02, "state_dim": 8}, "pca": {"gtc": 0.1, "knn_mse": 0.05, "state_dim": 8},
             "autoencoder": {"gtc": 0.9, "knn_mse": 0.01, "state_dim": 8}}
    text = overview.overviewSection(rows, {"C-v0": facts}, ["vae", "pca", "autoencoder"], None, None)
    assert "No IQM of scores over the tasks: a score divides a run's final reward by ground truth's mean final reward " \
           "on its task, and no task here has a positive one (C-v0)." in text and "| observation |" not in text
    assert "### Which metric predicts the agent's success?" in text
    assert "| C-v0 | GTC |" in text
