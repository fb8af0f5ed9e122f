"""PPO steps/s with a trained VAE (state dim 32) in front of the agent, beside raw pixels and ground truth.

On MobileRobotGymEnv-v0 at 64x64, ``rl_baselines.train --algo ppo2`` (default hyperparameters) runs in this process
for each observation mode, each renderer of the images (``--renderer``: TinyRenderer, the reference, and the sprite
renderer, side by side) and each number of parallel envs:

- ``vae``: the env renders 64x64 images, which are encoded where ``rl_baselines.envs.factory.encodeInWorkers``
  says (with 1 env, with the sprites' cheap frames and on a GPU by SRLEncoderVecEnv in this process, in one batch;
  with more envs and TinyRenderer's frames by each env worker for its own env) and PPO's MlpPolicy sees
  the normalised 32-dim states; ``vae_other`` (several envs only): the same with the other placement of the encoder
  (``rl_baselines.envs.factory.encodeInWorkers`` patched to say the opposite: in the workers, or in this process in
  one batch per step), to check that the default placement is the faster one for each renderer; left out where the
  envs themselves step in this process (``--vec-env auto``: the sprites' frames), which leaves no other placement.
  The VAE is trained first, inside the benchmark, on a small generated dataset (a few episodes, a few epochs: the
  speed does not depend on its quality);
- ``raw_pixels``: the same images go to SB3's CnnPolicy with ppo2's default ``--features-extractor`` (MediumCNN) and
  ``--precision`` (float32);
- ``raw_pixels_bfloat16``: the same with ``--precision bfloat16`` (the CNN's layers under bfloat16 autocast, Adam's
  step fused); left out on a CPU without bfloat16 instructions, which would emulate it (``--precision auto`` is
  float32 there; ``benchmarks.pixel_update_speed`` still times its update);
- ``raw_pixels_nature``, ``raw_pixels_small``: the same with ``--features-extractor nature`` (SB3's NatureCNN),
  ``small`` (SmallCNN);
- ``ground_truth``: no rendering, MlpPolicy on the robot position.

Steps/s = env steps / wall time of PPO's ``learn`` (env construction and model loading excluded; rollouts, updates,
callbacks and the train command's checkpoints included). The time is split into the vectorised env's step
(rendering and physics; with subprocesses, the wait for them, their encoding included), the encoder in this
process, and the rest (policy forward passes and PPO updates). The 2-env rates and those of ppo2's default envs are
judged against fixed speed goals (:data:`SPEED_GOALS`, figures of 2 envs), reported beside the ratio to this run's
own TinyRenderer rows, not asserted.

Each run trains with train's default ``--torch-threads`` (auto: one thread for the MLP policies, every usable core of
a lone run for raw pixels' CNN), or with each count of ``--torch-threads N ...`` side by side (the table gives the
count each run trained with); the goals are judged at the default.

Usage: ``python -m benchmarks.srl_speed [--steps N] [--num-cpu 1 2 4] [--renderers R ...] [--episodes E] [--epochs K]
[--torch-threads N ...] [--no-append]``
(also run by ``make bench``).
"""
from __future__ import annotations

import contextlib
import functools
import glob
import io
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

