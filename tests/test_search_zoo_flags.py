"""rl_zoo3's spellings given to the sweeps (hyperparam_search, pipeline) are refused naming the toolbox's equivalent,
as train refuses them: one line, exit 2, nothing written."""
from __future__ import annotations

import pytest
from conftest import runModule

pytest.importorskip("optuna")

from rl_baselines.sweeps import hyperparam_search, pipeline  # noqa: E402
from rl_baselines.sweeps.sweep import unknownTrainFlags  # noqa: E402
from srl_toolbox.cli import UsageError  # noqa: E402

SEARCH = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]


@pytest.mark.parametrize("argv, message", [
    # rl_zoo3's own command for a search, as its docs give it
    (["-n", "5000", "-optimize", "--n-trials", "10", "--n-jobs", "2", "--sampler", "tpe", "--pruner", "median"],
     "unrecognized arguments: -n 5000 -optimize --n-jobs 2 --sampler tpe (rl_zoo3's -n/--n-timesteps is "
     "--num-timesteps here; rl_zoo3's -optimize/--optimize-hyperparameters: not needed: this command is the search; "
     "rl_zoo3's --n-jobs is --workers here; rl_zoo3's --sampler is --optimizer here)"),
    (["--optimization-log-path", "opt", "--no-optim-plots", "--max-total-trials", "4"],
     "unrecognized arguments: --optimization-log-path opt --no-optim-plots --max-total-trials 4 (rl_zoo3's "
     "--optimization-log-path: not needed: trials.csv and search.png are written beside the trial folders, in "
     "<log-dir>/hyperparam_search/<study>/; rl_zoo3's --no-optim-plots: not needed: the search shows no plot (it "
     "writes search.png); rl_zoo3's --max-total-trials: not offered: --n-trials adds that many trials to the study "
     "each time)"),
    # a flag of neither tool beside one of rl_zoo3's: both said
    (["--sampler=tpe", "--nonsense"], "unrecognized arguments: --sampler=tpe --nonsense (neither hyperparam_search's "
                                      "flags nor train's; rl_zoo3's --sampler is --optimizer here)"),
    (["--algo", "ppo"], "unknown --algo 'ppo' (rl_zoo3's ppo is ppo2 here); valid choices: a2c, "),
])
def test_rl_zoo_search_flags_are_named_with_their_equivalent(tmp_path, argv, message) -> None:
    log_dir = tmp_path / "logs"
    with pytest.raises(UsageError) as refusal:
        hyperparam_search.main([*SEARCH, "--log-dir", str(log_dir), *argv])
    assert str(refusal.value).startswith(message) and "\n" not in str(refusal.value)
    assert not log_dir.exists()


def test_a_sweep_names_rl_zoo_train_flags_as_train_does() -> None:
    """train's hints for rl_zoo3's flags were lost when a sweep forwarded them: `-n 64` said only that neither the
    sweep nor train took it."""
    assert unknownTrainFlags(["ppo2"], ["-n", "64", "--save-freq", "8"]) == (
        "unrecognized arguments: -n 64 --save-freq 8 (rl_zoo3's -n/--n-timesteps is --num-timesteps here; rl_zoo3's "
        "--save-freq is --checkpoint-freq here)")


def test_the_command_refuses_rl_zoo_flags_in_one_line(tmp_path) -> None:
    result = runModule("rl_baselines.hyperparam_search", *SEARCH, "--log-dir", str(tmp_path / "logs"),
                       "--n-jobs", "2", cwd=str(tmp_path))
    assert result.returncode == 2
    assert result.stderr == ("error: unrecognized arguments: --n-jobs 2 (rl_zoo3's --n-jobs is --workers here)\n")
    assert not (tmp_path / "logs").exists()


def test_a_sweep_names_the_rl_zoo_algorithm_it_was_given(tmp_path) -> None:
    log_dir = tmp_path / "logs"
    with pytest.raises(UsageError) as refusal:
        pipeline.main(["--algo", "ppo", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                       "--log-dir", str(log_dir)])
    assert str(refusal.value).startswith(
        "1 bad combination (algo x env x srl-model): ppo x MobileRobotGymEnv-v0 x ground_truth (unknown --algo 'ppo' "
        "(rl_zoo3's ppo is ppo2 here); valid choices: a2c, ")
    assert not log_dir.exists()
