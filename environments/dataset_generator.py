"""``python -m environments.dataset_generator``: record episodes of an env as an srl-zoo dataset (docs/architecture.md).

    <save-path>/<name>/
        dataset_config.json    relative_pos, max_dist, env, img_shape, seed, policy, num_episodes, image_format, version
        env_globals.json       the env's constants and constructor keywords (SRLGymEnv.getGlobals)
        record_NNN/frameNNNNNN.jpg   one folder per episode (6-channel envs: frameNNNNNN_1.jpg and frameNNNNNN_2.jpg)
        preprocessed_data.npz  actions (N or N x action_dim), rewards (N), episode_starts (N, bool)
        ground_truth.npz       ground_truth_states (N x d, absolute), target_positions (episodes x d, at the
                               episode's start), step_target_positions (N x d: the target at each row, which
                               moves in some envs), images_path (N, "<name>/record_NNN/frameNNNNNN", no extension)

Row i is the observation before action i; the last observation of an episode is not saved.

Episode e is always played with the seed derived from (--seed, e), from a world in which no episode was played before
(an env with RESET_KEEPS_HISTORY, such as the Kuka arms, gets the reset option FRESH_WORLD), whatever the number of
processes and whichever took it, so 1 and K processes, interrupted and resumed or not, write the same dataset. The K
worker processes write their episodes straight into the record folders of ``<save-path>/.<name>.partial/``; each
finished episode leaves its arrays in ``episodes/episode_NNNNNN.npz`` there. When all are done the arrays are merged
(:mod:`environments.dataset_layout`) and the folder is renamed to ``<name>`` in one step, so a folder named ``<name>``
is always a complete dataset. An interrupted run leaves the partial folder: ``--resume`` plays only the episodes it
lacks, ``--force`` discards it (a run interrupted or failing before finishing an episode removes it: there is nothing
to resume).
Workers that finish close their envs (the sprite cache is saved); an interrupt or an error terminates them. They mute
warnings (the parent has shown their imports'), all but a SpriteCacheWarning about the shared sprite files. The
progress bar counts episodes and moves with the frames of those in progress (:class:`srl_toolbox.progress.EpisodeBar`:
an episode can last thousands of steps); workers count their episode's frames in shared memory, which the parent reads
every :data:`POLL_SECONDS`. Neither changes what is recorded.

``--policy RUN`` replays a trained agent instead of random actions. Loading a run is the RL layer's job, above this
package (which never imports rl_baselines: an import-linter contract checks it); the generator finds the loader by
entry-point name, ``run`` in the group ``srl_toolbox.policy_loaders`` (:data:`POLICY_LOADERS`), and only relies on
what it returns: an object with ``reset(seed)``, ``act(env, observation)``, ``load(num_threads=...)`` and the run's
``env_id``, ``continuous`` and ``action_joints`` (and ``force_down``, ``renderer``, ``pixels``, ``cameras`` and
``physics_keywords``, read as False, None, False, the dataset's and {} when a loader lacks them, ``env_keywords``,
{} then, and ``checkObservation(env, observation)``, not called then). Random effector moves of an arm are recorded
with ``force_down`` (never up, as in the original toolbox); a replayed agent acts in the env it was trained in (its
physics version too), so its run's ``force_down`` decides, its run's renderer draws the frames unless ``--renderer``
says otherwise (with a warning for an agent on images), and the keywords its algorithm built its env with beyond its
flags (``env_keywords``, from an ``envKeywords`` override: a plugin's ``relative_pos``, ``fpv``...) apply, but for
those the dataset decides (:data:`DATASET_KEYWORDS`); dataset_config.json records them as ``run_env_kwargs``. An
agent acting on images is refused where the dataset's cameras are not its own, and any agent whose observations,
rebuilt from the dataset's env, have another shape than its observation space's (``checkObservation``: an algorithm
whose ``makeEnv`` wraps its env) is refused before anything is written.

The settings are one :class:`environments.generator_config.GeneratorConfig`: the parser is generated from it, and
:func:`validate` and :func:`generate` take one built in Python (the command line is parse -> config -> generate).
"""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import multiprocessing
import multiprocessing.util
import os
import shutil
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np

