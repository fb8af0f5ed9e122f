"""The train command's progress bar (rl_baselines.runs.progress_bar.ProgressCallback), on a fake clock: it redraws
between two refreshes, says what the run does while it counts no step (updating, evaluating, saving),
leaves the ETA out during an off-policy warm-up and then rates the training only, and prints nothing when hidden."""
from __future__ import annotations

import io
import re
import signal
import warnings

import pytest
from conftest import runModule
from stable_baselines3 import DQN, PPO
from stable_baselines3.common.env_util import make_vec_env
from test_training_callbacks import FakeAlgo, FakeEvaluator, FakeRunLogger, Learner, _drive
from tqdm import tqdm

from rl_baselines.core.base import lastStep
from rl_baselines.core.checkpointing import runDescription
from rl_baselines.rl_algorithm.deepq import DQNModel
from rl_baselines.rl_algorithm.ppo1 import PPO1Model
from rl_baselines.runs.callbacks import TrainingCallbacks, standardCallbacks
from rl_baselines.runs.progress_bar import ProgressCallback
from rl_baselines.runs.training_callbacks import EpisodeFeed, RefreshCallback
from srl_toolbox import terminal


class Clock:
    """tqdm's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _progress(tmp_path, total: int = 8000, enabled: bool = True) -> tuple[ProgressCallback, Clock, EpisodeFeed]:
    feed = EpisodeFeed(str(tmp_path / "monitor"))
    progress = ProgressCallback(feed, total_timesteps=total, start_timesteps=0, enabled=enabled)
    clock = Clock()
    progress.bar._time = clock
    return progress, clock, feed


def _lines(stderr: str) -> list[str]:
    """:return: the bar's lines as drawn (tqdm redraws a line after a carriage return)"""
    return [line for line in re.split(r"[\r\n]", stderr) if line.strip()]


def test_the_bar_redraws_between_refreshes_and_says_updating_after_a_long_rollout(tmp_path, capsys):
    progress, clock, feed = _progress(tmp_path)
    callbacks = TrainingCallbacks([RefreshCallback(feed, 1000, 0, [progress])])
    learner = Learner()
    for step in range(0, 501, 10):  # a slow rollout (10 steps/s) without a refresh (every 1000 steps)
        _drive(callbacks, learner, range(step, step + 1))
        clock.now += 1.0
    assert "500/8000" in _lines(capsys.readouterr().err)[-1]  # moved and redrawn with the steps, once a second
    callbacks.on_rollout_end()  # (SB3) the rollout ended: the update, which counts no step, starts
    line = _lines(capsys.readouterr().err)[-1]
    assert "500/8000" in line and "updating" in line  # drawn at once
    clock.now += 30.0  # the update
    callbacks.on_rollout_start()
    _drive(callbacks, learner, range(510, 511))
    line = _lines(capsys.readouterr().err)[-1]
    assert "510/8000" in line and "updating" not in line
    assert "[01:21<19:49,  6.30steps/s" in line  # 510 steps in 81 s, the update's included, and the ETA with them
    # a rollout of a few steps (SAC's, then its gradient steps) is too short to say so
    callbacks.on_rollout_start()
    clock.now += 0.01
    _drive(callbacks, learner, range(520, 521))
    callbacks.on_rollout_end()
    assert "updating" not in capsys.readouterr().err and "updating" not in progress.bar.postfix
    # an update the run ends with is not in the last line
    callbacks.on_rollout_start()
    clock.now += 2.0
    callbacks.on_rollout_end()
    assert "updating" in capsys.readouterr().err
    callbacks.close(520)
    assert "updating" not in _lines(capsys.readouterr().err)[-1]


def test_the_bar_says_evaluating_and_saving_checkpoint_while_they_last(tmp_path, capsys):
    run_dir = str(tmp_path)
    seen: list[tuple[str, str]] = []

    class Evaluator(FakeEvaluator):
        def evaluate(self, num_timesteps: int, between_steps=None) -> tuple[float, float]:
            seen.append(("evaluation", callbacks.find(ProgressCallback).bar.postfix))
            return super().evaluate(num_timesteps, between_steps)

    class Algo(FakeAlgo):
        def save(self, save_path: str, _locals=None) -> None:
            seen.append(("save", callbacks.find(ProgressCallback).bar.postfix))
            super().save(save_path, _locals)

    algo = Algo()
    run_info = runDescription(run_dir, type("Args", (), {"env": "Fake-v0", "srl_model": "ground_truth"}))
    callbacks = standardCallbacks(algo, "fake", run_dir, 1000, checkpoint_freq=100, run_info=run_info,
                                  evaluator=Evaluator([1.0]), run_logger=FakeRunLogger())
    algo.num_timesteps = 100
    _drive(callbacks, Learner(), range(100, 101))
    # the evaluation, its best model, the checkpoint and the latest model beside it
    assert seen == [("evaluation", "evaluating"), ("save", "saving best model"), ("save", "saving checkpoint"),
                    ("save", "saving checkpoint")]
    stderr = capsys.readouterr().err
    assert "evaluating" in stderr and "saving checkpoint" in stderr  # drawn at once
    assert callbacks.find(ProgressCallback).bar.postfix == ""  # and gone once done
    callbacks.close(100)


