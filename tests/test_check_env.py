"""``python -m environments.check_env ENV_ID``, the env plugins' contract check: it passes on a built-in env and on a
plugin env that keeps the contract (LineWorld, installed as tests/test_env_plugins.py installs it), names the broken
rule of a plugin env that does not (one ``FAILED`` line, exit code 1), and refuses an unknown id in one line."""
from __future__ import annotations

import textwrap

import pytest
from conftest import runModule, siteInterpreter
from test_env_plugins import _installPlugin

from environments.check_env import checkEnv
from srl_toolbox.cli import IMAGE_SIDES, UsageError

BROKEN_CODE = textwrap.dedent('''
    import gymnasium as gym
    import numpy as np

    from line_world.env import LineWorldEnv


    class UndrawnEnv(LineWorldEnv):
        """No render() of its own: gymnasium's, which raises NotImplementedError."""

        render = gym.Env.render


    class StepDtypeEnv(LineWorldEnv):
        """Its reset fits the float32 space, its steps give float64."""

        def step(self, action):
            observation, *rest = super().step(action)
            return (observation.astype(np.float64), *rest)


    class GroundTruthSizeEnv(LineWorldEnv):
        """getGroundTruthDim() says 2 numbers, getGroundTruth() gives 1."""

        @staticmethod
        def getGroundTruthDim():
            return 2


    class UnseededEnv(LineWorldEnv):
        """Its start draws from numpy's global generator, which reset(seed=...) does not reseed."""

        def reset(self, *, seed=None, options=None):
            observation, info = super().reset(seed=seed)
            self.x = float(np.random.uniform(-1, 0))
            return self._obs(), info


    class UnguardedEnv(LineWorldEnv):
        """Keeps the required rules, but neither step nor render refuses to run before reset or after close."""

        def _checkOpen(self, method):
            pass
''')
IMAGE = ("--img-shape", "3", "32", "32")


@pytest.fixture(scope="module")
def checkRun(tmp_path_factory):
    """``run(*ARGS, module="environments.check_env", cwd=None)``: ``python -m MODULE ARGS`` with LineWorld and the
    broken envs installed."""
    site = tmp_path_factory.mktemp("check_env") / "site"
    env = {"PYTHONPATH": _installPlugin(site)}
    (site / "line_world" / "broken_check.py").write_text(BROKEN_CODE)
    dist_info = site / "broken_check-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-check\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(
        "[srl_toolbox.environments]\nUndrawn-v0 = line_world.broken_check:UndrawnEnv\n"
        "StepDtype-v0 = line_world.broken_check:StepDtypeEnv\n"
        "GroundTruthSize-v0 = line_world.broken_check:GroundTruthSizeEnv\n"
        "Unseeded-v0 = line_world.broken_check:UnseededEnv\nUnguarded-v0 = line_world.broken_check:UnguardedEnv\n")
    interpreter = siteInterpreter(env)
    yield lambda *args, module="environments.check_env", cwd=None: runModule(module, *args, env=env, cwd=cwd,
                                                                             interpreter=interpreter)
    interpreter.stop()


def test_a_builtin_env_passes() -> None:
    result = runModule("environments.check_env", "MobileRobotGymEnv-v0", *IMAGE)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "MobileRobotGymEnv-v0: every required check passed"
    for mode in ("ground_truth", "raw_pixels"):
        for kind in ("discrete", "continuous"):
            assert f"ok: {mode}, {kind}: gymnasium check_env passed" in lines
            assert f"ok: {mode}, {kind}: seed 0 repeats its observations and rewards, seed 1 differs" in lines
            assert f"ok: {mode}, {kind}: render() in rgb_array mode gives uint8 (128, 128, 3)" in lines
    assert not [line for line in lines if not line.startswith("ok: ")][:-1], result.stdout


