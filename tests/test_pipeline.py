"""rl_baselines.pipeline: the up-front check, a local sweep with a killed run and its resume, live visdom curves, two
sweeps sharing their runs (with their tensorboard logs), the summary and the progress bar (grid expansion and run
ids: tests/test_pipeline_run_ids.py; Ray: tests/test_pipeline_ray.py)."""
from __future__ import annotations

import glob
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import visdom
from conftest import REPO, parentPid, runModule
from sweep_runs import (
    ENVS,
    SRL_MODELS,
    SWEEP_TIMEOUT_S,
    TRAIN_FLAGS,
    Sweep,
    checkFinishedRun,
    trainPid,
    waitForFile,
)
from test_run_logging import _scalars

from replay.visdom_server import findFreePort
from rl_baselines.core.checkpointing import listCheckpoints
from rl_baselines.runs.monitor_files import loadEpisodes
from rl_baselines.runs.resume import runStatus
from rl_baselines.sweeps import executors, pipeline, run_attempts
from rl_baselines.sweeps.plots import SweepPlotter
from rl_baselines.sweeps.run_attempts import DONE_FILE, FAILED_FILE, PID_FILE, finishedFolder, runAttempts
from rl_baselines.sweeps.sweep import (
    checkGrid,
    expandGrid,
    parseAlgoArgs,
)
from srl_toolbox import terminal
from srl_toolbox.cli import UsageError
from srl_toolbox.plots import movingAverage, quietVisdom

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

# The local sweep's envs: one, its runs differing in SRL model and seed (the grid over envs is checked by
# tests/test_pipeline_run_ids.py; the Ray sweep runs the other env).
SWEEP_ENVS = ENVS[:1]


def _sweepArgs(log_dir: str, *extra: str) -> list[str]:
    return ["--algo", "ppo2", "--env", *SWEEP_ENVS, "--srl-model", *SRL_MODELS, "--num-iteration", "2", "--seed", "0",
            "--workers", "2", "--log-dir", log_dir, "--no-progress", *TRAIN_FLAGS, *extra]


def test_check_lists_every_bad_combination(tmp_path) -> None:
    with pytest.raises(UsageError) as info:
        checkGrid(["ppo2", "nope", "ddpg"], ["MobileRobotGymEnv-v0", "NoSuchEnv-v0"], ["ground_truth", "joints"],
                  ["--num-timesteps", "300"])
    message = str(info.value)
    assert "\n" not in message
    # 3 x 2 x 2 combinations, only ppo2 x MobileRobotGymEnv-v0 x ground_truth is good
    assert message.startswith("11 bad combinations (algo x env x srl-model): ")
    assert "nope x * x * (unknown --algo 'nope'; valid choices: " in message
    assert "ppo2|ddpg x NoSuchEnv-v0 x * (unknown --env 'NoSuchEnv-v0'" in message
    assert "ppo2|ddpg x MobileRobotGymEnv-v0 x joints (unknown --srl-model 'joints'" in message
    assert "ddpg x MobileRobotGymEnv-v0 x ground_truth (--algo ddpg does not support discrete actions" in message

    # A learned SRL model that no config file entry gives for the env
    config = tmp_path / "srl_models.yaml"
    config.write_text("{}\n")
    with pytest.raises(UsageError) as info:
        checkGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth", "vae"], ["--srl-config-file", str(config)])
    assert str(info.value).startswith("1 bad combination (algo x env x srl-model): ppo2 x MobileRobotGymEnv-v0 x vae (")

    # Train flags are checked for each combination: this image is too small for the CNN of raw_pixels only
    with pytest.raises(UsageError, match=r"^1 bad combination .*: ppo2 x MobileRobot1DGymEnv-v0 x raw_pixels \("):
        checkGrid(["ppo2"], ["MobileRobot1DGymEnv-v0"], SRL_MODELS, ["--img-shape", "3", "20", "20"])
    with pytest.raises(UsageError, match="unrecognized arguments: --no-such-flag"):
        checkGrid(["ppo2"], ["MobileRobot1DGymEnv-v0"], ["ground_truth"], ["--no-such-flag"])
    with pytest.raises(UsageError, match="--tag"):  # the sweep names the run folders
        checkGrid(["ppo2"], ["MobileRobot1DGymEnv-v0"], ["ground_truth"], ["--tag", "mine"])
    checkGrid(["ppo2", "a2c"], ENVS, SRL_MODELS, TRAIN_FLAGS)  # a good grid passes


def test_a_flag_idle_for_some_runs_is_one_warning_naming_them() -> None:
    """--img-shape does nothing for ground truth: over ground truth and raw pixels the one warning says which runs
    ignore it (it did not, reading as if the whole sweep did); over ground truth alone it is train's own line."""
    flags = ["--img-shape", "3", "36", "36"]
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        checkGrid(["ppo2", "a2c"], ["MobileRobotGymEnv-v0"], ["ground_truth", "raw_pixels"], flags)
    [message] = [str(record.message) for record in records if "--img-shape" in str(record.message)]
    assert message.endswith("does nothing for an observation that is not camera images (--srl-model raw_pixels or a "
                            "learned model) [for 2 of 4 combinations (algo x env x srl-model): * x * x "
                            "ground_truth]")
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        checkGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], flags)
    [message] = [str(record.message) for record in records if "--img-shape" in str(record.message)]
    assert message.endswith("(--srl-model raw_pixels or a learned model)")


