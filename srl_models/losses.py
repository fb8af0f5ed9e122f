"""The SRL losses, each a small module owning the head it needs on top of the shared encoder.

A model is one encoder plus a weighted sum of these losses (srl-zoo's ``--losses name:weight[:dims]``). Each loss
sees either the whole state or, in split representations, its own slice of it (``part``). The classes declare what
they need from the dataset (NEEDS), whether they look at pairs of frames (PAIRS) and at which distance (HORIZON),
whether they read the momentum target encoder (MOMENTUM) and need other rows of the minibatch as negatives
(NEGATIVES), and whether they decode images (DECODES), so the training command can check a dataset and the settings
before it loads a single image.

Pairs (t, t + h) never cross an episode end (the trainer picks them). The contrastive losses (``atc``, ``curl``) see
the views the trainer augmented (``--augment``: ``shift`` by default for ``curl``, ``none`` for ``atc``), each view of
a pair with its own random shift.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.nn import functional as F

from srl_models.backbone import ConvDecoder, mlp

if TYPE_CHECKING:
    from environments.dataset import Dataset

DAE_NOISE_STD = 0.1  # Gaussian noise on [0, 1] pixels for the denoising autoencoder
# A pixel is foreground when one of its channels differs from the background (the per-pixel median of the training
# images) by more than this, on [0, 1] pixels.
FOREGROUND_THRESHOLD = 0.1
# The VAE's pixel likelihood. With the textbook squared error (std 1/sqrt(2)) the KL term outweighs the few pixels of a
# small robot and the state ignores it: on a 64x64 MobileRobot dataset (15 epochs) GTC 0.29 and KNN-MSE 0.54, against
# 0.61 and 0.053 with std 0.1. --beta still scales the KL term against this.
VAE_PIXEL_STD = 0.1


@dataclass
class LossContext:
    """
    What the heads are sized from: the images, the dataset's actions, rewards and ground truth, and settings.

    :param img_shape: (C, H, W)
    :param feature_dim: size of the encoder's features (before its linear layer)
    :param continuous_actions: actions are vectors (else integer classes)
    :param n_actions: number of discrete actions (None when continuous or unknown)
    :param action_dim: size of a continuous action (None when discrete or unknown)
    :param n_reward_classes: distinct reward values in the dataset (None when unknown)
    :param ground_truth_dim: size of a ground-truth state (None when unknown)
    :param beta: weight of the VAE's KL term
    :param foreground_weight: extra weight of foreground pixels in the reconstruction losses (0: plain pixel error)
    """

    img_shape: tuple[int, int, int]
    feature_dim: int
    continuous_actions: bool = False
    n_actions: int | None = None
    action_dim: int | None = None
    n_reward_classes: int | None = None
    ground_truth_dim: int | None = None
    beta: float = 1.0
    foreground_weight: float = 0.0

    @property
    def action_size(self) -> int:
        """Width of an action as a network input: its vector, or a one-hot of the discrete actions."""
        size = self.action_dim if self.continuous_actions else self.n_actions
        if not size:
            raise ValueError("the dataset's actions are unknown")
        return int(size)


@dataclass
class Batch:
    """
    One minibatch, encoded.

    :param images: float (B, C, H, W) in [0, 1]
    :param features: encoder features of images
    :param states: states of images (B, state_dim)
    :param encode: the encoder (images -> (features, states)), for losses that encode another input
    :param next_images: the frames that follow (pair losses only)
    :param next_features: their features
    :param next_states: their states (None when no loss reads them through the online encoder)
    :param target_states: the states of next_images through the momentum target encoder, without gradient (losses
        with MOMENTUM only)
    :param actions: long (B,) discrete or float (B, action_dim) continuous actions taken at t
    :param rewards: long (B,) reward classes of the transitions
    :param ground_truth: float (B, ground_truth_dim), standardised
    :param generator: random numbers for noise and sampling (a fixed one makes validation losses comparable)
    :param foreground: float (B, 1, H, W), 1 where the stored frame of ``images`` differs from the background
        (:func:`foregroundMask`), augmented with it; None: the reconstruction losses compare ``images`` themselves with
        the background
    """

    images: torch.Tensor
    features: torch.Tensor
    states: torch.Tensor
    encode: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
    next_images: torch.Tensor | None = None
    next_features: torch.Tensor | None = None
    next_states: torch.Tensor | None = None
    target_states: torch.Tensor | None = None
    actions: torch.Tensor | None = None
    rewards: torch.Tensor | None = None
    ground_truth: torch.Tensor | None = None
    generator: torch.Generator | None = None
    foreground: torch.Tensor | None = None


def foregroundMask(images: torch.Tensor, background: torch.Tensor) -> torch.Tensor:
    """
    :param images: float (B, C, H, W) in [0, 1], as stored (not augmented: a shifted scene differs from the
        background almost everywhere)
    :param background: float (C, H, W), the training images' per-pixel median
    :return: float (B, 1, H, W), 1.0 where a channel differs from the background by more than FOREGROUND_THRESHOLD
    """
    return ((images - background).abs().amax(1, keepdim=True) > FOREGROUND_THRESHOLD).to(images.dtype)


def _randn(like: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    return torch.randn(like.shape, generator=generator, device=like.device, dtype=like.dtype)


class SRLLoss(nn.Module):
    """
    A loss on (a part of) the state, with its head.

    :param dims: size of the state part it sees
    :param context: sizes of images, actions, rewards, ground truth
    """

    NAME = ""
    NEEDS: tuple[str, ...] = ()  # dataset arrays (environments.dataset.ARRAY_KEYS) it reads
    PAIRS = False                # reads pairs of frames (s_t, s_t+h)
    HORIZON: int | None = 1      # pairs: the distance h it needs (None: any h >= 1, the --horizon setting)
    ONLINE_NEXT = True           # pairs: reads the online encoder's states of the second frame (next_states)
    MOMENTUM = False             # reads the momentum target encoder's states of the second frame (target_states)
    NEGATIVES = False            # contrasts each row with the other rows of its minibatch (needs >= 2 rows)
    ROW_PAIRS = False            # compares pairs of rows of its minibatch (needs >= 2 rows; NEGATIVES implies it)
    DEFAULTS: dict[str, object] = {}  # training settings it needs other than the command's defaults
    DECODES = False              # has a decoder (states -> images)
    LEARNS = ""                  # one line for --help and docs
    VALIDATES = True             # False: its validation value cannot pick the best epoch (see RoboticPriorsLoss)

    def __init__(self, dims: int, context: LossContext) -> None:
        super().__init__()
        self.dims = dims

    def forward(self, batch: Batch, part: slice) -> torch.Tensor:
        """
        :param batch: the encoded minibatch
        :param part: the slice of the state this loss owns
        :return: the scalar loss
        """
        raise NotImplementedError

    @classmethod
    def checkDataset(cls, dataset: Dataset) -> None:
        """
        :param dataset: the dataset to train on
        :raises ValueError: one line, when the dataset lacks what the loss reads (default: a NEEDS array missing)
        """
        dataset.require(*cls.NEEDS, purpose=f"the {cls.NAME} loss")

    def prepare(self, arrays: dict[str, torch.Tensor]) -> None:
        """
        Set statistics of the training set before training (default: nothing).

        :param arrays: the training rows' "actions", "rewards" (classes), "ground_truth" where the dataset has them
        """


class AutoEncoderLoss(SRLLoss):
    """
    Reconstruct the image from the state: the mean squared pixel error, where each pixel that differs from the
    background (foreground: the robot, the target) weighs ``1 + foreground_weight``.

    A robot that covers a few pixels of a static scene is otherwise worth almost nothing to the error: the decoder
    draws the scene without it and the state ignores where it is.
    """

    NAME, DECODES, LEARNS = "autoencoder", True, "reconstruct the image from the state"

    def __init__(self, dims: int, context: LossContext) -> None:
        super().__init__(dims, context)
        self.decoder = ConvDecoder(dims, context.img_shape)
        self.foreground_weight = float(context.foreground_weight)
        self.background: torch.Tensor | None = None  # set by prepare(); a training statistic, not saved

    def prepare(self, arrays: dict[str, torch.Tensor]) -> None:
        """:param arrays: "background": float (C, H, W), the training images' per-pixel median"""
        self.background = arrays.get("background")

    def pixelWeights(self, images: torch.Tensor, foreground: torch.Tensor | None = None) -> torch.Tensor | None:
        """
        :param images: float (B, C, H, W) targets of the reconstruction
        :param foreground: their foreground (Batch.foreground: the stored frames', augmented with them); None: where
            ``images`` differ from the background
        :return: (B, 1, H, W) weights, each image's summing to its pixel count; None when all pixels weigh the same
        """
        if not self.foreground_weight or (foreground is None and self.background is None):
            return None
        if foreground is None:
            foreground = foregroundMask(images, self.background)
        weights = 1.0 + self.foreground_weight * foreground.to(images.dtype)
        # normalised per image, so that the loss stays a mean pixel error beside the other losses
        return weights * (weights[0].numel() / weights.flatten(1).sum(1)).view(-1, 1, 1, 1)

    def squaredError(self, reconstructions: torch.Tensor, images: torch.Tensor,
                     foreground: torch.Tensor | None = None) -> torch.Tensor:
        """
        :param reconstructions: decoded images
        :param images: their targets
        :param foreground: the targets' foreground (see :meth:`pixelWeights`)
        :return: (B,) weighted squared error of each image, summed over its pixels and channels
        """
        error = (reconstructions - images).pow(2)
        weights = self.pixelWeights(images, foreground)
        return (error if weights is None else error * weights).flatten(1).sum(1)

    def forward(self, batch: Batch, part: slice) -> torch.Tensor:
        reconstructions = self.decoder(batch.states[:, part])
        return self.squaredError(reconstructions, batch.images, batch.foreground).mean() / batch.images[0].numel()


