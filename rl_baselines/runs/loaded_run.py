"""Load the agent of a run folder written by rl_baselines.train, rebuild the env it trained on, and play episodes.

Shared by ``python -m replay.enjoy_baselines`` and the Python API (rl_baselines.api), so that both load a run the
same way: the algorithm and env must be installed, the model file must match its manifest (same algorithm and env,
files not cut short), a run that observed a trained SRL model uses the one recorded in srl_model.json (checked by
its hash), and the replay env normalises observations with the statistics saved beside the model, frozen, and
simulates the physics version the run recorded in env_globals.json. Replay envs write no monitor files. Env
keywords given over the run's own never change the observation space (after the run's encoder, frame stacking and
normalisation) or the action space the agent acts on, nor leave out the run's saved normalisation: such an env is
closed and refused. Errors are ``ValueError`` with a one-line message; the commands turn them into UsageError.

Besides the run's latest and best models, a periodic checkpoint (``checkpoints/<N>_steps/``: its model and its own
normalisation statistics) can be loaded, by step count or the newest intact one. Intact means what ``--resume``
means (rl_baselines.core.checkpointing :meth:`Checkpoint.verify`: the manifest reads and every file it lists matches
its SHA-256); a damaged checkpoint asked for by step count is refused, and the newest intact one is found by skipping
the damaged newer ones, which are left where they are (loading only reads).
"""
from __future__ import annotations

import argparse
import dataclasses
import inspect
import numbers
import os
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from environments import getEnvClass, registered_env
from environments.registry import envChoicesText
from rl_baselines.core.base import actionMaskKeywords
from rl_baselines.core.checkpointing import Checkpoint, DamagedCheckpointError, checkModelFile, checkpointFolders
from rl_baselines.core.manifests import readManifest
from rl_baselines.core.plugin_v1 import loadModel, makeEnv
from rl_baselines.core.registry import algoChoicesText, registered_rl
from rl_baselines.core.run_folder import MANIFEST_FILE, RunFolder, recordedPhysicsKeywords
from rl_baselines.core.run_settings import RunSettings
from rl_baselines.envs.factory import NORMALISATION_FILE, findVecNormalize
from rl_baselines.runs.run_policy import (
    agentActionSpace,
    agentObservationSpace,
    readRunConfig,
    recordedSRLModelFolder,
)
from rl_baselines.runs.train_config import TrainConfig
from rl_baselines.runs.train_loop import checkpointInterval
from srl_toolbox.text import shortRepr

SAVED_MODELS = ("latest", "best")
# ``checkpoint=LAST_CHECKPOINT``: the newest intact checkpoint
LAST_CHECKPOINT = "last"


