"""``python -m replay.compare_plots -i A.npz B.npz ... [--labels ...] [-o compare.png]``: aggregated curves together.

Each ``.npz`` comes from ``replay.aggregate_plots`` (curves of one method over seeds); each becomes its mean curve
with a 95% confidence band across seeds, all on one figure. The curves must share their x unit (episodes or
timesteps), their kind (training or evaluation) and, for training curves, their moving-average window (files
written before the window was saved are taken to match any, and one on timesteps beside newer files gets a warning:
it put episodes at the summed lengths of all envs); ``--truncate-x`` cuts them at a common x.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from replay.aggregate_plots import plotCurves
from replay.results import EVALUATION_Y_LABEL, TRAINING_Y_LABEL, curvesYLabel, loadCurves, plural
from srl_toolbox.cli import CLIParser, UsageError, checkOutputFile, nonEmptyText, positiveInt, runCommand
from srl_toolbox.terminal import HeldWarnings


def buildParser() -> CLIParser:
    """:return: the command's parser"""
    result = CLIParser(prog="python -m replay.compare_plots",
                       description="Several aggregated learning curves (.npz of aggregate_plots) on one PNG.")
    result.add_argument("-i", "--input", nargs="+", required=True, metavar="NPZ", help="curves to compare")
    result.add_argument("--labels", nargs="+", type=nonEmptyText, default=None,
                        help="one label per input [their own labels]")
    result.add_argument("-o", "--output", type=nonEmptyText, default="compare.png", help="the PNG to write [compare.png]")
    result.add_argument("-t", "--title", default=None,
                        help="figure title [the inputs' envs, with (deterministic evaluations) for evaluation curves, "
                             "as aggregate_plots titles its figures]")
    result.add_argument("--truncate-x", type=positiveInt, default=None, help="draw only x <= this value")
    return result


def _byValue(paths: Sequence[str], values: Sequence[Any]) -> dict[Any, list[str]]:
    """:return: each value -> the input files that have it, in the inputs' order"""
    groups: dict[Any, list[str]] = {}
    for path, value in zip(paths, values):
        groups.setdefault(value, []).append(path)
    return groups


def _named(groups: dict[Any, list[str]]) -> str:
    """:return: ``VALUE: FILE, FILE; VALUE: FILE`` (sorted by value), the form every mismatch error names its files
    in"""
    return "; ".join(f"{value}: {', '.join(paths)}" for value, paths in sorted(groups.items(), key=lambda item:
                                                                                str(item[0])))


def checkedCurves(argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, list[tuple[str, Any, Any]], str, str]:
    """
    The command's checks: its flags and its inputs; nothing is written.

    :param argv: command-line arguments (default: sys.argv[1:])
    :return: the parsed flags, the curves (label, x, y; cut at --truncate-x), the x and y axes' labels
    :raises UsageError: bad input (one line)
    :warns: a training curve on timesteps written by an older aggregate_plots beside newer ones
    """
    args: argparse.Namespace = buildParser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.labels is not None and len(args.labels) != len(args.input):
        raise UsageError(f"--labels: {plural(len(args.labels), 'label')} for {plural(len(args.input), 'input')}; "
                         f"give one per input")
    if not args.output.lower().endswith(".png"):
        raise UsageError(f"--output {args.output!r} must end in .png")
    checkOutputFile(args.output, "--output")
    loaded = [loadCurves(path) for path in args.input]
    units = _byValue(args.input, [curves["x_label"] or "episodes" for curves in loaded])
    if len(units) > 1:
        raise UsageError(f"the inputs mix x units ({_named(units)}); re-run aggregate_plots with the same --timesteps "
                         "choice for all")
    kinds = _byValue(args.input, [curves["y_label"] for curves in loaded])
    if len(kinds) > 1:
        raise UsageError(f"the inputs mix training and evaluation curves ({_named(kinds)}); compare like with like "
                         "(aggregate_plots writes the evaluations' as *_evaluation.npz)")
    smoothed = [(path, data["episode_window"]) for path, data in zip(args.input, loaded)
                if data["episode_window"] is not None]
    windows = _byValue([path for path, _ in smoothed], [window for _, window in smoothed])
    older = [path for path, data in zip(args.input, loaded) if data["episode_window"] is None
             and data["y_label"] == TRAINING_Y_LABEL and data["x_label"] == "timesteps"]
    if windows and older:  # (training curves saved before the window was: their episodes at the summed lengths)
        warnings.warn(f"{', '.join(older)}: written by an older aggregate_plots, which put a training episode at the "
                      f"sum of the episode lengths so far, earlier than the run's step with --num-cpu above 1 (the "
                      f"other inputs count all envs together); re-run aggregate_plots on its runs to compare them")
    if len(windows) > 1:
        raise UsageError("the inputs are smoothed over different episode windows (" + "; ".join(
            f"{window} episodes: {', '.join(paths)}" for window, paths in sorted(windows.items())) + "); re-run "
            "aggregate_plots with the same --episode-window for all")
    curves = []
    for index, (path, data) in enumerate(zip(args.input, loaded)):
        label = args.labels[index] if args.labels else (data["label"] or os.path.splitext(os.path.basename(path))[0])
        if data["env"] and not args.labels and len({c["env"] for c in loaded}) > 1:
            label = f"{data['env']} {label}"
        x, y = data["x"], data["y"]
        if args.truncate_x is not None:
            keep = x <= args.truncate_x
            if not keep.any():
                raise UsageError(f"--truncate-x {args.truncate_x}: {path} starts at x = {x[0]:g}")
            x, y = x[keep], y[:, keep]
        curves.append((label, x, y))
    known = next(iter(windows)) if windows and all(data["episode_window"] is not None for data in loaded) else None
    if args.title is None:
        envs = sorted({data["env"] for data in loaded if data["env"]})
        args.title = (", ".join(envs) or "Learning curves") + (
            " (deterministic evaluations)" if next(iter(kinds)) == EVALUATION_Y_LABEL else "")
    return args, curves, next(iter(units)), curvesYLabel(next(iter(kinds)), known)


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    :raises UsageError: bad input (one line), before any warning of the checks is shown (they are once the checks
        pass)
    """
    with HeldWarnings():
        args, curves, x_label, y_label = checkedCurves(argv)
    plotCurves(args.output, curves, args.title, x_label, y_label=y_label)
    print(f"Plot: {args.output}")
    return 0


if __name__ == "__main__":
    runCommand(main)
