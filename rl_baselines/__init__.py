"""RL side of the toolbox: algorithms, the train command and its Python API.

``__version__`` is the distribution's, defined once in srl_toolbox.

The API's names (rl_baselines.api) are importable from the package, ``from rl_baselines import trainAgent``; they
are loaded on first use, so that importing a submodule (``python -m rl_baselines.train``) does not import the API.
"""
from __future__ import annotations

import importlib
from typing import Any

from srl_toolbox import __version__  # noqa: F401 (re-exported: rl_baselines.__version__)

_API_NAMES = ("Evaluation", "LoadedRun", "RunConfig", "TrainConfig", "TrainResult", "TrainingInterrupted", "UsageError",
              "evaluateAgent", "listAlgorithms", "listEnvs", "listSRLModels", "loadRun", "makeConfig", "trainAgent")


def __getattr__(name: str) -> Any:
    """
    :param name: an attribute of the package
    :return: the API's object of that name
    :raises AttributeError: not an API name
    """
    if name in _API_NAMES:
        return getattr(importlib.import_module("rl_baselines.api"), name)
    raise AttributeError(f"module 'rl_baselines' has no attribute {name!r}")


def __dir__() -> list[str]:
    """:return: the package's attributes and the API's names"""
    return sorted({*globals(), *_API_NAMES})
