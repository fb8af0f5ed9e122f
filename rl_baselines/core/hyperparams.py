"""The hyperparameter spec: each hyperparameter of an algorithm declared once, with its default, type, allowed values
and search range.

An algorithm lists ``HYPERPARAMS = {name: Hyperparam(...)}``; the functions below (which
:class:`rl_baselines.core.base.BaseRLObject` offers as thin classmethods of the same names, so that an algorithm
overrides one and the others call its override) derive everything else from it, for every algorithm alike
(Stable-Baselines3-backed or written here): the ``--name`` flags (typed, range-checked, booleans as switches,
strings with their choices), the types and checks of ``--hyperparam NAME:VALUE`` and ``--hyperparam-file``, the
defaults (``DEFAULT_HYPERPARAMS``), the allowed values (``HYPERPARAM_CHOICES`` / ``HYPERPARAM_BOUNDS``), the search
space of ``hyperparam_search`` (``getOptParam``) and the values a run uses (``hyperparamsFromArgs``).
Plugins written before the spec (``DEFAULT_HYPERPARAMS`` with ``HYPERPARAM_CHOICES``, ``HYPERPARAM_BOUNDS`` and
``getOptParam``) are read through the same spec (:meth:`BaseRLObject.hyperparamSpec`); every built-in algorithm
declares ``HYPERPARAMS``.

A hyperparameter's type is its default's: ``bool``, ``int``, ``float``, ``str``, or a ``str`` subclass whose
constructor checks a value and raises ``argparse.ArgumentTypeError`` (a value with a syntax of its own, such as
sac's ``ent_coef``: ``auto``, ``auto_0.1`` or a number; :class:`NoneOrPositive`: ``none`` or a positive number).

Invariant: a declared default is of one of those types and lies inside its bounds and choices, and a numeric
search range inside its bounds, a log-scale one above 0 (checked when the spec is built, so a wrong declaration
fails at import, not in a user's run).
"""
from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from srl_toolbox.cli import MAX_COUNT, UsageError
from srl_toolbox.text import withArticle

# The declarations of hyperparameters written before HYPERPARAMS (still read, for plugins written then).
OLDER_DECLARATIONS = ("DEFAULT_HYPERPARAMS", "HYPERPARAM_CHOICES", "HYPERPARAM_BOUNDS", "getOptParam")