def test_bad_flags_are_one_line_errors(tmp_path, monkeypatch) -> None:
    log_dir = str(tmp_path / "logs")
    base = ["--algo", "ppo2", "--env", ENVS[1], "--srl-model", "ground_truth", "--log-dir", log_dir, "--no-vis"]
    with pytest.raises(UsageError) as refused:
        pipeline.main([*base, "--ray-address", "127.0.0.1:6379"])
    assert str(refused.value) == "--ray-address needs --executor ray (the local executor runs on this machine only)"
    with pytest.raises(UsageError) as refused:
        pipeline.main([*base, "--num-gpus", "1"])
    assert str(refused.value) == "--num-gpus needs --executor ray (local runs see every GPU of the machine)"
    with pytest.raises(UsageError, match="--ray-address 'nohost' is not HOST:PORT"):
        pipeline.main([*base, "--executor", "ray", "--ray-address", "nohost"])
    with pytest.raises(UsageError, match="invalid choice: 'slurm'"):
        pipeline.main([*base, "--executor", "slurm"])
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(UsageError, match=r"--executor ray needs Ray.*pip install \"srl-toolbox\[ray\]\""):
        pipeline.main([*base, "--executor", "ray"])
    with pytest.raises(UsageError, match="--resume"):  # the sweep resumes its runs itself
        pipeline.main([*base, "--resume", str(tmp_path)])
    # given bare (as a resume flag is elsewhere), it was train's "argument --resume: expected one argument"
    for flag in ("--resume", "--run-folder", "--tag"):
        with pytest.raises(UsageError, match=rf"^{flag} \([^)]*\) cannot be passed$"):
            pipeline.main([*base, flag])
    assert not os.path.exists(log_dir)

    # As a command: one line, exit code 2, nothing written
    result = runModule("rl_baselines.pipeline", *base, "--algo", "ppo2", "nope", "--num-timesteps", "300")
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(errors) == 1 and errors[0].startswith("error: 1 bad combination (algo x env x srl-model): nope x ")
    assert not os.path.exists(log_dir)
    # a flag that does nothing for the runs (a warning) and a refusal: the refusal alone
    result = runModule("rl_baselines.pipeline", *base, "--algo", "ppo2", "nope", "--num-timesteps", "300", "--fpv")
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: 1 bad combination (algo x env x srl-model): nope x ")


def _visdomTraces(port: int, env_name: str, win: str) -> dict[str, dict]:
    with quietVisdom():
        client = visdom.Visdom(server="http://127.0.0.1", port=port, use_incoming_socket=False, raise_exceptions=True)
        window = json.loads(client.get_window_data(win, env_name))
    return {trace["name"]: trace for trace in window["content"]["data"]}


def test_local_sweep_survives_a_killed_run_and_resumes(tmp_path, visdom_port) -> None:
    log_dir = str(tmp_path / "logs")
    specs = expandGrid(["ppo2"], SWEEP_ENVS, SRL_MODELS, [0, 1], TRAIN_FLAGS, log_dir, cwd=REPO)
    victim = specs[-1]  # started last: the others run while it is killed
    sweep = Sweep(*_sweepArgs(log_dir, "--no-vis"))
    sweep.start()
    try:
        pid_file = waitForFile(os.path.join(victim.parent, f"*_{victim.run_id}", PID_FILE), sweep, SWEEP_TIMEOUT_S)
        os.kill(trainPid(pid_file), signal.SIGKILL)
    finally:
        first = sweep.finish()
    stdout, stderr = first.stdout, first.stderr
    assert first.returncode == 1, stdout + stderr
    assert f"failed: {victim.label} [{victim.run_id}] exit code -9, log " in stdout
    assert "Sweep: 3/4 runs finished (0 earlier), 1 failed" in stdout
    (failed_folder,) = runAttempts(victim)
    failure = json.load(open(os.path.join(failed_folder, FAILED_FILE)))
    assert failure["returncode"] == -9 and failure["state"] == "failed"
    assert failure["log"] == os.path.join(failed_folder, "train.log") and os.path.isfile(failure["log"])
    assert finishedFolder(victim) is None
    done = {spec.run_id: checkFinishedRun(spec) for spec in specs if spec is not victim}
    done_times = {run_id: os.stat(os.path.join(folder, DONE_FILE)).st_mtime_ns for run_id, folder in done.items()}
    (state_file,) = glob.glob(os.path.join(log_dir, "sweep_*.json"))
    state = json.load(open(state_file))
    assert state["counts"] == {"pending": 0, "running": 0, "done": 3, "skipped": 0, "failed": 1, "stopped": 0}
    assert {run["run_id"]: run["returncode"] for run in state["runs"]}[victim.run_id] == -9

    # The same command again does only the failed run; the live plots show every run's curve. Killed this early,
    # the run has no checkpoint: it starts again from step 0, in the same folder once train had written its args.
    continued = runStatus(failed_folder) == "restart"
    result = runModule("rl_baselines.pipeline", *_sweepArgs(log_dir, "--port", str(visdom_port)),
                       timeout=SWEEP_TIMEOUT_S)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("4 runs (1 algo x 1 env x 2 SRL model x 2 seeds); 3 already done, 1 to run"
            + (" (1 continues where it stopped)" if continued else "") + " on 1 local worker") in result.stdout
    assert f"[1/1] done: {victim.label} [{victim.run_id}]" in result.stdout
    assert "visdom server" not in result.stderr, result.stderr  # it was reachable: no warning
    assert "other train settings" not in result.stderr  # the finished runs are this command's
    for spec in specs:
        checkFinishedRun(spec)
    assert (runAttempts(victim) == [failed_folder]) if continued else (
        len(runAttempts(victim)) == 1 and not os.path.exists(failed_folder))
    assert {run_id: os.stat(os.path.join(folder, DONE_FILE)).st_mtime_ns for run_id, folder in done.items()} == \
        done_times
    assert json.load(open(state_file))["counts"] == {"pending": 0, "running": 0, "done": 1, "skipped": 3,
                                                     "failed": 0, "stopped": 0}

    (env_line,) = [line for line in result.stdout.splitlines() if line.startswith("Live plots: ")]
    env_name = env_line.rpartition("/env/")[2]
    windows = SweepPlotter(visdom_port, env_name)
    for env in SWEEP_ENVS:
        for srl_model in SRL_MODELS:
            traces = _visdomTraces(visdom_port, env_name, windows.windowId(env, srl_model))
            assert set(traces) == {"ppo2 seed0", "ppo2 seed1"}
            for spec in specs:
                if (spec.env, spec.srl_model) == (env, srl_model):
                    episodes = loadEpisodes(os.path.join(finishedFolder(spec), "monitor"))
                    trace = traces[f"ppo2 seed{spec.seed}"]
                    np.testing.assert_allclose(trace["x"], episodes["timesteps"])
                    np.testing.assert_allclose(trace["y"], movingAverage(episodes["rewards"], 40))


