"""OpenMP's idle threads wait passively in the toolbox's processes (srl_toolbox.passiveOpenMP), unless the user chose:
the variable is set before torch loads, in every command and in a program importing the packages, and passed on to
the processes they start; a user's OMP_WAIT_POLICY or GOMP_SPINCOUNT is kept."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO

from srl_toolbox import WAIT_VARIABLES, passiveOpenMP

# Prints the variables after importing the package, and OMP_WAIT_POLICY as it was when torch began to load (what
# OpenMP reads), "unloaded" when the package did not load torch.
PROBE = """
import os, sys
seen = ["unloaded"]
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and seen == ["unloaded"]:
            seen[0] = str(os.environ.get("OMP_WAIT_POLICY"))
        return None
sys.meta_path.insert(0, Watch())
import {package}
import torch
print(os.environ.get("OMP_WAIT_POLICY"), os.environ.get("GOMP_SPINCOUNT"), seen[0])
"""


def _probe(package: str, **variables: str) -> list[str]:
    environ = {name: value for name, value in os.environ.items() if name not in WAIT_VARIABLES}
    environ.update(variables)
    result = subprocess.run([sys.executable, "-c", PROBE.format(package=package)], cwd=REPO, env=environ,
                            capture_output=True, text=True, timeout=120, check=True)
    return result.stdout.split()


def test_passive_unless_the_environment_says_how_to_wait() -> None:
    environ: dict[str, str] = {}
    assert passiveOpenMP(environ) and environ == {"OMP_WAIT_POLICY": "PASSIVE"}
    for given in ({"OMP_WAIT_POLICY": "active"}, {"GOMP_SPINCOUNT": "300000"}, {"OMP_WAIT_POLICY": ""}):
        environ = dict(given)
        assert not passiveOpenMP(environ) and environ == given


@pytest.mark.parametrize("package", ["srl_toolbox", "rl_baselines.train", "srl_models", "environments", "replay"])
def test_every_package_sets_it_before_torch_loads(package: str) -> None:
    assert _probe(package) == ["PASSIVE", "None", "PASSIVE"]


def test_a_users_choice_is_kept() -> None:
    assert _probe("rl_baselines.train", OMP_WAIT_POLICY="ACTIVE") == ["ACTIVE", "None", "ACTIVE"]
    assert _probe("rl_baselines.train", GOMP_SPINCOUNT="300000") == ["None", "300000", "None"]
