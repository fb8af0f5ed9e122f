"""Tests of MobileRobotGymEnv (environments/mobile_robot/mobile_robot_env.py): API, task rules, seeding, rendering."""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager

import gymnasium
import numpy as np
import pytest
from stable_baselines3.common.env_checker import check_env

import environments
from environments.kuka.kuka_button_env import KukaButtonGymEnv
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv

SMALL_IMG = (3, 40, 40)  # small images keep the pixel tests fast


@contextmanager
def makeEnv(**kwargs) -> Iterator[MobileRobotGymEnv]:
    """Build an env (ground truth unless told otherwise) and always close it."""
    kwargs.setdefault("srl_model", "ground_truth")
    env = MobileRobotGymEnv(**kwargs)
    try:
        yield env
    finally:
        env.close()


def distanceToTarget(env: MobileRobotGymEnv) -> float:
    return float(np.linalg.norm(env.getRobotPos().astype(np.float64) - env.getTargetPos().astype(np.float64)))


def driveTo(env: MobileRobotGymEnv, goal: tuple[float, float], max_steps: int = 100) -> None:
    """Move the robot exactly onto goal with continuous actions (env must be continuous)."""
    for _ in range(max_steps):
        delta = (np.asarray(goal) - env.getRobotPos()) / env.STEP_SIZE
        if np.all(np.abs(delta) < 1e-4):
            return
        env.step(np.clip(delta, -1, 1).astype(np.float32))
    raise AssertionError(f"could not reach {goal}")


@pytest.mark.parametrize("srl_model", ["ground_truth", "raw_pixels"])
@pytest.mark.parametrize("is_discrete", [True, False])
def test_check_env(srl_model: str, is_discrete: bool) -> None:
    with makeEnv(srl_model=srl_model, is_discrete=is_discrete, img_shape=SMALL_IMG) as env:
        check_env(env, warn=True)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        if srl_model == "raw_pixels":
            assert obs.shape == (40, 40, 3) and obs.dtype == np.uint8
        else:
            assert obs.shape == (2,) and obs.dtype == np.float32


def test_gymnasium_make() -> None:
    assert "MobileRobotGymEnv-v0" in environments.registered_env
    env = gymnasium.make("MobileRobotGymEnv-v0", srl_model="ground_truth")
    try:
        assert isinstance(env.unwrapped, MobileRobotGymEnv)
        obs, _ = env.reset(seed=1)
        assert obs.shape == (2,)
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert not terminated and not truncated and "is_success" in info
    finally:
        env.close()


def _rollout(seed: int, is_discrete: bool = True, n_steps: int = 250) -> tuple[list[np.ndarray], list[float]]:
    with makeEnv(is_discrete=is_discrete, seed=seed) as env:
        env.action_space.seed(seed)
        observations, rewards = [env.reset(seed=seed)[0]], []
        for _ in range(n_steps):
            obs, reward, _, _, _ = env.step(env.action_space.sample())
            observations.append(obs)
            rewards.append(reward)
    return observations, rewards


@pytest.mark.parametrize("is_discrete", [True, False])
def test_same_seed_same_episode(is_discrete: bool) -> None:
    obs_a, rewards_a = _rollout(5, is_discrete)
    obs_b, rewards_b = _rollout(5, is_discrete)
    assert rewards_a == rewards_b
    np.testing.assert_array_equal(np.stack(obs_a), np.stack(obs_b))
    obs_c, _ = _rollout(6, is_discrete, n_steps=0)
    assert not np.array_equal(obs_a[0], obs_c[0])


def test_constructor_seed_matches_reset_seed() -> None:
    with makeEnv(seed=11) as seeded, makeEnv() as unseeded:
        np.testing.assert_array_equal(seeded.reset()[0], unseeded.reset(seed=11)[0])
        # Later resets continue the same random stream.
        np.testing.assert_array_equal(seeded.reset()[0], unseeded.reset()[0])


def test_start_positions_in_range() -> None:
    with makeEnv(seed=0) as env:
        for _ in range(50):
            env.reset()
            x, y = env.getRobotPos()
            assert 2 - 4 / 3 <= x <= 2 + 4 / 3 and 2 - 4 / 3 <= y <= 2 + 4 / 3
            np.testing.assert_allclose(env.getTargetPos(), MobileRobotGymEnv.TARGET_POS, atol=1e-6)


