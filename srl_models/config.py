"""Which trained SRL model an RL run uses: the SRL config YAML and the checks made before a run starts.

The file maps each env id to its trained models, by registered model name::

    MobileRobotGymEnv-v0:
      vae: ../logs/srl/mobile_robot/24-01-01_10h00_00_vae_ST_DIM32_SEED0
      autoencoder: /abs/path/to/another/model/folder

A relative folder is resolved against the directory that holds the YAML file (so ``config/srl_models.yaml`` points
at ``logs/srl/...`` as ``../logs/srl/...``), whatever the current directory is; ``~`` is expanded.

The default file (:func:`defaultConfigFile`, used by ``rl_baselines.train`` and ``srl_models.prepare`` when no
``--srl-config-file`` is given) does not depend on the working directory: ``$SRL_MODELS_CONFIG`` when set, else the
checkout's ``config/srl_models.yaml`` when the toolbox runs from a source checkout, else the user-level
``$XDG_CONFIG_HOME/srl-toolbox/srl_models.yaml`` (``~/.config/srl-toolbox/srl_models.yaml``).
:func:`registerModel` adds or replaces one entry with an atomic write that keeps the other entries and the comments.

:func:`resolveSRLModel` turns ``(env, name)`` or an explicit folder into a checked model folder: the name must be a
registered learned model, the folder an SRL model folder of that kind, trained on that env's images at the run's
image shape. Every refusal is one ``ValueError`` line, so that the train command and the pipeline can refuse a run
before anything is written. :func:`latestModelFolder` (``--latest``) picks the newest model whose image shape fits
the run. What a model may not fit is warned about, not refused: another renderer (:func:`trainedRenderer`), other env
settings of its dataset (:func:`trainedFrameSettings`, :func:`frameSettingsWarning`).
"""
from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from environments.dataset import FRAME_SETTINGS, Dataset
from environments.srl_env import REFERENCE_RENDERER
from srl_models.base import DATASET_ENV_KEY, SRLType, modelHash, modelRecipe, readExpConfig
from srl_models.base import RUN_RECORD_FILE as RUN_RECORD_FILE  # re-exported: its importers' path
from srl_models.models import LearnedSRLModel
from srl_models.pca import PCAModel
from srl_models.registry import (
    checkSRLModel,
    failedSRLPlugins,
    failedSRLPluginsText,
    learnedModels,
    registeredSRL,
)
from srl_toolbox.cli import pythonCommand
from srl_toolbox.files import atomicPath
from srl_toolbox.locks import acquireLock, lockPathFor
from srl_toolbox.text import withArticle

CONFIG_ENV_VAR = "SRL_MODELS_CONFIG"
CONFIG_NAME = "srl_models.yaml"
# The repository root when the package runs from a source checkout (editable install or PYTHONPATH).
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class SRLLookupError(ValueError):
    """The SRL config file does not say which folder to use (as opposed to a folder that cannot be used)."""


def defaultConfigFile() -> str:
    """
    :return: the absolute path of the default SRL config file, whatever the working directory:
        ``$SRL_MODELS_CONFIG`` when set and not empty; else ``config/srl_models.yaml`` of the source checkout the
        package is imported from (one with setup.py beside it); else ``$XDG_CONFIG_HOME/srl-toolbox/srl_models.yaml``
        (``~/.config/srl-toolbox/srl_models.yaml`` without XDG_CONFIG_HOME), as a pip-installed package uses
    """
    override = os.environ.get(CONFIG_ENV_VAR)
    if override:
        return os.path.abspath(os.path.expanduser(override))
    in_checkout = os.path.join(_CHECKOUT, "config", CONFIG_NAME)
    if os.path.isfile(os.path.join(_CHECKOUT, "setup.py")) and os.path.isfile(in_checkout):
        return in_checkout
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(os.path.abspath(config_home), "srl-toolbox", CONFIG_NAME)


