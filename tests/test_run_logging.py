"""--tensorboard-log and the run's scalar logger (callback.logScalars): progress.csv, visdom and tensorboard (a
pipeline's runs, one tensorboard sub folder each: tests/test_pipeline.py's two pipelines sharing their runs)."""
from __future__ import annotations

import csv
import glob
import json
import os
import sys
import time
import warnings

import numpy as np
import pytest
from conftest import REPO, docsExample, interruptThenResume, runFolder, runModule, runTrain, trainHere, trainSettings
from test_visdom import _client

from rl_baselines.core.plugin_v1 import trainAlgorithm
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.core.training_state import progressLogger
from rl_baselines.runs import train
from rl_baselines.runs.callbacks import TrainingCallback
from rl_baselines.runs.monitor_files import loadEpisodes
from rl_baselines.runs.run_logging import RunLogger, checkTensorboard, logScalars
from rl_baselines.runs.train_checks import baseParser
from srl_toolbox.cli import UsageError
from srl_toolbox.plots import VisdomPlotter

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]


def _scalars(folder: str) -> dict[str, list[tuple[int, float]]]:
    """:return: every scalar tag of a tensorboard folder with its (step, value) points"""
    # optional dependency (the [tensorboard] extra): imported only where a test reads event files
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(folder)
    events.Reload()
    return {tag: [(event.step, event.value) for event in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def _runLog(tensorboard_dir, run_dir: str) -> str:
    folders = glob.glob(os.path.join(str(tensorboard_dir), f"*_{os.path.basename(run_dir)}"))
    assert len(folders) == 1, os.listdir(tensorboard_dir)
    return folders[0]


@pytest.mark.slow
def test_sb3_algorithm_writes_losses_and_episodes(tmp_path) -> None:
    tensorboard_dir = tmp_path / "tb"
    result = runTrain("--algo", "ppo2", *GT, "--num-timesteps", "512", "--n-steps", "128", "--num-cpu", "1",
                      "--log-dir", tmp_path / "logs", "--tensorboard-log", tensorboard_dir)  # (an episode per 250 steps)
    run_dir = runFolder(result)
    folder = _runLog(tensorboard_dir, run_dir)
    assert os.path.basename(folder) == f"MobileRobotGymEnv-v0_ground_truth_ppo2_{os.path.basename(run_dir)}"
    assert f"Tensorboard log: {folder}" in result.stdout
    scalars = _scalars(folder)
    # SB3's own values, at the env step of each dump, the same as progress.csv's
    rows = list(csv.DictReader(open(os.path.join(run_dir, "progress.csv"))))
    losses = [(int(row["time/total_timesteps"]), float(row["train/loss"])) for row in rows if row["train/loss"]]
    assert [step for step, _ in scalars["train/loss"]] == [step for step, _ in losses]
    assert [value for _, value in scalars["train/loss"]] == pytest.approx([value for _, value in losses], rel=1e-5)
    # every episode (250 steps each on MobileRobot) and the mean of the last ones, against env steps
    assert [step for step, _ in scalars["episode/length"]] == [250, 500]
    assert [value for _, value in scalars["episode/length"]] == [250.0, 250.0]
    assert len(scalars["episode/reward"]) == 2
    # the means of the last episodes with every dump (as progress.csv's rows), from the first episode's end on
    assert scalars["rollout/ep_len_mean"] == [(256, 250.0), (384, 250.0), (512, 250.0)]


@pytest.mark.parametrize("algo,extra", [("deepq", ["--learning-starts", "100", "--train-freq", "4"]),
                                        ("cma-es", ["--num-population", "2"]),
                                        ("ars", ["--num-population", "1", "--top-population", "1"]),
                                        ("acer", []), ("cem", ["--num-population", "2"])])
@pytest.mark.slow
def test_torch_and_evolution_algorithms_log_their_losses(tmp_path, algo: str, extra: list[str]) -> None:
    tensorboard_dir = tmp_path / "tb"
    run_dir = runFolder(runTrain("--algo", algo, *GT, "--num-timesteps", "2000", *extra, "--log-dir", tmp_path / "logs",
                                 "--tensorboard-log", tensorboard_dir))
    scalars = _scalars(_runLog(tensorboard_dir, run_dir))
    wanted = {"deepq": "train/loss", "cma-es": "train/mean_return", "ars": "train/mean_return", "acer": "train/loss_q",
              "cem": "train/mean_return"}[algo]
    assert wanted in scalars and "episode/reward" in scalars, sorted(scalars)
    assert "rollout/ep_rew_mean" in scalars and "time/total_timesteps" not in scalars, sorted(scalars)  # (as SB3's)
    rows = list(csv.DictReader(open(os.path.join(run_dir, "progress.csv"))))
    logged = [(int(row["time/total_timesteps"]), float(row[wanted])) for row in rows if row.get(wanted)]
    assert logged, rows
    if algo != "acer":  # logged through callback.logScalars: each progress.csv row holds the latest value logged
        in_tensorboard = [value for _, value in scalars[wanted]]
        assert all(any(value == pytest.approx(other, rel=1e-5) for other in in_tensorboard) for _, value in logged)
        assert logged[-1][1] == pytest.approx(in_tensorboard[-1], rel=1e-5)
    # SB3's episode means, as an SB3 algorithm's rows have them: the monitor's last 100 episodes that ended by the
    # row's step (cma-es's rows are written at the next generation: they took in that generation's episodes too)
    means = {int(row["time/total_timesteps"]): float(row["rollout/ep_rew_mean"]) for row in rows
             if row.get("rollout/ep_rew_mean") and row.get(wanted)}
    assert means, rows
    episodes = loadEpisodes(RunFolder(run_dir).monitor_dir)
    for step, value in means.items():
        ended = episodes["rewards"][episodes["timesteps"] <= step][-100:]
        assert value == pytest.approx(float(np.mean(ended))), (step, value, episodes)
    # and SB3's time columns: every training row has its speed and the seconds since the run started
    for row in rows:
        if row.get(wanted):
            assert int(row["time/fps"]) > 0 and int(row["time/time_elapsed"]) >= 0, row


def test_episode_means_reach_tensorboard_with_every_training_row(tmp_path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    logger = RunLogger(str(run_dir), str(tmp_path / "tb"))
    progress = logger.progressLogger()
    logger.logEpisodes(np.array([50]), [1.0], [50])  # a refresh: the monitor's episodes so far
    progress.record("train/loss", 0.5)  # a row of an algorithm written here: the means are added to it
    progress.dump(100)
    logger.logEpisodes(np.array([50, 150]), [1.0, 2.0], [50, 100])
    progress.record("train/loss", 0.4)
    progress.dump(200)
    progress.record("train/loss", 0.3)  # an SB3 row has means of its own: kept as they are
    progress.record("rollout/ep_rew_mean", 7.0)
    progress.record("rollout/ep_len_mean", 70.0)
    progress.dump(300)
    logger.close()
    scalars = _scalars(str(tmp_path / "tb"))
    assert scalars["rollout/ep_rew_mean"] == [(100, 1.0), (200, 1.5), (300, 7.0)]
    assert scalars["rollout/ep_len_mean"] == [(100, 50.0), (200, 75.0), (300, 70.0)]
    assert scalars["episode/reward"] == [(50, 1.0), (150, 2.0)]
    rows = list(csv.DictReader(open(run_dir / "progress.csv")))
    assert [(int(row["time/total_timesteps"]) if row.get("time/total_timesteps") else None, row["rollout/ep_rew_mean"])
            for row in rows] == [(None, "1.0"), (None, "1.5"), (None, "7.0")]
    # an algorithm that writes no training rows (random_agent): the means of each refresh's episodes
    logger = RunLogger(None, str(tmp_path / "tb_rowless"), training_rows=False)
    logger.logEpisodes(np.array([50]), [1.0], [50])
    logger.logEpisodes(np.array([50, 150, 250]), [1.0, 2.0, 3.0], [50, 100, 100])
    logger.close()
    assert _scalars(str(tmp_path / "tb_rowless"))["rollout/ep_rew_mean"] == [(50, 1.0), (250, 2.0)]


def test_resumed_log_keeps_the_checkpoints_step_once(tmp_path) -> None:
    # the stopped process: rows and episodes up to its checkpoint at 500 (a row at 500 included, logged before the
    # checkpoint at that step), then more after it, which the resumed process writes again
    stopped = RunLogger(None, str(tmp_path / "tb"))
    for step, loss in ((250, 0.5), (500, 0.4), (625, 9.0)):
        stopped.logEpisodes(np.array([250, 500][:step // 250]), [1.0, 2.0][:step // 250], [250, 250][:step // 250])
        stopped.progressLogger().record("train/loss", loss)
        stopped.progressLogger().dump(step)
    stopped.logEpisodes(np.array([250, 500, 750]), [1.0, 2.0, 9.0], [250, 250, 250])
    stopped.close()
    resumed = RunLogger(None, str(tmp_path / "tb"), purge_step=500)
    for step, loss in ((625, 0.3), (750, 0.2)):
        resumed.logEpisodes(np.array([250, 500, 750][:step // 250]), [1.0, 2.0, 3.0][:step // 250],
                            [250, 250, 250][:step // 250])
        resumed.progressLogger().record("train/loss", loss)
        resumed.progressLogger().dump(step)
    resumed.close()
    scalars = _scalars(str(tmp_path / "tb"))
    assert scalars["train/loss"] == [(250, 0.5), (500, pytest.approx(0.4)), (625, pytest.approx(0.3)),
                                     (750, pytest.approx(0.2))]
    assert scalars["episode/reward"] == [(250, 1.0), (500, 2.0), (750, 3.0)]
    assert [step for step, _ in scalars["rollout/ep_rew_mean"]] == [250, 500, 625, 750]


def _meanPoints(run_dir: str, tensorboard_dir) -> tuple[list, list]:
    """:return: (progress.csv's (step, rollout/ep_rew_mean) of each row that has one, tensorboard's points)"""
    rows = list(csv.DictReader(open(os.path.join(run_dir, "progress.csv"))))
    in_csv = [(int(row["time/total_timesteps"]), pytest.approx(float(row["rollout/ep_rew_mean"]), rel=1e-6))
              for row in rows if row.get("rollout/ep_rew_mean")]
    return in_csv, _scalars(_runLog(tensorboard_dir, run_dir))["rollout/ep_rew_mean"]


@pytest.mark.slow
def test_tensorboard_episode_means_are_progress_csvs_also_across_resume(tmp_path, monkeypatch) -> None:
    # one env: rollouts and the checkpoint at 500 end on episode ends (250 steps): the resumed run is the
    # uninterrupted one
    run_args = ["--algo", "ppo2", *GT, "--num-timesteps", "1000", "--n-steps", "125", "--batch-size", "25",
                "--n-epochs", "1", "--checkpoint-freq", "500", "--seed", "3", "--num-cpu", "1"]
    whole = trainHere(*run_args, "--log-dir", tmp_path / "whole", "--tensorboard-log", tmp_path / "tb_whole")
    in_csv, in_tensorboard = _meanPoints(whole, tmp_path / "tb_whole")
    assert [step for step, _ in in_csv] == [250 + 125 * index for index in range(7)]
    assert in_tensorboard == in_csv
    resumed = interruptThenResume(monkeypatch, str(tmp_path / "resumed"),
                                  [*run_args, "--tensorboard-log", str(tmp_path / "tb_resumed")], 600)
    # what the stopped process wrote after its checkpoint is hidden: the uninterrupted run's points, one per row,
    # the row at the checkpoint's own step, 500, included (written before the checkpoint, and not again)
    resumed_csv, resumed_tensorboard = _meanPoints(resumed, tmp_path / "tb_resumed")
    assert resumed_csv == in_csv
    assert resumed_tensorboard == in_tensorboard
    # every tag: the same steps, each once, and the same values (the speed aside); SB3's train/n_updates stays out
    # of tensorboard also when a checkpoint carried it to the resumed process's first row
    in_scalars, resumed_scalars = _scalars(_runLog(tmp_path / "tb_whole", whole)), _scalars(
        _runLog(tmp_path / "tb_resumed", resumed))
    assert sorted(resumed_scalars) == sorted(in_scalars) and "train/n_updates" not in in_scalars
    for tag, points in in_scalars.items():
        assert [step for step, _ in resumed_scalars[tag]] == [step for step, _ in points], tag
        if tag != "time/fps":
            assert resumed_scalars[tag] == points, tag


# A train command that dies by SIGKILL right after its first checkpoint is written (python -m from its folder).
KILLED_AFTER_CHECKPOINT = """
import os, signal, sys
sys.path.insert(0, {repo!r})
from rl_baselines.runs import train
from rl_baselines.runs.checkpoint_callbacks import CheckpointCallback

save = CheckpointCallback.save

def saveThenDie(self, *args, **kwargs):
    folder = save(self, *args, **kwargs)
    if folder is not None:
        os.kill(os.getpid(), signal.SIGKILL)
    return folder

CheckpointCallback.save = saveThenDie
sys.exit(train.main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_run_killed_after_a_checkpoint_keeps_its_log_up_to_it(tmp_path) -> None:
    # the checkpoint at 500 falls before any refresh (every 1000 steps) read the episodes ending at 250 and 500, and
    # between two flushes of the tensorboard writer: both reach tensorboard before the checkpoint, and the resumed
    # run (which leaves the episodes up to its checkpoint to the stopped process) has them once, without a gap
    (tmp_path / "killed_after_checkpoint.py").write_text(KILLED_AFTER_CHECKPOINT.format(repo=REPO))
    killed = runModule("killed_after_checkpoint", "--no-vis", "--no-progress", "--algo", "ppo2", *GT,
                       "--num-timesteps", "1000", "--n-steps", "125", "--batch-size", "25", "--n-epochs", "1",
                       "--checkpoint-freq", "500", "--seed", "3", "--num-cpu", "1", "--log-dir", tmp_path / "logs",
                       "--tensorboard-log", tmp_path / "tb", cwd=str(tmp_path))
    assert killed.returncode == -9, killed.stderr
    run_dir = runFolder(killed)
    folder = _runLog(tmp_path / "tb", run_dir)
    assert [step for step, _ in _scalars(folder)["episode/length"]] == [250, 500]
    # an event file is named by its second of creation, then host and pid, and read in name order: a resume within
    # the killed run's second (a forked command starts fast) would be read first by a lower pid: a second apart
    time.sleep(1.05)
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    scalars = _scalars(folder)
    assert [step for step, _ in scalars["episode/length"]] == [250, 500, 750, 1000]
    in_csv, in_tensorboard = _meanPoints(run_dir, tmp_path / "tb")
    assert [step for step, _ in in_csv] == [250 + 125 * index for index in range(7)]
    assert in_tensorboard == in_csv
    for tag, points in scalars.items():
        steps = [step for step, _ in points]
        assert steps == sorted(set(steps)), tag


def test_scalar_logger_reaches_every_output(tmp_path) -> None:
    class FakePlotter:
        def __init__(self) -> None:
            self.batches: list[dict] = []

        def scalars(self, points: dict) -> None:
            self.batches.append(points)

    run_dir, tensorboard_dir = tmp_path / "run", tmp_path / "tb" / "run"
    run_dir.mkdir()
    plotter = FakePlotter()
    logger = RunLogger(str(run_dir), str(tensorboard_dir), plotter)
    logger.logScalars(100, {"loss/policy": 0.5, "loss/value": 2})
    logger.logScalars(200, {"loss/policy": 0.25, "eval/mean_reward": 7.5})
    logger.dumpPending()  # the callback's refresh: no algorithm wrote a progress.csv row
    logger.close()
    rows = list(csv.DictReader(open(run_dir / "progress.csv")))
    # loss/policy logged again before any row: the first values got their own row, none was lost
    assert rows == [{"loss/policy": "0.5", "loss/value": "2.0", "time/total_timesteps": "100", "eval/mean_reward": ""},
                    {"loss/policy": "0.25", "loss/value": "", "time/total_timesteps": "200",
                     "eval/mean_reward": "7.5"}]
    scalars = _scalars(str(tensorboard_dir))
    assert scalars["loss/policy"] == [(100, 0.5), (200, 0.25)] and scalars["eval/mean_reward"] == [(200, 7.5)]
    assert "time/total_timesteps" not in scalars  # progress.csv's step column only
    sent = {tag: points for batch in plotter.batches for tag, points in batch.items()}
    assert sent["loss/value"] == [(100, 2.0)] and sent["eval/mean_reward"] == [(200, 7.5)]
    # a plain function callback has no logger: nothing happens, nothing fails
    logScalars(lambda _locals, _globals: True, 10, {"loss/policy": 1.0})


def test_visdom_gets_one_window_per_tag_group(visdom_port) -> None:
    port = visdom_port
    plotter = VisdomPlotter(port=port, env_name="scalars_test", title="t")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plotter.scalars({"loss/policy": [(10, 1.0), (20, 0.5)], "loss/value": [(10, 3.0)]})
        plotter.scalars({"loss/policy": [(30, 0.25)]})
    window = json.loads(_client(port).get_window_data("scalars_test_scalars_loss", "scalars_test"))
    traces = {trace["name"]: (trace["x"], trace["y"]) for trace in window["content"]["data"]}
    assert traces == {"loss/policy": ([10, 20, 30], [1.0, 0.5, 0.25]), "loss/value": ([10], [3.0])}


def test_missing_tensorboard_or_bad_folder_is_one_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # as if the package were not installed
    with pytest.raises(UsageError, match="needs the tensorboard package: pip install tensorboard"):
        checkTensorboard(str(tmp_path / "tb"))
    monkeypatch.undo()
    (tmp_path / "file").write_text("x")
    log_dir = tmp_path / "logs"
    result = runModule("rl_baselines.train", *GT, "--log-dir", log_dir, "--no-vis", "--tensorboard-log",
                       tmp_path / "file" / "tb")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "--tensorboard-log" in result.stderr and not log_dir.exists()


def _docsExample() -> type:
    """:return: the class of docs/plugins.md's "Logging your own scalars" example"""
    namespace: dict = {}
    exec(docsExample("## Logging your own scalars"), namespace)
    return namespace["LoggingAgent"]


def test_the_plugin_docs_example_logs_through_the_callback(tmp_path) -> None:
    agent_class = _docsExample()
    args = baseParser().parse_args([*GT, "--num-timesteps", "1000", "--num-cpu", "1"])  # (a plugin's default envs)
    run_dir = tmp_path / "run"
    args.monitor_dir = str(run_dir / "monitor")
    os.makedirs(args.monitor_dir)
    agent = agent_class()
    callback = TrainingCallback(agent, "logging_agent", str(run_dir), total_timesteps=1000, progress=False,
                                run_logger=RunLogger(str(run_dir), str(tmp_path / "tb")))
    settings = trainSettings(args)  # plugin API v2: the env and settings as the train command gives them
    trainAlgorithm(agent, settings, 1000, callback)
    callback.close(agent.num_timesteps)
    rows = list(csv.DictReader(open(run_dir / "progress.csv")))
    assert [row["train/updates"] for row in rows] == ["500.0", "500.0"]
    assert [step for step, _ in _scalars(str(tmp_path / "tb"))["train/loss"]] == [500, 1000]
    agent.save(str(run_dir / "logging_agent_model.json"))  # the train command's final save (it raised before)
    assert agent_class.load(str(run_dir / "logging_agent_model.json")).num_timesteps == 1000
    # with a plain function callback it trains all the same
    plain = agent_class()
    trainAlgorithm(plain, settings.replace(monitor_dir=None), 1000, lambda _locals, _globals: True)
    assert plain.num_timesteps == 1000


def test_a_scalar_row_holds_only_its_own_steps_scalars(tmp_path) -> None:
    logger = RunLogger(str(tmp_path))
    logger.startClock(0)
    progress = logger.progressLogger()
    for loss in (1.0, 3.0):  # an algorithm's running mean for its next row
        progress.record_mean("train/loss", loss)
    progress.record("train/lr", 0.1)
    logger.logScalars(300, {"eval/mean_reward": 5.0})  # an evaluation, dumped at once
    logger.dumpPending(300)
    logger.logScalars(400, {"train/mean_return": 2.0})  # a generation, not yet dumped...
    logger.logScalars(450, {"eval/mean_reward": 6.0})  # ... when an evaluation comes at a later step
    logger.dumpPending(450)
    progress.record_mean("train/loss", 5.0)
    progress.dump(500)  # the algorithm's own row
    logger.close()
    rows = [{name: value for name, value in row.items() if value}
            for row in csv.DictReader(open(tmp_path / "progress.csv"))]
    assert [row["time/total_timesteps"] for row in rows[:3]] == ["300", "400", "450"]
    assert {name for name in rows[0]} == {"time/total_timesteps", "eval/mean_reward"}
    assert rows[1]["train/mean_return"] == "2.0" and "eval/mean_reward" not in rows[1]
    assert rows[2] == {"time/total_timesteps": "450", "eval/mean_reward": "6.0"}
    # the algorithm's values all reached its row, the mean over its three updates
    assert rows[3]["train/loss"] == "3.0" and rows[3]["train/lr"] == "0.1"
    assert "time/time_elapsed" in rows[1] and "time/time_elapsed" in rows[3]


def test_new_columns_of_progress_csv_are_added_in_sorted_order(tmp_path) -> None:
    """SB3's CSV writer adds a row's new keys as a set (an order that follows the process's string hashing): two runs
    of one seed wrote their columns in other orders."""
    logger = progressLogger(str(tmp_path))
    for name in ("time/zeta", "rollout/b", "train/a", "rollout/a"):
        logger.record(name, 1.0)
    logger.dump(1)
    logger.record("eval/z", 2.0)
    logger.record("eval/m", 2.0)
    logger.dump(2)
    logger.close()
    header = (tmp_path / "progress.csv").read_text().splitlines()[0].split(",")
    assert header == ["rollout/a", "rollout/b", "time/zeta", "train/a", "eval/m", "eval/z"]
