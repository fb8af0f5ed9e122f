"""registered_srl: every SRL model declared under the entry-point group ``srl_toolbox.srl_models``.

``NAME: (CLASS, SRLType)``. Built-in models are declared in setup.py like third-party ones. A plugin that fails to
import, is not a BaseSRLModel, leaves an abstract method out, or was built for another API major version is
recorded in ``failed_srl_plugins`` and skipped with one warning."""
from __future__ import annotations

import inspect
import os
from typing import Any

from environments.srl_env import addLearnedModelNames
from srl_models.base import BaseSRLModel, SRLType, readExpConfig
from srl_toolbox.plugins import SkippedPluginWarning, apiMajor, loadPlugins

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
    plugins, failures = loadPlugins(ENTRY_POINT_GROUP, _refusal, "SRL model", SRLPluginLoadWarning, warn)
    return {name: (plugin, plugin.SRL_TYPE) for name, plugin in plugins.items()}, failures


def learnedModels() -> list[str]:
    """:return: names of the registered models trained from datasets"""
    return [name for name, (_, srl_type) in registered_srl.items() if srl_type is SRLType.LEARNED]


def loadSRLModel(folder: str, device: str = "cpu") -> BaseSRLModel:
    """
    Rebuild a trained model from its folder; the class is looked up by the registered name in exp_config.json,
    never imported from the folder.

    :param folder: a model folder
    :param device: torch device
    :return: the model
    :raises ValueError: missing, foreign or corrupt folder (one line)
    """
    config = readExpConfig(folder)
    name = config["srl_model"]
    if name not in registered_srl or registered_srl[name][1] is not SRLType.LEARNED:
        raise ValueError(f"{folder!r} holds an SRL model {name!r} that is not installed; installed learned models: "
                         f"{', '.join(learnedModels()) or 'none'}")
    model_class = registered_srl[name][0]
    major = apiMajor(config.get("api_version", model_class.API_VERSION))
    if major != model_class.API_VERSION:
        raise ValueError(f"{folder!r} was written for SRL API version {config.get('api_version')}, this srl-toolbox "
                         f"reads version {model_class.API_VERSION}")
    missing = [f for f in config.get("weights", []) if not os.path.isfile(os.path.join(folder, f))]
    if missing:
        raise ValueError(f"{folder!r} lacks its weights file(s): {', '.join(missing)}")
    return model_class.load(folder, device=device)


registered_srl, failed_srl_plugins = loadRegisteredSRL()
# the envs accept the models registered here (a model registered in this process only, too) as learned ones
addLearnedModelNames(learnedModels)
