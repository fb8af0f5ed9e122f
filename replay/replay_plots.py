"""What ``replay.enjoy_baselines --plotting`` draws: the first env's agent, step by step, live in visdom and as PNG.

Two figures, each titled with the run (algorithm, env, SRL model) on one line and what is drawn on the next (a line
longer than the figure is wide wraps):

- the action probabilities over time, from the algorithm's ``getActionProba``: for discrete actions the probability
  of each action, stacked (the areas add up to 1), each named ``<index>: <name>`` after the env's ``actionNames()``
  (``action <index>`` where the env names none), the legend above the plot; for continuous actions what the
  contract returns there, the mean action, one panel per action dimension (labelled ``<index>: <name>`` after the
  env's ``actionNames()``, ``action <index>`` where it names none), with the actions actually taken as dots
  (their spread around the mean is the exploration noise; with ``--deterministic`` they sit on it). Algorithms
  without an action distribution (``getActionProba`` raises NotImplementedError: td3, ddpg, qrdqn, the random agent)
  get no such figure, and one note;
- the trajectory in the ground-truth state space, read from the env itself (``getGroundTruth`` and ``getTargetPos``
  through ``VecEnv.env_method``) whatever the agent observes (pixels, a learned SRL state): each point is a state in
  which the agent acted, coloured by the reward that action earned, with the episode's path as a thin line and the
  target as a star (a line target, the env's ``TARGET_LINE_AXIS``, as a dashed line; a target that moves within its
  episode, as KukaMovingButton's button or CarRacing's point ahead, as its path: a crimson line). ``PLOT_TYPE`` of
  the env class says 2D or 3D; a 1-D ground truth is drawn against the step, the target's x as a dashed crimson line
  over the steps (broken between episodes, so that a target drawn anew at each reset shows where it was). Axes are
  in the env's ``GROUND_TRUTH_UNIT`` (``x (m)``) where it declares one. A 2D trajectory is oriented as the env's
  top-down frames show the scene where its ``GROUND_TRUTH_VIEW`` says how (MobileRobot: y to the right, x down),
  else x to the right and y up (:func:`planeAxes`).

Live: every ``LIVE_EVERY`` steps and at the end, in the visdom environment given (windows ``<env>_action_proba``
and ``<env>_trajectory``, characters other than letters, digits, ``-`` and ``_`` becoming ``_``; the same action
names, units and target, a 1-D target as red points at each step); an unreachable server costs one warning
(VisdomPlotter's connection handling) and the PNGs are written all the same.
"""
from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from rl_baselines.core.base import actionMaskKeywords
from srl_toolbox.files import atomicPath

# The learning-curve plotter's helpers, reused so that every plotter connects, subsamples and reports alike.
from srl_toolbox.plots import VisdomPlotter, describe, quietVisdom, subsample

ACTION_PROBA_PNG = "action_proba.png"
TRAJECTORY_PNG = "trajectory.png"
LIVE_EVERY = 50  # steps between two visdom redraws (each resends the whole history, subsampled)
MAX_LIVE_POINTS = 2000
COLOUR_MAP = "viridis"  # perceptually uniform, readable by colour-blind people
# What a continuous-action agent's action figure and window show (a discrete one's: its action probabilities)
CONTINUOUS_ACTIONS_TITLE = "the policy's mean action and the actions taken"
TITLE_CHAR_PX = 11  # a generous width of one character of a figure's title (12 pt at 100 dpi), for wrapping it
# Distinct target positions within one episode up to which each is drawn as a star (MobileRobot2Target's two
# targets); a target with more positions in its episode moves (KukaMovingButton's button, CarRacing's point
# ahead) and is drawn as its path, a line, rather than as a star at every step.
MAX_TARGET_STARS = 2


