"""Re-export shim (published path): this module's contents live in :mod:`rl_baselines.runs.resume`."""
from rl_baselines.core.checkpointing import restoreRun
from rl_baselines.runs.resume import (
    LOCK_FILE,
    RESOLVED_HYPERPARAMS_KEY,
    RESUME_FLAGS,
    ResumePlan,
    applyPlan,
    checkPlan,
    continueCommand,
    fallbackNote,
    installStopHandlers,
    loadResumeArgs,
    lockRun,
    modelFiles,
    planResume,
    runStatus,
)

__all__ = ["restoreRun", "LOCK_FILE", "RESOLVED_HYPERPARAMS_KEY", "RESUME_FLAGS", "ResumePlan", "applyPlan", "checkPlan",
           "continueCommand", "fallbackNote", "installStopHandlers", "loadResumeArgs", "lockRun", "modelFiles", "planResume",
           "runStatus"]
