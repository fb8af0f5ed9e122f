"""rl_baselines.pipeline on Ray: the executor against a stand-in for Ray (workers capped by the cluster, a cancelled
queued run, the tasks' thread settings, addresses refused before anything is written), and on a real Ray head bound
to the loopback address without its dashboard (one per module: ray_head), a sweep and the SRL + RL benchmark; a sweep
on the pipeline's own local instance stopped by Ctrl-C."""
from __future__ import annotations

import concurrent.futures
import glob
import http.server
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from conftest import REPO, childProcesses, runModule
from sweep_runs import ENVS, SRL_MODELS, SWEEP_TIMEOUT_S, TRAIN_FLAGS, checkFinishedRun

from benchmarks.sweep_speed import startRayHead, stopRayHead
from replay.visdom_server import findFreePort
from rl_baselines.runs.resume import runStatus
from rl_baselines.sweeps import executors, pipeline
from rl_baselines.sweeps.sweep import expandGrid
from srl_toolbox.cli import UsageError

pytestmark = pytest.mark.slow  # whole sweeps: left out of `make test-fast`


class _TaskCancelledError(Exception):
    """ray.exceptions.TaskCancelledError"""


class _RayTaskError(Exception):
    """ray.exceptions.RayTaskError: the task's function raised"""


class _RaySystemError(Exception):
    """ray.exceptions.RaySystemError"""


class _QueuingRay:
    """The calls of Ray that the Ray executor makes, on a cluster of ``cpus`` CPUs held by other jobs: every task
    submitted waits in its queue, and the sweep's first wait for a run is cut short by a Ctrl-C."""

    exceptions = type("exceptions", (), {"TaskCancelledError": _TaskCancelledError, "RayTaskError": _RayTaskError,
                                         "RaySystemError": _RaySystemError})

    def __init__(self, cpus: int) -> None:
        self.cpus, self.submitted, self.cancelled, self.task_options = cpus, [], set(), {}

    def init(self, **kwargs) -> None:
        pass

    def cluster_resources(self) -> dict:
        return {"CPU": float(self.cpus)}

    def remote(self, function):
        return self

    def options(self, **options):
        self.task_options = options
        return type("Task", (), {"remote": lambda task, *args: self._submit(args)})()

    def _submit(self, args) -> int:
        self.submitted.append(args)
        return len(self.submitted) - 1

    def wait(self, refs, num_returns=1, timeout=None):
        if not self.cancelled:
            raise KeyboardInterrupt
        return [ref for ref in refs if ref in self.cancelled], [ref for ref in refs if ref not in self.cancelled]

    def cancel(self, ref) -> None:
        self.cancelled.add(ref)

    def get(self, ref):
        raise _TaskCancelledError(f"Task {ref} was cancelled")

    def shutdown(self) -> None:
        pass


def test_ray_workers_are_capped_by_the_cluster_and_a_cancelled_queued_run_is_not_run(tmp_path, capsys,
                                                                                      monkeypatch) -> None:
    """``--workers 4`` on a 2-CPU cluster put 4 tasks in flight (2 in Ray's queue) that the start line and the bar
    counted as running, and after a Ctrl-C a run whose task never started was reported failed, exit code None."""
    fake = _QueuingRay(cpus=2)
    monkeypatch.setattr(executors, "importRay", lambda address: fake)
    log_dir = str(tmp_path / "logs")
    code = pipeline.main(["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "--num-iteration", "3",
                          "--workers", "4", "--executor", "ray", "--log-dir", log_dir, "--no-vis", "--no-progress",
                          "--num-timesteps", "200"])
    out = capsys.readouterr().out
    assert code == 130 and len(fake.submitted) == 2, out
    assert "3 to run on 2 ray workers" in out and "--workers 4 capped to 2: the Ray cluster fits 2 run(s)" in out
    assert "failed" not in out.replace("0 failed", "") and "None" not in out, out
    assert "0/3 runs finished (0 earlier), 0 failed, 3 not run" in out, out
    (state,) = glob.glob(os.path.join(log_dir, "sweep_*.json"))
    with open(state) as handle:
        assert [run["state"] for run in json.load(handle)["runs"]] == ["pending"] * 3


def test_ray_tasks_get_the_thread_settings_of_the_pipelines_environment(monkeypatch) -> None:
    """A running cluster's worker has Ray's OMP_NUM_THREADS (the task's CPUs), not the pipeline's: the same command
    trained with other thread counts under Ray than locally."""
    fake = _QueuingRay(cpus=2)
    monkeypatch.setattr(executors, "importRay", lambda address: fake)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setenv("MKL_NUM_THREADS", "1")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    executors.RayExecutor(None, 1, 0.0, None)
    assert fake.task_options["runtime_env"] == {"env_vars": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "1"}}
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.delenv("MKL_NUM_THREADS")
    executors.RayExecutor(None, 1, 0.0, None)  # nothing set: the task's CPUs, as documented
    assert "runtime_env" not in fake.task_options and fake.task_options["num_cpus"] == 1



