"""trpo: Trust Region Policy Optimization (sb3-contrib TRPO), discrete and continuous actions."""
from sb3_contrib import TRPO

from rl_baselines.core.hyperparams import DISCOUNT, POSITIVE, Hyperparam, Interval
from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject


class TRPOModel(StableBaselinesRLObject):
    """
    TRPO: a natural-gradient policy step bounded by a KL divergence of 0.01 (the old toolbox's max_kl), then 10
    value-function epochs. Rollouts of 512 steps per env, chosen by measurement against the old toolbox's 128 and
    sb3-contrib's 2048 (the README's algorithm section).
    """

    SB3_CLASS = TRPO
    NAME = "trpo"
    LOG_INTERVAL = 1024
    SAVE_INTERVAL = 4096
    NORMALISED_ADVANTAGES = "rollout"  # the policy step's, over the whole rollout (the value epochs do not normalise)
    HYPERPARAMS = {
        "n_steps": Hyperparam(512, "steps per env between updates", bounds=(1, None), search=(32, 2048)),
        "batch_size": Hyperparam(128, "minibatch size of the value-function epochs", bounds=(1, None),
                                 search=[32, 64, 128, 256]),
        "learning_rate": Hyperparam(1e-3, "value-function learning rate", bounds=POSITIVE,
                                    search=(1e-5, 1e-2, "log")),
        "gamma": Hyperparam(0.99, "discount factor", bounds=DISCOUNT, search=(0.9, 0.9999)),
        "gae_lambda": Hyperparam(0.95, "GAE lambda", bounds=Interval(0, 1), search=(0.8, 1.0)),
        "target_kl": Hyperparam(0.01, "KL bound of the policy step", bounds=POSITIVE, search=(0.001, 0.1, "log")),
        "cg_max_steps": Hyperparam(15, "conjugate-gradient iterations", bounds=(1, None), search=(5, 30)),
        "cg_damping": Hyperparam(0.1, "damping of the Fisher-vector products", bounds=POSITIVE,
                                 search=(0.01, 0.5, "log")),
        "n_critic_updates": Hyperparam(10, "value-function epochs per update", bounds=(1, None), search=(1, 30)),
    }