def test_two_pipelines_on_one_folder_share_the_runs(tmp_path) -> None:
    # The same command started twice at once on one --log-dir: each run is claimed by one of them and done once, the
    # other records its outcome; no run folder gets the other's output, and the state file says every run finished.
    # Each run writes its --tensorboard-log sub folder, named after its run folder.
    log_dir, tensorboard_dir = str(tmp_path / "logs"), tmp_path / "tb"
    flags = ["--num-timesteps", "300", "--random-target", "--hyperparam", "n_steps:32"]  # updates of 4 x 32 steps
    args = ["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "--num-iteration", "2", "--seed", "0",
            "--workers", "1", "--log-dir", log_dir, "--no-vis", "--no-progress", *flags, "--tensorboard-log",
            str(tensorboard_dir)]
    specs = expandGrid(["ppo2"], ENVS[:1], ["ground_truth"], [0, 1], [*flags, *args[-2:]], log_dir, cwd=REPO)
    outputs = [open(tmp_path / f"out{i}.txt", "w+") for i in range(2)]
    sweeps = [subprocess.Popen([sys.executable, "-m", "rl_baselines.pipeline", *args], stdout=out,
                               stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1"})
              for out in outputs]
    try:
        codes = [sweep.wait(timeout=SWEEP_TIMEOUT_S) for sweep in sweeps]
    finally:
        for sweep in sweeps:
            if sweep.poll() is None:
                sweep.kill()
                sweep.wait()
    texts = []
    for out in outputs:
        out.seek(0)
        texts.append(out.read())
    assert codes == [0, 0], texts
    both = "\n".join(texts)
    for spec in specs:
        (folder,) = runAttempts(spec)  # one attempt, finished, never started again
        assert checkFinishedRun(spec) == folder and not os.path.exists(os.path.join(folder, FAILED_FILE))
        commands = [line for line in open(os.path.join(folder, "train.log")).read().splitlines()
                    if line.startswith("# ")]
        assert len(commands) == 1 and f"--seed {spec.seed} " in commands[0], commands  # its own run's log
        assert f"--tag {spec.run_id} --run-folder {folder} " in commands[0] and "--resume" not in commands[0]
        ran_here = [line for line in both.splitlines() if f"] done: {spec.label} [{spec.run_id}]" in line]
        assert len(ran_here) == 1, texts  # run by one pipeline; the other recorded it or found it done
    for text in texts:
        assert "Sweep: 2/2 runs finished" in text and "), 0 failed." in text and "failed:" not in text, text
    (state_file,) = glob.glob(os.path.join(log_dir, "sweep_*.json"))
    state = json.load(open(state_file))
    assert state["counts"]["done"] + state["counts"]["skipped"] == 2, state["counts"]
    assert {run["run_id"]: run["run_folder"] for run in state["runs"]} == {
        spec.run_id: finishedFolder(spec) for spec in specs}
    assert sorted(os.listdir(tensorboard_dir)) == sorted(
        f"{ENVS[0]}_ground_truth_ppo2_{os.path.basename(finishedFolder(spec))}" for spec in specs)
    assert all("train/loss" in _scalars(str(tensorboard_dir / folder)) for folder in os.listdir(tensorboard_dir))


# One env, n_steps 125: rollouts and checkpoints (every 250 steps) end on MobileRobot's 250-step episode ends, so a
# resumed run plays exactly the episodes of an uninterrupted one (see tests/test_resume.py). Killed after its second
# checkpoint (500 steps), the run has as many steps left to continue.
RESUME_STEPS = 1000
RESUME_FLAGS = ["--num-timesteps", str(RESUME_STEPS), "--checkpoint-freq", "250", "--hyperparam", "n_steps:125",
                "batch_size:25", "n_epochs:2", "--num-cpu", "1"]


def test_the_summary_tells_stopped_runs_from_failed_ones(tmp_path, monkeypatch, capsys) -> None:
    """Runs a Ctrl-C stopped were listed under "Failed runs (run the same command again to redo them)", though the
    same command continues them from their checkpoint; one stopped before its first checkpoint starts again."""
    specs = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0, 1, 2, 3], [], str(tmp_path),
                       cwd=REPO)
    monkeypatch.setattr(pipeline, "continuesFromCheckpoint", lambda folder: folder == "checkpointed")
    results = [run_attempts.RunResult(spec.run_id, "failed", code, folder, f"log{index}", 1.0)
               for index, (spec, code, folder) in enumerate(zip(specs, (128 + signal.SIGINT, -signal.SIGTERM, 1,
                                                                        -signal.SIGINT),
                                                                ("checkpointed", "checkpointed", "x", "fresh")))]
    records = {result.run_id: {"state": "failed"} for result in results}
    assert pipeline._summary(specs, records, results, True, "state.json") == 130
    out = capsys.readouterr().out
    assert "Sweep: 0/4 runs finished (0 earlier), 1 failed, 3 stopped, 0 not run." in out  # the count as listed
    stopped, fresh = out.index("Stopped runs (the same command continues them"), out.index(
        "Stopped runs without a checkpoint yet (the same command starts them again)")
    failed = out.index("Failed runs")
    assert stopped < out.index("log0") < out.index("log1") < fresh < out.index("log3") < failed < out.index("log2")