class _LocalRay(_QueuingRay):
    """A local instance: as many CPUs as ``ray.init`` gives it."""

    def init(self, **kwargs) -> None:
        self.init_kwargs = kwargs
        self.cpus = kwargs.get("num_cpus", self.cpus)


def test_a_local_instance_runs_a_run_that_asks_for_more_cpus_than_the_machine_has(monkeypatch) -> None:
    """ppo2's 4 envs on a 2-core machine: the local instance has 4 logical CPUs, runs one at a time, its threads the
    machine's 2 (as the local executor runs it); a running cluster of 2 CPUs still refuses the run in one line."""
    fake = _LocalRay(cpus=0)
    monkeypatch.setattr(executors, "importRay", lambda address: fake)
    monkeypatch.setattr(executors, "usableCores", lambda: 2)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    executor = executors.RayExecutor(None, 4, 0.0, None)
    assert fake.init_kwargs["num_cpus"] == 4 and (executor.workers, executor.threads) == (1, 2)
    assert fake.task_options["num_cpus"] == 4
    assert fake.task_options["runtime_env"] == {"env_vars": {"OMP_NUM_THREADS": "2"}}
    executor = executors.RayExecutor(None, 1, 0.0, 4)  # runs that fit: the machine's cores, Ray's threads
    assert fake.init_kwargs["num_cpus"] == 2 and (executor.workers, executor.threads) == (2, 1)
    assert "runtime_env" not in fake.task_options
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the pipeline's own setting goes first
    executors.RayExecutor(None, 4, 0.0, None)
    assert fake.task_options["runtime_env"] == {"env_vars": {"OMP_NUM_THREADS": "1"}}
    cluster = _QueuingRay(cpus=2)
    monkeypatch.setattr(executors, "importRay", lambda address: cluster)
    monkeypatch.setattr(executors, "checkRayAddress", lambda address: address)
    with pytest.raises(UsageError, match=r"^each run asks for 4 CPU\(s\) and 0 GPU\(s\) but the Ray cluster has 2 "
                                         r"CPU\(s\) and 0 GPU\(s\); lower --num-cpu$"):
        executors.RayExecutor("10.0.0.5:6379", 4, 0.0, None)
    with pytest.raises(UsageError, match=r"GPU\(s\); lower --num-gpus$"):  # its CPUs fit: --num-cpu is not the cause
        executors.RayExecutor("10.0.0.5:6379", 1, 1.0, None)


class _InterruptedRay(_LocalRay):
    """A local instance that gets a Ctrl-C while ``ray.init`` starts its processes."""

    def __init__(self) -> None:
        super().__init__(cpus=2)
        self.calls: list[str] = []

    def init(self, **kwargs) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # Python handles it at the next bytecode: here, in the middle of init
        time.sleep(0.05)
        self.calls.append("started")
        super().init(**kwargs)

    def shutdown(self) -> None:
        self.calls.append("shut down")


def test_a_ctrl_c_while_the_local_instance_starts_stops_the_processes_it_started(monkeypatch) -> None:
    """A Ctrl-C that cut ray.init short left the processes it had started running (the raylet's agents, orphaned):
    it waits for the start, Ray is shut down, then the interrupt goes on."""
    fake = _InterruptedRay()
    monkeypatch.setattr(executors, "importRay", lambda address: fake)
    with pytest.raises(KeyboardInterrupt):
        executors.RayExecutor(None, 1, 0.0, None)
    assert fake.calls == ["started", "shut down"]


class _DyingRay(_QueuingRay):
    """Ray on a cluster whose workers die (the OOM killer, a lost node): every task ends at once, without a result."""

    def wait(self, refs, num_returns=1, timeout=None):
        return list(refs)[:num_returns], list(refs)[num_returns:]

    def get(self, ref):
        raise RuntimeError("The worker died unexpectedly while executing this task.")