def rewardColours(rewards: np.ndarray) -> np.ndarray:
    """
    :param rewards: one reward per point
    :return: (n, 3) uint8 RGB colours of the rewards on COLOUR_MAP, scaled from the lowest to the highest reward
        (the same colours as the PNG's)
    """

    rewards = np.asarray(rewards, dtype=np.float64)
    low, high = rewardRange(rewards)
    rgba = colormaps[COLOUR_MAP]((rewards - low) / (high - low))
    return np.round(rgba[:, :3] * 255).astype(np.uint8)


def rewardRange(rewards: np.ndarray) -> tuple[float, float]:
    """
    :param rewards: rewards (at least one)
    :return: (low, high) of the colour scale, widened around a single value so that it is never empty
    """
    low, high = float(np.min(rewards)), float(np.max(rewards))
    if high - low < 1e-9:
        low, high = low - 0.5, high + 0.5
    return low, high


def _savePng(figure: Any, path: str) -> str:
    """
    :param figure: a matplotlib Figure with an Agg canvas
    :param path: the PNG to replace, atomically
    :return: ``path``
    """

    with atomicPath(path) as tmp_path:
        figure.savefig(tmp_path, format="png")
    return path


def _newFigure(width: float, height: float) -> Any:
    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


def _setTitle(figure: Any, title: str, what: str) -> None:
    """
    Title a figure with the run (``title``) on one line and ``what`` is drawn on the next, each wrapped to the
    figure's width.

    :param figure: a matplotlib Figure
    :param title: the run's title, may be empty
    :param what: what the figure draws
    """
    chars = max(20, int(figure.get_figwidth() * figure.dpi / TITLE_CHAR_PX))
    lines = textwrap.wrap(title, chars, break_on_hyphens=False) + textwrap.wrap(what, chars, break_on_hyphens=False)
    figure.suptitle("\n".join(lines))


