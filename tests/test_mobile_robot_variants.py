"""Tests of the mobile-robot variants (1D, two targets, line target) and of the first-person view (fpv)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import gymnasium
import numpy as np
import pytest
from stable_baselines3.common.env_checker import check_env

import environments
from environments.mobile_robot.mobile_robot_1D_env import MobileRobot1DGymEnv
from environments.mobile_robot.mobile_robot_2target_env import MobileRobot2TargetGymEnv
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from environments.mobile_robot.mobile_robot_line_target_env import MobileRobotLineTargetGymEnv
from tests.conftest import runFolder, runTrain

SMALL_IMG = (3, 40, 40)
VARIANTS = [MobileRobot1DGymEnv, MobileRobot2TargetGymEnv, MobileRobotLineTargetGymEnv]
ENV_IDS = {MobileRobot1DGymEnv: "MobileRobot1DGymEnv-v0", MobileRobot2TargetGymEnv: "MobileRobot2TargetGymEnv-v0",
           MobileRobotLineTargetGymEnv: "MobileRobotLineTargetGymEnv-v0"}


@contextmanager
def makeEnv(env_class: type[MobileRobotGymEnv], **kwargs) -> Iterator[MobileRobotGymEnv]:
    kwargs.setdefault("srl_model", "ground_truth")
    env = env_class(**kwargs)
    try:
        yield env
    finally:
        env.close()


def driveTo(env: MobileRobotGymEnv, goal: tuple[float, ...], max_steps: int = 100) -> list[tuple[float, dict]]:
    """Move the robot exactly onto goal with continuous actions; :return: (reward, info) of every step taken."""
    steps = []
    for _ in range(max_steps):
        delta = (np.asarray(goal) - env.getRobotPos()) / env.STEP_SIZE
        if np.all(np.abs(delta) < 1e-4):
            return steps
        _, reward, _, _, info = env.step(np.clip(delta, -1, 1).astype(np.float32))
        steps.append((reward, info))
    raise AssertionError(f"could not reach {goal}")


@pytest.mark.parametrize("env_class", VARIANTS)
@pytest.mark.parametrize("srl_model,fpv", [("ground_truth", False), ("raw_pixels", False), ("raw_pixels", True)])
@pytest.mark.parametrize("is_discrete", [True, False])
def test_check_env(env_class: type, srl_model: str, fpv: bool, is_discrete: bool) -> None:
    with makeEnv(env_class, srl_model=srl_model, fpv=fpv, is_discrete=is_discrete, img_shape=SMALL_IMG) as env:
        check_env(env, warn=True)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        if srl_model == "raw_pixels":
            assert obs.shape == (40, 40, 6 if fpv else 3) and obs.dtype == np.uint8
        else:
            assert obs.shape == (env.getGroundTruthDim(),) and obs.dtype == np.float32
        if env_class is MobileRobot1DGymEnv:
            assert env.action_space == (gymnasium.spaces.Discrete(2) if is_discrete
                                        else gymnasium.spaces.Box(-1, 1, (1,), np.float32))
        else:
            assert env.action_space == (gymnasium.spaces.Discrete(4) if is_discrete
                                        else gymnasium.spaces.Box(-1, 1, (2,), np.float32))


@pytest.mark.parametrize("env_class", VARIANTS)
def test_gymnasium_make_and_registry(env_class: type) -> None:
    env_id = ENV_IDS[env_class]
    assert environments.getEnvClass(env_id) is env_class
    env = gymnasium.make(env_id, srl_model="ground_truth")
    try:
        assert isinstance(env.unwrapped, env_class)
        obs, _ = env.reset(seed=0)
        assert obs.shape == (env_class.getGroundTruthDim(),)
    finally:
        env.close()


def _rollout(env_class: type, seed: int, srl_model: str = "ground_truth", n_steps: int = 120
             ) -> tuple[list[np.ndarray], list[float]]:
    with makeEnv(env_class, srl_model=srl_model, img_shape=SMALL_IMG, random_target=True, seed=seed) as env:
        observations, rewards = [env.reset(seed=seed)[0]], []
        for _ in range(n_steps):
            obs, reward, _, _, _ = env.step(env.action_space.sample())
            observations.append(obs)
            rewards.append(reward)
    return observations, rewards


@pytest.mark.parametrize("env_class", VARIANTS)
def test_seeded_resets_repeat(env_class: type) -> None:
    obs_a, rewards_a = _rollout(env_class, 3)
    obs_b, rewards_b = _rollout(env_class, 3)
    assert rewards_a == rewards_b
    np.testing.assert_array_equal(np.stack(obs_a), np.stack(obs_b))
    assert not np.array_equal(obs_a[0], _rollout(env_class, 4, n_steps=0)[0][0])
    pixels_a, _ = _rollout(env_class, 3, "raw_pixels", n_steps=5)
    pixels_b, _ = _rollout(env_class, 3, "raw_pixels", n_steps=5)
    np.testing.assert_array_equal(np.stack(pixels_a), np.stack(pixels_b))


@pytest.mark.parametrize("env_class", [MobileRobotGymEnv, *VARIANTS])
def test_action_joints_and_bad_srl_model_refused(env_class: type) -> None:
    with pytest.raises(ValueError, match="action_joints"):
        env_class(srl_model="ground_truth", action_joints=True)
    with pytest.raises(ValueError, match="srl_model"):
        env_class(srl_model="joints")


@pytest.mark.parametrize("env_class", VARIANTS)
def test_pixels_show_the_robot_moving(env_class: type) -> None:
    with makeEnv(env_class, srl_model="raw_pixels", img_shape=(3, 64, 64), seed=0) as env:
        first, _ = env.reset()
        assert first.std() > 10 and len(np.unique(first.reshape(-1, 3), axis=0)) > 5
        obs = first
        for _ in range(4):
            obs, reward, _, _, _ = env.step(1)  # +x
            assert reward != -1.0
        changed = np.any(first != obs, axis=2)
        assert 0 < changed.mean() < 0.1


# --- 1D ----------------------------------------------------------------------------------------------------------


def test_1d_moves_along_x_only_and_reaches_target() -> None:
    with makeEnv(MobileRobot1DGymEnv, seed=2) as env:
        obs, _ = env.reset()
        assert env.getGroundTruthDim() == 1 and env.getRobotPos().shape == (1,)
        np.testing.assert_allclose(obs, env.getRobotPos() - env.getTargetPos(), atol=1e-6)
        assert env._robot_y == 0.0
        np.testing.assert_allclose(env.getTargetPos(), [3.6])
        rewards = []
        for _ in range(env.max_steps):
            _, reward, _, _, info = env.step(1)  # +x until the wall
            rewards.append(reward)
            assert env._robot_y == 0.0
            assert info["is_success"] == (abs(env.getRobotPos()[0] - 3.6) <= env.REWARD_DIST_THRESHOLD)
        # +1 once within 0.4 m of the target, then -1 forever against the wall (x stops at its bound).
        assert 1.0 in rewards and rewards[-1] == -1.0
        first_plus = rewards.index(1.0)
        assert set(rewards[:first_plus]) == {0.0}
        assert env.getRobotPos()[0] == pytest.approx(env.ROBOT_X_BOUNDS[1], abs=0.1)
        with pytest.raises(ValueError):
            env.step(2)


def test_1d_continuous_and_random_target() -> None:
    with makeEnv(MobileRobot1DGymEnv, is_discrete=False, random_target=True, seed=5) as env:
        targets = set()
        for _ in range(10):
            env.reset()
            target = float(env.getTargetPos()[0])
            assert 0.4 <= target <= 3.6
            targets.add(target)
        assert len(targets) == 10
        before = env.getRobotPos()[0]
        env.step(np.array([-0.5], dtype=np.float32))
        assert env.getRobotPos()[0] == pytest.approx(before - 0.05, abs=1e-6)
        goal = float(np.clip(target, env.ROBOT_X_BOUNDS[0] + 0.01, env.ROBOT_X_BOUNDS[1] - 0.01))
        steps = driveTo(env, (goal,))
        assert steps and steps[-1][0] == 1.0


# --- two targets ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("srl_model", ["ground_truth", "raw_pixels"])
def test_2target_reached_in_order(srl_model: str) -> None:
    with makeEnv(MobileRobot2TargetGymEnv, srl_model=srl_model, img_shape=SMALL_IMG, is_discrete=False,
                 seed=1) as env:
        env.reset()
        first, second = env.TARGET_POS, env.SECOND_TARGET_POS
        assert env.currentTarget == 0
        np.testing.assert_allclose(env.getTargetPos(), first)
        # The second target gives nothing while the first is current.
        second_goal = (max(second[0], env.ROBOT_X_BOUNDS[0] + 0.01), second[1])
        steps = driveTo(env, second_goal)
        assert all(reward == 0.0 and not info["is_success"] for reward, info in steps)
        # Reaching the first: +1, then the second is current and the first disc leaves the scene.
        first_goal = (min(first[0], env.ROBOT_X_BOUNDS[1] - 0.01), first[1])
        steps = driveTo(env, first_goal)
        # One +1, on entering the first target's disc (the second is current from then on).
        assert [reward for reward, _ in steps].count(1.0) == 1
        assert not any(info["is_success"] for _, info in steps)
        assert env.currentTarget == 1
        np.testing.assert_allclose(env.getTargetPos(), second)
        assert env._p.getBasePositionAndOrientation(env._target_uids[0])[0][2] < 0
        # Staying on the first target is worth nothing now.
        assert env.step(np.zeros(2, dtype=np.float32))[1] == 0.0
        steps = driveTo(env, second_goal)
        assert steps[-1][0] == 1.0 and steps[-1][1]["is_success"]
        # The last target stays current: +1 on every step spent there.
        for _ in range(3):
            _, reward, _, _, info = env.step(np.zeros(2, dtype=np.float32))
            assert reward == 1.0 and info["is_success"]
        # A new episode starts again from the first target, shown again.
        env.reset()
        assert env.currentTarget == 0
        assert env._p.getBasePositionAndOrientation(env._target_uids[0])[0][2] == pytest.approx(0.0)


def test_2target_discrete_scripted_policy_and_episode_length() -> None:
    with makeEnv(MobileRobot2TargetGymEnv, seed=0) as env:
        assert env.max_steps == 1500
        env.reset()
        rewards = []
        for i in range(env.max_steps):
            target = np.array(env.getTargetPos())
            target[0] = np.clip(target[0], *env.ROBOT_X_BOUNDS)
            dx, dy = target - env.getRobotPos()
            if abs(dx) > 0.05:
                action = 1 if dx > 0 else 0
            elif abs(dy) > 0.05:
                action = 3 if dy > 0 else 2
            else:
                action = 2 + i % 2
            _, reward, terminated, truncated, info = env.step(action)
            rewards.append(reward)
            assert not terminated and truncated == (i == env.max_steps - 1)
        assert env.currentTarget == 1 and info["is_success"] and rewards[-1] == 1.0
        assert -1.0 not in rewards


def test_2target_random_targets() -> None:
    with makeEnv(MobileRobot2TargetGymEnv, seed=3, random_target=True, shape_reward=True) as env:
        env.reset()
        first = env.getTargetPos()
        assert not np.allclose(first, env.TARGET_POS)
        assert np.all((first >= 0.4) & (first <= 3.6))
        _, reward, _, _, _ = env.step(0)
        assert reward == pytest.approx(-np.linalg.norm(env.getRobotPos() - first), abs=1e-5)


# --- line target -----------------------------------------------------------------------------------------------


def test_line_target_reward_within_a_tenth() -> None:
    with makeEnv(MobileRobotLineTargetGymEnv, is_discrete=False, seed=0) as env:
        obs, _ = env.reset()
        line = env.LINE_X - env.LINE_OFFSET
        np.testing.assert_allclose(env.getTargetPos(), [line, 2.0])
        np.testing.assert_allclose(obs, env.getRobotPos() - env.getTargetPos(), atol=1e-6)
        driveTo(env, (line - 0.15, 0.5))
        assert env.step(np.zeros(2, dtype=np.float32))[1] == 0.0
        steps = driveTo(env, (line - 0.09, 0.5))
        assert steps[-1][0] == 1.0 and steps[-1][1]["is_success"]
        # Anywhere along the band counts: only x matters.
        for y in (3.5, 1.0):
            steps = driveTo(env, (line + 0.09, y))
            assert all(reward == 1.0 for reward, _ in steps)
        driveTo(env, (line + 0.11, 1.0))
        _, reward, _, _, info = env.step(np.zeros(2, dtype=np.float32))
        assert reward == 0.0 and not info["is_success"]


def test_line_target_random_and_shaped() -> None:
    with makeEnv(MobileRobotLineTargetGymEnv, srl_model="raw_pixels", img_shape=SMALL_IMG, random_target=True,
                 shape_reward=True, seed=4) as env:
        lines = set()
        for _ in range(10):
            env.reset()
            assert env.LINE_X_RANGE[0] <= env.lineX <= env.LINE_X_RANGE[1]
            np.testing.assert_allclose(env.getTargetPos(), [env.lineX - env.LINE_OFFSET, 2.0], atol=1e-6)
            band_x = env._p.getBasePositionAndOrientation(env._target_uid)[0][0]
            assert band_x == pytest.approx(env.lineX, abs=1e-5)
            lines.add(env.lineX)
        assert len(lines) == 10
        _, reward, _, _, _ = env.step(2)
        assert reward == pytest.approx(-abs(env.getRobotPos()[0] - env.getTargetPos()[0]), abs=1e-5)


# --- first-person view -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_class", [MobileRobotGymEnv, MobileRobot1DGymEnv])
def test_fpv_stacks_a_moving_first_person_view(env_class: type) -> None:
    with makeEnv(env_class, srl_model="raw_pixels", img_shape=SMALL_IMG, fpv=True, seed=0) as env, \
            makeEnv(env_class, srl_model="raw_pixels", img_shape=SMALL_IMG, seed=0) as plain:
        obs, _ = env.reset()
        top, _ = plain.reset()
        np.testing.assert_array_equal(obs[:, :, :3], top)
        first_person = obs[:, :, 3:]
        assert first_person.std() > 10 and not np.array_equal(first_person, top)
        for _ in range(5):
            obs, _, _, _, _ = env.step(1)  # +x: toward the far wall
        assert np.mean(np.any(obs[:, :, 3:] != first_person, axis=2)) > 0.1


def test_fpv_leaves_ground_truth_alone() -> None:
    with makeEnv(MobileRobotGymEnv, fpv=True, seed=0) as env:
        calls = [0]
        original = env._p.getCameraImage

        def counting(*args, **kwargs):
            calls[0] += 1
            return original(*args, **kwargs)

        env._p.getCameraImage = counting
        obs, _ = env.reset()
        env.step(1)
        assert obs.shape == (2,) and calls[0] == 0
        assert MobileRobotGymEnv.getGlobals()["defaults"]["fpv"] is False


# --- command line --------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(ENV_IDS.values()))
@pytest.mark.parametrize("continuous", [False, True])
def test_train_cli(env_id: str, continuous: bool, tmp_path) -> None:
    # one PPO rollout (n_steps 128) and its update
    result = runTrain("--algo", "ppo2", "--env", env_id, "--srl-model", "ground_truth", "--num-timesteps", "128",
                      "--log-dir", tmp_path, *(["-c"] if continuous else []))
    assert runFolder(result).startswith(str(tmp_path))
