"""Tests of OmnirobotEnv (environments/omnirobot/omnirobot_env.py): API, task rules, seeding, drawing."""
from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env

from environments.omnirobot.omnirobot_env import OmnirobotEnv
from tests.conftest import runFolder, runTrain

SMALL_IMG = (3, 40, 40)
FORWARD, BACKWARD, LEFT, RIGHT = range(4)


def distance(env: OmnirobotEnv) -> float:
    return float(np.linalg.norm(env.getRobotPos().astype(np.float64) - env.getTargetPos()))


@pytest.mark.parametrize("srl_model", ["ground_truth", "raw_pixels"])
@pytest.mark.parametrize("is_discrete", [True, False])
def test_check_env(srl_model: str, is_discrete: bool) -> None:
    env = OmnirobotEnv(srl_model=srl_model, is_discrete=is_discrete, img_shape=SMALL_IMG)
    check_env(env, warn=True)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs.shape == ((40, 40, 3) if srl_model == "raw_pixels" else (2,))
    assert env.action_space == (gymnasium.spaces.Discrete(4) if is_discrete
                                else gymnasium.spaces.Box(-1, 1, (2,), np.float32))


def test_gymnasium_make() -> None:
    env = gymnasium.make("OmnirobotEnv-v0", srl_model="ground_truth")
    assert isinstance(env.unwrapped, OmnirobotEnv)
    obs, _ = env.reset(seed=0)
    np.testing.assert_allclose(obs, env.unwrapped.getRobotPos() - env.unwrapped.getTargetPos(), atol=1e-6)


def _rollout(seed: int, srl_model: str = "ground_truth", n_steps: int = 100) -> tuple[np.ndarray, list[float]]:
    env = OmnirobotEnv(srl_model=srl_model, img_shape=SMALL_IMG, random_target=True, is_discrete=False, seed=seed)
    observations, rewards = [env.reset(seed=seed)[0]], []
    for _ in range(n_steps):
        obs, reward, _, _, _ = env.step(env.action_space.sample())
        observations.append(obs)
        rewards.append(reward)
    return np.stack(observations), rewards


@pytest.mark.parametrize("srl_model", ["ground_truth", "raw_pixels"])
def test_seeded_resets_repeat(srl_model: str) -> None:
    obs_a, rewards_a = _rollout(7, srl_model)
    obs_b, rewards_b = _rollout(7, srl_model)
    np.testing.assert_array_equal(obs_a, obs_b)
    assert rewards_a == rewards_b
    assert not np.array_equal(obs_a[0], _rollout(8, srl_model, 0)[0][0])


def test_start_and_targets() -> None:
    env = OmnirobotEnv(srl_model="ground_truth", seed=0)
    starts = []
    for _ in range(30):
        env.reset()
        starts.append(env.getRobotPos())
        np.testing.assert_allclose(env.getTargetPos(), OmnirobotEnv.TARGET_POS, atol=1e-6)  # fixed by default
    starts = np.array(starts)
    assert np.all(np.abs(starts) <= 0.7) and len(np.unique(starts, axis=0)) == 30
    env = OmnirobotEnv(srl_model="ground_truth", random_target=True, seed=0)
    targets = []
    for _ in range(30):
        env.reset()
        targets.append(env.getTargetPos())
    targets = np.array(targets)
    assert np.all(np.abs(targets) <= 0.7) and len(np.unique(targets, axis=0)) == 30


def test_actions_move_along_their_axis() -> None:
    env = OmnirobotEnv(srl_model="ground_truth", seed=1)
    env.reset()
    for action, move in ((FORWARD, (0.1, 0)), (BACKWARD, (-0.1, 0)), (LEFT, (0, 0.1)), (RIGHT, (0, -0.1))):
        before = env.getRobotPos()
        env.step(action)
        np.testing.assert_allclose(env.getRobotPos() - before, move, atol=1e-6)
    env = OmnirobotEnv(srl_model="ground_truth", is_discrete=False, seed=1)
    env.reset()
    before = env.getRobotPos()
    env.step(np.array([3.0, -0.5], dtype=np.float32))
    np.testing.assert_allclose(env.getRobotPos() - before, (0.1, -0.05), atol=1e-6)
    env = OmnirobotEnv(srl_model="ground_truth")
    env.reset(seed=0)
    with pytest.raises(ValueError):
        env.step(4)


def test_scripted_policy_reaches_target() -> None:
    env = OmnirobotEnv(srl_model="ground_truth", random_target=True, seed=2)
    for _episode in range(3):
        env.reset()
        rewards = []
        for i in range(env.max_steps):
            dx, dy = env.getTargetPos() - env.getRobotPos()
            if abs(dx) > 0.05:
                action = FORWARD if dx > 0 else BACKWARD
            elif abs(dy) > 0.05:
                action = LEFT if dy > 0 else RIGHT
            else:
                action = (FORWARD, BACKWARD)[i % 2]
            _, reward, terminated, truncated, info = env.step(action)
            assert not terminated and truncated == (i == env.max_steps - 1)
            assert reward == (1.0 if distance(env) < env.REWARD_DIST_THRESHOLD else 0.0)
            assert info["is_success"] == (reward == 1.0)
            rewards.append(reward)
        # Once there, the policy stays there.
        first = rewards.index(1.0)
        assert all(r == 1.0 for r in rewards[first:]) and first < 30


