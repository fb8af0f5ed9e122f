"""The Kuka envs' default physics against the reference (physics version 1): the same task from the same actions.

Two envs of each kind, one per physics, play the same fixed action sequences in lockstep (random actions with
random targets and force_down, which press the button and end episodes on the table, so that presses and resets are
covered): at every step the effector positions agree within PHYSICS_TOLERANCE (3 mm) and the rewards, terminations
and truncations are identical. The constraint solver stops earlier under the default physics, so the positions are
not bit-identical; a contact that begins within a fraction of a millimetre can start one step apart (as it can
between 150 and 100 solver iterations), so the sequences are fixed seeds, not a statement about every sequence
(docs/architecture.md, "Kuka physics version 2").
"""
from __future__ import annotations

import json
import os
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import trainHere

from benchmarks import kuka_speed
from environments import dataset_generator
from environments.kuka.kuka_2button_env import Kuka2ButtonGymEnv
from environments.kuka.kuka_button_env import KukaButtonGymEnv
from environments.kuka.kuka_moving_button_env import KukaMovingButtonGymEnv
from environments.kuka.kuka_rand_button_env import KukaRandButtonGymEnv
from rl_baselines.core.run_folder import recordedPhysicsKeywords
from rl_baselines.envs.factory import envKwargsFromArgs
from rl_baselines.runs.loaded_run import loadRun
from rl_baselines.runs.resume import applyPlan
from rl_baselines.runs.run_policy import RunPolicy, readRunConfig


def playInLockstep(env_class: type, seed: int, n_steps: int, discrete: bool = True) -> dict[str, float]:
    """
    :param env_class: a Kuka env
    :param seed: seed of both envs and of the actions
    :param n_steps: steps to play (an episode that ends is reset in both)
    :param discrete: discrete actions, else continuous effector moves
    :return: the largest effector distance (m), and the presses and episode ends seen
    """
    envs = [env_class(srl_model="ground_truth", random_target=True, force_down=True, is_discrete=discrete,
                      seed=seed, physics=physics) for physics in ("reference", "default")]
    try:
        for env in envs:
            env.reset(seed=seed)
        rng = np.random.default_rng(1000 + seed)
        actions = rng.integers(0, 6, n_steps) if discrete else rng.uniform(-1.0, 1.0, (n_steps, 3))
        deviation = float(np.linalg.norm(envs[0].getRobotPos() - envs[1].getRobotPos()))
        presses = ends = 0
        for step, action in enumerate(actions):
            reference, default = (env.step(action) for env in envs)
            deviation = max(deviation, float(np.linalg.norm(envs[0].getRobotPos() - envs[1].getRobotPos())))
            assert reference[1:4] == default[1:4], f"step {step}: (reward, terminated, truncated) differ"
            presses += int(reference[4]["is_success"])
            if reference[2] or reference[3]:
                ends += 1
                for env in envs:
                    env.reset()
                deviation = max(deviation, float(np.linalg.norm(envs[0].getRobotPos() - envs[1].getRobotPos())))
        return {"deviation": deviation, "presses": presses, "ends": ends}
    finally:
        for env in envs:
            env.close()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_button_same_task(seed: int) -> None:
    played = playInLockstep(KukaButtonGymEnv, seed, 120)
    assert played["deviation"] <= KukaButtonGymEnv.PHYSICS_TOLERANCE
    assert played["ends"] > 0


def test_button_presses_covered() -> None:
    """The sequences above press the button (so contacts with the cap are compared, not only table hits)."""
    assert sum(playInLockstep(KukaButtonGymEnv, seed, 120)["presses"] for seed in (0, 1, 2)) > 0


def test_button_continuous_same_task() -> None:
    played = playInLockstep(KukaButtonGymEnv, 0, 80, discrete=False)
    assert played["deviation"] <= KukaButtonGymEnv.PHYSICS_TOLERANCE


# KukaRandButton's seed 0 meets a table contact one step apart at step 21 (see the module docstring).
@pytest.mark.parametrize(("env_class", "seed"), [(KukaRandButtonGymEnv, 4), (Kuka2ButtonGymEnv, 0),
                                                 (KukaMovingButtonGymEnv, 0)])
def test_variants_same_task(env_class: type, seed: int) -> None:
    played = playInLockstep(env_class, seed, 60)
    assert played["deviation"] <= env_class.PHYSICS_TOLERANCE
    assert played["ends"] > 0


