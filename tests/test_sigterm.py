"""SIGTERM (``kill PID``, ``timeout``, a batch scheduler) to a command that installs no handler of its own: it stops
as on a Ctrl-C (the same clean-up: a video finished, a dataset's workers stopped, a model folder removed) and exits
143 with no traceback; it used to die at once, leaving temporary files and half-written folders. Train's own
handling: tests/test_resume.py, tests/test_ctrl_c.py; hyperparam_search's: tests/test_search_signals.py."""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import cv2
import pytest
from conftest import childProcesses, startModule
from test_srl_models import tinyDataset  # noqa: F401 (a fixture)

from environments import dataset_generator
from srl_toolbox import signals
from srl_toolbox.cli import TERMINATED_EXIT_CODE
from srl_toolbox.signals import Terminated, raiseTerminated, sigtermAsCtrlC

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix", reason="POSIX signals")


def terminateWhen(process, ready: Callable[[], bool]) -> tuple[str, str]:
    """
    Send SIGTERM to the command alone once ``ready()`` says it is mid-work.

    :return: its stdout and stderr once it has ended
    """
    deadline = time.monotonic() + 120
    while not ready():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    return process.communicate(timeout=120)


def filesUnder(folder) -> list[str]:
    return sorted(os.path.relpath(os.path.join(root, name), folder)
                  for root, _, names in os.walk(folder) for name in names)


def test_a_replay_writing_a_video_finishes_it(tmp_path, trainedRun) -> None:
    """The MP4 of the steps played is written (its temporary file moved into place), as on a Ctrl-C; exit 143."""
    mp4 = tmp_path / "replay.mp4"
    process = startModule("replay.enjoy_baselines", "--log-dir", trainedRun, "--num-timesteps", "100000",
                          "--video", mp4, "--no-progress")
    # frames written (the header alone is a few bytes; a frame about 2 KB)
    out, err = terminateWhen(process, lambda: any(".tmp" in entry.name and entry.stat().st_size > 2**16
                                                  for entry in os.scandir(tmp_path)))
    assert process.returncode == TERMINATED_EXIT_CODE == 143, err
    assert "Traceback" not in err and "Interrupted after" in out, (out, err)
    assert os.listdir(tmp_path) == ["replay.mp4"], out
    capture = cv2.VideoCapture(str(mp4))
    assert capture.isOpened() and capture.read()[0]
    capture.release()


def test_a_recording_with_workers_stops_them_and_keeps_its_finished_episodes(tmp_path) -> None:
    """2 workers: the pool is terminated (they end: SIGTERM's default action, not the command's handler), the
    finished episodes kept for --resume and no dataset published, one line; exit 143."""
    name, episodes = "ds", tmp_path / ".ds.partial" / "episodes"
    process = startModule("environments.dataset_generator", "--save-path", tmp_path, "--name", name, "--env",
                          "MobileRobotGymEnv-v0", "--img-shape", 3, 32, 32, "--max-steps", 25, "--seed", 7, "-r",
                          "--image-format", "png", "--num-episode", 40, "--num-cpu", 2, "--no-progress")
    workers = []

    def oneEpisodeFinished() -> bool:
        workers[:] = childProcesses(process.pid) or workers
        return episodes.is_dir() and any(".tmp" not in name for name in os.listdir(episodes))

    out, err = terminateWhen(process, oneEpisodeFinished)
    assert process.returncode == 143, err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and lines[-1].startswith("Interrupted: ") and "--resume" in lines[-1], err
    assert sorted(os.listdir(tmp_path)) == [".ds.partial"] and episodes.is_dir()
    assert workers and not [pid for pid, _ in workers if os.path.exists(f"/proc/{pid}")], workers


