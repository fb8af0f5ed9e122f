"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`srl_toolbox.devices` instead. Importing this module re-exports the names it always had and emits a
``DeprecationWarning`` naming the new path (srl_toolbox.deprecation); the project's own modules never import it.
"""
from srl_toolbox.deprecation import warnMovedModule
from srl_toolbox.devices import DEFAULT_RUN_DEVICE, DEVICE_CHOICES, parseDevice, resolveDevice, reuseDevice, runDevice

__all__ = ["DEFAULT_RUN_DEVICE", "DEVICE_CHOICES", "parseDevice", "reuseDevice", "resolveDevice", "runDevice"]

warnMovedModule("rl_baselines.devices", "srl_toolbox.devices")
