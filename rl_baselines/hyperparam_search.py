"""The ``python -m rl_baselines.hyperparam_search`` command (its published interface).

The command lives in :mod:`rl_baselines.sweeps.hyperparam_search`, its parts in ``search_study``, ``search_trials``
and ``search_outputs`` beside it; this module is the command's published name and re-exports the names scripts use
from them. It stays, and importing it emits no warning (unlike the deprecated re-export shims,
srl_toolbox.deprecation).
"""
from rl_baselines.sweeps.hyperparam_search import SEARCH_FOLDER, STUDY_NAME, main, prepare, searchParser
from rl_baselines.sweeps.search_outputs import saveSearchPlot, writeBestParams, writeTrialsCsv
from rl_baselines.sweeps.search_study import (
    INSTALL_HINT,
    OPTIMIZERS,
    PRUNERS,
    SQLITE_TIMEOUT_S,
    STUDY_KEYS,
    SearchConfig,
    checkSpace,
    createStudy,
    formatValue,
    gridValues,
    importOptuna,
    loadStudy,
    makePruner,
    makeSampler,
    openStorage,
    samplerSeed,
    suggestParams,
)
from rl_baselines.sweeps.search_trials import POLL_S, TrialFailed, TrialObjective, TrialProgress, runWorker, runWorkers
from srl_toolbox.cli import runCommand

__all__ = ["INSTALL_HINT", "OPTIMIZERS", "POLL_S", "PRUNERS", "SEARCH_FOLDER", "SQLITE_TIMEOUT_S", "STUDY_KEYS",
           "STUDY_NAME", "SearchConfig", "TrialFailed", "TrialObjective", "TrialProgress", "checkSpace",
           "createStudy", "formatValue", "gridValues", "importOptuna", "loadStudy", "main", "makePruner",
           "makeSampler", "openStorage", "prepare", "runWorker", "runWorkers", "samplerSeed", "saveSearchPlot",
           "searchParser", "suggestParams", "writeBestParams", "writeTrialsCsv"]

if __name__ == "__main__":
    runCommand(main)
