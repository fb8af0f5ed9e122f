"""One run of a sweep, attempt by attempt: find a run spec's attempts (run folders), start its train process in one,
record how it ended, read that record back. The unit of work of the sweep executors (:func:`executeRun`).

A run (rl_baselines/sweeps/sweep.py: RunSpec, its run id) lives in the folder train would give it,
``<log-dir>/<env>/<srl-model>/<algo>/<YY-MM-DD_HHhMM_SS>_<run id>/``, holding besides train's own files:

    train.log     the run's stdout and stderr (first line: the command)
    train.pid     the train process id, while it runs
    done.json     written atomically when train exited with code 0: the completion marker
    failed.json   written atomically when it did not: exit code (negative: killed by that signal) and log path;
                  ``"stopped": true`` when the sweep's Ctrl-C or SIGTERM stopped it (the same command continues it)

Both markers hold ``attempts``, the train processes the run took (one ``# command`` line each in train.log), and
``wall_time_s``, the seconds they ran: a continued attempt reads the stopped one's failed.json before removing it.
An attempt that left no marker (killed with its pipeline by SIGKILL, a lost machine) adds no seconds.

A run with ``done.json`` is finished; any other attempt of that run id is deleted when the run is started again.
Beside the run folders, ``.<run id>.claim.lock`` and ``.<run id>.claim.json`` are the claim of the pipeline that runs
it (see rl_baselines/sweeps/claims.py): a pipeline starts a run, and deletes its attempts, only while it holds that.
"""
from __future__ import annotations

import datetime
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, fields
from typing import IO, Any

from rl_baselines.core.run_folder import newStamp
from rl_baselines.runs.resume import runStatus
from rl_baselines.sweeps.log_errors import killedBy, lastLogError
from rl_baselines.sweeps.sweep import RunSpec
from srl_toolbox.devices import threadsEnvironment
from srl_toolbox.files import atomicPath, readJson, writeJson

TRAIN_MODULE = "rl_baselines.train"
RUN_LOG = "train.log"
PID_FILE = "train.pid"
# The line train.log starts each attempt with: "# <python> -m rl_baselines.train <arguments>"
_COMMAND_LINE = re.compile(rf"# \S+ -m {re.escape(TRAIN_MODULE)}( |$)")
DONE_FILE = "done.json"
WAIT_SLICE_S = 1.0  # executeRun's longest blocking wait on a train process
# Seconds a train process the sweep stops gets to exit before it is killed: its wait for a clean point
# (rl_baselines.runs.checkpoint_callbacks.STOP_WAIT_S), its checkpoint and final save.
STOP_GRACE_S = 30.0
FAILED_FILE = "failed.json"
# What rl_baselines.runs.resume.runStatus says of a folder that ``train --resume`` continues in place.
RESUMABLE = ("resume", "restart", "finished")


@dataclass
class RunResult:
    """
    How a run ended.

    :param run_id: the run id
    :param state: "done" or "failed"
    :param returncode: train's exit code (negative: killed by that signal; None: it never started)
    :param run_folder: the run folder
    :param log: the run's log file
    :param wall_time_s: seconds from start to exit, summed over the attempts the run took
    :param message: the error the log of a failed run ends with (:func:`lastLogError`), or why it could not start
    :param attempts: train processes the run took (more than 1: resumed from a stopped attempt)
    """

    run_id: str
    state: str
    returncode: int | None
    run_folder: str
    log: str
    wall_time_s: float
    message: str = ""
    attempts: int = 1


@dataclass
class StartedRun:
    """
    A run whose train process is running.

    :param spec: the run spec
    :param process: the train process
    :param run_folder: its folder
    :param log_path: its log file
    :param started_at: time.time() at start
    :param log_handle: the open log file (closed by :func:`finishRun`)
    :param earlier_wall_s: seconds the earlier attempts of a resumed run ran (their failed.json)
    :param attempt: which attempt this is (1: the first)
    """

    spec: RunSpec
    process: subprocess.Popen
    run_folder: str
    log_path: str
    started_at: float
    log_handle: IO[str]
    earlier_wall_s: float = 0.0
    attempt: int = 1


def runAttempts(spec: RunSpec, run_id: str | None = None) -> list[str]:
    """
    :param spec: a run spec
    :param run_id: another id of the run (its ``earlier_id``; default: its run id)
    :return: the folders of this run id's earlier attempts, oldest first
    """
    return sorted(path for path in glob.glob(os.path.join(glob.escape(spec.parent), f"*_{run_id or spec.run_id}"))
                  if os.path.isdir(path))


def finishedFolder(spec: RunSpec) -> str | None:
    """
    :param spec: a run spec
    :return: the folder of its finished attempt (done.json), else of one finished under its ``earlier_id``, or None
    """
    for run_id in dict.fromkeys((spec.run_id, spec.earlier_id or spec.run_id)):
        if done := [path for path in runAttempts(spec, run_id) if os.path.isfile(os.path.join(path, DONE_FILE))]:
            return done[-1]
    return None


