"""TorchRLObject: what the algorithms written in this project (not wrapped from Stable-Baselines3) share.

- hyperparameters: the spec (``HYPERPARAMS``, see rl_baselines.core.hyperparams; a subclass written the older way,
  ``DEFAULT_HYPERPARAMS`` with ``HYPERPARAM_CHOICES`` and ``HYPERPARAM_BOUNDS``, is read through it) becomes
  command-line flags (``num_population`` -> ``--num-population``) through BaseRLObject.addHyperparamArguments, as for
  every algorithm; ``--hyperparam KEY:VALUE`` wins over flags.
  Boolean flags are switches that also take a value (``--dueling``, ``--dueling false``, ``--dueling 0``), string
  ones list their choices, and numeric ones are checked against their bounds when parsed (a bad value is a one-line
  usage error before anything is written); ``checkHyperparams`` adds checks across hyperparameters, run when
  training starts.
- the device: ``self.device`` (the run's ``--device``); :meth:`TorchRLObject.toTensor` puts arrays there. The model
  file is read onto the CPU (``map_location``) and its tensors copied onto the networks' device, so a model
  trained on a GPU loads anywhere.
- the model file: one torch ``.pt`` file holding only tensors and plain Python values (so ``torch.load`` runs with
  ``weights_only=True`` and never unpickles code), with the algorithm name, step count, hyperparameters and a
  description of the spaces; ``vecnormalize.npz`` beside it when the env normalises observations.
- the start of ``train``: :meth:`TorchRLObject.prepareTraining` (env, hyperparameters, seeds, then the model
  continued from ``--load-rl-model-path`` or a new one from :meth:`TorchRLObject.buildModel`); resuming a run
  (``--resume``): the model file holds the networks and optimizers, :meth:`TorchRLObject.saveTrainingState` adds
  the algorithm's generator (``self.rng``), where its schedules started, its training loop's counters
  (:meth:`TorchRLObject.loopState`) and its replay memory (:meth:`replayBuffer`).
"""
from __future__ import annotations

import abc
import argparse
import os
import pickle
import zipfile
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

from rl_baselines.core.base import BaseRLObject
from rl_baselines.core.hyperparams import DISCOUNT, NON_NEGATIVE, POSITIVE, Interval  # noqa: F401 (re-exported)
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.core.training_state import generatorState, loadBuffer, saveBuffer, setGeneratorState
from rl_baselines.envs.factory import saveNormalisation
from srl_toolbox.cli import UsageError
from srl_toolbox.devices import runDevice
from srl_toolbox.files import atomicPath, readJson, torchLoadFailure, writeJson
from srl_toolbox.text import withArticle


def isImageSpace(space: gym.Space) -> bool:
    """:return: whether observations are uint8 images (three axes, channels last or first), which a CNN encodes"""
    return isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3


def spaceToDict(space: gym.Space) -> dict[str, Any]:
    """
    :param space: a Discrete or Box space
    :return: a description made of tensors and plain values (storable with ``weights_only=True``)
    """
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n)}
    if isinstance(space, gym.spaces.Box):
        return {"type": "Box", "low": torch.as_tensor(space.low), "high": torch.as_tensor(space.high),
                "dtype": str(space.dtype)}
    raise ValueError(f"unsupported space {type(space).__name__} (Discrete or Box only)")


def spaceFromDict(data: dict[str, Any]) -> gym.Space:
    """
    :param data: a description written by :func:`spaceToDict`
    :return: the space
    """
    if data["type"] == "Discrete":
        return gym.spaces.Discrete(int(data["n"]))
    dtype = np.dtype(data["dtype"])
    return gym.spaces.Box(data["low"].numpy().astype(dtype), data["high"].numpy().astype(dtype), dtype=dtype)


# What TorchRLObject.saveTrainingState writes besides the replay memory.
TORCH_STATE_FILE = "torch_rl.json"


