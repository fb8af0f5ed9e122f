"""Tests of the dataset generator replaying a trained agent (environments/dataset_generator.py ``--policy RUN``,
rl_baselines/runs/run_policy.py) in the env its algorithm builds: the keywords the run's algorithm adds to its flags'
(``envKeywords``) apply, and only those (not what an older run's env_globals.json records from flags whose keywords
changed since); an agent that could not act on the generator's env is refused before anything is written."""
from __future__ import annotations

import json
import os
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
from conftest import loadArrays, trainHere
from stable_baselines3.common.vec_env import VecFrameStack

from environments import dataset_generator, getEnvClass
from environments.dataset_generator import episodeSeed
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from rl_baselines.core.plugin_v1 import asRunSettings
from rl_baselines.core.registry import registered_rl
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.runs.run_policy import RunPolicy, loadRunPolicy
from srl_toolbox.cli import UsageError

pytestmark = pytest.mark.slow  # whole trainings: left out of `make test-fast`

NAME = "ds"


def readJson(path) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def writeJson(path, data: dict) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)


# --- agents of algorithms that build their env otherwise (envKeywords, makeEnv) ------------------------------------

PPO2 = registered_rl["ppo2"][0]


class AbsolutePPO(PPO2):
    """A plugin algorithm whose agent observes the robot's absolute position (relative_pos=False)."""

    @classmethod
    def makeEnv(cls, settings, env_kwargs=None, load_path_normalise=None):
        settings = asRunSettings(settings)
        env_kwargs = cls.envKeywords(dict(settings.env_kwargs) if env_kwargs is None else env_kwargs)
        return super().makeEnv(settings, env_kwargs, load_path_normalise)

    @classmethod
    def envKeywords(cls, env_kwargs):
        return {**env_kwargs, "relative_pos": False}


class StackingPPO(PPO2):
    """A plugin algorithm whose makeEnv stacks two observations (its keywords are the flags')."""

    @classmethod
    def makeEnv(cls, settings, env_kwargs=None, load_path_normalise=None):
        return VecFrameStack(super().makeEnv(settings, env_kwargs, load_path_normalise), 2)