def checkEnvsAndSeed(num_envs: Any, seed: Any) -> tuple[int, int]:
    """
    :param num_envs: parallel envs (Python's or NumPy's integers)
    :param seed: the first env's seed
    :return: both as ints
    :raises ValueError: ``num_envs`` not a positive integer, ``seed`` not an integer in 0..2**32-1 (one line)
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, numbers.Integral) or num_envs < 1:
        raise ValueError(f"num_envs {num_envs!r} must be a positive integer")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2 ** 32:
        raise ValueError(f"seed {seed!r} must be an integer in 0..{2 ** 32 - 1}")
    return int(num_envs), int(seed)


def spacesFit(agent_space: gym.Space, env_space: gym.Space) -> bool:
    """
    :param agent_space: a space the agent was trained on
    :param env_space: the env's
    :return: the same kind of space with the same shape (Box, bounds aside; an image the agent sees transposed to
        channels first, as SB3's VecTransposeImage does), the same choices (Discrete, MultiDiscrete, MultiBinary) and
        the same entries (Dict, Tuple); True for kinds not listed
    """
    if type(agent_space) is not type(env_space):
        return False
    if isinstance(env_space, gym.spaces.Box):
        shape, wanted = tuple(env_space.shape), tuple(agent_space.shape)
        return shape == wanted or (len(shape) == 3 and (shape[2], *shape[:2]) == wanted)
    if isinstance(env_space, gym.spaces.Discrete):
        return (int(agent_space.n), int(agent_space.start)) == (int(env_space.n), int(env_space.start))
    if isinstance(env_space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        return np.array_equal(getattr(agent_space, "nvec", agent_space.n), getattr(env_space, "nvec", env_space.n))
    if isinstance(env_space, gym.spaces.Dict):
        return (set(agent_space.spaces) == set(env_space.spaces)
                and all(spacesFit(agent_space[key], env_space[key]) for key in env_space.spaces))
    if isinstance(env_space, gym.spaces.Tuple):
        return (len(agent_space.spaces) == len(env_space.spaces)
                and all(spacesFit(mine, theirs) for mine, theirs in zip(agent_space.spaces, env_space.spaces)))
    return True


@dataclasses.dataclass
class LoadedRun:
    """
    A trained agent with what is needed to rebuild its env.

    :param run_dir: the run folder
    :param args: the run's arguments (its args.json)
    :param algo_class: the algorithm's class (a BaseRLObject subclass)
    :param model: the agent (a BaseRLObject): ``model.getAction(observation, deterministic=True)``
    :param model_folder: the folder of the model file and of its normalisation statistics
    :param srl_model_path: the checked folder of the trained SRL model the run observed, None when the env computed
        its observations
    :param checkpoint_steps: the step count of the checkpoint loaded (``model_folder`` is ``checkpoints/<N>_steps``),
        None for the run's latest or best model
    :param skipped_checkpoints: the damaged checkpoints newer than it that loading the newest intact one skipped,
        each as "<folder> (<file> <problem>)", newest first
    """

    run_dir: str
    args: argparse.Namespace
    algo_class: type
    model: Any
    model_folder: str
    srl_model_path: str | None
    checkpoint_steps: int | None = None
    skipped_checkpoints: tuple[str, ...] = ()

    def __repr__(self) -> str:
        shown = [("run_dir", self.run_dir), *((name, getattr(self.args, name, None)) for name in ("algo", "env",
                                                                                                   "srl_model"))]
        shown += [("model_folder", self.model_folder), ("checkpoint_steps", self.checkpoint_steps)]
        return shortRepr(type(self).__name__, shown)

    @property
    def settings(self) -> RunSettings:
        """The run's settings (plugin API version 2), from its arguments."""
        return TrainConfig.fromValues(vars(self.args)).runSettings()

    def unfinishedNote(self) -> str | None:
        """
        :return: one line saying the model is an unfinished run's latest (its last checkpoint's, step N of the run's
            --num-timesteps), None for a finished run's model, the best model, or a model without a manifest
        """
        if self.model_folder != self.run_dir:
            return None
        manifest = readManifest(self.model_folder)
        if manifest is None or manifest.get("finished"):  # (a periodic save writes no "finished": unfinished)
            return None
        return (f"the run is unfinished (still training, or stopped): its latest model, saved at "
                f"{manifest.get('num_timesteps', 0):,} of {self.args.num_timesteps:,} steps")

    def checkpointNote(self) -> str | None:
        """
        :return: one line naming the checkpoint loaded, its step and the steps the run trained (and the damaged newer
            ones skipped), None for the run's latest or best model
        """
        if self.checkpoint_steps is None:
            return None
        return (f"checkpoint {self.model_folder}, saved at step {self.checkpoint_steps:,} ({self._ofTrained()})"
                f"{self._skippedText()}")

    def _skippedText(self) -> str:
        """:return: "; skipped the damaged newer checkpoint(s) ..." naming them, empty when none was skipped"""
        if not self.skipped_checkpoints:
            return ""
        return (f"; skipped the damaged newer checkpoint{'s' if len(self.skipped_checkpoints) > 1 else ''} "
                f"{', '.join(self.skipped_checkpoints)}")

    @property
    def model_path(self) -> str:
        """The model file loaded: ``<algo>_model<extension>`` in :attr:`model_folder`."""
        return os.path.join(self.model_folder, f"{self.args.algo}_model{self.algo_class.MODEL_EXTENSION}")

    def modelNote(self) -> str:
        """
        :return: one line naming the model file loaded, then which of the run's models it is: a checkpoint (its step,
            the steps trained, the damaged newer ones skipped), the best model (its step and mean reward), or the
            latest (an unfinished run's, saved at step N of its --num-timesteps, or a finished run's final model);
            what the model's manifest does not say is left out
        """
        if self.checkpoint_steps is not None:
            return (f"{self.model_path}, checkpoint saved at step {self.checkpoint_steps:,} ({self._ofTrained()})"
                    f"{self._skippedText()}")
        manifest, steps = _manifestSteps(self.model_folder)
        if self.model_folder != self.run_dir:
            reward = manifest.get("mean_reward") if manifest is not None else None
            by = "in an evaluation" if manifest is not None and manifest.get("selected_by") == "evaluation" else \
                "over the last training episodes"
            mean = f" (mean reward {reward:.2f} {by})" if isinstance(reward, numbers.Real) else ""
            return f"{self.model_path}, the run's best model{f', saved at step {steps:,}' if steps else ''}{mean}"
        if manifest is not None and not manifest.get("finished"):  # (a periodic save writes no "finished")
            return (f"{self.model_path}, the latest model of an unfinished run (still training, or stopped), saved at "
                    f"{steps or 0:,} of {self.args.num_timesteps:,} steps")
        return f"{self.model_path}, the run's {f'final model, saved at step {steps:,}' if steps else 'latest model'}"

    def _ofTrained(self) -> str:
        """:return: the steps the run trained, from its manifest (the latest model's), as "of 1,024 trained" ("trained
        so far" for an unfinished run); without a readable one, the run's --num-timesteps, which it may not have met"""
        manifest, trained = _manifestSteps(self.run_dir)
        if manifest is None or trained is None:
            return f"of the run's --num-timesteps {self.args.num_timesteps:,}"
        return f"of {trained:,} trained{'' if manifest.get('finished') else ' so far'}"

    def makeEnv(self, num_envs: int = 1, seed: int = 0, env_kwargs: dict[str, Any] | None = None) -> Any:
        """
        Build the vectorised env the agent acts on, as during training (same observations, frame stacking and
        normalisation, frozen), without monitor files.

        :param num_envs: parallel envs (subprocesses when > 1)
        :param seed: env i is seeded ``seed + i``
        :param env_kwargs: env constructor keywords over the run's own (e.g. ``{"render_mode": "rgb_array"}``); they
            must leave the agent's observation and action spaces as they are (shapes and choices; bounds aside)
        :return: a VecEnv; close it after use
        :raises ValueError: ``num_envs`` not a positive integer, ``seed`` not an integer in 0..2**32-1, ``env_kwargs``
            not a mapping or naming a keyword the env's constructor does not take (before any env is built), the SRL
            model cannot be loaded, the saved normalisation does not fit, or ``env_kwargs`` change the observation or
            action space or leave out the run's normalisation (the env built is closed)
        :raises Exception: the error of the env's constructor (a value it refuses: ``render_mode='human2'``), as
            with one env whatever ``num_envs`` (rl_baselines.envs.factory.ReportingThunk)
        """
        num_envs, seed = checkEnvsAndSeed(num_envs, seed)
        checkEnvKeywords(self.args.env, env_kwargs)

        settings = self.settings.replace(seed=seed, num_cpu=num_envs, srl_model_path=self.srl_model_path,
                                                  monitor_dir=None)
        # (a Kuka run of physics version 1 is replayed under it: recordedPhysicsKeywords)
        kwargs = {**settings.env_kwargs, **recordedPhysicsKeywords(self.run_dir, self.args.env), **(env_kwargs or {})}
        env = makeEnv(self.algo_class, settings, kwargs, load_path_normalise=self.model_folder)
        try:
            self._checkEnv(env, env_kwargs)
        except ValueError:
            env.close()
            raise
        return env

    def _checkEnv(self, env: Any, env_kwargs: dict[str, Any] | None) -> None:
        """
        :param env: the VecEnv :meth:`makeEnv` built with ``env_kwargs`` over the run's keywords
        :param env_kwargs: the caller's keywords (None or empty: the run's own, which an edited args.json may make
            build another env than the agent's)
        :raises ValueError: its observation or action space is not the agent's (:func:`spacesFit`), or (with
            ``env_kwargs``) it lacks the normalisation saved beside the model (one line)
        """
        for what, agent_space, env_space in (("observation", agentObservationSpace(self.model), env.observation_space),
                                             ("action", agentActionSpace(self.model), env.action_space)):
            if agent_space is not None and not spacesFit(agent_space, env_space):
                cause = (f"env_kwargs {env_kwargs!r} change the {what} space" if env_kwargs else
                         f"{self.run_dir}/args.json builds another {what} space than the agent's")
                raise ValueError(f"{cause}: the agent takes {agent_space}, the env gives {env_space}")
        if not env_kwargs:
            return
        normalisation = os.path.join(self.model_folder, NORMALISATION_FILE)
        if os.path.isfile(normalisation) and findVecNormalize(env) is None:
            raise ValueError(f"env_kwargs {env_kwargs!r} leave out the run's observation normalisation "
                             f"({normalisation}): the agent acts on normalised observations")


def _manifestSteps(folder: str) -> tuple[dict[str, Any] | None, int | None]:
    """:return: the manifest beside the model in ``folder`` (None where it is missing or damaged) and the steps it
    records (None unless an integer)"""
    try:
        manifest = readManifest(folder)
    except DamagedCheckpointError:
        return None, None
    steps = manifest.get("num_timesteps") if manifest is not None else None
    return manifest, steps if isinstance(steps, numbers.Integral) and not isinstance(steps, bool) else None


def checkEnvKeywords(env_id: str, env_kwargs: Any) -> None:
    """
    :param env_id: the run's env (registered)
    :param env_kwargs: keywords given over the run's own: None or a mapping of names the env's constructor takes (the
        named parameters of its class and its bases' down to the first whose ``__init__`` takes no ``**kwargs``; a
        chain of ``**kwargs`` to the end accepts any name)
    :raises ValueError: not a mapping of names, or a name the constructor does not take, listing those it does
    """
    if env_kwargs is None:
        return
    if not isinstance(env_kwargs, Mapping) or not all(isinstance(name, str) for name in env_kwargs):
        raise ValueError(f"env_kwargs {env_kwargs!r} must be a mapping of env constructor keywords, e.g. "
                         "{'render_mode': 'rgb_array'}")
    names: set[str] = set()
    for klass in getEnvClass(env_id).__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        parameters = list(inspect.signature(vars(klass)["__init__"]).parameters.values())[1:]  # (self)
        names |= {parameter.name for parameter in parameters
                  if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)}
        if not any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters):
            break  # this constructor takes no other keyword
    else:
        return
    unknown = [name for name in env_kwargs if name not in names]
    if unknown:
        raise ValueError(f"env_kwargs: {env_id} takes no keyword {', '.join(map(repr, unknown))}; valid keywords: "
                         f"{', '.join(sorted(names))}")


