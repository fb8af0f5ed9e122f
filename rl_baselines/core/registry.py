"""registered_rl: every algorithm declared under the entry-point group ``srl_toolbox.rl_algorithms``.

The table keeps the old toolbox's shape, ``NAME: (CLASS, ALGO_TYPE, [ACTION_TYPES])``. Built-in algorithms are
declared in setup.py like any third-party plugin, so this module imports none of them by name. A plugin that fails
to import, is not a BaseRLObject, leaves an abstract method out, or was built for an API major version other than
1 (run through rl_baselines.core.plugin_v1) and 2 is
recorded in ``failed_plugins`` (name -> reason), reported once as a warning, and skipped; the others still load."""
from __future__ import annotations

import inspect
from typing import Any

from rl_baselines.core.algo_types import ActionType, AlgoType
from rl_baselines.core.base import BaseRLObject
from rl_baselines.core.plugin_v1 import SUPPORTED_API_VERSIONS, isV1
from srl_toolbox.plugins import SkippedPluginWarning, apiMajor, loadPlugins

ENTRY_POINT_GROUP = "srl_toolbox.rl_algorithms"

__all__ = ["ActionType", "AlgoType", "ENTRY_POINT_GROUP", "PluginLoadWarning", "failed_plugins",
           "loadRegisteredRL", "registered_rl", "supportingAlgorithms"]


# The arguments training passes to a version 2 algorithm's train, in order
V2_TRAIN_ARGUMENTS = ("env", "total_timesteps", "hyperparams", "callback", "logger", "settings", "checkpoint")


class PluginLoadWarning(SkippedPluginWarning):
    """An algorithm plugin was skipped."""


def _refusal(plugin: Any) -> str | None:
    """:return: why ``plugin`` cannot be used, or None when it fits the contract."""
    if not (isinstance(plugin, type) and issubclass(plugin, BaseRLObject)):
        return f"{plugin!r} is not a subclass of rl_baselines.core.base.BaseRLObject"
    major = apiMajor(getattr(plugin, "API_VERSION", None))
    if major not in SUPPORTED_API_VERSIONS:
        return (f"built for API version {plugin.API_VERSION}, this srl-toolbox provides API versions "
                f"{' and '.join(map(str, SUPPORTED_API_VERSIONS))}")
    if inspect.isabstract(plugin):
        return f"{plugin.__name__} is abstract: it does not implement {', '.join(sorted(plugin.__abstractmethods__))}"
    if not isinstance(plugin.ALGO_TYPE, AlgoType):
        return f"ALGO_TYPE {plugin.ALGO_TYPE!r} is not an AlgoType"
    if not plugin.ACTION_TYPES or not all(isinstance(a, ActionType) for a in plugin.ACTION_TYPES):
        return f"ACTION_TYPES {plugin.ACTION_TYPES!r} is not a non-empty list of ActionType"
    if not isV1(plugin):  # (version 1's train goes through its adapter)
        try:  # the call training makes (rl_baselines.core.plugin_v1.trainAlgorithm)
            inspect.signature(plugin.train).bind(None, *V2_TRAIN_ARGUMENTS)
        except TypeError:
            return (f"{plugin.__name__}.train{inspect.signature(plugin.train)} does not take the version 2 arguments "
                    f"(self, {', '.join(V2_TRAIN_ARGUMENTS)})")
    return None


def loadRegisteredRL(warn: bool = True) -> tuple[dict[str, tuple[type[BaseRLObject], AlgoType, list[ActionType]]],
                                                 dict[str, str]]:
    """
    Scan the entry points and build the algorithm table.

    :param warn: emit one PluginLoadWarning per skipped plugin
    :return: (registered algorithms, skipped plugins with their reasons)
    """
    plugins, failures = loadPlugins(ENTRY_POINT_GROUP, _refusal, "algorithm", PluginLoadWarning, warn)
    table = {name: (plugin, plugin.ALGO_TYPE, list(plugin.ACTION_TYPES)) for name, plugin in plugins.items()}
    return table, failures


def supportingAlgorithms(action_type: ActionType) -> list[str]:
    """
    :param action_type: discrete or continuous
    :return: the names of the registered algorithms that support it
    """
    return [name for name, (_, _, actions) in registered_rl.items() if action_type in actions]


registered_rl, failed_plugins = loadRegisteredRL()
