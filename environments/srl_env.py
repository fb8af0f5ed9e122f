"""SRLGymEnv: the base every srl-toolbox environment derives from (DESIGN.md section 4).

An SRLGymEnv is a gymnasium env that can expose the same robot task through several observation modes
(``srl_model``): ``raw_pixels`` (a uint8 camera image), ``ground_truth`` (the robot's position, relative to the
target when ``relative_pos``), and for arms ``joints``/``joints_position``. Any other (learned) SRL model name makes
the env return pixels: the RL side encodes them in a batched VecEnv wrapper.

Class attributes describe what an env offers, so that command-line tools can validate a request without building
the env: ``SRL_MODES``, ``ACTION_JOINTS`` (whether ``action_joints`` is meaningful), ``PLOT_TYPE`` ("2D"/"3D" for
replay plots) and ``MAX_STEPS``. Upper-case class attributes are the env's constants; ``getGlobals`` collects them
for the run folder's env_globals.json.
"""
from __future__ import annotations

import inspect
import os
from typing import Any

import gymnasium as gym
import numpy as np

# Observation modes the env computes itself; anything else is a learned model fed with pixels.
ENVIRONMENT_SRL_MODES = ("ground_truth", "raw_pixels", "joints", "joints_position")


def isLearnedSRLModel(srl_model: str) -> bool:
    """
    :param srl_model: an observation mode or SRL model name
    :return: True when the env must return pixels for the RL side to encode
    """
    return srl_model not in ENVIRONMENT_SRL_MODES


