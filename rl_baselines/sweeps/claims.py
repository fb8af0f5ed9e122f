"""Claims on a sweep's runs, so that pipelines started on one ``--log-dir`` share the work, and the sweep's state file
that they all write.

A pipeline claims a run before it starts it: it takes the run's lock, ``.<run id>.claim.lock`` in the folder that
holds the run's folders (``<log-dir>/<env>/<srl-model>/<algo>/``), and writes ``.<run id>.claim.json`` beside it (its
pid and host, named in the other pipelines' messages) for as long as it holds it. The lock is an OS lock
(:mod:`srl_toolbox.locks`), dropped when the pipeline ends, even by SIGKILL, so a crashed pipeline never blocks a run;
with Ray the pipeline (the driver) holds the claims of the tasks it submitted. A pipeline that finds a run claimed
does the other runs of its sweep and waits for that one; when the claim is let go it records the other pipeline's
outcome, or runs it itself if that pipeline died before the run ended.

Invariants:

- a run is started, and its earlier attempts deleted, only by the pipeline that holds its claim;
- a run whose newest attempt got a completion marker (done.json or failed.json) after this pipeline looked at it was
  attempted by another pipeline: its outcome is recorded here as it is, and the run is not attempted again (with
  ``--force`` too), so nothing a finished run wrote is overwritten by a concurrent pipeline;
- a run folder whose train process still holds its own lock (a train that outlived its pipeline) counts as claimed;
- the state file, ``<log-dir>/sweep_<sweep id>.json``, is rewritten atomically under its own lock
  (``.sweep_<sweep id>.lock`` beside it) and merged: each run keeps the newest record any pipeline made of it, a
  ``running`` record of a pipeline that is gone (same host, pid no longer alive) is dropped, and a pipeline's own
  records replace those it wrote before, so no pipeline's write hides a run another one finished;
- its ``counts`` add up to the sweep's runs, a run that a sweep's Ctrl-C stopped counted as ``stopped``, not ``failed``.
"""
from __future__ import annotations

import collections
import datetime
import os
import socket
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from filelock import BaseFileLock

from rl_baselines.runs.resume import LOCK_FILE as TRAIN_LOCK_FILE
from rl_baselines.sweeps.run_attempts import DONE_FILE, FAILED_FILE, PID_FILE, finishedFolder, runAttempts
from rl_baselines.sweeps.sweep import RunSpec
from srl_toolbox.files import readJson, writeJson
from srl_toolbox.locks import acquireLock, tryLock

STATES = ("pending", "running", "done", "skipped", "failed")
# The state file's ``counts``: the runs of each state, those a sweep's Ctrl-C or SIGTERM stopped (failed records with
# ``"stopped": true``, which the same command continues) counted apart from the failed ones, as the summary counts them.
COUNTED_STATES = (*STATES, "stopped")


def pipelineId() -> dict[str, Any]:
    """:return: this process as the state file and the claim notes name it: ``{"pid": ..., "host": ...}``"""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def describePipeline(pipeline: Any) -> str:
    """
    :param pipeline: a ``{"pid", "host"}`` record (or anything else read from a file)
    :return: ``pid N on HOST``, or ``another process`` when the record says nothing usable
    """
    if isinstance(pipeline, dict) and "pid" in pipeline and "host" in pipeline:
        return f"pid {pipeline['pid']} on {pipeline['host']}"
    return "another process"


def claimLockPath(spec: RunSpec) -> str:
    """:return: the run's claim lock, beside its run folders"""
    return os.path.join(spec.parent, f".{spec.run_id}.claim.lock")


def claimNotePath(spec: RunSpec) -> str:
    """:return: the note naming the pipeline that holds the run's claim"""
    return os.path.join(spec.parent, f".{spec.run_id}.claim.json")


@dataclass(frozen=True)
class MarkerSnapshot:
    """
    The newest attempt of a run and its completion marker, as seen at one time.

    :param folder: the newest attempt's folder (None: no attempt)
    :param marker: done.json, failed.json or None
    :param mtime_ns: the marker's modification time
    """

    folder: str | None
    marker: str | None
    mtime_ns: int | None


def newestMarker(spec: RunSpec) -> MarkerSnapshot:
    """:return: the run's newest attempt and its marker, now"""
    attempts = runAttempts(spec)
    if not attempts:
        return MarkerSnapshot(None, None, None)
    for name in (DONE_FILE, FAILED_FILE):
        try:
            return MarkerSnapshot(attempts[-1], name, os.stat(os.path.join(attempts[-1], name)).st_mtime_ns)
        except FileNotFoundError:
            continue
    return MarkerSnapshot(attempts[-1], None, None)


