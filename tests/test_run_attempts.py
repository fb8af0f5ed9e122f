"""A sweep run's attempts (rl_baselines.sweeps.run_attempts): how a run that ended is recorded, its wall time over
the attempts it took, and what a stop by a signal says about continuing it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from conftest import REPO, trainHere

from rl_baselines.sweeps import run_attempts
from rl_baselines.sweeps.run_attempts import DONE_FILE, FAILED_FILE
from rl_baselines.sweeps.sweep import expandGrid


def test_a_continued_run_adds_the_seconds_of_its_stopped_attempts(tmp_path, monkeypatch) -> None:
    (spec,) = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0], [], str(tmp_path), cwd=REPO)
    folder = tmp_path / "run"
    folder.mkdir()
    # two attempts stopped before (the second wrote failed.json with both attempts' seconds)
    (folder / "train.log").write_text(f"# {sys.executable} -m rl_baselines.train --tag x\nStep 1\n"
                                      f"# {sys.executable} -m rl_baselines.train --resume {folder}\n")
    (folder / FAILED_FILE).write_text(json.dumps({"wall_time_s": 100.0, "attempts": 2, "returncode": -2}))
    assert run_attempts._loggedAttempts(str(folder / "train.log")) == 2
    assert run_attempts._earlierWall(str(folder / FAILED_FILE)) == 100
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    monkeypatch.setattr(run_attempts.time, "time", lambda: 1000.0)  # a fake clock: this attempt ran 5 s
    started = run_attempts.StartedRun(spec, process, str(folder), str(folder / "train.log"), 995.0,
                                      open(folder / "train.log", "a"), 100.0, 3)
    result = run_attempts.finishRun(started, 0)
    done = json.load(open(folder / DONE_FILE))
    assert result.attempts == done["attempts"] == 3
    assert result.wall_time_s == done["wall_time_s"] == 105.0
    assert run_attempts._earlierWall(str(folder / "none.json")) == 0.0
    assert run_attempts._loggedAttempts(str(folder / "no.log")) == 0


def test_a_run_killed_after_its_last_save_is_done_and_a_stopped_one_names_the_signal(tmp_path, monkeypatch) -> None:
    """A Ctrl-C reaches the whole sweep: a run that had saved its last step counts as done whatever its exit code; an
    unfinished one is failed with the signal that stopped it, not the log's last line, and whether the same command
    continues it from a checkpoint or starts it again (stopped before its first checkpoint or its args.json)."""
    (spec,) = expandGrid(["ppo2"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0], [], str(tmp_path), cwd=REPO)
    finished = trainHere("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                         "--num-timesteps", "64", "--hyperparam", "n_steps:64", "--log-dir", str(tmp_path / "done"))
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    for folder, returncode, state, message in (
            (finished, -signal.SIGINT, "done", ""),
            (str(unfinished), -signal.SIGINT, "failed",
             "stopped by SIGINT (no checkpoint yet: the same command starts it again)"),
            (str(unfinished), 128 + signal.SIGTERM, "failed",
             "stopped by SIGTERM (no checkpoint yet: the same command starts it again)"),
            (str(unfinished), 1, "failed", "Run folder: x")):
        with open(os.path.join(folder, "train.log"), "w") as handle:
            handle.write("Run folder: x\n")
        started = run_attempts.StartedRun(spec, process, folder, os.path.join(folder, "train.log"), time.time(),
                                        open(os.path.join(folder, "train.log"), "a"))
        result = run_attempts.finishRun(started, returncode)
        assert (result.state, result.message) == (state, message)
    # a checkpoint in the folder: train --resume goes on from it
    monkeypatch.setattr(run_attempts, "runStatus", lambda folder: "resume")
    started = run_attempts.StartedRun(spec, process, str(unfinished), str(unfinished / "train.log"), time.time(),
                                      open(unfinished / "train.log", "a"))
    assert run_attempts.finishRun(started, 128 + signal.SIGINT).message == (
        "stopped by SIGINT (the same command continues it from its last checkpoint)")
