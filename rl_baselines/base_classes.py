"""Re-export shim (published path): this module's contents live in :mod:`rl_baselines.core.base` and
:mod:`rl_baselines.rl_algorithm.sb3_base`."""
from rl_baselines.core.base import (
    MANIFEST_MEMBER,
    SB3_STATE_FILE,
    BaseRLObject,
    TrainCallback,
    notifyCleanPoint,
    strToBool,
)
from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject, linearSchedule

__all__ = ["BaseRLObject", "MANIFEST_MEMBER", "SB3_STATE_FILE", "StableBaselinesRLObject", "TrainCallback",
           "linearSchedule", "notifyCleanPoint", "strToBool"]
