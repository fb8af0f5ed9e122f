"""The Kuka arms' low-poly renderer (``renderer="lowpoly"``) against TinyRenderer with the original meshes, and the flag.

Accuracy (issue 27's bounds): the mean absolute error per channel is at most 2 (of 255) and at most 1% of the pixels
differ by more than 32 in some channel, pooled over the frames (the worst single frame is printed, not bounded):

- 1,000 states of KukaButtonGymEnv-v0 at 64x64: random arm joint angles (half uniform within the joint limits, half
  around the rest pose) and a random button position, set directly (no physics);
- 200 steps of random continuous actions on each variant (random distractors, two buttons, a moving button; random
  targets), 64x64, of which 20 per variant also at 128x128 with ``render()``.

Physics: the two renderers load the same collision meshes, masses and inertias, so the same seeds and actions give
bit-identical states (every joint's position and velocity, every body's pose) at every step.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import runFolder, runModule, runTrain

from benchmarks import renderer_gtc
from environments import getEnvClass, registered_env, rendererRefusal
from environments.dataset_generator import generate
from environments.generator_config import GeneratorConfig
from environments.kuka import make_lowpoly
from environments.kuka.background import cameraImage, setVisible
from environments.srl_env import FRESH_WORLD, RENDERERS
from srl_toolbox.cli import UsageError

KUKA = "KukaButtonGymEnv-v0"
VARIANTS = ["KukaRandButtonGymEnv-v0", "Kuka2ButtonGymEnv-v0", "KukaMovingButtonGymEnv-v0"]
MAX_MAE = 2.0
MAX_OFF_FRACTION = 0.01
OFF_BY = 32


def _pair(env_id: str, **kwargs):
    """:return: the env drawn with the original meshes and with the low-poly ones, same keywords"""
    env_class = getEnvClass(env_id)
    keywords = {"srl_model": "ground_truth", "random_target": True, **kwargs}
    return env_class(**keywords), env_class(**keywords, renderer="lowpoly")


def _image(env, side: int = 64) -> np.ndarray:
    """:return: the observation camera's image at side x side (the env observes its ground truth: steps draw nothing)"""
    return env._cameraImage(env._view_matrix, side, side, env._obs_projection)


def _state(env) -> np.ndarray:
    """:return: every joint's position and velocity and every body's pose, one float64 vector"""
    client = env._p
    values = []
    for uid in range(client.getNumBodies()):
        position, orientation = client.getBasePositionAndOrientation(uid)
        values += [*position, *orientation]
        for joint in client.getJointStates(uid, range(client.getNumJoints(uid))) or ():
            values += joint[:2]
    return np.array(values)


class _Errors:
    """Absolute errors accumulated over frames: per-channel sums, pixels off by more than OFF_BY, the worst frame."""

    def __init__(self) -> None:
        self.sums, self.pixels, self.off, self.worst = np.zeros(3), 0, 0, 0.0

    def add(self, reference: np.ndarray, drawn: np.ndarray) -> None:
        assert reference.shape == drawn.shape and drawn.dtype == np.uint8
        error = np.abs(reference.astype(np.int16) - drawn.astype(np.int16))
        off = int((error.max(axis=2) > OFF_BY).sum())
        self.sums += error.reshape(-1, 3).sum(axis=0)
        self.pixels += error.shape[0] * error.shape[1]
        self.off += off
        self.worst = max(self.worst, off / (error.shape[0] * error.shape[1]))

    def check(self, what: str) -> None:
        mae = self.sums / self.pixels
        off = self.off / self.pixels
        print(f"{what}: MAE {np.round(mae, 3)}, off by > {OFF_BY}: {off:.4%} (worst frame {self.worst:.2%})")
        assert mae.max() <= MAX_MAE and off <= MAX_OFF_FRACTION, f"{what}: MAE {mae}, off by > {OFF_BY}: {off:.4f}"


