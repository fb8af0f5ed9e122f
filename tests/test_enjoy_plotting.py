"""replay.enjoy_baselines --plotting (action probabilities and ground-truth trajectory, PNG and live visdom), the
video caption, --render without a display, and rl_baselines.runs.run_policy replaying her and learned-SRL runs."""
from __future__ import annotations

import argparse
import ctypes.util
import json
import os
import shutil
import sys

import cv2
import numpy as np
import pytest
import visdom
from conftest import runModule, trainHere
from PIL import Image

from environments import getEnvClass, srl_env
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from replay import enjoy_baselines, replay_plots
from replay.visdom_server import findFreePort
from rl_baselines.core.registry import registered_rl
from rl_baselines.runs.run_policy import RunPolicy, loadRunPolicy, readRunArgs, recordedSRLModelFolder
from srl_models.models import RandomModel
from srl_toolbox.cli import UsageError

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

ENV_ID = "MobileRobotGymEnv-v0"
SMALL = (3, 32, 32)
UNANSWERED_DISPLAY = ":9071"  # an X display no server answers on


def _pixels(path: str) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"), dtype=np.float64)


def _assertNotBlank(path: str) -> None:
    pixels = _pixels(path)
    assert pixels.shape[0] > 200 and pixels.shape[1] > 200, path
    assert pixels.std() > 10, f"{path} looks blank (pixel std {pixels.std():.1f})"
    # more than the white background and black text: the plot's colours are there
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, path


@pytest.fixture
def capturedTraces(monkeypatch: pytest.MonkeyPatch) -> list:
    """The ReplayTrace each PNG is drawn from (the real functions still write the files)."""
    traces = []

    def keep(original):
        def wrapper(trace, path, title=""):
            traces.append(trace)
            return original(trace, path, title)
        return wrapper

    monkeypatch.setattr(replay_plots, "saveTrajectoryPlot", keep(replay_plots.saveTrajectoryPlot))
    monkeypatch.setattr(replay_plots, "saveActionProbaPlot", keep(replay_plots.saveActionProbaPlot))
    return traces


def test_plotting_writes_both_pngs_from_the_env_ground_truth(tmp_path, trainedRun, capturedTraces, capsys):
    steps, seed = 120, 5
    assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", str(steps), "--plotting", "--no-vis",
                                 "--output-dir", str(tmp_path / "plots"), "--seed", str(seed)]) == 0
    output = capsys.readouterr().out
    proba_png, trajectory_png = tmp_path / "plots" / "action_proba.png", tmp_path / "plots" / "trajectory.png"
    assert f"Plot: {proba_png}" in output and f"Plot: {trajectory_png}" in output
    for path in (proba_png, trajectory_png):
        _assertNotBlank(str(path))
    assert not os.path.exists(os.path.join(trainedRun, "replay")), "--output-dir was not used"

    trace = capturedTraces[0]
    # ground truth (the agent observes it relative to the target, normalised): absolute 2D positions of the robot
    points = trace.points()
    assert points.shape == (steps, 2) and trace.gt_dim_shown == 2
    env = MobileRobotGymEnv(srl_model="ground_truth")
    try:
        env.reset(seed=seed)  # env 0 of the replay VecEnv is seeded with --seed
        np.testing.assert_allclose(points[0], env.getGroundTruth(), atol=1e-6)
        np.testing.assert_allclose(trace.targetPoints(), [env.getTargetPos()], atol=1e-6)
    finally:
        env.close()
    assert np.abs(np.diff(points, axis=0)).max() > 0, "the robot never moved"
    # discrete ppo2: one probability per action and step, summing to one
    probas = np.asarray(trace.probas)
    assert probas.shape == (steps, 4)
    np.testing.assert_allclose(probas.sum(axis=1), 1.0, rtol=1e-5)
    assert len(trace.rewards) == steps
    # the env's unit and action names reach the figures
    assert trace.unit == "m" and trace.actionLabels(4) == ["0: -x", "1: +x", "2: -y", "3: +y"]
    # same --seed, same replay (actions sampled, not --deterministic)
    assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", str(steps), "--plotting", "--no-vis",
                                 "--output-dir", str(tmp_path / "again"), "--seed", str(seed)]) == 0
    np.testing.assert_array_equal(capturedTraces[-1].points(), points)
    np.testing.assert_array_equal(capturedTraces[-1].actions, trace.actions)


