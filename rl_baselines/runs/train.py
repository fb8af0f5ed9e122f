"""``python -m rl_baselines.train``: train one agent and write its run folder (docs/architecture.md).

    <log-dir>/<env-id>/<srl-model>/<algo>/<YY-MM-DD_HHhMM_SS>_<tag>/
        args.json  hyperparams.yaml  env_globals.json  monitor/  <algo>_model.*  checkpoints/  best/  vecnormalize.npz
        progress.csv  learning_curve.png  evaluations.npz (with --eval-freq)
        srl_model.json (with a trained SRL model: its name, path and hash)

Every input is checked before anything is written (rl_baselines.runs.train_checks.validate), so a bad command
leaves the disk as it was.
"""
from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from environments import getEnvClass, registered_env
from environments.registry import unknownEnvText
from rl_baselines.core.registry import registered_rl
from rl_baselines.core.run_folder import LEARNING_CURVE_FILE, RUN_FOLDER_ATTEMPTS, RunFolder, newStamp
from rl_baselines.runs.hyperparam_sources import hyperparamStrings
from rl_baselines.runs.hyperparams_file import usedHyperparams, writeHyperparamsFile
from rl_baselines.runs.resume import (
    RESOLVED_HYPERPARAMS_KEY,
    applyFinishedPlan,
    applyPlan,
    checkPlan,
    fallbackNote,
    loadResumeArgs,
    lockRun,
)
from rl_baselines.runs.run_logging import (
    TENSORBOARD_RUN_KEY,
    VISDOM_ENV_KEY,
    claimTensorboardFolder,
    tensorboardRunName,
)
from rl_baselines.runs.train_checks import algorithmClass, algorithmParser, baseParser, validate
from rl_baselines.runs.train_config import DEFAULT_ALGO as DEFAULT_ALGO  # re-exported: the command's defaults
from rl_baselines.runs.train_config import DEFAULT_ENV as DEFAULT_ENV
from rl_baselines.runs.train_config import MIN_CNN_SIDE as MIN_CNN_SIDE  # re-exported: rl_baselines.train
from rl_baselines.runs.train_config import TrainConfig, TrainResult
from rl_baselines.runs.train_loop import completeLearningCurve, trainInRunFolder
from rl_baselines.runs.worker import trainAsWorker
from srl_models.config import describeSRLModel
from srl_models.registry import registeredSRL
from srl_toolbox.cli import (
    CommandFailed,
    UsageError,
    checkWritableFolder,
    environmentErrorText,
    pythonCommand,
    runCommand,
)
from srl_toolbox.files import environmentError, writeJson
from srl_toolbox.plugins import SkippedPluginWarning
from srl_toolbox.terminal import HeldWarnings


def createRunFolder(config: TrainConfig) -> str:
    """
    :param config: the run's config (log_dir, env, srl_model, algo, seed, tag, run_folder)
    :return: a new, empty run folder (a suffix avoids collisions with a run started in the same second)
    """
    if config.run_folder:  # given by rl_baselines.pipeline, which made it and holds its log there
        if os.path.exists(RunFolder(config.run_folder).args_file):
            raise UsageError(f"--run-folder {config.run_folder!r} already holds a run")
        os.makedirs(config.run_folder, exist_ok=True)
        return config.run_folder
    parent = os.path.join(config.log_dir, config.env, config.srl_model, config.algo)
    stamp = newStamp()
    name = f"{stamp}_{config.tag or f'seed{config.seed}'}"
    os.makedirs(parent, exist_ok=True)
    for attempt in range(RUN_FOLDER_ATTEMPTS):
        run_dir = os.path.join(parent, name if attempt == 0 else f"{name}_{attempt}")
        try:
            os.mkdir(run_dir)
            return run_dir
        except FileExistsError:
            continue
    raise UsageError(f"cannot create a run folder under {parent}")


