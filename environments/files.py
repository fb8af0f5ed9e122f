"""Re-export shim (published path): the atomic file helpers live in :mod:`srl_toolbox.files`."""
from srl_toolbox.files import atomicPath, readJson, sha256File, writeJson, writeNpz

__all__ = ["atomicPath", "readJson", "sha256File", "writeJson", "writeNpz"]
