"""srl_models.prepare (dataset -> trained, evaluated, registered SRL models), the default SRL config file found from
any working directory, and train's --latest."""
from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import re
import shutil
import warnings

import numpy as np
import pytest
import yaml
from conftest import REPO, runFolder, runModule, runTrain, snapshot

from environments import dataset_generator, getEnvClass
from environments.car_racing.car_env import CarRacingGymEnv
from environments.generator_config import GeneratorConfig
from environments.registry import REFERENCE_RENDERER, defaultRenderer, registerAll
from rl_baselines.core.registry import registered_rl
from rl_baselines.runs import train, train_checks
from rl_baselines.sweeps.sweep import checkGrid, expandGrid
from srl_models import prepare
from srl_models.base import readExpConfig
from srl_models.config import (
    SRLLookupError,
    defaultConfigFile,
    latestModelFolder,
    prepareCommand,
    readSRLConfig,
    registerModel,
    resolveSRLModel,
)
from srl_models.models import VAEModel
from srl_models.prepare import trainCommand
from srl_models.train_config import SRLTrainConfig
from srl_toolbox.cli import UsageError, pythonCommand

ENV_ID = "MobileRobotGymEnv-v0"
TINY = ["--episodes", "2", "--img-shape", "3", "16", "16", "--epochs", "1", "--state-dim", "4", "--num-cpu", "1",
        "--device", "cpu", "--no-progress"]
