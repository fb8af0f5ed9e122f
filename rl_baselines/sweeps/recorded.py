"""What a finished sweep run was made with, against what its spec's train command gives now.

The pipeline finds a run folder by its run id, which names only the train settings that differ from train's defaults
(rl_baselines/sweeps/sweep.py): after a train default changed, a finished run of the old default has the run id of the
new one. Its args.json tells. Invariants:

- a run's train settings (:func:`trainSettings`) are those its train command line gives, as args.json records them
  before the train command resolves the device, the learned model's folder and its image size, without the settings
  that do not change a result (:data:`NOT_A_RESULT`) nor those that do nothing for its observation (idleSettings);
- a spec's settings (:func:`specSettings`) are what train would record for it now: the renderer, the raw-pixel
  hyperparameter defaults and the algorithm's own autos (``--precision``) resolved as train resolves them;
- a run whose args.json differs from its spec's settings (:func:`otherSettings`), or whose env had another physics
  version (:func:`otherPhysics`), was made with other settings (:func:`changedSettings`).
"""
from __future__ import annotations

from typing import Any

from environments import getEnvClass, resolvedRenderer
from rl_baselines.core.hyperparams import pixelDefaultFlags
from rl_baselines.core.registry import registered_rl
from rl_baselines.core.run_folder import readRunArgs, runPhysics
from rl_baselines.runs.args_format import withAddedSettings
from rl_baselines.runs.hyperparam_sources import hyperparamStrings
from rl_baselines.runs.train_checks import runDeviceFor
from rl_baselines.runs.train_config import TrainConfig, appliedSettings, idleSettings
from rl_baselines.sweeps.sweep import parseTrainArgs

# Train settings that do not change a run's result: where it is written and what it reads its model from (the model
# is identified by its hash), how it is shown, what it computes on (the device, torch's threads: the machine's, as
# its float rounding is), where its envs step (--vec-env: the same floats in a worker or here), how often it saves a
# checkpoint, a replay buffer or its best model, and the window of its reward plot; nor where its logs went (its
# tensorboard folder and visdom env, as args.json records them).
NOT_A_RESULT = frozenset({"log_dir", "run_folder", "tag", "resume", "port", "no_vis", "no_progress", "device",
                          "torch_threads", "tensorboard_log", "srl_config_file", "srl_log_folder", "srl_model_path",
                          "checkpoint_freq", "buffer_save_freq", "min_episodes_save", "episode_window",
                          "tensorboard_run", "visdom_env", "vec_env"})


def trainSettings(args: dict[str, Any]) -> dict[str, Any]:
    """
    :param args: a run's train arguments, as args.json records them (of any format), or as the archive does
    :return: those that change its result, sorted by name: without :data:`NOT_A_RESULT`, without an algorithm's
        flag left unset (an unset ``hp_<name>`` says nothing, as in args.json), and without the settings that change
        nothing for its observation (:func:`rl_baselines.runs.train_config.idleSettings`): ``srl_state_scale`` left
        out, ``img_shape`` read as not given (None, as the runs made without it record it); a setting added to train
        since they were recorded reads as args.json's upgrade rules give it (``renderer``: tinyrenderer); the
        settings train warns do nothing at what the run applied (``-r`` off on CarRacing, ``--features-extractor``
        nature on a state...: :func:`rl_baselines.runs.train_config.appliedSettings`, as train records them);
        ``augment_loss`` left out without ``augment`` (ppo2 records it, at its default, since args.json's format 8)
    """
    args = withAddedSettings(args)
    args.update(appliedSettings(args))  # (a run recorded before train recorded them as applied)
    if "srl_state_scale" in idleSettings(args):
        args.pop("srl_state_scale", None)
    if args.get("augment", "none") == "none":  # (ppo2's --augment-loss: idle, and recorded at its default)
        args.pop("augment_loss", None)
    return {name: value for name, value in sorted(args.items())
            if name not in NOT_A_RESULT and not (name.startswith("hp_") and value is None)}


# Settings the train command resolves from others (a learned model's image size, the model a run continues, the paths
# it reads, made absolute): args.json holds the resolved value where the command line left it open, so they are not
# compared with the command line's.
RESOLVED = frozenset({"img_shape", "latest", "load_rl_model_path", "pretrain_dataset"})


def specSettings(spec: Any) -> dict[str, Any]:
    """
    :param spec: a run spec (rl_baselines.sweeps.sweep.RunSpec)
    :return: the :func:`trainSettings` of its train command line, as train's parser gives them (JSON values), with
        the renderer, the raw-pixel hyperparameter defaults and the algorithm's own autos as train resolves and
        records them (``--renderer`` left out: the env's default, by name;
        :func:`rl_baselines.core.hyperparams.pixelDefaultFlags`; ``resolvedOptions``: ``--precision auto``)
    """
    args = parseTrainArgs(spec.algo, spec.env, spec.srl_model, int(spec.seed), spec.train_args)
    args["renderer"] = resolvedRenderer(args.get("renderer"), spec.env)
    given = hyperparamStrings(TrainConfig.fromValues(args))  # (--hyperparam and --hyperparam-file)
    algo_class = registered_rl[spec.algo][0]
    args.update(pixelDefaultFlags(algo_class, spec.srl_model, args, given, args["augment"]))
    try:  # the algorithm's own autos (--precision) for the device the run computes on
        device = runDeviceFor(algo_class, args.get("device"), spec.srl_model)
    except ValueError:  # (a GPU asked where there is none: train refuses the run)
        device = str(args.get("device"))
    args.update(algo_class.resolvedOptions({**args, "device": device}))
    return trainSettings({name: list(value) if isinstance(value, tuple) else value
                          for name, value in args.items()})


def otherSettings(train: dict[str, Any], args: dict[str, Any]) -> list[str]:
    """
    :param train: a spec's :func:`specSettings`
    :param args: the args.json of a run made for it
    :return: the settings the run was made with otherwise, sorted (a train default changed since: the pipeline's run
        id names only the settings that differ from the defaults); one absent from args.json (a flag added since)
        counts, unless args.json's upgrade rules fill it (:func:`trainSettings`); those the train command resolves
        (:data:`RESOLVED`) are left aside
    """
    recorded = trainSettings(args)
    return sorted(name for name, value in train.items()
                  if name not in RESOLVED and (name not in recorded or recorded[name] != value))


def envPhysics(env_id: str) -> int:
    """:return: the physics version of the registered env ``env_id`` now (environments.srl_env PHYSICS_VERSION)"""
    return int(getattr(getEnvClass(env_id), "PHYSICS_VERSION", 1))


def otherPhysics(spec: Any, folder: str) -> list[str]:
    """:return: ``["env physics version N"]`` when the run in ``folder`` was made with another physics version of
    its env than the one it has now, else nothing"""
    recorded = runPhysics(folder)
    return [] if recorded == envPhysics(spec.env) else [f"env physics version {recorded}"]


def changedSettings(spec: Any, folder: str) -> list[str]:
    """
    :param spec: a run spec (rl_baselines.sweeps.sweep.RunSpec)
    :param folder: a run folder made for it
    :return: what the run was made with otherwise than the spec's train command gives now (:func:`otherSettings`,
        :func:`otherPhysics`); nothing for a run of this command, or one whose args.json cannot be read
    """
    args = readRunArgs(folder)
    if args is None:
        return []
    return otherSettings(specSettings(spec), args) + otherPhysics(spec, folder)
