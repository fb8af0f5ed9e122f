"""Environments are found through the entry-point group ``srl_toolbox.environments`` and registered in gymnasium.

The entry point's name is the gymnasium id and its value the SRLGymEnv subclass, so a third-party package adds an
env with one line in its packaging metadata. ``import environments`` loads them all (as the algorithm and SRL model
registries do with theirs) and registers them in gymnasium, after which ``gymnasium.make("MobileRobotGymEnv-v0")``
works. A plugin that fails to import, is not an SRLGymEnv, was built for another API major version, has ``ground_truth``
in its ``SRL_MODES`` without the methods that compute it (:func:`missingGroundTruthMethods`), or whose id
gymnasium refuses (malformed, "Dot+Env-v0") is recorded in
``failed_env_plugins`` (id -> reason), reported once as an :class:`EnvPluginLoadWarning`, and skipped; the others
still load. A plugin whose own module is half-way through its import when the registry loads (the module imported
``environments`` first: a circular import) is registered in gymnasium by its entry point's string, which gymnasium
resolves at ``make``, and :func:`getEnvClass` loads (and checks) it when first asked.

Renderers: each env class names what may draw its images (``RENDERERS``) and what does when none is asked for
(``DEFAULT_RENDERER``): :func:`defaultRenderer` reads it, :func:`resolvedRenderer` turns a ``--renderer`` left out
(None) into it, :func:`rendererRefusal` says why an env cannot draw with a name and :func:`rendererKeywords` gives the
constructor keyword that makes it draw with one. :func:`envFlagRefusal` says why an env cannot do what an env flag
of train or the dataset generator asks (a second camera, ``--force-down``), and warns about a flag that does nothing
there (a random target, a shaped reward: :func:`envOffers`). :func:`groundTruthRefusal` says why an env cannot give
what needs its ground truth (a dataset, replay plots): it has none where ``SRL_MODES`` lacks ``ground_truth``.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from environments.srl_env import REFERENCE_RENDERER, RENDERERS, SRLGymEnv
from srl_toolbox.errors import UsageWarning
from srl_toolbox.plugins import SkippedPluginWarning, apiMajor, loadEntryPoint, loadPlugins, oneLine, warnSkipped

ENTRY_POINT_GROUP = "srl_toolbox.environments"

# id -> entry point ("module:Class") of every env that loaded
registered_env: dict[str, str] = {}
# id -> why the plugin was skipped
failed_env_plugins: dict[str, str] = {}
_classes: dict[str, type[SRLGymEnv]] = {}
# id -> entry point of the plugins whose module was still being imported when the registry loaded (loaded when asked)
_deferred: dict[str, str] = {}


class EnvPluginLoadWarning(SkippedPluginWarning):
    """An environment plugin was skipped."""


def _refusal(plugin: Any) -> str | None:
    """:return: why ``plugin`` cannot be used, or None when it fits the contract."""
    if not (isinstance(plugin, type) and issubclass(plugin, SRLGymEnv)):
        return f"{plugin!r} is not a subclass of environments.srl_env.SRLGymEnv"
    if apiMajor(getattr(plugin, "API_VERSION", None)) != SRLGymEnv.API_VERSION:
        return (f"built for API version {plugin.API_VERSION}, this srl-toolbox provides API version "
                f"{SRLGymEnv.API_VERSION}")
    missing = missingGroundTruthMethods(plugin)
    if missing:
        return (f"{plugin.__name__} has ground_truth in its SRL_MODES ({', '.join(plugin.SRL_MODES)}) but does not "
                f"implement {', '.join(missing)}: implement them, or leave ground_truth out of SRL_MODES")
    return None


def missingGroundTruthMethods(env_class: type[SRLGymEnv]) -> list[str]:
    """
    :param env_class: an SRLGymEnv subclass
    :return: the methods the ground truth needs that the class leaves to SRLGymEnv, which raises NotImplementedError
        in them (``getGroundTruthDim``, ``getTargetPos``, and ``getRobotPos`` unless ``getGroundTruth`` is its own);
        none when ``ground_truth`` is not one of its ``SRL_MODES``
    """
    if "ground_truth" not in env_class.SRL_MODES:
        return []
    needed = ["getGroundTruthDim", "getTargetPos"]
    if env_class.getGroundTruth is SRLGymEnv.getGroundTruth:
        needed.append("getRobotPos")
    return sorted(name for name in needed if getattr(env_class, name) is getattr(SRLGymEnv, name))


def registerAll() -> dict[str, str]:
    """
    Load every env declared under the entry-point group and register it in gymnasium (idempotent: the plugins are
    loaded, and a broken one reported, once per process).

    :return: the mapping of env id to its "module:Class" entry point
    """
    if _classes or failed_env_plugins or _deferred:
        return registered_env
    deferred: dict[str, str] = {}
    plugins, failures = loadPlugins(ENTRY_POINT_GROUP, _refusal, "environment", EnvPluginLoadWarning,
                                    deferred=deferred)
    failed_env_plugins.update(failures)
    entry_points = {env_id: f"{env_class.__module__}:{env_class.__qualname__}" for env_id, env_class in plugins.items()}
    _classes.update(plugins)
    _deferred.update(deferred)
    malformed: dict[str, str] = {}
    for env_id, entry_point in sorted({**entry_points, **deferred}.items()):
        if env_id not in gym.registry:
            try:
                gym.register(id=env_id, entry_point=entry_point)
            except gym.error.Error as error:  # an id gymnasium cannot parse ("Dot+Env-v0"): skipped like the others
                malformed[env_id] = f"{entry_point}: {error}"
                _classes.pop(env_id, None)
                _deferred.pop(env_id, None)
                continue
        registered_env[env_id] = entry_point
    failed_env_plugins.update(malformed)
    warnSkipped(ENTRY_POINT_GROUP, "environment", EnvPluginLoadWarning, malformed)
    return registered_env


def envChoicesText(env_id: str, default: str | None = None) -> str:
    """
    :param env_id: an id that is not registered
    :param default: the command's default ``--env`` when ``--env`` was left out (said when it is the one skipped),
        None when the id was given
    :return: the end of a message refusing it, after its name: why a skipped plugin of that id was skipped, the valid
        ids and the env plugins that failed to load (`` (skipped: R); valid choices: A, B; env plugins that failed to
        load: C``)
    """
    failed = f"; env plugins that failed to load: {', '.join(sorted(failed_env_plugins))}" if failed_env_plugins else ""
    skipped = ""
    if env_id in failed_env_plugins:
        skipped = f" ({'the default --env; ' if env_id == default else ''}skipped: {failed_env_plugins[env_id]})"
    return f"{skipped}; valid choices: {', '.join(sorted(registered_env))}{failed}"


def unknownEnvText(env_id: str, default: str | None = None) -> str:
    """
    :param env_id: the unknown id
    :param default: as :func:`envChoicesText` takes it
    :return: the one-line message of an unknown ``--env``: ``unknown --env 'ID'`` and :func:`envChoicesText`
    """
    return f"unknown --env {env_id!r}{envChoicesText(env_id, default)}"


def _loadDeferred(env_id: str) -> None:
    """
    Load a plugin deferred by :func:`registerAll` (its module has finished importing since) and check it as the
    others were: one that does not fit is unregistered and recorded in ``failed_env_plugins``.

    :param env_id: a deferred env id
    :raises KeyError: it does not fit the contract (the reason is in ``failed_env_plugins``)
    """
    entry_point = _deferred.pop(env_id)
    plugin = None
    try:
        plugin = loadEntryPoint(entry_point)
        reason = _refusal(plugin)
    except (ImportError, AttributeError) as error:
        reason = f"{type(error).__name__}: {error}"
    if reason is not None:
        failed_env_plugins[env_id] = f"{entry_point}: {oneLine(reason)}"
        warnings.warn_explicit(f"skipped environment plugin {env_id!r} ({failed_env_plugins[env_id]})",
                               EnvPluginLoadWarning, filename=ENTRY_POINT_GROUP, lineno=0, module=ENTRY_POINT_GROUP)
        registered_env.pop(env_id, None)
        gym.registry.pop(env_id, None)
        raise KeyError(env_id)
    _classes[env_id] = plugin


def getEnvClass(env_id: str) -> type[SRLGymEnv]:
    """
    :param env_id: a registered env id
    :return: the env's class
    :raises KeyError: the id is not registered
    """
    registerAll()
    if env_id in _deferred:
        _loadDeferred(env_id)
    return _classes[env_id]


def envsWhere(predicate: Callable[[type[SRLGymEnv]], bool]) -> list[str]:
    """
    :param predicate: a test of an env class
    :return: the registered env ids whose class passes it, sorted (for "envs that have it" in messages); a deferred
        plugin that turns out not to fit the contract is left out (its warning says why)
    """
    found = []
    for env_id in sorted(registered_env):  # (a copy: a deferred plugin that does not fit leaves registered_env)
        try:
            env_class = getEnvClass(env_id)
        except KeyError:
            continue
        if predicate(env_class):
            found.append(env_id)
    return found


def rendererRefusal(renderer: str, env_id: str) -> str | None:
    """
    :param renderer: a renderer name (``--renderer``)
    :param env_id: a registered env id
    :return: why the env cannot draw its images with it (one line, naming the env's renderers and the envs that
        have this one), None when it can:
        the reference, TinyRenderer, stands for every env's own renderer; another is for the envs whose RENDERERS
        list it
    """
    if renderer == REFERENCE_RENDERER:
        return None
    if renderer not in RENDERERS:
        return f"unknown --renderer {renderer!r}; valid choices: {', '.join(RENDERERS)}"
    if renderer in getattr(getEnvClass(env_id), "RENDERERS", ()):
        return None
    own = [name for name in getattr(getEnvClass(env_id), "RENDERERS", ()) if name != REFERENCE_RENDERER]
    having = envsWhere(lambda env_class: renderer in getattr(env_class, "RENDERERS", ()))
    return (f"--renderer {renderer}: {env_id} cannot draw with it; valid for {env_id}: "
            f"{', '.join([REFERENCE_RENDERER, *own])} (envs with {renderer}: {', '.join(having) or 'none installed'})")


def envFlagRefusal(env_id: str, *, fpv: bool = False, multi_view: bool = False, force_down: bool = False,
                   random_target: bool = False, shape_reward: bool = False, pixels: bool = True,
                   action_joints: bool = False, img_shape: Sequence[int] | None = None) -> str | None:
    """
    :param env_id: a registered env id
    :param fpv: ``--fpv`` given (and likewise the others: ``--multi-view``, ``--force-down``, ``-r``,
        ``--shape-reward``)
    :param pixels: the observations are camera images (a second camera is warned about, once, where they are not:
        it changes nothing there, and a sweep's other cells may use it)
    :param action_joints: the actions move the arm's joints (``--force-down`` is warned about, once: it restricts
        effector moves only, and the commands leave it out of the env's keywords)
    :param img_shape: ``--img-shape`` given (None: left out); warned about, once, where the observations are not
        camera images (nothing is drawn at that size there)
    :return: why the env cannot do what a flag asks (one line naming the envs that can), None when it can; a random
        target or a shaped reward the env does not offer is one warning (the commands leave it out, see
        :func:`envOffers`): a sweep passes its flags to every env, and earlier runs recorded it
    """
    env_class = getEnvClass(env_id)
    cameras = (("--fpv", "fpv", fpv, "first-person camera"),
               ("--multi-view", "multi_view", multi_view, "second fixed camera"))
    for flag, keyword, asked, camera in cameras:
        if asked and not env_class.acceptsKeyword(keyword):
            having = envsWhere(lambda env_class: env_class.acceptsKeyword(keyword))
            # an env with the other flag's camera: that flag is named (a mobile robot's second camera is --fpv's)
            other = next((f" (its second camera: {other_flag})" for other_flag, other_keyword, *_ in cameras
                          if other_flag != flag and env_class.acceptsKeyword(other_keyword)), "")
            return f"{flag}: {env_id} has no {camera}{other}; envs with {flag}: {', '.join(having) or 'none'}"
        if asked and not pixels:
            warnings.warn(f"{flag} stacks a second camera's image; it does nothing for an observation that is not "
                          "camera images (--srl-model raw_pixels or a learned model)", UsageWarning, stacklevel=2)
    if img_shape is not None and not pixels:
        warnings.warn(f"--img-shape {' '.join(map(str, img_shape))} sizes camera images; it does nothing for an "
                      "observation that is not camera images (--srl-model raw_pixels or a learned model)", UsageWarning,
                      stacklevel=2)
    if force_down and not env_class.acceptsKeyword("force_down"):
        having = envsWhere(lambda env_class: env_class.acceptsKeyword("force_down"))
        return (f"--force-down: {env_id} has no up and down moves to restrict; envs with --force-down: "
                f"{', '.join(having) or 'none'}")
    if force_down and action_joints:
        warnings.warn("--force-down does nothing with joint actions (-joints): it restricts the effector's moves "
                      "(discrete action 5, continuous z), not the joints'", UsageWarning, stacklevel=2)
    for flag, asked, attribute in (("-r/--random-target", random_target, "RANDOM_TARGET"),
                                   ("--shape-reward", shape_reward, "SHAPED_REWARD")):
        if asked and not getattr(env_class, attribute, True):  # (left out of the env's keywords: envOffers)
            having = envsWhere(lambda env_class: getattr(env_class, attribute, True))
            warnings.warn(f"{flag} does nothing on {env_id}, which does not offer it (envs with {flag}: "
                          f"{', '.join(having) or 'none'})", UsageWarning, stacklevel=2)
    return None


def hasGroundTruth(env_class: type[SRLGymEnv]) -> bool:
    """:return: whether the env computes a ground truth: "ground_truth" is one of its ``SRL_MODES``, read from the
    class without building the env (the rule by which train refuses ``--srl-model ground_truth`` where it is not)"""
    return "ground_truth" in env_class.SRL_MODES


def groundTruthRefusal(env_id: str, need: str, others: bool = True) -> str | None:
    """
    :param env_id: a registered env id
    :param need: what needs the ground truth, ending the message's "which ..." (e.g. "a dataset records")
    :param others: name the envs that have a ground truth (the valid choices, where another env could be asked for)
    :return: why the env cannot serve ``need``, one line (it has no ground truth: :func:`hasGroundTruth`), None when it
        can
    """
    env_class = getEnvClass(env_id)
    if hasGroundTruth(env_class):
        return None
    having = f"; envs with ground truth: {', '.join(envsWhere(hasGroundTruth)) or 'none'}" if others else ""
    return (f"{env_id} has no ground truth (its SRL_MODES, {', '.join(env_class.SRL_MODES)}, do not include "
            f"ground_truth), which {need}{having}")


def envOffers(env_id: str, keyword: str) -> bool:
    """
    :param env_id: a registered env id
    :param keyword: ``random_target`` or ``shape_reward``
    :return: whether the env does something with the keyword (its class's ``RANDOM_TARGET`` / ``SHAPED_REWARD``):
        the commands leave it out of the env's keywords where not, after one warning (a sweep's other envs, and
        runs recorded before the envs said so, keep it)
    """
    attribute = {"random_target": "RANDOM_TARGET", "shape_reward": "SHAPED_REWARD"}[keyword]
    return bool(getattr(getEnvClass(env_id), attribute, True))


def defaultRenderer(env_id: str) -> str:
    """
    :param env_id: a registered env id
    :return: what draws the env's images when no renderer is asked for: its class's ``DEFAULT_RENDERER`` (the
        reference renderer for a class that names none)
    :raises KeyError: the id is not registered
    """
    return str(getattr(getEnvClass(env_id), "DEFAULT_RENDERER", REFERENCE_RENDERER))


def resolvedRenderer(renderer: str | None, env_id: str) -> str:
    """
    :param renderer: a ``--renderer`` value, None when it was left out
    :param env_id: a registered env id
    :return: ``renderer``, or the env's :func:`defaultRenderer` for None: the name that runs, datasets and models
        record (never None)
    :raises KeyError: None for an id that is not registered
    """
    return defaultRenderer(env_id) if renderer is None else renderer


def rendererKeywords(renderer: str, env_id: str) -> dict[str, str]:
    """
    :param renderer: a renderer the env can draw with (:func:`rendererRefusal` says None)
    :param env_id: a registered env id
    :return: the env constructor's keywords that make it draw with ``renderer``: none when it is the reference and
        the env's default (the env draws with it unasked; an env that draws its own images gets only this), else
        ``{"renderer": renderer}``, so that the keywords say the renderer whenever the env's default could differ
    """
    if renderer == REFERENCE_RENDERER and defaultRenderer(env_id) == REFERENCE_RENDERER:
        return {}
    return {"renderer": renderer}


def defaultRenderersText() -> str:
    """
    :return: the registered envs' default renderers in words, for the help of ``--renderer``: ``tinyrenderer for
        every env``, or ``sprites for A, B; lowpoly for C; tinyrenderer for the others`` (the reference last, as "the
        others", where an env draws with it by default; else the most common default)
    """
    groups: dict[str, list[str]] = {}
    for env_id in sorted(registerAll()):
        groups.setdefault(defaultRenderer(env_id), []).append(env_id)
    if len(groups) <= 1:
        return f"{next(iter(groups), REFERENCE_RENDERER)} for every env"
    common = REFERENCE_RENDERER if REFERENCE_RENDERER in groups else max(groups, key=lambda name: len(groups[name]))
    return "; ".join([*(f"{name} for {', '.join(envs)}" for name, envs in groups.items() if name != common),
                      f"{common} for the others"])
