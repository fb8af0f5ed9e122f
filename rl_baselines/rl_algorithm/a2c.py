"""a2c: Advantage Actor-Critic (Stable-Baselines3 A2C), discrete and continuous actions."""
from stable_baselines3 import A2C

from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject


class A2CModel(StableBaselinesRLObject):
    """A2C with the old toolbox's defaults (n_steps 5, RMSprop, learning rate 7e-4)."""

    SB3_CLASS = A2C
    NAME = "a2c"
    DEFAULT_HYPERPARAMS = {
        "n_steps": 5,
        "learning_rate": 7e-4,
        "gamma": 0.99,
        "gae_lambda": 1.0,
        "ent_coef": 0.01,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
        "rms_prop_eps": 1e-5,
    }

    @classmethod
    def getOptParam(cls) -> dict:
        return {
            "n_steps": (int, (1, 100)),
            "learning_rate": (float, (1e-5, 1e-1), "log"),
            "gamma": (float, (0.9, 0.9999)),
            "gae_lambda": (float, (0.8, 1.0)),
            "ent_coef": (float, (1e-8, 0.1), "log"),
            "vf_coef": (float, (0.0, 1.0)),
            "max_grad_norm": (float, (0.1, 5.0)),
            "rms_prop_eps": (float, (1e-6, 1e-2), "log"),
        }
