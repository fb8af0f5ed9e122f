"""--torch-threads: auto is one thread for an MLP policy and, for a CNN on raw pixels, the process's share of the
cores; recorded in args.json, kept by a resume; the commands that start several runs give each its share."""
from __future__ import annotations

import argparse

import pytest
import torch
from conftest import trainHere

from rl_baselines.core.run_folder import RunFolder
from rl_baselines.runs import train
from rl_baselines.runs.args_format import ARGS_FORMAT
from rl_baselines.runs.train_config import TrainConfig, upgradeArgsRecord
from rl_baselines.sweeps import executors
from rl_baselines.sweeps.recorded import changedSettings
from rl_baselines.sweeps.run_attempts import executeRun
from rl_baselines.sweeps.sweep import makeSpec
from srl_toolbox import devices
from srl_toolbox.devices import THREADS_VARIABLE, parseThreads, resolveThreads, threadsEnvironment, threadsShare
from srl_toolbox.files import readJson

RUN = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps", "128",
       "--hyperparam", "n_steps:64", "--seed", "1"]
# NatureCNN, which takes the process's share of the cores under auto (ppo2's default MediumCNN trains on one thread)
PIXELS = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels", "--img-shape", "3", "36", "36",
          "--features-extractor", "nature", "--num-timesteps", "64", "--hyperparam", "n_steps:64", "batch_size:32",
          "--seed", "1"]


@pytest.fixture
def keepThreads():
    """Restores this process's torch threads after a test that trains with another count."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_auto_is_omp_num_threads_where_set_else_every_usable_core(monkeypatch):
    monkeypatch.setattr(devices, "usableCores", lambda: 6)
    assert resolveThreads(3, environ={THREADS_VARIABLE: "2"}) == 3  # asked: taken as it is
    assert resolveThreads(0, environ={THREADS_VARIABLE: "2"}) == 2
    assert resolveThreads(0, environ={}) == 6
    for junk in ("", "0", "two", "-1"):
        assert resolveThreads(0, environ={THREADS_VARIABLE: junk}) == 6
    assert resolveThreads(0, False, {THREADS_VARIABLE: "2"}) == 1  # small networks: one thread
    assert resolveThreads(4, False, {}) == 4
    # more than the machine's CPUs, which --torch-threads refuses: at most those (OMP_NUM_THREADS=8 ran 8 on 2 CPUs)
    monkeypatch.setattr(devices, "maxThreads", lambda: 6)
    assert resolveThreads(0, environ={THREADS_VARIABLE: "8"}) == 6


def test_the_flag_reads_auto_or_a_count_up_to_the_machines_cpus(monkeypatch):
    monkeypatch.setattr(devices.os, "cpu_count", lambda: 4)
    assert [parseThreads(raw) for raw in ("auto", "AUTO", "0", "1", "4")] == [0, 0, 0, 1, 4]
    for bad, words in (("5", "more threads than this machine's 4 CPUs"), ("100000", "4 CPUs"),
                       ("-1", "not a thread count"), ("two", "not a thread count"), ("1.5", "not a thread count")):
        with pytest.raises(argparse.ArgumentTypeError, match="valid: auto \\(or 0\\) or 1..4") as refused:
            parseThreads(bad)
        assert repr(bad) in str(refused.value) and words in str(refused.value)
    assert train.parseCommand([*RUN, "--torch-threads", "auto"])[0].torch_threads == 0


def test_a_share_of_the_cores_per_run_and_the_users_setting_stands(monkeypatch):
    monkeypatch.setattr(devices, "usableCores", lambda: 5)
    assert [threadsShare(runs) for runs in (1, 2, 3, 5, 8)] == [5, 2, 1, 1, 1]
    assert threadsEnvironment(2, {"A": "b"}) == {"A": "b", THREADS_VARIABLE: "2"}
    assert threadsEnvironment(2, {THREADS_VARIABLE: "4"})[THREADS_VARIABLE] == "4"
    assert executors.LocalExecutor(2).threads == 2 and executors.LocalExecutor(9).threads == 1


def test_the_run_records_its_threads_and_trains_with_them(tmp_path, monkeypatch, keepThreads):
    run_dir = trainHere(*RUN, "--log-dir", str(tmp_path / "asked"), "--torch-threads", "2")
    assert readJson(RunFolder(run_dir).args_file)["torch_threads"] == 2
    assert torch.get_num_threads() == 2
    monkeypatch.setenv(THREADS_VARIABLE, "3")
    monkeypatch.setattr(devices, "maxThreads", lambda: 4)  # (auto takes at most the machine's CPUs)
    run_dir = trainHere(*PIXELS, "--log-dir", str(tmp_path / "auto"))
    assert readJson(RunFolder(run_dir).args_file)["torch_threads"] == 3  # auto, resolved and recorded
    assert torch.get_num_threads() == 3
    run_dir = trainHere(*RUN, "--log-dir", str(tmp_path / "mlp"))
    assert readJson(RunFolder(run_dir).args_file)["torch_threads"] == 1  # auto for an MLP policy
    assert torch.get_num_threads() == 1


def test_a_resume_keeps_the_recorded_threads_unless_told(tmp_path, keepThreads):
    run_dir = trainHere(*RUN, "--log-dir", str(tmp_path), "--torch-threads", "2")
    assert train.parseCommand(["--resume", run_dir])[0].torch_threads == 2
    assert train.parseCommand(["--resume", run_dir, "--torch-threads", "1"])[0].torch_threads == 1


def test_runs_before_the_flag_read_as_one_thread():
    older = {**TrainConfig(torch_threads=4).argsRecord(), "args_format": 6}
    del older["torch_threads"]  # format 6 had no such setting
    record = upgradeArgsRecord(older)
    assert record["torch_threads"] == 1 and record["args_format"] == ARGS_FORMAT


def test_a_sweep_run_gets_its_share_unless_the_user_set_one(tmp_path, monkeypatch):
    monkeypatch.delenv(THREADS_VARIABLE)
    flags = PIXELS[PIXELS.index("--img-shape"):PIXELS.index("--seed")]
    spec = makeSpec("ppo2", "MobileRobotGymEnv-v0", "raw_pixels", 1, flags, str(tmp_path))
    result = executeRun(spec, threads=1)  # (auto's own: every usable core, 2 or more where tests run)
    assert result.state == "done", result
    assert readJson(RunFolder(result.run_folder).args_file)["torch_threads"] == 1
    # neither the spec (its run id) nor the settings a finished run is compared with name the share
    assert "--torch-threads" not in spec.train_args
    assert changedSettings(spec, result.run_folder) == []
