"""GAIL's parts: the expert transitions, the discriminator, the reward wrapper and the per-rollout update.

- :class:`ExpertData`: the (observation, action) pairs of a dataset recorded with ``python -m
  environments.dataset_generator --policy RUN``, brought to the format of the learner's own observations before its
  normaliser: ground-truth states made relative to the episode's target exactly as the run's env does
  (``relative_pos``), frames read from lossless (png) files at the run's image size, encoded by the run's own SRL
  encoder for a learned ``--srl-model``. The low-dimensional ones go through the run's VecNormalize (its current
  statistics, which a new run starts from the expert's states: :func:`seedNormalisation`) at every discriminator
  update, as the agent's observations went through it when they were collected;
  images are scaled by 1/255 for both. The discriminator thus cannot tell expert from agent by format.
- :class:`Discriminator`: D(s, a), the logit of "this transition is the expert's"; an MLP over the state (or a small
  CNN over channel-first images) concatenated with the action (one-hot for discrete actions, scaled to [-1, 1] within
  the action space's bounds for continuous ones, the agent's clipped as the env receives them).
- :class:`GAILRewardVecEnv`: the top of the learner's VecEnv. It passes observations and episode ends through and
  replaces every reward by the discriminator's reward of the observation acted on and the action taken:
  ``-log(1 - D)`` (Stable Baselines 2's, positive) or ``log D - log(1 - D)`` (``airl``). The env's reward never
  reaches the learner; the Monitor below it still records it, so the learning curves show the env's reward.
- :class:`DiscriminatorUpdate`: an SB3 callback that, at the end of every rollout (after the learner's advantages,
  before its update), trains the discriminator on the rollout's transitions against as many expert ones: binary
  cross-entropy minus an entropy bonus, ``d_epochs`` passes in minibatches of ``d_batch_size``.

Invariants: the discriminator is initialised from its own seeded generator inside a forked torch RNG and samples
its minibatches with its own ``torch.Generator``, so it changes none of the run's random streams; its weights,
optimiser and generator state (:meth:`Discriminator.stateDict`) are saved inside the model zip, so that a checkpoint
resumes exactly and a continued model keeps its discriminator.
"""
from __future__ import annotations

import io
import os
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from torch import nn
from torch.nn import functional

from environments.dataset import Dataset
from environments.srl_env import isLearnedSRLModel
from rl_baselines.envs.factory import findVecNormalize, runActionSpace
from rl_baselines.envs.srl_encoder import EncodedInWorkers, SRLEncoderVecEnv, encodeImages
from rl_baselines.rl_algorithm.image_features import SmallCNN
from rl_baselines.rl_algorithm.torch_base import isImageSpace
from srl_toolbox.optimizers import multiTensorSteps

REWARD_KINDS = ("gail", "airl")
# Observation modes an expert dataset can be brought to (learned SRL models too: encoded from its frames).
STATE_MODES = ("ground_truth",)
PIXEL_MODES = ("raw_pixels",)
LOSSLESS_FORMATS = ("png",)
DEFAULT_IMG_SHAPE = (3, 64, 64)


def channelFirst(images: np.ndarray) -> np.ndarray:
    """:param images: (n, H, W, C)
    :return: (n, C, H, W), contiguous"""
    return np.ascontiguousarray(np.transpose(images, (0, 3, 1, 2)))


