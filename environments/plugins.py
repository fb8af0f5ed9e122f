"""Re-export shim (published path): plugin loading lives in :mod:`srl_toolbox.plugins`."""
from srl_toolbox.plugins import apiMajor, loadPlugins

__all__ = ["apiMajor", "loadPlugins"]
