"""Tests of the Kuka arm envs (environments/kuka/): API for every mode, task rules, seeding, rendering, training."""
from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import gymnasium
import numpy as np
import pytest
from conftest import runFolder, runTrain
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env

import environments
from environments import dataset_generator
from environments.generator_config import DEFAULT_MAX_DISTANCE
from environments.kuka.kuka_2button_env import Kuka2ButtonGymEnv
from environments.kuka.kuka_button_env import KukaButtonGymEnv
from environments.kuka.kuka_moving_button_env import KukaMovingButtonGymEnv
from environments.kuka.kuka_rand_button_env import KukaRandButtonGymEnv
from environments.srl_env import FRESH_WORLD, RENDERERS
from rl_baselines.envs.factory import envKwargsFromArgs

SMALL_IMG = (3, 40, 40)  # small images keep the pixel tests fast
ENV_CLASSES = (KukaButtonGymEnv, KukaRandButtonGymEnv, Kuka2ButtonGymEnv, KukaMovingButtonGymEnv)
ACTION_KINDS = {"discrete": {"is_discrete": True}, "continuous": {"is_discrete": False},
                "joints": {"is_discrete": False, "action_joints": True}}


@contextmanager
def makeEnv(env_class: type[KukaButtonGymEnv] = KukaButtonGymEnv, **kwargs) -> Iterator[KukaButtonGymEnv]:
    """Build an env (ground truth, continuous effector moves unless told otherwise) and always close it."""
    kwargs.setdefault("srl_model", "ground_truth")
    kwargs.setdefault("is_discrete", False)
    env = env_class(**kwargs)
    try:
        yield env
    finally:
        env.close()


def distanceToTarget(env: KukaButtonGymEnv) -> float:
    return float(np.linalg.norm(env.getRobotPos().astype(np.float64) - env.getTargetPos()))


def towardTarget(env: KukaButtonGymEnv, hover: float = 0.05, tolerance: float = 0.01) -> np.ndarray:
    """
    Scripted continuous policy from the ground truth: over the current target (rising first when lower than
    ``hover`` above it), then straight down onto it.
    """
    offset = env.getRobotPos().astype(np.float64) - env.getTargetPos()
    if np.linalg.norm(offset[:2]) > tolerance:
        move = np.array([0.0, 0.0, 1.0]) if offset[2] < hover else np.array([-offset[0], -offset[1], 0.0])
    else:
        move = np.array([-offset[0], -offset[1], -1.0])
    return np.clip(move / env.DELTA_V_CONTINUOUS, -1, 1).astype(np.float32)


def discreteTowardTarget(relative: np.ndarray, tolerance: float = 0.02) -> int:
    """Scripted discrete policy from the relative ground-truth observation: align x, then y, then go down."""
    if abs(relative[0]) > tolerance:
        return 0 if relative[0] > 0 else 1
    if abs(relative[1]) > tolerance:
        return 2 if relative[1] > 0 else 3
    return 4


def pressUntilDone(env: KukaButtonGymEnv, n_steps: int = 400) -> tuple[list[float], list[dict], bool]:
    """Run towardTarget until the episode ends; return rewards, infos and whether it terminated."""
    rewards, infos = [], []
    for _ in range(n_steps):
        _, reward, terminated, truncated, info = env.step(towardTarget(env))
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            return rewards, infos, terminated
    return rewards, infos, False


# --- API ----------------------------------------------------------------------------------------------------------

CHECK_CASES = [(KukaButtonGymEnv, mode, kind) for mode in KukaButtonGymEnv.SRL_MODES for kind in ACTION_KINDS]
CHECK_CASES += [(cls, mode, kind) for cls in ENV_CLASSES[1:] for mode in ("ground_truth", "raw_pixels")
                for kind in ACTION_KINDS]


@pytest.mark.parametrize("env_class,srl_model,kind", CHECK_CASES,
                         ids=[f"{c.__name__}-{m}-{k}" for c, m, k in CHECK_CASES])
