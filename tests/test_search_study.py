"""hyperparam_search's study record: under concurrency, two commands that start one SQLite study at the same time for
different settings cannot both record theirs (the second is refused, as it would be one after the other); a study
continued for another setting is refused, one made by an older version continues; and the summary of a study none of
whose trials completed."""
from __future__ import annotations

import csv
import dataclasses
import json
import re
import shlex
import threading
import warnings

import pytest
from conftest import snapshot

from rl_baselines.sweeps import hyperparam_search, search_outputs, search_record, search_study, search_trials
from rl_baselines.sweeps.search_outputs import repeatCommand, writeBestParams
from rl_baselines.sweeps.search_record import STUDY_RECORD, STUDY_SEARCH, STUDY_SPACE, createStudy, spaceRecord
from rl_baselines.sweeps.search_study import SearchConfig
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
    assert "was made for --seed 0 (asked 1)" in outcomes[1]
    study = optuna.load_study(study_name="race", storage=url)
    assert study.user_attrs[STUDY_RECORD]["seed"] == 0


def test_the_record_is_the_configs_settings(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'search.db'}"
    config = searchConfig(url, seed=3)
    createStudy(config)
    recorded = optuna.load_study(study_name="race", storage=url).user_attrs[STUDY_RECORD]
    assert recorded == {key: getattr(config, key) for key in search_record.STUDY_KEYS}
    with pytest.raises(UsageError, match="was made for --seed 3 \\(asked 4\\)"):
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


def _pruneEveryTrial(monkeypatch) -> None:
    """Each trial of an in-process search is pruned as it starts, without training (a study's bookkeeping only)."""
    def prune(self, trial):
        trial.set_user_attr("search_id", self.config.search_id)
        raise optuna.TrialPruned()

    monkeypatch.setattr(search_trials.TrialObjective, "__call__", prune)


def test_a_study_continued_with_other_train_flags_or_seed_is_refused(tmp_path, monkeypatch):
    """The forwarded train flags and the seed are part of the setting a study records: continuing it with others
    mixed the trials of two tasks (and printed this command's flags as the best trial's). The flags count as the
    settings train gives them, less those that change no result: the same task spelled or ordered otherwise, or on
    another --device (another machine on a shared study), continues. The refusal names each setting by its flag, as
    typed (it said `train setting hp_gamma None (asked 0.95)` for `--gamma 0.95`), and an unset one as "not set"."""
    _pruneEveryTrial(monkeypatch)
    base = ["--algo", "ppo2", "--env", "MobileRobot1DGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps",
            "300", "--n-trials", "1", "--no-progress", "--log-dir", str(tmp_path), "--study-name", "s"]
    made = ["--num-cpu", "2", "-c", "--device", "cpu", "--hyperparam", "gamma:0.99"]
    assert hyperparam_search.main([*base, *made]) == 1  # (its one trial pruned)
    for same in (["--device", "cpu", "-c", "--hyperparam", "gamma:0.990", "--num-cpu=2"],
                 ["--continuous-actions", "--hyperparam", "gamma:0.99", "--num-cpu", "2"],
                 ["-c", "--device", "auto", "--torch-threads", "1", "--port", "8099", "--num-cpu", "2",
                  "--hyperparam", "gamma:0.99"]):
        assert hyperparam_search.main([*base, *same]) == 1, same  # the same setting continues
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path}/hyperparam_search/s.db")
    record = study.user_attrs["setting"]  # one attribute
    assert record["seed"] == 0 and record["train_settings"]["continuous_actions"] is True
    before = snapshot(str(tmp_path))
    for extra, message in (
            (["--num-cpu", "2", "--device", "cpu", "--hyperparam", "gamma:0.99"],
             "--continuous-actions True (asked False)"),
            (["--num-cpu=3", "-c", "--hyperparam", "gamma:0.9"],
             "--hyperparam/--hyperparam-file gamma:0.99 (asked gamma:0.9), --num-cpu 2 (asked 3)"),
            ([*made, "--seed", "1"], "--seed 0 (asked 1)"),
            ([*made, "--gamma", "0.95"], "--gamma not set (asked 0.95)")):
        with pytest.raises(UsageError, match=re.escape(f"study 's' in sqlite:///{tmp_path}/hyperparam_search/s.db "
                                                       f"was made for {message}; choose another --study-name")):
            hyperparam_search.main([*base, *extra])
        assert snapshot(str(tmp_path)) == before  # nothing written
    assert hyperparam_search.main([*base, *made]) == 1


