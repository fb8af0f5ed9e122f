"""The state a checkpoint keeps beyond the model file, as NumPy arrays and JSON (never pickle).

- global random generators: Python's ``random``, NumPy's legacy global generator, torch's CPU generator and, once
  the process has initialised CUDA, each GPU's generator (a policy on a GPU samples its actions, TD3 its
  target noise and ``--augment`` its offsets there);
- the frames a ``--num-stack`` run holds for each env (:func:`captureFrameStack`), and the discounted return so far a
  ``VecNormalize`` keeps for each (:func:`captureReturns`), given back to the envs that go on with their episodes;
- each env's generator as it was when its current episode started and the actions played since
  (rl_baselines.envs.wrappers.EpisodeStartRNG): a resumed run starts the episode that was in progress again from the
  same start, and plays those actions again where its algorithm goes on from the env's state, since an env's
  internal state (PyBullet bodies...) is not saved;
- replay buffers: every array attribute of a buffer object (its filled rows), its counters, and Stable-Baselines3
  HER's per-transition info dicts as JSON;
- the state of a ``cma`` strategy: its numeric attributes, set back on a strategy built with the same options;
- the values an SB3 logger holds for its next progress.csv row (running means included);
- the monitor files and progress.csv of a run continuing where the checkpoint left them.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common import logger as sb3_logger
from stable_baselines3.common.vec_env import VecFrameStack

from rl_baselines.core.run_folder import RunFolder
from rl_baselines.envs.factory import findVecNormalize
from srl_toolbox.files import atomicPath, writeJson, writeNpz
from srl_toolbox.global_state import captureGlobalRNG as captureGlobalRNG  # re-exported: a checkpoint's
from srl_toolbox.global_state import restoreGlobalRNG as restoreGlobalRNG  # generators, stored with its state

RNG_FILE = "rng_state.npz"
# A checkpoint's stacked observations (--num-stack), those the next step acts on
FRAME_STACK_FILE = "frame_stack.npz"
BUFFER_ARRAYS_FILE = "buffer.npz"
BUFFER_VALUES_FILE = "buffer.json"
# Scalars of a buffer object kept with its arrays (counters and positions; configuration is rebuilt by the run).
_SCALAR_TYPES = (bool, int, float)


# --- env generators --------------------------------------------------------------------------------------


def generatorState(generator: np.random.Generator | None) -> dict[str, Any] | None:
    """:return: a NumPy Generator's state (a JSON-able dict), None for no generator"""
    return None if generator is None else generator.bit_generator.state


def setGeneratorState(generator: np.random.Generator | None, state: dict[str, Any] | None) -> None:
    """Set a Generator to a state from :func:`generatorState` (nothing when either is None)."""
    if generator is not None and state is not None:
        generator.bit_generator.state = state


# --- env generators ----------------------------------------------------------------------------------------------


def baseVecEnv(venv: Any) -> Any:
    """:return: the innermost VecEnv of a wrapper chain (the one holding the envs)"""
    while hasattr(venv, "venv"):
        venv = venv.venv
    return venv


def captureEpisodeStarts(venv: Any) -> list[dict[str, Any] | None] | None:
    """
    :param venv: a VecEnv whose envs are wrapped in :class:`EpisodeStartRNG` (by ``rl_baselines.envs.factory``)
    :return: each env's episode start, None when the envs do not record it (a plugin's own envs) or are closed
    """
    try:
        return list(venv.env_method("episodeStart"))
    except (AttributeError, EOFError, BrokenPipeError, OSError, AssertionError):
        return None


def restartEpisodes(venv: Any, episode_starts: list[dict[str, Any] | None] | None, replay: bool = False) -> None:
    """
    Make the next reset of every env start the episode that was in progress when ``episode_starts`` was captured,
    and drop the seeds that creating the VecEnv queued for that reset.

    :param venv: the VecEnv
    :param episode_starts: what :func:`captureEpisodeStarts` returned
    :param replay: the reset also plays each episode's actions again, to where it was at the capture (an
        algorithm that goes on from its env's state: ``BaseRLObject.REPLAYS_EPISODES_IN_PROGRESS``)
    """
    if not episode_starts or len(episode_starts) != venv.num_envs:
        return
    base = baseVecEnv(venv)
    if hasattr(base, "_reset_seeds"):
        base._reset_seeds()  # the seeds of createEnvs would replace the restored generators
    for index, start in enumerate(episode_starts):
        venv.env_method("restartEpisode", start, replay, indices=[index])


