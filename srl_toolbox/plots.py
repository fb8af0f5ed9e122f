"""Live learning curves in visdom, and the same curves as PNG files.

The training callback owns a :class:`VisdomPlotter` and calls :meth:`VisdomPlotter.update` with every finished
episode so far. A missing or vanished visdom server costs one warning, never the run. Start a server that works
offline with ``python -m replay.visdom_server --port 8097``.

Each plotter draws into the visdom environment ``env_name`` (one per run, so runs do not overwrite each other; a
plotter made with ``own_env=True``, a new run's, draws into ``<env_name>_2``, ``_3``, ... instead when the server
already holds windows in ``env_name``, another run's of the same name):

- window ``<env_name>_reward``: episode reward against env steps, raw and smoothed (moving average over
  ``episode_window`` episodes);
- window ``<env_name>_episodes``: the smoothed reward against the episode number, counted from 1 (the first episode
  is episode 1, as the PNG legends' "fewer before episode N" counts);
- window ``<env_name>_evaluation`` (runs trained with ``--eval-freq``): the mean reward of each deterministic
  evaluation against env steps, with mean - std and mean + std (:meth:`VisdomPlotter.updateEvaluation`).
- window ``<env_name>_scalars_<group>`` for scalars logged during the run (rl_baselines.runs.run_logging): one trace per
  tag of the group (the tag's part before ``/``) against env steps.

(In window ids every character of ``env_name`` other than letters, digits, ``-`` and ``_`` becomes ``_``.)

A plotter made with ``announce=True`` prints the address of its own page, ``http://HOST:PORT/env/<env_name>``, once
the server has drawn its first window (in a training run the first finished episode's curve, or earlier the first
evaluation or logged scalars), so the user opens a page with a curve on it rather than visdom's empty ``main``
environment. That line and the warning are written above a running progress bar (tqdm's external
write mode), each on a line of its own.
"""
from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import urllib.parse
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from tqdm import tqdm

from srl_toolbox.cli import pythonCommand
from srl_toolbox.files import atomicPath

# Seconds allowed to open a connection and to wait for each answer of the visdom server
CONNECT_TIMEOUT_S = 2.0
CONNECT_READ_TIMEOUT_S = 2.0
UPDATE_READ_TIMEOUT_S = 5.0

_CLIENT_CLASS: Any = None

# The x axis of every curve against the run's step count (all envs together), in PNGs and in visdom alike
STEPS_AXIS_LABEL = "Env steps"

# Names a new run's plotter tries for an environment of its own (own_env): env_name, then env_name_2, ...
OWN_ENV_ATTEMPTS = 100


def movingAverage(values: ArrayLike, window: int) -> np.ndarray:
    """
    Trailing moving average: ``out[i]`` is the mean of ``values[max(0, i - window + 1) : i + 1]``,
    so the first values average over fewer elements than ``window``. A value that is not finite (NaN, inf) makes
    only the means of the windows holding it NaN (or inf), never a later one.

    :param values: 1-D array of values
    :param window: number of values averaged (at least 1)
    :return: float array of the same length as ``values``
    """
    window = int(window)
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        return values.copy()
    ends = np.arange(1, values.size + 1)
    starts = np.maximum(0, ends - window)

    def inWindow(counted: np.ndarray) -> np.ndarray:
        """:return: the sum of ``counted`` over each window (differences of cumulative sums)"""
        cumsum = np.concatenate(([0.0], np.cumsum(counted)))
        return cumsum[ends] - cumsum[starts]

    finite = np.isfinite(values)
    result = inWindow(np.where(finite, values, 0.0)) / (ends - starts)
    # a window's non-finite values decide its mean, as numpy's mean of it would: NaN, or inf of both signs, give NaN
    nan, positive, negative = (inWindow(mask.astype(np.float64)) > 0 for mask in
                               (np.isnan(values), values == np.inf, values == -np.inf))
    result[positive] = np.inf
    result[negative] = -np.inf
    result[nan | (positive & negative)] = np.nan
    return result


def atLastOfStep(steps: ArrayLike, values: ArrayLike) -> np.ndarray:
    """
    Each value replaced by that of the last episode ending at the same step: with several envs, episodes end together
    (four at step 1,000), and a curve through each of their values draws a vertical stroke at every such step.

    :param steps: the episodes' end steps, non-decreasing
    :param values: one value per episode (a moving average)
    :return: float array of the same length as ``values``
    """
    steps = np.asarray(steps).ravel()
    values = np.asarray(values, dtype=np.float64).ravel()
    if steps.size != values.size:
        raise ValueError(f"{steps.size} steps for {values.size} values")
    if steps.size == 0:
        return values.copy()
    last = np.append(np.flatnonzero(steps[1:] != steps[:-1]), steps.size - 1)  # each step's last episode
    return values[last[np.searchsorted(last, np.arange(steps.size))]]


