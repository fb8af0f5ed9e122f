"""``python -m environments.dataset_fusioner --merge SRC1 SRC2 [SRC3 ...] DST``: merge datasets into a new one.

The records of the sources are numbered one after the other (SRC1's first), the npz arrays are concatenated and the
image paths rewritten to DST's name. DST's dataset_config.json and env_globals.json are the first source's, so
sources whose records mean something else (any dataset_config.json entry but the seed, policy and episode count
differs: cameras, renderer, rewards, targets...; or an env setting env_globals.json records, :func:`envSettings`:
episode length, physics, the env's constants...) are refused before anything is written. So are sources holding the
same episode twice (between them or within one): the generator records episode e the same way for a --seed (0 by
default), so a second recording under another name, or a copy, would put copies of training episodes among held-out
ones. Episodes are compared by content (a hash of each one's actions, rewards, ground-truth states and target,
:func:`episodeDigests`; no image is read), so copies are caught whatever their config says. Images are hard-linked when
the file system allows it (copied otherwise), and the result is built in ``.<DST>.partial`` and renamed when
complete, so DST is never half-written. The sources are kept unless ``--delete-sources`` (which refuses a DST inside
a source: it would be removed with it). A ``.<DST>.partial`` left by an interrupted merge is replaced; one holding a
dataset_generator recording of DST's name (its settings file or episodes folder: an interrupted recording
``--resume`` finishes, or one in progress) is refused.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Sequence
from typing import Any

import numpy as np

from environments.dataset import Dataset
from environments.partial_folder import EPISODES_FOLDER, PARTIAL_NAME_EXTRA, SETTINGS_FILE, partialFolder
from environments.srl_env import ENV_GLOBALS_FILE
from srl_toolbox.cli import CLIParser, UsageError, checkNameLength, checkWritableFolder, runCommand
from srl_toolbox.files import NPZ_READ_ERRORS, NotNpzFile, loadNpz, writeJson, writeNpz

PREPROCESSED_KEYS = ("actions", "rewards", "episode_starts")
GROUND_TRUTH_KEYS = ("ground_truth_states", "target_positions", "images_path")
STEP_TARGETS = "step_target_positions"  # optional (older datasets lack it): merged when every source has it
_RECORD = re.compile(r"^record_(\d+)$")
# The dataset_config.json entries that may differ between the sources: where the records came from, not what they
# mean (merged_from lists them per source). Every other entry, one added later too, must be equal (checkCompatible).
MAY_DIFFER = frozenset({"seed", "policy", "num_episodes", "merged_from"})
# Why some differences are refused, where the entry's name does not say it.
# The arrays an episode's digest covers (with its target_positions row): what the agent did and what happened.
EPISODE_KEYS = ("actions", "rewards", "ground_truth_states")
MAX_LISTED = 3  # identical episodes named in the error line
WHY_NOT = {"force_down": ": the same action moves otherwise",
           "multi_view": ": two cameras' images per frame in one, one camera's in the other"}
# The env_globals.json settings not compared there (envSettings): dataset_config.json's renderer (the one that drew the
# frames, by name) and force_down (an unknown value not compared) decide. None differs legitimately between sources:
# the seed and policy are no env settings, and a replayed agent's keywords and physics version change the env.
COMPARED_IN_CONFIG = frozenset({"renderer", "DEFAULT_RENDERER", "RENDERERS", "force_down"})


def buildParser() -> CLIParser:
    """:return: the command's parser"""
    parser = CLIParser(prog="python -m environments.dataset_fusioner",
                           description="Merge srl-zoo datasets: records renumbered, arrays concatenated.")
    parser.add_argument("--merge", nargs="+", required=True, metavar="PATH",
                        help="source dataset folders followed by the destination folder (SRC1 SRC2 ... DST)")
    parser.add_argument("--delete-sources", action="store_true", help="remove the sources once DST is written")
    return parser