@dataclass(frozen=True)
class Interval:
    """
    Allowed values of a numeric hyperparameter (a plain ``(low, high)`` tuple in HYPERPARAM_BOUNDS is a closed one).

    :param low: lower bound, None for none
    :param high: upper bound, None for none
    :param low_open: the lower bound itself is excluded
    :param high_open: the upper bound itself is excluded
    :param infinite: +inf is a setting (a clipping norm: no clipping), where there is no upper bound; NaN never is
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    infinite: bool = False

    def __contains__(self, value: Any) -> bool:
        if isinstance(value, float) and math.isnan(value):  # (it compares False both ways)
            return False
        if isinstance(value, float) and math.isinf(value) and not (self.infinite and self.high is None and value > 0):
            return False
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
# A gradient clipping norm: > 0, inf for none (torch's clip_grad_norm_ reads it so)
CLIP_NORM = Interval(0, None, low_open=True, infinite=True)
NON_NEGATIVE = Interval(0)
DISCOUNT = Interval(0, 1, low_open=True)  # (0, 1]
FRACTION = Interval(0, 1, low_open=True)  # (0, 1]
# The sizes of a network's layers, of a distribution's quantiles or of a population: far above any useful value, below
# one that fills a machine's memory while the model is built (a typo's 1e9 is then one line, not an allocator error)
LAYER_UNITS = Interval(1, 4096)
POPULATION = Interval(1, 10_000)


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
    :param pixel_default: the default of a run from raw pixels (``--srl-model raw_pixels``, not augmented), of the
        default's type; None: the same as ``default``. The train command records it as the flag
        (:func:`pixelDefaultFlags`).
    """

    default: Any
    help: str = ""
    bounds: Interval | tuple[float | None, float | None] | None = None
    choices: tuple[Any, ...] | None = None
    search: tuple | list | None = None
    pixel_default: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.default, (bool, int, float, str)):  # (bool is an int: listed for the message)
            raise ValueError(f"Hyperparam default {self.default!r} is {withArticle(type(self.default).__name__)}; a "
                             "hyperparameter's type is its default's: bool, int, float, str or a str subclass")
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
        problem = self.problem(self.default)
        if problem is not None:
            raise ValueError(f"Hyperparam default {self.default!r} {problem}")
        if self.pixel_default is not None:
            if type(self.pixel_default) is not type(self.default):
                raise ValueError(f"Hyperparam pixel default {self.pixel_default!r} is not a "
                                 f"{type(self.default).__name__} like the default {self.default!r}")
            problem = self.problem(self.pixel_default)
            if problem is not None:
                raise ValueError(f"Hyperparam pixel default {self.pixel_default!r} {problem}")
        if isinstance(self.search, tuple):
            if len(self.search) not in (2, 3) or (len(self.search) == 3 and self.search[2] != "log"):
                raise ValueError(f"Hyperparam search {self.search!r} is not (low, high) or (low, high, 'log')")
            for end in self.search[:2]:
                if self.problem(end) is not None:
                    raise ValueError(f"Hyperparam search range {self.search!r} leaves the bounds ({self.problem(end)})")
            low, high = self.search[:2]
            if isinstance(self.default, bool) or not isinstance(self.default, (int, float)):
                raise ValueError(f"Hyperparam search range {self.search!r} is for a number; the default "
                                 f"{self.default!r} is not one (give a list of values)")
            if not low < high:
                raise ValueError(f"Hyperparam search range {self.search!r}: low must be below high")
            if len(self.search) == 3 and not low > 0:
                raise ValueError(f"Hyperparam search range {self.search!r}: a log-scale range needs low > 0")
            if isinstance(self.default, int) and not all(float(end).is_integer() for end in (low, high)):
                raise ValueError(f"Hyperparam search range {self.search!r} of an integer hyperparameter must have "
                                 "integer ends")
        elif isinstance(self.search, list):
            for value in self.search:
                problem = self.problem(value)
                if problem is not None:
                    raise ValueError(f"Hyperparam search value {value!r} {problem}")
        elif self.search is not None:
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
        values = {"help": "", "bounds": None, "choices": None, "search": None, "pixel_default": None, **fields,
                  "default": default}
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
            finite = isinstance(value, float) and not math.isfinite(value)
            return f"must be {'a finite number ' if finite else ''}{interval}"
        if interval is None and isinstance(value, float) and not math.isfinite(value):  # NaN or inf, even unbounded
            return "must be a finite number"
        return None

    def optParam(self) -> tuple | None:
        """:return: the search space entry in ``getOptParam`` form, None when not searched"""
        if self.search is None:
            return None
        if isinstance(self.search, list):
            return (list, list(self.search))
        kind = int if self.kind is int else float
        return (kind, tuple(self.search[:2]), *self.search[2:])


class NoneOrPositive(str):
    """
    A hyperparameter that is off (``none``) or a positive number, as SB3's ``clip_range_vf`` and ``target_kl`` (None
    or a float there). A str, so that the flag, args.json and hyperparams.yaml keep it as written; :func:`plainValue`
    gives the library its value. YAML's nulls (``null``, ``~``), which hyperparams.yaml writes, read as ``none`` on
    the command line too.
    """

    METAVAR = "none|FLOAT"

    def __new__(cls, raw: Any) -> NoneOrPositive:
        text = "none" if raw is None else str(raw).strip()
        if text.lower() in ("none", "null", "~"):
            return super().__new__(cls, "none")
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number > 0):
            raise argparse.ArgumentTypeError(f"{raw!r} is not none or a positive number")
        return super().__new__(cls, repr(number))

    @property
    def number(self) -> float | None:
        """The value: None for ``none``, else the number."""
        return None if self == "none" else float(self)


def plainValue(value: Any) -> Any:
    """:return: a hyperparameter's value as the library takes it (a :class:`NoneOrPositive` as None or a float)"""
    return value.number if isinstance(value, NoneOrPositive) else value


def plainValues(values: dict[str, Any]) -> dict[str, Any]:
    """:return: hyperparameters by name, each as the library takes it (:func:`plainValue`): SB3 keywords"""
    return {name: plainValue(value) for name, value in values.items()}


