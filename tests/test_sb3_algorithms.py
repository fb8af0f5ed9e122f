"""The algorithms wrapped from Stable-Baselines3 and sb3-contrib (trpo, qrdqn, ddpg, td3, sac, tqc, ppo_lstm): each
trains through the command line and writes its run folder, round-trips through save/load, refuses an action type it
lacks; td3 continues a saved model, qrdqn one of the same n_quantiles, ppo_lstm one of the same policy settings;
ppo_lstm carries one LSTM state per env and resets it at episode ends."""
from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml
from conftest import runFolder, runModule, runTrain, snapshot, trainArgs, trainSettings
from sb3_contrib import RecurrentPPO
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv

from rl_baselines.core.plugin_v1 import trainAlgorithm
from rl_baselines.core.registry import registered_rl
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.rl_algorithm.ppo_lstm import PPOLSTMModel
from rl_baselines.rl_algorithm.qrdqn import QRDQNModel
from rl_baselines.runs.train import main
from rl_baselines.runs.train_checks import baseParser
from srl_toolbox.cli import UsageError

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]
PIXELS = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels", "--img-shape", "3", "40", "40"]
# Off-policy learners start updating after 150 steps instead of 1000, so that the tiny runs below do update.
EARLY = ["--hyperparam", "learning_starts:150"]
# ... and, where the CNN or a continued model's updates are the cost, once every 4 steps.
EARLY_SPARSE = [*EARLY, "train_freq:4"]
# 300 steps: one 250-step episode ends, so that best/ is written.
STEPS = ["--num-timesteps", "300", "--min-episodes-save", "1"]
ON_POLICY_SHORT = ["--hyperparam", "n_steps:64", "batch_size:64"]

ALGOS = ["trpo", "qrdqn", "ddpg", "td3", "sac", "tqc", "ppo_lstm"]
CONTINUOUS_ONLY = {"ddpg", "td3", "sac", "tqc"}
SQUASHED_GAUSSIAN = {"sac", "tqc"}

RUNS = [
    ("trpo", GT + ON_POLICY_SHORT),
    ("qrdqn", GT + [*EARLY, "n_quantiles:16"]),
    ("ddpg", GT + ["-c", "--noise-type", "normal"] + EARLY),
    ("tqc", GT + ["-c", "--batch-size", "32"] + EARLY),
    # two envs, each with its own LSTM state (512 steps: each env ends an episode)
    ("ppo_lstm", GT + ["-c", "--num-cpu", "2", "--num-timesteps", "512"] + ON_POLICY_SHORT + ["n_epochs:1"]),
    # pixels: a CNN in front of the replay-buffer learner (small buffer) and of the LSTM
    ("sac", PIXELS + ["-c", "--buffer-size", "300", "--batch-size", "16", "--ent-coef", "0.05"] + EARLY_SPARSE),
    ("ppo_lstm", PIXELS + ["--hyperparam", "n_steps:64", "batch_size:64", "n_epochs:1"]),
]


def _loadModel(run_dir: str, algo: str):
    return registered_rl[algo][0].load(os.path.join(run_dir, f"{algo}_model.zip"))


def _checkRunFolder(run_dir: str, algo: str, pixels: bool) -> None:
    for folder in (run_dir, os.path.join(run_dir, "best")):
        assert os.path.isfile(os.path.join(folder, f"{algo}_model.zip"))
        assert os.path.isfile(os.path.join(folder, "vecnormalize.npz")) == (not pixels)
    assert _loadModel(run_dir, algo).model._n_updates > 0, "no gradient update within the run"


RUN_IDS = [f"{algo}-{'pixels' if 'raw_pixels' in args else 'gt'}" for algo, args in RUNS]


