"""Hyperparameter search's refusals: bad flags, storages and algorithms, train flags the search sets for each trial,
a missing Optuna or database driver; each one line, exit 2, nothing written. The searches themselves:
tests/test_hyperparam_search.py."""
from __future__ import annotations

import os
import re
import sys

import pytest
from conftest import runModule

optuna = pytest.importorskip("optuna")

from rl_baselines.core import registry  # noqa: E402
from rl_baselines.core.registry import registered_rl  # noqa: E402
from rl_baselines.sweeps import hyperparam_search  # noqa: E402
from rl_baselines.sweeps.search_study import INSTALL_HINT  # noqa: E402
from srl_toolbox.cli import UsageError  # noqa: E402

ENV = "MobileRobotGymEnv-v0"


@pytest.mark.parametrize("argv, message", [
    (["--algo", "nope"], "unknown --algo 'nope'; valid choices: "),
    (["--optimizer", "hyperband"], "invalid choice: 'hyperband'"),
    (["--pruner", "asha"], "invalid choice: 'asha'"),
    (["--algo", "random_agent"], "--algo random_agent has no search space"),
    (["--n-trials", "0"], "must be a positive integer"),
    (["--n-startup-trials", "-1"], "argument --n-startup-trials: '-1' must be a non-negative integer"),
    (["--n-startup-trials", "1.5"], "argument --n-startup-trials: '1.5' must be a non-negative integer"),
    (["--env", "NoEnv-v0"], "unknown --env 'NoEnv-v0'"),
    (["--n-trial", "3"], "unrecognized arguments: --n-trial 3 (neither hyperparam_search's flags nor train's; did you "
                         "mean --n-trials?)"),
    (["--study-name", "a/b"], "--study-name 'a/b'"),
    (["--study-name", ".."], "--study-name '..': use letters, digits, '.', '_' and '-' only, starting with a letter or "
                             "digit"),
    (["--storage", "not a url"], "--storage 'not a url' is not a database URL"),
    (["--storage", "sqlite:////nonexistent_srl_toolbox_dir/x.db"], "the folder /nonexistent_srl_toolbox_dir does not exist"),
    (["--storage", "foo://x"], "--storage 'foo://x': unknown database 'foo'; valid choices: sqlite:///PATH, "
                               "postgresql://USER:PASSWORD@HOST/DB"),
    (["--algo-args", "a2c:--n-steps=5"], "'a2c' is not an algorithm of this command; valid choices: ppo2"),
    (["--algo-args", "ppo2:--bogus=1"], "train flags: unrecognized arguments: --bogus=1"),
    (["--hyperparam", "n_steps:64", "batch_size:64", "n_epochs:2", "learning_rate:0.001", "gamma:0.99",
      "gae_lambda:0.9", "clip_range:0.2", "ent_coef:0.01", "vf_coef:0.5", "max_grad_norm:0.5"], "nothing to search"),
    (["--num-timesteps", "1000", "--eval-freq", "5000"], "--eval-freq 5000 is more than --num-timesteps 1000"),
])
def test_bad_inputs(tmp_path, argv, message):
    log_dir = tmp_path / "logs"
    with pytest.raises(UsageError, match=re.escape(message)):
        hyperparam_search.main(["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--log-dir",
                                str(log_dir), *argv])
    assert not log_dir.exists()


def test_a_storage_whose_driver_is_missing_is_named(tmp_path, monkeypatch):
    """A server database's URL without its driver module said only "Failed to import DB access module": the line
    names the module, before anything is written."""
    monkeypatch.setitem(sys.modules, "psycopg2", None)  # as if it were not installed
    log_dir = tmp_path / "logs"
    with pytest.raises(UsageError, match=re.escape("--storage 'postgresql+psycopg2://u:p@127.0.0.1:1/db': the driver "
                                                   "of postgresql+psycopg2 is not installed (")):
        hyperparam_search.main(["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--log-dir",
                                str(log_dir), "--storage", "postgresql+psycopg2://u:p@127.0.0.1:1/db"])
    assert not log_dir.exists()


