"""benchmarks.cnn_features: the sweeps it runs and how it judges SmallCNN against NatureCNN (steps to threshold).

The sweeps themselves are the pipeline's (tested with it); here, the command lines and the summary on made-up runs.
"""
from __future__ import annotations

import types

import numpy as np

from benchmarks.cnn_features import summarise, sweepCommand, thresholdOf
from benchmarks.srl_rl.plans import KUKA, MOBILE, PLANS
from benchmarks.srl_rl.runs import RunRecord


def _record(rewards: list[float], rate: float = 100.0) -> RunRecord:
    steps = np.arange(1, len(rewards) + 1) * 10_000
    run = types.SimpleNamespace(args={"env": MOBILE, "srl_model": "raw_pixels", "seed": 0})
    return RunRecord(run, steps, np.asarray(rewards, dtype=float), rate=rate)


def test_sweep_commands_carry_the_plan_and_the_extractor() -> None:
    kuka = sweepCommand(PLANS[KUKA], "small", 200_000, 10_000, 3, 2, "bench", renderer="lowpoly")
    assert kuka[:2] == ["-m", "rl_baselines.pipeline"]
    for flag in ("--random-target", "--force-down"):
        assert flag in kuka
    assert kuka[kuka.index("--features-extractor") + 1] == "small" and kuka[kuka.index("--renderer") + 1] == "lowpoly"
    assert kuka[kuka.index("--srl-model") + 1] == "raw_pixels" and kuka[kuka.index("--log-dir") + 1] == "bench/small"
    truth = sweepCommand(PLANS[MOBILE], "ground_truth", 50_000, 5_000, 3, 2, "bench")
    assert "--features-extractor" not in truth and truth[truth.index("--srl-model") + 1] == "ground_truth"


def test_threshold_and_verdicts() -> None:
    assert thresholdOf([_record([100.0, 200.0]), _record([100.0, 240.0])]) == 0.9 * 220.0
    threshold = 198.0
    nature = [_record([0.0, 100.0, 200.0]), _record([0.0, 200.0, 210.0]), _record([0.0, 0.0, 50.0])]
    small = [_record([0.0, 199.0, 220.0], rate=250.0), _record([200.0, 210.0, 220.0], rate=250.0),
             _record([0.0, 0.0, 10.0], rate=250.0)]
    table, verdict = summarise(MOBILE, threshold, {"nature": nature, "small": small}, 3)
    # nature: reached at 30k and 20k steps (median 25k), small at 20k and 10k (median 15k), 2.5x the rate
    assert "| nature | 3/3 |" in table and "25,000 (2/3)" in table and "15,000 (2/3)" in table
    assert "learns at least as well as NatureCNN" in verdict and "2.50x" in verdict
    _, verdict = summarise(MOBILE, threshold, {"nature": nature, "small": small[2:]}, 3)
    assert "learns less well than NatureCNN" in verdict
    _, verdict = summarise(MOBILE, 1000.0, {"nature": nature, "small": small}, 3)
    assert "budget is too small" in verdict
    _, verdict = summarise(MOBILE, threshold, {"nature": [], "small": small}, 3)
    assert "not every extractor has a finished run yet" in verdict
