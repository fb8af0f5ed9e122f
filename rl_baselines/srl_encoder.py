"""Deprecated import path, removed in srl-toolbox 0.3.0.

Import from :mod:`rl_baselines.envs.srl_encoder` instead. Importing this module re-exports the names it always had
and emits a ``DeprecationWarning`` naming the new path (srl_toolbox.deprecation); the project's own modules never
import it.
"""
from rl_baselines.envs.srl_encoder import SRLEncoderVecEnv, encoderDevice, freezeModel, loadEncoder
from srl_toolbox.deprecation import warnMovedModule

__all__ = ["SRLEncoderVecEnv", "encoderDevice", "freezeModel", "loadEncoder"]

warnMovedModule("rl_baselines.srl_encoder", "rl_baselines.envs.srl_encoder")
