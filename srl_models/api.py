"""The Python API of the SRL side, for notebooks and scripts: record a dataset, train an SRL model on it, measure it,
load it, or do all of it for an env as ``srl_models.prepare`` does, without a shell.

Every function runs the command's own code on the command's own settings: the dataset generator's and
srl_models.train's settings dataclasses (GeneratorConfig, SRLTrainConfig) built from the keywords, each read by its
flag's parser; prepare's keywords as its command-line words. Hence:

- a keyword is a flag's long name with ``_`` for ``-`` (``num_episode=4`` is ``--num-episode 4``); an unknown one,
  or a value the command would refuse, raises :class:`UsageError` with the command's one-line message, before
  anything is written;
- the folders are the commands' (a dataset under ``save_path``, a model folder under ``log_folder``), so the
  commands, ``rl_baselines.train --srl-model-path`` and :func:`rl_baselines.api.makeConfig` take them;
- process-wide settings are left as the caller set them: the global random generators (which training and loading
  seed) and torch's thread count (srl_toolbox.global_state.callerSettings);
- no progress bar unless ``progress=True``; an interrupt (Ctrl-C) ends the call with ``KeyboardInterrupt`` once the
  command has done what its Ctrl-C does (a dataset's finished episodes kept for ``resume=True``).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from environments import dataset_generator
from environments.generator_config import GeneratorConfig
from srl_models import prepare, train
from srl_models.base import BaseSRLModel
from srl_models.evaluate import DEFAULT_K, DEFAULT_MAX_SAMPLES, DEFAULT_SEED, prepareEvaluation, runEvaluation
from srl_models.registry import freezeModel
from srl_models.registry import loadSRLModel as loadModelFolder
from srl_models.train_config import SRLTrainConfig
from srl_toolbox.cli import INTERRUPTED_EXIT_CODE, UsageError, checkWritableFolder
from srl_toolbox.devices import checkedDevice
from srl_toolbox.global_state import callerSettings
from srl_toolbox.settings import (
    checkedSettings,
    integerKeyword,
    keywordArguments,
    plainValue,
    settingFields,
    switchKeyword,
    unknownKeyword,
)

__all__ = ["SRLScores", "UsageError", "evaluateSRLModel", "loadSRLModel", "prepareSRLModels", "recordDataset",
           "trainSRLModel"]

# the settings the API gives under another name (``progress=True`` for ``--no-progress`` left out)
_API_NAMED = {"no_progress": "progress"}


@dataclasses.dataclass(frozen=True)
class SRLScores:
    """What :func:`evaluateSRLModel` measured (as ``python -m srl_models.evaluate`` prints and writes it)."""

    gtc: float  # ground-truth correlation: mean over the ground truth's dimensions
    gtc_per_dimension: tuple[float, ...]
    knn_mse: float
    probe_r2: float | None  # the linear probe's R^2 on held-out episodes, None when there is none (probe_skipped)
    probe_skipped: str | None
    output_folder: str  # where the JSON files and figures were written


def recordDataset(env: str | None = None, num_episode: int | None = None, *, progress: bool = False,
                  **settings: Any) -> str:
    """
    Record a dataset, as ``python -m environments.dataset_generator`` does.

    :param env: registered env id (None: the command's default)
    :param num_episode: episodes to record (None: the command's default)
    :param progress: show the progress bar
    :param settings: any other flag of the command by its long name (``save_path``, ``name``, ``seed``,
        ``img_shape=[3, 64, 64]``, ``random_target=True``, ``max_steps``, ``num_cpu``, ``force``, ``resume``...)
    :return: the dataset folder
    :raises UsageError: bad input (nothing written)
    :raises KeyboardInterrupt: interrupted (the finished episodes kept for ``resume=True``, as the command says)
    """
    config = _settings(GeneratorConfig, "environments.dataset_generator",
                       {"env": env, "num_episode": num_episode, **settings}, progress)
    with callerSettings():
        folder = dataset_generator.recordDataset(config)
    if folder is None:
        raise KeyboardInterrupt
    return folder


def trainSRLModel(data_folder: str | os.PathLike, srl_model: str | None = None, *, progress: bool = False,
                  **settings: Any) -> str:
    """
    Train an SRL model on a dataset and measure it, as ``python -m srl_models.train`` does.

    :param data_folder: the dataset folder (:func:`recordDataset`'s)
    :param srl_model: the model (None: from ``losses``, as the command decides)
    :param progress: show the progress bars
    :param settings: any other flag of the command by its long name (``losses=["inverse", "forward"]``,
        ``state_dim``, ``epochs``, ``batch_size``, ``augment``, ``seed``, ``log_folder``, ``no_eval=True``...)
    :return: the new model folder
    :raises UsageError: bad input (nothing written)
    """
    config = _settings(SRLTrainConfig, "srl_models.train",
                       {"data_folder": data_folder, "srl_model": srl_model, **settings}, progress)
    train.checkEpochsGiven(config)
    with callerSettings():
        return train.trainFromConfig(config)


def evaluateSRLModel(model_folder: str | os.PathLike, data_folder: str | os.PathLike | None = None,
                     k: int = DEFAULT_K, max_samples: int = DEFAULT_MAX_SAMPLES, seed: int = DEFAULT_SEED, *,
                     device: str = "cpu", progress: bool = False) -> SRLScores:
    """
    Measure a trained model (GTC, KNN-MSE, the linear probe) and write its results and figures, as
    ``python -m srl_models.evaluate`` does.

    :param model_folder: a model folder (:func:`trainSRLModel`'s)
    :param data_folder: the dataset (None: the one it was trained on)
    :param k: neighbours of KNN-MSE
    :param max_samples: most frames measured (a seeded subset beyond)
    :param seed: seed of the subset and of the figures
    :param device: torch device of the encoder
    :param progress: show the progress bar
    :return: the scores
    :raises UsageError: bad input (nothing written)
    """
    model_folder = _folder("model_folder", model_folder)
    data_folder = None if data_folder is None else _folder("data_folder", data_folder)
    k, max_samples, seed = (integerKeyword(name, plainValue(value), minimum, f"an integer >= {minimum}")
                          for name, value, minimum in (("k", k, 1), ("max_samples", max_samples, 2), ("seed", seed, 0)))
    switchKeyword("progress", progress)
    with callerSettings():
        try:
            evaluation = prepareEvaluation(model_folder, data_folder, k=k, max_samples=max_samples, seed=seed,
                                           device=checkedDevice(device))
        except ValueError as error:
            raise UsageError(str(error)) from None
        checkWritableFolder(model_folder, "model_folder")
        result = runEvaluation(evaluation, progress=progress)
    probe = result["probe"]
    return SRLScores(float(result["gtc"]["mean"]), tuple(map(float, result["gtc"]["per_dimension"])),
                     float(result["knn_mse"]), None if probe is None else float(probe["mean"]),
                     result["probe_skipped"], evaluation.output_folder)


def loadSRLModel(model_folder: str | os.PathLike, device: str = "cpu") -> BaseSRLModel:
    """
    Load a trained model, frozen (eval mode, no gradients), as the RL side uses it: ``model.getState(images)``
    takes uint8 images (n, H, W, C) as the envs return them and gives float32 states (n, state_dim).

    :param model_folder: a model folder (:func:`trainSRLModel`'s, a plugin model's too)
    :param device: torch device of the encoder
    :return: the model
    :raises UsageError: not a loadable model folder (one line)
    """
    model_folder = _folder("model_folder", model_folder)
    with callerSettings():
        try:
            return freezeModel(loadModelFolder(model_folder, device=checkedDevice(device)))
        except ValueError as error:
            raise UsageError(str(error)) from None


def prepareSRLModels(env: str, srl_model: str | Sequence[str], *, progress: bool = False,
                     **flags: Any) -> list[dict[str, Any]]:
    """
    Record a dataset for an env (or reuse one), train the models on it (or reuse them), measure them and register
    them in the SRL config file, as ``python -m srl_models.prepare`` does: ``rl_baselines.api.makeConfig(env=env,
    srl_model=NAME)`` then finds them.

    :param env: registered env id
    :param srl_model: a learned model's name, or several
    :param progress: show the progress bars
    :param flags: any other flag of the command by its long name (``episodes``, ``state_dim``, ``epochs``,
        ``img_shape``, ``random_target=True``, ``data_folder``, ``log_folder``, ``srl_config_file``, ``force``...)
    :return: one row per model: model, folder, gtc, knn_mse, probe, seconds, reused, registered
    :raises UsageError: bad input (nothing written)
    :raises KeyboardInterrupt: interrupted
    """
    switchKeyword("progress", progress)
    words = keywordArguments(prepare.buildParser(), {"env": env, "srl_model": srl_model, **flags}, "srl_models.prepare",
                             api_named=_API_NAMED)
    try:
        with callerSettings():
            return prepare.prepare([*words, *([] if progress else ["--no-progress"])])
    except SystemExit as stop:  # (the recording's Ctrl-C: the command's exit code)
        if stop.code == INTERRUPTED_EXIT_CODE:
            raise KeyboardInterrupt from None
        raise


def _settings(cls: type, command: str, given: Mapping[str, Any], progress: Any) -> Any:
    """:return: the command's settings dataclass from keywords (None: the flag's default), checked by its flags'
        parsers (srl_toolbox.settings.checkedSettings); ``progress`` gives ``no_progress``
    :raises UsageError: a keyword that is not a flag of the command, or a value it refuses"""
    switchKeyword("progress", progress)
    fields = {name: field for name, field in settingFields(cls).items() if name not in _API_NAMED}
    for name, value in given.items():
        if name not in fields:
            raise unknownKeyword(name, value, fields, command, _API_NAMED)
    values = {name: os.fspath(value) if isinstance(value, os.PathLike) else value
              for name, value in given.items() if value is not None}
    return checkedSettings(cls(**values, no_progress=not progress))


def _folder(name: str, value: Any) -> str:
    """:return: a folder keyword's path as text
    :raises UsageError: not a string or a path"""
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise UsageError(f"{name} {value!r} must be a folder's path (a string or a path)")
    return os.fspath(value)