def checkExpertDataset(path: str, settings: Any, action_space: gym.Space | None = None) -> Dataset:
    """
    Check that a dataset can be the expert of this run (before anything is written).

    :param path: the dataset folder (``--gail-dataset``)
    :param settings: the run's settings (env, continuous_actions, action_joints, srl_model, img_shape, renderer,
        num_stack, fpv, multi_view), read as attributes
    :param action_space: the run's action space; None to build one env for it
    :return: the opened dataset
    :raises ValueError: one line naming the problem
    """
    dataset = Dataset.open(path)
    dataset.require("actions", "episode_starts", purpose="gail")
    if dataset.env_id != settings.env:
        raise ValueError(f"{path!r} was recorded on {dataset.env_id}, not on --env {settings.env}")
    if len(dataset["actions"]) != len(dataset) or len(dataset) < 2:
        raise ValueError(f"{path!r} has {len(dataset['actions'])} actions for {len(dataset)} rows (need at least 2)")
    if settings.num_stack > 1:
        raise ValueError(f"--num-stack {settings.num_stack} is not available with --algo gail (the dataset holds "
                         "single frames); valid: 1")
    dataset.checkActions(bool(settings.continuous_actions), bool(getattr(settings, "action_joints", False)),
                         runActionSpace(settings) if action_space is None else action_space,
                         force_down=bool(getattr(settings, "force_down", False)))
    if settings.srl_model in STATE_MODES:
        dataset.require("ground_truth_states", "target_positions", purpose="gail with ground_truth")
        dataset.checkStates()
        return dataset
    pixels = settings.srl_model in PIXEL_MODES or isLearnedSRLModel(settings.srl_model)
    if not pixels:
        raise ValueError(f"cannot rebuild {settings.srl_model!r} observations from a dataset; --algo gail takes "
                         "--srl-model ground_truth, raw_pixels or a learned SRL model")
    if settings.fpv or settings.multi_view or dataset.config.get("multi_view"):
        raise ValueError("--algo gail does not take two-camera (--fpv/--multi-view) frames")
    dataset.require("images_path", purpose=f"gail with {settings.srl_model}")
    image_format = dataset.config.get("image_format", "jpg")
    if image_format not in LOSSLESS_FORMATS:
        raise ValueError(f"{path!r} stores its frames as {image_format} (lossy: the discriminator would tell them "
                         "from the env's); record it with --image-format png")
    wanted = tuple(settings.img_shape) if settings.img_shape else DEFAULT_IMG_SHAPE
    if tuple(dataset.img_shape) != wanted:
        raise ValueError(f"{path!r} holds {'x'.join(map(str, dataset.img_shape))} frames, the run's are "
                         f"{'x'.join(map(str, wanted))} (--img-shape)")
    if dataset.renderer != settings.renderer:
        raise ValueError(f"{path!r} was drawn by --renderer {dataset.renderer}, the run's is {settings.renderer}")
    for stem in (dataset["images_path"][0], dataset["images_path"][-1]):
        if not os.path.isfile(dataset.imageFile(str(stem))):
            raise ValueError(f"{path!r} lacks its frames ({dataset.imageFile(str(stem))})")
    return dataset


def findEncoder(venv: VecEnv) -> Any:
    """:return: the SRL encoder in the chain of ``venv`` (its ``model``), None for the env's own observations"""
    while venv is not None:
        if isinstance(venv, (SRLEncoderVecEnv, EncodedInWorkers)):
            return venv.model
        venv = getattr(venv, "venv", None)
    return None


class ExpertData:
    """
    The expert's transitions, as the learner's observations are before its normaliser.

    :param observations: (N, ...) float32 states, or uint8 (N, C, H, W) images
    :param actions: (N,) int64 discrete or (N, action_dim) float32 continuous actions
    """

    def __init__(self, observations: np.ndarray, actions: np.ndarray) -> None:
        self.observations = observations
        self.actions = actions

    @classmethod
    def load(cls, path: str, venv: VecEnv, srl_model: str) -> ExpertData:
        """
        :param path: the dataset folder (checked by :func:`checkExpertDataset`)
        :param venv: the run's VecEnv (its envs' ``relative_pos``, its encoder, its spaces)
        :param srl_model: the run's observation mode
        :return: the expert's transitions
        :raises ValueError: they do not have the env's shapes (one line)
        """
        dataset = Dataset.open(path)
        actions = dataset["actions"]
        actions = actions.astype(np.int64).reshape(-1) if isinstance(venv.action_space, gym.spaces.Discrete) \
            else actions.astype(np.float32).reshape(len(actions), -1)
        encoder = findEncoder(venv)
        if srl_model in STATE_MODES:
            observations = dataset.states(relative=bool(venv.get_attr("relative_pos", indices=[0])[0]))
        elif encoder is not None:
            observations = encodeImages(encoder, dataset.loadImages())
        else:
            observations = dataset.loadImages()  # (N, H, W, C) as the env gives them, made channel-first below
        if tuple(observations.shape[1:]) != tuple(venv.observation_space.shape):
            raise ValueError(f"--gail-dataset {path}: expert observations of shape {tuple(observations.shape[1:])}, "
                             f"the run's {tuple(venv.observation_space.shape)}")
        if isImageSpace(venv.observation_space):
            observations = channelFirst(observations)
        if actions.ndim == 2 and actions.shape[1:] != venv.action_space.shape:
            raise ValueError(f"--gail-dataset {path}: expert actions of shape {actions.shape[1:]}, the run's "
                             f"{venv.action_space.shape}")
        return cls(observations, actions)


