"""The evaluate / explore_latent commands on a tiny dataset with in-test models (the metrics on synthetic data with
known answers: tests/test_srl_metric_values.py)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import warnings

import numpy as np
import pytest
import visdom
from conftest import runModule, snapshot
from matplotlib.image import imread

from environments.dataset import Dataset
from environments.dataset_generator import main as generateDataset
from srl_models import evaluate, explore_latent, registry
from srl_models.base import DATASET_FINGERPRINT_KEY, EXP_CONFIG_FILE, BaseSRLModel, SRLType
from srl_models.metrics import gtCorrelation, knnMse
from srl_models.models import SRLSplitsModel
from srl_models.train import trainFromArgs
from srl_toolbox.cli import runCommand

ENV = "MobileRobotGymEnv-v0"
IMG = (3, 32, 32)


# --- a tiny dataset and in-test models (the contract, without the training code) ----------------------------------


class LinearSRL(BaseSRLModel):
    """A fixed linear map of the flattened pixels (in [0, 1]) around their mean, saved as .npz."""

    WEIGHTS = "linear.npz"

    def __init__(self, state_dim, img_shape, exp_config=None, weights=None, mean=None):
        super().__init__(state_dim, img_shape, exp_config)
        self.weights = weights
        self.mean = mean

    def getState(self, observations):
        pixels = np.asarray(observations, dtype=np.float32).reshape(len(observations), -1) / 255.0
        return ((pixels - self.mean) @ self.weights.T).astype(np.float32)

    def save(self, folder):
        os.makedirs(folder, exist_ok=True)
        np.savez(os.path.join(folder, self.WEIGHTS), weights=self.weights, mean=self.mean)
        with open(os.path.join(folder, EXP_CONFIG_FILE), "w") as handle:
            json.dump({**self.exp_config, "state_dim": self.state_dim, "img_shape": list(self.img_shape),
                       "weights": [self.WEIGHTS], "api_version": 1}, handle)

    @classmethod
    def load(cls, folder, device="cpu"):
        with open(os.path.join(folder, EXP_CONFIG_FILE)) as handle:
            config = json.load(handle)
        with np.load(os.path.join(folder, cls.WEIGHTS)) as data:
            return cls(config["state_dim"], config["img_shape"], config, data["weights"], data["mean"])


class PCASRL(LinearSRL):
    """Principal components of the pixels: a linear autoencoder, it decodes."""

    DECODES = True

    def decode(self, states):
        pixels = np.asarray(states, dtype=np.float32) @ self.weights + self.mean
        channels, height, width = self.img_shape
        return (np.clip(pixels, 0, 1) * 255).round().astype(np.uint8).reshape(len(states), height, width, channels)


@pytest.fixture(scope="module")
def dataFolder(tmp_path_factory) -> str:
    """4 episodes of 40 steps, made in this process (no interpreter start)."""
    root = tmp_path_factory.mktemp("srl_metrics_data")
    assert generateDataset(["--env", ENV, "--num-episode", "4", "--max-steps", "40", "--name", "mr", "--save-path",
                            str(root), "--img-shape", *map(str, IMG), "--no-progress"]) == 0
    return str(root / "mr")


@pytest.fixture()
def testModels(monkeypatch):
    """Register the in-test models as learned SRL models (in this process only)."""
    monkeypatch.setitem(registry.registered_srl, "test_linear", (LinearSRL, SRLType.LEARNED))
    monkeypatch.setitem(registry.registered_srl, "test_pca", (PCASRL, SRLType.LEARNED))


def saveModel(folder: str, data_folder: str, kind: str, state_dim: int = 4, **config) -> str:
    """Build and save an in-test model: "test_pca" fitted on the dataset, or "test_linear" with random weights."""
    dataset = Dataset.open(data_folder)
    pixels = dataset.loadImages().reshape(len(dataset), -1).astype(np.float32) / 255.0
    mean = pixels.mean(axis=0)
    if kind == "test_pca":
        weights = np.linalg.svd(pixels - mean, full_matrices=False)[2][:state_dim]
        model_class = PCASRL
    else:
        weights = np.random.default_rng(0).normal(size=(state_dim, pixels.shape[1])).astype(np.float32) / 50
        model_class = LinearSRL
    exp_config = {"srl_model": kind, "env": ENV, "data_folder": data_folder, **config}
    model = model_class(state_dim, exp_config.pop("img_shape", IMG), exp_config, weights.astype(np.float32), mean)
    model.save(folder)
    return folder


def runMain(module, argv, capsys) -> tuple[int, str, str]:
    """Run a command's main as ``python -m`` would (one-line errors, exit codes), in this process."""
    with pytest.raises(SystemExit) as exit_info:
        runCommand(module.main, [str(a) for a in argv])
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