def continuedEpisodes(venv: Any) -> list[bool]:
    """:return: per env, whether its last reset played its episode in progress at the checkpoint again to where it
    was (:func:`restartEpisodes` with ``replay``), so that the episode goes on; False for envs that do not say"""
    try:
        return [bool(went_on) for went_on in venv.env_method("continuedEpisode")]
    except (AttributeError, EOFError, BrokenPipeError, OSError, AssertionError):
        return [False] * venv.num_envs


def episodesContinued(venv: Any) -> bool:
    """:return: whether every env's episode goes on (:func:`continuedEpisodes`)"""
    return all(continuedEpisodes(venv))


def shadowOnce(obj: Any, name: str, instead: Callable[..., Any]) -> None:
    """
    Make the next call of ``obj.name`` (a method) call ``instead(method, *args, **kwargs)`` with the class's method
    bound to ``obj``; the calls after it are the method's again (an instance attribute that removes itself).
    """
    method = getattr(type(obj), name).__get__(obj)

    def once(*args: Any, **kwargs: Any) -> Any:
        delattr(obj, name)
        return instead(method, *args, **kwargs)

    setattr(obj, name, once)


def _frameStack(venv: Any) -> VecFrameStack | None:
    """:return: the VecFrameStack in the wrapper chain of ``venv``, if any"""
    while venv is not None and not isinstance(venv, VecFrameStack):
        venv = getattr(venv, "venv", None)
    return venv


def captureFrameStack(venv: Any) -> np.ndarray | None:
    """:return: the frames a VecFrameStack in the chain of ``venv`` holds for each env (``--num-stack``: what the
    next step acts on), None without one or for a dict of observations"""
    stacked = getattr(getattr(_frameStack(venv), "stacked_obs", None), "stacked_obs", None)
    return stacked.copy() if isinstance(stacked, np.ndarray) else None


def restoreNextStack(venv: Any, stacked: np.ndarray) -> None:
    """
    Give each env whose next reset goes on with its episode (:func:`episodesContinued`, per env) the stacked frames
    of the checkpoint, once, after that reset (which restarts a stack from the replayed frame alone).

    :param venv: the training VecEnv
    :param stacked: what :func:`captureFrameStack` returned
    """
    stack = _frameStack(venv)
    if stack is None or getattr(getattr(stack, "stacked_obs", None), "stacked_obs", None) is None:
        return

    def withFrames(reset: Callable[[], Any]) -> Any:
        observation = reset()
        frames = stack.stacked_obs.stacked_obs
        if stacked.shape != frames.shape:
            return observation
        for index, went_on in enumerate(continuedEpisodes(stack.venv)):
            if went_on:
                frames[index] = stacked[index]
        return frames

    shadowOnce(stack, "reset", withFrames)


def captureReturns(venv: Any) -> list[float] | None:
    """
    :param venv: the training VecEnv
    :return: the discounted return of each env's episode so far that a VecNormalize in its chain keeps (what its
        reward statistics are updated from at every step; a reset zeroes it), None without one
    """
    returns = getattr(findVecNormalize(venv), "returns", None)
    return None if returns is None else [float(value) for value in np.asarray(returns, dtype=np.float64)]


def resumeEnvs(venv: Any, episode_starts: list[dict[str, Any] | None] | None, frames: np.ndarray | None,
               replay: bool, returns: list[float] | np.ndarray | None = None) -> None:
    """
    Prepare the next reset of a resumed run's training env: each env restarts its episode in progress at the capture
    (:func:`restartEpisodes`), with its stacked frames and its return so far where it goes on with it
    (:func:`restoreNextStack`), and the normalisation statistics stay as they are during that reset
    (:func:`freezeNextReset`).

    :param venv: the training VecEnv
    :param episode_starts: what :func:`captureEpisodeStarts` returned
    :param frames: what :func:`captureFrameStack` returned, or None
    :param replay: the reset plays each episode's actions again (see :func:`restartEpisodes`)
    :param returns: what :func:`captureReturns` returned, or None
    """
    restartEpisodes(venv, episode_starts, replay=replay)
    if replay and frames is not None:
        restoreNextStack(venv, frames)
    freezeNextReset(venv, returns if replay else None)


