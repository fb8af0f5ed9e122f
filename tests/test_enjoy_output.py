"""What a replay (``replay.enjoy_baselines``) tells its user: the model file it plays, the line of a replay in which
no episode finished, the visdom environment of its live plots and the action figure's title; and a SIGINT stops a
replay started with it ignored. The checkpoint lines: tests/test_enjoy_checkpoints.py."""
from __future__ import annotations

import os

import numpy as np
import pytest

from replay import enjoy_baselines, replay_plots
from rl_baselines.core.manifests import readManifest

pytestmark = pytest.mark.slow  # replays of a trained run: left out of `make test-fast`

REPLAY = ["--num-timesteps", "10", "--no-progress"]


def _modelLines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("Model: ")]


def test_every_replay_names_the_model_file_it_plays(trainedRun, capsys):
    """A finished run's latest model and ``--model best`` were played without a ``Model:`` line, which a checkpoint
    and an unfinished run's latest model had."""
    latest, best = readManifest(trainedRun), readManifest(os.path.join(trainedRun, "best"))
    assert enjoy_baselines.main(["--log-dir", trainedRun, *REPLAY]) == 0
    assert _modelLines(capsys.readouterr().out) == [
        f"Model: {trainedRun}/ppo2_model.zip, the run's final model, saved at step {latest['num_timesteps']:,}"]
    assert enjoy_baselines.main(["--log-dir", trainedRun, *REPLAY, "--model", "best"]) == 0
    assert _modelLines(capsys.readouterr().out) == [
        f"Model: {trainedRun}/best/ppo2_model.zip, the run's best model, saved at step {best['num_timesteps']:,} "
        f"(mean reward {best['mean_reward']:.2f} over the last training episodes)"]


def test_the_no_episode_line_says_whose_reward_it_is():
    """With several envs the line gave one number, "reward so far", without saying it was their mean."""
    assert enjoy_baselines.noEpisodeLine(20, np.array([1.5])) == "No episode finished in 20 steps; reward so far: 1.50"
    assert enjoy_baselines.noEpisodeLine(20, np.array([1.0, 2.0, 0.0, 1.0])) == (
        "No episode finished in 20 steps (4 envs, 5 steps each); mean reward so far per env: 1.00")


def test_the_continuous_action_figure_has_a_plain_title():
    """Its title named an internal function: "mean action (getActionProba) and actions taken"."""
    rng = np.random.default_rng(0)
    trace = replay_plots.ReplayTrace(discrete=False, plot_type="2D")
    for step in range(20):
        trace.states.append(rng.normal(size=2))
        trace.targets.append(np.zeros(2))
        trace.probas.append(np.tanh(rng.normal(size=2)))
        trace.actions.append(trace.probas[-1] + rng.normal(scale=0.3, size=2))
        trace.rewards.append(0.0)
        trace.episodes.append(0)
    figure = replay_plots.actionProbaFigure(trace, "sac MobileRobotGymEnv-v0 ground_truth")
    assert figure._suptitle.get_text().splitlines() == ["sac MobileRobotGymEnv-v0 ground_truth",
                                                        "the policy's mean action and the actions taken"]
    drawn = {}

    class Viz:
        def line(self, **kwargs):
            drawn.update(kwargs)

    live = replay_plots.ReplayVisdom(8097, "test", title="sac")
    live._viz = Viz()
    live._drawProba(trace, np.arange(20))
    assert drawn["opts"]["title"] == "sac the policy's mean action and the actions taken"