def test_border_bump_gives_minus_one() -> None:
    env = OmnirobotEnv(srl_model="ground_truth", seed=3)
    env.reset()
    for _ in range(30):
        before = env.getRobotPos()
        _, reward, _, _, _ = env.step(RIGHT)  # -y, away from the target at (0.4, 0.4)
        if reward == -1.0:
            break
        assert reward == 0.0
    assert reward == -1.0
    np.testing.assert_array_equal(env.getRobotPos(), before)
    assert before[1] >= -0.85 and before[1] - 0.1 < -0.85
    assert env.step(FORWARD)[1] == 0.0


class _TargetOnBorder(OmnirobotEnv):
    TARGET_POS = (0.8, 0.0)


def test_target_reward_wins_over_bump_and_shape_reward() -> None:
    env = _TargetOnBorder(srl_model="ground_truth", is_discrete=False, seed=0)
    env.reset()
    for _ in range(40):
        env.step(np.clip((np.array([0.84, 0.0]) - env.getRobotPos()) / 0.1, -1, 1))
    before = env.getRobotPos()
    _, reward, _, _, info = env.step(np.array([1.0, 0.0], dtype=np.float32))
    np.testing.assert_array_equal(env.getRobotPos(), before)
    assert reward == 1.0 and info["is_success"]
    env = OmnirobotEnv(srl_model="ground_truth", shape_reward=True, seed=0)
    env.reset()
    for action in (FORWARD, LEFT, RIGHT):
        assert env.step(action)[1] == pytest.approx(-distance(env), abs=1e-5)


def test_pixels_show_robot_where_it_is() -> None:
    env = OmnirobotEnv(srl_model="raw_pixels", img_shape=(3, 64, 64), seed=0)
    first, _ = env.reset()
    assert first.dtype == np.uint8 and first.std() > 10 and len(np.unique(first.reshape(-1, 3), axis=0)) > 50

    def robotCentre(image: np.ndarray) -> np.ndarray:
        blue = (image[:, :, 2].astype(int) - image[:, :, 0] > 60)
        rows, cols = np.nonzero(blue)
        return np.array([cols.mean(), rows.mean()])

    np.testing.assert_allclose(robotCentre(first), env.floorToImage(env.getRobotPos()[None], 64, 64)[0], atol=1.0)
    obs = first
    for _ in range(3):
        obs, _, _, _, _ = env.step(FORWARD)
    changed = np.any(first != obs, axis=2)
    assert 0 < changed.mean() < 0.1
    # +x is right in the image.
    assert robotCentre(obs)[0] > robotCentre(first)[0] + 5
    np.testing.assert_allclose(robotCentre(obs), env.floorToImage(env.getRobotPos()[None], 64, 64)[0], atol=1.0)
    # The target (red) is drawn too.
    red = (obs[:, :, 0].astype(int) - obs[:, :, 1] > 100)
    assert red.sum() > 3


def test_ground_truth_never_draws_and_render() -> None:
    env = OmnirobotEnv(srl_model="ground_truth", seed=0, render_mode="rgb_array", render_size=50)
    env.reset()
    env.step(0)
    assert env._views == {}
    image = env.render()
    assert image.shape == (50, 50, 3) and image.std() > 10
    without_mode = OmnirobotEnv(srl_model="ground_truth")
    without_mode.reset()
    assert without_mode.render() is None


def test_invalid_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="action_joints"):
        OmnirobotEnv(srl_model="ground_truth", action_joints=True)
    with pytest.raises(ValueError, match="srl_model"):
        OmnirobotEnv(srl_model="joints")
    monkeypatch.setenv("DISPLAY", ":0")
    with pytest.raises(ValueError, match="no window.*valid render_mode: rgb_array"):
        OmnirobotEnv(srl_model="ground_truth", renders=True)
    with pytest.raises(ValueError, match="no window.*valid render_mode: rgb_array"):  # it showed nothing
        OmnirobotEnv(srl_model="ground_truth", render_mode="human")
    with pytest.raises(TypeError):
        OmnirobotEnv(srl_model="ground_truth", fpv=True)
    env = OmnirobotEnv(srl_model="ground_truth", is_discrete=False)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="continuous action must be 2 finite values"):
        env.step(np.zeros(3, np.float32))
    env.close()


@pytest.mark.slow
@pytest.mark.parametrize("continuous", [False, True])
def test_train_cli(continuous: bool, tmp_path) -> None:
    # one PPO rollout (n_steps 128) and its update
    result = runTrain("--algo", "ppo2", "--env", "OmnirobotEnv-v0", "--srl-model", "ground_truth",
                      "--num-timesteps", "128", "--log-dir", tmp_path, *(["-c"] if continuous else []))
    assert runFolder(result).startswith(str(tmp_path))


@pytest.mark.parametrize("display", [":0", None])
def test_gymnasium_make_refuses_human_mode(display, monkeypatch: pytest.MonkeyPatch) -> None:
    """gymnasium.make(render_mode="human") reaches the env's one-line refusal, with a display or without: the class
    lists "human", so gymnasium does not wrap the rgb_array env in a window of its own (which showed nothing); an
    instance lists only rgb_array, so that gymnasium's check_env passes with a display too."""
    if display is None:
        monkeypatch.delenv("DISPLAY", raising=False)
    else:
        monkeypatch.setenv("DISPLAY", display)
    with pytest.raises(ValueError, match=r"^OmnirobotEnv has no window .*valid render_mode: rgb_array"):
        gymnasium.make("OmnirobotEnv-v0", srl_model="ground_truth", render_mode="human")
    env = gymnasium.make("OmnirobotEnv-v0", srl_model="ground_truth")
    try:
        assert env.unwrapped.metadata["render_modes"] == ["rgb_array"]
        gymnasium_check_env(env.unwrapped)
    finally:
        env.close()
