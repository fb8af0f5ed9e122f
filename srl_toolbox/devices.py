"""The torch device a run computes on: ``--device auto|cpu|cuda|cuda:N``.

- :func:`parseDevice` (the argparse type) checks only the spelling, so that a run folder recorded on a GPU machine
  still parses on a CPU-only one;
- :func:`resolveDevice` turns a spelling into the device of this machine (``auto``: the first CUDA GPU when torch
  sees one and the run computes faster there, else the CPU) and refuses CUDA where there is none;
- :func:`reuseDevice` picks the device for a run that is resumed or replayed: the one asked for now, else the run's
  recorded one when this machine has it, else this machine's (``auto``).

Model files are always loaded with ``map_location`` onto the chosen device, so a model trained on a GPU loads on a
CPU-only machine.
"""
from __future__ import annotations

import argparse
import re

import torch

from srl_toolbox.cli import UsageError

DEVICE_CHOICES = "auto, cpu, cuda, cuda:N"
# What a run without a recorded device (older run folders, arguments built in Python) computes on.
DEFAULT_RUN_DEVICE = "cpu"
_SPELLING = re.compile(r"auto|cpu|cuda(:\d+)?")


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
