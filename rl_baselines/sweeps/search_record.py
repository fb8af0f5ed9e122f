"""What a hyperparameter search's study records, and the command's creating or continuing it under that record.

A study records the setting it was made for (``STUDY_KEYS``, the seed and the forwarded train flags' settings too) as
one user attribute (:data:`STUDY_RECORD`, JSON values), written at once, so that a command continuing the study reads
all of it or nothing; :func:`createStudy` refuses to continue it for another setting. On SQLite the study is created,
compared and recorded under one file lock, so that of two commands starting one study at once for different settings
the second is refused (other storages have no lock). The train flags count as train's parser gives them, less what
changes no result (``rl_baselines.sweeps.recorded.NOT_A_RESULT``): spelling, order, ``--device`` or ``--port`` do not
make another setting. A train setting the record lacks that args.json's upgrade rules give (``augment_loss``, added
since the study) counts at that value, as it does for a run recorded before it
(``rl_baselines.runs.args_format.addedSettings``): a ppo2 study of ``--augment shift`` made before ``--augment-loss``
holds RAD's trials. Any other setting the record lacks (a study of an older version, a flag added since without such
a rule) is unknown, so accepted.

A study also records the search space it was first searched over (:data:`STUDY_SPACE`; a study of a version that did
not: the space its trials sampled): a command whose space differs (a version whose ``getOptParam`` changed) is warned,
naming the hyperparameters, and continues the study, whose earlier trials stand (:func:`_recordedSpace`).

A study also records the search's own settings it was first searched with (:data:`STUDY_SEARCH`: ``--optimizer``,
``--pruner``, ``--n-evaluations``, ``--n-startup-trials``; a study of a version that did not: this command's). They
change which hyperparameters are tried and which trials are stopped early, never how a trial that completes is scored
(its budget and ``--eval-episodes`` are in the setting), so a command with others is warned, naming each flag, and
continues the study (:func:`_recordedSearch`): a user may switch pruner or sampler on purpose (Optuna stores neither),
but a pruner compares a trial's rewards with the earlier trials' at the same steps, so trials reported at other steps
or under another rule prune unevenly. What each command may choose for itself (``--sampler-seed``, ``--workers``,
``--n-trials``, ``--grid-points``: another grid in one study) is not recorded.

Invariants: a record, once written, is never rewritten (the first command's values stand); every value is JSON. This
module imports :mod:`rl_baselines.sweeps.search_study` (the config, the storage, Optuna), which never imports it back;
a ``--workers`` process does not import it (it loads the study the command created).
"""
from __future__ import annotations

import json
import re
import warnings
from typing import Any

from rl_baselines.runs.args_format import withAddedSettings
from rl_baselines.sweeps.search_study import SearchConfig, importOptuna, openStorage, sqlitePath, storageLock
from srl_toolbox.cli import UsageError

# A study remembers what it was created for, in the user attribute STUDY_RECORD: {key: value} of these keys; a
# command for another setting must use another study.
STUDY_RECORD = "setting"
STUDY_KEYS = ("algo", "env", "srl_model", "num_timesteps", "eval_episodes", "seed", "train_settings")
# A study of an older version recorded some of these, each as its own user attribute (and no train settings).
_OLDER_KEYS = ("algo", "env", "srl_model", "num_timesteps", "eval_episodes", "seed")
# The user attribute of the search space a study was first searched over (:func:`spaceRecord`): a command whose space
# differs (another version's getOptParam) is warned, and continues
STUDY_SPACE = "search_space"
# The user attribute of the search's own settings a study was first searched with ({key: value} of these keys): a
# command with others (another pruner...) is warned, and continues
STUDY_SEARCH = "search_settings"
SEARCH_KEYS = ("optimizer", "pruner", "n_evaluations", "n_startup_trials")


def createStudy(config: SearchConfig) -> Any:
    """
    Create the study, or continue it when it exists and was made for the same setting.

    :param config: the search
    :return: the study
    :raises UsageError: the storage cannot be opened, or the study holds another setting's trials
    :warns: the study was searched over another space (:func:`_recordedSpace`), or with other search settings
        (:func:`_recordedSearch`)
    """
    optuna = importOptuna()
    path = sqlitePath(config.storage_url)
    try:
        storage = openStorage(config.storage_url)
        # Created, compared and recorded under one lock: of two commands starting the same SQLite study for other
        # settings, the second sees the first's record and is refused (unlocked, both could find no record)
        with storageLock(path):
            study = optuna.create_study(storage=storage, study_name=config.study_name, direction="maximize",
                                        load_if_exists=True)
            return _recordedSearch(_recordedSpace(_recordedSetting(study, config), config), config)
    except (ImportError, ValueError, OSError) as error:
        raise UsageError(f"--storage {config.storage_url!r}: {_storageError(error)}") from None
    except Exception as error:  # SQLAlchemy's OperationalError and friends: unreachable server, bad file
        if type(error).__module__.startswith("sqlalchemy"):
            raise UsageError(f"--storage {config.storage_url!r}: {_storageError(error)}") from None
        raise


