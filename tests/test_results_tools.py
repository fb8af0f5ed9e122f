"""gather_results, aggregate_plots and compare_plots on real tiny runs (2 algorithms x 2 seeds), every number checked
against a computation straight from the monitor CSVs."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import warnings

import numpy as np
import pytest
from conftest import runModule
from matplotlib.figure import Figure
from results_runs import ENV, assertUsage, unpadded
from scipy import stats

from replay import aggregate_plots, compare_plots, gather_results
from replay.results import episodeWindowStepsToThreshold, evaluationStepsToThreshold
from rl_baselines.runs import train
from srl_toolbox.cli import runCommand

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

WINDOW = 2
THRESHOLD = -1.0


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """ppo2 seeds 0, 1 (1000 steps) and random_agent seeds 0 (1000 steps), 1 (1500 steps), trained in this process
    (no interpreter start per run); plus a hyperparameter-search trial, a run without episodes and a failed sweep
    run, all ignored."""
    log_dir = tmp_path_factory.mktemp("sweep")
    common = ["--env", ENV, "--srl-model", "ground_truth", "--log-dir", str(log_dir), "--no-vis", "--no-progress",
              "--checkpoint-freq", "-1"]
    folders = {}
    for algo, seed, steps in (("ppo2", 0, 1000), ("ppo2", 1, 1000), ("random_agent", 0, 1000),
                              ("random_agent", 1, 1500)):
        extra = ["--hyperparam", "n_steps:64", "--num-cpu", "1"] if algo == "ppo2" else []  # (its monitor file)
        assert train.main(["--algo", algo, "--seed", str(seed), "--num-timesteps", str(steps), *common, *extra]) == 0
        parent = os.path.join(str(log_dir), ENV, "ground_truth", algo)
        folders[(algo, seed)] = max((os.path.join(parent, d) for d in os.listdir(parent)), key=os.path.getmtime)
    # not seeds of a method: a search trial (skipped folder) and a run that finished no episode
    shutil.copytree(folders[("ppo2", 0)], os.path.join(str(log_dir), "hyperparam_search", "s", "trial_0000", "run"))
    empty = os.path.join(str(log_dir), ENV, "ground_truth", "ppo2", "empty_run")
    os.makedirs(os.path.join(empty, "monitor"))
    shutil.copy(os.path.join(folders[("ppo2", 0)], "args.json"), empty)
    failed = os.path.join(str(log_dir), ENV, "ground_truth", "random_agent", "failed_run")  # a failed sweep run
    shutil.copytree(folders[("random_agent", 0)], failed)
    with open(os.path.join(failed, "failed.json"), "w") as handle:
        handle.write('{"returncode": 1}\n')
    return {"log_dir": str(log_dir), "folders": folders}


def _monitor(run_dir: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:return: (cumulative timesteps, rewards, times) read directly from the CSV"""
    with open(os.path.join(run_dir, "monitor", "0.monitor.csv")) as handle:
        rows = list(csv.DictReader(handle.readlines()[1:]))
    lengths = np.array([int(row["l"]) for row in rows])
    return np.cumsum(lengths), np.array([float(row["r"]) for row in rows]), np.array([float(row["t"]) for row in rows])


def _final(run_dir: str, budget: int | None) -> float:
    timesteps, rewards, _ = _monitor(run_dir)
    if budget is not None:
        rewards = rewards[timesteps <= budget]
    return float(np.mean(rewards[-WINDOW:]))


def _steps(run_dir: str) -> int | None:
    timesteps, rewards, _ = _monitor(run_dir)
    for end in range(WINDOW, len(rewards) + 1):
        if np.mean(rewards[end - WINDOW:end]) >= THRESHOLD:
            return int(timesteps[end - 1])
    return None


def _float(text: str) -> float:
    return float(text) if text else float("nan")


