"""Renderer speed: each env's faster renderer beside PyBullet's TinyRenderer, in one run on one machine.

The mobile robots' sprite renderer and the Kuka arms' low-poly one (TinyRenderer drawing the arm with decimated
visual meshes). Two measures per env, each renderer on the same work:

- frames/s of the 64x64 observation image on the same random states, only the image call timed. Mobile robots: the
  robot anywhere within its bounds, targets drawn by ``random_target``; TinyRenderer, and the sprite renderer once
  its layers are made (a second pass over the states) and while it makes them (the first pass: "cold"). Kuka: random
  arm joint angles (half uniform within the joint limits, half around the rest pose) and a random button position
  (variants: their extra objects where the reset put them); one pass each;
- env steps/s with pixel observations (``raw_pixels``, 64x64): discrete random actions, a reset every 250 steps
  (or when the episode ends).

The renderers are measured alternately, ``--repeats`` times each, and the median is kept, so that machine noise hits
both alike. Usage: ``python -m benchmarks.render_speed [--states N] [--seconds S] [--no-append]``; appends a
section to docs/benchmarks.md unless ``--no-append``.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time
from typing import Any
from unittest import mock

import numpy as np

from benchmarks.command import exitStatus
from benchmarks.documents import addResultsArguments, appendReport, machineDescription, recordedCommand, resultsPath
from benchmarks.env_speed import FAMILY, timedLoop
from environments import getEnvClass
from environments.mobile_robot.sprite_cache import CACHE_ENV as SPRITE_CACHE_ENV
from srl_toolbox.cli import CLIParser, positiveFloat, positiveInt, runCommand

KUKA_FAMILY = ("KukaButtonGymEnv-v0", "KukaRandButtonGymEnv-v0", "Kuka2ButtonGymEnv-v0", "KukaMovingButtonGymEnv-v0")
SIDE = 64
EPISODE_STEPS = 250
N_ACTIONS = 100_000  # pre-drawn, reused cyclically


def _fastRenderer(env_id: str) -> str:
    """:return: the env's renderer other than TinyRenderer"""
    return next(name for name in getEnvClass(env_id).RENDERERS if name != "tinyrenderer")


def _randomStates(env_class: type, count: int) -> list[tuple[int, float, float]]:
    """:return: (reset seed, robot x, robot y) of ``count`` random states, the same for both renderers"""
    rng = np.random.default_rng(0)
    return [(seed, float(rng.uniform(*env_class.ROBOT_X_BOUNDS)), float(rng.uniform(*env_class.ROBOT_Y_BOUNDS)))
            for seed in range(count)]


