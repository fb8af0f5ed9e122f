"""The offline visdom server command, the live plotter and the PNG learning curve."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
import warnings

import numpy as np
import pytest
import visdom
from conftest import VISDOM_START_TIMEOUT_S, sigintIgnoringProcess, startTestServer, stopServer
from matplotlib.figure import Figure
from PIL import Image

from replay.visdom_server import findFreePort, waitForServer
from srl_toolbox.cli import pythonCommand
from srl_toolbox.plots import (
    VisdomPlotter,
    describe,
    movingAverage,
    quietVisdom,
    saveLearningCurve,
    subsample,
    visdomClientClass,
)

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _client(port: int):
    with quietVisdom():
        return visdom.Visdom(server="http://127.0.0.1", port=port, use_incoming_socket=False, raise_exceptions=True)


def _traces(port: int, win: str, env: str) -> dict[str, dict]:
    """The traces of a window on the server, by legend name."""
    window = json.loads(_client(port).get_window_data(win, env))
    return {trace["name"]: trace for trace in window["content"]["data"]}


def _userWarnings(records: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [r for r in records if issubclass(r.category, UserWarning)]


def test_moving_average_by_hand() -> None:
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_allclose(movingAverage(values, 3), [1.0, 1.5, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(movingAverage(values, 1), values)
    np.testing.assert_allclose(movingAverage(values, 10), [1.0, 1.5, 2.0, 2.5, 3.0])
    np.testing.assert_allclose(movingAverage([2, -4, 6, 0], 2), [2.0, -1.0, 1.0, 3.0])
    assert movingAverage(np.array([]), 5).shape == (0,)
    with pytest.raises(ValueError):
        movingAverage(values, 0)


def test_window_ids_come_from_env_name() -> None:
    plotter = VisdomPlotter(env_name="MobileRobotGymEnv-v0_ground truth/ppo2")
    assert plotter.windows == {"reward": "MobileRobotGymEnv-v0_ground_truth_ppo2_reward",
                               "episodes": "MobileRobotGymEnv-v0_ground_truth_ppo2_episodes",
                               "evaluation": "MobileRobotGymEnv-v0_ground_truth_ppo2_evaluation"}


def test_update_sends_raw_and_smoothed_curves(visdom_port: int) -> None:
    env = "test_update_sends"
    plotter = VisdomPlotter(port=visdom_port, env_name=env, title="Mobile robot", legend="ppo2", episode_window=3)
    timesteps = np.array([12, 30, 41, 77, 100, 160])
    rewards = np.array([0.0, 1.0, -2.5, 4.0, 3.0, 10.0])
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        plotter.update(timesteps, rewards)
    assert _userWarnings(records) == []
    assert plotter.enabled

    smoothed = movingAverage(rewards, 3)
    traces = _traces(visdom_port, plotter.windows["reward"], env)
    assert set(traces) == {"ppo2 raw", "ppo2 smoothed"}
    np.testing.assert_allclose(traces["ppo2 raw"]["x"], timesteps)
    np.testing.assert_allclose(traces["ppo2 raw"]["y"], rewards)
    np.testing.assert_allclose(traces["ppo2 smoothed"]["x"], timesteps)
    np.testing.assert_allclose(traces["ppo2 smoothed"]["y"], smoothed)

    episodes = _traces(visdom_port, plotter.windows["episodes"], env)
    assert list(episodes) == ["ppo2 smoothed"]
    # episodes counted from 1, as the PNG legends count them ("fewer before episode 3": the third is the first full)
    np.testing.assert_allclose(episodes["ppo2 smoothed"]["x"], np.arange(1, len(rewards) + 1))
    np.testing.assert_allclose(episodes["ppo2 smoothed"]["y"], smoothed)

    # A later update replaces the whole data
    timesteps2, rewards2 = np.append(timesteps, 200), np.append(rewards, 7.0)
    plotter.update(timesteps2, rewards2)
    traces = _traces(visdom_port, plotter.windows["reward"], env)
    np.testing.assert_allclose(traces["ppo2 raw"]["x"], timesteps2)
    np.testing.assert_allclose(traces["ppo2 smoothed"]["y"], movingAverage(rewards2, 3))


def test_update_evaluation_sends_means_and_spread(visdom_port: int) -> None:
    env = "test_update_evaluation"
    plotter = VisdomPlotter(port=visdom_port, env_name=env, legend="ppo2")
    timesteps, means, stds = np.array([200, 400, 600]), np.array([-200.0, -150.0, -90.0]), np.array([5.0, 0.0, 2.0])
    plotter.updateEvaluation(timesteps, means, stds)
    assert plotter.enabled
    traces = _traces(visdom_port, plotter.windows["evaluation"], env)
    assert set(traces) == {"ppo2 evaluation mean", "mean - std", "mean + std"}
    np.testing.assert_allclose(traces["ppo2 evaluation mean"]["x"], timesteps)
    np.testing.assert_allclose(traces["ppo2 evaluation mean"]["y"], means)
    np.testing.assert_allclose(traces["mean + std"]["y"], means + stds)


def test_a_resumed_run_appends_to_its_scalar_windows(visdom_port: int) -> None:
    # the resumed process's first batch replaced the window: every point from before the checkpoint was lost
    env = "test_scalars_resumed"
    # The stopped process logged loss at 3000 and 4000 after its checkpoint (at 2500): the resumed process logs
    # them again, and they must not be there twice.
    VisdomPlotter(port=visdom_port, env_name=env).scalars({"train/loss": [(1000, 0.5), (2000, 0.25), (3000, 0.2),
                                                                          (4000, 0.1)],
                                                           "train/rate": [(1000, 1.0)]})
    resumed = VisdomPlotter(port=visdom_port, env_name=env)
    resumed.scalars({"train/loss": [(3000, 0.125)], "train/rate": [(3000, 0.5)]})
    resumed.scalars({"train/loss": [(4000, 0.0625)], "other/value": [(4000, 2.0)]})
    assert resumed.enabled
    traces = _traces(visdom_port, f"{env}_scalars_train", env)
    np.testing.assert_allclose(traces["train/loss"]["x"], [1000, 2000, 3000, 4000])
    np.testing.assert_allclose(traces["train/loss"]["y"], [0.5, 0.25, 0.125, 0.0625])
    np.testing.assert_allclose(traces["train/rate"]["x"], [1000, 3000])
    np.testing.assert_allclose(traces["train/rate"]["y"], [1.0, 0.5])
    np.testing.assert_allclose(_traces(visdom_port, f"{env}_scalars_other", env)["other/value"]["x"], [4000])


def test_a_new_run_does_not_draw_into_another_runs_env(visdom_port: int) -> None:
    # two new runs of one env name (the same run folder name in two log folders) drew into the same windows: each
    # update replaced the other run's curve
    env = "test_own_env"
    first = VisdomPlotter(port=visdom_port, env_name=env, legend="first", own_env=True)
    first.update([250, 500], [1.0, 2.0])
    second = VisdomPlotter(port=visdom_port, env_name=env, legend="second", own_env=True)
    second.update([250], [-5.0])
    third = VisdomPlotter(port=visdom_port, env_name=env, legend="third", own_env=True)
    third.scalars({"train/loss": [(100, 0.5)]})  # a first draw that is not the reward curve
    assert (first.env_name, second.env_name, third.env_name) == (env, f"{env}_2", f"{env}_3")
    assert second.page_url.endswith(f"/env/{env}_2") and second.windows["reward"] == f"{env}_2_reward"
    np.testing.assert_allclose(_traces(visdom_port, f"{env}_reward", env)["first raw"]["y"], [1.0, 2.0])
    np.testing.assert_allclose(_traces(visdom_port, f"{env}_2_reward", f"{env}_2")["second raw"]["y"], [-5.0])
    resumed = VisdomPlotter(port=visdom_port, env_name=env, legend="first")  # a resumed run: its own windows
    resumed.update([250, 500, 750], [1.0, 2.0, 3.0])
    assert resumed.env_name == env
    np.testing.assert_allclose(_traces(visdom_port, f"{env}_reward", env)["first raw"]["y"], [1.0, 2.0, 3.0])


def test_long_runs_are_subsampled(visdom_port: int) -> None:
    env = "test_subsampled"
    plotter = VisdomPlotter(port=visdom_port, env_name=env, episode_window=5, max_points=10)
    timesteps = np.arange(1, 101) * 50
    rewards = np.sin(np.arange(100.0))
    plotter.update(timesteps, rewards)
    traces = _traces(visdom_port, plotter.windows["reward"], env)
    raw, smoothed = traces["raw"], traces["smoothed"]
    assert 2 <= len(raw["x"]) <= 10
    assert raw["x"][0] == timesteps[0] and raw["x"][-1] == timesteps[-1]
    # Smoothing uses every episode, the subsampling only picks points of it
    index = np.searchsorted(timesteps, smoothed["x"])
    np.testing.assert_allclose(smoothed["y"], movingAverage(rewards, 5)[index])


def test_shared_helpers_subsample_and_describe() -> None:
    """The helpers every plotter (replay, sweeps, explore_latent) imports: evenly spread indices with both ends, and the
    innermost reason of a wrapped error."""
    assert subsample(5, 10).tolist() == [0, 1, 2, 3, 4] and subsample(101, 3).tolist() == [0, 50, 100]
    try:
        try:
            raise OSError("connection refused")
        except OSError as inner:
            raise ConnectionError("visdom failed") from inner
    except ConnectionError as error:
        assert "connection refused" in describe(error)


def test_zero_episodes_do_nothing() -> None:
    plotter = VisdomPlotter(port=findFreePort(), env_name="test_empty")
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        plotter.update(np.array([]), np.array([]))
    assert _userWarnings(records) == []
    assert plotter.enabled and plotter._viz is None


def test_unreachable_server_warns_once() -> None:
    port = findFreePort()  # nothing listens there
    plotter = VisdomPlotter(port=port, env_name="test_unreachable")
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        for n in range(1, 5):
            plotter.update(np.arange(1, n + 1) * 10, np.ones(n))
    user_warnings = _userWarnings(records)
    assert len(user_warnings) == 1
    message = str(user_warnings[0].message)
    assert f"127.0.0.1:{port}" in message
    assert f"python -m replay.visdom_server --port {port}" in message
    assert not plotter.enabled


def test_unreachable_server_warning_names_this_interpreter(monkeypatch) -> None:
    # `make demo` runs .venv/bin/python with no venv activated: a bare `python -m ...` would not find the toolbox
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)  # no `python` on PATH
    port = findFreePort()
    plotter = VisdomPlotter(port=port, env_name="test_unreachable_interpreter")
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        plotter.update(np.array([10]), np.ones(1))
    message = str(_userWarnings(records)[0].message)
    interpreter = pythonCommand()
    assert interpreter != "python"
    assert f"`{interpreter} -m replay.visdom_server --port {port}`" in message


def test_server_killed_midway_warns_once(tmp_path) -> None:
    process, port = startTestServer(str(tmp_path))
    try:
        plotter = VisdomPlotter(port=port, env_name="test_killed")
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            plotter.update([10, 20], [1.0, 2.0])
            assert _userWarnings(records) == []
            stopServer(process)
            for n in range(3, 6):
                plotter.update(np.arange(1, n + 1) * 10, np.ones(n))
        user_warnings = _userWarnings(records)
        assert len(user_warnings) == 1
        assert "stopped answering" in str(user_warnings[0].message)
        assert not plotter.enabled
    finally:
        stopServer(process)


def test_live_plots_line_comes_once_the_first_window_is_drawn(visdom_port: int, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """"Live plots: <url>" was printed when the server answered the connection, before anything was drawn (and even
    when the first draw then failed): it now comes after the first window is on the page, once."""
    client_class = visdomClientClass()
    draw = client_class.line
    printed_before_draws: list[str] = []

    def recordingLine(self, *args, **kwargs):
        printed_before_draws.append(capsys.readouterr().out)
        return draw(self, *args, **kwargs)

    monkeypatch.setattr(client_class, "line", recordingLine)
    plotter = VisdomPlotter(port=visdom_port, env_name="test_announce_drawn", announce=True)
    plotter.update([10, 20], [1.0, 2.0])
    plotter.update([10, 20, 30], [1.0, 2.0, 3.0])
    printed = "".join(printed_before_draws) + capsys.readouterr().out
    assert printed_before_draws and "Live plots" not in printed_before_draws[0], printed_before_draws
    assert printed.count("Live plots: ") == 1 and f"Live plots: {plotter.page_url}\n" in printed, printed

    def failingLine(self, *args, **kwargs):
        raise ConnectionError("refused")

    monkeypatch.setattr(client_class, "line", failingLine)  # the server answers the connection, not the drawing
    failing = VisdomPlotter(port=visdom_port, env_name="test_announce_failed", announce=True)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        failing.update([10], [1.0])
    assert "Live plots" not in capsys.readouterr().out  # no address of a page with nothing on it
    assert len(_userWarnings(records)) == 1 and not failing.enabled


BAR_SCRIPT = """
import sys, warnings
from tqdm import tqdm
from srl_toolbox.plots import VisdomPlotter
warnings.formatwarning = lambda message, *args, **kwargs: f"warning: {message}\\n"  # as srl_toolbox.cli's commands
bar = tqdm(total=100, unit="steps", mininterval=0)
bar.update(30)
VisdomPlotter(port=int(sys.argv[1]), env_name="test_bar", announce=True).update([10], [1.0])
VisdomPlotter(port=int(sys.argv[2]), env_name="test_bar_off").update([10], [1.0])
bar.update(30)
bar.close()
"""


def test_plotter_lines_go_above_the_progress_bar(visdom_port: int) -> None:
    """"Live plots: <url>" and the unreachable-server warning were written onto the training bar's line (the bar on
    stderr, both in one terminal); now each is a line of its own, the bar redrawn below it."""
    result = subprocess.run([sys.executable, "-c", BAR_SCRIPT, str(visdom_port), str(findFreePort())],
                            cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert result.returncode == 0, result.stdout
    # what a terminal shows on each line: the text after its last carriage return
    shown = [line.split("\r")[-1] for line in result.stdout.split("\n")]
    assert f"Live plots: http://127.0.0.1:{visdom_port}/env/test_bar" in shown, result.stdout
    assert any(line.startswith("warning: The visdom server at ") for line in shown), result.stdout
    assert "60/100" in [line for line in shown if line.strip()][-1], result.stdout  # the bar goes on below them


def _runServerCommand(*args: str, env_path: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "replay.visdom_server", *args, "--env-path", env_path],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)


def test_busy_port_is_one_line_error(tmp_path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = _runServerCommand("--port", str(port), env_path=str(tmp_path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert str(port) in lines[0] and "in use" in lines[0]


def test_a_server_started_ignoring_sigint_stops_on_one(tmp_path) -> None:
    """``srl-visdom &`` in a shell script starts it with SIGINT ignored, and ``kill -INT`` did nothing (only SIGTERM
    stopped it); it stops on either, its way to stop: exit 0."""
    port = findFreePort()
    with sigintIgnoringProcess([sys.executable, "-m", "replay.visdom_server", "--port", str(port), "--env-path",
                                str(tmp_path)], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True) as server:
        assert waitForServer(port, timeout=VISDOM_START_TIMEOUT_S, process=server)
        server.send_signal(signal.SIGINT)
        output, _ = server.communicate(timeout=30)
    assert server.returncode == 0 and output.rstrip().endswith("Visdom server stopped"), output


def test_bad_port_is_one_line_error(tmp_path) -> None:
    result = _runServerCommand("--port", "70000", env_path=str(tmp_path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "70000" in lines[0]


def test_save_learning_curve_writes_png(tmp_path) -> None:
    path = str(tmp_path / "curves" / "learning_curve.png")
    rewards = np.cumsum(np.random.default_rng(0).normal(size=200))
    timesteps = np.cumsum(np.full(200, 25))
    assert saveLearningCurve(timesteps, rewards, 40, path, title="test") == path
    # Writing again replaces the file
    assert saveLearningCurve(timesteps[:50], rewards[:50], 40, path, title="test") == path
    with open(path, "rb") as png:
        assert png.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(path) > 1000
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] > 100 and image.size[1] > 100
    assert os.listdir(tmp_path / "curves") == ["learning_curve.png"]  # no temporary file left


def test_visdom_own_server_command_serves_a_working_page_offline(tmp_path) -> None:
    """``python -m visdom.server`` (what the old toolbox's guide starts): the page, its stylesheets (the user one,
    linked as ``/static/../user/style.css``, is what tornado >= 6.6 refuses with a 403) and its scripts all answer
    from this machine, with nothing fetched from the internet."""
    log_path = tmp_path / "server.log"
    with open(log_path, "w", encoding="utf-8") as log:
        for _ in range(3):
            port = findFreePort()
            process = subprocess.Popen([sys.executable, "-m", "visdom.server", "-port", str(port), "-bind_local",
                                        "-env_path", str(tmp_path / "envs"), "-logging_level", "WARNING"],
                                       cwd=str(tmp_path), stdout=log, stderr=subprocess.STDOUT)
            if waitForServer(port, timeout=VISDOM_START_TIMEOUT_S, process=process):
                break
            stopServer(process)
        else:
            pytest.fail(f"python -m visdom.server did not start:\n{log_path.read_text()}")
    try:
        base = f"http://127.0.0.1:{port}/"
        with urllib.request.urlopen(base, timeout=30) as response:
            assert response.status == 200
            page = response.read().decode("utf-8")
        links = re.findall(r'(?:href|src)=["\']?([^"\'\s>]+\.(?:css|js)(?:\?[^"\'\s>]*)?)', page)
        assert any("user/style.css" in link for link in links), links
        assert any(link.endswith(".js") or ".js?" in link for link in links), links
        for link in links:
            url = urllib.parse.urljoin(base, link)  # resolves /static/../user/style.css as a browser does
            assert url.startswith(base), f"the page loads {link} from another machine"
            with urllib.request.urlopen(url, timeout=30) as response:
                assert response.status == 200, url
    finally:
        stopServer(process)


def test_the_learning_curve_of_one_episode_marks_it(tmp_path, monkeypatch) -> None:
    """train's learning_curve.png of a run that finished one episode (a short run, long episodes) was empty: a line
    through one point draws nothing (replay.plots marks such an episode)."""
    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: drawn.append(figure))
    saveLearningCurve([1000], [5.0], 40, str(tmp_path / "one.png"))
    saveLearningCurve([1000, 2000], [5.0, 3.0], 40, str(tmp_path / "two.png"))
    one, two = ([line.get_marker() for line in figure.axes[0].get_lines()] for figure in drawn)
    assert one == [".", "o"] and two == [".", "None"], (one, two)  # (the episodes are points: the average's marked)


def test_the_learning_curve_legend_is_below_the_axes(tmp_path, monkeypatch) -> None:
    """The legend was inside the axes where matplotlib found room ("best"): over a run whose raw rewards dip
    mid-plot, it hid the dips."""
    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: drawn.append(figure))
    rewards = np.where(np.arange(70) % 15 == 7, -1.0, 5.0)
    saveLearningCurve(np.arange(1, 71) * 40, rewards, 40, str(tmp_path / "c.png"), title="t")
    figure = drawn[0]
    figure.canvas.draw()
    (legend,) = figure.legends
    assert figure.axes[0].get_legend() is None
    assert legend.get_window_extent().y1 < figure.axes[0].get_tightbbox().y0  # under the axes and their labels
