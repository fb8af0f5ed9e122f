"""The Python API (rl_baselines.api): the command's checks and messages, process settings left alone, train -> load
-> act -> evaluate, and every example of docs/python_api.md run as written."""
from __future__ import annotations

import functools
import json
import multiprocessing
import os
import random
import re
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import REPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

import rl_baselines
from rl_baselines import api
from rl_baselines.core.base import BaseRLObject
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.envs import factory
from rl_baselines.envs.factory import VecEnvSettings, createEnvs, saveNormalisation
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.runs import loaded_run, train, train_loop
from rl_baselines.runs.loaded_run import playEpisodes
from srl_toolbox import devices
from srl_toolbox.cli import runCommand
from srl_toolbox.devices import maxThreads
from srl_toolbox.errors import CommandFailed, UsageWarning
from srl_toolbox.files import readJson
from srl_toolbox.settings import plainValue, valueItems, valueText

GT = {"algo": "ppo2", "env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth"}


def cliError(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    """:return: the message ``python -m rl_baselines.train ARGV`` prints after ``error:`` (run in this process)"""

    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        runCommand(train.main, argv)
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0][len("error: "):]


@pytest.mark.parametrize("keywords, argv", [
    ({"algo": "ppo3"}, ["--algo", "ppo3"]),
    ({"env": "NoSuchEnv-v0"}, ["--env", "NoSuchEnv-v0"]),
    ({"algo": "deepq", "srl_model": "ground_truth", "continuous_actions": True},
     ["--algo", "deepq", "--srl-model", "ground_truth", "-c"]),
    ({"num_timesteps": -5}, ["--num-timesteps", "-5"]),
    ({"hyperparams": {"no_such_name": 1}}, ["--hyperparam", "no_such_name:1"]),
])
def test_bad_input_raises_the_commands_message_and_writes_nothing(tmp_path, capsys, keywords, argv):

    log_dir = tmp_path / "logs"
    expected = cliError(["--no-vis", "--no-progress", "--log-dir", str(log_dir), *argv], capsys)
    with pytest.raises(api.UsageError) as error:
        api.makeConfig(log_dir=log_dir, **keywords)
    assert str(error.value) == expected
    with pytest.raises(api.UsageError) as error:
        api.trainAgent(log_dir=log_dir, **keywords)
    assert str(error.value) == expected
    assert not log_dir.exists()
    assert os.listdir(tmp_path) == []


def test_unknown_keywords_and_wrong_kinds_are_one_line_errors(tmp_path, capsys):
    log_dir = tmp_path / "logs"
    expected = cliError(["--no-vis", "--no-progress", "--log-dir", str(log_dir), "--no-such-flag", "3"], capsys)
    with pytest.raises(api.UsageError) as error:
        api.makeConfig(log_dir=log_dir, no_such_flag=3)
    assert str(error.value).startswith(expected + " (not a keyword of algo 'ppo2': its keywords are the flags of ")
    # another algorithm's flag, and a near miss
    with pytest.raises(api.UsageError, match=r"^unrecognized arguments: --ortho-init \(not a keyword of algo 'ppo2'"):
        api.makeConfig(log_dir=log_dir, ortho_init=False, **GT)
    with pytest.raises(api.UsageError, match=r"--num-timestep 5 \(.*; did you mean num_timesteps\?\)$"):
        api.makeConfig(log_dir=log_dir, num_timestep=5, **GT)
    assert api.makeConfig(log_dir=log_dir, algo="ppo_lstm", srl_model="ground_truth", ortho_init=False).args
    assert api.makeConfig(log_dir=log_dir, extra=None, **GT).args.algo == "ppo2"  # None: no extra arguments
    # text as the command line gives it, a path, NumPy's integers and an integer for a number are taken
    taken = api.makeConfig(log_dir=log_dir, num_timesteps=np.int64(256), eval_freq="64", learning_rate=1, **GT).args
    assert (taken.log_dir, taken.num_timesteps, taken.eval_freq) == (str(log_dir), 256, 64)
    assert taken.extra["hp_learning_rate"] == 1.0 and isinstance(taken.extra["hp_learning_rate"], float)
    assert api.makeConfig(log_dir=log_dir, **{**GT, "algo": "ppo1"}, num_workers="2").args.extra["num_workers"] == 2
    # arguments of the wrong kind: named, never a traceback from deep inside, and nothing written
    for call, message in [
        (lambda: api.makeConfig(log_dir=log_dir, hyperparams=["n_steps:64"]), "hyperparams ['n_steps:64'] must be a "
                                                                              "mapping"),
        (lambda: api.makeConfig(log_dir=log_dir, extra="--num-timesteps 5"), "extra '--num-timesteps 5' must be a list"),
        (lambda: api.makeConfig(log_dir=log_dir, vis="no"), "vis 'no' must be True or False"),
        (lambda: api.trainAgent(str(log_dir)), "must be a RunConfig from makeConfig"),
        (lambda: api.evaluateAgent(None), "run None must be a run folder's path, a LoadedRun or a TrainResult"),
        (lambda: api.loadRun(None), "run_dir None must be a run folder's path"),
        # (it was "<run>/srl_model.json: expected str, bytes or os.PathLike object, not int" for a learned-model run)
        (lambda: api.loadRun(log_dir, srl_model_path=5), "srl_model_path 5 must be an SRL model folder's path"),
        (lambda: api.listSRLModels(learned="yes"), "learned 'yes' must be True, False or None"),
        # a value of another kind than the flag reads (it was taken as its text: log_dir=5 wrote under a folder "5")
        (lambda: api.makeConfig(log_dir=5, **GT), "argument --log-dir: log_dir 5 (int) must be a string or a path"),
        (lambda: api.makeConfig(log_dir=[str(log_dir)], **GT), "log_dir ['"),
        (lambda: api.makeConfig(log_dir=log_dir, tag=3, **GT), "argument --tag: tag 3 (int) must be a string or a "
                                                              "path"),
        (lambda: api.makeConfig(log_dir=log_dir, srl_model=("ground_truth",)), "srl_model ('ground_truth',) (tuple) "
                                                                                "must be a string or a path"),
        (lambda: api.makeConfig(resume=log_dir, srl_model_path=5), "srl_model_path 5 (int) must be a string or a path"),
        # an algorithm's own flags (not hyperparameters) are read by its parser too: they were taken as given
        (lambda: api.makeConfig(log_dir=log_dir, lr_schedule=3, **GT), "argument --lr-schedule: invalid choice: '3'"),
        (lambda: api.makeConfig(log_dir=log_dir, **{**GT, "algo": "ppo1"}, num_workers=2.5),
         "argument --num-workers: '2.5' must be a positive integer"),
        (lambda: api.makeConfig(log_dir=log_dir, **{**GT, "algo": "ppo1"}, dist_url=5),
         "argument --dist-url: dist_url 5 (int) must be a string or a path"),
    ]:
        with pytest.raises(api.UsageError, match=re.escape(message)):
            call()
    assert not log_dir.exists()


