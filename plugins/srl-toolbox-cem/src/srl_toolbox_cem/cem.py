"""cem: the cross-entropy method over the weights of a linear policy, written only against srl-toolbox's public
contract (``rl_baselines.core.base.BaseRLObject``).

Each generation draws ``num_population`` weight vectors from a diagonal Gaussian N(mean, std^2), plays one episode
with each (spread over the ``--num-cpu`` envs), keeps the ``elite_frac`` best and refits the Gaussian to them:

    mean <- mean(elite),   std^2 <- var(elite) + extra_std^2 * max(0, 1 - generation / extra_decay)

The added variance (Szita and Lorincz, 2006) keeps the search from collapsing in the first generations. The policy
played and saved is the Gaussian's mean.

Progress reaches the train command like every ES algorithm's: the env's monitor files record each finished
episode (so learning curves have env steps on the x axis), and ``callback(locals(), globals())`` runs after every
vectorised step with ``self.num_timesteps`` counting env steps.

Observations are flattened (images scaled to [0, 1]) and standardised with the running mean and variance of the
states the candidates saw, updated only between generations so that all candidates of one generation are judged
under the same normalisation; these statistics are saved in the model file, so ``makeEnv`` removes the
VecNormalize the toolbox adds for state observations. The model file is a NumPy ``.npz`` (arrays and one JSON
string, read with ``allow_pickle=False``).
"""
from __future__ import annotations

import argparse
import json
import os
import warnings
import zipfile
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecNormalize

from rl_baselines.core.algo_types import ActionType, AlgoType  # not rl_baselines.core.registry: it imports the plugins
from rl_baselines.core.base import BaseRLObject
from rl_baselines.core.hyperparams import FRACTION, NON_NEGATIVE, POPULATION, POSITIVE, Hyperparam
from srl_toolbox.cli import UsageError
from srl_toolbox.files import atomicPath

NAME = "cem"
# Model file layout version, inside the file (independent of the contract's API_VERSION)
FORMAT_VERSION = 1
# Features whose standard deviation is below this carry no information and are set to 0 (constant pixels)
MIN_STD = 1e-8
# Index of an env that plays the Gaussian's mean instead of a candidate (no candidate was waiting)
CENTRE = -1


class RunningStats:
    """
    Mean and variance of flat states, merged from the states gathered since the last :meth:`commit`.

    :param n_features: size of a flat state
    """

    def __init__(self, n_features: int) -> None:
        self.mean = np.zeros(n_features)
        self.var = np.ones(n_features)
        self.count = 0.0
        self._sum, self._square_sum, self._n = np.zeros(n_features), np.zeros(n_features), 0

    def normalise(self, features: np.ndarray) -> np.ndarray:
        """
        :param features: (batch, n_features)
        :return: the standardised features (constant ones become 0)
        """
        std = np.sqrt(self.var)
        return np.where(std > MIN_STD, (features - self.mean) / np.maximum(std, MIN_STD), 0.0)

    def gather(self, features: np.ndarray) -> None:
        """:param features: states to merge at the next commit, (batch, n_features)"""
        self._sum += features.sum(axis=0)
        self._square_sum += np.square(features).sum(axis=0)
        self._n += len(features)

    def commit(self) -> None:
        """Merge the gathered states (parallel-variance formula) and start gathering anew."""
        if self._n == 0:
            return
        batch_mean = self._sum / self._n
        batch_var = np.maximum(self._square_sum / self._n - np.square(batch_mean), 0.0)
        if self.count == 0:
            self.mean, self.var = batch_mean, batch_var
        else:
            total = self.count + self._n
            delta = batch_mean - self.mean
            self.var = (self.var * self.count + batch_var * self._n + np.square(delta) * self.count * self._n / total) / total
            self.mean = self.mean + delta * self._n / total
        self.count += self._n
        self._sum, self._square_sum, self._n = np.zeros_like(self.mean), np.zeros_like(self.mean), 0


def cemUpdate(candidates: np.ndarray, returns: np.ndarray, n_elite: int, extra_var: float) -> tuple[np.ndarray, np.ndarray]:
    """
    One cross-entropy step.

    :param candidates: (population, dim) weight vectors
    :param returns: the episode return of each
    :param n_elite: how many of the best are kept
    :param extra_var: variance added to every dimension
    :return: the new (mean, std)
    """
    elite = candidates[np.argsort(-returns, kind="stable")[:n_elite]]
    return elite.mean(axis=0), np.sqrt(elite.var(axis=0) + extra_var)


