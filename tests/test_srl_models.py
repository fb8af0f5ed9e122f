"""Unit tests of the learned SRL models (srl_models: backbone, losses, network, models, pca, trainer), trained
in-process on one tiny generated dataset (32x32 images): every model's training loss goes down, save/load gives
identical states, getState in one batch equals image by image, bad image shapes and pixel values are refused."""
from __future__ import annotations

import json
import os
import pickle
import shutil
from types import SimpleNamespace

import cv2
import numpy as np
import pytest
import torch
from conftest import runModule

from environments import dataset_generator
from environments.dataset import Dataset
from rl_baselines.evolution_strategies.ars import ARSModel
from srl_models import train as train_module
from srl_models import trainer as trainer_module
from srl_models.losses import LOSSES, LossContext, sameActionPairs
from srl_models.models import InverseModel, RandomModel, SRLCombinationModel, SRLSplitsModel, VAEModel
from srl_models.pca import PCAModel, topComponents
from srl_models.prepare import trainingSettings
from srl_models.registry import loadSRLModel
from srl_models.train import trainFromArgs
from srl_models.train_config import SRLTrainConfig
from srl_models.train_data import rewardClasses, rewardClassOf
from srl_models.trainer import TrainingData, TrainSettings, bestEpoch, splitEpisodes, splitNote, trainNetwork
from srl_toolbox.cli import runCommand
from srl_toolbox.files import sha256File

N_EPISODES, N_STEPS, IMG = 4, 50, 32
COMMON_ARGS = ["--no-eval", "--no-progress", "--state-dim", "8", "--seed", "1"]
TRAIN_ARGS = [*COMMON_ARGS, "--batch-size", "32"]  # pca and random train no loss: they take no --batch-size


@pytest.fixture(scope="session")
def tinyDataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    """4 episodes of 50 random steps of MobileRobot, 32x32 images (about a second to record)."""
    save_path = tmp_path_factory.mktemp("srl_data")
    result = runModule("environments.dataset_generator", "--env", "MobileRobotGymEnv-v0", "--name", "tiny",
                       "--save-path", save_path, "--num-episode", N_EPISODES, "--max-steps", N_STEPS,
                       "--img-shape", 3, IMG, IMG, "--seed", 0, "--no-progress")
    assert result.returncode == 0, result.stderr
    return os.path.join(save_path, "tiny")


@pytest.fixture(scope="module")
def images(tinyDataset: str) -> np.ndarray:
    return Dataset.open(tinyDataset).loadImages()


def train(data_folder: str, log_folder, *args: str) -> str:
    """:return: the model folder of an in-process training run"""
    no_loss = {"pca", "random"} & set(args)
    return trainFromArgs(["--data-folder", data_folder, "--log-folder", str(log_folder),
                          *(COMMON_ARGS if no_loss else TRAIN_ARGS), *args])


def history(folder: str) -> list[dict]:
    with open(os.path.join(folder, "training_history.json"), encoding="utf-8") as handle:
        return json.load(handle)


def exp_config(folder: str) -> dict:
    with open(os.path.join(folder, "exp_config.json"), encoding="utf-8") as handle:
        return json.load(handle)


def checkSaveLoad(folder: str, images: np.ndarray) -> None:
    """Loaded by name from the folder: same states as the model in memory, batch == per image, shape refused."""
    model = loadSRLModel(folder)
    again = loadSRLModel(folder)
    batch = model.getState(images[:12])
    assert batch.shape == (12, model.state_dim) and batch.dtype == np.float32
    np.testing.assert_array_equal(batch, again.getState(images[:12]))
    single = np.concatenate([model.getState(images[i:i + 1]) for i in range(12)])
    np.testing.assert_allclose(batch, single, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"\(32, 32, 3\).*\(16, 16, 3\)"):
        model.getState(np.zeros((2, 16, 16, 3), dtype=np.uint8))
    # pixel values: integers within 0-255 are the same images; floats (a [0, 1] image?) and values outside are refused
    # (the same batch of 3 either way: a batch's size may pick other CPU kernels, bit for bit another sum)
    np.testing.assert_array_equal(model.getState(images[:3].astype(np.int64)), model.getState(images[:3]))
    with pytest.raises(ValueError, match=r"uint8 images .*got dtype float32; images in \[0, 1\]"):
        model.getState(images[:3].astype(np.float32) / 255.0)
    with pytest.raises(ValueError, match=r"got int64 values from -1 to 255"):
        model.getState(np.where(images[:3] == 0, -1, images[:3].astype(np.int64)))
    if model.DECODES:
        decoded = model.decode(batch)
        assert decoded.shape == images[:12].shape and decoded.dtype == np.uint8