def test_physics_settings() -> None:
    env = KukaButtonGymEnv(srl_model="ground_truth", physics="reference")
    try:
        parameters = env._p.getPhysicsEngineParameters()
        assert parameters["numSolverIterations"] == 150
    finally:
        env.close()
    assert KukaButtonGymEnv.PHYSICS_VERSION == 2
    globals_ = KukaButtonGymEnv.getGlobals({"physics": "reference"})
    assert globals_["constants"]["PHYSICS_VERSION"] == 2 and globals_["defaults"]["physics"] == "default"
    with pytest.raises(ValueError, match="physics must be one of default, reference"):
        KukaButtonGymEnv(srl_model="ground_truth", physics="fast")


def test_speed_benchmark_measures_both_physics(monkeypatch, capsys) -> None:
    """benchmarks.kuka_speed runs each env under the reference and the default physics in one run (no timing
    checked: only that both are measured and tabled side by side)."""
    monkeypatch.setattr(kuka_speed, "MODES", (("ground_truth", "ground_truth", 64),))
    monkeypatch.setattr(kuka_speed, "N_REPETITIONS", 1)
    rows = kuka_speed.main(["--seconds", "0.05", "--env", "KukaButtonGymEnv-v0", "--no-append"])
    assert [row["mode"] for row in rows] == ["KukaButtonGymEnv-v0 ground_truth"]
    assert all(rows[0][name] > 0 for name in ("reference", "env", "bare", "speedup", "ratio"))
    assert "| reference physics steps/s | default physics steps/s | default / reference |" in capsys.readouterr().out


def _recordPhysics(run_dir: str, version: int) -> None:
    path = os.path.join(run_dir, "env_globals.json")
    with open(path, encoding="utf-8") as handle:
        recorded = json.load(handle)
    recorded["constants"]["PHYSICS_VERSION"] = version
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(recorded, handle)


def test_a_run_of_physics_version_1_is_replayed_resumed_and_recorded_under_it(tmp_path):
    """Only the sweeps read the physics version a run folder records: a Kuka run made before version 2 was replayed,
    resumed and recorded by the dataset generator under version 2 without a word. They rebuild it with
    physics="reference" (a dataset's env_globals.json records the keyword); an env that cannot rebuild it warns."""
    run_dir = trainHere("--algo", "random_agent", "--env", "KukaButtonGymEnv-v0", "--srl-model", "ground_truth",
                        "--num-timesteps", "20", "--log-dir", tmp_path / "logs")
    assert recordedPhysicsKeywords(run_dir, "KukaButtonGymEnv-v0") == {}  # this version's run
    _recordPhysics(run_dir, 1)
    assert recordedPhysicsKeywords(run_dir, "KukaButtonGymEnv-v0") == {"physics": "reference"}
    venv = loadRun(run_dir).makeEnv()  # replay.enjoy_baselines and the Python API
    try:
        assert venv.get_attr("physics") == ["reference"]
    finally:
        venv.close()
    assert RunPolicy(run_dir).physics_keywords == {"physics": "reference"}  # dataset_generator --policy
    generator = dataset_generator.parseConfig(["--policy", run_dir, "--save-path", str(tmp_path / "data")])
    spec = dataset_generator.validate(generator)[0]
    assert spec.env_kwargs["physics"] == "reference"
    assert KukaButtonGymEnv.getGlobals(spec.env_kwargs)["env_kwargs"]["physics"] == "reference"  # the dataset's
    config = readRunConfig(run_dir, "--resume")  # (a restart: the run's model and monitor files are deleted)
    config = applyPlan(SimpleNamespace(state="restart", run_dir=run_dir, damaged=[], srl_model_path=None),
                       config.replace(env_kwargs=envKwargsFromArgs(config)))
    assert config.env_kwargs["physics"] == "reference"  # --resume
    # a version the env cannot simulate: one warning, the current physics
    _recordPhysics(run_dir, 7)
    with pytest.warns(UserWarning, match="physics version 7 of KukaButtonGymEnv-v0.*only version 2"):
        assert recordedPhysicsKeywords(run_dir, "KukaButtonGymEnv-v0") == {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert recordedPhysicsKeywords(str(tmp_path / "no_run"), "MobileRobotGymEnv-v0") == {}  # version 1 both
