"""The contrastive SRL models (atc, curl) and what the trainer grew for them: pairs at a horizon k that never cross an
episode end, the momentum target moving by tau, the random-shift augmentation of each view (never of the stored
images), the number of updates; the linear probe; the bad inputs (one line, exit code 2, nothing written). Trained
on the tiny session dataset of test_srl_models."""
from __future__ import annotations

import io
import json
import os
import re

import numpy as np
import pytest
import torch
from conftest import runModule, snapshot
from test_srl_models import tinyDataset  # noqa: F401  (the session fixture: one tiny dataset)
from torch.nn import functional as F
from tqdm import tqdm

from environments.dataset import Dataset
from srl_models import train as train_module
from srl_models import trainer
from srl_models.augment import AUGMENTATIONS, PAD, makeAugmentation, randomShift
from srl_models.metrics import heldOutEpisodes, linearProbe
from srl_models.models import ATCModel, CURLModel, RandomModel
from srl_models.network import SRLNetwork
from srl_models.prepare import trainingSettings
from srl_models.registry import loadSRLModel
from srl_models.train import main, trainFromArgs
from srl_models.train_config import SRLTrainConfig
from srl_models.train_data import checkHorizon
from srl_models.trainer import TrainingData, TrainSettings, framesAfter, splitEpisodes, trainNetwork
from srl_toolbox.cli import UsageError, runCommand

IMG_SHAPE = (3, 32, 32)


# --- augmentation ----------------------------------------------------------------------------------------------------


def test_random_shift_is_a_crop_of_the_padded_image_for_any_size() -> None:
    images = torch.rand(16, 3, 20, 36)
    before = images.clone()
    shifted = randomShift(images, torch.Generator().manual_seed(0))
    assert shifted.shape == images.shape and torch.equal(images, before)  # a new tensor, the input untouched
    padded = F.pad(images, (PAD,) * 4, mode="replicate")
    offsets = []
    for i in range(len(images)):
        found = [(dy, dx) for dy in range(2 * PAD + 1) for dx in range(2 * PAD + 1)
                 if torch.equal(padded[i, :, dy:dy + 20, dx:dx + 36], shifted[i])]
        assert found, i
        offsets.append(found[0])
    assert len(set(offsets)) > 4  # each image its own offset
    again = randomShift(images, torch.Generator().manual_seed(0))
    assert torch.equal(shifted, again)  # only the given generator decides
    generator = torch.Generator().manual_seed(5)
    state = generator.get_state()
    assert AUGMENTATIONS["none"](images, generator) is images and torch.equal(generator.get_state(), state)


def test_the_shift_pad_bounds_each_shift() -> None:
    """--shift-pad P: every view moves by at most P pixels each way, and by each of them (P = 1 gives the 9 offsets)."""
    images = torch.zeros(400, 1, 16, 16)
    images[:, :, 8, 8] = 1.0  # one lit pixel: where it lands is the shift
    for pad in (1, 2, PAD):
        shifted = makeAugmentation("shift", pad)(images, torch.Generator().manual_seed(0))
        rows, cols = torch.nonzero(shifted[:, 0] > 0.5, as_tuple=True)[1:]
        moves = {(int(r) - 8, int(c) - 8) for r, c in zip(rows, cols)}
        assert moves == {(dy, dx) for dy in range(-pad, pad + 1) for dx in range(-pad, pad + 1)}, (pad, moves)
    assert makeAugmentation("shift") is randomShift and makeAugmentation("none") is AUGMENTATIONS["none"]


# --- pairs at a horizon, augmented views, the momentum target ---------------------------------------------------------


def numberedData(episode_lengths: list[int]) -> TrainingData:
    """Frames whose pixels hold their row number (row r: value r), with episodes of the given lengths."""
    n = sum(episode_lengths)
    images = np.broadcast_to(np.arange(n, dtype=np.uint8)[:, None, None, None], (n, 16, 16, 3)).copy()
    starts = np.zeros(n, dtype=bool)
    starts[np.cumsum([0, *episode_lengths[:-1]])] = True
    return TrainingData(images, starts, torch.device("cpu"))


