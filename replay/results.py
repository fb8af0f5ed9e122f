"""Reading finished runs for the comparison tools (gather_results, aggregate_plots, compare_plots).

A run is a folder with ``args.json`` and ``monitor/`` (what ``rl_baselines.train`` writes, alone or in a sweep);
a sweep run that failed (its ``failed.json`` marker) is left out, as are runs without a finished episode, unless the
caller keeps those with evaluations (:func:`findRuns` ``evaluation_only``: a method whose runs all have evaluations is
measured on them, :func:`measuredRuns`; its runs without an episode have empty :attr:`Run.episodes`).
Runs are grouped into methods by (env, srl-model, algo) and, optionally, more args.json keys, each read as the run
applied it (rl_baselines.runs.train_config.appliedSettings: a flag train warned did nothing reads as the run without
it, however old the args.json). A run is unfinished (:attr:`Run.finished` False) while its last step is not saved:
still training, or stopped before ``--num-timesteps`` by train's Ctrl-C or SIGTERM or by its sweep's (a failed.json
that says ``"stopped": true`` marks such a sweep run, not a failed one); :func:`findRuns` leaves those out unless the
caller keeps them (gather_results, at the budgets they reached, never in its final results). Statistics over
seeds: mean, sample standard deviation and a Student-t 95% confidence interval of the mean.

The step of a training episode is the run's step count when it ended, all envs together (the unit of
``--num-timesteps``, ``--eval-freq`` and the evaluations): with ``--num-cpu N``, N times its env's own step count
(rl_baselines.runs.monitor_files.runEnvs and loadEpisodes). A NaN episode reward makes NaN the means over the
windows that hold it, and only those (srl_toolbox.plots.movingAverage); each run with one says so in a warning.

A run trained with ``--eval-freq`` also carries its deterministic evaluations (``evaluations.npz``, SB3's
EvalCallback keys, read by rl_baselines.runs.evaluation.readEvaluations): :attr:`Run.evaluations`, None without them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from rl_baselines.core.manifests import CheckpointError, readManifest
from rl_baselines.core.run_folder import EVALUATIONS_FILE, RunFolder, insideRunRefusal
from rl_baselines.runs.args_format import ARGS_FORMAT_KEY, withAddedSettings
from rl_baselines.runs.evaluation import readEvaluations
from rl_baselines.runs.monitor_files import MonitorFileError, loadEpisodes, runEnvs
from rl_baselines.runs.train_config import appliedSettings
from rl_baselines.sweeps.recorded import trainSettings
from rl_baselines.sweeps.run_attempts import DONE_FILE, FAILED_FILE
from srl_toolbox.cli import UsageError
from srl_toolbox.files import readJson, writeNpz
from srl_toolbox.plots import movingAverage
from srl_toolbox.text import counted

# Folders never walked into: the trials of a hyperparameter search are not seeds of one method.
SKIPPED_FOLDERS = ("hyperparam_search",)
# Mean reward over the episode window that counts as solving an env (measured: docs/benchmarks.md, ppo2 reaches
# a 100-episode mean of 150 on MobileRobotGymEnv-v0 in about 30k steps). Envs not listed have no default.
DEFAULT_THRESHOLDS = {"MobileRobotGymEnv-v0": 150.0}
# The threshold of any env with ground-truth runs: this fraction of ground truth's mean final reward (the SRL + RL
# benchmark's and replay.gather_results').
GROUND_TRUTH_FRACTION = 0.9
GROUP_KEYS = ("env", "srl_model", "algo")
# Settings that differ from seed to seed of one method: not a sign of runs pooled from other settings; nor is the
# format of args.json (runs recorded by two versions of train, whose settings read alike once upgraded)
SEED_OWN = frozenset({"seed", "load_rl_model_path"})
NOT_SETTINGS = SEED_OWN | {ARGS_FORMAT_KEY}


@dataclasses.dataclass
class Run:
    """One run folder: its arguments and its episodes (arrays of :func:`loadEpisodes`)."""

    path: str
    args: dict[str, Any]
    episodes: dict[str, np.ndarray]
    evaluations: dict[str, np.ndarray] | None = None
    finished: bool = True  # its last step saved (False: still training, or stopped before --num-timesteps)
    trained_timesteps: int | None = None  # env steps its saved model trained (None: unknown, its --num-timesteps)
    num_envs: int = 1  # envs stepped together (runEnvs): an episode's step is its env's own step count times them

    def evaluationCurve(self) -> tuple[np.ndarray, np.ndarray] | None:
        """:return: (env steps, mean evaluation reward) of each evaluation, None when the run has none"""
        if self.evaluations is None or self.evaluations["timesteps"].size == 0:
            return None
        return (self.evaluations["timesteps"].astype(np.float64),
                self.evaluations["results"].astype(np.float64).mean(axis=1))

    @property
    def seed(self) -> Any:
        """The run's --seed."""
        return self.args.get("seed")

    def key(self, group_by: Sequence[str] = ()) -> tuple:
        """
        :param group_by: args.json keys that split methods further
        :return: (env, srl_model, algo, *those values)
        """
        return tuple(str(self.args.get(name)) for name in (*GROUP_KEYS, *group_by))


