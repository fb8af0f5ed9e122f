"""Tests of the dataset generator replaying a trained agent (environments/dataset_generator.py ``--policy RUN``,
rl_baselines/runs/run_policy.py) in the env its algorithm builds: the keywords the run's algorithm adds to its flags'
(``envKeywords``) apply, and only those (not what an older run's env_globals.json records from flags whose keywords
changed since); an agent that could not act on the generator's env is refused before anything is written; the run's
force_down, renderer and cameras decide, and its env when --env is left out."""
from __future__ import annotations

import json
import os
import warnings
from types import SimpleNamespace
from typing import Any

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
                     "--num-timesteps", "64", "--hyperparam", "n_steps:64", "--log-dir", tmp_path / "run",
                     "--seed", "1")


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
    :return: a tiny CarRacing run trained with ``-r``, whose args.json and env_globals.json say ``random_target:
        true`` as runs recorded before CarRacing dropped the keyword (its flags give False now: the env has no random
        target, and train records it off)
    """
    with pytest.warns(UserWarning):  # train leaves -r out on CarRacing, with a warning
        run = trainHere("--algo", "ppo2", "--env", "CarRacingGymEnv-v0", "--srl-model", "ground_truth", "-r",
                        "--num-timesteps", "64", "--hyperparam", "n_steps:64", "--log-dir", tmp_path / "run",
                        "--seed", "1")
    args = readJson(RunFolder(run).args_file)
    assert args["random_target"] is False
    writeJson(RunFolder(run).args_file, {**args, "random_target": True})
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


def _replayedRun(tmp_path, monkeypatch, env_id: str, **fields) -> tuple[str, Any]:
    """:return: (a run folder whose loader is a stand-in of a run of ``env_id`` with ``fields``, the env keywords
    that validate gives for generator flags)"""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    stand_in = SimpleNamespace(env_id=env_id, continuous=False, action_joints=False,
                               load=lambda num_threads=None: None, **fields)
    monkeypatch.setattr(dataset_generator, "loadPolicy", lambda path, load=True: stand_in)

    def kwargs(*flags: str) -> dict:
        config = dataset_generator.parseConfig(["--env", env_id, "--save-path", str(tmp_path / "data"), *flags])
        return dataset_generator.validate(config)[0].env_kwargs

    return str(run_dir), kwargs


@pytest.mark.parametrize("run_force_down", [True, False, None])
def test_a_replayed_arm_agent_moves_as_in_its_run(tmp_path, monkeypatch, run_force_down):
    """Random actions on an arm are recorded with force_down; a replayed agent gets its run's setting (a loader or an
    older run without it: False, the env's default)."""
    fields = {} if run_force_down is None else {"force_down": run_force_down}
    run_dir, kwargs = _replayedRun(tmp_path, monkeypatch, "KukaButtonGymEnv-v0", **fields)
    assert kwargs()["force_down"] is True
    assert kwargs("--policy", run_dir)["force_down"] is bool(run_force_down)


@pytest.mark.parametrize("run_renderer", ["tinyrenderer", "sprites", None])
def test_a_replayed_agent_sees_the_frames_of_its_run(tmp_path, monkeypatch, run_renderer):
    """--renderer left out: a replayed agent's run's renderer draws the dataset (a loader without one: the env's
    default); another --renderer is taken with a one-line warning naming both (the agent acts on images)."""
    fields = {} if run_renderer is None else {"renderer": run_renderer}
    run_dir, kwargs = _replayedRun(tmp_path, monkeypatch, "MobileRobotGymEnv-v0", pixels=True, **fields)

    def renderer(*flags: str) -> str:
        return kwargs(*flags).get("renderer", "tinyrenderer")  # no keyword: the reference (rendererKeywords)

    assert renderer() == "sprites"  # random actions: the env's default
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the run's own renderer: no warning
        assert renderer("--policy", run_dir) == (run_renderer or "sprites")
    other = "sprites" if run_renderer == "tinyrenderer" else "tinyrenderer"
    if run_renderer is None:
        assert renderer("--policy", run_dir, "--renderer", other) == other
        return
    with pytest.warns(UserWarning, match=f"trained on frames drawn by {run_renderer} .* --renderer {other}"):
        assert renderer("--policy", run_dir, "--renderer", other) == other


def test_a_replayed_agent_on_the_state_is_not_warned_about_the_renderer(tmp_path, monkeypatch):
    """An agent acting on the env's state (ground_truth) never sees the frames: another --renderer does not change
    what it does, and the warning that it "may act otherwise" was wrong."""
    run_dir, kwargs = _replayedRun(tmp_path, monkeypatch, "MobileRobotGymEnv-v0", renderer="sprites", pixels=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kwargs("--policy", run_dir, "--renderer", "tinyrenderer").get("renderer", "tinyrenderer") == \
            "tinyrenderer"


def test_without_env_a_replayed_agent_records_in_its_runs_env(tmp_path, monkeypatch):
    run_dir, _ = _replayedRun(tmp_path, monkeypatch, "KukaButtonGymEnv-v0")
    config = dataset_generator.parseConfig(["--policy", run_dir, "--save-path", str(tmp_path / "data")])
    assert config.env is None and dataset_generator.validate(config)[0].env_id == "KukaButtonGymEnv-v0"
    random = dataset_generator.parseConfig(["--save-path", str(tmp_path / "data")])
    assert dataset_generator.validate(random)[0].env_id == "MobileRobotGymEnv-v0"


@pytest.mark.parametrize("cameras,pixels", [(1, True), (2, True), (2, False)])
def test_a_replayed_agent_on_images_needs_its_cameras(tmp_path, monkeypatch, cameras, pixels):
    """An agent acting on images of one camera cannot act on two stacked (--fpv), nor the reverse: refused before
    anything is recorded (it failed in the workers with a traceback, leaving a partial folder); an agent on the
    env's state does not mind the dataset's cameras."""
    run_dir, kwargs = _replayedRun(tmp_path, monkeypatch, "MobileRobotGymEnv-v0", cameras=cameras, pixels=pixels)
    for flags, two in (([], False), (["--fpv"], True)):
        if pixels and two != (cameras == 2):
            advice = f"{'drop' if two else 'pass'} --fpv"
            with pytest.raises(UsageError, match=f"acts on images of {cameras} camera.*{advice}"):
                kwargs("--policy", run_dir, *flags)
        else:
            assert bool(kwargs("--policy", run_dir, *flags).get("fpv")) is two
    assert not os.path.exists(tmp_path / "data")
