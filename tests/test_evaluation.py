"""Evaluation episodes during training (``train --eval-freq N --eval-episodes K``, rl_baselines.runs.evaluation).

- evaluations.npz has SB3's EvalCallback keys and shapes, one row per multiple of N crossed, and best/ holds the
  model of the best evaluation mean (its manifest says so);
- evaluating changes nothing in training: the monitor rows equal those of the same run without evaluation;
- a run interrupted after a checkpoint (with evaluations written after it) and resumed ends with the evaluations,
  best model and training of the uninterrupted run;
- every registered algorithm (SB3-backed, the torch ones, evolution strategies, random agent, HER's Dict
  observations, ppo_lstm's recurrent state, plugins) evaluates;
- the readers (replay.results, gather_results, aggregate_plots, plots) use the evaluations when a run has them;
- the pipeline passes the flags to train (hyperparam_search's use of them: tests/test_hyperparam_search.py).
"""
from __future__ import annotations

import csv
import glob
import json
import os
import shutil
import warnings

import numpy as np
import pytest
from conftest import runModule
from test_determinism import ALGO_ARGS, monitorRows

from replay import aggregate_plots, compare_plots, enjoy_baselines, gather_results, plots
from replay.results import findRuns, loadCurves
from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.registry import registered_rl
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.runs import train, train_checks
from rl_baselines.runs.callbacks import TrainingCallbacks
from rl_baselines.runs.evaluation import EVALUATIONS_FILE, readEvaluations
from srl_toolbox.cli import UsageError

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--shape-reward"]
# Checkpoints every 500 steps of one env fall on rollout and episode ends (MobileRobot episodes last 250 steps), as in
# test_resume: a resumed run then trains exactly as the uninterrupted one.
PPO2 = [*GT, "--algo", "ppo2", "--num-timesteps", "1000", "--checkpoint-freq", "500", "--seed", "1",
        "--hyperparam", "n_steps:125", "batch_size:25", "n_epochs:2", "--num-cpu", "1"]
EVAL = ["--eval-freq", "200", "--eval-episodes", "2"]
EVAL_TAGS = ("eval/mean_reward", "eval/std_reward", "eval/mean_ep_length", "eval/success_rate")


def _train(log_dir: str, *args: str) -> str:
    """:return: the run folder of an in-process train command that must succeed"""
    before = set(glob.glob(os.path.join(log_dir, "*", "*", "*", "*")))
    assert train.main(["--no-vis", "--no-progress", "--log-dir", log_dir, *args]) == 0
    (run_dir,) = set(glob.glob(os.path.join(log_dir, "*", "*", "*", "*"))) - before
    return run_dir


def _progressRows(run_dir: str) -> list[dict[str, str]]:
    """:return: the run's progress.csv rows, without their wall-clock columns (time/fps, time/time_elapsed)"""
    with open(RunFolder(run_dir).progress_file, encoding="utf-8") as handle:
        return [{name: value for name, value in row.items() if name not in ("time/fps", "time/time_elapsed")}
                for row in csv.DictReader(handle)]