def preparable(name: str) -> bool:
    """:return: whether ``srl_models.prepare`` (and ``srl_models.train``) can train the registered model ``name``: a
    learned model whose class is a LearnedSRLModel or PCAModel (subclass), the toolbox's or a plugin's; a plugin model
    of another kind brings its own training command"""
    entry = registeredSRL().get(name)
    return entry is not None and entry[1] is SRLType.LEARNED and issubclass(entry[0], (LearnedSRLModel, PCAModel))


def trainedRenderer(exp_config: dict[str, Any]) -> str | None:
    """
    :param exp_config: a model folder's exp_config.json
    :return: the renderer that drew the frames the model was trained on: the recorded ``renderer``; without one,
        TinyRenderer for a kind srl_models.train trains (it records the renderer since there are several, so its
        models without one predate them and were trained on TinyRenderer's frames), else None: unknown (a plugin's
        own training command need not record it)
    """
    if "renderer" in exp_config:
        return str(exp_config["renderer"])
    return REFERENCE_RENDERER if preparable(str(exp_config.get("srl_model"))) else None


def trainedFrameSettings(exp_config: dict[str, Any]) -> dict[str, bool]:
    """
    :param exp_config: a model folder's exp_config.json
    :return: the env settings that drew the frames the model was trained on (environments.dataset.FRAME_SETTINGS,
        those known): the recorded ``dataset_env``; without one (a model trained before it was recorded, or by a
        plugin's own command), read from the dataset_config.json of its ``data_folder`` when that folder still holds
        a dataset of the model's env, with the recorded ``continuous_actions`` where the dataset does not say; else
        {} (unknown: nothing to compare)
    """
    recorded = exp_config.get(DATASET_ENV_KEY)
    if isinstance(recorded, dict):
        return {key: bool(recorded[key]) for key in FRAME_SETTINGS if recorded.get(key) is not None}
    data_folder = exp_config.get("data_folder")
    if not isinstance(data_folder, str):
        return {}
    try:
        dataset = Dataset.readSettings(data_folder)
    except ValueError:
        return {}
    if dataset.env_id is not None and exp_config.get("env") is not None and dataset.env_id != exp_config["env"]:
        return {}  # the folder now holds another env's dataset
    settings = dataset.frameSettings()
    if "continuous_actions" not in settings and exp_config.get("continuous_actions") is not None:
        settings["continuous_actions"] = bool(exp_config["continuous_actions"])
    return settings


# Per frame setting: how a dataset recorded with it (True) and without it (False) is described, and the train flag.
_FRAME_WORDS = {
    "random_target": ("a random target", "a fixed target", "-r"),
    "continuous_actions": ("continuous actions", "discrete actions", "-c"),
    "action_joints": ("joint actions", "Cartesian actions", "--action-joints"),
    "force_down": ("--force-down", "no --force-down", "--force-down"),
}


def frameSettingsWarning(trained: dict[str, bool], run: dict[str, bool | None],
                         fixed: Mapping[str, str] | None = None) -> str | None:
    """
    :param trained: the settings that drew the model's frames (:func:`trainedFrameSettings`)
    :param run: the run's own (environments.dataset.FRAME_SETTINGS; None where the run's env has no such setting)
    :param fixed: per setting the run cannot change, why (e.g. ``--algo sac acts only with continuous actions``):
        for those the line says that, and that a model of a dataset recorded with the run's setting fits, instead of
        a flag that would be refused
    :return: one line naming each setting both know that differs, and the flag that gives the model's (force_down
        is not compared where either moves joints, which it does not restrict), None when none differs
    """
    joints = trained.get("action_joints") or run.get("action_joints")
    differing = [key for key in FRAME_SETTINGS if key in trained and run.get(key) is not None
                 and trained[key] != bool(run[key]) and not (key == "force_down" and joints)]
    if not differing:
        return None
    parts = []
    for key in differing:
        with_it, without_it, flag = _FRAME_WORDS[key]
        model, this_run = (with_it, without_it) if trained[key] else (without_it, with_it)
        if fixed is not None and key in fixed:
            hint = f"{fixed[key]}: a model of a dataset recorded with{'out' if trained[key] else ''} {flag} fits"
        else:
            hint = f"{'add' if trained[key] else 'drop'} {flag}"
        parts.append(f"{model}, this run has {this_run} ({hint})")
    return (f"the SRL model's dataset was recorded with {'; with '.join(parts)}: its states may not cover this run's "
            "frames")


