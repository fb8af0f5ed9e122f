"""TrainConfig: the one declaration of every train setting, and the typed, frozen settings of one training run;
TrainResult: what the run ended with.

Each flag of ``python -m rl_baselines.train`` is a field declared with :func:`setting`: its type, default, flag
names, parser and help text are written there and nowhere else. :func:`addFlags` generates the command's parser from
the fields; the Python API builds a :class:`TrainConfig` directly; validation
(``rl_baselines.runs.train_checks.validate``) checks it and resolves what the flags leave open (the device, the
renderer: the env's own default when ``--renderer`` is left out, a learned SRL model's folder and image size, the
typed hyperparameters, the steps a continued model already did). From then on nothing changes it: a later stage
that learns something new (the run folder, a resumed checkpoint) makes a new one with :meth:`TrainConfig.replace`.

Invariants:

- one typed field per flag of the train command's shared parser (the parser is made from the fields); the flags an
  algorithm adds itself (``--n-steps`` as ``hp_n_steps``, a plugin's ``customArguments``) are kept in
  :attr:`TrainConfig.extra` and read as attributes too (``config.hp_n_steps``);
- an algorithm reads the run through :meth:`TrainConfig.runSettings` (plugin API version 2: a frozen
  ``RunSettings``); a plugin of API version 1 receives :meth:`TrainConfig.namespace` through the v1 adapter, a
  fresh Namespace made for each call, so an algorithm that writes into its arguments changes neither the run's
  config, nor args.json, nor what the evaluation env or the callback read;
- :meth:`TrainConfig.argsRecord` is exactly what args.json holds (format :data:`ARGS_FORMAT`: the flags, the
  algorithm's own flags that were given, not the values derived by validation such as the typed hyperparameters);
  :func:`upgradeArgsRecord` brings an args.json of any earlier format to the current one, so that a reader never
  probes for a missing setting;
- :func:`idleSettings` names the settings that do nothing for a run's observation (those train warns of), which the
  sweeps' run ids and recorded settings leave out;
- args.json records what the run applied (:func:`appliedSettings`, the one rule, which the sweeps' recorded settings
  and ``replay.gather_results`` apply to an args.json recorded before): the env switches as the env applies them
  (:func:`appliedSwitches`: a ``-r`` or ``--shape-reward`` that the env does not offer is recorded off, as the
  dataset generator records it), the :func:`idleSettings` at what they give (``img_shape`` None,
  ``srl_state_scale`` none), and the other settings train warns do nothing (``--eval-episodes`` without
  ``--eval-freq``, ``--min-episodes-save`` with it, ``--buffer-save-freq`` without a replay buffer, an algorithm's
  ``idleOptions``) at their defaults.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from environments.registry import defaultRenderersText, envOffers, registered_env
from environments.srl_env import RENDERERS, isLearnedSRLModel
from rl_baselines.core.base import MIN_CNN_SIDE as MIN_CNN_SIDE  # re-exported: --img-shape with raw_pixels
from rl_baselines.core.registry import defaultEnvs, defaultEnvsText, registered_rl, skipClashingFlags
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.envs.factory import DEFAULT_STATE_SCALE, STATE_SCALES, VEC_ENVS, envKwargsFromArgs
from rl_baselines.runs.args_format import ARGS_FORMAT, ARGS_FORMAT_KEY, UPGRADES
from srl_models.augment import AUGMENTATIONS
from srl_toolbox.cli import (
    DEFAULT_VISDOM_PORT,
    IMAGE_SIDES,
    MAX_ENVS,
    MAX_STACK,
    WINDOW_HINT,
    CLIParser,
    envCount,
    intInRange,
    nonNegativeInt,
    portNumber,
    positiveFloat,
    positiveInt,
    seedNumber,
    stackCount,
    zooFlagHints,
)
from srl_toolbox.devices import parseDevice, parseThreads
from srl_toolbox.files import readJson
from srl_toolbox.settings import (
    addSettingFlags,
    checkedSetting,
    derived,
    flagWords,
    setting,
    settingArguments,
    settingFields,
)
from srl_toolbox.text import Shown, shortRepr, withArticle

DEFAULT_ALGO = "ppo2"
# The old toolbox's default (an arm, so -c -joints works as its guide writes it); see the CHANGELOG.
DEFAULT_ENV = "KukaButtonGymEnv-v0"


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """
    The settings of a training run: as given (``TrainConfig(algo="sac", env=..., ...)``, or parsed from the command
    line), then validated. Each field says what it holds; ``python -m rl_baselines.train --help`` shows the same.
    Its repr names the algorithm, env and observation and the settings that differ from their defaults.
    """

    algo: str = setting(DEFAULT_ALGO, "algorithm: {algos}")
    env: str = setting(DEFAULT_ENV, "env id: {envs}")
    srl_model: str = setting("raw_pixels", "observation: one the env computes (raw_pixels, ground_truth, ...) or a "
                             "trained SRL model (vae, autoencoder, ...) looked up in --srl-config-file")
    srl_model_path: str | None = setting(None, "use this trained SRL model folder (srl_models.train's or prepare's, "
                                         "or a plugin model's from its own command) instead of looking --srl-model "
                                         "up in --srl-config-file (absolute once validated)", metavar="FOLDER")
    seed: int = setting(0, "random seed, 0..2**32-1; env i is seeded seed+i", parse=seedNumber)
    log_dir: str = setting("logs/", "root folder of the runs")
    num_timesteps: int = setting(int(1e6), "env steps to train", parse=positiveInt)
    num_cpu: int | None = setting(None, f"parallel envs, at most {MAX_ENVS} (--vec-env: how they run); resolved by "
                                  "validation and recorded [the algorithm's default: {env_defaults}]", parse=envCount)
    vec_env: str = setting("auto", "with --num-cpu > 1: subproc (a worker process per env, SB3's SubprocVecEnv), "
                           "dummy (one after another in the training process, SB3's DummyVecEnv, rl_zoo3's "
                           "default) or auto (dummy where a step costs less than a worker's round trip: mobile "
                           "robots without TinyRenderer's images; else subproc); the same results either way; "
                           "resolved by validation and recorded", choices=VEC_ENVS)
    no_vis: bool = setting(False, "no live visdom plots")
    port: int = setting(DEFAULT_VISDOM_PORT, "visdom server port", parse=portNumber)
    continuous_actions: bool = setting(False, "continuous actions", flags=("-c", "--continuous-actions"))
    action_joints: bool = setting(False, "act in joint space (arms, with -c)", flags=("-joints", "--action-joints"))
    random_target: bool = setting(False, "a new target position every episode", flags=("-r", "--random-target"))
    shape_reward: bool = setting(False, "dense reward: minus the distance to the target")
    fpv: bool = setting(False, "mobile robots: stack a first-person camera (6 channels)")
    renderer: str | None = setting(None, "what draws the camera images: tinyrenderer (PyBullet's, the reference; "
                                   "Omnirobot's and CarRacing's own drawing), sprites (mobile robots: numpy "
                                   "compositing of layers TinyRenderer renders once, "
                                   "faster) or lowpoly (Kuka arms: TinyRenderer with decimated arm meshes, faster, "
                                   "same physics) [the env's default: {renderer_defaults}]", choices=RENDERERS)
    multi_view: bool = setting(False, "arms: stack a second camera (6 channels)")
    force_down: bool = setting(False, "arms: never move up (discrete action 5 and continuous z moves go down), as "
                               "the original toolbox's arms and the datasets of environments.dataset_generator do")
    srl_ground_truth_scale: bool = setting(False, "learned SRL models: multiply the normalised state by "
                                           "sqrt(ground-truth dim / state dim), so that the policy's input has the "
                                           "size of the env's ground truth (docs/srl.md); replaces "
                                           "--srl-state-scale")
    srl_state_scale: str = setting(DEFAULT_STATE_SCALE, "learned SRL models: the factor on the normalised state: "
                                   "participation (sqrt(P / state dim), P the number of directions the states the "
                                   "model's evaluation recorded span: a state spanning few directions is not handed "
                                   "over larger than its content; measured in docs/srl.md) or none", choices=STATE_SCALES)
    augment: str = setting("none", "raw_pixels: augmentation of the images the updates learn from, not of those "
                           "collected: none, or shift (a random shift of up to 4 pixels, per image; ppo2: DrAC's "
                           "policy regulariser on each minibatch, or --augment-loss rad; replay-buffer algorithms: "
                           "each sample's observations and next observations independently)",
                           choices=tuple(AUGMENTATIONS))
    num_stack: int = setting(1, f"frames stacked per observation, at most {MAX_STACK}", parse=stackCount)
    action_repeat: int = setting(1, "env steps per agent action", parse=positiveInt)
    episode_window: int = setting(40, "moving-average window of the reward curve, in episodes", parse=positiveInt,
                                  flags=("--episode-window", "--episode_window"))
    min_episodes_save: int = setting(100, "episodes before the best model is saved", parse=nonNegativeInt)
    checkpoint_freq: int = setting(0, "env steps between checkpoints; 0: five per run, -1: none",
                                   parse=intInRange(-1))
    buffer_save_freq: int = setting(0, "off-policy algorithms: env steps between saves of the replay buffer, at "
                                    "checkpoints; 0: at every checkpoint, -1: never (a resumed run refills it)",
                                    parse=intInRange(-1))
    eval_freq: int = setting(0, "every N env steps (all envs together) play --eval-episodes deterministic episodes "
                             "on a separate env, write evaluations.npz and keep the best model by evaluation in "
                             "best/; 0: no evaluation (it costs a second env and its episodes)",
                             parse=nonNegativeInt, metavar="N")
    eval_episodes: int = setting(5, "episodes per evaluation", parse=positiveInt, metavar="K")
    # None once the run is loaded: the config is then the run's own
    resume: str | None = setting(None, "continue the run folder RUN from its last checkpoint, with the arguments of "
                                 "its args.json (only --no-vis, --no-progress, --port, --device, --torch-threads, "
                                 "--vec-env and --srl-model-path, the new folder of its trained SRL model, may be "
                                 "given with it)",
                                 metavar="RUN")
    img_shape: tuple[int, ...] | None = setting(None, f"camera observation shape, 3 H W with H, W in {IMAGE_SIDES} "
                                                f"(>= {MIN_CNN_SIDE} with raw_pixels for a CNN policy) [3 64 64, or "
                                                "the learned SRL model's own]", parse=positiveInt,
                                                nargs=3, metavar=("C", "H", "W"))
    hyperparam: tuple[str, ...] = setting((), "override algorithm hyperparameters, typed by its search space",
                                          nargs="+", extend=True, metavar="KEY:VALUE")
    hyperparam_file: str | None = setting(None, "YAML mapping of hyperparameters (as hyperparam_search writes), or "
                                          "rl_zoo3's {env id: mapping} (the --env section); --hyperparam wins",
                                          metavar="FILE")
    load_rl_model_path: str | None = setting(None, "continue training this saved model")
    srl_config_file: str | None = setting(None, "YAML {env id: {model name: folder}}: which trained SRL model each "
                                          "env uses [$SRL_MODELS_CONFIG, else config/srl_models.yaml of a source "
                                          "checkout, else ~/.config/srl-toolbox/srl_models.yaml]")
    latest: bool = setting(False, "with a learned --srl-model: use the newest model of that kind trained on --env "
                           "under --srl-log-folder instead of the config file's (off once validation picked it)")
    srl_log_folder: str = setting(os.path.join("logs", "srl"), "root of the SRL model folders searched by --latest")
    tag: str | None = setting(None, "suffix of the run folder name [seed<SEED>]")
    # rl_baselines.pipeline creates each run's folder (its log goes there before train starts) and passes it here.
    run_folder: str | None = setting(None, "the run folder made by the pipeline", hidden=True)
    no_progress: bool = setting(False, "no progress bar")
    device: str = setting("auto", "torch device of the networks (and of a trained SRL model): auto (the GPU for a "
                          "CNN policy on images when torch sees one, else the CPU), cpu, cuda or cuda:N; resolved "
                          "for this machine by validation",
                          parse=parseDevice, metavar="DEVICE")
    torch_threads: int = setting(0, "torch's CPU threads for this run's process, 1 up to the machine's CPUs; auto "
                                 "(or 0): for a CNN on images the process's share of the cores (OMP_NUM_THREADS where "
                                 "set: the pipeline and the search set it for their runs; else every usable core; "
                                 "a2c, acktr, acer, ppo_lstm, and maskable_ppo with --features-extractor medium or "
                                 "small: 1; ppo2 trains its CNN in a shard per thread), else 1; resolved by validation "
                                 "and recorded [auto]",
                                 parse=parseThreads, metavar="N|auto")
    tensorboard_log: str | None = setting(None, "also write a tensorboard log, in DIR/<env>_<srl-model>_<algo>_<run "
                                          "folder name>/ (_2, ... where another run's has that name; episode "
                                          "rewards and lengths, losses, evaluations) [none]", metavar="DIR")
    pretrain_dataset: str | None = setting(None, "behaviour cloning: pretrain the policy on this generator dataset "
                                           "before RL", metavar="DIR")
    pretrain_epochs: int = setting(10, "pretraining epochs", parse=positiveInt)
    pretrain_lr: float = setting(1e-3, "pretraining learning rate (Adam)", parse=positiveFloat)
    hyperparams: Mapping[str, Any] = derived("the algorithm's hyperparameters given on the command line or in the "
                                             "file, typed", factory=dict)
    env_kwargs: Mapping[str, Any] = derived("the env's keyword arguments", factory=dict)
    start_timesteps: int = derived("steps a continued model (--load-rl-model-path) already did", default=0)
    extra: Mapping[str, Any] = derived("the algorithm's own flags (hp_<name>, a plugin's customArguments) and any "
                                       "other recorded value, read as attributes", factory=dict)
    run_dir: str | None = derived("the run folder, once made")
    monitor_dir: str | None = derived("its monitor folder, once made")
    resume_from: str | None = derived("the checkpoint folder a resumed run restores")
    resume_buffer: str | None = derived("the replay-buffer folder a resumed run restores, None for none")

    def __post_init__(self) -> None:
        # read-only views: a frozen config whose mappings could still be changed in place would not be frozen
        for name in ("hyperparams", "env_kwargs", "extra"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        if self.img_shape is not None:
            object.__setattr__(self, "img_shape", tuple(int(side) for side in self.img_shape))
        object.__setattr__(self, "hyperparam", tuple(self.hyperparam or ()))

    def __repr__(self) -> str:
        # algo, env and srl_model, then what differs from the defaults (not the run's folders): a notebook shows the
        # run, not 80 settings
        defaults = self.defaults()
        shown = [(name, getattr(self, name)) for name in self.flagFields()
                 if name in ("algo", "env", "srl_model") or getattr(self, name) != defaults[name]]
        if self.hyperparams:
            shown.append(("hyperparams", dict(self.hyperparams)))
        if extra := {name: value for name, value in self.extra.items() if value is not None}:  # (unset hp_*: None)
            shown.append(("extra", extra))
        if self.start_timesteps:
            shown.append(("start_timesteps", self.start_timesteps))
        return shortRepr(type(self).__name__, shown)

    def __getattr__(self, name: str) -> Any:
        # Called only for names that are not fields: the algorithm's own flags, as they were on the Namespace.
        extra = self.__dict__.get("extra")
        if extra is not None and name in extra:
            return extra[name]
        raise AttributeError(f"{type(self).__name__} has no setting {name!r}")

    @classmethod
    def flagFields(cls) -> tuple[str, ...]:
        """:return: the names of the fields that hold a flag of the shared parser"""
        return tuple(settingFields(cls))

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """:return: every flag's default, by field name"""
        return {name: field.default for name, field in settingFields(cls).items()}

    @classmethod
    def fromRecord(cls, record: Mapping[str, Any], **derived: Any) -> TrainConfig:
        """
        :param record: an args.json mapping of any format (upgraded first: :func:`upgradeArgsRecord`)
        :param derived: the non-flag fields to set
        :return: the run's config as it was given (not validated again)
        :raises ValueError: a format newer than this toolbox reads
        """
        return cls.fromValues(upgradeArgsRecord(record), **derived)

    @classmethod
    def fromValues(cls, flags: Mapping[str, Any], **derived: Any) -> TrainConfig:
        """
        :param flags: parsed arguments by name (``vars()`` of the parser's output, or an args.json mapping): every
            flag of the shared parser, plus the algorithm's own
        :param derived: the non-flag fields (hyperparams, env_kwargs, start_timesteps, run_dir, ...)
        :return: the frozen config
        :raises ValueError: a flag of the shared parser is missing from ``flags``
        """
        values = dict(flags)
        missing = [name for name in cls.flagFields() if name not in values]
        if missing:
            raise ValueError(f"arguments without {', '.join(missing)}")
        values.pop(ARGS_FORMAT_KEY, None)
        names = {field.name for field in dataclasses.fields(cls)}
        fields = {name: values.pop(name) for name in list(values) if name in names and name not in DERIVED_FIELDS}
        extra = {**values, **derived.pop("extra", {})}
        return cls(**fields, **derived, extra=extra)

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
        :return: a new Namespace of the flags, the algorithm's own flags and the run's folders (None until set):
            the arguments of plugin API v1, the algorithm's to change as it likes
        """
        values = {name: getattr(self, name) for name in self.flagFields()}
        values["img_shape"] = list(self.img_shape) if self.img_shape is not None else None
        values["hyperparam"] = list(self.hyperparam)
        values.update({name: getattr(self, name) for name in RUN_FIELDS})
        values.update(self.extra)
        return argparse.Namespace(**values)

    def runSettings(self) -> RunSettings:
        """
        :return: what an algorithm reads about the run (plugin API version 2), with :attr:`RunSettings.arguments`
            holding :meth:`namespace`'s values for a plugin of version 1; ``num_cpu`` left out (a config not
            validated yet): the algorithm's default
        """
        arguments = vars(self.namespace())
        return RunSettings(
            env=self.env, srl_model=self.srl_model, seed=self.seed, num_cpu=defaultEnvs(self.algo, self.num_cpu),
            device=self.device,
            continuous_actions=self.continuous_actions, num_stack=self.num_stack, action_repeat=self.action_repeat,
            img_shape=self.img_shape, srl_model_path=self.srl_model_path, srl_config_file=self.srl_config_file,
            srl_ground_truth_scale=self.srl_ground_truth_scale, srl_state_scale=self.srl_state_scale,
            augment=self.augment,
            env_kwargs=self.env_kwargs or envKwargsFromArgs(self), run_dir=self.run_dir,
            monitor_dir=self.monitor_dir, continue_from=self.load_rl_model_path,
            pretrain_dataset=self.pretrain_dataset, pretrain_epochs=self.pretrain_epochs,
            pretrain_lr=self.pretrain_lr, hyperparam_overrides=self.hyperparams, options=self.extra,
            arguments=arguments)

    def argsRecord(self) -> dict[str, Any]:
        """
        :return: what args.json holds: its format (:data:`ARGS_FORMAT`), every flag and the algorithm's own flags
            that were given (an unset ``hp_<name>`` says nothing: hyperparams.yaml holds the values used), sorted by
            name
        """
        values = {name: getattr(self, name) for name in self.flagFields()}
        values["img_shape"] = list(self.img_shape) if self.img_shape is not None else None
        values["hyperparam"] = list(self.hyperparam)
        values.update(self.extra)
        values[ARGS_FORMAT_KEY] = ARGS_FORMAT
        return {name: value for name, value in sorted(values.items())
                if not (name.startswith("hp_") and value is None)}


# Fields that are not flags and hold what validation derived; the run's folders (RUN_FIELDS) are set as it goes.
DERIVED_FIELDS = ("hyperparams", "env_kwargs", "start_timesteps", "extra")
RUN_FIELDS = ("run_dir", "monitor_dir", "resume_from", "resume_buffer")


def upgradeArgsRecord(record: Mapping[str, Any]) -> dict[str, Any]:
    """
    Bring an args.json mapping of any earlier format to :data:`ARGS_FORMAT`, once, so that nothing above reads a
    missing setting: a flag added since the run was written takes the value that reproduces that run
    (:data:`UPGRADES`, format by format); a flag the run recorded is kept as it was.

    :param record: the mapping args.json holds
    :return: a new mapping of the current format (the algorithm's own flags and other keys kept as they are)
    :raises ValueError: not a mapping, or a format this toolbox does not know (written by a newer one)
    """
    if not isinstance(record, Mapping):
        raise ValueError(f"args.json holds {withArticle(type(record).__name__)}, not a mapping of settings")
    version = record.get(ARGS_FORMAT_KEY, 1)
    if not isinstance(version, int) or not 1 <= version <= ARGS_FORMAT:
        raise ValueError(f"args.json format {version!r} is not one this toolbox reads (1..{ARGS_FORMAT}): written by "
                         f"a newer srl-toolbox?")
    upgraded = dict(record)
    for older in range(version, ARGS_FORMAT):
        upgraded = {**UPGRADES[older], **upgraded}
    if "augment_loss" not in record and upgraded.get("augment", "none") == "none":
        # (ppo2's --augment-loss does nothing without --augment: such a run reads as one recorded now, at the flag's
        # default, and its resume warns of nothing)
        upgraded["augment_loss"] = "drac"
    missing = [name for name in TrainConfig.flagFields() if name not in upgraded]
    if missing:  # a setting every format records: the file was cut or edited
        raise ValueError(f"args.json lacks {', '.join(missing)}")
    upgraded["hyperparam"] = list(upgraded["hyperparam"] or [])
    upgraded[ARGS_FORMAT_KEY] = ARGS_FORMAT
    return upgraded


def idleSettings(args: Mapping[str, Any]) -> frozenset[str]:
    """
    :param args: a run's train settings, by name (parsed, or as args.json records them)
    :return: those that do nothing for its observation (train warns of them): ``img_shape`` where the observation
        is not camera images (neither raw_pixels nor a learned model), ``srl_state_scale`` where it is no learned
        model or ``srl_ground_truth_scale`` replaces it
    """
    srl_model = str(args.get("srl_model"))
    idle = set()
    if srl_model != "raw_pixels" and not isLearnedSRLModel(srl_model):
        idle.add("img_shape")
    if not isLearnedSRLModel(srl_model) or args.get("srl_ground_truth_scale"):
        idle.add("srl_state_scale")
    return frozenset(idle)


def appliedSwitches(args: Mapping[str, Any]) -> dict[str, bool]:
    """
    :param args: a run's train settings, by name (parsed, or as args.json records them, of any format)
    :return: the env switches among them as the run's env applies them, so that args.json and the sweeps' recorded
        settings say what the run did (train warns once of each it turns off): ``random_target`` and
        ``shape_reward`` off where the env does not offer them (:func:`environments.envOffers`; nothing for an env
        not installed), ``fpv`` and ``multi_view`` off where the observation is not camera images, ``force_down``
        off with joint actions
    """
    applied = {}
    env = args.get("env")
    if env in registered_env:
        applied.update({name: bool(args[name]) and envOffers(str(env), name)
                        for name in ("random_target", "shape_reward") if name in args})
    srl_model = str(args.get("srl_model"))
    pixels = srl_model == "raw_pixels" or isLearnedSRLModel(srl_model)
    applied.update({name: bool(args[name]) and pixels for name in ("fpv", "multi_view") if name in args})
    if "force_down" in args:
        applied["force_down"] = bool(args["force_down"]) and not args.get("action_joints")
    return applied


def appliedSettings(args: Mapping[str, Any]) -> dict[str, Any]:
    """
    The one rule of what a run applied of the settings train warns do nothing (a sweep passes its flags to every
    run): train records them so in args.json, and the sweeps' recorded settings and ``replay.gather_results`` read
    an args.json recorded before so.

    :param args: a run's train settings, by name (parsed, or as args.json records them, of any format)
    :return: those among them that do nothing for the run, at what the run applied (the value a run without the flag
        records): :func:`appliedSwitches`; the :func:`idleSettings` (``img_shape`` None, ``srl_state_scale`` none);
        ``eval_episodes`` at its default without ``--eval-freq``; ``min_episodes_save`` at its default with
        ``--eval-freq`` (the evaluations choose the best model); ``pretrain_epochs`` and ``pretrain_lr`` at their
        defaults without ``--pretrain-dataset``; ``buffer_save_freq`` at its default for an
        algorithm that keeps no replay buffer (``BaseRLObject.keepsReplayBuffer``); the algorithm's own flags that
        do nothing for the run at their defaults (``BaseRLObject.idleOptions``); nothing of the algorithm's for one
        not installed
    """
    applied: dict[str, Any] = dict(appliedSwitches(args))
    idle = idleSettings(args)
    applied.update({name: value for name, value in (("img_shape", None), ("srl_state_scale", DEFAULT_STATE_SCALE))
                    if name in idle})
    defaults = TrainConfig.defaults()
    freq = args.get("eval_freq")
    unused = "min_episodes_save" if isinstance(freq, int) and freq > 0 else "eval_episodes"  # (best/: evaluations)
    applied[unused] = defaults[unused]
    if not args.get("pretrain_dataset"):  # (the pretraining's settings: nothing is pretrained without its dataset)
        applied.update({name: defaults[name] for name in ("pretrain_epochs", "pretrain_lr")})
    algo = registered_rl.get(str(args.get("algo")))
    if algo is not None:
        algo_class = algo[0]
        keeps_buffer = getattr(algo_class, "keepsReplayBuffer", None)
        if callable(keeps_buffer) and not keeps_buffer():
            applied["buffer_save_freq"] = defaults["buffer_save_freq"]
        idle_options = getattr(algo_class, "idleOptions", None)
        if callable(idle_options):
            applied.update({name: value for name, (value, _) in idle_options(args).items()})
    return {name: value for name, value in applied.items() if name in args}


def readArgsRecord(run_dir: str) -> dict[str, Any]:
    """
    :param run_dir: a run folder
    :return: its args.json, upgraded to the current format
    :raises FileNotFoundError: no args.json
    :raises ValueError: unreadable, or of an unknown format (one line)
    """
    path = RunFolder(run_dir).args_file
    try:
        return upgradeArgsRecord(readJson(path))
    except ValueError as error:
        raise ValueError(f"{path} is not a valid args.json ({error})") from None


# rl_zoo3's train.py flags that train does not take, and what to give instead (their refusal says it); those it
# takes under the same name (--eval-freq, --seed, --device, --tensorboard-log...) mean the same here
RL_ZOO_FLAGS = {
    ("-n", "--n-timesteps"): "--num-timesteps",
    ("-f", "--log-folder"): "--log-dir",
    ("-i", "--trained-agent"): "--load-rl-model-path",
    ("-params", "--hyperparams"): "--hyperparam KEY:VALUE",
    ("--conf-file",): "--hyperparam-file",  # (its -conf reads as -c onf here: argparse)
    ("-tb",): "--tensorboard-log",
    ("--save-freq",): "--checkpoint-freq",
    ("--save-replay-buffer",): "--buffer-save-freq (replay buffers are saved at checkpoints)",
    ("--n-eval-envs",): "not offered: evaluations play on one env",
    ("-P", "--progress"): "not needed: the progress bar is on by default (--no-progress hides it)",
    ("-optimize", "--optimize-hyperparameters"): "python -m rl_baselines.hyperparam_search",
    ("--env-kwargs",): "give the env's flags (--random-target, --shape-reward, --img-shape...)",
    ("--num-threads",): "--torch-threads",
}


def addFlags(parser: argparse.ArgumentParser, algo_names: Sequence[str] = (), env_ids: Sequence[str] = (),
             srl_models: Sequence[str] = ()) -> argparse.ArgumentParser:
    """
    Add every train flag, generated from the :class:`TrainConfig` fields, and the hints for rl_zoo3's flags
    (:data:`RL_ZOO_FLAGS`) and enjoy's ``--render`` to a :class:`CLIParser`.

    :param parser: the train command's parser
    :param algo_names: installed algorithms, listed in the help of --algo and when it is given without a value
    :param env_ids: installed envs, listed in the help of --env and when it is given without a value
    :param srl_models: the observation modes and installed SRL model kinds, listed when --srl-model is given without
        a value
    :return: the parser
    """
    if isinstance(parser, CLIParser):
        parser.addFlagHints({**zooFlagHints(RL_ZOO_FLAGS), "--render": WINDOW_HINT})
        parser.addValueChoices({"--algo": ("algorithms", algo_names), "--env": ("envs", env_ids),
                                "--srl-model": ("SRL models", srl_models)})
    return addSettingFlags(parser, TrainConfig, {"{algos}": ", ".join(algo_names) or "a registered name",
                                                 "{envs}": ", ".join(env_ids) or "a registered id",
                                                 "{renderer_defaults}": defaultRenderersText(),
                                                 "{env_defaults}": defaultEnvsText(algo_names)})


def checkedValue(name: str, value: Any) -> Any:
    """
    :param name: a train flag's field name
    :param value: its value given from Python (None for the default)
    :return: the value as the flag's parser reads it (:func:`srl_toolbox.settings.checkedSetting`)
    :raises ValueError: a value the flag refuses, in argparse's words
    """
    return checkedSetting(TrainConfig, name, value)


def commandArguments(config: TrainConfig, own_flags: Mapping[str, Any]) -> list[str]:
    """
    :param config: a run's config
    :param own_flags: the algorithm's own flags and their defaults (others in :attr:`TrainConfig.extra` are records)
    :return: the train command's arguments that give it (settings at their default left out; the algorithm's own
        flags as ``--<name>`` for ``hp_<name>`` and ``--<dest>`` for the others), for a subprocess or to show
    """
    words = settingArguments(config)
    for name, value in sorted(config.extra.items()):
        if name not in own_flags or value == own_flags[name]:
            continue
        if name.startswith("hp_") and isinstance(value, bool):  # a hyperparameter flag takes true/false
            words += [f"--{name[3:].replace('_', '-')}", str(value).lower()]
        elif value is not None and value is not False:
            words += flagWords(f"--{(name[3:] if name.startswith('hp_') else name).replace('_', '-')}", value)
    return words


@dataclasses.dataclass
class TrainResult:
    """
    What one train command ended with.

    :param exit_code: the command's exit code (0 done, 1 model not saved, 128 + signal when stopped, 130 on a second
        Ctrl-C)
    :param run_dir: the run folder; None for a process that only worked for another process's run (its
        ``workerRole``: ppo1's ``--rank`` > 0), which writes none
    :param model: the trained agent (a BaseRLObject); None when ``--resume`` found the run already finished, and
        when a second Ctrl-C stopped the run before its first step (its model not built yet: nothing saved)
    :param num_timesteps: env steps done in all (those of a continued or resumed model included)
    :param mean_reward: mean reward of the last 100 training episodes (nan before the first one, and for a worker)
    :param args: the run's validated config (as given when ``--resume`` found the run already finished)
    """

    exit_code: int
    run_dir: str | None
    model: Any
    num_timesteps: int
    mean_reward: float
    args: TrainConfig

    def __repr__(self) -> str:
        model = Shown(type(self.model).__name__ if self.model is not None else "None")
        return shortRepr(type(self).__name__, [("exit_code", self.exit_code), ("run_dir", self.run_dir),
                                               ("num_timesteps", self.num_timesteps), ("mean_reward", self.mean_reward),
                                               ("model", model), ("args", self.args)])


def ownOptionStrings() -> set[str]:
    """:return: every option string of the train command's shared parser (``-h``, ``--help``, ``--version``,
        ``--seed``, ...)"""
    parser = addFlags(CLIParser())
    return {option for action in parser._actions for option in action.option_strings}


# The registry (a lower layer) cannot read these flags itself: an algorithm whose hyperparameter would take one of
# them (``seed`` -> ``--seed``; argparse refuses to build that parser) is skipped here, with one warning, before any
# command that builds a train parser has looked an algorithm up
skipClashingFlags(ownOptionStrings())