def _spaceToJson(space: gym.Space) -> dict[str, Any]:
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n)}
    if isinstance(space, gym.spaces.Box):
        return {"type": "Box", "shape": list(space.shape), "low": space.low.ravel().tolist(),
                "high": space.high.ravel().tolist(), "dtype": str(space.dtype)}
    raise ValueError(f"cem supports Discrete and Box spaces, not {type(space).__name__}")


def _spaceFromJson(data: dict[str, Any]) -> gym.Space:
    if data["type"] == "Discrete":
        return gym.spaces.Discrete(int(data["n"]))
    shape, dtype = tuple(data["shape"]), np.dtype(data["dtype"])
    return gym.spaces.Box(np.array(data["low"], dtype=dtype).reshape(shape),
                          np.array(data["high"], dtype=dtype).reshape(shape), dtype=dtype)


class CEMModel(BaseRLObject):
    """
    Cross-entropy method with a linear policy ``outputs = [standardised state, 1] @ W``: a discrete action is the
    argmax of the outputs, a continuous one the outputs clipped to the action bounds.
    """

    API_VERSION = 1
    ALGO_TYPE = AlgoType.EVOLUTION_STRATEGIES
    ACTION_TYPES = (ActionType.DISCRETE, ActionType.CONTINUOUS)
    MODEL_EXTENSION = ".npz"
    # Measured on MobileRobotGymEnv-v0 (ground truth): 16/0.25/1.0/0.1/25 left the mean episode reward near -110
    # after 100k steps, these defaults reach about -10 by 150k steps (README.md).
    HYPERPARAMS: ClassVar[dict[str, Hyperparam]] = {
        "num_population": Hyperparam(24, "candidates (episodes) per generation", bounds=(2, POPULATION.high),
                                     search=(4, 64)),
        "elite_frac": Hyperparam(0.2, "fraction of them the Gaussian is refitted to", bounds=FRACTION,
                                 search=(0.05, 0.5)),
        "init_std": Hyperparam(2.0, "initial standard deviation of every weight", bounds=POSITIVE,
                               search=(0.05, 4.0, "log")),
        "extra_std": Hyperparam(0.5, "standard deviation added to the refitted one at the start...",
                                bounds=NON_NEGATIVE, search=(1e-3, 1.0, "log")),
        "extra_decay": Hyperparam(50, "...decaying linearly to 0 over this many generations", bounds=(1, None),
                                  search=(5, 100)),
    }

    def __init__(self) -> None:
        super().__init__()
        self.hyperparams: dict[str, Any] = dict(self.DEFAULT_HYPERPARAMS)
        self.env: Any = None
        self.observation_shape: tuple[int, ...] = ()
        self.action_space: gym.Space | None = None
        self.mean: np.ndarray | None = None  # flat weights of the policy played
        self.std: np.ndarray | None = None
        self.stats: RunningStats | None = None
        self.generation = 0
        self.best_return = -np.inf

    # --- env ---------------------------------------------------------------------------------------------------

    @classmethod
    def makeEnv(cls, args: argparse.Namespace, env_kwargs: dict[str, Any] | None = None,
                load_path_normalise: str | None = None) -> Any:
        # The states are standardised by the policy itself, with statistics saved in the model file.
        env = super().makeEnv(args, env_kwargs, load_path_normalise)
        return env.venv if isinstance(env, VecNormalize) else env

    # --- policy ------------------------------------------------------------------------------------------------

    @property
    def n_outputs(self) -> int:
        """Policy outputs: one per discrete action, or the size of the action vector."""
        if isinstance(self.action_space, gym.spaces.Discrete):
            return int(self.action_space.n)
        return int(np.prod(self.action_space.shape))

    @property
    def n_features(self) -> int:
        """Size of a flat observation."""
        return int(np.prod(self.observation_shape))

    def features(self, observation: np.ndarray) -> np.ndarray:
        """
        :param observation: a batch of observations (uint8 images are scaled to [0, 1])
        :return: flat float64 features (batch, n_features)
        """
        flat = np.asarray(observation).reshape(len(observation), -1)
        return flat / 255.0 if flat.dtype == np.uint8 else flat.astype(np.float64)

    def outputs(self, features: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """
        :param features: flat features (batch, n_features), not yet standardised
        :param weights: one flat weight vector (dim,) for all rows, or one per row (batch, dim)
        :return: the policy outputs (batch, n_outputs)
        """
        inputs = np.concatenate([self.stats.normalise(features), np.ones((len(features), 1))], axis=1)
        shape = (self.n_features + 1, self.n_outputs)
        if weights.ndim == 1:
            return inputs @ weights.reshape(shape)
        return np.einsum("bf,bfo->bo", inputs, weights.reshape(len(weights), *shape))

    def toActions(self, outputs: np.ndarray) -> np.ndarray:
        """
        :param outputs: policy outputs (batch, n_outputs)
        :return: one action per row
        """
        if isinstance(self.action_space, gym.spaces.Discrete):
            return np.argmax(outputs, axis=1)
        actions = outputs.reshape((len(outputs), *self.action_space.shape))
        return np.clip(actions, self.action_space.low, self.action_space.high).astype(self.action_space.dtype)

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None,
                  deterministic: bool = False) -> np.ndarray:
        # The policy is deterministic: `deterministic` changes nothing.
        return self.toActions(self.outputs(self.features(observation), self.mean))

    def getActionProba(self, observation: np.ndarray, dones: np.ndarray | None = None) -> np.ndarray:
        outputs = self.outputs(self.features(observation), self.mean)
        if isinstance(self.action_space, gym.spaces.Discrete):
            shifted = np.exp(outputs - outputs.max(axis=1, keepdims=True))
            return shifted / shifted.sum(axis=1, keepdims=True)
        return self.toActions(outputs)

    # --- persistence -------------------------------------------------------------------------------------------

    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        meta = {"algo": NAME, "api_version": self.API_VERSION, "format_version": FORMAT_VERSION,
                "num_timesteps": int(self.num_timesteps), "generation": int(self.generation),
                "best_return": float(self.best_return), "hyperparams": self.hyperparams,
                "observation_shape": list(self.observation_shape), "action_space": _spaceToJson(self.action_space)}
        # atomicPath: readers never see a half-written model, and the file gets the umask's permissions
        with atomicPath(save_path) as tmp_path, open(tmp_path, "wb") as handle:  # a file object: no suffix added
            np.savez(handle, meta=np.array(json.dumps(meta)), mean=self.mean, std=self.std,
                     obs_mean=self.stats.mean, obs_var=self.stats.var, obs_count=np.array(self.stats.count))

    @classmethod
    def load(cls, load_path: str, args: argparse.Namespace | None = None) -> CEMModel:
        if not os.path.isfile(load_path):
            raise ValueError(f"no cem model file at {load_path}")
        try:
            with np.load(load_path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
            meta = json.loads(str(arrays["meta"]))
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as error:
            raise ValueError(f"{load_path} is not a cem model ({type(error).__name__}: {error})") from None
        if not isinstance(meta, dict) or meta.get("algo") != NAME:
            saved_by = meta.get("algo") if isinstance(meta, dict) else None
            raise ValueError(f"{load_path} was saved by algorithm {saved_by!r}, not {NAME!r}")
        if meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{load_path} has cem model format {meta.get('format_version')!r}, this plugin reads "
                             f"format {FORMAT_VERSION}")
        model = cls()
        try:
            model.hyperparams = {**cls.DEFAULT_HYPERPARAMS, **meta["hyperparams"]}
            model.num_timesteps, model.generation = int(meta["num_timesteps"]), int(meta["generation"])
            model.best_return = float(meta["best_return"])
            model.observation_shape = tuple(int(v) for v in meta["observation_shape"])
            model.action_space = _spaceFromJson(meta["action_space"])
            model.mean, model.std = arrays["mean"].astype(np.float64), arrays["std"].astype(np.float64)
            model.stats = RunningStats(model.n_features)
            model.stats.mean, model.stats.var = arrays["obs_mean"].astype(np.float64), arrays["obs_var"].astype(np.float64)
            model.stats.count = float(arrays["obs_count"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{load_path} is a damaged cem model ({type(error).__name__}: {error})") from None
        dim = (model.n_features + 1) * model.n_outputs
        if model.mean.shape != (dim,) or model.std.shape != (dim,) or model.stats.mean.shape != (model.n_features,):
            raise ValueError(f"{load_path} is a damaged cem model (weights of shape {model.mean.shape}, expected "
                             f"({dim},))")
        return model

    # --- training --------------------------------------------------------------------------------------------

    def train(
        self,
        args: argparse.Namespace,
        callback: Callable[[dict[str, Any], dict[str, Any]], bool],
        env_kwargs: dict[str, Any] | None = None,
        train_kwargs: dict[str, Any] | None = None,
    ) -> None:
        load_path = args.load_rl_model_path
        saved = self.load(load_path, args) if load_path else None
        self.hyperparams = self.hyperparamsFromArgs(args, train_kwargs)  # typed and checked by the spec
        self.env = self.makeEnv(args, env_kwargs)
        self.observation_shape = tuple(self.env.observation_space.shape)
        self.action_space = self.env.action_space
        dim = (self.n_features + 1) * self.n_outputs
        if saved is not None:
            if saved.observation_shape != self.observation_shape or saved.mean.shape != (dim,):
                self.env.close()
                raise UsageError(f"{load_path} was trained on observations of shape {saved.observation_shape}, "
                                 f"this env gives {self.observation_shape}")
            self.mean, self.std, self.stats = saved.mean, saved.std, saved.stats
            self.num_timesteps, self.generation, self.best_return = (saved.num_timesteps, saved.generation,
                                                                     saved.best_return)
        else:
            self.mean = np.zeros(dim)
            self.std = np.full(dim, float(self.hyperparams["init_std"]))
            self.stats = RunningStats(self.n_features)
        rng = np.random.default_rng(args.seed)
        population = int(self.hyperparams["num_population"])
        n_elite = max(1, int(round(population * float(self.hyperparams["elite_frac"]))))
        end_timesteps = self.num_timesteps + args.num_timesteps
        player = _EpisodePlayer(self, callback)
        while True:
            candidates = self.mean + self.std * rng.standard_normal((population, dim))
            returns = player.play(candidates, end_timesteps)
            if returns is None:  # budget spent (or the callback asked to stop) mid-generation
                break
            decay = max(0.0, 1.0 - self.generation / int(self.hyperparams["extra_decay"]))
            self.mean, self.std = cemUpdate(candidates, returns, n_elite,
                                            float(self.hyperparams["extra_std"]) ** 2 * decay)
            self.best_return = max(self.best_return, float(returns.max()))
            self.stats.commit()  # between generations only (see the module docstring)
            self.generation += 1
            # a progress.csv training row per generation (and with it the episode means in tensorboard), through the
            # service the train command's callback offers (a plain function callback has none)
            log = getattr(callback, "logScalars", None)
            if log is not None:
                log(int(self.num_timesteps), {"train/mean_return": float(np.mean(returns)),
                                              "train/max_return": float(returns.max()),
                                              "train/mean_std": float(np.mean(self.std))})
        self.env.close()
        if saved is None and self.generation == 0 and self.num_timesteps >= end_timesteps:
            warnings.warn(f"no generation finished in {self.num_timesteps} steps (one plays {population} episodes): "
                          "the saved policy is the untrained starting point; give --num-timesteps room for a few "
                          "generations", stacklevel=2)


class _EpisodePlayer:
    """
    Plays candidates on the VecEnv, one episode each. An env that finishes an episode starts the next waiting
    candidate on the fresh episode the VecEnv has just reset; with no candidate waiting it plays the mean until its
    episode ends (real episodes of the policy being learned, recorded in the monitor files like the others).

    :param model: the CEMModel (its env, policy and step count)
    :param callback: the train command's callback, called after every vectorised step
    """

    def __init__(self, model: CEMModel, callback: Callable[[dict[str, Any], dict[str, Any]], bool]) -> None:
        self.model = model
        self.callback = callback
        self.observation = model.env.reset()
        self.assigned = np.full(model.env.num_envs, CENTRE)
        self.fresh = np.ones(model.env.num_envs, dtype=bool)  # envs whose episode has just begun

    def play(self, candidates: np.ndarray, end_timesteps: int) -> np.ndarray | None:
        """
        :param candidates: (population, dim) weight vectors
        :param end_timesteps: stop once the model's step count reaches this
        :return: each candidate's episode return, or None when stopped before all finished
        """
        model, env = self.model, self.model.env
        waiting = list(range(len(candidates)))[::-1]  # pop() hands out candidate 0 first
        returns = np.zeros(len(candidates))
        finished = 0
        for index in np.flatnonzero(self.fresh):
            self.assigned[index] = waiting.pop() if waiting else CENTRE
        while finished < len(candidates):
            if model.num_timesteps >= end_timesteps:
                return None
            features = model.features(self.observation)
            playing = self.assigned != CENTRE
            model.stats.gather(features[playing])
            weights = np.where(playing[:, None], candidates[self.assigned], model.mean[None])
            self.observation, rewards, dones, _ = env.step(model.toActions(model.outputs(features, weights)))
            model.num_timesteps += env.num_envs
            np.add.at(returns, self.assigned[playing], rewards[playing])
            self.fresh[:] = dones
            for index in np.flatnonzero(dones):
                finished += int(self.assigned[index] != CENTRE)
                self.assigned[index] = waiting.pop() if waiting else CENTRE
            # The callback reads the step count from _locals["self"]
            if self.callback({**locals(), "self": model}, globals()) is False:
                return None
        self.assigned[:] = CENTRE
        return returns