def _notPrepared(name: str) -> str:
    """:return: where a model that srl_models.prepare does not train (:func:`preparable`) comes from instead"""
    return f"srl_models.prepare does not train {name!r}: pass its trained folder with --srl-model-path"


def _howToGet(env_id: str, name: str, command: str, config_file: str) -> str:
    """:return: how a user gets a trained ``name`` model for ``env_id`` (prepare trains only :func:`preparable` ones)"""
    if preparable(name):
        return f"train and register one with {command} (or pass --srl-model-path)"
    return f"{_notPrepared(name)}, or list it under {env_id} in {config_file}"


def prepareCommand(env_id: str, name: str, flags: Sequence[str] = ()) -> str:
    """
    :param env_id: the env
    :param name: the learned model name
    :param flags: further prepare flags (e.g. ``--random-target``, ``--srl-config-file FILE``)
    :return: the shell command that trains and registers that model: ``python -m srl_models.prepare ...``, started
        with this interpreter (:func:`pythonCommand`)
    """
    return " ".join([pythonCommand(), "-m srl_models.prepare", "--env", shlex.quote(env_id), "--srl-model",
                     shlex.quote(name), *(shlex.quote(str(flag)) for flag in flags)])


def latestModelFolder(log_folder: str, env_id: str, name: str, img_shape: Sequence[int] | None = None,
                      channels: int | None = None, prepare_flags: Sequence[str] = ()) -> str:
    """
    The newest trained model of a kind for an env that fits the run's images (the old toolbox's ``--latest``).

    :param log_folder: root of the model folders (``srl_models.train --log-folder``), searched two levels deep
        (``<log_folder>/<dataset>/<model folder>``)
    :param env_id: the env the model must have been trained on
    :param name: the registered model name the folder must hold
    :param img_shape: (C, H, W) the run's camera gives: the model must encode that height and width; None: any size
    :param channels: the run's image channels (3, or 6 with two cameras), checked when img_shape is None; None: any
    :param prepare_flags: flags added to the ``srl_models.prepare`` command the error names (the run's cameras, ...)
    :return: the absolute folder whose exp_config.json is newest (then the largest path, for equal times) among those
        of that kind and env whose image shape fits
    :raises SRLLookupError: no such folder (one line, saying how to get one: the srl_models.prepare command, or for
        a model it does not train, --srl-model-path; where models of that kind and env exist but none fits, how many
        and the newest one's image shape)
    """
    found: list[tuple[float, str, tuple[int, ...]]] = []
    root = os.path.abspath(os.path.expanduser(log_folder))
    for dataset in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        dataset_dir = os.path.join(root, dataset)
        if not os.path.isdir(dataset_dir):
            continue
        for entry in os.listdir(dataset_dir):
            folder = os.path.join(dataset_dir, entry)
            try:
                config = readExpConfig(folder)
                shape = tuple(int(v) for v in config.get("img_shape", ()))
            except (ValueError, TypeError):
                continue
            if config.get("srl_model") == name and config.get("env") == env_id:
                found.append((os.path.getmtime(os.path.join(folder, "exp_config.json")), folder, shape))
    fitting = [(when, folder) for when, folder, shape in found
               if len(shape) == 3 and imageRefusal(folder, shape, img_shape, channels) is None]
    if fitting:
        return max(fitting)[1]
    how = (f"train one with {prepareCommand(env_id, name, ['--log-folder', log_folder, *prepare_flags])}"
           if preparable(name) else _notPrepared(name))
    if found:
        wanted = _shapeText(img_shape) if img_shape is not None else f"{channels}-channel"
        newest = max(found)
        raise SRLLookupError(f"--latest: none of the {len(found)} {name!r} model(s) trained on {env_id} under "
                             f"{log_folder!r} fits the run's {wanted} images (the newest, {newest[1]}, encodes "
                             f"{_shapeText(newest[2]) or 'no valid img_shape'}); run with the camera flags and "
                             f"--img-shape a model was trained with, or {how}")
    raise SRLLookupError(f"--latest: no {name!r} model trained on {env_id} under {log_folder!r}; {how}")


