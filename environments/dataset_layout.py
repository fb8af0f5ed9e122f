"""The layout of a recorded dataset: what decides its content, where its episodes are kept while it is recorded, and
how they are merged into the dataset's files (used by :mod:`environments.dataset_generator`, which records them).

A :class:`GenerationSpec` holds everything that decides a dataset's content: a resumed recording must share it with
the interrupted one. Episode e is recorded into ``record_NNN/`` (:func:`recordFolder`) and, once finished, leaves its
arrays in ``episodes/episode_NNNNNN.npz`` of the partial folder (:func:`episodeFile`: the file marks it finished).
:func:`assemble` merges those files, in episode order, into preprocessed_data.npz, ground_truth.npz,
env_globals.json and dataset_config.json (each written atomically), then removes the bookkeeping files; the folder
is then complete and ready to be renamed.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
from typing import Any

import numpy as np

from environments.partial_folder import EPISODES_FOLDER, SETTINGS_FILE
from environments.srl_env import ENV_GLOBALS_FILE, REFERENCE_RENDERER
from srl_toolbox.files import writeJson, writeNpz

FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class GenerationSpec:
    """
    Everything that decides a dataset's content (what a resumed run must share with the interrupted one).

    :param env_id: registered env id
    :param env_kwargs: the env's constructor keywords
    :param name: dataset name (folder name, prefix of images_path)
    :param num_episodes: episodes to record
    :param seed: master seed; episode e uses episodeSeed(seed, e)
    :param policy: "random" or the absolute path of a run folder
    :param image_format: "jpg" or "png"
    :param run_env_kwargs: the keywords of env_kwargs that a replayed agent's run gave (its algorithm's envKeywords)
    """

    env_id: str
    env_kwargs: dict[str, Any]
    name: str
    num_episodes: int
    seed: int
    policy: str
    image_format: str
    run_env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def settings(self) -> dict[str, Any]:
        """:return: the spec as JSON-safe data (tuples as lists), as stored in generation.json"""
        return json.loads(json.dumps(dataclasses.asdict(self)))


def recordFolder(episode: int) -> str:
    """:return: the record folder's name of an episode"""
    return f"record_{episode:03d}"


def episodeFile(partial_dir: str, episode: int) -> str:
    """:return: where a finished episode's arrays are kept until the dataset is assembled"""
    return os.path.join(partial_dir, EPISODES_FOLDER, f"episode_{episode:06d}.npz")


def assemble(spec: GenerationSpec, env_class: type, relative_pos: bool, partial_dir: str) -> dict[str, np.ndarray]:
    """
    Merge the episode files into the dataset's npz and JSON files, then remove the bookkeeping files.

    :param spec: the generation spec
    :param env_class: the env's class (for env_globals.json)
    :param relative_pos: the env's relative_pos (recorded in dataset_config.json)
    :param partial_dir: the partial dataset folder, with every episode finished
    :return: the merged arrays
    """
    actions, rewards, starts, states, targets, step_targets, paths = [], [], [], [], [], [], []
    for episode in range(spec.num_episodes):
        with np.load(episodeFile(partial_dir, episode), allow_pickle=False) as data:
            n_frames = len(data["rewards"])
            actions.append(data["actions"])
            rewards.append(data["rewards"])
            states.append(data["ground_truth_states"])
            targets.append(data["target_position"])
            # (an episode file of an older generator, resumed, has none: the dataset then has none either)
            step_targets.append(data["step_target_positions"] if "step_target_positions" in data.files else None)
        episode_starts = np.zeros(n_frames, dtype=bool)
        episode_starts[0] = True
        starts.append(episode_starts)
        paths.extend(f"{spec.name}/{recordFolder(episode)}/frame{frame:06d}" for frame in range(n_frames))
    merged = {"actions": np.concatenate(actions), "rewards": np.concatenate(rewards),
              "episode_starts": np.concatenate(starts), "ground_truth_states": np.concatenate(states),
              "target_positions": np.stack(targets), "images_path": np.array(paths)}
    ground_truth_keys = ["ground_truth_states", "target_positions", "images_path"]
    if all(rows is not None for rows in step_targets):
        merged["step_target_positions"] = np.concatenate(step_targets)
        ground_truth_keys.append("step_target_positions")
    # Atomic although the folder is renamed when complete: an interrupted run is resumed in this folder.
    writeNpz(os.path.join(partial_dir, "preprocessed_data.npz"),
             {key: merged[key] for key in ("actions", "rewards", "episode_starts")})
    writeNpz(os.path.join(partial_dir, "ground_truth.npz"),
             {key: merged[key] for key in ground_truth_keys})
    writeJson(os.path.join(partial_dir, ENV_GLOBALS_FILE), env_class.getGlobals(spec.env_kwargs))
    max_distance = spec.env_kwargs.get("max_distance")
    config = {"relative_pos": bool(relative_pos), "max_dist": None if max_distance is None else str(max_distance),
              "env": spec.env_id, "img_shape": list(spec.env_kwargs["img_shape"]), "seed": spec.seed,
              "policy": spec.policy, "num_episodes": spec.num_episodes, "image_format": spec.image_format,
              "continuous_actions": not spec.env_kwargs["is_discrete"],
              "action_joints": bool(spec.env_kwargs.get("action_joints")),
              "force_down": spec.env_kwargs.get("force_down"),
              "random_target": spec.env_kwargs["random_target"], "shape_reward": spec.env_kwargs["shape_reward"],
              "multi_view": bool(spec.env_kwargs.get("multi_view") or spec.env_kwargs.get("fpv")),
              "renderer": spec.env_kwargs.get("renderer", REFERENCE_RENDERER),  # by name (rendererKeywords)
              "run_env_kwargs": spec.run_env_kwargs,  # a replayed agent's algorithm's keywords (envKeywords)
              "version": FORMAT_VERSION}
    writeJson(os.path.join(partial_dir, "dataset_config.json"), config)
    shutil.rmtree(os.path.join(partial_dir, EPISODES_FOLDER))
    os.remove(os.path.join(partial_dir, SETTINGS_FILE))
    return merged


def rewardDistribution(rewards: np.ndarray) -> str:
    """:return: a few lines describing the distribution of the rewards (counts per value, or a 10-bin histogram)"""
    values, counts = np.unique(rewards, return_counts=True)
    if len(values) <= 10:
        rows = [f"  {value:g}: {count} ({100 * count / len(rewards):.1f}%)" for value, count in zip(values, counts)]
    else:
        counts, edges = np.histogram(rewards, bins=10)
        rows = [f"  [{low:.3g}, {high:.3g}): {count}" for low, high, count in zip(edges[:-1], edges[1:], counts)]
    return "\n".join(["Reward distribution:", *rows])
