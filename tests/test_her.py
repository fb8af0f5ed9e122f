"""her: the goal-conditioned mode of MobileRobot and Kuka envs (Dict spaces, check_env, compute_reward equal to the
step reward), and the her algorithm: a sac run that enjoy_baselines replays and that training continues from,
save/load giving the same actions, a her+deepq run that learns MobileRobot, and bad combinations refused (exit 2)."""
from __future__ import annotations

import json
import os
import warnings
import zipfile

import numpy as np
import pytest
from conftest import interruptThenResume, runFolder, runModule, runTrain, trainHere
from stable_baselines3.common.env_checker import check_env

import rl_baselines as rl
from environments.kuka.kuka_2button_env import Kuka2ButtonGymEnv
from environments.kuka.kuka_button_env import KukaButtonGymEnv
from environments.mobile_robot.mobile_robot_1D_env import MobileRobot1DGymEnv
from environments.mobile_robot.mobile_robot_2target_env import MobileRobot2TargetGymEnv
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from environments.mobile_robot.mobile_robot_line_target_env import MobileRobotLineTargetGymEnv
from rl_baselines.rl_algorithm.her import BASE_ALGOS, HER_DEFAULTS, HERModel
from rl_baselines.runs.train import main
from srl_toolbox.cli import UsageError

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]
GOAL_KEYS = {"observation", "achieved_goal", "desired_goal"}


def _goalEnv(env_class: type, **kwargs):
    return env_class(srl_model="ground_truth", goal_conditioned=True, seed=0, **kwargs)


# --- the env's goal mode ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_class,kwargs", [
    (MobileRobotGymEnv, {"is_discrete": True}), (MobileRobotGymEnv, {"is_discrete": False, "shape_reward": True}),
    (MobileRobot1DGymEnv, {}), (MobileRobotLineTargetGymEnv, {"random_target": True}),
    (KukaButtonGymEnv, {"is_discrete": False}),
], ids=["mobile-discrete", "mobile-continuous-shaped", "mobile-1d", "line-target", "kuka"])
def test_goal_mode_spaces_and_check_env(env_class, kwargs):
    env = _goalEnv(env_class, **kwargs)
    try:
        assert set(env.observation_space.spaces) == GOAL_KEYS
        observation, _ = env.reset(seed=1)
        assert env.observation_space.contains(observation)
        # absolute positions, although relative_pos is on by default: HER swaps the goal, the observation stays
        assert env.relative_pos
        np.testing.assert_array_equal(observation["observation"], env.getRobotPos())
        np.testing.assert_array_equal(observation["achieved_goal"], env.getRobotPos())
        np.testing.assert_array_equal(observation["desired_goal"], env.getTargetPos())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(env)  # Dict keys, compute_reward single and batched equal to the step reward
    finally:
        env.close()


def test_plain_mode_is_no_goal_env():
    env = MobileRobotGymEnv(srl_model="ground_truth")
    try:
        assert not hasattr(env, "compute_reward")  # check_env would take it for a goal env
    finally:
        env.close()


@pytest.mark.parametrize("env_class,kwargs,words", [
    (MobileRobotGymEnv, {"srl_model": "raw_pixels"}, ["'raw_pixels'", "valid choices: ground_truth"]),
    (KukaButtonGymEnv, {"srl_model": "joints"}, ["'joints'", "valid choices: ground_truth"]),
    (MobileRobot2TargetGymEnv, {"srl_model": "ground_truth"}, ["MobileRobot2TargetGymEnv", "no goal_conditioned"]),
    (Kuka2ButtonGymEnv, {"srl_model": "ground_truth"}, ["Kuka2ButtonGymEnv", "no goal_conditioned"]),
])
def test_goal_mode_refused(env_class, kwargs, words):
    with pytest.raises(ValueError) as error:
        env_class(goal_conditioned=True, **kwargs)
    for word in words:
        assert word in str(error.value)


