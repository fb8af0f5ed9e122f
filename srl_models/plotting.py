"""PNG figures of an SRL model: training curves, reconstructions, states coloured by ground truth, KNN neighbours,
decoded latent grids.

Figures are built with matplotlib's object API (``matplotlib.figure.Figure``, no pyplot): no display is needed and
the process-wide backend of a caller is left alone. Every figure is written atomically.
"""
from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from srl_toolbox.files import atomicPath

AXIS_NAMES = ("x", "y", "z")


def saveFigure(figure: Figure, path: str, dpi: int = 100) -> None:
    """
    Write a figure as PNG atomically (temporary file beside it, then one rename).

    :param figure: the figure
    :param path: destination .png
    :param dpi: resolution
    """
    with atomicPath(path) as tmp_path:
        figure.savefig(tmp_path, dpi=dpi, format="png")


def projectStates(states: np.ndarray, n_components: int) -> tuple[np.ndarray, list[str]]:
    """
    :param states: (n, state_dim) learned states
    :param n_components: wanted plot dimensions (2 or 3)
    :return: (n, min(state_dim, n_components)) coordinates and their axis labels: the first learned dimensions when
        state_dim <= n_components, else the principal components (with their share of the variance)
    """
    states = np.asarray(states, dtype=np.float64)
    if states.shape[1] <= n_components:
        return states, [f"state {i}" for i in range(states.shape[1])]
    centred = states - states.mean(axis=0)
    _, singular, components = np.linalg.svd(centred, full_matrices=False)
    variance = singular ** 2
    share = variance / variance.sum() if variance.sum() > 0 else np.zeros_like(variance)
    projected = centred @ components[:n_components].T
    return projected, [f"PC{i + 1} ({100 * share[i]:.0f}% var.)" for i in range(n_components)]


def groundTruthName(index: int, gt_dim: int, relative: bool = False) -> str:
    """
    :param index: a ground-truth dimension
    :param gt_dim: number of ground-truth dimensions
    :param relative: the ground truth is the position relative to the target's (the datasets' default)
    :return: its label ("x", "y", "z" for positions, in metres, else "dim i")
    """
    if gt_dim > 3:
        return f"ground truth dim {index}"
    return f"{AXIS_NAMES[index]} relative to the target (m)" if relative else f"ground truth {AXIS_NAMES[index]} (m)"


def plotStatesByGroundTruth(states: np.ndarray, ground_truth: np.ndarray, plot_type: str, path: str,
                            title: str = "", relative: bool = False) -> None:
    """
    Scatter the learned states (first dims, or their PCA when larger than the plot), one panel per ground-truth
    dimension, each point coloured by that dimension: a good representation shows smooth colour gradients.

    :param states: (n, state_dim) learned states
    :param ground_truth: (n, gt_dim) ground truth of the same frames
    :param plot_type: "2D" or "3D" (the env's PLOT_TYPE)
    :param path: destination .png
    :param title: figure title
    :param relative: the ground truth is relative to the target (named so in the labels)
    """
    projected, labels = projectStates(states, 3 if plot_type == "3D" else 2)
    ground_truth = np.asarray(ground_truth, dtype=np.float64).reshape(len(projected), -1)
    gt_dim = ground_truth.shape[1]
    three_d = projected.shape[1] == 3
    figure = Figure(figsize=((5.4 if three_d else 4.6) * gt_dim, 4.4 if three_d else 4.2))
    for j in range(gt_dim):
        name = groundTruthName(j, gt_dim, relative)
        axes = figure.add_subplot(1, gt_dim, j + 1, projection="3d" if three_d else None)
        if projected.shape[1] == 1:  # one learned dimension: against the ground truth itself
            coordinates, axis_labels = (projected[:, 0], ground_truth[:, j]), (labels[0], name)
        else:
            coordinates, axis_labels = tuple(projected.T), labels
        points = axes.scatter(*coordinates, c=ground_truth[:, j], cmap="viridis", s=6, alpha=0.8)
        axes.set_xlabel(axis_labels[0])
        axes.set_ylabel(axis_labels[1])
        # at most 5 x ticks: side by side, labels such as -0.0075 or -300000 run into each other in a narrow panel
        axes.xaxis.set_major_locator(MaxNLocator(nbins=4))
        if three_d:
            axes.set_zlabel(axis_labels[2])
        axes.set_title(f"coloured by {name}", fontsize=10)
        figure.colorbar(points, ax=axes, shrink=0.8, pad=0.18 if three_d else 0.05).set_label(name, fontsize=8)
    if title:
        figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    saveFigure(figure, path)