def _yamlScalar(value: str) -> str:
    """:return: ``value`` as a one-line YAML scalar (quoted when plain text would be read differently)"""
    return yaml.safe_dump(value, default_flow_style=True, width=1 << 20).splitlines()[0]


def _editedText(text: str, env_id: str, name: str, written: str) -> str:
    """
    Add or replace the line ``  name: folder`` under the top-level key ``env_id`` of a block-style YAML text, leaving
    every other line (comments included) as it is; a lone ``{}`` (the empty shipped file) is replaced.

    :param text: the file's text
    :param env_id: the env key
    :param name: the model name
    :param written: the folder, as it is to be written
    :return: the new text (the caller checks that it reads back as intended)
    """
    lines = text.splitlines()
    entry = f"  {_yamlScalar(name)}: {_yamlScalar(written)}"
    env_key = f"{_yamlScalar(env_id)}:"
    start = next((i for i, line in enumerate(lines) if line.rstrip() == env_key), None)
    if start is None:
        block = [env_key, entry]
        empty = [i for i, line in enumerate(lines) if line.strip() == "{}"]
        if empty:
            lines[empty[0]:empty[0] + 1] = block
        else:
            lines.extend(block)
        return "\n".join(lines) + "\n"
    end = start + 1  # the env's block: indented, blank or comment lines up to the next top-level key
    last_entry = start
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in (" ", "\t", "#")):
        stripped = lines[end].strip()
        if stripped and not stripped.startswith("#"):
            last_entry = end
            if stripped.split(":", 1)[0].strip() in (name, _yamlScalar(name)):
                lines[end] = entry
                return "\n".join(lines) + "\n"
        end += 1
    lines.insert(last_entry + 1, entry)
    return "\n".join(lines) + "\n"


def registerModel(config_file: str, env_id: str, name: str, folder: str) -> str:
    """
    Map ``(env_id, name)`` to a model folder in the SRL config file, atomically; the other entries and the comments
    stay (a file whose layout the line edit cannot follow is rewritten from its content, keeping its leading
    comment lines). The file and its folder are created when missing.

    :param config_file: the YAML file
    :param env_id: the env id
    :param name: the registered model name
    :param folder: the model folder; written relative to the file's directory when both lie in the same tree
        (the file's parent folder), absolute otherwise
    :return: the folder as written in the file
    :raises SRLLookupError: the existing file is not a valid SRL config (nothing is written)
    """

    config_file = os.path.abspath(config_file)
    lock = acquireLock(lockPathFor(config_file))  # read, edit, write: two prepare commands at once lose no entry
    try:
        return _registerModel(config_file, env_id, name, folder)
    finally:
        lock.release()


def _registerModel(config_file: str, env_id: str, name: str, folder: str) -> str:
    mapping = readSRLConfig(config_file) if os.path.exists(config_file) else {}
    text = ""
    if os.path.exists(config_file):
        with open(config_file, encoding="utf-8") as handle:
            text = handle.read()
    folder = os.path.abspath(folder)
    config_dir = os.path.dirname(config_file)
    tree = os.path.dirname(config_dir)
    inside = os.path.commonpath([tree, folder]) == tree and tree != os.path.dirname(tree)
    written = os.path.relpath(folder, config_dir) if inside else folder
    expected = {env: dict(models) for env, models in mapping.items()}
    expected.setdefault(env_id, {})[name] = written
    new_text = _editedText(text, env_id, name, written)
    try:
        valid = yaml.safe_load(new_text) == expected
    except yaml.YAMLError:
        valid = False
    if not valid:
        lead = []
        for line in text.splitlines():
            if not line.startswith("#"):
                break
            lead.append(line)
        new_text = "\n".join(lead + [yaml.safe_dump(expected, default_flow_style=False, sort_keys=False)])
    with atomicPath(config_file) as tmp_path:
        with open(tmp_path, "w", encoding="utf-8") as handle:
            handle.write(new_text)
    return written