def test_check_env(env_class, srl_model: str, kind: str) -> None:
    with makeEnv(env_class, srl_model=srl_model, img_shape=SMALL_IMG, seed=0, **ACTION_KINDS[kind]) as env:
        check_env(env, warn=True)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        expected_shape = {"ground_truth": (3,), "joints": (7,), "joints_position": (10,),
                          "raw_pixels": (40, 40, 3)}[srl_model]
        assert obs.shape == expected_shape
        assert obs.dtype == (np.uint8 if srl_model == "raw_pixels" else np.float32)
        if kind == "discrete":
            assert env.action_space == gymnasium.spaces.Discrete(6)
        else:
            assert env.action_space.shape == ((7,) if kind == "joints" else (3,))
            assert env.action_space.low.min() == -1 and env.action_space.high.max() == 1


@pytest.mark.parametrize("env_class", ENV_CLASSES)
def test_gymnasium_make(env_class) -> None:
    env_id = f"{env_class.__name__}-v0"
    assert env_id in environments.registered_env
    env = gymnasium.make(env_id, srl_model="ground_truth")
    try:
        assert isinstance(env.unwrapped, env_class)
        assert env.unwrapped.max_steps == env_class.MAX_STEPS
        obs, _ = env.reset(seed=1)
        assert obs.shape == (3,)
        assert "is_success" in env.step(env.action_space.sample())[4]
    finally:
        env.close()


def test_class_attributes() -> None:
    assert KukaButtonGymEnv.MAX_STEPS == KukaRandButtonGymEnv.MAX_STEPS == 1000
    assert Kuka2ButtonGymEnv.MAX_STEPS == KukaMovingButtonGymEnv.MAX_STEPS == 1500
    for env_class in ENV_CLASSES:
        assert env_class.ACTION_JOINTS and env_class.PLOT_TYPE == "3D" and env_class.getGroundTruthDim() == 3
        assert set(env_class.SRL_MODES) == {"ground_truth", "raw_pixels", "joints", "joints_position"}


@pytest.mark.parametrize("env_class", ENV_CLASSES)
def test_get_globals_is_json(env_class) -> None:
    env_globals = json.loads(json.dumps(env_class.getGlobals({"srl_model": "joints", "img_shape": (3, 40, 40)})))
    assert env_globals["constants"]["MAX_STEPS"] == env_class.MAX_STEPS
    assert env_globals["defaults"]["multi_view"] is False
    assert env_globals["env_kwargs"]["img_shape"] == [3, 40, 40]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="action_joints needs continuous"):
        KukaButtonGymEnv(srl_model="ground_truth", is_discrete=True, action_joints=True)
    with pytest.raises(ValueError, match="max_distance"):
        KukaButtonGymEnv(srl_model="ground_truth", max_distance=0)
    with pytest.raises(TypeError):
        KukaButtonGymEnv(srl_model="ground_truth", action_repeat=2)
    with makeEnv(is_discrete=True) as env:
        env.reset(seed=0)
        with pytest.raises(ValueError, match=r"\[0, 6\)"):
            env.step(6)
    with makeEnv() as env:
        env.reset(seed=0)
        with pytest.raises(ValueError, match="3 finite values"):
            env.step(np.array([0.0, np.nan, 0.0], dtype=np.float32))


# --- seeding --------------------------------------------------------------------------------------------------------

def _rollout(env: KukaButtonGymEnv, seed: int, n_steps: int = 25) -> np.ndarray:
    env.action_space.seed(seed)
    observations = [env.reset(seed=seed)[0]]
    for _ in range(n_steps):
        observations.append(env.step(env.action_space.sample())[0])
    return np.stack(observations)


@pytest.mark.parametrize("env_class,kind", [(KukaButtonGymEnv, "discrete"), (KukaButtonGymEnv, "joints"),
                                            (KukaRandButtonGymEnv, "continuous")])
