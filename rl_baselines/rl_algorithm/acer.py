"""acer: Actor-Critic with Experience Replay (Wang et al., 2017, "Sample Efficient Actor-Critic with Experience
Replay"), discrete actions, in one module from top to bottom.

One network gives the policy π(·|s) and the action values Q(s, ·) (shared MLP or CNN body, two heads); the state
value is V(s) = Σ_a π(a|s) Q(s, a). Training alternates one on-policy update on the trajectory just collected (all
envs, ``n_steps`` each) with ``Poisson(replay_ratio)`` off-policy updates on trajectories drawn from a replay memory
of the last ``buffer_size`` steps of every env, once it holds ``replay_start`` steps. Each update uses:

- Retrace targets for Q, from the end of the trajectory backwards:
  ``Q^ret_t = r_t + γ (1 - done_t) [ρ̄_{t+1} (Q^ret_{t+1} - Q(s_{t+1}, a_{t+1})) + V(s_{t+1})]``
  with ``ρ̄ = min(1, π(a|s) / μ(a|s))`` (μ: the policy that acted) and ``V`` of the last observation to bootstrap;
- a policy gradient with importance weights truncated at ``c`` (``correction_term``):
  ``min(c, ρ_t) ∇log π(a_t|s_t) (Q^ret_t - V(s_t))``, plus the bias correction over all actions for what the
  truncation cut off: ``Σ_a [1 - c/ρ(a)]₊ π(a|s_t) ∇log π(a|s_t) (Q(s_t, a) - V(s_t))``, plus an entropy bonus;
- a trust region (``trust_region``): the gradient ``g`` of that objective with respect to the policy's probabilities
  is projected so that its first-order increase of KL(π_avg || π) stays below ``delta``,
  ``g - max(0, (kᵀg - δ) / |k|²) k`` with ``k = ∇_π KL(π_avg || π) = -π_avg / π``, where π_avg is an exponential
  moving average (decay ``alpha``) of the network's past weights;
- the Q regression ``½ (Q^ret_t - Q(s_t, a_t))²`` weighted by ``q_coef``; RMSprop; gradients clipped to
  ``max_grad_norm``.

An episode cut by the time limit is not a terminal state: its last reward gets γ V(last observation) added when
it is collected (with the network of that moment). The replay memory is not saved with the model: training
continued from a saved model fills it again before replaying (a run resumed with ``--resume`` gets back the memory
saved with its checkpoint).
"""
from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.base import TrainCallback
from rl_baselines.core.buffer_memory import BufferKind
from rl_baselines.core.hyperparams import CLIP_NORM, DISCOUNT, NON_NEGATIVE, POSITIVE, Hyperparam, Interval
from rl_baselines.rl_algorithm.torch_common import LR_SCHEDULE, TorchActorCritic, makeEncoder, orthogonalInit

# Keeps logarithms and ratios finite where a probability reaches 0.
EPS = 1e-6


class ACERNetwork(nn.Module):
    """
    Policy and action values over a shared body.

    :param observation_space: (H, W, C) uint8 images get a CNN, anything else an MLP
    :param n_actions: number of discrete actions
    :param hidden: MLP width
    """

    def __init__(self, observation_space: gym.spaces.Box, n_actions: int, hidden: int = 64) -> None:
        super().__init__()
        self.encoder = makeEncoder(observation_space, hidden)
        self.pi = orthogonalInit(nn.Linear(self.encoder.out_features, n_actions), 0.01)
        self.q = orthogonalInit(nn.Linear(self.encoder.out_features, n_actions), 1.0)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """
        :param obs: a batch of observations
        :return: (action probabilities, action values), each (batch, n_actions)
        """
        features = self.encoder(obs)
        return F.softmax(self.pi(features), dim=-1), self.q(features)


# --- the pieces of the ACER update (pure functions, tested on hand-computed examples) ----------------------------


