"""The Makefile's venv install under two makes at once (`make visdom` in one terminal, `make demo` in another, in a
fresh clone): the second waits for the first instead of running pip in a venv that is still being made.

The venv is faked: a PYTHON whose `-m venv` writes bin/python at once and then, as ensurepip does, keeps pip missing
until the test lets it finish; the fake bin/python's `-m pip` fails while pip is missing."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time

import pytest

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAIT_S = 60.0

FAKE_PYTHON = """#!/bin/sh
# fake system python: `-m venv DIR` makes DIR/bin/python now and its pip once the test creates FOLDER/release
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin"
  cp "{folder}/fake_venv_python" "$3/bin/python"
  while [ ! -e "{folder}/release" ]; do sleep 0.05; done
  touch "$3/pip_ready"
fi
"""
FAKE_VENV_PYTHON = """#!/bin/sh
# fake venv python: `-m pip ...` fails until its venv is complete, as a venv without pip does
here=$(dirname "$0")
if [ "$1 $2" = "-m pip" ] && [ ! -e "$here/../pip_ready" ]; then echo "No module named pip" >&2; exit 1; fi
exit 0
"""


def _executable(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def _waitFor(path: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.05)


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("flock") is None, reason="needs make and flock")
def test_two_makes_in_a_fresh_clone_install_the_venv_one_after_the_other(tmp_path) -> None:
    folder = str(tmp_path)
    shutil.copy(os.path.join(PROJECT_ROOT, "Makefile"), folder)
    os.makedirs(os.path.join(folder, "plugins", "srl-toolbox-cem"))
    for name in ("setup.py", "build-constraints.txt", os.path.join("plugins", "srl-toolbox-cem", "pyproject.toml")):
        open(os.path.join(folder, name), "w").close()
    _executable(os.path.join(folder, "fake_python"), FAKE_PYTHON.format(folder=folder))
    _executable(os.path.join(folder, "fake_venv_python"), FAKE_VENV_PYTHON)
    command = ["make", "--no-print-directory", f"PYTHON={folder}/fake_python", ".venv/.installed"]
    first = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    second = None
    try:
        _waitFor(os.path.join(folder, ".venv", "bin", "python"))  # the first make is inside `python -m venv`
        second = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            second.wait(timeout=2)  # unlocked, it runs pip in the half-made venv now and fails
        except subprocess.TimeoutExpired:
            pass  # waiting for the first make's lock
        open(os.path.join(folder, "release"), "w").close()
        outputs = [process.communicate(timeout=WAIT_S)[0] for process in (first, second)]
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
    assert first.returncode == 0, outputs[0]
    assert second.returncode == 0, outputs[1]
    assert os.path.exists(os.path.join(folder, ".venv", ".installed"))