def freezeNextReset(venv: Any, returns: list[float] | np.ndarray | None = None) -> None:
    """
    Keep the normalisation statistics of ``venv`` (a VecNormalize in its chain) unchanged during its next reset
    only: the observations a resumed run resets to were already counted before its checkpoint.

    :param venv: the training VecEnv
    :param returns: each env's discounted return at the checkpoint (:func:`captureReturns`), given back after the
        reset to the envs that go on with their episode (:func:`continuedEpisodes`), so that the reward statistics
        go on as in the uninterrupted run; None: every return starts at 0, as a reset leaves it
    """

    vec_normalize = findVecNormalize(venv)
    if vec_normalize is None or not vec_normalize.training:
        return

    def frozen(reset: Callable[[], Any]) -> Any:
        vec_normalize.training = False
        try:
            observation = reset()
        finally:
            vec_normalize.training = True
        if returns is not None and len(returns) == vec_normalize.num_envs:
            vec_normalize.returns = np.where(continuedEpisodes(venv), np.asarray(returns, dtype=np.float64), 0.0)
        return observation

    shadowOnce(vec_normalize, "reset", frozen)


def _jsonDefault(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": str(value.dtype), "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} cannot be saved in a replay buffer's infos")


def _jsonObject(data: dict[str, Any]) -> Any:
    if "__ndarray__" in data:
        return np.asarray(data["__ndarray__"], dtype=data["dtype"]).reshape(data["shape"])
    return data


