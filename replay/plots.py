"""``python -m replay.plots -i RUN|DIR``: the learning curves of one run, or of every run below a folder.

For each run, one PNG titled with the run's env, SRL model, algorithm and path as given (``logs/a/ppo2/run``), with
two panels, episode reward against env steps and against wall time, raw (light) and smoothed (moving average over
``--episode-window`` episodes), read from the run's monitor CSVs; a run trained with ``--eval-freq`` also shows its
deterministic evaluations (evaluations.npz: mean and standard deviation of each evaluation's episodes) on the
env-steps panel; one that finished no training episode yet (a run shorter than its env's episodes) is drawn with its
evaluations alone, and one with neither is skipped. An episode's env step is the run's step count when it ended, all
envs together (``--num-cpu N``: N times its env's own steps, from the run's args.json; a folder without one: the sum
of the episode lengths so far). With ``--vis`` the same curves go to a visdom server too (one pair of windows per run
in the visdom environment ``--vis-env``, with the PNG's title; their ids are unique per run folder, so runs of the
same folder name, drawn by one call or by several into the same environment, never overwrite each other); ``--no-vis``
(train's flag) is accepted and keeps the default, PNGs only. With ``--output-dir`` the PNGs are named after the
runs' paths below ``-i`` (``outputPaths``: never one name for two runs).

A run is a folder whose ``monitor/`` holds SB3 ``*.monitor.csv`` files (what ``rl_baselines.train`` writes), or a
folder holding such files itself, unless a run holds that folder (its ``monitor/``: refused, naming the run, as the
other tools refuse a folder inside a run). Comparing runs (seeds, methods) is the job of replay.aggregate_plots and
replay.compare_plots; this command draws each run alone.

    python -m replay.plots -i logs/MobileRobotGymEnv-v0/ground_truth/ppo2/25-01-01_12h00_00_seed0
    python -m replay.plots -i logs/ --output-dir plots/ --vis --port 8097
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import sys
import urllib.parse
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from tqdm import tqdm

from replay.results import (
    distinctStems,
    identityDigest,
    loadRunEvaluations,
    plural,
    runProgress,
    sweepFailure,
    warnNanRewards,
)
from rl_baselines.core.run_folder import MANIFEST_FILE, RunFolder, insideRunRefusal, readRunArgs
from rl_baselines.runs.monitor_files import MONITOR_SUFFIX, MonitorFileError, loadEpisodes, runEnvsOf
from srl_toolbox.cli import (
    DEFAULT_VISDOM_PORT,
    CLIParser,
    UsageError,
    addOptInVisdomFlags,
    addVisdomArguments,
    checkFolderName,
    checkOutputFiles,
    nonEmptyText,
    positiveInt,
    pythonCommand,
    runCommand,
    visdomEnvName,
)
from srl_toolbox.files import atomicPath, readJson
from srl_toolbox.plots import (
    STEPS_AXIS_LABEL,
    atLastOfStep,
    describe,
    movingAverage,
    quietVisdom,
    smoothedLabel,
    visdomClientClass,
)
from srl_toolbox.terminal import HeldWarnings

PNG_NAME = "learning_curves.png"
DEFAULT_WINDOW = 40
TITLE_WIDTH = 110  # characters of a PNG title's line: the figure (1200 px) shows about 130
# Wall time is shown in the largest unit that keeps the axis readable: (seconds per unit, label)
_TIME_UNITS = ((3600.0, "hours"), (60.0, "minutes"), (1.0, "seconds"))


def monitorFolder(folder: str) -> str | None:
    """
    :param folder: a candidate run folder
    :return: the folder holding its monitor CSVs (``folder/monitor`` or ``folder`` itself), or None if none
    """
    for candidate in (RunFolder(folder).monitor_dir, folder):
        if glob.glob(os.path.join(glob.escape(candidate), f"*{MONITOR_SUFFIX}")):
            return candidate
    return None


def findRunFolders(path: str) -> list[str]:
    """
    :param path: a run folder, or a folder with runs anywhere below it
    :return: the run folders, sorted (a run's own subfolders, such as checkpoints/, are not searched)
    """
    if monitorFolder(path) is not None:
        return [path]
    runs = []
    for folder, subfolders, _ in os.walk(path):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        if folder != path and monitorFolder(folder) is not None:
            runs.append(folder)
            subfolders.clear()
    return sorted(runs)


def runName(run_dir: str) -> str:
    """
    :param run_dir: a run folder, as found below (or at) the folder given with ``-i``
    :return: how the titles name it: its path as given, normalised (``logs/a/ppo2/run``), so that runs of the same
        folder name are told apart; its absolute path when that path names no folder (``-i .``, ``-i ..``)
    """
    path = os.path.normpath(run_dir)
    return os.path.abspath(path) if os.path.basename(path) in (os.curdir, os.pardir) else path


def runTitle(run_dir: str) -> str:
    """
    :param run_dir: a run folder
    :return: the title of its PNG and of its visdom windows: "env srl_model algo (path)" from its args.json, or the
        path alone (the path: :func:`runName`)
    """
    name = runName(run_dir)
    try:
        args = readJson(RunFolder(run_dir).args_file)
    except (OSError, ValueError):
        return name
    parts = [str(args[key]) for key in ("env", "srl_model", "algo") if isinstance(args, dict) and key in args]
    return f"{' '.join(parts)} ({name})" if parts else name


def visdomRunId(run_dir: str, root: str) -> str:
    """
    :param run_dir: a run folder found below (or at) ``root``
    :param root: the folder given with ``-i``
    :return: the id of the run's visdom windows: its path relative to the parent of ``root`` (readable), then a
        digest of its real path, so that two run folders never share a window, whether their relative paths are the
        same (two calls, ``-i logs/a/ppo2/run`` and ``-i logs/b/ppo2/run``) or only read alike once the characters
        visdom ids cannot hold become ``_`` (``a/b/run`` and ``a_b/run``); the same folder keeps its windows
    """
    readable = os.path.relpath(run_dir, os.path.dirname(os.path.abspath(root)))
    return f"{readable}_{identityDigest(os.path.realpath(run_dir))}"


def _titleLines(title: str, width: int = TITLE_WIDTH) -> str:
    """
    :param title: a figure title (a long one names a run by its absolute path)
    :param width: most characters of a line
    :return: the title on as many lines as it takes, broken after a space or a ``/`` (a longer part, anywhere), so
        that no part of it falls outside the figure
    """
    lines = [""]
    for part in re.split(r"(?<=[ /])", title):
        while len(lines[-1]) + len(part) > width:
            if lines[-1].strip():
                lines.append("")
            else:
                lines[-1], part = part[:width], part[width:]
                lines.append("")
        lines[-1] += part
    return "\n".join(line.rstrip() for line in lines if line.strip())


def _timeUnit(seconds: np.ndarray) -> tuple[float, str]:
    """
    :param seconds: wall times
    :return: (seconds per unit, unit name) so that the largest time is at least 2 units
    """
    longest = float(seconds.max()) if seconds.size else 0.0
    for scale, label in _TIME_UNITS:
        if longest >= 2 * scale:
            return scale, label
    return 1.0, "seconds"


def plotRun(episodes: dict[str, np.ndarray], window: int, path: str, title: str = "",
            evaluations: dict[str, np.ndarray] | None = None) -> str:
    """
    Write the two learning curves of a run as one PNG, atomically. Needs no display.

    :param episodes: arrays ``timesteps``, ``rewards``, ``times`` of
        :func:`rl_baselines.runs.monitor_files.loadEpisodes` (empty: the evaluations alone, and a panel saying so; one
        episode: its point marked, a line of one point draws nothing)
    :param window: episodes of the moving average
    :param path: the PNG file (its folder is created)
    :param title: figure title
    :param evaluations: the run's evaluations.npz arrays (drawn on the env-steps panel), None for none
    :return: ``path``
    """

    rewards = episodes["rewards"]
    smoothed = movingAverage(rewards, window)
    scale, unit = _timeUnit(episodes["times"])
    figure = Figure(figsize=(12, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes_pair = figure.subplots(1, 2, sharey=True)
    for axes, x, label in ((axes_pair[0], episodes["timesteps"], STEPS_AXIS_LABEL),
                           (axes_pair[1], episodes["times"] / scale, f"Wall time ({unit})")):
        if rewards.size:  # the episodes as points (several envs end theirs at one step), the average as a line
            axes.plot(x, rewards, color="tab:blue", alpha=0.35, linestyle="none", marker=".", markersize=4,
                      label="episode reward")
            axes.plot(x, atLastOfStep(x, smoothed), color="tab:blue", linewidth=2,
                      marker="o" if rewards.size == 1 else None, label=smoothedLabel(rewards.size, window))
        elif axes is axes_pair[1] or evaluations is None:
            axes.text(0.5, 0.5, "no finished training episode", ha="center", va="center", transform=axes.transAxes)
        axes.set_xlabel(label)
        axes.grid(True, alpha=0.3)
    if evaluations is not None:
        results = evaluations["results"]
        axes_pair[0].errorbar(evaluations["timesteps"], results.mean(axis=1), yerr=results.std(axis=1),
                              color="tab:orange", marker="o", markersize=4, capsize=3, linewidth=1.5,
                              label=f"evaluation mean ± std ({plural(results.shape[1], 'deterministic episode')})")
    axes_pair[0].set_ylabel("Episode reward")
    handles, labels = axes_pair[0].get_legend_handles_labels()  # below the panels: it never hides a curve
    if labels:
        figure.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize="small")
    if title:
        figure.suptitle(_titleLines(title))
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    with atomicPath(path) as tmp_path:
        figure.savefig(tmp_path, format="png")
    os.chmod(path, 0o644)
    return path


class VisdomRunPlots:
    """
    Sends the runs' curves to a visdom server; an unreachable server costs one warning, and the PNGs are still
    written.

    :param port: the server's port
    :param env_name: the visdom environment that receives every run's windows
    """

    def __init__(self, port: int, env_name: str) -> None:
        self.port = port
        self.env_name = env_name
        self._viz: Any = None
        self.enabled = True

    def _warn(self, error: BaseException) -> None:
        self.enabled = False
        warnings.warn(f"The visdom server at http://127.0.0.1:{self.port} cannot be reached ({describe(error)}); the "
                      f"PNGs are still written. Start one with `{pythonCommand()} -m replay.visdom_server --port "
                      f"{self.port}`",
                      UserWarning, stacklevel=3)

    def send(self, run_id: str, episodes: dict[str, np.ndarray], window: int, title: str,
             evaluations: dict[str, np.ndarray] | None = None) -> None:
        """
        Draw one run: window ``<run_id>_steps`` (reward against env steps) and ``<run_id>_time`` (wall time) when it
        has episodes, and with evaluations ``<run_id>_evaluation`` (mean evaluation reward against env steps).

        :param run_id: unique name of the run (window ids are made from it)
        :param episodes: the run's episodes
        :param window: episodes of the moving average
        :param title: plot title
        :param evaluations: the run's evaluations.npz arrays, None for none
        """
        if not self.enabled:
            return
        # visualize's bounded client (its requests time out) and quiet context: the live plots use the same

        rewards = episodes["rewards"]
        smoothed = movingAverage(rewards, window)
        scale, unit = _timeUnit(episodes["times"])
        safe_id = re.sub(r"[^A-Za-z0-9_-]", "_", run_id)
        try:
            with quietVisdom():
                if self._viz is None:
                    self._viz = visdomClientClass()(server="http://127.0.0.1", port=self.port, env=self.env_name,
                                                     use_incoming_socket=False, raise_exceptions=True)
                panels = (("steps", episodes["timesteps"], STEPS_AXIS_LABEL),
                          ("time", episodes["times"] / scale, f"Wall time ({unit})"))
                for suffix, x, label in panels if rewards.size else ():  # (no episode: the evaluations alone)
                    x = np.asarray(x, dtype=np.float64)
                    self._viz.line(Y=np.column_stack((rewards, atLastOfStep(x, smoothed))), X=np.column_stack((x, x)),
                                   win=f"{safe_id}_{suffix}", env=self.env_name,
                                   opts=dict(title=title, xlabel=label, ylabel="Episode reward", showlegend=True,
                                             legend=["episode reward", smoothedLabel(rewards.size, window)]))
                if evaluations is not None:
                    self._viz.line(Y=evaluations["results"].mean(axis=1),
                                   X=np.asarray(evaluations["timesteps"], dtype=np.float64),
                                   win=f"{safe_id}_evaluation", env=self.env_name,
                                   opts=dict(title=f"{title} [evaluation]", xlabel=STEPS_AXIS_LABEL, showlegend=True,
                                             ylabel="Mean evaluation reward", legend=["evaluation mean"],
                                             markers=True))
        except Exception as error:  # never let the PNGs fail because of the server
            self._warn(error)


def buildParser() -> CLIParser:
    """:return: the command's parser"""
    parser = CLIParser(prog="python -m replay.plots",
                       description="Learning curves (reward against env steps and wall time) of one run or of "
                                   "every run below a folder, as PNG and optionally in visdom.")
    parser.add_argument("-i", "--input", required=True, metavar="RUN|DIR",
                        help="a run folder, or a folder with runs below it")
    parser.add_argument("--output-dir", type=nonEmptyText, default=None,
                        help="write the PNGs here, named after each run's path below -i (a/b/run: a_b_run.png; "
                             "runs whose names would clash get a digest of their path appended) [each run's folder, "
                             f"as {PNG_NAME}]")
    parser.add_argument("--episode-window", type=positiveInt, default=None,
                        help=f"episodes of the moving average [the run's --episode-window, else {DEFAULT_WINDOW}]")
    addOptInVisdomFlags(parser, "also draw the curves in a visdom server", "PNGs only, no visdom")
    addVisdomArguments(parser, no_vis=False, port_help="visdom server port [8097]")
    parser.add_argument("--vis-env", type=visdomEnvName, default=None, help="visdom environment of the curves [plots]")
    return parser


def _runWindow(run_dir: str, override: int | None) -> int:
    if override is not None:
        return override
    value = (readRunArgs(run_dir) or {}).get("episode_window")
    return value if isinstance(value, int) and value > 0 else DEFAULT_WINDOW


def runSummary(run_dir: str, episodes: dict[str, np.ndarray], evaluations: dict[str, np.ndarray] | None) -> str:
    """
    :param run_dir: a run folder
    :param episodes: its episodes
    :param evaluations: its evaluations, None for none
    :return: e.g. "12 episodes, the last ending at step 3,000 of 3,072 trained, 6 evaluations" (the trained steps from
        the run's manifest, when it says; a run that continued a model, whose saves count the model's steps from
        before the run: "... at step 500 of this run, its model trained 2,176 steps with those of the model it
        continued"); without an episode "no finished episode, 2 evaluations, the last at step
        200 of 200 trained"; a run still training (or stopped) ends in "; unfinished, its latest model saved at step
        1,200" (or "no model saved yet"), its episodes counting past that step; a sweep run that failed ends in
        "; failed in its sweep (<why>)" instead
    """
    args = readRunArgs(run_dir)
    finished, trained = runProgress(run_dir, args) if args is not None else (True, None)
    # a continued model's saves (their manifest) count its steps before this run too, where the run's episodes count
    # from its start
    continued = bool((args or {}).get("load_rl_model_path")) and os.path.isfile(os.path.join(run_dir, MANIFEST_FILE))
    of_trained = "" if trained is None or not finished else (
        f" of this run, its model trained {trained:,} steps with those of the model it continued" if continued
        else f" of {trained:,} trained")
    unfinished = "" if finished else "; unfinished, " + (
        "no model saved yet" if trained is None else f"its latest model saved at step {trained:,}"
        + (" of its model (the model it continued included)" if continued else ""))
    failure = None if finished else sweepFailure(run_dir)
    if failure is not None:
        unfinished = f"; failed in its sweep ({failure})"
    count = f", {plural(evaluations['timesteps'].size, 'evaluation')}" if evaluations is not None else ""
    if episodes["rewards"].size == 0:
        last = f", the last at step {int(evaluations['timesteps'][-1]):,}" if evaluations is not None else ""
        return f"no finished episode{count}{last}{of_trained}{unfinished}"
    return (f"{plural(episodes['rewards'].size, 'episode')}, the last ending at step {int(episodes['timesteps'][-1]):,}"
            f"{of_trained}{count}{unfinished}")


def outputPaths(run_dirs: Sequence[str], root: str, output_dir: str | None) -> dict[str, str]:
    """
    :param run_dirs: the run folders found below (or at) ``root``, whether drawn or skipped
    :param root: the folder given with ``-i``
    :param output_dir: ``--output-dir``, None for each run's own folder
    :return: each run's PNG: ``<run>/learning_curves.png``, or in ``output_dir`` its path below ``root`` with ``/``
        made ``_`` (``a/b/run`` -> ``a_b_run.png``; ``-i`` a run: its folder name); when two runs read alike so
        (``a/b/run`` and ``a_b/run``), each of them gets ``_`` and 8 hex digits of a digest of that path appended
        (``a_b_run_<8 hex>.png``), the same from call to call (replay.results.distinctStems). Every run found counts,
        so a run's name does not change when another gets its first episode.
    """
    if output_dir is None:
        return {run_dir: os.path.join(run_dir, PNG_NAME) for run_dir in run_dirs}
    stems = _plainStems(run_dirs, root)
    distinct = distinctStems(dict(stems.values()))
    return {run_dir: os.path.join(output_dir, f"{distinct[identity]}.png") for run_dir, (identity, _) in stems.items()}


def _plainStems(run_dirs: Sequence[str], root: str) -> dict[str, tuple[str, str]]:
    """
    :param run_dirs: the run folders found below (or at) ``root``
    :param root: the folder given with ``-i``
    :return: each run -> (its identity, its path below ``root`` with ``/``; the stem of its PNG before any digest:
        that path with ``/`` made ``_``, or the folder's name when ``root`` is the run)
    """
    relatives = {run_dir: os.path.relpath(run_dir, root) for run_dir in run_dirs}
    return {run_dir: (relative.replace(os.sep, "/"), os.path.basename(os.path.abspath(run_dir)) if relative == "."
                      else relative.replace(os.sep, "_"))
            for run_dir, relative in relatives.items()}


def digestNamed(png_paths: Mapping[str, str], root: str) -> set[str]:
    """
    :param png_paths: each run's PNG (:func:`outputPaths` with ``--output-dir``)
    :param root: the folder given with ``-i``
    :return: the runs whose PNG name got a digest appended (its name alone no longer says which run it is)
    """
    return {run_dir for run_dir, (_, stem) in _plainStems(list(png_paths), root).items()
            if os.path.basename(png_paths[run_dir]) != f"{stem}.png"}


def checkedRuns(args: argparse.Namespace) -> tuple[list[tuple[str, Any, Any]], list[str], dict[str, str]]:
    """
    The command's checks: its flags, its runs and their PNG paths; nothing is written.

    :param args: the parsed command line (``vis_env`` set to its default when left out)
    :return: the runs drawn (folder, episodes, evaluations), the runs skipped for having neither an episode nor
        evaluations, and each run's PNG path
    :raises UsageError: bad input (one line): a missing input, a folder inside a run (naming the run), no run, no run
        to draw (naming those skipped for a damaged monitor file), an --output-dir that is a file or named like an
        image file, an output that cannot be written
    :warns: visdom flags without --vis; a run skipped for a damaged monitor file
    """
    if not args.vis and (args.vis_env is not None or args.port != DEFAULT_VISDOM_PORT):
        warnings.warn("--port and --vis-env choose where --vis draws; without --vis nothing is drawn in visdom")
    args.vis_env = "plots" if args.vis_env is None else args.vis_env
    if not os.path.exists(args.input):
        raise UsageError(f"-i {args.input!r} does not exist; give a run folder or a folder with runs below it")
    if not os.path.isdir(args.input):
        raise UsageError(f"-i {args.input!r} is not a folder; give a run folder or a folder with runs below it")
    # a folder inside a run (its monitor/, a checkpoint) is refused as the other tools refuse it: read alone, monitor/
    # would lose the run's --num-cpu (its step axis), evaluations and window, and get the PNG written into it
    inside = None if os.path.isfile(RunFolder(args.input).args_file) else insideRunRefusal("-i", args.input)
    if inside is not None:
        raise UsageError(f"{inside[0]}: give -i {inside[1]}")
    if args.output_dir is not None and os.path.exists(args.output_dir) and not os.path.isdir(args.output_dir):
        raise UsageError(f"--output-dir {args.output_dir!r} exists and is not a folder")
    if args.output_dir is not None:
        checkFolderName(args.output_dir, "--output-dir", f"each run's PNG is named in it after the run's path below -i "
                                                         f"(without --output-dir, {PNG_NAME} in the run folder)")
    run_dirs = findRunFolders(args.input)
    if not run_dirs:
        raise UsageError(f"no run found in or below {args.input!r} (a run folder holds monitor/*{MONITOR_SUFFIX})")
    read = []
    damaged: list[str] = []
    for run_dir in run_dirs:
        try:
            read.append((run_dir, loadEpisodes(monitorFolder(run_dir), runEnvsOf(run_dir) or 1)))
        except MonitorFileError as error:
            warnings.warn(f"skipping {run_dir}: a damaged monitor file ({error})")
            damaged.append(f"{run_dir} ({error})")
    # a run without a finished episode is drawn when it has evaluations, and skipped when it has neither
    loaded = [(run_dir, episodes, loadRunEvaluations(run_dir)) for run_dir, episodes in read]
    empty = [run_dir for run_dir, episodes, evaluations in loaded
             if not episodes["rewards"].size and evaluations is None]
    loaded = [run for run in loaded if run[0] not in empty]
    if not loaded:
        skipped = f"; {len(damaged)} of them skipped for a damaged monitor file, e.g. {damaged[0]}" if damaged else ""
        raise UsageError(f"no finished episode in the {len(run_dirs)} run(s) found in {args.input!r}, nor evaluations "
                         f"(evaluations.npz){skipped}")
    png_paths = outputPaths(run_dirs, args.input, args.output_dir)  # distinct: one per run
    checkOutputFiles([png_paths[run_dir] for run_dir, _, _ in loaded],
                     "--output-dir" if args.output_dir is not None else "-i (the run folder)")
    return loaded, empty, png_paths


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: ``sys.argv[1:]``)
    :return: exit code
    :raises UsageError: bad input (one line), before any warning of the checks is shown (they are once the checks
        pass)
    """
    with HeldWarnings():
        args = buildParser().parse_args(argv)
        loaded, empty, png_paths = checkedRuns(args)
    renamed = digestNamed(png_paths, args.input) if args.output_dir is not None else set()
    for run_dir in empty:
        print(f"skipped {run_dir}: no finished episode yet, nor evaluations")
    for run_dir, episodes, _ in loaded:
        warnNanRewards(run_dir, episodes["rewards"])

    visdom = VisdomRunPlots(args.port, args.vis_env) if args.vis else None
    # (on a terminal only: each run's line below says where it is; a bar in a file or a pipe is fragments of lines)
    for run_dir, episodes, evaluations in tqdm(loaded, unit="run", disable=len(loaded) < 2 or not sys.stderr.isatty(),
                                               leave=False):
        window, title = _runWindow(run_dir, args.episode_window), runTitle(run_dir)
        path = plotRun(episodes, window, png_paths[run_dir], title=title, evaluations=evaluations)
        if visdom is not None:  # the PNG's title: folders of the same name are told apart by their paths
            visdom.send(visdomRunId(run_dir, args.input), episodes, window, title, evaluations)
        who = f"{runName(run_dir)}: " if run_dir in renamed else ""  # a digest in the name: say which run it is
        tqdm.write(f"{path}  ({who}{runSummary(run_dir, episodes, evaluations)})")
    if visdom is not None and visdom.enabled:
        print(f"visdom: environment {args.vis_env!r} at http://127.0.0.1:{args.port}/env/"
              f"{urllib.parse.quote(args.vis_env, safe='')}")
    return 0


if __name__ == "__main__":
    runCommand(main)