def warnNanRewards(folder: str, rewards: np.ndarray) -> None:
    """
    One warning when a run's episode rewards hold NaN (the means over the windows that hold one are NaN).

    :param folder: the run folder
    :param rewards: its episode rewards
    """
    missing = int(np.isnan(rewards).sum())
    if missing:
        warnings.warn(f"{folder}: {missing} of its {rewards.size} episode rewards are NaN (monitor/*.monitor.csv); "
                      f"its means over the episode windows that hold one are NaN", stacklevel=2)


def runProgress(folder: str, args: dict[str, Any]) -> tuple[bool, int | None]:
    """
    :param folder: a run folder
    :param args: its args.json
    :return: (whether its last step is saved, the env steps its saved model trained): from its manifest (the latest
        model's, written at every checkpoint and at the end); a run without one is finished when a sweep recorded it
        done (done.json) or it holds a model (saved before manifests existed), else it is still training towards its
        first save
    """
    try:
        manifest = readManifest(folder)
    except CheckpointError:
        manifest = None
    if manifest is None and os.path.isfile(os.path.join(folder, DONE_FILE)):
        return True, _stepCount(args.get("num_timesteps"))
    if manifest is None:
        finished = any("_model." in name and os.path.isfile(os.path.join(folder, name)) for name in os.listdir(folder))
        return finished, (_stepCount(args.get("num_timesteps")) if finished else None)
    return bool(manifest.get("finished")), _stepCount(manifest.get("num_timesteps"))


def _failedMarker(folder: str) -> dict[str, Any] | None:
    """:return: the run's failed.json (a sweep's marker of a run that did not finish), None without a readable one"""
    try:
        marker = readJson(os.path.join(folder, FAILED_FILE))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def isStoppedSweepRun(folder: str) -> bool:
    """:return: whether a sweep's Ctrl-C or SIGTERM stopped the run (its failed.json says ``"stopped": true``): an
    unfinished run that the same sweep command continues, read as one stopped by train's own Ctrl-C, not as failed"""
    marker = _failedMarker(folder)
    return marker is not None and marker.get("stopped") is True


def sweepFailure(folder: str) -> str | None:
    """:return: why a sweep run failed (its failed.json's message, "failed" when it has none), None for a run without
    the marker or one a sweep's Ctrl-C or SIGTERM stopped (:func:`isStoppedSweepRun`)"""
    marker = _failedMarker(folder)
    if marker is None or marker.get("stopped") is True:
        return None
    return str(marker.get("message") or "failed")


def _stepCount(value: Any) -> int | None:
    """:return: a recorded step count as an int, None when it is absent or not a finite number"""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value)