def seedNormalisation(venv: VecEnv, expert: ExpertData) -> None:
    """
    Start the running statistics of the run's VecNormalize (low-dimensional observations) from the expert's states,
    as behaviour cloning does: the first observations are then normalised on a known scale rather than on the
    statistics of a few steps, which would throw the expert's states to the clipping bounds. They keep adapting.

    :param venv: the new run's VecEnv
    :param expert: the expert's transitions
    """
    vec_normalize = findVecNormalize(venv)
    if vec_normalize is None or isinstance(vec_normalize.obs_rms, dict) or expert.observations.dtype == np.uint8:
        return
    vec_normalize.obs_rms.mean = expert.observations.mean(axis=0).astype(np.float64)
    vec_normalize.obs_rms.var = expert.observations.var(axis=0).astype(np.float64)
    vec_normalize.obs_rms.count = float(len(expert.observations))


def encodeActions(actions: np.ndarray | torch.Tensor, action_space: gym.Space) -> torch.Tensor:
    """
    :param actions: a batch of actions: discrete indices, or continuous actions (clipped to the space here)
    :param action_space: the env's action space
    :return: float32 (n, n_actions) one-hot rows, or (n, action_dim) actions scaled to [-1, 1]
    """
    actions = torch.as_tensor(np.asarray(actions) if not isinstance(actions, torch.Tensor) else actions)
    if isinstance(action_space, gym.spaces.Discrete):
        return functional.one_hot(actions.long().reshape(-1), int(action_space.n)).float()
    low = torch.as_tensor(action_space.low, dtype=torch.float32)
    high = torch.as_tensor(action_space.high, dtype=torch.float32)
    clipped = torch.clamp(actions.float().reshape(len(actions), -1), low, high)
    return 2.0 * (clipped - low) / (high - low) - 1.0