def test_same_seed_same_episode(env_class, kind: str) -> None:
    with makeEnv(env_class, random_target=True, **ACTION_KINDS[kind]) as env_a, \
            makeEnv(env_class, random_target=True, **ACTION_KINDS[kind]) as env_b:
        first = _rollout(env_a, 3)
        np.testing.assert_array_equal(first, _rollout(env_b, 3))
        # The same env replays too, whatever the episodes in between did.
        _rollout(env_a, 4)
        np.testing.assert_array_equal(first, _rollout(env_a, 3))
        assert not np.array_equal(first[0], _rollout(env_b, 4, n_steps=0)[0])


def _randomEpisode(env: KukaButtonGymEnv, seed: int, options: dict | None = None, seeded_reset: bool = True) -> np.ndarray:
    """:return: the ground truth of an episode of seeded random actions played to its end, as the generator plays
    (``seeded_reset=False``: the env's generator seeded as reset(seed=...) seeds it, then an unseeded reset)"""
    if seeded_reset:
        env.reset(seed=seed, options=options)
    else:
        env.np_random, _ = gymnasium.utils.seeding.np_random(seed)
        env.reset(options=options)
    env.action_space.seed(seed)
    states = [env.getGroundTruth()]
    while True:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        states.append(env.getGroundTruth())
        if terminated or truncated:
            return np.stack(states)


def test_fresh_world_reset_plays_the_episode_of_a_new_env() -> None:
    # The distractors' contacts carry an episode's traces into the next one's floats (RESET_KEEPS_HISTORY):
    # the reset option FRESH_WORLD rebuilds the scene, and the episode is then the one a new env plays first.
    settings = {"is_discrete": True, "force_down": True, "max_steps": 100, "max_distance": DEFAULT_MAX_DISTANCE}
    before, episode = 2613022947, 121999420  # the generator's seeds of episodes 3 and 14 (seed 0)
    assert KukaRandButtonGymEnv.RESET_KEEPS_HISTORY
    assert not environments.getEnvClass("MobileRobotGymEnv-v0").RESET_KEEPS_HISTORY
    with makeEnv(KukaRandButtonGymEnv, **settings) as new:
        reference = _randomEpisode(new, episode)
    with makeEnv(KukaRandButtonGymEnv, **settings) as env:
        _randomEpisode(env, before)
        assert not np.array_equal(_randomEpisode(env, episode, seeded_reset=False), reference), \
            "the history no longer shows: RESET_KEEPS_HISTORY may not be needed"
        _randomEpisode(env, before, {FRESH_WORLD: True})
        np.testing.assert_array_equal(_randomEpisode(env, episode, {FRESH_WORLD: True}, seeded_reset=False), reference)
        # KukaRandButton's seeded reset rebuilds the scene by itself: reset(seed=s) repeats s's episode (check_env)
        _randomEpisode(env, before)
        np.testing.assert_array_equal(_randomEpisode(env, episode), reference)
    assert KukaRandButtonGymEnv.SEEDED_RESET_BUILDS_ANEW and not KukaButtonGymEnv.SEEDED_RESET_BUILDS_ANEW


def test_gymnasium_check_env_repeats_a_seeded_reset_with_distractors() -> None:
    # gymnasium's checker resets with the same seed after other episodes and compares the pixels
    with makeEnv(KukaRandButtonGymEnv, srl_model="raw_pixels", img_shape=(3, 32, 32)) as env:
        gymnasium_check_env(env)


@pytest.mark.parametrize("env_id", ["KukaButtonGymEnv-v0", "MobileRobotGymEnv-v0", "OmnirobotEnv-v0",
                                    "CarRacingGymEnv-v0"])
