"""The Python API, for notebooks and scripts: configure, train, load, act and evaluate without a shell.

Every function goes through the same code as the commands: a configuration is a :class:`TrainConfig` (the one
declaration of the train settings), each keyword read by its flag's parser and the whole checked by the command's
``validate``; training runs the command's own ``trainValidated``; loading and replay share
rl_baselines.runs.loaded_run with ``python -m replay.enjoy_baselines``. Hence:

- bad input raises :class:`UsageError` with the command's one-line message, before anything is written;
- a run that diverges raises :class:`TrainingDiverged` (the command's ``error:`` line, exit 1);
- process-wide settings are left as the caller set them: torch's thread count (put back after training, loading
  and evaluating; a run records the caller's as its ``--torch-threads`` unless ``torch_threads`` is given), and the
  global random generators around loading and evaluating (seeded inside, restored after);
- no live visdom plots and no progress bar unless asked for (``vis=True``, ``progress=True``);
- any train flag, present or future, passes through as a keyword (``continuous_actions=True`` is
  ``--continuous-actions``, ``num_stack=2`` is ``--num-stack 2``) or as raw strings in ``extra``.

:func:`runSweep` runs ``python -m rl_baselines.pipeline`` in this process (each run its own train process, as the
command starts them), its keywords turned into the command's words by its parser (srl_toolbox.settings.
keywordArguments), the other keywords passed to every run as train flags.

The names are importable from the package too: ``from rl_baselines import makeConfig, trainAgent``.
"""
from __future__ import annotations

import collections
import dataclasses
import difflib
import multiprocessing
import os
import shlex
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.utils import set_random_seed

from environments import getEnvClass, registered_env
from environments.registry import unknownEnvText
from rl_baselines.core.registry import ActionType, registered_rl, supportingAlgorithms
from rl_baselines.rl_algorithm.finite_training import TrainingDiverged
from rl_baselines.runs import train, train_checks
from rl_baselines.runs.loaded_run import LoadedRun, checkEnvsAndSeed, playEpisodes
from rl_baselines.runs.loaded_run import loadRun as loadRunFolder
from rl_baselines.runs.resume import checkPlan
from rl_baselines.runs.train import TrainResult, trainCommand, trainValidated
from rl_baselines.runs.train_config import DEFAULT_ALGO, DEFAULT_ENV, TrainConfig, checkedValue, commandArguments
from rl_baselines.sweeps import pipeline
from srl_models.base import SRLType
from srl_models.registry import registeredSRL
from srl_toolbox.cli import INTERRUPTED_EXIT_CODE, UsageError
from srl_toolbox.devices import maxThreads
from srl_toolbox.files import readJson
from srl_toolbox.global_state import callerSettings
from srl_toolbox.settings import (
    flagWords,
    integerKeyword,
    keywordArguments,
    kindRefusal,
    plainValue,
    valueItems,
    valueText,
)
from srl_toolbox.text import Shown, shortRepr

__all__ = ["Evaluation", "LoadedRun", "RunConfig", "SweepInterrupted", "SweepResult", "TrainConfig", "TrainResult",
           "TrainingDiverged", "TrainingInterrupted", "UsageError", "evaluateAgent", "listAlgorithms", "listEnvs",
           "listSRLModels", "loadRun", "makeConfig", "runSweep", "trainAgent"]

ACTION_KINDS = ("discrete", "continuous")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """
    A checked training run.

    :param args: the run's settings as validation built them (a read-only :class:`TrainConfig`: every flag with its
        default filled in, the device and a learned SRL model's folder resolved); for a ``resume`` of a finished
        run, its recorded arguments
    :param argv: the train command's arguments that give the same run (``python -m rl_baselines.train`` followed by
        these)
    :param plan: the resume plan (with ``resume``), else None
    """

    args: TrainConfig
    argv: tuple[str, ...]
    plan: Any = None

    @property
    def command(self) -> str:
        """:return: the equivalent shell command"""
        return shlex.join(["python", "-m", "rl_baselines.train", *self.argv])

    def __repr__(self) -> str:
        shown = [("command", self.command)] + ([("resumes", self.plan.run_dir)] if self.plan is not None else [])
        return shortRepr(type(self).__name__, shown)


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """
    Rewards of a trained agent over whole episodes.

    :param mean: mean episode reward
    :param std: standard deviation of the episode rewards
    :param episode_rewards: the reward of each episode, in the order they finished
    :param episode_lengths: the length of each episode, in agent steps
    """

    mean: float
    std: float
    episode_rewards: list[float]
    episode_lengths: list[int]