COMMENT = "# my models, by hand\n"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two tiny models (vae, srl_combination) prepared from a fresh folder, registered in the default config file
    (here $SRL_MODELS_CONFIG), with the command's output."""
    root = tmp_path_factory.mktemp("prepare")
    config = root / "config" / "srl_models.yaml"
    config.parent.mkdir()
    config.write_text(COMMENT + "OtherEnv-v0:\n  vae: /somewhere/else  # kept\n", encoding="utf-8")
    env = {"SRL_MODELS_CONFIG": str(config)}
    result = runModule("srl_models.prepare", "--env", ENV_ID, "--srl-model", "vae", "srl_combination", *TINY,
                       env=env, cwd=str(root), timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    return {"root": root, "config": config, "env": env, "stdout": result.stdout}


@pytest.mark.slow
def test_prepare_registers_the_models(prepared):
    root, config = prepared["root"], prepared["config"]
    text = config.read_text(encoding="utf-8")
    assert text.startswith(COMMENT) and "/somewhere/else  # kept" in text  # comments and other entries kept
    mapping = yaml.safe_load(text)
    assert set(mapping) == {"OtherEnv-v0", ENV_ID} and set(mapping[ENV_ID]) == {"vae", "srl_combination"}
    dataset = root / "data" / f"{ENV_ID}_2ep_16x16_sprites_seed0"  # the env's default renderer, named
    assert json.loads((dataset / "dataset_config.json").read_text())["num_episodes"] == 2
    for name, written in mapping[ENV_ID].items():
        folder = os.path.normpath(os.path.join(config.parent, written))
        assert folder.startswith(str(root / "logs" / "srl" / dataset.name))
        exp_config = json.loads(open(os.path.join(folder, "exp_config.json")).read())
        assert exp_config["srl_model"] == name and exp_config["state_dim"] == 4 and exp_config["epochs"] == 1
        assert os.path.isfile(os.path.join(folder, "gt_correlation.json"))
        assert os.path.isfile(os.path.join(folder, "knn_mse.json"))
        assert folder in prepared["stdout"]  # the summary table names each folder
    summary = prepared["stdout"][prepared["stdout"].index("Registered in"):]
    assert "GTC" in summary and "KNN-MSE" in summary and "reused" not in summary


@pytest.mark.slow
def test_prepare_registers_the_contrastive_models(tmp_path, monkeypatch, capsys):
    """atc and curl are prepared, evaluated (the probe too) and registered by name like the others; --augment reaches
    the trainings (recorded in their exp_config), and a second call reuses them."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SRL_MODELS_CONFIG", str(tmp_path / "srl.yaml"))
    argv = ["--env", ENV_ID, "--srl-model", "atc", "curl", "--augment", "shift", *TINY]
    rows = prepare.prepare(argv)
    mapping = readSRLConfig(str(tmp_path / "srl.yaml"))[ENV_ID]
    assert set(mapping) == {"atc", "curl"} and not any(row["reused"] for row in rows)
    for row in rows:
        exp_config = json.loads(open(os.path.join(row["folder"], "exp_config.json")).read())
        assert exp_config["srl_model"] == row["model"] and exp_config["augment"] == "shift"
        assert row["gtc"] is not None and row["probe"] is not None
    out = capsys.readouterr().out
    assert "probe R2" in out and "Linear probe" not in out
    stored = snapshot(str(tmp_path / "data"))
    assert [row["reused"] for row in prepare.prepare(argv)] == [True, True]
    assert snapshot(str(tmp_path / "data")) == stored  # the augmentation never touches the recorded frames


@pytest.mark.slow
def test_second_call_reuses_dataset_and_models(prepared, monkeypatch, capsys):
    monkeypatch.chdir(prepared["root"])
    monkeypatch.setenv("SRL_MODELS_CONFIG", str(prepared["config"]))
    before = snapshot(str(prepared["root"] / "logs")), snapshot(str(prepared["root"] / "data"))
    rows = prepare.prepare(["--env", ENV_ID, "--srl-model", "srl_combination", "vae", *TINY])
    assert [row["reused"] for row in rows] == [True, True]
    assert (snapshot(str(prepared["root"] / "logs")), snapshot(str(prepared["root"] / "data"))) == before
    mapping = yaml.safe_load(prepared["config"].read_text())[ENV_ID]
    assert {row["model"]: row["registered"] for row in rows} == mapping
    assert "reused" in capsys.readouterr().out

    # another setting (here the state size) trains a new model on the same dataset
    calls = []
    vae_folder = next(row["folder"] for row in rows if row["model"] == "vae")
    monkeypatch.setattr(prepare, "_trainedFolder", lambda model, config: calls.append(config) or vae_folder)
    prepare.prepare(["--env", ENV_ID, "--srl-model", "vae", *TINY[:TINY.index("--state-dim") + 1], "5",
                     *TINY[TINY.index("--state-dim") + 2:]])
    assert len(calls) == 1 and isinstance(calls[0], SRLTrainConfig) and calls[0].state_dim == 5


@pytest.mark.slow
def test_prepare_passes_typed_configs(tmp_path, monkeypatch):
    """The generator and the trainer are called in this process with their settings dataclasses, never with argv."""
    monkeypatch.chdir(tmp_path)
    recorded, trained = [], []

    def fakeGenerate(config, resume_hint):
        recorded.append(config)
        folder = os.path.join(config.save_path, config.name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "dataset_config.json"), "w", encoding="utf-8") as handle:
            json.dump({"env": config.env, "img_shape": list(config.img_shape), "num_episodes": config.num_episode,
                       "seed": config.seed, "policy": "random", "random_target": config.random_target,
                       "continuous_actions": False, "shape_reward": False, "multi_view": False,
                       "renderer": config.renderer}, handle)
        return 0

    def fakeTrain(config):
        trained.append(config)
        folder = tmp_path / "models" / config.srl_model
        folder.mkdir(parents=True, exist_ok=True)
        return str(folder)

    monkeypatch.setattr(dataset_generator, "generate", fakeGenerate)
    monkeypatch.setattr(prepare, "trainFromConfig", fakeTrain)
    argv = ["--env", ENV_ID, "--srl-model", "vae", "pca", "-r", "--seed", "3", *TINY,
            "--srl-config-file", str(tmp_path / "srl.yaml")]
    rows = prepare.prepare(argv)
    assert [row["model"] for row in rows] == ["vae", "pca"]
    name = f"{ENV_ID}_2ep_16x16_rt_sprites_seed3"
    assert recorded == [GeneratorConfig(env=ENV_ID, name=name, save_path="data/", num_episode=2, num_cpu=1, seed=3,
                                        img_shape=(3, 16, 16), random_target=True, renderer="sprites",
                                        no_progress=True)]  # the renderer resolved: the env's default, by name
    # --epochs goes to every model (recorded in each recipe, as before), though pca has no epochs
    assert trained == [SRLTrainConfig(data_folder=os.path.join("data/", name), srl_model=model, state_dim=4,
                                      epochs=epochs, seed=3, log_folder=os.path.join("logs", "srl"), device="cpu",
                                      no_progress=True)
                       for model, epochs in (("vae", 1), ("pca", 1))]
    recorded.clear()
    prepare.prepare([*argv, "--force"])
    assert len(recorded) == 1 and recorded[0].force and not recorded[0].resume
    trained.clear()
    with pytest.warns(UserWarning, match="--augment shift does nothing for --srl-model pca"):
        prepare.prepare([*argv, "--augment", "shift"])  # the views of the losses: pca trains none, so it takes none
    assert [(config.srl_model, config.augment) for config in trained] == [("vae", "shift"), ("pca", None)]


@pytest.mark.parametrize("models, warned", [(["pca"], "pca: it trains"), (["vae", "pca", "random"],
                                                                           "pca, random: they train"), (["vae"], None)])
def test_augment_for_a_model_without_a_loss_is_one_warning(tmp_path, monkeypatch, models, warned):
    """--augment does nothing for a model that trains no loss (pca, random): one warning naming only those models,
    none when it reaches every model (as none does; srl_models.train refuses it for them)."""
    monkeypatch.chdir(tmp_path)
    args = prepare.buildParser().parse_args(["--env", ENV_ID, "--srl-model", *models, "--augment", "shift",
                                             "--episodes", "2", "--img-shape", "3", "16", "16", "--device", "cpu"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        todo = prepare.plan(args)
    shown = [str(warning.message) for warning in caught if "--augment" in str(warning.message)]
    assert shown == ([f"--augment shift does nothing for --srl-model {warned} no loss (no views to augment)"]
                     if warned else [])
    assert {model: config.augment for model, config in todo.training.items()} == {
        model: None if model in ("pca", "random") else "shift" for model in models}
    args.augment = "none"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepare.plan(args)
    assert not os.listdir(tmp_path)  # nothing written by the checks


def test_the_shift_pad_reaches_the_models_whose_views_are_shifted(tmp_path, monkeypatch):
    """--shift-pad goes to each model whose views are shifted (curl by default, any with --augment shift) and to no
    other (srl_models.train refuses it there); reaching none is one warning."""
    monkeypatch.chdir(tmp_path)
    argv = ["--env", ENV_ID, "--episodes", "2", "--img-shape", "3", "16", "16", "--device", "cpu", "--shift-pad", "2"]
    todo = prepare.plan(prepare.buildParser().parse_args([*argv, "--srl-model", "vae", "curl", "pca"]))
    assert {model: config.shift_pad for model, config in todo.training.items()} == {"vae": None, "curl": 2, "pca": None}
    assert todo.expected["curl"]["shift_pad"] == 2 and todo.expected["vae"]["shift_pad"] is None
    todo = prepare.plan(prepare.buildParser().parse_args([*argv, "--srl-model", "vae", "pca", "--augment", "shift"]))
    assert {model: config.shift_pad for model, config in todo.training.items()} == {"vae": 2, "pca": None}
    with pytest.warns(UserWarning, match="--shift-pad 2 does nothing here: no model's views are shifted"):
        prepare.plan(prepare.buildParser().parse_args([*argv, "--srl-model", "vae"]))
    assert not os.listdir(tmp_path)


def test_train_finds_the_prepared_model_from_another_folder(prepared, tmp_path):
    elsewhere = tmp_path / "notebooks"
    elsewhere.mkdir()
    result = runTrain("--algo", "ppo2", "--env", ENV_ID, "--srl-model", "vae", "--num-timesteps", "64", "--log-dir",
                      str(tmp_path / "logs"), env=prepared["env"], cwd=str(elsewhere))
    record = json.loads(open(os.path.join(runFolder(result), "srl_model.json")).read())
    written = yaml.safe_load(prepared["config"].read_text())[ENV_ID]["vae"]
    assert record["path"] == os.path.normpath(os.path.join(prepared["config"].parent, written))


@pytest.mark.slow
def test_latest_old_toolbox_command(prepared):
    """The old toolbox's guide: ``--latest --srl-model srl_combination`` from the folder the models were trained in
    (logs/srl), with a small --num-timesteps appended."""
    result = runTrain("--algo", "ppo2", "--log-dir", "logs/", "--latest", "--srl-model", "srl_combination", "--env",
                      ENV_ID, "--num-timesteps", "64", cwd=str(prepared["root"]),
                      env={"SRL_MODELS_CONFIG": str(prepared["root"] / "missing.yaml")})
    written = yaml.safe_load(prepared["config"].read_text())[ENV_ID]["srl_combination"]
    folder = os.path.normpath(os.path.join(prepared["config"].parent, written))
    assert f"--latest: using the srl_combination model {folder}" in result.stdout
    run_dir = os.path.join(str(prepared["root"]), runFolder(result))
    assert json.loads(open(os.path.join(run_dir, "srl_model.json")).read())["path"] == folder


@pytest.mark.slow
def test_latest_picks_the_newest(prepared, tmp_path):
    log_folder = str(prepared["root"] / "logs" / "srl")
    folder = latestModelFolder(log_folder, ENV_ID, "vae")
    assert "_vae_" in os.path.basename(folder)
    newer = tmp_path / "srl" / "other_dataset" / "newer_vae"
    newer.mkdir(parents=True)
    with open(os.path.join(folder, "exp_config.json"), encoding="utf-8") as handle:
        (newer / "exp_config.json").write_text(handle.read())
    older = tmp_path / "srl" / "other_dataset" / "older_vae"
    older.mkdir()
    (older / "exp_config.json").write_text((newer / "exp_config.json").read_text())
    os.utime(older / "exp_config.json", (1, 1))
    assert latestModelFolder(str(tmp_path / "srl"), ENV_ID, "vae") == str(newer)
    with pytest.raises(SRLLookupError, match="no 'vae' model trained on MobileRobot1DGymEnv-v0"):
        latestModelFolder(str(tmp_path / "srl"), "MobileRobot1DGymEnv-v0", "vae")


def _fakeModel(folder, img_shape, when: float, env_id: str = ENV_ID) -> str:
    """A vae model folder of that image shape whose exp_config.json was written at ``when``."""
    VAEModel(4, img_shape, {"env": env_id, "renderer": defaultRenderer(env_id)}).save(str(folder))
    os.utime(folder / "exp_config.json", (when, when))
    return str(folder)


def test_latest_picks_the_newest_model_that_fits_the_run(tmp_path):
    """--latest skips newer models of other cameras or sizes (it refused the run although an older fitting model
    existed); none fitting is one line saying so, and a refused choice is named as --latest's, not as a
    --srl-model-path the user never passed."""
    root = tmp_path / "srl"
    one_camera = _fakeModel(root / "ds_a" / "vae_3", (3, 32, 32), 1000)
    two_cameras = _fakeModel(root / "ds_b" / "vae_6", (6, 32, 32), 2000)
    assert latestModelFolder(str(root), ENV_ID, "vae", channels=3) == one_camera
    assert latestModelFolder(str(root), ENV_ID, "vae", channels=6) == two_cameras
    assert latestModelFolder(str(root), ENV_ID, "vae", (3, 32, 32), 3) == one_camera
    with pytest.raises(SRLLookupError, match=r"^--latest: none of the 2 'vae' model\(s\) trained on "
                                             rf"{ENV_ID} under .* fits the run's 3x16x16 images \(the newest, "
                                             rf"{re.escape(two_cameras)}, encodes 6x32x32\); .*--img-shape 3 16 16$"):
        latestModelFolder(str(root), ENV_ID, "vae", (3, 16, 16), 3, ["--img-shape", "3", "16", "16"])
    argv = ["--algo", "ppo2", "--env", ENV_ID, "--srl-model", "vae", "--latest", "--srl-log-folder", str(root),
            "--log-dir", str(tmp_path / "logs"), "--no-vis"]
    assert train_checks.validate(train.parseCommand(argv)[0], registered_rl).srl_model_path == one_camera
    os.remove(os.path.join(one_camera, readExpConfig(one_camera)["weights"][0]))
    with pytest.raises(UsageError, match=rf"^--srl-model vae: --latest's choice {re.escape(one_camera)}: ") as caught:
        train_checks.validate(train.parseCommand(argv)[0], registered_rl)
    assert "--srl-model-path" not in str(caught.value)


def test_a_model_prepared_with_a_random_target_warns_a_run_without_one(tmp_path, monkeypatch):
    """prepare registers a model per env id: a run without -r (or, on an arm, without the --force-down its random
    dataset moved with) gets one warning naming the flags; the train command prepare prints gets none."""
    monkeypatch.chdir(tmp_path)
    config_file = str(tmp_path / "srl.yaml")
    env_id = "KukaButtonGymEnv-v0"
    prepare.prepare(["--env", env_id, "-r", "--srl-model", "pca", "--episodes", "2", "--img-shape", "3", "16", "16",
                     "--state-dim", "2", "--num-cpu", "1", "--device", "cpu", "--no-progress", "--srl-config-file",
                     config_file])
    argv = ["--algo", "ppo2", "--env", env_id, "--srl-model", "pca", "--srl-config-file", config_file, "--log-dir",
            str(tmp_path / "logs"), "--no-vis"]
    with pytest.warns(UserWarning, match=r"the SRL model's dataset was recorded with a random target, this run has a "
                                         r"fixed target \(add -r\); with --force-down, .*\(add --force-down\)"):
        train_checks.validate(train.parseCommand(argv)[0], registered_rl)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train_checks.validate(train.parseCommand([*argv, "-r", "--force-down"])[0], registered_rl)


def test_the_suggested_train_command_moves_the_arm_as_its_dataset(monkeypatch):
    monkeypatch.setattr(prepare, "pythonCommand", lambda: "python")
    assert trainCommand("KukaButtonGymEnv-v0", "vae", True, None) == (
        "python -m rl_baselines.train --env KukaButtonGymEnv-v0 --srl-model vae --random-target --force-down")
    assert trainCommand(ENV_ID, "vae", False, "c.yaml") == (
        f"python -m rl_baselines.train --env {ENV_ID} --srl-model vae --srl-config-file c.yaml")
    assert trainCommand(ENV_ID, "vae", False, None, "fpv") == (
        f"python -m rl_baselines.train --env {ENV_ID} --srl-model vae --fpv")
    # frames of a renderer other than the env's default: the run draws with it (it drew with the default, and warned)
    assert trainCommand(ENV_ID, "vae", False, None, None, "tinyrenderer") == (
        f"python -m rl_baselines.train --env {ENV_ID} --srl-model vae --renderer tinyrenderer")
    assert trainCommand(ENV_ID, "vae", False, None, None, "sprites") == (
        f"python -m rl_baselines.train --env {ENV_ID} --srl-model vae")


def test_the_printed_commands_name_the_running_interpreter(monkeypatch, tmp_path):
    """`make srl-demo` runs .venv/bin/python with no venv activated: a bare `python -m ...` line the user pastes
    next would not find the toolbox, so prepare's "Use one with:" line and its hint name this interpreter."""
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)  # no `python` on PATH
    interpreter = pythonCommand()
    assert interpreter != "python"
    assert trainCommand(ENV_ID, "vae", False, None).startswith(f"{interpreter} -m rl_baselines.train --env {ENV_ID} ")
    assert prepareCommand(ENV_ID, "vae").startswith(f"{interpreter} -m srl_models.prepare --env {ENV_ID} ")


