"""The train command of a process that only works for a run another process writes (``BaseRLObject.workerRole``:
ppo1 given ``--rank`` > 0, which joins rank 0's process group).

Invariant: such a process writes nothing at all (no run folder, args.json, model, checkpoint, monitor file or log):
it trains with no run folder, no monitor files, no logger, no checkpoint and a callback that never stops it (the
process that writes the run decides when training ends). Its validation is the train command's, before it starts.
"""
from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.utils import set_random_seed

from rl_baselines.core.plugin_v1 import trainAlgorithm
from rl_baselines.runs.train_config import TrainConfig, TrainResult


def keepGoing(_locals: dict[str, Any], _globals: dict[str, Any]) -> bool:
    """A worker's training callback: it records nothing and never stops training."""
    return True


def trainAsWorker(config: TrainConfig, algo_class: type) -> TrainResult:
    """
    Train as a worker of another process's run, writing nothing.

    :param config: the validated config (its ``run_dir`` and ``monitor_dir`` are None)
    :param algo_class: the algorithm's class, whose ``workerRole(config)`` is not None
    :return: exit code 0, no run folder, the agent as trained here, its step count (all workers together)
    """
    print(f"Worker: {algo_class.workerRole(config)}; this process writes nothing (no run folder)", flush=True)
    torch.set_num_threads(config.torch_threads)
    set_random_seed(config.seed)
    algo = algo_class()
    trainAlgorithm(algo, config.replace(run_dir=None, monitor_dir=None).runSettings(), config.num_timesteps,
                   keepGoing)
    print(f"Done (worker): {int(algo.num_timesteps)} steps, all workers together", flush=True)
    return TrainResult(0, None, algo, int(algo.num_timesteps), float("nan"), config)
