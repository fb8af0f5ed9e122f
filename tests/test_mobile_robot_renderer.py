"""The mobile robots' sprite renderer (``renderer="sprites"``) against PyBullet's TinyRenderer, and the --renderer flag.

Accuracy (issue 27's bounds): on random states of every mobile-robot env (robot anywhere within its bounds, targets
drawn by ``random_target``, the 2-target env's first target hidden in half of them), the mean absolute error per
channel is at most 2 (of 255) and at most 1% of the pixels differ by more than 32 in some channel: 1,000 states at
the default 64x64, 100 at 3x48x48 with ``render()`` at 128x128 (each of those states gives both images).

Runs, datasets and SRL models record the renderer, and the renderer never changes a trajectory: the same seed gives
the same dataset but for its pixels. Whether an SRL model keeps its GTC on the other renderer's frames is measured by
``python -m benchmarks.renderer_gtc`` (docs/srl.md), not here: a VAE trained in a test's seconds (200 frames, one or
two epochs) has a GTC that moves between the renderers by 0.003 to 0.1 depending on its seed, so no bound a test can
hold says anything about the renderer.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import warnings

import numpy as np
import pytest
from conftest import interruptThenResume, runModule, snapshot, trainHere

from benchmarks.renderer_gtc import trajectoryDifferences
from environments import dataset_generator, defaultRenderer, getEnvClass, registered_env, rendererRefusal, resolvedRenderer
from environments.dataset import Dataset
from environments.dataset_generator import generate
from environments.generator_config import GeneratorConfig
from environments.kuka.kuka_button_env import KukaButtonGymEnv
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from environments.mobile_robot.sprite_cache import CACHE_ENV as SPRITE_CACHE_ENV
from environments.registry import defaultRenderersText
from environments.srl_env import REFERENCE_RENDERER
from replay import enjoy_baselines
from rl_baselines.core.registry import registered_rl
from rl_baselines.envs.factory import envKwargsFromArgs
from rl_baselines.runs import train, train_checks
from rl_baselines.runs.resume import continueCommand
from rl_baselines.runs.run_policy import readRunArgs
from srl_models import prepare
from srl_models.base import readExpConfig
from srl_models.models import VAEModel
from srl_models.prepare import checkDatasetSettings
from srl_models.registry import registered_srl
from srl_models.train import trainFromArgs
from srl_toolbox.cli import UsageError

MOBILE_ROBOTS = ["MobileRobotGymEnv-v0", "MobileRobot1DGymEnv-v0", "MobileRobot2TargetGymEnv-v0",
                 "MobileRobotLineTargetGymEnv-v0"]
KUKA_ARMS = ["KukaButtonGymEnv-v0", "KukaRandButtonGymEnv-v0", "Kuka2ButtonGymEnv-v0", "KukaMovingButtonGymEnv-v0"]
MAX_MAE = 2.0
MAX_OFF_FRACTION = 0.01
OFF_BY = 32
# Random placements compared per env at 64x64 (the sprites have matched TinyRenderer to the pixel on every one so
# far: a fraction of them finds a drift at the limits above).
PLACEMENTS = 300


def _pair(env_id: str, **kwargs):
    """:return: the env drawn by TinyRenderer and by sprites, same keywords (ground truth: reset draws nothing)"""
    env_class = getEnvClass(env_id)
    keywords = {"srl_model": "ground_truth", "random_target": True, "render_mode": "rgb_array", **kwargs}
    return env_class(**keywords), env_class(**keywords, renderer="sprites")


def _placeRandomly(envs, rng: np.random.Generator, seed: int) -> None:
    """Reset both envs with one seed, then teleport the robot to one random position within its bounds."""
    reference = envs[0]
    x, y = rng.uniform(*reference.ROBOT_X_BOUNDS), rng.uniform(*reference.ROBOT_Y_BOUNDS)
    hide_first = rng.random() < 0.5
    for env in envs:
        env.reset(seed=seed)
        env._robot_x, env._robot_y = x, y
        env._teleport(env._robot_uid, (x, y, 0.0), (0.0, 0.0, 0.0, 1.0))
        if hide_first and hasattr(env, "_target_uids"):  # the 2-target env after its first target
            env._teleport(env._target_uids[0], (*env._targets[0], env.HIDDEN_Z), (0.0, 0.0, 0.0, 1.0))


def _topView(env) -> np.ndarray:
    """:return: the observation's image (the env observes its ground truth, so that resets draw nothing)"""
    _, height, width = env.img_shape
    return env._cameraImage(width, height, env._obs_projection)