def test_ground_truth_is_relative_to_target() -> None:
    with makeEnv(seed=2) as env:
        obs, _ = env.reset()
        np.testing.assert_allclose(obs, env.getRobotPos() - env.getTargetPos(), atol=1e-6)
        assert env.getGroundTruthDim() == 2
    with makeEnv(seed=2, relative_pos=False) as env:
        obs, _ = env.reset()
        np.testing.assert_allclose(obs, env.getRobotPos(), atol=1e-6)


def _discreteTowardTarget(env: MobileRobotGymEnv, step_index: int) -> int:
    """Go along x to just short of the wall near the target, then along y, then wiggle along y."""
    x, y = env.getRobotPos()
    target_x, target_y = env.getTargetPos()
    aim_x = min(target_x, env.ROBOT_X_BOUNDS[1] - env.STEP_SIZE / 2)
    if abs(aim_x - x) > env.STEP_SIZE / 2:
        return 1 if aim_x > x else 0
    if abs(target_y - y) > env.STEP_SIZE / 2:
        return 3 if target_y > y else 2
    return 2 + step_index % 2


@pytest.mark.parametrize("is_discrete", [True, False])
def test_scripted_policy_reaches_target(is_discrete: bool) -> None:
    with makeEnv(is_discrete=is_discrete, seed=3) as env:
        env.reset()
        assert distanceToTarget(env) > env.REWARD_DIST_THRESHOLD
        rewards, within = [], []
        aim = np.array([min(env.TARGET_POS[0], env.ROBOT_X_BOUNDS[1] - 0.01), env.TARGET_POS[1]])
        for i in range(env.max_steps):
            if is_discrete:
                action = _discreteTowardTarget(env, i)
            else:
                action = np.clip((aim - env.getRobotPos()) / env.STEP_SIZE, -1, 1).astype(np.float32)
            _, reward, terminated, _, info = env.step(action)
            assert not terminated
            close = distanceToTarget(env) <= env.REWARD_DIST_THRESHOLD
            assert reward == (1.0 if close else 0.0)
            assert info["is_success"] == close
            rewards.append(reward)
            within.append(close)
        first = within.index(True)
        # Once there, the policy stays: +1 on every remaining step.
        assert all(within[first:]) and sum(rewards) == env.max_steps - first > 100


def test_bump_reverts_move_and_gives_minus_one() -> None:
    with makeEnv(seed=4) as env:
        env.reset()
        bumped = False
        for _ in range(60):
            before = env.getRobotPos()
            _, reward, _, _, _ = env.step(0)  # -x, toward the blue wall
            after = env.getRobotPos()
            if reward == -1.0:
                np.testing.assert_array_equal(before, after)
                assert after[0] >= env.ROBOT_X_BOUNDS[0]
                bumped = True
                break
            assert reward == 0.0 and after[0] < before[0]
        assert bumped
        # Pushing on keeps the robot in place with -1 every step.
        for _ in range(3):
            assert env.step(0)[1] == -1.0
            np.testing.assert_array_equal(env.getRobotPos(), after)
        # Along the wall is fine again.
        assert env.step(3)[1] == 0.0


def test_bump_overrides_target_reward() -> None:
    with makeEnv(seed=4, is_discrete=False) as env:
        env.reset()
        driveTo(env, (env.ROBOT_X_BOUNDS[1] - 0.01, env.TARGET_POS[1]))
        before = env.getRobotPos()
        _, reward, _, _, info = env.step(np.array([1.0, 0.0], dtype=np.float32))
        assert info["is_success"] and reward == -1.0
        np.testing.assert_array_equal(env.getRobotPos(), before)


def test_continuous_action_is_clipped() -> None:
    with makeEnv(seed=0, is_discrete=False) as env:
        env.reset()
        before = env.getRobotPos()
        env.step(np.array([5.0, -0.5], dtype=np.float32))
        np.testing.assert_allclose(env.getRobotPos() - before, [0.1, -0.05], atol=1e-6)


def test_shape_reward_is_minus_distance() -> None:
    with makeEnv(seed=5, shape_reward=True) as env:
        env.reset()
        rng = np.random.default_rng(0)
        for _ in range(50):
            _, reward, _, _, _ = env.step(int(rng.integers(4)))
            assert reward == pytest.approx(-distanceToTarget(env), abs=1e-5)
        # A bump still reverts the move, and the reward stays minus the distance.
        for _ in range(60):
            before = env.getRobotPos()
            _, reward, _, _, _ = env.step(2)
            assert reward == pytest.approx(-distanceToTarget(env), abs=1e-5)
        np.testing.assert_array_equal(env.getRobotPos(), before)
        assert env.getRobotPos()[1] >= env.ROBOT_Y_BOUNDS[0]


