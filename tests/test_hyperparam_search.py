"""Hyperparameter search with Optuna: a study with pruning, two commands (one with two worker processes) on one
SQLite study scoring their trials' evaluations, a pruned trial's train process stopped mid-run, the best-parameter
YAML read by train. Its refusals: tests/test_hyperparam_search_inputs.py."""
from __future__ import annotations

import csv
import dataclasses
import json
import os
import shlex
import sys
import time
import zipfile

import numpy as np
import pytest
import yaml
from conftest import runModule, startModule, trainHere

optuna = pytest.importorskip("optuna")

from rl_baselines.core.registry import registered_rl  # noqa: E402
from rl_baselines.runs import train, train_checks  # noqa: E402
from rl_baselines.runs.evaluation import readEvaluations  # noqa: E402
from rl_baselines.runs.hyperparam_sources import readHyperparamFile  # noqa: E402
from rl_baselines.runs.monitor_files import MonitorTail  # noqa: E402
from rl_baselines.runs.train_config import TrainConfig  # noqa: E402
from rl_baselines.sweeps import hyperparam_search, pipeline, search_trials  # noqa: E402
from rl_baselines.sweeps.search_outputs import repeatCommand, writeBestParams, writeTrialsCsv  # noqa: E402
from rl_baselines.sweeps.search_study import (  # noqa: E402
    SCORED_EPISODES,
    checkSpace,
    gridValues,
    samplerSeed,
    suggestParams,
)
from rl_baselines.sweeps.search_trials import (  # noqa: E402
    TrialFailed,
    TrialObjective,
    TrialProgress,
    finishedTrials,
    lastEvaluationWithin,
    meanWithin,
)
from srl_toolbox.cli import UsageError  # noqa: E402

ENV = "MobileRobotGymEnv-v0"  # 250-step episodes, no rendering with ground truth
# n_steps fixed small, one env, so that a trial of 1000 steps makes several PPO updates (and it is left out of the
# search)
COMMON = ["--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "--hyperparam", "n_steps:64", "--num-cpu", "1",
          "--checkpoint-freq", "-1", "--no-progress"]


def _loadStudy(url: str, name: str):
    return optuna.load_study(study_name=name, storage=url)


# ppo_lstm (advantages normalised over every minibatch) searching n_steps 1 only (loneSampleSpace): a rollout of 1
# sample, which train refuses, so that every trial is pruned before it starts, without training (the search fits
# ppo_lstm's own space so that none of its trials is refused)
EVERY_TRIAL_PRUNED = ["--algo", "ppo_lstm", "--num-timesteps", "300", "--optimizer", "random", "--sampler-seed", "7"]


@pytest.fixture
def loneSampleSpace(monkeypatch) -> None:
    """ppo_lstm's search space is n_steps 1 only (EVERY_TRIAL_PRUNED)."""
    monkeypatch.setattr(registered_rl["ppo_lstm"][0], "getOptParam", classmethod(lambda cls: {"n_steps": (list, [1])}))


