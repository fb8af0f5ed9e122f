"""Shared helpers: run the project's commands as a user would (a ``python -m`` process, forked from this test
process's warm interpreter, tests/warm_python.py, unless SRL_TESTS_NO_WARM=1; or from one started with a plugin
site's PYTHONPATH, :func:`siteInterpreter`), snapshot folders, check a parser generated from a settings dataclass,
read a dataset's arrays."""
from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import glob
import os
import signal
import subprocess
from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch
from warm_python import NO_WARM_VARIABLE, WarmInterpreter, WarmProcess, commandLine

from benchmarks.srl_rl import env_plans as srl_rl_env_plans
from replay.visdom_server import findFreePort, startServer, waitForServer
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.envs.factory import envKwargsFromArgs
from rl_baselines.runs import train
from rl_baselines.runs.callbacks import TrainingCallbacks
from rl_baselines.runs.train import trainCommand
from rl_baselines.runs.train_checks import algorithmDefaults
from rl_baselines.runs.train_config import TrainConfig
from srl_toolbox.settings import settingFields

# One torch thread per test process (pytest -n 2 runs two of them on two cores): in-process training is several
# times faster than with the threads competing. The commands a test runs get the same share (train's
# --torch-threads auto reads OMP_NUM_THREADS), and so train as the committed same-seed references were recorded.
torch.set_num_threads(1)
os.environ["OMP_NUM_THREADS"] = "1"

# A test process started with Ctrl-C ignored (`make test &` in a script without job control) would hand that on to
# every command it starts: the Ctrl-C tests would meet commands that cannot be interrupted. Python's own handling here.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# This test process's warm interpreter (started by the first command that runs warm)
WARM = WarmInterpreter(REPO, {**os.environ, "PYTHONUNBUFFERED": "1"})


def _commandEnv(env: dict | None) -> dict[str, str]:
    """:return: the environment of a command the tests run: this process's, unbuffered output, then ``env``"""
    return {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}


atexit.register(WARM.stop)


def trainArgs(algo: str | None = None, **values) -> argparse.Namespace:
    """
    :param algo: the algorithm whose own flags are added at their defaults (None: the shared flags only)
    :param values: settings over the defaults
    :return: the arguments an algorithm receives from the train command (plugin API v1): every train flag at its
        default, the run folders None, then ``values``
    """
    args = TrainConfig(**({"algo": algo} if algo else {})).namespace()
    defaults = algorithmDefaults(algo) if algo else {}
    for name, value in defaults.items():
        vars(args).setdefault(name, value)
    args.num_cpu = defaults.get("num_cpu", 1)  # (as validation resolves it; no algorithm: 1)
    vars(args).update(values)
    return args


def trainSettings(args: argparse.Namespace, hyperparams: dict | None = None) -> RunSettings:
    """
    :param args: from :func:`trainArgs`
    :param hyperparams: typed ``--hyperparam`` values
    :return: the same run's settings (plugin API v2), as ``TrainConfig.runSettings()`` gives them to an algorithm
    """
    return TrainConfig.fromValues(vars(args), hyperparams=hyperparams or {},
                                  env_kwargs=envKwargsFromArgs(args)).runSettings()


def siteInterpreter(env: dict[str, str]) -> WarmInterpreter:
    """
    :param env: the variables a plugin site's commands get (its ``PYTHONPATH``), as ``runModule(env=...)`` takes them
    :return: a warm interpreter started with them (on its first command), for ``runModule(interpreter=...)``: its
        commands then run as a fresh process with that environment would, except that what the imports printed (a
        skipped plugin's warning) is not in their output; the caller stops it
    """
    return WarmInterpreter(REPO, _commandEnv(env))


def runModule(module: str, *args: str, env: dict | None = None, timeout: float = 300, cwd: str | None = None,
              warm: bool = True, interpreter: WarmInterpreter | None = None) -> subprocess.CompletedProcess:
    """
    :param module: a ``python -m`` module
    :param args: its arguments
    :param env: extra environment variables
    :param timeout: seconds before the test fails
    :param cwd: working directory (default: the repository)
    :param warm: fork the command from the warm interpreter (tests/warm_python.py) where that runs it as a fresh
        process would; False (or SRL_TESTS_NO_WARM=1 in the environment) starts a real ``python -m`` process
    :param interpreter: the warm interpreter to fork from (default: this test process's, started with its
        environment); one from :func:`siteInterpreter` for commands with that site's ``env``
    :return: the finished process, with text stdout/stderr
    """
    full_env = _commandEnv(env)
    arguments = list(map(str, args))
    if warm and full_env.get(NO_WARM_VARIABLE) != "1":
        result = (interpreter or WARM).run(module, arguments, full_env, cwd or REPO, timeout)
        if result is not None:
            return result
    return subprocess.run(commandLine("-m", module, arguments), capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=cwd or REPO)


