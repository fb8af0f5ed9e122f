"""The results tools (gather_results, aggregate_plots, compare_plots, replay.plots) on fabricated runs: the steps of
training episodes are the run's (all envs together), NaN rewards stay in their windows, the smoothing window is
recorded and checked, a run with evaluations but no finished training episode counts by its evaluations, and the
tools' messages say what they count."""
from __future__ import annotations

import csv
import hashlib
import json
import os
import re

import numpy as np
import pytest
from conftest import runModule
from matplotlib.figure import Figure

from replay import aggregate_plots, compare_plots, plots
from replay.results import loadCurves, saveCurves
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.runs import train_loop
from rl_baselines.runs.monitor_files import loadEpisodes
from srl_toolbox.cli import pythonCommand
from srl_toolbox.plots import movingAverage, saveLearningCurve

ENV = "MobileRobotGymEnv-v0"
LENGTH = 250


def _fakeRun(run_dir, rewards_per_env, seed: int = 0, evaluations: dict | None = None, **args) -> str:
    """A finished run as train leaves it, fabricated: args.json, one monitor file per env of LENGTH-step episodes (an
    empty list: none finished, ``num_timesteps=`` then gives its steps), done.json, and evaluations.npz when given
    ``{step: mean reward}``."""
    os.makedirs(os.path.join(run_dir, "monitor"))
    steps = LENGTH * sum(len(rewards) for rewards in rewards_per_env)
    with open(os.path.join(run_dir, "args.json"), "w") as handle:
        json.dump({"env": ENV, "srl_model": "ground_truth", "algo": "ppo2", "seed": seed, "num_timesteps": steps,
                   "num_cpu": len(rewards_per_env), **args}, handle)
    for env, rewards in enumerate(rewards_per_env):
        with open(os.path.join(run_dir, "monitor", f"{env}.monitor.csv"), "w") as handle:
            handle.write('#{"t_start": 1700000000.0, "env_id": "E"}\nr,l,t\n')
            handle.writelines(f"{reward},{LENGTH},{index + 1.0}\n" for index, reward in enumerate(rewards))
    with open(os.path.join(run_dir, "done.json"), "w") as handle:
        handle.write("{}\n")
    if evaluations is not None:
        np.savez(os.path.join(run_dir, "evaluations.npz"), timesteps=np.array(list(evaluations)),
                 results=np.array([[value] for value in evaluations.values()]),
                 ep_lengths=np.full((len(evaluations), 1), LENGTH))
    return str(run_dir)


def _rows(folder) -> dict[str, dict[str, str]]:
    with open(os.path.join(folder, "results.csv")) as handle:
        return {row["budget"]: row for row in csv.DictReader(handle)}


def _assertUsage(result, text: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()  # the error alone, not the warnings of the checks before it
    assert len(lines) == 1 and lines[0].startswith("error: ") and text in lines[0], result.stderr


def _nameDigest(identity: str) -> str:
    """:return: the digest replay.results.distinctStems adds to a name that clashes"""
    return hashlib.sha1(identity.encode()).hexdigest()[:8]


def test_with_several_envs_a_training_episode_counts_at_the_runs_step(tmp_path):
    """With --num-cpu 2 an episode was stamped with the sum of the lengths of the episodes finished before it: the
    first two 250-step episodes at 250 and 500, though each ended at the run's step 500 (its env's 250th step): a
    250-step budget had a reward and "250 (1/1)", and the curves put training episodes half-way before the
    evaluations of the same steps."""
    run = _fakeRun(tmp_path / "logs" / "a", [[-5.0, -8.0, 15.0], [-9.0, 0.0, 0.0]])
    result = runModule("replay.gather_results", "--log-dir", tmp_path / "logs", "--training-rewards", "--threshold",
                       "-10", "--episode-window", "1", "--timestep-budget", "250", "500", "--output-dir",
                       tmp_path / "out")
    assert result.returncode == 0, result.stderr
    rows = _rows(tmp_path / "out")
    assert rows["250"]["runs"] == "0" and rows["250"]["no_episode_yet"] == "1" and rows["250"]["reached"] == "0"
    assert "no episode finished within 250 steps" in open(tmp_path / "out" / "results.md").read()
    assert rows["500"]["runs"] == "1" and float(rows["500"]["mean_reward"]) == -9.0  # env 1's, merged after env 0's
    assert float(rows["500"]["median_steps_to_threshold"]) == 500.0 and rows["final"]["no_episode_yet"] == "0"
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "logs", "--timesteps", "-o", tmp_path / "agg" / "a")
    assert result.returncode == 0, result.stderr
    curves = loadCurves(str(tmp_path / "agg" / f"a_{ENV}_ppo2_ground_truth.npz"))
    assert curves["x"][0] == 500 and curves["x"][-1] == 1500
    result = runModule("replay.plots", "-i", tmp_path / "logs", "--output-dir", tmp_path / "plots")
    assert result.returncode == 0, result.stderr
    assert "(6 episodes, the last ending at step 1,500 of 1,500 trained)" in result.stdout  # (done.json: its steps)
    assert list(loadEpisodes(os.path.join(run, "monitor"), 2)["timesteps"]) == [500, 500, 1000, 1000, 1500, 1500]
    assert list(loadEpisodes(os.path.join(run, "monitor"))["timesteps"]) == [250, 500, 750, 1000, 1250, 1500]


