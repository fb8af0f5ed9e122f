"""The training loop of the learned SRL models: the dataset in memory, an episode-wise validation split, minibatches of
(s_t[, s_t+1]) rows, Adam, early stopping on the validation losses with the best epoch's weights kept."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from srl_models.losses import Batch
from srl_models.network import SRLNetwork

# Frames the background (per-pixel median) of the reconstruction losses is taken from: enough for a moving robot to
# leave every pixel most of the time.
BACKGROUND_FRAMES = 1000


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
    n_val = int(round(val_split * n_episodes))
    if val_split > 0 and n_episodes >= 2:
        n_val = max(1, n_val)
    n_val = min(n_val, max(n_episodes - 1, 0))
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
        starts = np.asarray(episode_starts, dtype=bool)
        self.has_next = np.zeros(len(starts), dtype=bool)
        self.has_next[:-1] = ~starts[1:]
        self.arrays: dict[str, torch.Tensor] = {}
        if actions is not None:
            continuous = actions.ndim == 2
            self.arrays["actions"] = torch.as_tensor(actions, dtype=torch.float32 if continuous else torch.long)
        if rewards is not None:
            self.arrays["rewards"] = torch.as_tensor(rewards, dtype=torch.long)
        if ground_truth is not None:
            self.arrays["ground_truth"] = torch.as_tensor(ground_truth, dtype=torch.float32)
        self.arrays = {key: value.to(device) for key, value in self.arrays.items()}

    def anchors(self, rows: np.ndarray, pairs: bool) -> np.ndarray:
        """
        :param rows: candidate rows
        :param pairs: keep only rows followed by a frame of the same episode
        :return: the rows a minibatch may start from
        """
        return rows[self.has_next[rows]] if pairs else rows

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

    def batch(self, rows: np.ndarray, network: SRLNetwork, pairs: bool,
              generator: torch.Generator | None) -> Batch:
        """
        :param rows: anchor rows
        :param network: encodes the images (one forward pass for s_t and s_t+1 together)
        :param pairs: also encode the next frames
        :param generator: random numbers for the losses
        :return: the encoded batch
        """
        index = torch.as_tensor(rows, device=self.device)
        images = self.images[index].float().div_(255.0)
        arrays = self.rowArrays(rows)
        if not pairs:
            features, states = network.encode(images)
            return Batch(images, features, states, network.encode, generator=generator,
                         actions=arrays.get("actions"), rewards=arrays.get("rewards"),
                         ground_truth=arrays.get("ground_truth"))
        next_images = self.images[index + 1].float().div_(255.0)
        features, states = network.encode(torch.cat([images, next_images]))
        n = len(rows)
        return Batch(images, features[:n], states[:n], network.encode, next_images, features[n:], states[n:],
                     actions=arrays.get("actions"), rewards=arrays.get("rewards"),
                     ground_truth=arrays.get("ground_truth"), generator=generator)


@dataclass
class TrainSettings:
    """
    :param epochs: maximum passes over the training rows
    :param batch_size: rows per minibatch
    :param learning_rate: Adam's step size
    :param patience: epochs without a better monitored loss before stopping (0: never stop early)
    :param seed: shuffling and noise
    :param progress: show a tqdm bar
    """

    epochs: int = 30
    batch_size: int = 64
    learning_rate: float = 1e-3
    patience: int = 10
    seed: int = 0
    progress: bool = True


def _meanTerms(network: SRLNetwork, data: TrainingData, rows: np.ndarray, batch_size: int,
               generator: torch.Generator | None, optimizer: torch.optim.Optimizer | None = None,
               bar: tqdm | None = None) -> dict[str, float]:
    """One pass over ``rows`` (an optimisation step per minibatch when ``optimizer``): row-weighted mean losses."""
    sums: dict[str, float] = {}
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        terms = network.lossTerms(data.batch(chunk, network, network.pairs, generator))
        total = network.total(terms)
        if optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
            total.backward()
            optimizer.step()
        for name, value in [*terms.items(), ("total", total)]:
            sums[name] = sums.get(name, 0.0) + float(value.detach()) * len(chunk)
        if bar is not None:
            bar.update(1)
            bar.set_postfix({name: f"{value / (start + len(chunk)):.4g}" for name, value in sums.items()},
                            refresh=False)
    return {name: value / len(rows) for name, value in sums.items()}


def trainNetwork(network: SRLNetwork, data: TrainingData, train_rows: np.ndarray, val_rows: np.ndarray,
                 settings: TrainSettings, on_epoch: Callable[[dict], None] | None = None) -> list[dict]:
    """
    Train in place; on return the network holds the weights of its best epoch: the last epoch at which one of the
    loss terms reached a new low (validation losses; training losses without validation rows or with a loss whose
    validation value is no guide, see SRLLoss.VALIDATES). With one loss that is the epoch of the lowest loss. With
    several, no term's weight decides: an inverse model that starts to overfit its held-out episodes after two
    epochs would otherwise outweigh a reconstruction that keeps improving, and keep a half-trained encoder. Early
    stopping ends training after ``patience`` epochs at which no term improved.

    :param network: the network (its losses decide what a batch holds)
    :param data: the dataset
    :param train_rows: training rows
    :param val_rows: validation rows (may be empty)
    :param settings: epochs, batch size, learning rate, patience, seed, progress bar
    :param on_epoch: called after each epoch with its history entry, the network holding that epoch's weights (in
        eval mode; it may add keys to the entry, e.g. a measure of the representation)
    :return: one entry per epoch: {"epoch", "train": {loss: value, "total"}, "val": {...} or None}
    :raises ValueError: no training row (too few frames for the losses)
    """
    train_anchors = data.anchors(train_rows, network.pairs)
    # validation minibatches mix episodes like training ones (the robotic priors compare the rows of a minibatch),
    # in one fixed order so that epochs are comparable
    val_anchors = np.random.default_rng(settings.seed + 1).permutation(data.anchors(val_rows, network.pairs))
    if len(train_anchors) == 0:
        raise ValueError("no training frame (the losses need consecutive frames of one episode)")
    statistics = data.rowArrays(train_anchors)
    if any(getattr(loss, "foreground_weight", 0.0) for loss in network.losses.values()):
        statistics["background"] = data.background(train_anchors)  # only the foreground weighting reads it
    for loss in network.losses.values():
        loss.prepare(statistics)
    optimizer = torch.optim.Adam(network.parameters(), lr=settings.learning_rate)
    rng = np.random.default_rng(settings.seed)
    generator = torch.Generator(device=data.device).manual_seed(settings.seed)
    batches = math.ceil(len(train_anchors) / settings.batch_size)
    history: list[dict] = []
    lows: dict[str, float] = {}
    best_state, stale = None, 0
    with tqdm(total=settings.epochs * batches, disable=not settings.progress, desc="SRL training",
              unit="batch", dynamic_ncols=True) as bar:
        for epoch in range(1, settings.epochs + 1):
            network.train()
            train = _meanTerms(network, data, rng.permutation(train_anchors), settings.batch_size, generator,
                               optimizer, bar)
            val = None
            if len(val_anchors):
                network.eval()
                with torch.no_grad():
                    # the same noise every epoch: validation losses differ only by the weights
                    val_generator = torch.Generator(device=data.device).manual_seed(settings.seed + 1)
                    val = _meanTerms(network, data, val_anchors, settings.batch_size, val_generator)
            history.append({"epoch": epoch, "train": train, "val": val})
            if on_epoch is not None:
                network.eval()
                with torch.no_grad():
                    on_epoch(history[-1])
            monitored = val if monitorVal(network, val) else train
            bar.set_description(f"SRL training (epoch {epoch}, loss {monitored['total']:.4g})")
            if _improves(monitored, lows):
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
    :return: whether the best epoch is chosen on the validation loss (else on the training loss)
    """
    return val is not None and all(loss.VALIDATES for loss in network.losses.values())


def lossTerms(losses: dict[str, float]) -> dict[str, float]:
    """
    :param losses: an epoch's losses ({name: value, "total": value})
    :return: the terms best epochs are chosen on: each loss term (the total alone for a single term or none)
    """
    terms = {name: value for name, value in losses.items() if name != "total"}
    return terms if len(terms) > 1 else {"total": losses["total"]}


def _improves(losses: dict[str, float], lows: dict[str, float]) -> bool:
    """
    :param losses: an epoch's losses
    :param lows: each term's lowest value so far, updated in place
    :return: whether a term reached a new low (NaN never does)
    """
    improved = False
    for name, value in lossTerms(losses).items():
        if value < lows.get(name, math.inf):
            lows[name], improved = value, True
    return improved


def bestEpoch(history: list[dict], network: SRLNetwork) -> int:
    """:param history: from trainNetwork
    :param network: the network trained
    :return: the epoch whose weights were kept (the last at which a loss term reached a new low; see trainNetwork)"""
    lows: dict[str, float] = {}
    kept = [entry["epoch"] for entry in history
            if _improves(entry["val"] if monitorVal(network, entry["val"]) else entry["train"], lows)]
    return kept[-1] if kept else history[-1]["epoch"]
