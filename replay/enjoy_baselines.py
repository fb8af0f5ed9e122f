"""``python -m replay.enjoy_baselines --log-dir RUN``: replay a trained agent from its run folder alone.

The env is rebuilt from args.json (with the normalisation statistics saved beside the model, frozen) and the agent
from ``<algo>_model.*``: the run's latest, ``--model best``'s in ``best/``, or a checkpoint's (``--load-checkpoint
N``: ``checkpoints/<N>_steps/``; ``--load-last-checkpoint``: the newest intact one, checked as ``--resume`` checks
it; a missing or damaged one is refused before anything is written). ``--video`` records a GIF or MP4 of the first
env, each frame captioned with the step and the reward its action earned (VideoRecorder: an MP4 is encoded as it is
played, a GIF is kept palettised in memory until the end). A run that observed a trained SRL model replays with the
same one: the folder and hash recorded in srl_model.json (a changed model is refused). ``--plotting`` draws the
first env's action probabilities and ground-truth trajectory, live in visdom and as PNG in ``--output-dir``
(replay.replay_plots); it is refused up front for a run whose env has no ground truth. ``--render`` needs an env
with a window (``WINDOW``; Omnirobot has none) and a display (DISPLAY set, its X server answering), checked in that
order; without them it stops with a one-line error before the model is loaded, which advises ``--video`` (or, when
--video is given, dropping --render). A Ctrl-C stops the replay: what was played is still reported and written
(video, plots), and the command exits with 130, as train does, so that a script tells a cut replay from a whole one.
The replay prints the model file it plays and which of the run's models it is (``Model: <file>, <which>``).
``--plotting`` draws into the visdom environment ``replay_<the run's own>`` (args.json's ``visdom_env``, so that two
runs of one name replay apart).
A SIGINT stops the replay as a Ctrl-C does, in a process started ignoring it too (``... &`` in a shell script), as
it stops train.
"""
from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

import cv2
import gymnasium as gym
import numpy as np
import torch
from PIL import Image
from stable_baselines3.common.utils import set_random_seed
from tqdm import tqdm

from environments import getEnvClass, groundTruthRefusal, registered_env
from environments.srl_env import displayRefusal
from replay.replay_plots import ACTION_PROBA_PNG, TRAJECTORY_PNG, ReplayPlotting, ReplayVisdom
from rl_baselines.core.base import actionMaskKeywords
from rl_baselines.core.run_folder import BEST_DIR, CHECKPOINTS_DIR, RunFolder
from rl_baselines.runs.loaded_run import LAST_CHECKPOINT, loadRun
from rl_baselines.runs.run_logging import VISDOM_ENV_KEY, tensorboardRunName
from rl_baselines.runs.run_policy import readRunConfig
from rl_baselines.runs.train_config import TrainConfig
from srl_toolbox.cli import (
    DEFAULT_VISDOM_PORT,
    INTERRUPTED_EXIT_CODE,
    MAX_ENVS,
    CLIParser,
    UsageError,
    addProgressArgument,
    addSeedArgument,
    addVisdomArguments,
    checkFolderName,
    checkOutputFile,
    checkWritableFolder,
    envCount,
    nonEmptyText,
    nonNegativeInt,
    positiveInt,
    runCommand,
    zooFlagHints,
)
from srl_toolbox.devices import parseDevice, reuseDevice
from srl_toolbox.files import atomicPath, readJson
from srl_toolbox.signals import ctrlCDeferred, ctrlCTaken
from srl_toolbox.terminal import HeldWarnings