def test_numpy_values_are_taken_as_the_command_line_takes_their_numbers(tmp_path):
    """makeConfig(img_shape=np.array([3, 48, 48])) was refused ("expected 3 arguments": only lists and tuples were
    read as several values), and a NumPy float (num_timesteps=np.float64(1000), learning_rate=np.float64(1e-3)) as
    its repr ``np.float64(...)``, not a number. An array or a sequence of NumPy numbers is read item by item and a
    NumPy number as the number it is, as the command line reads them; what it refuses is still refused."""
    log_dir = tmp_path / "logs"
    pixels = {**GT, "srl_model": "raw_pixels", "log_dir": log_dir}
    for shape in (np.array([3, 48, 48]), [np.int64(3), 48, 48], (3, np.int32(48), 48)):
        assert api.makeConfig(img_shape=shape, **pixels).args.img_shape == (3, 48, 48)
    taken = api.makeConfig(num_timesteps=np.float64(1000), seed=np.int32(3), learning_rate=np.float64(1e-3),
                           n_steps=np.int64(64), hyperparams={"gamma": np.float64(0.95), "batch_size": np.int64(32)},
                           img_shape=np.array([3, 48, 48]), **pixels)
    assert (taken.args.num_timesteps, taken.args.seed, taken.args.img_shape) == (1000, 3, (3, 48, 48))
    assert (taken.args.extra["hp_learning_rate"], taken.args.extra["hp_n_steps"]) == (1e-3, 64)
    assert taken.args.hyperparams == {"gamma": 0.95, "batch_size": 32}
    assert taken.argv == api.makeConfig(num_timesteps=1000, seed=3, learning_rate=1e-3, n_steps=64,
                                        hyperparams={"gamma": 0.95, "batch_size": 32}, img_shape=[3, 48, 48],
                                        **pixels).argv
    for value, message in [(np.array([3.5, 48, 48]), "argument --img-shape: '3.5' must be a positive integer"),
                           (np.array([[3, 48, 48]]), "argument --img-shape: expected 3 arguments"),
                           (np.array([3, 48]), "argument --img-shape: expected 3 arguments")]:
        with pytest.raises(api.UsageError, match=re.escape(message)):
            api.makeConfig(img_shape=value, **pixels)
    assert not log_dir.exists()


def test_numpy_bools_0d_arrays_and_arrays_of_strings_are_taken_as_their_python_values(tmp_path):
    """makeConfig(no_vis=np.bool_(True)) was refused ("a switch takes True or False, not np.True_"), and so were a 0-d
    array (num_cpu=np.array(2): "num_cpu array(2) (ndarray) must be an integer") and an array of --hyperparam's
    strings (hyperparam=np.array(["n_steps:64"])). They are the Python values they hold: a switch's bool, a number,
    a list of strings; a value of another kind is still refused as before."""
    log_dir = tmp_path / "logs"
    base = {**GT, "log_dir": log_dir}
    taken = api.makeConfig(no_vis=np.bool_(True), continuous_actions=np.bool_(True), num_cpu=np.array(2),
                           seed=np.array(3), hyperparam=np.array(["n_steps:64"]), progress=np.bool_(True), **base)
    assert taken.argv == api.makeConfig(no_vis=True, continuous_actions=True, num_cpu=2, seed=3,
                                        hyperparam=["n_steps:64"], progress=True, **base).argv
    assert (taken.args.no_vis, taken.args.continuous_actions, taken.args.no_progress) == (True, True, False)
    assert (taken.args.num_cpu, taken.args.seed, taken.args.hyperparam) == (2, 3, ("n_steps:64",))
    assert api.makeConfig(continuous_actions=np.array(False), **base).args.continuous_actions is False
    assert api.makeConfig(img_shape=[np.array(3), 48, 48], **{**base, "srl_model": "raw_pixels"}).args.img_shape == (
        3, 48, 48)
    lstm = api.makeConfig(**{**base, "algo": "ppo_lstm"}, ortho_init=np.bool_(False), n_steps=np.array(32))
    assert (lstm.args.hp_ortho_init, lstm.args.hp_n_steps) == (False, 32)
    for keywords, message in [
        ({"no_vis": "yes"}, "argument --no-vis: a switch takes True or False, not 'yes'"),
        ({"no_vis": np.int64(1)}, "argument --no-vis: a switch takes True or False, not np.int64(1)"),
        ({"vis": np.array(1)}, "vis np.int64(1) must be True or False"),
        ({"num_cpu": np.array(2.5)}, "argument --num-cpu: '2.5' must be a positive integer"),
        ({"log_dir": np.array(5)}, "argument --log-dir: log_dir np.int64(5) (int64) must be a string or a path"),
        ({"hyperparam": np.array([3])}, "hyperparam array([3]) must be a list of NAME:VALUE strings"),
        ({"hyperparam": np.array("n_steps:64")}, "hyperparam np.str_('n_steps:64') must be a list of NAME:VALUE"),
    ]:
        with pytest.raises(api.UsageError, match=re.escape(message)):
            api.makeConfig(**{**base, **keywords})
    assert not log_dir.exists()


