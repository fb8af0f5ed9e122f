"""td3: Twin Delayed DDPG (Stable-Baselines3 TD3), continuous actions."""
from stable_baselines3 import TD3

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.hyperparams import NON_NEGATIVE, Hyperparam
from rl_baselines.rl_algorithm.off_policy import TAU, OffPolicyRLObject, noiseHyperparams, replayHyperparams


class TD3Model(OffPolicyRLObject):
    """TD3 with SB3's defaults (learning rate 1e-3, batches of 256, actor updated every 2 critic updates) and
    Gaussian exploration noise of std 0.1."""

    SB3_CLASS = TD3
    NAME = "td3"
    ACTION_TYPES = (ActionType.CONTINUOUS,)
    HYPERPARAMS = {
        **replayHyperparams(learning_rate=1e-3, batch_size=256),
        "tau": TAU,
        "policy_delay": Hyperparam(2, "critic updates per actor update", bounds=(1, None), search=(1, 5)),
        "target_policy_noise": Hyperparam(0.2, "std of the noise on the target actions", bounds=NON_NEGATIVE,
                                          search=(0.0, 0.5)),
        "target_noise_clip": Hyperparam(0.5, "clip of the target action noise", bounds=NON_NEGATIVE),
        **noiseHyperparams("normal", 0.1),
    }