class ReplayTrace:
    """
    The first env's replay, one row per step: the state the agent acted in, the target, the action, its reward, the
    episode, and the action probabilities when the algorithm gives them.

    :param discrete: whether the actions are discrete
    :param plot_type: the env class's PLOT_TYPE, "2D" or "3D"
    :param unit: the unit of the ground truth's coordinates (the env class's GROUND_TRUTH_UNIT), None when unknown
    :param action_names: the actions' names, in index order (the env's ``actionNames()``), None for unnamed
    :param target_line_axis: the env class's TARGET_LINE_AXIS: the ground-truth coordinate that alone locates a
        target that is a line (0: x), None for a point target
    :param view: the env class's GROUND_TRUTH_VIEW: where x and y point in its top-down frames, None for x right
        and y up
    """

    def __init__(self, discrete: bool, plot_type: str, unit: str | None = None,
                 action_names: Sequence[str] | None = None, target_line_axis: int | None = None,
                 view: tuple[str, str] | None = None) -> None:
        self.discrete = discrete
        self.view = view
        self.target_line_axis = target_line_axis
        self.plot_type = plot_type
        self.unit = unit
        self.action_names = tuple(action_names) if action_names is not None else None
        self.states: list[np.ndarray] = []
        self.targets: list[np.ndarray] = []
        self.actions: list[np.ndarray] = []
        self.rewards: list[float] = []
        self.episodes: list[int] = []
        self.probas: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self.rewards)

    @property
    def gt_dim_shown(self) -> int:
        """How many ground-truth coordinates the trajectory shows: 3 for a 3D env, 2 for a 2D one, 1 when the
        ground truth has one dimension (then drawn against the step)."""
        state_dim = np.asarray(self.states[0]).size if self.states else 2
        return 1 if state_dim == 1 else min(3 if self.plot_type == "3D" else 2, state_dim)

    def points(self) -> np.ndarray:
        """:return: (n, 2 or 3) the trajectory's coordinates (a 1-D ground truth against the step)"""
        states = np.asarray(self.states[:len(self)], dtype=np.float64).reshape(len(self), -1)
        if self.gt_dim_shown == 1:
            return np.column_stack((np.arange(len(self)), states[:, 0]))
        return states[:, :self.gt_dim_shown]

    def axisLabel(self, name: str) -> str:
        """:return: the label of the ground-truth axis ``name`` ("x", "y", "z"), with the unit when known"""
        return f"{name} ({self.unit})" if self.unit else name

    def actionLabels(self, count: int) -> list[str]:
        """:return: the labels of ``count`` discrete actions (or continuous action dimensions): ``<index>: <name>``,
        or ``action <index>`` when the actions are not named (or not one name per action)"""
        if self.action_names is not None and len(self.action_names) == count:
            return [f"{index}: {name}" for index, name in enumerate(self.action_names)]
        return [f"action {index}" for index in range(count)]

    def targetTrack(self) -> np.ndarray:
        """:return: (n, k) the x of each of the k targets at each step for a 1-D ground truth, (n, 0) otherwise"""
        if self.gt_dim_shown != 1 or len(self.targets) < len(self):
            return np.zeros((len(self), 0))
        return np.asarray(self.targets[:len(self)], dtype=np.float64).reshape(len(self), -1)

    def targetPoints(self) -> np.ndarray:
        """:return: (k, 2 or 3) the distinct target positions seen (none when they do not fit the ground truth; none
        for a 1-D ground truth, whose target is :meth:`targetTrack`)"""
        state_dim = np.asarray(self.states[0]).size if self.states else 0
        if not self.targets or self.gt_dim_shown == 1 or state_dim == 0:
            return np.zeros((0, max(self.gt_dim_shown, 2)))
        targets = np.asarray(self.targets[:len(self)], dtype=np.float64).reshape(len(self), -1)
        if targets.shape[1] % state_dim != 0:  # not one or several positions of the ground truth's kind
            return np.zeros((0, self.gt_dim_shown))
        return np.unique(targets.reshape(-1, state_dim)[:, :self.gt_dim_shown], axis=0)

    def targetPaths(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """
        The targets as the PNG draws them: the positions of the targets that stay put within their episode (at most
        MAX_TARGET_STARS distinct positions in it), and the path of each target that moves within its episode.

        :return: ((k, 2 or 3) the distinct positions of the targets that stay put, [(n, 2 or 3) the positions of a
            moving target at each step of its episode, one array per episode and target]); both empty when
            :meth:`targetPoints` is
        """
        points = self.targetPoints()
        if not len(points):
            return points, []
        state_dim = np.asarray(self.states[0]).size
        targets = np.asarray(self.targets[:len(self)], dtype=np.float64).reshape(len(self), -1, state_dim)
        targets = targets[:, :, :self.gt_dim_shown]
        episodes = np.asarray(self.episodes[:len(self)])
        still, paths = [], []
        for episode in np.unique(episodes):
            seen = targets[episodes == episode]
            if len(np.unique(seen.reshape(len(seen), -1), axis=0)) <= MAX_TARGET_STARS:
                still.append(seen.reshape(-1, seen.shape[-1]))
            else:
                paths.extend(seen[:, column] for column in range(seen.shape[1]))
        still_points = np.unique(np.concatenate(still), axis=0) if still else np.zeros((0, points.shape[1]))
        return still_points, paths


class ReplayVisdom(VisdomPlotter):
    """
    The replay's two windows in a visdom server (see the module docstring); connection handling as VisdomPlotter.

    :param port: the visdom server's port
    :param env_name: visdom environment
    :param title: title prefix of the windows
    :param announce: print ``Live plots: <page_url>`` (the environment's own page) once the server drew the windows
    """

    DRAWS_FOR = "replay"  # (its warning: "live plots are off for the rest of this replay")

    def __init__(self, port: int, env_name: str, title: str = "", announce: bool = False) -> None:
        super().__init__(port=port, env_name=env_name, title=title, max_points=MAX_LIVE_POINTS, announce=announce)
        safe_name = re.sub(r"[^A-Za-z0-9_-]", "_", env_name)
        self.windows = {"action_proba": f"{safe_name}_action_proba", "trajectory": f"{safe_name}_trajectory"}

    def draw(self, trace: ReplayTrace, with_proba: bool) -> None:
        """
        Redraw both windows with the whole trace so far (subsampled to ``max_points``).

        :param trace: the replay so far
        :param with_proba: draw the action probabilities (the algorithm gives them)
        """
        if not self.enabled or len(trace) < 2:
            return
        if self._viz is None and not self._connect():
            return
        keep = subsample(len(trace), self.max_points)
        try:
            with quietVisdom():
                if with_proba:
                    self._drawProba(trace, keep)
                self._drawTrajectory(trace, keep)
        except Exception as exc:  # never let the replay die because of the plots
            self._giveUp(describe(exc), lost=True, stacklevel=3)
            return
        self._drawn()

    def _drawProba(self, trace: ReplayTrace, keep: np.ndarray) -> None:
        probas = np.asarray(trace.probas, dtype=np.float64)[keep]
        steps = keep.astype(np.float64)
        if trace.discrete:
            legend = trace.actionLabels(probas.shape[1])
            y, ylabel, what = probas, "probability", "action probabilities"
        else:
            actions = np.asarray(trace.actions, dtype=np.float64).reshape(len(trace), -1)[keep]
            legend = ([f"mean {label}" for label in trace.actionLabels(probas.shape[1])] +
                      [f"taken {label}" for label in trace.actionLabels(actions.shape[1])])
            y, ylabel, what = np.column_stack((probas, actions)), "action", CONTINUOUS_ACTIONS_TITLE
        self._viz.line(Y=y, X=np.repeat(steps[:, None], y.shape[1], axis=1), win=self.windows["action_proba"],
                       env=self.env_name, opts=dict(title=f"{self.title} {what}", xlabel="Step",
                                                    ylabel=ylabel, legend=legend, showlegend=True))

    def _drawTrajectory(self, trace: ReplayTrace, keep: np.ndarray) -> None:
        points = trace.points()[keep]
        colours = rewardColours(np.asarray(trace.rewards)[keep])
        targets = trace.targetPoints()
        track = trace.targetTrack()
        if track.shape[1]:  # a 1-D target: (step, target x) at each step kept
            targets = np.concatenate([np.column_stack((keep, track[keep, column])) for column in range(track.shape[1])])
        labels = np.ones(len(points), dtype=int)
        legend = ["agent (colour: reward)"]
        if len(targets):
            points = np.concatenate((points, targets))
            colours = np.concatenate((colours, np.tile(np.array([[220, 20, 60]], dtype=np.uint8), (len(targets), 1))))
            labels = np.concatenate((labels, np.full(len(targets), 2)))
            legend.append("target")
        opts = dict(title=f"{self.title} trajectory (ground truth)", markersize=5, markercolor=colours,
                    legend=legend, xlabel="step" if trace.gt_dim_shown == 1 else trace.axisLabel("x"),
                    ylabel=trace.axisLabel("x" if trace.gt_dim_shown == 1 else "y"))
        if points.shape[1] == 3:
            opts["zlabel"] = trace.axisLabel("z")
        self._viz.scatter(X=points, Y=labels, win=self.windows["trajectory"], env=self.env_name, opts=opts)


class ReplayPlotting:
    """
    Records the first env's replay (call :meth:`beforeStep` and :meth:`afterStep` around each vectorised step),
    draws it live in visdom, and writes the PNGs with :meth:`save`.

    :param agent: the loaded agent (a BaseRLObject)
    :param algo_name: its algorithm, for the note when it has no action distribution
    :param plot_type: the env class's PLOT_TYPE, "2D" or "3D"
    :param discrete: whether the actions are discrete
    :param output_dir: folder of the PNGs
    :param title: title prefix of the figures
    :param visdom: live plots, or None for PNGs only
    :param unit: the unit of the ground truth's coordinates (the env class's GROUND_TRUTH_UNIT), None when unknown
    :param action_names: the actions' names (the env's ``actionNames()``), None for unnamed
    :param target_line_axis: the env class's TARGET_LINE_AXIS, None for a point target
    :param view: the env class's GROUND_TRUTH_VIEW (the trajectory PNG's orientation), None for x right and y up
    """

    def __init__(self, agent: Any, algo_name: str, plot_type: str, discrete: bool, output_dir: str,
                 title: str = "", visdom: ReplayVisdom | None = None, unit: str | None = None,
                 action_names: Sequence[str] | None = None, target_line_axis: int | None = None,
                 view: tuple[str, str] | None = None) -> None:
        self.trace = ReplayTrace(discrete, plot_type, unit, action_names, target_line_axis, view)
        self.agent = agent
        self.algo_name = algo_name
        self.output_dir = output_dir
        self.title = title
        self.visdom = visdom
        self.with_proba = True
        self.proba_note: str | None = None
        self._episode = 0

    def beforeStep(self, env: Any, observation: Any, dones: np.ndarray) -> None:
        """
        Record the state the first env is in and the agent's action distribution there.

        :param env: the replay VecEnv (the ground truth is asked from its first env)
        :param observation: the batch of observations the agent is about to act on
        :param dones: which envs just ended an episode (recurrent policies reset their state there)
        """
        self.trace.states.append(np.asarray(env.env_method("getGroundTruth", indices=0)[0], dtype=np.float64))
        self.trace.targets.append(np.asarray(env.env_method("getTargetPos", indices=0)[0], dtype=np.float64))
        if not self.with_proba:
            return
        try:
            proba = self.agent.getActionProba(observation, dones, **actionMaskKeywords(self.agent, env))
        except NotImplementedError as error:
            self.with_proba = False
            reason = str(error) or f"{self.algo_name} does not implement getActionProba"
            self.proba_note = f"note: no action-probability plot: {reason}"
            print(self.proba_note)
            return
        self.trace.probas.append(np.asarray(proba, dtype=np.float64).reshape(len(dones), -1)[0])

    def afterStep(self, actions: np.ndarray, rewards: np.ndarray, dones: np.ndarray) -> None:
        """
        Record what the first env's action earned; redraw the live plots now and then.

        :param actions: the actions taken, one per env
        :param rewards: their rewards
        :param dones: which envs ended an episode with this step
        """
        self.trace.actions.append(np.asarray(actions[0], dtype=np.float64).ravel())
        self.trace.rewards.append(float(rewards[0]))
        self.trace.episodes.append(self._episode)
        if dones[0]:
            self._episode += 1
        if self.visdom is not None and len(self.trace) % LIVE_EVERY == 0:
            self.visdom.draw(self.trace, self.with_proba)

    def save(self) -> list[str]:
        """
        Draw the live plots a last time and write the PNGs.

        :return: the PNG files written (none when no step was played)
        """
        if len(self.trace) == 0:
            return []
        if self.visdom is not None:
            self.visdom.draw(self.trace, self.with_proba)
        paths = [saveTrajectoryPlot(self.trace, os.path.join(self.output_dir, TRAJECTORY_PNG), self.title)]
        if self.with_proba:
            paths.insert(0, saveActionProbaPlot(self.trace, os.path.join(self.output_dir, ACTION_PROBA_PNG),
                                                self.title))
        return paths


def _episodeStarts(trace: ReplayTrace) -> np.ndarray:
    """:return: the steps at which a new episode starts (not the first)"""
    episodes = np.asarray(trace.episodes)
    return np.flatnonzero(np.diff(episodes) != 0) + 1


def _markEpisodeStarts(axes_list: Sequence[Any], trace: ReplayTrace) -> str:
    """
    Draw a dashed line across each of ``axes_list`` (plots against the step) where a new episode starts: the first
    200, more would only blacken the plot.

    :return: the step axis's label, which says what the lines are where there are some
    """
    starts = _episodeStarts(trace)[:200]
    for axes in axes_list:
        for start in starts:
            axes.axvline(start, color="black", linestyle="--", linewidth=0.6, alpha=0.5)
    return "Step (first env; dashed: new episode)" if len(starts) else "Step (first env)"


def actionProbaFigure(trace: ReplayTrace, title: str = "") -> Any:
    """
    Draw the action probabilities over time (see the module docstring), episode starts as dashed lines.

    :param trace: a replay with action probabilities
    :param title: the run's title (first line of the figure's title)
    :return: the matplotlib Figure (Agg canvas)
    """
    n = min(len(trace), len(trace.probas))
    probas = np.asarray(trace.probas[:n], dtype=np.float64).reshape(n, -1)
    steps = np.arange(n)
    if trace.discrete:
        figure = _newFigure(9, 4.8)
        axes_list = [figure.add_subplot(1, 1, 1)]
        axes_list[0].stackplot(steps, probas.T, labels=trace.actionLabels(probas.shape[1]), alpha=0.85)
        axes_list[0].set_ylim(0, 1)
        axes_list[0].set_ylabel("probability (stacked)")
        what = "action probabilities"
    else:
        actions = np.asarray(trace.actions[:n], dtype=np.float64).reshape(n, -1)
        dims = probas.shape[1]
        figure = _newFigure(9, 1.3 + 2.2 * dims)
        axes_list = list(np.atleast_1d(figure.subplots(dims, 1, sharex=True, squeeze=False)[:, 0]))
        labels = trace.actionLabels(dims)
        for index, axes in enumerate(axes_list):
            axes.scatter(steps, actions[:, index], s=6, color="tab:orange", alpha=0.5, label="action taken")
            axes.plot(steps, probas[:, index], color="tab:blue", linewidth=1.5, label="mean action")
            axes.set_ylabel(labels[index])
        what = CONTINUOUS_ACTIONS_TITLE
    # Above the plot, not over its top band: one row when the labels fit, else as many as they need.
    columns = min(len(axes_list[0].get_legend_handles_labels()[1]), 6)
    axes_list[0].legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=columns, fontsize="small",
                        frameon=False)
    axes_list[-1].set_xlabel(_markEpisodeStarts(axes_list, trace))
    for axes in axes_list:
        axes.grid(True, alpha=0.3)
    _setTitle(figure, title, what)
    figure.tight_layout()
    return figure