def readSRLConfig(config_file: str) -> dict[str, dict[str, str]]:
    """
    :param config_file: a YAML file ``{env id: {model name: model folder}}``
    :return: its mapping, folders as written (an empty file is an empty mapping)
    :raises SRLLookupError: missing, unreadable or not shaped like that (one line)
    """
    if not os.path.isfile(config_file):
        raise SRLLookupError(f"SRL config file {config_file!r} "
                             + ("is a folder, not a YAML file" if os.path.isdir(config_file) else "does not exist"))
    try:
        with open(config_file, encoding="utf-8") as handle:
            content = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as error:
        reason = " ".join(str(error).split())
        raise SRLLookupError(f"SRL config file {config_file!r} is not readable YAML ({reason})") from None
    except UnicodeDecodeError:
        raise SRLLookupError(f"SRL config file {config_file!r} is not a text file (not UTF-8): give a YAML "
                             "file") from None
    content = {} if content is None else content
    if not isinstance(content, dict):
        raise SRLLookupError(f"SRL config file {config_file!r} must map env ids to {{model name: folder}}, "
                         f"not {withArticle(type(content).__name__)}")
    for env_id, models in content.items():
        if models is None:
            continue
        if not isinstance(models, dict) or not all(isinstance(folder, str) for folder in models.values()):
            raise SRLLookupError(f"SRL config file {config_file!r}: entry {env_id!r} must map model names to folder "
                             f"paths")
    return {str(env_id): {str(k): v for k, v in (models or {}).items()} for env_id, models in content.items()}


def configFolder(config_file: str, folder: str) -> str:
    """
    :param config_file: the YAML file the folder was read from
    :param folder: a folder as written there
    :return: the absolute folder (a relative one is relative to the YAML file's directory)
    """
    folder = os.path.expanduser(folder)
    if not os.path.isabs(folder):
        folder = os.path.join(os.path.dirname(os.path.abspath(config_file)), folder)
    return os.path.normpath(folder)


def _shapeText(shape: Any) -> str:
    return "x".join(str(int(v)) for v in shape)


def checkModelFolder(folder: str, env_id: str, name: str | None = None,
                     img_shape: tuple[int, int, int] | None = None, channels: int | None = None) -> dict[str, Any]:
    """
    Check that a folder holds a trained model usable on an env.

    :param folder: the model folder
    :param env_id: the env the run uses (the model must have been trained on its images)
    :param name: the model name asked for (the folder must hold that kind of model), None for any learned model
    :param img_shape: (C, H, W) the run's camera gives, None to accept the model's height and width
    :param channels: the run's image channels (3, or 6 with two cameras), checked when img_shape is None
    :return: the folder's exp_config
    :raises ValueError: missing or foreign folder, not installed, another kind, env or image shape (one line)
    """
    config = readExpConfig(folder)
    kind = config["srl_model"]
    if kind not in learnedModels():
        raise ValueError(f"{folder!r} holds an SRL model {kind!r} that is not installed; installed learned models: "
                         f"{', '.join(learnedModels()) or 'none'}{failedSRLPluginsText(kind)}")
    if name is not None and kind != name:
        raise ValueError(f"{folder!r} holds {withArticle(repr(kind))} model, not {name!r}")
    trained_on = config.get("env")
    if trained_on is not None and trained_on != env_id:
        raise ValueError(f"{folder!r} was trained on {trained_on} images, not {env_id}; train one on "
                         f"{withArticle(env_id)} dataset")
    model_shape = tuple(int(v) for v in config.get("img_shape", ()))
    if len(model_shape) != 3:
        raise ValueError(f"{folder!r}: exp_config.json lacks a valid img_shape [C, H, W]")
    refusal = imageRefusal(folder, model_shape, img_shape, channels)
    if refusal is not None:
        raise ValueError(refusal)
    return config