# --- evaluate ------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_evaluateModelWritesMetricsAndPlots(tmp_path, dataFolder, testModels):
    folder = saveModel(str(tmp_path / "pca"), dataFolder, "test_pca")
    result = evaluate.evaluateModel(folder, k=5, max_samples=120, seed=1, progress=False)
    folder = os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER, "mr_k5_n120_seed1")  # not the default settings
    with open(os.path.join(folder, evaluate.GTC_FILE)) as handle:
        gtc = json.load(handle)
    with open(os.path.join(folder, evaluate.KNN_FILE)) as handle:
        knn = json.load(handle)
    assert gtc["per_dimension"] == result["gtc"]["per_dimension"] and len(gtc["per_dimension"]) == 2
    assert gtc["mean"] == pytest.approx(np.mean(gtc["per_dimension"]))
    assert knn["knn_mse"] == result["knn_mse"] and knn["k"] == 5 and knn["n_samples"] == 120
    with np.load(os.path.join(folder, evaluate.STATES_FILE)) as data:
        assert data["states"].shape == (120, 4) and data["ground_truth"].shape == (120, 2)
        assert len(data["rewards"]) == 120
        # the file holds what was measured
        assert gtCorrelation(data["states"], data["ground_truth"]) == result["gtc"]
        expected_gt = Dataset.open(dataFolder).states()[data["indices"]]
        assert np.array_equal(data["ground_truth"], expected_gt)
    for name in (evaluate.STATES_PLOT, evaluate.KNN_PLOT):
        assert imread(os.path.join(folder, name)).std() > 0.01
    # same seed, same numbers
    assert evaluate.evaluateModel(os.path.dirname(os.path.dirname(folder)), k=5, max_samples=120, seed=1,
                                  progress=False) == result


@pytest.mark.slow
def test_pcaBeatsRandomProjection(tmp_path, dataFolder, testModels):
    """The fitted linear autoencoder finds the robot better than a random pixel projection."""
    pca = evaluate.evaluateModel(saveModel(str(tmp_path / "pca"), dataFolder, "test_pca", state_dim=8),
                                 progress=False)
    rand = evaluate.evaluateModel(saveModel(str(tmp_path / "rand"), dataFolder, "test_linear", state_dim=8),
                                  progress=False)
    assert pca["knn_mse"] < rand["knn_mse"]


def test_evaluateCommand(tmp_path, dataFolder, testModels, capsys):
    folder = saveModel(str(tmp_path / "model"), dataFolder, "test_linear")
    code, out, err = runMain(evaluate, ["--model-folder", folder, "--k", "3", "--max-samples", "50",
                                        "--no-progress"], capsys)
    assert code == 0, err
    folder = os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER, "mr_k3_n50_seed0")
    with open(os.path.join(folder, evaluate.GTC_FILE)) as handle:
        mean = json.load(handle)["mean"]
    assert f"GTC mean {mean:.4f}" in out and "KNN-MSE (k=3)" in out and f"in {folder} (" in out
    with open(os.path.join(folder, evaluate.PROBE_FILE)) as handle:
        probe = json.load(handle)
    assert f"Linear probe R2 {probe['mean']:.4f}" in out and len(probe["per_dimension"]) == 2
    assert probe["alpha"] == 1.0 and probe["n_fit"] + probe["n_held_out"] == 50


def test_evaluate_says_when_the_frames_come_from_another_renderer(tmp_path, dataFolder, testModels, capsys):
    """A model trained on one renderer's frames, measured on another's (a legitimate transfer measurement): one line
    names both; none when they agree or when the model did not record its renderer."""
    drawn_by = Dataset.open(dataFolder).renderer
    other = next(name for name in ("sprites", "tinyrenderer") if name != drawn_by)
    for renderer, said in ((other, True), (drawn_by, False), (None, False)):
        extra = {} if renderer is None else {"renderer": renderer}
        folder = saveModel(str(tmp_path / f"model_{renderer}"), dataFolder, "test_linear", **extra)
        code, out, err = runMain(evaluate, ["--model-folder", folder, "--max-samples", "20", "--no-progress"], capsys)
        assert code == 0, err
        line = f"The dataset's frames are drawn by {drawn_by}, the model's training frames by {other}:"
        assert (line in out) == said, (renderer, out)


