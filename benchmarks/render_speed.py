"""Renderer speed: the mobile robots' sprite renderer beside PyBullet's TinyRenderer, in one run on one machine.

Two measures per env of the mobile-robot family, each renderer on the same work:

- frames/s of the top-down 64x64 image on the same random states (robot anywhere within its bounds, targets drawn
  by ``random_target``), only the image call timed: TinyRenderer, and the sprite renderer once its layers are made
  (a second pass over the states) and while it makes them (the first pass: "cold");
- env steps/s with pixel observations (``raw_pixels``, 64x64): discrete random actions, a reset every 250 steps.

The renderers are measured alternately, ``--repeats`` times each, and the median is kept, so that machine noise hits
both alike. Usage: ``python -m benchmarks.render_speed [--states N] [--seconds S] [--no-append]``; appends a
section to docs/benchmarks.md unless ``--no-append``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

from benchmarks.documents import BENCH_FILE, appendReport, machineDescription
from benchmarks.env_speed import FAMILY, timedLoop
from environments import getEnvClass

RENDERERS = ("tinyrenderer", "sprites")
SIDE = 64
EPISODE_STEPS = 250
N_ACTIONS = 100_000  # pre-drawn, reused cyclically


def _randomStates(env_class: type, count: int) -> list[tuple[int, float, float]]:
    """:return: (reset seed, robot x, robot y) of ``count`` random states, the same for both renderers"""
    rng = np.random.default_rng(0)
    return [(seed, float(rng.uniform(*env_class.ROBOT_X_BOUNDS)), float(rng.uniform(*env_class.ROBOT_Y_BOUNDS)))
            for seed in range(count)]


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
    :param env_id: a mobile-robot env
    :param renderer: the renderer to measure
    :param seconds: how long to run
    :param actions: discrete actions to play (cyclically)
    :return: env steps/s with 64x64 pixel observations, resets included
    """
    env = getEnvClass(env_id)(srl_model="raw_pixels", img_shape=(3, SIDE, SIDE), renderer=renderer, seed=0)
    env.reset(seed=0)
    actions = [action % env.action_space.n for action in actions]
    n_actions, env_step, env_reset = len(actions), env.step, env.reset

    def step(i: int) -> None:
        if env_step(actions[i % n_actions])[3]:
            env_reset()

    try:
        timedLoop(step, min(0.5, seconds), 10)  # warm-up (the sprite layers of the first states)
        return timedLoop(step, seconds, 10)
    finally:
        env.close()


def run(env_ids: list[str], n_states: int, seconds: float, repeats: int) -> list[dict[str, Any]]:
    """
    :param env_ids: envs of the mobile-robot family
    :param n_states: random states per frame measurement
    :param seconds: duration of each steps/s measurement
    :param repeats: measurements per renderer (the median is kept)
    :return: one row per env: frames/s (tinyrenderer, sprites, sprites cold), steps/s (tinyrenderer, sprites)
    """
    actions = np.random.default_rng(0).integers(0, 4, N_ACTIONS).tolist()
    rows = []
    for env_id in env_ids:
        states = _randomStates(getEnvClass(env_id), n_states)
        frames: dict[str, list[tuple[float, float]]] = {name: [] for name in RENDERERS}
        steps: dict[str, list[float]] = {name: [] for name in RENDERERS}
        for _ in range(repeats):
            for name in RENDERERS:
                frames[name].append(frameRates(env_id, name, states))
                steps[name].append(stepRate(env_id, name, seconds, actions))
        row = {"env": env_id,
               "frames_tiny": statistics.median(warm for _, warm in frames["tinyrenderer"]),
               "frames_sprites": statistics.median(warm for _, warm in frames["sprites"]),
               "frames_cold": statistics.median(cold for cold, _ in frames["sprites"]),
               "steps_tiny": statistics.median(steps["tinyrenderer"]),
               "steps_sprites": statistics.median(steps["sprites"])}
        rows.append(row)
        print(f"  {env_id}: frames/s {row['frames_tiny']:,.0f} -> {row['frames_sprites']:,.0f} "
              f"(x{row['frames_sprites'] / row['frames_tiny']:.1f}), steps/s {row['steps_tiny']:,.0f} -> "
              f"{row['steps_sprites']:,.0f} (x{row['steps_sprites'] / row['steps_tiny']:.1f})", flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """:return: the markdown table of :func:`run`'s rows"""
    lines = ["| env | TinyRenderer frames/s | sprites frames/s | ratio | sprites frames/s, layers being made | "
             "env steps/s, TinyRenderer | env steps/s, sprites | ratio |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['env']} | {row['frames_tiny']:,.0f} | {row['frames_sprites']:,.0f} | "
                     f"{row['frames_sprites'] / row['frames_tiny']:.1f} | {row['frames_cold']:,.0f} | "
                     f"{row['steps_tiny']:,.0f} | {row['steps_sprites']:,.0f} | "
                     f"{row['steps_sprites'] / row['steps_tiny']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: the measured rows
    """
    parser = argparse.ArgumentParser(description="Renderer speed, mobile-robot family: sprites / TinyRenderer")
    parser.add_argument("--states", type=int, default=1000, help="random states per frame measurement [1000]")
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each steps/s measurement [3]")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per renderer, median kept [3]")
    parser.add_argument("--env", nargs="+", default=list(FAMILY), help="envs to measure [the whole family]")
    parser.add_argument("--no-append", action="store_true", help="do not append the results to docs/benchmarks.md")
    args = parser.parse_args(argv)
    print(f"Machine: {machineDescription()}")
    rows = run(args.env, args.states, args.seconds, args.repeats)
    markdown = table(rows)
    print(markdown)
    if not args.no_append:
        command = " ".join(["python -m benchmarks.render_speed", *(sys.argv[1:] if argv is None else argv)])
        notes = (f"One process; frames/s: the {SIDE}x{SIDE} top view of {args.states} random states (robot within "
                 f"its bounds, random targets), only the image call timed, sprites once their layers are made (the "
                 f"first pass, while they are made, in its own column); env steps/s: raw_pixels {SIDE}x{SIDE}, "
                 f"discrete random actions, reset every {EPISODE_STEPS} steps, {args.seconds:g} s; each the median "
                 f"of {args.repeats} runs, renderers alternated.")
        appendReport("Renderer speed, mobile-robot family: sprites / TinyRenderer", command, notes, markdown)
        print(f"appended to {os.path.relpath(BENCH_FILE)}")
    return rows


if __name__ == "__main__":
    main()