def findRuns(log_dir: str, group_by: Sequence[str] = (), unfinished: bool = False,
             evaluation_only: bool = False) -> list[Run]:
    """
    Every run below ``log_dir`` (``log_dir`` itself may be one) with at least one finished episode (or, with
    ``evaluation_only``, evaluations).

    :param log_dir: the folder to walk
    :param group_by: args.json keys the caller groups by (each run must have them)
    :param unfinished: keep the runs still training or stopped before their step count (``Run.finished`` False);
        else they are left out, with a warning
    :param evaluation_only: also keep the runs without a finished episode that have evaluations (their episodes
        empty; :func:`measuredRuns` then leaves them out of the methods measured on training episodes); else they are
        left out with the others without an episode, with a warning
    :return: the runs, sorted by path
    :raises UsageError: the folder does not exist, holds no run with an episode (or with ``evaluation_only``,
        evaluations), or a group_by key is missing
    """
    if not os.path.isdir(log_dir):
        raise UsageError(f"-i/--log-dir {log_dir!r} is not a folder")  # (the flag of the commands that walk runs)
    runs, empty, failed, stopped, unreadable, searches = [], [], [], [], [], []
    for folder, subfolders, files in os.walk(log_dir):
        searches += [os.path.join(folder, d) for d in sorted(subfolders) if d in SKIPPED_FOLDERS]
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS and not d.startswith("."))
        if not RunFolder.isRun(folder):
            continue
        subfolders.clear()  # a run folder holds no other run
        stopped_sweep_run = isStoppedSweepRun(folder)
        if os.path.isfile(os.path.join(folder, FAILED_FILE)) and not stopped_sweep_run:
            failed.append(folder)
            continue
        try:
            args = readJson(RunFolder(folder).args_file)
        except ValueError:
            warnings.warn(f"skipping {folder}: args.json is not valid JSON")
            unreadable.append(f"{folder}: args.json is not valid JSON")
            continue
        if not isinstance(args, dict) or not all(key in args for key in GROUP_KEYS):
            what = (f"names no {' nor '.join(key for key in GROUP_KEYS if key not in args)}"
                    if isinstance(args, dict) else "is not a JSON object")
            warnings.warn(f"skipping {folder}: args.json {what} (not a run's)")
            unreadable.append(f"{folder}: args.json {what}")
            continue
        # a setting added to train since the run was recorded as args.json's upgrade rules give it (--group-by
        # augment_loss: rad for an augmented run made before the flag), and what the run applied of the others
        args = withAddedSettings(args)
        args.update(appliedSettings(args))
        missing = [name for name in group_by if name not in args]
        if missing:
            raise UsageError(f"--group-by {' '.join(missing)}: not in {RunFolder(folder).args_file}; valid keys: "
                             f"{', '.join(sorted(args))}")
        try:
            num_envs = runEnvs(args)
            episodes = loadEpisodes(RunFolder(folder).monitor_dir, num_envs)
        except MonitorFileError as error:
            warnings.warn(f"skipping {folder}: a damaged monitor file ({error})")
            unreadable.append(f"{folder}: a damaged monitor file ({error})")
            continue
        evaluations = loadRunEvaluations(folder) if episodes["rewards"].size or evaluation_only else None
        if episodes["rewards"].size == 0 and evaluations is None:
            empty.append(folder)
            continue
        finished, trained = runProgress(folder, args)
        finished = finished and not stopped_sweep_run
        if not finished and not unfinished:
            stopped.append(folder)
            continue
        warnNanRewards(folder, episodes["rewards"])
        runs.append(Run(folder, args, episodes, evaluations, finished, trained, num_envs))
    if stopped:
        warnings.warn(f"{len(stopped)} unfinished run(s) skipped (still training, or stopped before --num-timesteps: "
                      f"train --resume RUN finishes one), e.g. {stopped[0]}")
    if empty:
        warnings.warn(f"{len(empty)} run(s) without a finished episode skipped"
                      f"{' (nor evaluations)' if evaluation_only else ''}, e.g. {empty[0]}")
    if failed:
        warnings.warn(f"{len(failed)} failed sweep run(s) skipped ({FAILED_FILE}), e.g. {failed[0]}")
    if not runs and stopped and not unfinished:
        raise UsageError(f"every run with a finished episode below {log_dir!r} is unfinished ({len(stopped)} skipped: "
                         f"still training, or stopped before --num-timesteps; train --resume RUN finishes one)")
    # a folder inside a run (its monitor/, a checkpoint) holds no run: name the run, when nothing else was found
    found = runs or empty or failed or stopped or unreadable or searches
    inside = None if found else insideRunRefusal("--log-dir", log_dir)
    if inside is not None:
        raise UsageError(f"{inside[0]}: give --log-dir {inside[1]}")
    if not runs:  # (the skipped runs' warnings are not shown with the refusal: it names them)
        skipped = [f"{len(unreadable)} unreadable, e.g. {unreadable[0]}"] if unreadable else []
        nor = " nor evaluations" if evaluation_only else ""
        skipped += [f"{len(empty)} without a finished episode{nor}"] * bool(empty)
        skipped += [f"{len(failed)} failed sweep run(s) ({FAILED_FILE})"] * bool(failed)
        skipped += [f"the hyperparameter-search trials below {', '.join(searches)} (give that folder to read "
                    f"them)"] * bool(searches)
        raise UsageError(f"no run with a finished episode{' or evaluations' if evaluation_only else ''} below "
                         f"{log_dir!r} (a run folder holds args.json and monitor/)"
                         + (f"; skipped: {', '.join(skipped)}" if skipped else ""))
    return sorted(runs, key=lambda run: run.path)