def test_list_srl_models_takes_a_numpy_bool_as_the_bool_it_holds():
    """listSRLModels(learned=np.bool_(True)) was refused ("learned np.True_ must be True, False or None") although
    makeConfig takes NumPy bools (plainValue); a value of another kind is still refused."""
    for value in (True, False):
        expected = api.listSRLModels(learned=value)
        assert api.listSRLModels(learned=np.bool_(value)) == api.listSRLModels(learned=np.array(value)) == expected
    assert "vae" in api.listSRLModels(learned=np.bool_(True)) and "vae" not in api.listSRLModels(learned=np.False_)
    with pytest.raises(api.UsageError, match=re.escape("learned np.int64(1) must be True, False or None")):
        api.listSRLModels(learned=np.array(1))


def test_torch_tensors_are_taken_as_numpy_arrays_of_their_values(tmp_path):
    """makeConfig(learning_rate=torch.tensor(3e-4)) was refused ("needs a float value, got 'tensor(0.0003)'"), as was
    a tensor for any flag: plainValue unwrapped NumPy's values only. A tensor of one value (0-d or not) is that
    number, float32's written as short as NumPy's float32 is; one of several values gives a flag its items, as a
    NumPy array does."""
    assert plainValue(torch.tensor(3e-4)) == np.float32(3e-4) and valueText(torch.tensor(3e-4)) == "0.0003"
    assert valueText(torch.tensor([3e-4])) == "0.0003" and valueText(torch.tensor([[2]])) == "2"
    assert plainValue(torch.tensor(True)) is True and plainValue(torch.tensor(False)) is False
    assert valueText(torch.tensor(1e-3, requires_grad=True)) == "0.001"
    assert valueItems(torch.tensor([3, 48, 48])) == [3, 48, 48] and valueItems(torch.tensor(3)) is None
    log_dir = tmp_path / "logs"
    pixels = {**GT, "srl_model": "raw_pixels", "log_dir": log_dir}
    taken = api.makeConfig(learning_rate=torch.tensor(3e-4), seed=torch.tensor(3), num_cpu=torch.tensor([2]),
                           no_vis=torch.tensor(True), img_shape=torch.tensor([3, 48, 48]),
                           hyperparams={"gamma": torch.tensor(0.95, dtype=torch.float64)}, **pixels)
    assert taken.argv == api.makeConfig(learning_rate=3e-4, seed=3, num_cpu=2, no_vis=True, img_shape=[3, 48, 48],
                                        hyperparams={"gamma": 0.95}, **pixels).argv
    assert "--learning-rate 0.0003" in " ".join(taken.argv)
    for keywords, message in [({"seed": torch.tensor([1, 2])}, "argument --seed: '[1 2]' is not an integer"),
                              ({"num_cpu": torch.tensor(2.5)}, "argument --num-cpu: '2.5' must be a positive integer"),
                              ({"no_vis": torch.tensor(1)}, "a switch takes True or False, not np.int64(1)")]:
        with pytest.raises(api.UsageError, match=re.escape(message)):
            api.makeConfig(**{**pixels, **keywords})
    assert not log_dir.exists()


def test_flags_pass_through_as_keywords(tmp_path):

    config = api.makeConfig(algo="ppo_lstm", srl_model="ground_truth", log_dir=tmp_path, ortho_init=False,
                            continuous_actions=True, random_target=False, img_shape=[3, 48, 48], learning_rate=1e-4,
                            extra=["--checkpoint-freq", "-1"])
    assert config.args.hp_ortho_init is False and config.args.continuous_actions is True
    assert config.args.random_target is False and "--random-target" not in config.argv
    assert config.args.img_shape is None  # train records what it applied: no image size on a state observation
    assert config.args.hp_learning_rate == 1e-4
    pixels = api.makeConfig(algo="ppo_lstm", srl_model="raw_pixels", log_dir=tmp_path, img_shape=[3, 48, 48])
    assert pixels.args.img_shape == (3, 48, 48) and "--img-shape 3 48 48" in pixels.command
    assert config.args.checkpoint_freq == -1
    assert config.args.no_vis and config.args.no_progress  # the API's defaults
    assert config.command.startswith("python -m rl_baselines.train --algo ppo_lstm --srl-model ground_truth")
    assert "--no-vis" in config.argv and "--no-progress" in config.argv and "--ortho-init false" in config.command
    shown = api.makeConfig(log_dir=tmp_path, vis=True, progress=True)
    assert not shown.args.no_vis and not shown.args.no_progress
    assert os.listdir(tmp_path) == []


