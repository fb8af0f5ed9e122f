"""Speed of the Kuka envs (the whole family by default) under their reference and default physics, and beside a bare
PyBullet loop doing the same work.

For each observation mode the env runs discrete random actions (resetting when an episode ends) under the reference
physics (physics version 1: 150 solver iterations, PyBullet's residual threshold) and under the default one
(KukaButtonGymEnv.SOLVER), and a bare loop on its own PyBullet client, with the same scene and the default physics,
does only what one env step needs from PyBullet: read the effector, inverse kinematics toward it plus the move, 7
motor commands, PHYSICS_STEPS_PER_ACTION physics steps, the two contact queries of the reward and, for pixel modes,
getCameraImage with the same matrices, renderer and flags. The table gives both env rates and their ratio (what the
default physics gains), and the ratio default env / bare: how much the env's Python adds on top of the unavoidable
PyBullet work (the bare loop never resets, which the env does at the end of each episode). Each measurement runs for
``--seconds`` and the median of 3 repetitions (reference, default and bare interleaved) is kept.

Usage: ``python -m benchmarks.kuka_speed [--seconds S] [--env ID ...] [--no-append]``; appends a section to
docs/benchmarks.md unless ``--no-append``.
"""
from __future__ import annotations

import os
import statistics
from typing import Any

import numpy as np

from benchmarks.command import exitStatus
from benchmarks.env_family import familyBenchmarkMain
from benchmarks.env_speed import timedLoop
from environments import getEnvClass
from environments.bullet import pybullet
from environments.kuka.kuka_button_env import KukaButtonGymEnv
from srl_toolbox.cli import runCommand

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (label, srl_model, image side)
MODES = (("ground_truth", "ground_truth", 64), ("raw_pixels 64x64", "raw_pixels", 64),
         ("raw_pixels 224x224", "raw_pixels", 224))
FAMILY = ("KukaButtonGymEnv-v0", "KukaRandButtonGymEnv-v0", "Kuka2ButtonGymEnv-v0", "KukaMovingButtonGymEnv-v0")
N_REPETITIONS = 3
N_ACTIONS = 100_000  # pre-drawn, reused cyclically, so that drawing them is not timed
CHUNK = 10  # steps between clock reads


def benchEnv(env_class: type, srl_model: str, side: int, seconds: float, actions: list[int],
             physics: str = "default") -> float:
    """
    :param env_class: the env to measure
    :param srl_model: observation mode
    :param side: image side for pixel modes
    :param seconds: how long to run
    :param actions: discrete actions to play (cyclically)
    :param physics: the env's physics ("default" or "reference")
    :return: env steps per second, resets included
    """
    env = env_class(srl_model=srl_model, img_shape=(3, side, side), seed=0, physics=physics)
    env.reset()
    n_actions = len(actions)
    env_step, env_reset = env.step, env.reset

    def step(i: int) -> None:
        _, _, terminated, truncated, _ = env_step(actions[i % n_actions])
        if terminated or truncated:
            env_reset()

    try:
        timedLoop(step, min(0.2, seconds), CHUNK)  # warm-up
        return timedLoop(step, seconds, CHUNK)
    finally:
        env.close()


def benchBare(env_class: type, srl_model: str, side: int, seconds: float, actions: list[int]) -> float:
    """
    The same PyBullet work as one env step, with no env around it, on the env's own scene (built and reset by
    constructing the env, then left alone: its distractors and buttons are simulated by the same physics steps).

    :param env_class: the env whose scene is used

    :param srl_model: observation mode
    :param side: image side for pixel modes
    :param seconds: how long to run
    :param actions: discrete actions to play (cyclically)
    :return: steps per second
    """
    cls = env_class
    scene = env_class(srl_model="ground_truth", seed=0)
    scene.reset(seed=0)
    try:
        client, robot, table, button = scene._p._client, scene._robot_uid, scene._table_uid, scene._button_uids[0]
        view = pybullet.computeViewMatrixFromYawPitchRoll(
            cameraTargetPosition=list(cls.CAMERA_TARGET_POS), distance=cls.CAMERA_DISTANCE, yaw=cls.CAMERA_YAW,
            pitch=cls.CAMERA_PITCH, roll=cls.CAMERA_ROLL, upAxisIndex=2)
        projection = pybullet.computeProjectionMatrixFOV(
            fov=cls.CAMERA_FOV, aspect=1.0, nearVal=cls.CAMERA_NEAR, farVal=cls.CAMERA_FAR)
        orientation = pybullet.getQuaternionFromEuler(list(cls.EFFECTOR_EULER))
        damping = [cls.IK_JOINT_DAMPING] * sum(
            pybullet.getJointInfo(robot, j, physicsClientId=client)[2] != pybullet.JOINT_FIXED
            for j in range(pybullet.getNumJoints(robot, physicsClientId=client)))
        low = np.array([b[0] for b in cls.EFFECTOR_BOUNDS])
        high = np.array([b[1] for b in cls.EFFECTOR_BOUNDS])
        moves = np.array([[-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]]) * cls.DELTA_V
        n_actions = len(actions)
        pixels = srl_model != "ground_truth"

        def step(i: int) -> None:
            effector = np.array(pybullet.getLinkState(robot, cls.EFFECTOR_LINK, physicsClientId=client)[4])
            target = np.clip(effector + moves[actions[i % n_actions]], low, high)
            joints = pybullet.calculateInverseKinematics(robot, cls.EFFECTOR_LINK, target.tolist(), orientation,
                                                         jointDamping=damping, physicsClientId=client)
            for joint in range(cls.N_ARM_JOINTS):
                pybullet.setJointMotorControl2(robot, joint, pybullet.POSITION_CONTROL, targetPosition=joints[joint],
                                               targetVelocity=0.0, force=cls.MOTOR_FORCE,
                                               maxVelocity=cls.MOTOR_MAX_VELOCITY, positionGain=cls.POSITION_GAIN,
                                               velocityGain=cls.VELOCITY_GAIN, physicsClientId=client)
            for _ in range(cls.PHYSICS_STEPS_PER_ACTION):
                pybullet.stepSimulation(physicsClientId=client)
            pybullet.getContactPoints(bodyA=robot, bodyB=button, linkIndexB=0, physicsClientId=client)
            pybullet.getContactPoints(bodyA=robot, bodyB=table, physicsClientId=client)
            if pixels:
                pybullet.getCameraImage(side, side, view, projection, renderer=pybullet.ER_TINY_RENDERER,
                                        flags=pybullet.ER_NO_SEGMENTATION_MASK, physicsClientId=client)

        timedLoop(step, min(0.2, seconds), CHUNK)
        return timedLoop(step, seconds, CHUNK)
    finally:
        scene.close()