def test_episode_times_are_the_monitor_files_own(tmp_path):
    """An episode's wall time is its monitor row's ``t`` (6 decimals) plus its file's start offset from the run's
    first file: exactly ``t`` for the first file, not ``t`` rounded through the Unix start time (the difference gathered
    wall times showed, about 1e-7 s)."""
    folder = tmp_path / "monitor"
    os.makedirs(folder)
    for env, (start, times) in enumerate([(1764856000.123456, [0.103395, 7.25]), (1764856000.623456, [1.5])]):
        with open(folder / f"{env}.monitor.csv", "w") as handle:
            handle.write(f'#{{"t_start": {start}, "env_id": "E"}}\nr,l,t\n')
            handle.writelines(f"1.0,{LENGTH},{time}\n" for time in times)
    times = loadEpisodes(str(folder))["times"]
    assert times[0] == 0.103395 and times[-1] == 7.25 and times[1] == pytest.approx(2.0, abs=1e-6)


def test_an_evaluated_run_counts_at_a_budget_before_its_first_training_episode(tmp_path):
    """With evaluations, a budget reached before any training episode ended (four envs: the first at step 1,000) left
    the run out ("no episode finished within 600 steps") while Final said it reached the threshold at 600."""
    _fakeRun(tmp_path / "logs" / "a", [[0.0], [0.0], [0.0], [0.0]], evaluations={200: -150.0, 400: -120.0, 600: -50.0,
                                                                              800: -20.0, 1000: -10.0})
    result = runModule("replay.gather_results", "--log-dir", tmp_path / "logs", "--threshold", "-100",
                       "--timestep-budget", "600", "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    rows = _rows(tmp_path / "out")
    assert rows["600"]["source"] == "evaluation" and rows["600"]["runs"] == "1", rows["600"]
    assert float(rows["600"]["mean_reward"]) == -50.0 and float(rows["600"]["median_steps_to_threshold"]) == 600.0
    assert float(rows["final"]["mean_reward"]) == -10.0
    assert rows["600"]["mean_wall_time_s"] == ""  # (no episode within it: no time)


def test_a_nan_reward_blanks_only_the_windows_that_hold_it(tmp_path, monkeypatch):
    """The moving average was a difference of cumulative sums: one NaN reward made every later mean NaN, so
    gather_results lost the run's steps to threshold and aggregate_plots' mean curve was NaN from there on."""
    averaged = movingAverage([1.0, np.nan, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 2)
    np.testing.assert_array_equal(averaged, [1.0, np.nan, np.nan, 1.0, 1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(movingAverage([1.0, np.inf, 3.0, 5.0], 2), [1.0, np.inf, np.inf, 4.0])
    rng = np.random.default_rng(0)  # each window's mean, as numpy's of it (inf of both signs: NaN)
    values = rng.normal(size=60)
    values[rng.choice(60, 9, replace=False)] = [np.nan, np.inf, -np.inf] * 3
    for window in (1, 3, 7):
        with np.errstate(invalid="ignore"):
            expected = [values[max(0, end - window):end].mean() for end in range(1, 61)]
        np.testing.assert_allclose(movingAverage(values, window), expected)
    run = _fakeRun(tmp_path / "logs" / "a", [[-50.0, np.nan, -50.0, 0.0, 0.0, 0.0]])
    _fakeRun(tmp_path / "logs" / "b", [[-50.0, -50.0, -50.0, 0.0, 0.0, 0.0]], seed=1)
    result = runModule("replay.gather_results", "-i", tmp_path / "logs", "--threshold", "-10", "--episode-window", "2",
                       "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 1 and f"{run}: 1 of its 6 episode rewards are NaN" in warned[0], result.stderr
    final = _rows(tmp_path / "out")["final"]
    assert final["reached"] == "2" and float(final["median_steps_to_threshold"]) == 1250.0
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "logs", "--episode-window", "2", "-o",
                       tmp_path / "agg" / "a")
    assert result.returncode == 0 and "1 of its 6 episode rewards are NaN" in result.stderr, result.stderr
    y = loadCurves(str(tmp_path / "agg" / f"a_{ENV}_ppo2_ground_truth.npz"))["y"]
    assert np.isnan(y[0, 1:3]).all() and np.isfinite(y[0, 3:]).all() and np.isfinite(y[1]).all()


def test_the_smoothing_window_is_recorded_shown_and_checked(tmp_path, monkeypatch):
    """aggregate_plots' .npz did not record its --episode-window nor the figure show it, and compare_plots drew curves
    of different windows together; replay.plots' legend said "moving average (40 episodes)" on a run of fewer
    episodes, whose curve is the mean of all episodes so far. compare_plots refused after its warning about an older
    file printed that warning above its error."""
    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: drawn.append(figure))
    for seed in (0, 1):
        _fakeRun(tmp_path / "logs" / str(seed), [[1.0, 2.0, 3.0, 4.0, 5.0]], seed=seed)
    for window in (2, 3):
        result = runModule("replay.aggregate_plots", "-i", tmp_path / "logs", "--episode-window", window, "-o",
                           tmp_path / f"w{window}" / "a")
        assert result.returncode == 0, result.stderr
    first, second = (str(tmp_path / f"w{window}" / f"a_{ENV}_ppo2_ground_truth.npz") for window in (2, 3))
    assert loadCurves(first)["episode_window"] == 2 and loadCurves(second)["episode_window"] == 3
    result = runModule("replay.compare_plots", "-i", first, second, "-o", tmp_path / "c.png")
    _assertUsage(result, f"smoothed over different episode windows (2 episodes: {first}; 3 episodes: {second})")
    assert not (tmp_path / "c.png").exists()
    # a file written before the window was saved: unknown, refused with no other
    old = str(tmp_path / "old.npz")
    np.savez(old, x=np.arange(1.0, 6.0), y=np.zeros((2, 5)), x_label=np.array("episodes"))
    assert loadCurves(old)["episode_window"] is None
    assert compare_plots.main(["-i", first, old, "-o", str(tmp_path / "c.png")]) == 0
    assert drawn[-1].axes[0].get_ylabel() == "Episode reward (moving average)"
    # one on timesteps (its episodes at the summed lengths of all envs) beside newer files: a warning
    older = str(tmp_path / "older.npz")
    np.savez(older, x=np.arange(1.0, 6.0), y=np.zeros((2, 5)), x_label=np.array("timesteps"))
    newer = str(tmp_path / "newer.npz")
    saveCurves(newer, np.arange(1.0, 6.0), np.zeros((2, 5)), "m", ENV, "timesteps", ["r1", "r2"], window=2)
    with pytest.warns(UserWarning, match="older aggregate_plots, which put a training episode at the sum"):
        assert compare_plots.main(["-i", newer, older, "-o", str(tmp_path / "e.png")]) == 0
    # refused for another reason, the error alone (the warning is of a comparison it does not draw); accepted, once
    other = str(tmp_path / "other.npz")
    saveCurves(other, np.arange(1.0, 6.0), np.zeros((2, 5)), "m", ENV, "timesteps", ["r1", "r2"], window=3)
    _assertUsage(runModule("replay.compare_plots", "-i", newer, older, other, "-o", tmp_path / "f.png"),
                 "smoothed over different episode windows")
    result = runModule("replay.compare_plots", "-i", newer, older, "-o", tmp_path / "f.png")
    assert result.returncode == 0 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"warning: {older}: written by an older aggregate_plots"), result.stderr
    assert compare_plots.main(["-i", first, first, "-o", str(tmp_path / "d.png")]) == 0
    assert drawn[-1].axes[0].get_ylabel() == "Episode reward (moving average over 2 episodes, fewer at the start)"
    # evaluation curves have no window
    saveCurves(str(tmp_path / "e.npz"), np.arange(3.0), np.ones((1, 3)), "x", ENV, "timesteps", ["r"],
               "mean evaluation reward")
    assert loadCurves(str(tmp_path / "e.npz"))["episode_window"] is None
    episodes = {"timesteps": np.arange(1.0, 13.0), "rewards": np.ones(12), "times": np.arange(12.0)}
    plots.plotRun(episodes, 40, str(tmp_path / "run.png"))
    assert [line.get_label() for line in drawn[-1].axes[0].get_lines()][1] == \
        "mean of all episodes so far (12 < the 40-episode window)"
    plots.plotRun(episodes, 5, str(tmp_path / "run.png"))
    assert [line.get_label() for line in drawn[-1].axes[0].get_lines()][1] == \
        "moving average (5 episodes, fewer before episode 5)"


def test_a_run_with_a_step_count_that_is_not_a_number_is_still_plotted(tmp_path):
    """replay.plots' summary read the run's trained steps with int(): args.json's "num_timesteps": "lots" (a run
    finished with done.json and no manifest) gave a traceback after the first figure was written."""
    run = _fakeRun(tmp_path / "logs" / "a", [[1.0, 2.0]])
    args = json.loads((tmp_path / "logs" / "a" / "args.json").read_text())
    (tmp_path / "logs" / "a" / "args.json").write_text(json.dumps({**args, "num_timesteps": "lots"}))
    result = runModule("replay.plots", "-i", run, "--output-dir", tmp_path / "plots")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "(2 episodes, the last ending at step 500)" in result.stdout


def test_the_messages_say_what_they_count(tmp_path):
    """gather_results blamed --training-rewards' choice on the runs ("no method has evaluations for all its runs")
    and said "1 methods"; aggregate_plots dropped a method's evaluation figure without a word when one seed had no
    evaluations.npz."""
    _fakeRun(tmp_path / "logs" / "a", [[1.0, 2.0]], evaluations={250: 1.0, 500: 2.0})
    lacking = _fakeRun(tmp_path / "logs" / "b", [[1.0, 2.0]], seed=1)
    result = runModule("replay.gather_results", "-i", tmp_path / "logs", "--output-dir", tmp_path / "out",
                       "--training-rewards")
    assert result.returncode == 0, result.stderr
    assert "Rewards from training episodes (--training-rewards)\n2 runs, 1 method: " in result.stdout, result.stdout
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "logs", "-o", tmp_path / "agg" / "a")
    assert result.returncode == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warned == [f"warning: {ENV} ppo2 ground_truth: no evaluation curve, 1 of its 2 runs have no evaluations "
                      f"(evaluations.npz), e.g. {lacking}"], result.stderr
    assert sorted(os.listdir(tmp_path / "agg")) == [f"a_{ENV}.png", f"a_{ENV}_ppo2_ground_truth.npz"]


@pytest.mark.parametrize("window", [1, 3])
def test_a_window_of_one_episode_reads_as_one(tmp_path, window):
    _fakeRun(tmp_path / "logs" / "a", [[1.0, 2.0, 3.0, 4.0]])
    result = runModule("replay.gather_results", "-i", tmp_path / "logs", "--output-dir", tmp_path / "out",
                       "--episode-window", window)
    assert result.returncode == 0, result.stderr
    text = re.sub(" {2,}", " ", open(tmp_path / "out" / "results.md").read())  # (cells padded)
    assert ("| last training episode |" if window == 1 else "| last 3 training episodes |") in text
    assert "1 run, 1 method: " in result.stdout


def test_a_run_without_a_training_episode_counts_by_its_evaluations(tmp_path):
    """A run shorter than its env's episodes (2 x 100 steps of 250-step episodes) with two evaluations was refused by
    every results tool: "no run with a finished episode below ..." (replay.plots: "no finished episode in the 1
    run(s)"), exit 2, though its evaluations.npz held its results."""
    run = _fakeRun(tmp_path / "logs" / "a", [[], []], evaluations={100: -5.0, 200: -3.0}, num_timesteps=200)
    result = runModule("replay.gather_results", "--log-dir", tmp_path / "logs", "--timestep-budget", "100",
                       "--threshold", "-4", "--output-dir", tmp_path / "out")
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr
    rows = _rows(tmp_path / "out")
    assert rows["final"]["source"] == "evaluation" and rows["final"]["runs"] == "1", rows["final"]
    assert float(rows["final"]["mean_reward"]) == -3.0 and float(rows["final"]["median_steps_to_threshold"]) == 200
    assert rows["100"]["runs"] == "1" and float(rows["100"]["mean_reward"]) == -5.0 and rows["100"]["reached"] == "0"
    text = re.sub(" {2,}", " ", open(tmp_path / "out" / "results.md").read())  # (cells padded)
    assert "| last evaluation (deterministic) |" in text
    # measured on training episodes, it has none: one line, nothing written
    result = runModule("replay.gather_results", "--log-dir", tmp_path / "logs", "--training-rewards", "--output-dir",
                       tmp_path / "out2")
    _assertUsage(result, f"no run with a finished episode to measure on training episodes (--training-rewards): the 1 "
                         f"run(s) have only evaluations, e.g. {run}")
    assert not (tmp_path / "out2").exists()
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "logs", "-o", tmp_path / "agg" / "a")
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr
    assert f"{ENV} ppo2 ground_truth: no training curve, none of its 1 run finished a training episode" in result.stdout
    assert sorted(os.listdir(tmp_path / "agg")) == [f"a_{ENV}_evaluation.png",
                                                    f"a_{ENV}_ppo2_ground_truth_evaluation.npz"]
    curves = loadCurves(str(tmp_path / "agg" / f"a_{ENV}_ppo2_ground_truth_evaluation.npz"))
    assert list(curves["x"]) == [100, 200] and curves["y"].tolist() == [[-5.0, -3.0]]
    result = runModule("replay.plots", "-i", tmp_path / "logs", "--output-dir", tmp_path / "plots")
    assert result.returncode == 0, result.stderr
    assert "(no finished episode, 2 evaluations, the last at step 200 of 200 trained)" in result.stdout, result.stdout
    assert os.listdir(tmp_path / "plots") == ["a.png"]