def startModule(module: str, *args: str, env: dict | None = None, cwd: str | None = None, stdout=None, stderr=None,
                start_new_session: bool = False, warm: bool = True) -> subprocess.Popen | WarmProcess:
    """
    Start ``python -m module args`` without waiting for it, as ``subprocess.Popen`` does: forked from this test
    process's warm interpreter where :func:`runModule` would run it warm (and no other command of it runs; one still
    running at the test's end is killed), else a real process.

    :param stdout: a file open for writing that gets the command's output (None: captured, the text returned by
        ``communicate()``)
    :param stderr: the same for its error output
    :param start_new_session: the command leads a new session (its own process group)
    :return: the running command: a WarmProcess or a Popen (pid, poll, wait, communicate, send_signal, kill)
    """
    full_env = _commandEnv(env)
    arguments = list(map(str, args))
    if warm and full_env.get(NO_WARM_VARIABLE) != "1":
        process = WARM.launch(module, arguments, full_env, cwd or REPO, stdout, stderr, start_new_session)
        if process is not None:
            return process
    return subprocess.Popen(commandLine("-m", module, arguments), stdout=stdout or subprocess.PIPE,
                            stderr=stderr or subprocess.PIPE, text=True, env=full_env, cwd=cwd or REPO,
                            start_new_session=start_new_session)


def freshProcesses(env: dict[str, str], *commands: tuple, timeout: float = 600) -> list[subprocess.CompletedProcess]:
    """
    Run commands as fresh processes with the environment ``env`` would (their imports of the project, plugin loading
    and import warnings their own), paying the third-party libraries' import once: forked, one after the other, from
    a warm interpreter started with ``env`` that imported those libraries only (tests/warm_python.py THIRD_PARTY).

    :param env: extra environment variables (a plugin site's PYTHONPATH)
    :param commands: ``("-m", MODULE, ARGS, CWD)``, ``("-c", CODE, ARGS, CWD)`` or ``("script", PATH, ARGS, CWD)``
        (ARGS a list, CWD None for the repository)
    :return: each command's finished process, in order, with text stdout and stderr (real processes where
        SRL_TESTS_NO_WARM=1)
    """
    full_env = _commandEnv(env)
    if full_env.get(NO_WARM_VARIABLE) == "1":
        return [subprocess.run(commandLine(kind, str(target), list(map(str, args))), capture_output=True, text=True,
                               timeout=timeout, env=full_env, cwd=str(cwd or REPO))
                for kind, target, args, cwd in commands]
    interpreter = WarmInterpreter(REPO, full_env, libraries_only=True)
    try:
        results = [interpreter.run(str(target), list(map(str, args)), interpreter.env, str(cwd or REPO), timeout,
                                   kind) for kind, target, args, cwd in commands]
    finally:
        interpreter.stop()
    assert None not in results, f"not run warm: {interpreter.fallbacks}"
    return results


VISDOM_START_TIMEOUT_S = 60.0  # generous: two test workers share two cores


@contextlib.contextmanager
def sigintIgnoringProcess(command: list[str], **popen) -> Iterator[subprocess.Popen]:
    """A process started with SIGINT ignored, as a shell script's ``cmd &`` without job control starts it; killed and
    reaped at the end of the block where it still runs."""
    process = subprocess.Popen(command, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN), **popen)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def startTestServer(folder: str) -> tuple[subprocess.Popen, int]:
    """:return: (a visdom server on a free loopback port, its envs and log in ``folder``, its port), retried where
    another process took the port first"""
    log_file = os.path.join(folder, "server.log")
    for _ in range(3):
        port = findFreePort()
        process = startServer(port, env_path=os.path.join(folder, "envs"), log_file=log_file)
        if waitForServer(port, timeout=VISDOM_START_TIMEOUT_S, process=process):
            return process, port
        stopServer(process)
    with open(log_file, encoding="utf-8", errors="replace") as log:
        pytest.fail(f"the visdom server did not start:\n{log.read()}")


