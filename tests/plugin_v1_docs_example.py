"""A plugin of API version 1, written exactly as docs/plugins.md taught before version 2 (its "A complete minimal
algorithm" example, copied unchanged from the docs of srl-toolbox commit 54256c4): ``train(self, args, callback,
env_kwargs=None, train_kwargs=None)`` on the run's Namespace. tests/test_plugin_contract.py installs it as
``docs_tiny_v1``; the train command runs it through rl_baselines.core.plugin_v1.

This file is the plugin's source, copied into the installed package by the tests; it is not a test module.
"""
# ruff: noqa: E401, I001 (the imports as the docs wrote them)
import json, os
import gymnasium as gym
import numpy as np
from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.base import BaseRLObject
from srl_toolbox.files import atomicPath
from rl_baselines.core.hyperparams import POSITIVE, Hyperparam
from rl_baselines.envs.factory import findVecNormalize, saveNormalisation


class TinyAgent(BaseRLObject):
    ACTION_TYPES = (ActionType.DISCRETE, ActionType.CONTINUOUS)
    MODEL_EXTENSION = ".json"
    HYPERPARAMS = {
        "step_size": Hyperparam(0.05, "random-search step", bounds=POSITIVE, search=(1e-3, 1.0, "log")),
        "explore": Hyperparam(0.1, "action noise when not deterministic", bounds=(0.0, None), search=(0.0, 0.5)),
    }

    def __init__(self):
        super().__init__()
        self.env, self.weights, self.discrete, self.low, self.high = None, None, True, None, None
        self.hyperparams = dict(self.DEFAULT_HYPERPARAMS)
        self.rng = np.random.default_rng(0)

    def getAction(self, observation, dones=None, deterministic=False):
        flat = np.asarray(observation, dtype=np.float64).reshape(len(observation), -1)
        outputs = np.concatenate([flat, np.ones((len(flat), 1))], axis=1) @ self.weights
        if not deterministic:  # deterministic: no noise at all
            outputs = outputs + self.hyperparams["explore"] * self.rng.standard_normal(outputs.shape)
        if self.discrete:
            return np.argmax(outputs, axis=1)
        return np.clip(outputs, self.low, self.high).astype(np.float32)

    def save(self, save_path, _locals=None):
        content = {"algo": "tiny", "num_timesteps": int(self.num_timesteps), "weights": self.weights.tolist(),
                   "discrete": self.discrete, "hyperparams": self.hyperparams,
                   "low": None if self.low is None else self.low.tolist(),
                   "high": None if self.high is None else self.high.tolist()}
        with atomicPath(save_path) as tmp_path, open(tmp_path, "w") as handle:
            json.dump(content, handle)
        saveNormalisation(self.env, os.path.dirname(os.path.abspath(save_path)))  # vecnormalize.npz

    @classmethod
    def load(cls, load_path, args=None):
        try:
            with open(load_path) as handle:
                content = json.load(handle)
            if not isinstance(content, dict) or content.get("algo") != "tiny":
                raise ValueError(f"{load_path} was not saved by tiny")
            model = cls()
            model.num_timesteps = int(content["num_timesteps"])
            model.weights = np.array(content["weights"])
            model.discrete = bool(content["discrete"])
            model.hyperparams.update(content["hyperparams"])
            if content["low"] is not None:
                model.low, model.high = np.array(content["low"]), np.array(content["high"])
        except (OSError, KeyError, TypeError, json.JSONDecodeError) as error:
            raise ValueError(f"{load_path} is not a tiny model ({type(error).__name__})") from None
        return model

    def train(self, args, callback, env_kwargs=None, train_kwargs=None):
        self.hyperparams = self.hyperparamsFromArgs(args, train_kwargs)
        load_path = args.load_rl_model_path
        folder = os.path.dirname(os.path.abspath(load_path)) if load_path else None
        self.env = self.makeEnv(args, env_kwargs, load_path_normalise=folder)  # restored frozen...
        if findVecNormalize(self.env) is not None:
            findVecNormalize(self.env).training = True  # ...so switch updating back on
        space = self.env.action_space
        self.discrete = isinstance(space, gym.spaces.Discrete)
        if not self.discrete:
            self.low, self.high = space.low, space.high
        if load_path:
            saved = self.load(load_path)
            self.weights, self.num_timesteps = saved.weights, saved.num_timesteps
        else:
            inputs = int(np.prod(self.env.observation_space.shape)) + 1
            self.weights = np.zeros((inputs, space.n if self.discrete else int(np.prod(space.shape))))
        self.rng = np.random.default_rng(args.seed)  # your own generators: seeded with args.seed
        end = self.num_timesteps + args.num_timesteps
        observation = self.env.reset()
        while self.num_timesteps < end:
            trial = self.hyperparams["step_size"] * self.rng.standard_normal(self.weights.shape)
            self.weights = self.weights + trial
            observation, rewards, _, _ = self.env.step(self.getAction(observation))
            if rewards.mean() < 0:
                self.weights = self.weights - trial
            self.num_timesteps += self.env.num_envs
            if callback(locals(), globals()) is False:
                break
        self.env.close()
