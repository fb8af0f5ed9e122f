"""A third-party SRL model that breaks its contract, fails to load or is not installed: refused before a run writes
anything (one line, exit code 2) by train and check_plugin, naming the model, its folder and the error; a broken
SRL model plugin is named in the refusals of its name."""
from __future__ import annotations

import json
import os
import textwrap

import numpy as np
import pytest
from conftest import freshProcesses, runModule, snapshot

from rl_baselines import check_plugin
from rl_baselines.runs import train
from srl_models.base import EXP_CONFIG_FILE, BaseSRLModel, SRLType
from srl_models.config import resolveSRLModel
from srl_models.registry import failed_srl_plugins, loadSRLModel, registered_srl
from srl_toolbox.cli import UsageError

ENV_ID = "MobileRobotGymEnv-v0"
SMALL = (3, 16, 16)


class PluginModel(BaseSRLModel):
    """A plugin model that keeps the contract: a fixed projection of the images to state_dim floats."""

    NAME = "plugin_ok"

    def getState(self, observations: np.ndarray) -> np.ndarray:
        flat = np.asarray(observations, dtype=np.float32).reshape(len(observations), -1)
        return flat[:, :self.state_dim] / 255.0

    def save(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, EXP_CONFIG_FILE), "w") as handle:
            json.dump({"srl_model": self.NAME, "state_dim": self.state_dim, "img_shape": list(self.img_shape),
                       "weights": [], "api_version": 1, "env": ENV_ID}, handle)

    @classmethod
    def load(cls, folder: str, device: str = "cpu") -> PluginModel:
        with open(os.path.join(folder, EXP_CONFIG_FILE)) as handle:
            config = json.load(handle)
        return cls(config["state_dim"], config["img_shape"], config)


class WrongDim(PluginModel):
    NAME = "wrong_dim"

    def getState(self, observations: np.ndarray) -> np.ndarray:
        return super().getState(observations)[:, :-1]


class IntegerStates(PluginModel):
    NAME = "integer_states"

    def getState(self, observations: np.ndarray) -> np.ndarray:
        return np.zeros((len(observations), self.state_dim), dtype=np.int64)


class NaNStates(PluginModel):
    NAME = "nan_states"

    def getState(self, observations: np.ndarray) -> np.ndarray:
        return np.full((len(observations), self.state_dim), np.nan, dtype=np.float32)


class EncodeRaises(PluginModel):
    NAME = "encode_raises"

    def getState(self, observations: np.ndarray) -> np.ndarray:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied\n(1x768 and 512x8)")


class LoadRaises(PluginModel):
    NAME = "load_raises"

    @classmethod
    def load(cls, folder: str, device: str = "cpu") -> PluginModel:
        raise KeyError("encoder.weight")


MODELS = [PluginModel, WrongDim, IntegerStates, NaNStates, EncodeRaises, LoadRaises]
REFUSALS = [
    ("wrong_dim", "breaks the SRL model contract: getState gave shape (1, 7) for one 3x16x16 frame, expected (1, 8)"),
    ("integer_states", "breaks the SRL model contract: getState gave int64 states, expected float32"),
    ("nan_states", "breaks the SRL model contract: getState gave non-finite states"),
    ("encode_raises", "failed to encode a 3x16x16 frame: RuntimeError: mat1 and mat2 shapes cannot be multiplied "
                      "(1x768 and 512x8)"),
    ("load_raises", "failed to load: KeyError: 'encoder.weight'"),
]


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch, tmp_path) -> dict[str, str]:
    """The models above registered as learned ones (in this process), each saved in a folder: name -> folder."""
    folders = {}
    for model_class in MODELS:
        monkeypatch.setitem(registered_srl, model_class.NAME, (model_class, SRLType.LEARNED))
        folders[model_class.NAME] = str(tmp_path / "models" / model_class.NAME)
        model_class(8, SMALL).save(folders[model_class.NAME])
    return folders


def test_a_model_keeping_the_contract_passes(plugins):
    assert resolveSRLModel(ENV_ID, "plugin_ok", model_path=plugins["plugin_ok"], channels=3) == plugins["plugin_ok"]
    assert loadSRLModel(plugins["plugin_ok"]).state_dim == 8


@pytest.mark.parametrize("name, message", REFUSALS, ids=[case[0] for case in REFUSALS])
def test_resolver_refuses_a_model_breaking_the_contract(plugins, name, message):
    with pytest.raises(ValueError) as error:
        resolveSRLModel(ENV_ID, None, model_path=plugins[name], channels=3)
    text = str(error.value)
    assert message in text and f"the {name!r} SRL model in {plugins[name]!r}" in text and "\n" not in text


