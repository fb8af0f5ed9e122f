"""Deprecated import paths: the one place that says which version removes them.

A re-export shim (a module kept at an old import path, its contents living elsewhere) calls :func:`warnMovedModule`
when it is imported. The warning is a ``DeprecationWarning`` naming the module to import instead and
:data:`REMOVAL_VERSION`, and it points at the line that imported the shim (importlib's own frames are skipped), so
the importer, not the shim, is what the warning names. Python imports a module once per process, so it is emitted
once per process. The project's own modules never import a shim (tests/test_shims.py checks it).
"""
from __future__ import annotations

import warnings

# The release that deletes the re-export shims: the one after the release (0.2.0) that deprecates them
REMOVAL_VERSION = "0.3.0"
# warnMovedModule's frame, then the shim's module code: the next frame outside importlib is the importing line
_IMPORTER_STACKLEVEL = 3


def movedModuleMessage(old: str, new: str) -> str:
    """
    :param old: the deprecated module path, e.g. ``rl_baselines.utils``
    :param new: where its contents live now, one module or several joined with " and "
    :return: the warning's text
    """
    return (f"{old} is deprecated and will be removed in srl-toolbox {REMOVAL_VERSION}: "
            f"import from {new} instead")


def warnMovedModule(old: str, new: str) -> None:
    """Warn that the shim ``old`` is being imported (called from the shim's module code, once per process).

    :param old: the deprecated module path
    :param new: where its contents live now
    """
    warnings.warn(movedModuleMessage(old, new), DeprecationWarning, stacklevel=_IMPORTER_STACKLEVEL)
