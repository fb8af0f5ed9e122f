"""ppo1: PPO with the clipped surrogate (Schulman et al., 2017) trained by several worker processes that each collect
their own rollouts and average their gradients -- the old toolbox's MPI PPO, here on ``torch.distributed``.

Layout of a run with ``--num-workers K``: rank 0 is the train command's own process (it alone writes the run folder,
progress.csv and models, and calls the callback); it spawns K-1 worker processes on this machine that
join a gloo process group (``--dist-url``, default ``tcp://127.0.0.1:<free port>``). Processes on other machines join
the same group with ``--rank R --world-size K --dist-url tcp://HOST:PORT`` (a process given ``--rank`` > 0 only works
as a worker, spawns nothing and writes nothing: :meth:`PPO1Model.workerRole` tells the train command, which then makes
no run folder). Every rank builds its own env with the class's ``makeEnv`` and seed ``seed + 1000 * rank`` (modulo
2**32). The flags are checked together (:func:`distributedRefusal`) by the train command's validation, before anything
is written.

Invariants: every rank's monitor files are in the run's monitor folder (rank 0's envs write theirs; a spawned worker's
are written between updates, :class:`RankMonitorFiles`), so their episode lengths add up to the step count; rank 0
alone handles SIGINT and SIGTERM (workers ignore them) and stops every rank through the all-reduce that ends each
rollout, the step count it then keeps being the one its checkpoint recorded; a spawned worker that dies, before the
group forms or mid-run, ends the run at once with one line naming it (:class:`LocalWorkers`, ``CommandFailed``, exit 1),
leaving the run folder as a killed run leaves it.

One iteration, on every rank:

1. collect ``timesteps_per_actorbatch`` steps per env (num_timesteps counts the steps of all ranks);
2. GAE(λ) advantages; they are normalised with the mean and std of the *global* batch (sums all-reduced);
3. ``optim_epochs`` epochs; each epoch splits the local batch into ``nminibatches`` parts, and for each part computes
   the gradient of ``-clipped surrogate + vf_coef * value loss - entcoeff * entropy`` summed over its samples,
   all-reduces (SUM) the gradients and the sample counts and divides by the global count, then takes the same Adam
   step (parameters stay identical: rank 0 broadcasts its networks and optimizer state at the start). The
minibatches are shuffled with the seed ``rank * 100_003 + update``, where ``update`` counts the run's updates from 1:
it is saved with the training state (and broadcast by rank 0), so that a resumed run shuffles as the uninterrupted
one.

Why full batches by default (``nminibatches`` 1): the gradient is then exactly the mean over the union of the
ranks' batches, so K workers make the same update as 1 worker on the union of their batches (up to float summation
order; tests/test_ppo1.py checks it). With more minibatches each rank still takes its own equal share of every
global minibatch, which is again a plain mean over the global minibatch, but not the same split as one worker would
make. Gradients are not clipped (as in the MPI original). Observation normalisation (VecNormalize) is per rank; rank 0's
statistics are the ones saved with the model, the workers' go into its checkpoints' training state with the rest of
their state (rl_baselines.rl_algorithm.ppo1_workers.workerState), which a resumed run hands back to them.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import time
import urllib.parse
from multiprocessing.connection import Connection
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
import torch.distributed as dist
from stable_baselines3.common.monitor import ResultsWriter
from torch import nn

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.base import TrainCallback
from rl_baselines.core.buffer_memory import BufferKind
from rl_baselines.core.checkpointing import Checkpoint
from rl_baselines.core.hyperparams import DISCOUNT, NON_NEGATIVE, POSITIVE, Hyperparam, Interval
from rl_baselines.core.plugin_v1 import asRunSettings
from rl_baselines.core.run_folder import MONITOR_SUFFIX
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.envs.wrappers import monitorElapsed
from rl_baselines.rl_algorithm.ppo1_workers import (
    LocalWorkers,
    loadWorkerStates,
    restoreWorkerState,
    saveWorkerStates,
    workerState,
)
from rl_baselines.rl_algorithm.torch_common import LR_SCHEDULE, ActorCriticNetwork, TorchActorCritic
from srl_toolbox.cli import MAX_SEED, CommandFailed, UsageError, nonNegativeInt, positiveInt


def gae(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, last_values: np.ndarray,
        gamma: float, lam: float) -> np.ndarray:
    """
    :param rewards: (n_steps, n_envs)
    :param values: V of each step's observation (n_steps, n_envs)
    :param dones: (n_steps, n_envs), 1 where the step ended an episode
    :param last_values: V of the observation after the last step (n_envs,)
    :param gamma: discount factor
    :param lam: GAE λ
    :return: the generalised advantage estimates (n_steps, n_envs)
    """
    advantages = np.zeros_like(rewards)
    running = np.zeros_like(last_values, dtype=np.float32)
    next_values = last_values
    for step in reversed(range(rewards.shape[0])):
        not_done = 1.0 - dones[step]
        delta = rewards[step] + gamma * next_values * not_done - values[step]
        running = delta + gamma * lam * not_done * running
        advantages[step] = running
        next_values = values[step]
    return advantages


def allReduceSum(tensor: torch.Tensor) -> torch.Tensor:
    """:return: the sum of ``tensor`` over all ranks (itself without a process group)"""
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def ppoUpdate(policy: ActorCriticNetwork, optimizer: torch.optim.Optimizer, batch: dict[str, torch.Tensor],
              hyperparams: dict[str, Any], learning_rate: float, seed: int = 0) -> dict[str, float]:
    """
    The PPO update of one rollout, on this rank's share of the global batch (gradients all-reduced).

    :param policy: the network (identical on every rank)
    :param optimizer: its Adam optimizer (identical state on every rank)
    :param batch: this rank's flattened ``obs``, ``actions``, ``log_probs`` (old), ``advantages``, ``returns``
    :param hyperparams: clip_param, entcoeff, vf_coef, optim_epochs, nminibatches
    :param learning_rate: this update's Adam step size
    :param seed: seeds the minibatch shuffling (only used with nminibatches > 1)
    :return: statistics of the last epoch (means over the global batch)
    """
    clip, ent_coef, vf_coef = float(hyperparams["clip_param"]), float(hyperparams["entcoeff"]), float(hyperparams["vf_coef"])
    n_local = batch["advantages"].shape[0]
    # Normalise advantages over the global batch, so that K ranks see exactly what one rank on the union would.
    adv = batch["advantages"].double()
    moments = allReduceSum(torch.stack([torch.tensor(float(n_local), dtype=torch.float64, device=adv.device), adv.sum(),
                                        (adv ** 2).sum()]))
    mean = moments[1] / moments[0]
    std = torch.sqrt(torch.clamp(moments[2] / moments[0] - mean ** 2, min=0.0))
    advantages = ((adv - mean) / (std + 1e-8)).float()
    for group in optimizer.param_groups:
        group["lr"] = learning_rate
    generator = torch.Generator().manual_seed(seed)
    n_minibatches = int(hyperparams["nminibatches"])
    params = [param for param in policy.parameters()]
    stats = torch.zeros(5, dtype=torch.float64)
    for _ in range(int(hyperparams["optim_epochs"])):
        order = torch.randperm(n_local, generator=generator) if n_minibatches > 1 else torch.arange(n_local)
        stats.zero_()
        for indices in torch.tensor_split(order, n_minibatches):
            distribution, values = policy(batch["obs"][indices])
            ratio = torch.exp(distribution.log_prob(batch["actions"][indices]) - batch["log_probs"][indices])
            adv_mb = advantages[indices]
            surrogate = torch.min(ratio * adv_mb, torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * adv_mb)
            vf_loss = (values - batch["returns"][indices]) ** 2
            entropy = distribution.entropy()
            # Sums here, divided by the global sample count after the all-reduce: a mean over the global minibatch.
            loss = (-surrogate + vf_coef * vf_loss - ent_coef * entropy).sum()
            optimizer.zero_grad()
            loss.backward()
            grads = [param.grad if param.grad is not None else torch.zeros_like(param) for param in params]
            count_tensor = torch.tensor([float(len(indices))], device=grads[0].device)
            flat = torch.cat([grad.reshape(-1) for grad in grads] + [count_tensor])
            allReduceSum(flat)
            count, offset = flat[-1], 0
            for param in params:
                param.grad = (flat[offset:offset + param.numel()] / count).view_as(param)
                offset += param.numel()
            optimizer.step()
            with torch.no_grad():
                stats += torch.tensor([-surrogate.sum().item(), vf_loss.sum().item(), entropy.sum().item(),
                                       ((ratio - 1.0).abs() > clip).float().sum().item(), float(len(indices))],
                                      dtype=torch.float64)
    allReduceSum(stats)
    return {"pg_loss": float(stats[0] / stats[4]), "vf_loss": float(stats[1] / stats[4]),
            "entropy": float(stats[2] / stats[4]), "clip_fraction": float(stats[3] / stats[4])}


def freeDistUrl() -> str:
    """:return: ``tcp://127.0.0.1:PORT`` with a port free right now"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{sock.getsockname()[1]}"


