"""Loading classes declared under an entry-point group, skipping (and reporting) the ones that do not fit.

Shared by the three registries (algorithms ``srl_toolbox.rl_algorithms``, SRL models ``srl_toolbox.srl_models``,
environments ``srl_toolbox.environments``): a broken plugin is named with its reason in one warning and the others
still load. The algorithm and environment registries load their plugins when they are imported, the SRL model
registry when first used (its plugins may import the RL side, which imports it). The warning of a skipped plugin (a
:class:`SkippedPluginWarning`) is shown as one line, ``warning: <Category>: skipped ...``, whenever it is emitted:
importing this module wraps ``warnings.formatwarning`` for that category only (every other warning keeps its
format), and a command's own one-line formatter (``srl_toolbox.cli.runCommand``) keeps the category too
(:func:`srl_toolbox.errors.oneLineWarning`).
"""
from __future__ import annotations

import contextlib
import difflib
import importlib
import importlib.metadata
import io
import os
import re
import sys
import warnings
from collections.abc import Callable
from typing import Any

from stevedore import ExtensionManager

from srl_toolbox.errors import showOnOneLine

# The distribution that declares the built-in plugins (setup.py)
TOOLBOX_DISTRIBUTION = "srl-toolbox"
# The entry-point groups the toolbox reads (the registries' and the policy loaders'): a group of another package named
# nearly as one of them is taken for a misspelling of it (misnamedEntryPoints)
TOOLBOX_GROUPS = ("srl_toolbox.rl_algorithms", "srl_toolbox.srl_models", "srl_toolbox.environments",
                  "srl_toolbox.policy_loaders")
# What a plugin's name may be where it names folders and files (the algorithms' and SRL models' names are run folder
# levels and model file names: logs/<env>/<srl model>/<algo>/..., <algo>_model.zip), as every built-in name is
FOLDER_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
# How close (difflib's ratio) a group's name must be to one of TOOLBOX_GROUPS to be taken for its misspelling
MISNAMED_GROUP_RATIO = 0.8
# The entry-point groups whose skipped plugins this process, or one that started it, has warned about (comma
# separated, inherited by child processes): each is said once per command, not again by every process it starts
WARNED_GROUPS_VARIABLE = "SRL_TOOLBOX_WARNED_PLUGIN_GROUPS"
# The groups a process that started this one already reported (read at import, before this process adds its own)
INHERITED_WARNED_GROUPS = frozenset(filter(None, os.environ.get(WARNED_GROUPS_VARIABLE, "").split(",")))


class SkippedPluginWarning(UserWarning):
    """Base of the registries' warnings about a plugin that was skipped."""


showOnOneLine(SkippedPluginWarning, named=True)  # warning: <Category>: <message>


class _EscapingImport(Exception):
    """Carries an exception the entry-point loader lets through (``SystemExit``: a plugin module that calls
    ``sys.exit`` or ``parse_args()`` when imported; ``AssertionError``) to its failure callback, so that such a plugin
    is skipped like one that raises anything else, instead of ending or crashing every command."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class _Manager(ExtensionManager):
    """stevedore's ExtensionManager, reporting every exception of a plugin's import but KeyboardInterrupt to the
    failure callback (stevedore re-raises AssertionError and lets SystemExit through). What a plugin's import prints
    is passed on once it has loaded, and dropped when it fails (its one-line reason says why): a module that parses
    the command line when imported printed argparse's usage and error, as though the command had refused its own
    arguments."""

    def _load_one_plugin(self, *args: Any, **kwargs: Any) -> Any:
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                loaded = super()._load_one_plugin(*args, **kwargs)
        except (SystemExit, AssertionError) as error:
            raise _EscapingImport(error) from None
        sys.stdout.write(out.getvalue())
        sys.stderr.write(err.getvalue())
        return loaded


def _importFailure(error: BaseException) -> str:
    """:return: ``Type: message`` of a plugin's import failure, on one line (an exit says that the module exits)"""
    error = error.error if isinstance(error, _EscapingImport) else error
    if isinstance(error, SystemExit):
        return f"SystemExit: {oneLine(error) or 'None'} (the module exits when imported: sys.exit or parse_args()?)"
    return f"{type(error).__name__}: {oneLine(error)}"


