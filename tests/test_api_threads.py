"""The Python API called from a thread other than the main one (a notebook or a script that trains in the background):
Python installs no signal handler there and delivers no signal to it, so the calls run without their stop handling
instead of failing with ``ValueError: signal only works in main thread``."""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

import srl_models
from rl_baselines import api
from rl_baselines.sweeps import executors

GT = {"algo": "ppo2", "env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth"}


def inThread(call: Callable[[], Any]) -> Any:
    """:return: what ``call`` returned in another thread, or the exception it raised there"""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as error:  # (a KeyboardInterrupt too: the thread's outcome)
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return outcome[0]


def test_train_agent_in_a_thread_trains_and_leaves_the_handlers(tmp_path) -> None:
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    result = inThread(lambda: api.trainAgent(**GT, num_timesteps=64, log_dir=tmp_path, hyperparams={"n_steps": 16}))
    assert isinstance(result, api.TrainResult), result
    assert result.exit_code == 0 and result.num_timesteps == 64
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers


def test_run_sweep_in_a_thread_runs_and_stops_as_in_the_main_thread(tmp_path, monkeypatch) -> None:
    def interruptedWait(self, timeout):
        raise KeyboardInterrupt  # the sweep's own stop handling, reached in the thread

    monkeypatch.setattr(executors.LocalExecutor, "submit", lambda self, spec: None)
    monkeypatch.setattr(executors.LocalExecutor, "wait", interruptedWait)
    stopped = inThread(lambda: api.runSweep(**GT, num_iteration=1, num_timesteps=64, log_dir=tmp_path, workers=1))
    assert isinstance(stopped, api.SweepInterrupted), stopped
    assert stopped.result.exit_code == 130 and len(stopped.result.runs) == 1


def test_record_dataset_with_workers_in_a_thread(tmp_path) -> None:
    folder = inThread(lambda: srl_models.recordDataset("MobileRobotGymEnv-v0", num_episode=2, max_steps=5,
                                                       img_shape=[3, 32, 32], save_path=tmp_path, name="t", num_cpu=2))
    assert folder == str(tmp_path / "t"), folder
