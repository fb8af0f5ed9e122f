"""The SRL model contract (docs/architecture.md): a batch of camera images in, a batch of low-dimensional states out.

Every model, built in or from a plugin, is a :class:`BaseSRLModel` subclass registered under the entry-point group
``srl_toolbox.srl_models``. A trained model lives in its own folder:

    <model folder>/
        exp_config.json   {"srl_model": registered name, "state_dim", "img_shape": [C, H, W], "env", "losses",
                           "weights": [files], "api_version", ... training settings}; enough to rebuild the model
                          (and "dataset_fingerprint": what srl_models.train read, environments.dataset's fingerprint;
                          "dataset_env": the env settings that drew the dataset's frames, {"random_target",
                          "continuous_actions", "action_joints", "force_down"}, those the dataset records)
        <weights files>   listed in exp_config["weights"] (torch ``.pt`` state dicts, or ``.npz`` arrays)

The observation-mode names the envs compute themselves (ground_truth, raw_pixels, joints, joints_position) are
registered too, as :class:`EnvironmentSRLModel` entries, so ``--srl-model`` lists one table.
"""
from __future__ import annotations

import abc
import enum
import hashlib
import json
import os
from typing import Any

import numpy as np

from srl_toolbox.cli import pythonCommand
from srl_toolbox.files import NotNpzFile, loadNpz, sha256File

EXP_CONFIG_FILE = "exp_config.json"
# Written in every run folder that uses a learned SRL model (it names the model and its hash).
RUN_RECORD_FILE = "srl_model.json"
# srl_models.evaluate's record of the sampled frames' learned states (key "states"), beside their ground truth.
STATES_FILE = "states.npz"
# exp_config key of the training dataset's fingerprint (environments.dataset.Dataset.fingerprint); absent in models
# trained before it was recorded
DATASET_FINGERPRINT_KEY = "dataset_fingerprint"

# exp_config key of the env settings that drew the training dataset's frames (environments.dataset.FRAME_SETTINGS,
# those the dataset records); absent in models trained before it was recorded (read from the dataset then:
# srl_models.config.trainedFrameSettings)
DATASET_ENV_KEY = "dataset_env"


class SRLType(enum.Enum):
    """Where a state comes from."""

    ENVIRONMENT = "environment"  # computed by the env (no training)
    LEARNED = "learned"          # an encoder trained on a dataset, fed with the env's images


class BaseSRLModel(abc.ABC):
    """
    A trained state representation: ``getState(images) -> states``.

    :param state_dim: size of a state
    :param img_shape: (channels, height, width) of the images it encodes (6 channels: two cameras)
    :param exp_config: the settings it was built and trained with (written to exp_config.json)
    """

    API_VERSION = 1
    SRL_TYPE = SRLType.LEARNED
    DECODES = False  # True when decode() turns states back into images (latent-space explorer, reconstructions)

    def __init__(self, state_dim: int, img_shape: tuple[int, int, int], exp_config: dict[str, Any] | None = None) -> None:
        self.state_dim = int(state_dim)
        self.img_shape = tuple(int(v) for v in img_shape)
        self.exp_config = dict(exp_config or {})

    @abc.abstractmethod
    def getState(self, observations: np.ndarray) -> np.ndarray:
        """
        :param observations: uint8 images, (n, H, W, C) as the envs return them
        :return: float32 (n, state_dim)
        """
        raise NotImplementedError

    def decode(self, states: np.ndarray) -> np.ndarray:
        """
        :param states: float32 (n, state_dim)
        :return: uint8 (n, H, W, C) images (only when DECODES)
        """
        raise NotImplementedError(f"{type(self).__name__} does not decode states into images")

    @abc.abstractmethod
    def save(self, folder: str) -> None:
        """
        Write the weights and exp_config.json (atomically) into ``folder``.

        :param folder: the model folder (created if needed)
        """
        raise NotImplementedError

    @classmethod
    @abc.abstractmethod
    def load(cls, folder: str, device: str = "cpu") -> BaseSRLModel:
        """
        :param folder: a folder written by :meth:`save`
        :param device: torch device for the encoder ("cpu", "cuda")
        :return: the model, ready for getState
        """
        raise NotImplementedError


