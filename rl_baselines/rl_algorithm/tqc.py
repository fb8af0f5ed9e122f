"""tqc: Truncated Quantile Critics (sb3-contrib TQC), continuous actions."""
import inspect
from typing import Any

from sb3_contrib import TQC
from sb3_contrib.tqc.policies import TQCPolicy

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.hyperparams import NON_NEGATIVE, Hyperparam
from rl_baselines.rl_algorithm.off_policy import ENT_COEF, TAU, OffPolicyRLObject, replayHyperparams

# The critics every run builds: sb3-contrib's policy defaults (no flag changes them).
_POLICY_DEFAULTS = inspect.signature(TQCPolicy.__init__).parameters
N_QUANTILES: int = _POLICY_DEFAULTS["n_quantiles"].default
N_CRITICS: int = _POLICY_DEFAULTS["n_critics"].default


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

    @classmethod
    def checkHyperparams(cls, hyperparams: dict[str, Any]) -> None:
        """Also refuses dropping every quantile of a critic: the target would keep none, and the critic loss (the mean
        over an empty target) is NaN at every update, so the critics never learn."""
        super().checkHyperparams(hyperparams)
        dropped = int(hyperparams["top_quantiles_to_drop_per_net"])
        if dropped >= N_QUANTILES:
            raise ValueError(f"hyperparameter 'top_quantiles_to_drop_per_net' must be at most {N_QUANTILES - 1}, got "
                             f"{dropped}: each of the {N_CRITICS} critics has {N_QUANTILES} quantiles, and dropping "
                             f"{dropped} of each leaves no target quantile (the critics would never learn)")
