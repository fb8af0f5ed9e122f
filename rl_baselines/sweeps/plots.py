"""Live visdom plots of a sweep: one window per (env, SRL model), one smoothed reward curve per algorithm and seed.

The curves are read from the runs' monitor files as they grow (the runs themselves are started with ``--no-vis``),
so they work the same for local runs and for Ray runs on a shared file system. An episode is drawn at the run's step
count when it ended, all envs together (its env's own step count times the envs its args.json gives,
rl_baselines.runs.monitor_files.runEnvs), as training's own plots and the results tools draw it. An unreachable
server costs one warning for the whole sweep (the connection handling is VisdomPlotter's).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from rl_baselines.sweeps.followed_runs import RunTails
from rl_baselines.sweeps.sweep import RunSpec

# The single-run plotter's helpers, reused so that both plotters smooth, subsample and report alike.
from srl_toolbox.plots import (
    STEPS_AXIS_LABEL,
    VisdomPlotter,
    atLastOfStep,
    describe,
    movingAverage,
    quietVisdom,
    subsample,
)


class SweepPlotter(VisdomPlotter):
    """
    Curves of many runs in the visdom environment ``env_name``: window ``<env_name>_<env>_<srl-model>`` (characters
    other than letters, digits, ``-`` and ``_`` become ``_``) holds one trace per run, named ``<algo> seed<N>``:
    the episode reward smoothed over ``episode_window`` episodes, against timesteps.

    :param port: the visdom server's port
    :param env_name: visdom environment of the sweep
    :param episode_window: episodes of the moving average
    :param max_points: most points sent per trace
    :param announce: print ``Live plots: <page_url>`` (the sweep's own page) on stdout once the server drew a curve
    """

    DRAWS_FOR = "sweep"

    def __init__(self, port: int, env_name: str, episode_window: int = 40, max_points: int = 2000,
                 announce: bool = False) -> None:
        super().__init__(port=port, env_name=env_name, episode_window=episode_window, max_points=max_points,
                         announce=announce)
        self._made: set[str] = set()

    def windowId(self, env: str, srl_model: str) -> str:
        """
        :param env: env id
        :param srl_model: SRL model name
        :return: the window of that pair
        """
        return re.sub(r"[^A-Za-z0-9_-]", "_", f"{self.env_name}_{env}_{srl_model}")

    def updateCurve(self, env: str, srl_model: str, name: str, timesteps: np.ndarray, rewards: np.ndarray) -> None:
        """
        Replace one run's trace (the window is created by its first trace).

        :param env: env id of the run
        :param srl_model: its SRL model
        :param name: the trace name (``<algo> seed<N>``)
        :param timesteps: the run's step count (all envs together) at the end of each episode
        :param rewards: reward of each episode
        """
        if not self.enabled or len(rewards) == 0:
            return
        if self._viz is None and not self._connect():
            return
        smoothed = atLastOfStep(timesteps, movingAverage(rewards, self.episode_window))  # one value per step
        keep = subsample(len(rewards), self.max_points)
        win = self.windowId(env, srl_model)
        x, y = np.asarray(timesteps, dtype=np.float64)[keep], smoothed[keep]
        try:
            with quietVisdom():
                if win in self._made:
                    self._viz.line(Y=y, X=x, win=win, env=self.env_name, update="replace", name=name)
                else:  # a new window replaces any left by an earlier sweep
                    self._viz.line(Y=y, X=x, win=win, env=self.env_name,
                                   opts=dict(title=f"{env} {srl_model}", xlabel=STEPS_AXIS_LABEL,
                                             ylabel=f"Mean reward ({self.episode_window} episodes)", legend=[name],
                                             showlegend=True))
                    self._made.add(win)
        except Exception as exc:  # never let the sweep die because of the plots
            self._giveUp(describe(exc), lost=True, stacklevel=3)
            return
        self._drawn()


class SweepCurves:
    """
    Follows the monitor files of the runs of a sweep and sends what is new to a :class:`SweepPlotter`.

    :param plotter: the plotter
    """

    def __init__(self, plotter: SweepPlotter) -> None:
        self.plotter = plotter
        self._tails = RunTails()

    def refresh(self, specs: Iterable[RunSpec]) -> None:
        """
        Read what the runs appended to their monitor files and redraw their curves if anything is new.

        :param specs: the runs to look at (running, just finished, or finished earlier)
        """
        for spec in specs:
            if not self.plotter.enabled:
                return
            known = self._tails.tail(spec)
            if known is None:
                continue
            folder, tail = known
            if tail.poll() > 0:
                self.plotter.updateCurve(spec.env, spec.srl_model, f"{spec.algo} seed{spec.seed}",
                                         tail.runSteps(self._tails.runEnvs(folder)), np.asarray(tail.rewards))

    def close(self) -> None:
        """Close the monitor files."""
        self._tails.close()
