"""qrdqn: Quantile-Regression DQN (sb3-contrib QRDQN), discrete actions."""
from __future__ import annotations

from typing import Any

from sb3_contrib import QRDQN

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.hyperparams import Hyperparam, Interval
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.rl_algorithm.kept_settings import policyKeywords, refuseOtherThanSaved
from rl_baselines.rl_algorithm.off_policy import OffPolicyRLObject, replayHyperparams

# The search range of n_quantiles: the RL Zoo's (5, 200) up to 180. The loss builds batch_size x n_quantiles x
# n_quantiles float32 tensors; at the search's largest batch (256) more than 181 quantiles make each over 32 MiB,
# glibc's largest mmap threshold, so every one is a fresh kernel-zeroed mapping (the cost: README, qrdqn's row).
N_QUANTILES_SEARCH = (5, 180)
# Its bounds: at 1,000 such a tensor of the default batch (32) is 128 MiB; far more fills the memory in the first
# gradient step (a typo's 1e9 already while the network is built)
N_QUANTILES = Interval(1, 1000)


class QRDQNModel(OffPolicyRLObject):
    """
    QR-DQN with the old toolbox's deepq schedule: learning rate 1e-4, an update every 4 steps, the target network
    copied every 500 steps, epsilon from 1 to 0.01 over the first 10% of training (sb3-contrib's defaults, a
    target copy every 10k steps and 0.5% of exploration, are tuned for Atari's 10M-step runs), and sb3-contrib's
    200 quantiles (``n_quantiles``, a keyword of its policy).
    """

    SB3_CLASS = QRDQN
    NAME = "qrdqn"
    ACTION_TYPES = (ActionType.DISCRETE,)
    SEARCH_SUBSAMPLE_STEPS = (1, 2, 4, 8)  # the RL Zoo's sample_dqn_params (sample_qrdqn_params builds on it)
    HYPERPARAMS = {
        **replayHyperparams(learning_rate=1e-4, batch_size=32, train_freq=4),
        "target_update_interval": Hyperparam(500, "env steps between target network copies", bounds=(1, None),
                                             search=(10, 10_000, "log")),
        "exploration_fraction": Hyperparam(0.1, "fraction of the run over which epsilon decays",
                                           bounds=Interval(0, 1), search=(0.01, 0.5)),
        "exploration_final_eps": Hyperparam(0.01, "epsilon at the end of the decay", bounds=Interval(0, 1),
                                            search=(0.0, 0.2)),
        "n_quantiles": Hyperparam(200, "quantiles of the return distribution estimated for each action",
                                  bounds=N_QUANTILES, search=N_QUANTILES_SEARCH),
    }

    @classmethod
    def makeModelKwargs(cls, settings: RunSettings, hyperparams: dict[str, Any], env: Any) -> dict[str, Any]:
        """
        Move ``n_quantiles`` (a keyword of QRDQN's policy) into ``policy_kwargs``; a continued model
        (``settings.continue_from``) keeps its own, which :meth:`checkSettings` made sure any given value equals (SB3
        would replace its saved ``policy_kwargs`` whole: its CNN and optimiser settings with them).
        """
        return policyKeywords(settings, super().makeModelKwargs(settings, hyperparams, env), ["n_quantiles"],
                              lambda _name, value: int(value))

    @classmethod
    def checkSettings(cls, settings: Any) -> Any:
        """
        Also refuses an ``n_quantiles`` other than the continued model's (``--load-rl-model-path``), before anything
        is written: its quantile layer cannot change size (SB3 would fail on loading its weights).

        :param settings: the run's settings (a RunSettings or a TrainConfig)
        :raises ValueError: one line naming the given value and the model's
        """
        refuseOtherThanSaved(settings, ["n_quantiles"], cls.savedHyperparams, {
            "n_quantiles": "has a quantile network of n_quantiles {saved}, whose layers cannot change size"})
        return super().checkSettings(settings)
