"""Deterministic evaluation episodes during training (``train --eval-freq N --eval-episodes K``), as SB3's
EvalCallback does them, for every registered algorithm.

Every ``N`` env steps (all envs together, as the RL Zoo counts ``--eval-freq``) the training callback asks an
:class:`Evaluator` to play ``K`` episodes:

- on a separate env built by the algorithm's own ``makeEnv`` (so with the training env's wrappers: SRL encoder,
  frame stack, action repeat, normalisation, goal-conditioned observations...), one env in this process, without
  monitor file;
- with the training env's normalisation statistics copied in before each evaluation (SB3's
  ``sync_envs_normalization``); the evaluation env's own statistics never update;
- with ``algo.getAction(observation, dones, deterministic=True)`` (``dones`` restarts a recurrent policy's state;
  an algorithm with ``USES_ACTION_MASKS`` also gets the evaluation env's action masks), through SB3's
  ``evaluate_policy``;
- from the same starts each time: the evaluation env is reseeded with ``seed + EVAL_SEED_OFFSET`` before each
  evaluation, so the curve measures the policy rather than the draw of start states;
- without changing training: the global random generators (Python, NumPy, torch) and the algorithm's action-space
  generator are restored afterwards, so a run trains the same with or without evaluation, and a resumed run
  evaluates exactly as the uninterrupted one.

While the episodes play, a second progress bar (:class:`srl_toolbox.progress.EpisodeBar`, not left on screen; on a
terminal only, hidden by ``--no-progress``) counts them and moves with their agent steps: an episode can last
thousands of steps.

Results go to ``<run>/evaluations.npz`` (rewritten atomically after each evaluation) with SB3's EvalCallback keys:
``timesteps`` (n_evals,), ``results`` (n_evals, K) episode rewards, ``ep_lengths`` (n_evals, K) and, when the env
reports ``is_success``, ``successes`` (n_evals, K). The model with the best evaluation mean so far is saved in
``<run>/best/`` (its manifest says ``selected_by: evaluation`` and the ``mean_reward``).
"""
from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import sync_envs_normalization

from rl_baselines.core.base import BaseRLObject, actionMaskKeywords
from rl_baselines.core.checkpointing import bestFromState, bestToState
from rl_baselines.core.plugin_v1 import makeEnv
from rl_baselines.core.run_folder import EVALUATIONS_FILE, RunFolder  # noqa: F401 (EVALUATIONS_FILE re-exported)
from rl_baselines.core.training_state import generatorState, setGeneratorState
from rl_baselines.envs.factory import findVecNormalize
from rl_baselines.runs.evaluation_files import EVALUATION_KEYS as EVALUATION_KEYS  # re-exported
from rl_baselines.runs.evaluation_files import readEvaluations as readEvaluations  # re-exported
from rl_baselines.runs.train_config import TrainConfig
from srl_toolbox.files import writeNpz
from srl_toolbox.global_state import captureGlobalRNG, restoreGlobalRNG
from srl_toolbox.progress import EpisodeBar, stepLimit

# The evaluation env is seeded with seed + this (training env i uses seed + i).
EVAL_SEED_OFFSET = 10_000


class _GetActionPredictor:
    """
    SB3's ``predict`` interface over a BaseRLObject, for ``evaluate_policy``.

    :param algo: the algorithm to act with
    :param env: the VecEnv it acts on (its action masks, for an algorithm that uses them)
    """

    def __init__(self, algo: BaseRLObject, env: Any) -> None:
        self.algo = algo
        self.env = env

    def predict(self, observation: Any, state: Any = None, episode_start: np.ndarray | None = None,
                deterministic: bool = True) -> tuple[np.ndarray, None]:
        """
        :param observation: a batch of observations
        :param state: unused (a recurrent algorithm keeps its own state, restarted by ``episode_start``)
        :param episode_start: which envs start a new episode with this observation
        :param deterministic: take the most likely action
        :return: (actions, None)
        """
        dones = None if episode_start is None else np.array(episode_start, dtype=bool)
        masks = actionMaskKeywords(self.algo, self.env)
        return self.algo.getAction(observation, dones=dones, deterministic=deterministic, **masks), None


def keepFirstEvaluations(run_dir: str, count: int) -> None:
    """
    Cut a run's evaluations.npz back to its first ``count`` evaluations (removed when ``count`` is 0): a resumed run
    replays the evaluations made after its checkpoint.

    :param run_dir: the run folder
    :param count: evaluations to keep
    """
    path = RunFolder(run_dir).evaluations_file
    if not os.path.isfile(path):
        return
    if count <= 0:
        os.remove(path)
        return
    arrays = readEvaluations(path)
    writeNpz(path, {name: array[:count] for name, array in arrays.items()})


