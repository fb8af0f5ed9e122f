"""Ctrl-C and SIGTERM at the edges of training: before its handlers are installed, after the run is saved, twice in
a row (stop at once, with the steps taken counted), with env worker processes, during the final save, and passed on
by the Python API once the run is saved. A single Ctrl-C or SIGTERM in the middle of a run, and resuming from what it
saved: tests/test_resume.py."""
from __future__ import annotations

import glob
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from conftest import REPO, childProcesses, runModule, startModule
from stable_baselines3.common.vec_env import SubprocVecEnv

from rl_baselines import api
from rl_baselines import train as train_command
from rl_baselines.core.checkpointing import listCheckpoints, readManifest
from rl_baselines.runs import train
from rl_baselines.runs.callbacks import TrainingCallbacks
from rl_baselines.runs.resume import runStatus
from srl_toolbox import commandModule, isProjectCommand
from srl_toolbox.cli import INTERRUPTED_EXIT_CODE, pythonCommand, runCommand

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]


def test_a_ctrl_c_outside_training_is_one_line_and_a_finished_process_ignores_it(tmp_path, capsys) -> None:
    """Before training's handlers are installed (validation, env start-up) a Ctrl-C ends a command with one line and
    130, no traceback; once a train process's run is over and saved it ignores SIGINT and SIGTERM until it exits, so
    a sweep's Ctrl-C cannot turn a finished run into a failed one."""
    def interruptedMain(argv):
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as exit_info:
        runCommand(interruptedMain, [])
    assert exit_info.value.code == INTERRUPTED_EXIT_CODE == 130 and capsys.readouterr().err == "Interrupted\n"
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert train_command.commandMain(["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model",
                                          "ground_truth", "--num-timesteps", "64", "--hyperparam", "n_steps:64",
                                          "--no-vis", "--no-progress", "--log-dir", str(tmp_path)]) == 0
        assert all(signal.getsignal(signum) == signal.SIG_IGN for signum in before)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_command_started_with_sigint_ignored_stops_on_one(capsys) -> None:
    """A process started with SIGINT ignored (``cmd &`` in a shell script without job control) kept it ignored:
    srl_models.train and the dataset generator ran on through a ``kill -INT``. Every command now stops on it as on a
    Ctrl-C (exit 130), and the process ignores it again once the command is over."""
    seen = []

    def signalledMain(argv) -> int:
        seen.append(signal.getsignal(signal.SIGINT))
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            time.sleep(0.01)
        return 0

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(SystemExit) as exit_info:
            runCommand(signalledMain, [])
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
    assert seen == [signal.default_int_handler]
    assert exit_info.value.code == INTERRUPTED_EXIT_CODE and capsys.readouterr().err == "Interrupted\n"


@pytest.mark.parametrize("module", ["srl_models.evaluate", "rl_baselines.train", "environments.dataset_generator",
                                    "benchmarks.srl_table"])
