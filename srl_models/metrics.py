"""How good is a learned state representation? Two scores against the ground truth of a dataset (srl-zoo's).

- GTC (ground-truth correlation): for each ground-truth dimension, the largest absolute Pearson correlation with
  any learned dimension; their mean sums it up. 1 when every true coordinate is linearly readable from one learned
  coordinate, whatever its scale, sign or position in the state vector.
- KNN-MSE: for each frame, the mean squared ground-truth (Euclidean) distance to its k nearest neighbours in
  learned-state space, averaged over frames. Low when frames the representation puts together are close in the
  world; it sees non-linear (but local) structure that GTC misses.
- Linear probe: ridge regression (closed form, PROBE_ALPHA on standardised states) from the learned state to the
  ground truth, fitted on some episodes and scored on the others (out-of-sample R^2 per ground-truth dimension, and
  their mean).
  What a linear policy or value head could read from the state, measured on frames it was not fitted on. 1 for the
  true state itself, about 0 (or below) for noise.

And one measure of the state alone, with no ground truth: its participation ratio, the number of directions it
really spans once each dimension is standardised (``(sum l)^2 / sum l^2`` over the eigenvalues ``l`` of its
correlation matrix; 1 to its size). ``train --srl-state-scale participation`` hands a learned state to the agent at
the size that number gives it (rl_baselines.envs.factory).

Pure numpy/scipy on arrays, so the scores can be checked on synthetic data with a known answer.
"""
from __future__ import annotations

import numpy as np
from scipy import linalg
from scipy.spatial import cKDTree

# Ridge penalty of the linear probe, on states standardised over the fitted frames (each column's squares sum to the
# number of frames, so a penalty of 1 is negligible for a column that carries the ground truth and keeps the solve
# well posed for constant or duplicated columns).
PROBE_ALPHA = 1.0
PROBE_HELD_OUT = 0.2  # fraction of the episodes the probe is scored on
# A state column whose standard deviation on the fitted frames is at most this times the widest column's standard
# deviation, or its own mean's magnitude, is constant to the probe (float32 carries about 7 significant digits: below
# this it is rounding noise)
PROBE_CONSTANT_TOLERANCE = 1e-6


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


def participationRatio(states: np.ndarray) -> float:
    """
    :param states: (n, d) states
    :return: ``(sum l)^2 / sum l^2`` over the eigenvalues ``l`` of the states' correlation matrix (constant dimensions
        left out): 1 when every dimension moves along one direction, d when the d dimensions are uncorrelated; 1 for
        states with no varying dimension
    """
    columns = _standardised(np.asarray(states, dtype=np.float64).reshape(len(states), -1))
    columns = columns[:, np.any(columns != 0.0, axis=0)]
    if columns.shape[1] == 0:
        return 1.0
    eigenvalues = linalg.eigvalsh(columns.T @ columns)
    return float(eigenvalues.sum() ** 2 / np.square(eigenvalues).sum())


def participationFactor(states: np.ndarray) -> float:
    """
    :param states: (n, d) states
    :return: ``sqrt(P / d)``, P their :func:`participationRatio`: the factor that gives d normalised numbers the size
        of P independent ones
    """
    states = np.asarray(states).reshape(len(states), -1)
    return float(np.sqrt(participationRatio(states) / states.shape[1]))


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


def heldOutEpisodes(episodes: np.ndarray, fraction: float = PROBE_HELD_OUT, seed: int = 0) -> np.ndarray:
    """
    :param episodes: the episode of each frame
    :param fraction: of the distinct episodes held out (at least one, never all)
    :param seed: which ones (deterministic)
    :return: bool (n,), True for the frames of the held-out episodes
    :raises ValueError: fewer than two episodes (no split by episode)
    """
    distinct = np.unique(episodes)
    if len(distinct) < 2:
        raise ValueError(f"the linear probe holds out whole episodes: it needs 2 or more, got {len(distinct)}")
    n_held = min(max(1, int(round(fraction * len(distinct)))), len(distinct) - 1)
    held = np.random.default_rng(seed).permutation(distinct)[:n_held]
    return np.isin(episodes, held)


def linearProbe(states: np.ndarray, ground_truth: np.ndarray, held_out: np.ndarray,
                alpha: float = PROBE_ALPHA) -> dict[str, list[float] | float]:
    """
    Ridge regression from the states to the ground truth, fitted on the frames not held out, R^2 on the held-out ones.

    :param states: (n, state_dim) learned states
    :param ground_truth: (n, gt_dim) ground-truth states of the same frames
    :param held_out: bool (n,): the frames scored (the others are fitted), e.g. from :func:`heldOutEpisodes`
    :param alpha: ridge penalty on the standardised states (statistics of the fitted frames)
    :return: {"per_dimension": [R^2 of each ground-truth dimension on the held-out frames], "mean": their mean,
        "alpha", "n_fit", "n_held_out"}; R^2 = 1 - residual sum of squares / the held-out frames' sum of squares
        about the fitted frames' mean (out-of-sample R^2: 0 for the best constant; 0 where that sum is 0)
    :raises ValueError: mismatched or non-finite inputs, fewer than 2 frames on either side
    """
    states, ground_truth = _checkPair(states, ground_truth)
    held_out = np.asarray(held_out, dtype=bool)
    if held_out.shape != (len(states),):
        raise ValueError(f"held_out must be a bool mask of {len(states)} frames, got shape {held_out.shape}")
    n_fit, n_held = int((~held_out).sum()), int(held_out.sum())
    if n_fit < 2 or n_held < 2:
        raise ValueError(f"the linear probe needs 2 or more frames to fit and to score, got {n_fit} and {n_held}")
    fit_x, fit_y = states[~held_out], ground_truth[~held_out]
    mean, scale = fit_x.mean(0), fit_x.std(0)
    # A column that does not vary on the fitted frames beyond float32 rounding (relative to the widest column's spread,
    # and to its own offset) is left out: standardising it would blow its rounding noise up to unit variance, and its
    # values on the held-out frames into nonsense (a PCA's trailing components on a short dataset)
    constant = scale <= PROBE_CONSTANT_TOLERANCE * np.maximum(float(scale.max(initial=0.0)), np.abs(mean))
    constant |= scale == 0.0
    scale[constant] = 1.0
    x = np.where(constant, 0.0, (fit_x - mean) / scale)
    y_mean = fit_y.mean(0)
    weights = linalg.solve(x.T @ x + alpha * np.eye(x.shape[1]), x.T @ (fit_y - y_mean), assume_a="pos")
    predicted = np.where(constant, 0.0, (states[held_out] - mean) / scale) @ weights + y_mean
    truth = ground_truth[held_out]
    residual = ((truth - predicted) ** 2).sum(0)
    # about the fitted frames' mean: what the best constant fitted on them scores (a held-out episode of a robot that
    # hardly moves has almost no variance of its own, and would make any error look huge)
    total = ((truth - y_mean) ** 2).sum(0)
    r2 = np.where(total > 0, 1.0 - residual / np.where(total > 0, total, 1.0), 0.0)
    return {"per_dimension": [float(v) for v in r2], "mean": float(r2.mean()), "alpha": float(alpha),
            "n_fit": n_fit, "n_held_out": n_held}
