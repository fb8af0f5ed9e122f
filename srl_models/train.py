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
What they choose (the model, its losses, the loss-driven settings) comes from :mod:`srl_models.train_choices`, the
dataset's checks and the sizes of the heads from :mod:`srl_models.train_data`; this module trains and writes.
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
from srl_models.augment import PAD
from srl_models.base import DATASET_ENV_KEY, DATASET_FINGERPRINT_KEY, EXP_CONFIG_FILE
from srl_models.evaluate import evaluateModel, summaryLine
from srl_models.losses import LOSSES
from srl_models.pca import PCAModel
from srl_models.plotting import reconstructions, trainingCurve
from srl_models.train_choices import (
    foregroundWeight,
    resolveModel,
    resolveTraining,
    trainableModels,
    trainingEntries,
    trainsLoss,
)
from srl_models.train_config import SRLTrainConfig
from srl_models.train_data import checkDataset, checkHorizon, datasetSizes, rewardClassOf
from srl_models.trainer import (
    TrainingData,
    TrainSettings,
    bestEpoch,
    heldOutNotes,
    monitorVal,
    splitEpisodes,
    trainingPlan,
    trainNetwork,
)
from srl_toolbox.cli import CLIParser, UsageError, checkWritableFolder, runCommand
from srl_toolbox.devices import checkedDevice
from srl_toolbox.files import FolderVanished, checkFolderStays, newFolder, writeJson
from srl_toolbox.settings import addSettingFlags, checkedSettings, settingsFromNamespace

N_RECONSTRUCTIONS = 8


def modelFolder(log_folder: str, data_folder: str, name: str, state_dim: int, seed: int) -> str:
    """
    :param log_folder: root of the model folders
    :param data_folder: the dataset folder (its name is used)
    :param name: the registered model name
    :param state_dim: size of the state
    :param seed: the seed
    :return: ``<log_folder>/<dataset name>/<YY-MM-DD_HHhMM_SS>_<name>_ST_DIM<N>_SEED<S>``, the name of the new
        model folder when free (:func:`srl_toolbox.files.newFolder` makes it, with a suffix _2, _3 ... when a training
        of the same second has it)
    """
    dataset_name = os.path.basename(os.path.normpath(data_folder))
    return os.path.join(log_folder, dataset_name,
                        f"{time.strftime('%y-%m-%d_%Hh%M_%S')}_{name}_ST_DIM{state_dim}_SEED{seed}")


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
    parser.addValueChoices({"--srl-model": ("models", trainableModels())})
    return addSettingFlags(parser, SRLTrainConfig, {"{models}": ", ".join(trainableModels()),
                                                    "{losses}": ", ".join(LOSSES)})


def _epochsWithUpdates(epochs: int, updates: int) -> str:
    """:return: why --epochs and --updates are not given together"""
    return f"--epochs {epochs} with --updates {updates}: --updates counts the optimiser steps instead of epochs; " \
           "give one of them"


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
        raise UsageError(f"--beta {config.beta:g} must be a finite number >= 0")
    if config.foreground_weight is not None and not (math.isfinite(config.foreground_weight)
                                                     and config.foreground_weight >= 0):
        raise UsageError(f"--foreground-weight {config.foreground_weight:g} must be a finite number >= 0")
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
    checkEpochsGiven(config)
    return trainFromConfig(config)


def checkEpochsGiven(config: SRLTrainConfig) -> None:
    """
    The command's and the Python API's check (not prepare's: it passes its epochs to every model it lists, recorded
    as before in the recipe).

    :raises UsageError: epochs other than the default given to a model that trains no loss
    """
    if config.srl_model is not None and not trainsLoss(config.srl_model) and config.epochs != SRLTrainConfig.epochs:
        raise UsageError(f"--epochs {config.epochs}: --srl-model {config.srl_model} trains no loss (no epochs, no "
                         "minibatches, no optimiser steps); leave --epochs out")


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
                         f"({len(train_rows)}): give a --state-dim of at most {len(train_rows)}")
    negatives = any(LOSSES[loss].NEGATIVES for loss in losses)
    checkHorizon(dataset, train_rows, training["horizon"], negatives)

    exp_config = {"srl_model": name, "state_dim": state_dim, "img_shape": list(dataset.img_shape),
                  "env": dataset.env_id, "renderer": dataset.renderer, "losses": losses,
                  **({"split_dims": split} if split else {}),
                  "data_folder": os.path.abspath(config.data_folder), DATASET_FINGERPRINT_KEY: dataset.fingerprint(),
                  DATASET_ENV_KEY: dataset.frameSettings(),
                  "seed": config.seed, "epochs": config.epochs,
                  **trainingEntries(training), "learning_rate": config.learning_rate, "beta": config.beta,
                  "foreground_weight": foregroundWeight(config, name, losses),
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

    # made here, so that two trainings of the same second never share it; an error (Ctrl-C too) removes the folder,
    # and the parents made for it: one with a model but no outputs would look finished; a folder gone meanwhile
    # (FolderVanished) leaves nothing of ours at that path
    with newFolder(modelFolder(config.log_folder, config.data_folder, name, state_dim, config.seed),
                   keep=(FolderVanished,)) as folder:
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
                             shift_pad=training.get("shift_pad") or PAD,
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
    early = stoppedEarly(epochs, updates, config.epochs, training["updates"])
    print(f"Loss ({monitored}): epoch 1 {first[monitored]['total']:.5g}"
          + (f" -> epoch {epochs} {last[monitored]['total']:.5g}" if epochs > 1 else "")
          + f"; kept epoch {best} ({kept[monitored]['total']:.5g}); {epochs} epoch{'s' * (epochs != 1)}, {updates} "
          f"update{'s' * (updates != 1)} of at most {settings.batch_size} frames run"
          + (f" (stopped early: no better loss in {config.patience} epoch{'s' * (config.patience != 1)})" if early
             else ""))
    return history


def stoppedEarly(epochs: int, updates: int, epochs_asked: int, updates_asked: int | None) -> bool:
    """
    :param epochs: epochs run
    :param updates: optimiser steps run
    :param epochs_asked: --epochs (unused with --updates)
    :param updates_asked: --updates, None when the epochs count
    :return: whether early stopping ended the training before the epochs or updates asked for
    """
    return epochs < epochs_asked if updates_asked is None else updates < updates_asked


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