def test_a_study_made_before_the_train_flags_were_recorded_continues(tmp_path, monkeypatch):
    _pruneEveryTrial(monkeypatch)
    url = f"sqlite:///{tmp_path / 'old.db'}"
    old = optuna.create_study(storage=url, study_name="old", direction="maximize")
    for key, value in (("algo", "ppo2"), ("env", "MobileRobot1DGymEnv-v0"), ("srl_model", "ground_truth"),
                       ("num_timesteps", 300), ("eval_episodes", 10)):
        old.set_user_attr(key, value)
    base = ["--algo", "ppo2", "--env", "MobileRobot1DGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps",
            "300", "--n-trials", "1", "--no-progress", "--log-dir", str(tmp_path), "--storage", url, "--study-name",
            "old"]
    with pytest.raises(UsageError, match=re.escape("was made for --num-timesteps 300 (asked 301)")):
        hyperparam_search.main([*base[:7], "301", *base[8:]])  # the keys it recorded are checked
    assert hyperparam_search.main([*base, "-c"]) == 1  # unknown flags and seed: accepted, and recorded from now on
    record = optuna.load_study(study_name="old", storage=url).user_attrs["setting"]
    assert record["train_settings"]["continuous_actions"] is True
    with pytest.raises(UsageError, match=re.escape("--continuous-actions True (asked False)")):
        hyperparam_search.main(base)


def test_an_augmented_ppo2_study_made_before_augment_loss_holds_rad_trials(tmp_path, monkeypatch):
    """A study records no setting for a train flag added since it was made, which was accepted whatever it asked: a
    ppo2 study of --augment shift made before --augment-loss (its trials RAD's) continued with DrAC's trials by the
    same command. The record reads as args.json's upgrade rules read such a run."""
    _pruneEveryTrial(monkeypatch)
    base = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels", "--num-timesteps", "300",
            "--n-trials", "1", "--no-progress", "--log-dir", str(tmp_path), "--study-name", "s", "--img-shape", "3",
            "40", "40", "--augment", "shift", "--clip-range-vf", "0.2"]
    assert hyperparam_search.main([*base, "--augment-loss", "rad"]) == 1  # (its one trial pruned)
    url = f"sqlite:///{tmp_path}/hyperparam_search/s.db"
    study = optuna.load_study(study_name="s", storage=url)
    record = study.user_attrs[STUDY_RECORD]
    assert record["train_settings"].pop("augment_loss") == "rad"  # as a study made before the flag recorded it
    study.set_user_attr(STUDY_RECORD, record)
    before = snapshot(str(tmp_path))
    for extra in ([], ["--augment-loss", "drac"]):
        with pytest.raises(UsageError, match=re.escape("was made for --augment-loss 'rad' (asked 'drac'); choose")):
            hyperparam_search.main([*base, *extra])
        assert snapshot(str(tmp_path)) == before  # nothing written
    assert hyperparam_search.main([*base, "--augment-loss", "rad"]) == 1  # RAD's trials go on
    base[base.index("shift")] = "none"  # a study of the images as rendered: augment_loss does nothing, never counts
    base[base.index("s", base.index("--study-name"))] = "plain"
    assert hyperparam_search.main(base) == 1
    study = optuna.load_study(study_name="plain", storage=url.replace("s.db", "plain.db"))
    assert "augment_loss" not in study.user_attrs[STUDY_RECORD]["train_settings"]
    with pytest.warns(UserWarning, match="it does nothing without --augment"):
        assert hyperparam_search.main([*base, "--augment-loss", "rad"]) == 1


