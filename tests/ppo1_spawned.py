"""What the spawned processes of tests/test_ppo1.py unpickle: the equivalence test's target and the model class
ppo1's workers build (tests/ppo1_failing_worker.py: a worker that fails).

A spawned process imports the module of each function or class it is given. Kept here, apart from the test module,
a spawned process imports only what it runs (ppo1, torch), not the test module's imports (conftest, the train
command, the other algorithms), which cost it seconds.
"""
from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import torch
import torch.distributed as dist
from stable_baselines3.common.env_util import make_vec_env

from rl_baselines.rl_algorithm.ppo1 import PPO1Model, ppoUpdate

BOX_OBS = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
HYPERPARAMS = {"optim_epochs": 3, "learning_rate": 1e-2}
ACTION_SPACES = {"discrete": gym.spaces.Discrete(3), "box": gym.spaces.Box(-1, 1, (2,), np.float32)}


def freshModel(action_space: gym.Space) -> PPO1Model:
    """:return: a ppo1 model on 4 floats, the same weights each call"""
    torch.manual_seed(0)
    model = PPO1Model()
    model.setup(BOX_OBS, action_space, HYPERPARAMS)
    return model


def batch(action_space: gym.Space, size: int = 64) -> dict[str, torch.Tensor]:
    """:return: the same random rollout batch each call"""
    generator = torch.Generator().manual_seed(1)
    if isinstance(action_space, gym.spaces.Discrete):
        actions = torch.randint(0, int(action_space.n), (size,), generator=generator)
    else:
        actions = torch.randn(size, *action_space.shape, generator=generator)
    return {"obs": torch.randn(size, 4, generator=generator), "actions": actions,
            "log_probs": torch.randn(size, generator=generator) * 0.1 - 1.0,
            "advantages": torch.randn(size, generator=generator) * 3 + 1,
            "returns": torch.randn(size, generator=generator)}


def updateOnShare(rank: int, world_size: int, url: str, out: str) -> None:
    """One rank of the equivalence test: update on its share of the batch, write the parameters."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world_size)
    for kind, action_space in ACTION_SPACES.items():
        model = freshModel(action_space)
        share = {name: torch.tensor_split(value, world_size)[rank] for name, value in batch(action_space).items()}
        ppoUpdate(model.policy, model.optimizer, share, model.hyperparams, 1e-3)
        torch.save(model.policy.state_dict(), os.path.join(out, f"{kind}_rank{rank}.pt"))
    dist.destroy_process_group()
    os._exit(0)  # as ppo1's workers: gloo threads sometimes abort the interpreter's teardown (SIGABRT)


class OnCartPole(PPO1Model):
    """ppo1 on CartPole-v1."""

    @classmethod
    def makeEnv(cls, args, env_kwargs=None, load_path_normalise=None):
        return make_vec_env("CartPole-v1", n_envs=args.num_cpu, seed=args.seed)

