"""maskable_ppo (sb3-contrib MaskablePPO): trained, resumed, replayed and swept like the other SB3-backed algorithms,
and the env's action masks reach the agent wherever it acts.

The masks are checked with a policy made to always prefer one move (action 0): on MobileRobot that move ends at a wall,
where it is masked. With the masks, the agent takes another move and never bumps (no -1 reward); without them it
bumps at every step once at the wall. The replay (enjoy, the API's playEpisodes), the periodic evaluation, the
dataset generator's ``--policy`` replay and the learning benchmark's count of masked moves must all give such an
agent its masks.
"""
from __future__ import annotations

import glob
import os
import sys

import numpy as np
import pytest
import torch
from conftest import REPO, interruptThenResume, runModule, trainHere
from test_determinism import monitorRows

from environments import dataset_generator
from replay import enjoy_baselines
from rl_baselines.core.registry import registered_rl
from rl_baselines.envs.factory import envKwargsFromArgs
from rl_baselines.rl_algorithm.maskable_ppo import MaskablePPOModel
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.runs.evaluation import Evaluator, readEvaluations
from rl_baselines.runs.loaded_run import loadRun, playEpisodes
from rl_baselines.runs.train_config import TrainConfig, readArgsRecord
from rl_baselines.sweeps.sweep import checkGrid
from srl_toolbox.cli import UsageError

sys.path.insert(0, REPO)
from benchmarks import masked_moves  # noqa: E402

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]
# Checkpoints at rollout and episode ends (both 250 steps long: a resumed run then goes on exactly, as in
# test_resume), 2 epochs per rollout.
RUN = [*GT, "--algo", "maskable_ppo", "--num-timesteps", "500", "--checkpoint-freq", "250", "--seed", "2",
       "--eval-freq", "250", "--eval-episodes", "1", "--hyperparam", "n_steps:250", "batch_size:125", "n_epochs:2"]
EPISODE = 250  # MobileRobot's episode length


@pytest.fixture(scope="module")
def maskedRun(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A short maskable_ppo run (evaluated, checkpointed), uninterrupted."""
    return trainHere("--log-dir", tmp_path_factory.mktemp("masked"), *RUN)


def _preferAction0(agent: MaskablePPOModel) -> MaskablePPOModel:
    """:return: the agent, its policy made to prefer action 0 whatever it observes (others when 0 is masked)"""
    with torch.no_grad():
        agent.model.policy.action_net.weight.zero_()
        agent.model.policy.action_net.bias.copy_(torch.tensor([20.0, 0.0, 0.0, 0.0]))
    return agent


@pytest.fixture()
def biasedLoad(monkeypatch):
    """Every maskable_ppo model loaded during the test prefers action 0."""
    load = MaskablePPOModel.load.__func__

    def biased(cls, load_path, settings=None):
        return _preferAction0(load(cls, load_path, settings))

    monkeypatch.setattr(MaskablePPOModel, "load", classmethod(biased))


def test_train_writes_an_evaluated_run(maskedRun):
    model = registered_rl["maskable_ppo"][0].load(os.path.join(maskedRun, "maskable_ppo_model.zip"))
    assert type(model.model).__name__ == "MaskablePPO" and model.model._n_updates > 0
    assert model.num_timesteps == 500 and model.model.n_epochs == 2
    assert list(readEvaluations(maskedRun)["timesteps"]) == [250, 500]
    # sweeps and hyperparam_search: ppo2's hyperparameters and search space
    assert MaskablePPOModel.getOptParam() == PPO2Model.getOptParam()


def test_interrupted_then_resumed_run_equals_the_uninterrupted_one(maskedRun, tmp_path, monkeypatch):
    # Ctrl-C twice at step 400: the last checkpoint is at 250
    run_dir = interruptThenResume(monkeypatch, str(tmp_path), RUN, 400)
    assert monitorRows(run_dir) == monitorRows(maskedRun)
    np.testing.assert_array_equal(readEvaluations(run_dir)["results"], readEvaluations(maskedRun)["results"])
    resumed, reference = (MaskablePPOModel.load(os.path.join(folder, "maskable_ppo_model.zip")).model.policy
                          for folder in (run_dir, maskedRun))
    for name, tensor in reference.state_dict().items():
        assert torch.equal(resumed.state_dict()[name], tensor), name


def test_masks_reach_the_agent_wherever_it_acts(maskedRun, tmp_path, biasedLoad, capsys):
    run = loadRun(maskedRun)
    env = run.makeEnv()
    try:
        # the API's replay: with the masks no bump (reward >= 0); the same agent without them bumps at the wall
        rewards, lengths = playEpisodes(run.model, env, 1)
        assert lengths == [EPISODE] and rewards[0] >= 0
        run.model.USES_ACTION_MASKS = False
        rewards, _ = playEpisodes(run.model, env, 1)
        assert rewards[0] < -EPISODE / 2
        del run.model.USES_ACTION_MASKS

        # the periodic evaluation (the training env's normalisation: the run's, as the replay env has it)
        run.model.env = env
        config = TrainConfig.fromRecord(readArgsRecord(maskedRun))
        evaluator = Evaluator(run.model, config, envKwargsFromArgs(config), eval_freq=1, n_episodes=1)
        mean, _ = evaluator.evaluate(0)
        assert mean >= 0 and evaluator.ep_lengths == [[EPISODE]]
    finally:
        env.close()

    # enjoy
    capsys.readouterr()
    assert enjoy_baselines.main(["--log-dir", maskedRun, "--num-timesteps", str(EPISODE)]) == 0
    out = capsys.readouterr().out
    assert float(out.split("Mean episode reward over 1 episode: ")[1].split()[0]) >= 0  # a bump costs -1
    # the dataset generator's --policy replay (one process: the patched load applies)
    assert dataset_generator.main(["--policy", maskedRun, "--num-episode", "1", "--img-shape", "3", "32", "32",
                                   "--save-path", str(tmp_path), "--no-progress", "--seed", "1"]) == 0
    (folder,) = glob.glob(os.path.join(str(tmp_path), "*", "preprocessed_data.npz"))
    with np.load(folder) as data:
        rewards = data["rewards"]
    assert len(rewards) == EPISODE and np.all(rewards >= 0)
    # the learning benchmark's count of masked moves (a policy that would bump without its masks)
    assert masked_moves.playedMaskedMoves(loadRun(maskedRun), 1, seed=0) == 0


def test_sweep_and_refusals(tmp_path):
    log_dir = tmp_path / "logs"
    with pytest.raises(UsageError) as info:
        checkGrid(["maskable_ppo"], ["MobileRobotGymEnv-v0", "OmnirobotEnv-v0"], ["ground_truth"],
                  ["--num-timesteps", "300"])
    assert str(info.value).startswith("1 bad combination (algo x env x srl-model): maskable_ppo x OmnirobotEnv-v0 x "
                                      "ground_truth (--algo maskable_ppo needs action masks, which OmnirobotEnv-v0 "
                                      "does not offer; envs with masks: ")
    result = runModule("rl_baselines.pipeline", "--algo", "maskable_ppo", *GT, "--num-iteration", "1",
                       "--num-timesteps", "256", "--log-dir", log_dir, "--no-vis", "--no-progress")
    assert result.returncode == 0, result.stdout + result.stderr
    (model,) = glob.glob(os.path.join(log_dir, "MobileRobotGymEnv-v0", "ground_truth", "maskable_ppo", "*",
                                      "maskable_ppo_model.zip"))
    assert MaskablePPOModel.load(model).num_timesteps == 256
