"""qrdqn: Quantile-Regression DQN (sb3-contrib QRDQN), discrete actions."""
from sb3_contrib import QRDQN

from rl_baselines.core.algo_types import ActionType
from rl_baselines.rl_algorithm.off_policy import REPLAY_DEFAULTS, OffPolicyRLObject, replaySearchSpace


class QRDQNModel(OffPolicyRLObject):
    """
    QR-DQN with the old toolbox's deepq schedule: learning rate 1e-4, an update every 4 steps, the target network
    copied every 500 steps, epsilon from 1 to 0.01 over the first 10% of training (sb3-contrib's defaults, a
    target copy every 10k steps and 0.5% of exploration, are tuned for Atari's 10M-step runs).
    """

    SB3_CLASS = QRDQN
    NAME = "qrdqn"
    ACTION_TYPES = (ActionType.DISCRETE,)
    DEFAULT_HYPERPARAMS = {
        **REPLAY_DEFAULTS,
        "learning_rate": 1e-4,
        "batch_size": 32,
        "train_freq": 4,
        "target_update_interval": 500,
        "exploration_fraction": 0.1,
        "exploration_final_eps": 0.01,
    }

    @classmethod
    def getOptParam(cls) -> dict:
        return {
            **replaySearchSpace(),
            "target_update_interval": (int, (10, 10_000), "log"),
            "exploration_fraction": (float, (0.01, 0.5)),
            "exploration_final_eps": (float, (0.0, 0.2)),
        }
