"""benchmarks.state_shape: the embedded ground truth keeps the information, a tiny run yields the table, and bad
input is refused in one line. The real measurement is `make bench-state-shape`."""
from __future__ import annotations

import json
import sys
import tempfile

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import REPO, runModule

sys.path.insert(0, REPO)
from benchmarks import state_shape  # noqa: E402
from srl_toolbox.cli import UsageError  # noqa: E402


def _states(kind: str, steps: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Random moves in the embedded env: (states, ground truth)."""
    env = state_shape.makeEnv(kind, 32, 1000)
    truth = gym.make(state_shape.ENV_ID, srl_model="ground_truth")
    observation, _ = env.reset(seed=3)
    true_observation, _ = truth.reset(seed=3)
    states, truths = [observation], [true_observation]
    for step in range(steps):
        action = step % env.action_space.n
        observation, *_ = env.step(action)
        true_observation, *_ = truth.step(action)
        states.append(observation)
        truths.append(true_observation)
    return np.array(states), np.array(truths)


def test_a_linear_embedding_is_the_ground_truth_mapped_exactly():
    states, truths = _states("linear")
    assert states.shape == (61, 32) and states.dtype == np.float32
    design = np.c_[truths, np.ones(len(truths))]
    solution, *_ = np.linalg.lstsq(design, states, rcond=None)
    np.testing.assert_allclose(design @ solution, states, atol=1e-4)


def test_a_tanh_embedding_is_bounded_and_one_to_one_on_the_moves():
    states, truths = _states("tanh")
    assert np.all(np.abs(states) <= 1)
    distinct_truths = len({tuple(np.round(t, 5)) for t in truths})
    assert len({tuple(np.round(s, 5)) for s in states}) == distinct_truths > 1
    plain, _ = _states("ground_truth", steps=5)
    assert plain.shape == (6, 2)


def test_a_tiny_run_prints_a_row_per_variant(capsys):
    assert state_shape.main(["--variants", "ground_truth", "tanh", "--seeds", "1", "--steps", "256",
                             "--eval-freq", "128", "--eval-episodes", "1", "--workers", "1", "--no-append"]) == 0
    out = capsys.readouterr().out
    assert "| ground truth (2) | " in out and "| tanh (32) | " in out
    assert out.count("/1 (") == 2  # each row: its one seed, reached or not (256 steps may leave no threshold)
    assert out.count("min left]") == 2


def test_the_scale_multiplies_what_the_agent_gets_and_is_synced_to_the_evaluation():
    job = {"variant": "linear", "seed": 0, "dims": 32, "steps": 256, "eval_freq": 128, "eval_episodes": 1,
           "map_seed": 1000, "scale": 0.25}
    result = state_shape.runOne(job)
    assert result["timesteps"] == [128, 256] and len(result["rewards"]) == 2
    assert "first_success" in result and state_shape.jobSettings(result) == state_shape.jobSettings(job)
    normalised = state_shape.normalisedEnv(lambda: state_shape.makeEnv("linear", 32, 1000), 0.25)
    normalised.seed(0)
    first = normalised.reset()
    plain = state_shape.VecNormalize.normalize_obs(normalised, normalised.get_original_obs())
    np.testing.assert_allclose(first, plain * 0.25, rtol=1e-5)


@pytest.mark.parametrize("argv, words", [
    (["--eval-freq", "6000", "--steps", "5000"], ["--eval-freq 6000", "--steps 5000"]),
    (["--seeds", "0"], ["--seeds", "'0'"]),
    (["--variants", "pixels"], ["'pixels'", "ground_truth", "tanh"]),
    (["--scale", "0"], ["--scale", "'0'", "positive number"]),
    (["--scale", "inf"], ["--scale", "'inf'", "positive number"]),
    (["--scale", "x"], ["--scale", "'x'", "not a number"]),
    (["--hyperparam", "ent_coeff:0.1"], ["'ent_coeff'", "ent_coef", "n_steps"]),
    (["--hyperparam", "ent_coef=0.1"], ["'ent_coef=0.1'", "NAME:VALUE"]),
    (["--hyperparam", "n_steps:-3"], ["n_steps:-3"]),
    (["--policy-activation", "gelu"], ["'gelu'", "relu", "tanh"]),
    (["--first-seed", "-1"], ["--first-seed", "'-1'"]),
    (["--early-ent-coef", "0.05"], ["--early-ent-coef", "'0.05'", "WEIGHT:STEPS"]),
    (["--early-ent-coef=-1:100"], ["--early-ent-coef", "'-1:100'", "WEIGHT:STEPS"]),
    (["--early-ent-coef", "0.05:0"], ["--early-ent-coef", "'0.05:0'", "WEIGHT:STEPS"]),
])
def test_bad_input_is_one_line_exit_2(argv, words):
    with pytest.raises(UsageError) as error:
        state_shape.main(argv)
    assert all(word in str(error.value) for word in words)
    result = runModule("benchmarks.state_shape", *argv, timeout=120)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


def test_the_participation_scale_of_the_maps():
    # the linear map spans 2 directions (scale about sqrt(2 / 32)); ground truth its own 2
    assert state_shape.participationScale("linear", 32, 1000, steps=500) == pytest.approx(0.25, abs=0.02)
    assert state_shape.participationScale("ground_truth", 32, 1000, steps=500) == pytest.approx(1.0, abs=0.05)


def test_hyperparameters_and_activation_reach_the_agent():
    job = {"variant": "ground_truth", "seed": 0, "dims": 32, "map_seed": 1000, "scale": 1.0,
           "hyperparams": state_shape.parseHyperparams(["ent_coef:0.05", "n_epochs:3"]), "activation": "relu"}
    venv = state_shape.normalisedEnv(lambda: state_shape.makeEnv("ground_truth", 32, 1000))
    model = state_shape.buildAgent(job, venv)
    assert model.ent_coef == 0.05 and model.n_epochs == 3 and model.n_steps == 128
    assert model.policy.activation_fn is torch.nn.ReLU
    plain = state_shape.buildAgent({**job, "hyperparams": {}, "activation": "tanh"}, venv)
    assert plain.ent_coef == 0.01 and plain.policy.activation_fn is torch.nn.Tanh


class _WeightsSeen(state_shape.BaseCallback):
    """Records the entropy weight each update is about to use (after EarlyEntropy set it)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, float]] = []

    def _on_rollout_end(self) -> None:
        self.seen.append((int(self.num_timesteps), float(self.model.ent_coef)))

    def _on_step(self) -> bool:
        return True


