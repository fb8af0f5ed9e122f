"""Where the runs of a sweep execute: local processes, or Ray tasks on a running cluster or a local Ray instance.

Both executors offer the same small interface to the pipeline's loop: ``hasSlot()``, ``submit(spec)``,
``wait(timeout) -> finished results``, ``running`` (specs in flight), ``shutdown(interrupted)``, ``lost`` (below) and,
after an interrupted shutdown, ``unstarted`` (submitted runs that never started: not run, like the runs never
submitted). The Ray executor keeps at most what the cluster fits in flight, so a run it counts as running is not
waiting in Ray's queue (unless other jobs hold the cluster). A Ray task runs
:func:`rl_baselines.sweeps.run_attempts.executeRun`, so a run does exactly the same thing (its own ``train`` process,
log, markers) under both; with Ray on several machines, ``--log-dir`` must be a folder every node sees (shared file
system).

``lost`` is empty unless the Ray cluster went down. A task that dies with a system error (its node or worker gone),
and every :data:`PROBE_S` while runs are in flight, the executor checks that the cluster's GCS accepts a connection; a
GCS that does not for :data:`LOST_AFTER_S` (Ray itself ends the driver after 60 s without one) means the cluster is
lost: ``lost`` says so in one line, nothing more is submitted, ``wait`` returns only the outcomes runs recorded
(done, or failed on their own), and ``shutdown`` returns the other runs in flight as not finished (their ids in
``abandoned``; the same command continues them) without asking the dead cluster anything.
"""
from __future__ import annotations

import ipaddress
import logging
import os
import re
import secrets
import signal
import socket
import subprocess
import time
from typing import Any

from rl_baselines.sweeps.run_attempts import (
    STOP_GRACE_S,
    RunResult,
    StartedRun,
    executeRun,
    finishRun,
    recordedResult,
    runAttempts,
    startRun,
)
from rl_baselines.sweeps.sweep import RunSpec
from srl_toolbox.cli import UsageError
from srl_toolbox.devices import threadSettings, threadsShare, usableCores
from srl_toolbox.signals import ctrlCDeferred, stopSignalsBlocked

RAY_INSTALL_HINT = 'pip install "srl-toolbox[ray]" (or: pip install "ray>=2.9")'
# The local Ray instance only runs a few tiny tasks: a small object store keeps its shared memory footprint low.
LOCAL_RAY_OBJECT_STORE_BYTES = 200 * 1024 ** 2
POLL_S = 0.1
CONNECT_TIMEOUT_S = 5.0
PROBE_S = 5.0  # how often the Ray executor checks that the cluster's GCS answers while runs are in flight
PROBE_TIMEOUT_S = 2.0
LOST_AFTER_S = 10.0  # a GCS that does not answer this long is lost (a restarting one answers again within seconds)
# The message of a run in flight when the cluster was lost (not finished: the same command continues it)
LOST_RUN_MESSAGE = "the Ray cluster was lost"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of Ray's task tracebacks


