"""``python -m replay.srl_demo`` (what ``make srl-demo`` runs): a learned representation under an agent, end to end.

Records a MobileRobot dataset, trains and evaluates an SRL model on it (``srl_models.prepare``, registered in a config
file inside the demo folder, so that the user's own SRL config is left alone), trains ppo2 on its states,
replays the agent into a GIF, compares its mean episode reward with a random agent's, and prints where every file
is: the model folder with its latent-space pictures (learned states coloured by the robot's position relative to
the target, nearest neighbours in the learned space, reconstructions and a grid of decoded latent states, each
with what it shows), the run folder, its learning curve and the GIF. A second call reuses the dataset and the model.

The model is ``srl_combination`` (reconstruction, inverse dynamics and reward, its decoder weighing the robot's pixels):
of the learned representations of the SRL + RL benchmark on this task it is the one ppo2 learns from on every seed, as
from the true state (docs/srl.md); with seed 0 the VAE's agent, for one, never reaches the target.
"""
from __future__ import annotations

import argparse
import glob
import os
import shlex
from collections.abc import Sequence

import numpy as np

from environments import getEnvClass
from replay import enjoy_baselines
from replay.demo import liveCurveHint
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.runs import train
from srl_models import explore_latent, prepare
from srl_toolbox.cli import (
    CLIParser,
    UsageError,
    addSeedArgument,
    addVisdomArguments,
    nonEmptyText,
    positiveInt,
    pythonCommand,
    runCommand,
)

ENV_ID = "MobileRobotGymEnv-v0"
SRL_MODEL = "srl_combination"  # (the module docstring says why)
RANDOM_EPISODES = 10


def randomMeanReward(env_id: str, episodes: int, seed: int) -> float:
    """
    :param env_id: the env
    :param episodes: episodes played with uniformly random actions
    :param seed: seed of the env and of the actions
    :return: their mean episode reward (the baseline the agent must beat)
    """

    env = getEnvClass(env_id)(srl_model="ground_truth")
    env.action_space.seed(seed)
    returns = []
    try:
        for episode in range(episodes):
            env.reset(seed=seed + episode)
            total, done = 0.0, False
            while not done:
                _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    return float(np.mean(returns))