class EnvironmentSRLModel(BaseSRLModel):
    """Marker of the observation modes the envs compute themselves: nothing to train, load or encode."""

    SRL_TYPE = SRLType.ENVIRONMENT


def recordedStates(folder: str) -> np.ndarray | None:
    """
    :param folder: a model folder
    :return: the learned states srl_models.evaluate recorded there (n, state dim), None when it has recorded none
    :raises ValueError: the file is there but unreadable (one line)
    """
    path = os.path.join(folder, STATES_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with loadNpz(path) as data:
            return np.asarray(data["states"], dtype=np.float64)
    except NotNpzFile as error:
        raise ValueError(str(error)) from None
    except (OSError, ValueError, KeyError) as error:
        raise ValueError(f"{path} cannot be read ({error})") from None


def readExpConfig(folder: str) -> dict[str, Any]:
    """
    :param folder: a model folder
    :return: its exp_config.json
    :raises ValueError: missing or unreadable (one line)
    """
    path = os.path.join(folder, EXP_CONFIG_FILE)
    if not os.path.isdir(folder):
        raise ValueError(f"SRL model folder {folder!r} "
                         + ("is a file, not a folder" if os.path.exists(folder) else "does not exist"))
    if not os.path.isfile(path):
        raise ValueError(f"{folder!r} is not an SRL model folder (no {EXP_CONFIG_FILE}); train one with "
                         f"{pythonCommand()} -m srl_models.train")
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} is not readable JSON ({error})") from None
    if not isinstance(config, dict) or "srl_model" not in config or "state_dim" not in config:
        raise ValueError(f"{path} lacks 'srl_model'/'state_dim': not written by srl-toolbox")
    return config


# exp_config keys that say what a training produced, not how the model was made (the dataset's fingerprint too: the
# same recording on another machine may differ in the last bits of its ground truth or in its JPEG sizes)
OUTCOME_KEYS = ("train_loss", "val_loss", "epochs_trained", "updates_trained", "best_epoch", "selected_on",
                DATASET_FINGERPRINT_KEY)


def missingWeights(folder: str, config: dict[str, Any]) -> list[str]:
    """
    :param folder: a model folder
    :param config: its exp_config.json
    :return: the weights files its exp_config lists that are not in the folder
    :raises ValueError: ``weights`` is not a list of file names (a plugin's exp_config giving one name as a string)
    """
    weights = config.get("weights", [])
    if not isinstance(weights, list) or not all(isinstance(name, str) for name in weights):
        raise ValueError(f"{folder!r}: exp_config.json's weights must be a list of file names in the folder, not "
                         f"{weights!r}")
    return [name for name in weights if not os.path.isfile(os.path.join(folder, name))]


def modelRecipe(folder: str) -> str:
    """
    :param folder: a model folder
    :return: sha256 (hex) over its exp_config without :data:`OUTCOME_KEYS` and :data:`DATASET_ENV_KEY` (the
        dataset's settings, which its folder name names) and with ``data_folder`` reduced to the dataset's folder
        name: equal for two trainings of a model with the same settings and code, wherever they ran (and whether
        they recorded the dataset's settings or predate that), while their weights (:func:`modelHash`) may differ in
        the last bits between machines
    """
    config = {key: value for key, value in readExpConfig(folder).items()
              if key not in OUTCOME_KEYS and key != DATASET_ENV_KEY}
    if isinstance(config.get("data_folder"), str):
        config["data_folder"] = os.path.basename(os.path.normpath(config["data_folder"]))
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode("utf-8")).hexdigest()


def modelHash(folder: str) -> str:
    """
    :param folder: a model folder
    :return: sha256 (hex) over exp_config.json and the weights files it lists, in order: what a run records to say
        which SRL model it used
    """
    config = readExpConfig(folder)
    digest = hashlib.sha256()
    for name in [EXP_CONFIG_FILE, *config.get("weights", [])]:
        digest.update(f"{name}:{sha256File(os.path.join(folder, name))}\n".encode())
    return digest.hexdigest()
