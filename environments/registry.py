"""Environments are found through the entry-point group ``srl_toolbox.environments`` and registered in gymnasium.

The entry point's name is the gymnasium id and its value the SRLGymEnv subclass, so a third-party package adds an
env with one line in its packaging metadata. ``import environments`` registers them all, after which
``gymnasium.make("MobileRobotGymEnv-v0")`` works.
"""
from __future__ import annotations

import importlib.metadata
import warnings

import gymnasium as gym

from environments.srl_env import SRLGymEnv

ENTRY_POINT_GROUP = "srl_toolbox.environments"

# id -> entry point ("module:Class"); the class is imported only when the env is used.
registered_env: dict[str, str] = {}


def registerAll() -> dict[str, str]:
    """
    Register every env declared under the entry-point group in gymnasium (idempotent).

    :return: the mapping of env id to its "module:Class" entry point
    """
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name in registered_env:
            continue
        registered_env[entry_point.name] = entry_point.value
        if entry_point.name not in gym.registry:
            gym.register(id=entry_point.name, entry_point=entry_point.value)
    return registered_env


def getEnvClass(env_id: str) -> type[SRLGymEnv]:
    """
    :param env_id: a registered env id
    :return: the env's class (imported on demand)
    :raises KeyError: the id is not registered
    """
    registerAll()
    if env_id not in registered_env:
        raise KeyError(env_id)
    module_name, _, class_name = registered_env[env_id].partition(":")
    module = importlib.import_module(module_name)
    env_class = getattr(module, class_name)
    if not (isinstance(env_class, type) and issubclass(env_class, SRLGymEnv)):
        warnings.warn(f"environment {env_id} ({registered_env[env_id]}) is not an SRLGymEnv")
    return env_class