def distUrlRefusal(url: str) -> str | None:
    """
    :param url: a ``--dist-url``
    :return: None when it is an ``init_method`` torch.distributed documents (``tcp://HOST:PORT``, ``file:///PATH`` in
        an existing folder, ``env://`` with MASTER_ADDR and MASTER_PORT set), else the one-line refusal
    """
    parsed = urllib.parse.urlsplit(url)
    try:
        port = parsed.port
    except ValueError:  # not a number, or out of 0..65535
        port = None
    if parsed.scheme == "tcp" and parsed.hostname and port and parsed.path in ("", "/") and not parsed.query:
        return None
    if parsed.scheme == "file" and not parsed.netloc and parsed.path and os.path.isdir(os.path.dirname(parsed.path)):
        return None
    if url == "env://" and os.environ.get("MASTER_ADDR") and os.environ.get("MASTER_PORT"):
        return None
    return (f"--dist-url {url!r} is not a process group address; valid: tcp://HOST:PORT (port 1..65535), "
            "file:///PATH (a file in an existing folder all processes share) or env:// (MASTER_ADDR and MASTER_PORT "
            "set)")


def distributedRefusal(rank: int, num_workers: int, world_size: int | None, dist_url: str | None) -> str | None:
    """
    :param rank: ``--rank``
    :param num_workers: ``--num-workers``
    :param world_size: ``--world-size`` (None: ``--num-workers``)
    :param dist_url: ``--dist-url`` (None: a free local port, for rank 0 with all its workers on this machine)
    :return: None when the flags fit together, else the one-line refusal
    """
    world_size = world_size or num_workers
    if rank >= world_size:
        return f"--rank {rank} must be below --world-size {world_size}; valid: 0..{world_size - 1}"
    if rank == 0 and num_workers > world_size:
        return f"--num-workers {num_workers} is more than --world-size {world_size}; valid: 1..{world_size}"
    if dist_url is not None:
        return distUrlRefusal(dist_url)
    if rank > 0:
        return f"--rank {rank} needs --dist-url tcp://HOST:PORT, the address of rank 0's process group"
    if world_size > num_workers:
        return (f"--world-size {world_size} with --num-workers {num_workers} needs --dist-url tcp://HOST:PORT to "
                "join processes on other machines")
    return None