def makeConfig(algo: str | None = None, env: str | None = None, srl_model: str | None = None,
               num_timesteps: int | None = None, seed: int | None = None, log_dir: str | os.PathLike | None = None,
               hyperparams: Mapping[str, Any] | None = None, vis: bool = False, progress: bool = False,
               extra: Sequence[str] = (), **flags: Any) -> RunConfig:
    """
    Build and check a train command. None leaves a setting at the command's default (``--help`` lists them).

    :param algo: algorithm (see :func:`listAlgorithms`)
    :param env: env id (see :func:`listEnvs`)
    :param srl_model: observation: computed by the env (``raw_pixels``, ``ground_truth``, ...) or a trained SRL model
    :param num_timesteps: env steps to train
    :param seed: random seed; env i is seeded ``seed + i``
    :param log_dir: root folder of the runs (the run folder is made below it)
    :param hyperparams: algorithm hyperparameters by name (``--hyperparam NAME:VALUE``); the keyword ``hyperparam``
        takes that flag's NAME:VALUE strings instead, and a name given both ways takes this mapping's value
    :param vis: live visdom plots (``--no-vis`` unless True)
    :param progress: progress bar (``--no-progress`` unless True)
    :param extra: more command-line arguments, as strings
    :param flags: any other train flag by its long name with ``_`` for ``-``: ``True`` gives a switch,
        ``False``/None leave it out, a list gives several values (``img_shape=[3, 64, 64]``)
    :return: the checked configuration
    :raises UsageError: bad input, with the command's one-line message
    """
    # NumPy's wrapped values as the Python values they hold (np.bool_(True) a switch, np.array(2) the number 2)
    algo, env, srl_model, num_timesteps, seed, log_dir, vis, progress = map(
        plainValue, (algo, env, srl_model, num_timesteps, seed, log_dir, vis, progress))
    flags = {name: plainValue(value) for name, value in flags.items()}
    _checkKinds(("hyperparams", hyperparams, Mapping, "a mapping of hyperparameter names to values"),
                ("vis", vis, bool, "True or False"), ("progress", progress, bool, "True or False"))
    extra = _extraStrings(extra)
    extra_algo = _extraAlgo(extra, algo)
    resume = flags.pop("resume", None)  # False or None: left out, as any flag
    if resume is not None and resume is not False:  # the run's own settings, from its args.json: the others are
        if not isinstance(resume, (str, os.PathLike)):  # refused as with --resume
            raise _notARun("resume", resume, "a run folder's path", "result.run_dir")
        named = {"algo": algo, "env": env, "srl_model": srl_model, "num_timesteps": num_timesteps, "seed": seed,
                 "log_dir": log_dir}
        pairs = [f"{name}:{value}" for name, value in (hyperparams or {}).items()]
        return _resumeConfig(resume, vis, progress, [*extra, *(["--hyperparam", *pairs] if pairs else [])],
                             {**{name: value for name, value in named.items() if value is not None}, **flags})
    algo = extra_algo or algo  # extra's --algo, as any flag of extra, over the keyword: its parser reads the flags
    algo_class = train_checks.algorithmClass(algo or DEFAULT_ALGO, default=algo is None)
    algo = algo or DEFAULT_ALGO
    if env is None and DEFAULT_ENV not in registered_env:  # (a given env is checked with the other settings)
        raise UsageError(unknownEnvText(DEFAULT_ENV, default=DEFAULT_ENV))
    parser = train_checks.algorithmParser(algo_class)
    defaults = train_checks.algorithmDefaults(algo)
    own = {name: value for name, value in defaults.items()
           if name not in TrainConfig.flagFields()}  # the algorithm's own flags (plugin API v1) and their defaults
    given = {"algo": algo, "env": env, "srl_model": srl_model, "num_timesteps": num_timesteps, "seed": seed,
             "log_dir": log_dir, "no_vis": not vis, "no_progress": not progress,
             "torch_threads": _callerThreads()}  # the caller's, unless given
    extras: dict[str, Any] = {}
    for name, value in flags.items():
        if name in TrainConfig.flagFields():
            given[name] = value
        elif name in own or f"hp_{name}" in own:
            extras[name if name in own else f"hp_{name}"] = value
        else:
            close = difflib.get_close_matches(name, [*TrainConfig.flagFields(), *(n.removeprefix("hp_") for n in own)],
                                              n=1)
            raise UsageError(f"unrecognized arguments: --{name.replace('_', '-')}"
                             + ("" if isinstance(value, bool) or value is None else f" {value}")
                             + f" (not a keyword of algo {algo!r}: its keywords are the flags of python -m "
                             f"rl_baselines.train --algo {algo} --help" + (f"; did you mean {close[0]}?)" if close else ")"))
    # --hyperparam's own form (NAME:VALUE strings) first, then the mapping's: a name in both takes the mapping's
    given["hyperparam"] = (*_hyperparamPairs(given.get("hyperparam")),
                           *(f"{name}:{valueText(value)}"
                             for name, value in (hyperparams or {}).items()))
    try:
        values = {name: checkedValue(name, value) for name, value in given.items()}
    except ValueError as error:
        raise UsageError(str(error)) from None
    for name, value in extras.items():  # typed and checked as the algorithm's hyperparameter flags are
        if not name.startswith("hp_") and value is not None and value is not False:  # its other flags: by its parser
            extras[name] = _ownFlagValue(parser, algo, name, value)
        elif name.startswith("hp_") and value is not None:
            text = valueText(value)
            try:
                extras[name] = algo_class.checkHyperparam(name[3:], algo_class.parserHyperParam({name[3:]: text})[name[3:]])
            except ValueError as error:
                raise UsageError(f"argument --{name[3:].replace('_', '-')}: {error}") from None
    if extra:  # command-line strings, read by the algorithm's parser, over the keywords
        for name, value in vars(parser.parse_args(["--algo", algo, *map(str, extra)])).items():
            if value != defaults[name]:
                (values if name in TrainConfig.flagFields() else extras)[name] = value
    config = train_checks.validate(TrainConfig(**values, extra={**own, **extras}), registered_rl)
    return RunConfig(config, tuple(commandArguments(config, own)))


