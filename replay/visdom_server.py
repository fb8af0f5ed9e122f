"""Start a visdom server that works offline.

visdom's own ``python -m visdom.server`` downloads its JavaScript dependencies when it starts and dies without
internet access. This command never downloads: it serves visdom's API and its browser page, whose scripts
``make install`` puts in place from the npm registry (``python -m replay.visdom_static``, see that module), bound
to the loopback interface unless asked otherwise::

    python -m replay.visdom_server --port 8097
    srl-visdom --port 8097 --hostname 0.0.0.0 --env-path ~/.visdom

The helpers :func:`startServer`, :func:`waitForServer` and :func:`findFreePort` let tests and tools run a server
in a child process.
"""
from __future__ import annotations

import argparse
import asyncio
import errno
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import IO, NoReturn

from replay.visdom_static import missingFiles
from srl_toolbox.cli import CLIParser, UsageError, nonEmptyText, portNumber, pythonCommand

DEFAULT_PORT = 8097
DEFAULT_HOSTNAME = "127.0.0.1"
DEFAULT_ENV_PATH = os.path.join("~", ".visdom")
# The folder that holds the `replay` package, so that a child process finds it even when not installed
_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _hostForUrl(hostname: str) -> str:
    """
    :param hostname: a host name or an IPv4/IPv6 address
    :return: the host as it appears in a URL (IPv6 literals in brackets)
    """
    return f"[{hostname}]" if ":" in hostname and not hostname.startswith("[") else hostname


def serverUrl(port: int, hostname: str = DEFAULT_HOSTNAME) -> str:
    """
    The address of a visdom server.

    :param port: the server's port
    :param hostname: the server's host
    :return: ``http://HOST:PORT``
    """
    return f"http://{_hostForUrl(hostname)}:{port}"


def buildParser() -> argparse.ArgumentParser:
    """
    :return: the command-line parser of ``python -m replay.visdom_server``
    """
    parser = CLIParser(
        prog="python -m replay.visdom_server",
        description="Start a visdom server without downloading anything (works offline).",
    )
    parser.add_argument("--port", type=portNumber, default=DEFAULT_PORT,
                        help=f"port to listen on (default: {DEFAULT_PORT})")
    parser.add_argument("--hostname", default=DEFAULT_HOSTNAME,
                        help=f"address to bind (default: {DEFAULT_HOSTNAME}, this machine only; "
                             "0.0.0.0 makes the plots reachable from other machines)")
    parser.add_argument("--env-path", type=nonEmptyText, default=DEFAULT_ENV_PATH,
                        help=f"folder where visdom stores its environments (default: {DEFAULT_ENV_PATH})")
    parser.add_argument("--logging-level", default="WARNING",
                        help="server log level, a name or a number (default: WARNING; INFO logs every request)")
    return parser


def _fail(message: str) -> NoReturn:
    """
    Print one error line on stderr and exit with status 2.

    :param message: what went wrong and, if possible, what to do
    """
    print(f"error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def _bindError(exc: OSError, port: int, hostname: str) -> str:
    """
    :param exc: the error raised while binding the listening socket
    :param port: the port asked for
    :param hostname: the address asked for
    :return: a one-line explanation naming the values
    """
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve hostname {hostname!r} ({exc.strerror or exc}); choose another with --hostname"
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} is already in use on {hostname}; choose another with --port"
    if exc.errno == errno.EACCES:
        return f"permission denied to listen on port {port} on {hostname}; choose a port above 1023 with --port"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"address {hostname} is not available on this machine; choose another with --hostname"
    return f"cannot listen on {hostname}:{port}: {exc.strerror or exc}"


