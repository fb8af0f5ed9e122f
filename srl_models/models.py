"""The learned SRL models: one class, LearnedSRLModel (a convolutional encoder and the heads of its losses), and a thin
subclass per registered name that only says which losses the name trains by default.

The losses a model was actually trained with are in its exp_config.json, so a model trained under one name with
another combination (``--srl-model vae --losses vae:1 inverse:10``) is rebuilt exactly when loaded by that name.
"""
from __future__ import annotations

import os
import pickle
from typing import Any

import numpy as np
import torch

from srl_models.base import EXP_CONFIG_FILE, BaseSRLModel, readExpConfig
from srl_models.network import SRLNetwork
from srl_toolbox.files import atomicPath, torchLoadFailure, writeJson

WEIGHTS_FILE = "srl_model.pt"
ENCODE_BATCH = 256  # images per forward pass in getState: bounds memory on long inputs


def lossContext(exp_config: dict[str, Any]) -> dict[str, Any]:
    """
    :param exp_config: a model's settings
    :return: the keyword arguments of losses.LossContext they determine (all but the image and feature sizes)
    """
    if exp_config.get("reward_classes"):
        n_reward_classes = len(exp_config["reward_classes"])  # distinct reward values
    elif exp_config.get("reward_bins"):
        n_reward_classes = len(exp_config["reward_bins"]) + 1  # inner edges of the bins of shaped rewards
    else:
        n_reward_classes = None
    return {"continuous_actions": bool(exp_config.get("continuous_actions", False)),
            "n_actions": exp_config.get("n_actions"), "action_dim": exp_config.get("action_dim"),
            "n_reward_classes": n_reward_classes,
            "ground_truth_dim": exp_config.get("ground_truth_dim"), "beta": float(exp_config.get("beta", 1.0)),
            "foreground_weight": float(exp_config.get("foreground_weight", 0.0))}


def checkImages(observations: np.ndarray, img_shape: tuple[int, int, int]) -> np.ndarray:
    """
    :param observations: (n, H, W, C) images
    :param img_shape: (C, H, W) the model encodes
    :return: the images as a uint8 array (integer images within 0-255 are converted)
    :raises ValueError: another shape (one line, naming both), or not 0-255 integer pixel values (floats are refused,
        whatever their range: a [0, 1] image and a 0-255 one cannot be told apart from every frame)
    """
    images = np.asarray(observations)
    if images.dtype != np.uint8:
        if not np.issubdtype(images.dtype, np.integer) or images.dtype == np.bool_:
            raise ValueError(f"SRL models encode uint8 images (pixel values 0-255, as the envs return them), got dtype "
                             f"{images.dtype}; images in [0, 1]: (images * 255).round().astype(np.uint8)")
        if images.size and (images.min() < 0 or images.max() > 255):
            raise ValueError(f"SRL models encode uint8 images (pixel values 0-255), got {images.dtype} values from "
                             f"{images.min()} to {images.max()}")
        images = images.astype(np.uint8)
    channels, height, width = img_shape
    if images.ndim != 4 or images.shape[1:] != (height, width, channels):
        got = images.shape[1:] if images.ndim == 4 else images.shape
        raise ValueError(f"this SRL model encodes images of shape (H, W, C) = {(height, width, channels)}, got "
                         f"{tuple(got)}{'' if images.ndim == 4 else ' (expected a batch (n, H, W, C))'}")
    return images


