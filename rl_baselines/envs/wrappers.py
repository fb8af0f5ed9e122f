"""The wrappers every training env gets from the env factory (:mod:`rl_baselines.envs.factory`).

- :class:`ActionRepeat`: repeats each action k times (``--action-repeat``), summing the rewards;
- :class:`EpisodeStartRNG`: remembers how the current episode started and the actions played since, so that a
  resumed run restarts each env's episode in progress from the same start, and plays it again to where it was (the
  training state records them); the outermost wrapper, above the Monitor;
- :func:`openMonitor`: SB3's Monitor, continuing an existing monitor file when a run resumes (its times go on from
  :func:`monitorElapsed`);
- :func:`ignoreInterruptInWorker`: a SubprocVecEnv worker leaves Ctrl-C and SIGTERM to the training process, which
  checkpoints.

The check of an env's first observations against its space is environments.observation_check's (the factory wraps
the first env of each set in its ObservationCheck; the dataset generator checks its episodes with it too).
"""
from __future__ import annotations

import csv
import json
import multiprocessing
import os
import signal
import time
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.monitor import Monitor


class ActionRepeat(gym.Wrapper):
    """
    Repeat each action ``repeat`` times, summing the rewards and stopping early at the end of an episode.

    :param env: the env to wrap
    :param repeat: how many env steps one agent step lasts
    """

    def __init__(self, env: gym.Env, repeat: int) -> None:
        super().__init__(env)
        self.repeat = int(repeat)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        total_reward = 0.0
        for _ in range(self.repeat):
            obs, reward, terminated, truncated, info = self.env.step(action)
            total_reward += float(reward)
            if terminated or truncated:
                break
        return obs, total_reward, terminated, truncated, info


class EpisodeStartRNG(gym.Wrapper):
    """
    Remembers how the current episode started (the seed given to ``reset``, or the state of the env's generator just
    before it) and the actions played since. :meth:`restartEpisode` makes the next ``reset`` start that episode again
    the same way and, when asked, play those actions again through the wrappers below (the Monitor's count of the
    episode included), so that the env stands where the episode was: a deterministic env then goes on as if never
    stopped.

    Invariants: it is the outermost wrapper of an env (every step and reset passes through it); the actions are kept
    as given (their values, dtype and shape), at most :data:`MAX_REPLAYED_STEPS` per episode (a longer episode, or
    one of actions that are not arrays, is restarted from its start without them); a replayed step that ends the
    episode (an env that does not repeat its steps) stops the replay with one warning, and the episode starts afresh.

    :param env: the env (its generator is ``env.unwrapped.np_random``)
    """

    MAX_REPLAYED_STEPS = 100_000

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._episode_start: dict[str, Any] | None = None
        self._pending: dict[str, Any] | None = None
        self._actions: list[Any] | None = []
        self._action_dtype: str | None = None
        self._continued = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        replay: list[Any] = []
        continued = False
        if seed is None and self._pending is not None:
            if self._pending.get("seed") is not None:
                seed = int(self._pending["seed"])
            elif self._pending.get("state") is not None:
                self.env.unwrapped.np_random.bit_generator.state = self._pending["state"]
            continued = self._pending.get("actions") is not None
            replay = [np.asarray(action, dtype=self._pending["action_dtype"])
                      for action in self._pending.get("actions") or ()]
        self._pending = None
        if seed is not None:
            self._episode_start = {"seed": int(seed)}
        else:
            self._episode_start = {"state": self.env.unwrapped.np_random.bit_generator.state}
        self._actions, self._action_dtype, self._continued = [], None, False
        observation, info = self.env.reset(seed=seed, options=options)
        for played, action in enumerate(replay):
            observation, _, terminated, truncated, info = self.step(action[()] if action.ndim == 0 else action)
            if terminated or truncated:
                warnings.warn(f"the episode in progress at the checkpoint ended after {played + 1} of its "
                              f"{len(replay)} replayed steps (this env does not repeat its steps): it starts afresh")
                return self.reset(options=options)
        self._continued = continued
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        if self._actions is not None:
            array = np.asarray(action)
            if len(self._actions) < self.MAX_REPLAYED_STEPS and array.dtype != object:
                self._actions.append(array.tolist())
                if self._action_dtype is None:
                    self._action_dtype = str(array.dtype)
            else:  # too long to replay, or not an array (a dict of actions): restarted from its start alone
                self._actions = None
        return self.env.step(action)

    def episodeStart(self) -> dict[str, Any] | None:
        """:return: how the current episode started and the actions played since (JSON-able; ``actions`` None for
        an episode too long to replay), None before the first reset"""
        if self._episode_start is None:
            return None
        actions = None if self._actions is None else list(self._actions)  # (a copy: the episode goes on)
        return {**self._episode_start, "actions": actions, "action_dtype": self._action_dtype}

    def continuedEpisode(self) -> bool:
        """:return: whether the last reset played the episode in progress at a checkpoint again to where it was (the
        episode goes on), rather than starting one"""
        return self._continued

    def restartEpisode(self, episode_start: dict[str, Any] | None, replay: bool = False) -> None:
        """
        :param episode_start: what :meth:`episodeStart` returned; the next reset without a seed starts that episode
        :param replay: the next reset also plays its actions again (an episode start without them, from an earlier
            version, is restarted from its start alone)
        """
        self._pending = None if episode_start is None else {
            **episode_start, "actions": episode_start.get("actions") if replay else None}


