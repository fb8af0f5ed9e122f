"""a2c: Advantage Actor-Critic (Stable-Baselines3 A2C), discrete and continuous actions."""
from stable_baselines3 import A2C

from rl_baselines.core.hyperparams import CLIP_NORM, DISCOUNT, NON_NEGATIVE, POSITIVE, Hyperparam, Interval
from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject


class A2CModel(StableBaselinesRLObject):
    """A2C with the old toolbox's defaults (n_steps 5, RMSprop, learning rate 7e-4)."""

    SB3_CLASS = A2C
    NAME = "a2c"
    HYPERPARAMS = {
        "n_steps": Hyperparam(5, "steps per env between updates", bounds=(1, None), search=(1, 100)),
        "learning_rate": Hyperparam(7e-4, "RMSprop learning rate", bounds=POSITIVE, search=(1e-5, 1e-1, "log")),
        "gamma": Hyperparam(0.99, "discount factor", bounds=DISCOUNT, search=(0.9, 0.9999)),
        "gae_lambda": Hyperparam(1.0, "GAE lambda (1: plain n-step returns)", bounds=Interval(0, 1),
                                 search=(0.8, 1.0)),
        "ent_coef": Hyperparam(0.01, "entropy bonus weight", bounds=NON_NEGATIVE, search=(1e-8, 0.1, "log")),
        "vf_coef": Hyperparam(0.5, "value loss weight", bounds=NON_NEGATIVE, search=(0.0, 1.0)),
        "max_grad_norm": Hyperparam(0.5, "gradient clipping norm", bounds=CLIP_NORM, search=(0.1, 5.0)),
        "rms_prop_eps": Hyperparam(1e-5, "RMSprop epsilon", bounds=POSITIVE, search=(1e-6, 1e-2, "log")),
    }

    @classmethod
    def threadsHelp(cls, image_observations: bool) -> bool:
        """:return: False: its updates of n_steps x n_envs frames run faster on one CPU thread than on two, on images
        too (measured on 2 cores: docs/benchmarks.md, "Torch threads per algorithm on images")"""
        return False