def loadDataset(folder: str) -> dict[str, Any]:
    """
    :param folder: a dataset folder written by environments.dataset_generator (or srl-zoo compatible)
    :return: {"folder", "config", "arrays" (all npz arrays), "records" (record index -> folder name, sorted, as
        images_path uses them), "env_globals" (env_globals.json's content, None without one)}
    :raises UsageError: missing files or keys, inconsistent lengths
    """
    if not os.path.isdir(folder):
        raise UsageError(f"{folder!r} is not a dataset folder")
    arrays: dict[str, np.ndarray] = {}
    for file_name, keys in (("preprocessed_data.npz", PREPROCESSED_KEYS), ("ground_truth.npz", GROUND_TRUTH_KEYS)):
        path = os.path.join(folder, file_name)
        if not os.path.isfile(path):
            raise UsageError(f"{folder!r} is not a complete dataset ({file_name} is missing)")
        try:
            with loadNpz(path, "a dataset file") as data:
                missing = [key for key in keys if key not in data.files]
                if missing:
                    raise UsageError(f"{path} lacks {', '.join(missing)}")
                arrays.update({key: np.array(data[key]) for key in data.files})
        except NotNpzFile as error:
            raise UsageError(str(error)) from None
        except NPZ_READ_ERRORS as error:
            raise UsageError(f"{path} is not a readable npz file ({type(error).__name__}: {error})") from None
    config = _optionalJson(os.path.join(folder, "dataset_config.json"))
    config = {} if config is None else config
    n_rows = len(arrays["rewards"])
    for key in ("actions", "episode_starts", "ground_truth_states", "images_path",
                *([STEP_TARGETS] if STEP_TARGETS in arrays else [])):
        if len(arrays[key]) != n_rows:
            raise UsageError(f"{folder!r}: {key} has {len(arrays[key])} rows, rewards {n_rows}")
    n_episodes = int(np.count_nonzero(arrays["episode_starts"]))
    if len(arrays["target_positions"]) != n_episodes:
        raise UsageError(f"{folder!r}: {len(arrays['target_positions'])} target positions for {n_episodes} episodes")
    records: dict[int, str] = {}
    for path in arrays["images_path"]:
        parts = str(path).split("/")
        match = _RECORD.match(parts[-2]) if len(parts) >= 2 else None
        if match is None:
            raise UsageError(f"{folder!r}: image path {str(path)!r} is not NAME/record_NNN/frameNNNNNN")
        records[int(match.group(1))] = parts[-2]
    for record in records.values():
        if not os.path.isdir(os.path.join(folder, record)):
            raise UsageError(f"{folder!r}: {record} is missing")
    env_globals = _optionalJson(os.path.join(folder, ENV_GLOBALS_FILE))
    return {"folder": folder, "config": config, "arrays": arrays, "records": dict(sorted(records.items())),
            "env_globals": env_globals}


def _optionalJson(path: str) -> dict[str, Any] | None:
    """
    :param path: a dataset's JSON file
    :return: its object, None without the file
    :raises UsageError: not valid JSON, or not an object
    """
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            content = json.load(handle)
    except ValueError as error:
        raise UsageError(f"{path} is not valid JSON ({error})") from None
    if not isinstance(content, dict):
        raise UsageError(f"{path} is not a JSON object")
    return content


def _meaning(dataset: dict[str, Any]) -> dict[str, Any]:
    """:return: the dataset's dataset_config.json entries, those whose absence means a value (a dataset recorded
    before them) with that value: one camera, TinyRenderer's images, force_down as :class:`Dataset` reads it"""
    reader = Dataset(dataset["folder"], dataset["config"], {})
    return {**dataset["config"], "multi_view": bool(dataset["config"].get("multi_view")), "renderer": reader.renderer,
            "force_down": reader.force_down}


