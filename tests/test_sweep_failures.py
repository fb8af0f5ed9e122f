"""What the commands that start runs for you (rl_baselines.pipeline, hyperparam_search) say of a run that failed: the
error its log ends with, on one line, a Python exception's whole message included (not only its last line)."""
from __future__ import annotations

import subprocess
import sys
import time

from conftest import REPO

from rl_baselines.sweeps import run_attempts, search_trials
from rl_baselines.sweeps.log_errors import killedBy, logError
from rl_baselines.sweeps.sweep import expandGrid

# How a train run whose policy went NaN (a2c with a huge learning rate) ends its log
NAN_TRACEBACK = """Run folder: x
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/distributions/distribution.py", line 77, in __init__
    raise ValueError(
ValueError: Expected parameter loc (Tensor of shape (1, 2)) of distribution Normal(loc: torch.Size([1, 2]), \
scale: torch.Size([1, 2])) to satisfy the constraint Real(), but found invalid values:
tensor([[nan, nan]])
"""
NAN_ERROR = ("ValueError: Expected parameter loc (Tensor of shape (1, 2)) of distribution Normal(loc: "
             "torch.Size([1, 2]), scale: torch.Size([1, 2])) to satisfy the constraint Real(), but found invalid "
             "values: tensor([[nan, nan]])")


def _failedRun(tmp_path, log: str, returncode: int = 1) -> run_attempts.RunResult:
    (spec,) = expandGrid(["a2c"], ["MobileRobotGymEnv-v0"], ["ground_truth"], [0], [], str(tmp_path), cwd=REPO)
    folder = tmp_path / "run"
    folder.mkdir(parents=True)
    (folder / "train.log").write_text(log)
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    started = run_attempts.StartedRun(spec, process, str(folder), str(folder / "train.log"), time.time(),
                                      open(folder / "train.log", "a"))
    return run_attempts.finishRun(started, returncode)


def test_a_failed_runs_line_gives_the_exception_its_log_ends_with(tmp_path) -> None:
    """It said ``tensor([[nan, nan]])``, the last line of the exception's message."""
    result = _failedRun(tmp_path, NAN_TRACEBACK)
    assert (result.state, result.message) == ("failed", NAN_ERROR)
    # the search's failed trial says the same (it read the whole log for its last line)
    assert search_trials.lastLogError(result.log) == NAN_ERROR


def test_a_log_that_goes_on_after_a_traceback_gives_its_last_line(tmp_path) -> None:
    """A traceback printed earlier (a warning's, a retried step's) is not the error a later last line gives."""
    log = NAN_TRACEBACK + "".join(f"step {step}\n" for step in range(12)) + "error: --resume: no checkpoint\n"
    assert _failedRun(tmp_path, log).message == "error: --resume: no checkpoint"
    assert _failedRun(tmp_path / "b", "Run folder: x\nerror: a one-line error\n").message == "error: a one-line error"


def test_an_exceptions_long_message_is_said_whole_and_a_long_last_line_is_cut_visibly() -> None:
    """Both were cut at 300 characters, mid-word and without a sign of it (README: "its whole message")."""
    message = "ValueError: " + " ".join(f"word{index}" for index in range(100))
    assert logError(f"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n{message}\n") == message
    warning = "warning: You have specified a mini-batch size of 64, " + "x" * 400
    assert logError(f"step 1\n{warning}\n") == warning[:300] + "..."
    assert logError("step 1\nerror: short\n") == "error: short"


def test_a_run_killed_by_a_signal_is_said_killed_not_by_its_logs_last_line(tmp_path) -> None:
    """A trial whose train process was killed (kill -9, the OOM killer) read as failing with the unrelated warning its
    log happened to end with; a signal other than the stop signals (SIGSEGV) did so in a sweep's failed line too."""
    assert (killedBy(-9), killedBy(-11), killedBy(1), killedBy(0), killedBy(None)) == (
        "killed by SIGKILL", "killed by SIGSEGV", None, None, None)
    log = "Run folder: x\nwarning: You have specified a mini-batch size of 64\n"
    assert _failedRun(tmp_path, log, returncode=-11).message == "killed by SIGSEGV"
