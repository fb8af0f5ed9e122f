"""A trained agent, loaded from its run folder, acting on an env that someone else built and steps.

The dataset generator (environments.dataset_generator) records episodes played by such an agent. It owns the env
(pixel observations at the dataset's image size) and asks the agent for one action per step; this module rebuilds
what the agent saw during training from that env: the image (resized to the run's image shape) or the ground-truth
state, frame-stacked and normalised with the statistics saved beside the model, as rl_baselines.utils.createEnvs
does (VecFrameStack, then VecNormalize).

environments must not import rl_baselines at module level (the dependency direction is
replay -> rl_baselines -> srl_models -> environments): the generator imports this module lazily, only when
``--policy`` names a run folder.
"""
from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

from rl_baselines.files import readJson

# Observation modes whose input can be rebuilt from the generator's env.
SUPPORTED_SRL_MODELS = ("raw_pixels", "ground_truth")


class RunPolicy:
    """
    The agent of a run folder written by rl_baselines.train, acting on one env.

    Building it reads only args.json (cheap, so that a caller can check the run against its own settings);
    :meth:`load` loads the agent.

    :param run_dir: the run folder (holds args.json, ``<algo>_model.*`` and vecnormalize.npz when normalised)
    :raises ValueError: the folder holds no usable run (one-line message)
    """

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        args_path = os.path.join(run_dir, "args.json")
        if not os.path.isdir(run_dir):
            raise ValueError(f"--policy {run_dir!r} is neither 'random' nor a folder")
        if not os.path.isfile(args_path):
            raise ValueError(f"--policy {run_dir!r} holds no run (no args.json); pass a folder written by "
                             f"rl_baselines.train")
        try:
            self.args = argparse.Namespace(**readJson(args_path))
        except (ValueError, TypeError) as error:
            raise ValueError(f"{args_path} is not a valid args.json ({error})") from None
        self.srl_model = getattr(self.args, "srl_model", None)
        if self.srl_model not in SUPPORTED_SRL_MODELS:
            raise ValueError(f"the run in {run_dir!r} observes {self.srl_model!r}; the dataset generator can replay "
                             f"agents trained on {', '.join(SUPPORTED_SRL_MODELS)} only")
        self.env_id: str = getattr(self.args, "env", None)
        self.continuous = bool(getattr(self.args, "continuous_actions", False))
        self.action_joints = bool(getattr(self.args, "action_joints", False))
        self.img_shape = tuple(getattr(self.args, "img_shape", None) or (3, 64, 64))
        self.num_stack = int(getattr(self.args, "num_stack", 1) or 1)
        self.agent: Any = None
        self._normalisation: dict[str, Any] | None = None
        self._stack: np.ndarray | None = None

    def load(self, num_threads: int | None = None) -> RunPolicy:
        """
        Load the agent and its observation normalisation (imports the algorithm, hence torch).

        :param num_threads: torch's intra-op threads for this process (None: leave torch's setting)
        :return: self
        :raises ValueError: the algorithm is not installed, or the model is missing or corrupt
        """
        if num_threads is not None:
            import torch

            torch.set_num_threads(num_threads)
        from rl_baselines.registry import registered_rl

        algo = getattr(self.args, "algo", None)
        if algo not in registered_rl:
            raise ValueError(f"the run in {self.run_dir!r} used algorithm {algo!r}, which is not installed")
        algo_class = registered_rl[algo][0]
        model_path = os.path.join(self.run_dir, f"{algo}_model{algo_class.MODEL_EXTENSION}")
        if not os.path.isfile(model_path):
            raise ValueError(f"--policy {self.run_dir!r} holds no model ({model_path} is missing)")
        self.agent = algo_class.load(model_path, self.args)  # ValueError on a corrupt model
        self._normalisation = self._loadNormalisation(self.run_dir)
        return self

    def _loadNormalisation(self, run_dir: str) -> dict[str, Any] | None:
        from rl_baselines.utils import NORMALISATION_FILE

        path = os.path.join(run_dir, NORMALISATION_FILE)
        if self.srl_model == "raw_pixels" or not os.path.isfile(path):
            return None
        with np.load(path, allow_pickle=False) as data:
            if not bool(data["norm_obs"]):
                return None
            return {"mean": np.array(data["obs.mean"]), "var": np.array(data["obs.var"]),
                    "clip": float(data["clip_obs"]), "epsilon": float(data["epsilon"])}

    def _observe(self, env: Any, pixels: np.ndarray) -> np.ndarray:
        if self.srl_model == "raw_pixels":
            _, height, width = self.img_shape
            if pixels.shape[:2] != (height, width):
                import cv2

                pixels = cv2.resize(pixels, (width, height), interpolation=cv2.INTER_AREA)
            return pixels
        return np.asarray(env.unwrapped.getSRLState(), dtype=np.float32)

    def reset(self, seed: int | None = None) -> None:
        """
        Start an episode: forget the frame stack and, when given a seed, reseed the agent's action sampling.

        :param seed: seed of torch's generator (SB3 samples actions with it), None to leave it
        """
        self._stack = None
        if seed is not None:
            import torch

            torch.manual_seed(seed)

    def act(self, env: Any, pixels: np.ndarray) -> Any:
        """
        :param env: the env being recorded (its state gives ground-truth observations)
        :param pixels: the env's current image observation, uint8 (H, W, C)
        :return: the agent's action for this step (sampled from its policy)
        """
        obs = self._observe(env, pixels)
        if self.num_stack > 1:
            # VecFrameStack: zeros at reset, newest observation in the last channels.
            if self._stack is None:
                self._stack = np.zeros(obs.shape[:-1] + (obs.shape[-1] * self.num_stack,), dtype=obs.dtype)
            channels = obs.shape[-1]
            self._stack = np.roll(self._stack, -channels, axis=-1)
            self._stack[..., -channels:] = obs
            obs = self._stack
        if self._normalisation is not None:
            norm = self._normalisation
            obs = np.clip((obs - norm["mean"]) / np.sqrt(norm["var"] + norm["epsilon"]), -norm["clip"], norm["clip"])
            obs = obs.astype(np.float32)
        action = self.agent.getAction(obs[None])[0]
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