def smoothedLabel(episodes: int, window: int) -> str:
    """
    :param episodes: the episodes of the curve
    :param window: the moving average's window
    :return: what the smoothed curve is, for a legend: a moving average, or with fewer episodes than the window the
        mean of all episodes so far
    """
    if episodes < window:
        return f"mean of all episodes so far ({episodes} < the {window}-episode window)"
    return f"moving average ({window} episodes, fewer before episode {window})"


def _episodeData(timesteps: ArrayLike, rewards: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """
    :param timesteps: the run's step count (all envs together) at the end of each episode
    :param rewards: reward of each episode
    :return: both as 1-D float arrays
    """
    timesteps = np.asarray(timesteps, dtype=np.float64).ravel()
    rewards = np.asarray(rewards, dtype=np.float64).ravel()
    if timesteps.shape != rewards.shape:
        raise ValueError(f"timesteps and rewards must have the same length, got {timesteps.size} and {rewards.size}")
    return timesteps, rewards


def subsample(n_points: int, max_points: int) -> np.ndarray:
    """
    :param n_points: number of points available
    :param max_points: most points to keep
    :return: sorted indices of at most ``max_points`` evenly spread points, always the first and the last
    """
    if n_points <= max_points:
        return np.arange(n_points)
    return np.unique(np.linspace(0, n_points - 1, max_points).round().astype(np.int64))


@contextlib.contextmanager
def quietVisdom() -> Iterator[None]:
    """Silence the visdom client's log lines and deprecation warnings (we report problems ourselves)."""
    logger = logging.getLogger("visdom")
    was_disabled = logger.disabled
    logger.disabled = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            yield
    finally:
        logger.disabled = was_disabled


def visdomClientClass() -> Any:
    """
    :return: a ``visdom.Visdom`` subclass whose requests time out and treat HTTP errors as connection errors
        (visdom's own requests wait forever)
    """
    global _CLIENT_CLASS
    if _CLIENT_CLASS is None:
        import visdom  # optional service: imported (slow) only when a live plot is asked for

        class _BoundedVisdom(visdom.Visdom):
            def __init__(self, *args: Any, request_timeout: tuple[float, float] = (CONNECT_TIMEOUT_S,
                                                                                    CONNECT_READ_TIMEOUT_S),
                         **kwargs: Any) -> None:
                self.request_timeout = request_timeout
                super().__init__(*args, **kwargs)

            def _handle_post(self, url: str, data: Any = None) -> str:
                response = self.session.post(url, data={} if data is None else data, timeout=self.request_timeout)
                response.raise_for_status()  # a RequestException: visdom turns it into ConnectionError
                return response.text

        _CLIENT_CLASS = _BoundedVisdom
    return _CLIENT_CLASS


def describe(exc: BaseException) -> str:
    """
    :param exc: an error raised by the visdom client (it wraps every request failure in one ConnectionError)
    :return: a short reason, from the underlying requests error when there is one
    """
    cause = exc
    for _ in range(10):  # the chain is short; the bound only guards against a cycle
        inner = cause.__cause__ or cause.__context__
        if inner is None:
            break
        cause = inner
    name = type(cause).__name__
    if "Timeout" in name:
        return "no answer in time"
    response = getattr(cause, "response", None)
    if response is not None and getattr(response, "status_code", None) is not None:
        return f"HTTP error {response.status_code}, is it a visdom server?"
    if name == "ConnectionError":
        return "connection failed"
    return f"{name}: {cause}" if str(cause) else name


class VisdomPlotter:
    """
    Live learning curves of one run in a visdom server.

    Connects on the first :meth:`update`. If the server cannot be reached then, or stops answering later, it emits
    a single ``UserWarning`` for its whole life and every later update does nothing; it never raises because of
    the server.

    :param port: the visdom server's port
    :param server: the visdom server's address, with its scheme
    :param env_name: visdom environment of this run (window ids are derived from it, see ``windows``)
    :param title: title of the plots (default: ``env_name``)
    :param legend: name of the curves, e.g. the algorithm (traces are "<legend> raw" and "<legend> smoothed")
    :param episode_window: number of episodes of the moving average
    :param max_points: most points sent per trace; longer runs are evenly subsampled (after smoothing)
    :param announce: print ``Live plots: <page_url>`` on stdout once, after the server drew the first window
    :param own_env: the run is new: an ``env_name`` that already holds windows on the server (those of another run
        with the same name, as one of the same run folder name in another log folder) is not drawn into; the first
        of ``<env_name>_2``, ``<env_name>_3``, ... without windows is, and ``env_name`` becomes that name
    :param on_env: with ``own_env``, called once with the name chosen, when the server first answers (the run records
        it, so that its resumes draw into the same windows)
    """

    # what the plotter draws for, as its warning names it ("live plots are off for the rest of this run")
    DRAWS_FOR = "run"

    def __init__(
        self,
        port: int = 8097,
        server: str = "http://127.0.0.1",
        env_name: str = "main",
        title: str = "",
        legend: str = "",
        episode_window: int = 40,
        max_points: int = 5000,
        announce: bool = False,
        own_env: bool = False,
        on_env: Callable[[str], None] | None = None,
    ) -> None:
        if episode_window < 1:
            raise ValueError(f"episode_window must be at least 1, got {episode_window}")
        if max_points < 2:
            raise ValueError(f"max_points must be at least 2, got {max_points}")
        self.port = int(port)
        self.server = server.rstrip("/")
        self.env_name = env_name
        self.title = title or env_name
        self.legend = legend
        self.episode_window = int(episode_window)
        self.max_points = int(max_points)
        self.announce = announce
        self.own_env = own_env
        self.on_env = on_env
        self._setEnv(env_name)
        self._viz: Any = None
        self._disabled = False
        self._announced = False
        self._scalar_windows: set[str] = set()
        self._scalar_traces: set[str] = set()  # the tags this process has drawn

    def _setEnv(self, env_name: str) -> None:
        """Draw into the visdom environment ``env_name``, in windows whose ids derive from it."""
        self.env_name = env_name
        safe_name = re.sub(r"[^A-Za-z0-9_-]", "_", env_name)
        self.windows = {"reward": f"{safe_name}_reward", "episodes": f"{safe_name}_episodes",
                        "evaluation": f"{safe_name}_evaluation"}

    def _freeEnv(self, viz: Any) -> str:
        """
        :param viz: a connected client
        :return: ``env_name`` if the server holds no window in it, else the first of ``<env_name>_2``, ``_3``, ...
            that holds none (at most OWN_ENV_ATTEMPTS names tried; the last one is used whatever it holds)
        """
        existing = set(viz.get_env_list())
        name = self.env_name
        for attempt in range(2, OWN_ENV_ATTEMPTS + 1):
            if name not in existing or not json.loads(viz.get_window_data(env=name) or "{}"):
                break
            name = f"{self.env_name}_{attempt}"
        return name

    @property
    def address(self) -> str:
        """The server's address, ``server:port``."""
        return f"{self.server}:{self.port}"

    @property
    def page_url(self) -> str:
        """The page of this plotter's visdom environment, ``server:port/env/<env_name>``."""
        return f"{self.address}/env/{urllib.parse.quote(self.env_name, safe='')}"

    @property
    def enabled(self) -> bool:
        """False once the server was found unreachable: updates are then no-ops."""
        return not self._disabled

    def _label(self, kind: str) -> str:
        """
        :param kind: "raw" or "smoothed"
        :return: the trace's legend entry
        """
        return f"{self.legend} {kind}" if self.legend else kind

    def _giveUp(self, reason: str, lost: bool, stacklevel: int) -> None:
        """
        Turn the plotter off, with its only warning.

        :param reason: what failed
        :param lost: True if the server answered before (it went away mid-run)
        :param stacklevel: frames between this method and the caller of ``update`` (plus one)
        """
        self._disabled = True
        self._viz = None
        what = "stopped answering" if lost else "cannot be reached"
        with tqdm.external_write_mode(file=sys.stderr):  # on its own line above a progress bar, not into it
            warnings.warn(
                f"The visdom server at {self.address} {what} ({reason}); live plots are off for the rest of this "
                f"{self.DRAWS_FOR}. For the next runs, start a server with `{pythonCommand()} -m "
                f"replay.visdom_server --port {self.port}`, or disable plots with --no-vis.",
                UserWarning,
                stacklevel=stacklevel,
            )

    def _connect(self) -> bool:
        """
        Open the connection and check that the server answers (a couple of seconds at most).

        :return: True if connected; otherwise the plotter is turned off with its warning
        """
        try:
            client_class = visdomClientClass()
        except ImportError as exc:
            self._giveUp(f"the visdom package cannot be imported: {exc}", lost=False, stacklevel=4)
            return False
        try:
            with quietVisdom():
                # The constructor posts to the env endpoint: with raise_exceptions=True, no answer raises
                viz = client_class(server=self.server, port=self.port, env=self.env_name,
                                   use_incoming_socket=False, raise_exceptions=True)
        except Exception as exc:  # ConnectionError mostly; never let the run die because of the plots
            self._giveUp(describe(exc), lost=False, stacklevel=4)
            return False
        viz.request_timeout = (CONNECT_TIMEOUT_S, UPDATE_READ_TIMEOUT_S)
        if self.own_env:
            try:
                with quietVisdom():
                    name = self._freeEnv(viz)
            except Exception as exc:
                self._giveUp(describe(exc), lost=False, stacklevel=4)
                return False
            self._setEnv(name)
            viz.env = name
            if self.on_env is not None:
                self.on_env(name)
        self._viz = viz
        return True

    def _drawn(self) -> None:
        """After each successful draw: with ``announce``, the first one prints ``Live plots: <page_url>`` (the page
        has a window to look at by then; a server that answers but fails the first draw gets no line)."""
        if self.announce and not self._announced:
            self._announced = True
            with tqdm.external_write_mode(file=sys.stdout):  # above the run's progress bar, not into its line
                print(f"Live plots: {self.page_url}", flush=True)

    def update(self, timesteps: ArrayLike, rewards: ArrayLike) -> None:
        """
        Redraw both windows with every episode so far (the whole data is replaced).

        :param timesteps: ``timesteps[i]`` is the run's step count (all envs together) when episode ``i`` ended
        :param rewards: ``rewards[i]`` is the reward of episode ``i``
        """
        if self._disabled:
            return
        timesteps, rewards = _episodeData(timesteps, rewards)
        if rewards.size == 0:
            return
        if self._viz is None and not self._connect():
            return
        smoothed = movingAverage(rewards, self.episode_window)
        keep = subsample(rewards.size, self.max_points)
        x = timesteps[keep]
        try:
            with quietVisdom():
                self._viz.line(
                    Y=np.column_stack((rewards[keep], atLastOfStep(timesteps, smoothed)[keep])),
                    X=np.column_stack((x, x)),
                    win=self.windows["reward"],
                    env=self.env_name,
                    opts=dict(title=self.title, xlabel=STEPS_AXIS_LABEL, ylabel="Episode reward",
                              legend=[self._label("raw"), self._label("smoothed")], showlegend=True),
                )
                self._viz.line(
                    Y=smoothed[keep],
                    X=keep.astype(np.float64) + 1,  # episode numbers: the first episode is 1
                    win=self.windows["episodes"],
                    env=self.env_name,
                    opts=dict(title=f"{self.title} [Episodes]", xlabel="Episodes",
                              ylabel=f"Mean reward ({self.episode_window} episodes)",
                              legend=[self._label("smoothed")], showlegend=True),
                )
        except Exception as exc:
            self._giveUp(describe(exc), lost=True, stacklevel=3)
            return
        self._drawn()

    def scalars(self, points: dict[str, list[tuple[float, float]]]) -> None:
        """
        Append logged scalars to one window per tag group (the tag's part before ``/``), one trace per tag. A window
        the server already has (a resumed run's) is kept: a trace this process has not drawn yet keeps its points
        before the first step sent now (those from before the checkpoint) and loses the later ones, which the
        stopped process logged after its checkpoint and this one logs again.

        :param points: ``{tag: [(env step, value), ...]}`` received since the last call
        """
        if self._disabled or not points:
            return
        if self._viz is None and not self._connect():
            return
        try:
            with quietVisdom():
                for tag, tag_points in sorted(points.items()):
                    group = tag.partition("/")[0] if "/" in tag else "scalars"
                    window = f"{self.windows['reward'][:-len('_reward')]}_scalars_{re.sub(r'[^A-Za-z0-9_-]', '_', group)}"
                    steps, values = np.asarray(tag_points, dtype=np.float64).T
                    exists = window in self._scalar_windows or bool(self._viz.win_exists(window, env=self.env_name))
                    update = "append" if exists else None
                    if exists and tag not in self._scalar_traces:
                        earlier_steps, earlier_values = self._earlierPoints(window, tag, steps[0])
                        steps, values = np.concatenate([earlier_steps, steps]), np.concatenate([earlier_values, values])
                        update = "replace"  # this trace only (named): the window's other traces are kept
                    self._viz.line(Y=values, X=steps, win=window, env=self.env_name, name=tag, update=update,
                                   opts=None if exists else dict(title=f"{self.title} [{group}]",
                                                                 xlabel=STEPS_AXIS_LABEL, showlegend=True))
                    self._scalar_windows.add(window)
                    self._scalar_traces.add(tag)
        except Exception as exc:
            self._giveUp(describe(exc), lost=True, stacklevel=3)
            return
        self._drawn()

    def _earlierPoints(self, window: str, tag: str, before: float) -> tuple[np.ndarray, np.ndarray]:
        """:return: (steps, values) of the server's trace ``tag`` in ``window`` at steps below ``before`` (none if
        the window has no such trace)"""
        content = json.loads(self._viz.get_window_data(window, env=self.env_name) or "{}").get("content", {})
        for trace in content.get("data", []):
            if trace.get("name") == tag:
                steps = np.asarray(trace.get("x") or [], dtype=np.float64)
                values = np.asarray(trace.get("y") or [], dtype=np.float64)
                kept = steps < before
                return steps[kept], values[kept]
        return np.zeros(0), np.zeros(0)

    def updateEvaluation(self, timesteps: ArrayLike, means: ArrayLike, stds: ArrayLike) -> None:
        """
        Redraw the evaluation window with every evaluation so far.

        :param timesteps: env steps of each evaluation
        :param means: mean reward of each evaluation's episodes
        :param stds: standard deviation of each evaluation's episode rewards
        """
        if self._disabled:
            return
        timesteps, means = _episodeData(timesteps, means)
        stds = np.asarray(stds, dtype=np.float64).ravel()
        if means.size == 0 or (self._viz is None and not self._connect()):
            return
        try:
            with quietVisdom():
                self._viz.line(
                    Y=np.column_stack((means, means - stds, means + stds)),
                    X=np.column_stack((timesteps, timesteps, timesteps)),
                    win=self.windows["evaluation"],
                    env=self.env_name,
                    opts=dict(title=f"{self.title} [Evaluation]", xlabel=STEPS_AXIS_LABEL,
                              ylabel="Mean evaluation reward (deterministic)", markers=True, showlegend=True,
                              legend=[self._label("evaluation mean"), "mean - std", "mean + std"]),
                )
        except Exception as exc:
            self._giveUp(describe(exc), lost=True, stacklevel=3)
            return
        self._drawn()


def saveLearningCurve(timesteps: ArrayLike, rewards: ArrayLike, episode_window: int, path: str,
                      title: str = "") -> str:
    """
    Write the learning curve as a PNG: each episode's reward a point, and their moving average against timesteps.
    The file is replaced atomically (a reader never sees a partial image). Needs no display.

    :param timesteps: ``timesteps[i]`` is the run's step count (all envs together) when episode ``i`` ended
    :param rewards: ``rewards[i]`` is the reward of episode ``i``
    :param episode_window: number of episodes of the moving average
    :param path: the PNG file to write (its folder is created if needed)
    :param title: title of the figure
    :return: ``path``
    """
    # matplotlib is heavy (about 0.5 s to import) and only this end-of-run picture needs it: imported here
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    timesteps, rewards = _episodeData(timesteps, rewards)
    figure = Figure(figsize=(8, 5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    if rewards.size > 0:
        # the episodes as points (several envs end theirs at one step); the average as a line, marked where it is
        # one point (a line through one point draws nothing)
        axes.plot(timesteps, rewards, color="tab:blue", alpha=0.35, linestyle="none", marker=".", markersize=4,
                  label="episode reward")
        axes.plot(timesteps, atLastOfStep(timesteps, movingAverage(rewards, episode_window)), color="tab:blue",
                  linewidth=2, marker="o" if rewards.size == 1 else None,
                  label=smoothedLabel(rewards.size, int(episode_window)))
        # below the axes, as replay.plots puts it: inside ("best") it hid the raw curve's dips
        figure.legend(loc="lower center", ncol=2, frameon=False, fontsize="small")
    else:
        axes.text(0.5, 0.5, "no finished episode", ha="center", va="center", transform=axes.transAxes)
    axes.set_xlabel(STEPS_AXIS_LABEL)
    axes.set_ylabel("Episode reward")
    if title:
        axes.set_title(title)
    axes.grid(True, alpha=0.3)
    figure.tight_layout(rect=(0, 0.06, 1, 1))

    with atomicPath(path) as tmp_path:
        figure.savefig(tmp_path, format="png")
    return path