def test_the_hyperparam_keyword_is_the_flags_form(tmp_path):
    """``hyperparam=[...]`` is --hyperparam's NAME:VALUE strings, checked as the flag is; it was silently dropped."""
    config = api.makeConfig(log_dir=tmp_path, hyperparam=["n_steps:32", "gamma:0.9"], hyperparams={"gamma": 0.95},
                            **GT)
    assert config.args.hyperparam == ("n_steps:32", "gamma:0.9", "gamma:0.95")  # the mapping's value last: it wins
    assert "--hyperparam n_steps:32 gamma:0.9 gamma:0.95" in config.command
    for bad, message in [(["n_step:3"], "unknown hyperparameter 'n_step'"), (["n_steps:abc"], "needs an int value"),
                         ("n_steps:32", "must be a list of NAME:VALUE strings"), ([3], "must be a list of NAME:VALUE")]:
        with pytest.raises(api.UsageError, match=re.escape(message)):
            api.makeConfig(log_dir=tmp_path, hyperparam=bad, **GT)
    assert os.listdir(tmp_path) == []


def test_bad_input_leaves_torch_threads_alone(capsys):

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        with pytest.raises(api.UsageError):
            train.main(["--algo", "ppo3", "--torch-threads", "1"])
        assert torch.get_num_threads() == 2  # the command sets its threads once the input is checked
        with pytest.raises(api.UsageError):
            api.trainAgent(algo="ppo3", torch_threads=1)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_torch_threads_from_python_are_read_as_the_flag_reads_them(tmp_path, monkeypatch):
    """trainAgent(torch_threads=...) is checked before anything is written, and auto is resolved (0 reached torch);
    a caller with more threads than the machine's CPUs is recorded at the CPUs (the flag's bound)."""
    before = torch.get_num_threads()
    try:
        for bad in (-3, 10 ** 6, "two"):
            with pytest.raises(api.UsageError, match="--torch-threads"):
                api.trainAgent(**GT, num_timesteps=64, log_dir=tmp_path, torch_threads=bad)
        assert not os.path.exists(tmp_path / "MobileRobotGymEnv-v0")
        torch.set_num_threads(2)
        result = api.trainAgent(**GT, num_timesteps=64, log_dir=tmp_path, hyperparams={"n_steps": 16},
                                torch_threads="auto")
        assert result.args.torch_threads == 1  # auto: one thread for an MLP policy
        assert torch.get_num_threads() == 2  # the caller's, put back after training
        monkeypatch.setattr(api.os, "cpu_count", lambda: 1)
        torch.set_num_threads(2)
        assert api.makeConfig(**GT, log_dir=tmp_path).args.torch_threads == 1
    finally:
        torch.set_num_threads(before)


def test_auto_threads_from_python_see_the_features_extractor(tmp_path, monkeypatch):
    """trainAgent(torch_threads="auto") resolves as the command does: maskable_ppo's SmallCNN on raw pixels one
    thread, NatureCNN the process's share of the cores."""
    monkeypatch.setattr(api, "trainValidated", lambda args: args)  # the settings training would get
    monkeypatch.setattr(api, "_passOnStop", lambda result: result)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setattr(devices, "maxThreads", lambda: 4)  # (auto takes at most the machine's CPUs)
    pixels = {"algo": "maskable_ppo", "env": "MobileRobotGymEnv-v0", "srl_model": "raw_pixels", "log_dir": tmp_path}
    for extractor, threads in (("small", 1), ("nature", 3)):
        config = api.makeConfig(**pixels, features_extractor=extractor)
        assert api.trainAgent(config, torch_threads="auto").torch_threads == threads, extractor
    assert not os.path.exists(tmp_path / "MobileRobotGymEnv-v0")


@pytest.fixture(scope="module")
def apiRun(tmp_path_factory):
    """A tiny ppo2 run trained through the API with 2 torch threads set by the caller: (result, threads after)."""

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        result = api.trainAgent(**GT, num_timesteps=256, seed=2, log_dir=tmp_path_factory.mktemp("api_run"),
                                min_episodes_save=1, hyperparams={"n_steps": 64}, num_cpu=1)  # an episode ends
        return result, torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def test_train_leaves_torch_threads_alone(apiRun):
    assert apiRun[1] == 2
    result, _ = apiRun
    assert result.args.torch_threads == 2  # the caller's count, recorded as the run's --torch-threads
    assert readJson(RunFolder(result.run_dir).args_file)["torch_threads"] == 2


def test_train_returns_the_agent_and_its_run_folder(apiRun):

    result, _ = apiRun
    assert result.exit_code == 0 and result.num_timesteps == 256
    assert isinstance(result.model, PPO2Model) and isinstance(result.model, BaseRLObject)
    assert os.path.isfile(os.path.join(result.run_dir, "ppo2_model.zip"))
    assert os.path.isfile(os.path.join(result.run_dir, "args.json"))
    assert result.args.seed == 2 and result.args.no_vis and result.args.no_progress
    assert np.isfinite(result.mean_reward)  # MobileRobot episodes end by 250 steps: at least one in 256
    # the monitor file names the env (SB3's Monitor reads it from the env's spec, as gymnasium.make sets it)
    monitor_dir = RunFolder(result.run_dir).monitor_dir
    with open(os.path.join(monitor_dir, sorted(os.listdir(monitor_dir))[0]), encoding="utf-8") as handle:
        assert json.loads(handle.readline().lstrip("#"))["env_id"] == "MobileRobotGymEnv-v0"