def test_a_run_whose_ray_worker_died_is_reported_failed_without_an_exit_code(tmp_path, capsys, monkeypatch) -> None:
    """A run whose Ray task died (no exit code to report) before it made its folder was said to end with "exit code
    None, log : ..." (an empty log path), in its failed line and in the summary."""
    monkeypatch.setattr(executors, "importRay", lambda address: _DyingRay(cpus=2))
    code = pipeline.main(["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "--num-iteration", "1",
                          "--executor", "ray", "--log-dir", str(tmp_path / "logs"), "--no-vis", "--no-progress",
                          "--num-timesteps", "200"])
    out = capsys.readouterr().out
    assert code == 1 and "None" not in out, out
    assert "failed: ppo2 " in out and "] no exit code: Ray task failed: The worker died unexpectedly" in out, out
    assert "Failed runs (run the same command again to redo them):" in out and "]: no exit code\n" in out, out


class _NodeDiedError(Exception):
    """ray.exceptions.NodeDiedError"""


class _LostRay(_QueuingRay):
    """Ray on a 2-CPU cluster whose GCS is at ``gcs``. ``ended``: run index -> how its task ends (a RunResult, or an
    error ray.get raises), the others run on; each task's run has its folder once submitted."""

    def __init__(self, gcs: str, ended: dict) -> None:
        super().__init__(cpus=2)
        self.gcs, self.ended, self.shut_down, self.specs, self.waits = gcs, ended, False, [], 0

    def get_runtime_context(self):
        return type("Context", (), {"gcs_address": self.gcs})()

    def _submit(self, args) -> int:
        spec = args[0]
        os.makedirs(os.path.join(spec.parent, f"26-01-01_00h00_00_{spec.run_id}"))
        self.specs.append(spec)
        return super()._submit(args)

    def wait(self, refs, num_returns=1, timeout=None):
        self.waits += 1
        assert self.waits < 100, "the sweep waits on the dead cluster"  # (Ray would end the pipeline after 60 s)
        ready = [ref for ref in refs if ref in self.ended]
        return ready[:max(num_returns, 1)], [ref for ref in refs if ref not in ready[:max(num_returns, 1)]]

    def get(self, ref):
        outcome = self.ended[ref]
        if isinstance(outcome, Exception):
            raise outcome
        spec = self.specs[ref]
        return executors.RunResult(spec.run_id, outcome, 1 if outcome == "failed" else 0, "folder", f"log{ref}", 1.0,
                                   "ValueError: boom" if outcome == "failed" else "")

    def shutdown(self) -> None:
        self.shut_down = True


@pytest.mark.parametrize("case", ["task died, GCS down", "GCS down, tasks running", "task died, GCS up"])
def test_a_lost_ray_cluster_stops_the_sweep_with_its_runs_in_flight_not_finished(case, tmp_path, capsys,
                                                                                  monkeypatch) -> None:
    """A cluster that went down mid-sweep: its runs in flight were reported failed ("node dead"), the next runs were
    sent to the dead cluster, and Ray ended the pipeline after 60 s with exit 1, no summary and the state file saying
    ``running``. A task whose node died while the GCS answers is a failed run, as before; a run that failed on its own
    stays failed."""
    listener = socket.create_server(("127.0.0.1", 0))  # a GCS that accepts connections
    gcs = f"127.0.0.1:{listener.getsockname()[1] if case.endswith('GCS up') else findFreePort()}"
    died = _NodeDiedError("Task failed because the node it was running on is dead or unavailable.")
    ended = {"task died, GCS down": {0: "failed", 1: died}, "GCS down, tasks running": {},
             "task died, GCS up": {0: "failed", 1: died, 2: "done"}}[case]
    fake = _LostRay(gcs, ended)
    monkeypatch.setattr(executors, "importRay", lambda address: fake)
    for module in (executors, pipeline):
        monkeypatch.setattr(module, "checkRayAddress", lambda address: address)
    monkeypatch.setattr(executors, "LOST_AFTER_S", 0.0, raising=False)
    monkeypatch.setattr(executors, "PROBE_S", 0.0 if case == "GCS down, tasks running" else 3600.0, raising=False)
    log_dir = str(tmp_path / "logs")
    try:
        code = pipeline.main(["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "--num-iteration",
                              "3", "--executor", "ray", "--ray-address", "10.0.0.5:6390", "--log-dir", log_dir,
                              "--no-vis", "--no-progress", "--num-timesteps", "200"])
    finally:
        listener.close()
    out = capsys.readouterr().out
    (state,) = glob.glob(os.path.join(log_dir, "sweep_*.json"))
    with open(state) as handle:
        runs = json.load(handle)["runs"]
    assert code == 1 and fake.shut_down and not fake.cancelled, out
    label = fake.specs[1].label
    if case == "task died, GCS up":
        assert "Ray task failed: Task failed because the node it was running on is dead" in out, out
        assert "was lost" not in out and [run["state"] for run in runs] == ["failed", "failed", "done"], out
        return
    # nothing is sent to the dead cluster; the runs in flight are stopped, not failed; the summary says what to do
    assert len(fake.submitted) == 2, out
    assert f"stopped: {label} [{fake.specs[1].run_id}] (the Ray cluster was lost), log " in out, out
    assert out.rstrip().endswith(f"\nThe Ray cluster at 10.0.0.5:6390 was lost (its GCS at {gcs} stopped "
                                 "answering): the same command resumes the sweep."), out
    assert "Runs in flight when the Ray cluster was lost (the same command continues them):" in out, out
    if case == "task died, GCS down":  # the run that failed on its own stays failed
        assert f"failed: {fake.specs[0].label} [{fake.specs[0].run_id}] exit code 1, log log0: ValueError: boom" in out
        assert "0/3 runs finished (0 earlier), 1 failed, 1 stopped, 1 not run." in out, out
        assert [(run["state"], run.get("stopped", False)) for run in runs] == [
            ("failed", False), ("failed", True), ("pending", False)]
    else:
        assert "0/3 runs finished (0 earlier), 0 failed, 2 stopped, 1 not run." in out, out
        assert [(run["state"], run.get("stopped", False)) for run in runs] == [
            ("failed", True), ("failed", True), ("pending", False)]
    assert runs[1]["message"] == "the Ray cluster was lost" and runs[1]["returncode"] is None