def test_a_method_measured_on_training_episodes_leaves_out_a_run_without_one(tmp_path):
    """With evaluations for every run, one without a training episode counts in the rewards and evaluation curve of
    its method (its training curve averages the others); where another run lacks evaluations, the method is measured
    on training episodes and leaves it out, with a warning, as a run without evaluations."""
    _fakeRun(tmp_path / "evaluated" / "a", [[], []], evaluations={250: -5.0, 500: -3.0}, num_timesteps=500)
    _fakeRun(tmp_path / "evaluated" / "b", [[1.0], [3.0]], seed=1, evaluations={250: -1.0, 500: 1.0})
    result = runModule("replay.gather_results", "--log-dir", tmp_path / "evaluated", "--output-dir", tmp_path / "o1")
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr
    final = _rows(tmp_path / "o1")["final"]
    assert final["source"] == "evaluation" and final["runs"] == "2" and float(final["mean_reward"]) == -1.0
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "evaluated", "-o", tmp_path / "agg" / "a")
    assert result.returncode == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warned == [f"warning: {ENV} ppo2 ground_truth: 1 of its 2 runs finished no training episode, and count in "
                      f"its evaluation curve only, e.g. {tmp_path / 'evaluated' / 'a'}"], result.stderr
    assert loadCurves(str(tmp_path / "agg" / f"a_{ENV}_ppo2_ground_truth.npz"))["y"].shape[0] == 1
    assert loadCurves(str(tmp_path / "agg" / f"a_{ENV}_ppo2_ground_truth_evaluation.npz"))["y"].shape[0] == 2

    _fakeRun(tmp_path / "mixed" / "a", [[], []], evaluations={250: -5.0, 500: -3.0}, num_timesteps=500)
    _fakeRun(tmp_path / "mixed" / "b", [[1.0], [3.0]], seed=1)
    for command, output in (("replay.gather_results", "--output-dir"), ("replay.aggregate_plots", "-o")):
        result = runModule(command, "-i", tmp_path / "mixed", output, tmp_path / "o2" / "x")
        assert result.returncode == 0, result.stderr
        assert ("warning: 1 run(s) without a finished episode skipped (they have only evaluations, and their method "
                "is measured on training episodes: another run of its method has no evaluations.npz), e.g. "
                f"{tmp_path / 'mixed' / 'a'}") in result.stderr, result.stderr
    final = _rows(tmp_path / "o2" / "x")["final"]
    assert final["source"] == "training" and final["runs"] == "1" and final["seeds"] == "1"