def imageRefusal(folder: str, model_shape: tuple[int, ...], img_shape: Sequence[int] | None = None,
                 channels: int | None = None) -> str | None:
    """
    :param folder: the model folder (named in the message)
    :param model_shape: (C, H, W) the model encodes
    :param img_shape: (C, H, W) the run's camera gives, None to accept the model's height and width
    :param channels: the run's image channels (3, or 6 with two cameras), checked when img_shape is None
    :return: why the model cannot encode the run's images (another size, or other cameras), None when it can
    """
    # the camera flags that give the model's channels (--img-shape is always 3 H W: two cameras make 6)
    flags = {6: "--fpv or --multi-view", 3: "no --fpv or --multi-view"}.get(model_shape[0], "the same cameras")
    if img_shape is not None and model_shape[1:] != tuple(int(v) for v in img_shape[1:]):
        return (f"{folder!r} encodes {_shapeText(model_shape)} images but the run's camera gives "
                f"{_shapeText(img_shape)}; use --img-shape 3 {model_shape[1]} {model_shape[2]} (with {flags}) "
                f"or a model trained at that size")
    channels = channels if img_shape is None else int(img_shape[0])
    if channels is not None and model_shape[0] != channels:  # only the cameras differ
        cameras = "two cameras (--fpv or --multi-view)" if model_shape[0] == 6 else "one camera"
        advice = ("pass the camera flag it was trained with (--multi-view: Kuka arms, --fpv: mobile robots)"
                  if model_shape[0] == 6 else "drop --fpv / --multi-view")
        return (f"{folder!r} encodes {model_shape[0]}-channel images ({cameras}) but the run's camera gives "
                f"{channels} channels; {advice}, or use a model trained on the run's cameras")
    return None


def resolveSRLModel(env_id: str, name: str | None, config_file: str | None = None,
                    model_path: str | None = None, img_shape: tuple[int, int, int] | None = None,
                    channels: int | None = None, check_load: bool = True, prepare_flags: Sequence[str] = (),
                    origin: str | None = None) -> str:
    """
    Find and check the trained model a run asks for.

    :param env_id: the run's env id
    :param name: the registered learned model name (``--srl-model``); None with ``model_path`` for whatever kind
        the folder holds
    :param config_file: the YAML file mapping envs to models (read only when ``model_path`` is None; None: the
        default, :func:`defaultConfigFile`)
    :param model_path: an explicit model folder (``--srl-model-path``), bypassing the YAML file
    :param img_shape: (C, H, W) the run's camera gives, None to accept the model's height and width
    :param channels: the run's image channels, checked when img_shape is None
    :param check_load: also load the model (on the CPU) and encode one frame, so that corrupt weights and a model
        breaking the contract (srl_models.registry.checkSRLModel) are refused up front
    :param prepare_flags: flags added to the ``srl_models.prepare`` command the error names when no model is
        registered (the run's ``--random-target``, ``--img-shape``, ...)
    :param origin: where ``model_path`` comes from, named in errors (default: ``--srl-model-path PATH``)
    :return: the absolute model folder
    :raises SRLLookupError: not a learned model name, or the config file maps no folder to it (one line)
    :raises ValueError: any other reason the model cannot be used (one line)
    """
    if name is not None and name not in learnedModels():
        known = ("registered but computed by the env" if name in registeredSRL()
                 else "its plugin failed to load" if name in failedSRLPlugins() else "not installed")
        raise SRLLookupError(f"{name!r} is not a learned SRL model ({known}); installed learned models: "
                             f"{', '.join(learnedModels()) or 'none'}{failedSRLPluginsText(name)}")
    if model_path is not None:
        folder = os.path.abspath(os.path.expanduser(model_path))
        origin = origin or f"--srl-model-path {model_path}"
    else:
        flags = list(prepare_flags)
        if config_file is None:
            config_file = defaultConfigFile()
        elif os.path.abspath(config_file) != defaultConfigFile():
            flags += ["--srl-config-file", config_file]
        command = prepareCommand(env_id, str(name), flags)
        mapping = readSRLConfig(config_file) if os.path.isfile(config_file) else {}
        if not os.path.isfile(config_file) and os.path.abspath(config_file) != defaultConfigFile():
            readSRLConfig(config_file)  # raises: an explicit file that does not exist (a missing default is empty)
        if env_id not in mapping or not mapping[env_id]:
            listed = f"it lists {', '.join(sorted(mapping))}" if mapping else "it lists no env"
            raise SRLLookupError(f"SRL config file {config_file!r} has no trained SRL model for {env_id} ({listed}); "
                                 f"{_howToGet(env_id, str(name), command, config_file)}")
        if name not in mapping[env_id]:
            raise SRLLookupError(f"SRL config file {config_file!r} has no {name!r} model for {env_id} (models it has "
                                 f"for {env_id}: {', '.join(sorted(mapping[env_id]))}); "
                                 f"{_howToGet(env_id, str(name), command, config_file)}")
        folder = configFolder(config_file, mapping[env_id][name])
        origin = f"{config_file} ({env_id}: {name})"
    try:
        checkModelFolder(folder, env_id, name, img_shape, channels)
        if check_load:
            checkSRLModel(folder)
    except ValueError as error:
        raise ValueError(f"{origin}: {error}") from None
    return folder


