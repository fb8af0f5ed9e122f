"""ppo2's update from raw pixels on the CPU: what one sample costs in an epoch of minibatches, and the ceiling that
puts on ppo2's steps/s, per features extractor, minibatch size, torch threads and precision.

The policy is SB3's ``ActorCriticCnnPolicy`` as ppo2 builds it from raw pixels (3 x size x size images, the features
extractor of ``--features-extractor`` with its heads, computing in ``--precision``:
``rl_baselines.rl_algorithm.image_features``), for MobileRobot's 4 discrete actions, with random weights. A minibatch
step is what SB3's ``PPO.train`` does for each minibatch, at ppo2's raw-pixel hyperparameters
(``PPO2Model.HYPERPARAMS``, the pixel defaults included): ``evaluate_actions`` on images of 0-255 (the policy scales
them), the advantages normalised over the minibatch, the clipped surrogate, the clipped value loss and the entropy
bonus, ``backward``, the gradient clipped at ``max_grad_norm``, Adam's step. Images, actions, advantages, returns and
old log-probabilities are random: the time does not depend on them.

Variants, each timed over ``--steps`` minibatch steps after a warm-up, alternated over ``--repeats`` rounds (median
kept): each extractor of ``--extractors`` at each minibatch size of ``--batch-sizes`` and each torch thread count of
``--threads``, in float32; then ppo2's default extractor (:data:`DEFAULT_EXTRACTOR`, MediumCNN) at its minibatch size
with ``--precision bfloat16`` (its layers under bfloat16 autocast; weights, heads, losses and Adam in float32, Adam's
step fused), at each thread count. Two threads or more are used two ways: torch's own (each operation split across
them) and ppo2's shards (``rl_baselines.rl_algorithm.sharded_features``: each minibatch's CNN in a shard per thread,
one torch thread each, Adam's step fused), which is what ppo2 trains with. Adam steps multi-tensor, as in a run. The
ceiling sentence is that of ppo2's default precision, with its shards.

Per variant: ms per minibatch, ms per sample, and the ceiling: ppo2's steps/s if a step cost nothing but its share
of the update, ``1000 / (n_epochs x ms per sample)`` at ppo2's ``n_epochs`` (each env step's sample is trained on
once per epoch): whatever the env and the rollout's forward passes cost, a run is slower. Nothing is asserted.
Usage: ``python -m benchmarks.pixel_update_speed [--size 64] [--steps 40] [--repeats 3] [--threads 1 2]
[--batch-sizes 64 128 256] [--extractors medium nature small] [--no-append]`` (also run by ``make bench``).
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.policies import ActorCriticCnnPolicy
from torch.nn import functional

from benchmarks.documents import (
    addResultsArguments,
    appendReport,
    loadNow,
    loadSpanText,
    machineDescription,
    recordedCommand,
    resultsPath,
)
from benchmarks.encoder_speed import threads
from benchmarks.progress import Countdown
from benchmarks.srl_speed import bfloat16Text
from rl_baselines.core.hyperparams import pixelDefaultFlags, plainValues
from rl_baselines.rl_algorithm.image_features import (
    FEATURES_EXTRACTORS,
    pixelPolicyKeywords,
    resolvedPrecision,
)
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.rl_algorithm.sharded_features import shardedUpdates
from srl_toolbox.cli import CLIParser, positiveInt, runCommand
from srl_toolbox.devices import maxThreads
from srl_toolbox.optimizers import multiTensorSteps

N_ACTIONS = 4  # MobileRobotGymEnv-v0's discrete actions
WARM_UP = 5
SIZES = (36, 48, 64, 84, 128)  # NatureCNN takes 36x36 and more
DEFAULT_EXTRACTOR = PPO2Model.DEFAULT_FEATURES_EXTRACTOR  # what ppo2 trains on raw pixels without --features-extractor
# ppo2's hyperparameters from raw pixels, as a run of train gets them (its defaults, the raw-pixel ones over them)
PIXEL_HYPERPARAMS = plainValues({**PPO2Model.DEFAULT_HYPERPARAMS, **{
    flag.removeprefix("hp_"): value for flag, value in pixelDefaultFlags(PPO2Model, "raw_pixels", {}).items()}})


def pixelPolicy(size: int, extractor: str, precision: str = "float32") -> ActorCriticCnnPolicy:
    """:return: SB3's CnnPolicy of 3 x size x size uint8 images with the named features extractor computing in
    ``precision``, random weights, its Adam stepping multi-tensor (as in a run)"""
    torch.manual_seed(0)
    space = gym.spaces.Box(0, 255, (3, size, size), np.uint8)
    rate = PIXEL_HYPERPARAMS["learning_rate"]
    policy = ActorCriticCnnPolicy(space, gym.spaces.Discrete(N_ACTIONS), lambda _: rate,
                                  **pixelPolicyKeywords(extractor, ActorCriticCnnPolicy, precision))
    multiTensorSteps([policy.optimizer])
    return policy


def randomMinibatch(size: int, batch: int) -> dict[str, torch.Tensor]:
    """:return: a minibatch as SB3's rollout buffer gives one: float images of 0-255, actions, old values (zeros) and
    log-probabilities, advantages and returns"""
    generator = torch.Generator().manual_seed(0)
    return {"observations": torch.randint(0, 256, (batch, 3, size, size), generator=generator).float(),
            "actions": torch.randint(0, N_ACTIONS, (batch,), generator=generator),
            # the value head starts near 0, so the clipped value loss keeps its gradient, as in a rollout's first epoch
            "old_values": torch.zeros(batch),
            "old_log_prob": -torch.rand(batch, generator=generator) * np.log(N_ACTIONS),
            "advantages": torch.randn(batch, generator=generator),
            "returns": torch.randn(batch, generator=generator)}


def minibatchStep(policy: ActorCriticCnnPolicy, data: dict[str, torch.Tensor]) -> float:
    """
    One minibatch of SB3's ``PPO.train`` at ppo2's raw-pixel hyperparameters (the module docstring).

    :return: the minibatch's loss
    """
    hyper = PIXEL_HYPERPARAMS
    values, log_prob, entropy = policy.evaluate_actions(data["observations"], data["actions"])
    values = values.flatten()
    advantages = (data["advantages"] - data["advantages"].mean()) / (data["advantages"].std() + 1e-8)
    ratio = torch.exp(log_prob - data["old_log_prob"])
    clip = hyper["clip_range"]
    policy_loss = -torch.min(advantages * ratio, advantages * torch.clamp(ratio, 1 - clip, 1 + clip)).mean()
    clip_vf = hyper["clip_range_vf"]
    predicted = values if clip_vf is None else (
        data["old_values"] + torch.clamp(values - data["old_values"], -clip_vf, clip_vf))
    value_loss = functional.mse_loss(data["returns"], predicted)
    loss = policy_loss - hyper["ent_coef"] * entropy.mean() + hyper["vf_coef"] * value_loss
    policy.optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.parameters(), hyper["max_grad_norm"])
    policy.optimizer.step()
    return float(loss.detach())


def millisecondsPerStep(policy: ActorCriticCnnPolicy, data: dict[str, torch.Tensor], steps: int) -> float:
    """:return: the mean wall time of a minibatch step in ms, after :data:`WARM_UP` steps"""
    for _ in range(WARM_UP):
        minibatchStep(policy, data)
    start = time.perf_counter()
    for _ in range(steps):
        minibatchStep(policy, data)
    return 1e3 * (time.perf_counter() - start) / steps


def variantsOf(extractors: list[str], batch_sizes: list[int], thread_counts: list[int]) -> list[dict[str, Any]]:
    """:return: the measured variants (the module docstring), each as extractor, batch, threads, whether in shards,
    and precision"""
    ways = [(count, sharded) for count in thread_counts for sharded in ((False, True) if count > 1 else (False,))]
    variants = [{"extractor": extractor, "batch": batch, "threads": count, "sharded": sharded, "precision": "float32"}
                for extractor in extractors for batch in batch_sizes for count, sharded in ways]
    variants += [{"extractor": DEFAULT_EXTRACTOR, "batch": PIXEL_HYPERPARAMS["batch_size"], "threads": count,
                  "sharded": sharded, "precision": "bfloat16"} for count, sharded in ways]
    return variants


def threadsText(variant: dict[str, Any]) -> str:
    """:return: how a variant's threads compute: one, torch's, or ppo2's shards"""
    if variant["threads"] == 1:
        return "one"
    return "shards" if variant["sharded"] else "torch's"


