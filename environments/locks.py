"""Re-export shim (published path): file locks live in :mod:`srl_toolbox.locks`."""
from srl_toolbox.locks import acquireLock, lockPathFor, tryLock

__all__ = ["acquireLock", "lockPathFor", "tryLock"]