def test_plotting_default_folder_and_3d_and_continuous_figures(tmp_path, trainedRun):
    assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "3", "--plotting", "--no-vis"]) == 0
    assert sorted(os.listdir(os.path.join(trainedRun, "replay"))) == ["action_proba.png", "trajectory.png"]
    # a 3D env's trajectory and a continuous agent's mean actions, drawn from a synthetic trace
    rng = np.random.default_rng(0)
    trace = replay_plots.ReplayTrace(discrete=False, plot_type="3D")
    for step in range(60):
        trace.states.append(rng.normal(size=3))
        trace.targets.append(np.array([0.5, 0.0, 0.1]))
        trace.probas.append(np.tanh(rng.normal(size=2)))
        trace.actions.append(np.clip(trace.probas[-1] + rng.normal(scale=0.3, size=2), -1, 1))
        trace.rewards.append(float(step % 7 == 0))
        trace.episodes.append(step // 30)
    assert trace.points().shape == (60, 3) and trace.targetPoints().shape == (1, 3)
    _assertNotBlank(replay_plots.saveTrajectoryPlot(trace, str(tmp_path / "t3d.png")))
    _assertNotBlank(replay_plots.saveActionProbaPlot(trace, str(tmp_path / "continuous.png")))
    # a 1-D ground truth is drawn against the step
    trace.states = [state[:1] for state in trace.states]
    assert trace.gt_dim_shown == 1 and trace.points().shape == (60, 2)
    np.testing.assert_array_equal(trace.points()[:, 0], np.arange(60))


def _syntheticTrace(dim: int, discrete: bool = True, steps: int = 60, **kwargs) -> replay_plots.ReplayTrace:
    """A replay of ``steps`` steps in two episodes, the target moved at the second; 4 actions (2 continuous)."""
    rng = np.random.default_rng(0)
    trace = replay_plots.ReplayTrace(discrete, "3D" if dim == 3 else "2D", **kwargs)
    for step in range(steps):
        trace.states.append(rng.normal(size=dim))
        trace.targets.append(np.full(dim, 3.6 if step < steps // 2 else 1.2))
        probas = rng.random(4) if discrete else np.tanh(rng.normal(size=2))
        trace.probas.append(probas / probas.sum() if discrete else probas)
        trace.actions.append(np.array([step % 4]) if discrete else probas + rng.normal(scale=0.3, size=2))
        trace.rewards.append(float(step % 7 == 0))
        trace.episodes.append(step // (steps // 2))
    return trace


def test_a_1d_trajectory_shows_its_target():
    """MobileRobot1D's trajectory.png had no target (targetPoints gave none in 1-D), which the README promised."""
    trace = _syntheticTrace(1)
    figure = replay_plots.trajectoryFigure(trace, "ppo2 MobileRobot1DGymEnv-v0 ground_truth")
    axes = figure.axes[0]
    targets = [line for line in axes.get_lines() if line.get_label() == "target"]
    assert len(targets) == 1 and targets[0].get_linestyle() == "--"
    np.testing.assert_array_equal(targets[0].get_xdata(), np.arange(30))
    np.testing.assert_array_equal(targets[0].get_ydata(), np.full(30, 3.6))
    # the second episode's target, unlabelled (one legend entry), where it moved to
    second = [line for line in axes.get_lines() if np.array_equal(line.get_xdata(), np.arange(30, 60))
              and line.get_color() == targets[0].get_color()]
    assert len(second) == 1 and np.all(second[0].get_ydata() == 1.2)
    assert [text.get_text() for text in axes.get_legend().get_texts()] == ["target"]
    # the second episode's start: a dashed line across the plot (the target's one-step gap did not show it)
    assert [line.get_xdata()[0] for line in axes.get_lines() if line.get_color() == "black"] == [30]
    assert axes.get_xlabel() == "Step (first env; dashed: new episode)"
    # live: the target as points (step, target x)
    scattered = {}

    class Viz:
        def scatter(self, X, Y, **kwargs):
            scattered.update(X=X, Y=Y, **kwargs)

    live = replay_plots.ReplayVisdom(8097, "test")
    live._viz = Viz()
    live._drawTrajectory(trace, np.arange(60))
    assert scattered["opts"]["legend"] == ["agent (colour: reward)", "target"]
    target_points = scattered["X"][scattered["Y"] == 2]
    np.testing.assert_array_equal(target_points, np.column_stack((np.arange(60), [3.6] * 30 + [1.2] * 30)))


def test_figure_titles_fit_the_figure():
    """The title, one line, was clipped at both edges of the 750-px trajectory figure (and so were longer ones)."""
    title = "ppo2 MobileRobot2TargetGymEnv-v0 srl_combination_of_a_learned_model_with_a_long_name"
    figures = {"trajectory 2-D": replay_plots.trajectoryFigure(_syntheticTrace(2), title),
               "trajectory 3-D": replay_plots.trajectoryFigure(_syntheticTrace(3), title),
               "trajectory 1-D": replay_plots.trajectoryFigure(_syntheticTrace(1), title),
               "discrete actions": replay_plots.actionProbaFigure(_syntheticTrace(2), title),
               "continuous actions": replay_plots.actionProbaFigure(_syntheticTrace(2, discrete=False), title)}
    for name, figure in figures.items():
        renderer = figure.canvas.get_renderer()
        box, page = figure._suptitle.get_window_extent(renderer), figure.bbox
        assert box.x0 >= page.x0 and box.x1 <= page.x1 and box.y1 <= page.y1, (name, box, page)
        assert len(figure._suptitle.get_text().splitlines()) >= 2, name
        for axes in figure.axes:  # the title stays clear of the plots and of the legend above them
            assert axes.get_tightbbox(renderer).y1 <= box.y0 + 1, name


def test_the_step_axis_mentions_dashed_lines_only_when_it_draws_some():
    """The action figure's x axis said "dashed: new episode" on a replay of one episode, which draws no dashed line."""
    one_episode = _syntheticTrace(2)
    one_episode.episodes[:] = [0] * len(one_episode.episodes)
    assert replay_plots.actionProbaFigure(one_episode).axes[-1].get_xlabel() == "Step (first env)"
    assert (replay_plots.actionProbaFigure(_syntheticTrace(2)).axes[-1].get_xlabel()
            == "Step (first env; dashed: new episode)")


def test_axes_carry_the_ground_truth_unit():
    """The trajectory's axes were labelled bare x, y, z although the robots' ground truth is in metres."""
    labels = {}
    for dim in (1, 2, 3):
        axes = replay_plots.trajectoryFigure(_syntheticTrace(dim, unit="m")).axes[0]
        labels[dim] = [axes.get_xlabel(), axes.get_ylabel()] + ([axes.get_zlabel()] if dim == 3 else [])
    assert labels == {1: ["Step (first env; dashed: new episode)", "x (m), ground truth"], 2: ["x (m)", "y (m)"],
                      3: ["x (m)", "y (m)", "z (m)"]}
    axes = replay_plots.trajectoryFigure(_syntheticTrace(2)).axes[0]  # an env that declares no unit
    assert [axes.get_xlabel(), axes.get_ylabel()] == ["x", "y"]
    units = {env_id: getEnvClass(env_id).GROUND_TRUTH_UNIT for env_id in
             ("MobileRobotGymEnv-v0", "MobileRobot1DGymEnv-v0", "MobileRobot2TargetGymEnv-v0", "KukaButtonGymEnv-v0",
              "KukaMovingButtonGymEnv-v0", "OmnirobotEnv-v0", "CarRacingGymEnv-v0")}
    assert units == {**dict.fromkeys(list(units)[:-1], "m"), "CarRacingGymEnv-v0": None}


def test_the_action_legend_names_the_actions_above_the_plot():
    """Kuka's legend said action 0 ... action 5, one row laid over the top band of the stacked areas."""
    env = getEnvClass("KukaButtonGymEnv-v0")(srl_model="ground_truth", force_down=True)
    try:
        assert env.actionNames() == ("-x", "+x", "-y", "+y", "-z", "-z (force_down)")
    finally:
        env.close()
    names = getEnvClass("KukaButtonGymEnv-v0").ACTION_NAMES
    trace = _syntheticTrace(3, action_names=names)
    trace.probas = [np.full(6, 1 / 6)] * len(trace)
    figure = replay_plots.actionProbaFigure(trace, "ppo2 KukaButtonGymEnv-v0 ground_truth")
    axes = figure.axes[0]
    legend = axes.get_legend()
    assert [text.get_text() for text in legend.get_texts()] == ["0: -x", "1: +x", "2: -y", "3: +y", "4: -z", "5: +z"]
    renderer = figure.canvas.get_renderer()
    assert legend.get_window_extent(renderer).y0 >= axes.get_window_extent(renderer).y1, "the legend is over the plot"
    # an env that names no actions (or not one name per action) keeps the indices
    assert replay_plots.ReplayTrace(True, "2D", action_names=("a", "b")).actionLabels(3) == [
        "action 0", "action 1", "action 2"]


def test_the_continuous_action_panels_name_their_dimensions():
    """A continuous agent's panels read "action 0", "action 1" where the env knows what each dimension moves."""
    names = {}
    for env_id, keywords in (("MobileRobotGymEnv-v0", {}), ("MobileRobot1DGymEnv-v0", {}),
                             ("KukaButtonGymEnv-v0", {}), ("KukaButtonGymEnv-v0", {"action_joints": True})):
        env = getEnvClass(env_id)(srl_model="ground_truth", is_discrete=False, **keywords)
        try:
            names[env_id, bool(keywords)] = env.actionNames()
        finally:
            env.close()
    assert names == {("MobileRobotGymEnv-v0", False): ("x move", "y move"),
                     ("MobileRobot1DGymEnv-v0", False): ("x move",),
                     ("KukaButtonGymEnv-v0", False): ("x move", "y move", "z move"),
                     ("KukaButtonGymEnv-v0", True): tuple(f"joint {index}" for index in range(7))}
    figure = replay_plots.actionProbaFigure(_syntheticTrace(2, discrete=False, action_names=("x move", "y move")))
    assert [axes.get_ylabel() for axes in figure.axes] == ["0: x move", "1: y move"]
    figure = replay_plots.actionProbaFigure(_syntheticTrace(2, discrete=False))  # an env that names none
    assert [axes.get_ylabel() for axes in figure.axes] == ["action 0", "action 1"]


def test_algorithm_without_action_distribution_gets_a_note(tmp_path, capturedTraces, capsys):
    run_dir = trainHere("--algo", "td3", "--env", ENV_ID, "--srl-model", "ground_truth", "-c", "--num-timesteps",
                        "100", "--log-dir", tmp_path / "logs")
    capsys.readouterr()  # the training's output
    assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "40", "--plotting", "--no-vis",
                                 "--deterministic"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "action-probability" in notes[0] and "td3" in notes[0], notes
    assert os.listdir(os.path.join(run_dir, "replay")) == ["trajectory.png"]
    assert len(capturedTraces) == 1 and capturedTraces[0].probas == []


def test_video_frames_carry_a_caption(tmp_path, trainedRun, capsys):
    gif = tmp_path / "replay.gif"
    assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "4", "--video", str(gif)]) == 0
    out = capsys.readouterr().out.splitlines()  # a GIF is encoded after the replay, as its first line says
    assert out[-2:] == ["Writing the video (4 frames)...", f"Video written: {gif} (4 frames)"], out
    frames = []
    with Image.open(gif) as image:
        assert image.n_frames == 4
        for index in range(4):
            image.seek(index)
            frames.append(np.asarray(image.convert("RGB"), dtype=np.int16))
    env = MobileRobotGymEnv(srl_model="ground_truth", render_mode="rgb_array")
    try:
        env.reset(seed=0)
        raw = env.render()
    finally:
        env.close()
    scale = frames[0].shape[1] // raw.shape[1]
    image_height = raw.shape[0] * scale
    assert frames[0].shape[0] > image_height, "no caption band under the image"
    bands = [frame[image_height:] for frame in frames]
    assert all((band > 200).all(axis=2).sum() > 30 for band in bands), "no white text in the caption"
    assert np.abs(bands[0] - bands[1]).sum() > 0, "the caption does not follow the step"
    # the image itself is the env's frame, enlarged, above the caption (GIF palette: close, not exact)
    first = frames[0][:image_height]
    enlarged = np.repeat(np.repeat(raw.astype(np.int16), scale, axis=0), scale, axis=1)
    assert np.abs(first - enlarged).mean() < 12


def test_a_video_plays_in_real_time_by_default(tmp_path, trainedRun):
    """--fps defaulted to 20 for every env: a Kuka arm (10 steps a second) played at twice its speed. The default is
    the env's render_fps over the run's --action-repeat (one frame per agent action); --fps still sets it."""
    def frameDurations(path) -> set[int]:
        with Image.open(path) as image:
            durations = set()
            for index in range(image.n_frames):
                image.seek(index)
                durations.add(image.info["duration"])
            return durations

    gif = tmp_path / "real_time.gif"
    assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "3", "--video", str(gif)]) == 0
    assert frameDurations(gif) == {50}  # MobileRobot: 20 frames a second
    assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "3", "--video", str(gif), "--fps",
                                 "5"]) == 0
    assert frameDurations(gif) == {200}

    class FakeVecEnv:
        def __init__(self, metadata):
            self.metadata = metadata

        def get_attr(self, name, indices):
            return [getattr(self, name)]

    assert enjoy_baselines.realTimeRate(FakeVecEnv({"render_fps": 10}), 1) == 10  # the Kuka arms
    assert enjoy_baselines.realTimeRate(FakeVecEnv({"render_fps": 10}), 4) == 2.5  # one frame per 4 env steps
    assert enjoy_baselines.realTimeRate(FakeVecEnv({}), 1) == 20
    assert enjoy_baselines.realTimeRate(FakeVecEnv({"render_fps": 500}), 1) == enjoy_baselines.MAX_GIF_FPS