def parseCommand(argv: Sequence[str]) -> tuple[TrainConfig, Any, type]:
    """
    :param argv: command-line arguments
    :return: (the settings as given, resume plan or None, algorithm class); with ``--resume`` the settings are the
        run's own
    :raises UsageError: unknown algorithm, bad flags, a run that cannot be resumed
    """
    names = {"algo_names": list(registered_rl), "env_ids": sorted(registered_env), "srl_models": list(registeredSRL())}
    pre_parser = baseParser(add_help=False, **names)
    pre_parser.add_argument("-h", "--help", action="store_true", dest="wants_help")
    pre_parser.set_defaults(algo=None, env=None)  # None: the flag was left out (the messages say "the default")
    pre_args, _ = pre_parser.parse_known_args(argv)
    if pre_args.resume is not None:
        args, plan = loadResumeArgs(argv, registered_rl, baseParser)
        return args, plan, (registered_rl[args.algo][0] if plan.state != "finished" else None)
    if pre_args.wants_help and pre_args.algo is None and DEFAULT_ALGO not in registered_rl:
        baseParser(**names).parse_args(["--help"])  # (the default algorithm was skipped: the shared flags' help)
    algo_class = algorithmClass(pre_args.algo or DEFAULT_ALGO, default=pre_args.algo is None)
    env = pre_args.env or DEFAULT_ENV
    if env not in registered_env and not pre_args.wants_help:
        raise UsageError(unknownEnvText(env, default=DEFAULT_ENV if pre_args.env is None else None))
    return TrainConfig.fromValues(vars(algorithmParser(algo_class).parse_args(argv))), None, algo_class


