"""python -m srl_models.prepare: make a learned SRL model usable by the RL side in one command.

    python -m srl_models.prepare --env MobileRobotGymEnv-v0 --srl-model vae
    python -m srl_models.prepare --env KukaButtonGymEnv-v0 -r --srl-model vae autoencoder srl_splits

For the env it records a dataset with ``environments.dataset_generator`` (random policy), trains each named model on
it with ``srl_models.train``'s machinery (in this process: a :class:`GeneratorConfig` and one :class:`SRLTrainConfig`
per model, checked by those commands' own checks), evaluates it (GTC, KNN-MSE, linear probe:
``srl_models.evaluate``) and registers its folder in the SRL config YAML (``srl_models.config.registerModel``:
``{env: {name: folder}}``, atomic, other entries and comments kept), then prints a summary table.
``python -m rl_baselines.train --env ENV --srl-model NAME`` then finds the model.

Invariants:

- Every input is checked (the dataset's and each training's settings included) before anything is written; PCA's
  state dimension against the most training images the dataset can hold (a reused one: the exact count).
- The dataset folder is named after the settings that decide its content (:func:`datasetName`); an existing one is
  reused only when its ``dataset_config.json`` holds those settings, an interrupted one is resumed.
- A model is reused when a finished folder (evaluated: ``gt_correlation.json`` and ``knn_mse.json`` written) under
  ``<log folder>/<dataset name>/`` was trained on that dataset with the same settings (:func:`trainingSettings`,
  the training command's defaults included), holds every weights file its exp_config.json lists, and, where its
  exp_config.json records the dataset's fingerprint, was trained on the dataset the folder holds now (not an earlier
  recording); ``--force`` records and trains again.
- The per-env defaults live in :data:`ENV_DEFAULTS` only.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from environments import dataset_generator, envOffers, getEnvClass, registered_env, resolvedRenderer
from environments.dataset import Dataset, recordedEnvKeyword
from environments.generator_config import GeneratorConfig
from environments.partial_folder import differingText
from environments.registry import defaultRenderersText, unknownEnvText
from environments.srl_env import REFERENCE_RENDERER, RENDERERS
from srl_models import train
from srl_models.augment import AUGMENTATIONS, MAX_PAD, PAD
from srl_models.base import DATASET_FINGERPRINT_KEY, missingWeights
from srl_models.config import SRLLookupError, defaultConfigFile, readSRLConfig, registerModel
from srl_models.evaluate import PROBE_FILE, SINGLE_EPISODE
from srl_models.pca import PCAModel
from srl_models.registry import failedSRLPlugins
from srl_models.train import trainFromConfig
from srl_models.train_choices import (
    foregroundWeight,
    resolveModel,
    resolveTraining,
    trainableModels,
    trainingEntries,
    trainsLoss,
)
from srl_models.train_config import MAX_STATE_DIM, SRLTrainConfig
from srl_models.trainer import heldOutEpisodeCount, splitEpisodes
from srl_toolbox.cli import (
    IMAGE_SIDES,
    INTERRUPTED_EXIT_CODE,
    WINDOW_HINT,
    CLIParser,
    UsageError,
    addProgressArgument,
    addSeedArgument,
    checkWritableFolder,
    intInRange,
    nonEmptyText,
    positiveInt,
    pythonCommand,
    runCommand,
)
from srl_toolbox.devices import checkedDevice
from srl_toolbox.errors import UsageWarning
from srl_toolbox.plugins import SkippedPluginWarning
from srl_toolbox.terminal import HeldWarnings


@dataclasses.dataclass(frozen=True)
class PrepareDefaults:
    """
    What ``prepare`` uses for an env when the flag is left out.

    :param episodes: random-policy episodes recorded (``--episodes``)
    :param img_size: height and width of the images (``--img-shape 3 S S``)
    :param state_dim: size of the learned state (``--state-dim``)
    :param epochs: maximum training epochs (``--epochs``; early stopping may end sooner)
    :param max_steps: the recorded episodes' length cap (the generator's ``--max-steps``; None: the env's own), named
        in the dataset's name; no flag sets it
    """

    episodes: int
    img_size: int
    state_dim: int
    epochs: int
    max_steps: int | None = None


# Sized so that one model of MobileRobotGymEnv-v0 (dataset, training, evaluation) takes about 5 minutes on 2 cores:
# 20 episodes of 250 steps are 5000 frames. Kuka's random episodes end after about 25 steps and the env renders
# slowly (about 175 frames/s at 64x64), so 160 episodes give about 4000 frames in well under a minute. CarRacing's
# random episodes would run its 10000 steps (MAX_STEPS): they are cut at 250 steps, as many frames as MobileRobot's.
ENV_DEFAULTS: dict[str, PrepareDefaults] = {
    "MobileRobotGymEnv-v0": PrepareDefaults(episodes=20, img_size=64, state_dim=32, epochs=10),
    "KukaButtonGymEnv-v0": PrepareDefaults(episodes=160, img_size=64, state_dim=32, epochs=10),
    "CarRacingGymEnv-v0": PrepareDefaults(episodes=20, img_size=64, state_dim=32, epochs=10, max_steps=250),
}
# Envs not listed take the entry of their family (the id's prefix), else FALLBACK_DEFAULTS.
FAMILY_DEFAULTS = {"MobileRobot": "MobileRobotGymEnv-v0", "Kuka": "KukaButtonGymEnv-v0"}
FALLBACK_DEFAULTS = PrepareDefaults(episodes=20, img_size=64, state_dim=32, epochs=10)
DATASET_CONFIG = "dataset_config.json"
# What the generator's interrupt line says to do next (its own --resume is no flag of this command).
RESUME_HINT = "run the same prepare command again to finish it, or with --force to record it from the start"
# The second camera's flag (GeneratorConfig field) -> its dataset name suffix.
CAMERA_SUFFIXES = {"multi_view": "_mv", "fpv": "_fpv"}
# Files srl_models.evaluate writes last: a model folder with them is finished.
FINISHED_FILES = ("gt_correlation.json", "knn_mse.json")


def envDefaults(env_id: str) -> PrepareDefaults:
    """
    :param env_id: a registered env id
    :return: its defaults: its own row of ENV_DEFAULTS, else its family's, else FALLBACK_DEFAULTS
    """
    if env_id in ENV_DEFAULTS:
        return ENV_DEFAULTS[env_id]
    for prefix, reference in FAMILY_DEFAULTS.items():
        if env_id.startswith(prefix):
            return ENV_DEFAULTS[reference]
    return FALLBACK_DEFAULTS


def buildParser() -> CLIParser:
    """:return: the command-line parser"""

    table = "; ".join(f"{env}: {d.episodes} episodes{f' of at most {d.max_steps} steps' if d.max_steps else ''}, "
                      f"{d.img_size}x{d.img_size}, state dim {d.state_dim}, {d.epochs} epochs"
                      for env, d in ENV_DEFAULTS.items())
    parser = CLIParser(prog="python -m srl_models.prepare",
                           description="Record a dataset for an env (or reuse one), train SRL models on it (or reuse "
                                       "them), evaluate them and register them in the SRL config file, so that "
                                       "rl_baselines.train --srl-model NAME finds them. Per-env defaults: "
                                       f"{table}; other envs: their family's, else "
                                       f"{FALLBACK_DEFAULTS.episodes} episodes, {FALLBACK_DEFAULTS.img_size}x"
                                       f"{FALLBACK_DEFAULTS.img_size}, state dim {FALLBACK_DEFAULTS.state_dim}, "
                                       f"{FALLBACK_DEFAULTS.epochs} epochs.")
    parser.addFlagHints({"--render": WINDOW_HINT})
    parser.add_argument("--env", required=True, help="registered env id")
    parser.add_argument("--srl-model", nargs="+", required=True, metavar="NAME",
                        help=f"learned models to train on the same dataset: {', '.join(trainableModels())}")
    parser.addValueChoices({"--env": ("envs", sorted(registered_env)), "--srl-model": ("models", trainableModels())})
    parser.add_argument("-r", "--random-target", action="store_true", help="a new target position every episode")
    parser.add_argument("--multi-view", action="store_true",
                        help="record two cameras (Kuka arms): the models encode 6-channel images, for train's "
                             "--multi-view runs")
    parser.add_argument("--fpv", action="store_true",
                        help="record the first-person view stacked with the top view (mobile robots): the models "
                             "encode 6-channel images, for train's --fpv runs")
    parser.add_argument("--episodes", type=positiveInt, default=None, help="episodes to record [per env]")
    parser.add_argument("--img-shape", type=positiveInt, nargs=3, default=None, metavar=("C", "H", "W"),
                        help=f"image shape, 3 H W with H, W in {IMAGE_SIDES} [per env, 3 64 64]")
    parser.add_argument("--state-dim", type=intInRange(1, MAX_STATE_DIM), default=None,
                        help=f"size of the learned state, 1..{MAX_STATE_DIM} [per env]")
    parser.add_argument("--renderer", choices=RENDERERS, default=None,
                        help="what draws the dataset's images: tinyrenderer (PyBullet's, the reference; Omnirobot's "
                        "and CarRacing's own drawing), sprites (mobile robots, faster) or lowpoly (Kuka arms, "
                        "faster); a dataset drawn by another than "
                        f"tinyrenderer has a _<renderer> suffix [the env's default: {defaultRenderersText()}]")
    parser.add_argument("--epochs", type=positiveInt, default=None,
                        help="maximum training epochs of the models that train a loss (pca and random have none: "
                             "a pca prepared with other --epochs is reused) [per env]")
    parser.add_argument("--augment", choices=tuple(AUGMENTATIONS), default=None,
                        help="augmentation of the views every model's losses see: none or shift (a random shift of "
                             "up to --shift-pad pixels; pca and random train no loss: they take none, with a warning) "
                             "[none; curl: shift]")
    parser.add_argument("--shift-pad", type=intInRange(1, MAX_PAD), default=None,
                        help=f"--augment shift's largest shift in pixels, 1..{MAX_PAD}, for the models whose views are "
                             f"shifted [{PAD}]")
    addSeedArgument(parser, help="seed of the dataset and of the training [0]")
    parser.add_argument("--num-cpu", type=positiveInt, default=None,
                        help="dataset recording processes [the CPU count, at most --episodes]")
    parser.add_argument("--data-folder", default="data/", help="folder of the datasets [data/]")
    parser.add_argument("--log-folder", default=os.path.join("logs", "srl"),
                        help="root of the SRL model folders [logs/srl]")
    parser.add_argument("--srl-config-file", type=nonEmptyText, default=None,
                        help="the SRL config YAML to register the models in [the one rl_baselines.train reads by "
                             "default: $SRL_MODELS_CONFIG, else config/srl_models.yaml of a source checkout, else "
                             "~/.config/srl-toolbox/srl_models.yaml]")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto for training [auto]")
    parser.add_argument("--force", action="store_true", help="record the dataset and train the models again even "
                        "when matching ones exist")
    addProgressArgument(parser, help="no progress bars")
    return parser


def datasetName(env_id: str, episodes: int, img_shape: Sequence[int], random_target: bool, seed: int,
                renderer: str, camera: str | None = None, max_steps: int | None = None) -> str:
    """
    :param env_id: the env
    :param episodes: episodes recorded
    :param img_shape: (C, H, W)
    :param random_target: a new target every episode
    :param seed: the generator's seed
    :param renderer: what draws the images (resolved: never None)
    :param camera: the second camera's flag, ``multi_view`` or ``fpv`` (None: one camera)
    :param max_steps: the episodes' length cap (None: the env's own)
    :return: the dataset's folder name, made of the settings that decide its content
        (``<env>_<N>ep[_<M>steps]_<H>x<W>[_rt][_mv|_fpv][_<renderer> when not tinyrenderer]_seed<S>``, a namespaced
        env id's ``/`` as ``_``: the renderer's suffix is left out for the reference renderer, whatever the env's
        default, and the steps' where the env's own length holds, so that the datasets recorded before keep their
        names)
    """
    return (f"{env_id.replace('/', '_')}_{episodes}ep{f'_{max_steps}steps' if max_steps else ''}"
            f"_{img_shape[1]}x{img_shape[2]}{'_rt' if random_target else ''}"
            f"{CAMERA_SUFFIXES.get(camera or '', '')}{'' if renderer == REFERENCE_RENDERER else '_' + renderer}"
            f"_seed{seed}")


@dataclasses.dataclass
class Plan:
    """
    Everything the command will do, checked.

    :param env_id: the env
    :param names: the models to prepare, in order
    :param dataset_folder: the dataset folder (``<data folder>/<datasetName>``)
    :param dataset_settings: what its dataset_config.json must hold
    :param generator: the dataset generator's settings (None: the dataset exists and is reused)
    :param training: model name -> srl_models.train's settings
    :param expected: model name -> the exp_config entries a reusable folder must hold
    :param config_file: the SRL config YAML
    :param log_folder: root of the model folders
    :param camera: the second camera's flag the dataset was recorded with (``multi_view``, ``fpv``; None: one camera)
    """

    env_id: str
    names: list[str]
    dataset_folder: str
    dataset_settings: dict[str, Any]
    generator: GeneratorConfig | None
    training: dict[str, SRLTrainConfig]
    expected: dict[str, dict[str, Any]]
    config_file: str
    log_folder: str
    camera: str | None = None


def _readJson(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def checkDatasetSettings(folder: str, settings: dict[str, Any], max_steps: int | None = None) -> None:
    """
    :param folder: an existing dataset folder
    :param settings: the dataset_config.json entries it must hold
    :param max_steps: the episodes' length cap it must have been recorded with (the generator's ``--max-steps``, kept
        in its env_globals.json's env keywords; None: the env's own, no cap recorded)
    :raises UsageError: unreadable, or recorded with other settings (which are named)
    """
    try:
        stored = _readJson(os.path.join(folder, DATASET_CONFIG))
    except (OSError, ValueError):
        raise UsageError(f"{folder!r} exists but holds no readable {DATASET_CONFIG}: pass --force to record the "
                         f"dataset again, or another --data-folder") from None
    stored = {"renderer": REFERENCE_RENDERER, **stored}  # recorded before the renderer was: TinyRenderer's images
    differing = [(key, stored.get(key), value) for key, value in sorted(settings.items()) if stored.get(key) != value]
    recorded_steps = recordedEnvKeyword(folder, "max_steps")  # (None without the file: as one recorded without a cap)
    if recorded_steps != max_steps:
        own = "unset (the env's own)"
        differing.append(("max_steps", own if recorded_steps is None else recorded_steps,
                          own if max_steps is None else max_steps))
    if differing:
        raise UsageError(f"dataset {folder!r} was recorded with other settings ({differingText(differing)}): pass "
                         f"--force to record it again, or another --data-folder")


def trainingSettings(config: SRLTrainConfig, dataset_folder: str) -> dict[str, Any]:
    """
    :param config: srl_models.train's settings for one model
    :param dataset_folder: the dataset it trains on
    :return: the exp_config entries that decide the trained model (the training command's defaults included; not
        the epochs of a model that trains no loss)
    :raises UsageError: an inconsistent model choice (from srl_models.train_choices.resolveModel)
    """

    name, losses, split, state_dim = resolveModel(config)
    entries = {"augment": None, "shift_pad": None, "horizon": None, "tau": None, "updates": None,
               **trainingEntries(resolveTraining(config, losses))}
    # a model that trains no loss (pca, random) has no epochs: one trained with any --epochs is the same model
    return {"srl_model": name, "state_dim": state_dim, "losses": losses, "split_dims": split or None,
            "data_folder": os.path.abspath(dataset_folder), "seed": config.seed,
            **({"epochs": config.epochs} if trainsLoss(name) else {}),
            **entries, "learning_rate": config.learning_rate, "beta": config.beta,
            "foreground_weight": foregroundWeight(config, name, losses), "val_split": config.val_split,
            "patience": config.patience}


def _datasetFingerprint(dataset_folder: str) -> str:
    """:return: the dataset's fingerprint (environments.dataset.Dataset.fingerprint)
    :raises UsageError: an unreadable dataset (one line)"""
    try:
        return Dataset.open(dataset_folder).fingerprint()
    except ValueError as error:
        raise UsageError(str(error)) from None


def findTrainedModel(log_folder: str, dataset_folder: str, expected: dict[str, Any],
                     fingerprint: str | Callable[[], str] | None = None,
                     rejected: list[str] | None = None) -> str | None:
    """
    :param log_folder: root of the model folders
    :param dataset_folder: the dataset (its name is the sub-folder searched)
    :param expected: the exp_config entries the folder must hold (``split_dims`` None: none)
    :param fingerprint: the dataset's fingerprint (environments.dataset.Dataset.fingerprint), or a function giving it
        (called only for a folder that records one); None: not compared. A folder whose exp_config records another
        one was trained on an earlier recording
    :param rejected: filled with why each folder trained with those settings cannot be reused (newest first): a
        weights file missing, or another recording of the dataset
    :return: the newest finished, complete model folder trained with those settings on this recording, None when
        there is none
    """
    root = os.path.join(log_folder, os.path.basename(os.path.normpath(dataset_folder)))
    found: list[tuple[float, str, dict[str, Any]]] = []
    for entry in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        folder = os.path.join(root, entry)
        try:
            config = _readJson(os.path.join(folder, "exp_config.json"))
        except (OSError, ValueError):
            continue
        if not isinstance(config, dict) or not all(os.path.isfile(os.path.join(folder, f)) for f in FINISHED_FILES):
            continue
        if all(config.get(key) == value for key, value in expected.items()):
            found.append((os.path.getmtime(os.path.join(folder, FINISHED_FILES[-1])), folder, config))
    for _, folder, config in sorted(found, key=lambda entry: entry[:2], reverse=True):
        try:
            missing, unreadable = missingWeights(folder, config), None
        except ValueError as error:  # (an exp_config edited by hand)
            missing, unreadable = [], str(error)
        recorded = config.get(DATASET_FINGERPRINT_KEY)
        if unreadable is not None:
            reason = unreadable
        elif missing:
            reason = f"{folder} lacks its weights file(s): {', '.join(missing)}"
        elif fingerprint and recorded and recorded != (fingerprint() if callable(fingerprint) else fingerprint):
            reason = (f"{folder} was trained on an earlier recording of {dataset_folder} (its dataset fingerprint "
                      "differs)")
        else:
            return folder
        if rejected is not None:
            rejected.append(reason)
    return None


def checkPCAComponents(config: SRLTrainConfig, env_id: str, episodes: int, reused: bool,
                       max_steps: int | None = None) -> None:
    """
    PCA finds at most as many components as it has training images: a larger --state-dim is refused before anything
    is written. A reused dataset gives the exact count (srl_models.train's own split of its episodes); a dataset still
    to be recorded, the most it can hold, ``episodes`` of ``max_steps`` (else the env's MAX_STEPS) frames less the
    held-out ones (episodes may end sooner: srl_models.train checks the exact count before PCA trains).

    :param config: the PCA model's training settings (state_dim, val_split, seed, data_folder)
    :param env_id: the env
    :param episodes: episodes recorded
    :param reused: the dataset exists and is reused
    :param max_steps: the recorded episodes' length cap (None: the env's own)
    :raises UsageError: more components than training images (one line)
    """
    state_dim = int(config.state_dim or 0)
    if reused:
        try:
            train_rows, _ = splitEpisodes(Dataset.open(config.data_folder).episodeIndex(), config.val_split,
                                          config.seed)
        except ValueError:
            return  # an unreadable dataset: srl_models.train says what is wrong with it
        if state_dim > len(train_rows):
            raise UsageError(f"--state-dim {state_dim}: PCA cannot find more components than training images "
                             f"({len(train_rows)} in the reused dataset {config.data_folder}): give a --state-dim "
                             f"of at most {len(train_rows)}")
        return
    max_steps = max_steps or getattr(getEnvClass(env_id), "MAX_STEPS", None)
    if max_steps is None:
        return
    training_episodes = episodes - heldOutEpisodeCount(episodes, config.val_split)
    most = training_episodes * int(max_steps)
    if state_dim > most:
        raise UsageError(f"--state-dim {state_dim}: PCA cannot find more components than training images, and "
                         f"--episodes {episodes} give at most {most} ({training_episodes} training "
                         f"episode{'s' * (training_episodes != 1)} of at "
                         f"most {max_steps} steps, the others held out for validation); give a --state-dim of at "
                         f"most {most}, or more --episodes")


def shiftsViews(config: SRLTrainConfig) -> bool:
    """
    :param config: one model's training settings
    :return: whether its views are shifted (``--augment shift``, given or its losses' default)
    :raises UsageError: an inconsistent model choice (from srl_models.train_choices)
    """
    _, losses, _, _ = resolveModel(config)
    return resolveTraining(config, losses)["augment"] == "shift"


def plan(args: argparse.Namespace) -> Plan:
    """
    Check every input and decide what to record and train; nothing is written.

    :param args: the parsed command line
    :return: the plan
    :raises UsageError: any bad input (one line)
    """

    if args.env not in registered_env:
        raise UsageError(unknownEnvText(args.env))
    names = list(dict.fromkeys(args.srl_model))
    trainable = trainableModels()
    for name in names:
        if name not in trainable:
            skipped = f" (skipped: {failedSRLPlugins()[name]})" if name in failedSRLPlugins() else ""
            raise UsageError(f"--srl-model: {name!r} is not a learned model this command trains{skipped}; valid "
                             f"choices: {', '.join(trainable)}")
    defaults = envDefaults(args.env)
    episodes = args.episodes or defaults.episodes
    img_shape = list(args.img_shape or (3, defaults.img_size, defaults.img_size))
    state_dim = args.state_dim or defaults.state_dim
    epochs = args.epochs or defaults.epochs
    num_cpu = args.num_cpu or max(1, min(os.cpu_count() or 1, episodes))
    checkedDevice(args.device)

    renderer = resolvedRenderer(args.renderer, args.env)  # --renderer left out: the env's default, by name
    # -r on an env without a random target: one warning (the generator's) and the env's plain dataset, as recorded
    random_target = bool(args.random_target) and envOffers(args.env, "random_target")
    camera = "multi_view" if args.multi_view else "fpv" if args.fpv else None
    name = datasetName(args.env, episodes, img_shape, random_target, args.seed, renderer, camera, defaults.max_steps)
    dataset_folder = os.path.join(args.data_folder, name)
    generator: GeneratorConfig | None = GeneratorConfig(
        env=args.env, name=name, save_path=args.data_folder, num_episode=episodes, num_cpu=num_cpu, seed=args.seed,
        img_shape=tuple(img_shape), random_target=args.random_target, renderer=renderer, max_steps=defaults.max_steps,
        multi_view=args.multi_view, fpv=args.fpv, no_progress=args.no_progress)
    try:
        dataset_generator.validate(generator)
    except UsageError as error:  # name the prepare flags, not the generator's
        message = str(error).replace("--num-episode", "--episodes").replace("--save-path", "--data-folder")
        raise UsageError(message) from None
    settings = {"env": args.env, "img_shape": img_shape, "num_episodes": episodes, "seed": args.seed,
                "policy": "random", "random_target": random_target, "continuous_actions": False,
                "shape_reward": False, "multi_view": camera is not None, "renderer": renderer}
    reuse_dataset = os.path.isdir(dataset_folder) and not args.force
    if reuse_dataset:
        checkDatasetSettings(dataset_folder, settings, defaults.max_steps)
        generator = None
    elif args.force:
        generator = dataclasses.replace(generator, force=True)
    elif os.path.isdir(os.path.join(args.data_folder, f".{name}.partial")):
        generator = dataclasses.replace(generator, resume=True)  # an interrupted recording of the same name

    checkWritableFolder(args.log_folder, "--log-folder")
    training: dict[str, SRLTrainConfig] = {}
    expected: dict[str, dict[str, Any]] = {}
    for model in names:
        # --augment goes to the models that train a loss (pca and random have no views to augment); --epochs to all,
        # recorded in every recipe as before, though pca and random have no epochs (their reuse does not compare them)
        trains_a_loss = trainsLoss(model)
        config = SRLTrainConfig(data_folder=dataset_folder, srl_model=model, state_dim=state_dim, epochs=epochs,
                                seed=args.seed, augment=args.augment if trains_a_loss else None,
                                log_folder=args.log_folder, device=args.device, no_progress=args.no_progress)
        if args.shift_pad is not None and shiftsViews(config):  # (--shift-pad goes to the models it reaches)
            config = dataclasses.replace(config, shift_pad=args.shift_pad)
        training[model] = train.checkSettings(config)
        expected[model] = trainingSettings(training[model], dataset_folder)
        if issubclass(trainableModels()[model], PCAModel):
            checkPCAComponents(training[model], args.env, episodes, reuse_dataset, defaults.max_steps)
    unreached = [model for model in names if not trainsLoss(model)]
    if args.shift_pad is not None and not any(config.shift_pad for config in training.values()):
        warnings.warn(f"--shift-pad {args.shift_pad} does nothing here: no model's views are shifted (--augment shift, "
                      f"or curl's default)", UsageWarning)
    if args.augment not in (None, "none") and unreached:  # (srl_models.train refuses it for them)
        warnings.warn(f"--augment {args.augment} does nothing for --srl-model {', '.join(unreached)}: "
                      f"{'it trains' if len(unreached) == 1 else 'they train'} no loss (no views to augment)",
                      UsageWarning)

    config_file = os.path.abspath(args.srl_config_file) if args.srl_config_file else defaultConfigFile()
    made = [os.path.abspath(folder) for folder in (args.log_folder, args.data_folder)]  # this command makes them
    config_folder = os.path.dirname(config_file)
    if args.srl_config_file and not os.path.isdir(config_folder) and not any(
            os.path.commonpath([config_folder, other]) == config_folder for other in made):
        raise UsageError(f"--srl-config-file {args.srl_config_file!r}: the folder does not exist (nor is it "
                         f"--log-folder, --data-folder or a folder above them, which this command makes)")
    if os.path.exists(config_file):
        try:
            readSRLConfig(config_file)
        except SRLLookupError as error:
            raise UsageError(f"--srl-config-file: {error}") from None
    checkWritableFolder(os.path.dirname(config_file), "--srl-config-file")
    return Plan(args.env, names, dataset_folder, settings, generator, training, expected, config_file,
                args.log_folder, camera)


def _trainedFolder(model: str, config: SRLTrainConfig) -> str:
    """:return: the folder srl_models.train writes for ``config`` (it evaluates the model too)"""

    print(f"\n== Training {model}", flush=True)
    return trainFromConfig(config)


def _metrics(folder: str) -> tuple[float | None, float | None, float | None]:
    """:return: (GTC mean, KNN-MSE, linear probe R^2) from an evaluated model folder, None where missing (the probe
    also for a folder evaluated before it existed)"""
    try:
        gtc = float(_readJson(os.path.join(folder, FINISHED_FILES[0]))["mean"])
        knn = float(_readJson(os.path.join(folder, FINISHED_FILES[1]))["knn_mse"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, None, None
    try:
        probe = float(_readJson(os.path.join(folder, PROBE_FILE))["mean"])
    except (OSError, ValueError, KeyError, TypeError):
        probe = None
    return gtc, knn, probe


def summaryTable(rows: list[dict[str, Any]]) -> str:
    """
    :param rows: one per model: model, folder, gtc, knn_mse, probe, seconds, reused
    :return: the fixed-width summary table
    """
    header = ("model", "GTC", "KNN-MSE", "probe R2", "time", "folder")
    lines = [(row["model"], "-" if row["gtc"] is None else f"{row['gtc']:.3f}",
              "-" if row["knn_mse"] is None else f"{row['knn_mse']:.4g}",
              "-" if row.get("probe") is None else f"{row['probe']:.3f}",
              "reused" if row["reused"] else f"{row['seconds']:.0f} s", row["folder"]) for row in rows]
    widths = [max(len(str(line[i])) for line in [header, *lines]) for i in range(len(header) - 1)]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(line[:-1], widths)) + "  " + line[-1]
                     for line in [header, *lines])


def probeNote(rows: list[dict[str, Any]], episodes: int) -> str | None:
    """
    :param rows: the summary table's rows
    :param episodes: the dataset's episodes
    :return: the line saying why the table's probe R2 is "-" for the evaluated models without one, None when all
        have one
    """
    missing = [row["model"] for row in rows if row.get("probe") is None and row["gtc"] is not None]
    if not missing:
        return None
    why = (SINGLE_EPISODE if episodes < 2 else
           f"no {PROBE_FILE} in the folder: {pythonCommand()} -m srl_models.evaluate --model-folder FOLDER says why")
    return f"probe R2 - ({', '.join(missing)}): {why}"


def checkCommand(argv: Sequence[str]) -> Plan:
    """
    The command's checks of a prepare command line that another command runs later, before it starts: nothing is
    written and no warning shown (the prepare run itself shows its checks' warnings, once).

    :param argv: the prepare command line (without ``-m srl_models.prepare``)
    :return: its plan
    :raises UsageError: bad input (one line), as the command would refuse it
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plan(buildParser().parse_args(argv))


def prepare(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """
    Everything the command does.

    :param argv: command-line arguments
    :return: one row per model: model, folder (absolute), gtc, knn_mse, probe (R^2), seconds, reused, registered (as
        written)
    :raises UsageError: bad input (nothing written), before any warning of the checks is shown (a flag that does
        nothing on the env: they are once the checks pass)
    """
    # (a plugin that failed to load is said whatever happens)
    with HeldWarnings(shown_at_once=(SkippedPluginWarning,)):
        args = buildParser().parse_args(argv)
        todo = plan(args)
    start = time.perf_counter()
    if todo.generator is None:
        print(f"Dataset {todo.dataset_folder}: recorded with the same settings, reused", flush=True)
    else:
        print(f"== Recording {todo.dataset_folder}", flush=True)
        code = dataset_generator.generate(todo.generator, resume_hint=RESUME_HINT)
        if code:
            raise SystemExit(code)
        checkDatasetSettings(todo.dataset_folder, todo.dataset_settings, todo.generator.max_steps)
    fingerprint = functools.cache(functools.partial(_datasetFingerprint, todo.dataset_folder))  # when a folder has one
    dataset_seconds = time.perf_counter() - start
    rows: list[dict[str, Any]] = []
    for model in todo.names:
        began = time.perf_counter()
        rejected: list[str] = []
        folder = None if args.force else findTrainedModel(todo.log_folder, todo.dataset_folder, todo.expected[model],
                                                          fingerprint, rejected)
        reused = folder is not None
        if reused:
            print(f"{model}: trained with the same settings on this dataset, reused {folder}", flush=True)
        else:
            if rejected:
                print(f"{model}: not reused: {rejected[0]}; training again", flush=True)
            folder = _trainedFolder(model, todo.training[model])
        written = registerModel(todo.config_file, todo.env_id, model, folder)
        gtc, knn, probe = _metrics(folder)
        rows.append({"model": model, "folder": os.path.abspath(folder), "gtc": gtc, "knn_mse": knn, "probe": probe,
                     "seconds": time.perf_counter() - began, "reused": reused, "registered": written})
    print(f"\nRegistered in {todo.config_file} under {todo.env_id} (dataset {todo.dataset_folder}, "
          f"{dataset_seconds:.0f} s):")
    print(summaryTable(rows))
    note = probeNote(rows, todo.dataset_settings["num_episodes"])
    if note:
        print(note)
    command = trainCommand(todo.env_id, todo.names[0], todo.dataset_settings["random_target"], args.srl_config_file,
                           todo.camera, todo.dataset_settings["renderer"])
    print(f"Total {time.perf_counter() - start:.0f} s. Use one with: {command}")
    return rows


def trainCommand(env_id: str, name: str, random_target: bool, config_file: str | None,
                 camera: str | None = None, renderer: str | None = None) -> str:
    """
    :param env_id: the env the model was prepared for
    :param name: the model's name
    :param random_target: whether its dataset has a random target
    :param config_file: the SRL config file it is registered in (None: the default one)
    :param camera: the second camera its dataset was recorded with (``multi_view``, ``fpv``; None: one camera)
    :param renderer: the renderer that drew its dataset (None or the env's default: left to the run's default)
    :return: the train command that uses it, started with this interpreter (:func:`pythonCommand`), with the env
        flags its dataset was recorded with (an arm moves as in its dataset: environments.dataset_generator records
        them with force_down; frames drawn by the renderer the model learned from)
    """
    return (f"{pythonCommand()} -m rl_baselines.train --env {env_id} --srl-model {name}"
            + (" --random-target" if random_target else "")
            + (f" --{camera.replace('_', '-')}" if camera else "")
            + (" --force-down" if getEnvClass(env_id).acceptsKeyword("force_down") else "")
            + (f" --renderer {renderer}" if renderer not in (None, getEnvClass(env_id).DEFAULT_RENDERER) else "")
            + (f" --srl-config-file {config_file}" if config_file else ""))


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    """
    try:
        prepare(argv)
    except SystemExit as stop:  # the recording's Ctrl-C (its lines printed): runCommand says 143 after a SIGTERM
        if stop.code == INTERRUPTED_EXIT_CODE:
            return INTERRUPTED_EXIT_CODE
        raise
    return 0


if __name__ == "__main__":
    runCommand(main, sys.argv[1:])
