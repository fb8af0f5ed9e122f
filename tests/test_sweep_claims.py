"""Claims on sweep runs and the merged sweep state file (rl_baselines.sweeps.claims), without training: a run is
claimed by one pipeline at a time, a dead pipeline's claim does not block, a run another pipeline finished is recorded
and never redone, and no state-file write hides what another pipeline recorded. The two pipelines started at once on
one folder are in tests/test_pipeline.py."""
from __future__ import annotations

import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time

from rl_baselines.sweeps.claims import (
    RunClaims,
    claimNotePath,
    countedState,
    mergeRecords,
    pipelineId,
    stamp,
    writeSweepState,
)
from rl_baselines.sweeps.run_attempts import DONE_FILE, FAILED_FILE
from rl_baselines.sweeps.sweep import RunSpec
from srl_toolbox.files import writeJson

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _spec(log_dir: str, seed: int = 0) -> RunSpec:
    return RunSpec("ppo2", "MobileRobotGymEnv-v0", "ground_truth", seed, (), f"run{seed:06d}", log_dir, ROOT)


def _attempt(spec: RunSpec, stamp_: str, marker: str | None, returncode: int = 0, **extra) -> str:
    """A run folder of the spec, with a marker as the pipeline writes it."""
    folder = os.path.join(spec.parent, f"{stamp_}_{spec.run_id}")
    os.makedirs(folder)
    if marker is not None:
        writeJson(os.path.join(folder, marker), {"run_id": spec.run_id, "returncode": returncode,
                                                 "log": os.path.join(folder, "train.log"), "wall_time_s": 1.5,
                                                 "message": "" if returncode == 0 else "error: boom",
                                                 "state": "done" if marker == DONE_FILE else "failed", **extra})
    return folder


def _hold(log_dir: str, told) -> None:
    """Claim seed 0's run, say so, and hold it until killed."""
    claims = RunClaims([_spec(log_dir, 0)])  # kept: a lock object that is dropped lets its lock go
    told.send(claims.take(_spec(log_dir, 0)).kind)
    time.sleep(600)


def _holder(log_dir: str) -> multiprocessing.Process:
    """Another pipeline: a process forked from this one (its own locks, its own pid; the modules it needs imported
    already) that claims seed 0's run, says so, and holds it until killed."""
    receiver, sender = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.get_context("fork").Process(target=_hold, args=(log_dir, sender), daemon=True)
    process.start()
    assert receiver.poll(60) and receiver.recv() == "claimed"
    return process


def test_a_run_is_claimed_once_and_a_dead_pipelines_claim_does_not_block(tmp_path) -> None:
    log_dir = str(tmp_path / "logs")
    spec, other = _spec(log_dir, 0), _spec(log_dir, 1)
    holder = _holder(log_dir)
    try:
        claims = RunClaims([spec, other])
        taken = claims.take(spec)
        assert taken.kind == "held"
        assert taken.holder == f"the pipeline pid {holder.pid} on {socket.gethostname()}"
        assert claims.take(other).kind == "claimed"  # the runs nobody holds are this pipeline's
        assert json.load(open(claimNotePath(other)))["pid"] == os.getpid()
    finally:
        holder.kill()
        holder.join()
    assert claims.take(spec).kind == "claimed"  # the OS dropped the killed pipeline's lock
    assert RunClaims([spec]).take(spec).kind == "held"  # and this process holds it now (one claim per run)
    claims.releaseAll()
    assert not os.path.exists(claimNotePath(spec)) and not os.path.exists(claimNotePath(other))
    assert not any(name.endswith(spec.run_id) for name in os.listdir(spec.parent))  # no run folder made