def test_an_mp4_is_written_as_it_is_played(tmp_path, trainedRun, monkeypatch, capsys):
    """The MP4's frames were all kept in memory (about 240 KB a step) and encoded only after the last step: a long
    replay ran out of memory and lost the whole video. The output says it was written, not that it is being written
    (as it did once the file was already encoded)."""
    written, seen_at_each_step = [], []
    original_writer, original_keywords = enjoy_baselines.cv2.VideoWriter, enjoy_baselines.actionMaskKeywords

    class CountingWriter:
        def __init__(self, *args):
            self.writer = original_writer(*args)

        def write(self, frame):
            written.append(1)
            self.writer.write(frame)

        def release(self):
            self.writer.release()

        def isOpened(self):
            return self.writer.isOpened()

    def countAtEachStep(*args):  # called once per step, just before the agent acts
        seen_at_each_step.append(len(written))
        return original_keywords(*args)

    monkeypatch.setattr(enjoy_baselines.cv2, "VideoWriter", CountingWriter)
    monkeypatch.setattr(enjoy_baselines, "actionMaskKeywords", countAtEachStep)
    mp4 = tmp_path / "replay.mp4"
    assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "6", "--video", str(mp4),
                                 "--no-progress"]) == 0
    assert seen_at_each_step == [0, 1, 2, 3, 4, 5], "the frames were not written as they were played"
    out = capsys.readouterr().out
    assert "Writing the video" not in out and f"Video written: {mp4} (6 frames)" in out.splitlines(), out
    capture = cv2.VideoCapture(str(mp4))
    try:
        assert capture.get(cv2.CAP_PROP_FRAME_COUNT) == 6
    finally:
        capture.release()
    assert os.listdir(tmp_path) == ["replay.mp4"], "a temporary file was left"