@pytest.mark.parametrize("clean_points, says", [(True, "stopping at the end of this update"),
                                                 (False, "stopping at the next step")])
def test_a_stop_asked_during_an_evaluation_is_said_at_once_and_outlasts_it(tmp_path, capsys, clean_points, says):
    """A Ctrl-C during an evaluation's episodes (about 17 s from pixels on the arm) showed nothing until the
    evaluation ended: the bar said `stopping` from the next training step only. The episodes' steps now have the
    stop said, beside `evaluating`, and it stays once the evaluation ends, until the checkpoint."""
    run_dir = str(tmp_path)
    postfixes: list[str] = []

    class Evaluator(FakeEvaluator):
        def evaluate(self, num_timesteps: int, between_steps=None) -> tuple[float, float]:
            def step() -> None:
                between_steps()
                postfixes.append(callbacks.find(ProgressCallback).bar.postfix)

            step()  # nothing asked yet: nothing said
            callbacks.requestStop(signal.SIGINT)  # (the handler only flags: nothing drawn from it)
            postfixes.append(callbacks.find(ProgressCallback).bar.postfix)
            step()
            step()  # said once
            return super().evaluate(num_timesteps)

    class Algo(FakeAlgo):
        CHECKPOINT_AT_CLEAN_POINTS = clean_points

    algo = Algo()
    run_info = runDescription(run_dir, type("Args", (), {"env": "Fake-v0", "srl_model": "ground_truth"}))
    callbacks = standardCallbacks(algo, "fake", run_dir, 1000, checkpoint_freq=0, run_info=run_info,
                                  evaluator=Evaluator([1.0]), run_logger=FakeRunLogger())
    learner = Learner()
    # the evaluation at 100; without clean points the checkpoint follows at that step, and training stops
    assert _drive(callbacks, learner, range(90, 101)) == [True] * 10 + [clean_points]
    assert postfixes == ["evaluating", "evaluating", f"evaluating, {says}", f"evaluating, {says}"]
    assert f"evaluating, {says}" in capsys.readouterr().err  # drawn at once, during the evaluation
    if clean_points:
        assert callbacks.find(ProgressCallback).bar.postfix == says  # the evaluation ended, the stop is still said
        callbacks.cleanPoint(100)  # the end of the update: the checkpoint, then the stop
        assert _drive(callbacks, learner, range(101, 102)) == [False]
    assert callbacks.find(ProgressCallback).bar.postfix == ""
    assert callbacks.last_checkpoint is not None
    callbacks.close(100)


def test_a_warm_up_shows_no_eta_and_the_rate_then_counts_the_training_only(tmp_path):
    progress, clock, feed = _progress(tmp_path)
    callbacks = TrainingCallbacks([RefreshCallback(feed, 100, 0, [progress])])
    learner = Learner()
    learner.learning_starts = 1000  # (SB3's off-policy learners: random actions until this step)
    for step in range(0, 1000, 10):  # the warm-up, at 1000 steps/s
        _drive(callbacks, learner, range(step, step + 1))
        clock.now += 0.01
        line = str(progress.bar)
        assert "warm-up: learning starts at step 1000" in line and "<" not in line, line  # no ETA
    for step in range(1000, 1501, 10):  # the training, at 10 steps/s
        _drive(callbacks, learner, range(step, step + 1))
        clock.now += 1.0
    clock.now -= 1.0
    line = str(progress.bar)
    # the rate of the training since learning started, and its ETA: (8000 - 1500) / 10 s
    assert "warm-up" not in line and "10.00steps/s" in line and "<10:50" in line, line
    callbacks.close(1500)


def test_a_learner_without_warm_up_left_or_with_one_longer_than_the_run_shows_its_eta(tmp_path):
    for learning_starts, at_step in ((1000, 2000), (9000, 0)):
        progress, clock, feed = _progress(tmp_path)
        learner = Learner()
        learner.learning_starts, learner.num_timesteps = learning_starts, at_step
        callbacks = TrainingCallbacks([RefreshCallback(feed, 100, at_step, [progress])])
        _drive(callbacks, learner, range(at_step + 10, at_step + 11))
        assert progress.learning_starts is None and progress.bar.eta
        callbacks.close(at_step + 10)


def test_a_hidden_bar_prints_nothing(tmp_path, capsys):
    progress, clock, feed = _progress(tmp_path, enabled=False)
    callbacks = TrainingCallbacks([RefreshCallback(feed, 100, 0, [progress])])
    learner = Learner()
    learner.learning_starts = 50
    for step in range(0, 300, 10):
        callbacks.on_rollout_start()
        _drive(callbacks, learner, range(step, step + 1))
        clock.now += 5.0
        callbacks.on_rollout_end()
    with progress.showing("evaluating"):
        pass
    callbacks.close(300)
    assert capsys.readouterr().err == ""


