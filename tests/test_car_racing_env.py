"""Tests of CarRacingGymEnv (environments/car_racing/car_env.py): gymnasium's CarRacing behind SRLGymEnv, headless."""
from __future__ import annotations

import os
import subprocess
import sys

import gymnasium
import numpy as np
import pygame
import pytest
from stable_baselines3.common.env_checker import check_env

from environments.car_racing.car_env import CarRacingGymEnv, _rotate, _SizedCarRacing, car_racing
from replay import enjoy_baselines
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.sweeps.recorded import changedSettings
from rl_baselines.sweeps.sweep import makeSpec
from srl_toolbox.files import readJson
from tests.conftest import REPO, runFolder, runTrain, trainHere

SMALL_IMG = (3, 40, 40)
LEFT, RIGHT, GAS, BRAKE = range(4)


@pytest.fixture(autouse=True)
def noDisplay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs as on a headless server."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)


@pytest.mark.parametrize("srl_model", ["ground_truth", "raw_pixels"])
@pytest.mark.parametrize("is_discrete", [True, False])
def test_check_env(srl_model: str, is_discrete: bool) -> None:
    env = CarRacingGymEnv(srl_model=srl_model, is_discrete=is_discrete, img_shape=SMALL_IMG)
    try:
        check_env(env, warn=True)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        assert obs.shape == ((40, 40, 3) if srl_model == "raw_pixels" else (2,))
        assert env.action_space == (gymnasium.spaces.Discrete(4) if is_discrete
                                    else gymnasium.spaces.Box(-1, 1, (3,), np.float32))
    finally:
        env.close()


def test_gymnasium_make() -> None:
    env = gymnasium.make("CarRacingGymEnv-v0", srl_model="ground_truth")
    try:
        assert isinstance(env.unwrapped, CarRacingGymEnv)
        obs, _ = env.reset(seed=0)
        inner = env.unwrapped
        np.testing.assert_allclose(obs, inner.getRobotPos() - inner.getTargetPos(), atol=1e-4)
    finally:
        env.close()


def test_render_fps_is_carracings_step_rate() -> None:
    """metadata["render_fps"] said 20 while one step is 1/50 s (CarRacing's FPS, the rate its window shows): a video
    recorded at the env's rate (gymnasium's RecordVideo) played 2.5 times too slowly."""
    env = gymnasium.make("CarRacingGymEnv-v0", srl_model="ground_truth")
    try:
        assert env.metadata["render_fps"] == car_racing.FPS == gymnasium.make("CarRacing-v3").metadata["render_fps"]
    finally:
        env.close()


def test_gas_earns_tile_reward_and_ground_truth_follows_the_car() -> None:
    env = CarRacingGymEnv(srl_model="ground_truth", relative_pos=False, seed=0)
    obs, _ = env.reset()
    start = obs.copy()
    np.testing.assert_allclose(start, env.getRobotPos())
    total, first_tile_step = 0.0, None
    for i in range(300):
        obs, reward, terminated, truncated, _ = env.step(GAS)
        assert not truncated
        if reward > 0 and first_tile_step is None:
            first_tile_step = i
        total += reward
        if terminated:
            break
    # Each new tile is worth 1000/N, each step -0.1.
    assert first_tile_step is not None and first_tile_step < 200
    assert env.tilesVisited > 5 and total > 0
    assert np.linalg.norm(obs - start) > 20
    np.testing.assert_allclose(obs, env.getRobotPos())
    env.close()


def test_target_is_a_track_point_ahead() -> None:
    env = CarRacingGymEnv(srl_model="ground_truth", seed=1)
    env.reset()
    track = np.array([(x, y) for _, _, x, y in env._car.track])
    target = env.getTargetPos()
    index = int(np.argmin(np.linalg.norm(track - target, axis=1)))
    np.testing.assert_allclose(track[index], target, atol=1e-3)
    nearest = int(np.argmin(np.linalg.norm(track - env.getRobotPos(), axis=1)))
    assert index == (nearest + env.LOOKAHEAD) % len(track)
    env.close()