def checkpointChoice(checkpoint: Any) -> int | str | None:
    """
    :param checkpoint: a step count (Python's or NumPy's integers, >= 0), ``"last"`` or None
    :return: it, the step count as an int
    :raises ValueError: anything else (one line)
    """
    if checkpoint is None or (isinstance(checkpoint, str) and checkpoint == LAST_CHECKPOINT):
        return checkpoint
    if isinstance(checkpoint, bool) or not isinstance(checkpoint, numbers.Integral) or checkpoint < 0:
        raise ValueError(f"checkpoint {checkpoint!r} must be a step count (an integer >= 0), {LAST_CHECKPOINT!r} "
                         f"(the newest intact checkpoint) or None (no checkpoint)")
    return int(checkpoint)


def _damage(folder: str, error: DamagedCheckpointError) -> str:
    """:return: "<folder> (<file> <problem>)": a damaged checkpoint, its damaged file and what is wrong with it"""
    return f"{folder} ({os.path.relpath(error.path, folder)} {error.problem})"


def findCheckpoint(run_dir: str, checkpoint: int | str, what: str) -> tuple[int, str, tuple[str, ...]]:
    """
    :param run_dir: a run folder
    :param checkpoint: a step count N (``checkpoints/<N>_steps/``) or ``"last"`` (the newest intact checkpoint)
    :param what: the option or parameter that asked for it, with its value, for the messages
    :return: (its step count, its checked folder, the damaged newer checkpoints skipped for it, newest first)
    :raises ValueError: no checkpoint at N (the message lists the run's), N's damaged, or none intact (one line)
    """
    folders = checkpointFolders(run_dir)
    if checkpoint == LAST_CHECKPOINT:
        damaged: list[str] = []
        for steps, folder in reversed(folders):
            try:
                Checkpoint(folder).verify()
            except DamagedCheckpointError as error:
                damaged.append(_damage(folder, error))
                continue
            return steps, folder, tuple(damaged)
        if not folders:
            raise ValueError(f"{what}: {run_dir!r} has no checkpoint (checkpoints/<N>_steps/ is written every "
                             f"--checkpoint-freq steps)")
        others = "" if len(damaged) == 1 else f"; so {'is' if len(damaged) == 2 else 'are'} the {len(damaged) - 1} " \
                                               f"before it"
        raise ValueError(f"{what}: {run_dir!r} has no intact checkpoint: checkpoint {damaged[0]} is damaged{others}")
    found = dict(folders)
    if checkpoint not in found:
        listed = ", ".join(str(steps) for steps in found) if found else "none"
        raise ValueError(f"{what}: {run_dir!r} has no checkpoint at step {checkpoint}; its checkpoints (steps): "
                         f"{listed}")
    folder = found[checkpoint]
    try:
        Checkpoint(folder).verify()
    except DamagedCheckpointError as error:
        others = ", ".join(str(steps) for steps in found if steps != checkpoint) or "none"
        raise ValueError(f"{what}: checkpoint {_damage(folder, error)} is damaged; the run's other checkpoints "
                         f"(steps): {others}") from None
    return checkpoint, folder, ()