import numpy
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from benchmarks.command import exitStatus
from benchmarks.documents import (
    addResultsArguments,
    appendReport,
    loadNow,
    loadSpanText,
    machineDescription,
    recordedCommand,
    resultsPath,
)
from environments import getEnvClass
from environments.mobile_robot.sprite_cache import CACHE_ENV as SPRITE_CACHE_ENV
from environments.registry import defaultRenderer
from environments.srl_env import REFERENCE_RENDERER
from rl_baselines.core.registry import defaultEnvs
from rl_baselines.envs import factory
from rl_baselines.envs.factory import resolveVecEnv
from rl_baselines.envs.srl_encoder import SRLEncoderVecEnv
from rl_baselines.rl_algorithm.image_features import (
    FEATURES_EXTRACTORS,
    emulatesBFloat16,
    nativeBFloat16,
    resolvedPrecision,
)
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.runs import train, train_checks
from srl_toolbox.cli import CLIParser, positiveInt, runCommand
from srl_toolbox.devices import parseThreads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_ID = "MobileRobotGymEnv-v0"
STATE_DIM = 32
# raw-pixel mode -> its --features-extractor and --precision (raw_pixels: ppo2's defaults, given by no flag)
RAW_PIXEL_MODES = {"raw_pixels": (PPO2Model.DEFAULT_FEATURES_EXTRACTOR, PPO2Model.DEFAULT_PRECISION),
                   "raw_pixels_bfloat16": (PPO2Model.DEFAULT_FEATURES_EXTRACTOR, "bfloat16"),
                   "raw_pixels_nature": ("nature", "float32"), "raw_pixels_small": ("small", "float32")}
MODES = ("vae", "vae_other", *RAW_PIXEL_MODES, "ground_truth")
IMAGE_MODES = ("vae", "vae_other", *RAW_PIXEL_MODES)
LEARNED_MODES = ("vae", "vae_other")
# observation mode -> its train flags (a learned model: --srl-model-path, given by timeRun)
MODE_FLAGS = {**{mode: ("--srl-model", "raw_pixels",
                        *(() if name == PPO2Model.DEFAULT_FEATURES_EXTRACTOR else ("--features-extractor", name)),
                        *(() if precision == PPO2Model.DEFAULT_PRECISION else ("--precision", precision)))
                 for mode, (name, precision) in RAW_PIXEL_MODES.items()},
              "ground_truth": ("--srl-model", "ground_truth")}
# The goals: (mode, baseline steps/s, factor); a goal is met at factor x baseline. The baselines are fixed figures
# (TinyRenderer's rates with GOAL_ENVS envs on a reference machine), so a verdict does not move with this run's rows;
# they are judged at GOAL_ENVS envs and at ppo2's default envs (what a user gets).
SPEED_GOALS = (("vae", 281.0, 4.0), ("raw_pixels", 168.0, 3.0))
GOAL_START = "e6eec80"  # the commit the goals count from: `python benchmarks/srl_speed.py --num-cpu 2` in a worktree of it
GOAL_ENVS = 2


def measuredEnvs() -> list[int]:
    """:return: the envs measured by default: 1, the goals' and ppo2's default"""
    return sorted({1, GOAL_ENVS, defaultEnvs("ppo2")})


def trainVAE(scratch: str, episodes: int, epochs: int, env_id: str = ENV_ID, flags: tuple[str, ...] = ()) -> str:
    """
    Record a small dataset and train a VAE on it, as a user would (two commands).

    :param scratch: a temporary folder
    :param episodes: episodes of the dataset (100 frames each)
    :param epochs: training epochs
    :param env_id: the env
    :param flags: the dataset generator's env flags (e.g. --random-target)
    :return: the model folder
    """
    data = os.path.join(scratch, "data")
    subprocess.run([sys.executable, "-m", "environments.dataset_generator", "--env", env_id, "--num-episode",
                    str(episodes), "--max-steps", "100", "--name", "bench", "--save-path", data, "--seed", "0",
                    "--no-progress", *flags], check=True, capture_output=True, cwd=ROOT)
    log_folder = os.path.join(scratch, "srl")
    subprocess.run([sys.executable, "-m", "srl_models.train", "--data-folder", os.path.join(data, "bench"),
                    "--srl-model", "vae", "--state-dim", str(STATE_DIM), "--epochs", str(epochs), "--batch-size",
                    "32", "--seed", "0", "--log-folder", log_folder, "--no-eval", "--no-progress"],
                   check=True, capture_output=True, cwd=ROOT)
    folders = glob.glob(os.path.join(log_folder, "bench", "*", "exp_config.json"))
    assert len(folders) == 1, folders
    return os.path.dirname(folders[0])


