"""Training sends its live curve to a real visdom server (started here on a free loopback port), and goes on with
one warning when no server answers."""
from __future__ import annotations

import json
import os
import urllib.request

import numpy as np
import pytest
import visdom
from conftest import runFolder, runModule, trainHere

from replay.visdom_server import findFreePort
from rl_baselines.core.registry import registered_rl
from rl_baselines.runs import train
from rl_baselines.runs.callbacks import TrainingCallbacks
from rl_baselines.runs.monitor_files import loadEpisodes
from rl_baselines.runs.resume import loadResumeArgs
from rl_baselines.runs.train import trainCommand
from rl_baselines.runs.train_checks import baseParser
from srl_toolbox.plots import movingAverage

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

TRAIN_ARGS = ["--algo", "random_agent", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
              "--num-timesteps", "1500", "--no-progress", "--episode-window", "3"]


def test_training_curve_reaches_visdom(tmp_path, visdom_port):
    port = visdom_port
    result = runModule("rl_baselines.train", *TRAIN_ARGS, "--port", port, "--log-dir", tmp_path / "logs")
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr.lower()
    run_dir = runFolder(result)
    env_name = f"MobileRobotGymEnv-v0_ground_truth_random_agent_{os.path.basename(run_dir)}"
    page = f"http://127.0.0.1:{port}/env/{env_name}"
    assert result.stdout.count("Live plots: ") == 1 and f"Live plots: {page}\n" in result.stdout, result.stdout
    with urllib.request.urlopen(page, timeout=30) as response:  # the run's own page, not visdom's main env
        assert response.status == 200
    client = visdom.Visdom(server="http://127.0.0.1", port=port, env=env_name, use_incoming_socket=False)
    window = json.loads(client.get_window_data(f"{env_name}_reward", env_name))
    traces = {trace["name"]: trace for trace in window["content"]["data"]}
    episodes = loadEpisodes(os.path.join(run_dir, "monitor"))
    assert len(episodes["rewards"]) == 6
    raw, smoothed = traces["random_agent raw"], traces["random_agent smoothed"]
    np.testing.assert_array_equal(raw["x"], episodes["timesteps"])
    np.testing.assert_allclose(raw["y"], episodes["rewards"])
    np.testing.assert_allclose(smoothed["y"], movingAverage(episodes["rewards"], 3))
    assert json.loads(client.get_window_data(f"{env_name}_episodes", env_name))["content"]["data"]


