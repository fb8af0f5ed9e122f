"""One network for every learned model: the shared convolutional encoder and the heads of the chosen losses.

With a loss that reads a momentum target (``atc``, ``curl``) the network also holds ``target_encoder``: a copy of the
encoder made at construction, never trained by gradients, moved towards the encoder by :meth:`SRLNetwork.updateTarget`
after each optimiser step (theta_target <- (1 - tau) theta_target + tau theta). It is saved with the weights (a
reloaded model can be trained on exactly), and never used by ``encode``: states always come from the online encoder.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from srl_models.backbone import ConvEncoder
from srl_models.losses import LOSSES, Batch, LossContext, SRLLoss


def stateParts(state_dim: int, losses: dict[str, float], split_dims: dict[str, int]) -> dict[str, slice]:
    """
    Which slice of the state each loss sees: the losses with split dims get consecutive slices in the order of
    ``losses``, the others the whole state.

    :param state_dim: size of the state
    :param losses: loss name -> weight (in order)
    :param split_dims: loss name -> dims, summing to state_dim (empty: no split)
    :return: loss name -> slice
    """
    parts, start = {}, 0
    for name in losses:
        if name in split_dims:
            parts[name] = slice(start, start + split_dims[name])
            start += split_dims[name]
        else:
            parts[name] = slice(0, state_dim)
    return parts


class SRLNetwork(nn.Module):
    """
    The encoder and one module per loss (its head).

    :param img_shape: (C, H, W)
    :param state_dim: size of the state
    :param losses: loss name -> weight (no losses: a bare encoder, e.g. the random model)
    :param split_dims: loss name -> dims of its own slice of the state
    :param context: sizes for the heads (``feature_dim`` is filled in from the encoder)
    """

    def __init__(self, img_shape: tuple[int, int, int], state_dim: int, losses: dict[str, float],
                 split_dims: dict[str, int], context: dict[str, Any]) -> None:
        super().__init__()
        self.encoder = ConvEncoder(img_shape, state_dim)
        self.weights = dict(losses)
        self.parts = stateParts(state_dim, losses, split_dims)
        loss_context = LossContext(img_shape=tuple(img_shape), feature_dim=self.encoder.feature_dim, **context)
        # registered under "<name>_loss": a bare "forward" would clash with nn.Module.forward
        self.heads = nn.ModuleDict({f"{name}_loss": LOSSES[name](self._dims(self.parts[name]), loss_context)
                                    for name in losses})
        # the first decoding loss gives decode() (for srl_splits, on its own slice of the state)
        self.decoder_name = next((name for name in losses if LOSSES[name].DECODES), None)
        self.target_encoder: ConvEncoder | None = None
        if any(LOSSES[name].MOMENTUM for name in losses):
            # built last, so that the other weights draw the random numbers they draw without it
            self.target_encoder = ConvEncoder(img_shape, state_dim)
            self.target_encoder.load_state_dict(self.encoder.state_dict())
            self.target_encoder.requires_grad_(False)

    @property
    def losses(self) -> dict[str, SRLLoss]:
        """Loss name -> its module, in the order of the weights."""
        return {name: self.heads[f"{name}_loss"] for name in self.weights}

    @staticmethod
    def _dims(part: slice) -> int:
        return part.stop - part.start

    @property
    def decodes(self) -> bool:
        """Whether the network can turn states back into images."""
        return self.decoder_name is not None

    @property
    def pairs(self) -> bool:
        """Whether a loss reads pairs of frames."""
        return any(loss.PAIRS for loss in self.losses.values())

    @property
    def online_next(self) -> bool:
        """Whether a loss reads the online encoder's states of the pairs' second frames."""
        return any(loss.PAIRS and loss.ONLINE_NEXT for loss in self.losses.values())

    @property
    def negatives(self) -> bool:
        """Whether a loss contrasts the rows of a minibatch (a minibatch needs at least 2 rows)."""
        return any(loss.NEGATIVES for loss in self.losses.values())

    def trainableParameters(self) -> list[nn.Parameter]:
        """:return: the parameters the optimiser updates (all but the momentum target's)"""
        return [parameter for parameter in self.parameters() if parameter.requires_grad]

    def encodeTarget(self, images: torch.Tensor) -> torch.Tensor:
        """
        :param images: float (n, C, H, W) in [0, 1]
        :return: their states through the momentum target encoder, without gradient
        """
        if self.target_encoder is None:
            raise ValueError("none of this model's losses reads a momentum target encoder")
        with torch.no_grad():
            return self.target_encoder(images)[1]

    @torch.no_grad()
    def updateTarget(self, tau: float) -> None:
        """
        Move the target encoder towards the encoder: theta_target <- (1 - tau) theta_target + tau theta (nothing
        without a target encoder).

        :param tau: the step, in (0, 1]
        """
        if self.target_encoder is None:
            return
        for target, online in zip(self.target_encoder.parameters(), self.encoder.parameters(), strict=True):
            target.lerp_(online, tau)

    def encode(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """
        :param images: float (n, C, H, W) in [0, 1]
        :return: (features, states)
        """
        return self.encoder(images)

    def decode(self, states: torch.Tensor) -> torch.Tensor:
        """
        :param states: float (n, state_dim)
        :return: float (n, C, H, W) in [0, 1]
        """
        if self.decoder_name is None:
            raise ValueError("none of this model's losses decodes images")
        return self.losses[self.decoder_name].decoder(states[:, self.parts[self.decoder_name]])

    def lossTerms(self, batch: Batch) -> dict[str, torch.Tensor]:
        """
        :param batch: an encoded minibatch
        :return: loss name -> unweighted scalar loss
        """
        return {name: loss(batch, self.parts[name]) for name, loss in self.losses.items()}

    def total(self, terms: dict[str, torch.Tensor]) -> torch.Tensor:
        """
        :param terms: from lossTerms
        :return: the weighted sum
        """
        return sum(self.weights[name] * value for name, value in terms.items())