@pytest.mark.parametrize("max_steps", [None, 7])
def test_truncation(max_steps: int | None) -> None:
    with makeEnv(seed=0, max_steps=max_steps) as env:
        expected = 250 if max_steps is None else max_steps
        for _episode in range(2):
            env.reset()
            for i in range(1, expected + 1):
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                assert not terminated
                assert truncated == (i == expected)


def test_random_target() -> None:
    with makeEnv(seed=6, random_target=True) as env:
        targets = []
        for _ in range(20):
            obs, _ = env.reset()
            target = env.getTargetPos()
            assert np.all(target >= 0.4) and np.all(target <= 3.6)
            np.testing.assert_allclose(obs, env.getRobotPos() - target, atol=1e-6)
            # The rendered disc follows.
            body_pos, _ = env._p.getBasePositionAndOrientation(env._target_uid)
            np.testing.assert_allclose(body_pos[:2], target, atol=1e-5)
            targets.append(tuple(target))
        assert len(set(targets)) == len(targets)


@contextmanager
def countCameraCalls(env: MobileRobotGymEnv) -> Iterator[list[int]]:
    """Count the env's getCameraImage calls by shadowing its PyBullet client's method."""
    calls = [0]
    original = env._p.getCameraImage

    def counting(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    env._p.getCameraImage = counting
    try:
        yield calls
    finally:
        del env._p.getCameraImage


def test_ground_truth_never_renders() -> None:
    with makeEnv(seed=0, random_target=True) as env, countCameraCalls(env) as calls:
        for _ in range(2):
            env.reset()
            for _ in range(30):
                env.step(env.action_space.sample())
        env.getSRLState()
        assert calls[0] == 0


def test_raw_pixels_renders_every_observation() -> None:
    with (makeEnv(srl_model="raw_pixels", img_shape=SMALL_IMG, seed=0, renderer="tinyrenderer") as env,
          countCameraCalls(env) as calls):
        env.reset()
        for _ in range(3):
            env.step(env.action_space.sample())
        assert calls[0] == 4


def test_pixel_observations_show_the_robot_moving() -> None:
    with makeEnv(srl_model="raw_pixels", img_shape=(3, 64, 64), seed=0) as env:
        first, _ = env.reset()
        assert first.shape == (64, 64, 3) and first.dtype == np.uint8
        # Not blank: the floor, walls and disc give many colours.
        assert first.std() > 10 and len(np.unique(first.reshape(-1, 3), axis=0)) > 5
        obs = first
        for _ in range(5):
            obs, reward, _, _, _ = env.step(1)
            assert reward != -1.0
        assert not np.array_equal(first, obs)
        # Only a small part of the image (around the robot) changes.
        changed = np.any(first != obs, axis=2)
        assert 0 < changed.mean() < 0.1


def test_learned_srl_model_gets_pixels() -> None:
    with makeEnv(srl_model="autoencoder", img_shape=SMALL_IMG, seed=0) as env:
        obs, _ = env.reset()
        assert obs.shape == (40, 40, 3) and obs.dtype == np.uint8


def test_non_square_images() -> None:
    with makeEnv(srl_model="raw_pixels", img_shape=(3, 32, 48), seed=0, render_mode="rgb_array",
                 render_size=16) as env:
        obs, _ = env.reset()
        assert obs.shape == (32, 48, 3)
        assert env.render().shape == (48, 48, 3)


def test_render_rgb_array_in_ground_truth_mode() -> None:
    with makeEnv(seed=0, render_mode="rgb_array", render_size=50) as env:
        env.reset()
        image = env.render()
        assert image.shape == (50, 50, 3) and image.dtype == np.uint8 and image.std() > 10
        env.step(1)
        assert env.render().shape == (50, 50, 3)
    with makeEnv(seed=0) as env:
        env.reset()
        assert env.render() is None


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="action_joints"):
        MobileRobotGymEnv(srl_model="ground_truth", action_joints=True)
    with pytest.raises(ValueError, match="srl_model"):
        MobileRobotGymEnv(srl_model="joints")
    # a misspelt mode or model is refused, not taken for a learned model (which would give pixels)
    for typo in ("groundtruth", "vae3"):
        with pytest.raises(ValueError, match=f"unknown srl_model '{typo}'.*ground_truth, raw_pixels, or a learned "
                                             "SRL model: .*autoencoder"):
            gymnasium.make("MobileRobotGymEnv-v0", srl_model=typo)
    with pytest.raises(TypeError):
        MobileRobotGymEnv(srl_model="ground_truth", not_a_keyword=1)
    with pytest.raises(TypeError):
        MobileRobotGymEnv("ground_truth")  # keyword-only
    with pytest.raises(ValueError, match="img_shape"):
        MobileRobotGymEnv(srl_model="raw_pixels", img_shape=(1, 64, 64))
    with makeEnv() as env:
        env.reset(seed=0)
        with pytest.raises(ValueError):
            env.step(4)
    for max_steps in (0, -5, 1.5, True):  # every step truncated, or a length silently rounded
        with pytest.raises(ValueError, match="max_steps must be a positive integer"):
            MobileRobotGymEnv(srl_model="ground_truth", max_steps=max_steps)
    env = MobileRobotGymEnv(srl_model="ground_truth", is_discrete=False)
    try:
        env.reset(seed=0)
        for bad in (np.zeros(1, np.float32), np.zeros(4, np.float32), np.float32(0.5)):  # extra values were ignored
            with pytest.raises(ValueError, match="continuous action must be 2 finite value"):
                env.step(bad)
        env.step(np.zeros((1, 2), np.float32))  # one env's action as a batch of one
    finally:
        env.close()