@pytest.mark.parametrize("name, message", REFUSALS, ids=[case[0] for case in REFUSALS])
def test_train_refuses_it_before_writing_anything(plugins, tmp_path, name, message):
    # it trained until the first encoded step, then ended in a traceback with the run folder written
    before = snapshot(str(tmp_path))
    with pytest.raises(UsageError) as error:
        train.main(["--algo", "ppo2", "--env", ENV_ID, "--srl-model-path", plugins[name], "--num-timesteps", "64",
                    "--log-dir", str(tmp_path / "logs"), "--no-vis"])
    assert message in str(error.value) and "\n" not in str(error.value)
    assert snapshot(str(tmp_path)) == before and not os.path.exists(tmp_path / "logs")


def test_check_plugin_takes_a_model_folder_and_refuses_a_missing_or_broken_model_as_bad_input(
        plugins, tmp_path, monkeypatch, capsys):
    config = tmp_path / "srl_models.yaml"
    config.write_text("{}\n")
    monkeypatch.setenv("SRL_MODELS_CONFIG", str(config))
    # a learned model with no trained folder: a FAILED line (exit 1) blamed the algorithm
    with pytest.raises(UsageError, match="--srl-model 'plugin_ok': SRL config file .* has no trained SRL model for"):
        check_plugin.main(["ppo2", "--srl-model", "plugin_ok"])
    with pytest.raises(UsageError, match="breaks the SRL model contract"):
        check_plugin.main(["ppo2", "--srl-model-path", plugins["wrong_dim"]])
    with pytest.raises(UsageError, match="cannot be combined with --srl-model-path"):
        check_plugin.main(["ppo2", "--srl-model", "ground_truth", "--srl-model-path", plugins["plugin_ok"]])
    # the folder's kind is the observation, and the runs train through the folder
    assert check_plugin.checkObservation(ENV_ID, None, plugins["plugin_ok"]) == "plugin_ok"
    args = check_plugin._trainArgs("ppo2", "runs", ENV_ID, "plugin_ok", False, 64, 0, (), plugins["plugin_ok"])
    assert args[args.index("--srl-model-path") + 1] == plugins["plugin_ok"]
    with pytest.raises(SystemExit):
        check_plugin.main(["--help"])
    assert "--srl-model-path FOLDER" in capsys.readouterr().out


def test_a_plugin_that_failed_to_load_is_named_in_the_refusals_of_its_name(plugins, tmp_path, monkeypatch):
    reason = "no_such_module_xyz:Model: ModuleNotFoundError: No module named 'no_such_module_xyz'"
    monkeypatch.setitem(failed_srl_plugins, "broken_srl", reason)
    folder = tmp_path / "broken"
    PluginModel(8, SMALL).save(str(folder))
    exp_config = json.loads((folder / EXP_CONFIG_FILE).read_text())
    (folder / EXP_CONFIG_FILE).write_text(json.dumps({**exp_config, "srl_model": "broken_srl"}))
    expected = f"the SRL model plugin 'broken_srl' failed to load ({reason})"
    for argv in (["--srl-model", "broken_srl"], ["--srl-model-path", str(folder)]):
        with pytest.raises(UsageError) as error:
            train.main(["--algo", "ppo2", "--env", ENV_ID, *argv, "--log-dir", str(tmp_path / "logs"), "--no-vis"])
        assert expected in str(error.value), argv
        with pytest.raises(UsageError) as error:
            check_plugin.main(["ppo2", *argv])
        assert expected in str(error.value), argv
    with pytest.raises(ValueError, match=r"'broken_srl' is not a learned SRL model \(its plugin failed to load\)"):
        resolveSRLModel(ENV_ID, "broken_srl", model_path=str(folder))
    assert not os.path.exists(tmp_path / "logs")


PLUGIN = textwrap.dedent('''
    import json, os

    import numpy as np

    from srl_models.base import BaseSRLModel


    class WrongDim(BaseSRLModel):
        def getState(self, observations):
            return np.zeros((len(observations), self.state_dim - 1), dtype=np.float32)

        def save(self, folder):
            pass

        @classmethod
        def load(cls, folder, device="cpu"):
            with open(os.path.join(folder, "exp_config.json")) as handle:
                config = json.load(handle)
            return cls(config["state_dim"], config["img_shape"], config)
''')


