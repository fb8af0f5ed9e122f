"""deepq: DQN with double Q-learning, a dueling network and prioritized experience replay, discrete actions.

Written here rather than wrapped: Stable-Baselines3's DQN has none of the three. Adding them to it would mean a
custom policy (dueling), a new replay buffer class and a rewritten ``train`` (double-Q targets, importance weights,
priority updates): most of the algorithm, tied to SB3 internals. This module is the whole algorithm, top to bottom:

- double Q (van Hasselt et al., 2016): the target is ``r + gamma * Q_target(s', argmax_a Q_online(s', a))``;
- dueling (Wang et al., 2016): ``Q(s, a) = V(s) + A(s, a) - mean_a A(s, a)``;
- prioritized replay (Schaul et al., 2016), proportional variant: transition i is sampled with probability
  ``P(i) = p_i^alpha / sum_k p_k^alpha`` where ``p_i = |TD error| + eps`` (new transitions get the largest priority
  seen), and its loss is weighted by ``w_i = (N * P(i))^-beta / max_k (N * P(k))^-beta``, beta growing linearly
  from ``prioritized_replay_beta0`` to 1 over the run. Sampling draws from the normalised priorities of the whole
  buffer with numpy (O(N) per batch, well under the cost of a gradient step at these buffer sizes).

The three are switches, all on by default as in the old toolbox. Transitions are stored unnormalised and
normalised with the current VecNormalize statistics when sampled (as SB3 does). The replay buffer is not part of
the model file: continuing a saved model (``--load-rl-model-path``) restores its networks, optimiser and step count,
and refills the buffer; resuming a run (``--resume``) also restores the buffer saved with its checkpoint.
"""
from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.base import MIN_CNN_SIDE, TrainCallback
from rl_baselines.core.buffer_memory import BufferKind
from rl_baselines.core.checkpointing import Checkpoint
from rl_baselines.core.hyperparams import POSITIVE, Hyperparam, Interval
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.envs.factory import findVecNormalize
from rl_baselines.rl_algorithm.finite_training import checkParameters
from rl_baselines.rl_algorithm.torch_base import TorchRLObject, isImageSpace
from rl_baselines.runs.run_logging import logScalars

# Hidden layers of the Q-network for state observations (SB3's DQN default).
HIDDEN_SIZES = (64, 64)