def test_gather_results_matches_monitor_files(runs):
    log_dir, folders = runs["log_dir"], runs["folders"]
    result = runModule("replay.gather_results", "--log-dir", log_dir, "--timestep-budget", "1200", "750",
                       "--episode-window", WINDOW, "--threshold", THRESHOLD, "--welch-test", "random_agent")
    assert result.returncode == 0, result.stderr
    assert "1 run(s) without a finished episode skipped" in result.stderr
    assert "1 failed sweep run(s) skipped (failed.json)" in result.stderr
    with open(os.path.join(log_dir, "results.csv")) as handle:
        rows = {(row["algo"], row["budget"]): row for row in csv.DictReader(handle)}
    assert set(rows) == {(a, b) for a in ("ppo2", "random_agent") for b in ("final", "750", "1200")}
    for (algo, budget), row in rows.items():
        limit = None if budget == "final" else int(budget)
        # at 1200 steps only the 1500-step run counts; the search trial and the empty run never do
        seeds = [s for s in (0, 1) if limit is None or limit <= 1000 or (algo, s) == ("random_agent", 1)]
        assert row["seeds"] == " ".join(map(str, seeds)) and int(row["runs"]) == len(seeds)
        if not seeds:  # no ppo2 run trained 1200 steps: the method is listed with 0 runs
            assert row["mean_reward"] == row["median_steps_to_threshold"] == "" and row["reached"] == "0"
            continue
        values = [_final(folders[(algo, s)], limit) for s in seeds]
        assert float(row["mean_reward"]) == pytest.approx(np.mean(values))
        if len(values) > 1:
            std = np.std(values, ddof=1)
            half = stats.t.ppf(0.975, len(values) - 1) * std / np.sqrt(len(values))
            assert float(row["std_reward"]) == pytest.approx(std)
            assert float(row["ci95_low"]) == pytest.approx(np.mean(values) - half)
            assert float(row["ci95_high"]) == pytest.approx(np.mean(values) + half)
        else:
            assert row["std_reward"] == row["ci95_low"] == ""
        steps = [s for s in (_steps(folders[(algo, seed)]) for seed in seeds)
                 if s is not None and (limit is None or s <= limit)]
        assert int(row["reached"]) == len(steps)
        assert _float(row["median_steps_to_threshold"]) == pytest.approx(np.median(steps) if steps else np.nan,
                                                                          nan_ok=True)
        times = [_monitor(folders[(algo, s)])[2][_monitor(folders[(algo, s)])[0] <= (limit or 10**9)][-1]
                 for s in seeds]
        # the episodes each run finished within the budget (it counted the whole run's at every budget)
        assert int(row["fewest_episodes"]) == min(int(np.sum(_monitor(folders[(algo, s)])[0] <= (limit or 10**9)))
                                                  for s in seeds)
        assert float(row["mean_wall_time_s"]) == pytest.approx(np.mean(times))
    for budget in ("final", "750"):
        ppo = [_final(folders[("ppo2", s)], None if budget == "final" else 750) for s in (0, 1)]
        rand = [_final(folders[("random_agent", s)], None if budget == "final" else 750) for s in (0, 1)]
        expected = stats.ttest_ind(ppo, rand, equal_var=False).pvalue
        assert _float(rows[("ppo2", budget)]["welch_p_value"]) == pytest.approx(expected, nan_ok=True)
        assert rows[("ppo2", budget)]["welch_vs"] == "random_agent"
        assert rows[("random_agent", budget)]["welch_p_value"] == ""
    markdown = unpadded(open(os.path.join(log_dir, "results.md")).read())
    assert "## Final" in markdown and "## At 750 steps" in markdown and "## At 1,200 steps" in markdown
    assert "| MobileRobotGymEnv-v0 | ground_truth | random_agent | 2 |" in markdown and "baseline" in markdown


