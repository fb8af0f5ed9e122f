"""The learner flags of the SB3-backed algorithms, declared once: ``--lr-schedule``, and for an algorithm that wraps
several learners (her, gail) one flag per hyperparameter of any of them, with the casts of its ``--hyperparam``
values.

Invariants: a learner hyperparameter's flag is typed and checked by the first learner that has it, as its
``--hyperparam`` value is; its default is None, so that the chosen learner's own default applies.
"""
from __future__ import annotations

import argparse
import functools
from typing import Any

from rl_baselines.core.base import BaseRLObject, strToBool
from rl_baselines.core.hyperparams import parserHyperParam as parseHyperparams


def addLrScheduleFlag(group: Any, default: str) -> None:
    """
    ``--lr-schedule`` of the SB3-backed algorithms (and of the learner of one that wraps several).

    :param group: the parser or argument group that takes it
    :param default: the algorithm's ``DEFAULT_LR_SCHEDULE``
    """
    group.add_argument("--lr-schedule", choices=["constant", "linear"], default=default,
                       help=f"learning-rate schedule [{default}]")


def addLearnerHyperparamFlags(parser: argparse.ArgumentParser, learners: dict[str, type[BaseRLObject]],
                              title: str, description: str | None = None) -> Any:
    """
    One flag per hyperparameter of the learners an algorithm wraps (her, gail), to ``hp_<name>`` with default None
    (the chosen learner's default applies). Each is typed and checked by the first learner that has it, as
    :func:`parseOwnOrLearnerHyperparams` does; its help lists the default of each learner that has it, or the one value
    when every learner has it with the same default.

    :param parser: the train command's parser
    :param learners: the learners, by the name the algorithm's learner flag takes
    :param title: the argument group's title
    :param description: the group's description (None: none)
    :return: the argument group, for the algorithm's further learner flags
    """
    group = parser.add_argument_group(title, description)
    for name, owners in learnerHyperparamTable(learners).items():
        default = owners[0][1]
        kind = strToBool if isinstance(default, bool) else functools.partial(learners[owners[0][0]]._flagValue, name)
        defaults = ", ".join(f"{learner}: {value}" for learner, value in owners)
        if len(owners) == len(learners) and len({str(value) for _, value in owners}) == 1:
            defaults = str(default)  # the same for every learner
        group.add_argument(f"--{name.replace('_', '-')}", dest=f"hp_{name}", type=kind, default=None,
                           metavar=type(default).__name__.upper(), help=f"[{defaults}]")
    return group


def learnerHyperparamTable(learners: dict[str, type[BaseRLObject]]) -> dict[str, list[tuple[str, Any]]]:
    """
    :param learners: the learners an algorithm wraps (her, gail), by the name its flag takes
    :return: every learner hyperparameter, with the (learner name, default) of each learner that has it
    """
    table: dict[str, list[tuple[str, Any]]] = {}
    for learner_name, learner in learners.items():
        for name, default in learner.DEFAULT_HYPERPARAMS.items():
            table.setdefault(name, []).append((learner_name, default))
    return table


def parseOwnOrLearnerHyperparams(algo: type[BaseRLObject], own: Any, hyperparams: dict[str, str],
                                 learners: dict[str, type[BaseRLObject]]) -> dict[str, Any]:
    """
    Cast ``--hyperparam`` values of an algorithm that wraps learners: its own with its spec, the learners' with
    their class.

    :param algo: the wrapping class (its spec casts its own names)
    :param own: its own hyperparameter names
    :param hyperparams: name -> raw value
    :param learners: the learners, by name
    :return: name -> cast value
    :raises ValueError: a name neither it nor a learner has (one line, with the valid names)
    """
    table = learnerHyperparamTable(learners)
    parsed: dict[str, Any] = {}
    for name, raw in hyperparams.items():
        if name in own:
            parsed.update(parseHyperparams(algo, {name: raw}))
        elif name in table:
            parsed.update(learners[table[name][0][0]].parserHyperParam({name: raw}))
        else:
            valid = ", ".join(sorted({*own, *table}))
            raise ValueError(f"unknown hyperparameter {name!r} for {algo.NAME}; valid names: {valid}")
    return parsed
