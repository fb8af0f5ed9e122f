"""Which trained SRL model an RL run uses: ``config/srl_models.yaml`` and the checks made before a run starts.

The file maps each env id to its trained models, by registered model name::

    MobileRobotGymEnv-v0:
      vae: ../logs/srl/mobile_robot/24-01-01_10h00_00_vae_ST_DIM32_SEED0
      autoencoder: /abs/path/to/another/model/folder

A relative folder is resolved against the directory that holds the YAML file (so ``config/srl_models.yaml`` points
at ``logs/srl/...`` as ``../logs/srl/...``), whatever the current directory is; ``~`` is expanded.

:func:`resolveSRLModel` turns ``(env, name)`` or an explicit folder into a checked model folder: the name must be a
registered learned model, the folder an SRL model folder of that kind, trained on that env's images at the run's
image shape. Every refusal is one ``ValueError`` line, so that the train command and the pipeline can refuse a run
before anything is written.
"""
from __future__ import annotations

import os
from typing import Any

import yaml

from srl_models.base import modelHash, readExpConfig
from srl_models.registry import learnedModels, loadSRLModel, registered_srl

DEFAULT_CONFIG_FILE = os.path.join("config", "srl_models.yaml")
# Written in every run folder that uses a learned SRL model.
RUN_RECORD_FILE = "srl_model.json"


class SRLLookupError(ValueError):
    """The SRL config file does not say which folder to use (as opposed to a folder that cannot be used)."""


def readSRLConfig(config_file: str) -> dict[str, dict[str, str]]:
    """
    :param config_file: a YAML file ``{env id: {model name: model folder}}``
    :return: its mapping, folders as written (an empty file is an empty mapping)
    :raises SRLLookupError: missing, unreadable or not shaped like that (one line)
    """
    if not os.path.isfile(config_file):
        raise SRLLookupError(f"SRL config file {config_file!r} does not exist")
    try:
        with open(config_file, encoding="utf-8") as handle:
            content = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as error:
        reason = " ".join(str(error).split())
        raise SRLLookupError(f"SRL config file {config_file!r} is not readable YAML ({reason})") from None
    content = {} if content is None else content
    if not isinstance(content, dict):
        raise SRLLookupError(f"SRL config file {config_file!r} must map env ids to {{model name: folder}}, "
                         f"not a {type(content).__name__}")
    for env_id, models in content.items():
        if models is None:
            continue
        if not isinstance(models, dict) or not all(isinstance(folder, str) for folder in models.values()):
            raise SRLLookupError(f"SRL config file {config_file!r}: entry {env_id!r} must map model names to folder "
                             f"paths")
    return {str(env_id): {str(k): v for k, v in (models or {}).items()} for env_id, models in content.items()}


def configFolder(config_file: str, folder: str) -> str:
    """
    :param config_file: the YAML file the folder was read from
    :param folder: a folder as written there
    :return: the absolute folder (a relative one is relative to the YAML file's directory)
    """
    folder = os.path.expanduser(folder)
    if not os.path.isabs(folder):
        folder = os.path.join(os.path.dirname(os.path.abspath(config_file)), folder)
    return os.path.normpath(folder)


def _shapeText(shape: Any) -> str:
    return "x".join(str(int(v)) for v in shape)


def checkModelFolder(folder: str, env_id: str, name: str | None = None,
                     img_shape: tuple[int, int, int] | None = None, channels: int | None = None) -> dict[str, Any]:
    """
    Check that a folder holds a trained model usable on an env.

    :param folder: the model folder
    :param env_id: the env the run uses (the model must have been trained on its images)
    :param name: the model name asked for (the folder must hold that kind of model), None for any learned model
    :param img_shape: (C, H, W) the run's camera gives, None to accept the model's height and width
    :param channels: the run's image channels (3, or 6 with two cameras), checked when img_shape is None
    :return: the folder's exp_config
    :raises ValueError: missing or foreign folder, not installed, another kind, env or image shape (one line)
    """
    config = readExpConfig(folder)
    kind = config["srl_model"]
    if kind not in learnedModels():
        raise ValueError(f"{folder!r} holds an SRL model {kind!r} that is not installed; installed learned models: "
                         f"{', '.join(learnedModels()) or 'none'}")
    if name is not None and kind != name:
        raise ValueError(f"{folder!r} holds a {kind!r} model, not {name!r}")
    trained_on = config.get("env")
    if trained_on is not None and trained_on != env_id:
        raise ValueError(f"{folder!r} was trained on {trained_on} images, not {env_id}; train one on a {env_id} "
                         f"dataset")
    model_shape = tuple(int(v) for v in config.get("img_shape", ()))
    if len(model_shape) != 3:
        raise ValueError(f"{folder!r}: exp_config.json lacks a valid img_shape [C, H, W]")
    if img_shape is not None and model_shape != tuple(int(v) for v in img_shape):
        raise ValueError(f"{folder!r} encodes {_shapeText(model_shape)} images but the run's camera gives "
                         f"{_shapeText(img_shape)}; use --img-shape 3 {model_shape[1]} {model_shape[2]} (with the same "
                         f"cameras) or a model trained at that size")
    if img_shape is None and channels is not None and model_shape[0] != channels:
        cameras = "two cameras (--fpv or --multi-view)" if model_shape[0] == 6 else "one camera"
        raise ValueError(f"{folder!r} encodes {model_shape[0]}-channel images ({cameras}) but the run's camera "
                         f"gives {channels} channels")
    return config