def test_pairs_at_horizon_k_never_cross_an_episode_end() -> None:
    lengths = [5, 1, 9, 3, 12]
    data = numberedData(lengths)
    episode = np.repeat(np.arange(len(lengths)), lengths)
    np.testing.assert_array_equal(framesAfter(np.array([True, False, False, True, False])), [2, 1, 0, 1, 0])
    network = SRLNetwork((3, 16, 16), 4, {"atc": 1.0}, {}, {})
    rows = np.arange(sum(lengths))
    for horizon in (0, 1, 2, 4, 8, 11):
        anchors = data.anchors(rows, horizon)
        # exactly the rows whose episode goes on for horizon more frames
        expected = [r for r in rows if r + horizon < len(episode) and episode[r + horizon] == episode[r]]
        np.testing.assert_array_equal(anchors, expected)
        if len(anchors):
            batch = data.batch(anchors, network, horizon, None)
            first = batch.images[:, 0, 0, 0] * 255
            second = batch.next_images[:, 0, 0, 0] * 255
            np.testing.assert_allclose(second - first, horizon, atol=1e-3)  # the frame k rows later
    assert len(data.anchors(rows, 12)) == 0  # longer than every episode: no pair


def test_augment_changes_each_view_and_not_the_stored_data() -> None:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (40, 24, 24, 3), dtype=np.uint8)
    starts = np.zeros(40, dtype=bool)
    starts[[0, 20]] = True
    data = TrainingData(images, starts, torch.device("cpu"))
    stored = data.images.clone()
    network = SRLNetwork((3, 24, 24), 4, {"curl": 1.0}, {}, {})
    rows = data.anchors(np.arange(40), 0)
    plain = data.batch(rows, network, 0, torch.Generator().manual_seed(1))
    assert torch.equal(plain.images, plain.next_images)  # curl's pair: the same frame twice
    shifted = data.batch(rows, network, 0, torch.Generator().manual_seed(1), AUGMENTATIONS["shift"])
    assert not torch.equal(shifted.images, plain.images)
    # the two views of a frame are shifted independently
    assert not torch.equal(shifted.images, shifted.next_images)
    assert torch.equal(data.images, stored)  # the stored images as recorded
    np.testing.assert_array_equal(data.images.permute(0, 2, 3, 1).numpy(), images)


class _Fixed(torch.nn.Module):
    """A decoder that draws given images whatever the states."""

    def __init__(self, images: torch.Tensor) -> None:
        super().__init__()
        self.images = images

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.images


