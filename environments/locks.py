"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`srl_toolbox.locks` instead. Importing this module re-exports the names it always had and emits a
``DeprecationWarning`` naming the new path (srl_toolbox.deprecation); the project's own modules never import it.
"""
from srl_toolbox.deprecation import warnMovedModule
from srl_toolbox.locks import acquireLock, lockPathFor, tryLock

__all__ = ["acquireLock", "lockPathFor", "tryLock"]

warnMovedModule("environments.locks", "srl_toolbox.locks")