def prepareRunFolder(config: TrainConfig, plan: Any, env_class: type, srl_record: dict[str, Any] | None
                     ) -> tuple[TrainConfig, Any]:
    """
    Create and describe a new run folder, or cut a resumed one back to its checkpoint, holding its lock.

    :param config: the validated config
    :param plan: the resume plan, None for a new run
    :param env_class: the env's class (its globals are recorded)
    :param srl_record: the learned SRL model's name, path and hash (None for env-given observations)
    :return: (the config with its run folder, the steps already done and, when resuming, the checkpoint to restore;
        the run folder's lock: release it at the end)
    """
    if plan is not None:
        checkWritableFolder(plan.run_dir, "--resume")
        run_lock = lockRun(plan.run_dir)  # refused while another process trains it
        config = applyPlan(plan, config)  # every check passed: cut the run back to its checkpoint
        config = config.replace(run_dir=plan.run_dir)
        if plan.state == "resume":
            note = fallbackNote(plan)
            if note is not None:
                print(f"warning: {note}", file=sys.stderr, flush=True)
            print(f"Resuming from {plan.checkpoint} ({plan.num_timesteps} of {plan.target_timesteps} steps)")
            return config.replace(start_timesteps=plan.num_timesteps), run_lock
        print("No checkpoint to resume from: training again from the start")
        return config, run_lock
    checkWritableFolder(config.run_folder or config.log_dir, "--run-folder" if config.run_folder else "--log-dir")
    run_dir = createRunFolder(config)
    run_lock = lockRun(run_dir)  # a --resume of this run while it trains is refused
    saved_args = config.argsRecord()
    # What the hyperparameter file said at the start: a resumed run must not read a file changed since.
    saved_args[RESOLVED_HYPERPARAMS_KEY] = hyperparamStrings(config)
    # Where the run's logs go, chosen once: its own tensorboard folder now, its visdom env at its first draw
    if config.tensorboard_log:
        saved_args[TENSORBOARD_RUN_KEY] = claimTensorboardFolder(
            config.tensorboard_log, tensorboardRunName(config.env, config.srl_model, config.algo, run_dir))
    saved_args[VISDOM_ENV_KEY] = None
    writeJson(RunFolder(run_dir).args_file, saved_args)
    env_kwargs = registered_rl[config.algo][0].envKeywords(dict(config.env_kwargs))  # as the algorithm builds them
    writeJson(RunFolder(run_dir).env_globals_file, env_class.getGlobals(env_kwargs))
    if srl_record is not None:
        writeJson(RunFolder(run_dir).srl_model_file, srl_record)
        print(f"SRL model: {srl_record['name']} from {srl_record['path']} (hash {srl_record['hash'][:12]})")
    return config.replace(run_dir=run_dir), run_lock


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    """
    return trainCommand(argv).exit_code


def trainCommand(argv: Sequence[str] | None = None) -> TrainResult:
    """
    Run the train command in this process: parse and check the flags, write the run folder, train.

    :param argv: command-line arguments (default: sys.argv[1:])
    :return: the outcome, with the trained agent
    :raises UsageError: bad input (one line), raised before anything is written, and before any warning of the
        checks is shown (they are once the run folder is made)
    """
    with HeldWarnings(shown_at_once=(SkippedPluginWarning,)) as held:  # (a broken plugin is said whatever happens)
        args, plan, algo_class = parseCommand(list(sys.argv[1:] if argv is None else argv))
        if plan is not None and plan.state == "finished":
            held.release()
            print(f"Run folder: {plan.run_dir}")
            applyFinishedPlan(plan)  # only the SRL model's new folder, if given, is recorded
            print(f"Already finished ({plan.num_timesteps} steps): nothing to resume")
            if completeLearningCurve(plan.run_dir):  # (stopped between its final checkpoint and its curve)
                print(f"{LEARNING_CURVE_FILE}: drawn from its monitor files (the run stopped before it)")
            return TrainResult(0, plan.run_dir, None, plan.num_timesteps, float("nan"), args)
        return trainValidated(validate(args, registered_rl), plan, algo_class, held)


def trainValidated(config: TrainConfig, plan: Any = None, algo_class: type | None = None,
                   held: HeldWarnings | None = None) -> TrainResult:
    """
    Write the run folder of a validated config and train (the train command after its parsing and validation, and
    the Python API's ``trainAgent``); a process that only works for another process's run (the algorithm's
    ``workerRole``) trains without writing anything.

    :param config: from :func:`validate`
    :param plan: the resume plan (``--resume``), None for a new run
    :param algo_class: the algorithm's class (default: the config's)
    :param held: the warnings of the checks so far, shown once the run folder is made (or the worker starts)
    :return: the outcome, with the trained agent
    :raises UsageError: the run folder cannot be made or resumed (one line), before anything is written
    """
    algo_class = algo_class or registered_rl[config.algo][0]
    if algo_class.workerRole(config) is not None:  # (ppo1 --rank > 0) another process writes the run
        if held is not None:
            held.release()
        return trainAsWorker(config, algo_class)
    env_class = getEnvClass(config.env)
    if plan is not None:
        checkPlan(plan, config, algo_class)
    srl_record = None
    if config.srl_model_path is not None:
        try:
            srl_record = describeSRLModel(config.srl_model_path)  # the hash that enjoy checks later
        except ValueError as error:
            raise UsageError(f"--srl-model {config.srl_model}: {error}") from None
    used_hyperparams = None
    if plan is None:
        used_hyperparams = usedHyperparams(algo_class, config, dict(config.hyperparams))
    config, run_lock = prepareRunFolder(config, plan, env_class, srl_record)
    if held is not None:  # every check passed: the warnings of the flags the run takes
        held.release()
    try:
        if used_hyperparams is not None:
            writeHyperparamsFile(config.run_dir, used_hyperparams, config.algo)
        return trainInRunFolder(config, plan, algo_class)
    except Exception as error:
        found = environmentError(error)
        if found is None or not algo_class.supportsResume():  # a bug (its traceback), or a run --resume refuses
            raise
        resume = f"{pythonCommand()} -m rl_baselines.train --resume {shlex.quote(config.run_dir)}"
        raise CommandFailed(f"{environmentErrorText(found)}; once fixed, continue the run with: {resume}") from error
    finally:
        run_lock.release()


if __name__ == "__main__":
    runCommand(main)
