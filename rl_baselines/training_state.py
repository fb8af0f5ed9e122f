"""Re-export shim (published path): this module's contents live in :mod:`rl_baselines.core.training_state` and
:mod:`rl_baselines.envs.wrappers`."""
from rl_baselines.core.training_state import (
    BUFFER_ARRAYS_FILE,
    BUFFER_VALUES_FILE,
    RNG_FILE,
    baseVecEnv,
    captureEpisodeStarts,
    captureGlobalRNG,
    captureObjectState,
    countLines,
    freezeNextReset,
    generatorState,
    keepFirstLines,
    loadBuffer,
    progressLogger,
    restartEpisodes,
    restoreGlobalRNG,
    restoreObjectState,
    saveBuffer,
    setGeneratorState,
)
from rl_baselines.envs.wrappers import ActionRepeat, EpisodeStartRNG, ignoreInterruptInWorker, openMonitor

__all__ = ["ActionRepeat", "BUFFER_ARRAYS_FILE", "BUFFER_VALUES_FILE", "EpisodeStartRNG", "RNG_FILE", "baseVecEnv",
           "captureEpisodeStarts", "captureGlobalRNG", "captureObjectState", "countLines", "freezeNextReset",
           "generatorState", "ignoreInterruptInWorker", "keepFirstLines", "loadBuffer", "openMonitor",
           "progressLogger", "restartEpisodes", "restoreGlobalRNG", "restoreObjectState", "saveBuffer",
           "setGeneratorState"]