class LocalExecutor:
    """
    Runs at most ``workers`` train processes at a time on this machine, each with its share of the cores as torch
    threads (``OMP_NUM_THREADS``, unless set already).

    :param workers: parallel runs
    :param resume: continue a run's unfinished attempt when possible (see
        :func:`rl_baselines.sweeps.run_attempts.startRun`)
    :param envs_in_process: the run ids whose envs step in the training process (``--vec-env dummy``)
    """

    name = "local"

    def __init__(self, workers: int, resume: bool = True, envs_in_process: frozenset[str] = frozenset()) -> None:
        self.workers = int(workers)
        self.resume = resume
        self.envs_in_process = envs_in_process
        self.threads = threadsShare(self.workers)
        self.lost = ""  # this machine's runs are not lost with a cluster
        self._running: dict[str, StartedRun] = {}
        self._failed_starts: list[RunResult] = []
        self.unstarted: list[RunSpec] = []  # a local run starts when it is submitted

    @property
    def running(self) -> list[RunSpec]:
        """The runs in flight."""
        return [started.spec for started in self._running.values()]

    def hasSlot(self) -> bool:
        """:return: whether another run can start now"""
        return len(self._running) < self.workers

    def submit(self, spec: RunSpec) -> None:
        """
        Start a run now.

        :param spec: the run
        """
        try:
            self._running[spec.run_id] = startRun(spec, self.resume, self.threads,
                                                  spec.run_id in self.envs_in_process)
        except OSError as error:  # e.g. a log dir that cannot be written: the run fails, the sweep goes on
            self._failed_starts.append(RunResult(spec.run_id, "failed", None, "", "", 0.0,
                                                 f"cannot start: {error}"))

    def wait(self, timeout: float) -> list[RunResult]:
        """
        :param timeout: seconds to wait for a run to end
        :return: the runs that ended (possibly none)
        """
        deadline = time.monotonic() + timeout
        while True:
            results, self._failed_starts = self._failed_starts, []
            for run_id, started in list(self._running.items()):
                code = started.process.poll()
                if code is not None:
                    results.append(finishRun(self._running.pop(run_id), code))
            if results or time.monotonic() >= deadline:
                return results
            time.sleep(POLL_S)

    def shutdown(self, interrupted: bool = False) -> list[RunResult]:
        """
        Stop the runs still in flight (they save their model and exit, see
        :func:`rl_baselines.sweeps.run_attempts.stopProcess`).

        :param interrupted: the sweep was interrupted (the runs in flight are stopped and recorded as failed)
        :return: their results
        """

        if not self._running:
            return []
        signalled = set()
        for run_id, started in self._running.items():  # each run is in its own session: a Ctrl-C did not reach it
            if started.process.poll() is None:
                started.process.send_signal(signal.SIGINT)
                signalled.add(run_id)
        results = []
        for run_id, started in self._running.items():
            try:
                code = started.process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:  # it does not stop: kill it
                started.process.kill()
                code = started.process.wait()
            results.append(finishRun(started, code, stopped=run_id in signalled))
        self._running.clear()
        return results


def _isLoopback(address: str) -> bool:
    host = address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


# HOST:PORT, or ray://HOST:PORT; an IPv6 host in brackets, as Ray writes one ([::1]:6379, fe80::1%eth0 with its zone)
_ADDRESS = re.compile(r"(ray://)?(?:\[(?P<ipv6>[0-9A-Fa-f:.]+(?:%[\w.-]+)?)\]|[^:/\s\[\]]+):\d{1,5}")
START_HINT = "start the cluster with `ray start --head` or leave --ray-address out for a local instance"
# A method of the GCS (a cluster's HOST:PORT), and one of Ray's client server (ray://HOST:PORT); a server without it
# answers UNIMPLEMENTED, one that is not gRPC (or not there) UNAVAILABLE or nothing in time.
_GCS_METHOD = "/ray.rpc.NodeInfoGcsService/GetClusterId"
_CLIENT_SERVER_METHOD = "/ray.rpc.RayletDriver/ClusterInfo"
_NO_ANSWER = ("UNIMPLEMENTED", "UNAVAILABLE", "DEADLINE_EXCEEDED", "UNKNOWN", "INTERNAL")


def _portOutOfRange(address: str) -> str:
    """:return: what is wrong with the port of a HOST:PORT (or ray://HOST:PORT), "" when it is in 1-65535 (a larger
    one would be connected to modulo 65536)"""
    port = int(address.rpartition(":")[2])
    return "" if 1 <= port <= 65535 else f"port {port} is not in 1-65535"


def _isAddress(address: str) -> bool:
    """:return: whether ``address`` is HOST:PORT or ray://HOST:PORT, an IPv6 host a valid address in brackets
        (``[::1]:6379``, as Ray writes one; a bare ``::1:6379`` is ambiguous, and Ray refuses it)"""
    match = _ADDRESS.fullmatch(address)
    if match is None or match["ipv6"] is None:
        return match is not None
    try:
        ipaddress.IPv6Address(match["ipv6"])
    except ValueError:
        return False
    return True


def _addressForms(address: str, auto: bool = False) -> str:
    """:return: the forms an address may take (``auto`` too where ``auto``), as a refusal lists them, with how to
        write an IPv6 host where ``address`` looks like a bare one (more than one ':' and no brackets)"""
    bare_ipv6 = address.removeprefix("ray://").count(":") > 1 and "[" not in address
    return (f"HOST:PORT (or {'auto, or ' if auto else ''}ray://HOST:PORT"
            + ("; an IPv6 host in brackets: [::1]:6379)" if bare_ipv6 else ")"))


