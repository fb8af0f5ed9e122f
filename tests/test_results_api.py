"""The Python API of sweeps and results: rl_baselines.api.runSweep (the pipeline in-process) and replay.api
(gather_results' table, a run's curve): the commands' rows, checks and messages, nothing written on a refusal."""
from __future__ import annotations

import csv
import json
import math
import os
import pathlib
import re
import signal

import numpy as np
import pytest

import replay
import rl_baselines
from replay import api as results_api
from replay import gather_results
from rl_baselines import api
from rl_baselines.sweeps import executors, pipeline
from srl_toolbox.cli import CLIParser, runCommand
from srl_toolbox.plots import movingAverage
from srl_toolbox.settings import keywordArguments

ENV = "MobileRobotGymEnv-v0"
SWEEP = {"algo": "ppo2", "env": ENV, "srl_model": "ground_truth", "num_iteration": 2, "num_timesteps": 1024,
         "hyperparam": ["n_steps:64"]}  # (4 envs: an episode each)


def commandError(main, argv: list[str], capsys: pytest.CaptureFixture) -> str:
    """:return: the message the command prints after ``error:`` for ``argv`` (run in this process, exit code 2)"""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        runCommand(main, argv)
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0][len("error: "):]


def fakeRun(run_dir: str, algo: str, seed: int, rewards: list[float], length: int = 100) -> str:
    """A finished run folder as train leaves it, fabricated: args.json, one monitor file, done.json."""
    os.makedirs(os.path.join(run_dir, "monitor"))
    with open(os.path.join(run_dir, "args.json"), "w") as handle:
        json.dump({"env": ENV, "srl_model": "ground_truth", "algo": algo, "seed": seed,
                   "num_timesteps": length * len(rewards)}, handle)
    with open(os.path.join(run_dir, "monitor", "0.monitor.csv"), "w") as handle:
        handle.write('#{"t_start": 1700000000.0, "env_id": "E"}\nr,l,t\n')
        handle.writelines(f"{reward},{length},{index + 1.0}\n" for index, reward in enumerate(rewards))
    with open(os.path.join(run_dir, "done.json"), "w") as handle:
        handle.write("{}\n")
    return run_dir


@pytest.fixture
def fakeRuns(tmp_path) -> str:
    """Two methods (ppo2, a2c) of two seeds each, 6 episodes of 100 steps."""
    log_dir = tmp_path / "runs"
    for algo, offset in (("ppo2", 0.0), ("a2c", 5.0)):
        for seed in (0, 1):
            fakeRun(str(log_dir / algo / f"seed{seed}"), algo, seed, [offset + seed + step for step in range(6)])
    return str(log_dir)


def csvText(value) -> str:
    """:return: a row's value as results.csv writes it"""
    if value is None or isinstance(value, float) and math.isnan(value):
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def assertCommandsTable(log_dir: str, flags: dict, argv: list[str], tmp_path, capsys) -> None:
    """gatherResults(log_dir, **flags) gives the rows of the command's results.csv and the tables it prints, writes
    nothing, and with output_dir the command's two files, byte for byte."""
    command_dir, api_dir = tmp_path / "command", tmp_path / "api"
    before = sorted(os.listdir(log_dir))
    capsys.readouterr()
    assert gather_results.main(["--log-dir", log_dir, "--output-dir", str(command_dir), *argv]) == 0
    printed = capsys.readouterr().out
    table = replay.gatherResults(log_dir, **flags)
    assert sorted(os.listdir(log_dir)) == before and table.files == ()  # nothing written
    with open(command_dir / "results.csv", encoding="utf-8", newline="") as handle:
        lines = list(csv.reader(handle))
    assert lines[0] == list(table.rows[0])
    assert lines[1:] == [[csvText(value) for value in row.values()] for row in table.rows]
    assert printed.startswith(table.markdown)
    written = replay.gatherResults(log_dir, output_dir=api_dir, **flags)
    assert written.files == (str(api_dir / "results.csv"), str(api_dir / "results.md"))
    for name in ("results.csv", "results.md"):
        assert (api_dir / name).read_bytes() == (command_dir / name).read_bytes()


