"""Environment speed: the mobile-robot envs' steps/s next to a bare PyBullet loop doing the same simulation work.

For each observation mode the env runs discrete random actions (with a reset every 250 steps, as in training),
drawing with PyBullet's TinyRenderer (``renderer="tinyrenderer"``, whatever its default renderer), and a
bare loop on the env's own PyBullet client and scene (the env is built, then left alone) does only what the mode
needs from PyBullet: teleport the robot and, for pixel modes, getCameraImage with the same matrices, renderer and
flags. The ratio env / bare is the figure of merit: how much the env's Python adds on top of the unavoidable PyBullet
work. Each measurement runs for ``--seconds`` and the median of 3 repetitions (env and bare interleaved) is kept.

Usage: ``python -m benchmarks.env_speed [--seconds S] [--no-append]`` (also run by ``make bench``); appends a
section to docs/benchmarks.md unless ``--no-append``.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np

from benchmarks.command import exitStatus
from benchmarks.env_family import compareFamily, familyBenchmarkMain
from environments.bullet import pybullet
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from environments.srl_env import REFERENCE_RENDERER
from srl_toolbox.cli import runCommand

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (label, srl_model, image side)
MODES = (("ground_truth", "ground_truth", 64), ("raw_pixels 64x64", "raw_pixels", 64),
         ("raw_pixels 224x224", "raw_pixels", 224))
EPISODE_STEPS = MobileRobotGymEnv.MAX_STEPS
N_REPETITIONS = 3
FAMILY = ("MobileRobotGymEnv-v0", "MobileRobot1DGymEnv-v0", "MobileRobot2TargetGymEnv-v0",
          "MobileRobotLineTargetGymEnv-v0")
N_ACTIONS = 100_000  # pre-drawn, reused cyclically, so that drawing them is not timed


def timedLoop(step: Callable[[int], None], seconds: float, chunk: int) -> float:
    """
    Call ``step(i)`` for i = 0, 1, ... for about ``seconds``, reading the clock every ``chunk`` calls.

    :param step: one unit of work, given its index
    :param seconds: how long to run
    :param chunk: calls between clock reads (keeps the clock out of fast loops)
    :return: calls per second
    """
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for i in range(count, count + chunk):
            step(i)
        count += chunk
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start)


def tinyRendererKeywords(env_class: type) -> dict[str, str]:
    """
    :param env_class: an env class
    :return: its constructor's keywords that make it draw with TinyRenderer, as the bare loop photographs:
        ``renderer="tinyrenderer"`` for an env that takes the keyword, none for one that draws its own images
    """
    return {"renderer": REFERENCE_RENDERER} if REFERENCE_RENDERER in getattr(env_class, "RENDERERS", ()) else {}


def benchEnv(env_class: type, srl_model: str, side: int, seconds: float, actions: list[int]) -> float:
    """
    :param env_class: the env to measure
    :param srl_model: observation mode
    :param side: image side for pixel modes
    :param seconds: how long to run
    :param actions: discrete actions to play (cyclically)
    :return: env steps per second, resets included (the env draws with TinyRenderer, as the bare loop)
    """
    env = env_class(srl_model=srl_model, img_shape=(3, side, side), seed=0, **tinyRendererKeywords(env_class))
    env.reset()
    actions = [action % env.action_space.n for action in actions]  # the 1-D robot has 2 actions
    n_actions = len(actions)
    env_step, env_reset = env.step, env.reset

    def step(i: int) -> None:
        if env_step(actions[i % n_actions])[3]:
            env_reset()

    try:
        timedLoop(step, min(0.2, seconds), _chunk(srl_model))  # warm-up
        return timedLoop(step, seconds, _chunk(srl_model))
    finally:
        env.close()


def benchBare(env_class: type, srl_model: str, side: int, seconds: float, actions: list[int]) -> float:
    """
    The same PyBullet work as the env, with no env around it: on the env's own scene (built by constructing it, then
    left alone), a random walk precomputed from the same actions (bumps and resets included), each position
    teleported and, for pixel modes, photographed.

    :param env_class: the env whose scene is used
    :param srl_model: observation mode
    :param side: image side for pixel modes
    :param seconds: how long to run
    :param actions: discrete actions to play (cyclically)
    :return: steps per second
    """
    scene = env_class(srl_model="ground_truth", seed=0)
    scene.reset(seed=0)
    try:
        client, robot, view, cls = scene._p._client, scene._robot_uid, scene._view_matrix, env_class
        projection = pybullet.computeProjectionMatrixFOV(
            fov=cls.CAMERA_FOV, aspect=1.0, nearVal=cls.CAMERA_NEAR, farVal=cls.CAMERA_FAR)
        positions = _randomWalk(actions)
        n_positions = len(positions)
        teleport, camera = pybullet.resetBasePositionAndOrientation, pybullet.getCameraImage
        orientation = (0.0, 0.0, 0.0, 1.0)
        renderer, flags = pybullet.ER_TINY_RENDERER, pybullet.ER_NO_SEGMENTATION_MASK

        if srl_model == "ground_truth":
            def step(i: int) -> None:
                teleport(robot, positions[i % n_positions], orientation, physicsClientId=client)
        else:
            def step(i: int) -> None:
                teleport(robot, positions[i % n_positions], orientation, physicsClientId=client)
                camera(side, side, view, projection, renderer=renderer, flags=flags, physicsClientId=client)

        timedLoop(step, min(0.2, seconds), _chunk(srl_model))
        return timedLoop(step, seconds, _chunk(srl_model))
    finally:
        scene.close()


def _chunk(srl_model: str) -> int:
    return 1000 if srl_model == "ground_truth" else 5


def _randomWalk(actions: list[int]) -> list[tuple[float, float, float]]:
    """The robot positions the env goes through for these actions (start redrawn every EPISODE_STEPS steps)."""
    cls = MobileRobotGymEnv
    rng = np.random.default_rng(0)
    moves = ((-cls.STEP_SIZE, 0.0), (cls.STEP_SIZE, 0.0), (0.0, -cls.STEP_SIZE), (0.0, cls.STEP_SIZE))
    (x_low, x_high), (y_low, y_high) = cls.ROBOT_X_BOUNDS, cls.ROBOT_Y_BOUNDS
    positions, x, y = [], 0.0, 0.0
    for i, action in enumerate(actions):
        if i % EPISODE_STEPS == 0:
            x, y = cls.START_CENTER + rng.uniform(-cls.START_HALF_RANGE, cls.START_HALF_RANGE, size=2)
        new_x, new_y = x + moves[action][0], y + moves[action][1]
        if x_low <= new_x <= x_high and y_low <= new_y <= y_high:
            x, y = new_x, new_y
        positions.append((float(x), float(y), 0.0))
    return positions


def run(seconds: float, env_ids: list[str] = FAMILY) -> list[dict[str, float | str]]:
    """
    :param seconds: duration of each measurement
    :param env_ids: envs of the mobile-robot family to measure
    :return: one row per env and mode: mode, env (steps/s), bare (steps/s), ratio
    """
    actions = np.random.default_rng(0).integers(0, 4, N_ACTIONS).tolist()
    return compareFamily(env_ids, MODES, benchEnv, benchBare, seconds, N_REPETITIONS, actions)


def reportNotes(seconds: float) -> str:
    """:param seconds: duration of each measurement
    :return: how the figures were measured, for docs/benchmarks.md"""
    return (f"One process; discrete random actions, reset every {EPISODE_STEPS} steps; median of "
            f"{N_REPETITIONS} runs of {seconds:g} s each; the env draws its images with TinyRenderer "
            f"(renderer=\"tinyrenderer\", not its default). Bare = a PyBullet loop on the env's own scene doing "
            f"only the teleport (+ getCameraImage, same matrices, TinyRenderer, for pixels).")


def main(argv: list[str] | None = None) -> list[dict[str, float | str]]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: the measured rows
    """
    return familyBenchmarkMain(argv, "benchmarks.env_speed", "Environment speed, mobile-robot family", FAMILY, run,
                               reportNotes, description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    runCommand(exitStatus(main))