def checkRayAddressForm(address: str) -> None:
    """:raises UsageError: ``--ray-address`` is neither auto, HOST:PORT nor ray://HOST:PORT (an IPv6 host in
    brackets), or its port is not in 1-65535 (one line)"""
    if address != "auto" and not _isAddress(address):
        raise UsageError(f"--ray-address {address!r} is not {_addressForms(address, auto=True)}")
    if address != "auto" and (wrong := _portOutOfRange(address)):
        raise UsageError(f"--ray-address {address!r}: {wrong}")


def checkRayAddress(address: str) -> str:
    """
    :return: the address to connect to (``auto``: the one it stands for, :func:`autoAddress`)
    :raises UsageError: ``--ray-address`` is malformed or no Ray cluster answers there (one line), checked before a
        command that runs on the cluster writes anything
    """
    checkRayAddressForm(address)
    importRay(address)  # not installed: said first (the hints below say to start a cluster with Ray's command)
    if address == "auto":
        resolved = autoAddress()
        _checkReachable(resolved, f"--ray-address auto ({resolved})")
        return resolved
    _checkReachable(address)
    return address


def autoAddress() -> str:
    """
    :return: the address ``--ray-address auto`` connects to: RAY_ADDRESS where it is set, else the cluster Ray finds
        on this machine (the one ``ray start`` started last, else a running one)
    :raises UsageError: RAY_ADDRESS is malformed, or there is no cluster to find (one line)
    """
    given = os.environ.get("RAY_ADDRESS", "").strip()
    if given and given != "auto":
        if not _isAddress(given):
            raise UsageError(f"--ray-address auto: RAY_ADDRESS {given!r} is not {_addressForms(given)}")
        if wrong := _portOutOfRange(given):
            raise UsageError(f"--ray-address auto: RAY_ADDRESS {given!r}: {wrong}")
        return given
    ray = importRay("auto")
    try:
        return ray._private.services.get_ray_address_from_environment("auto", None)  # Ray's own lookup
    except ConnectionError:
        raise UsageError(f"--ray-address auto: no Ray cluster runs on this machine and RAY_ADDRESS is not set; "
                         f"{START_HINT}") from None


def _checkReachable(address: str, where: str = "") -> None:
    """Fail fast on a wrong HOST:PORT (Ray itself retries for minutes, printing its own warnings): something accepts a
    connection there, and at a HOST:PORT (not ray://) it answers as a cluster's GCS (:func:`_checkGcs`)."""
    where = where or f"--ray-address {address}"
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise UsageError(f"{where}: nothing answers there ({error.strerror or error}); {START_HINT}") from None
    if not address.startswith("ray://") and os.environ.get("RAY_USE_TLS", "0").lower() not in ("1", "true"):
        _checkGcs(f"{host}:{port}", where)


def _checkGcs(target: str, where: str) -> None:
    """
    Ask ``target`` a question only a Ray cluster's GCS answers (an unauthenticated caller is told so: that is an
    answer), to tell it from another server on the port, e.g. Ray's client server (the ``ray://`` port).

    :raises UsageError: no GCS answers there (one line)
    """
    try:
        import grpc  # installed with Ray, whose driver speaks gRPC to the GCS: imported only to check an address
    except ImportError:
        return
    if _grpcStatus(grpc, target, _GCS_METHOD) not in _NO_ANSWER:
        return
    if _grpcStatus(grpc, target, _CLIENT_SERVER_METHOD) not in _NO_ANSWER:
        raise UsageError(f"{where}: Ray's client server answers there, not a cluster's GCS; give ray://{target}")
    raise UsageError(f"{where}: no Ray cluster answers there (another server listens on the port); give the GCS "
                     f"address `ray start --head` printed (its --port), or ray://HOST:PORT for Ray's client server")


def _grpcStatus(grpc: Any, target: str, method: str) -> str:
    """:return: the gRPC status name a server at ``target`` answers an empty request to ``method`` with"""
    channel = grpc.insecure_channel(target)
    try:
        channel.unary_unary(method, request_serializer=None, response_deserializer=None)(b"", timeout=CONNECT_TIMEOUT_S)
        return "OK"
    except grpc.RpcError as error:
        return error.code().name
    finally:
        channel.close()


