"""Hyperparameter search, in process and without training: a fixed n_steps or learning_starts that no trial could learn
within is refused, a searched learning_starts stays below the budget and a searched n_steps at half of it, a sampled
batch_size is cut to the rollout and fitted to leave no last minibatch of 1 sample, a pair train refuses prunes its
trial, ars's top_population stays at most its num_population, a Ctrl-C as a trial's run has just ended normally scores
that trial, one worker redraws its bar while a trial runs, and search.png's importance panel says when the importances
are undefined."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import re
import sys
import types

import pytest
import yaml

optuna = pytest.importorskip("optuna")

from matplotlib.axes import Axes  # noqa: E402

from rl_baselines.sweeps import hyperparam_search, search_study, search_trials  # noqa: E402
from rl_baselines.sweeps.search_outputs import saveSearchPlot  # noqa: E402
from rl_baselines.sweeps.search_study import gridValues, suggestParams  # noqa: E402
from srl_toolbox import terminal  # noqa: E402
from srl_toolbox.cli import UsageError  # noqa: E402

ENV = "MobileRobotGymEnv-v0"
BASE = ["--env", ENV, "--srl-model", "ground_truth", "--no-progress", "--n-trials", "2"]


@pytest.mark.parametrize("argv, message", [
    (["--num-timesteps", "300", "--hyperparam", "n_steps:512"],  # (ppo2's 4 envs)
     "n_steps 512 x 4 env(s) (--num-cpu) = 2048 steps before the first update, more than half of --num-timesteps 300"),
    (["--num-timesteps", "300", "--num-cpu", "2", "--hyperparam", "n_steps:200"],
     "n_steps 200 x 2 env(s) (--num-cpu) = 400 steps before the first update, more than half of --num-timesteps 300"),
    (["--algo", "ppo1", "--num-timesteps", "300", "--hyperparam", "timesteps_per_actorbatch:512"],
     "timesteps_per_actorbatch 512 x 1 env(s) (--num-cpu) = 512 steps before the first update, more than half of "
     "--num-timesteps 300"),
    (["--algo", "ppo1", "--num-timesteps", "300", "--num-workers", "2", "--hyperparam",
      "timesteps_per_actorbatch:200"],
     "timesteps_per_actorbatch 200 x 2 env(s) (--num-cpu x ppo1's processes) = 400 steps before the first update"),
    (["--algo", "sac", "-c", "--num-timesteps", "300", "--hyperparam", "learning_starts:300"],
     "learning_starts 300 is not below --num-timesteps 300: no trial would learn"),
    # one rollout fits, but not two: every episode scored would come before the first update (all trials alike)
    (["--num-timesteps", "1000", "--hyperparam", "n_steps:955", "--num-cpu", "1"],
     "n_steps 955 x 1 env(s) (--num-cpu) = 955 steps before the first update, more than half of --num-timesteps 1000: "
     "every trial would be scored on episodes before its first update; give n_steps at most 500 or --num-timesteps "
     "at least 1910"),
    (["--algo", "sac", "-c", "--num-timesteps", "100"],
     "--num-timesteps 100: every learning_starts the search space of sac offers (100..10000) is at or above it"),
])
def test_a_fixed_hyperparameter_no_trial_could_learn_with_is_refused(tmp_path, argv, message):
    """A fixed n_steps (whose first rollout passes the budget) or learning_starts (at or above it) ran every trial
    untrained, scored 0, exit 0; now one line, exit 2, nothing written."""
    log_dir = tmp_path / "logs"
    with pytest.raises(UsageError, match=re.escape(message)):
        hyperparam_search.main([*BASE, "--log-dir", str(log_dir), *argv])
    assert not log_dir.exists()


@pytest.mark.parametrize("argv, message", [
    (["--num-timesteps", "300", "--n-steps", "512"],
     "n_steps 512 x 4 env(s) (--num-cpu) = 2048 steps before the first update, more than half of --num-timesteps 300"),
    (["--algo", "ppo1", "--num-timesteps", "300", "--timesteps-per-actorbatch", "400"],
     "timesteps_per_actorbatch 400 x 1 env(s) (--num-cpu) = 400 steps before the first update"),
    (["--algo", "sac", "-c", "--num-timesteps", "300", "--learning-starts", "400"],
     "learning_starts 400 is not below --num-timesteps 300: no trial would learn"),
])
def test_a_hyperparameter_fixed_by_its_own_flag_is_checked_against_the_budget_too(tmp_path, argv, message):
    """`--n-steps 512 --num-timesteps 300` was accepted (the same value with --hyperparam was refused): every trial ran
    untrained. Refused now, one line, exit 2, nothing written."""
    log_dir = tmp_path / "logs"
    args, train_argv = hyperparam_search.searchParser().parse_known_args([*BASE, "--log-dir", str(log_dir), *argv])
    with pytest.raises(UsageError, match=re.escape(message)):
        hyperparam_search.prepare(vars(args), train_argv)
    assert not log_dir.exists()


def test_a_fixed_n_steps_from_a_hyperparams_file_is_refused_too(tmp_path):
    path = tmp_path / "best.yaml"
    path.write_text("n_steps: 512\n")
    with pytest.raises(UsageError, match=re.escape("n_steps 512 x 4 env(s) (--num-cpu) = 2048 steps")):
        hyperparam_search.main([*BASE, "--log-dir", str(tmp_path / "logs"), "--num-timesteps", "300",
                                "--hyperparam-file", str(path)])
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize("algo, flags", [("sac", ["-c"]), ("deepq", [])])
def test_a_searched_learning_starts_stays_below_the_budget(tmp_path, algo, flags):
    """sac sampled learning_starts 2880 and 6826 for a 300-step budget: both trials took random actions only."""
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        ["--algo", algo, *flags, "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "300",
         "--log-dir", str(tmp_path)])
    config, _ = hyperparam_search.prepare(vars(args), train_argv)
    spec = config.space["learning_starts"]
    assert spec[0] is int and spec[1][1] == 299
    assert max(gridValues(spec, 3)) == 299
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    sampled = [suggestParams(study.ask(), config.space)["learning_starts"] for _ in range(50)]
    assert max(sampled) < 300
    # a budget above the range leaves it as declared; choices at or above the budget are dropped
    assert search_study.fitSpaceToBudget(algo, {"learning_starts": (int, (100, 10_000))}, 20_000) == {
        "learning_starts": (int, (100, 10_000))}
    assert search_study.fitSpaceToBudget(algo, {"learning_starts": (list, [0, 1000, 10_000])}, 5000) == {
        "learning_starts": (list, [0, 1000])}
    with pytest.raises(UsageError, match=re.escape("every learning_starts the search space of x offers (1000, 10000)")):
        search_study.fitSpaceToBudget("x", {"learning_starts": (list, [1000, 10_000])}, 1000)


@pytest.mark.parametrize("algo, flags, budget, name, high", [
    ("trpo", [], 600, "n_steps", 300),
    ("ppo2", [], 1000, "n_steps", 125),  # (its 4 envs)
    ("ppo2", ["--num-cpu", "1"], 1000, "n_steps", 500),
    ("ppo2", ["--num-cpu", "2"], 1000, "n_steps", 250),
    ("ppo1", ["--num-workers", "2"], 600, "timesteps_per_actorbatch", 150),
])
def test_a_searched_rollout_fits_twice_in_the_budget(tmp_path, algo, flags, budget, name, high):
    """n_steps was searched over 32..2048 whatever the budget: trpo at 600 steps pruned 2 trials of 2 before they
    started, ppo2 at 1000 8 of 20. Then up to budget // envs: ppo2 sampled n_steps 955 of a 1000-step budget, one
    rollout before one update, and its trials were scored on the untrained policy's episodes (3 trials of n_steps 955,
    other values all different: 8.50 each). It is sampled at most budget // (2 x envs) now, so that the budget holds
    two rollouts and its second half at least comes after an update."""
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        ["--algo", algo, *flags, "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", str(budget),
         "--log-dir", str(tmp_path)])
    config, _ = hyperparam_search.prepare(vars(args), train_argv)
    assert config.space[name] == (int, (32, high))
    assert max(gridValues(config.space[name], 3)) == high
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(50):
        params = suggestParams(study.ask(), config.space)
        assert params[name] * config.run_envs * 2 <= budget
        assert search_study.trialParams(params, config)[1] is None, params
    # a budget of two rollouts of the range leaves it as declared; a list's choices past it are dropped; none: refused
    assert search_study.fitSpaceToBudget(algo, {"n_steps": (int, (32, 2048))}, 4096) == {
        "n_steps": (int, (32, 2048))}
    assert search_study.fitSpaceToBudget(algo, {"n_steps": (int, (32, 2048))}, 4095) == {
        "n_steps": (int, (32, 2047))}
    assert search_study.fitSpaceToBudget(algo, {"n_steps": (list, [16, 64, 512])}, 200, 2) == {
        "n_steps": (list, [16])}
    with pytest.raises(UsageError, match=re.escape("--num-timesteps 100: every n_steps the search space of x offers "
                                                   "(32..2048) x 2 env(s) makes a rollout past half of it, so no trial "
                                                   "would be scored after an update; give a larger --num-timesteps (at "
                                                   "least 4 x the smallest), or fix n_steps with --hyperparam "
                                                   "n_steps:N (N x 2 at most 50)")):
        search_study.fitSpaceToBudget("x", {"n_steps": (int, (32, 2048))}, 100, 2)
    # a budget in which no n_steps of 1 or more fits is not told to fix one ("N x 4 at most 2")
    with pytest.raises(UsageError, match=r"--num-timesteps 4: .* \(at least 8 x the smallest\)$"):
        search_study.fitSpaceToBudget("x", {"n_steps": (int, (32, 2048))}, 4, 4)
    with pytest.raises(UsageError, match=r"n_steps:N \(N x 4 at most 4\)$"):
        search_study.fitSpaceToBudget("x", {"n_steps": (int, (32, 2048))}, 8, 4)


class _FinishedRun:
    """A trial's train process, faked: it writes a whole run at once (4 episodes of 250 steps, rewards 1..4), is
    still running at the first poll and has exited (with ``code``, None: never) at the next ones; ``finishing``: its
    final model saved (manifest.json: finished), it runs on until waited for, then exits with ``code``."""

    def __init__(self, command, code: int | None, finishing: bool = False, **_kwargs) -> None:
        run_dir = os.path.join(command[command.index("--log-dir") + 1], ENV, "ground_truth", "ppo2", "run")
        os.makedirs(os.path.join(run_dir, "monitor"))
        with open(os.path.join(run_dir, "args.json"), "w") as handle:
            json.dump({"num_cpu": 1}, handle)
        rows = "".join(f"{reward}.0,250,{reward}.0\n" for reward in (1, 2, 3, 4))
        with open(os.path.join(run_dir, "monitor", "0.monitor.csv"), "w") as handle:
            handle.write(f'#{{"t_start": 0.0, "env_id": "{ENV}"}}\nr,l,t\n{rows}')
        if finishing:
            with open(os.path.join(run_dir, "manifest.json"), "w") as handle:
                json.dump({"files": {}, "finished": True}, handle)
        self.code, self.finishing, self.polls, self.returncode, self.pid = code, finishing, 0, None, -1

    def poll(self) -> int | None:
        self.polls += 1
        if self.polls > 1 and not self.finishing:
            self.returncode = self.code
        return self.returncode

    def wait(self, timeout=None) -> int | None:
        self.returncode = self.code
        return self.returncode


@pytest.mark.parametrize("code, finishing, state, value", [(0, False, "COMPLETE", 2.5), (None, False, "FAIL", None),
                                                           (0, True, "COMPLETE", 2.5)])
def test_a_ctrl_c_as_a_trials_run_has_just_ended_scores_it(tmp_path, monkeypatch, capsys, code, finishing, state,
                                                           value):
    """The Ctrl-C comes while the search waits between two polls, and the run exits in that time: a run that
    exited normally is scored (it was recorded failed, "interrupted", and the search found no completed trial); one
    still running is stopped and recorded failed; one that had saved its final model is waited for (its last writes
    and its exit: it was recorded failed, its score known) and scored. Either way the search stops after that trial,
    exit 130."""
    children = []

    def popen(command, **kwargs):
        children.append(_FinishedRun(command, code, finishing))
        return children[-1]

    def ctrlC(_seconds):
        raise KeyboardInterrupt

    def stop(child):
        child.returncode = -9 if child.returncode is None else child.returncode

    monkeypatch.setattr(search_trials.subprocess, "Popen", popen)
    monkeypatch.setattr(search_trials, "time", types.SimpleNamespace(sleep=ctrlC))
    monkeypatch.setattr(search_trials, "_stopChild", stop)
    log_dir = tmp_path / "logs"
    result = hyperparam_search.main([*BASE, "--algo", "ppo2", "--num-timesteps", "1000", "--n-evaluations", "2",
                                     "--optimizer", "random", "--pruner", "none", "--log-dir", str(log_dir)])
    output = capsys.readouterr()
    assert result == 130 and len(children) == 1, output
    study = optuna.load_study(study_name=f"ppo2_{ENV}_ground_truth_random",
                              storage=f"sqlite:///{log_dir}/hyperparam_search/ppo2_{ENV}_ground_truth_random.db")
    (trial,) = study.trials
    assert trial.state.name == state and trial.value == value
    best = log_dir / "hyperparam_search" / f"ppo2_{ENV}_ground_truth_random" / "best_hyperparams.yaml"
    if state == "COMPLETE":
        assert "error" not in trial.user_attrs and trial.intermediate_values == {500: 1.5, 1000: 2.5}
        assert "Interrupted: 1 completed" in output.out and best.exists()
    else:
        assert trial.user_attrs["error"] == "interrupted" and not best.exists()


def _study(values: list[float]):
    study = optuna.create_study(direction="maximize")
    distributions = {"x": optuna.distributions.FloatDistribution(0, 1),
                     "y": optuna.distributions.FloatDistribution(0, 1)}
    for index, value in enumerate(values):
        study.add_trial(optuna.trial.create_trial(params={"x": index / 10, "y": 1 - index / 10},
                                                  distributions=distributions, value=value))
    return study


@pytest.mark.parametrize("values, bars", [([0.0, 0.0, 0.0, 0.0], False), ([0.0, 5.0, 1.0, 3.0], True)])
def test_the_importance_panel_says_when_every_trial_scored_the_same(tmp_path, monkeypatch, values, bars):
    """Trials that all scored the same drew equal bars (1/n each, PED-ANOVA normalised): importances undefined."""
    drawn = {"barh": [], "text": []}
    for name in drawn:
        original = getattr(Axes, name)

        def record(self, *args, _name=name, _original=original, **kwargs):
            drawn[_name].append(args)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Axes, name, record)
    saveSearchPlot(str(tmp_path / "search.png"), _study(values), "title")
    assert os.path.exists(tmp_path / "search.png")
    texts = [args[2] for args in drawn["text"]]
    if bars:
        assert len(drawn["barh"]) == 1 and texts == []
    else:
        assert drawn["barh"] == [] and texts == ["importance undefined: every trial scored the same"]


def test_a_sampled_batch_size_is_cut_to_the_rollout(tmp_path, monkeypatch):
    """ppo2 sampled batch_size 64 with n_steps 48: SB3 warned and trained on minibatches of 48, the same as with 128
    or 256, while trials.csv and best_hyperparams.yaml said 64. The trial now trains with, and records, the rollout
    (n_steps x envs) as its batch_size, as RL Zoo's samplers cut it."""
    commands = []

    def popen(command, **kwargs):
        commands.append(command)
        return _FinishedRun(command, 0)

    monkeypatch.setattr(search_trials.subprocess, "Popen", popen)
    monkeypatch.setattr(search_trials, "time", types.SimpleNamespace(sleep=lambda _seconds: None))
    monkeypatch.setattr(search_trials, "_stopChild", lambda child: None)
    log_dir = tmp_path / "logs"
    assert hyperparam_search.main([*BASE[:-1], "6", "--algo", "ppo2", "--num-timesteps", "1000", "--n-evaluations",
                                   "2", "--optimizer", "random", "--pruner", "none", "--hyperparam", "n_steps:20",
                                   "--num-cpu", "2", "--log-dir", str(log_dir)]) == 0
    study = optuna.load_study(study_name=f"ppo2_{ENV}_ground_truth_random",
                              storage=f"sqlite:///{log_dir}/hyperparam_search/ppo2_{ENV}_ground_truth_random.db")
    assert any(trial.params["batch_size"] > 40 for trial in study.trials)  # (sampled above the rollout)
    trained = [int(next(flag for flag in command if flag.startswith("batch_size:")).split(":")[1])
               for command in commands]
    assert trained == [min(trial.params["batch_size"], 40) for trial in study.trials]
    folder = log_dir / "hyperparam_search" / f"ppo2_{ENV}_ground_truth_random"
    with open(folder / "trials.csv") as handle:
        assert [int(row["batch_size"]) for row in csv.DictReader(handle)] == trained
    best = yaml.safe_load((folder / "best_hyperparams.yaml").read_text())
    assert best["batch_size"] == trained[study.best_trial.number] and best["n_steps"] == 20


