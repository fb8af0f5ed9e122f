"""registered_srl: every SRL model declared under the entry-point group ``srl_toolbox.srl_models``.

``NAME: (CLASS, SRLType)``. Built-in models are declared in setup.py like third-party ones. A plugin that fails to
import, is not a BaseSRLModel, leaves an abstract method out, or was built for another API major version is
recorded in ``failed_srl_plugins`` and skipped with one warning; the messages that refuse an SRL model name list them
(:func:`failedSRLPluginsText`).

The plugins are loaded on the first access to the registry (``registered_srl``, ``failed_srl_plugins``, read as
module attributes or through :func:`registeredSRL` / :func:`failedSRLPlugins`, or any function here that reads them),
not when this module is imported: the RL side imports it while its own modules are half-way through their import, and
a plugin module may import those (``rl_baselines.core.base``) as well as ``srl_models.models``. Both dicts keep their
identity once loaded (a test may add a model to them).

:func:`loadSRLModel` turns whatever a model's ``load`` raises into one ``ValueError`` line naming the model and its
folder; :func:`checkSRLModel` also encodes one frame, so that a model breaking the contract (``getState`` of another
shape, not floats, not finite) is refused before a run writes anything."""
from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import torch

from environments.srl_env import addLearnedModelNames
from srl_models.base import BaseSRLModel, SRLType, missingWeights, readExpConfig
from srl_toolbox.plugins import FOLDER_NAME, SkippedPluginWarning, apiMajor, loadPlugins

ENTRY_POINT_GROUP = "srl_toolbox.srl_models"


class SRLPluginLoadWarning(SkippedPluginWarning):
    """An SRL model plugin was skipped."""


def _refusal(plugin: Any) -> str | None:
    if not (isinstance(plugin, type) and issubclass(plugin, BaseSRLModel)):
        return f"{plugin!r} is not a subclass of srl_models.base.BaseSRLModel"
    if apiMajor(getattr(plugin, "API_VERSION", None)) != BaseSRLModel.API_VERSION:
        return (f"built for API version {plugin.API_VERSION}, this srl-toolbox provides API version "
                f"{BaseSRLModel.API_VERSION}")
    if not isinstance(plugin.SRL_TYPE, SRLType):
        return f"SRL_TYPE {plugin.SRL_TYPE!r} is not an SRLType"
    # the env-computed observation modes are markers, never instantiated: only a model is held to the contract
    if plugin.SRL_TYPE is not SRLType.ENVIRONMENT and inspect.isabstract(plugin):
        return f"{plugin.__name__} is abstract: it does not implement {', '.join(sorted(plugin.__abstractmethods__))}"
    return None


def loadRegisteredSRL(warn: bool = True) -> tuple[dict[str, tuple[type[BaseSRLModel], SRLType]], dict[str, str]]:
    """
    :param warn: emit one SRLPluginLoadWarning per skipped plugin
    :return: (registered models, skipped plugins with their reasons)
    """
    plugins, failures = loadPlugins(ENTRY_POINT_GROUP, _refusal, "SRL model", SRLPluginLoadWarning, warn,
                                    name_pattern=FOLDER_NAME)
    return {name: (plugin, plugin.SRL_TYPE) for name, plugin in plugins.items()}, failures


# Filled on first access (:func:`_loaded`), never replaced
_registered: dict[str, tuple[type[BaseSRLModel], SRLType]] = {}
_failed: dict[str, str] = {}
_load_state = {"started": False}


def _loaded() -> None:
    """Load the plugins into the registry once per process; a plugin that reads the registry while it is loading
    sees it still filling"""
    if _load_state["started"]:
        return
    _load_state["started"] = True
    registered, failures = loadRegisteredSRL()
    _registered.update(registered)
    _failed.update(failures)


def registeredSRL() -> dict[str, tuple[type[BaseSRLModel], SRLType]]:
    """:return: ``registered_srl``: name -> (class, SRL type) of every model that loaded (loading them first)"""
    _loaded()
    return _registered


def failedSRLPlugins() -> dict[str, str]:
    """:return: ``failed_srl_plugins``: name -> why that SRL model plugin was skipped (loading them first)"""
    _loaded()
    return _failed


def __getattr__(name: str) -> Any:
    """:return: the module attributes ``registered_srl`` and ``failed_srl_plugins``, the plugins loaded on the first
    access (PEP 562)"""
    if name == "registered_srl":
        return registeredSRL()
    if name == "failed_srl_plugins":
        return failedSRLPlugins()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def learnedModels() -> list[str]:
    """:return: names of the registered models trained from datasets"""
    return [name for name, (_, srl_type) in registeredSRL().items() if srl_type is SRLType.LEARNED]


