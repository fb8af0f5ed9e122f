"""What a replay (``replay.enjoy_baselines``) tells its user: the model file it plays, the line of each finished episode
and of a replay in which no episode finished, the visdom environment of its live plots and the action figure's title;
and a SIGINT stops a replay started with it ignored. The checkpoint lines: tests/test_enjoy_checkpoints.py."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import REPO, sigintIgnoringProcess
from PIL import Image

from replay import enjoy_baselines, replay_plots
from replay.visdom_server import findFreePort
from rl_baselines.core.manifests import readManifest
from srl_toolbox.cli import INTERRUPTED_EXIT_CODE

pytestmark = pytest.mark.slow  # replays of a trained run: left out of `make test-fast`

REPLAY = ["--num-timesteps", "10", "--no-progress"]
RUN_NAME = "MobileRobotGymEnv-v0_ground_truth_ppo2"


def _modelLines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("Model: ")]


def test_every_replay_names_the_model_file_it_plays(trainedRun, capsys):
    """A finished run's latest model and ``--model best`` were played without a ``Model:`` line, which a checkpoint
    and an unfinished run's latest model had."""
    latest, best = readManifest(trainedRun), readManifest(os.path.join(trainedRun, "best"))
    assert enjoy_baselines.main(["--log-dir", trainedRun, *REPLAY]) == 0
    assert _modelLines(capsys.readouterr().out) == [
        f"Model: {trainedRun}/ppo2_model.zip, the run's final model, saved at step {latest['num_timesteps']:,}"]
    assert enjoy_baselines.main(["--log-dir", trainedRun, *REPLAY, "--model", "best"]) == 0
    assert _modelLines(capsys.readouterr().out) == [
        f"Model: {trainedRun}/best/ppo2_model.zip, the run's best model, saved at step {best['num_timesteps']:,} "
        f"(mean reward {best['mean_reward']:.2f} over the last training episodes)"]


def test_the_no_episode_line_says_whose_reward_it_is():
    """With several envs the line gave one number, "reward so far", without saying it was their mean."""
    assert enjoy_baselines.noEpisodeLine(20, np.array([1.5])) == "No episode finished in 20 steps; reward so far: 1.50"
    assert enjoy_baselines.noEpisodeLine(20, np.array([1.0, 2.0, 0.0, 1.0])) == (
        "No episode finished in 20 steps (4 envs, 5 steps each); mean reward so far per env: 1.00")


def test_each_episode_line_gives_its_reward_and_says_a_mean_only_of_several():
    """The first episode's line said "mean reward" of one episode, which the closing line then said again."""
    assert enjoy_baselines.episodeLine([12.5]) == "Episode 1: reward 12.50"
    assert enjoy_baselines.episodeLine([12.5, -2.5, 5.0]) == "Episode 3: reward 5.00, mean of 3: 5.00"


MISSING = object()  # args.json without the key (a run recorded before it)


def _runWithVisdomEnv(folder, trainedRun: str, visdom_env: object) -> str:
    """:return: a copy of the trained run in ``folder`` whose args.json records ``visdom_env`` (MISSING: no key)"""
    run_dir = str(folder / os.path.basename(trainedRun))
    shutil.copytree(trainedRun, run_dir)
    args_file = os.path.join(run_dir, "args.json")
    with open(args_file, encoding="utf-8") as handle:
        recorded = json.load(handle)
    recorded.pop("visdom_env", None)
    if visdom_env is not MISSING:
        recorded["visdom_env"] = visdom_env
    with open(args_file, "w", encoding="utf-8") as handle:
        json.dump(recorded, handle)
    return run_dir


def test_a_replay_draws_into_the_runs_own_visdom_env(tmp_path, trainedRun):
    """Two runs of one name (another run held ``<name>``, so this one drew into ``<name>_2``) replayed into the
    same visdom windows, ``replay_<name>``: the replay now follows args.json's ``visdom_env``, and the run's name
    where it records none (null: its plotter never reached a server)."""
    name = f"{RUN_NAME}_{os.path.basename(trainedRun)}"
    settings = argparse.Namespace(env="MobileRobotGymEnv-v0", srl_model="ground_truth", algo="ppo2")
    cases = {"second": (f"{name}_2", f"replay_{name}_2"), "own": (name, f"replay_{name}"),
             "null": (None, f"replay_{name}"), "missing": (MISSING, f"replay_{name}")}
    for case, (recorded, expected) in cases.items():
        run_dir = _runWithVisdomEnv(tmp_path / case, trainedRun, recorded)
        assert enjoy_baselines.replayVisdomEnv(run_dir, settings) == expected, case


