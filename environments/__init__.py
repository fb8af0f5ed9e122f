"""Robot environments (PyBullet) behind the SRLGymEnv interface; importing the package registers them in gymnasium."""
from environments.registry import getEnvClass, registerAll, registered_env
from environments.srl_env import ENVIRONMENT_SRL_MODES, SRLGymEnv, isLearnedSRLModel
from srl_toolbox import __version__

registerAll()

__all__ = ["ENVIRONMENT_SRL_MODES", "SRLGymEnv", "__version__", "getEnvClass", "isLearnedSRLModel", "registerAll",
           "registered_env"]
