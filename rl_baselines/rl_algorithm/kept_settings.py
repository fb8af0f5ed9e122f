"""The hyperparameters a continued model keeps: those that build its networks, such as the keywords of an SB3 policy
(``policy_kwargs``: qrdqn's ``n_quantiles``; ppo_lstm's ``lstm_hidden_size``, ``activation_fn``, ``ortho_init``) or
gail's discriminator size (``d_hidden``).

A new model is built with them (:func:`policyKeywords` moves a policy's into ``policy_kwargs``). A model continued
with ``--load-rl-model-path`` keeps those it was saved with: SB3 rebuilds its policy from the saved ``policy_kwargs``,
and a ``policy_kwargs`` given on loading replaces them whole (a pixel model's CNN features extractor and its optimiser
settings lost) and fails on weights of another shape. So a value given for a continued model other than its own is
refused in one line before anything is written (:func:`refuseOtherThanSaved`, from an algorithm's ``checkSettings``),
and one equal to it is left out of the load keywords (:func:`policyKeywords`).
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rl_baselines.core.hyperparams import Hyperparam, givenFlags
from rl_baselines.core.run_settings import RunSettings

# What a refusal says the model has where the algorithm gives no words of its own ({name}, {saved}: the model's value)
SAVED_WITH = "was saved with {name} {saved}, which a continued model keeps"


def continuedModel(settings: Any) -> str | None:
    """:param settings: a RunSettings or a TrainConfig; :return: the model file the run continues, None for none"""
    return settings.continue_from if isinstance(settings, RunSettings) else getattr(settings, "load_rl_model_path",
                                                                                     None)


def givenValues(settings: Any) -> dict[str, Any]:
    """:param settings: a RunSettings or a TrainConfig; :return: the typed ``--hyperparam-file``/``--hyperparam``
    values"""
    return dict((settings.hyperparam_overrides if isinstance(settings, RunSettings)
                 else getattr(settings, "hyperparams", None)) or {})


def refuseOtherThanSaved(settings: Any, names: Sequence[str], saved: Callable[[str], Mapping[str, Any] | None],
                         has: Mapping[str, str] | None = None) -> None:
    """
    Refuse, before anything is written, a value given now (the algorithm's own flag, ``--hyperparam``, the file) of a
    setting the continued model (``--load-rl-model-path``) keeps, other than the model's.

    :param settings: the run's settings (a RunSettings or a TrainConfig)
    :param names: the settings the model keeps
    :param saved: ``saved(load_path)``: the model's values by name (its class's ``savedHyperparams``); a value it
        lacks (a model of an older version), or a model it cannot read (ValueError: the train command reports an
        unusable model itself), is not checked
    :param has: by name, what the message says the model has (``{name}``, ``{saved}``), :data:`SAVED_WITH` for others
    :raises ValueError: one line naming the setting, the value given and where, the model's, and the valid choices
    """
    load_path = continuedModel(settings)
    values = givenValues(settings)
    given = {**givenFlags(settings, names), **{name: values[name] for name in names if name in values}}
    if not given or not load_path or not os.path.isfile(load_path):
        return
    try:
        kept = dict(saved(load_path) or {})
    except ValueError:
        return
    for name, value in given.items():
        if name in kept and value != kept[name]:
            source = "--hyperparam-file/--hyperparam" if name in values else f"--{name.replace('_', '-')}"
            words = (has or {}).get(name, SAVED_WITH).format(name=name, saved=_shown(kept[name]))
            raise ValueError(f"{name} {_shown(value)} ({source}): {load_path} {words}; valid: {_shown(kept[name])}, "
                             "or leave it out")


def _shown(value: Any) -> str:
    """:return: a setting's value as a flag writes it (``true``/``false`` for a bool, as ``--hyperparam`` takes)"""
    return str(value).lower() if isinstance(value, bool) else str(value)


def policyKeywords(settings: Any, kwargs: dict[str, Any], names: Sequence[str],
                   keyword: Callable[[str, Any], Any] = lambda _name, value: value) -> dict[str, Any]:
    """
    :param settings: the run's settings (``continue_from``: the model it continues, if any)
    :param kwargs: the model's keywords, the policy settings ``names`` among them (an algorithm's makeModelKwargs)
    :param names: the hyperparameters that are keywords of the policy
    :param keyword: ``keyword(name, value)``: the policy's keyword value of a setting (``relu``: ``nn.ReLU``)
    :return: ``kwargs`` with those settings moved into ``policy_kwargs`` (converted by ``keyword``), or, for a
        continued model, left out: it keeps its saved ``policy_kwargs``, which :func:`refuseOtherThanSaved` made sure
        any given value equals
    """
    kwargs = dict(kwargs)
    moved = {name: keyword(name, kwargs.pop(name)) for name in names if name in kwargs}
    if moved and not getattr(settings, "continue_from", None):
        kwargs["policy_kwargs"] = {**kwargs.get("policy_kwargs", {}), **moved}
    return kwargs


def savedPolicySettings(data: Mapping[str, Any], spec: Mapping[str, Hyperparam], parse: Callable,
                        keyword: Callable[[str, Any], Any]) -> dict[str, Any]:
    """
    :param data: a model zip's "data" member (JSON; SB3 keeps ``policy_kwargs`` as a pickled dict beside its
        JSON-readable items, an object such as a class as its ``str``)
    :param spec: the policy settings' declarations, by name
    :param parse: the class's ``parserHyperParam``
    :param keyword: as for :func:`policyKeywords`
    :return: the settings the saved ``policy_kwargs`` holds, as the flags give them (a choice whose keyword value the
        saved one is: ``<class '...ReLU'>`` is ``relu``); one absent or unreadable is left out (not checked)
    """
    policy_kwargs = data.get("policy_kwargs")
    policy_kwargs = policy_kwargs if isinstance(policy_kwargs, dict) else {}
    saved: dict[str, Any] = {}
    for name, hyperparam in spec.items():
        value = policy_kwargs.get(name)
        if value is None:
            continue
        if hyperparam.choices is not None:
            match = [choice for choice in hyperparam.choices if _jsonValue(keyword(name, choice)) == value]
            if match:
                saved[name] = match[0]
            continue
        try:
            saved[name] = parse({name: str(value)})[name]
        except (ValueError, KeyError):
            continue
    return saved


def _jsonValue(value: Any) -> Any:
    """:return: ``value`` as SB3 writes a policy keyword into a model zip's JSON: itself, or its ``str``"""
    try:
        json.dumps(value)
    except TypeError:
        return str(value)
    return value