def test_train_says_it_wrote_no_learning_curve_without_an_episode(tmp_path, capsys):
    """A run that finished no training episode wrote no learning_curve.png without a word; it points at its
    evaluations only where one was made (an --eval-freq past the run's steps, or a stop before it, makes none)."""
    callback = type("Callback", (), {"monitor": type("Monitor", (), {"rewards": []})()})()
    config = type("Config", (), {"run_dir": str(tmp_path), "eval_freq": 100, "episode_window": 100})()
    train_loop._writeLearningCurve(callback, config)
    assert capsys.readouterr().out == "No learning_curve.png: no training episode finished\n"
    assert os.listdir(tmp_path) == []
    open(RunFolder(str(tmp_path)).evaluations_file, "wb").close()
    train_loop._writeLearningCurve(callback, config)
    assert capsys.readouterr().out == ("No learning_curve.png: no training episode finished; its evaluations: "
                                       f"{pythonCommand()} -m replay.plots -i {tmp_path}\n")
    assert not os.path.exists(RunFolder(str(tmp_path)).learning_curve_file)


def test_methods_and_envs_whose_file_names_read_alike_get_files_of_their_own(tmp_path):
    """aggregate_plots named a method's .npz after its env, algo, srl-model and --group-by values with the characters a
    file name cannot hold made ``_``: tags ``a b`` and ``a_b`` both wrote ``..._tag_a_b.npz``, the second replacing the
    first without a word, as did tag ``x``'s evaluation curves and tag ``x_evaluation``'s training curves, and envs
    ``My/Env-v0`` and ``My_Env-v0`` one figure. Each of them now gets a digest appended; other names are unchanged."""
    evaluations = {250: -5.0, 500: -3.0}
    for index, tag in enumerate(("a b", "a_b", "x", "x_evaluation", "y")):
        for seed in (0, 1):
            _fakeRun(tmp_path / "tags" / f"{index}_{seed}", [[float(index), float(seed)]], seed=seed, tag=tag,
                     evaluations=evaluations if tag == "x" else None)
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "tags", "--group-by", "tag", "-o",
                       tmp_path / "a" / "t")
    assert result.returncode == 0, result.stderr
    stem = f"t_{ENV}_ppo2_ground_truth_tag"
    expected = {f"{stem}_{name}_{_nameDigest(json.dumps([[ENV, 'ground_truth', 'ppo2', tag], ['tag']]))}{end}.npz":
                (tag, kind) for tag, name, ends in (("a b", "a_b", ("",)), ("a_b", "a_b", ("",)),
                                                     ("x", "x", ("", "_evaluation")),
                                                     ("x_evaluation", "x_evaluation", ("",)))
                for end, kind in zip(ends, ("training", "evaluation"))}
    expected[f"{stem}_y.npz"] = ("y", "training")
    assert sorted(os.listdir(tmp_path / "a")) == sorted([*expected, f"t_{ENV}.png", f"t_{ENV}_evaluation.png"])
    for name, (tag, kind) in expected.items():
        curves = loadCurves(str(tmp_path / "a" / name))
        assert curves["label"] == f"ppo2 ground_truth tag={tag}" and ("evaluation" in curves["y_label"].lower()) == (
            kind == "evaluation"), (name, curves["label"], curves["y_label"])

    for index, env in enumerate(("My/Env-v0", "My_Env-v0")):
        _fakeRun(tmp_path / "envs" / str(index), [[float(index)]], env=env)
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "envs", "-o", tmp_path / "e" / "t")
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(tmp_path / "e")) == sorted(
        [f"t_My_Env-v0_{_nameDigest(env)}.png" for env in ("My/Env-v0", "My_Env-v0")]
        + [f"t_My_Env-v0_ppo2_ground_truth_{_nameDigest(json.dumps([[env, 'ground_truth', 'ppo2'], []]))}.npz"
           for env in ("My/Env-v0", "My_Env-v0")])


