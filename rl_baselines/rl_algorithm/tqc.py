"""tqc: Truncated Quantile Critics (sb3-contrib TQC), continuous actions."""
from sb3_contrib import TQC

from rl_baselines.core.algo_types import ActionType
from rl_baselines.rl_algorithm.off_policy import REPLAY_DEFAULTS, EntCoef, OffPolicyRLObject, replaySearchSpace


class TQCModel(OffPolicyRLObject):
    """TQC: SAC with distributional critics whose top quantiles are dropped against overestimation; sb3-contrib's
    defaults (batches of 256, 2 of the 25 quantiles of each critic dropped, learned entropy coefficient)."""

    SB3_CLASS = TQC
    NAME = "tqc"
    ACTION_TYPES = (ActionType.CONTINUOUS,)
    DEFAULT_HYPERPARAMS = {
        **REPLAY_DEFAULTS,
        "learning_rate": 3e-4,
        "batch_size": 256,
        "tau": 0.005,
        "ent_coef": EntCoef("auto"),
        "top_quantiles_to_drop_per_net": 2,
    }

    @classmethod
    def getOptParam(cls) -> dict:
        return {
            **replaySearchSpace(),
            "tau": (float, (0.001, 0.05), "log"),
            "ent_coef": (list, ["auto", 0.1, 0.01, 0.001, 0.0001]),
            "top_quantiles_to_drop_per_net": (int, (0, 5)),
        }
