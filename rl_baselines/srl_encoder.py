"""Re-export shim (published path): this module's contents live in :mod:`rl_baselines.envs.srl_encoder`."""
from rl_baselines.envs.srl_encoder import SRLEncoderVecEnv, encoderDevice, freezeModel, loadEncoder

__all__ = ["SRLEncoderVecEnv", "encoderDevice", "freezeModel", "loadEncoder"]
