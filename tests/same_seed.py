"""The same-seed reference: a digest of what a short run of each algorithm ends with, committed beside the tests.

``tests/data/same_seed_reference.json`` holds, for every determinism case of ``tests/test_determinism.py`` (an
algorithm and a number of envs), the SHA-256 of the run's final parameters (every tensor and array of the saved model
and of ``vecnormalize.npz``, in a canonical order) and the monitor's episodes. A refactor that is meant to change no
result must leave every entry as it is, bit for bit.

Floating-point kernels differ between CPU instruction sets and between CPU vendors with the same instruction set (an
AMD EPYC and an Intel Xeon, both AVX512, end with other parameters), so the file holds one reference per kind of
machine, keyed by both (``torch.backends.cpu.get_cpu_capability()`` and /proc/cpuinfo's vendor_id, and whether the CPU
has AVX-512 where torch's kernels are AVX2: :func:`cpuCapability`; ``"machines": {"AVX512 GenuineIntel": {"cases":
...}, ...}``); on a kind it does not hold, tests/test_determinism.py runs each case twice and compares the two runs
instead.

Record this machine's reference (on a new kind of machine, or again on every kind when a change is meant to change
results: say so in the commit) with ``SAME_SEED_RECORD=1 python -m pytest tests/test_determinism.py -k cpu``; the
other machines' references are kept.
"""
from __future__ import annotations

import fcntl
import glob
import hashlib
import io
import json
import os
import tempfile
import zipfile
from typing import Any

import numpy as np
import torch

REFERENCE_FILE = os.path.join(os.path.dirname(__file__), "data", "same_seed_reference.json")
RECORD_VARIABLE = "SAME_SEED_RECORD"


def cpuCapability() -> str:
    """:return: the instruction set of torch's CPU kernels on this machine and the CPU's vendor (``AVX512
    GenuineIntel``, ``AVX2 AuthenticAMD``, ...; ``unknown`` where /proc/cpuinfo does not say), followed by ``, AVX512
    CPU`` where the CPU has AVX-512 and torch's own kernels use less: the matrix products (MKL, oneDNN) use it, so an
    AMD EPYC with AVX-512 and one without, both AVX2 to torch, end with other parameters"""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        lines = []
    vendor = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("vendor_id")), "unknown")
    flags = set(next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), []))
    capability = torch.backends.cpu.get_cpu_capability()
    wider = ", AVX512 CPU" if "avx512f" in flags and not capability.startswith("AVX512") else ""
    return f"{capability} {vendor}{wider}"


def _feed(digest: Any, value: Any) -> None:
    """Add ``value`` (nested mappings and sequences of tensors, arrays, numbers and strings) to ``digest``."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        digest.update(f"array{value.dtype.str}{value.shape}".encode())
        digest.update(np.ascontiguousarray(value).tobytes() if value.dtype != object else repr(value.tolist()).encode())
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            digest.update(f"key{key!s}".encode())
            _feed(digest, value[key])
    elif isinstance(value, (list, tuple)):
        digest.update(f"seq{len(value)}".encode())
        for item in value:
            _feed(digest, item)
    else:
        digest.update(repr(value).encode())


def _feedFile(digest: Any, path: str) -> None:
    """Add the parameters a saved model or statistics file holds (what a training wrote, not when or where)."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for name in sorted(archive.namelist()):
                data = archive.read(name)
                if name.endswith(".npy"):  # an .npz (np.savez)
                    _feed(digest, {name: np.load(io.BytesIO(data), allow_pickle=False)})
                elif name.endswith(".pth"):  # SB3's model zip: the state dicts; its "data" member is settings
                    _feed(digest, {name: torch.load(io.BytesIO(data), weights_only=True)})
        return
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as handle:
            _feed(digest, json.load(handle))
        return
    _feed(digest, torch.load(path, weights_only=True))


def parameterDigest(run_dir: str) -> str:
    """
    :param run_dir: a finished run folder
    :return: the SHA-256 of its final model's parameters and its normalisation statistics
    """
    models = sorted(glob.glob(os.path.join(run_dir, "*_model.*")))
    assert models, f"no saved model in {run_dir}"
    digest = hashlib.sha256()
    for path in [*models, *glob.glob(os.path.join(run_dir, "vecnormalize.npz"))]:
        digest.update(os.path.basename(path).encode())
        _feedFile(digest, path)
    return digest.hexdigest()


def loadReference() -> dict[str, Any]:
    """:return: the committed references by kind of machine (``{cpuCapability(): {"cases": {case: entry}}}``; empty
        when there is none yet)"""
    if not os.path.exists(REFERENCE_FILE):
        return {}
    with open(REFERENCE_FILE, encoding="utf-8") as handle:
        return json.load(handle).get("machines", {})


def machineReference() -> dict[str, Any]:
    """:return: the reference cases recorded on this kind of machine (empty: none)"""
    return loadReference().get(cpuCapability(), {}).get("cases", {})


def recordCase(case: str, entry: dict[str, Any]) -> None:
    """Write ``entry`` as this machine's reference of ``case`` (pytest-xdist workers may record at once: read,
    merge, replace; the other machines' references are kept)."""
    os.makedirs(os.path.dirname(REFERENCE_FILE), exist_ok=True)
    with open(os.path.join(tempfile.gettempdir(), "srl_toolbox_same_seed.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        machines = loadReference()
        machines.setdefault(cpuCapability(), {}).setdefault("cases", {})[case] = entry
        tmp_path = REFERENCE_FILE + ".tmp"
        with open(tmp_path, "w", encoding="utf-8") as handle:
            json.dump({"machines": machines}, handle, indent=1, sort_keys=True)
            handle.write("\n")
        os.replace(tmp_path, REFERENCE_FILE)