def test_training_goes_on_without_a_server(tmp_path):
    port = findFreePort()  # nothing listens there
    result = runModule("rl_baselines.train", *TRAIN_ARGS, "--port", port, "--log-dir", tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and str(port) in warnings[0], result.stderr
    assert "Live plots" not in result.stdout  # no address for a server that never answered
    assert os.path.isfile(os.path.join(runFolder(result), "random_agent_model.json"))


def test_runs_of_one_folder_name_in_two_log_folders_get_an_env_each(tmp_path, visdom_port, monkeypatch, capsys):
    # two runs started in the same second in two log folders have one run folder name: they drew into one visdom
    # env, each replacing the other's curves
    stamp = f"test-{os.path.basename(tmp_path)}"
    monkeypatch.setattr(train, "newStamp", lambda: stamp)
    env_name = f"MobileRobotGymEnv-v0_ground_truth_random_agent_{stamp}_same"
    run_dirs = []
    for seed in (0, 1):  # (the runs' curves differ)
        result = trainCommand([*TRAIN_ARGS, "--num-timesteps", "500", "--port", str(visdom_port), "--tag", "same",
                               "--seed", str(seed), "--log-dir", str(tmp_path / f"logs{seed}")])
        assert result.exit_code == 0 and os.path.basename(result.run_dir) == f"{stamp}_same"
        run_dirs.append(result.run_dir)
    pages = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Live plots: ")]
    assert pages == [f"Live plots: http://127.0.0.1:{visdom_port}/env/{name}" for name in (env_name, f"{env_name}_2")]
    client = visdom.Visdom(server="http://127.0.0.1", port=visdom_port, use_incoming_socket=False)
    rewards = [loadEpisodes(os.path.join(run_dir, "monitor"))["rewards"] for run_dir in run_dirs]
    assert not np.array_equal(*rewards)
    for run_rewards, name in zip(rewards, (env_name, f"{env_name}_2")):
        window = json.loads(client.get_window_data(f"{name}_reward", name))
        raw = {trace["name"]: trace for trace in window["content"]["data"]}["random_agent raw"]
        np.testing.assert_allclose(raw["y"], run_rewards)


def _stoppedAt700(monkeypatch, argv):
    """Train ``argv`` (checkpoints every 500 steps) and stop it at step 700 as a second Ctrl-C does (exit 130)."""
    original = TrainingCallbacks.on_step

    def interruptAt700(self):
        keep_going = original(self)
        if self.num_timesteps >= 700:
            raise KeyboardInterrupt
        return keep_going

    monkeypatch.setattr(TrainingCallbacks, "on_step", interruptAt700)
    result = trainCommand([*argv, "--checkpoint-freq", "500"])
    monkeypatch.setattr(TrainingCallbacks, "on_step", original)
    assert result.exit_code == 130
    return result.run_dir


def _args(run_dir):
    with open(os.path.join(run_dir, "args.json")) as handle:
        return json.load(handle)


def _logLines(out, prefix):
    return [line[len(prefix):].split(" ")[0] for line in out.splitlines() if line.startswith(prefix)]


def test_a_resumed_run_draws_and_logs_where_it_started(tmp_path, visdom_port, monkeypatch, capsys):
    # the second of two runs of one folder name drew into <env>_2, but its resume drew into <env>, the first run's
    # windows, and both wrote (and the resume purged) one tensorboard folder
    stamp = f"test-{os.path.basename(tmp_path)}"
    monkeypatch.setattr(train, "newStamp", lambda: stamp)
    name = f"MobileRobotGymEnv-v0_ground_truth_random_agent_{stamp}_same"
    tensorboard = str(tmp_path / "tb")
    args = [*TRAIN_ARGS, "--port", str(visdom_port), "--tag", "same", "--tensorboard-log", tensorboard]
    first = trainCommand([*args, "--seed", "0", "--log-dir", str(tmp_path / "logs0")])
    assert first.exit_code == 0
    run_dir = _stoppedAt700(monkeypatch, [*args, "--seed", "1", "--log-dir", str(tmp_path / "logs1")])
    assert trainCommand(["--resume", run_dir, "--no-progress", "--port", str(visdom_port)]).exit_code == 0
    out = capsys.readouterr().out
    page = f"http://127.0.0.1:{visdom_port}/env/"
    assert _logLines(out, "Live plots: ") == [page + name, page + f"{name}_2", page + f"{name}_2"]
    assert _logLines(out, "Tensorboard log: ") == [os.path.join(tensorboard, folder)
                                                   for folder in (name, f"{name}_2", f"{name}_2")]
    records = [_args(folder) for folder in (first.run_dir, run_dir)]
    assert [(record["visdom_env"], record["tensorboard_run"]) for record in records] == [
        (name, name), (f"{name}_2", f"{name}_2")]
    client = visdom.Visdom(server="http://127.0.0.1", port=visdom_port, use_incoming_socket=False)
    for folder, env in ((first.run_dir, name), (run_dir, f"{name}_2")):  # each run's curve in its own windows
        window = json.loads(client.get_window_data(f"{env}_reward", env))
        raw = {trace["name"]: trace for trace in window["content"]["data"]}["random_agent raw"]
        np.testing.assert_allclose(raw["y"], loadEpisodes(os.path.join(folder, "monitor"))["rewards"])


def test_a_run_recorded_without_log_names_resumes_into_its_first_names(tmp_path, visdom_port, monkeypatch, capsys):
    # a run folder written before args.json recorded them: its resume draws and logs where such a run always did
    stamp = f"test-{os.path.basename(tmp_path)}"
    monkeypatch.setattr(train, "newStamp", lambda: stamp)
    name = f"MobileRobotGymEnv-v0_ground_truth_random_agent_{stamp}_old"
    tensorboard = str(tmp_path / "tb")
    run_dir = _stoppedAt700(monkeypatch, [*TRAIN_ARGS, "--port", str(visdom_port), "--tag", "old", "--log-dir",
                                          str(tmp_path / "logs"), "--tensorboard-log", tensorboard])
    record = _args(run_dir)
    del record["visdom_env"], record["tensorboard_run"]
    with open(os.path.join(run_dir, "args.json"), "w") as handle:
        json.dump(record, handle)
    capsys.readouterr()
    assert trainCommand(["--resume", run_dir, "--no-progress", "--port", str(visdom_port)]).exit_code == 0
    out = capsys.readouterr().out
    assert _logLines(out, "Live plots: ") == [f"http://127.0.0.1:{visdom_port}/env/{name}"]
    assert _logLines(out, "Tensorboard log: ") == [os.path.join(tensorboard, name)]
    assert "visdom_env" not in _args(run_dir)


def test_a_resumed_runs_log_names_are_not_among_its_settings(tmp_path):
    """args.json's visdom_env and tensorboard_run say where the run's logs go; a resume reads them from the file, and
    they do not reach the run's settings (TrainConfig.extra, a v1 plugin's namespace) as unknown keys."""
    run_dir = trainHere(*TRAIN_ARGS, "--log-dir", tmp_path / "logs", "--tensorboard-log",
                        tmp_path / "tb")
    with open(os.path.join(run_dir, "args.json"), encoding="utf-8") as handle:
        recorded = json.load(handle)
    assert recorded["visdom_env"] is None and recorded["tensorboard_run"] in os.listdir(tmp_path / "tb")
    args, _ = loadResumeArgs(["--resume", run_dir], registered_rl, baseParser)
    assert "visdom_env" not in args.extra and "tensorboard_run" not in args.extra