def _firstSteps(seed: int, srl_model: str, n_steps: int = 30) -> np.ndarray:
    env = CarRacingGymEnv(srl_model=srl_model, img_shape=SMALL_IMG, is_discrete=False, seed=seed)
    observations = [env.reset()[0]]
    for i in range(n_steps):
        observations.append(env.step(np.array([np.sin(i / 5), 0.2, -1.0], dtype=np.float32))[0])
    observations.append(env.reset()[0])  # the second episode's track comes from the same stream
    env.close()
    return np.stack(observations)


@pytest.mark.parametrize("srl_model", ["ground_truth", "raw_pixels"])
def test_seeded_resets_repeat(srl_model: str) -> None:
    np.testing.assert_array_equal(_firstSteps(3, srl_model), _firstSteps(3, srl_model))
    assert not np.array_equal(_firstSteps(4, "ground_truth", 0)[0], _firstSteps(3, "ground_truth", 0)[0])


def test_continuous_gas_and_brake_mapping() -> None:
    env = CarRacingGymEnv(srl_model="ground_truth", relative_pos=False, is_discrete=False, seed=0)
    start, _ = env.reset()
    for _ in range(30):  # gas and brake at -1: none at all
        obs, _, _, _, _ = env.step(np.array([0.0, -1.0, -1.0], dtype=np.float32))
    assert np.linalg.norm(obs - start) < 0.5
    for _ in range(30):  # full gas
        obs, _, _, _, _ = env.step(np.array([0.0, 1.0, -1.0], dtype=np.float32))
    assert np.linalg.norm(obs - start) > 2
    env.close()


def test_pixels_not_blank_and_change() -> None:
    env = CarRacingGymEnv(srl_model="raw_pixels", img_shape=(3, 64, 48), seed=0, render_mode="rgb_array",
                          render_size=80)
    first, _ = env.reset()
    assert first.shape == (64, 48, 3) and first.std() > 10
    obs = first
    for _ in range(60):
        obs, _, _, _, _ = env.step(GAS)
    assert np.mean(np.any(obs != first, axis=2)) > 0.05
    assert env.render().shape == (80, 80, 3)
    env.close()


def test_fast_road_drawing_matches_gymnasium(monkeypatch: pytest.MonkeyPatch) -> None:
    """The array version of CarRacing._render_road draws exactly gymnasium's pixels."""
    fast = _firstSteps(5, "raw_pixels", n_steps=40)
    monkeypatch.setattr(_SizedCarRacing, "_render_road", car_racing.CarRacing._render_road)
    np.testing.assert_array_equal(fast, _firstSteps(5, "raw_pixels", n_steps=40))
    rng = np.random.default_rng(0)
    points = rng.uniform(-400, 400, (50, 2))
    for angle in [*rng.uniform(-20, 20, 20), 0.0, np.pi / 2, -np.pi, 3 * np.pi / 2 + 1e-7, 2 * np.pi - 1e-7]:
        expected = np.array([tuple(pygame.math.Vector2(tuple(p)).rotate_rad(angle)) for p in points])
        np.testing.assert_array_equal(_rotate(points, angle), expected)