def _manifest(folder: str) -> dict:
    with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def evaluatedRun(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The ppo2 run with evaluations every 200 steps, uninterrupted."""
    return _train(str(tmp_path_factory.mktemp("evaluated")), *PPO2, *EVAL)


def test_evaluations_file_and_best_model(evaluatedRun, tmp_path):
    evaluations = readEvaluations(evaluatedRun)
    assert list(evaluations["timesteps"]) == [200, 400, 600, 800, 1000]
    assert evaluations["results"].shape == evaluations["ep_lengths"].shape == (5, 2)
    assert evaluations["results"].dtype == np.float64 and evaluations["ep_lengths"].dtype.kind == "i"
    assert np.all(evaluations["ep_lengths"] == 250)  # MobileRobot's episode length: whole episodes were played
    # same starts at every evaluation, deterministic actions: the two episodes differ (two starts), and SB3's own
    # reader takes the file
    assert not np.all(evaluations["results"][:, 0] == evaluations["results"][:, 1])
    with np.load(os.path.join(evaluatedRun, EVALUATIONS_FILE)) as data:
        assert {"timesteps", "results", "ep_lengths"} <= set(data.files)
    means = evaluations["results"].mean(axis=1)
    best = _manifest(os.path.join(evaluatedRun, "best"))
    assert best["selected_by"] == "evaluation"
    assert best["mean_reward"] == pytest.approx(means.max())
    assert best["num_timesteps"] == int(evaluations["timesteps"][int(np.argmax(means))])
    # progress.csv: each evaluation in a row at its own step, as SB3's EvalCallback writes it (it went with the
    # algorithm's next row, a later step)
    with open(RunFolder(evaluatedRun).progress_file, encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("eval/mean_reward")]
    assert [int(row["time/total_timesteps"]) for row in rows] == [200, 400, 600, 800, 1000]
    assert [float(row["eval/mean_reward"]) for row in rows] == pytest.approx(list(means))
    # ... holding the evaluation's values only: the training values recorded for ppo2's next row stay for it, so each
    # tag has one value per step (at 1000 an evaluation and a rollout's row fall together), and the wall-clock column
    # (SB3's, written with its rows) never goes back
    assert all(set(name for name, value in row.items() if value) <= {"time/total_timesteps", *EVAL_TAGS}
               for row in rows)
    with open(RunFolder(evaluatedRun).progress_file, encoding="utf-8") as handle:
        every_row = list(csv.DictReader(handle))
    for name in set(every_row[0]) - {"time/total_timesteps"}:
        steps = [row["time/total_timesteps"] for row in every_row if row[name]]
        assert len(steps) == len(set(steps)), name
    elapsed = [int(row["time/time_elapsed"]) for row in every_row if row["time/time_elapsed"]]
    assert len(elapsed) == 8 and elapsed == sorted(elapsed)

    # evaluating changed nothing in training: the same run without evaluation has the same episodes
    plain = _train(str(tmp_path), *PPO2)
    assert monitorRows(plain) == monitorRows(evaluatedRun)
    assert not os.path.exists(os.path.join(plain, EVALUATIONS_FILE))
    # without evaluation best/ follows the training reward, after --min-episodes-save (100) episodes: none here
    assert not os.path.exists(os.path.join(plain, "best"))


def test_interrupted_then_resumed_run_evaluates_as_the_uninterrupted_one(evaluatedRun, tmp_path, monkeypatch):
    original = TrainingCallbacks.on_step

    def interruptAt700(self):  # a second Ctrl-C at step 700: no checkpoint after the one at 500
        keep_going = original(self)
        if self.num_timesteps >= 700:
            raise KeyboardInterrupt
        return keep_going

    monkeypatch.setattr(TrainingCallbacks, "on_step", interruptAt700)
    log_dir = str(tmp_path)
    assert train.main(["--no-vis", "--no-progress", "--log-dir", log_dir, *PPO2, *EVAL]) == 130
    monkeypatch.setattr(TrainingCallbacks, "on_step", original)
    (run_dir,) = glob.glob(os.path.join(log_dir, "*", "*", "*", "*"))
    # the killed process got to the evaluation at 600, after the checkpoint at 500
    assert list(readEvaluations(run_dir)["timesteps"]) == [200, 400, 600]
    before = readEvaluations(run_dir)

    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    resumed, reference = readEvaluations(run_dir), readEvaluations(evaluatedRun)
    assert set(resumed) == set(reference)
    for name in reference:
        np.testing.assert_array_equal(resumed[name], reference[name])
    np.testing.assert_array_equal(resumed["results"][:2], before["results"][:2])  # kept from before the checkpoint
    assert monitorRows(run_dir) == monitorRows(evaluatedRun)
    assert _progressRows(run_dir) == _progressRows(evaluatedRun)  # time/iterations too: rollouts of the whole run
    best, reference_best = _manifest(os.path.join(run_dir, "best")), _manifest(os.path.join(evaluatedRun, "best"))
    assert (best["mean_reward"], best["num_timesteps"]) == (reference_best["mean_reward"],
                                                             reference_best["num_timesteps"])


STEPS, EVAL_FREQ = 200, 100
# Also trained without evaluation, to check that evaluating changed no episode: the algorithms with their own
# generators (random actions, exploration, perturbations), a recurrent state or a second goal-conditioned env.
UNCHANGED_CHECKED = ("ars", "cem", "cma-es", "deepq", "her", "ppo_lstm", "random_agent", "sac")


@pytest.mark.parametrize("algo", sorted(registered_rl))
def test_every_algorithm_evaluates(tmp_path, algo):
    actions = [] if ActionType.DISCRETE in registered_rl[algo][2] else ["-c"]
    command = ["--algo", algo, *GT, *actions, "--num-timesteps", str(STEPS), *ALGO_ARGS.get(algo, [])]
    run_dir = _train(str(tmp_path / "evaluated"), *command, "--eval-freq", str(EVAL_FREQ), "--eval-episodes", "1")
    evaluations = readEvaluations(run_dir)
    assert list(evaluations["timesteps"]) == [EVAL_FREQ, 2 * EVAL_FREQ]
    assert evaluations["results"].shape == (2, 1) and np.all(evaluations["ep_lengths"] == 250)
    assert np.all(np.isfinite(evaluations["results"])) and np.all(evaluations["results"] < 0)  # shaped: -distance
    best = os.path.join(run_dir, "best")
    assert _manifest(best)["selected_by"] == "evaluation"
    model_file = next(name for name in os.listdir(best) if name.startswith(f"{algo}_model"))
    registered_rl[algo][0].load(os.path.join(best, model_file))  # the best model loads
    if algo in UNCHANGED_CHECKED:
        assert monitorRows(_train(str(tmp_path / "plain"), *command)) == monitorRows(run_dir)


def test_replaying_an_unfinished_run_says_which_model_it_plays(evaluatedRun, tmp_path, capsys):
    """An unfinished run's latest model (its last checkpoint's) was played without a word, and before any checkpoint
    the refusal did not say that the best model was there to play."""
    run_dir = str(tmp_path / "run")
    shutil.copytree(evaluatedRun, run_dir)
    manifest = _manifest(run_dir)
    with open(os.path.join(run_dir, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump({**manifest, "finished": False, "num_timesteps": 500}, handle)
    assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "5", "--no-progress"]) == 0
    assert (f"Model: {run_dir}/ppo2_model.zip, the latest model of an unfinished run (still training, or stopped), "
            "saved at 500 of 1,000 steps\n") in capsys.readouterr().out
    assert enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "5", "--no-progress", "--model",
                                 "best"]) == 0
    assert f"Model: {run_dir}/best/ppo2_model.zip, the run's best model, saved at step " in capsys.readouterr().out
    os.remove(os.path.join(run_dir, "ppo2_model.zip"))  # and no checkpoint: before the first one
    shutil.rmtree(os.path.join(run_dir, "checkpoints"))
    with pytest.raises(UsageError, match=r"holds no latest model .*; the run has saved none yet .* its best model "
                                         r"from an evaluation is there: .*best/ppo2_model.zip \(enjoy_baselines "
                                         r"--model best\)$"):
        enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "5", "--no-progress"])


def test_run_folder_without_evaluations_reads_as_none(tmp_path):
    assert readEvaluations(str(tmp_path)) is None
    np.savez(tmp_path / EVALUATIONS_FILE, timesteps=np.arange(2))
    with pytest.raises(ValueError, match="results"):
        readEvaluations(str(tmp_path))


def test_readers_prefer_evaluations(evaluatedRun, tmp_path, capsys):
    log_dir = tmp_path / "logs"
    for name in ("seed1", "seed1_copy"):
        shutil.copytree(evaluatedRun, log_dir / name)
    evaluations = readEvaluations(evaluatedRun)
    means = evaluations["results"].mean(axis=1)

    runs = findRuns(str(log_dir))
    assert all(run.evaluations is not None for run in runs)
    (row,) = gather_results.gather(runs, [], 100, 150.0, None)
    assert row["source"] == "evaluation" and row["mean_reward"] == pytest.approx(means[-1])
    (at_500,) = [r for r in gather_results.gather(runs, [500], 100, 150.0, None) if r["budget"] == 500]
    assert at_500["mean_reward"] == pytest.approx(means[1])  # the last evaluation within 500 steps: at 400
    (training,) = gather_results.gather(runs, [], 100, 150.0, None, training_rewards=True)
    assert training["source"] == "training"
    assert training["mean_reward"] == pytest.approx(runs[0].episodes["rewards"][-100:].mean())
    assert gather_results.main(["--log-dir", str(log_dir)]) == 0
    assert "Rewards from evaluations" in capsys.readouterr().out
    assert "last evaluation (deterministic)" in (log_dir / "results.md").read_text()

    assert aggregate_plots.main(["-i", str(log_dir), "--timesteps"]) == 0
    assert "Evaluation plot:" in capsys.readouterr().out
    (npz,) = glob.glob(str(log_dir / "aggregate_*_evaluation.npz"))
    curves = loadCurves(npz)
    np.testing.assert_array_equal(curves["x"], evaluations["timesteps"])
    np.testing.assert_allclose(curves["y"], np.stack([means, means]))
    # compare_plots labels them as evaluations, and refuses to draw them beside training curves without a word
    assert curves["y_label"] == "mean evaluation reward"
    (training_npz,) = [path for path in glob.glob(str(log_dir / "aggregate_*.npz")) if path != npz]
    assert loadCurves(training_npz)["y_label"] == "episode reward (moving average)"
    with pytest.raises(UsageError, match="the inputs mix training and evaluation curves") as error:
        compare_plots.main(["-i", npz, training_npz, "-o", str(log_dir / "mixed.png")])
    assert (f"(episode reward (moving average): {training_npz}; mean evaluation reward: {npz})"
            in str(error.value))  # the files named, as the other mismatches name them
    assert not os.path.exists(log_dir / "mixed.png")
    assert os.path.getsize(log_dir / "aggregate_MobileRobotGymEnv-v0_evaluation.png") > 0

    assert plots.main(["-i", str(log_dir / "seed1")]) == 0
    assert "5 evaluations" in capsys.readouterr().out

    # one run of the method without evaluations: the whole method uses training episodes, and says so
    os.remove(log_dir / "seed1_copy" / EVALUATIONS_FILE)
    (row,) = gather_results.gather(findRuns(str(log_dir)), [], 100, 150.0, None)
    assert row["source"] == "training"


@pytest.mark.slow
def test_pipeline_passes_the_evaluation_flags(tmp_path):
    result = runModule("rl_baselines.pipeline", "--algo", "ppo2", *GT[:4], "--num-timesteps", "128", "--eval-freq",
                       "64", "--eval-episodes", "1", "--hyperparam", "n_steps:16", "--num-iteration", "1",
                       "--log-dir", tmp_path, "--no-vis", "--no-progress")
    assert result.returncode == 0, result.stdout + result.stderr
    (path,) = glob.glob(str(tmp_path / "*" / "*" / "*" / "*" / EVALUATIONS_FILE))
    evaluations = readEvaluations(path)
    assert list(evaluations["timesteps"]) == [64, 128] and evaluations["results"].shape == (2, 1)


def test_eval_episodes_without_eval_freq_warns(tmp_path):
    """rl_zoo3 evaluates by default; here --eval-episodes alone does nothing, and says so."""
    argv = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--log-dir", str(tmp_path), "--no-vis"]
    with pytest.warns(UserWarning, match="--eval-episodes 10 does nothing without --eval-freq"):
        train_checks.validate(train.parseCommand([*argv, "--eval-episodes", "10"])[0], registered_rl)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train_checks.validate(train.parseCommand([*argv, "--eval-episodes", "10", "--eval-freq", "500"])[0],
                              registered_rl)
        train_checks.validate(train.parseCommand(argv)[0], registered_rl)
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("algo, rollout, late", [("ppo2", "n_steps:16", 200),  # x its 4 envs
                                                 ("ppo1", "timesteps_per_actorbatch:64", 129)])
def test_a_run_that_ends_before_its_first_evaluation_says_so(tmp_path, algo, rollout, late):
    """`--eval-freq 200` with a budget of 100 steps was accepted without a word, and no evaluation was made. The
    run's end is where its learner stops (ppo2 collects whole rollouts: 128 steps here), so --eval-freq 120 still
    evaluates, and says nothing. ppo1 (an algorithm written here) also trains whole rollouts, counted from the run's
    start (its callbacks start after its first step: the warning said 129, and nothing for 129)."""
    command = ["--algo", algo, *GT, "--num-timesteps", "100", "--hyperparam", rollout, "--eval-episodes", "1"]
    with pytest.warns(UserWarning, match=rf"--eval-freq {late}: this run ends at step 128, before its first evaluation "
                                         rf"\(due at step {late}\): no evaluation will be made"):
        run_dir = _train(str(tmp_path / "late"), *command, "--eval-freq", str(late))
    assert readEvaluations(run_dir) is None
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="--eval-freq")
        run_dir = _train(str(tmp_path / "rounded"), *command, "--eval-freq", "120")
    assert list(readEvaluations(run_dir)["timesteps"]) == [120]


@pytest.mark.parametrize("flags, words", [(["--features-extractor", "small"], "--features-extractor small"),
                                          (["--srl-state-scale", "participation"], "--srl-state-scale participation")])
def test_a_flag_that_does_nothing_for_a_state_warns(tmp_path, flags, words):
    """A sweep passes its train flags to every observation it runs (ground truth beside raw pixels or a learned
    model): a flag for the others warns once on a state, instead of refusing the whole sweep."""
    argv = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--log-dir",
            str(tmp_path), "--no-vis", *flags]
    with pytest.warns(UserWarning, match=f"{words}.*does nothing"):
        train_checks.validate(train.parseCommand(argv)[0], registered_rl)
    assert not os.listdir(tmp_path)