def _storageError(error: BaseException) -> str:
    """:return: a storage error's first line, without the ``(module.Class)`` SQLAlchemy puts before the driver's
        message (``(sqlite3.DatabaseError) file is not a database``: ``file is not a database``)"""
    return re.sub(r"^\([\w.]+\) ", "", (str(error).splitlines() or [type(error).__name__])[0])


def _recordedSetting(study: Any, config: SearchConfig) -> Any:
    """
    :return: ``study``, whose record is now ``config``'s setting (written if it had none)
    :raises UsageError: it records another setting
    """
    wanted = json.loads(json.dumps({key: getattr(config, key) for key in STUDY_KEYS}, default=str))
    attrs = study.user_attrs
    recorded = attrs.get(STUDY_RECORD)
    if not isinstance(recorded, dict):  # a study of an older version: some keys, one attribute each
        recorded = {key: attrs[key] for key in _OLDER_KEYS if key in attrs}
    differ = _differences(recorded, wanted, config.setting_flags)
    if differ:
        raise UsageError(f"study {config.study_name!r} in {config.storage_url} was made for {', '.join(differ)}; "
                         f"choose another --study-name")
    if STUDY_RECORD not in attrs:
        study.set_user_attr(STUDY_RECORD, wanted)  # (one attribute: a concurrent command reads all of it or nothing)
    return study


# The train settings a study records that no one flag sets, as its messages name them
_SETTING_NAMES = {"hyperparams": "--hyperparam/--hyperparam-file", "srl_model_hash": "the SRL model's hash"}


def _shown(value: Any) -> str:
    """:return: a recorded setting's value as a message gives it: ``not set`` for a flag left unset (None), fixed
        hyperparameters as ``--hyperparam``'s ``KEY:VALUE`` items (``none`` for none)"""
    if isinstance(value, dict):
        return " ".join(f"{name}:{item}" for name, item in sorted(value.items())) or "none"
    return "not set" if value is None else repr(value)


def _differences(recorded: dict[str, Any], wanted: dict[str, Any], flags: dict[str, str]) -> list[str]:
    """
    :param recorded: the study's record (or the keys an older version recorded)
    :param wanted: this command's (JSON values)
    :param flags: each train setting's flag (:attr:`SearchConfig.setting_flags`)
    :return: each setting the study was made with otherwise, as ``--flag value (asked value)`` (the flag as a user
        types it: the search's own for its keys, train's for a train setting), a value left unset as ``not set``; a
        train setting the record lacks that args.json's upgrade rules give (a flag added since the study) at that
        value (``augment_loss``: rad); a key or train setting one of them lacks otherwise (an older version's study,
        a flag removed since, or one that does nothing for this command's runs) is unknown: not counted
    """
    differ = []
    for key in (key for key in STUDY_KEYS if key in recorded and key in wanted):
        if key != "train_settings":
            if recorded[key] != wanted[key]:
                differ.append(f"--{key.replace('_', '-')} {_shown(recorded[key])} (asked {_shown(wanted[key])})")
            continue
        settings = recorded[key] if isinstance(recorded[key], dict) else {}
        settings = withAddedSettings(settings)  # (the runs of its trials, as args.json's rules read them)
        differ += [f"{flags.get(name) or _SETTING_NAMES.get(name) or name} {_shown(settings[name])} "
                   f"(asked {_shown(wanted[key][name])})"
                   for name in sorted(settings.keys() & wanted[key].keys()) if settings[name] != wanted[key][name]]
    return differ


# --- search space record ---------------------------------------------------------------------------------------


def _distributionRecord(distribution: Any) -> dict[str, Any]:
    """:return: an Optuna distribution as Optuna's JSON writes it, as a dict (``{"name": "IntDistribution",
    "attributes": {"low": 1, "high": 16, "log": false, "step": 1}}``)"""
    return json.loads(importOptuna().distributions.distribution_to_json(distribution))


def spaceRecord(config: SearchConfig) -> dict[str, Any]:
    """
    :param config: the search
    :return: what each trial's searched hyperparameters come from, JSON values by name: each sampled one's
        distribution as :func:`suggestParams` asks Optuna for it (:func:`_distributionRecord`), and a
        ``gradient_steps`` that follows the sampled ``train_freq`` (``config.subsample_steps``) as
        ``{"follows": "train_freq", "subsample_steps": [...]}``
    """
    distributions = importOptuna().distributions
    record: dict[str, Any] = {}
    for name, spec in config.space.items():
        if spec[0] is list:
            distribution = distributions.CategoricalDistribution(list(spec[1]))
        elif spec[0] is int:
            distribution = distributions.IntDistribution(int(spec[1][0]), int(spec[1][1]), log=len(spec) == 3)
        else:
            distribution = distributions.FloatDistribution(float(spec[1][0]), float(spec[1][1]), log=len(spec) == 3)
        record[name] = _distributionRecord(distribution)
    if config.subsample_steps:
        record["gradient_steps"] = {"follows": "train_freq", "subsample_steps": list(config.subsample_steps)}
    return record


