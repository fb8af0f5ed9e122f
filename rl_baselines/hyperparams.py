"""Re-export shim (published path): this module's contents live in :mod:`rl_baselines.core.hyperparams`."""
from rl_baselines.core.hyperparams import DISCOUNT, FRACTION, NON_NEGATIVE, POSITIVE, Hyperparam, Interval, asInterval

__all__ = ["DISCOUNT", "FRACTION", "Hyperparam", "Interval", "NON_NEGATIVE", "POSITIVE", "asInterval"]
