"""The RL side of a learned state representation: every env's camera image becomes a state before the agent sees it.

The envs return pixels when asked for a learned SRL model (environments.srl_env.isLearnedSRLModel). Where the
encoding runs:

- in the main process, :class:`SRLEncoderVecEnv` right above the raw VecEnv encodes the images of all envs in one
  batch, one ``getState`` call per vectorised step, and the terminal observations of the envs that just finished in
  a second call, so that the agent bootstraps from encoded states too. This is the way for one env (no worker
  process), for an encoder on a GPU and for frames cheaper to draw than to encode (the sprites);
- in the SubprocVecEnv workers, on the CPU: each worker's :class:`WorkerEncoder` (one torch thread) encodes its own
  env's images, so the encoding of the envs runs in parallel on every core and only states cross the pipes;
  :class:`EncodedInWorkers` above the raw VecEnv loads the model there and gives the VecEnv the state space. Where
  such envs step in this process instead (``--vec-env dummy``, or a sweep whose runs have one core each),
  :class:`SRLEncoderVecEnv` encodes their images one by one, in batches of one image as the workers do, so that where
  the envs step does not change a float (at one torch thread, a worker's).

``rl_baselines.envs.factory.encodeInWorkers`` chooses, by the number of envs, the device and the renderer.

Both give the same states for the same images (the model's ``getState``, batch size aside). Invariant: the agent's
observations are always encoded in batches of the same shape, one row per env in env order (a reset's and a step's
alike; the terminal observations never share their batch): a float matmul's last bits depend on the batch's size, so
a state encoded beside a varying number of terminal images would differ from the same image encoded at a reset, and
a run resumed at a checkpoint between two episodes would not be the uninterrupted one. Frame stacking and the
running mean/std normalisation (VecNormalize, saved beside every checkpoint) come after them.

The encoder is frozen: loaded on the run's ``--device`` (the agent's), in eval mode, with no gradient, its
convolutions in channels-last memory order on the CPU (the layout of the env's H x W x C images).
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from srl_models.base import BaseSRLModel
from srl_models.registry import freezeModel, loadSRLModel


def encoderDevice() -> str:
    """:return: "cuda" when a GPU is available, else "cpu" """

    return "cuda" if torch.cuda.is_available() else "cpu"


def loadEncoder(folder: str, device: str | None = None) -> BaseSRLModel:
    """
    :param folder: a trained model folder
    :param device: torch device, None for :func:`encoderDevice`
    :return: the frozen model
    :raises ValueError: missing, foreign or corrupt folder (one line)
    """

    return freezeModel(loadSRLModel(folder, device=device or encoderDevice()))


def encodeImages(model: BaseSRLModel, images: np.ndarray) -> np.ndarray:
    """
    :param model: a frozen SRL model
    :param images: uint8 (n, H, W, C)
    :return: float32 (n, state_dim), computed in inference mode
    """

    with torch.inference_mode():
        states = model.getState(np.asarray(images))
    return np.asarray(states, dtype=np.float32).reshape(len(images), model.state_dim)


def stateSpace(image_space: gym.Space, model: BaseSRLModel) -> spaces.Box:
    """
    :param image_space: the env's observation space
    :param model: the SRL model
    :return: the space of the states it gives
    :raises ValueError: the env's images do not have the model's shape
    """

    channels, height, width = model.img_shape
    image_shape = tuple(image_space.shape or ())
    if image_shape != (height, width, channels):
        raise ValueError(f"the SRL model encodes {channels}x{height}x{width} images, the env gives observations "
                         f"of shape {image_shape}")
    return spaces.Box(-np.inf, np.inf, (model.state_dim,), dtype=np.float32)


class SRLEncoderVecEnv(VecEnvWrapper):
    """
    Encode the image observations of a VecEnv with a trained SRL model, in this process.

    :param venv: a VecEnv whose observations are uint8 images (n, H, W, C) at the model's image shape
    :param model: the (frozen) SRL model
    :param one_by_one: encode each image alone, as :class:`WorkerEncoder` does in a worker (the same floats as
        :class:`EncodedInWorkers`); False: the images of a step in one batch
    :raises ValueError: the env's images do not have the model's shape
    """

    def __init__(self, venv: VecEnv, model: BaseSRLModel, one_by_one: bool = False) -> None:
        super().__init__(venv, observation_space=stateSpace(venv.observation_space, model))
        self.model = model
        self.one_by_one = one_by_one

    def encode(self, images: np.ndarray) -> np.ndarray:
        """
        :param images: uint8 (n, H, W, C), n >= 1
        :return: float32 (n, state_dim)
        """

        if self.one_by_one:
            return np.concatenate([encodeImages(self.model, image[None]) for image in images])
        return encodeImages(self.model, images)

    def reset(self) -> np.ndarray:
        return self.encode(self.venv.reset())

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        observations, rewards, dones, infos = self.venv.step_wait()
        # The new observations alone, in the batch shape of a reset (see the module's invariant), then the last
        # observation of every episode that just ended.
        states = self.encode(observations)
        finished = [index for index, info in enumerate(infos) if info.get("terminal_observation") is not None]
        if finished:
            terminal = self.encode(np.stack([infos[index]["terminal_observation"] for index in finished]))
            for offset, index in enumerate(finished):
                infos[index]["terminal_observation"] = terminal[offset]
        return states, rewards, dones, infos


class WorkerEncoder(gym.ObservationWrapper):
    """
    Where an env worker encodes its own env's images: they pass through unchanged until :meth:`startEncoding` loads
    the model in the worker (called by :class:`EncodedInWorkers` through ``env_method``).

    :param env: the env (image observations)
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.model: BaseSRLModel | None = None

    def startEncoding(self, folder: str) -> None:
        """
        :param folder: the trained model, loaded on the CPU with one torch thread (one per worker)
        """

        torch.set_num_threads(1)
        self.model = loadEncoder(folder, device="cpu")
        self.observation_space = stateSpace(self.env.observation_space, self.model)

    def observation(self, observation: Any) -> Any:
        if self.model is None:
            return observation
        return encodeImages(self.model, np.asarray(observation)[None])[0]


class EncodedInWorkers(VecEnvWrapper):
    """
    A SubprocVecEnv whose envs are wrapped in :class:`WorkerEncoder`: the model is checked here and loaded in every
    worker, and the observations that come back (terminal observations included) are states.

    :param venv: the raw VecEnv (image observations)
    :param model: the frozen SRL model, loaded in this process from ``folder`` (its shape is checked against the env)
    :param folder: the model's folder
    :raises ValueError: the env's images do not have the model's shape
    """

    def __init__(self, venv: VecEnv, model: BaseSRLModel, folder: str) -> None:
        state_space = stateSpace(venv.observation_space, model)
        venv.env_method("startEncoding", folder)
        super().__init__(venv, observation_space=state_space)
        self.model = model

    def reset(self) -> np.ndarray:
        return self.venv.reset()

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        return self.venv.step_wait()