from environments import (
    envFlagRefusal,
    envOffers,
    envsWhere,
    getEnvClass,
    groundTruthRefusal,
    registered_env,
    rendererKeywords,
    rendererRefusal,
    resolvedRenderer,
)
from environments.dataset_layout import GenerationSpec, assemble, episodeFile, recordFolder, rewardDistribution
from environments.generator_config import DEFAULT_ENV, DEFAULT_MAX_DISTANCE, GeneratorConfig
from environments.mobile_robot.sprite_cache import SpriteCacheWarning
from environments.observation_check import observationProblem, warnObservationProblem
from environments.partial_folder import (
    EPISODES_FOLDER,
    LOCK_FILE,
    PARTIAL_NAME_EXTRA,
    SETTINGS_FILE,
    clearFolder,
    differingText,
    finishedEpisodes,
    lockFolder,
    partialFolder,
    publish,
    settingsDiffering,
)
from environments.registry import defaultRenderersText, envChoicesText, unknownEnvText
from environments.srl_env import FRESH_WORLD
from srl_toolbox.cli import (
    WINDOW_HINT,
    CLIParser,
    UsageError,
    checkImageShape,
    checkNameLength,
    checkWritableFolder,
    hasControlCharacter,
    runCommand,
)
from srl_toolbox.files import nameFileOnError, writeJson, writeNpz
from srl_toolbox.plugins import SkippedPluginWarning, loadNamed
from srl_toolbox.progress import EpisodeBar, stepLimit
from srl_toolbox.settings import addSettingFlags, checkedSettings, settingsFromNamespace
from srl_toolbox.signals import ctrlCDeferred
from srl_toolbox.terminal import HeldWarnings

if TYPE_CHECKING:
    from filelock import BaseFileLock

RESUME_HINT = "run the same command with --resume to finish it, or with --force to start over"  # after an interrupt
# The entry-point group of the loaders of trained agents (`run`: rl_baselines.runs.run_policy.loadRunPolicy).
POLICY_LOADERS = "srl_toolbox.policy_loaders"
# The env keywords a replayed agent's run does not decide (its ``env_keywords``): the dataset's observation mode and
# image size, episode length, action kind (checked against the run's), renderer and physics (set from the run
# above them); goal_conditioned is rebuilt by the loader from the pixel env's state (an env takes it with ground truth
# only).
DATASET_KEYWORDS = frozenset({"srl_model", "img_shape", "max_steps", "is_discrete", "action_joints", "renderer",
                              "physics", "goal_conditioned", "renders", "render_mode"})


# --- command line --------------------------------------------------------------------------------------------------


def buildParser() -> CLIParser:
    """:return: the command's parser, generated from :class:`GeneratorConfig`"""
    parser = CLIParser(prog="python -m environments.dataset_generator",
                       description="Record episodes of an env as an srl-zoo dataset (images, actions, rewards, "
                                   "ground truth).")
    parser.addValueChoices({"--env": ("envs", sorted(registered_env))})
    parser.addFlagHints({"--render": WINDOW_HINT})
    return addSettingFlags(parser, GeneratorConfig, {"{renderer_defaults}": defaultRenderersText()})


