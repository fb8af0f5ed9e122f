"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`rl_baselines.core.hyperparams` instead. Importing this module re-exports the names it always had
and emits a ``DeprecationWarning`` naming the new path (srl_toolbox.deprecation); the project's own modules never
import it.
"""
from rl_baselines.core.hyperparams import DISCOUNT, FRACTION, NON_NEGATIVE, POSITIVE, Hyperparam, Interval, asInterval
from srl_toolbox.deprecation import warnMovedModule

__all__ = ["DISCOUNT", "FRACTION", "Hyperparam", "Interval", "NON_NEGATIVE", "POSITIVE", "asInterval"]

warnMovedModule("rl_baselines.hyperparams", "rl_baselines.core.hyperparams")