def test_gymnasium_check_env_passes_without_a_display(env_id, monkeypatch) -> None:
    """gymnasium's check_env makes one env per listed render mode: "human" failed headless (it needs a display). An
    instance made without one lists the modes it can render; gymnasium.make(render_mode="human") still says why."""
    monkeypatch.delenv("DISPLAY", raising=False)
    env = gymnasium.make(env_id, srl_model="ground_truth")
    try:
        assert "human" not in env.unwrapped.metadata["render_modes"]
        gymnasium_check_env(env.unwrapped)
    finally:
        env.close()
    env_class = environments.getEnvClass(env_id)
    if "human" in env_class.metadata["render_modes"]:
        # a window-less env (Omnirobot) refuses the mode whatever the display; the others say they need one
        expected = (RuntimeError, "needs a display") if getattr(env_class, "WINDOW", True) else (ValueError, "has no window")
        with pytest.raises(expected[0], match=expected[1]):
            gymnasium.make(env_id, render_mode="human")


@pytest.mark.parametrize("env_class", ENV_CLASSES)
def test_render_fps_is_the_step_rate(env_class) -> None:
    """metadata["render_fps"] said 20 while one step is 24 physics steps of 1/240 s (0.1 s): a video recorded at the
    env's rate (gymnasium's RecordVideo) showed the arm at twice its speed."""
    with makeEnv(env_class) as env:
        assert env.metadata["render_fps"] == 10
        assert env.metadata["render_fps"] * env.PHYSICS_STEPS_PER_ACTION * env.TIME_STEP == pytest.approx(1.0)


@pytest.mark.parametrize("env_id", ["KukaButtonGymEnv-v0", "MobileRobotGymEnv-v0", "OmnirobotEnv-v0",
                                    "CarRacingGymEnv-v0"])
def test_every_env_takes_the_renderer_keyword(env_id) -> None:
    """Every env takes renderer=: each of its RENDERERS (an env drawing its own images offers the reference only,
    its default) is accepted; another is refused in one line naming the env's renderers, before anything is built."""
    env_class = environments.getEnvClass(env_id)
    assert env_class.acceptsKeyword("renderer") and env_class.DEFAULT_RENDERER in env_class.RENDERERS
    env = gymnasium.make(env_id, srl_model="ground_truth", renderer=env_class.DEFAULT_RENDERER)
    try:
        assert env.unwrapped.renderer == env_class.DEFAULT_RENDERER
    finally:
        env.close()
    other = next(name for name in RENDERERS if name not in env_class.RENDERERS)
    with pytest.raises(ValueError) as refused:
        gymnasium.make(env_id, srl_model="ground_truth", renderer=other)
    assert str(refused.value) == (f"unknown renderer {other!r} for {env_class.__name__}; valid choices: "
                                  f"{', '.join(env_class.RENDERERS)}")


def test_constructor_seed_matches_reset_seed() -> None:
    with makeEnv(seed=11, random_target=True) as seeded, makeEnv(random_target=True) as unseeded:
        np.testing.assert_array_equal(seeded.reset()[0], unseeded.reset(seed=11)[0])
        np.testing.assert_array_equal(seeded.reset()[0], unseeded.reset()[0])


def test_start_pose_is_slightly_random() -> None:
    with makeEnv(is_discrete=True, seed=0) as env:
        starts = np.stack([env.reset()[0] for _ in range(6)])
        spread = starts.max(axis=0) - starts.min(axis=0)
        assert 0.005 < spread.max() < 0.2
        np.testing.assert_allclose(env.getButtonPositions(), [[0.5, 0.0, -0.2]], atol=1e-6)


# --- task rules -----------------------------------------------------------------------------------------------------

def test_continuous_press_ends_the_episode() -> None:
    with makeEnv(seed=1) as env:
        obs, _ = env.reset()
        np.testing.assert_allclose(obs, env.getRobotPos() - env.getTargetPos(), atol=1e-6)
        assert distanceToTarget(env) > 0.1
        rewards, infos, terminated = pressUntilDone(env)
        assert terminated
        first = rewards.index(1.0)
        assert set(rewards[:first]) == {0.0} and not any(info["is_success"] for info in infos[:first])
        # N presses in a row end the episode, each worth +1.
        assert rewards[first:] == [1.0] * env.N_CONTACTS_BEFORE_TERMINATION
        assert all(info["is_success"] for info in infos[first:])
        assert distanceToTarget(env) < 0.01


