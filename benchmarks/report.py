"""Shared by the benchmark scripts: describe the machine and append a dated section to docs/benchmarks.md."""
from __future__ import annotations

import argparse
import datetime
import functools
import importlib.metadata
import os
import platform
import statistics
import sys
from typing import Any

BENCH_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "benchmarks.md")


def machineDescription(packages: tuple[str, ...] = ("pybullet", "numpy", "gymnasium")) -> str:
    """
    :param packages: distributions whose versions matter for the figures
    :return: CPU model, usable cores, Python and library versions, on one line
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
    return f"{cpu}, nproc {cores}, Python {platform.python_version()}, {versions}"


def appendReport(title: str, command: str, notes: str, table: str, packages: tuple[str, ...] = ("pybullet", "numpy",
                 "gymnasium"), path: str = BENCH_FILE, target: str = "bench") -> None:
    """
    Append a dated section with the command, the machine and the table to docs/benchmarks.md.

    :param title: section title
    :param command: the command that produced the figures
    :param notes: how they were measured (one paragraph)
    :param table: markdown table
    :param packages: distributions whose versions to record
    :param path: the markdown file (created with a title line if missing)
    :param target: the Makefile target that runs the benchmark
    """
    from srl_toolbox.files import atomicPath

    section = (f"\n## {title} ({datetime.datetime.now():%Y-%m-%d %H:%M})\n\n"
               f"- Command: `{command}` (also run by `make {target}`)\n"
               f"- Machine: {machineDescription(packages)}\n"
               f"- {notes}\n\n{table}\n")
    from srl_toolbox.locks import acquireLock, lockPathFor

    # Two benchmarks that finish together take turns (a lock on the report), so neither section is lost.
    lock = acquireLock(lockPathFor(path))
    try:
        previous = "# srl-toolbox benchmarks\n"
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                previous = handle.read()
        # Rewritten whole through a temporary file rather than appended: a kill half-way never leaves a cut section.
        with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8") as report:
            report.write(previous + section)
    finally:
        lock.release()


def compareWithBare(modes: tuple, bench_env: Any, bench_bare: Any, seconds: float, repetitions: int,
                    actions: list[int]) -> list[dict[str, Any]]:
    """
    Measure an env beside its bare PyBullet loop for each mode, interleaved so that machine noise hits both alike.

    :param modes: (label, srl_model, image side) triples
    :param bench_env: ``bench_env(srl_model, side, seconds, actions) -> steps/s`` of the env
    :param bench_bare: the same for the bare loop
    :param seconds: duration of each measurement
    :param repetitions: measurements per mode (the median is kept)
    :param actions: pre-drawn actions, reused cyclically
    :return: one row per mode: mode, env (steps/s), bare (steps/s), ratio
    """
    rows = []
    for label, srl_model, side in modes:
        env_rates, bare_rates = [], []
        for _ in range(repetitions):
            env_rates.append(bench_env(srl_model, side, seconds, actions))
            bare_rates.append(bench_bare(srl_model, side, seconds, actions))
        env_rate, bare_rate = statistics.median(env_rates), statistics.median(bare_rates)
        rows.append({"mode": label, "env": env_rate, "bare": bare_rate, "ratio": env_rate / bare_rate})
        print(f"  {label}: env {env_rate:,.0f} steps/s, bare {bare_rate:,.0f} steps/s", flush=True)
    return rows


def compareFamily(env_ids: list[str], modes: tuple, bench_env: Any, bench_bare: Any, seconds: float,
                  repetitions: int, actions: list[int]) -> list[dict[str, Any]]:
    """
    :func:`compareWithBare` for several envs, their id prefixed to the mode labels.

    :param env_ids: registered env ids
    :param modes: (label, srl_model, image side) triples
    :param bench_env: ``bench_env(env_class, srl_model, side, seconds, actions) -> steps/s``
    :param bench_bare: the same for the bare loop on that env's scene
    :param seconds: duration of each measurement
    :param repetitions: measurements per mode (the median is kept)
    :param actions: pre-drawn actions, reused cyclically
    :return: one row per env and mode
    """
    from environments import getEnvClass

    rows = []
    for env_id in env_ids:
        env_class = getEnvClass(env_id)
        env_modes = tuple((f"{env_id} {label}", srl_model, side) for label, srl_model, side in modes)
        rows += compareWithBare(env_modes, functools.partial(bench_env, env_class),
                                functools.partial(bench_bare, env_class), seconds, repetitions, actions)
    return rows


def ratioTable(rows: list[dict[str, Any]]) -> str:
    """
    :param rows: as returned by :func:`compareWithBare`
    :return: a markdown table
    """
    lines = ["| mode | env steps/s | bare PyBullet steps/s | ratio env/bare |", "|---|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['mode']} | {row['env']:,.0f} | {row['bare']:,.0f} | {row['ratio']:.2f} |")
    return "\n".join(lines)


def familyBenchmarkMain(argv: list[str] | None, script: str, title: str, family: tuple[str, ...], run: Any,
                        notes: Any) -> list[dict[str, Any]]:
    """
    The command line shared by the env-family benchmarks: measure, print the table, append it to docs/benchmarks.md.

    :param argv: command-line arguments (default: sys.argv[1:])
    :param script: the script's path, for the recorded command
    :param title: section title
    :param family: env ids measured by default
    :param run: ``run(seconds, env_ids) -> rows``
    :param notes: ``notes(seconds) -> str``, how the figures were measured
    :return: the measured rows
    """
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each measurement (default 3)")
    parser.add_argument("--env", nargs="+", default=list(family), help="envs to measure [the whole family]")
    parser.add_argument("--no-append", action="store_true", help="do not append the results to docs/benchmarks.md")
    args = parser.parse_args(argv)
    print(f"Machine: {machineDescription()}")
    table = ratioTable(rows := run(args.seconds, args.env))
    print(table)
    if not args.no_append:
        command = " ".join([f"python {script}", *(sys.argv[1:] if argv is None else argv)])
        appendReport(title, command, notes(args.seconds), table)
        print(f"appended to {os.path.relpath(BENCH_FILE)}")
    return rows