@pytest.mark.parametrize("name", ["failed.mp4", "failed.gif"])
def test_an_error_mid_replay_leaves_no_video_and_no_temporary_file(tmp_path, trainedRun, monkeypatch, name):
    original, calls = enjoy_baselines.actionMaskKeywords, []

    def failAtTheFourthStep(*args):
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("boom")
        return original(*args)

    monkeypatch.setattr(enjoy_baselines, "actionMaskKeywords", failAtTheFourthStep)
    with pytest.raises(RuntimeError, match="boom"):
        enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "50", "--video", str(tmp_path / name),
                              "--no-progress"])
    assert os.listdir(tmp_path) == []


def test_a_gif_keeps_its_frames_palettised():
    """Each GIF frame was kept as RGB (about 240 KB a step, then an RGB image of each at the end) until the save."""
    frame = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    recorder = enjoy_baselines.VideoRecorder("unused.gif", 20)
    recorder.add(frame)
    kept = recorder._gif_frames
    assert len(kept) == 1 and kept[0].mode == "P"
    recorder.discard()


def test_caption_frame_keeps_the_image_and_writes_the_text():
    frame = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    one = enjoy_baselines.captionFrame(frame, ["step 1 (episode 1)", "reward +0.00  return +0.00"])
    two = enjoy_baselines.captionFrame(frame, ["step 2 (episode 1)", "reward +1.00  return +1.00"])
    assert one.shape[1] == 256 and one.shape[0] > 256 and one.dtype == np.uint8
    np.testing.assert_array_equal(one[:256], np.repeat(np.repeat(frame, 4, axis=0), 4, axis=1))
    assert (one[256:] > 0).any() and (one[256:] != two[256:]).any()


