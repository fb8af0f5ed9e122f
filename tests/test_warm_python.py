"""The warm interpreter of the tests (tests/warm_python.py, behind conftest.runModule): a command forked from it ends
as the same command in a real ``python -m`` process does (exit code, stdout, the last stderr line, files it wrote),
and the commands it must not run warm go to a real process."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from conftest import WARM, runModule, startModule
from warm_python import NO_WARM_VARIABLE, WarmProcess

# A module run as ``python -m warm_probe MODE`` from the test's folder (sys.path[0] is the working directory).
PROBE = '''
import atexit, multiprocessing, os, sys, threading, time


def main(mode):
    atexit.register(lambda: print("atexit ran", flush=True))
    print("argv0", os.path.basename(sys.argv[0]), "path0", sys.path[0] == os.getcwd(), "spec", __spec__.name)
    if mode == "preloaded":
        print("torch preloaded", "torch" in sys.modules)
    if mode == "file":
        open("left_open.txt", "w").write("written, never closed")
    if mode == "thread":
        threading.Thread(target=lambda: (time.sleep(0.3), print("thread done", flush=True))).start()
    if mode == "raise":
        raise ValueError("boom")
    if mode == "interrupt":
        raise KeyboardInterrupt
    if mode == "exit-text":
        sys.exit("bye")
    if mode == "exit-3":
        sys.exit(3)
    if mode == "exit-300":
        sys.exit(300)
    if mode == "sleep":
        time.sleep(60)
    if mode == "pools":
        for method in ("forkserver", "spawn"):
            with multiprocessing.get_context(method).Pool(1) as pool:
                print(method, pool.map(abs, [-1, -2]))
    print("end")


if __name__ == "__main__":
    main(sys.argv[1])
'''
MODES = ["plain", "file", "thread", "raise", "interrupt", "exit-text", "exit-3", "exit-300", "pools"]


@pytest.fixture
def probeFolder(tmp_path) -> str:
    (tmp_path / "warm_probe.py").write_text(PROBE)
    return str(tmp_path)


def _outcome(result: subprocess.CompletedProcess, folder: str) -> tuple:
    """:return: what a caller sees of a finished command"""
    written = {name: open(os.path.join(folder, name)).read() for name in os.listdir(folder) if name.endswith(".txt")}
    return result.returncode, result.stdout, result.stderr.strip().splitlines()[-1:], written


@pytest.mark.parametrize("mode", MODES)
def test_warm_command_ends_as_a_real_process(mode: str, probeFolder: str, tmp_path_factory) -> None:
    warm = runModule("warm_probe", mode, cwd=probeFolder)
    warm_outcome = _outcome(warm, probeFolder)
    real_folder = tmp_path_factory.mktemp("real")
    (real_folder / "warm_probe.py").write_text(PROBE)
    real = runModule("warm_probe", mode, cwd=str(real_folder), warm=False)
    assert warm_outcome == _outcome(real, str(real_folder)), f"warm:\n{warm.stderr}\nreal:\n{real.stderr}"
    if mode == "file":
        assert warm_outcome[-1] == {"left_open.txt": "written, never closed"}


@pytest.mark.skipif(os.environ.get(NO_WARM_VARIABLE) == "1", reason=f"{NO_WARM_VARIABLE}=1: every command runs in a "
                    "real process")
def test_which_commands_run_warm(probeFolder: str, monkeypatch) -> None:
    """Warm by default; a real process for an interpreter-start variable, warm=False and SRL_TESTS_NO_WARM=1."""
    def preloaded(**kwargs) -> bool:
        result = runModule("warm_probe", "preloaded", cwd=probeFolder, **kwargs)
        assert result.returncode == 0, result.stderr
        return "torch preloaded True" in result.stdout

    assert preloaded() and preloaded(env={"DISPLAY": ""})
    assert not preloaded(env={"PYTHONHASHSEED": "1"}) and not preloaded(env={"OMP_NUM_THREADS": "7"})
    assert not preloaded(warm=False)
    monkeypatch.setenv(NO_WARM_VARIABLE, "1")
    assert not preloaded()


def test_warm_command_timeout(probeFolder: str) -> None:
    """A command past its timeout is killed and the caller gets subprocess.TimeoutExpired, then the next one runs."""
    with pytest.raises(subprocess.TimeoutExpired):
        runModule("warm_probe", "sleep", cwd=probeFolder, timeout=2)
    assert runModule("warm_probe", "plain", cwd=probeFolder).returncode == 0


@pytest.mark.skipif(os.environ.get(NO_WARM_VARIABLE) == "1", reason=f"{NO_WARM_VARIABLE}=1: every command runs in a "
                    "real process")
def test_a_started_warm_command_is_seen_as_a_popen(probeFolder: str, tmp_path) -> None:
    """startModule forks the command and returns at once: its pid takes signals (Ctrl-C ends it as a real process's
    KeyboardInterrupt does), poll/wait/communicate give its end and output; a second command started meanwhile runs
    in a real process; a new session where asked; the outputs go to the caller's files where given."""
    sleeper = startModule("warm_probe", "sleep", cwd=probeFolder, start_new_session=True)
    assert isinstance(sleeper, WarmProcess) and sleeper.poll() is None
    assert os.getsid(sleeper.pid) == sleeper.pid
    with pytest.raises(subprocess.TimeoutExpired):
        sleeper.wait(timeout=0.2)
    meanwhile = startModule("warm_probe", "preloaded", cwd=probeFolder)
    assert not isinstance(meanwhile, WarmProcess)
    assert "torch preloaded False" in meanwhile.communicate(timeout=120)[0]
    time.sleep(0.5)  # (past the probe's start, into its sleep)
    sleeper.send_signal(signal.SIGINT)
    out, err = sleeper.communicate(timeout=60)
    real = startModule("warm_probe", "interrupt", cwd=probeFolder, warm=False)
    real_out, real_err = real.communicate(timeout=120)
    assert sleeper.returncode == real.returncode == -signal.SIGINT
    assert err.strip().splitlines()[-1] == real_err.strip().splitlines()[-1] == "KeyboardInterrupt", err
    assert out.splitlines()[0] == real_out.splitlines()[0] and "atexit ran" in out

    with open(tmp_path / "out.txt", "w") as stdout, open(tmp_path / "err.txt", "w") as stderr:
        to_files = startModule("warm_probe", "raise", cwd=probeFolder, stdout=stdout, stderr=stderr)
        assert isinstance(to_files, WarmProcess)
        assert to_files.wait(timeout=60) == 1 and to_files.communicate() == (None, None)
    assert "end" not in (tmp_path / "out.txt").read_text() and "ValueError: boom" in (tmp_path / "err.txt").read_text()
    assert os.getsid(startModule("warm_probe", "plain", cwd=probeFolder).pid) == os.getsid(0)


def test_a_started_command_left_running_is_ended_with_its_test(probeFolder: str) -> None:
    """What a failed test leaves: a running started command is killed, one that ended is waited for; the next
    command runs warm."""
    sleeper = startModule("warm_probe", "sleep", cwd=probeFolder)
    WARM.endLaunched()
    assert sleeper.returncode == -signal.SIGKILL
    ended = startModule("warm_probe", "plain", cwd=probeFolder)
    deadline = time.monotonic() + 60
    while os.path.exists(f"/proc/{ended.pid}") and time.monotonic() < deadline:  # until its interpreter reaped it
        time.sleep(0.05)
    WARM.endLaunched()
    assert ended.returncode == 0 and WARM.launched is None
    assert "torch preloaded True" in runModule("warm_probe", "preloaded", cwd=probeFolder).stdout