def failedSRLPluginsText(name: str | None = None) -> str:
    """
    :param name: the SRL model name asked for, if any
    :return: the end of an unknown-SRL-model message: ``"; SRL model plugins that failed to load: a, b"``, or the
        reason when ``name`` is one of them ("" when none failed)
    """
    failed = failedSRLPlugins()
    if name in failed:
        return f"; the SRL model plugin {name!r} failed to load ({failed[name]})"
    if not failed:
        return ""
    return f"; SRL model plugins that failed to load: {', '.join(sorted(failed))}"


def _errorText(error: BaseException) -> str:
    """:return: ``"Type: message"`` on one line (at most 300 characters of the message)"""
    detail = " ".join(str(error).split())[:300]
    return f"{type(error).__name__}{': ' + detail if detail else ''}"


def freezeModel(model: BaseSRLModel) -> BaseSRLModel:
    """
    Put the torch modules a model holds in eval mode and stop their gradients (dropout, batch-norm statistics and
    weights all stay as trained).

    :param model: a loaded SRL model
    :return: the same model
    """

    for value in vars(model).values():
        if isinstance(value, torch.nn.Module):
            value.eval()
            value.requires_grad_(False)
            if not any(parameter.is_cuda for parameter in value.parameters()):
                value.to(memory_format=torch.channels_last)  # the images' own layout: no conversion per call
    return model


def loadSRLModel(folder: str, device: str = "cpu") -> BaseSRLModel:
    """
    Rebuild a trained model from its folder; the class is looked up by the registered name in exp_config.json,
    never imported from the folder.

    :param folder: a model folder
    :param device: torch device
    :return: the model
    :raises ValueError: missing, foreign or corrupt folder, or the model's ``load`` failed in any way (one line)
    """
    config = readExpConfig(folder)
    name = config["srl_model"]
    registered_srl = registeredSRL()
    if name not in registered_srl or registered_srl[name][1] is not SRLType.LEARNED:
        raise ValueError(f"{folder!r} holds an SRL model {name!r} that is not installed; installed learned models: "
                         f"{', '.join(learnedModels()) or 'none'}{failedSRLPluginsText(name)}")
    model_class = registered_srl[name][0]
    major = apiMajor(config.get("api_version", model_class.API_VERSION))
    if major != model_class.API_VERSION:
        raise ValueError(f"{folder!r} was written for SRL API version {config.get('api_version')}, this srl-toolbox "
                         f"reads version {model_class.API_VERSION}")
    missing = missingWeights(folder, config)
    if missing:
        raise ValueError(f"{folder!r} lacks its weights file(s): {', '.join(missing)}")
    try:
        return model_class.load(folder, device=device)
    except ValueError as error:  # the contract's refusal: kept (on one line)
        if "\n" not in str(error):
            raise
        raise ValueError(" ".join(str(error).split())) from None
    except Exception as error:  # a plugin's load that breaks the contract (KeyError for damaged weights...)
        raise ValueError(f"the {name!r} SRL model in {folder!r} failed to load: {_errorText(error)}") from None


def checkSRLModel(folder: str) -> BaseSRLModel:
    """
    Load a model on the CPU and encode one frame of its image shape (one forward pass), the way the RL side calls it.

    :param folder: a model folder
    :return: the frozen model
    :raises ValueError: it does not load, ``getState`` fails, or gives anything but finite floats of shape
        (1, state_dim) (one line naming the model and its folder)
    """
    model = freezeModel(loadSRLModel(folder, device="cpu"))
    name = readExpConfig(folder)["srl_model"]
    channels, height, width = model.img_shape
    # a fixed ramp (not a blank frame, which a per-image standardisation would turn into NaN), no random numbers drawn
    frame = (np.arange(height * width * channels) % 256).astype(np.uint8).reshape(1, height, width, channels)
    what = f"the {name!r} SRL model in {folder!r}"
    try:
        with torch.inference_mode():
            states = np.asarray(model.getState(frame))
    except Exception as error:
        raise ValueError(f"{what} failed to encode a {channels}x{height}x{width} frame: {_errorText(error)}") from None
    if states.shape != (1, model.state_dim):
        raise ValueError(f"{what} breaks the SRL model contract: getState gave shape {states.shape} for one "
                         f"{channels}x{height}x{width} frame, expected (1, {model.state_dim}) (its state_dim)")
    if not np.issubdtype(states.dtype, np.floating):
        raise ValueError(f"{what} breaks the SRL model contract: getState gave {states.dtype} states, expected "
                         f"float32")
    if not np.all(np.isfinite(states)):
        raise ValueError(f"{what} breaks the SRL model contract: getState gave non-finite states (NaN or inf) for "
                         f"a {channels}x{height}x{width} frame")
    return model


# the envs accept the models registered here (a model registered in this process only, too) as learned ones
addLearnedModelNames(learnedModels)