class _StoppedOnceRay(_LostRay):
    """:class:`_LostRay` whose second wait is cut by a Ctrl-C (once)."""

    def wait(self, refs, num_returns=1, timeout=None):
        if self.waits == 1:
            self.waits += 1
            raise KeyboardInterrupt
        return super().wait(refs, num_returns, timeout)


def test_a_ctrl_c_while_the_cluster_is_down_asks_it_nothing(tmp_path, capsys, monkeypatch) -> None:
    """A Ctrl-C before the wait that finds the cluster lost: the sweep cancelled its tasks on the dead cluster, and
    waited on it until Ray ended the process (60 s). The GCS is checked first: the runs in flight are recorded
    stopped, not cancelled, and the summary says the cluster was lost; exit 130, as for any Ctrl-C."""
    gcs = f"127.0.0.1:{findFreePort()}"  # nothing answers there
    fake = _StoppedOnceRay(gcs, {})
    monkeypatch.setattr(executors, "importRay", lambda address: fake)
    for module in (executors, pipeline):
        monkeypatch.setattr(module, "checkRayAddress", lambda address: address)
    monkeypatch.setattr(executors, "PROBE_S", 3600.0, raising=False)  # the periodic check is not due
    log_dir = str(tmp_path / "logs")
    code = pipeline.main(["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "--num-iteration", "3",
                          "--executor", "ray", "--ray-address", "10.0.0.5:6390", "--log-dir", log_dir, "--no-vis",
                          "--no-progress", "--num-timesteps", "200"])
    out = capsys.readouterr().out
    assert code == 130 and not fake.cancelled and fake.shut_down, out
    assert out.rstrip().endswith(f"\nThe Ray cluster at 10.0.0.5:6390 was lost (its GCS at {gcs} stopped "
                                 "answering): the same command resumes the sweep."), out
    (state,) = glob.glob(os.path.join(log_dir, "sweep_*.json"))
    with open(state) as handle:
        runs = json.load(handle)["runs"]
    assert [(run["state"], run.get("stopped", False)) for run in runs] == [
        ("failed", True), ("failed", True), ("pending", False)], out
    assert runs[0]["message"] == "the Ray cluster was lost"


class _UnreachableRay(_QueuingRay):
    """Ray, as far as validation goes: connecting (which would retry for minutes) fails the test."""

    def init(self, **kwargs) -> None:
        raise AssertionError(f"ray.init({kwargs}) was reached")


def test_a_ray_address_where_no_cluster_answers_is_refused_before_anything_is_written(tmp_path, monkeypatch) -> None:
    """``--ray-address auto`` with RAY_ADDRESS at a stopped cluster (or none running) hung for minutes."""
    monkeypatch.setattr(executors, "importRay", lambda address: _UnreachableRay(cpus=2))
    log_dir = tmp_path / "logs"
    base = ["--algo", "ppo2", "--env", ENVS[1], "--srl-model", "ground_truth", "--log-dir", str(log_dir), "--no-vis",
            "--executor", "ray", "--ray-address"]
    stopped = f"127.0.0.1:{findFreePort()}"
    monkeypatch.setenv("RAY_ADDRESS", stopped)
    with pytest.raises(UsageError, match=rf"^--ray-address auto \({stopped}\): nothing answers there \(.*\); start "
                                         r"the cluster with `ray start --head` or leave --ray-address out"):
        pipeline.main([*base, "auto"])
    monkeypatch.setenv("RAY_ADDRESS", "nohost")
    with pytest.raises(UsageError, match=r"^--ray-address auto: RAY_ADDRESS 'nohost' is not HOST:PORT"):
        pipeline.main([*base, "auto"])
    # a port above 65535 was connected to modulo 65536 (99999: 34463), "nothing answers there (Connection refused)"
    with pytest.raises(UsageError, match=r"^--ray-address '127.0.0.1:99999': port 99999 is not in 1-65535$"):
        pipeline.main([*base, "127.0.0.1:99999"])
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:0")
    with pytest.raises(UsageError, match=r"^--ray-address auto: RAY_ADDRESS '127.0.0.1:0': port 0 is not in 1-65535$"):
        pipeline.main([*base, "auto"])
    assert not log_dir.exists()


