"""``python -m replay.plots``: per-run learning curves from monitor CSVs, as PNG and in visdom."""
from __future__ import annotations

import hashlib
import json
import os
import warnings

import numpy as np
import pytest
import visdom
from conftest import runModule, snapshot
from matplotlib.figure import Figure
from PIL import Image

from replay import plots
from replay.plots import PNG_NAME, VisdomRunPlots, _timeUnit, findRunFolders, main, plotRun
from replay.results import distinctStems
from replay.visdom_server import findFreePort
from rl_baselines.runs.monitor_files import loadEpisodes
from srl_toolbox.cli import UsageError
from srl_toolbox.plots import atLastOfStep, saveLearningCurve

TAB_BLUE = np.array([31, 119, 180])


def writeRun(run_dir: str, rewards: list[float], lengths: list[int], times: list[float], args: dict | None = None,
             files: int = 1) -> str:
    """A run folder as rl_baselines.train writes it: args.json and SB3 monitor CSVs (episodes dealt to ``files``
    envs in turn)."""
    os.makedirs(os.path.join(run_dir, "monitor"), exist_ok=True)
    if args is not None:
        with open(os.path.join(run_dir, "args.json"), "w") as handle:
            json.dump(args, handle)
    for rank in range(files):
        with open(os.path.join(run_dir, "monitor", f"{rank}.monitor.csv"), "w") as handle:
            handle.write('#{"t_start": 1700000000.0, "env_id": "MobileRobotGymEnv-v0"}\nr,l,t\n')
            for reward, length, wall in list(zip(rewards, lengths, times))[rank::files]:
                handle.write(f"{reward},{length},{wall}\n")
    return run_dir


def bluePixels(path: str) -> int:
    with Image.open(path) as image:
        pixels = np.asarray(image.convert("RGB")).astype(np.int32)
    return int((np.abs(pixels - TAB_BLUE).sum(axis=2) <= 30).sum())


def test_one_run_draws_both_curves(tmp_path) -> None:
    rewards = list(np.linspace(-5, 20, 50))
    run = writeRun(str(tmp_path / "run"), rewards, [100] * 50, list(np.arange(1, 51) * 10.0),
                   args={"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "algo": "ppo2",
                         "episode_window": 5}, files=2)
    assert main(["-i", run]) == 0
    png = os.path.join(run, PNG_NAME)
    assert bluePixels(png) > 1000  # two panels, raw and smoothed curves
    # episodes of both env files are merged in wall-time order, steps accumulate
    episodes = loadEpisodes(os.path.join(run, "monitor"))
    np.testing.assert_allclose(episodes["rewards"], rewards)
    assert episodes["timesteps"][-1] == 5000


def test_empty_plot_differs_from_a_curve(tmp_path) -> None:
    """The pixel check can fail: a run with no finished episode draws no blue."""
    episodes = {"rewards": np.array([]), "timesteps": np.array([], dtype=int), "times": np.array([])}
    flat = plotRun(episodes, 5, str(tmp_path / "flat.png"))
    episodes = {"rewards": np.sin(np.arange(80) / 5.0), "timesteps": np.arange(1, 81) * 10,
                "times": np.arange(1, 81) * 1.0}
    wavy = plotRun(episodes, 5, str(tmp_path / "wavy.png"))
    assert bluePixels(wavy) > 5 * max(bluePixels(flat), 1)