SPACE = {"gamma": (float, (0.9, 0.99)), "n_steps": (int, (16, 64), "log"), "ent_coef": (list, [0.0, 0.01])}


def _createQuietly(config: SearchConfig) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning
        createStudy(config)


def test_a_study_continued_over_another_search_space_warns_once_naming_what_differs(tmp_path) -> None:
    """A study did not record its search space: after an upgrade that changed it (gradient_steps then followed
    train_freq) an old study mixed the trials of both spaces silently. It records the space of its first command, and
    a command over another one continues it (the earlier trials stand) with one warning naming what differs."""
    url = f"sqlite:///{tmp_path / 'search.db'}"
    config = dataclasses.replace(searchConfig(url, seed=0), space=SPACE)
    _createQuietly(config)
    study = optuna.load_study(study_name="race", storage=url)
    recorded = study.user_attrs[STUDY_SPACE]
    assert recorded == spaceRecord(config) == json.loads(json.dumps(recorded))  # JSON values
    assert recorded["n_steps"] == {"name": "IntDistribution", "attributes": {"log": True, "step": 1, "low": 16,
                                                                            "high": 64}}
    trial = study.ask()  # a trial of the space, sampled as a search samples it
    study.tell(trial, float(sum(search_study.suggestParams(trial, config.space).values())))
    _createQuietly(dataclasses.replace(config, space=dict(reversed(SPACE.items()))))  # the same space continues
    other = dataclasses.replace(config, space={**{k: v for k, v in SPACE.items() if k != "ent_coef"},
                                               "gamma": (float, (0.9, 0.999)), "batch_size": (int, (8, 32))},
                                subsample_steps=[1])
    for _ in range(2):  # (each command over another space is told: the study mixes its trials)
        with pytest.warns(UserWarning) as caught:
            createStudy(other)
        assert [str(warning.message) for warning in caught] == [
            f"study 'race' in {url} was searched over another space: batch_size (not searched, now 8..32 (int)); "
            "ent_coef (one of 0.0, 0.01, now not searched); gamma (0.9..0.99 (float), now 0.9..0.999 (float)); "
            "gradient_steps (not searched, now train_freq); its 1 earlier trials are kept and its new ones sample "
            "this one (choose another --study-name to keep them apart)"]
    assert optuna.load_study(study_name="race", storage=url).user_attrs[STUDY_SPACE] == recorded  # the first space


def test_a_study_that_did_not_record_its_space_is_compared_with_its_trials(tmp_path) -> None:
    """A study of a version that recorded no space: the space its trials sampled stands for it (none: no trial, no
    warning), and is recorded."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    config = dataclasses.replace(searchConfig(url, seed=0), space=SPACE)
    old = optuna.create_study(storage=url, study_name="race", direction="maximize")
    _createQuietly(config)  # no trial: nothing to compare; this command's space is recorded
    assert old.user_attrs[STUDY_SPACE] == spaceRecord(config)
    url = f"sqlite:///{tmp_path / 'older.db'}"
    config = dataclasses.replace(config, storage_url=url)
    older = optuna.create_study(storage=url, study_name="race", direction="maximize")
    int_range = optuna.distributions.IntDistribution
    older.add_trial(optuna.trial.create_trial(  # gradient_steps sampled by itself, as before it followed train_freq
        params={"train_freq": 2, "gradient_steps": 16}, value=1.0,
        distributions={"train_freq": int_range(1, 16), "gradient_steps": int_range(1, 16)}))
    tied = dataclasses.replace(config, space={"train_freq": (int, (1, 16))}, subsample_steps=[1])
    with pytest.warns(UserWarning, match=r"was searched over another space: gradient_steps \(1\.\.16 \(int\), now "
                                         r"train_freq\); its 1 earlier trials are kept"):
        createStudy(tied)
    assert older.user_attrs[STUDY_SPACE]["gradient_steps"]["name"] == "IntDistribution"  # its trials' space
    _createQuietly(dataclasses.replace(tied, space={"train_freq": (int, (1, 16)), "gradient_steps": (int, (1, 16))},
                                       subsample_steps=None))  # the space of its trials: nothing to say


@pytest.mark.parametrize("spelling", [["--hyperparam-file", "PINNED"], ["--hyperparam-f=PINNED"]])
def test_the_repeat_command_names_best_hyperparams_yaml_only(tmp_path, spelling) -> None:
    """A forwarded --hyperparam-file, in any spelling train accepts, was repeated before best_hyperparams.yaml, where
    train ignores it (it keeps the last one): the command names the YAML alone, which holds the file's values."""
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text("gamma: 0.95\n")
    argv = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps",
            "1000", "-c", *(word.replace("PINNED", str(pinned)) for word in spelling), "--log-dir", str(tmp_path)]
    args, train_argv = hyperparam_search.searchParser().parse_known_args(argv)
    config, algo_class = hyperparam_search.prepare(vars(args), train_argv)
    study = optuna.create_study(direction="maximize")
    trial = study.ask()
    trial.set_user_attr("fixed_hyperparams", config.fixed)
    trial.set_user_attr("train_flags", config.trialFlags)
    study.tell(trial, 1.0)
    best = str(tmp_path / "best_hyperparams.yaml")
    assert writeBestParams(best, study, config, algo_class)["gamma"] == 0.95
    command = shlex.split(repeatCommand(study.best_trial, config, best))
    assert [word for word in command if word.startswith("--hyperparam-f")] == ["--hyperparam-file"]
    assert command[-2:] == ["--hyperparam-file", best] and "-c" in command


