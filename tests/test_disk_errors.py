"""A hostile file system is one line, never a traceback: a full disk mid-work (``error: could not write PATH: No space
left on device``, exit 1; train adds the ``--resume`` command), and up front (exit 2) a dangling symbolic link or a
link loop on an output folder, and a name too long once srl-toolbox adds its temporary suffix."""
from __future__ import annotations

import errno
import io
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pytest
import torch
from PIL import Image
from stable_baselines3.common.logger import CSVOutputFormat
from test_srl_models import tinyDataset  # noqa: F401  (the session fixture: one tiny dataset)

from environments import dataset_generator
from replay import enjoy_baselines
from rl_baselines.runs import train
from srl_models import train as srl_train
from srl_toolbox import files
from srl_toolbox.cli import (
    USAGE_EXIT_CODE,
    UsageError,
    checkOutputFile,
    checkWritableFolder,
    pythonCommand,
    runCommand,
)

FULL = "No space left on device"
TRAIN = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--no-vis",
         "--no-progress", "--seed", "0"]
GENERATE = ["--env", "MobileRobotGymEnv-v0", "--num-episode", "1", "--max-steps", "10", "--img-shape", "3", "32",
            "32", "--no-progress"]


def _run(main: Callable[[Sequence[str] | None], int | None], argv: list[str], capsys) -> tuple[int, str]:
    """:return: the exit code and stderr of a command run in this process through its runner"""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        runCommand(main, [str(arg) for arg in argv])
    return exited.value.code, capsys.readouterr().err


def _assertOneErrorLine(stderr: str) -> str:
    """:return: the one ``error:`` line, the last of stderr, after checking there is no traceback"""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and stderr.strip().splitlines()[-1] == errors[0], stderr
    return errors[0]


def _diskFull(*args, **kwargs):
    raise OSError(errno.ENOSPC, FULL)  # as a write to an open file raises it: no file name


# --- a full disk mid-work ----------------------------------------------------------------------------------------

def test_an_environment_error_is_found_in_an_exception_chain_and_a_bug_is_not():
    try:
        try:
            _diskFull()
        except OSError:
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos")  # noqa: B904
    except RuntimeError as error:
        assert files.environmentError(error).errno == errno.ENOSPC  # torch.save's: the OS error is its context
    assert files.environmentError(FileNotFoundError(errno.ENOENT, "No such file")) is None
    assert files.environmentError(ValueError("a bug")) is None


def test_a_warning_of_several_lines_prints_as_one(monkeypatch):
    """SB3's minibatch advice spans three lines: a command formats each warning as one line."""
    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)  # runCommand replaces it
    with pytest.raises(SystemExit):
        runCommand(lambda argv: None, [])
    shown = warnings.formatwarning("a mini-batch size of 128\nWe recommend a factor\nInfo: (n_steps=250)",
                                   UserWarning, "ppo.py", 1)
    assert shown == "warning: a mini-batch size of 128 We recommend a factor Info: (n_steps=250)\n"


def test_a_bug_keeps_its_traceback(capsys):
    def failing(argv):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "x")
    with pytest.raises(FileNotFoundError):
        runCommand(failing, [])


def test_atomic_path_names_the_file_a_failed_write_was_for(tmp_path):
    target = tmp_path / "out.bin"
    with pytest.raises(OSError) as raised, files.atomicPath(str(target)):
        _diskFull()
    assert raised.value.filename == str(target)
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_a_full_disk_mid_training_is_one_line_with_the_resume_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(CSVOutputFormat, "write", _diskFull)  # the progress.csv row of SB3's logger dump
    code, stderr = _run(train.main, [*TRAIN, "--num-timesteps", "600", "--log-dir", tmp_path], capsys)
    line = _assertOneErrorLine(stderr)
    assert code == 1
    [run_dir] = [root for root, _, files in os.walk(tmp_path) if "args.json" in files]
    assert line == (f"error: could not write {run_dir}/progress.csv: {FULL}; once fixed, continue the run with: "
                    f"{pythonCommand()} -m rl_baselines.train --resume {run_dir}")


