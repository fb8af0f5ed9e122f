"""The cem algorithm on its own: the update, the normaliser, saving and loading, the flags, and learning on a toy
VecEnv (no robot env needed)."""
from __future__ import annotations

import argparse
import importlib.metadata
import re

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

from rl_baselines.check_plugin import checkPlugin
from srl_toolbox_cem.cem import CEMModel, RunningStats, cemUpdate


def test_entry_point_is_declared() -> None:
    points = importlib.metadata.entry_points(group="srl_toolbox.rl_algorithms")
    assert any(point.name == "cem" and point.value == "srl_toolbox_cem.cem:CEMModel" for point in points)


def test_cem_update_finds_the_optimum_of_a_quadratic() -> None:
    rng = np.random.default_rng(0)
    target = np.array([3.0, -2.0, 0.5])
    mean, std = np.zeros(3), np.full(3, 2.0)
    for generation in range(40):
        candidates = mean + std * rng.standard_normal((30, 3))
        returns = -np.square(candidates - target).sum(axis=1)
        mean, std = cemUpdate(candidates, returns, 6, 0.01 * max(0.0, 1 - generation / 20))
    np.testing.assert_allclose(mean, target, atol=0.05)
    assert np.all(std < 0.1)


def test_update_keeps_the_elite() -> None:
    candidates = np.array([[0.0], [1.0], [2.0], [10.0]])
    mean, std = cemUpdate(candidates, np.array([0.0, 5.0, 4.0, -1.0]), 2, 0.0)
    np.testing.assert_allclose(mean, [1.5])
    np.testing.assert_allclose(std, [0.5])


def test_running_stats_match_numpy() -> None:
    rng = np.random.default_rng(1)
    batches = [rng.normal(3.0, 2.0, (n, 4)) for n in (5, 17, 1)]
    stats = RunningStats(4)
    np.testing.assert_allclose(stats.normalise(batches[0]), batches[0])  # the identity before any commit
    for batch in batches:
        stats.gather(batch)
        stats.commit()
    everything = np.concatenate(batches)
    np.testing.assert_allclose(stats.mean, everything.mean(axis=0))
    np.testing.assert_allclose(stats.var, everything.var(axis=0))
    constant = RunningStats(1)
    constant.gather(np.ones((3, 1)))
    constant.commit()
    assert constant.normalise(np.array([[5.0]]))[0, 0] == 0.0  # a constant feature carries nothing


class SignEnv(gym.Env):
    """Observation x ~ U(-1, 1); action 1 earns +1 when x > 0, action 0 when x < 0; 10 steps per episode."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        self.x = self.np_random.uniform(-1, 1, 1).astype(np.float32)
        return self.x, {}

    def step(self, action):
        reward = float((int(action) == 1) == (self.x[0] > 0))
        self.steps += 1
        self.x = self.np_random.uniform(-1, 1, 1).astype(np.float32)
        return self.x, reward, False, self.steps >= 10, {}


class ToyCEM(CEMModel):
    """cem on SignEnv: only makeEnv changes, as a plugin may do."""

    @classmethod
    def makeEnv(cls, args, env_kwargs=None, load_path_normalise=None):
        env = DummyVecEnv([SignEnv for _ in range(args.num_cpu)])
        env.seed(args.seed)
        return env


def _args(**kwargs) -> argparse.Namespace:
    return argparse.Namespace(**{"num_timesteps": 3000, "seed": 0, "num_cpu": 2, "load_rl_model_path": None,
                                 **kwargs})


def test_a_budget_below_one_generation_says_the_policy_is_untrained() -> None:
    """As the toolbox's ars and cma-es say it (it saved the starting mean without a word)."""
    with pytest.warns(UserWarning, match=r"no generation finished in 20 steps \(one plays 10 episodes\)"):
        ToyCEM().train(_args(num_timesteps=20), lambda _locals, _globals: True, train_kwargs={"num_population": 10})


def test_learns_the_sign_policy_and_reports_every_step(tmp_path) -> None:
    calls = []

    def callback(_locals, _globals):
        calls.append(_locals["self"].num_timesteps)
        return True

    model = ToyCEM()
    model.train(_args(), callback, train_kwargs={"num_population": 10})
    assert calls == list(range(2, 3001, 2))  # every vectorised step, counting env steps
    assert model.generation >= 10
    observations = np.linspace(-1, 1, 21)[:, None].astype(np.float32)
    observations = observations[np.abs(observations[:, 0]) > 0.15]
    np.testing.assert_array_equal(model.getAction(observations), (observations[:, 0] > 0).astype(int))
    probabilities = model.getActionProba(observations)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0)

    path = str(tmp_path / "cem_model.npz")
    model.save(path)
    loaded = ToyCEM.load(path)
    np.testing.assert_array_equal(loaded.getAction(observations), model.getAction(observations))
    assert loaded.num_timesteps == 3000 and loaded.generation == model.generation
    # Continuing training goes on from the saved step count and policy
    more = ToyCEM()
    more.train(_args(num_timesteps=200, load_rl_model_path=path), lambda *_: True)
    assert more.num_timesteps == 3200


def test_same_seed_same_policy() -> None:
    first, second = ToyCEM(), ToyCEM()
    first.train(_args(num_timesteps=400), lambda *_: True)
    second.train(_args(num_timesteps=400), lambda *_: True)
    np.testing.assert_array_equal(first.mean, second.mean)


def test_callback_can_stop_training() -> None:
    model = ToyCEM()
    model.train(_args(), lambda _locals, _globals: _locals["self"].num_timesteps < 100)
    assert model.num_timesteps == 100


def test_bad_files_are_one_line_errors(tmp_path) -> None:
    with pytest.raises(ValueError, match="no cem model file"):
        CEMModel.load(str(tmp_path / "missing.npz"))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="is not a cem model"):
        CEMModel.load(str(tmp_path / "junk.npz"))
    np.savez(tmp_path / "other.npz", meta=np.array('{"algo": "ars"}'))
    with pytest.raises(ValueError, match="saved by algorithm 'ars', not 'cem'"):
        CEMModel.load(str(tmp_path / "other.npz"))


def test_flags_and_hyperparams_are_checked() -> None:
    parser = CEMModel.customArguments(argparse.ArgumentParser())
    args = parser.parse_args(["--num-population", "8", "--elite-frac", "0.5"])
    assert CEMModel.hyperparamsFromArgs(args, {"elite_frac": 0.1}) == {**CEMModel.DEFAULT_HYPERPARAMS,
                                                                       "num_population": 8, "elite_frac": 0.1}
    with pytest.raises(SystemExit):
        parser.parse_args(["--elite-frac", "1.5"])
    assert CEMModel.parserHyperParam({"num_population": "12"}) == {"num_population": 12}
    with pytest.raises(ValueError, match=re.escape("'num_population' must be in [2, 10000], got 1")):
        CEMModel.parserHyperParam({"num_population": "1"})
    space = CEMModel.getOptParam()
    assert set(space) == set(CEMModel.DEFAULT_HYPERPARAMS)
    for name, (kind, bounds, *_) in space.items():
        assert isinstance(CEMModel.DEFAULT_HYPERPARAMS[name], kind) and bounds[0] < bounds[1]


def test_cem_keeps_the_contract(tmp_path) -> None:
    """The toolbox's contract check: train, save, load, replay and continue through the train command, both action
    types, same seed same model."""
    passed = checkPlugin("cem", folder=str(tmp_path), num_timesteps=300)
    assert any(line.startswith("continuous: same seed") for line in passed)
    assert any(line.startswith("discrete: --load-rl-model-path continues") for line in passed)