def test_a_trial_left_running_by_a_killed_command_is_failed_when_a_trial_next_starts(tmp_path, monkeypatch) -> None:
    """A search killed mid-trial (SIGKILL, a lost machine) left that trial running in its study for ever: trials.csv
    said `running` and TPE's constant liar kept avoiding its point. Its heartbeat stops: the next trial fails it, and
    trials.csv says why."""
    monkeypatch.setattr(search_study, "HEARTBEAT_S", 1)
    monkeypatch.setattr(search_study, "HEARTBEAT_GRACE_S", 1)
    url = f"sqlite:///{tmp_path / 'study.db'}"
    killed = optuna.create_study(study_name="s", storage=search_study.openStorage(url))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (Optuna: a heartbeat is meant for optimize, which the command uses)
        orphan = killed.ask()
    killed._storage.record_heartbeat(orphan._trial_id)  # (as its command's heartbeat thread did, before the kill)
    threading.Event().wait(2.5)  # the grace period passes (SQLite's clock counts whole seconds)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (opening the storage warns nothing: Optuna's heartbeat is experimental)
        study = optuna.load_study(study_name="s", storage=search_study.openStorage(url))
    study.optimize(lambda trial: 1.0, n_trials=1)
    states = [trial.state.name for trial in study.get_trials()]
    assert states == ["FAIL", "COMPLETE"]
    csv_path = tmp_path / "trials.csv"
    search_outputs.writeTrialsCsv(str(csv_path), study)
    with open(csv_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["state"], row["error"]) for row in rows] == [("fail", search_study.STALE_TRIAL_ERROR),
                                                              ("complete", "")]


def test_a_storage_file_that_is_no_database_is_refused_in_the_commands_words(tmp_path) -> None:
    """A --storage file that is not SQLite's said `--storage sqlite:///...: (sqlite3.DatabaseError) file is not a
    database`: the URL is quoted as the other --storage refusals quote it, without SQLAlchemy's exception class."""
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n")
    log_dir = tmp_path / "logs"
    with pytest.raises(UsageError) as refusal:
        hyperparam_search.main(["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--log-dir",
                                str(log_dir), "--storage", f"sqlite:///{notes}"])
    assert str(refusal.value) == f"--storage 'sqlite:///{notes}': file is not a database"
    assert notes.read_text() == "not a database\n" and not log_dir.exists()


