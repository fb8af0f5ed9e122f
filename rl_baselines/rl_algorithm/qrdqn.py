"""qrdqn: Quantile-Regression DQN (sb3-contrib QRDQN), discrete actions."""
from __future__ import annotations

import os
from typing import Any

from sb3_contrib import QRDQN

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.hyperparams import Hyperparam, Interval, givenFlags
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.rl_algorithm.off_policy import OffPolicyRLObject, replayHyperparams

# The search range of n_quantiles: the RL Zoo's (5, 200) up to 180. The loss builds batch_size x n_quantiles x
# n_quantiles float32 tensors; at the search's largest batch (256) more than 181 quantiles make each over 32 MiB,
# glibc's largest mmap threshold, so every one is a fresh kernel-zeroed mapping (the cost: README, qrdqn's row).
N_QUANTILES_SEARCH = (5, 180)


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
                                  bounds=(1, None), search=N_QUANTILES_SEARCH),
    }

    @classmethod
    def makeModelKwargs(cls, settings: RunSettings, hyperparams: dict[str, Any], env: Any) -> dict[str, Any]:
        """
        Move ``n_quantiles`` (a keyword of QRDQN's policy) into ``policy_kwargs``; a continued model
        (``settings.continue_from``) keeps its own, which :meth:`checkSettings` made sure any given value equals (SB3
        would replace its saved ``policy_kwargs`` whole: its CNN and optimiser settings with them).
        """
        kwargs = super().makeModelKwargs(settings, hyperparams, env)
        if getattr(settings, "continue_from", None):
            kwargs.pop("n_quantiles", None)
        elif "n_quantiles" in kwargs:
            kwargs["policy_kwargs"] = {**kwargs.get("policy_kwargs", {}), "n_quantiles": int(kwargs.pop("n_quantiles"))}
        return kwargs

    @classmethod
    def checkSettings(cls, settings: Any) -> Any:
        """
        Also refuses an ``n_quantiles`` other than the continued model's (``--load-rl-model-path``), before anything
        is written: its quantile layer cannot change size (SB3 would fail on loading its weights).

        :param settings: the run's settings (a RunSettings or a TrainConfig)
        :raises ValueError: one line naming the given value and the model's
        """
        is_run = isinstance(settings, RunSettings)
        load_path = settings.continue_from if is_run else getattr(settings, "load_rl_model_path", None)
        values = (settings.hyperparam_overrides if is_run else getattr(settings, "hyperparams", None)) or {}
        given = {**givenFlags(settings, ["n_quantiles"]), **values}
        if "n_quantiles" in given and load_path and os.path.isfile(load_path):
            try:
                saved = (cls.savedHyperparams(load_path) or {}).get("n_quantiles")
            except ValueError:
                saved = None  # the train command reports an unusable model itself
            if saved is not None and given["n_quantiles"] != saved:
                source = "--hyperparam-file/--hyperparam" if "n_quantiles" in values else "--n-quantiles"
                raise ValueError(f"n_quantiles {given['n_quantiles']} ({source}): {load_path} has a quantile network "
                                 f"of n_quantiles {saved}, whose layers cannot change size; valid: {saved}, or leave "
                                 "it out")
        return super().checkSettings(settings)
