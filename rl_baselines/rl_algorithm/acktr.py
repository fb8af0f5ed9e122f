"""acktr: Actor-Critic using Kronecker-Factored Trust Region (Wu et al., 2017), discrete and continuous actions, in
one module from top to bottom (the K-FAC optimizer is its own class, in kfac.py).

The learner is A2C's: every env takes ``n_steps`` steps, the n-step discounted returns bootstrapped from V of the
last observation give the advantages, and the loss is ``-A log π(a|s) - ent_coef H(π) + vf_coef (R - V(s))²``. The
step is not a plain gradient step but a natural-gradient one: K-FAC approximates the Fisher of the joint output
distribution p(a, v|s) = π(a|s) N(v; V(s), 1), whose statistics come from the gradient of the log-likelihood of an
action drawn from π and of the value term ``vf_fisher_coef (V(s) - v)²`` with v drawn from N(V(s), 1) (as OpenAI
Baselines' ACKTR: twice the Gaussian log-likelihood's gradient); the step is scaled so that its predicted KL stays
below ``kfac_clip`` (the trust region) and applied with momentum. Unlike Baselines, the Kronecker factors are
decomposed every ``kfac_inverse_interval`` updates (Baselines: every update) and there is no warm-up of plain SGD
steps; the learning rate is constant unless ``lr_schedule`` is linear (Stable-Baselines' default). The gradient is
clipped to ``max_grad_norm`` before the K-FAC step, which the KL scaling then undoes whenever the trust region binds.

Discrete actions use a categorical policy, continuous ones a diagonal Gaussian with a state-independent log std
(sampled actions are clipped to the action bounds in the env, the unclipped ones are learned from). Low-dimensional
observations get separate policy and value MLPs, images one CNN with two heads. An episode cut by the time limit is
not a terminal state: its last reward gets γ V(last observation) added.
"""
from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.base import TrainCallback
from rl_baselines.core.buffer_memory import BufferKind
from rl_baselines.core.hyperparams import CLIP_NORM, DISCOUNT, NON_NEGATIVE, POSITIVE, Hyperparam, Interval
from rl_baselines.rl_algorithm.kfac import KFACOptimizer
from rl_baselines.rl_algorithm.torch_common import LR_SCHEDULE, ActorCriticNetwork, TorchActorCritic


def discountedReturns(rewards: np.ndarray, dones: np.ndarray, last_values: np.ndarray, gamma: float) -> np.ndarray:
    """
    :param rewards: (n_steps, n_envs)
    :param dones: (n_steps, n_envs), 1 where the step ended an episode
    :param last_values: V of the observation after the last step, (n_envs,)
    :param gamma: discount factor
    :return: n-step discounted returns bootstrapped from ``last_values``, (n_steps, n_envs)
    """
    returns = np.zeros_like(rewards)
    running = last_values.astype(np.float32)
    for step in reversed(range(rewards.shape[0])):
        running = rewards[step] + gamma * running * (1.0 - dones[step])
        returns[step] = running
    return returns


