"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`rl_baselines.runs.run_policy` instead. Importing this module re-exports the names it always had
and emits a ``DeprecationWarning`` naming the new path (srl_toolbox.deprecation); the project's own modules never
import it.
"""
from rl_baselines.runs.run_policy import (
    GOAL_OBSERVATION_KEYS,
    SUPPORTED_ENV_MODES,
    RunPolicy,
    agentObservationSpace,
    loadRunPolicy,
    readRunArgs,
    recordedSRLModelFolder,
)
from srl_toolbox.deprecation import warnMovedModule

__all__ = ["GOAL_OBSERVATION_KEYS", "RunPolicy", "SUPPORTED_ENV_MODES", "agentObservationSpace", "loadRunPolicy",
           "readRunArgs", "recordedSRLModelFolder"]

warnMovedModule("rl_baselines.run_policy", "rl_baselines.runs.run_policy")