def test_episodes_ending_at_one_step_are_points_and_the_average_takes_one_value_there(tmp_path, monkeypatch) -> None:
    """With four envs, four episodes end at step 1,000, 2,000...: a line through their rewards drew a vertical
    stroke at each such step and a diagonal to the next; the rewards are points, the average the last episode's value
    at each step. train's learning_curve.png and replay.plots' figure alike."""
    assert atLastOfStep([1, 1, 1, 2, 3, 3], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).tolist() == [3.0, 3.0, 3.0, 4.0, 6.0, 6.0]
    assert atLastOfStep([], []).size == 0
    with pytest.raises(ValueError, match="^2 steps for 1 values$"):
        atLastOfStep([1, 2], [1.0])
    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: drawn.append(figure))
    steps = np.repeat(np.arange(1, 6) * 1000, 4)
    rewards = np.tile([-8.0, -3.0, 0.0, -2.0], 5)
    episodes = {"timesteps": steps, "rewards": rewards, "times": np.arange(1, 21) * 1.5}
    plotRun(episodes, 4, str(tmp_path / "run.png"))
    saveLearningCurve(steps, rewards, 4, str(tmp_path / "curve.png"))
    for axes in (drawn[0].axes[0], drawn[1].axes[0]):
        raw, average = axes.get_lines()[:2]
        assert raw.get_linestyle() == "None" and raw.get_marker() == "."
        y = np.asarray(average.get_ydata())
        assert (y.reshape(5, 4) == y[3::4, None]).all()  # one value per step
        np.testing.assert_allclose(y[3::4], -3.25)  # the four episodes of each step


