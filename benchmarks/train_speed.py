"""Train-loop speed and sample efficiency of ppo2 on MobileRobotGymEnv-v0 with ground truth.

1. Overhead: ``rl_baselines.train`` (monitor files, progress callback, checkpoints, final save) beside plain
   Stable-Baselines3 PPO doing the same learning (same env, Monitor, VecNormalize, hyperparameters, seed, final save),
   both in this process, alternated, median of ``--repeats``. The figure is time(train) / time(plain SB3).
2. Sample efficiency: env steps until the mean reward of the last 100 episodes first reaches 150, for several seeds.

Usage: ``python -m benchmarks.train_speed [--steps N] [--repeats R] [--learning-budget N] [--seeds S ...]
[--no-append]`` (also run by ``make bench``).
"""
from __future__ import annotations

import contextlib
import glob
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from benchmarks.documents import addResultsArguments, appendReport, recordedCommand, resultsPath
from benchmarks.progress import Countdown
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from replay.results import episodeWindowStepsToThreshold
from rl_baselines.core.hyperparams import plainValues
from rl_baselines.core.run_folder import MONITOR_DIR
from rl_baselines.core.training_state import silentLogger
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.runs import train
from rl_baselines.runs.monitor_files import loadEpisodes
from srl_toolbox.cli import CLIParser, UsageError, positiveInt, runCommand, seedNumber

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_ID = "MobileRobotGymEnv-v0"
TARGET_REWARD = 150.0
WINDOW = 100


def timeToolbox(steps: int, log_dir: str) -> tuple[float, int]:
    """:return: seconds for ``rl_baselines.train`` to train ppo2 for ``steps`` (in this process), and the steps it
    trained (whole rollouts: ``steps`` rounded up to a multiple of n_steps)"""
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the run's own messages (its run folder, twice)
        result = train.trainCommand(["--algo", "ppo2", "--env", ENV_ID, "--srl-model", "ground_truth",
                                     "--num-timesteps", str(steps), "--log-dir", log_dir, "--no-vis", "--no-progress",
                                     "--torch-threads", "1"])
    assert result.exit_code == 0
    return time.perf_counter() - start, result.num_timesteps


def timePlainSB3(steps: int, log_dir: str) -> float:
    """:return: seconds for plain SB3 PPO with the same env, wrappers and hyperparameters (it trains as many steps as
    the toolbox: whole rollouts of the same n_steps)"""
    start = time.perf_counter()
    env = DummyVecEnv([lambda: Monitor(MobileRobotGymEnv(srl_model="ground_truth"), os.path.join(log_dir, "0"))])
    env = VecNormalize(env, norm_obs=True, norm_reward=False)
    model = PPO("MlpPolicy", env, seed=0, device="cpu", verbose=0, **plainValues(PPO2Model.DEFAULT_HYPERPARAMS))
    model.set_logger(silentLogger())  # what verbose=0 records into, without SB3's empty folder
    model.learn(total_timesteps=steps)
    model.save(os.path.join(log_dir, "ppo_model.zip"))
    env.close()
    return time.perf_counter() - start


def stepsToTarget(seed: int, budget: int, log_dir: str) -> tuple[int | None, float]:
    """
    :return: (env steps when the 100-episode mean reward first reached 150, or None; final 100-episode mean)
    """
    subprocess.run([sys.executable, "-m", "rl_baselines.train", "--algo", "ppo2", "--env", ENV_ID, "--srl-model",
                    "ground_truth", "--num-timesteps", str(budget), "--log-dir", log_dir, "--seed", str(seed),
                    "--no-vis", "--no-progress"], check=True, capture_output=True, cwd=ROOT)
    episodes = loadEpisodes(glob.glob(os.path.join(log_dir, ENV_ID, "ground_truth", "ppo2", "*", MONITOR_DIR))[0])
    rewards, timesteps = episodes["rewards"], episodes["timesteps"]
    return (episodeWindowStepsToThreshold(timesteps, rewards, TARGET_REWARD, WINDOW),
            float(rewards[-WINDOW:].mean()))


