"""How good is a learned state representation? Two scores against the ground truth of a dataset (srl-zoo's).

- GTC (ground-truth correlation): for each ground-truth dimension, the largest absolute Pearson correlation with
  any learned dimension; their mean sums it up. 1 when every true coordinate is linearly readable from one learned
  coordinate, whatever its scale, sign or position in the state vector.
- KNN-MSE: for each frame, the mean squared ground-truth (Euclidean) distance to its k nearest neighbours in
  learned-state space, averaged over frames. Low when frames the representation puts together are close in the
  world; it sees non-linear (but local) structure that GTC misses.

Pure numpy/scipy on arrays, so the scores can be checked on synthetic data with a known answer.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree


def _checkPair(states: np.ndarray, ground_truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    :param states: (n, state_dim) learned states
    :param ground_truth: (n, gt_dim) ground-truth states
    :return: both as float64 2D arrays
    :raises ValueError: other shapes, different lengths, non-finite values
    """
    states = np.asarray(states, dtype=np.float64)
    ground_truth = np.asarray(ground_truth, dtype=np.float64)
    if states.ndim == 1:
        states = states[:, None]
    if ground_truth.ndim == 1:
        ground_truth = ground_truth[:, None]
    if states.ndim != 2 or ground_truth.ndim != 2:
        raise ValueError(f"states and ground truth must be (n, dim) arrays, got shapes {states.shape} and "
                         f"{ground_truth.shape}")
    if len(states) != len(ground_truth):
        raise ValueError(f"{len(states)} states but {len(ground_truth)} ground-truth rows")
    if len(states) < 2:
        raise ValueError(f"at least 2 samples are needed, got {len(states)}")
    for name, array in (("states", states), ("ground truth", ground_truth)):
        if not np.all(np.isfinite(array)):
            raise ValueError(f"the {name} hold NaN or infinite values")
    return states, ground_truth


def _standardised(columns: np.ndarray) -> np.ndarray:
    """
    :param columns: (n, d) float64
    :return: each column centred and divided by its norm; constant columns become zeros (correlation 0, no NaN)
    """
    centred = columns - columns.mean(axis=0)
    norms = np.linalg.norm(centred, axis=0)
    # Relative threshold: a column that only varies by float rounding (of its mean) is constant for this purpose.
    constant = norms <= 1e-10 * np.abs(columns).max(axis=0) * np.sqrt(len(columns))
    norms[constant] = 1.0
    centred[:, constant] = 0.0
    return centred / norms


def correlationMatrix(states: np.ndarray, ground_truth: np.ndarray) -> np.ndarray:
    """
    :param states: (n, state_dim) learned states
    :param ground_truth: (n, gt_dim) ground-truth states
    :return: (gt_dim, state_dim) Pearson correlations, 0 where either column is constant
    """
    states, ground_truth = _checkPair(states, ground_truth)
    return np.clip(_standardised(ground_truth).T @ _standardised(states), -1.0, 1.0)


def gtCorrelation(states: np.ndarray, ground_truth: np.ndarray) -> dict[str, list[float] | float]:
    """
    Ground-truth correlation (GTC).

    :param states: (n, state_dim) learned states
    :param ground_truth: (n, gt_dim) ground-truth states of the same frames
    :return: {"per_dimension": [max |corr| of each ground-truth dimension with any learned dimension],
        "mean": their mean}; a constant column correlates 0 with everything
    :raises ValueError: mismatched or non-finite inputs
    """
    per_dimension = np.abs(correlationMatrix(states, ground_truth)).max(axis=1)
    return {"per_dimension": [float(v) for v in per_dimension], "mean": float(per_dimension.mean())}


def nearestNeighbours(states: np.ndarray, k: int = 5) -> np.ndarray:
    """
    :param states: (n, state_dim) learned states
    :param k: neighbours per sample, 1 <= k < n
    :return: (n, k) int indices of each sample's k nearest other samples (Euclidean, in learned-state space),
        nearest first; a sample is never its own neighbour, even when other samples share its state
    :raises ValueError: k out of range
    """
    states = np.asarray(states, dtype=np.float64)
    if states.ndim == 1:
        states = states[:, None]
    n = len(states)
    if not 1 <= k < n:
        raise ValueError(f"k={k} nearest neighbours need 1 <= k < number of samples ({n})")
    _, found = cKDTree(states).query(states, k=k + 1)
    found = np.asarray(found).reshape(n, k + 1)
    is_self = found == np.arange(n)[:, None]
    # With duplicated states the tree may return the sample itself anywhere among the ties, or not at all: drop it
    # where it is, else drop the farthest of the k + 1.
    is_self[~is_self.any(axis=1), k] = True
    return found[~is_self].reshape(n, k)


def knnMse(states: np.ndarray, ground_truth: np.ndarray, k: int = 5) -> float:
    """
    KNN-MSE: mean squared ground-truth distance between each sample and its k nearest neighbours in learned space.

    :param states: (n, state_dim) learned states
    :param ground_truth: (n, gt_dim) ground-truth states of the same frames
    :param k: neighbours per sample, 1 <= k < n
    :return: the mean over samples and neighbours of ||gt[neighbour] - gt[sample]||^2
    :raises ValueError: mismatched or non-finite inputs, k out of range
    """
    states, ground_truth = _checkPair(states, ground_truth)
    neighbours = nearestNeighbours(states, k)
    squared = np.sum((ground_truth[neighbours] - ground_truth[:, None, :]) ** 2, axis=2)
    return float(squared.mean())


def sampleIndices(n: int, max_samples: int, seed: int = 0) -> np.ndarray:
    """
    :param n: number of frames in the dataset
    :param max_samples: most frames to keep
    :param seed: the subset depends only on (n, max_samples, seed)
    :return: sorted indices: all frames when n <= max_samples, else a seeded uniform subset without repetition
    """
    if max_samples < 1:
        raise ValueError(f"max_samples must be positive, got {max_samples}")
    if n <= max_samples:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=max_samples, replace=False))