def hasEpisodes(run: Run) -> bool:
    """:return: whether the run finished a training episode (findRuns' ``evaluation_only`` keeps some that did not)"""
    return run.episodes["rewards"].size > 0


def measuredRuns(runs: Sequence[Run], group_by: Sequence[str] = (), training_rewards: bool = False) -> list[Run]:
    """
    The runs a comparison measures: a method whose runs all have evaluations (:func:`hasEvaluations`) keeps them all,
    those without a finished episode too; a method measured on its training episodes (``training_rewards``, or one of
    its runs has no evaluations) loses its runs without one, with one warning for all.

    :param runs: runs of :func:`findRuns` (with ``evaluation_only``)
    :param group_by: the extra keys that split methods
    :param training_rewards: measure every method on its training episodes
    :return: the runs kept, in their order
    :raises UsageError: none is left
    """
    groups = groupRuns(runs, group_by)
    training = {key for key, members in groups.items() if training_rewards or not hasEvaluations(members)}
    kept = [run for run in runs if hasEpisodes(run) or run.key(group_by) not in training]
    dropped = [run.path for run in runs if not hasEpisodes(run) and run.key(group_by) in training]
    why = "--training-rewards" if training_rewards else f"another run of its method has no {EVALUATIONS_FILE}"
    if dropped and not kept:
        raise UsageError(f"no run with a finished episode to measure on training episodes ({why}): the {len(dropped)} "
                         f"run(s) have only evaluations, e.g. {dropped[0]}"
                         + ("; without --training-rewards they are measured on those" if training_rewards else ""))
    if dropped:
        warnings.warn(f"{len(dropped)} run(s) without a finished episode skipped (they have only evaluations, and "
                      f"their method is measured on training episodes: {why}), e.g. {dropped[0]}", stacklevel=2)
    return kept


def loadRunEvaluations(folder: str) -> dict[str, np.ndarray] | None:
    """
    :param folder: a run folder
    :return: its evaluations.npz arrays, None when it has none or they are unreadable (with a warning)
    """

    try:
        evaluations = readEvaluations(folder)
    except ValueError as error:
        warnings.warn(f"{folder}: evaluations ignored ({error})")
        return None
    return evaluations if evaluations is not None and evaluations["timesteps"].size else None


def hasEvaluations(runs: Sequence[Run]) -> bool:
    """
    :param runs: the runs of one method
    :return: whether every one of them has evaluations (the comparison tools then use those)
    """
    return bool(runs) and all(run.evaluations is not None for run in runs)


def aggregateEvaluations(runs: Sequence[Run]) -> tuple[np.ndarray, np.ndarray]:
    """
    Put the runs' evaluation means on one x axis: the evaluation steps every run has (runs of one command evaluate
    at the same multiples of --eval-freq).

    :param runs: runs that all have evaluations
    :return: (x, y) with y of shape (runs, points)
    :raises ValueError: the runs share no evaluation step
    """
    curves = [run.evaluationCurve() for run in runs]
    common = curves[0][0]
    for x, _ in curves[1:]:
        common = np.intersect1d(common, x)
    if common.size == 0:
        raise ValueError("the runs share no evaluation step (different --eval-freq?)")
    rows = [y[np.searchsorted(x, common)] for x, y in curves]
    return common, np.stack(rows)


def groupRuns(runs: Sequence[Run], group_by: Sequence[str] = ()) -> dict[tuple, list[Run]]:
    """
    :param runs: runs
    :param group_by: extra args.json keys
    :return: runs by method key (see :meth:`Run.key`), keys sorted
    """
    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.key(group_by), []).append(run)
    return dict(sorted(groups.items()))