def test_ground_truth_draws_no_frame_and_truncation() -> None:
    env = CarRacingGymEnv(srl_model="ground_truth", seed=0, max_steps=5)
    calls = []
    original = env._car._create_image_array
    env._car._create_image_array = lambda *args: calls.append(1) or original(*args)
    env.reset()
    for i in range(5):
        _, _, terminated, truncated, _ = env.step(BRAKE)
        assert not terminated and truncated == (i == 4)
    assert calls == [] and env.render() is None
    assert CarRacingGymEnv.MAX_STEPS == 10000 and CarRacingGymEnv(srl_model="ground_truth").max_steps == 10000
    env.close()
    env.close()
    env = CarRacingGymEnv(srl_model="ground_truth", seed=0, render_mode="rgb_array", render_size=32)
    env.reset()
    image = env.render()
    assert image.shape == (32, 32, 3) and image.std() > 10
    env.close()


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="action_joints"):
        CarRacingGymEnv(srl_model="ground_truth", action_joints=True)
    with pytest.raises(ValueError, match="srl_model"):
        CarRacingGymEnv(srl_model="joints")
    with pytest.raises(RuntimeError, match="DISPLAY"):
        CarRacingGymEnv(srl_model="ground_truth", renders=True)
    # each reset draws a new track (the target follows it) and the reward is the tiles': both flags did nothing
    for keyword in ("random_target", "shape_reward"):
        with pytest.raises(ValueError, match=f"no {keyword}"):
            CarRacingGymEnv(srl_model="ground_truth", **{keyword: True})
    env = CarRacingGymEnv(srl_model="ground_truth")
    env.reset(seed=0)
    with pytest.raises(ValueError):
        env.step(4)
    env.close()
    env = CarRacingGymEnv(srl_model="ground_truth", is_discrete=False)
    env.reset(seed=0)
    # a NaN went through np.clip into Box2D: a NaN state, then a "finished lap" worth about +993
    for bad in (np.array([np.nan] * 3, np.float32), np.array([0.0, 1.0], np.float32), np.zeros(4, np.float32)):
        with pytest.raises(ValueError, match="3 finite values"):
            env.step(bad)
    observation, reward, terminated, *_ = env.step(np.array([0.0, 1.0, -1.0], np.float32))
    assert np.all(np.isfinite(observation)) and not terminated and reward < 100
    env.close()


def test_runs_without_display_in_a_fresh_process() -> None:
    """No DISPLAY, and no pygame banner on stdout."""
    code = ("from environments.car_racing.car_env import CarRacingGymEnv\n"
            "env = CarRacingGymEnv(srl_model='raw_pixels', img_shape=(3, 40, 40), seed=0)\n"
            "obs, _ = env.reset()\n"
            "print('ok', env.step(2)[0].shape)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok (40, 40, 3)"


@pytest.mark.slow
@pytest.mark.parametrize("continuous", [False, True])
def test_train_cli(continuous: bool, tmp_path) -> None:
    # one PPO rollout (n_steps 128) and its update
    result = runTrain("--algo", "ppo2", "--env", "CarRacingGymEnv-v0", "--srl-model", "ground_truth",
                      "--num-timesteps", "128", "--log-dir", tmp_path, *(["-c"] if continuous else []))
    assert runFolder(result).startswith(str(tmp_path))


def test_flags_it_ignores_are_recorded_off(tmp_path) -> None:
    """-r and --shape-reward do nothing on CarRacing (one warning each), yet args.json recorded them true: a
    ``gather_results --group-by shape_reward`` set the run apart from the same run without them. args.json records
    what the env applied (off, as env_globals.json and the dataset generator do); a sweep cell given the flags still
    finds the run its own, and the run replays."""
    flags = ["-r", "--shape-reward", "--num-timesteps", "64", "--hyperparam", "n_steps:64"]
    with pytest.warns(UserWarning, match="does nothing on CarRacingGymEnv-v0") as caught:
        run = trainHere("--algo", "ppo2", "--env", "CarRacingGymEnv-v0", "--srl-model", "ground_truth", *flags,
                        "--log-dir", tmp_path)
    assert len([w for w in caught if "does nothing on CarRacingGymEnv-v0" in str(w.message)]) == 2
    args = readJson(RunFolder(run).args_file)
    assert (args["random_target"], args["shape_reward"]) == (False, False)
    env_kwargs = readJson(RunFolder(run).env_globals_file)["env_kwargs"]
    assert (env_kwargs["random_target"], env_kwargs["shape_reward"]) == (False, False)
    spec = makeSpec("ppo2", "CarRacingGymEnv-v0", "ground_truth", 0, flags, str(tmp_path))
    assert changedSettings(spec, run) == []
    assert enjoy_baselines.main(["--log-dir", run, "--num-timesteps", "20", "--no-progress"]) == 0