def describeSRLModel(folder: str) -> dict[str, Any]:
    """
    :param folder: a checked model folder
    :return: what a run folder records about it: name, absolute path, hash (srl_models.base.modelHash), recipe
        (srl_models.base.modelRecipe), state_dim, img_shape, env
    :raises ValueError: the folder cannot be read (one line)
    """
    config = readExpConfig(folder)
    try:
        digest = modelHash(folder)
    except OSError as error:
        raise ValueError(f"{folder!r}: cannot read its files ({error.strerror}: {error.filename})") from None
    return {"name": config["srl_model"], "path": os.path.abspath(folder), "hash": digest,
            "recipe": modelRecipe(folder), "state_dim": int(config["state_dim"]),
            "img_shape": [int(v) for v in config.get("img_shape", [])], "env": config.get("env")}


def checkRecordedModel(record: dict[str, Any], folder: str | None = None) -> str:
    """
    Check that the model a run recorded is still the one on disk.

    :param record: the run's srl_model.json (from :func:`describeSRLModel`)
    :param folder: a folder to use instead of the recorded path (a moved copy), None for the recorded one
    :return: the absolute model folder
    :raises ValueError: missing folder or different files (hash mismatch) (one line): the message says whether the
        folder holds a model of another env, another model kind, is another folder, or is the recorded folder with
        other contents
    """
    folder = os.path.abspath(folder or record["path"])
    current = describeSRLModel(folder)
    if current["hash"] != record["hash"]:
        hashes = f"(hash {current['hash'][:12]}, run recorded {record['hash'][:12]})"
        hint = "point --srl-model-path at the model the run used"
        if record.get("env") and current["env"] and current["env"] != record["env"]:
            what = f"is a model of {current['env']}, the run used one of {record['env']}"
        elif current["name"] != record["name"]:
            what = f"is {withArticle(current['name'])} model, the run used {withArticle(record['name'])} model"
        elif folder != os.path.abspath(record["path"]):
            what = f"is not the run's {record['name']} model {record['path']!r}: its files differ"
        else:
            what = "changed since the run was trained"
        raise ValueError(f"SRL model folder {folder!r} {what} {hashes}; {hint}")
    return folder