def test_presses_count_over_the_episode() -> None:
    """Releasing the button and pressing it again does not restart the count (as in the original toolbox): N steps
    pressing in all end the episode, so a return is at most N."""
    n = KukaButtonGymEnv.N_CONTACTS_BEFORE_TERMINATION
    with makeEnv(seed=1) as env:
        env.reset()
        rewards: list[float] = []
        for _ in range(400):  # press once
            _, reward, terminated, _, _ = env.step(towardTarget(env))
            rewards.append(reward)
            assert not terminated
            if reward == 1.0:
                break
        released = 0
        for _ in range(50):  # lift (the button stays in contact for a step or two) until it has been free 3 steps
            _, reward, terminated, _, _ = env.step(np.array([0.0, 0.0, 1.0], dtype=np.float32))
            rewards.append(reward)
            assert not terminated
            released = released + 1 if reward == 0.0 else 0
            if released == 3:
                break
        assert released == 3 and rewards.count(1.0) < n
        rest, _, terminated = pressUntilDone(env)
        assert terminated and rewards.count(1.0) + rest.count(1.0) == n and sum(rewards) + sum(rest) == n


def test_discrete_press() -> None:
    with makeEnv(is_discrete=True, seed=2) as env:
        obs, _ = env.reset()
        rewards = []
        for _ in range(100):
            obs, reward, terminated, _, info = env.step(discreteTowardTarget(obs))
            rewards.append(reward)
            if terminated:
                break
        assert terminated and info["is_success"]
        assert 1.0 in rewards and -1.0 not in rewards


def test_joint_actions_move_live_joints() -> None:
    with makeEnv(srl_model="joints_position", action_joints=True, seed=0) as env:
        obs, _ = env.reset()
        for _ in range(3):
            before = obs
            action = np.zeros(7, dtype=np.float32)
            action[0] = 1.0
            obs, *_ = env.step(action)
            # Live values, read back from PyBullet: the first joint turned, the effector moved with it.
            live = [env._p.getJointState(env._robot_uid, j)[0] for j in range(7)]
            np.testing.assert_allclose(obs[:7], live, atol=1e-6)
            np.testing.assert_allclose(obs[7:], env.getRobotPos() - env.getTargetPos(), atol=1e-6)
            assert obs[0] - before[0] > 0.01
            assert np.linalg.norm(obs[7:] - before[7:]) > 1e-3
        assert abs(obs[0] - env.REST_POSE[0]) > 0.05


def test_force_down_with_joint_actions_is_refused_warned_and_left_out() -> None:
    """force_down restricts effector moves: with joint actions it did nothing without a word (train exited 0, the
    generator recorded joint datasets with it). The env refuses the pair; train warns once and builds the env
    without it (an older run recorded with both replays); the generator records joint datasets without it."""
    with pytest.raises(ValueError, match="force_down.*action_joints"):
        KukaButtonGymEnv(is_discrete=False, action_joints=True, force_down=True)
    with pytest.warns(UserWarning, match="--force-down does nothing with joint actions"):
        assert environments.envFlagRefusal("KukaButtonGymEnv-v0", force_down=True, action_joints=True) is None
    settings = SimpleNamespace(env="KukaButtonGymEnv-v0", srl_model="ground_truth", continuous_actions=True,
                               action_joints=True, random_target=False, shape_reward=False, fpv=False,
                               multi_view=False, force_down=True, renderer=None, img_shape=None)
    assert "force_down" not in envKwargsFromArgs(settings)
    assert envKwargsFromArgs(SimpleNamespace(**{**vars(settings), "action_joints": False}))["force_down"] is True
    for flags, force_down in (([], True), (["-c"], True), (["-c", "-joints"], None)):
        config = dataset_generator.parseConfig(["--env", "KukaButtonGymEnv-v0", *flags])
        assert dataset_generator.validate(config)[0].env_kwargs.get("force_down") is force_down