def test_a_method_named_longer_than_a_file_name_can_be_is_cut_with_a_digest(tmp_path):
    """--group-by hyperparam on a search's trials (every sampled value in the name) was refused: the .npz's name was
    over the file system's 255 bytes. The method's part is cut to fit, with a digest of the method, the same at every
    call; the file keeps the whole label, the figure draws its whole legend, and the warning of runs pooled with other
    hyperparameters names that --group-by."""
    values = [[f"learning_rate:{0.001 * seed:.17f}", *(f"setting_{index}:{seed}" for index in range(20))]
              for seed in (1, 2)]
    for seed, hyperparam in enumerate(values):
        _fakeRun(tmp_path / "runs" / str(seed), [[float(seed), 1.0]], seed=seed, hyperparam=hyperparam)
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "runs", "-o", tmp_path / "pooled" / "t")
    assert result.returncode == 0 and "(--group-by hyperparam splits them)" in result.stderr, result.stderr
    for attempt in range(2):
        result = runModule("replay.aggregate_plots", "-i", tmp_path / "runs", "--group-by", "hyperparam", "-o",
                           tmp_path / "a" / "t")
        assert result.returncode == 0, result.stderr
        names = sorted(name for name in os.listdir(tmp_path / "a") if name.endswith(".npz"))
        assert len(names) == 2 and all(len(os.fsencode(name)) <= 255 - 14 for name in names), names
        for hyperparam in values:
            label = f"ppo2 ground_truth hyperparam={hyperparam}"
            digest = _nameDigest(json.dumps([[ENV, "ground_truth", "ppo2", str(hyperparam)], ["hyperparam"]]))
            (name,) = [name for name in names if name.endswith(f"_{digest}.npz")]
            assert name.startswith(f"t_{ENV}_ppo2_ground_truth_hyperparam___learning_rate_0.00"), name
            assert loadCurves(str(tmp_path / "a" / name))["label"] == label


