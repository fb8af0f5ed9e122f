"""A warm interpreter for the tests' ``python -m`` commands (``runModule`` in conftest.py).

Each test process starts, on its first command, one long-lived child (this file run as a script) that imports the
project's commands and their libraries (torch, gymnasium, Stable-Baselines3, pybullet, matplotlib...) once. For each
command it then forks: the forked process takes the command's working directory, environment, argv and output files
and runs the module as ``python -m`` does (``runpy``, as ``__main__``), then exits as the interpreter does (an
uncaught exception printed and exit code 1, ``SystemExit`` codes, KeyboardInterrupt as the SIGINT exit; threads
joined, atexit handlers run, the command's garbage collected, stdout and stderr flushed) but without tearing down the
imported modules (``os._exit``: in a fork, a teardown would touch, and so copy, all of their memory). So a
command costs its own work, not the interpreter start and its imports.

Invariants:

- A command runs warm only where that cannot change what it does: its environment may differ from the warm
  interpreter's only in variables read after start (``DISPLAY``, the project's own...). A change to a variable read
  when the interpreter starts or its libraries load (``PYTHON*``, thread counts, library paths, locale, caches, home,
  temp folder) is answered "not warm" and the caller starts a real subprocess; so are ``SRL_TESTS_NO_WARM=1`` and
  ``warm=False``.
- The warm interpreter never runs torch or any thread pool itself (a fork would copy a pool that the child cannot
  use); it checks that its imports left torch's random state untouched and that it is single-threaded in Python.
  Its objects are frozen out of the garbage collector (``gc.freeze``) before it forks.
- Commands that talk to a Ray cluster run in real processes (``warm=False`` at their call sites).
- An interpreter started with ``libraries_only`` imports the third-party libraries only (THIRD_PARTY), never the
  project: its commands (``python -m``, ``-c`` or a script) import the project as a fresh process does, plugin loading
  and its warnings included (conftest.freshProcesses).
- The forked process gets what a fresh interpreter has: ``sys.path[0]`` is its working directory, the command module
  is not yet imported, stdin is /dev/null, numpy's and torch's global random states are reseeded from the OS
  (``random`` reseeds itself after a fork), and the environment variables that the imports set are set.
- The caller's view is ``subprocess.run``'s: a CompletedProcess with the exit code (negative for a signal) and the
  text of stdout and stderr; a timeout kills the command and raises ``subprocess.TimeoutExpired``. A command started
  without waiting (``WarmInterpreter.launch``) is a :class:`WarmProcess`, seen as a ``subprocess.Popen``: its pid
  (the fork's: signals reach the command itself), ``poll``, ``wait``, ``communicate``, ``send_signal``; in a new
  session of its own where asked (``start_new_session``). One command at a time per warm interpreter: while one
  runs, the next goes to a real process.
"""
from __future__ import annotations

import atexit
import gc
import importlib
import json
import locale
import os
import re
import runpy
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import types

# The commands the tests run: the warm interpreter imports each (for its imports) then forgets it, so that it runs
# fresh as ``__main__``.
COMMANDS = (
    "rl_baselines.train", "rl_baselines.pipeline", "rl_baselines.hyperparam_search", "replay.enjoy_baselines",
    "replay.plots", "replay.gather_results", "replay.aggregate_plots", "replay.compare_plots", "replay.visdom_server",
    "environments.dataset_generator", "environments.dataset_fusioner", "srl_models.train", "srl_models.evaluate",
    "srl_models.explore_latent", "srl_models.prepare",
)
# Imported by the commands only once they run: torch's optimisers import torch._dynamo at their first construction
# (over a second); rl_baselines.hyperparam_search imports its command module when its main runs.
LIBRARIES = ("torch._dynamo", "rl_baselines.sweeps.hyperparam_search")
# What an interpreter started with ``libraries_only`` imports: the third-party libraries of the commands and none of
# the project's modules, so that a forked command imports the project itself (its registries' plugin loading and
# their warnings happen in the command, as in a fresh process). What the libraries print at their import is not in the
# commands' output.
THIRD_PARTY = ("torch", "torch._dynamo", "stable_baselines3", "sb3_contrib", "gymnasium", "pybullet", "cv2",
               "matplotlib", "scipy", "yaml", "tqdm", "PIL", "pygame", "tensorboard", "torch.utils.tensorboard")
