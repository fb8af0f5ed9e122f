"""tqc: Truncated Quantile Critics (sb3-contrib TQC), continuous actions."""
from sb3_contrib import TQC

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.hyperparams import NON_NEGATIVE, Hyperparam
from rl_baselines.rl_algorithm.off_policy import ENT_COEF, TAU, OffPolicyRLObject, replayHyperparams


class TQCModel(OffPolicyRLObject):
    """TQC: SAC with distributional critics whose top quantiles are dropped against overestimation; sb3-contrib's
    defaults (batches of 256, 2 of the 25 quantiles of each critic dropped, learned entropy coefficient)."""

    SB3_CLASS = TQC
    NAME = "tqc"
    ACTION_TYPES = (ActionType.CONTINUOUS,)
    HYPERPARAMS = {
        **replayHyperparams(learning_rate=3e-4, batch_size=256),
        "tau": TAU,
        "ent_coef": ENT_COEF,
        "top_quantiles_to_drop_per_net": Hyperparam(2, "top quantiles of each critic dropped", bounds=NON_NEGATIVE,
                                                    search=(0, 5)),
    }
