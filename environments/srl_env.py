"""SRLGymEnv: the base every srl-toolbox environment derives from (docs/architecture.md).

An SRLGymEnv is a gymnasium env that can expose the same robot task through several observation modes
(``srl_model``): ``raw_pixels`` (a uint8 camera image), ``ground_truth`` (the robot's position, relative to the
target when ``relative_pos``), and for arms ``joints``/``joints_position``. A learned SRL model's name (one the
installed packages declare as an SRL model, :func:`learnedSRLModelNames`) makes the env return pixels: the RL side
encodes them in a batched VecEnv wrapper. Any other name is refused.

Class attributes describe what an env offers, so that command-line tools can validate a request without building the
env: ``SRL_MODES``, ``ACTION_JOINTS`` (whether ``action_joints`` is meaningful), ``GOAL_CONDITIONED`` (whether
``goal_conditioned`` is), ``PLOT_TYPE`` ("2D"/"3D" for replay plots), ``GROUND_TRUTH_UNIT`` (the unit of the ground
truth's coordinates, "m" for the robots, None where unknown), ``TARGET_LINE_AXIS`` (0 for a target that is the line x =
its x, which the replay plots draw as a line; None for a point), ``GROUND_TRUTH_VIEW`` (where the ground truth's x and y
point in a top-down render() frame, so that the trajectory plot reads as the frames), ``ACTION_NAMES`` (the discrete
actions' names, in index order, None for unnamed) and ``CONTINUOUS_ACTION_NAMES`` (a continuous action's dimensions;
:meth:`SRLGymEnv.actionNames` gives an instance's), ``MAX_STEPS``, ``RENDERERS`` (what may draw the images: the values
of the ``renderer`` keyword every env takes, the reference alone for an env that draws its own images, which count as
it) and ``DEFAULT_RENDERER`` (what does when none is asked for: each env has its own, :data:`REFERENCE_RENDERER` unless
the class says otherwise); another renderer is refused with a one-line ValueError.
Upper-case class attributes are the env's constants; ``getGlobals`` collects them for the run folder's
env_globals.json.

Goal-conditioned mode (``goal_conditioned=True``, with ``srl_model="ground_truth"``), for hindsight experience
replay: observations are a Dict ``{"observation": ground truth, "achieved_goal": getRobotPos(), "desired_goal":
getTargetPos()}``, float32, and the env gets ``compute_reward(achieved_goal, desired_goal, info)``, vectorised over
batches, from which its own step reward is computed. The ground truth is then absolute whatever ``relative_pos``
says: HER swaps the desired goal for another, which an observation relative to the old target would contradict.
The sparse reward is +1 within ``goalThreshold()`` of the goal, 0 farther, and -1 where the step's info flag
``GOAL_PENALTY_INFO_KEY`` is set (a penalty that does not depend on the goal, such as a wall bump, so that it stays
valid for any relabelled goal; an info without the flag counts as no penalty); with ``shape_reward`` it is minus the
goal distance. An env opts in with ``GOAL_CONDITIONED = True``, ``goalThreshold`` and :meth:`goalTransition` in its
step; it may override ``goalDistance`` and ``goalPenalty``.

Episode history: a seeded reset of most envs gives an episode that depends on its seed and actions alone. An env
whose simulator keeps state across resets that the episode's floats feel says so with ``RESET_KEEPS_HISTORY = True``
(the PyBullet arms: contact caches and the broadphase's pair order survive ``restoreState``, and move a later
episode's float states by up to about 1e-4). Such an env takes the reset option ``{FRESH_WORLD: True}``: it builds its
world anew before the episode, which is then the one a new env would play. Training never asks for it (an env's
sequence of episodes is itself seeded and repeats); the dataset generator does, so that an episode does not depend on
which of its processes played it after which others. Where that history reaches whole pixels (KukaRandButton's
tumbling distractors), the env's seeded reset builds its world anew too (``SEEDED_RESET_BUILDS_ANEW``), so that
``reset(seed=s)`` repeats the episode of s (gymnasium's check_env, evaluations reseeded each time).

Action masks (sb3-contrib's convention, for MaskablePPO): an env that can tell which discrete actions would do
nothing useful defines ``action_masks() -> np.ndarray`` (one bool per action of its Discrete space, True where the
action is allowed, at least one True). :meth:`SRLGymEnv.offersActionMasks` says whether a class does; an env without
the method (or asked for continuous actions, where ``action_masks`` raises ValueError) has none.

Copies (``copy.deepcopy``, ``pickle``): as gymnasium's MuJoCo and Box2D envs, an SRLGymEnv is a
``gymnasium.utils.EzPickle``: a copy is a NEW env built by the class from the constructor arguments the original was
built with (every subclass's, recorded by ``SRLGymEnv.__new__``, so that a subclass need not record them), with its
own simulator (its own PyBullet connection): dropping one never disconnects another. The state is not copied: the
copy is as the constructor leaves it (not reset, its random generator seeded by the ``seed`` keyword as the
original's was when built, not where the original's generator has got to); reset it before stepping (a step or
render before an env's first reset is refused, :meth:`SRLGymEnv._checkOpen`).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.metadata
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import EzPickle

from srl_toolbox.text import counted

# Observation modes the env computes itself; anything else is a learned model fed with pixels.
ENVIRONMENT_SRL_MODES = ("ground_truth", "raw_pixels", "joints", "joints_position")
# (channels, height, width) of the camera images without img_shape
DEFAULT_IMG_SHAPE = (3, 64, 64)
# The SRL models' entry-point group: its names (other than the modes above) are the learned models an env accepts
SRL_MODELS_GROUP = "srl_toolbox.srl_models"
_learned_name_sources: list[Callable[[], Iterable[str]]] = []
# What may draw an env's camera images (the ``renderer`` keyword every env takes; each env lists its own
# in its class's RENDERERS and names the one it draws with when none is given in its DEFAULT_RENDERER): PyBullet's
# TinyRenderer, the reference; "sprites" (mobile robots): numpy compositing of layers TinyRenderer renders once;
# "lowpoly" (Kuka arms): TinyRenderer drawing the arm with decimated visual meshes, physics unchanged.
RENDERERS = ("tinyrenderer", "sprites", "lowpoly")
# The reference renderer: every env draws with it (an env offering no other, Omnirobot or CarRacing, draws its own
# images, which count as it); datasets, run folders and models recorded before the renderer was recorded were drawn
# by it; names and keys leave it out (a dataset's ``_<renderer>`` suffix, the benchmark archive's key) so that they
# stay those of the data made before. Not "the default": each env class has its own (DEFAULT_RENDERER,
# environments.defaultRenderer).
REFERENCE_RENDERER = "tinyrenderer"
# The file a run folder and a dataset keep getGlobals' record in (the env's globals and the keywords it was made with)
ENV_GLOBALS_FILE = "env_globals.json"

# The reset option (``env.reset(options={FRESH_WORLD: True})``) with which an env that has RESET_KEEPS_HISTORY builds
# its world anew before the episode; the other envs ignore it.
FRESH_WORLD = "fresh_world"


@functools.lru_cache(maxsize=8)
def _xServerRefusal(display: str) -> str | None:
    """
    :param display: a DISPLAY value
    :return: why no X client can connect to it (Xlib's XOpenDisplay fails), None when one can or when this system has
        no Xlib to ask (read once per value and process)
    """
    library = ctypes.util.find_library("X11") if sys.platform.startswith("linux") else None
    if library is None:
        return None
    try:
        xlib = ctypes.CDLL(library)
    except OSError:
        return None
    xlib.XOpenDisplay.restype = ctypes.c_void_p
    xlib.XOpenDisplay.argtypes = [ctypes.c_char_p]
    xlib.XCloseDisplay.argtypes = [ctypes.c_void_p]
    handle = xlib.XOpenDisplay(display.encode())
    if not handle:
        return f"cannot connect to the X server of DISPLAY={display}"
    xlib.XCloseDisplay(handle)
    return None


def displayRefusal() -> str | None:
    """
    :return: why a window cannot be opened here, None when it can: DISPLAY is not set, or (on Linux) its X server
        does not answer; PyBullet's GUI then ends the whole process with exit code 1, so it is asked first
    """
    display = os.environ.get("DISPLAY")
    if not display:
        return "DISPLAY is not set"
    return _xServerRefusal(display)


def addLearnedModelNames(source: Callable[[], Iterable[str]]) -> None:
    """
    Let the env accept more learned model names than the installed entry points declare: ``source`` is asked each time
    an env checks a name it does not know (srl_models.registry adds its registered models, so that a model registered
    in the process only, as tests do, is accepted).

    :param source: returns learned SRL model names
    """
    _learned_name_sources.append(source)


@functools.lru_cache(maxsize=1)
def _declaredModelNames() -> frozenset[str]:
    """:return: the names declared under the SRL models' entry-point group (read once per process)"""
    return frozenset(entry_point.name for entry_point in importlib.metadata.entry_points(group=SRL_MODELS_GROUP))


def learnedSRLModelNames() -> list[str]:
    """:return: the learned SRL model names an env accepts: those the installed packages declare (srl-toolbox's and
    plugins') and those added with :func:`addLearnedModelNames`, sorted"""
    names = set(_declaredModelNames())
    for source in _learned_name_sources:
        names.update(source())
    return sorted(names.difference(ENVIRONMENT_SRL_MODES))


def isLearnedSRLModel(srl_model: str) -> bool:
    """
    :param srl_model: an observation mode or SRL model name
    :return: True when the env must return pixels for the RL side to encode
    """
    return srl_model not in ENVIRONMENT_SRL_MODES


def discreteActionIndex(action: Any, n: int) -> int:
    """
    The index a discrete action names, checked as gymnasium's ``Discrete(n)`` would take it: an integer (Python's,
    numpy's, a 0-d integer array) or an integer-valued float, in [0, n).

    :param action: what was passed to ``step``
    :param n: the number of discrete actions
    :return: the action's index
    :raises ValueError: in one line naming the action, for anything else (1.5, "1", a NaN, an array of shape (1,))
    """
    if isinstance(action, (int, np.integer)):  # the usual case first (a bool is an int, as for Discrete.contains)
        index = int(action)
    else:
        value = np.asarray(action)
        if value.shape != () or value.dtype.kind not in "biuf" or not float(value).is_integer():
            raise ValueError(f"discrete action must be an integer in [0, {n}), got {action!r}")
        index = int(value)
    if not 0 <= index < n:
        raise ValueError(f"discrete action must be an integer in [0, {n}), got {action!r}")
    return index


def continuousAction(action: Any, size: int, names: str = "") -> np.ndarray:
    """
    A continuous action checked as gymnasium's ``Box`` of shape ``(size,)`` takes it: ``size`` finite numbers, in an
    array (or a list) of that shape, or of shape ``(1, size)`` (one env's action as a batch of one, as SB3's
    ``predict`` gives it for a batched observation).

    :param action: what was passed to ``step``
    :param size: the number of values
    :param names: what the values are, for the message (`` (steering, gas, brake)``)
    :return: the values, float64 of shape ``(size,)``
    :raises ValueError: in one line naming the action, for another shape (``(size, 1)``, a scalar), a NaN or an
        infinite value
    """
    values = np.asarray(action, dtype=np.float64)
    values = values[0] if values.shape == (1, size) else values
    if values.shape != (size,) or not np.all(np.isfinite(values)):
        raise ValueError(f"continuous action must be {counted(size, 'finite value')}{names} of shape ({size},), got "
                         f"{action!r}")
    return values


def _isWholeNumber(value: Any) -> bool:
    """:return: whether ``value`` is an integer (Python's, numpy's) or an integer-valued float, not a bool or a
    string (the size keywords: ``max_steps``, ``render_size``, ``img_shape``'s entries)"""
    return (isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
            and bool(np.isfinite(value)) and float(value).is_integer())


def _isImageShape(value: Any) -> bool:
    """:return: whether ``value`` is a sequence (3, height, width) of whole numbers, the sizes positive"""
    return (isinstance(value, (tuple, list, np.ndarray)) and len(value) == 3
            and all(_isWholeNumber(v) for v in value) and value[0] == 3 and min(value[1:]) >= 1)


class SRLGymEnv(gym.Env, EzPickle):
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
    :param seed: seed of the env's random generator (``reset(seed=...)`` reseeds it; ``np_random_seed`` gives the
        generator's seed, drawn from the OS's entropy when None)
    :param render_mode: gymnasium render mode, one of the class's ``metadata["render_modes"]``: "rgb_array", or "human"
        (the same as ``renders=True``: a window that shows the scene, which needs a display, :func:`displayRefusal`;
        an instance made without one lists only the modes it can render, so that gymnasium's ``check_env`` passes
        headless)
    :param render_size: side of the images ``render()`` returns (at least the observation's)
    :param goal_conditioned: Dict observations and ``compute_reward`` for hindsight experience replay (only where
        GOAL_CONDITIONED, with srl_model "ground_truth"; relative_pos is then ignored, see the module docstring)
    """

    # render_fps: the frame rate that shows the env at its real speed (gymnasium's RecordVideo plays frames at it); an
    # env whose step has a simulated duration sets it to its step rate (Kuka arms 10, CarRacing 50); 20 for the others
    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 20}

    # An env plugin built for another major version is refused by the registry with a clear message.
    API_VERSION = 1
    # The version of the env's simulation: raised when a change of its physics changes what the same actions give
    # (run folders record it in env_globals.json; the SRL + RL benchmark keys its archive by it). 1 when absent.
    PHYSICS_VERSION = 1

    SRL_MODES: tuple[str, ...] = ("ground_truth", "raw_pixels")
    ACTION_JOINTS = False
    PLOT_TYPE = "2D"
    # The unit of the ground truth's coordinates (axis labels of the replay plots), None when unknown.
    GROUND_TRUTH_UNIT: str | None = None
    # A target that is a line across the arena rather than a point: the ground-truth coordinate that alone locates it
    # (0: the line x = the target's x; the replay's trajectory plot draws that line), None for a point target.
    TARGET_LINE_AXIS: int | None = None
    # Where the ground truth's x and y point in the env's top-down render() frames ("right", "left", "up", "down":
    # ("down", "right") for x down the image's rows, y along its columns), so that the replay's trajectory plot is
    # drawn as the frames show the scene; None: no such view, the plot's x points right and its y up.
    GROUND_TRUTH_VIEW: tuple[str, str] | None = None
    # Names of the discrete actions, in index order (legends of the replay plots), None for unnamed ("action i").
    ACTION_NAMES: tuple[str, ...] | None = None
    # Names of a continuous action's dimensions, in order (the replay plots' panels), None for unnamed ("action i").
    CONTINUOUS_ACTION_NAMES: tuple[str, ...] | None = None
    MAX_STEPS = 250
    RELATIVE_POS = True
    # Whether the env offers the goal-conditioned mode (its target must stay fixed within an episode).
    GOAL_CONDITIONED = False
    # Goal mode: the step-info flag (True/False) of the reward's goal-independent -1 penalty, None for none.
    GOAL_PENALTY_INFO_KEY: str | None = None
    # What draws the env's images when no renderer is asked for (the renderer keyword left out, --renderer not given):
    # one of its RENDERERS (an env offering the reference alone draws its own images, which count as it).
    DEFAULT_RENDERER = REFERENCE_RENDERER
    # What may draw the env's images (the renderer keyword, --renderer): an env that draws its own images (OpenCV,
    # pygame) offers the reference only, which its own drawing counts as.
    RENDERERS: tuple[str, ...] = (REFERENCE_RENDERER,)
    # Whether random_target and shape_reward change anything (an env without a target to move or a distance to reward
    # refuses them, and so do train and the dataset generator).
    RANDOM_TARGET = True
    SHAPED_REWARD = True
    # Whether the env has a window to show the scene in (renders=True, render_mode="human"); one without refuses them.
    WINDOW = True
    # Whether an episode's floats may depend on the episodes the env played before (see the module docstring); such
    # an env honours reset(options={FRESH_WORLD: True}).
    RESET_KEEPS_HISTORY = False

    @classmethod
    def stepsInWorkers(cls, renderer: str, images: bool) -> bool:
        """
        Whether ``--vec-env auto`` steps several of these envs in worker processes, each on its own core, rather than
        one after another in the training process: where a step costs more than a worker's round trip through its
        pipe (the action out, the observation back). True unless a class measured otherwise (docs/benchmarks.md,
        "In-process envs").

        :param renderer: what draws the images (resolved: one of RENDERERS)
        :param images: the run's observations are images (raw pixels, or frames for a learned model), not a state
        :return: True for worker processes
        """
        return True

    def __new__(cls, *args: Any, **kwargs: Any) -> SRLGymEnv:
        """
        Record the constructor arguments of the class being built (the outermost ``__init__``'s, whichever subclass)
        as ``EzPickle`` would: a copy or an unpickled env is built anew from them (see the module docstring).

        :param args: the constructor's positional arguments
        :param kwargs: its keyword arguments (those of a registered id's spec included: gymnasium.make passes them)
        :return: the new, not yet initialised instance
        """
        instance = super().__new__(cls)
        EzPickle.__init__(instance, *args, **kwargs)
        return instance

    def __setstate__(self, state: dict[str, Any]) -> None:
        """
        Build this (blank) instance with the recorded constructor arguments: its own simulator, a fresh state.
        (EzPickle's own builds a second env and takes over its attributes, whose bound methods would keep that one.)

        :param state: ``__getstate__``'s: the constructor's ``_ezpickle_args`` and ``_ezpickle_kwargs``
        """
        args, kwargs = state["_ezpickle_args"], state["_ezpickle_kwargs"]
        EzPickle.__init__(self, *args, **kwargs)
        self.__init__(*args, **kwargs)

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
        goal_conditioned: bool = False,
        renderer: str | None = None,
    ) -> None:
        for keyword, value in (("relative_pos", relative_pos), ("is_discrete", is_discrete),
                               ("action_joints", action_joints), ("random_target", random_target),
                               ("shape_reward", shape_reward), ("renders", renders),
                               ("goal_conditioned", goal_conditioned)):
            if not isinstance(value, (bool, np.bool_)):  # ("no" would be True)
                raise ValueError(f"{keyword} must be True or False, got {value!r}")
        renderer = self.DEFAULT_RENDERER if renderer is None else renderer
        if renderer not in self.RENDERERS:
            raise ValueError(f"unknown renderer {renderer!r} for {type(self).__name__}; valid choices: "
                             f"{', '.join(self.RENDERERS)}")
        if action_joints and not self.ACTION_JOINTS:
            raise ValueError(f"{type(self).__name__} has no joints to act on: action_joints is not available")
        if not isLearnedSRLModel(srl_model) and srl_model not in self.SRL_MODES:
            raise ValueError(
                f"unknown srl_model {srl_model!r} for {type(self).__name__}; valid choices: {', '.join(self.SRL_MODES)}"
            )
        if isLearnedSRLModel(srl_model) and srl_model not in learnedSRLModelNames():
            raise ValueError(f"unknown srl_model {srl_model!r} for {type(self).__name__}; valid choices: "
                             f"{', '.join(self.SRL_MODES)}, or a learned SRL model: {', '.join(learnedSRLModelNames())}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unknown render_mode {render_mode!r} for {type(self).__name__}; valid choices: "
                             f"{', '.join(self.metadata['render_modes'])}")
        renders = bool(renders or render_mode == "human")  # gymnasium's "human": a window that shows the scene
        no_display = displayRefusal()
        if renders and no_display is not None:
            raise RuntimeError(f"renders=True (or render_mode='human') needs a display ({no_display}); use "
                               "renders=False and render_mode='rgb_array', or run under a display (e.g. xvfb-run)")
        if no_display is not None:  # the modes this instance can render (gymnasium's check_env makes each)
            self.metadata = {**self.metadata, "render_modes": [mode for mode in self.metadata["render_modes"]
                                                               if mode != "human"]}
        for keyword, given, offered in (("random_target", random_target, self.RANDOM_TARGET),
                                        ("shape_reward", shape_reward, self.SHAPED_REWARD)):
            if given and not offered:
                raise ValueError(f"{type(self).__name__} has no {keyword}: leave it False")
        if goal_conditioned:
            self._checkGoalMode(srl_model)
        if not _isWholeNumber(render_size) or render_size < 1:
            raise ValueError(f"render_size must be a positive integer (the side of render()'s square image), got "
                             f"{render_size!r}")
        self.renderer = renderer
        self.srl_model = srl_model
        self.relative_pos = bool(relative_pos)
        self.is_discrete = bool(is_discrete)
        self.action_joints = bool(action_joints)
        self.random_target = bool(random_target)
        self.shape_reward = bool(shape_reward)
        self.renders = renders
        if img_shape is not None and not _isImageShape(img_shape):
            raise ValueError(f"img_shape must be (3, height, width) with positive integer sizes, got {img_shape!r}")
        self.img_shape = tuple(int(v) for v in img_shape) if img_shape is not None else DEFAULT_IMG_SHAPE
        if max_steps is not None and (not _isWholeNumber(max_steps) or max_steps < 1):
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        self.max_steps = int(max_steps) if max_steps is not None else self.MAX_STEPS
        self.render_mode = render_mode
        self.render_size = int(render_size)
        self.init_seed = seed
        # (gymnasium's np_random setter would record the seed as unknown, -1: np_random_seed reports it)
        self._np_random, self._np_random_seed = gym.utils.seeding.np_random(seed)
        self.goal_conditioned = bool(goal_conditioned)
        if self.goal_conditioned:
            # Only goal-mode instances have compute_reward: SB3's check_env takes any env that has it for a goal env.
            self.compute_reward = self.computeGoalReward

    # --- lifecycle: a closed env refuses to be used, and an env not yet reset to be stepped ----------------------

    _closed = False  # (a class default, so that close() works on an env whose constructor failed)
    _reset_done = False  # (a class default: a new env, and a copy, which is built anew, must be reset first)

    def close(self) -> None:
        """Mark the env closed: reset, step and render then refuse in one line. An env that releases a simulator does
        so in its own close(), then calls this one (safe to call twice)."""
        self._closed = True

    def _checkOpen(self, method: str) -> None:
        """
        Each env's reset, step and render start with it (a boolean test or two: nothing measurable per step).

        :param method: the method that calls it ("reset", "step", "render")
        :raises RuntimeError: the env was closed (its simulator released), or ``method`` is "step" or "render" and the
            env has not been reset yet (as gymnasium's OrderEnforcing refuses both for an env made with gymnasium.make;
            before its first reset CarRacing has no track to draw)
        """
        if self._closed:
            raise RuntimeError(f"{type(self).__name__}.{method}() after close(): a closed env has released its "
                               "simulator; make a new env")
        if not self._reset_done and method != "reset":
            raise RuntimeError(f"{type(self).__name__}.{method}() before reset(): call reset() first")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """
        Reseed the env's random generator when ``seed`` is given (gymnasium's reset); each env's reset calls this
        first, then starts its episode.

        :param seed: the new seed, None to go on with the generator
        :param options: the env's reset options
        :return: what gymnasium's Env.reset returns (each env returns its own (observation, info))
        :raises RuntimeError: the env was closed
        """
        self._checkOpen("reset")
        self._reset_done = True
        return super().reset(seed=seed, options=options)

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

    # --- goal-conditioned mode (see the module docstring) ----------------------------------------------------

    def _checkGoalMode(self, srl_model: str) -> None:
        if not self.GOAL_CONDITIONED:
            raise ValueError(f"{type(self).__name__} has no goal_conditioned mode (its target is not one fixed "
                             f"position per episode)")
        if srl_model != "ground_truth":
            raise ValueError(f"goal_conditioned needs srl_model 'ground_truth', got {srl_model!r}; valid choices: "
                             f"ground_truth")

    def goalObservationSpace(self, state_space: gym.spaces.Box) -> gym.spaces.Dict:
        """
        :param state_space: the env's ground-truth observation space (the goals are positions of the same kind)
        :return: the Dict space of goal-mode observations
        """
        return gym.spaces.Dict({key: gym.spaces.Box(state_space.low, state_space.high, dtype=np.float32)
                                for key in ("observation", "achieved_goal", "desired_goal")})

    def goalObservation(self) -> dict[str, np.ndarray]:
        """:return: the goal-mode observation: absolute ground truth, robot position, target position (float32)"""
        return {"observation": np.asarray(self.getGroundTruth(), dtype=np.float32),
                "achieved_goal": np.asarray(self.getRobotPos(), dtype=np.float32),
                "desired_goal": np.asarray(self.getTargetPos(), dtype=np.float32)}

    def goalThreshold(self) -> float:
        """:return: the goal distance within which the sparse reward is +1"""
        raise NotImplementedError

    def goalDistance(self, achieved_goal: np.ndarray, desired_goal: np.ndarray) -> np.ndarray:
        """
        :param achieved_goal: positions, (..., goal_dim)
        :param desired_goal: goals, same shape
        :return: their Euclidean distances, shape (...)
        """
        return np.linalg.norm(achieved_goal - desired_goal, axis=-1)

    def goalPenalty(self, distance: np.ndarray, info: Any) -> np.ndarray:
        """
        :param distance: goal distances, shape (...)
        :param info: one step info dict, or a sequence of them (one per distance), or None
        :return: where the sparse reward is -1 whatever the goal: the info flag GOAL_PENALTY_INFO_KEY (bool array)
        """
        key = self.GOAL_PENALTY_INFO_KEY
        if key is None or info is None:
            return np.zeros(np.shape(distance), dtype=bool)
        if isinstance(info, dict):
            return np.full(np.shape(distance), bool(info.get(key, False)))
        return np.array([bool(item.get(key, False)) for item in info], dtype=bool).reshape(np.shape(distance))

    def computeGoalReward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        """
        The reward of reaching ``achieved_goal`` when ``desired_goal`` was asked; goal-mode envs expose it as
        ``compute_reward`` (the name HER and SB3's check_env look for).

        :param achieved_goal: positions reached, (goal_dim,) or a batch (n, goal_dim)
        :param desired_goal: goals, same shape
        :param info: the step's info dict, or one per row of a batch (None: no penalty)
        :return: the rewards, float64 of shape () or (n,)
        """
        distance = self.goalDistance(np.asarray(achieved_goal), np.asarray(desired_goal))
        if self.shape_reward:
            return -distance.astype(np.float64)
        reward = np.where(distance <= self.goalThreshold(), 1.0, 0.0)
        return np.where(self.goalPenalty(distance, info), -1.0, reward)

    def goalTransition(self, info: dict[str, Any]) -> tuple[dict[str, np.ndarray], float]:
        """
        The goal-mode end of a step: observe, compute the reward with ``compute_reward`` and set
        ``info["is_success"]`` to "within goalThreshold() of the goal".

        :param info: the step's info (with its GOAL_PENALTY_INFO_KEY flag), updated in place
        :return: (observation, reward)
        """
        observation = self.goalObservation()
        achieved, desired = observation["achieved_goal"], observation["desired_goal"]
        info["is_success"] = bool(self.goalDistance(achieved, desired) <= self.goalThreshold())
        return observation, float(self.computeGoalReward(achieved, desired, info))

    # --- the interface each env implements ------------------------------------------------------------------

    @classmethod
    def offersActionMasks(cls) -> bool:
        """:return: whether the class defines ``action_masks()`` (for its discrete actions; see the module docstring)"""
        return callable(getattr(cls, "action_masks", None))

    def _checkMaskable(self) -> None:
        """:raises ValueError: the env was built with continuous actions (masks are for discrete ones)"""
        if not self.is_discrete:
            raise ValueError(f"{type(self).__name__}: action masks need discrete actions (is_discrete=True)")

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

    def actionNames(self) -> tuple[str, ...] | None:
        """
        :return: the names of this env's actions: its discrete actions in index order (``ACTION_NAMES``), or the
            dimensions of its continuous action (``CONTINUOUS_ACTION_NAMES``); None when the class names none, or not
            one name per action (dimension)
        """
        if isinstance(self.action_space, gym.spaces.Discrete):
            names, count = (self.ACTION_NAMES if self.is_discrete else None), int(self.action_space.n)
        elif isinstance(self.action_space, gym.spaces.Box) and len(self.action_space.shape) == 1:
            names, count = self.CONTINUOUS_ACTION_NAMES, int(self.action_space.shape[0])
        else:
            return None
        return tuple(names) if names is not None and len(names) == count else None

    # --- constants for the run folder ------------------------------------------------------------------------

    @classmethod
    def physicsKeywords(cls, version: int) -> dict[str, Any] | None:
        """:return: the constructor keywords that simulate physics version ``version`` ({} for PHYSICS_VERSION), None
        when the env cannot"""
        return {} if version == cls.PHYSICS_VERSION else None

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
