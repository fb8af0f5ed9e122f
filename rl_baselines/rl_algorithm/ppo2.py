"""ppo2: Proximal Policy Optimization (Stable-Baselines3 PPO), discrete and continuous actions."""
from stable_baselines3 import PPO

from rl_baselines.core.hyperparams import CLIP_NORM, DISCOUNT, NON_NEGATIVE, POSITIVE, Hyperparam, Interval, NoneOrPositive
from rl_baselines.rl_algorithm.augmented_buffers import AugmentedRolloutBuffer
from rl_baselines.rl_algorithm.drac import AugmentLossChoice
from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject


class PPO2Model(AugmentLossChoice, StableBaselinesRLObject):
    """
    PPO with short rollouts (n_steps 128, as the old toolbox) and SB3's optimiser settings (10 epochs, constant
    learning rate 3e-4), chosen by measurement (the README's algorithm section).
    """

    SB3_CLASS = PPO
    NAME = "ppo2"
    LOG_INTERVAL = 1024
    SAVE_INTERVAL = 4096
    # Four envs per update: a learned or mapped state trapped at a wall far less often, the arm sooner, raw pixels
    # as soon in steps (docs/srl.md, "Four envs per update"); faster on images too.
    DEFAULT_ENVS = 4
    AUGMENTED_BUFFER = AugmentedRolloutBuffer  # --augment with --augment-loss rad (drac: DrAC's regulariser)
    NORMALISED_ADVANTAGES = "minibatches"
    # From raw pixels the CNN's minibatches train in shards, one per torch thread (auto: the run's share of the
    # cores), where torch's own threads lost on SmallCNN and MediumCNN (docs/benchmarks.md, "ppo2's pixel update in
    # shards")
    SHARDED_PIXEL_UPDATES = True
    # MediumCNN: NatureCNN's learning on both robots' tasks (as many seeds at the threshold, in no more steps) at
    # 1.4-1.5x its rate (docs/benchmarks.md, "MediumCNN against NatureCNN"; the README's features extractors)
    DEFAULT_FEATURES_EXTRACTOR = "medium"
    HYPERPARAMS = {
        "n_steps": Hyperparam(128, "steps per env between updates", bounds=(1, None), search=(32, 2048)),
        # >= 2: SB3 normalises the advantages over each minibatch (its assertion, batch_size > 1)
        "batch_size": Hyperparam(64, "minibatch size", bounds=(2, None), search=[32, 64, 128, 256]),
        "n_epochs": Hyperparam(10, "epochs over each rollout", bounds=(1, None), search=(1, 10)),
        "learning_rate": Hyperparam(3e-4, "Adam learning rate", bounds=POSITIVE, search=(1e-5, 1e-2, "log")),
        "gamma": Hyperparam(0.99, "discount factor", bounds=DISCOUNT, search=(0.9, 0.9999)),
        "gae_lambda": Hyperparam(0.95, "GAE lambda", bounds=Interval(0, 1), search=(0.8, 1.0)),
        "clip_range": Hyperparam(0.2, "PPO clipping range", bounds=POSITIVE, search=(0.1, 0.4)),
        "ent_coef": Hyperparam(0.01, "entropy bonus weight", bounds=NON_NEGATIVE, search=(1e-8, 0.1, "log")),
        "vf_coef": Hyperparam(0.5, "value loss weight", bounds=NON_NEGATIVE, search=(0.0, 1.0)),
        "max_grad_norm": Hyperparam(0.5, "gradient clipping norm", bounds=CLIP_NORM, search=(0.3, 5.0)),
        # From raw pixels 0.2: unclipped, the shared CNN's value loss spikes and the policy collapses (README).
        "clip_range_vf": Hyperparam(NoneOrPositive("none"), "clip each value prediction to within this of the "
                                    "rollout's (none: unclipped)", pixel_default=NoneOrPositive("0.2")),
        "target_kl": Hyperparam(NoneOrPositive("none"), "stop an update's epochs early once the approximate KL to the "
                                "rollout's policy passes 1.5 x this (none: never)"),
    }