class Discriminator(nn.Module):
    """
    D(s, a): the logit of "expert transition".

    :param observation_space: the env's observation space (channel-last images, or states)
    :param action_space: the env's action space
    :param hidden: units of the two tanh layers (and CNN features for images)
    :param learning_rate: Adam learning rate
    :param seed: seed of the initial weights and of the minibatch generator
    :param device: torch device
    """

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, hidden: int, learning_rate: float,
                 seed: int, device: str | torch.device = "cpu") -> None:
        super().__init__()
        self.action_space = action_space
        self.images = isImageSpace(observation_space)
        action_dim = int(action_space.n) if isinstance(action_space, gym.spaces.Discrete) \
            else int(np.prod(action_space.shape))
        with torch.random.fork_rng(devices=[]):  # the run's generators are left as they are
            torch.manual_seed(seed)
            if self.images:
                height, width, channels = observation_space.shape
                self.features: nn.Module = SmallCNN(gym.spaces.Box(0, 255, (channels, height, width), np.uint8),
                                                    features_dim=hidden)
                features_dim = hidden
            else:
                self.features = nn.Flatten()
                features_dim = int(np.prod(observation_space.shape))
            self.head = nn.Sequential(nn.Linear(features_dim + action_dim, hidden), nn.Tanh(),
                                      nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.device = torch.device(device)
        self.to(self.device)
        self.optimizer = torch.optim.Adam(self.parameters(), lr=learning_rate)
        multiTensorSteps([self.optimizer])
        self.generator = torch.Generator().manual_seed(int(seed))

    def forward(self, observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """
        :param observations: (n, ...) float states, or (n, C, H, W) images with values 0..255
        :param actions: (n, k) from :func:`encodeActions`
        :return: (n,) logits
        """
        observations = observations.float() / 255.0 if self.images else observations.float()
        return self.head(torch.cat([self.features(observations), actions], dim=1)).squeeze(1)

    def logits(self, observations: np.ndarray, actions: np.ndarray) -> torch.Tensor:
        """:return: the logits of numpy batches (images channel-first), without gradient"""
        with torch.no_grad():
            return self(torch.as_tensor(observations, device=self.device),
                        encodeActions(actions, self.action_space).to(self.device)).cpu()

    def stateDict(self) -> dict[str, Any]:
        """:return: weights, optimiser state and minibatch generator state (tensors and numbers only)"""
        return {"weights": self.state_dict(), "optimizer": self.optimizer.state_dict(),
                "generator": self.generator.get_state()}

    def loadStateDict(self, state: dict[str, Any]) -> None:
        """:param state: from :meth:`stateDict`"""
        self.load_state_dict(state["weights"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])

    def toBytes(self) -> bytes:
        """:return: :meth:`stateDict` as torch.save bytes"""
        buffer = io.BytesIO()
        torch.save(self.stateDict(), buffer)
        return buffer.getvalue()

    def loadBytes(self, data: bytes) -> None:
        """:param data: from :meth:`toBytes` (read with weights_only=True: no pickle of objects)"""
        self.loadStateDict(torch.load(io.BytesIO(data), map_location=self.device, weights_only=True))


def gailReward(logits: torch.Tensor, kind: str) -> np.ndarray:
    """
    :param logits: D's logits
    :param kind: "gail" for -log(1 - D) = softplus(logit), "airl" for log D - log(1 - D) = logit
    :return: float32 rewards
    """
    return (functional.softplus(logits) if kind == "gail" else logits).numpy().astype(np.float32)


class GAILRewardVecEnv(VecEnvWrapper):
    """
    Replace the env's reward by the discriminator's reward of (observation acted on, action taken).

    :param venv: the learner's VecEnv (normalised, encoded... as the learner sees it)
    :param discriminator: D
    :param reward_kind: one of :data:`REWARD_KINDS`
    """

    def __init__(self, venv: VecEnv, discriminator: Discriminator, reward_kind: str) -> None:
        super().__init__(venv)
        self.discriminator = discriminator
        self.reward_kind = reward_kind
        self.images = isImageSpace(venv.observation_space)
        self.last_observations: np.ndarray | None = None
        self.actions: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        self.last_observations = self.venv.reset()
        return self.last_observations

    def step_async(self, actions: np.ndarray) -> None:
        self.actions = np.asarray(actions)
        self.venv.step_async(actions)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        observations, _, dones, infos = self.venv.step_wait()  # the env's reward is dropped here
        acted_on = channelFirst(self.last_observations) if self.images else self.last_observations
        rewards = gailReward(self.discriminator.logits(acted_on, self.actions), self.reward_kind)
        self.last_observations = observations
        return observations, rewards, dones, infos


class DiscriminatorUpdate(BaseCallback):
    """
    Train the discriminator on each rollout of an on-policy learner against expert transitions.

    :param discriminator: D
    :param expert: the expert's transitions (before normalisation)
    :param env: the learner's VecEnv (its VecNormalize normalises the expert's states)
    :param epochs: passes over the rollout per update
    :param batch_size: agent transitions per minibatch (each with as many expert ones)
    :param entcoeff: weight of the entropy bonus of D's predictions
    """

    def __init__(self, discriminator: Discriminator, expert: ExpertData, env: VecEnv, epochs: int, batch_size: int,
                 entcoeff: float) -> None:
        super().__init__()
        self.discriminator = discriminator
        self.expert = expert
        self.vec_normalize = findVecNormalize(env)
        self.epochs = epochs
        self.batch_size = batch_size
        self.entcoeff = entcoeff

    def _on_step(self) -> bool:
        return True

    def expertBatch(self, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """:return: ``size`` expert transitions drawn uniformly (the discriminator's generator), normalised as the
            agent's observations are now"""
        disc = self.discriminator
        index = torch.randint(len(self.expert.actions), (size,), generator=disc.generator).numpy()
        observations = self.expert.observations[index]
        if self.vec_normalize is not None:
            observations = self.vec_normalize.normalize_obs(observations).astype(np.float32)
        return (torch.as_tensor(observations, device=disc.device),
                encodeActions(self.expert.actions[index], disc.action_space).to(disc.device))

    def _on_rollout_end(self) -> None:
        disc = self.discriminator
        buffer = self.model.rollout_buffer
        observations = buffer.observations.reshape(-1, *buffer.obs_shape)
        actions = buffer.actions.reshape(len(observations), -1)
        losses, expert_right, agent_right = [], [], []
        disc.train()
        for _ in range(self.epochs):
            order = torch.randperm(len(observations), generator=disc.generator).numpy()
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                agent_obs = torch.as_tensor(observations[batch], device=disc.device)
                agent_logits = disc(agent_obs, encodeActions(actions[batch], disc.action_space).to(disc.device))
                expert_logits = disc(*self.expertBatch(len(batch)))
                logits = torch.cat([expert_logits, agent_logits])
                entropy = (functional.softplus(logits) - logits * torch.sigmoid(logits)).mean()
                loss = (functional.binary_cross_entropy_with_logits(expert_logits, torch.ones_like(expert_logits))
                        + functional.binary_cross_entropy_with_logits(agent_logits, torch.zeros_like(agent_logits))
                        - self.entcoeff * entropy)
                disc.optimizer.zero_grad()
                loss.backward()
                disc.optimizer.step()
                losses.append(loss.item())
                expert_right.append((expert_logits > 0).float().mean().item())
                agent_right.append((agent_logits < 0).float().mean().item())
        disc.eval()
        self.logger.record("gail/discriminator_loss", float(np.mean(losses)))
        self.logger.record("gail/expert_accuracy", float(np.mean(expert_right)))
        self.logger.record("gail/agent_accuracy", float(np.mean(agent_right)))