def test_a_ctrl_c_while_a_command_imports_its_libraries_is_one_line(tmp_path, module) -> None:
    """Before runCommand, while the command's module imports its libraries (here tqdm, replaced by a module that
    raises KeyboardInterrupt as a Ctrl-C there would): the line ``Interrupted``, no traceback, the SIGINT exit (130 in
    a shell). A program that imports the same modules keeps Python's own traceback."""
    (tmp_path / "tqdm.py").write_text("raise KeyboardInterrupt\n")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), REPO])}
    result = runModule(module, "--help", env=env, warm=False)
    assert (result.returncode, result.stdout, result.stderr) == (-signal.SIGINT, "", "Interrupted\n")
    library = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True,
                             env={**os.environ, **env}, cwd=REPO)
    assert library.returncode == -signal.SIGINT and library.stderr.startswith("Traceback"), library.stderr


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_command_started_with_sigint_ignored_stops_on_one_while_it_imports(tmp_path) -> None:
    """``python -m rl_baselines.train ... &`` in a shell script starts it with SIGINT ignored; runCommand takes it,
    but a ``kill -INT`` in the seconds of the imports before was lost and the run went on to its end. Here the
    signal comes while the command imports tqdm (replaced by a module that signals its own process)."""
    (tmp_path / "tqdm.py").write_text("import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), REPO])}
    result = subprocess.run([sys.executable, "-m", "rl_baselines.train", "--help"], capture_output=True, text=True,
                            env=env, cwd=REPO, timeout=120,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert (result.returncode, result.stdout, result.stderr) == (-signal.SIGINT, "", "Interrupted\n")


def test_only_the_projects_commands_print_the_one_line_start_up_ctrl_c() -> None:
    assert commandModule(["python", "-X", "dev", "-W", "error", "-m", "srl_models.train", "-m", "x"]) == \
        "srl_models.train"
    assert commandModule(["python", "-mrl_baselines.train"]) == "rl_baselines.train"
    for argv in (["python", "script.py", "-m", "srl_models.train"], ["python", "-c", "import x", "-m", "y"],
                 ["python"], ["python", "-", "-m", "srl_models.train"]):
        assert commandModule(argv) is None
    assert isProjectCommand(["python", "-m", "replay.enjoy_baselines"])
    assert not isProjectCommand(["python", "-m", "pytest", "-m", "srl_models.train"])


def _ctrlC() -> None:
    """A Ctrl-C reaching this process: its SIGINT handler, called as Python calls it between two bytecodes."""
    signal.getsignal(signal.SIGINT)(signal.SIGINT, None)


def _twoCtrlCsAt(monkeypatch, steps: int) -> None:
    """Two Ctrl-Cs at the first training step at or past ``steps``: the first asks for a checkpoint at the next step,
    the second, before it, stops at once."""
    original = TrainingCallbacks.on_step

    def twoCtrlCs(self) -> bool:
        keep_going = original(self)
        if self.num_timesteps >= steps:
            _ctrlC()
            _ctrlC()
        return keep_going

    monkeypatch.setattr(TrainingCallbacks, "on_step", twoCtrlCs)


def _oneCtrlCAt(monkeypatch, steps: int) -> None:
    """One Ctrl-C at the first training step at or past ``steps`` (the run stops at the next step, saving)."""
    original = TrainingCallbacks.on_step

    def oneCtrlC(self) -> bool:
        keep_going = original(self)
        if self.num_timesteps >= steps and self.stop_signal is None:
            _ctrlC()
        return keep_going

    monkeypatch.setattr(TrainingCallbacks, "on_step", oneCtrlC)


SECOND_CTRL_C_RUNS = {"ppo2": ["--hyperparam", "n_steps:25", "batch_size:50", "n_epochs:1"], "acktr": [],  # x 4 envs
                      "cma-es": ["--hyperparam", "num_population:2"]}


@pytest.mark.parametrize("algo", sorted(SECOND_CTRL_C_RUNS))
def test_a_second_ctrl_c_stops_at_once_and_reports_the_steps_taken(tmp_path, monkeypatch, capsys, algo) -> None:
    """Two Ctrl-Cs before the step that would write the stop checkpoint: exit 130 at once, no new checkpoint, the
    run resumable from its last one, and the summary and the saved model's manifest count the steps taken (the SB3
    algorithms reported 0: a KeyboardInterrupt skipped their copy of the learner's count)."""
    _twoCtrlCsAt(monkeypatch, 700)
    before = signal.getsignal(signal.SIGINT)
    assert train.main([*GT, "--algo", algo, "--num-timesteps", "2000", "--checkpoint-freq", "500", "--no-vis",
                       "--no-progress", "--log-dir", str(tmp_path), *SECOND_CTRL_C_RUNS[algo]]) == 130
    assert signal.getsignal(signal.SIGINT) is before
    out = capsys.readouterr().out
    (run_dir,) = glob.glob(str(tmp_path / "*" / "*" / "*" / "*"))
    steps = readManifest(run_dir)["num_timesteps"]
    ((saved, checkpoint),) = listCheckpoints(run_dir)  # the periodic one, no stop checkpoint
    assert 700 <= steps < 1000 and f"\nInterrupted: {steps} steps (--resume goes on from the checkpoint at step " \
                                   f"{saved}), " in out, out
    assert f"Checkpoint: {checkpoint}; continue with: {pythonCommand()} -m rl_baselines.train --resume " in out
    assert runStatus(run_dir) == "resume"


def test_a_second_ctrl_c_before_the_first_checkpoint_offers_the_saved_model(tmp_path, monkeypatch, capsys) -> None:
    """Two Ctrl-Cs before the stop checkpoint and before any periodic one, in a run of an algorithm that resumes:
    the last line says that --resume would start again from step 0 and how to continue the saved model, not that
    the algorithm cannot be resumed (no saveTrainingState), which is false of ppo2."""
    _twoCtrlCsAt(monkeypatch, 300)
    assert train.main([*GT, "--algo", "ppo2", "--num-timesteps", "2000", "--checkpoint-freq", "1000", "--no-vis",
                       "--no-progress", "--log-dir", str(tmp_path), *SECOND_CTRL_C_RUNS["ppo2"]]) == 130
    out = capsys.readouterr().out
    (run_dir,) = glob.glob(str(tmp_path / "*" / "*" / "*" / "*"))
    assert listCheckpoints(run_dir) == [] and "cannot be resumed" not in out, out
    assert f"\nNo checkpoint yet (--resume {run_dir} would start the run again from step 0); continue its model in a " \
           f"new run folder with: {pythonCommand()} -m rl_baselines.train --algo ppo2 " in out, out
    assert f"--load-rl-model-path {run_dir}/ppo2_model.zip\n" in out, out


def test_a_second_ctrl_c_closes_the_env_workers(tmp_path, monkeypatch) -> None:
    """Two Ctrl-Cs in a run of 2 envs in subprocesses: the workers (which ignore SIGINT and SIGTERM) are closed, so
    the process can exit (multiprocessing's exit waited for them forever)."""
    _twoCtrlCsAt(monkeypatch, 300)
    try:
        assert train.main([*GT, "--algo", "ppo2", "--num-cpu", "2", "--num-timesteps", "2000", "--no-vis",
                           "--no-progress", "--log-dir", str(tmp_path), "--hyperparam", "n_steps:50",
                           "batch_size:50", "n_epochs:1"]) == 130
        assert multiprocessing.active_children() == []
    finally:
        for child in multiprocessing.active_children():  # (without the fix: or this test process would not exit)
            child.kill()
            child.join()


def test_a_second_ctrl_c_while_the_stopped_run_closes_its_env_workers_is_no_warning(tmp_path, monkeypatch,
                                                                                    capsys) -> None:
    """A Ctrl-C, then a second one while the stopped run of 2 envs in subprocesses closes them, once they were told
    to end (two quick Ctrl-Cs in a terminal): exit 130, the workers ended, and no `warning: the env was not closed
    (BrokenPipeError...)` (the clean-up sent its close again to workers already gone)."""
    original_close = SubprocVecEnv.close

    def closeCutByCtrlC(self) -> None:
        if not self.closed and not getattr(self, "cut_once", False):
            self.cut_once = True
            for remote in self.remotes:  # as SB3's close: tell each worker to end, then wait for them
                remote.send(("close", None))
            for process in self.processes:
                process.join()
            _ctrlC()  # the second Ctrl-C, during that wait
        original_close(self)

    _oneCtrlCAt(monkeypatch, 300)
    monkeypatch.setattr(SubprocVecEnv, "close", closeCutByCtrlC)
    try:
        code = train.main([*GT, "--algo", "ppo2", "--num-cpu", "2", "--vec-env", "subproc", "--num-timesteps", "2000",
                           "--no-vis", "--no-progress", "--log-dir", str(tmp_path), "--hyperparam", "n_steps:50",
                           "batch_size:50", "n_epochs:1"])
        assert multiprocessing.active_children() == []
    finally:
        for child in multiprocessing.active_children():
            child.kill()
            child.join()
    err = capsys.readouterr().err
    assert code == 130 and "not closed" not in err, err


def test_a_second_ctrl_c_during_the_final_save_does_not_cut_it_short(tmp_path, monkeypatch, capsys) -> None:
    """A Ctrl-C, then a second one while the stopped run saves its model: the save and the summary complete (a
    KeyboardInterrupt ended the process there, without the summary), exit 130."""
    original_save = TrainingCallbacks.saveModel

    def ctrlCWhileSaving(self, folder: str, num_timesteps: int, **extra) -> None:
        _ctrlC()
        original_save(self, folder, num_timesteps, **extra)

    _oneCtrlCAt(monkeypatch, 700)
    monkeypatch.setattr(TrainingCallbacks, "saveModel", ctrlCWhileSaving)
    try:
        code = train.main([*GT, "--algo", "ppo2", "--num-timesteps", "2000", "--checkpoint-freq", "500", "--no-vis",
                           "--no-progress", "--log-dir", str(tmp_path), *SECOND_CTRL_C_RUNS["ppo2"]])
    except KeyboardInterrupt:
        pytest.fail("the second Ctrl-C cut the final save short")
    out = capsys.readouterr().out
    (run_dir,) = glob.glob(str(tmp_path / "*" / "*" / "*" / "*"))
    stopped_at, checkpoint = listCheckpoints(run_dir)[-1]
    assert code == 130 and readManifest(checkpoint)["stopped_by"] == "SIGINT"
    # the checkpoint at the end of the update in progress (a clean point), the run stopped one step of its envs later
    saved_at = readManifest(run_dir)["num_timesteps"]
    assert 700 <= stopped_at < saved_at
    assert f"\nStopped: {saved_at} steps (--resume goes on from the checkpoint at step {stopped_at}), " in out
    assert runStatus(run_dir) == "resume"


def test_a_second_ctrl_c_in_a_resumed_run_names_the_checkpoint_it_restored(tmp_path, monkeypatch, capsys) -> None:
    """A resumed run stopped by two Ctrl-Cs before its next checkpoint said "No checkpoint yet (--resume would start
    the run again from step 0)" and offered a new run folder, though the checkpoint it had resumed from was there."""
    _twoCtrlCsAt(monkeypatch, 700)
    flags = [*GT, "--algo", "ppo2", "--num-timesteps", "2000", "--checkpoint-freq", "500", "--no-vis", "--no-progress",
             *SECOND_CTRL_C_RUNS["ppo2"]]
    assert train.main([*flags, "--log-dir", str(tmp_path)]) == 130
    (run_dir,) = glob.glob(str(tmp_path / "*" / "*" / "*" / "*"))
    ((saved, checkpoint),) = listCheckpoints(run_dir)
    capsys.readouterr()
    assert train.main(["--resume", run_dir]) == 130  # two Ctrl-Cs again before the next checkpoint (1000)
    out = capsys.readouterr().out
    assert listCheckpoints(run_dir) == [(saved, checkpoint)] and "No checkpoint yet" not in out, out
    assert f"Checkpoint: {checkpoint}; continue with: {pythonCommand()} -m rl_baselines.train --resume " in out, out
    assert f"(--resume goes on from the checkpoint at step {saved})" in out


API_RUN = {"algo": "ppo2", "env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "num_timesteps": 2000,
           "checkpoint_freq": -1, "hyperparams": {"n_steps": 100, "batch_size": 50, "n_epochs": 1}}


def _signalAt(monkeypatch, signum: int, steps: int) -> None:
    """One ``signum`` reaching this process once training has taken ``steps`` steps (its handler, called as Python
    calls it between two bytecodes)."""
    original = TrainingCallbacks.on_step

    def signalled(self) -> bool:
        keep_going = original(self)
        if self.num_timesteps >= steps and self.stop_signal is None:
            signal.getsignal(signum)(signum, None)
        return keep_going

    monkeypatch.setattr(TrainingCallbacks, "on_step", signalled)


def test_train_agent_passes_a_ctrl_c_on_after_its_checkpoint(tmp_path, monkeypatch) -> None:
    """A loop of trainAgent calls in a script or a notebook stops at a Ctrl-C, as Python code does (the run trained
    on to the next step, saved its checkpoint and gave back the caller's handler first); it went on with the next
    call, one Ctrl-C per run."""
    _signalAt(monkeypatch, signal.SIGINT, 300)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(api.TrainingInterrupted, match=r"continue it with trainAgent\(resume=") as stopped:
        api.trainAgent(**API_RUN, log_dir=str(tmp_path))
    result = stopped.value.result
    assert isinstance(stopped.value, KeyboardInterrupt) and result.exit_code == 130
    assert 300 <= result.num_timesteps < 2000 and runStatus(result.run_dir) == "resume"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_train_agent_passes_a_sigterm_on_after_its_checkpoint(tmp_path, monkeypatch) -> None:
    """SIGTERM (a scheduler, docker stop, kill PID) ends a driver that calls trainAgent in a loop once the run is
    checkpointed: a SystemExit with 143 under the default action; a handler of the caller's is called; the loop used
    to go on training the next runs."""
    _signalAt(monkeypatch, signal.SIGTERM, 300)
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with pytest.raises(SystemExit) as stopped:
            api.trainAgent(**API_RUN, log_dir=str(tmp_path / "default"))
        assert stopped.value.code == 143 and runStatus(stopped.value.result.run_dir) == "resume"
        received = []
        signal.signal(signal.SIGTERM, lambda signum, _frame: received.append(signum))
        result = api.trainAgent(**API_RUN, log_dir=str(tmp_path / "own_handler"))
        assert received == [signal.SIGTERM] and result.exit_code == 143 and runStatus(result.run_dir) == "resume"
    finally:
        signal.signal(signal.SIGTERM, previous)


# (train flags, what the command line of the process that imports for seconds holds, the signal)
STARTING_WORKERS = {
    "env workers": (["--algo", "ppo2", "--num-cpu", "2", "--vec-env", "subproc"], "multiprocessing.forkserver",
                    signal.SIGINT),
    "ppo1 worker": (["--algo", "ppo1", "--num-workers", "2"], "spawn_main", signal.SIGTERM),
}


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the starting worker processes in /proc")
@pytest.mark.parametrize("workers", sorted(STARTING_WORKERS))
def test_a_stop_signal_while_the_workers_start_stops_with_a_checkpoint(tmp_path, workers) -> None:
    """Ctrl-C or SIGTERM to the process group while the worker processes import the envs' libraries (the forkserver
    of 2 env workers; ppo1's spawned rank 1): they died of it mid-import, and the run with a traceback (EOFError or
    ConnectionResetError) or "ppo1 worker rank 1 was killed by SIGINT", exit 1. The train process gets the signal
    once its workers have started and stops as at any other step: a checkpoint (at the end of the first update),
    exit 130 or 143, no traceback."""
    flags, marker, signum = STARTING_WORKERS[workers]
    process = startModule("rl_baselines.train", "--no-vis", "--no-progress", *flags, *GT, "--num-timesteps", "5000",
                          "--log-dir", tmp_path, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not any(marker in line for _, line in childProcesses(process.pid)):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.02)
        os.killpg(process.pid, signum)  # the worker imports for seconds: it is still at it
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 128 + signum and "Traceback" not in err and "error" not in err, err
    (checkpoint,) = re.findall(r"^Checkpoint: (\S+);", out, re.MULTILINE)
    assert readManifest(checkpoint)["stopped_by"] == signal.Signals(signum).name