def test_joints_observation_is_live() -> None:
    with makeEnv(srl_model="joints", is_discrete=True, seed=0) as env:
        obs, _ = env.reset()
        for _ in range(4):
            obs, *_ = env.step(4)  # down: inverse kinematics turns several joints
        assert not np.allclose(obs, env.REST_POSE[:7], atol=0.05)
        np.testing.assert_array_equal(obs, env.getJoints())


def test_leaving_work_area() -> None:
    with makeEnv(seed=0, max_distance=0.2) as env:
        env.reset()
        up = np.array([0.0, 0.0, 1.0], dtype=np.float32)
        for _ in range(60):
            _, reward, terminated, _, info = env.step(up)
            assert not terminated
            assert reward == (-1.0 if distanceToTarget(env) > 0.2 else 0.0)
            if reward == -1.0:
                break
        assert reward == -1.0 and not info["is_success"]
        _, reward, terminated, _, _ = env.step(up)  # staying out: -1 again, the episode goes on
        assert reward == -1.0 and not terminated
        for _ in range(60):
            _, reward, _, _, _ = env.step(-up)
            if distanceToTarget(env) < 0.19:
                break
        assert reward == 0.0


def _driveDownBesideButton(env: KukaButtonGymEnv) -> tuple[list[float], bool]:
    """Go to the corner of the work box farthest from the button, then down onto the table."""
    rewards = []
    goal = np.array([env.EFFECTOR_BOUNDS[0][1], env.EFFECTOR_BOUNDS[1][1], env.getRobotPos()[2]])
    for _ in range(300):
        if np.linalg.norm(env.getRobotPos()[:2] - goal[:2]) > 0.01:
            action = np.clip((goal - env.getRobotPos()) / env.DELTA_V_CONTINUOUS, -1, 1)
        else:
            action = np.array([0.0, 0.0, -1.0])
        _, reward, terminated, _, _ = env.step(action.astype(np.float32))
        rewards.append(reward)
        if terminated:
            return rewards, True
    return rewards, False


@pytest.mark.parametrize("shape_reward", [False, True])
def test_hitting_the_table_ends_the_episode(shape_reward: bool) -> None:
    with makeEnv(seed=0, shape_reward=shape_reward) as env:
        env.reset()
        rewards, terminated = _driveDownBesideButton(env)
        assert terminated
        assert env._p.getContactPoints(bodyA=env._robot_uid, bodyB=env._table_uid)
        assert rewards[-1] == (env.FAILURE_REWARD if shape_reward else -1.0)
        if not shape_reward:
            assert set(rewards[:-1]) == {0.0}


def test_shaped_reward_is_minus_distance() -> None:
    with makeEnv(is_discrete=True, seed=5, shape_reward=True) as env:
        env.reset()
        rng = np.random.default_rng(0)
        for _ in range(40):
            _, reward, terminated, _, _ = env.step(int(rng.integers(6)))
            assert reward == pytest.approx(-distanceToTarget(env), abs=1e-5)
            if terminated:
                env.reset()


def test_shaped_continuous_success_bonus() -> None:
    with makeEnv(seed=1, shape_reward=True) as env:
        env.reset()
        rewards, _, terminated = pressUntilDone(env)
        assert terminated and rewards[-1] == env.SUCCESS_REWARD
        assert all(-1.0 < r <= 0.0 for r in rewards[:-1])


@pytest.mark.parametrize("max_steps", [None, 6])
def test_truncation(max_steps: int | None) -> None:
    with makeEnv(seed=0, max_steps=max_steps) as env:
        expected = 1000 if max_steps is None else max_steps
        assert env.max_steps == expected
        if max_steps is None:
            return
        for _episode in range(2):
            env.reset()
            for i in range(1, expected + 1):
                _, _, terminated, truncated, _ = env.step(np.zeros(3, dtype=np.float32))
                assert not terminated
                assert truncated == (i == expected)


