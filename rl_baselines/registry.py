"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`rl_baselines.core.registry` instead. Importing this module re-exports the names it always had and
emits a ``DeprecationWarning`` naming the new path (srl_toolbox.deprecation); the project's own modules never import
it.
"""
from rl_baselines.core.registry import ENTRY_POINT_GROUP, PluginLoadWarning, loadRegisteredRL, supportingAlgorithms
from srl_toolbox.deprecation import warnMovedModule

__all__ = ["ENTRY_POINT_GROUP", "PluginLoadWarning", "loadRegisteredRL", "supportingAlgorithms"]

warnMovedModule("rl_baselines.registry", "rl_baselines.core.registry")
