"""Image features extractors for the SB3 pixel policies (``CnnPolicy`` and its kin), chosen by ``--features-extractor``.

- ``nature``: SB3's NatureCNN (32-64-64 filters, 512 features), built for 84x84 Atari frames;
- ``small``: :class:`SmallCNN`, the same three convolutions (8x8 stride 4, 4x4 stride 2, 3x3 stride 1) with half the
  filters or fewer (16-32-32) and 256 features, sized for the toolbox's 64x64 frames: about a third of NatureCNN's
  multiply-adds per image;
- ``medium``: :class:`MediumCNN`, SmallCNN's convolutions with 16-48-48 filters and NatureCNN's 512 features: about
  half NatureCNN's multiply-adds per image.

Each computes in the precision of ``--precision`` (:data:`PRECISIONS`, a constructor keyword, so saved in the model
zip): ``float32``, or ``bfloat16``: its convolutions and linear layer run under torch's bfloat16 autocast, forward and
backward (the weights, their gradients and Adam stay float32) and its features come out as float32, so the policy's
heads, its distribution and the losses are computed in float32 as ever. CPUs with bfloat16 instructions (AVX-512
BF16, AMX) compute the CNN faster so; elsewhere bfloat16 is emulated and slower (:func:`nativeBFloat16`). ``auto`` is
bfloat16 on such a CPU and float32 elsewhere, resolved before args.json records the run's precision
(:func:`resolvedPrecision`), so a run, its zip and a continued model name the one they computed in. With
``bfloat16`` the policy's Adam also takes its step fused (torch's ``fused=True``: one kernel over every parameter,
the same update rounded otherwise): ``float32`` keeps SB3's own optimizer, so its runs stay bit for bit those of
SB3's defaults (on one torch thread: ppo2 trains the CNN in shards on several).

Every extractor gets the heads SB3 gives NatureCNN in its actor-critic policies (:func:`pixelPolicyKeywords`): the
action and value layers straight on the features (``net_arch=[]``). SB3 gives any other extractor two hidden tanh
layers of 64 units per head, and with them SmallCNN did not learn the toolbox's tasks (docs/benchmarks.md).

Each is a :class:`~rl_baselines.rl_algorithm.sharded_features.ShardedExtractor`: an algorithm can compute its
training minibatches in shards, one per torch thread (ppo2 does: ``SHARDED_PIXEL_UPDATES``).

Invariants: an extractor takes SB3's channel-first image space (uint8 images are divided by 255 by the policy, as
for NatureCNN) and any image size NatureCNN takes; the choice is a policy keyword (``features_extractor_class``, with
``net_arch``), so it is saved in the model zip and a loaded or resumed model keeps the extractor and the heads it was
built with.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common import torch_layers
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from rl_baselines.rl_algorithm.sharded_features import ShardedExtractor

# what the features extractor computes in (the module docstring); DEFAULT_PRECISION is SB3's, and a state's MLP's
PRECISIONS = ("float32", "bfloat16")
DEFAULT_PRECISION = "float32"
# --precision's choices: a precision, or auto (:func:`resolvedPrecision`), resolved before args.json records it
PRECISION_CHOICES = ("auto", *PRECISIONS)


def checkedPrecision(precision: str) -> str:
    """:return: ``precision``, one of :data:`PRECISIONS`; :raises ValueError: another"""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; valid choices: {', '.join(PRECISIONS)}")
    return precision


def resolvedPrecision(precision: str, device: str | torch.device) -> str:
    """
    :param precision: a ``--precision`` (:data:`PRECISION_CHOICES`)
    :param device: the device the run computes on
    :return: the precision: ``auto`` is ``bfloat16`` on a CPU that computes it in hardware (:func:`nativeBFloat16`),
        else ``float32`` (a CPU that would emulate it, and a GPU, where it was not measured)
    :raises ValueError: a precision that is not one (one line)
    """
    if precision != "auto":
        return checkedPrecision(precision)
    return "bfloat16" if torch.device(device).type == "cpu" and nativeBFloat16() else "float32"


def computedIn(precision: str, device: torch.device) -> torch.autocast:
    """:return: torch's bfloat16 autocast on ``device``, on for ``bfloat16`` only"""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bfloat16")


def emulationWarning(precision: str | None, device: str | torch.device) -> str | None:
    """
    :param precision: what a pixel policy's CNN computes in (:func:`precisionOf`; None: no such CNN)
    :param device: the device it computes on
    :return: the warning for bfloat16 on a CPU that would emulate it (:func:`nativeBFloat16`), None otherwise
    """
    if precision != "bfloat16" or not emulatesBFloat16(device):
        return None
    return ("the pixel policy's CNN computes in bfloat16 (--precision) and this CPU has no bfloat16 instructions "
            "(AVX-512 BF16 or AMX): torch emulates them, and training is about ten times slower than in float32 "
            "(--precision auto takes float32 on such a CPU)")


