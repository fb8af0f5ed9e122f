"""python -m srl_models.train: train an SRL model on a dataset and write its model folder.

    python -m srl_models.train --data-folder data/NAME --losses vae:1 inverse:10 --state-dim 32 --epochs 30
    python -m srl_models.train --data-folder data/NAME --srl-model vae

Every input is checked before an image is read or a file written; then the images are loaded once into memory, the
episodes split into training and validation, the model trained with early stopping on the validation loss, and the
folder written: exp_config.json, the weights, training_curve.png, reconstructions.png (models that decode), then the
evaluation (srl_models.evaluate) unless --no-eval. The last line printed is ``Model folder: PATH``. A model folder
deleted or moved once its exp_config.json is written stops the command before its next file (one line, exit 1),
rather than let that file make the folder again without its model. An error while the folder is written (a plugin
model whose getState raises, Ctrl-C) removes it, and the parent folders this run made for it (``--log-folder``, its
dataset's folder) when they are left empty, so that a model folder holds a finished model. A kill (SIGKILL)
during a save leaves the save's temporary file (``.reconstructions.<8 hex>.tmp.png``, ...) in the folder of that
unfinished model; no later training writes into it (each makes a new folder), so it stays until the folder is
deleted. exp_config.json records the env settings that drew the dataset's frames (``dataset_env``: random target,
action kind, force_down), which rl_baselines.train compares with a run's (one warning when they differ).

The settings are one :class:`srl_models.train_config.SRLTrainConfig`: the parser is generated from it, and
:func:`trainFromConfig` trains from one built in Python (the command line is parse -> config -> the same function).
"""
from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from environments.dataset import Dataset
from srl_models.backbone import checkImageSize
from srl_models.base import DATASET_ENV_KEY, DATASET_FINGERPRINT_KEY, EXP_CONFIG_FILE
from srl_models.config import preparable
from srl_models.evaluate import evaluateModel, summaryLine
from srl_models.losses import LOSSES
from srl_models.models import LearnedSRLModel
from srl_models.pca import PCAModel
from srl_models.plotting import reconstructions, trainingCurve
from srl_models.registry import failedSRLPlugins, registeredSRL
from srl_models.train_config import DEFAULT_BATCH_SIZE, DEFAULT_STATE_DIM, SRLTrainConfig
from srl_models.trainer import (
    TrainingData,
    TrainSettings,
    bestEpoch,
    episodeLengths,
    framesAfter,
    heldOutNotes,
    monitorVal,
    splitEpisodes,
    tooFewAnchors,
    trainingPlan,
    trainNetwork,
)
from srl_toolbox.cli import CLIParser, UsageError, checkWritableFolder, runCommand
from srl_toolbox.devices import checkedDevice
from srl_toolbox.files import FolderVanished, checkFolderStays, removedOnError, writeJson
from srl_toolbox.settings import addSettingFlags, checkedSettings, settingsFromNamespace

N_RECONSTRUCTIONS = 8
MAX_REWARD_CLASSES = 10  # more distinct rewards (shaped rewards): quantile bins


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
    value = _number(raw, what)
    if not value.is_integer() or value <= 0:
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
            raise UsageError(f"--state-dim {state_dim} is too small to split between {len(losses)} losses")
    return name, losses, split, state_dim


