"""The process-wide state a library call should leave as its caller had it: the global random generators and
torch's CPU thread count.

Training and loading seed Python's ``random``, NumPy's legacy global generator and torch's generators, and set
torch's thread count; the Python APIs (rl_baselines.api, srl_models.api) run them inside :func:`callerSettings`, and a
checkpoint stores the generators as the arrays of :func:`captureGlobalRNG` (NumPy arrays, never pickle). Imports
torch: only the modules that compute with it import this one.
"""
from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch


def captureGlobalRNG() -> dict[str, np.ndarray]:
    """
    :return: the states of Python's, NumPy's (legacy global) and torch's CPU generators, as arrays, and with
        ``torch_cuda_states`` each CUDA device's generator (one row per device) once this process initialised CUDA
        (a process that never did draws nothing there, and reading them would initialise it)
    """
    version, python_state, gauss = random.getstate()
    _, keys, position, has_gauss, cached_gaussian = np.random.get_state()
    arrays = {
        "python_version": np.asarray(version),
        "python_state": np.asarray(python_state, dtype=np.uint64),
        "python_gauss": np.asarray(np.nan if gauss is None else gauss, dtype=np.float64),
        "numpy_keys": np.asarray(keys, dtype=np.uint32),
        "numpy_position": np.asarray(position),
        "numpy_has_gauss": np.asarray(has_gauss),
        "numpy_cached_gaussian": np.asarray(cached_gaussian, dtype=np.float64),
        "torch_state": torch.get_rng_state().numpy(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        arrays["torch_cuda_states"] = np.stack([state.numpy() for state in torch.cuda.get_rng_state_all()])
    return arrays


def restoreGlobalRNG(arrays: Any) -> None:
    """
    :param arrays: what :func:`captureGlobalRNG` returned (or the npz file holding it); its CUDA generators are set
        on the devices this machine has (none without CUDA: a GPU run resumed on the CPU draws nothing there)
    """
    gauss = float(arrays["python_gauss"])
    random.setstate((int(arrays["python_version"]), tuple(int(x) for x in arrays["python_state"]),
                     None if np.isnan(gauss) else gauss))
    np.random.set_state(("MT19937", np.asarray(arrays["numpy_keys"], dtype=np.uint32), int(arrays["numpy_position"]),
                         int(arrays["numpy_has_gauss"]), float(arrays["numpy_cached_gaussian"])))
    torch.set_rng_state(torch.as_tensor(np.asarray(arrays["torch_state"], dtype=np.uint8)))
    if "torch_cuda_states" in getattr(arrays, "files", arrays) and torch.cuda.is_available():
        states = np.asarray(arrays["torch_cuda_states"], dtype=np.uint8)
        for device in range(min(len(states), torch.cuda.device_count())):
            torch.cuda.set_rng_state(torch.as_tensor(states[device]), device)


@contextlib.contextmanager
def callerSettings(rng: bool = True) -> Iterator[None]:
    """Put back torch's thread count (which training and an SRL model's encoder set) and, with ``rng``, Python's,
    NumPy's and torch's global generators (which loading a model, training and evaluating seed) as the caller had
    them."""
    threads, rng_state = torch.get_num_threads(), captureGlobalRNG() if rng else None
    try:
        yield
    finally:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        if rng_state is not None:
            restoreGlobalRNG(rng_state)
