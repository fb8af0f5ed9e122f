"""``python -m replay.aggregate_plots -i DIR``: learning curves averaged over seeds, one PNG per env.

Every run below DIR (args.json + monitor/) is smoothed (moving average over ``--episode-window`` episodes); runs of
one method (env, srl-model, algo) are put on a common x axis, episodes or ``--timesteps``, truncated to the
shortest run, and drawn as their mean with a Student-t 95% confidence band across seeds. All methods of an env share
one figure, whose y axis names the window and spans the runs' own values (a wider band is cut at its edges). Each
method's curves are also exported as ``.npz`` (x; y = runs x points; label; env; x_label; y_label; runs;
episode_window) for ``replay.compare_plots``. With ``--timesteps`` the x axis is the
run's env steps, all envs together (a training episode counts at the run's step count when it ended: replay.results).

Methods whose runs all have deterministic evaluations (``train --eval-freq``: evaluations.npz) also get their
evaluation curves: the mean evaluation reward against env steps, at the evaluation steps all runs share, with the
same band, in ``PREFIX_<env>_evaluation.png`` and ``PREFIX_<env>_<algo>_<srl-model>_evaluation.npz``; a method with
some runs lacking them gets none, with a warning naming one such run. Such a method's runs without a finished training
episode (runs shorter than their env's episodes) count in its evaluation curve only: its training curve averages the
others, or is not drawn when none has an episode. A method measured on training episodes leaves those runs out, with
a warning (replay.results.measuredRuns). Two methods (envs) whose files would have the same name once the characters a
file name cannot hold are made ``_`` (tags ``a b`` and ``a_b``) each get a digest appended (``_fileStems``); a method
whose name is longer than a file's can be is cut to fit, with a digest (``_fitted``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import warnings
from collections.abc import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from replay.results import (
    EVALUATION_Y_LABEL,
    TRAINING_Y_LABEL,
    Run,
    aggregateCurves,
    aggregateEvaluations,
    bandOverSeeds,
    curvesYLabel,
    distinctStems,
    findRuns,
    groupRuns,
    hasEpisodes,
    hasEvaluations,
    identityDigest,
    measuredRuns,
    methodLabel,
    plural,
    safeName,
    saveCurves,
    warnMixedMethods,
)
from srl_toolbox.cli import CLIParser, checkOutputFiles, nameMax, nonEmptyText, positiveInt, runCommand
from srl_toolbox.files import TEMPORARY_NAME_EXTRA, atomicPath
from srl_toolbox.plots import STEPS_AXIS_LABEL
from srl_toolbox.terminal import HeldWarnings

DEFAULT_NUM_POINTS = 200  # points of a --timesteps curve


def buildParser() -> CLIParser:
    """:return: the command's parser"""
    result = CLIParser(prog="python -m replay.aggregate_plots",
                       description="Mean learning curves with a 95% confidence band across seeds, one PNG per env.")
    result.add_argument("-i", "--log-dir", required=True, help="folder to walk for runs")
    result.add_argument("-o", "--output", type=nonEmptyText, default=None, metavar="PREFIX",
                        help="files are PREFIX_<env>.png and PREFIX_<env>_<algo>_<srl-model>.npz (names that would "
                             "clash get a digest appended; a PREFIX ending in .png drops it: -o c.png gives "
                             "c_<env>.png); a folder (an existing one, or ending in /) gives "
                             "FOLDER/aggregate_<env>.png [<log-dir>/aggregate]")
    result.add_argument("--timesteps", action="store_true", help="x axis in env steps instead of episodes")
    result.add_argument("--episode-window", "--episode_window", type=positiveInt, default=40,
                        help="episodes of the moving average [40]")
    result.add_argument("--num-points", type=positiveInt, default=None,
                        help=f"points of a --timesteps curve [{DEFAULT_NUM_POINTS}]")
    result.add_argument("--group-by", nargs="+", default=[], metavar="KEY",
                        help="more args.json keys that split methods (e.g. continuous_actions)")
    return result


