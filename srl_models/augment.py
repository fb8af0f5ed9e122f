"""Image augmentations of the views the SRL losses see while training (``--augment``).

- ``none``: the images as stored.
- ``shift``: a random shift of up to PAD pixels in each direction, per image, with the border pixels repeated
  (DrQ-v2's ``RandomShiftsAug``: replicate-pad by PAD, then crop back at an integer offset in [0, 2 PAD]). DrQ-v2's
  version assumes square 84x84 images; this one takes any H x W (64x64 by default here).

Invariants: an augmentation returns a new tensor of the same shape, dtype and device and never writes into its
input (the stored dataset stays as recorded); ``none`` draws no random number, so a training without augmentation
draws exactly the random numbers it drew before augmentations existed; ``shift`` draws only from the generator it is
given.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch.nn import functional as F

PAD = 4  # pixels, DrQ-v2's and RAD's choice
MAX_PAD = 16  # the largest shift a training may ask for (srl_models.train --shift-pad)

Augmentation = Callable[[torch.Tensor, "torch.Generator | None"], torch.Tensor]


def noAugmentation(images: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """
    :param images: float (B, C, H, W)
    :param generator: unused
    :return: the images themselves
    """
    return images


def randomShift(images: torch.Tensor, generator: torch.Generator | None = None, pad: int = PAD) -> torch.Tensor:
    """
    :param images: float (B, C, H, W)
    :param generator: random numbers of the offsets (one (dy, dx) per image, each in [-pad, pad])
    :param pad: the largest shift in pixels
    :return: a new tensor, each image shifted by its own offset, the border pixels repeated into the uncovered band
    """
    n, _, height, width = images.shape
    padded = F.pad(images, (pad, pad, pad, pad), mode="replicate")
    offsets = torch.randint(0, 2 * pad + 1, (2, n), generator=generator, device=images.device)
    # every H x W window of the padded images, a view (B, C, 2 pad + 1, 2 pad + 1, H, W): each image's own window is
    # copied once (a quarter of the time of indexing each pixel)
    windows = padded.unfold(2, height, 1).unfold(3, width, 1)
    return windows[torch.arange(n, device=images.device), :, offsets[0], offsets[1]]


AUGMENTATIONS: dict[str, Augmentation] = {"none": noAugmentation, "shift": randomShift}


def makeAugmentation(name: str, pad: int = PAD) -> Augmentation:
    """
    :param name: an augmentation's name (:data:`AUGMENTATIONS`)
    :param pad: ``shift``'s largest shift in pixels (the others take none)
    :return: the augmentation
    """
    if name == "shift" and pad != PAD:
        return functools.partial(randomShift, pad=pad)
    return AUGMENTATIONS[name]