def test_load_acts_like_the_trained_agent(apiRun):

    result, _ = apiRun
    run = api.loadRun(result.run_dir)
    assert type(run.model) is type(result.model) and run.args.algo == "ppo2" and run.srl_model_path is None
    env = run.makeEnv(num_envs=1, seed=0)
    observations = [env.reset()]
    for _ in range(30):
        observation, _, _, _ = env.step(run.model.getAction(observations[-1], deterministic=True))
        observations.append(observation)
    env.close()
    batch = np.concatenate(observations)
    np.testing.assert_allclose(run.model.getActionProba(batch), result.model.getActionProba(batch), rtol=1e-6)
    np.testing.assert_array_equal(run.model.getAction(batch, deterministic=True),
                                  result.model.getAction(batch, deterministic=True))


def test_evaluate_round_trip_is_reproducible_and_leaves_the_generators(apiRun):

    result, _ = apiRun
    monitor_files = sorted(os.listdir(os.path.join(result.run_dir, "monitor")))
    np.random.seed(123)
    torch.manual_seed(123)
    numpy_state, torch_state = np.random.get_state()[1].copy(), torch.get_rng_state().clone()
    sampled = api.evaluateAgent(result, episodes=2, deterministic=False, seed=5)
    assert np.array_equal(np.random.get_state()[1], numpy_state) and torch.equal(torch.get_rng_state(), torch_state)
    loaded = api.loadRun(result.run_dir)
    assert api.evaluateAgent(loaded, episodes=2, deterministic=False, seed=5) == sampled  # same seed, same episodes
    assert len(sampled.episode_rewards) == 2 and all(0 < length <= 250 for length in sampled.episode_lengths)
    assert sampled.mean == pytest.approx(np.mean(sampled.episode_rewards))
    assert sampled.std == pytest.approx(np.std(sampled.episode_rewards))
    greedy = api.evaluateAgent(result.run_dir, episodes=1)
    assert greedy == api.evaluateAgent(loaded, episodes=1)
    assert sorted(os.listdir(os.path.join(result.run_dir, "monitor"))) == monitor_files  # no monitor file written


def test_an_agent_sampling_with_its_own_generator_evaluates_the_same_with_the_same_seed(tmp_path):
    """random_agent samples from its action space's generator: evaluateAgent seeds it (seedActionSampling)."""
    result = api.trainAgent(algo="random_agent", env="MobileRobotGymEnv-v0", num_timesteps=100, log_dir=tmp_path,
                            vis=False)
    loaded = api.loadRun(result.run_dir)
    first = api.evaluateAgent(loaded, episodes=2, seed=3)
    assert api.evaluateAgent(loaded, episodes=2, seed=3) == first
    assert api.evaluateAgent(result.run_dir, episodes=2, seed=3) == first
    assert api.evaluateAgent(loaded, episodes=2, seed=4) != first


def test_load_and_evaluate_errors(tmp_path, apiRun):

    with pytest.raises(api.UsageError, match=r"^run_dir '.*' holds no run \(no args.json\)"):
        api.loadRun(tmp_path)
    # a folder inside a run (its monitor/, a checkpoint's) said only "holds no run": it names the run
    run_dir = apiRun[0].run_dir
    with pytest.raises(api.UsageError, match=rf"^run_dir '.*monitor' is monitor/ inside the run {re.escape(run_dir)}, "
                                             rf"not a run folder: give run_dir={re.escape(run_dir)}$"):
        api.loadRun(os.path.join(run_dir, "monitor"))
    with pytest.raises(api.UsageError, match=r"^unknown saved model 'worst'; valid choices: latest, best$"):
        api.loadRun(apiRun[0].run_dir, which="worst")
    with pytest.raises(api.UsageError, match=r"^episodes 0 must be a positive integer$"):
        api.evaluateAgent(apiRun[0], episodes=0)
    with pytest.raises(api.UsageError, match=r"^seed -1 must be an integer in 0\.\.4294967295$"):
        api.evaluateAgent(apiRun[0], seed=-1)
    # deterministic="no" was truthy: the agent played deterministically, the opposite of what was meant
    with pytest.raises(api.UsageError, match=r"^deterministic 'no' must be True or False$"):
        api.evaluateAgent(apiRun[0], deterministic="no")
    # NumPy's integers count, as in SB3's evaluate_policy
    assert len(api.evaluateAgent(apiRun[0], episodes=np.int64(2), seed=np.int64(0)).episode_rewards) == 2
    # LoadedRun.makeEnv checks what evaluateAgent checks (they failed deep in SB3 or gymnasium, four ways)
    loaded = api.loadRun(apiRun[0].run_dir)
    for keywords, message in (({"num_envs": 0}, r"^num_envs 0 must be a positive integer$"),
                              ({"num_envs": 1.5}, r"^num_envs 1\.5 must be a positive integer$"),
                              ({"seed": -1}, r"^seed -1 must be an integer in 0\.\.4294967295$"),
                              ({"seed": "a"}, r"^seed 'a' must be an integer in 0\.\.4294967295$")):
        with pytest.raises(ValueError, match=message):
            loaded.makeEnv(**keywords)