def _installedPlugin(site, package: str, source: str, entry_points: str) -> None:
    """Install ``package`` (its ``__init__.py`` holding ``source``) in the folder ``site`` as a distribution declaring
    ``entry_points`` (lines ``NAME = MODULE:CLASS``) in the group ``srl_toolbox.srl_models``."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(source)
    dist_info = site / f"{package}-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package.replace('_', '-')}\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(f"[srl_toolbox.srl_models]\n{entry_points}")


def test_an_installed_plugin_breaking_the_contract_is_one_line_and_nothing_written(tmp_path):
    site = tmp_path / "site"
    _installedPlugin(site, "wrong_dim_plugin", PLUGIN,
                     "wrongdim = wrong_dim_plugin:WrongDim\nbroken_srl = no_such_module_xyz:Model\n")
    folder = tmp_path / "wrongdim"
    folder.mkdir()
    (folder / EXP_CONFIG_FILE).write_text(json.dumps({"srl_model": "wrongdim", "state_dim": 8, "img_shape": [3, 16, 16],
                                                      "weights": [], "api_version": 1, "env": ENV_ID}))
    before = snapshot(str(tmp_path))
    result = runModule("rl_baselines.train", "--algo", "ppo2", "--env", ENV_ID, "--srl-model-path", folder,
                       "--num-timesteps", "128", "--hyperparam", "n_steps:64", "--log-dir", tmp_path / "X", "--no-vis",
                       env={"PYTHONPATH": str(site)})
    error = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "getState gave shape (1, 7) for one 3x16x16 frame, expected (1, 8)" in error
    assert snapshot(str(tmp_path)) == before and not os.path.exists(tmp_path / "X")
    result = runModule("rl_baselines.check_plugin", "ppo2", "--srl-model", "broken_srl", env={"PYTHONPATH": str(site)})
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "the SRL model plugin 'broken_srl' failed to load" in result.stderr.strip().splitlines()[-1]
    # prepare said only that it was "not a learned model this command trains", not that the plugin failed to load
    result = runModule("srl_models.prepare", "--env", ENV_ID, "--srl-model", "broken_srl", "--data-folder",
                       tmp_path / "data", "--log-folder", tmp_path / "logs", env={"PYTHONPATH": str(site)})
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        "error: --srl-model: 'broken_srl' is not a learned model this command trains (skipped: no_such_module_xyz:Model: "
        "ModuleNotFoundError"), result.stderr
    assert not os.path.exists(tmp_path / "data") and not os.path.exists(tmp_path / "logs")


BOTH_SIDES = textwrap.dedent('''
    """An SRL model plugin whose module imports the RL side too (for a helper of its own)."""
    from srl_models.models import LearnedSRLModel
    from rl_baselines.core.base import BaseRLObject


    class BothModel(LearnedSRLModel):
        NAME, DEFAULT_LOSSES, DECODES = "both_ae", {"autoencoder": 1.0}, True
''')


def test_a_plugin_importing_srl_models_and_rl_baselines_loads_in_every_command(tmp_path):
    """The SRL registry loads on first access, once the RL modules its plugin imports have finished importing: the
    plugin was skipped by every command as a circular import (a partially initialized rl_baselines module). Each
    command starts fresh (conftest.freshProcesses: the project's modules imported by the command itself):
    train --help and srl_models.train --help (listing it) print no warning; importing each command module first,
    then reading the registry, finds it registered and nothing failed."""
    site = tmp_path / "site"
    _installedPlugin(site, "both_plugin", BOTH_SIDES, "both_ae = both_plugin:BothModel\n")
    modules = ("rl_baselines.train", "rl_baselines.api", "srl_models.train", "environments.dataset_generator")
    imports = [("-c", f"import {module}\nfrom srl_models.registry import registered_srl, failed_srl_plugins\n"
                      "print('both_ae' in registered_srl, failed_srl_plugins)\n", [], None) for module in modules]
    train_help, *imported, srl_help = freshProcesses(
        {"PYTHONPATH": str(site)}, ("-m", "rl_baselines.train", ["--help"], None), *imports,
        ("-m", "srl_models.train", ["--help"], None))
    assert train_help.returncode == 0 and "skipped" not in train_help.stderr, train_help.stderr
    for module, result in zip(modules, imported, strict=True):
        assert (result.returncode, result.stdout, result.stderr) == (0, "True {}\n", ""), (module, result.stderr)
    assert srl_help.returncode == 0 and "both_ae" in srl_help.stdout and not srl_help.stderr, srl_help.stderr
