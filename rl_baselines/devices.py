"""Re-export shim (published path): the ``--device`` helpers live in :mod:`srl_toolbox.devices`."""
from srl_toolbox.devices import DEFAULT_RUN_DEVICE, DEVICE_CHOICES, parseDevice, resolveDevice, reuseDevice, runDevice

__all__ = ["DEFAULT_RUN_DEVICE", "DEVICE_CHOICES", "parseDevice", "reuseDevice", "resolveDevice", "runDevice"]