def _extraStrings(extra: Any) -> Sequence[Any]:
    """:return: the ``extra`` keyword's command-line strings (None: none)
    :raises UsageError: not a list of them (one string, anything else)"""
    extra = () if extra is None else extra
    if isinstance(extra, (str, bytes)) or not isinstance(extra, Sequence):
        raise UsageError(f"extra {extra!r} must be a list of command-line strings, e.g. ['--num-cpu', '2']")
    return extra


def _extraAlgo(extra: Sequence[str], algo: Any) -> str | None:
    """
    :param extra: makeConfig's command-line strings
    :param algo: makeConfig's ``algo`` keyword (for the message)
    :return: the algorithm ``--algo`` names in ``extra``, None when it is left out; the train flags in ``extra`` are
        then read by that algorithm's parser, as the command reads them
    :raises UsageError: ``-h``/``--help``/``--version``, which the command answers by printing and ending the process
    """
    pre_parser = train_checks.baseParser(add_help=False)
    pre_parser.set_defaults(algo=None)
    pre_parser.add_argument("-h", "--help", "--version", dest="asks_help", action="store_true")
    pre_args, _ = pre_parser.parse_known_args([str(item) for item in extra])
    if pre_args.asks_help:
        shown = pre_args.algo or algo or DEFAULT_ALGO
        raise UsageError(f"extra's -h/--help/--version: the command prints and ends the process there, which the API "
                         f"does not; python -m rl_baselines.train --algo {shown} --help lists the flags (each is a "
                         "keyword of makeConfig), rl_baselines.__version__ is the version")
    return pre_args.algo


def _ownFlagValue(parser: Any, algo: str, name: str, value: Any) -> Any:
    """
    :param parser: the algorithm's train parser (its own flags: plugin API v1's, the SB3 learners' --lr-schedule)
    :param algo: the algorithm
    :param name: one of its own flags that is not a hyperparameter's, as a keyword
    :param value: its value from Python (True: a switch; a list: several values)
    :return: the value as its flag reads it from the command line
    :raises UsageError: a value the flag refuses, or of another kind (:func:`srl_toolbox.settings.kindRefusal`)
    """
    flag = f"--{name.replace('_', '-')}"
    parsed = getattr(parser.parse_args(["--algo", algo, *flagWords(flag, value)]), name)
    items = valueItems(value)
    for item, read in zip(items, parsed) if items is not None and isinstance(parsed, list) else [(value, parsed)]:
        refusal = kindRefusal(flag, name, item, read)
        if refusal is not None:
            raise UsageError(refusal)
    return parsed


