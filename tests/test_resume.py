"""Faults injected into training runs, and what resuming gives back.

- kill -9 at random moments (seeded), twice over one run, for ppo2 (on-policy) and sac (off-policy, replay
  buffer saved with every checkpoint), then ``train --resume`` to the end: the final step count is --num-timesteps,
  the monitor rows are continuous, the model loads, and the run equals an uninterrupted one with the same seed
  (same episodes, same final weights: the checkpoints fall between two updates, and between two episodes or, for
  ppo2-mid-episode, within one, which the resumed run plays again to where it was);
- SIGTERM and Ctrl-C (SIGINT to the whole process group, env worker processes included) save a checkpoint, exit
  with 143 / 130, and the run resumes from it;
- the visdom server killed in the middle of a run: training goes on and finishes;
- a full disk (ENOSPC) during a checkpoint: the previous checkpoint stays intact and loads, one line reports it;
- damaged or foreign checkpoints and models are refused in one line (a run whose only checkpoint is damaged; a run
  with an intact older checkpoint falls back to it: tests/test_resume_fallback.py); resume refusals (other flags, a
  plugin without resume support, a folder that is not a run);
- the default checkpoint interval, five per run, kept by a resumed run. The files a resume reads and writes, piece by
  piece: tests/test_resume_files.py.

"Monitor rows continuous" means, per monitor file: the rows written before each checkpoint a run resumed from are
kept byte for byte; the wall time ``t`` grows strictly from row to row; and the episode lengths add up to the run's
step count exactly, less the episode in progress at the end (MobileRobot episodes last 250 steps, and the
checkpoints below fall on episode ends or within an episode that the resumed run plays again whole, so a gap - rows
lost - or a duplicate - rows of a killed segment kept beside the replayed ones - would change the sum).
"""
from __future__ import annotations

import csv
import errno
import glob
import io
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import time
import zipfile

import numpy as np
import pytest
import torch
import visdom
from conftest import (
    interruptedRun,
    interruptThenResume,
    runFolder,
    runModule,
    runTrain,
    startModule,
    stoppedRun,
    trainHere,
)
from warm_python import WarmProcess

from replay import enjoy_baselines
from replay.visdom_server import findFreePort, startServer, waitForServer
from rl_baselines.core.checkpointing import (
    CheckpointError,
    checkManifest,
    checkModelFile,
    listCheckpoints,
    readManifest,
    runDescription,
    writeCheckpoint,
)
from rl_baselines.core.registry import registered_rl
from rl_baselines.core.training_state import (
    captureGlobalRNG,
)
from rl_baselines.runs import checkpoint_callbacks, train
from rl_baselines.runs.callbacks import TrainingCallback, TrainingCallbacks
from rl_baselines.runs.resume import lockRun, planResume
from rl_baselines.runs.train_config import TrainConfig
from srl_toolbox.cli import UsageError

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]
EPISODE_STEPS = 250
# One env, n_steps 125: every rollout ends on a multiple of 125 steps, so checkpoints (every 500) fall on episode ends;
# ppo2-mid-episode: rollouts of 128 steps, so they fall 12, 24... steps into an episode (played again on resume).
RUNS = {
    "ppo2": [*GT, "--algo", "ppo2", "--num-timesteps", "3000", "--checkpoint-freq", "500", "--num-cpu", "1",
             "--hyperparam", "n_steps:125", "batch_size:25", "n_epochs:2"],
    "ppo2-mid-episode": [*GT, "--algo", "ppo2", "--num-timesteps", "3072", "--checkpoint-freq", "500", "--num-cpu",
                         "1", "--hyperparam", "batch_size:32", "n_epochs:2"],
    "sac": [*GT, "--algo", "sac", "-c", "--num-timesteps", "1500", "--checkpoint-freq", "500",
            "--hyperparam", "learning_starts:250", "batch_size:32", "train_freq:4"],
}
KILLS = 2  # the second kill hits a resumed process
DEADLINE_S = 600


def _start(log_dir: str, args: list[str], new_session: bool = False) -> subprocess.Popen | WarmProcess:
    """A train command (forked from the warm interpreter: conftest.startModule) writing its output to files in
    ``log_dir`` (no pipe to fill up)."""
    os.makedirs(log_dir, exist_ok=True)
    count = len(glob.glob(os.path.join(log_dir, "out_*.txt")))
    with open(os.path.join(log_dir, f"out_{count}.txt"), "w") as stdout, \
            open(os.path.join(log_dir, f"err_{count}.txt"), "w") as stderr:
        process = startModule("rl_baselines.train", "--no-progress", *args, stdout=stdout, stderr=stderr,
                              start_new_session=new_session)
    process.output_files = (stdout.name, stderr.name)
    return process