def _scriptedEpisode(env, steps: int = 80) -> tuple[list, list, list]:
    """Discrete moves: into the x=0 wall (bumps), then greedily to the target and around it."""
    rewards, infos, observations = [], [], []
    env.reset(seed=3)
    for step in range(steps):
        if step < 20:
            action = 0
        else:
            dx, dy = env.getTargetPos() - env.getRobotPos()
            action = (1 if dx > 0 else 0) if abs(dx) >= abs(dy) else (3 if dy > 0 else 2)
        observation, reward, _, _, info = env.step(action)
        rewards.append(reward)
        infos.append(info)
        observations.append(observation)
    return observations, rewards, infos


@pytest.mark.parametrize("shape_reward", [False, True])
def test_goal_rewards_match_plain_env(shape_reward):
    plain = MobileRobotGymEnv(srl_model="ground_truth", shape_reward=shape_reward, seed=0)
    goal = _goalEnv(MobileRobotGymEnv, shape_reward=shape_reward)
    try:
        _, plain_rewards, plain_infos = _scriptedEpisode(plain)
        observations, rewards, infos = _scriptedEpisode(goal)
    finally:
        plain.close()
        goal.close()
    # the same episode: goal mode keeps the env's reward (float32 goals: equal up to rounding when shaped)
    np.testing.assert_allclose(rewards, plain_rewards, atol=1e-6)
    if not shape_reward:
        assert {-1.0, 0.0, 1.0} <= set(rewards), "the script must bump, travel and reach"
        assert [info["is_success"] for info in infos] == [info["is_success"] for info in plain_infos]
    # compute_reward over the whole batch of transitions gives the step rewards exactly
    achieved = np.array([obs["achieved_goal"] for obs in observations])
    desired = np.array([obs["desired_goal"] for obs in observations])
    batch = goal.compute_reward(achieved, desired, np.array(infos))
    assert batch.shape == (len(rewards),)
    np.testing.assert_array_equal(batch, rewards)
    if not shape_reward:
        # the bump's -1 is read from the info (it does not depend on the goal): HER keeps it for any goal
        bumps = np.array([info["bumped"] for info in infos])
        assert bumps.any()
        relabelled = goal.compute_reward(achieved, achieved, np.array(infos))
        np.testing.assert_array_equal(relabelled, np.where(bumps, -1.0, 1.0))
        np.testing.assert_array_equal(goal.compute_reward(achieved, achieved, None), np.ones(len(rewards)))


def test_kuka_goal_reward():
    env = _goalEnv(KukaButtonGymEnv, is_discrete=False)
    try:
        env.reset(seed=0)
        steps = [env.step(env.action_space.sample()) for _ in range(5)]
        achieved = np.array([step[0]["achieved_goal"] for step in steps])
        desired = np.array([step[0]["desired_goal"] for step in steps])
        np.testing.assert_array_equal(env.compute_reward(achieved, desired, [step[4] for step in steps]),
                                      [step[1] for step in steps])
        target = env.getTargetPos()
        offsets = np.array([[0.0, 0.0, 0.0], [0.01, 0.0, 0.0], [0.0, 0.05, 0.0], [0.0, 0.0, 0.9], [0.0, 0.0, 0.0]])
        infos = [{}, {}, {}, {}, {"hit_table": True}]
        # on target, within 2 cm, 5 cm off, beyond max_distance (0.8 m), on target but touching the table
        np.testing.assert_array_equal(env.compute_reward(target + offsets, np.tile(target, (5, 1)), infos),
                                      [1.0, 1.0, 0.0, -1.0, -1.0])
    finally:
        env.close()


def test_line_target_goal_ignores_y():
    env = _goalEnv(MobileRobotLineTargetGymEnv)
    try:
        goal = np.array([[3.4, 2.0], [3.4, 2.0]], dtype=np.float32)
        reached = np.array([[3.45, 0.5], [3.0, 2.0]], dtype=np.float32)
        np.testing.assert_array_equal(env.compute_reward(reached, goal, None), [1.0, 0.0])
    finally:
        env.close()


# --- the her algorithm --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sacRun(tmp_path_factory) -> str:
    """her + sac, continuous MobileRobot, 300 steps (50 updates: learning from step 250, the first episode's end),
    best model saved; trained in this process."""
    log_dir = tmp_path_factory.mktemp("her_sac")
    return trainHere("--algo", "her", *GT, "-c", "--num-timesteps", "300", "--learning-starts", "250",
                     "--min-episodes-save", "1", "--seed", "0", "--log-dir", log_dir)