def run(seconds: float, env_ids: list[str] = FAMILY) -> list[dict[str, Any]]:
    """
    :param seconds: duration of each measurement
    :param env_ids: envs of the Kuka family to measure
    :return: one row per env and mode: mode, reference, env (default physics), bare (steps/s), speedup (env /
        reference), ratio (env / bare)
    """
    actions = np.random.default_rng(0).integers(0, 6, N_ACTIONS).tolist()
    rows = []
    for env_id in env_ids:
        env_class = getEnvClass(env_id)
        for label, srl_model, side in MODES:
            rates: dict[str, list[float]] = {"reference": [], "env": [], "bare": []}
            for _ in range(N_REPETITIONS):
                rates["reference"].append(benchEnv(env_class, srl_model, side, seconds, actions, "reference"))
                rates["env"].append(benchEnv(env_class, srl_model, side, seconds, actions, "default"))
                rates["bare"].append(benchBare(env_class, srl_model, side, seconds, actions))
            row: dict[str, Any] = {"mode": f"{env_id} {label}",
                                   **{name: statistics.median(values) for name, values in rates.items()}}
            row["speedup"], row["ratio"] = row["env"] / row["reference"], row["env"] / row["bare"]
            rows.append(row)
            print(f"  {row['mode']}: reference {row['reference']:,.0f} steps/s, default {row['env']:,.0f} steps/s "
                  f"(x{row['speedup']:.2f}), bare {row['bare']:,.0f} steps/s", flush=True)
    return rows


def physicsTable(rows: list[dict[str, Any]]) -> str:
    """
    :param rows: as returned by :func:`run`
    :return: a markdown table
    """
    lines = ["| mode | reference physics steps/s | default physics steps/s | default / reference | "
             "bare PyBullet steps/s | ratio default/bare |", "|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['mode']} | {row['reference']:,.0f} | {row['env']:,.0f} | {row['speedup']:.2f} | "
                     f"{row['bare']:,.0f} | {row['ratio']:.2f} |")
    return "\n".join(lines)


def reportNotes(seconds: float) -> str:
    """:param seconds: duration of each measurement
    :return: how the figures were measured, for docs/benchmarks.md"""
    iterations, residual = KukaButtonGymEnv.SOLVER["default"]
    reference_iterations, reference_residual = KukaButtonGymEnv.SOLVER["reference"]
    return (f"One process; discrete random actions, reset at the end of each episode; median of "
            f"{N_REPETITIONS} runs of {seconds:g} s each (reference, default and bare interleaved); one env step = "
            f"{KukaButtonGymEnv.PHYSICS_STEPS_PER_ACTION} physics steps of 1/240 s. Reference physics (version 1): "
            f"at most {reference_iterations} solver iterations, residual threshold {reference_residual:g}; default "
            f"(version {KukaButtonGymEnv.PHYSICS_VERSION}): {iterations}, {residual:g}. Bare = a PyBullet loop "
            f"on the env's own scene (default physics) doing one step's PyBullet calls (link state, IK, 7 motor "
            f"commands, physics, 2 contact queries; + getCameraImage, same matrices, TinyRenderer, for pixels).")


def main(argv: list[str] | None = None) -> list[dict[str, float | str]]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: the measured rows
    """
    return familyBenchmarkMain(argv, "benchmarks.kuka_speed", "Environment speed, Kuka family", FAMILY, run,
                               reportNotes, physicsTable, description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    runCommand(exitStatus(main))