def envSettings(env_globals: dict[str, Any]) -> dict[str, Any]:
    """
    :param env_globals: an env_globals.json's content (SRLGymEnv.getGlobals)
    :return: the env settings it records: its env class, constants, and each constructor keyword's value (the one
        given, else the default; a max_steps of None as the MAX_STEPS it means), but for :data:`COMPARED_IN_CONFIG`
    """
    constants, defaults, given = (part if isinstance(part := env_globals.get(name), dict) else {}
                                  for name in ("constants", "defaults", "env_kwargs"))
    settings: dict[str, Any] = {}
    if "env_class" in env_globals:
        settings["env_class"] = env_globals["env_class"]
    settings.update(constants)
    for keyword in dict.fromkeys([*defaults, *given]):
        settings[keyword] = given[keyword] if keyword in given else defaults[keyword]
    if settings.get("max_steps", 0) is None and "MAX_STEPS" in constants:
        settings["max_steps"] = constants["MAX_STEPS"]
    return {key: value for key, value in settings.items() if key not in COMPARED_IN_CONFIG}


def _envDiffersText(differing: list[tuple[str, Any, Any]]) -> str:
    """:return: "their env setting KEY differs (A vs B)" for one, "their env settings differ (K1 A vs B, ...)" else"""
    if len(differing) == 1:
        key, a, b = differing[0]
        return f"their env setting {key} differs ({a} vs {b})"
    listed = ", ".join(f"{key} {a} vs {b}" for key, a, b in differing[:MAX_LISTED])
    more = f" and {len(differing) - MAX_LISTED} more" if len(differing) > MAX_LISTED else ""
    return f"their env settings differ ({listed}{more})"


def checkCompatible(datasets: list[dict[str, Any]]) -> None:
    """
    Every dataset_config.json entry but those of :data:`MAY_DIFFER` must be equal in all sources (the merged config
    is the first's): an entry one source lacks is not compared, unless its absence means a value (:func:`_meaning`).
    So must every env setting their env_globals.json files record (:func:`envSettings`; the merged file is the
    first's), where both have one.

    :param datasets: loaded datasets
    :raises UsageError: they cannot be merged (an entry that decides what the records mean differs: env, cameras,
        image shape, format or renderer, action kind or meaning, rewards, targets...; an env setting: episode length,
        physics...; or a state or action shape)
    """
    first = datasets[0]
    settings = _meaning(first)
    for other in datasets[1:]:
        other_settings = _meaning(other)
        for key in dict.fromkeys(["env", *settings, *other_settings]):  # (another env named first)
            if key in MAY_DIFFER or key not in settings or key not in other_settings:
                continue
            a, b = settings[key], other_settings[key]
            if a == b or (key == "force_down" and None in (a, b)):  # (None: an env without it, or unknown)
                continue
            raise UsageError(f"cannot merge {first['folder']!r} and {other['folder']!r}: their {key} differs "
                             f"({a} vs {b}{WHY_NOT.get(key, '')})")
        if first["env_globals"] is not None and other["env_globals"] is not None:
            env, other_env = envSettings(first["env_globals"]), envSettings(other["env_globals"])
            differing = [(key, env[key], other_env[key]) for key in env
                         if key in other_env and env[key] != other_env[key]]
            if differing:
                raise UsageError(f"cannot merge {first['folder']!r} and {other['folder']!r}: "
                                 f"{_envDiffersText(differing)}")
        for key in ("actions", "ground_truth_states", "target_positions"):
            a, b = first["arrays"][key], other["arrays"][key]
            if a.shape[1:] != b.shape[1:] or a.dtype.kind != b.dtype.kind:
                raise UsageError(f"cannot merge {first['folder']!r} and {other['folder']!r}: their {key} differ "
                                 f"(shape {a.shape[1:]} {a.dtype} vs {b.shape[1:]} {b.dtype})")


def episodeDigests(dataset: dict[str, Any]) -> list[tuple[str, str]]:
    """
    :param dataset: a loaded dataset (:func:`loadDataset`)
    :return: (record folder name, SHA-256 of the episode's :data:`EPISODE_KEYS` rows and target) per episode, in
        order; values are compared as float64, so the digest does not depend on the arrays' dtypes
    """
    arrays = dataset["arrays"]
    starts = np.flatnonzero(arrays["episode_starts"])
    ends = [*starts[1:], len(arrays["rewards"])]
    digests = []
    for episode, (start, end) in enumerate(zip(starts, ends)):
        digest = hashlib.sha256()
        for key, rows in [*((key, arrays[key][start:end]) for key in EPISODE_KEYS),
                          ("target_positions", arrays["target_positions"][episode])]:
            values = np.ascontiguousarray(rows, dtype=np.float64)
            digest.update(f"{key}{values.shape}".encode())
            digest.update(values.tobytes())
        digests.append((str(arrays["images_path"][start]).split("/")[-2], digest.hexdigest()))
    return digests