@pytest.mark.parametrize("normalised, params, run_params, reason", [
    ("minibatches", {"n_steps": 48, "batch_size": 256}, {"n_steps": 48, "batch_size": 48}, None),
    ("minibatches", {"batch_size": 256}, {"batch_size": 20}, None),  # (the fixed or default n_steps: 20)
    ("minibatches", {"n_steps": 65, "batch_size": 32}, {"n_steps": 65, "batch_size": 32}, None),
    # a last minibatch of 1 sample is fitted away: batch_size lowered, else a sampled n_steps (batch_size fixed: 64)
    ("every_minibatch", {"n_steps": 65, "batch_size": 32}, {"n_steps": 65, "batch_size": 31}, None),
    ("every_minibatch", {"n_steps": 129, "batch_size": 256}, {"n_steps": 129, "batch_size": 129}, None),
    ("every_minibatch", {"n_steps": 129}, {"n_steps": 128}, None),
    ("every_minibatch", {"batch_size": 19}, {"batch_size": 18}, None),  # (n_steps 20 fixed: 20 % 19 == 1)
    ("every_minibatch", {"n_steps": 1}, {"n_steps": 1},
     "n_steps 1 x --num-cpu 1 = 1 sample per rollout: ppo2 normalises its advantages over each minibatch"),
])
def test_sampled_values_train_would_refuse_are_fitted_or_prune_the_trial(tmp_path, normalised, params, run_params,
                                                                         reason):
    """ppo_lstm and maskable_ppo sampled n_steps 65 with batch_size 32: train refused the last minibatch of 1 sample
    (exit 2), a failed trial; then it was pruned before it started, about 1% of the trials. The sampled values are
    fitted now so that no minibatch is 1 sample; what cannot be fitted is pruned before it starts, saying why."""
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        ["--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "300", "--n-steps", "20",
         "--num-cpu", "1", "--log-dir", str(tmp_path)])
    config, _ = hyperparam_search.prepare(vars(args), train_argv)
    assert config.rollout_hyperparams == {"n_steps": 20, "batch_size": 64} and config.normalised == "minibatches"
    fitted, why = search_study.trialParams(params, dataclasses.replace(config, normalised=normalised))
    assert fitted == run_params
    assert why == reason or why.startswith(reason)


