"""What a saved SB3 model's zip holds, read without building the model: its "data" member (:func:`readModelData`), the
hyperparameters found there (:func:`hyperparamsInData`, constant schedules such as clip_range included), and the
learning-rate schedule of ``--lr-schedule linear`` (:class:`LinearSchedule`), an object whose start that member
records.

Invariant: :class:`LinearSchedule` stays at this module path: a saved model pickles the schedule by reference to it,
so moving it would make those models unloadable.
"""
from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Callable
from typing import Any


class LinearSchedule:
    """
    A learning rate decaying linearly to 0 over training (SB3 passes the remaining progress, 1 -> 0). An object rather
    than a closure, so that a saved model's "data" records where it starts (``initial_value``, as SB3 writes an
    object's attributes beside its pickle): a continued model keeps its schedule and its records say so
    (:func:`savedLinearStart`).
    """

    def __init__(self, initial_value: float) -> None:
        self.initial_value = float(initial_value)

    def __call__(self, progress_remaining: float) -> float:
        return progress_remaining * self.initial_value


def linearSchedule(initial_value: float) -> Callable[[float], float]:
    """
    :param initial_value: learning rate at the start
    :return: a schedule decaying linearly to 0 over training (a :class:`LinearSchedule`)
    """
    return LinearSchedule(initial_value)


def savedLinearStart(value: Any) -> float | None:
    """
    :param value: a hyperparameter as a model zip's "data" member holds it (:func:`readModelData`)
    :return: the start of a :class:`LinearSchedule` saved there, None for anything else (a number; an older save's
        schedule, a closure whose start the data does not record)
    """
    if isinstance(value, dict) and str(value.get(":type:", "")).endswith(f".{LinearSchedule.__name__}'>"):
        start = value.get("initial_value")
        return float(start) if isinstance(start, (int, float)) and not isinstance(start, bool) else None
    return None


# How SB3 writes a constant schedule (clip_range, clip_range_vf) beside its pickle in a model zip's "data" member:
# FloatSchedule's ``value_schedule`` attribute as its repr
_CONSTANT_SCHEDULE = re.compile(r"^ConstantSchedule\(val=(?P<value>[^()]+)\)$")


def savedConstant(value: Any) -> float | None:
    """
    :param value: a hyperparameter as a model zip's "data" member holds it (:func:`readModelData`)
    :return: the value of a constant schedule SB3 saved there (``FloatSchedule(ConstantSchedule(val=0.1))``, which
        it builds from a number such as ppo2's ``clip_range``), None for anything else (a schedule that changes)
    """
    if not (isinstance(value, dict) and str(value.get(":type:", "")).endswith(".FloatSchedule'>")):
        return None
    match = _CONSTANT_SCHEDULE.match(str(value.get("value_schedule", "")))
    try:
        return float(match["value"]) if match else None
    except ValueError:
        return None


def hyperparamsInData(data: dict[str, Any], names: Any, parse: Any) -> dict[str, Any]:
    """
    :param data: a model zip's "data" member (:func:`readModelData`)
    :param names: the hyperparameters to read
    :param parse: ``parse({name: text}) -> {name: value}``, the class's ``parserHyperParam``
    :return: those of them the data holds as plain values, read as the flags read them (the learning rate of a
        :class:`LinearSchedule` as its start, a constant schedule as its value: :func:`savedConstant`); one SB3 keeps
        as another serialised object (a schedule that changes, train_freq's tuple) is left out
    """
    saved: dict[str, Any] = {}
    for name in names:
        value = data.get(name, ...)
        if name == "learning_rate" and (start := savedLinearStart(value)) is not None:
            value = start  # a LinearSchedule: the rate it starts from
        elif (constant := savedConstant(value)) is not None:
            value = constant  # a number SB3 keeps as a constant schedule (clip_range)
        if value is None:
            text = "none"
        elif isinstance(value, float):
            text = repr(value)
        elif isinstance(value, (bool, int, str)):
            text = str(value)
        else:  # absent, or a serialised object
            continue
        try:
            saved[name] = parse({name: text})[name]
        except (ValueError, KeyError):  # not a value this hyperparameter takes (None where none is allowed)
            continue
    return saved


def readModelData(load_path: str) -> dict[str, Any]:
    """
    :param load_path: an SB3 model zip
    :return: its "data" member (JSON: the model's attributes)
    :raises ValueError: not a saved model
    """
    try:
        with zipfile.ZipFile(load_path) as archive:
            return json.loads(archive.read("data"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError(f"{load_path} is not a saved model ({error})") from None
