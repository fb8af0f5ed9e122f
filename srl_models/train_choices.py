"""What an SRL training's settings choose, before a dataset is opened: the registered model, its losses and their
weights, the state size and its split between the losses, and the settings the losses decide (batch size,
augmentation, the pairs' distance, the momentum target's step).

:func:`resolveModel` and :func:`resolveTraining` read one :class:`srl_models.train_config.SRLTrainConfig`;
``srl_models.train`` trains from their answer, and ``srl_models.prepare`` records the same answer in a model's recipe
(:func:`trainingEntries`), so that a config means one model to both.

Invariants: each function depends on the config and the registered models only (no dataset read, no file written);
a bad or inconsistent choice raises one :class:`srl_toolbox.cli.UsageError` naming the flag and the valid choices.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from srl_models.augment import PAD
from srl_models.base import SRLType
from srl_models.config import preparable
from srl_models.losses import LOSSES
from srl_models.models import LearnedSRLModel
from srl_models.registry import failedSRLPlugins, registeredSRL
from srl_models.train_config import DEFAULT_BATCH_SIZE, DEFAULT_STATE_DIM, MAX_STATE_DIM, SRLTrainConfig
from srl_toolbox.cli import UsageError


def trainableModels() -> dict[str, type]:
    """:return: registered learned models this command can train (name -> class)"""
    return {name: model_class for name, (model_class, _) in registeredSRL().items() if preparable(name)}


def trainsLoss(name: str) -> bool:
    """
    :param name: a model name (one this command does not train: True, so that a caller passes its flags on and the
        command names the valid choices)
    :return: whether it trains a loss, by minibatches over epochs; pca and random do not, and refuse the flags of such
        a training (--epochs, --batch-size, --patience, --learning-rate, --augment, --updates)
    """
    model_class = trainableModels().get(name)
    return model_class is None or bool(model_class.DEFAULT_LOSSES)


def _number(raw: str, what: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{what}: {raw!r} is not a number") from None
    if not math.isfinite(value):
        raise UsageError(f"{what}: {raw!r} is not finite")
    return value


def _dims(raw: str, what: str) -> int:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan  # not a number: refused below, as the dims it should be
    if not math.isfinite(value) or not value.is_integer() or value <= 0:
        raise UsageError(f"{what}: dims {raw!r} must be a positive integer")
    return int(value)


def parseLosses(items: Sequence[str]) -> tuple[dict[str, float], dict[str, int]]:
    """
    srl-zoo syntax: ``name[:weight[:dims]]`` (weight 1 when left out; dims: the size of the loss's own state slice).

    :param items: the --losses values
    :return: (name -> weight in the given order, name -> dims for those with dims)
    :raises UsageError: unknown name, bad weight or dims, repeated loss, weights not summing to a positive number
    """
    losses: dict[str, float] = {}
    dims: dict[str, int] = {}
    for item in items:
        fields = item.split(":")
        name = fields[0]
        if name not in LOSSES:
            raise UsageError(f"--losses: unknown loss {name!r}; valid losses: {', '.join(LOSSES)}")
        if len(fields) > 3:
            raise UsageError(f"--losses: {item!r} is not name[:weight[:dims]] (e.g. vae:1 or inverse:10:8)")
        if name in losses:
            raise UsageError(f"--losses: {name!r} is given twice")
        weight = _number(fields[1], f"--losses {item!r}: weight") if len(fields) > 1 else 1.0
        if weight < 0:
            raise UsageError(f"--losses {item!r}: weight {weight:g} is negative")
        losses[name] = weight
        if len(fields) == 3:
            dims[name] = _dims(fields[2], f"--losses {item!r}")
    total = sum(losses.values())
    if not total > 0:
        raise UsageError(f"--losses: the weights sum to {total:g}; at least one must be positive")
    return losses, dims


def parseSplitDims(items: Sequence[str], losses: dict[str, float], state_dim: int,
                   from_losses: dict[str, int]) -> dict[str, int]:
    """
    :param items: the --split-dims values, ``name:dims``
    :param losses: the losses to train
    :param state_dim: size of the state: the dims must sum to it
    :param from_losses: dims already given as name:weight:dims in --losses
    :return: name -> dims, in the order of ``losses``
    :raises UsageError: bad syntax, a loss not trained, dims not summing to state_dim
    """
    split = dict(from_losses)
    if items and from_losses:
        raise UsageError("give the dims either in --losses (name:weight:dims) or in --split-dims, not both")
    for item in items:
        fields = item.split(":")
        if len(fields) != 2:
            raise UsageError(f"--split-dims: {item!r} is not name:dims (e.g. autoencoder:24)")
        if fields[0] not in losses:
            raise UsageError(f"--split-dims: {fields[0]!r} is not one of the losses trained ({', '.join(losses)})")
        if fields[0] in split:
            raise UsageError(f"--split-dims: {fields[0]!r} is given twice")
        split[fields[0]] = _dims(fields[1], f"--split-dims {item!r}")
    if split and sum(split.values()) != state_dim:
        raise UsageError(f"split dims {' + '.join(f'{k}:{v}' for k, v in split.items())} = {sum(split.values())} "
                         f"do not add up to --state-dim {state_dim}")
    return {name: split[name] for name in losses if name in split}


def resolveModel(config: SRLTrainConfig) -> tuple[str, dict[str, float], dict[str, int], int]:
    """
    Decide the registered name, the losses, the split and the state size from --srl-model, --losses, --split-dims
    and --state-dim.

    :param config: the training's settings
    :return: (srl_model name, losses, split dims, state_dim)
    :raises UsageError: an inconsistent or unknown choice
    """
    models = trainableModels()
    losses, loss_dims = parseLosses(config.losses) if config.losses else ({}, {})
    name = config.srl_model
    if name is None:
        if not losses:
            raise UsageError(f"give --srl-model NAME ({', '.join(models)}) or --losses name:weight ...")
        if loss_dims or config.split_dims:
            name = "srl_splits"
        elif len(losses) == 1:  # every loss has a model of its name: never another kind in its place
            name = next(iter(losses))
        else:
            name = "srl_combination"
    if name not in models:
        if config.srl_model is not None:
            flag = "--srl-model"
        elif name in ("srl_splits", "srl_combination"):
            chose = "split dims" if name == "srl_splits" else "several losses"
            flag = f"--losses {' '.join(config.losses)} ({chose} train {name})"
        else:
            flag = f"--losses {config.losses[0]} (one loss trains the model of that name)"
        skipped = f" (skipped: {failedSRLPlugins()[name]})" if name in failedSRLPlugins() else ""
        installed = registeredSRL()
        if name in installed:  # installed, of a kind whose training is not this command's
            model_class, kind = installed[name]
            why = ("is computed by the env, not learned: nothing to train" if kind is not SRLType.LEARNED else
                   f"is a plugin's {model_class.__name__}, neither a LearnedSRLModel nor a PCAModel: its plugin "
                   "brings its own training")
            raise UsageError(f"{flag}: the installed SRL model {name!r} {why}; learned models this command trains: "
                             f"{', '.join(models)}")
        raise UsageError(f"{flag}: unknown or not a trainable model {name!r}{skipped}; learned models: "
                         f"{', '.join(models)}")
    model_class = models[name]
    if not model_class.DEFAULT_LOSSES:  # pca, random: no loss to choose
        if losses or config.split_dims:
            raise UsageError(f"--srl-model {name} trains no loss: leave out --losses and --split-dims")
    elif not losses:
        losses = dict(model_class.DEFAULT_LOSSES)
    elif name in LOSSES and name not in losses:
        raise UsageError(f"--srl-model {name} trains the {name} loss: add {name}:WEIGHT to --losses "
                         f"(or leave --srl-model out for a combination)")
    state_dim = config.state_dim or DEFAULT_STATE_DIM
    split = parseSplitDims(config.split_dims or [], losses, state_dim, loss_dims)
    if not split and issubclass(model_class, LearnedSRLModel):
        split = model_class.defaultSplit(state_dim, losses)
        if split and min(split.values()) <= 0:
            smallest = next((dim for dim in range(state_dim + 1, MAX_STATE_DIM + 1)
                             if min(model_class.defaultSplit(dim, losses).values()) > 0), None)
            fits = f"give a --state-dim of at least {smallest}" if smallest else "give --split-dims"
            raise UsageError(f"--state-dim {state_dim} is too small to split between {len(losses)} losses "
                             f"({', '.join(losses)}): {fits}")
    return name, losses, split, state_dim


def foregroundWeight(config: SRLTrainConfig, name: str, losses: dict[str, float]) -> float:
    """
    :param config: the training's settings
    :param name: the model trained (from :func:`resolveModel`)
    :param losses: its losses (from :func:`resolveModel`)
    :return: 0 where no loss reconstructs images (the weight weighs nothing), else --foreground-weight, else the
        model's default (srl_combination: 30; every other model: 0)
    """
    if not any(LOSSES[loss].DECODES for loss in losses):
        return 0.0
    if config.foreground_weight is not None:
        return float(config.foreground_weight)
    return float(getattr(trainableModels()[name], "DEFAULT_FOREGROUND_WEIGHT", 0.0))


def _lossDefault(losses: dict[str, float], key: str) -> object | None:
    """:return: the first of the losses' DEFAULTS for ``key`` (None: none of them sets it)"""
    return next((LOSSES[name].DEFAULTS[key] for name in losses if key in LOSSES[name].DEFAULTS), None)


def resolveTraining(config: SRLTrainConfig, losses: dict[str, float]) -> dict[str, Any]:
    """
    The settings the losses decide: the batch size, the augmentation, the pairs' distance and the momentum target's
    step, each from its flag, else from the losses' DEFAULTS, else the command's default.

    :param config: the training's settings
    :param losses: the losses to train (from :func:`resolveModel`)
    :return: {"batch_size", "augment", "shift_pad" (None: no shift), "horizon" (None: no pairs), "tau" (None: no
        momentum target), "updates"}; the exp_config records batch_size, and each other entry when it is not None
        (augment: when not "none"; shift_pad: when not PAD)
    :raises UsageError: --augment, --updates, --learning-rate, --batch-size or --patience without a loss (pca, random;
        srl_models.train's command line refuses --epochs too), --foreground-weight without a reconstruction loss,
        losses that need pairs at different distances, --horizon or --tau for losses that do not read them, a
        loss comparing the rows of its minibatch (contrastive, robotic priors) with minibatches of one row, curl
        without augmentation, --shift-pad without the shift
    """
    classes = {name: LOSSES[name] for name in losses}
    if "vae" not in losses and config.beta != SRLTrainConfig.beta:
        raise UsageError(f"--beta {config.beta:g} weighs the vae loss's KL term, and no vae loss is trained here "
                         f"({', '.join(losses) or config.srl_model})")
    if not losses:  # pca, random: nothing is trained by minibatches
        for flag, value in (("--augment", None if config.augment in (None, "none") else config.augment),
                            ("--updates", config.updates),
                            ("--learning-rate", None if config.learning_rate == SRLTrainConfig.learning_rate
                             else config.learning_rate),
                            ("--batch-size", config.batch_size),
                            ("--patience", None if config.patience == SRLTrainConfig.patience else config.patience)):
            if value is not None:
                raise UsageError(f"{flag} {value}: --srl-model {config.srl_model} trains no loss (no epochs, no "
                                 f"minibatches, no optimiser steps); leave {flag} out")
    if config.foreground_weight is not None and not any(loss.DECODES for loss in classes.values()):
        reconstructions = [name for name, loss in LOSSES.items() if loss.DECODES]
        raise UsageError(f"--foreground-weight {config.foreground_weight:g} weighs the pixels of the reconstruction "
                         f"losses ({', '.join(reconstructions)}), and none is trained here "
                         f"({', '.join(losses) or config.srl_model})")
    free = [name for name, loss in classes.items() if loss.PAIRS and loss.HORIZON is None]
    if config.horizon is not None and not free:
        chosen = [name for name, loss in LOSSES.items() if loss.PAIRS and loss.HORIZON is None]
        raise UsageError(f"--horizon {config.horizon}: only the {', '.join(chosen)} loss reads pairs at a chosen "
                         f"distance, and it is not trained here ({', '.join(losses) or 'no loss'})")
    horizon = (config.horizon or _lossDefault({name: 1.0 for name in free}, "horizon")) if free else None
    distances = {name: loss.HORIZON for name, loss in classes.items() if loss.PAIRS and loss.HORIZON is not None}
    distances.update({name: horizon for name in free})
    if len(set(distances.values())) > 1:
        raise UsageError("the losses read pairs of frames at different distances ("
                         + ", ".join(f"{name}: {distance}" for name, distance in distances.items())
                         + "): train them in separate models")
    if distances:
        horizon = next(iter(distances.values()))
    momentum = [name for name, loss in classes.items() if loss.MOMENTUM]
    if config.tau is not None and not momentum:
        chosen = [name for name, loss in LOSSES.items() if loss.MOMENTUM]
        raise UsageError(f"--tau {config.tau:g}: only the {', '.join(chosen)} losses have a momentum target encoder, "
                         f"and none is trained here ({', '.join(losses) or 'no loss'})")
    if config.tau is not None and not config.tau <= 1:
        raise UsageError(f"--tau {config.tau:g} must be in (0, 1]")
    tau = (config.tau or _lossDefault(losses, "tau")) if momentum else None
    batch_size = config.batch_size or _lossDefault(losses, "batch_size") or DEFAULT_BATCH_SIZE
    comparing = [name for name, loss in classes.items() if loss.NEGATIVES or loss.ROW_PAIRS]
    if comparing and batch_size < 2:
        name = comparing[0]
        how = ("contrasts each frame with the other frames" if LOSSES[name].NEGATIVES else
               "compares pairs of the transitions")
        raise UsageError(f"--batch-size {batch_size}: the {name} loss {how} of its minibatch, which needs 2 or more "
                         f"(its default: {LOSSES[name].DEFAULTS.get('batch_size', DEFAULT_BATCH_SIZE)})")
    augment = config.augment or _lossDefault(losses, "augment") or "none"
    if augment == "none" and any(loss.PAIRS and loss.HORIZON == 0 for loss in classes.values()):
        raise UsageError("--augment none: the curl loss contrasts two augmentations of one frame, without augmentation "
                         "they are the same image; choose --augment shift")
    if config.shift_pad is not None and augment != "shift":
        raise UsageError(f"--shift-pad {config.shift_pad} sets --augment shift's largest shift, and the views here are "
                         f"not shifted (--augment {augment}"
                         + (f"; --srl-model {config.srl_model} trains no loss)" if not losses else ")"))
    shift_pad = (config.shift_pad or _lossDefault(losses, "shift_pad") or PAD) if augment == "shift" else None
    return {"batch_size": int(batch_size), "augment": augment, "shift_pad": shift_pad, "horizon": horizon,
            "tau": tau, "updates": config.updates}


def trainingEntries(training: dict[str, Any]) -> dict[str, Any]:
    """
    :param training: from :func:`resolveTraining`
    :return: the exp_config entries it gives: batch_size always, the others only when they apply (so that a model
        trained without them keeps the exp_config, hence the recipe, it had before they existed); ``pair_frames``
        "same" with pairs of two views of each frame (curl: a recipe apart from any curl model that lacks it)
    """
    entries: dict[str, Any] = {"batch_size": training["batch_size"]}
    if training["augment"] != "none":
        entries["augment"] = training["augment"]
    if training.get("shift_pad") not in (None, PAD):  # (a model shifted by PAD keeps the recipe it had before)
        entries["shift_pad"] = training["shift_pad"]
    for key in ("horizon", "tau", "updates"):
        if training[key] is not None and (key != "horizon" or training["tau"] is not None or training[key] != 1):
            entries[key] = training[key]
    if training["horizon"] == 0:
        entries["pair_frames"] = "same"
    return entries
