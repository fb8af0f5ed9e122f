"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`rl_baselines.runs.resume` and :mod:`rl_baselines.core.checkpointing` instead. Importing this
module re-exports the names it always had and emits a ``DeprecationWarning`` naming the new path
(srl_toolbox.deprecation); the project's own modules never import it.
"""
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
from srl_toolbox.deprecation import warnMovedModule

__all__ = ["restoreRun", "LOCK_FILE", "RESOLVED_HYPERPARAMS_KEY", "RESUME_FLAGS", "ResumePlan", "applyPlan", "checkPlan",
           "continueCommand", "fallbackNote", "installStopHandlers", "loadResumeArgs", "lockRun", "modelFiles", "planResume",
           "runStatus"]

warnMovedModule("rl_baselines.resume", "rl_baselines.runs.resume and rl_baselines.core.checkpointing")