def readMarker(run_folder: str) -> dict[str, Any] | None:
    """
    :param run_folder: a run folder
    :return: the content of its done.json or failed.json, None when it has neither (not finished, or running)
    """
    for name in (DONE_FILE, FAILED_FILE):
        path = os.path.join(run_folder, name)
        if os.path.isfile(path):
            return readJson(path)
    return None


def _sweepAttempts(spec: RunSpec) -> list[str]:
    """:return: the earlier attempts of a run that the sweep made (their train.log or marker says so), oldest first"""
    return [path for path in runAttempts(spec)
            if any(os.path.exists(os.path.join(path, name)) for name in (RUN_LOG, DONE_FILE, FAILED_FILE))]


def resumableAttempt(spec: RunSpec) -> str | None:
    """
    :param spec: a run spec
    :return: the sweep's newest unfinished attempt of this run when ``train --resume`` can continue it (from its
        last checkpoint, or from step 0 in the same folder when it had none), else None
    """
    attempts = _sweepAttempts(spec)
    if attempts and not os.path.isfile(os.path.join(attempts[-1], DONE_FILE)) and runStatus(attempts[-1]) in RESUMABLE:
        return attempts[-1]
    return None


def startRun(spec: RunSpec, resume: bool = True, threads: int | None = None,
             envs_in_process: bool = False) -> StartedRun:
    """
    Start ``python -m rl_baselines.train`` for a run, its output going to train.log. When ``resume`` is set and the
    sweep's newest attempt of the run is unfinished but resumable (a killed worker, an interrupted sweep), it goes on
    there with ``train --resume``, so at most one checkpoint interval of work is redone; otherwise the earlier
    attempts are deleted and the run starts in a new folder (the caller decides whether a finished one is redone).

    :param spec: the run spec
    :param resume: continue an unfinished attempt when possible
    :param threads: the run's share of the cores, its torch threads (``OMP_NUM_THREADS`` unless set already; train's
        ``--torch-threads`` auto reads it); None: train's own auto
    :param envs_in_process: its envs step in the training process (``--vec-env dummy`` added to its command; not a
        setting of its result, so not of its run id)
    :return: the started run
    """
    run_folder = resumableAttempt(spec) if resume else None
    earlier_wall_s, attempt = 0.0, 1
    if run_folder is not None:
        for path in _sweepAttempts(spec):
            if path != run_folder:
                shutil.rmtree(path)
        earlier_wall_s = _earlierWall(os.path.join(run_folder, FAILED_FILE))
        attempt = _loggedAttempts(os.path.join(run_folder, RUN_LOG)) + 1
        try:
            os.remove(os.path.join(run_folder, FAILED_FILE))
        except FileNotFoundError:
            pass
        train_argv = ["--resume", run_folder, "--no-vis", "--no-progress"]
    else:
        for path in _sweepAttempts(spec):
            shutil.rmtree(path)
        stamp = newStamp()
        run_folder = os.path.join(spec.parent, f"{stamp}_{spec.run_id}")
        os.makedirs(run_folder)
        train_argv = spec.trainArgv(run_folder)
    log_path = os.path.join(run_folder, RUN_LOG)
    command = [sys.executable, "-m", TRAIN_MODULE, *train_argv, *(["--vec-env", "dummy"] if envs_in_process else [])]
    log_handle = open(log_path, "a", encoding="utf-8")  # a resumed run's log goes on after the earlier attempt's
    log_handle.write("# " + " ".join(command) + "\n")
    log_handle.flush()
    # The run may start on another machine (Ray): its directory is used when it exists there.
    cwd = spec.cwd if os.path.isdir(spec.cwd) else None
    # Its own session: a terminal's Ctrl-C reaches only the sweep, which then stops its runs with SIGINT, and
    # Linux's autogroup scheduler shares the CPUs between runs as it does between other users' processes.
    process = subprocess.Popen(command, stdout=log_handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               cwd=cwd, env={**(os.environ if threads is None else threadsEnvironment(threads)),
                                             "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    _writeText(os.path.join(run_folder, PID_FILE), f"{process.pid}\n")
    return StartedRun(spec, process, run_folder, log_path, time.time(), log_handle, earlier_wall_s, attempt)


def _earlierWall(failed_path: str) -> float:
    """
    :param failed_path: the failed.json of the attempt a run continues
    :return: the seconds its attempts ran, 0 without a readable one
    """
    try:
        return float(readJson(failed_path)["wall_time_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _loggedAttempts(log_path: str) -> int:
    """:return: the train commands a run's log records (one per attempt), 0 without a log"""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            return sum(1 for line in handle if _COMMAND_LINE.match(line))
    except OSError:
        return 0


def _writeText(path: str, text: str) -> None:
    """Write a small text file atomically (a reader never sees it half-written)."""

    with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8") as handle:
        handle.write(text)


def stoppedBySignal(returncode: int | None) -> signal.Signals | None:
    """:return: the stop signal (SIGINT, SIGTERM, SIGKILL) that ended a train process with this exit code (killed by
    it, or train's 128 + signal after its checkpoint: the same command continues the run), None for another end"""
    signum = -returncode if returncode is not None and returncode < 0 else (returncode or 0) - 128
    return signal.Signals(signum) if signum in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL) else None


def continuesFromCheckpoint(run_folder: str) -> bool:
    """:return: the run folder holds a checkpoint that ``train --resume`` (and so the same sweep command) continues
    from; False for a run stopped before its first checkpoint (or before its args.json): it starts again"""
    return runStatus(run_folder) == "resume"


def _failureMessage(returncode: int | None, log_path: str, run_folder: str) -> str:
    """:return: why a run failed: the signal that stopped it (:func:`stoppedBySignal`) and whether the same command
    continues it or starts it again (:func:`continuesFromCheckpoint`), another signal that killed it, else the error
    its log ends with"""
    stopped = stoppedBySignal(returncode)
    if stopped is not None:
        return f"stopped by {stopped.name} (" + ("the same command continues it from its last checkpoint)"
                                                 if continuesFromCheckpoint(run_folder) else
                                                 "no checkpoint yet: the same command starts it again)")
    return killedBy(returncode) or lastLogError(log_path)


def finishRun(started: StartedRun, returncode: int, stopped: bool = False) -> RunResult:
    """
    Record how a run ended: done.json (exit code 0) or failed.json, written atomically into its folder.

    :param started: the run
    :param returncode: its train process's exit code
    :param stopped: the sweep stopped the run (its Ctrl-C or SIGTERM): an unfinished run's failed.json says
        ``"stopped": true``, so that another pipeline waiting for the run counts it stopped, not failed
    :return: the result
    """
    started.log_handle.close()
    wall_time = started.earlier_wall_s + time.time() - started.started_at
    # a run that saved its last step is done, even when a stop signal ended its process afterwards
    state = "done" if returncode == 0 or runStatus(started.run_folder) == "finished" else "failed"
    message = "" if state == "done" else _failureMessage(returncode, started.log_path, started.run_folder)
    result = RunResult(started.spec.run_id, state, returncode, started.run_folder, started.log_path, wall_time,
                       message, started.attempt)
    marker = {**asdict(result), "finished_at": datetime.datetime.now().isoformat(timespec="seconds"),
              "spec": started.spec.toDict(), **({"stopped": True} if stopped and state == "failed" else {})}
    writeJson(os.path.join(started.run_folder, DONE_FILE if state == "done" else FAILED_FILE), marker)
    try:
        os.remove(os.path.join(started.run_folder, PID_FILE))
    except FileNotFoundError:
        pass
    return result


def recordedResult(run_folder: str, since: float = 0.0) -> RunResult | None:
    """
    :param run_folder: a run attempt's folder
    :param since: a time (``time.time()``): a marker written before it is not read
    :return: the result :func:`finishRun` recorded in it (:func:`readMarker`), None when there is none written since
        ``since``, or it is unreadable
    """
    markers = [os.path.join(run_folder, name) for name in (DONE_FILE, FAILED_FILE)]
    if not any(os.path.isfile(path) and os.path.getmtime(path) >= since for path in markers):
        return None
    try:
        marker = readMarker(run_folder)
        return RunResult(**{item.name: marker[item.name] for item in fields(RunResult) if item.name in marker})
    except (OSError, ValueError, TypeError, KeyError):
        return None


def executeRun(spec: RunSpec, resume: bool = True, threads: int | None = None) -> RunResult:
    """
    Run one spec to its end (blocking): the unit of work of the sweep executors (a Ray task runs exactly this).
    An interruption (KeyboardInterrupt, a cancelled task) terminates the train process and is re-raised.

    :param spec: the run spec
    :param resume: continue an unfinished attempt when possible (see :func:`startRun`)
    :param threads: the run's torch threads (see :func:`startRun`)
    :return: how it ended
    """
    started = startRun(spec, resume, threads)
    try:
        while True:  # waits of a second: an interruption raised in this thread (a cancelled Ray task) lands between
            try:
                returncode = started.process.wait(timeout=WAIT_SLICE_S)
                break
            except subprocess.TimeoutExpired:
                continue
    except BaseException:
        stopProcess(started.process)
        finishRun(started, started.process.returncode, stopped=True)
        raise
    return finishRun(started, returncode)


def stopProcess(process: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> None:
    """
    Ask a train process to stop (SIGINT: it checkpoints, at the end of its update in progress when that comes within
    rl_baselines.runs.checkpoint_callbacks.STOP_WAIT_S, saves its model and exits), kill it after ``grace_s``.

    :param process: the process
    :param grace_s: seconds it gets to exit
    """
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
