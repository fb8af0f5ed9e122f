"""``python -m replay.enjoy_baselines --log-dir RUN``: replay a trained agent from its run folder alone.

The env is rebuilt from args.json (with the normalisation statistics saved beside the model, frozen) and the agent
from ``<algo>_model.*``; ``--video`` records a GIF or MP4 of the first env.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

import numpy as np

from rl_baselines.cli import CLIParser, UsageError, positiveInt, runCommand

VIDEO_FORMATS = (".gif", ".mp4")


def buildParser() -> CLIParser:
    """:return: the command's parser"""
    parser = CLIParser(prog="python -m replay.enjoy_baselines", description="Replay a trained agent.")
    parser.add_argument("--log-dir", required=True, help="the run folder (holds args.json and the model)")
    parser.add_argument("--num-timesteps", type=positiveInt, default=1000, help="env steps to play [1000]")
    parser.add_argument("--seed", type=int, default=0, help="seed of the replay envs [0]")
    parser.add_argument("--num-cpu", type=positiveInt, default=1, help="parallel envs [1]")
    parser.add_argument("--deterministic", action="store_true", help="take the most likely action")
    parser.add_argument("--render", action="store_true", help="open the PyBullet window (needs a display)")
    parser.add_argument("--video", default=None, help="record the first env to this .gif or .mp4 file")
    parser.add_argument("--fps", type=positiveInt, default=20, help="frames per second of the video [20]")
    parser.add_argument("--model", choices=["latest", "best"], default="latest",
                        help="which saved model to play [latest]")
    return parser


def loadRunArgs(run_dir: str) -> argparse.Namespace:
    """
    :param run_dir: a run folder written by rl_baselines.train
    :return: the run's arguments
    :raises UsageError: the folder holds no run
    """
    from rl_baselines.files import readJson

    args_path = os.path.join(run_dir, "args.json")
    if not os.path.isdir(run_dir):
        raise UsageError(f"--log-dir {run_dir!r} is not a folder")
    if not os.path.isfile(args_path):
        raise UsageError(f"--log-dir {run_dir!r} holds no run (no args.json); pass a folder written by "
                         f"rl_baselines.train")
    try:
        return argparse.Namespace(**readJson(args_path))
    except (ValueError, TypeError) as error:
        raise UsageError(f"{args_path} is not a valid args.json ({error})") from None


def writeVideo(frames: list[np.ndarray], path: str, fps: int) -> str:
    """
    Write RGB frames as a GIF (Pillow) or MP4 (OpenCV), atomically.

    :param frames: (H, W, 3) uint8 images
    :param path: destination, .gif or .mp4
    :param fps: frames per second
    :return: the path written
    """
    from rl_baselines.files import atomicPath

    with atomicPath(path) as tmp_path:
        if path.lower().endswith(".gif"):
            from PIL import Image

            images = [Image.fromarray(frame) for frame in frames]
            images[0].save(tmp_path, format="GIF", save_all=True, append_images=images[1:],
                           duration=int(1000 / fps), loop=0)
        else:
            import cv2

            height, width = frames[0].shape[:2]
            writer = cv2.VideoWriter(tmp_path, cv2.VideoWriter_fourcc(*"mp4v"), fps, (width, height))
            for frame in frames:
                writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
            writer.release()
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments
    :return: exit code
    """
    args = buildParser().parse_args(argv)
    if args.video is not None and not args.video.lower().endswith(VIDEO_FORMATS):
        raise UsageError(f"--video {args.video!r}: the file must end in .gif or .mp4")
    if args.render and not os.environ.get("DISPLAY"):
        raise UsageError("--render opens the PyBullet window and needs a display, but DISPLAY is not set "
                         "(use --video out.gif instead)")
    run_dir = args.log_dir
    train_args = loadRunArgs(run_dir)

    import torch

    torch.set_num_threads(1)
    from environments import registered_env
    from rl_baselines.registry import registered_rl
    from rl_baselines.utils import envKwargsFromArgs

    algo_name = getattr(train_args, "algo", None)
    if algo_name not in registered_rl:
        raise UsageError(f"the run in {run_dir!r} used algorithm {algo_name!r}, which is not installed; "
                         f"installed: {', '.join(registered_rl)}")
    if train_args.env not in registered_env:
        raise UsageError(f"the run in {run_dir!r} used env {train_args.env!r}, which is not installed")
    algo_class = registered_rl[algo_name][0]
    model_folder = run_dir if args.model == "latest" else os.path.join(run_dir, "best")
    model_path = os.path.join(model_folder, f"{algo_name}_model{algo_class.MODEL_EXTENSION}")
    if not os.path.isfile(model_path):
        raise UsageError(f"--log-dir {run_dir!r} holds no {args.model} model ({model_path} is missing)")
    try:
        agent = algo_class.load(model_path, train_args)
    except ValueError as error:
        raise UsageError(str(error)) from None

    replay_args = argparse.Namespace(**{**vars(train_args), "seed": args.seed, "num_cpu": args.num_cpu})
    env_kwargs = envKwargsFromArgs(train_args)
    if args.render:
        env_kwargs["renders"] = True
    if args.video:
        env_kwargs["render_mode"] = "rgb_array"
    env = algo_class.makeEnv(replay_args, env_kwargs, load_path_normalise=model_folder)

    frames: list[np.ndarray] = []
    episode_rewards: list[float] = []
    running = np.zeros(env.num_envs)
    observation = env.reset()
    dones = np.zeros(env.num_envs, dtype=bool)
    steps = 0
    while steps < args.num_timesteps:
        if args.video:
            frames.append(env.env_method("render", indices=0)[0])
        kwargs = {"deterministic": True} if args.deterministic else {}
        action = agent.getAction(observation, dones, **kwargs)
        observation, rewards, dones, _ = env.step(action)
        running += rewards
        steps += env.num_envs
        for index in np.flatnonzero(dones):
            episode_rewards.append(float(running[index]))
            running[index] = 0.0
            print(f"{len(episode_rewards)} episodes - mean reward: {np.mean(episode_rewards):.2f}")
    env.close()
    if episode_rewards:
        print(f"Mean episode reward over {len(episode_rewards)} episodes: {np.mean(episode_rewards):.2f}")
    else:
        print(f"No episode finished in {steps} steps; reward so far: {float(np.mean(running)):.2f}")
    if args.video:
        print(f"Video: {writeVideo(frames, args.video, args.fps)}")
    return 0


if __name__ == "__main__":
    runCommand(main)