def test_aggregate_and_compare_plots(runs, tmp_path):
    log_dir, folders = runs["log_dir"], runs["folders"]
    prefix = str(tmp_path / "agg")
    result = runModule("replay.aggregate_plots", "-i", log_dir, "--episode-window", WINDOW, "-o", prefix)
    assert result.returncode == 0, result.stderr
    png = f"{prefix}_{ENV}.png"
    with open(png, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    for algo in ("ppo2", "random_agent"):
        with np.load(f"{prefix}_{ENV}_{algo}_ground_truth.npz", allow_pickle=False) as data:
            rewards = [_monitor(folders[(algo, s)])[1] for s in (0, 1)]
            length = min(len(r) for r in rewards)  # truncated to the shortest run
            expected = [[r[max(0, i - WINDOW + 1):i + 1].mean() for i in range(length)] for r in rewards]
            np.testing.assert_allclose(data["y"], expected)
            np.testing.assert_array_equal(data["x"], np.arange(1, length + 1))
            assert str(data["label"]) == f"{algo} ground_truth" and str(data["x_label"]) == "episodes"
            assert list(data["runs"]) == [folders[(algo, 0)], folders[(algo, 1)]]

    # by timesteps: x from the latest first episode to the earliest last one; y the curve at the last episode <= x
    result = runModule("replay.aggregate_plots", "-i", log_dir, "--episode-window", WINDOW, "--timesteps",
                       "--num-points", 50, "-o", str(tmp_path / "ts"))
    assert result.returncode == 0, result.stderr
    with np.load(str(tmp_path / f"ts_{ENV}_random_agent_ground_truth.npz"), allow_pickle=False) as data:
        x, y = data["x"], data["y"]
    assert x[0] == 250 and x[-1] == 1000 and len(x) == 50
    timesteps, rewards, _ = _monitor(folders[("random_agent", 1)])
    point = int(np.flatnonzero(x >= 600)[0])
    last = int(np.searchsorted(timesteps, x[point], side="right")) - 1
    assert y[1, point] == pytest.approx(rewards[max(0, last - WINDOW + 1):last + 1].mean())

    out = str(tmp_path / "compare.png")
    result = runModule("replay.compare_plots", "-i", f"{prefix}_{ENV}_ppo2_ground_truth.npz",
                       f"{prefix}_{ENV}_random_agent_ground_truth.npz", "--labels", "PPO", "random", "-o", out)
    assert result.returncode == 0, result.stderr
    with open(out, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


def test_a_method_keeps_its_colour_in_a_figure_that_lacks_others(tmp_path, monkeypatch):
    """aggregate_plots' evaluation figure leaves out the methods without evaluations: the others keep the colours of
    the training figure (they took the next free colour, so one method was drawn in another's colour)."""
    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: drawn.append(figure))
    y = np.ones((2, 3))
    order = ["acer ground_truth", "a2c ground_truth", "ppo2 ground_truth"]
    aggregate_plots.plotCurves(str(tmp_path / "all.png"), [(label, np.arange(3), y) for label in order], "env", "x",
                               order=order)
    aggregate_plots.plotCurves(str(tmp_path / "some.png"), [(label, np.arange(3), y) for label in order[1:]], "env",
                               "x", order=order)
    colours = [{line.get_label().split(" (")[0]: line.get_color() for line in figure.axes[0].get_lines()}
               for figure in drawn]
    assert colours[1] == {label: colours[0][label] for label in order[1:]}


def test_bad_inputs(runs, tmp_path, capsys, monkeypatch):
    def inProcess(main, *args) -> subprocess.CompletedProcess:
        """The command run in this process as ``python -m`` runs it (through runCommand): its exit code and output.
        One case per command below goes through a real process; tests/test_bad_inputs.py runs every command so."""
        monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)  # runCommand replaces it
        with pytest.raises(SystemExit) as exit_info:
            runCommand(main, [str(arg) for arg in args])
        stdout, stderr = capsys.readouterr()
        return subprocess.CompletedProcess(args, exit_info.value.code, stdout, stderr)

    empty = tmp_path / "empty"
    empty.mkdir()
    assertUsage(runModule("replay.gather_results", "--log-dir", empty), "no run with a finished episode")
    assertUsage(inProcess(gather_results.main, "--log-dir", tmp_path / "missing"),
                f"-i/--log-dir '{tmp_path / 'missing'}' is not a folder")
    out = tmp_path / "out"
    assertUsage(inProcess(gather_results.main, "--log-dir", runs["log_dir"], "--welch-test", "vae",
                           "--output-dir", out), "--welch-test 'vae' is no SRL model or algorithm of these runs; "
                                                 "valid choices: ground_truth, ppo2, random_agent")
    assertUsage(inProcess(gather_results.main, "--log-dir", runs["log_dir"], "--timestep-budget", "0",
                           "--output-dir", out), "must be a positive integer")
    assertUsage(inProcess(gather_results.main, "--log-dir", runs["log_dir"], "--group-by", "nope",
                           "--output-dir", out), "--group-by nope")
    # a file's name for the folder made a folder results.csv/ holding results.csv and results.md
    assertUsage(inProcess(gather_results.main, "--log-dir", runs["log_dir"], "--output-dir", out / "results.csv"),
                f"--output-dir '{out / 'results.csv'}' takes a folder, not a file name: results.csv and results.md are "
                "written in it")
    assert not out.exists()
    assertUsage(runModule("replay.aggregate_plots", "-i", empty), "no run with a finished episode")
    assertUsage(runModule("replay.compare_plots", "-i", tmp_path / "none.npz"), "is not a readable .npz file")
    np.savez(tmp_path / "a.npz", x=np.arange(3.0), y=np.zeros((2, 3)), x_label=np.array("episodes"))
    np.savez(tmp_path / "b.npz", x=np.arange(3.0), y=np.zeros((2, 3)), x_label=np.array("timesteps"))
    np.savez(tmp_path / "c.npz", values=np.arange(3.0))
    assertUsage(inProcess(compare_plots.main, "-i", tmp_path / "a.npz", tmp_path / "b.npz"),
                 f"mix x units (episodes: {tmp_path / 'a.npz'}; timesteps: {tmp_path / 'b.npz'})")
    assertUsage(inProcess(compare_plots.main, "-i", tmp_path / "a.npz", "--labels", "x", "y"),
                 "2 labels for 1 input;")
    assertUsage(inProcess(compare_plots.main, "-i", tmp_path / "c.npz"), "has no curves x")