def parseConfig(argv: Sequence[str] | None = None) -> GeneratorConfig:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: the settings they give
    :raises UsageError: a flag the parser refuses
    """
    return settingsFromNamespace(GeneratorConfig, buildParser().parse_args(argv))


def validate(config: GeneratorConfig) -> tuple[GenerationSpec, type, Any]:
    """
    Check every input before anything is written.

    :param config: the recording's settings, parsed or built in Python
    :return: (the generation spec, the env class, the loaded agent for ``--policy RUN`` or None)
    :raises UsageError: on any bad input, with a one-line message
    """
    config = checkedSettings(config)  # a value given in Python is refused where the command line would refuse it
    env_given, run_env = config.env is not None, config.env is None and config.policy != "random"
    if config.env is None:  # a replayed agent's own env, else the default
        env = loadPolicy(config.policy, load=False).env_id if run_env else DEFAULT_ENV
        config = dataclasses.replace(config, env=env)
    if run_env and config.env not in registered_env:
        raise UsageError(f"--policy {config.policy!r}: the run used env {config.env!r}, which is not installed"
                         f"{envChoicesText(config.env)}")
    if config.env not in registered_env:
        raise UsageError(unknownEnvText(config.env, default=None if env_given else DEFAULT_ENV))
    try:
        env_class = getEnvClass(config.env)
    except Exception as error:  # a plugin env whose module fails to import
        raise UsageError(f"--env {config.env} could not be loaded ({type(error).__name__}: {error})") from None
    refusal = groundTruthRefusal(config.env, "a dataset records (ground_truth.npz)")
    if refusal is not None:
        raise UsageError(f"--env {refusal}")
    if config.action_joints:
        if not env_class.ACTION_JOINTS:
            raise UsageError(f"--action-joints: {config.env} has no joints to act on (it offers discrete actions, "
                             f"or continuous ones with -c)")
        if not config.continuous_actions:
            raise UsageError("--action-joints needs -c/--continuous-actions (joint actions are continuous)")
    checkImageShape(config.img_shape)  # (train's bound: within JPEG's 65,500 pixels a side too)
    channels, height, width = config.img_shape
    if config.num_cpu > config.num_episode:
        raise UsageError(f"--num-cpu {config.num_cpu} is more than --num-episode {config.num_episode}: each process "
                         f"records whole episodes")
    if config.force and config.resume:
        raise UsageError("--force discards an interrupted run and --resume continues it: pass only one")
    name = config.env.replace("/", "_") if config.name is None else config.name  # (a namespaced id: ns/Env-v0)
    if not name or name in (".", "..") or name.startswith(".") or os.sep in name or (os.altsep or os.sep) in name:
        raise UsageError(f"--name {name!r} must be a plain folder name (no '/', not starting with '.')")
    if hasControlCharacter(name):
        raise UsageError(f"--name {name!r} must be a plain folder name, without a control character (a newline, a tab)")
    checkNameLength(name, config.save_path, "--name", PARTIAL_NAME_EXTRA, "dataset folder name")
    if os.path.exists(config.save_path) and not os.path.isdir(config.save_path):
        raise UsageError(f"--save-path {config.save_path!r} is a file, not a folder")
    checkWritableFolder(config.save_path, "--save-path")

    env_kwargs: dict[str, Any] = {"srl_model": "raw_pixels", "is_discrete": not config.continuous_actions,
                                  "random_target": bool(config.random_target) and envOffers(config.env, "random_target"),
                                  "shape_reward": bool(config.shape_reward) and envOffers(config.env, "shape_reward"),
                                  "img_shape": [channels, height, width]}
    # (a second camera the env lacks is refused naming the envs that have one, as train does)
    refusal = envFlagRefusal(config.env, fpv=config.fpv, multi_view=config.multi_view,
                             random_target=config.random_target, shape_reward=config.shape_reward)
    if refusal is not None:
        raise UsageError(refusal)
    if config.action_joints:
        env_kwargs["action_joints"] = True
    if config.max_steps is not None:
        env_kwargs["max_steps"] = config.max_steps
    keywords = env_class.getGlobals()["defaults"]  # every constructor keyword along the env's class hierarchy
    if config.max_distance is not None and "max_distance" not in keywords:
        having = envsWhere(lambda env_class: env_class.acceptsKeyword("max_distance"))
        raise UsageError(f"--max-distance: {config.env} has no max_distance; envs with --max-distance: "
                         f"{', '.join(having) or 'none'}")
    if "max_distance" in keywords:
        env_kwargs["max_distance"] = DEFAULT_MAX_DISTANCE if config.max_distance is None else config.max_distance
    if "force_down" in keywords and not config.action_joints:  # (joint moves have no up to forbid)
        env_kwargs["force_down"] = True  # random actions, as the old generator: the arm never moves up, presses more
    for keyword, given in (("multi_view", config.multi_view), ("fpv", config.fpv)):
        if given:  # (envFlagRefusal above refused an env without the camera)
            env_kwargs[keyword] = True

    policy, run, run_env_kwargs = config.policy, None, {}
    if policy != "random":
        run = loadPolicy(policy, load=False)
        if run.env_id != config.env:
            raise UsageError(f"--policy {config.policy!r} was trained on {run.env_id}, not --env {config.env}")
    # --renderer left out: a replayed agent's own (it acts on the frames it learned from), else the env's default
    trained_on = getattr(run, "renderer", None)
    renderer = resolvedRenderer(trained_on if config.renderer is None else config.renderer, config.env)
    refusal = rendererRefusal(renderer, config.env)
    if refusal is not None:
        raise UsageError(refusal)
    # no keyword only for the reference on an env whose default it is: dataset_config.json then says tinyrenderer, and
    # an interrupted recording resumes only with the renderer it started with, whatever the env's default is since
    env_kwargs.update(rendererKeywords(renderer, config.env))
    if run is not None:
        policy = os.path.abspath(policy)
        if run.continuous != config.continuous_actions or run.action_joints != config.action_joints:
            if run.action_joints:
                wanted, hint = "joint", "pass -c -joints"
            elif run.continuous:
                wanted, hint = "continuous", "pass -c and no -joints"
            else:
                wanted, hint = "discrete", "drop -c/--continuous-actions"
            raise UsageError(f"--policy {config.policy!r} acts with {wanted} actions: {hint}")
        try:
            run.load(num_threads=1)  # one process per core: the workers already use them all
        except ValueError as error:
            raise UsageError(str(error)) from None
        if "force_down" in env_kwargs:  # the agent acts as in its run
            env_kwargs["force_down"] = bool(getattr(run, "force_down", False))
        env_kwargs.update(getattr(run, "physics_keywords", {}))  # and under its physics version
        # and in the env its algorithm built (envKeywords), but for what the dataset decides or the loader rebuilds
        run_env_kwargs = {keyword: value for keyword, value in getattr(run, "env_keywords", {}).items()
                          if keyword not in DATASET_KEYWORDS}
        env_kwargs.update(run_env_kwargs)
        cameras = 2 if (env_kwargs.get("fpv") or env_kwargs.get("multi_view")) else 1
        if getattr(run, "pixels", False) and getattr(run, "cameras", cameras) != cameras:
            flags = "--fpv" if "fpv" in keywords else "--multi-view"
            raise UsageError(f"--policy {config.policy!r} acts on images of {run.cameras} camera"
                             f"{'s' if run.cameras > 1 else ''}: " + (f"pass {flags}" if run.cameras > 1 else
                                                                      f"drop {flags}"))
        if trained_on is not None and renderer != trained_on and getattr(run, "pixels", False):  # (a state: unseen)
            warnings.warn(f"--policy {config.policy!r} was trained on frames drawn by {trained_on} and this dataset "
                          f"draws them with --renderer {renderer}: the agent may act otherwise (leave --renderer out "
                          f"to record with {trained_on})", stacklevel=2)
    spec = GenerationSpec(env_id=config.env, env_kwargs=env_kwargs, name=name, num_episodes=config.num_episode,
                          seed=config.seed, policy=policy, image_format=config.image_format,
                          run_env_kwargs=run_env_kwargs)
    if run is not None and hasattr(run, "checkObservation"):
        checkAgentEnv(spec, run)
    return spec, env_class, run


def checkAgentEnv(spec: GenerationSpec, run: Any) -> None:
    """
    Build the recording env once and ask the loaded agent whether it can act on it (``checkObservation``).

    :param spec: the generation spec
    :param run: the loaded agent
    :raises UsageError: the env refuses the run's keywords, or the agent cannot act on its observations (one line)
    """
    try:
        env = makeEnv(spec)
    except (ValueError, TypeError, RuntimeError) as error:
        # the dataset's own flags were checked above: what is left is the run's (its algorithm's keywords, physics)
        raise UsageError(f"--policy {spec.policy!r}: its env cannot be rebuilt: {error}") from None
    try:
        options = {FRESH_WORLD: True} if getattr(env, "RESET_KEEPS_HISTORY", False) else None
        observation, _ = env.reset(seed=episodeSeed(spec.seed, 0), options=options)
        run.checkObservation(env, observation)
    except ValueError as error:
        raise UsageError(str(error)) from None
    finally:
        env.close()


def loadPolicy(run_dir: str, load: bool = True) -> Any:
    """
    Load the agent of a run folder through the ``run`` policy loader (entry point of :data:`POLICY_LOADERS`,
    provided by rl_baselines).

    :param run_dir: a run folder written by rl_baselines.train
    :param load: load the agent (False: only read and check the run's args.json, which imports no torch)
    :return: the loader's policy object (see the module docstring)
    :raises UsageError: the folder holds no usable run, or no loader is installed
    """
    try:
        loader = loadNamed(POLICY_LOADERS, "run")
    except LookupError as error:
        raise UsageError(f"--policy {run_dir!r}: {error}") from None
    try:
        return loader(run_dir, load=load)
    except ValueError as error:
        raise UsageError(str(error)) from None


# --- recording one episode -----------------------------------------------------------------------------------------


def episodeSeed(seed: int, episode: int) -> int:
    """
    :param seed: master seed
    :param episode: episode index
    :return: the seed of that episode (independent of which process plays it)
    """
    return int(np.random.SeedSequence([seed & 0xFFFFFFFF, episode]).generate_state(1, dtype=np.uint32)[0])


def writeImage(path_stem: str, observation: np.ndarray, image_format: str) -> None:
    """
    Write an RGB observation (3 channels, or 6 for two views: ``_1`` and ``_2`` files).

    :param path_stem: the file path without extension
    :param observation: uint8 (H, W, 3) or (H, W, 6), RGB
    :param image_format: "jpg" or "png"
    """

    channels = observation.shape[-1]
    if channels == 3:
        views = [("", observation)]
    elif channels == 6:
        views = [("_1", observation[..., :3]), ("_2", observation[..., 3:])]
    else:
        raise ValueError(f"observations with {channels} channels cannot be written as images (3 or 6 expected)")
    for suffix, view in views:
        path = f"{path_stem}{suffix}.{image_format}"
        # OpenCV encodes (BGR), Python writes: a full disk is an OSError with its errno (cv2.imwrite returns False)
        encoded, data = cv2.imencode(f".{image_format}", np.ascontiguousarray(view[..., ::-1]))
        if not encoded:
            raise ValueError(f"OpenCV could not encode {path}")
        try:
            with open(path, "wb") as handle:
                handle.write(data.tobytes())
        except OSError as error:
            nameFileOnError(error, path)
            raise


def recordEpisode(env: Any, policy: Any, spec: GenerationSpec, episode: int, partial_dir: str,
                  on_step: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """
    Play one episode, write its images into its record folder, then its arrays into its episode file (the file
    is what marks the episode as finished).

    :param env: the env (pixel observations)
    :param policy: a RunPolicy, or None for uniform random actions
    :param spec: the generation spec
    :param episode: episode index
    :param partial_dir: the partial dataset folder
    :param on_step: called with (episode, steps played so far) after each step (the progress bar's)
    :return: {"episode", "frames", "rewards", "observation_problem"}: the last, None when the observations of reset
        and of the first step fit the env's observation_space, else (that method, what observationProblem said)
    """
    seed = episodeSeed(spec.seed, episode)
    folder = os.path.join(partial_dir, recordFolder(episode))
    shutil.rmtree(folder, ignore_errors=True)  # left by an interrupted run
    os.makedirs(folder)
    # an env whose episodes feel the ones played before them starts each from a world built anew
    options = {FRESH_WORLD: True} if getattr(env, "RESET_KEEPS_HISTORY", False) else None
    observation, _ = env.reset(seed=seed, options=options)
    problem, checked = observationProblem(observation, env.observation_space), "reset"  # then the first step's
    env.action_space.seed(seed)
    if policy is not None:
        policy.reset(seed)
    actions, rewards, states, targets = [], [], [], []
    frame = 0
    while True:
        writeImage(os.path.join(folder, f"frame{frame:06d}"), observation, spec.image_format)
        states.append(np.asarray(env.getGroundTruth(), dtype=np.float32))
        targets.append(np.asarray(env.getTargetPos(), dtype=np.float32))  # a moving target's, row by row
        action = env.action_space.sample() if policy is None else policy.act(env, observation)
        observation, reward, terminated, truncated, _ = env.step(action)
        if frame == 0 and problem is None:
            problem, checked = observationProblem(observation, env.observation_space), "step"
        actions.append(action)
        rewards.append(reward)
        frame += 1
        if on_step is not None:
            on_step(episode, frame)
        if terminated or truncated:
            break
    arrays = {"actions": np.asarray(actions, dtype=np.int64 if spec.env_kwargs["is_discrete"] else np.float32),
              "rewards": np.asarray(rewards, dtype=np.float32),
              "ground_truth_states": np.stack(states), "target_position": targets[0],
              "step_target_positions": np.stack(targets)}
    writeNpz(episodeFile(partial_dir, episode), arrays)
    return {"episode": episode, "frames": frame, "rewards": arrays["rewards"],
            "observation_problem": None if problem is None else (checked, problem)}


# --- worker processes ----------------------------------------------------------------------------------------------

_worker: dict[str, Any] = {}
# How often the parent reads the steps its workers have played in their episodes (the progress bar's).
POLL_SECONDS = 0.5


def makeEnv(spec: GenerationSpec) -> Any:
    """:return: a new env built from the spec"""

    kwargs = dict(spec.env_kwargs)
    kwargs["img_shape"] = tuple(kwargs["img_shape"])
    return getEnvClass(spec.env_id)(**kwargs)


def _initWorker(spec: GenerationSpec, partial_dir: str, parent_pid: int, policy: Any, steps: Any) -> None:
    # Die with the parent, even on SIGKILL, so that no orphan keeps writing into a folder a later --resume cleans.
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    warnings.simplefilter("ignore")  # the parent has already shown any warning the same imports give
    warnings.simplefilter("default", SpriteCacheWarning)  # but not this one: a file this worker read or wrote
    _worker.update(spec=spec, partial_dir=partial_dir, env=None, policy=policy, steps=steps)
    # A worker that ends normally (the pool closed, not terminated) closes its env: the sprite cache is saved.
    multiprocessing.util.Finalize(None, _closeWorkerEnv, exitpriority=10)


def _closeWorkerEnv() -> None:
    if _worker.get("env") is not None:
        _worker["env"].close()
        _worker["env"] = None


def _runEpisode(episode: int) -> dict[str, Any]:
    # Built on the first task, not in the initializer: an exception here reaches the parent instead of making
    # the pool respawn a failing worker forever.
    if _worker["env"] is None:
        spec = _worker["spec"]
        if spec.policy != "random" and _worker["policy"] is None:  # spawned, not forked: load it here
            _worker["policy"] = loadPolicy(spec.policy)
        _worker["env"] = makeEnv(spec)
    return recordEpisode(_worker["env"], _worker["policy"], _worker["spec"], episode, _worker["partial_dir"],
                         on_step=_countStep)


def _countStep(episode: int, steps: int) -> None:
    _worker["steps"][episode] = steps  # (shared memory: the parent reads it for its progress bar)


def recordEpisodes(spec: GenerationSpec, partial_dir: str, episodes: list[int], num_cpu: int, env: Any,
                   policy: Any, on_step: Callable[[int, int], None] | None = None) -> Iterator[dict[str, Any]]:
    """
    Record the given episodes, in this process (num_cpu 1) or over num_cpu worker processes.

    :param spec: the generation spec
    :param partial_dir: the partial dataset folder
    :param episodes: the episode indices still to record
    :param num_cpu: processes
    :param env: the env to use in this process (closed before worker processes start)
    :param policy: the agent for this process (None: random actions)
    :param on_step: called in this process with (episode, steps played so far) for the episodes in progress: after
        each step with one process, every :data:`POLL_SECONDS` with workers (which count their steps in shared
        memory)
    :return: an iterator over the finished episodes' summaries (in completion order)
    """
    if num_cpu == 1:
        for episode in episodes:
            yield recordEpisode(env, policy, spec, episode, partial_dir, on_step=on_step)
        return
    env.close()  # each worker builds its own: a PyBullet client cannot be shared
    # Forked workers inherit the loaded agent (CPU torch with one thread is fork-safe, as DataLoader workers rely
    # on); where fork is unavailable they are spawned and load it themselves.
    forked = "fork" in multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if forked else "spawn")
    steps = context.RawArray("q", spec.num_episodes)  # each episode's steps so far, written by its worker
    initargs = (spec, partial_dir, os.getpid(), policy if forked else None, steps)
    with contextlib.ExitStack() as stack:
        # A Ctrl-C during a fork would be raised in the standard library's at-fork hooks, which ignore exceptions:
        # it is raised once the workers are started (the pool terminated on it).
        with ctrlCDeferred():
            pool = stack.enter_context(context.Pool(num_cpu, initializer=_initWorker, initargs=initargs))
        finished = False
        try:
            results = pool.imap_unordered(_runEpisode, episodes, chunksize=1)
            counts = np.frombuffer(steps, dtype=np.int64)
            polled = time.monotonic()
            while True:
                try:
                    summary = results.next(timeout=POLL_SECONDS)
                except multiprocessing.TimeoutError:
                    pass
                except StopIteration:
                    break
                else:
                    steps[summary["episode"]] = 0  # (its worker is done with it)
                    yield summary
                if on_step is not None and time.monotonic() - polled >= POLL_SECONDS:
                    # (every POLL_SECONDS, not after every episode: the scan reads every episode's count)
                    polled = time.monotonic()
                    for episode in np.flatnonzero(counts):
                        on_step(int(episode), int(counts[episode]))
            finished = True
        finally:
            if finished:  # the workers close their envs (saving the sprites they rendered) and exit
                pool.close()
                pool.join()
            else:  # an interrupt or an error: stop them at once
                pool.terminate()


# --- the partial folder --------------------------------------------------------------------------------------------


def prepareFolder(spec: GenerationSpec, config: GeneratorConfig) -> tuple[str, str, BaseFileLock, set[int]]:
    """
    Decide what to do with an existing dataset or partial folder of the same name, and open the partial folder.

    :param spec: the generation spec
    :param config: the recording's settings (save_path, force, resume)
    :return: (final folder, partial folder, its held lock, episodes already finished)
    :raises UsageError: the dataset exists, another generator is writing it, or an interrupted run is in the way
        (the folders are left as they were: a lock file this call created is removed)
    """
    final_dir = os.path.join(config.save_path, spec.name)
    partial_dir = partialFolder(config.save_path, spec.name)
    # A partial folder that another generator is writing is named as such before any advice, which would be wrong
    # while it runs (lockFolder refuses in one line); one that no process holds is an interrupted run's.
    lock = None
    lock_file = os.path.join(partial_dir, LOCK_FILE)
    lock_was_there = os.path.exists(lock_file)  # (a refused run removes the lock file it created: it writes nothing)
    if os.path.isdir(partial_dir):
        with contextlib.suppress(OSError):  # (a folder this process cannot lock: the checks below say what is wrong)
            lock = lockFolder(partial_dir)
    try:
        # (A partial folder beside a complete dataset is an interrupted --force run: --resume finishes replacing it.)
        if os.path.exists(final_dir) and not config.force and not (config.resume and os.path.exists(partial_dir)):
            if config.resume:
                raise UsageError(f"dataset {final_dir} is already complete: nothing to resume")
            raise UsageError(f"dataset {final_dir} already exists; pass --force to overwrite it or choose another "
                             "--name")
        if os.path.exists(partial_dir) and not (config.force or config.resume):
            raise UsageError(f"an interrupted run left {partial_dir}: pass --resume to finish it or --force to "
                             f"discard it")
        if os.path.isdir(partial_dir):
            lock = lockFolder(partial_dir) if lock is None else lock
            if config.force:
                clearFolder(partial_dir)
            else:
                differing = settingsDiffering(partial_dir, spec.settings())
                if differing is None:
                    raise UsageError(f"{partial_dir} has no readable {SETTINGS_FILE}: it cannot be resumed; pass "
                                     f"--force to discard it")
                if differing:
                    raise UsageError(f"{partial_dir} was started with other settings ({differingText(differing)}): "
                                     "resume it with the same flags, or pass --force to discard it")
    except UsageError:
        if lock is not None:
            lock.release()
            if not lock_was_there:
                with contextlib.suppress(OSError):
                    os.remove(lock_file)
        raise
    if lock is None:
        if config.resume:  # (a typo in --name would otherwise start another dataset without a word)
            warnings.warn(f"--resume: no interrupted recording of {final_dir} to continue ({partial_dir} does not "
                          "exist): recording it from the first episode")
        os.makedirs(partial_dir)
        lock = lockFolder(partial_dir)
    os.makedirs(os.path.join(partial_dir, EPISODES_FOLDER), exist_ok=True)
    writeJson(os.path.join(partial_dir, SETTINGS_FILE), spec.settings())  # atomic: --resume reads it back
    done = {e for e in finishedEpisodes(partial_dir) if e < spec.num_episodes}
    return final_dir, partial_dir, lock, done


# --- main ----------------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    """
    return generate(parseConfig(argv))


def _dropEmpty(partial_dir: str, lock: Any) -> None:
    """Remove a partial folder without a finished episode (nothing to resume: out of the next run's way)."""
    clearFolder(partial_dir)  # under the lock: another generator may take the folder once it is released
    lock.release()
    shutil.rmtree(partial_dir, ignore_errors=True)


def generate(config: GeneratorConfig, resume_hint: str = RESUME_HINT) -> int:
    """
    Check the settings, record the episodes and publish the dataset folder.

    :param config: the recording's settings
    :param resume_hint: what the interrupt's line says to do next (a caller with other flags gives its own)
    :return: exit code: 0, or 130 when interrupted (the partial folder kept for --resume once an episode finished)
    :raises UsageError: bad input (nothing written)
    """
    return 130 if recordDataset(config, resume_hint) is None else 0


def recordDataset(config: GeneratorConfig, resume_hint: str = RESUME_HINT) -> str | None:
    """
    :func:`generate`'s work.

    :return: the published dataset folder, None when interrupted (said on stderr, with ``resume_hint``)
    :raises UsageError: bad input (nothing written)
    """
    config = checkedSettings(config)  # what follows validate reads it too
    # the checks' warnings (a flag that does nothing on this env) wait until they pass: a refused recording prints its
    # one-line error alone (a plugin that failed to load is said whatever happens)
    with HeldWarnings(shown_at_once=(SkippedPluginWarning,)):
        spec, env_class, policy = validate(config)
        try:
            env = makeEnv(spec)
        except (ValueError, TypeError, RuntimeError) as error:
            raise UsageError(f"--env {spec.env_id} refused these settings: {error}") from None
        relative_pos = bool(getattr(env, "relative_pos", True))
        try:
            final_dir, partial_dir, lock, done = prepareFolder(spec, config)
        except UsageError:
            env.close()
            raise
    todo = [episode for episode in range(spec.num_episodes) if episode not in done]
    for episode in todo:  # images of episodes an interrupted run left unfinished
        shutil.rmtree(os.path.join(partial_dir, recordFolder(episode)), ignore_errors=True)
    if done:
        print(f"Resuming {partial_dir}: {len(done)} of {spec.num_episodes} episodes already recorded", flush=True)
    num_cpu = min(config.num_cpu, max(1, len(todo)))
    # in episodes, moving with the frames of those in progress (an episode can last thousands of steps)
    progress = EpisodeBar(total=spec.num_episodes, initial=len(done), max_steps=stepLimit(env), step_name="frames",
                          desc=spec.name, file=sys.stderr, disable=config.no_progress)
    on_step = None if config.no_progress else progress.step
    frames, warned = 0, False
    start = time.perf_counter()
    try:
        for summary in recordEpisodes(spec, partial_dir, todo, num_cpu, env, policy, on_step=on_step):
            frames += summary["frames"]
            if summary["observation_problem"] is not None and not warned:  # (a worker's own warnings are hidden)
                warned = True
                warnObservationProblem(spec.env_id, *summary["observation_problem"])
            progress.finish(summary["episode"], summary["frames"])
    except KeyboardInterrupt:
        progress.close()
        kept = len(finishedEpisodes(partial_dir))
        if not kept:
            _dropEmpty(partial_dir, lock)
            print("Interrupted: no episode finished, nothing kept", file=sys.stderr)
            return None
        print(f"Interrupted: {kept} of {spec.num_episodes} episodes kept in {partial_dir}; {resume_hint}",
              file=sys.stderr)
        return None
    except Exception:
        if not finishedEpisodes(partial_dir):
            _dropEmpty(partial_dir, lock)
        raise
    finally:
        env.close()
    elapsed = time.perf_counter() - start
    progress.close()
    merged = assemble(spec, env_class, relative_pos, partial_dir)
    publish(partial_dir, final_dir, lock)
    total = len(merged["rewards"])
    rate = f", {frames / elapsed:.0f} frames/s with {num_cpu} process{'es' if num_cpu > 1 else ''}" if frames else ""
    print(f"Dataset: {final_dir} ({spec.num_episodes} episode{'s' * (spec.num_episodes != 1)}, {total} "
          f"frame{'s' * (total != 1)}{rate})")
    if config.reward_dist:
        print(rewardDistribution(merged["rewards"]))
    return final_dir


if __name__ == "__main__":
    runCommand(main)