def _output(process: subprocess.Popen) -> tuple[str, str]:
    return tuple(open(path).read() for path in process.output_files)


def _runFolderUnder(log_dir: str) -> str | None:
    folders = glob.glob(os.path.join(log_dir, "MobileRobotGymEnv-v0", "*", "*", "*"))
    return folders[0] if folders else None


def _waitFor(condition, process: subprocess.Popen, deadline: float) -> bool:
    """:return: True when ``condition()`` holds, False when the process ended first"""
    while time.monotonic() < deadline:
        if condition():
            return True
        if process.poll() is not None:
            return condition()
        time.sleep(0.02)
    pytest.fail("timed out")


def _steps(run_dir: str | None) -> list[int]:
    return [steps for steps, _ in listCheckpoints(run_dir)] if run_dir else []


def _monitor(run_dir: str) -> dict[str, bytes]:
    return {os.path.basename(path): open(path, "rb").read()
            for path in sorted(glob.glob(os.path.join(run_dir, "monitor", "*.monitor.csv")))}


def _rows(text: bytes) -> list[dict[str, str]]:
    lines = text.decode().splitlines()
    assert lines[0].startswith("#{") and lines[1].startswith("r,l,t")
    return list(csv.DictReader(lines[1:]))


def _progressRows(run_dir: str) -> list[dict[str, str]]:
    """:return: the run's progress.csv rows, without their wall-clock columns (time/fps, time/time_elapsed)"""
    with open(os.path.join(run_dir, "progress.csv"), encoding="utf-8") as handle:
        return [{name: value for name, value in row.items() if name not in ("time/fps", "time/time_elapsed")}
                for row in csv.DictReader(handle)]


def _policyWeights(model_path: str) -> dict[str, torch.Tensor]:
    with zipfile.ZipFile(model_path) as archive:
        return torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)


def _killAndResume(log_dir: str, args: list[str], seed: int) -> tuple[str, list[dict], subprocess.Popen]:
    """
    Start a run, and KILLS times: wait for a new checkpoint, wait a random moment (seeded), SIGKILL the process
    and resume the run. Then let the last resumed process finish.

    :return: (run folder, what each kill left: checkpoint resumed from, monitor content), the last process
    """
    rng = random.Random(seed)
    deadline = time.monotonic() + DEADLINE_S
    process = _start(log_dir, ["--no-vis", "--log-dir", log_dir, *args])
    run_dir, kills = None, []
    while len(kills) < KILLS:
        before = max(_steps(_runFolderUnder(log_dir)), default=0)
        if not _waitFor(lambda: max(_steps(_runFolderUnder(log_dir)), default=0) > before, process, deadline):
            break  # finished before the kill
        time.sleep(rng.uniform(0.0, 0.6))
        if process.poll() is not None:
            break
        process.kill()
        process.wait()
        run_dir = _runFolderUnder(log_dir)
        resumable = [steps for steps, folder in listCheckpoints(run_dir) if readManifest(folder).get("resumable")]
        kills.append({"checkpoint": max(resumable, default=0), "monitor": _monitor(run_dir),
                      "state": json.load(open(os.path.join(run_dir, "checkpoints", f"{max(resumable)}_steps",
                                                           "run_state.json"))) if resumable else None})
        process = _start(log_dir, ["--resume", run_dir])
    process.wait(timeout=max(1.0, deadline - time.monotonic()))
    return _runFolderUnder(log_dir), kills, process