PROJECT_PACKAGES = ("rl_baselines", "srl_models", "environments", "replay", "srl_toolbox", "benchmarks")
# Variables read when an interpreter starts or when its libraries load (thread pools, allocators, dynamic loader,
# locale, hash seed, module search path, config and cache folders, temp folder): a command whose environment changes
# one of them runs in a real subprocess.
START_TIME_VARIABLES = re.compile(
    r"^(PYTHON.*|OMP_.*|MKL_.*|OPENBLAS_.*|GOTO_.*|BLIS_.*|NUMEXPR_.*|VECLIB_.*|KMP_.*|GOMP_.*|LD_.*|MALLOC_.*"
    r"|TORCH.*|PYTORCH.*|CUDA.*|CUBLAS.*|NVIDIA.*|MPL.*|MATPLOTLIB.*|PYBULLET.*|LANG|LANGUAGE|LC_.*|HOME|XDG_.*"
    r"|TMPDIR|TEMP|TMP|PATH|VIRTUAL_ENV)$")
# Read when used, though their names match: torch sets TORCHINDUCTOR_CACHE_DIR in its own process's environment once
# it has picked its cache folder (the test process passes it on; a fresh process would pick the same folder).
RUN_TIME_VARIABLES = frozenset({"TORCHINDUCTOR_CACHE_DIR"})
NO_WARM_VARIABLE = "SRL_TESTS_NO_WARM"
MAX_MESSAGE = 1 << 20


def _send(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    assert len(data) < MAX_MESSAGE, "message too long for the warm interpreter's socket"
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.sendall(data)


def _receive(sock: socket.socket) -> tuple[dict | None, list[int]]:
    """:return: the next message (None at the end of the connection) and the file descriptors sent with it"""
    data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 4)
    return (json.loads(data) if data else None), list(fds)


# --- the caller's side (the test process) ----------------------------------------------------------------------


