"""ppo2: Proximal Policy Optimization (Stable-Baselines3 PPO), discrete and continuous actions."""
from stable_baselines3 import PPO

from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject


class PPO2Model(StableBaselinesRLObject):
    """
    PPO with short rollouts (n_steps 128, as the old toolbox) and SB3's optimiser settings (10 epochs, constant
    learning rate 3e-4): on MobileRobotGymEnv-v0 with ground truth these reach a mean reward of 150 in about 28k
    steps, where the old toolbox's (4 epochs, 2.5e-4 decaying linearly) had not after 80k (docs/benchmarks.md).
    """

    SB3_CLASS = PPO
    NAME = "ppo2"
    LOG_INTERVAL = 1024
    SAVE_INTERVAL = 4096
    DEFAULT_HYPERPARAMS = {
        "n_steps": 128,
        "batch_size": 64,
        "n_epochs": 10,
        "learning_rate": 3e-4,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_range": 0.2,
        "ent_coef": 0.01,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
    }

    @classmethod
    def getOptParam(cls) -> dict:
        return {
            "n_steps": (int, (32, 2048)),
            "batch_size": (list, [32, 64, 128, 256]),
            "n_epochs": (int, (1, 10)),
            "learning_rate": (float, (1e-5, 1e-2), "log"),
            "gamma": (float, (0.9, 0.9999)),
            "gae_lambda": (float, (0.8, 1.0)),
            "clip_range": (float, (0.1, 0.4)),
            "ent_coef": (float, (1e-8, 0.1), "log"),
            "vf_coef": (float, (0.0, 1.0)),
            "max_grad_norm": (float, (0.3, 5.0)),
        }
