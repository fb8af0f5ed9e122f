"""ppo1's worker processes on rank 0's machine, watched, so that a worker's death ends the run in seconds.

Left alone, rank 0 would wait for a dead worker until gloo's timeout (30 minutes): in ``init_process_group``, which
blocks in C++ (no signal handler runs there, so not even Ctrl-C stops it), or in a collective. A thread waits on
the workers' process sentinels; the first worker that ends with an exit code other than 0 while the run needs it is
the run's failure, named in one line (its rank, exit code or signal, and the error it sent through its pipe), and
the other workers are killed, which breaks any collective rank 0 is in. Rank 0 joins the group from a helper thread
and polls, so that it leaves a join that can no longer complete.

Invariants: a worker that ends with exit code 0, or any worker once rank 0 let them go (``close``) or stopped them
(``stop``), is no failure; the workers are spawned (not forked: torch and envs hold threads) and not daemonic (a
worker's env may start processes of its own).

Also here: what a worker's run goes on from that its model does not hold (:func:`workerState`): its envs' episodes
in progress, stacked frames and normalisation statistics, and its generators. Rank 0 gathers them at each clean
point and keeps them in its checkpoints (``workers.json`` and ``workers.npz`` in the training state), and hands
each worker its own when a resumed run starts, so that the workers go on as in the run never interrupted.
"""
from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from multiprocessing import connection
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import torch.multiprocessing as mp

from rl_baselines.core.training_state import (
    captureEpisodeStarts,
    captureFrameStack,
    captureGlobalRNG,
    captureReturns,
    generatorState,
    restoreGlobalRNG,
    resumeEnvs,
    setGeneratorState,
)
from rl_baselines.envs.factory import normalisationArrays, setNormalisation
from srl_toolbox.files import readJson, writeJson, writeNpz
from srl_toolbox.signals import stopSignalsBlocked

# In a checkpoint's training state: rank 0's record of its workers' states, the JSON part and the arrays.
WORKERS_FILE = "workers.json"
WORKERS_ARRAYS_FILE = "workers.npz"


def workerState(model: Any) -> dict[str, Any]:
    """
    :param model: a worker's model (its ``env`` and ``rng``)
    :return: what the worker goes on from at a clean point, besides the networks rank 0 holds: each env's episode
        start (with the actions played since), the frames a ``--num-stack`` env holds, the normalisation statistics
        (with each env's return so far),
        the model's generator and the process's global generators (arrays under ``arrays``)
    """
    arrays = {f"rng.{name}": value for name, value in captureGlobalRNG().items()}
    frames = captureFrameStack(model.env)
    if frames is not None:
        arrays["frames"] = frames
    arrays.update({f"normalisation.{name}": value for name, value in (normalisationArrays(model.env) or {}).items()})
    returns = captureReturns(model.env)
    if returns is not None:
        arrays["returns"] = np.asarray(returns, dtype=np.float64)
    return {"episode_starts": captureEpisodeStarts(model.env), "generator": generatorState(getattr(model, "rng", None)),
            "arrays": arrays}


def restoreWorkerState(model: Any, state: dict[str, Any]) -> None:
    """
    Make a worker of a resumed run go on from :func:`workerState`: its envs' next reset plays their episodes in
    progress again (statistics frozen), with their frames and statistics, and its generators as they were.

    :param model: the worker's model, its env built and not reset yet
    :param state: what :func:`workerState` returned at the checkpoint
    """
    arrays = state["arrays"]
    normalisation = {name[len("normalisation."):]: value for name, value in arrays.items()
                     if name.startswith("normalisation.")}
    if normalisation:
        setNormalisation(model.env, normalisation, "the checkpoint's worker state")
    resumeEnvs(model.env, state["episode_starts"], arrays.get("frames"), replay=True, returns=arrays.get("returns"))
    setGeneratorState(getattr(model, "rng", None), state["generator"])
    restoreGlobalRNG({name[len("rng."):]: value for name, value in arrays.items() if name.startswith("rng.")})


def saveWorkerStates(folder: str, states: list[dict[str, Any]]) -> None:
    """Write the workers' :func:`workerState` (ranks 1 ... in order) into a training state folder."""
    writeJson(os.path.join(folder, WORKERS_FILE), [
        {"episode_starts": state["episode_starts"], "generator": state["generator"]} for state in states])
    writeNpz(os.path.join(folder, WORKERS_ARRAYS_FILE), {
        f"{index}.{name}": value for index, state in enumerate(states) for name, value in state["arrays"].items()})


def loadWorkerStates(folder: str) -> list[dict[str, Any]] | None:
    """:return: what :func:`saveWorkerStates` wrote in a training state folder, None when it holds none"""
    path = os.path.join(folder, WORKERS_FILE)
    if not os.path.isfile(path):
        return None
    states = [{**state, "arrays": {}} for state in readJson(path)]
    with np.load(os.path.join(folder, WORKERS_ARRAYS_FILE), allow_pickle=False) as data:
        for key in data.files:
            index, name = key.split(".", 1)
            states[int(index)]["arrays"][name] = data[key]
    return states