def _loadHer(path: str):
    return HERModel.load(path)


def _goalBatch(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {key: rng.uniform(-1.0, 1.0, (n, 2)).astype(np.float32) for key in sorted(GOAL_KEYS)}


def test_sac_run_folder_and_replay(sacRun):
    with open(os.path.join(sacRun, "args.json")) as handle:
        assert json.load(handle)["her_algo"] == "sac"  # resolved from -c and saved for replay
    with open(os.path.join(sacRun, "env_globals.json")) as handle:  # the keywords the env was built with
        assert json.load(handle)["env_kwargs"]["goal_conditioned"] is True
    for folder in (sacRun, os.path.join(sacRun, "best")):
        assert os.path.isfile(os.path.join(folder, "her_model.zip"))
    # only the observation entry is normalised: the goals keep one scale for relabelling
    with np.load(os.path.join(sacRun, "vecnormalize.npz")) as data:
        assert {key for key in data if key.startswith("obs.")} == {"obs.observation.mean", "obs.observation.var",
                                                                   "obs.observation.count"}
    model = _loadHer(os.path.join(sacRun, "her_model.zip")).model
    assert type(model).__name__ == "SAC" and model._n_updates > 0
    result = runModule("replay.enjoy_baselines", "--log-dir", sacRun, "--num-timesteps", "300", "--deterministic")
    assert result.returncode == 0, result.stderr
    assert "Mean episode reward over 1 episode:" in result.stdout


def test_save_load_same_actions(sacRun, tmp_path):
    first = _loadHer(os.path.join(sacRun, "her_model.zip"))
    observation = _goalBatch(6)
    actions = first.getAction(observation, deterministic=True)
    assert actions.shape == (6, 2)
    np.testing.assert_array_equal(_loadHer(os.path.join(sacRun, "her_model.zip")).getAction(
        observation, deterministic=True), actions)
    # re-saved after a load (for acting only), it still loads as a HER model with the same policy
    first.save(str(tmp_path / "her_model.zip"))
    again = _loadHer(str(tmp_path / "her_model.zip"))
    np.testing.assert_array_equal(again.getAction(observation, deterministic=True), actions)
    assert again.model.replay_buffer_class.__name__ == "HerReplayBuffer"
    assert again.model.replay_buffer_kwargs["n_sampled_goal"] == 4
    # sac has a distribution: its mean is the deterministic action
    np.testing.assert_allclose(again.getActionProba(observation), actions, atol=1e-6)


def test_continue_training(sacRun, tmp_path):
    saved = _loadHer(os.path.join(sacRun, "her_model.zip")).model
    # no --her-algo: the saved learner is used; a new HER buffer refills for learning_starts steps (one 250-step
    # episode), then learns (50 updates)
    run_dir = trainHere("--algo", "her", *GT, "-c", "--num-timesteps", "300", "--learning-starts", "250",
                        "--load-rl-model-path", os.path.join(sacRun, "her_model.zip"), "--log-dir", tmp_path)
    model = _loadHer(os.path.join(run_dir, "her_model.zip")).model
    assert model.num_timesteps == saved.num_timesteps + 300
    assert model._n_updates > saved._n_updates


def test_a_stopped_run_resumes(tmp_path, monkeypatch):
    # --resume read the algorithm's defaults through her's parser check, which refused their raw_pixels: no her run
    # could be resumed, not even with the command train printed. Stopped at 250, resumed from the checkpoint at 200
    # (mid-episode), it learns from 250 on.
    run_dir = interruptThenResume(monkeypatch, str(tmp_path), ["--algo", "her", *GT, "-c", "--num-timesteps", "300",
                                                                "--learning-starts", "250", "--checkpoint-freq", "100"],
                                  at_step=250)
    model = _loadHer(os.path.join(run_dir, "her_model.zip")).model
    assert model.num_timesteps == 300 and model._n_updates > 0


def test_deepq_learns_and_loads(tmp_path):
    """Discrete MobileRobot with its fixed target: within 3000 steps HER+DQN reaches and stays on it."""
    run_dir = runFolder(runTrain("--algo", "her", *GT, "--num-timesteps", "3000", "--seed", "0",
                                 "--log-dir", tmp_path))
    with open(os.path.join(run_dir, "monitor", "0.monitor.csv")) as handle:
        rewards = [float(line.split(",")[0]) for line in handle.read().splitlines()[2:]]
    assert len(rewards) == 12
    # a random walk scores about 0 (bumps cost 1); staying on target scores up to 250 per episode
    assert np.mean(rewards[-2:]) > 50, rewards
    with zipfile.ZipFile(os.path.join(run_dir, "her_model.zip")) as archive:
        assert json.loads(archive.read("data"))["her_algo"] == "deepq"
    first, second = (_loadHer(os.path.join(run_dir, "her_model.zip")) for _ in range(2))
    assert type(first.model).__name__ == "DQN"
    observation = _goalBatch(8)
    np.testing.assert_array_equal(first.getAction(observation, deterministic=True),
                                  second.getAction(observation, deterministic=True))
    with pytest.raises(NotImplementedError):
        first.getActionProba(observation)


def test_search_space_fits_every_learner():
    space = HERModel.getOptParam()
    assert {"n_sampled_goal", "goal_selection_strategy"} <= set(space) and "learning_starts" not in space
    for base in BASE_ALGOS.values():
        assert set(space) <= {*base.DEFAULT_HYPERPARAMS, *HER_DEFAULTS}
    parsed = HERModel.parserHyperParam({"goal_selection_strategy": "final", "n_sampled_goal": "2", "tau": "0.01",
                                        "exploration_fraction": "0.1"})
    assert parsed == {"goal_selection_strategy": "final", "n_sampled_goal": 2, "tau": 0.01,
                      "exploration_fraction": 0.1}


def test_bad_combination_exits_2(tmp_path):
    result = runModule("rl_baselines.train", "--algo", "her", "--env", "MobileRobotGymEnv-v0", "--no-vis",
                       "--log-dir", tmp_path)  # raw_pixels, the default observation
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'raw_pixels'" in lines[0] and "valid choices: ground_truth" in lines[0]
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("arguments,words", [
    (GT + ["-c", "--her-algo", "deepq"], ["--her-algo deepq", "continuous", "sac, td3, ddpg"]),
    (GT + ["--her-algo", "td3"], ["--her-algo td3", "discrete", "deepq"]),
    (GT + ["-c", "--her-algo", "td3", "--ent-coef", "0.1"], ["ent_coef", "td3", "policy_delay"]),
    (GT + ["-c", "--hyperparam", "exploration_fraction:0.1"], ["exploration_fraction", "sac"]),
    (GT + ["--learning-starts", "100"], ["learning_starts 100", "250"]),
    (GT + ["--num-stack", "2"], ["--num-stack 2", "valid: 1"]),
    (["--env", "Kuka2ButtonGymEnv-v0", "--srl-model", "ground_truth"], ["Kuka2ButtonGymEnv-v0", "KukaButtonGymEnv-v0"]),
    (GT + ["--hyperparam", "n_sampled_goal:0"], ["n_sampled_goal", ">= 1"]),
], ids=["continuous-deepq", "discrete-td3", "flag-of-other-learner", "hyperparam-of-other-learner",
        "learning-starts-short", "frame-stack", "env-without-goal", "no-sampled-goal"])
def test_bad_combinations(tmp_path, arguments, words):
    with pytest.raises(UsageError) as error:
        main(["--algo", "her", *arguments, "--no-vis", "--log-dir", str(tmp_path)])
    for word in words:
        assert word in str(error.value), str(error.value)
    assert os.listdir(tmp_path) == []


def test_short_learning_starts_is_refused_in_python_before_anything_is_written(tmp_path):
    log_dir = tmp_path / "logs"
    with pytest.raises(UsageError) as error:  # (the train command's parser refuses it too: test_bad_combinations)
        rl.trainAgent(algo="her", srl_model="ground_truth", env="MobileRobotGymEnv-v0", num_timesteps=300,
                      log_dir=str(log_dir), continuous_actions=True, hyperparams={"learning_starts": 100})
    assert "learning_starts 100 is too small for HER" in str(error.value) and "250" in str(error.value)
    assert not log_dir.exists() or os.listdir(log_dir) == []