def test_evaluateOnAnotherDatasetKeepsTheModelsOwnMeasurements(tmp_path, dataFolder, testModels, capsys):
    """Measuring on another dataset writes into evaluations/<dataset>, never over the training dataset's files."""
    folder = saveModel(str(tmp_path / "model"), dataFolder, "test_linear")
    assert runMain(evaluate, ["--model-folder", folder, "--no-progress"], capsys)[0] == 0
    own = {name: (tmp_path / "model" / name).read_bytes() for name in (evaluate.GTC_FILE, evaluate.KNN_FILE,
                                                                       evaluate.PROBE_FILE, evaluate.STATES_FILE)}
    other = str(tmp_path / "copy_of_data")
    shutil.copytree(dataFolder, other)
    code, out, err = runMain(evaluate, ["--model-folder", folder, "--data-folder", other, "--max-samples", "40",
                                        "--no-progress"], capsys)
    assert code == 0, err
    assert {name: (tmp_path / "model" / name).read_bytes() for name in own} == own
    measured = os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER, "copy_of_data_k5_n40_seed0")
    with open(os.path.join(measured, evaluate.GTC_FILE)) as handle:
        gtc = json.load(handle)
    assert gtc["n_samples"] == 40 and gtc["data_folder"] == other and f"in {measured}" in out
    assert os.path.isfile(os.path.join(measured, evaluate.KNN_PLOT))
    # too few frames for a probe: said why, and the earlier probe file goes (it would pair with the new figures)
    code, out, err = runMain(evaluate, ["--model-folder", folder, "--data-folder", other, "--max-samples", "3",
                                        "--k", "1", "--no-progress"], capsys)
    assert code == 0, err
    measured = os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER, "copy_of_data_k1_n3_seed0")
    assert "Linear probe: - (the held-out episodes give " in out and "of the 3 measured frames" in out
    assert "the probe needs 2 or more on each side (--max-samples))" in out
    assert not os.path.exists(os.path.join(measured, evaluate.PROBE_FILE))
    # the training dataset named by another path is still the model's own
    os.remove(os.path.join(folder, evaluate.GTC_FILE))
    assert runMain(evaluate, ["--model-folder", folder, "--data-folder", os.path.relpath(dataFolder),
                              "--max-samples", "3000", "--no-progress"], capsys)[0] == 0  # all 160 frames either way
    with open(os.path.join(folder, evaluate.GTC_FILE)) as handle:
        assert json.load(handle)["n_samples"] == 160


def test_evaluateKeepsTheReferenceMeasurements(tmp_path, dataFolder, testModels, capsys):
    """Other settings never replace the model folder's own (default-settings) measurements, which prepare, the
    benchmarks and train's participation ratio read; the same settings again rewrite the same files."""
    folder = saveModel(str(tmp_path / "model"), dataFolder, "test_linear")
    assert runMain(evaluate, ["--model-folder", folder, "--no-progress"], capsys)[0] == 0
    names = (evaluate.GTC_FILE, evaluate.KNN_FILE, evaluate.PROBE_FILE, evaluate.STATES_FILE)
    own = {name: (tmp_path / "model" / name).read_bytes() for name in names}
    code, out, err = runMain(evaluate, ["--model-folder", folder, "--k", "3", "--max-samples", "50", "--seed", "7",
                                        "--no-progress"], capsys)
    assert code == 0, err
    assert {name: (tmp_path / "model" / name).read_bytes() for name in names} == own
    measured = os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER, "mr_k3_n50_seed7")
    assert f"in {measured} (the model's reference measurements, in {folder}, are unchanged)" in out
    with open(os.path.join(measured, evaluate.KNN_FILE)) as handle:
        knn = json.load(handle)
    assert (knn["k"], knn["n_samples"], knn["seed"], knn["data_folder"]) == (3, 50, 7, dataFolder)
    first = {name: (tmp_path / "model" / name).read_bytes() for name in names}
    # the same settings again: the same folder, the same numbers
    assert runMain(evaluate, ["--model-folder", folder, "--k", "3", "--max-samples", "50", "--seed", "7",
                              "--no-progress"], capsys)[0] == 0
    assert sorted(os.listdir(os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER))) == ["mr_k3_n50_seed7"]
    assert {name: (tmp_path / "model" / name).read_bytes() for name in names} == first
    with open(os.path.join(measured, evaluate.KNN_FILE)) as handle:
        assert json.load(handle) == knn
    # the defaults again: the reference itself, rewritten in place
    code, out, err = runMain(evaluate, ["--model-folder", folder, "--no-progress"], capsys)
    assert code == 0, err
    assert f"in {folder}\n" in out
    assert {name: (tmp_path / "model" / name).read_bytes() for name in names} == own