class WarmInterpreter:
    """The test process's handle on its warm interpreter, started on first use, stopped at the process's exit."""

    def __init__(self, repo: str, env: dict[str, str], libraries_only: bool = False) -> None:
        """
        :param repo: the repository root (the interpreter's working directory and first import folder)
        :param env: the interpreter's environment (the test session's, taken before any test changes it)
        :param libraries_only: import the third-party libraries only (THIRD_PARTY), not the project's commands
        """
        self.repo = repo
        self.env = dict(env)
        self.libraries_only = libraries_only
        self.process: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.log = None
        self.lock = threading.Lock()
        self.forked = 0  # commands run warm
        self.launched: WarmProcess | None = None  # the command started by launch() and not yet waited for
        self.fallbacks: dict[str, int] = {}  # why commands went to a real process, with their counts

    def start(self) -> None:
        """Start the interpreter and wait until its imports are done (a failure raises)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), str(theirs.fileno()),
                                         "libraries" if self.libraries_only else "commands"],
                                        stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, env=self.env,
                                        cwd=self.repo, pass_fds=[theirs.fileno()])
        theirs.close()
        self.sock = ours
        message, _ = _receive(ours)
        if not message or not message.get("ready"):
            self.stop()
            raise RuntimeError(f"the warm interpreter did not start:\n{self.logText()}")

    def _startIfNeeded(self) -> None:
        """Start the interpreter on first use, or again when it ended."""
        if self.process is None or self.process.poll() is not None:
            self.stop()
            self.start()

    def endLaunched(self) -> None:
        """Kill the command started by :meth:`launch` if it still runs (a failed test's), and wait for it."""
        launched = self.launched
        if launched is not None and self.sock is not None:
            launched.kill()
            launched.wait()

    def logText(self) -> str:
        """:return: what the interpreter printed itself (import errors)"""
        if self.log is None:
            return ""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        """End the interpreter (closing its socket ends its loop)."""
        self.endLaunched()
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.process is not None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def run(self, module: str, args: list[str], env: dict[str, str], cwd: str, timeout: float | None,
            kind: str = "-m") -> subprocess.CompletedProcess | None:
        """
        Run ``python -m module args`` in a fork of the warm interpreter (``kind`` "-c": ``python -c module args``,
        the code given as ``module``; "script": ``python module args``, the script's path given as ``module``).

        :return: the finished command as ``subprocess.run(capture_output=True, text=True)`` returns it; None where
            it cannot run warm (the caller starts a real subprocess)
        :raises subprocess.TimeoutExpired: after ``timeout`` seconds (the command is killed)
        """
        if not self.lock.acquire(blocking=False):
            return None  # another thread of this test process has a command running warm
        try:
            self._startIfNeeded()
            return self._run(module, args, env, cwd, timeout, kind)
        finally:
            self.lock.release()

    def launch(self, module: str, args: list[str], env: dict[str, str], cwd: str, stdout=None, stderr=None,
               start_new_session: bool = False) -> WarmProcess | None:
        """
        Start ``python -m module args`` in a fork of the warm interpreter and return at once.

        :param stdout: a file open for writing that gets the command's output (None: kept for ``communicate``)
        :param stderr: the same for its error output
        :param start_new_session: the command leads a new session (``subprocess.Popen``'s ``start_new_session``)
        :return: the running command; None where it cannot run warm, or while another command of this interpreter
            runs (the caller starts a real subprocess)
        """
        if not self.lock.acquire(blocking=False):
            return None
        try:
            self._startIfNeeded()
            out = stdout or tempfile.TemporaryFile()
            err = stderr or tempfile.TemporaryFile()
            pid = self._request({"module": module, "args": args, "env": env, "cwd": cwd,
                                 "new_session": start_new_session}, [out.fileno(), err.fileno()])
        except BaseException:
            self.lock.release()
            raise
        if pid is None:
            self.lock.release()
            return None
        return WarmProcess(self, commandLine("-m", module, args), pid, None if stdout else out,
                           None if stderr else err)

    def _request(self, request: dict, fds: list[int]) -> int | None:
        """Send a command; :return: the pid of its fork, None where it cannot run warm"""
        _send(self.sock, request, fds)
        reply = self._reply()
        if "fallback" in reply:
            self.fallbacks[reply["fallback"]] = self.fallbacks.get(reply["fallback"], 0) + 1
            return None
        self.forked += 1
        return reply["pid"]

    def _run(self, module: str, args: list[str], env: dict[str, str], cwd: str, timeout: float | None,
             kind: str) -> subprocess.CompletedProcess | None:
        command = commandLine(kind, module, args)
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            pid = self._request({"module": module, "args": args, "env": env, "cwd": cwd, "kind": kind},
                                [out.fileno(), err.fileno()])
            if pid is None:
                return None
            try:
                self.sock.settimeout(timeout)
                reply = self._reply()
            except TimeoutError:
                self._kill(pid)
                raise subprocess.TimeoutExpired(command, timeout, output=_text(out), stderr=_text(err)) from None
            except BaseException:  # the test interrupted (Ctrl-C): the command goes too, as with subprocess.run
                self._kill(pid)
                raise
            finally:
                if self.sock is not None:
                    self.sock.settimeout(None)
            return subprocess.CompletedProcess(command, reply["returncode"], _text(out), _text(err))

    def _kill(self, pid: int) -> None:
        """Kill a running command and wait for the interpreter's report of its end."""
        if self.sock is None:
            return
        self.sock.settimeout(None)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._reply()

    def _reply(self) -> dict:
        message, _ = _receive(self.sock)
        if message is None:
            code = self.process.wait()
            self.sock.close()
            self.sock = None
            self.process = None
            raise RuntimeError(f"the warm interpreter ended (exit {code}):\n{self.logText()}")
        return message


def commandLine(kind: str, target: str, args: list[str]) -> list[str]:
    """:return: the real interpreter's command line of ``python -m target``, ``-c target`` or a script ``target``"""
    return [sys.executable, *([kind] if kind != "script" else []), target, *args]


def _text(handle) -> str:
    """:return: a command's output file as ``subprocess.run(text=True)`` decodes it (locale encoding, newlines)"""
    handle.seek(0)
    data = handle.read().decode(locale.getpreferredencoding(False))
    return data.replace("\r\n", "\n").replace("\r", "\n")


class WarmProcess:
    """A command started by :meth:`WarmInterpreter.launch`, as ``subprocess.Popen`` shows a process: ``pid``,
    ``args``, ``returncode`` (None while it runs; negative for a signal), ``poll``, ``wait``, ``communicate``,
    ``send_signal``, ``terminate``, ``kill``. Its interpreter runs no other command until it has ended and been
    waited for (by ``poll``, ``wait`` or ``communicate``, or :meth:`WarmInterpreter.endLaunched` at a test's end)."""

    def __init__(self, interpreter: WarmInterpreter, args: list[str], pid: int, out, err) -> None:
        self.interpreter, self.args, self.pid = interpreter, args, pid
        self.returncode: int | None = None
        self._out, self._err = out, err  # the captured outputs (None: the caller's files)
        interpreter.launched = self

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.interpreter.sock], [], [], 0)[0]:
            self._ended(self.interpreter._reply())
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """:raises subprocess.TimeoutExpired: after ``timeout`` seconds (the command still runs)"""
        if self.returncode is None:
            if not select.select([self.interpreter.sock], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self._ended(self.interpreter._reply())
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str | None, str | None]:
        """:return: the text of the captured stdout and stderr (None for those sent to the caller's files)"""
        self.wait(timeout)
        return tuple(None if handle is None else _text(handle) for handle in (self._out, self._err))

    def send_signal(self, number: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:  # it ended (its interpreter reaped it) before the reply saying so came: as Popen
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _ended(self, reply: dict) -> None:
        self.returncode = reply["returncode"]
        self.interpreter.launched = None
        self.interpreter.lock.release()


# --- the warm interpreter ----------------------------------------------------------------------------------------


def _whyNotWarm(env: dict[str, str], start_env: dict[str, str], import_env: dict[str, str]) -> str | None:
    """
    :param env: the command's environment
    :param start_env: the warm interpreter's environment when it started
    :param import_env: its environment after its imports
    :return: why the command cannot run warm, None when it can
    """
    if env.get(NO_WARM_VARIABLE) == "1":
        return NO_WARM_VARIABLE
    changed_by_imports = {name for name in set(start_env) | set(import_env) if start_env.get(name) != import_env.get(name)}
    for name in changed_by_imports:
        if env.get(name) not in (start_env.get(name), import_env.get(name)):
            return f"{name} set by the imports and by the caller"
    for name in set(env) | set(start_env):
        if (START_TIME_VARIABLES.match(name) and name not in RUN_TIME_VARIABLES and name not in changed_by_imports
                and env.get(name) != start_env.get(name)):
            return f"{name} read at start"
    return None


def _commandEnvironment(env: dict[str, str], start_env: dict[str, str], import_env: dict[str, str]) -> dict[str, str]:
    """:return: the command's environment with what the imports changed in it (as they would in ``python -m``)"""
    result = dict(env)
    for name in set(start_env) | set(import_env):
        if start_env.get(name) != import_env.get(name):
            if name in import_env:
                result[name] = import_env[name]
            else:
                result.pop(name, None)
    return result


def _importCommands(libraries_only: bool) -> None:
    """Import every command's dependencies (not the command modules themselves), or the third-party ones only."""
    for module in (THIRD_PARTY if libraries_only else (*COMMANDS, *LIBRARIES)):
        importlib.import_module(module)
    project = [name for name in sys.modules if name.split(".")[0] in PROJECT_PACKAGES]
    if libraries_only and project:
        raise RuntimeError(f"importing the libraries imported the project: {project}")
    torch = sys.modules["torch"]
    fresh = torch.Generator()
    fresh.manual_seed(torch.initial_seed())
    if not torch.equal(torch.random.get_rng_state(), fresh.get_state()):
        raise RuntimeError("importing the commands used torch's global random generator")
    if threading.active_count() != 1:
        raise RuntimeError(f"importing the commands started Python threads: {threading.enumerate()}")


def _forget(module: str) -> None:
    """Remove ``module`` from the imported modules, so that runpy runs it fresh as ``python -m`` does."""
    sys.modules.pop(module, None)
    parent, _, child = module.rpartition(".")
    if parent in sys.modules and getattr(sys.modules[parent], child, None) is not None:
        try:
            delattr(sys.modules[parent], child)
        except AttributeError:
            pass


def serve(sock: socket.socket, start_env: dict[str, str], import_env: dict[str, str]) -> tuple[dict, list[int]] | None:
    """
    Answer requests until the connection ends: fork one process per command and report its exit code.

    :return: in a forked process, its request and output descriptors; None in the warm interpreter when it is done
    """
    while True:
        request, fds = _receive(sock)
        if request is None:
            return None
        reason = _whyNotWarm(request["env"], start_env, import_env)
        if reason is not None:
            for fd in fds:
                os.close(fd)
            _send(sock, {"fallback": reason})
            continue
        started, ready = os.pipe()  # closed by the fork once it leads its new session, if asked
        pid = os.fork()
        if pid == 0:
            sock.close()
            os.close(started)
            if request.get("new_session"):
                os.setsid()
            os.close(ready)
            return request, fds
        for fd in (*fds, ready):
            os.close(fd)
        os.read(started, 1)  # (the pid the caller gets is the command's as Popen returns it)
        os.close(started)
        _send(sock, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        _send(sock, {"returncode": os.waitstatus_to_exitcode(status)})


def runCommand(request: dict, fds: list[int], start_env: dict[str, str], import_env: dict[str, str]) -> None:
    """In a forked process: become ``python -m module args`` (or ``-c``, a script), run it and exit as the
    interpreter would."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(_commandEnvironment(request["env"], start_env, import_env))
    null = os.open(os.devnull, os.O_RDONLY)
    for target, fd in ((0, null), (1, fds[0]), (2, fds[1])):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdout, sys.stderr, sys.stdin = sys.__stdout__, sys.__stderr__, sys.__stdin__
    kind, target = request.get("kind", "-m"), request["module"]
    sys.path[0] = {"-m": os.getcwd(), "-c": ""}.get(kind) or os.path.dirname(os.path.abspath(target))
    sys.argv = [{"script": target}.get(kind, kind), *request["args"]]
    sys.modules["numpy"].random.seed()  # a fresh process seeds numpy's and torch's global generators from the OS
    sys.modules["torch"].seed()
    signal_number = 0
    try:
        if kind == "-c":
            main_module = sys.modules["__main__"] = types.ModuleType("__main__")
            exec(compile(target, "<string>", "exec"), main_module.__dict__)
        elif kind == "script":
            runpy.run_path(target, run_name="__main__")
        else:
            _forget(target)
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = _exitCode(stop)
    except BaseException as error:  # what the interpreter does with an uncaught exception: print it, exit 1
        sys.excepthook(type(error), error, error.__traceback__)
        code = 1
        if isinstance(error, KeyboardInterrupt):
            signal_number = signal.SIGINT  # since Python 3.8, the process then ends by SIGINT
        del error
    os._exit(_finish(code, signal_number))


def _exitCode(stop: SystemExit) -> int:
    """:return: the exit code of an uncaught SystemExit (a code that is not an int is printed, exit 1)"""
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)
    return 1


def _finish(code: int, signal_number: int) -> int:
    """
    The interpreter's exit, without tearing down the modules the warm interpreter imported (slow in a fork: every
    object touched is copied): join the threads, run the atexit handlers, collect the command's garbage (closing
    the files it left open), flush stdout and stderr.

    :return: the exit code (after a SIGINT exit, this process is gone)
    """
    for step in (threading._shutdown, atexit._run_exitfuncs, gc.collect):
        try:
            step()
        except BaseException as error:
            sys.excepthook(type(error), error, error.__traceback__)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    if signal_number:
        signal.signal(signal_number, signal.SIG_DFL)
        os.kill(os.getpid(), signal_number)
    return code & 0xFF if code >= 0 else code


def main(fd: int, mode: str) -> None:
    sock = socket.socket(fileno=fd)
    start_env = dict(os.environ)
    sys.path[0] = os.getcwd()  # as `python -m` from the repository: the project's packages first
    _importCommands(mode == "libraries")
    for module in COMMANDS:
        _forget(module)
    import_env = dict(os.environ)
    gc.freeze()  # the imports' objects: never scanned again, so a forked command does not copy their memory
    _send(sock, {"ready": True})
    job = serve(sock, start_env, import_env)
    if job is not None:
        runCommand(*job, start_env, import_env)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
