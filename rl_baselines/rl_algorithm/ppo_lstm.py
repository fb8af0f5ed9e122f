"""ppo_lstm: PPO with an LSTM policy (sb3-contrib RecurrentPPO), discrete and continuous actions.

The LSTM state is carried from one step to the next for each env separately, and reset when that env's episode
ends, while acting (getAction) as while training; a checkpoint keeps the states the next rollout starts from, so a
resumed run goes on from them.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
import torch
from sb3_contrib import RecurrentPPO
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from torch import nn

from rl_baselines.core.hyperparams import LAYER_UNITS, Hyperparam
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.rl_algorithm.kept_settings import policyKeywords, refuseOtherThanSaved, savedPolicySettings
from rl_baselines.rl_algorithm.model_data import readModelData
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.rl_algorithm.sb3_base import StableBaselinesRLObject
from srl_toolbox.cli import UsageError
from srl_toolbox.files import writeNpz

ACTIVATION_CLASSES = {"tanh": nn.Tanh, "relu": nn.ReLU}
# The hyperparameters that are keywords of the policy (its policy_kwargs), which a continued model keeps
POLICY_SETTINGS = ("lstm_hidden_size", "activation_fn", "ortho_init")
# A checkpoint's LSTM states (in its training state): those the next rollout starts from
LSTM_STATE_FILE = "lstm_states.npz"


class PPOLSTMModel(StableBaselinesRLObject):
    """RecurrentPPO with ppo2's settings (rollouts of 128 steps per env, 10 epochs, learning rate 3e-4, entropy
    0.01) and sb3-contrib's one-layer LSTM of 256 units in front of the actor and of the critic. The policy's settings
    (:data:`POLICY_SETTINGS`) are those a continued model was saved with
    (:mod:`rl_baselines.rl_algorithm.kept_settings`).
    """

    SB3_CLASS = RecurrentPPO
    NAME = "ppo_lstm"
    POLICIES = {"pixels": "CnnLstmPolicy", "state": "MlpLstmPolicy"}
    LOG_INTERVAL = 1024
    SAVE_INTERVAL = 4096
    ACTIVATIONS = ("tanh", "relu")
    NORMALISED_ADVANTAGES = "every_minibatch"  # (sb3-contrib normalises a last minibatch of 1 sample too: NaN)
    # ppo2's PPO hyperparameters, searched over the same ranges (batches of 128), then the policy's (not searched).
    HYPERPARAMS = {
        **PPO2Model.HYPERPARAMS,
        "batch_size": dataclasses.replace(PPO2Model.HYPERPARAMS["batch_size"], default=128),
        # SB3's unclipped value update from raw pixels too (ppo2's pixel default was measured for ppo2 only)
        "clip_range_vf": dataclasses.replace(PPO2Model.HYPERPARAMS["clip_range_vf"], pixel_default=None),
        # policy keywords (the RL Zoo's recurrent settings use 64 units, ReLU and no orthogonal init)
        "lstm_hidden_size": Hyperparam(256, "LSTM units", bounds=LAYER_UNITS),
        "activation_fn": Hyperparam("tanh", "activation of the MLP layers", choices=ACTIVATIONS),
        "ortho_init": Hyperparam(True, "orthogonal initialisation of the weights"),
    }

    @classmethod
    def gpuHelps(cls, image_observations: bool) -> bool:
        """:return: True: its LSTM of 256 units trains faster on a GPU than on one CPU thread, on a state too"""
        return True

    @classmethod
    def threadsHelp(cls, image_observations: bool) -> bool:
        """:return: False: one CPU thread trains it faster than two, on a state and on images (CnnLstmPolicy)
        (measured on 2 cores: docs/benchmarks.md, "Torch threads on images: td3, ...")"""
        return False

    def __init__(self) -> None:
        super().__init__()
        # (hidden, cell) states, each (n_layers, n_envs, hidden size); None until the first action.
        self._lstm_states: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def makeModelKwargs(cls, settings: RunSettings, hyperparams: dict[str, Any], env: Any) -> dict[str, Any]:
        """Move the policy's own settings (LSTM size, activation, initialisation) into ``policy_kwargs``; a continued
        model keeps its own (:func:`rl_baselines.rl_algorithm.kept_settings.policyKeywords`)."""
        return policyKeywords(settings, super().makeModelKwargs(settings, hyperparams, env), POLICY_SETTINGS,
                              cls.policyKeyword)

    @classmethod
    def policyKeyword(cls, name: str, value: Any) -> Any:
        """:return: the policy keyword value of one of :data:`POLICY_SETTINGS` (an activation's name: its class)"""
        if name == "lstm_hidden_size":
            return int(value)
        if name == "ortho_init":
            return bool(value)
        activation = str(value).lower()
        if activation not in ACTIVATION_CLASSES:
            raise UsageError(f"--activation-fn {activation!r}: valid choices: {', '.join(cls.ACTIVATIONS)}")
        return ACTIVATION_CLASSES[activation]

    @classmethod
    def savedHyperparams(cls, load_path: str) -> dict[str, Any] | None:
        """:return: the saved hyperparameters, the policy's settings read from the saved ``policy_kwargs`` too (a
            continued run uses and records them, not the defaults)"""
        saved = dict(super().savedHyperparams(load_path) or {})
        spec = {name: cls.HYPERPARAMS[name] for name in POLICY_SETTINGS}
        saved.update(savedPolicySettings(readModelData(load_path), spec, cls.parserHyperParam, cls.policyKeyword))
        return saved

    @classmethod
    def checkSettings(cls, settings: Any) -> Any:
        """
        Also refuses a policy setting other than the continued model's (``--load-rl-model-path``), before anything is
        written: its LSTM cannot change size (SB3 failed on loading its weights), and its policy is rebuilt from its
        saved keywords.

        :param settings: the run's settings (a RunSettings or a TrainConfig)
        :raises ValueError: one line naming the given value and the model's
        """
        refuseOtherThanSaved(settings, POLICY_SETTINGS, cls.savedHyperparams, {
            "lstm_hidden_size": "has an LSTM of lstm_hidden_size {saved}, whose layers cannot change size",
            "activation_fn": "has a policy of activation_fn {saved}, which a continued model keeps",
            "ortho_init": "was initialised with ortho_init {saved}, which a continued model keeps"})
        return super().checkSettings(settings)

    def saveTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        """SB3's, and the LSTM states the next rollout starts from with the envs whose episode starts there
        (RecurrentPPO does not save them in its model file)."""
        super().saveTrainingState(folder, replay_buffer_folder)
        (pi_h, pi_c), (vf_h, vf_c) = self.model._last_lstm_states
        writeNpz(os.path.join(folder, LSTM_STATE_FILE), {
            "pi_h": pi_h.cpu().numpy(), "pi_c": pi_c.cpu().numpy(), "vf_h": vf_h.cpu().numpy(),
            "vf_c": vf_c.cpu().numpy(), "episode_starts": np.asarray(self.model._last_episode_starts, dtype=bool)})

    def loadTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        """SB3's (the envs play their episodes in progress again to the checkpoint), then the LSTM states the
        rollout goes on from; a checkpoint without them (an earlier version's) starts them from zeros."""
        super().loadTrainingState(folder, replay_buffer_folder)
        path = os.path.join(folder, LSTM_STATE_FILE)
        if not os.path.isfile(path):
            return
        device = self.model.device
        with np.load(path, allow_pickle=False) as saved:
            states = {name: torch.as_tensor(saved[name], device=device) for name in ("pi_h", "pi_c", "vf_h", "vf_c")}
            starts = saved["episode_starts"].copy()
        self.model._last_lstm_states = RNNStates((states["pi_h"], states["pi_c"]), (states["vf_h"], states["vf_c"]))
        self.model._last_episode_starts = starts

    def _stepInputs(self, observation: np.ndarray, dones: np.ndarray | None
                    ) -> tuple[tuple[np.ndarray, np.ndarray] | None, np.ndarray]:
        """
        :return: the LSTM states to start from (None: zeros, on the first call or when the number of envs changed)
            and which envs start a new episode (their state is zeroed)
        """
        n_envs = len(observation)
        if self._lstm_states is None or self._lstm_states[0].shape[1] != n_envs:
            return None, np.ones(n_envs, dtype=bool)
        starts = np.zeros(n_envs, dtype=bool) if dones is None else np.asarray(dones, dtype=bool).reshape(n_envs)
        return self._lstm_states, starts

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None,
                  deterministic: bool = False) -> np.ndarray:
        """
        :param observation: a batch of observations, one per env
        :param dones: which envs ended an episode at the step that returned ``observation``
        :param deterministic: take the most likely action
        :return: a batch of actions; each env's LSTM state moves one step on
        """
        states, episode_starts = self._stepInputs(observation, dones)
        action, self._lstm_states = self.model.predict(observation, state=states, episode_start=episode_starts,
                                                       deterministic=deterministic)
        return action

    def getActionProba(self, observation: np.ndarray, dones: np.ndarray | None = None) -> np.ndarray:
        """
        :return: the distribution of the action ``getAction(observation, dones)`` would take, as action
            probabilities (discrete) or the mean action (continuous); the LSTM states are left as they are
        """

        policy = self.inferencePolicy()
        states, episode_starts = self._stepInputs(observation, dones)
        if states is None:
            n_layers, _, hidden_size = policy.lstm_hidden_state_shape
            states = (np.zeros((n_layers, len(observation), hidden_size)),) * 2
        obs_tensor, _ = policy.obs_to_tensor(observation)
        with torch.no_grad():
            lstm_states = tuple(torch.as_tensor(state, dtype=torch.float32, device=policy.device) for state in states)
            starts = torch.as_tensor(episode_starts, dtype=torch.float32, device=policy.device)
            distribution = policy.get_distribution(obs_tensor, lstm_states, starts)[0].distribution
        if hasattr(distribution, "probs"):
            return distribution.probs.cpu().numpy()
        return distribution.mean.cpu().numpy()