def test_an_interrupted_evaluation_leaves_no_part_of_its_results(tmp_path, dataFolder, testModels, capsys,
                                                                   monkeypatch):
    """A Ctrl-C once the JSON files and states.npz are written, before the figures: no evaluations/ subfolder (none
    before), or the earlier complete one unchanged, and the model folder's own files unchanged; no staging folder
    left; running it again measures afresh."""
    folder = saveModel(str(tmp_path / "model"), dataFolder, "test_linear")
    argv = ["--model-folder", folder, "--k", "3", "--max-samples", "50", "--seed", "5", "--no-progress"]
    measured = os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER, "mr_k3_n50_seed5")
    original = evaluate.plotKnn

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate, "plotKnn", interrupted)
    assert runMain(evaluate, argv, capsys)[0] == 130
    assert not os.path.exists(measured)
    assert os.listdir(os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER)) == []
    monkeypatch.setattr(evaluate, "plotKnn", original)
    assert runMain(evaluate, argv, capsys)[0] == 0
    complete = snapshot(measured)
    assert {evaluate.GTC_FILE, evaluate.KNN_PLOT, evaluate.STATES_PLOT} <= set(os.listdir(measured))
    monkeypatch.setattr(evaluate, "plotKnn", interrupted)
    assert runMain(evaluate, argv, capsys)[0] == 130
    assert snapshot(measured) == complete
    # the reference measurements in the model folder itself: unchanged too
    model_files = snapshot(folder)
    assert runMain(evaluate, ["--model-folder", folder, "--no-progress"], capsys)[0] == 130
    assert snapshot(folder) == model_files and not [name for name in os.listdir(folder) if name.startswith(".")]
    assert os.listdir(os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER)) == ["mr_k3_n50_seed5"]
    monkeypatch.setattr(evaluate, "plotKnn", original)
    assert runMain(evaluate, ["--model-folder", folder, "--no-progress"], capsys)[0] == 0
    assert {evaluate.GTC_FILE, evaluate.KNN_PLOT, evaluate.STATES_PLOT} <= set(os.listdir(folder))
    assert not [name for name in os.listdir(folder) if name.startswith(".")]


def test_evaluateTwoDatasetsOfTheSameName(tmp_path, dataFolder, testModels, capsys):
    """Two datasets with the same folder name get a folder each; measuring one again rewrites its own."""
    folder = saveModel(str(tmp_path / "model"), dataFolder, "test_linear")
    first, second = str(tmp_path / "a" / "mr"), str(tmp_path / "b" / "mr")
    shutil.copytree(dataFolder, first)
    shutil.copytree(dataFolder, second)
    evaluations = os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER)
    for data_folder, name in ((first, "mr"), (second, "mr_2"), (first, "mr"), (second, "mr_2")):
        code, out, err = runMain(evaluate, ["--model-folder", folder, "--data-folder", data_folder, "--no-progress"],
                                 capsys)
        assert code == 0, err
        measured = os.path.join(evaluations, name)
        for json_file in (evaluate.GTC_FILE, evaluate.KNN_FILE):
            with open(os.path.join(measured, json_file)) as handle:
                assert json.load(handle)["data_folder"] == data_folder
    assert sorted(os.listdir(evaluations)) == ["mr", "mr_2"]
    assert out.endswith(f"in {evaluations}/mr_2 (the model's reference measurements, in {folder}, are unchanged)\n")


def test_theDatasetFingerprintIsRecordedAndStable(tmp_path, dataFolder):
    """Two recordings with the same settings and seed share a fingerprint (whatever their folders' names); the
    training records its dataset's in exp_config.json; another recording into the same folder changes it."""
    argv = ["--env", ENV, "--num-episode", "4", "--max-steps", "40", "--save-path", str(tmp_path), "--img-shape",
            *map(str, IMG), "--no-progress"]
    assert generateDataset([*argv, "--name", "again"]) == 0
    fingerprint = Dataset.open(dataFolder).fingerprint()
    assert Dataset.open(str(tmp_path / "again")).fingerprint() == fingerprint and len(fingerprint) == 64
    folder = trainFromArgs(["--data-folder", dataFolder, "--srl-model", "random", "--state-dim", "4", "--log-folder",
                            str(tmp_path / "logs"), "--no-eval", "--no-progress"])
    with open(os.path.join(folder, EXP_CONFIG_FILE)) as handle:
        assert json.load(handle)[DATASET_FINGERPRINT_KEY] == fingerprint
    assert generateDataset([*argv, "--name", "again", "--seed", "5", "-f"]) == 0
    assert Dataset.open(str(tmp_path / "again")).fingerprint() != fingerprint


def test_evaluateKeepsTheReferenceOfADatasetRecordedAgain(tmp_path, dataFolder, testModels, capsys):
    """The training dataset recorded again into its folder is measured as another dataset: into evaluations/, said
    in one line, the model folder's own measurements left byte for byte; a model trained before the fingerprint was
    recorded keeps its behaviour (the folder's dataset is the reference)."""
    data = str(tmp_path / "mr")
    shutil.copytree(dataFolder, data)
    folder = saveModel(str(tmp_path / "model"), data, "test_linear",
                       dataset_fingerprint=Dataset.open(data).fingerprint())
    old_folder = saveModel(str(tmp_path / "old_model"), data, "test_linear")
    assert runMain(evaluate, ["--model-folder", folder, "--no-progress"], capsys)[0] == 0
    names = (evaluate.GTC_FILE, evaluate.KNN_FILE, evaluate.PROBE_FILE, evaluate.STATES_FILE)
    own = {name: (tmp_path / "model" / name).read_bytes() for name in names}
    assert generateDataset(["--env", ENV, "--num-episode", "3", "--max-steps", "40", "-r", "--seed", "5", "--name",
                            "mr", "--save-path", str(tmp_path), "--img-shape", *map(str, IMG), "-f",
                            "--no-progress"]) == 0
    code, out, err = runMain(evaluate, ["--model-folder", folder, "--no-progress"], capsys)
    assert code == 0, err
    assert {name: (tmp_path / "model" / name).read_bytes() for name in names} == own
    measured = os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER, "mr")
    assert f"The dataset {data} was recorded again since the model was trained" in out
    assert f"in {measured} (the model's reference measurements, in {folder}, are unchanged)" in out
    with open(os.path.join(measured, evaluate.GTC_FILE)) as handle:
        measurement = json.load(handle)
    assert measurement["data_folder"] == data
    assert measurement[DATASET_FINGERPRINT_KEY] == Dataset.open(data).fingerprint()
    # a model without a recorded fingerprint: its folder's dataset is its reference, as before
    code, out, err = runMain(evaluate, ["--model-folder", old_folder, "--no-progress"], capsys)
    assert code == 0, err
    assert "recorded again" not in out and out.endswith(f"in {old_folder}\n")