class _StoppedExecutor:
    """An executor whose runs are in flight when Ctrl-C arrives; stopped, each ends unfinished (exit 130)."""

    lost = ""

    def __init__(self) -> None:
        self.running: list = []
        self.unstarted: list = []

    def hasSlot(self) -> bool:
        return True

    def submit(self, spec) -> None:
        self.running.append(spec)

    def wait(self, timeout: float) -> list:
        raise KeyboardInterrupt

    def shutdown(self, interrupted: bool = False) -> list:
        stopped = [run_attempts.RunResult(spec.run_id, "failed", 130, "folder", "log", 1.0) for spec in self.running]
        self.running = []
        return stopped


def test_the_bar_does_not_count_the_runs_a_ctrl_c_stopped(tmp_path, capsys) -> None:
    specs = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0, 1], [], str(tmp_path), cwd=REPO)
    records: dict = {}
    failed, interrupted = pipeline._runAll(_StoppedExecutor(), pipeline.RunClaims(specs), list(specs), specs, records,
                                           None, False, lambda: None)
    assert interrupted and len(failed) == 2
    bar = capsys.readouterr().err.replace("\r", "\n").splitlines()
    assert not any("2/2 runs" in line for line in bar), bar
    assert any("0/2 runs" in line for line in bar), bar
    # its last line says what the runs are now (it said "running 2")
    assert [line for line in bar if "runs [" in line][-1].endswith("done 0, running 0, failed 0, stopped 2]"), bar
    # the summary counts them as the bar does (it said "2 failed" below the bar's "failed 0, stopped 2")
    assert pipeline._summary(specs, records, failed, interrupted, "state.json") == 130
    assert "Sweep: 0/2 runs finished (0 earlier), 0 failed, 2 stopped, 0 not run." in capsys.readouterr().out


def test_the_state_file_counts_the_runs_a_ctrl_c_stopped_apart_from_the_failed_ones(tmp_path, capsys) -> None:
    """Its ``counts`` said ``failed: 2`` where each record said ``"stopped": true`` and the summary "0 failed, 2
    stopped"."""
    specs = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0, 1, 2], [], str(tmp_path), cwd=REPO)
    claims, state_file = pipeline.RunClaims(specs), str(tmp_path / "sweep_x.json")
    records = {specs[2].run_id: pipeline.stamp({"state": "failed", "returncode": 1}, claims.pipeline)}
    failed, interrupted = pipeline._runAll(
        _StoppedExecutor(), claims, specs[:2], specs, records, None, True,
        lambda: pipeline.writeSweepState(state_file, ["pipeline"], specs, records, claims.pipeline))
    assert interrupted and pipeline._summary(specs, records, failed, interrupted, state_file) == 130
    assert "0/3 runs finished (0 earlier), 0 failed, 2 stopped" in capsys.readouterr().out
    state = json.load(open(state_file))
    assert [bool(run.get("stopped")) for run in state["runs"]] == [True, True, False]
    assert state["counts"] == {"pending": 0, "running": 0, "done": 0, "skipped": 0, "failed": 1, "stopped": 2}