def _resumeConfig(run: str | os.PathLike, vis: bool, progress: bool, extra: Sequence[str],
                  flags: Mapping[str, Any]) -> RunConfig:
    """
    :return: the checked config of ``resume=RUN`` (device, port, torch_threads and srl_model_path may be given with
        it, as on the command line; torch_threads is the caller's unless given)
    """
    argv = ["--resume", os.fspath(run), *([] if vis else ["--no-vis"]), *([] if progress else ["--no-progress"])]
    flags = {"torch_threads": _callerThreads(), **flags}  # the caller's, unless given
    try:  # of the flag's kind, as makeConfig's (the command then refuses those a resume takes from the run)
        for name, value in flags.items():
            if name in TrainConfig.flagFields():
                checkedValue(name, value)
    except ValueError as error:
        raise UsageError(str(error)) from None
    for name, value in flags.items():  # as makeConfig reads them: True a switch, False or None left out
        if value is True:
            argv.append(f"--{name.replace('_', '-')}")
        elif value is not None and value is not False:
            argv += [f"--{name.replace('_', '-')}", *(map(str, value) if isinstance(value, (list, tuple)) else
                                                      [str(value)])]
    argv += [str(item) for item in extra]
    args, plan, algo_class = train.parseCommand(argv)
    if plan.state == "finished":
        return RunConfig(args, tuple(argv), plan)
    config = train_checks.validate(args, registered_rl)
    checkPlan(plan, config, algo_class)
    return RunConfig(config, tuple(argv), plan)


def trainAgent(config: RunConfig | None = None, torch_threads: int | None = None, **options: Any) -> TrainResult:
    """
    Train as ``python -m rl_baselines.train`` does (same run folder, checkpoints, saved model), in this process.

    :param config: from :func:`makeConfig`; or leave it out and give ``makeConfig``'s keywords as ``options``
    :param torch_threads: torch's intra-op thread count during training, as ``--torch-threads`` reads it (``auto`` or
        0, or 1 up to the machine's CPUs); None: the config's (the caller's when it was made, at most the machine's
        CPUs, unless it was given ``torch_threads``); the caller's count is put back after training either way
    :param options: :func:`makeConfig`'s keywords, when no ``config`` is given
    :return: the outcome: ``model`` (the trained agent), ``run_dir``, ``num_timesteps``, ``mean_reward`` (last 100
        training episodes), ``exit_code`` (0 done; 128 + signal when stopped by Ctrl-C or SIGTERM, with a checkpoint;
        130 when a second Ctrl-C stopped it at once, ``model`` None when that came before the first step, and when
        ``resume`` names a finished run: nothing is trained, :func:`loadRun` loads its agent); the global random
        generators stay seeded with the run's seed, as SB3's ``learn`` leaves them
    :raises UsageError: bad input, raised before anything is written
    :raises TrainingInterrupted: a Ctrl-C stopped the run (after its checkpoint), with Python's default SIGINT
        handler installed: passed on as Python passes a Ctrl-C on (see :func:`_passOnStop`)
    :raises SystemExit: a SIGTERM stopped the run (after its checkpoint) and SIGTERM has its default action: exit
        code 143, the outcome as the exception's ``result``
    """

    _refuseInAWorkersImport("trainAgent")
    _checkKinds(("config", config, RunConfig, "a RunConfig from makeConfig (or leave it out and give makeConfig's "
                 "keywords)"),)
    if config is None:
        config = makeConfig(**options)
    elif options:
        raise TypeError(f"trainAgent: give a RunConfig or makeConfig's keywords, not both ({', '.join(options)})")
    if config.plan is not None:  # a resume: the command's own path (it checks the run folder again, locked)
        threads = [] if torch_threads is None else ["--torch-threads", str(torch_threads)]
        with callerSettings(rng=False):
            return _passOnStop(trainCommand([*config.argv, *threads]))
    args = config.args
    if torch_threads is not None:
        try:  # read as --torch-threads is, before anything is written; auto resolved as validation resolves it
            asked = checkedValue("torch_threads", torch_threads)
        except ValueError as error:
            raise UsageError(str(error)) from None
        algo_class = registered_rl[args.algo][0]
        args = args.replace(torch_threads=train_checks.runThreadsFor(algo_class, asked, args.argsRecord()))
    with callerSettings(rng=False):
        return _passOnStop(trainValidated(args))