def duelingAggregate(value: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """
    :param value: V(s), shape (batch, 1)
    :param advantages: A(s, a), shape (batch, n_actions)
    :return: Q(s, a) = V(s) + A(s, a) - mean_a A(s, a)
    """
    return value + advantages - advantages.mean(dim=1, keepdim=True)


def tdTarget(rewards: torch.Tensor, terminated: torch.Tensor, next_q_online: torch.Tensor,
             next_q_target: torch.Tensor, gamma: float, double_q: bool) -> torch.Tensor:
    """
    :param rewards: r, shape (batch,)
    :param terminated: 1 where s' ends the episode (no bootstrap), shape (batch,)
    :param next_q_online: Q_online(s', .), shape (batch, n_actions)
    :param next_q_target: Q_target(s', .), shape (batch, n_actions)
    :param gamma: discount
    :param double_q: pick the next action with the online network (double Q) instead of the target network
    :return: r + gamma * (1 - terminated) * Q_target(s', a'), a' = argmax of the online (double) or target Q
    """
    chooser = next_q_online if double_q else next_q_target
    next_actions = chooser.argmax(dim=1, keepdim=True)
    next_values = next_q_target.gather(1, next_actions).squeeze(1)
    return rewards + gamma * (1.0 - terminated) * next_values


class QNetwork(nn.Module):
    """
    States -> MLP (64, 64); images (uint8, HWC) -> the Nature DQN CNN; then one Q head, or value and advantage
    heads combined by :func:`duelingAggregate`.

    :param observation_space: the env's observation space
    :param n_actions: number of discrete actions
    :param dueling: dueling heads
    """

    def __init__(self, observation_space: gym.Space, n_actions: int, dueling: bool) -> None:
        super().__init__()
        self.images = isImageSpace(observation_space)
        if self.images:
            channels = observation_space.shape[-1]
            self.trunk = nn.Sequential(
                nn.Conv2d(channels, 32, 8, stride=4), nn.ReLU(), nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
                nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten())
            with torch.no_grad():
                n_features = self.trunk(torch.zeros(1, channels, *observation_space.shape[:2])).shape[1]
            self.trunk.append(nn.Linear(n_features, 512))
            self.trunk.append(nn.ReLU())
            n_features = 512
        else:
            layers: list[nn.Module] = [nn.Flatten()]
            n_features = int(np.prod(observation_space.shape))
            for size in HIDDEN_SIZES:
                layers += [nn.Linear(n_features, size), nn.ReLU()]
                n_features = size
            self.trunk = nn.Sequential(*layers)
        self.dueling = dueling
        self.head = nn.Linear(n_features, n_actions)  # the advantages when dueling
        self.value = nn.Linear(n_features, 1) if dueling else None

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        if self.images:
            observation = observation.permute(0, 3, 1, 2).float() / 255.0
        features = self.trunk(observation.float())
        if self.dueling:
            return duelingAggregate(self.value(features), self.head(features))
        return self.head(features)


class ReplayBuffer:
    """
    A circular buffer of transitions, sampled uniformly or, with ``alpha``, in proportion to priority^alpha.

    :param capacity: transitions kept
    :param observation_shape: shape of one observation
    :param observation_dtype: its dtype (uint8 images stay uint8)
    :param alpha: prioritization exponent, None for uniform sampling
    :param priority_eps: added to |TD error| so that no transition gets probability 0
    """

    def __init__(self, capacity: int, observation_shape: tuple[int, ...], observation_dtype: Any,
                 alpha: float | None = None, priority_eps: float = 1e-6) -> None:
        self.capacity = int(capacity)
        self.observations = np.zeros((self.capacity, *observation_shape), dtype=observation_dtype)
        self.next_observations = np.zeros_like(self.observations)
        self.actions = np.zeros(self.capacity, dtype=np.int64)
        self.rewards = np.zeros(self.capacity, dtype=np.float32)
        self.terminated = np.zeros(self.capacity, dtype=np.float32)
        self.alpha = alpha
        self.priority_eps = priority_eps
        self.priorities = np.zeros(self.capacity, dtype=np.float64)  # p_i^alpha
        self.max_priority = 1.0  # largest p_i seen, given to new transitions
        self.position = 0
        self.size = 0

    def add(self, observations: np.ndarray, next_observations: np.ndarray, actions: np.ndarray,
            rewards: np.ndarray, terminated: np.ndarray) -> None:
        """Store one transition per env (arrays with the envs along the first axis)."""
        for i in range(len(actions)):
            index = self.position
            self.observations[index] = observations[i]
            self.next_observations[index] = next_observations[i]
            self.actions[index], self.rewards[index], self.terminated[index] = actions[i], rewards[i], terminated[i]
            self.priorities[index] = self.max_priority ** (self.alpha or 1.0)
            self.position = (self.position + 1) % self.capacity
            self.size = min(self.size + 1, self.capacity)

    def probabilities(self) -> np.ndarray:
        """:return: P(i) for the stored transitions (uniform without prioritization)"""
        if self.alpha is None:
            return np.full(self.size, 1.0 / self.size)
        priorities = self.priorities[:self.size]
        return priorities / priorities.sum()

    def importanceWeights(self, indices: np.ndarray, beta: float) -> np.ndarray:
        """
        :param indices: sampled transitions
        :param beta: importance-sampling exponent
        :return: (N * P(i))^-beta divided by the largest weight of any stored transition (so weights <= 1)
        """
        probabilities = self.probabilities()
        weights = (self.size * probabilities[indices]) ** -beta
        return weights / (self.size * probabilities.min()) ** -beta

    def sample(self, batch_size: int, beta: float,
               rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """
        :param batch_size: transitions to draw (with replacement)
        :param beta: importance-sampling exponent
        :param rng: random generator
        :return: (the transitions by field, their indices, their importance weights)
        """
        if self.alpha is None:
            indices = rng.integers(0, self.size, batch_size)
            weights = np.ones(batch_size)
        else:
            # Inverse-CDF sampling over the cumulative priorities.
            cumulative = np.cumsum(self.priorities[:self.size])
            indices = np.searchsorted(cumulative, rng.random(batch_size) * cumulative[-1], side="right")
            indices = np.minimum(indices, self.size - 1)
            weights = self.importanceWeights(indices, beta)
        batch = {"observations": self.observations[indices], "next_observations": self.next_observations[indices],
                 "actions": self.actions[indices], "rewards": self.rewards[indices],
                 "terminated": self.terminated[indices]}
        return batch, indices, weights

    def updatePriorities(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        """
        :param indices: transitions just learnt from
        :param td_errors: their TD errors
        """
        if self.alpha is None:
            return
        priorities = np.abs(td_errors) + self.priority_eps
        self.priorities[indices] = priorities ** self.alpha
        self.max_priority = max(self.max_priority, float(priorities.max()))


class DQNModel(TorchRLObject):
    """
    DQN on a VecEnv (each of the ``--num-cpu`` envs adds its transition every step). Counts are in env steps, all
    envs together: one gradient step per ``train_freq`` steps once ``learning_starts`` steps were taken, a target
    network copy every ``target_network_update_freq`` steps, epsilon decaying linearly over the first
    ``exploration_fraction`` of the run. The buffer holds 50000 transitions by default (the old toolbox's 1000 is
    too small to learn from); with images that is about 2 x 12 KiB each at 64x64, 1.2 GB when full, so lower
    ``--buffer-size`` for long pixel runs.

    The learning rate (5e-4), batch size (64), an update every step and the exploration schedule (0.2 of the run
    down to 0.02) are chosen by measurement against the old toolbox's (the README's algorithm section); the other
    defaults are the old toolbox's.
    """

    NAME = "deepq"
    # its ReplayBuffer: observations, next_observations, actions (int64), rewards, terminated, priorities (float64)
    BUFFER = BufferKind("replay buffer", "buffer_size", False, 2, 8 + 4 + 4 + 8)
    MIN_IMAGE_SIDE = MIN_CNN_SIDE  # the Nature DQN CNN
    ACTION_TYPES = (ActionType.DISCRETE,)
    REPLAYS_EPISODES_IN_PROGRESS = True  # its loop goes on from the env after restoreTrainingState
    # The searched ones in the order of the search space (the sampler draws in this order).
    HYPERPARAMS: ClassVar[dict[str, Hyperparam]] = {
        "learning_rate": Hyperparam(5e-4, "Adam learning rate", bounds=POSITIVE, search=(1e-5, 1e-2, "log")),
        "buffer_size": Hyperparam(50000, "replay buffer size, in transitions", bounds=(1, None)),
        "exploration_fraction": Hyperparam(0.2, "fraction of the run over which epsilon decays", bounds=(0.0, 1.0),
                                           search=(0.0, 0.5)),
        "exploration_initial_eps": Hyperparam(1.0, "epsilon at the start", bounds=(0.0, 1.0)),
        "exploration_final_eps": Hyperparam(0.02, "epsilon at the end of the decay", bounds=(0.0, 1.0),
                                            search=(0.0, 0.2)),
        "gamma": Hyperparam(0.99, "discount factor", bounds=(0.0, 1.0), search=(0.9, 0.9999)),
        "train_freq": Hyperparam(1, "env steps per gradient step", bounds=(1, None), search=(1, 10)),
        "learning_starts": Hyperparam(500, "env steps before the first gradient step", bounds=(0, None),
                                      search=(0, 10000)),
        "target_network_update_freq": Hyperparam(500, "env steps between target network copies", bounds=(1, None),
                                                 search=(10, 10000)),
        "batch_size": Hyperparam(64, "transitions per gradient step", bounds=(1, None), search=(8, 128)),
        "max_grad_norm": Hyperparam(10.0, "gradient clipping norm", bounds=Interval(0.0, infinite=True)),
        "double_q": Hyperparam(True, "double Q-learning targets"),
        "dueling": Hyperparam(True, "dueling value and advantage heads"),
        "prioritized_replay": Hyperparam(True, "sample transitions by TD error"),
        "prioritized_replay_alpha": Hyperparam(0.6, "priority exponent", bounds=(0.0, None)),
        "prioritized_replay_beta0": Hyperparam(0.4, "initial importance-sampling exponent", bounds=(0.0, 1.0)),
        "prioritized_replay_eps": Hyperparam(1e-6, "added to every priority", bounds=(1e-12, None)),
    }

    def __init__(self) -> None:
        super().__init__()
        self.q_network: QNetwork | None = None
        self.target_network: QNetwork | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.rng = np.random.default_rng(0)
        self.replay_buffer: ReplayBuffer | None = None
        # The losses of the gradient steps since the last progress.csv row (its train/loss is their mean): kept with
        # the training state, so that a resumed run's first row averages the same steps as the uninterrupted run's.
        self.pending_losses: list[float] = []

    @property
    def learning_starts(self) -> int:
        """The step count at which learning starts, as SB3's off-policy ``learning_starts`` (the progress bar shows
        the warm-up before it): the ``learning_starts`` hyperparameter's steps after this run's start."""
        return self.scheduleStart() + int(self.hyperparams["learning_starts"])

    # --- networks --------------------------------------------------------------------------------------------

    def buildModel(self) -> None:
        """A new model: the Q-network, its target copy and the optimizer."""
        self._buildNetworks()

    def _buildNetworks(self) -> None:
        n_actions, dueling = int(self.action_space.n), bool(self.hyperparams["dueling"])
        self.q_network = QNetwork(self.observation_space, n_actions, dueling).to(self.device)
        self.target_network = QNetwork(self.observation_space, n_actions, dueling).to(self.device)
        self.target_network.load_state_dict(self.q_network.state_dict())
        self.optimizer = torch.optim.Adam(self.q_network.parameters(), lr=float(self.hyperparams["learning_rate"]),
                                          foreach=True)

    @torch.no_grad()
    def qValues(self, observation: np.ndarray) -> np.ndarray:
        """
        :param observation: a batch of (normalised) observations
        :return: Q(s, .) for each row
        """
        return self.q_network(self.toTensor(np.asarray(observation))).cpu().numpy()

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None,
                  deterministic: bool = False) -> np.ndarray:
        actions = self.qValues(observation).argmax(axis=1)
        if not deterministic:  # the epsilon-greedy policy at the end of exploration, as SB3's DQN.predict
            explore = self.rng.random(len(actions)) < float(self.hyperparams["exploration_final_eps"])
            actions = np.where(explore, self.rng.integers(0, self.action_space.n, len(actions)), actions)
        return actions

    def getActionProba(self, observation: np.ndarray, dones: np.ndarray | None = None) -> np.ndarray:
        """:return: the probabilities of the epsilon-greedy policy getAction samples from (final epsilon)"""
        n_actions, epsilon = int(self.action_space.n), float(self.hyperparams["exploration_final_eps"])
        probabilities = np.full((len(observation), n_actions), epsilon / n_actions)
        probabilities[np.arange(len(observation)), self.qValues(observation).argmax(axis=1)] += 1.0 - epsilon
        return probabilities

    # --- persistence -------------------------------------------------------------------------------------------

    def modelState(self) -> dict[str, Any]:
        return {"q_network": self.q_network.state_dict(), "target_network": self.target_network.state_dict(),
                "optimizer": self.optimizer.state_dict()}

    def setModelState(self, state: dict[str, Any]) -> None:
        self._buildNetworks()
        self.q_network.load_state_dict(state["q_network"])
        self.target_network.load_state_dict(state["target_network"])
        self.optimizer.load_state_dict(state["optimizer"])
        for group in self.optimizer.param_groups:  # a --learning-rate given when continuing applies
            group["lr"] = float(self.hyperparams["learning_rate"])

    def replayBuffer(self) -> tuple[Any, int, int] | None:
        buffer = self.replay_buffer
        return None if buffer is None else (buffer, buffer.capacity, buffer.size)

    def loopState(self) -> dict[str, Any]:
        return {**super().loopState(), "pending_losses": list(self.pending_losses)}

    def setLoopState(self, state: dict[str, Any]) -> None:
        super().setLoopState(state)
        self.pending_losses = [float(loss) for loss in state.get("pending_losses", [])]

    # --- training --------------------------------------------------------------------------------------------

    def budgetChunk(self) -> int:
        """:return: its envs, stepped together"""
        return int(self.env.num_envs)

    def train(self, env: Any, total_timesteps: int, hyperparams: dict[str, Any], callback: TrainCallback,
              logger: Any, settings: RunSettings, checkpoint: Checkpoint | None = None) -> None:
        self.prepareTraining(env, hyperparams, settings)
        hp = self.hyperparams
        env, n_envs = self.env, self.env.num_envs
        vec_normalize = findVecNormalize(env)
        normalise = vec_normalize.normalize_obs if vec_normalize is not None else (lambda obs: obs)
        unnormalise = vec_normalize.unnormalize_obs if vec_normalize is not None else (lambda obs: obs)
        buffer = ReplayBuffer(hp["buffer_size"], self.observation_space.shape, self.observation_space.dtype,
                              alpha=hp["prioritized_replay_alpha"] if hp["prioritized_replay"] else None,
                              priority_eps=hp["prioritized_replay_eps"])
        self.replay_buffer = buffer
        self.restoreTrainingState(checkpoint)  # train --resume: the buffer, self.rng and where learning started
        start_timesteps = self.scheduleStart()
        end_timesteps = self.num_timesteps + total_timesteps
        exploration_steps = max(1.0, hp["exploration_fraction"] * end_timesteps)

        observation = env.reset()
        losses = self.pending_losses  # since the last logged step
        while self.num_timesteps < end_timesteps:
            # epsilon-greedy, epsilon decaying linearly with the step count
            progress = min(1.0, self.num_timesteps / exploration_steps)
            epsilon = hp["exploration_initial_eps"] + progress * (
                hp["exploration_final_eps"] - hp["exploration_initial_eps"])
            actions = self.qValues(observation).argmax(axis=1)
            explore = self.rng.random(n_envs) < epsilon
            actions = np.where(explore, self.rng.integers(0, self.action_space.n, n_envs), actions)

            next_observation, rewards, dones, infos = env.step(actions)
            # An env that finished was already reset: its real last state is in the info. Only a true end
            # (not a time limit) stops the bootstrap.
            real_next = next_observation.copy()
            terminated = np.zeros(n_envs, dtype=np.float32)
            for i in np.flatnonzero(dones):
                real_next[i] = infos[i]["terminal_observation"]
                terminated[i] = not infos[i].get("TimeLimit.truncated", False)
            buffer.add(unnormalise(observation), unnormalise(real_next), actions, rewards, terminated)
            observation = next_observation
            previous_timesteps = self.num_timesteps
            self.num_timesteps += n_envs

            if self.num_timesteps - start_timesteps >= hp["learning_starts"]:
                beta = hp["prioritized_replay_beta0"] + (1.0 - hp["prioritized_replay_beta0"]) * min(
                    1.0, self.num_timesteps / end_timesteps)
                for _ in range(self.num_timesteps // hp["train_freq"] - previous_timesteps // hp["train_freq"]):
                    losses.append(self._gradientStep(buffer, beta, normalise))
                target_period = hp["target_network_update_freq"]
                if self.num_timesteps // target_period > previous_timesteps // target_period:
                    checkParameters([self.q_network], self.num_timesteps)  # (no NaN into the target: one line)
                    self.target_network.load_state_dict(self.q_network.state_dict())
            if self.num_timesteps // self.LOG_INTERVAL > previous_timesteps // self.LOG_INTERVAL:
                # progress.csv, live plots and tensorboard, through the train command's callback
                logScalars(callback, self.num_timesteps, {"train/exploration_rate": epsilon,
                                                          **({"train/loss": float(np.mean(losses))} if losses else {})})
                losses.clear()
            if callback(locals(), globals()) is False:
                break
        env.close()

    def _gradientStep(self, buffer: ReplayBuffer, beta: float, normalise: Any) -> float:
        hp = self.hyperparams
        batch, indices, weights = buffer.sample(hp["batch_size"], beta, self.rng)
        observations = self.toTensor(normalise(batch["observations"]))
        next_observations = self.toTensor(normalise(batch["next_observations"]))
        if hp["double_q"]:  # one online pass for s and s' (s' only picks the next action, no gradient)
            q_values, next_q_online = self.q_network(torch.cat([observations, next_observations])).split(len(indices))
            next_q_online = next_q_online.detach()
        else:
            q_values = self.q_network(observations)
        with torch.no_grad():
            next_q_target = self.target_network(next_observations)
            targets = tdTarget(self.toTensor(batch["rewards"]), self.toTensor(batch["terminated"]),
                               next_q_online if hp["double_q"] else next_q_target, next_q_target, hp["gamma"],
                               hp["double_q"])
        q_taken = q_values.gather(1, self.toTensor(batch["actions"])[:, None]).squeeze(1)
        losses = F.smooth_l1_loss(q_taken, targets, reduction="none")
        loss = (self.toTensor(weights, dtype=torch.float32) * losses).mean()
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.q_network.parameters(), hp["max_grad_norm"])
        self.optimizer.step()
        buffer.updatePriorities(indices, (q_taken - targets).detach().cpu().numpy())
        return float(loss.item())
