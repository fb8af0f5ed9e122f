"""cma-es: CMA-ES (the ``cma`` package) over the weights of a small policy network, discrete and continuous actions.

Each generation asks the strategy for ``num_population`` weight vectors, plays one episode with each, spread over
the ``--num-cpu`` envs (subprocesses), and tells it the episode returns. The policy kept, saved and played is the
best candidate ever evaluated (``xbest``, its return in ``best_return``), not the last one asked, together with the
state normalisation it was evaluated with (CMA-ES normalises states itself, see policies.py, so no vecnormalize.npz
is written beside its model). Continuing training (``--load-rl-model-path``) restarts the strategy from the saved
mean and step size (the covariance starts again from the identity), or from a ``sigma`` given for that run, other
than the saved model's hyperparameter (a ``mu`` given for it does nothing: the run warns and records the model's);
resuming a run (``--resume``) restores the whole strategy (covariance, evolution paths, counters: every numeric
attribute, saved as arrays and JSON, set back on a strategy built with the same options) and the generators, so it
goes on exactly; a run stopped mid-generation saves the strategy as it was at that generation's start (before it
was asked for candidates whose returns it was never told), and the resumed run plays that generation again.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
from stable_baselines3.common.vec_env import VecEnv

from rl_baselines.core.algo_types import AlgoType
from rl_baselines.core.base import TrainCallback, notifyCleanPoint
from rl_baselines.core.checkpointing import Checkpoint
from rl_baselines.core.hyperparams import POPULATION, Hyperparam
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.core.training_state import captureObjectState, restoreObjectState, writeNpz
from rl_baselines.evolution_strategies.policies import (
    CENTRE,
    PolicyNetwork,
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
from srl_toolbox.files import readJson, writeJson

# cma is imported where it is used only (a heavy dependency: it pulls in scipy.stats and matplotlib, over 1 s of
# CPU), because every train command imports this module through the registry, whatever the algorithm.
if TYPE_CHECKING:
    import cma

# What saveTrainingState writes besides TorchRLObject's: the strategy's arrays and its other values.
CMA_ARRAYS_FILE = "cma_arrays.npz"
CMA_VALUES_FILE = "cma.json"
# Width of the hidden layer of the policy for state observations (the old toolbox's).
HIDDEN_SIZE = 100
# Above this many weights the covariance stays diagonal (a full one costs n^2 memory and n^3 decompositions).
MAX_FULL_COVARIANCE_PARAMS = 2000


class CMAESModel(TorchRLObject):
    """
    CMA-ES policy search. The policy is an MLP (in -> 100, ReLU -> outputs) on normalised states, or a small CNN on
    images; discrete actions sample the softmax of its outputs (argmax with ``deterministic``), continuous ones are
    its outputs clipped to the action bounds.
    """

    NAME = "cma-es"
    ALGO_TYPE = AlgoType.EVOLUTION_STRATEGIES
    # Declared in the order of the former search space (the sampler draws in this order).
    HYPERPARAMS: ClassVar[dict[str, Hyperparam]] = {
        "num_population": Hyperparam(20, "candidates per generation", bounds=(2, POPULATION.high), search=(4, 100)),
        "sigma": Hyperparam(0.14, "initial step size", bounds=(1e-6, None), search=(0.01, 0.5, "log")),
        "mu": Hyperparam(0.0, "every weight of the initial mean", search=(-0.1, 0.1)),
        "deterministic": Hyperparam(False, "argmax actions while evaluating (and when playing the result)"),
    }
    # train() calls notifyCleanPoint between generations.
    CHECKPOINT_AT_CLEAN_POINTS = True

    def __init__(self) -> None:
        super().__init__()
        self.policy: PolicyNetwork | None = None
        self.best_params: np.ndarray | None = None
        self.best_return = -np.inf
        self.best_normaliser: StateNormaliser | None = None  # the statistics the best candidate was evaluated with
        self.normaliser: StateNormaliser | None = None  # the current statistics
        self.mean: np.ndarray | None = None
        self.sigma = float(self.DEFAULT_HYPERPARAMS["sigma"])
        self.rng = np.random.default_rng(0)
        self._best_torch: dict[str, torch.Tensor] | None = None
        self.strategy: cma.CMAEvolutionStrategy | None = None
        self._generation_start: tuple[dict[str, np.ndarray], dict] | None = None  # the strategy before its last ask

    @classmethod
    def makeEnv(cls, settings: RunSettings, env_kwargs: dict[str, Any] | None = None,
                load_path_normalise: str | None = None) -> VecEnv:
        # States are normalised by the policy itself, with statistics saved in the model (see policies.py).
        return withoutVecNormalize(super().makeEnv(settings, env_kwargs, load_path_normalise))

    # --- policy ----------------------------------------------------------------------------------------------

    def _buildPolicy(self) -> None:
        self.policy = PolicyNetwork(self.observation_space, actionDimension(self.action_space), HIDDEN_SIZE)
        self.policy.to(self.device)  # candidates are evaluated on the run's --device

    def _setBest(self, params: np.ndarray, episode_return: float, normaliser: StateNormaliser) -> None:
        self.best_params = np.array(params, dtype=np.float64)
        self.best_return = float(episode_return)
        self.best_normaliser = normaliser.frozen()
        self._best_torch = self.policy.unflatten(self.best_params)

    def _inputs(self, observation: np.ndarray, normaliser: StateNormaliser) -> np.ndarray:
        """:return: the network's input: images as they are, states normalised"""
        return observation if self.policy.images else normaliser.normalise(flatObservations(observation))

    def _bestOutputs(self, observation: np.ndarray) -> np.ndarray:
        return self.policy.outputsWith(self._best_torch, self._inputs(observation, self.best_normaliser))

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None,
                  deterministic: bool = False) -> np.ndarray:
        deterministic = deterministic or self.hyperparams["deterministic"]
        return outputsToActions(self._bestOutputs(observation), self.action_space, deterministic, self.rng)

    def getActionProba(self, observation: np.ndarray, dones: np.ndarray | None = None) -> np.ndarray:
        """:return: the softmax it samples, or one-hot rows on the argmax with ``deterministic``"""
        return actionProbabilities(self._bestOutputs(observation), self.action_space,
                                   bool(self.hyperparams["deterministic"]))

    # --- persistence -------------------------------------------------------------------------------------------

    def modelState(self) -> dict[str, Any]:
        return {
            "best_params": torch.as_tensor(self.best_params),
            "best_return": float(self.best_return),
            "best_normaliser": self.best_normaliser.toDict(),
            "normaliser": self.normaliser.toDict(),
            "mean": torch.as_tensor(self.mean),
            "sigma": float(self.sigma),
        }

    def buildModel(self) -> None:
        """A new model: the policy network, empty statistics, and the initial mean and step size."""
        self._buildPolicy()
        self.normaliser = StateNormaliser(int(np.prod(self.observation_space.shape)))
        self.mean = np.full(self.policy.n_params, float(self.hyperparams["mu"]))
        self.sigma = float(self.hyperparams["sigma"])
        self._setBest(self.mean, -np.inf, self.normaliser)

    def setModelState(self, state: dict[str, Any]) -> None:
        self._buildPolicy()
        if state["best_params"].numel() != self.policy.n_params:
            raise ValueError(f"{state['best_params'].numel()} weights saved, the policy has {self.policy.n_params}")
        n_features = int(np.prod(self.observation_space.shape))
        self.normaliser = StateNormaliser.fromDict(state["normaliser"], n_features)
        self.mean = state["mean"].numpy().astype(np.float64)
        self.sigma = float(state["sigma"])  # the step size the saved strategy had adapted to
        saved_sigma = state.get("hyperparams", {}).get("sigma")
        if saved_sigma is not None and float(self.hyperparams["sigma"]) != float(saved_sigma):
            self.sigma = float(self.hyperparams["sigma"])  # a step size given for the continued run wins
        self._setBest(state["best_params"].numpy(), float(state["best_return"]),
                      StateNormaliser.fromDict(state["best_normaliser"], n_features))

    def keptHyperparams(self) -> dict[str, tuple[Any, str]]:
        """``mu``, the weights of a new strategy's initial mean: a continued one starts from the model's saved mean"""
        return {"mu": (float(self.hyperparams["mu"]), "the continued strategy starts from the model's saved mean (mu "
                                                      "sets a new strategy's)")}

    def saveTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        super().saveTrainingState(folder, replay_buffer_folder)
        # mid-generation (a stop) the strategy has been asked for candidates it was not told the returns of: a
        # resumed one asked again would miss the samples two-point step-size adaptation injects, so the state saved
        # is the one at the generation's start, which the resumed run plays again
        arrays, values = self._generation_start or captureObjectState(self.strategy, "cma")
        writeNpz(os.path.join(folder, CMA_ARRAYS_FILE), arrays)
        writeJson(os.path.join(folder, CMA_VALUES_FILE), {"values": values})

    def loadTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        super().loadTrainingState(folder, replay_buffer_folder)
        saved = readJson(os.path.join(folder, CMA_VALUES_FILE))
        with np.load(os.path.join(folder, CMA_ARRAYS_FILE), allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
        if arrays.get("mean") is not None and arrays["mean"].shape != np.shape(self.strategy.mean):
            raise ValueError(f"the saved strategy searches {arrays['mean'].shape} weights, this policy has "
                             f"{np.shape(self.strategy.mean)}")
        restoreObjectState(self.strategy, arrays, saved["values"])
        if getattr(self.strategy, "timer", None) is None and self.strategy.countiter > 0:
            from cma.utilities.utils import ElapsedWCTime  # heavy dependency: see the note on cma above

            self.strategy.timer = ElapsedWCTime()  # made by the first ask(), which a resumed strategy has had

    # --- training --------------------------------------------------------------------------------------------

    def train(self, env: Any, total_timesteps: int, hyperparams: dict[str, Any], callback: TrainCallback,
              logger: Any, settings: RunSettings, checkpoint: Checkpoint | None = None) -> None:
        self.prepareTraining(env, hyperparams, settings)
        import cma  # heavy dependency, imported here only: see the note on cma above
        from cma.sigma_adaptation import CMAAdaptSigmaCSA

        strategy = self.strategy = cma.CMAEvolutionStrategy(self.mean, self.sigma, {
            "popsize": int(self.hyperparams["num_population"]),
            "seed": int(self.rng.integers(1, 2**31 - 1)),  # cma reads 0 as "seed from the clock"
            "verbose": -9,
            "CMA_diagonal": self.policy.n_params > MAX_FULL_COVARIANCE_PARAMS,
            # From 300 weights on (the MLP on MobileRobot states has 704) cma adapts the step size by two-point
            # adaptation, which injects two samples into every generation: with only two candidates its second
            # generation fails ("unused injected direction"), so they use cumulative step-size adaptation.
            "AdaptSigma": True if int(self.hyperparams["num_population"]) > 2 else CMAAdaptSigmaCSA,
        })
        self.restoreTrainingState(checkpoint)  # train --resume: the strategy's state and the generators
        deterministic = bool(self.hyperparams["deterministic"])
        runner = PopulationRunner(self.env, self, callback)
        end_timesteps = self.num_timesteps + total_timesteps
        while True:
            self._generation_start = captureObjectState(strategy, "cma")  # what a checkpoint saves (saveTrainingState)
            candidates = strategy.ask()
            weights = [self.policy.unflatten(candidate) for candidate in candidates]
            centre = self.policy.unflatten(self.mean)

            def act(observation: np.ndarray, assigned: np.ndarray, weights: list = weights,
                    centre: dict = centre) -> np.ndarray:
                if not self.policy.images:
                    self.normaliser.accumulate(flatObservations(observation[assigned != CENTRE]))
                inputs = self._inputs(observation, self.normaliser)
                # one forward pass per env: each plays its own candidate's weights
                outputs = np.concatenate([
                    self.policy.outputsWith(centre if k == CENTRE else weights[k], inputs[i:i + 1])
                    for i, k in enumerate(assigned)])
                return outputsToActions(outputs, self.action_space, deterministic, self.rng)

            returns = runner.run(len(candidates), act, end_timesteps)
            if returns is None:
                break
            strategy.tell(candidates, list(-returns))  # cma minimises
            self._generation_start = None  # told: the live strategy is what a checkpoint saves until the next ask
            best = int(np.argmax(returns))
            if returns[best] > self.best_return:
                self._setBest(candidates[best], returns[best], self.normaliser)  # the statistics it was played with
            self.normaliser.commit()  # between generations only, so every candidate sees the same normalisation
            self.mean, self.sigma = np.array(strategy.mean), float(strategy.sigma)
            logScalars(callback, self.num_timesteps, {"train/mean_return": float(np.mean(returns)),
                                                      "train/max_return": float(returns[best]), "train/sigma": self.sigma})
            notifyCleanPoint(callback, self.num_timesteps)  # between generations: an exact checkpoint
        runner.warnIfNothingLearned(int(self.hyperparams["num_population"]))
        self.env.close()
