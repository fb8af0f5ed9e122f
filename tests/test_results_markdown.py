"""replay.gather_results' Markdown: the tables as a terminal shows them and the lines under them (the thresholds, and why a
method has none)."""
from __future__ import annotations

import re

from replay import gather_results

ENV = "MobileRobotGymEnv-v0"


def _unpadded(text: str) -> str:
    """:return: a Markdown text with its table cells' padding removed (``| a   | b |`` reads ``| a | b |``)"""
    return re.sub(" {2,}", " ", text)


def test_the_markdown_says_why_a_method_has_no_threshold():
    """Without a threshold the table said "no threshold" and nothing else: a user of an env whose ground truth ends
    below zero (or of a folder without ground-truth runs) had to guess that --threshold gives the steps."""
    row = {"env": "MobileRobot2TargetGymEnv-v0", "srl_model": "raw_pixels", "algo": "ppo2",
           "budget": gather_results.FINAL, "runs": 2, "mean_reward": -20.0, "std_reward": 1.0, "ci95_low": -30.0,
           "ci95_high": -10.0, "source": "training", "fewest_episodes": 40, "mean_wall_time_s": 3.0,
           "median_steps_to_threshold": None, "reached": None, "threshold": None, "threshold_source": None}
    rows = [row, {**row, "srl_model": "ground_truth", "mean_reward": -5.25}, {**row, "budget": 1000},
            {**row, "env": "MobileRobot1DGymEnv-v0"}, {**row, "env": "MobileRobot1DGymEnv-v0", "algo": "a2c"},
            {**row, "env": "KukaButtonGymEnv-v0", "runs": 0}]
    text = _unpadded(gather_results.markdown(rows, 40, None))
    assert ("No threshold: MobileRobot1DGymEnv-v0 (a2c; ppo2): no finished ground-truth run, "
            "MobileRobot2TargetGymEnv-v0 (ppo2): ground truth's mean final reward -5.25 is not positive; give "
            "--threshold R for the steps to R.") in text, text
    assert "| no threshold |" in text and "Kuka" not in text.split("No threshold:")[1]  # (no run measured: n/a)
    given = [{**r, "threshold": 10.0, "threshold_source": "given"} for r in rows]
    assert "No threshold" not in gather_results.markdown(given, 40, None)


def test_a_threshold_is_given_to_the_rewards_precision():
    """A threshold from ground truth's runs (90% of their mean) was printed to 6 significant digits ("21.7351 not
    reached", "563.852") beside rewards of 2 decimals."""
    row = {"env": ENV, "srl_model": "raw_pixels", "algo": "ppo2", "budget": gather_results.FINAL, "runs": 1,
           "mean_reward": 8.5, "std_reward": float("nan"), "ci95_low": float("nan"), "ci95_high": float("nan"),
           "source": "training", "fewest_episodes": 40, "mean_wall_time_s": 3.0, "median_steps_to_threshold": None,
           "reached": 0, "threshold": 21.735088821732734, "threshold_source": "ground truth"}
    text = _unpadded(gather_results.markdown([row], 40, None))
    assert "| 21.74 not reached (0/1) |" in text and f"Thresholds: {ENV} (ppo2) 21.74 (ground truth)." in text, text
    text = _unpadded(gather_results.markdown([{**row, "threshold": 1234567.891},
                                              {**row, "algo": "a2c", "threshold": 150.0}], 40, None))
    assert "| 1234567.89 not reached (0/1) |" in text and "| 150 not reached (0/1) |" in text, text


def test_the_markdown_tables_are_padded_to_read_as_tables_in_a_terminal():
    """results.md's cells were not padded: its raw text, which gather_results also prints, read as ragged lines."""
    row = {"env": ENV, "srl_model": "raw_pixels", "algo": "ppo2", "budget": gather_results.FINAL, "runs": 2,
           "mean_reward": 8.5, "std_reward": 1.0, "ci95_low": 7.0, "ci95_high": 10.0, "source": "training",
           "fewest_episodes": 40, "mean_wall_time_s": 3.0, "median_steps_to_threshold": 1200.0, "reached": 2,
           "threshold": 5.0, "threshold_source": "given", "welch_p_value": 0.25, "welch_vs": "ground_truth"}
    text = gather_results.markdown([row, {**row, "srl_model": "ground_truth", "algo": "a2c"}], 40, "ground_truth")
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 4 and len({len(line) for line in table}) == 1, text  # every line as wide
    bars = {tuple(index for index, char in enumerate(line) if char == "|") for line in table}
    assert len(bars) == 1, text  # the column borders line up
    assert table[1].replace("|", "").replace("-", "").strip() == "", table[1]
    assert table[2].startswith(f"| {ENV} | raw_pixels   | ppo2 | 2    | 8.50 ± 1.00 "), table[2]