@pytest.mark.slow
@pytest.mark.parametrize("case", ["ppo2", "ppo2-mid-episode", "sac"])
def test_kill9_then_resume_equals_uninterrupted_run(tmp_path, case):
    args = RUNS[case]
    algo = args[args.index("--algo") + 1]
    num_timesteps = int(args[args.index("--num-timesteps") + 1])
    checkpoint_freq = int(args[args.index("--checkpoint-freq") + 1])
    reference = runFolder(runTrain(*args, "--log-dir", tmp_path / "reference"))

    run_dir, kills, last = _killAndResume(str(tmp_path / "killed"), args, seed=len(case))
    stdout, stderr = _output(last)
    assert last.returncode == 0, stderr
    assert len(kills) == KILLS, f"the run finished after {len(kills)} kills"
    assert f"Done: {num_timesteps} steps" in stdout
    assert f"Resuming from {os.path.join(run_dir, 'checkpoints', str(kills[-1]['checkpoint']))}_steps" in stdout
    manifest = readManifest(run_dir)
    assert manifest["finished"] and manifest["num_timesteps"] == num_timesteps
    assert not glob.glob(os.path.join(run_dir, "checkpoints", ".*"))  # no unfinished checkpoint folder left
    # the model loads (its manifest checks out) and acts

    model_path = os.path.join(run_dir, f"{algo}_model.zip")
    checkModelFile(model_path, algo, expected={"env": "MobileRobotGymEnv-v0"})
    model = registered_rl[algo][0].load(model_path)
    assert model.num_timesteps == num_timesteps
    assert model.getAction(np.zeros((1, 2), dtype=np.float32)).shape[0] == 1

    # monitor rows: the rows before each checkpoint resumed from are kept byte for byte
    final = _monitor(run_dir)
    for kill in kills:
        for name, size in (kill["state"] or {"monitor": {}})["monitor"].items():
            assert final[name][:size] == kill["monitor"][name][:size]
        # work lost by the kill: the episodes finished after the checkpoint, less than one interval (+1 episode)
        finished_before_kill = sum(int(row["l"]) for row in _rows(kill["monitor"]["0.monitor.csv"]))
        assert finished_before_kill - kill["checkpoint"] <= checkpoint_freq + EPISODE_STEPS
    rows = _rows(final["0.monitor.csv"])
    times = [float(row["t"]) for row in rows]
    assert all(later > earlier for earlier, later in zip(times, times[1:]))
    # no gap, no duplicate (the episode in progress at the end has no row)
    assert sum(int(row["l"]) for row in rows) == num_timesteps - num_timesteps % EPISODE_STEPS

    # the same run as the uninterrupted one: same episodes, same progress rows, same final weights
    reference_rows = _rows(_monitor(reference)["0.monitor.csv"])
    assert [(row["r"], row["l"]) for row in rows] == [(row["r"], row["l"]) for row in reference_rows]
    steps = [row["time/total_timesteps"] for row in csv.DictReader(open(os.path.join(run_dir, "progress.csv")))]
    reference_steps = [row["time/total_timesteps"]
                       for row in csv.DictReader(open(os.path.join(reference, "progress.csv")))]
    assert steps == reference_steps
    resumed, uninterrupted = _policyWeights(model_path), _policyWeights(os.path.join(reference, f"{algo}_model.zip"))
    assert all(torch.equal(resumed[name], uninterrupted[name]) for name in uninterrupted)


# The project's own actor-critics, each with updates that end on the episode ends (250 steps) and on the checkpoint at
# 500: the interrupted run resumes at a clean point. ppo1 shuffles 4 minibatches (seeded by its update count); acer
# draws its off-policy updates per on-policy one from Poisson(1) (its generator is part of the restored state).
OWN_ACTOR_CRITICS = {
    "acer": ["--hyperparam", "replay_start:100", "replay_ratio:1"],
    "acktr": [],
    "ppo1": ["--timesteps-per-actorbatch", "125", "--nminibatches", "4", "--optim-epochs", "2"],
}