# robotic_priors and forward also reach a constant state; the test asks only that the optimisation works
@pytest.mark.slow
@pytest.mark.parametrize("name", ["autoencoder", "dae", "vae", "inverse", "forward", "reward", "supervised",
                                  "robotic_priors", "srl_combination", "srl_splits"])
def test_model_trains_and_reloads(name: str, tinyDataset: str, images: np.ndarray, tmp_path) -> None:
    folder = train(tinyDataset, tmp_path, "--srl-model", name, "--epochs", "5", "--patience", "0")
    config = exp_config(folder)
    assert config["srl_model"] == name and config["state_dim"] == 8 and config["img_shape"] == [3, IMG, IMG]
    losses = [entry["train"]["total"] for entry in history(folder)]
    assert len(losses) == 5 and losses[-1] < losses[0], losses
    # robotic priors' validation loss is lowest for a constant state: its best epoch is chosen on the training loss
    assert config["selected_on"] == ("train" if name == "robotic_priors" else "val")
    expected = {"training_curve.png", "exp_config.json", "srl_model.pt", "training_history.json"}
    if name in ("autoencoder", "dae", "vae", "srl_combination", "srl_splits"):
        expected.add("reconstructions.png")
    assert set(os.listdir(folder)) == expected
    checkSaveLoad(folder, images)


@pytest.mark.slow
def test_pca_and_random(tinyDataset: str, images: np.ndarray, tmp_path, capsys) -> None:
    pca_folder = train(tinyDataset, tmp_path, "--srl-model", "pca")
    # nothing is trained by gradient: the plan line said "at most N epochs of minibatches of 64"
    plan = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Dataset "))
    assert plan.endswith("losses none, state dim 8; no gradient updates (no loss to train)"), plan
    checkSaveLoad(pca_folder, images)
    pca = loadSRLModel(pca_folder)
    assert isinstance(pca, PCAModel) and exp_config(pca_folder)["weights"] == ["srl_model.npz"]
    # 8 components reconstruct better than 1, and than the mean image alone
    one = PCAModel(1, (3, IMG, IMG))
    assert pca.reconstructionError(images) < one.fit(images) < PCAModel(1, (3, IMG, IMG)).reconstructionError(images)
    first = loadSRLModel(train(tinyDataset, tmp_path / "a", "--srl-model", "random")).getState(images[:5])
    second = loadSRLModel(train(tinyDataset, tmp_path / "b", "--srl-model", "random")).getState(images[:5])
    np.testing.assert_array_equal(first, second)  # seeded
    other = loadSRLModel(train(tinyDataset, tmp_path / "c", "--srl-model", "random", "--seed", "2"))
    assert not np.allclose(first, other.getState(images[:5]))
    random_folder = train(tinyDataset, tmp_path / "d", "--srl-model", "random")
    checkSaveLoad(random_folder, images)
    # no loss, no curve: the model folder's listing in docs/srl.md says so
    for folder in (pca_folder, random_folder):
        assert not {"training_curve.png", "training_history.json"} & set(os.listdir(folder))
    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "srl.md"), encoding="utf-8") as handle:
        listing = handle.read()
    assert "training_history.json  the same figures (none for pca and random)" in listing


def test_randomized_svd_matches_exact() -> None:
    rng = np.random.default_rng(0)
    data = (rng.standard_normal((300, 6)) * [9, 7, 5, 3, 2, 1]) @ np.linalg.qr(rng.standard_normal((40, 40)))[0][:6]
    data = (data + 0.01 * rng.standard_normal(data.shape)).astype(np.float32)
    data -= data.mean(0)
    exact, exact_var = topComponents(data, 4)
    approx, approx_var = topComponents(data, 4, exact_below=10)
    np.testing.assert_allclose(np.abs((exact * approx).sum(1)), 1.0, atol=1e-4)
    np.testing.assert_allclose(approx_var, exact_var, rtol=1e-4)