def displayable(images: np.ndarray) -> np.ndarray:
    """
    :param images: uint8 (..., H, W, C) with C = 3, or 6 (two camera views stacked on channels)
    :return: uint8 (..., H, W', 3) RGB: two-view images side by side
    """
    if images.shape[-1] == 6:
        return np.concatenate([images[..., :3], images[..., 3:]], axis=-2)
    if images.shape[-1] == 1:
        return np.repeat(images, 3, axis=-1)
    return images


def plotNeighbours(queries: np.ndarray, neighbours: np.ndarray, distances: np.ndarray, path: str,
                   title: str = "", unit: str | None = None) -> None:
    """
    One row per query frame: the frame, then its nearest neighbours in learned-state space with their squared
    ground-truth distance to it (two significant digits, in the square of the ground truth's unit).

    :param queries: uint8 (q, H, W, C) query frames
    :param neighbours: uint8 (q, k, H, W, C) their neighbours, nearest first
    :param distances: (q, k) squared ground-truth distances
    :param path: destination .png
    :param title: figure title
    :param unit: the ground truth's unit (the env's GROUND_TRUTH_UNIT), None when it has none
    """
    rows, k = neighbours.shape[:2]
    figure = Figure(figsize=(1.6 * (k + 1), 1.75 * rows + 0.4))
    axes = figure.subplots(rows, k + 1, squeeze=False)
    for row in range(rows):
        axes[row, 0].imshow(displayable(queries[row]))
        axes[row, 0].set_title("query", fontsize=8, color="tab:blue")
        for col in range(k):
            axes[row, col + 1].imshow(displayable(neighbours[row, col]))
            axes[row, col + 1].set_title(f"GT d² {distances[row, col]:#.2g}" + (f" {unit}²" if unit else ""),
                                         fontsize=8)
    for ax in axes.ravel():
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    saveFigure(figure, path)


def imageGrid(images: np.ndarray, rows: int, cols: int, padding: int = 1) -> np.ndarray:
    """
    :param images: uint8 (rows * cols, H, W, 3), row-major
    :param rows: grid rows
    :param cols: grid columns
    :param padding: white pixels between cells
    :return: uint8 (rows * (H + padding) - padding, cols * (W + padding) - padding, 3) mosaic
    """
    height, width, channels = images.shape[1:]
    grid = np.full((rows * (height + padding) - padding, cols * (width + padding) - padding, channels), 255,
                   dtype=np.uint8)
    for index, image in enumerate(images):
        row, col = divmod(index, cols)
        top, left = row * (height + padding), col * (width + padding)
        grid[top:top + height, left:left + width] = image
    return grid


def tickLabels(values: np.ndarray) -> list[str]:
    """
    :param values: evenly spaced grid values
    :return: labels with enough digits to tell neighbours apart (a narrow range far from 0 needs more than 2)
    """
    values = np.asarray(values, dtype=np.float64)
    step = np.abs(np.diff(values)).min() if len(values) > 1 else 0.0
    scale = max(np.abs(values).max(), step)
    if step == 0 or scale == 0:
        return [f"{v:.3g}" for v in values]
    digits = int(np.clip(np.ceil(np.log10(scale / step)) + 1, 2, 8))
    return [f"{v:.{digits}g}" for v in values]


def plotLatentGrid(images: np.ndarray, values: tuple[np.ndarray, np.ndarray], dims: tuple[int, int], path: str,
                   title: str = "") -> None:
    """
    Decoded images over a grid of two latent dimensions.

    :param images: uint8 (g * g, H, W, 3) decoded images, row-major: row i has dims[1] = values[1][i], column j
        has dims[0] = values[0][j]
    :param values: the grid values of dims[0] (columns) and dims[1] (rows)
    :param dims: the two latent dimensions varied
    :param path: destination .png
    :param title: figure title
    """
    cols, rows = len(values[0]), len(values[1])
    height, width = images.shape[1:3]
    mosaic = imageGrid(images, rows, cols)
    figure = Figure(figsize=(1.0 + 1.1 * cols * width / max(height, width),
                            1.0 + 1.1 * rows * height / max(height, width)))
    axes = figure.subplots()
    axes.imshow(mosaic, interpolation="nearest")
    axes.set_xticks([j * (width + 1) + width / 2 for j in range(cols)], tickLabels(values[0]), fontsize=7)
    axes.set_yticks([i * (height + 1) + height / 2 for i in range(rows)], tickLabels(values[1]), fontsize=7)
    axes.set_xlabel(f"latent dim {dims[0]}")
    axes.set_ylabel(f"latent dim {dims[1]}")
    if title:
        axes.set_title(title, fontsize=9)
    figure.tight_layout()
    saveFigure(figure, path)