class Evaluator:
    """
    Plays deterministic evaluation episodes of a training algorithm and records them (see the module docstring).

    :param algo: the algorithm being trained (its ``env`` attribute is the training env, whose normalisation
        statistics are copied)
    :param args: the run's config (its ``runSettings()`` build the evaluation env, with one env and no monitor file)
    :param env_kwargs: the env's keywords, as the training env got them
    :param eval_freq: env steps between evaluations (all envs together)
    :param n_episodes: episodes per evaluation
    :param run_dir: the run folder (evaluations.npz goes there), None to keep the results in memory only
    :param start_timesteps: steps already done: the first evaluation is at the next multiple of ``eval_freq``
    """

    def __init__(self, algo: BaseRLObject, args: TrainConfig, env_kwargs: dict[str, Any] | None,
                 eval_freq: int, n_episodes: int, run_dir: str | None = None, start_timesteps: int = 0) -> None:
        if eval_freq < 1 or n_episodes < 1:
            raise ValueError(f"eval_freq ({eval_freq}) and n_episodes ({n_episodes}) must be at least 1")
        self.algo = algo
        self.args = args
        self.env_kwargs = env_kwargs
        self.eval_freq = int(eval_freq)
        self.n_episodes = int(n_episodes)
        self.run_dir = run_dir
        self.watched = run_dir is not None and RunFolder.isRun(run_dir)  # (as the callbacks' ModelSaver)
        self.next_eval = self._nextMultiple(start_timesteps)
        self.best_mean_reward = -float("inf")
        self.timesteps: list[int] = []
        self.results: list[list[float]] = []
        self.ep_lengths: list[list[int]] = []
        self.successes: list[list[bool]] = []
        self.env: Any = None
        self._warned_normalisation = False

    def _nextMultiple(self, num_timesteps: int) -> int:
        """:return: the first multiple of eval_freq above ``num_timesteps``"""
        return (int(num_timesteps) // self.eval_freq + 1) * self.eval_freq

    @property
    def path(self) -> str | None:
        """``<run>/evaluations.npz``, None without a run folder."""
        return None if self.run_dir is None else RunFolder(self.run_dir).evaluations_file

    def due(self, num_timesteps: int) -> bool:
        """
        :param num_timesteps: env steps taken so far
        :return: whether the step count has crossed the next multiple of eval_freq
        """
        return num_timesteps >= self.next_eval

    def _makeEnv(self) -> Any:
        """:return: the evaluation env: the algorithm's makeEnv with one env, no monitor file, frozen statistics"""

        settings = self.args.runSettings().replace(num_cpu=1, monitor_dir=None,
                                                   seed=int(self.args.seed) + EVAL_SEED_OFFSET)
        env = makeEnv(type(self.algo), settings, self.env_kwargs, load_path_normalise=None)
        vec_normalize = findVecNormalize(env)
        if vec_normalize is not None:
            vec_normalize.training = False
            vec_normalize.norm_reward = False
        return env

    def _syncNormalisation(self) -> None:
        """Copy the training env's observation statistics into the evaluation env (SB3's
        sync_envs_normalization on the two VecNormalize wrappers)."""

        train_normalize = findVecNormalize(getattr(self.algo, "env", None))
        eval_normalize = findVecNormalize(self.env)
        if train_normalize is not None and eval_normalize is not None:
            sync_envs_normalization(train_normalize, eval_normalize)
        elif eval_normalize is not None and not self._warned_normalisation:
            self._warned_normalisation = True
            name = getattr(self.algo, "NAME", type(self.algo).__name__)
            warnings.warn(f"{name} keeps no normalised training env in its `env` attribute: the "
                          f"evaluation env's observations are normalised with fresh statistics", stacklevel=3)

    def _agentStepLimit(self) -> int | None:
        """:return: the evaluation env's step limit in agent steps (each lasts ``--action-repeat`` env steps)"""
        limit = stepLimit(self.env)
        repeat = int(getattr(self.args, "action_repeat", 1) or 1)
        return None if limit is None else math.ceil(limit / repeat)

    def evaluate(self, num_timesteps: int, between_steps: Callable[[], None] | None = None) -> tuple[float, float]:
        """
        Play ``n_episodes`` deterministic episodes, record them and write evaluations.npz.

        :param num_timesteps: env steps taken so far (recorded as the evaluation's ``timesteps``)
        :param between_steps: called after each of the episodes' steps (the training callbacks' own work that
            cannot wait for the evaluation's end: saying that a stop was asked), or None
        :return: (mean, standard deviation) of the episode rewards
        """

        self.next_eval = self._nextMultiple(num_timesteps)
        rng = captureGlobalRNG()
        space = getattr(self.algo, "action_space", None)
        space_rng = generatorState(space.np_random) if isinstance(space, gym.Space) else None
        successes: list[bool] = []
        bar: EpisodeBar | None = None

        def afterStep(local_vars: dict[str, Any], _globals: dict[str, Any]) -> None:  # (each env's each step)
            index, info = local_vars["i"], local_vars["info"]
            steps = int(local_vars["current_lengths"][index])
            if local_vars["done"]:
                bar.finish(index, steps)
                if "is_success" in info:
                    successes.append(bool(info["is_success"]))
            else:
                bar.step(index, steps)
            if between_steps is not None:
                between_steps()

        try:
            if self.env is None:
                self.env = self._makeEnv()
            self._syncNormalisation()
            self.env.seed(int(self.args.seed) + EVAL_SEED_OFFSET)
            # below the training bar, gone when done: it moves with the steps (an episode can last thousands); on a
            # terminal only (in a file or a pipe, each redraw of a second bar would be a line and a cursor move)
            bar = EpisodeBar(total=self.n_episodes, max_steps=self._agentStepLimit(), desc="evaluation", leave=False,
                             dynamic_ncols=True, disable=self.args.no_progress or not sys.stderr.isatty())
            rewards, lengths = evaluate_policy(_GetActionPredictor(self.algo, self.env), self.env,
                                               n_eval_episodes=self.n_episodes, deterministic=True,
                                               return_episode_rewards=True, callback=afterStep, warn=False)
        finally:
            if bar is not None:
                bar.close()
            restoreGlobalRNG(rng)
            if space_rng is not None:
                setGeneratorState(space.np_random, space_rng)
        self.timesteps.append(int(num_timesteps))
        self.results.append([float(r) for r in rewards])
        self.ep_lengths.append([int(n) for n in lengths])
        self.successes.append(successes if len(successes) == len(rewards) else [])
        self.save()
        return float(np.mean(rewards)), float(np.std(rewards))

    def arrays(self) -> dict[str, np.ndarray]:
        """:return: the evaluations so far, as evaluations.npz holds them"""
        arrays = {"timesteps": np.asarray(self.timesteps, dtype=np.int64).reshape(-1),
                  "results": np.asarray(self.results, dtype=np.float64).reshape(-1, self.n_episodes),
                  "ep_lengths": np.asarray(self.ep_lengths, dtype=np.int64).reshape(-1, self.n_episodes)}
        if self.successes and all(len(row) == self.n_episodes for row in self.successes):
            arrays["successes"] = np.asarray(self.successes, dtype=bool).reshape(-1, self.n_episodes)
        return arrays

    def save(self) -> None:
        """Write evaluations.npz atomically (nothing without a run folder); a failed write (disk full) costs one
        warning, and the next evaluation writes every result again; a run folder deleted or moved meanwhile raises
        srl_toolbox.files.FolderVanished (RunFolder.checkStays)."""
        if self.path is None:
            return
        if self.watched:
            RunFolder(self.run_dir).checkStays()
        try:
            writeNpz(self.path, self.arrays())
        except OSError as error:
            warnings.warn(f"{self.path} not written: {error.strerror}", stacklevel=3)

    def state(self) -> dict[str, Any]:
        """:return: what a checkpoint keeps to resume the evaluations (run_state.json's callback entry)"""
        return {"count": len(self.timesteps), "next_eval": self.next_eval,
                "best_mean_reward": bestToState(self.best_mean_reward)}

    def restoreState(self, state: dict[str, Any]) -> None:
        """
        Go on from a checkpoint: the evaluations it counted are read back from evaluations.npz (already cut to
        that count by the resume), with the best mean and the step of the next evaluation.

        :param state: what :meth:`state` returned at the checkpoint
        :raises ValueError: evaluations.npz holds fewer evaluations than the checkpoint counted
        """
        count = int(state.get("count", 0))
        self.next_eval = int(state.get("next_eval", self.next_eval))
        self.best_mean_reward = bestFromState(state)
        arrays = readEvaluations(self.path) if count and self.path is not None else None
        if count and (arrays is None or arrays["timesteps"].shape[0] < count):
            raise ValueError(f"{self.path} holds fewer than the {count} evaluations of the checkpoint")
        if arrays is None:
            return
        self.timesteps = [int(t) for t in arrays["timesteps"][:count]]
        self.results = arrays["results"][:count].tolist()
        self.ep_lengths = arrays["ep_lengths"][:count].tolist()
        self.successes = arrays["successes"][:count].tolist() if "successes" in arrays else [[]] * count

    def means(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:return: (timesteps, mean reward, reward standard deviation) of each evaluation so far"""
        results = self.arrays()["results"]
        return (np.asarray(self.timesteps, dtype=np.float64), results.mean(axis=1) if results.size else np.zeros(0),
                results.std(axis=1) if results.size else np.zeros(0))

    def close(self) -> None:
        """Close the evaluation env."""
        if self.env is not None:
            self.env.close()
            self.env = None
