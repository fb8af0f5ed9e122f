"""registered_rl: every algorithm declared under the entry-point group ``srl_toolbox.rl_algorithms``.

The table keeps the old toolbox's shape, ``NAME: (CLASS, ALGO_TYPE, [ACTION_TYPES])``. Built-in algorithms are
declared in setup.py like any third-party plugin, so this module imports none of them by name. A plugin that fails
to import, is not a BaseRLObject, leaves an abstract method out, or was built for an API major version other than
1 (run through rl_baselines.core.plugin_v1) and 2, or declares version 2 with version 1's ``train``
(:func:`rl_baselines.core.plugin_v1.declaredVersionConflict`), is recorded in ``failed_plugins`` (name -> reason),
reported once as a warning, and skipped; the others still load. So is one with a hyperparameter whose flag is one of
the train command's own (``seed`` gives ``--seed``), or whose ``customArguments`` adds one of them or raises: the train
settings, in a higher layer, hand their flags down with :func:`skipClashingFlags` when they are imported, which every
command that builds a train parser does first; both tables are changed in place. A registered class that declares no
``NAME`` (the name its help and messages show) gets its entry point's name."""
from __future__ import annotations

import argparse
import inspect
from collections.abc import Collection
from typing import Any

from rl_baselines.core.algo_types import ActionType, AlgoType
from rl_baselines.core.base import BaseRLObject
from rl_baselines.core.plugin_v1 import SUPPORTED_API_VERSIONS, V2_TRAIN_ARGUMENTS, declaredVersionConflict, isV1
from srl_toolbox.cli import MAX_ENVS
from srl_toolbox.plugins import FOLDER_NAME, SkippedPluginWarning, apiMajor, loadPlugins, oneLine, warnSkipped

ENTRY_POINT_GROUP = "srl_toolbox.rl_algorithms"
# rl_zoo3's algorithm names that are another name here (the others, a2c, sac, qrdqn..., are the same)
RL_ZOO_ALGOS = {"ppo": "ppo2 here", "dqn": "deepq here (or qrdqn; SB3's own DQN is not offered)"}

__all__ = ["ActionType", "AlgoType", "ENTRY_POINT_GROUP", "PluginLoadWarning", "algoChoicesText", "defaultEnvs",
           "defaultEnvsText", "failed_plugins", "failedPluginsText", "loadRegisteredRL", "registered_rl",
           "skipClashingFlags", "supportingAlgorithms"]


class PluginLoadWarning(SkippedPluginWarning):
    """An algorithm plugin was skipped."""


def _refusal(plugin: Any) -> str | None:
    """:return: why ``plugin`` cannot be used, or None when it fits the contract."""
    if not (isinstance(plugin, type) and issubclass(plugin, BaseRLObject)):
        return f"{plugin!r} is not a subclass of rl_baselines.core.base.BaseRLObject"
    major = apiMajor(getattr(plugin, "API_VERSION", None))
    if major not in SUPPORTED_API_VERSIONS:
        return (f"built for API version {plugin.API_VERSION}, this srl-toolbox provides API versions "
                f"{' and '.join(map(str, SUPPORTED_API_VERSIONS))}")
    if inspect.isabstract(plugin):
        return f"{plugin.__name__} is abstract: it does not implement {', '.join(sorted(plugin.__abstractmethods__))}"
    if not isinstance(plugin.ALGO_TYPE, AlgoType):
        return f"ALGO_TYPE {plugin.ALGO_TYPE!r} is not an AlgoType"
    if not plugin.ACTION_TYPES or not all(isinstance(a, ActionType) for a in plugin.ACTION_TYPES):
        return f"ACTION_TYPES {plugin.ACTION_TYPES!r} is not a non-empty tuple of ActionType"
    envs = plugin.DEFAULT_ENVS
    if isinstance(envs, bool) or not isinstance(envs, int) or not 1 <= envs <= MAX_ENVS:
        return f"DEFAULT_ENVS {envs!r} is not a number of envs, 1..{MAX_ENVS}"
    conflict = declaredVersionConflict(plugin)
    if conflict is not None:
        return conflict
    if not isV1(plugin):  # (version 1's train goes through its adapter)
        try:  # the call training makes (rl_baselines.core.plugin_v1.trainAlgorithm)
            inspect.signature(plugin.train).bind(None, *V2_TRAIN_ARGUMENTS)
        except TypeError:
            return (f"{plugin.__name__}.train{inspect.signature(plugin.train)} does not take the version 2 arguments "
                    f"(self, {', '.join(V2_TRAIN_ARGUMENTS)})")
    return None


def loadRegisteredRL(warn: bool = True) -> tuple[dict[str, tuple[type[BaseRLObject], AlgoType, list[ActionType]]],
                                                 dict[str, str]]:
    """
    Scan the entry points and build the algorithm table.

    :param warn: emit one PluginLoadWarning per skipped plugin
    :return: (registered algorithms, skipped plugins with their reasons)
    """
    plugins, failures = loadPlugins(ENTRY_POINT_GROUP, _refusal, "algorithm", PluginLoadWarning, warn,
                                    name_pattern=FOLDER_NAME)
    _nameUnnamed(plugins)
    table = {name: (plugin, plugin.ALGO_TYPE, list(plugin.ACTION_TYPES)) for name, plugin in plugins.items()}
    return table, failures


def _nameUnnamed(plugins: dict[str, type[BaseRLObject]]) -> None:
    """Set ``NAME``, the name the help and messages show (the built-ins declare it), to the entry point's name on
    each class that has none (or an empty one) of its own nor inherits one a class declares (a subclass of a
    built-in keeps the built-in's)."""
    named: set[type] = set()
    for name, plugin in plugins.items():
        owner = next((klass for klass in plugin.__mro__ if "NAME" in vars(klass)), None)
        if not getattr(plugin, "NAME", "") or owner in named:
            plugin.NAME = name  # type: ignore[attr-defined]
            named.add(plugin)