def test_an_ipv6_ray_address_in_brackets_is_accepted_as_ray_writes_it(tmp_path, monkeypatch) -> None:
    """``--ray-address [::1]:6379`` (the form Ray prints and parses for an IPv6 host) was refused as "not HOST:PORT"
    by our own check; it now goes on to the reachability check. A bare ``::1:6379`` (ambiguous, which Ray refuses too)
    is refused saying how to write one."""
    for address in ("[::1]:6379", "ray://[::1]:10001", "[fe80::1%eth0]:6379", "[2001:db8::7]:6379"):
        executors.checkRayAddressForm(address)
    for address, forms in (("::1:6379", "; an IPv6 host in brackets: [::1]:6379)"), ("[1:2:3]:6379", ")"),
                           ("[::1]", ")"), ("[zz]:6379", ")")):
        with pytest.raises(UsageError) as refused:
            executors.checkRayAddressForm(address)
        assert str(refused.value) == f"--ray-address {address!r} is not HOST:PORT (or auto, or ray://HOST:PORT{forms}"
    with pytest.raises(UsageError, match=r"^--ray-address '\[::1\]:0': port 0 is not in 1-65535$"):
        executors.checkRayAddressForm("[::1]:0")
    monkeypatch.setenv("RAY_ADDRESS", "[::1]:6379")
    assert executors.autoAddress() == "[::1]:6379"
    monkeypatch.setenv("RAY_ADDRESS", "::1:6379")
    with pytest.raises(UsageError, match=re.escape("RAY_ADDRESS '::1:6379' is not HOST:PORT (or ray://HOST:PORT; an "
                                                   "IPv6 host in brackets: [::1]:6379)")):
        executors.autoAddress()
    monkeypatch.setattr(executors, "importRay", lambda address: _UnreachableRay(cpus=2))
    log_dir = tmp_path / "logs"
    with pytest.raises(UsageError, match=r"^--ray-address \[::1\]:\d+: nothing answers there"):
        pipeline.main(["--algo", "ppo2", "--env", ENVS[1], "--srl-model", "ground_truth", "--log-dir", str(log_dir),
                       "--no-vis", "--executor", "ray", "--ray-address", f"[::1]:{findFreePort()}"])
    assert not log_dir.exists()



def test_a_ray_address_without_ray_installed_says_ray_is_missing(tmp_path, monkeypatch) -> None:
    """Without Ray, ``--ray-address HOST:PORT`` where nothing answered said to start the cluster with `ray start
    --head`, a command of the missing package; that Ray is not installed was said only once a cluster answered."""
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as where it is not installed
    log_dir = tmp_path / "logs"
    for address in (f"127.0.0.1:{findFreePort()}", "auto"):
        with pytest.raises(UsageError, match=r"^--executor ray needs Ray, which is not installed; install it with pip "
                                             r"install \"srl-toolbox\[ray\]\""):
            pipeline.main(["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "--log-dir", str(log_dir),
                           "--no-vis", "--executor", "ray", "--ray-address", address])
    assert not log_dir.exists()


class _FailingClientRay(_QueuingRay):
    """Ray's client, whose server could not start the session: its error carries the server's traceback."""

    def init(self, **kwargs) -> None:
        raise ConnectionError("Initialization failure from server:\nTraceback (most recent call last):\n  File "
                              "\"/ray/util/client/server/proxier.py\", line 765, in Datapath\n    if not self.proxy_"
                              "manager.start_specific_server(\n       ^^^^^^^^^\nRuntimeError: Starting Ray client "
                              "server failed. See ray_client_server_23000.err for detailed logs.\n")