class DenoisingLoss(AutoEncoderLoss):
    """Reconstruct the clean image from the state of a noisy copy."""

    NAME, LEARNS = "dae", "reconstruct the clean image from the state of a noisy copy"

    def forward(self, batch: Batch, part: slice) -> torch.Tensor:
        noisy = (batch.images + DAE_NOISE_STD * _randn(batch.images, batch.generator)).clamp(0.0, 1.0)
        _, states = batch.encode(noisy)
        reconstructions = self.decoder(states[:, part])
        return self.squaredError(reconstructions, batch.images, batch.foreground).mean() / batch.images[0].numel()


class VAELoss(AutoEncoderLoss):
    """
    beta-VAE: the state is the posterior mean, a head on the encoder features gives its log-variance.

    -log p(x|z) with a Gaussian of std VAE_PIXEL_STD per pixel (summed squared error / (2 std^2)) + beta * KL(q(z|x) ||
    N(0, I)), divided by the pixels per image to sit beside the other losses while keeping the VAE's own balance.
    """

    NAME, LEARNS = "vae", "reconstruct the image from a sample of a Gaussian posterior, KL to N(0, I) (beta-VAE)"

    def __init__(self, dims: int, context: LossContext) -> None:
        super().__init__(dims, context)
        self.logvar = nn.Linear(context.feature_dim, dims)
        self.beta = float(context.beta)

    def forward(self, batch: Batch, part: slice) -> torch.Tensor:
        mean = batch.states[:, part]
        logvar = self.logvar(batch.features).clamp(-10.0, 10.0)
        sample = mean + torch.exp(0.5 * logvar) * _randn(mean, batch.generator)
        error = self.squaredError(self.decoder(sample), batch.images, batch.foreground)
        reconstruction = error / (2 * VAE_PIXEL_STD ** 2)
        kl = -0.5 * (1.0 + logvar - mean.pow(2) - logvar.exp()).sum(1)
        return (reconstruction + self.beta * kl).mean() / batch.images[0].numel()