def _trialsSpace(study: Any) -> dict[str, Any] | None:
    """:return: the space a study's trials sampled (their distributions, as :func:`spaceRecord` writes them; the
    first trial's of a name), None when none sampled anything (no trial)"""
    record: dict[str, Any] = {}
    for trial in study.get_trials(deepcopy=False):
        for name, distribution in trial.distributions.items():
            record.setdefault(name, _distributionRecord(distribution))
    return record or None


def _describedEntry(entry: Any) -> str:
    """:return: a space record's entry as a message gives it: ``1..16 (int)``, ``one of 1, 2``, ``train_freq //
    subsample_steps``, ``not searched``"""
    if not isinstance(entry, dict):
        return "not searched"
    if "follows" in entry:
        return f"{entry['follows']}" + ("" if entry.get("subsample_steps") == [1] else " // subsample_steps")
    attributes = entry.get("attributes", {})
    if "choices" in attributes:
        return "one of " + ", ".join(map(str, attributes["choices"]))
    kind = "int" if entry.get("name") == "IntDistribution" else "float"
    return f"{attributes.get('low')}..{attributes.get('high')} ({kind}{', log' if attributes.get('log') else ''})"


def _recordedSpace(study: Any, config: SearchConfig) -> Any:
    """
    Compare the search space of ``config`` with the one the study recorded (:data:`STUDY_SPACE`), or, for a study of
    a version that recorded none, with the one its trials sampled; the study records its first one (the recorded, the
    trials', else this command's).

    :return: ``study``
    :warns: the spaces differ (another version's search space): once, naming each hyperparameter that differs and
        how; the study continues, its earlier trials kept (their results stand, for the space they sampled)
    """
    wanted = spaceRecord(config)
    recorded = study.user_attrs.get(STUDY_SPACE)
    if not isinstance(recorded, dict):
        recorded = _trialsSpace(study)
    if recorded is not None:
        differ = [f"{name} ({_describedEntry(recorded.get(name))}, now {_describedEntry(wanted.get(name))})"
                  for name in sorted(recorded.keys() | wanted.keys()) if recorded.get(name) != wanted.get(name)]
        if differ:
            warnings.warn(f"study {config.study_name!r} in {config.storage_url} was searched over another space: "
                          f"{'; '.join(differ)}; its {len(study.trials)} earlier trials are kept and its new ones "
                          f"sample this one (choose another --study-name to keep them apart)", stacklevel=2)
    if STUDY_SPACE not in study.user_attrs:
        study.set_user_attr(STUDY_SPACE, wanted if recorded is None else recorded)
    return study


# --- search settings record --------------------------------------------------------------------------------------


def _usedSearchKeys(config: SearchConfig) -> list[str]:
    """:return: the search settings (:data:`SEARCH_KEYS`) that act on this command's trials: the optimizer and the
        pruner; ``n_evaluations`` unless the trials evaluate (a forwarded ``--eval-freq``, recorded as a train setting,
        sets the steps reported then); ``n_startup_trials`` with TPE or the median pruner, the two that read it"""
    used = ["optimizer", "pruner"]
    if not config.evaluate:
        used.append("n_evaluations")
    if config.optimizer == "tpe" or config.pruner == "median":
        used.append("n_startup_trials")
    return used


def _recordedSearch(study: Any, config: SearchConfig) -> Any:
    """
    Compare the search settings of ``config`` with those the study recorded (:data:`STUDY_SEARCH`); a study that
    recorded none (a new one, or one of a version that did not record them) records this command's.

    :return: ``study``
    :warns: a setting that acts on this command's trials (:func:`_usedSearchKeys`) differs: once, naming each flag
        with its recorded and asked values; the study continues, its earlier trials kept
    """
    wanted = {key: getattr(config, key) for key in SEARCH_KEYS}
    recorded = study.user_attrs.get(STUDY_SEARCH)
    if not isinstance(recorded, dict):
        study.set_user_attr(STUDY_SEARCH, wanted)  # (one attribute: a concurrent command reads all of it or nothing)
        return study
    differ = [f"--{key.replace('_', '-')} {_shown(recorded[key])} (asked {_shown(wanted[key])})"
              for key in _usedSearchKeys(config) if key in recorded and recorded[key] != wanted[key]]
    if differ:
        warnings.warn(f"study {config.study_name!r} in {config.storage_url} was searched with other search settings: "
                      f"{', '.join(differ)}; its {len(study.trials)} earlier trials are kept and its new ones are "
                      f"sampled and pruned with these beside them (choose another --study-name to keep them apart)",
                      stacklevel=2)
    return study
