"""The SRL + RL benchmark's learned models: the facts of those registered in the bench folder, and which runs they
make stale.

Prepare registers each learned model in the benchmark's own SRL config file (``<bench-dir>/srl_models.yaml``, or the
one of its renderer: benchmarks.srl_rl.plans.Settings.configFile).
Invariant: no table mixes two recipes. A run (or an archived record) made with a model whose hash and recipe
(srl_models.base.modelRecipe) both differ from the registered model's is stale (:func:`sameModel`); another training
of the same recipe (on another machine, or again after its folder was lost) is not.
"""
from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Sequence
from typing import Any

from benchmarks.srl_rl.plans import Settings
from rl_baselines.core.run_folder import RunFolder
from srl_models.config import SRLLookupError, configFolder, describeSRLModel, readSRLConfig
from srl_models.evaluate import PROBE_FILE
from srl_toolbox.files import readJson

# Keys of a model's facts that describe it rather than measure it: every other number is a metric of the
# representation (GTC, KNN-MSE, and any other a model's facts come to hold), recorded, averaged and correlated alike.
DESCRIPTIONS = ("state_dim", "trainings", "hash", "recipe", "folder")
METRICS = ("gtc", "knn_mse")  # always recorded (nan when unknown), and shown first


def modelMetrics(facts: dict[str, Any] | None) -> dict[str, float]:
    """
    :param facts: a model's facts (:func:`modelFacts`, or an archived record's ``model``; None: none)
    :return: metric name -> value (nan for None) of every metric the facts hold: :data:`METRICS`, then the other
        numeric keys but :data:`DESCRIPTIONS`, in the facts' order
    """
    if facts is None:
        return {}
    result = {name: math.nan if facts.get(name) is None else float(facts[name]) for name in METRICS}
    for key, value in facts.items():
        if key in DESCRIPTIONS or key in result or isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) or value is None:
            result[key] = math.nan if value is None else float(value)
    return result


def registeredModels(config_file: str, env: str) -> dict[str, str]:
    """
    :param config_file: the benchmark's SRL config file
    :param env: env id
    :return: model name -> absolute folder registered for the env (empty when the file or the env is missing)
    """
    try:
        mapping = readSRLConfig(config_file)
    except SRLLookupError:
        return {}
    return {name: configFolder(config_file, folder) for name, folder in mapping.get(env, {}).items()}


def modelFacts(folder: str) -> dict[str, Any]:
    """
    :param folder: a prepared model folder
    :return: gtc (mean), knn_mse (nan when not evaluated), probe_r2 (the linear probe's R^2, only when evaluated),
        state_dim, hash and recipe (None when the folder cannot be read)
    """
    facts: dict[str, Any] = {"gtc": math.nan, "knn_mse": math.nan, "state_dim": None, "hash": None, "recipe": None,
                             "folder": folder}
    try:
        record = describeSRLModel(folder)
        facts.update(state_dim=record["state_dim"], hash=record["hash"], recipe=record["recipe"])
    except (ValueError, OSError, KeyError):
        return facts
    for key, name, field in (("gtc", "gt_correlation.json", "mean"), ("knn_mse", "knn_mse.json", "knn_mse"),
                             ("probe_r2", PROBE_FILE, "mean")):
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                facts[key] = float(json.load(handle)[field])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return facts


def sameModel(current: dict[str, Any] | None, recorded: dict[str, Any] | None) -> bool:
    """
    :param current: facts of the model registered now (:func:`modelFacts`; None: none registered)
    :param recorded: the model facts a run recorded (its srl_model.json, or an archived record's ``model``)
    :return: False only when both are known and differ: other files (hash) and not two trainings of one recipe (the
        same settings and code, trained on another machine or again after its folder was lost; see
        srl_models.base.modelRecipe)
    """
    if current is None or recorded is None or current.get("hash") is None or recorded.get("hash") is None:
        return True
    if current["hash"] == recorded["hash"]:
        return True
    return current.get("recipe") is not None and current.get("recipe") == recorded.get("recipe")


def dropStaleRuns(folders: Sequence[str], models: dict[str, dict[str, Any]]) -> list[str]:
    """
    Delete the finished runs whose learned model is no longer the registered one (trained again with other
    settings or code: :func:`sameModel`), so that the pipeline runs them again with the current model.

    :param folders: finished run folders
    :param models: model name -> :func:`modelFacts` of the registered model
    :return: the deleted folders
    """
    dropped = []
    for folder in folders:
        record_path = RunFolder(folder).srl_model_file
        if not os.path.isfile(record_path):
            continue
        record = readJson(record_path)
        if not sameModel(models.get(record.get("name")), record):
            shutil.rmtree(folder)
            dropped.append(folder)
    return dropped


def registeredFacts(settings: Settings, env: str) -> dict[str, dict[str, Any]]:
    """
    :param settings: the benchmark's settings
    :param env: env id
    :return: model name -> :func:`modelFacts` of the models registered for the env in the bench folder
    """
    return {name: modelFacts(folder) for name, folder in registeredModels(settings.configFile(env), env).items()}
