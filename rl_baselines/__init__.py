"""RL side of the toolbox: algorithms, the train command and its Python API.

``__version__`` is the distribution's, defined once in srl_toolbox.

The API's names (rl_baselines.api) are importable from the package, ``from rl_baselines import trainAgent``; they
are loaded on first use (srl_toolbox.lazy_names), so that importing a submodule (``python -m rl_baselines.train``)
does not import the API, and leave Python's global random generator as the caller had it.
"""
from __future__ import annotations

from srl_toolbox import __version__  # noqa: F401 (re-exported: rl_baselines.__version__)
from srl_toolbox.lazy_names import lazyNames

_API_NAMES = ("Evaluation", "LoadedRun", "RunConfig", "SweepInterrupted", "SweepResult", "TrainConfig", "TrainResult",
              "TrainingDiverged", "TrainingInterrupted", "UsageError", "evaluateAgent", "listAlgorithms", "listEnvs",
              "listSRLModels", "loadRun", "makeConfig", "runSweep", "trainAgent")

__getattr__, __dir__ = lazyNames(__name__, "rl_baselines.api", _API_NAMES, globals())