def test_the_early_entropy_weight_holds_for_its_steps_then_the_agents_own(monkeypatch, tmp_path):
    # SB3's default logger would leave an empty SB3-<date> folder in the temporary folder at learn
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    job = {"variant": "ground_truth", "seed": 0, "dims": 32, "map_seed": 1000, "scale": 1.0,
           "hyperparams": state_shape.parseHyperparams(["n_steps:64", "n_epochs:1"])}
    model = state_shape.buildAgent(job, state_shape.normalisedEnv(lambda: state_shape.makeEnv("ground_truth", 32,
                                                                                               1000)))
    seen = _WeightsSeen()
    model.learn(256, callback=state_shape.CallbackList([state_shape.EarlyEntropy(0.2, 128), seen]))
    assert seen.seen == [(64, 0.2), (128, 0.2), (192, 0.01), (256, 0.01)]
    assert list(tmp_path.glob("SB3-*")) == []
    assert model.ent_coef == 0.01
    assert state_shape.earlyEntropy("0.05:10000") == (0.05, 10000)
    job = {"variant": "linear", "seed": 0, "dims": 32, "steps": 256, "eval_freq": 128, "eval_episodes": 1,
           "map_seed": 1000, "scale": 1.0, "early_ent_coef": [0.05, 128]}
    assert state_shape.runOne(job)["timesteps"] == [128, 256]


def test_n_envs_steps_that_many_envs_and_evaluates_at_the_same_steps(monkeypatch, tmp_path):
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen: list[int] = []
    build = state_shape.buildAgent
    monkeypatch.setattr(state_shape, "buildAgent", lambda job, venv: seen.append(venv.num_envs) or build(job, venv))
    job = {"variant": "ground_truth", "seed": 0, "dims": 32, "steps": 512, "eval_freq": 256, "eval_episodes": 1,
           "map_seed": 1000, "scale": 1.0, "n_envs": 4}
    assert state_shape.runOne(job)["timesteps"] == [256, 512]
    assert seen == [4]


def test_results_are_kept_and_a_second_call_runs_nothing(tmp_path, capsys):
    results = str(tmp_path / "runs.json")
    argv = ["--variants", "linear", "--seeds", "1", "--first-seed", "3", "--steps", "256", "--eval-freq", "128",
            "--eval-episodes", "1", "--workers", "1", "--no-append", "--results", results]
    assert state_shape.main(argv) == 0
    first = capsys.readouterr().out
    with open(results) as stream:
        kept = json.load(stream)
    assert [(run["variant"], run["seed"], run["timesteps"]) for run in kept] == [("linear", 3, [128, 256])]
    assert state_shape.main(argv) == 0
    second = capsys.readouterr().out
    assert "min left]" in first and "min left]" not in second
    assert first.splitlines()[-4:] == second.splitlines()[-4:]
    assert state_shape.main([*argv[:-2], "--results", results, "--hyperparam", "ent_coef:0.02"]) == 0
    with open(results) as stream:
        assert len(json.load(stream)) == 2  # other settings: a run of their own


def test_the_first_successful_episode_is_kept_and_shown_per_seed():
    callback = state_shape.FirstSuccess()
    for step, infos in [(250, [{"episode": {"r": 0.0}}]), (300, [{}]), (500, [{"episode": {"r": -3.0}}, {}]),
                        (750, [{}, {"episode": {"r": 2.0}}]), (1000, [{"episode": {"r": 9.0}}])]:
        callback.num_timesteps, callback.locals = step, {"infos": infos}
        assert callback._on_step()
    assert callback.step == 750
    runs = [{"variant": "tanh", "seed": seed, "dims": 32, "scale": 1.0, "timesteps": [5000], "rewards": [reward],
             **extra} for seed, reward, extra in [(2, 0.0, {"first_success": None}), (0, 230.0, {"first_success": 1250}),
                                                  (1, 228.0, {})]]
    row = state_shape.summarise(runs, ["tanh"]).splitlines()[2]
    assert row.endswith("| 230, 228, 0 | 1,250, ?, never |")


def test_a_ground_truth_ending_below_zero_gives_no_threshold():
    """The SRL + RL benchmark's rule (docs/srl.md): 90% of a negative mean lies above it, so there is no threshold,
    and no seed is counted as reaching one."""
    runs = [{"variant": "ground_truth", "seed": seed, "dims": 2, "scale": 1.0, "timesteps": [5000, 10000],
             "rewards": [-40.0, reward]} for seed, reward in enumerate([-20.0, -30.0])]
    text = state_shape.summarise(runs, ["ground_truth"])
    assert "| 0/2 (-) |" in text.splitlines()[2]
    assert text.endswith("Threshold: none (the first row's mean final reward is not positive).")
    positive = [{**run, "rewards": [10.0, 20.0]} for run in runs]
    assert state_shape.summarise(positive, ["ground_truth"]).endswith("Threshold: 18.0 (90% of the first row's mean "
                                                                       "final reward).")