def axisLabel(label: str) -> str:
    """
    :param label: an axis as the .npz files name it (``x_label`` "timesteps" or "episodes", a ``y_label``)
    :return: the axis' label on a figure, as the other plots write it: "Env steps", "Episodes", capitalised
    """
    return STEPS_AXIS_LABEL if label == "timesteps" else label[:1].upper() + label[1:]


def plotCurves(path: str, curves: Sequence[tuple[str, object, object]], title: str, x_label: str,
               y_label: str = TRAINING_Y_LABEL, order: Sequence[str] | None = None) -> None:
    """
    Draw mean curves with their 95% bands on one axes and save a PNG atomically.

    :param path: the PNG file
    :param curves: (label, x, y) per method, y of shape (runs, points)
    :param title: the figure's title
    :param x_label: the x axis, as the .npz files name it ("timesteps", "episodes"; drawn as :func:`axisLabel` says)
    :param y_label: the y axis, as the .npz files name it (drawn capitalised)
    :param order: every method of the figures drawn together, in the order that gives each its colour (a method keeps
        its colour in a figure that lacks some of the others); None: each curve its own colour, in the curves' order
        (labels may repeat: compare_plots' inputs)
    """

    figure = Figure(figsize=(11, 5.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    for position, (label, x, y) in enumerate(curves):
        index = list(order).index(label) if order is not None else position
        mean, low, high = bandOverSeeds(y)
        color = f"C{index % 10}"  # past 10 methods the colours repeat: dashed then
        axes.plot(x, mean, color=color, linewidth=2, linestyle="-" if index < 10 else "--",
                  marker="o" if len(x) <= 30 else None, markersize=4,  # a few points (evaluations): shown
                  label=legendLabel(label, y.shape[0]))
        if y.shape[0] >= 2:
            axes.fill_between(x, low, high, color=color, alpha=0.2, linewidth=0)
    _limitToRuns(axes, [y for _, _, y in curves])
    axes.set_xlabel(axisLabel(x_label))
    axes.set_ylabel(axisLabel(y_label))
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    # beside the axes: a legend inside would hide the curves or their bands wherever it went; its labels wrap
    # (legendLabel), so that a long one leaves the axes most of the figure's width
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), title="mean, 95% CI across seeds", fontsize="small")
    figure.tight_layout()
    with atomicPath(path) as tmp_path:  # (tight: a legend taller than the axes, long labels, is drawn whole)
        figure.savefig(tmp_path, format="png", bbox_inches="tight")


LEGEND_LABEL_CHARS = 40  # a legend label wraps past this width, so that a long one does not squeeze the axes


def legendLabel(label: str, runs: int) -> str:
    """
    :param label: a method's label (a compared file's own or --labels one: any length)
    :param runs: its runs
    :return: its legend entry, ``label (N runs)`` (``1 run, no band``: one run has no confidence band), wrapped at
        the label's spaces to LEGEND_LABEL_CHARS characters a line (a longer word, and the count, stay whole)
    """
    count = (plural(runs, "run") + (", no band" if runs < 2 else "")).replace(" ", "\N{NO-BREAK SPACE}")
    lines = textwrap.wrap(f"{label} ({count})", LEGEND_LABEL_CHARS, break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines).replace("\N{NO-BREAK SPACE}", " ")


def _limitToRuns(axes: object, ys: Sequence[np.ndarray]) -> None:
    """
    Span the y axis over the runs' own curves (every seed's values, 5% margin): with few seeds a Student-t band is
    far wider than any run (2 seeds: 12.7 times the standard error), and the axis scaled to it flattened the curves;
    a band wider than the runs is cut at the axes' edge.

    :param axes: the axes drawn on
    :param ys: each method's curves, shape (runs, points)
    """
    values = np.concatenate([np.asarray(y, dtype=np.float64).ravel() for y in ys])
    values = values[np.isfinite(values)]
    if values.size == 0 or values.max() == values.min():
        return  # nothing to span, or one value: matplotlib's own limits
    margin = 0.05 * (values.max() - values.min())
    axes.set_ylim(values.min() - margin, values.max() + margin)


FILE_ENDS = ("", "_evaluation")  # a method's (an env's) curves and evaluation curves


