"""A trained SRL model in front of an agent: the batched encoder wrapper, the model lookup (config/srl_models.yaml or
--srl-model-path) and its refusals, and train/enjoy end to end with a real VAE."""
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
from conftest import REPO, interruptThenResume, runFolder, runModule, runTrain, snapshot, trainArgs, trainHere
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnvWrapper, VecFrameStack

from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from replay import enjoy_baselines
from rl_baselines import api as rl_api
from rl_baselines.core.registry import registered_rl
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
from rl_baselines.runs import train, train_checks
from rl_baselines.runs.resume import continueCommand
from rl_baselines.runs.run_policy import loadRunPolicy, readRunArgs, readRunConfig
from srl_models.base import EXP_CONFIG_FILE, STATES_FILE, BaseSRLModel, SRLType, modelHash, modelRecipe
from srl_models.config import checkRecordedModel, describeSRLModel, readSRLConfig, resolveSRLModel
from srl_models.metrics import participationRatio
from srl_models.models import VAEModel
from srl_models.pca import PCAModel
from srl_models.registry import registered_srl
from srl_toolbox.cli import UsageError, pythonCommand

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


def _recordStates(folder: str, state_dim: int, directions: int = 2, seed: int = 0) -> float:
    """Write states.npz as srl_models.evaluate does, states spanning ``directions`` directions;
    :return: the scale they give, sqrt(P / state_dim)"""
    rng = np.random.default_rng(seed)
    states = rng.normal(size=(300, directions)) @ rng.normal(size=(directions, state_dim)) + rng.normal(size=state_dim)
    np.savez(os.path.join(folder, STATES_FILE), states=states.astype(np.float32), ground_truth=np.zeros((300, 2)))
    return float(np.sqrt(participationRatio(states) / state_dim))


def _countingArgs(folder: str, **settings) -> argparse.Namespace:
    args = trainArgs(env=ENV_ID, srl_model="counting", srl_model_path=folder, seed=0, num_cpu=1, num_stack=1,
                     action_repeat=1, continuous_actions=False, action_joints=False, random_target=False,
                     shape_reward=False, img_shape=list(SMALL))
    return argparse.Namespace(**{**vars(args), **settings})


def test_a_learned_state_is_handed_over_at_the_size_of_the_directions_it_spans(counting, tmp_path):
    folder = _saveCounting(str(tmp_path / "model"), state_dim=8)
    expected = _recordStates(folder, 8, directions=2)
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
    _recordStates(folder, 8, directions=6, seed=1)
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


# --- end to end, with a VAE trained by the SRL training command ------------------------------------------------

