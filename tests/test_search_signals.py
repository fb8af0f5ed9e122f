"""Signals to hyperparam_search with --workers: SIGTERM and a SIGINT to the command alone stop every trial and record
it failed, and no new trial starts; a Ctrl-C to the process group while the workers start prints no
traceback; one while the outputs are written stops the command after them; one while a process reads or writes the
study is taken once that is done."""
from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time

import optuna
import pytest
from conftest import childProcesses, startModule
from test_hyperparam_search import COMMON, ENV, _loadStudy, _searchConfig

from rl_baselines.sweeps import hyperparam_search, search_trials
from rl_baselines.sweeps.search_outputs import writeTrialsCsv
from srl_toolbox.signals import raiseTerminated


def _twoTrialsTraining(tmp_path) -> tuple:
    """:return: a search of 4 long trials on 2 workers, started, once both workers' first trials train (or it ended),
    its study's name and folder"""
    process = startModule("rl_baselines.hyperparam_search", *COMMON, "--n-trials", "4", "--workers", "2",
                          "--num-timesteps", "100000", "--log-dir", tmp_path)
    name = f"ppo2_{ENV}_ground_truth_tpe"
    folder = os.path.join(str(tmp_path), "hyperparam_search", name)
    deadline = time.time() + 120
    while len(glob.glob(os.path.join(folder, "trial_*", "*", "*", "*", "*", "monitor", "0.monitor.csv"))) < 2 and \
            time.time() < deadline and process.poll() is None:
        time.sleep(0.5)
    return process, name, folder


@pytest.mark.slow
def test_sigterm_stops_every_trial_and_records_it(tmp_path):
    """SIGTERM (kill, timeout, a batch scheduler) reaches the command only: it stops like a Ctrl-C, passing the signal
    to its worker processes, whose trials' train processes are stopped (they lead their own sessions, and trained on
    as orphans) and recorded failed, not left RUNNING in the study."""
    process, name, folder = _twoTrialsTraining(tmp_path)
    process.send_signal(signal.SIGTERM)
    # (a hang guard: on loaded cores a stop may legitimately take each worker's 30 s join and its trial's 30 s wait)
    output, errors = process.communicate(timeout=300)
    assert process.returncode == 130, output + errors
    assert "Interrupted: 0 completed" in output
    monitors = glob.glob(os.path.join(folder, "trial_*", "*", "*", "*", "*", "monitor", "0.monitor.csv"))
    sizes = [os.path.getsize(path) for path in monitors]
    time.sleep(1.5)
    assert [os.path.getsize(path) for path in monitors] == sizes  # no train process goes on
    study = _loadStudy(f"sqlite:///{folder}.db", name)
    assert study.trials and {trial.state.name for trial in study.trials} == {"FAIL"}


@pytest.mark.slow
def test_a_sigint_to_the_command_alone_stops_the_workers_trials_at_once(tmp_path):
    """SIGINT sent to the command only (kill -INT PID, a supervisor): its --workers processes trained on, finished
    their trials and started new ones until the command gave up waiting for them 30 s later. It passes the stop on."""
    process, name, folder = _twoTrialsTraining(tmp_path)
    process.send_signal(signal.SIGINT)
    output, errors = process.communicate(timeout=120)
    assert process.returncode == 130, output + errors
    assert "Interrupted: 0 completed" in output and "Traceback" not in errors, output + errors
    study = _loadStudy(f"sqlite:///{folder}.db", name)
    assert len(study.trials) == 2 and {trial.state.name for trial in study.trials} == {"FAIL"}


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the starting workers in /proc")
def test_a_ctrl_c_while_the_workers_start_stops_the_search_without_a_traceback(tmp_path):
    """Ctrl-C to the process group while the --workers processes import: they printed a KeyboardInterrupt traceback
    each (the command itself said "Interrupted", exit 130). They take the signal once they run."""
    process = startModule("rl_baselines.hyperparam_search", *COMMON, "--n-trials", "2", "--workers", "2",
                          "--num-timesteps", "100000", "--log-dir", tmp_path, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not any("spawn_main" in line for _, line in childProcesses(process.pid)):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.02)
        time.sleep(0.5)  # past the interpreters' start, into the imports, which last seconds
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 130 and "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "Interrupted: 0 completed" in out, out


