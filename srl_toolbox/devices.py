"""The torch device a run computes on (``--device auto|cpu|cuda|cuda:N``), and its CPU threads (``--torch-threads``).

- :func:`parseDevice` (the argparse type) checks only the spelling, so that a run folder recorded on a GPU machine
  still parses on a CPU-only one;
- :func:`resolveDevice` turns a spelling into the device of this machine (``auto``: the first CUDA GPU when torch
  sees one and the run computes faster there, else the CPU) and refuses CUDA where there is none;
- :func:`reuseDevice` picks the device for a run that is resumed or replayed: the one asked for now, else the run's
  recorded one when this machine has it, else this machine's (``auto``).

Model files are always loaded with ``map_location`` onto the chosen device, so a model trained on a GPU loads on a
CPU-only machine.

Threads: :func:`parseThreads` reads ``--torch-threads`` (auto or 0, or 1 up to the machine's CPUs) and
:func:`resolveThreads` turns it into torch's intra-op thread count for a run's process. Auto is one thread for small
networks, and for a CNN on images the process's share of the cores: ``OMP_NUM_THREADS`` where it is set (the commands
that start several runs at a time give each its share: :func:`threadsShare`, :func:`threadsEnvironment`), else every
usable core. The thread settings a user gives a command (:data:`THREAD_VARIABLES`, :func:`threadSettings`) reach
every run it starts, a Ray task's too, so one command trains with the same thread counts wherever its runs execute.
A float sum split over more threads is summed in another order, so a run records its resolved count and is resumed
with it.
"""
from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping

from srl_toolbox.cli import UsageError

