"""What acer, acktr and ppo1 share, on top of :class:`rl_baselines.rl_algorithm.torch_base.TorchRLObject` (which gives the
hyperparameter flags, the ``.pt`` model file and the start of a continued training): observation encoders, the
learning-rate schedule, range checks of hyperparameters, acting from the policy's distribution, the critic's value
added to the last reward of an episode the time limit cut (acktr, ppo1), progress.csv and the common ``train``.

progress.csv gets a row after the first update at least LOG_INTERVAL steps past the previous row (past the run's
start for the first), and a last one when training reaches its step count, for the updates since the previous row
(none when the last update wrote one; a run stopped before its step count, by a signal, writes none: its resumed run
writes it); the step of the next row is saved with the training state (``loopState``), so that a resumed run writes
its rows at the uninterrupted run's steps.

The model file keeps, besides TorchRLObject's entries, ``state_dicts``: the state of every network and optimizer
named by :meth:`TorchActorCritic.modules` (tensors and plain values only, so it loads with ``weights_only=True``).
"""
from __future__ import annotations

import math
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rl_baselines.core.base import MIN_CNN_SIDE, TrainCallback, notifyCleanPoint
from rl_baselines.core.checkpointing import Checkpoint
from rl_baselines.core.hyperparams import Hyperparam
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.rl_algorithm.finite_training import checkParameters, withoutArgumentChecks
from rl_baselines.rl_algorithm.torch_base import TorchRLObject, isImageSpace
from rl_baselines.runs.run_logging import sharedProgressLogger
from srl_toolbox.optimizers import multiTensorSteps

LR_SCHEDULES = ("constant", "linear")
# The learning-rate schedule every actor-critic here declares (the last entry of its HYPERPARAMS).
LR_SCHEDULE = Hyperparam("constant", "learning-rate schedule: constant, or linear decay to 0 over the run",
                         choices=LR_SCHEDULES, search=list(LR_SCHEDULES))


# --- observation encoders ----------------------------------------------------------------------------------------


def orthogonalInit(module: nn.Module, gain: float) -> nn.Module:
    """Orthogonal weights and zero biases (the usual actor-critic initialisation)."""
    nn.init.orthogonal_(module.weight, gain=gain)
    if module.bias is not None:
        nn.init.zeros_(module.bias)
    return module


class MlpEncoder(nn.Module):
    """
    Two tanh hidden layers over the flattened observation.

    :param obs_dim: flattened observation size
    :param hidden: width of each hidden layer
    """

    def __init__(self, obs_dim: int, hidden: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(
            orthogonalInit(nn.Linear(obs_dim, hidden), math.sqrt(2)), nn.Tanh(),
            orthogonalInit(nn.Linear(hidden, hidden), math.sqrt(2)), nn.Tanh(),
        )
        self.out_features = hidden

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs.float().flatten(1))


