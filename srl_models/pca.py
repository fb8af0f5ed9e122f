"""PCA on flattened, downsized images: the linear baseline. Saved as plain arrays (.npz), never a pickle."""
from __future__ import annotations

import os
import zipfile
from typing import Any

import cv2
import numpy as np

from srl_models.base import EXP_CONFIG_FILE, BaseSRLModel, readExpConfig
from srl_models.models import checkImages
from srl_toolbox.files import loadNpz, writeJson, writeNpz

WEIGHTS_FILE = "srl_model.npz"
PCA_SIZE = 32  # images are shrunk to at most 32x32 first: 3072 pixels per image keep the covariance small


def pcaShape(img_shape: tuple[int, int, int]) -> tuple[int, int, int]:
    """
    :param img_shape: (C, H, W) of the images
    :return: (C, h, w) the images are shrunk to before the projection
    """
    channels, height, width = img_shape
    return channels, min(height, PCA_SIZE), min(width, PCA_SIZE)


def _resize(images: np.ndarray, height: int, width: int) -> np.ndarray:
    if images.shape[1:3] == (height, width):
        return images
    channels = images.shape[-1]
    out = np.empty((len(images), height, width, channels), dtype=images.dtype)
    for i, image in enumerate(images):
        # cv2 handles at most 4 channels at once: resize each camera (3 channels) on its own
        for c in range(0, channels, 3):
            out[i, :, :, c:c + 3] = cv2.resize(image[:, :, c:c + 3], (width, height),
                                               interpolation=cv2.INTER_AREA).reshape(height, width, -1)
    return out


def topComponents(centred: np.ndarray, k: int, seed: int = 0, exact_below: int = 1000) -> tuple[np.ndarray,
                                                                                                  np.ndarray]:
    """
    The k leading principal axes: an exact SVD when the data is small, else a randomized SVD (Halko et al. 2011:
    a random projection refined by power iterations), which costs O(n d k) instead of O(n d min(n, d)).

    :param centred: (n, d) centred data
    :param k: number of components
    :param seed: the random projection
    :param exact_below: exact SVD when min(n, d) is at most this
    :return: (components (k, d), variance along each (k,))
    """
    n = len(centred)
    if min(centred.shape) <= exact_below:
        _, singular, vt = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    else:
        basis = centred @ np.random.default_rng(seed).standard_normal((centred.shape[1], k + 10), dtype=np.float32)
        for _ in range(4):
            basis, _ = np.linalg.qr(basis)
            basis = centred @ (centred.T @ basis)
        basis, _ = np.linalg.qr(basis)
        _, singular, vt = np.linalg.svd(basis.T @ centred, full_matrices=False)
    return vt[:k], singular[:k] ** 2 / max(n - 1, 1)


