"""The Python API of the results, for notebooks and scripts: the table ``python -m replay.gather_results`` prints, and
one run's reward curve, without a shell.

The table is the command's own: its keywords are the command's long flags (``timestep_budget=[128]`` is
``--timestep-budget 128``), read by its parser and checked by its checks (replay.gather_results.checkedInputs), and
its rows are :func:`replay.gather_results.gather`'s, the rows of the command's ``results.csv``. Hence:

- bad input (an unknown keyword, a value the command refuses, a folder without runs) raises :class:`UsageError` with
  the command's one-line message, before anything is written;
- nothing is written unless ``output_dir`` is given (the command writes ``results.csv`` and ``results.md`` in its
  ``--log-dir`` by default; the API writes them in ``output_dir`` when asked);
- the runs the command skips or pools with a warning raise the same warnings (Python's ``warnings``).

The names are importable from the package too: ``from replay import gatherResults``.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np

from replay import gather_results
from replay.results import Run, episodeCurve, findRuns, plural
from rl_baselines.core.run_folder import RunFolder
from srl_toolbox.cli import UsageError
from srl_toolbox.settings import integerKeyword, keywordArguments, plainValue
from srl_toolbox.terminal import HeldWarnings
from srl_toolbox.text import Shown, shortRepr, withArticle

__all__ = ["ResultsTable", "RunCurve", "UsageError", "gatherResults", "runCurve"]


@dataclasses.dataclass(frozen=True)
class ResultsTable:
    """
    What :func:`gatherResults` measured.

    :param rows: one per timestep budget (``budget``: ``"final"`` first, then each ``timestep_budget``) and method
        (``env``, ``srl_model``, ``algo`` and the ``group_by`` keys): ``runs``, ``seeds``, ``mean_reward``,
        ``std_reward``, ``ci95_low``, ``ci95_high``, ``source`` (``evaluation`` or ``training``), ``threshold``,
        ``threshold_source``, ``reached``, ``median_steps_to_threshold``, ``mean_wall_time_s``, ``fewest_episodes``,
        ``no_episode_yet``, ``welch_vs``, ``welch_p_value``; the command's ``results.csv`` rows, with None and NaN
        where the CSV leaves a cell empty
    :param markdown: the tables the command prints and writes as ``results.md``
    :param run_dirs: the run folders measured, sorted
    :param files: the files written (``results.csv``, ``results.md`` in ``output_dir``), empty unless asked
    """

    rows: list[dict[str, Any]]
    markdown: str
    run_dirs: tuple[str, ...]
    files: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return shortRepr(type(self).__name__, [("rows", Shown(f"<{plural(len(self.rows), 'row')}>")),
                                               ("run_dirs", Shown(f"<{plural(len(self.run_dirs), 'run')}>")),
                                               ("files", self.files)])

    def __str__(self) -> str:
        return self.markdown

    def _repr_markdown_(self) -> str:
        """The tables, as a notebook shows them."""
        return self.markdown


@dataclasses.dataclass(frozen=True)
class RunCurve:
    """
    One run's rewards as the results read them (replay.results).

    :param run_dir: the run folder
    :param args: its arguments (args.json, as the results read them)
    :param timesteps: the run's step count when each training episode ended (all envs together: the unit of
        ``num_timesteps``)
    :param episode_rewards: each training episode's reward
    :param episode_lengths: each training episode's length, in its env's steps
    :param smoothed: the mean reward of the last ``episode_window`` episodes at each episode (fewer at the start)
    :param evaluation_timesteps: the step count of each deterministic evaluation (``train --eval-freq``), None
        without them
    :param evaluation_rewards: each evaluation's mean reward, None without them
    :param finished: whether the run saved its last step (False: still training, or stopped before its budget)
    """

    run_dir: str
    args: dict[str, Any]
    timesteps: np.ndarray
    episode_rewards: np.ndarray
    episode_lengths: np.ndarray
    smoothed: np.ndarray
    evaluation_timesteps: np.ndarray | None
    evaluation_rewards: np.ndarray | None
    finished: bool

    def __repr__(self) -> str:
        evaluations = len(self.evaluation_timesteps) if self.evaluation_timesteps is not None else None
        last = int(self.timesteps[-1]) if len(self.timesteps) else None
        return shortRepr(type(self).__name__, [("run_dir", self.run_dir), ("episodes", len(self.episode_rewards)),
                                               ("last_episode_end", last), ("evaluations", evaluations),
                                               ("finished", self.finished)])


def gatherResults(log_dir: str | os.PathLike, *, output_dir: str | os.PathLike | None = None,
                  **flags: Any) -> ResultsTable:
    """
    Compare the methods of the runs below a folder, as ``python -m replay.gather_results --log-dir LOG_DIR`` does.

    :param log_dir: the folder to walk for runs (a sweep's ``log_dir``)
    :param output_dir: write ``results.csv`` and ``results.md`` there, as ``--output-dir``; None: nothing written
    :param flags: any other flag of the command by its long name with ``_`` for ``-``: ``timestep_budget`` (a list
        of env-step budgets), ``episode_window``, ``threshold``, ``threshold_fraction``, ``welch_test``, ``group_by``
        (a list of args.json keys), ``training_rewards=True``
    :return: the rows, the Markdown tables, the runs measured and the files written
    :raises UsageError: bad input, with the command's one-line message, before anything is written
    """
    words = keywordArguments(gather_results.buildParser(),
                             {"log_dir": log_dir, **flags, "output_dir": output_dir}, "replay.gather_results")
    with HeldWarnings():
        args, runs, csv_path, md_path = gather_results.checkedInputs(words, write=output_dir is not None)
    rows, text = gather_results.tables(args, runs)
    files: tuple[str, ...] = ()
    if csv_path is not None and md_path is not None:
        gather_results.writeTables(csv_path, md_path, rows, text)
        files = (csv_path, md_path)
    return ResultsTable(rows, text, tuple(run.path for run in runs), files)


def runCurve(run_dir: str | os.PathLike, episode_window: int = 100) -> RunCurve:
    """
    :param run_dir: a run folder (``TrainResult.run_dir``, a folder of :attr:`ResultsTable.run_dirs`)
    :param episode_window: episodes of the moving average (``smoothed``), as gather_results' ``episode_window``
    :return: the run's training episodes and evaluations
    :raises UsageError: not a run folder, a damaged one, or one without a finished episode nor evaluations
    """
    if not isinstance(run_dir, (str, os.PathLike)):
        hint = ": give its run_dir" if isinstance(getattr(run_dir, "run_dir", None), (str, os.PathLike)) else ""
        raise UsageError(f"run_dir must be a run folder's path (a string or a path), not "
                         f"{withArticle(type(run_dir).__name__)}{hint}")
    if not RunFolder.isRun(os.fspath(run_dir)):
        raise UsageError(f"run_dir {os.fspath(run_dir)!r} is not a run folder (a folder with args.json and monitor/, "
                         "as training writes)")
    window = integerKeyword("episode_window", plainValue(episode_window))
    run: Run = findRuns(os.fspath(run_dir), unfinished=True, evaluation_only=True)[0]
    curve = run.evaluationCurve()
    return RunCurve(run.path, run.args, run.episodes["timesteps"], run.episodes["rewards"], run.episodes["lengths"],
                    episodeCurve(run, int(window)), None if curve is None else curve[0],
                    None if curve is None else curve[1], run.finished)