class ACKTRModel(TorchActorCritic):
    """ACKTR with K-FAC, Stable-Baselines' step sizes (lr 0.25, KL clip 0.001) and the old toolbox's loss weights."""

    NAME = "acktr"
    # each update's batch: n_steps per env of observations, actions (int64), rewards, dones
    BUFFER = BufferKind("rollout batch", "n_steps", True, 1, 8 + 4 + 4)
    ACTION_TYPES = (ActionType.DISCRETE, ActionType.CONTINUOUS)
    HYPERPARAMS: ClassVar[dict[str, Hyperparam]] = {
        "n_steps": Hyperparam(20, "steps per env between updates", bounds=POSITIVE, search=(1, 100)),
        "learning_rate": Hyperparam(0.25, "K-FAC learning rate", bounds=POSITIVE, search=(1e-3, 1.0, "log")),
        "gamma": Hyperparam(0.99, "discount factor", bounds=DISCOUNT, search=(0.9, 0.9999)),
        "ent_coef": Hyperparam(0.01, "entropy bonus weight", bounds=NON_NEGATIVE, search=(1e-8, 0.1, "log")),
        "vf_coef": Hyperparam(0.5, "value loss weight", bounds=NON_NEGATIVE, search=(0.0, 1.0)),
        "max_grad_norm": Hyperparam(0.5, "gradient clipping norm", bounds=CLIP_NORM, search=(0.1, 5.0)),
        "vf_fisher_coef": Hyperparam(1.0, "weight of the value output in the Fisher", bounds=NON_NEGATIVE,
                                     search=(0.0, 1.0)),
        # Stable Baselines' 0.001 let one seed in three collapse to a wall-bumping policy on MobileRobotGymEnv-v0
        # (20k steps, seeds 0-6: 4 of 7 learned); 0.0003 learned on all 7 (mean 203 of ~230).
        "kfac_clip": Hyperparam(0.0003, "trust region: bound on the predicted KL of a step", bounds=POSITIVE,
                                search=(1e-4, 1e-1, "log")),
        "kfac_damping": Hyperparam(0.01, "damping of the Kronecker factors", bounds=POSITIVE,
                                   search=(1e-4, 1e-1, "log")),
        "kfac_stat_decay": Hyperparam(0.99, "decay of the running Kronecker factors",
                                      bounds=Interval(0, 1, high_open=True)),
        "kfac_inverse_interval": Hyperparam(10, "updates between inversions of the factors", bounds=POSITIVE),
        "momentum": Hyperparam(0.9, "momentum of the natural-gradient step", bounds=Interval(0, 1, high_open=True)),
        "lr_schedule": LR_SCHEDULE,
    }

    @classmethod
    def threadsHelp(cls, image_observations: bool) -> bool:
        """:return: False: its K-FAC updates of n_steps x n_envs frames run faster on one CPU thread than on two, on
        images too (measured on 2 cores: docs/benchmarks.md, "Torch threads per algorithm on images")"""
        return False

    def __init__(self) -> None:
        super().__init__()
        self.policy: ActorCriticNetwork | None = None
        self.optimizer: KFACOptimizer | None = None

    # --- networks --------------------------------------------------------------------------------------------

    def build(self) -> None:
        if not isinstance(self.action_space, (gym.spaces.Discrete, gym.spaces.Box)):
            raise ValueError("acktr needs a Discrete or Box action space")
        hp = self.hyperparams
        self.policy = ActorCriticNetwork(self.observation_space, self.action_space)
        self.optimizer = KFACOptimizer(self.policy, lr=hp["learning_rate"], momentum=hp["momentum"],
                                       stat_decay=hp["kfac_stat_decay"], damping=hp["kfac_damping"],
                                       kl_clip=hp["kfac_clip"], inverse_interval=int(hp["kfac_inverse_interval"]))

    def modules(self) -> dict[str, nn.Module | torch.optim.Optimizer]:
        return {"policy": self.policy, "optimizer": self.optimizer}

    def distribution(self, obs: torch.Tensor) -> torch.distributions.Distribution:
        return self.policy(obs)[0]

    # --- training --------------------------------------------------------------------------------------------

    def update(self, obs: torch.Tensor, actions: torch.Tensor, returns: torch.Tensor,
               learning_rate: float) -> dict[str, float]:
        """
        One K-FAC step on a flattened batch.

        :param obs: (batch, *obs_shape)
        :param actions: the actions taken (batch,) or (batch, action_dim)
        :param returns: n-step returns (batch,)
        :param learning_rate: this step's learning rate
        :return: statistics of the loss
        """
        hp = self.hyperparams
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        self.optimizer.zero_grad()
        with self.optimizer.recordStats():
            distribution, values = self.policy(obs)
            # Fisher of p(a, v|s): log-likelihood of outputs sampled from the model itself, averaged over the batch.
            sampled_actions = distribution.sample()
            sampled_values = (values + torch.randn_like(values)).detach()
            fisher_loss = (-distribution.log_prob(sampled_actions).mean()
                           + hp["vf_fisher_coef"] * ((values - sampled_values) ** 2).mean())
            fisher_loss.backward(retain_graph=True)
        self.optimizer.zero_grad()
        advantages = returns - values.detach()
        pg_loss = -(advantages * distribution.log_prob(actions)).mean()
        vf_loss = F.mse_loss(values, returns)
        entropy = distribution.entropy().mean()
        loss = pg_loss - hp["ent_coef"] * entropy + hp["vf_coef"] * vf_loss
        loss.backward()
        nn.utils.clip_grad_norm_(self.policy.parameters(), hp["max_grad_norm"])
        self.optimizer.step()
        return {"pg_loss": pg_loss.item(), "vf_loss": vf_loss.item(), "entropy": entropy.item(),
                "kl_scale": float(self.optimizer.last_kl_scale)}

    def budgetChunk(self) -> int:
        """:return: a rollout (``n_steps`` per env): it trains whole ones"""
        return int(self.hyperparams["n_steps"]) * int(self.env.num_envs)

    def learn(self, total_timesteps: int, callback: TrainCallback) -> None:
        env, hp = self.env, self.hyperparams
        n_envs, n_steps, gamma = env.num_envs, int(hp["n_steps"]), float(hp["gamma"])
        obs_space = env.observation_space
        continuous = isinstance(self.action_space, gym.spaces.Box)
        action_shape = self.action_space.shape if continuous else ()
        start, target = self.scheduleStart(), self.num_timesteps + total_timesteps  # a resumed run goes on
        obs = env.reset()
        keep_going = True
        while keep_going and self.num_timesteps < target:
            learning_rate = self.learningRate(1.0 - (self.num_timesteps - start) / max(target - start, 1))
            batch_obs = np.zeros((n_steps, n_envs, *obs_space.shape), dtype=obs_space.dtype)
            batch_actions = np.zeros((n_steps, n_envs, *action_shape), dtype=np.float32 if continuous else np.int64)
            batch_rewards = np.zeros((n_steps, n_envs), dtype=np.float32)
            batch_dones = np.zeros((n_steps, n_envs), dtype=np.float32)
            for step in range(n_steps):
                batch_obs[step] = obs
                with torch.no_grad():
                    actions = self.policy(self.toTensor(obs))[0].sample().cpu().numpy()
                env_actions = np.clip(actions, self.action_space.low, self.action_space.high) if continuous else actions
                obs, rewards, dones, infos = env.step(env_actions)
                rewards = np.asarray(rewards, dtype=np.float32).copy()
                self.bootstrapTruncated(rewards, dones, infos, gamma)
                batch_actions[step], batch_rewards[step], batch_dones[step] = actions, rewards, dones
                self.num_timesteps += n_envs
                if callback(locals(), globals()) is False:
                    keep_going = False
                    break
            if not keep_going:
                break
            returns = discountedReturns(batch_rewards, batch_dones, self.stateValues(obs), gamma)
            stats = self.update(self.toTensor(batch_obs).reshape(n_steps * n_envs, *obs_space.shape),
                                self.toTensor(batch_actions).reshape(n_steps * n_envs, *action_shape),
                                self.toTensor(returns).reshape(-1), learning_rate)
            self.logStats(stats)
            self.cleanPoint(callback)  # between updates: an exact checkpoint