def test_same_seed_same_weights(tinyDataset: str, tmp_path) -> None:
    args = ["--srl-model", "vae", "--epochs", "2", "--losses", "vae:1", "inverse:2"]
    first, second = train(tinyDataset, tmp_path / "a", *args), train(tinyDataset, tmp_path / "b", *args)
    weights = [torch.load(os.path.join(f, "srl_model.pt"), weights_only=True) for f in (first, second)]
    assert weights[0].keys() == weights[1].keys()
    for key in weights[0]:
        assert torch.equal(weights[0][key], weights[1][key]), key
    # and the same bytes: a file hash is a repeatability check (the zip's records do not take a temporary name)
    assert sha256File(os.path.join(first, "srl_model.pt")) == sha256File(os.path.join(second, "srl_model.pt"))
    # trained as "vae" with an inverse loss: loaded by that name, with its inverse head
    model = loadSRLModel(first)
    assert isinstance(model, VAEModel) and set(model.network.losses) == {"vae", "inverse"}


def test_split_representation_parts(tinyDataset: str, images: np.ndarray, tmp_path) -> None:
    folder = train(tinyDataset, tmp_path, "--losses", "autoencoder:1", "inverse:10", "--split-dims",
                   "autoencoder:6", "inverse:2", "--epochs", "1")
    model = loadSRLModel(folder)
    assert isinstance(model, SRLSplitsModel) and exp_config(folder)["split_dims"] == {"autoencoder": 6, "inverse": 2}
    states = model.getState(images[:4])
    changed = states.copy()
    changed[:, 6:] += 5.0  # the inverse model's part: the decoder never sees it
    np.testing.assert_array_equal(model.decode(states), model.decode(changed))
    assert SRLSplitsModel.defaultSplit(32, {"autoencoder": 1, "inverse": 10}) == {"autoencoder": 24, "inverse": 8}
    assert SRLSplitsModel.defaultSplit(7, {"vae": 1, "reward": 1, "inverse": 1}) == {"vae": 3, "reward": 2,
                                                                                     "inverse": 2}


def test_two_camera_and_odd_image_sizes() -> None:
    torch.manual_seed(0)
    for shape in ((6, 32, 32), (3, 40, 52)):
        model = VAEModel(5, shape, {"losses": {"vae": 1.0}})
        images = np.random.default_rng(0).integers(0, 256, (3, shape[1], shape[2], shape[0]), dtype=np.uint8)
        assert model.getState(images).shape == (3, 5)
        assert model.decode(model.getState(images)).shape == images.shape


def test_inverse_continuous_actions(tmp_path) -> None:
    torch.manual_seed(0)
    model = InverseModel(4, (3, 32, 32), {"losses": {"inverse": 1.0}, "continuous_actions": True, "action_dim": 2})
    model.save(str(tmp_path))
    loaded = loadSRLModel(str(tmp_path))
    images = np.random.default_rng(1).integers(0, 256, (2, 32, 32, 3), dtype=np.uint8)
    np.testing.assert_array_equal(model.getState(images), loaded.getState(images))
    assert not loaded.DECODES and RandomModel(4, (3, 32, 32)).exp_config["losses"] == {}


def test_loss_helpers() -> None:
    pairs = sameActionPairs(torch.tensor([0, 1, 0, 0]))
    assert pairs.nonzero().tolist() == [[0, 2], [0, 3], [2, 3]]
    # continuous actions: refused when the head is built (the training command refuses the dataset before)
    with pytest.raises(ValueError, match="needs discrete actions"):
        LOSSES["robotic_priors"](4, _context(continuous_actions=True, action_dim=2))
    reward = LOSSES["reward"](4, _context(n_reward_classes=3))
    reward.prepare({"rewards": torch.tensor([1, 1, 1, 0])})
    # inverse frequency: the rare class weighs three times the common one, an absent class nothing
    np.testing.assert_allclose(reward.class_weights.numpy(), [2.0, 2 / 3, 0.0], rtol=1e-6)


