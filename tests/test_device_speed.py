"""benchmarks.device_speed: a timed run per device, the device ``--device auto`` picks, and its refusals."""
from __future__ import annotations

import argparse
from unittest import mock

import pytest
import torch

from benchmarks import device_speed


def test_times_each_run_and_says_what_auto_picks(capsys: pytest.CaptureFixture) -> None:
    with mock.patch.object(device_speed, "appendReport") as append:
        rows = device_speed.main(["--runs", "ppo2:ground_truth", "a2c:raw_pixels", "--steps", "64", "--devices",
                                  "cpu", "--warm-up-steps", "50"])
    assert [(row["algo"], row["observation"]) for row in rows] == [("ppo2", "ground_truth"), ("a2c", "raw_pixels")]
    assert all(set(row["rates"]) == {"cpu"} and row["rates"]["cpu"] > 0 for row in rows)
    expected_auto = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert [row["auto"] for row in rows] == ["cpu", expected_auto]  # a CNN policy on images takes a GPU when there is one
    out = capsys.readouterr().out
    assert "| ppo2 | ground_truth |" in out and "auto picks the faster device for" in out
    (call,) = append.call_args_list
    assert call.args[1] == "python -m benchmarks.device_speed --runs ppo2:ground_truth a2c:raw_pixels --steps 64 " \
                           "--devices cpu --warm-up-steps 50"
    assert "sprite cache: " in out and "50 random steps filling the sprite cache" in call.args[2]


def test_bad_runs_and_a_missing_gpu_are_refused(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="unknown algorithm 'nope'.*valid: .*ppo2"):
        device_speed.parseRun("nope:ground_truth")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown observation 'joints'.*ground_truth, raw_pixels"):
        device_speed.parseRun("ppo2:joints")
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit) as exit_info:
            device_speed.main(["--devices", "cuda", "--no-append"])
        assert exit_info.value.code == 2 and "this machine has no CUDA GPU" in capsys.readouterr().err