@pytest.mark.slow
@pytest.mark.parametrize("algo", sorted(OWN_ACTOR_CRITICS))
def test_own_actor_critics_resume_as_the_uninterrupted_run(tmp_path, monkeypatch, algo):
    """Stopped at step 700 (after the checkpoint at 500), then resumed: the same episodes, the same progress.csv
    rows (each algorithm logs after the first update past 1000 or 1024 steps, then at the end, 1500: the step of
    the next row is saved with the checkpoint, and so are the running means of the losses of the interval it cuts)
    and the same final weights as the uninterrupted run."""
    args = ["--no-vis", "--no-progress", *GT, "--algo", algo, "--seed", "1", "--num-timesteps", "1500",
            "--checkpoint-freq", "500", *OWN_ACTOR_CRITICS[algo]]
    assert train.main([*args, "--log-dir", str(tmp_path / "reference")]) == 0
    (reference,) = glob.glob(str(tmp_path / "reference" / "*" / "*" / "*" / "*"))
    original = TrainingCallbacks.on_step

    def interruptAt700(self):  # a second Ctrl-C: no checkpoint after the one at 500
        keep_going = original(self)
        if self.num_timesteps >= 700:
            raise KeyboardInterrupt
        return keep_going

    monkeypatch.setattr(TrainingCallbacks, "on_step", interruptAt700)
    assert train.main([*args, "--log-dir", str(tmp_path / "stopped")]) == 130
    monkeypatch.setattr(TrainingCallbacks, "on_step", original)
    (run_dir,) = glob.glob(str(tmp_path / "stopped" / "*" / "*" / "*" / "*"))
    assert _steps(run_dir) == [500]
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0

    assert len(_progressRows(reference)) >= 2 and _progressRows(run_dir) == _progressRows(reference)
    rows, reference_rows = _rows(_monitor(run_dir)["0.monitor.csv"]), _rows(_monitor(reference)["0.monitor.csv"])
    assert [(row["r"], row["l"]) for row in rows] == [(row["r"], row["l"]) for row in reference_rows]
    resumed, uninterrupted = (_flatTensors(torch.load(os.path.join(folder, f"{algo}_model.pt"), weights_only=True))
                              for folder in (run_dir, reference))
    assert resumed.keys() == uninterrupted.keys() and len(resumed) > 10
    assert all(torch.equal(resumed[name], uninterrupted[name]) for name in uninterrupted)  # networks, optimizers


# Rows written between the checkpoint (500) and the next refresh of the log (1000): cma-es's generation of 500 steps
# (its row waits for the next one, or a refresh), acktr's evaluations (their rows carry the losses recorded since
# the last row and the means of the episodes read by then); deepq's row at 1000, whose train/loss averages the
# gradient steps since the start, those before the checkpoint included. Each case: its arguments, its row count.
PROGRESS_ROWS = {
    "cma-es": ([*GT, "--algo", "cma-es", "--num-timesteps", "1500", "--hyperparam", "num_population:2"], 3),
    "acktr-evaluated": ([*GT, "--algo", "acktr", "--num-timesteps", "1500", "--eval-freq", "300",
                         "--eval-episodes", "1"], 7),  # 5 evaluations, the training rows at 1000 and at the end
    "deepq": ([*GT, "--algo", "deepq", "--num-timesteps", "1000", "--hyperparam", "learning_starts:100",
               "train_freq:4"], 1),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(PROGRESS_ROWS))
def test_a_resumed_run_writes_the_uninterrupted_runs_progress_rows(tmp_path, monkeypatch, case):
    """Stopped at step 700, resumed from the checkpoint at 500: progress.csv is the uninterrupted run's, line for
    line (but the wall-clock columns), the rows between the checkpoint and the next refresh included."""
    run_args, rows = PROGRESS_ROWS[case]
    args = [*run_args, "--seed", "1", "--checkpoint-freq", "500"]
    reference = train.trainCommand(["--no-vis", "--no-progress", "--log-dir", str(tmp_path / "reference"), *args])
    assert reference.exit_code == 0
    run_dir = interruptThenResume(monkeypatch, str(tmp_path / "stopped"), args, at_step=700)
    assert len(_progressRows(reference.run_dir)) == rows and _progressRows(run_dir) == _progressRows(reference.run_dir)


def test_cma_es_stopped_mid_generation_resumes(tmp_path, monkeypatch):
    """cma-es on MobileRobot states (704 weights: two-point step-size adaptation, which injects samples into each
    generation) stopped mid-generation: the checkpoint holds the strategy as at the generation's start, and the
    resumed run plays that generation again to the end (asked again, the asked strategy failed: 'Mean shift samples
    are expected but missing')."""
    args = [*GT, "--algo", "cma-es", "--num-timesteps", "3200", "--hyperparam", "num_population:4"]
    monkeypatch.setattr(checkpoint_callbacks, "STOP_WAIT_S", 0.0)  # (else it waits for the generation's end)
    # a Ctrl-C at step 2400, in the third generation (4 episodes of 250 steps)
    run_dir = stoppedRun(monkeypatch, str(tmp_path / "stopped"), args, 2400)
    assert 2400 <= listCheckpoints(run_dir)[-1][0] < 3000  # the stop's checkpoint, mid-generation
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0