class TrainingInterrupted(KeyboardInterrupt):
    """
    A Ctrl-C stopped :func:`trainAgent`, which saved a checkpoint first and then passes the Ctrl-C on (a script's or
    a notebook cell's loop stops, as at any other Ctrl-C). ``result`` is the run's outcome (``exit_code`` 130); its
    ``run_dir`` continues with ``trainAgent(resume=...)``.
    """

    def __init__(self, result: TrainResult) -> None:
        super().__init__(f"training stopped by Ctrl-C after {result.num_timesteps} steps; continue it with "
                         f"trainAgent(resume={result.run_dir!r})")
        self.result = result


def _passOnStop(result: TrainResult) -> TrainResult:
    """
    Pass a stop signal on once training has handled it (checkpoint saved, env closed), to whatever the caller had
    installed for it, as if it arrived now: the default Ctrl-C handler gets :class:`TrainingInterrupted`, SIGTERM's
    default action a ``SystemExit`` with code 143 (``finally`` blocks and exit handlers still run), a handler of the
    caller's is called; an ignored signal, or a run that no signal stopped, returns the result.

    :param result: what the training ended with (exit code 128 + signal when a signal stopped it)
    :return: ``result``
    """
    signum = result.exit_code - 128
    if signum not in (signal.SIGINT, signal.SIGTERM):
        return result
    handler = signal.getsignal(signum)
    if handler is signal.default_int_handler:
        raise TrainingInterrupted(result)
    if handler == signal.SIG_DFL:
        stop = SystemExit(result.exit_code)
        stop.result = result  # type: ignore[attr-defined]
        raise stop
    if callable(handler):
        handler(signum, None)
    return result


def _refuseInAWorkersImport(name: str) -> None:
    """
    End this process in one line when it is a worker process importing the script of the process that started it
    (multiprocessing's spawn and forkserver start methods, SB3's env workers among them, import the parent's
    ``__main__`` again, as ``__mp_main__``): a script whose calls are not under ``if __name__ == "__main__":`` would
    train again in each worker, each in a run folder of its own. Nothing is written; the parent's envs then fail to
    start, and it says so.

    :param name: the API function called (for the line)
    :raises SystemExit: in such a worker, with exit code 2, after the line
    """
    if not getattr(multiprocessing.current_process(), "_inheriting", False):  # (what multiprocessing itself reads)
        return
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") != "__mp_main__":
        frame = frame.f_back
    script = "the script" if frame is None else repr(frame.f_globals.get("__file__", "the script"))
    print(f"error: rl_baselines.{name}() was called in a worker process as it imported {script}, the script that "
          "started it (multiprocessing's spawn and forkserver workers import it again): put the script's calls under "
          "`if __name__ == \"__main__\":`", file=sys.stderr, flush=True)
    raise SystemExit(2)


def _checkKinds(*checks: tuple[str, Any, Any, str]) -> None:
    """
    :param checks: (argument name, value, accepted type(s), what it must be in words); None always passes
    :raises UsageError: a value of another type, naming it and what it must be
    """
    for name, value, kinds, words in checks:
        if value is not None and not isinstance(value, kinds):
            raise UsageError(f"{name} {value!r} must be {words}")


def _hyperparamPairs(value: Any) -> tuple[str, ...]:
    """
    :param value: the ``hyperparam`` keyword: None, or ``--hyperparam``'s NAME:VALUE strings (a list, a tuple or a
        NumPy array of them)
    :return: the strings
    :raises UsageError: anything else, naming the ``hyperparams`` mapping as the other way
    """
    if value is None or value is False:
        return ()
    items = valueItems(value)
    if items is None or not all(isinstance(item, str) for item in items):
        raise UsageError(f"hyperparam {value!r} must be a list of NAME:VALUE strings, e.g. ['n_steps:64'] (or "
                         "hyperparams={'n_steps': 64})")
    return tuple(map(str, items))


