"""Robot environments (PyBullet) behind the SRLGymEnv interface; importing the package registers them in gymnasium."""
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