def _fileStems(prefix: str, groups: dict[tuple, list], group_by: Sequence[str]) -> tuple[dict[str, str],
                                                                                         dict[tuple, str]]:
    """
    :param prefix: the files' prefix (-o)
    :param groups: the methods' runs (groupRuns)
    :param group_by: the extra keys that split methods
    :return: (each env -> the stem of its figures, ``PREFIX_<env>``; each method key -> the stem of its ``.npz``,
        ``PREFIX_<env>_<algo>_<srl-model>[_<key>_<value>...]``), each followed by FILE_ENDS; where two envs or two
        methods would write files of the same name (characters a file name cannot hold become ``_``: ``--group-by
        tag`` with tags ``a b`` and ``a_b``), each of them gets a digest of its env (method) appended
        (replay.results.distinctStems), and other stems are unchanged; a method's name longer than the file system
        takes is cut to fit, with a digest (:func:`_fitted`)
    """
    envs = dict.fromkeys(key[0] for key in groups)
    figures = distinctStems({env: f"{prefix}_{safeName(env)}" for env in envs}, FILE_ENDS)
    identities = {key: json.dumps([list(key), list(group_by)]) for key in groups}
    # the most bytes a method's name may take after its env's (its longest file: _evaluation.npz, and its temporary)
    room = nameMax(os.path.dirname(prefix) or ".") - TEMPORARY_NAME_EXTRA - len(f"{FILE_ENDS[-1]}.npz")
    curves = {}
    for key in groups:
        start = f"{prefix}_{safeName(key[0])}_"
        label = safeName(methodLabel(key, group_by).replace(" ", "_"))
        curves[identities[key]] = start + _fitted(label, identities[key], room - len(os.fsencode(os.path.basename(
            start))))
    curves = distinctStems(curves, FILE_ENDS)
    return figures, {key: curves[identity] for key, identity in identities.items()}


def _fitted(name: str, identity: str, room: int) -> str:
    """
    :param name: a method's part of its files' names
    :param identity: the method's identity
    :param room: the bytes the file system leaves it
    :return: ``name``, or where it is longer than ``room`` (a long --group-by value: a search's hyperparameters) its
        start, cut to fit, then ``_`` and the first 8 hexadecimal digits of the SHA-1 of ``identity`` (the same at
        every call; the curves' files hold the whole label); unchanged where not even that fits (the prefix is too
        long: refused as given)
    """
    encoded = os.fsencode(name)
    if len(encoded) <= room or room < 10:
        return name
    return f"{encoded[:room - 9].decode('utf-8', 'ignore')}_{identityDigest(identity)}"


