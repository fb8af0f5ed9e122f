"""ars: Augmented Random Search (Mania, Guy and Recht, 2018) with a linear policy, discrete and continuous actions.

Each iteration draws ``num_population`` directions delta_k, plays one episode with each of ``M + noise * delta_k``
and ``M - noise * delta_k`` (spread over the ``--num-cpu`` envs, see policies.PopulationRunner), keeps the
``top_population`` directions whose better episode is best, and moves the matrix:

    M += step_size / max(top * std(top returns), 1 / max_step_amplitude) * sum_top (r+ - r-) delta_k

V1 acts on the observations as they come; V2 first normalises them with the running mean and standard deviation of
the states seen by the candidates, updated after each iteration (the paper's V2). ARS therefore removes the
VecNormalize that makeEnv adds for state observations (see policies.py): V2's statistics live in the model file,
and V1 sees the states unscaled, as in the paper (no vecnormalize.npz is written beside an ARS model).
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch
from stable_baselines3.common.vec_env import VecEnv

from rl_baselines.core.algo_types import AlgoType
from rl_baselines.core.base import TrainCallback, notifyCleanPoint
from rl_baselines.core.checkpointing import Checkpoint
from rl_baselines.core.hyperparams import POPULATION, POSITIVE, Hyperparam
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.evolution_strategies.policies import (
    CENTRE,
    PopulationRunner,
    StateNormaliser,
    actionDimension,
    actionProbabilities,
    flatObservations,
    outputsToActions,
    withoutVecNormalize,
)
from rl_baselines.rl_algorithm.torch_base import TorchRLObject
from rl_baselines.runs.run_logging import logScalars


def arsUpdate(matrix: np.ndarray, deltas: np.ndarray, returns_pos: np.ndarray, returns_neg: np.ndarray,
              step_size: float, top: int, max_step_amplitude: float) -> np.ndarray:
    """
    One ARS step.

    :param matrix: the policy matrix (features, outputs)
    :param deltas: the directions (population, features, outputs)
    :param returns_pos: the return of ``matrix + noise * deltas[k]``, per direction
    :param returns_neg: the return of ``matrix - noise * deltas[k]``, per direction
    :param step_size: alpha
    :param top: how many directions (the best by max(r+, r-)) make the step
    :param max_step_amplitude: the step is at most ``step_size * max_step_amplitude`` times the direction sum
        (it bounds the division by the returns' standard deviation, which can be 0)
    :return: the new matrix
    """
    best = np.argsort(-np.maximum(returns_pos, returns_neg), kind="stable")[:top]
    reward_std = np.concatenate([returns_pos[best], returns_neg[best]]).std()
    scale = step_size / max(top * reward_std, 1.0 / max_step_amplitude)
    step = np.tensordot(returns_pos[best] - returns_neg[best], deltas[best], axes=1)
    return matrix + scale * step


class ARSModel(TorchRLObject):
    """
    ARS with a linear policy ``outputs = normalised(obs) @ M`` (M starts at zero): continuous actions are the
    outputs clipped to the action bounds, discrete ones their argmax (softmax samples with ``--deterministic false``).
    Images are flattened and scaled to [0, 1].
    """

    NAME = "ars"
    ALGO_TYPE = AlgoType.EVOLUTION_STRATEGIES
    # In the order of the search space (the sampler draws in this order).
    HYPERPARAMS: ClassVar[dict[str, Hyperparam]] = {
        "num_population": Hyperparam(10, "directions per iteration (2x episodes)", bounds=POPULATION,
                                     search=(2, 50)),
        "top_population": Hyperparam(2, "best directions that make the step", bounds=(1, None), search=(1, 5)),
        "exploration_noise": Hyperparam(0.02, "scale of the perturbations", bounds=POSITIVE,
                                        search=(1e-3, 0.1, "log")),
        "step_size": Hyperparam(0.02, "step size alpha", bounds=POSITIVE, search=(1e-3, 0.1, "log")),
        "max_step_amplitude": Hyperparam(10.0, "bound on the step, in step sizes", bounds=(1e-3, None),
                                         search=(1.0, 100.0)),
        "algo_type": Hyperparam("v2", "v1: raw states, v2: states normalised by running statistics",
                                choices=("v1", "v2"), search=["v1", "v2"]),
        # argmax actions while evaluating (and when playing the result), the ARS paper's deterministic linear policy:
        # sampling the softmax of the small outputs of a young M plays almost uniformly at random, and ARS then
        # learns nothing (CartPole-v1, 30k steps, seeds 0-2: last-20-episode mean 31, 88, 70; argmax: 265, 421, 461)
        "deterministic": Hyperparam(True, "argmax actions while evaluating (and when playing the result)"),
    }
    # hyperparam_search keeps a trial's top_population at most its num_population (checkHyperparams refuses more)
    SEARCH_AT_MOST: ClassVar[dict[str, str]] = {"top_population": "num_population"}
    # train() calls notifyCleanPoint between iterations.
    CHECKPOINT_AT_CLEAN_POINTS = True
    # The policy matrix starts at zero: no torch generator to seed.
    SEEDED_GENERATORS = ("rng",)

    def __init__(self) -> None:
        super().__init__()
        self.matrix: np.ndarray | None = None
        self.normaliser: StateNormaliser | None = None  # V2's statistics
        self.rng = np.random.default_rng(0)

    @classmethod
    def checkHyperparams(cls, hyperparams: dict[str, Any]) -> None:
        super().checkHyperparams(hyperparams)
        if hyperparams["top_population"] > hyperparams["num_population"]:
            raise ValueError(f"top_population ({hyperparams['top_population']}) cannot exceed num_population "
                             f"({hyperparams['num_population']})")

    @classmethod
    def makeEnv(cls, settings: RunSettings, env_kwargs: dict[str, Any] | None = None,
                load_path_normalise: str | None = None) -> VecEnv:
        # V2 normalises states itself, with statistics saved in the model (see the module docstring).
        return withoutVecNormalize(super().makeEnv(settings, env_kwargs, load_path_normalise))

    # --- policy ----------------------------------------------------------------------------------------------

    def normalise(self, observation: np.ndarray) -> np.ndarray:
        """
        :param observation: a batch of observations
        :return: flat features, normalised by the running statistics for V2
        """
        features = flatObservations(observation)
        return features if self.hyperparams["algo_type"] == "v1" else self.normaliser.normalise(features)

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None,
                  deterministic: bool = False) -> np.ndarray:
        outputs = self.normalise(observation) @ self.matrix
        deterministic = deterministic or self.hyperparams["deterministic"]
        return outputsToActions(outputs, self.action_space, deterministic, self.rng)

    def getActionProba(self, observation: np.ndarray, dones: np.ndarray | None = None) -> np.ndarray:
        """:return: one-hot rows on the argmax with ``deterministic`` (the default), else the softmax it samples"""
        outputs = self.normalise(observation) @ self.matrix
        return actionProbabilities(outputs, self.action_space, bool(self.hyperparams["deterministic"]))

    # --- persistence -------------------------------------------------------------------------------------------

    def modelState(self) -> dict[str, Any]:
        return {"matrix": torch.as_tensor(self.matrix), "normaliser": self.normaliser.toDict()}

    def buildModel(self) -> None:
        """A new model: the zero matrix, and empty statistics for V2."""
        n_features = int(np.prod(self.observation_space.shape))
        self.matrix = np.zeros((n_features, actionDimension(self.action_space)))
        self.normaliser = StateNormaliser(n_features)

    def setModelState(self, state: dict[str, Any]) -> None:
        n_features = int(np.prod(self.observation_space.shape))
        matrix = state["matrix"].numpy().astype(np.float64)
        if matrix.shape != (n_features, actionDimension(self.action_space)):
            raise ValueError(f"matrix of shape {matrix.shape} does not fit {n_features} features")
        self.matrix = matrix
        self.normaliser = StateNormaliser.fromDict(state["normaliser"], n_features)

    # --- training --------------------------------------------------------------------------------------------

    def train(self, env: Any, total_timesteps: int, hyperparams: dict[str, Any], callback: TrainCallback,
              logger: Any, settings: RunSettings, checkpoint: Checkpoint | None = None) -> None:
        self.prepareTraining(env, hyperparams, settings)
        self.restoreTrainingState(checkpoint)  # train --resume: self.rng (the model file holds the matrix and statistics)
        population, top = int(self.hyperparams["num_population"]), int(self.hyperparams["top_population"])
        noise = float(self.hyperparams["exploration_noise"])
        deterministic = bool(self.hyperparams["deterministic"])
        normalising = self.hyperparams["algo_type"] == "v2"
        runner = PopulationRunner(self.env, self, callback)
        end_timesteps = self.num_timesteps + total_timesteps
        while True:
            deltas = self.rng.standard_normal((population, *self.matrix.shape))
            # Candidate 2k plays M + noise * delta_k, candidate 2k + 1 plays M - noise * delta_k.
            perturbations = noise * np.repeat(deltas, 2, axis=0) * np.tile([1.0, -1.0], population)[:, None, None]

            def act(observation: np.ndarray, assigned: np.ndarray, perturbations: np.ndarray = perturbations
                    ) -> np.ndarray:
                if normalising:
                    self.normaliser.accumulate(flatObservations(observation[assigned != CENTRE]))
                offsets = np.where((assigned == CENTRE)[:, None, None], 0.0, perturbations[assigned])
                outputs = np.einsum("nf,nfo->no", self.normalise(observation), self.matrix + offsets)
                return outputsToActions(outputs, self.action_space, deterministic, self.rng)

            returns = runner.run(2 * population, act, end_timesteps)
            if returns is None:
                break
            self.matrix = arsUpdate(self.matrix, deltas, returns[0::2], returns[1::2],
                                    float(self.hyperparams["step_size"]), top,
                                    float(self.hyperparams["max_step_amplitude"]))
            if normalising:  # between iterations only, so every candidate sees the same normalisation
                self.normaliser.commit()
            logScalars(callback, self.num_timesteps, {"train/mean_return": float(np.mean(returns)),
                                                      "train/max_return": float(np.max(returns))})
            notifyCleanPoint(callback, self.num_timesteps)  # between iterations: an exact checkpoint
        runner.warnIfNothingLearned(2 * population)
        self.env.close()
