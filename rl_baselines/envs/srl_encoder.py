"""The RL side of a learned state representation: a VecEnv wrapper that turns every env's camera image into a state.

The envs return pixels when asked for a learned SRL model (environments.srl_env.isLearnedSRLModel). This wrapper
sits right above the raw VecEnv, in the main process (SubprocVecEnv workers only render), and encodes the images of
all envs in one batch, one ``getState`` call per vectorised step: the new observations and the terminal
observations of the envs that just finished, together, so that the agent bootstraps from encoded states too. Frame
stacking and the running mean/std normalisation (VecNormalize, saved beside every checkpoint) come after it.

The encoder is frozen: loaded on the run's ``--device`` (the agent's), in eval mode, with no gradient.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from srl_models.base import BaseSRLModel
from srl_models.registry import loadSRLModel


def encoderDevice() -> str:
    """:return: "cuda" when a GPU is available, else "cpu" """

    return "cuda" if torch.cuda.is_available() else "cpu"


def freezeModel(model: BaseSRLModel) -> BaseSRLModel:
    """
    Put the torch modules a model holds in eval mode and stop their gradients (dropout, batch-norm statistics and
    weights all stay as trained).

    :param model: a loaded SRL model
    :return: the same model
    """

    for value in vars(model).values():
        if isinstance(value, torch.nn.Module):
            value.eval()
            value.requires_grad_(False)
    return model


def loadEncoder(folder: str, device: str | None = None) -> BaseSRLModel:
    """
    :param folder: a trained model folder
    :param device: torch device, None for :func:`encoderDevice`
    :return: the frozen model
    :raises ValueError: missing, foreign or corrupt folder (one line)
    """

    return freezeModel(loadSRLModel(folder, device=device or encoderDevice()))


class SRLEncoderVecEnv(VecEnvWrapper):
    """
    Encode the image observations of a VecEnv with a trained SRL model.

    :param venv: a VecEnv whose observations are uint8 images (n, H, W, C) at the model's image shape
    :param model: the (frozen) SRL model
    :raises ValueError: the env's images do not have the model's shape
    """

    def __init__(self, venv: VecEnv, model: BaseSRLModel) -> None:
        channels, height, width = model.img_shape
        image_shape = tuple(venv.observation_space.shape or ())
        if image_shape != (height, width, channels):
            raise ValueError(f"the SRL model encodes {channels}x{height}x{width} images, the env gives observations "
                             f"of shape {image_shape}")
        state_space = spaces.Box(-np.inf, np.inf, (model.state_dim,), dtype=np.float32)
        super().__init__(venv, observation_space=state_space)
        self.model = model

    def encode(self, images: np.ndarray) -> np.ndarray:
        """
        :param images: uint8 (n, H, W, C)
        :return: float32 (n, state_dim), computed without gradient
        """

        with torch.no_grad():
            states = self.model.getState(np.asarray(images))
        return np.asarray(states, dtype=np.float32).reshape(len(images), self.model.state_dim)

    def reset(self) -> np.ndarray:
        return self.encode(self.venv.reset())

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        observations, rewards, dones, infos = self.venv.step_wait()
        finished = [index for index, info in enumerate(infos) if info.get("terminal_observation") is not None]
        # One batch: the new observations, then the last observation of every episode that just ended.
        batch = np.concatenate([observations, *[infos[index]["terminal_observation"][None] for index in finished]])
        states = self.encode(batch)
        for offset, index in enumerate(finished):
            infos[index]["terminal_observation"] = states[self.num_envs + offset]
        return states[:self.num_envs], rewards, dones, infos