class InverseLoss(SRLLoss):
    """
    Predict the action from (s_t, s_t+1): cross-entropy for discrete actions, MSE for continuous ones.

    The head reads the state change s_t+1 - s_t. Given the two states side by side (srl-zoo's choice), it had to find
    a small robot's one-pixel move under the whole state's magnitude, and on a 64x64 MobileRobot dataset it stayed
    at chance (loss ln 4) for 15 epochs; from the difference it learns within 2-3.
    """

    NAME, NEEDS, PAIRS = "inverse", ("actions",), True
    LEARNS = "predict the action taken between two consecutive frames"

    def __init__(self, dims: int, context: LossContext) -> None:
        super().__init__(dims, context)
        self.continuous = context.continuous_actions
        self.head = mlp(dims, context.action_size)

    def forward(self, batch: Batch, part: slice) -> torch.Tensor:
        prediction = self.head(batch.next_states[:, part] - batch.states[:, part])
        if self.continuous:
            return F.mse_loss(prediction, batch.actions)
        return F.cross_entropy(prediction, batch.actions)


class ForwardLoss(SRLLoss):
    """Predict s_t+1 from s_t and the action (MSE in state space); the head predicts the change s_t+1 - s_t.

    Alone it has a trivial minimum (a constant state): combine it with a loss that keeps information (reconstruction).
    """

    NAME, NEEDS, PAIRS = "forward", ("actions",), True
    LEARNS = "predict the next state from the state and the action"

    def __init__(self, dims: int, context: LossContext) -> None:
        super().__init__(dims, context)
        self.continuous = context.continuous_actions
        self.action_size = context.action_size
        self.head = mlp(dims + self.action_size, dims)

    def forward(self, batch: Batch, part: slice) -> torch.Tensor:
        actions = batch.actions if self.continuous else F.one_hot(batch.actions, self.action_size).float()
        states = batch.states[:, part]
        prediction = states + self.head(torch.cat([states, actions], dim=1))
        return F.mse_loss(prediction, batch.next_states[:, part])