DEVICE_CHOICES = "auto, cpu, cuda, cuda:N"
# What a run without a recorded device (older run folders, arguments built in Python) computes on.
DEFAULT_RUN_DEVICE = "cpu"
_SPELLING = re.compile(r"auto|cpu|cuda(:\d+)?")
# The environment variable that gives a process its share of the cores (torch's and OpenMP's own).
THREADS_VARIABLE = "OMP_NUM_THREADS"
# Every environment variable that sets a process's CPU threads: OpenMP's (torch's) and the BLAS libraries'.
THREAD_VARIABLES = (THREADS_VARIABLE, "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def parseDevice(raw: str) -> str:
    """
    argparse type of ``--device``: the spelling only (availability is checked by :func:`resolveDevice`).

    :param raw: the command-line string
    :return: the value, lower-cased
    :raises argparse.ArgumentTypeError: not one of auto, cpu, cuda, cuda:N
    """
    value = raw.strip().lower()
    if not _SPELLING.fullmatch(value):
        raise argparse.ArgumentTypeError(f"{raw!r} is not a device; valid choices: {DEVICE_CHOICES}")
    return value


def resolveDevice(raw: str, gpu_helps: bool = True) -> str:
    """
    :param raw: auto, cpu, cuda or cuda:N
    :param gpu_helps: whether the computation is faster on a GPU; False makes ``auto`` the CPU (an explicit ``cuda``
        still gives the GPU)
    :return: the device on this machine: ``"cpu"`` or ``"cuda:N"``
    :raises ValueError: a bad spelling, or CUDA asked where torch sees no such GPU (one line)
    """
    try:
        value = parseDevice(raw)
    except argparse.ArgumentTypeError as error:
        raise ValueError(str(error)) from None
    # (imported here: the processes that only share out threads, the sweeps' and searches', never load torch)
    import torch

    if value == "auto":
        return "cuda:0" if gpu_helps and torch.cuda.is_available() else "cpu"
    if value == "cpu":
        return value
    if not torch.cuda.is_available():
        raise ValueError(f"--device {value}: this machine has no CUDA GPU that torch can use; valid choices here: "
                         f"auto, cpu")
    index = int(value.partition(":")[2] or 0)
    count = torch.cuda.device_count()
    if index >= count:
        raise ValueError(f"--device {value}: this machine has {count} CUDA GPU(s); valid choices here: auto, cpu, "
                         f"{', '.join(f'cuda:{i}' for i in range(count))}")
    return f"cuda:{index}"


def checkedDevice(raw: str, flag: str = "--device") -> str:
    """
    :func:`resolveDevice` for a command line: a bad or unavailable device is a one-line :class:`UsageError`.

    :param raw: auto, cpu, cuda or cuda:N
    :param flag: the flag the value came from, named in the error
    :return: the device on this machine: ``"cpu"`` or ``"cuda:N"``
    :raises UsageError: a bad spelling, or CUDA asked where torch sees no such GPU
    """
    try:
        return resolveDevice(raw)
    except ValueError as error:
        message = str(error)
        raise UsageError(message if message.startswith(flag) else f"{flag}: {message}") from None


def reuseDevice(recorded: str | None, requested: str | None) -> tuple[str, str | None]:
    """
    The device of a run that is resumed or replayed.

    :param recorded: the device its args.json records (None for a run folder older than ``--device``)
    :param requested: ``--device`` given now, None when not given
    :return: (the resolved device, a one-line note when the recorded device is not available here, else None)
    :raises ValueError: the requested device is not available (one line)
    """
    if requested is not None:
        return resolveDevice(requested), None
    try:
        return resolveDevice(recorded or DEFAULT_RUN_DEVICE), None
    except ValueError:
        device = resolveDevice("auto")
        return device, f"the run was trained on {recorded}, which this machine lacks: using {device}"


def runDevice(recorded: str | None) -> str:
    """
    :param recorded: a run's device, as the train command resolved it (None: the CPU)
    :return: the device to build or load the run's networks on: the recorded one, or this machine's when it lacks
        that one (a model trained on a GPU loads on a CPU-only machine)
    """
    return reuseDevice(recorded, None)[0]


def usableCores() -> int:
    """:return: the CPU cores this process may use"""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def maxThreads() -> int:
    """:return: the most torch threads a run may ask for: this machine's CPUs"""
    return os.cpu_count() or 1


def parseThreads(raw: str) -> int:
    """
    argparse type of ``--torch-threads``: ``auto`` (or 0), or a count up to this machine's CPUs (more threads than
    CPUs never compute faster, and a count in the thousands fails to start them).

    :param raw: the command-line string
    :return: the count, 0 for auto
    :raises argparse.ArgumentTypeError: anything else (the message names the valid range)
    """
    value = raw.strip().lower()
    if value == "auto":
        return 0
    cpus = maxThreads()
    valid = f"valid: auto (or 0) or 1..{cpus}, this machine's CPUs"
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{raw!r} is not a thread count; {valid}")
    if int(value) > cpus:
        raise argparse.ArgumentTypeError(f"{raw!r} is more threads than this machine's {cpus} CPUs; {valid}")
    return int(value)


def resolveThreads(asked: int, threads_help: bool = True, environ: Mapping[str, str] | None = None) -> int:
    """
    :param asked: ``--torch-threads``: a thread count, or 0 for auto
    :param threads_help: whether the run's networks compute faster on several threads (a CNN on images); False
        makes auto one thread (small networks: the threads' start and join cost what they save)
    :param environ: the process's environment (default: os.environ)
    :return: torch's intra-op threads for the run: ``asked``; auto: 1 where threads do not help, else
        ``OMP_NUM_THREADS`` where it is a positive integer, at most the machine's CPUs (:func:`maxThreads`, the most
        ``--torch-threads`` takes), else :func:`usableCores`
    """
    if asked > 0:
        return int(asked)
    if not threads_help:
        return 1
    share = (os.environ if environ is None else environ).get(THREADS_VARIABLE, "").strip()
    return min(int(share), maxThreads()) if share.isdigit() and int(share) > 0 else usableCores()


def threadsShare(runs_at_once: int) -> int:
    """
    :param runs_at_once: runs that share this machine's cores
    :return: each one's share of the cores (at least 1)
    """
    return max(1, usableCores() // max(1, int(runs_at_once)))


def threadsEnvironment(threads: int, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """
    :param threads: a run's share of the cores (:func:`threadsShare`, or a Ray task's CPUs)
    :param environ: the environment to start it in (default: os.environ)
    :return: that environment with ``OMP_NUM_THREADS`` set to ``threads``, unless it is set already (the user's
        choice stands)
    """
    environ = dict(os.environ if environ is None else environ)
    environ.setdefault(THREADS_VARIABLE, str(max(1, int(threads))))
    return environ


def threadSettings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """
    :param environ: a command's environment (default: os.environ)
    :return: the :data:`THREAD_VARIABLES` set in it, for the processes it starts that do not inherit it (a Ray task
        on a running cluster, whose worker has Ray's ``OMP_NUM_THREADS``: the task's CPUs)
    """
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in THREAD_VARIABLES if environ.get(name, "").strip()}
