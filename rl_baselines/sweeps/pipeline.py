"""``python -m rl_baselines.pipeline``: run a sweep of training runs, algorithms x envs x SRL models x seeds.

    python -m rl_baselines.pipeline --algo ppo2 a2c --env MobileRobotGymEnv-v0 --srl-model ground_truth raw_pixels \\
        --num-iteration 3 --num-timesteps 20000 [--workers K] [--executor local|ray] [--ray-address HOST:PORT]

Every combination is checked up front as train would check it, and the whole sweep is refused (one line listing the bad
combinations, exit code 2) before anything starts. Each run is its own ``rl_baselines.train`` process with a
deterministic run id and folder (see rl_baselines/sweeps/sweep.py and run_attempts.py); a finished run has a completion
marker, so the same command run again only does what is missing or failed, and continues a run that was cut short (a
killed worker or sweep) from its last checkpoint with ``train --resume`` (``--force`` redoes everything from scratch). A
finished run made with other train settings than the command gives now (a train default changed since) is kept as done,
with one warning naming the settings (rl_baselines/sweeps/recorded.py). Any flag the pipeline does not know is passed to
every run. Exit code: 0 when every run succeeded, 1 otherwise (130 when interrupted).

A Ray sweep whose cluster goes down (see rl_baselines/sweeps/executors.py: ``lost``) stops submitting runs, records
the runs that were in flight as stopped (not finished: the same command continues them), prints its summary with one
line naming the lost cluster, and exits 1; a run that failed on its own stays failed.

Pipelines started on one ``--log-dir`` share the work: each claims a run before it starts it (a lock per run, see
rl_baselines/sweeps/claims.py), does the runs nobody holds, and waits for those another pipeline holds, recording that
one's outcome; the sweep's state file is merged, never blindly overwritten.
"""
from __future__ import annotations

import argparse
import collections
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

from environments import registered_env, resolvedRenderer
from rl_baselines.core.registry import defaultEnvs, registered_rl
from rl_baselines.envs.factory import autoStepsInWorkers, resolveVecEnv
from rl_baselines.runs.train import DEFAULT_ALGO, DEFAULT_ENV
from rl_baselines.runs.train_checks import baseParser
from rl_baselines.runs.train_config import TrainConfig
from rl_baselines.sweeps.claims import RunClaims, stamp, writeSweepState
from rl_baselines.sweeps.executors import (
    LOST_RUN_MESSAGE,
    LocalExecutor,
    RayExecutor,
    checkRayAddress,
    restoreRayEnvironment,
)
from rl_baselines.sweeps.followed_runs import SweepWork
from rl_baselines.sweeps.plots import SweepCurves, SweepPlotter
from rl_baselines.sweeps.recorded import changedSettings
from rl_baselines.sweeps.run_attempts import (
    RunResult,
    continuesFromCheckpoint,
    finishedFolder,
    resumableAttempt,
    stoppedBySignal,
)
from rl_baselines.sweeps.sweep import (
    RunSpec,
    checkGrid,
    expandGrid,
    parseAlgoArgs,
    parseTrainArgs,
    reservedFlagProblem,
    sweepId,
    unique,
    unknownTrainFlags,
)
from srl_models.registry import registeredSRL
from srl_toolbox.cli import (
    MAX_SEED,
    CLIParser,
    UsageError,
    addProgressArgument,
    addSeedArgument,
    addVisdomArguments,
    checkWritableFolder,
    nonEmptyText,
    positiveInt,
    runCommand,
)
from srl_toolbox.devices import usableCores
from srl_toolbox.signals import mayTakeSigterm
from srl_toolbox.terminal import writeAboveBar

PLOT_REFRESH_S = 2.0
WAIT_S = 0.5
# Seconds between two reads of the running runs' monitor files for the bar's ETA
FOLLOW_S = 2.0