def _notARun(name: str, value: Any, kinds: str, trained: str) -> UsageError:
    """
    :param trained: what to give instead, from ``result = trainAgent(config)``
    :return: the refusal of ``value`` where a trained run is wanted; a RunConfig is named, not printed (its repr
        spans every setting), with the call that trains it
    """
    if isinstance(value, RunConfig):
        return UsageError(f"{name} is a RunConfig (makeConfig's: nothing trained yet); {name} takes {kinds}: "
                          f"train it first, result = trainAgent(config), and give {trained}")
    return UsageError(f"{name} {value!r} must be {kinds}")


def _callerThreads() -> int:
    """:return: this process's torch threads, at most what --torch-threads accepts"""
    return min(torch.get_num_threads(), maxThreads())


def loadRun(run_dir: str | os.PathLike, which: str = "latest", srl_model_path: str | os.PathLike | None = None,
            checkpoint: int | str | None = None) -> LoadedRun:
    """
    Load the agent of a run folder, as ``python -m replay.enjoy_baselines`` does.

    :param run_dir: a run folder written by training (``TrainResult.run_dir``)
    :param which: ``latest`` (the final model) or ``best`` (the best one, saved in ``best/``)
    :param srl_model_path: the run's trained SRL model, moved since training (its files must hash the same)
    :param checkpoint: instead of ``which``'s model, a periodic checkpoint's (its model and normalisation
        statistics): a step count N (``checkpoints/<N>_steps/``, as ``--load-checkpoint N``) or ``"last"``, the
        newest intact one (as ``--load-last-checkpoint``); not with ``which="best"``
    :return: the run: ``model`` (``model.getAction(observation, deterministic=True)``, plus
        ``**rl_baselines.core.base.actionMaskKeywords(model, env)`` for an algorithm that uses the env's action
        masks: maskable_ppo), ``args`` (its arguments), ``makeEnv(num_envs=1, seed=0)``, the env it acts on, and
        ``checkpoint_steps`` (the checkpoint's step count, None for the latest or best model)
    :raises UsageError: no run there, algorithm or env not installed, model missing or corrupt, no checkpoint at
        that step (the message lists the run's) or a damaged one, SRL model changed

    Loading leaves the caller's torch thread count and global random generators as they were.
    """

    if not isinstance(run_dir, (str, os.PathLike)):
        raise _notARun("run_dir", run_dir, "a run folder's path", "result.run_dir")
    _checkKinds(("srl_model_path", srl_model_path, (str, os.PathLike), "an SRL model folder's path (or None)"),)
    try:
        with callerSettings():  # (SB3's load seeds the global generators with the run's seed)
            return loadRunFolder(os.fspath(run_dir), which, srl_model_path, flag="run_dir", checkpoint=checkpoint)
    except ValueError as error:
        raise UsageError(str(error)) from None


def _loadedRun(run: str | os.PathLike | LoadedRun | TrainResult) -> LoadedRun:
    """:return: ``run`` as a LoadedRun (a TrainResult keeps its trained agent, a folder is loaded)"""
    if isinstance(run, LoadedRun):
        return run
    if isinstance(run, TrainResult):
        if run.model is None and run.exit_code == 0:  # a resumed run that had already finished
            return loadRun(run.run_dir)
        if run.model is None:
            raise UsageError(f"run {run.run_dir!r} has no trained agent: it was stopped (exit {run.exit_code}) before "
                             "its first step; continue it with trainAgent(resume=run_dir)")

        return LoadedRun(run.run_dir, run.args, registered_rl[run.args.algo][0], run.model, run.run_dir,
                         getattr(run.args, "srl_model_path", None))
    return loadRun(run)


