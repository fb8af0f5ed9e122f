"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`rl_baselines.core.algo_types` instead. Importing this module re-exports the names it always had
and emits a ``DeprecationWarning`` naming the new path (srl_toolbox.deprecation); the project's own modules never
import it.
"""
from rl_baselines.core.algo_types import ActionType, AlgoType
from srl_toolbox.deprecation import warnMovedModule

__all__ = ["ActionType", "AlgoType"]

warnMovedModule("rl_baselines.algo_types", "rl_baselines.core.algo_types")