def test_evaluateBadInputs(tmp_path, dataFolder, testModels, capsys):
    model = saveModel(str(tmp_path / "model"), dataFolder, "test_linear")
    kuka_model = saveModel(str(tmp_path / "kuka"), dataFolder, "test_linear", env="KukaButtonGymEnv-v0")
    big_model = saveModel(str(tmp_path / "big"), dataFolder, "test_linear", img_shape=(3, 64, 64))
    # a model of two cameras (--fpv) at the dataset's size: the cameras differ, not the --img-shape
    two_cameras = saveModel(str(tmp_path / "fpv"), dataFolder, "test_linear", img_shape=(6, *IMG[1:]))
    big_two_cameras = saveModel(str(tmp_path / "big_fpv"), dataFolder, "test_linear", img_shape=(6, 64, 64))
    unknown = saveModel(str(tmp_path / "unknown"), dataFolder, "test_linear")
    with open(os.path.join(unknown, EXP_CONFIG_FILE)) as handle:
        config = json.load(handle)
    with open(os.path.join(unknown, EXP_CONFIG_FILE), "w") as handle:
        json.dump({**config, "srl_model": "no_such_model"}, handle)
    no_gt = str(tmp_path / "no_gt")
    shutil.copytree(dataFolder, no_gt)
    with np.load(os.path.join(no_gt, "ground_truth.npz")) as data:
        images_path = data["images_path"]
    np.savez(os.path.join(no_gt, "ground_truth.npz"), images_path=images_path)
    (tmp_path / "empty").mkdir()
    cases = {
        "does not exist": ["--model-folder", tmp_path / "missing"],
        "not an SRL model folder": ["--model-folder", tmp_path / "empty"],
        "not installed": ["--model-folder", unknown],
        "recorded on MobileRobotGymEnv-v0": ["--model-folder", kuka_model],
        "shape [3, 32, 32] (one camera), the model": ["--model-folder", big_model],
        "[3, 64, 64] (one camera): use a dataset recorded with --img-shape 3 64 64": ["--model-folder", big_model],
        f"encodes [6, {IMG[1]}, {IMG[2]}] (two cameras): use a dataset recorded with two cameras (--fpv: mobile "
        "robots, --multi-view: Kuka arms)": ["--model-folder", two_cameras],
        "use a dataset recorded with --img-shape 3 64 64 and two cameras (--fpv": ["--model-folder", big_two_cameras],
        "ground_truth_states": ["--model-folder", model, "--data-folder", no_gt],
        "k=50": ["--model-folder", model, "--k", "50", "--max-samples", "40"],
        "must be a positive integer": ["--model-folder", model, "--k", "0"],
        "argument --max-samples: '1' is out of range (>= 2)": ["--model-folder", model, "--max-samples", "1"],
        "is not a dataset": ["--model-folder", model, "--data-folder", tmp_path / "empty"],
    }
    before = snapshot(str(tmp_path))
    for expected, argv in cases.items():
        code, out, err = runMain(evaluate, [*argv, "--no-progress"], capsys)
        assert code == 2, (expected, err)
        assert expected in err and err.startswith("error: ") and err.count("\n") == 1, err
    assert snapshot(str(tmp_path)) == before


# --- explore_latent ------------------------------------------------------------------------------------------------


def test_explore_latent_gives_up_on_a_server_that_never_answers() -> None:
    # visdom's own client waited forever on a listener that accepts and never answers
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        with pytest.warns(UserWarning, match="cannot be reached \\(no answer in time\\)"):
            sent = explore_latent.showInVisdom(np.zeros((4, 8, 8, 3), np.uint8), 2, listener.getsockname()[1], "t", "w")
        assert not sent
    finally:
        listener.close()