def checkDistinctEpisodes(datasets: list[dict[str, Any]]) -> None:
    """
    No episode may occur twice among the sources (:func:`episodeDigests`): neither in two sources nor twice in one.

    :param datasets: loaded datasets
    :raises UsageError: naming the first two sources (or the one source) that share episodes and those episodes
    """
    first_seen: dict[str, tuple[int, str]] = {}  # digest -> (source index, record)
    shared: dict[tuple[int, int], list[tuple[str, str]]] = {}  # (source a, source b) -> [(record in a, in b)]
    for index, dataset in enumerate(datasets):
        for record, digest in episodeDigests(dataset):
            if digest in first_seen:
                other, other_record = first_seen[digest]
                shared.setdefault((other, index), []).append((other_record, record))
            else:
                first_seen[digest] = (index, record)
    if not shared:
        return
    (a, b), pairs = next(iter(shared.items()))
    name_a, name_b = (os.path.basename(os.path.normpath(datasets[i]["folder"])) for i in (a, b))
    listed = ", ".join(f"{name_a}/{record_a} = {name_b}/{record_b}" for record_a, record_b in pairs[:MAX_LISTED])
    more = f" and {len(pairs) - MAX_LISTED} more" if len(pairs) > MAX_LISTED else ""
    elsewhere = sum(len(found) for found in shared.values()) - len(pairs)
    also = f"; {elsewhere} more between other sources" if elsewhere else ""
    if a == b:
        raise UsageError(f"cannot merge: {datasets[a]['folder']!r} holds the same episode more than once ({listed}"
                         f"{more}{also}): it was merged from recordings made with the same --seed, or copies; "
                         "record its parts again, each with another --seed")
    raise UsageError(f"cannot merge {datasets[a]['folder']!r} and {datasets[b]['folder']!r}: they hold identical "
                     f"episodes ({listed}{more}{also}): recorded with the same --seed (0 by default) and settings, "
                     "or copied; record one of them again with another --seed")