class _FixedLengthEnv(gym.Env):
    """Episodes of ``length`` steps, reward 1 per step."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int) -> None:
        self.length, self.steps = length, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        self.steps += 1
        return np.zeros(1, dtype=np.float32), 1.0, False, self.steps >= self.length, {}


class _ZeroAgent:
    """Always action 0; remembers the ``dones`` of its first call."""

    def __init__(self) -> None:
        self.first_dones = None

    def getAction(self, observation, dones=None, deterministic=False):
        if self.first_dones is None:
            self.first_dones = np.array(dones)
        return np.zeros(len(observation), dtype=int)


def test_play_episodes_shares_them_out_among_envs():
    """Short episodes of one env must not fill the count: each env plays its share."""
    env = DummyVecEnv([lambda: _FixedLengthEnv(2), lambda: _FixedLengthEnv(7)])
    agent = _ZeroAgent()
    rewards, lengths = playEpisodes(agent, env, 5)
    assert sorted(lengths) == [2, 2, 7, 7, 7] and rewards == [float(length) for length in lengths]
    assert agent.first_dones.tolist() == [True, True]  # recurrent agents start a fresh state


def test_package_exports_the_api_lazily():

    assert set(rl_baselines._API_NAMES) == set(api.__all__)
    assert rl_baselines.trainAgent is api.trainAgent and "loadRun" in dir(rl_baselines)
    with pytest.raises(AttributeError):
        rl_baselines.noSuchName  # noqa: B018
    code = "import sys, rl_baselines.train; print('rl_baselines.api' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                         env={**os.environ, "PYTHONPATH": REPO})
    assert out.stdout.strip() == "False", out.stderr


def test_a_diverged_run_raises_training_diverged(tmp_path) -> None:
    with pytest.raises(rl_baselines.TrainingDiverged, match="training diverged by step 64: the policy's parameters"):
        rl_baselines.trainAgent(algo="ppo2", srl_model="ground_truth", num_timesteps=256, hyperparam=["n_steps:16"],
                                learning_rate=1e20, log_dir=str(tmp_path))
    assert issubclass(rl_baselines.TrainingDiverged, CommandFailed)  # the command's one error: line, exit 1


def test_a_flag_that_does_nothing_is_one_line_in_the_api(tmp_path) -> None:
    """A warning about the user's input prints as the commands print it, without the toolbox's source line."""
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        api.makeConfig(algo="sac", srl_model="ground_truth", log_dir=tmp_path, continuous_actions=True,
                       img_shape=[3, 48, 48])
    [record] = [record for record in records if "--img-shape" in str(record.message)]
    assert issubclass(record.category, UsageWarning)
    assert warnings.formatwarning(record.message, record.category, record.filename, record.lineno) == (
        "warning: --img-shape 3 48 48 sizes camera images; it does nothing for an observation that is not camera "
        "images (--srl-model raw_pixels or a learned model)\n")


def test_every_example_of_the_docs_runs(tmp_path, monkeypatch, capsys):
    """The python blocks of docs/python_api.md, in order, in one namespace, in an empty folder."""

    with open(os.path.join(REPO, "docs", "python_api.md"), encoding="utf-8") as handle:
        text = handle.read()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    assert len(blocks) >= 8
    examples = "\n".join(blocks)
    functions = [name for name in api.__all__ if name[0].islower()] + ["UsageError"]
    for name in functions:  # each function of the API appears in an example that runs
        assert re.search(rf"\b{name}\(|rl\.{name}\b", examples), name
    monkeypatch.chdir(tmp_path)
    threads = torch.get_num_threads()
    namespace: dict = {"__name__": "docs_example"}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UsageWarning)  # an example whose flag does nothing shows the wrong thing
            for index, block in enumerate(blocks):
                exec(compile(block, f"docs/python_api.md block {index + 1}", "exec"), namespace)
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "unknown --algo 'ppo3'; valid choices: a2c" in out
    assert "Already finished (256 steps): nothing to resume" in out
    assert namespace["result"].exit_code == 0 and namespace["scores"].episode_rewards
    assert sorted(os.listdir(tmp_path)) == ["data", "logs"]
    shown = re.search(r"^print\(config\.command\)\n# (.*)$", text, flags=re.MULTILINE).group(1)
    thread_flag = re.compile(r"--torch-threads \d+")  # (the calling process's: the page's is a 2-core machine's)
    assert thread_flag.sub("", shown) == thread_flag.sub("", namespace["config"].command)  # it left out --num-cpu 4


def test_resume_refuses_the_settings_it_takes_from_the_run(tmp_path) -> None:
    # they were dropped silently: trainAgent(resume=RUN, num_timesteps=5000) resumed to the run's own budget
    result = api.trainAgent(algo="ppo2", env="MobileRobotGymEnv-v0", srl_model="ground_truth", num_timesteps=128,
                            log_dir=str(tmp_path), hyperparams={"n_steps": 64})
    for keywords, flag in [({"num_timesteps": 5000}, "--num-timesteps"), ({"seed": 9}, "--seed"),
                           ({"algo": "sac"}, "--algo"), ({"hyperparams": {"gamma": 0.5}}, "--hyperparam")]:
        with pytest.raises(api.UsageError, match=flag):
            api.makeConfig(resume=result.run_dir, **keywords)
    assert api.makeConfig(resume=result.run_dir).plan.state == "finished"
    # False leaves a flag out, as makeConfig reads it without resume
    assert api.makeConfig(resume=result.run_dir, continuous_actions=False, device="cpu").plan.state == "finished"


def test_a_second_ctrl_c_before_the_first_step_saves_nothing_and_exits_130(tmp_path, monkeypatch, capsys) -> None:
    # it ended with exit 1, "error: the model was not saved in RUN: AttributeError: 'NoneType' object has no
    # attribute 'save'", and a TrainResult whose half-built model failed in evaluateAgent
    def interruptedSetUp(*_args, **_kwargs):
        raise KeyboardInterrupt  # the second Ctrl-C, while the model is being built

    monkeypatch.setattr(train_loop, "trainAlgorithm", interruptedSetUp)
    argv = ["--no-vis", "--no-progress", "--log-dir", str(tmp_path / "cli"), "--num-timesteps", "64",
            *[part for name, value in GT.items() for part in (f"--{name.replace('_', '-')}", value)]]
    with pytest.raises(SystemExit) as exit_info:
        runCommand(train.main, argv)
    captured = capsys.readouterr()
    assert exit_info.value.code == 130 and "error" not in captured.err, captured.err
    assert "Interrupted: 0 steps" in captured.out
    with pytest.raises(api.TrainingInterrupted) as stopped:  # passed on, as Python passes a Ctrl-C on
        api.trainAgent(**GT, num_timesteps=64, log_dir=tmp_path / "api", hyperparams={"n_steps": 16})
    result = stopped.value.result
    assert result.exit_code == 130 and result.model is None and result.num_timesteps == 0
    assert os.path.isfile(RunFolder(result.run_dir).args_file)
    assert not os.path.exists(os.path.join(result.run_dir, "ppo2_model.zip"))
    with pytest.raises(api.UsageError, match=r"^run '.*' has no trained agent: it was stopped \(exit 130\) before"):
        api.evaluateAgent(result)
    with pytest.raises(api.UsageError):
        api.loadRun(result.run_dir)
    monkeypatch.undo()
    again = api.trainAgent(resume=result.run_dir)  # a run without a checkpoint: trained again from the start
    assert again.exit_code == 0 and again.num_timesteps == 64
    assert "No checkpoint to resume from" in capsys.readouterr().out


def test_load_and_evaluate_of_a_run_folder_leave_the_generators(apiRun) -> None:
    # SB3's load seeded them with the run's seed: evaluateAgent(RUN_DIR) and loadRun changed the caller's streams
    result, _ = apiRun
    random.seed(123)
    np.random.seed(123)
    torch.manual_seed(123)
    states = random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state().clone()
    api.loadRun(result.run_dir)
    api.evaluateAgent(result.run_dir, episodes=1)
    assert random.getstate() == states[0] and np.array_equal(np.random.get_state()[1], states[1])
    assert torch.equal(torch.get_rng_state(), states[2])


def test_resume_false_or_none_is_left_out_and_a_wrong_kind_is_a_usage_error(tmp_path) -> None:
    # None and False raised TypeError from os.fspath, as did 5
    for value in (None, False):
        assert api.makeConfig(**GT, log_dir=tmp_path, resume=value).plan is None
    with pytest.raises(api.UsageError, match=r"^resume 5 must be a run folder's path$"):
        api.makeConfig(**GT, log_dir=tmp_path, resume=5)
    with pytest.raises(api.UsageError, match=r"^resume True must be a run folder's path$"):
        api.trainAgent(**GT, log_dir=tmp_path, resume=True)
    assert os.listdir(tmp_path) == []
    assert api.trainAgent(**GT, num_timesteps=64, log_dir=tmp_path, hyperparams={"n_steps": 16},
                          resume=None).exit_code == 0


def test_training_and_evaluating_put_the_callers_thread_count_back(tmp_path) -> None:
    # a caller's count above the machine's CPUs was recorded at the CPUs and left so after training
    before = torch.get_num_threads()
    caller = maxThreads() + 2
    try:
        torch.set_num_threads(caller)
        result = api.trainAgent(**GT, num_timesteps=64, log_dir=tmp_path, hyperparams={"n_steps": 16})
        assert result.args.torch_threads == maxThreads() and torch.get_num_threads() == caller
        again = api.trainAgent(**GT, num_timesteps=64, log_dir=tmp_path, hyperparams={"n_steps": 16}, torch_threads=1)
        assert again.args.torch_threads == 1 and torch.get_num_threads() == caller
        torch.set_num_threads(1)
        api.evaluateAgent(result.run_dir, episodes=1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_make_env_refuses_env_kwargs_the_agent_cannot_act_on(apiRun, monkeypatch) -> None:
    # {"srl_model": "raw_pixels"} gave images without the run's VecNormalize, {"is_discrete": False} a Box action space
    # for a Discrete agent: both failed only when the agent acted
    run = api.loadRun(apiRun[0].run_dir)
    closed = []
    close = DummyVecEnv.close
    monkeypatch.setattr(DummyVecEnv, "close", lambda self: (closed.append(self), close(self))[1])
    box = r"Box\(-4\.0, 4\.0, \(2,\), float32\)"
    with pytest.raises(ValueError, match=rf"^env_kwargs \{{'srl_model': 'raw_pixels'\}} change the observation space: "
                                         rf"the agent takes {box}, the env gives Box\(0, 255, \(64, 64, 3\), uint8\)$"):
        run.makeEnv(seed=0, env_kwargs={"srl_model": "raw_pixels"})
    with pytest.raises(ValueError, match=r"^env_kwargs \{'is_discrete': False\} change the action space: the agent "
                                         r"takes Discrete\(4\), the env gives Box\(-1\.0, 1\.0, \(2,\), float32\)$"):
        run.makeEnv(env_kwargs={"is_discrete": False})
    assert len(closed) == 2  # the envs built are closed
    # an agent that does not say what it observes: the run's normalisation left out is refused all the same
    monkeypatch.setattr(loaded_run, "agentObservationSpace", lambda _agent: None)
    with pytest.raises(ValueError, match=r"^env_kwargs \{'srl_model': 'raw_pixels'\} leave out the run's observation "
                                         r"normalisation \(.*vecnormalize\.npz\): the agent acts on normalised"):
        run.makeEnv(env_kwargs={"srl_model": "raw_pixels"})
    assert len(closed) == 3
    env = run.makeEnv(env_kwargs={"render_mode": "rgb_array"})  # keywords that leave the spaces alone
    try:
        assert env.observation_space.shape == (2,) and env.render_mode == "rgb_array"
        env.step(run.model.getAction(env.reset(), deterministic=True))
    finally:
        env.close()


def test_make_env_refuses_a_keyword_the_env_does_not_take_before_building_it(apiRun, monkeypatch) -> None:
    """A keyword the env's constructor does not take (a typo: ``rendres``) was a TypeError from deep in the env's
    constructor, and with ``num_envs=2`` a ConnectionResetError after the subprocesses' tracebacks; ``env_kwargs``
    given as a string a TypeError. Both are now one-line ValueErrors, before any env is built, listing the keywords
    the env takes; an env whose constructors all take ``**kwargs`` is not second-guessed."""
    run = api.loadRun(apiRun[0].run_dir)
    class Built(Exception):
        pass

    def building(*args: object, **kwargs: object) -> None:
        raise Built()

    monkeypatch.setattr(loaded_run, "makeEnv", building)
    with pytest.raises(ValueError, match=r"^env_kwargs: MobileRobotGymEnv-v0 takes no keyword 'rendres'; valid "
                                         r"keywords: .*\brender_mode, render_size, renderer, renders\b"):
        run.makeEnv(num_envs=2, env_kwargs={"rendres": True})
    with pytest.raises(ValueError, match=r"^env_kwargs 'renders' must be a mapping of env constructor keywords"):
        run.makeEnv(env_kwargs="renders")

    class Open:  # a plugin env whose every constructor passes unknown keywords on
        def __init__(self, size: int = 1, **kwargs: object) -> None:
            pass

    monkeypatch.setattr(loaded_run, "getEnvClass", lambda _env: Open)
    with pytest.raises(Built):  # passed the check: the env is built
        run.makeEnv(env_kwargs={"anything": 1})


def test_make_env_with_a_bad_keyword_value_in_several_envs_is_the_envs_own_error(apiRun) -> None:
    """A keyword the env takes with a value its constructor refuses (``render_mode='human2'``) was the env's clear
    ValueError with one env, and with ``num_envs=2`` the workers' tracebacks and a ConnectionResetError: each worker
    now reports its env's error, which the parent raises, the live workers closed; so does a worker other than the
    first (its envs were returned, to fail at their first step)."""
    run = api.loadRun(apiRun[0].run_dir)
    message = r"^unknown render_mode 'human2' for MobileRobotGymEnv; valid choices: rgb_array, human$"
    for num_envs in (1, 2):
        with pytest.raises(ValueError, match=message):
            run.makeEnv(num_envs=num_envs, env_kwargs={"render_mode": "human2"})
    good = {**run.settings.env_kwargs, "render_mode": "rgb_array"}
    thunks = [functools.partial(factory.makeSingleEnv, GT["env"], kwargs, rank)
              for rank, kwargs in enumerate([good, {**good, "render_mode": "human2"}])]
    processes = multiprocessing.active_children()
    with pytest.raises(ValueError, match=message):
        factory._subprocEnvs(thunks)
    assert multiprocessing.active_children() == processes  # the first env's worker closed


def test_the_first_load_run_of_a_process_leaves_pythons_random_state(apiRun) -> None:
    # the API's first use imported rich (through SB3's progress bar), which draws from random at import time
    code = ("import random, rl_baselines as rl; random.seed(42); rl.loadRun(__import__('sys').argv[1]); "
            "print(random.random())")
    out = subprocess.run([sys.executable, "-c", code, apiRun[0].run_dir], capture_output=True, text=True, cwd=REPO,
                         timeout=300, env={**os.environ, "PYTHONPATH": REPO})
    random.seed(42)
    assert out.stdout.strip() == repr(random.random()), out.stderr


def test_normalisation_that_does_not_fit_closes_the_env_built(tmp_path, monkeypatch) -> None:
    # the env (a PyBullet connection, or env subprocesses) was left open when the saved statistics did not fit
    saveNormalisation(VecNormalize(DummyVecEnv([lambda: _FixedLengthEnv(2)])), str(tmp_path))  # observations (1,)
    closed = []
    close = DummyVecEnv.close
    monkeypatch.setattr(DummyVecEnv, "close", lambda self: (closed.append(self), close(self))[1])
    with pytest.raises(ValueError, match=r"vecnormalize\.npz is for observations of shape \(1,\)$"):
        createEnvs(VecEnvSettings("MobileRobotGymEnv-v0", 1, 0, "ground_truth"), load_path_normalise=str(tmp_path))
    assert len(closed) == 1