def test_a_run_another_pipeline_attempted_is_recorded_not_redone(tmp_path) -> None:
    log_dir = str(tmp_path / "logs")
    done_spec, failed_spec, earlier_failed = _spec(log_dir, 0), _spec(log_dir, 1), _spec(log_dir, 2)
    earlier = _attempt(earlier_failed, "26-01-01_00h00_00", FAILED_FILE, returncode=1)
    for force in (False, True):
        claims = RunClaims([done_spec, failed_spec, earlier_failed], force=force)
        # Meanwhile another pipeline ran two of them: its outcomes are taken as they are (--force too)
        done_folder = _attempt(done_spec, "26-01-02_00h00_00", DONE_FILE)
        failed_folder = _attempt(failed_spec, "26-01-02_00h00_00", FAILED_FILE, returncode=1)
        assert claims.attemptedElsewhere(earlier_failed) is None
        taken = claims.take(done_spec)
        assert taken.kind == "attempted" and taken.record["state"] == "done" and taken.record["elsewhere"]
        assert taken.record["run_folder"] == done_folder and taken.record["returncode"] == 0
        taken = claims.take(failed_spec)
        assert taken.kind == "attempted" and taken.record["state"] == "failed"
        assert taken.record["run_folder"] == failed_folder and taken.record["message"] == "error: boom"
        assert "stopped" not in taken.record
        # A run that had failed before this pipeline looked is this pipeline's to redo
        assert claims.take(earlier_failed).kind == "claimed"
        claims.releaseAll()
        for folder in (done_folder, failed_folder):
            for name in os.listdir(folder):
                os.remove(os.path.join(folder, name))
            os.rmdir(folder)
    assert os.path.isdir(earlier)


def test_a_run_another_pipelines_ctrl_c_stopped_is_recorded_stopped(tmp_path) -> None:
    """The other pipeline's failed.json says ``"stopped": true`` (its Ctrl-C or SIGTERM stopped the run): the record
    says so too, so that the state file and the summary count it stopped, not failed."""
    spec = _spec(str(tmp_path / "logs"), 0)
    claims = RunClaims([spec])
    _attempt(spec, "26-01-02_00h00_00", FAILED_FILE, returncode=130, stopped=True)
    taken = claims.take(spec)
    assert taken.kind == "attempted" and taken.record["state"] == "failed" and taken.record["stopped"] is True
    assert countedState(taken.record) == "stopped"


def test_state_file_merges_what_every_pipeline_recorded(tmp_path) -> None:
    me = pipelineId()
    other = {"pid": me["pid"] + 1, "host": "elsewhere"}
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = {"pid": dead.pid, "host": me["host"]}
    old_failed = {**stamp({"state": "failed", "returncode": 1}, me), "at": 100.0}
    ours = {"a": old_failed, "b": stamp({"state": "running"}, me), "c": stamp({"state": "skipped"}, me)}
    theirs = {"a": {"state": "done", "returncode": 0, "at": 200.0, "pipeline": other},  # redone since: done wins
              "b": {"state": "failed", "at": 50.0, "pipeline": me},  # this pipeline's earlier record: replaced
              "c": {"state": "done", "at": 1.0, "pipeline": other},  # older than this pipeline's record
              "d": {"state": "running", "at": 300.0, "pipeline": other},  # another host's run in flight: kept
              "e": {"state": "running", "at": 300.0, "pipeline": gone},  # a pipeline of this host that is gone
              "f": {"state": "pending"}}
    merged = mergeRecords(ours, theirs, me)
    assert {run_id: record["state"] for run_id, record in merged.items()} == {
        "a": "done", "b": "running", "c": "skipped", "d": "running"}

    # Two pipelines of one sweep write the same file, each knowing a different part: neither hides the other's
    log_dir = str(tmp_path / "logs")
    specs = [_spec(log_dir, seed) for seed in range(3)]
    path = os.path.join(log_dir, "sweep_x.json")
    first = {"pid": 1, "host": "one"}
    writeSweepState(path, ["first"], specs, {specs[0].run_id: stamp({"state": "done", "returncode": 0}, first),
                                             specs[1].run_id: stamp({"state": "running"}, first)}, first)
    time.sleep(0.01)
    writeSweepState(path, ["second"], specs, {specs[1].run_id: stamp({"state": "done", "returncode": 0}, me)}, me)
    state = json.load(open(path))
    assert [run["state"] for run in state["runs"]] == ["done", "done", "pending"]
    assert state["counts"] == {"pending": 1, "running": 0, "done": 2, "skipped": 0, "failed": 0, "stopped": 0}
    assert [run.get("pipeline") for run in state["runs"]] == [first, me, None] and state["written_by"] == me
    assert sorted(os.listdir(log_dir)) == [".sweep_x.lock", "sweep_x.json"]
