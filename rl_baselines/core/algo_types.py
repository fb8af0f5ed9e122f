"""The kinds of algorithm and action, kept apart from the registry so that base_classes can use them without a cycle."""
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