def saveActionProbaPlot(trace: ReplayTrace, path: str, title: str = "") -> str:
    """
    Write :func:`actionProbaFigure` as a PNG.

    :param trace: a replay with action probabilities
    :param path: the PNG file (replaced atomically)
    :param title: the run's title
    :return: ``path``
    """
    return _savePng(actionProbaFigure(trace, title), path)


def planeAxes(view: tuple[str, str] | None) -> tuple[int, int, bool, bool]:
    """
    :param view: where the ground truth's x and y point in the env's top-down frames (GROUND_TRUTH_VIEW), None for
        x right and y up
    :return: (the coordinate drawn along the plot's horizontal axis, the one along its vertical axis, whether the
        horizontal axis grows to the left, whether the vertical one grows downward): the plot reads as the frames
    """
    if view is None:
        return 0, 1, False, False
    horizontal = next(index for index, direction in enumerate(view) if direction in ("left", "right"))
    return horizontal, 1 - horizontal, view[horizontal] == "left", view[1 - horizontal] == "down"


def trajectoryFigure(trace: ReplayTrace, title: str = "") -> Any:
    """
    Draw the trajectory in the ground-truth state space, coloured by reward (see the module docstring).

    :param trace: a replay of at least one step
    :param title: the run's title (first line of the figure's title)
    :return: the matplotlib Figure (Agg canvas)
    """
    points = trace.points()
    rewards = np.asarray(trace.rewards, dtype=np.float64)
    norm = Normalize(*rewardRange(rewards))
    three_d = points.shape[1] == 3
    plane = trace.gt_dim_shown == 2  # x and y in the plane of the env's top-down frames, drawn as they show them
    horizontal, vertical, flip_h, flip_v = planeAxes(trace.view if plane else None)
    points = points[:, [horizontal, vertical]] if plane else points
    figure = _newFigure(7.5, 6)
    axes = figure.add_subplot(1, 1, 1, projection="3d" if three_d else None)
    episodes = np.asarray(trace.episodes)
    for episode in np.unique(episodes):  # the path of each episode, without a jump to the next one's start
        segment = points[episodes == episode]
        axes.plot(*segment.T, color="grey", linewidth=0.7, alpha=0.6)
    # The most frequent reward first: the rarer ones (the target reached, a wall hit) are drawn over it, larger.
    values, counts = np.unique(rewards, return_counts=True)
    rare = rewards != values[np.argmax(counts)]
    order = np.argsort(rare, kind="stable")
    scatter = axes.scatter(*points[order].T, c=rewards[order], cmap=COLOUR_MAP, norm=norm,
                           s=np.where(rare[order], 30, 14), zorder=3)
    (targets, paths), track = trace.targetPaths(), trace.targetTrack()
    if plane:
        targets, paths = targets[:, [horizontal, vertical]], [path[:, [horizontal, vertical]] for path in paths]
    for index, path in enumerate(paths):  # a target that moves within its episode: its path
        axes.plot(*path.T, color="crimson", linewidth=2, zorder=2, label=None if index else "target's path")
    line_axis = trace.target_line_axis if trace.target_line_axis in (0, 1) and not three_d else None
    if len(targets) and line_axis is not None:  # a line across the arena: x = target x (or y = target y)
        column = (horizontal, vertical).index(line_axis)  # the line is across the plot's other axis
        draw = axes.axvline if column == 0 else axes.axhline
        for index, value in enumerate(np.unique(targets[:, column])):
            draw(value, color="crimson", linestyle="--", linewidth=1.5, zorder=2, label=None if index else "target")
    elif len(targets):
        axes.scatter(*targets.T, marker="*", s=260, color="crimson", edgecolors="black", label="target", zorder=4)
    for column in range(track.shape[1]):  # a 1-D target: its x at each step, broken between episodes
        for episode in np.unique(episodes):
            steps = np.flatnonzero(episodes == episode)
            label = "target" if column == 0 and episode == episodes[0] else None
            axes.plot(steps, track[steps, column], color="crimson", linestyle="--", linewidth=1.5, label=label,
                      zorder=2)
    if len(targets) or paths or track.shape[1]:
        axes.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)  # above the plot, not over it
    # (3-D: the colour bar and the axis names kept clear of the tick numbers)
    figure.colorbar(scatter, ax=axes, label="reward of the step", shrink=0.8, pad=0.12 if three_d else 0.05)
    pad = 10 if three_d else None
    if trace.gt_dim_shown == 1:
        axes.set_xlabel(_markEpisodeStarts([axes], trace))
        axes.set_ylabel(f"{trace.axisLabel('x')}, ground truth")
    else:
        names = ("x", "y", "z")
        axes.set_xlabel(trace.axisLabel(names[horizontal]), labelpad=pad)
        axes.set_ylabel(trace.axisLabel(names[vertical]), labelpad=pad)
        if flip_h:
            axes.invert_xaxis()
        if flip_v:
            axes.invert_yaxis()
        if three_d:
            axes.set_zlabel(trace.axisLabel("z"), labelpad=pad)
        else:
            axes.set_aspect("equal", adjustable="datalim")
    axes.grid(True, alpha=0.3)
    _setTitle(figure, title, "trajectory in the ground-truth state space")
    figure.tight_layout()
    return figure


def saveTrajectoryPlot(trace: ReplayTrace, path: str, title: str = "") -> str:
    """
    Write :func:`trajectoryFigure` as a PNG.

    :param trace: a replay of at least one step
    :param path: the PNG file (replaced atomically)
    :param title: the run's title
    :return: ``path``
    """
    return _savePng(trajectoryFigure(trace, title), path)
