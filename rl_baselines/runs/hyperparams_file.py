"""``hyperparams.yaml``: every hyperparameter a run's algorithm used, written into its run folder.

The file holds one ``name: value`` per hyperparameter, defaults included, with the values after the algorithm's
flags, ``--hyperparam-file`` and ``--hyperparam``. It is a valid ``train --hyperparam-file``, so that a run can be
repeated from its folder alone (its other settings are in args.json):

    python -m rl_baselines.train --algo ppo2 --seed 0 ... --hyperparam-file RUN/hyperparams.yaml

Values are written as plain YAML scalars, as RL Zoo files hold them: a none-or-number hyperparameter
(``clip_range_vf``, ``target_kl``) as ``null`` or a float.

Invariant: :func:`usedHyperparams` keeps only values the algorithm's ``parserHyperParam`` reads back to the same
values (a left-out one costs a warning), so writing and reading the file changes nothing.
"""
from __future__ import annotations

import os
import warnings
from typing import Any

import yaml

from rl_baselines.core.hyperparams import NoneOrPositive, givenFlags, plainValue
from rl_baselines.core.plugin_v1 import isV1, namespaceOf
from rl_baselines.core.run_folder import HYPERPARAMS_FILE
from rl_baselines.runs.train_config import TrainConfig
from srl_toolbox.files import atomicPath

_SCALARS = (bool, int, float, str)


def usedHyperparams(algo_class: type, config: TrainConfig, hyperparams: dict[str, Any]) -> dict[str, Any]:
    """
    :param algo_class: the algorithm's class
    :param config: the validated config (the algorithm's flags ``hp_<name>``)
    :param hyperparams: the typed values of ``--hyperparam-file`` and ``--hyperparam``
    :return: every hyperparameter by name (defaults, then flags, then the given values; a continued model's saved
        ones for the algorithms that keep them in their model file), as plain scalars (None for an off
        none-or-number hyperparameter)
    """
    resolve = getattr(algo_class, "hyperparamsFromArgs", None)
    if resolve is None:  # an algorithm without the common mechanism: its defaults, flags and given values
        values = dict(getattr(algo_class, "DEFAULT_HYPERPARAMS", {}) or {})
        values.update(givenFlags(config, list(values)))
        values.update(hyperparams)
    else:
        # A learning-rate schedule flag turns learning_rate into a function: the file keeps the number.
        settings = config.runSettings().replace(lr_schedule="constant")
        args = namespaceOf(settings) if isV1(algo_class) else settings  # what the class's version reads
        values = dict(resolve(args, dict(hyperparams), **_savedHyperparams(algo_class, config)))
    # the built-in type itself (a choice may be a str subclass, a bound an int subclass): yaml.safe_dump needs it;
    # a none-or-number value as its plain value (None: YAML null, or a float); another None is not a value to keep
    used = {name: plainValue(value) if isinstance(value, NoneOrPositive)
            else next(kind for kind in _SCALARS if isinstance(value, kind))(value)
            for name, value in sorted(values.items()) if isinstance(value, _SCALARS)}
    kept = {}
    for name, value in used.items():
        written = "none" if value is None else repr(value) if isinstance(value, float) else str(value)  # as read
        try:
            read_back = {key: plainValue(read) for key, read in algo_class.parserHyperParam({name: written}).items()}
        except ValueError:
            read_back = {}
        if name in read_back and read_back[name] == value and isinstance(read_back[name], bool) == isinstance(value, bool):
            kept[name] = value
        else:  # a plugin's hyperparameter its parserHyperParam does not read: the file could not repeat it
            warnings.warn(f"{HYPERPARAMS_FILE}: hyperparameter {name!r} = {value!r} left out (--hyperparam-file "
                          f"would not read it back as the same value)", stacklevel=2)
    return kept


def _savedHyperparams(algo_class: type, config: TrainConfig) -> dict[str, Any]:
    """:return: ``{"saved": ...}`` for an algorithm whose model file keeps its hyperparameters (the torch ones) when
    training continues a saved model, else nothing"""
    load_path = config.load_rl_model_path
    saved = algo_class.savedHyperparams(load_path) if load_path else None
    return {} if saved is None else {"saved": saved}


def writeHyperparamsFile(run_dir: str, values: dict[str, Any], algo: str) -> str:
    """
    :param run_dir: the run folder
    :param values: from :func:`usedHyperparams`
    :param algo: the algorithm's name (for the header comment)
    :return: the file written (atomically)
    """
    path = os.path.join(run_dir, HYPERPARAMS_FILE)
    with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8") as handle:
        handle.write(f"# Every hyperparameter of this {algo} run; train --hyperparam-file {HYPERPARAMS_FILE} "
                     f"repeats them.\n")
        yaml.safe_dump(values, handle, sort_keys=True, default_flow_style=False)
    return path