def test_random_target() -> None:
    with makeEnv(seed=6, random_target=True) as env:
        positions = []
        for _ in range(10):
            obs, _ = env.reset()
            (x, y, z), = env.getButtonPositions()
            assert 0.35 <= x <= 0.65 and -0.3 <= y <= 0.3 and z == pytest.approx(-0.2)
            np.testing.assert_allclose(obs, env.getRobotPos() - env.getTargetPos(), atol=1e-6)
            body_pos, _ = env._p.getBasePositionAndOrientation(env._button_uids[0])
            np.testing.assert_allclose(body_pos, env.getButtonPositions()[0], atol=1e-5)
            positions.append((x, y))
        assert len(set(positions)) == len(positions)
        # The scripted policy still reaches a random button.
        assert pressUntilDone(env, 600)[2]


# --- variants -------------------------------------------------------------------------------------------------------

def test_two_buttons_in_order() -> None:
    with makeEnv(Kuka2ButtonGymEnv, seed=0) as env:
        env.reset()
        light, dark = env.getButtonPositions()
        np.testing.assert_allclose(env.getTargetPos()[:2], light[:2], atol=1e-6)
        rewards, infos, terminated = pressUntilDone(env, 1000)
        assert terminated and infos[-1]["is_success"]
        n = env.N_CONTACTS_BEFORE_TERMINATION
        assert sum(rewards) == 2 * n and set(rewards) == {0.0, 1.0}
        # The target moved on to the dark button after the light one's presses.
        np.testing.assert_allclose(env.getTargetPos()[:2], dark[:2], atol=1e-6)
        first = rewards.index(1.0)
        assert rewards[first:first + n] == [1.0] * n and rewards[first + n] == 0.0


def test_dark_button_first_gives_nothing() -> None:
    with makeEnv(Kuka2ButtonGymEnv, seed=0) as env:
        env.reset()
        light, dark = env.getButtonPositions()
        env.getTargetPos = lambda: (dark + [0.0, 0.0, env.BUTTON_TARGET_HEIGHT]).astype(np.float32)
        touched = False
        for _ in range(150):
            _, reward, terminated, _, info = env.step(towardTarget(env))
            assert reward == 0.0 and not info["is_success"] and not terminated
            touched = touched or env._pressedButton() == 1
        assert touched
        del env.getTargetPos
        np.testing.assert_allclose(env.getTargetPos()[:2], light[:2], atol=1e-6)


def test_moving_button() -> None:
    with makeEnv(KukaMovingButtonGymEnv, seed=0) as env:
        env.reset()
        start = env.getButtonPositions()[0].copy()
        env.step(np.zeros(3, dtype=np.float32))
        moved = env.getButtonPositions()[0]
        assert abs(abs(moved[1] - start[1]) - env.BUTTON_SPEED) < 1e-9 and moved[0] == start[0]
        body_pos, _ = env._p.getBasePositionAndOrientation(env._button_uids[0])
        np.testing.assert_allclose(body_pos, moved, atol=1e-5)
        rewards, infos, terminated = pressUntilDone(env)
        assert terminated and infos[-1]["is_success"] and 1.0 in rewards


def test_moving_button_bounces() -> None:
    with makeEnv(KukaMovingButtonGymEnv, seed=0) as env:
        env.reset()
        env._button_positions[0, 1] = env.BUTTON_Y_LIMIT - 0.0005
        env._button_velocity = env.BUTTON_SPEED
        ys = []
        for _ in range(4):
            env.step(np.zeros(3, dtype=np.float32))
            ys.append(env.getButtonPositions()[0, 1])
        assert max(ys) <= env.BUTTON_Y_LIMIT + 1e-6 and ys[-1] < ys[0]


