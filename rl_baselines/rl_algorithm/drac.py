"""How ppo2's update learns from ``--augment``'s views (``--augment-loss``): DrAC's policy regulariser, or RAD.

- ``drac`` (the default; Raileanu et al. 2021, "Automatic Data Augmentation for Generalization in Reinforcement
  Learning"): PPO's policy and value losses stay on the observations as collected, and a regulariser asks the policy
  to act on an augmented view as it does on the view itself: ``DRAC_COEF * KL(pi(.|o) || pi(.|aug(o)))``, the first
  policy held fixed (no gradient), each image of a minibatch shifted by its own offset. DrAC's value regulariser,
  ``(V(aug(o)) - V(o))^2``, is left out: with it no measured run learned (docs/srl.md, "Augmented raw pixels under
  ppo2"; these tasks' returns are in the hundreds, unnormalised, unlike the paper's).
- ``rad`` (Laskin et al. 2020): every minibatch of the update is augmented, the policy and the value losses alike
  (augmented_buffers.AugmentedRolloutBuffer).

How the regulariser joins SB3's ``PPO.train`` without rewriting it (:class:`DrACRegulariser`): train calls the
policy's ``evaluate_actions`` once per minibatch, in training mode, and then the optimiser's ``zero_grad``,
``loss.backward()``, the gradient clipping and the step. The regulariser's ``evaluate_actions`` is SB3's, which
also evaluates the augmented view and keeps the regulariser of that minibatch; its ``zero_grad`` clears the
gradients as SB3's does and back-propagates the kept regulariser, so that ``loss.backward()`` adds the losses'
gradients to it: clipping and step see the gradient of ``loss + DRAC_COEF * regulariser``, DrAC's objective.

Invariants: the stored rollout is never augmented (the buffer is SB3's own); outside the update (acting,
evaluating, a policy in evaluation mode) ``evaluate_actions`` is SB3's alone; a regulariser is back-propagated at
most once, and only into the update of its own minibatch (one left by an update stopped early by ``target_kl`` is
replaced by the next minibatch's); the offsets are drawn from torch's global generator, as the RAD buffer's.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import torch
from torch.distributions import Bernoulli, Categorical, Distribution, Normal, kl_divergence

from rl_baselines.core.run_settings import RunSettings
from rl_baselines.rl_algorithm.augmented_buffers import augmentImages, checkAugmentable
from srl_models.augment import Augmentation
from srl_toolbox.text import withArticle

AUGMENT_LOSSES = ("drac", "rad")
DEFAULT_AUGMENT_LOSS = "drac"
DRAC_COEF = 0.1  # alpha_r, the paper's weight of the policy regulariser


def detachedDistribution(distribution: Distribution) -> Distribution:
    """
    :param distribution: the policy's distribution over actions (a torch distribution, or SB3's list of them for
        MultiDiscrete actions)
    :return: the same distribution, held fixed: no gradient flows into it
    :raises TypeError: a distribution SB3's PPO policies do not make
    """
    if isinstance(distribution, list):
        return [detachedDistribution(part) for part in distribution]
    if isinstance(distribution, Categorical):
        return Categorical(logits=distribution.logits.detach())
    if isinstance(distribution, Bernoulli):
        return Bernoulli(logits=distribution.logits.detach())
    if isinstance(distribution, Normal):
        return Normal(distribution.loc.detach(), distribution.scale.detach())
    raise TypeError(f"DrAC's regulariser has no rule for {withArticle(type(distribution).__name__)} policy")


def actionKL(target: Distribution, other: Distribution) -> torch.Tensor:
    """:return: KL(target || other) per sample, summed over the action's dimensions (and over the parts of a list)"""
    if isinstance(target, list):
        return sum(actionKL(part, other_part) for part, other_part in zip(target, other))
    divergence = kl_divergence(target, other)
    return divergence.sum(-1) if divergence.dim() > 1 else divergence