def test_lowpoly_matches_tinyrenderer_on_random_arm_poses() -> None:
    rng = np.random.default_rng(27)
    envs = _pair(KUKA)
    reference = envs[0]
    rest = np.array(reference.REST_POSE[:reference.N_ARM_JOINTS])
    errors = _Errors()
    for index in range(1000):
        if index % 100 == 0:
            for env in envs:
                env.reset(seed=index)
        if rng.random() < 0.5:
            angles = rng.uniform(reference._arm_lower, reference._arm_upper)
        else:
            angles = np.clip(rest + rng.normal(0.0, 0.5, len(rest)), reference._arm_lower, reference._arm_upper)
        button = np.array(reference.BUTTON_POSITIONS[0])
        button[:2] += rng.uniform(-1.0, 1.0, 2) * reference.BUTTON_RANDOM_RANGE
        for env in envs:
            for joint, angle in enumerate(angles):
                env._p.resetJointState(env._robot_uid, joint, float(angle))
            env._teleport(env._button_uids[0], button.tolist(), (0.0, 0.0, 0.0, 1.0))
        errors.add(_image(envs[0]), _image(envs[1]))
    errors.check(f"{KUKA} random arm poses 64x64")
    for env in envs:
        env.close()


@pytest.mark.parametrize("env_id", VARIANTS)
def test_lowpoly_matches_tinyrenderer_and_physics_is_identical(env_id: str) -> None:
    envs = _pair(env_id, is_discrete=False, render_mode="rgb_array", render_size=128)
    actions = np.random.default_rng(5).uniform(-1.0, 1.0, (200, 3))
    small, large = _Errors(), _Errors()
    observations = [env.reset(seed=3)[0] for env in envs]
    for index, action in enumerate(actions):
        np.testing.assert_array_equal(observations[0], observations[1])
        np.testing.assert_array_equal(_state(envs[0]), _state(envs[1]))
        small.add(_image(envs[0]), _image(envs[1]))
        if index % 10 == 0:
            large.add(envs[0].render(), envs[1].render())
        transitions = [env.step(action) for env in envs]
        assert transitions[0][1:4] == transitions[1][1:4]
        observations = [transition[0] for transition in transitions]
        if transitions[0][2] or transitions[0][3]:
            observations = [env.reset(seed=index)[0] for env in envs]
    small.check(f"{env_id} 64x64")
    large.check(f"{env_id} render() 128x128")
    for env in envs:
        env.close()


def _withinJitter(drawn: np.ndarray, reference: np.ndarray) -> bool:
    """
    :return: whether the two frames are equal; raises if they differ by more than TinyRenderer's jitter (1 level in
        at most 2 pixels)
    """
    error = np.abs(drawn.astype(np.int16) - reference.astype(np.int16)).max(axis=2)
    assert error.max() <= 1 and int((error > 0).sum()) <= 2, f"{int((error > 0).sum())} pixels off, by {error.max()}"
    return not error.any()


@pytest.mark.parametrize("env_id", [KUKA, *VARIANTS])
def test_lowpoly_draws_the_static_bodies_once_per_camera_and_its_frames_are_tinyrenderers(env_id: str) -> None:
    """The floor and table image, put wherever it is nearer than the rest of the scene, gives TinyRenderer's pixels
    with the plane and the table drawn in the scene, for every camera (both views, the observation's size and
    render()'s), while the gripper goes down to the buttons and the table, also after the scene is rebuilt. Identical
    up to TinyRenderer's own jitter: drawing one state again right away now and then gives a pixel 1 level off (about
    one frame in 800 at 128x128, with the static bodies drawn or not; the frames of two runs with the same seed are
    equal), so a frame may differ by that much, and most are equal."""
    env = getEnvClass(env_id)(srl_model="raw_pixels", random_target=True, multi_view=True, render_mode="rgb_array",
                              render_size=128, renderer="lowpoly")
    client, static = env._p, (env._plane_uid, env._table_uid)
    cameras = [(env._view_matrix, 64, env._obs_projection), (env._view_matrix_2, 64, env._obs_projection),
               (env._view_matrix, 128, env._render_projection)]
    # 16 discrete moves (3 cm) before the scene is rebuilt, 16 after; the last 12 of each straight down, onto a
    # button or the table
    actions = np.random.default_rng(11).integers(0, 6, 32)
    actions[4:16] = actions[20:32] = 4
    env.reset(seed=4)
    static_pixels = frames = equal = contacts = 0
    for index, action in enumerate(actions):
        if index == len(actions) // 2:
            env.reset(seed=5, options={FRESH_WORLD: True})  # the rebuilt scene hides its new plane and table too
        for view, side, projection in cameras:
            drawn = env._cameraImage(view, side, side, projection)
            scene = cameraImage(client, view, side, side, projection)[0]  # the static bodies hidden
            for uid in static:
                setVisible(client, uid, True)
            reference = cameraImage(client, view, side, side, projection)[0]
            for uid in static:
                setVisible(client, uid, False)
            frames += 1
            equal += _withinJitter(drawn, reference)
            if side == 128:
                equal += _withinJitter(env.render(), reference)
                frames += 1
            static_pixels += int((scene != drawn).any(axis=2).sum())
        observation, reward, terminated, truncated, info = env.step(action)
        contacts += reward > 0 or info["hit_table"]
        np.testing.assert_array_equal(observation[:, :, :3], _image(env))
        if terminated or truncated:
            env.reset(seed=index)
    assert contacts > 0  # the gripper pressed a button or touched the table
    # the floor and the table are in every frame, and came from the background image
    assert static_pixels > len(actions) * len(cameras) * 1000
    assert equal >= frames - 3, f"{frames - equal} of {frames} frames differ by TinyRenderer's jitter"
    env.close()
    for renderer, composites in ((None, True), ("tinyrenderer", False)):  # lowpoly is the default; the reference
        other = getEnvClass(env_id)(srl_model="ground_truth", renderer=renderer)  # draws every body every frame
        assert (other._background is not None) == composites
        other.close()