@pytest.mark.parametrize("algo,args", RUNS, ids=RUN_IDS)
def test_train_writes_run_folder(tmp_path, algo, args):
    run_dir = runFolder(runTrain("--algo", algo, *STEPS, *args, "--log-dir", tmp_path))
    assert os.path.dirname(os.path.dirname(run_dir)).endswith(os.path.join("MobileRobotGymEnv-v0", args[3]))
    _checkRunFolder(run_dir, algo, pixels="raw_pixels" in args)
    # flags reach the SB3 learner (the old toolbox dropped sac's --ent-coef and --batch-size)
    model = _loadModel(run_dir, algo).model
    if algo == "sac":
        assert float(model.ent_coef) == 0.05 and model.batch_size == 16 and model.buffer_size == 300
    if algo == "ddpg":
        assert type(model.action_noise).__name__ == "NormalActionNoise"
    if algo == "qrdqn":  # a keyword of its policy, recorded as the run's other hyperparameters
        assert model.policy.n_quantiles == model.policy_kwargs["n_quantiles"] == 16
        assert yaml.safe_load(open(RunFolder(run_dir).hyperparams_file))["n_quantiles"] == 16


def test_td3_continues_a_saved_model(tmp_path):
    first_dir = runFolder(runTrain("--algo", "td3", *GT, "-c", "--batch-size", "64", *EARLY_SPARSE, *STEPS,
                                   "--log-dir", tmp_path / "first"))
    _checkRunFolder(first_dir, "td3", pixels=False)
    first = _loadModel(first_dir, "td3")
    assert type(first.model.action_noise).__name__ == "NormalActionNoise"  # td3's default
    result = runTrain("--algo", "td3", *GT, "-c", "--num-timesteps", "200", "--noise-type", "ou", "--noise-std",
                      "0.3", "--log-dir", tmp_path / "second",
                      "--load-rl-model-path", os.path.join(first_dir, "td3_model.zip"))
    continued = _loadModel(runFolder(result), "td3")
    assert continued.num_timesteps >= first.num_timesteps + 200
    assert continued.model._n_updates > first.model._n_updates
    before, after = first.model.policy.state_dict(), continued.model.policy.state_dict()
    assert any(not np.allclose(before[k].numpy(), after[k].numpy()) for k in before)
    # the noise flags given on the command line replace the saved noise; the other settings are kept
    noise = continued.model.action_noise
    assert type(noise).__name__ == "OrnsteinUhlenbeckActionNoise" and np.allclose(noise._sigma, 0.3)
    assert continued.model.batch_size == first.model.batch_size == 64
    # the run's hyperparams.yaml records what the continued model trained with (it gave td3's default batch size)
    recorded = yaml.safe_load(open(RunFolder(runFolder(result)).hyperparams_file))
    assert recorded["batch_size"] == 64 and recorded["noise_std"] == 0.3


def test_qrdqn_n_quantiles_reaches_the_policy_and_a_continued_model_keeps_its_own(tmp_path):
    kwargs = QRDQNModel.makeModelKwargs(None, {"batch_size": 32, "n_quantiles": 50}, env=None)
    assert kwargs == {"batch_size": 32, "policy_kwargs": {"n_quantiles": 50}}
    first_dir = runFolder(runTrain("--algo", "qrdqn", *GT, "--num-timesteps", "64", "--n-quantiles", "8",
                                   "--log-dir", tmp_path / "first"))
    saved = os.path.join(first_dir, "qrdqn_model.zip")
    assert _loadModel(first_dir, "qrdqn").model.policy.n_quantiles == 8
    # another value: one line before anything is written (SB3 would fail on the quantile layer's weights)
    for flags, source in ((["--n-quantiles", "9"], "(--n-quantiles)"),
                          (["--hyperparam", "n_quantiles:200"], "(--hyperparam-file/--hyperparam)")):
        result = runModule("rl_baselines.train", *GT, "--algo", "qrdqn", "--num-timesteps", "64", *flags,
                           "--load-rl-model-path", saved, "--log-dir", tmp_path / "second", "--no-vis")
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.strip().splitlines() == [
            f"error: n_quantiles {flags[1].split(':')[-1]} {source}: {saved} has a quantile network of n_quantiles 8, "
            "whose layers cannot change size; valid: 8, or leave it out"]
        assert not (tmp_path / "second").exists()
    # the same value continues it, its saved policy keywords (the optimiser's) kept
    continued = _loadModel(runFolder(runTrain("--algo", "qrdqn", *GT, "--num-timesteps", "64", "--n-quantiles", "8",
                                              "--load-rl-model-path", saved, "--log-dir", tmp_path / "second")),
                           "qrdqn").model
    assert continued.policy.n_quantiles == 8 and continued.policy_kwargs["optimizer_kwargs"] == {"eps": 0.01 / 32}