class _OneAtATimeExecutor:
    """Two workers; each wait ends the oldest run in flight, the second one failed."""

    name, workers, lost = "local", 2, ""

    def __init__(self) -> None:
        self.running: list = []
        self.ended = 0

    def hasSlot(self) -> bool:
        return len(self.running) < self.workers

    def submit(self, spec) -> None:
        self.running.append(spec)

    def wait(self, timeout: float) -> list:
        spec = self.running.pop(0)
        self.ended += 1
        return [run_attempts.RunResult(spec.run_id, "failed" if self.ended == 2 else "done", 0, "folder", "log", 1.0)]

    def shutdown(self, interrupted: bool = False) -> list:
        return []


def test_the_bar_count_and_its_status_agree(tmp_path, capsys) -> None:
    """The bar moved before its status was set (``1/8 runs [..., done 0, running 2, failed 0]``), and its ``done``
    counted the runs done before while its total did not: now it counts the runs of this invocation, done + failed."""
    specs = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0, 1, 2, 3], [], str(tmp_path), cwd=REPO)
    records: dict = {specs[0].run_id: {"state": "skipped"}}  # done by an earlier invocation
    failed, interrupted = pipeline._runAll(_OneAtATimeExecutor(), pipeline.RunClaims(specs), specs[1:], specs,
                                           records, None, False, lambda: None)
    assert not interrupted and len(failed) == 1
    shown = [tuple(map(int, found.groups())) for line in capsys.readouterr().err.replace("\r", "\n").splitlines()
             if (found := re.search(r"(\d+)/(\d+) runs .*done (\d+), running (\d+), failed (\d+)", line))]
    assert shown and all(total == 3 and count == done + failed_ for count, total, done, _, failed_ in shown), shown
    assert shown[-1] == (3, 3, 2, 0, 1), shown


def test_no_progress_numbers_the_failed_and_stopped_lines_as_the_done_ones(tmp_path, capsys) -> None:
    """With --no-progress a done run's line began ``[N/M] done:``, a failed or stopped run's ``failed:`` alone."""
    specs = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0, 1, 2], [], str(tmp_path), cwd=REPO)
    pipeline._runAll(_OneAtATimeExecutor(), pipeline.RunClaims(specs), specs, specs, {}, None, True, lambda: None)
    lines = [line for line in capsys.readouterr().out.splitlines() if specs[0].label[:4] in line]
    assert [line.split(": ")[0] for line in lines] == ["[1/3] done", "[2/3] failed", "[3/3] done"], lines
    assert lines[1].startswith(f"[2/3] failed: {specs[1].label} [{specs[1].run_id}] exit code 0, log log"), lines
    pipeline._runAll(_StoppedExecutor(), pipeline.RunClaims(specs), specs, specs, {}, None, True, lambda: None)
    lines = [line for line in capsys.readouterr().out.splitlines() if specs[0].label[:4] in line]
    assert [line.split(": ")[0] for line in lines] == ["[1/3] stopped", "[2/3] stopped", "[3/3] stopped"], lines


def test_a_run_a_ctrl_c_stopped_says_stopped_as_the_summary_counts_it(tmp_path, capsys) -> None:
    """A run the Ctrl-C stopped printed ``[N/M] failed: ... exit code 130`` above a summary that counted it stopped
    (as the bar and the state file do); with the bar, the line has no ``[N/M]``, as no done line is printed there."""
    specs = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0, 1], [], str(tmp_path), cwd=REPO)
    for no_progress, prefix in ((True, "[1/2] "), (False, "")):
        records: dict = {}
        failed, interrupted = pipeline._runAll(_StoppedExecutor(), pipeline.RunClaims(specs), list(specs), specs,
                                               records, None, no_progress, lambda: None)
        assert records[specs[0].run_id]["stopped"] and pipeline._summary(specs, records, failed, interrupted, "s")
        out = capsys.readouterr().out
        assert f"{prefix}stopped: {specs[0].label} [{specs[0].run_id}] (interrupted), log log\n" in out, out
        assert "failed:" not in out and ", 2 stopped, 0 not run." in out, out