def test_a_ray_connection_error_is_one_line_without_the_servers_traceback(monkeypatch) -> None:
    """A ray:// connection that the client server failed said "cannot start or connect (Initialization failure from
    server: Traceback (most recent call last): File ..." cut at 300 characters, before the error it ended with."""
    monkeypatch.setattr(executors, "importRay", lambda address: _FailingClientRay(cpus=2))
    monkeypatch.setattr(executors, "checkRayAddress", lambda address: address)
    with pytest.raises(UsageError) as refusal:
        executors.RayExecutor("ray://10.0.0.5:10001", 1, 0.0, None)
    assert str(refusal.value).startswith(
        "--ray-address ray://10.0.0.5:10001: cannot start or connect (Initialization failure from server: "
        "RuntimeError: Starting Ray client server failed. See ray_client_server_23000.err for detailed logs.)")
    assert "Traceback" not in str(refusal.value) and "\n" not in str(refusal.value)

def _grpcServer(grpc, service: str, method: str):
    """:return: (a gRPC server on 127.0.0.1 that answers ``service``'s ``method`` with an empty reply, its port)"""
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.unary_unary_rpc_method_handler(lambda request, context: b"")
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, {method: handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def test_a_ray_address_that_is_not_a_clusters_gcs_is_refused_before_anything_is_written(tmp_path,
                                                                                         monkeypatch) -> None:
    """A HOST:PORT where another server listens (a web server, Ray's client server without ray://) hung or printed
    Ray's warnings for minutes; a cluster's GCS passes."""
    grpc = pytest.importorskip("grpc")
    monkeypatch.setattr(executors, "importRay", lambda address: _UnreachableRay(cpus=2))
    log_dir = tmp_path / "logs"
    base = ["--algo", "ppo2", "--env", ENVS[1], "--srl-model", "ground_truth", "--log-dir", str(log_dir), "--no-vis",
            "--executor", "ray", "--ray-address"]
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    client_server, client_port = _grpcServer(grpc, "ray.rpc.RayletDriver", "ClusterInfo")
    gcs, gcs_port = _grpcServer(grpc, "ray.rpc.NodeInfoGcsService", "GetClusterId")
    try:
        web_address = f"127.0.0.1:{web.server_address[1]}"
        with pytest.raises(UsageError, match=rf"^--ray-address {web_address}: no Ray cluster answers there"):
            pipeline.main([*base, web_address])
        with pytest.raises(UsageError, match=rf"Ray's client server answers there, not a cluster's GCS; give "
                                             rf"ray://127.0.0.1:{client_port}$"):
            pipeline.main([*base, f"127.0.0.1:{client_port}"])
        executors.checkRayAddress(f"127.0.0.1:{gcs_port}")
    finally:
        web.shutdown()
        web.server_close()
        client_server.stop(None)
        gcs.stop(None)
    assert not log_dir.exists()


def _killTree(pid: int) -> None:
    """SIGKILL ``pid`` and every process below it (a pipeline, the Ray instance it started, its workers' runs)."""
    for child, _ in childProcesses(pid):
        _killTree(child)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="module")
def ray_head():
    """:return: (the address, the environment of its clients) of a 2-CPU Ray head on the loopback address without its
    dashboard, started without OMP_NUM_THREADS (its workers have Ray's, the task's CPUs), shared by this module's
    tests that run on one (a start costs 10-20 s)"""
    pytest.importorskip("ray")
    # Ray >= 2.59 protects clusters with a token; a throwaway one keeps Ray from writing ~/.ray/auth_token.
    ray_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)}
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(REPO)  # the benchmark's Ray head helpers, also under a plain `pytest`
        with pytest.MonkeyPatch.context() as no_threads:
            no_threads.delenv("OMP_NUM_THREADS", raising=False)
            head, address = startRayHead(2, ray_env)  # stopped by closing its stdin
        try:
            yield address, ray_env
        finally:
            stopRayHead(head)


def _interruptedSweep(log_dir: str, signum: int, env: dict[str, str], *ray_address: str,
                      group: bool = False) -> tuple[int, str]:
    """:return: (exit code, output) of a one-run Ray sweep (of a million steps) sent ``signum`` once the run saved a
    checkpoint; with ``group``, sent to the sweep's process group (the sweep leads its own), as timeout and batch
    schedulers send it"""
    command = [sys.executable, "-m", "rl_baselines.pipeline", "--algo", "ppo2", "--env", ENVS[0], "--srl-model",
               "ground_truth", "--num-iteration", "1", "--log-dir", log_dir, "--no-vis", "--no-progress",
               "--executor", "ray", *ray_address, "--num-timesteps", "1000000", "--checkpoint-freq", "128"]
    process = subprocess.Popen(command, cwd=REPO, env={**os.environ, **env, "PYTHONPATH": REPO},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=group)
    try:
        deadline = time.time() + 120
        while not glob.glob(os.path.join(log_dir, "*", "*", "*", "*", "checkpoints", "*_steps")) and \
                time.time() < deadline and process.poll() is None:
            time.sleep(0.1)
        if group:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
        output = process.communicate(timeout=120)[0]
    finally:  # a sweep that did not stop would train its million steps on after the test, in its Ray workers
        if process.poll() is None:
            _killTree(process.pid)
    return process.returncode, output