VIDEO_FORMATS = (".gif", ".mp4")
# rl_zoo3's enjoy.py flags that this command does not take, and what to give instead (their refusal says it)
RL_ZOO_FLAGS = {
    ("-f", "--folder", "--exp-id"): "--log-dir RUN (the run's own folder)",
    ("--algo", "--env"): "not needed: the run folder names them (its args.json)",
    ("-n", "--n-timesteps"): "--num-timesteps",
    ("--n-envs",): "--num-cpu",
    ("--load-best",): "--model best",
    ("--no-render",): "not needed: no window opens without --render",
    ("--stochastic",): "not needed: actions are sampled unless --deterministic",
    ("-P", "--progress"): "not needed: the progress bar is on by default (--no-progress hides it)",
    ("--env-kwargs",): "not offered: the env is rebuilt as the run trained on it (args.json)",
}
# A GIF stores each frame's delay in hundredths of a second, and browsers play delays under 2 of them at about 10 fps.
MAX_GIF_FPS = 50
# The most frames per second an .mp4 takes (MPEG-4 Part 2's time base, 1/fps, has a 16-bit denominator: OpenCV's
# writer fails to open above it and writes an empty file)
MAX_MP4_FPS = 65535


def realTimeRate(env: Any, action_repeat: int) -> float:
    """
    :param env: the replay's VecEnv
    :param action_repeat: env steps per agent action (the run's --action-repeat), one frame each
    :return: the frames per second that play the first env in real time: its ``metadata["render_fps"]`` (its step
        rate: 20 when it declares none) over ``action_repeat``, at most :data:`MAX_GIF_FPS`
    """
    metadata = env.get_attr("metadata", indices=0)[0] or {}
    return min(float(MAX_GIF_FPS), float(metadata.get("render_fps") or 20) / max(1, int(action_repeat)))


def buildParser() -> CLIParser:
    """:return: the command's parser"""
    parser = CLIParser(prog="python -m replay.enjoy_baselines", description="Replay a trained agent.")
    parser.addFlagHints(zooFlagHints(RL_ZOO_FLAGS))
    parser.add_argument("--log-dir", type=nonEmptyText, required=True, help="the run folder (holds args.json and the model)")
    parser.add_argument("--num-timesteps", type=positiveInt, default=1000,
                        help="env steps to play, the envs' together, rounded up to a step of every env [1000]")
    addSeedArgument(parser, help="seed of the replay envs (env i gets seed + i) and of the agent's action sampling [0]")
    parser.add_argument("--num-cpu", type=envCount, default=1, help=f"parallel envs, at most {MAX_ENVS} [1]")
    parser.add_argument("--deterministic", action="store_true", help="take the most likely action")
    parser.add_argument("--render", action="store_true",
                        help="open the env's window (needs a display; Omnirobot has none: use --video)")
    parser.add_argument("--video", default=None,
                        help="record the first env to this .gif or .mp4 file, captioned with the step and reward")
    parser.add_argument("--fps", type=positiveInt, default=None,
                        help=f"frames per second of the video, at most {MAX_GIF_FPS} for a .gif and {MAX_MP4_FPS} for an "
                             ".mp4 [real time: the env's "
                             "render_fps over the run's --action-repeat, e.g. 20 for the mobile robots, 10 for the "
                             "Kuka arms]")
    parser.add_argument("--model", choices=["latest", "best"], default=None,
                        help="which saved model to play [latest]")
    checkpoint = parser.add_mutually_exclusive_group()
    checkpoint.add_argument("--load-checkpoint", type=nonNegativeInt, default=None, metavar="N",
                            help="play the checkpoint saved at step N (checkpoints/<N>_steps/: its model and "
                                 "normalisation statistics) instead of --model's")
    checkpoint.add_argument("--load-last-checkpoint", action="store_true",
                            help="play the newest intact checkpoint (damaged newer ones are skipped, as --resume does)")
    parser.add_argument("--srl-model-path", default=None, metavar="FOLDER",
                        help="the run's trained SRL model, moved since training (its files must hash the same) "
                             "[the folder recorded in srl_model.json]")
    parser.add_argument("--plotting", action="store_true",
                        help="plot the first env's action probabilities and ground-truth trajectory, live in visdom "
                             "and as PNG at the end")
    parser.add_argument("--output-dir", type=nonEmptyText, default=None, metavar="FOLDER",
                        help="where --plotting writes its PNGs [<log-dir>/replay]")
    addVisdomArguments(parser, no_vis=False, port_help="the visdom server's port [8097]")
    parser.add_argument("--device", type=parseDevice, default=None, metavar="DEVICE",
                        help="torch device of the agent: auto, cpu, cuda or cuda:N [the run's when this machine has "
                             "it, else auto]")
    parser.add_argument("--no-vis", action="store_true", help="--plotting writes the PNGs only, no live plots")
    addProgressArgument(parser)
    return parser


