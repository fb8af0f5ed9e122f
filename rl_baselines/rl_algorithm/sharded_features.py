"""Data-parallel updates of a pixel policy's CNN on the CPU: each minibatch that gradients flow through is cut into
shards, one per torch thread, and each shard's features are computed, forward and backward, on a thread of its own
with one torch thread; the parameters' gradients are summed shard by shard.

Why shards rather than torch's own threads: torch splits each operation across its threads, and a thread that waits
passively (the toolbox's ``OMP_WAIT_POLICY``, so that runs sharing cores do not spin against each other) is woken for
every one of the update's many operations; a shard's thread is woken once for its forward pass and once for its
backward pass. How much that gains: docs/benchmarks.md ("ppo2's pixel update in shards").

Invariants:

- the features are the same as unsharded (each row is computed alone); the gradients are the same up to the order
  in which floats are summed, and with a given shard count they are the same bits on every run (each shard computes
  on one thread, the sums are taken in shard order), so a run's result depends on its recorded torch threads, as it
  does with torch's own threads;
- only a forward pass that records gradients on the CPU, with at least :data:`MIN_SHARD_ROWS` rows per shard, is
  sharded; rollouts, evaluations and ``predict`` (no gradients) compute as ever, on the calling thread;
- a sharded forward pass is backpropagated once, as SB3's updates do (a second backward raises);
- sharding is on only inside :func:`shardedUpdates`, which sets torch's threads to one and puts them back after;
  there the policy's optimizer steps fused (``srl_toolbox.optimizers.fusedSteps``: one kernel where the multi-tensor
  step's many calls would wait on the one thread; the bits differ from unsharded anyway).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch
from torch import nn

from srl_toolbox.optimizers import fusedSteps

MIN_SHARD_ROWS = 8  # fewer rows per shard: threads cost more than they save (a rollout's batch of one per env)


class ShardedExtractor(nn.Module):
    """
    A features extractor whose training minibatches can be sharded: subclasses compute their features in
    :meth:`features`; ``forward`` shards them inside :func:`shardedUpdates` (the module docstring).
    """

    _shard_pool: ThreadPoolExecutor | None = None
    _shards: int = 1

    def features(self, observations: torch.Tensor) -> torch.Tensor:
        """:return: the features of ``observations`` (what ``forward`` returns unsharded)"""
        raise NotImplementedError

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        if (self._shard_pool is None or not torch.is_grad_enabled() or observations.device.type != "cpu"
                or observations.shape[0] < self._shards * MIN_SHARD_ROWS):
            return self.features(observations)  # (a rollout's or evaluation's pass: nothing more looked at)
        parameters = tuple(parameter for parameter in self.parameters() if parameter.requires_grad)
        if not parameters:
            return self.features(observations)
        return _ShardedFeatures.apply(self, observations, *parameters)


def _withGradients(extractor: ShardedExtractor, observations: torch.Tensor) -> torch.Tensor:
    """:return: the extractor's features of one shard, recording their graph (on whichever thread runs it)"""
    with torch.enable_grad():
        return extractor.features(observations)


def _results(futures: Sequence[Future], first: Any) -> list[Any]:
    """:return: ``first`` and the futures' results, in order, once every future has finished (an error raised after
    they all have: no shard is left computing)"""
    results, error = [first], None
    for future in futures:
        try:
            results.append(future.result())
        except BaseException as raised:  # noqa: BLE001 (re-raised below, once every shard has finished)
            error = error or raised
    if error is not None:
        raise error
    return results


def _computed(pool: ThreadPoolExecutor, work: Any, items: Sequence[Any]) -> list[Any]:
    """:return: ``work`` of each item, the first on this thread and the others on the pool's, in order"""
    futures = [pool.submit(work, item) for item in items[1:]]
    try:
        first = work(items[0])
    except BaseException:
        _results(futures, None)
        raise
    return _results(futures, first)


class _ShardedFeatures(torch.autograd.Function):
    """The features of each shard computed on its own thread; their graphs backpropagated likewise, the parameters'
    gradients summed in shard order."""

    @staticmethod
    def forward(ctx: Any, extractor: ShardedExtractor, observations: torch.Tensor,
                *parameters: torch.Tensor) -> torch.Tensor:
        pool = extractor._shard_pool
        assert pool is not None
        outputs = _computed(pool, lambda shard: _withGradients(extractor, shard),
                            observations.tensor_split(extractor._shards))
        ctx.shard_outputs, ctx.shard_pool, ctx.shard_parameters = outputs, pool, parameters
        return torch.cat([output.detach() for output in outputs])

    @staticmethod
    def backward(ctx: Any, gradient: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        outputs, parameters = ctx.shard_outputs, ctx.shard_parameters
        if outputs is None:
            raise RuntimeError("a sharded features extractor's forward pass was backpropagated twice")
        ctx.shard_outputs = None
        pieces = gradient.split([output.shape[0] for output in outputs])
        shards = _computed(ctx.shard_pool, lambda pair: torch.autograd.grad(pair[0], parameters, pair[1]),
                           list(zip(outputs, pieces)))
        summed = list(shards[0])
        for shard in shards[1:]:
            summed = [total + part for total, part in zip(summed, shard)]
        return (None, None, *summed)


@contextlib.contextmanager
def shardedUpdates(module: nn.Module, shards: int, optimizers: Iterable[Any] = ()) -> Iterator[None]:
    """
    Shard the training minibatches of every :class:`ShardedExtractor` in ``module`` across ``shards`` threads, with
    torch's threads at one (each shard computes on one) and ``optimizers`` stepping fused (``fusedSteps``); nothing
    changes for fewer than 2 shards or without such an extractor. Torch's thread count, the extractors and the
    optimizers are put back after, the shards' threads stopped.

    :param module: a policy (or any module holding features extractors)
    :param shards: the threads to shard across: the run's torch threads
    :param optimizers: the optimizers of ``module``'s parameters (hooked by ``multiTensorSteps``)
    """
    extractors = [part for part in module.modules() if isinstance(part, ShardedExtractor)]
    if shards < 2 or not extractors:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # before the pool's threads start: each takes torch's count when it first computes
    pool = ThreadPoolExecutor(shards - 1, thread_name_prefix="features-shard")
    for extractor in extractors:
        extractor._shard_pool, extractor._shards = pool, shards
    try:
        with fusedSteps(optimizers):
            yield
    finally:
        for extractor in extractors:
            del extractor._shard_pool, extractor._shards
        pool.shutdown()
        torch.set_num_threads(threads)
