"""TorchRLObject: what the algorithms written in this project (not wrapped from Stable-Baselines3) share.

- hyperparameters: ``DEFAULT_HYPERPARAMS`` become command-line flags (``num_population`` -> ``--num-population``),
  as for the SB3 adapter; ``--hyperparam KEY:VALUE`` wins over flags. Boolean flags are switches that also take a
  value (``--dueling``, ``--dueling false``, ``--dueling 0``), string ones list their ``HYPERPARAM_CHOICES``, and
  numeric ones are checked against ``HYPERPARAM_BOUNDS`` when parsed (a bad value is a one-line usage error before
  anything is written); ``checkHyperparams`` adds checks across hyperparameters, run when training starts.
- the device: ``self.device`` (the run's ``--device``); :meth:`TorchRLObject.toTensor` puts arrays there. The model
  file is read onto the CPU (``map_location``) and its tensors copied onto the networks' device, so a model
  trained on a GPU loads anywhere.
- the model file: one torch ``.pt`` file holding only tensors and plain Python values (so ``torch.load`` runs with
  ``weights_only=True`` and never unpickles code), with the algorithm name, step count, hyperparameters and a
  description of the spaces; ``vecnormalize.npz`` beside it when the env normalises observations.
- continuing a saved model (``--load-rl-model-path``): :meth:`TorchRLObject.startTraining`; resuming a run
  (``--resume``): the model file holds the networks and optimizers, :meth:`TorchRLObject.saveTrainingState` adds
  the algorithm's generator (``self.rng``), where its schedules started, and its replay memory (:meth:`replayBuffer`).
"""
from __future__ import annotations

import argparse
import functools
import os
import pickle
import zipfile
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

from rl_baselines.base_classes import BaseRLObject, strToBool
from rl_baselines.cli import UsageError
from rl_baselines.devices import runDevice
from rl_baselines.files import atomicPath


def isImageSpace(space: gym.Space) -> bool:
    """:return: whether observations are uint8 images (height, width, channels), which a CNN encodes"""
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


