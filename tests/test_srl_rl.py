"""A trained SRL model in front of an agent: the batched encoder wrapper, the model lookup (config/srl_models.yaml or
--srl-model-path) and its refusals. train and enjoy end to end with a real VAE: tests/test_srl_rl_vae.py."""
from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import json
import os
import shutil

import numpy as np
import pytest
import torch
import yaml
from conftest import REPO, interruptThenResume, trainArgs
from learned_states import recordStates
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnvWrapper, VecFrameStack

from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from rl_baselines.envs import factory
from rl_baselines.envs.factory import (
    NORMALISATION_FILE,
    ScaledVecNormalize,
    VecEnvSettings,
    createEnvs,
    encodeInWorkers,
    findVecNormalize,
    loadNormalisation,
    makeSingleEnv,
    saveNormalisation,
)
from rl_baselines.envs.srl_encoder import EncodedInWorkers, SRLEncoderVecEnv, freezeModel, loadEncoder
from rl_baselines.runs import train
from srl_models.base import EXP_CONFIG_FILE, STATES_FILE, BaseSRLModel, SRLType, modelHash, modelRecipe
from srl_models.config import checkRecordedModel, describeSRLModel, readSRLConfig, resolveSRLModel
from srl_models.models import VAEModel
from srl_models.pca import PCAModel
from srl_models.registry import registered_srl

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

ENV_ID = "MobileRobotGymEnv-v0"
SMALL = (3, 32, 32)