def stopServer(process: subprocess.Popen) -> None:
    """Terminate a server started by :func:`startTestServer` (killed if it does not end)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def visdom_port(tmp_path_factory: pytest.TempPathFactory):
    """:return: the port of one visdom server per test process, shared by the tests that draw into it (a start costs
    2-3 s): each draws into visdom envs of its own names and reads back only those; a test that stops, kills or
    configures its server starts its own (:func:`startTestServer`)"""
    process, port = startTestServer(str(tmp_path_factory.mktemp("visdom")))
    try:
        yield port
    finally:
        stopServer(process)


@pytest.fixture
def groundTruthAsOthers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SRL + RL benchmark's planned envs with ground truth on as many seeds as the other rows (Nav 2D plans more),
    for the tests that count the runs of a grid and are about something else."""
    for env, plan in list(srl_rl_env_plans.PLANS.items()):
        monkeypatch.setitem(srl_rl_env_plans.PLANS, env, dataclasses.replace(plan, ground_truth_seeds=0))


@pytest.fixture(autouse=True)
def _endLaunchedCommand():
    """A command a test started with :func:`startModule` and left running (a failed test's) is killed at its end."""
    yield
    WARM.endLaunched()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with tests marked slow run first, each module's tests kept together and in order: pytest-xdist's
    worksteal hands each worker a contiguous part and steals from the end of a queue, so the run ends on short tests
    instead of one worker waiting on another's long training."""
    def module(item: pytest.Item) -> str:
        return item.nodeid.split("::")[0]

    slow_modules = {module(item) for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: module(item) not in slow_modules)


def pytest_terminal_summary(terminalreporter) -> None:
    """How many commands this process ran warm, and why others went to a real process (where any ran)."""
    if WARM.forked or WARM.fallbacks:
        reasons = ", ".join(f"{count} x {reason}" for reason, count in sorted(WARM.fallbacks.items()))
        terminalreporter.write_line(f"warm interpreter: {WARM.forked} commands forked; in a real process because of "
                                    f"the environment: {reasons or 'none'}")


def parentPid(pid: int | str) -> int:
    """:return: the pid of the parent of process ``pid`` (from /proc; OSError once it has ended)"""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def childProcesses(pid: int) -> list[tuple[int, str]]:
    """:return: (pid, command line) of the processes whose parent is ``pid``"""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if parentPid(entry) == pid:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    found.append((int(entry), cmdline.read().replace(b"\0", b" ").decode(errors="replace")))
        except (OSError, ValueError, IndexError):  # not a process, or one that just ended
            continue
    return found


