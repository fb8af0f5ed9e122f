"""A trained agent, loaded from its run folder, acting on an env that someone else built and steps.

The dataset generator (environments.dataset_generator) records episodes played by such an agent. It owns the env
(pixel observations at the dataset's image size) and asks the agent for one action per step; this module rebuilds
what the agent saw during training from that env, as rl_baselines.envs.factory.createEnvs does (the algorithm's env, then
the SRL encoder, VecFrameStack, VecNormalize):

- ``raw_pixels``: the image, resized to the run's image shape;
- ``ground_truth``: the env's ground-truth state (``getSRLState``);
- a trained SRL model (``vae``, ...): the image resized to the model's image shape and encoded by the model the run
  recorded in srl_model.json (checked by its hash, as replay.enjoy_baselines does, through the same function);
- the goal-conditioned Dict of ``her`` runs (the agent observes a Dict space): the env's ``goalObservation``;

then frame-stacked, and normalised with the statistics saved beside the model (and scaled as the run's learned state
was: the factor recorded there, or for an older run the one its settings give). ``joints`` and ``joints_position``
runs are refused (the generator's pixel env does not give them). The keywords the run's algorithm adds to those its
flags give (``env_keywords``: what its class's ``envKeywords`` returns beyond its argument, :func:`algorithmKeywords`;
not what the run's env_globals.json recorded, which also differs where the flags' keywords changed since) are the
generator's to apply to its env; :meth:`RunPolicy.checkObservation` refuses an env whose observations, rebuilt so, are
not of the shape the agent acts on (an algorithm whose ``makeEnv`` wraps the env).

environments must not import rl_baselines at module level (the dependency direction is
replay -> rl_baselines -> srl_models -> environments): the generator imports this module lazily, only when
``--policy`` names a run folder. The helpers that read a run folder (:func:`readRunConfig`,
:func:`recordedSRLModelFolder`) are shared with rl_baselines.runs.loaded_run (replay.enjoy_baselines, the Python API).
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import cv2
import gymnasium as gym
import numpy as np
import torch

from environments import registered_env
from environments.srl_env import isLearnedSRLModel
from rl_baselines.core.base import actionMaskKeywords
from rl_baselines.core.plugin_v1 import loadModel
from rl_baselines.core.registry import algoChoicesText, registered_rl
from rl_baselines.core.run_folder import (
    BEST_DIR,
    CHECKPOINTS_DIR,
    RunFolder,
    insideRunRefusal,
    recordedPhysicsKeywords,
    runsBelowHint,
)
from rl_baselines.envs.factory import NORMALISATION_FILE, VecEnvSettings, envKwargsFromArgs, learnedStateScale
from rl_baselines.envs.srl_encoder import loadEncoder
from rl_baselines.runs.train_config import TrainConfig, readArgsRecord
from srl_models.config import RUN_RECORD_FILE, checkRecordedModel
from srl_toolbox.files import readJson

# Observation modes the env computes and this module can rebuild from the generator's env (learned models too).
SUPPORTED_ENV_MODES = ("raw_pixels", "ground_truth")
GOAL_OBSERVATION_KEYS = ("observation", "achieved_goal", "desired_goal")


def readRunConfig(run_dir: str, flag: str, inside_hint: Callable[[str], str] | None = None) -> TrainConfig:
    """
    :param run_dir: a run folder written by rl_baselines.train
    :param flag: the option that named it, for the messages (``--log-dir``, ``--policy``)
    :param inside_hint: for a folder inside a run, what the refusal adds after the run meant, from the folder's path
        below it (enjoy's ``--load-checkpoint N``...); None adds nothing
    :return: the run's settings (args.json, upgraded to the current format: every train flag is there), as given
    :raises ValueError: the folder holds no run, or its args.json is unreadable (one line)
    """
    folder = os.path.isdir(run_dir)
    if not folder or not os.path.isfile(RunFolder(run_dir).args_file):
        inside = insideRunRefusal(flag, run_dir) if os.path.exists(run_dir) else None
        if inside is not None:  # a checkpoint's folder, best/, monitor/, or a file of the run
            refusal, run, below = inside  # (a file: the hint of the folder holding it, a checkpoint's step)
            raise ValueError(f"{refusal}: give {flag}{'=' if flag.isidentifier() else ' '}{run}"
                             + (inside_hint(below if folder else os.path.dirname(below)) if inside_hint else ""))
        if not folder:
            raise ValueError(f"{flag} {run_dir!r} is not a folder")
        raise ValueError(f"{flag} {run_dir!r} holds no run (no args.json); pass a run folder written by "
                         f"rl_baselines.train{runsBelowHint(run_dir)}")
    return TrainConfig.fromRecord(readArgsRecord(run_dir))


def readRunArgs(run_dir: str, flag: str, inside_hint: Callable[[str], str] | None = None) -> argparse.Namespace:
    """
    :param run_dir: a run folder written by rl_baselines.train
    :param flag: the option that named it, for the messages (``--log-dir``, ``--policy``)
    :param inside_hint: as :func:`readRunConfig`'s
    :return: :func:`readRunConfig`'s settings (the run folders of a training None) in the Namespace form of plugin
        API v1, the caller's to change
    :raises ValueError: the folder holds no run, or its args.json is unreadable (one line)
    """
    return readRunConfig(run_dir, flag, inside_hint).namespace()


def recordedSRLModelFolder(run_dir: str, srl_model: str, moved_to: str | None = None,
                           moved_flag: str | None = None) -> str | None:
    """
    :param run_dir: a run folder
    :param srl_model: the observation mode it recorded (``--srl-model``)
    :param moved_to: the SRL model folder to use instead of the recorded one (same files)
    :param moved_flag: the option or parameter that gives ``moved_to``, named by the message when the recorded folder
        is gone and none was given; None where the caller takes none
    :return: the checked folder of the trained SRL model the run observed, None when the env computed its
        observations
    :raises ValueError: no record, or the model is missing or changed (one line)
    """

    if not isLearnedSRLModel(srl_model):
        if moved_to is not None:
            raise ValueError(f"--srl-model-path: the run in {run_dir!r} observed {srl_model}, not a "
                             f"trained SRL model")
        return None
    record_path = os.path.join(run_dir, RUN_RECORD_FILE)
    if not os.path.isfile(record_path):
        raise ValueError(f"the run in {run_dir!r} observed SRL model {srl_model!r} but holds no "
                         f"{RUN_RECORD_FILE} saying which one")
    record: Any = None
    try:
        record = readJson(record_path)
        return checkRecordedModel(record, moved_to)
    except (ValueError, KeyError, TypeError) as error:
        recorded = record.get("path") if isinstance(record, dict) else None
        gone = moved_to is None and moved_flag and isinstance(recorded, str) and not os.path.exists(recorded)
        hint = f"; moved? give its new folder with {moved_flag}" if gone else ""
        raise ValueError(f"{record_path}: {error}{hint}") from None


def algorithmKeywords(algo_class: type, flag_keywords: dict[str, Any]) -> dict[str, Any]:
    """
    :param algo_class: a registered algorithm class (either plugin API version: ``envKeywords`` takes a dict in both)
    :param flag_keywords: the env keywords a run's flags give (rl_baselines.envs.factory.envKwargsFromArgs)
    :return: ``{keyword: value}`` for each keyword the class's ``envKeywords`` (her's ``goal_conditioned``, a
        plugin's ``relative_pos``...) builds its env with that ``flag_keywords`` lack or give another value
    """
    built = algo_class.envKeywords(dict(flag_keywords))
    missing = object()
    return {keyword: value for keyword, value in built.items() if flag_keywords.get(keyword, missing) != value}


def _agentSpace(agent: Any, attribute: str) -> Any:
    """:return: the agent's own ``attribute`` (the torch algorithms), else its SB3 model's, else None"""
    space = getattr(agent, attribute, None)
    return space if space is not None else getattr(getattr(agent, "model", None), attribute, None)


def agentObservationSpace(agent: Any) -> Any:
    """
    :param agent: a loaded BaseRLObject
    :return: the observation space it acts on, when it exposes one (SB3-backed: ``model.observation_space``; the
        torch algorithms: ``observation_space``), else None
    """
    return _agentSpace(agent, "observation_space")


def agentActionSpace(agent: Any) -> Any:
    """
    :param agent: a loaded BaseRLObject
    :return: the action space it acts in, when it exposes one (as :func:`agentObservationSpace`), else None
    """
    return _agentSpace(agent, "action_space")


def _latestModelHint(below: str) -> str:
    """:return: for ``--policy`` given a checkpoint's folder or best/: that the generator plays the run's latest model
    (the one saved in the run folder itself)"""
    if below.split("/")[0] in (CHECKPOINTS_DIR, BEST_DIR):
        return " (it plays the run's latest model, not a checkpoint's nor best/'s)"
    return ""


class RunPolicy:
    """
    The agent of a run folder written by rl_baselines.train, acting on one env.

    Building it reads only args.json (cheap, so that a caller can check the run against its own settings);
    :meth:`load` loads the agent (and the run's SRL model).

    :param run_dir: the run folder (holds args.json, ``<algo>_model.*`` and vecnormalize.npz when normalised)
    :raises ValueError: the folder holds no usable run (one-line message)
    """

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        if not os.path.isdir(run_dir):
            raise ValueError(f"--policy {run_dir!r} is neither 'random' nor a folder")
        self.args = readRunArgs(run_dir, "--policy", _latestModelHint)
        self.srl_model = self.args.srl_model
        self.learned = isinstance(self.srl_model, str) and isLearnedSRLModel(self.srl_model)
        if not self.learned and self.srl_model not in SUPPORTED_ENV_MODES:
            raise ValueError(f"the run in {run_dir!r} observes {self.srl_model!r}; the dataset generator can replay "
                             f"agents trained on {', '.join(SUPPORTED_ENV_MODES)} or a trained SRL model only")
        self.env_id: str = self.args.env
        self.continuous = bool(self.args.continuous_actions)
        self.action_joints = bool(self.args.action_joints)
        self.force_down = bool(self.args.force_down)
        self.renderer: str | None = self.args.renderer  # what drew the images it learned from (runs name it)
        # the physics version it was trained under, when not the env's current one ({"physics": "reference"})
        self.physics_keywords = recordedPhysicsKeywords(run_dir, self.env_id) if self.env_id in registered_env else {}
        # the keywords its algorithm builds the env with beyond its flags (envKeywords: her's goal_conditioned, a
        # plugin's relative_pos...); {} for an algorithm not installed (load refuses it)
        algo_class = registered_rl[self.args.algo][0] if self.args.algo in registered_rl else None
        self.env_keywords: dict[str, Any] = (algorithmKeywords(algo_class, envKwargsFromArgs(self.args))
                                             if algo_class is not None and self.env_id in registered_env else {})
        # a second camera (--fpv, --multi-view, or the algorithm's keyword) stacks its image on the channels of the
        # one the agent sees
        views = (self.args.fpv, self.args.multi_view, self.env_keywords.get("fpv"), self.env_keywords.get("multi_view"))
        self.cameras = 2 if any(views) else 1
        self.pixels = self.learned or self.srl_model == "raw_pixels"  # whether the agent acts on the images
        height, width = tuple(self.args.img_shape or (3, 64, 64))[1:]
        self.img_shape = (3 * self.cameras, int(height), int(width))
        self.num_stack = int(self.args.num_stack)
        self.agent: Any = None
        self.encoder: Any = None
        self.goal_conditioned = False
        self._normalisation: dict[str, Any] | None = None
        self._scale = 1.0  # after normalisation: a learned state's scale, as the run's ScaledVecNormalize applied it
        self._stack: np.ndarray | None = None
        self._episode_start = True  # the next action is an episode's first

    def load(self, num_threads: int | None = None) -> RunPolicy:
        """
        Load the agent, the run's SRL model if it observed one, and its observation normalisation (imports the
        algorithm, hence torch).

        :param num_threads: torch's intra-op threads for this process (None: leave torch's setting)
        :return: self
        :raises ValueError: the algorithm is not installed, the model is missing or corrupt or acts in another kind of
            actions than args.json says, or the run's SRL model is missing or changed
        """

        if num_threads is not None:
            torch.set_num_threads(num_threads)

        algo = self.args.algo
        if algo not in registered_rl:
            raise ValueError(f"the run in {self.run_dir!r} used algorithm {algo!r}, which is not installed"
                             f"{algoChoicesText(algo, typed=False)}")
        algo_class = registered_rl[algo][0]
        model_path = os.path.join(self.run_dir, f"{algo}_model{algo_class.MODEL_EXTENSION}")
        if not os.path.isfile(model_path):
            raise ValueError(f"--policy {self.run_dir!r} holds no model ({model_path} is missing)")
        # On the CPU whatever the run trained on (see the encoder below); ValueError on a corrupt model.
        settings = TrainConfig.fromValues(vars(self.args)).runSettings().replace(device="cpu")
        self.agent = loadModel(algo_class, model_path, settings)
        actions = agentActionSpace(self.agent)
        if actions is not None and isinstance(actions, gym.spaces.Discrete) == self.continuous:  # (an edited args.json)
            raise ValueError(f"{self.run_dir}/args.json says {'continuous' if self.continuous else 'discrete'} "
                             f"actions, but its agent takes {actions}")
        space = agentObservationSpace(self.agent)
        if isinstance(space, gym.spaces.Dict):
            if sorted(space.spaces) != sorted(GOAL_OBSERVATION_KEYS):
                raise ValueError(f"the run in {self.run_dir!r} observes a Dict of {', '.join(space.spaces)}; the "
                                 f"dataset generator rebuilds only the goal-conditioned one "
                                 f"({', '.join(GOAL_OBSERVATION_KEYS)})")
            self.goal_conditioned = True
        if self.learned:
            # On the CPU: the generator's worker processes are forked, and a CUDA context does not survive a fork.
            folder = recordedSRLModelFolder(self.run_dir, self.args.srl_model)
            self.encoder = loadEncoder(folder, device="cpu")
            self._scale = learnedStateScale(VecEnvSettings.fromArgs(self.args), folder, self.encoder.state_dim,
                                            self.run_dir)
        self._normalisation = self._loadNormalisation(self.run_dir)
        return self

    def _loadNormalisation(self, run_dir: str) -> dict[str, Any] | None:
        """
        :param run_dir: the folder of vecnormalize.npz
        :return: ``{"stats": {key: (mean, var)}, "clip", "epsilon"}`` with key None for a plain observation and
            the Dict entries VecNormalize normalised otherwise; None when the observations are not normalised
        """

        path = os.path.join(run_dir, NORMALISATION_FILE)
        if self.srl_model == "raw_pixels" or not os.path.isfile(path):
            return None
        with np.load(path, allow_pickle=False) as data:
            if not bool(data["norm_obs"]):
                return None
            if self.goal_conditioned:
                keys = [key for key in GOAL_OBSERVATION_KEYS if f"obs.{key}.mean" in data]
                stats = {key: (np.array(data[f"obs.{key}.mean"]), np.array(data[f"obs.{key}.var"])) for key in keys}
            else:
                stats = {None: (np.array(data["obs.mean"]), np.array(data["obs.var"]))}
            return {"stats": stats, "clip": float(data["clip_obs"]), "epsilon": float(data["epsilon"])}

    def _resize(self, pixels: np.ndarray, img_shape: tuple[int, ...]) -> np.ndarray:
        channels, height, width = img_shape
        if pixels.shape[-1] != channels:
            raise ValueError(f"the run in {self.run_dir!r} sees {channels}-channel images, the generator's env gives "
                             f"{pixels.shape[-1]} (a second camera, --fpv/--multi-view, on one side only)")
        if pixels.shape[:2] != (height, width):
            # OpenCV resizes at most 4 channels: one camera (3 channels) at a time, as the env renders each
            pixels = np.concatenate([cv2.resize(np.ascontiguousarray(pixels[..., first:first + 3]), (width, height),
                                                interpolation=cv2.INTER_AREA).reshape(height, width, -1)
                                     for first in range(0, channels, 3)], axis=-1)
        return pixels

    def _observe(self, env: Any, pixels: np.ndarray) -> Any:
        if self.goal_conditioned:
            return env.unwrapped.goalObservation()
        if self.learned:
            image = self._resize(pixels, self.encoder.img_shape)
            with torch.no_grad():  # as rl_baselines.envs.srl_encoder.SRLEncoderVecEnv.encode
                state = self.encoder.getState(image[None])
            return np.asarray(state, dtype=np.float32).reshape(self.encoder.state_dim)
        if self.srl_model == "raw_pixels":
            return self._resize(pixels, self.img_shape)
        return np.asarray(env.unwrapped.getSRLState(), dtype=np.float32)

    def _normalise(self, value: np.ndarray, key: str | None) -> np.ndarray:
        norm = self._normalisation
        if norm is None or key not in norm["stats"]:
            return value
        mean, var = norm["stats"][key]
        return np.clip((value - mean) / np.sqrt(var + norm["epsilon"]), -norm["clip"], norm["clip"]).astype(np.float32)

    def reset(self, seed: int | None = None) -> None:
        """
        Start an episode: forget the frame stack (and, at the next action, a recurrent agent's memory) and, when given
        a seed, reseed the agent's action sampling.

        :param seed: seed of the agent's action sampling (its ``seedActionSampling``), None to leave it
        """
        self._stack = None
        self._episode_start = True
        if seed is not None:
            self.agent.seedActionSampling(seed)

    def observation(self, env: Any, pixels: np.ndarray) -> Any:
        """
        What the agent sees at this step (moves the frame stack on: call it once per step).

        :param env: the env being recorded (its state gives ground-truth and goal observations)
        :param pixels: the env's current image observation, uint8 (H, W, C)
        :return: a batch of one observation, as the run's VecEnv would give it (a dict of batches in goal mode)
        """
        obs = self._observe(env, pixels)
        if self.goal_conditioned:  # her allows no frame stacking (its train command refuses --num-stack)
            return {key: self._normalise(np.asarray(value, dtype=np.float32), key)[None] for key, value in obs.items()}
        if self.num_stack > 1:
            # VecFrameStack: zeros at reset, newest observation in the last channels.
            if self._stack is None:
                self._stack = np.zeros(obs.shape[:-1] + (obs.shape[-1] * self.num_stack,), dtype=obs.dtype)
            channels = obs.shape[-1]
            self._stack = np.roll(self._stack, -channels, axis=-1)
            self._stack[..., -channels:] = obs
            obs = self._stack
        return (self._normalise(obs, None) * self._scale)[None]

    def checkObservation(self, env: Any, pixels: np.ndarray) -> None:
        """
        Check that the agent can act on what :meth:`observation` gives from this env (the agent's observation space,
        when it exposes one: an algorithm whose ``makeEnv`` adds a wrapper, or keywords the env cannot take, makes it
        another). Leaves no frame in the stack.

        :param env: the env the agent would act on, just reset
        :param pixels: its observation
        :raises ValueError: another shape than the agent's (one line)
        """
        space = agentObservationSpace(self.agent)
        if space is None:
            return
        try:
            observed = self.observation(env, pixels)
        finally:
            self._stack = None
        if isinstance(space, gym.spaces.Dict):
            given = {key: tuple(np.shape(value)[1:]) for key, value in observed.items()}
            wanted = {key: tuple(entry.shape) for key, entry in space.spaces.items()}
        else:
            given, wanted = tuple(np.shape(observed)[1:]), tuple(space.shape)
            if len(given) == 3 and (given[2], *given[:2]) == wanted:  # an image SB3 transposes (VecTransposeImage)
                given = wanted
        if given != wanted:
            raise ValueError(f"the run in {self.run_dir!r} acts on observations of shape {wanted} and the dataset's env "
                             f"gives it {given}: its algorithm ({self.args.algo}) builds its env otherwise (makeEnv) "
                             f"than the dataset generator can rebuild")

    def act(self, env: Any, pixels: np.ndarray) -> Any:
        """
        :param env: the env being recorded (its state gives ground-truth and goal observations)
        :param pixels: the env's current image observation, uint8 (H, W, C)
        :return: the agent's action for this step (sampled from its policy; never one the env masks, for an agent
            that uses action masks)
        """
        # dones: the first step of an episode starts a recurrent agent's memory afresh (ppo_lstm), as in training
        action = self.agent.getAction(self.observation(env, pixels), dones=np.array([self._episode_start]),
                                      **actionMaskKeywords(self.agent, env))[0]
        self._episode_start = False
        return action if self.continuous else int(action)


def loadRunPolicy(run_dir: str, load: bool = True, num_threads: int | None = 1) -> RunPolicy:
    """
    :param run_dir: a run folder written by rl_baselines.train
    :param load: load the agent too (False: read only args.json, for checks)
    :param num_threads: torch threads when loading (one per process suits parallel recording)
    :return: its agent, ready to act when loaded
    :raises ValueError: the folder holds no usable run
    """
    policy = RunPolicy(run_dir)
    return policy.load(num_threads) if load else policy