def test_the_replay_plots_use_that_env(tmp_path, trainedRun, monkeypatch):
    name = f"{RUN_NAME}_{os.path.basename(trainedRun)}_2"
    run_dir = _runWithVisdomEnv(tmp_path, trainedRun, name)
    env_names = []

    class RecordedVisdom(replay_plots.ReplayVisdom):
        def __init__(self, port: int, env_name: str, **kwargs) -> None:
            env_names.append(env_name)
            super().__init__(port, env_name, **kwargs)

    monkeypatch.setattr(enjoy_baselines, "ReplayVisdom", RecordedVisdom)
    with pytest.warns(UserWarning):  # nothing listens on the port
        assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "5", "--no-progress", "--plotting",
                                     "--port", str(findFreePort()), "--output-dir", str(tmp_path / "plots")]) == 0
    assert env_names == [f"replay_{name}"]


def test_the_continuous_action_figure_has_a_plain_title():
    """Its title named an internal function: "mean action (getActionProba) and actions taken"."""
    rng = np.random.default_rng(0)
    trace = replay_plots.ReplayTrace(discrete=False, plot_type="2D")
    for step in range(20):
        trace.states.append(rng.normal(size=2))
        trace.targets.append(np.zeros(2))
        trace.probas.append(np.tanh(rng.normal(size=2)))
        trace.actions.append(trace.probas[-1] + rng.normal(scale=0.3, size=2))
        trace.rewards.append(0.0)
        trace.episodes.append(0)
    figure = replay_plots.actionProbaFigure(trace, "sac MobileRobotGymEnv-v0 ground_truth")
    assert figure._suptitle.get_text().splitlines() == ["sac MobileRobotGymEnv-v0 ground_truth",
                                                        "the policy's mean action and the actions taken"]
    drawn = {}

    class Viz:
        def line(self, **kwargs):
            drawn.update(kwargs)

    live = replay_plots.ReplayVisdom(8097, "test", title="sac")
    live._viz = Viz()
    live._drawProba(trace, np.arange(20))
    assert drawn["opts"]["title"] == "sac the policy's mean action and the actions taken"


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_replay_started_with_sigint_ignored_stops_on_one(tmp_path, trainedRun):
    """``enjoy_baselines ... &`` in a shell script without job control starts it with SIGINT ignored: it played on
    to the end, while train stops. It stops as on a Ctrl-C: the MP4 of the steps played written, exit 130."""
    mp4 = tmp_path / "replay.mp4"
    with sigintIgnoringProcess([sys.executable, "-m", "replay.enjoy_baselines", "--log-dir", trainedRun,
                                "--num-timesteps", "100000", "--video", str(mp4), "--no-progress"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"}) as process:
        deadline = time.monotonic() + 120
        while not any(".tmp" in entry.name and entry.stat().st_size > 2**16 for entry in os.scandir(tmp_path)):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert process.returncode == INTERRUPTED_EXIT_CODE, (out, err)
    assert "Traceback" not in err and "Interrupted after" in out, (out, err)
    assert os.listdir(tmp_path) == ["replay.mp4"]


@pytest.mark.parametrize("where, steps", [("actionMaskKeywords", 3), ("captionFrame", 4)])
def test_a_ctrl_c_keeps_what_was_played_and_exits_130(tmp_path, trainedRun, monkeypatch, capsys, where, steps):
    """A Ctrl-C during the replay wrote the video of the steps played but exited 0, as a whole replay does. One that
    came while a played step was being counted (its frame captioned) cut it half-counted: "Interrupted after 4 steps"
    over a video of 3 frames. The step is counted whole, then the replay stops."""
    original, calls = getattr(enjoy_baselines, where), []

    def sigintAtTheFourthCall(*args):  # actionMaskKeywords: before the agent acts; captionFrame: after the step
        calls.append(1)
        if len(calls) == 4:
            os.kill(os.getpid(), signal.SIGINT)
        return original(*args)

    monkeypatch.setattr(enjoy_baselines, where, sigintAtTheFourthCall)
    gif = tmp_path / "cut.gif"
    assert enjoy_baselines.main(["--log-dir", trainedRun, "--num-timesteps", "50", "--video", str(gif),
                                 "--no-progress"]) == 130
    assert f"Interrupted after {steps} steps" in capsys.readouterr().out
    with Image.open(gif) as image:
        assert image.n_frames == steps
