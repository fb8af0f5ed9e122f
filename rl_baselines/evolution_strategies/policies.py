"""What the evolution strategies share: the policy network CMA-ES searches over (as one flat parameter vector),
turning a policy's outputs into actions, normalising states, and running a population of candidates on a VecEnv.

State normalisation: both strategies remove the VecNormalize that makeEnv adds for state observations and
normalise states themselves (StateNormaliser), with a running mean and variance of the states the candidates saw
that changes only between generations. A VecNormalize keeps moving at every step, so candidates of one generation
would be judged under different normalisations, and the weights of the best candidate, found many generations
earlier, would later be played under statistics they were never evaluated with. The statistics a policy was
evaluated with are saved with it, in the model file.

Population evaluation: every candidate plays one episode in one env. The VecEnv resets an env by itself at the end
of an episode, so an env that finishes a candidate's episode starts the next waiting candidate at once on the fresh
episode (the envs never wait for each other). When no candidate is waiting, a free env plays the current centre of
the search (CMA-ES mean, ARS matrix) until the generation ends; those episodes are real, complete episodes of the
policy being learned, so they land in the monitor CSVs with the candidates' ones, and a candidate only ever starts
on a freshly reset env (such an env takes the next generation's candidates once its episode ends).
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from torch import nn
from torch.func import functional_call

from rl_baselines.rl_algorithm.torch_base import isImageSpace

# Candidate index of an env playing the centre of the search instead of a candidate.
CENTRE = -1
# Features whose standard deviation is below this carry no information: normalised to 0 (constant pixels).
MIN_STD = 1e-8


def flatObservations(observation: np.ndarray) -> np.ndarray:
    """
    :param observation: a batch of observations (images are uint8 and scaled to [0, 1])
    :return: float64 array (batch, features)
    """
    flat = np.asarray(observation).reshape(len(observation), -1)
    return flat / 255.0 if flat.dtype == np.uint8 else flat.astype(np.float64)


def actionDimension(action_space: gym.Space) -> int:
    """:return: the number of outputs a policy needs (one per discrete action, or the action vector size)"""
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    return int(np.prod(action_space.shape))


def outputsToActions(outputs: np.ndarray, action_space: gym.Space, deterministic: bool,
                     rng: np.random.Generator) -> np.ndarray:
    """
    :param outputs: policy outputs (batch, actionDimension): logits for discrete actions, the action otherwise
    :param action_space: the env's action space
    :param deterministic: argmax of the logits instead of sampling the softmax
    :param rng: random generator for the sampling
    :return: one action per row (continuous ones clipped to the space's bounds)
    """
    if isinstance(action_space, gym.spaces.Discrete):
        if deterministic:
            return np.argmax(outputs, axis=1)
        probabilities = softmax(outputs)
        # Inverse-CDF sampling, one uniform number per row.
        uniform = rng.random((len(outputs), 1))
        return np.minimum((probabilities.cumsum(axis=1) < uniform).sum(axis=1), outputs.shape[1] - 1)
    return boundedActions(outputs, action_space)


def boundedActions(outputs: np.ndarray, action_space: gym.spaces.Box) -> np.ndarray:
    """
    :param outputs: policy outputs (batch, actionDimension) of a continuous policy
    :param action_space: the env's (Box) action space
    :return: the outputs shaped as actions and clipped to the space's bounds, in its dtype
    """
    actions = outputs.reshape((len(outputs), *action_space.shape))
    return np.clip(actions, action_space.low, action_space.high).astype(action_space.dtype)


def actionProbabilities(outputs: np.ndarray, action_space: gym.Space, deterministic: bool) -> np.ndarray:
    """
    What getActionProba returns for these outputs: the distribution :func:`outputsToActions` acts with, so that it
    describes the actions played.

    :param outputs: policy outputs (batch, actionDimension): logits for discrete actions, the action otherwise
    :param action_space: the env's action space
    :param deterministic: the policy plays the argmax of the logits (each row is then one-hot on it) instead of
        sampling their softmax
    :return: one row per observation: probabilities summing to 1 (discrete), the clipped action (continuous)
    """
    if not isinstance(action_space, gym.spaces.Discrete):
        return boundedActions(outputs, action_space)
    if not deterministic:
        return softmax(outputs)
    one_hot = np.zeros(outputs.shape)
    one_hot[np.arange(len(outputs)), np.argmax(outputs, axis=1)] = 1.0
    return one_hot


def softmax(logits: np.ndarray) -> np.ndarray:
    """:return: the row-wise softmax of ``logits``"""
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def withoutVecNormalize(env: VecEnv) -> VecEnv:
    """:return: ``env`` without its outer VecNormalize (the strategies normalise states themselves)"""
    return env.venv if isinstance(env, VecNormalize) else env


class StateNormaliser:
    """
    ``(x - mean) / std`` with the running statistics of the states seen, which change only when :meth:`commit`
    merges the states gathered by :meth:`accumulate` since the last commit (once per generation). It starts as the
    identity (mean 0, variance 1).

    :param n_features: size of a flat state
    """

    def __init__(self, n_features: int) -> None:
        self.rms = RunningMeanStd(shape=(n_features,))
        self._sum, self._square_sum, self._count = np.zeros(n_features), np.zeros(n_features), 0

    @property
    def mean(self) -> np.ndarray:
        return self.rms.mean

    @property
    def var(self) -> np.ndarray:
        return self.rms.var

    def normalise(self, features: np.ndarray) -> np.ndarray:
        """
        :param features: flat states (batch, n_features)
        :return: the normalised states (features that never varied become 0)
        """
        std = np.sqrt(self.rms.var)
        return np.where(std > MIN_STD, (features - self.rms.mean) / np.maximum(std, MIN_STD), 0.0)

    def accumulate(self, features: np.ndarray) -> None:
        """Gather states for the next commit (as sums, so that images take no memory per step)."""
        self._sum += features.sum(axis=0)
        self._square_sum += np.square(features).sum(axis=0)
        self._count += len(features)

    def commit(self) -> None:
        """Merge the gathered states into the statistics."""
        if self._count == 0:
            return
        mean = self._sum / self._count
        self.rms.update_from_moments(mean, np.maximum(self._square_sum / self._count - np.square(mean), 0.0),
                                     self._count)
        self._sum, self._square_sum, self._count = np.zeros_like(self._sum), np.zeros_like(self._sum), 0

    def frozen(self) -> StateNormaliser:
        """:return: a copy of the current statistics (nothing gathered)"""
        copy = StateNormaliser(len(self.rms.mean))
        copy.rms.mean, copy.rms.var, copy.rms.count = self.rms.mean.copy(), self.rms.var.copy(), self.rms.count
        return copy

    def toDict(self) -> dict[str, Any]:
        """:return: the statistics as tensors and floats (for a model file)"""
        return {"mean": torch.as_tensor(self.rms.mean), "var": torch.as_tensor(self.rms.var),
                "count": float(self.rms.count)}

    @classmethod
    def fromDict(cls, data: dict[str, Any], n_features: int) -> StateNormaliser:
        """
        :param data: what :meth:`toDict` returned
        :param n_features: the expected size of a state
        :return: the normaliser
        """
        normaliser = cls(n_features)
        mean, var = data["mean"].numpy().astype(np.float64), data["var"].numpy().astype(np.float64)
        if mean.shape != (n_features,) or var.shape != (n_features,):
            raise ValueError(f"normalisation statistics of shape {tuple(mean.shape)}, expected ({n_features},)")
        normaliser.rms.mean, normaliser.rms.var, normaliser.rms.count = mean, var, float(data["count"])
        return normaliser


class PolicyNetwork(nn.Module):
    """
    The CMA-ES policy: (normalised, flat) states -> MLP in -> hidden (ReLU) -> outputs; images (uint8, HWC) ->
    three strided convolutions with max pooling -> a linear layer (the old toolbox's small CNN, without batch
    normalisation, whose statistics do not belong in a searched parameter vector, and with adaptive pooling so any
    image size fits).

    :param observation_space: the env's observation space
    :param n_outputs: logits per discrete action, or the action size
    :param hidden_size: width of the hidden layer for state observations
    """

    def __init__(self, observation_space: gym.Space, n_outputs: int, hidden_size: int = 100) -> None:
        super().__init__()
        self.images = isImageSpace(observation_space)
        if self.images:
            channels = observation_space.shape[-1]
            self.net = nn.Sequential(
                nn.Conv2d(channels, 8, 5, stride=2, padding=2, bias=False), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True),
                nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True),
                nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), nn.ReLU(), nn.AdaptiveMaxPool2d(3),
                nn.Flatten(), nn.Linear(32 * 3 * 3, n_outputs))
        else:
            n_inputs = int(np.prod(observation_space.shape))
            self.net = nn.Sequential(nn.Flatten(), nn.Linear(n_inputs, hidden_size), nn.ReLU(),
                                     nn.Linear(hidden_size, n_outputs))
        self.shapes = {name: param.shape for name, param in self.named_parameters()}
        self.n_params = sum(param.numel() for param in self.parameters())

    @property
    def device(self) -> torch.device:
        """:return: where the network's parameters live (move it with ``.to(device)``)"""
        return next(self.parameters()).device

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        if self.images:
            observation = observation.permute(0, 3, 1, 2).float() / 255.0
        return self.net(observation.float())

    def unflatten(self, vector: np.ndarray) -> dict[str, torch.Tensor]:
        """
        :param vector: all parameters as one flat vector (the order of ``named_parameters``)
        :return: the parameters by name, for :meth:`outputsWith`
        """
        tensor = torch.as_tensor(np.asarray(vector), dtype=torch.float32, device=self.device)
        params, start = {}, 0
        for name, shape in self.shapes.items():
            size = int(np.prod(shape))
            params[name] = tensor[start:start + size].view(shape)
            start += size
        return params

    @torch.no_grad()
    def outputsWith(self, params: dict[str, torch.Tensor], observation: np.ndarray) -> np.ndarray:
        """
        :param params: parameters from :meth:`unflatten`
        :param observation: a batch of observations
        :return: the outputs (batch, n_outputs)
        """
        observation = torch.as_tensor(np.asarray(observation), device=self.device)
        return functional_call(self, params, (observation,)).double().cpu().numpy()


ActFunction = Callable[[np.ndarray, np.ndarray], np.ndarray]


class PopulationRunner:
    """
    Plays candidates on a VecEnv, one episode each, keeping the envs' episodes going from one generation to the
    next (see the module docstring).

    :param env: the VecEnv (its num_envs envs run in parallel)
    :param learner: the algorithm; its ``num_timesteps`` grows by num_envs per vectorised step and it is
        ``_locals["self"]`` for the callback
    :param callback: ``callback(_locals, _globals) -> bool`` called after every vectorised step
    """

    def __init__(self, env: Any, learner: Any, callback: Callable[[dict, dict], bool]) -> None:
        self.env = env
        self.learner = learner
        self.callback = callback
        self.observation = env.reset()
        self.start_timesteps = int(learner.num_timesteps)
        self.generations = 0  # played to the end by this runner
        self.stopped = False  # the callback stopped training (a stop signal, or an evaluation's early stop)
        # Which candidate each env plays; CENTRE once no candidate is waiting.
        self.assigned = np.full(env.num_envs, CENTRE)
        # Envs whose current episode has just begun (the reset at the start of training counts).
        self.fresh = np.ones(env.num_envs, dtype=bool)

    def run(self, n_candidates: int, act: ActFunction, end_timesteps: int) -> np.ndarray | None:
        """
        Play each of ``n_candidates`` for one episode.

        :param n_candidates: the population size
        :param act: ``act(observation, assigned) -> actions`` where ``assigned[i]`` is the candidate env i plays
            (CENTRE: the centre of the search)
        :param end_timesteps: stop when the learner's step count reaches this
        :return: the candidates' episode returns, or None when stopped first (budget spent or the callback said so)
        """
        waiting = list(range(n_candidates))[::-1]  # pop() takes candidate 0 first
        returns = np.zeros(n_candidates)
        finished = 0
        for index in np.flatnonzero(self.fresh):
            self.assigned[index] = waiting.pop() if waiting else CENTRE
        while finished < n_candidates:
            if self.learner.num_timesteps >= end_timesteps:
                return None
            actions = act(self.observation, self.assigned)
            self.observation, rewards, dones, _ = self.env.step(actions)
            self.fresh[:] = dones
            self.learner.num_timesteps += self.env.num_envs
            playing = self.assigned != CENTRE
            np.add.at(returns, self.assigned[playing], rewards[playing])
            for index in np.flatnonzero(dones):
                finished += int(self.assigned[index] != CENTRE)
                self.assigned[index] = waiting.pop() if waiting else CENTRE
            # The callback reads the learner's step count from _locals["self"].
            if self.callback({**locals(), "self": self.learner}, globals()) is False:
                self.stopped = True
                return None
        self.assigned[:] = CENTRE
        self.generations += 1
        return returns

    def warnIfNothingLearned(self, n_candidates: int) -> None:
        """
        A run that ends before its first generation has been played keeps the search's starting point: say so (once,
        at the end of training), with the steps a generation takes.

        :param n_candidates: episodes per generation
        """
        if self.generations == 0 and self.start_timesteps == 0 and not self.stopped:
            warnings.warn(f"no generation finished in {self.learner.num_timesteps} steps (one plays {n_candidates} "
                          f"episodes): the saved policy is the untrained starting point; give --num-timesteps room for "
                          "a few generations", stacklevel=2)