def bestSaveText(train_args: TrainConfig) -> str:
    """:param train_args: a run's settings
    :return: when such a run saves its first best model (``at its first evaluation (--eval-freq)``, or ``once N
        episodes have finished (--min-episodes-save)`` for a run without evaluations)"""
    return ("at its first evaluation (--eval-freq)" if train_args.eval_freq > 0 else
            f"once {train_args.min_episodes_save} episodes have finished (--min-episodes-save)")


def firstSaveText(train_args: TrainConfig) -> str:
    """
    :param train_args: a run's settings
    :return: when such a run saves its first model, for the refusal of one that has saved none (still training, or
        stopped before): at its first checkpoint (``--checkpoint-freq``, five per run by default, written at the
        algorithm's first clean point from the step it falls due at) or, without
        checkpoints, at its end; and its best model once ``--min-episodes-save`` episodes have finished
    """
    interval = checkpointInterval(train_args.checkpoint_freq, train_args.num_timesteps)
    first = (f"at its first checkpoint, due at step {interval:,} (--checkpoint-freq) and written at the first step "
             f"from there where the algorithm can save its whole training state (ppo2, a2c: their next rollout's "
             f"start)" if interval > 0 else
             f"at its end, step {train_args.num_timesteps:,} (--checkpoint-freq -1: no checkpoint before)")
    return (f"the run has saved no model yet (still training, or stopped before): it saves one {first}, its best "
            f"model {bestSaveText(train_args)}")