@pytest.mark.parametrize("algo", ["ppo_lstm", "maskable_ppo"])
def test_a_search_of_a_learner_normalising_every_minibatch_never_samples_a_last_minibatch_of_one(tmp_path, algo):
    """ppo_lstm and maskable_ppo normalise the advantages of every minibatch, a last one of 1 sample too (NaN): of
    1000 trials this sampler drew, 13 were pruned before they started (the third: n_steps 321, batch_size 32). Every
    pair of the space is fitted now, for 1 to 3 envs, a sampled batch_size to the largest size at most it that leaves
    no 1-sample remainder (a fixed batch_size: the sampled n_steps lowered by 1), and no trial is pruned."""
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        ["--algo", algo, "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "20000",
         "--log-dir", str(tmp_path)])
    config, _ = hyperparam_search.prepare(vars(args), train_argv)
    assert config.normalised == "every_minibatch" and config.space["n_steps"] == (int, (32, 2048))

    def checked(params: dict, envs: int) -> dict:
        run, why = search_study.trialParams(params, dataclasses.replace(config, num_cpu=envs, run_envs=envs))
        rollout, batch_size = run["n_steps"] * envs, run.get("batch_size", config.rollout_hyperparams["batch_size"])
        assert why is None and batch_size >= 2 and (batch_size >= rollout or rollout % batch_size != 1), (
            params, envs, run)  # (a fixed batch_size past the rollout: one minibatch of it)
        return run

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    sampled = [suggestParams(study.ask(), config.space) for _ in range(1000)]
    fitted = [checked(params, 1) for params in sampled]
    assert (sampled[2]["n_steps"], sampled[2]["batch_size"], fitted[2]["batch_size"]) == (321, 32, 31)
    low, high = config.space["n_steps"][1]
    for envs in (1, 2, 3):
        for n_steps in range(low, high + 1):
            for batch_size in config.space["batch_size"][1]:
                run = checked({"n_steps": n_steps, "batch_size": batch_size}, envs)
                assert run["n_steps"] == n_steps and run["batch_size"] >= min(batch_size, n_steps * envs) - 2
            assert checked({"n_steps": n_steps}, envs)["n_steps"] in (n_steps, n_steps - 1)  # (batch_size fixed)