class LearnedSRLModel(BaseSRLModel):
    """
    A convolutional encoder trained with a weighted sum of losses (see srl_models.losses).

    :param state_dim: size of the state
    :param img_shape: (C, H, W)
    :param exp_config: settings; "losses" (default DEFAULT_LOSSES), "split_dims" and the dataset's sizes
        ("n_actions"/"action_dim", "reward_classes"/"reward_bins", "ground_truth_dim") decide the heads
    :param device: torch device
    """

    NAME = ""                                # the registered name (exp_config "srl_model")
    DEFAULT_LOSSES: dict[str, float] = {}    # what ``--srl-model NAME`` alone trains
    DEFAULT_FOREGROUND_WEIGHT = 0.0          # --foreground-weight when not given (reconstruction losses only)
    TRAINABLE = True                         # False: saved as initialised (the random model)

    def __init__(self, state_dim: int, img_shape: tuple[int, int, int], exp_config: dict[str, Any] | None = None,
                 device: str = "cpu") -> None:
        super().__init__(state_dim, img_shape, exp_config)
        self.exp_config.setdefault("srl_model", self.NAME)
        self.exp_config.setdefault("losses", dict(self.DEFAULT_LOSSES))
        self.exp_config.update(state_dim=self.state_dim, img_shape=list(self.img_shape), model_type="cnn",
                               api_version=self.API_VERSION)
        self.device = torch.device(device)
        self.network = SRLNetwork(self.img_shape, self.state_dim, self.exp_config["losses"],
                                  self.exp_config.get("split_dims") or {}, lossContext(self.exp_config))
        self.network.to(self.device).eval()
        self.DECODES = self.network.decodes

    @classmethod
    def defaultSplit(cls, state_dim: int, losses: dict[str, float]) -> dict[str, int]:
        """
        :param state_dim: size of the state
        :param losses: the losses to train
        :return: the split dims used when none are given (default: no split)
        """
        return {}

    def _imagesTensor(self, images: np.ndarray) -> torch.Tensor:
        # uint8 crosses to the GPU, four times less than float32
        batch = torch.from_numpy(np.ascontiguousarray(images)).to(self.device)
        return batch.permute(0, 3, 1, 2).float().div_(255.0)

    def getState(self, observations: np.ndarray) -> np.ndarray:
        """
        :param observations: uint8 images (n, H, W, C) of the model's img_shape
        :return: float32 (n, state_dim)
        :raises ValueError: images of another shape
        """
        images = checkImages(observations, self.img_shape)
        states = np.empty((len(images), self.state_dim), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(images), ENCODE_BATCH):
                chunk = self._imagesTensor(images[start:start + ENCODE_BATCH])
                states[start:start + len(chunk)] = self.network.encode(chunk)[1].cpu().numpy()
        return states

    def decode(self, states: np.ndarray) -> np.ndarray:
        """
        :param states: float (n, state_dim)
        :return: uint8 (n, H, W, C)
        :raises NotImplementedError: none of the model's losses decodes
        """
        if not self.DECODES:
            return super().decode(states)
        states = np.asarray(states, dtype=np.float32).reshape(-1, self.state_dim)
        with torch.no_grad():
            images = self.network.decode(torch.from_numpy(states).to(self.device))
        return (images.permute(0, 2, 3, 1).cpu().numpy() * 255.0).round().astype(np.uint8)

    def save(self, folder: str) -> None:
        """
        :param folder: the model folder (created if needed); srl_model.pt first, exp_config.json last, each atomic
        """
        os.makedirs(folder, exist_ok=True)
        # through a file object: the zip's records are then named archive/..., not after the temporary file, so
        # two identical trainings write identical bytes
        with atomicPath(os.path.join(folder, WEIGHTS_FILE)) as tmp_path, open(tmp_path, "wb") as handle:
            torch.save(self.network.state_dict(), handle)
        self.exp_config["weights"] = [WEIGHTS_FILE]
        writeJson(os.path.join(folder, EXP_CONFIG_FILE), self.exp_config, sort_keys=False)

    @classmethod
    def load(cls, folder: str, device: str = "cpu") -> LearnedSRLModel:
        """
        :param folder: a folder written by save
        :param device: torch device
        :return: the model
        :raises ValueError: weights that do not fit the configuration, or unreadable (one line)
        """
        config = readExpConfig(folder)
        path = os.path.join(folder, WEIGHTS_FILE)
        try:
            model = cls(config["state_dim"], tuple(config["img_shape"]), config, device=device)
            model.network.load_state_dict(torch.load(path, map_location=model.device, weights_only=True))
        except (RuntimeError, OSError, KeyError, TypeError, ValueError, EOFError, pickle.UnpicklingError) as error:
            # a state_dict mismatch says what does not fit on its second line; an empty or foreign file says little
            lines = [line.strip() for line in str(error).strip().splitlines()]
            detail = torchLoadFailure(error) or " ".join(lines[:2] if lines and lines[0].endswith(":")
                                                         else lines[:1])[:300]
            raise ValueError(f"cannot load the SRL model in {folder!r}: {WEIGHTS_FILE}: "
                             f"{type(error).__name__}{': ' + detail if detail else ' (empty or cut short)'}") from None
        return model