def test_steps_to_threshold_on_evaluations_and_on_a_window_of_episodes():
    steps = np.array([1000, 2000, 3000, 4000])
    # evaluations: the first evaluation at or above the level
    assert evaluationStepsToThreshold(steps, np.array([5.0, 10.0, 8.0, 20.0]), 10.0) == 2000
    assert evaluationStepsToThreshold(steps, np.array([5.0, 10.0, 8.0, 20.0]), 10.5) == 4000
    assert evaluationStepsToThreshold(steps, np.array([5.0, 10.0, 8.0, 20.0]), 21.0) is None
    # episodes: the mean of the last 2 counts once 2 episodes finished; a single good episode is not enough
    rewards = np.array([20.0, 0.0, 10.0, 12.0])
    assert episodeWindowStepsToThreshold(steps, rewards, 11.0, 2) == 4000
    assert episodeWindowStepsToThreshold(steps, rewards, 10.0, 2) == 2000
    assert episodeWindowStepsToThreshold(steps, rewards, 15.0, 1) == 1000
    assert episodeWindowStepsToThreshold(steps, rewards, 1.0, 5) is None  # fewer episodes than the window
    assert episodeWindowStepsToThreshold(steps, rewards, 12.0, 2) is None


def test_a_run_shorter_than_the_window_reaches_the_threshold_its_reward_reaches(runs, tmp_path):
    """With fewer episodes than --episode-window, a run's reward is the mean of all of them; steps to threshold reads
    the same episodes, so a run whose reward is at or above the threshold has reached it (it said "not reached")."""
    folders = runs["folders"]
    finals = {seed: float(_monitor(folders[("ppo2", seed)])[1].mean()) for seed in (0, 1)}
    threshold = min(finals.values())
    result = runModule("replay.gather_results", "--log-dir", runs["log_dir"], "--episode-window", "100",
                       "--threshold", repr(threshold), "--output-dir", tmp_path)
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "results.csv") as handle:
        row = next(row for row in csv.DictReader(handle) if row["algo"] == "ppo2")
    assert float(row["mean_reward"]) == pytest.approx(np.mean(list(finals.values())))
    assert row["reached"] == "2" and int(row["fewest_episodes"]) < 100
    assert "last 100 training episodes (all " in open(tmp_path / "results.md").read()


