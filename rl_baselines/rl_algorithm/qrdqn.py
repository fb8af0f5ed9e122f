"""qrdqn: Quantile-Regression DQN (sb3-contrib QRDQN), discrete actions."""
from sb3_contrib import QRDQN

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.hyperparams import Hyperparam, Interval
from rl_baselines.rl_algorithm.off_policy import OffPolicyRLObject, replayHyperparams


class QRDQNModel(OffPolicyRLObject):
    """
    QR-DQN with the old toolbox's deepq schedule: learning rate 1e-4, an update every 4 steps, the target network
    copied every 500 steps, epsilon from 1 to 0.01 over the first 10% of training (sb3-contrib's defaults, a
    target copy every 10k steps and 0.5% of exploration, are tuned for Atari's 10M-step runs).
    """

    SB3_CLASS = QRDQN
    NAME = "qrdqn"
    ACTION_TYPES = (ActionType.DISCRETE,)
    HYPERPARAMS = {
        **replayHyperparams(learning_rate=1e-4, batch_size=32, train_freq=4),
        "target_update_interval": Hyperparam(500, "env steps between target network copies", bounds=(1, None),
                                             search=(10, 10_000, "log")),
        "exploration_fraction": Hyperparam(0.1, "fraction of the run over which epsilon decays",
                                           bounds=Interval(0, 1), search=(0.01, 0.5)),
        "exploration_final_eps": Hyperparam(0.01, "epsilon at the end of the decay", bounds=Interval(0, 1),
                                            search=(0.0, 0.2)),
    }
