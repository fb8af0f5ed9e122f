"""Behaviour cloning before RL: ``--pretrain-dataset DIR`` (the old Stable Baselines ``pretrain()``).

A dataset written by ``python -m environments.dataset_generator`` (docs/architecture.md) is turned into
(observation, expert action) pairs for the run's observation mode, and the SB3 policy is trained on them by
supervised learning before ``learn`` starts:

- on-policy actor-critics (ppo2, a2c, trpo): maximise the log-probability of the expert action under
  ``policy.get_distribution`` (cross-entropy of the logits for discrete actions);
- sac, tqc (squashed Gaussian actor): maximise the log-probability of the expert action, scaled to [-1, 1];
- td3, ddpg (deterministic actor): mean squared error between the actor's action and the scaled expert action
  (the target actor is then synced).

Observations go through the policy's own preprocessing (``policy.obs_to_tensor``, then its feature extractor), so
images are scaled as during RL. With a low-dimensional ``--srl-model`` the run's VecNormalize statistics are
initialised from the dataset's states (then keep adapting during RL), and the policy is pretrained on the states
normalised with them: it sees the same inputs in both phases. Images drawn by another renderer than the run's are
used with one warning (the policy may act otherwise on the run's frames), as a learned SRL model of them is.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from environments.dataset import GROUND_TRUTH_FILE, Dataset
from rl_baselines.envs.factory import findVecNormalize, runActionSpace
from srl_toolbox.optimizers import multiTensorSteps

# SB3 classes whose policy has a plain (non-recurrent) action distribution or actor to clone into.
ON_POLICY_CLASSES = ("PPO", "A2C", "TRPO")
STOCHASTIC_ACTOR_CLASSES = ("SAC", "TQC")
DETERMINISTIC_ACTOR_CLASSES = ("TD3", "DDPG")
PRETRAIN_SRL_MODELS = ("ground_truth", "raw_pixels")


@dataclass
class DatasetInfo:
    """
    :param path: dataset folder
    :param config: dataset_config.json
    """

    path: str
    config: dict[str, Any]


def canPretrain(algo_class: type) -> bool:
    """
    :param algo_class: a registered algorithm class
    :return: whether its policy can be pretrained (an SB3-backed algorithm, i.e. one naming its ``SB3_CLASS``, with
        a non-recurrent policy)
    """
    sb3_class = getattr(algo_class, "SB3_CLASS", None)
    return getattr(sb3_class, "__name__", "") in ON_POLICY_CLASSES + STOCHASTIC_ACTOR_CLASSES + DETERMINISTIC_ACTOR_CLASSES


def checkDataset(path: str, args: Any, registered_rl: dict) -> DatasetInfo:
    """
    Check that a dataset can pretrain this run (before anything is written).

    :param path: the dataset folder (``--pretrain-dataset``)
    :param args: the run's parsed arguments
    :param registered_rl: the algorithm table
    :return: the dataset's description
    :raises ValueError: a one-line reason (another env or action kind, actions the run's action space cannot take,
        ground-truth states that are not finite, ...); images drawn by another renderer than the run's are used,
        with one warning
    """
    algo_class = registered_rl[args.algo][0]
    if not canPretrain(algo_class):
        able = [name for name, entry in registered_rl.items() if canPretrain(entry[0])]
        raise ValueError(f"--algo {args.algo} cannot pretrain a policy; algorithms that can: {', '.join(able)}")
    if not args.pretrain_lr > 0:
        raise ValueError(f"--pretrain-lr {args.pretrain_lr} must be > 0")
    if not os.path.isfile(os.path.join(path, GROUND_TRUTH_FILE)) and os.path.isdir(path):
        raise ValueError(f"{path!r} is not a dataset (no {GROUND_TRUTH_FILE}); record one with "
                         "python -m environments.dataset_generator")
    dataset = Dataset.open(path)
    dataset.require("actions", "episode_starts", purpose="pretraining")
    config, actions, n_rows = dataset.config, dataset["actions"], len(dataset)
    if config.get("env") != args.env:
        raise ValueError(f"{path!r} was recorded on {config.get('env')}, not on --env {args.env}")
    if len(actions) != n_rows or len(actions) < 2:
        raise ValueError(f"{path!r} has {len(actions)} actions for {n_rows} rows (need at least 2, one per row)")
    if args.srl_model not in PRETRAIN_SRL_MODELS:
        raise ValueError(f"cannot rebuild {args.srl_model!r} observations from a dataset; use --srl-model "
                         f"{' or '.join(PRETRAIN_SRL_MODELS)}")
    dataset.checkActions(bool(args.continuous_actions), bool(args.action_joints), runActionSpace(args),
                         force_down=bool(args.force_down))
    if args.srl_model == "ground_truth":
        dataset.require("ground_truth_states", purpose="ground_truth pretraining")
        dataset.states()  # relative ground truth also needs the targets
        dataset.checkStates()
    if args.srl_model == "raw_pixels" and (config.get("multi_view") or args.fpv
                                           or args.multi_view):
        raise ValueError("pretraining on 6-channel (--fpv/--multi-view) images is not supported")
    if args.srl_model == "raw_pixels":
        dataset.require("images_path", purpose="raw_pixels pretraining")
        stems = dataset["images_path"]
        for stem in (stems[0], stems[-1]):
            if not os.path.isfile(dataset.imageFile(str(stem))):
                raise ValueError(f"{path!r} lacks its images ({dataset.imageFile(str(stem))}), needed with raw_pixels")
        if dataset.renderer != args.renderer:  # (as a learned SRL model of another renderer's frames: train warns)
            warnings.warn(f"--pretrain-dataset {path} was drawn by --renderer {dataset.renderer} and this run draws its "
                          f"frames with --renderer {args.renderer}: the cloned policy may act otherwise on them "
                          f"(--renderer {dataset.renderer} gives the dataset's frames)", stacklevel=2)
    if args.num_stack > 1:
        raise ValueError("pretraining with --num-stack > 1 is not supported")
    return DatasetInfo(path=path, config=config)


def loadDataset(path: str, srl_model: str, img_shape: tuple[int, int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """
    :param path: dataset folder
    :param srl_model: "ground_truth" (states, relative to the episode's target when the dataset's env used
        relative_pos) or "raw_pixels" (uint8 (N, H, W, 3) RGB images)
    :param img_shape: (C, H, W) the images are resized to (default: as recorded)
    :return: (observations, actions), row i being the observation before expert action i
    """
    dataset = Dataset.open(path)
    if srl_model == "ground_truth":
        return dataset.states(), dataset["actions"]
    return dataset.loadImages(img_shape=img_shape), dataset["actions"]


def _policyLayout(policy: Any, observations: np.ndarray) -> np.ndarray:
    """Images recorded channel-last go channel-first when SB3 transposed the policy's observation space."""
    shape = policy.observation_space.shape
    if observations.shape[1:] != shape and observations.ndim == 4 and observations.shape[1:] == (shape[1], shape[2], shape[0]):
        return np.ascontiguousarray(observations.transpose(0, 3, 1, 2))
    return observations