def measure(size: int, variants: list[dict[str, Any]], steps: int, repeats: int) -> list[dict[str, Any]]:
    """:return: each variant with its median ``ms`` per minibatch step; a line per measurement with its countdown (the
    work of one: its minibatch size, times the steps)"""
    times: list[list[float]] = [[] for _ in variants]
    countdown = Countdown(repeats * len(variants), repeats * sum(variant["batch"] for variant in variants))
    kinds = {(variant["extractor"], variant["precision"]) for variant in variants}
    policies = {kind: pixelPolicy(size, *kind) for kind in kinds}
    batches = {batch: randomMinibatch(size, batch) for batch in {variant["batch"] for variant in variants}}
    for round_index in range(repeats):
        order = range(len(variants)) if round_index % 2 == 0 else reversed(range(len(variants)))
        for index in order:
            variant = variants[index]
            policy = policies[variant["extractor"], variant["precision"]]
            with threads(variant["threads"]), shardedUpdates(policy, variant["threads"] if variant["sharded"] else 1,
                                                             [policy.optimizer]):
                times[index].append(millisecondsPerStep(policy, batches[variant["batch"]], steps))
            print(f"{countdown.tick(variant['batch'])} round {round_index + 1}: {variant['extractor']}, "
                  f"{variant['precision']}, minibatch {variant['batch']}, {variant['threads']} thread(s) "
                  f"({threadsText(variant)}): {times[index][-1]:.2f} ms", flush=True)
    return [{**variant, "ms": statistics.median(values)} for variant, values in zip(variants, times)]