class RewardLoss(SRLLoss):
    """
    Predict the reward class of the transition from (s_t, s_t+1).

    Rewards are rare (a robot reaches its target a few times per episode), so the cross-entropy weights each class by
    its inverse frequency in the training set; without that the head learns "never a reward" and the state nothing.
    """

    NAME, NEEDS, PAIRS = "reward", ("rewards",), True
    LEARNS = "predict the reward class of a transition"

    def __init__(self, dims: int, context: LossContext) -> None:
        super().__init__(dims, context)
        n_classes = context.n_reward_classes or 1
        self.head = mlp(2 * dims, n_classes)
        # only needed while training: not saved, so a loaded model does not depend on its training set's statistics
        self.register_buffer("class_weights", torch.ones(n_classes), persistent=False)

    def prepare(self, arrays: dict[str, torch.Tensor]) -> None:
        counts = torch.bincount(arrays["rewards"], minlength=len(self.class_weights)).float()
        weights = counts.sum() / ((counts > 0).sum() * counts.clamp(min=1.0))
        self.class_weights.copy_(torch.where(counts > 0, weights, torch.zeros_like(weights)))

    def forward(self, batch: Batch, part: slice) -> torch.Tensor:
        logits = self.head(torch.cat([batch.states[:, part], batch.next_states[:, part]], dim=1))
        return F.cross_entropy(logits, batch.rewards, weight=self.class_weights)


class SupervisedLoss(SRLLoss):
    """
    Regress the (standardised) ground truth: the upper bound of what an encoder can learn.

    When its part of the state has the ground truth's size, the state itself is the prediction (no head), so that each
    state dimension is one ground-truth dimension; otherwise a linear layer maps the state to the ground truth.
    """

    NAME, NEEDS = "supervised", ("ground_truth_states",)
    LEARNS = "regress the ground-truth state (upper bound)"

    def __init__(self, dims: int, context: LossContext) -> None:
        super().__init__(dims, context)
        if not context.ground_truth_dim:
            raise ValueError("the ground truth's size is unknown")
        same = dims == context.ground_truth_dim
        self.head = nn.Identity() if same else nn.Linear(dims, context.ground_truth_dim)

    def forward(self, batch: Batch, part: slice) -> torch.Tensor:
        return F.mse_loss(self.head(batch.states[:, part]), batch.ground_truth)

    @classmethod
    def checkDataset(cls, dataset: Dataset) -> None:
        super().checkDataset(dataset)
        dataset.states()  # relative ground truth also needs target_positions


def sameActionPairs(actions: torch.Tensor) -> torch.Tensor:
    """
    :param actions: long (B,) discrete actions
    :return: bool (B, B), True for i < j with the same action
    """
    return torch.triu(actions[:, None] == actions[None, :], diagonal=1)


class RoboticPriorsLoss(SRLLoss):
    """
    Jonschkowski & Brock (2015): temporal coherence, proportionality, causality and repeatability, summed.

    As in srl-zoo, the pairs are every two transitions of the minibatch (drawn from shuffled episodes, so within and
    between episodes) with the same action; causality uses the pairs among them whose rewards differ. Discrete actions
    only, as in srl-zoo: random continuous actions almost never repeat (of a Kuka dataset's 3-d actions in [-1, 1],
    0.09% of the pairs are within 0.1 on every component), so nearly no pair would count, temporal coherence alone
    would train the encoder, and the state would collapse to a constant.
    """

    NAME, NEEDS, PAIRS, ROW_PAIRS = "robotic_priors", ("actions", "rewards"), True, True
    LEARNS = "temporal coherence, proportionality, causality, repeatability priors"
    # Three priors are lowest for a constant state, and held-out episodes often lack a reward change (no causality
    # pair): the validation loss is then lowest for the untrained, nearly constant encoder of epoch 1.
    VALIDATES = False

    def __init__(self, dims: int, context: LossContext) -> None:
        super().__init__(dims, context)
        if context.continuous_actions:
            raise ValueError(f"the {self.NAME} loss needs discrete actions (it compares transitions with the same "
                             "action), not continuous ones")

    @classmethod
    def checkDataset(cls, dataset: Dataset) -> None:
        super().checkDataset(dataset)
        if dataset.continuous_actions:
            raise ValueError(f"dataset {dataset.path!r} has continuous actions; the {cls.NAME} loss needs discrete "
                             "ones (it compares transitions with the same action): record one without "
                             "-c/--continuous-actions, or train another loss")

    def forward(self, batch: Batch, part: slice) -> torch.Tensor:
        states, next_states = batch.states[:, part], batch.next_states[:, part]
        deltas = next_states - states
        temporal = deltas.pow(2).sum(1).mean()
        first, second = sameActionPairs(batch.actions).nonzero(as_tuple=True)
        zero = states.new_zeros(())
        if len(first) == 0:
            return temporal
        similarity = torch.exp(-(states[first] - states[second]).pow(2).sum(1))
        proportionality = (deltas[first].norm(dim=1) - deltas[second].norm(dim=1)).pow(2).mean()
        repeatability = (similarity * (deltas[first] - deltas[second]).pow(2).sum(1)).mean()
        different_reward = batch.rewards[first] != batch.rewards[second]
        causality = similarity[different_reward].mean() if different_reward.any() else zero
        return temporal + proportionality + causality + repeatability