class RankMonitorFiles:
    """
    A worker's monitor files in the run's monitor folder, ``<rank * n_envs + i>.monitor.csv`` for its env i (rank 0's
    envs write ``0 .. n_envs-1`` themselves), in SB3's Monitor format; an existing file (a resumed run, cut back to
    its checkpoint) is continued, its wall time ``t`` going on from its last row's, as ``openMonitor`` does.

    The episodes a rollout ended are written after its update (:meth:`write`), before the barrier rank 0 passes to
    its clean point, never while rank 0 steps: rank 0's training callbacks, which read every monitor file during its
    rollouts, and its checkpoints, which record the files' sizes, see the same rows on every run of a seed.

    :param monitor_dir: the run's monitor folder
    :param rank: the worker's rank
    :param n_envs: its envs (every rank has as many)
    :param env_id: the env, named in the header
    """

    def __init__(self, monitor_dir: str, rank: int, n_envs: int, env_id: str) -> None:
        self.writers: list[ResultsWriter] = []
        self.starts: list[float] = []
        for index in range(rank * n_envs, (rank + 1) * n_envs):
            path = os.path.join(monitor_dir, f"{index}{MONITOR_SUFFIX}")
            last_t = monitorElapsed(path)
            start = time.time() - (last_t or 0.0)
            self.writers.append(ResultsWriter(path, header={"t_start": start, "env_id": env_id},
                                              extra_keys=("is_success",), override_existing=last_t is None))
            self.starts.append(start)
        self.pending: list[tuple[int, float, int, float, Any]] = []

    def add(self, env_index: int, info: dict[str, Any]) -> None:
        """:param env_index: the env that ended an episode; :param info: its step's info (``episode`` set)"""
        episode = info["episode"]
        self.pending.append((env_index, float(episode["r"]), int(episode["l"]), time.time(), info.get("is_success")))

    def write(self) -> None:
        """Append the episodes added since the last call (each file is flushed)."""
        for env_index, reward, length, ended, success in self.pending:
            self.writers[env_index].write_row({"r": round(reward, 6), "l": length,
                                               "t": round(ended - self.starts[env_index], 6),
                                               "is_success": "" if success is None else success})
        self.pending.clear()

    def discard(self) -> None:
        """Forget the episodes added since the last :meth:`write` (a stopped run's partial rollout)."""
        self.pending.clear()

    def close(self) -> None:
        for writer in self.writers:
            writer.close()