def test_the_foreground_weight_follows_a_shifted_view() -> None:
    """--foreground-weight with --augment shift: the weighted pixels are the robot's in the shifted view, not every
    pixel where the shifted scene leaves the unshifted background. A decoder that leaves the robot out then costs the
    same on shifted views as on stored ones."""
    rng = np.random.default_rng(0)
    squares = (np.indices((32, 32)) // 4).sum(0) % 2  # a checkerboard floor of 4-pixel squares
    images = np.repeat((50 + 150 * squares)[None, :, :, None], 16, axis=0).repeat(3, axis=3).astype(np.uint8)
    for image, (y, x) in zip(images, rng.integers(8, 21, (16, 2)), strict=True):
        image[y:y + 2, x:x + 2] = (255, 0, 0)  # the robot, away from the 4-pixel border the shift replicates
    data = TrainingData(images, np.eye(1, 16, dtype=bool)[0], torch.device("cpu"))
    network = SRLNetwork((3, 32, 32), 4, {"autoencoder": 1.0}, {}, {"foreground_weight": 30.0})
    loss = network.losses["autoencoder"]
    rows = np.arange(16)
    background = data.background(rows)
    loss.prepare({"background": background})
    data.foreground_background = background  # as trainNetwork sets them
    costs = {}
    for name in ("none", "shift"):
        batch = data.batch(rows, network, None, torch.Generator().manual_seed(3), AUGMENTATIONS[name])
        robot = (batch.images[:, 0] > 0.9) & (batch.images[:, 1] < 0.1)
        assert int(robot.sum()) == 16 * 4
        drawn = batch.images.clone()
        drawn[:, 0][robot], drawn[:, 1][robot], drawn[:, 2][robot] = 0.5, 0.5, 0.5  # the robot left out
        loss.decoder = _Fixed(drawn)
        costs[name] = float(loss(batch, slice(0, 4)))
    assert costs["shift"] == pytest.approx(costs["none"], rel=0.05), costs


def test_the_momentum_target_moves_by_tau_after_each_step() -> None:
    torch.manual_seed(0)
    network = SRLNetwork((3, 16, 16), 4, {"atc": 1.0}, {}, {})
    target = network.target_encoder
    assert all(torch.equal(a, b) for a, b in zip(target.parameters(), network.encoder.parameters()))
    assert not any(p.requires_grad for p in target.parameters())
    assert {id(p) for p in network.trainableParameters()}.isdisjoint(id(p) for p in target.parameters())
    with torch.no_grad():
        for parameter in network.encoder.parameters():
            parameter.add_(1.0)
    old = [p.clone() for p in target.parameters()]
    network.updateTarget(0.25)
    for before, after, online in zip(old, target.parameters(), network.encoder.parameters()):
        torch.testing.assert_close(after, 0.75 * before + 0.25 * online)
    # in training: after each optimiser step, tau of the way towards the encoder's new weights
    data = numberedData([30, 30])
    steps = []
    original = network.updateTarget

    def record(tau: float) -> None:
        online = [p.detach().clone() for p in network.encoder.parameters()]
        previous = [p.clone() for p in target.parameters()]
        original(tau)
        steps.append(max(float((t - (1 - tau) * b - tau * o).abs().max())
                         for t, b, o in zip(target.parameters(), previous, online)))

    network.updateTarget = record
    history = trainNetwork(network, data, np.arange(60), np.arange(0), TrainSettings(
        updates=5, batch_size=8, patience=0, progress=False, augment="shift", tau=0.1))
    assert len(steps) == 5 and max(steps) < 1e-6 and history[-1]["updates"] == 5


def test_updates_set_the_number_of_optimiser_steps() -> None:
    torch.manual_seed(0)
    network = SRLNetwork((3, 16, 16), 4, {"autoencoder": 1.0}, {}, {})
    data = numberedData([50])
    history = trainNetwork(network, data, np.arange(50), np.arange(0),
                           TrainSettings(updates=17, batch_size=8, patience=0, progress=False))
    # 7 minibatches an epoch: 7 + 7 + 3
    assert [entry["updates"] for entry in history] == [7, 14, 17]


def test_summary_says_early_stopping_ended_the_updates_asked_for(tinyDataset: str, tmp_path, monkeypatch,  # noqa: F811
                                                                  capsys) -> None:
    """With --updates, early stopping that ends the training before that many steps is said, as with --epochs."""

    def firstEpochOnly(losses: dict, lows: dict, weights: dict) -> bool:  # only epoch 1 is ever a new low
        if lows:
            return False
        lows.update(losses)
        return True

    monkeypatch.setattr(trainer, "_improves", firstEpochOnly)
    folder = trained(tinyDataset, tmp_path, "--srl-model", "autoencoder", "--updates", "50", "--patience", "1",
                     "--batch-size", "32")
    summary = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Loss ("))
    with open(os.path.join(folder, "exp_config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    assert config["epochs_trained"] == 2 and config["updates_trained"] < 50
    assert summary.endswith(" run (stopped early: no better loss in 1 epoch)"), summary


def test_the_progress_bar_names_the_epoch_under_way(monkeypatch) -> None:
    """The bar's description, set at each epoch's end, named that epoch and its update count all through the next
    epoch, while the bar's own count moved on: it now names the epoch under way (the bar counts the updates)."""
    stream = io.StringIO()

    class EveryUpdate(tqdm):  # every update drawn, into the test's stream
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **{**kwargs, "file": stream, "mininterval": 0, "miniters": 1,
                                       "dynamic_ncols": False, "ncols": 200})

    monkeypatch.setattr("srl_models.trainer.tqdm", EveryUpdate)
    torch.manual_seed(0)
    network = SRLNetwork((3, 16, 16), 4, {"autoencoder": 1.0}, {}, {})
    trainNetwork(network, numberedData([50]), np.arange(50), np.arange(0),
                 TrainSettings(updates=17, batch_size=8, patience=0, progress=True))
    frames = [re.search(r"epoch (\d+)/3(.*?)\| *(\d+)/17 ", frame) for frame in stream.getvalue().split("\r")]
    shown = [(int(found[1]), int(found[3]), found[2]) for found in frames if found]
    assert {count for _, count, _ in shown} == set(range(1, 18)), stream.getvalue()
    for epoch, count, rest in shown:  # 7 minibatches an epoch: 7 + 7 + 3
        assert 7 * (epoch - 1) < count <= 7 * epoch and "update" not in rest, (epoch, count, rest)


# --- the models, trained ----------------------------------------------------------------------------------------------


def trained(data_folder: str, log_folder, *args: str) -> str:
    return trainFromArgs(["--data-folder", data_folder, "--log-folder", str(log_folder), "--state-dim", "8",
                          "--no-progress", "--no-eval", "--seed", "0", *args])


@pytest.fixture(scope="module")
def kukaDataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    """10 random episodes of KukaButton at 32x32 (about 250 frames): an arm large in the frame, which a few dozen
    contrastive updates learn to tell apart (MobileRobot's 32x32 robot covers a pixel or two)."""
    save_path = tmp_path_factory.mktemp("kuka_data")
    result = runModule("environments.dataset_generator", "--env", "KukaButtonGymEnv-v0", "--name", "kuka",
                       "--save-path", save_path, "--num-episode", 10, "--img-shape", 3, 32, 32, "--seed", 0,
                       "--no-progress")
    assert result.returncode == 0, result.stderr
    return os.path.join(save_path, "kuka")


def probeOf(folder: str, dataset: Dataset) -> float:
    """:return: the linear probe's R^2 of a trained model on every frame of the dataset"""
    states = loadSRLModel(folder).getState(dataset.loadImages())
    return linearProbe(states, dataset.states(), heldOutEpisodes(dataset.episodeIndex()))["mean"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["atc", "curl"])
def test_contrastive_model_learns_and_beats_a_random_encoder(name: str, kukaDataset: str, tmp_path) -> None:
    folder = trained(kukaDataset, tmp_path, "--srl-model", name, "--updates", "60", "--batch-size", "32",
                     "--val-split", "0", "--patience", "0")
    with open(os.path.join(folder, "exp_config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    assert config["srl_model"] == name and config["updates_trained"] == 60 and config["batch_size"] == 32
    assert config.get("augment") == (None if name == "atc" else "shift")
    assert config["tau"] == (0.01 if name == "atc" else 0.05) and config["horizon"] == (1 if name == "atc" else 0)
    with open(os.path.join(folder, "training_history.json"), encoding="utf-8") as handle:
        losses = [entry["train"]["total"] for entry in json.load(handle)]
    assert min(losses[-3:]) < losses[0] - 0.1, losses
    model = loadSRLModel(folder)
    assert isinstance(model, ATCModel if name == "atc" else CURLModel)
    random_folder = trained(kukaDataset, tmp_path / "random", "--srl-model", "random")
    assert isinstance(loadSRLModel(random_folder), RandomModel)
    dataset = Dataset.open(kukaDataset)
    learned, random = probeOf(folder, dataset), probeOf(random_folder, dataset)
    assert learned > random + 0.05, (learned, random)
    # the states come from the online encoder, not the momentum target
    images = dataset.loadImages(np.arange(4))
    online = model.network.encoder(torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255)[1]
    np.testing.assert_allclose(model.getState(images), online.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert not torch.equal(model.network.target_encoder.to_state.weight, model.network.encoder.to_state.weight)


def test_augment_shift_for_a_2018_loss_is_recorded(tinyDataset: str, tmp_path) -> None:  # noqa: F811
    plain = trained(tinyDataset, tmp_path / "plain", "--srl-model", "autoencoder", "--epochs", "1")
    shifted = trained(tinyDataset, tmp_path / "shift", "--srl-model", "autoencoder", "--epochs", "1",
                      "--augment", "shift")
    configs = []
    for folder in (plain, shifted):
        with open(os.path.join(folder, "exp_config.json"), encoding="utf-8") as handle:
            configs.append(json.load(handle))
    # without augmentation the exp_config has the keys it always had (same recipe as before the option existed)
    assert not {"augment", "horizon", "tau", "updates"} & set(configs[0]) and configs[1]["augment"] == "shift"
    weights = [torch.load(os.path.join(f, "srl_model.pt"), weights_only=True) for f in (plain, shifted)]
    assert not torch.equal(weights[0]["encoder.to_state.weight"], weights[1]["encoder.to_state.weight"])


def test_the_shift_pad_is_recorded_where_it_is_not_the_default(tinyDataset: str, tmp_path, capsys,  # noqa: F811
                                                               ) -> None:
    configs = {}
    for name, args in (("default", []), ("pad1", ["--shift-pad", "1"]), ("pad4", ["--shift-pad", str(PAD)])):
        folder = trained(tinyDataset, tmp_path / name, "--srl-model", "curl", "--updates", "2", "--batch-size", "8",
                         *args)
        with open(os.path.join(folder, "exp_config.json"), encoding="utf-8") as handle:
            configs[name] = json.load(handle)
    out = capsys.readouterr().out
    assert configs["pad1"]["shift_pad"] == 1 and "augment shift (up to 1 pixel)," in out
    # PAD, given or not, is the recipe curl had before the flag existed: no key, the same recipe for prepare
    assert "shift_pad" not in configs["default"] and "shift_pad" not in configs["pad4"]
    recipes = [trainingSettings(SRLTrainConfig(data_folder=tinyDataset, srl_model="curl", shift_pad=pad), tinyDataset)
               for pad in (None, PAD, 1)]
    assert recipes[0] == recipes[1] != recipes[2] and recipes[2]["shift_pad"] == 1


# --- the linear probe --------------------------------------------------------------------------------------------------


def test_linear_probe_reads_the_true_state_and_not_noise() -> None:
    rng = np.random.default_rng(0)
    ground_truth = rng.uniform(-1, 1, (1200, 2))
    episodes = np.repeat(np.arange(12), 100)
    held_out = heldOutEpisodes(episodes, seed=0)
    assert held_out.sum() == 200 and len(np.unique(episodes[held_out])) == 2  # whole episodes, a fifth of them
    assert linearProbe(ground_truth, ground_truth, held_out)["mean"] > 0.999
    mixed = ground_truth @ rng.normal(size=(2, 16)) + 0.01 * rng.normal(size=(1200, 16))
    assert linearProbe(mixed, ground_truth, held_out)["mean"] > 0.99
    noise = linearProbe(rng.normal(size=(1200, 16)), ground_truth, held_out)
    assert abs(noise["mean"]) < 0.1 and noise["n_fit"] == 1000 and noise["n_held_out"] == 200
    constant = linearProbe(np.ones((1200, 3)), ground_truth, held_out)
    assert constant["mean"] <= 0.0 and np.isfinite(constant["mean"])
    # a column constant on the fitted frames up to float32 rounding (a PCA's trailing components on a short dataset)
    # but not on the held-out ones: left out, not blown up to unit variance (it scored -5e4)
    rounding = np.where(held_out, rng.normal(size=1200), 1.0 + 1e-9 * rng.normal(size=1200))
    assert linearProbe(np.column_stack([ground_truth, rounding]), ground_truth, held_out)["mean"] > 0.999
    # a small column beside one with a large offset is not rounding noise: it still counts
    offset = 1000.0 + rng.normal(size=1200)
    assert linearProbe(np.column_stack([offset, 1e-4 * ground_truth]), ground_truth, held_out)["mean"] > 0.999
    with pytest.raises(ValueError, match="needs 2 or more"):
        heldOutEpisodes(np.zeros(10, dtype=int))
    with pytest.raises(ValueError, match="bool mask"):
        linearProbe(ground_truth, ground_truth, held_out[:-1])


# --- bad input -----------------------------------------------------------------------------------------------------------


BAD_INPUTS = [
    (["--srl-model", "vae", "--augment", "flip"], "argument --augment: invalid choice: 'flip' (choose from 'none', "
                                                   "'shift')"),
    (["--srl-model", "atc", "--horizon", "60"], "--horizon 60 is longer than the dataset's episodes allow (the "
                                                "longest training episode has 50 frames"),
    (["--srl-model", "atc", "--batch-size", "1"], "--batch-size 1: the atc loss contrasts each frame with the other "
                                                  "frames of its minibatch, which needs 2 or more (its default: 256)"),
    (["--srl-model", "curl", "--batch-size", "1"], "--batch-size 1: the curl loss contrasts"),
    (["--srl-model", "robotic_priors", "--batch-size", "1"],
     "--batch-size 1: the robotic_priors loss compares pairs of the transitions of its minibatch, which needs 2 or "
     "more"),
    (["--srl-model", "vae", "--horizon", "3"], "--horizon 3: only the atc loss reads pairs at a chosen distance"),
    (["--srl-model", "vae", "--tau", "0.1"], "--tau 0.1: only the atc, curl losses have a momentum target"),
    (["--srl-model", "atc", "--tau", "2"], "--tau 2 must be in (0, 1]"),
    (["--srl-model", "curl", "--augment", "none"], "--augment none: the curl loss contrasts two augmentations"),
    (["--losses", "atc:1", "inverse:1", "--horizon", "2"], "the losses read pairs of frames at different distances "
                                                           "(inverse: 1, atc: 2)"),
    (["--srl-model", "vae", "--updates", "0"], "argument --updates: '0' must be a positive integer"),
    (["--srl-model", "vae", "--shift-pad", "2"], "--shift-pad 2 sets --augment shift's largest shift, and the views "
                                                 "here are not shifted (--augment none)"),
    (["--srl-model", "pca", "--shift-pad", "2"], "(--augment none; --srl-model pca trains no loss)"),
    (["--srl-model", "curl", "--shift-pad", "0"], "argument --shift-pad: '0' is out of range (1..16)"),
]


@pytest.mark.parametrize("args, message", BAD_INPUTS)
def test_bad_input(args: list[str], message: str, tinyDataset: str, tmp_path,  # noqa: F811
                   capsys: pytest.CaptureFixture) -> None:
    before = snapshot(tinyDataset)
    logs = tmp_path / "logs"
    with pytest.raises(SystemExit) as exit_info:
        runCommand(main, ["--data-folder", tinyDataset, "--log-folder", str(logs), "--no-progress", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert not logs.exists() and snapshot(tinyDataset) == before


def test_episode_split_keeps_pairs_inside_training_episodes(tinyDataset: str) -> None:  # noqa: F811
    dataset = Dataset.open(tinyDataset)
    train_rows, _ = splitEpisodes(dataset.episodeIndex(), 0.25, 0)
    after = framesAfter(dataset["episode_starts"])
    episode = dataset.episodeIndex()
    for horizon in (1, 7, 49):
        anchors = train_rows[after[train_rows] >= horizon]
        assert len(anchors) and np.all(episode[anchors + horizon] == episode[anchors])


@pytest.mark.parametrize("negatives", [True, False])
def test_the_horizon_refusal_suggests_the_largest_that_trains(tinyDataset: str, negatives: bool) -> None:  # noqa: F811
    """The bound comes from the training rows (held-out episodes give no anchors) and the anchors a loss needs."""
    dataset = Dataset.open(tinyDataset)
    train_rows, _ = splitEpisodes(dataset.episodeIndex(), 0.25, 0)
    with pytest.raises(UsageError, match="choose a horizon of at most") as refused:
        checkHorizon(dataset, train_rows, 1000, negatives)
    largest = int(re.search(r"at most (\d+)", str(refused.value)).group(1))
    checkHorizon(dataset, train_rows, largest, negatives)  # accepted
    with pytest.raises(UsageError, match=f"at most {largest}$"):
        checkHorizon(dataset, train_rows, largest + 1, negatives)


def test_the_horizon_refusal_names_the_longest_training_episode() -> None:
    """A held-out episode gives no pair: the longest episode the refusal names is a training one, with the bound."""
    starts = np.zeros(160, dtype=bool)
    starts[[0, 100, 130]] = True  # episodes of 100, 30 and 30 frames
    train_rows = np.arange(100, 160)  # the 100-frame episode held out
    with pytest.raises(UsageError, match=r"^--horizon 50 is longer than the dataset's episodes allow \(the longest "
                                         r"training episode has 30 frames; 0 training frames .*at most 29$"):
        checkHorizon({"episode_starts": starts}, train_rows, 50, True)


def test_the_horizon_refusal_counts_one_training_frame_in_the_singular() -> None:
    """One training frame with a partner at the horizon is "1 training frame has", not "1 training frames have"."""
    starts = np.zeros(80, dtype=bool)
    starts[[0, 40]] = True  # two episodes of 40 frames, the second held out
    with pytest.raises(UsageError, match=r"; 1 training frame has a frame 39 steps later, 2 needed\): choose a "
                                         r"horizon of at most 38$"):
        checkHorizon({"episode_starts": starts}, np.arange(40), 39, True)


def test_too_few_pairs_at_horizon_0_or_1_say_how_many_and_what_to_record(tinyDataset: str) -> None:  # noqa: F811
    """At the default horizons no shorter one can help: the refusal counts the training frames that give a pair (a
    contrastive loss needs 2), instead of saying there is none or naming a horizon 0."""
    dataset = Dataset.open(tinyDataset)
    last = int(np.flatnonzero(framesAfter(dataset["episode_starts"]) == 0)[0])  # the first episode's last frame
    two = np.array([last - 1, last])  # one of them has a next frame in its episode
    with pytest.raises(UsageError, match=r"^1 training frame has a next frame in its episode, 2 needed \(a "
                                         r"contrastive loss .*\): record more or longer episodes, or hold out fewer"):
        checkHorizon(dataset, two, 1, True)
    checkHorizon(dataset, two, 1, False)  # one pair trains the inverse model
    with pytest.raises(UsageError, match=r"^1 training frame, 2 needed \(a contrastive loss"):
        checkHorizon(dataset, np.array([last]), 0, True)
    with pytest.raises(UsageError, match=r"^0 training frames have a next frame in their episode, 1 needed: record"):
        checkHorizon(dataset, np.array([last]), 1, False)
    every = np.arange(len(dataset["episode_starts"]))
    assert "--val-split" not in trainer.tooFewAnchors(1, 1, True, held_out=False)
    checkHorizon(dataset, every, 1, True)


# --- what the header and its notes say -------------------------------------------------------------------------------


def test_held_out_frames_without_enough_pairs_say_the_best_epoch_is_on_training_loss(
        tinyDataset: str, tmp_path, capsys) -> None:  # noqa: F811
    """One held-out episode of L frames holds one pair at horizon L - 1, and InfoNCE needs 2: no validation loss, and a
    note says so (one at L - 2 validates)."""
    dataset = Dataset.open(tinyDataset)
    _, val_rows = splitEpisodes(dataset.episodeIndex(), 0.25, 0)
    longest = int((framesAfter(dataset["episode_starts"])[val_rows]).max())  # the held-out episode's length - 1
    outputs = []
    for horizon in (longest, longest - 1):
        trained(tinyDataset, tmp_path / str(horizon), "--srl-model", "atc", "--horizon", str(horizon), "--updates", "1",
                "--val-split", "0.25", "--batch-size", "32")
        outputs.append(capsys.readouterr().out)
    note = (f"note: the {len(val_rows)} held-out frames hold 1 pair at horizon {longest} (2 needed): the best epoch is "
            "chosen by training loss\n")
    assert note in outputs[0] and "\nLoss (train): " in outputs[0], outputs[0]
    assert "note: " not in outputs[1] and "\nLoss (val): " in outputs[1], outputs[1]
    note = trainer.validationNote
    assert note(np.array([3, 2, 1, 0]), None, False) is None  # without pairs every frame is a row of its own
    chosen = "the best epoch is chosen by training loss"
    assert note(np.array([0]), None, True) == f"note: 1 held-out frame (2 needed): {chosen}"
    assert note(np.array([0]), 0, True) == f"note: the 1 held-out frame holds 1 pair of views (2 needed): {chosen}"
    assert note(np.array([1, 0]), 1, False) is None and note(np.array([]), 5, True) is None


def test_curl_contrasts_two_views_of_each_frame(tinyDataset: str, tmp_path, capsys,  # noqa: F811
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """curl has no horizon: its pairs are the same frame twice (distance 0, each view shifted on its own), which the
    header says and the exp_config records (horizon 0, and pair_frames "same")."""
    horizons = []

    def spy(network, data, train_rows, val_rows, settings):
        horizons.append(settings.horizon)
        return trainNetwork(network, data, train_rows, val_rows, settings)

    monkeypatch.setattr(train_module, "trainNetwork", spy)
    folder = trained(tinyDataset, tmp_path, "--srl-model", "curl", "--updates", "1", "--batch-size", "32")
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Dataset "))
    assert horizons == [0]
    assert header.endswith("1 update of minibatches of 32, augment shift, two views of each frame, momentum target "
                           "tau 0.05") and "horizon" not in header, header
    with open(os.path.join(folder, "exp_config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    assert config["horizon"] == 0 and config["pair_frames"] == "same"
    # prepare reuses a curl model only when it records the same pairs
    recipe = trainingSettings(SRLTrainConfig(data_folder=tinyDataset, srl_model="curl"), tinyDataset)
    assert recipe["horizon"] == 0 and recipe["pair_frames"] == "same"