def retraceTargets(rewards: torch.Tensor, dones: torch.Tensor, q_taken: torch.Tensor, values: torch.Tensor,
                   rho_taken: torch.Tensor, gamma: float) -> torch.Tensor:
    """
    :param rewards: (n_envs, n_steps)
    :param dones: (n_envs, n_steps), 1 where the step ended an episode
    :param q_taken: Q(s_t, a_t), (n_envs, n_steps)
    :param values: V(s_t) for the n_steps observations and the one after the last step, (n_envs, n_steps + 1)
    :param rho_taken: importance ratios π(a_t|s_t) / μ(a_t|s_t), (n_envs, n_steps)
    :param gamma: discount factor
    :return: the Retrace targets Q^ret_t, (n_envs, n_steps)
    """
    rho_bar = rho_taken.clamp(max=1.0)
    q_ret = values[:, -1]
    targets = torch.empty_like(rewards)
    for step in reversed(range(rewards.shape[1])):
        q_ret = rewards[:, step] + gamma * q_ret * (1.0 - dones[:, step])
        targets[:, step] = q_ret
        # What the step before bootstraps from: the target corrected towards the current policy's value.
        q_ret = rho_bar[:, step] * (q_ret - q_taken[:, step]) + values[:, step]
    return targets


def truncatedImportanceWeights(rho: torch.Tensor, actions: torch.Tensor, c: float) -> tuple[torch.Tensor, torch.Tensor]:
    """
    :param rho: importance ratios π(a|s) / μ(a|s) for every action, (batch, n_actions)
    :param actions: the actions taken, (batch,)
    :param c: truncation threshold
    :return: min(c, ρ(a_t)) for the taken actions (batch,), and the bias-correction weights [1 - c/ρ(a)]₊ for every
        action (batch, n_actions)
    """
    truncated = rho.gather(1, actions[:, None]).squeeze(1).clamp(max=c)
    correction = F.relu(1.0 - c / (rho + EPS))
    return truncated, correction


def trustRegionProjection(grad: torch.Tensor, pi: torch.Tensor, avg_pi: torch.Tensor, delta: float) -> torch.Tensor:
    """
    :param grad: gradient of the objective with respect to the policy probabilities, (batch, n_actions)
    :param pi: the policy probabilities, (batch, n_actions)
    :param avg_pi: the average policy's probabilities, (batch, n_actions)
    :param delta: largest first-order increase of KL(π_avg || π) allowed per sample
    :return: the projected gradient: ``grad - max(0, (kᵀgrad - δ) / |k|²) k`` with ``k = -π_avg / π``
    """
    k = -avg_pi / (pi + EPS)
    excess = ((k * grad).sum(-1) - delta).clamp(min=0.0)
    return grad - (excess / ((k * k).sum(-1) + EPS))[:, None] * k


