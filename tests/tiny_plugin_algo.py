"""A tiny algorithm plugin written from docs/plugins.md alone, without saveTrainingState: a linear policy nudged by
random search. The tests install it (a dist-info on PYTHONPATH, see test_plugin_contract.py) as ``tiny`` and, each
breaking one rule of the contract, ``tiny_mkstemp``, ``tiny_nonorm``, ``tiny_frozen``, ``tiny_noisy`` and
``tiny_leaky`` (which rl_baselines.check_plugin must catch); ``tiny_recurrent`` keeps the rules with a memory.

This file is the plugin's source, copied into the installed package by the tests; it is not a test module.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from rl_baselines.core.algo_types import ActionType, AlgoType
from rl_baselines.core.base import BaseRLObject
from rl_baselines.core.hyperparams import POSITIVE, Hyperparam
from rl_baselines.envs.factory import findVecNormalize, saveNormalisation
from srl_toolbox.files import atomicPath
from srl_toolbox.text import withArticle

NAME = "tiny"


class TinyAgent(BaseRLObject):
    """A linear policy ``[obs, 1] @ W``: argmax for discrete actions, clipped for continuous ones."""

    ALGO_TYPE = AlgoType.OTHER
    ACTION_TYPES = (ActionType.DISCRETE, ActionType.CONTINUOUS)
    MODEL_EXTENSION = ".json"
    LOG_INTERVAL = 100
    HYPERPARAMS: ClassVar[dict[str, Hyperparam]] = {
        "step_size": Hyperparam(0.05, "random-search step", bounds=POSITIVE, search=(1e-3, 1.0, "log")),
        "explore": Hyperparam(0.1, "action noise when not deterministic", bounds=(0.0, None), search=(0.0, 0.5)),
    }

    def __init__(self) -> None:
        super().__init__()
        self.env: Any = None
        self.weights: np.ndarray | None = None
        self.hyperparams = {name: h.default for name, h in self.HYPERPARAMS.items()}
        self.discrete = True
        self.low: np.ndarray | None = None
        self.high: np.ndarray | None = None
        self.rng = np.random.default_rng(0)

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None,
                  deterministic: bool = False) -> np.ndarray:
        flat = np.asarray(observation, dtype=np.float64).reshape(len(observation), -1)
        outputs = np.concatenate([flat, np.ones((len(flat), 1))], axis=1) @ self.weights
        if not deterministic:
            outputs = outputs + float(self.hyperparams["explore"]) * self.rng.standard_normal(outputs.shape)
        if self.discrete:
            return np.argmax(outputs, axis=1)
        return np.clip(outputs, self.low, self.high).astype(np.float32)

    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        content = {"algo": NAME, "num_timesteps": int(self.num_timesteps), "weights": self.weights.tolist(),
                   "discrete": self.discrete, "hyperparams": self.hyperparams,
                   "low": None if self.low is None else self.low.tolist(),
                   "high": None if self.high is None else self.high.tolist()}
        with atomicPath(save_path) as tmp_path, open(tmp_path, "w", encoding="utf-8") as handle:
            json.dump(content, handle)
        saveNormalisation(self.env, os.path.dirname(os.path.abspath(save_path)))

    @classmethod
    def load(cls, load_path: str, args: argparse.Namespace | None = None) -> TinyAgent:
        try:
            with open(load_path, encoding="utf-8") as handle:
                content = json.load(handle)
            if not isinstance(content, dict) or content.get("algo") != NAME:
                raise ValueError(f"{load_path} was not saved by {NAME}")
            model = cls()
            model.num_timesteps = int(content["num_timesteps"])
            model.weights = np.array(content["weights"], dtype=np.float64)
            model.discrete = bool(content["discrete"])
            model.hyperparams.update(content["hyperparams"])
            if content["low"] is not None:
                model.low, model.high = np.array(content["low"]), np.array(content["high"])
        except (OSError, KeyError, TypeError, json.JSONDecodeError) as error:
            raise ValueError(f"{load_path} is not {withArticle(NAME)} model ({type(error).__name__})") from None
        return model

    def prepareEnv(self, args: argparse.Namespace, env_kwargs: dict[str, Any] | None) -> None:
        """Build the env: normalisation restored from the model to continue from, and updating again."""
        load_path = args.load_rl_model_path
        folder = os.path.dirname(os.path.abspath(load_path)) if load_path else None
        self.env = self.makeEnv(args, env_kwargs, load_path_normalise=folder)
        vec_normalize = findVecNormalize(self.env)
        if vec_normalize is not None:
            vec_normalize.training = True

    def train(self, args: argparse.Namespace, callback: Any, env_kwargs: dict[str, Any] | None = None,
              train_kwargs: dict[str, Any] | None = None) -> None:
        self.hyperparams = self.hyperparamsFromArgs(args, train_kwargs)
        self.prepareEnv(args, env_kwargs)
        space = self.env.action_space
        self.discrete = isinstance(space, gym.spaces.Discrete)
        outputs = int(space.n) if self.discrete else int(np.prod(space.shape))
        if not self.discrete:
            self.low, self.high = space.low, space.high
        inputs = int(np.prod(self.env.observation_space.shape)) + 1
        load_path = args.load_rl_model_path
        if load_path:
            saved = self.load(load_path)
            self.weights, self.num_timesteps = saved.weights, saved.num_timesteps
        else:
            self.weights = np.zeros((inputs, outputs))
        self.rng = np.random.default_rng(args.seed)
        end = self.num_timesteps + args.num_timesteps
        observation = self.env.reset()
        while self.num_timesteps < end:
            trial = float(self.hyperparams["step_size"]) * self.rng.standard_normal(self.weights.shape)
            self.weights = self.weights + trial
            observation, rewards, _, _ = self.env.step(self.getAction(observation))
            if rewards.mean() < 0:
                self.weights = self.weights - trial
            self.num_timesteps += self.env.num_envs
            if callback(locals(), globals()) is False:
                break
        self.env.close()


class MkstempAgent(TinyAgent):
    """Breaks the rule: saves through tempfile.mkstemp (0600 files)."""

    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        super().save(save_path, _locals)
        content = open(save_path, encoding="utf-8").read()
        descriptor, tmp_path = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(save_path)))
        with os.fdopen(descriptor, "w") as handle:
            handle.write(content)
        os.replace(tmp_path, save_path)


class NoNormalisationAgent(TinyAgent):
    """Breaks the rule: forgets the normalisation statistics."""

    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        env, self.env = self.env, None
        try:
            super().save(save_path, _locals)
        finally:
            self.env = env


class FrozenNormalisationAgent(TinyAgent):
    """Breaks the rule: continues training with the restored statistics frozen."""

    def prepareEnv(self, args: argparse.Namespace, env_kwargs: dict[str, Any] | None) -> None:
        load_path = args.load_rl_model_path
        folder = os.path.dirname(os.path.abspath(load_path)) if load_path else None
        self.env = self.makeEnv(args, env_kwargs, load_path_normalise=folder)


class NoisyAgent(TinyAgent):
    """Breaks the rule: samples even when asked for deterministic actions (a random action half of the time)."""

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None, deterministic: bool = False) -> np.ndarray:
        actions = super().getAction(observation, dones, deterministic=False)
        if not self.discrete:
            return actions
        random = self.rng.integers(0, self.weights.shape[1], size=len(actions))
        return np.where(self.rng.random(len(actions)) < 0.5, random, actions)


class RecurrentAgent(TinyAgent):
    """Keeps the rules: a recurrent policy, whose action also depends on how many steps each env's episode has played
    (its memory, one per env), restarted where ``dones`` marks an episode start (as ppo_lstm's LSTM state)."""

    leaks: ClassVar[bool] = False  # True: the memory ignores dones

    def __init__(self) -> None:
        super().__init__()
        self.memory: np.ndarray | None = None

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None,
                  deterministic: bool = False) -> np.ndarray:
        if self.memory is None or len(self.memory) != len(observation):
            self.memory = np.zeros(len(observation), dtype=int)
        if dones is not None and not self.leaks:
            self.memory[np.asarray(dones, dtype=bool)] = 0
        actions = super().getAction(observation, dones, deterministic)
        self.memory += 1
        if self.discrete:
            return (actions + self.memory - 1) % self.weights.shape[1]
        return np.clip(actions + 0.01 * (self.memory[:, None] - 1), self.low, self.high).astype(np.float32)


class LeakyRecurrentAgent(RecurrentAgent):
    """Breaks the rule: its memory goes on from one episode into the next (it ignores ``dones``)."""

    leaks = True


class LoadNoneAgent(TinyAgent):
    """Breaks the rule: its load checks the file but returns nothing."""

    @classmethod
    def load(cls, load_path: str, args: argparse.Namespace | None = None) -> None:
        super().load(load_path, args)


class OneActionAgent(TinyAgent):
    """Breaks the rule: one action for a whole batch of observations (right with one env only)."""

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None, deterministic: bool = False) -> np.ndarray:
        return super().getAction(observation, dones, deterministic)[:1]


class RunCheckAgent(TinyAgent):
    """Keeps the rules: like her, its parser checks a whole train command after parsing (it reads train's flags)."""

    @classmethod
    def customArguments(cls, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser = super().customArguments(parser)
        parse_args = parser.parse_args

        def parseAndCheck(args: Any = None, namespace: Any = None) -> argparse.Namespace:
            parsed = parse_args(args, namespace)
            if parsed.continuous_actions and parsed.hp_step_size > 1:
                parser.error("--step-size above 1 with -c")
            return parsed

        parser.parse_args = parseAndCheck
        return parser