class _Errors:
    """Absolute errors accumulated over frames: per-channel sums and pixels off by more than OFF_BY."""

    def __init__(self) -> None:
        self.sums, self.pixels, self.off = np.zeros(3), 0, 0

    def add(self, reference: np.ndarray, drawn: np.ndarray) -> None:
        assert reference.shape == drawn.shape and drawn.dtype == np.uint8
        error = np.abs(reference.astype(np.int16) - drawn.astype(np.int16))
        self.sums += error.reshape(-1, 3).sum(axis=0)
        self.pixels += error.shape[0] * error.shape[1]
        self.off += int((error.max(axis=2) > OFF_BY).sum())

    def check(self, what: str) -> None:
        mae = self.sums / self.pixels
        off = self.off / self.pixels
        assert mae.max() <= MAX_MAE and off <= MAX_OFF_FRACTION, f"{what}: MAE {mae}, off by > {OFF_BY}: {off:.4f}"


@pytest.mark.parametrize("env_id", MOBILE_ROBOTS)
def test_sprites_match_tinyrenderer(env_id: str) -> None:
    rng = np.random.default_rng(27)
    envs = _pair(env_id)
    errors = _Errors()
    for seed in range(PLACEMENTS):
        _placeRandomly(envs, rng, seed)
        errors.add(_topView(envs[0]), _topView(envs[1]))
    errors.check(f"{env_id} 64x64")
    envs = _pair(env_id, img_shape=(3, 48, 48), render_size=128)
    observations, renders = _Errors(), _Errors()
    for seed in range(100):
        _placeRandomly(envs, rng, seed)
        observations.add(_topView(envs[0]), _topView(envs[1]))
        renders.add(envs[0].render(), envs[1].render())
    observations.check(f"{env_id} 48x48")
    renders.check(f"{env_id} render() 128x128")
    for env in envs:
        env.close()


def _spriteEpisode(steps: int = 80) -> list[np.ndarray]:
    env = getEnvClass("MobileRobotGymEnv-v0")(srl_model="raw_pixels", random_target=True, renderer="sprites")
    observations = [env.reset(seed=4)[0]]
    env.action_space.seed(4)
    observations += [env.step(env.action_space.sample())[0] for _ in range(steps)]
    env.close()
    return observations