def checkpointArguments(args: argparse.Namespace) -> tuple[int | str | None, str | None]:
    """
    :param args: the parsed arguments
    :return: (the checkpoint to play: a step count, ``"last"`` or None for --model's; the flag that chose it, with
        its value, for the messages)
    :raises UsageError: a checkpoint flag with --model (both choose the model)
    """
    if args.load_checkpoint is not None:
        checkpoint, flag = args.load_checkpoint, f"--load-checkpoint {args.load_checkpoint}"
    elif args.load_last_checkpoint:
        checkpoint, flag = LAST_CHECKPOINT, "--load-last-checkpoint"
    else:
        return None, None
    if args.model is not None:
        raise UsageError(f"{flag.split()[0]} and --model {args.model} both choose the model to play: give one of them")
    return checkpoint, flag


def loadRunArgs(run_dir: str) -> TrainConfig:
    """
    :param run_dir: a run folder written by rl_baselines.train
    :return: the run's settings
    :raises UsageError: the folder holds no run
    """
    try:  # (readRunConfig is shared with the dataset generator's --policy)
        return readRunConfig(run_dir, "--log-dir", insideRunFlag)
    except ValueError as error:
        raise UsageError(str(error)) from None


def insideRunFlag(below: str) -> str:
    """
    :param below: the path of a folder inside a run, relative to the run (run_folder.enclosingRun)
    :return: the flag that plays what that folder holds, with a leading space: ``checkpoints/<N>_steps``:
        ``--load-checkpoint N``, ``checkpoints``: ``--load-last-checkpoint``, ``best``: ``--model best``; empty for
        any other folder
    """
    parts = below.split("/")
    if parts[0] == CHECKPOINTS_DIR:
        steps = parts[1].removesuffix("_steps") if len(parts) >= 2 else ""
        return f" --load-checkpoint {steps}" if steps.isdigit() else " --load-last-checkpoint"
    return " --model best" if parts == [BEST_DIR] else ""


def renderRefusal(env_id: str, video: str | None = None) -> str | None:
    """
    :param env_id: the run's env
    :param video: the --video file given, None for none
    :return: why ``--render`` cannot open the env's window here, None when it can: the env has none (checked first,
        as a display would not help), or no display is set, or its X server does not answer
        (``environments.srl_env.displayRefusal``); an env not installed is left to loadRun to report. The advice is to
        record a video instead, or, when ``video`` is given, to drop --render (the video needs no window)
    """
    try:
        window = getEnvClass(env_id).WINDOW
    except KeyError:
        window = True
    advice = (f"drop --render: --video {video} records the replay without a window" if video is not None
              else "use --video out.gif instead")
    if not window:
        return f"--render opens the env's window, and {env_id} has none (it draws its images without one): {advice}"
    no_display = displayRefusal()
    if no_display is not None:
        return f"--render opens the env's window and needs a display, but {no_display} ({advice})"
    return None