class TorchRLObject(BaseRLObject):
    """
    Base of the algorithms written here in torch/numpy. A subclass sets ``NAME`` and ``HYPERPARAMS``, implements
    ``modelState`` / ``setModelState`` (what goes into the model file besides the common entries), and starts its
    ``train`` with :meth:`prepareTraining` (which builds a new model with its :meth:`buildModel`).
    """

    NAME: ClassVar[str] = ""
    MODEL_EXTENSION: ClassVar[str] = ".pt"
    # The generators prepareTraining seeds with settings.seed: "rng" (self.rng, a NumPy Generator) and "torch" (the
    # global torch generator, which draws the initial weights).
    SEEDED_GENERATORS: ClassVar[tuple[str, ...]] = ("rng", "torch")

    def __init__(self) -> None:
        super().__init__()
        self.env: Any = None
        self.hyperparams: dict[str, Any] = dict(self.DEFAULT_HYPERPARAMS)
        self.observation_space: gym.Space | None = None
        self.action_space: gym.Space | None = None
        # The step count this run started from (0, or a continued model's): schedules run from it to the end.
        self.run_start_timesteps: int | None = None
        # Where the networks live and compute (the run's --device; models load onto it from any device).
        self.device = torch.device("cpu")

    def toTensor(self, array: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
        """
        :param array: a NumPy array (or anything torch.as_tensor takes)
        :param dtype: the tensor's type (None: the array's)
        :return: the array as a tensor on :attr:`device`
        """
        return torch.as_tensor(array, dtype=dtype, device=self.device)

    # --- hyperparameters -------------------------------------------------------------------------------------

    @classmethod
    def customArguments(cls, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        return cls.addHyperparamArguments(parser)

    # --- persistence -------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def modelState(self) -> dict[str, Any]:
        """:return: the algorithm's own entries of the model file (tensors and plain values only)"""
        raise NotImplementedError

    @abc.abstractmethod
    def setModelState(self, state: dict[str, Any]) -> None:
        """
        Rebuild the policy from what :meth:`modelState` returned (spaces and hyperparameters are already set).

        :param state: the model file's content
        """
        raise NotImplementedError

    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        payload = {
            **self.modelState(),
            "algo": self.NAME,
            "api_version": self.API_VERSION,
            "num_timesteps": int(self.num_timesteps),
            "hyperparams": dict(self.hyperparams),
            "observation_space": spaceToDict(self.observation_space),
            "action_space": spaceToDict(self.action_space),
        }
        with atomicPath(save_path) as tmp_path, open(tmp_path, "wb") as handle:  # records named archive/...
            torch.save(payload, handle)
        saveNormalisation(self.env, os.path.dirname(os.path.abspath(save_path)))

    @classmethod
    def savedHyperparams(cls, load_path: str) -> dict[str, Any] | None:
        """
        :param load_path: a model file written by :meth:`save`
        :return: the hyperparameters it was trained with
        """
        return cls.readModelFile(load_path)["hyperparams"]

    @classmethod
    def readModelFile(cls, load_path: str) -> dict[str, Any]:
        """
        :param load_path: a model file written by :meth:`save`
        :return: its content
        :raises ValueError: missing, corrupt, or written by another algorithm (one line)
        """
        if not os.path.isfile(load_path):
            raise ValueError(f"no model file at {load_path}")
        try:
            payload = torch.load(load_path, map_location="cpu", weights_only=True)
        except (RuntimeError, EOFError, OSError, ValueError, zipfile.BadZipFile, pickle.UnpicklingError) as error:
            reason = torchLoadFailure(error) or (str(error).strip().splitlines()[0] if str(error).strip()
                                                 else type(error).__name__)
            raise ValueError(f"{load_path} is not a readable {cls.NAME} model ({reason})") from None
        if not isinstance(payload, dict) or "algo" not in payload:
            raise ValueError(f"{load_path} is not {withArticle(cls.NAME)} model (no algorithm name inside)")
        if payload["algo"] != cls.NAME:
            raise ValueError(f"{load_path} was saved by algorithm {payload['algo']!r}, not {cls.NAME!r}")
        return payload

    @classmethod
    def load(cls, load_path: str, settings: RunSettings | None = None) -> TorchRLObject:
        payload = cls.readModelFile(load_path)
        model = cls()
        model.device = torch.device(runDevice(None if settings is None else settings.device))
        try:
            model.num_timesteps = int(payload["num_timesteps"])
            model.hyperparams = {**cls.DEFAULT_HYPERPARAMS, **payload["hyperparams"]}
            model.observation_space = spaceFromDict(payload["observation_space"])
            model.action_space = spaceFromDict(payload["action_space"])
            model.setModelState(payload)
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as error:
            raise ValueError(f"{load_path} is a damaged {cls.NAME} model ({type(error).__name__}: {error})") from None
        return model

    def seedActionSampling(self, seed: int) -> None:
        """torch's generator, and ``self.rng`` where the class samples with it (``"rng"`` in SEEDED_GENERATORS)."""
        super().seedActionSampling(seed)
        if "rng" in self.SEEDED_GENERATORS:
            self.rng = np.random.default_rng(seed)

    # --- resuming --------------------------------------------------------------------------------------------

    def scheduleStart(self) -> int:
        """:return: the step count this run started from (its schedules and ``learning_starts`` count from it)"""
        return self.num_timesteps if self.run_start_timesteps is None else int(self.run_start_timesteps)

    @classmethod
    def keepsReplayBuffer(cls) -> bool:
        """:return: whether it has a replay memory (overrides :meth:`replayBuffer`), which its checkpoints keep"""
        return cls.supportsResume() and cls.replayBuffer is not TorchRLObject.replayBuffer

    def replayBuffer(self) -> tuple[Any, int, int] | None:
        """
        :return: (the replay memory, its capacity, how many of its leading rows hold data), None without one; its
            array attributes are saved (training_state.saveBuffer)
        """
        return None

    def loopState(self) -> dict[str, Any]:
        """:return: the training loop's counters that a resumed run goes on from (the step of the next progress.csv
        row...), saved with the training state; none here"""
        return {}

    def setLoopState(self, state: dict[str, Any]) -> None:
        """
        Restore what :meth:`loopState` returned (called by :meth:`loadTrainingState`).

        :param state: the saved counters ({} from a checkpoint written before they were saved: keep the fresh run's)
        """

    def saveTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        os.makedirs(folder, exist_ok=True)
        writeJson(os.path.join(folder, TORCH_STATE_FILE), {"rng": generatorState(getattr(self, "rng", None)),
                                                           "run_start_timesteps": self.scheduleStart(),
                                                           "loop": self.loopState()})
        replay = self.replayBuffer()
        if replay_buffer_folder is not None and replay is not None:
            saveBuffer(replay[0], replay_buffer_folder, replay[1], replay[2])

    def loadTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        state = readJson(os.path.join(folder, TORCH_STATE_FILE))
        setGeneratorState(getattr(self, "rng", None), state.get("rng"))
        self.run_start_timesteps = int(state["run_start_timesteps"])
        self.setLoopState(state.get("loop", {}))
        replay = self.replayBuffer()
        if replay_buffer_folder is not None and replay is not None:
            loadBuffer(replay[0], replay_buffer_folder, replay[1])

    def buildModel(self) -> None:
        """
        Build a new model (networks, optimizers, statistics...) from ``observation_space``, ``action_space`` and
        ``hyperparams``, on :attr:`device`: what :meth:`prepareTraining` does when no model is continued.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement buildModel")

    def prepareTraining(self, env: Any, hyperparams: dict[str, Any], settings: RunSettings) -> dict[str, Any] | None:
        """
        The start of ``train``, the same for every algorithm written here: :meth:`startTraining` (env,
        hyperparameters, the model file to continue from), the generators of ``SEEDED_GENERATORS`` seeded with
        ``settings.seed``, then the model: the continued one (:meth:`setModelState`) or a new one
        (:meth:`buildModel`). What remains before the first env step is the algorithm's own (its replay memory...),
        then :meth:`restoreTrainingState`.

        :param env: the training VecEnv
        :param hyperparams: the run's hyperparameters, resolved
        :param settings: the run's settings
        :return: the continued model file's content, None for a new model
        :raises UsageError: see :meth:`startTraining`
        """
        saved = self.startTraining(env, hyperparams, settings)
        if "rng" in self.SEEDED_GENERATORS:
            self.rng = np.random.default_rng(settings.seed)
        if "torch" in self.SEEDED_GENERATORS:
            torch.manual_seed(settings.seed)
        if saved is not None:
            self.setModelState(saved)  # hyperparameters: the saved ones, overridden by those given now
        else:
            self.buildModel()
        return saved

    def startTraining(self, env: Any, hyperparams: dict[str, Any], settings: RunSettings) -> dict[str, Any] | None:
        """
        The env and hyperparameters of ``train`` (called by :meth:`prepareTraining`), and the model to continue
        from.

        :param env: the training VecEnv (the normalisation of the model to continue from, updating)
        :param hyperparams: the run's hyperparameters, resolved (a continued model's saved ones taking part)
        :param settings: the run's settings (``continue_from`` names the model to continue from)
        :return: the saved model's content when continuing (its step count is already restored), else None
        :raises UsageError: the saved model does not fit the env (the train command cannot check this before the
            run folder exists)
        """

        load_path = settings.continue_from
        payload = self.readModelFile(load_path) if load_path else None
        self.device = torch.device(runDevice(settings.device))
        self.hyperparams = dict(hyperparams)
        self.env = env
        self.observation_space, self.action_space = self.env.observation_space, self.env.action_space
        self.run_start_timesteps = self.num_timesteps if payload is None else int(payload["num_timesteps"])
        if payload is None:
            return None
        for name, space in (("observation", self.observation_space), ("action", self.action_space)):
            saved = spaceFromDict(payload[f"{name}_space"])
            if saved != space:
                self.env.close()
                raise UsageError(f"{load_path} was trained with {name} space {saved}, this env has {space}")
        self.num_timesteps = int(payload["num_timesteps"])
        return payload