def savedModelGone(folder: str, name: str) -> str | None:
    """
    :param folder: a model folder whose model file ``name`` is missing
    :return: what its manifest says of it when the manifest lists that file (the run saved it, and it was deleted or
        moved since: ``the run saved it at step N (a finished run; manifest.json lists it): deleted or moved since``),
        else None (no manifest, an unreadable one, or one that does not list it: no model saved yet)
    """
    try:
        manifest = readManifest(folder)
    except DamagedCheckpointError:
        return None
    if manifest is None or name not in manifest["files"]:
        return None
    steps = manifest.get("num_timesteps")
    at = f" at step {steps:,}" if isinstance(steps, int) else ""
    finished = ", a finished run" if manifest.get("finished") is True else ""
    return f"the run saved it{at} ({MANIFEST_FILE} lists it{finished}): deleted or moved since"


def loadRun(run_dir: str, which: str = "latest", srl_model_path: str | None = None, flag: str = "--log-dir",
            train_args: TrainConfig | None = None, checkpoint: int | str | None = None,
            checkpoint_flag: str | None = None) -> LoadedRun:
    """
    :param run_dir: a run folder written by rl_baselines.train
    :param which: the saved model: ``latest`` (the run folder's) or ``best`` (``best/``)
    :param srl_model_path: the run's trained SRL model, moved since training (its files must hash the same)
    :param flag: the option or parameter that named the run folder, for the messages
    :param train_args: the run's settings when already read (else read from args.json)
    :param checkpoint: instead of ``which``'s model, the checkpoint saved at this step count
        (``checkpoints/<N>_steps/``), or ``"last"``: the newest intact one; None: ``which``'s model
    :param checkpoint_flag: the option or parameter that gave ``checkpoint``, with its value, for the messages
        [``checkpoint=<value>``]
    :return: the loaded agent
    :raises ValueError: no run in the folder, algorithm or env not installed, model missing, corrupt or not the
        run's, no such checkpoint or a damaged one, ``checkpoint`` with ``which="best"``, SRL model missing or
        changed (one line)
    """

    if which not in SAVED_MODELS:
        raise ValueError(f"unknown saved model {which!r}; valid choices: {', '.join(SAVED_MODELS)}")
    checkpoint = checkpointChoice(checkpoint)
    what = checkpoint_flag or f"checkpoint={checkpoint!r}"
    if checkpoint is not None and which != "latest":
        raise ValueError(f"{what} and the {which} model both name the model to load: give one of them")
    if train_args is None:
        train_args = readRunConfig(run_dir, flag)
    algo_name = train_args.algo
    if algo_name not in registered_rl:
        raise ValueError(f"the run in {run_dir!r} used algorithm {algo_name!r}, which is not installed"
                         f"{algoChoicesText(algo_name, typed=False)}")
    if train_args.env not in registered_env:
        raise ValueError(f"the run in {run_dir!r} used env {train_args.env!r}, which is not installed"
                         f"{envChoicesText(train_args.env)}")
    algo_class = registered_rl[algo_name][0]
    steps, skipped = None, ()
    if checkpoint is not None:
        steps, model_folder, skipped = findCheckpoint(run_dir, checkpoint, what)
    else:
        model_folder = run_dir if which == "latest" else RunFolder(run_dir).best_dir
    model_path = os.path.join(model_folder, f"{algo_name}_model{algo_class.MODEL_EXTENSION}")
    if not os.path.isfile(model_path) and which == "latest" and checkpoint is None and checkpointFolders(run_dir):
        # stopped between a checkpoint and the latest model's save beside it: that checkpoint holds the same model
        steps, model_folder, skipped = findCheckpoint(run_dir, LAST_CHECKPOINT, f"{flag} {run_dir!r} (no latest model)")
        model_path = os.path.join(model_folder, os.path.basename(model_path))
    if not os.path.isfile(model_path):
        best = os.path.join(RunFolder(run_dir).best_dir, os.path.basename(model_path))
        # the way to the other model as the caller asks for it: loadRun's keyword, else enjoy_baselines' flag
        from_python = flag == "run_dir"
        best_way = 'which="best"' if from_python else "enjoy_baselines --model best"
        latest_way = 'which="latest" loads' if from_python else "--model latest plays"
        hint = (f"; the run has saved none yet (still training, before its first checkpoint?), and its best model "
                f"from an evaluation is there: {best} ({best_way})"
                if which == "latest" and checkpoint is None and os.path.isfile(best) else "")
        if which == "latest" and checkpoint is None and not hint:
            hint = f"; {savedModelGone(model_folder, os.path.basename(model_path)) or firstSaveText(train_args)}"
        if which == "best" and checkpoint is None:
            hint = f"; a run saves one {bestSaveText(train_args)}; {latest_way} the last saved model"
        saved = f"model of {what}" if checkpoint is not None else f"{which} model"
        raise ValueError(f"{flag} {run_dir!r} holds no {saved} ({model_path} is missing){hint}")
    # the manifest beside the model (if any): same algorithm and env, files not cut short nor changed
    checkModelFile(model_path, algo_name, algo_class.API_VERSION, {"env": train_args.env})
    model = loadModel(algo_class, model_path, train_args.runSettings())
    srl_folder = recordedSRLModelFolder(run_dir, train_args.srl_model, srl_model_path,
                                        "srl_model_path" if flag == "run_dir" else "--srl-model-path")
    return LoadedRun(run_dir, train_args.namespace(), algo_class, model, model_folder, srl_folder, steps, skipped)