def test_exploreLatentGrid(tmp_path, dataFolder, testModels, capsys):
    folder = saveModel(str(tmp_path / "pca"), dataFolder, "test_pca")
    output = str(tmp_path / "grid.png")
    code, out, err = runMain(explore_latent, ["--model-folder", folder, "--grid", "4", "--dims", "1", "0",
                                              "--output", output, "--no-progress"], capsys)
    assert code == 0, err
    image = imread(output)
    assert image.std() > 0.02
    # the decoded cells differ from one another: the sweep moves something in the images
    model = PCASRL.load(folder)
    states = model.getState(Dataset.open(dataFolder).loadImages())
    images, values = explore_latent.latentGrid(model, states, (1, 0), 4)
    assert images.shape == (16, 32, 32, 3) and values[0][0] < values[0][-1]
    assert np.abs(images[0].astype(int) - images[-1].astype(int)).mean() > 1
    _, values = explore_latent.latentGrid(model, states, (1, 0), 3, value_range=(-2.0, 2.0))
    assert values[0].tolist() == values[1].tolist() == [-2.0, 0.0, 2.0]


def test_exploreLatentVisdomUnreachable(tmp_path, dataFolder, testModels, capsys):
    folder = saveModel(str(tmp_path / "pca"), dataFolder, "test_pca")
    with pytest.warns(UserWarning, match="cannot be reached"):
        code, out, err = runMain(explore_latent, ["--model-folder", folder, "--vis", "--port", "9", "--grid", "2",
                                                  "--no-progress"], capsys)
    assert code == 0, err
    assert os.path.isfile(os.path.join(folder, "latent_grid_0_1.png"))