def test_a_study_continued_with_other_search_settings_warns_once_naming_each_flag(tmp_path, monkeypatch):
    """A study did not record the search's own settings: continuing it with another --pruner, --n-evaluations,
    --n-startup-trials or (a --study-name given) --optimizer silently mixed trials pruned under other rules or
    reported at other steps. It records those of its first command, and a command with others continues it (their
    completed trials are scored alike) with one warning naming each flag; what each command may choose for itself
    (--sampler-seed, --workers, --grid-points) says nothing."""
    _pruneEveryTrial(monkeypatch)
    base = ["--algo", "ppo2", "--env", "MobileRobot1DGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps",
            "300", "--n-trials", "1", "--no-progress", "--log-dir", str(tmp_path), "--study-name", "s"]
    made = ["--optimizer", "tpe", "--pruner", "median", "--n-evaluations", "5", "--n-startup-trials", "2"]
    assert hyperparam_search.main([*base, *made]) == 1  # (its one trial pruned)
    url = f"sqlite:///{tmp_path}/hyperparam_search/s.db"
    assert optuna.load_study(study_name="s", storage=url).user_attrs[STUDY_SEARCH] == {
        "optimizer": "tpe", "pruner": "median", "n_evaluations": 5, "n_startup_trials": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same search, on another machine or with more workers: no warning
        assert hyperparam_search.main([*base, *made, "--sampler-seed", "7", "--workers", "2",
                                       "--grid-points", "4"]) == 1
    with pytest.warns(UserWarning) as caught:
        assert hyperparam_search.main([*base, "--optimizer", "random", "--pruner", "hyperband", "--n-evaluations",
                                       "3", "--n-startup-trials", "2"]) == 1
    assert [str(warning.message) for warning in caught] == [
        f"study 's' in {url} was searched with other search settings: --optimizer 'tpe' (asked 'random'), --pruner "
        "'median' (asked 'hyperband'), --n-evaluations 5 (asked 3); its 2 earlier trials are kept and its new ones "
        "are sampled and pruned with these beside them (choose another --study-name to keep them apart)"]
    with pytest.warns(UserWarning, match=re.escape("other search settings: --n-startup-trials 2 (asked 5); its 3")):
        assert hyperparam_search.main([*base, *made[:-1], "5"]) == 1
    assert optuna.load_study(study_name="s", storage=url).user_attrs[STUDY_SEARCH]["pruner"] == "median"  # the first


def test_search_settings_a_command_does_not_use_are_not_compared_and_an_older_study_records_them(tmp_path) -> None:
    """--n-startup-trials acts only with TPE or the median pruner, --n-evaluations only without a forwarded
    --eval-freq (whose evaluations are reported instead): another value of either is then not worth a warning. A
    study of a version that recorded no search settings takes this command's, quietly."""
    url = f"sqlite:///{tmp_path / 'search.db'}"
    config = dataclasses.replace(searchConfig(url, seed=0), pruner="hyperband")  # random sampler
    _createQuietly(config)
    _createQuietly(dataclasses.replace(config, n_startup_trials=9))
    with pytest.warns(UserWarning, match=re.escape("--n-startup-trials 1 (asked 9)")):
        createStudy(dataclasses.replace(config, optimizer="tpe", n_startup_trials=9))
    url = f"sqlite:///{tmp_path / 'evaluated.db'}"
    evaluated = dataclasses.replace(config, storage_url=url, eval_freq=100)
    _createQuietly(evaluated)
    _createQuietly(dataclasses.replace(evaluated, n_evaluations=4))
    url = f"sqlite:///{tmp_path / 'old.db'}"
    old = dataclasses.replace(config, storage_url=url)
    _createQuietly(dataclasses.replace(old, pruner="median"))
    study = optuna.load_study(study_name="race", storage=url)
    study.set_user_attr(STUDY_SEARCH, None)  # (Optuna keeps a user attribute: None stands for none recorded)
    _createQuietly(old)
    assert optuna.load_study(study_name="race", storage=url).user_attrs[STUDY_SEARCH]["pruner"] == "hyperband"
    with pytest.warns(UserWarning, match=re.escape("--pruner 'hyperband' (asked 'median')")):
        createStudy(dataclasses.replace(old, pruner="median"))