def pixelDefaultFlags(algo_class: type, srl_model: str, flags: dict[str, Any],
                      given: Iterable[str] = (), augment: str = "none") -> dict[str, Any]:
    """
    :param algo_class: an algorithm class
    :param srl_model: the run's observation
    :param flags: the run's settings by name (its ``hp_<name>`` flags, None where not given)
    :param given: the names ``--hyperparam`` or ``--hyperparam-file`` give
    :param augment: the run's ``--augment`` (the raw-pixel defaults hold for the images as rendered only: they were
        measured there, and a run whose losses see augmented views keeps the defaults: the class's
        ``lossesSeeAugmentedViews`` of ``flags`` and ``augment``)
    :return: the flags ``hp_<name>`` that the raw-pixel defaults set (none unless ``srl_model`` is raw_pixels and
        the losses see the images as rendered): each hyperparameter with a ``pixel_default`` that neither its flag nor
        ``given`` sets
    """
    if srl_model != "raw_pixels" or algo_class.lossesSeeAugmentedViews({**flags, "augment": augment}):
        return {}
    given = set(given)
    return {f"hp_{name}": hyperparam.pixel_default for name, hyperparam in algo_class.hyperparamSpec().items()
            if hyperparam.pixel_default is not None and flags.get(f"hp_{name}") is None and name not in given}


def hyperparamPairs(algo_class: type, pairs: Iterable[str], flag: str = "--hyperparam") -> dict[str, Any]:
    """
    :param algo_class: an algorithm class
    :param pairs: ``NAME:VALUE`` strings
    :param flag: the flag they came from (named in an error)
    :return: the typed, checked values by name (the class's ``parserHyperParam``)
    :raises UsageError: a malformed pair, a name the class does not have (the valid ones listed), or a bad value
        (one line)
    """
    values = {}
    for pair in pairs:
        name, separator, raw = pair.partition(":")
        if not separator:
            raise UsageError(f"{flag} {pair!r} is not NAME:VALUE")
        try:
            values.update(algo_class.parserHyperParam({name: raw}))
        except ValueError as error:
            raise UsageError(f"{flag} {pair!r}: {error}") from None
    return values


