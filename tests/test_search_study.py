"""hyperparam_search's study record under concurrency: two commands that start one SQLite study at the same time for
different settings cannot both record theirs (the second is refused, as it would be one after the other); and the
summary of a study none of whose trials completed."""
from __future__ import annotations

import dataclasses
import threading

import pytest

from rl_baselines.sweeps import hyperparam_search, search_study
from rl_baselines.sweeps.search_study import STUDY_RECORD, SearchConfig, createStudy
from rl_baselines.sweeps.search_trials import TrialProgress
from srl_toolbox.cli import UsageError

optuna = pytest.importorskip("optuna")


def searchConfig(storage_url: str, seed: int) -> SearchConfig:
    return SearchConfig(algo="ppo2", env="CartPole-v1", srl_model="raw_pixels", seed=seed, num_timesteps=1000,
                        optimizer="random", pruner="none", storage_url=storage_url, study_name="race",
                        output_dir="unused", train_argv=[], fixed={}, space={}, eval_episodes=1, n_evaluations=1,
                        n_startup_trials=1, grid_points=1, search_id="unused")


def test_two_commands_starting_one_study_at_once_cannot_both_record(tmp_path, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path / 'search.db'}"
    first, second = searchConfig(url, seed=0), searchConfig(url, seed=1)
    # The first command stops just before it records its setting (it found none), until the second has had its turn.
    first_paused, go_on = threading.Event(), threading.Event()
    record = optuna.study.Study.set_user_attr

    def slowFirstRecord(study, key, value) -> None:
        if value.get("seed") == 0:
            first_paused.set()
            go_on.wait(timeout=10)
        record(study, key, value)

    monkeypatch.setattr(optuna.study.Study, "set_user_attr", slowFirstRecord)
    outcomes: dict[int, str] = {}

    def start(config: SearchConfig) -> None:
        try:
            createStudy(config)
            outcomes[config.seed] = "created"
        except UsageError as error:
            outcomes[config.seed] = str(error)

    threads = [threading.Thread(target=start, args=(first,))]
    threads[0].start()
    assert first_paused.wait(timeout=60)
    threads.append(threading.Thread(target=start, args=(second,)))
    threads[1].start()
    threads[1].join(timeout=2)  # unlocked, the second would find no record and write its own meanwhile
    go_on.set()
    for thread in threads:
        thread.join(timeout=60)
    assert outcomes[0] == "created"
    assert "was made for seed 0 (asked 1)" in outcomes[1]
    study = optuna.load_study(study_name="race", storage=url)
    assert study.user_attrs[STUDY_RECORD]["seed"] == 0


def test_the_record_is_the_configs_settings(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'search.db'}"
    config = searchConfig(url, seed=3)
    createStudy(config)
    recorded = optuna.load_study(study_name="race", storage=url).user_attrs[STUDY_RECORD]
    assert recorded == {key: getattr(config, key) for key in search_study.STUDY_KEYS}
    with pytest.raises(UsageError, match="was made for seed 3 \\(asked 4\\)"):
        createStudy(dataclasses.replace(config, seed=4))


def test_a_study_whose_every_trial_failed_prints_the_error_and_where_the_others_are(tmp_path, capsys) -> None:
    """It said only "see the trials' train.log", whose last line did not give the reason (trials.csv did)."""
    config = dataclasses.replace(searchConfig("sqlite://", seed=0), output_dir=str(tmp_path))
    study = optuna.create_study(direction="maximize")
    for error in ("ppo2 exited with 1", "no episode finished within 100 steps; raise --num-timesteps"):
        study.add_trial(optuna.trial.create_trial(state=optuna.trial.TrialState.FAIL, user_attrs={"error": error}))
    code = hyperparam_search._finish(study, config, None, TrialProgress(2, enabled=False), 0, False)
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip() == ("No completed trial, so no best hyperparameters (the last trial's error: no episode "
                           "finished within 100 steps; raise --num-timesteps); each trial's error is in "
                           f"{tmp_path / 'trials.csv'}, its output in its train.log")
    assert "raise --num-timesteps" in (tmp_path / "trials.csv").read_text()
