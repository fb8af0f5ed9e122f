"""The glue between the toolbox's learner and Stable-Baselines3's ``learn``: the SB3 callbacks that the SB3 adapter's
``learnModel`` (rl_baselines.rl_algorithm.sb3_base) runs around the train command's, the adapter of an old-style
callback, and the restart of SB3's rollout that a resumed run needs.

Invariants: these callbacks never draw from a random generator and change nothing SB3 computes (the trained agent is
SB3's own); what they keep of a run (episodes pending at a step, the rollouts counted) lives on the learner, whose
checkpoints save it; :func:`restartSB3Rollout` is one of the two places where the toolbox writes SB3's private
attributes (docs/architecture.md).
"""
from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from rl_baselines.core.base import BaseRLObject, notifyCleanPoint


def learnDefault(model_class: type, name: str) -> Any:
    """
    :param model_class: an SB3 algorithm's class
    :param name: a parameter of its ``learn``
    :return: the parameter's default, read from the nearest ``learn`` in the class's MRO that declares it (a
        ``learn`` replaced by a ``(*args, **kwargs)`` wrapper, as a profiler's patch may be, is looked through)
    """
    for owner in model_class.__mro__:
        learn = owner.__dict__.get("learn")
        if learn is not None:
            parameter = inspect.signature(learn).parameters.get(name)
            if parameter is not None:
                return parameter.default
    raise TypeError(f"{model_class.__name__}.learn has no parameter {name!r}")


class PendingEpisodes(BaseCallback):
    """
    Holds, while the callbacks of a step run, the step's ``infos`` and ``dones`` in the learner's ``pending_infos``
    (a StableBaselinesRLObject's): SB3 adds the episodes that ended at the step to its episode buffers
    only after the step's callbacks, so that a model a callback saves (a checkpoint) would otherwise leave them out, and
    a run resumed from it would miss them in every later rollout/ep_* mean. Cleared at each rollout's start and end,
    by which time SB3 has added them.

    :param learner: the algorithm being trained (a StableBaselinesRLObject)
    """

    def __init__(self, learner: BaseRLObject) -> None:
        super().__init__()
        self.learner = learner

    def _on_step(self) -> bool:
        self.learner.pending_infos = (self.locals.get("infos"), self.locals.get("dones"))
        return True

    def _on_rollout_start(self) -> None:
        self.learner.pending_infos = None

    def _on_rollout_end(self) -> None:
        self.learner.pending_infos = None

    def _on_training_end(self) -> None:
        self.learner.pending_infos = None


class RolloutLogs(BaseCallback):
    """
    An on-policy learner's progress.csv row (SB3's ``dump_logs``) after every ``log_interval`` rollouts of the run,
    its ``time/iterations`` the rollouts so far, at the end of each rollout: what SB3's ``learn`` does right after it,
    except that SB3 counts the rollouts of its own call, from 1 again in a resumed run. The count is the learner's
    (a StableBaselinesRLObject's ``rollouts``), which its checkpoints keep.

    :param learner: the algorithm being trained (a StableBaselinesRLObject)
    :param log_interval: rollouts between two rows (SB3's default for the learner: 100 for A2C, 1 for the others)
    """

    def __init__(self, learner: BaseRLObject, log_interval: int | None) -> None:
        super().__init__()
        self.learner = learner
        self.log_interval = log_interval

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.learner.rollouts += 1
        if self.log_interval and self.learner.rollouts % self.log_interval == 0:
            dump = getattr(self.model, "dump_logs", None) or self.model._dump_logs  # (renamed in SB3 2.4)
            dump(self.learner.rollouts)


def sb3Callback(callback: Any) -> BaseCallback:
    """
    :param callback: the callback ``train`` received: an SB3 ``BaseCallback`` (the train command's
        TrainingCallbacks) or an old-style ``callback(_locals, _globals) -> bool``
    :return: what SB3's ``learn`` takes: an SB3 callback as it is; an old-style one wrapped in an SB3 callback that
        calls it after every step and tells it about every rollout start (after the previous update, where a
        checkpoint is exactly what training goes on from: notifyCleanPoint), the reverse of TrainingCallbacks
    """
    if isinstance(callback, BaseCallback):
        return callback

    class _OldStyleCallback(BaseCallback):
        def _on_step(self) -> bool:
            return callback(self.locals, self.globals)

        def _on_rollout_start(self) -> None:
            notifyCleanPoint(callback, self.model.num_timesteps)

    return _OldStyleCallback()


def restartSB3Rollout(model: Any) -> None:
    """
    Make an SB3 model's next ``learn`` start its rollout from a reset of its env, as a resumed run must (the episodes
    in progress at the checkpoint start again and are played again to where they were:
    rl_baselines.core.training_state.restartEpisodes).

    With ppo_lstm's LSTM states (PPOLSTMModel.loadTrainingState), the only place where the toolbox writes SB3's
    private attributes: ``_last_obs`` (the observation the next step acts on), ``_last_episode_starts`` (all True,
    as SB3 sets them: the policy's input of a recurrent one, which ppo_lstm sets back) and, with a VecNormalize,
    ``_last_original_obs`` (the unnormalised observation off-policy algorithms store in their replay buffer): the
    values SB3's own ``_setup_learn`` sets when it resets, set here so that the reset happens while the checkpoint
    is restored (before the global random generators are, and while the normalisation statistics are frozen for it)
    rather than inside ``learn``.

    :param model: an SB3 model with its env
    """
    model._last_obs = model.env.reset()
    model._last_episode_starts = np.ones((model.env.num_envs,), dtype=bool)
    vec_normalize = model.get_vec_normalize_env()
    if vec_normalize is not None:
        model._last_original_obs = vec_normalize.get_original_obs()