def test_render_without_display_is_one_line_error(trainedRun):
    result = runModule("replay.enjoy_baselines", "--log-dir", trainedRun, "--render", env={"DISPLAY": ""})
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: --render") and "DISPLAY" in lines[0], result.stderr


def test_a_video_path_that_is_a_folder_or_a_gif_too_fast_is_refused_before_the_replay(tmp_path, trainedRun):
    """A folder at --video crashed at the final rename, after the replay; a .gif above 50 fps stored a delay of
    0 or 1 hundredth of a second, which browsers play at about 10 fps."""
    (tmp_path / "vd.gif").mkdir()
    with pytest.raises(UsageError, match="is a folder, not a file"):
        enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "4", "--video", str(tmp_path / "vd.gif")])
    with pytest.raises(UsageError, match="--fps 60: a .gif plays at most 50 frames per second"):
        enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "4", "--video", str(tmp_path / "a.gif"),
                              "--fps", "60"])
    # an .mp4 above MPEG-4's 65535 fps: OpenCV's writer did not open, an empty file replaced the path, "Video written"
    (tmp_path / "old.mp4").write_bytes(b"an earlier video")
    with pytest.raises(UsageError, match=r"--fps 65536: an \.mp4 \(MPEG-4 Part 2\) plays at most 65535 frames per "):
        enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "4", "--video", str(tmp_path / "old.mp4"),
                              "--fps", "65536"])
    assert sorted(os.listdir(tmp_path)) == ["old.mp4", "vd.gif"]
    assert (tmp_path / "old.mp4").read_bytes() == b"an earlier video"
    # a writer that does not open (a codec the build lacks) is an error, not an empty file
    recorder = enjoy_baselines.VideoRecorder(str(tmp_path / "no.mp4"), 100000)
    with recorder, pytest.raises(RuntimeError, match="OpenCV could not open an MPEG-4 writer for .*no.mp4 at 100000"):
        recorder.add(np.zeros((8, 8, 3), dtype=np.uint8))
    assert sorted(os.listdir(tmp_path)) == ["old.mp4", "vd.gif"]


def test_output_dir_needs_plotting(tmp_path, trainedRun):
    with pytest.raises(UsageError, match="add --plotting"):
        enjoy_baselines.main(["--log-dir", trainedRun, "--output-dir", str(tmp_path)])
    # a file's name for the folder made a folder x.png/ holding the PNGs
    with pytest.raises(UsageError, match=r"--output-dir '.*x\.png' takes a folder, not a file name: --plotting writes "
                                         r"its PNGs in it \(action_proba\.png, trajectory\.png\)$"):
        enjoy_baselines.main(["--log-dir", trainedRun, "--plotting", "--no-vis", "--output-dir",
                              str(tmp_path / "x.png")])
    assert not os.listdir(tmp_path)


def test_plots_reach_a_live_visdom_server(tmp_path, trainedRun, recwarn, capsys, visdom_port):
    port = visdom_port
    assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "60", "--plotting", "--port",
                                 str(port), "--output-dir", str(tmp_path / "plots")]) == 0
    assert not [w for w in recwarn if "visdom" in str(w.message)], [str(w.message) for w in recwarn]
    run_name = os.path.basename(os.path.normpath(trainedRun))
    env_name = f"replay_{ENV_ID}_ground_truth_ppo2_{run_name}"
    # the page of the replay's env, as train prints its own (visdom opens on its empty main env otherwise)
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("Live plots")] == [
        f"Live plots: http://127.0.0.1:{port}/env/{env_name}"]
    client = visdom.Visdom(server="http://127.0.0.1", port=port, env=env_name, use_incoming_socket=False)
    trajectory = json.loads(client.get_window_data(f"{env_name}_trajectory", env_name))["content"]["data"]
    agent = next(trace for trace in trajectory if trace["name"].startswith("agent"))
    assert len(agent["x"]) == 60 and [trace["name"] for trace in trajectory][1] == "target"
    proba = json.loads(client.get_window_data(f"{env_name}_action_proba", env_name))["content"]["data"]
    assert [trace["name"] for trace in proba] == ["0: -x", "1: +x", "2: -y", "3: +y"]
    total = np.sum([trace["y"] for trace in proba], axis=0)
    np.testing.assert_allclose(total, 1.0, rtol=1e-5)
    assert sorted(os.listdir(tmp_path / "plots")) == ["action_proba.png", "trajectory.png"]


