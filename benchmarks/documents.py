"""The doc writer shared by the benchmarks: a section of a markdown file replaced, or a result block appended.

Every benchmark writes its figures into the docs through this module: a section of docs/srl.md (the SRL table under
its heading, the SRL + RL benchmark between its markers) or a dated block at the end of docs/benchmarks.md (the
command, the machine and the table). It also holds what those blocks state about how a figure was measured: the
machine's description, the one-thread environment of a measured subprocess (``ONE_THREAD``), and the make target
beside a recorded command (only when the Makefile runs that very command), and it refuses a ``--doc`` path that
cannot be rewritten before any work (:func:`checkDocument`). Invariants:

- a document is rewritten whole through a temporary file and one rename (srl_toolbox.files.atomicPath), never
  appended to in place: a kill half-way never leaves a cut section;
- under a lock on the document (srl_toolbox.locks), so that two benchmarks finishing together take turns and
  neither's text is lost;
- a section is replaced where it is, the rest of the document kept byte for byte; a document without the section
  gets it at its end.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import platform
import shlex
import sys
from collections.abc import Callable

import torch

from srl_toolbox.cli import UsageError, checkOutputFile
from srl_toolbox.devices import resolveThreads
from srl_toolbox.files import atomicPath
from srl_toolbox.locks import acquireLock, lockPathFor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_FILE = os.path.join(ROOT, "docs", "benchmarks.md")
MAKEFILE = os.path.join(ROOT, "Makefile")
BENCH_TITLE = "# srl-toolbox benchmarks\n"
# The environment of a measured subprocess with one torch/BLAS thread (the figures say so): jobs run side by side,
# one per core
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def autoThreadsText() -> str:
    """:return: what train's default ``--torch-threads`` (auto) gives on this machine, for a report's text"""
    return f"auto: 1 for an MLP policy, {resolveThreads(0)} here for raw pixels' CNN"


def machineDescription(packages: tuple[str, ...] = ("pybullet", "numpy", "gymnasium")) -> str:
    """
    :param packages: distributions whose versions matter for the figures
    :return: CPU model, usable cores, the GPU where torch sees one, Python and library versions, on one line
    """
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions = ", ".join(f"{name} {importlib.metadata.version(name)}" for name in packages)
    gpu = f", GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return f"{cpu}, nproc {cores}{gpu}, Python {platform.python_version()}, {versions}"


def rewriteDocument(path: str, change: Callable[[str], str], initial: str = "") -> None:
    """
    Rewrite a document atomically, under its lock.

    :param path: the markdown file (created when missing)
    :param change: ``change(text) -> new text``, called under the lock
    :param initial: the text of a missing document
    """
    lock = acquireLock(lockPathFor(path))
    try:
        text = initial
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8") as handle:
            handle.write(change(text))
    finally:
        lock.release()


def checkDocument(path: str, flag: str) -> None:
    """
    Refuse, before any work, a document whose section a benchmark would replace but cannot: one in a folder that does
    not exist (a mistyped path would otherwise have its folders made), a folder, or a file that cannot be rewritten
    in its folder. A missing file in an existing folder is fine: it is made, holding the section.

    :param path: the markdown file given
    :param flag: the option that gave it, for the message (``--doc``)
    :raises UsageError: no such folder, a folder, or a folder that refuses the rewrite
    """
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{flag} {path!r}: the folder {folder!r} does not exist: give a markdown file in an existing "
                         "folder")
    checkOutputFile(path, flag)


def resultsFile(raw: str) -> str:
    """
    argparse type of ``--results-file``: a markdown file a benchmark appends its results to, refused at parsing (before
    any work) as :func:`checkDocument` refuses a ``--doc``.

    :param raw: the command-line string
    :return: the path
    :raises UsageError: a path that cannot be written (it passes through argparse as the one-line error)
    """
    if not raw.strip():  # (it would mean docs/benchmarks.md, the file the flag keeps trial results out of)
        raise UsageError(f"--results-file {raw!r} is empty: give a markdown file, or leave the flag out")
    checkDocument(raw, "--results-file")
    return raw


def addResultsArguments(parser: argparse.ArgumentParser, what: str = "the results") -> None:
    """
    Give a benchmark's parser ``--no-append`` and ``--results-file FILE``: the dated block goes to docs/benchmarks.md,
    to FILE instead, or nowhere. Read the file with :func:`resultsPath`.

    :param parser: the benchmark's parser
    :param what: what is appended, for the help (``the table``)
    """
    parser.add_argument("--no-append", action="store_true",
                        help=f"do not append {what} to docs/benchmarks.md (nor to --results-file)")
    parser.add_argument("--results-file", type=resultsFile, default=None, metavar="FILE",
                        help="markdown file to append to instead (made with a title when missing, in an existing "
                             "folder) [docs/benchmarks.md]")


def resultsPath(args: argparse.Namespace) -> str:
    """:param args: parsed by a parser given :func:`addResultsArguments`
    :return: the markdown file the results are appended to"""
    return BENCH_FILE if args.results_file is None else args.results_file


def replaceHeadingSection(text: str, heading: str, section: str) -> str:
    """
    :param text: a markdown document
    :param heading: the section's level-2 heading line (``## ...``)
    :param section: the new section, starting with ``heading``
    :return: the document with the section (from its heading up to the next level-2 heading) replaced, or the
        section appended
    """
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == heading), None)
    new = section.rstrip("\n") + "\n"
    if start is None:
        return text.rstrip("\n") + "\n\n" + new
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    tail = "".join(lines[end:])
    return "".join(lines[:start]) + new + ("\n" + tail if tail else "")


def replaceMarkedSection(text: str, body: str, title: str, start_marker: str, end_marker: str) -> str:
    """
    :param text: a markdown document
    :param body: the section's new content (without its heading)
    :param title: the section's heading line, written with the markers when the document has none
    :param start_marker: the comment line that opens the replaced text
    :param end_marker: the comment line that closes it
    :return: the document with the text between the markers replaced by ``body`` (markers kept), or ``title``, the
        markers and ``body`` appended when the document has no markers. The heading stays outside the markers, so
        that a writer replacing the section before it up to the next level-2 heading
        (:func:`replaceHeadingSection`) never takes a marker with it.
    """
    body = body.strip("\n")
    start, end = text.find(start_marker), text.find(end_marker)
    if start >= 0 and end > start:
        return text[:start] + f"{start_marker}\n{body}\n" + text[end:]
    prefix = text.rstrip("\n") + "\n\n" if text.strip() else ""
    return f"{prefix}{title}\n\n{start_marker}\n{body}\n{end_marker}\n"


def recordedCommand(module: str, argv: list[str] | None) -> str:
    """
    :param module: the benchmark's module (``benchmarks.srl_speed``)
    :param argv: the arguments its ``main`` was given (None: the command line's)
    :return: the command that reproduces the figures, as recorded beside them
    """
    return " ".join([f"python -m {module}", *(sys.argv[1:] if argv is None else argv)])


def makeCommands(target: str, makefile: str = MAKEFILE) -> list[str]:
    """
    :param target: a Makefile target (``bench-srl-rl``)
    :param makefile: the Makefile
    :return: the Python commands of its recipe as :func:`recordedCommand` writes them (``$(PY)`` read as
        ``python``, spaces normalised); none for a missing target or Makefile
    """
    try:
        with open(makefile, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    commands, inside = [], False
    for line in lines:
        if line.startswith("\t"):
            if inside and line.strip().startswith("$(PY) "):
                commands.append(" ".join(["python", *line.split()[1:]]))
        else:
            inside = line.startswith(f"{target}:")
    return commands


def makeNote(target: str, command: str, makefile: str = MAKEFILE) -> str:
    """
    :param target: the Makefile target that runs the benchmark
    :param command: the recorded command (:func:`recordedCommand`)
    :param makefile: the Makefile
    :return: `` (also run by `make TARGET`)`` when the target runs exactly this command, else empty: a command with
        other options made other figures
    """
    return f" (also run by `make {target}`)" if " ".join(command.split()) in makeCommands(target, makefile) else ""


def shownCommand(command: list[str]) -> str:
    """
    :param command: a command line without the interpreter
    :return: it as typed in a shell, with ``python`` in front
    """
    return " ".join(["python", *(shlex.quote(part) for part in command)])


def loadNow() -> float:
    """:return: the machine's 1-minute load average (nan where the platform has none)"""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def loadSpanText(load_start: float) -> str:
    """:param load_start: :func:`loadNow` when the measurement started
    :return: ``Load average 0.5 at the start, 1.5 at the end`` (the end: now), for a report's notes"""
    return f"Load average {load_start:.1f} at the start, {loadNow():.1f} at the end"


def shownPath(path: str, base: str | None = None) -> str:
    """:return: ``path`` as a benchmark prints it: relative to ``base`` (None: the working folder) when inside it, else
    absolute (a results file in /tmp read ``../../tmp/...``)"""
    relative = os.path.relpath(os.path.abspath(path), base)
    return os.path.abspath(path) if relative == ".." or relative.startswith(".." + os.sep) else relative


def appendReport(title: str, command: str, notes: str, table: str, packages: tuple[str, ...] = ("pybullet", "numpy",
                 "gymnasium"), path: str = BENCH_FILE, target: str = "bench") -> None:
    """
    Append a dated section with the command, the machine and the table to docs/benchmarks.md (or ``path``), and say
    where on stdout (``appended to FILE``, :func:`shownPath`): every appending benchmark says it the same.

    :param title: section title
    :param command: the command that produced the figures
    :param notes: how they were measured (one paragraph)
    :param table: markdown table
    :param packages: distributions whose versions to record
    :param path: the markdown file (created with a title line if missing)
    :param target: the Makefile target that runs the benchmark (named when it runs this very command)
    """
    section = (f"\n## {title} ({datetime.datetime.now():%Y-%m-%d %H:%M})\n\n"
               f"- Command: `{command}`{makeNote(target, command)}\n"
               f"- Machine: {machineDescription(packages)}\n"
               f"- {notes}\n\n{table}\n")
    rewriteDocument(path, lambda text: text + section, BENCH_TITLE)
    print(f"appended to {shownPath(path)}", flush=True)
