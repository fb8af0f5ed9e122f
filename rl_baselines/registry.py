"""Re-export shim (published path): this module's contents live in :mod:`rl_baselines.core.registry`."""
from rl_baselines.core.registry import ENTRY_POINT_GROUP, PluginLoadWarning, loadRegisteredRL, supportingAlgorithms

__all__ = ["ENTRY_POINT_GROUP", "PluginLoadWarning", "loadRegisteredRL", "supportingAlgorithms"]