def _flatTensors(tree, prefix: str = "") -> dict[str, torch.Tensor]:
    """:return: every tensor of a model file's content (nested dicts and lists), by its path"""
    if isinstance(tree, torch.Tensor):
        return {prefix: tree}
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, (list, tuple)) else ()
    return {path: tensor for key, value in items for path, tensor in _flatTensors(value, f"{prefix}/{key}").items()}


@pytest.mark.slow
def test_sigterm_and_ctrl_c_save_a_checkpoint(tmp_path):
    log_dir = str(tmp_path / "my runs")  # a space: the printed resume command quotes the folder
    args = [*GT, "--algo", "ppo2", "--num-cpu", "2", "--num-timesteps", "100000", "--checkpoint-freq", "500",
            "--hyperparam", "n_steps:125", "batch_size:50", "n_epochs:1"]
    deadline = time.monotonic() + DEADLINE_S
    process = _start(log_dir, ["--no-vis", "--log-dir", log_dir, *args])
    assert _waitFor(lambda: _steps(_runFolderUnder(log_dir)), process, deadline)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 143, _output(process)[1]
    run_dir = _runFolderUnder(log_dir)
    stdout, _ = _output(process)
    assert "Stopped: " in stdout and f"--resume {shlex.quote(run_dir)}\n" in stdout
    stopped_at, folder = listCheckpoints(run_dir)[-1]
    manifest = readManifest(folder)
    assert manifest["stopped_by"] == "SIGTERM" and manifest["resumable"] and manifest["num_timesteps"] == stopped_at
    assert json.load(open(os.path.join(folder, "run_state.json")))["episode_starts"][1] is not None  # 2 workers

    # Ctrl-C in a terminal reaches the whole process group: the env workers ignore it, training checkpoints
    process = _start(log_dir, ["--resume", run_dir], new_session=True)
    assert _waitFor(lambda: max(_steps(run_dir)) > stopped_at, process, deadline)
    os.killpg(process.pid, signal.SIGINT)
    assert process.wait(timeout=120) == 130, _output(process)[1]
    assert f"Resuming from {folder}" in _output(process)[0]
    last_steps, last = listCheckpoints(run_dir)[-1]
    assert readManifest(last)["stopped_by"] == "SIGINT" and last_steps > stopped_at
    rows = _rows(_monitor(run_dir)["1.monitor.csv"])
    assert rows and all(int(row["l"]) == 250 for row in rows)


SURVIVING_STEPS = 20000


@pytest.mark.slow
def test_training_survives_the_visdom_server_being_killed(tmp_path):
    port = findFreePort()
    server = startServer(port, env_path=str(tmp_path / "visdom_envs"))
    try:
        assert waitForServer(port), "the visdom server did not start"
        log_dir = str(tmp_path / "logs")
        deadline = time.monotonic() + DEADLINE_S
        # 80 episodes, the run's live curve redrawn at each: dozens after the kill, the server killed a few into it
        process = _start(log_dir, [*GT, "--algo", "random_agent", "--num-timesteps", str(SURVIVING_STEPS), "--port",
                                   str(port), "--log-dir", log_dir])
        client = visdom.Visdom(server="http://127.0.0.1", port=port, use_incoming_socket=False)

        def plotted() -> bool:
            run_dir = _runFolderUnder(log_dir)
            if run_dir is None:
                return False
            env_name = f"MobileRobotGymEnv-v0_ground_truth_random_agent_{os.path.basename(run_dir)}"
            return bool(client.win_exists(f"{env_name}_reward", env_name))

        assert _waitFor(plotted, process, deadline), "no curve reached the server"
        server.kill()  # mid-run
        server.wait(timeout=30)
        assert process.poll() is None, "the run ended before the server was killed"
        assert process.wait(timeout=max(1.0, deadline - time.monotonic())) == 0, _output(process)[1]
    finally:
        if server.poll() is None:
            server.kill()
    stdout, stderr = _output(process)
    assert f"Done: {SURVIVING_STEPS} steps" in stdout
    warnings = [line for line in stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) <= 1 and all(str(port) in line for line in warnings), stderr
    assert sum(int(row["l"]) for row in _rows(_monitor(_runFolderUnder(log_dir))["0.monitor.csv"])) == SURVIVING_STEPS


