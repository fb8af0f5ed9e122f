"""The dataset side of an SRL training: whether a dataset folder holds what the losses need (:func:`checkDataset`,
:func:`checkHorizon`), the exp_config entries the model's heads are sized from (:func:`datasetSizes`), and the classes
the reward loss predicts (:func:`rewardClasses`, :func:`rewardClassOf`).

Invariants: the checks read the dataset's config and arrays, never its images, so that ``srl_models.train`` refuses a
dataset (one :class:`srl_toolbox.cli.UsageError`) before an image is loaded or a file written; :func:`rewardClassOf`
maps rewards with the classes or bins that :func:`rewardClasses` put in a model's exp_config, so a model reads the
rewards of any dataset as it read those it trained on.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from environments.dataset import Dataset
from srl_models.backbone import checkImageSize
from srl_models.losses import LOSSES
from srl_models.trainer import framesAfter, tooFewAnchors
from srl_toolbox.cli import UsageError

MAX_REWARD_CLASSES = 10  # more distinct rewards (shaped rewards): quantile bins


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
        # a held-out episode gives no anchor: the training episodes' longest is the one that bounds the horizon
        longest = int(after[0]) + 1 if len(after) else 0
        largest = int(after[needed - 1]) if len(after) >= needed else 0  # the largest horizon with enough anchors
        choice = f"choose a horizon of at most {largest}" if largest >= 1 else "record longer episodes"
        frames = "1 training frame has" if anchors == 1 else f"{anchors} training frames have"
        raise UsageError(f"--horizon {horizon} is longer than the dataset's episodes allow (the longest training "
                         f"episode has {longest} frames; {frames} a frame {horizon} steps later, {needed} needed): "
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