def test_prepare_stopped_while_it_records_exits_143(tmp_path) -> None:
    """srl_models.prepare ended a SIGTERM during its recording with the recording's Ctrl-C code, 130, not 143."""
    data = tmp_path / "data"
    process = startModule("srl_models.prepare", "--env", "MobileRobotGymEnv-v0", "--srl-model", "pca", "--episodes", 40,
                          "--epochs", 1, "--seed", 3, "--data-folder", data, "--log-folder", tmp_path / "srl",
                          "--srl-config-file", tmp_path / "srl.yaml", "--no-progress")
    out, err = terminateWhen(process, lambda: any((data / name / "episodes").is_dir() and any(
        ".tmp" not in episode for episode in os.listdir(data / name / "episodes"))
        for name in (os.listdir(data) if data.is_dir() else ()) if name.endswith(".partial")))
    assert process.returncode == TERMINATED_EXIT_CODE, (out, err)
    assert "Traceback" not in err and "Interrupted: " in err, err


def test_an_srl_training_writing_its_model_folder_removes_it(tmp_path, tinyDataset) -> None:  # noqa: F811
    """Once the model folder is being written: it is removed, the parents made for it too; ``Terminated``, 143."""
    for attempt in range(3):  # a tiny PCA may finish between the poll that sees its folder and the signal: again
        logs = tmp_path / f"logs{attempt}"
        process = startModule("srl_models.train", "--data-folder", tinyDataset, "--srl-model", "pca", "--state-dim",
                              2, "--log-folder", logs, "--no-progress")
        out, err = terminateWhen(process, lambda: any(name.endswith("exp_config.json") for name in filesUnder(logs)))
        if process.returncode != 0:
            break
    assert (process.returncode, err.strip().splitlines()[-1:]) == (143, ["Terminated"]), err
    assert "Traceback" not in err and not os.path.exists(logs), (filesUnder(logs), err)


def test_a_sigterm_while_the_workers_are_forked_stops_the_recording(tmp_path, capsys) -> None:
    """A SIGTERM that came while the recording forked a worker is held back as a Ctrl-C is (raised in the standard
    library's at-fork hooks, it would be ignored and the recording go on to the end), then stops it."""
    armed = [True]

    def sigtermWhileForking() -> None:
        if armed[0]:
            armed[0] = False
            os.kill(os.getpid(), signal.SIGTERM)

    os.register_at_fork(after_in_parent=sigtermWhileForking)  # (cannot be removed: it fires once)
    config = dataset_generator.parseConfig(["--save-path", str(tmp_path), "--name", "ds", "--env",
                                            "MobileRobotGymEnv-v0", "--img-shape", "3", "32", "32", "--max-steps",
                                            "25", "--num-episode", "4", "--num-cpu", "2", "--no-progress"])
    with sigtermAsCtrlC() as termination:
        code = dataset_generator.generate(config)
    armed[0] = False
    assert code == 130 and termination.received
    assert not (tmp_path / "ds").exists()
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("Interrupted")


def _frameIn(filename: str):
    return type("Frame", (), {"f_code": type("Code", (), {"co_filename": filename})()})()


def test_a_sigterm_in_importlibs_own_code_is_sent_again_not_lost(monkeypatch) -> None:
    """A search worker's SIGTERM that landed in a module lock's weakref callback (importlib) raised there: Python
    printed "Exception ignored in ... _get_module_lock ... Terminated" and dropped the stop. It is sent again."""
    sent = []
    monkeypatch.setattr(signals.os, "kill", lambda pid, signum: sent.append((pid, signum)))
    monkeypatch.setattr(signals, "RESEND_DELAY", 0.0)
    try:
        raiseTerminated(signal.SIGTERM, _frameIn("<frozen importlib._bootstrap>"))
    except Terminated:
        pytest.fail("raised in importlib's own code, where Python may print and drop it")
    deadline = time.monotonic() + 10
    while not sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sent == [(os.getpid(), signal.SIGTERM)]
    with pytest.raises(Terminated):
        raiseTerminated(signal.SIGTERM, _frameIn(__file__))
    with pytest.raises(Terminated):
        raiseTerminated(signal.SIGTERM, None)
