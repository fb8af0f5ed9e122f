"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`rl_baselines.core.base` and :mod:`rl_baselines.rl_algorithm.sb3_base` instead. Importing this
module re-exports the names it always had and emits a ``DeprecationWarning`` naming the new path
(srl_toolbox.deprecation); the project's own modules never import it.
"""
from rl_baselines.core.base import (
    MANIFEST_MEMBER,
    SB3_STATE_FILE,
    BaseRLObject,
    TrainCallback,
    notifyCleanPoint,
    strToBool,
)
from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject, linearSchedule
from srl_toolbox.deprecation import warnMovedModule

__all__ = ["BaseRLObject", "MANIFEST_MEMBER", "SB3_STATE_FILE", "StableBaselinesRLObject", "TrainCallback",
           "linearSchedule", "notifyCleanPoint", "strToBool"]

warnMovedModule("rl_baselines.base_classes", "rl_baselines.core.base and rl_baselines.rl_algorithm.sb3_base")