def test_a_full_disk_while_the_srl_model_is_saved_is_one_line(tinyDataset, tmp_path, monkeypatch,  # noqa: F811
                                                              capsys):
    def torchSaveOnAFullDisk(*args, **kwargs):
        try:
            _diskFull()
        except OSError:  # what torch.save raises: the OS error is only its context
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0")  # noqa: B904

    monkeypatch.setattr(torch, "save", torchSaveOnAFullDisk)
    code, stderr = _run(srl_train.main, ["--data-folder", tinyDataset, "--srl-model", "autoencoder", "--state-dim",
                                         "4", "--epochs", "1", "--batch-size", "64", "--no-progress",
                                         "--log-folder", tmp_path], capsys)
    line = _assertOneErrorLine(stderr)
    assert code == 1 and line.startswith("error: could not write ") and line.endswith(f"/srl_model.pt: {FULL}"), line


def test_a_full_disk_while_a_dataset_episode_is_written_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(np, "savez", _diskFull)  # writeNpz of the episode's arrays
    code, stderr = _run(dataset_generator.main, [*GENERATE, "--name", "ds", "--save-path", tmp_path], capsys)
    line = _assertOneErrorLine(stderr)
    assert code == 1
    assert line == f"error: could not write {tmp_path}/.ds.partial/episodes/episode_000000.npz: {FULL}", line


def test_a_full_disk_while_a_dataset_frame_is_written_is_one_line(tmp_path, monkeypatch, capsys):
    class FullDisk(io.BytesIO):
        def write(self, data) -> int:
            _diskFull()

    monkeypatch.setattr(dataset_generator, "open", lambda path, mode="r", **kwargs: FullDisk(), raising=False)
    code, stderr = _run(dataset_generator.main, [*GENERATE, "--name", "ds", "--save-path", tmp_path], capsys)
    line = _assertOneErrorLine(stderr)
    assert code == 1
    assert line == f"error: could not write {tmp_path}/.ds.partial/record_000/frame000000.jpg: {FULL}", line


@pytest.mark.slow
def test_a_full_disk_when_the_video_is_written_is_one_line(trainedRun, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(Image.Image, "save", _diskFull)
    gif = tmp_path / "out.gif"
    code, stderr = _run(enjoy_baselines.main, ["--log-dir", trainedRun, "--num-timesteps", "4", "--video", gif],
                        capsys)
    assert _assertOneErrorLine(stderr) == f"error: could not write {gif}: {FULL}" and code == 1
    assert os.listdir(tmp_path) == []


# --- refused up front: a link to nothing, a name too long ---------------------------------------------------------

@pytest.fixture
def links(tmp_path) -> dict[str, str]:
    (tmp_path / "dangling").symlink_to(tmp_path / "nonexistent")
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    return {"dangling": str(tmp_path / "dangling"), "loop": str(tmp_path / "loop_a")}


def test_a_dangling_link_or_a_loop_on_an_output_folder_is_refused(links):
    for folder in (links["dangling"], os.path.join(links["dangling"], "runs", "x")):
        with pytest.raises(UsageError, match=r"is a symbolic link to '.*nonexistent', which is missing"):
            checkWritableFolder(folder, "--log-dir")
    with pytest.raises(UsageError, match="is a symbolic link in a loop"):
        checkWritableFolder(os.path.join(links["loop"], "x"), "--save-path")
    with pytest.raises(UsageError, match="--video .*is a symbolic link to"):
        checkOutputFile(os.path.join(links["dangling"], "x.gif"), "--video")


@pytest.mark.parametrize("raised, expected", [
    (FileNotFoundError(errno.ENOENT, "No such file or directory"),
     r"^--log-dir '{folder}': cannot create files in '{parent}' \(the nearest existing folder of its path\): No such "
     r"file or directory$"),
    (PermissionError(errno.EACCES, "Permission denied"),
     r"^--log-dir '{folder}' \(its parent '{parent}'\) is not writable: Permission denied$"),
])
def test_an_unwritable_folder_is_refused_with_what_failed(tmp_path, monkeypatch, raised, expected):
    """--log-dir /proc/x said "(its parent '/proc') is not writable: No such file or directory": the parent exists,
    creating a file in it failed. Only a refusal (permissions, a read-only mount) says "is not writable"."""
    def fail(*args, **kwargs):
        raise raised

    monkeypatch.setattr(tempfile, "TemporaryFile", fail)
    folder = os.path.join(tmp_path, "x")
    with pytest.raises(UsageError, match=expected.format(folder=re.escape(folder), parent=re.escape(str(tmp_path)))):
        checkWritableFolder(folder, "--log-dir")
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="no /proc")
def test_train_under_proc_says_no_file_can_be_created_there(capsys):
    code, stderr = _run(train.main, [*TRAIN, "--num-timesteps", "300", "--log-dir", "/proc/x"], capsys)
    assert code == USAGE_EXIT_CODE and _assertOneErrorLine(stderr) == (
        "error: --log-dir '/proc/x': cannot create files in '/proc' (the nearest existing folder of its path): No such "
        "file or directory")
    assert not os.path.exists("/proc/x")


