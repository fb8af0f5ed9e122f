"""Atomic file writes for the RL side (defined in environments.files, the bottom of the dependency order)."""
from environments.files import atomicPath, readJson, sha256File, writeJson, writeNpz

__all__ = ["atomicPath", "readJson", "sha256File", "writeJson", "writeNpz"]