def saveBuffer(buffer: Any, folder: str, capacity: int, filled: int) -> None:
    """
    Write a replay buffer's arrays (their first ``filled`` rows when their first axis is ``capacity``), its scalar
    attributes, and object arrays of dicts (HER's infos) as JSON.

    :param buffer: the buffer object
    :param folder: destination folder (created)
    :param capacity: the buffer's length along the first axis of its arrays
    :param filled: how many leading rows hold data
    """
    os.makedirs(folder, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    values: dict[str, Any] = {"capacity": int(capacity), "filled": int(filled), "scalars": {}, "objects": {}}

    def rows(array: np.ndarray) -> np.ndarray:
        return array[:filled] if array.ndim > 0 and array.shape[0] == capacity else array

    for name, value in vars(buffer).items():
        if isinstance(value, np.ndarray) and value.dtype == object:
            values["objects"][name] = rows(value).tolist()
        elif isinstance(value, np.ndarray):
            arrays[name] = rows(value)
        elif isinstance(value, dict) and value and all(isinstance(v, np.ndarray) for v in value.values()):
            for key, array in value.items():
                arrays[f"{name}/{key}"] = rows(array)
        elif isinstance(value, _SCALAR_TYPES) or isinstance(value, np.generic):
            values["scalars"][name] = value.item() if isinstance(value, np.generic) else value
    writeNpz(os.path.join(folder, BUFFER_ARRAYS_FILE), arrays)
    writeJson(os.path.join(folder, BUFFER_VALUES_FILE), values, sort_keys=False, indent=None, default=_jsonDefault)


def loadBuffer(buffer: Any, folder: str, capacity: int) -> int:
    """
    Fill a buffer built for this run with what :func:`saveBuffer` wrote.

    :param buffer: the new, empty buffer (same kind, capacity and spaces)
    :param folder: the folder saveBuffer wrote
    :param capacity: the new buffer's length along the first axis of its arrays
    :return: how many rows were restored
    :raises ValueError: the saved buffer does not fit this one (one line)
    """
    with open(os.path.join(folder, BUFFER_VALUES_FILE), encoding="utf-8") as handle:
        values = json.load(handle, object_hook=_jsonObject)
    if int(values["capacity"]) != int(capacity):
        raise ValueError(f"the saved replay buffer holds {values['capacity']} transitions, this run's {capacity}")
    filled = int(values["filled"])
    with np.load(os.path.join(folder, BUFFER_ARRAYS_FILE), allow_pickle=False) as data:
        for key in data.files:
            name, _, sub = key.partition("/")
            target = getattr(buffer, name, None)
            if sub:
                target = target.get(sub) if isinstance(target, dict) else None
            saved = data[key]
            if not isinstance(target, np.ndarray) or target.dtype != saved.dtype or (
                    target.shape[1:] != saved.shape[1:] if target.shape[:1] == (capacity,) else target.shape != saved.shape):
                shape = None if not isinstance(target, np.ndarray) else target.shape
                raise ValueError(f"the saved replay buffer's {key} {saved.dtype}{saved.shape} does not fit this run's "
                                 f"({shape})")
            if target.ndim > 0 and target.shape[0] == capacity:
                target[:filled] = saved
            else:
                target[...] = saved
    for name, value in values["scalars"].items():
        if isinstance(getattr(buffer, name, None), _SCALAR_TYPES):
            setattr(buffer, name, type(getattr(buffer, name))(value))
    for name, rows in values["objects"].items():
        target = getattr(buffer, name, None)
        if isinstance(target, np.ndarray) and target.dtype == object:
            for index, row in enumerate(rows):
                target[index] = row if target.ndim == 1 else _objectRow(row)
    return filled


def _objectRow(row: list) -> np.ndarray:
    out = np.empty(len(row), dtype=object)
    for index, item in enumerate(row):
        out[index] = item
    return out


# --- cma strategies ----------------------------------------------------------------------------------------------

# Attributes of a cma strategy that are clocks or log writers, not search state.
_CMA_SKIPPED = frozenset({"timer", "logger"})
# Markers, in the JSON values, of a list of arrays (stored with the arrays) and of a range.
_ARRAY_LIST = "__arrays__"
_RANGE = "__range__"


def captureObjectState(obj: Any, package: str, path: str = "", arrays: dict | None = None,
                       values: dict | None = None, seen: set | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """
    The numeric state of an object of ``package`` (a ``cma.CMAEvolutionStrategy``): every array, number, string
    and list of numbers among its attributes and those of its attributes that are objects of the same package.

    :param obj: the object
    :param package: top-level package whose objects are walked into
    :param path: attribute path of ``obj`` (recursion)
    :param arrays: arrays found so far (recursion)
    :param values: plain values found so far (recursion)
    :param seen: objects already walked (recursion)
    :return: (arrays by dotted path, plain values by dotted path); the arrays are copies
    """
    arrays = {} if arrays is None else arrays
    values = {} if values is None else values
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return arrays, values
    seen.add(id(obj))
    for name, value in vars(obj).items():
        if name in _CMA_SKIPPED:
            continue
        key = f"{path}.{name}" if path else name
        if isinstance(value, np.ndarray) and value.dtype != object:
            arrays[key] = value.copy()
        elif isinstance(value, np.generic):
            values[key] = value.item()
        elif value is None or isinstance(value, (bool, int, float, str)):
            values[key] = value
        elif type(value) is list and all(isinstance(item, (bool, int, float)) for item in value):
            values[key] = list(value)
        elif type(value) is list and all(isinstance(item, np.ndarray) and item.dtype != object for item in value):
            values[key] = {_ARRAY_LIST: len(value)}  # injected directions, ...: the arrays go with the others
            arrays.update((f"{key}[{index}]", item.copy()) for index, item in enumerate(value))
        elif isinstance(value, range):
            values[key] = {_RANGE: [value.start, value.stop, value.step]}
        elif type(value).__module__.split(".")[0] == package and hasattr(value, "__dict__"):
            captureObjectState(value, package, key, arrays, values, seen)
    return arrays, values


def restoreObjectState(obj: Any, arrays: dict[str, np.ndarray], values: dict[str, Any]) -> None:
    """
    Set what :func:`captureObjectState` captured on an object built the same way (paths it lacks are skipped).

    :param obj: the freshly built object
    :param arrays: arrays by dotted path
    :param values: plain values by dotted path
    """
    values, listed = dict(values), set()
    for key, value in list(values.items()):
        if isinstance(value, dict) and _ARRAY_LIST in value:
            values[key] = [arrays[f"{key}[{index}]"].copy() for index in range(int(value[_ARRAY_LIST]))]
            listed.update(f"{key}[{index}]" for index in range(int(value[_ARRAY_LIST])))
        elif isinstance(value, dict) and _RANGE in value:
            values[key] = range(*value[_RANGE])
    for key, value in [*values.items(), *((k, v) for k, v in arrays.items() if k not in listed)]:
        *parents, name = key.split(".")
        target = obj
        for parent in parents:
            target = getattr(target, parent, None)
            if target is None:
                break
        if target is None:
            continue
        old = getattr(target, name, None)
        if isinstance(old, np.generic) and not isinstance(value, np.ndarray):
            value = type(old)(value)
        elif isinstance(value, np.ndarray):
            value = value.copy()
        setattr(target, name, value)


# --- monitor files and progress.csv --------------------------------------------------------------------------------


def countLines(path: str) -> int:
    """:return: the number of complete lines of a text file (0 when it does not exist)"""
    if not os.path.isfile(path):
        return 0
    with open(path, "rb") as handle:
        return handle.read().count(b"\n")


def keepFirstLines(path: str, n_lines: int) -> None:
    """Cut a text file after its first ``n_lines`` complete lines (atomically; nothing when it does not exist)."""
    if not os.path.isfile(path):
        return
    with open(path, "rb") as handle:
        lines = handle.read().split(b"\n")[:-1]  # complete lines only (the piece after the last newline is not one)
    with atomicPath(path) as tmp_path, open(tmp_path, "wb") as handle:
        handle.write(b"".join(line + b"\n" for line in lines[:n_lines]))


def pendingLogValues(logger: Any) -> dict[str, Any]:
    """
    :param logger: an SB3 ``Logger``
    :return: the values it holds for its next row (recorded, not yet dumped) as JSON: each with its type, so that
        progress.csv prints it the same, the counts of ``record_mean``'s running means, and the outputs each is kept
        from (SB3 writes train/n_updates to progress.csv, not tensorboard)
    """
    return {"values": {name: [value.item() if isinstance(value, np.generic) else value, type(value).__name__]
                       for name, value in logger.name_to_value.items() if isinstance(value, (int, float, np.number))},
            "counts": {name: int(count) for name, count in logger.name_to_count.items()},
            "excluded": {name: list(outputs) for name, outputs in logger.name_to_excluded.items()
                         if name in logger.name_to_value and outputs}}


def restorePendingLogValues(logger: Any, pending: dict[str, Any]) -> None:
    """
    Put back :func:`pendingLogValues` into a logger: the next row and running means go on as if never interrupted.

    :param logger: an SB3 ``Logger``
    :param pending: what pendingLogValues returned (empty: nothing)
    """
    for name, (value, kind) in pending.get("values", {}).items():
        logger.name_to_value[name] = getattr(np, kind)(value) if hasattr(np, kind) else value
    logger.name_to_count.update(pending.get("counts", {}))
    for name, outputs in pending.get("excluded", {}).items():
        logger.name_to_excluded[name] = tuple(outputs)


def silentLogger() -> Any:
    """
    :return: an SB3 logger that records nothing and owns no folder (what ``verbose=0`` gives, without the empty
        ``/tmp/SB3-<date>`` folder SB3's default one makes at each ``learn``)
    """
    return sb3_logger.Logger(folder=None, output_formats=[])


class _SortedColumns(list):
    """SB3's CSV writer adds a row's new columns as a set (``keys.extend(new - known)``), in an order that changes with
    each process's string hashing: extended in sorted order, two runs of a seed write the same file."""

    def extend(self, keys: Any) -> None:
        super().extend(sorted(keys))


def _sortedColumns(logger: Any) -> Any:
    """:return: the logger, its CSV writers adding new columns in sorted order"""
    for output in logger.output_formats:
        if isinstance(output, sb3_logger.CSVOutputFormat):
            output.keys = _SortedColumns(output.keys)
    return logger


def progressLogger(folder: str) -> Any:
    """
    SB3's logger writing ``folder/progress.csv``, new columns in sorted order. A progress.csv already there (a resumed
    run, cut to its checkpoint) is continued instead of overwritten: its rows are kept and new rows use its columns.

    :param folder: the run folder
    :return: the logger
    """

    path = RunFolder(folder).progress_file
    kept = ""
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as handle:
            kept = handle.read()
    if not kept.strip():
        return _sortedColumns(sb3_logger.configure(folder, ["csv"]))
    # SB3 opens its CSV file with "w+" (truncating it): open it on a temporary copy of the kept rows instead and
    # rename that over progress.csv, so that a kill here never leaves it empty. The open file follows the rename.
    with atomicPath(path) as tmp_path:
        output = sb3_logger.CSVOutputFormat(tmp_path)
        try:
            output.file.write(kept)
            output.file.flush()
        except BaseException:
            output.close()
            raise
    output.keys = kept.splitlines()[0].split(output.separator)
    return _sortedColumns(sb3_logger.Logger(folder=folder, output_formats=[output]))