def foregroundWeight(config: SRLTrainConfig, name: str) -> float:
    """
    :param config: the training's settings
    :param name: the model trained (from :func:`resolveModel`)
    :return: --foreground-weight, else the model's default (srl_combination: 30; every other model: 0)
    """
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
    :return: {"batch_size", "augment", "horizon" (None: no pairs), "tau" (None: no momentum target), "updates"}; the
        exp_config records batch_size, and each other entry when it is not None (augment: when not "none")
    :raises UsageError: --augment, --updates, --learning-rate, --batch-size or --patience without a loss (pca, random;
        srl_models.train's command line refuses --epochs too), --foreground-weight without a reconstruction loss,
        losses that need pairs at different distances, --horizon or --tau for losses that do not read them, a
        contrastive loss with a minibatch that cannot hold a negative, curl without augmentation
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
    contrastive = [name for name, loss in classes.items() if loss.NEGATIVES]
    if contrastive and batch_size < 2:
        raise UsageError(f"--batch-size {batch_size}: the {contrastive[0]} loss contrasts each frame with the other "
                         f"frames of its minibatch, which needs 2 or more (its default: "
                         f"{LOSSES[contrastive[0]].DEFAULTS.get('batch_size', DEFAULT_BATCH_SIZE)})")
    augment = config.augment or _lossDefault(losses, "augment") or "none"
    if augment == "none" and any(loss.PAIRS and loss.HORIZON == 0 for loss in classes.values()):
        raise UsageError("--augment none: the curl loss contrasts two augmentations of one frame, without augmentation "
                         "they are the same image; choose --augment shift")
    return {"batch_size": int(batch_size), "augment": augment, "horizon": horizon, "tau": tau,
            "updates": config.updates}


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
    for key in ("horizon", "tau", "updates"):
        if training[key] is not None and (key != "horizon" or training["tau"] is not None or training[key] != 1):
            entries[key] = training[key]
    if training["horizon"] == 0:
        entries["pair_frames"] = "same"
    return entries


def checkHorizon(dataset: Dataset, train_rows: np.ndarray, horizon: int | None, negatives: bool) -> None:
    """
    :param dataset: the dataset
    :param train_rows: its training rows
    :param horizon: the pairs' distance (None: no pairs; 0: two views of each frame)
    :param negatives: a loss contrasts the rows of a minibatch (needs 2 of them)
    :raises UsageError: fewer training frames with a partner ``horizon`` frames later in their episode than the losses
        need (1; 2 for contrast), with the largest horizon that has enough, or, at horizon 0 or 1, what to record
    """
    if horizon is None:
        return
    starts = dataset["episode_starts"]
    after = np.sort(framesAfter(starts)[train_rows])[::-1]  # frames after each training frame in its episode
    needed = 2 if negatives else 1
    anchors = int((after >= horizon).sum())
    if anchors < needed and horizon <= 1:  # no shorter horizon to suggest: too few frames
        raise UsageError(tooFewAnchors(anchors, horizon, negatives, held_out=len(train_rows) < len(starts)))
    if anchors < needed:
        longest = int(episodeLengths(starts).max()) if len(starts) else 0
        largest = int(after[needed - 1]) if len(after) >= needed else 0  # the largest horizon with enough anchors
        choice = f"choose a horizon of at most {largest}" if largest >= 1 else "record longer episodes"
        raise UsageError(f"--horizon {horizon} is longer than the dataset's episodes allow (the longest has {longest} "
                         f"frames; {anchors} training frames have a frame {horizon} steps later, {needed} needed): "
                         f"{choice}")


def checkDataset(path: str, losses: dict[str, float]) -> Dataset:
    """
    :param path: the --data-folder
    :param losses: the losses to train
    :return: the opened dataset, holding every array the losses need
    :raises UsageError: missing folder, not a dataset, a needed array missing or another refusal of a loss (e.g.
        continuous actions for robotic_priors), images too small
    """
    try:
        dataset = Dataset.open(path)
        dataset.require("images_path", "episode_starts", purpose="SRL training")
        for loss in losses:
            LOSSES[loss].checkDataset(dataset)
        checkImageSize(dataset.img_shape)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if len(dataset) == 0:
        raise UsageError(f"dataset {path!r} is empty")
    return dataset


def datasetSizes(dataset: Dataset, losses: dict[str, float]) -> dict[str, Any]:
    """
    :param dataset: the dataset
    :param losses: the losses to train
    :return: exp_config entries the heads are sized from: continuous_actions, n_actions or action_dim,
        reward_classes or reward_bins, ground_truth_dim
    """
    sizes: dict[str, Any] = {"continuous_actions": dataset.continuous_actions}
    if dataset.has("actions"):
        actions = dataset["actions"]
        if actions.ndim == 2:
            sizes["action_dim"] = int(actions.shape[1])
        else:
            sizes["n_actions"] = int(actions.max()) + 1
    if dataset.has("rewards"):
        sizes.update(rewardClasses(dataset["rewards"]))
    if "supervised" in losses:
        sizes["ground_truth_dim"] = int(dataset.states().shape[1])
        if dataset.targetMoves() and bool(dataset.config.get("relative_pos", True)):
            # the state it learns follows a moving target row by row (older datasets held its start only): recorded,
            # so the model's recipe differs from one trained on such a dataset before, and its runs are not reused
            sizes["relative_to"] = "the target at each frame"
    elif dataset.has("ground_truth_states"):
        sizes["ground_truth_dim"] = int(dataset["ground_truth_states"].shape[1])
    return sizes


def rewardClasses(rewards: np.ndarray) -> dict[str, list[float]]:
    """
    :param rewards: the dataset's rewards
    :return: {"reward_classes": the distinct values} when there are at most MAX_REWARD_CLASSES (sparse rewards),
        else {"reward_bins": the inner edges of MAX_REWARD_CLASSES quantile bins} (shaped, continuous rewards)
    """
    values = np.unique(rewards)
    if len(values) <= MAX_REWARD_CLASSES:
        return {"reward_classes": [float(value) for value in values]}
    edges = np.unique(np.quantile(rewards, np.linspace(0, 1, MAX_REWARD_CLASSES + 1)[1:-1]))
    return {"reward_bins": [float(edge) for edge in edges]}


def rewardClassOf(rewards: np.ndarray, exp_config: dict[str, Any]) -> np.ndarray:
    """
    :param rewards: rewards
    :param exp_config: holding "reward_classes" or "reward_bins" (from rewardClasses)
    :return: the class of each reward
    """
    if "reward_bins" in exp_config:
        return np.searchsorted(np.asarray(exp_config["reward_bins"]), rewards, side="right")
    return np.searchsorted(np.asarray(exp_config["reward_classes"]), rewards)


def modelFolder(log_folder: str, data_folder: str, name: str, state_dim: int, seed: int) -> str:
    """
    :param log_folder: root of the model folders
    :param data_folder: the dataset folder (its name is used)
    :param name: the registered model name
    :param state_dim: size of the state
    :param seed: the seed
    :return: ``<log_folder>/<dataset name>/<YY-MM-DD_HHhMM_SS>_<name>_ST_DIM<N>_SEED<S>`` (a suffix _2, _3 ... when
        a run of the same second exists)
    """
    dataset_name = os.path.basename(os.path.normpath(data_folder))
    stem = os.path.join(log_folder, dataset_name,
                        f"{time.strftime('%y-%m-%d_%Hh%M_%S')}_{name}_ST_DIM{state_dim}_SEED{seed}")
    folder, n = stem, 1
    while os.path.exists(folder):
        n += 1
        folder = f"{stem}_{n}"
    return folder


def seedEverything(seed: int) -> None:
    """:param seed: seeds python, numpy and torch"""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def buildParser() -> argparse.ArgumentParser:
    """:return: the command-line parser, generated from :class:`SRLTrainConfig`"""
    parser = CLIParser(prog="python -m srl_models.train",
                       description="Train a state representation (SRL) model on a dataset recorded with "
                                   "python -m environments.dataset_generator.")
    return addSettingFlags(parser, SRLTrainConfig, {"{models}": ", ".join(trainableModels()),
                                                    "{losses}": ", ".join(LOSSES)})


def _epochsWithUpdates(epochs: int, updates: int) -> str:
    """:return: why --epochs and --updates are not given together"""
    return f"--epochs {epochs} with --updates {updates}: --updates counts the optimiser steps instead of epochs; give " \
           "one of them"


def parseConfig(argv: Sequence[str] | None = None) -> SRLTrainConfig:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: the settings they give
    :raises UsageError: a flag the parser refuses, --epochs with --updates (one of them counts the training)
    """
    parser = buildParser()
    default_epochs = parser.get_default("epochs")
    parser.set_defaults(epochs=None)  # so that a given --epochs can be told from the default
    args = parser.parse_args(argv)
    if args.epochs is not None and args.updates is not None:
        raise UsageError(_epochsWithUpdates(args.epochs, args.updates))
    if args.epochs is None:
        args.epochs = default_epochs
    return settingsFromNamespace(SRLTrainConfig, args)


def checkSettings(config: SRLTrainConfig) -> SRLTrainConfig:
    """
    :param config: the training's settings, parsed or built in Python
    :return: the same settings, each flag's value read by its flag's parser (a Python value the command line would
        refuse is refused)
    :raises UsageError: a missing --data-folder, a value a flag refuses, --epochs with --updates, learning rate,
        beta, val split or patience
        out of range
    """
    config = checkedSettings(config)  # a value given in Python is refused where the command line would refuse it
    if config.updates is not None and config.epochs != SRLTrainConfig.epochs:
        raise UsageError(_epochsWithUpdates(config.epochs, config.updates))
    if not (math.isfinite(config.learning_rate) and config.learning_rate > 0):
        raise UsageError(f"--learning-rate {config.learning_rate:g} must be a positive number")
    if not (math.isfinite(config.beta) and config.beta >= 0):
        raise UsageError(f"--beta {config.beta:g} must be >= 0")
    if config.foreground_weight is not None and not (math.isfinite(config.foreground_weight)
                                                     and config.foreground_weight >= 0):
        raise UsageError(f"--foreground-weight {config.foreground_weight:g} must be >= 0")
    if not 0 <= config.val_split < 1:
        raise UsageError(f"--val-split {config.val_split:g} must be in [0, 1)")
    if config.patience < 0:
        raise UsageError(f"--patience {config.patience} must be >= 0")
    return config


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    """
    folder = trainFromArgs(argv)
    print(f"Model folder: {folder}")
    return 0


def trainFromArgs(argv: Sequence[str] | None = None) -> str:
    """
    Everything the command does but the last line.

    :param argv: command-line arguments
    :return: the new model folder
    :raises UsageError: bad input (nothing written)
    """
    config = parseConfig(argv)
    # (on the command line only: prepare passes its epochs to every model it lists, recorded as before in the recipe)
    if config.srl_model is not None and not trainsLoss(config.srl_model) and config.epochs != SRLTrainConfig.epochs:
        raise UsageError(f"--epochs {config.epochs}: --srl-model {config.srl_model} trains no loss (no epochs, no "
                         "minibatches, no optimiser steps); leave --epochs out")
    return trainFromConfig(config)


def trainFromConfig(config: SRLTrainConfig) -> str:
    """
    Check the settings, train the model, write and evaluate its folder.

    :param config: the training's settings
    :return: the new model folder
    :raises UsageError: bad input (nothing written)
    """
    config = checkSettings(config)
    checkWritableFolder(config.log_folder, "--log-folder")
    name, losses, split, state_dim = resolveModel(config)
    training = resolveTraining(config, losses)
    device = torch.device(checkedDevice(config.device))
    dataset = checkDataset(config.data_folder, losses)
    model_class = trainableModels()[name]
    sizes = datasetSizes(dataset, losses)
    if config.state_dim is None and list(losses) == ["supervised"] and not split:
        state_dim = sizes["ground_truth_dim"]  # one state dimension per ground-truth dimension by default
    episodes = dataset.episodeIndex()
    train_rows, val_rows = splitEpisodes(episodes, config.val_split, config.seed)
    if issubclass(model_class, PCAModel) and state_dim > len(train_rows):
        raise UsageError(f"--state-dim {state_dim}: PCA cannot find more components than training images "
                         f"({len(train_rows)})")
    negatives = any(LOSSES[loss].NEGATIVES for loss in losses)
    checkHorizon(dataset, train_rows, training["horizon"], negatives)

    exp_config = {"srl_model": name, "state_dim": state_dim, "img_shape": list(dataset.img_shape),
                  "env": dataset.env_id, "renderer": dataset.renderer, "losses": losses,
                  **({"split_dims": split} if split else {}),
                  "data_folder": os.path.abspath(config.data_folder), DATASET_FINGERPRINT_KEY: dataset.fingerprint(),
                  DATASET_ENV_KEY: dataset.frameSettings(),
                  "seed": config.seed, "epochs": config.epochs,
                  **trainingEntries(training), "learning_rate": config.learning_rate, "beta": config.beta,
                  "foreground_weight": foregroundWeight(config, name),
                  "val_split": config.val_split, "patience": config.patience, **sizes}
    seedEverything(config.seed)
    try:
        images = dataset.loadImages()
    except ValueError as error:  # a missing or unreadable image file
        raise UsageError(str(error)) from None
    print(f"Dataset {config.data_folder}: {len(images)} frames {dataset.img_shape}, {len(train_rows)} for training, "
          f"{len(val_rows)} for validation; model {name}, losses "
          f"{' '.join(f'{k}:{v:g}' for k, v in losses.items()) or 'none'}, state dim {state_dim}; "
          f"{trainingPlan(losses, training, config.epochs)}")
    for note in heldOutNotes(episodes, dataset["episode_starts"], val_rows, config.val_split, training["horizon"],
                             negatives) if losses else []:
        print(note)
    model = model_class(state_dim, dataset.img_shape, exp_config, device=str(device))
    history = fitModel(model, dataset, images, train_rows, val_rows, config, device, training)

    folder = modelFolder(config.log_folder, config.data_folder, name, state_dim, config.seed)
    # an error (Ctrl-C too) removes the folder, and the parents made for it: one with a model but no outputs would
    # look finished; a folder gone meanwhile (FolderVanished) leaves nothing of ours at that path
    with removedOnError(folder, keep=(FolderVanished,)):
        model.save(folder)
        writeOutputs(model, folder, history, images, val_rows if len(val_rows) else train_rows, config.seed)
        if not config.no_eval:
            checkModelFolder(folder)
            evaluate(folder, progress=not config.no_progress)
        checkModelFolder(folder)  # (an evaluation finds no model in a folder gone meanwhile: a warning, not this line)
    return folder


def checkModelFolder(folder: str) -> None:
    """
    :param folder: the model folder being written (its exp_config.json saved)
    :raises srl_toolbox.files.FolderVanished: it was deleted or moved meanwhile (one line, exit 1)
    """
    checkFolderStays(folder, EXP_CONFIG_FILE, "the model folder", "being written")


def fitModel(model: Any, dataset: Dataset, images: np.ndarray, train_rows: np.ndarray, val_rows: np.ndarray,
             config: SRLTrainConfig, device: torch.device, training: dict[str, Any] | None = None) -> list[dict]:
    """
    Train ``model`` in place (PCA: fit; random: nothing) and record the result in its exp_config.

    :param model: a LearnedSRLModel or PCAModel, built from its exp_config
    :param dataset: the dataset (its arrays)
    :param images: its images, uint8 (n, H, W, C)
    :param train_rows: training rows
    :param val_rows: validation rows
    :param config: the training's settings (epochs, learning rate, patience, seed, progress)
    :param device: where the images and the network live
    :param training: from :func:`resolveTraining` (default: resolved from ``config`` and the model's losses)
    :return: the per-epoch history (empty for PCA and random)
    """
    if isinstance(model, PCAModel):
        train_error = model.fit(images[train_rows], seed=config.seed)
        val_error = model.reconstructionError(images[val_rows]) if len(val_rows) else None
        model.exp_config.update(train_loss=train_error, val_loss=val_error)
        print(f"PCA reconstruction MSE: train {train_error:.5f}"
              + (f", validation {val_error:.5f}" if val_error is not None else ""))
        return []
    if not model.TRAINABLE:
        return []
    sizes = model.exp_config
    rewards = rewardClassOf(dataset["rewards"], sizes) if dataset.has("rewards") else None
    ground_truth = None
    if "supervised" in sizes["losses"]:
        states = dataset.states()
        ground_truth = (states - states.mean(0)) / np.maximum(states.std(0), 1e-6)
    data = TrainingData(images, dataset["episode_starts"], device,
                        actions=dataset["actions"] if dataset.has("actions") else None, rewards=rewards,
                        ground_truth=ground_truth)
    training = training or resolveTraining(config, sizes["losses"])
    settings = TrainSettings(epochs=config.epochs, batch_size=training["batch_size"],
                             learning_rate=config.learning_rate, patience=config.patience, seed=config.seed,
                             progress=not config.no_progress, updates=training["updates"], augment=training["augment"],
                             tau=training["tau"] or 0.0,  # horizon None: no pairs (1: unused); curl's 0 kept
                             horizon=1 if training["horizon"] is None else training["horizon"])
    try:
        history = trainNetwork(model.network, data, train_rows, val_rows, settings)
    except ValueError as error:
        raise UsageError(str(error)) from None
    best = bestEpoch(history, model.network)
    monitored = "val" if monitorVal(model.network, history[0]["val"]) else "train"
    model.exp_config.update(epochs_trained=len(history), updates_trained=history[-1]["updates"], best_epoch=best,
                            selected_on=monitored, train_loss=history[best - 1]["train"],
                            val_loss=history[best - 1]["val"])
    first, kept, last = history[0], history[best - 1], history[-1]
    epochs, updates = len(history), last["updates"]
    print(f"Loss ({monitored}): epoch 1 {first[monitored]['total']:.5g}"
          + (f" -> epoch {epochs} {last[monitored]['total']:.5g}" if epochs > 1 else "")
          + f"; kept epoch {best} ({kept[monitored]['total']:.5g}); {epochs} epoch{'s' * (epochs != 1)}, {updates} "
          f"update{'s' * (updates != 1)} of at most {settings.batch_size} frames run"
          + (f" (stopped early: no better loss in {config.patience} epochs)"
             if training["updates"] is None and epochs < config.epochs else ""))
    return history


def writeOutputs(model: Any, folder: str, history: list[dict], images: np.ndarray, rows: np.ndarray,
                 seed: int) -> None:
    """
    training_curve.png, training_history.json (trained models) and reconstructions.png (models that decode), each
    after :func:`checkModelFolder`.

    :param model: the trained model
    :param folder: its folder
    :param history: per-epoch losses
    :param images: the dataset's images
    :param rows: rows to show reconstructions of (validation rows when there are)
    :param seed: which rows
    """
    if history:
        config = model.exp_config
        checkModelFolder(folder)
        trainingCurve(history, os.path.join(folder, "training_curve.png"), config.get("best_epoch"),
                      title=f"{config.get('srl_model')} (state dim {config.get('state_dim')}) on "
                            f"{os.path.basename(str(config.get('data_folder', '')))}")
        checkModelFolder(folder)
        writeJson(os.path.join(folder, "training_history.json"), history, sort_keys=False)
    if model.DECODES:
        checkModelFolder(folder)
        shown = np.sort(np.random.default_rng(seed).choice(rows, min(N_RECONSTRUCTIONS, len(rows)), replace=False))
        originals = images[shown]
        reconstructions(originals, model.decode(model.getState(originals)), os.path.join(folder,
                                                                                          "reconstructions.png"))


def evaluate(folder: str, progress: bool = True) -> None:
    """
    Run the evaluation (GTC, KNN-MSE, linear probe, plots) on the new model folder and print its figures. A dataset
    that cannot be evaluated (no ground truth, too few frames) costs a warning: the model itself is saved and usable.

    :param folder: the model folder
    :param progress: show a progress bar while encoding
    """
    try:
        results = evaluateModel(folder, progress=progress)
    except ValueError as error:
        print(f"warning: evaluation skipped: {error}", file=sys.stderr)
        return
    print(summaryLine(results))


if __name__ == "__main__":
    runCommand(main, sys.argv[1:])