def test_gather_results_gives_the_commands_rows(fakeRuns, tmp_path, capsys) -> None:
    flags = {"timestep_budget": np.array([300]), "episode_window": 2, "threshold": 3.5, "welch_test": "ppo2"}
    assertCommandsTable(fakeRuns, flags, ["--timestep-budget", "300", "--episode-window", "2", "--threshold", "3.5",
                                          "--welch-test", "ppo2"], tmp_path, capsys)
    table = replay.gatherResults(fakeRuns, **flags)
    assert [(row["budget"], row["algo"], row["runs"]) for row in table.rows] == [
        ("final", "a2c", 2), ("final", "ppo2", 2), (300, "a2c", 2), (300, "ppo2", 2)]
    final_a2c = table.rows[0]
    assert final_a2c["mean_reward"] == pytest.approx(np.mean([9.5, 10.5])) and final_a2c["welch_vs"] == "ppo2"
    assert len(table.run_dirs) == 4 and all(os.path.isdir(folder) for folder in table.run_dirs)


@pytest.mark.parametrize(("flags", "argv"), [
    ({"episode_window": 0}, ["--episode-window", "0"]),
    ({"episode_window": 2.5}, ["--episode-window", "2.5"]),
    ({"timestep_budget": [100, -1]}, ["--timestep-budget", "100", "-1"]),
    ({"threshold": 1.0, "threshold_fraction": 0.5}, ["--threshold", "1.0", "--threshold-fraction", "0.5"]),
    ({"threshold_fraction": 2}, ["--threshold-fraction", "2"]),
    ({"welch_test": "nope"}, ["--welch-test", "nope"]),
    ({"group_by": ["no_such_key"]}, ["--group-by", "no_such_key"]),
])
def test_gather_results_refuses_what_the_command_refuses_and_writes_nothing(fakeRuns, tmp_path, capsys, flags,
                                                                            argv) -> None:
    out = tmp_path / "out"
    expected = commandError(gather_results.main, ["--log-dir", fakeRuns, "--output-dir", str(out), *argv], capsys)
    before = sorted(os.listdir(fakeRuns))
    for output_dir in (None, out):
        with pytest.raises(replay.UsageError) as error:
            replay.gatherResults(fakeRuns, output_dir=output_dir, **flags)
        assert str(error.value) == expected
    assert not out.exists() and sorted(os.listdir(fakeRuns)) == before


@pytest.mark.parametrize(("call", "message"), [
    (lambda logs: replay.gatherResults(logs, episode_windows=2),
     "unrecognized keyword episode_windows=2: the keywords are the long flags of python -m replay.gather_results "
     "--help with _ for - (did you mean episode_window?)"),
    (lambda logs: replay.gatherResults(logs, training_rewards="yes"), "training_rewards 'yes' must be True or False"),
    (lambda logs: replay.gatherResults(logs, welch_test=3), "argument --welch-test: welch_test 3 (int) must be a "
                                                            "string or a path"),
    (lambda logs: replay.gatherResults(os.path.join(logs, "none")), "is not a folder"),
    (lambda logs: replay.runCurve(logs), "is not a run folder (a folder with args.json and monitor/"),
    (lambda logs: replay.runCurve(pathlib.Path("no-such-run")), "run_dir 'no-such-run' is not a run folder (a"),
    (lambda logs: replay.runCurve(api.TrainResult(0, os.path.join(logs, "a2c", "seed1"), None, 0, math.nan, None)),
     "run_dir must be a run folder's path (a string or a path), not a TrainResult: give its run_dir"),
    (lambda logs: replay.runCurve(os.path.join(logs, "ppo2", "seed0"), episode_window=0),
     "episode_window 0 must be a positive integer"),
])
def test_results_api_keywords_are_one_line_errors(fakeRuns, call, message) -> None:
    before = sorted(os.listdir(fakeRuns))
    with pytest.raises(replay.UsageError) as error:
        call(fakeRuns)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert sorted(os.listdir(fakeRuns)) == before


def test_run_curve_reads_the_runs_episodes(fakeRuns) -> None:
    curve = replay.runCurve(os.path.join(fakeRuns, "a2c", "seed1"), episode_window=np.int64(3))
    rewards = [6.0 + step for step in range(6)]
    np.testing.assert_array_equal(curve.timesteps, 100 * np.arange(1, 7))
    np.testing.assert_array_equal(curve.episode_rewards, rewards)
    np.testing.assert_array_equal(curve.episode_lengths, [100] * 6)
    np.testing.assert_allclose(curve.smoothed, movingAverage(rewards, 3))
    assert curve.evaluation_timesteps is None and curve.evaluation_rewards is None
    assert curve.finished and curve.args["algo"] == "a2c"


