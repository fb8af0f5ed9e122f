"""SRL metrics on synthetic data with known answers: GTC, KNN-MSE, nearest neighbours, the participation ratio, the
sampled indices, and the states-by-ground-truth plots."""
from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.image import imread

from srl_models import evaluate, plotting
from srl_models.metrics import gtCorrelation, knnMse, nearestNeighbours, participationRatio, sampleIndices

# --- metrics on synthetic data --------------------------------------------------------------------------------------


def positions(n: int = 600, dim: int = 2, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, size=(n, dim))


def test_identityGivesGtcOne():
    gt = positions()
    result = gtCorrelation(gt, gt)
    assert result["per_dimension"] == pytest.approx([1.0, 1.0])
    assert result["mean"] == pytest.approx(1.0)


def test_permutedScaledIdentityStillGtcOne():
    gt = positions()
    noise = np.random.default_rng(1).normal(size=(len(gt), 3))
    # y first, x flipped and rescaled, shifted, padded with unrelated dimensions
    states = np.column_stack([noise[:, 0], 10 * gt[:, 1] + 3, noise[:, 1], -0.01 * gt[:, 0], noise[:, 2]])
    assert gtCorrelation(states, gt)["per_dimension"] == pytest.approx([1.0, 1.0])


def test_randomMapAndNoiseScoreWorse():
    gt = positions()
    rotation = np.array([[1.0, 1.0], [1.0, -1.0]]) / np.sqrt(2)  # every learned dim mixes x and y equally
    mixed = gtCorrelation(gt @ rotation, gt)
    assert mixed["per_dimension"] == pytest.approx([np.sqrt(0.5)] * 2, abs=0.05)
    noise = np.random.default_rng(2).normal(size=(len(gt), 8))
    assert gtCorrelation(noise, gt)["mean"] < 0.25
    assert knnMse(noise, gt) > 20 * knnMse(gt, gt)
    # a random linear map keeps some information: in between
    projected = gt @ np.random.default_rng(3).normal(size=(2, 8))
    assert gtCorrelation(projected, gt)["mean"] < 1.0 - 1e-3
    assert knnMse(projected, gt) < knnMse(noise, gt)


def test_knnMseKnownValues():
    line = np.arange(10, dtype=float)[:, None]  # neighbours along a line, ground truth = state
    assert knnMse(line, line, k=1) == pytest.approx(1.0)
    # k=2: the ends have neighbours at distances 1 and 2 (mean 2.5), the others at 1 and 1
    assert knnMse(line, line, k=2) == pytest.approx((2 * 2.5 + 8 * 1.0) / 10)
    # learned states in the reverse order of the ground truth: same neighbourhoods
    assert knnMse(-5 * line, line, k=1) == pytest.approx(1.0)


def test_constantColumnsGiveZeroNotNan():
    gt = np.column_stack([positions(200, 1)[:, 0], np.full(200, 4.0)])  # second GT dim never moves
    states = np.column_stack([np.zeros(200), gt[:, 0] * 2])
    result = gtCorrelation(states, gt)
    assert result["per_dimension"] == pytest.approx([1.0, 0.0])
    assert np.isfinite(result["mean"])
    assert gtCorrelation(np.zeros((200, 3)), gt)["per_dimension"] == [0.0, 0.0]


def test_neighboursExcludeSelfEvenWithDuplicates():
    states = np.zeros((7, 2))  # every sample ties with every other
    neighbours = nearestNeighbours(states, k=4)
    assert neighbours.shape == (7, 4)
    assert not np.any(neighbours == np.arange(7)[:, None])
    assert all(len(set(row)) == 4 for row in neighbours)