@pytest.fixture()
def oneTorchThread():
    """Tiny networks train several times faster on one thread than on threads fighting for shared cores (the
    train command does the same)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _trainInProcess(algo: str, tmp_path, hyperparams: dict[str, str]):
    algo_class = registered_rl[algo][0]
    argv = [*GT, "--algo", algo, "--num-timesteps", "192", "--log-dir", str(tmp_path)]
    if algo in CONTINUOUS_ONLY or algo == "ppo_lstm":
        argv.append("-c")
    args = trainArgs(**vars(algo_class.customArguments(baseParser()).parse_args(argv)))
    agent = algo_class()
    # plugin API v2, as the train command calls it: the env and hyperparameters built from the run's settings
    settings = trainSettings(args, algo_class.parserHyperParam(hyperparams))
    trainAlgorithm(agent, settings, args.num_timesteps, lambda _locals, _globals: True)
    return algo_class, agent


@pytest.mark.parametrize("algo", ALGOS)
def test_save_load_gives_same_actions(tmp_path, algo, oneTorchThread):
    on_policy = algo in ("trpo", "ppo_lstm")
    hyperparams = {"n_steps": "64", "batch_size": "32"} if on_policy else {"learning_starts": "64", "batch_size": "32"}
    algo_class, agent = _trainInProcess(algo, tmp_path, hyperparams)
    assert agent.model._n_updates > 0
    path = str(tmp_path / "saved" / f"{algo}_model.zip")
    agent.save(path)
    assert os.path.isfile(tmp_path / "saved" / "vecnormalize.npz")
    loaded = algo_class.load(path)
    if algo == "ppo_lstm":
        agent._lstm_states = None  # both start from fresh LSTM states, as at the start of a replay
    observations = np.random.default_rng(0).normal(size=(16, 2)).astype(np.float32)
    actions = agent.getAction(observations, deterministic=True)
    np.testing.assert_array_equal(actions, loaded.getAction(observations, deterministic=True))
    if algo in ("ddpg", "td3", "qrdqn"):
        with pytest.raises(NotImplementedError, match="no action distribution"):
            agent.getActionProba(observations)
        return
    if algo == "ppo_lstm":
        agent._lstm_states = loaded._lstm_states = None
    proba = agent.getActionProba(observations)
    np.testing.assert_allclose(proba, loaded.getActionProba(observations), rtol=1e-6)
    if algo in SQUASHED_GAUSSIAN:
        # the mean of the squashed Gaussian is the deterministic action, inside the action bounds
        np.testing.assert_allclose(proba, actions, rtol=1e-5, atol=1e-6)
        assert np.all(np.abs(proba) <= 1.0)


def _lstmAgent():
    agent = PPOLSTMModel()
    env = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    agent.model = RecurrentPPO("MlpLstmPolicy", env, n_steps=8, batch_size=8, seed=0, device="cpu",
                               policy_kwargs={"lstm_hidden_size": 8})
    return agent


def test_ppo_lstm_keeps_one_state_per_env_and_resets_on_dones():
    agent, fresh = _lstmAgent(), _lstmAgent()
    fresh.model = agent.model  # same weights, its own LSTM states
    rng = np.random.default_rng(1)
    first, second = (rng.normal(size=(3, 4)).astype(np.float32) for _ in range(2))
    agent.getAction(first)
    hidden = agent._lstm_states[0]
    assert hidden.shape == (1, 3, 8)
    assert not np.allclose(hidden[:, 0], hidden[:, 1]) and not np.allclose(hidden[:, 1], hidden[:, 2])
    # env 1's episode ended: its state restarts from zeros, the others carry their memory on
    dones = np.array([False, True, False])
    proba = agent.getActionProba(second, dones)
    assert agent._lstm_states[0] is hidden, "getActionProba moved the LSTM state"
    action = agent.getAction(second, dones, deterministic=True)
    np.testing.assert_array_equal(action, proba.argmax(axis=1))
    fresh.getAction(second)  # every env from zeros
    np.testing.assert_allclose(agent._lstm_states[0][:, 1], fresh._lstm_states[0][:, 1], rtol=1e-6)
    np.testing.assert_allclose(agent._lstm_states[1][:, 1], fresh._lstm_states[1][:, 1], rtol=1e-6)
    for env in (0, 2):
        assert not np.allclose(agent._lstm_states[0][:, env], fresh._lstm_states[0][:, env])
    # a different number of envs (a replay with another --num-cpu) starts over instead of failing
    assert agent.getAction(first[:2]).shape == (2,) and agent._lstm_states[0].shape == (1, 2, 8)


def test_ppo_lstm_policy_flags_reach_the_network(tmp_path):
    kwargs = PPOLSTMModel.makeModelKwargs(None, {"n_steps": 32, "lstm_hidden_size": 16, "activation_fn": "ReLU",
                                                 "ortho_init": False}, env=None)
    assert kwargs == {"n_steps": 32, "policy_kwargs": {"lstm_hidden_size": 16, "activation_fn": torch.nn.ReLU,
                                                       "ortho_init": False}}
    assert PPOLSTMModel.makeModelKwargs(None, {"n_steps": 32}, env=None) == {"n_steps": 32}
    with pytest.raises(UsageError, match="--activation-fn 'gelu': valid choices: tanh, relu"):
        PPOLSTMModel.makeModelKwargs(None, {"activation_fn": "gelu"}, env=None)
    # through the command line: the saved policy has the asked LSTM size
    folder = runFolder(runTrain(*GT, "--algo", "ppo_lstm", "--num-timesteps", "64", "--n-steps", "32",
                                "--batch-size", "32", "--n-epochs", "1", "--lstm-hidden-size", "16",
                                "--activation-fn", "relu", "--log-dir", tmp_path))
    model = PPOLSTMModel.load(os.path.join(folder, "ppo_lstm_model.zip"))
    assert model.model.policy.lstm_actor.hidden_size == 16
    assert any(isinstance(layer, torch.nn.ReLU) for layer in model.model.policy.mlp_extractor.modules())


def test_ppo_lstm_continued_model_keeps_its_policy_settings(tmp_path):
    """Another --lstm-hidden-size for a continued model failed on loading its weights (a size-mismatch traceback,
    exit 1, a run folder left), and any policy flag given replaced the saved policy_kwargs whole (a pixel model's
    CNN features extractor, the activation lost): another value is one line now, a same one keeps the saved policy."""
    continuing = type("Settings", (), {"continue_from": "model.zip"})()
    given = {"n_steps": 32, "lstm_hidden_size": 16, "activation_fn": "relu", "ortho_init": False}
    assert PPOLSTMModel.makeModelKwargs(continuing, given, env=None) == {"n_steps": 32}  # (SB3 keeps the saved ones)
    first_dir = runFolder(runTrain(*GT, "--algo", "ppo_lstm", "--num-timesteps", "64", "--n-steps", "32",
                                   "--batch-size", "32", "--n-epochs", "1", "--lstm-hidden-size", "16",
                                   "--activation-fn", "relu", "--log-dir", tmp_path / "first"))
    saved = os.path.join(first_dir, "ppo_lstm_model.zip")
    assert {name: PPOLSTMModel.savedHyperparams(saved)[name] for name in ("lstm_hidden_size", "activation_fn",
                                                                          "ortho_init")} == {
        "lstm_hidden_size": 16, "activation_fn": "relu", "ortho_init": True}
    has = {"lstm_hidden_size": "has an LSTM of lstm_hidden_size 16, whose layers cannot change size; valid: 16",
           "activation_fn": "has a policy of activation_fn relu, which a continued model keeps; valid: relu"}
    for flags, source, name in ((["--lstm-hidden-size", "8"], "(--lstm-hidden-size)", "lstm_hidden_size"),
                                (["--hyperparam", "lstm_hidden_size:8"], "(--hyperparam-file/--hyperparam)",
                                 "lstm_hidden_size"),
                                (["--activation-fn", "tanh"], "(--activation-fn)", "activation_fn")):
        result = runModule("rl_baselines.train", *GT, "--algo", "ppo_lstm", "--num-timesteps", "64", "--n-steps", "32",
                           "--batch-size", "32", *flags, "--load-rl-model-path", saved, "--log-dir",
                           tmp_path / "second", "--no-vis")
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        value = flags[1].split(":")[-1]
        assert result.stderr.strip().splitlines() == [
            f"error: {name} {value} {source}: {saved} {has[name]}, or leave it out"]
        assert not (tmp_path / "second").exists()
    # the same size continues it, its saved activation kept (the flag's policy_kwargs replaced them: Tanh), and the
    # continued run records the model's settings, not the defaults (256 units, tanh)
    second_dir = runFolder(runTrain(*GT, "--algo", "ppo_lstm", "--num-timesteps", "64", "--n-steps", "32",
                                    "--batch-size", "32", "--n-epochs", "1", "--lstm-hidden-size", "16",
                                    "--load-rl-model-path", saved, "--log-dir", tmp_path / "second"))
    continued = _loadModel(second_dir, "ppo_lstm").model
    assert continued.policy.lstm_actor.hidden_size == 16 and continued.policy_kwargs["activation_fn"] is torch.nn.ReLU
    recorded = yaml.safe_load(open(RunFolder(second_dir).hyperparams_file))
    assert (recorded["lstm_hidden_size"], recorded["activation_fn"]) == (16, "relu")


@pytest.mark.parametrize("algo", ALGOS)
def test_search_space_names_valid_flags(algo):
    algo_class = registered_rl[algo][0]
    space = algo_class.getOptParam()
    assert space and set(space) <= set(algo_class.DEFAULT_HYPERPARAMS)
    for name, (kind, bounds, *scale) in space.items():
        assert kind in (int, float, list)
        value = bounds[-1]
        assert isinstance(algo_class.parserHyperParam({name: str(value)})[name], type(value))
        if kind is not list:
            assert bounds[0] < bounds[1] and scale in ([], ["log"])
            assert not scale or bounds[0] > 0


WRONG_ACTION_TYPE = [
    (["--algo", "sac"], ["--algo sac", "discrete", "-c", "qrdqn", "trpo", "ppo_lstm"], ["sac", "td3", "tqc", "ddpg"]),
    (["--algo", "qrdqn", "-c"], ["--algo qrdqn", "continuous", "sac", "td3", "tqc", "ddpg", "trpo"], ["qrdqn"]),
]


@pytest.mark.parametrize("arguments,words,absent", WRONG_ACTION_TYPE, ids=["sac-discrete", "qrdqn-continuous"])
def test_wrong_action_type_is_a_one_line_error(tmp_path, arguments, words, absent):
    result = runModule("rl_baselines.train", *GT, *arguments, "--log-dir", tmp_path, "--no-vis")
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    supporting = lines[0].split("algorithms that do:")[1].replace(",", " ").split()
    assert not set(absent) & set(supporting), lines[0]
    assert snapshot(str(tmp_path)) == {}


BAD_VALUES = [
    (["--algo", "ddpg", "-c", "--noise-type", "gauss"], ["--noise-type", "'gauss'", "none, normal, ou"]),
    (["--algo", "td3", "-c", "--hyperparam", "noise_type:gauss"], ["noise_type", "'gauss'", "none, normal, ou"]),
    (["--algo", "sac", "-c", "--ent-coef", "lots"], ["--ent-coef", "'lots'", "auto"]),
    (["--algo", "tqc", "-c", "--ent-coef", "-0.1"], ["--ent-coef", "'-0.1'", "positive number"]),
    # every quantile of each critic dropped: an empty target, a NaN critic loss at every update
    (["--algo", "tqc", "-c", "--top-quantiles-to-drop-per-net", "25", "--num-timesteps", "300"],
     ["'top_quantiles_to_drop_per_net'", "at most 24", "got 25", "no target quantile"]),
    (["--algo", "tqc", "-c", "--hyperparam", "top_quantiles_to_drop_per_net:100",
      "--num-timesteps", "300"], ["at most 24", "got 100"]),
]


@pytest.mark.parametrize("arguments,words", BAD_VALUES, ids=["noise-type", "hyperparam-noise-type", "ent-coef",
                                                             "negative-ent-coef", "tqc-drop-every-quantile",
                                                             "tqc-drop-more-than-every-quantile"])
def test_bad_value_is_refused_before_training(tmp_path, arguments, words):
    with pytest.raises(UsageError) as error:  # the train command prints it as one line, exit code 2
        main([*GT, *arguments, "--log-dir", str(tmp_path), "--no-vis"])
    for word in words:
        assert word in str(error.value), (word, str(error.value))
    assert snapshot(str(tmp_path)) == {}


def test_saved_hyperparameters_are_read_from_the_zip_as_the_flags_read_them(tmp_path):
    """A continued model's hyperparameters come from the zip's data, typed as --hyperparam would type them (a
    NoneOrPositive target_kl, not a float), without building the model; a constant schedule (clip_range) as its value,
    where it was left out and hyperparams.yaml gave the default (0.2) for a model saved with 0.1; schedules that change
    are left out."""
    path = str(tmp_path / "ppo.zip")
    PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, gamma=0.9, target_kl=0.05, clip_range=0.1,
        device="cpu").save(path)
    saved = PPO2Model.savedHyperparams(path)
    assert saved["gamma"] == 0.9 and saved["n_steps"] == 64 and saved["batch_size"] == 32
    assert saved["target_kl"] == PPO2Model.parserHyperParam({"target_kl": "0.05"})["target_kl"]
    assert saved["clip_range_vf"] == PPO2Model.parserHyperParam({"clip_range_vf": "none"})["clip_range_vf"]
    assert saved["clip_range"] == 0.1
    PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, clip_range=lambda progress: 0.2 * progress,
        device="cpu").save(path)
    assert "clip_range" not in PPO2Model.savedHyperparams(path)  # a schedule that changes


def _flagHelp(algo: str, flag: str) -> str:
    parser = registered_rl[algo][0].customArguments(baseParser())
    return next(action.help for action in parser._actions if flag in action.option_strings)


def test_shared_flags_are_declared_once():
    """--lr-schedule and --features-extractor read alike wherever they appear (but for --features-extractor's default,
    the algorithm's: ppo2 MediumCNN, gail NatureCNN); the learner flags of her and gail show one default when every
    learner has the same (sb3_base's helpers declare them)."""
    assert len({_flagHelp(algo, "--lr-schedule") for algo in ("ppo2", "her", "gail")}) == 1
    helps = {algo: _flagHelp(algo, "--features-extractor") for algo in ("ppo2", "gail")}
    assert helps["ppo2"].endswith(" [medium]") and helps["gail"].endswith(" [nature]")
    assert helps["ppo2"].removesuffix(" [medium]") == helps["gail"].removesuffix(" [nature]")
    assert _flagHelp("gail", "--gamma") == "[0.99]" and _flagHelp("her", "--gamma") == "[0.99]"
    assert _flagHelp("gail", "--n-steps") == "[ppo2: 128, a2c: 5, trpo: 512]"