@pytest.mark.parametrize("algo, flags, named, instead", [
    ("ppo2", ["--algo-args", "ppo2:--seed=7"], "--seed", "use hyperparam_search's own --seed"),
    ("ppo2", ["--algo-args", "ppo2:--seed 7"], "--seed", "use hyperparam_search's own --seed"),
    ("ppo2", ["--se", "7"], "--se (--seed)", "use hyperparam_search's own --seed"),
    ("ppo2", ["--num-time", "500"], "--num-time (--num-timesteps)", "use hyperparam_search's own --num-timesteps"),
    ("ppo2", ["--algo-args", "ppo2:--num-timesteps=500"], "--num-timesteps",
     "use hyperparam_search's own --num-timesteps"),
    ("ppo2", ["--algo-args", f"ppo2:--env={ENV}"], "--env", "use hyperparam_search's own --env"),
    ("ppo2", ["--al", "a2c"], "--al (--algo)", "use hyperparam_search's own --algo"),
    ("ppo2", ["--algo-args", "ppo2:--srl-model raw_pixels"], "--srl-model", "use hyperparam_search's own --srl-model"),
    ("ppo2", ["--eval-freq", "100", "--eval-ep", "3"], "--eval-ep (--eval-episodes)",
     "use hyperparam_search's own --eval-episodes"),
    ("ppo2", ["--log-d", "elsewhere"], "--log-d (--log-dir)", "use hyperparam_search's own --log-dir"),
    ("ppo2", ["--algo-args", "ppo2:--log-dir=elsewhere"], "--log-dir", "use hyperparam_search's own --log-dir"),
    ("ppo2", ["--tag", "mine"], "--tag", "each trial's is trial<N>"),
    ("a2c", ["--ta", "mine"], "--ta (--tag)", "each trial's is trial<N>"),
    ("ppo2", ["--run-folder", "elsewhere"], "--run-folder", "each trial's is <log-dir>/hyperparam_search/"),
    ("ppo2", ["--algo-args", "ppo2:--resume=elsewhere"], "--resume", "run the search again"),
    ("ppo2", ["--resume"], "--resume", "run the search again"),
    ("ppo2", ["--algo-args", "ppo2:--tag"], "--tag", "each trial's is trial<N>"),
])
def test_a_train_flag_cannot_set_what_the_search_sets_for_each_trial(tmp_path, monkeypatch, algo, flags, named,
                                                                      instead):
    """The search's own --algo/--env/--srl-model/--seed/--num-timesteps (and --eval-episodes, --log-dir, --tag) came
    after the forwarded train flags in each trial's command, and train keeps the last: ``--algo-args ppo2:--seed=7``,
    or a spelling the search's parser does not claim (``--se 7``), was silently ignored. Refused, naming the flag."""
    monkeypatch.chdir(tmp_path)
    log_dir = tmp_path / "logs"
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        ["--algo", algo, "--env", ENV, "--srl-model", "ground_truth", "--log-dir", str(log_dir), *flags])
    with pytest.raises(UsageError) as error:
        hyperparam_search.prepare(vars(args), train_argv)
    assert str(error.value).startswith(f"{named} cannot be a train flag (in --algo-args or passed on to train): "
                                       f"hyperparam_search sets it for each trial; {instead}"), str(error.value)
    assert not log_dir.exists() and not (tmp_path / "elsewhere").exists()


def test_a_forwarded_seed_is_one_line_exit_2_writing_nothing(tmp_path):
    log_dir = tmp_path / "logs"
    result = runModule("rl_baselines.hyperparam_search", "--env", ENV, "--srl-model", "ground_truth", "--log-dir",
                       log_dir, "--n-trials", "1", "--num-timesteps", "64", "--algo-args", "ppo2:--seed=7")
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "--seed cannot be a train flag" in result.stderr and "hyperparam_search's own --seed" in result.stderr
    assert not log_dir.exists()