def oneLine(text: str) -> str:
    """:return: ``text`` on one line (an exception's message may span several): its non-blank lines, stripped, joined
        with " / " """
    return " / ".join(line.strip() for line in str(text).splitlines() if line.strip())


def apiMajor(version: Any) -> int | None:
    """
    :param version: a plugin's API_VERSION (int or "MAJOR.MINOR" string)
    :return: its major version, or None when it is not a version
    """
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return None


def beingImported(module: str) -> bool:
    """:return: whether ``module`` is half-way through its import (in sys.modules, its code still running): an entry
    point in it cannot be loaded yet, and can be once that import has finished"""
    spec = getattr(sys.modules.get(module), "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def loadEntryPoint(value: str) -> Any:
    """
    :param value: an entry point's value, ``module:attribute`` (the attribute may be dotted)
    :return: the object it names, imported now
    :raises ImportError: the module cannot be imported; AttributeError: it has no such attribute
    """
    module, _, attribute = value.partition(":")
    target: Any = importlib.import_module(module)
    for name in filter(None, attribute.split(".")):
        target = getattr(target, name)
    return target


def misnamedEntryPoints(group: str) -> dict[str, str]:
    """
    The entry points declared under a misspelling of ``group`` (``srl_toolbox.rl_algorithm``, ``srl-toolbox.envs``):
    a group whose name, in lower case with ``-`` read as ``_``, is not ``group`` but closer to it than to the other
    :data:`TOOLBOX_GROUPS`, by at least :data:`MISNAMED_GROUP_RATIO`. Nothing would ever load them.

    :param group: one of :data:`TOOLBOX_GROUPS`
    :return: name -> the reason such a plugin is skipped, naming its entry point and both groups
    """
    found: dict[str, str] = {}
    for entry_point in (point for distribution in importlib.metadata.distributions()
                        for point in distribution.entry_points):
        declared = entry_point.group
        if declared == group:
            continue
        closest = difflib.get_close_matches(declared.lower().replace("-", "_"), TOOLBOX_GROUPS, n=1,
                                            cutoff=MISNAMED_GROUP_RATIO)
        if closest == [group]:
            found.setdefault(entry_point.name, f"{entry_point.value}: declared under the entry-point group "
                                               f"{declared!r}, not {group!r} (rename the group and reinstall)")
    return found


def loadPlugins(group: str, refusal: Callable[[Any], str | None], kind: str,
                warning_class: type[Warning] = SkippedPluginWarning, warn: bool = True,
                deferred: dict[str, str] | None = None,
                name_pattern: re.Pattern[str] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """
    Import every entry point of ``group``.

    :param group: the entry-point group
    :param refusal: returns why a loaded object cannot be used, or None when it fits the contract
    :param kind: what the plugins are, for the warnings ("algorithm", "SRL model")
    :param warning_class: category of the warning emitted per skipped plugin
    :param warn: emit one warning per skipped plugin (unless this process or the one that started it already did for
        this group: :data:`WARNED_GROUPS_VARIABLE`)
    :param deferred: when given, receives name -> entry point value of the plugins whose module was still being
        imported (:func:`beingImported`: the plugin's own import started this loading, a circular import) instead of
        reporting them as skipped; the caller loads them later with :func:`loadEntryPoint`
    :param name_pattern: what a plugin's name must match in full (:data:`FOLDER_NAME`), else it is skipped, whatever
        it loads; None: any name
    :return: (name -> loaded object, sorted by name; name -> reason it was skipped); a name declared by two entry
        points keeps neither, also when one of them fails to load (which one the metadata lists first is an accident
        of the install)
    """
    failures: dict[str, str] = {}
    values: dict[str, list[str]] = {}  # name -> the entry points declaring it, loaded or not
    import_errors: dict[str, str] = {}

    def onFailure(_manager: Any, entry_point: Any, error: BaseException) -> None:
        if deferred is not None and beingImported(entry_point.module):
            deferred[entry_point.name] = entry_point.value
            return
        values.setdefault(entry_point.name, []).append(entry_point.value)
        message = _importFailure(error)
        import_errors[entry_point.name] = f"{entry_point.value} failed to load: {message}"
        failures[entry_point.name] = f"{entry_point.value}: {message}"

    manager = _Manager(group, invoke_on_load=False, on_load_failure_callback=onFailure)
    loaded: dict[str, Any] = {}
    for extension in manager:
        values.setdefault(extension.name, []).append(extension.entry_point.value)
        reason = refusal(extension.plugin) if name_pattern is None or name_pattern.fullmatch(extension.name) else (
            f"the name {extension.name!r} does not fit: {kind} names have lowercase letters, digits, '_' and '-' "
            "only, starting with a letter or a digit (they name the run folders and model files)")
        if reason is not None:
            failures[extension.name] = f"{extension.entry_point.value}: {oneLine(reason)}"
            continue
        loaded[extension.name] = extension.plugin
    for name, declared in values.items():
        if len(set(declared)) > 1:  # two packages claim the name (one that fails to load claims it too)
            loaded.pop(name, None)
            failed = f"; {import_errors[name]}" if name in import_errors else ""
            failures[name] = f"declared by {len(declared)} entry points ({', '.join(declared)}{failed}); " \
                             f"{_uninstallOne(group, name)}"
    for name, reason in misnamedEntryPoints(group).items():
        if name not in values and name not in (deferred or {}):  # declared under the right group too: that one
            failures[name] = reason
    # The processes a command starts (SubprocVecEnv's env workers and their forkserver, search workers, the train
    # processes of a sweep) load the plugins again: the command has already said which it skipped, once
    if warn and group not in os.environ.get(WARNED_GROUPS_VARIABLE, "").split(","):
        warnSkipped(group, kind, warning_class, failures)
    return dict(sorted(loaded.items())), failures


def _uninstallOne(group: str, name: str) -> str:
    """:return: what to do about ``name`` declared twice in ``group``: uninstall one of the distributions declaring
    it, the plugins' (those other than srl-toolbox) named"""
    owners = sorted({dist.metadata["Name"] for dist in importlib.metadata.distributions()
                     if any(entry.group == group and entry.name == name for entry in dist.entry_points)})
    plugins = [owner for owner in owners if owner != TOOLBOX_DISTRIBUTION] or owners
    if not plugins:
        return "uninstall one"
    return f"uninstall one of the distributions {', '.join(owners)}: pip uninstall {' or '.join(plugins)}"


def warnSkipped(group: str, kind: str, warning_class: type[Warning], failures: dict[str, str]) -> None:
    """
    One warning per skipped plugin, unless a process that started this one reported the group already
    (:data:`INHERITED_WARNED_GROUPS`); also how a registry reports a plugin it skips after loading (a check that
    needs a higher layer's knowledge, given to it later).

    :param group: the entry-point group
    :param kind: what the plugins are ("algorithm")
    :param warning_class: the warning's category
    :param failures: name -> reason of the plugins skipped
    """
    if not failures or group in INHERITED_WARNED_GROUPS:
        return
    warned = set(filter(None, os.environ.get(WARNED_GROUPS_VARIABLE, "").split(",")))
    os.environ[WARNED_GROUPS_VARIABLE] = ",".join(sorted(warned | {group}))
    for name, reason in sorted(failures.items()):
        # Located at the entry-point group, not at a source line (no file path in any format); shown as one line
        # "warning: <category>: skipped ..." (see the module docstring), by a command or a script alike.
        warnings.warn_explicit(f"skipped {kind} plugin {name!r} ({oneLine(reason)})", warning_class, filename=group,
                               lineno=0, module=group)


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
        failures[entry_point.name] = f"{entry_point.value}: {_importFailure(error)}"

    manager = _Manager(group, invoke_on_load=False, on_load_failure_callback=onFailure)
    for extension in manager:
        if extension.name == name:
            return extension.plugin
    if name in failures:
        raise LookupError(f"entry point {name!r} of {group} failed to load ({failures[name]})")
    raise LookupError(f"no entry point {name!r} in {group} (is srl-toolbox installed with pip install -e .?)")