def ignoreInterruptInWorker() -> None:
    """
    In an env worker process (SubprocVecEnv), ignore SIGINT and SIGTERM: Ctrl-C (or ``kill -TERM -- -PGID``, a
    batch system's stop) reaches the whole process group, and the training process needs its workers alive to save
    a checkpoint before it exits. A worker still ends with the training process: its pipe closes.
    """
    if multiprocessing.parent_process() is not None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)


# --- buffers -----------------------------------------------------------------------------------------------------


class BlankWhenMissing(dict):
    """An info dict whose missing keys read as "" with ``info[key]`` (``info.get`` still gives None): SB3's Monitor
    requires every info keyword, and an env may not report one (a plugin env without ``is_success``)."""

    def __missing__(self, key: str) -> str:
        return ""


class OptionalInfoKeys(gym.Wrapper):
    """Hands the Monitor above it each step's info as a :class:`BlankWhenMissing` (an empty monitor cell)."""

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, BlankWhenMissing(info)


def openMonitor(env: gym.Env, filename: str | None, info_keywords: tuple[str, ...]) -> gym.Env:
    """
    SB3's Monitor; a monitor file that already exists (a resumed run, truncated to its checkpoint) is continued:
    rows are appended and their wall times go on from its last row's, so that ``t`` counts the time the run trained,
    not the time it lay stopped between two attempts (the header keeps the run's original ``t_start``).

    :param env: the env
    :param filename: the monitor file without ``.monitor.csv``, None for none
    :param info_keywords: info keys written as columns
    :return: the wrapped env
    """

    env = OptionalInfoKeys(env)  # a keyword the env does not report is an empty cell, not a KeyError
    elapsed = None if filename is None else monitorElapsed(f"{filename}.{Monitor.EXT}")  # as Monitor names it
    if elapsed is None:
        return Monitor(env, filename=filename, info_keywords=info_keywords)
    monitor = Monitor(env, filename=filename, info_keywords=info_keywords, override_existing=False)
    monitor.t_start = time.time() - elapsed
    return monitor


def monitorElapsed(path: str) -> float | None:
    """
    :param path: a monitor file
    :return: the wall time ``t`` of its last row (0.0 when it has none), where a continued file's times go on from;
        None when there is no such file
    :raises ValueError: the file has no monitor header
    """
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        json.loads(handle.readline().lstrip("#"))  # the header: a file without one is not a monitor file
        rows = list(csv.DictReader(handle))
    return float(rows[-1]["t"]) if rows else 0.0
