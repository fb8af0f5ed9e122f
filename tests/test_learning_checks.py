"""Fast learning checks not covered elsewhere, and the learning benchmark's plumbing.

acer and acktr learn CartPole in test_acer_acktr.py, ppo1 in test_ppo1.py, deepq (double Q + dueling + prioritized
replay, its defaults), cma-es and ars in test_es_dqn.py. Here: deepq's other variants, each switched off alone and
all together, so that a bug in the plain path cannot hide behind the features; and the CartPole-v1 / Pendulum-v1
envs that ``benchmarks/learning.py`` declares to the command line as a plugin.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys

import gymnasium as gym
import numpy as np
import pytest
from conftest import REPO, greedyMeanReward, runFolder, runTrain, trainArgs
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from rl_baselines.core.base import BaseRLObject
from rl_baselines.rl_algorithm.deepq import DQNModel
from rl_baselines.runs.monitor_files import loadEpisodes
from srl_toolbox.cli import UsageError

sys.path.insert(0, REPO)
from benchmarks import classic_control_envs, learning  # noqa: E402

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

# --- deepq variants learn CartPole-v1 --------------------------------------------------------------------------------

EVALUATION_PERIOD = 1000


def _cartpoleEnvs(num_cpu: int, seed: int) -> VecNormalize:
    envs = DummyVecEnv([lambda: Monitor(gym.make("CartPole-v1"))] * num_cpu)
    envs.seed(seed)
    return VecNormalize(envs, norm_reward=False)


def _greedyMeanReward(model: DQNModel, episodes: int = 10) -> float:
    """:return: the greedy mean reward of fresh episodes, with the training normalisation frozen"""
    envs = _cartpoleEnvs(5, seed=100)
    envs.obs_rms, envs.training = model.env.obs_rms, False
    return greedyMeanReward(model, envs, episodes)


# One gradient step per vector step of the 4 envs (train_freq 4, at lr 1e-3) instead of the defaults' four: with the
# defaults otherwise (batch 64, epsilon 1 -> 0.02 over 20%), each variant's greedy policy passed 150 on CartPole-v1
# after 4k-8k of the 12k steps for seeds 0-2 (uniform replay: seed 0 only, at 4k); a random policy scores about 22.
FASTER = {"train_freq": 4, "learning_rate": 1e-3}
VARIANTS = {
    "plain DQN": {"double_q": False, "dueling": False, "prioritized_replay": False},
    "no double Q": {"double_q": False},
    "no dueling": {"dueling": False},
    "uniform replay": {"prioritized_replay": False},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_deepq_variant_learns_cartpole(tmp_path, monkeypatch, variant):
    monkeypatch.setattr(BaseRLObject, "makeEnv", classmethod(
        lambda cls, args, env_kwargs=None, load_path_normalise=None: _cartpoleEnvs(args.num_cpu, args.seed)))
    evaluations: list[float] = []

    def evaluateEveryPeriod(_locals, _globals) -> bool:
        learner = _locals["self"]
        if learner.num_timesteps >= EVALUATION_PERIOD * (len(evaluations) + 1):
            evaluations.append(_greedyMeanReward(learner))
        # stop at the first evaluation above 150: the check is that the variant learns, not how long it stays there
        return not (evaluations and evaluations[-1] > 150)

    model = DQNModel()
    args = trainArgs(seed=0, num_cpu=4, num_timesteps=12000, load_rl_model_path=None,
                     srl_model="ground_truth", log_dir=str(tmp_path))
    model.train(args, evaluateEveryPeriod, train_kwargs={**FASTER, **VARIANTS[variant]})
    assert all(model.hyperparams[key] == value for key, value in VARIANTS[variant].items())
    assert evaluations and max(evaluations) > 150, f"{variant}: {evaluations} after {model.num_timesteps} steps"


# --- the benchmark's classic-control envs ----------------------------------------------------------------------------


@pytest.mark.parametrize("env_class", [classic_control_envs.CartPoleSRLEnv, classic_control_envs.PendulumSRLEnv])
def test_classic_envs_follow_the_srl_env_contract(env_class):
    check_env(env_class(srl_model="ground_truth", is_discrete=env_class.DISCRETE), skip_render_check=True)
    env = env_class(srl_model="ground_truth", is_discrete=env_class.DISCRETE, seed=3)
    first, _ = env.reset()
    again, _ = env_class(srl_model="ground_truth", is_discrete=env_class.DISCRETE, seed=3).reset()
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(env.getSRLState(), first)  # ground truth = the gymnasium state
    assert not np.array_equal(env.reset()[0], first)  # the constructor's seed seeds only the first episode
    assert env.getGroundTruthDim() == first.shape[0]
    _, _, _, _, info = env.step(env.action_space.sample())
    assert "is_success" in info
    with pytest.raises(ValueError, match="actions only"):
        env_class(srl_model="ground_truth", is_discrete=not env_class.DISCRETE)
    with pytest.raises(ValueError, match="valid choices: ground_truth"):
        env_class(srl_model="raw_pixels", is_discrete=env_class.DISCRETE)


def test_cartpole_through_the_train_command_as_a_plugin(tmp_path):
    plugin_dir = str(tmp_path / "plugin")
    classic_control_envs.writePluginMetadata(plugin_dir)
    env = {"PYTHONPATH": os.pathsep.join([plugin_dir, REPO, os.environ.get("PYTHONPATH", "")])}
    run_dir = runFolder(runTrain("--algo", "random_agent", "--env", "CartPole-v1", "--srl-model", "ground_truth",
                                 "--num-timesteps", "300", "--log-dir", tmp_path / "logs", env=env))
    episodes = loadEpisodes(os.path.join(run_dir, "monitor"))
    assert len(episodes["rewards"]) >= 5 and episodes["timesteps"][-1] <= 300
    assert 8 <= episodes["rewards"].mean() <= 60  # a random CartPole episode lasts about 22 steps


def test_verdict_and_case_selection():
    random_row = {"mean": 0.0, "std": 5.0, "finals": [0.0, -5.0, 5.0]}
    mobile = learning.Case("ppo2", learning.MOBILE, False, 1000)
    # solved = 230: mean 100 - std 20 closes 80/230 = 35% of the gap (clear); mean 60 - std 20 closes 17% (not)
    assert learning.verdict(mobile, {"mean": 100.0, "std": 20.0, "finals": [1.0]}, random_row) == ("43%", "yes")
    assert learning.verdict(mobile, {"mean": 60.0, "std": 20.0, "finals": [1.0]}, random_row) == ("26%", "**no**")
    cases, notes = learning.selectCases(["sac", "not-an-algo"], {"sac", "random_agent", "ppo2"})
    assert {(c.algo, c.env) for c in cases} == {("sac", learning.MOBILE), ("sac", learning.PENDULUM),
                                                ("random_agent", learning.MOBILE),
                                                ("random_agent", learning.PENDULUM)}
    assert all(c.continuous for c in cases)  # only the random agent of sac's tasks
    assert any("not-an-algo" in note for note in notes)
    _, notes = learning.selectCases(["td3"], {"random_agent"})
    assert "td3 skipped: not registered when the benchmark ran" in notes


def test_steps_to_threshold_is_the_first_crossing_of_the_moving_mean():
    episodes = {"rewards": np.array([0.0, 10.0, 2.0, 10.0, 10.0]), "timesteps": np.array([5, 10, 15, 20, 25])}
    # means of the last 2 episodes: 0, 5, 6, 6, 10 (the first one alone)
    assert learning.stepsToThreshold(episodes, 6.0, window=2) == 15
    assert learning.stepsToThreshold(episodes, 10.0, window=2) == 25
    assert learning.stepsToThreshold(episodes, 5.0, window=1) == 10
    assert np.isnan(learning.stepsToThreshold(episodes, 11.0, window=2))
    assert np.isnan(learning.stepsToThreshold(episodes, None, window=2))


def test_recorded_runs_are_reused_only_while_their_settings_hold(tmp_path, monkeypatch):
    committed = open(learning.RUNS_FILE, "rb").read()
    monkeypatch.setattr(learning, "RUNS_FILE", str(tmp_path / "runs.json"))
    case = learning.Case("td3", learning.MOBILE, True, 1000)
    steps_of = {case: 1000}
    learning.recordRuns([learning.RunResult(case, 0, 12.5, 1000, 9.0, 111.0),
                         learning.RunResult(case, 1, float("nan"), 0, 1.0, error="exit 1: boom")],
                        steps_of, last_episodes=20)
    (reused,) = learning.reusedRuns([case], steps_of, [0, 1], 20, rerun=set())  # the failed seed runs again
    assert (reused.seed, reused.final, reused.rate, reused.error) == (0, 12.5, 111.0, "")
    assert reused.date
    assert learning.reusedRuns([case], steps_of, [0], 20, rerun={"td3"}) == []
    changed = dataclasses.replace(case, extra=("--noise-std", "0.3"))  # other flags, other steps: a new run
    assert learning.reusedRuns([changed], {changed: 1000}, [0], 20, rerun=set()) == []
    assert learning.reusedRuns([case], {case: 2000}, [0], 20, rerun=set()) == []
    assert learning.reusedRuns([case], steps_of, [0], 10, rerun=set()) == []
    assert os.path.isfile(tmp_path / "runs.json")
    # a record made before the row reported steps to threshold and masked moves runs again
    discrete = learning.Case("ppo2", learning.MOBILE, False, 1000)
    learning.recordRuns([learning.RunResult(discrete, 0, 12.5, 1000, 9.0, 111.0, to_threshold=500.0, masked=1.0)],
                        {discrete: 1000}, last_episodes=20)
    assert [r.masked for r in learning.reusedRuns([discrete], {discrete: 1000}, [0], 20, rerun=set())] == [1.0]
    records = learning.loadRecordedRuns()
    del records[learning.runKey(discrete, 1000, 0, 20)]["masked"]
    with open(learning.RUNS_FILE, "w", encoding="utf-8") as handle:
        json.dump(records, handle)
    assert learning.reusedRuns([discrete], {discrete: 1000}, [0], 20, rerun=set()) == []
    monkeypatch.undo()
    assert open(learning.RUNS_FILE, "rb").read() == committed  # the committed record is left alone


def test_rerun_without_reuse_is_refused_before_any_work(monkeypatch):
    """--rerun means something only with --reuse: alone it would be ignored while the whole benchmark ran."""
    def noWork(*args, **kwargs):
        raise AssertionError("the benchmark started")

    for name in ("runAll", "reusedRuns", "selectCases", "machineDescription"):
        monkeypatch.setattr(learning, name, noWork)
    with pytest.raises(UsageError, match=r"^--rerun ppo2: only with --reuse"):
        learning.main(["--rerun", "ppo2", "--no-append"])


def test_quick_imitation_note_gives_the_experts_real_budget(monkeypatch, capsys):
    """--quick trains the expert for fewer steps: the imitation note says how many it had, as the Expert line does."""
    given = {}

    def fakeRuns(cases, steps_of, seeds, jobs, last_episodes, skip, expert_steps, record):
        given["expert_steps"] = expert_steps
        return [learning.RunResult(case, seed, 50.0, steps_of[case], 1.0, 100.0) for case in cases
                for seed in seeds], 100.0

    monkeypatch.setattr(learning, "runAll", fakeRuns)
    learning.main(["--quick", "--algos", "imitation", "--seeds", "0", "--no-append"])
    quick = min(learning.EXPERT_STEPS, learning.QUICK_STEPS)
    assert given["expert_steps"] == quick < learning.EXPERT_STEPS
    out = capsys.readouterr().out
    assert f"the expert is ppo2 trained {quick:,} steps" in out and f"{learning.EXPERT_STEPS:,} steps" not in out
