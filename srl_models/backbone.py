"""The convolutional backbone every learned SRL model shares: an encoder for C x H x W images and its mirror decoder.

Small on purpose: the encoder runs on every RL step (batched over the envs), so it is four strided convolutions
(16-32-64-64 channels, each halving the image) and one linear layer, cheap on one CPU core (its cost: docs/srl.md,
"Models").
No batch normalisation: the encoder must give the same state for an image alone or in any batch.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

CHANNELS = (16, 32, 64, 64)
# kernel 4, stride 2, padding 1 halves even sizes exactly, and the transposed convolution doubles them back
KERNEL, STRIDE, PADDING = 4, 2, 1


def convOutputSize(size: int, layers: int = len(CHANNELS)) -> int:
    """
    :param size: image height or width
    :param layers: strided convolutions applied
    :return: the size after them
    """
    for _ in range(layers):
        size = (size + 2 * PADDING - KERNEL) // STRIDE + 1
    return size


def checkImageSize(img_shape: tuple[int, int, int]) -> None:
    """
    :param img_shape: (C, H, W)
    :raises ValueError: an image too small for the four strided convolutions (one line)
    """
    channels, height, width = img_shape
    if channels < 1 or min(height, width) < 16:
        raise ValueError(f"image shape {tuple(img_shape)} is too small for the convolutional encoder "
                         "(needs H, W >= 16 and C >= 1)")


class ConvEncoder(nn.Module):
    """
    Images -> features (the last convolution, flattened) -> state (a linear layer).

    :param img_shape: (C, H, W) of the input, pixels scaled to [0, 1]
    :param state_dim: size of the state
    """

    def __init__(self, img_shape: tuple[int, int, int], state_dim: int) -> None:
        super().__init__()
        checkImageSize(img_shape)
        channels, height, width = img_shape
        layers: list[nn.Module] = []
        for out_channels in CHANNELS:
            layers += [nn.Conv2d(channels, out_channels, KERNEL, STRIDE, PADDING), nn.ReLU(inplace=True)]
            channels = out_channels
        self.conv = nn.Sequential(*layers)
        self.feature_shape = (CHANNELS[-1], convOutputSize(height), convOutputSize(width))
        self.feature_dim = CHANNELS[-1] * self.feature_shape[1] * self.feature_shape[2]
        self.to_state = nn.Linear(self.feature_dim, state_dim)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """
        :param images: float (n, C, H, W) in [0, 1]
        :return: (features (n, feature_dim), states (n, state_dim))
        """
        features = self.conv(images).flatten(1)
        return features, self.to_state(features)


class ConvDecoder(nn.Module):
    """
    The encoder's mirror: a vector -> the last convolution's shape -> four transposed convolutions -> an image.

    :param in_dim: size of the vector it decodes (a state, or the part of it a loss owns)
    :param img_shape: (C, H, W) of the output image
    """

    def __init__(self, in_dim: int, img_shape: tuple[int, int, int]) -> None:
        super().__init__()
        checkImageSize(img_shape)
        self.img_shape = tuple(img_shape)
        channels, height, width = img_shape
        self.start_shape = (CHANNELS[-1], convOutputSize(height), convOutputSize(width))
        self.from_state = nn.Linear(in_dim, CHANNELS[-1] * self.start_shape[1] * self.start_shape[2])
        layers: list[nn.Module] = []
        widths = list(reversed(CHANNELS))[1:] + [channels]
        in_channels = CHANNELS[-1]
        for i, out_channels in enumerate(widths):
            layers.append(nn.ConvTranspose2d(in_channels, out_channels, KERNEL, STRIDE, PADDING))
            if i < len(widths) - 1:
                layers.append(nn.ReLU(inplace=True))
            in_channels = out_channels
        self.deconv = nn.Sequential(*layers)

    def forward(self, vectors: torch.Tensor) -> torch.Tensor:
        """
        :param vectors: float (n, in_dim)
        :return: float (n, C, H, W) in [0, 1]
        """
        x = F.relu(self.from_state(vectors)).view(-1, *self.start_shape)
        x = self.deconv(x)
        if x.shape[-2:] != self.img_shape[1:]:
            # sizes that are not multiples of 16 lose pixels in the encoder's floor division: stretch back
            x = F.interpolate(x, size=self.img_shape[1:], mode="bilinear", align_corners=False)
        return torch.sigmoid(x)


def mlp(in_dim: int, out_dim: int, hidden: int = 64) -> nn.Sequential:
    """
    The small head the prediction losses put on top of states.

    :param in_dim: input size
    :param out_dim: output size
    :param hidden: hidden units
    :return: Linear-ReLU-Linear
    """
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, out_dim))