class ContrastiveLoss(SRLLoss):
    """
    InfoNCE with a bilinear similarity over the minibatch: row i's query q_i against every key k_j of the batch,
    logits q_i^T W k_j, cross-entropy towards j = i (the other rows are the negatives). Keys come from the momentum
    target encoder (no gradient), queries from the online encoder through ``predict``.
    """

    PAIRS, ONLINE_NEXT, MOMENTUM, NEGATIVES = True, False, True, True
    DEFAULTS = {"augment": "shift", "batch_size": 256, "tau": 0.01}

    def __init__(self, dims: int, context: LossContext) -> None:
        super().__init__(dims, context)
        self.W = nn.Linear(dims, dims, bias=False)

    def predict(self, queries: torch.Tensor) -> torch.Tensor:
        """:param queries: the online states (B, dims)
        :return: what is compared with the keys (default: the states themselves)"""
        return queries

    def forward(self, batch: Batch, part: slice) -> torch.Tensor:
        logits = self.W(self.predict(batch.states[:, part])) @ batch.target_states[:, part].T
        return F.cross_entropy(logits, torch.arange(len(logits), device=logits.device))


class ATCLoss(ContrastiveLoss):
    """
    Augmented Temporal Contrast (Stooke, Lee, Abbeel & Laskin 2021, "Decoupling representation learning from
    reinforcement learning"): the anchor o_t goes through the encoder and a residual predictor p(z) = z + MLP(z);
    the positive o_t+k through the momentum target encoder; InfoNCE with a bilinear W against the other rows'
    positives. k is the --horizon setting. With ``--augment shift`` each view is shifted independently, as in the
    paper; the default is no augmentation (DEFAULTS: temporal contrast alone, measured better on the mobile robot).
    """

    NAME, HORIZON = "atc", None
    LEARNS = "contrast a frame with the frame k steps later (ATC: momentum target, bilinear InfoNCE)"
    # measured on MobileRobot (docs/srl.md, "Contrastive models"): with the shift, a 3-pixel robot in a fixed scene
    # leaves the contrast at chance; without it, the state keeps the robot's position
    DEFAULTS = {**ContrastiveLoss.DEFAULTS, "augment": "none", "horizon": 1}
    PREDICTOR_HIDDEN = 256

    def __init__(self, dims: int, context: LossContext) -> None:
        super().__init__(dims, context)
        self.predictor = mlp(dims, dims, hidden=self.PREDICTOR_HIDDEN)

    def predict(self, queries: torch.Tensor) -> torch.Tensor:
        return queries + self.predictor(queries)


class CURLLoss(ContrastiveLoss):
    """
    CURL's instance contrast (Laskin, Srinivas & Abbeel 2020), offline: two independently augmented views of the same
    stored frame (pairs at distance 0), the query through the encoder, the key through the momentum key encoder,
    bilinear InfoNCE. CURL trains it jointly with the agent; here it is trained apart from RL, on the dataset.
    """

    NAME, HORIZON = "curl", 0
    LEARNS = "contrast two augmentations of a frame (CURL-style, momentum key encoder, bilinear InfoNCE), offline"
    DEFAULTS = {**ContrastiveLoss.DEFAULTS, "tau": 0.05}


LOSSES: dict[str, type[SRLLoss]] = {loss.NAME: loss for loss in (
    AutoEncoderLoss, DenoisingLoss, VAELoss, InverseLoss, ForwardLoss, RewardLoss, SupervisedLoss, RoboticPriorsLoss,
    ATCLoss, CURLLoss)}