def test_lowpoly_physics_is_identical_with_joint_and_discrete_actions() -> None:
    for keywords, actions in (({"is_discrete": True}, np.random.default_rng(1).integers(0, 6, 60)),
                              ({"is_discrete": False, "action_joints": True},
                               np.random.default_rng(2).uniform(-1.0, 1.0, (60, 7)))):
        envs = _pair(KUKA, **keywords)
        for env in envs:
            env.reset(seed=9)
        for action in actions:
            for env in envs:
                env.step(action)
            np.testing.assert_array_equal(_state(envs[0]), _state(envs[1]))
            np.testing.assert_array_equal(envs[0].getJoints(), envs[1].getJoints())
        for env in envs:
            env.close()


def test_renderer_choices_per_env() -> None:
    for env_id in registered_env:
        assert set(getattr(getEnvClass(env_id), "RENDERERS", ())) <= set(RENDERERS), env_id
    with pytest.raises(ValueError, match="unknown renderer 'sprites'"):
        getEnvClass(KUKA)(renderer="sprites")
    with pytest.raises(ValueError, match="unknown renderer 'lowpoly'"):
        getEnvClass("MobileRobotGymEnv-v0")(renderer="lowpoly")
    for env_id in [KUKA, *VARIANTS]:
        assert rendererRefusal("lowpoly", env_id) is None
        assert env_id in rendererRefusal("sprites", env_id)
    refusal = rendererRefusal("lowpoly", "MobileRobotGymEnv-v0")
    assert "MobileRobotGymEnv-v0" in refusal and all(env_id in refusal for env_id in [KUKA, *VARIANTS])


def test_train_and_generator_record_lowpoly(tmp_path) -> None:
    run_dir = runFolder(runTrain("--algo", "ppo2", "--env", KUKA, "--srl-model", "raw_pixels", "--renderer", "lowpoly",
                                 "--num-timesteps", "64", "--n-steps", "32", "--log-dir", tmp_path / "logs"))
    with open(os.path.join(run_dir, "args.json")) as file:
        assert json.load(file)["renderer"] == "lowpoly"
    assert generate(GeneratorConfig(save_path=str(tmp_path / "data"), name="lowpoly", env=KUKA, num_episode=1,
                                    max_steps=5, renderer="lowpoly", no_progress=True)) == 0
    with open(tmp_path / "data" / "lowpoly" / "dataset_config.json") as file:
        assert json.load(file)["renderer"] == "lowpoly"


def _warmPython(command: list[str], env: dict[str, str] | None = None) -> str:
    """renderer_gtc.runPython's work through the warm interpreter (conftest.runModule): ``-m MODULE ARGS`` run as a
    fresh process would, with this test process's one-thread settings (OMP_NUM_THREADS=1) rather than the script's
    own ONE_THREAD variables, which would send it to a real process."""
    assert command[0] == "-m" and set(env or {}) <= set(renderer_gtc.ONE_THREAD), command
    result = runModule(command[1], *command[2:])
    if result.returncode != 0:
        raise RuntimeError(f"{command} exited {result.returncode}:\n{result.stderr[-2000:]}")
    return result.stdout