def resolveSRLModel(env_id: str, name: str | None, config_file: str = DEFAULT_CONFIG_FILE,
                    model_path: str | None = None, img_shape: tuple[int, int, int] | None = None,
                    channels: int | None = None, check_load: bool = True) -> str:
    """
    Find and check the trained model a run asks for.

    :param env_id: the run's env id
    :param name: the registered learned model name (``--srl-model``); None with ``model_path`` for whatever kind
        the folder holds
    :param config_file: the YAML file mapping envs to models (read only when ``model_path`` is None)
    :param model_path: an explicit model folder (``--srl-model-path``), bypassing the YAML file
    :param img_shape: (C, H, W) the run's camera gives, None to accept the model's height and width
    :param channels: the run's image channels, checked when img_shape is None
    :param check_load: also load the model (on the CPU), so that corrupt weights are refused up front
    :return: the absolute model folder
    :raises SRLLookupError: not a learned model name, or the config file maps no folder to it (one line)
    :raises ValueError: any other reason the model cannot be used (one line)
    """
    if name is not None and name not in learnedModels():
        known = "registered but computed by the env" if name in registered_srl else "not installed"
        raise SRLLookupError(f"{name!r} is not a learned SRL model ({known}); installed learned models: "
                         f"{', '.join(learnedModels()) or 'none'}")
    if model_path is not None:
        folder = os.path.abspath(os.path.expanduser(model_path))
        origin = f"--srl-model-path {model_path}"
    else:
        mapping = readSRLConfig(config_file)
        if env_id not in mapping or not mapping[env_id]:
            listed = f"it lists {', '.join(sorted(mapping))}" if mapping else "it lists no env"
            raise SRLLookupError(f"SRL config file {config_file!r} has no trained SRL model for {env_id} ({listed}); "
                             f"train one with python -m srl_models.train and add it, or pass --srl-model-path")
        if name not in mapping[env_id]:
            raise SRLLookupError(f"SRL config file {config_file!r} has no {name!r} model for {env_id}; models it has "
                             f"for {env_id}: {', '.join(sorted(mapping[env_id]))}")
        folder = configFolder(config_file, mapping[env_id][name])
        origin = f"{config_file} ({env_id}: {name})"
    try:
        checkModelFolder(folder, env_id, name, img_shape, channels)
        if check_load:
            loadSRLModel(folder, device="cpu")
    except ValueError as error:
        raise ValueError(f"{origin}: {error}") from None
    return folder


def describeSRLModel(folder: str) -> dict[str, Any]:
    """
    :param folder: a checked model folder
    :return: what a run folder records about it: name, absolute path, hash (srl_models.base.modelHash), state_dim,
        img_shape, env
    :raises ValueError: the folder cannot be read (one line)
    """
    config = readExpConfig(folder)
    try:
        digest = modelHash(folder)
    except OSError as error:
        raise ValueError(f"{folder!r}: cannot read its files ({error.strerror}: {error.filename})") from None
    return {"name": config["srl_model"], "path": os.path.abspath(folder), "hash": digest,
            "state_dim": int(config["state_dim"]), "img_shape": [int(v) for v in config.get("img_shape", [])],
            "env": config.get("env")}


def checkRecordedModel(record: dict[str, Any], folder: str | None = None) -> str:
    """
    Check that the model a run recorded is still the one on disk.

    :param record: the run's srl_model.json (from :func:`describeSRLModel`)
    :param folder: a folder to use instead of the recorded path (a moved copy), None for the recorded one
    :return: the absolute model folder
    :raises ValueError: missing folder or different files (hash mismatch) (one line)
    """
    folder = os.path.abspath(folder or record["path"])
    current = describeSRLModel(folder)["hash"]
    if current != record["hash"]:
        raise ValueError(f"SRL model folder {folder!r} changed since the run was trained (hash {current[:12]}, run "
                         f"recorded {record['hash'][:12]}); point --srl-model-path at the model the run used")
    return folder