def pretrainPolicy(model: Any, observations: np.ndarray, actions: np.ndarray, epochs: int = 10,
                   learning_rate: float = 1e-3, batch_size: int = 64, seed: int = 0,
                   val_fraction: float = 0.1, verbose: bool = True) -> dict[str, float]:
    """
    Supervised training of ``model.policy`` on expert (observation, action) pairs.

    :param model: an SB3 PPO/A2C/TRPO/SAC/TQC/TD3/DDPG model
    :param observations: (N, ...) observations as the policy receives them (already normalised)
    :param actions: (N,) discrete or (N, action_dim) continuous expert actions
    :param epochs: passes over the training split
    :param learning_rate: Adam learning rate
    :param batch_size: minibatch size
    :param seed: seed of the train/validation split and minibatch order
    :param val_fraction: fraction of rows held out for validation
    :param verbose: print the loss and validation metric of each epoch
    :return: {"loss": last epoch's mean training loss, "val_accuracy" (discrete) or "val_mse" (continuous)}
    """

    policy = model.policy
    name = type(model).__name__
    discrete = isinstance(model.action_space, gym.spaces.Discrete)
    observations = _policyLayout(policy, observations)
    if discrete:
        targets = actions.astype(np.int64).reshape(-1)
    else:
        low, high = model.action_space.low, model.action_space.high
        # Expert actions in the policy's [-1, 1] space; kept off the bounds where tanh's inverse is infinite.
        targets = np.clip(2.0 * (np.clip(actions.reshape(len(actions), -1), low, high) - low) / (high - low) - 1.0,
                          -1 + 1e-4, 1 - 1e-4).astype(np.float32)
    if name in STOCHASTIC_ACTOR_CLASSES + DETERMINISTIC_ACTOR_CLASSES:
        network = policy.actor
    else:
        network = policy
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(observations))
    n_val = max(1, round(val_fraction * len(observations)))
    val_idx, train_idx = order[:n_val], order[n_val:]
    optimizer = torch.optim.Adam(network.parameters(), lr=learning_rate)
    multiTensorSteps([optimizer])

    def loss_and_prediction(obs: np.ndarray, target: np.ndarray) -> tuple[Any, Any]:
        obs_tensor, _ = policy.obs_to_tensor(obs)
        target_tensor = torch.as_tensor(target)
        if name in DETERMINISTIC_ACTOR_CLASSES:
            prediction = network(obs_tensor)
            return ((prediction - target_tensor) ** 2).sum(dim=1).mean(), prediction
        if name in STOCHASTIC_ACTOR_CLASSES:
            mean, log_std, kwargs = network.get_action_dist_params(obs_tensor)
            distribution = network.action_dist.proba_distribution(mean, log_std, **kwargs)
            return -distribution.log_prob(target_tensor).mean(), torch.tanh(mean)
        distribution = policy.get_distribution(obs_tensor)
        prediction = distribution.get_actions(deterministic=True)
        if not discrete:
            prediction = torch.clamp(prediction, -1, 1) if policy.squash_output else prediction
        return -distribution.log_prob(target_tensor).mean(), prediction

    def validation_metric() -> float:
        policy.set_training_mode(False)
        with torch.no_grad():  # in batches: a held-out split of images can be large
            prediction = np.concatenate([
                loss_and_prediction(observations[val_idx[i:i + 256]], targets[val_idx[i:i + 256]])[1].cpu().numpy()
                for i in range(0, len(val_idx), 256)])
        if discrete:
            return float(np.mean(prediction.reshape(-1) == targets[val_idx]))
        if name in ON_POLICY_CLASSES:  # an unsquashed Gaussian mean, in the env's units: compare scaled
            prediction = np.clip(2.0 * (np.clip(prediction, low, high) - low) / (high - low) - 1.0, -1, 1)
        return float(np.mean((prediction - targets[val_idx]) ** 2))

    metric = "val_accuracy" if discrete else "val_mse"
    results = {"loss": float("nan"), metric: validation_metric()}
    if verbose:
        print(f"Pretraining {name} on {len(train_idx)} expert samples ({n_val} held out): before, {metric} "
              f"{results[metric]:.3f}", flush=True)
    for epoch in range(epochs):
        policy.set_training_mode(True)
        losses = []
        for start in range(0, len(train_idx), batch_size):
            batch = train_idx[start:start + batch_size]
            loss, _ = loss_and_prediction(observations[batch], targets[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        rng.shuffle(train_idx)
        results = {"loss": float(np.mean(losses)), metric: validation_metric()}
        if verbose:
            print(f"Pretrain epoch {epoch + 1}/{epochs}: loss {results['loss']:.4f}, {metric} {results[metric]:.3f}",
                  flush=True)
    if name in DETERMINISTIC_ACTOR_CLASSES:
        policy.actor_target.load_state_dict(policy.actor.state_dict())
    policy.set_training_mode(False)
    return results


def pretrainFromArgs(model: Any, env: Any, args: Any) -> dict[str, float]:
    """
    Load ``args.pretrain_dataset`` for the run's observations, seed the VecNormalize statistics from it (low
    dimensional observations) and pretrain the model's policy.

    :param model: the freshly built SB3 model
    :param env: the training VecEnv
    :param args: the run's arguments (pretrain_dataset, pretrain_epochs, pretrain_lr, srl_model, img_shape, seed)
    :return: the losses of :func:`pretrainPolicy`
    """

    img_shape = args.img_shape
    observations, actions = loadDataset(args.pretrain_dataset, args.srl_model, tuple(img_shape) if img_shape else None)
    expected = model.observation_space.shape
    if args.srl_model != "raw_pixels" and observations.shape[1:] != expected:
        raise ValueError(f"dataset states have shape {observations.shape[1:]}, the run's observations {expected}")
    vec_normalize = findVecNormalize(env)
    if vec_normalize is not None and not isinstance(vec_normalize.obs_rms, dict):
        vec_normalize.obs_rms.mean = observations.mean(axis=0).astype(np.float64)
        vec_normalize.obs_rms.var = observations.var(axis=0).astype(np.float64)
        vec_normalize.obs_rms.count = float(len(observations))
        observations = vec_normalize.normalize_obs(observations).astype(np.float32)
    return pretrainPolicy(model, observations, actions, epochs=args.pretrain_epochs,
                          learning_rate=args.pretrain_lr, seed=args.seed)
