"""RL side of the toolbox: algorithms, the train command and its Python API.

``__version__`` is the distribution's, defined once in srl_toolbox.

The API's names (rl_baselines.api) are importable from the package, ``from rl_baselines import trainAgent``; they
are loaded on first use, so that importing a submodule (``python -m rl_baselines.train``) does not import the API.
Loading them leaves Python's global random generator as the caller had it (the libraries the API imports may draw
from it at import time: rich, through SB3's progress bar, does), so that ``random.seed(42); rl.loadRun(run)`` keeps
the caller's stream whether or not the API was loaded before.
"""
from __future__ import annotations

import importlib
import random
import sys
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
        if "rl_baselines.api" in sys.modules:
            return getattr(sys.modules["rl_baselines.api"], name)
        state = random.getstate()
        try:
            api = importlib.import_module("rl_baselines.api")
        finally:
            random.setstate(state)
        return getattr(api, name)
    raise AttributeError(f"module 'rl_baselines' has no attribute {name!r}")


def __dir__() -> list[str]:
    """:return: the package's attributes and the API's names"""
    return sorted({*globals(), *_API_NAMES})