class SRLGymEnv(gym.Env):
    """
    Base class of robot envs with selectable observation modes.

    :param srl_model: observation mode: "ground_truth", "raw_pixels", ... (see SRL_MODES) or a learned model name
    :param relative_pos: ground truth is the robot position minus the target position
    :param is_discrete: discrete actions (True) or a continuous Box (False)
    :param action_joints: act in joint space (only where ACTION_JOINTS is True)
    :param random_target: draw a new target position at every reset
    :param shape_reward: dense reward (minus the distance to the target) instead of the sparse one
    :param renders: open the PyBullet GUI (needs a display)
    :param img_shape: (channels, height, width) of camera observations
    :param max_steps: episode length (truncation), None for the env's MAX_STEPS
    :param seed: seed of the env's random generator (``reset(seed=...)`` reseeds it)
    :param render_mode: gymnasium render mode, "rgb_array" or "human"
    :param render_size: side of the images ``render()`` returns (at least the observation's)
    """

    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 20}

    SRL_MODES: tuple[str, ...] = ("ground_truth", "raw_pixels")
    ACTION_JOINTS = False
    PLOT_TYPE = "2D"
    MAX_STEPS = 250
    RELATIVE_POS = True

    def __init__(
        self,
        *,
        srl_model: str = "raw_pixels",
        relative_pos: bool = RELATIVE_POS,
        is_discrete: bool = True,
        action_joints: bool = False,
        random_target: bool = False,
        shape_reward: bool = False,
        renders: bool = False,
        img_shape: tuple[int, int, int] | list[int] | None = None,
        max_steps: int | None = None,
        seed: int | None = None,
        render_mode: str | None = None,
        render_size: int = 128,
    ) -> None:
        if action_joints and not self.ACTION_JOINTS:
            raise ValueError(f"{type(self).__name__} has no joints to act on: action_joints is not available")
        if not isLearnedSRLModel(srl_model) and srl_model not in self.SRL_MODES:
            raise ValueError(
                f"unknown srl_model {srl_model!r} for {type(self).__name__}; valid choices: {', '.join(self.SRL_MODES)}"
            )
        if renders and not os.environ.get("DISPLAY"):
            raise RuntimeError("renders=True needs a display (DISPLAY is not set); use renders=False, or run under "
                               "a display (e.g. xvfb-run)")
        if int(render_size) <= 0:
            raise ValueError(f"render_size must be positive, got {render_size}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unknown render_mode {render_mode!r}; valid choices: rgb_array, human")
        self.srl_model = srl_model
        self.relative_pos = relative_pos
        self.is_discrete = is_discrete
        self.action_joints = action_joints
        self.random_target = random_target
        self.shape_reward = shape_reward
        self.renders = renders
        self.img_shape = tuple(int(v) for v in img_shape) if img_shape is not None else (3, 64, 64)
        if len(self.img_shape) != 3 or self.img_shape[0] != 3 or min(self.img_shape[1:]) < 1:
            raise ValueError(f"img_shape must be (3, height, width) with positive sizes, got {img_shape}")
        self.max_steps = int(max_steps) if max_steps is not None else self.MAX_STEPS
        self.render_mode = render_mode
        self.render_size = int(render_size)
        self.init_seed = seed
        self.np_random, _ = gym.utils.seeding.np_random(seed)

    # --- observation helpers -------------------------------------------------------------------------------

    @property
    def usesPixels(self) -> bool:
        """True when observations are camera images (raw pixels or input for a learned SRL model)."""
        return self.srl_model == "raw_pixels" or isLearnedSRLModel(self.srl_model)

    def pixelObservationSpace(self, cameras: int = 1) -> gym.spaces.Box:
        """
        :param cameras: how many camera images are stacked along the channel axis
        :return: the uint8 (height, width, channels * cameras) image space for img_shape
        """
        channels, height, width = self.img_shape
        return gym.spaces.Box(0, 255, (height, width, channels * cameras), dtype=np.uint8)

    @classmethod
    def acceptsKeyword(cls, name: str) -> bool:
        """
        :param name: a constructor keyword
        :return: whether this env (or one of its base classes) takes it
        """
        return any(name in inspect.signature(klass.__init__).parameters
                   for klass in cls.__mro__ if "__init__" in vars(klass))

    def getSRLState(self) -> np.ndarray:
        """:return: the ground-truth observation: robot position, relative to the target when relative_pos."""
        state = np.asarray(self.getGroundTruth(), dtype=np.float32)
        if self.relative_pos:
            state = state - np.asarray(self.getTargetPos(), dtype=np.float32)
        return state

    # --- the interface each env implements ------------------------------------------------------------------

    def getTargetPos(self) -> np.ndarray:
        """:return: the target's position (same coordinates as the ground truth)."""
        raise NotImplementedError

    def getRobotPos(self) -> np.ndarray:
        """:return: the robot's (or end effector's) position."""
        raise NotImplementedError

    def getGroundTruth(self) -> np.ndarray:
        """:return: the ground-truth state (absolute), of size getGroundTruthDim()."""
        return self.getRobotPos()

    @staticmethod
    def getGroundTruthDim() -> int:
        """:return: the dimension of the ground-truth state."""
        raise NotImplementedError

    # --- constants for the run folder ------------------------------------------------------------------------

    @classmethod
    def getGlobals(cls, env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        """
        The env's constants, its constructor defaults and the keyword arguments it was given, JSON-safe.

        :param env_kwargs: keyword arguments the env is built with (they override the defaults)
        :return: a dict for env_globals.json
        """
        constants: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if name.isupper() and _isJsonSafe(value):
                    constants[name] = list(value) if isinstance(value, tuple) else value
        defaults: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            if "__init__" not in vars(klass):
                continue
            for param in inspect.signature(klass.__init__).parameters.values():
                if param.default is not inspect.Parameter.empty and _isJsonSafe(param.default):
                    defaults[param.name] = list(param.default) if isinstance(param.default, tuple) else param.default
        given = {k: (list(v) if isinstance(v, tuple) else v) for k, v in (env_kwargs or {}).items() if _isJsonSafe(v)}
        return {"env_class": f"{cls.__module__}:{cls.__name__}", "constants": constants, "defaults": defaults,
                "env_kwargs": given}


def _isJsonSafe(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_isJsonSafe(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _isJsonSafe(v) for k, v in value.items())
    return False