def trainingCurve(history: list[dict], path: str, best_epoch: int | None = None, title: str | None = None) -> None:
    """
    Write :func:`trainingCurveFigure` as a PNG.

    :param history: from srl_models.trainer.trainNetwork
    :param path: the PNG file
    :param best_epoch: marked with a vertical line (the weights kept)
    :param title: the figure's title (the model and its dataset)
    """
    saveFigure(trainingCurveFigure(history, best_epoch, title), path, dpi=100)


def trainingCurveFigure(history: list[dict], best_epoch: int | None = None, title: str | None = None) -> Figure:
    """
    Weighted total and each loss term per epoch, training (solid) and validation (dashed), log scale when positive
    (ticks as plain numbers when the losses span less than a decade); each epoch marked when there are few (a
    one-epoch training is one point per curve); the epoch axis has whole-number ticks only.

    :param history: from srl_models.trainer.trainNetwork
    :param best_epoch: marked with a vertical line (the weights kept)
    :param title: the figure's title (the model and its dataset)
    :return: the figure, laid out so that every label lies inside it
    """
    figure = Figure(figsize=(7, 4))
    axis = figure.subplots()
    epochs = [entry["epoch"] for entry in history]
    names = list(history[0]["train"])
    if len(names) == 2:  # one loss: its total is the same curve (times its weight)
        names = names[:1]
    colours = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    positive, low, high = True, np.inf, -np.inf
    marker = "o" if len(epochs) <= 20 else None
    for i, name in enumerate(names):
        colour = colours[i % len(colours)]
        train = [entry["train"][name] for entry in history]
        axis.plot(epochs, train, color=colour, label=f"{name} (train)", linewidth=2 if name == "total" else 1,
                  marker=marker, markersize=3)
        values = list(train)
        if history[0]["val"] is not None:
            val = [entry["val"][name] for entry in history]
            axis.plot(epochs, val, color=colour, linestyle="--", label=f"{name} (val)", marker=marker, markersize=3)
            values += val
        positive = positive and min(values) > 0
        low, high = min(low, min(values)), max(high, max(values))
    if positive:
        axis.set_yscale("log")
        if high < 10 * low:  # within a decade: plain numbers, not 4x10^0
            plain = FuncFormatter(lambda value, _: f"{value:g}")
            axis.yaxis.set_major_formatter(plain)
            axis.yaxis.set_minor_formatter(plain)
    if best_epoch is not None:
        axis.axvline(best_epoch, color="grey", linestyle=":", label=f"kept (epoch {best_epoch})")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # whole epochs: no tick at 1.2
    axis.set_xlabel("epoch")
    axis.set_ylabel("loss (unweighted terms, weighted total)")
    if title:
        axis.set_title(title, fontsize="medium")
    axis.legend(fontsize="small")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def reconstructions(originals: np.ndarray, decoded: np.ndarray, path: str) -> None:
    """
    Originals (top row) above their reconstructions (bottom row).

    :param originals: uint8 (n, H, W, C)
    :param decoded: uint8 (n, H, W, C)
    :param path: the PNG file
    """
    n = len(originals)
    figure = Figure(figsize=(1.6 * n * max(1, originals.shape[-1] // 3), 3.4))
    axes = figure.subplots(2, n, squeeze=False)
    for column in range(n):
        for row, images in enumerate((originals, decoded)):
            axes[row, column].imshow(displayable(images[column]))
            axes[row, column].set_xticks([])
            axes[row, column].set_yticks([])
    axes[0, 0].set_ylabel("original")
    axes[1, 0].set_ylabel("decoded")
    saveFigure(figure, path, dpi=100)
