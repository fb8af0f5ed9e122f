"""random_agent: uniformly random actions, the baseline every learner must beat."""
from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from rl_baselines.core.algo_types import AlgoType
from rl_baselines.core.base import BaseRLObject, TrainCallback
from rl_baselines.core.checkpointing import Checkpoint
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.core.training_state import generatorState, setGeneratorState
from rl_baselines.envs.factory import saveNormalisation
from srl_toolbox.files import readJson, writeJson


def _spaceToJson(space: gym.Space) -> dict[str, Any]:
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n)}
    if isinstance(space, gym.spaces.Box):
        return {"type": "Box", "low": space.low.tolist(), "high": space.high.tolist(), "dtype": str(space.dtype)}
    raise ValueError(f"random_agent cannot save an action space of type {type(space).__name__}")


def _spaceFromJson(data: dict[str, Any]) -> gym.Space:
    if data["type"] == "Discrete":
        return gym.spaces.Discrete(data["n"])
    dtype = np.dtype(data["dtype"])
    return gym.spaces.Box(np.array(data["low"], dtype=dtype), np.array(data["high"], dtype=dtype), dtype=dtype)


class RandomAgentModel(BaseRLObject):
    """Samples every env's action uniformly from the action space (no hyperparameters)."""

    ALGO_TYPE = AlgoType.OTHER
    REPLAYS_EPISODES_IN_PROGRESS = True  # its loop goes on from the env after restoreTrainingState
    TRAINING_ROWS = False  # nothing to log: tensorboard's episode means come with the refreshes
    MODEL_EXTENSION = ".json"

    def __init__(self, action_space: gym.Space | None = None, seed: int = 0) -> None:
        super().__init__()
        self.action_space = action_space
        self.seed = seed
        self.env: Any = None
        if action_space is not None:
            action_space.seed(seed)

    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        writeJson(save_path, {"algo": "random_agent", "action_space": _spaceToJson(self.action_space),
                              "seed": self.seed, "num_timesteps": self.num_timesteps})
        # Kept beside every model like the other algorithms', so a replay rebuilds the same observations.
        saveNormalisation(self.env, os.path.dirname(os.path.abspath(save_path)))

    @classmethod
    def load(cls, load_path: str, settings: RunSettings | None = None) -> RandomAgentModel:
        try:
            data = readJson(load_path)
            if data.get("algo") != "random_agent":
                raise ValueError(f"{load_path} was saved by algorithm {data.get('algo')!r}, not 'random_agent'")
            space = _spaceFromJson(data["action_space"])
        except (OSError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{load_path} is not a random_agent model ({type(error).__name__}: {error})") from None
        except UnicodeDecodeError:
            raise ValueError(f"{load_path} is not a random_agent model (not JSON)") from None
        except ValueError as error:
            raise ValueError(str(error) if "saved by" in str(error) else f"{load_path} is corrupt ({error})") from None
        agent = cls(space, seed=data.get("seed", 0) if settings is None else settings.seed)
        agent.num_timesteps = int(data.get("num_timesteps", 0))
        return agent

    def getAction(self, observation: np.ndarray, dones: np.ndarray | None = None, deterministic: bool = False) -> np.ndarray:
        return np.stack([self.action_space.sample() for _ in range(len(observation))])

    def seedActionSampling(self, seed: int) -> None:
        """The action space's generator, which getAction samples from."""
        super().seedActionSampling(seed)
        self.action_space.seed(seed)

    @classmethod
    def keepsReplayBuffer(cls) -> bool:
        """:return: False: it learns nothing, and keeps no replay buffer"""
        return False

    def saveTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        """The action space's generator: a resumed run draws the actions the uninterrupted one would have."""

        writeJson(os.path.join(folder, "random_agent.json"),
                  {"action_space_rng": generatorState(self.action_space.np_random)})

    def loadTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        setGeneratorState(self.action_space.np_random, readJson(os.path.join(folder, "random_agent.json"))["action_space_rng"])

    def budgetChunk(self) -> int:
        """:return: its envs, stepped together"""
        return int(self.env.num_envs)

    def train(self, env: Any, total_timesteps: int, hyperparams: dict[str, Any], callback: TrainCallback,
              logger: Any, settings: RunSettings, checkpoint: Checkpoint | None = None) -> None:
        load_path = settings.continue_from
        if load_path:  # continuing a saved agent (or a resumed run): its step count goes on
            self.num_timesteps = self.load(load_path, settings).num_timesteps
        self.env = env  # restored statistics keep adapting, as for the learners (makeTrainingEnv)
        self.seed = settings.seed
        self.action_space = self.env.action_space
        self.action_space.seed(settings.seed)
        self.restoreTrainingState(checkpoint)  # train --resume: the action generator
        observation = self.env.reset()
        target = self.num_timesteps + total_timesteps
        while self.num_timesteps < target:
            observation, _, dones, _ = self.env.step(self.getAction(observation))
            self.num_timesteps += self.env.num_envs
            if callback(locals(), globals()) is False:
                break
        self.env.close()
