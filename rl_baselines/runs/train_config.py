"""TrainConfig: the typed, frozen settings of one training run, built once by ``rl_baselines.runs.train.validate``.

Command-line parsing gives a mutable ``argparse.Namespace``; validation checks it and resolves what the flags leave
open (the device, a learned SRL model's folder and image size, the typed hyperparameters, the steps a continued model
already did) into a :class:`TrainConfig`. From then on nothing changes it: a later stage that learns something new
(the run folder, a resumed checkpoint) makes a new one with :meth:`TrainConfig.replace`.

Invariants:

- one typed field per flag of the train command's shared parser (a test checks that every flag has one); the flags
  an algorithm adds itself (``--n-steps`` as ``hp_n_steps``, a plugin's ``customArguments``) are kept in
  :attr:`TrainConfig.extra` and read as attributes too (``config.hp_n_steps``);
- algorithms keep the Namespace contract of plugin API v1: ``BaseRLObject.train`` receives
  :meth:`TrainConfig.namespace`, a fresh copy made for that call, so an algorithm that writes into its arguments
  changes neither the run's config, nor args.json, nor what the evaluation env or the callback read;
- :meth:`TrainConfig.argsRecord` is exactly what args.json holds (the flags, the algorithm's own flags that were
  given, not the values derived by validation such as the typed hyperparameters).
"""
from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