def evaluateAgent(run: str | os.PathLike | LoadedRun | TrainResult, episodes: int = 10, deterministic: bool = True,
                  seed: int = 0, num_envs: int = 1) -> Evaluation:
    """
    Play whole episodes with a trained agent on fresh envs built as in training (no monitor files written).

    :param run: a run folder, a :class:`LoadedRun` or a :class:`TrainResult` (its agent as trained)
    :param episodes: episodes to play
    :param deterministic: take the most likely action (False: sample from the policy)
    :param seed: env i is seeded ``seed + i`` once, before its first episode (its next episodes go on from there);
        Python's, NumPy's and torch's generators are seeded with it during the
        evaluation and put back as they were after it, and so is the agent's own sampling generator where it has one
        (``seedActionSampling``: deepq, the evolution strategies, random_agent), which stays seeded; torch's thread
        count is put back too
    :param num_envs: parallel envs (subprocesses when > 1); env i plays ``(episodes + i) // num_envs`` of the
        episodes, so which episodes are played (and the scores) depend on it, not on ``seed`` alone
    :return: mean and standard deviation of the episode rewards, and each episode's reward and length
    :raises UsageError: bad input, or a run folder that cannot be loaded
    """

    _refuseInAWorkersImport("evaluateAgent")
    episodes = integerKeyword("episodes", episodes)
    try:
        num_envs, seed = checkEnvsAndSeed(num_envs, seed)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if not isinstance(deterministic, (bool, np.bool_)):
        raise UsageError(f"deterministic {deterministic!r} must be True or False")
    deterministic = bool(deterministic)
    if run is None or not isinstance(run, (str, os.PathLike, LoadedRun, TrainResult)):
        raise _notARun("run", run, "a run folder's path, a LoadedRun or a TrainResult", "result")
    with callerSettings():  # loading from a folder reseeds the generators too
        loaded = _loadedRun(run)
        set_random_seed(seed)
        loaded.model.seedActionSampling(seed)  # an agent that samples with a generator of its own
        try:
            env = loaded.makeEnv(num_envs, seed)
        except ValueError as error:
            raise UsageError(str(error)) from None
        try:
            rewards, lengths = playEpisodes(loaded.model, env, episodes, deterministic)
        finally:
            env.close()
    return Evaluation(float(np.mean(rewards)), float(np.std(rewards)), rewards, lengths)


def listAlgorithms(action: str | None = None) -> list[str]:
    """
    :param action: ``discrete`` or ``continuous`` to list only the algorithms acting in such spaces; None: all
    :return: the names of the registered algorithms (``algo``)
    :raises UsageError: unknown action kind
    """

    if action is None:
        return list(registered_rl)
    if action not in ACTION_KINDS:
        raise UsageError(f"unknown action kind {action!r}; valid choices: {', '.join(ACTION_KINDS)}")
    return supportingAlgorithms(ActionType[action.upper()])


def listEnvs() -> list[str]:
    """:return: the ids of the registered envs (``env``), sorted"""

    return sorted(registered_env)


def listSRLModels(learned: bool | None = None, env: str | None = None) -> list[str]:
    """
    :param learned: True: only the models trained from a dataset (vae, ...); False: only the observations an env
        computes (raw_pixels, ground_truth, ...); None: both
    :param env: keep only the env-computed observations this env offers
    :return: the names of the registered SRL models (``srl_model``)
    :raises UsageError: unknown env, or ``learned`` not a bool (a NumPy bool or 0-d array is the bool it holds:
        :func:`plainValue`, as :func:`makeConfig` reads it)
    """

    learned = plainValue(learned)
    _checkKinds(("learned", learned, bool, "True, False or None"))
    offered = None
    if env is not None:
        if env not in registered_env:
            raise UsageError(unknownEnvText(env))
        offered = getEnvClass(env).SRL_MODES
    names = []
    for name, (_, srl_type) in registeredSRL().items():
        is_learned = srl_type is SRLType.LEARNED
        if learned is not None and is_learned != learned:
            continue
        if not is_learned and offered is not None and name not in offered:
            continue
        names.append(name)
    return names


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """
    How a sweep ended, as its state file records it.

    :param exit_code: the command's: 0 when every run finished, 1 when some failed (130, interrupted: raised as
        :class:`SweepInterrupted`)
    :param state_file: ``<log_dir>/sweep_<sweep id>.json``, which the same sweep updates when run again
    :param runs: each run as the state file records it: its spec (``algo``, ``env``, ``srl_model``, ``seed``,
        ``train_args``, ``run_id``, ``log_dir``), ``state`` (``done``; ``skipped``: finished by an earlier
        invocation; ``failed``; ``pending``: not run), ``run_folder``, ``log``, ``returncode``
    """

    exit_code: int
    state_file: str
    runs: list[dict[str, Any]]

    @property
    def log_dir(self) -> str:
        """The sweep's root folder (``log_dir``), where its state file lies: for ``replay.gatherResults``."""
        return os.path.dirname(self.state_file)

    @property
    def run_dirs(self) -> list[str]:
        """The folders of the finished runs (done now or earlier), in the sweep's order: for
        ``replay.gatherResults``, :func:`loadRun`, :func:`evaluateAgent`."""
        return [run["run_folder"] for run in self.runs if run.get("state") in ("done", "skipped")]

    def __repr__(self) -> str:
        states = collections.Counter(str(run.get("state")) for run in self.runs)
        runs = Shown(f"<{len(self.runs)}: {', '.join(f'{count} {state}' for state, count in states.items())}>")
        return shortRepr(type(self).__name__, [("exit_code", self.exit_code), ("log_dir", self.log_dir),
                                               ("runs", runs)])