def test_ray_sweep_on_a_local_instance(tmp_path, ray_head) -> None:
    address, ray_env = ray_head
    log_dir = str(tmp_path / "logs")
    # one PPO epoch per rollout: the raw-pixel run trains its CNN on 2 threads (below), which is most of its cost;
    # NatureCNN, which takes the process's share under auto (ppo2's default MediumCNN takes one thread)
    flags = [*TRAIN_FLAGS, "--hyperparam", "n_epochs:1", "--features-extractor", "nature"]
    args = ["--algo", "ppo2", "--env", ENVS[1], "--srl-model", *SRL_MODELS, "--num-iteration", "1", "--log-dir",
            log_dir, "--no-vis", "--no-progress", "--executor", "ray", *flags]
    specs = expandGrid(["ppo2"], ENVS[1:], SRL_MODELS, [0], flags, log_dir, cwd=REPO)
    # A cluster started without OMP_NUM_THREADS (ray_head): its workers have Ray's (the task's CPUs, 1), not the
    # pipeline's 2
    assert address.startswith("127.0.0.1:"), address
    # real processes, as a user starts them: Ray (its driver, workers and local instance) is left out of the warm
    # interpreter (conftest.runModule)
    result = runModule("rl_baselines.pipeline", *args, "--ray-address", address, "--workers", "4",
                       env={**ray_env, "OMP_NUM_THREADS": "2"}, timeout=SWEEP_TIMEOUT_S, warm=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Ray cluster: {address} (2 CPUs, 0 GPUs)" in result.stdout
    # 2 runs: the cap (2) changes nothing, and is not said
    assert "2 to run on 2 ray workers" in result.stdout and "capped" not in result.stdout
    folders = [checkFinishedRun(spec) for spec in specs]
    # the raw-pixel run's threads (auto) are the pipeline's OMP_NUM_THREADS, as in a local run of the same command
    assert [json.load(open(os.path.join(folder, "args.json")))["torch_threads"] for folder in folders] == [1, 2]

    # Without --ray-address the pipeline starts (and stops) its own instance. Ctrl-C of a Ray sweep stops its run,
    # which saves a checkpoint: a Ray worker's thread blocks SIGINT and its train process inherited that (it trained
    # on, and the pipeline waited for it), and the cancelled task reported a finished run as failed with Ray's traceback
    interrupted = str(tmp_path / "interrupted")
    code, output = _interruptedSweep(interrupted, signal.SIGINT, ray_env)
    assert code == 130, output
    assert "Ray cluster: local instance (" in output, output
    assert "stopped by SIGINT (the same command continues it from its last checkpoint)" in output, output
    assert "Ray task failed" not in output, output
    run_folder = glob.glob(os.path.join(interrupted, "*", "*", "*", "*"))[0]
    assert runStatus(run_folder) == "resume" and "Stopped:" in open(os.path.join(run_folder, "train.log")).read()


def test_the_benchmark_runs_on_a_ray_instance(tmp_path, ray_head) -> None:
    """benchmarks.srl_rl on an env without a plan, its runs on the Ray cluster at --ray-address."""
    address, ray_env = ray_head
    env, bench, doc = "MobileRobot2TargetGymEnv-v0", tmp_path / "bench", tmp_path / "srl.md"
    result = runModule("benchmarks.srl_rl", "--env", env, "--observations", "ground_truth", "--seeds", "1",
                       "--budget", f"{env}=256", "--eval-freq", "256", "--eval-episodes", "1", "--executor",
                       "ray", "--ray-address", address, "--bench-dir", str(bench), "--runs-file",
                       str(tmp_path / "runs.json"), "--doc", str(doc), "--image-dir", str(tmp_path / "images"),
                       "--no-append", "--no-progress", "--nice", "0", "--workers", "1", env=ray_env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Ray cluster: {address}" in result.stdout
    assert f"### {env}\n" in doc.read_text() and "ground_truth | 1/1" in doc.read_text()
    assert (tmp_path / "images" / f"srl_rl_{env}.png").stat().st_size > 0


def test_sigterm_stops_a_ray_sweep_as_ctrl_c_does(tmp_path, ray_head) -> None:
    """SIGTERM of a sweep waiting on Ray ended in a traceback (Ray's signal check turns only a KeyboardInterrupt into
    its own; the pipeline's SIGTERM exception became a SystemError), exit code 1, its run left "running"."""
    address, ray_env = ray_head
    log_dir = str(tmp_path / "terminated")
    code, output = _interruptedSweep(log_dir, signal.SIGTERM, ray_env, "--ray-address", address)
    assert code == 130 and "Traceback" not in output, output
    assert "stopped by SIGINT (the same command continues it from its last checkpoint)" in output, output
    (state,) = glob.glob(os.path.join(log_dir, "sweep_*.json"))
    with open(state) as handle:
        assert json.load(handle)["counts"]["stopped"] == 1
    run_folder = glob.glob(os.path.join(log_dir, "*", "*", "*", "*"))[0]
    assert runStatus(run_folder) == "resume"


def test_sigterm_to_the_process_group_stops_a_sweep_on_its_own_ray_instance(tmp_path) -> None:
    """A SIGTERM to the sweep's process group (timeout, a batch scheduler) reached its local Ray instance's GCS and
    raylet too, which shut down at once: the run was killed without a checkpoint and reported lost with the cluster.
    Ray's processes now start with SIGTERM blocked: the sweep stops as on a Ctrl-C, its run saved."""
    pytest.importorskip("ray")
    log_dir = str(tmp_path / "terminated")
    ray_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)}  # (no ~/.ray/auth_token written)
    code, output = _interruptedSweep(log_dir, signal.SIGTERM, ray_env, group=True)
    assert code == 130 and "Traceback" not in output, output
    assert "Ray cluster: local instance (" in output and "was lost" not in output, output
    assert "stopped by SIGINT (the same command continues it from its last checkpoint)" in output, output
    run_folder = glob.glob(os.path.join(log_dir, "*", "*", "*", "*"))[0]
    assert runStatus(run_folder) == "resume" and "Stopped:" in open(os.path.join(run_folder, "train.log")).read()


