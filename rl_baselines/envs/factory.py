"""Environment creation for the RL side: parallel envs, monitor files, frame stacking, action repeat, normalisation.

Parallel envs live in SB3 ``SubprocVecEnv`` workers, forked by a forkserver that imported this module (and so the
envs and their libraries) once: a worker imports nothing at its start, and envs built again in the same process
start at once; or, where a step costs less than a worker's round trip, in this process one after another (SB3's
``DummyVecEnv``: ``--vec-env``, :func:`resolveVecEnv`). Env i is seeded with seed + i; what the envs compute does not
depend on where they step nor on how their workers start.

Normalisation statistics are stored as ``vecnormalize.npz`` (plain arrays, loaded with ``allow_pickle=False``)
beside every saved model, so that replaying a run never unpickles anything from it.

A learned SRL state is handed over as normalised by default (``--srl-state-scale none``). With ``--srl-state-scale
participation`` it is normalised by :class:`ScaledVecNormalize`: after the running mean/std, multiplied by
``sqrt(P / d)``, P the participation ratio of the states the model's evaluation recorded (the number of directions
the state spans) and d its size, so that a 32-number state that spans 2 directions reaches the policy at the size of
2 independent numbers, not 4 times larger (:func:`learnedStateScale`; docs/srl.md measures it).
``--srl-ground-truth-scale`` uses the env's ground-truth size instead of P. The factor is saved in vecnormalize.npz,
so a replayed, resumed or evaluated run gets the input it was trained on; runs saved before it was recorded rebuild
it from their arguments (format 5 and earlier: no scale, or the ground-truth one).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import multiprocessing
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecFrameStack, VecNormalize

from environments import envOffers, getEnvClass, rendererKeywords, resolvedRenderer
from environments.observation_check import ObservationCheck
from environments.srl_env import isLearnedSRLModel
from rl_baselines.envs.srl_encoder import EncodedInWorkers, SRLEncoderVecEnv, WorkerEncoder, loadEncoder
from rl_baselines.envs.wrappers import (
    ActionRepeat,
    EpisodeStartRNG,
    ignoreInterruptInWorker,
    openMonitor,
)
from srl_models.base import STATES_FILE, recordedStates
from srl_models.config import resolveSRLModel
from srl_models.metrics import participationFactor
from srl_toolbox.cli import pythonCommand
from srl_toolbox.devices import runDevice
from srl_toolbox.errors import UsageError
from srl_toolbox.files import readJson, writeJson, writeNpz
from srl_toolbox.signals import stopSignalsBlocked

NORMALISATION_FILE = "vecnormalize.npz"
# What train's --srl-state-scale offers (learnedStateScale) and what a run gets by default.
STATE_SCALES = ("participation", "none")
DEFAULT_STATE_SCALE = "none"


def envKwargsFromArgs(args: Any) -> dict[str, Any]:
    """
    The env constructor keywords a train/replay command asks for.

    :param args: a run's settings, read as attributes (a TrainConfig, or the train command's parsed arguments):
        env, srl_model, continuous_actions, action_joints, random_target, shape_reward, fpv, multi_view,
        force_down, renderer (None: the env's default), img_shape
    :return: keyword arguments for the env class
    """
    kwargs: dict[str, Any] = {
        "srl_model": args.srl_model,
        "is_discrete": not args.continuous_actions,
        # (left out where the env does nothing with them: train warned; a run recorded before the envs said so)
        "random_target": bool(args.random_target) and envOffers(args.env, "random_target"),
        "shape_reward": bool(args.shape_reward) and envOffers(args.env, "shape_reward"),
    }
    if args.action_joints:
        kwargs["action_joints"] = True
    if args.force_down and not args.action_joints:  # (it restricts effector moves: train warned)
        kwargs["force_down"] = True
    if args.fpv:  # second camera, only on envs that have one (checked by train)
        kwargs["fpv"] = True
    if args.multi_view:
        kwargs["multi_view"] = True
    # the env's default when None (a config not validated yet); the keyword where the env's default could differ
    kwargs.update(rendererKeywords(resolvedRenderer(args.renderer, args.env), args.env))
    if args.img_shape:
        kwargs["img_shape"] = tuple(args.img_shape)
    return kwargs


def runActionSpace(args: Any) -> gym.Space:
    """
    :param args: a run's settings, read as attributes (those of :func:`envKwargsFromArgs`)
    :return: the action space of the run's env: one env is built (no reset, no monitor file) and closed, so that
        a check before anything is written sees the space training will have
    """
    env = getEnvClass(args.env)(**envKwargsFromArgs(args))
    try:
        return env.action_space
    finally:
        env.close()


def makeSingleEnv(
    env_id: str,
    env_kwargs: dict[str, Any],
    rank: int = 0,
    monitor_dir: str | None = None,
    action_repeat: int = 1,
    worker_encoder: bool = False,
) -> gym.Env:
    """
    Build one env with its Monitor wrapper (a top-level function so that subprocess workers can unpickle it).

    :param env_id: registered env id
    :param env_kwargs: constructor keywords
    :param rank: index of the env among the parallel ones (names its monitor file)
    :param monitor_dir: folder of the monitor CSVs, None to keep episode statistics in memory only
    :param action_repeat: agent steps last this many env steps
    :param worker_encoder: wrap the env in a WorkerEncoder (its images are encoded where it runs, once started)
    :return: the wrapped env
    """

    ignoreInterruptInWorker()  # in a SubprocVecEnv worker: Ctrl-C is for the training process, which checkpoints
    env = getEnvClass(env_id)(**env_kwargs)
    if env_id in gym.registry:  # as gymnasium.make would: the monitor file's header names the env
        env.spec = dataclasses.replace(gym.spec(env_id), kwargs=dict(env_kwargs))
    if rank == 0:  # the first observations, once for the VecEnv (its envs are alike), as gymnasium.make's checker
        env = ObservationCheck(env, env_id)
    if action_repeat > 1:
        env = ActionRepeat(env, action_repeat)
    if worker_encoder:
        env = WorkerEncoder(env)
    filename = os.path.join(monitor_dir, str(rank)) if monitor_dir else None
    env = openMonitor(env, filename, info_keywords=("is_success",))  # an existing file (resume) is continued
    # outermost: a resumed run restarts each env's episode in progress from the same start, and can play it again
    # to where it was through every wrapper (the Monitor counts the whole episode)
    return EpisodeStartRNG(env)


def findVecNormalize(venv: VecEnv | None) -> VecNormalize | None:
    """
    :param venv: a (possibly wrapped) VecEnv
    :return: the VecNormalize in its wrapper chain, if any
    """
    while venv is not None:
        if isinstance(venv, VecNormalize):
            return venv
        venv = getattr(venv, "venv", None)
    return None


class ScaledVecNormalize(VecNormalize):
    """
    A VecNormalize whose normalised observations are multiplied by a constant ``scale``. Everything that normalises
    through the wrapper (the agent's observations, an off-policy buffer's samples, the evaluation env synced from the
    training one, behaviour cloning) sees the same scaled states; :func:`saveNormalisation` records the scale beside
    VecNormalize's own statistics.

    :param venv: the VecEnv to normalise (Box observations: a learned state, never a goal Dict)
    :param scale: the factor applied after normalisation, > 0
    :param kwargs: VecNormalize's keywords
    """

    def __init__(self, venv: VecEnv, scale: float, **kwargs: Any) -> None:
        super().__init__(venv, **kwargs)
        self.scale = float(scale)

    def normalize_obs(self, obs: np.ndarray) -> np.ndarray:
        """:return: VecNormalize's normalised ``obs`` times :attr:`scale`"""
        return super().normalize_obs(obs) * self.scale

    def unnormalize_obs(self, obs: np.ndarray) -> np.ndarray:
        """:return: the observation whose :meth:`normalize_obs` is ``obs``"""
        return super().unnormalize_obs(obs / self.scale)


def participationScale(encoder_folder: str, state_dim: int) -> float | None:
    """
    :param encoder_folder: a learned model's folder
    :param state_dim: the size of its state
    :return: ``sqrt(P / state_dim)``, P the participation ratio (srl_models.metrics.participationRatio) of the states
        srl_models.evaluate recorded in the folder: the factor that gives the normalised state the size of P
        independent numbers, the directions it really spans; None when the folder holds no recorded states
    :raises ValueError: the recorded states cannot be read, or are not of the model's size (one line)
    """
    states = recordedStates(encoder_folder)
    if states is None:
        return None
    states = states.reshape(len(states), -1)
    if states.shape[1] != state_dim or len(states) < 2:
        raise ValueError(f"{encoder_folder}/{STATES_FILE} holds {len(states)} states of size {states.shape[1]}, not "
                         f"states of the model's size {state_dim}: evaluate the model again "
                         f"({pythonCommand()} -m srl_models.evaluate --model-folder {encoder_folder})")
    return participationFactor(states)


def learnedStateScale(settings: VecEnvSettings, encoder_folder: str, state_dim: int,
                      normalisation_folder: str | None = None) -> float:
    """
    :param settings: the run's (``ground_truth_scale``, ``state_scale``, ``env_id``)
    :param encoder_folder: its learned model's folder
    :param state_dim: the learned state's size
    :param normalisation_folder: a saved run's folder of vecnormalize.npz, whose recorded factor wins (None: none)
    :return: the factor on the normalised learned state: the one recorded in ``normalisation_folder``, else ground
        truth's size with ``--srl-ground-truth-scale``, else :func:`participationScale` with ``--srl-state-scale
        participation`` (1, with a warning, for a model whose folder holds no recorded states), else 1
    """
    recorded = recordedScale(normalisation_folder)
    if recorded is not None:
        return recorded
    if settings.ground_truth_scale:
        return groundTruthScale(settings.env_id, True, state_dim)
    if settings.state_scale != "participation":
        return 1.0
    scale = participationScale(encoder_folder, state_dim)
    if scale is None:
        warnings.warn(f"{encoder_folder} holds no recorded states ({STATES_FILE}: {pythonCommand()} -m "
                      f"srl_models.evaluate --model-folder {encoder_folder} writes it), so the learned state is handed "
                      f"to the agent unscaled (--srl-state-scale none)", stacklevel=2)
        return 1.0
    return scale


def groundTruthScale(env_id: str, enabled: bool, state_dim: int) -> float:
    """
    :param env_id: the run's env
    :param enabled: the run's ``--srl-ground-truth-scale``
    :param state_dim: the size of the learned state the agent gets
    :return: the factor that gives a normalised learned state of ``state_dim`` numbers the norm of the env's ground
        truth (``sqrt(ground-truth dim / state_dim)``, each normalised number having unit variance) with
        ``--srl-ground-truth-scale``, else 1
    """
    if not enabled:
        return 1.0
    return math.sqrt(getEnvClass(env_id).getGroundTruthDim() / state_dim)


@dataclasses.dataclass(frozen=True)
class VecEnvSettings:
    """
    What building a run's vectorised env needs, typed.

    :param env_id: registered env id
    :param num_envs: parallel envs (subprocesses when more than one)
    :param seed: env i is seeded ``seed + i``
    :param srl_model: the observation (the env's own mode, or a learned model's name)
    :param num_stack: frames stacked per observation
    :param action_repeat: env steps per agent action
    :param srl_model_path: a learned model's folder, None to look it up in ``srl_config_file``
    :param srl_config_file: the SRL config file (None: srl_models.config.defaultConfigFile())
    :param device: the run's torch device (a learned model's encoder runs there)
    :param ground_truth_scale: ``--srl-ground-truth-scale``
    :param state_scale: ``--srl-state-scale``: ``participation`` or ``none`` (see :func:`learnedStateScale`)
    :param vec_env: ``--vec-env``: how several envs run (:func:`resolveVecEnv`)
    """

    env_id: str
    num_envs: int
    seed: int
    srl_model: str
    num_stack: int = 1
    action_repeat: int = 1
    srl_model_path: str | None = None
    srl_config_file: str | None = None
    device: str | None = None
    ground_truth_scale: bool = False
    state_scale: str = DEFAULT_STATE_SCALE
    vec_env: str = "auto"

    @classmethod
    def fromArgs(cls, args: Any) -> VecEnvSettings:
        """:param args: a run's settings read as attributes (a RunSettings, a TrainConfig, or the Namespace of plugin
        API version 1)"""
        return cls(args.env, args.num_cpu, args.seed, args.srl_model, args.num_stack, args.action_repeat,
                   args.srl_model_path, args.srl_config_file, args.device, args.srl_ground_truth_scale,
                   getattr(args, "srl_state_scale", "none"),  # plugin API version 1's Namespace: none
                   getattr(args, "vec_env", "auto"))


# --vec-env: several envs in worker processes (SB3's SubprocVecEnv) or one after another in this one (DummyVecEnv)
VEC_ENVS = ("auto", "subproc", "dummy")


def resolveVecEnv(vec_env: str, num_envs: int, env_id: str, renderer: str, srl_model: str) -> str:
    """
    :param vec_env: ``--vec-env``: subproc, dummy or auto
    :param num_envs: parallel envs
    :param env_id: the env
    :param renderer: what draws its images (resolved: environments.resolvedRenderer)
    :param srl_model: the run's observation
    :return: ``subproc`` or ``dummy``: ``dummy`` for one env; auto: ``subproc`` where the env class says its steps
        cost more than a worker's round trip (``SRLGymEnv.stepsInWorkers``: yes unless a class says otherwise), else
        ``dummy``
    """
    if num_envs == 1:
        return "dummy"
    if vec_env != "auto":
        return vec_env
    images = srl_model == "raw_pixels" or isLearnedSRLModel(srl_model)
    return "subproc" if getEnvClass(env_id).stepsInWorkers(renderer, images) else "dummy"


def autoStepsInWorkers(vec_env: str, num_envs: int, env_id: str, renderer: str, srl_model: str) -> bool:
    """
    :param vec_env: ``--vec-env`` as given
    :return: it is auto and steps these envs in worker processes (:func:`resolveVecEnv`'s other parameters), so that
        a sweep or search leaving the run one core may step them in its training process instead
    """
    return vec_env == "auto" and resolveVecEnv(vec_env, num_envs, env_id, renderer, srl_model) == "subproc"


# Renderers whose frame costs less than a small encoder's forward pass (numpy compositing): with several envs on the
# CPU, this process encodes their images in one batch per step faster than each worker encodes its own (both
# placements measured side by side in alternating rounds: docs/srl.md, "Using a representation in RL"). Every other
# renderer's images are encoded where they are drawn.
BATCH_ENCODED_RENDERERS = ("sprites",)


def encodeInWorkers(settings: VecEnvSettings, renderer: str) -> bool:
    """
    Where a learned model's encoder runs (see rl_baselines.envs.srl_encoder).

    :param settings: a run with a learned SRL model
    :param renderer: what draws its envs' images
    :return: True with several envs, the encoder on the CPU and images that are costly to draw: each worker encodes
        its own env's images, on its own core, and only states cross the pipes (envs in this process, ``--vec-env
        dummy``: this process encodes them one by one, the same floats); False otherwise: this process encodes every
        env's images in one batch per step (one env, a GPU, or :data:`BATCH_ENCODED_RENDERERS`' cheap frames)
    """
    return settings.num_envs > 1 and runDevice(settings.device) == "cpu" and renderer not in BATCH_ENCODED_RENDERERS


class ReportingThunk:
    """
    An env thunk for a SubprocVecEnv worker that reports an error of the env's construction to the parent: it writes
    the exception's class and message (JSON) to ``report_path`` and ends the worker quietly, where the worker would
    print its traceback and die, leaving the parent an ``EOFError`` or ``ConnectionResetError``. :func:`_subprocEnvs`
    raises the reported error instead: the same class as the env built in this process raises (a built-in exception
    or one of srl_toolbox.errors), else a RuntimeError naming the class.

    :param thunk: builds the env (it runs in the worker only: :func:`makeSingleEnv` sets the worker's signal handling)
    :param report_path: where to write the error (a file of a private folder of the parent's, absent until then)
    """

    def __init__(self, thunk: Callable[[], gym.Env], report_path: str) -> None:
        self.thunk = thunk
        self.report_path = report_path

    def __call__(self) -> gym.Env:
        try:
            return self.thunk()
        except Exception as error:
            report = {"module": type(error).__module__, "name": type(error).__qualname__, "message": str(error)}
            writeJson(self.report_path, report)
            raise SystemExit(1) from None  # multiprocessing ends the worker without a traceback


# The exceptions a reported error is raised as again (others: a RuntimeError naming their class)
_REBUILT_ERRORS = {(klass.__module__, klass.__qualname__): klass for klass in (
    ValueError, TypeError, KeyError, RuntimeError, OSError, FileNotFoundError, NotImplementedError, ImportError,
    AssertionError, UsageError)}


def _reportedError(folder: str, count: int) -> Exception | None:
    """:return: the first env's construction error that a :class:`ReportingThunk` wrote in ``folder``, None if none
    did (the worker died of something else)"""
    for rank in range(count):
        path = os.path.join(folder, str(rank))
        if os.path.isfile(path):
            report = readJson(path)
            klass = _REBUILT_ERRORS.get((report["module"], report["name"]))
            if klass is None:
                return RuntimeError(f"{report['module']}.{report['name']}: {report['message']}")
            return klass(report["message"])
    return None


def closeBrokenWorkers(venv: Any) -> None:
    """Close the SubprocVecEnv below ``venv``'s wrappers (or ``venv`` itself) of which a worker died, built or not
    (its ``__init__`` failed), or whose close was cut short (a second Ctrl-C): the workers still listening are told
    to end, the ended ones' pipes skipped; one not ended 10 s later is killed (a built env's workers ignore SIGTERM)."""
    while venv is not None and not isinstance(venv, SubprocVecEnv):
        venv = getattr(venv, "venv", None)
    if venv is None:
        return
    for remote in getattr(venv, "remotes", ()):
        with contextlib.suppress(OSError):
            remote.send(("close", None))
    for process in getattr(venv, "processes", ()):
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join()
    for remote in getattr(venv, "remotes", ()):
        remote.close()
    venv.closed = True


def _endedAtStart(venv: SubprocVecEnv) -> RuntimeError | None:
    """:return: the error of env workers that all ended before building their envs, with an exit code of their own
    (a refusal they printed as they imported the script: ``rl_baselines.api``'s calls outside ``if __name__ ==
    "__main__":``), else None (a worker killed by a signal, or one that got as far as its env: the pipe's error)"""
    codes = {process.exitcode for process in getattr(venv, "processes", ())}
    if not codes or any(code is None or code <= 0 for code in codes):
        return None
    return RuntimeError(f"the env worker processes ended as they started, before building their envs (exit code "
                        f"{', '.join(map(str, sorted(codes)))}): the lines they printed above say why")


def _subprocEnvs(thunks: list[Callable[[], gym.Env]]) -> SubprocVecEnv:
    """
    :return: the envs in worker processes forked (SB3's default start method, forkserver) from a server that imported
        this module and its libraries once, so that the workers do not each import them again: a start costs one
        import instead of one per env, and the next envs this process builds start at once (a loop of API runs, the
        evaluation envs)
    :raises Exception: the error of an env's construction (the first env's that failed), as the same env built in
        this process raises it (a bad keyword value: ``render_mode='human2'``), the envs built closed
    """
    multiprocessing.set_forkserver_preload([__name__])  # read when this process's forkserver starts, else unused
    failed = None
    with tempfile.TemporaryDirectory(prefix="srl_env_errors_") as reports:
        reporting = [ReportingThunk(thunk, os.path.join(reports, str(rank))) for rank, thunk in enumerate(thunks)]
        venv = SubprocVecEnv.__new__(SubprocVecEnv)  # (bound before __init__ starts the workers: closed if it fails)
        try:
            with stopSignalsBlocked():  # a Ctrl-C while the workers import kills none of them: this process stops
                venv.__init__(reporting)  # type: ignore[misc]
                venv.has_attr("render_mode")  # every worker answers once its env is built (or is found dead)
        except (EOFError, ConnectionError):  # a worker died: its pipe closed (reset, broken)
            closeBrokenWorkers(venv)
            failed = _reportedError(reports, len(thunks)) or _endedAtStart(venv)
            if failed is None:
                raise
    if failed is not None:
        raise failed  # (out of the except clause: not chained to the pipe's error, which says nothing more)
    return venv


def createEnvs(
    args: Any,
    env_kwargs: dict[str, Any] | None = None,
    load_path_normalise: str | None = None,
    monitor_dir: str | None = None,
) -> VecEnv:
    """
    Build the run's envs (worker processes or this one: :func:`resolveVecEnv`), stacked and normalised as the run
    asks.

    :param args: the settings (:class:`VecEnvSettings`, or a run's settings read as attributes by
        :meth:`VecEnvSettings.fromArgs`: a RunSettings, a TrainConfig)
    :param env_kwargs: env constructor keywords (default: from a run's arguments; with :class:`VecEnvSettings`, the
        env's defaults with its observation)
    :param load_path_normalise: folder holding vecnormalize.npz to restore (then frozen: ``training=False``)
    :param monitor_dir: folder for the per-env monitor CSVs
    :return: the VecEnv, seeded so that env i starts from seed + i
    """
    settings = args if isinstance(args, VecEnvSettings) else VecEnvSettings.fromArgs(args)
    if env_kwargs is None:
        env_kwargs = {"srl_model": settings.srl_model} if settings is args else envKwargsFromArgs(args)
    srl_model = env_kwargs.get("srl_model", settings.srl_model)
    encoder_folder = None
    if isLearnedSRLModel(srl_model):  # found before any env process starts
        encoder_folder = settings.srl_model_path or resolveSRLModel(settings.env_id, srl_model, settings.srl_config_file)
    renderer = resolvedRenderer(env_kwargs.get("renderer"), settings.env_id)
    in_process = resolveVecEnv(settings.vec_env, settings.num_envs, settings.env_id, renderer, srl_model) == "dummy"
    # each env's images encoded alone (its worker, or one by one here): where the envs step changes no float
    one_by_one = encoder_folder is not None and encodeInWorkers(settings, renderer)
    in_workers = one_by_one and not in_process
    thunks = [
        functools.partial(makeSingleEnv, settings.env_id, env_kwargs, rank, monitor_dir, settings.action_repeat,
                          in_workers)
        for rank in range(settings.num_envs)
    ]
    venv: VecEnv = DummyVecEnv(thunks) if in_process else _subprocEnvs(thunks)
    venv.seed(settings.seed)
    venv.action_space.seed(settings.seed)
    state_dim = None  # a learned state's size, None for the env's own observations
    if encoder_folder is not None:
        # Encode before stacking: the agent stacks states, the encoder sees the single frames it was trained on.
        venv = encodeObservations(venv, settings.env_id, srl_model, encoder_folder, settings.srl_config_file,
                                  settings.device, in_workers, one_by_one)
        state_dim = int(np.prod(venv.observation_space.shape))
    if settings.num_stack > 1:
        venv = VecFrameStack(venv, n_stack=settings.num_stack)
    if srl_model != "raw_pixels":
        # Low-dimensional states get a running mean/std (images are scaled by the CNN policy instead).
        normalise_keys = normalisedKeys(venv.observation_space)
        scale = 1.0 if state_dim is None else learnedStateScale(settings, encoder_folder, state_dim, load_path_normalise)
        if scale != 1.0:
            venv = ScaledVecNormalize(venv, scale, norm_obs=True, norm_reward=False, norm_obs_keys=normalise_keys)
        else:
            venv = VecNormalize(venv, norm_obs=True, norm_reward=False, norm_obs_keys=normalise_keys)
        if load_path_normalise is not None and os.path.exists(os.path.join(load_path_normalise, NORMALISATION_FILE)):
            try:
                loadNormalisation(venv, load_path_normalise)
            except ValueError:
                venv.close()  # no env process nor PyBullet connection left behind
                raise
            venv.training = False
    return venv


def encodeObservations(venv: VecEnv, env_id: str, srl_model: str, srl_model_path: str | None,
                       srl_config_file: str | None, device: str | None, in_workers: bool = False,
                       one_by_one: bool = False) -> VecEnv:
    """
    Wrap a pixel VecEnv with the trained SRL model the run uses (``srl_model_path``, set by the train command, or
    else the folder ``srl_config_file`` maps to ``(env_id, srl_model)``).

    :param venv: the raw VecEnv (image observations)
    :param env_id: the env
    :param srl_model: the learned model name
    :param srl_model_path: the model's folder, None to look it up
    :param srl_config_file: the SRL config file to look it up in (None: srl_models.config.defaultConfigFile())
    :param device: the run's device (the encoder runs there, like the agent's networks)
    :param in_workers: encode in the env workers (a SubprocVecEnv of envs made with ``worker_encoder``, on the CPU)
    :param one_by_one: (in this process) encode each env's image alone, as the workers would (the same floats)
    :return: the VecEnv of encoded states
    :raises ValueError: the model cannot be found or does not fit the env (one line)
    """

    try:
        folder = srl_model_path or resolveSRLModel(env_id, srl_model, srl_config_file)
        model = loadEncoder(folder, device=runDevice(device))
        return EncodedInWorkers(venv, model, folder) if in_workers else SRLEncoderVecEnv(venv, model, one_by_one)
    except ValueError:
        venv.close()  # no orphaned env subprocesses behind the error
        raise


# Entries of goal-conditioned Dict observations left unnormalised: HER replaces desired goals by achieved ones, so
# both must keep one scale (their own running std would differ; a fixed target's is 0).
GOAL_KEYS = ("achieved_goal", "desired_goal")


def normalisedKeys(observation_space: gym.Space) -> list[str] | None:
    """
    :param observation_space: the VecEnv's observation space
    :return: the Dict entries VecNormalize normalises (all but the goals), None for a Box (the whole observation)
    """
    if isinstance(observation_space, gym.spaces.Dict):
        return [key for key in observation_space.spaces if key not in GOAL_KEYS]
    return None


def _rmsArrays(prefix: str, rms: RunningMeanStd | dict) -> dict[str, np.ndarray]:
    if isinstance(rms, dict):
        arrays: dict[str, np.ndarray] = {}
        for key, sub in rms.items():
            arrays.update(_rmsArrays(f"{prefix}.{key}", sub))
        return arrays
    return {f"{prefix}.mean": rms.mean, f"{prefix}.var": rms.var, f"{prefix}.count": np.asarray(rms.count)}


def _setRms(prefix: str, rms: RunningMeanStd | dict, data: Any) -> None:
    if isinstance(rms, dict):
        for key, sub in rms.items():
            _setRms(f"{prefix}.{key}", sub, data)
        return
    rms.mean = np.array(data[f"{prefix}.mean"], dtype=np.float64)
    rms.var = np.array(data[f"{prefix}.var"], dtype=np.float64)
    rms.count = float(data[f"{prefix}.count"])


def normalisationArrays(venv: VecEnv | None) -> dict[str, np.ndarray] | None:
    """
    :param venv: a VecEnv
    :return: the running mean/std and settings of a VecNormalize in its chain, as plain arrays (what
        :func:`saveNormalisation` writes), None when the env is not normalised
    """
    vec_normalize = findVecNormalize(venv)
    if vec_normalize is None:
        return None
    arrays = {**_rmsArrays("obs", vec_normalize.obs_rms), **_rmsArrays("ret", vec_normalize.ret_rms)}
    for name in ("clip_obs", "clip_reward", "gamma", "epsilon"):
        arrays[name] = np.asarray(getattr(vec_normalize, name))
    if isinstance(vec_normalize, ScaledVecNormalize):
        arrays["scale"] = np.asarray(vec_normalize.scale)
    arrays["norm_obs"] = np.asarray(vec_normalize.norm_obs)
    arrays["norm_reward"] = np.asarray(vec_normalize.norm_reward)
    return arrays


def saveNormalisation(venv: VecEnv | None, folder: str) -> str | None:
    """
    Write the running mean/std of a VecNormalize in ``venv``'s chain to ``folder/vecnormalize.npz`` (atomically).

    :param venv: the training VecEnv
    :param folder: destination folder (the saved model's)
    :return: the file written, or None when the env is not normalised
    """

    arrays = normalisationArrays(venv)
    if arrays is None:
        return None
    path = os.path.join(folder, NORMALISATION_FILE)
    writeNpz(path, arrays)
    return path


def recordedScale(folder: str | None) -> float | None:
    """
    :param folder: a folder holding vecnormalize.npz, or None
    :return: the factor a ScaledVecNormalize saved there applied (the run's, whatever its settings or its model's
        recorded states say now), None when there is no such file or the file records none (a plain VecNormalize, or a
        run of args.json format 5 or earlier, whose factor its settings rebuild)
    """
    path = None if folder is None else os.path.join(folder, NORMALISATION_FILE)
    if path is None or not os.path.isfile(path):
        return None
    with np.load(path, allow_pickle=False) as data:
        return float(data["scale"]) if "scale" in data.files else None


def loadNormalisation(venv: VecEnv, folder: str) -> None:
    """
    Restore the statistics saved by :func:`saveNormalisation` into the VecNormalize of ``venv``.

    :param venv: a VecEnv whose chain holds a VecNormalize
    :param folder: folder holding vecnormalize.npz
    :raises ValueError: the file does not match the env's observations
    """
    if findVecNormalize(venv) is None:
        return
    with np.load(os.path.join(folder, NORMALISATION_FILE), allow_pickle=False) as data:
        setNormalisation(venv, data, f"{folder}/{NORMALISATION_FILE}")


def setNormalisation(venv: VecEnv, data: Mapping[str, Any], source: str) -> None:
    """
    Restore the statistics of :func:`normalisationArrays` into the VecNormalize of ``venv``.

    :param venv: a VecEnv whose chain holds a VecNormalize (else nothing is done)
    :param data: the arrays, by name
    :param source: where they come from, for the errors
    :raises ValueError: the arrays do not match the env's observations
    """
    vec_normalize = findVecNormalize(venv)
    if vec_normalize is None:
        return
    try:
        _setRms("obs", vec_normalize.obs_rms, data)
        _setRms("ret", vec_normalize.ret_rms, data)
    except KeyError as error:
        raise ValueError(f"{source} lacks {error}") from None
    obs_shape = getattr(vec_normalize.obs_rms, "mean", np.zeros(0)).shape
    if not isinstance(vec_normalize.obs_rms, dict) and obs_shape != vec_normalize.observation_space.shape:
        raise ValueError(f"{source} is for observations of shape {obs_shape}")
    for name in ("clip_obs", "clip_reward", "gamma", "epsilon"):
        setattr(vec_normalize, name, float(data[name]))