def test_unreachable_visdom_costs_one_warning(tmp_path, trainedRun):
    port = findFreePort()  # nothing listens there
    with pytest.warns(UserWarning) as record:
        assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "120", "--plotting", "--port",
                                     str(port), "--output-dir", str(tmp_path)]) == 0
    (warning,) = [str(w.message) for w in record if str(port) in str(w.message)]
    assert "live plots are off for the rest of this replay." in warning  # (it said "this run", as training's)
    assert sorted(os.listdir(tmp_path)) == ["action_proba.png", "trajectory.png"]


# --- rl_baselines.runs.run_policy: runs of her and of a learned SRL model ------------------------------------------------


@pytest.fixture(scope="module")
def srlRun(tmp_path_factory: pytest.TempPathFactory) -> str:
    """ppo2 trained (in this process) on the states of a (random, untrained) 32x32 SRL model of the sprites' frames."""
    root = tmp_path_factory.mktemp("srl_run")
    RandomModel(4, SMALL, {"env": ENV_ID, "renderer": "sprites"}).save(str(root / "random_model"))  # the default
    return trainHere("--algo", "ppo2", "--env", ENV_ID, "--srl-model-path", root / "random_model", "--num-timesteps",
                     "64", "--hyperparam", "n_steps:64", "--log-dir", root / "logs")


def _runEnv(run_dir: str, seed: int):
    """The run's own VecEnv (as enjoy_baselines rebuilds it), reset with ``seed``; returns (env, first obs)."""
    args = readRunArgs(run_dir, "--log-dir")
    args = argparse.Namespace(**{**vars(args), "seed": seed, "num_cpu": 1,
                                 "srl_model_path": recordedSRLModelFolder(run_dir, args.srl_model)})
    venv = registered_rl[args.algo][0].makeEnv(args, load_path_normalise=run_dir)
    return venv, venv.reset()


def test_run_policy_sees_what_a_learned_srl_run_saw(tmp_path, srlRun):
    policy = loadRunPolicy(srlRun)
    assert policy.learned and policy.encoder.img_shape == SMALL
    venv, expected = _runEnv(srlRun, seed=4)
    env = MobileRobotGymEnv(img_shape=SMALL)  # the generator's env: pixels at the model's size
    try:
        pixels, _ = env.reset(seed=4)
        observed = policy.observation(env, pixels)
        assert observed.shape == (1, 4)
        np.testing.assert_allclose(observed, expected, rtol=1e-5, atol=1e-5)
    finally:
        env.close()
        venv.close()
    # the dataset generator records with it, at another image size (resized for the encoder)
    result = runModule("environments.dataset_generator", "--env", ENV_ID, "--policy", srlRun, "--num-episode", "1",
                       "--max-steps", "10", "--img-shape", "3", "48", "48", "--save-path", tmp_path / "data",
                       "--name", "srl", "--no-progress")
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "data" / "srl" / "preprocessed_data.npz") as data:
        assert len(data["actions"]) == 10 and set(data["actions"].tolist()) <= {0, 1, 2, 3}


def test_run_policy_refuses_a_changed_srl_model(srlRun, tmp_path):
    copy = shutil.copytree(srlRun, tmp_path / "run")
    record_path = copy / "srl_model.json"
    record = json.loads(record_path.read_text())
    record["hash"] = "0" * 64
    record_path.write_text(json.dumps(record))
    assert readRunArgs(str(copy), "--policy").srl_model == "random"
    with pytest.raises(ValueError, match="changed since the run was trained"):
        RunPolicy(str(copy)).load()


def test_run_policy_replays_a_her_run(tmp_path):
    run_dir = trainHere("--algo", "her", "--env", ENV_ID, "--srl-model", "ground_truth", "-c", "--num-timesteps",
                        "120", "--log-dir", tmp_path / "logs")
    policy = loadRunPolicy(run_dir)
    assert policy.goal_conditioned
    venv, expected = _runEnv(run_dir, seed=2)
    env = MobileRobotGymEnv(img_shape=SMALL, is_discrete=False)
    try:
        pixels, _ = env.reset(seed=2)
        observed = policy.observation(env, pixels)
        assert sorted(observed) == sorted(expected)
        for key in expected:
            np.testing.assert_allclose(observed[key], expected[key], rtol=1e-5, atol=1e-6)
        action = policy.act(env, pixels)
        assert np.shape(action) == env.action_space.shape and env.action_space.contains(action.astype(np.float32))
    finally:
        env.close()
        venv.close()
    result = runModule("environments.dataset_generator", "--env", ENV_ID, "--policy", run_dir, "-c",
                       "--num-episode", "1", "--max-steps", "8", "--img-shape", *map(str, SMALL), "--save-path",
                       tmp_path / "data", "--name", "her", "--no-progress")
    assert result.returncode == 0, result.stderr


