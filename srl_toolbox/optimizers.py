"""Torch optimizers' steps in one call per operation over all of a group's tensors: :func:`multiTensorSteps`.

On a CPU, torch's optimizers step one parameter tensor at a time unless told otherwise (``foreach=None``): a Python
loop of several operations per tensor. Their multi-tensor implementation (``foreach=True``) runs the same per-tensor
kernels with the same scalars from one call per operation, so the parameters and the optimizer's state are the same
to the last bit, in fewer Python calls (docs/benchmarks.md measures what that saves).

Invariants: only a parameter group whose ``foreach`` is None (torch's own choice) and that is not ``fused`` steps so;
the option is set for the step alone and put back after it, so that a saved optimizer state (a model zip, a
checkpoint) is the one torch's default writes; an optimizer without the option (KFAC) is left as it is; on a GPU
torch already chooses the multi-tensor steps, so nothing changes there.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# the attribute of an optimizer this module hooked: the parameter groups its pre-hook switched for the step
_SWITCHED = "_srl_toolbox_multi_tensor_groups"


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


def _multiTensorOn(optimizer: Any, args: Any, kwargs: Any) -> None:
    """Step pre-hook: ``foreach`` on in the groups that leave it to torch (those of a step that raised given back
    first)."""
    _multiTensorOff(optimizer, args, kwargs)
    switched = [group for group in optimizer.param_groups
                if "foreach" in group and group["foreach"] is None and not group.get("fused")]
    for group in switched:
        group["foreach"] = True
    setattr(optimizer, _SWITCHED, switched)


def _multiTensorOff(optimizer: Any, args: Any, kwargs: Any) -> None:
    """Step post-hook: those groups' ``foreach`` back to None (torch's choice), as a saved state records it."""
    for group in getattr(optimizer, _SWITCHED):
        group["foreach"] = None
    setattr(optimizer, _SWITCHED, [])