def mixedSettings(runs: Sequence[Run]) -> tuple[list[str], list[Any]]:
    """
    :param runs: the runs of one method
    :return: (the settings that change a result, rl_baselines.sweeps.recorded.trainSettings, on which they differ,
        sorted; the seeds two or more of them share, sorted): what makes them other than seeds of one method
    """
    # (a model each seed continues is its own: seeds of one setting)
    settings = [{name: value for name, value in trainSettings(run.args).items() if name not in NOT_SETTINGS}
                for run in runs]
    names = sorted({name for first in settings[:1] for other in settings[1:]
                    for name in set(first) | set(other) if first.get(name) != other.get(name)})
    seeds = [run.seed for run in runs]
    return names, sorted({seed for seed in seeds if seeds.count(seed) > 1}, key=str)


def warnMixedMethods(groups: dict[tuple, list[Run]], group_by: Sequence[str] = ()) -> None:
    """
    One warning per method whose runs are not seeds of one setting: they differ in a setting that changes the result
    (another --num-timesteps or hyperparameter) or two share a seed; the statistics pool them all the same.

    :param groups: method key -> its runs (:func:`groupRuns`)
    :param group_by: the extra keys of the methods (for their labels)
    """
    for key, runs in groups.items():
        names, shared = mixedSettings(runs)
        if not names and not shared:
            continue
        reasons = ([f"differ in {', '.join(names)}"] if names else []) + (
            [f"share seed {', '.join(map(str, shared))}"] if shared else [])
        warnings.warn(f"{key[0]} {methodLabel(key, group_by)}: its {len(runs)} runs {' and '.join(reasons)}, and are "
                      "pooled as the seeds of one method" + (f" (--group-by {' '.join(names)} splits them)"
                                                            if names else ""), stacklevel=2)


def methodLabel(key: tuple, group_by: Sequence[str] = ()) -> str:
    """
    :param key: a method key (env, srl_model, algo, *extra)
    :param group_by: the extra keys' names
    :return: ``algo srl_model`` plus ``name=value`` for the extra keys (the env is the plot's title)
    """
    extra = [f"{name}={value}" for name, value in zip(group_by, key[len(GROUP_KEYS):])]
    return " ".join([key[2], key[1], *extra])


def meanInterval(samples: Sequence[float], level: float = 0.95) -> tuple[float, float, float, float]:
    """
    :param samples: one value per seed
    :param level: confidence level of the interval
    :return: (mean, sample std, interval low, interval high); std and interval are nan for fewer than 2 samples
    """
    values = np.asarray(samples, dtype=np.float64)
    if values.size == 0:
        return (math.nan,) * 4
    mean = float(values.mean())
    if values.size < 2:
        return mean, math.nan, math.nan, math.nan

    std = float(values.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, values.size - 1)) * std / math.sqrt(values.size)
    return mean, std, mean - half, mean + half


def trailingMean(rewards: np.ndarray, window: int) -> np.ndarray:
    """
    :param rewards: episode rewards
    :param window: episodes averaged
    :return: ``out[i]`` = mean of the last ``window`` rewards up to episode i (fewer at the start)
    """

    return movingAverage(rewards, window)


def firstStepAtOrAbove(timesteps: np.ndarray, values: np.ndarray, threshold: float) -> int | None:
    """
    The core of the steps-to-threshold family (:func:`evaluationStepsToThreshold`,
    :func:`episodeWindowStepsToThreshold`).

    :param timesteps: env steps, one per value
    :param values: the curve read at those steps
    :param threshold: the level to reach
    :return: the step of the first value at or above ``threshold``, None when none is
    """
    reached = np.flatnonzero(np.asarray(values) >= threshold)
    return int(np.asarray(timesteps)[reached[0]]) if reached.size else None


def evaluationStepsToThreshold(timesteps: np.ndarray, rewards: np.ndarray, threshold: float) -> int | None:
    """
    Steps to a threshold on the deterministic evaluations (``evaluations.npz``).

    :param timesteps: env steps of the evaluations
    :param rewards: their mean rewards (one per evaluation)
    :param threshold: the reward to reach
    :return: the step of the first evaluation at or above ``threshold``, None when none is
    """
    return firstStepAtOrAbove(timesteps, rewards, threshold)


