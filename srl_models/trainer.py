"""The training loop of the learned SRL models: the dataset in memory, an episode-wise validation split, minibatches of
(s_t[, s_t+h]) rows, Adam, early stopping on the validation losses with the best epoch's weights kept; and the
wording of what a training does (its header's plan, its notes on what is held out), which srl_models.train prints
for itself and for prepare.

Invariants: a pair (t, t + h) always lies within one episode (rows whose episode ends before t + h are never
anchors); each view of a minibatch (the frames t, the frames t + h) is augmented on its own, and never the stored
images (the foreground mask of the frames t, found on the stored frames, is shifted with them); with the momentum
target of a contrastive loss, the target moves by tau after each optimiser step; the number of optimiser steps is
``updates`` when given, else ``epochs`` times the minibatches of an epoch. Without augmentation and with h = 1 a
training draws the random numbers it drew before these options existed.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from srl_models.augment import AUGMENTATIONS, PAD, Augmentation, makeAugmentation
from srl_models.losses import Batch, foregroundMask
from srl_models.network import SRLNetwork
from srl_toolbox.optimizers import multiTensorSteps

# Frames the background (per-pixel median) of the reconstruction losses is taken from: enough for a moving robot to
# leave every pixel most of the time.
BACKGROUND_FRAMES = 1000


def heldOutEpisodeCount(n_episodes: int, val_split: float) -> int:
    """
    :param n_episodes: episodes of a dataset
    :param val_split: fraction of them held out
    :return: how many :func:`splitEpisodes` holds out: the fraction rounded, at least one when > 0 (of 2 or more
        episodes), never all
    """
    n_val = int(round(val_split * n_episodes))
    if val_split > 0 and n_episodes >= 2:
        n_val = max(1, n_val)
    return min(n_val, max(n_episodes - 1, 0))


def splitNote(n_episodes: int, val_split: float, n_val_rows: int, n_rows: int) -> str | None:
    """
    :param n_episodes: episodes of the dataset
    :param val_split: the asked fraction of episodes to hold out
    :param n_val_rows: frames :func:`splitEpisodes` held out
    :param n_rows: frames of the dataset
    :return: a note when whole episodes make the held-out part differ from ``val_split`` (one episode at least
        of 2 or more, never all), or leave nothing held out (the best epoch is then chosen by training loss); None
        when it is the fraction asked (rounded) or no validation was asked
    """
    n_val = heldOutEpisodeCount(n_episodes, val_split)
    if val_split <= 0 or (n_val > 0 and n_val == int(round(val_split * n_episodes))):
        return None
    if n_val == 0:
        return (f"note: --val-split {val_split:g} holds out whole episodes and the dataset has {n_episodes} "
                f"episode{'s' * (n_episodes != 1)}: nothing is held out, the best epoch is chosen by training loss")
    return (f"note: --val-split {val_split:g} holds out whole episodes: {n_val} of {n_episodes} episodes "
            f"({n_val_rows} of {n_rows} frames, {100 * n_val_rows / max(n_rows, 1):.0f}%)")


def pairsText(horizon: int | None) -> str:
    """
    :param horizon: the distance of a training's pairs (None: no pairs; 0: the same frame twice, each view augmented
        on its own)
    :return: what its pairs are, as its header and notes name them ("" without pairs)
    """
    if horizon is None:
        return ""
    return "two views of each frame" if horizon == 0 else f"pairs at horizon {horizon}"


def trainingPlan(losses: dict[str, float], training: dict, epochs: int) -> str:
    """
    :param losses: the losses trained (name -> weight; none for pca and random)
    :param training: srl_models.train_choices.resolveTraining's settings (batch_size, augment, horizon, tau, updates)
    :param epochs: the most epochs (without updates)
    :return: the header's account of the training: how long, on which minibatches, views and pairs
    """
    if not losses:
        return "no gradient updates (no loss to train)"
    updates = training["updates"]
    length = f"{updates} update{'s' * (updates != 1)}" if updates else f"at most {epochs} epoch{'s' * (epochs != 1)}"
    tau = "" if training["tau"] is None else f"momentum target tau {training['tau']:g}"
    pad = training.get("shift_pad")
    augment = f"augment {training['augment']}"
    if pad not in (None, PAD):
        augment += f" (up to {pad} pixel{'s' * (pad != 1)})"
    parts = [f"{length} of minibatches of {training['batch_size']}", augment,
             pairsText(training["horizon"]), tau]
    return ", ".join(part for part in parts if part)


def validationNote(val_after: np.ndarray, horizon: int | None, negatives: bool) -> str | None:
    """
    :param val_after: for each held-out frame, how many later frames of its episode follow it (:func:`framesAfter`)
    :param horizon: the pairs' distance (None: no pairs, each frame on its own; 0: two views of each frame)
    :param negatives: a loss contrasts the rows of a minibatch (a validation minibatch needs 2)
    :return: a note when frames are held out and yet give no validation minibatch (too few of them start a pair at
        that horizon, as :meth:`TrainingData.anchors` picks them): the best epoch is then chosen by training loss;
        None otherwise
    """
    n_rows = len(val_after)
    usable = n_rows if horizon is None else int((np.asarray(val_after) >= horizon).sum())
    needed = 2 if negatives else 1
    if n_rows == 0 or usable >= needed:
        return None
    if horizon is None:
        held = f"{n_rows} held-out frame{'s' * (n_rows != 1)}"
    else:
        pairs = f"pair{'s' * (usable != 1)}" + (" of views" if horizon == 0 else f" at horizon {horizon}")
        held = f"the {n_rows} held-out frame{'s' * (n_rows != 1)} hold{'s' * (n_rows == 1)} {usable} {pairs}"
    return f"note: {held} ({needed} needed): the best epoch is chosen by training loss"


def tooFewAnchors(n_anchors: int, horizon: int | None, negatives: bool, held_out: bool = False) -> str | None:
    """
    :param n_anchors: training rows a minibatch may start from (:meth:`TrainingData.anchors`)
    :param horizon: the pairs' distance (None: no pairs; 0: two views of each frame)
    :param negatives: a loss contrasts the rows of a minibatch (it needs 2 of them)
    :param held_out: episodes are held out for validation (holding out fewer would give more)
    :return: why these anchors cannot train (one line, what to record instead), None when they can; a horizon above
        1 that could be lowered is srl_models.train_data.checkHorizon's refusal
    """
    needed = 2 if negatives else 1
    if n_anchors >= needed:
        return None
    if horizon is None or horizon == 0:
        what = f"{n_anchors} training frame{'s' * (n_anchors != 1)}"
    else:
        later = "a next frame" if horizon == 1 else f"a frame {horizon} steps later"
        what = f"{n_anchors} training frame{'s' * (n_anchors != 1)} {'has' if n_anchors == 1 else 'have'} {later} in " \
               f"{'its' if n_anchors == 1 else 'their'} episode"
    why = " (a contrastive loss compares each with the other rows of its minibatch)" if negatives else ""
    fewer = ", or hold out fewer (--val-split)" if held_out else ""
    return f"{what}, {needed} needed{why}: record more or longer episodes{fewer}"


def heldOutNotes(episode_index: np.ndarray, episode_starts: np.ndarray, val_rows: np.ndarray, val_split: float,
                 horizon: int | None, negatives: bool) -> list[str]:
    """
    :param episode_index: episode of each row
    :param episode_starts: bool (n,), True at each episode's first row
    :param val_rows: the rows :func:`splitEpisodes` held out
    :param val_split: the asked fraction of episodes to hold out
    :param horizon: the pairs' distance (None: no pairs)
    :param negatives: a loss contrasts the rows of a minibatch
    :return: the note lines of a training's header: :func:`splitNote`, then :func:`validationNote`
    """
    notes = [splitNote(len(np.unique(episode_index)), val_split, len(val_rows), len(episode_index)),
             validationNote(framesAfter(episode_starts)[val_rows], horizon, negatives)]
    return [note for note in notes if note]


def splitEpisodes(episode_index: np.ndarray, val_split: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """
    Hold out whole episodes (frames of one episode are nearly identical: a row-wise split would validate on the
    training set).

    :param episode_index: episode of each row
    :param val_split: fraction of the episodes held out (at least one when > 0, never all)
    :param seed: which episodes (deterministic)
    :return: (training rows, validation rows), sorted
    """
    n_episodes = int(episode_index.max()) + 1 if len(episode_index) else 0
    n_val = heldOutEpisodeCount(n_episodes, val_split)
    held_out = np.random.default_rng(seed).permutation(n_episodes)[:n_val]
    is_val = np.isin(episode_index, held_out)
    return np.flatnonzero(~is_val), np.flatnonzero(is_val)


class TrainingData:
    """
    A dataset's images (uint8, on the training device) and the arrays the losses read.

    :param images: uint8 (n, H, W, C)
    :param episode_starts: bool (n,)
    :param device: torch device
    :param actions: (n,) discrete or (n, action_dim) continuous actions
    :param rewards: (n,) reward class of each row
    :param ground_truth: float (n, ground_truth_dim), standardised
    """

    def __init__(self, images: np.ndarray, episode_starts: np.ndarray, device: torch.device,
                 actions: np.ndarray | None = None, rewards: np.ndarray | None = None,
                 ground_truth: np.ndarray | None = None) -> None:
        self.device = device
        # kept as uint8 (a quarter of float32's memory), converted per minibatch
        self.images = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).contiguous().to(device)
        self.frames_after = framesAfter(episode_starts)
        # the reconstruction losses' background when they weigh the foreground (set by trainNetwork): each view's
        # foreground is then found on its stored frame and augmented with it
        self.foreground_background: torch.Tensor | None = None
        self.arrays: dict[str, torch.Tensor] = {}
        if actions is not None:
            continuous = actions.ndim == 2
            self.arrays["actions"] = torch.as_tensor(actions, dtype=torch.float32 if continuous else torch.long)
        if rewards is not None:
            self.arrays["rewards"] = torch.as_tensor(rewards, dtype=torch.long)
        if ground_truth is not None:
            self.arrays["ground_truth"] = torch.as_tensor(ground_truth, dtype=torch.float32)
        self.arrays = {key: value.to(device) for key, value in self.arrays.items()}

    def anchors(self, rows: np.ndarray, horizon: int | None) -> np.ndarray:
        """
        :param rows: candidate rows
        :param horizon: keep only rows followed, ``horizon`` frames later, by a frame of the same episode (None:
            every row)
        :return: the rows a minibatch may start from
        """
        return rows if horizon is None else rows[self.frames_after[rows] >= horizon]

    def background(self, rows: np.ndarray, max_frames: int = BACKGROUND_FRAMES) -> torch.Tensor:
        """
        :param rows: the rows to take it from (the training rows)
        :param max_frames: at most this many, evenly spread over ``rows``
        :return: float (C, H, W) in [0, 1]: the per-pixel median, the scene without what moves in it
        """
        picked = rows[np.linspace(0, len(rows) - 1, min(len(rows), max_frames)).astype(int)]
        images = self.images[torch.as_tensor(picked, device=self.device)]
        return images.median(dim=0).values.float().div_(255.0)

    def rowArrays(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        """:param rows: rows
        :return: the arrays of these rows"""
        index = torch.as_tensor(rows, device=self.device)
        return {key: value[index] for key, value in self.arrays.items()}

    def _view(self, index: torch.Tensor, generator: torch.Generator | None,
              augment: Augmentation) -> tuple[torch.Tensor, torch.Tensor | None]:
        """
        :param index: rows
        :param generator: random numbers of the augmentation
        :param augment: the augmentation
        :return: (the rows' images in [0, 1], augmented; their foreground mask, augmented with them (the same shift),
            None without a foreground background); the stored images stay as they are
        """
        images = self.images[index].float().div_(255.0)
        if self.foreground_background is None:
            return augment(images, generator), None
        views = augment(torch.cat([images, foregroundMask(images, self.foreground_background)], dim=1), generator)
        return views[:, :-1], views[:, -1:]

    def batch(self, rows: np.ndarray, network: SRLNetwork, horizon: int | None, generator: torch.Generator | None,
              augment: Augmentation = AUGMENTATIONS["none"]) -> Batch:
        """
        :param rows: anchor rows (from :meth:`anchors` with the same horizon)
        :param network: encodes the images (one forward pass for s_t and s_t+h together)
        :param horizon: also encode the frames ``horizon`` rows later (None: no pairs)
        :param generator: random numbers for the augmentation and the losses
        :param augment: applied to each view on its own (a new tensor: the stored images stay as they are)
        :return: the encoded batch
        """
        index = torch.as_tensor(rows, device=self.device)
        images, foreground = self._view(index, generator, augment)
        arrays = self.rowArrays(rows)
        if horizon is None:
            features, states = network.encode(images)
            return Batch(images, features, states, network.encode, generator=generator,
                         actions=arrays.get("actions"), rewards=arrays.get("rewards"),
                         ground_truth=arrays.get("ground_truth"), foreground=foreground)
        next_images = augment(self.images[index + horizon].float().div_(255.0), generator)
        n = len(rows)
        if network.online_next:
            features, states = network.encode(torch.cat([images, next_images]))
            features, next_features, states, next_states = features[:n], features[n:], states[:n], states[n:]
        else:
            (features, states), next_features, next_states = network.encode(images), None, None
        target_states = network.encodeTarget(next_images) if network.target_encoder is not None else None
        return Batch(images, features, states, network.encode, next_images, next_features, next_states,
                     target_states=target_states, actions=arrays.get("actions"), rewards=arrays.get("rewards"),
                     ground_truth=arrays.get("ground_truth"), generator=generator, foreground=foreground)


def framesAfter(episode_starts: np.ndarray) -> np.ndarray:
    """
    :param episode_starts: bool (n,), True at each episode's first row
    :return: int (n,): how many later rows belong to the same episode as each row
    """
    starts = np.asarray(episode_starts, dtype=bool)
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    # the row after each episode's last row: the next start, or n
    ends = np.append(np.flatnonzero(starts[1:]) + 1, n)
    episode_end = ends[np.searchsorted(ends, np.arange(n), side="right")]
    return episode_end - np.arange(n) - 1


def episodeLengths(episode_starts: np.ndarray) -> np.ndarray:
    """:param episode_starts: bool (n,)
    :return: the number of frames of each episode, in order"""
    starts = np.flatnonzero(np.asarray(episode_starts, dtype=bool))
    if len(episode_starts) and (not len(starts) or starts[0] != 0):
        starts = np.insert(starts, 0, 0)
    return np.diff(np.append(starts, len(episode_starts)))


@dataclass
class TrainSettings:
    """
    :param epochs: maximum passes over the training rows (ignored when ``updates`` is given)
    :param batch_size: rows per minibatch
    :param learning_rate: Adam's step size
    :param patience: epochs without a better monitored loss before stopping (0: never stop early)
    :param seed: shuffling, augmentation and noise
    :param progress: show a tqdm bar
    :param updates: optimiser steps in all (None: ``epochs`` epochs); the last epoch stops after the last step
    :param horizon: pair distance h of the pair losses (rows t and t + h of one episode)
    :param augment: the augmentation of each view (srl_models.augment.AUGMENTATIONS)
    :param shift_pad: the ``shift`` augmentation's largest shift in pixels
    :param tau: the momentum target's step after each optimiser step (losses with a target encoder)
    """

    epochs: int = 30
    batch_size: int = 64
    learning_rate: float = 1e-3
    patience: int = 10
    seed: int = 0
    progress: bool = True
    updates: int | None = None
    horizon: int = 1
    augment: str = "none"
    shift_pad: int = PAD
    tau: float = 0.01


def _chunks(rows: np.ndarray, batch_size: int, negatives: bool) -> list[np.ndarray]:
    """:return: the minibatches of ``rows`` in order; with ``negatives``, a last one of a single row is left out (a
    contrastive loss has nothing to contrast it with)"""
    chunks = [rows[start:start + batch_size] for start in range(0, len(rows), batch_size)]
    return [chunk for chunk in chunks if len(chunk) >= 2] if negatives else chunks


def _meanTerms(network: SRLNetwork, data: TrainingData, chunks: list[np.ndarray], settings: TrainSettings,
               generator: torch.Generator | None, optimizer: torch.optim.Optimizer | None = None,
               bar: tqdm | None = None) -> dict[str, float]:
    """One pass over ``chunks`` (an optimisation step per minibatch when ``optimizer``, the momentum target moved
    after each): row-weighted mean losses."""
    sums: dict[str, float] = {}
    seen = 0
    horizon = settings.horizon if network.pairs else None
    augment = makeAugmentation(settings.augment, settings.shift_pad)
    for chunk in chunks:
        terms = network.lossTerms(data.batch(chunk, network, horizon, generator, augment))
        total = network.total(terms)
        if optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
            total.backward()
            optimizer.step()
            network.updateTarget(settings.tau)
        for name, value in [*terms.items(), ("total", total)]:
            sums[name] = sums.get(name, 0.0) + float(value.detach()) * len(chunk)
        seen += len(chunk)
        if bar is not None:  # (the postfix first: the update's refresh shows it with the count it belongs to)
            bar.set_postfix({name: f"{value / seen:.4g}" for name, value in sums.items()}, refresh=False)
            bar.update(1)
    return {name: value / max(seen, 1) for name, value in sums.items()}


def trainNetwork(network: SRLNetwork, data: TrainingData, train_rows: np.ndarray, val_rows: np.ndarray,
                 settings: TrainSettings, on_epoch: Callable[[dict], None] | None = None) -> list[dict]:
    """
    Train in place; on return the network holds the weights of its best epoch: the last epoch at which one of the
    loss terms reached a new low (validation losses; training losses without validation rows or with a loss whose
    validation value is no guide, see SRLLoss.VALIDATES). With one loss that is the epoch of the lowest loss. With
    several, no term's weight decides: an inverse model that starts to overfit its held-out episodes after two
    epochs would otherwise outweigh a reconstruction that keeps improving, and keep a half-trained encoder. A term of
    weight 0 is only watched: it has no say in the best epoch, nor in early stopping, which ends training after
    ``patience`` epochs at which no term improved.

    :param network: the network (its losses decide what a batch holds)
    :param data: the dataset
    :param train_rows: training rows
    :param val_rows: validation rows (may be empty)
    :param settings: epochs or updates, batch size, learning rate, patience, seed, progress bar, horizon,
        augmentation, tau
    :param on_epoch: called after each epoch with its history entry, the network holding that epoch's weights (in
        eval mode; it may add keys to the entry, e.g. a measure of the representation)
    :return: one entry per epoch: {"epoch", "updates" (optimiser steps so far), "seconds" (wall time of the epoch's
        training and validation passes), "train": {loss: value, "total"}, "val": {...} or None}
    :raises ValueError: no training row (too few frames for the losses)
    """
    horizon = settings.horizon if network.pairs else None
    train_anchors = data.anchors(train_rows, horizon)
    # validation minibatches mix episodes like training ones (the robotic priors compare the rows of a minibatch),
    # in one fixed order so that epochs are comparable
    val_anchors = np.random.default_rng(settings.seed + 1).permutation(data.anchors(val_rows, horizon))
    refusal = tooFewAnchors(len(train_anchors), horizon, network.negatives, held_out=len(val_rows) > 0)
    if refusal:
        raise ValueError(refusal)
    val_chunks = _chunks(val_anchors, settings.batch_size, network.negatives)
    statistics = data.rowArrays(train_anchors)
    if any(getattr(loss, "foreground_weight", 0.0) for loss in network.losses.values()):
        statistics["background"] = data.background(train_anchors)  # only the foreground weighting reads it
    data.foreground_background = statistics.get("background")
    for loss in network.losses.values():
        loss.prepare(statistics)
    optimizer = torch.optim.Adam(network.trainableParameters(), lr=settings.learning_rate)
    multiTensorSteps([optimizer])
    rng = np.random.default_rng(settings.seed)
    generator = torch.Generator(device=data.device).manual_seed(settings.seed)
    batches = len(_chunks(train_anchors, settings.batch_size, network.negatives))
    total_updates = settings.updates or settings.epochs * batches
    epochs = math.ceil(total_updates / batches)
    history: list[dict] = []
    lows: dict[str, float] = {}
    best_state, stale, updates, last_loss = None, 0, 0, ""
    # The bar counts the updates itself; its description names the epoch under way and the last finished one's loss
    # (the one that picks the best epoch: validation or training); its postfix, the epoch's mean training losses so far
    with tqdm(total=total_updates, disable=not settings.progress, desc="SRL training",
              unit="update", dynamic_ncols=True) as bar:
        for epoch in range(1, epochs + 1):
            bar.set_description(f"SRL training (epoch {epoch}/{epochs}{last_loss})", refresh=False)
            network.train()
            began = time.perf_counter()
            chunks = _chunks(rng.permutation(train_anchors), settings.batch_size, network.negatives)
            chunks = chunks[:total_updates - updates]
            train = _meanTerms(network, data, chunks, settings, generator, optimizer, bar)
            updates += len(chunks)
            val = None
            if val_chunks:
                network.eval()
                with torch.no_grad():
                    # the same noise every epoch: validation losses differ only by the weights
                    val_generator = torch.Generator(device=data.device).manual_seed(settings.seed + 1)
                    val = _meanTerms(network, data, val_chunks, settings, val_generator)
            history.append({"epoch": epoch, "updates": updates, "seconds": round(time.perf_counter() - began, 3),
                            "train": train, "val": val})
            if on_epoch is not None:
                network.eval()
                with torch.no_grad():
                    on_epoch(history[-1])
            on_val = monitorVal(network, val)
            monitored = val if on_val else train
            last_loss = f", last epoch's {'validation' if on_val else 'training'} loss {monitored['total']:.4g}"
            bar.set_description(f"SRL training (epoch {epoch}/{epochs}{last_loss})")
            if _improves(monitored, lows, network.weights):
                stale = 0
                best_state = {key: value.detach().clone() for key, value in network.state_dict().items()}
            else:
                stale += 1
                if settings.patience and stale >= settings.patience:
                    break
    if best_state is not None:  # None only when every loss was NaN: keep the last weights for inspection
        network.load_state_dict(best_state)
    network.eval()
    return history


def monitorVal(network: SRLNetwork, val: dict | None) -> bool:
    """
    :param network: the network
    :param val: an epoch's validation losses (None without validation rows)
    :return: whether the best epoch is chosen on the validation loss (else on the training loss; a loss of weight
        0 has no say)
    """
    return val is not None and all(loss.VALIDATES for name, loss in network.losses.items()
                                   if network.weights[name] > 0)


def lossTerms(losses: dict[str, float], weights: dict[str, float]) -> dict[str, float]:
    """
    :param losses: an epoch's losses ({name: value, "total": value})
    :param weights: loss name -> weight; a term of weight 0 is only watched: it never picks the best epoch
    :return: the terms best epochs are chosen on: each loss term of positive weight (the total alone for a single one
        or none)
    """
    terms = {name: value for name, value in losses.items() if name != "total" and weights.get(name, 1.0) > 0}
    return terms if len(terms) > 1 else {"total": losses["total"]}


def _improves(losses: dict[str, float], lows: dict[str, float], weights: dict[str, float]) -> bool:
    """
    :param losses: an epoch's losses
    :param lows: each term's lowest value so far, updated in place
    :param weights: loss name -> weight (see lossTerms)
    :return: whether a term reached a new low (NaN never does)
    """
    improved = False
    for name, value in lossTerms(losses, weights).items():
        if value < lows.get(name, math.inf):
            lows[name], improved = value, True
    return improved


def bestEpoch(history: list[dict], network: SRLNetwork) -> int:
    """:param history: from trainNetwork
    :param network: the network trained
    :return: the epoch whose weights were kept (the last at which a loss term reached a new low; see trainNetwork)"""
    lows: dict[str, float] = {}
    kept = [entry["epoch"] for entry in history
            if _improves(entry["val"] if monitorVal(network, entry["val"]) else entry["train"], lows, network.weights)]
    return kept[-1] if kept else history[-1]["epoch"]
