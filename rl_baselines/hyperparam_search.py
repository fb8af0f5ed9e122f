"""The ``python -m rl_baselines.hyperparam_search`` command (its published interface).

The command lives in :mod:`rl_baselines.sweeps.hyperparam_search`, its parts in ``search_study``, ``search_record``,
``search_trials`` and ``search_outputs`` beside it; this module is the command's published name and re-exports the
names scripts use from them, each module imported on the first access to one of its names (PEP 562). It stays, and
importing it emits no warning (unlike the deprecated re-export shims, srl_toolbox.deprecation).

Invariant: importing this module imports none of the command's modules. A ``--workers`` process (multiprocessing's
spawn) imports the command's module by name, as ``__mp_main__``, before it runs its trials: it then loads only what
a worker needs (:mod:`rl_baselines.sweeps.search_trials`), not the algorithms, torch or Stable-Baselines3 that the
command's checks import (tests/test_search_imports.py).
"""
from __future__ import annotations

import importlib
from typing import Any

from srl_toolbox.cli import runCommand

# The module of each re-exported name
_EXPORTS = {
    **dict.fromkeys(("SEARCH_FOLDER", "STUDY_NAME", "main", "prepare", "searchParser"),
                    "rl_baselines.sweeps.hyperparam_search"),
    **dict.fromkeys(("saveSearchPlot", "writeBestParams", "writeTrialsCsv"), "rl_baselines.sweeps.search_outputs"),
    **dict.fromkeys(("INSTALL_HINT", "OPTIMIZERS", "PRUNERS", "SQLITE_TIMEOUT_S", "SearchConfig", "checkSpace",
                     "formatValue", "gridValues", "importOptuna", "loadStudy", "makePruner", "makeSampler",
                     "openStorage", "samplerSeed", "suggestParams"),
                    "rl_baselines.sweeps.search_study"),
    **dict.fromkeys(("STUDY_KEYS", "createStudy"), "rl_baselines.sweeps.search_record"),
    **dict.fromkeys(("POLL_S", "TrialFailed", "TrialObjective", "TrialProgress", "runWorker", "runWorkers"),
                    "rl_baselines.sweeps.search_trials"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """:return: a re-exported name, its module imported on the first access (PEP 562)"""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """:return: the module's names, the re-exported ones included"""
    return sorted({*globals(), *_EXPORTS})


if __name__ == "__main__":
    runCommand(__getattr__("main"))