def runTrain(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """``python -m rl_baselines.train`` without live plots and progress bar; fails the test on a non-zero exit."""
    result = runModule("rl_baselines.train", "--no-vis", "--no-progress", *args, **kwargs)
    assert result.returncode == 0, f"train failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


def trainHere(*args: str) -> str:
    """
    The train command run in this process (no interpreter start and import), without live plots and progress bar,
    for a test about the run it writes rather than the process; fails the test on a non-zero exit.

    :param args: its arguments
    :return: the run folder
    """
    result = trainCommand(["--no-vis", "--no-progress", *map(str, args)])
    assert result.exit_code == 0, f"train failed ({result.exit_code}): {result.run_dir}"
    return result.run_dir


def interruptedRun(monkeypatch: pytest.MonkeyPatch, log_dir: str, run_args: list[str], at_step: int) -> str:
    """
    Train in this process with a Ctrl-C (KeyboardInterrupt) at ``at_step``, which ends the run at its last checkpoint
    (exit 130).

    :param monkeypatch: the test's
    :param log_dir: an empty log folder
    :param run_args: the train arguments (no ``--log-dir``)
    :param at_step: the step count at which the interrupt is raised
    :return: the run folder
    """
    def interrupted(self, on_step) -> bool:
        keep_going = on_step(self)
        if self.num_timesteps >= at_step:
            raise KeyboardInterrupt
        return keep_going

    return _runEndedBy(monkeypatch, interrupted, log_dir, run_args)


def stoppedRun(monkeypatch: pytest.MonkeyPatch, log_dir: str, run_args: list[str], at_step: int) -> str:
    """
    Train in this process and send it a SIGINT (a Ctrl-C, as its signal handler passes it on) at ``at_step`` (the
    learner's step count), whose own checkpoint ends the run (exit 130).

    :param monkeypatch: the test's
    :param log_dir: an empty log folder
    :param run_args: the train arguments (no ``--log-dir``)
    :param at_step: the step count at which the stop is asked
    :return: the run folder
    """
    def stopped(self, on_step) -> bool:
        if self.model.num_timesteps == at_step:
            self.requestStop(signal.SIGINT)
        return on_step(self)

    return _runEndedBy(monkeypatch, stopped, log_dir, run_args)


def _runEndedBy(monkeypatch: pytest.MonkeyPatch, step: Callable[..., bool], log_dir: str, run_args: list[str]) -> str:
    """:return: the run folder of the train command run here with ``step(callbacks, on_step)`` in place of each
    step of its callbacks (``on_step``: theirs), which ends it with exit 130"""
    original = TrainingCallbacks.on_step
    monkeypatch.setattr(TrainingCallbacks, "on_step", lambda self: step(self, original))
    assert train.main(["--no-vis", "--no-progress", "--log-dir", log_dir, *run_args]) == 130
    monkeypatch.setattr(TrainingCallbacks, "on_step", original)
    (run_dir,) = glob.glob(os.path.join(log_dir, "*", "*", "*", "*"))
    return run_dir


def interruptThenResume(monkeypatch: pytest.MonkeyPatch, log_dir: str, run_args: list[str], at_step: int) -> str:
    """
    :func:`interruptedRun`, then ``--resume`` it to the end.

    :return: the run folder
    """
    run_dir = interruptedRun(monkeypatch, log_dir, run_args, at_step)
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    return run_dir


def docsExample(heading: str = "### A complete minimal algorithm") -> str:
    """:return: the first Python code block of a section of docs/plugins.md (by its heading line)"""
    text = open(os.path.join(REPO, "docs", "plugins.md"), encoding="utf-8").read()
    section = text.split(heading + "\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def runFolder(result: subprocess.CompletedProcess) -> str:
    """:return: the run folder a train command printed last"""
    lines = [line for line in result.stdout.splitlines() if line.startswith("Run folder: ")]
    assert lines, result.stdout
    return lines[-1][len("Run folder: "):].strip()


def greedyMeanReward(model, envs, episodes: int = 10) -> float:
    """
    :param model: a trained BaseRLObject
    :param envs: a VecEnv to play on (closed at the end)
    :param episodes: finished episodes to average
    :return: the mean reward of the first ``episodes`` episodes played with deterministic actions
    """
    observation, returns, finished = envs.reset(), np.zeros(envs.num_envs), []
    while len(finished) < episodes:
        observation, rewards, dones, _ = envs.step(model.getAction(observation, deterministic=True))
        returns += rewards
        for index in np.flatnonzero(dones):
            finished.append(returns[index])
            returns[index] = 0.0
    envs.close()
    return float(np.mean(finished[:episodes]))


def snapshot(folder: str) -> dict[str, tuple[int, float]]:
    """:return: every file below ``folder`` with its size and modification time, and every folder (as (-1, 0): a
    new empty folder is something written too), hidden ones (``.NAME.partial``, ``.lock``, a staging folder)
    included; a link to a folder, or a dangling one, is listed as (-1, 0), not followed; Python's bytecode caches
    (``__pycache__``, written by the interpreter that imports a plugin module there) left out"""
    files = {}
    for root, folders, names in os.walk(folder):
        folders[:] = [name for name in folders if name != "__pycache__"]
        for name in folders + names:
            path = os.path.join(root, name)
            if os.path.isfile(path):
                stat = os.stat(path)
                files[path] = (stat.st_size, stat.st_mtime_ns)
            else:
                files[path] = (-1, 0)
    return files


def assertParserFromSettings(parser: argparse.ArgumentParser, cls: type) -> None:
    """A command's parser holds one flag per flag field of its settings dataclass, with the field's default."""
    fields = settingFields(cls)
    assert {action.dest for action in parser._actions if action.dest not in ("help", "version")} == set(fields)
    for name, field in fields.items():
        default = parser.get_default(name)
        assert (tuple(default) if isinstance(default, list) else default) == field.default, name


@pytest.fixture(autouse=True, scope="session")
def sb3LogFolder(tmp_path_factory: pytest.TempPathFactory):
    """SB3 models that tests build themselves log into this session's folder, not an empty /tmp/SB3-<date> each"""
    patch = pytest.MonkeyPatch()
    patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3_logs")))
    yield
    patch.undo()


@pytest.fixture(scope="session")
def trainedRun(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A short ppo2 run on MobileRobot with ground truth (best model saved), shared by replay/load tests; trained in
    this process."""
    log_dir = tmp_path_factory.mktemp("shared_run")
    return trainHere("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                     "--num-timesteps", "1536", "--min-episodes-save", "1", "--log-dir", log_dir, "--seed", "3")


def loadArrays(folder: str) -> dict[str, np.ndarray]:
    """:return: every array of a dataset folder's preprocessed_data.npz and ground_truth.npz, by key"""
    arrays = {}
    for file_name in ("preprocessed_data.npz", "ground_truth.npz"):
        with np.load(os.path.join(folder, file_name), allow_pickle=False) as data:
            arrays.update({key: data[key] for key in data.files})
    return arrays
