"""The hyperparameter spec: each hyperparameter of an algorithm declared once, with its default, type, allowed values
and search range.

An algorithm lists ``HYPERPARAMS = {name: Hyperparam(...)}``; :class:`rl_baselines.core.base.BaseRLObject`
derives everything else from it, for every algorithm alike (Stable-Baselines3-backed or written here): the
``--name`` flags (typed, range-checked, booleans as switches, strings with their choices), the types and checks of
``--hyperparam NAME:VALUE`` and ``--hyperparam-file``, the defaults (``DEFAULT_HYPERPARAMS``), the allowed values
(``HYPERPARAM_CHOICES`` / ``HYPERPARAM_BOUNDS``) and the search space of ``hyperparam_search`` (``getOptParam``).
Plugins written before the spec (``DEFAULT_HYPERPARAMS`` with ``HYPERPARAM_CHOICES``, ``HYPERPARAM_BOUNDS`` and
``getOptParam``) are read through the same spec (:meth:`BaseRLObject.hyperparamSpec`); every built-in algorithm
declares ``HYPERPARAMS``.

A hyperparameter's type is its default's: ``bool``, ``int``, ``float``, ``str``, or a ``str`` subclass whose
constructor checks a value and raises ``argparse.ArgumentTypeError`` (a value with a syntax of its own, such as
sac's ``ent_coef``: ``auto``, ``auto_0.1`` or a number).

Invariant: a declared default lies inside its bounds and choices, and a numeric search range inside its bounds
(checked when the spec is built, so a wrong declaration fails at import, not in a user's run).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Interval:
    """
    Allowed values of a numeric hyperparameter (a plain ``(low, high)`` tuple in HYPERPARAM_BOUNDS is a closed one).

    :param low: lower bound, None for none
    :param high: upper bound, None for none
    :param low_open: the lower bound itself is excluded
    :param high_open: the upper bound itself is excluded
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, value: Any) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def __str__(self) -> str:
        if self.high is None:
            return f"{'>' if self.low_open else '>='} {self.low}"
        if self.low is None:
            return f"{'<' if self.high_open else '<='} {self.high}"
        return f"in {'(' if self.low_open else '['}{self.low}, {self.high}{')' if self.high_open else ']'}"


POSITIVE = Interval(0, None, low_open=True)
NON_NEGATIVE = Interval(0)
DISCOUNT = Interval(0, 1, low_open=True)  # (0, 1]
FRACTION = Interval(0, 1, low_open=True)  # (0, 1]


def asInterval(bounds: Interval | tuple[float | None, float | None] | None) -> Interval | None:
    """
    :param bounds: an Interval, an inclusive ``(low, high)`` tuple (None: no bound), or None
    :return: the Interval, None when there are no bounds
    """
    if bounds is None or isinstance(bounds, Interval):
        return bounds
    return Interval(*bounds)


@dataclass(frozen=True)
class Hyperparam:
    """
    One hyperparameter of an algorithm.

    :param default: the value when nothing is given; its type (bool, int, float, str, or a str subclass whose
        constructor checks a value) is the hyperparameter's
    :param help: one line for ``--algo NAME --help``
    :param bounds: allowed numeric values: an :class:`Interval` or an inclusive ``(low, high)`` tuple (None: none)
    :param choices: allowed values (strings: the flag lists them)
    :param search: the ``hyperparam_search`` space, None to leave it fixed: ``(low, high)`` or
        ``(low, high, "log")`` for a number (sampled as the default's type), or a list of values to choose from
    """

    default: Any
    help: str = ""
    bounds: Interval | tuple[float | None, float | None] | None = None
    choices: tuple[Any, ...] | None = None
    search: tuple | list | None = None

    def __post_init__(self) -> None:
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
        problem = self.problem(self.default)
        if problem is not None:
            raise ValueError(f"Hyperparam default {self.default!r} {problem}")
        if isinstance(self.search, tuple):
            if len(self.search) not in (2, 3) or (len(self.search) == 3 and self.search[2] != "log"):
                raise ValueError(f"Hyperparam search {self.search!r} is not (low, high) or (low, high, 'log')")
            for end in self.search[:2]:
                if self.problem(end) is not None:
                    raise ValueError(f"Hyperparam search range {self.search!r} leaves the bounds ({self.problem(end)})")
        elif self.search is not None and not isinstance(self.search, list):
            raise ValueError(f"Hyperparam search must be a (low, high[, 'log']) tuple or a list, not {self.search!r}")

    @classmethod
    def unchecked(cls, default: Any, **fields: Any) -> Hyperparam:
        """
        Build a spec entry without the declaration checks: the view of a class written before the spec, or a
        search range kept from then that touches an open bound (the search may then propose the bound itself,
        which the range check refuses: that trial fails).

        :param default: the default value
        :param fields: the other fields
        :return: the entry
        """
        entry = object.__new__(cls)
        values = {"help": "", "bounds": None, "choices": None, "search": None, **fields, "default": default}
        if values["choices"] is not None:
            values["choices"] = tuple(values["choices"])
        for name, value in values.items():
            object.__setattr__(entry, name, value)
        return entry

    @property
    def kind(self) -> type:
        """The hyperparameter's type: the default's."""
        return type(self.default)

    @property
    def interval(self) -> Interval | None:
        """The bounds as an Interval (None: unbounded)."""
        return asInterval(self.bounds)

    def problem(self, value: Any) -> str | None:
        """
        :param value: a typed value
        :return: why the value is not allowed ("must be ..."), None when it is
        """
        if self.choices is not None and value not in self.choices:
            return f"must be one of {', '.join(map(str, self.choices))}"
        interval = self.interval
        if interval is not None and not isinstance(value, str) and value not in interval:
            return f"must be {interval}"
        return None

    def optParam(self) -> tuple | None:
        """:return: the search space entry in ``getOptParam`` form, None when not searched"""
        if self.search is None:
            return None
        if isinstance(self.search, list):
            return (list, list(self.search))
        kind = int if self.kind is int else float
        return (kind, tuple(self.search[:2]), *self.search[2:])


def givenFlags(args: Any, names: Iterable[str]) -> dict[str, Any]:
    """
    :param args: a run's arguments (a Namespace or a TrainConfig)
    :param names: hyperparameter names
    :return: the values of their flags ``--<name>`` (``args.hp_<name>``) that were given; a flag the algorithm does
        not declare, or one left unset (None), is not given
    """
    given = {}
    for name in names:
        value = getattr(args, f"hp_{name}", None)  # the algorithm's own flag: present only if it declares it
        if value is not None:
            given[name] = value
    return given