# The srl_models.prepare flags the demo gives itself (its next steps train on that model, env and config file)
DEMO_PREPARE_FLAGS = ("--env", "--srl-model", "--seed", "--data-folder", "--log-folder", "--srl-config-file")


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments
    :return: exit code
    """
    parser = CLIParser(prog="python -m replay.srl_demo",
                       description=f"Dataset -> {SRL_MODEL} -> ppo2 on its states -> replay GIF and latent-space "
                                   "plots.")
    parser.add_argument("--log-dir", type=nonEmptyText, default="logs/srl_demo",
                        help="root folder of everything the demo writes [logs/srl_demo]")
    parser.add_argument("--num-timesteps", type=positiveInt, default=36000, help="ppo2 training steps [36000]")
    addVisdomArguments(parser, port_help="visdom port for the live curve [8097]")
    addSeedArgument(parser, help="random seed [0]")
    parser.add_argument("--prepare-args", nargs=argparse.REMAINDER, default=[],
                        help="further srl_models.prepare flags (e.g. --episodes 2 --epochs 1), last on the line")
    args: argparse.Namespace = parser.parse_args(argv)
    for word in args.prepare_args:  # (the next steps use the model, the env and the config file the demo chose)
        flag = word.split("=")[0]
        if flag.startswith("--") and len(flag) > 2 and any(own.startswith(flag) for own in DEMO_PREPARE_FLAGS):
            raise UsageError(f"--prepare-args {word}: the demo sets {', '.join(DEMO_PREPARE_FLAGS)} itself; give "
                             f"others (e.g. --episodes 2 --epochs 1)")

    config_file = os.path.join(args.log_dir, "srl_models.yaml")
    prepare_argv = ["--env", ENV_ID, "--srl-model", SRL_MODEL, "--seed", str(args.seed), "--data-folder",
                    os.path.join(args.log_dir, "data"), "--log-folder", os.path.join(args.log_dir, "srl"),
                    "--srl-config-file", config_file, *args.prepare_args]
    prepare.checkCommand(prepare_argv)  # a bad --prepare-args is refused before the first line
    # the hint comes first: the server must be up when step 2's training ends its first episode
    print(f"Step 1/3: dataset and {SRL_MODEL} model for {ENV_ID} (srl_models.prepare)."
          + liveCurveHint(args, before="step 2 (ppo2) begins"), flush=True)
    rows = prepare.prepare(prepare_argv)
    model_folder = rows[0]["folder"]
    latent_grid = os.path.join(model_folder, "latent_grid_0_1.png")

    explore_latent.main(["--model-folder", model_folder, "--output", latent_grid, "--no-progress"])

    print(f"\nStep 2/3: ppo2 on the {SRL_MODEL} model's states for {args.num_timesteps} steps.", flush=True)
    code = train.main(["--algo", "ppo2", "--env", ENV_ID, "--srl-model", SRL_MODEL, "--srl-config-file", config_file,
                       "--num-timesteps", str(args.num_timesteps), "--log-dir", args.log_dir, "--port",
                       str(args.port), "--seed", str(args.seed), "--tag", "srl_demo",
                       *(["--no-vis"] if args.no_vis else [])])
    if code:
        return code
    runs = sorted(glob.glob(os.path.join(args.log_dir, ENV_ID, SRL_MODEL, "ppo2", "*_srl_demo*")),
                  key=os.path.getmtime)
    run_dir = runs[-1]
    gif = os.path.join(run_dir, "replay.gif")
    print("\nStep 3/3: replaying the trained agent (deterministic, 2 episodes)...", flush=True)
    code = enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "500", "--deterministic", "--video", gif])
    if code:
        return code
    random_reward = randomMeanReward(ENV_ID, RANDOM_EPISODES, args.seed)
    print(f"Random actions, {RANDOM_EPISODES} episodes: mean episode reward {random_reward:.2f} (compare with the "
          f"replay's mean above)")
    print("\nSRL demo finished:")
    print(f"  model folder      {model_folder}")
    print(f"  GTC, KNN-MSE      {rows[0]['gtc']:.3f}, {rows[0]['knn_mse']:.4g}")
    print(f"  latent space      {os.path.join(model_folder, 'states_by_ground_truth.png')} (learned states coloured "
          f"by the robot's position relative to the target)")
    print(f"  nearest states    {os.path.join(model_folder, 'knn_neighbours.png')} (frames whose learned states "
          f"are nearest one another: the robot at nearby places)")
    # what a user sees in the decoder's pictures, said where they are named (docs/srl.md, "Small robots in a
    # large scene"): a plain pixel error leaves the robot out of the drawing, not out of the state
    print(f"  reconstructions   {os.path.join(model_folder, 'reconstructions.png')} (expect the room and the "
          f"target sharp and the robot a blurred blotch near where it is: about 9 of 4,096 pixels at 64x64, it is "
          f"drawn at all because the model's reconstruction error weighs its pixels 30 times, --foreground-weight; "
          f"its position is in the state, as the two pictures above show)")
    print(f"  decoded latents   {latent_grid} (drawn by the same decoder)")
    print(f"  run folder        {run_dir}")
    curve = RunFolder(run_dir).learning_curve_file
    print(f"  learning curve    {curve if os.path.exists(curve) else 'none (no training episode finished)'}")
    print(f"  replay GIF        {gif}")
    print(f"  replay again      {pythonCommand()} -m replay.enjoy_baselines --log-dir {shlex.quote(run_dir)} "
          f"--deterministic")
    return 0


if __name__ == "__main__":
    runCommand(main)