def test_group_by_reads_an_older_args_json_as_the_run_applied_it(tmp_path):
    """An args.json recorded before train recorded what a run applied holds the flags train warned do nothing as
    given (``random_target: true`` on CarRacing, ``fpv: true`` or ``--features-extractor small`` on a state,
    ``--eval-episodes 3`` without evaluations): ``gather_results --group-by`` set such a run apart from the same run
    recorded now. It reads them as the run applied them, by train's own rule."""
    group_by = ["random_target", "fpv", "img_shape", "features_extractor", "eval_episodes", "min_episodes_save"]
    older = {"random_target": False, "fpv": True, "img_shape": [3, 32, 32], "features_extractor": "small",
             "eval_freq": 0, "eval_episodes": 3, "min_episodes_save": 100}
    recorded = {"random_target": False, "fpv": False, "img_shape": None, "features_extractor": "nature",
                "eval_freq": 0, "eval_episodes": 5, "min_episodes_save": 100}
    for name, args in (("older", older), ("now", recorded)):
        _fakeRun(tmp_path / "logs" / name, [[1.0, 2.0]], seed=len(name), **args)
        _fakeRun(tmp_path / "logs" / f"car_{name}", [[1.0, 2.0]], seed=len(name),
                 **{**recorded, "env": "CarRacingGymEnv-v0", "random_target": name == "older"})
        _fakeRun(tmp_path / "logs" / f"evaluated_{name}", [[1.0, 2.0]], seed=len(name),
                 **{**recorded, "algo": "a2c", "eval_freq": 500, "min_episodes_save": 3 if name == "older" else 100})
    result = runModule("replay.gather_results", "--log-dir", tmp_path / "logs", "--episode-window", "1",
                       "--group-by", *group_by, "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert "pooled" not in result.stderr, result.stderr
    with open(tmp_path / "out" / "results.csv") as handle:
        rows = list(csv.DictReader(handle))
    methods = {tuple(row[name] for name in ("env", "algo", *group_by)) for row in rows}
    assert len(methods) == 3, methods
    assert all(row["runs"] == "2" for row in rows), rows


def test_group_by_augment_loss_reads_a_run_recorded_before_the_flag_as_its_upgrade_rule_gives_it(tmp_path):
    """An args.json recorded before ``--augment-loss`` (format 7) lacks it: gather_results warned that such a run and
    one recorded since differ in ``augment_loss`` (and ``args_format``) and offered ``--group-by augment_loss``, which
    then refused the older run (``not in args.json``). It reads as args.json's upgrade rule reads it (RAD's for an
    augmented run; without --augment the flag's default, as train applies it); the file's format is no setting."""
    pixels = {"srl_model": "raw_pixels"}
    for name, args in (("rad_before", {"augment": "shift", "args_format": 7}),
                       ("rad", {"augment": "shift", "augment_loss": "rad", "args_format": 8}),
                       ("drac", {"augment": "shift", "augment_loss": "drac", "args_format": 8}),
                       ("plain_before", {"augment": "none", "args_format": 7}),
                       ("plain", {"augment": "none", "augment_loss": "drac", "args_format": 8})):
        _fakeRun(tmp_path / "logs" / name, [[1.0, 2.0]], seed=len(name), **pixels, **args)
    result = runModule("replay.gather_results", "--log-dir", tmp_path / "logs", "--episode-window", "1",
                       "--output-dir", tmp_path / "pooled")
    assert result.returncode == 0, result.stderr
    assert "differ in augment, augment_loss, and are pooled" in result.stderr, result.stderr
    result = runModule("replay.gather_results", "--log-dir", tmp_path / "logs", "--episode-window", "1",
                       "--group-by", "augment", "augment_loss", "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert "pooled" not in result.stderr, result.stderr
    with open(tmp_path / "out" / "results.csv") as handle:
        runs = {(row["augment"], row["augment_loss"]): row["runs"] for row in csv.DictReader(handle)}
    assert runs == {("shift", "rad"): "2", ("shift", "drac"): "1", ("none", "drac"): "2"}, runs


def test_envs_whose_names_differ_only_in_case_get_figures_of_their_own(tmp_path):
    """aggregate_plots compared file names with their case: envs ``Case-v0`` and ``case-v0`` wrote ``t_Case-v0.png``
    and ``t_case-v0.png``, one file on a case-insensitive file system. Each now gets a digest; names keep their
    case."""
    for index, env in enumerate(("Case-v0", "case-v0", "Other-v0")):
        _fakeRun(tmp_path / "envs" / str(index), [[float(index)]], env=env)
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "envs", "-o", tmp_path / "e" / "t")
    assert result.returncode == 0, result.stderr
    assert sorted(name for name in os.listdir(tmp_path / "e") if name.endswith(".png")) == sorted(
        [f"t_{env}_{_nameDigest(env)}.png" for env in ("Case-v0", "case-v0")] + ["t_Other-v0.png"])


def test_the_plot_line_of_a_figure_named_with_a_digest_names_its_env(tmp_path):
    """``Plot: t_My_Env-v0_<digest>.png`` did not say which of envs ``My/Env-v0`` and ``My_Env-v0`` it drew. Such a
    line now names its env; a figure named plainly prints as before."""
    for index, env in enumerate(("My/Env-v0", "My_Env-v0", "Other-v0")):
        _fakeRun(tmp_path / "envs" / str(index), [[float(index)]], env=env)
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "envs", "-o", tmp_path / "e" / "t")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for env in ("My/Env-v0", "My_Env-v0"):
        assert f"Plot: {tmp_path / 'e' / f't_My_Env-v0_{_nameDigest(env)}.png'} ({env})" in lines, lines
    assert f"Plot: {tmp_path / 'e' / 't_Other-v0.png'}" in lines, lines