def _randomArmStates(env_id: str, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """:return: (arm joint angles, button base position) of ``count`` random Kuka states, the same for both renderers"""
    env = getEnvClass(env_id)(srl_model="ground_truth")
    try:
        low, high = env._arm_lower, env._arm_upper
        rest = np.array(env.REST_POSE[:env.N_ARM_JOINTS])
        rng = np.random.default_rng(0)
        states = []
        for _ in range(count):
            angles = rng.uniform(low, high) if rng.random() < 0.5 else np.clip(rest + rng.normal(0.0, 0.5, len(rest)),
                                                                                low, high)
            button = np.array(env.BUTTON_POSITIONS[0])
            button[:2] += rng.uniform(-1.0, 1.0, 2) * env.BUTTON_RANDOM_RANGE
            states.append((angles, button))
        return states
    finally:
        env.close()


def kukaFrameRate(env_id: str, renderer: str, states: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """
    :param env_id: a Kuka env
    :param renderer: the renderer to measure
    :param states: the arm poses and button positions to draw
    :return: frames/s of the 64x64 observation camera over the states
    """
    env = getEnvClass(env_id)(srl_model="ground_truth", random_target=True, img_shape=(3, SIDE, SIDE),
                              renderer=renderer)
    elapsed = 0.0
    try:
        env.reset(seed=0)
        for angles, button in states:
            for joint, angle in enumerate(angles):
                env._p.resetJointState(env._robot_uid, joint, float(angle))
            env._teleport(env._button_uids[0], button.tolist(), (0.0, 0.0, 0.0, 1.0))
            start = time.perf_counter()
            env._cameraImage(env._view_matrix, SIDE, SIDE, env._obs_projection)
            elapsed += time.perf_counter() - start
    finally:
        env.close()
    return len(states) / elapsed


def frameRates(env_id: str, renderer: str, states: list[tuple[int, float, float]]) -> tuple[float, float]:
    """
    :param env_id: a mobile-robot env
    :param renderer: the renderer to measure
    :param states: the states to draw
    :return: frames/s of the 64x64 top view over the states: (first pass, second pass)
    """
    env = getEnvClass(env_id)(srl_model="ground_truth", random_target=True, img_shape=(3, SIDE, SIDE),
                              renderer=renderer)
    rates = []
    try:
        for _ in range(2):
            elapsed = 0.0
            for seed, x, y in states:
                env.reset(seed=seed)
                env._robot_x, env._robot_y = x, y
                env._teleport(env._robot_uid, (x, y, 0.0), (0.0, 0.0, 0.0, 1.0))
                start = time.perf_counter()
                env._cameraImage(SIDE, SIDE, env._obs_projection)
                elapsed += time.perf_counter() - start
            rates.append(len(states) / elapsed)
    finally:
        env.close()
    return rates[0], rates[1]


def stepRate(env_id: str, renderer: str, seconds: float, actions: list[int]) -> float:
    """
    :param env_id: a mobile-robot or Kuka env
    :param renderer: the renderer to measure
    :param seconds: how long to run
    :param actions: discrete actions to play (cyclically)
    :return: env steps/s with 64x64 pixel observations, resets included
    """
    env = getEnvClass(env_id)(srl_model="raw_pixels", img_shape=(3, SIDE, SIDE), renderer=renderer, seed=0,
                              max_steps=EPISODE_STEPS)
    env.reset(seed=0)
    actions = [action % env.action_space.n for action in actions]
    n_actions, env_step, env_reset = len(actions), env.step, env.reset

    def step(i: int) -> None:
        _, _, terminated, truncated, _ = env_step(actions[i % n_actions])
        if terminated or truncated:
            env_reset()

    try:
        timedLoop(step, min(0.5, seconds), 10)  # warm-up (the sprite layers of the first states)
        return timedLoop(step, seconds, 10)
    finally:
        env.close()


def run(env_ids: list[str], n_states: int, seconds: float, repeats: int) -> list[dict[str, Any]]:
    """
    :param env_ids: envs of the mobile-robot and Kuka families
    :param n_states: random states per frame measurement
    :param seconds: duration of each steps/s measurement
    :param repeats: measurements per renderer (the median is kept)
    :return: one row per env: its fast renderer, frames/s (tinyrenderer, fast, fast while its layers are made:
        sprites only, None otherwise), steps/s (tinyrenderer, fast)
    """
    rows = []
    for env_id in env_ids:
        fast = _fastRenderer(env_id)
        sprites = fast == "sprites"
        actions = np.random.default_rng(0).integers(0, 12, N_ACTIONS).tolist()
        states = _randomStates(getEnvClass(env_id), n_states) if sprites else _randomArmStates(env_id, n_states)
        frames: dict[str, list[tuple[float, float]]] = {"tinyrenderer": [], fast: []}
        steps: dict[str, list[float]] = {"tinyrenderer": [], fast: []}
        for _ in range(repeats):
            for name in frames:
                if sprites:
                    frames[name].append(frameRates(env_id, name, states))
                else:
                    rate = kukaFrameRate(env_id, name, states)
                    frames[name].append((rate, rate))
                steps[name].append(stepRate(env_id, name, seconds, actions))
        row = {"env": env_id, "renderer": fast,
               "frames_tiny": statistics.median(warm for _, warm in frames["tinyrenderer"]),
               "frames_fast": statistics.median(warm for _, warm in frames[fast]),
               "frames_cold": statistics.median(cold for cold, _ in frames[fast]) if sprites else None,
               "steps_tiny": statistics.median(steps["tinyrenderer"]),
               "steps_fast": statistics.median(steps[fast])}
        rows.append(row)
        print(f"  {env_id} {fast}: frames/s {row['frames_tiny']:,.0f} -> {row['frames_fast']:,.0f} "
              f"(x{row['frames_fast'] / row['frames_tiny']:.1f}), steps/s {row['steps_tiny']:,.0f} -> "
              f"{row['steps_fast']:,.0f} (x{row['steps_fast'] / row['steps_tiny']:.1f})", flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """:return: the markdown table of :func:`run`'s rows"""
    lines = ["| env | renderer | TinyRenderer frames/s | its frames/s | ratio | its frames/s, sprite layers being made | "
             "env steps/s, TinyRenderer | env steps/s, renderer | ratio |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        cold = "" if row["frames_cold"] is None else f"{row['frames_cold']:,.0f}"
        lines.append(f"| {row['env']} | {row['renderer']} | {row['frames_tiny']:,.0f} | {row['frames_fast']:,.0f} | "
                     f"{row['frames_fast'] / row['frames_tiny']:.1f} | {cold} | "
                     f"{row['steps_tiny']:,.0f} | {row['steps_fast']:,.0f} | "
                     f"{row['steps_fast'] / row['steps_tiny']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: the measured rows
    :raises UsageError: bad input, before any work
    """
    parser = CLIParser(prog="python -m benchmarks.render_speed",
                       description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=positiveInt, default=1000, help="random states per frame measurement [1000]")
    parser.add_argument("--seconds", type=positiveFloat, default=3.0, help="duration of each steps/s measurement [3]")
    parser.add_argument("--repeats", type=positiveInt, default=3, help="measurements per renderer, median kept [3]")
    parser.add_argument("--env", nargs="+", default=[*FAMILY, *KUKA_FAMILY], choices=(*FAMILY, *KUKA_FAMILY),
                        metavar="ENV", help=f"envs to measure, of {', '.join((*FAMILY, *KUKA_FAMILY))} [both "
                        "families: mobile robots, Kuka]")
    addResultsArguments(parser, "the results")
    args = parser.parse_args(argv)
    print(f"Machine: {machineDescription()}")
    # The sprite renderer's disk cache starts empty, so that "cold" is a machine's first run
    with tempfile.TemporaryDirectory() as cache, mock.patch.dict(os.environ, {SPRITE_CACHE_ENV: cache}):
        rows = run(args.env, args.states, args.seconds, args.repeats)
    markdown = table(rows)
    print(markdown)
    if not args.no_append:
        command = recordedCommand("benchmarks.render_speed", argv)
        notes = (f"One process; frames/s: the {SIDE}x{SIDE} observation image of {args.states} random states "
                 f"(mobile robots: robot within its bounds, random targets; Kuka: random arm joint angles and button "
                 f"position), only the image call timed, sprites once their layers are made (the first pass, while "
                 f"they are made, in its own column); env steps/s: raw_pixels {SIDE}x{SIDE}, discrete random "
                 f"actions, reset every {EPISODE_STEPS} steps or at the episode's end, {args.seconds:g} s; each the "
                 f"median of {args.repeats} runs, renderers alternated.")
        appendReport("Renderer speed: sprites (mobile robots), lowpoly (Kuka) / TinyRenderer", command, notes,
                     markdown, path=resultsPath(args))
    return rows


if __name__ == "__main__":
    runCommand(exitStatus(main))
