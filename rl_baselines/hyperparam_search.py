"""The ``python -m rl_baselines.hyperparam_search`` command (published path, a re-export shim).

The code lives in :mod:`rl_baselines.sweeps.hyperparam_search`.
"""
from rl_baselines.sweeps.hyperparam_search import (
    INSTALL_HINT,
    OPTIMIZERS,
    POLL_S,
    PRUNERS,
    SEARCH_FOLDER,
    SQLITE_TIMEOUT_S,
    STUDY_KEYS,
    STUDY_NAME,
    SearchConfig,
    TrialFailed,
    TrialObjective,
    TrialProgress,
    checkSpace,
    createStudy,
    formatValue,
    gridValues,
    importOptuna,
    loadStudy,
    main,
    makePruner,
    makeSampler,
    openStorage,
    prepare,
    runWorker,
    runWorkers,
    samplerSeed,
    saveSearchPlot,
    searchParser,
    suggestParams,
    writeBestParams,
    writeTrialsCsv,
)
from srl_toolbox.cli import runCommand

__all__ = ["INSTALL_HINT", "OPTIMIZERS", "POLL_S", "PRUNERS", "SEARCH_FOLDER", "SQLITE_TIMEOUT_S", "STUDY_KEYS",
           "STUDY_NAME", "SearchConfig", "TrialFailed", "TrialObjective", "TrialProgress", "checkSpace",
           "createStudy", "formatValue", "gridValues", "importOptuna", "loadStudy", "main", "makePruner",
           "makeSampler", "openStorage", "prepare", "runWorker", "runWorkers", "samplerSeed", "saveSearchPlot",
           "searchParser", "suggestParams", "writeBestParams", "writeTrialsCsv"]

if __name__ == "__main__":
    runCommand(main)