def episodeWindowStepsToThreshold(timesteps: np.ndarray, rewards: np.ndarray, threshold: float, window: int
                                  ) -> int | None:
    """
    Steps to a threshold on the training episodes, smoothed over a moving window.

    :param timesteps: the run's step count (all envs together) at the end of each episode
    :param rewards: episode rewards
    :param threshold: the mean reward to reach
    :param window: episodes averaged (the mean counts once ``window`` episodes are finished)
    :return: the env step at which the mean of the last ``window`` episodes first reaches ``threshold``, or None
    """
    if rewards.size < window:
        return None
    return firstStepAtOrAbove(timesteps[window - 1:], trailingMean(rewards, window)[window - 1:], threshold)


def episodeCurve(run: Run, window: int) -> np.ndarray:
    """:return: the run's reward moving average, one value per episode"""
    return trailingMean(run.episodes["rewards"], window)


def aggregateCurves(runs: Sequence[Run], window: int, by_timesteps: bool, num_points: int = 200
                    ) -> tuple[np.ndarray, np.ndarray]:
    """
    Put the runs' smoothed reward curves on one x axis, truncated to the shortest run.

    :param runs: the runs of one method
    :param window: episodes of the moving average
    :param by_timesteps: x = env steps (each run's curve read at the last episode finished by x) instead of episodes
    :param num_points: points of the x axis in timesteps mode
    :return: (x, y) with y of shape (runs, points)
    :raises ValueError: (by timesteps) a run's last episode ends before another's first: they share no step to read
        both at (a curve there would hold the first run's last value past its end)
    """
    curves = [episodeCurve(run, window) for run in runs]
    if not by_timesteps:
        length = min(len(curve) for curve in curves)
        return np.arange(1, length + 1, dtype=np.float64), np.stack([curve[:length] for curve in curves])
    starts = max(int(run.episodes["timesteps"][0]) for run in runs)
    ends = min(int(run.episodes["timesteps"][-1]) for run in runs)
    if ends < starts:
        early = min(runs, key=lambda run: int(run.episodes["timesteps"][-1]))
        late = max(runs, key=lambda run: int(run.episodes["timesteps"][0]))
        raise ValueError(f"its runs share no step: {early.path} ends at step {ends:,}, before the first episode of "
                         f"{late.path} (step {starts:,})")
    x = np.unique(np.linspace(starts, max(starts, ends), num_points).round())
    rows = []
    for run, curve in zip(runs, curves):
        index = np.searchsorted(run.episodes["timesteps"], x, side="right") - 1
        rows.append(curve[index])
    return x, np.stack(rows)


