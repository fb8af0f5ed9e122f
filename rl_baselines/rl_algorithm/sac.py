"""sac: Soft Actor-Critic (Stable-Baselines3 SAC), continuous actions."""
from stable_baselines3 import SAC

from rl_baselines.core.algo_types import ActionType
from rl_baselines.rl_algorithm.off_policy import ENT_COEF, TAU, OffPolicyRLObject, replayHyperparams


class SACModel(OffPolicyRLObject):
    """
    SAC with a learned entropy coefficient (``--ent-coef auto``; a number fixes it) and batches of 64, the old
    toolbox's defaults; ``--ent-coef`` and ``--batch-size`` set them.
    """

    SB3_CLASS = SAC
    NAME = "sac"
    ACTION_TYPES = (ActionType.CONTINUOUS,)
    HYPERPARAMS = {
        **replayHyperparams(learning_rate=3e-4, batch_size=64),
        "tau": TAU,
        "ent_coef": ENT_COEF,
    }
