"""ddpg: Deep Deterministic Policy Gradient (Stable-Baselines3 DDPG), continuous actions."""
from stable_baselines3 import DDPG

from rl_baselines.core.algo_types import ActionType
from rl_baselines.rl_algorithm.off_policy import TAU, OffPolicyRLObject, noiseHyperparams, replayHyperparams


class DDPGModel(OffPolicyRLObject):
    """
    DDPG exploring with Ornstein-Uhlenbeck noise of std 0.2 and batches of 64 (the old toolbox's defaults; its
    separate actor/critic learning rates are one ``learning_rate`` in SB3). ``--noise-type normal`` switches to
    Gaussian noise, ``none`` turns exploration noise off.
    """

    SB3_CLASS = DDPG
    NAME = "ddpg"
    ACTION_TYPES = (ActionType.CONTINUOUS,)
    HYPERPARAMS = {
        **replayHyperparams(learning_rate=1e-3, batch_size=64),
        "tau": TAU,
        **noiseHyperparams("ou", 0.2),
    }
