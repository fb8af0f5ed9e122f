"""Loading classes declared under an entry-point group, skipping (and reporting) the ones that do not fit.

Shared by the algorithm registry (``srl_toolbox.rl_algorithms``) and the SRL model registry (``srl_toolbox.srl_models``):
both want the same behaviour, a broken plugin named with its reason and the others still loaded.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from stevedore import ExtensionManager


def apiMajor(version: Any) -> int | None:
    """
    :param version: a plugin's API_VERSION (int or "MAJOR.MINOR" string)
    :return: its major version, or None when it is not a version
    """
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return None


def loadPlugins(group: str, refusal: Callable[[Any], str | None], kind: str,
                warning_class: type[Warning] = UserWarning, warn: bool = True) -> tuple[dict[str, Any], dict[str, str]]:
    """
    Import every entry point of ``group``.

    :param group: the entry-point group
    :param refusal: returns why a loaded object cannot be used, or None when it fits the contract
    :param kind: what the plugins are, for the warnings ("algorithm", "SRL model")
    :param warning_class: category of the warning emitted per skipped plugin
    :param warn: emit one warning per skipped plugin
    :return: (name -> loaded object, sorted by name; name -> reason it was skipped)
    """
    failures: dict[str, str] = {}

    def onFailure(_manager: Any, entry_point: Any, error: BaseException) -> None:
        failures[entry_point.name] = f"{entry_point.value}: {type(error).__name__}: {error}"

    manager = ExtensionManager(group, invoke_on_load=False, on_load_failure_callback=onFailure)
    loaded: dict[str, Any] = {}
    for extension in manager:
        reason = refusal(extension.plugin)
        if reason is not None:
            failures[extension.name] = f"{extension.entry_point.value}: {reason}"
            continue
        loaded[extension.name] = extension.plugin
    if warn:
        for name, reason in sorted(failures.items()):
            # Located at the entry-point group, not at a source line: Python's default format then prints one
            # line ("<group>:0: <category>: skipped ..."), whether the registry is imported by a command or a script.
            warnings.warn_explicit(f"skipped {kind} plugin {name!r} ({reason})", warning_class, filename=group,
                                   lineno=0, module=group)
    return dict(sorted(loaded.items())), failures


def loadNamed(group: str, name: str) -> Any:
    """
    Import the one entry point ``name`` of ``group``: how a lower layer uses a service a higher layer provides
    without importing it (e.g. environments' dataset generator loading a trained agent through
    ``srl_toolbox.policy_loaders``).

    :param group: the entry-point group
    :param name: the entry point's name
    :return: the loaded object
    :raises LookupError: no such entry point, or it failed to import (one line, with the reason)
    """
    failures: dict[str, str] = {}

    def onFailure(_manager: Any, entry_point: Any, error: BaseException) -> None:
        failures[entry_point.name] = f"{entry_point.value}: {type(error).__name__}: {error}"

    manager = ExtensionManager(group, invoke_on_load=False, on_load_failure_callback=onFailure)
    for extension in manager:
        if extension.name == name:
            return extension.plugin
    if name in failures:
        raise LookupError(f"entry point {name!r} of {group} failed to load ({failures[name]})")
    raise LookupError(f"no entry point {name!r} in {group} (is srl-toolbox installed with pip install -e .?)")