class PCAModel(BaseSRLModel):
    """
    state = components @ (downsized image / 255 - mean).

    :param state_dim: number of principal components
    :param img_shape: (C, H, W)
    :param exp_config: settings
    :param device: unused (numpy); accepted for the common load signature
    """

    NAME = "pca"
    DECODES = True
    TRAINABLE = True
    DEFAULT_LOSSES: dict[str, float] = {}

    def __init__(self, state_dim: int, img_shape: tuple[int, int, int], exp_config: dict[str, Any] | None = None,
                 device: str = "cpu") -> None:
        super().__init__(state_dim, img_shape, exp_config)
        self.exp_config.setdefault("srl_model", self.NAME)
        self.exp_config.update(state_dim=self.state_dim, img_shape=list(self.img_shape), model_type="pca",
                               api_version=self.API_VERSION, losses={}, pca_shape=list(pcaShape(self.img_shape)))
        size = int(np.prod(pcaShape(self.img_shape)))
        self.mean = np.zeros(size, dtype=np.float32)
        self.components = np.zeros((self.state_dim, size), dtype=np.float32)
        self.explained_variance = np.zeros(self.state_dim, dtype=np.float32)

    def _flatten(self, images: np.ndarray) -> np.ndarray:
        _, height, width = pcaShape(self.img_shape)
        return _resize(images, height, width).reshape(len(images), -1).astype(np.float32) / 255.0

    def fit(self, images: np.ndarray, seed: int = 0) -> float:
        """
        :param images: uint8 (n, H, W, C), n >= state_dim
        :param seed: the random projection of the randomized SVD (large datasets only)
        :return: mean squared reconstruction error on these images (per pixel, in [0, 1] units)
        """
        data = self._flatten(checkImages(images, self.img_shape))
        if self.state_dim > min(data.shape):
            raise ValueError(f"PCA cannot find {self.state_dim} components in {len(data)} images of "
                             f"{data.shape[1]} pixels")
        self.mean = data.mean(0)
        components, variance = topComponents(data - self.mean, self.state_dim, seed)
        # singular vectors have an arbitrary sign: fix it (largest coefficient positive) so that refits agree
        signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(1)])
        self.components = (components * signs[:, None]).astype(np.float32)
        self.explained_variance = variance.astype(np.float32)
        return self.reconstructionError(images)

    def reconstructionError(self, images: np.ndarray) -> float:
        """
        :param images: uint8 (n, H, W, C)
        :return: mean squared error between the downsized images and their projection back (in [0, 1] units)
        """
        data = self._flatten(checkImages(images, self.img_shape))
        projected = (data - self.mean) @ self.components.T @ self.components + self.mean
        return float(np.mean((projected - data) ** 2))

    def getState(self, observations: np.ndarray) -> np.ndarray:
        """
        :param observations: uint8 (n, H, W, C)
        :return: float32 (n, state_dim)
        """
        data = self._flatten(checkImages(observations, self.img_shape))
        return ((data - self.mean) @ self.components.T).astype(np.float32)

    def decode(self, states: np.ndarray) -> np.ndarray:
        """
        :param states: float (n, state_dim)
        :return: uint8 (n, H, W, C), enlarged back from the PCA size
        """
        channels, height, width = pcaShape(self.img_shape)
        states = np.asarray(states, dtype=np.float32).reshape(-1, self.state_dim)
        pixels = np.clip(states @ self.components + self.mean, 0.0, 1.0)
        small = (pixels.reshape(-1, height, width, channels) * 255.0).round().astype(np.uint8)
        return _resize(small, self.img_shape[1], self.img_shape[2])

    def save(self, folder: str) -> None:
        """:param folder: the model folder: srl_model.npz, then exp_config.json, each atomic"""
        os.makedirs(folder, exist_ok=True)
        writeNpz(os.path.join(folder, WEIGHTS_FILE), {"mean": self.mean, "components": self.components,
                                                      "explained_variance": self.explained_variance})
        self.exp_config["weights"] = [WEIGHTS_FILE]
        writeJson(os.path.join(folder, EXP_CONFIG_FILE), self.exp_config, sort_keys=False)

    @classmethod
    def load(cls, folder: str, device: str = "cpu") -> PCAModel:
        """
        :param folder: written by save
        :param device: unused
        :return: the model
        :raises ValueError: arrays that do not fit the configuration (one line)
        """
        config = readExpConfig(folder)
        model = cls(config["state_dim"], tuple(config["img_shape"]), config)
        try:
            with loadNpz(os.path.join(folder, WEIGHTS_FILE)) as data:
                mean, components = data["mean"], data["components"]
                variance = data["explained_variance"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:  # BadZipFile: truncated
            raise ValueError(f"cannot load the PCA model in {folder!r}: {error}") from None
        if mean.shape != model.mean.shape or components.shape != model.components.shape:
            raise ValueError(f"{folder!r}: PCA arrays {components.shape} do not fit state_dim {model.state_dim} and "
                             f"img_shape {model.img_shape}")
        model.mean, model.components, model.explained_variance = mean, components, variance
        return model