def test_a_run_of_one_episode_draws_its_point_and_says_one_episode(tmp_path, capsys) -> None:
    """A line through one point draws nothing: the lone episode is marked, and the summary is in the singular."""
    run = writeRun(str(tmp_path / "run"), [7.0], [100], [3.0],
                   args={"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "algo": "ppo2"})
    assert main(["-i", run]) == 0
    assert bluePixels(os.path.join(run, PNG_NAME)) > 40  # a marker in each panel
    assert "(1 episode, the last ending at step 100" in capsys.readouterr().out


def test_a_continued_runs_summary_says_whose_steps_each_count_is(tmp_path) -> None:
    """A run that continued a model (--load-rl-model-path) read "the last ending at step 500 of 2,176 trained": its
    episodes count from its own start, its model's saves (the manifest) from the continued model's."""
    args = {"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "algo": "ppo2", "num_timesteps": 600}
    episodes = {"rewards": np.array([1.0, 2.0]), "timesteps": np.array([250, 500]), "times": np.array([1.0, 2.0])}
    for continued, finished, expected in (
            (True, True, "2 episodes, the last ending at step 500 of this run, its model trained 2,176 steps with "
                         "those of the model it continued"),
            (True, False, "2 episodes, the last ending at step 500; unfinished, its latest model saved at step 2,176 "
                          "of its model (the model it continued included)"),
            (False, True, "2 episodes, the last ending at step 500 of 2,176 trained")):
        run = writeRun(str(tmp_path / f"{continued}{finished}"), [1.0, 2.0], [250, 250], [1.0, 2.0],
                       args={**args, "load_rl_model_path": "/elsewhere/ppo2_model.zip" if continued else None})
        with open(os.path.join(run, "manifest.json"), "w") as handle:
            json.dump({"num_timesteps": 2176, "finished": finished, "files": {}}, handle)
        assert plots.runSummary(run, episodes, None) == expected
    # without a manifest (done.json, an older run), the count is the run's own
    run = writeRun(str(tmp_path / "done"), [1.0, 2.0], [250, 250], [1.0, 2.0],
                   args={**args, "load_rl_model_path": "/elsewhere/ppo2_model.zip"})
    open(os.path.join(run, "done.json"), "w").write("{}\n")
    assert plots.runSummary(run, episodes, None) == "2 episodes, the last ending at step 500 of 600 trained"


def test_every_run_below_a_folder(tmp_path) -> None:
    root = tmp_path / "logs"
    first = writeRun(str(root / "MobileRobotGymEnv-v0" / "ground_truth" / "ppo2" / "seed0"), [1, 2, 3], [10] * 3,
                     [1, 2, 3], args={"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "algo": "ppo2"})
    os.makedirs(os.path.join(first, "checkpoints", "monitor"))  # a run's subfolders are not runs
    second = writeRun(str(root / "KukaButtonGymEnv-v0" / "raw_pixels" / "a2c" / "seed1"), [0, 1], [5, 5], [1, 2])
    empty = writeRun(str(root / "empty_run"), [], [], [])
    assert findRunFolders(str(root)) == sorted([first, second, empty])
    out = tmp_path / "out"
    result = runModule("replay.plots", "-i", root, "--output-dir", out)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(out)) == ["KukaButtonGymEnv-v0_raw_pixels_a2c_seed1.png",
                                       "MobileRobotGymEnv-v0_ground_truth_ppo2_seed0.png"]
    assert f"skipped {empty}: no finished episode yet" in result.stdout
    assert "\r" not in result.stderr and "run/s" not in result.stderr  # no bar in a pipe (its fragments were)
    assert not os.path.exists(os.path.join(first, PNG_NAME))  # --output-dir: the run folders are left alone


@pytest.mark.parametrize("make_input, message", [
    (lambda tmp: str(tmp / "missing"), "does not exist"),
    (lambda tmp: str(tmp), "no run found in or below"),
    (lambda tmp: writeRun(str(tmp / "run"), [], [], []), "no finished episode in the 1 run(s)"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, make_input, message) -> None:
    (tmp_path / "notes").mkdir()
    path = make_input(tmp_path)
    before = snapshot(str(tmp_path))
    result = runModule("replay.plots", "-i", path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr
    assert snapshot(str(tmp_path)) == before


def test_a_folder_inside_a_run_is_refused_naming_the_run(tmp_path) -> None:
    """-i RUN/monitor plotted monitor/ as a run of its own (one env's steps, no evaluations, the default window) and
    wrote learning_curves.png into it; as the other tools, plots refuses a folder inside a run and names the run.
    A folder of monitor files that no run holds is still a run."""
    run = writeRun(str(tmp_path / "run"), [1, 2, 3], [10] * 3, [1, 2, 3],
                   args={"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "algo": "ppo2"}, files=2)
    os.makedirs(os.path.join(run, "checkpoints", "512_steps"))
    before = snapshot(str(tmp_path))
    for below in ("monitor", "checkpoints/512_steps"):
        folder = os.path.join(run, *below.split("/"))
        result = runModule("replay.plots", "-i", folder)
        assert result.returncode == 2 and result.stderr == (f"error: -i {folder!r} is {below}/ inside the run {run}, "
                                                            f"not a run folder: give -i {run}\n")
    assert snapshot(str(tmp_path)) == before
    alone = writeRun(str(tmp_path / "monitor_files"), [1, 2], [10] * 2, [1, 2])
    assert main(["-i", os.path.join(alone, "monitor")]) == 0
    assert os.path.isfile(os.path.join(alone, "monitor", PNG_NAME))


def test_an_output_dir_named_like_an_image_is_refused(tmp_path) -> None:
    """--output-dir plots/a.png made a folder named a.png: it takes a folder, in which each run's PNG is named after
    the run (no flag names one file); a folder of that name that exists is taken."""
    run = writeRun(str(tmp_path / "run"), [1, 2, 3], [10] * 3, [1, 2, 3])
    before = snapshot(str(tmp_path))
    output = str(tmp_path / "plots" / "a.PNG")
    result = runModule("replay.plots", "-i", run, "--output-dir", output)
    assert result.returncode == 2 and result.stderr == (
        f"error: --output-dir {output!r} takes a folder, not a file name: each run's PNG is named in it after the "
        f"run's path below -i (without --output-dir, {PNG_NAME} in the run folder)\n")
    assert snapshot(str(tmp_path)) == before
    os.makedirs(output)
    assert main(["-i", run, "--output-dir", output]) == 0 and os.listdir(output) == ["run.png"]


def test_wall_time_counts_from_the_first_env_start(tmp_path) -> None:
    """Each monitor file's t counts from its own env's start (its header's t_start): with 2 envs started 0.73 s apart,
    the merged episodes' wall times went back and forth (7.67, 6.94, 13.0, 12.28) in the plots and gather_results."""
    folder = tmp_path / "monitor"
    folder.mkdir()
    for rank, (start, times) in enumerate(((1000.0, (7.67, 13.0, 18.2)), (1000.73, (6.94, 12.28, 17.5)))):
        rows = "".join(f"1,100,{t}\n" for t in times)
        (folder / f"{rank}.monitor.csv").write_text(f'#{{"t_start": {start}, "env_id": "E"}}\nr,l,t\n{rows}')
    episodes = loadEpisodes(str(folder))
    np.testing.assert_allclose(episodes["times"], [7.67, 7.67, 13.0, 13.01, 18.2, 18.23])
    assert np.all(np.diff(episodes["times"]) >= 0)


def test_time_axis_unit() -> None:
    assert _timeUnit(np.array([30.0])) == (1.0, "seconds")
    assert _timeUnit(np.array([600.0])) == (60.0, "minutes")
    assert _timeUnit(np.array([5 * 3600.0])) == (3600.0, "hours")


def test_unreachable_visdom_costs_one_warning(tmp_path) -> None:
    run = writeRun(str(tmp_path / "run"), [1.0, 2.0], [10, 10], [1.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        port = findFreePort()
        assert main(["-i", run, "--vis", "--port", str(port)]) == 0
    (warning,) = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    # worded as train's and enjoy's plotters word it
    assert warning.startswith(f"The visdom server at http://127.0.0.1:{port} cannot be reached ("), warning
    assert os.path.isfile(os.path.join(run, PNG_NAME))


def test_visdom_flags_without_vis_are_one_warning(tmp_path) -> None:
    run = writeRun(str(tmp_path / "run"), [1.0, 2.0], [10, 10], [1.0, 2.0])
    with pytest.warns(UserWarning, match="without --vis nothing is drawn in visdom"):  # they did nothing, silently
        assert main(["-i", run, "--vis-env", "mine", "--port", "5"]) == 0
    assert os.path.isfile(os.path.join(run, PNG_NAME))


def test_no_vis_is_accepted_and_draws_nothing_in_visdom(tmp_path, monkeypatch) -> None:
    """``--no-vis`` (train's flag, typed from habit) was an unrecognized argument: it keeps the default, PNGs only;
    with ``--vis`` it is a usage error."""
    run = writeRun(str(tmp_path / "run"), [1.0, 2.0], [10, 10], [1.0, 2.0])
    monkeypatch.setattr(plots, "VisdomRunPlots", lambda *args, **kwargs: pytest.fail("visdom used with --no-vis"))
    assert main(["-i", run, "--no-vis"]) == 0
    assert os.path.isfile(os.path.join(run, PNG_NAME))
    with pytest.raises(UsageError, match="--vis: not allowed with argument --no-vis"):
        main(["-i", run, "--no-vis", "--vis"])


def test_a_refusal_prints_its_error_alone(tmp_path) -> None:
    """--port without --vis (a warning: it does nothing) with an input that is refused: the one-line error alone,
    which names the runs skipped for a damaged monitor file (their warnings are not shown); accepted, the warning is
    shown once."""
    idle = ["--port", "9000", "--output-dir", tmp_path / "plots"]
    result = runModule("replay.plots", "-i", tmp_path / "none", *idle)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: -i "), result.stderr
    damaged = writeRun(str(tmp_path / "damaged"), [1.0, 2.0], [10, 10], [1.0, 2.0])
    with open(os.path.join(damaged, "monitor", "0.monitor.csv"), "a") as handle:
        handle.write("oops,10,3.0\n4.0,10,4.0\n")
    result = runModule("replay.plots", "-i", damaged, *idle)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "1 of them skipped for a damaged monitor file" in result.stderr and "line 5" in result.stderr
    run = writeRun(str(tmp_path / "run"), [1.0, 2.0], [10, 10], [1.0, 2.0])
    result = runModule("replay.plots", "-i", run, *idle)
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("warning: ")] == [
        "warning: --port and --vis-env choose where --vis draws; without --vis nothing is drawn in visdom"]
    assert os.listdir(tmp_path / "plots") == ["run.png"]


def test_curves_reach_visdom(tmp_path, visdom_port) -> None:
    port = visdom_port
    rewards = [1.0, 5.0, 3.0, 7.0]
    run = writeRun(str(tmp_path / "run"), rewards, [10, 20, 10, 20], [1.0, 2.0, 3.0, 4.0])
    plots = VisdomRunPlots(port, "plots_test")
    plots.send("my/run", loadEpisodes(os.path.join(run, "monitor")), 2, "title")
    assert plots.enabled
    client = visdom.Visdom(port=port, use_incoming_socket=False, raise_exceptions=True)
    for window, x in (("my_run_steps", [10, 30, 40, 60]), ("my_run_time", [1, 2, 3, 4])):
        data = json.loads(client.get_window_data(window, "plots_test"))["content"]["data"]
        assert data[0]["y"] == rewards and data[1]["y"] == [1.0, 3.0, 4.0, 5.0]  # raw, then window-2 average
        assert data[0]["x"] == x


def test_runs_of_the_same_folder_name_keep_their_own_visdom_windows(tmp_path, monkeypatch, visdom_port) -> None:
    """The window ids came from the run's path below the parent of -i, with ``/`` and other characters made ``_``:
    ``-i logs/a/ppo2/run`` then ``-i logs/b/ppo2/run`` drew into the same windows (``run_steps``), as did ``a/b/run``
    and ``a_b/run`` in one call, and every title read ``(run)``. Each run now has windows of its own, titled with
    its path."""
    port = visdom_port
    monkeypatch.chdir(tmp_path)
    args = {"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "algo": "ppo2"}
    runs = {path: [float(n), float(n) + 1.0] for n, path in
            enumerate(("logs/a/ppo2/run", "logs/b/ppo2/run", "other/a/b/run", "other/a_b/run"))}
    for path, rewards in runs.items():
        writeRun(path, rewards, [10, 10], [1.0, 2.0], args=args)
    for given in ("logs/a/ppo2/run", "logs/b/ppo2/run", "other"):
        assert main(["-i", given, "--vis", "--port", str(port), "--vis-env", "same_names",
                     "--output-dir", str(tmp_path / "png" / given.replace("/", "_"))]) == 0
    client = visdom.Visdom(port=port, use_incoming_socket=False, raise_exceptions=True)
    windows = json.loads(client.get_window_data(env="same_names"))
    assert len(windows) == 2 * len(runs), sorted(windows)
    drawn = {window["title"]: window["content"]["data"][0]["y"] for window in windows.values()}
    assert drawn == {f"MobileRobotGymEnv-v0 ground_truth ppo2 ({os.path.normpath(path)})": rewards
                     for path, rewards in runs.items()}
    # drawing a run again replaces its own windows
    assert main(["-i", "logs/a/ppo2/run", "--vis", "--port", str(port), "--vis-env", "same_names",
                 "--output-dir", str(tmp_path / "png" / "again")]) == 0
    assert len(json.loads(client.get_window_data(env="same_names"))) == 2 * len(runs)


def test_runs_whose_paths_read_alike_get_png_names_of_their_own(tmp_path) -> None:
    """--output-dir names a run's PNG after its path below -i with ``/`` made ``_``: ``a/b/run`` and ``a_b/run`` both
    wrote ``a_b_run.png``, the second replacing the first, and nothing said so. Each of them now gets a digest of its
    path appended; a name no other run shares is unchanged."""
    root = tmp_path / "logs"
    rewards = {"a/b/run": [1.0, 2.0], "a_b/run": [5.0, 6.0], "c/run": [3.0, 4.0]}
    for path, values in rewards.items():
        writeRun(str(root / path), values, [10, 10], [1.0, 2.0])
    writeRun(str(root / "a_b_run_evaluation" / "run"), [], [], [])  # no episode: skipped, its name clashes with none
    expected = {f"a_b_run_{hashlib.sha1(path.encode()).hexdigest()[:8]}.png": path for path in ("a/b/run", "a_b/run")}
    expected["c_run.png"] = "c/run"
    for attempt in range(2):  # the same names from call to call
        out = tmp_path / f"out{attempt}"
        assert main(["-i", str(root), "--output-dir", str(out)]) == 0
        assert sorted(os.listdir(out)) == sorted(expected)
    assert len({(out / name).read_bytes() for name in expected}) == 3  # three runs drawn, none over another
    assert main(["-i", str(root / "a" / "b" / "run"), "--output-dir", str(tmp_path / "one")]) == 0
    assert os.listdir(tmp_path / "one") == ["run.png"]


def test_distinct_stems_never_give_two_things_one_name() -> None:
    """The suffix that tells clashing names apart can itself clash (a folder named after another's suffixed name): the
    clashing names then get the whole digest, and a name still shared after that is refused, never written twice."""
    def digest(text: str, digits: int) -> str:
        return hashlib.sha1(text.encode()).hexdigest()[:digits]

    assert distinctStems({"a/b": "a_b", "c": "c"}) == {"a/b": "a_b", "c": "c"}
    assert distinctStems({"a/b": "a_b", "a_b": "a_b", "x": f"a_b_{digest('a/b', 8)}"}) == {
        "a/b": f"a_b_{digest('a/b', 40)}", "a_b": f"a_b_{digest('a_b', 8)}",
        "x": f"a_b_{digest('a/b', 8)}_{digest('x', 40)}"}
    # a thing's files are its stem and each of ``ends``: "E_evaluation"'s first file is E's second
    assert distinctStems({"E": "E", "E_evaluation": "E_evaluation"}, ends=("", "_evaluation")) == {
        "E": f"E_{digest('E', 8)}", "E_evaluation": f"E_evaluation_{digest('E_evaluation', 8)}"}
    with pytest.raises(UsageError, match="would write files of the same name"):
        distinctStems({"a": "n", "b": "n", "c": f"n_{digest('a', 40)}", "d": f"n_{digest('a', 8)}"})


def test_a_png_is_titled_with_its_runs_path_as_its_visdom_windows_are(tmp_path, monkeypatch) -> None:
    """The visdom windows were titled with the run's path as given (``(logs/a/ppo2/run)``), the PNGs with its folder
    name alone (``(run)``), the same for every run of that name. Both now have the same title; ``-i .`` names the run
    by its absolute path, and a long title is broken into lines the figure shows whole."""
    titles: dict[str, list[str]] = {"png": [], "visdom": []}
    drawPng = plots.plotRun
    monkeypatch.setattr(plots, "plotRun", lambda *args, title, **kwargs: titles["png"].append(title)
                        or drawPng(*args, title=title, **kwargs))
    monkeypatch.setattr(VisdomRunPlots, "send", lambda self, run_id, episodes, window, title, evaluations=None:
                        titles["visdom"].append(title))
    monkeypatch.chdir(tmp_path)
    args = {"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "algo": "ppo2"}
    for path in ("logs/a/ppo2/run", "logs/b/ppo2/run"):
        writeRun(path, [1.0, 2.0], [10, 10], [1.0, 2.0], args=args)
    assert main(["-i", "logs", "--vis", "--output-dir", "png"]) == 0
    monkeypatch.chdir(tmp_path / "logs" / "a" / "ppo2" / "run")
    assert main(["-i", ".", "--vis"]) == 0
    expected = [f"MobileRobotGymEnv-v0 ground_truth ppo2 ({path})"
                for path in ("logs/a/ppo2/run", "logs/b/ppo2/run", os.getcwd())]
    assert titles == {"png": expected, "visdom": expected}
    long_title = f"MobileRobotGymEnv-v0 ground_truth ppo2 (/{'folder/' * 30}run)"
    lines = plots._titleLines(long_title).split("\n")
    assert len(lines) > 1 and all(len(line) <= plots.TITLE_WIDTH for line in lines)
    assert "".join(lines).replace(" ", "") == long_title.replace(" ", "")


def test_names_that_differ_only_in_case_clash(tmp_path) -> None:
    """distinctStems compared names with their case, so ``A/run`` and ``a/run`` kept ``A_run.png`` and ``a_run.png``:
    one file on a case-insensitive file system (macOS's, Windows' default), the second run's PNG over the first's. The
    clash is now found without case, and the names keep theirs."""
    def digest(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()[:8]

    assert distinctStems({"A/run": "A_run", "a/run": "a_run", "b": "b"}) == {
        "A/run": f"A_run_{digest('A/run')}", "a/run": f"a_run_{digest('a/run')}", "b": "b"}
    assert distinctStems({"E": "E", "e_Evaluation": "e_Evaluation"}, ends=("", "_evaluation")) == {
        "E": f"E_{digest('E')}", "e_Evaluation": f"e_Evaluation_{digest('e_Evaluation')}"}
    root, out = tmp_path / "logs", tmp_path / "out"
    for path in ("A/run", "a/run", "c/run"):
        writeRun(str(root / path), [1.0, 2.0], [10, 10], [1.0, 2.0])
    assert main(["-i", str(root), "--output-dir", str(out)]) == 0
    assert sorted(os.listdir(out)) == sorted([f"A_run_{digest('A/run')}.png", f"a_run_{digest('a/run')}.png",
                                              "c_run.png"])


def test_the_line_of_a_png_named_with_a_digest_names_its_run(tmp_path, capsys) -> None:
    """The line printed for each PNG was ``<png>  (<episodes>)``: for ``a_b_run_<digest>.png`` nothing said which of
    ``a/b/run`` and ``a_b/run`` it was. Such a line now names its run; a PNG named plainly prints as before."""
    def digest(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()[:8]

    root, out = tmp_path / "logs", tmp_path / "out"
    for path in ("a/b/run", "a_b/run", "c/run"):
        writeRun(str(root / path), [1.0, 2.0], [10, 10], [1.0, 2.0])
    capsys.readouterr()
    assert main(["-i", str(root), "--output-dir", str(out)]) == 0
    lines = dict(line.split("  (", 1) for line in capsys.readouterr().out.splitlines())
    for path in ("a/b/run", "a_b/run"):
        name = str(out / f"a_b_run_{digest(path)}.png")
        assert lines[name].startswith(f"{os.path.normpath(root / path)}: 2 episodes"), lines
    assert lines[str(out / "c_run.png")].startswith("2 episodes"), lines  # its name says which run it is


def test_the_line_of_an_unfinished_run_says_so_rather_than_a_step_past_what_it_trained(tmp_path, capsys) -> None:
    """A run still training read "the last ending at step 1,252 of 1,200 trained": its manifest's steps are those of
    its latest save, not what it trained, and episodes go on past them."""
    args = {"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "algo": "ppo2", "num_timesteps": 5000}
    run = writeRun(str(tmp_path / "run"), [1.0, 2.0, 3.0], [400, 400, 452], [1.0, 2.0, 3.0], args=args)
    with open(os.path.join(run, "manifest.json"), "w") as handle:
        json.dump({"files": {}, "num_timesteps": 1200, "finished": False}, handle)
    assert main(["-i", run]) == 0
    out = capsys.readouterr().out
    assert "(3 episodes, the last ending at step 1,252; unfinished, its latest model saved at step 1,200)" in out, out
    os.remove(os.path.join(run, "manifest.json"))
    assert main(["-i", run]) == 0
    out = capsys.readouterr().out
    assert "(3 episodes, the last ending at step 1,252; unfinished, no model saved yet)" in out, out
    # a sweep run that failed says so (a run its sweep's Ctrl-C stopped reads as unfinished, which it is)
    with open(os.path.join(run, "failed.json"), "w") as handle:
        json.dump({"state": "failed", "message": "error: ValueError: boom", "stopped": False}, handle)
    assert main(["-i", run]) == 0
    out = capsys.readouterr().out
    assert "(3 episodes, the last ending at step 1,252; failed in its sweep (error: ValueError: boom))" in out, out
    with open(os.path.join(run, "failed.json"), "w") as handle:
        json.dump({"state": "failed", "message": "stopped by SIGINT", "stopped": True}, handle)
    assert main(["-i", run]) == 0
    assert "; unfinished, no model saved yet)" in capsys.readouterr().out


def test_an_evaluation_of_one_episode_is_said_in_the_singular(tmp_path, monkeypatch) -> None:
    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: drawn.append(figure))
    episodes = {"timesteps": np.array([100, 200]), "rewards": np.array([1.0, 2.0]), "times": np.array([1.0, 2.0])}
    for count, words in ((1, "1 deterministic episode)"), (3, "3 deterministic episodes)")):
        plotRun(episodes, 5, str(tmp_path / "run.png"),
                evaluations={"timesteps": np.array([100, 200]), "results": np.ones((2, count))})
        assert drawn[-1].legends[0].get_texts()[-1].get_text() == f"evaluation mean ± std ({words}"