def main(argv: list[str] | None = None) -> None:
    """:param argv: command-line arguments; :raises UsageError: bad input, before any work"""
    parser = CLIParser(prog="python -m benchmarks.train_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=positiveInt, default=20000, help="training steps per overhead measurement "
                        "[20000]")
    parser.add_argument("--repeats", type=positiveInt, default=3, help="alternated repetitions (median kept) [3]")
    parser.add_argument("--learning-budget", type=positiveInt, default=100000,
                        help="steps per sample-efficiency run [100000]")
    parser.add_argument("--seeds", type=seedNumber, nargs="+", default=[0, 1, 2],
                        help="seeds of the sample-efficiency runs [0 1 2]")
    addResultsArguments(parser)
    args = parser.parse_args(argv)
    if args.learning_budget < MobileRobotGymEnv.MAX_STEPS:
        raise UsageError(f"--learning-budget {args.learning_budget}: below one episode; a sample-efficiency run needs "
                         f"at least {MobileRobotGymEnv.MAX_STEPS} steps")
    torch.set_num_threads(1)  # plain SB3's, as the train runs timed beside it (--torch-threads 1)
    toolbox, plain = [], []
    with tempfile.TemporaryDirectory() as scratch:
        timeToolbox(2000, os.path.join(scratch, "warmup"))  # imports and first-call costs out of the figures
        # the time left counts env steps: a repeat trains 2 x --steps, a sample-efficiency run --learning-budget
        countdown = Countdown(args.repeats + len(args.seeds),
                              args.repeats * 2 * args.steps + len(args.seeds) * args.learning_budget)
        for repeat in range(args.repeats):
            plain.append(timePlainSB3(args.steps, os.path.join(scratch, f"plain{repeat}")))
            seconds, trained = timeToolbox(args.steps, os.path.join(scratch, f"toolbox{repeat}"))
            toolbox.append(seconds)
            print(f"{countdown.tick(2 * args.steps)} repeat {repeat}: toolbox {toolbox[-1]:.2f} s, plain SB3 "
                  f"{plain[-1]:.2f} s", flush=True)
        results = {}
        for seed in args.seeds:
            results[seed] = stepsToTarget(seed, args.learning_budget, os.path.join(scratch, f"learn{seed}"))
            reached_at = results[seed][0]
            print(f"{countdown.tick(args.learning_budget)} seed {seed}: steps to mean reward {TARGET_REWARD:g}: "
                  + (f"{reached_at}" if reached_at is not None else f"not reached in {args.learning_budget} steps"),
                  flush=True)
    t_toolbox, t_plain = statistics.median(toolbox), statistics.median(plain)
    reached = [steps for steps, _ in results.values() if steps is not None]
    table = "\n".join([
        "| measure | value |", "|---|---:|",
        f"| rl_baselines.train ppo2, steps/s | {trained / t_toolbox:,.0f} |",
        f"| plain SB3 PPO, steps/s | {trained / t_plain:,.0f} |",
        f"| overhead time(train) / time(plain SB3) | {t_toolbox / t_plain:.3f} |",
        *[f"| seed {seed}: steps to 100-episode mean reward {TARGET_REWARD:g} (final mean) | "
          f"{steps if steps is not None else f'not within {args.learning_budget}'} ({final:.0f}) |"
          for seed, (steps, final) in results.items()],
        f"| median steps to {TARGET_REWARD:g} over seeds that reached it | "
        f"{int(np.median(reached)) if reached else 'n/a'} ({len(reached)}/{len(results)} seeds) |",
    ])
    print(table)
    if not args.no_append:
        command = recordedCommand("benchmarks.train_speed", argv)
        appendReport("Train loop, ppo2 on MobileRobotGymEnv-v0 (ground truth)", command,
                     f"One env, one torch thread; {trained} steps per timing (--steps {args.steps} in whole "
                     f"rollouts), median of {args.repeats} alternated repetitions after a warm-up; sample efficiency "
                     f"with the default ppo2 hyperparameters, budget "
                     f"{args.learning_budget} steps.", table, packages=("torch", "stable_baselines3", "pybullet"),
                     path=resultsPath(args))


if __name__ == "__main__":
    runCommand(main)
