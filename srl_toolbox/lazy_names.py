"""A package's names that live in one of its modules and are imported on first use (PEP 562's module
``__getattr__``), so that importing another submodule (``python -m PACKAGE.COMMAND``) does not import that module.

Importing it leaves Python's global random generator as the caller had it: the libraries it imports may draw from it
at import time (rich, through SB3's progress bar, does), and ``random.seed(42); package.name(...)`` must keep the
caller's stream whether or not the names were loaded before.
"""
from __future__ import annotations

import importlib
import random
import sys
from collections.abc import Callable, Iterable
from typing import Any


def lazyNames(package: str, module: str, names: Iterable[str], package_globals: dict[str, Any]
              ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """
    :param package: the package's name (``rl_baselines``)
    :param module: the module holding the names (``rl_baselines.api``)
    :param names: the names served
    :param package_globals: the package's ``globals()``
    :return: the package's ``__getattr__`` and ``__dir__``
    """
    served = frozenset(names)

    def __getattr__(name: str) -> Any:  # noqa: N807 (PEP 562's name)
        """:return: the module's object of that name
        :raises AttributeError: not one of the names served"""
        if name not in served:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module not in sys.modules:
            state = random.getstate()
            try:
                importlib.import_module(module)
            finally:
                random.setstate(state)
        return getattr(sys.modules[module], name)

    def __dir__() -> list[str]:  # noqa: N807 (PEP 562's name)
        """:return: the package's attributes and the names served"""
        return sorted({*package_globals, *served})

    return __getattr__, __dir__