def test_sprites_on_disk_give_the_same_images(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(SPRITE_CACHE_ENV, "")  # no disk cache: every sprite rendered here
    reference = _spriteEpisode()
    monkeypatch.setenv(SPRITE_CACHE_ENV, str(tmp_path))
    cold = _spriteEpisode()  # renders, and saves when the env closes
    files = glob.glob(str(tmp_path / "sprites" / "*.npz"))
    assert len(files) == 2  # one group per moving body: the robot, the target
    warm = _spriteEpisode()  # reads them
    for ours, first, second in zip(reference, cold, warm, strict=True):
        np.testing.assert_array_equal(ours, first)
        np.testing.assert_array_equal(ours, second)
    # a damaged file is ignored with one warning, and replaced
    with open(files[0], "r+b") as handle:
        handle.truncate(100)
    with pytest.warns(UserWarning, match="sprite cache .* ignored") as caught:
        damaged = _spriteEpisode()
    assert len([warning for warning in caught if "sprite cache" in str(warning.message)]) == 1  # (the save re-reads)
    for ours, theirs in zip(reference, damaged, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert os.path.getsize(files[0]) > 100


def test_a_sprite_folder_that_cannot_be_written_is_one_warning(tmp_path, monkeypatch) -> None:
    """Both groups of sprites (the robot's, the target's) fail to save into a folder under a file: one warning names
    the folder, and the images are those of a run without a disk cache."""
    monkeypatch.setenv(SPRITE_CACHE_ENV, "")
    reference = _spriteEpisode()
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv(SPRITE_CACHE_ENV, str(blocker))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        observations = _spriteEpisode()
    warned = [str(warning.message) for warning in caught if "sprite cache" in str(warning.message)]
    assert len(warned) == 1 and warned[0].startswith(f"sprite cache {blocker / 'sprites'} not written"), warned
    for ours, theirs in zip(reference, observations, strict=True):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("num_cpu", [1, 2])
def test_generator_workers_write_the_sprite_cache_and_warn_once_per_damaged_file(tmp_path, num_cpu: int) -> None:
    """The generator's worker processes save the sprites they render when the recording ends (their envs are closed,
    not terminated), and a damaged sprite file is one warning, from whichever process finds it, then rewritten."""
    cache = tmp_path / "cache"
    args = ["--num-episode", "2", "--max-steps", "10", "--img-shape", "3", "32", "32", "--num-cpu", str(num_cpu),
            "--save-path", str(tmp_path / "data"), "--no-progress"]
    first = runModule("environments.dataset_generator", *args, "--name", "first", env={SPRITE_CACHE_ENV: str(cache)})
    assert first.returncode == 0, first.stderr
    files = sorted(glob.glob(str(cache / "sprites" / "*.npz")))
    assert len(files) == 2, first.stderr  # the robot's and the target's
    sizes = [os.path.getsize(path) for path in files]
    for path in files:
        with open(path, "r+b") as handle:
            handle.truncate(100)
    second = runModule("environments.dataset_generator", *args, "--name", "second", env={SPRITE_CACHE_ENV: str(cache)})
    assert second.returncode == 0, second.stderr
    warned = [line for line in second.stderr.splitlines() if "sprite cache" in line]
    assert sorted(warned) == [f"warning: sprite cache {path} ignored (File is not a zip file); it is rewritten"
                              for path in files], second.stderr
    assert [os.path.getsize(path) for path in files] == sizes
    assert Dataset.open(str(tmp_path / "data" / "first")).loadImages().tobytes() == \
        Dataset.open(str(tmp_path / "data" / "second")).loadImages().tobytes()


def test_same_seed_same_images_in_any_order() -> None:
    def episode(env) -> list[np.ndarray]:
        observations = [env.reset(seed=3)[0]]
        env.action_space.seed(3)
        observations += [env.step(env.action_space.sample())[0] for _ in range(60)]
        return observations

    first = getEnvClass("MobileRobot2TargetGymEnv-v0")(srl_model="raw_pixels", random_target=True,
                                                       renderer="sprites")
    second = getEnvClass("MobileRobot2TargetGymEnv-v0")(srl_model="raw_pixels", random_target=True,
                                                        renderer="sprites")
    episode(second)  # its layers made in another order, from other states
    second.reset(seed=11)
    for ours, theirs in zip(episode(first), episode(second), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_first_person_view_stays_pybullet() -> None:
    reference, sprites = _pair("MobileRobotGymEnv-v0", fpv=True, srl_model="raw_pixels")
    top, stacked = reference.reset(seed=5)[0], sprites.reset(seed=5)[0]
    assert stacked.shape == (64, 64, 6)
    np.testing.assert_array_equal(top[:, :, 3:], stacked[:, :, 3:])


def test_unknown_renderer_and_envs_without_it() -> None:
    with pytest.raises(ValueError, match="unknown renderer 'nope'"):
        getEnvClass("MobileRobotGymEnv-v0")(renderer="nope")
    assert rendererRefusal("tinyrenderer", "OmnirobotEnv-v0") is None
    assert rendererRefusal("sprites", "MobileRobot1DGymEnv-v0") is None
    refusal = rendererRefusal("sprites", "OmnirobotEnv-v0")
    assert "OmnirobotEnv-v0" in refusal and "MobileRobotGymEnv-v0" in refusal


@pytest.mark.parametrize("module, args", [
    ("rl_baselines.train", ["--env", "MobileRobotGymEnv-v0", "--renderer", "nope", "--no-vis"]),
    ("rl_baselines.train", ["--env", "OmnirobotEnv-v0", "--renderer", "sprites", "--no-vis"]),
    ("rl_baselines.train", ["--env", "KukaButtonGymEnv-v0", "--renderer", "sprites", "--no-vis"]),
    ("rl_baselines.train", ["--env", "MobileRobotGymEnv-v0", "--renderer", "lowpoly", "--no-vis"]),
    ("environments.dataset_generator", ["--env", "KukaButtonGymEnv-v0", "--renderer", "sprites"]),
    ("environments.dataset_generator", ["--env", "MobileRobotGymEnv-v0", "--renderer", "nope"]),
    ("environments.dataset_generator", ["--env", "OmnirobotEnv-v0", "--renderer", "sprites"]),
    ("srl_models.prepare", ["--env", "OmnirobotEnv-v0", "--srl-model", "vae", "--renderer", "sprites"]),
    ("srl_models.prepare", ["--env", "MobileRobotGymEnv-v0", "--srl-model", "vae", "--renderer", "nope"]),
])
def test_renderer_refusals_write_nothing(tmp_path, module: str, args: list[str]) -> None:
    folders = {"rl_baselines.train": ["--log-dir", str(tmp_path / "logs")],
               "environments.dataset_generator": ["--save-path", str(tmp_path / "data")],
               "srl_models.prepare": ["--data-folder", str(tmp_path / "data"), "--log-folder",
                                      str(tmp_path / "srl"), "--srl-config-file", str(tmp_path / "srl.yaml")]}
    before = snapshot(str(tmp_path))
    result = runModule(module, *folders[module], *args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert "--renderer" in lines[-1] and "Traceback" not in result.stderr
    assert snapshot(str(tmp_path)) == before


def test_train_records_the_renderer_and_replays_with_it(tmp_path) -> None:
    run_dir = trainHere("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels", "--renderer",
                        "sprites", "--num-timesteps", "128", "--n-steps", "64", "--log-dir", tmp_path)  # in this process
    with open(os.path.join(run_dir, "args.json")) as file:
        assert json.load(file)["renderer"] == "sprites"
    assert envKwargsFromArgs(readRunArgs(run_dir, "--log-dir"))["renderer"] == "sprites"
    result = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "20")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("recorded", [None, "tinyrenderer", "sprites"])
def test_a_model_of_the_other_renderer_is_used_with_one_warning(tmp_path, recorded) -> None:
    folder = str(tmp_path / "vae")
    VAEModel(4, (3, 64, 64), {"env": "MobileRobotGymEnv-v0", **({"renderer": recorded} if recorded else {})}).save(folder)
    trained_on = recorded or "tinyrenderer"  # a model from before the renderers was trained on TinyRenderer's frames
    other = "sprites" if trained_on == "tinyrenderer" else "tinyrenderer"
    argv = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model-path", folder, "--log-dir",
            str(tmp_path / "logs"), "--no-vis"]
    with pytest.warns(UserWarning, match=f"trained on {trained_on} frames .* --renderer {other}") as caught:
        train_checks.validate(train.parseCommand([*argv, "--renderer", other])[0], registered_rl)
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the model's own renderer: no warning
        train_checks.validate(train.parseCommand([*argv, "--renderer", trained_on])[0], registered_rl)


@pytest.mark.parametrize("recorded", [None, "tinyrenderer"])
def test_a_plugin_model_without_a_recorded_renderer_gets_no_renderer_warning(tmp_path, recorded) -> None:
    """A plugin's own training command need not record the renderer: its model's renderer is unknown, not
    TinyRenderer's (only srl_models.train's models without one predate the renderers); a recorded one is compared."""
    folder = str(tmp_path / "downsample")
    model = registered_srl["downsample"][0]((3, 64, 64), (2, 2), exp_config={
        "env": "MobileRobotGymEnv-v0", **({"renderer": recorded} if recorded else {})})
    model.save(folder)
    argv = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model-path", folder, "--log-dir",
            str(tmp_path / "logs"), "--no-vis", "--renderer", "sprites"]
    if recorded:
        with pytest.warns(UserWarning, match="trained on tinyrenderer frames .* --renderer sprites"):
            train_checks.validate(train.parseCommand(argv)[0], registered_rl)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train_checks.validate(train.parseCommand(argv)[0], registered_rl)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train_checks.validate(train.parseCommand([*argv[:-1], "tinyrenderer"])[0], registered_rl)


def _trainArgv(tmp_path, folder: str, *flags: str, env_id: str = "MobileRobotGymEnv-v0") -> list[str]:
    return ["--algo", "ppo2", "--env", env_id, "--srl-model-path", folder, "--log-dir", str(tmp_path / "logs"),
            "--no-vis", *flags]


def _validateQuietly(argv: list[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at all
        train_checks.validate(train.parseCommand(argv)[0], registered_rl)


@pytest.mark.parametrize("source", ["dataset_env", "data_folder"])
def test_a_model_of_other_dataset_settings_is_used_with_one_warning(tmp_path, source) -> None:
    """A model whose dataset was recorded with another target or action kind than the run's: one warning naming
    each setting and the flag that matches; read from exp_config's dataset_env, or for a model trained before it was
    recorded from its data_folder's dataset_config.json (shape_reward and max_dist are not compared)."""
    settings = {"random_target": False, "continuous_actions": False, "action_joints": False}
    if source == "dataset_env":
        exp_config = {"dataset_env": settings}
    else:
        dataset = tmp_path / "dataset"
        dataset.mkdir()
        (dataset / "dataset_config.json").write_text(json.dumps({
            "env": "MobileRobotGymEnv-v0", **settings, "force_down": None, "shape_reward": True, "max_dist": 0.28}))
        exp_config = {"data_folder": str(dataset), "continuous_actions": False}
    folder = str(tmp_path / "vae")
    VAEModel(4, (3, 64, 64), {"env": "MobileRobotGymEnv-v0", "renderer": "sprites", **exp_config}).save(folder)
    with pytest.warns(UserWarning, match=r"recorded with a fixed target, this run has a random target \(drop -r\); "
                                         r"with discrete actions, this run has continuous actions \(drop -c\): its "
                                         "states may not cover") as caught:
        train_checks.validate(train.parseCommand(_trainArgv(tmp_path, folder, "-r", "-c"))[0], registered_rl)
    assert len(caught) == 1 and "action" not in str(caught[0].message).split("(drop -c)")[1]
    _validateQuietly(_trainArgv(tmp_path, folder))  # the dataset's settings: no warning (shape_reward is not one)


@pytest.mark.parametrize("algo, trained_continuous, flags, hint", [
    ("sac", False, ("-c",), "--algo sac acts only with continuous actions: a model of a dataset recorded with -c fits"),
    ("deepq", True, (), "--algo deepq acts only with discrete actions: a model of a dataset recorded without -c fits"),
])
def test_the_action_kind_warning_names_no_flag_the_algorithm_refuses(tmp_path, algo, trained_continuous, flags,
                                                                      hint) -> None:
    """A model of another action kind than a run whose algorithm has one kind only (sac, deepq): the warning says
    that a model of a dataset of the run's kind fits, not to drop or add -c (which the algorithm refuses)."""
    settings = {"random_target": False, "continuous_actions": trained_continuous, "action_joints": False}
    folder = str(tmp_path / "vae")
    VAEModel(4, (3, 64, 64), {"env": "MobileRobotGymEnv-v0", "renderer": "sprites", "dataset_env": settings}
             ).save(folder)
    argv = _trainArgv(tmp_path, folder, *flags)
    argv[1] = algo
    with pytest.warns(UserWarning, match="may not cover") as caught:
        train_checks.validate(train.parseCommand(argv)[0], registered_rl)
    message = str(caught[0].message)
    assert len(caught) == 1 and f"({hint})" in message and "drop -c" not in message and "add -c" not in message


def test_a_model_without_known_dataset_settings_gets_no_settings_warning(tmp_path) -> None:
    """A model trained before the settings were recorded whose dataset is gone, or whose data_folder now holds
    another env's dataset: nothing to compare, no warning."""
    dataset = tmp_path / "dataset"
    folder = str(tmp_path / "vae")
    VAEModel(4, (3, 64, 64), {"env": "MobileRobotGymEnv-v0", "renderer": "sprites", "data_folder": str(dataset)}
             ).save(folder)
    _validateQuietly(_trainArgv(tmp_path, folder, "-r"))
    dataset.mkdir()
    (dataset / "dataset_config.json").write_text(json.dumps({"env": "KukaButtonGymEnv-v0", "random_target": False}))
    _validateQuietly(_trainArgv(tmp_path, folder, "-r"))


def test_a_run_of_the_dataset_settings_resumes_and_replays_without_a_warning(tmp_path, monkeypatch) -> None:
    """A run whose settings match the model's dataset (-r, continuous actions): neither its --resume nor its replay
    warns (the resumed run reads its own settings back from args.json)."""
    folder = str(tmp_path / "vae")
    dataset_env = {"random_target": True, "continuous_actions": True, "action_joints": False}
    VAEModel(4, (3, 32, 32), {"env": "MobileRobotGymEnv-v0", "renderer": "sprites", "dataset_env": dataset_env}
             ).save(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_dir = interruptThenResume(monkeypatch, str(tmp_path / "logs"), [
            "--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model-path", folder, "-r", "-c",
            "--num-timesteps", "256", "--checkpoint-freq", "128", "--hyperparam", "n_steps:64"], at_step=192)
        assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10"]) == 0


def test_a_run_on_a_learned_model_stopped_before_its_first_checkpoint_keeps_its_record(tmp_path, monkeypatch) -> None:
    """Its --resume starts it again from step 0, deleting the model files saved in the folder: srl_model.json, whose
    name ends as theirs do (``*_model.*``), went with them, and replay then refused the run."""
    folder = str(tmp_path / "vae")
    VAEModel(4, (3, 32, 32), {"env": "MobileRobotGymEnv-v0", "renderer": "sprites"}).save(folder)
    run_dir = interruptThenResume(monkeypatch, str(tmp_path / "logs"), [
        "--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model-path", folder, "--num-timesteps", "256",
        "--checkpoint-freq", "128", "--hyperparam", "n_steps:64", "--num-cpu", "1"], at_step=50)
    assert os.path.isfile(os.path.join(run_dir, "srl_model.json"))
    assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10"]) == 0


def test_an_arm_model_of_force_down_frames_warns_a_run_without_it(tmp_path) -> None:
    """force_down is compared where the run's env has it, not when either moves joints (which it does not
    restrict): the warning names --force-down and -r together."""
    folder = str(tmp_path / "vae")
    dataset_env = {"random_target": True, "continuous_actions": False, "action_joints": False, "force_down": True}
    VAEModel(4, (3, 64, 64), {"env": "KukaButtonGymEnv-v0", "renderer": defaultRenderer("KukaButtonGymEnv-v0"),
                              "dataset_env": dataset_env}).save(folder)
    env_id = "KukaButtonGymEnv-v0"
    with pytest.warns(UserWarning, match=r"with a random target, this run has a fixed target \(add -r\); with "
                                         r"--force-down, this run has no --force-down \(add --force-down\):"):
        train_checks.validate(train.parseCommand(_trainArgv(tmp_path, folder, env_id=env_id))[0], registered_rl)
    _validateQuietly(_trainArgv(tmp_path, folder, "-r", "--force-down", env_id=env_id))
    with pytest.warns(UserWarning, match=r"with Cartesian actions, this run has joint actions \(drop "
                                         r"--action-joints\)") as caught:
        train_checks.validate(train.parseCommand(_trainArgv(tmp_path, folder, "-r", "-c", "--action-joints",
                                                            env_id=env_id))[0], registered_rl)
    assert "force-down" not in str(caught[-1].message)


def test_datasets_record_the_renderer(tmp_path) -> None:
    assert generate(GeneratorConfig(save_path=str(tmp_path), name="sprites", num_episode=1, max_steps=5,
                                    renderer="sprites", no_progress=True)) == 0
    with open(tmp_path / "sprites" / "dataset_config.json") as file:
        assert json.load(file)["renderer"] == "sprites"
    # a dataset recorded before the renderer was recorded reads as TinyRenderer's, reused for tinyrenderer requests
    older = tmp_path / "older"
    older.mkdir()
    (older / "dataset_config.json").write_text(json.dumps({"env": "MobileRobotGymEnv-v0"}))
    checkDatasetSettings(str(older), {"env": "MobileRobotGymEnv-v0", "renderer": "tinyrenderer"})
    with pytest.raises(UsageError, match=r"\(renderer was tinyrenderer, now sprites\)"):
        checkDatasetSettings(str(older), {"env": "MobileRobotGymEnv-v0", "renderer": "sprites"})


@pytest.fixture(scope="module")
def tinyDatasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """:return: renderer -> a tiny MobileRobot dataset it drew (3 episodes of 10 steps, 32x32, seed 4; the
    sprites' one recorded without --renderer, the mobile robots' default)"""
    save_path = tmp_path_factory.mktemp("renderer_datasets")
    folders = {}
    for renderer, keywords in (("tinyrenderer", {"renderer": "tinyrenderer"}), ("sprites", {})):
        config = GeneratorConfig(save_path=str(save_path), name=renderer, num_episode=3, max_steps=10,
                                 img_shape=(3, 32, 32), seed=4, no_progress=True, **keywords)
        assert generate(config) == 0
        folders[renderer] = str(save_path / renderer)
    return folders


def test_the_renderer_does_not_change_the_trajectory(tinyDatasets: dict[str, str], tmp_path) -> None:
    assert trajectoryDifferences(tinyDatasets["tinyrenderer"], tinyDatasets["sprites"]) == []
    tiny, sprites = (Dataset.open(tinyDatasets[name]) for name in ("tinyrenderer", "sprites"))
    assert tiny.renderer == "tinyrenderer" and sprites.renderer == "sprites"
    assert not np.array_equal(tiny.loadImages(), sprites.loadImages())  # the pixels are each renderer's own
    # the check sees a changed trajectory
    changed = tmp_path / "changed"
    changed.mkdir()
    for name in ("dataset_config.json", "ground_truth.npz"):
        shutil.copy(os.path.join(tinyDatasets["sprites"], name), changed)
    with np.load(os.path.join(tinyDatasets["sprites"], "preprocessed_data.npz")) as data:
        arrays = dict(data)
    arrays["actions"] = (arrays["actions"] + 1) % 4
    np.savez(changed / "preprocessed_data.npz", **arrays)
    assert trajectoryDifferences(tinyDatasets["tinyrenderer"], str(changed)) == ["actions"]


@pytest.mark.parametrize("drawn_by", ["tinyrenderer", "sprites"])
def test_pretraining_on_the_other_renderer_frames_warns_once(tinyDatasets: dict[str, str], tmp_path,
                                                             drawn_by: str) -> None:
    """--pretrain-dataset with raw pixels drawn by another renderer than the run's: used, with one warning (as a
    learned SRL model of the other renderer's frames); the same renderer, or ground-truth states, without one."""
    other = "sprites" if drawn_by == "tinyrenderer" else "tinyrenderer"
    argv = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--pretrain-dataset", tinyDatasets[drawn_by],
            "--log-dir", str(tmp_path / "logs"), "--no-vis"]
    with pytest.warns(UserWarning, match=f"drawn by --renderer {drawn_by} .* --renderer {other}") as caught:
        train_checks.validate(train.parseCommand([*argv, "--srl-model", "raw_pixels", "--renderer", other])[0],
                              registered_rl)
    assert len(caught) == 1 and "\n" not in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train_checks.validate(train.parseCommand([*argv, "--srl-model", "raw_pixels", "--renderer", drawn_by])[0],
                              registered_rl)
        train_checks.validate(train.parseCommand([*argv, "--srl-model", "ground_truth", "--renderer", other])[0],
                              registered_rl)
    assert not os.path.exists(tmp_path / "logs")


@pytest.mark.parametrize("renderer", ["tinyrenderer", "sprites"])
def test_srl_models_record_the_renderer(tinyDatasets: dict[str, str], tmp_path, renderer: str) -> None:
    folder = trainFromArgs(["--data-folder", tinyDatasets[renderer], "--srl-model", "vae", "--state-dim", "2",
                            "--epochs", "1", "--batch-size", "8", "--log-folder", str(tmp_path), "--device", "cpu",
                            "--no-eval", "--no-progress"])
    assert readExpConfig(folder)["renderer"] == renderer


def test_default_runs_record_the_sprites(trainedRun: str) -> None:
    """The shared ppo2 run of conftest (MobileRobot), started without --renderer, records the default by name."""
    with open(os.path.join(trainedRun, "args.json")) as file:
        assert json.load(file)["renderer"] == "sprites"
    assert envKwargsFromArgs(readRunArgs(trainedRun, "--log-dir"))["renderer"] == "sprites"


def test_each_env_names_its_default_renderer(monkeypatch) -> None:
    """The mobile robots draw with the sprites unless asked otherwise, the Kuka arms with lowpoly, every other env with
    TinyRenderer; each family's default is one class line that its variants inherit."""
    envs = sorted(registered_env)
    assert {env_id: defaultRenderer(env_id) for env_id in envs} == {
        env_id: "sprites" if env_id in MOBILE_ROBOTS else "lowpoly" if env_id in KUKA_ARMS else REFERENCE_RENDERER
        for env_id in envs}
    for env_id in envs:  # an env's default is one it can draw with
        assert rendererRefusal(defaultRenderer(env_id), env_id) is None
    assert defaultRenderersText() == (f"lowpoly for {', '.join(sorted(KUKA_ARMS))}; sprites for "
                                      f"{', '.join(sorted(MOBILE_ROBOTS))}; tinyrenderer for the others")
    assert resolvedRenderer(None, "MobileRobot1DGymEnv-v0") == "sprites"
    assert resolvedRenderer("tinyrenderer", "MobileRobot1DGymEnv-v0") == "tinyrenderer"
    for env_id, keywords in (("MobileRobot1DGymEnv-v0", {}), ("KukaButtonGymEnv-v0", {"physics": "reference"})):
        env = getEnvClass(env_id)(srl_model="ground_truth", **keywords)  # no renderer keyword: the class's default
        assert env.renderer == defaultRenderer(env_id)
        env.close()
    monkeypatch.setattr(MobileRobotGymEnv, "DEFAULT_RENDERER", REFERENCE_RENDERER)
    assert [defaultRenderer(env_id) for env_id in MOBILE_ROBOTS] == [REFERENCE_RENDERER] * 4
    monkeypatch.setattr(KukaButtonGymEnv, "DEFAULT_RENDERER", REFERENCE_RENDERER)
    assert defaultRenderersText() == "tinyrenderer for every env"
    assert getEnvClass("MobileRobotGymEnv-v0")(srl_model="ground_truth").renderer == "tinyrenderer"


def test_train_prepare_and_the_generator_resolve_the_env_default(tmp_path, monkeypatch) -> None:
    """--renderer left out is the env's default, resolved before anything is written and recorded by name; an explicit
    tinyrenderer stays tinyrenderer, on every env; names and keys compare with the reference, not with the default."""
    monkeypatch.setenv(SPRITE_CACHE_ENV, str(tmp_path / "sprite_cache"))
    monkeypatch.setattr(MobileRobotGymEnv, "DEFAULT_RENDERER", "sprites")
    argv = ["--algo", "ppo2", "--srl-model", "ground_truth", "--log-dir", str(tmp_path / "logs"), "--no-vis"]

    def validated(*flags: str):
        return train_checks.validate(train.parseCommand([*argv, *flags])[0], registered_rl)

    assert train.parseCommand(argv)[0].renderer is None  # the command line leaves it open
    sprites = validated("--env", "MobileRobotGymEnv-v0")
    assert sprites.renderer == "sprites" and sprites.argsRecord()["renderer"] == "sprites"
    assert sprites.env_kwargs["renderer"] == "sprites"
    for env_id in ("MobileRobotGymEnv-v0", "KukaButtonGymEnv-v0", "OmnirobotEnv-v0", "CarRacingGymEnv-v0"):
        tiny = validated("--env", env_id, "--renderer", "tinyrenderer")
        assert tiny.renderer == "tinyrenderer" and tiny.argsRecord()["renderer"] == "tinyrenderer"
        # the keyword where the env's default is another renderer, none where tinyrenderer is (or the only one)
        assert tiny.env_kwargs.get("renderer") == (
            "tinyrenderer" if env_id in ("MobileRobotGymEnv-v0", "KukaButtonGymEnv-v0") else None)
        assert "--renderer tinyrenderer" in continueCommand(tiny, None, 64)  # by name whatever the default then
    kuka = validated("--env", "KukaButtonGymEnv-v0")  # the arms' default: lowpoly, passed by name to the env
    assert kuka.renderer == "lowpoly" and kuka.env_kwargs["renderer"] == "lowpoly"
    tiny = validated("--env", "MobileRobotGymEnv-v0", "--renderer", "tinyrenderer")
    for config, renderer in ((tiny, "tinyrenderer"), (sprites, "sprites")):  # the env draws with what was recorded
        env = getEnvClass("MobileRobotGymEnv-v0")(**envKwargsFromArgs(config))
        assert env.renderer == renderer
        env.close()
    # a run records the resolved name
    run_dir = trainHere("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                        "--num-timesteps", "64", "--n-steps", "64", "--log-dir", tmp_path / "runs")
    with open(os.path.join(run_dir, "args.json")) as file:
        assert json.load(file)["renderer"] == "sprites"
    with open(os.path.join(run_dir, "env_globals.json")) as file:
        recorded = json.load(file)
    assert recorded["env_kwargs"]["renderer"] == "sprites" and recorded["constants"]["DEFAULT_RENDERER"] == "sprites"

    # prepare: the dataset of the env's default gets its suffix, tinyrenderer's keeps the name it always had
    folders = ["--data-folder", str(tmp_path / "data"), "--log-folder", str(tmp_path / "srl"), "--srl-config-file",
               str(tmp_path / "srl.yaml"), "--episodes", "2", "--num-cpu", "1"]

    def prepared(*flags: str):
        return prepare.plan(prepare.buildParser().parse_args([*folders, "--srl-model", "vae", *flags]))

    made = prepared("--env", "MobileRobotGymEnv-v0")
    assert os.path.basename(made.dataset_folder) == "MobileRobotGymEnv-v0_2ep_64x64_sprites_seed0"
    assert made.dataset_settings["renderer"] == made.generator.renderer == "sprites"
    for env_id in ("MobileRobotGymEnv-v0", "KukaButtonGymEnv-v0", "OmnirobotEnv-v0"):
        made = prepared("--env", env_id, *(["--renderer", "tinyrenderer"] if env_id != "OmnirobotEnv-v0" else []))
        assert os.path.basename(made.dataset_folder) == f"{env_id}_2ep_64x64_seed0"
        assert made.dataset_settings["renderer"] == "tinyrenderer"
    made = prepared("--env", "KukaButtonGymEnv-v0")  # the arms' default
    assert os.path.basename(made.dataset_folder) == "KukaButtonGymEnv-v0_2ep_64x64_lowpoly_seed0"

    # the generator: the env's default, and the keyword that records tinyrenderer where it is not the default
    def keywords(env_id: str, **given) -> dict:
        return dataset_generator.validate(GeneratorConfig(env=env_id, save_path=str(tmp_path / "data"),
                                                          **given))[0].env_kwargs

    assert keywords("MobileRobotGymEnv-v0")["renderer"] == "sprites"
    assert keywords("MobileRobotGymEnv-v0", renderer="tinyrenderer")["renderer"] == "tinyrenderer"
    assert keywords("KukaButtonGymEnv-v0")["renderer"] == "lowpoly"
    assert "renderer" not in keywords("OmnirobotEnv-v0")
    assert not os.path.exists(tmp_path / "data") or os.listdir(tmp_path / "data") == []
