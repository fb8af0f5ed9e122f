"""Hyperparameter search of the off-policy algorithms, in process and without training: a trial's gradient_steps
follows its sampled train_freq as in the RL Zoo's samplers (never more than one gradient step per env step), a fixed
gradient_steps wins, the trial's command, trials.csv and best_hyperparams.yaml give the value it trained with, and a
study made when gradient_steps was sampled by itself continues; qrdqn's n_quantiles is searched as the RL Zoo does
(one trial trains, briefly)."""
from __future__ import annotations

import csv
import json
import os
import types

import pytest
import yaml
from conftest import trainHere

optuna = pytest.importorskip("optuna")

from rl_baselines.sweeps import hyperparam_search, search_study, search_trials  # noqa: E402
from rl_baselines.sweeps.search_outputs import writeBestParams  # noqa: E402
from rl_baselines.sweeps.search_study import suggestParams, trialParams  # noqa: E402
from rl_baselines.sweeps.search_trials import TrialObjective  # noqa: E402

ENV = "MobileRobotGymEnv-v0"
SUBSAMPLE_STEPS = "subsample_steps"  # (search_study.SUBSAMPLE_STEPS: a search-space entry, no hyperparameter)
# The RL Zoo's ratio of gradient steps to env steps: at most 1 (sample_sac/td3/tqc_params: gradient_steps =
# train_freq; sample_dqn_params, which sample_qrdqn_params builds on: max(train_freq // subsample_steps, 1))
ZOO_SUBSAMPLE = {"sac": [1], "td3": [1], "tqc": [1], "ddpg": [1], "her": [1], "qrdqn": [1, 2, 4, 8]}


def _config(tmp_path, algo: str, *flags: str) -> search_study.SearchConfig:
    actions = [] if algo in ("qrdqn", "deepq") else ["-c"]
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        ["--algo", algo, "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "20000",
         "--log-dir", str(tmp_path), *actions, *flags])
    return hyperparam_search.prepare(vars(args), train_argv)[0]


def _hyperparamFlags(command: list[str]) -> dict[str, str]:
    """:return: the ``--hyperparam KEY:VALUE`` items a trial's train command ends with (its sampled values; a
        forwarded ``--hyperparam`` comes before)"""
    last = len(command) - 1 - command[::-1].index("--hyperparam") if "--hyperparam" in command else len(command)
    items = command[last + 1:]
    return dict(item.split(":", 1) for item in items if ":" in item and not item.startswith("-"))


