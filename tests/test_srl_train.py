"""The SRL training command (python -m srl_models.train): a full run with evaluation, and every bad input refused
with one line, exit code 2, nothing written; its settings are one dataclass (SRLTrainConfig) that the parser is made
from and that trains in Python as on the command line."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from conftest import REPO, assertParserFromSettings, runModule, sigintIgnoringProcess, siteInterpreter, snapshot
from matplotlib.backends.backend_agg import FigureCanvasAgg
from test_srl_models import tinyDataset  # noqa: F401  (the session fixture: one tiny dataset)

from srl_models import plotting, train_choices
from srl_models import train as srl_train
from srl_models.models import AutoEncoderModel
from srl_models.registry import loadSRLModel
from srl_models.train import buildParser, checkSettings, main, parseConfig, trainFromArgs, trainFromConfig
from srl_models.train_config import SRLTrainConfig
from srl_toolbox.cli import UsageError, runCommand

MODULE = "srl_models.train"


@pytest.mark.slow
def test_vae_end_to_end(tinyDataset: str, tmp_path) -> None:  # noqa: F811
    logs = tmp_path / "logs"
    result = runModule(MODULE, "--data-folder", tinyDataset, "--srl-model", "vae", "--state-dim", "6", "--epochs",
                       "3", "--batch-size", "32", "--log-folder", logs, "--no-progress",
                       env={"OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr
    summary = next(line for line in result.stdout.splitlines() if line.startswith("Loss ("))
    # the first and last epochs' losses, the one kept, and what ran (3 epochs of 32 frames at most)
    assert re.fullmatch(r"Loss \((val|train)\): epoch 1 \S+ -> epoch 3 \S+; kept epoch [123] \(\S+\); 3 epochs, \d+ "
                        r"updates of at most 32 frames run", summary), summary
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("Model folder: ")
    folder = last[len("Model folder: "):]
    assert os.path.dirname(folder) == str(logs / "tiny") and folder.endswith("_vae_ST_DIM6_SEED0")
    files = set(os.listdir(folder))
    assert {"exp_config.json", "srl_model.pt", "training_curve.png", "reconstructions.png", "gt_correlation.json",
            "knn_mse.json"} <= files
    assert not [name for name in files if name.startswith(".")]  # no temporary file left
    with open(os.path.join(folder, "exp_config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    assert config["losses"] == {"vae": 1.0} and config["env"] == "MobileRobotGymEnv-v0"
    assert config["data_folder"] == os.path.abspath(tinyDataset) and config["weights"] == ["srl_model.pt"]
    assert loadSRLModel(folder).getState(np.zeros((1, 32, 32, 3), dtype=np.uint8)).shape == (1, 6)


@pytest.fixture(scope="module")
def strippedDataset(tinyDataset: str, tmp_path_factory: pytest.TempPathFactory) -> str:  # noqa: F811
    """The tiny dataset with only images and episode starts: no actions, rewards or ground truth."""
    folder = tmp_path_factory.mktemp("stripped") / "bare"
    folder.mkdir()
    shutil.copy(os.path.join(tinyDataset, "dataset_config.json"), folder)
    with np.load(os.path.join(tinyDataset, "preprocessed_data.npz")) as data:
        np.savez(folder / "preprocessed_data.npz", episode_starts=data["episode_starts"])
    with np.load(os.path.join(tinyDataset, "ground_truth.npz")) as data:
        np.savez(folder / "ground_truth.npz", images_path=data["images_path"])
    return str(folder)


@pytest.fixture(scope="module")
def continuousDataset(tinyDataset: str, tmp_path_factory: pytest.TempPathFactory) -> str:  # noqa: F811
    """The tiny dataset with random continuous actions (2 components in [-1, 1])."""
    folder = tmp_path_factory.mktemp("continuous") / "continuous"
    shutil.copytree(tinyDataset, folder)
    with open(folder / "dataset_config.json", encoding="utf-8") as handle:
        config = json.load(handle)
    with open(folder / "dataset_config.json", "w", encoding="utf-8") as handle:
        json.dump({**config, "continuous_actions": True}, handle)
    with np.load(folder / "preprocessed_data.npz") as data:
        arrays = dict(data)
    arrays["actions"] = np.random.default_rng(0).uniform(-1, 1, (len(arrays["actions"]), 2)).astype(np.float32)
    np.savez(folder / "preprocessed_data.npz", **arrays)
    return str(folder)


BAD_INPUTS = [
    (["--srl-model", "vae"], "missing", "is not a folder"),
    (["--srl-model", "vae"], "not_dataset", "is not a dataset"),
    (["--losses", "foo:1"], "tiny", "unknown loss 'foo'; valid losses: autoencoder, dae, vae"),
    (["--losses", "vae:x"], "tiny", "'x' is not a number"),
    (["--losses", "vae:1:2:3"], "tiny", "is not name[:weight[:dims]]"),
    (["--losses", "vae:0", "inverse:0"], "tiny", "weights sum to 0"),
    (["--losses", "vae:-1", "inverse:2"], "tiny", "weight -1 is negative"),
    (["--losses", "vae:1", "inverse:1", "--split-dims", "vae:20", "inverse:8"], "tiny",
     "= 28 do not add up to --state-dim 32"),
    (["--losses", "vae:1", "inverse:1", "--split-dims", "vae:24", "reward:8"], "tiny",
     "'reward' is not one of the losses trained"),
    (["--srl-model", "reward"], "bare", "no 'rewards'"),
    (["--srl-model", "supervised"], "bare", "no 'ground_truth_states'"),
    (["--losses", "autoencoder:1", "inverse:1"], "bare", "no 'actions'"),
    # random continuous actions almost never repeat: the priors would see no same-action pair and collapse the state
    (["--srl-model", "robotic_priors"], "continuous", "has continuous actions; the robotic_priors loss needs discrete"),
    (["--losses", "autoencoder:1", "robotic_priors:1"], "continuous", "record one without -c/--continuous-actions"),
    (["--srl-model", "vae", "--state-dim", "0"], "tiny", "--state-dim: '0' is out of range (1..4096)"),
    (["--srl-model", "raw_pixels"], "tiny", "'raw_pixels' is computed by the env, not learned: nothing to train; "
                                            "learned models this command trains: atc, autoencoder, curl, dae, forward"),
    (["--srl-model", "vae", "--losses", "autoencoder:1"], "tiny", "add vae:WEIGHT"),
    (["--srl-model", "pca", "--losses", "vae:1"], "tiny", "trains no loss"),
    (["--srl-model", "pca", "--augment", "shift"], "tiny", "--augment shift: --srl-model pca trains no loss"),
    (["--srl-model", "random", "--updates", "3"], "tiny", "--updates 3: --srl-model random trains no loss"),
    (["--srl-model", "random", "--learning-rate", "0.5"], "tiny", "--learning-rate 0.5: --srl-model random trains no"),
    (["--srl-model", "autoencoder", "--beta", "2"], "tiny", "--beta 2 weighs the vae loss's KL term"),
    # flags of a training by epochs and minibatches, which pca and random do not have (recorded, they made identical
    # models differ for prepare's reuse)
    (["--srl-model", "pca", "--epochs", "7"], "tiny", "--epochs 7: --srl-model pca trains no loss"),
    (["--srl-model", "pca", "--batch-size", "8"], "tiny", "--batch-size 8: --srl-model pca trains no loss"),
    (["--srl-model", "pca", "--patience", "3"], "tiny", "--patience 3: --srl-model pca trains no loss"),
    (["--srl-model", "random", "--epochs", "2"], "tiny", "--epochs 2: --srl-model random trains no loss"),
    (["--srl-model", "random", "--foreground-weight", "5"], "tiny",
     "--foreground-weight 5 weighs the pixels of the reconstruction losses (autoencoder, dae, vae), and none is "
     "trained here (random)"),
    (["--losses", "inverse:1", "reward:1", "--foreground-weight", "20"], "tiny",
     "--foreground-weight 20 weighs the pixels of the reconstruction losses (autoencoder, dae, vae), and none is "
     "trained here (inverse, reward)"),
    ([], "tiny", "give --srl-model NAME"),
    (["--losses", "autoencoder:1:abc", "inverse:1:8"], "tiny",
     "--losses 'autoencoder:1:abc': dims 'abc' must be a positive integer"),
    (["--split-dims", "autoencoder:inf", "--losses", "autoencoder:1"], "tiny",
     "--split-dims 'autoencoder:inf': dims 'inf' must be a positive integer"),
    (["--srl-model", "srl_splits", "--state-dim", "1"], "tiny", "--state-dim 1 is too small to split between 2 "
     "losses (autoencoder, inverse): give a --state-dim of at least 2"),
    (["--srl-model", "srl_splits", "--losses", "autoencoder:1", "inverse:1", "reward:1", "--state-dim", "2"], "tiny",
     "--state-dim 2 is too small to split between 3 losses (autoencoder, inverse, reward): give a --state-dim of at "
     "least 3"),
    (["--srl-model", "pca", "--state-dim", "151"], "tiny", "--state-dim 151: PCA cannot find more components than "
     "training images (150): give a --state-dim of at most 150"),
    (["--srl-model", "vae", "--val-split", "1"], "tiny", "--val-split 1 must be in [0, 1)"),
    (["--srl-model", "vae", "--beta", "inf"], "tiny", "--beta inf must be a finite number >= 0"),
    (["--srl-model", "vae", "--foreground-weight", "inf"], "tiny", "--foreground-weight inf must be a finite number"),
]


@pytest.mark.parametrize("args, data, message", BAD_INPUTS)
def test_bad_input(args: list[str], data: str, message: str, tinyDataset: str,  # noqa: F811
                   strippedDataset: str, continuousDataset: str, tmp_path, capsys: pytest.CaptureFixture) -> None:
    folders = {"tiny": tinyDataset, "bare": strippedDataset, "continuous": continuousDataset,
               "missing": str(tmp_path / "nope"), "not_dataset": str(tmp_path)}
    before = snapshot(folders[data]) if os.path.isdir(folders[data]) else {}
    logs = tmp_path / "logs"
    with pytest.raises(SystemExit) as exit_info:
        runCommand(main, ["--data-folder", folders[data], "--log-folder", str(logs), "--no-progress", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert not logs.exists()
    assert (snapshot(folders[data]) if os.path.isdir(folders[data]) else {}) == before


def test_bad_input_subprocess(tmp_path) -> None:
    """As a user runs it: one line on stderr, exit code 2, no traceback."""
    result = runModule(MODULE, "--data-folder", tmp_path / "nope", "--losses", "vae:1", "bogus:2",
                       "--log-folder", tmp_path / "logs")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == "error: --losses: unknown loss 'bogus'; valid losses: autoencoder, dae, vae, " \
                                    "inverse, forward, reward, supervised, robotic_priors, atc, curl"
    assert not (tmp_path / "logs").exists()


def test_the_parser_is_generated_from_the_config() -> None:
    assertParserFromSettings(buildParser(), SRLTrainConfig)
    assert parseConfig(["--data-folder", "data/x"]) == SRLTrainConfig(data_folder="data/x")
    config = parseConfig(["--data-folder", "d", "--losses", "vae:1", "inverse:2", "--epochs", "3", "--no-eval"])
    assert config == SRLTrainConfig(data_folder="d", losses=("vae:1", "inverse:2"), epochs=3, no_eval=True)


@pytest.mark.parametrize("changes, message", [
    ({"data_folder": None}, "the following arguments are required: --data-folder"),
    ({"epochs": 0}, "argument --epochs: '0' must be a positive integer"),
    ({"seed": -1}, "argument --seed: '-1' is out of range"),
    ({"patience": "x"}, "argument --patience: "),
    ({"val_split": 1.0}, "--val-split 1 must be in [0, 1)"),
])
def test_a_config_built_in_python_is_refused_as_the_command_line_refuses_it(changes, message, tmp_path) -> None:
    config = dataclasses.replace(SRLTrainConfig(data_folder=str(tmp_path), log_folder=str(tmp_path / "logs")),
                                 **changes)
    with pytest.raises(UsageError) as raised:
        checkSettings(config)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    with pytest.raises(UsageError):
        trainFromConfig(config)
    assert not (tmp_path / "logs").exists()


def test_a_config_built_in_python_trains_like_the_command_line(tinyDataset: str, tmp_path) -> None:  # noqa: F811
    from_argv = trainFromArgs(["--data-folder", tinyDataset, "--srl-model", "autoencoder", "--state-dim", "4",
                               "--epochs", "1", "--batch-size", "64", "--log-folder", str(tmp_path / "argv"),
                               "--no-eval", "--no-progress"])
    from_config = trainFromConfig(SRLTrainConfig(data_folder=tinyDataset, srl_model="autoencoder", state_dim=4,
                                                 epochs=1, batch_size=64, log_folder=str(tmp_path / "config"),
                                                 no_eval=True, no_progress=True))
    with open(os.path.join(from_argv, "exp_config.json"), encoding="utf-8") as handle:
        expected = json.load(handle)
    with open(os.path.join(from_config, "exp_config.json"), encoding="utf-8") as handle:
        assert json.load(handle) == expected
    weights = [torch.load(os.path.join(folder, "srl_model.pt"), map_location="cpu", weights_only=True)
               for folder in (from_argv, from_config)]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][key], weights[1][key]) for key in weights[0])


class _StatesRaise(AutoEncoderModel):
    """A plugin model whose getState fails (after training, for the reconstructions and the evaluation)."""

    def getState(self, observations):
        raise RuntimeError("boom in getState")


def test_a_model_folder_whose_outputs_fail_is_removed(tinyDataset: str, tmp_path, monkeypatch) -> None:  # noqa: F811
    # it stayed with exp_config.json and the weights but no reconstructions nor evaluation: it looked finished
    for module in (srl_train, train_choices):  # (train builds the class that train_choices resolves the name to)
        monkeypatch.setattr(module, "trainableModels", lambda: {"autoencoder": _StatesRaise})
    with pytest.raises(RuntimeError, match="boom in getState"):
        trainFromConfig(SRLTrainConfig(data_folder=tinyDataset, srl_model="autoencoder", state_dim=4, epochs=1,
                                       batch_size=64, log_folder=str(tmp_path / "logs"), no_progress=True))
    assert [files for _, _, files in os.walk(tmp_path / "logs") if files] == []


def test_a_ctrl_c_after_training_leaves_nothing_written(tinyDataset: str, tmp_path, monkeypatch) -> None:  # noqa: F811
    """A Ctrl-C once training is over (while the folder is written) removes the model folder and the parents this run
    made for it (--log-folder, the dataset's folder) when empty; a parent that held something before stays."""
    def interrupted(*args, **kwargs) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(srl_train, "writeOutputs", interrupted)
    config = SRLTrainConfig(data_folder=tinyDataset, srl_model="pca", state_dim=2,
                            log_folder=str(tmp_path / "a" / "logs"), no_progress=True)
    with pytest.raises(KeyboardInterrupt):
        trainFromConfig(config)
    assert os.listdir(tmp_path) == []  # a/logs/tiny/<model folder>: all made by the run, all gone
    (tmp_path / "logs" / "other").mkdir(parents=True)  # another dataset's models: the log folder stays
    with pytest.raises(KeyboardInterrupt):
        trainFromConfig(dataclasses.replace(config, log_folder=str(tmp_path / "logs")))
    assert os.listdir(tmp_path / "logs") == ["other"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_training_started_with_sigint_ignored_stops_on_one(tinyDataset: str, tmp_path) -> None:  # noqa: F811
    """``srl_models.train ... &`` in a shell script without job control starts it with SIGINT ignored: it trained on
    to the end through a ``kill -INT`` and wrote its model. It now stops as on a Ctrl-C: exit 130, nothing written."""
    progress = tmp_path / "progress.txt"
    with open(progress, "w", encoding="utf-8") as err:
        with sigintIgnoringProcess([sys.executable, "-m", MODULE, "--data-folder", tinyDataset, "--srl-model",
                                    "autoencoder", "--state-dim", "4", "--epochs", "100000", "--patience", "0",
                                    "--batch-size", "32", "--log-folder", str(tmp_path / "logs")],
                                   stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"}) as process:
            deadline = time.monotonic() + 120
            while "SRL training (epoch 2/" not in progress.read_text(encoding="utf-8"):
                assert process.poll() is None and time.monotonic() < deadline, progress.read_text(encoding="utf-8")
                time.sleep(0.05)
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=60)
    text = progress.read_text(encoding="utf-8")
    assert process.returncode == 130 and "Traceback" not in text, text
    assert text.rstrip().endswith("Interrupted") and os.listdir(tmp_path) == ["progress.txt"]


def test_a_training_of_the_same_second_never_shares_a_model_folder(tinyDataset: str, tmp_path,  # noqa: F811
                                                                    monkeypatch) -> None:
    """Another training may make the folder this one's name stands for at the same moment: this one then takes the
    next name (_2) and leaves the other's folder alone, instead of writing its model into it."""
    chosen, modelFolder = [], srl_train.modelFolder

    def nameTakenMeanwhile(*args) -> str:
        name = modelFolder(*args)
        os.makedirs(name)
        with open(os.path.join(name, "theirs.txt"), "w", encoding="utf-8") as handle:
            handle.write("another training's")
        chosen.append(name)
        return name

    monkeypatch.setattr(srl_train, "modelFolder", nameTakenMeanwhile)
    folder = trainFromConfig(SRLTrainConfig(data_folder=tinyDataset, srl_model="random", state_dim=2, no_eval=True,
                                            log_folder=str(tmp_path / "logs"), no_progress=True))
    assert folder == f"{chosen[0]}_2" and os.path.isfile(os.path.join(folder, "exp_config.json"))
    assert os.listdir(chosen[0]) == ["theirs.txt"]


def test_a_dataset_file_that_is_no_npz_archive_is_named_as_damaged(
        tinyDataset: str, tmp_path, capsys) -> None:  # noqa: F811
    """A preprocessed_data.npz that is a text file: one line naming it as damaged, never numpy's advice to load it
    with pickle (allow_pickle=True would run code from the file); exit 2, nothing written."""
    folder = shutil.copytree(tinyDataset, str(tmp_path / "damaged"))
    damaged = os.path.join(folder, "preprocessed_data.npz")
    with open(damaged, "w", encoding="utf-8") as handle:
        handle.write("garbage\n")
    with pytest.raises(SystemExit) as exit_info:
        runCommand(main, ["--data-folder", folder, "--srl-model", "pca", "--log-folder", str(tmp_path / "logs")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err == f"error: {damaged} is damaged or not a dataset file (not an .npz " \
                                                 "archive)\n", err
    assert "pickle" not in err and not os.path.exists(tmp_path / "logs")


def test_a_one_epoch_training_curve_shows_its_points_and_names_the_model(tmp_path, monkeypatch):
    """One epoch is one point per curve, which a plain line does not draw: each epoch is marked."""
    drawn = {}
    monkeypatch.setattr(plotting, "saveFigure", lambda figure, path, dpi=100: drawn.update(figure=figure))
    history = [{"epoch": 1, "updates": 5, "train": {"vae": 3.2, "total": 3.2}, "val": {"vae": 1.6, "total": 1.6}}]
    plotting.trainingCurve(history, str(tmp_path / "curve.png"), best_epoch=1, title="vae (state dim 32) on data")
    (axis,) = drawn["figure"].axes
    assert axis.get_title() == "vae (state dim 32) on data"
    curves = [line for line in axis.get_lines() if not line.get_label().startswith("kept")]
    assert len(curves) == 2 and all(line.get_marker() == "o" for line in curves)


def test_a_training_curve_within_a_decade_has_plain_ticks_and_its_whole_y_label():
    """Losses from 5.6 to 4.3 on a log axis: ticks read 4.5, 5 (not 4.5x10^0), and the y label is not cut off."""
    history = [{"epoch": epoch, "updates": 5, "train": {"vae": loss, "total": loss},
                "val": {"vae": loss + 0.1, "total": loss + 0.1}} for epoch, loss in enumerate((5.5, 4.9, 4.3), 1)]
    figure = plotting.trainingCurveFigure(history, best_epoch=3)
    (axis,) = figure.axes
    FigureCanvasAgg(figure)
    renderer = figure.canvas.get_renderer()
    figure.draw(renderer)
    labels = [label.get_text() for label in axis.get_yticklabels(minor=True) + axis.get_yticklabels()]
    assert any(labels) and not any("times" in label or "^" in label for label in labels)
    assert axis.yaxis.label.get_window_extent(renderer).x0 >= 0


@pytest.mark.parametrize("n_epochs", [1, 2, 3])
def test_a_short_training_curve_has_whole_epoch_ticks(n_epochs: int) -> None:
    """A 2-epoch curve's axis read 1.0, 1.2, ... 2.0: there is no epoch 1.2. Its ticks are whole epochs."""
    history = [{"epoch": epoch, "updates": 5, "train": {"vae": 6.0 - epoch, "total": 6.0 - epoch}, "val": None}
               for epoch in range(1, n_epochs + 1)]
    figure = plotting.trainingCurveFigure(history, best_epoch=n_epochs)
    (axis,) = figure.axes
    FigureCanvasAgg(figure)
    figure.draw(figure.canvas.get_renderer())
    low, high = axis.get_xlim()
    ticks = [tick for tick in axis.get_xticks() if low <= tick <= high]
    assert ticks and all(float(tick).is_integer() for tick in ticks), ticks


# A third-party SRL plugin (installed as a real dist-info on PYTHONPATH): `mycombo` subclasses LearnedSRLModel, so
# srl_models.train trains it; `randproj` is a model of its own kind, which its package trains; `vae` clashes with the
# built-in name (a name declared twice keeps neither: srl_toolbox.plugins.loadPlugins)
SRL_PLUGIN = '''
import json
import os

import numpy as np

from srl_models.base import BaseSRLModel, SRLType, readExpConfig
from srl_models.models import LearnedSRLModel, VAEModel


class MyCombo(LearnedSRLModel):
    NAME, DEFAULT_LOSSES = "mycombo", {"autoencoder": 1.0, "inverse": 2.0}


class RandProj(BaseSRLModel):
    API_VERSION = 1
    SRL_TYPE = SRLType.LEARNED

    def getState(self, observations):
        return np.zeros((len(observations), self.state_dim), dtype=np.float32)

    def save(self, folder):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "exp_config.json"), "w") as handle:
            json.dump({**self.exp_config, "srl_model": "randproj", "state_dim": self.state_dim,
                       "img_shape": list(self.img_shape), "weights": [], "api_version": 1}, handle)

    @classmethod
    def load(cls, folder, device="cpu"):
        config = readExpConfig(folder)
        return cls(config["state_dim"], tuple(config["img_shape"]), config)


class OtherVAE(VAEModel):
    pass
'''


def _installSRLPlugin(site, name: str, entry_points: str) -> None:
    package = site / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(SRL_PLUGIN)
    dist_info = site / f"{name}-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(f"[srl_toolbox.srl_models]\n{entry_points}\n")


@pytest.fixture(scope="module")
def srlPluginSites(tmp_path_factory: pytest.TempPathFactory):
    """``run(site, MODULE, *ARGS)``: ``python -m MODULE ARGS`` with a plugin site on PYTHONPATH ("models" installs
    mycombo and randproj, "clash" a second `vae`), forked from a warm interpreter started with that PYTHONPATH (one
    per site, shared by the module's commands)."""
    root = tmp_path_factory.mktemp("srl_plugins")
    _installSRLPlugin(root / "models", "qa_srl_models", "mycombo = qa_srl_models.models:MyCombo\n"
                                                        "randproj = qa_srl_models.models:RandProj")
    _installSRLPlugin(root / "clash", "qa_srl_clash", "vae = qa_srl_clash.models:OtherVAE")
    envs = {site: {"PYTHONPATH": str(root / site)} for site in ("models", "clash")}
    interpreters = {site: siteInterpreter(env) for site, env in envs.items()}
    yield lambda site, module, *args: runModule(module, *args, env=envs[site], interpreter=interpreters[site])
    for interpreter in interpreters.values():
        interpreter.stop()


def test_one_loss_whose_model_was_skipped_is_refused_not_trained_as_another(tinyDataset: str, tmp_path,  # noqa: F811
                                                                           srlPluginSites) -> None:
    # it trained an srl_combination (losses vae:1) in silence: "one loss trains the model of that name"
    before = snapshot(tinyDataset)
    for args in (["--losses", "vae"], ["--srl-model", "vae"]):
        result = srlPluginSites("clash", MODULE, "--data-folder", tinyDataset, *args, "--epochs", "1",
                                "--log-folder", tmp_path / "logs", "--no-progress")
        error = result.stderr.strip().splitlines()[-1]
        assert result.returncode == 2, result.stdout + result.stderr
        assert error.startswith("error: ") and "'vae'" in error and "declared by 2 entry points" in error, error
        assert not (tmp_path / "logs").exists() and snapshot(tinyDataset) == before


@pytest.mark.parametrize("losses, chosen, words", [
    (["vae", "inverse"], "srl_combination", "--losses vae inverse (several losses train srl_combination)"),
    (["vae:1:4", "inverse:1:4"], "srl_splits", "--losses vae:1:4 inverse:1:4 (split dims train srl_splits)"),
    (["vae"], "vae", "--losses vae (one loss trains the model of that name)")])
def test_the_refusal_of_a_missing_model_names_what_chose_it(monkeypatch, losses, chosen, words) -> None:
    # a plugin of the same name makes the registry drop a built-in model: the error names the flags that chose it
    models = {name: cls for name, cls in train_choices.trainableModels().items() if name != chosen}
    monkeypatch.setattr(train_choices, "trainableModels", lambda: models)
    with pytest.raises(UsageError, match=re.escape(words)):
        train_choices.resolveModel(parseConfig(["--data-folder", "d", "--losses", *losses]))


def test_a_plugin_learned_srl_model_subclass_is_trained_and_recorded(tinyDataset: str, tmp_path,  # noqa: F811
                                                                     srlPluginSites) -> None:
    # docs/plugins.md: a plugin subclassing LearnedSRLModel is trained by srl_models.train (a model of another kind
    # brings its own command)
    result = srlPluginSites("models", MODULE, "--data-folder", tinyDataset, "--srl-model", "mycombo", "--state-dim",
                            "4", "--epochs", "1", "--batch-size", "64", "--log-folder", tmp_path / "logs", "--no-eval",
                            "--no-progress")
    assert result.returncode == 0, result.stderr
    folder = result.stdout.strip().splitlines()[-1][len("Model folder: "):]
    assert folder.endswith("_mycombo_ST_DIM4_SEED0")
    with open(os.path.join(folder, "exp_config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    assert config["srl_model"] == "mycombo" and config["losses"] == {"autoencoder": 1.0, "inverse": 2.0}
    refused = srlPluginSites("models", MODULE, "--data-folder", tinyDataset, "--srl-model", "randproj",
                             "--log-folder", tmp_path / "other")
    assert refused.returncode == 2 and "'randproj'" in refused.stderr and not (tmp_path / "other").exists()


def test_latest_sends_a_plugin_model_prepare_does_not_train_to_its_folder(tmp_path, srlPluginSites) -> None:
    # it named `srl_models.prepare ... --srl-model randproj`, which refuses a model it does not train
    result = srlPluginSites("models", "rl_baselines.train", "--env", "MobileRobotGymEnv-v0", "--srl-model", "randproj",
                            "--latest", "--srl-log-folder", tmp_path / "srl", "--log-dir", tmp_path / "logs",
                            "--no-vis")
    error = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2, result.stderr
    assert "srl_models.prepare does not train 'randproj': pass its trained folder with --srl-model-path" in error
    assert "python -m srl_models.prepare" not in error and not (tmp_path / "logs").exists()