def test_train_and_the_dataset_generator_refuse_a_dangling_link_before_any_work(links, capsys):
    code, stderr = _run(train.main, [*TRAIN, "--num-timesteps", "300", "--log-dir", links["dangling"]], capsys)
    assert code == USAGE_EXIT_CODE and _assertOneErrorLine(stderr).startswith(f"error: --log-dir '{links['dangling']}'")
    code, stderr = _run(dataset_generator.main, [*GENERATE, "--save-path", links["loop"]], capsys)
    assert code == USAGE_EXIT_CODE and "symbolic link in a loop" in _assertOneErrorLine(stderr)


def test_an_output_name_that_is_only_an_extension_is_refused(tmp_path) -> None:
    """``--video .gif`` and compare_plots' ``-o .png`` wrote hidden files named .gif and .png: refused in one line."""
    for name in (".gif", ".mp4", ".PNG"):
        with pytest.raises(UsageError, match=rf"^--video '.*/\{name}' names no file, only its extension: give a name "
                                             rf"before it \(e\.g\. out\{name}\)$"):
            checkOutputFile(str(tmp_path / name), "--video")
    checkOutputFile(str(tmp_path / "a.gif"), "--video")
    checkOutputFile(str(tmp_path / ".hidden.gif"), "--video")  # (a name, hidden by choice)
    assert not os.listdir(tmp_path)


def test_a_name_too_long_with_the_temporary_suffix_is_refused(tmp_path, capsys):
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    longest = limit - files.TEMPORARY_NAME_EXTRA  # a temporary file's name then just fits
    video = tmp_path / ("v" * (longest - len(".gif") + 1) + ".gif")
    with pytest.raises(UsageError, match=rf"the file name 'v+\.gif' is {longest + 1} bytes, over the {longest}"):
        checkOutputFile(str(video), "--video")
    checkOutputFile(str(tmp_path / ("v" * (longest - len(".gif")) + ".gif")), "--video")
    code, stderr = _run(train.main, [*TRAIN, "--num-timesteps", "300", "--log-dir", tmp_path, "--tag",
                                     "t" * (limit - 20)], capsys)
    assert code == USAGE_EXIT_CODE and _assertOneErrorLine(stderr).startswith("error: --tag 'ttt")
    code, stderr = _run(train.main, [*TRAIN, "--num-timesteps", "300", "--log-dir", tmp_path / ("d" * (limit + 1))],
                        capsys)
    assert code == USAGE_EXIT_CODE and f"is {limit + 1} bytes, over the file system's {limit}" in stderr
    for name in ("n" * (limit - 5), "n" * (limit + 1)):
        code, stderr = _run(dataset_generator.main, [*GENERATE, "--save-path", tmp_path, "--name", name], capsys)
        assert code == USAGE_EXIT_CODE and _assertOneErrorLine(stderr).startswith(f"error: --name '{name}'")
    assert os.listdir(tmp_path) == []


def test_an_output_file_under_a_file_is_refused_naming_the_value_given(tmp_path, monkeypatch):
    """--video a.gif/x.gif (a.gif a file) said "--video '/abs/a.gif': '/abs/a.gif' is a file": the refusal names the
    value given, then the path in its way."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.gif").write_bytes(b"GIF89a")
    for given in ("a.gif/x.gif", os.path.join("a.gif", "sub", "x.mp4")):
        with pytest.raises(UsageError, match=rf"^--video '{re.escape(given)}': '{re.escape(str(tmp_path / 'a.gif'))}' "
                                             rf"is a file, not a folder$"):
            checkOutputFile(given, "--video")
    assert sorted(os.listdir(tmp_path)) == ["a.gif"]