class DrACRegulariser:
    """
    DrAC's policy regulariser on an SB3 on-policy model with an actor-critic policy (see the module docstring).

    :param model: the model (PPO); its policy's ``evaluate_actions`` and its optimiser's ``zero_grad`` are replaced on
        that instance (attach again after the model or its optimiser is made anew)
    :param augmentation: the augmentation of the views (srl_models.augment.AUGMENTATIONS)
    :param coef: the regulariser's weight
    """

    def __init__(self, model: Any, augmentation: Augmentation, coef: float = DRAC_COEF) -> None:
        self.model = model
        self.augmentation = augmentation
        self.coef = coef
        self.pending: torch.Tensor | None = None
        policy = model.policy
        self._evaluate = policy.evaluate_actions
        self._zero_grad = policy.optimizer.zero_grad
        policy.evaluate_actions = self.evaluateActions
        policy.optimizer.zero_grad = self.zeroGrad

    def evaluateActions(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[Any, Any, Any]:
        """SB3's ``evaluate_actions``; in training mode it also keeps the minibatch's regulariser."""
        policy = self.model.policy
        values, log_prob, entropy = self._evaluate(obs, actions)
        if policy.training:
            # the distribution SB3 just evaluated (its action_dist holds the last one made), before the next forward
            target = detachedDistribution(policy.action_dist.distribution)
            augmented = policy.get_distribution(augmentImages(obs, self.augmentation)).distribution
            self.pending = actionKL(target, augmented).mean()
            self.model.logger.record_mean("train/drac_kl", self.pending.item())
        return values, log_prob, entropy

    def zeroGrad(self, *args: Any, **kwargs: Any) -> None:
        """The optimiser's ``zero_grad``, then the kept regulariser's gradient (weighted) back-propagated once."""
        self._zero_grad(*args, **kwargs)
        pending, self.pending = self.pending, None
        if pending is not None:
            (self.coef * pending).backward()


class AugmentLossChoice:
    """
    ``--augment-loss`` for an SB3 on-policy algorithm with an augmented rollout buffer (ppo2): a mixin placed before
    StableBaselinesRLObject, whose hooks it fills (the flag, its idle warning, the buffer, the regulariser).
    """

    @classmethod
    def customArguments(cls, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        """Also ``--augment-loss``."""
        parser = super().customArguments(parser)  # type: ignore[misc]
        parser.add_argument("--augment-loss", choices=AUGMENT_LOSSES, default=DEFAULT_AUGMENT_LOSS,
                            help="with --augment: how the update learns from the augmented views: drac (the losses "
                                 "on the images as collected, plus DrAC's policy regulariser, "
                                 f"{DRAC_COEF} x KL(pi(.|o) || pi(.|shifted o))) or rad (the policy and value losses "
                                 f"on the shifted views) [{DEFAULT_AUGMENT_LOSS}]")
        return parser

    @classmethod
    def idleOptions(cls, settings: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
        """Also ``--augment-loss`` without ``--augment``."""
        idle = dict(super().idleOptions(settings))  # type: ignore[misc]
        if "augment_loss" in settings and settings.get("augment", "none") == "none":
            idle["augment_loss"] = (DEFAULT_AUGMENT_LOSS, "chooses how the update learns from --augment's views; "
                                    "it does nothing without --augment")
        return idle

    @classmethod
    def lossesSeeAugmentedViews(cls, settings: Mapping[str, Any]) -> bool:
        """:return: True for ``--augment`` with ``--augment-loss rad`` only (DrAC's losses see the images as
        collected)"""
        return (settings.get("augment", "none") != "none"
                and settings.get("augment_loss", DEFAULT_AUGMENT_LOSS) == "rad")

    @classmethod
    def bufferAugmentation(cls, settings: RunSettings) -> str:
        """:return: ``--augment`` under ``rad``; ``none`` under ``drac`` (SB3's own buffer)"""
        return settings.augment if cls.lossesSeeAugmentedViews(_augmentSettings(settings)) else "none"

    def prepareUpdates(self, settings: RunSettings) -> None:
        """Attaches DrAC's regulariser to the model under ``--augment`` with ``--augment-loss drac``."""
        if settings.augment != "none" and not self.lossesSeeAugmentedViews(_augmentSettings(settings)):
            model = self.model  # type: ignore[attr-defined]
            DrACRegulariser(model, checkAugmentable(model.observation_space, settings.augment))


def _augmentSettings(settings: RunSettings) -> dict[str, Any]:
    """:return: the run's ``augment`` and ``augment_loss``, by name"""
    return {"augment": settings.augment, "augment_loss": settings.option("augment_loss", DEFAULT_AUGMENT_LOSS)}