def test_a_run_another_pipelines_ctrl_c_stopped_is_counted_stopped_there_too(tmp_path, capsys, monkeypatch) -> None:
    """Two pipelines on one folder: the one that waited for a run that the other's Ctrl-C stopped printed
    ``[1/2] failed by another pipeline: ... exit code 130`` and counted it failed in its summary, though the pipeline
    that ran it, and the state file, counted it stopped."""
    specs = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0, 1], [], str(tmp_path), cwd=REPO)
    claims = pipeline.RunClaims(specs)  # this pipeline looks at the runs, then waits for the other's
    folder = os.path.join(specs[0].parent, f"26-01-01_00h00_00_{specs[0].run_id}")
    os.makedirs(folder)
    log = os.path.join(folder, "train.log")
    monkeypatch.setattr(executors, "startRun", lambda spec, resume, threads, envs_in_process: run_attempts.StartedRun(
        spec, subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]), folder, log, time.time(),
        open(log, "a")))
    other = executors.LocalExecutor(1)  # the other pipeline runs seed 0; its Ctrl-C stops the run
    other.submit(specs[0])
    (result,) = other.shutdown(interrupted=True)
    assert result.state == "failed" and json.load(open(os.path.join(folder, FAILED_FILE)))["stopped"] is True
    records: dict = {}
    state_file = str(tmp_path / "sweep_x.json")
    failed, interrupted = pipeline._runAll(
        _OneAtATimeExecutor(), claims, list(specs), specs, records, None, True,
        lambda: pipeline.writeSweepState(state_file, ["pipeline"], specs, records, claims.pipeline))
    assert not interrupted and records[specs[0].run_id]["stopped"] and records[specs[0].run_id]["elsewhere"]
    assert pipeline._summary(specs, records, failed, interrupted, state_file) == 1
    out = capsys.readouterr().out
    assert f"[1/2] stopped by another pipeline: {specs[0].label} [{specs[0].run_id}] (interrupted), log {log}" in out
    assert "failed" not in out.split("Sweep: ")[0], out
    assert "Sweep: 1/2 runs finished (0 earlier), 0 failed, 1 stopped." in out, out
    assert json.load(open(state_file))["counts"] == {"pending": 0, "running": 0, "done": 1, "skipped": 0, "failed": 0,
                                                     "stopped": 1}


class _SignalledExecutor(_OneAtATimeExecutor):
    """The second run's train is stopped by a SIGTERM sent to it (not to the sweep): exit -15."""

    def wait(self, timeout: float) -> list:
        spec = self.running.pop(0)
        self.ended += 1
        code = -signal.SIGTERM if self.ended == 2 else 0
        return [run_attempts.RunResult(spec.run_id, "failed" if code else "done", code, "folder", "log", 1.0)]


def test_a_run_whose_train_a_signal_stopped_is_stopped_in_the_line_the_bar_and_the_state_file(tmp_path, capsys):
    """A SIGTERM sent to one run's train: the line said ``failed``, the bar ``failed 1`` and the state file's counts
    ``failed: 1``, where the summary said ``0 failed, 1 stopped``."""
    specs = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0, 1, 2], [], str(tmp_path), cwd=REPO)
    records: dict = {}
    state_file = str(tmp_path / "sweep_x.json")
    claims = pipeline.RunClaims(specs)
    failed, interrupted = pipeline._runAll(
        _SignalledExecutor(), claims, list(specs), specs, records, None, False,
        lambda: pipeline.writeSweepState(state_file, ["pipeline"], specs, records, claims.pipeline))
    assert not interrupted and records[specs[1].run_id]["stopped"]
    captured = capsys.readouterr()
    assert f"stopped: {specs[1].label} [{specs[1].run_id}] exit code -15" in captured.out, captured.out
    assert "done 2, running 0, failed 0, stopped 1" in captured.err, captured.err
    pipeline._summary(specs, records, failed, interrupted, state_file)
    assert "0 failed, 1 stopped" in capsys.readouterr().out
    assert json.load(open(state_file))["counts"] == {"pending": 0, "running": 0, "done": 2, "skipped": 0, "failed": 0,
                                                     "stopped": 1}


def test_the_start_line_names_the_workers_the_runs_use(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "_runAll", lambda *args: ([], False))
    pipeline.main(["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "--num-iteration", "1",
                   "--workers", "2", "--log-dir", str(tmp_path / "logs"), "--no-vis", "--num-timesteps", "200"])
    assert "1 to run on 1 local worker\n" in capsys.readouterr().out


def test_the_live_plots_line_is_the_sweeps_page_once_the_server_answered(tmp_path, capsys, monkeypatch,
                                                                        visdom_port) -> None:
    """The line was printed at the start, with the server's root (visdom's empty main env) as address, even when no
    server answered: now it is the sweep env's own page, printed once the server has drawn a curve, as train does."""
    def drawOneCurve(executor, claims, to_run, specs, records, curves, *rest) -> tuple[list, bool]:
        curves.plotter.updateCurve(ENVS[0], "ground_truth", "ppo2 seed0", np.array([250.0]), np.array([1.0]))
        return [], False

    monkeypatch.setattr(pipeline, "_runAll", drawOneCurve)
    args = ["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "--num-iteration", "1", "--workers",
            "1", "--log-dir", str(tmp_path / "logs"), "--num-timesteps", "200", "--no-progress"]
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        pipeline.main([*args, "--port", str(findFreePort())])  # nothing listens there
    assert "Live plots" not in capsys.readouterr().out
    assert len([r for r in records if "cannot be reached" in str(r.message)]) == 1

    pipeline.main([*args, "--port", str(visdom_port)])
    (sweep_id,) = [path.name[len("sweep_"):-len(".json")] for path in (tmp_path / "logs").glob("sweep_*.json")]
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("Live plots")] == [
        f"Live plots: http://127.0.0.1:{visdom_port}/env/sweep_{sweep_id}"]


