"""A ppo1 worker that fails at once (tests/test_ppo1.py spawns it through LocalWorkers): a module that imports
nothing, so that the spawned process starts in a moment (from the test module it would import torch and the rest)."""
from __future__ import annotations

import sys


def failingWorker(_value: str, rank: int, report) -> None:
    """A worker (spawned by LocalWorkers) that fails at once, saying why."""
    report.send(f"RuntimeError: rank {rank} gives up")
    sys.exit(3)