def test_foreground_weighted_reconstruction() -> None:
    background = torch.full((3, 32, 32), 0.5)
    images = background.repeat(2, 1, 1, 1)
    images[0, :, 4:6, 4:6] = 1.0  # a 2x2 "robot" in the first image, none in the second
    plain, weighted = (LOSSES["autoencoder"](4, _context(foreground_weight=w)) for w in (0.0, 9.0))
    for loss in (plain, weighted):
        loss.prepare({"background": background})
    assert plain.pixelWeights(images) is None
    weights = weighted.pixelWeights(images)
    # the robot's 4 pixels weigh 10 times the others; each image's weights still average 1
    assert weights[0, 0, 4, 4] == pytest.approx(10 * weights[0, 0, 0, 0].item())
    np.testing.assert_allclose(weights.mean(dim=(1, 2, 3)).numpy(), [1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(weights[1].numpy(), 1.0)
    # a reconstruction that draws the scene without the robot: the weighted error is ~10x the plain one
    errors = [loss.squaredError(background.expand(2, -1, -1, -1), images)[0].item() for loss in (plain, weighted)]
    assert errors[1] == pytest.approx(errors[0] * 10 * 1024 / (1020 + 40), rel=1e-5)
    # the background is computed from the training frames (median: a robot crossing a pixel does not show)

    frames = np.full((5, 8, 8, 3), 100, dtype=np.uint8)
    frames[np.arange(5), np.arange(5), 0] = 255
    data = TrainingData(frames, np.array([True, False, False, False, False]), torch.device("cpu"))
    np.testing.assert_allclose(data.background(np.arange(5)).numpy(), 100 / 255, rtol=1e-6)


def test_background_is_computed_only_for_foreground_weighting(tinyDataset: str, tmp_path, monkeypatch) -> None:
    calls = []
    original = TrainingData.background
    monkeypatch.setattr(TrainingData, "background", lambda self, rows: calls.append(len(rows)) or original(self, rows))
    train(tinyDataset, tmp_path / "plain", "--srl-model", "autoencoder", "--epochs", "1")
    assert calls == []
    folder = train(tinyDataset, tmp_path / "weighted", "--srl-model", "autoencoder", "--epochs", "1",
                   "--foreground-weight", "5")
    assert len(calls) == 1 and exp_config(folder)["foreground_weight"] == 5.0


def test_srl_combination_weighs_the_foreground_by_default(tinyDataset: str, tmp_path) -> None:
    """srl_combination's reconstruction weighs the foreground 30 unless --foreground-weight says otherwise (also when
    --losses implies the model); every other model keeps the plain pixel error; prepare expects the same value, so
    that a model trained before the default changed is not reused."""
    default = train(tinyDataset, tmp_path / "default", "--srl-model", "srl_combination", "--epochs", "1")
    implied = train(tinyDataset, tmp_path / "implied", "--losses", "autoencoder:1", "inverse:1", "--epochs", "1")
    plain = train(tinyDataset, tmp_path / "plain", "--srl-model", "srl_combination", "--epochs", "1",
                  "--foreground-weight", "0")
    autoencoder = train(tinyDataset, tmp_path / "autoencoder", "--srl-model", "autoencoder", "--epochs", "1")
    assert SRLCombinationModel.DEFAULT_FOREGROUND_WEIGHT == 30.0
    weights = {name: exp_config(folder)["foreground_weight"]
               for name, folder in [("default", default), ("implied", implied), ("plain", plain),
                                    ("autoencoder", autoencoder)]}
    assert weights == {"default": 30.0, "implied": 30.0, "plain": 0.0, "autoencoder": 0.0}
    assert loadSRLModel(default).network.losses["autoencoder"].foreground_weight == 30.0  # the loss reads it back
    assert loadSRLModel(plain).network.losses["autoencoder"].foreground_weight == 0.0
    expected = {model: trainingSettings(SRLTrainConfig(data_folder=tinyDataset, srl_model=model), tinyDataset)
                for model in ("srl_combination", "srl_splits", "vae")}
    assert {model: entry["foreground_weight"] for model, entry in expected.items()} == {
        "srl_combination": 30.0, "srl_splits": 0.0, "vae": 0.0}
    # a combination without a reconstruction loss weighs no pixel: it records 0, as prepare expects
    no_pixels = train(tinyDataset, tmp_path / "no_pixels", "--losses", "supervised:1", "inverse:1", "--epochs", "1")
    assert exp_config(no_pixels)["srl_model"] == "srl_combination"
    assert exp_config(no_pixels)["foreground_weight"] == 0.0
    assert trainingSettings(SRLTrainConfig(data_folder=tinyDataset, losses=["supervised:1", "inverse:1"]),
                            tinyDataset)["foreground_weight"] == 0.0


def _context(**kwargs):
    return LossContext(img_shape=(3, 32, 32), feature_dim=64, **kwargs)


def test_episode_split() -> None:
    episodes = np.repeat(np.arange(10), 5)
    train_rows, val_rows = splitEpisodes(episodes, 0.2, seed=3)
    assert len(val_rows) == 10 and len(np.unique(episodes[val_rows])) == 2
    assert not set(episodes[train_rows]) & set(episodes[val_rows])
    np.testing.assert_array_equal(val_rows, splitEpisodes(episodes, 0.2, seed=3)[1])
    assert len(splitEpisodes(episodes[:5], 0.5, 0)[1]) == 0  # one episode: nothing to hold out
    assert len(splitEpisodes(episodes, 0.0, 0)[1]) == 0


def test_reward_classes() -> None:
    sparse = np.array([0, 0, -1, 0, 1], dtype=np.float32)
    config = rewardClasses(sparse)
    assert config == {"reward_classes": [-1.0, 0.0, 1.0]}
    np.testing.assert_array_equal(rewardClassOf(sparse, config), [1, 1, 0, 1, 2])
    shaped = -np.random.default_rng(0).random(1000)  # a shaped reward: minus a distance
    config = rewardClasses(shaped)
    assert len(config["reward_bins"]) == 9  # ten quantile bins
    np.testing.assert_array_equal(np.bincount(rewardClassOf(shaped, config)), [100] * 10)


def test_best_epoch_is_the_last_new_low_of_any_term() -> None:
    def network(validates: bool = True) -> SimpleNamespace:
        return SimpleNamespace(losses={"a": SimpleNamespace(VALIDATES=validates)}, weights={"a": 1.0})

    def entry(epoch: int, val: dict | None, train: dict | None = None) -> dict:
        return {"epoch": epoch, "val": val, "train": train or {"total": 1.0}}

    # one loss: the lowest validation total (the first of equal ones)
    single = [entry(1, {"ae": 3.0, "total": 3.0}), entry(2, {"ae": 1.0, "total": 1.0}),
              entry(3, {"ae": 1.0, "total": 1.0}), entry(4, {"ae": 2.0, "total": 2.0})]
    assert bestEpoch(single, network()) == 2
    # two losses (srl_splits on MobileRobot): the heavily weighted inverse term overfits after epoch 2 and the weighted
    # total is lowest there, but the reconstruction keeps improving until epoch 4: that epoch is kept
    split = [entry(1, {"autoencoder": 0.019, "inverse": 1.39, "total": 13.9}),
             entry(2, {"autoencoder": 0.005, "inverse": 0.88, "total": 8.8}),
             entry(3, {"autoencoder": 0.004, "inverse": 0.95, "total": 9.5}),
             entry(4, {"autoencoder": 0.002, "inverse": 1.10, "total": 11.0}),
             entry(5, {"autoencoder": 0.003, "inverse": 1.20, "total": 12.0})]
    assert bestEpoch(split, network()) == 4
    # a loss whose validation value is no guide: the training losses decide
    on_train = [entry(1, {"total": 0.0}, {"total": 2.0}), entry(2, {"total": 5.0}, {"total": 1.0})]
    assert bestEpoch(on_train, network(validates=False)) == 2
    # nothing finite: the last epoch (whose weights the network keeps)
    assert bestEpoch([entry(1, {"total": float("nan")}), entry(2, {"total": float("nan")})], network()) == 2


def test_a_loss_of_weight_zero_has_no_say_in_the_best_epoch(tinyDataset: str, images: np.ndarray,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """inverse:0 autoencoder:1: the inverse term is only watched; the autoencoder's lowest epoch is kept, and the
    untrained inverse head's drifting loss neither keeps a later epoch nor holds off early stopping."""
    def terms(autoencoder: float, inverse: float) -> dict:
        return {"inverse": inverse, "autoencoder": autoencoder, "total": autoencoder}

    scripted = [terms(0.05, 1.40), terms(0.02, 1.39), terms(0.03, 1.38), terms(0.04, 1.37), terms(0.05, 1.36)]
    losses = {"inverse": SimpleNamespace(VALIDATES=True), "autoencoder": SimpleNamespace(VALIDATES=True)}
    watched = SimpleNamespace(losses=losses, weights={"inverse": 0.0, "autoencoder": 1.0})
    history = [{"epoch": epoch, "train": {}, "val": val} for epoch, val in enumerate(scripted, 1)]
    assert bestEpoch(history, watched) == 2
    # a zero-weight robotic_priors does not send the choice to the training losses
    watched.losses["inverse"] = SimpleNamespace(VALIDATES=False)
    assert bestEpoch(history, watched) == 2
    # early stopping (--patience 2): the autoencoder's last new low is epoch 2, so training stops after epoch 4
    dataset = Dataset.open(tinyDataset)
    model = SRLCombinationModel(8, (3, IMG, IMG), {"n_actions": 4, "losses": {"inverse": 0.0, "autoencoder": 1.0}})
    data = TrainingData(images, dataset["episode_starts"], torch.device("cpu"), actions=dataset["actions"])
    train_rows, val_rows = splitEpisodes(dataset.episodeIndex(), 0.25, 0)
    script = iter(scripted[i // 2] for i in range(2 * len(scripted)))  # an epoch's training, then its validation
    monkeypatch.setattr(trainer_module, "_meanTerms", lambda *args: next(script))
    history = trainNetwork(model.network, data, train_rows, val_rows,
                           TrainSettings(epochs=5, batch_size=32, patience=2, progress=False))
    assert len(history) == 4


class _RecordedBar:
    """Stands in for tqdm in the trainer: what the bar is told, in order."""

    calls: list[tuple[str, object]] = []

    def __init__(self, **kwargs) -> None:
        self.calls.clear()

    def __enter__(self) -> _RecordedBar:
        return self

    def __exit__(self, *exc_info) -> None:
        pass

    def set_description(self, text: str, refresh: bool = True) -> None:
        self.calls.append(("description", text))

    def set_postfix(self, values: dict, refresh: bool = True) -> None:
        self.calls.append(("postfix", dict(values)))

    def update(self, count: int) -> None:
        self.calls.append(("update", count))


@pytest.mark.parametrize("val_split", [0.25, 0.0])
def test_the_bar_names_the_loss_that_picks_the_epoch_and_shows_each_updates_means(
        tinyDataset: str, images: np.ndarray, monkeypatch, val_split: float) -> None:
    """The description names the last epoch's validation loss (its training loss without held-out episodes); the
    postfix is set before the count moves, so each refresh shows the means of the updates it counts."""
    monkeypatch.setattr(trainer_module, "tqdm", _RecordedBar)
    dataset = Dataset.open(tinyDataset)
    model = VAEModel(4, (3, IMG, IMG), {})
    data = TrainingData(images, dataset["episode_starts"], torch.device("cpu"))
    train_rows, val_rows = splitEpisodes(dataset.episodeIndex(), val_split, 0)
    history = trainNetwork(model.network, data, train_rows, val_rows,
                           TrainSettings(epochs=2, batch_size=32, patience=0, progress=True))
    calls = _RecordedBar.calls
    updates = [index for index, (kind, _) in enumerate(calls) if kind == "update"]
    assert updates and all(calls[index - 1][0] == "postfix" for index in updates)
    last = [value for kind, value in calls if kind == "postfix"][-1]
    assert float(last["total"]) == pytest.approx(history[-1]["train"]["total"], rel=1e-3)
    which, losses = ("validation", history[0]["val"]) if val_split else ("training", history[0]["train"])
    assert ("description", f"SRL training (epoch 2/2, last epoch's {which} loss {losses['total']:.4g})") in calls


def test_kept_weights_are_the_best_epochs(tinyDataset: str, images: np.ndarray) -> None:
    """on_epoch sees each epoch's weights; the network ends with those of the epoch bestEpoch names."""
    dataset = Dataset.open(tinyDataset)
    model = SRLSplitsModel(8, (3, IMG, IMG), {"n_actions": 4, "losses": {"autoencoder": 1.0, "inverse": 10.0},
                                              "split_dims": {"autoencoder": 6, "inverse": 2}})
    data = TrainingData(images, dataset["episode_starts"], torch.device("cpu"), actions=dataset["actions"])
    train_rows, val_rows = splitEpisodes(dataset.episodeIndex(), 0.25, 0)
    states: dict[int, np.ndarray] = {}

    def record(entry: dict) -> None:
        states[entry["epoch"]] = model.getState(images[:5])
        entry["seen"] = True

    torch.manual_seed(0)
    history = trainNetwork(model.network, data, train_rows, val_rows,
                           TrainSettings(epochs=4, batch_size=32, patience=0, progress=False), on_epoch=record)
    assert sorted(states) == [1, 2, 3, 4] and all(entry["seen"] for entry in history)
    np.testing.assert_array_equal(model.getState(images[:5]), states[bestEpoch(history, model.network)])


def test_a_missing_frame_is_one_line_without_opencv_s_warning(tinyDataset: str, tmp_path, capfd) -> None:
    data = shutil.copytree(tinyDataset, str(tmp_path / "data"))
    missing = Dataset.open(data).imageFile(str(Dataset.open(data)["images_path"][3]), "")
    os.remove(missing)
    capfd.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        runCommand(train_module.main, ["--data-folder", data, "--log-folder", str(tmp_path / "logs"),
                                       "--srl-model", "pca", *COMMON_ARGS])
    err = capfd.readouterr().err  # OpenCV writes to the process's stderr: fd level
    assert exit_info.value.code == 2
    assert err == f"error: cannot read image {missing}: the file is missing\n", err


def test_a_frame_of_another_size_is_refused_not_resized(tinyDataset: str, tmp_path, capfd) -> None:
    """A frame whose size is not the dataset's recorded one is a damaged dataset: one line naming the file and both
    sizes, nothing trained (a frame of the recorded size is still resized to an asked --img-shape)."""
    data = shutil.copytree(tinyDataset, str(tmp_path / "data"))
    dataset = Dataset.open(data)
    _, height, width = dataset.img_shape
    odd = dataset.imageFile(str(dataset["images_path"][3]), "")
    cv2.imwrite(odd, np.zeros((height // 2, width // 2, 3), dtype=np.uint8))
    capfd.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        runCommand(train_module.main, ["--data-folder", data, "--log-folder", str(tmp_path / "logs"),
                                       "--srl-model", "pca", *COMMON_ARGS])
    assert exit_info.value.code == 2
    assert capfd.readouterr().err == (f"error: image {odd} is {height // 2}x{width // 2}, the dataset records "
                                      f"{height}x{width} images: record it again, or leave it out\n")
    assert not (tmp_path / "logs").exists()
    assert Dataset.open(tinyDataset).loadImages([0, 1], (3, 2 * height, 2 * width)).shape == (2, 2 * height,
                                                                                            2 * width, 3)


def test_split_note_says_what_whole_episodes_hold_out() -> None:
    assert splitNote(2, 0.1, 250, 500) == ("note: --val-split 0.1 holds out whole episodes: 1 of 2 episodes (250 of "
                                           "500 frames, 50%)")
    assert splitNote(1, 0.1, 0, 250) == ("note: --val-split 0.1 holds out whole episodes and the dataset has 1 "
                                         "episode: nothing is held out, the best epoch is chosen by training loss")
    assert splitNote(10, 0.1, 50, 500) is None and splitNote(2, 0.5, 250, 500) is None
    assert splitNote(2, 0.0, 0, 500) is None  # no validation asked: nothing to say


def test_one_episode_says_why_there_is_no_probe_and_no_validation(tmp_path, capsys) -> None:
    """A one-episode dataset: the dataset line, the epochs and the probe's "-" read right and say why."""
    assert dataset_generator.main(["--env", "MobileRobotGymEnv-v0", "--name", "one", "--save-path", str(tmp_path),
                                   "--num-episode", "1", "--max-steps", "20", "--img-shape", "3", "16", "16",
                                   "--no-progress"]) == 0
    assert "(1 episode, 20 frames" in capsys.readouterr().out
    trainFromArgs(["--data-folder", str(tmp_path / "one"), "--log-folder", str(tmp_path / "logs"), "--srl-model",
                   "vae", "--epochs", "1", "--batch-size", "8", "--state-dim", "2", "--no-progress"])
    out = capsys.readouterr().out
    assert "at most 1 epoch of minibatches" in out, out
    assert ("note: --val-split 0.1 holds out whole episodes and the dataset has 1 episode: nothing is held out, the "
            "best epoch is chosen by training loss") in out
    assert "probe R2 - (the frames come from a single episode: nothing to hold out)" in out


@pytest.mark.parametrize("content", [b"garbage\n", pickle.dumps(SimpleNamespace(a=1), protocol=2)])
def test_a_weights_file_of_no_tensors_is_named_damaged_without_torch_s_advice(content: bytes, tmp_path) -> None:
    """torch's refusal advises weights_only=False (running the file's code): the SRL and RL loaders say why in one
    line without it."""
    folder = train(_smallDataset(tmp_path), tmp_path / "srl", "--srl-model", "random")
    with open(os.path.join(folder, "srl_model.pt"), "wb") as handle:
        handle.write(content)
    with pytest.raises(ValueError) as raised:
        loadSRLModel(folder)
    assert "UnpicklingError: damaged or not a file of tensors (" in str(raised.value)
    assert "weights_only" not in str(raised.value) and "\n" not in str(raised.value)
    model_file = tmp_path / "ars_model.pt"
    model_file.write_bytes(content)
    with pytest.raises(ValueError, match=r"is not a readable ars model \(damaged or not a file of tensors \(") as rl:
        ARSModel.readModelFile(str(model_file))
    assert "weights_only" not in str(rl.value)


def test_a_weights_file_cut_short_is_one_sentence_not_torch_s_advice(tmp_path) -> None:
    """torch's zip reader goes on for several sentences of advice: the loaders keep its first, whole."""
    folder = train(_smallDataset(tmp_path), tmp_path / "srl", "--srl-model", "random")
    weights = os.path.join(folder, "srl_model.pt")
    with open(weights, "rb") as handle:
        head = handle.read(100)
    with open(weights, "wb") as handle:
        handle.write(head)
    with pytest.raises(ValueError) as raised:
        loadSRLModel(folder)
    assert str(raised.value) == (f"cannot load the SRL model in {folder!r}: srl_model.pt: RuntimeError: damaged or cut "
                                 "short (PytorchStreamReader failed reading zip archive: failed finding central "
                                 "directory)")
    model_file = tmp_path / "ars_model.pt"
    model_file.write_bytes(head)
    with pytest.raises(ValueError, match=r"is not a readable ars model \(damaged or cut short \(PytorchStreamReader "
                                         r"failed reading zip archive: failed finding central directory\)\)$"):
        ARSModel.readModelFile(str(model_file))


def _smallDataset(tmp_path) -> str:
    """:return: a dataset of 2 episodes of 10 steps at 16x16 (random and pca train on it in a second)"""
    dataset_generator.main(["--env", "MobileRobotGymEnv-v0", "--name", "small", "--save-path", str(tmp_path),
                            "--num-episode", "2", "--max-steps", "10", "--img-shape", "3", "16", "16", "--no-progress"])
    return os.path.join(tmp_path, "small")


def test_a_dataset_without_its_ground_truth_file_names_the_file(tinyDataset: str, tmp_path) -> None:
    """With ground_truth.npz gone, training said the dataset "has no 'images_path' (in ground_truth.npz)", as if the
    file were there without that array."""
    copy = str(tmp_path / "copy")
    shutil.copytree(tinyDataset, copy)
    os.remove(os.path.join(copy, "ground_truth.npz"))
    with pytest.raises(ValueError, match=rf"^dataset '{copy}' has no ground_truth.npz, which holds 'images_path' "
                                         r"needed by SRL training$"):
        Dataset.open(copy).require("images_path", purpose="SRL training")
    with np.load(os.path.join(tinyDataset, "ground_truth.npz")) as ground_truth:  # there, without the key
        np.savez(os.path.join(copy, "ground_truth.npz"),
                 **{key: ground_truth[key] for key in ground_truth.files if key != "images_path"})
    with pytest.raises(ValueError, match=r"has no 'images_path' \(in ground_truth.npz\)$"):
        Dataset.open(copy).require("images_path")
