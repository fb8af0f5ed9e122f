"""What the tests of a learned state in front of an agent share: the states an SRL model's evaluation records, made
to span a chosen number of directions."""
from __future__ import annotations

import os

import numpy as np

from srl_models.base import STATES_FILE
from srl_models.metrics import participationRatio


def recordStates(folder: str, state_dim: int, directions: int = 2, seed: int = 0) -> float:
    """Write states.npz as srl_models.evaluate does, states spanning ``directions`` directions;
    :return: the scale they give, sqrt(P / state_dim)"""
    rng = np.random.default_rng(seed)
    states = rng.normal(size=(300, directions)) @ rng.normal(size=(directions, state_dim)) + rng.normal(size=state_dim)
    np.savez(os.path.join(folder, STATES_FILE), states=states.astype(np.float32), ground_truth=np.zeros((300, 2)))
    return float(np.sqrt(participationRatio(states) / state_dim))
