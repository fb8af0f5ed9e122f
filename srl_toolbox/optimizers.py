"""Torch optimizers' steps in one call per operation over all of a group's tensors: :func:`multiTensorSteps`; and
within :func:`fusedSteps`, in one kernel over all of them.

On a CPU, torch's optimizers step one parameter tensor at a time unless told otherwise (``foreach=None``): a Python
loop of several operations per tensor. Their multi-tensor implementation (``foreach=True``) runs the same per-tensor
kernels with the same scalars from one call per operation, so the parameters and the optimizer's state are the same
to the last bit, in fewer Python calls (docs/benchmarks.md measures what that saves).

Invariants: only a parameter group whose ``foreach`` is None (torch's own choice) and that is not ``fused`` steps so;
the option is set for the step alone and put back after it, so that a saved optimizer state (a model zip, a
checkpoint) is the one torch's default writes; an optimizer without the option (KFAC) is left as it is; on a GPU
torch already chooses the multi-tensor steps, so nothing changes there.

Within :func:`fusedSteps`, a hooked optimizer whose groups take torch's ``fused`` option (Adam, AdamW) steps with its
fused kernel instead: the same update, rounded otherwise (the floats differ in their last bits from the per-tensor
and multi-tensor steps'), so it is for computations whose bits differ from the unfused ones anyway (ppo2's sharded
pixel updates: rl_baselines.rl_algorithm.sharded_features); ``fused`` too is set for the step alone.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

# the attribute of an optimizer this module hooked: the parameter groups its pre-hook switched for the step, each
# with the option it set
_SWITCHED = "_srl_toolbox_multi_tensor_groups"
# the attribute of a hooked optimizer that steps fused (fusedSteps)
_FUSED = "_srl_toolbox_fused_steps"


def multiTensorSteps(optimizers: Iterable[Any]) -> None:
    """
    Make each of ``optimizers`` (torch optimizers) step with the multi-tensor implementation where torch would loop
    over its tensors (see the module docstring); an optimizer hooked already is left as it is.

    :param optimizers: torch optimizers
    """
    for optimizer in optimizers:
        if not hasattr(optimizer, _SWITCHED):
            setattr(optimizer, _SWITCHED, [])
            optimizer.register_step_pre_hook(_multiTensorOn)
            optimizer.register_step_post_hook(_multiTensorOff)


@contextlib.contextmanager
def fusedSteps(optimizers: Iterable[Any]) -> Iterator[None]:
    """
    Within: each of ``optimizers`` hooked by :func:`multiTensorSteps` steps with torch's fused kernel where its
    groups take the option (the module docstring); others step as before.

    :param optimizers: torch optimizers
    """
    hooked = [optimizer for optimizer in optimizers if hasattr(optimizer, _SWITCHED)]
    for optimizer in hooked:
        setattr(optimizer, _FUSED, True)
    try:
        yield
    finally:
        for optimizer in hooked:
            setattr(optimizer, _FUSED, False)


def _multiTensorOn(optimizer: Any, args: Any, kwargs: Any) -> None:
    """Step pre-hook: ``foreach`` (or within :func:`fusedSteps` ``fused``) on in the groups that leave both to torch
    (those of a step that raised given back first)."""
    _multiTensorOff(optimizer, args, kwargs)
    fused = getattr(optimizer, _FUSED, False)
    switched = []
    for group in optimizer.param_groups:
        if "foreach" in group and group["foreach"] is None and not group.get("fused"):
            option = "fused" if fused and "fused" in group else "foreach"
            switched.append((group, option, group[option]))
            group[option] = True
    setattr(optimizer, _SWITCHED, switched)


def _multiTensorOff(optimizer: Any, args: Any, kwargs: Any) -> None:
    """Step post-hook: those groups' option back to what it was (torch's choice), as a saved state records it."""
    for group, option, former in getattr(optimizer, _SWITCHED):
        group[option] = former
    setattr(optimizer, _SWITCHED, [])