def _answers(target: str) -> bool:
    """:return: whether something accepts a connection at ``target`` (HOST:PORT) within :data:`PROBE_TIMEOUT_S`"""
    host, _, port = target.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S).close()
        return True
    except (OSError, ValueError):
        return False


def _probeTarget(ray: Any, connect: str | None) -> str | None:
    """:return: what tells that the cluster is there: its GCS (HOST:PORT), Ray's client server for a ray:// address;
    None when Ray does not say (then only Ray's own errors tell)"""
    if connect is not None and connect.startswith("ray://"):
        return connect.removeprefix("ray://")
    try:
        return str(ray.get_runtime_context().gcs_address) or None
    except Exception:  # noqa: BLE001 - any failure to ask only means no probe
        return None


def _oneLine(error: BaseException) -> str:
    """:return: a Ray error's text on one line, at most 300 characters: of a traceback it carries (Ray's client server
    sends its own), only the exception it ends with"""
    lines = [line.strip() for line in _ANSI.sub("", str(error)).splitlines() if line.strip()]
    start = next((index for index, line in enumerate(lines) if line.startswith("Traceback (most recent call")), None)
    if start is not None:
        lines = [*lines[:start], *lines[-1:]]
    return " ".join(" ".join(lines).split())[:300]


# The environment variables importRay sets for Ray, as this process had them before it first set one (None: not
# taken yet): the pipeline runs in its caller's process under the Python API (rl_baselines.runSweep), which gets them
# back once the sweep ends (restoreRayEnvironment): a throwaway token must not stay to be sent to the caller's cluster
_RAY_VARIABLES = ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN")
_callers_ray_variables: dict[str, str | None] | None = None


def restoreRayEnvironment() -> None:
    """Put back the environment variables :func:`importRay` set (and drop Ray's cached token, read from them) as the
    process had them; nothing when it set none. Called once the sweep's Ray connection is shut down."""
    global _callers_ray_variables
    if _callers_ray_variables is None:
        return
    for name, value in _callers_ray_variables.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _callers_ray_variables = None
    try:  # Ray caches the token it read: a later ray.init in this process would send the sweep's throwaway one
        from ray._raylet import AuthenticationTokenLoader
        AuthenticationTokenLoader.instance().reset_cache()
    except (ImportError, AttributeError):
        pass


def importRay(address: str | None) -> Any:
    """
    :param address: the cluster address (None: a local instance will be started)
    :return: the ray module
    :raises UsageError: Ray is not installed
    """
    global _callers_ray_variables
    if _callers_ray_variables is None:
        _callers_ray_variables = {name: os.environ.get(name) for name in _RAY_VARIABLES}
    if address is None or _isLoopback(address):
        # Ray gives a node the machine's network address unless clusters are switched off, which makes it use the
        # loopback address: a sweep's own instance is reachable from this machine only, and a cluster started on
        # 127.0.0.1 is found at the address it was given (set before ray is imported: it reads it once).
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if address is None and "RAY_AUTH_MODE" not in os.environ:
        # The sweep's own instance gets a throwaway token (Ray >= 2.59 would otherwise write ~/.ray/auth_token).
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(16))
    try:
        import ray  # optional dependency (pip install srl-toolbox[ray]): imported only by the Ray executor
    except ImportError:
        raise UsageError(f"--executor ray needs Ray, which is not installed; install it with {RAY_INSTALL_HINT}"
                         ) from None
    return ray


def _startLocalRay(ray: Any, **options: Any) -> None:
    """
    ``ray.init`` of a new local instance with ``options``. A Ctrl-C while it starts is held back until Ray has
    started its processes, which are then stopped before the ``KeyboardInterrupt`` goes on: one that cut ``ray.init``
    short left the processes it had started running, unreachable (its raylet's agents, orphaned).
    """
    try:
        # Ray's processes (GCS, raylet, workers) start with SIGTERM blocked (SIGINT too, as Ray blocks it for them):
        # a SIGTERM to the sweep's process group (timeout, a batch scheduler) stops the sweep as a Ctrl-C does, its
        # runs save, instead of shutting the instance down under them (ray.shutdown kills what does not stop)
        with ctrlCDeferred(), stopSignalsBlocked():
            ray.init(address="local", **options)
    except KeyboardInterrupt:
        ray.shutdown()
        raise