@pytest.fixture(scope="module")
def prunedStudy(tmp_path_factory) -> dict:
    """2 random-sampler trials of 1000 steps under hyperband; the sampler and runs are seeded, so the same trial
    (the second) is pruned at its 750-step rung every time, and the first completes."""
    log_dir = tmp_path_factory.mktemp("search")
    result = runModule("rl_baselines.hyperparam_search", *COMMON, "--optimizer", "random", "--pruner", "hyperband",
                       "--n-trials", "2", "--num-timesteps", "1000", "--n-evaluations", "4", "--log-dir", log_dir,
                       timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    name = f"ppo2_{ENV}_ground_truth_random"
    folder = os.path.join(str(log_dir), "hyperparam_search", name)
    url = f"sqlite:///{os.path.join(str(log_dir), 'hyperparam_search', name + '.db')}"
    return {"log_dir": str(log_dir), "folder": folder, "study": _loadStudy(url, name), "stdout": result.stdout}


@pytest.mark.slow
def test_study_prunes_and_writes_outputs(prunedStudy):
    study = prunedStudy["study"]
    states = [trial.state for trial in study.trials]
    assert len(states) == 2
    assert optuna.trial.TrialState.PRUNED in states and optuna.trial.TrialState.COMPLETE in states
    pruned = next(t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED)
    assert pruned.last_step < 1000 and pruned.intermediate_values  # stopped at a rung, before the end
    assert f"trial {pruned.number}: pruned at step {pruned.last_step}" in prunedStudy["stdout"]
    for trial in study.trials:
        assert "n_steps" not in trial.params  # fixed with --hyperparam, so not searched
        # intermediate values are reported at the fixed steps 250, 500, ... (all trials comparable)
        assert set(trial.intermediate_values) <= {250, 500, 750, 1000}
    # the objective is the mean reward of the last 10 episodes of the trial's monitor file that ended within the budget
    for trial in (t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE):
        rows = list(csv.DictReader(open(os.path.join(trial.user_attrs["run_dir"], "monitor", "0.monitor.csv"))
                                   .readlines()[1:]))
        ended = np.cumsum([int(row["l"]) for row in rows])
        assert trial.value == pytest.approx(np.mean([float(row["r"]) for row in rows][:np.sum(ended <= 1000)][-10:]))
        assert trial.intermediate_values[1000] == pytest.approx(trial.value)
    best = yaml.safe_load(open(os.path.join(prunedStudy["folder"], "best_hyperparams.yaml")))
    # (a sampled batch_size above the 64-step rollout trained, and is written, as 64)
    sampled = study.best_trial.params
    assert best == {**sampled, "n_steps": 64, "batch_size": min(sampled["batch_size"], 64)}
    # the printed command repeats the flags every trial got (it left them out: gail's --gail-dataset, -c, ...)
    repeat = next(line for line in prunedStudy["stdout"].splitlines() if " -m rl_baselines.train" in line)
    assert "--hyperparam n_steps:64" in repeat and "--checkpoint-freq -1" in repeat and "--hyperparam-file" in repeat
    with open(os.path.join(prunedStudy["folder"], "best_hyperparams.yaml")) as handle:
        # the file's header holds the same command, started with `python` (the file outlives this shell)
        assert f"# python -m {repeat.strip().split(' -m ', 1)[1]}\n" in handle.read()
    with open(os.path.join(prunedStudy["folder"], "trials.csv")) as handle:
        rows = list(csv.DictReader(handle))
    assert [row["state"] for row in rows] == [state.name.lower() for state in states]
    with open(os.path.join(prunedStudy["folder"], "search.png"), "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_best_params_yaml_accepted_by_train(prunedStudy, tmp_path):
    yaml_path = os.path.join(prunedStudy["folder"], "best_hyperparams.yaml")
    best = yaml.safe_load(open(yaml_path))
    run_dir = trainHere("--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "64",
                        "--log-dir", tmp_path, "--hyperparam-file", yaml_path, "--hyperparam", "n_epochs:2",
                        "--checkpoint-freq", "-1")  # in this process
    with zipfile.ZipFile(os.path.join(run_dir, "ppo2_model.zip")) as archive:
        data = json.loads(archive.read("data"))
    assert data["gamma"] == best["gamma"] and data["gae_lambda"] == best["gae_lambda"]
    assert data["n_steps"] == 64 and data["batch_size"] == best["batch_size"]
    assert data["n_epochs"] == 2  # --hyperparam wins over the file


def test_hyperparam_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    for content, message in (("[1, 2]", "must hold a mapping"), ("gamma: [0.9]", "is not NAME"),
                             ("gamma: 'high'", "needs a float"), ("nope: 1", "unknown hyperparameter 'nope'")):
        bad.write_text(content)
        with pytest.raises(UsageError, match=message):
            train.main(["--algo", "ppo2", "--srl-model", "ground_truth", "--log-dir", str(tmp_path / "logs"),
                        "--hyperparam-file", str(bad)])
    with pytest.raises(UsageError, match="--hyperparam-file"):
        train.main(["--algo", "ppo2", "--hyperparam-file", str(tmp_path / "missing.yaml")])
    assert not (tmp_path / "logs").exists()


@pytest.mark.slow
def test_commands_share_one_sqlite_study_and_score_the_last_evaluation(tmp_path):
    """A command with --workers 2 and another command, at the same time, on one SQLite file: no trial lost.

    Their forwarded --eval-freq: each trial evaluates (--eval-episodes deterministic episodes per evaluation) and its
    value is the mean of its last evaluation; the pruner got each evaluation's mean at its step (not the training
    episodes' means at the --n-evaluations steps 125, 250, 375, 500), the last one the objective."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    shared = [*COMMON, "--optimizer", "tpe", "--pruner", "none", "--num-timesteps", "500", "--n-evaluations", "4",
              "--eval-freq", "250", "--eval-episodes", "2", "--storage", url, "--study-name", "shared"]
    # the first a command (forked from the warm interpreter), the second in this process meanwhile
    first = startModule("rl_baselines.hyperparam_search", *shared, "--workers", "2", "--n-trials", "2", "--log-dir",
                        tmp_path / "a")
    assert hyperparam_search.main([*shared, "--n-trials", "1", "--sampler-seed", "1", "--log-dir",
                                   str(tmp_path / "b")]) == 0
    first_out, first_err = first.communicate(timeout=600)
    assert first.returncode == 0, first_out + first_err
    trials = _loadStudy(url, "shared").trials
    assert sorted(t.number for t in trials) == [0, 1, 2]
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    # two searches: the 2-worker one ran 2 trials, the other 1, each in its own log folder
    by_search: dict[str, list] = {}
    for trial in trials:
        by_search.setdefault(trial.user_attrs["search_id"], []).append(trial)
        assert os.path.isfile(os.path.join(trial.user_attrs["run_dir"], "monitor", "0.monitor.csv"))
        evaluations = readEvaluations(trial.user_attrs["run_dir"])
        assert list(evaluations["timesteps"]) == [250, 500] and evaluations["results"].shape == (2, 2)
        assert trial.value == pytest.approx(evaluations["results"][-1].mean())
        assert trial.intermediate_values == pytest.approx({250: evaluations["results"][0].mean(),
                                                           500: evaluations["results"][1].mean()})
    assert sorted(len(group) for group in by_search.values()) == [1, 2]
    assert len({tuple(sorted(t.params.items())) for t in trials}) == 3  # no duplicated sample


def test_a_grid_search_runs_the_points_left_and_says_so(tmp_path, capsys):
    """Optuna's GridSampler stops a search at the grid's last point and tries points again once all were tried: a
    grid of 2 points with --n-trials 3 ran 2 trials without a word, and the same command again re-ran a tried point.
    The command says how many points are left and runs those, and nothing once every point was tried."""
    fixed = [item for name, value in (("learning_rate", "0.001"), ("gamma", "0.99"), ("gae_lambda", "0.95"),
                                      ("ent_coef", "0.0"), ("clip_range", "0.2"), ("vf_coef", "0.5"),
                                      ("max_grad_norm", "0.5"), ("batch_size", "64"))
             for item in ("--hyperparam", f"{name}:{value}")]
    argv = [*COMMON, *fixed, "--optimizer", "grid", "--grid-points", "2", "--pruner", "none", "--num-timesteps",
            "256", "--no-vis", "--log-dir", str(tmp_path), "--n-trials", "3"]
    assert hyperparam_search.main(argv) == 0
    out = capsys.readouterr().out
    assert "searching n_epochs" in out
    assert "--n-trials 3: the grid has 2 of its 2 point(s) left to try; running 2" in out
    assert hyperparam_search.main(argv) == 0
    out = capsys.readouterr().out
    assert "Nothing to run: the grid's 2 point(s) have all been tried (the study holds 2 trials)" in out
    study = _loadStudy(f"sqlite:///{tmp_path}/hyperparam_search/ppo2_{ENV}_ground_truth_grid.db",
                       f"ppo2_{ENV}_ground_truth_grid")
    assert sorted(trial.params["n_epochs"] for trial in study.trials) == [1, 10]


def test_sampler_seeds_of_commands_sharing_a_study_differ():
    # --sampler-seed 0 started after one trial, --sampler-seed 1 before any: a plain sum gave both seed 1
    assert samplerSeed(0, 1) != samplerSeed(1, 0)
    assert samplerSeed(3, 5) == samplerSeed(3, 5)
    assert all(0 <= samplerSeed(base, known) < 2 ** 31 for base in range(5) for known in range(5))


class _PruneAtOnce(optuna.trial.FixedTrial):
    """A fixed trial whose pruner stops it at the first intermediate value."""

    def __init__(self, params: dict) -> None:
        super().__init__(params, number=7)
        self.reported: list = []

    def report(self, value: float, step: int) -> None:
        self.reported.append((step, value))

    def should_prune(self) -> bool:
        return bool(self.reported)


@pytest.mark.slow
def test_pruned_trial_process_is_stopped(tmp_path):
    """A trial pruned at its first report (step 250 of 200000) has its train process killed: no model saved, the
    monitor file stops growing."""
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        [*COMMON, "--num-timesteps", "200000", "--n-evaluations", "800", "--log-dir", str(tmp_path)])
    config, algo_class = hyperparam_search.prepare(vars(args), train_argv)
    params = {name: gridValues(spec, 1)[0] for name, spec in config.space.items()}
    trial = _PruneAtOnce(params)
    with pytest.raises(optuna.TrialPruned):
        TrialObjective(config)(trial)
    assert trial.reported[0][0] == 250
    run_dir = trial.user_attrs["run_dir"]
    monitor = os.path.join(run_dir, "monitor", "0.monitor.csv")
    size = os.path.getsize(monitor)
    time.sleep(1.5)
    assert os.path.getsize(monitor) == size
    assert not os.path.exists(os.path.join(run_dir, "ppo2_model.zip"))
    assert sum(1 for _ in open(monitor)) < 2 + 200000 // 250


def test_a_search_whose_every_trial_was_pruned_before_it_started_says_why(tmp_path, capsys, loneSampleSpace):
    """Both trials pruned for sampled values train refuses: the summary said their first rollout was past the budget
    and advised a larger one. It counts the trials of each cause and advises for those."""
    code = hyperparam_search.main(["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--n-trials", "2",
                                   *EVERY_TRIAL_PRUNED, "--no-progress", "--log-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and "every trial was pruned before it started, 2 for sampled values train refuses (the last: " \
        "n_steps 1 x --num-cpu 1 = 1 sample per rollout" in err, err
    assert "fix n_steps with --hyperparam n_steps:N" in err and "rollout past" not in err and "budget" not in err
    assert "train.log" not in err  # (there is none to see)


def test_search_space_to_optuna():
    space = {"a": (int, (1, 100), "log"), "b": (float, (0.0, 1.0)), "c": (list, ["auto", 0.1])}
    assert gridValues(space["a"], 3) == [1, 10, 100]
    assert gridValues(space["b"], 3) == [0.0, 0.5, 1.0]
    assert gridValues(space["c"], 3) == ["auto", 0.1]
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    trial = study.ask()
    params = suggestParams(trial, space)
    assert isinstance(params["a"], int) and 1 <= params["a"] <= 100 and params["c"] in ("auto", 0.1)
    with pytest.raises(UsageError, match="'x'"):
        checkSpace("algo", {"x": (float, (1.0, 0.0))})
    with pytest.raises(UsageError, match="'y'"):
        checkSpace("algo", {"y": (float, (0.0, 1.0), "log")})


def test_algo_args_are_train_flags_of_the_searched_algorithm(tmp_path):
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        ["--algo", "ppo2", "--srl-model", "ground_truth", "--log-dir", str(tmp_path), "--algo-args",
         "ppo2:--hyperparam n_steps:64 --n-epochs=2"])
    config, _ = hyperparam_search.prepare(vars(args), train_argv)
    assert config.train_argv == ["--hyperparam", "n_steps:64", "--n-epochs=2"]
    # the flag --n-epochs fixes n_epochs as --hyperparam fixes n_steps: neither is searched (a sample would override it)
    assert "n_steps" not in config.space and "n_epochs" not in config.space
    assert config.fixed == {"n_steps": "64", "n_epochs": "2"}
    assert not os.path.exists(tmp_path / hyperparam_search.SEARCH_FOLDER)


def test_a_trial_whose_first_rollout_passes_the_budget_is_pruned_before_it_trains(tmp_path, capsys):
    """ppo2 collects n_steps x envs before its first update, whatever --num-timesteps is: such a trial would train
    past the budget and be compared with trials that stopped at it, so it is pruned, saying why, and nothing runs."""
    argv = ["--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "512", "--num-cpu", "2",
            "--log-dir", str(tmp_path)]
    args, train_argv = hyperparam_search.searchParser().parse_known_args(argv)
    config, _ = hyperparam_search.prepare(vars(args), train_argv)
    assert config.num_cpu == 2
    params = {name: gridValues(spec, 1)[0] for name, spec in config.space.items()}
    trial = _PruneAtOnce({**params, "n_steps": 300})
    with pytest.raises(optuna.TrialPruned,
                       match="n_steps 300 x 2 env.*after 600 steps, past half of --num-timesteps 512"):
        TrialObjective(config)(trial)
    assert "trial_dir" not in trial.user_attrs and not os.path.exists(os.path.join(config.output_dir, "trial_0007"))
    # the reason reaches the user's line (there is no step nor reward to give) and trials.csv
    frozen = optuna.trial.create_trial(state=optuna.trial.TrialState.PRUNED, user_attrs=trial.user_attrs)
    progress = TrialProgress(1, enabled=False)
    progress.trialDone(frozen)
    line = capsys.readouterr().out.strip()
    assert "pruned before it started (n_steps 300 x 2 env(s)" in line and "None" not in line, line
    assert progress.bar.postfix == "best=none yet, failed=0, pruned=1"  # (it read best=-inf)
    study = optuna.create_study()
    study.add_trial(frozen)
    writeTrialsCsv(str(tmp_path / "trials.csv"), study)
    with open(tmp_path / "trials.csv", newline="") as handle:
        (row,) = csv.DictReader(handle)
    assert row["state"] == "pruned" and row["pruned_before_start"].startswith("n_steps 300 x 2 env(s)")


def test_trials_pruned_before_they_start_are_followed_by_the_command(tmp_path, loneSampleSpace):
    """With --workers K the command follows its trials in the storage by their search_id (finishedTrials): a trial
    pruned before it started carries it too, else the bar stayed 0/N and the summary said 0 pruned."""
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        ["--env", "MobileRobot1DGymEnv-v0", "--srl-model", "ground_truth", *EVERY_TRIAL_PRUNED,
         "--log-dir", str(tmp_path)])
    config, _ = hyperparam_search.prepare(vars(args), train_argv)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(TrialObjective(config), n_trials=2)  # both pruned before they start
    trials = finishedTrials(study, config.search_id)
    assert [(t.number, t.state.name) for t in trials] == [(0, "PRUNED"), (1, "PRUNED")]
    assert all("pruned_before_start" in t.user_attrs for t in trials)
    assert all(t.user_attrs["train_flags"] == config.trialFlags for t in trials)  # (the best trial's repeat command)
    assert not os.path.exists(config.output_dir)


def test_the_repeat_command_trains_the_best_trials_setting(tmp_path):
    """The printed command (the YAML's header too) gives train every flag the best trial got, --seed,
    --num-timesteps and --eval-episodes included, from the trial's own record, and the header names the objective."""
    argv = ["--algo", "ppo2", "--env", "MobileRobot1DGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps",
            "500", "--seed", "3", "-c", "--eval-freq", "250", "--eval-episodes", "2", "--hyperparam", "n_steps:32",
            "--log-dir", str(tmp_path)]
    args, train_argv = hyperparam_search.searchParser().parse_known_args(argv)
    config, algo_class = hyperparam_search.prepare(vars(args), train_argv)
    params = {name: gridValues(spec, 1)[0] for name, spec in config.space.items()}
    study = optuna.create_study(direction="maximize")
    trial = study.ask()
    suggestParams(trial, {name: (list, [value]) for name, value in params.items()})
    trial.set_user_attr("fixed_hyperparams", config.fixed)
    trials_config = dataclasses.replace(config, seed=7)  # the trial's flags, not this command's, are repeated
    trial.set_user_attr("train_flags", trials_config.trialFlags)
    study.tell(trial, 1.5)
    yaml_path = str(tmp_path / "best.yaml")
    values = writeBestParams(yaml_path, study, config, algo_class)
    assert values == {**params, "n_steps": 32}
    with open(yaml_path) as handle:
        header = [line[2:].strip() for line in handle if line.startswith("#")]
    command = repeatCommand(study.best_trial, config, yaml_path)
    assert header[1] == ("mean reward of the last evaluation due within the 500-step budget (2 deterministic "
                         "episodes): 1.5000, ppo2 on MobileRobot1DGymEnv-v0 (ground_truth).") and header[2] == command

    def parsed(arguments: list) -> dict:
        values = vars(algo_class.customArguments(train_checks.baseParser()).parse_args(arguments))
        return {k: v for k, v in values.items() if k not in ("log_dir", "tag", "no_vis", "no_progress", "hyperparam",
                                                               "hyperparam_file")}

    repeated = shlex.split(command)
    assert repeated[:3] == ["python", "-m", "rl_baselines.train"]
    trial_command = TrialObjective(trials_config).trainCommand(str(tmp_path), 0, params)
    assert parsed(repeated[3:]) == parsed(trial_command[3:])
    assert parsed(repeated[3:])["seed"] == 7 and parsed(repeated[3:])["num_timesteps"] == 500
    assert parsed(repeated[3:])["eval_episodes"] == 2 and parsed(repeated[3:])["eval_freq"] == 250
    assert parsed(repeated[3:])["continuous_actions"]


def test_the_best_params_header_says_when_fewer_episodes_than_eval_episodes_were_scored(tmp_path):
    """A budget of 1024 steps ends 4 MobileRobot episodes: the objective is their mean, and best_hyperparams.yaml's
    header said "the last 10 episodes" (--eval-episodes' default) all the same. The trial records how many it
    averaged, and the header says so when that is fewer."""
    config = _searchConfig(tmp_path)
    algo_class = registered_rl["ppo2"][0]
    timesteps, rewards = np.array([250, 500, 750, 1000, 1250]), [0.0, -3.0, 37.0, 0.0, 100.0]
    study = optuna.create_study(direction="maximize")
    for ends in (timesteps, np.arange(1, 13) * 80):  # 4 episodes ended by step 1024, then 12
        trial = study.ask()
        suggestParams(trial, {name: (list, [gridValues(spec, 1)[0]]) for name, spec in config.space.items()})
        trial.set_user_attr("fixed_hyperparams", config.fixed)
        value = TrialObjective(config).score(trial, ends, rewards if len(ends) == 5 else [1.0] * 12)
        assert trial.user_attrs[SCORED_EPISODES] == min(4 if len(ends) == 5 else 12, 10)
        study.tell(trial, value if len(ends) == 5 else -100.0)  # the first one best
        yaml_path = tmp_path / "best.yaml"
        writeBestParams(str(yaml_path), study, config, algo_class)
        header = [line[2:].strip() for line in yaml_path.read_text().splitlines() if line.startswith("#")]
        assert header[1] == ("mean reward of the last 10 episodes that ended within the 1024-step budget (only 4 "
                             "ended): 8.5000, ppo2 on MobileRobotGymEnv-v0 (ground_truth).")
    study.tell(study.ask(), 1000.0)  # a trial of an earlier version, which recorded no count: the plain header
    writeBestParams(str(yaml_path), study, config, algo_class)
    assert "within the 1024-step budget: 1000.0000," in yaml_path.read_text()


def _searchConfig(tmp_path, *flags: str):
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        [*COMMON, "--num-timesteps", "1024", "--log-dir", str(tmp_path), *flags])
    return hyperparam_search.prepare(vars(args), train_argv)[0]


def test_the_objective_scores_only_what_ended_within_the_budget(tmp_path):
    """A trial with n_steps 750 trains 1500 steps of a 1024-step budget (SB3 finishes its rollout): the episodes that
    end after step 1024 are not scored, as they are not in its intermediate value at 1024 (the mean of all six
    episodes, 3.17, was its objective); its evaluations due after 1024 neither."""
    lengths = [250, 250, 250, 250, 250, 250]  # ending at 250 ... 1500
    rewards = [0.0, -3.0, 37.0, 0.0, -10.0, -5.0]
    timesteps = np.cumsum(lengths)
    config = _searchConfig(tmp_path)
    trial = _PruneAtOnce({})
    assert TrialObjective(config).score(trial, timesteps, rewards) == pytest.approx(8.5)  # the 4 ended by 1024
    # the same value as the pruner's last intermediate one, at the budget
    assert config.reportSteps[-1] == 1024 and meanWithin(timesteps, rewards, 1024, 10) == pytest.approx(8.5)
    with pytest.raises(TrialFailed, match="no episode finished within 1024 steps"):
        TrialObjective(config).score(trial, np.array([1100, 1500]), [1.0, 2.0])

    evaluated = _searchConfig(tmp_path, "--eval-freq", "500", "--eval-episodes", "2")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # evaluations due at 500, 1000 and 1500
    np.savez(run_dir / "evaluations.npz", timesteps=np.array([500, 1000, 1500]),
             results=np.array([[1.0, 2.0], [3.0, 4.0], [50.0, 60.0]]), ep_lengths=np.full((3, 2), 250))
    trial.set_user_attr("run_dir", str(run_dir))
    assert TrialObjective(evaluated).score(trial, timesteps, rewards) == pytest.approx(3.5)
    # with several envs an evaluation is played at the first step at or past its multiple: the one at 1002 was due at
    # 1000, within a 1000-step budget (with the policy of the rollouts that ended before 1000); the one at 1500 not
    assert lastEvaluationWithin({"timesteps": np.array([501, 1002, 1500])}, 500, 1000) == 1
    assert lastEvaluationWithin({"timesteps": np.array([1500])}, 500, 1024) is None


class _PruneBelow(optuna.trial.FixedTrial):
    """A fixed trial whose pruner stops it at the first intermediate value below ``threshold``."""

    def __init__(self, threshold: float) -> None:
        super().__init__({}, number=3)
        self.threshold = threshold
        self.reported: list = []

    def report(self, value: float, step: int) -> None:
        self.reported.append((step, value))

    def should_prune(self) -> bool:
        return self.reported[-1][1] < self.threshold


def test_with_eval_freq_the_pruner_reads_each_evaluation_at_its_due_step(tmp_path, capsys):
    """With a forwarded --eval-freq the pruner reads the run's evaluations.npz as it grows (it read the training
    episodes, so a pruned trial and a completed one were compared on different measures): each evaluation's mean at
    the multiple of --eval-freq it was due at, none due past the budget, the last one reported the objective; a
    missing or unreadable file is no evaluation yet."""
    config = _searchConfig(tmp_path, "--eval-freq", "500", "--eval-episodes", "2", "--n-evaluations", "8",
                           "--pruner", "hyperband")
    # the report steps are the evaluations' (not --n-evaluations' 128, 256, ...): Hyperband's resources run from the
    # first (--eval-freq) to the last, the step the objective is measured at (the last multiple within the budget)
    assert list(config.reportSteps) == [500, 1000]
    assert list(_searchConfig(tmp_path, "--n-evaluations", "4").reportSteps) == [256, 512, 768, 1024]  # unchanged
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    path = run_dir / "evaluations.npz"
    trial = _PruneBelow(-100.0)
    reporter = search_trials._EvaluationReporter(trial, config.eval_freq, config.reportSteps[-1])
    assert reporter.update(None) is None and reporter.update(str(run_dir)) is None  # no run folder, no file yet
    path.write_bytes(b"PK\x03\x04 half written")
    assert reporter.update(str(run_dir)) is None and trial.reported == []  # unreadable: read again at the next poll
    # with 2 envs the first evaluation is played at step 502, due at 500
    np.savez(path, timesteps=np.array([502]), results=np.array([[1.0, 2.0]]), ep_lengths=np.full((1, 2), 250))
    assert reporter.update(str(run_dir)) is None and trial.reported == [(500, 1.5)]
    np.savez(path, timesteps=np.array([502, 1000, 1500]), results=np.array([[1.0, 2.0], [3.0, 4.0], [50.0, 60.0]]),
             ep_lengths=np.full((3, 2), 250))
    assert reporter.update(str(run_dir)) is None
    assert reporter.update(str(run_dir)) is None  # each evaluation reported once
    assert trial.reported == [(500, 1.5), (1000, 3.5)]  # the one due at 1500, past the 1024-step budget, not
    trial.set_user_attr("run_dir", str(run_dir))
    assert TrialObjective(config).score(trial, np.array([250, 500]), [0.0, 0.0]) == trial.reported[-1][1]
    # the pruner decides on each evaluation: stopped at the first one below 3
    pruned = _PruneBelow(3.0)
    assert search_trials._EvaluationReporter(pruned, 500, 1000).update(str(run_dir)) == 500
    assert pruned.reported == [(500, 1.5)]
    # a real trial records them as its intermediate values, which its pruned line gives
    study = optuna.create_study(direction="maximize")
    real = study.ask()
    assert search_trials._EvaluationReporter(real, 500, 1000).update(str(run_dir)) is None
    study.tell(real, state=optuna.trial.TrialState.PRUNED)
    assert study.trials[0].intermediate_values == {500: 1.5, 1000: 3.5}
    TrialProgress(1, enabled=False, evaluates=True).trialDone(study.trials[0])
    assert "trial 0: pruned at step 1000 (evaluation mean reward then 3.50)" in capsys.readouterr().out
    # an unreadable file once the run finished fails the trial (it stopped the whole search)
    path.write_bytes(b"not an npz")
    with pytest.raises(TrialFailed, match="not a readable .npz file"):
        TrialObjective(config).score(trial, np.array([250, 500]), [0.0, 0.0])


def test_with_several_envs_an_episode_ends_at_its_envs_step_times_the_envs(tmp_path):
    """Two envs step together: the third 250-step episode of each ends at the run's step 1500, past a 1250-step
    budget, though the lengths of the five episodes merged before it sum to 1250 (the objective was 7.5, the mean of
    two episodes that ended after the budget; the pruner's values were filed at steps too early)."""
    monitor = tmp_path / "monitor"
    monitor.mkdir()
    for env, rewards in ((0, [-5.0, -8.0, 15.0]), (1, [-9.0, 0.0, 0.0])):
        rows = "".join(f"{reward},250,{index + 1.0}\n" for index, reward in enumerate(rewards))
        (monitor / f"{env}.monitor.csv").write_text(f'#{{"t_start": 0.0, "env_id": "{ENV}"}}\nr,l,t\n{rows}')
    tail = MonitorTail(str(monitor))
    tail.poll()
    tail.close()
    ends = tail.endSteps(2)
    assert list(ends) == [500, 500, 1000, 1000, 1500, 1500] and list(tail.timesteps)[-1] == 1500
    assert tail.rewards == [-5.0, -9.0, -8.0, 0.0, 15.0, 0.0]
    assert meanWithin(ends, tail.rewards, 1250, 2) == pytest.approx(-4.0)
    assert meanWithin(ends, tail.rewards, 400, 2) is None  # no episode had ended by step 400
    assert list(tail.endSteps(1)) == [250, 250, 500, 500, 750, 750]


def test_best_params_write_a_fixed_none_or_number_hyperparameter(tmp_path):
    """A fixed clip_range_vf / target_kl (typed by parserHyperParam as a str subclass) made yaml.safe_dump raise
    RepresenterError: written as a float or null, as hyperparams.yaml, and read back by train."""
    argv = ["--algo", "ppo2", "--env", "MobileRobot1DGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps",
            "500", "--hyperparam", "clip_range_vf:0.2", "--hyperparam", "target_kl:none", "--log-dir", str(tmp_path)]
    args, train_argv = hyperparam_search.searchParser().parse_known_args(argv)
    config, algo_class = hyperparam_search.prepare(vars(args), train_argv)
    study = optuna.create_study(direction="maximize")
    trial = study.ask()
    suggestParams(trial, {name: (list, [gridValues(spec, 1)[0]]) for name, spec in config.space.items()})
    trial.set_user_attr("fixed_hyperparams", config.fixed)
    study.tell(trial, 1.0)
    yaml_path = str(tmp_path / "best.yaml")
    writeBestParams(yaml_path, study, config, algo_class)
    with open(yaml_path) as handle:
        written = yaml.safe_load(handle)
    assert written["clip_range_vf"] == 0.2 and written["target_kl"] is None
    read = algo_class.parserHyperParam(readHyperparamFile(yaml_path, "MobileRobot1DGymEnv-v0"))
    assert read["clip_range_vf"] == "0.2" and read["target_kl"] == "none"


def test_every_algorithms_default_grid_fits_and_a_larger_one_is_refused():
    for name, (algo_class, _, _) in registered_rl.items():
        space = algo_class.getOptParam()
        if space:
            hyperparam_search._checkGridSize(space, 3)  # --grid-points' default: acer's 1.06 million points
    with pytest.raises(UsageError, match="--grid-points 30: the grid of the 10 hyperparameters"):
        hyperparam_search._checkGridSize(registered_rl["ppo2"][0].getOptParam(), 30)


def test_sweep_defaults_are_train_config_s(monkeypatch):
    """The search's and the pipeline's --srl-model, --log-dir and --seed default to TrainConfig's fields (one
    declaration: a train default that changes changes theirs)."""
    for name, value in (("srl_model", "ground_truth"), ("log_dir", "elsewhere/"), ("seed", 7)):
        monkeypatch.setattr(TrainConfig, name, value)
    search_args, _ = hyperparam_search.searchParser().parse_known_args([])
    pipeline_args, _ = pipeline.buildParser().parse_known_args([])
    assert (search_args.srl_model, search_args.log_dir, search_args.seed) == ("ground_truth", "elsewhere/", 7)
    assert (pipeline_args.srl_model, pipeline_args.log_dir, pipeline_args.seed) == (["ground_truth"], "elsewhere/", 7)
    for parser in (hyperparam_search.searchParser(), pipeline.buildParser()):
        assert "[ground_truth]" in parser.format_help() and "[elsewhere/]" in parser.format_help()


class _KilledTrain(TrialObjective):
    """A trial whose train process is killed (kill -9, the OOM killer) after printing a warning."""

    def trainCommand(self, run_root: str, number: int, params: dict) -> list[str]:
        return [sys.executable, "-c", "import os, signal; print('warning: You have specified a mini-batch size of 64', "
                                      "flush=True); os.kill(os.getpid(), signal.SIGKILL)"]


def test_a_trial_whose_train_was_killed_fails_as_killed_not_with_its_logs_last_line(tmp_path):
    """It failed with "train exited with code -9: warning: You have specified a mini-batch size ...": the warning
    its log happened to end with read as the cause."""
    config = _searchConfig(tmp_path)
    trial = optuna.create_study(direction="maximize").ask()
    with pytest.raises(TrialFailed, match=r"^train exited with code -9: killed by SIGKILL \(log: .*train\.log\)$"):
        _KilledTrain(config)(trial)
    assert trial.user_attrs["error"].startswith("train exited with code -9: killed by SIGKILL (log: ")