class VideoRecorder:
    """
    Record RGB frames, one per step, to a .gif (Pillow) or .mp4 (OpenCV, MPEG-4 Part 2 'mp4v'), atomically: the file
    is written beside the destination under a temporary name (srl_toolbox.files.atomicPath) and moved into place by
    ``finish``; ``discard`` (or leaving the ``with`` block without ``finish``) removes it, so that a failed replay
    leaves neither a temporary nor a half-written file. An MP4 is encoded frame by frame as they come (memory flat in
    the number of steps); a GIF, which Pillow writes in one go, keeps each frame palettised (about a third of its RGB
    size, the same conversion Pillow makes when it saves) until ``finish``.
    """

    def __init__(self, path: str, fps: float) -> None:
        """
        :param path: destination, .gif or .mp4
        :param fps: frames per second
        """
        self.path, self.fps = path, fps
        self.frame_count = 0
        self._is_gif = path.lower().endswith(".gif")
        # whether ``finish`` encodes the file (a GIF), rather than moving into place what was encoded while playing
        self.encodes_at_finish = self._is_gif
        self._gif_frames: list[Image.Image] = []
        self._writer: cv2.VideoWriter | None = None
        self._stack = ExitStack()  # holds atomicPath from the first frame to finish or discard
        self._tmp_path: str | None = None

    def __enter__(self) -> VideoRecorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.discard()

    def add(self, frame: np.ndarray) -> None:
        """
        :param frame: (H, W, 3) uint8 image, the same size for every frame
        """
        if self._is_gif:
            self._gif_frames.append(Image.fromarray(frame).convert("P", palette=Image.Palette.ADAPTIVE))
        else:
            if self._writer is None:
                self._tmp_path = self._stack.enter_context(atomicPath(self.path))
                height, width = frame.shape[:2]
                self._writer = cv2.VideoWriter(self._tmp_path, cv2.VideoWriter_fourcc(*"mp4v"), self.fps,
                                               (width, height))
                if not self._writer.isOpened():  # (it would write nothing, and an empty file would replace the path)
                    raise RuntimeError(f"OpenCV could not open an MPEG-4 writer for {self.path} at {self.fps} frames "
                                       f"per second and {width}x{height}")
            self._writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        self.frame_count += 1

    def finish(self) -> str | None:
        """
        Write what was recorded and move it into place.

        :return: the path written, None when no frame was recorded (nothing is written)
        """
        if self.frame_count == 0:
            return None
        if self._is_gif:
            with atomicPath(self.path) as tmp_path:
                images, self._gif_frames = self._gif_frames, []
                images[0].save(tmp_path, format="GIF", save_all=True, append_images=images[1:],
                               duration=int(1000 / self.fps), loop=0)
        else:
            assert self._writer is not None
            self._writer.release()
            self._writer = None
            self._stack.close()  # atomicPath renames the temporary file onto the destination
        return self.path

    def discard(self) -> None:
        """Drop what was recorded: the frames kept and the MP4's temporary file (a no-op after ``finish``)."""
        self._gif_frames = []
        if self._writer is not None:
            self._writer.release()
            self._writer = None
            self._stack.__exit__(RuntimeError, RuntimeError("video discarded"), None)  # atomicPath removes the file
            self._stack = ExitStack()