@pytest.fixture(scope="module")
def vaeFolder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny 32x32 VAE (state dim 8) trained as a user would: record a dataset, then python -m srl_models.train."""
    scratch = tmp_path_factory.mktemp("srl_vae")
    result = runModule("environments.dataset_generator", "--env", ENV_ID, "--num-episode", "2", "--max-steps", "40",
                       "--img-shape", *map(str, SMALL), "--name", "tiny", "--save-path", scratch / "data",
                       "--seed", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    result = runModule("srl_models.train", "--data-folder", scratch / "data" / "tiny", "--srl-model", "vae",
                       "--state-dim", "8", "--epochs", "1", "--batch-size", "32", "--seed", "0", "--log-folder",
                       scratch / "srl", "--no-eval", "--no-progress")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1].split("Model folder: ", 1)[1]


def _readJson(path: str) -> dict:
    with open(path) as handle:
        return json.load(handle)


def _normalisationShape(folder: str) -> tuple:
    with np.load(os.path.join(folder, "vecnormalize.npz"), allow_pickle=False) as data:
        return data["obs.mean"].shape


def test_train_with_vae_from_config_then_enjoy(tmp_path, vaeFolder):
    os.makedirs(tmp_path / "config")
    config = _writeYaml(tmp_path / "config" / "srl.yaml",
                        {ENV_ID: {"vae": os.path.relpath(vaeFolder, tmp_path / "config")}})
    run_dir = runFolder(runTrain("--algo", "ppo2", "--env", ENV_ID, "--srl-model", "vae", "--srl-config-file", config,
                                 "--img-shape", *map(str, SMALL), "--num-cpu", "2", "--num-timesteps", "576",
                                 "--hyperparam", "n_steps:64", "--min-episodes-save", "1", "--checkpoint-freq", "256",
                                 "--log-dir", tmp_path / "logs"))
    assert os.path.dirname(run_dir) == os.path.join(str(tmp_path / "logs"), ENV_ID, "vae", "ppo2")
    record = _readJson(os.path.join(run_dir, "srl_model.json"))
    assert record == {"name": "vae", "path": vaeFolder, "hash": modelHash(vaeFolder), "recipe": modelRecipe(vaeFolder),
                      "state_dim": 8, "img_shape": list(SMALL), "env": ENV_ID}
    saved = _readJson(os.path.join(run_dir, "args.json"))
    assert saved["srl_model_path"] == vaeFolder and saved["srl_model"] == "vae"
    # the running mean/std of the 8-dim states beside every saved model
    checkpoints = [os.path.join(run_dir, "checkpoints", name) for name in os.listdir(f"{run_dir}/checkpoints")]
    for folder in [run_dir, os.path.join(run_dir, "best"), *checkpoints]:
        assert _normalisationShape(folder) == (8,), folder
    result = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "60", "--deterministic")
    assert result.returncode == 0, result.stderr
    assert "episode" in result.stdout.lower() or "reward" in result.stdout.lower()


def test_train_with_model_path_and_enjoy_checks_the_hash(tmp_path, vaeFolder, monkeypatch):
    copy = shutil.copytree(vaeFolder, str(tmp_path / "copy"))
    threads = torch.get_num_threads()
    with monkeypatch.context() as share:  # trained in this process, with a share of 2 threads (OMP_NUM_THREADS)
        share.setenv("OMP_NUM_THREADS", "2")
        try:
            run_dir = trainHere("--algo", "ppo2", "--env", ENV_ID, "--srl-model-path", copy, "--num-timesteps", "128",
                                "--hyperparam", "n_steps:64", "--log-dir", tmp_path / "logs")
        finally:
            torch.set_num_threads(threads)
    saved = _readJson(os.path.join(run_dir, "args.json"))
    # the kind and the image size come from the model folder
    assert saved["srl_model"] == "vae" and saved["img_shape"] == list(SMALL) and saved["srl_model_path"] == copy
    assert saved["torch_threads"] == 1  # auto for the MLP policy of a learned state, whatever the process's share
    with open(os.path.join(copy, EXP_CONFIG_FILE), "a") as handle:
        handle.write("\n")  # same settings, other bytes: another model as far as the run knows
    result = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "10")
    assert result.returncode == 2 and "changed since the run was trained" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    # a copy with the recorded files replays (the original folder is one)
    assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10", "--srl-model-path", vaeFolder]) == 0
    # the recorded folder gone: the message names the flag (the parameter in Python) that gives its new place
    shutil.move(copy, str(tmp_path / "moved"))
    with pytest.raises(UsageError, match=r"does not exist; moved\? give its new folder with --srl-model-path$"):
        enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10"])
    with pytest.raises(UsageError, match=r"does not exist; moved\? give its new folder with srl_model_path$"):
        rl_api.loadRun(run_dir)
    os.remove(os.path.join(run_dir, "srl_model.json"))
    with pytest.raises(UsageError, match="holds no srl_model.json"):
        enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10"])


def test_the_participation_scale_is_recorded_and_rebuilt_by_every_reader(tmp_path, vaeFolder):
    model = shutil.copytree(vaeFolder, str(tmp_path / "model"))
    expected = _recordStates(model, 8, directions=3)
    run_dir = runFolder(runTrain("--algo", "ppo2", "--env", ENV_ID, "--srl-model-path", model, "--srl-state-scale",
                                 "participation", "--num-timesteps", "128", "--hyperparam", "n_steps:64",
                                 "--log-dir", tmp_path / "logs"))
    assert _readJson(os.path.join(run_dir, "args.json"))["srl_state_scale"] == "participation"
    with np.load(os.path.join(run_dir, NORMALISATION_FILE)) as data:
        assert float(data["scale"]) == pytest.approx(expected)
    os.remove(os.path.join(model, STATES_FILE))  # what the run recorded wins over what the folder holds now
    args = readRunArgs(run_dir, "--log-dir")
    env = registered_rl["ppo2"][0].makeEnv(args, load_path_normalise=run_dir)
    normaliser = findVecNormalize(env)
    assert isinstance(normaliser, ScaledVecNormalize) and normaliser.scale == pytest.approx(expected)
    policy = loadRunPolicy(run_dir)
    raw = MobileRobotGymEnv(srl_model="vae", img_shape=SMALL)
    pixels = raw.reset(seed=0)[0]
    np.testing.assert_allclose(policy.observation(raw, pixels),
                               normaliser.normalize_obs(policy.encoder.getState(pixels[None])), rtol=1e-5, atol=1e-6)
    raw.close()
    env.close()
    assert "--srl-state-scale participation" in continueCommand(readRunConfig(run_dir, "--log-dir"), None, 64)


def test_the_state_scale_beside_the_ground_truth_scale_warns_that_it_does_nothing(tmp_path, vaeFolder):
    argv = ["--algo", "ppo2", "--env", ENV_ID, "--srl-model-path", vaeFolder, "--srl-ground-truth-scale",
            "--srl-state-scale", "participation", "--log-dir", str(tmp_path), "--no-vis"]
    with pytest.warns(UserWarning, match="--srl-state-scale participation does nothing: --srl-ground-truth-scale "
                                         "replaces it"):
        train_checks.validate(train.parseCommand(argv)[0], registered_rl)
    assert not os.listdir(tmp_path)


def test_ground_truth_scale_is_recorded_and_rebuilt_by_every_reader(tmp_path, vaeFolder):
    run_dir = runFolder(runTrain("--algo", "ppo2", "--env", ENV_ID, "--srl-model-path", vaeFolder,
                                 "--srl-ground-truth-scale", "--num-timesteps", "128", "--hyperparam", "n_steps:64",
                                 "--eval-freq", "64", "--eval-episodes", "1", "--log-dir", tmp_path / "logs"))
    assert _readJson(os.path.join(run_dir, "args.json"))["srl_ground_truth_scale"] is True
    assert os.path.isfile(os.path.join(run_dir, "evaluations.npz"))
    args = readRunArgs(run_dir, "--log-dir")
    assert "--srl-ground-truth-scale" in continueCommand(readRunConfig(run_dir, "--log-dir"), None, 64).split()
    # replay and evaluation build the env from args.json: the VAE's 8 numbers times sqrt(2/8)
    env = registered_rl["ppo2"][0].makeEnv(args, load_path_normalise=run_dir)
    normaliser = findVecNormalize(env)
    assert isinstance(normaliser, ScaledVecNormalize) and normaliser.scale == pytest.approx(0.5)
    # the dataset generator's replayed agent (rl_baselines.runs.run_policy) sees what the run's env gives
    policy = loadRunPolicy(run_dir)
    raw = MobileRobotGymEnv(srl_model="vae", img_shape=SMALL)
    pixels = raw.reset(seed=0)[0]
    expected = normaliser.normalize_obs(policy.encoder.getState(pixels[None]))
    np.testing.assert_allclose(policy.observation(raw, pixels), expected, rtol=1e-5, atol=1e-6)
    raw.close()
    env.close()
    assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "10"]) == 0


# (case, extra arguments, message); the first four run as a subprocess (exit code 2), the others in this process
BAD_INPUTS = [
    ("missing folder", ["--srl-model-path", "{tmp}/missing"], "does not exist"),
    ("another env", ["--env", "MobileRobot1DGymEnv-v0", "--srl-model-path", "{vae}"],
     "was trained on MobileRobotGymEnv-v0 images, not MobileRobot1DGymEnv-v0"),
    ("other image size", ["--srl-model-path", "{vae}", "--img-shape", "3", "64", "64"],
     "encodes 3x32x32 images but the run's camera gives 3x64x64"),
    ("unknown name", ["--srl-model", "nope"], "unknown --srl-model 'nope' for MobileRobotGymEnv-v0; valid choices: "),
    ("foreign folder", ["--srl-model-path", "{tmp}"], "is not an SRL model folder"),
    ("other kind", ["--srl-model", "autoencoder", "--srl-model-path", "{vae}"],
     "holds a 'vae' model, not 'autoencoder'"),
    ("env mode with a folder", ["--srl-model", "ground_truth", "--srl-model-path", "{vae}"], "cannot be combined"),
    ("no model for the env", ["--srl-model", "vae", "--srl-config-file", f"{REPO}/config/srl_models.yaml"],
     "has no trained SRL model for MobileRobotGymEnv-v0"),
    ("name not in the config", ["--srl-model", "autoencoder", "--srl-config-file", "{tmp}/srl.yaml"],
     "has no 'autoencoder' model for MobileRobotGymEnv-v0 (models it has for MobileRobotGymEnv-v0: vae); train and "
     "register one with {python} -m srl_models.prepare --env MobileRobotGymEnv-v0 --srl-model autoencoder "
     "--srl-config-file "),
    ("two cameras", ["--srl-model-path", "{vae}", "--fpv"], "encodes 3-channel images (one camera)"),
    ("scale without a learned state", ["--srl-model", "ground_truth", "--srl-ground-truth-scale"],
     "--srl-ground-truth-scale scales a learned SRL state, not --srl-model 'ground_truth'; learned models: "),
    ("scale with an evolution strategy", ["--algo", "ars", "--srl-model-path", "{vae}", "--srl-ground-truth-scale"],
     "--srl-ground-truth-scale: --algo ars normalises states itself; algorithms that take it: "),
]


@pytest.mark.parametrize("case, extra, message", BAD_INPUTS, ids=[case[0] for case in BAD_INPUTS])
def test_bad_srl_inputs_are_refused(tmp_path, vaeFolder, case, extra, message):
    _writeYaml(tmp_path / "srl.yaml", {ENV_ID: {"vae": vaeFolder}})
    argv = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--num-timesteps", "64", "--log-dir",
            str(tmp_path / "logs"), "--no-vis",
            *[arg.format(tmp=tmp_path, vae=vaeFolder) for arg in extra]]
    before = snapshot(str(tmp_path))
    if BAD_INPUTS.index((case, extra, message)) < 4:
        result = runModule("rl_baselines.train", *argv)
        assert result.returncode == 2, result.stderr
        error = result.stderr.strip()
        assert error.startswith("error: ") and len(error.splitlines()) == 1
    else:
        with pytest.raises(UsageError) as raised:
            train.main(argv)
        error = str(raised.value)
        assert "\n" not in error
    assert message.replace("{python}", pythonCommand()) in error  # (printed: the interpreter that ran it)
    assert snapshot(str(tmp_path)) == before and not os.path.exists(tmp_path / "logs")
