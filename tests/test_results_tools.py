"""gather_results, aggregate_plots and compare_plots on real tiny runs (2 algorithms x 2 seeds), every number checked
against a computation straight from the monitor CSVs."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import warnings

import numpy as np
import pytest
from conftest import runModule
from matplotlib.figure import Figure
from scipy import stats

from replay import aggregate_plots, compare_plots, gather_results
from replay.results import (
    aggregateCurves,
    episodeWindowStepsToThreshold,
    evaluationStepsToThreshold,
    findRuns,
    loadCurves,
    saveCurves,
)
from rl_baselines.runs import train
from srl_toolbox.cli import UsageError, runCommand

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

ENV = "MobileRobotGymEnv-v0"
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


def _unpadded(text: str) -> str:
    """:return: a Markdown text with its table cells' padding removed (``| a   | b |`` reads ``| a | b |``)"""
    return re.sub(" {2,}", " ", text)


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
    markdown = _unpadded(open(os.path.join(log_dir, "results.md")).read())
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


def _assertUsage(result, text: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()  # the error alone, not the warnings of the checks before it
    assert len(lines) == 1 and lines[0].startswith("error: ") and text in lines[0], result.stderr


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
    _assertUsage(runModule("replay.gather_results", "--log-dir", empty), "no run with a finished episode")
    _assertUsage(inProcess(gather_results.main, "--log-dir", tmp_path / "missing"), "is not a folder")
    out = tmp_path / "out"
    _assertUsage(inProcess(gather_results.main, "--log-dir", runs["log_dir"], "--welch-test", "vae",
                           "--output-dir", out), "--welch-test 'vae' is no SRL model or algorithm of these runs; "
                                                 "valid choices: ground_truth, ppo2, random_agent")
    _assertUsage(inProcess(gather_results.main, "--log-dir", runs["log_dir"], "--timestep-budget", "0",
                           "--output-dir", out), "must be a positive integer")
    _assertUsage(inProcess(gather_results.main, "--log-dir", runs["log_dir"], "--group-by", "nope",
                           "--output-dir", out), "--group-by nope")
    assert not out.exists()
    _assertUsage(runModule("replay.aggregate_plots", "-i", empty), "no run with a finished episode")
    _assertUsage(runModule("replay.compare_plots", "-i", tmp_path / "none.npz"), "is not a readable .npz file")
    np.savez(tmp_path / "a.npz", x=np.arange(3.0), y=np.zeros((2, 3)), x_label=np.array("episodes"))
    np.savez(tmp_path / "b.npz", x=np.arange(3.0), y=np.zeros((2, 3)), x_label=np.array("timesteps"))
    np.savez(tmp_path / "c.npz", values=np.arange(3.0))
    _assertUsage(inProcess(compare_plots.main, "-i", tmp_path / "a.npz", tmp_path / "b.npz"),
                 f"mix x units (episodes: {tmp_path / 'a.npz'}; timesteps: {tmp_path / 'b.npz'})")
    _assertUsage(inProcess(compare_plots.main, "-i", tmp_path / "a.npz", "--labels", "x", "y"),
                 "2 labels for 1 input;")
    _assertUsage(inProcess(compare_plots.main, "-i", tmp_path / "c.npz"), "has no curves x")


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
    _assertUsage(runModule("replay.gather_results", "--log-dir", log_dir, "--welch-test", "nope", "--output-dir",
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


def _fakeRun(run_dir, rewards, seed: int = 0, finished: bool = True, length: int = 100):
    """A run folder as train leaves it, fabricated: args.json, one monitor file of ``length``-step episodes,
    done.json when ``finished`` (a sweep's record of a finished run)."""
    os.makedirs(os.path.join(run_dir, "monitor"))
    with open(os.path.join(run_dir, "args.json"), "w") as handle:
        json.dump({"env": ENV, "srl_model": "ground_truth", "algo": "ppo2", "seed": seed,
                   "num_timesteps": length * len(rewards)}, handle)
    with open(os.path.join(run_dir, "monitor", "0.monitor.csv"), "w") as handle:
        handle.write('#{"t_start": 1700000000.0, "env_id": "E"}\nr,l,t\n')
        handle.writelines(f"{reward},{length},{index + 1.0}\n" for index, reward in enumerate(rewards))
    if finished:
        with open(os.path.join(run_dir, "done.json"), "w") as handle:
            handle.write("{}\n")
    return str(run_dir)


def test_a_folder_of_search_trials_alone_names_the_search_folder_in_its_refusal(tmp_path):
    """A --log-dir whose only runs are hyperparam_search's trials (left out of a folder's methods) was refused as
    holding "no run with a finished episode", which they have; the line names the search folder, which is read."""
    search = tmp_path / "logs" / "hyperparam_search"
    _fakeRun(search / "s" / "trial_0000" / ENV / "ground_truth" / "ppo2" / "run", [1.0, 2.0])
    message = (f"no run with a finished episode below '{tmp_path / 'logs'}' (a run folder holds args.json and "
               f"monitor/); skipped: the hyperparameter-search trials below {search} (give that folder to read them)")
    with pytest.raises(UsageError) as refusal:
        findRuns(str(tmp_path / "logs"))
    assert str(refusal.value) == message
    assert [run.path for run in findRuns(str(search))] == [str(search / "s" / "trial_0000" / ENV / "ground_truth" /
                                                                 "ppo2" / "run")]


def test_a_folder_inside_a_run_is_refused_naming_the_run(tmp_path):
    """gather_results -i RUN/monitor and aggregate_plots -i RUN/checkpoints said "no run with a finished episode
    below" the folder; the refusal names the run the folder is inside, and nothing is written."""
    run = _fakeRun(tmp_path / "logs" / ENV / "ground_truth" / "ppo2" / "run", [1.0, 2.0])
    os.makedirs(os.path.join(run, "checkpoints", "512_steps"))
    for module, below in (("replay.gather_results", "monitor"), ("replay.aggregate_plots", "checkpoints"),
                          ("replay.gather_results", "checkpoints/512_steps")):
        folder = os.path.join(run, *below.split("/"))
        before = sorted(os.listdir(folder))
        _assertUsage(runModule(module, "-i", folder), f"error: --log-dir {folder!r} is {below}/ inside the run {run}, "
                                                      f"not a run folder: give --log-dir {run}")
        assert sorted(os.listdir(folder)) == before


def test_an_output_path_that_is_a_folder_is_refused_before_any_work(tmp_path):
    """A folder where an output file goes crashed at the final rename, after all the work (IsADirectoryError)."""
    _fakeRun(tmp_path / "logs" / "a", [1.0, 2.0, 3.0])
    (tmp_path / "out" / "results.md").mkdir(parents=True)
    _assertUsage(runModule("replay.gather_results", "--log-dir", tmp_path / "logs", "--output-dir",
                           tmp_path / "out"), "results.md' is a folder, not a file")
    assert os.listdir(tmp_path / "out") == ["results.md"]
    (tmp_path / "afile").write_text("")  # a file given as the folder: named as given, not as results.csv in it
    _assertUsage(runModule("replay.gather_results", "--log-dir", tmp_path / "logs", "--output-dir",
                           tmp_path / "afile"), f"--output-dir {str(tmp_path / 'afile')!r}: ")
    (tmp_path / "agg" / f"a_{ENV}.png").mkdir(parents=True)
    _assertUsage(runModule("replay.aggregate_plots", "-i", tmp_path / "logs", "-o", tmp_path / "agg" / "a"),
                 f"a_{ENV}.png' is a folder, not a file")
    assert os.listdir(tmp_path / "agg") == [f"a_{ENV}.png"]  # no .npz either
    np.savez(tmp_path / "a.npz", x=np.arange(3.0), y=np.zeros((2, 3)), x_label=np.array("episodes"))
    (tmp_path / "dir.png").mkdir()
    _assertUsage(runModule("replay.compare_plots", "-i", tmp_path / "a.npz", "-o", tmp_path / "dir.png"),
                 "--output '" + str(tmp_path / "dir.png") + "' is a folder, not a file")
    (tmp_path / "plots" / "a.png").mkdir(parents=True)
    _assertUsage(runModule("replay.plots", "-i", tmp_path / "logs", "--output-dir", tmp_path / "plots"),
                 "a.png' is a folder, not a file")


@pytest.mark.parametrize("damage", ["abc,250,3.0\n", "1.0,100\n", "\0\0\0\0\0\0\n", "1.0,oops,2.0\n"])
def test_a_damaged_monitor_row_skips_the_run_and_a_torn_last_line_is_ignored(tmp_path, damage):
    """One damaged monitor row crashed gather_results, plots and aggregate_plots (ValueError, KeyError 't'): a row
    before the last line makes the run unreadable, skipped with one warning naming the file; a torn last line (a crash
    mid-write) is ignored."""
    logs = tmp_path / "logs"
    good = _fakeRun(logs / "good", [1.0, 2.0, 3.0])
    damaged = _fakeRun(logs / "damaged", [1.0, 2.0, 3.0], seed=1)
    monitor = os.path.join(damaged, "monitor", "0.monitor.csv")
    lines = open(monitor).readlines()
    with open(monitor, "w") as handle:
        handle.writelines([*lines[:3], damage, *lines[3:]])
    for module, extra in (("replay.gather_results", ["--output-dir", tmp_path / "out"]),
                          ("replay.aggregate_plots", ["-o", tmp_path / "agg" / "a"]),
                          ("replay.plots", ["--output-dir", tmp_path / "plots"])):
        result = runModule(module, "-i", logs, *extra)
        assert result.returncode == 0, result.stderr
        warned = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
        assert len(warned) == 1 and f"skipping {damaged}" in warned[0] and f"{monitor} line 4" in warned[0], warned
    assert os.listdir(tmp_path / "plots") == ["good.png"]
    # the same row as the file's last line: a torn write, ignored; the run's other episodes count
    with open(monitor, "w") as handle:
        handle.writelines([*lines, damage.rstrip("\n")])  # (without its newline: still being written)
    with open(os.path.join(good, "monitor", "0.monitor.csv"), "a") as handle:
        handle.write(damage)
    result = runModule("replay.gather_results", "-i", logs, "--output-dir", tmp_path / "out2")
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr
    assert next(csv.DictReader(open(tmp_path / "out2" / "results.csv")))["runs"] == "2"


def test_steps_to_threshold_at_a_budget_reads_the_episodes_its_reward_reads(tmp_path):
    """At --timestep-budget, the row's reward averages the episodes within the budget (all of them when fewer than the
    window) but steps to threshold used the whole run's window: a run whose reward at 500 steps was above the
    threshold had "not reached" it."""
    for seed in (0, 1):
        _fakeRun(tmp_path / "logs" / str(seed), [0.0, 0.0, 0.0, 0.0, 0.0, -50.0, -50.0, -50.0], seed=seed)
    result = runModule("replay.gather_results", "-i", tmp_path / "logs", "--timestep-budget", "500",
                       "--threshold", "-10", "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    row = next(row for row in csv.DictReader(open(tmp_path / "out" / "results.csv")) if row["budget"] == "500")
    assert float(row["mean_reward"]) == 0.0 and row["reached"] == "2"
    assert float(row["median_steps_to_threshold"]) == 500.0  # the mean of the 5 episodes within 500 steps


def test_an_unfinished_run_is_left_out_of_the_pooling_warning_and_an_empty_budget_row_says_so(tmp_path):
    """A stopped run (another num_timesteps by nature) made the warning say the finished runs pooled in the final
    table differ in num_timesteps; a budget no run reached read "last 100 training episodes (all 0 of a shorter
    run)"."""
    for seed in (0, 1):
        _fakeRun(tmp_path / "logs" / str(seed), [1.0, 2.0, 3.0, 4.0, 5.0], seed=seed)
    _fakeRun(tmp_path / "logs" / "stopped", [1.0, 2.0, 3.0], seed=2, finished=False)
    result = runModule("replay.gather_results", "-i", tmp_path / "logs", "--timestep-budget", "300", "2000",
                       "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert "1 unfinished run (" in result.stderr and "pooled" not in result.stderr, result.stderr
    rows = {row["budget"]: row for row in csv.DictReader(open(tmp_path / "out" / "results.csv"))}
    assert (rows["final"]["runs"], rows["300"]["runs"], rows["2000"]["runs"]) == ("2", "3", "0")
    text = _unpadded(open(tmp_path / "out" / "results.md").read())
    assert "no run trained to 2,000 steps" in text and "(all 0 of a shorter run)" not in text
    assert "| 2.7 not reached (0/3) |" in text  # (it read "not 2.7 (0/3)")
    assert "3 runs (1 unfinished: not in the final results), 1 method:" in result.stdout


def test_a_run_its_sweep_stopped_is_unfinished_in_both_tools_and_the_final_table_says_what_it_left_out(tmp_path):
    """A sweep run its pipeline's Ctrl-C stopped (failed.json ``"stopped": true``) was skipped as failed, while a run
    train's own Ctrl-C stopped counted at the budgets it reached; the final table did not say it left either out."""
    for seed in (0, 1):
        _fakeRun(tmp_path / "logs" / str(seed), [1.0, 2.0, 3.0, 4.0, 5.0], seed=seed)
    _fakeRun(tmp_path / "logs" / "stopped_train", [1.0, 2.0, 3.0], seed=2, finished=False)
    _fakeRun(tmp_path / "logs" / "stopped_sweep", [1.0, 2.0, 3.0], seed=3)  # (its done.json left by an attempt)
    json.dump({"returncode": -15, "stopped": True}, open(tmp_path / "logs" / "stopped_sweep" / "failed.json", "w"))
    _fakeRun(tmp_path / "logs" / "failed", [1.0, 2.0, 3.0], seed=4, finished=False)
    json.dump({"returncode": 1}, open(tmp_path / "logs" / "failed" / "failed.json", "w"))
    result = runModule("replay.gather_results", "-i", tmp_path / "logs", "--timestep-budget", "300",
                       "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    rows = {row["budget"]: row for row in csv.DictReader(open(tmp_path / "out" / "results.csv"))}
    assert (rows["final"]["runs"], rows["300"]["runs"]) == ("2", "4"), rows
    assert "1 failed sweep run(s) skipped" in result.stderr, result.stderr
    note = "2 unfinished runs (still training, or stopped before --num-timesteps) left out of the final results"
    assert note in open(tmp_path / "out" / "results.md").read() and note in result.stderr
    assert "4 runs (2 unfinished: not in the final results), 1 method:" in result.stdout
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "logs", "--output", tmp_path / "agg" / "a")
    assert result.returncode == 0, result.stderr
    assert "2 unfinished run(s) skipped" in result.stderr and "1 failed sweep run(s) skipped" in result.stderr
    assert ": 2 runs," in result.stdout, result.stdout


def test_a_finished_run_counts_at_a_budget_past_its_last_episode(tmp_path):
    """A finished run whose last episodes ended long before its step count (Kuka: episodes of up to 1,000 steps)
    read "no run trained to 1,000 steps" at a budget it trained to: the last episode's end plus the longest episode
    stood for the steps trained even where its manifest or sweep record gives them."""
    run_dir = _fakeRun(tmp_path / "logs" / "0", [1.0, 2.0, 3.0])  # episodes end at 100, 200, 300
    args = json.load(open(os.path.join(run_dir, "args.json")))
    json.dump({**args, "num_timesteps": 1000}, open(os.path.join(run_dir, "args.json"), "w"))
    result = runModule("replay.gather_results", "-i", tmp_path / "logs", "--timestep-budget", "1000",
                       "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    rows = {row["budget"]: row for row in csv.DictReader(open(tmp_path / "out" / "results.csv"))}
    assert rows["1000"]["runs"] == "1" and float(rows["1000"]["mean_reward"]) == 2.0, rows


def test_aggregate_plots_output_that_names_a_folder_writes_into_it(tmp_path):
    """``-o plots/`` wrote plots/_<env>.png (a prefix ending in the folder's separator), and ``-o`` an existing
    folder wrote files beside it named after it."""
    for seed in (0, 1):
        _fakeRun(tmp_path / "logs" / str(seed), [1.0, 2.0, 3.0, 4.0, 5.0], seed=seed)
    (tmp_path / "existing").mkdir()
    plots, existing = tmp_path / "plots", tmp_path / "existing"
    for output, folder in ((f"{plots}/", plots), (existing, existing)):
        result = runModule("replay.aggregate_plots", "-i", tmp_path / "logs", "--episode-window", "2", "-o", output)
        assert result.returncode == 0, result.stderr
        assert sorted(os.listdir(folder)) == [f"aggregate_{ENV}.png", f"aggregate_{ENV}_ppo2_ground_truth.npz"]
    assert sorted(os.listdir(tmp_path)) == ["existing", "logs", "plots"]


def test_compare_plots_gives_inputs_that_share_a_label_their_own_colours(tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: drawn.append(figure))
    for name in ("a", "b"):
        np.savez(tmp_path / f"{name}.npz", x=np.arange(3.0), y=np.zeros((2, 3)), x_label=np.array("episodes"),
                 label=np.array("ppo2 ground_truth"))
    assert compare_plots.main(["-i", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"),
                               "-o", str(tmp_path / "c.png")]) == 0
    colours = [line.get_color() for line in drawn[0].axes[0].get_lines()]
    assert len(colours) == 2 and colours[0] != colours[1]


def test_only_unfinished_runs_say_so(tmp_path):
    """A folder whose only run is unfinished said "no run with a finished episode" although it has some."""
    _fakeRun(tmp_path / "logs" / "a", [1.0, 2.0], finished=False)
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "logs")
    _assertUsage(result, "every run with a finished episode below")
    assert "is unfinished (1 skipped" in result.stderr


def test_curves_saved_under_a_name_without_npz_land_at_that_name(tmp_path):
    path = str(tmp_path / "curves")  # np.savez given a path would add ".npz" to the temporary file's name
    saveCurves(path, np.arange(3.0), np.ones((2, 3)), "ppo2", ENV, "timesteps", ["a", "b"])
    assert os.listdir(tmp_path) == ["curves"]
    curves = loadCurves(path)
    np.testing.assert_array_equal(curves["y"], np.ones((2, 3)))
    assert curves["label"] == "ppo2" and list(curves["runs"]) == ["a", "b"]


def test_the_thresholds_line_names_each_groups_values():
    """With --group-by, two groups of one env and algorithm can have their own thresholds (each from its own
    ground-truth runs, or the env's default): the line gave both under the same label."""
    row = {"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "algo": "ppo2", "budget": gather_results.FINAL,
           "runs": 1, "mean_reward": 8.5, "std_reward": float("nan"), "ci95_low": float("nan"),
           "ci95_high": float("nan"), "source": "training", "fewest_episodes": 40, "mean_wall_time_s": 3.0,
           "median_steps_to_threshold": 1000.0, "reached": 1}
    rows = [{**row, "eval_freq": 1000, "threshold": 7.65, "threshold_source": "ground truth"},
            {**row, "eval_freq": 0, "threshold": 150.0, "threshold_source": "default"}]
    text = gather_results.markdown(rows, 40, None, group_by=["eval_freq"])
    assert ("Thresholds: MobileRobotGymEnv-v0 (ppo2, eval_freq=0) 150 (default), MobileRobotGymEnv-v0 (ppo2, "
            "eval_freq=1000) 7.65 (ground truth).") in text
    assert "MobileRobotGymEnv-v0 (ppo2) 7.65 (ground truth)." in gather_results.markdown(rows[:1], 40, None)
    # methods of an env at its default share one entry (it repeated "MobileRobotGymEnv-v0 (X) 150 (default)" per X)
    rows = [{**row, "algo": algo, "threshold": 150.0, "threshold_source": "default"} for algo in ("ppo2", "a2c", "sac")]
    text = gather_results.markdown(rows, 40, None)
    assert "Thresholds: MobileRobotGymEnv-v0 (a2c; ppo2; sac) 150 (default).\n" in text


def test_a_run_folder_whose_args_json_is_not_a_runs_is_skipped_with_a_warning(tmp_path):
    """An args.json of valid JSON that is not a run's ({} or a list) was skipped without a word, where one that is
    not JSON was named: each is now a warning, and the refusal names it when no run is left."""
    logs = tmp_path / "logs"
    _fakeRun(logs / "a", [1.0, 2.0, 3.0])
    for name, text in (("b", "{}"), ("c", "[1, 2]")):
        (logs / name / "monitor").mkdir(parents=True)
        (logs / name / "args.json").write_text(text)
    result = runModule("replay.gather_results", "-i", logs, "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    shown = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert shown == [f"warning: skipping {logs / 'b'}: args.json names no env nor srl_model nor algo (not a run's)",
                     f"warning: skipping {logs / 'c'}: args.json is not a JSON object (not a run's)"], shown
    shutil.rmtree(logs / "a")
    result = runModule("replay.aggregate_plots", "-i", logs, "-o", tmp_path / "plots")
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "skipped: 2 unreadable, e.g. " in result.stderr and not (tmp_path / "plots").exists(), result.stderr


def test_a_refusal_prints_its_error_alone(tmp_path):
    """gather_results and aggregate_plots refused after their runs were read (an output that cannot be written)
    printed the warnings of the runs they skipped or took unfinished above the error: the one-line error alone,
    which names the unreadable runs when none is left; accepted, each warning is shown once."""
    logs = tmp_path / "logs"
    _fakeRun(logs / "a", [1.0, 2.0, 3.0])
    _fakeRun(logs / "b", [1.0, 2.0], seed=1, finished=False)
    (logs / "c" / "monitor").mkdir(parents=True)
    (logs / "c" / "args.json").write_text("{oops")
    commands = (("replay.gather_results", "--output-dir"), ("replay.aggregate_plots", "-o"))
    for module, flag in commands:
        result = runModule(module, "-i", logs, flag, "/proc/no-such-folder/out")
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
        result = runModule(module, "-i", logs, flag, tmp_path / module / "out")
        assert result.returncode == 0, result.stderr
        shown = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
        assert len(shown) == 2 and "args.json is not valid JSON" in shown[0] and "1 unfinished" in shown[1], shown
    for run in ("a", "b"):
        shutil.rmtree(logs / run)
    for module, flag in commands:
        result = runModule(module, "-i", logs, flag, tmp_path / "out")
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert f"skipped: 1 unreadable, e.g. {logs / 'c'}: args.json is not valid JSON" in result.stderr


def test_a_count_of_one_point_or_evaluation_is_singular(tmp_path, capsys):
    """A one-episode run with one evaluation printed "1 points" and "1 evaluations"."""
    run_dir = _fakeRun(tmp_path / "logs" / "a", [1.0])
    np.savez(os.path.join(run_dir, "evaluations.npz"), timesteps=np.array([100]), results=np.array([[1.0]]),
             ep_lengths=np.array([[100]]))
    assert aggregate_plots.main(["-i", str(tmp_path / "logs"), "-o", str(tmp_path / "agg" / "a"),
                                 "--episode-window", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 run, 1 point ->" in out and "1 run, 1 evaluation ->" in out, out
    # -o given as a file name: the suffix is dropped (it wrote a.png_<env>.png)
    assert aggregate_plots.main(["-i", str(tmp_path / "logs"), "-o", str(tmp_path / "png" / "a.png"),
                                 "--episode-window", "1"]) == 0
    assert sorted(os.listdir(tmp_path / "png")) == [f"a_MobileRobotGymEnv-v0{end}" for end in (
        ".png", "_evaluation.png", "_ppo2_ground_truth.npz", "_ppo2_ground_truth_evaluation.npz")]


def test_long_legend_labels_wrap_and_leave_the_axes_most_of_the_figure(tmp_path, monkeypatch):
    """compare_plots prefixes each label with its env when the inputs mix envs: the legend beside the axes grew as wide
    as its longest label (about 80 characters), squeezing the curves into 40% of the figure; a one-run method's entry
    did not say that its band is missing."""
    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: drawn.append(figure))
    long_label = "KukaMovingButtonGymEnv-v0 ppo2 srl_combination continuous_actions=True tag=baseline"
    curves = [(long_label, np.arange(3), np.ones((2, 3))), ("a2c ground_truth", np.arange(3), np.ones((1, 3)))]
    aggregate_plots.plotCurves(str(tmp_path / "c.png"), curves, "Learning curves", "episodes")
    figure = drawn[0]
    texts = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert all(len(line) <= aggregate_plots.LEGEND_LABEL_CHARS for text in texts for line in text.split("\n")), texts
    assert texts[0].replace("\n", " ") == f"{long_label} (2 runs)" and texts[1] == "a2c ground_truth (1 run, no band)"
    assert figure.axes[0].get_position().width > 0.55


def test_the_y_axis_spans_the_runs_not_a_band_wider_than_them(tmp_path, monkeypatch):
    """With 2 seeds the 95% band is 12.7 standard errors wide: two runs of -236 and 0 gave a y axis of -3,000 to
    3,000, flattening every curve; the axis spans the runs' own values, the band cut at its edges."""
    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: drawn.append(figure))
    curves = [("a2c ground_truth", np.arange(3.0), np.array([[-236.0, -236.0, -236.0], [0.0, -10.0, 0.0]])),
              ("ppo2 raw_pixels", np.arange(3.0), np.array([[-236.0, -235.0, -236.0], [-236.0, -236.0, -235.0]]))]
    aggregate_plots.plotCurves(str(tmp_path / "e.png"), curves, "env", "timesteps")
    low, high = drawn[0].axes[0].get_ylim()
    assert -236.0 - 0.05 * 236 <= low < -236.0 and 0.0 < high <= 0.05 * 236, (low, high)
    aggregate_plots.plotCurves(str(tmp_path / "f.png"), [("flat", np.arange(3.0), np.ones((2, 3)))], "env", "x")
    low, high = drawn[1].axes[0].get_ylim()
    assert low < 1.0 < high  # one value: matplotlib's own limits around it


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


def test_runs_that_share_no_step_give_no_timesteps_curve(tmp_path, capsys):
    """aggregate_plots --timesteps read a run that ended before another's first episode at that episode's step, past
    its own end (its last value held there, after the runs-differ warning); the method now gets no training curve,
    and the line says why."""
    method = tmp_path / "logs" / ENV / "ground_truth" / "ppo2"
    short = _fakeRun(method / "short", [1.0, 2.0], seed=0, length=100)  # episodes end at steps 100 and 200
    long = _fakeRun(method / "long", [5.0, 6.0], seed=1, length=1000)  # at 1000 and 2000
    with pytest.raises(ValueError, match=rf"^its runs share no step: {re.escape(short)} ends at step 200, before the "
                                         rf"first episode of {re.escape(long)} \(step 1,000\)$"):
        aggregateCurves(findRuns(str(tmp_path / "logs")), 1, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the runs differ in --num-timesteps)
        assert aggregate_plots.main(["-i", str(tmp_path / "logs"), "--timesteps", "--episode-window", "1",
                                     "-o", str(tmp_path / "out" / "curves")]) == 0
    out = capsys.readouterr().out
    assert f"{ENV} ppo2 ground_truth: no training curve, its runs share no step" in out, out
    assert not list(tmp_path.rglob("*.npz"))