class AutoEncoderModel(LearnedSRLModel):
    """Convolutional autoencoder."""

    NAME, DEFAULT_LOSSES, DECODES = "autoencoder", {"autoencoder": 1.0}, True


class DAEModel(LearnedSRLModel):
    """Denoising autoencoder."""

    NAME, DEFAULT_LOSSES, DECODES = "dae", {"dae": 1.0}, True


class VAEModel(LearnedSRLModel):
    """beta-VAE (the state is the posterior mean)."""

    NAME, DEFAULT_LOSSES, DECODES = "vae", {"vae": 1.0}, True


class InverseModel(LearnedSRLModel):
    """Inverse dynamics: the action from two consecutive states."""

    NAME, DEFAULT_LOSSES = "inverse", {"inverse": 1.0}


class ForwardModel(LearnedSRLModel):
    """Forward dynamics: the next state from the state and the action."""

    NAME, DEFAULT_LOSSES = "forward", {"forward": 1.0}


class RewardModel(LearnedSRLModel):
    """Reward prediction."""

    NAME, DEFAULT_LOSSES = "reward", {"reward": 1.0}


class SupervisedModel(LearnedSRLModel):
    """Ground-truth regression: the upper bound."""

    NAME, DEFAULT_LOSSES = "supervised", {"supervised": 1.0}


class RoboticPriorsModel(LearnedSRLModel):
    """Robotic priors (Jonschkowski & Brock 2015)."""

    NAME, DEFAULT_LOSSES = "robotic_priors", {"robotic_priors": 1.0}


class SRLCombinationModel(LearnedSRLModel):
    """
    The default combination: reconstruction keeps what the camera sees, the inverse model (weight 10, as in srl-zoo's
    published combinations) what the robot controls, the reward model what matters for the task.

    Its reconstruction weighs the pixels that differ from the background 31 times (foreground weight 30): a plain
    pixel error lets the encoder leave a small robot out, and the inverse and reward heads, which start at chance,
    then have nothing to learn from and may never leave their plateau (the state stays constant). Weighting the
    robot's pixels gives them its position from the first updates (docs/srl.md, "srl_combination's start").
    """

    NAME, DEFAULT_LOSSES, DECODES = "srl_combination", {"autoencoder": 1.0, "inverse": 10.0, "reward": 1.0}, True
    DEFAULT_FOREGROUND_WEIGHT = 30.0


class SRLSplitsModel(LearnedSRLModel):
    """A split representation: each loss owns its own slice of the state (``--split-dims``)."""

    NAME, DEFAULT_LOSSES, DECODES = "srl_splits", {"autoencoder": 1.0, "inverse": 10.0}, True

    @classmethod
    def defaultSplit(cls, state_dim: int, losses: dict[str, float]) -> dict[str, int]:
        """
        :param state_dim: size of the state (>= number of losses)
        :param losses: the losses to train
        :return: the default autoencoder/inverse pair: a quarter of the state (at least 1) to the inverse model,
            the rest to reconstruction; any other combination: equal parts, the remainder to the first loss
        """
        if list(losses) == list(cls.DEFAULT_LOSSES) and state_dim >= 2:
            inverse = max(1, state_dim // 4)
            return {"autoencoder": state_dim - inverse, "inverse": inverse}
        share, remainder = divmod(state_dim, len(losses))
        return {name: share + (remainder if i == 0 else 0) for i, name in enumerate(losses)}


class ATCModel(LearnedSRLModel):
    """Augmented Temporal Contrast (Stooke et al. 2021), trained apart from RL on a dataset's frames."""

    NAME, DEFAULT_LOSSES = "atc", {"atc": 1.0}


class CURLModel(LearnedSRLModel):
    """CURL-style instance contrast (Laskin et al. 2020), offline: trained on a dataset's frames, not with the agent."""

    NAME, DEFAULT_LOSSES = "curl", {"curl": 1.0}


class RandomModel(LearnedSRLModel):
    """A frozen, randomly initialised encoder (seeded): the lower bound. "Training" only saves it."""

    NAME, TRAINABLE = "random", False