def acerLoss(
    pi: torch.Tensor,
    q: torch.Tensor,
    avg_pi: torch.Tensor,
    mu: torch.Tensor,
    actions: torch.Tensor,
    rewards: torch.Tensor,
    dones: torch.Tensor,
    gamma: float,
    correction_term: float,
    ent_coef: float,
    q_coef: float,
    trust_region: bool,
    delta: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """
    A loss whose gradient with respect to the network's parameters is ACER's update direction (to minimise).

    :param pi: policy probabilities for the n_steps + 1 observations, (n_envs, n_steps + 1, n_actions), with graph
    :param q: action values, same shape, with graph
    :param avg_pi: the average policy's probabilities for the n_steps observations, (n_envs, n_steps, n_actions)
    :param mu: probabilities of the policy that acted, (n_envs, n_steps, n_actions)
    :param actions: (n_envs, n_steps) int64
    :param rewards: (n_envs, n_steps)
    :param dones: (n_envs, n_steps)
    :param gamma: discount factor
    :param correction_term: truncation threshold c of the importance weights
    :param ent_coef: entropy bonus weight
    :param q_coef: weight of the Q regression
    :param trust_region: project the policy gradient into the trust region around the average policy
    :param delta: trust-region size
    :return: the loss and scalar statistics
    """
    n_envs, n_steps = actions.shape
    n_actions = pi.shape[-1]
    batch = n_envs * n_steps
    flat_actions = actions.reshape(-1)
    pi_t = pi[:, :n_steps].reshape(batch, n_actions)
    q_t = q[:, :n_steps].reshape(batch, n_actions)
    values = (pi * q).sum(-1).detach()  # V(s) = Σ π Q, (n_envs, n_steps + 1)
    rho = pi_t.detach() / (mu.reshape(batch, n_actions) + EPS)
    rho_taken = rho.gather(1, flat_actions[:, None]).squeeze(1)
    q_taken = q_t.gather(1, flat_actions[:, None]).squeeze(1)
    q_ret = retraceTargets(rewards, dones, q_taken.detach().reshape(n_envs, n_steps), values,
                           rho_taken.reshape(n_envs, n_steps), gamma).reshape(-1)
    truncated_rho, correction = truncatedImportanceWeights(rho, flat_actions, correction_term)

    # Logarithms of the probabilities (not of the logits) so that the trust region sees the gradient through π.
    log_pi = torch.log(pi_t + EPS)
    state_values = values[:, :n_steps].reshape(-1)
    advantage = q_ret - state_values
    loss_truncated = -(log_pi.gather(1, flat_actions[:, None]).squeeze(1) * (advantage * truncated_rho)).mean()
    advantage_all = q_t.detach() - state_values[:, None]
    loss_bias = -(log_pi * (advantage_all * correction * pi_t.detach())).sum(-1).mean()
    entropy = -(pi_t * log_pi).sum(-1).mean()
    policy_loss = loss_truncated + loss_bias - ent_coef * entropy
    loss_q = 0.5 * ((q_ret - q_taken) ** 2).mean()

    if trust_region:
        # Gradient of the per-sample objective with respect to π, projected, then pushed back through π.
        grad_pi = torch.autograd.grad(-policy_loss * batch, pi_t, retain_graph=True)[0]
        projected = trustRegionProjection(grad_pi, pi_t.detach(), avg_pi.reshape(batch, n_actions), delta)
        loss = -(pi_t * projected).sum() / batch + q_coef * loss_q
    else:
        loss = policy_loss + q_coef * loss_q
    stats = {"loss_truncated": loss_truncated.item(), "loss_bias": loss_bias.item(), "loss_q": loss_q.item(),
             "entropy": entropy.item(), "mean_rho": rho_taken.mean().item()}
    return loss, stats


class TrajectoryReplay:
    """
    The last ``capacity`` trajectories of ``n_steps`` steps of every env (observations, actions, rewards, dones and
    the behaviour policy's probabilities).

    :param capacity: trajectories kept per env
    :param n_envs: parallel envs
    :param n_steps: steps per trajectory
    :param observation_space: the env's observation space (shape and dtype of the stored observations)
    :param n_actions: number of discrete actions
    """

    def __init__(self, capacity: int, n_envs: int, n_steps: int, observation_space: gym.spaces.Box, n_actions: int) -> None:
        self.capacity, self.n_envs, self.n_steps = int(capacity), n_envs, n_steps
        shape = observation_space.shape
        self.obs = np.zeros((self.capacity, n_envs, n_steps + 1, *shape), dtype=observation_space.dtype)
        self.actions = np.zeros((self.capacity, n_envs, n_steps), dtype=np.int64)
        self.rewards = np.zeros((self.capacity, n_envs, n_steps), dtype=np.float32)
        self.dones = np.zeros((self.capacity, n_envs, n_steps), dtype=np.float32)
        self.mus = np.zeros((self.capacity, n_envs, n_steps, n_actions), dtype=np.float32)
        self.position = 0
        self.size = 0

    def put(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, dones: np.ndarray, mus: np.ndarray) -> None:
        """Store one trajectory of every env (arrays shaped like the fields, without the capacity axis)."""
        for field, value in ((self.obs, obs), (self.actions, actions), (self.rewards, rewards),
                             (self.dones, dones), (self.mus, mus)):
            field[self.position] = value
        self.position = (self.position + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def stepsPerEnv(self) -> int:
        """:return: env steps stored per env"""
        return self.size * self.n_steps

    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        """:return: one stored trajectory per env (each env's own, drawn independently): obs, actions, rewards, dones, mus"""
        index = rng.integers(0, self.size, size=self.n_envs)
        envs = np.arange(self.n_envs)
        return (self.obs[index, envs], self.actions[index, envs], self.rewards[index, envs], self.dones[index, envs],
                self.mus[index, envs])


class ACERModel(TorchActorCritic):
    """ACER with the old toolbox's defaults (Stable-Baselines ACER's, with a 5000-step replay memory), but for the
    learning rate: constant unless ``lr_schedule`` is linear (Stable-Baselines' default decays it linearly)."""

    NAME = "acer"
    # its TrajectoryReplay: buffer_size steps per env of observations, actions (int64), rewards, dones, mus
    BUFFER = BufferKind("trajectory replay", "buffer_size", True, 1, 8 + 4 + 4 + 4)
    ACTION_TYPES = (ActionType.DISCRETE,)
    HYPERPARAMS: ClassVar[dict[str, Hyperparam]] = {
        "n_steps": Hyperparam(20, "steps per env in each trajectory", bounds=POSITIVE, search=(1, 100)),
        "learning_rate": Hyperparam(7e-4, "RMSprop learning rate", bounds=POSITIVE, search=(1e-5, 1e-2, "log")),
        "gamma": Hyperparam(0.99, "discount factor", bounds=DISCOUNT, search=(0.9, 0.9999)),
        "ent_coef": Hyperparam(0.01, "entropy bonus weight", bounds=NON_NEGATIVE, search=(1e-8, 0.1, "log")),
        "q_coef": Hyperparam(0.5, "weight of the Q regression", bounds=NON_NEGATIVE, search=(0.0, 1.0)),
        "max_grad_norm": Hyperparam(10.0, "gradient clipping norm", bounds=CLIP_NORM, search=(0.1, 10.0)),
        "rprop_epsilon": Hyperparam(1e-5, "RMSprop epsilon", bounds=POSITIVE, search=(1e-6, 1e-2, "log")),
        "rprop_alpha": Hyperparam(0.99, "RMSprop decay", bounds=Interval(0, 1, high_open=True),
                                  search=(0.5, 0.999)),
        "buffer_size": Hyperparam(5000, "replay memory, in steps per env", bounds=POSITIVE),
        "replay_ratio": Hyperparam(4, "mean off-policy updates per on-policy one (Poisson)", bounds=NON_NEGATIVE,
                                   search=(0, 10)),
        "replay_start": Hyperparam(1000, "steps per env in memory before replaying", bounds=NON_NEGATIVE),
        "correction_term": Hyperparam(10.0, "importance-weight truncation c", bounds=POSITIVE, search=(1.0, 10.0)),
        "trust_region": Hyperparam(True, "project the gradient into the trust region around the average policy"),
        "alpha": Hyperparam(0.99, "decay of the average policy", bounds=Interval(0, 1, high_open=True),
                            search=(0.5, 0.999)),
        "delta": Hyperparam(1.0, "trust-region size", bounds=POSITIVE, search=(0.1, 10.0)),
        "lr_schedule": LR_SCHEDULE,
    }

    @classmethod
    def threadsHelp(cls, image_observations: bool) -> bool:
        """:return: False: its updates of n_steps x n_envs frames run faster on one CPU thread than on two, on images
        too (measured on 2 cores: docs/benchmarks.md, "Torch threads per algorithm on images")"""
        return False

    def __init__(self) -> None:
        super().__init__()
        self.policy: ACERNetwork | None = None
        self.average_policy: ACERNetwork | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.replay: TrajectoryReplay | None = None
        self.rng: np.random.Generator | None = None  # draws the replayed trajectories

    @classmethod
    def checkHyperparams(cls, hyperparams: dict[str, Any]) -> None:
        """Also refuses a ``replay_start`` the replay memory can never hold (with ``replay_ratio`` above 0): the
        memory keeps ``max(1, buffer_size // n_steps)`` whole trajectories per env, and a run that can never replay
        would train on-policy only without a word."""
        super().checkHyperparams(hyperparams)
        n_steps, replay_start = int(hyperparams["n_steps"]), int(hyperparams["replay_start"])
        held = max(1, int(hyperparams["buffer_size"]) // n_steps) * n_steps
        if hyperparams["replay_ratio"] > 0 and replay_start > held:
            raise ValueError(f"replay_start ({replay_start}) exceeds the {held} steps per env the replay memory holds "
                             f"(buffer_size {hyperparams['buffer_size']} in trajectories of n_steps {n_steps}): "
                             f"it would never replay; lower replay_start, raise buffer_size, or set replay_ratio 0")

    # --- networks --------------------------------------------------------------------------------------------

    def build(self) -> None:
        if not isinstance(self.action_space, gym.spaces.Discrete):
            raise ValueError("acer needs a discrete action space")
        self.policy = ACERNetwork(self.observation_space, int(self.action_space.n))
        self.average_policy = ACERNetwork(self.observation_space, int(self.action_space.n))
        self.average_policy.load_state_dict(self.policy.state_dict())
        self.average_policy.requires_grad_(False)
        self.rng = None
        hp = self.hyperparams
        self.optimizer = torch.optim.RMSprop(self.policy.parameters(), lr=hp["learning_rate"], alpha=hp["rprop_alpha"],
                                             eps=hp["rprop_epsilon"])
        self.replay = None

    def modules(self) -> dict[str, nn.Module | torch.optim.Optimizer]:
        return {"policy": self.policy, "average_policy": self.average_policy, "optimizer": self.optimizer}

    def _makeReplay(self, n_envs: int) -> TrajectoryReplay:
        n_steps = int(self.hyperparams["n_steps"])
        return TrajectoryReplay(max(1, int(self.hyperparams["buffer_size"]) // n_steps), n_envs, n_steps,
                                self.observation_space, int(self.action_space.n))

    def replayBuffer(self) -> tuple[TrajectoryReplay, int, int] | None:
        return None if self.replay is None else (self.replay, self.replay.capacity, self.replay.size)

    def loadTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        if replay_buffer_folder is not None and self.replay is None:
            self.replay = self._makeReplay(self.env.num_envs)  # learn() keeps a replay memory that fits
        self.rng = np.random.default_rng()  # its saved state is set by the base class
        super().loadTrainingState(folder, replay_buffer_folder)

    def distribution(self, obs: torch.Tensor) -> torch.distributions.Categorical:
        probs, _ = self.policy(obs)
        return torch.distributions.Categorical(probs=probs)

    # --- training --------------------------------------------------------------------------------------------

    def update(self, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, dones: np.ndarray, mus: np.ndarray,
               learning_rate: float) -> dict[str, float]:
        """
        One ACER gradient step on a batch of trajectories, then the average policy moves towards the new weights.

        :param obs: (n_envs, n_steps + 1, *obs_shape)
        :param actions: (n_envs, n_steps)
        :param rewards: (n_envs, n_steps)
        :param dones: (n_envs, n_steps)
        :param mus: behaviour probabilities, (n_envs, n_steps, n_actions)
        :param learning_rate: this step's learning rate
        :return: statistics of the loss
        """
        hp = self.hyperparams
        n_envs, n_steps = actions.shape
        flat_obs = self.toTensor(obs).reshape(n_envs * (n_steps + 1), *obs.shape[2:])
        pi, q = self.policy(flat_obs)
        n_actions = pi.shape[-1]
        with torch.no_grad():
            avg_pi, _ = self.average_policy(self.toTensor(obs[:, :n_steps]).reshape(n_envs * n_steps, *obs.shape[2:]))
        loss, stats = acerLoss(
            pi.reshape(n_envs, n_steps + 1, n_actions), q.reshape(n_envs, n_steps + 1, n_actions),
            avg_pi.reshape(n_envs, n_steps, n_actions), self.toTensor(mus), self.toTensor(actions),
            self.toTensor(rewards), self.toTensor(dones), gamma=hp["gamma"], correction_term=hp["correction_term"],
            ent_coef=hp["ent_coef"], q_coef=hp["q_coef"], trust_region=bool(hp["trust_region"]), delta=hp["delta"])
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.policy.parameters(), hp["max_grad_norm"])
        self.optimizer.step()
        with torch.no_grad():
            for average, current in zip(self.average_policy.parameters(), self.policy.parameters()):
                average.mul_(hp["alpha"]).add_(current, alpha=1.0 - hp["alpha"])
        return stats

    def stateValues(self, obs: np.ndarray) -> np.ndarray:
        """:return: V(s) = sum_a pi(a|s) Q(s, a) of each observation (ACER's network gives Q, not V), (batch,)"""
        with torch.no_grad():
            probs, q = self.policy(self.toTensor(obs))
        return (probs * q).sum(-1).cpu().numpy()

    def budgetChunk(self) -> int:
        """:return: a rollout (``n_steps`` per env): it trains whole ones"""
        return int(self.hyperparams["n_steps"]) * int(self.env.num_envs)

    def learn(self, total_timesteps: int, callback: TrainCallback) -> None:
        env, hp = self.env, self.hyperparams
        n_envs, n_steps = env.num_envs, int(hp["n_steps"])
        n_actions = int(self.action_space.n)
        obs_space = env.observation_space
        if self.replay is None or self.replay.n_envs != n_envs or self.replay.n_steps != n_steps:
            self.replay = self._makeReplay(n_envs)
        if self.rng is None:  # follows the torch seed; kept on the model, so that a resumed run goes on with it
            self.rng = np.random.default_rng(int(torch.randint(0, 2**31 - 1, ()).item()))
        rng = self.rng
        start, target = self.scheduleStart(), self.num_timesteps + total_timesteps  # a resumed run goes on
        obs = env.reset()
        keep_going = True
        while keep_going and self.num_timesteps < target:
            learning_rate = self.learningRate(1.0 - (self.num_timesteps - start) / max(target - start, 1))
            traj_obs = np.zeros((n_envs, n_steps + 1, *obs_space.shape), dtype=obs_space.dtype)
            traj_actions = np.zeros((n_envs, n_steps), dtype=np.int64)
            traj_rewards = np.zeros((n_envs, n_steps), dtype=np.float32)
            traj_dones = np.zeros((n_envs, n_steps), dtype=np.float32)
            traj_mus = np.zeros((n_envs, n_steps, n_actions), dtype=np.float32)
            for step in range(n_steps):
                traj_obs[:, step] = obs
                with torch.no_grad():
                    probs, _ = self.policy(self.toTensor(obs))
                actions = torch.multinomial(probs, 1).squeeze(1).cpu().numpy()
                obs, rewards, dones, infos = env.step(actions)
                rewards = np.asarray(rewards, dtype=np.float32).copy()
                self.bootstrapTruncated(rewards, dones, infos, hp["gamma"])
                traj_actions[:, step], traj_rewards[:, step] = actions, rewards
                traj_dones[:, step], traj_mus[:, step] = dones, probs.cpu().numpy()
                self.num_timesteps += n_envs
                if callback(locals(), globals()) is False:
                    keep_going = False
                    break
            if not keep_going:
                break
            traj_obs[:, n_steps] = obs
            self.logStats(self.update(traj_obs, traj_actions, traj_rewards, traj_dones, traj_mus, learning_rate))
            self.replay.put(traj_obs, traj_actions, traj_rewards, traj_dones, traj_mus)
            if hp["replay_ratio"] > 0 and self.replay.stepsPerEnv() >= hp["replay_start"]:
                for _ in range(rng.poisson(hp["replay_ratio"])):
                    self.update(*self.replay.sample(rng), learning_rate)
            self.cleanPoint(callback)  # between updates: an exact checkpoint