def flagClashes(plugin: type[BaseRLObject], reserved: Collection[str]) -> str | None:
    """
    :param plugin: an algorithm class
    :param reserved: the train command's own option strings (``--seed``, ...)
    :return: why a hyperparameter's flag, or one its ``customArguments`` adds, cannot be added to the train parser
        (argparse would refuse it), or why customArguments fails; None when the parser builds
    """
    try:
        spec = plugin.hyperparamSpec()
    except Exception as error:  # noqa: BLE001 (a plugin's bug: skipped, as one that fails to import)
        return f"its hyperparameters cannot be read: {type(error).__name__}: {error}"
    clashing = [name for name in spec if f"--{name.replace('_', '-')}" in reserved]
    if clashing:
        flags = ", ".join(f"{name!r} (--{name.replace('_', '-')})" for name in clashing)
        return f"hyperparameter {flags} has the flag of one of the train command's own settings; rename it"
    parser = argparse.ArgumentParser(add_help=False)
    for option in sorted(reserved):
        parser.add_argument(option, dest=f"reserved{option}", help=argparse.SUPPRESS)
    try:
        plugin.customArguments(parser)
    except argparse.ArgumentError as error:
        added = error.argument_name or "a flag"
        return f"customArguments adds {added}, a flag of the train command or already added ({error.message}); " \
               "rename it"
    except Exception as error:  # noqa: BLE001 (a plugin's bug: skipped, as one that fails to import)
        return f"customArguments raises {type(error).__name__}: {error}"
    return None


def skipClashingFlags(reserved: Collection[str], warn: bool = True) -> dict[str, str]:
    """
    Skip each registered algorithm with a hyperparameter whose flag is one of ``reserved`` (argparse would refuse to
    build its train parser), as loading skips a broken plugin: removed from ``registered_rl``, kept with its reason
    in ``failed_plugins``, one PluginLoadWarning.

    :param reserved: the train command's own option strings
    :param warn: emit the warnings
    :return: the algorithms skipped now, with their reasons
    """
    skipped = {}
    for name, (plugin, _, _) in list(registered_rl.items()):
        reason = flagClashes(plugin, reserved)
        if reason is not None:
            del registered_rl[name]
            skipped[name] = failed_plugins[name] = f"{plugin.__module__}:{plugin.__qualname__}: {oneLine(reason)}"
    if warn:
        warnSkipped(ENTRY_POINT_GROUP, "algorithm", PluginLoadWarning, skipped)
    return skipped


def failedPluginsText() -> str:
    """:return: the end of an unknown-algorithm message, ``"; plugins that failed to load: a, b"`` ("" when none)"""
    return f"; plugins that failed to load: {', '.join(sorted(failed_plugins))}" if failed_plugins else ""


def unknownAlgoText(algo: str, default: bool = False, typed: bool = True) -> str:
    """
    :param algo: an algorithm name that is not registered
    :param default: it is the command's default, ``--algo`` left out (said when it is the one skipped)
    :param typed: the user typed the name (False: a run folder recorded it, so it is no rl_zoo3 name to translate:
        the run was trained here with an algorithm, a plugin's, that is no longer installed)
    :return: why it is not there, to follow its name in a refusal: why a plugin of that name was skipped, or for an
        rl_zoo3 name the name here (:data:`RL_ZOO_ALGOS`), in brackets; "" otherwise
    """
    if algo in failed_plugins:
        return f" ({'the default --algo; ' if default else ''}skipped: {failed_plugins[algo]})"
    return f" (rl_zoo3's {algo} is {RL_ZOO_ALGOS[algo]})" if typed and algo in RL_ZOO_ALGOS else ""


def algoChoicesText(algo: str, default: bool = False, typed: bool = True) -> str:
    """
    :param algo: an algorithm name that is not registered
    :param default: it is the command's default, ``--algo`` left out (said when it is the one skipped)
    :param typed: the user typed the name (see :func:`unknownAlgoText`)
    :return: the end of a message refusing it, after its name: :func:`unknownAlgoText`, the valid names and the
        plugins that failed to load (`` (skipped: R); valid choices: a, b; plugins that failed to load: c``)
    """
    return f"{unknownAlgoText(algo, default, typed)}; valid choices: {', '.join(registered_rl)}{failedPluginsText()}"


def defaultEnvs(algo: str, num_cpu: int | None = None) -> int:
    """
    :param algo: a registered algorithm
    :param num_cpu: the envs given (``--num-cpu``), None when left out
    :return: the envs its run steps together: those given, else the algorithm's ``DEFAULT_ENVS``
    """
    return int(num_cpu) if num_cpu is not None else registered_rl[algo][0].DEFAULT_ENVS


def defaultEnvsText(algo_names: Collection[str]) -> str:
    """
    :param algo_names: the algorithms a command offers
    :return: their default env counts for a help text: ``"ppo2 4, the others 1"`` (those of 1 not named)
    """
    several = [f"{name} {registered_rl[name][0].DEFAULT_ENVS}" for name in algo_names
               if name in registered_rl and registered_rl[name][0].DEFAULT_ENVS != 1]
    return ", ".join([*several, "the others 1"]) if several else "1"


def supportingAlgorithms(action_type: ActionType) -> list[str]:
    """
    :param action_type: discrete or continuous
    :return: the names of the registered algorithms that support it
    """
    return [name for name, (_, _, actions) in registered_rl.items() if action_type in actions]


registered_rl, failed_plugins = loadRegisteredRL()