def test_rand_button_distractors() -> None:
    with makeEnv(KukaRandButtonGymEnv, seed=0, random_target=True) as env:
        previous = None
        for _ in range(2):
            env.reset()
            button = env.getButtonPositions()[0]
            places = np.array([env._p.getBasePositionAndOrientation(uid)[0] for uid in env._object_uids])
            assert len(places) == env.N_OBJECTS
            # On the table (top at z = -0.194), inside the drop area, never on the button.
            assert np.all(places[:, 2] > -0.2) and np.all(places[:, 2] < -0.1)
            assert np.all(np.max(np.abs(places[:, :2] - button[:2]), axis=1) > env.OBJECT_BUTTON_CLEARANCE - 0.03)
            if previous is not None:
                assert not np.allclose(places, previous)
            previous = places
        ball = np.array(env._p.getBasePositionAndOrientation(env._ball_uid)[0])
        for _ in range(env.BALL_KICK_FIRST_STEP + 5):
            env.step(np.zeros(3, dtype=np.float32))
        assert np.linalg.norm(np.array(env._p.getBasePositionAndOrientation(env._ball_uid)[0]) - ball) > 0.005


# --- pixels ---------------------------------------------------------------------------------------------------------

@contextmanager
def countCameraCalls(env: KukaButtonGymEnv) -> Iterator[list[int]]:
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


@pytest.mark.parametrize("srl_model", ["ground_truth", "joints", "joints_position"])
def test_state_modes_never_render(srl_model: str) -> None:
    with makeEnv(srl_model=srl_model, seed=0) as env, countCameraCalls(env) as calls:
        env.reset()
        for _ in range(10):
            env.step(env.action_space.sample())
        assert calls[0] == 0


def test_pixels_show_the_arm_moving() -> None:
    with makeEnv(srl_model="raw_pixels", img_shape=(3, 64, 64), seed=0) as env, countCameraCalls(env) as calls:
        first, _ = env.reset()
        assert first.shape == (64, 64, 3) and first.dtype == np.uint8
        assert first.std() > 10 and len(np.unique(first.reshape(-1, 3), axis=0)) > 20
        obs = first
        for _ in range(8):
            obs, *_ = env.step(np.array([0.0, 1.0, -1.0], dtype=np.float32))
        assert calls[0] == 9
        changed = np.any(first != obs, axis=2)
        assert 0.002 < changed.mean() < 0.5


def test_multi_view() -> None:
    with makeEnv(srl_model="raw_pixels", img_shape=SMALL_IMG, multi_view=True, seed=0) as env:
        obs, _ = env.reset()
        assert obs.shape == (40, 40, 6) and env.observation_space.shape == (40, 40, 6)
        assert env.observation_space.contains(obs)
        assert obs[:, :, 3:].std() > 10 and not np.array_equal(obs[:, :, :3], obs[:, :, 3:])
    with makeEnv(srl_model="autoencoder", img_shape=SMALL_IMG, multi_view=True, seed=0) as env:
        assert env.reset()[0].shape == (40, 40, 6)


def test_render_rgb_array() -> None:
    with makeEnv(seed=0, render_mode="rgb_array", render_size=48) as env:
        env.reset()
        image = env.render()
        assert image.shape == (48, 48, 3) and image.dtype == np.uint8 and image.std() > 10
    with makeEnv(seed=0) as env:
        env.reset()
        assert env.render() is None


def test_close_twice() -> None:
    env = KukaButtonGymEnv(srl_model="ground_truth")
    env.reset(seed=0)
    env.close()
    env.close()


# --- training through the command line --------------------------------------------------------------------------

@pytest.mark.parametrize("env_id,args", [
    ("KukaButtonGymEnv-v0", ("--srl-model", "joints_position", "-c", "-joints")),
    ("KukaButtonGymEnv-v0", ("--srl-model", "raw_pixels", "--img-shape", "3", "40", "40")),
])
@pytest.mark.slow
def test_train_ppo2(tmp_path, env_id: str, args: tuple[str, ...]) -> None:
    # one PPO rollout (n_steps 128) and its update: the run's files, not its learning, are checked
    result = runTrain("--algo", "ppo2", "--env", env_id, *args, "--num-timesteps", "128", "--log-dir", tmp_path)
    run_dir = runFolder(result)
    with open(f"{run_dir}/env_globals.json", encoding="utf-8") as file:
        env_globals = json.load(file)
    assert env_globals["constants"]["N_ARM_JOINTS"] == 7
    assert env_globals["env_kwargs"]["srl_model"] == args[1]