def _linkOrCopy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def merge(sources: list[str], destination: str, delete_sources: bool = False) -> dict[str, np.ndarray]:
    """
    Write the merged dataset (through a partial folder renamed at the end).

    :param sources: source dataset folders, in order
    :param destination: the new dataset folder (must not exist)
    :param delete_sources: the sources are to be removed afterwards (by the caller): DST may not lie inside one
    :return: the merged arrays
    :raises UsageError: bad sources, the destination exists, lies inside a source to be deleted, or its partial
        folder holds a dataset_generator recording
    """
    given, destination = destination, os.path.normpath(destination)
    name = os.path.basename(destination)
    if not name or name.startswith("."):  # (named as given: an empty one normalises to '.')
        raise UsageError(f"destination {given!r} must end with a plain folder name (not empty, not starting with '.')")
    if os.path.exists(destination):
        raise UsageError(f"destination {destination!r} already exists; choose another one")
    # a file in its path, an unwritable folder or a name too long for its partial folder: refused before any work
    checkWritableFolder(destination, "destination")
    checkNameLength(name, os.path.dirname(os.path.abspath(destination)), "destination", PARTIAL_NAME_EXTRA,
                    "folder name", value=destination)
    real_sources = [os.path.realpath(source) for source in sources]
    seen: dict[str, str] = {}
    for source, real in zip(sources, real_sources):
        if real in seen:
            raise UsageError(f"the same source dataset is given twice: {seen[real]!r} and {source!r}")
        seen[real] = source
    parent = os.path.dirname(destination) or "."
    if delete_sources:
        real_parent = os.path.realpath(parent)
        for source, real in zip(sources, real_sources):
            if os.path.commonpath([real, real_parent]) == real:
                raise UsageError(f"destination {destination!r} lies inside source {source!r}, which --delete-sources "
                                 "would remove with it; choose a destination outside the sources")
    partial = partialFolder(parent, name)
    if any(os.path.exists(os.path.join(partial, file_name)) for file_name in (SETTINGS_FILE, EPISODES_FOLDER)):
        raise UsageError(f"{partial} holds a dataset_generator recording of {name!r} (interrupted or in progress): "
                         "finish it with the generator's --resume or remove it, or choose another destination")
    datasets = [loadDataset(source) for source in sources]
    checkCompatible(datasets)
    checkDistinctEpisodes(datasets)

    if os.path.exists(partial):
        shutil.rmtree(partial)  # left by an interrupted merge: nothing in it is reused
    os.makedirs(partial)
    ground_truth_keys = [*GROUND_TRUTH_KEYS, *([STEP_TARGETS] if all(STEP_TARGETS in d["arrays"] for d in datasets)
                                                else [])]
    merged: dict[str, list[np.ndarray]] = {key: [] for key in (*PREPROCESSED_KEYS, *ground_truth_keys)}
    next_record = 0
    for dataset in datasets:
        renumber = {old: next_record + i for i, old in enumerate(dataset["records"])}
        next_record += len(renumber)
        for old, new in renumber.items():
            shutil.copytree(os.path.join(dataset["folder"], dataset["records"][old]),
                            os.path.join(partial, f"record_{new:03d}"), copy_function=_linkOrCopy)
        paths = []
        for path in dataset["arrays"]["images_path"]:
            parts = str(path).split("/")
            old = int(_RECORD.match(parts[-2]).group(1))
            paths.append(f"{name}/record_{renumber[old]:03d}/{parts[-1]}")
        for key, parts in merged.items():
            parts.append(np.array(paths) if key == "images_path" else dataset["arrays"][key])
    result = {key: np.concatenate(parts) for key, parts in merged.items()}
    result["episode_starts"] = result["episode_starts"].astype(bool)
    writeNpz(os.path.join(partial, "preprocessed_data.npz"), {key: result[key] for key in PREPROCESSED_KEYS})
    writeNpz(os.path.join(partial, "ground_truth.npz"), {key: result[key] for key in ground_truth_keys})
    globals_path = os.path.join(sources[0], ENV_GLOBALS_FILE)
    if os.path.isfile(globals_path):
        shutil.copy2(globals_path, os.path.join(partial, ENV_GLOBALS_FILE))
    config = dict(datasets[0]["config"])
    config.update(num_episodes=int(np.count_nonzero(result["episode_starts"])),
                  merged_from=[{"name": os.path.basename(os.path.normpath(d["folder"])), "seed": d["config"].get("seed"),
                                "policy": d["config"].get("policy"),
                                "num_episodes": int(np.count_nonzero(d["arrays"]["episode_starts"]))}
                               for d in datasets])
    config.pop("seed", None)
    writeJson(os.path.join(partial, "dataset_config.json"), config)
    os.rename(partial, destination)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    """
    args = buildParser().parse_args(argv)
    if len(args.merge) < 3:
        raise UsageError(f"--merge needs at least two sources and a destination (SRC1 SRC2 DST), got "
                         f"{len(args.merge)} path{'s' if len(args.merge) != 1 else ''}")
    *sources, destination = args.merge
    result = merge(sources, destination, delete_sources=args.delete_sources)
    episodes = int(np.count_nonzero(result["episode_starts"]))
    print(f"Dataset: {destination} ({episodes} episode{'s' * (episodes != 1)}, {len(result['rewards'])} frames, from "
          f"{len(sources)} datasets)")
    if args.delete_sources:
        for source in sources:
            shutil.rmtree(source)
        print(f"Deleted {', '.join(sources)}")
    return 0


if __name__ == "__main__":
    runCommand(main)
