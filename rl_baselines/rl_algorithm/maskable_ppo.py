"""maskable_ppo: PPO that never samples a masked action (sb3-contrib MaskablePPO), discrete actions only.

The env tells which actions are allowed (``action_masks()``, environments.srl_env); the run is refused on an env
without masks or with continuous actions (rl_baselines.runs.train_checks.validate). Training takes the masks from the
VecEnv (sb3-contrib's ``get_action_masks``: ``env_method("action_masks")``, which every wrapper of the env factory
passes through); everywhere else the agent acts (evaluation, replay, the dataset generator) the caller passes them
to :meth:`MaskablePPOModel.getAction` because the class says ``USES_ACTION_MASKS``.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch
from sb3_contrib import MaskablePPO

from rl_baselines.core.algo_types import ActionType
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject


class MaskablePPOModel(StableBaselinesRLObject):
    """MaskablePPO with ppo2's settings and search ranges (rollouts of 128 steps per env, 10 epochs, learning rate
    3e-4, entropy 0.01): the masked actions get probability 0 in the rollouts, the updates and the entropy."""

    SB3_CLASS = MaskablePPO
    NAME = "maskable_ppo"
    ACTION_TYPES = (ActionType.DISCRETE,)
    USES_ACTION_MASKS = True
    LOG_INTERVAL = PPO2Model.LOG_INTERVAL
    SAVE_INTERVAL = PPO2Model.SAVE_INTERVAL
    NORMALISED_ADVANTAGES = "every_minibatch"  # (sb3-contrib normalises a last minibatch of 1 sample too: NaN)
    # SmallCNN ran 1.29x faster on one thread than on two (1 env, 2 cores), NatureCNN level (0.97x); MediumCNN as
    # SmallCNN (ppo2's before its updates were sharded)
    EXTRACTOR_THREADS_HELP = {"small": False, "medium": False}
    # ppo2's, with SB3's unclipped value update from raw pixels too (ppo2's pixel default was measured for ppo2 only)
    HYPERPARAMS = {**PPO2Model.HYPERPARAMS,
                   "clip_range_vf": dataclasses.replace(PPO2Model.HYPERPARAMS["clip_range_vf"], pixel_default=None)}

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None, deterministic: bool = False,
                  action_masks: np.ndarray | None = None) -> np.ndarray:
        """
        :param observation: a batch of observations, one per env
        :param dones: unused (no recurrent state)
        :param deterministic: the most likely allowed action
        :param action_masks: (n_envs, n_actions) bools, True where allowed; None: every action allowed
        :return: a batch of actions, never a masked one
        """
        action, _ = self.model.predict(observation, deterministic=deterministic, action_masks=action_masks)
        return action

    def getActionProba(self, observation: np.ndarray, dones: np.ndarray | None = None,
                       action_masks: np.ndarray | None = None) -> np.ndarray:
        """:return: the action probabilities, 0 for the masked actions when ``action_masks`` is given"""
        policy = self.inferencePolicy()
        obs_tensor, _ = policy.obs_to_tensor(observation)
        with torch.no_grad():
            distribution = policy.get_distribution(obs_tensor, action_masks=action_masks).distribution
        return distribution.probs.cpu().numpy()