@pytest.mark.parametrize("algo", [*ZOO_SUBSAMPLE, "deepq"])
def test_no_sampled_trial_takes_more_gradient_steps_than_env_steps(tmp_path, algo):
    """train_freq (1..16) and gradient_steps (1..16) were sampled apart: a trial could take 16 gradient steps per env
    step, 16-64x the defaults' cost (qrdqn at batch 256: about 2 s per env step), and the search stalled there."""
    config = _config(tmp_path, algo)
    assert "gradient_steps" not in config.space and "train_freq" in config.space
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(300):
        sampled = suggestParams(study.ask(), config.space)
        params, why = trialParams(sampled, config)
        assert why is None and SUBSAMPLE_STEPS not in params
        command = TrialObjective(config).trainCommand(str(tmp_path / "runs"), 0, params)
        given = _hyperparamFlags(command)
        assert SUBSAMPLE_STEPS not in given and int(given["train_freq"]) == sampled["train_freq"]
        if algo == "deepq":  # (one gradient step per train_freq env steps: it has no gradient_steps)
            assert config.subsample_steps is None and "gradient_steps" not in params
            continue
        subsample = sampled.get(SUBSAMPLE_STEPS, 1)
        assert subsample in ZOO_SUBSAMPLE[algo] and config.subsample_steps == ZOO_SUBSAMPLE[algo]
        assert params["gradient_steps"] == max(sampled["train_freq"] // subsample, 1) <= sampled["train_freq"]
        assert int(given["gradient_steps"]) == params["gradient_steps"]


@pytest.mark.parametrize("algo, flags", [("qrdqn", ["--hyperparam", "gradient_steps:3"]),
                                         ("sac", ["--gradient-steps", "5"]),
                                         ("td3", ["--hyperparam", "train_freq:4"])])
def test_a_fixed_gradient_steps_or_train_freq_is_left_as_given(tmp_path, algo, flags):
    """A fixed gradient_steps is every trial's (it is not derived, subsample_steps not sampled); with train_freq fixed
    gradient_steps is train's (fixed or its default), as without the search."""
    config = _config(tmp_path, algo, *flags)
    assert config.subsample_steps is None and not {"gradient_steps", SUBSAMPLE_STEPS} & set(config.space)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        params, _ = trialParams(suggestParams(study.ask(), config.space), config)
        assert "gradient_steps" not in params
        command = TrialObjective(config).trainCommand(str(tmp_path / "runs"), 0, params)
        assert "gradient_steps" not in _hyperparamFlags(command) and flags[-1] in command


class _FinishedRun:
    """A trial's train process, faked: it writes a run of 4 episodes (rewards from its gradient_steps) at once and
    has exited at the second poll."""

    def __init__(self, command, **_kwargs) -> None:
        run_dir = os.path.join(command[command.index("--log-dir") + 1], ENV, "ground_truth", "qrdqn", "run")
        os.makedirs(os.path.join(run_dir, "monitor"))
        with open(os.path.join(run_dir, "args.json"), "w") as handle:
            json.dump({"num_cpu": 1}, handle)
        reward = int(_hyperparamFlags(command).get("gradient_steps", 0))
        rows = "".join(f"{reward}.0,250,{step}.0\n" for step in (1, 2, 3, 4))
        with open(os.path.join(run_dir, "monitor", "0.monitor.csv"), "w") as handle:
            handle.write(f'#{{"t_start": 0.0, "env_id": "{ENV}"}}\nr,l,t\n{rows}')
        self.polls, self.returncode, self.pid = 0, None, -1

    def poll(self) -> int | None:
        self.polls += 1
        self.returncode = 0 if self.polls > 1 else None
        return self.returncode


def _fakeTrials(monkeypatch) -> list[list[str]]:
    commands = []

    def popen(command, **kwargs):
        commands.append(command)
        return _FinishedRun(command, **kwargs)

    monkeypatch.setattr(search_trials.subprocess, "Popen", popen)
    monkeypatch.setattr(search_trials, "time", types.SimpleNamespace(sleep=lambda _seconds: None))
    monkeypatch.setattr(search_trials, "_stopChild", lambda child: None)
    return commands


def _oldTrial(gradient_steps: int, value: float) -> optuna.trial.FrozenTrial:
    """:return: a completed trial of the space before gradient_steps followed train_freq (sampled by itself)"""
    int_range = optuna.distributions.IntDistribution
    return optuna.trial.create_trial(
        params={"train_freq": 2, "gradient_steps": gradient_steps}, value=value,
        distributions={"train_freq": int_range(1, 16), "gradient_steps": int_range(1, 16)},
        user_attrs={"fixed_hyperparams": {}, "train_flags": ["--algo", "qrdqn"]})


@pytest.mark.parametrize("optimizer", ["tpe", "grid"])
def test_a_trial_records_the_gradient_steps_it_trained_with_and_an_older_study_continues(tmp_path, monkeypatch,
                                                                                        optimizer):
    """The derived gradient_steps reaches the trial's command, its line, trials.csv and best_hyperparams.yaml
    (subsample_steps, which train does not take, none of them); a study whose trials sampled gradient_steps by itself
    continues with the tied space (its trials keep the value they sampled), warning that the space changed."""
    commands = _fakeTrials(monkeypatch)
    log_dir = tmp_path / "logs"
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    older = optuna.create_study(storage=storage, study_name="s", direction="maximize")
    older.add_trial(_oldTrial(gradient_steps=16, value=100.0))  # the best: its yaml gives its own gradient_steps
    older.add_trial(_oldTrial(gradient_steps=1, value=-100.0))
    argv = ["--algo", "qrdqn", "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "1000",
            "--n-evaluations", "2", "--optimizer", optimizer, "--pruner", "none", "--n-trials", "6", "--no-progress",
            "--n-startup-trials", "2", "--grid-points", "2", "--storage", storage, "--study-name", "s",
            "--log-dir", str(log_dir)]
    with pytest.warns(UserWarning, match=r"was searched over another space: .*gradient_steps \(1\.\.16 \(int\), now "
                                         r"train_freq // subsample_steps\).*subsample_steps \(not searched, now one "
                                         r"of 1, 2, 4, 8\).*its 2 earlier trials are kept"):
        assert hyperparam_search.main(argv) == 0
    study = optuna.load_study(study_name="s", storage=storage)
    new = study.trials[2:]
    assert len(new) == len(commands) == 6 and all(trial.state.name == "COMPLETE" for trial in new)
    for trial, command in zip(new, commands):
        given = _hyperparamFlags(command)
        derived = max(trial.params["train_freq"] // trial.params[SUBSAMPLE_STEPS], 1)
        assert int(given["gradient_steps"]) == derived and SUBSAMPLE_STEPS not in given
        assert search_study.trialValues(trial)["gradient_steps"] == derived
    folder = log_dir / "hyperparam_search" / "s"
    with open(folder / "trials.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert SUBSAMPLE_STEPS not in rows[0]
    assert [int(row["gradient_steps"]) for row in rows] == [16, 1, *(int(_hyperparamFlags(c)["gradient_steps"])
                                                                     for c in commands)]
    best = yaml.safe_load((folder / "best_hyperparams.yaml").read_text())
    assert best["gradient_steps"] == 16 and SUBSAMPLE_STEPS not in best  # (the older trial scored best)
    # a new trial as the best: the yaml gives its derived gradient_steps, and its train_freq
    study.add_trial(optuna.trial.create_trial(params=new[0].params, distributions=new[0].distributions, value=200.0,
                                              user_attrs=new[0].user_attrs))
    args, train_argv = hyperparam_search.searchParser().parse_known_args(argv)
    config, algo_class = hyperparam_search.prepare(vars(args), train_argv)
    writeBestParams(str(folder / "best_hyperparams.yaml"), study, config, algo_class)
    best = yaml.safe_load((folder / "best_hyperparams.yaml").read_text())
    assert best["gradient_steps"] == int(_hyperparamFlags(commands[0])["gradient_steps"])
    assert best["train_freq"] == new[0].params["train_freq"] and SUBSAMPLE_STEPS not in best


def test_qrdqn_searches_n_quantiles_as_rl_zoo_does_and_a_trial_s_value_reaches_its_policy(tmp_path):
    """RL Zoo's sample_qrdqn_params samples n_quantiles (5 to 200) into policy_kwargs; here up to 180, so that the
    quantile loss at the largest batch (256) stays under glibc's mmap threshold (rl_baselines.rl_algorithm.qrdqn)."""
    argv = ["--algo", "qrdqn", "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps", "200",
            "--log-dir", str(tmp_path)]
    args, train_argv = hyperparam_search.searchParser().parse_known_args(argv)
    config, algo_class = hyperparam_search.prepare(vars(args), train_argv)
    assert config.space["n_quantiles"] == (int, (5, 180))
    assert max(config.space["batch_size"][1]) * 180 ** 2 * 4 <= 32 * 2 ** 20  # (float32 bytes of a loss tensor)
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0)).ask()
    sampled = suggestParams(trial, config.space)
    assert isinstance(sampled["n_quantiles"], int) and 5 <= sampled["n_quantiles"] <= 180
    # the trial's train command (learning_starts above the budget: no update) builds the policy with that value
    params = {**search_study.trialParams(sampled, config)[0], "learning_starts": 1000}
    command = TrialObjective(config).trainCommand(str(tmp_path / "runs"), 0, params)
    run_dir = trainHere(*command[3:])
    model = algo_class.load(os.path.join(run_dir, "qrdqn_model.zip")).model
    assert model.policy.n_quantiles == model.policy_kwargs["n_quantiles"] == sampled["n_quantiles"]
    with open(os.path.join(run_dir, "hyperparams.yaml")) as handle:
        assert yaml.safe_load(handle)["n_quantiles"] == sampled["n_quantiles"]
