"""The memory an algorithm's rollout or replay buffer takes, estimated before anything is written.

An algorithm class declares its buffer as ``BUFFER`` (a :class:`BufferKind`: which hyperparameter sizes it, and what
each slot holds, as the library allocates it). :func:`bufferMemoryRefusal` refuses a run whose buffer alone would
take more than the machine's memory and swap (``MemTotal + SwapTotal`` of /proc/meminfo): numpy cannot allocate it,
or it fills the machine, once the run folder is written and training starts.

Invariant: the estimate is a lower bound of what the buffer allocates (actions counted as one 4-byte element, state
observations as the ground truth's or the SRL model's float32 vector): a refused run could never have trained, and no
default of any algorithm is refused on a machine that holds a few GiB.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from environments import getEnvClass
from environments.srl_env import DEFAULT_IMG_SHAPE, isLearnedSRLModel
from srl_models.base import readExpConfig

MEMINFO = "/proc/meminfo"
_FLOAT32 = 4


@dataclasses.dataclass(frozen=True)
class BufferKind:
    """
    What an algorithm's buffer allocates per slot, and which hyperparameter counts the slots.

    :param name: what the message calls it ("rollout buffer", "replay buffer")
    :param hyperparam: the hyperparameter that sizes it (``n_steps``, ``buffer_size``...)
    :param per_env: the hyperparameter counts steps per env (a rollout: x ``--num-cpu`` envs); False: transitions in
        all (SB3's replay buffers keep ``buffer_size // n_envs`` per env)
    :param observations: observation arrays per slot (2 for a replay buffer that keeps next_observations apart)
    :param other_bytes: the bytes of the slot's other arrays (actions counted as one 4-byte element)
    """

    name: str
    hyperparam: str
    per_env: bool
    observations: int
    other_bytes: int

    def slots(self, length: int, n_envs: int) -> int:
        """:return: the slots ``length`` (the hyperparameter's value) allocates with ``n_envs`` envs"""
        return length * n_envs if self.per_env else max(length // n_envs, 1) * n_envs

    def slotBytes(self, observation_bytes: int) -> int:
        """:return: the bytes of one slot for observations of ``observation_bytes``"""
        return self.observations * observation_bytes + self.other_bytes


# SB3's RolloutBuffer: observations, actions and 6 float32 (rewards, returns, episode_starts, values, log_probs,
# advantages), n_steps per env
ROLLOUT = BufferKind("rollout buffer", "n_steps", True, 1, 6 * _FLOAT32 + _FLOAT32)
# SB3's ReplayBuffer (optimize_memory_usage off): observations, next_observations, actions, rewards, dones, timeouts
REPLAY = BufferKind("replay buffer", "buffer_size", False, 2, 3 * _FLOAT32 + _FLOAT32)


def machineMemory() -> int | None:
    """:return: MemTotal + SwapTotal of /proc/meminfo in bytes, None where there is no such file"""
    try:
        with open(MEMINFO) as meminfo:
            fields = dict(line.split(":", 1) for line in meminfo if ":" in line)
    except OSError:
        return None
    try:
        return sum(int(fields[name].split()[0]) * 1024 for name in ("MemTotal", "SwapTotal") if name in fields)
    except ValueError:
        return None


def humanBytes(count: float) -> str:
    """:return: ``count`` bytes in binary units, one decimal (``1.1 TiB``, ``23.5 GiB``)"""
    units = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    power = 0 if count < 1024 else min(int(math.log(count, 1024)), len(units) - 1)
    return f"{count:,.0f} bytes" if power == 0 else f"{count / 1024 ** power:.1f} {units[power]}"


def observationBytes(args: Any) -> int:
    """
    :param args: the run's settings (env, srl_model, srl_model_path, img_shape, fpv, multi_view, num_stack)
    :return: the bytes of one observation the algorithm stores: raw pixels as uint8 images of ``img_shape`` (two
        cameras with --fpv/--multi-view), states as float32 vectors (the SRL model's state_dim, the env's ground
        truth; one float where neither is known), x ``--num-stack``
    """
    if args.srl_model == "raw_pixels":
        channels, height, width = args.img_shape or DEFAULT_IMG_SHAPE
        size = channels * (2 if args.fpv or args.multi_view else 1) * height * width
    elif isLearnedSRLModel(args.srl_model) and args.srl_model_path is not None:
        size = _FLOAT32 * int(readExpConfig(args.srl_model_path).get("state_dim", 1))
    else:
        try:
            size = _FLOAT32 * int(getEnvClass(args.env).getGroundTruthDim())
        except NotImplementedError:
            size = _FLOAT32
    return max(size, 1) * int(args.num_stack)


def hyperparamSource(args: Any, name: str, value: Any) -> str:
    """
    :param args: the run's settings (hyperparam, extra, hyperparam_file, algo)
    :param name: a hyperparameter's name
    :param value: its typed value
    :return: where the run's value came from, as the user wrote it: ``--hyperparam NAME:RAW``, ``--flag VALUE``,
        ``--hyperparam-file FILE: NAME VALUE``, or the algorithm's default
    """
    raw = [item.partition(":")[2] for item in args.hyperparam if item.partition(":")[0] == name]
    if raw:
        return f"--hyperparam {name}:{raw[-1]}"
    if args.extra.get(f"hp_{name}") is not None:
        return f"--{name.replace('_', '-')} {args.extra[f'hp_{name}']}"
    if args.hyperparam_file:
        return f"--hyperparam-file {args.hyperparam_file}: {name} {value}"
    return f"{name} {value} (--algo {args.algo}'s default)"


def bufferMemoryRefusal(algo_class: type, args: Any, hyperparams: Mapping[str, Any]) -> str | None:
    """
    :param algo_class: the run's algorithm (its ``BUFFER``, None or absent: no buffer sized by a hyperparameter)
    :param args: the run's settings (:func:`observationBytes`, :func:`hyperparamSource`, num_cpu)
    :param hyperparams: the hyperparameters the run uses (resolved: defaults, file, flags and --hyperparam)
    :return: a one-line refusal when the buffer would take more than the machine's memory and swap (naming the value,
        the estimate, the machine's memory and the largest value that fits), else None (also without /proc/meminfo)
    """
    kind = getattr(algo_class, "BUFFER", None)
    if not isinstance(kind, BufferKind) or not isinstance(hyperparams.get(kind.hyperparam), int):
        return None
    memory = machineMemory()
    if memory is None:
        return None
    length, n_envs, observation = int(hyperparams[kind.hyperparam]), int(args.num_cpu), observationBytes(args)
    estimate = kind.slots(length, n_envs) * kind.slotBytes(observation)
    if estimate <= memory:
        return None
    fits = memory // kind.slotBytes(observation) // (n_envs if kind.per_env else 1)
    envs = f"{n_envs} env{'s' if n_envs > 1 else ''}"
    shape = (f"{length} steps x {envs} x {observation:,}-byte observations" if kind.per_env else
             f"{length} transitions of {kind.observations} x {observation:,}-byte observations")
    return (f"{hyperparamSource(args, kind.hyperparam, length)}: {args.algo}'s {kind.name} would take "
            f"{humanBytes(estimate)} ({shape}), more than this machine's {humanBytes(memory)} of memory and swap; "
            f"valid: {kind.hyperparam} up to {fits:,} for this run")