def _nonNegativeFloat(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{raw!r} must be a finite number >= 0")
    return value


def buildParser() -> CLIParser:
    """:return: the pipeline's own flags (the others go to every run of train)"""

    parser = CLIParser(
        prog="python -m rl_baselines.pipeline", allow_abbrev=False,
        description="Train every combination of algorithms, envs, SRL models and seeds, K runs at a time.",
        epilog="Any other flag is passed to every run of python -m rl_baselines.train (python -m rl_baselines.train "
               "--algo NAME --help lists them), e.g. --num-timesteps, --num-cpu, -c, -r, --img-shape.")
    parser.add_argument("--algo", nargs="+", default=[DEFAULT_ALGO],
                        help=f"algorithms: {', '.join(registered_rl)} [{DEFAULT_ALGO}]")
    parser.add_argument("--algo-args", action="append", default=[], metavar="ALGO:FLAGS",
                        help="train flags for one algorithm's runs only, e.g. a2c:--n-steps=16 or "
                             "\"ppo2:--n-steps 64 --gamma 0.9\" (repeatable)")
    parser.add_argument("--env", nargs="+", default=[DEFAULT_ENV],
                        help=f"env ids: {', '.join(sorted(registered_env))} [{DEFAULT_ENV}]")
    parser.add_argument("--srl-model", nargs="+", default=[TrainConfig.srl_model],
                        help=f"observation modes / trained SRL models [{TrainConfig.srl_model}]")
    parser.addValueChoices({"--algo": ("algorithms", registered_rl), "--env": ("envs", sorted(registered_env)),
                            "--srl-model": ("SRL models", list(registeredSRL()))})
    parser.add_argument("--num-iteration", type=positiveInt, default=15,
                        help="runs per combination, with seeds SEED, SEED+1, ... [15]")
    addSeedArgument(parser, help=f"first seed [{TrainConfig.seed}]", default=TrainConfig.seed)
    parser.add_argument("--log-dir", type=nonEmptyText, default=TrainConfig.log_dir,
                        help=f"root folder of the runs [{TrainConfig.log_dir}]")
    parser.add_argument("--workers", type=positiveInt, default=None,
                        help="runs at a time [local: usable cores // the cores a run uses (--num-cpu, 1 where its "
                             "envs step in the training process: --vec-env), or a run per core where its envs "
                             "outnumber the cores; a run left one core steps its envs in the training process; "
                             "ray: what the cluster fits]")
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="local processes, or Ray tasks (pip install 'srl-toolbox[ray]') [local]")
    parser.add_argument("--ray-address", default=None, metavar="HOST:PORT",
                        help="a running Ray cluster (also auto or ray://HOST:PORT; an IPv6 host in brackets: "
                             "[::1]:6379) [start a local instance]")
    parser.add_argument("--num-gpus", type=_nonNegativeFloat, default=0.0,
                        help="GPUs each run asks Ray for (fractions allowed) [0]")
    parser.add_argument("--force", action="store_true",
                        help="redo every run from scratch, the finished ones too (their earlier folders are deleted)")
    addVisdomArguments(parser)
    addProgressArgument(parser, help="no progress bar (one line per finished run)")
    return parser


def _checkRayFlags(args: Any) -> None:
    if args.executor != "ray":
        for flag, given, why in (
                ("--ray-address", args.ray_address is not None, "the local executor runs on this machine only"),
                ("--num-gpus", args.num_gpus > 0, "local runs see every GPU of the machine")):
            if given:
                raise UsageError(f"{flag} needs --executor ray ({why})")
    if args.ray_address is not None:  # before anything is written (Ray itself would retry for minutes)
        checkRayAddress(args.ray_address)


def runCores(specs: Sequence[RunSpec], shared: Any) -> int:
    """
    :param specs: the runs to start
    :param shared: the train flags the pipeline reads (``num_cpu``, ``vec_env``, ``renderer``)
    :return: the cores the most demanding of them uses: its envs (``--num-cpu``, or its algorithm's default) where
        they step in worker processes, 1 where they step in the training process (``--vec-env``: dummy, or auto for
        an env whose steps are cheaper than a worker's round trip), so that runs of cheap envs fill the machine
    """
    cores = 1
    for algo, env, srl_model in {(spec.algo, spec.env, spec.srl_model) for spec in specs}:
        envs = defaultEnvs(algo, shared.num_cpu)
        if resolveVecEnv(shared.vec_env, envs, env, resolvedRenderer(shared.renderer, env), srl_model) == "subproc":
            cores = max(cores, envs)
    return cores