def test_one_worker_redraws_the_bar_while_a_trial_runs(tmp_path, monkeypatch):
    """With --workers 1 (the default) the trials bar was drawn only when a trial ended: its clock and ETA stood still on
    a terminal for the whole of a trial (several workers redraw it every second). It is redrawn at each poll now."""
    ticks = []
    monkeypatch.setattr(search_trials.subprocess, "Popen", lambda command, **kwargs: _FinishedRun(command, 0))
    monkeypatch.setattr(search_trials, "time", types.SimpleNamespace(sleep=lambda _seconds: None))
    monkeypatch.setattr(search_trials, "_stopChild", lambda child: None)
    monkeypatch.setattr(search_trials.TrialProgress, "tick", lambda self: ticks.append(self.bar.n))
    assert hyperparam_search.main([*BASE[:-1], "1", "--algo", "ppo2", "--num-timesteps", "1000", "--n-evaluations",
                                   "2", "--optimizer", "random", "--pruner", "none", "--hyperparam", "n_steps:20",
                                   "--log-dir", str(tmp_path / "logs")]) == 0
    assert ticks == [0]  # (redrawn while the trial ran: the fake run is running at its first poll only)


def test_a_sampled_ppo1_batch_past_the_budget_prunes_its_trial_before_it_starts(tmp_path, capsys):
    """ppo1 sampled timesteps_per_actorbatch 1878 for a 600-step budget: the trial ran one whole untrained batch and
    was scored on its untrained first 600 steps, beside trials that learned (n_steps prunes such a trial)."""
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        ["--algo", "ppo1", "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "600", "--num-workers", "2",
         "--log-dir", str(tmp_path)])
    config, _ = hyperparam_search.prepare(vars(args), train_argv)
    assert config.run_envs == 2
    assert search_study.trialParams({"timesteps_per_actorbatch": 1878}, config)[1] == (
        "timesteps_per_actorbatch 1878 x 2 env(s): the first update comes after 3756 steps, past half of "
        "--num-timesteps 600")
    assert search_study.trialParams({"timesteps_per_actorbatch": 300}, config)[1] == (  # one rollout fits, not two
        "timesteps_per_actorbatch 300 x 2 env(s): the first update comes after 600 steps, past half of --num-timesteps "
        "600")
    assert search_study.trialParams({"timesteps_per_actorbatch": 150}, config)[1] is None
    # (with every trial pruned so, the summary says what to fix)
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial({})
    trial = study.ask()
    trial.set_user_attr("pruned_before_start", search_study.trialParams({"timesteps_per_actorbatch": 1878}, config)[1])
    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    progress = search_trials.TrialProgress(1, enabled=False)
    assert hyperparam_search._finish(study, config, None, progress, 0, False) == 1
    assert "fix timesteps_per_actorbatch with --hyperparam timesteps_per_actorbatch:N" in capsys.readouterr().err
    # trials pruned for both causes are counted by cause, each cause's advice given
    past = "n_steps 700 x 1 env(s): the first update comes after 700 steps, past half of --num-timesteps 600"
    refused = \
        "batch_size 32 leaves a last minibatch of 1 sample of the n_steps 65 x --num-cpu 1 = 65 per rollout"
    assert hyperparam_search._prunedBeforeStartText([past, refused, refused], 600) == (
        "No completed trial, so no best hyperparameters: every trial was pruned before it started, 1 for a first "
        f"rollout past half of --num-timesteps 600, 2 for sampled values train refuses (the last: {refused}); give a "
        "larger budget, or fix n_steps with --hyperparam n_steps:N; fix batch_size with --hyperparam batch_size:N "
        "(a value "
        "train accepts)")