def test_a_sweeps_own_ray_instance_is_new_where_ray_would_find_a_cluster(tmp_path, ray_head) -> None:
    """Without --ray-address, where RAY_ADDRESS is set (or `ray start` ran on this machine) Ray joined that cluster
    with the settings of a new instance and refused them: "cannot start or connect (When connecting to an existing
    cluster, num_cpus and num_gpus must not be provided.)", exit code 2."""
    address, ray_env = ray_head
    log_dir = tmp_path / "logs"
    result = runModule("rl_baselines.pipeline", "--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth",
                       "--num-iteration", "1", "--num-timesteps", "256", "--log-dir", str(log_dir), "--no-vis",
                       "--no-progress", "--executor", "ray", env={**ray_env, "RAY_ADDRESS": address},
                       timeout=SWEEP_TIMEOUT_S, warm=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Ray cluster: local instance (" in result.stdout and "1/1 runs finished" in result.stdout, result.stdout


def test_a_sweep_in_the_callers_process_gives_back_its_ray_settings(tmp_path, monkeypatch) -> None:
    """rl_baselines.runSweep runs the pipeline in its caller's process: the throwaway token of the sweep's own Ray
    instance (RAY_AUTH_MODE, RAY_AUTH_TOKEN) stayed in its environment, sent to the caller's next cluster."""
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAY_AUTH_TOKEN", "the caller's")
    seen = {}

    class _Ray(_QueuingRay):
        def init(self, **kwargs) -> None:
            seen.update((name, os.environ.get(name)) for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"))

    monkeypatch.setitem(sys.modules, "ray", _Ray(cpus=2))  # importRay's `import ray`
    code = pipeline.main(["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "--num-iteration", "1",
                          "--executor", "ray", "--log-dir", str(tmp_path / "logs"), "--no-vis", "--no-progress",
                          "--num-timesteps", "200"])
    assert code == 130 and seen["RAY_AUTH_MODE"] == "token"  # the sweep's instance had its settings
    assert os.environ.get("RAY_AUTH_TOKEN") == "the caller's"
    assert "RAY_AUTH_MODE" not in os.environ and "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ


def test_the_benchmarks_ray_head_is_new_where_ray_would_find_a_cluster(ray_head) -> None:
    """Its ``ray.init(num_cpus=...)`` joined the cluster RAY_ADDRESS (or `ray start` on this machine) gave, which Ray
    refuses with num_cpus: ``benchmarks.sweep_speed`` and this module's tests failed with "the Ray head did not
    start" wherever a cluster ran."""
    address, ray_env = ray_head
    head, own = startRayHead(1, {**ray_env, "RAY_ADDRESS": address})
    try:
        assert own and own != address
    finally:
        stopRayHead(head)