def test_killed_sweep_continues_its_run_from_the_last_checkpoint(tmp_path) -> None:
    log_dir = str(tmp_path / "logs")
    sweep_args = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--seed", "0",
                  "--num-iteration", "1",
                  "--log-dir", log_dir, "--no-vis", "--no-progress", *RESUME_FLAGS]
    (spec,) = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0], RESUME_FLAGS, log_dir, cwd=REPO)
    sweep = Sweep(*sweep_args)
    sweep.start()
    try:  # the machine goes down after the second checkpoint: the sweep and its train process die together
        pid_file = waitForFile(os.path.join(spec.parent, f"*_{spec.run_id}", PID_FILE), sweep, SWEEP_TIMEOUT_S)
        run_folder = os.path.dirname(pid_file)
        train_pid = trainPid(pid_file)
        sweep_pid = parentPid(train_pid)  # the pipeline's process, forked from the warm interpreter
        deadline = time.monotonic() + SWEEP_TIMEOUT_S
        while max((steps for steps, _ in listCheckpoints(run_folder)), default=0) < 500:
            assert sweep.is_alive() and time.monotonic() < deadline, "the run ended before its second checkpoint"
            time.sleep(0.02)
        os.kill(train_pid, signal.SIGKILL)
        os.kill(sweep_pid, signal.SIGKILL)
    finally:
        killed = sweep.finish()
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert runStatus(run_folder) == "resume" and finishedFolder(spec) is None

    result = runModule("rl_baselines.pipeline", *sweep_args, timeout=SWEEP_TIMEOUT_S)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 run (1 algo x 1 env x 1 SRL model x 1 seed); 0 already done, 1 to run (1 continues where it " \
           "stopped)" in result.stdout
    assert runAttempts(spec) == [run_folder] and finishedFolder(spec) == run_folder
    log = open(os.path.join(run_folder, "train.log")).read()
    commands = [line for line in log.splitlines() if line.startswith("# ")]
    assert len(commands) == 2 and f"--resume {run_folder} --no-vis --no-progress" in commands[1], commands
    assert f"Resuming from {os.path.join(run_folder, 'checkpoints')}" in log
    done = json.load(open(os.path.join(run_folder, DONE_FILE)))
    assert done["attempts"] == 2 and done["wall_time_s"] > 0  # the killed attempt left no seconds to add
    saved = json.load(open(os.path.join(run_folder, "args.json")))
    assert saved["tag"] == spec.run_id and saved["num_timesteps"] == RESUME_STEPS

    resumed = loadEpisodes(os.path.join(run_folder, "monitor"))
    assert resumed["timesteps"][-1] == RESUME_STEPS

    # --force starts it again from scratch in a new folder
    result = runModule("rl_baselines.pipeline", *sweep_args, "--force", timeout=SWEEP_TIMEOUT_S)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "continued" not in result.stdout
    (new_folder,) = runAttempts(spec)
    assert new_folder != run_folder and not os.path.exists(run_folder)
    assert "--resume" not in open(os.path.join(new_folder, "train.log")).read()

    # no episode lost, none played twice: the same episodes as the same run never interrupted (the --force run)
    uninterrupted = loadEpisodes(os.path.join(new_folder, "monitor"))
    np.testing.assert_array_equal(resumed["rewards"], uninterrupted["rewards"])
    np.testing.assert_array_equal(resumed["lengths"], uninterrupted["lengths"])


def test_unreachable_visdom_costs_one_warning() -> None:
    plotter = SweepPlotter(findFreePort(), "sweep_test")  # nothing listens there
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        for seed in range(3):
            plotter.updateCurve(ENVS[0], "ground_truth", f"ppo2 seed{seed}", np.array([250.0]), np.array([1.0]))
    assert [str(r.message).split(" (")[0] for r in records if issubclass(r.category, UserWarning)] == [
        f"The visdom server at http://127.0.0.1:{plotter.port} cannot be reached"]
    assert "live plots are off for the rest of this sweep." in str(records[0].message)  # (said "this run")
    assert not plotter.enabled


