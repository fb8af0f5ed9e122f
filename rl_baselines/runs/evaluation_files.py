"""Reading a run's ``evaluations.npz`` (SB3's EvalCallback format), which ``train --eval-freq`` writes
(:mod:`rl_baselines.runs.evaluation`).

Kept apart from the evaluation itself so that readers of run folders (the search's trial watchers, replay, the
benchmarks) import NumPy only, not torch or Stable-Baselines3.
"""
from __future__ import annotations

import os
import zipfile

import numpy as np

from rl_baselines.core.run_folder import RunFolder

# The arrays of evaluations.npz (SB3's EvalCallback names); "successes" is optional.
EVALUATION_KEYS = ("timesteps", "results", "ep_lengths")

__all__ = ["EVALUATION_KEYS", "readEvaluations"]


def readEvaluations(path: str) -> dict[str, np.ndarray] | None:
    """
    :param path: an evaluations.npz file (SB3's EvalCallback format) or a run folder holding one
    :return: its arrays (``timesteps``, ``results``, ``ep_lengths``, maybe ``successes``), None when there is no
        such file
    :raises ValueError: the file is unreadable or lacks SB3's keys
    """
    if os.path.isdir(path):
        path = RunFolder(path).evaluations_file
    if not os.path.isfile(path):
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: np.asarray(data[name]) for name in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:  # (a truncated or corrupt file)
        raise ValueError(f"{path} is not a readable .npz file ({error})") from None
    missing = [key for key in EVALUATION_KEYS if key not in arrays]
    if missing:
        raise ValueError(f"{path} lacks {', '.join(missing)} (SB3's EvalCallback keys)")
    if arrays["results"].ndim != 2 or arrays["results"].shape[0] != arrays["timesteps"].shape[0]:
        raise ValueError(f"{path}: results must have one row per entry of timesteps")
    return arrays