def playEpisodes(model: Any, env: Any, episodes: int, deterministic: bool = True) -> tuple[list[float], list[int]]:
    """
    Play until ``episodes`` episodes have finished. With several envs each plays its share (env i plays
    ``(episodes + i) // num_envs`` of them), so that short episodes are not over-counted.

    :param model: the agent (a BaseRLObject; given the env's action masks when it uses them)
    :param env: a VecEnv built for it (left open)
    :param episodes: episodes to finish (> 0)
    :param deterministic: take the most likely action (else sample from the policy)
    :return: (reward of each episode, length of each episode in agent steps), in the order they finished
    """
    num_envs = env.num_envs
    targets = np.array([(episodes + index) // num_envs for index in range(num_envs)])
    counts = np.zeros(num_envs, dtype=int)
    returns, lengths = np.zeros(num_envs), np.zeros(num_envs, dtype=int)
    episode_rewards: list[float] = []
    episode_lengths: list[int] = []
    observation = env.reset()
    dones = np.ones(num_envs, dtype=bool)  # every env starts an episode (recurrent agents reset their state)
    while (counts < targets).any():
        action = model.getAction(observation, dones, deterministic=deterministic, **actionMaskKeywords(model, env))
        observation, rewards, dones, _ = env.step(action)
        returns += rewards
        lengths += 1
        for index in np.flatnonzero(dones):
            if counts[index] < targets[index]:
                episode_rewards.append(float(returns[index]))
                episode_lengths.append(int(lengths[index]))
                counts[index] += 1
            returns[index], lengths[index] = 0.0, 0
    return episode_rewards, episode_lengths