def test_explore_latent_port_without_vis_is_one_warning(tmp_path, dataFolder, testModels, capsys):
    """--port without --vis chose nothing and said nothing; it is one warning (as replay.plots's), held with the
    checks: a command they refuse prints its one-line error alone."""
    folder = saveModel(str(tmp_path / "pca"), dataFolder, "test_pca")
    idle = ["--model-folder", folder, "--port", "9000", "--no-progress"]
    with pytest.warns(UserWarning,
                      match="^--port chooses where --vis draws; without --vis nothing is drawn in visdom$"):
        code, out, err = runMain(explore_latent, [*idle, "--grid", "2"], capsys)
    assert code == 0 and "visdom" not in out, err
    assert os.path.isfile(os.path.join(folder, "latent_grid_0_1.png"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = runMain(explore_latent, [*idle, "--grid", "1"], capsys)
    assert code == 2 and err.startswith("error: --grid 1") and err.count("\n") == 1, err
    assert not [w for w in caught if "--vis" in str(w.message)]
    with warnings.catch_warnings(record=True) as caught:  # the default port, or --vis: nothing to say
        warnings.simplefilter("always")
        assert runMain(explore_latent, ["--model-folder", folder, "--grid", "2", "--output", tmp_path / "g.png",
                                        "--no-progress"], capsys)[0] == 0
    assert not [w for w in caught if "--vis" in str(w.message)]


def test_exploreLatentBadInputs(tmp_path, dataFolder, testModels, capsys, monkeypatch):
    linear = saveModel(str(tmp_path / "linear"), dataFolder, "test_linear")
    pca = saveModel(str(tmp_path / "pca"), dataFolder, "test_pca")
    cases = {
        "does not decode": ["--model-folder", linear],
        "0..3": ["--model-folder", pca, "--dims", "0", "4"],
        "two different": ["--model-folder", pca, "--dims", "2", "2"],
        "2..30": ["--model-folder", pca, "--grid", "1"],
        "LOW < HIGH": ["--model-folder", pca, "--range", "3", "-3"],
        ".png": ["--model-folder", pca, "--output", tmp_path / "grid.jpg"],
        "does not exist": ["--model-folder", tmp_path / "missing"],
        "is a folder, not a file": ["--model-folder", pca, "--output", tmp_path / "dir.png"],  # (after the work)
    }
    (tmp_path / "dir.png").mkdir()
    before = snapshot(str(tmp_path))
    for expected, argv in cases.items():
        code, out, err = runMain(explore_latent, [*argv, "--no-progress"], capsys)
        assert code == 2, (expected, err)
        assert expected in err and err.count("\n") == 1, err
    code, out, err = runMain(explore_latent, ["--model-folder", linear], capsys)
    assert "test_pca" in err  # names the models that decode
    # a decoder that reads one dimension cannot be swept on a grid (it blamed --dims, which was not given)
    one = saveModel(str(tmp_path / "one"), dataFolder, "test_pca", state_dim=1)
    code, out, err = runMain(explore_latent, ["--model-folder", one, "--no-progress"], capsys)
    assert code == 2 and "decodes from 1 latent dimension: the grid sweeps two" in err and "--dims" not in err, err
    # a model of a decoding kind trained without a decoding loss is told so (it was listed among the decoders)
    no_decoder = saveModel(str(tmp_path / "no_decoder"), dataFolder, "test_pca", losses=["inverse", "reward"])
    with open(os.path.join(no_decoder, EXP_CONFIG_FILE)) as handle:
        config = json.load(handle)
    with open(os.path.join(no_decoder, EXP_CONFIG_FILE), "w") as handle:
        json.dump({**config, "srl_model": "test_pca_without_decoder"}, handle)
    monkeypatch.setitem(registry.registered_srl, "test_pca_without_decoder", (_PCAWithoutDecoder, SRLType.LEARNED))
    code, out, err = runMain(explore_latent, ["--model-folder", no_decoder, "--no-progress"], capsys)
    assert code == 2 and "was trained without a decoding loss (its losses: inverse, reward)" in err, err
    assert snapshot(str(tmp_path)) != before  # the models saved above; nothing else:
    assert not any(name.startswith("latent_grid") for folder in (one, no_decoder) for name in os.listdir(folder))


def test_a_models_deleted_training_dataset_is_named_with_the_way_out(tmp_path, dataFolder, testModels, capsys):
    """The dataset a model was trained on deleted (dataset_fusioner --delete-sources): explore_latent and evaluate said
    only "dataset '.../tA' is not a folder"."""
    pca = saveModel(str(tmp_path / "pca"), dataFolder, "test_pca")
    with open(os.path.join(pca, EXP_CONFIG_FILE)) as handle:
        config = json.load(handle)
    gone = str(tmp_path / "data" / "tA")
    with open(os.path.join(pca, EXP_CONFIG_FILE), "w") as handle:
        json.dump({**config, "data_folder": gone}, handle)
    before = snapshot(str(tmp_path))
    for module in (explore_latent, evaluate):
        code, out, err = runMain(module, ["--model-folder", pca, "--no-progress"], capsys)
        assert code == 2 and err.count("\n") == 1, err
        assert f"trained on dataset {gone!r}, which is gone" in err, err
        assert f"pass --data-folder with a {ENV} dataset" in err, err
    assert snapshot(str(tmp_path)) == before
    code, out, err = runMain(explore_latent, ["--model-folder", pca, "--data-folder", dataFolder, "--grid", "2",
                                              "--no-progress"], capsys)
    assert code == 0, err


def test_explore_latent_on_a_dataset_of_another_env_says_what_to_explore_with(tmp_path, dataFolder, testModels,
                                                                              capsys):
    """It said "measure it on a KukaButtonGymEnv-v0 dataset", evaluate's advice: explore_latent measures nothing."""
    kuka = saveModel(str(tmp_path / "kuka"), dataFolder, "test_pca", env="KukaButtonGymEnv-v0")
    code, out, err = runMain(explore_latent, ["--model-folder", kuka, "--data-folder", dataFolder, "--no-progress"],
                             capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert f"recorded on {ENV}" in err and "explore its latent space with a KukaButtonGymEnv-v0 dataset" in err, err
    assert "measure" not in err
    code, out, err = runMain(evaluate, ["--model-folder", kuka, "--data-folder", dataFolder, "--no-progress"], capsys)
    assert code == 2 and "measure it on a KukaButtonGymEnv-v0 dataset" in err, err


class _PCAWithoutDecoder(PCASRL):
    """A model whose class can decode, trained with losses of which none decodes (srl_combination's case)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.DECODES = False


@pytest.mark.slow
def test_exploreLatentVisdomWindow(tmp_path, dataFolder, testModels, capsys, visdom_port):
    port = visdom_port
    folder = saveModel(str(tmp_path / "pca"), dataFolder, "test_pca")
    code, out, err = runMain(explore_latent, ["--model-folder", folder, "--vis", "--port", port, "--grid", "3",
                                              "--no-progress"], capsys)
    assert code == 0, err
    assert "Sent to visdom" in out
    client = visdom.Visdom(server="http://127.0.0.1", port=port, use_incoming_socket=False,
                           raise_exceptions=True)
    window = json.loads(client.get_window_data("latent_test_pca_0_1", "srl_explore_latent"))
    assert window["type"] == "image" and window["title"].startswith("test_pca")


# --- with models trained by python -m srl_models.train -------------------------------------------------------------


@pytest.fixture(scope="module")
def trainedModels(tmp_path_factory, dataFolder) -> dict[str, str]:
    """A decoding (autoencoder) and a non-decoding (random) model, trained on the tiny dataset without evaluation, in
    this process (no interpreter start per model)."""
    log_folder = tmp_path_factory.mktemp("srl_models")
    epochs = {"autoencoder": ["--epochs", "2", "--batch-size", "32"], "random": []}  # random trains no loss
    return {name: trainFromArgs(["--data-folder", dataFolder, "--srl-model", name, "--state-dim", "4", *epochs[name],
                                 "--log-folder", str(log_folder), "--no-eval", "--no-progress"])
            for name in ("autoencoder", "random")}


@pytest.mark.slow
def test_evaluateCommandOnTrainedModel(trainedModels):
    folder = trainedModels["autoencoder"]
    result = runModule("srl_models.evaluate", "--model-folder", folder, "--k", "4", "--no-progress")
    assert result.returncode == 0, result.stderr
    folder = os.path.join(folder, evaluate.OTHER_DATASETS_FOLDER, "mr_k4_n160_seed0")  # not the default settings
    with open(os.path.join(folder, evaluate.GTC_FILE)) as handle:
        gtc = json.load(handle)
    with open(os.path.join(folder, evaluate.KNN_FILE)) as handle:
        knn = json.load(handle)
    assert len(gtc["per_dimension"]) == 2 and 0 <= gtc["mean"] <= 1 and knn["k"] == 4
    assert f"GTC mean {gtc['mean']:.4f}" in result.stdout and f"{knn['knn_mse']:.6g}" in result.stdout
    with np.load(os.path.join(folder, evaluate.STATES_FILE)) as data:
        assert data["states"].shape == (160, 4)
        assert knnMse(data["states"], data["ground_truth"], 4) == pytest.approx(knn["knn_mse"])
    for name in (evaluate.STATES_PLOT, evaluate.KNN_PLOT):
        assert imread(os.path.join(folder, name)).std() > 0.01


@pytest.mark.slow
def test_exploreLatentOnTrainedModels(tmp_path, trainedModels):
    output = str(tmp_path / "ae_grid.png")
    result = runModule("srl_models.explore_latent", "--model-folder", trainedModels["autoencoder"], "--grid", "3",
                       "--dims", "2", "3", "--output", output, "--no-progress")
    assert result.returncode == 0, result.stderr
    assert imread(output).std() > 0.02
    before = snapshot(trainedModels["random"])
    result = runModule("srl_models.explore_latent", "--model-folder", trainedModels["random"])
    assert result.returncode == 2
    assert "does not decode" in result.stderr and "vae" in result.stderr and "autoencoder" in result.stderr
    assert result.stderr.count("\n") == 1
    assert snapshot(trainedModels["random"]) == before


def test_explore_latent_sweeps_only_the_dims_the_decoder_reads(tmp_path, dataFolder, testModels, capsys):
    """A split model's decoding loss owns a part of the state: sweeping another part would draw identical cells."""
    splits = SRLSplitsModel(8, (3, 32, 32), {"losses": {"autoencoder": 1.0, "inverse": 1.0}, "n_actions": 4,
                                              "split_dims": {"autoencoder": 6, "inverse": 2}})
    assert list(explore_latent.decodedDims(splits)) == [0, 1, 2, 3, 4, 5]
    pca = saveModel(str(tmp_path / "pca"), dataFolder, "test_pca")
    assert list(explore_latent.decodedDims(PCASRL.load(pca))) == [0, 1, 2, 3]  # every dim of a model without parts


def test_explore_latent_sweeps_a_split_models_decoding_part_by_default(tmp_path, dataFolder, capsys):
    """Without --dims the grid sweeps the first two dims the decoder reads (here 2 and 3, after the supervised part);
    it refused the hard-coded 0 1 that were not given. An explicit --dims outside that part is still refused."""
    folder = trainFromArgs(["--data-folder", dataFolder, "--losses", "supervised:1:2", "autoencoder:1:2",
                            "--state-dim", "4", "--epochs", "1", "--batch-size", "64", "--log-folder",
                            str(tmp_path / "logs"), "--no-eval", "--no-progress"])
    code, out, err = runMain(explore_latent, ["--model-folder", folder, "--grid", "2", "--no-progress"], capsys)
    assert code == 0, err
    assert f"Latent grid: {os.path.join(folder, 'latent_grid_2_3.png')}" in out
    code, _, err = runMain(explore_latent, ["--model-folder", folder, "--grid", "2", "--dims", "0", "1"], capsys)
    assert code == 2 and err.startswith("error: --dims 0 1: give two different latent dimensions in 2..3"), err
    assert err.count("\n") == 1


def test_explore_latent_takes_no_vis_as_its_default(tmp_path, dataFolder, testModels, capsys):
    """``--no-vis`` (train's flag, typed from habit) was an unrecognized argument: it keeps the default, the PNG only;
    with ``--vis`` it is refused as argparse refuses two exclusive flags."""
    folder = saveModel(str(tmp_path / "pca"), dataFolder, "test_pca")
    code, out, err = runMain(explore_latent, ["--model-folder", folder, "--grid", "2", "--no-vis", "--no-progress"],
                             capsys)
    assert code == 0 and "visdom" not in out, err
    assert os.path.isfile(os.path.join(folder, "latent_grid_0_1.png"))
    code, _, err = runMain(explore_latent, ["--model-folder", folder, "--no-vis", "--vis"], capsys)
    assert code == 2 and "not allowed with argument" in err and err.count("\n") == 1, err