# Fields that are not flags: derived by validation, or set by the run itself as it goes.
DERIVED_FIELDS = ("hyperparams", "env_kwargs", "start_timesteps", "extra")
RUN_FIELDS = ("run_dir", "monitor_dir", "resume_from", "resume_buffer")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """
    The validated settings of a training run (``python -m rl_baselines.train --help`` explains each flag).

    :param algo: algorithm name
    :param env: env id
    :param srl_model: observation: computed by the env, or a learned model's name
    :param srl_model_path: the learned model's folder (absolute, resolved by validation), None for env observations
    :param seed: random seed; env i is seeded ``seed + i``
    :param log_dir: root folder of the runs
    :param num_timesteps: env steps to train in this command
    :param num_cpu: parallel envs
    :param no_vis: no live visdom plots
    :param port: visdom server port
    :param continuous_actions: continuous actions
    :param action_joints: act in joint space
    :param random_target: a new target every episode
    :param shape_reward: dense reward
    :param fpv: mobile robots: a stacked first-person camera
    :param multi_view: arms: a stacked second camera
    :param force_down: arms: never move up
    :param srl_ground_truth_scale: a learned state scaled to the norm of the env's ground truth after normalisation
    :param num_stack: frames stacked per observation
    :param action_repeat: env steps per agent action
    :param episode_window: moving-average window of the reward curve, in episodes
    :param min_episodes_save: episodes before the best model is saved
    :param checkpoint_freq: env steps between checkpoints (0: five per run, -1: none)
    :param buffer_save_freq: env steps between replay-buffer saves (0: every checkpoint, -1: never)
    :param eval_freq: env steps between deterministic evaluations (0: none)
    :param eval_episodes: episodes per evaluation
    :param resume: the run folder given to ``--resume`` (None once loaded: the config is the run's own)
    :param img_shape: camera observation shape (C, H, W), None for the env's default
    :param hyperparam: the ``KEY:VALUE`` strings of ``--hyperparam``
    :param hyperparam_file: the ``--hyperparam-file`` YAML file
    :param load_rl_model_path: a saved model to continue
    :param srl_config_file: the SRL config YAML given, None for the default lookup
    :param latest: ``--latest`` (False once validation picked the folder)
    :param srl_log_folder: root of the SRL model folders searched by ``--latest``
    :param tag: suffix of the run folder name
    :param run_folder: the run folder made by the pipeline, None to make one
    :param no_progress: no progress bar
    :param device: the torch device, resolved for this machine (``cpu``, ``cuda:0``)
    :param tensorboard_log: tensorboard root folder, None for none
    :param pretrain_dataset: behaviour-cloning dataset, None for none
    :param pretrain_epochs: behaviour-cloning epochs
    :param pretrain_lr: behaviour-cloning learning rate
    :param hyperparams: the algorithm's hyperparameters given on the command line or in the file, typed
    :param env_kwargs: the env's keyword arguments
    :param start_timesteps: steps a continued model (``--load-rl-model-path``) already did
    :param extra: the algorithm's own flags (``hp_<name>``, a plugin's ``customArguments``) and any other recorded
        value, read as attributes
    :param run_dir: the run folder, once made
    :param monitor_dir: its monitor folder, once made
    :param resume_from: the checkpoint folder a resumed run restores
    :param resume_buffer: the replay-buffer folder a resumed run restores, None for none
    """

    algo: str
    env: str
    srl_model: str
    srl_model_path: str | None
    seed: int
    log_dir: str
    num_timesteps: int
    num_cpu: int
    no_vis: bool
    port: int
    continuous_actions: bool
    action_joints: bool
    random_target: bool
    shape_reward: bool
    fpv: bool
    multi_view: bool
    force_down: bool
    srl_ground_truth_scale: bool
    num_stack: int
    action_repeat: int
    episode_window: int
    min_episodes_save: int
    checkpoint_freq: int
    buffer_save_freq: int
    eval_freq: int
    eval_episodes: int
    resume: str | None
    img_shape: tuple[int, ...] | None
    hyperparam: tuple[str, ...]
    hyperparam_file: str | None
    load_rl_model_path: str | None
    srl_config_file: str | None
    latest: bool
    srl_log_folder: str
    tag: str | None
    run_folder: str | None
    no_progress: bool
    device: str
    tensorboard_log: str | None
    pretrain_dataset: str | None
    pretrain_epochs: int
    pretrain_lr: float
    hyperparams: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    env_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    start_timesteps: int = 0
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    run_dir: str | None = None
    monitor_dir: str | None = None
    resume_from: str | None = None
    resume_buffer: str | None = None

    def __post_init__(self) -> None:
        # read-only views: a frozen config whose mappings could still be changed in place would not be frozen
        for name in ("hyperparams", "env_kwargs", "extra"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        if self.img_shape is not None:
            object.__setattr__(self, "img_shape", tuple(int(side) for side in self.img_shape))
        object.__setattr__(self, "hyperparam", tuple(self.hyperparam or ()))

    def __getattr__(self, name: str) -> Any:
        # Called only for names that are not fields: the algorithm's own flags, as they were on the Namespace.
        extra = self.__dict__.get("extra")
        if extra is not None and name in extra:
            return extra[name]
        raise AttributeError(f"{type(self).__name__} has no setting {name!r}")

    @classmethod
    def flagFields(cls) -> tuple[str, ...]:
        """:return: the names of the fields that hold a flag of the shared parser"""
        return tuple(field.name for field in dataclasses.fields(cls)
                     if field.name not in DERIVED_FIELDS and field.name not in RUN_FIELDS)

    @classmethod
    def fromNamespace(cls, args: argparse.Namespace, **derived: Any) -> TrainConfig:
        """
        :param args: parsed (and resolved) arguments: every flag of the shared parser, plus the algorithm's own
        :param derived: the non-flag fields (hyperparams, env_kwargs, start_timesteps, run_dir, ...)
        :return: the frozen config
        :raises ValueError: a flag of the shared parser is missing from ``args``
        """
        values = dict(vars(args))
        missing = [name for name in cls.flagFields() if name not in values]
        if missing:
            raise ValueError(f"arguments without {', '.join(missing)}")
        names = {field.name for field in dataclasses.fields(cls)}
        fields = {name: values.pop(name) for name in list(values) if name in names and name not in DERIVED_FIELDS}
        return cls(**fields, **derived, extra=values)

    def replace(self, **changes: Any) -> TrainConfig:
        """
        :param changes: new values of fields, or of the algorithm's own flags (kept in :attr:`extra`)
        :return: a new config with them
        """
        names = {field.name for field in dataclasses.fields(self)}
        extra = {name: changes.pop(name) for name in list(changes) if name not in names}
        if extra:
            changes["extra"] = {**self.extra, **extra}
        return dataclasses.replace(self, **changes)

    def namespace(self) -> argparse.Namespace:
        """
        :return: a new Namespace of the flags, the algorithm's own flags and the run's folders (those set): the
            arguments of plugin API v1, the algorithm's to change as it likes
        """
        values = {name: getattr(self, name) for name in self.flagFields()}
        values["img_shape"] = list(self.img_shape) if self.img_shape is not None else None
        values["hyperparam"] = list(self.hyperparam)
        values.update({name: getattr(self, name) for name in RUN_FIELDS if getattr(self, name) is not None})
        values.update(self.extra)
        return argparse.Namespace(**values)

    def argsRecord(self) -> dict[str, Any]:
        """
        :return: what args.json holds: every flag and the algorithm's own flags that were given (an unset
            ``hp_<name>`` says nothing: hyperparams.yaml holds the values used), sorted by name
        """
        values = {name: getattr(self, name) for name in self.flagFields()}
        values["img_shape"] = list(self.img_shape) if self.img_shape is not None else None
        values["hyperparam"] = list(self.hyperparam)
        values.update(self.extra)
        return {name: value for name, value in sorted(values.items())
                if not (name.startswith("hp_") and value is None)}


def argsNamespace(args: TrainConfig | argparse.Namespace) -> argparse.Namespace:
    """
    :param args: a run's config, or arguments still in Namespace form
    :return: a new Namespace of the same values, the caller's to change
    """
    if isinstance(args, TrainConfig):
        return args.namespace()
    return argparse.Namespace(**vars(args))