def emulatesBFloat16(device: str | torch.device) -> bool:
    """:return: whether bfloat16 is emulated on ``device``: a CPU without bfloat16 instructions (:func:`nativeBFloat16`),
    where it computes slower than float32"""
    return torch.device(device).type == "cpu" and not nativeBFloat16()


def nativeBFloat16() -> bool:
    """:return: whether this machine's CPU computes bfloat16 matrix products in hardware (oneDNN's check: AVX-512
    BF16 or AMX), where ``--precision bfloat16`` is faster than float32"""
    return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())


class NatureCNN(ShardedExtractor, torch_layers.NatureCNN):
    """
    SB3's NatureCNN, the same layers built in the same order (so the same weights from the same seed), computing in
    ``precision`` (:data:`PRECISIONS`; the other arguments are SB3's).
    """

    def __init__(self, observation_space: gym.Space, features_dim: int = 512, normalized_image: bool = False,
                 precision: str = DEFAULT_PRECISION) -> None:
        super().__init__(observation_space, features_dim, normalized_image)
        self.precision = checkedPrecision(precision)

    def features(self, observations: torch.Tensor) -> torch.Tensor:
        with computedIn(self.precision, observations.device):
            features = torch_layers.NatureCNN.forward(self, observations)
        return features.float()


class SmallCNN(ShardedExtractor, BaseFeaturesExtractor):
    """
    Three convolutions and a linear layer, for 64x64 images (any size NatureCNN takes).

    :param observation_space: a channel-first image space
    :param features_dim: features out of the linear layer
    :param normalized_image: the images are already scaled to [0, 1] (SB3 passes it with ``normalize_images=False``)
    :param filters: output channels of the three convolutions
    :param precision: what the layers compute in (:data:`PRECISIONS`)
    """

    def __init__(self, observation_space: gym.Space, features_dim: int = 256, normalized_image: bool = False,
                 filters: tuple[int, int, int] = (16, 32, 32), precision: str = DEFAULT_PRECISION) -> None:
        if not (isinstance(observation_space, gym.spaces.Box)
                and is_image_space(observation_space, check_channels=False, normalized_image=normalized_image)):
            raise ValueError(f"{type(self).__name__} takes channel-first images, not {observation_space}")
        super().__init__(observation_space, features_dim)
        first, second, third = filters
        self.cnn = nn.Sequential(
            nn.Conv2d(observation_space.shape[0], first, kernel_size=8, stride=4), nn.ReLU(),
            nn.Conv2d(first, second, kernel_size=4, stride=2), nn.ReLU(),
            nn.Conv2d(second, third, kernel_size=3, stride=1), nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            flat = self.cnn(torch.zeros((1, *observation_space.shape))).shape[1]
        self.linear = nn.Sequential(nn.Linear(flat, features_dim), nn.ReLU())
        self.precision = checkedPrecision(precision)

    def features(self, observations: torch.Tensor) -> torch.Tensor:
        with computedIn(self.precision, observations.device):
            features = self.linear(self.cnn(observations))
        return features.float()


class MediumCNN(SmallCNN):
    """
    SmallCNN with 16, 48, 48 filters and NatureCNN's 512 features (the arguments are SmallCNN's).
    """

    def __init__(self, observation_space: gym.Space, features_dim: int = 512, normalized_image: bool = False,
                 filters: tuple[int, int, int] = (16, 48, 48), precision: str = DEFAULT_PRECISION) -> None:
        super().__init__(observation_space, features_dim, normalized_image, filters, precision)


# --features-extractor choices -> the SB3 features extractor class
FEATURES_EXTRACTORS: dict[str, type[BaseFeaturesExtractor]] = {"nature": NatureCNN, "medium": MediumCNN,
                                                               "small": SmallCNN}
# the pixel policy's CNN of an algorithm that names none of its own (StableBaselinesRLObject.DEFAULT_FEATURES_EXTRACTOR;
# ppo2: medium), and of every run recorded before --features-extractor existed (args.json's format 3)
DEFAULT_FEATURES_EXTRACTOR = "nature"


# the policies that give NatureCNN no hidden layers before its heads and any other extractor two of 64 per head
ACTOR_CRITIC_POLICIES = (ActorCriticPolicy, MaskableActorCriticPolicy)


def pixelPolicyKeywords(extractor: str, policy_class: type, precision: str = DEFAULT_PRECISION,
                        given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """
    :param extractor: a ``--features-extractor`` name (:data:`FEATURES_EXTRACTORS`)
    :param policy_class: the SB3 pixel policy's class
    :param precision: a ``--precision`` (:data:`PRECISIONS`)
    :param given: the run's own ``policy_kwargs`` (a hyperparameter), which win over these; one that names an
        optimizer (``optimizer_class`` or ``optimizer_kwargs``) keeps it as given, not fused
    :return: the policy's keywords for that extractor: its class; with ``bfloat16`` its precision and Adam's fused
        step (``optimizer_kwargs``, with the ``eps`` of 1e-5 SB3 gives Adam in an actor-critic policy); and, in an
        actor-critic policy (:data:`ACTOR_CRITIC_POLICIES`, the recurrent one included), NatureCNN's heads
        (``net_arch=[]``), which SB3 and sb3-contrib give NatureCNN alone; ``given`` over them
    """
    keywords: dict[str, Any] = {"features_extractor_class": FEATURES_EXTRACTORS[extractor]}
    actor_critic = issubclass(policy_class, ACTOR_CRITIC_POLICIES)
    if checkedPrecision(precision) != DEFAULT_PRECISION:
        keywords["features_extractor_kwargs"] = {"precision": precision}
        keywords["optimizer_kwargs"] = {**({"eps": 1e-5} if actor_critic else {}), "fused": True}
    if actor_critic:
        keywords["net_arch"] = []
    given = dict(given or {})
    if {"optimizer_class", "optimizer_kwargs"} & set(given):
        keywords.pop("optimizer_kwargs", None)
    return {**keywords, **given}


def addFeaturesExtractorFlags(group: Any, default: str = DEFAULT_FEATURES_EXTRACTOR,
                              precision: str = DEFAULT_PRECISION) -> None:
    """
    ``--features-extractor``, the image features extractor of the SB3 pixel policy (:data:`FEATURES_EXTRACTORS`),
    and ``--precision``, what it computes in (:data:`PRECISION_CHOICES`).

    :param group: the parser or argument group that takes them
    :param default: the algorithm's ``DEFAULT_FEATURES_EXTRACTOR``
    :param precision: the algorithm's ``DEFAULT_PRECISION``
    """
    group.add_argument("--features-extractor", choices=sorted(FEATURES_EXTRACTORS), default=default,
                       help="image features extractor of the pixel policy (raw_pixels): nature = SB3's NatureCNN, "
                            "medium and small = CNNs sized for 64x64 frames, about 1/2 and 1/3 of its multiply-adds "
                            f"[{default}]")
    group.add_argument("--precision", choices=PRECISION_CHOICES, default=precision,
                       help="what the pixel policy's CNN computes in: bfloat16 = its layers under bfloat16 autocast "
                            "(weights, heads, losses and Adam in float32; Adam's step fused), faster on CPUs with "
                            "bfloat16 instructions (AVX-512 BF16, AMX); auto = bfloat16 on such a CPU, else float32, "
                            f"recorded as resolved [{precision}]")


def _extractorOf(model: Any) -> Any:
    """:return: the features extractor of the model's policy, or of its actor (SAC and its kin); None without one"""
    policy = getattr(model, "policy", None)
    return getattr(policy, "features_extractor", None) or getattr(getattr(policy, "actor", None),
                                                                  "features_extractor", None)


def extractorName(model: Any) -> str | None:
    """
    :param model: an SB3 model (new, or loaded from its zip)
    :return: the ``--features-extractor`` name of the CNN its policy was built with (its ``policy_kwargs``, else the
        policy's or its actor's extractor: a zip saved without the keyword), None for a policy without one of them
        (a state's MLP)
    """
    chosen = (getattr(model, "policy_kwargs", None) or {}).get("features_extractor_class") or type(_extractorOf(model))
    if chosen is torch_layers.NatureCNN:  # (a zip saved before the toolbox's own NatureCNN: SB3's, the same layers)
        return "nature"
    return next((name for name, known in FEATURES_EXTRACTORS.items() if chosen is known), None)


def precisionOf(model: Any) -> str | None:
    """
    :param model: an SB3 model (new, or loaded from its zip)
    :return: the ``--precision`` its policy's CNN computes in (float32 for SB3's own NatureCNN of an older zip), None
        for a policy without a CNN of :data:`FEATURES_EXTRACTORS` (a state's MLP)
    """
    if extractorName(model) is None:
        return None
    return str(getattr(_extractorOf(model), "precision", DEFAULT_PRECISION))
