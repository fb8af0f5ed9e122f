"""RunSettings: what an algorithm of plugin API version 2 reads about the run it trains in or is loaded for.

The runner (``rl_baselines.runs.train``) makes one from the run's validated config
(``TrainConfig.runSettings()``); the replay and the Python API make one from a run folder's args.json. An algorithm
receives it in ``makeEnv``, ``train`` and ``load`` beside the objects it works on (the env, the step budget, its
hyperparameters, the callback, the logger, the checkpoint), never a Namespace.

Invariants:

- frozen: an algorithm cannot change what the runner, the callback or the evaluation env read; a variant (one env,
  another seed, no monitor files) is a new object (:meth:`RunSettings.replace`);
- the field names are those of the train command's flags (``seed``, ``num_cpu``, ``srl_model``...), so that the env
  helpers (``VecEnvSettings.fromArgs``, ``pretrainFromArgs``) read a RunSettings as they read the run's config;
- ``options`` holds the algorithm's own flags (``hp_<name>``, ``lr_schedule``, ``her_algo``, a plugin's
  ``customArguments``), read as attributes too (``settings.lr_schedule``), as they were on the run's arguments; an
  attribute that is neither a field nor an option is read from ``arguments`` (``settings.random_target``), so that
  code written for the Namespace (a version 1 ``makeEnv`` override) reads what it read;
- ``arguments`` is every setting of the run by name: the Namespace of plugin API version 1 is made from it
  (``rl_baselines.core.plugin_v1``), nothing else reads it.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from rl_baselines.envs.factory import DEFAULT_STATE_SCALE


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """
    The settings of one run that an algorithm reads.

    :param env: the env id
    :param srl_model: the observation: a mode the env computes (``raw_pixels``, ``ground_truth``...) or a trained
        SRL model's name
    :param seed: the run's seed (env i is seeded ``seed + i``; seed your own generators with it)
    :param num_cpu: parallel envs
    :param device: the torch device of the networks, resolved for this machine (``cpu``, ``cuda:0``...)
    :param continuous_actions: continuous (True) or discrete actions
    :param num_stack: frames stacked per observation
    :param action_repeat: env steps per agent action
    :param img_shape: camera observation shape (C, H, W), None for the env's default
    :param srl_model_path: the trained SRL model's folder, None for a mode the env computes or a config lookup
    :param srl_config_file: the file mapping (env, SRL model name) to a folder
    :param srl_ground_truth_scale: learned SRL states scaled to the ground truth's size (docs/srl.md)
    :param srl_state_scale: the factor on a normalised learned SRL state: ``participation`` (the size of the
        directions it spans) or ``none`` (rl_baselines.envs.factory.learnedStateScale)
    :param augment: the augmentation of the image observations the updates learn from (``none``, ``shift``: an
        algorithm whose ``augmentsUpdates()`` is True applies it; the train command refuses it for the others)
    :param env_kwargs: the env constructor keywords of the run
    :param run_dir: the run folder, None when training from Python without one
    :param monitor_dir: the folder of the monitor CSVs, None for no monitor files
    :param continue_from: the model file training continues from (``--load-rl-model-path``; a resumed run's
        checkpoint model), None for a new model
    :param pretrain_dataset: behaviour cloning: the dataset folder to pretrain on before RL, None for none
    :param pretrain_epochs: pretraining epochs
    :param pretrain_lr: pretraining learning rate
    :param hyperparam_overrides: the typed ``--hyperparam`` / ``--hyperparam-file`` values (they win over flags)
    :param options: the algorithm's own flags by destination name (``hp_n_steps``, ``lr_schedule``...)
    :param arguments: every setting of the run by name (the Namespace of plugin API version 1 is made from it)
    """

    env: str
    srl_model: str = "ground_truth"
    seed: int = 0
    num_cpu: int = 1
    device: str = "cpu"
    continuous_actions: bool = False
    num_stack: int = 1
    action_repeat: int = 1
    img_shape: tuple[int, ...] | None = None
    srl_model_path: str | None = None
    srl_config_file: str | None = None
    srl_ground_truth_scale: bool = False
    srl_state_scale: str = DEFAULT_STATE_SCALE
    augment: str = "none"
    env_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    run_dir: str | None = None
    monitor_dir: str | None = None
    continue_from: str | None = None
    pretrain_dataset: str | None = None
    pretrain_epochs: int = 10
    pretrain_lr: float = 1e-3
    hyperparam_overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    arguments: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        # read-only views: a frozen object whose mappings could still be changed in place would not be frozen
        for name in ("env_kwargs", "hyperparam_overrides", "options", "arguments"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        if self.img_shape is not None:
            object.__setattr__(self, "img_shape", tuple(int(side) for side in self.img_shape))

    def __getattr__(self, name: str) -> Any:
        # Called only for names that are not fields: the algorithm's own flags, then the run's other arguments (so
        # that code written for the Namespace of API version 1, a makeEnv override, still reads what it read)
        for mapping in (self.__dict__.get("options"), self.__dict__.get("arguments")):
            if mapping is not None and name in mapping:
                return mapping[name]
        raise AttributeError(f"{type(self).__name__} has no setting {name!r}")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # pickled as plain values (a worker process receives its settings so): the read-only views are not picklable
        values = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return _rebuild, (type(self), {name: dict(value) if isinstance(value, MappingProxyType) else value
                                       for name, value in values.items()})

    def option(self, name: str, default: Any = None) -> Any:
        """
        :param name: one of the algorithm's own flags, by destination (``her_algo``, ``hp_n_steps``)
        :param default: the value when the run has no such flag
        :return: its value
        """
        return self.options.get(name, default)

    def replace(self, **changes: Any) -> RunSettings:
        """
        :param changes: new values of fields, or of the algorithm's own flags (kept in :attr:`options`)
        :return: a new RunSettings with them (:attr:`arguments` follows, so a plugin of API version 1 sees them)
        """
        names = {field.name for field in dataclasses.fields(self)}
        options = {name: changes.pop(name) for name in list(changes) if name not in names}
        if options:
            changes["options"] = {**self.options, **options}
        recorded = {ARGUMENT_NAMES.get(name, name): value for name, value in {**changes, **options}.items()
                    if ARGUMENT_NAMES.get(name, name) in self.arguments}
        if recorded and "arguments" not in changes:
            changes["arguments"] = {**self.arguments, **recorded}
        return dataclasses.replace(self, **changes)

    @property
    def continue_folder(self) -> str | None:
        """The folder of the model training continues from (its normalisation statistics), None for a new model."""
        return os.path.dirname(os.path.abspath(self.continue_from)) if self.continue_from else None


# Fields whose name differs from the run's argument of the same meaning (the rest have the argument's name).
ARGUMENT_NAMES = {"continue_from": "load_rl_model_path"}


def _rebuild(cls: type, values: dict[str, Any]) -> RunSettings:
    """:return: the RunSettings of ``values`` (unpickling)"""
    return cls(**values)