def _pluginRun(tmp_path, monkeypatch, algo: str, algo_class: type) -> str:
    """:return: a tiny ground-truth run on the mobile robot of ``algo_class``, installed as ``algo``"""
    monkeypatch.setitem(registered_rl, algo, (algo_class, *registered_rl["ppo2"][1:]))
    return trainHere("--algo", algo, "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                     "--num-timesteps", "64", "--hyperparam", "n_steps:64", "--log-dir", tmp_path / "run", "--seed", "1")


def test_a_replayed_agent_acts_in_the_env_its_algorithm_built(tmp_path, monkeypatch):
    """An algorithm whose envKeywords build its env with other keywords (relative_pos=False): the generator built
    the plain env (relative ground truth), so the agent acted on other states than it was trained on, silently. The
    run's env_globals.json keywords are applied, and dataset_config.json records them."""
    run = _pluginRun(tmp_path, monkeypatch, "absolute_ppo", AbsolutePPO)
    n_steps, seed = 6, 4
    config = dataset_generator.parseConfig(["--policy", run, "--save-path", str(tmp_path / "data"), "--name", NAME,
                                            "--img-shape", "3", "16", "16", "--max-steps", str(n_steps),
                                            "--num-episode", "1", "--seed", str(seed), "--no-progress"])
    assert dataset_generator.generate(config) == 0
    dataset_config = readJson(tmp_path / "data" / NAME / "dataset_config.json")
    assert dataset_config["relative_pos"] is False and dataset_config["run_env_kwargs"] == {"relative_pos": False}
    assert readJson(tmp_path / "data" / NAME / "env_globals.json")["env_kwargs"]["relative_pos"] is False
    policy = loadRunPolicy(run)
    assert policy.env_keywords == {"relative_pos": False}  # what env_globals.json records beyond the run's flags
    # the episode is the one the agent plays in its run's env, absolute states and all
    env = MobileRobotGymEnv(img_shape=(3, 16, 16), max_steps=n_steps, relative_pos=False)
    try:
        observation, _ = env.reset(seed=episodeSeed(seed, 0))
        policy.reset(episodeSeed(seed, 0))
        actions = []
        for _ in range(n_steps):
            actions.append(policy.act(env, observation))
            observation, *_ = env.step(actions[-1])
    finally:
        env.close()
    assert actions == loadArrays(tmp_path / "data" / NAME)["actions"].tolist()


def test_an_agent_that_cannot_act_on_the_generators_env_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    """An algorithm whose makeEnv wraps its env (two stacked states: shape (4,)): the generator fed the agent (2,)
    states and crashed in the middle of the first episode with SB3's traceback. Refused in validation, one line."""
    run = _pluginRun(tmp_path, monkeypatch, "stacking_ppo", StackingPPO)
    config = dataset_generator.parseConfig(["--policy", run, "--save-path", str(tmp_path / "data"), "--name", NAME,
                                            "--img-shape", "3", "16", "16", "--max-steps", "5", "--num-episode", "1",
                                            "--no-progress"])
    with pytest.raises(UsageError, match=r"acts on observations of shape \(4,\) and the dataset's env gives it "
                                         r"\(2,\).*stacking_ppo") as error:
        dataset_generator.validate(config)
    assert "\n" not in str(error.value) and run in str(error.value)
    with pytest.raises(UsageError):
        dataset_generator.generate(config)
    assert not (tmp_path / "data").exists()


def test_the_observation_check_takes_the_images_sb3_transposes():
    """SB3 keeps an image agent's space channel-first (VecTransposeImage) and transposes the channel-last frames it is
    given: the check compares them so, and still refuses images of another size."""
    policy = object.__new__(RunPolicy)
    policy.__dict__.update(run_dir="run", args=SimpleNamespace(algo="ppo2"), srl_model="raw_pixels", learned=False,
                           goal_conditioned=False, img_shape=(3, 16, 16), num_stack=2, _stack=None,
                           _normalisation=None, _scale=1.0)
    pixels = np.zeros((20, 20, 3), dtype=np.uint8)
    for shape, accepted in (((6, 16, 16), True), ((16, 16, 6), True), ((6, 8, 8), False)):
        policy.agent = SimpleNamespace(observation_space=gym.spaces.Box(0, 255, shape, dtype=np.uint8))
        if accepted:
            policy.checkObservation(None, pixels)
        else:
            with pytest.raises(ValueError, match=r"shape \(6, 8, 8\) and the dataset's env gives it \(16, 16, 6\)"):
                policy.checkObservation(None, pixels)
        assert policy._stack is None


# --- older runs: env_globals.json records keywords that today's flags no longer give --------------------------------

def _olderCarRacingRun(tmp_path) -> str:
    """
    :return: a tiny CarRacing run trained with ``-r``, whose env_globals.json says ``random_target: true`` as runs
        recorded before CarRacing dropped the keyword (its flags give False now: the env has no random target)
    """
    with pytest.warns(UserWarning):  # train leaves -r out on CarRacing, with a warning
        run = trainHere("--algo", "ppo2", "--env", "CarRacingGymEnv-v0", "--srl-model", "ground_truth", "-r",
                        "--num-timesteps", "64", "--hyperparam", "n_steps:64", "--log-dir", tmp_path / "run",
                        "--seed", "1")
    assert readJson(RunFolder(run).args_file)["random_target"] is True
    env_globals = readJson(RunFolder(run).env_globals_file)
    env_globals["env_kwargs"]["random_target"] = True
    writeJson(RunFolder(run).env_globals_file, env_globals)
    return run


def test_an_older_run_is_replayed_without_the_keywords_its_flags_no_longer_give(tmp_path):
    """A CarRacing run trained with -r before the env dropped random_target: its env_globals.json records
    random_target true, which the generator took for a keyword of its algorithm and applied, so that CarRacing
    refused it ("--env CarRacingGymEnv-v0 refused these settings"). Only what ppo2's envKeywords adds (nothing)
    applies: the run is replayed."""
    run = _olderCarRacingRun(tmp_path)
    config = dataset_generator.parseConfig(["--env", "CarRacingGymEnv-v0", "--policy", run, "--save-path",
                                            str(tmp_path / "data"), "--name", NAME, "--img-shape", "3", "16", "16",
                                            "--max-steps", "3", "--num-episode", "1", "--no-progress"])
    assert dataset_generator.generate(config) == 0
    dataset_config = readJson(tmp_path / "data" / NAME / "dataset_config.json")
    assert dataset_config["run_env_kwargs"] == {} and dataset_config["random_target"] is False
    assert loadRunPolicy(run).env_keywords == {}
    # the same holds for the other older records: a Kuka joint run made with --force-down before force_down was
    # dropped for joint moves (env_globals.json: force_down true), and her adds goal_conditioned whatever it records
    for name, changes, env_kwargs, expected in (
            ("kuka", {"env": "KukaButtonGymEnv-v0", "continuous_actions": True, "action_joints": True,
                      "force_down": True, "random_target": False}, {"action_joints": True, "force_down": True,
                                                                     "is_discrete": False}, {}),
            ("her", {"algo": "her"}, {}, {"goal_conditioned": True})):
        folder = tmp_path / name
        os.makedirs(folder)
        args = readJson(RunFolder(run).args_file)
        writeJson(RunFolder(str(folder)).args_file, {**args, **changes})
        env_id = changes.get("env", "CarRacingGymEnv-v0")
        env_globals = getEnvClass(env_id).getGlobals({"srl_model": "ground_truth", **env_kwargs})
        writeJson(RunFolder(str(folder)).env_globals_file, env_globals)
        assert RunPolicy(str(folder)).env_keywords == expected, name


class WindyPPO(PPO2):
    """A plugin algorithm whose envKeywords adds a keyword the env does not take (changed since its run)."""

    @classmethod
    def envKeywords(cls, env_kwargs):
        return {**env_kwargs, "wind": 1.0}


def test_a_run_whose_env_cannot_be_rebuilt_is_refused_by_its_name(tmp_path, monkeypatch):
    """The env refusing the keywords of the run's algorithm was blamed on "--env ... settings" the user never gave:
    the one-line error names the run."""
    run = _pluginRun(tmp_path, monkeypatch, "windy_ppo", PPO2)
    monkeypatch.setitem(registered_rl, "windy_ppo", (WindyPPO, *registered_rl["ppo2"][1:]))
    config = dataset_generator.parseConfig(["--policy", run, "--save-path", str(tmp_path / "data"), "--name", NAME,
                                            "--img-shape", "3", "16", "16", "--max-steps", "5", "--num-episode", "1",
                                            "--no-progress"])
    with pytest.raises(UsageError, match=r"^--policy '.*': its env cannot be rebuilt: .*wind") as error:
        dataset_generator.validate(config)
    assert "\n" not in str(error.value) and run in str(error.value)
    assert not (tmp_path / "data").exists()