def markerRecord(snapshot: MarkerSnapshot) -> dict[str, Any] | None:
    """
    :param snapshot: a run's newest attempt with a marker
    :return: the state file's record of that outcome (``elsewhere``: another pipeline ran it; ``stopped``: that
        pipeline's Ctrl-C or SIGTERM stopped it, as its failed.json says), None when the marker cannot be read (it
        was deleted since)
    """
    if snapshot.folder is None or snapshot.marker is None:
        return None
    try:
        marker = readJson(os.path.join(snapshot.folder, snapshot.marker))
    except (OSError, ValueError):
        return None
    state = "done" if snapshot.marker == DONE_FILE else "failed"
    return {"state": state, "run_folder": snapshot.folder, "log": marker.get("log", ""),
            "returncode": marker.get("returncode"), "wall_time_s": marker.get("wall_time_s"),
            "message": marker.get("message", ""), "at": (snapshot.mtime_ns or 0) / 1e9, "elsewhere": True,
            **({"stopped": True} if state == "failed" and marker.get("stopped") is True else {})}


def _trainHolder(folder: str | None) -> str | None:
    """:return: who trains in the run's newest attempt when its train process holds the folder's lock, else None"""
    if folder is None or not os.path.isfile(os.path.join(folder, TRAIN_LOCK_FILE)):
        return None
    try:
        lock = tryLock(os.path.join(folder, TRAIN_LOCK_FILE))
    except OSError:  # the folder went away meanwhile
        return None
    if lock is not None:
        lock.release()
        return None
    try:
        with open(os.path.join(folder, PID_FILE), encoding="utf-8") as handle:
            pid = handle.read().strip()
    except OSError:
        pid = "?"
    return f"a train process (pid {pid}) still running in {folder}"


@dataclass
class Taken:
    """
    What :meth:`RunClaims.take` found.

    :param kind: ``claimed`` (this pipeline runs it now), ``held`` (someone else does) or ``attempted`` (another
        pipeline ran it since this one looked: ``record`` is its outcome)
    :param holder: who holds it (``held``)
    :param record: the state file's record of the other pipeline's outcome (``attempted``)
    """

    kind: str
    holder: str = ""
    record: dict[str, Any] | None = None


class RunClaims:
    """
    This pipeline's claims on the runs of its sweep.

    :param specs: the sweep's runs; their newest attempts are looked at now, before the sweep decides what to run
    :param force: the sweep redoes finished runs (else a run found finished when claimed is recorded, not redone)
    """

    def __init__(self, specs: Iterable[RunSpec], force: bool = False) -> None:
        self.force = force
        self.pipeline = pipelineId()
        self._seen = {spec.run_id: newestMarker(spec) for spec in specs}
        self._held: dict[str, tuple[RunSpec, BaseFileLock]] = {}

    def attemptedElsewhere(self, spec: RunSpec) -> dict[str, Any] | None:
        """
        :param spec: a run of the sweep that this pipeline has not run
        :return: the record of its outcome when its newest attempt got a marker since this pipeline looked at it
            (another pipeline ran it), else None
        """
        now = newestMarker(spec)
        if now.marker is None or now == self._seen.get(spec.run_id):
            return None
        return markerRecord(now)

    def take(self, spec: RunSpec) -> Taken:
        """
        Claim a run that this pipeline means to start.

        :param spec: the run
        :return: what was found (the claim is held only for ``claimed``; give it back with :meth:`release`)
        """
        os.makedirs(spec.parent, exist_ok=True)
        lock = tryLock(claimLockPath(spec))
        if lock is None:
            return Taken("held", holder=self.holder(spec))
        record = self.attemptedElsewhere(spec)
        if record is None and not self.force and (folder := finishedFolder(spec)) is not None:
            record = markerRecord(MarkerSnapshot(folder, DONE_FILE, os.stat(os.path.join(folder, DONE_FILE)
                                                                            ).st_mtime_ns))
        if record is not None:
            lock.release()
            return Taken("attempted", record=record)
        trainer = _trainHolder(newestMarker(spec).folder)
        if trainer is not None:
            lock.release()
            return Taken("held", holder=trainer)
        writeJson(claimNotePath(spec), {**self.pipeline,
                                        "since": datetime.datetime.now().isoformat(timespec="seconds")})
        self._held[spec.run_id] = (spec, lock)
        return Taken("claimed")

    @staticmethod
    def holder(spec: RunSpec) -> str:
        """:return: the pipeline that holds the run's claim, as its note names it"""
        try:
            return f"the pipeline {describePipeline(readJson(claimNotePath(spec)))}"
        except (OSError, ValueError):
            return "another pipeline"

    def release(self, run_id: str) -> None:
        """
        Give back a run's claim (nothing when this pipeline does not hold it).

        :param run_id: the run id
        """
        held = self._held.pop(run_id, None)
        if held is None:
            return
        spec, lock = held
        try:
            os.remove(claimNotePath(spec))
        except FileNotFoundError:
            pass
        lock.release()

    def releaseAll(self) -> None:
        """Give back every claim this pipeline holds."""
        for run_id in list(self._held):
            self.release(run_id)


