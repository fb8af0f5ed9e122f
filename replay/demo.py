"""``python -m replay.demo`` (what ``make demo`` runs): train ppo2 on the mobile robot with ground truth, replay it
into a GIF, and say where the model, the learning curve and the GIF are."""
from __future__ import annotations

import argparse
import glob
import os
import shlex
from collections.abc import Sequence

from replay import enjoy_baselines
from replay.visdom_server import isServerUp
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.runs import train
from srl_toolbox.cli import (
    CLIParser,
    addSeedArgument,
    addVisdomArguments,
    nonEmptyText,
    positiveInt,
    pythonCommand,
    runCommand,
)


def liveCurveHint(args: argparse.Namespace, before: str = "running the demo") -> str:
    """
    :param args: the demo's arguments (--no-vis, --port)
    :param before: what the server must be started before (training looks for it once, at its first episode, and
        goes on without live plots when none answers: a server started later draws nothing)
    :return: how to watch a demo's training curve live; nothing with --no-vis (the run draws none) or when a visdom
        server already answers on --port (training draws there and prints its page, ``Live plots: URL``)
    """
    if args.no_vis or isServerUp(args.port):
        return ""
    return (f" Live curve: training looks for a visdom server once, at its first episode; to watch it, start "
            f"`{pythonCommand()} -m replay.visdom_server --port {args.port}` in another terminal before {before} "
            f"and open http://127.0.0.1:{args.port}")


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments
    :return: exit code
    """
    parser = CLIParser(prog="python -m replay.demo", description="Train a small agent and replay it.")
    parser.add_argument("--log-dir", type=nonEmptyText, default="logs/demo", help="root folder of the demo run [logs/demo]")
    parser.add_argument("--num-timesteps", type=positiveInt, default=60000, help="training steps [60000]")
    addVisdomArguments(parser, port_help="visdom port for the live curve [8097]")
    addSeedArgument(parser, help="random seed [0]")
    args: argparse.Namespace = parser.parse_args(argv)

    env_id, srl_model, algo = "MobileRobotGymEnv-v0", "ground_truth", "ppo2"
    print(f"Training {algo} on {env_id} ({srl_model}) for {args.num_timesteps} steps." + liveCurveHint(args),
          flush=True)
    code = train.main(["--algo", algo, "--env", env_id, "--srl-model", srl_model, "--num-timesteps",
                       str(args.num_timesteps), "--log-dir", args.log_dir, "--port", str(args.port),
                       "--seed", str(args.seed), "--tag", "demo", *(["--no-vis"] if args.no_vis else [])])
    if code:
        return code
    runs = sorted(glob.glob(os.path.join(args.log_dir, env_id, srl_model, algo, "*_demo*")), key=os.path.getmtime)
    run_dir = runs[-1]
    gif = os.path.join(run_dir, "replay.gif")
    print("Replaying the trained agent (deterministic, 2 episodes)...", flush=True)
    code = enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "500", "--deterministic", "--video", gif])
    if code:
        return code
    print("\nDemo finished:")
    print(f"  run folder      {run_dir}")
    print(f"  model           {os.path.join(run_dir, f'{algo}_model.zip')}")
    curve = RunFolder(run_dir).learning_curve_file
    print(f"  learning curve  {curve if os.path.exists(curve) else 'none (no training episode finished)'}")
    print(f"  replay GIF      {gif}")
    print(f"  replay again    {pythonCommand()} -m replay.enjoy_baselines --log-dir {shlex.quote(run_dir)} "
          f"--deterministic")
    return 0


if __name__ == "__main__":
    runCommand(main)