def captionFrame(frame: np.ndarray, lines: Sequence[str], min_width: int = 256) -> np.ndarray:
    """
    Put a caption under a video frame: a black band with white text, below the image (never over it). Small frames
    are first enlarged (nearest neighbour, whole factor) so that the text stays readable.

    :param frame: (H, W, 3) uint8 image
    :param lines: the caption, one string per line
    :param min_width: frames narrower than this are enlarged to at least this width
    :return: the captioned frame, (H' + band, W', 3) uint8
    """

    factor = -(-min_width // frame.shape[1])  # ceiling division
    if factor > 1:
        frame = np.repeat(np.repeat(frame, factor, axis=0), factor, axis=1)
    width = frame.shape[1]
    font, thickness = cv2.FONT_HERSHEY_SIMPLEX, 1
    widest = max(cv2.getTextSize(line, font, 1.0, thickness)[0][0] for line in lines)
    scale = min(0.6, 0.94 * width / max(widest, 1))  # the longest line fits the frame's width
    line_height = int(np.ceil(cv2.getTextSize("Ag", font, scale, thickness)[0][1] * 1.9))
    band = np.zeros((line_height * len(lines) + 4, width, 3), dtype=np.uint8)
    for index, line in enumerate(lines):
        cv2.putText(band, line, (int(0.03 * width), line_height * (index + 1) - line_height // 4), font, scale,
                    (255, 255, 255), thickness, cv2.LINE_AA)
    return np.concatenate((np.ascontiguousarray(frame, dtype=np.uint8), band), axis=0)


def episodeLine(episode_rewards: list[float]) -> str:
    """
    :param episode_rewards: the rewards of the episodes finished so far, the newest last
    :return: the line said as an episode ends: its number and reward and, from the second on, the mean so far (the
        first one's mean is its reward: said once)
    """
    count = len(episode_rewards)
    line = f"Episode {count}: reward {episode_rewards[-1]:.2f}"
    return line if count == 1 else f"{line}, mean of {count}: {float(np.mean(episode_rewards)):.2f}"


def noEpisodeLine(steps: int, running: np.ndarray) -> str:
    """
    :param steps: the env steps played, of all envs together
    :param running: each env's reward so far in its unfinished episode
    :return: the line of a replay in which no episode finished: the steps, and the reward so far of the one env or,
        with several, the mean of theirs, said as such (with the steps of each)
    """
    if len(running) == 1:
        return f"No episode finished in {steps} steps; reward so far: {float(running[0]):.2f}"
    return (f"No episode finished in {steps} steps ({len(running)} envs, {steps // len(running)} steps each); mean "
            f"reward so far per env: {float(np.mean(running)):.2f}")


def replayVisdomEnv(run_dir: str, train_args: TrainConfig) -> str:
    """
    :param run_dir: the run folder
    :param train_args: the run's settings
    :return: the visdom environment of the run's replay plots: ``replay_`` and the run's own visdom environment, as
        its args.json records it (``<name>_2``, ... where another run held ``<name>`` when it started drawing), else
        (its plotter never reached a server, or a run recorded before the key) its name,
        ``<env>_<srl-model>_<algo>_<run folder name>``
    """
    try:
        recorded = readJson(RunFolder(run_dir).args_file).get(VISDOM_ENV_KEY)
    except (OSError, ValueError, AttributeError):
        recorded = None
    if not isinstance(recorded, str) or not recorded:
        recorded = tensorboardRunName(train_args.env, train_args.srl_model, train_args.algo, run_dir)
    return f"replay_{recorded}"


def makePlotting(args: argparse.Namespace, train_args: TrainConfig, agent: Any, env: Any,
                 output_dir: str) -> Any:
    """
    :param args: the replay's arguments (port, no_vis)
    :param train_args: the run's settings
    :param agent: the loaded agent
    :param env: the replay VecEnv
    :param output_dir: folder of the PNGs
    :return: a replay.replay_plots.ReplayPlotting for the first env, live in the visdom environment
        ``replay_<the run's visdom environment>`` (:func:`replayVisdomEnv`) unless ``--no-vis``, its axes in the env
        class's GROUND_TRUTH_UNIT and its actions named by the first env's ``actionNames()``
    """
    title = f"{train_args.algo} {train_args.env} {train_args.srl_model}"
    visdom = None
    if not args.no_vis:
        visdom = ReplayVisdom(args.port, replayVisdomEnv(args.log_dir, train_args), title=title, announce=True)
    env_class = getEnvClass(train_args.env)
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    return ReplayPlotting(agent, train_args.algo, env_class.PLOT_TYPE, discrete, output_dir, title, visdom,
                          unit=env_class.GROUND_TRUTH_UNIT,
                          action_names=env.env_method("actionNames", indices=0)[0],
                          target_line_axis=getattr(env_class, "TARGET_LINE_AXIS", None),
                          view=getattr(env_class, "GROUND_TRUTH_VIEW", None))


def checkedReplay(args: argparse.Namespace) -> tuple[TrainConfig, Any, Any, str]:
    """
    The command's checks, up to the run's agent and env (torch's threads and the seeds set for the replay).

    :param args: the parsed command line
    :return: the run's train settings (with the device used), the loaded run, its env (close it) and the folder of
        --plotting's PNGs
    :raises UsageError: bad input (one line)
    :warns: a run the env cannot rebuild exactly (another physics version), a learned state handed unscaled,
        visdom flags without --plotting, --fps without --video
    """
    if args.video is not None and not args.video.lower().endswith(VIDEO_FORMATS):
        raise UsageError(f"--video {args.video!r}: the file must end in .gif or .mp4")
    if args.video is not None and args.video.lower().endswith(".gif") and (args.fps or 0) > MAX_GIF_FPS:
        raise UsageError(f"--fps {args.fps}: a .gif plays at most {MAX_GIF_FPS} frames per second (browsers slow "
                         f"faster ones to about 10); give 1..{MAX_GIF_FPS}, or record an .mp4")
    if args.video is not None and args.video.lower().endswith(".mp4") and (args.fps or 0) > MAX_MP4_FPS:
        raise UsageError(f"--fps {args.fps}: an .mp4 (MPEG-4 Part 2) plays at most {MAX_MP4_FPS} frames per second; "
                         f"give 1..{MAX_MP4_FPS}")
    checkpoint, checkpoint_flag = checkpointArguments(args)
    if args.output_dir is not None and not args.plotting:
        raise UsageError(f"--output-dir {args.output_dir!r} is where --plotting writes its PNGs: add --plotting")
    if not args.plotting and (args.no_vis or args.port != DEFAULT_VISDOM_PORT):
        warnings.warn("--port and --no-vis choose where --plotting draws its live plots; without --plotting nothing "
                      "is drawn")
    if args.fps is not None and args.video is None:
        warnings.warn(f"--fps {args.fps} is the frame rate of the --video recording; without --video nothing is "
                      "recorded")
    run_dir = args.log_dir
    train_args = loadRunArgs(run_dir)
    if args.plotting and train_args.env in registered_env:  # (an env not installed: loadRun below says so)
        refusal = groundTruthRefusal(train_args.env, "--plotting draws (the trajectory): replay without --plotting",
                                     others=False)
        if refusal is not None:
            raise UsageError(f"the run's env {refusal}")
    refusal = renderRefusal(train_args.env, args.video) if args.render else None
    if refusal:
        raise UsageError(refusal)
    try:
        device, device_note = reuseDevice(train_args.device, args.device)
    except ValueError as error:
        raise UsageError(str(error)) from None
    train_args = train_args.replace(device=device)
    if device_note:
        print(f"Device: {device_note}")
    output_dir = args.output_dir or os.path.join(run_dir, "replay")
    if args.plotting:
        checkFolderName(output_dir, "--output-dir",
                        f"--plotting writes its PNGs in it ({ACTION_PROBA_PNG}, {TRAJECTORY_PNG})")
        checkWritableFolder(output_dir, "--output-dir")
    if args.video:
        checkOutputFile(args.video, "--video")

    torch.set_num_threads(1)
    set_random_seed(args.seed)  # Python, NumPy and torch: the agent's sampled actions repeat with the seed

    try:
        run = loadRun(run_dir, args.model or "latest", args.srl_model_path, train_args=train_args,
                      checkpoint=checkpoint, checkpoint_flag=checkpoint_flag)
    except ValueError as error:  # not installed, model missing or corrupt, no such checkpoint or a damaged one, SRL
        raise UsageError(str(error)) from None  # model missing or changed
    print(f"Model: {run.modelNote()}")
    agent = run.model
    agent.seedActionSampling(args.seed)  # an agent that samples with a generator of its own (deepq, the ES)
    env_kwargs = {}
    if args.render:
        env_kwargs["renders"] = True
    if args.video:
        env_kwargs["render_mode"] = "rgb_array"
    try:
        env = run.makeEnv(args.num_cpu, args.seed, env_kwargs)
    except ValueError as error:  # the SRL model cannot be loaded, or the saved normalisation does not fit
        raise UsageError(str(error)) from None
    return train_args, run, env, output_dir


def main(argv: Sequence[str] | None = None) -> int:
    """
    Replay, stopped by a SIGINT even in a process started ignoring it (``enjoy_baselines ... &`` in a shell script),
    as train is (srl_toolbox.signals.ctrlCTaken).

    :param argv: command-line arguments
    :return: exit code (130 when a Ctrl-C or SIGINT cut the replay short)
    :raises UsageError: bad input (one line), before any warning of the checks is shown (they are once the checks
        pass)
    """
    with ctrlCTaken():
        return play(argv)


def play(argv: Sequence[str] | None = None) -> int:
    """:func:`main`, with SIGINT's handler as the process has it."""
    with HeldWarnings():
        args = buildParser().parse_args(argv)
        train_args, run, env, output_dir = checkedReplay(args)
    agent = run.model

    plotting = makePlotting(args, train_args, agent, env, output_dir) if args.plotting else None
    episode_rewards: list[float] = []
    running = np.zeros(env.num_envs)
    observation = env.reset()
    dones = np.ones(env.num_envs, dtype=bool)  # every env starts an episode (recurrent agents reset their state)
    steps = episode = episode_step = 0  # episode, episode_step: the first env's, for the video caption
    bar = tqdm(total=args.num_timesteps, unit="step", desc="replay", disable=args.no_progress, dynamic_ncols=True)
    interrupted = False
    video = VideoRecorder(args.video, args.fps or realTimeRate(env, train_args.action_repeat)) if args.video else None
    try:
        while steps < args.num_timesteps:
            frame = env.env_method("render", indices=0)[0] if args.video else None
            if plotting is not None:
                plotting.beforeStep(env, observation, dones)
            kwargs = {"deterministic": True} if args.deterministic else {}
            action = agent.getAction(observation, dones, **kwargs, **actionMaskKeywords(agent, env))
            observation, rewards, dones, _ = env.step(action)
            with ctrlCDeferred():  # a step played is counted whole: its frame, its plots' rows, its episode ends
                running += rewards
                steps += env.num_envs
                bar.update(min(env.num_envs, args.num_timesteps - bar.n))
                if video is not None:  # the frame the agent acted on, with what that action earned
                    video.add(captionFrame(frame, [f"step {episode_step} (episode {episode + 1})",
                                                   f"reward {rewards[0]:+.2f}  return {running[0]:+.2f}"]))
                episode, episode_step = (episode + 1, 0) if dones[0] else (episode, episode_step + 1)
                if plotting is not None:
                    plotting.afterStep(action, rewards, dones)
                for index in np.flatnonzero(dones):
                    episode_rewards.append(float(running[index]))
                    running[index] = 0.0
                    bar.write(episodeLine(episode_rewards))
    except KeyboardInterrupt:  # e.g. watching with --render: keep what was played
        bar.write(f"Interrupted after {steps} steps")
        interrupted = True
    except BaseException:  # an error: no video, not even a temporary file
        if video is not None:
            video.discard()
        raise
    bar.close()
    env.close()
    if episode_rewards:
        print(f"Mean episode reward over {len(episode_rewards)} episode{'' if len(episode_rewards) == 1 else 's'}: "
              f"{np.mean(episode_rewards):.2f}")
    else:
        print(noEpisodeLine(steps, running))
    if video is not None and video.frame_count:
        if video.encodes_at_finish:  # (an MP4 is already written: finish only moves it into place)
            print(f"Writing the video ({video.frame_count} frames)...", flush=True)
        with video:
            print(f"Video written: {video.finish()} ({video.frame_count} frames)")
    if plotting is not None:
        for path in plotting.save():
            print(f"Plot: {path}")
    return INTERRUPTED_EXIT_CODE if interrupted else 0


if __name__ == "__main__":
    runCommand(main)