def test_render_of_an_env_without_a_window_says_use_video(tmp_path, monkeypatch):
    """Omnirobot has no window: --render says so in the command's words (not the env's Python API wording about
    renders=True and render_mode), with a display or without one (it asked for a DISPLAY, which would not help)."""
    run = trainHere("--algo", "ppo2", "--env", "OmnirobotEnv-v0", "--srl-model", "ground_truth", "--num-timesteps",
                    "64", "--log-dir", tmp_path / "logs")
    for display in (":0", None):
        if display is None:
            monkeypatch.delenv("DISPLAY", raising=False)
        else:
            monkeypatch.setenv("DISPLAY", display)
        with pytest.raises(UsageError, match=r"^--render opens the env's window, and OmnirobotEnv-v0 has none .*: "
                                             r"use --video out.gif instead$"):
            enjoy_baselines.main(["--log-dir", run, "--render", "--no-progress"])
        # with --video given, the advice is to drop --render (it said "use --video out.gif instead")
        video = str(tmp_path / "om2.gif")
        with pytest.raises(UsageError, match=r"^--render opens the env's window, and OmnirobotEnv-v0 has none .*: "
                                             r"drop --render: --video .*om2.gif records the replay without a window$"):
            enjoy_baselines.main(["--log-dir", run, "--render", "--video", video, "--no-progress"])
        assert not os.path.exists(video)


@pytest.mark.parametrize("env_id", ["MobileRobotGymEnv-v0", "CarRacingGymEnv-v0"])
def test_render_without_display_names_the_envs_window(env_id, monkeypatch):
    """CarRacing's window is pygame's, not PyBullet's: the refusal says "the env's window"; an env not installed is
    left to loadRun."""
    monkeypatch.delenv("DISPLAY", raising=False)
    assert enjoy_baselines.renderRefusal(env_id) == ("--render opens the env's window and needs a display, but "
                                                     "DISPLAY is not set (use --video out.gif instead)")
    assert enjoy_baselines.renderRefusal(env_id, "om2.gif") == (
        "--render opens the env's window and needs a display, but DISPLAY is not set (drop --render: --video om2.gif "
        "records the replay without a window)")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setattr(srl_env, "_xServerRefusal", lambda display: None)  # (an X server that answers)
    assert enjoy_baselines.renderRefusal(env_id) is None
    assert enjoy_baselines.renderRefusal("NoSuchEnv-v0") is None
    assert "PyBullet" not in enjoy_baselines.buildParser().format_help()


@pytest.mark.skipif(ctypes.util.find_library("X11") is None or not sys.platform.startswith("linux"),
                    reason="no Xlib to ask an X server with")
def test_render_with_a_display_whose_x_server_does_not_answer(monkeypatch):
    """DISPLAY set to an X server that does not answer (a stale ssh -X session): --render got past the check and
    PyBullet's GUI ended the process with exit code 1 and no message (its own is silenced with its banner)."""
    monkeypatch.setenv("DISPLAY", UNANSWERED_DISPLAY)
    assert enjoy_baselines.renderRefusal("MobileRobotGymEnv-v0") == (
        "--render opens the env's window and needs a display, but cannot connect to the X server of "
        f"DISPLAY={UNANSWERED_DISPLAY} (use --video out.gif instead)")


def test_a_moving_target_is_drawn_as_its_path():
    """KukaMovingButton's trajectory.png drew a star at each step of its sliding button, a black bar of hundreds of
    stars over the arm's path; a target that moves within its episode is drawn as a line, its path."""
    trace = _syntheticTrace(2)
    trace.targets = [np.array([0.5, 0.001 * step]) for step in range(60)]  # slides along y, 1 mm a step
    figure = replay_plots.trajectoryFigure(trace, "ppo2 KukaMovingButtonGymEnv-v0 ground_truth")
    axes = figure.axes[0]
    assert not [collection for collection in axes.collections if collection.get_zorder() == 4]  # no star
    paths = [line for line in axes.get_lines() if line.get_color() == "crimson"]
    assert len(paths) == 2  # one per episode
    np.testing.assert_allclose(paths[0].get_ydata(), 0.001 * np.arange(30))
    np.testing.assert_allclose(paths[1].get_ydata(), 0.001 * np.arange(30, 60))
    assert [text.get_text() for text in axes.get_legend().get_texts()] == ["target's path"]
    # two fixed targets in one episode (MobileRobot2Target's) stay two stars, and no path
    trace.targets = [np.array([3.6, 3.0]) if step % 30 < 10 else np.array([0.4, 0.4]) for step in range(60)]
    axes = replay_plots.trajectoryFigure(trace, "").axes[0]
    stars = [collection for collection in axes.collections if collection.get_zorder() == 4]
    np.testing.assert_allclose(stars[0].get_offsets(), [[0.4, 0.4], [3.6, 3.0]])
    assert not [line for line in axes.get_lines() if line.get_color() == "crimson"]
    assert [text.get_text() for text in axes.get_legend().get_texts()] == ["target"]


