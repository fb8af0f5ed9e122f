"""On-policy training without torch.distributions' argument checks, and the cheaper checks standing in for them.

torch checks a distribution's parameters, and the values ``log_prob`` is given, on every call unless told otherwise;
a policy-gradient learner builds a distribution for each step it acts and for each minibatch it trains on, so on a
low-dimensional state the checks are a visible share of a step. What they caught in a training run is a policy that
diverged (NaN or inf in its weights, then in its outputs) or an env that returned NaN. :func:`withoutArgumentChecks`
turns them off for a training loop (the process's setting is put back after it, whatever happens), and
:func:`checkParameters` raises :class:`TrainingDiverged` instead once an update has left NaN or inf in the
parameters, before any action is drawn from them and before a checkpoint is taken:

- the SB3-backed on-policy learners: :class:`FiniteTraining`, the first of the callbacks, at every rollout start
  (their parameters change only between rollouts), and at every step when the actions the policy chose, or the
  observations it will act on next, hold NaN or inf (floating-point arrays only: images and discrete actions cannot);
- the actor-critics written here (acktr, acer, ppo1: rl_baselines.rl_algorithm.torch_common): after every update.

An SB3 off-policy learner updates between the steps of what SB3 calls rollouts (one step each by default) and may hold
large networks: it keeps torch's checks (they guard SAC's sampled actions), and its parameters are checked no more
than once per :data:`PARAMETER_CHECK_STEPS` steps (deepq, written here: at each copy of its target network), which
gives the deterministic policies that no distribution checks (qrdqn's, td3's, ddpg's, deepq's) an error where their
training went on with NaN weights. Its actions are drawn between two callbacks, so :class:`FiniteActions` stands
between it and the envs: a NaN or inf action raises TrainingDiverged before any env is stepped with it. An error
raised inside ``learn`` while the parameters hold NaN or inf (torch's own check of SAC's Gaussian) is reported as
TrainingDiverged too (:func:`divergedInstead`). The checks draw no random number: a run trains exactly as with torch's
checks on.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from torch.distributions import Distribution

from srl_toolbox.errors import CommandFailed

PARAMETER_CHECK_STEPS = 1000


class TrainingDiverged(CommandFailed):
    """Training produced NaN or inf: one line on the command line (``error: ...``, exit code 1)."""


@contextlib.contextmanager
def withoutArgumentChecks() -> Iterator[None]:
    """Turn off torch.distributions' default argument checks inside the block; the setting before it is put back."""
    before = Distribution._validate_args  # (torch has a setter, no getter)
    Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        Distribution.set_default_validate_args(before)


def _finite(value: Any) -> bool:
    """:return: False when a floating-point array (or one of a dict's) holds NaN or inf"""
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    array = np.asarray(value) if value is not None else None
    return array is None or not np.issubdtype(array.dtype, np.inexact) or bool(np.isfinite(array).all())


def checkParameters(modules: Iterable[torch.nn.Module], steps: int) -> None:
    """
    :param modules: the networks a policy acts and learns with
    :param steps: the run's step count, for the message
    :raises TrainingDiverged: one of their parameters holds NaN or inf
    """
    if not _allFinite(modules):
        raise _parametersDiverged(steps)


def _allFinite(modules: Iterable[torch.nn.Module]) -> bool:
    return all(parametersFinite(module) for module in modules)


def _parametersDiverged(steps: int) -> TrainingDiverged:
    return TrainingDiverged(f"training diverged by step {steps:,}: the policy's parameters hold NaN or inf (a smaller "
                            f"learning rate usually helps)")


def _actionsDiverged(steps: int) -> TrainingDiverged:
    return TrainingDiverged(f"training diverged at step {steps:,}: the policy's actions hold NaN or inf (from its "
                            f"parameters or from the observations it acted on)")


@contextlib.contextmanager
def divergedInstead(modules: Iterable[torch.nn.Module], steps: Callable[[], int]) -> Iterator[None]:
    """
    Inside the block, an exception raised while ``modules``' parameters hold NaN or inf becomes TrainingDiverged
    (chained to it); one raised with finite parameters, and a command's own one-line error (a CommandFailed: a full
    disk, the divergence itself), go on as they were.

    :param modules: the networks a policy acts and learns with
    :param steps: gives the run's step count, for the message
    """
    try:
        yield
    except CommandFailed:
        raise
    except Exception as error:
        if _allFinite(modules):
            raise
        raise _parametersDiverged(steps()) from error


def parametersFinite(module: torch.nn.Module) -> bool:
    """:return: whether every parameter of ``module`` is finite (one sum per tensor, then a single test: a sum that
    overflows counts as not finite, as weights that large have diverged)"""
    sums = [parameter.detach().sum().float() for parameter in module.parameters()]  # (one dtype to stack)
    return not sums or bool(torch.stack(sums).sum().isfinite())


class FiniteTraining(BaseCallback):
    """
    Raises :class:`TrainingDiverged` when the policy's parameters, its actions or the observations hold NaN or inf.

    :param every: steps between two checks of the parameters at rollout starts (0: every rollout start)
    """

    def __init__(self, every: int = 0) -> None:
        super().__init__()
        self.every = every
        self.checked_at: int | None = None

    def _on_rollout_start(self) -> None:
        steps = self.model.num_timesteps
        if self.checked_at is not None and steps - self.checked_at < self.every:
            return
        self.checked_at = steps
        checkParameters([self.model.policy], steps)

    def _on_step(self) -> bool:
        if not _finite(self.locals.get("actions")):
            raise _actionsDiverged(self.model.num_timesteps)
        if not _finite(self.locals.get("new_obs")):
            raise TrainingDiverged(f"the env returned an observation holding NaN or inf at step "
                                   f"{self.model.num_timesteps:,} (after its normalisation, if the run has one)")
        return True


class FiniteActions(VecEnvWrapper):
    """
    Raises :class:`TrainingDiverged` instead of stepping the envs with actions that hold NaN or inf.

    :param venv: the learner's VecEnv
    :param steps: gives the run's step count, for the message
    """

    def __init__(self, venv: VecEnv, steps: Callable[[], int]) -> None:
        super().__init__(venv)
        self.steps = steps

    def step_async(self, actions: np.ndarray) -> None:
        if not _finite(actions):
            raise _actionsDiverged(self.steps())
        self.venv.step_async(actions)

    def step_wait(self) -> Any:
        return self.venv.step_wait()

    def reset(self) -> Any:
        return self.venv.reset()