def ceiling(ms_per_sample: float) -> float:
    """:return: ppo2's steps/s if a step cost only its share of the update (``n_epochs`` x a sample's time)"""
    return 1e3 / (PIXEL_HYPERPARAMS["n_epochs"] * ms_per_sample)


def formatTable(rows: list[dict[str, Any]]) -> str:
    """:return: the variants' table, each with its ms per minibatch and per sample and its ceiling"""
    epochs = PIXEL_HYPERPARAMS["n_epochs"]
    lines = ["| features extractor | precision | minibatch | threads | threads as | ms per minibatch | ms per sample | "
             f"ceiling: ppo2 steps/s at {epochs} epochs |", "|---|---|---:|---:|---|---:|---:|---:|"]
    for row in rows:
        per_sample = row["ms"] / row["batch"]
        lines.append(f"| {row['extractor']} | {row['precision']} | {row['batch']} | {row['threads']} "
                     f"| {threadsText(row)} | {row['ms']:.2f} | {per_sample:.3f} | {ceiling(per_sample):,.0f} |")
    return "\n".join(lines)


def defaultCeilings(rows: list[dict[str, Any]]) -> str:
    """:return: the ceiling of ppo2's default update (:data:`DEFAULT_EXTRACTOR`, its default precision on this CPU, its
    minibatch size) per thread count, several threads in shards as ppo2 trains"""
    precision = resolvedPrecision(PPO2Model.DEFAULT_PRECISION, "cpu")
    default = [row for row in rows if row["extractor"] == DEFAULT_EXTRACTOR and row["precision"] == precision
               and row["batch"] == PIXEL_HYPERPARAMS["batch_size"] and row["sharded"] == (row["threads"] > 1)]
    parts = [f"{ceiling(row['ms'] / row['batch']):,.0f} steps/s on {row['threads']} thread(s)"
             + (" in shards" if row["sharded"] else "") for row in default]
    if not parts:
        return ""
    return (f"Ceiling of ppo2's default update from raw pixels ({DEFAULT_EXTRACTOR}, {precision}, minibatches of "
            f"{PIXEL_HYPERPARAMS['batch_size']}, {PIXEL_HYPERPARAMS['n_epochs']} epochs): {', '.join(parts)}.")