def test_per_algorithm_flags(tmp_path) -> None:
    shared = ["--num-timesteps", "300"]
    with pytest.raises(UsageError, match=r"a2c x \* x \* \(unrecognized arguments: --n-epochs 2\)"):
        checkGrid(["ppo2", "a2c"], ENVS, ["ground_truth"], [*shared, "--n-epochs", "2"])
    algo_args = parseAlgoArgs(["ppo2:--n-epochs=2", "ppo2:--gamma 0.9 --n-steps 64", "a2c:--n-steps 5"],
                              ["ppo2", "a2c"])
    assert algo_args == {"ppo2": ["--n-epochs=2", "--gamma", "0.9", "--n-steps", "64"], "a2c": ["--n-steps", "5"]}
    checkGrid(["ppo2", "a2c"], ENVS, ["ground_truth"], shared, algo_args=algo_args)
    specs = expandGrid(["ppo2", "a2c"], ENVS[:1], ["ground_truth"], [0], shared, str(tmp_path), algo_args=algo_args)
    assert [spec.train_args for spec in specs] == [(*shared, *algo_args["ppo2"]), (*shared, *algo_args["a2c"])]
    plain = expandGrid(["ppo2"], ENVS[:1], ["ground_truth"], [0], shared, str(tmp_path))
    assert plain[0].run_id != specs[0].run_id  # the flags change what the run computes

    for item, message in (("ppo2", r"--algo-args 'ppo2' is not ALGO:FLAGS \(for example ppo2:--ent-coef=0.01\)"),
                          ("sac:--gamma=0.9", "'sac' is not an algorithm of this command; valid choices: ppo2, a2c"),
                          ("ppo2:--gamma 'x", "No closing quotation"),
                          ("ppo2:gamma=0.9", "'gamma=0.9' is not a flag")):
        with pytest.raises(UsageError, match=message):
            parseAlgoArgs([item], ["ppo2", "a2c"])
    # As a command: an unknown flag in one algorithm's flags is refused up front, one line, nothing written
    log_dir = tmp_path / "logs"
    result = runModule("rl_baselines.pipeline", "--algo", "ppo2", "a2c", "--env", ENVS[0], "--srl-model",
                       "ground_truth", "--log-dir", log_dir, "--no-vis", "--num-timesteps", "300",
                       "--algo-args", "a2c:--no-such-flag=1")
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: 1 bad combination (algo x env x srl-model): a2c x ")
    assert "unrecognized arguments: --no-such-flag=1" in result.stderr and not log_dir.exists()
    with pytest.raises(UsageError, match="'sac' is not an algorithm of this command"):
        pipeline.main(["--algo", "ppo2", "--log-dir", str(log_dir), "--algo-args", "sac:--gamma=0.9"])
    assert not log_dir.exists()


def test_train_flags_cannot_override_what_the_grid_sets(tmp_path) -> None:
    """A train flag among a run's flags came after the cell's own --algo/--env/--srl-model/--seed/--log-dir in its
    command, and train keeps the last: ``--algo-args "ppo2:--seed 7"`` trained identical seed-7 runs recorded as seed0
    and seed1. Every spelling train accepts is refused, in --algo-args and among the flags passed on to train."""
    grid = (["ppo2", "a2c"], ENVS, ["ground_truth"])
    for flags, named, own in ((["--seed", "7"], "--seed", "--seed and --num-iteration"),
                              (["--seed=7"], "--seed", "--seed and --num-iteration"),
                              (["--se", "7"], r"--se \(--seed\)", "--seed and --num-iteration"),
                              (["--env", ENVS[1]], "--env", "--env"), (["--algo", "a2c"], "--algo", "--algo"),
                              (["--alg=a2c"], r"--alg \(--algo\)", "--algo"),
                              (["--srl-model", "raw_pixels"], "--srl-model", "--srl-model"),
                              (["--log-dir", str(tmp_path)], "--log-dir", "--log-dir"),
                              (["--log", str(tmp_path)], r"--log \(--log-dir\)", "--log-dir")):
        message = rf"\({named} cannot be a train flag .*: the sweep sets it for each run; use the pipeline's own {own}\)"
        with pytest.raises(UsageError, match=r"ppo2 x \* x \* " + message):
            checkGrid(*grid, ["--num-timesteps", "300"], algo_args={"ppo2": flags})
        with pytest.raises(UsageError, match=r"\* x \* x \* " + message):  # passed on to every run
            checkGrid(*grid, ["--num-timesteps", "300", *flags])
    checkGrid(*grid, ["--num-timesteps", "300"], algo_args={"ppo2": ["--n-steps", "64"]})  # other flags pass

    # As a command: one line, exit code 2, nothing written
    log_dir = tmp_path / "logs"
    base = ["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "--no-vis", "--num-timesteps", "200",
            "--num-iteration", "2", "--log-dir", log_dir]
    for extra in (["--algo-args", "ppo2:--seed 7"], ["--se", "7"]):
        result = runModule("rl_baselines.pipeline", *base, *extra)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert "cannot be a train flag" in result.stderr and "--seed and --num-iteration" in result.stderr
        assert not log_dir.exists()


class _GoneReader:
    """The pipeline's stdout once its reader has gone (a Ctrl-C in a terminal also stops the `| tee` it prints to)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_ctrl_c_that_also_stopped_the_outputs_reader_still_stops_and_records_the_runs(tmp_path, monkeypatch
                                                                                         ) -> None:
    """Printing "Interrupted: stopping the runs in flight" into the broken pipe raised BrokenPipeError before the runs
    were stopped: the pipeline exited 1, its train processes (each in its own session) trained on, and the state file
    said "running"."""
    specs = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0, 1], [], str(tmp_path), cwd=REPO)
    discarded = []
    monkeypatch.setattr(sys, "stdout", _GoneReader())
    monkeypatch.setattr(terminal, "discardStdout", lambda: (discarded.append(True),
                                                       monkeypatch.setattr(sys, "stdout", io.StringIO())))
    executor, records = _StoppedExecutor(), {}
    failed, interrupted = pipeline._runAll(executor, pipeline.RunClaims(specs), list(specs), specs, records, None,
                                           True, lambda: None)
    assert interrupted and discarded and not executor.running and len(failed) == 2
    assert all(records[spec.run_id]["stopped"] for spec in specs), records
    assert pipeline._summary(specs, records, failed, interrupted, "state.json") == 130