def _checkBindable(port: int, hostname: str) -> None:
    """
    Fail early, before the slow visdom import, when the address cannot be bound (binding again later is the
    authoritative check).

    :param port: the port asked for
    :param hostname: the address asked for
    """
    try:
        infos = socket.getaddrinfo(hostname, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as tornado does
            probe.bind(address)
    except OSError as exc:
        _fail(_bindError(exc, port, hostname))


def _staticHandlerClass() -> type:
    """
    :return: tornado's StaticFileHandler whose ``static_url`` links paths outside the static folder (visdom's page
        asks for ``../user/style.css``, served by visdom's own user handler) without reading them for a version hash
    """
    from tornado.web import StaticFileHandler  # with visdom.server below: imported only when a server starts

    class _VisdomStaticHandler(StaticFileHandler):
        @classmethod
        def make_static_url(cls, settings: dict, path: str, include_version: bool = True) -> str:
            outside = os.path.normpath(path).startswith("..")
            return super().make_static_url(settings, path, include_version=include_version and not outside)

    return _VisdomStaticHandler


def _browserScriptsMissing() -> list[str]:
    """
    :return: the browser files of visdom's page that are not installed (empty when the page is complete)
    """

    return missingFiles()


def main(argv: list[str] | None = None) -> None:
    """
    Entry point of ``python -m replay.visdom_server`` and of the ``srl-visdom`` console script.

    Serves until stopped by Ctrl-C or SIGTERM, its way to stop, so exit status 0 (also when started with SIGINT
    ignored: ``srl-visdom &`` in a script, then ``kill -INT``). Bad arguments, a busy port or an unusable env path
    print one line on stderr and exit with status 2.

    :param argv: command-line arguments without the program name (default: ``sys.argv[1:]``)
    """
    try:
        args = buildParser().parse_args(argv)
    except UsageError as error:
        _fail(str(error))
    level_text = str(args.logging_level)
    level = int(level_text) if level_text.isdigit() else logging.getLevelName(level_text.upper())
    if not isinstance(level, int):
        _fail(f"invalid logging level {args.logging_level!r}: expected DEBUG, INFO, WARNING, ERROR or a number")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(level)

    _checkBindable(args.port, args.hostname)  # before the env path is made: a refusal writes nothing
    env_path = os.path.abspath(os.path.expanduser(args.env_path))
    try:
        os.makedirs(env_path, exist_ok=True)
    except OSError as exc:
        _fail(f"cannot use env path {env_path}: {exc.strerror or exc}; choose another with --env-path")
    if not os.access(env_path, os.W_OK):
        _fail(f"env path {env_path} is not writable; choose another with --env-path")
    # Imported here so that `--help` and argument errors stay fast
    from visdom.server import app as visdom_app  # heavy (tornado app, its handlers): only when a server starts

    # visdom's page template links "../user/style.css" through static_url, which tornado >= 6.6 refuses (HTTP 403
    # on the whole page) because the path leaves the static folder: link it without a version hash instead.
    visdom_app.tornado_settings["static_handler_class"] = _staticHandlerClass()
    Application = visdom_app.Application
    try:
        app = Application(port=args.port, base_url="", env_path=env_path)
    except Exception as exc:  # a corrupt env folder, unreadable files, ...
        _fail(f"cannot load visdom environments from {env_path}: {exc}")

    url = serverUrl(args.port, args.hostname)
    bound = False

    async def serve() -> None:
        nonlocal bound
        # Binding inside the running loop: tornado attaches the server to it, and a bind error raises here
        app.listen(args.port, address=args.hostname, max_buffer_size=1024 ** 3)
        bound = True
        print(f"Visdom server running at {url} (env path: {env_path}); stop it with Ctrl-C", flush=True)
        missing = _browserScriptsMissing()
        if missing:
            print(f"note: {len(missing)} of visdom's browser files are not installed ({', '.join(missing[:3])}...), "
                  "so the web page may stay blank; plots are still received and stored. Install them once with "
                  f"`make install` or `{pythonCommand()} -m replay.visdom_static` (from the npm registry).", flush=True)
        stop = asyncio.Event()
        # SIGTERM (process.terminate()) stops the server cleanly, like Ctrl-C; so does a SIGINT that the process was
        # started ignoring (a shell script's `srl-visdom &`)
        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                asyncio.get_running_loop().add_signal_handler(signum, stop.set)
            except (NotImplementedError, RuntimeError):  # Windows, or not the main thread
                pass
        await stop.wait()
        print("Visdom server stopped", flush=True)

    try:
        asyncio.run(serve())
    except OSError as exc:
        if bound:
            raise
        _fail(_bindError(exc, args.port, args.hostname))
    except OverflowError:  # cannot happen after portNumber, kept so that no traceback escapes
        _fail(f"invalid port {args.port}: expected an integer between 1 and 65535")
    except KeyboardInterrupt:
        print("Visdom server stopped", flush=True)


def findFreePort(hostname: str = DEFAULT_HOSTNAME) -> int:
    """
    Ask the OS for a TCP port that is free right now (another process may still take it before it is used).

    :param hostname: the address the port will be bound on
    :return: a port number
    """
    family = socket.AF_INET6 if ":" in hostname else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((hostname, 0))
        return sock.getsockname()[1]


def startServer(port: int, hostname: str = DEFAULT_HOSTNAME, env_path: str | None = None,
                log_file: str | None = None, logging_level: str | None = None) -> subprocess.Popen:
    """
    Start ``python -m replay.visdom_server`` in a child process and return at once
    (use :func:`waitForServer` to know when it answers). Stop it with ``process.terminate()``.

    :param port: the port to listen on
    :param hostname: the address to bind (loopback by default)
    :param env_path: where visdom stores its environments (default: ``~/.visdom``)
    :param log_file: file that receives the server's output (default: discarded)
    :param logging_level: the server's log level (default: WARNING; INFO logs every request)
    :return: the child process
    """
    command = [sys.executable, "-m", "replay.visdom_server", "--port", str(port), "--hostname", hostname]
    if env_path is not None:
        command += ["--env-path", env_path]
    if logging_level is not None:
        command += ["--logging-level", logging_level]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PROJECT_ROOT, env.get("PYTHONPATH", "")) if p)
    output: IO | int = subprocess.DEVNULL
    if log_file is not None:
        output = open(log_file, "ab")
    try:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                env=env, cwd=_PROJECT_ROOT)
    finally:
        if log_file is not None:
            output.close()  # the child holds its own copy


def isServerUp(port: int, hostname: str = DEFAULT_HOSTNAME, timeout: float = 1.0) -> bool:
    """
    Check once whether a visdom server answers (its ``env_state`` endpoint returns the list of environments).

    :param port: the server's port
    :param hostname: the server's host
    :param timeout: seconds to wait for the answer
    :return: True if a visdom server answered
    """
    request = urllib.request.Request(f"{serverUrl(port, hostname)}/env_state", data=b"{}", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return isinstance(json.loads(response.read().decode("utf-8")), list)
    except (OSError, ValueError):  # URLError, HTTPError, timeouts and refused connections are OSErrors
        return False


def waitForServer(port: int, hostname: str = DEFAULT_HOSTNAME, timeout: float = 30.0,
                  process: subprocess.Popen | None = None) -> bool:
    """
    Poll until a visdom server answers on ``hostname:port``.

    :param port: the server's port
    :param hostname: the server's host
    :param timeout: give up after this many seconds
    :param process: the server's process, if known: stop waiting as soon as it has exited
    :return: True if the server answered in time, False otherwise
    """
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            return False
        remaining = deadline - time.monotonic()
        if isServerUp(port, hostname, timeout=max(0.1, min(1.0, remaining))):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


if __name__ == "__main__":
    main()