@pytest.fixture(scope="module")
def shortRun(tmp_path_factory) -> str:
    """A finished ppo2 run with checkpoints at 250 and 500 steps (in-process, cheap; one env)."""
    log_dir = tmp_path_factory.mktemp("short")
    code = train.main(["--no-vis", "--no-progress", *GT, "--algo", "ppo2", "--num-timesteps", "500",
                       "--checkpoint-freq", "250", "--log-dir", str(log_dir), "--hyperparam", "n_steps:125",
                       "batch_size:25", "n_epochs:1", "--num-cpu", "1"])
    assert code == 0
    return _runFolderUnder(str(log_dir))


@pytest.mark.slow
def test_full_disk_during_a_checkpoint_keeps_the_previous_one(tmp_path, shortRun, monkeypatch):
    run_dir = str(tmp_path / "run")
    shutil.copytree(shortRun, run_dir)
    (steps, previous), algo_class = listCheckpoints(run_dir)[-1], registered_rl["ppo2"][0]
    before = {name: open(os.path.join(previous, name), "rb").read() for name in os.listdir(previous)
              if os.path.isfile(os.path.join(previous, name))}
    algo = algo_class.load(os.path.join(previous, "ppo2_model.zip"))
    args = json.load(open(os.path.join(run_dir, "args.json")))

    def fullDisk(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(np, "savez", fullDisk)  # the generators' and the statistics' arrays
    info = runDescription(run_dir, type("Args", (), args))
    with pytest.raises(CheckpointError) as error:
        writeCheckpoint(run_dir, algo, "ppo2", info, steps + 125, {}, captureGlobalRNG(), True, True)
    message = str(error.value)
    assert "\n" not in message and "No space left on device" in message and f"({steps} steps) is intact" in message
    # through the training callback: one warning line, training would go on
    callback = TrainingCallback(algo, "ppo2", run_dir, total_timesteps=1000, checkpoint_freq=125, progress=False,
                                run_info=info)
    with pytest.warns(UserWarning) as caught:
        assert callback.checkpoint(steps + 250) is None
    assert len(caught) == 1 and "\n" not in str(caught[0].message)
    monkeypatch.undo()
    assert not glob.glob(os.path.join(run_dir, "checkpoints", ".*"))  # the partial folders were removed
    assert [s for s, _ in listCheckpoints(run_dir)][-1] == steps
    assert {name: open(os.path.join(previous, name), "rb").read() for name in before} == before
    checkManifest(readManifest(previous), previous, "ppo2")
    assert algo_class.load(os.path.join(previous, "ppo2_model.zip")).num_timesteps == steps


def _lastLineError(module: str, *args: str) -> str:
    result = runModule(module, *args)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.slow
def test_damaged_or_foreign_files_are_refused(tmp_path, shortRun):
    run_dir = str(tmp_path / "run")
    shutil.copytree(shortRun, run_dir)
    # a model file changed since its save is refused where it is loaded
    latest = os.path.join(run_dir, "ppo2_model.zip")
    with open(latest, "r+b") as handle:
        handle.truncate(os.path.getsize(latest) - 10)
    with pytest.raises(UsageError, match="cut short"):
        enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10"])
    with pytest.raises(UsageError, match="--load-rl-model-path.*cut short"):
        train.main(["--no-vis", *GT, "--algo", "ppo2", "--load-rl-model-path", latest, "--log-dir", str(tmp_path)])
    # as if killed before its end: no final model manifest, no final checkpoint (which only marks the end)
    _, final = listCheckpoints(run_dir)[-1]
    assert readManifest(final)["finished"] and not readManifest(final)["resumable"]
    os.remove(os.path.join(run_dir, "manifest.json"))
    shutil.rmtree(final)
    _, resumable = listCheckpoints(run_dir)[-1]
    model = os.path.join(resumable, "ppo2_model.zip")
    with open(model, "r+b") as handle:  # cut short, as by a full disk outside our control
        handle.truncate(os.path.getsize(model) // 2)
    line = _lastLineError("rl_baselines.train", "--resume", run_dir)  # its only checkpoint: nothing to fall back to
    assert model in line and "cut short" in line and "no intact checkpoint to resume from" in line
    # a checkpoint of another env
    manifest_path = os.path.join(resumable, "manifest.json")
    manifest = json.load(open(manifest_path))
    shutil.copy(os.path.join(shortRun, "checkpoints", os.path.basename(resumable), "ppo2_model.zip"), model)
    json.dump({**manifest, "env": "OmnirobotEnv-v0"}, open(manifest_path, "w"))
    line = _lastLineError("rl_baselines.train", "--resume", run_dir)
    assert "env OmnirobotEnv-v0" in line and "MobileRobotGymEnv-v0" in line
    # no checkpoint at all beside its model, as after a kill during a final save without checkpoints
    shutil.rmtree(os.path.join(run_dir, "checkpoints"))
    with pytest.raises(UsageError, match=r"holds a model but no checkpoint with a manifest \(saved by an older "
                                         r"version, or killed while saving it\); .*start the run again in a new"):
        planResume(run_dir)


@pytest.mark.slow
def test_resume_refusals_and_finished_run(tmp_path, shortRun, capsys):
    with pytest.raises(UsageError, match="only --no-vis, --no-progress, --port, --device, --torch-threads, --vec-env, "
                                         "--srl-model-path may be given with it, not '--seed'"):
        train.main(["--resume", shortRun, "--seed", "3"])
    with pytest.raises(UsageError, match="not a run folder"):
        train.main(["--resume", str(tmp_path)])
    plugin_run = tmp_path / "plugin_run"
    plugin_run.mkdir()
    (plugin_run / "args.json").write_text(json.dumps(TrainConfig(algo="cem", env="MobileRobotGymEnv-v0",
                                                                 num_cpu=1).argsRecord()))  # (as validated)
    with pytest.raises(UsageError, match="cem does not implement saveTrainingState/loadTrainingState"):
        train.main(["--resume", str(plugin_run)])
    for text, what in (("{}", "names no algorithm"), ("[1, 2]", "holds a list")):  # (it said: names algorithm None)
        (plugin_run / "args.json").write_text(text)
        with pytest.raises(UsageError, match=f"args.json {what}: not the settings of a run of rl_baselines.train$"):
            train.main(["--resume", str(plugin_run)])
    assert train.main(["--resume", shortRun, "--no-vis"]) == 0
    assert "Already finished (500 steps)" in capsys.readouterr().out
    # an edited args.json: each value as its flag reads it, refused before anything is written (a seed of -5 was a
    # traceback after the monitor files and progress.csv were rewritten)
    edited = str(tmp_path / "edited")
    shutil.copytree(shortRun, edited)
    before = {path: os.path.getmtime(path) for path in glob.glob(os.path.join(edited, "**", "*"), recursive=True)}
    recorded = json.loads(open(os.path.join(edited, "args.json")).read())
    for key, value, message in (("seed", -5, "argument --seed: '-5' is out of range"),
                                ("num_cpu", "x", "argument --num-cpu: 'x' is not a number"),
                                ("continuous_actions", "yes", "a switch takes True or False, not 'yes'")):
        with open(os.path.join(edited, "args.json"), "w") as handle:
            json.dump({**recorded, key: value}, handle)
        with pytest.raises(UsageError, match=rf"^--resume: {re.escape(edited)}/args.json holds a value its flag "
                                             rf"refuses: .*{re.escape(message)}"):
            train.main(["--resume", edited])
    assert {path: os.path.getmtime(path) for path in before if not path.endswith("args.json")} == {
        path: time for path, time in before.items() if not path.endswith("args.json")}
    # a run that another process is training right now (it holds the run's lock)

    running = str(tmp_path / "running")
    shutil.copytree(shortRun, running)
    os.remove(os.path.join(running, "manifest.json"))
    shutil.rmtree(listCheckpoints(running)[-1][1])
    before = _monitor(running)
    lock = lockRun(running)
    try:
        with pytest.raises(UsageError, match="being trained by another process"):
            train.main(["--resume", running])
    finally:
        lock.release()
    assert _monitor(running) == before


def test_default_checkpoints_are_five_per_run_and_a_resumed_run_keeps_their_steps(tmp_path, monkeypatch):
    """ppo2, 2,000 steps, --checkpoint-freq 0: due every 400 steps, each written at the first rollout start (every 128
    steps with one env, whatever the epochs per rollout: one here) at or after its step: 512, 896, 1280, 1664 and the
    final 2048 (the interval counted from each late save wrote four: 512, 1024, 1536, 2048). Stopped at 700 and
    resumed from 512, the run writes the same ones."""
    args = [*GT, "--algo", "ppo2", "--num-timesteps", "2000", "--seed", "3", "--hyperparam", "n_epochs:1",
            "--num-cpu", "1"]
    reference = trainHere("--log-dir", tmp_path / "reference", *args)
    assert _steps(reference) == [512, 896, 1280, 1664, 2048]
    run_dir = interruptedRun(monkeypatch, str(tmp_path / "stopped"), args, at_step=700)
    assert _steps(run_dir) == [512]
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    assert _steps(run_dir) == [512, 896, 1280, 1664, 2048]


def test_an_args_json_that_builds_another_env_than_the_checkpoints_is_refused_before_anything_is_written(
        tmp_path, monkeypatch):
    """args.json edited to continuous actions on a run of discrete ones: a traceback (SB3's "Action spaces do not
    match") after the monitor files and progress.csv had been rewritten; now one line naming args.json."""
    args = [*GT, "--algo", "ppo2", "--num-timesteps", "1000", "--seed", "3", "--num-cpu", "1", "--checkpoint-freq",
            "256"]
    run_dir = interruptedRun(monkeypatch, str(tmp_path / "stopped"), args, at_step=600)
    path = os.path.join(run_dir, "args.json")
    with open(path) as handle:
        recorded = json.load(handle)
    with open(path, "w") as handle:
        json.dump({**recorded, "continuous_actions": True}, handle)
    before = {name: os.path.getmtime(name) for name in glob.glob(os.path.join(run_dir, "**", "*"), recursive=True)}
    with pytest.raises(UsageError, match=rf"^--resume: {re.escape(path)} does not rebuild the checkpoint's env: .* was "
                                         r"trained with discrete actions, this run has continuous actions"):
        train.main(["--resume", run_dir, "--no-vis", "--no-progress"])
    assert {name: os.path.getmtime(name) for name in glob.glob(os.path.join(run_dir, "**", "*"), recursive=True)} \
        == before


def test_a_damaged_progress_csv_is_refused_before_it_is_cut(tmp_path, monkeypatch):
    """A progress.csv of bytes that are not text was cut to the checkpoint's length, then the resume crashed with a
    UnicodeDecodeError (IsADirectoryError for a folder): refused in one line, the file as it was; so is a folder
    where the run's lock file goes."""
    args = [*GT, "--algo", "ppo2", "--num-timesteps", "1000", "--seed", "3", "--num-cpu", "1", "--checkpoint-freq",
            "256"]
    run_dir = interruptedRun(monkeypatch, str(tmp_path / "stopped"), args, at_step=600)
    progress = os.path.join(run_dir, "progress.csv")
    kept = open(progress, "rb").read()
    for damage, message in ((b"\x8c\xff\xfe" * 1000, "is not text (not UTF-8)"),
                            (kept.split(b"\n", 1)[0] + b"\n", "has 1 line, fewer than the")):
        with open(progress, "wb") as handle:
            handle.write(damage)
        with pytest.raises(UsageError, match=rf"^--resume: {re.escape(progress)} {re.escape(message)}"):
            train.main(["--resume", run_dir, "--no-vis", "--no-progress"])
        assert open(progress, "rb").read() == damage
    with open(progress, "wb") as handle:
        handle.write(kept)
    # a folder in the lock file's place was an IsADirectoryError traceback
    lock = os.path.join(run_dir, ".train.lock")
    if os.path.exists(lock):
        os.remove(lock)
    os.mkdir(lock)
    with pytest.raises(UsageError, match=rf"^--resume: {re.escape(lock)} is not a file \(the run's lock file\)"):
        train.main(["--resume", run_dir, "--no-vis", "--no-progress"])
    os.rmdir(lock)
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0


def test_a_finished_run_stopped_before_its_learning_curve_gets_it_on_resume(tmp_path, shortRun, capsys) -> None:
    """A SIGKILL between a run's final checkpoint and its learning_curve.png left it without one for good: every
    --resume said "Already finished" and drew nothing. The curve is drawn from the monitor files, as the run draws it."""
    run_dir = str(tmp_path / "run")
    shutil.copytree(shortRun, run_dir)
    curve = os.path.join(run_dir, "learning_curve.png")
    with open(curve, "rb") as handle:
        drawn_by_the_run = handle.read()
    os.remove(curve)
    capsys.readouterr()
    assert train.main(["--resume", run_dir, "--no-vis"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == \
        "learning_curve.png: drawn from its monitor files (the run stopped before it)"
    with open(curve, "rb") as handle:
        assert handle.read() == drawn_by_the_run
    assert train.main(["--resume", run_dir, "--no-vis"]) == 0  # drawn once
    assert "learning_curve.png" not in capsys.readouterr().out