def localLayout(workers: int | None, run_cores: int, runs: int) -> tuple[int, bool]:
    """
    How a local sweep shares this machine's cores (usableCores): the runs at a time, and whether the runs whose envs
    would step in worker processes step them in the training process instead (``--vec-env dummy``, the same floats).
    A run whose envs outnumber its share of the cores loses more to the workers' round trips than it gains from them,
    and a run of its own per core keeps every core busy through the others' updates and evaluations.

    :param workers: ``--workers`` (None: chosen here)
    :param run_cores: the cores the most demanding run's envs ask for (:func:`runCores`)
    :param runs: the runs to do
    :return: (runs at a time: ``--workers``, else one per core where a run's envs ask for more cores than the machine
        has and there are several runs, else usable cores // ``run_cores``; envs in the training process: where
        ``run_cores`` > 1 and the runs at a time leave each run a single core)
    """
    usable = usableCores()
    if workers is None:
        workers = usable if run_cores > usable and runs > 1 else max(1, usable // run_cores)
    return workers, run_cores > 1 and usable // max(1, min(workers, runs)) <= 1


def stepsInWorkers(spec: RunSpec) -> bool:
    """
    :param spec: a run of the sweep
    :return: its envs would step in worker processes by ``--vec-env auto`` (not by a ``--vec-env`` it names)
    """
    args = parseTrainArgs(spec.algo, spec.env, spec.srl_model, spec.seed, spec.train_args)
    return autoStepsInWorkers(args.get("vec_env", "auto"), defaultEnvs(spec.algo, args.get("num_cpu")), spec.env,
                              resolvedRenderer(args.get("renderer"), spec.env), spec.srl_model)


def _makeExecutor(args: Any, run_cores: int, to_run: Sequence[RunSpec]) -> Any:
    if args.executor == "ray":
        return RayExecutor(args.ray_address, run_cores, args.num_gpus, args.workers, resume=not args.force)
    workers, in_process = localLayout(args.workers, run_cores, len(to_run))
    return LocalExecutor(workers, resume=not args.force,
                         envs_in_process=frozenset(spec.run_id for spec in to_run if in_process and stepsInWorkers(spec)))


class _Interrupted(KeyboardInterrupt):
    """SIGTERM: stop the runs in flight like a Ctrl-C would. A KeyboardInterrupt, so that Ray, whose calls check for
    signals and turn only a KeyboardInterrupt into their own (any other exception raised there ends in a SystemError),
    stops a Ray sweep's wait for it too."""


class SweepBar(tqdm):
    """The sweep's bar (:func:`sweepBar`): its ETA is the work left at the average rate since the sweep started,
    measured by :attr:`work` when set (runs' worth done and left, :class:`SweepWork`: the runs in flight count their
    steps so far), else by the runs ended."""

    work: Callable[[], tuple[float, float]] | None = None

    @property
    def format_dict(self) -> dict[str, Any]:
        info = super().format_dict
        done, left = self.work() if self.work is not None else (info["n"], info["total"] - info["n"])
        info["eta"] = ("00:00" if left <= 0 else "?" if done <= 0 or info["elapsed"] <= 0
                       else self.format_interval(left * info["elapsed"] / done))
        return info


def sweepBar(total: int, no_progress: bool) -> SweepBar:
    """
    :param total: the runs this command does
    :param no_progress: hide the bar
    :return: the sweep's bar, whose ETA is the work left at the average rate since the sweep started (recomputed at
        each redraw, so that it moves with the clock while runs go on; a moving average would hold the rate of the
        last runs that ended, too fast when several end together)
    """
    return SweepBar(total=total, desc="sweep", unit="run", disable=no_progress, dynamic_ncols=True, mininterval=0,
                    miniters=1, smoothing=0,
                    bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} runs [{elapsed}, ETA {eta}"
                               "{postfix}]")


def _raiseInterrupted(signum: int, frame: Any) -> None:
    raise _Interrupted()


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code (0: every run succeeded, 1: some failed, 130: interrupted)
    """
    return runPipeline(argv)[0]


def runPipeline(argv: Sequence[str] | None = None) -> tuple[int, str]:
    """
    The command (:func:`main`), with where it recorded the sweep.

    :param argv: command-line arguments (default: sys.argv[1:])
    :return: (exit code as :func:`main`'s, the sweep's state file: ``<log-dir>/sweep_<sweep id>.json``, every run with
        its state and folder)
    :raises UsageError: bad input (one line), before anything is written
    """
    try:
        return _runPipeline(list(sys.argv[1:] if argv is None else argv))
    finally:  # a caller's process (the Python API) gets back the Ray settings the sweep set for itself
        restoreRayEnvironment()


def _runPipeline(argv: list[str]) -> tuple[int, str]:
    """:func:`runPipeline` in its caller's environment"""
    parser = buildParser()
    args, train_args = parser.parse_known_args(argv)
    unknown = reservedFlagProblem(train_args) or unknownTrainFlags(args.algo, train_args, parser._option_string_actions)
    if unknown is not None:
        raise UsageError(unknown)
    _checkRayFlags(args)
    if args.seed + args.num_iteration - 1 > MAX_SEED:
        raise UsageError(f"--seed {args.seed} with --num-iteration {args.num_iteration}: the last seed "
                         f"{args.seed + args.num_iteration - 1} is above {MAX_SEED} (2**32-1)")
    checkWritableFolder(args.log_dir, "--log-dir")

    # The flags the pipeline reads from train's (--num-cpu sizes the workers); errors are train's own one-liners.
    shared, _ = baseParser(add_help=False).parse_known_args(train_args)

    algo_args = parseAlgoArgs(args.algo_args, args.algo)
    checkGrid(args.algo, args.env, args.srl_model, train_args, algo_args=algo_args)
    seeds = range(args.seed, args.seed + args.num_iteration)
    specs = expandGrid(args.algo, args.env, args.srl_model, seeds, train_args, args.log_dir, algo_args=algo_args)
    sweep_id = sweepId(specs)
    claims = RunClaims(specs, force=args.force)  # what each run's newest attempt is now, before anything is decided
    records: dict[str, dict[str, Any]] = {}
    for spec in specs:
        folder = None if args.force else finishedFolder(spec)
        if folder is not None:
            records[spec.run_id] = stamp({"state": "skipped", "run_folder": folder, "returncode": 0,
                                          "log": os.path.join(folder, "train.log")}, claims.pipeline)
    _warnChangedSettings([(spec, records[spec.run_id]["run_folder"]) for spec in specs if spec.run_id in records])
    to_run = [spec for spec in specs if spec.run_id not in records]
    resumed = 0 if args.force else sum(resumableAttempt(spec) is not None for spec in to_run)
    # asked before Ray's start, which installs a SIGTERM handler of its own (that ends the process at once)
    take_sigterm = mayTakeSigterm()
    executor = _makeExecutor(args, runCores(to_run, shared), to_run) if to_run else None

    state_path = os.path.join(os.path.abspath(args.log_dir), f"sweep_{sweep_id}.json")
    command = ["python", "-m", "rl_baselines.pipeline", *argv]
    writeSweepState(state_path, command, specs, records, claims.pipeline)
    grid = (f"{len(unique(args.algo))} algo x {len(unique(args.env))} env x {len(unique(args.srl_model))} SRL model "
            f"x {args.num_iteration} seed{'s' if args.num_iteration > 1 else ''}")
    workers = min(executor.workers, len(to_run)) if executor else 0
    print(f"Sweep {sweep_id}: {len(specs)} run{'s' if len(specs) > 1 else ''} ({grid}); "
          f"{len(specs) - len(to_run)} already done, {len(to_run)} to run"
          + (f" ({resumed} continue{'s' if resumed == 1 else ''} where {'it' if resumed == 1 else 'they'} stopped)"
             if resumed else "")
          + (f" on {workers} {executor.name} worker{'s' if workers > 1 else ''}" if executor else "")
          + (f"; {len(executor.envs_in_process)} step their envs in the training process (a core per run: "
             "--vec-env dummy)" if executor is not None and executor.envs_in_process else ""), flush=True)
    if executor is not None and executor.name == "ray":
        print(f"Ray cluster: {executor.cluster}", flush=True)
        if executor.capped and len(to_run) > executor.workers:  # the cap matters only with more runs than it
            print(executor.capped, flush=True)
    print(f"State: {state_path}", flush=True)

    curves = None
    if not args.no_vis:
        # "Live plots: <the sweep's page>" once the server answers (at the first curve), as train says it
        curves = SweepCurves(SweepPlotter(args.port, env_name=f"sweep_{sweep_id}",
                                          episode_window=getattr(shared, "episode_window", 40), announce=True))
        curves.refresh(spec for spec in specs if spec.run_id in records)
    if executor is None:
        print("Nothing to run (--force redoes the finished runs)." if specs else "Nothing to run.")
        if curves is not None:
            curves.close()
        return 0, state_path
    failed, interrupted = _runAll(executor, claims, to_run, specs, records, curves, args.no_progress,
                                  lambda: writeSweepState(state_path, command, specs, records, claims.pipeline),
                                  take_sigterm)
    return _summary(specs, records, failed, interrupted, state_path, lost=executor.lost), state_path


def _warnChangedSettings(finished: Sequence[tuple[RunSpec, str]]) -> None:
    """One warning when finished runs taken as done were made with other train settings than their spec's command
    gives now (a train default changed since: the run id names only the settings given), naming the settings."""
    changed = [(folder, names) for spec, folder in finished if (names := changedSettings(spec, folder))]
    if changed:
        names = sorted({name for _, found in changed for name in found})
        print(f"warning: {len(changed)} finished run(s) were made with other train settings than this command's "
              f"({', '.join(names)}; a train default changed since), e.g. {changed[0][0]}: kept as done (--force "
              "runs every run again)", file=sys.stderr, flush=True)


def _runAll(executor: Any, claims: RunClaims, to_run: list[RunSpec], specs: list[RunSpec],
            records: dict[str, dict[str, Any]], curves: Any, no_progress: bool, save_state: Any,
            take_sigterm: bool = True) -> tuple[list[RunResult], bool]:
    """
    Feed the executor with the runs this pipeline claims, wait for those another pipeline holds, follow the runs with
    one progress bar, record every result. The bar counts the runs of ``to_run`` that ended (done + failed of its
    status; not those a Ctrl-C stopped), its status set before the count moves so that the two always agree. Once the
    executor's cluster is lost (``executor.lost``) nothing more is started: the runs in flight are recorded stopped.

    :param take_sigterm: SIGTERM stops the sweep (:func:`srl_toolbox.signals.mayTakeSigterm`, asked before the
        executor started)
    :return: (failed results, whether the sweep was interrupted)
    """

    by_id = {spec.run_id: spec for spec in specs}
    pending = collections.deque(to_run)
    waiting: list[RunSpec] = []  # held by another pipeline (or a train process that outlived its pipeline)
    announced: set[str] = set()
    failed: list[RunResult] = []
    finished_now: list[RunSpec] = []
    ended: list[RunResult] = []
    counted = collections.Counter()  # the runs the bar counts, by state
    # every update drawn (a run ending is rare), with the status set just before it
    bar = sweepBar(len(to_run), no_progress)
    work = SweepWork(to_run) if not no_progress else None  # the ETA's measure, from the runs' monitor files
    if work is not None:
        bar.work = work.amounts

    def record(result: RunResult, elsewhere: dict[str, Any] | None = None, advance: bool = True,
               why: str = "interrupted") -> None:
        """Record how a run ended: run here (its claim is given back), or by another pipeline (``elsewhere``);
        ``advance=False``: a run stopped by this sweep's interruption, or by that of the pipeline that ran it (its
        failed.json says ``stopped``), or in flight when the cluster was lost (``why``), which the bar does not count
        as finished."""
        spec = by_id[result.run_id]
        claims.release(result.run_id)
        # a run here whose train a Ctrl-C or SIGTERM of its own stopped (sent to it, not to the sweep): ended, and
        # stopped as the summary and the state file's counts say (the same command continues it)
        by_signal = elsewhere is None and result.state == "failed" and \
            stoppedBySignal(result.returncode) in (signal.SIGINT, signal.SIGTERM)
        records[result.run_id] = elsewhere if elsewhere is not None else stamp(
            {"state": result.state, "run_folder": result.run_folder, "log": result.log,
             "returncode": result.returncode, "wall_time_s": round(result.wall_time_s, 2), "message": result.message,
             **({} if advance and not by_signal else {"stopped": True})}, claims.pipeline)
        finished_now.append(spec)
        ended.append(result)
        if advance:
            counted["stopped" if by_signal else "failed" if result.state == "failed" else "done"] += 1
            if work is not None:
                work.ended(spec.run_id, done=result.state != "failed" and elsewhere is None)
            showStatus(refresh=False)
            bar.update(1)
        else:
            counted["stopped"] += 1
        by = " by another pipeline" if elsewhere is not None else ""
        # --no-progress: every line of a run that ended (done, failed or stopped) says which it is of this invocation's
        prefix = f"[{len(ended)}/{len(to_run)}] " if no_progress else ""
        if result.state == "failed":
            failed.append(result)
        if not advance:  # stopped by an interruption (here or elsewhere): said as the bar, summary and state count it
            writeAboveBar(bar, f"{prefix}stopped{by}: {spec.label} [{spec.run_id}] ({why}), log {result.log}"
                      + (f": {result.message}" if result.message and result.message != why else ""))
        elif result.state == "failed":
            writeAboveBar(bar, f"{prefix}{'stopped' if by_signal else 'failed'}{by}: {spec.label} [{spec.run_id}] "
                      f"{_exitCodeAndLog(result)}" + (f": {result.message}" if result.message else ""))
        elif no_progress:
            writeAboveBar(bar, f"{prefix}done{by}: {spec.label} [{spec.run_id}]"
                      + (f" in {result.wall_time_s:.0f} s" if not by else ""))

    def recordShutdown(interrupted: bool) -> None:
        """Record the runs the executor's shutdown returns: one in flight on a lost cluster stopped (why: the cluster),
        one an interruption cancelled stopped unless it was done."""
        for result in executor.shutdown(interrupted=interrupted):
            lost_run = bool(executor.lost) and result.run_id in executor.abandoned
            record(result, advance=not lost_run and (result.state == "done" or not interrupted),
                   why=result.message if lost_run else "interrupted")

    def recordElsewhere(spec: RunSpec, outcome: dict[str, Any]) -> None:
        record(RunResult(spec.run_id, outcome["state"], outcome.get("returncode"), outcome.get("run_folder", ""),
                         outcome.get("log", ""), float(outcome.get("wall_time_s") or 0.0), outcome.get("message", "")),
               elsewhere=outcome, advance=not outcome.get("stopped"))

    interactive = not no_progress and sys.stderr.isatty()
    shown = {"postfix": "", "at": time.monotonic(), "followed": 0.0}

    def showStatus(refresh: bool = True) -> None:
        """Set the bar's status (``refresh=False``: shown with the next update); the clock and the ETA move on."""
        if work is not None and time.monotonic() - shown["followed"] >= FOLLOW_S:
            work.follow(executor.running)
            shown["followed"] = time.monotonic()
        postfix = f"done {counted['done']}, running {len(executor.running)}, failed {counted['failed']}" + (
            f", held elsewhere {len(waiting)}" if waiting else "") + (
            f", stopped {counted['stopped']}" if counted["stopped"] else "")
        if postfix != shown["postfix"]:
            bar.set_postfix_str(postfix, refresh=refresh)
            shown.update(postfix=postfix, at=time.monotonic())
        elif refresh and interactive and time.monotonic() - shown["at"] >= 1.0:
            bar.refresh()
            shown["at"] = time.monotonic()

    def forgetUnstarted() -> None:
        for spec in executor.unstarted:  # cancelled in Ray's queue, or not sent: not run, as the runs never submitted
            claims.release(spec.run_id)
            records.pop(spec.run_id, None)

    # SIGTERM stops the sweep unless the caller handles or ignores it (runSweep: its handler is kept, as SIGINT's is);
    # a sweep run in a thread (runSweep) gets no signals and installs no handler
    previous_handler, previous_sigint = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    in_main_thread = threading.current_thread() is threading.main_thread()
    if take_sigterm and in_main_thread:
        signal.signal(signal.SIGTERM, _raiseInterrupted)
    interrupted = False
    last_plot = time.monotonic()
    try:
        while pending or waiting or executor.running:
            changed = False
            for spec in list(waiting):  # a run another pipeline held may have ended meanwhile
                outcome = claims.attemptedElsewhere(spec)
                if outcome is not None:
                    waiting.remove(spec)
                    recordElsewhere(spec, outcome)
                    changed = True
            still_held = []
            while executor.hasSlot() and (pending or waiting):
                spec = pending.popleft() if pending else waiting.pop(0)
                taken = claims.take(spec)
                if taken.kind == "held":
                    still_held.append(spec)
                    if spec.run_id not in announced:
                        announced.add(spec.run_id)
                        bar.write(f"held by {taken.holder}: {spec.label} [{spec.run_id}]; this pipeline does "
                                  f"the other runs and waits for it")
                elif taken.kind == "attempted" and taken.record is not None:
                    recordElsewhere(spec, taken.record)
                    changed = True
                else:
                    records[spec.run_id] = stamp({"state": "running"}, claims.pipeline)
                    executor.submit(spec)
                    changed = True
            waiting.extend(still_held)
            waited_from = time.monotonic()
            results = executor.wait(WAIT_S)
            for result in results:
                record(result)
                changed = True
            if executor.lost:
                break
            if not results and waiting and time.monotonic() - waited_from < WAIT_S / 2:
                time.sleep(WAIT_S)  # nothing in flight here (Ray answers at once): only runs others hold are left
            if changed:
                save_state()
            showStatus()
            if curves is not None and (finished_now or time.monotonic() - last_plot >= PLOT_REFRESH_S):
                curves.refresh([*executor.running, *finished_now])
                finished_now.clear()
                last_plot = time.monotonic()
        recordShutdown(interrupted=False)  # none, unless the cluster was lost: the runs in flight then
        if executor.lost:
            showStatus()  # the bar's last line: nothing running, the runs stopped
            forgetUnstarted()
    except (KeyboardInterrupt, _Interrupted):
        interrupted = True
        for signum in (signal.SIGINT, signal.SIGTERM) if in_main_thread else ():  # a second stop must not cut the
            signal.signal(signum, signal.SIG_IGN)  # stopping of the runs short
        writeAboveBar(bar, "Interrupted: stopping the runs in flight (each saves its model)...")
        recordShutdown(interrupted=True)
        showStatus()  # the bar's last line: nothing running, the runs stopped
        forgetUnstarted()
    finally:
        claims.releaseAll()
        if work is not None:
            work.close()
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous_handler)
            signal.signal(signal.SIGINT, previous_sigint)
        bar.close()
        save_state()
        if curves is not None:
            curves.refresh(finished_now)
            curves.close()
    return failed, interrupted