def test_a_bare_resume_is_refused_as_the_searchs_not_as_a_flag_missing_its_value(tmp_path):
    """It got argparse's "argument --resume: expected one argument", which asks for a value that is then refused."""
    log_dir = tmp_path / "logs"
    result = runModule("rl_baselines.hyperparam_search", "--env", ENV, "--srl-model", "ground_truth", "--log-dir",
                       log_dir, "--n-trials", "1", "--num-timesteps", "64", "--resume")
    assert result.returncode == 2 and result.stderr == (
        "error: --resume cannot be a train flag (in --algo-args or passed on to train): hyperparam_search sets it for "
        "each trial; run the search again to add trials to its study\n"), result.stderr
    assert not log_dir.exists()


def test_a_refusal_prints_its_error_alone_and_an_accepted_search_its_warnings_once(tmp_path):
    """--fpv on a ground-truth state does nothing (a warning of train's checks): a search then refused, by its own
    checks or by its storage, prints its one-line error alone; one accepted shows the warning, once."""
    (tmp_path / "notes.txt").write_text("not a database\n")
    base = ["--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "--hyperparam", "n_steps:64", "--num-cpu",
            "1", "--checkpoint-freq", "-1", "--no-progress", "--num-timesteps", "128", "--fpv", "--n-trials", "1",
            "--log-dir", tmp_path / "logs"]
    for refused, named in ((["--n-evaluations", "1000"], "--n-evaluations"),
                           (["--storage", f"sqlite:///{tmp_path}/notes.txt"], "--storage")):
        result = runModule("rl_baselines.hyperparam_search", *base, *refused)
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"error: {named}"), result.stderr
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]
    result = runModule("rl_baselines.hyperparam_search", *base)
    shown = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert [line.split()[1] for line in shown] == ["--fpv"], result.stderr


def test_an_unknown_algo_lists_the_algorithms_with_a_search_space(tmp_path, monkeypatch):
    searchable = [name for name, (cls, _, _) in registered_rl.items() if cls.getOptParam()]
    assert "random_agent" in registered_rl and "random_agent" not in searchable  # (it has none)
    monkeypatch.setitem(registry.failed_plugins, "broken_import", "broken_import: ImportError")
    with pytest.raises(UsageError) as error:
        hyperparam_search.main(["--algo", "nope", "--srl-model", "ground_truth", "--log-dir", str(tmp_path / "logs")])
    assert str(error.value) == (f"unknown --algo 'nope'; valid choices: {', '.join(searchable)}; plugins that failed "
                                f"to load: broken_import")
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize("algo, flags, kind", [("deepq", ["-c"], "CONTINUOUS"), ("sac", [], "DISCRETE")])
def test_an_action_type_refusal_lists_the_algorithms_with_a_search_space(tmp_path, algo, flags, kind):
    """It listed every algorithm with the action type, random_agent among them, which this command refuses."""
    supporting = [name for name, (cls, _, actions) in registered_rl.items()
                  if cls.getOptParam() and registry.ActionType[kind] in actions]
    with pytest.raises(UsageError) as error:
        hyperparam_search.main(["--algo", algo, *flags, "--env", ENV, "--srl-model", "ground_truth", "--log-dir",
                                str(tmp_path / "logs")])
    assert str(error.value).endswith(f"algorithms that do: {', '.join(supporting)}"), error.value
    assert "random_agent" not in str(error.value) and not (tmp_path / "logs").exists()


def test_a_storage_that_is_not_a_database_is_refused_leaving_nothing_beside_it(tmp_path):
    (tmp_path / "notes.txt").write_text("not a database\n")
    with pytest.raises(UsageError, match="--storage"):
        hyperparam_search.main(["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--log-dir",
                                str(tmp_path / "logs"), "--storage", f"sqlite:///{tmp_path}/notes.txt"])
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]  # no notes.txt.lock, no logs


def test_without_optuna_one_line_exit_2(tmp_path):
    (tmp_path / "optuna").mkdir()
    (tmp_path / "optuna" / "__init__.py").write_text("raise ImportError('No module named optuna')\n")
    result = runModule("rl_baselines.hyperparam_search", "--log-dir", tmp_path / "logs",
                       env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: hyperparam_search needs Optuna, which is not installed: {INSTALL_HINT}"]
    assert not (tmp_path / "logs").exists()