def test_the_closing_line_names_a_group_by_method_as_aggregate_plots_does(tmp_path):
    """With --group-by, the line naming the methods measured on evaluations gave the group's bare values
    ("MobileRobotGymEnv-v0 ppo2 ground_truth 2 2000"), which no reader could tell apart; it names each as
    aggregate_plots does, ``name=value``."""
    _fakeRun(tmp_path / "logs" / "a", [[1.0, 2.0]], evaluations={250: 1.0, 500: 2.0}, eval_freq=250)
    _fakeRun(tmp_path / "logs" / "b", [[1.0, 2.0]], seed=1, eval_freq=0)
    result = runModule("replay.gather_results", "-i", tmp_path / "logs", "--output-dir", tmp_path / "out",
                       "--group-by", "eval_freq")
    assert result.returncode == 0, result.stderr
    assert (f"Rewards from evaluations (evaluations.npz) for: {ENV} ppo2 ground_truth eval_freq=250; the other "
            "methods from training episodes\n") in result.stdout, result.stdout


def test_a_budget_row_of_no_run_says_no_steps_to_threshold(tmp_path):
    """A budget no run of a method reached read "150 not reached (0/0)" under steps to threshold, as if runs had
    tried; the row has no run to reach it: n/a, as its other cells."""
    _fakeRun(tmp_path / "logs" / "a", [[1.0, 2.0]])
    result = runModule("replay.gather_results", "-i", tmp_path / "logs", "--output-dir", tmp_path / "out",
                       "--timestep-budget", "5000")
    assert result.returncode == 0, result.stderr
    row = next(line for line in open(tmp_path / "out" / "results.md") if "no run trained to 5,000 steps" in line)
    assert re.sub(" {2,}", " ", row).endswith("| no run trained to 5,000 steps | n/a | n/a | n/a |\n"), row
    assert "(0/0)" not in open(tmp_path / "out" / "results.md").read()