def _exitCodeAndLog(result: RunResult) -> str:
    """:return: a failed run's exit code and log, as its lines say them: no exit code when its train process did not
    start or its Ray task died without reporting one, no log when it never had a folder"""
    return ("no exit code" if result.returncode is None else f"exit code {result.returncode}") + (
        f", log {result.log}" if result.log else "")


def _summary(specs: list[RunSpec], records: dict[str, dict[str, Any]], failed: list[RunResult], interrupted: bool,
             state_path: str, lost: str = "") -> int:
    """Print how the sweep ended, ``lost``: why its Ray cluster was lost (one more line says so); :return: the exit
    code."""
    states = collections.Counter(records.get(spec.run_id, {"state": "pending"})["state"] for spec in specs)
    elsewhere = sum(bool(record.get("elsewhere")) and record["state"] == "done" for record in records.values())
    finished = states["done"] + states["skipped"]
    # listed apart from the failed: the runs a Ctrl-C or SIGTERM stopped (the sweep's interruption, or one sent to a
    # train process alone: it saved a checkpoint; a run killed by SIGKILL on its own failed, as its line said);
    # counted apart: those and the runs in flight when a Ray cluster was lost
    stopped = [result for result in failed if stoppedBySignal(result.returncode) in (signal.SIGINT, signal.SIGTERM)
               or (records.get(result.run_id, {}).get("stopped") and result.message != LOST_RUN_MESSAGE)]
    stopped_now = sum(result in stopped or bool(records.get(result.run_id, {}).get("stopped")) for result in failed)
    print(f"Sweep: {finished}/{len(specs)} runs finished ({states['skipped']} earlier"
          + (f", {elsewhere} by another pipeline" if elsewhere else "") + f"), {len(failed) - stopped_now} failed"
          + (f", {stopped_now} stopped" if stopped_now else "")
          + (f", {states['pending'] + states['running']} not run" if interrupted or lost else "")
          + f". State: {state_path}")
    by_id = {spec.run_id: spec for spec in specs}
    resumable = [result for result in stopped if continuesFromCheckpoint(result.run_folder)]
    cut_off = [result for result in failed if lost and result.message == LOST_RUN_MESSAGE and result not in stopped]
    for title, results in (("Stopped runs (the same command continues them from their last checkpoint):", resumable),
                           ("Stopped runs without a checkpoint yet (the same command starts them again):",
                            [result for result in stopped if result not in resumable]),
                           ("Runs in flight when the Ray cluster was lost (the same command continues them):", cut_off),
                           ("Failed runs (run the same command again to redo them):",
                            [result for result in failed if result not in stopped and result not in cut_off])):
        if results:
            print(title)
        for result in results:
            print(f"  {by_id[result.run_id].label} [{result.run_id}]: {_exitCodeAndLog(result)}")
    if lost:
        print(f"{lost[0].upper()}{lost[1:]}: the same command resumes the sweep.")
    if interrupted:
        return 130
    return 0 if finished == len(specs) and not lost else 1


if __name__ == "__main__":
    runCommand(main)