def test_a_ctrl_c_while_the_outputs_are_written_stops_the_search_after_them(tmp_path, monkeypatch):
    """A (second) Ctrl-C while the search wrote trials.csv, the plot and best_hyperparams.yaml cut them short (an
    "Exception ignored ... KeyboardInterrupt" traceback, or no best_hyperparams.yaml); it now stops the command once
    they are written."""
    real = writeTrialsCsv

    def interruptedCsv(*args, **kwargs):
        signal.raise_signal(signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(hyperparam_search, "writeTrialsCsv", interruptedCsv)
    with pytest.raises(KeyboardInterrupt):
        hyperparam_search.main([*COMMON, "--n-trials", "1", "--num-timesteps", "256", "--pruner", "none",
                                "--no-vis", "--log-dir", str(tmp_path)])
    folder = os.path.join(str(tmp_path), "hyperparam_search", f"ppo2_{ENV}_ground_truth_tpe")
    assert {"trials.csv", "search.png", "best_hyperparams.yaml"} <= set(os.listdir(folder))


class _SleepingTrain(search_trials.TrialObjective):
    """A trial whose train process sleeps (writes nothing)."""

    def trainCommand(self, run_root: str, number: int, params: dict) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(120)"]


@pytest.fixture
def terminatedWhile(monkeypatch):
    """:return: a function making ``module.name`` send this process SIGTERM, handled as the workers and the command
    handle it, as its first call starts, and returning a list that gets "done" each time a call returns; SIGTERM's
    handler is put back after the test"""
    previous = signal.getsignal(signal.SIGTERM)

    def terminatedWhile(module, name: str) -> list[str]:
        real, done = getattr(module, name), []

        def interrupted(*args, **kwargs):
            if not done:
                os.kill(os.getpid(), signal.SIGTERM)
            result = real(*args, **kwargs)
            done.append("done")
            return result

        monkeypatch.setattr(module, name, interrupted)
        signal.signal(signal.SIGTERM, raiseTerminated)
        return done

    yield terminatedWhile
    signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("name", ["poll", "start"])
def test_a_stop_while_a_trial_reports_or_starts_comes_after_the_study_is_written(tmp_path, terminatedWhile, name):
    """A stop raised inside Optuna's SQLite access could leave the database locked: the other worker's trial then
    waited on the lock past the command's wait, and was left RUNNING in the study. A worker's SIGTERM that comes as its
    trial reports (each poll) or starts (its user attributes, its sampled values) is taken once that is written: the
    trial is stopped and recorded interrupted."""
    config = _searchConfig(tmp_path)
    target = (search_trials._TrialWatch, "poll") if name == "poll" else (search_trials, "suggestParams")
    done = terminatedWhile(*target)
    trial = optuna.create_study(direction="maximize").ask()
    with pytest.raises(KeyboardInterrupt):
        _SleepingTrain(config)(trial)
    assert done == ["done"]
    assert "trial_dir" in trial.user_attrs  # (written after the sampling, in the same held-back block)
    assert trial.user_attrs["error"] == "interrupted"
    # stopped before its run began (its process wrote nothing): no empty trial folder is left behind
    assert not os.path.exists(trial.user_attrs["trial_dir"]) and os.listdir(config.output_dir) == []


def test_a_stopped_trial_leaves_no_half_written_checkpoint_nor_an_empty_folder(tmp_path) -> None:
    """A trial stopped by SIGKILL (pruned, interrupted) during a checkpoint's save left its partial folder, and one
    stopped as it started an empty trial folder (or one holding an empty train.log): both are deleted; a trial's run
    and its log are kept."""
    run = tmp_path / "trial_0000" / ENV / "ground_truth" / "ppo2" / "run"
    (run / "checkpoints" / ".845_steps.partial-d2fcd706").mkdir(parents=True)
    (run / "checkpoints" / "512_steps").mkdir()
    (tmp_path / "trial_0000" / "train.log").write_text("Run folder: ...\n")
    search_trials.tidyStoppedTrial(str(tmp_path / "trial_0000"))
    assert os.listdir(run / "checkpoints") == ["512_steps"]
    for number, log in ((1, None), (2, ""), (3, "Traceback ...\n")):
        folder = tmp_path / f"trial_000{number}"
        folder.mkdir()
        if log is not None:
            (folder / "train.log").write_text(log)
        search_trials.tidyStoppedTrial(str(folder))
    assert sorted(os.listdir(tmp_path)) == ["trial_0000", "trial_0003"]


class _SleepingProcess:
    """Stands for a ``--workers`` process: a child that sleeps until it is signalled (it takes the stop signals it was
    started with blocked, as a worker does)."""

    def __init__(self) -> None:
        self.child: subprocess.Popen | None = None

    def start(self) -> None:
        self.child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.pthread_sigmask("
                                       "signal.SIG_UNBLOCK, {signal.SIGTERM}); time.sleep(120)"])

    @property
    def pid(self) -> int:
        return self.child.pid

    def is_alive(self) -> bool:
        return self.child.poll() is None

    def join(self, timeout: float | None = None) -> None:
        try:
            self.child.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    def terminate(self) -> None:
        self.child.kill()

    @property
    def exitcode(self) -> int | None:
        return self.child.returncode


def test_a_stop_while_the_command_reads_the_study_comes_after_the_read(tmp_path, monkeypatch, terminatedWhile):
    """The command reads the study every second to show the finished trials: a SIGTERM that came during that read
    (which could leave the database locked for the workers' last writes) is taken after it, and passed on to the
    workers."""
    workers: list[_SleepingProcess] = []

    class Context:
        @staticmethod
        def Process(target, args) -> _SleepingProcess:
            workers.append(_SleepingProcess())
            return workers[-1]

    monkeypatch.setattr(search_trials.multiprocessing, "get_context", lambda method: Context)
    monkeypatch.setattr(search_trials, "finishedTrials", lambda study, search_id: [])
    done = terminatedWhile(search_trials, "finishedTrials")
    with pytest.raises(KeyboardInterrupt):
        search_trials.runWorkers(_searchConfig(tmp_path), None, 2, 2, 0, search_trials.TrialProgress(2, False))
    assert done == ["done", "done"]  # (the interrupted read, and the last one once the workers stopped)
    assert len(workers) == 2 and [worker.child.returncode for worker in workers] == [-signal.SIGTERM] * 2