class CountingModel(BaseSRLModel):
    """A fixed random projection of the images that counts its getState calls and the images it encoded."""

    calls = 0
    encoded = 0

    def __init__(self, state_dim: int, img_shape: tuple[int, int, int], exp_config: dict | None = None,
                 seed: int = 0) -> None:
        super().__init__(state_dim, img_shape, exp_config)
        size = int(np.prod(img_shape))
        self.projection = np.random.default_rng(seed).normal(size=(size, state_dim)).astype(np.float32) / size

    def getState(self, observations: np.ndarray) -> np.ndarray:
        type(self).calls += 1
        type(self).encoded += len(observations)
        return (observations.reshape(len(observations), -1).astype(np.float32) @ self.projection).astype(np.float32)

    def save(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        np.save(os.path.join(folder, "projection.npy"), self.projection)
        with open(os.path.join(folder, EXP_CONFIG_FILE), "w") as handle:
            json.dump({**self.exp_config, "srl_model": "counting", "state_dim": self.state_dim,
                       "img_shape": list(self.img_shape), "weights": ["projection.npy"], "api_version": 1}, handle)

    @classmethod
    def load(cls, folder: str, device: str = "cpu") -> CountingModel:
        with open(os.path.join(folder, EXP_CONFIG_FILE)) as handle:
            config = json.load(handle)
        model = cls(config["state_dim"], config["img_shape"], config)
        model.projection = np.load(os.path.join(folder, "projection.npy"), allow_pickle=False)
        return model


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> type[CountingModel]:
    """CountingModel registered as the learned model "counting" (in this process), its counters reset."""
    monkeypatch.setitem(registered_srl, "counting", (CountingModel, SRLType.LEARNED))
    monkeypatch.setattr(CountingModel, "calls", 0)
    monkeypatch.setattr(CountingModel, "encoded", 0)
    return CountingModel


def _saveCounting(folder: str, env_id: str = ENV_ID, img_shape: tuple = SMALL, state_dim: int = 4) -> str:
    CountingModel(state_dim, img_shape, {"env": env_id}).save(folder)
    return folder


# --- the wrapper ------------------------------------------------------------------------------------------------

def test_wrapper_encodes_all_envs_in_one_call_per_step_and_terminal_images_apart(counting, monkeypatch):
    class KeepTerminalImages(VecEnvWrapper):
        """Copies the raw terminal images before the encoder replaces them with states."""

        def reset(self):
            return self.venv.reset()

        def step_wait(self):
            obs, rewards, dones, infos = self.venv.step_wait()
            self.terminal = {i: info["terminal_observation"].copy() for i, info in enumerate(infos) if dones[i]}
            return obs, rewards, dones, infos

    raw = KeepTerminalImages(DummyVecEnv([lambda: MobileRobotGymEnv(srl_model="counting", img_shape=SMALL,
                                                                    max_steps=4)] * 2))
    model = CountingModel(4, SMALL)
    env = SRLEncoderVecEnv(raw, model)
    batches = []  # the images of every getState call
    encode = env.encode
    monkeypatch.setattr(env, "encode", lambda images: batches.append(images.copy()) or encode(images))
    assert env.observation_space.shape == (4,) and env.observation_space.dtype == np.float32
    env.seed(0)
    states = env.reset()
    assert states.shape == (2, 4) and states.dtype == np.float32 and counting.calls == 1
    ended = ending_steps = 0
    for step in range(1, 10):
        env.step_async(np.array([env.action_space.sample() for _ in range(2)]))
        states, _, dones, infos = env.step_wait()
        ending_steps += bool(dones.any())
        # One call for both envs' new observations, one more for the terminal images of a step that ended episodes:
        # the new observations are encoded in a batch of a reset's shape, whatever the number of episodes ending (a
        # float matmul's last bits depend on the batch size; a resume between episodes encodes them at a reset).
        assert counting.calls == 1 + step + ending_steps
        assert batches[-1 - int(dones.any())].shape == (2, *raw.observation_space.shape)
        assert states.shape == (2, 4)
        for index in np.flatnonzero(dones):
            ended += 1
            terminal = infos[index]["terminal_observation"]
            np.testing.assert_allclose(terminal, model.getState(raw.terminal[index][None])[0], rtol=1e-5)
            counting.calls -= 1  # the reference call just above
    assert ended == 4 and ending_steps == 2  # episodes of 4 steps in both envs: steps 4 and 8
    assert counting.encoded == 2 * 10 + ended + ended  # obs of every step + terminal images (+ the reference calls)
    env.close()


def test_wrapper_refuses_images_of_another_shape(counting):
    venv = DummyVecEnv([lambda: MobileRobotGymEnv(srl_model="counting", img_shape=(3, 40, 40))])
    with pytest.raises(ValueError, match="encodes 3x32x32 images"):
        SRLEncoderVecEnv(venv, CountingModel(4, SMALL))
    venv.close()


def _saveUntrainedVAE(folder: str, img_shape: tuple = SMALL, state_dim: int = 4) -> str:
    torch.manual_seed(0)
    VAEModel(state_dim, img_shape, {"env": ENV_ID}).save(folder)
    return folder


def _progressRows(run_dir: str) -> list[dict[str, str]]:
    """:return: the run's progress.csv rows, without their wall-clock columns"""
    with open(os.path.join(run_dir, "progress.csv"), encoding="utf-8") as handle:
        return [{name: value for name, value in row.items() if name not in ("time/fps", "time/time_elapsed")}
                for row in csv.DictReader(handle)]


def test_a_run_on_a_learned_state_resumes_as_the_uninterrupted_run(tmp_path, monkeypatch):
    """A PCA fitted to the env's frames (a float32 matmul; a random projection happened not to show it), one env,
    episodes of 250 steps: the checkpoint at 500 falls between two episodes. The uninterrupted run encodes the first
    image of the next episode at a step that also ends one, the resumed run at a reset: the same batch shape, the same
    state to the last bit, the same progress.csv (encoded beside the terminal image, the state differed in its last
    bits, and so did the losses of the first update after the checkpoint)."""
    env, frames = MobileRobotGymEnv(srl_model="pca", img_shape=SMALL, max_steps=20), []
    frame, _ = env.reset(seed=0)
    for action in np.random.default_rng(0).integers(4, size=40):  # a PCA of the env's frames
        frames.append(frame)
        frame, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            frame, _ = env.reset()
    env.close()
    folder = str(tmp_path / "pca")
    model = PCAModel(32, SMALL, {"env": ENV_ID, "renderer": "sprites"})
    model.fit(np.asarray(frames))
    model.save(folder)
    args = ["--env", ENV_ID, "--srl-model", "pca", "--srl-model-path", folder, "--algo", "ppo2", "--seed", "1",
            "--num-cpu", "1", "--num-timesteps", "625", "--checkpoint-freq", "500", "--hyperparam", "n_steps:125",
            "batch_size:125"]
    reference = train.trainCommand(["--no-vis", "--no-progress", "--log-dir", str(tmp_path / "reference"), *args])
    assert reference.exit_code == 0
    # stopped in the rollout after the checkpoint; the resumed run's one update (500 to 625) is the row that differed
    run_dir = interruptThenResume(monkeypatch, str(tmp_path / "stopped"), args, at_step=600)
    assert len(_progressRows(reference.run_dir)) == 5 and _progressRows(run_dir) == _progressRows(reference.run_dir)


def test_create_envs_stacks_and_normalises_states_encoded_in_the_workers(tmp_path):
    """TinyRenderer's frames, 2 envs on the CPU: the workers encode (the placement measured fastest for costly frames)"""
    folder = _saveUntrainedVAE(str(tmp_path / "model"))
    args = trainArgs(env=ENV_ID, srl_model="vae", srl_model_path=folder, seed=0, num_cpu=2,
                     num_stack=2, action_repeat=1, continuous_actions=False, action_joints=False,
                     random_target=False, shape_reward=False, img_shape=list(SMALL), renderer="tinyrenderer")
    env = createEnvs(args)
    try:
        # raw envs in subprocesses, each encoding its own images, states stacked, then normalised
        normaliser = findVecNormalize(env)
        assert isinstance(normaliser.venv, VecFrameStack) and isinstance(normaliser.venv.venv, EncodedInWorkers)
        assert isinstance(normaliser.venv.venv.venv, SubprocVecEnv)
        assert env.observation_space.shape == (8,)
        env.reset()
        for _ in range(5):
            env.step(np.zeros(2, dtype=np.int64))
        assert normaliser.obs_rms.count > 1
        saveNormalisation(env, str(tmp_path))
    finally:
        env.close()
    # one env: the encoder in this process
    replay = createEnvs(argparse.Namespace(**{**vars(args), "num_cpu": 1}), load_path_normalise=str(tmp_path))
    assert isinstance(findVecNormalize(replay).venv.venv, SRLEncoderVecEnv)
    loadNormalisation(replay, str(tmp_path))
    np.testing.assert_array_equal(findVecNormalize(replay).obs_rms.mean, normaliser.obs_rms.mean)
    replay.close()


def test_encoder_placement(tmp_path, monkeypatch):
    """Several envs on the CPU: the workers encode TinyRenderer's frames, this process the sprites' cheap ones in one
    batch (each the faster placement, measured by benchmarks/srl_speed.py); one env: this process; encodeInWorkers
    saying otherwise (what srl_speed measures beside the default) moves the encoder."""
    folder = _saveUntrainedVAE(str(tmp_path / "model"))
    settings = VecEnvSettings(ENV_ID, 2, 3, "vae", srl_model_path=folder)
    assert encodeInWorkers(settings, "tinyrenderer") and encodeInWorkers(settings, "lowpoly")
    assert not encodeInWorkers(settings, "sprites")
    assert not encodeInWorkers(VecEnvSettings(ENV_ID, 1, 3, "vae"), "tinyrenderer")
    kwargs = {"srl_model": "vae", "img_shape": SMALL, "max_steps": 4}

    def encoderOf(vec_env: str = "auto", **extra) -> tuple[type, type]:
        env = createEnvs(dataclasses.replace(settings, vec_env=vec_env), env_kwargs={**kwargs, **extra})
        try:
            assert env.reset().shape == (2, 4)
            encoder = findVecNormalize(env).venv
            return type(encoder), type(encoder.venv)
        finally:
            env.close()

    assert encoderOf(renderer="tinyrenderer") == (EncodedInWorkers, SubprocVecEnv)
    assert encoderOf("subproc", renderer="sprites") == (SRLEncoderVecEnv, SubprocVecEnv)
    assert encoderOf() == (SRLEncoderVecEnv, DummyVecEnv)  # the default renderer, the sprites: envs in this process
    monkeypatch.setattr(factory, "encodeInWorkers", lambda settings, renderer: renderer == "sprites")
    assert encoderOf(renderer="tinyrenderer") == (SRLEncoderVecEnv, SubprocVecEnv)
    assert encoderOf("subproc", renderer="sprites") == (EncodedInWorkers, SubprocVecEnv)


def test_workers_encode_the_states_the_main_process_would(tmp_path):
    """Same images, same states, wherever they are encoded: the observations and the terminal observations."""
    folder = _saveUntrainedVAE(str(tmp_path / "model"))
    settings = VecEnvSettings(ENV_ID, 2, 3, "vae", srl_model_path=folder)
    kwargs = {"srl_model": "vae", "img_shape": SMALL, "max_steps": 4, "renderer": "tinyrenderer"}
    workers = createEnvs(settings, env_kwargs=kwargs)
    in_main = DummyVecEnv([functools.partial(makeSingleEnv, ENV_ID, kwargs, rank) for rank in range(2)])
    in_main.seed(3)
    in_main = SRLEncoderVecEnv(in_main, loadEncoder(folder))
    try:
        assert isinstance(findVecNormalize(workers).venv, EncodedInWorkers)
        assert isinstance(findVecNormalize(workers).venv.venv, SubprocVecEnv)
        raw_workers = findVecNormalize(workers).venv
        np.testing.assert_allclose(raw_workers.reset(), in_main.reset(), rtol=1e-5, atol=1e-6)
        ended = 0
        for _ in range(9):
            actions = np.array([1, 2])
            raw_workers.step_async(actions)
            in_main.step_async(actions)
            (states, _, dones, infos), (expected, _, expected_dones, expected_infos) = raw_workers.step_wait(), \
                in_main.step_wait()
            np.testing.assert_allclose(states, expected, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(dones, expected_dones)
            for index in np.flatnonzero(dones):
                ended += 1
                terminal = infos[index]["terminal_observation"]
                assert terminal.shape == (4,) and terminal.dtype == np.float32
                np.testing.assert_allclose(terminal, expected_infos[index]["terminal_observation"], rtol=1e-5,
                                           atol=1e-6)
        assert ended == 4
    finally:
        workers.close()
        in_main.close()


@pytest.mark.parametrize("num_stack", [1, 2])
def test_ground_truth_scale_gives_a_learned_state_the_size_of_ground_truth(counting, tmp_path, num_stack):
    folder = _saveCounting(str(tmp_path / "model"), state_dim=8)
    args = trainArgs(env=ENV_ID, srl_model="counting", srl_model_path=folder, seed=0, num_cpu=1,
                     num_stack=num_stack, action_repeat=1, continuous_actions=False, action_joints=False,
                     random_target=False, shape_reward=False, img_shape=list(SMALL))
    observed = {}
    for scaled in (False, True):
        env = createEnvs(argparse.Namespace(**{**vars(args), "srl_ground_truth_scale": scaled,
                                                "srl_state_scale": "none"}))
        normaliser = findVecNormalize(env)
        assert isinstance(normaliser, ScaledVecNormalize) is scaled
        states = [env.reset()]
        for _ in range(6):
            states.append(env.step(np.array([1]))[0])
        observed[scaled] = np.stack(states)
        if scaled:
            # MobileRobot's ground truth is 2 numbers: 8 normalised numbers per frame times sqrt(2/8), stacked or not
            assert normaliser.scale == pytest.approx(0.5)
            raw = normaliser.get_original_obs()
            np.testing.assert_allclose(normaliser.unnormalize_obs(normaliser.normalize_obs(raw)), raw, rtol=1e-4,
                                       atol=1e-5)
        env.close()
    np.testing.assert_allclose(observed[True], 0.5 * observed[False], rtol=1e-5, atol=1e-6)
    assert np.abs(observed[False]).max() > 0.1


def _countingArgs(folder: str, **settings) -> argparse.Namespace:
    args = trainArgs(env=ENV_ID, srl_model="counting", srl_model_path=folder, seed=0, num_cpu=1, num_stack=1,
                     action_repeat=1, continuous_actions=False, action_joints=False, random_target=False,
                     shape_reward=False, img_shape=list(SMALL))
    return argparse.Namespace(**{**vars(args), **settings})


def test_a_learned_state_is_handed_over_at_the_size_of_the_directions_it_spans(counting, tmp_path):
    folder = _saveCounting(str(tmp_path / "model"), state_dim=8)
    expected = recordStates(folder, 8, directions=2)
    assert 0.3 < expected <= 0.5  # 2 directions of 8 numbers: at most sqrt(2 / 8)
    observed = {}
    for setting in ("participation", "none"):
        env = createEnvs(_countingArgs(folder, srl_state_scale=setting))
        normaliser = findVecNormalize(env)
        assert isinstance(normaliser, ScaledVecNormalize) is (setting == "participation")
        states = [env.reset()] + [env.step(np.array([1]))[0] for _ in range(5)]
        observed[setting] = np.stack(states)
        if setting == "participation":
            assert normaliser.scale == pytest.approx(expected)
            saveNormalisation(env, str(tmp_path))
        env.close()
    np.testing.assert_allclose(observed["participation"], expected * observed["none"], rtol=1e-5, atol=1e-6)
    assert np.abs(observed["none"]).max() > 0.1
    # the factor travels with the statistics: a reader rebuilds it from vecnormalize.npz, whatever the folder holds now
    with np.load(tmp_path / NORMALISATION_FILE) as data:
        assert float(data["scale"]) == pytest.approx(expected)
    recordStates(folder, 8, directions=6, seed=1)
    reread = createEnvs(_countingArgs(folder, srl_state_scale="none"), load_path_normalise=str(tmp_path))
    assert findVecNormalize(reread).scale == pytest.approx(expected)
    reread.close()
    # the default hands the state over as normalised; the ground-truth scale replaces the setting
    assert trainArgs().srl_state_scale == "none"
    env = createEnvs(_countingArgs(folder, srl_ground_truth_scale=True))
    assert findVecNormalize(env).scale == pytest.approx(0.5)
    env.close()


def test_a_model_without_recorded_states_is_handed_over_unscaled_with_a_warning(counting, tmp_path):
    folder = _saveCounting(str(tmp_path / "model"), state_dim=8)
    with pytest.warns(UserWarning, match="holds no recorded states"):
        env = createEnvs(_countingArgs(folder, srl_state_scale="participation"))
    assert type(findVecNormalize(env)) is not ScaledVecNormalize
    env.close()
    np.savez(os.path.join(folder, STATES_FILE), states=np.zeros((10, 5)))
    with pytest.raises(ValueError, match="not states of the model's size 8"):
        createEnvs(_countingArgs(folder, srl_state_scale="participation"))


# --- the lookup -------------------------------------------------------------------------------------------------

def _writeYaml(path, content) -> str:
    with open(path, "w") as handle:
        yaml.safe_dump(content, handle)
    return str(path)


def test_resolver_finds_a_folder_relative_to_the_yaml(counting, tmp_path):
    folder = _saveCounting(str(tmp_path / "models" / "one"))
    os.makedirs(tmp_path / "config")
    config = _writeYaml(tmp_path / "config" / "srl.yaml", {ENV_ID: {"counting": "../models/one"}})
    assert resolveSRLModel(ENV_ID, "counting", config, img_shape=SMALL) == folder
    assert resolveSRLModel(ENV_ID, "counting", "no/such/file.yaml", model_path=folder) == folder
    assert resolveSRLModel(ENV_ID, None, "no/such/file.yaml", model_path=folder, channels=3) == folder
    assert readSRLConfig(os.path.join(REPO, "config", "srl_models.yaml")) == {}  # the shipped file stays valid


@pytest.mark.parametrize("case, message", [
    ("not_learned", "'raw_pixels' is not a learned SRL model (registered but computed by the env)"),
    ("unknown", "'nope' is not a learned SRL model (not installed)"),
    ("no_yaml", "does not exist"),
    ("bad_yaml", "is not readable YAML"),
    ("list_yaml", "must map env ids to {model name: folder}, not a list"),
    ("env_missing", f"has no trained SRL model for {ENV_ID} (it lists KukaButtonGymEnv-v0)"),
    ("name_missing", f"has no 'counting' model for {ENV_ID} (models it has for {ENV_ID}: vae)"),
    ("folder_missing", "does not exist"),
    ("foreign", "is not an SRL model folder (no exp_config.json)"),
    ("other_env", "was trained on KukaButtonGymEnv-v0 images, not MobileRobotGymEnv-v0"),
    ("other_size", "encodes 3x32x32 images but the run's camera gives 3x64x64; use --img-shape 3 32 32"),
    ("two_cameras", "encodes 6-channel images (two cameras (--fpv or --multi-view))"),
    # with --img-shape, a model of the run's size but of other cameras: the camera flag is named, not --img-shape
    ("two_cameras_at_the_size", "encodes 6-channel images (two cameras (--fpv or --multi-view)) but the run's camera "
     "gives 3 channels; pass the camera flag it was trained with (--multi-view: Kuka arms, --fpv: mobile robots)"),
    ("one_camera_at_the_size", "encodes 3-channel images (one camera) but the run's camera gives 6 channels; drop "
     "--fpv / --multi-view"),
    ("two_cameras_other_size", "encodes 6x32x32 images but the run's camera gives 3x64x64; use --img-shape 3 32 32 "
     "(with --fpv or --multi-view)"),
    ("other_kind", "holds a 'counting' model, not 'vae'"),
    ("other_kind_vowel", "holds an 'atc' model, not 'vae'"),
    ("no_weights", "lacks its weights file(s): projection.npy"),
    # a plugin's exp_config naming its one file as a string was read a character at a time ("p, r, o, j, ...")
    ("weights_a_string", "exp_config.json's weights must be a list of file names in the folder, not "
                         "'projection.npy'"),
])
def test_resolver_refusals(counting, tmp_path, monkeypatch, case, message):
    monkeypatch.setitem(registered_srl, "vae", (CountingModel, SRLType.LEARNED))  # whatever the install has
    good = _saveCounting(str(tmp_path / "good"))
    name, kwargs = "counting", {"img_shape": SMALL}
    content: object = {ENV_ID: {"counting": good}}
    if case == "not_learned":
        name = "raw_pixels"
    elif case == "unknown":
        name = "nope"
    elif case == "env_missing":
        content = {"KukaButtonGymEnv-v0": {"counting": good}}
    elif case == "name_missing":
        content = {ENV_ID: {"vae": good}}
    elif case == "folder_missing":
        content = {ENV_ID: {"counting": str(tmp_path / "missing")}}
    elif case == "foreign":
        os.makedirs(tmp_path / "foreign")
        content = {ENV_ID: {"counting": str(tmp_path / "foreign")}}
    elif case == "other_env":
        content = {ENV_ID: {"counting": _saveCounting(str(tmp_path / "kuka"), env_id="KukaButtonGymEnv-v0")}}
    elif case == "other_size":
        kwargs = {"img_shape": (3, 64, 64)}
    elif case == "two_cameras":
        content = {ENV_ID: {"counting": _saveCounting(str(tmp_path / "fpv"), img_shape=(6, 32, 32))}}
        kwargs = {"channels": 3}
    elif case in ("two_cameras_at_the_size", "two_cameras_other_size"):
        content = {ENV_ID: {"counting": _saveCounting(str(tmp_path / "fpv"), img_shape=(6, 32, 32))}}
        kwargs = {"img_shape": (3, 32, 32) if case == "two_cameras_at_the_size" else (3, 64, 64)}
    elif case == "one_camera_at_the_size":
        kwargs = {"img_shape": (6, 32, 32)}
    elif case == "other_kind":
        name, content = "vae", {ENV_ID: {"vae": good}}
    elif case == "other_kind_vowel":
        os.makedirs(tmp_path / "atc")
        config_text = json.dumps({"srl_model": "atc", "state_dim": 4, "env": ENV_ID})
        (tmp_path / "atc" / "exp_config.json").write_text(config_text)
        name, content = "vae", {ENV_ID: {"vae": str(tmp_path / "atc")}}
    elif case == "no_weights":
        os.remove(os.path.join(good, "projection.npy"))
    elif case == "weights_a_string":
        exp_config = json.loads((tmp_path / "good" / "exp_config.json").read_text())
        (tmp_path / "good" / "exp_config.json").write_text(json.dumps({**exp_config, "weights": "projection.npy"}))
    config = _writeYaml(tmp_path / "srl.yaml", content)
    if case == "no_yaml":
        config = str(tmp_path / "absent.yaml")
    elif case == "bad_yaml":
        with open(config, "w") as handle:
            handle.write(f"{ENV_ID}: [unclosed\n")
    elif case == "list_yaml":
        config = _writeYaml(tmp_path / "srl.yaml", [ENV_ID])
    with pytest.raises(ValueError) as error:
        resolveSRLModel(ENV_ID, name, config, **kwargs)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_model_recipe_ignores_what_training_produced_and_where_the_dataset_lay(tmp_path):
    def folderWith(name: str, **config) -> str:
        folder = tmp_path / name
        folder.mkdir()
        base = {"srl_model": "vae", "state_dim": 8, "img_shape": [3, 16, 16], "weights": [], "beta": 1.0,
                "data_folder": "/work/a/data/MobileRobotGymEnv-v0_20ep_64x64_seed0"}
        (folder / EXP_CONFIG_FILE).write_text(json.dumps({**base, **config}))
        return str(folder)

    first = folderWith("first", train_loss=0.5, val_loss=0.6, best_epoch=3, epochs_trained=10, selected_on="val")
    again = folderWith("again", train_loss=0.4, val_loss=0.7, best_epoch=9, epochs_trained=10, selected_on="train",
                       data_folder="/elsewhere/data/MobileRobotGymEnv-v0_20ep_64x64_seed0/")
    assert modelHash(first) != modelHash(again) and modelRecipe(first) == modelRecipe(again)
    assert modelRecipe(folderWith("beta", beta=4.0)) != modelRecipe(first)
    assert modelRecipe(folderWith("dataset", data_folder="/work/a/data/other")) != modelRecipe(first)


def test_recorded_model_hash_is_checked(counting, tmp_path):
    folder = _saveCounting(str(tmp_path / "model"))
    record = describeSRLModel(folder)
    assert record == {"name": "counting", "path": folder, "hash": modelHash(folder), "recipe": modelRecipe(folder),
                      "state_dim": 4, "img_shape": list(SMALL), "env": ENV_ID}
    moved = shutil.copytree(folder, str(tmp_path / "moved"))
    assert checkRecordedModel(record) == folder and checkRecordedModel(record, moved) == moved
    np.save(os.path.join(moved, "projection.npy"), np.zeros((1, 4), dtype=np.float32))
    # another folder with other files is another model, not a changed one
    with pytest.raises(ValueError, match=f"is not the run's counting model '{folder}': its files differ"):
        checkRecordedModel(record, moved)
    with pytest.raises(ValueError, match=f"is a model of {ENV_ID}, the run used one of OtherEnv-v0"):
        checkRecordedModel({**record, "env": "OtherEnv-v0"}, moved)
    with pytest.raises(ValueError, match="is a counting model, the run used a vae model"):
        checkRecordedModel({**record, "name": "vae"}, moved)
    with pytest.raises(ValueError, match="is a counting model, the run used an atc model"):
        checkRecordedModel({**record, "name": "atc"}, moved)
    np.save(os.path.join(folder, "projection.npy"), np.zeros((1, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="changed since the run was trained"):
        checkRecordedModel(record)


def test_encoder_is_frozen():
    class TorchModel(CountingModel):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.encoder = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.5))

    model = freezeModel(TorchModel(4, SMALL))
    assert not model.encoder.training
    assert not any(parameter.requires_grad for parameter in model.encoder.parameters())
