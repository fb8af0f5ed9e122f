"""Re-export shim (published path): this module's contents live in :mod:`rl_baselines.core.algo_types`."""
from rl_baselines.core.algo_types import ActionType, AlgoType

__all__ = ["ActionType", "AlgoType"]
