"""Augmented views of the image observations an SB3 update learns from (``--augment``, end-to-end pixel RL).

The augmentation is applied where the update reads its batch, not where the agent collects: the agent acts on the
images as the env rendered them, the buffers store those, and every batch taken out of a buffer for an update is
augmented on its way to the loss.

- :class:`AugmentedRolloutBuffer` (ppo2; RAD, Laskin et al. 2020, and DrAC's baseline, Raileanu et al. 2021): each
  minibatch of PPO's update yields augmented observations, so that the policy loss and the value loss both see the
  augmented views (the old log-probabilities, values, advantages and returns are those of collection);
- :class:`AugmentedReplayBuffer` (the replay-buffer algorithms; DrQ, Kostrikov et al. 2021, with one augmentation
  per view as DrQ-v2): each sample's observations (the online view: critic and actor losses) and next observations
  (the target view: the bootstrapped target) are augmented independently, each image by its own offset.

Invariants: the stored arrays are never written by an augmentation (each view is a new tensor); the observations
are channel-first images (SB3 transposes HWC frames with VecTransposeImage before anything is stored), of the
observation space's dtype (uint8 here: shifted as floats and cast back, exactly, since a shift only moves pixels);
the offsets are drawn from torch's global generator of the batch's device, which SB3 seeds with the run's seed (a
run on the CPU is the same for a seed) and a checkpoint saves with the other global generators (a GPU's too).
``none`` leaves a buffer as SB3's own: the algorithms then get SB3's buffer class itself.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer, RolloutBuffer
from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first
from stable_baselines3.common.type_aliases import ReplayBufferSamples, RolloutBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from srl_models.augment import AUGMENTATIONS, Augmentation


def checkAugmentable(observation_space: spaces.Space, augment: str) -> Augmentation:
    """
    :param observation_space: the observations a buffer stores
    :param augment: an augmentation name (srl_models.augment.AUGMENTATIONS)
    :return: the augmentation
    :raises ValueError: an unknown name, or observations that are not channel-first images
    """
    if augment not in AUGMENTATIONS:
        raise ValueError(f"unknown augmentation {augment!r}; valid choices: {', '.join(AUGMENTATIONS)}")
    if not (isinstance(observation_space, spaces.Box) and is_image_space(observation_space, check_channels=False)
            and is_image_space_channels_first(observation_space)):
        raise ValueError(f"augmentation {augment!r} needs channel-first image observations, not {observation_space}")
    return AUGMENTATIONS[augment]


def augmentImages(images: torch.Tensor, augmentation: Augmentation) -> torch.Tensor:
    """
    :param images: a batch of channel-first images (B, C, H, W), of any dtype
    :param augmentation: what to apply (each image its own random draw)
    :return: a new tensor of the same shape and dtype: the augmented views
    """
    if images.is_floating_point():
        return augmentation(images, None)
    return augmentation(images.float(), None).to(images.dtype)


class AugmentedRolloutBuffer(RolloutBuffer):
    """
    SB3's RolloutBuffer whose minibatches (``get``) hold augmented observations; the stored rollout stays as
    collected.

    :param buffer_size: steps per env in a rollout
    :param observation_space: channel-first images
    :param action_space: the actions
    :param augment: the augmentation's name (srl_models.augment.AUGMENTATIONS)
    :param kwargs: RolloutBuffer's other keywords (device, gae_lambda, gamma, n_envs)
    """

    # The SB3 constructor keywords that select this class: <MODEL_KEYWORD>_class and <MODEL_KEYWORD>_kwargs.
    MODEL_KEYWORD: ClassVar[str] = "rollout_buffer"

    def __init__(self, buffer_size: int, observation_space: spaces.Space, action_space: spaces.Space,
                 augment: str = "shift", **kwargs: Any) -> None:
        self.augmentation = checkAugmentable(observation_space, augment)
        super().__init__(buffer_size, observation_space, action_space, **kwargs)

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> RolloutBufferSamples:
        samples = super()._get_samples(batch_inds, env)
        return samples._replace(observations=augmentImages(samples.observations, self.augmentation))


class AugmentedReplayBuffer(ReplayBuffer):
    """
    SB3's ReplayBuffer whose samples hold augmented observations and next observations, each drawn on its own; the
    stored transitions stay as collected.

    :param buffer_size: transitions kept
    :param observation_space: channel-first images
    :param action_space: the actions
    :param augment: the augmentation's name (srl_models.augment.AUGMENTATIONS)
    :param kwargs: ReplayBuffer's other keywords (device, n_envs, optimize_memory_usage,
        handle_timeout_termination)
    """

    MODEL_KEYWORD: ClassVar[str] = "replay_buffer"

    def __init__(self, buffer_size: int, observation_space: spaces.Space, action_space: spaces.Space,
                 augment: str = "shift", **kwargs: Any) -> None:
        self.augmentation = checkAugmentable(observation_space, augment)
        super().__init__(buffer_size, observation_space, action_space, **kwargs)

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> ReplayBufferSamples:
        samples = super()._get_samples(batch_inds, env)
        return samples._replace(observations=augmentImages(samples.observations, self.augmentation),
                                next_observations=augmentImages(samples.next_observations, self.augmentation))


AugmentedBuffer = type[AugmentedRolloutBuffer] | type[AugmentedReplayBuffer]


def bufferKeywords(buffer_class: AugmentedBuffer, augment: str) -> dict[str, Any]:
    """
    :param buffer_class: the algorithm's augmented buffer class
    :param augment: the run's ``--augment``
    :return: the SB3 constructor keywords (also the ``custom_objects`` of a continued model) that give the algorithm
        that buffer with ``augment``, or SB3's own choice of buffer (class None, no keywords) for ``none``
    """
    keyword = buffer_class.MODEL_KEYWORD
    if augment == "none":
        return {f"{keyword}_class": None, f"{keyword}_kwargs": {}}
    return {f"{keyword}_class": buffer_class, f"{keyword}_kwargs": {"augment": augment}}