def bandOverSeeds(y: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    :param y: curves, shape (runs, points)
    :param level: confidence level
    :return: (mean, low, high) per point; with one run the band is the curve itself
    """
    mean = y.mean(axis=0)
    if y.shape[0] < 2:
        return mean, mean.copy(), mean.copy()

    half = stats.t.ppf(0.5 + level / 2, y.shape[0] - 1) * y.std(axis=0, ddof=1) / math.sqrt(y.shape[0])
    return mean, mean - half, mean + half


# The y axes of aggregated curves: the training episodes' moving average, or the deterministic evaluations' mean
TRAINING_Y_LABEL = "episode reward (moving average)"
EVALUATION_Y_LABEL = "mean evaluation reward"


def curvesYLabel(y_label: str, window: int | None) -> str:
    """
    :param y_label: what the curves are (TRAINING_Y_LABEL or EVALUATION_Y_LABEL)
    :param window: the training curves' episode window, None when unknown (or evaluation curves)
    :return: the y axis label of a figure of them, with the window when known
    """
    if y_label != TRAINING_Y_LABEL or window is None:
        return y_label
    return f"episode reward (moving average over {window} episodes, fewer at the start)"


def saveCurves(path: str, x: np.ndarray, y: np.ndarray, label: str, env: str, x_label: str, paths: Sequence[str],
               y_label: str = TRAINING_Y_LABEL, window: int | None = None) -> None:
    """
    Export aggregated curves as ``.npz`` (no pickled objects): ``x`` (points), ``y`` (runs x points), ``label``,
    ``env``, ``x_label``, ``y_label``, ``runs`` (the run folders) and, for training curves, ``episode_window``.

    :param path: the .npz file
    :param x: x axis
    :param y: one smoothed curve per run
    :param label: the method's label
    :param env: the env id
    :param x_label: "episodes" or "timesteps"
    :param paths: the run folders, one per row of y
    :param y_label: what y is (TRAINING_Y_LABEL or EVALUATION_Y_LABEL)
    :param window: the episodes of the training curves' moving average (None: not saved)
    """
    arrays = {"x": x, "y": y, "label": np.array(label), "env": np.array(env), "x_label": np.array(x_label),
              "y_label": np.array(y_label), "runs": np.array(list(paths))}
    if window is not None:
        arrays["episode_window"] = np.array(int(window))
    writeNpz(path, arrays)


def loadCurves(path: str) -> dict[str, Any]:
    """
    :param path: an .npz of :func:`saveCurves`
    :return: its arrays (label, env, x_label, y_label as str; a file written before y_label holds training curves;
        episode_window an int, None when the file does not say: evaluation curves, or written before it was saved)
    :raises UsageError: missing or not such a file
    """
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ValueError("a single array, not an .npz archive")
        with data:
            curves = {name: data[name] for name in data.files}
    except OSError as error:
        raise UsageError(f"{path!r} is not a readable .npz file ({error.strerror or error})") from None
    except (ValueError, EOFError) as error:
        # numpy says of any other file that it "contains pickled (object) data", with advice to load it unsafely
        reason = "not an .npz archive" if "pickled" in str(error) else str(error)
        raise UsageError(f"{path!r} is not a readable .npz file ({reason}); give the .npz files of "
                         "replay.aggregate_plots") from None
    if not {"x", "y"} <= set(curves) or curves["y"].ndim != 2 or curves["x"].shape[0] != curves["y"].shape[1]:
        raise UsageError(f"{path!r} has no curves x (points) and y (runs x points); write it with "
                         f"replay.aggregate_plots")
    for name in ("label", "env", "x_label"):
        curves[name] = str(curves[name]) if name in curves else ""
    curves["y_label"] = str(curves["y_label"]) if "y_label" in curves else TRAINING_Y_LABEL
    window = curves.get("episode_window")
    curves["episode_window"] = (int(window) if window is not None and window.ndim == 0
                                and np.issubdtype(window.dtype, np.integer) and int(window) > 0 else None)
    return curves


def safeName(text: str) -> str:
    """:return: ``text`` usable in a file name"""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


# the replay tools' name for srl_toolbox.text.counted (``3 runs``)
plural = counted


def identityDigest(identity: str, digits: int = 8) -> str:
    """:return: the first ``digits`` hexadecimal digits of the SHA-1 of ``identity``: what a file name gets in place
    of (or after) a thing's name to tell it apart, the same at every call"""
    return hashlib.sha1(identity.encode("utf-8", "surrogateescape")).hexdigest()[:digits]


def distinctStems(stems: Mapping[str, str], ends: Sequence[str] = ("",)) -> dict[str, str]:
    """
    File names that two things written by one call (runs, methods) never share. A thing's files are its stem followed
    by each of ``ends`` (their common extension left out). A thing keeps its stem unless one of its files would have
    the name of another thing's file, compared without case (``A_run`` and ``a_run`` are one file on a
    case-insensitive file system: macOS's and Windows' defaults); then each thing of the clash gets ``_`` and the
    first 8 hexadecimal digits of the SHA-1 of its identity appended to its stem (all 40 in the unlikely case that 8
    still clash). Stems keep their case.

    Invariants: without a clash every stem is returned unchanged; a suffix depends on its thing's identity alone, so a
    thing keeps its name from call to call while the same things clash; the names returned are distinct, case aside.

    :param stems: each thing's identity (e.g. a run's path below the folder searched) -> the stem of its files
    :param ends: what follows the stem in each of a thing's files (e.g. ``("", "_evaluation")``)
    :return: identity -> the stem to use
    :raises UsageError: names that still clash with the whole digest (a folder named after another's digest)
    """
    def clashing(named: dict[str, str]) -> list[str]:
        owners: dict[str, set[str]] = {}
        for identity, stem in named.items():
            for end in ends:
                owners.setdefault((stem + end).casefold(), set()).add(identity)
        return sorted({identity for names in owners.values() if len(names) > 1 for identity in names})

    result = dict(stems)
    for digits in (8, 40):
        for identity in clashing(result):
            result[identity] = f"{stems[identity]}_{identityDigest(identity, digits)}"
    left = clashing(result)
    if left:
        raise UsageError(f"{', '.join(left)} would write files of the same name ({result[left[0]]}); rename one of "
                         "them")
    return result