def _keepGoing(_locals: dict[str, Any], _globals: dict[str, Any]) -> bool:
    """A worker's training callback: it records nothing and never stops the run (rank 0 decides)."""
    return True


def _workerEntry(model_class: type, rank: int, settings: RunSettings, total_timesteps: int,
                 hyperparams: dict[str, Any], report: Connection) -> None:
    """
    Spawned worker process: build its env, join the group and train as rank ``rank`` (no callback; its monitor
    files only). It ignores SIGINT and SIGTERM (a terminal's Ctrl-C, or ``kill -- -PGID``, reaches the whole process
    group; so do its env subprocesses, which inherit this): rank 0 alone handles them, checkpoints, and stops every
    rank at the end of the rollout through the all-reduce of its stop flag. A worker that fails anyway sends its
    error in one line through ``report`` to rank 0 (``LocalWorkers``), which names it, and exits 1, without a
    traceback (the line goes to stderr when rank 0 is gone).
    """
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    code = 0
    try:
        torch.set_num_threads(1)
        settings = settings.replace(rank=rank)
        env = model_class.makeTrainingEnv(settings)
        model_class().train(env, total_timesteps, hyperparams, _keepGoing, None, settings, None)
    except BaseException as error:  # one line, not a traceback: rank 0 reports the run's failure
        lines = str(error).strip().splitlines()
        line = f"{type(error).__name__}{': ' + lines[-1] if lines else ''}"
        try:
            report.send(line)
        except OSError:  # rank 0 is gone
            print(f"ppo1 worker rank {rank} failed: {line}", file=sys.stderr)
        code = 1
    # Skip the interpreter's teardown: a thread left by gloo sometimes aborts it ("terminate called without an
    # active exception"), which would turn a finished worker into a failed one.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class PPO1Model(TorchActorCritic):
    """PPO1: clipped-surrogate PPO, several processes averaging gradients with torch.distributed (gloo)."""

    NAME = "ppo1"
    # each update's batch: observations, actions (int64), log_probs, values, rewards, dones per step of each env
    BUFFER = BufferKind("rollout batch", "timesteps_per_actorbatch", True, 1, 8 + 4 * 4)
    ACTION_TYPES = (ActionType.DISCRETE, ActionType.CONTINUOUS)
    # In env steps (all workers together), as ppo2's and trpo's.
    LOG_INTERVAL = 1024
    SAVE_INTERVAL = 4096
    # In the order of the search space (the sampler draws in this order). gamma and clip_param search the ranges
    # ppo2 searches (their open lower bound 0 is not a value to try).
    HYPERPARAMS: ClassVar[dict[str, Hyperparam]] = {
        "lam": Hyperparam(0.95, "GAE lambda", bounds=Interval(0, 1), search=(0.0, 1.0)),
        "gamma": Hyperparam(0.99, "discount factor", bounds=DISCOUNT, search=(0.9, 0.9999)),
        "entcoeff": Hyperparam(0.01, "entropy bonus weight", bounds=NON_NEGATIVE, search=(0.0, 1.0)),
        "vf_coef": Hyperparam(1.0, "value loss weight", bounds=NON_NEGATIVE),
        "clip_param": Hyperparam(0.2, "PPO clipping range", bounds=POSITIVE, search=(0.1, 0.4)),
        "learning_rate": Hyperparam(2.5e-4, "Adam learning rate", bounds=POSITIVE, search=(1e-5, 1e-2, "log")),
        "optim_epochs": Hyperparam(4, "epochs over each batch", bounds=POSITIVE, search=(1, 10)),
        "nminibatches": Hyperparam(1, "minibatches per epoch", bounds=POSITIVE),
        "timesteps_per_actorbatch": Hyperparam(128, "steps per worker between updates", bounds=POSITIVE,
                                               search=(32, 2048)),
        "lr_schedule": LR_SCHEDULE,
    }

    def __init__(self) -> None:
        super().__init__()
        self.policy: ActorCriticNetwork | None = None
        self.optimizer: torch.optim.Adam | None = None
        self.rank = 0
        self.world_size = 1
        self.updates = 0  # the run's updates so far (they seed the minibatch shuffling)
        self.rank_monitor: RankMonitorFiles | None = None  # a worker's monitor files (rank 0's envs write theirs)
        # Rank 0: the other ranks' state at the last clean point (workerState), which its checkpoints keep, or the
        # state a resumed run hands them; None before the first update and in a run of one worker.
        self.worker_states: list[dict[str, Any]] | None = None

    @classmethod
    def customArguments(cls, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        super().customArguments(parser)
        group = parser.add_argument_group("ppo1 workers (torch.distributed, gloo)")
        group.add_argument("--num-workers", type=positiveInt, default=1,
                           help="processes on this machine, each with its own env (rank 0 included) [1]")
        group.add_argument("--dist-url", default=None,
                           help="process group address, e.g. tcp://HOST:PORT [tcp://127.0.0.1:<free port>]")
        group.add_argument("--rank", type=nonNegativeInt, default=0,
                           help="this process's rank; > 0: join a run started elsewhere as a worker only [0]")
        group.add_argument("--world-size", type=positiveInt, default=None,
                           help="processes in all, over all machines [--num-workers]")
        return parser

    # --- networks --------------------------------------------------------------------------------------------

    def build(self) -> None:
        if not isinstance(self.action_space, (gym.spaces.Discrete, gym.spaces.Box)):
            raise TypeError("ppo1 needs a Discrete or Box action space")
        self.policy = ActorCriticNetwork(self.observation_space, self.action_space)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=self.hyperparams["learning_rate"], eps=1e-5)

    def modules(self) -> dict[str, nn.Module | torch.optim.Optimizer]:
        return {"policy": self.policy, "optimizer": self.optimizer}

    def distribution(self, obs: torch.Tensor) -> torch.distributions.Distribution:
        return self.policy(obs)[0]

    # --- training --------------------------------------------------------------------------------------------

    @classmethod
    def workerSettings(cls, settings: RunSettings) -> RunSettings:
        """
        :param settings: the run's settings
        :return: those of this process's rank (``--rank``): rank 0's as they are; a worker's with seed
            ``seed + 1000 * rank`` and no run folder, monitor folder for its envs, model to continue or checkpoint
            (rank 0 owns them, and gives the workers its model; a worker rank 0 spawned writes its monitor files
            itself: :class:`RankMonitorFiles`)
        """
        settings = asRunSettings(settings)  # (a caller written for API version 1 passes a Namespace)
        rank = int(settings.option("rank", 0))
        if rank == 0:
            return settings
        return settings.replace(seed=(int(settings.seed) + 1000 * rank) % (MAX_SEED + 1),  # a valid seed near 2**32-1
                                monitor_dir=None, run_dir=None, continue_from=None)

    @classmethod
    def makeTrainingEnv(cls, settings: RunSettings, env_kwargs: dict[str, Any] | None = None) -> Any:
        """The env of this process's rank (:meth:`workerSettings`)."""
        return super().makeTrainingEnv(cls.workerSettings(settings), env_kwargs)

    @classmethod
    def checkSettings(cls, settings: Any) -> Any:
        """``--rank``, ``--num-workers``, ``--world-size`` and ``--dist-url`` together (:func:`distributedRefusal`)."""
        refusal = distributedRefusal(int(getattr(settings, "rank", 0)), int(getattr(settings, "num_workers", 1)),
                                     getattr(settings, "world_size", None), getattr(settings, "dist_url", None))
        if refusal is not None:
            raise ValueError(refusal)
        return super().checkSettings(settings)

    @classmethod
    def resolveHyperparams(cls, args: RunSettings, train_kwargs: dict[str, Any] | None,
                           saved: dict[str, Any] | None = None) -> dict[str, Any]:
        """Also refuses more minibatches than a worker's batch has samples (a minibatch would be empty)."""
        hyperparams = super().resolveHyperparams(args, train_kwargs, saved)
        steps, num_cpu = int(hyperparams["timesteps_per_actorbatch"]), int(getattr(args, "num_cpu", 1))
        if int(hyperparams["nminibatches"]) > steps * num_cpu:
            raise UsageError(f"nminibatches {hyperparams['nminibatches']} is more than the {steps * num_cpu} samples "
                             f"of a worker's batch (timesteps_per_actorbatch {steps} x --num-cpu {num_cpu}); valid: "
                             f"1..{steps * num_cpu}")
        return hyperparams

    @classmethod
    def workerRole(cls, settings: Any) -> str | None:
        """A process given ``--rank`` > 0 only works for rank 0's run: it writes nothing."""
        rank = int(getattr(settings, "rank", 0))
        if rank == 0:
            return None
        world_size = getattr(settings, "world_size", None) or getattr(settings, "num_workers", 1)
        return (f"rank {rank} of {world_size} in the run rank 0's process writes (process group "
                f"{getattr(settings, 'dist_url', None)})")

    def train(self, env: Any, total_timesteps: int, hyperparams: dict[str, Any], callback: TrainCallback,
              logger: Any, settings: RunSettings, checkpoint: Checkpoint | None = None) -> None:
        rank, num_workers = int(settings.option("rank", 0)), int(settings.option("num_workers", 1))
        world_size = int(settings.option("world_size") or num_workers)
        refusal = distributedRefusal(rank, num_workers, world_size, settings.option("dist_url"))
        if refusal is not None:  # (the train command refused it before; here for training from Python)
            env.close()
            raise UsageError(refusal)
        if world_size == 1:
            return super().train(env, total_timesteps, hyperparams, callback, logger, settings, checkpoint)
        dist_url = settings.option("dist_url") or freeDistUrl()
        workers = None
        if rank == 0:
            # Workers on this machine: ranks 1 .. num_workers-1, spawned (not forked: torch and envs hold threads).
            worker_settings = settings.replace(dist_url=dist_url, world_size=world_size)
            workers = LocalWorkers(_workerEntry, num_workers, type(self), worker_settings, total_timesteps,
                                   dict(hyperparams))
        else:
            # A worker writes only its monitor files (one rank 0 spawned: it has the run's monitor folder) and
            # reports nothing: rank 0 owns the run folder and the model (its env was built by makeTrainingEnv for
            # this rank, without monitor files: RankMonitorFiles writes them between updates).
            if settings.monitor_dir is not None:
                self.rank_monitor = RankMonitorFiles(settings.monitor_dir, rank, env.num_envs, settings.env)
            settings = self.workerSettings(settings)
            checkpoint = None  # a resumed run's state is rank 0's: workers get its model from it
            callback, logger = _keepGoing, None
        training = False

        def init() -> None:
            dist.init_process_group("gloo", init_method=dist_url, rank=rank, world_size=world_size)

        try:
            if workers is not None:
                workers.formGroup(init)  # a worker that dies before the group forms stops rank 0's wait
            else:
                init()
            self.rank, self.world_size = rank, world_size
            training = True
            super().train(env, total_timesteps, hyperparams, callback, logger, settings, checkpoint)
            dist.barrier()  # every rank is done with its collectives
            if rank > 0:
                dist.destroy_process_group()
        except BaseException as error:
            if not training:
                env.close()  # (train closes it)
            # Rank 0 failed, was stopped at once (a second Ctrl-C), or a worker died: the others would wait in a
            # collective. A worker's failure is the run's, in one line (rank 0's error only follows from it).
            failure = workers.stop(wait=isinstance(error, RuntimeError)) if workers is not None else None
            if failure is not None:
                raise CommandFailed(f"{failure}; the run stopped") from None
            raise
        finally:
            # Rank 0 hosts the rendezvous store: its workers leave the group before it closes, else they can abort.
            failures = workers.close() if workers is not None else []
            if dist.is_initialized():
                dist.destroy_process_group()
            if self.rank_monitor is not None:
                self.rank_monitor.close()
        if failures:
            raise CommandFailed("; ".join(failures))

    def loopState(self) -> dict[str, int]:
        return {**super().loopState(), "updates": int(self.updates)}

    def setLoopState(self, state: dict[str, Any]) -> None:
        super().setLoopState(state)
        self.updates = int(state.get("updates", 0))

    def startLoop(self) -> None:
        super().startLoop()
        self.updates = 0

    def _syncFromRankZero(self, total_timesteps: int) -> int:
        """Give every rank rank 0's networks, optimizer state, hyperparameters, step count, update count and step
        target, and, in a resumed run, each worker its own state at the checkpoint (:meth:`restoreWorkerState`)."""
        state = [self.modelState(), dict(self.hyperparams), int(self.num_timesteps), int(total_timesteps),
                 int(self.updates), self.worker_states]
        dist.broadcast_object_list(state, src=0)
        if self.rank != 0:
            self.hyperparams = state[1]
            self.build()
            for name, module in self.modules().items():
                module.load_state_dict(state[0]["state_dicts"][name])
            self.num_timesteps, self.updates = state[2], state[4]
            workers = state[5]
            if workers is not None and len(workers) == self.world_size - 1:
                restoreWorkerState(self, workers[self.rank - 1])
        return state[3]

    def _gatherWorkerStates(self) -> None:
        """Every rank's :func:`workerState` to rank 0 (a collective), which keeps the workers' (ranks 1 ...)."""
        gathered: list[Any] | None = [None] * self.world_size if self.rank == 0 else None
        dist.gather_object(None if self.rank == 0 else workerState(self), gathered, dst=0)
        if gathered is not None:
            self.worker_states = gathered[1:]

    def saveTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        """The training state, and rank 0's record of its workers' at this clean point (:func:`saveWorkerStates`)."""
        super().saveTrainingState(folder, replay_buffer_folder)
        if self.worker_states is not None:
            saveWorkerStates(folder, self.worker_states)

    def loadTrainingState(self, folder: str, replay_buffer_folder: str | None = None) -> None:
        """The training state, and the workers' that rank 0 hands them as they start (none in a checkpoint of an
        earlier version: they start their episodes anew)."""
        super().loadTrainingState(folder, replay_buffer_folder)
        self.worker_states = loadWorkerStates(folder)

    def budgetChunk(self) -> int:
        """:return: a rollout of every rank (``timesteps_per_actorbatch`` per env): it trains whole ones"""
        return int(self.hyperparams["timesteps_per_actorbatch"]) * int(self.env.num_envs) * int(self.world_size)

    def learn(self, total_timesteps: int, callback: TrainCallback) -> None:
        distributed = dist.is_available() and dist.is_initialized()
        if distributed:
            total_timesteps = self._syncFromRankZero(total_timesteps)
        env, hp = self.env, self.hyperparams
        n_envs, n_steps = env.num_envs, int(hp["timesteps_per_actorbatch"])
        gamma, lam = float(hp["gamma"]), float(hp["lam"])
        obs_space = env.observation_space
        continuous = isinstance(self.action_space, gym.spaces.Box)
        action_shape = self.action_space.shape if continuous else ()
        start, target = self.scheduleStart(), self.num_timesteps + total_timesteps  # a resumed run goes on
        obs = env.reset()
        while self.num_timesteps < target:
            learning_rate = self.learningRate(1.0 - (self.num_timesteps - start) / max(target - start, 1))
            batch_obs = np.zeros((n_steps, n_envs, *obs_space.shape), dtype=obs_space.dtype)
            batch_actions = np.zeros((n_steps, n_envs, *action_shape), dtype=np.float32 if continuous else np.int64)
            batch_log_probs = np.zeros((n_steps, n_envs), dtype=np.float32)
            batch_values = np.zeros((n_steps, n_envs), dtype=np.float32)
            batch_rewards = np.zeros((n_steps, n_envs), dtype=np.float32)
            batch_dones = np.zeros((n_steps, n_envs), dtype=np.float32)
            rollout_start, steps_taken, stop = self.num_timesteps, 0, False
            for step in range(n_steps):
                batch_obs[step] = obs
                with torch.no_grad():
                    distribution, values = self.policy(self.toTensor(obs))
                    actions = distribution.sample()
                    batch_log_probs[step] = distribution.log_prob(actions).cpu().numpy()
                actions = actions.cpu().numpy()
                batch_values[step] = values.cpu().numpy()
                env_actions = np.clip(actions, self.action_space.low, self.action_space.high) if continuous else actions
                obs, rewards, dones, infos = env.step(env_actions)
                rewards = np.asarray(rewards, dtype=np.float32).copy()
                self.bootstrapTruncated(rewards, dones, infos, gamma)
                if self.rank_monitor is not None:
                    for index in np.flatnonzero(dones):
                        if "episode" in infos[index]:
                            self.rank_monitor.add(int(index), infos[index])
                batch_actions[step], batch_rewards[step], batch_dones[step] = actions, rewards, dones
                steps_taken += n_envs
                # Every rank steps in lock-step with the same number of envs: the global count so far.
                self.num_timesteps = rollout_start + steps_taken * self.world_size
                if callback(locals(), globals()) is False:
                    stop = True
                    break
            # The true global step count and whether rank 0 wants to stop, agreed by all ranks.
            agreed = allReduceSum(torch.tensor([float(steps_taken), float(stop), float(steps_taken * stop)],
                                               dtype=torch.float64))
            if agreed[1] > 0:
                if self.rank_monitor is not None:
                    self.rank_monitor.discard()  # (its steps are not counted either)
                # Stopped mid-rollout by rank 0 (its callback checkpointed at the count above, where the other
                # ranks went on to the rollout's end): the run's count stays the checkpoint's, each rank counted
                # with the steps rank 0 took; the partial rollout is thrown away, as with one worker.
                self.num_timesteps = rollout_start + int(agreed[2] / agreed[1]) * self.world_size
                break
            self.num_timesteps = rollout_start + int(agreed[0])
            advantages = gae(batch_rewards, batch_values, batch_dones, self.stateValues(obs), gamma, lam)
            batch = {
                "obs": self.toTensor(batch_obs).reshape(n_steps * n_envs, *obs_space.shape),
                "actions": self.toTensor(batch_actions).reshape(n_steps * n_envs, *action_shape),
                "log_probs": self.toTensor(batch_log_probs).reshape(-1),
                "advantages": self.toTensor(advantages).reshape(-1),
                "returns": self.toTensor(advantages + batch_values).reshape(-1),
            }
            self.updates += 1  # (restored by a resumed run: its shuffling goes on as the uninterrupted run's)
            stats = ppoUpdate(self.policy, self.optimizer, batch, hp, learning_rate,
                              seed=self.rank * 100_003 + self.updates)
            if distributed:
                if self.rank_monitor is not None:
                    self.rank_monitor.write()
                dist.barrier()  # rank 0 goes on (reads monitor files, checkpoints) once every rank wrote its rows
                self._gatherWorkerStates()  # (rank 0 keeps every worker's state at this clean point, for checkpoints)
            self.logStats(stats)
            self.cleanPoint(callback)  # between updates: an exact checkpoint (rank 0)