def checkedInputs(argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, dict[tuple, list[Run]],
                                                              dict[str, str], dict[tuple, str]]:
    """
    The command's checks: its flags, its runs and its output files; nothing is written.

    :param argv: command-line arguments (default: sys.argv[1:])
    :return: the parsed flags, the runs by method (groupRuns), each env's figure stem and each method's curve stem
    :raises UsageError: bad input (one line)
    :warns: the runs skipped, methods that mix settings, and --num-points without --timesteps (it does nothing)
    """
    args: argparse.Namespace = buildParser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.num_points is not None and not args.timesteps:
        warnings.warn(f"--num-points {args.num_points} sets the points of a --timesteps curve; without --timesteps "
                      "a curve has a point per episode, and it does nothing")
    args.num_points = args.num_points or DEFAULT_NUM_POINTS
    runs = measuredRuns(findRuns(args.log_dir, args.group_by, evaluation_only=True), args.group_by)
    prefix = args.output or os.path.join(args.log_dir, "aggregate")
    if args.output and (args.output.endswith(("/", os.sep)) or os.path.isdir(args.output)):
        prefix = os.path.join(args.output, "aggregate")  # a folder, as the other tools' --output-dir: files in it
    elif args.output and args.output.lower().endswith(".png"):
        prefix = args.output[:-len(".png")]  # -o curves.png: curves_<env>.png (one PNG per env), not curves.png_<env>
    groups = groupRuns(runs, args.group_by)
    warnMixedMethods(groups, args.group_by)
    figure_stems, curve_stems = _fileStems(prefix, groups, args.group_by)  # each file written once
    checkOutputFiles([f"{stem}{end}.{extension}" for stems, extension in ((curve_stems, "npz"), (figure_stems, "png"))
                      for stem in stems.values() for end in FILE_ENDS], "-o/--output" if args.output else "--log-dir")
    return args, groups, figure_stems, curve_stems


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    :raises UsageError: bad input (one line), before any warning of the checks is shown (they are once the checks
        pass)
    """
    with HeldWarnings():
        args, groups, figure_stems, curve_stems = checkedInputs(argv)
    x_label = "timesteps" if args.timesteps else "episodes"
    by_env: dict[str, list[tuple[str, object, object]]] = {}
    evaluations_by_env: dict[str, list[tuple[str, object, object]]] = {}
    methods: dict[str, list[str]] = {}  # env -> its methods' labels, in the order that gives each its colour
    for key in groups:
        methods.setdefault(key[0], []).append(methodLabel(key, args.group_by))
    for key, members in groups.items():
        env, label = key[0], methodLabel(key, args.group_by)
        trained = [run for run in members if hasEpisodes(run)]  # (the others count by their evaluations only)
        if not trained:
            print(f"{env} {label}: no training curve, none of its {plural(len(members), 'run')} "
                  f"finished a training episode")
        elif len(trained) < len(members):
            warnings.warn(f"{env} {label}: {len(members) - len(trained)} of its {len(members)} runs finished no "
                          f"training episode, and count in its evaluation curve only, e.g. "
                          f"{next(run.path for run in members if not hasEpisodes(run))}")
        curve = None
        if trained:
            try:
                curve = aggregateCurves(trained, args.episode_window, args.timesteps, args.num_points)
            except ValueError as error:  # (runs that share no step)
                print(f"{env} {label}: no training curve, {error}")
        if curve is not None:
            x, y = curve
            npz_path = f"{curve_stems[key]}.npz"
            saveCurves(npz_path, x, y, label, env, x_label, [run.path for run in trained], window=args.episode_window)
            print(f"{env} {label}: {plural(len(trained), 'run')}, {plural(len(x), 'point')} -> {npz_path}")
            by_env.setdefault(env, []).append((label, x, y))
        lacking = [run.path for run in members if run.evaluations is None]
        if 0 < len(lacking) < len(members):
            warnings.warn(f"{env} {label}: no evaluation curve, {len(lacking)} of its {len(members)} runs have no "
                          f"evaluations (evaluations.npz), e.g. {lacking[0]}")
        if hasEvaluations(members):
            try:
                x, y = aggregateEvaluations(members)
            except ValueError as error:
                print(f"{env} {label}: no evaluation curve, {error}")
                continue
            npz_path = f"{curve_stems[key]}_evaluation.npz"
            saveCurves(npz_path, x, y, label, env, "timesteps", [run.path for run in members], EVALUATION_Y_LABEL)
            print(f"{env} {label}: {plural(len(members), 'run')}, {plural(len(x), 'evaluation')} -> {npz_path}")
            evaluations_by_env.setdefault(env, []).append((label, x, y))
    # a figure whose name got a digest (envs named alike) says which env it is
    which = {env: "" if stem.endswith(f"_{safeName(env)}") else f" ({env})" for env, stem in figure_stems.items()}
    for env, curves in by_env.items():
        png_path = f"{figure_stems[env]}.png"
        plotCurves(png_path, curves, env, x_label, y_label=curvesYLabel(TRAINING_Y_LABEL, args.episode_window),
                   order=methods[env])
        print(f"Plot: {png_path}{which[env]}")
    for env, curves in evaluations_by_env.items():
        png_path = f"{figure_stems[env]}_evaluation.png"
        plotCurves(png_path, curves, f"{env} (deterministic evaluations)", "timesteps", y_label=EVALUATION_Y_LABEL,
                   order=methods[env])  # each method in its training figure's colour
        print(f"Evaluation plot: {png_path}{which[env]}")
    return 0


if __name__ == "__main__":
    runCommand(main)
