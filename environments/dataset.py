"""Reading a dataset written by ``python -m environments.dataset_generator`` (docs/architecture.md).

Both behaviour cloning (rl_baselines.runs.pretrain) and SRL training (srl_models) read datasets, and both sit above
environments in the dependency order, so the reader lives here, beside the writer.

Arrays a dataset may lack (an srl-zoo dataset recorded elsewhere, say) are None: each consumer checks for what it
needs (``Dataset.require``) and says which key is missing. Every problem of a dataset's files (unreadable, cut short,
empty, arrays of different lengths) and of its content for a run (``Dataset.checkActions``, ``Dataset.checkStates``:
actions outside the run's action space, values that are not finite) is a one-line ValueError.

A dataset's fingerprint (``Dataset.fingerprint``) says whether a folder still holds the frames a model was trained on
(srl_models.train records it; evaluate and prepare compare it): it depends on the content only, not on the folder's
name or path, so two recordings with the same settings and seed on one machine share it, and a re-recording into the
same folder (``dataset_generator -f``) almost always changes it. Its frame settings (``Dataset.frameSettings``: random
target, action kind, force_down) say which env settings drew its frames (srl_models.train records them in a model).
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import cv2
import gymnasium as gym
import numpy as np

from environments.srl_env import ENV_GLOBALS_FILE, REFERENCE_RENDERER
from srl_toolbox.files import NPZ_READ_ERRORS, NotNpzFile, loadNpz, readJson

DATA_FILE = "preprocessed_data.npz"
GROUND_TRUTH_FILE = "ground_truth.npz"
CONFIG_FILE = "dataset_config.json"
# The env settings that shape a dataset's frames (Dataset.frameSettings): srl_models.train records them in a model's
# exp_config, so that a run with other settings is warned that the model's states may not cover its frames.
FRAME_SETTINGS = ("random_target", "continuous_actions", "action_joints", "force_down")
# (file, key) of each array, in the order they are described to users.
ARRAY_KEYS = {
    "actions": DATA_FILE, "rewards": DATA_FILE, "episode_starts": DATA_FILE,
    "ground_truth_states": GROUND_TRUTH_FILE, "target_positions": GROUND_TRUTH_FILE, "images_path": GROUND_TRUTH_FILE,
    "step_target_positions": GROUND_TRUTH_FILE,
}


def recordedEnvKeyword(folder: str, name: str, defaults_too: bool = False) -> Any:
    """
    :param folder: a dataset folder
    :param name: an env constructor keyword
    :param defaults_too: fall back on the env's default recorded beside the keywords
    :return: the keyword's value the dataset's env was made with, as its env_globals.json records it (getGlobals);
        None where the file is missing or unreadable, or holds no such keyword
    """
    try:
        env_globals = readJson(os.path.join(folder, ENV_GLOBALS_FILE))
        value = env_globals.get("env_kwargs", {}).get(name)
        return env_globals.get("defaults", {}).get(name) if value is None and defaults_too else value
    except (OSError, ValueError, AttributeError):
        return None


class Dataset:
    """
    The arrays and configuration of one dataset folder (images are read on demand).

    :param path: the dataset folder
    :param config: dataset_config.json
    :param arrays: key -> array for every key of ARRAY_KEYS present in the npz files
    """

    def __init__(self, path: str, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.path = path
        self.config = config
        self.arrays = arrays

    @classmethod
    def open(cls, path: str) -> Dataset:
        """
        :param path: the dataset folder
        :return: the dataset, arrays loaded (without pickle)
        :raises ValueError: not a dataset folder, or unreadable files (one line)
        """
        if not os.path.isdir(path):
            raise ValueError(f"dataset {path!r} is not a folder")
        for name in (DATA_FILE, CONFIG_FILE):
            if not os.path.isfile(os.path.join(path, name)):
                raise ValueError(f"{path!r} is not a dataset (no {name}); record one with "
                                 "python -m environments.dataset_generator")
        arrays: dict[str, np.ndarray] = {}
        try:
            with open(os.path.join(path, CONFIG_FILE), encoding="utf-8") as handle:
                config = json.load(handle)
            for file_name in (DATA_FILE, GROUND_TRUTH_FILE):
                file_path = os.path.join(path, file_name)
                if not os.path.isfile(file_path):
                    continue
                with loadNpz(file_path, "a dataset file") as data:
                    for key, source in ARRAY_KEYS.items():
                        if source == file_name and key in data.files:
                            arrays[key] = data[key]
        except NotNpzFile as error:
            raise ValueError(str(error)) from None
        except (*NPZ_READ_ERRORS, KeyError) as error:
            raise ValueError(f"{path!r} is not a readable dataset ({type(error).__name__}: {error})") from None
        if not isinstance(config, dict):
            raise ValueError(f"{path!r}: {CONFIG_FILE} is not a JSON object")
        scalars = [key for key, array in arrays.items() if array.ndim == 0]
        if scalars:
            raise ValueError(f"{path!r}: {scalars[0]} is a single value, not one per row")
        dataset = cls(path, config, arrays)
        lengths = {key: len(arrays[key]) for key in ("actions", "rewards", "episode_starts", "ground_truth_states",
                                                     "step_target_positions", "images_path") if key in arrays}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"{path!r} has arrays of different lengths: "
                             + ", ".join(f"{key} {n}" for key, n in lengths.items()))
        return dataset

    @classmethod
    def readSettings(cls, path: str) -> Dataset:
        """
        :param path: a dataset folder
        :return: the dataset without its arrays (its dataset_config.json only: the settings, not the content)
        :raises ValueError: no readable dataset_config.json there (one line)
        """
        try:
            config = readJson(os.path.join(path, CONFIG_FILE))
        except (OSError, ValueError) as error:
            raise ValueError(f"{path!r} holds no readable {CONFIG_FILE} ({error})") from None
        if not isinstance(config, dict):
            raise ValueError(f"{path!r}: {CONFIG_FILE} is not a JSON object")
        return cls(path, config, {})

    def __len__(self) -> int:
        for key in ("episode_starts", "actions", "images_path"):
            if key in self.arrays:
                return len(self.arrays[key])
        return 0

    def __getitem__(self, key: str) -> np.ndarray:
        return self.arrays[key]

    def fingerprint(self) -> str:
        """
        sha256 (hex) over dataset_config.json (as parsed, keys sorted), every array of ARRAY_KEYS the dataset holds
        (dtype, shape and values; images_path without its first component, the folder's name) and the name and size
        of each image file images_path names (a missing one: size -1); not the images' bytes, which would cost a read
        of every frame.

        :return: the fingerprint
        """
        digest = hashlib.sha256(json.dumps(self.config, sort_keys=True, default=str).encode("utf-8"))
        for key in sorted(self.arrays):
            array = self.arrays[key]
            if key == "images_path":
                array = np.array([str(stem).split("/", 1)[-1] for stem in array])
            digest.update(f"\n{key}:{array.dtype.str}:{array.shape}\n".encode())
            digest.update(np.ascontiguousarray(array).tobytes())
        views = ("_1", "_2") if self.config.get("multi_view") else ("",)
        for stem in self.arrays.get("images_path", ()):
            for view in views:
                file = self.imageFile(str(stem), view)
                try:
                    size = os.path.getsize(file)
                except OSError:
                    size = -1
                digest.update(f"{os.path.relpath(file, self.path)}:{size}\n".encode())
        return digest.hexdigest()

    def has(self, key: str) -> bool:
        """:param key: an array name (see ARRAY_KEYS)
        :return: whether the dataset holds it"""
        return key in self.arrays

    def require(self, *keys: str, purpose: str = "") -> None:
        """
        :param keys: array names that must be present
        :param purpose: what needs them, for the message ("the reward loss")
        :raises ValueError: naming the first missing key and its file
        """
        for key in keys:
            if key not in self.arrays:
                needed = f" needed by {purpose}" if purpose else ""
                file = ARRAY_KEYS[key]
                if not os.path.isfile(os.path.join(self.path, file)):  # (not a key missing from a file that is there)
                    raise ValueError(f"dataset {self.path!r} has no {file}, which holds {key!r}{needed}")
                raise ValueError(f"dataset {self.path!r} has no {key!r} (in {file}){needed}")

    @property
    def env_id(self) -> str | None:
        """The env the dataset was recorded on (None for datasets that do not say)."""
        return self.config.get("env")

    @property
    def renderer(self) -> str:
        """What drew the images (a dataset that does not say was drawn by TinyRenderer)."""
        return str(self.config.get("renderer", REFERENCE_RENDERER))

    @property
    def img_shape(self) -> tuple[int, int, int]:
        """(channels, height, width) of one observation: 6 channels for two-camera datasets."""
        channels, height, width = self.config.get("img_shape", (3, 64, 64))
        return (6 if self.config.get("multi_view") else int(channels), int(height), int(width))

    @property
    def continuous_actions(self) -> bool:
        """Whether actions are continuous vectors."""
        return bool(self.config.get("continuous_actions", self.arrays.get("actions", np.zeros(0)).ndim == 2))

    @property
    def random_target(self) -> bool | None:
        """Whether the target moved to a random place every episode (``-r``, where the env offers it); None for a
        dataset that does not say."""
        random_target = self.config.get("random_target")
        return None if random_target is None else bool(random_target)

    def frameSettings(self) -> dict[str, bool]:
        """
        :return: the env settings that shaped the frames, those the dataset records (:data:`FRAME_SETTINGS`):
            random_target, continuous_actions (said by dataset_config.json or by the actions' shape), action_joints,
            force_down (an env without it, or a dataset that does not say: left out)
        """
        known = "continuous_actions" in self.config or "actions" in self.arrays
        settings = {"random_target": self.random_target,
                    "continuous_actions": self.continuous_actions if known else None,
                    "action_joints": self.action_joints, "force_down": self.force_down}
        return {key: value for key, value in settings.items() if value is not None}

    @property
    def action_joints(self) -> bool | None:
        """Whether actions move the arm's joints (``--action-joints``); None for a dataset that does not say."""
        joints = self.config.get("action_joints")
        return None if joints is None else bool(joints)

    @property
    def force_down(self) -> bool | None:
        """Whether an arm's effector moves never went up (``--force-down``: discrete action 5 moves down); None for
        an env without that keyword or a dataset that does not say (read from env_globals.json where
        dataset_config.json predates the key)."""
        if "force_down" in self.config:
            return None if self.config["force_down"] is None else bool(self.config["force_down"])
        value = recordedEnvKeyword(self.path, "force_down", defaults_too=True)
        return None if value is None else bool(value)

    def checkActions(self, continuous: bool, action_joints: bool, action_space: gym.Space,
                     force_down: bool | None = None) -> None:
        """
        Check the actions against those of a run that learns from them (imitation, behaviour cloning).

        :param continuous: whether the run's actions are continuous (``-c``)
        :param action_joints: whether they move an arm's joints (``--action-joints``; checked where the dataset
            records it)
        :param action_space: the run's action space
        :param force_down: whether the run's effector moves never go up (``--force-down``; None: not checked;
            checked for effector moves where the dataset records it: the same action means another move)
        :raises ValueError: one line naming the problem: another action kind, or the first action the space cannot
            take (a shape other than the space's, a discrete action not an integer in its range, a continuous one not
            finite), with the valid ones
        """
        self.require("actions")
        if self.continuous_actions != continuous:
            kind = "continuous" if self.continuous_actions else "discrete"
            hint = "add -c/--continuous-actions" if self.continuous_actions else "drop -c/--continuous-actions"
            raise ValueError(f"{self.path!r} holds {kind} actions ({hint})")
        if self.action_joints is not None and self.action_joints != action_joints:
            hint = "add --action-joints" if self.action_joints else "drop --action-joints"
            raise ValueError(f"{self.path!r} holds {'joint' if self.action_joints else 'end-effector'} actions "
                             f"({hint})")
        recorded = self.force_down
        if force_down is not None and recorded is not None and not action_joints and recorded != bool(force_down):
            hint = "add --force-down" if recorded else "drop --force-down"
            raise ValueError(f"{self.path!r} was recorded with{'' if recorded else 'out'} --force-down (the effector "
                             f"never moving up): its actions mean other moves than this run's ({hint})")
        actions = self.arrays["actions"]
        if not (np.issubdtype(actions.dtype, np.number) or actions.dtype == bool):
            raise ValueError(f"{self.path!r} holds actions of type {actions.dtype}, not numbers")
        if isinstance(action_space, gym.spaces.Discrete):
            first, n = int(action_space.start), int(action_space.n)
            valid = f"valid: integers {first}..{first + n - 1} (the env's {n} discrete actions)"
            if actions.ndim != 1 and actions.shape[1:] != (1,):
                raise ValueError(f"{self.path!r} holds actions of shape {actions.shape[1:]} per row; {valid}")
            flat = actions.reshape(-1)
            bad = ~np.isfinite(flat.astype(np.float64)) | (flat != np.round(flat)) | (flat < first) \
                | (flat >= first + n)
            if bad.any():
                row = int(np.argmax(bad))
                raise ValueError(f"{self.path!r}: action {flat[row].item()!r} (row {row}) is not one of the env's; {valid}")
            return
        if isinstance(action_space, gym.spaces.Box):
            shape = tuple(action_space.shape)
            rows = actions.reshape(len(actions), -1)
            if tuple(rows.shape[1:]) != (int(np.prod(shape)),) or (actions.ndim > 2 and actions.shape[1:] != shape):
                joints = {True: " (recorded with --action-joints)", False: " (recorded without --action-joints)"}
                raise ValueError(f"{self.path!r} holds actions of shape {tuple(actions.shape[1:])} per row"
                                 f"{joints.get(self.action_joints, '')}, the run's are {shape}")
            bad = ~np.isfinite(rows.astype(np.float64)).all(axis=1)
            if bad.any():
                row = int(np.argmax(bad))
                raise ValueError(f"{self.path!r}: action {rows[row].tolist()} (row {row}) is not finite; valid: "
                                 f"finite values (the env clips them to [{action_space.low.min():g}, "
                                 f"{action_space.high.max():g}])")

    def checkStates(self) -> None:
        """:raises ValueError: one line naming the first ground-truth state (or target) that is not finite"""
        for key in ("ground_truth_states", "target_positions", "step_target_positions"):
            if key not in self.arrays:
                continue
            values = self.arrays[key]
            if not np.issubdtype(values.dtype, np.number):
                raise ValueError(f"{self.path!r} holds {key} of type {values.dtype}, not numbers")
            bad = ~np.isfinite(values.reshape(len(values), -1).astype(np.float64)).all(axis=1)
            if bad.any():
                row = int(np.argmax(bad))
                raise ValueError(f"{self.path!r}: {key} {values[row].tolist()} (row {row}) is not finite; valid: "
                                 "finite numbers")

    def episodeIndex(self) -> np.ndarray:
        """:return: the episode of each row (from episode_starts)"""
        self.require("episode_starts")
        return np.cumsum(self.arrays["episode_starts"].astype(bool)) - 1

    def states(self, relative: bool | None = None) -> np.ndarray:
        """
        :param relative: subtract the target's position (default: as the recording env did, relative_pos): the
            target at each row (step_target_positions), or, in a dataset recorded without it, the episode's target
            at its start (the same for an env whose target stays put)
        :return: float32 ground-truth states, one row per observation
        """
        self.require("ground_truth_states")
        states = self.arrays["ground_truth_states"].astype(np.float32)
        if relative is None:
            relative = bool(self.config.get("relative_pos", True))
        if relative and "step_target_positions" in self.arrays:
            states = states - self.arrays["step_target_positions"].astype(np.float32)
        elif relative:
            self.require("target_positions", purpose="relative ground truth")
            states = states - self.arrays["target_positions"].astype(np.float32)[self.episodeIndex()]
        return states

    def targetMoves(self) -> bool:
        """:return: whether the target moved within an episode (the target at each row, step_target_positions,
        differs from the episode's at its start): relative ground truth then follows it row by row"""
        if "step_target_positions" not in self.arrays or "target_positions" not in self.arrays:
            return False
        starts = self.arrays["target_positions"][self.episodeIndex()]
        return not np.array_equal(self.arrays["step_target_positions"], starts)

    def imageFile(self, stem: str, view: str = "") -> str:
        """
        :param stem: an images_path entry, "<name>/record_NNN/frameNNNNNN" (the dataset may since have been renamed)
        :param view: "" for one camera, "_1"/"_2" for the two views of a two-camera dataset
        :return: the image file
        """
        return os.path.join(self.path, stem.split("/", 1)[-1] + f"{view}.{self.config.get('image_format', 'jpg')}")

    def loadImages(self, indices: np.ndarray | None = None, img_shape: tuple[int, int, int] | None = None) -> np.ndarray:
        """
        :param indices: rows to read (default: all)
        :param img_shape: (C, H, W) the images are resized to (default: as recorded)
        :return: uint8 (n, H, W, C) RGB images, C = 6 for two-camera datasets (views stacked on channels)
        :raises ValueError: an image is missing or unreadable, or not of the dataset's recorded size
        """

        self.require("images_path", purpose="image loading")
        stems = self.arrays["images_path"] if indices is None else self.arrays["images_path"][np.asarray(indices)]
        height, width = (img_shape or self.img_shape)[1:]
        recorded = tuple(self.img_shape[1:])
        views = ("_1", "_2") if self.config.get("multi_view") else ("",)
        images = np.empty((len(stems), height, width, 3 * len(views)), dtype=np.uint8)
        log_level = cv2.utils.logging.getLogLevel()
        # OpenCV's own warning for a missing or undecodable file (findDecoder ...) would precede the one-line error
        cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)
        try:
            for i, stem in enumerate(stems):
                for v, view in enumerate(views):
                    file = self.imageFile(str(stem), view)
                    image = cv2.imread(file, cv2.IMREAD_COLOR)
                    if image is None:
                        raise ValueError(f"cannot read image {file}"
                                         + ("" if os.path.isfile(file) else ": the file is missing"))
                    if image.shape[:2] != recorded:
                        raise ValueError(f"image {file} is {image.shape[0]}x{image.shape[1]}, the dataset records "
                                         f"{recorded[0]}x{recorded[1]} images: record it again, or leave it out")
                    if image.shape[:2] != (height, width):
                        image = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
                    images[i, :, :, 3 * v:3 * v + 3] = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
        finally:
            cv2.utils.logging.setLogLevel(log_level)
        return images