def vaeText(episodes: int, epochs: int, env_id: str = ENV_ID) -> str:
    """
    :param episodes: episodes of :func:`trainVAE`'s dataset
    :param epochs: its training epochs
    :param env_id: the env
    :return: how the VAE was trained, for a report: its frames are drawn by the dataset generator's renderer, the
        env's default (no ``--renderer`` given to it)
    """
    return (f"VAE trained in the benchmark ({episodes} episodes of 100 steps, {epochs} epochs, frames drawn by "
            f"{defaultRenderer(env_id)}, the env's default renderer)")


class Timers:
    """Wall time accumulated by the patched methods, by label."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def wrap(self, owner: type, name: str, label: str) -> Callable[[], None]:
        """
        Time every call of ``owner.name`` under ``label``.

        :param owner: a class
        :param name: one of its methods
        :param label: where the time goes
        :return: a function restoring the original method
        """
        original = getattr(owner, name)

        @functools.wraps(original)  # its signature kept: the train command reads learn's defaults
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - start

        setattr(owner, name, timed)
        return lambda: setattr(owner, name, original)


WARM_UP_STEPS = 20_000


def warmSprites(steps: int = WARM_UP_STEPS) -> tuple[float, int]:
    """
    Fill the sprite renderer's disk cache (``$SRL_TOOLBOX_CACHE``) as a machine's first runs do: a seeded random walk.

    :param steps: env steps
    :return: (seconds, sprites rendered)
    """
    env = getEnvClass(ENV_ID)(srl_model="raw_pixels", renderer="sprites")
    env.reset(seed=0)
    env.action_space.seed(0)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    seconds = time.perf_counter() - start
    env.close()
    files = glob.glob(os.path.join(os.environ[SPRITE_CACHE_ENV], "sprites", "*.npz"))
    return seconds, sum(len(numpy.load(path)["keys"]) for path in files)


def measuredModes(num_cpu: int, pixel_device: str) -> list[str]:
    """
    :param num_cpu: the measurement's parallel envs
    :param pixel_device: the device the raw-pixel runs train on
    :return: the modes measured with that many envs: ``vae_other`` with several only, ``raw_pixels_bfloat16`` only
        where bfloat16 is not emulated (a GPU, or a CPU with bfloat16 instructions)
    """
    emulated = emulatesBFloat16(pixel_device)
    return [mode for mode in MODES if not (mode == "vae_other" and num_cpu == 1)
            and not (mode == "raw_pixels_bfloat16" and emulated)]


def trainArgv(algo: str, mode: str, num_cpu: int, steps: int, log_dir: str, model_folder: str,
              renderer: str = REFERENCE_RENDERER, threads: int = 0) -> list[str]:
    """:return: the train command line of a measured run (the arguments of :func:`timeRun`, the algorithm's name)"""
    argv = ["--algo", algo, "--env", ENV_ID, "--num-timesteps", str(steps), "--num-cpu", str(num_cpu),
            "--log-dir", log_dir, "--no-vis", "--no-progress", "--checkpoint-freq", "-1", "--seed", "0",
            "--renderer", renderer, "--torch-threads", str(threads)]
    return argv + (["--srl-model-path", model_folder] if mode in LEARNED_MODES else list(MODE_FLAGS[mode]))


def timeRun(mode: str, num_cpu: int, steps: int, log_dir: str, model_folder: str,
            renderer: str = REFERENCE_RENDERER, threads: int = 0) -> dict[str, float]:
    """
    :param mode: one of MODES
    :param renderer: what draws the images
    :param threads: the run's ``--torch-threads`` (0: train's default, auto)
    :param num_cpu: parallel envs (subprocesses when > 1)
    :param steps: env steps to train
    :param log_dir: root of the run folder
    :param model_folder: the VAE
    :return: steps/s and seconds per step of env, encoder and the rest, and the torch threads the run trained with
    """
    timers = Timers()
    # The encoder's step_wait calls the raw env's step_wait: env time = raw step_wait, encoder time = encode.
    restore = [timers.wrap(PPO, "learn", "learn"), timers.wrap(DummyVecEnv, "step_wait", "env"),
               timers.wrap(SubprocVecEnv, "step_wait", "env"), timers.wrap(SRLEncoderVecEnv, "encode", "encode")]
    argv = trainArgv("ppo2", mode, num_cpu, steps, log_dir, model_folder, renderer, threads)
    placements = []  # where the run's encoder ran: True in the workers
    default_placement = factory.encodeInWorkers

    def placement(settings: factory.VecEnvSettings, drawn_by: str) -> bool:
        in_workers = default_placement(settings, drawn_by) != (mode == "vae_other")
        placements.append(in_workers)
        return in_workers

    try:
        with contextlib.redirect_stdout(io.StringIO()), \
                mock.patch.object(factory, "encodeInWorkers", placement):  # the run's own messages
            result = train.trainCommand(argv)
        assert result.exit_code == 0
    finally:
        for undo in restore:
            undo()
    learn, steps = timers.seconds["learn"], result.num_timesteps  # the steps trained: whole rollouts
    env, encode = timers.seconds.get("env", 0.0), timers.seconds.get("encode", 0.0)
    return {"rate": steps / learn, "env_ms": 1e3 * env / steps, "encode_ms": 1e3 * encode / steps,
            "rest_ms": 1e3 * (learn - env - encode) / steps, "threads": torch.get_num_threads(),  # as train set it
            "placement": (("in the workers" if placements[-1] else "in this process") if placements else
                          "in this process, the envs too (--vec-env dummy)")}


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: one row per observation, renderer and number of envs
    """
    parser = CLIParser(prog="python -m benchmarks.srl_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=positiveInt, default=4096, help="env steps per measurement [4096]")
    parser.add_argument("--num-cpu", type=positiveInt, nargs="+", default=measuredEnvs(),
                        help=f"parallel envs to measure [{' '.join(map(str, measuredEnvs()))}: 1, the goals' "
                             f"{GOAL_ENVS} and ppo2's default]")
    renderers = getEnvClass(ENV_ID).RENDERERS
    parser.add_argument("--renderers", nargs="+", choices=renderers, default=list(renderers),
                        help=f"renderers to measure side by side [all {ENV_ID}'s: {' '.join(renderers)}]")
    parser.add_argument("--episodes", type=positiveInt, default=6, help="episodes of the VAE's dataset, 100 steps each [6]")
    parser.add_argument("--epochs", type=positiveInt, default=2, help="VAE training epochs [2]")
    parser.add_argument("--torch-threads", type=parseThreads, nargs="+", default=[0], metavar="N",
                        help="train's --torch-threads for each measurement, side by side [0: train's default, auto]")
    addResultsArguments(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the VAE's training (not measured); each measured run sets its own (--torch-threads)
    encoder_device = train_checks.runDeviceFor(PPO2Model, "auto", "vae")  # the run's, where --device auto puts ppo2
    pixel_device = train_checks.runDeviceFor(PPO2Model, "auto", "raw_pixels")  # (where the raw-pixel rows train)
    bfloat16_measured = "raw_pixels_bfloat16" in measuredModes(2, pixel_device)
    print(f"Machine: {machineDescription(('torch', 'stable_baselines3', 'pybullet'))}; encoder on {encoder_device}")
    load_start = loadNow()
    rows = []
    # The sprite renderer's disk cache starts empty here; a random walk fills it as a machine's first runs do.
    with tempfile.TemporaryDirectory() as scratch, mock.patch.dict(os.environ,
                                                                   {SPRITE_CACHE_ENV: os.path.join(scratch, "cache")}):
        warm_up = warmSprites() if "sprites" in args.renderers else None
        if warm_up is not None:
            print(f"sprite cache: {warm_up[1]:,} sprites rendered in {warm_up[0]:.0f} s by {WARM_UP_STEPS:,} random "
                  f"steps from empty", flush=True)
        start = time.perf_counter()
        model_folder = trainVAE(scratch, args.episodes, args.epochs)
        print(f"VAE trained in {time.perf_counter() - start:.0f} s: {model_folder}", flush=True)
        timeRun("ground_truth", 1, 512, os.path.join(scratch, "warmup"), model_folder)  # imports, first calls
        if not bfloat16_measured:
            print("  raw_pixels_bfloat16: not measured, this CPU would emulate bfloat16 (--precision auto is float32 "
                  "here)", flush=True)
        for num_cpu in args.num_cpu:
            for mode in measuredModes(num_cpu, pixel_device):
                for renderer in args.renderers if mode in IMAGE_MODES else [REFERENCE_RENDERER]:
                    if mode == "vae_other" and resolveVecEnv("auto", num_cpu, ENV_ID, renderer, "vae") == "dummy":
                        continue  # the envs step in this process (--vec-env auto): there is no other placement
                    for threads in args.torch_threads:
                        row = {"mode": mode, "num_cpu": num_cpu, "renderer": renderer if mode in IMAGE_MODES else "",
                               "default_threads": threads == 0,
                               **timeRun(mode, num_cpu, args.steps, os.path.join(scratch, "runs"), model_folder,
                                         renderer, threads)}
                        rows.append(row)
                        print(f"  {mode} {row['renderer']}, {num_cpu} env(s), {row['threads']} torch thread(s): "
                              f"{row['rate']:,.0f} steps/s (env {row['env_ms']:.2f} ms, encoder "
                              f"{row['encode_ms']:.2f} ms, rest {row['rest_ms']:.2f} ms per step)", flush=True)
    reference = {(row["mode"], row["num_cpu"], row["threads"]): row["rate"] for row in rows
                 if row["renderer"] == REFERENCE_RENDERER}
    lines = ["| observation | renderer | envs | torch threads | PPO steps/s | vs tinyrenderer | env ms/step | "
             "encoder ms/step | policy + updates ms/step |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        label = f"vae (state dim {STATE_DIM}), MlpPolicy" if row["mode"] in LEARNED_MODES else row["mode"]
        if row["mode"] in LEARNED_MODES and row["num_cpu"] > 1:
            label += f", encoded {row['placement']}" + (" (the default)" if row["mode"] == "vae" else "")
        if row["mode"] in RAW_PIXEL_MODES:
            name, precision = RAW_PIXEL_MODES[row["mode"]]
            computed = resolvedPrecision(precision, pixel_device)
            shown = computed if precision == computed else f"--precision {precision}: {computed}"
            label = f"raw_pixels, CnnPolicy ({FEATURES_EXTRACTORS[name].__name__}, {shown})"
        elif row["mode"] == "ground_truth":
            label = "ground_truth, MlpPolicy"
        base = reference.get((row["mode"], row["num_cpu"], row["threads"])) if row["renderer"] else None
        ratio = f"{row['rate'] / base:.2f}x" if base else ""
        lines.append(f"| {label} | {row['renderer']} | {row['num_cpu']} | {row['threads']} | {row['rate']:,.0f} | "
                     f"{ratio} | "
                     f"{row['env_ms']:.2f} | {row['encode_ms']:.2f} | {row['rest_ms']:.2f} |")
    table = "\n".join(lines)
    goals = goalVerdicts([row for row in rows if row["default_threads"]])
    print(table)
    print(goals)
    if not args.no_append:
        command = recordedCommand("benchmarks.srl_speed", argv)
        appendReport(
            f"PPO with a trained SRL model, {ENV_ID} 64x64", command,
            f"ppo2 default hyperparameters, torch threads as the table says (--torch-threads "
            f"{' '.join(map(str, args.torch_threads))}; 0 is train's default, auto, at which the goals are judged), "
            f"{args.steps} steps per measurement after a warm-up; "
            f"encoder on {encoder_device}; {bfloat16Text()}"
            + ("" if bfloat16_measured else ", so its row is not measured")
            + f"; {vaeText(args.episodes, args.epochs)}. Sprites: the "
            "disk cache of "
            f"the robot's sprites filled first from empty by {WARM_UP_STEPS:,} random steps"
            + ("" if warm_up is None else f" ({warm_up[1]:,} sprites in {warm_up[0]:.0f} s, what a machine's first "
               "sprite runs pay once)") + ". Steps/s over PPO's learn(); "
            "the per-step split is env step (render + physics, or the wait for the subprocesses, which encode their own "
            "images in the rows encoded in the workers), encoder (in this process: one batched getState per step, in "
            f"the rows encoded in this process) and the rest (policy and PPO updates). {goals} Reported, not "
            f"asserted. {loadSpanText(load_start)} ({len(os.sched_getaffinity(0))} cores).",
            table, packages=("torch", "stable_baselines3", "pybullet"), path=resultsPath(args))
    return rows


def bfloat16Text() -> str:
    """:return: whether this CPU computes ``--precision bfloat16`` in hardware, in words"""
    return (f"bfloat16 {'in hardware' if nativeBFloat16() else 'emulated'} on this CPU (--precision bfloat16; "
            f"--precision auto is {resolvedPrecision('auto', 'cpu')} here)")


def goalVerdicts(rows: list[dict[str, Any]]) -> str:
    """
    :param rows: the measured rows (at train's default threads)
    :return: one sentence per goal (:data:`SPEED_GOALS`) and count of envs measured of :data:`GOAL_ENVS` and ppo2's
        default, with this run's own TinyRenderer rows beside them, and where they are judged; then the ceiling:
        ground truth's rate (what PPO's rollouts and updates alone allow) at GOAL_ENVS envs, as a multiple of the
        TinyRenderer VAE rate
    """
    sentences = []
    for num_cpu in sorted({GOAL_ENVS, defaultEnvs("ppo2")}):
        default = " (ppo2's default)" if num_cpu == defaultEnvs("ppo2") else ""
        for mode, baseline, factor in SPEED_GOALS:
            rates = {row["renderer"]: row["rate"] for row in rows if row["mode"] == mode and row["num_cpu"] == num_cpu}
            best = max(rates.items(), key=lambda item: item[1], default=None)
            if best is None:
                continue
            same_run = f", {best[1] / rates[REFERENCE_RENDERER]:.2f}x this run's tinyrenderer" \
                if REFERENCE_RENDERER in rates else ""
            verdict = "met" if best[1] >= factor * baseline else "not met"
            sentences.append(f"Goal {mode}, {num_cpu} envs{default}, >= {factor:g}x {baseline:g} steps/s "
                             f"({GOAL_ENVS} envs' baseline): {verdict} ({best[0]}: {best[1]:,.0f} steps/s, "
                             f"{best[1] / baseline:.2f}x{same_run}).")
    if sentences:
        sentences.append(f"The baselines are one reference machine's figures; machines of this kind differ by up to "
                         f"1.8x, so a goal is judged side by side with {GOAL_START}, the goals' start, on the same "
                         "machine (docs/benchmarks.md).")
    ceiling = next((row["rate"] for row in rows if row["mode"] == "ground_truth" and row["num_cpu"] == GOAL_ENVS), None)
    reference = next((row["rate"] for row in rows if row["mode"] == "vae" and row["num_cpu"] == GOAL_ENVS
                      and row["renderer"] == REFERENCE_RENDERER), None)
    if ceiling is not None and reference:
        sentences.append(f"Ceiling at these hyperparameters: ground truth, {GOAL_ENVS} envs, {ceiling:,.0f} steps/s "
                         f"(no image, no encoder) = {ceiling / reference:.2f}x this run's tinyrenderer vae.")
    return " ".join(sentences)


if __name__ == "__main__":
    runCommand(exitStatus(main))