def test_a_sweep_returns_its_runs_and_its_results(tmp_path, capsys) -> None:
    log_dir = tmp_path / "sweep"
    result = api.runSweep(**SWEEP, log_dir=log_dir)
    assert result.exit_code == 0 and result.log_dir == os.path.dirname(result.state_file) == str(log_dir)
    assert [(run["seed"], run["state"]) for run in result.runs] == [(0, "done"), (1, "done")]
    assert len(result.run_dirs) == 2 and all(os.path.isfile(os.path.join(folder, "ppo2_model.zip"))
                                             for folder in result.run_dirs)
    with open(result.state_file, encoding="utf-8") as handle:
        state = json.load(handle)
    assert state["runs"] == result.runs and "--no-vis" in state["command"] and "--no-progress" in state["command"]
    again = api.runSweep(**SWEEP, log_dir=str(log_dir))  # the same call: the finished runs are kept
    assert [run["state"] for run in again.runs] == ["skipped", "skipped"] and again.run_dirs == result.run_dirs
    # the command's table of the sweep's folder
    assertCommandsTable(str(log_dir), {"episode_window": 1}, ["--episode-window", "1"], tmp_path, capsys)
    (row,) = replay.gatherResults(log_dir, episode_window=1).rows
    assert (row["algo"], row["runs"], sorted(row["seeds"].split())) == ("ppo2", 2, ["0", "1"])
    assert sorted(replay.gatherResults(log_dir).run_dirs) == sorted(result.run_dirs)


@pytest.mark.parametrize(("keywords", "argv"), [
    ({"algo": "ppo3"}, ["--algo", "ppo3"]),
    ({"num_iteration": 0}, ["--num-iteration", "0"]),
    ({"num_timesteeps": 256}, ["--num-timesteeps", "256"]),
    ({"algo": "ppo2", "ortho_init": "false"}, ["--algo", "ppo2", "--ortho-init", "false"]),
    ({"executor": "slurm"}, ["--executor", "slurm"]),
    ({"num_gpus": 1}, ["--num-gpus", "1"]),
    ({"extra": ["--num-cpu", "0"]}, ["--num-cpu", "0"]),
])
def test_a_sweep_refuses_what_the_command_refuses_and_writes_nothing(tmp_path, capsys, keywords, argv) -> None:
    log_dir = tmp_path / "logs"
    expected = commandError(pipeline.main, ["--log-dir", str(log_dir), "--no-vis", "--no-progress", *argv], capsys)
    assert "num_timesteeps" not in keywords or expected.endswith("did you mean --num-timesteps?)")
    with pytest.raises(api.UsageError) as error:
        api.runSweep(log_dir=log_dir, **keywords)
    assert str(error.value) == expected
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(("keywords", "message"), [
    ({"vis": "no"}, "vis 'no' must be True or False"),
    ({"no_vis": True}, "unrecognized keyword no_vis=True: the API's keyword is vis=True or False"),
    ({"force": "yes"}, "force 'yes' must be True or False"),
    ({"log_dir": 5}, "argument --log-dir: log_dir 5 (int) must be a string or a path"),
    ({"extra": "--num-cpu 2"}, "extra '--num-cpu 2' must be a list of command-line strings"),
    ({"extra": ["--help"]}, "extra's --help: the command prints and ends the process there"),
])
def test_sweep_keywords_of_the_wrong_kind_are_one_line_errors(tmp_path, monkeypatch, keywords, message) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(api.UsageError, match=re.escape(message)):
        api.runSweep(**keywords)
    assert os.listdir(tmp_path) == []