class LocalWorkers:
    """
    Rank 0's worker processes on this machine (ranks 1 .. K-1, spawned), watched by a thread of rank 0: the first
    that ends with an exit code other than 0 before rank 0 lets them go (:meth:`close`) is the run's failure
    (:attr:`failure`, one line naming its rank, exit code or signal, and the error it reported), and the other
    workers are killed at once. Rank 0, waiting for the group to form (:meth:`formGroup`) or in a collective, then
    stops within seconds instead of at gloo's timeout (30 minutes).

    :param target: the workers' function, called as ``target(args[0], rank, *args[1:], report)``, where ``report``
        is the sending end of a pipe for the one line that says why it failed
    :param num_workers: processes on this machine, rank 0 included
    :param args: the rest of ``target``'s arguments
    """

    POLL_S = 0.1  # how often the waits look again (and rank 0's signal handlers run)
    REAP_S = 5.0  # how long rank 0, failed in a collective, waits for the worker whose death broke it to be reaped

    def __init__(self, target: Callable[..., None], num_workers: int, *args: Any) -> None:
        context = mp.get_context("spawn")
        self.processes: dict[int, Any] = {}
        self.reports: dict[int, Connection] = {}
        self.failure: str | None = None
        self.closing = False
        self.lock = threading.Lock()
        for rank in range(1, num_workers):
            reader, writer = context.Pipe(duplex=False)
            # Not daemonic: a worker's makeEnv may start env subprocesses (--num-cpu > 1).
            process = context.Process(target=target, args=(args[0], rank, *args[1:], writer))
            with stopSignalsBlocked():  # a Ctrl-C while the worker imports reaches rank 0, which stops every rank
                process.start()
            writer.close()  # the worker's end: it alone holds it now
            self.processes[rank], self.reports[rank] = process, reader
        self.watcher = threading.Thread(target=self._watch, name="ppo1-workers", daemon=True)
        self.watcher.start()

    def _describe(self, rank: int) -> str:
        """:return: how worker ``rank`` ended, in words (it has ended)"""
        process, report = self.processes[rank], self.reports[rank]
        code = process.exitcode
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"failed (exit code {code})"
        error = None
        try:
            if report.poll():
                error = report.recv()
        except (EOFError, OSError):
            pass
        return f"ppo1 worker rank {rank} {how}" + (f": {error}" if error else "")

    @staticmethod
    def _exitCode(process: Any) -> int | None:
        """
        :return: ``process``'s exit code, None while it runs. Called under the lock only, so that one thread at a
            time reaps the workers (a second one's wait fails and reads no exit code). A worker whose sentinel is
            ready has ended: it is reaped by a blocking wait, as the sentinel can be ready a moment before a
            non-blocking wait sees the exit.
        """
        if process.exitcode is None and connection.wait([process.sentinel], timeout=0):
            process.join()
        return process.exitcode

    def _alive(self) -> list[Any]:
        """:return: the sentinels of the workers still running"""
        with self.lock:
            return [process.sentinel for process in self.processes.values() if self._exitCode(process) is None]

    def _look(self) -> None:
        """Record the first worker that ended with a failure, and kill the others (under the lock)."""
        with self.lock:
            if self.closing or self.failure is not None:
                return
            failed = [rank for rank, process in self.processes.items() if self._exitCode(process) not in (None, 0)]
            if not failed:
                return
            self.failure = self._describe(failed[0])
            for process in self.processes.values():
                if process.exitcode is None:
                    process.kill()

    def _watch(self) -> None:
        while not self.closing and self.failure is None:
            alive = self._alive()
            if not alive:
                self._look()  # the last ones ended between two waits
                return
            if connection.wait(alive, timeout=self.POLL_S):
                self._look()

    def formGroup(self, init: Callable[[], None]) -> None:
        """
        Call ``init`` (rank 0's ``dist.init_process_group``) in a thread, and wait for it here, where signals are
        handled, until it returns or a worker fails.

        :raises RuntimeError: a worker failed first (:attr:`failure`; the thread is left waiting until the
            group's timeout, in vain: the process is about to end)
        """
        outcome: list[BaseException | None] = []

        def join() -> None:
            try:
                init()
                outcome.append(None)
            except BaseException as error:
                outcome.append(error)

        thread = threading.Thread(target=join, name="ppo1-join", daemon=True)
        thread.start()
        while thread.is_alive():
            thread.join(self.POLL_S)
            if self.failure is not None and not outcome:
                raise RuntimeError(self.failure)
        if outcome[0] is not None:
            raise outcome[0]

    def stop(self, wait: bool) -> str | None:
        """
        Rank 0 failed or was stopped at once: kill the workers (they would wait in a collective).

        :param wait: first wait a little for a worker to end (a dead worker is what breaks rank 0's collectives)
        :return: :attr:`failure`, None when no worker failed first
        """
        alive = self._alive()
        if wait and alive and self.failure is None:
            connection.wait(alive, timeout=self.REAP_S)
        self._look()
        with self.lock:
            self.closing = True
            for process in self.processes.values():
                process.kill()
        return self.failure

    def close(self) -> list[str]:
        """
        Let the workers go: wait for them to end (killed after a minute), stop watching.

        :return: how each worker that failed ended (empty when all exited with 0)
        """
        with self.lock:
            self.closing = True
        self.watcher.join()  # (within POLL_S: only this thread waits on the workers from now on)
        for process in self.processes.values():
            process.join(timeout=60)
            if process.is_alive():
                process.kill()
                process.join()
        failures = [self._describe(rank) for rank, process in self.processes.items() if process.exitcode != 0]
        for report in self.reports.values():
            report.close()
        return failures