def _arsConfig(tmp_path, *flags: str) -> search_study.SearchConfig:
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        ["--algo", "ars", "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "300",
         "--log-dir", str(tmp_path), *flags])
    return hyperparam_search.prepare(vars(args), train_argv)[0]


@pytest.mark.parametrize("flags, top, num", [
    ([], (int, (1, 5)), (int, (2, 50))),  # both sampled: each trial's top_population capped at its num_population
    (["--num-population", "2"], (int, (1, 2)), None),  # num_population fixed: top_population's range cut to it
    (["--hyperparam", "num_population:3"], (int, (1, 3)), None),
    (["--hyperparam", "top_population:5"], None, (int, (5, 50))),  # top_population fixed: num_population raised
    (["--hyperparam", "top_population:20"], None, (int, (20, 50))),  # above num_population's default (10)
])
def test_ars_never_samples_a_top_population_above_its_num_population(tmp_path, flags, top, num):
    """ars's top_population was sampled from 1..5 whatever num_population was: with --num-population 2, a trial that
    sampled 5 failed (train: top_population (5) cannot exceed num_population (2)). The space is fitted to a fixed
    value, and a trial sampling both trains (and records) its top_population capped at its num_population."""
    from rl_baselines.evolution_strategies.ars import ARSModel

    config = _arsConfig(tmp_path, *flags)
    assert config.space.get("top_population") == top and config.space.get("num_population") == num
    assert config.at_most == ({"top_population": "num_population"} if top and num else {})
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(200):
        sampled = suggestParams(study.ask(), config.space)
        params, why = search_study.trialParams(sampled, config)
        assert why is None
        merged = {"num_population": 10, "top_population": 2,
                  **{name: int(value) for name, value in config.fixed.items()}, **params}
        ARSModel.checkHyperparams({**{n: h.default for n, h in ARSModel.HYPERPARAMS.items()}, **merged})
        if top and num:
            assert params["top_population"] == min(sampled["top_population"], sampled["num_population"])
    assert search_study.trialParams({"num_population": 3, "top_population": 5}, config)[0]["top_population"] == (
        3 if top and num else 5)