def test_the_docs_minimal_env_passes_every_check(checkRun) -> None:
    """LineWorld, docs/plugins.md's complete minimal environment, keeps the required rules (its render() included: it
    had none, and failed there) and the optional refusals: every line is ``ok``; one that leaves the refusals out
    passes too, with a note for each."""
    result = checkRun("LineWorldEnv-v0", *IMAGE)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "LineWorldEnv-v0: every required check passed"
    assert ("ok: ground_truth, discrete: observations fit Box(-2.0, 2.0, (1,), float32) over 3 episodes (60 steps); "
            "rewards, flags and infos of the right kinds; is_success a bool at 3 episode ends; ground truth of "
            "getGroundTruthDim() numbers") in lines
    assert "ok: raw_pixels, continuous: render() in rgb_array mode gives uint8 (128, 128, 3)" in lines
    assert not [line for line in lines if not line.startswith("ok: ")][:-1], result.stdout
    unguarded = checkRun("Unguarded-v0", *IMAGE)
    assert unguarded.returncode == 0, unguarded.stdout + unguarded.stderr
    notes = [line for line in unguarded.stdout.splitlines() if line.startswith("note: ")]
    assert notes and all("step() before reset() was not refused" in line for line in notes), notes


def test_check_env_from_a_plugins_own_tests_passes_on_line_world(checkRun, tmp_path) -> None:
    """docs/plugins.md's example for a plugin's tests, ``checkEnv`` from Python, after the plugin's own module (its
    tests may import it first): no check of LineWorld fails."""
    (tmp_path / "check_line_world.py").write_text(textwrap.dedent('''
        from line_world.env import LineWorldEnv  # noqa: F401 (the plugin's own module first)
        from environments.check_env import FAILED, checkEnv

        checks = checkEnv("LineWorldEnv-v0", img_shape=(3, 32, 32), episodes=1)
        print(len(checks), [check.line for check in checks if check.status == FAILED])
    '''))
    result = checkRun(module="check_line_world", cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    count, failed = result.stdout.strip().split(" ", 1)
    assert int(count) > 0 and failed == "[]", result.stdout


@pytest.mark.parametrize("env_id, expected", [
    ("StepDtype-v0", "FAILED: ground_truth, discrete: the observation of step() does not fit observation_space: "
                     "float64 (1,) in ["),
    ("GroundTruthSize-v0", "FAILED: ground_truth, discrete: getGroundTruth() after reset() has shape (1,), "
                           "getGroundTruthDim() says 2 numbers"),
    ("Unseeded-v0", "FAILED: ground_truth, discrete: two new envs reset with seed 0 give different observations or "
                    "rewards for the same actions"),
    ("Undrawn-v0", "FAILED: ground_truth, discrete: render() in rgb_array mode raised NotImplementedError (in render, "
                   "core.py:"),
])
def test_a_broken_plugin_env_fails_with_the_rule_it_breaks(checkRun, env_id: str, expected: str) -> None:
    result = checkRun(env_id, *IMAGE)
    assert result.returncode == 1, result.stdout + result.stderr
    failed = result.stderr.splitlines()
    assert any(line.startswith(expected) for line in failed), result.stderr
    assert failed[-1].startswith(f"{env_id}: ") and failed[-1].endswith(" failed")


def test_an_unknown_env_id_is_one_line_naming_the_valid_ones(checkRun) -> None:
    result = checkRun("Nope-v0")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: unknown env id 'Nope-v0'; valid choices: ")
    assert "LineWorldEnv-v0" in result.stderr and "MobileRobotGymEnv-v0" in result.stderr
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("img_shape, shown", [((32, 32, 3), "32 32 3"), ((3, 8, 8), "3 8 8"), ((3, 32), "3 32")])
def test_check_env_from_python_refuses_a_bad_image_shape_as_the_command_does(img_shape, shown) -> None:
    # (H, W, C) instead of (C, H, W) built no env: every kind was "not offered" and the one failure said "the
    # constructor refuses both discrete and continuous actions"; (3, 8, 8), which the command refuses, was checked
    with pytest.raises(UsageError) as refused:
        checkEnv("MobileRobotGymEnv-v0", img_shape=img_shape)
    assert str(refused.value) == f"img_shape {shown} is not 3 H W with H, W in {IMAGE_SIDES}"