def test_renders_without_display(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(RuntimeError, match="DISPLAY"):
        MobileRobotGymEnv(srl_model="ground_truth", renders=True)
    with pytest.raises(RuntimeError, match="render_mode='human'.*DISPLAY"):  # gymnasium's window mode: the GUI
        MobileRobotGymEnv(srl_model="ground_truth", render_mode="human")


def test_urdfs_do_not_depend_on_cwd(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with makeEnv(srl_model="raw_pixels", img_shape=SMALL_IMG, seed=0) as env:
        obs, _ = env.reset()
        # The yellow disc is on the image (red and green high, blue low).
        yellow = (obs[:, :, 0] > 180) & (obs[:, :, 1] > 150) & (obs[:, :, 2] < 80)
        assert yellow.any()


def test_get_globals() -> None:
    globals_ = MobileRobotGymEnv.getGlobals({"srl_model": "ground_truth", "img_shape": (3, 40, 40)})
    decoded = json.loads(json.dumps(globals_))
    constants = decoded["constants"]
    assert constants["MAX_STEPS"] == 250 and constants["STEP_SIZE"] == 0.1
    assert constants["REWARD_DIST_THRESHOLD"] == 0.4 and constants["TARGET_POS"] == [3.6, 3.0]
    assert constants["SRL_MODES"] == ["ground_truth", "raw_pixels"] and constants["PLOT_TYPE"] == "2D"
    assert math.isclose(constants["ROBOT_X_BOUNDS"][0], 0.425) and math.isclose(constants["ROBOT_Y_BOUNDS"][1], 3.8)
    assert decoded["defaults"]["render_size"] == 128
    assert decoded["env_kwargs"]["img_shape"] == [3, 40, 40]


def test_close_twice() -> None:
    env = MobileRobotGymEnv(srl_model="ground_truth")
    env.reset(seed=0)
    env.close()
    env.close()


@pytest.mark.parametrize("env_class", [MobileRobotGymEnv, KukaButtonGymEnv])
def test_a_frame_of_another_shape_shows_at_least_the_square_frames_view(env_class):
    """PyBullet keeps a camera's field of view vertical: a frame taller than wide (--img-shape 3 96 48) saw a zoomed
    strip of the square frame's view, the mobile robot's side walls (and a robot near them) out of the picture. Its
    central square is now the square frame, as a wider frame's is, with each renderer."""
    for renderer in env_class.RENDERERS:
        frames = {}
        for shape in ((3, 48, 48), (3, 96, 48), (3, 48, 96)):
            env = env_class(srl_model="raw_pixels", img_shape=shape, renderer=renderer)
            try:
                frames[shape] = np.asarray(env.reset(seed=3)[0], dtype=float)
            finally:
                env.close()
        square = frames[(3, 48, 48)]
        for central in (frames[(3, 96, 48)][24:72], frames[(3, 48, 96)][:, 24:72]):
            assert np.abs(central - square).mean() < 2, (renderer, np.abs(central - square).mean())
