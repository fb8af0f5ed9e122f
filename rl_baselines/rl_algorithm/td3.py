"""td3: Twin Delayed DDPG (Stable-Baselines3 TD3), continuous actions."""
from stable_baselines3 import TD3

from rl_baselines.core.algo_types import ActionType
from rl_baselines.rl_algorithm.off_policy import REPLAY_DEFAULTS, NoiseType, OffPolicyRLObject, replaySearchSpace


class TD3Model(OffPolicyRLObject):
    """TD3 with SB3's defaults (learning rate 1e-3, batches of 256, actor updated every 2 critic updates) and
    Gaussian exploration noise of std 0.1."""

    SB3_CLASS = TD3
    NAME = "td3"
    ACTION_TYPES = (ActionType.CONTINUOUS,)
    DEFAULT_HYPERPARAMS = {
        **REPLAY_DEFAULTS,
        "learning_rate": 1e-3,
        "batch_size": 256,
        "tau": 0.005,
        "policy_delay": 2,
        "target_policy_noise": 0.2,
        "target_noise_clip": 0.5,
        "noise_type": NoiseType("normal"),
        "noise_std": 0.1,
    }

    @classmethod
    def getOptParam(cls) -> dict:
        return {
            **replaySearchSpace(),
            "tau": (float, (0.001, 0.05), "log"),
            "policy_delay": (int, (1, 5)),
            "target_policy_noise": (float, (0.0, 0.5)),
            "noise_type": (list, ["none", "normal", "ou"]),
            "noise_std": (float, (0.0, 1.0)),
        }
