"""Train end to end through the command line, as a user would: every built-in algorithm, action kind and
observation mode, with two parallel envs; then save/load, continuing a saved model, and replay."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import runFolder, runModule, runTrain, trainArgs, trainSettings
from PIL import Image
from stable_baselines3.common.callbacks import BaseCallback

from rl_baselines.core.registry import registered_rl
from rl_baselines.envs.factory import createEnvs, findVecNormalize
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.rl_algorithm.random_agent import RandomAgentModel
from rl_baselines.runs.train_checks import algorithmParser, baseParser

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

PIXEL_SHAPE = ("3", "40", "40")


# Every pair of (algorithm, actions), (algorithm, observation) and (actions, observation) once: 6 runs, not the 12 of
# the full product.
END_TO_END = [("ppo2", False, "ground_truth"), ("ppo2", True, "raw_pixels"), ("a2c", False, "raw_pixels"),
              ("a2c", True, "ground_truth"), ("random_agent", False, "raw_pixels"), ("random_agent", True, "ground_truth")]


@pytest.mark.parametrize("algo,continuous,srl_model", END_TO_END)
def test_train_end_to_end(tmp_path, algo, continuous, srl_model):
    args = ["--algo", algo, "--env", "MobileRobotGymEnv-v0", "--srl-model", srl_model, "--num-cpu", "2",
            "--num-timesteps", "500", "--log-dir", tmp_path, "--min-episodes-save", "1", "--img-shape", *PIXEL_SHAPE]
    if algo == "ppo2":
        args += ["--hyperparam", "n_steps:64"]  # several updates within the tiny budget
    if continuous:
        args.append("-c")
    run_dir = runFolder(runTrain(*args))
    assert os.path.dirname(run_dir) == os.path.join(str(tmp_path), "MobileRobotGymEnv-v0", srl_model, algo)
    saved = json.load(open(os.path.join(run_dir, "args.json")))
    assert saved["algo"] == algo and saved["continuous_actions"] is continuous and saved["num_cpu"] == 2
    env_globals = json.load(open(os.path.join(run_dir, "env_globals.json")))
    assert env_globals["constants"]["MAX_STEPS"] == 250
    assert env_globals["env_kwargs"]["srl_model"] == srl_model
    # one monitor file per env, each with a finished episode (500 steps over 2 envs: one 250-step episode each)
    for rank in (0, 1):
        lines = open(os.path.join(run_dir, "monitor", f"{rank}.monitor.csv")).read().splitlines()
        assert lines[0].startswith("#{") and lines[1].startswith("r,l,t")
        assert len(lines) >= 3
    extension = ".json" if algo == "random_agent" else ".zip"
    for folder in (run_dir, os.path.join(run_dir, "best")):
        assert os.path.isfile(os.path.join(folder, f"{algo}_model{extension}"))
        # normalisation statistics beside every model, only for low-dimensional observations
        assert os.path.isfile(os.path.join(folder, "vecnormalize.npz")) == (srl_model == "ground_truth")
    assert os.listdir(os.path.join(run_dir, "checkpoints"))
    assert os.path.isfile(os.path.join(run_dir, "learning_curve.png"))
    if algo != "random_agent":
        assert os.path.isfile(os.path.join(run_dir, "progress.csv"))


def test_a_run_that_finished_no_episode_says_so(tmp_path):
    stdout = runTrain("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                      "--num-timesteps", "64", "--hyperparam", "n_steps:16", "--log-dir", tmp_path).stdout  # x 4 envs
    assert "Done: 64 steps, 0 episodes, mean reward (last 100) n/a (no episode finished)" in stdout  # not "nan"
    assert "No learning_curve.png: no training episode finished\n" in stdout  # (not a word, and no file)


def _trainInProcess(algo_class, tmp_path, callback=None, algo=None, **overrides) -> tuple:

    parser = algorithmParser(algo_class, baseParser())  # (--num-cpu at the algorithm's default)
    args = trainArgs(**vars(parser.parse_args(["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                                               "--num-timesteps", "256", "--log-dir", str(tmp_path)])))
    for key, value in overrides.items():
        setattr(args, key, value)
    algo = algo or algo_class()
    hyperparams = algo_class.parserHyperParam({"n_steps": "64"}) if hasattr(algo_class, "SB3_CLASS") else {}
    settings = trainSettings(args, hyperparams)  # plugin API v2: env, budget, hyperparameters, settings
    env = algo_class.makeTrainingEnv(settings)
    algo.train(env, args.num_timesteps, algo_class.resolveHyperparams(settings, hyperparams),
               callback or (lambda _locals, _globals: True), None, settings)
    return algo, args


def test_a_model_saved_at_a_step_keeps_the_episodes_that_ended_there(tmp_path):
    """SB3 adds a step's finished episodes to its episode buffer after the step's callbacks: a checkpoint written by
    one (a stop signal's) must hold them, or a run resumed from it leaves them out of every later rollout/ep_* mean."""
    saved = []

    class SaveWhenAnEpisodeEnds(BaseCallback):
        def _on_step(self) -> bool:
            if not saved and any("episode" in info for info in self.locals["infos"]):
                path = str(tmp_path / "at_episode_end" / "ppo2_model.zip")
                algo.save(path)
                saved.append((path, len(self.model.ep_info_buffer)))
            return True

    algo = PPO2Model()
    _trainInProcess(PPO2Model, tmp_path, callback=SaveWhenAnEpisodeEnds(), algo=algo, num_timesteps=512, num_cpu=1)
    (path, live_count), = saved
    assert live_count == 0  # SB3 had not added the episode yet
    assert len(PPO2Model.load(path).model.ep_info_buffer) == 1  # the saved model has it
    assert len(algo.model.ep_info_buffer) == 2  # episodes of 250 steps: each counted once in training


@pytest.mark.parametrize("algo_name", ["ppo2", "a2c"])
def test_save_load_gives_same_actions(tmp_path, algo_name):

    algo_class = registered_rl[algo_name][0]
    algo, args = _trainInProcess(algo_class, tmp_path)
    model_path = str(tmp_path / "saved" / f"{algo_name}_model.zip")
    algo.save(model_path)
    loaded = algo_class.load(model_path)
    observations = np.random.default_rng(0).normal(size=(32, 2)).astype(np.float32)
    np.testing.assert_array_equal(algo.getAction(observations, deterministic=True),
                                  loaded.getAction(observations, deterministic=True))
    np.testing.assert_allclose(algo.getActionProba(observations), loaded.getActionProba(observations))
    # the replay env restores the training normalisation exactly, frozen
    replay_env = createEnvs(args, load_path_normalise=str(tmp_path / "saved"))

    trained, restored = findVecNormalize(algo.env), findVecNormalize(replay_env)
    np.testing.assert_array_equal(trained.obs_rms.mean, restored.obs_rms.mean)
    np.testing.assert_array_equal(trained.obs_rms.var, restored.obs_rms.var)
    assert restored.training is False
    replay_env.close()


def test_random_agent_round_trip(tmp_path):

    algo, args = _trainInProcess(RandomAgentModel, tmp_path, continuous_actions=True)
    path = str(tmp_path / "random_agent_model.json")
    algo.save(path)
    first = RandomAgentModel.load(path, trainSettings(trainArgs(seed=5)))
    second = RandomAgentModel.load(path, trainSettings(trainArgs(seed=5)))
    observations = np.zeros((4, 2), dtype=np.float32)
    actions = first.getAction(observations)
    assert actions.shape == (4, 2) and np.all(np.abs(actions) <= 1)
    np.testing.assert_array_equal(actions, second.getAction(observations))
    assert algo.num_timesteps >= 256 and first.num_timesteps == algo.num_timesteps


def test_continue_training_from_saved_model(tmp_path, trainedRun):

    first = PPO2Model.load(os.path.join(trainedRun, "ppo2_model.zip"))
    # the model named relative to the working folder, as a user in the folder of their runs would
    model_path = os.path.join(trainedRun, "ppo2_model.zip")
    result = runTrain("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                      "--num-timesteps", "512", "--log-dir", tmp_path, "--checkpoint-freq", "-1",
                      "--load-rl-model-path", os.path.relpath(model_path, os.path.dirname(trainedRun)),
                      cwd=os.path.dirname(trainedRun))
    run_dir = runFolder(result)
    continued = PPO2Model.load(os.path.join(run_dir, "ppo2_model.zip"))
    # the step counter goes on from the saved model, and the weights moved on from it
    assert continued.num_timesteps >= first.num_timesteps + 512
    before = first.model.policy.state_dict()
    after = continued.model.policy.state_dict()
    assert any(not np.allclose(before[k].numpy(), after[k].numpy()) for k in before)
    # args.json records the model's path absolute: a run killed before its first save starts again from step 0 with
    # --resume from any folder (a relative path, recorded as given, was looked for in the folder of the --resume)
    assert json.load(open(os.path.join(run_dir, "args.json")))["load_rl_model_path"] == model_path
    for name in ("ppo2_model.zip", "manifest.json", "vecnormalize.npz"):
        os.remove(os.path.join(run_dir, name))  # (as killed before its first save: no checkpoint with -1)
    resumed = runTrain("--resume", run_dir, cwd=str(tmp_path))
    assert "No checkpoint to resume from: training again from the start" in resumed.stdout, resumed.stdout
    assert PPO2Model.load(os.path.join(run_dir, "ppo2_model.zip")).num_timesteps == continued.num_timesteps


def test_enjoy_replays_and_writes_gif(tmp_path, trainedRun):
    gif = tmp_path / "replay.gif"
    result = runModule("replay.enjoy_baselines", "--log-dir", trainedRun, "--num-timesteps", "250",
                       "--deterministic", "--video", gif)
    assert result.returncode == 0, result.stderr
    assert "Mean episode reward over 1 episode:" in result.stdout
    image = Image.open(gif)
    assert image.n_frames == 250  # one whole episode, its last frame included
    frames = []
    for index in (0, 150):
        image.seek(index)
        frames.append(np.asarray(image.convert("RGB"), dtype=np.int16))
    assert frames[0].std() > 5, "blank frame"
    assert np.abs(frames[0] - frames[1]).sum() > 0, "the robot never moved"


def test_enjoy_best_model_and_mp4(tmp_path, trainedRun):
    video = tmp_path / "replay.mp4"
    result = runModule("replay.enjoy_baselines", "--log-dir", trainedRun, "--num-timesteps", "20", "--model", "best",
                       "--video", video)
    assert result.returncode == 0, result.stderr
    assert video.stat().st_size > 1000


def test_help_lists_algorithms_and_their_flags():
    result = runModule("rl_baselines.train", "--algo", "a2c", "--help")
    assert result.returncode == 0
    assert "ppo2" in result.stdout and "random_agent" in result.stdout and "MobileRobotGymEnv-v0" in result.stdout
    assert "maskable_ppo" in result.stdout
    assert "--rms-prop-eps" in result.stdout and "--n-steps" in result.stdout
