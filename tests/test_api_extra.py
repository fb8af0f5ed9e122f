"""The Python API's ``extra`` command-line strings (read as the command reads them), its refusals of a
RunConfig where a trained run is wanted, and loadRun's hints naming its own keywords."""
from __future__ import annotations

import os
import shutil

import pytest

from rl_baselines import api

GT = {"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth"}


def test_extras_algo_reads_the_other_flags_with_that_algorithms_parser(tmp_path) -> None:
    log_dir = str(tmp_path / "logs")
    # a command line pasted into extra: sac's flags are sac's (they were read by ppo2's parser: --buffer-size was
    # unrecognized, --ent-coef auto refused as ppo2's float, and ppo2's --n-steps taken for a sac run)
    pasted = api.makeConfig(log_dir=log_dir, **GT, extra=["--algo", "sac", "-c", "--buffer-size", "1000", "--ent-coef",
                                                          "auto"])
    assert pasted.args.algo == "sac"
    assert (pasted.args.extra["hp_buffer_size"], pasted.args.extra["hp_ent_coef"]) == (1000, "auto")
    assert "hp_n_steps" not in pasted.args.extra
    assert api.makeConfig(log_dir=log_dir, **GT, extra=["--algo=sac", "-c", "--buffer-size", "1000"]).args.algo == "sac"
    with pytest.raises(api.UsageError, match=r"^unrecognized arguments: --n-steps 64"):
        api.makeConfig(log_dir=log_dir, **GT, extra=["--algo", "sac", "-c", "--n-steps", "64"])
    # over the keyword, as any flag of extra: the config is of the algorithm whose parser read the flags
    over = api.makeConfig(log_dir=log_dir, algo="ppo2", **GT, extra=["--algo", "a2c"])
    assert over.args.algo == "a2c" and "augment_loss" not in over.args.extra  # (ppo2's own flag)
    assert "--algo a2c" in over.command
    with pytest.raises(api.UsageError, match=r"^unknown --algo 'ppo3'"):
        api.makeConfig(log_dir=log_dir, **GT, extra=["--algo", "ppo3"])
    assert not os.path.exists(log_dir)


@pytest.mark.parametrize("asked", [["--help"], ["-h"], ["--version"], ["--num-timesteps", "64", "--help"]])
def test_help_or_version_in_extra_is_a_usage_error_not_an_exit(tmp_path, capsys, asked) -> None:
    log_dir = str(tmp_path / "logs")
    for call in (lambda: api.makeConfig(log_dir=log_dir, algo="sac", **GT, extra=asked),
                 lambda: api.makeConfig(resume=log_dir, extra=asked)):
        with pytest.raises(api.UsageError, match=r"^extra's -h/--help/--version: .* python -m rl_baselines\.train "
                                                 r"--algo (sac|ppo2) --help lists the flags"):
            call()
    assert capsys.readouterr().out == ""  # the help was not printed either
    assert not os.path.exists(log_dir)


def test_a_run_config_where_a_trained_run_is_wanted_is_named_not_printed(tmp_path) -> None:
    config = api.makeConfig(log_dir=str(tmp_path / "logs"), algo="ppo2", **GT)
    for call, name in [(lambda: api.loadRun(config), "run_dir"), (lambda: api.evaluateAgent(config), "run"),
                       (lambda: api.makeConfig(resume=config), "resume")]:
        with pytest.raises(api.UsageError) as error:
            call()
        message = str(error.value)
        assert message.startswith(f"{name} is a RunConfig (makeConfig's: nothing trained yet); {name} takes ")
        assert "train it first, result = trainAgent(config)" in message and "TrainConfig(" not in message
    assert not (tmp_path / "logs").exists()


def test_load_run_without_the_model_asked_for_names_the_which_keyword(tmp_path) -> None:
    # its way out was enjoy_baselines' flag, "--model latest plays the last saved model", which loadRun does not take
    run_dir = api.trainAgent(algo="ppo2", **GT, num_timesteps=64, log_dir=str(tmp_path), checkpoint_freq=-1,
                             hyperparams={"n_steps": 64}).run_dir
    with pytest.raises(api.UsageError, match=r"^run_dir '.*' holds no best model \(.*\); a run saves one .*; "
                                             r"which=\"latest\" loads the last saved model$"):
        api.loadRun(run_dir, which="best")
    os.makedirs(os.path.join(run_dir, "best"))
    shutil.move(os.path.join(run_dir, "ppo2_model.zip"), os.path.join(run_dir, "best", "ppo2_model.zip"))
    with pytest.raises(api.UsageError, match=r"^run_dir '.*' holds no latest model \(.*\); the run has saved none "
                                             r"yet .*, and its best model from an evaluation is there: .* "
                                             r"\(which=\"best\"\)$"):
        api.loadRun(run_dir)
