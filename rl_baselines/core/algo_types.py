"""The kinds of algorithm and action an algorithm class declares (``AlgoType``, ``ActionType``). Standard library only:
the contract (core/base.py), the registry and the algorithms import it without importing one another."""
import enum


class AlgoType(enum.Enum):
    """What kind of learner an algorithm is."""

    REINFORCEMENT_LEARNING = 1
    EVOLUTION_STRATEGIES = 2
    OTHER = 3


class ActionType(enum.Enum):
    """The action spaces an algorithm can act in."""

    DISCRETE = 1
    CONTINUOUS = 2