def _pidAlive(pid: int) -> bool:
    """:return: whether a process of this host has that pid (on Windows, where signal 0 would end it: assumed so)"""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):  # another user's process, or a platform without signal 0
        return True
    return True


def _isStale(record: dict[str, Any], host: str) -> bool:
    """:return: whether a ``running`` record is of a pipeline of this host that is gone"""
    pipeline = record.get("pipeline")
    return (record.get("state") == "running" and isinstance(pipeline, dict) and pipeline.get("host") == host
            and isinstance(pipeline.get("pid"), int) and not _pidAlive(pipeline["pid"]))


def mergeRecords(ours: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]], pipeline: dict[str, Any]
                 ) -> dict[str, dict[str, Any]]:
    """
    Merge this pipeline's records of the runs with those the state file holds.

    :param ours: run id -> this pipeline's record (runs it has not dealt with are absent)
    :param theirs: run id -> the record in the state file (pending ones included)
    :param pipeline: this pipeline (:func:`pipelineId`)
    :return: run id -> the newest record (by ``at``; this pipeline's on a tie), leaving out this pipeline's earlier
        records, pending ones and the ``running`` records of pipelines of this host that are gone
    """
    merged = {}
    for run_id in dict.fromkeys([*ours, *theirs]):
        mine, other = ours.get(run_id), theirs.get(run_id)
        if other is not None and (other.get("state") not in STATES[1:] or other.get("pipeline") == pipeline
                                  or _isStale(other, pipeline["host"])):
            other = None
        if other is None or (mine is not None and mine.get("at", 0.0) >= other.get("at", 0.0)):
            chosen = mine
        else:
            chosen = other
        if chosen is not None:
            merged[run_id] = chosen
    return merged


def _readRuns(path: str) -> dict[str, dict[str, Any]]:
    """:return: run id -> the state-file record of each run in the file (empty when it is missing or unreadable)"""
    try:
        runs = readJson(path).get("runs", [])
    except (OSError, ValueError, AttributeError):
        return {}
    return {run["run_id"]: run for run in runs if isinstance(run, dict) and "run_id" in run}


def stateLockPath(path: str) -> str:
    """:return: the lock of a state file, beside it"""
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{os.path.splitext(name)[0]}.lock")


def countedState(record: dict[str, Any]) -> str:
    """:return: the entry of the state file's ``counts`` a run's record adds to (``stopped``: a failed record with
    ``"stopped": true``)"""
    return "stopped" if record.get("state") == "failed" and record.get("stopped") else str(record.get("state"))


def writeSweepState(path: str, command: Sequence[str], specs: Sequence[RunSpec], records: dict[str, dict[str, Any]],
                    pipeline: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """
    Write the sweep's state file, merged with what other pipelines of the sweep wrote (see :func:`mergeRecords`),
    atomically and under its lock: every run with its spec, state, folder, log, exit code and the pipeline that
    recorded it, and ``counts``, the runs of each of :data:`COUNTED_STATES` (:func:`countedState`).

    :param path: ``<log-dir>/sweep_<sweep id>.json``
    :param command: this pipeline's command line
    :param specs: the sweep's runs
    :param records: run id -> this pipeline's record, {"state": running|done|failed|skipped, "run_folder", "log",
        "returncode", "at": time.time() of the record, "pipeline", ...}; runs without one are pending here
    :param pipeline: this pipeline (default: :func:`pipelineId`)
    :return: the merged records written
    """
    pipeline = pipeline or pipelineId()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    lock = acquireLock(stateLockPath(path))
    try:
        theirs = _readRuns(path)
        merged = mergeRecords({run_id: record for run_id, record in records.items() if record["state"] != "pending"},
                              theirs, pipeline)
        runs = [{**spec.toDict(), **merged.get(spec.run_id, {"state": "pending"})} for spec in specs]
        counts = collections.Counter(countedState(run) for run in runs)
        writeJson(path, {"command": list(command), "updated": datetime.datetime.now().isoformat(timespec="seconds"),
                         "written_by": pipeline, "counts": {state: counts[state] for state in COUNTED_STATES},
                         "runs": runs})
    finally:
        lock.release()
    return merged


def stamp(record: dict[str, Any], pipeline: dict[str, Any]) -> dict[str, Any]:
    """
    :param record: a record this pipeline makes of a run
    :param pipeline: this pipeline
    :return: the record with the time it is made and the pipeline that made it
    """
    return {**record, "at": round(time.time(), 3), "pipeline": pipeline}


__all__ = ["COUNTED_STATES", "MarkerSnapshot", "RunClaims", "STATES", "Taken", "claimLockPath", "claimNotePath",
           "countedState", "describePipeline", "markerRecord", "mergeRecords", "newestMarker", "pipelineId", "stamp",
           "stateLockPath", "writeSweepState"]