def test_metricInputChecks():
    with pytest.raises(ValueError, match="k=5"):
        knnMse(np.zeros((5, 2)), np.zeros((5, 2)), k=5)
    with pytest.raises(ValueError, match="ground-truth rows"):
        gtCorrelation(np.zeros((5, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="NaN"):
        gtCorrelation(np.full((5, 2), np.nan), np.zeros((5, 2)))


def test_sampleIndicesSeeded():
    assert np.array_equal(sampleIndices(10, 20, seed=3), np.arange(10))
    first, again, other = (sampleIndices(1000, 50, seed=s) for s in (3, 3, 4))
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    assert len(np.unique(first)) == 50 and np.all(np.diff(first) > 0)


def test_plotsBothKinds(tmp_path):
    gt = positions(300, 3)
    for plot_type, state_dim in (("3D", 5), ("3D", 2), ("2D", 1), ("2D", 8)):
        path = str(tmp_path / f"{plot_type}_{state_dim}.png")
        states = np.column_stack([gt, np.zeros((300, 5))])[:, :state_dim]
        plotting.plotStatesByGroundTruth(states, gt, plot_type, path)
        assert imread(path).std() > 0.01


@pytest.mark.parametrize("scale", [8e-4, 3e4])
def test_state_plot_tick_labels_do_not_run_into_each_other(scale: float, monkeypatch) -> None:
    """An untrained encoder's states span thousandths (ticks -0.0075 ... 0.0075), a PCA's can span 1e5: the x tick
    labels of the narrow panels stay apart."""
    figures = []
    monkeypatch.setattr(plotting, "saveFigure", lambda figure, path, dpi=100: figures.append(figure))
    rng = np.random.default_rng(0)
    states = rng.normal(size=(200, 4)) * scale * np.array([3.0, 1.0, 0.5, 0.1])
    plotting.plotStatesByGroundTruth(states, rng.normal(size=(200, 2)), "2D", "unused.png", title="t", relative=True)
    canvas = FigureCanvasAgg(figures[0])
    canvas.draw()
    renderer = canvas.get_renderer()
    panels = [axes for axes in figures[0].axes if axes.get_xlabel().startswith("PC1")]
    assert len(panels) == 2
    for axes in panels:
        inside = [label.get_window_extent(renderer) for label in axes.get_xticklabels()
                  if label.get_text() and axes.bbox.x0 - 1 <= axes.transData.transform((label.get_position()[0], 0))[0]
                  <= axes.bbox.x1 + 1]
        assert len(inside) >= 3
        assert all(left.x1 < right.x0 for left, right in zip(inside, inside[1:], strict=False)), scale


def test_the_participation_ratio_counts_the_directions_a_state_spans():
    rng = np.random.default_rng(0)
    truth = rng.normal(size=(4000, 2))
    assert 1.2 < participationRatio(truth @ rng.normal(size=(2, 32)) + rng.normal(size=32)) <= 2.0 + 1e-9
    assert participationRatio(rng.normal(size=(4000, 8))) == pytest.approx(8.0, rel=0.05)
    assert participationRatio(np.c_[truth, np.ones(4000)]) == pytest.approx(2.0, abs=0.05)  # a constant adds none
    assert participationRatio(np.c_[truth, truth[:, :1] * 3]) == pytest.approx(1.8, abs=0.05)
    assert participationRatio(np.ones((10, 3))) == 1.0


def test_the_neighbours_distances_have_two_digits_and_the_ground_truths_unit(monkeypatch) -> None:
    """knn_neighbours.png read "GT d²=0.01", "0.173", "0": mixed precision, no unit."""
    figures = []
    monkeypatch.setattr(plotting, "saveFigure", lambda figure, path, dpi=100: figures.append(figure))
    frames = np.zeros((1, 8, 8, 3), dtype=np.uint8)
    distances = np.array([[0.01, 0.173, 0.0]])
    plotting.plotNeighbours(frames, np.zeros((1, 3, 8, 8, 3), dtype=np.uint8), distances, "unused.png", unit="m")
    plotting.plotNeighbours(frames, np.zeros((1, 3, 8, 8, 3), dtype=np.uint8), distances, "unused.png")
    titles = [[axes.get_title() for axes in figure.axes[1:]] for figure in figures]
    assert titles == [["GT d² 0.010 m²", "GT d² 0.17 m²", "GT d² 0.0 m²"], ["GT d² 0.010", "GT d² 0.17", "GT d² 0.0"]]
    assert evaluate.groundTruthUnit("MobileRobotGymEnv-v0") == "m" and evaluate.groundTruthUnit("Nowhere-v0") is None
    assert evaluate.groundTruthUnit("CarRacingGymEnv-v0") is None  # its world units have no name
