"""Shared by the env speed benchmarks (env_speed, kuka_speed): an env family measured beside its bare PyBullet loop.

Each mode of an env is measured alternately with the bare loop that does the same simulation work, so that machine
noise hits both alike; the table gives the median steps/s of each and their ratio, and goes to docs/benchmarks.md
through benchmarks.documents.
"""
from __future__ import annotations

import functools
import statistics
from typing import Any

from benchmarks.documents import addResultsArguments, appendReport, machineDescription, recordedCommand, resultsPath
from environments import getEnvClass
from srl_toolbox.cli import CLIParser, positiveFloat


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
                        notes: Any, table: Any = ratioTable, description: str | None = None) -> list[dict[str, Any]]:
    """
    The command line shared by the env-family benchmarks: measure, print the table and its notes, append them to
    docs/benchmarks.md.

    :param argv: command-line arguments (default: sys.argv[1:])
    :param script: the script's module (``benchmarks.env_speed``), for the recorded command
    :param title: section title
    :param family: env ids measured by default
    :param run: ``run(seconds, env_ids) -> rows``
    :param notes: ``notes(seconds) -> str``, how the figures were measured
    :param table: ``table(rows) -> str``, the markdown table of the rows (default :func:`ratioTable`)
    :param description: what ``--help`` says the command does, in whole sentences (default: the title)
    :return: the measured rows
    :raises UsageError: bad input (an env outside the family, a duration that is not positive), before any work
    """
    parser = CLIParser(prog=f"python -m {script}", description=description or title)
    parser.add_argument("--seconds", type=positiveFloat, default=3.0, help="duration of each measurement [3]")
    parser.add_argument("--env", nargs="+", default=list(family), choices=family, metavar="ENV",
                        help=f"envs to measure, of {', '.join(family)} [the whole family]")
    addResultsArguments(parser, "the results")
    args = parser.parse_args(argv)
    print(f"Machine: {machineDescription()}")
    text = table(rows := run(args.seconds, args.env))
    print(text)
    print(notes(args.seconds))  # (how the figures were measured: printed with --no-append too)
    if not args.no_append:
        command = recordedCommand(script, argv)
        appendReport(title, command, notes(args.seconds), text, path=resultsPath(args))
    return rows