@dataclass(frozen=True)
class Interval:
    """
    Allowed values of a numeric hyperparameter (a plain ``(low, high)`` tuple in HYPERPARAM_BOUNDS is a closed one).

    :param low: lower bound, None for none
    :param high: upper bound, None for none
    :param low_open: the lower bound itself is excluded
    :param high_open: the upper bound itself is excluded
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, value: Any) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def __str__(self) -> str:
        if self.high is None:
            return f"{'>' if self.low_open else '>='} {self.low}"
        if self.low is None:
            return f"{'<' if self.high_open else '<='} {self.high}"
        return f"in {'(' if self.low_open else '['}{self.low}, {self.high}{')' if self.high_open else ']'}"


# What TorchRLObject.saveTrainingState writes besides the replay memory.
TORCH_STATE_FILE = "torch_rl.json"

POSITIVE = Interval(0, None, low_open=True)
NON_NEGATIVE = Interval(0)
DISCOUNT = Interval(0, 1, low_open=True)  # (0, 1]


class TorchRLObject(BaseRLObject):
    """
    Base of the algorithms written here in torch/numpy. A subclass sets ``NAME`` and ``DEFAULT_HYPERPARAMS`` and
    implements ``modelState`` / ``setModelState`` (what goes into the model file besides the common entries).
    """

    NAME: ClassVar[str] = ""
    MODEL_EXTENSION: ClassVar[str] = ".pt"
    DEFAULT_HYPERPARAMS: ClassVar[dict[str, Any]] = {}
    # Allowed values of string hyperparameters.
    HYPERPARAM_CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {}
    # Allowed ranges of numeric hyperparameters: an Interval, or an inclusive (low, high) tuple (None: no bound).
    HYPERPARAM_BOUNDS: ClassVar[dict[str, Interval | tuple[float | None, float | None]]] = {}

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
        group = parser.add_argument_group(f"{cls.NAME} hyperparameters (defaults in brackets)")
        for name, default in cls.DEFAULT_HYPERPARAMS.items():
            flag, dest = f"--{name.replace('_', '-')}", f"hp_{name}"
            if isinstance(default, bool):
                group.add_argument(flag, dest=dest, type=strToBool, nargs="?", const=True, default=None,
                                   metavar="BOOL", help=f"switch; '{flag} false' turns it off [{default}]")
            elif name in cls.HYPERPARAM_CHOICES:
                group.add_argument(flag, dest=dest, choices=cls.HYPERPARAM_CHOICES[name], default=None,
                                   help=f"[{default}]")
            else:
                group.add_argument(flag, dest=dest, type=functools.partial(cls._flagValue, name), default=None,
                                   metavar=type(default).__name__.upper(), help=f"[{default}]")
        return parser

    @classmethod
    def _flagValue(cls, name: str, raw: str) -> Any:
        try:
            return cls.checkHyperparam(name, cls.parserHyperParam({name: raw})[name])
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    @classmethod
    def checkHyperparam(cls, name: str, value: Any) -> Any:
        """
        :param name: a hyperparameter
        :param value: its typed value
        :return: the value
        :raises ValueError: not one of its choices, or out of its bounds (one line)
        """
        choices = cls.HYPERPARAM_CHOICES.get(name)
        if choices is not None and value not in choices:
            raise ValueError(f"hyperparameter {name!r} must be one of {', '.join(choices)}, got {value!r}")
        bounds = cls.HYPERPARAM_BOUNDS.get(name)
        if bounds is None or isinstance(value, str):
            return value
        interval = bounds if isinstance(bounds, Interval) else Interval(*bounds)
        if value not in interval:
            raise ValueError(f"hyperparameter {name!r} must be {interval}, got {value!r}")
        return value

    @classmethod
    def checkHyperparams(cls, hyperparams: dict[str, Any]) -> None:
        """
        Check every hyperparameter, and how they fit together (override to add such checks).

        :param hyperparams: all the hyperparameters of a run
        :raises ValueError: the first problem found (one line)
        """
        for name, value in hyperparams.items():
            cls.checkHyperparam(name, value)

    @classmethod
    def parserHyperParam(cls, hyperparams: dict[str, str]) -> dict[str, Any]:
        parsed = super().parserHyperParam(hyperparams)
        for name, value in parsed.items():
            cls.checkHyperparam(name, value)
        return parsed

    @classmethod
    def hyperparamsFromArgs(cls, args: argparse.Namespace, train_kwargs: dict[str, Any] | None,
                            saved: dict[str, Any] | None = None) -> dict[str, Any]:
        """
        :param args: parsed arguments (the flags added by customArguments)
        :param train_kwargs: values from ``--hyperparam`` (they win over flags)
        :param saved: the hyperparameters of a model training continues from (flags and train_kwargs win)
        :return: every hyperparameter, typed
        """
        hyperparams = {**cls.DEFAULT_HYPERPARAMS, **(saved or {})}
        for name in cls.DEFAULT_HYPERPARAMS:
            value = getattr(args, f"hp_{name}", None)
            if value is not None:
                hyperparams[name] = value
        hyperparams.update(train_kwargs or {})
        return hyperparams

    # --- persistence -------------------------------------------------------------------------------------------

    def modelState(self) -> dict[str, Any]:
        """:return: the algorithm's own entries of the model file (tensors and plain values only)"""
        raise NotImplementedError

    def setModelState(self, state: dict[str, Any]) -> None:
        """
        Rebuild the policy from what :meth:`modelState` returned (spaces and hyperparameters are already set).

        :param state: the model file's content
        """
        raise NotImplementedError

    def save(self, save_path: str, _locals: dict[str, Any] | None = None) -> None:
        from rl_baselines.utils import saveNormalisation

        payload = {
            **self.modelState(),
            "algo": self.NAME,
            "api_version": self.API_VERSION,
            "num_timesteps": int(self.num_timesteps),
            "hyperparams": dict(self.hyperparams),
            "observation_space": spaceToDict(self.observation_space),
            "action_space": spaceToDict(self.action_space),
        }
        with atomicPath(save_path) as tmp_path:
            torch.save(payload, tmp_path)
        saveNormalisation(self.env, os.path.dirname(os.path.abspath(save_path)))

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
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ValueError(f"{load_path} is not a readable {cls.NAME} model ({reason})") from None
        if not isinstance(payload, dict) or "algo" not in payload:
            raise ValueError(f"{load_path} is not a {cls.NAME} model (no algorithm name inside)")
        if payload["algo"] != cls.NAME:
            raise ValueError(f"{load_path} was saved by algorithm {payload['algo']!r}, not {cls.NAME!r}")
        return payload

    @classmethod
    def load(cls, load_path: str, args: argparse.Namespace | None = None) -> TorchRLObject:
        payload = cls.readModelFile(load_path)
        model = cls()
        model.device = torch.device(runDevice(args))
        try:
            model.num_timesteps = int(payload["num_timesteps"])
            model.hyperparams = {**cls.DEFAULT_HYPERPARAMS, **payload["hyperparams"]}
            model.observation_space = spaceFromDict(payload["observation_space"])
            model.action_space = spaceFromDict(payload["action_space"])
            model.setModelState(payload)
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as error:
            raise ValueError(f"{load_path} is a damaged {cls.NAME} model ({type(error).__name__}: {error})") from None
        return model

    # --- resuming --------------------------------------------------------------------------------------------

    def scheduleStart(self) -> int:
        """:return: the step count this run started from (its schedules and ``learning_starts`` count from it)"""
        return self.num_timesteps if self.run_start_timesteps is None else int(self.run_start_timesteps)

    def replayBuffer(self) -> tuple[Any, int, int] | None:
        """
        :return: (the replay memory, its capacity, how many of its leading rows hold data), None without one; its
            array attributes are saved (training_state.saveBuffer)
        """
        return None

    def saveTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        from rl_baselines.files import writeJson
        from rl_baselines.training_state import generatorState, saveBuffer

        os.makedirs(folder, exist_ok=True)
        writeJson(os.path.join(folder, TORCH_STATE_FILE), {"rng": generatorState(getattr(self, "rng", None)),
                                                           "run_start_timesteps": self.scheduleStart()})
        replay = self.replayBuffer()
        if replay_buffer_folder is not None and replay is not None:
            saveBuffer(replay[0], replay_buffer_folder, replay[1], replay[2])

    def loadTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        from rl_baselines.files import readJson
        from rl_baselines.training_state import loadBuffer, setGeneratorState

        state = readJson(os.path.join(folder, TORCH_STATE_FILE))
        setGeneratorState(getattr(self, "rng", None), state.get("rng"))
        self.run_start_timesteps = int(state["run_start_timesteps"])
        replay = self.replayBuffer()
        if replay_buffer_folder is not None and replay is not None:
            loadBuffer(replay[0], replay_buffer_folder, replay[1])

    @classmethod
    def normalisationFolder(cls, args: argparse.Namespace) -> str | None:
        """
        :param args: the run's arguments
        :return: the folder of the model to continue from (its normalisation statistics), or None
        """
        load_path = getattr(args, "load_rl_model_path", None)
        return os.path.dirname(os.path.abspath(load_path)) if load_path else None

    def startTraining(self, args: argparse.Namespace, env_kwargs: dict[str, Any] | None,
                      train_kwargs: dict[str, Any] | None) -> dict[str, Any] | None:
        """
        The common start of ``train``: build the env (restoring the normalisation of the model to continue from,
        which then keeps adapting), resolve the hyperparameters and read the model to continue from.

        :param args: the run's arguments (``load_rl_model_path`` names the model to continue from)
        :param env_kwargs: env constructor keywords
        :param train_kwargs: hyperparameters from ``--hyperparam``
        :return: the saved model's content when continuing (its step count is already restored), else None
        :raises UsageError: the hyperparameters do not fit together, or the saved model does not fit the env (the
            train command cannot check these before the run folder exists)
        """
        from rl_baselines.utils import findVecNormalize

        load_path = getattr(args, "load_rl_model_path", None)
        payload = self.readModelFile(load_path) if load_path else None
        self.device = torch.device(runDevice(args))
        self.hyperparams = self.hyperparamsFromArgs(args, train_kwargs, payload["hyperparams"] if payload else None)
        try:
            self.checkHyperparams(self.hyperparams)
        except ValueError as error:
            raise UsageError(str(error)) from None
        self.env = self.makeEnv(args, env_kwargs, load_path_normalise=self.normalisationFolder(args))
        vec_normalize = findVecNormalize(self.env)
        if vec_normalize is not None:
            vec_normalize.training = True
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
