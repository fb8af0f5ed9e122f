"""gather_results, aggregate_plots and compare_plots on run folders made by hand: searches' trials, folders inside a
run, outputs that are folders, damaged monitor files, unfinished, stopped and failed runs, budgets, thresholds,
legends and axes. The tools on real tiny runs: tests/test_results_tools.py."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import warnings

import numpy as np
import pytest
from conftest import runModule
from matplotlib.figure import Figure
from results_runs import ENV, assertUsage, fakeRun, unpadded

from replay import aggregate_plots, compare_plots, gather_results
from replay.results import aggregateCurves, findRuns, loadCurves, saveCurves
from srl_toolbox.cli import UsageError

pytestmark = pytest.mark.slow  # commands run as `python -m`: left out of `make test-fast`


def test_a_folder_of_search_trials_alone_names_the_search_folder_in_its_refusal(tmp_path):
    """A --log-dir whose only runs are hyperparam_search's trials (left out of a folder's methods) was refused as
    holding "no run with a finished episode", which they have; the line names the search folder, which is read."""
    search = tmp_path / "logs" / "hyperparam_search"
    fakeRun(search / "s" / "trial_0000" / ENV / "ground_truth" / "ppo2" / "run", [1.0, 2.0])
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
    run = fakeRun(tmp_path / "logs" / ENV / "ground_truth" / "ppo2" / "run", [1.0, 2.0])
    os.makedirs(os.path.join(run, "checkpoints", "512_steps"))
    for module, below in (("replay.gather_results", "monitor"), ("replay.aggregate_plots", "checkpoints"),
                          ("replay.gather_results", "checkpoints/512_steps")):
        folder = os.path.join(run, *below.split("/"))
        before = sorted(os.listdir(folder))
        assertUsage(runModule(module, "-i", folder), f"error: --log-dir {folder!r} is {below}/ inside the run {run}, "
                                                      f"not a run folder: give --log-dir {run}")
        assert sorted(os.listdir(folder)) == before


def test_an_output_path_that_is_a_folder_is_refused_before_any_work(tmp_path):
    """A folder where an output file goes crashed at the final rename, after all the work (IsADirectoryError)."""
    fakeRun(tmp_path / "logs" / "a", [1.0, 2.0, 3.0])
    (tmp_path / "out" / "results.md").mkdir(parents=True)
    assertUsage(runModule("replay.gather_results", "--log-dir", tmp_path / "logs", "--output-dir",
                           tmp_path / "out"), "results.md' is a folder, not a file")
    assert os.listdir(tmp_path / "out") == ["results.md"]
    (tmp_path / "afile").write_text("")  # a file given as the folder: named as given, not as results.csv in it
    assertUsage(runModule("replay.gather_results", "--log-dir", tmp_path / "logs", "--output-dir",
                           tmp_path / "afile"), f"--output-dir {str(tmp_path / 'afile')!r}: ")
    (tmp_path / "agg" / f"a_{ENV}.png").mkdir(parents=True)
    assertUsage(runModule("replay.aggregate_plots", "-i", tmp_path / "logs", "-o", tmp_path / "agg" / "a"),
                 f"a_{ENV}.png' is a folder, not a file")
    assert os.listdir(tmp_path / "agg") == [f"a_{ENV}.png"]  # no .npz either
    np.savez(tmp_path / "a.npz", x=np.arange(3.0), y=np.zeros((2, 3)), x_label=np.array("episodes"))
    (tmp_path / "dir.png").mkdir()
    assertUsage(runModule("replay.compare_plots", "-i", tmp_path / "a.npz", "-o", tmp_path / "dir.png"),
                 "--output '" + str(tmp_path / "dir.png") + "' is a folder, not a file")
    (tmp_path / "plots" / "a.png").mkdir(parents=True)
    assertUsage(runModule("replay.plots", "-i", tmp_path / "logs", "--output-dir", tmp_path / "plots"),
                 "a.png' is a folder, not a file")


@pytest.mark.parametrize("damage", ["abc,250,3.0\n", "1.0,100\n", "\0\0\0\0\0\0\n", "1.0,oops,2.0\n"])
def test_a_damaged_monitor_row_skips_the_run_and_a_torn_last_line_is_ignored(tmp_path, damage):
    """One damaged monitor row crashed gather_results, plots and aggregate_plots (ValueError, KeyError 't'): a row
    before the last line makes the run unreadable, skipped with one warning naming the file; a torn last line (a crash
    mid-write) is ignored."""
    logs = tmp_path / "logs"
    good = fakeRun(logs / "good", [1.0, 2.0, 3.0])
    damaged = fakeRun(logs / "damaged", [1.0, 2.0, 3.0], seed=1)
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


def test_a_monitor_file_of_bytes_that_are_not_utf8_or_a_folder_skips_the_run(tmp_path):
    """Bytes that are not UTF-8 in a monitor file (a damaged disk block), or a folder at its name, crashed the results
    tools with a UnicodeDecodeError (IsADirectoryError) traceback: the run is skipped with one warning naming it."""
    logs = tmp_path / "logs"
    fakeRun(logs / "good", [1.0, 2.0, 3.0])
    binary, folder = fakeRun(logs / "binary", [1.0, 2.0, 3.0], seed=1), fakeRun(logs / "folder", [1.0], seed=2)
    monitor = os.path.join(binary, "monitor", "0.monitor.csv")
    lines = open(monitor, "rb").readlines()
    with open(monitor, "wb") as handle:
        handle.writelines([*lines[:3], b"\x8c\xff\xfe,250,3.0\n", *lines[3:]])
    os.remove(os.path.join(folder, "monitor", "0.monitor.csv"))
    os.mkdir(os.path.join(folder, "monitor", "0.monitor.csv"))
    result = runModule("replay.gather_results", "-i", logs, "--output-dir", tmp_path / "out")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert any(f"{monitor} line 4" in line for line in warned), warned
    assert any(f"{folder}/monitor/0.monitor.csv is a folder, not a file" in line for line in warned), warned
    assert next(csv.DictReader(open(tmp_path / "out" / "results.csv")))["runs"] == "1"


def test_steps_to_threshold_at_a_budget_reads_the_episodes_its_reward_reads(tmp_path):
    """At --timestep-budget, the row's reward averages the episodes within the budget (all of them when fewer than the
    window) but steps to threshold used the whole run's window: a run whose reward at 500 steps was above the
    threshold had "not reached" it."""
    for seed in (0, 1):
        fakeRun(tmp_path / "logs" / str(seed), [0.0, 0.0, 0.0, 0.0, 0.0, -50.0, -50.0, -50.0], seed=seed)
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
        fakeRun(tmp_path / "logs" / str(seed), [1.0, 2.0, 3.0, 4.0, 5.0], seed=seed)
    fakeRun(tmp_path / "logs" / "stopped", [1.0, 2.0, 3.0], seed=2, finished=False)
    result = runModule("replay.gather_results", "-i", tmp_path / "logs", "--timestep-budget", "300", "2000",
                       "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert "1 unfinished run (" in result.stderr and "pooled" not in result.stderr, result.stderr
    rows = {row["budget"]: row for row in csv.DictReader(open(tmp_path / "out" / "results.csv"))}
    assert (rows["final"]["runs"], rows["300"]["runs"], rows["2000"]["runs"]) == ("2", "3", "0")
    text = unpadded(open(tmp_path / "out" / "results.md").read())
    assert "no run trained to 2,000 steps" in text and "(all 0 of a shorter run)" not in text
    assert "| 2.7 not reached (0/3) |" in text  # (it read "not 2.7 (0/3)")
    assert "3 runs (1 unfinished: not in the final results), 1 method:" in result.stdout


def test_a_run_its_sweep_stopped_is_unfinished_in_both_tools_and_the_final_table_says_what_it_left_out(tmp_path):
    """A sweep run its pipeline's Ctrl-C stopped (failed.json ``"stopped": true``) was skipped as failed, while a run
    train's own Ctrl-C stopped counted at the budgets it reached; the final table did not say it left either out."""
    for seed in (0, 1):
        fakeRun(tmp_path / "logs" / str(seed), [1.0, 2.0, 3.0, 4.0, 5.0], seed=seed)
    fakeRun(tmp_path / "logs" / "stopped_train", [1.0, 2.0, 3.0], seed=2, finished=False)
    fakeRun(tmp_path / "logs" / "stopped_sweep", [1.0, 2.0, 3.0], seed=3)  # (its done.json left by an attempt)
    json.dump({"returncode": -15, "stopped": True}, open(tmp_path / "logs" / "stopped_sweep" / "failed.json", "w"))
    fakeRun(tmp_path / "logs" / "failed", [1.0, 2.0, 3.0], seed=4, finished=False)
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
    run_dir = fakeRun(tmp_path / "logs" / "0", [1.0, 2.0, 3.0])  # episodes end at 100, 200, 300
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
        fakeRun(tmp_path / "logs" / str(seed), [1.0, 2.0, 3.0, 4.0, 5.0], seed=seed)
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
    fakeRun(tmp_path / "logs" / "a", [1.0, 2.0], finished=False)
    result = runModule("replay.aggregate_plots", "-i", tmp_path / "logs")
    assertUsage(result, "every run with a finished episode below")
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
    fakeRun(logs / "a", [1.0, 2.0, 3.0])
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
    fakeRun(logs / "a", [1.0, 2.0, 3.0])
    fakeRun(logs / "b", [1.0, 2.0], seed=1, finished=False)
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
    run_dir = fakeRun(tmp_path / "logs" / "a", [1.0])
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


def test_runs_that_share_no_step_give_no_timesteps_curve(tmp_path, capsys):
    """aggregate_plots --timesteps read a run that ended before another's first episode at that episode's step, past
    its own end (its last value held there, after the runs-differ warning); the method now gets no training curve,
    and the line says why."""
    method = tmp_path / "logs" / ENV / "ground_truth" / "ppo2"
    short = fakeRun(method / "short", [1.0, 2.0], seed=0, length=100)  # episodes end at steps 100 and 200
    long = fakeRun(method / "long", [5.0, 6.0], seed=1, length=1000)  # at 1000 and 2000
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