def test_every_steps_axis_says_env_steps(tmp_path, monkeypatch):
    """train's learning_curve.png and aggregate_plots' and compare_plots' figures named the x axis "Timesteps" or
    "timesteps" where replay.plots names it "Env steps", and their y axes were lowercase where replay.plots'
    "Episode reward" is not; the .npz files keep their keys and values ("timesteps", "episodes")."""
    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: drawn.append(figure))
    for seed in (0, 1):
        _fakeRun(tmp_path / "logs" / str(seed), [[1.0, 2.0, 3.0, 4.0]], seed=seed, evaluations={500: 1.0, 1000: 2.0})
    prefix = tmp_path / "out" / "a"
    for extra in (["--timesteps"], []):
        assert aggregate_plots.main(["-i", str(tmp_path / "logs"), "-o", str(prefix), *extra]) == 0
    labels = {(figure.axes[0].get_xlabel(), figure.axes[0].get_ylabel()) for figure in drawn}
    assert labels == {("Env steps", "Episode reward (moving average over 40 episodes, fewer at the start)"),
                      ("Env steps", "Mean evaluation reward"),
                      ("Episodes", "Episode reward (moving average over 40 episodes, fewer at the start)")}, labels
    npz = f"{prefix}_{ENV}_ppo2_ground_truth.npz"
    assert loadCurves(npz)["x_label"] == "episodes" and loadCurves(f"{prefix}_{ENV}_ppo2_ground_truth_evaluation.npz")[
        "x_label"] == "timesteps"
    assert compare_plots.main(["-i", f"{prefix}_{ENV}_ppo2_ground_truth_evaluation.npz", "-o",
                               str(tmp_path / "c.png")]) == 0
    assert drawn[-1].axes[0].get_xlabel() == "Env steps"
    # titled as aggregate_plots titles its figures (it said "Learning curves", of evaluations too)
    assert drawn[-1].axes[0].get_title() == f"{ENV} (deterministic evaluations)"
    assert compare_plots.main(["-i", npz, "-o", str(tmp_path / "c.png")]) == 0 and drawn[-1].axes[0].get_title() == ENV
    saveLearningCurve([250, 500], [1.0, 2.0], 40, str(tmp_path / "learning_curve.png"))
    plots.main(["-i", str(tmp_path / "logs" / "0"), "--output-dir", str(tmp_path / "plots")])
    assert drawn[-2].axes[0].get_xlabel() == drawn[-1].axes[0].get_xlabel() == "Env steps"
    assert [text.get_text() for text in drawn[-2].legends[0].get_texts()][0] == "episode reward"
