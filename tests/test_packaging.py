"""Packaging: one version everywhere (packages, setup.py, --version, CHANGELOG) and requirement ranges that keep a
user's own torch build."""
import os
import re
import runpy
from importlib.metadata import version as installed_version

import pytest
import setuptools
from conftest import runModule
from packaging.requirements import Requirement

import environments
import replay
import rl_baselines
import srl_models
import srl_toolbox

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def setupArguments() -> dict:
    """The keyword arguments setup.py passes to setuptools.setup (run without building anything)."""
    captured = {}
    original, cwd = setuptools.setup, os.getcwd()
    setuptools.setup = lambda **kwargs: captured.update(kwargs)
    try:
        os.chdir(ROOT)
        runpy.run_path(os.path.join(ROOT, "setup.py"))
    finally:
        setuptools.setup = original
        os.chdir(cwd)
    return captured


def test_one_version_everywhere(setupArguments):
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+)?", srl_toolbox.__version__)
    for package in (rl_baselines, srl_models, environments, replay):
        assert package.__version__ == srl_toolbox.__version__
    assert setupArguments["version"] == srl_toolbox.__version__
    assert "srl_toolbox" in setupArguments["packages"]


def test_changelog_has_a_section_for_this_version():
    with open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8") as handle:
        headings = re.findall(r"^## \[([^\]]+)\]", handle.read(), re.MULTILINE)
    expected = "Unreleased" if ".dev" in srl_toolbox.__version__ else srl_toolbox.__version__
    assert headings and headings[0] == expected, headings
    released = srl_toolbox.__version__.split(".dev")[0]
    assert released not in headings[1:], f"{released} is released already: bump srl_toolbox.__version__"


def test_requirements_are_ranges_the_installed_versions_meet(setupArguments):
    requirements = {Requirement(line).name: Requirement(line) for line in setupArguments["install_requires"]}
    torch = requirements["torch"]
    assert not any(spec.operator in ("==", "===") for spec in torch.specifier), torch  # a user's CUDA build stays
    for name in ("torch", "tornado", "filelock"):
        assert requirements[name].specifier.contains(installed_version(name).split("+")[0]), name


@pytest.mark.parametrize("module", ["rl_baselines.train", "rl_baselines.pipeline", "replay.enjoy_baselines",
                                    "srl_models.train", "environments.dataset_generator"])
def test_version_flag(module):
    result = runModule(module, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"python -m {module} (srl-toolbox {srl_toolbox.__version__})"