class SweepInterrupted(KeyboardInterrupt):
    """
    A Ctrl-C (or SIGTERM) stopped :func:`runSweep`, once the sweep had stopped its runs in flight (each saves a
    checkpoint) and recorded them; ``result`` is the sweep as its state file then says. The same call continues it.
    """

    def __init__(self, result: SweepResult) -> None:
        super().__init__(f"sweep stopped by an interrupt; its state: {result.state_file} (the same runSweep call "
                         "continues it)")
        self.result = result


def runSweep(algo: str | Sequence[str] | None = None, env: str | Sequence[str] | None = None,
             srl_model: str | Sequence[str] | None = None, num_iteration: int | None = None,
             log_dir: str | os.PathLike | None = None, *, vis: bool = False, progress: bool = False,
             extra: Sequence[str] = (), **flags: Any) -> SweepResult:
    """
    Train every combination of algorithms, envs, SRL models and seeds, as ``python -m rl_baselines.pipeline`` does
    (its run folders, its state file; a run finished earlier is kept, an unfinished one continued). None leaves a
    setting at the command's default.

    :param algo: an algorithm or several
    :param env: an env id or several
    :param srl_model: an observation or SRL model name, or several
    :param num_iteration: runs per combination, seeds ``seed``, ``seed + 1``, ...
    :param log_dir: root folder of the runs
    :param vis: live visdom plots (``--no-vis`` unless True)
    :param progress: the sweep's progress bar (``--no-progress`` unless True)
    :param extra: more command-line arguments, as strings
    :param flags: any other flag of the pipeline (``seed``, ``workers``, ``algo_args``, ``force``...) or of train,
        passed to every run (``num_timesteps``, ``num_cpu``, ``continuous_actions=True``...), by its long name with
        ``_`` for ``-``: ``True`` a switch, ``False`` or None left out, a list several values (a train flag that
        reads true or false takes the text: ppo_lstm's ``ortho_init="false"``)
    :return: the sweep's runs, from its state file
    :raises UsageError: bad input, with the command's one-line message, before anything is written
    :raises SweepInterrupted: a Ctrl-C or SIGTERM stopped it (a ``KeyboardInterrupt``, once the runs in flight stopped)
    """
    _refuseInAWorkersImport("runSweep")
    vis, progress = plainValue(vis), plainValue(progress)
    _checkKinds(("vis", vis, bool, "True or False"), ("progress", progress, bool, "True or False"))
    extra = [str(item) for item in _extraStrings(extra)]
    asked = [item for item in extra if item in ("-h", "--help", "--version")]
    if asked:
        raise UsageError(f"extra's {asked[0]}: the command prints and ends the process there, which the API does not; "
                         "python -m rl_baselines.pipeline --help lists the flags (each is a keyword of runSweep)")
    words = keywordArguments(pipeline.buildParser(), {"algo": algo, "env": env, "srl_model": srl_model,
                                                      "num_iteration": num_iteration, "log_dir": log_dir, **flags},
                             "rl_baselines.pipeline", api_named={"no_vis": "vis", "no_progress": "progress"},
                             passed_on=True)
    words += [*([] if vis else ["--no-vis"]), *([] if progress else ["--no-progress"]), *extra]
    with callerSettings():
        exit_code, state_file = pipeline.runPipeline(words)
    result = SweepResult(exit_code, state_file, readJson(state_file)["runs"])
    if exit_code == INTERRUPTED_EXIT_CODE:
        raise SweepInterrupted(result)
    return result