def test_a_fixed_top_population_above_the_default_num_population_searches_from_it(tmp_path):
    """--hyperparam top_population:20 was refused (top_population (20) cannot exceed num_population (10)): train's
    validation checked it against ars's default num_population, which the search samples (raised to 20..50). The
    bound is validated at the fixed value without it reaching what the study records or what the trials train with;
    a top_population above the space's largest num_population is refused by the space's own message."""
    config = _arsConfig(tmp_path, "--hyperparam", "top_population:20")
    assert config.space["num_population"] == (int, (20, 50))
    assert config.fixed == {"top_population": "20"}
    assert config.train_settings["hyperparams"] == {"top_population": 20}
    assert "num_population:20" not in " ".join(config.train_argv)
    with pytest.raises(UsageError, match=r"^top_population 60: every num_population the search space of ars offers "
                                         r"\(2\.\.50\)"):
        _arsConfig(tmp_path, "--hyperparam", "top_population:60")
    assert not any(tmp_path.iterdir())


def test_a_fixed_value_that_leaves_none_of_its_pair_is_refused():
    """No trial could train: one line naming both (train refuses it first where the default of the other is lower)."""
    caps = {"top_population": "num_population"}
    with pytest.raises(UsageError, match=r"^top_population 60: every num_population the search space of ars offers "
                                         r"\(2\.\.50\) makes top_population exceed num_population"):
        search_study.fitSpaceToCaps("ars", {"num_population": (int, (2, 50))}, caps, {"top_population": 60})
    with pytest.raises(UsageError, match=r"^num_population 2: every top_population .* \(3, 4\)"):
        search_study.fitSpaceToCaps("ars", {"top_population": (list, [3, 4])}, caps, {"num_population": 2})


class _GoneReader:
    """The search's stdout once its reader has gone (a Ctrl-C in a terminal also stops the `| tee` it prints to)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_trial_line_into_a_gone_reader_is_discarded_so_that_the_outputs_are_still_written(monkeypatch) -> None:
    """After a Ctrl-C that also stopped `| tee`, the interrupted trials' lines raised BrokenPipeError: the search
    exited 1 without trials.csv and search.png, where it writes them and exits 130."""
    discarded = []
    monkeypatch.setattr(sys, "stdout", _GoneReader())
    monkeypatch.setattr(terminal, "discardStdout", lambda: (discarded.append(True),
                                                       monkeypatch.setattr(sys, "stdout", io.StringIO())))
    progress = search_trials.TrialProgress(1, enabled=False)
    progress.trialDone(types.SimpleNamespace(number=0, state=types.SimpleNamespace(name="FAIL"),
                                             user_attrs={"error": "interrupted"}))
    assert discarded and progress.counts["STOPPED"] == 1  # (an interrupted trial: stopped)
