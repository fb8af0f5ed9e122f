"""The warm interpreter of the tests (tests/warm_python.py, behind conftest.runModule): a command forked from it ends
as the same command in a real ``python -m`` process does (exit code, stdout, the last stderr line, files it wrote),
and the commands it must not run warm go to a real process."""
from __future__ import annotations

import os
import subprocess

import pytest
from conftest import runModule
from warm_python import NO_WARM_VARIABLE

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