class CnnEncoder(nn.Module):
    """
    The Nature-DQN convolutions over (H, W, C) uint8 images, scaled to [0, 1] and moved to NCHW here, then one
    ReLU layer of ``features`` units.

    :param image_shape: (H, W, C), both sides at least 36
    :param features: output size
    """

    def __init__(self, image_shape: tuple[int, ...], features: int = 256) -> None:
        super().__init__()
        height, width, channels = image_shape
        self.convs = nn.Sequential(
            orthogonalInit(nn.Conv2d(channels, 32, 8, stride=4), math.sqrt(2)), nn.ReLU(),
            orthogonalInit(nn.Conv2d(32, 64, 4, stride=2), math.sqrt(2)), nn.ReLU(),
            orthogonalInit(nn.Conv2d(64, 64, 3, stride=1), math.sqrt(2)), nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            flat = self.convs(torch.zeros(1, channels, height, width)).shape[1]
        self.fc = nn.Sequential(orthogonalInit(nn.Linear(flat, features), math.sqrt(2)), nn.ReLU())
        self.out_features = features

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.fc(self.convs(obs.permute(0, 3, 1, 2).float() / 255.0))


def makeEncoder(observation_space: gym.spaces.Box, hidden: int = 64) -> nn.Module:
    """
    :param observation_space: the env's observation space
    :param hidden: MLP width (low-dimensional observations)
    :return: a CNN for uint8 images, an MLP otherwise (its ``out_features`` gives the feature size)
    """
    if isImageSpace(observation_space):
        return CnnEncoder(observation_space.shape)
    return MlpEncoder(int(np.prod(observation_space.shape)), hidden)


class ActorCriticNetwork(nn.Module):
    """
    Policy and value function of acktr and ppo1: separate MLPs for low-dimensional observations, one CNN shared by
    both heads for images (acktr's K-FAC statistics then see both Fisher terms; MLPs are cheap to split).

    :param observation_space: (H, W, C) uint8 images, or anything flat
    :param action_space: Discrete (categorical policy) or Box (diagonal Gaussian, state-independent log std)
    :param hidden: MLP width
    """

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, hidden: int = 64) -> None:
        super().__init__()
        self.pi_encoder = makeEncoder(observation_space, hidden)
        self.vf_encoder = None if isImageSpace(observation_space) else makeEncoder(observation_space, hidden)
        features = self.pi_encoder.out_features
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        n_outputs = int(action_space.n) if self.discrete else int(np.prod(action_space.shape))
        self.pi = orthogonalInit(nn.Linear(features, n_outputs), 0.01)
        self.vf = orthogonalInit(nn.Linear(features, 1), 1.0)
        self.log_std = None if self.discrete else nn.Parameter(torch.zeros(n_outputs))

    def forward(self, obs: torch.Tensor) -> tuple[torch.distributions.Distribution, torch.Tensor]:
        """
        :param obs: a batch of observations
        :return: the action distribution and the state values (batch,)
        """
        pi_features = self.pi_encoder(obs)
        values = self.vf(pi_features if self.vf_encoder is None else self.vf_encoder(obs)).squeeze(-1)
        if self.discrete:
            return torch.distributions.Categorical(logits=self.pi(pi_features)), values
        normal = torch.distributions.Normal(self.pi(pi_features), self.log_std.exp())
        return torch.distributions.Independent(normal, 1), values


# --- the base class ----------------------------------------------------------------------------------------------


