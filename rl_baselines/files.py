"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`srl_toolbox.files` instead. Importing this module re-exports the names it always had and emits a
``DeprecationWarning`` naming the new path (srl_toolbox.deprecation); the project's own modules never import it.
"""
from srl_toolbox.deprecation import warnMovedModule
from srl_toolbox.files import atomicPath, readJson, sha256File, writeJson, writeNpz

__all__ = ["atomicPath", "readJson", "sha256File", "writeJson", "writeNpz"]

warnMovedModule("rl_baselines.files", "srl_toolbox.files")