def main(argv: list[str] | None = None) -> int:
    """:param argv: command-line arguments (default: sys.argv[1:]); :return: exit status"""
    parser = CLIParser(prog="python -m benchmarks.pixel_update_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=positiveInt, default=64, choices=SIZES, metavar="SIZE",
                        help=f"image height and width: {', '.join(map(str, SIZES))} [64]")
    parser.add_argument("--steps", type=positiveInt, default=40, help="timed minibatch steps per measurement [40]")
    parser.add_argument("--repeats", type=positiveInt, default=3, help="alternated rounds, median kept [3]")
    parser.add_argument("--threads", type=positiveInt, nargs="+", default=[1, 2], metavar="N",
                        help="torch thread counts [1 2]")
    parser.add_argument("--batch-sizes", type=positiveInt, nargs="+", default=[64, 128, 256], metavar="B",
                        help="minibatch sizes, 2 or more (SB3 normalises the advantages over each) [64 128 256]")
    parser.add_argument("--extractors", nargs="+", choices=sorted(FEATURES_EXTRACTORS),
                        default=sorted(FEATURES_EXTRACTORS, key=lambda name: name != DEFAULT_EXTRACTOR),
                        metavar="NAME", help=f"features extractors ({', '.join(sorted(FEATURES_EXTRACTORS))}) [all]")
    addResultsArguments(parser, "the results")
    args = parser.parse_args(argv)
    if min(args.batch_sizes) < 2:
        parser.error(f"argument --batch-sizes: invalid size {min(args.batch_sizes)} (2 or more: SB3 normalises the "
                     "advantages over each minibatch)")
    if max(args.threads) > maxThreads():  # more threads than CPUs never compute faster
        parser.error(f"argument --threads: {max(args.threads)} is more than this machine's {maxThreads()} CPUs "
                     f"(valid: 1..{maxThreads()})")
    print(f"Machine: {machineDescription(('torch', 'stable_baselines3'))}", flush=True)
    start_load = loadNow()
    rows = measure(args.size, variantsOf(args.extractors, args.batch_sizes, args.threads), args.steps, args.repeats)
    table, sentence = formatTable(rows), defaultCeilings(rows)
    print(table)
    print(sentence)
    if not args.no_append:
        appendReport(f"ppo2's update from raw pixels on the CPU, {args.size}x{args.size}",
                     recordedCommand("benchmarks.pixel_update_speed", argv),
                     f"SB3's CnnPolicy as ppo2 builds it from raw pixels ({N_ACTIONS} discrete actions, random weights "
                     "and minibatches), one minibatch step of SB3's PPO.train at ppo2's raw-pixel hyperparameters "
                     "(clipped surrogate and value losses, entropy, gradient clipping, Adam multi-tensor); threads "
                     "as: one, torch's (each operation split across them), shards (ppo2's: each minibatch's CNN in a "
                     f"shard per thread, one torch thread each, Adam fused); {args.steps} steps per "
                     f"measurement after {WARM_UP} warm-up steps, median of {args.repeats} alternated rounds. Ceiling "
                     "= ppo2's steps/s if a step cost nothing but its share of the update: 1000 / (n_epochs x ms per "
                     f"sample). {sentence} The bfloat16 rows: {bfloat16Text()}. Reported, not asserted. "
                     f"{loadSpanText(start_load)}.", table,
                     packages=("torch", "stable_baselines3"), path=resultsPath(args))
    return 0


if __name__ == "__main__":
    runCommand(main)