class TorchActorCritic(TorchRLObject):
    """
    An actor-critic written here. A subclass sets NAME and HYPERPARAMS (with ``learning_rate`` and ``lr_schedule``,
    :data:`LR_SCHEDULE`), and implements :meth:`build` (networks and optimizers from ``observation_space``,
    ``action_space`` and ``hyperparams``), :meth:`modules` (what the model file keeps), :meth:`distribution` (the
    policy) and :meth:`learn` (the training loop).
    """

    # learn() calls notifyCleanPoint after every update.
    CHECKPOINT_AT_CLEAN_POINTS = True
    REPLAYS_EPISODES_IN_PROGRESS = True  # the rollouts go on from the env after restoreTrainingState
    MIN_IMAGE_SIDE = MIN_CNN_SIDE  # CnnEncoder, the Nature CNN

    # The weights are drawn from the torch generator; acer draws its replay generator from it too (in learn).
    SEEDED_GENERATORS = ("torch",)

    def __init__(self) -> None:
        super().__init__()
        self.logger: Any = None
        self._log_start = (0, time.monotonic())
        self._next_log = 0

    # --- to implement ----------------------------------------------------------------------------------------

    def build(self) -> None:
        """Build the networks and optimizers from ``observation_space``, ``action_space`` and ``hyperparams``."""
        raise NotImplementedError

    def modules(self) -> dict[str, nn.Module | torch.optim.Optimizer]:
        """:return: the networks and optimizers the model file keeps, by name"""
        raise NotImplementedError

    def distribution(self, obs: torch.Tensor) -> torch.distributions.Distribution:
        """
        :param obs: a batch of observations
        :return: the policy's action distribution for them
        """
        raise NotImplementedError

    def learn(self, total_timesteps: int, callback: TrainCallback) -> None:
        """
        Train on ``self.env`` for ``total_timesteps`` more env steps.

        :param total_timesteps: env steps to take, all envs together
        :param callback: called after every vectorised step; returning False stops training
        """
        raise NotImplementedError

    def setup(self, observation_space: gym.Space, action_space: gym.Space, hyperparams: dict[str, Any]) -> None:
        """
        Build a fresh model without an env (for tests and tools).

        :param observation_space: the observation space
        :param action_space: the action space
        :param hyperparams: hyperparameters that differ from the defaults
        """
        self.observation_space, self.action_space = observation_space, action_space
        self.hyperparams = {**self.DEFAULT_HYPERPARAMS, **hyperparams}
        self.build()

    # --- hyperparameters -------------------------------------------------------------------------------------

    def learningRate(self, progress_remaining: float) -> float:
        """
        :param progress_remaining: 1 at the start of this training run, 0 at its end
        :return: the learning rate of the schedule at that point
        """
        initial = float(self.hyperparams["learning_rate"])
        return initial * max(progress_remaining, 0.0) if self.hyperparams["lr_schedule"] == "linear" else initial

    # --- persistence -----------------------------------------------------------------------------------------

    def modelState(self) -> dict[str, Any]:
        return {"state_dicts": {name: module.state_dict() for name, module in self.modules().items()}}

    def buildOnDevice(self) -> None:
        """:meth:`build`, then move the networks onto :attr:`device` (the optimizers keep their parameters); the
        optimizers step their tensors together (srl_toolbox.optimizers: the same floats, fewer Python calls)."""
        self.build()
        for module in self.modules().values():
            if isinstance(module, nn.Module):
                module.to(self.device)
        multiTensorSteps(module for module in self.modules().values() if isinstance(module, torch.optim.Optimizer))

    def buildModel(self) -> None:
        """A new model: :meth:`buildOnDevice`."""
        self.buildOnDevice()

    def setModelState(self, state: dict[str, Any]) -> None:
        self.buildOnDevice()
        try:
            for name, module in self.modules().items():
                module.load_state_dict(state["state_dicts"][name])  # optimizers too: training goes on from them
        except (KeyError, RuntimeError, ValueError) as error:
            reason = str(error).strip().splitlines()[0]
            raise ValueError(f"its saved networks do not fit {self.NAME}'s ({reason})") from None

    # --- acting ----------------------------------------------------------------------------------------------

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None, deterministic: bool = False) -> np.ndarray:
        with torch.no_grad():
            distribution = self.distribution(self.toTensor(np.asarray(observation)))
            if deterministic:
                action = distribution.probs.argmax(-1) if hasattr(distribution, "probs") else distribution.mean
            else:
                action = distribution.sample()
        action = action.cpu().numpy()
        if isinstance(self.action_space, gym.spaces.Box):
            action = np.clip(action, self.action_space.low, self.action_space.high)
        return action

    def getActionProba(self, observation: np.ndarray, dones: np.ndarray | None = None) -> np.ndarray:
        with torch.no_grad():
            distribution = self.distribution(self.toTensor(np.asarray(observation)))
        if hasattr(distribution, "probs"):
            return distribution.probs.cpu().numpy()
        return distribution.mean.cpu().numpy()

    # --- training --------------------------------------------------------------------------------------------

    def stateValues(self, obs: np.ndarray) -> np.ndarray:
        """
        :param obs: a batch of observations
        :return: the critic's value of each, (batch,): the second output of ``self.policy``, an
            :class:`ActorCriticNetwork` (acktr, ppo1; override for another critic)
        """
        with torch.no_grad():
            return self.policy(self.toTensor(obs))[1].cpu().numpy()

    def bootstrapTruncated(self, rewards: np.ndarray, dones: np.ndarray, infos: list[dict[str, Any]],
                           gamma: float) -> None:
        """
        Add ``gamma`` x the value of the last observation to the reward of each env whose episode the time limit cut
        (not ended): its value goes on beyond the last reward.

        :param rewards: a vectorised step's rewards, (n_envs,) float32, updated in place
        :param dones: the step's done flags
        :param infos: the step's infos (``TimeLimit.truncated``, ``terminal_observation``)
        :param gamma: the discount
        """
        for index in np.flatnonzero(dones):
            info = infos[index]
            if info.get("TimeLimit.truncated") and info.get("terminal_observation") is not None:
                rewards[index] += gamma * float(self.stateValues(info["terminal_observation"][None])[0])

    def train(self, env: Any, total_timesteps: int, hyperparams: dict[str, Any], callback: TrainCallback,
              logger: Any, settings: RunSettings, checkpoint: Checkpoint | None = None) -> None:
        self.prepareTraining(env, hyperparams, settings)
        owns_logger = False
        if logger is not None:
            self.logger = logger  # the run's progress.csv (resumed: goes on) and tensorboard, shared
        elif settings.run_dir or hasattr(callback, "progressLogger"):
            self.logger, owns_logger = sharedProgressLogger(callback, settings.run_dir)
        self.startLoop()
        self.restoreTrainingState(checkpoint)  # a resumed run's loop counters: where the interrupted run was
        self._log_start = (self.num_timesteps, time.monotonic())
        target = self.num_timesteps + int(total_timesteps)  # (as learn counts it: a resumed run goes on)
        try:
            with withoutArgumentChecks():  # (checkParameters after each update stands in: cleanPoint)
                self.learn(int(total_timesteps), callback)
            if self.num_timesteps >= target:
                self.logLastRow()
        finally:
            self.env.close()
            if self.logger is not None and owns_logger:
                self.logger.close()
            self.logger = None

    def cleanPoint(self, callback: TrainCallback) -> None:
        """
        What ``learn`` does after every update: check that no parameter holds NaN or inf (the loop runs without
        torch's argument checks), then tell the callback that a checkpoint taken now is exact.

        :param callback: the training callback
        :raises TrainingDiverged: the update left NaN or inf in a network's parameters
        """
        checkParameters([module for module in self.modules().values() if isinstance(module, nn.Module)],
                        self.num_timesteps)
        notifyCleanPoint(callback, self.num_timesteps)

    def startLoop(self) -> None:
        """The loop counters of a run that starts (:meth:`loopState`): the first progress.csv row LOG_INTERVAL steps
        on (override to add counters, calling this)."""
        self._next_log = self.num_timesteps + self.LOG_INTERVAL

    def loopState(self) -> dict[str, int]:
        # The step of the next progress.csv row: a resumed run writes its rows at the uninterrupted run's steps.
        return {**super().loopState(), "next_log": int(self._next_log)}

    def setLoopState(self, state: dict[str, Any]) -> None:
        super().setLoopState(state)
        self._next_log = int(state.get("next_log", self._next_log))

    def logStats(self, stats: dict[str, float]) -> None:
        """
        Average an update's statistics into progress.csv, written every LOG_INTERVAL env steps (no-op without a run
        folder).

        :param stats: scalar statistics by name
        """
        if self.logger is None:
            return
        for name, value in stats.items():
            self.logger.record_mean(f"train/{name}", value)
        if self.num_timesteps >= self._next_log:
            self._next_log = self.num_timesteps + self.LOG_INTERVAL
            self._writeRow()

    def logLastRow(self) -> None:
        """At the end of the step count: the row of the statistics recorded since the previous row, whatever
        LOG_INTERVAL (nothing when the last update wrote its row, or without a run folder)."""
        if self.logger is not None and any(name.startswith("train/") for name in self.logger.name_to_value):
            self._writeRow()

    def _writeRow(self) -> None:
        """Write the progress.csv row of the statistics recorded so far, at the current step count."""
        start_steps, start_time = self._log_start
        elapsed = max(time.monotonic() - start_time, 1e-9)
        self.logger.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")  # (as SB3's)
        self.logger.record("time/fps", int((self.num_timesteps - start_steps) / elapsed))
        self.logger.dump(self.num_timesteps)