class RayExecutor:
    """
    Runs each spec as a Ray task asking for ``num_cpus`` CPUs and ``num_gpus`` GPUs, at most ``workers`` in flight,
    and never more than the cluster fits (``capped`` says so when ``workers`` asked for more); a run's torch threads
    are its CPUs (``OMP_NUM_THREADS``), unless the pipeline's environment sets them: its thread settings
    (:func:`srl_toolbox.devices.threadSettings`) go to every task, so a run trains with the thread counts it would
    have as a local run of the same command.

    :param address: ``HOST:PORT`` (or ``auto``, ``ray://...``) of a running cluster, None to start a local instance
        (loopback, no dashboard) for the sweep and stop it at the end
    :param num_cpus: CPUs per run (the cores a run uses: --num-cpu, or 1 for envs stepping in its process); a local
        instance has at least that many logical CPUs, so that it runs, one at a time, what the machine can
    :param num_gpus: GPUs per run
    :param workers: most runs in flight (None, or more than the cluster's resources allow: as many as they allow)
    :param resume: continue a run's unfinished attempt when possible (see
        :func:`rl_baselines.sweeps.run_attempts.startRun`)
    """

    name = "ray"
    envs_in_process: frozenset[str] = frozenset()  # a task's envs step where its --vec-env says (its CPUs are its own)

    def __init__(self, address: str | None, num_cpus: int, num_gpus: float, workers: int | None,
                 resume: bool = True) -> None:
        self.resume = resume
        # a local instance has this machine's cores, or one run's CPUs where a run asks for more (ppo2's 4 envs on 2
        # cores): one run at a time then, its threads the machine's cores, as the local executor runs it
        local_cpus = max(usableCores(), int(num_cpus))
        self.threads = int(num_cpus) if address is not None else min(int(num_cpus), usableCores())
        ray = importRay(address)
        connect = None if address is None else checkRayAddress(address)
        self._ray = ray
        self._refs: dict[Any, RunSpec] = {}
        self._submitted: dict[Any, float] = {}  # when each task was submitted (time.time())
        self.unstarted: list[RunSpec] = []
        self.lost = ""  # why the cluster is lost: nothing more is submitted (see the module's docstring)
        self.abandoned: set[str] = set()  # the run ids shutdown() returns as in flight when the cluster was lost
        options: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.ERROR,
                                   "log_to_driver": False}
        try:
            if address is None:  # "local": a new instance, even where RAY_ADDRESS is set or `ray start` ran here
                _startLocalRay(ray, num_cpus=local_cpus, object_store_memory=LOCAL_RAY_OBJECT_STORE_BYTES, **options)
            else:
                del options["include_dashboard"]  # a setting of the cluster, not of a client
                if _isLoopback(connect):  # found by auto after Ray was imported: what importRay sets, too late
                    ray._private.ray_constants.ENABLE_RAY_CLUSTER = False
                ray.init(address=connect, **options)
        except (ConnectionError, ValueError, RuntimeError) as error:
            where = f"--ray-address {address}" if address else "a local Ray instance"
            hint = "; a cluster with token authentication also needs RAY_AUTH_MODE=token" if address else ""
            raise UsageError(f"{where}: cannot start or connect ({_oneLine(error)}){hint}") from None
        resources = ray.cluster_resources()
        cpus, gpus = float(resources.get("CPU", 0)), float(resources.get("GPU", 0))
        if cpus < num_cpus or gpus < num_gpus:
            self.shutdown()
            # (a run whose envs step in its process asks for 1 CPU whatever --num-cpu: only the flags short are named)
            short = " and ".join(flag for flag, over in (("--num-cpu", cpus < num_cpus), ("--num-gpus", gpus < num_gpus))
                                 if over)
            raise UsageError(f"each run asks for {num_cpus} CPU(s) and {num_gpus:g} GPU(s) but the Ray cluster has "
                             f"{cpus:g} CPU(s) and {gpus:g} GPU(s); lower {short}")
        capacity = int(cpus // num_cpus)
        if num_gpus > 0:
            capacity = min(capacity, int(gpus // num_gpus))
        # More tasks than the cluster fits would wait in Ray's queue, counted as running (and failed when cancelled).
        capacity = max(1, capacity)
        self.workers = min(int(workers), capacity) if workers is not None else capacity
        self.capped = "" if workers is None or int(workers) <= capacity else (
            f"--workers {workers} capped to {capacity}: the Ray cluster fits {capacity} run(s) of {num_cpus} CPU(s)"
            + (f" and {num_gpus:g} GPU(s)" if num_gpus > 0 else "") + " at a time")
        shown = f"auto ({connect})" if address == "auto" else address or "local instance"
        self.cluster = f"{shown} ({cpus:g} CPUs, {gpus:g} GPUs)"
        self._where = f"the Ray cluster at {connect}" if address is not None else "the sweep's local Ray instance"
        self._probe = _probeTarget(ray, connect if address is not None else None)
        self._probed = time.monotonic()
        # No retry: a run whose worker died is reported failed, like a local run, and redone by the next sweep (unless
        # the whole cluster is lost: see the module docstring).
        task_options: dict[str, Any] = {"num_cpus": num_cpus, "num_gpus": num_gpus, "max_retries": 0}
        forwarded = threadSettings()  # a cluster's worker has its own environment, OMP_NUM_THREADS = its CPUs
        if address is None and self.threads < int(num_cpus):  # more CPUs asked than the machine has: its cores
            forwarded.setdefault("OMP_NUM_THREADS", str(self.threads))
        if forwarded:
            task_options["runtime_env"] = {"env_vars": forwarded}
        self._task = ray.remote(executeRun).options(**task_options)

    @property
    def running(self) -> list[RunSpec]:
        """The runs in flight."""
        return list(self._refs.values())

    def hasSlot(self) -> bool:
        """:return: whether another run can be submitted now (never once the cluster is lost)"""
        return len(self._refs) < self.workers and not self.lost

    def submit(self, spec: RunSpec) -> None:
        """
        Submit a run as a Ray task (one that Ray's client cannot send, its connection lost, goes to ``unstarted``).

        :param spec: the run
        """
        try:
            ref = self._task.remote(spec, self.resume, self.threads)
        except ConnectionError as error:
            self.lost = f"{self._where} was lost ({_oneLine(error)})"
            self.unstarted.append(spec)
            return
        self._refs[ref], self._submitted[ref] = spec, time.time()

    def _folder(self, ref: Any) -> str:
        """:return: the folder of the task's run, its newest attempt; "" before it has one"""
        attempts = runAttempts(self._refs[ref])
        return attempts[-1] if attempts else ""

    def _recorded(self, ref: Any, folder: str) -> RunResult | None:
        """:return: the outcome the task's run recorded in ``folder`` since the task was submitted, None when none"""
        return recordedResult(folder, since=self._submitted.get(ref, 0.0)) if folder else None

    def _outcome(self, ref: Any) -> RunResult | Exception:
        """:return: how the task's run ended: the task's result, else the one its run recorded (its train process ended
        and the task recorded how before it died), else the task's error"""
        try:
            return self._ray.get(ref)
        except Exception as error:  # the task died (worker lost, cancelled)
            recorded = self._recorded(ref, self._folder(ref))
            return recorded if recorded is not None else error

    def _result(self, ref: Any, outcome: RunResult | Exception, cancelling: bool = False) -> RunResult | None:
        """:return: how the task's run ended, its error a failed run (the sweep goes on); None when ``cancelling``
        (the sweep's interruption) cancelled it before its train process started"""
        folder = self._folder(ref) if isinstance(outcome, Exception) else ""
        spec = self._refs.pop(ref)
        self._submitted.pop(ref, None)
        if not isinstance(outcome, Exception):
            return outcome
        if cancelling and isinstance(outcome, self._ray.exceptions.TaskCancelledError):  # cancelled while queued
            return None
        log = os.path.join(folder, "train.log") if folder else ""
        lines = [line for line in _ANSI.sub("", str(outcome)).splitlines() if line.strip()]
        reason = " ".join(lines[-1].split())[:300] if lines else type(outcome).__name__
        return RunResult(spec.run_id, "failed", None, folder, log, 0.0, f"Ray task failed: {reason}")

    def _clusterLost(self, suspect: bool) -> bool:
        """
        Check, when due (every :data:`PROBE_S`) or ``suspect`` (a task died with a system error), that the cluster's
        GCS answers, waiting up to :data:`LOST_AFTER_S` for one that does not.

        :return: whether the cluster is lost (``lost`` says so)
        """
        if self._probe is None or (not suspect and time.monotonic() - self._probed < PROBE_S):
            return False
        since = time.monotonic()
        while not _answers(self._probe):
            if time.monotonic() - since >= LOST_AFTER_S:
                self.lost = self._silentText()
                return True
            time.sleep(1.0)
        self._probed = time.monotonic()
        return False

    def _silentText(self) -> str:
        """:return: ``lost``'s line for a cluster whose GCS (Ray's client server) does not answer"""
        what = "Ray's client server" if "ray://" in self._where else "its GCS"
        at = "" if self._probe in self._where else f" at {self._probe}"
        return f"{self._where} was lost ({what}{at} stopped answering)"

    def wait(self, timeout: float) -> list[RunResult]:
        """
        :param timeout: seconds to wait for a run to end
        :return: the runs that ended (possibly none); once the cluster is lost, only those whose outcome is known
            (the others stay in flight, for :meth:`shutdown`)
        """
        if not self._refs or self.lost:
            return []
        try:
            ready, _ = self._ray.wait(list(self._refs), num_returns=1, timeout=timeout)
            if ready:  # collect every other finished task without waiting
                ready, _ = self._ray.wait(list(self._refs), num_returns=len(self._refs), timeout=0)
        except (ConnectionError, self._ray.exceptions.RaySystemError) as error:  # the driver lost its connection
            self.lost = f"{self._where} was lost ({_oneLine(error)})"
            return []
        outcomes = [(ref, self._outcome(ref)) for ref in ready]
        # a task that ended with an error of its own (RayTaskError: executeRun raised) says nothing of the cluster
        system = [ref for ref, outcome in outcomes
                  if isinstance(outcome, Exception) and not isinstance(outcome, self._ray.exceptions.RayTaskError)]
        if self._clusterLost(bool(system)):
            return [self._result(ref, outcome) for ref, outcome in outcomes if ref not in system]
        return [self._result(ref, outcome) for ref, outcome in outcomes]

    def _abandon(self) -> list[RunResult]:
        """:return: the runs in flight on the lost cluster: the outcome a run recorded, else not finished (its id in
        ``abandoned``); one that has no folder yet never started (``unstarted``)"""
        results = []
        for ref in list(self._refs):
            folder = self._folder(ref)
            recorded = self._recorded(ref, folder)
            spec = self._refs.pop(ref)
            self._submitted.pop(ref, None)
            if recorded is not None:
                results.append(recorded)
            elif not folder:
                self.unstarted.append(spec)
            else:
                self.abandoned.add(spec.run_id)
                results.append(RunResult(spec.run_id, "failed", None, folder, os.path.join(folder, "train.log"), 0.0,
                                         LOST_RUN_MESSAGE))
        return results

    def shutdown(self, interrupted: bool = False) -> list[RunResult]:
        """
        Cancel the tasks in flight when interrupted (each stops its train process and records it failed; one still
        queued goes to ``unstarted``), then disconnect (a local instance is stopped). Once the cluster is lost (or its
        GCS does not answer when interrupted), nothing is cancelled: the runs in flight are returned as not finished
        (see :meth:`_abandon`).

        :param interrupted: the sweep was interrupted
        :return: the results of the cancelled runs that had started, or of the runs in flight on the lost cluster
        """
        if interrupted and self._refs and not self.lost and self._probe is not None and not _answers(self._probe):
            # a Ctrl-C while the cluster is down (before the wait that finds it lost): cancelling its tasks would wait
            # on it until Ray ends the process
            self.lost = self._silentText()
        results = self._abandon() if self.lost else []
        if interrupted and self._refs:
            for ref in list(self._refs):
                self._ray.cancel(ref)
            self._ray.wait(list(self._refs), num_returns=len(self._refs), timeout=30)
            for ref in list(self._refs):
                spec = self._refs[ref]
                result = self._result(ref, self._outcome(ref), cancelling=True)
                if result is None:
                    self.unstarted.append(spec)
                else:
                    results.append(result)
        self._ray.shutdown()
        return results