def test_an_unfinished_run_counts_only_at_the_budgets_it_reached(runs, tmp_path):
    """A run still training, or stopped before --num-timesteps, went into the final results as if finished (and moved
    the ground-truth threshold); it now counts at the budgets its saved model trained to, and aggregate_plots leaves
    it out, each with a warning."""
    log_dir = tmp_path / "logs"
    shutil.copytree(runs["folders"][("random_agent", 1)], log_dir / "stopped")  # 1500 steps of its 1500
    manifest = json.load(open(log_dir / "stopped" / "manifest.json"))
    manifest.update(finished=False, num_timesteps=750)  # as if stopped at 750 of 1500 steps
    json.dump(manifest, open(log_dir / "stopped" / "manifest.json", "w"))
    shutil.copytree(runs["folders"][("random_agent", 0)], log_dir / "done")
    result = runModule("replay.gather_results", "--log-dir", log_dir, "--timestep-budget", "500", "1000",
                       "--episode-window", WINDOW, "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert "1 unfinished run (" in result.stderr and "stopped" in result.stderr
    rows = {row["budget"]: row for row in csv.DictReader(open(tmp_path / "out" / "results.csv"))}
    assert rows["final"]["runs"] == "1" and rows["500"]["runs"] == "2" and rows["1000"]["runs"] == "1"
    result = runModule("replay.aggregate_plots", "--log-dir", log_dir, "--output", tmp_path / "agg" / "a")
    assert result.returncode == 0, result.stderr
    assert "1 unfinished run(s) skipped" in result.stderr and "1 run," in result.stdout


def test_runs_that_are_not_seeds_of_one_setting_are_pooled_with_a_warning(runs, tmp_path):
    """A method's runs made with other budgets or hyperparameters, or repeating a seed, went into its mean as seeds
    without a word; gather_results and aggregate_plots now say so, once per method, naming what differs."""
    log_dir = tmp_path / "logs"
    for name, key in (("a", ("ppo2", 0)), ("b", ("ppo2", 0)), ("c", ("random_agent", 0)), ("d", ("random_agent", 1))):
        shutil.copytree(runs["folders"][key], log_dir / name)
    for module, output in (("replay.gather_results", ["--output-dir", tmp_path / "out"]),
                           ("replay.aggregate_plots", ["--output", tmp_path / "agg" / "a"])):
        result = runModule(module, "--log-dir", log_dir, "--episode-window", WINDOW, *output)
        assert result.returncode == 0, result.stderr
        warned = [line for line in result.stderr.splitlines() if "pooled as the seeds of one method" in line]
        assert len(warned) == 2, result.stderr
        assert any("ppo2 ground_truth: its 2 runs share seed 0" in line for line in warned), warned
        assert any("random_agent ground_truth: its 2 runs differ in num_timesteps" in line
                   and "(--group-by num_timesteps splits them)" in line for line in warned), warned
    # a bad --welch-test is the error line alone, without the warnings of runs it would have pooled
    assertUsage(runModule("replay.gather_results", "--log-dir", log_dir, "--welch-test", "nope", "--output-dir",
                           tmp_path / "refused"), "--welch-test 'nope' is no SRL model or algorithm of these runs")
    assert not (tmp_path / "refused").exists()
    result = runModule("replay.gather_results", "--log-dir", runs["log_dir"], "--episode-window", WINDOW,
                       "--group-by", "num_timesteps", "--output-dir", tmp_path / "split")
    assert result.returncode == 0 and "pooled" not in result.stderr, result.stderr
    # each seed continuing its own model is still a seed of one setting
    continued = tmp_path / "continued"
    for seed in (0, 1):
        shutil.copytree(runs["folders"][("ppo2", seed)], continued / str(seed))
        args = json.load(open(continued / str(seed) / "args.json"))
        json.dump({**args, "load_rl_model_path": f"/models/seed{seed}/ppo2_model.zip"},
                  open(continued / str(seed) / "args.json", "w"))
    result = runModule("replay.gather_results", "--log-dir", continued, "--episode-window", WINDOW,
                       "--output-dir", tmp_path / "continued_out")
    assert result.returncode == 0 and "pooled" not in result.stderr, result.stderr


def test_the_closing_line_names_each_method_by_its_env(runs, tmp_path):
    """The line under the table listed 'algo srl_model' pairs: a method with evaluations on one env made the same pair
    on another env, without them, read as evaluated."""
    log_dir = tmp_path / "logs"
    shutil.copytree(runs["folders"][("ppo2", 0)], log_dir / "plain")
    assert train.main(["--algo", "ppo2", "--env", "MobileRobot1DGymEnv-v0", "--srl-model", "ground_truth", "--log-dir",
                       str(log_dir), "--no-vis", "--no-progress", "--num-timesteps", "256", "--hyperparam", "n_steps:64",
                       "--eval-freq", "128", "--eval-episodes", "1", "--checkpoint-freq", "-1"]) == 0
    result = runModule("replay.gather_results", "--log-dir", log_dir, "--episode-window", WINDOW,
                       "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert ("Rewards from evaluations (evaluations.npz) for: MobileRobot1DGymEnv-v0 ppo2 ground_truth; the other "
            "methods from training episodes") in result.stdout


def test_num_points_without_timesteps_warns_that_it_does_nothing(runs, tmp_path):
    """--num-points sets the points of a --timesteps curve; without --timesteps it was ignored without a word."""
    log_dir = tmp_path / "logs"
    shutil.copytree(runs["folders"][("ppo2", 0)], log_dir / "a")
    with pytest.warns(UserWarning, match=r"^--num-points 5 sets the points of a --timesteps curve; without "
                                         r"--timesteps a curve has a point per episode, and it does nothing$"):
        assert aggregate_plots.main(["-i", str(log_dir), "--num-points", "5", "-o", str(tmp_path / "a" / "x")]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert aggregate_plots.main(["-i", str(log_dir), "--num-points", "5", "--timesteps",
                                     "-o", str(tmp_path / "b" / "x")]) == 0
    assert np.load(tmp_path / "b" / "x_MobileRobotGymEnv-v0_ppo2_ground_truth.npz")["x"].size == 5