def givenFlags(args: Any, names: Iterable[str]) -> dict[str, Any]:
    """
    :param args: a run's settings (a RunSettings or TrainConfig; the Namespace of a plugin of API version 1)
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


# --- what an algorithm class derives from its spec (each called through the class, so overrides apply) ---------


def deriveDeclarations(algo_class: type) -> None:
    """
    Check a class's own ``HYPERPARAMS`` and set ``DEFAULT_HYPERPARAMS``, ``HYPERPARAM_CHOICES`` and
    ``HYPERPARAM_BOUNDS`` from it (called when the class is defined).

    :param algo_class: an algorithm class
    :raises TypeError: an entry is not a Hyperparam, or the class also declares the older way
    """
    spec = algo_class.__dict__.get("HYPERPARAMS")
    if not spec:
        return
    for name, hyperparam in spec.items():
        if not isinstance(hyperparam, Hyperparam):
            raise TypeError(f"{algo_class.__name__}.HYPERPARAMS[{name!r}] is {withArticle(type(hyperparam).__name__)}, "
                            f"not a rl_baselines.core.hyperparams.Hyperparam")
    both = [name for name in OLDER_DECLARATIONS[:3] if name in algo_class.__dict__]
    if both:
        raise TypeError(f"{algo_class.__name__} declares HYPERPARAMS and {', '.join(both)}: declare each "
                        f"hyperparameter once, in HYPERPARAMS (the others are derived from it)")
    algo_class.DEFAULT_HYPERPARAMS = {name: h.default for name, h in spec.items()}
    algo_class.HYPERPARAM_CHOICES = {name: h.choices for name, h in spec.items() if h.choices is not None}
    algo_class.HYPERPARAM_BOUNDS = {name: h.interval for name, h in spec.items() if h.bounds is not None}


def declaresOldStyle(algo_class: type, base_class: type) -> bool:
    """
    :param algo_class: an algorithm class
    :param base_class: the contract's base class (where the search stops)
    :return: whether the class declares its hyperparameters the older way (a plugin of API version 1 may): the
        class, or a parent below the nearest one that declares ``HYPERPARAMS``, sets ``DEFAULT_HYPERPARAMS``,
        ``HYPERPARAM_CHOICES``, ``HYPERPARAM_BOUNDS`` or ``getOptParam`` itself
    """
    for klass in algo_class.__mro__:
        if klass is base_class:
            return False
        if klass.__dict__.get("HYPERPARAMS"):
            return False
        if any(name in klass.__dict__ for name in OLDER_DECLARATIONS):
            return True
    return False


def hyperparamSpec(algo_class: type) -> dict[str, Hyperparam]:
    """
    :param algo_class: an algorithm class
    :return: every hyperparameter with its default, allowed values and search range: ``HYPERPARAMS``, or for a
        class declared the older way, the view of its ``DEFAULT_HYPERPARAMS``, ``HYPERPARAM_CHOICES``,
        ``HYPERPARAM_BOUNDS`` and ``getOptParam`` (with the help of an inherited ``HYPERPARAMS`` entry of the same
        name)
    """
    if not algo_class.declaresOldStyle():
        return dict(algo_class.HYPERPARAMS)
    choices = getattr(algo_class, "HYPERPARAM_CHOICES", {}) or {}
    bounds = getattr(algo_class, "HYPERPARAM_BOUNDS", {}) or {}
    space = algo_class.getOptParam() or {}
    spec = {}
    for name, default in (getattr(algo_class, "DEFAULT_HYPERPARAMS", {}) or {}).items():
        search = space.get(name)
        if search is not None:
            search = list(search[1]) if search[0] is list else (*search[1], *search[2:])
        inherited = algo_class.HYPERPARAMS.get(name)
        spec[name] = Hyperparam.unchecked(default, help=inherited.help if inherited is not None else "",
                                          choices=choices.get(name), bounds=bounds.get(name), search=search)
    return spec


def searchSpace(spec: dict[str, Hyperparam]) -> dict[str, tuple] | None:
    """
    :param spec: a ``HYPERPARAMS`` mapping
    :return: the search space in ``getOptParam`` form (its ``search`` entries), None when nothing is searched
    """
    space = {name: h.optParam() for name, h in spec.items() if h.search is not None}
    return space or None


def addHyperparamArguments(algo_class: type, parser: argparse.ArgumentParser,
                           spec: dict[str, Hyperparam] | None = None, group: Any = None) -> argparse.ArgumentParser:
    """
    One flag per hyperparameter (``n_steps`` -> ``--n-steps``, stored as ``hp_n_steps``, None when not given):
    booleans are switches that also take a value (``--dueling``, ``--dueling false``), strings with choices list
    them, the others are typed and checked by the class's ``parserHyperParam`` when parsed (a bad value is a
    one-line usage error).

    :param algo_class: an algorithm class
    :param parser: the train command's parser
    :param spec: the hyperparameters (default: the class's ``hyperparamSpec()``)
    :param group: the argument group to add the flags to (default: a new one, "<NAME> hyperparameters")
    :return: the same parser
    """
    spec = algo_class.hyperparamSpec() if spec is None else spec
    title = getattr(algo_class, "NAME", "") or algo_class.__name__
    group = parser.add_argument_group(f"{title} hyperparameters (defaults in brackets)") if group is None else group
    for name, hyperparam in spec.items():
        flag, dest, default = f"--{name.replace('_', '-')}", f"hp_{name}", hyperparam.default
        described = f"{hyperparam.help} " if hyperparam.help else ""
        if isinstance(default, bool):
            group.add_argument(flag, dest=dest, type=strToBool, nargs="?", const=True, default=None,
                               metavar="BOOL", help=f"{described}switch; '{flag} false' turns it off [{default}]")
        elif isinstance(default, str) and hyperparam.choices is not None:
            group.add_argument(flag, dest=dest, choices=hyperparam.choices, default=None,
                               help=f"{described}[{default}]")
        else:
            pixel = hyperparam.pixel_default
            shown = default if pixel is None else f"{default}; raw_pixels: {pixel}"
            group.add_argument(flag, dest=dest, type=functools.partial(flagValue, algo_class, name), default=None,
                               metavar=getattr(type(default), "METAVAR", type(default).__name__.upper()),
                               help=f"{described}[{shown}]")
    return parser


def flagValue(algo_class: type, name: str, raw: str) -> Any:
    """
    argparse type of a hyperparameter's flag.

    :param algo_class: an algorithm class
    :param name: the hyperparameter
    :param raw: the command-line string
    :return: the typed, checked value
    :raises argparse.ArgumentTypeError: a bad value (one line)
    """
    try:
        return algo_class.checkHyperparam(name, algo_class.parserHyperParam({name: raw})[name])
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def checkHyperparam(algo_class: type, name: str, value: Any) -> Any:
    """
    :param algo_class: an algorithm class
    :param name: a hyperparameter
    :param value: its typed value
    :return: the value
    :raises ValueError: not one of its choices, or out of its bounds (one line)
    """
    hyperparam = algo_class.hyperparamSpec().get(name)
    problem = None if hyperparam is None else hyperparam.problem(value)
    if problem is not None:
        raise ValueError(f"hyperparameter {name!r} {problem}, got {value!r}")
    return value


def resolveHyperparams(algo_class: type, args: Any, train_kwargs: dict[str, Any] | None,
                       saved: dict[str, Any] | None = None) -> dict[str, Any]:
    """
    The hyperparameters a training run uses (the class's ``hyperparamsFromArgs``), checked together (its
    ``checkHyperparams``).

    :param algo_class: an algorithm class
    :param args: the run's settings (a RunSettings or TrainConfig; a plugin of API version 1 passes its
        Namespace): the ``hp_*`` flags are read from it
    :param train_kwargs: typed ``--hyperparam`` values
    :param saved: the hyperparameters of a model training continues from
    :return: every hyperparameter, typed
    :raises UsageError: they do not fit together (the train command cannot check this before the run folder
        exists: a continued model's saved values take part)
    """
    # (an override written for the older two-argument form is called as such when there is nothing saved)
    hyperparams = (algo_class.hyperparamsFromArgs(args, train_kwargs) if saved is None
                   else algo_class.hyperparamsFromArgs(args, train_kwargs, saved))
    try:
        algo_class.checkHyperparams(hyperparams)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return hyperparams


def hyperparamsFromArgs(algo_class: type, args: Any, train_kwargs: dict[str, Any] | None,
                        saved: dict[str, Any] | None = None) -> dict[str, Any]:
    """
    Which setting wins: the default, then the saved model's value (``saved``, when continuing one), then the
    flag, then ``--hyperparam`` (``train_kwargs``).

    :param algo_class: an algorithm class
    :param args: the run's settings (the ``hp_*`` flags of :func:`addHyperparamArguments`)
    :param train_kwargs: typed ``--hyperparam`` values
    :param saved: the hyperparameters of a model training continues from
    :return: every hyperparameter, typed
    """
    spec = algo_class.hyperparamSpec()
    hyperparams = {name: hyperparam.default for name, hyperparam in spec.items()}
    hyperparams.update(saved or {})
    for name, value in givenFlags(args, spec).items():
        kind = type(spec[name].default)  # (a flag of a str type, NoneOrPositive, read back from args.json: a str)
        hyperparams[name] = kind(value) if kind is not str and issubclass(kind, str) and type(value) is str else value
    hyperparams.update(train_kwargs or {})
    return hyperparams


def parserHyperParam(algo_class: type, hyperparams: dict[str, str]) -> dict[str, Any]:
    """
    Cast ``--hyperparam KEY:VALUE`` strings with the types of the class's ``getOptParam`` (a value of a searched
    list is taken as the list has it) and of the defaults, and check them against the spec's choices and bounds.

    :param algo_class: an algorithm class
    :param hyperparams: raw strings by name
    :return: typed values by name
    :raises ValueError: unknown name or a value of the wrong type
    """
    space = algo_class.getOptParam() or {}
    defaults = {name: hyperparam.default for name, hyperparam in algo_class.hyperparamSpec().items()}
    types = {name: spec[0] for name, spec in space.items()}
    for name, value in defaults.items():
        types.setdefault(name, type(value))
    parsed: dict[str, Any] = {}
    for name, raw in hyperparams.items():
        if name not in types:
            valid = ", ".join(sorted(types)) or "none"
            raise ValueError(f"unknown hyperparameter {name!r} for this algorithm; valid names: {valid}")
        if types[name] is list:
            parsed[name] = _castChoice(name, raw, space[name][1], defaults.get(name))
        else:
            parsed[name] = _castValue(name, raw, types[name])
    for name, value in parsed.items():  # choices and bounds of the spec (none for a class without them)
        algo_class.checkHyperparam(name, value)
    return parsed


def _castValue(name: str, raw: str, kind: Any) -> Any:
    if isinstance(kind, type) and issubclass(kind, str) and kind is not str:
        try:  # a str subclass whose constructor checks the value (see the module docstring)
            return kind(raw)
        except (argparse.ArgumentTypeError, ValueError) as error:
            raise ValueError(f"hyperparameter {name!r}: {error}") from None
    if kind is int and _tooLarge(raw):  # a typo such as 1e30: buffers of that many steps cannot be made
        raise ValueError(f"hyperparameter {name!r} {raw!r} is too large (at most {MAX_COUNT:.0e})")
    try:
        if kind is bool:
            if raw.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return raw.lower() in ("true", "1")
        if kind is int:
            value = float(raw)
            if not value.is_integer():
                raise ValueError
            return int(value)
        if kind is float:
            return float(raw)
        if kind is list or isinstance(kind, tuple):
            return raw
        return kind(raw)
    except ValueError:
        type_name = getattr(kind, "__name__", str(kind))
        article = "an" if type_name[:1] in "aeiou" else "a"
        raise ValueError(f"hyperparameter {name!r} needs {article} {type_name} value, got {raw!r}") from None


def _tooLarge(raw: str) -> bool:
    """:return: whether ``raw`` is a finite number beyond MAX_COUNT either way (what is not a number is refused as
    such by the cast)"""
    try:
        value = float(raw)
    except ValueError:
        return False
    return math.isfinite(value) and abs(value) > MAX_COUNT


def _castChoice(name: str, raw: str, choices: Any, default: Any) -> Any:
    """A categorical hyperparameter: the choice written as ``raw`` (typed as in the search space); a value off the
    list is accepted only for a numeric hyperparameter or one of a checking str type (the list is then just a search
    grid), as that type reads it."""
    for choice in choices:
        if raw == str(choice):
            return choice
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return _castValue(name, raw, type(default))
    if isinstance(default, str) and type(default) is not str:  # a checking str type: the list is a search grid
        return _castValue(name, raw, type(default))
    raise ValueError(f"hyperparameter {name!r} must be one of {', '.join(map(str, choices))}, got {raw!r}")


def strToBool(raw: str) -> bool:
    """
    argparse type: a boolean written true/false, 1/0 or yes/no.

    :param raw: the command-line string
    :return: the value
    """
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {raw!r}")


def normalisationRefusal(normalised: str | None, algo: str, hyperparams: dict[str, Any], num_cpu: int) -> str | None:
    """
    :param normalised: the samples the learner normalises its advantages over
        (``rl_baselines.rl_algorithm.sb3_base.StableBaselinesRLObject.NORMALISED_ADVANTAGES``)
    :param algo: the algorithm's name (for the message)
    :param hyperparams: the run's hyperparameters (n_steps, batch_size)
    :param num_cpu: the run's parallel envs (SB3's n_envs)
    :return: why a set of those samples would hold fewer than 2 (one line naming the value and the valid range), None
        when none does
    """
    if normalised is None or "n_steps" not in hyperparams:
        return None
    n_steps = int(hyperparams["n_steps"])
    total = n_steps * num_cpu
    over = "the rollout" if normalised == "rollout" else "each minibatch"
    why = f"{algo} normalises its advantages over {over}, which needs at least 2 samples"
    if total < 2:
        return (f"n_steps {n_steps} x --num-cpu {num_cpu} = {total} sample per rollout: {why}; valid: n_steps >= 2 "
                f"(or --num-cpu >= 2)")
    batch_size = int(hyperparams.get("batch_size", total))  # (>= 2 where minibatches are: the spec's bounds)
    if normalised == "every_minibatch" and batch_size < total and total % batch_size == 1:
        return (f"batch_size {batch_size} leaves a last minibatch of 1 sample of the n_steps {n_steps} x --num-cpu "
                f"{num_cpu} = {total} per rollout: {why}; valid: a batch_size >= 2 that leaves no 1-sample remainder "
                f"of {total} (such as {total})")
    return None