def test_renderer_gtc_measures_an_arm_against_lowpoly(capsys, monkeypatch) -> None:
    """benchmarks.renderer_gtc pairs each env with its own other renderer: a Kuka arm's rows are TinyRenderer's and
    lowpoly's frames of one trajectory (checked by the script), one model trained on each; an env without a second
    renderer is not a choice (exit 2). Its commands (four recordings, two trainings) run one at a time, forked from
    the warm interpreter."""
    monkeypatch.setattr(renderer_gtc, "runPython", _warmPython)
    envs = renderer_gtc.measuredEnvs()
    assert KUKA in envs and "MobileRobotGymEnv-v0" in envs
    assert renderer_gtc.otherRenderer(KUKA) == "lowpoly"
    assert renderer_gtc.otherRenderer("MobileRobotGymEnv-v0") == "sprites"
    assert all(renderer_gtc.otherRenderer(env_id) is None for env_id in registered_env if env_id not in envs)
    without = next(env_id for env_id in registered_env if env_id not in envs)
    with pytest.raises(UsageError, match=f"argument --envs: invalid choice: '{without}'"):  # one line, exit 2
        renderer_gtc.parseArgs(["--envs", without])

    rows = renderer_gtc.main(["--envs", KUKA, "--episodes", "2", "--max-steps", "10", "--epochs", "1", "--seeds", "0",
                              "--state-dim", "2", "--max-samples", "20", "--num-cpu", "1", "--jobs", "1",
                              "--no-append"])
    assert sorted(row["trained_on"] for row in rows) == ["lowpoly", "tinyrenderer"]
    for row in rows:
        assert row["env"] == KUKA and row["renderer"] == "lowpoly"
        assert set(row["gtc"]) == {"reference", "other"}
        own = row["gtc"]["reference" if row["trained_on"] == "tinyrenderer" else "other"]
        other = row["gtc"]["other" if row["trained_on"] == "tinyrenderer" else "reference"]
        assert row["difference"] == pytest.approx(abs(other - own))
    assert "(lowpoly)" in capsys.readouterr().out


def test_make_lowpoly_replaces_its_folder_whole_and_refuses_bad_input(tmp_path, monkeypatch) -> None:
    """The mesh tool (fast-simplification, not a toolbox dependency, stood in for by a copy): the folder is replaced
    whole, an interrupted run leaves the old one as it was, and bad input writes nothing."""
    out = tmp_path / "lowpoly"
    monkeypatch.setattr(make_lowpoly, "decimate", lambda vertices, faces, fraction: (vertices, faces))
    counts = make_lowpoly.makeLowPoly(0.5, str(out))
    assert len(counts) == make_lowpoly.N_LINKS and all(before == after for _, before, after in counts)
    assert sorted(os.listdir(out)) == sorted(os.listdir(make_lowpoly.LOWPOLY_DIR))
    (out / "stale.obj").write_text("from an earlier run")
    make_lowpoly.makeLowPoly(0.5, str(out))
    assert sorted(os.listdir(out)) == sorted(os.listdir(make_lowpoly.LOWPOLY_DIR))  # replaced, not merged
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}

    def failing(vertices, faces, fraction):
        if failing.calls == 3:
            raise KeyboardInterrupt
        failing.calls += 1
        return vertices, faces
    failing.calls = 0
    monkeypatch.setattr(make_lowpoly, "decimate", failing)
    with pytest.raises(KeyboardInterrupt):
        make_lowpoly.makeLowPoly(0.5, str(out))
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before
    assert sorted(os.listdir(tmp_path)) == ["lowpoly"]  # no temporary folder left

    (tmp_path / "file").write_text("")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("a user's folder")
    monkeypatch.chdir(tmp_path / "mine")
    for argv, words in ((["--fraction", "2"], "--fraction 2"), (["--fraction", "0"], "'0'"),
                        (["--out", str(tmp_path / "file")], "is a file"), (["--out", "."], "holds the current folder"),
                        (["--out", str(tmp_path)], "holds the current folder"),
                        (["--out", str(tmp_path / "lowpoly" / "..") + "/mine"], "holds the current folder")):
        with pytest.raises(UsageError, match=words):
            make_lowpoly.main(argv)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="holds other files"):
        make_lowpoly.main(["--out", str(tmp_path / "mine")])
    assert sorted(os.listdir(tmp_path)) == ["file", "lowpoly", "mine"] and os.listdir(tmp_path / "mine") == ["notes.txt"]
