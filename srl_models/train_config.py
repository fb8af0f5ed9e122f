"""SRLTrainConfig: the one declaration of every setting of ``python -m srl_models.train``, typed and frozen.

Each flag is a field declared with :func:`srl_toolbox.settings.setting` (type, default, flag names, parser, help);
``srl_models.train.buildParser`` generates the parser from the fields, and a caller in Python (``srl_models.prepare``)
builds an :class:`SRLTrainConfig` directly. ``srl_models.train.checkSettings`` checks either the same way, and
``srl_models.train.trainFromConfig`` trains from it.

Invariants: a flag's name, default and help exist only in its field; the lists (``losses``, ``split_dims``) are
tuples, so a config is hashable and nothing changes it once built (:func:`dataclasses.replace` makes another).
"""
from __future__ import annotations

import dataclasses
import os

from srl_models.augment import AUGMENTATIONS, MAX_PAD, PAD
from srl_models.losses import ATCLoss, CURLLoss
from srl_models.models import LearnedSRLModel, SRLCombinationModel
from srl_toolbox.cli import intInRange, positiveFloat, positiveInt, seedNumber
from srl_toolbox.settings import setting

DEFAULT_STATE_DIM = 32
MAX_STATE_DIM = 4096  # (a typo such as 1e8 would try to allocate the network's hundreds of gigabytes)
DEFAULT_BATCH_SIZE = 64  # the losses' DEFAULTS may ask for another (the contrastive losses: 256)
_ATC, _CURL = ATCLoss.DEFAULTS, CURLLoss.DEFAULTS


@dataclasses.dataclass(frozen=True)
class SRLTrainConfig:
    """
    The settings of one SRL training: as given (``SRLTrainConfig(data_folder=..., srl_model="vae")``, or parsed
    from the command line). ``{models}`` and ``{losses}`` in the help texts are filled with the installed names.
    """

    data_folder: str | None = setting(None, "the dataset folder (data/NAME)", required=True)
    srl_model: str | None = setting(None, "a learned model: {models} (default: from --losses: one loss trains the "
                                    "model of that name, several srl_combination, dims srl_splits)")
    losses: tuple[str, ...] = setting((), "weighted losses on one encoder; names: {losses}", nargs="+",
                                      metavar="NAME[:WEIGHT[:DIMS]]")
    split_dims: tuple[str, ...] = setting((), "state dims owned by each loss (sum = --state-dim); losses not listed "
                                          "see the whole state", nargs="+", metavar="NAME:DIMS")
    state_dim: int | None = setting(None, f"size of the state, 1..{MAX_STATE_DIM} [{DEFAULT_STATE_DIM}; supervised "
                                    "alone: the ground truth's]", parse=intInRange(1, MAX_STATE_DIM))
    epochs: int = setting(30, "maximum epochs", parse=positiveInt)
    updates: int | None = setting(None, "optimiser steps in all, instead of --epochs (an epoch is a pass over the "
                                  "training frames; the last one stops at the last step)", parse=positiveInt)
    batch_size: int | None = setting(None, f"minibatch size [{DEFAULT_BATCH_SIZE}; atc: {_ATC['batch_size']}, curl: "
                                     f"{_CURL['batch_size']}]",
                                     parse=positiveInt)
    augment: str | None = setting(None, "augmentation of each view a loss sees: none, or shift (a random shift of up "
                                  "to --shift-pad pixels, border repeated, DrQ-v2's) [none; curl: shift]",
                                  choices=tuple(AUGMENTATIONS), metavar="{" + ",".join(AUGMENTATIONS) + "}")
    shift_pad: int | None = setting(None, f"--augment shift: the largest shift in pixels, 1..{MAX_PAD} [{PAD}]",
                                    parse=intInRange(1, MAX_PAD))
    horizon: int | None = setting(None, "atc: the distance k of its pairs (frames t and t+k of one episode) "
                                  f"[atc: {_ATC['horizon']}]",
                                  parse=positiveInt)
    tau: float | None = setting(None, "atc, curl: step of the momentum target encoder after each optimiser step "
                                f"[atc: {_ATC['tau']:g}, curl: {_CURL['tau']:g}]", parse=positiveFloat)
    learning_rate: float = setting(1e-3, "Adam learning rate [1e-3]")
    beta: float = setting(1.0, "weight of the VAE's KL term [1]")
    foreground_weight: float | None = setting(None, "reconstruction losses: extra weight of the pixels that differ "
                                              "from the background (the training images' per-pixel median); 0: plain "
                                              f"pixel error [{LearnedSRLModel.DEFAULT_FOREGROUND_WEIGHT:g}; "
                                              f"srl_combination: {SRLCombinationModel.DEFAULT_FOREGROUND_WEIGHT:g}]",
                                              parse=float)
    seed: int = setting(0, "seed of the weights, split, shuffling and noise, 0..2**32-1 [0]", parse=seedNumber)
    val_split: float = setting(0.1, "fraction of the episodes held out")
    patience: int = setting(10, "epochs without a better validation loss before stopping (0: never)",
                            parse=intInRange(0))
    log_folder: str = setting(os.path.join("logs", "srl"), "root of the model folders")
    device: str = setting("auto", "auto (cuda when available), cpu, cuda or cuda:N")
    no_eval: bool = setting(False, "skip the evaluation (GTC, KNN-MSE)")
    no_progress: bool = setting(False, "no progress bar")

    def __post_init__(self) -> None:
        for name in ("losses", "split_dims"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value or ()))
