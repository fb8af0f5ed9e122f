"""Words in messages built around a name: the indefinite article a name takes (``an OmnirobotEnv-v0 run``), a count
and its noun (``1 run``, ``2 runs``); the short reprs of the Python API's result objects (a notebook shows what they
hold at a glance, not every setting)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Vowel letters read with a consonant sound ("a unit", "a one-hot") and a digit read with a vowel sound ("an 8x8")
_CONSONANT_SOUNDS = ("uni", "use", "usu", "one")


def withArticle(name: object) -> str:
    """
    :param name: an env id, an algorithm, a model or a type name, possibly quoted (``'atc'``)
    :return: ``name`` after the indefinite article of its sound, as spelt: ``an OmnirobotEnv-v0``, ``an a2c``,
        ``an int``, ``a MobileRobotGymEnv-v0``, ``a 'vae'``, ``a unit``, ``an 8x8``
    """
    text = str(name)
    word = text.lstrip("'\"`").lower()
    vowel = word[:1] in ("a", "e", "i", "o", "u", "8") and not word.startswith(_CONSONANT_SOUNDS)
    return f"{'an' if vowel else 'a'} {text}"


def counted(number: int, noun: str) -> str:
    """:return: ``1 run``, ``2 runs``: the number and the noun, plural unless the number is 1"""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def shortRepr(name: str, items: Iterable[tuple[str, Any]]) -> str:
    """
    :param name: the object's type name
    :param items: (field, value) pairs to show, in order; a value of type :class:`Shown` is written as its text
    :return: ``name(field=value!r, ...)``
    """
    return f"{name}({', '.join(f'{field}={value!r}' for field, value in items)})"


class Shown(str):
    """A text written as it is by :func:`shortRepr` (a summary such as ``<12 rows>``), not quoted as a string."""

    def __repr__(self) -> str:
        return str(self)