def test_default_config_file(monkeypatch, tmp_path):
    monkeypatch.delenv("SRL_MODELS_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert defaultConfigFile() == os.path.join(REPO, "config", "srl_models.yaml")  # run from a checkout
    monkeypatch.setenv("SRL_MODELS_CONFIG", "mine.yaml")
    assert defaultConfigFile() == str(tmp_path / "mine.yaml")


def test_missing_model_error_names_the_prepare_command(tmp_path):
    """From a folder outside the repository, with the default config (here an empty $SRL_MODELS_CONFIG that does
    not exist yet): one line naming the command that prepares the model."""
    result = runModule("rl_baselines.train", "--algo", "ppo2", "--env", ENV_ID, "--srl-model", "vae", "-r", "--no-vis",
                       "--num-timesteps", "64", env={"SRL_MODELS_CONFIG": str(tmp_path / "srl.yaml")},
                       cwd=str(tmp_path))
    assert result.returncode == 2, result.stderr
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1
    assert f"python -m srl_models.prepare --env {ENV_ID} --srl-model vae --random-target" in error
    assert os.listdir(tmp_path) == []


# (case, arguments after --env/--srl-model defaults, message)
BAD_PREPARE = [
    ("unknown env", ["--env", "Nope-v0", "--srl-model", "vae"], "unknown --env 'Nope-v0'; valid choices: "),
    ("not learned", ["--env", ENV_ID, "--srl-model", "vae", "ground_truth"],
     "'ground_truth' is not a learned model this command trains; valid choices: "),
    ("small images", ["--env", ENV_ID, "--srl-model", "vae", "--img-shape", "3", "8", "8"], "--img-shape 3 8 8"),
    ("huge images", ["--env", ENV_ID, "--srl-model", "pca", "--episodes", "1", "--img-shape", "3", "100000", "100000"],
     "--img-shape 3 100000 100000 is not 3 H W with H, W in 16..4096"),
    ("processes", ["--env", ENV_ID, "--srl-model", "vae", "--episodes", "2", "--num-cpu", "3"],
     "--num-cpu 3 is more than --episodes 2"),
    ("seed", ["--env", ENV_ID, "--srl-model", "vae", "--seed", "-1"], "--seed: '-1' is out of range"),
    ("device", ["--env", ENV_ID, "--srl-model", "vae", "--device", "tpu"],
     "--device: 'tpu' is not a device; valid choices: auto, cpu, cuda, cuda:N"),
    ("bad config", ["--env", ENV_ID, "--srl-model", "vae", "--srl-config-file", "{tmp}/bad.yaml"],
     "must map env ids to {model name: folder}"),
    ("augmentation", ["--env", ENV_ID, "--srl-model", "vae", "--augment", "flip"],
     "argument --augment: invalid choice: 'flip' (choose from 'none', 'shift')"),
    ("curl unaugmented", ["--env", ENV_ID, "--srl-model", "vae", "curl", "--augment", "none"],
     "--augment none: the curl loss contrasts two augmentations of one frame"),
    ("config file in a missing folder", ["--env", ENV_ID, "--srl-model", "vae", "--srl-config-file",
                                         "{tmp}/nowhere/srl.yaml"], "/nowhere/srl.yaml': the folder does not exist"),
    ("empty config file", ["--env", ENV_ID, "--srl-model", "vae", "--srl-config-file", ""],
     "--srl-config-file: '' is empty"),
    ("huge state", ["--env", ENV_ID, "--srl-model", "vae", "--state-dim", "1e30"], "--state-dim: '1e30'"),
    ("second camera of another env", ["--env", ENV_ID, "--srl-model", "vae", "--multi-view"],
     f"--multi-view: {ENV_ID} has no second fixed camera (its second camera: --fpv); envs with --multi-view: "
     "Kuka2ButtonGymEnv-v0, "
     "KukaButtonGymEnv-v0"),
    ("first-person view of an arm", ["--env", "KukaButtonGymEnv-v0", "--srl-model", "vae", "--fpv"],
     "--fpv: KukaButtonGymEnv-v0 has no first-person camera (its second camera: --multi-view); envs with --fpv: "
     "MobileRobot1DGymEnv-v0, "
     "MobileRobot2TargetGymEnv-v0"),
    ("foreign dataset", ["--env", ENV_ID, "--srl-model", "vae", *TINY],
     "was recorded with other settings (seed was 7, now 0)"),
    # before the dataset is recorded and the vae trained: 2 episodes of at most 250 steps, one held out
    ("pca components", ["--env", ENV_ID, "--srl-model", "vae", "pca", "--episodes", "2", "--state-dim", "300"],
     "--state-dim 300: PCA cannot find more components than training images, and --episodes 2 give at most 250 "
     "(1 training episode of at most 250 steps"),
]


@pytest.mark.parametrize("case, argv, message", BAD_PREPARE, ids=[case[0] for case in BAD_PREPARE])
def test_bad_prepare_inputs(tmp_path, monkeypatch, case, argv, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SRL_MODELS_CONFIG", str(tmp_path / "srl.yaml"))
    (tmp_path / "bad.yaml").write_text("- a list\n")
    dataset = tmp_path / "data" / f"{ENV_ID}_2ep_16x16_sprites_seed0"
    dataset.mkdir(parents=True)
    (dataset / "dataset_config.json").write_text(json.dumps({"env": ENV_ID, "img_shape": [3, 16, 16],
                                                             "num_episodes": 2, "seed": 7, "policy": "random",
                                                             "random_target": False, "continuous_actions": False,
                                                             "shape_reward": False, "multi_view": False,
                                                             "renderer": "sprites"}))
    before = snapshot(str(tmp_path))
    with pytest.raises(UsageError) as raised:
        prepare.prepare([arg.format(tmp=tmp_path) for arg in argv])
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert snapshot(str(tmp_path)) == before and sorted(os.listdir(tmp_path)) == ["bad.yaml", "data"]


def test_a_dataset_of_its_name_with_shorter_episodes_is_not_reused(tmp_path, monkeypatch):
    """A dataset of prepare's name recorded with the generator's --max-steps 40 (its env_globals.json keeps the cap;
    dataset_config.json does not) was reused: 120 frames where prepare's settings record 750."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SRL_MODELS_CONFIG", str(tmp_path / "srl.yaml"))
    folder = tmp_path / "data" / f"{ENV_ID}_2ep_16x16_sprites_seed0"
    _fakeDataset(folder, 2, 40)
    (folder / "env_globals.json").write_text(json.dumps({"env_kwargs": {"max_steps": 40, "renderer": "sprites"}}))
    before = snapshot(str(tmp_path))
    with pytest.raises(UsageError) as raised:
        prepare.prepare(["--env", ENV_ID, "--srl-model", "vae", *TINY])
    assert "was recorded with other settings (max_steps was 40, now unset (the env's own))" in str(raised.value)
    assert snapshot(str(tmp_path)) == before


def _fakeDataset(folder, episodes: int, frames: int) -> None:
    """A dataset folder as prepare records it for TINY's settings (seed 0), of ``episodes`` of ``frames`` rows."""
    folder.mkdir(parents=True)
    (folder / "dataset_config.json").write_text(json.dumps({
        "env": ENV_ID, "img_shape": [3, 16, 16], "num_episodes": episodes, "seed": 0, "policy": "random",
        "random_target": False, "continuous_actions": False, "shape_reward": False, "multi_view": False,
        "renderer": "sprites"}))
    np.savez(folder / "preprocessed_data.npz", episode_starts=np.tile(np.arange(frames) == 0, episodes))


def test_pca_components_are_checked_on_a_reused_dataset_exactly(tmp_path, monkeypatch):
    """A reused dataset's episodes are counted: 2 of 5 frames, one held out, leave PCA 5 training images (the bound
    from the env's episode length, 250, would let 6 through to fail after the vae was trained)."""
    monkeypatch.chdir(tmp_path)
    _fakeDataset(tmp_path / "data" / f"{ENV_ID}_2ep_16x16_sprites_seed0", 2, 5)
    argv = ["--env", ENV_ID, "--srl-model", "vae", "pca", *TINY, "--srl-config-file", str(tmp_path / "srl.yaml")]
    before = snapshot(str(tmp_path))
    with pytest.raises(UsageError, match=r"^--state-dim 6: PCA cannot find more components than training images "
                                         r"\(5 in the reused dataset .*_2ep_16x16_sprites_seed0\): give a "
                                         r"--state-dim of at most 5$"):
        prepare.plan(prepare.buildParser().parse_args([*argv, "--state-dim", "6"]))
    assert prepare.plan(prepare.buildParser().parse_args([*argv, "--state-dim", "5"])).generator is None
    assert snapshot(str(tmp_path)) == before


def test_a_model_without_epochs_is_reused_whatever_the_epochs(tmp_path, monkeypatch):
    """pca has no epochs (prepare passes --epochs to it, recorded as ever): the pca prepared with --epochs 1 is the one
    --epochs 9 asks for (also one recorded with other epochs), the vae is another."""
    monkeypatch.chdir(tmp_path)
    _fakeDataset(tmp_path / "data" / f"{ENV_ID}_2ep_16x16_sprites_seed0", 2, 5)

    def planned(epochs: str) -> prepare.Plan:
        argv = ["--env", ENV_ID, "--srl-model", "vae", "pca", *TINY, "--srl-config-file", str(tmp_path / "srl.yaml")]
        argv[argv.index("--epochs") + 1] = epochs
        return prepare.plan(prepare.buildParser().parse_args(argv))

    one, nine = planned("1"), planned("9")
    assert [config.epochs for config in one.training.values()] == [1, 1]
    assert one.expected["pca"] == nine.expected["pca"] and "epochs" not in one.expected["pca"]
    assert one.expected["vae"]["epochs"] == 1 and nine.expected["vae"]["epochs"] == 9
    older = tmp_path / "logs" / "srl" / f"{ENV_ID}_2ep_16x16_sprites_seed0" / "older_pca"
    older.mkdir(parents=True)
    (older / "exp_config.json").write_text(json.dumps({**one.expected["pca"], "epochs": 10}))
    for name in prepare.FINISHED_FILES:
        (older / name).write_text("{}")
    found = prepare.findTrainedModel(one.log_folder, one.dataset_folder, nine.expected["pca"])
    assert found is not None and os.path.abspath(found) == str(older)


def test_prepare_trains_again_a_model_without_weights_or_of_an_earlier_recording(tmp_path, monkeypatch, capsys):
    """A finished folder is reused only with every weights file its exp_config lists and when trained on the dataset
    the folder holds now (its recorded fingerprint): else the model is trained again and registered, saying why."""
    monkeypatch.chdir(tmp_path)
    argv = ["--env", ENV_ID, "--srl-model", "pca", *TINY, "--srl-config-file", str(tmp_path / "srl.yaml")]
    first = prepare.prepare(argv)[0]
    assert prepare.prepare(argv)[0]["reused"]
    os.remove(os.path.join(first["folder"], "srl_model.npz"))
    capsys.readouterr()
    second = prepare.prepare(argv)[0]
    out = capsys.readouterr().out
    assert not second["reused"] and second["folder"] != first["folder"]
    assert re.search(r"pca: not reused: \S+ lacks its weights file\(s\): srl_model.npz; training again\n", out)
    assert os.path.isfile(os.path.join(second["folder"], "srl_model.npz"))
    assert readSRLConfig(str(tmp_path / "srl.yaml"))[ENV_ID]["pca"] == second["registered"]
    # the dataset recorded again into its folder (here: other rewards): the model trained on it before is stale
    data_file = tmp_path / "data" / f"{ENV_ID}_2ep_16x16_sprites_seed0" / "preprocessed_data.npz"
    with np.load(data_file) as data:
        arrays = {key: data[key] for key in data.files}
    np.savez(data_file, **{**arrays, "rewards": arrays["rewards"] + 1})
    third = prepare.prepare(argv)[0]
    out = capsys.readouterr().out
    assert not third["reused"] and third["folder"] not in (first["folder"], second["folder"])
    assert re.search(r"pca: not reused: \S+ was trained on an earlier recording of \S+_2ep_16x16_sprites_seed0 "
                     r"\(its dataset fingerprint differs\); training again\n", out)
    assert prepare.prepare(argv)[0]["folder"] == third["folder"]  # the new one is reused


def test_bad_prepare_input_exits_2(tmp_path):
    result = runModule("srl_models.prepare", "--env", ENV_ID, "--srl-model", "nope", cwd=str(tmp_path))
    assert result.returncode == 2 and result.stderr.startswith("error: --srl-model: 'nope'")
    assert len(result.stderr.strip().splitlines()) == 1 and os.listdir(tmp_path) == []


def test_a_refusal_prints_its_error_alone(tmp_path):
    """-r on CarRacing (a warning: it does nothing there) and a --log-folder that cannot be made: the one-line error
    alone, not the warning of the recording it never makes (shown when accepted:
    test_random_target_on_an_env_without_one_is_the_plain_dataset)."""
    result = runModule("srl_models.prepare", "--env", "CarRacingGymEnv-v0", "-r", "--srl-model", "pca",
                       "--img-shape", "3", "16", "16", "--data-folder", tmp_path / "data", "--log-folder",
                       "/proc/no-such-folder", cwd=str(tmp_path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: --log-folder"), result.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("argv, message", [
    (["--latest", "--srl-model", "ground_truth"], "--latest needs a learned --srl-model"),
    (["--latest", "--srl-model", "vae", "--srl-log-folder", "{tmp}/none"], "--latest: no 'vae' model trained on"),
])
def test_bad_latest(tmp_path, argv, message):
    with pytest.raises(UsageError, match=message):
        train.main(["--algo", "ppo2", "--no-vis", "--num-timesteps", "64", "--log-dir", str(tmp_path / "logs"),
                    *[arg.format(tmp=tmp_path) for arg in argv]])
    assert not os.path.exists(tmp_path / "logs")


def test_register_model_keeps_comments_and_entries(tmp_path):
    config = tmp_path / "config" / "srl.yaml"
    config.parent.mkdir()
    config.write_text("# header\n{}\n", encoding="utf-8")
    assert registerModel(str(config), ENV_ID, "vae", str(tmp_path / "logs" / "a")) == "../logs/a"
    registerModel(str(config), ENV_ID, "pca", "/abs/b")
    registerModel(str(config), "KukaButtonGymEnv-v0", "vae", "/abs/c")
    registerModel(str(config), ENV_ID, "vae", "/abs/d")  # replaces the line
    text = config.read_text()
    assert text.startswith("# header\n") and "{}" not in text
    assert readSRLConfig(str(config)) == {ENV_ID: {"vae": "/abs/d", "pca": "/abs/b"},
                                          "KukaButtonGymEnv-v0": {"vae": "/abs/c"}}
    config.write_text("# flow style\n{MobileRobotGymEnv-v0: {vae: /x}}\n")  # a layout the line edit cannot follow
    registerModel(str(config), ENV_ID, "pca", "/y")
    assert config.read_text().startswith("# flow style\n")
    assert readSRLConfig(str(config)) == {ENV_ID: {"vae": "/x", "pca": "/y"}}
    assert [name for name in os.listdir(config.parent)] == ["srl.yaml"]  # no temporary file left


def _registerThirty(config_file: str, env_id: str) -> None:
    """30 entries of ``env_id`` registered one by one (each call reads, edits and writes the whole file)."""
    for i in range(30):
        registerModel(config_file, env_id, f"m{i}", f"/abs/{i}")


def test_two_processes_registering_at_once_lose_no_entry(tmp_path):
    """Two processes (forked from this one: the lock is between processes, whatever their start) register at once:
    each read-edit-write holds the file's lock, so neither writes over the other's entries."""
    config = tmp_path / "srl.yaml"
    processes = [multiprocessing.get_context("fork").Process(target=_registerThirty, args=(str(config), env))
                 for env in ("EnvA-v0", "EnvB-v0")]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=300)
    assert [process.exitcode for process in processes] == [0, 0]
    assert {env: len(models) for env, models in readSRLConfig(str(config)).items()} == {"EnvA-v0": 30, "EnvB-v0": 30}


@pytest.mark.slow
def test_pipeline_passes_latest_to_train(prepared, monkeypatch, capsys):
    monkeypatch.chdir(prepared["root"])
    checkGrid(["ppo2"], [ENV_ID], ["vae"], ["--latest", "--num-timesteps", "64"])  # train's own validation
    assert "--latest: using the vae model " in capsys.readouterr().out
    specs = expandGrid(["ppo2"], [ENV_ID], ["vae"], range(1), ["--latest"], "logs/")
    assert specs and all("--latest" in spec.train_args for spec in specs)  # each run's train command gets it


def test_a_namespaced_env_id_gives_a_plain_dataset_name() -> None:
    # gymnasium's "namespace/Env-v0" ids (a plugin's) made a name with a "/", which the generator refuses
    name = prepare.datasetName("my_plugin/Dot-v0", 20, (3, 64, 64), True, 0, "tinyrenderer")
    assert name == "my_plugin_Dot-v0_20ep_64x64_rt_seed0"


def test_random_target_on_an_env_without_one_is_the_plain_dataset(tmp_path, monkeypatch, capsys):
    """-r on CarRacing (no random target: the commands leave it out, one warning) records and trains on the env's
    plain dataset, named and checked as such; a second call without -r reuses it all."""
    monkeypatch.chdir(tmp_path)
    cut = dataclasses.replace(prepare.ENV_DEFAULTS["CarRacingGymEnv-v0"], max_steps=30)  # (its row's cut: 250 steps)
    monkeypatch.setitem(prepare.ENV_DEFAULTS, "CarRacingGymEnv-v0", cut)
    argv = ["--env", "CarRacingGymEnv-v0", "--srl-model", "pca", "--episodes", "2", "--img-shape", "3", "16", "16",
            "--epochs", "1", "--state-dim", "2", "--num-cpu", "1", "--device", "cpu", "--no-progress",
            "--srl-config-file", str(tmp_path / "srl.yaml")]
    with pytest.warns(UserWarning, match=r"^-r/--random-target does nothing on CarRacingGymEnv-v0"):
        rows = prepare.prepare([*argv, "-r"])
    dataset = tmp_path / "data" / "CarRacingGymEnv-v0_2ep_30steps_16x16_seed0"
    assert json.loads((dataset / "dataset_config.json").read_text())["random_target"] is False
    assert not rows[0]["reused"] and "--random-target" not in capsys.readouterr().out
    assert [row["reused"] for row in prepare.prepare(argv)] == [True]


def test_prepare_trains_a_two_camera_model_that_a_multi_view_run_takes(tmp_path, monkeypatch, capsys):
    """prepare had no --multi-view, yet a --multi-view train run with no model advised it: the one-camera model it
    made was then refused. Now the dataset has both cameras (its own name, reused on its own), the model encodes
    6-channel images, the printed train command passes --multi-view, and a --multi-view run takes the model."""
    monkeypatch.chdir(tmp_path)
    config_file = str(tmp_path / "srl.yaml")
    argv = ["--env", "KukaButtonGymEnv-v0", "--multi-view", "--srl-model", "pca", "--episodes", "2", "--img-shape",
            "3", "16", "16", "--state-dim", "2", "--num-cpu", "1", "--device", "cpu", "--no-progress",
            "--srl-config-file", config_file]
    rows = prepare.prepare(argv)
    out = capsys.readouterr().out
    dataset = tmp_path / "data" / "KukaButtonGymEnv-v0_2ep_16x16_mv_lowpoly_seed0"
    assert json.loads((dataset / "dataset_config.json").read_text())["multi_view"] is True
    assert json.loads(open(os.path.join(rows[0]["folder"], "exp_config.json")).read())["img_shape"] == [6, 16, 16]
    assert "--srl-model pca --multi-view --force-down" in out
    assert resolveSRLModel("KukaButtonGymEnv-v0", "pca", config_file, img_shape=(6, 16, 16)) == rows[0]["folder"]
    assert [row["reused"] for row in prepare.prepare(argv)] == [True]
    one_camera = prepare.plan(prepare.buildParser().parse_args([arg for arg in argv if arg != "--multi-view"]))
    assert os.path.basename(one_camera.dataset_folder) == "KukaButtonGymEnv-v0_2ep_16x16_lowpoly_seed0"
    assert one_camera.generator is not None and one_camera.dataset_settings["multi_view"] is False


def test_a_two_camera_run_without_a_model_is_told_to_prepare_one_with_its_cameras(tmp_path):
    result = runModule("rl_baselines.train", "--algo", "ppo2", "--env", "KukaButtonGymEnv-v0", "--multi-view",
                       "--srl-model", "vae", "--no-vis", "--num-timesteps", "64",
                       env={"SRL_MODELS_CONFIG": str(tmp_path / "srl.yaml")}, cwd=str(tmp_path))
    assert result.returncode == 2, result.stderr
    assert "python -m srl_models.prepare --env KukaButtonGymEnv-v0 --srl-model vae --multi-view" in result.stderr
    assert os.listdir(tmp_path) == []


def test_the_docs_flag_table_has_a_row_per_flag_and_names_each_envs_renderer() -> None:
    """docs/srl.md's table of prepare's flags has one row per flag of --help (it had none for --renderer), and the
    --renderer row names each env's default renderer as its class gives it."""
    with open(os.path.join(REPO, "docs", "srl.md"), encoding="utf-8") as handle:
        section = handle.read().split("## One command: srl_models.prepare", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `-")]
    documented = {flag for row in rows for flag in re.findall(r"`(--?[a-z][a-z-]*)", row.split(" | ")[0])}
    flags = {option for action in prepare.buildParser()._actions for option in action.option_strings}
    assert documented == flags - {"-h", "--help", "--version"}
    (row,) = [line for line in rows if line.startswith("| `--renderer")]
    groups = {segment.split("`")[1]: segment for segment in row.split(" | ")[1].split("; ")}
    assert set(groups) == {"sprites", "lowpoly", REFERENCE_RENDERER} and "for the others" in groups[REFERENCE_RENDERER]
    for env_id in registerAll():
        renderer = defaultRenderer(env_id)
        if renderer != REFERENCE_RENDERER:
            assert re.search(rf"\b{re.escape(env_id)}\b", groups[renderer]), (env_id, renderer)


def test_the_table_says_why_a_probe_is_missing() -> None:
    rows = [{"model": "vae", "gtc": 0.5, "probe": None}, {"model": "pca", "gtc": 0.4, "probe": 0.3},
            {"model": "ae", "gtc": None, "probe": None}]
    assert prepare.probeNote(rows, 1) == "probe R2 - (vae): the frames come from a single episode: nothing to hold out"
    assert "srl_models.evaluate --model-folder FOLDER says why" in prepare.probeNote(rows, 2)
    assert prepare.probeNote(rows[1:], 1) is None


def test_an_interrupted_recording_says_to_run_the_same_prepare_command(tmp_path, monkeypatch, capsys) -> None:
    """prepare has no --resume: the interrupt's line names what prepare takes, and the same command resumes (an
    interrupt after the first finished episode: before it, nothing is kept, and nothing is to resume)."""
    recordEpisodes = dataset_generator.recordEpisodes

    def interrupted(*args, **kwargs):
        for summary in recordEpisodes(*args, **kwargs):
            yield summary
            raise KeyboardInterrupt

    monkeypatch.setattr(dataset_generator, "recordEpisodes", interrupted)
    argv = ["--env", ENV_ID, "--srl-model", "vae", *TINY, "--data-folder", str(tmp_path / "data"),
            "--log-folder", str(tmp_path / "logs"), "--srl-config-file", str(tmp_path / "srl.yaml")]
    with pytest.raises(SystemExit) as stopped:
        prepare.prepare(argv)
    assert stopped.value.code == 130
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--resume" not in line and "run the same prepare command again" in line and "--force" in line, line
    assert prepare.plan(prepare.buildParser().parse_args(argv)).generator.resume


def test_car_racing_episodes_are_cut_to_a_mobile_robot_sized_dataset(tmp_path) -> None:
    """CarRacing's random episodes would run 10000 steps: its defaults cap them, and the dataset's name says so."""
    args = prepare.buildParser().parse_args(["--env", "CarRacingGymEnv-v0", "--srl-model", "vae", "pca",
                                             "--data-folder", str(tmp_path / "data"),
                                             "--log-folder", str(tmp_path / "logs"),
                                             "--srl-config-file", str(tmp_path / "srl.yaml")])
    todo = prepare.plan(args)
    assert todo.generator.max_steps == 250 < CarRacingGymEnv.MAX_STEPS
    frames = prepare.envDefaults(ENV_ID).episodes * getEnvClass(ENV_ID).MAX_STEPS  # MobileRobot's 5000
    assert todo.generator.num_episode * todo.generator.max_steps == frames
    assert os.path.basename(todo.dataset_folder) == "CarRacingGymEnv-v0_20ep_250steps_64x64_seed0"
    assert not (tmp_path / "data").exists()