def test_an_interrupted_sweep_is_a_keyboard_interrupt_once_the_pipeline_stopped(tmp_path, monkeypatch) -> None:
    submitted = []

    def interruptedWait(self, timeout):
        raise KeyboardInterrupt  # a Ctrl-C while the sweep waits for its runs

    monkeypatch.setattr(executors.LocalExecutor, "submit", lambda self, spec: submitted.append(spec))
    monkeypatch.setattr(executors.LocalExecutor, "wait", interruptedWait)
    with pytest.raises(api.SweepInterrupted) as stopped:
        api.runSweep(**SWEEP, log_dir=tmp_path, workers=1)
    assert isinstance(stopped.value, KeyboardInterrupt)
    result = stopped.value.result
    assert result.exit_code == 130 and len(result.runs) == 2 and submitted
    with open(result.state_file, encoding="utf-8") as handle:
        assert json.load(handle)["runs"] == result.runs  # recorded by the pipeline's own stop handling
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back by the pipeline


@pytest.mark.parametrize("caller", ["handler", "ignored"])
def test_a_sweep_keeps_the_callers_own_sigterm_handling(tmp_path, monkeypatch, caller) -> None:
    """A SIGTERM handler of the caller's was bypassed during runSweep (and an ignored SIGTERM stopped the sweep):
    the pipeline put its own in place whatever the caller had. It is kept now, as a SIGINT handler of the caller's."""
    called, survived = [], []
    own = (lambda signum, frame: called.append(signum)) if caller == "handler" else signal.SIG_IGN

    def waitSigterm(self, timeout):
        os.kill(os.getpid(), signal.SIGTERM)  # handled (or ignored) here, as the caller wants
        survived.append(signal.getsignal(signal.SIGTERM))
        raise KeyboardInterrupt  # then a Ctrl-C ends the sweep

    monkeypatch.setattr(executors.LocalExecutor, "submit", lambda self, spec: None)
    monkeypatch.setattr(executors.LocalExecutor, "wait", waitSigterm)
    previous = signal.signal(signal.SIGTERM, own)
    try:
        with pytest.raises(api.SweepInterrupted):
            api.runSweep(**SWEEP, log_dir=tmp_path, workers=1)
        assert survived == [own] and signal.getsignal(signal.SIGTERM) is own
        assert called == ([signal.SIGTERM] if caller == "handler" else [])
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_keywords_become_the_commands_words_through_its_parser() -> None:
    """The one conversion of srl_models.api.prepareSRLModels and runSweep: switches by what they store, a
    repeatable flag once per item, several values as words, None and False left out, others passed on or refused."""
    parser = CLIParser(prog="p")
    parser.add_argument("--vis", action="store_true")
    parser.add_argument("--no-vis", dest="vis", action="store_false")
    parser.add_argument("--no-save", dest="save", action="store_false")
    parser.add_argument("--algo-args", action="append", default=[])
    parser.add_argument("--img-shape", type=int, nargs=3)
    parser.add_argument("-n", "--num", type=int)
    words = keywordArguments(parser, {"vis": True, "save": False, "algo_args": ["a:--x 1", "b:--y"],
                                      "img_shape": np.array([3, 48, 48]), "num": None}, "p")
    assert words == ["--vis", "--no-save", "--algo-args", "a:--x 1", "--algo-args", "b:--y", "--img-shape", "3", "48",
                     "48"]
    assert keywordArguments(parser, {"vis": False, "save": True, "num": False}, "p") == []
    assert keywordArguments(parser, {"num": 2, "gamma": 0.9, "flag": True, "off": False}, "p",
                            passed_on=True) == ["--num", "2", "--gamma", "0.9", "--flag"]
    with pytest.raises(api.UsageError, match=r"^unrecognized keyword nm=2: .* \(did you mean num\?\)$"):
        keywordArguments(parser, {"nm": 2}, "p")
    with pytest.raises(api.UsageError, match=r"^argument --num: num \[2, 3\] \(list\) must be one value$"):
        keywordArguments(parser, {"num": [2, 3]}, "p")
    with pytest.raises(api.UsageError, match=r"^argument --algo-args: algo_args 5 \(int\) must be a string or a path$"):
        keywordArguments(parser, {"algo_args": [5]}, "p")


def test_the_packages_export_the_new_names_lazily() -> None:
    assert set(replay._API_NAMES) == set(results_api.__all__)
    assert replay.gatherResults is results_api.gatherResults and "runCurve" in dir(replay)
    assert rl_baselines.runSweep is api.runSweep and rl_baselines.SweepInterrupted is api.SweepInterrupted
    with pytest.raises(AttributeError):
        replay.noSuchName  # noqa: B018