def test_deepq_learning_starts_counts_from_the_runs_start():
    model = DQNModel()
    model.hyperparams = {**model.hyperparams, "learning_starts": 500}
    model.run_start_timesteps, model.num_timesteps = 2000, 2300
    assert model.learning_starts == 2500  # (its loop: num_timesteps - scheduleStart() >= learning_starts)


@pytest.mark.slow
def test_an_off_policy_run_shows_its_warm_up(tmp_path):
    result = runModule("rl_baselines.train", "--no-vis", "--algo", "sac", "--env", "MobileRobotGymEnv-v0",
                       "--srl-model", "ground_truth", "-c", "--num-timesteps", "300", "--hyperparam",
                       "learning_starts:150", "--log-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "warm-up: learning starts at step 150" in result.stderr  # SB3's learning_starts reached the bar
    assert "300/300" in result.stderr and "warm-up" not in _lines(result.stderr)[-1]


def test_the_total_is_the_step_an_sb3_learner_stops_at(tmp_path):
    """SB3 steps all its envs at once and an on-policy learner whole rollouts: the bar's total (and so its ETA) is the
    budget rounded up to them, not a total that grows at the end (a 1,100-step budget of 512-step rollouts: 1,536)."""
    progress, _, _ = _progress(tmp_path, total=1100)
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=512, batch_size=64, device="cpu")
    progress.init_callback(model)
    progress.on_training_start({}, {})
    assert progress.bar.total == 1536
    assert lastStep(model, 512, 1100) == 1536 and lastStep(model, 0, 1024) == 1024
    assert lastStep(model, 2048, 1100) == 1100  # (a budget already passed)
    off_policy = DQN("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2), device="cpu")
    assert lastStep(off_policy, 0, 1001) == 1002  # its envs step together
    assert lastStep(Learner(), 0, 1100) == 1100  # an algorithm's own learner: the budget
    progress.finish()


def test_the_total_is_the_step_an_own_learner_stops_at(tmp_path):
    """ppo1 (an algorithm written here) also trains whole rollouts of all its envs: a 300-step budget of 128-step
    rollouts on 2 envs ends at 512, the bar's total from its first line (its callbacks start after its first step,
    the total counts from the run's start); deepq steps its envs together."""
    progress, _, feed = _progress(tmp_path, total=300)
    model = PPO1Model()
    model.env = make_vec_env("CartPole-v1", n_envs=2)
    model.hyperparams["timesteps_per_actorbatch"] = 128
    model.num_timesteps = 2  # its first vectorised step
    TrainingCallbacks([RefreshCallback(feed, 1000, 0, [progress])])({"self": model}, {})
    assert progress.bar.total == 512
    assert lastStep(model, 0, 256) == 256 and lastStep(model, 256, 300) == 512
    deepq = DQNModel()
    deepq.env = model.env
    assert lastStep(deepq, 0, 1001) == 1002
    progress.finish()
    model.env.close()


def test_the_bar_is_first_drawn_with_its_final_total(tmp_path, capsys):
    """The bar was drawn while the envs and the learner were built, with the budget as its total (0/1100), then
    redrawn with the learner's last step (0/1536): it is first drawn when training starts, with that total."""
    progress, _, _ = _progress(tmp_path, total=1100)
    assert capsys.readouterr().err == ""  # (the envs and the learner are being built)
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=512, batch_size=64, device="cpu")
    progress.init_callback(model)
    progress.on_training_start({}, {})
    progress.finish()
    drawn = _lines(capsys.readouterr().err)
    assert drawn and all("/1536" in line for line in drawn), drawn
    unstarted, _, _ = _progress(tmp_path, total=1100)
    unstarted.finish()  # (a set-up cut short: never drawn)
    assert capsys.readouterr().err == ""


def test_a_warning_during_a_bar_gets_a_line_of_its_own():
    """The commands show warnings above the progress bars (srl_toolbox.terminal.showAboveBars), not glued to the end
    of a bar's line as Python's default shows them on the same stream."""
    stream = io.StringIO()
    bar = tqdm(total=10, file=stream, ascii=True, mininterval=0)
    bar.update(3)

    def write(message, category, filename, lineno, file=None, line=None) -> None:  # (Python's, outside pytest)
        file.write(warnings.formatwarning(message, category, filename, lineno, line))

    show = terminal.showAboveBars(write)
    assert terminal.showAboveBars(show) is show  # (a command run again in one process wraps it once)
    show(UserWarning("careful"), UserWarning, "x.py", 1, file=stream)
    bar.update(1)
    bar.close()
    text, warning = stream.getvalue(), warnings.formatwarning(UserWarning("careful"), UserWarning, "x.py", 1)
    at = text.index(warning)
    assert at > 0 and text[at - 1] in "\r\n", repr(text)  # at the start of a line, the bar cleared first
    assert "4/10" in text[at:]  # and the bar drawn again below it
    with pytest.warns(UserWarning, match="recorded"):  # recorded where warnings are recorded (pytest.warns)
        warnings.showwarning = terminal.showAboveBars(warnings.showwarning)
        warnings.warn("recorded", UserWarning, stacklevel=1)