def test_a_line_target_is_drawn_as_its_line():
    """MobileRobotLineTarget's target, a band across the arena (x within 0.1 m of its line), was drawn as a star at
    (line x, 2), as if the robot had to reach that point; it is drawn as the line x = target x."""
    from environments.mobile_robot.mobile_robot_line_target_env import MobileRobotLineTargetGymEnv

    assert MobileRobotLineTargetGymEnv.TARGET_LINE_AXIS == 0 and MobileRobotGymEnv.TARGET_LINE_AXIS is None
    trace = _syntheticTrace(2, target_line_axis=MobileRobotLineTargetGymEnv.TARGET_LINE_AXIS)
    trace.targets = [np.array([3.4 if step < 30 else 1.0, 2.0]) for step in range(60)]
    axes = replay_plots.trajectoryFigure(trace, "ppo2 MobileRobotLineTargetGymEnv-v0 ground_truth").axes[0]
    assert not [collection for collection in axes.collections if collection.get_zorder() == 4]  # no star
    lines = [line for line in axes.get_lines() if line.get_color() == "crimson"]
    assert sorted(line.get_xdata()[0] for line in lines) == [1.0, 3.4]
    assert all(line.get_xdata()[0] == line.get_xdata()[1] for line in lines)  # vertical: x = target x
    assert [text.get_text() for text in axes.get_legend().get_texts()] == ["target"]
    # a point target keeps its star
    axes = replay_plots.trajectoryFigure(_syntheticTrace(2), "").axes[0]
    assert [collection for collection in axes.collections if collection.get_zorder() == 4]


def test_visdom_flags_without_plotting_are_one_warning_held_with_the_checks(tmp_path, trainedRun):
    """`--port 9000` or `--no-vis` without --plotting (the only thing they act on) did nothing and said nothing: one
    warning now, shown once the checks pass; a refused replay prints its error alone."""
    for flags in (["--port", "9000"], ["--no-vis"]):
        with pytest.warns(UserWarning, match="without --plotting nothing is drawn"):
            assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "2", "--no-progress",
                                         *flags]) == 0
    # so is --fps without --video, where it did nothing, silently
    with pytest.warns(UserWarning, match=r"^--fps 10 is the frame rate of the --video recording; without --video "
                                         r"nothing is recorded$"):
        assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "2", "--no-progress", "--fps",
                                     "10"]) == 0
    result = runModule("replay.enjoy_baselines", "--log-dir", trainedRun, "--num-timesteps", "2", "--port", "9000",
                       "--video", str(tmp_path / "x.avi"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and ".gif or .mp4" in result.stderr, result.stderr


def test_the_trajectory_reads_as_the_top_down_frames_of_the_episode():
    """trajectory.png drew MobileRobot's x to the right and y up, while its frames show x down the image (the wall x=0
    at the top) and y to the right (the wall y=0 on the left): the path was the frames' turned a quarter turn."""
    env = MobileRobotGymEnv(render_mode="rgb_array")
    try:
        env.reset(seed=0)
        frame = env.render().astype(int)
    finally:
        env.close()
    red, green, blue = ((frame[..., channel] > 120) & (np.delete(frame, channel, axis=-1) < 60).all(-1)
                        for channel in range(3))
    black = frame.sum(-1) < 60
    # the walls y=0 (red), y=4 (green), x=0 (blue), x=4 (black) locate the ground truth's axes in the frame
    assert np.nonzero(red)[1].mean() < np.nonzero(green)[1].mean()  # y grows to the right
    assert np.nonzero(blue)[0].mean() < np.nonzero(black)[0].mean()  # x grows down
    assert MobileRobotGymEnv.GROUND_TRUTH_VIEW == ("down", "right")
    trace = replay_plots.ReplayTrace(True, "2D", unit="m", view=MobileRobotGymEnv.GROUND_TRUTH_VIEW)
    for position in ((1.0, 1.0), (3.0, 1.0), (1.0, 3.0)):  # then x larger, then y larger
        trace.states.append(np.array(position))
        trace.targets.append(np.array((3.6, 3.0)))
        trace.rewards.append(0.0)
        trace.episodes.append(0)
    figure = replay_plots.trajectoryFigure(trace)
    figure.canvas.draw()
    axes = figure.axes[0]
    path = axes.lines[0]  # the episode's path, in the order of its steps
    (start, larger_x, larger_y) = axes.transData.transform(path.get_xydata())  # display: right and up
    assert larger_x[1] < start[1] and larger_x[0] == pytest.approx(start[0])  # x grows down, as in the frames
    assert larger_y[0] > start[0] and larger_y[1] == pytest.approx(start[1])  # y grows right
    assert (axes.get_xlabel(), axes.get_ylabel()) == ("y (m)", "x (m)")
    line_trace = replay_plots.ReplayTrace(True, "2D", target_line_axis=0, view=MobileRobotGymEnv.GROUND_TRUTH_VIEW)
    line_trace.states, line_trace.targets = trace.states, trace.targets
    line_trace.rewards, line_trace.episodes = trace.rewards, trace.episodes
    target_line = replay_plots.trajectoryFigure(line_trace).axes[0].lines[-1]  # the line x = 3.6: across the frame
    assert list(target_line.get_ydata()) == [3.6, 3.6], target_line.get_xydata()

