"""Robot environments behind the SRLGymEnv interface (the Kuka arms and mobile robots in PyBullet, Omnirobot drawn with
OpenCV, gymnasium's CarRacing), with the registry that names them: importing the package registers every env, the env
plugins' too, in gymnasium, and exports the registry's helpers (each env's default renderer, the refusals of flags an
env does not take). The dataset generator is ``environments.dataset_generator``."""
# first: it installs the one-line Ctrl-C of a command's start-up (srl_toolbox's docstring) before gymnasium loads
from srl_toolbox import __version__

# isort: split
from environments.registry import (
    EnvPluginLoadWarning,
    defaultRenderer,
    envFlagRefusal,
    envOffers,
    envsWhere,
    failed_env_plugins,
    getEnvClass,
    groundTruthRefusal,
    hasGroundTruth,
    registerAll,
    registered_env,
    rendererKeywords,
    rendererRefusal,
    resolvedRenderer,
)
from environments.srl_env import ENVIRONMENT_SRL_MODES, SRLGymEnv, isLearnedSRLModel

registerAll()

__all__ = ["ENVIRONMENT_SRL_MODES", "EnvPluginLoadWarning", "SRLGymEnv", "__version__", "defaultRenderer",
           "envFlagRefusal", "envOffers", "envsWhere", "failed_env_plugins", "getEnvClass", "groundTruthRefusal",
           "hasGroundTruth", "isLearnedSRLModel", "registerAll", "registered_env", "rendererKeywords",
           "rendererRefusal", "resolvedRenderer"]
