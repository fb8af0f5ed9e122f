"""Learning benchmark: every registered algorithm on a task it suits, 3 seeds, beside the random agent.

Each run is ``python -m rl_baselines.train`` (the real command line, ground-truth observations); its result is read
from the run folder's monitor CSVs: the final reward of a run is the mean over its last ``--last-episodes`` episodes,
and a row gives the mean and standard deviation of that figure over the seeds. Rows come from :data:`CASES`; an
algorithm that is not registered when the script runs is skipped with a note (plugins come and go).

The main task is MobileRobotGymEnv-v0 (discrete actions, or ``-c`` for the continuous-only algorithms). CartPole-v1
and Pendulum-v1 are references, because Stable-Baselines3's RL Zoo publishes figures for them: the command line only
accepts envs declared under the ``srl_toolbox.environments`` entry points, so the script declares the two gymnasium
envs (wrapped as SRLGymEnv, observation = the gymnasium state) in a throw-away package metadata folder that it puts
on the runs' PYTHONPATH, exactly as a third-party plugin would; nothing in the project changes.

The imitation rows (``--algos imitation``) learn from an expert made first (:func:`prepareExpert`: ppo2 trained with
the env's reward, then :data:`EXPERT_EPISODES` of its episodes recorded by ``environments.dataset_generator --policy
RUN``): gail without the env's reward, and behaviour cloning alone; the report gives their share of the expert's
mean episode reward.

An algorithm "beats random clearly" when its mean minus one standard deviation closes at least
:data:`CLEAR_FRACTION` of the gap between the random agent and the task's solved level; the table flags the others.
On the tasks with a :data:`THRESHOLD`, a run's "steps to threshold" are the env steps after which the mean of its
last ``--last-episodes`` training episodes first reaches it. On the envs with action masks (MobileRobot's wall bumps,
the Kuka arm's clipped no-op moves, discrete actions), the final policy then plays :data:`MASK_EPISODES` episodes
(sampled actions, as in training; ``benchmarks.masked_moves`` in a subprocess) and the table gives the masked moves
it takes per episode: none for maskable_ppo, which never takes one; what ppo2 wastes for comparison.

Usage: ``python -m benchmarks.learning [--quick] [--algos A ...] [--seeds S ...] [--jobs N] [--no-append] [--reuse
[--rerun A ...]]`` (``make bench-learning``, whose time is in the README's command table; ``--quick`` is a short run
that appends nothing). Every finished run is recorded in :data:`RUNS_FILE`; ``--reuse`` takes from it the runs whose
settings (algorithm, env, actions, steps, flags, seed) have not changed since, and runs only the others and those of the
``--rerun`` algorithms (after a change of their code or defaults), so that one fixed row costs one row's time.
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import numpy as np
from tqdm import tqdm

from benchmarks.archive import loadRecords, writeRecords
from benchmarks.classic_control_envs import CARTPOLE, PENDULUM, writePluginMetadata
from benchmarks.documents import addResultsArguments, appendReport, machineDescription, recordedCommand, resultsPath
from rl_baselines.core.registry import defaultEnvs, registered_rl
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.runs.monitor_files import episodeRate, loadEpisodes, runEnvsOf
from srl_toolbox.cli import CLIParser, UsageError, positiveInt, runCommand, seedNumber
from srl_toolbox.devices import threadsEnvironment, threadsShare

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MOBILE = "MobileRobotGymEnv-v0"
KUKA = "KukaButtonGymEnv-v0"
# Reward of a solved episode, to measure how much of the way from random each algorithm went: MobileRobot's best
# measured policies score about 230 of 250 steps (the robot needs ~20 steps to reach the target), CartPole-v1 caps
# episodes at 500, and the RL Zoo's best Pendulum-v1 agents average about -150.
SOLVED = {MOBILE: 230.0, CARTPOLE: 500.0, PENDULUM: -150.0, KUKA: 5.0}
# Steps to threshold: the training mean reward ppo2's docstring measures on MobileRobot (150), and on the Kuka arm
# (episodes end after 5 steps pressing the button, so at most 5) 4 presses, the paper's ground-truth level (4.2).
THRESHOLD = {MOBILE: 150.0, KUKA: 4.0}
# Episodes of the final policy in which masked moves are counted (benchmarks.masked_moves), on the envs with action
# masks (discrete actions).
MASK_EPISODES = 5
MASKED_ENVS = (MOBILE, KUKA)
CLEAR_FRACTION = 0.25
RANDOM = "random_agent"


@dataclasses.dataclass(frozen=True)
class Case:
    """
    One row of the table: an algorithm trained on a task for a fixed budget.

    :param algo: registered algorithm name
    :param env: env id
    :param continuous: continuous actions (``-c``)
    :param steps: env steps per run
    :param extra: further train flags (hyperparameters that depart from the algorithm's defaults); ``{expert}``
        stands for the expert dataset (:func:`prepareExpert`)
    :param tag: a name ``--algos`` also selects the row by (``imitation``: the rows that learn from the expert)
    """

    algo: str
    env: str
    continuous: bool
    steps: int
    extra: tuple[str, ...] = ()
    tag: str = ""

    @property
    def task(self) -> tuple[str, bool, bool]:
        """The (env, continuous, random target) triple the random baseline is shared by."""
        return self.env, self.continuous, "-r" in self.extra

    @property
    def needsExpert(self) -> bool:
        """Whether the run reads the expert dataset (its flags name :data:`EXPERT_PLACEHOLDER`)."""
        return EXPERT_PLACEHOLDER in self.extra

    def label(self) -> str:
        """:return: the env column of the table"""
        if self.env in (MOBILE, KUKA):
            target = ", random target" if "-r" in self.extra else ""
            return f"{self.env} ({'continuous' if self.continuous else 'discrete'}{target})"
        return self.env


KUKA_FLAGS = ("--random-target", "--force-down")
# Budgets from the steps each algorithm needs (measured on this machine, see docs/benchmarks.md), so that the whole
# benchmark fits in about 45 minutes on 2 cores. The off-policy continuous algorithms run ~50-170 steps/s.
CASES: tuple[Case, ...] = (
    Case(RANDOM, MOBILE, False, 10_000),
    Case("ppo2", MOBILE, False, 40_000),
    Case("maskable_ppo", MOBILE, False, 40_000),  # ppo2's settings, never a move into a wall
    Case("a2c", MOBILE, False, 40_000),
    Case("ppo1", MOBILE, False, 40_000),
    Case("trpo", MOBILE, False, 20_000),
    Case("acer", MOBILE, False, 20_000),
    Case("acktr", MOBILE, False, 20_000),
    Case("deepq", MOBILE, False, 20_000),
    # SB3's QR-DQN step size and exploration are Atari's; 1e-4 and 10% left 2 seeds of 3 near random at 20k
    Case("qrdqn", MOBILE, False, 20_000, ("--learning-rate", "5e-4", "--exploration-fraction", "0.2")),
    Case("her", MOBILE, False, 20_000),  # goal-conditioned observations, SB3's DQN learner (her's discrete default)
    Case(RANDOM, MOBILE, True, 10_000),
    Case("sac", MOBILE, True, 20_000),
    # TD3's Gaussian noise (std 0.1) jitters in place: 2 seeds of 3 never found the target; DDPG's Ornstein-Uhlenbeck
    # noise wanders the room (the RL Zoo also tunes TD3's noise per env)
    Case("td3", MOBILE, True, 10_000, ("--noise-type", "ou", "--noise-std", "0.2")),
    Case("tqc", MOBILE, True, 8_000),
    Case("ddpg", MOBILE, True, 15_000),
    Case(RANDOM, CARTPOLE, False, 10_000),
    # the RL Zoo's CartPole-v1 PPO (8 envs x 32 steps there, one env x 256 here); the defaults reached 121-500
    Case("ppo2", CARTPOLE, False, 50_000, ("--num-cpu", "1", "--n-steps", "256", "--batch-size", "256",
                                           "--gae-lambda", "0.8", "--gamma", "0.98", "--n-epochs", "20",
                                           "--ent-coef", "0", "--learning-rate", "0.001", "--lr-schedule", "linear")),
    Case("deepq", CARTPOLE, False, 30_000),
    # Evolution strategies play one episode per candidate: MobileRobot's sparse reward (+1 near the target) leaves
    # their candidates' episodes at the random agent's level after 100k steps (see docs/benchmarks.md).
    Case("cma-es", CARTPOLE, False, 30_000),
    Case("ars", CARTPOLE, False, 30_000),
    Case("cem", CARTPOLE, False, 30_000),  # the example plugin (plugins/srl-toolbox-cem), when installed
    # RecurrentPPO on MobileRobot stayed near random with ppo2's settings (15k-40k steps, learning rates 3e-4 and
    # 1e-3), and on CartPole-v1 with ppo2's CartPole flags it ended at 111-307 after 50k steps; these are the RL Zoo's
    # recurrent settings (its CartPoleNoVel-v1 row: 8 envs x 32 steps, a 64-unit LSTM, ReLU, no orthogonal init)
    Case("ppo_lstm", CARTPOLE, False, 50_000, ("--num-cpu", "8", "--n-steps", "32", "--batch-size", "256",
                                               "--gae-lambda", "0.8", "--gamma", "0.98", "--n-epochs", "20",
                                               "--ent-coef", "0", "--learning-rate", "0.001", "--lr-schedule",
                                               "linear", "--lstm-hidden-size", "64", "--activation-fn", "relu",
                                               "--ortho-init", "False")),
    Case(RANDOM, PENDULUM, True, 10_000),
    Case("sac", PENDULUM, True, 20_000),
    # Imitation from EXPERT_EPISODES episodes of a ppo2 expert (prepareExpert), random target, without the env's
    # reward: gail (its ppo2 learner rewarded by the discriminator only), and behaviour cloning alone (--pretrain-dataset
    # then one rollout of all the steps before the first PPO update: every episode is the clone's)
    Case(RANDOM, MOBILE, False, 10_000, ("-r",), tag="imitation"),
    Case("gail", MOBILE, False, 60_000, ("-r", "--gail-dataset", "{expert}"), tag="imitation"),
    Case("ppo2", MOBILE, False, 5_000, ("-r", "--pretrain-dataset", "{expert}", "--num-cpu", "1", "--n-steps",
                                        "5000"), tag="imitation"),
    # The arm as in the SRL + RL benchmark (ppo2's deterministic evaluation reached 5 presses after 15k-25k steps
    # there): a random target, never up; masked moves are those the work box clips to nothing.
    Case(RANDOM, KUKA, False, 10_000, KUKA_FLAGS),
    Case("ppo2", KUKA, False, 30_000, KUKA_FLAGS),
    Case("maskable_ppo", KUKA, False, 30_000, KUKA_FLAGS),
)
EXPERT_PLACEHOLDER = "{expert}"
# The expert of the imitation rows: ppo2 with the env's reward on the same task, then its episodes recorded by the
# dataset generator (--policy RUN); its mean episode reward is what the imitation rows are compared with.
EXPERT_STEPS = 60_000
EXPERT_EPISODES = 10
EXPERT_SEED = 100
QUICK_STEPS = 2000
RUNS_FILE = os.path.join(ROOT, "benchmarks", "learning_runs.json")

# Published figures: RL Zoo benchmark.md (one run per pair, deterministic evaluation over ~150k steps after training
# for n_timesteps), https://github.com/DLR-RM/rl-baselines3-zoo/blob/0088472b8cb622732bdbc4aa3d0d0abde86c67ed/benchmark.md
# Keys use this project's names; the Zoo's algorithm is named in the cell.
ZOO_URL = "https://github.com/DLR-RM/rl-baselines3-zoo/blob/0088472b8cb622732bdbc4aa3d0d0abde86c67ed/benchmark.md"
PUBLISHED: dict[tuple[str, str], str] = {
    ("a2c", CARTPOLE): "a2c 500.0 +/- 0.0 (500k)",
    ("ars", CARTPOLE): "ars 500.0 +/- 0.0 (50k)",
    ("deepq", CARTPOLE): "dqn 500.0 +/- 0.0 (50k)",
    ("ppo2", CARTPOLE): "ppo 500.0 +/- 0.0 (100k)",
    ("ppo1", CARTPOLE): "ppo 500.0 +/- 0.0 (100k)",
    ("qrdqn", CARTPOLE): "qrdqn 500.0 +/- 0.0 (50k)",
    ("trpo", CARTPOLE): "trpo 500.0 +/- 0.0 (100k)",
    ("a2c", PENDULUM): "a2c -163.0 +/- 103.2 (1M)",
    ("ars", PENDULUM): "ars -212.5 +/- 160.4 (2M)",
    ("ddpg", PENDULUM): "ddpg -152.1 +/- 94.3 (20k)",
    ("ppo2", PENDULUM): "ppo -172.2 +/- 104.2 (100k)",
    ("ppo1", PENDULUM): "ppo -172.2 +/- 104.2 (100k)",
    ("sac", PENDULUM): "sac -157.0 +/- 88.7 (20k)",
    ("td3", PENDULUM): "td3 -151.9 +/- 90.2 (20k)",
    ("trpo", PENDULUM): "trpo -174.6 +/- 127.6 (100k)",
}


# --- runs ------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class RunResult:
    """
    One finished run.

    :param case: what was trained
    :param seed: its seed
    :param final: mean reward of its last episodes (nan when it failed or had none)
    :param steps: env steps it trained for
    :param wall: seconds the command took
    :param rate: env steps per second of training (monitor clock: from the env's creation to the last episode's end)
    :param error: why it failed, empty when it did not
    """

    case: Case
    seed: int
    final: float
    steps: int
    wall: float
    rate: float = float("nan")
    error: str = ""
    date: str = ""  # when a reused run was recorded (empty: run now)
    to_threshold: float = float("nan")  # env steps until the task's THRESHOLD (nan: never, or no threshold)
    masked: float = float("nan")  # masked moves per episode of the final policy (nan: the env has no masks)


def trainCommand(case: Case, steps: int, seed: int, log_dir: str, expert: str | None = None) -> list[str]:
    """
    :param case: the row
    :param steps: env steps
    :param seed: random seed
    :param log_dir: root of the run folder
    :param expert: the expert dataset, for a case that needs it
    :return: the ``rl_baselines.train`` command line
    """
    extra = [expert if word == EXPERT_PLACEHOLDER and expert else word for word in case.extra]
    return [sys.executable, "-m", "rl_baselines.train", "--algo", case.algo, "--env", case.env, "--srl-model",
            "ground_truth", "--num-timesteps", str(steps), "--seed", str(seed), "--no-vis", "--no-progress",
            "--log-dir", log_dir, *(["-c"] if case.continuous else []), *extra]


def runFolderName(case: Case, seed: int) -> str:
    """:return: the scratch folder of one run (the tag keeps a row apart from the same algorithm's other rows)"""
    return f"{case.algo}_{case.env}_{'c' if case.continuous else 'd'}{'_' + case.tag if case.tag else ''}_{seed}"


def runOne(case: Case, steps: int, seed: int, scratch: str, last_episodes: int, plugin_dir: str,
           expert: str | None = None, threads: int | None = None) -> RunResult:
    """
    Train one seed through the command line and read its final reward from the monitor files.

    :param case: the row
    :param steps: env steps
    :param seed: random seed
    :param scratch: folder for the run (deleted with it by the caller)
    :param last_episodes: episodes averaged into the final reward
    :param plugin_dir: folder holding the benchmark's package metadata (put on PYTHONPATH)
    :param expert: the expert dataset, for a case that needs it
    :param threads: the run's share of the cores, its torch threads (None: train's own auto)
    :return: the result
    """
    log_dir = os.path.join(scratch, runFolderName(case, seed))
    env = {**(os.environ if threads is None else threadsEnvironment(threads)),
           "PYTHONPATH": os.pathsep.join([plugin_dir, ROOT, os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    result = subprocess.run(trainCommand(case, steps, seed, log_dir, expert), cwd=ROOT, env=env, capture_output=True,
                            text=True)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines() or ["no output"]
        return RunResult(case, seed, float("nan"), 0, wall, error=f"exit {result.returncode}: {lines[-1][:160]}")
    done = re.search(r"^Done: (\d+) steps", result.stdout, re.MULTILINE)
    folder = re.findall(r"^Run folder: (.+)$", result.stdout, re.MULTILINE)[-1].strip()
    episodes = loadEpisodes(RunFolder(folder).monitor_dir, runEnvsOf(folder) or 1)
    rewards = episodes["rewards"]
    if not len(rewards):
        return RunResult(case, seed, float("nan"), steps, wall, error="no finished episode")
    rate = episodeRate(episodes)
    masked = float("nan")
    if not case.continuous and case.env in MASKED_ENVS:
        masked = countMaskedMoves(folder, seed, env)
    return RunResult(case, seed, float(rewards[-last_episodes:].mean()), int(done.group(1)) if done else steps, wall,
                     rate, to_threshold=stepsToThreshold(episodes, THRESHOLD.get(case.env), last_episodes),
                     masked=masked)


def stepsToThreshold(episodes: dict[str, np.ndarray], threshold: float | None, window: int) -> float:
    """
    :param episodes: a run's monitor episodes (``rewards``, ``timesteps``: the run's step count, all envs together,
        at each episode's end)
    :param threshold: the task's threshold, None for none
    :param window: episodes averaged
    :return: the env steps at the end of the first episode where the mean of the last ``window`` episodes (fewer at
        the start: all so far) reaches ``threshold``; nan when it never does or there is no threshold
    """
    rewards = np.asarray(episodes["rewards"], dtype=np.float64)
    if threshold is None or not len(rewards):
        return float("nan")
    sums = np.cumsum(rewards)
    counts = np.minimum(np.arange(1, len(rewards) + 1), window)
    means = (sums - np.concatenate([np.zeros(window), sums])[:len(rewards)]) / counts
    reached = np.flatnonzero(means >= threshold)
    return float(episodes["timesteps"][reached[0]]) if reached.size else float("nan")


def countMaskedMoves(run_dir: str, seed: int, env: dict[str, str]) -> float:
    """
    :param run_dir: a finished run on one of MASKED_ENVS
    :param seed: its seed
    :param env: the environment variables of its train command
    :return: benchmarks.masked_moves's count per episode (nan when the script fails)
    """
    result = subprocess.run([sys.executable, "-m", "benchmarks.masked_moves", run_dir, "--episodes",
                             str(MASK_EPISODES), "--seed", str(seed)], cwd=ROOT, env=env, capture_output=True, text=True)
    lines = result.stdout.strip().splitlines()
    return float(lines[-1]) if result.returncode == 0 and lines else float("nan")


def prepareExpert(scratch: str, steps: int) -> tuple[str, float]:
    """
    Train the imitation rows' expert (ppo2 with the env's reward, random target, :data:`EXPERT_SEED`) and record
    :data:`EXPERT_EPISODES` of its episodes with ``environments.dataset_generator --policy RUN``.

    :param scratch: folder for its run and dataset
    :param steps: its training steps
    :return: (the dataset folder, the mean reward of its recorded episodes)
    :raises RuntimeError: a command failed (its last line)
    """
    commands = [
        [sys.executable, "-m", "rl_baselines.train", "--algo", "ppo2", "--env", MOBILE, "-r", "--srl-model",
         "ground_truth", "--num-timesteps", str(steps), "--seed", str(EXPERT_SEED), "--no-vis", "--no-progress",
         "--log-dir", os.path.join(scratch, "expert_run")],
        [sys.executable, "-m", "environments.dataset_generator", "--env", MOBILE, "-r", "--num-episode",
         str(EXPERT_EPISODES), "--seed", str(EXPERT_SEED), "--renderer", "sprites", "--save-path", scratch, "--name",
         "expert", "--no-progress", "--policy"],
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    run_dir = ""
    for command in commands:
        result = subprocess.run([*command, *([run_dir] if run_dir else [])], cwd=ROOT, env=env, capture_output=True,
                                text=True)
        if result.returncode != 0:
            lines = (result.stderr or result.stdout).strip().splitlines() or ["no output"]
            raise RuntimeError(f"the expert could not be made: {lines[-1]}")
        run_dir = run_dir or re.findall(r"^Run folder: (.+)$", result.stdout, re.MULTILINE)[-1].strip()
    dataset = os.path.join(scratch, "expert")
    with np.load(os.path.join(dataset, "preprocessed_data.npz"), allow_pickle=False) as data:
        episodes = np.cumsum(data["episode_starts"]) - 1
        returns = np.bincount(episodes, weights=data["rewards"])
    return dataset, float(returns.mean())


def runKey(case: Case, steps: int, seed: int, last_episodes: int) -> str:
    """:return: what identifies a run's settings in :data:`RUNS_FILE`: the case's flags, and ``envsN`` where the
    algorithm's default number of envs (train's ``--num-cpu`` left out) is not 1, so that a record made before that
    default is not taken for one of it"""
    envs = 1 if "--num-cpu" in case.extra or case.algo not in registered_rl else defaultEnvs(case.algo)
    return " ".join([case.algo, case.env, "-c" if case.continuous else "-d", str(steps), f"seed{seed}",
                     f"last{last_episodes}", *case.extra, *([f"envs{envs}"] if envs != 1 else [])])


def loadRecordedRuns(path: str | None = None) -> dict[str, dict[str, Any]]:
    """
    :param path: the record file; None for :data:`RUNS_FILE` as it is when called
    :return: run key -> recorded result (empty when there is no record yet)
    """
    return loadRecords(path or RUNS_FILE)


def recordRuns(results: list[RunResult], steps_of: dict[Case, int], last_episodes: int, path: str | None = None
               ) -> None:
    """
    Add the successful runs to the record (replacing older runs with the same settings; the file is rewritten only
    when a result changed: benchmarks.archive).

    :param results: the runs of this invocation
    :param steps_of: each case's step budget
    :param last_episodes: episodes averaged into a run's final reward
    :param path: the record file; None for :data:`RUNS_FILE` as it is when called (a test points it elsewhere)
    """
    stamp = time.strftime("%Y-%m-%d")
    entries = {runKey(result.case, steps_of[result.case], result.seed, last_episodes): {
        "final": result.final, "steps": result.steps, "wall": result.wall, "rate": result.rate, "date": stamp,
        "to_threshold": _orNone(result.to_threshold), "masked": _orNone(result.masked)}
        for result in results if not result.error}
    writeRecords(path or RUNS_FILE, entries, not_compared=("date",))


def _orNone(value: float) -> float | None:
    """:return: ``value``, None for nan (JSON has no nan)"""
    return None if math.isnan(value) else value


def _orNan(value: float | None) -> float:
    """:return: ``value`` as a float, nan for None (what :func:`_orNone` wrote)"""
    return float("nan") if value is None else float(value)


def reusedRuns(cases: list[Case], steps_of: dict[Case, int], seeds: list[int], last_episodes: int,
               rerun: set[str]) -> list[RunResult]:
    """
    :return: the recorded results of the (case, seed) pairs that need not run again (a record without the steps to
        threshold or masked moves its row now reports runs again)
    """
    recorded = loadRecordedRuns()
    reused = []
    for case in cases:
        wanted = (("to_threshold",) if case.env in THRESHOLD and case.algo != RANDOM else ()) + (
            ("masked",) if case.env in MASKED_ENVS and not case.continuous else ())
        for seed in seeds:
            entry = recorded.get(runKey(case, steps_of[case], seed, last_episodes))
            if entry is not None and case.algo not in rerun and all(key in entry for key in wanted):
                reused.append(RunResult(case, seed, float(entry["final"]), int(entry["steps"]), float(entry["wall"]),
                                        float(entry["rate"]), date=entry["date"],
                                        to_threshold=_orNan(entry.get("to_threshold")),
                                        masked=_orNan(entry.get("masked"))))
    return reused


def runAll(cases: list[Case], steps_of: dict[Case, int], seeds: list[int], jobs: int, last_episodes: int,
           skip: frozenset[tuple[Case, int]] = frozenset(), expert_steps: int = EXPERT_STEPS, record: bool = False
           ) -> tuple[list[RunResult], float | None]:
    """
    Run every (case, seed), ``jobs`` at a time, longest first so that the parallel slots stay busy; first the
    expert (:func:`prepareExpert`) when a case needs it.

    :param cases: rows to run
    :param steps_of: env steps per run of each case
    :param seeds: seeds of each case
    :param jobs: runs at a time (subprocesses)
    :param last_episodes: episodes averaged into a run's final reward
    :param skip: (case, seed) pairs not to run
    :param expert_steps: the expert's training steps
    :param record: add each run to :data:`RUNS_FILE` as it finishes (an interrupted benchmark keeps them for
        ``--reuse``)
    :return: the results, in no particular order, and the expert's mean episode reward (None without an expert)
    """
    work = sorted(((case, seed) for case in cases for seed in seeds if (case, seed) not in skip),
                  key=lambda item: -expectedSeconds(
        item[0], steps_of[item[0]]))
    results = []
    with tempfile.TemporaryDirectory(prefix="srl_learning_") as scratch:
        plugin_dir = os.path.join(scratch, "plugin")
        writePluginMetadata(plugin_dir)
        expert, expert_reward = None, None
        if any(case.needsExpert for case, _ in work):
            expert, expert_reward = prepareExpert(scratch, expert_steps)
            print(f"Expert: {EXPERT_EPISODES} episodes of ppo2 ({expert_steps} steps), mean reward {expert_reward:.1f}")
        with ThreadPoolExecutor(max_workers=jobs) as pool, tqdm(total=len(work), desc="runs", unit="run") as bar:
            futures = {pool.submit(runOne, case, steps_of[case], seed, scratch, last_episodes, plugin_dir,
                                   expert, threadsShare(jobs)): (case, seed)
                       for case, seed in work}
            for future in as_completed(futures):
                result = future.result()
                results.append(result)
                if record:
                    recordRuns([result], steps_of, last_episodes)
                status = result.error or (f"final {result.final:.1f}, to threshold {result.to_threshold:.0f}, "
                                          f"masked {result.masked:.1f}")
                bar.write(f"{result.case.algo} {result.case.label()} seed {result.seed}: {status} "
                          f"({result.steps} steps, {result.wall:.0f} s)")
                bar.update(1)
                shutil.rmtree(os.path.join(scratch, runFolderName(result.case, result.seed)), ignore_errors=True)
    return results, expert_reward


# Rough env steps/s of each algorithm on 1 core (measured on MobileRobot), and of the slower envs with ppo2 (Kuka's
# physics: docs/benchmarks.md), only used to order the runs.
_RATE = {"tqc": 50, "td3": 100, "sac": 170, "ddpg": 170, "ppo_lstm": 110, "qrdqn": 300, "her": 400}
_ENV_RATE = {KUKA: 200}


def expectedSeconds(case: Case, steps: int) -> float:
    """:return: a guess of a run's duration, to start the long ones first"""
    return 3.0 + steps / min(_RATE.get(case.algo, 1000), _ENV_RATE.get(case.env, 1000))


# --- the table -------------------------------------------------------------------------------------------------------


def summarise(results: list[RunResult]) -> dict[Case, dict[str, Any]]:
    """
    :param results: every run
    :return: per case: mean and std of the final reward over seeds, steps, mean wall time, steps/s, errors
    """
    rows: dict[Case, dict[str, Any]] = {}
    for case in dict.fromkeys(result.case for result in results):
        runs = sorted((r for r in results if r.case == case), key=lambda r: r.seed)
        good = [r for r in runs if not r.error]
        finals = [r.final for r in good]
        rows[case] = {
            "mean": statistics.fmean(finals) if finals else float("nan"),
            "std": statistics.pstdev(finals) if len(finals) > 1 else 0.0,
            "finals": finals,
            "steps": max((r.steps for r in good), default=0),
            "wall": statistics.fmean(r.wall for r in good) if good else float("nan"),
            "rate": statistics.fmean(r.rate for r in good) if good else float("nan"),
            "errors": [f"seed {r.seed}: {r.error}" for r in runs if r.error],
            "to_threshold": [r.to_threshold for r in good],
            "masked": [r.masked for r in good if not math.isnan(r.masked)],
        }
    return rows


def verdict(case: Case, row: dict[str, Any], random_row: dict[str, Any] | None) -> tuple[str, str]:
    """
    :param case: the row's case
    :param row: its summary
    :param random_row: the random agent's summary on the same task
    :return: (progress from random to solved as a percentage, "yes"/"**no**"/"-" for "beats random clearly")
    """
    if case.algo == RANDOM or random_row is None or not row["finals"]:
        return "-", "-"
    gap = SOLVED[case.env] - random_row["mean"]
    progress = (row["mean"] - random_row["mean"]) / gap
    clear = (row["mean"] - row["std"] - random_row["mean"]) / gap >= CLEAR_FRACTION
    return f"{100 * progress:.0f}%", "yes" if clear else "**no**"


def markdownTable(cases: list[Case], rows: dict[Case, dict[str, Any]], seeds: int) -> str:
    """
    :param cases: rows in order
    :param rows: their summaries
    :param seeds: seeds per row
    :return: the markdown table
    """
    lines = [f"| algorithm | env | steps | mean final reward +/- std ({seeds} seeds) | wall time per run (s) | steps/s | "
             "progress random -> solved | beats random clearly | steps to threshold | masked moves per episode | "
             "RL Zoo (algo, mean +/- std, budget) |",
             "|---|---|---:|---:|---:|---:|---:|:---:|---:|---:|---|"]
    for case in cases:
        row = rows[case]
        random_row = next((rows[c] for c in rows if c.algo == RANDOM and c.task == case.task), None)
        progress, clear = verdict(case, row, random_row)
        reward = f"{row['mean']:.1f} +/- {row['std']:.1f}" if row["finals"] else "failed"
        if row["errors"]:
            reward += " (" + "; ".join(row["errors"]) + ")"
        flags = f" (`{' '.join(case.extra)}`)" if case.extra else ""
        masked = f"{statistics.fmean(row['masked']):.1f}" if row["masked"] else "-"
        lines.append(f"| {case.algo}{flags} | {case.label()} | {row['steps']:,} | {reward} | {row['wall']:.0f} | "
                     f"{row['rate']:,.0f} | {progress} | {clear} | {thresholdCell(case, row)} | {masked} | "
                     f"{PUBLISHED.get((case.algo, case.env), 'n/a')} |")
    return "\n".join(lines)


def imitationNote(cases: list[Case], rows: dict[Case, dict[str, Any]], expert_reward: float | None,
                  expert_steps: int = EXPERT_STEPS) -> str:
    """
    :param cases: the rows
    :param rows: their summaries
    :param expert_reward: the expert's mean episode reward, None when no row needed it (or all were reused)
    :param expert_steps: the expert's training steps (fewer with --quick)
    :return: a sentence comparing the imitation rows with the expert, empty without one
    """
    imitating = [case for case in cases if case.needsExpert and rows.get(case, {}).get("finals")]
    if expert_reward is None or not imitating:
        return ""
    shares = ", ".join(f"{'behaviour cloning' if '--pretrain-dataset' in case.extra else case.algo} "
                       f"{100 * rows[case]['mean'] / expert_reward:.0f}%" for case in imitating)
    return (f"Imitation rows: the expert is ppo2 trained {expert_steps:,} steps with the env's reward (seed "
            f"{EXPERT_SEED}), {EXPERT_EPISODES} of its episodes recorded by `environments.dataset_generator --policy "
            f"RUN` (mean reward {expert_reward:.1f}; `{{expert}}` in the flags); share of the expert's reward: "
            f"{shares}.")


def thresholdCell(case: Case, row: dict[str, Any]) -> str:
    """:return: the steps to threshold of the seeds that reached it (their mean) and how many did, or "-" """
    if case.env not in THRESHOLD or case.algo == RANDOM or not row["finals"]:
        return "-"
    reached = [steps for steps in row["to_threshold"] if not math.isnan(steps)]
    mean = f"{statistics.fmean(reached):,.0f}" if reached else "never"
    return f"{mean} ({len(reached)} of {len(row['to_threshold'])})"


def selectCases(algos: list[str] | None, registered: set[str]) -> tuple[list[Case], list[str]]:
    """
    :param algos: algorithms asked for (None: all); the random agent is kept for every task they use
    :param registered: names of the registered algorithms
    :return: (cases to run, notes about skipped algorithms)
    """
    notes = []
    wanted = [c for c in CASES if algos is None or c.algo in algos or (c.tag and c.tag in algos)]
    tasks = {c.task for c in wanted if c.algo != RANDOM}
    cases = [c for c in CASES if (c in wanted or (c.algo == RANDOM and c.task in tasks))]
    for algo in dict.fromkeys(c.algo for c in cases):
        if algo not in registered:
            notes.append(f"{algo} skipped: not registered when the benchmark ran")
    cases = [c for c in cases if c.algo in registered]
    missing = sorted(set(algos or ()) - {c.algo for c in CASES} - {c.tag for c in CASES})
    notes += [f"{algo} skipped: no task listed for it in benchmarks/learning.py" for algo in missing]
    listed = {c.algo for c in CASES}
    if algos is None:
        notes += [f"{algo} registered but not benchmarked (add a Case)" for algo in sorted(registered - listed)]
    return cases, notes


def main(argv: list[str] | None = None) -> None:
    """:param argv: command-line arguments; :raises UsageError: bad input (an unknown algorithm), before any work"""
    parser = CLIParser(prog="python -m benchmarks.learning", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_STEPS} steps per run: checks that every run works; appends nothing")
    parser.add_argument("--algos", nargs="+", help="only these algorithms (and the random agent on their tasks); "
                                                   "'imitation': the rows that learn from an expert (gail, behaviour "
                                                   "cloning)")
    parser.add_argument("--seeds", type=seedNumber, nargs="+", default=[0, 1, 2], help="seeds per row [0 1 2]")
    parser.add_argument("--jobs", type=positiveInt, default=2, help="runs at a time, each in its own process [2]")
    parser.add_argument("--last-episodes", type=positiveInt, default=20,
                        help="episodes averaged into a run's final reward [20]")
    addResultsArguments(parser)
    parser.add_argument("--reuse", action="store_true",
                        help="take the runs whose settings did not change from benchmarks/learning_runs.json")
    parser.add_argument("--rerun", nargs="+", default=[], metavar="ALGO",
                        help="with --reuse: run these algorithms again anyway (their code or defaults changed)")
    args = parser.parse_args(argv)
    if args.rerun and not args.reuse:
        raise UsageError(f"--rerun {' '.join(args.rerun)}: only with --reuse (without it every run is run anyway)")
    valid = sorted({case.algo for case in CASES} | {case.tag for case in CASES if case.tag})
    for flag, names in (("--algos", args.algos or []), ("--rerun", args.rerun)):
        unknown = [name for name in names if name not in valid]
        if unknown:
            raise UsageError(f"{flag}: unknown algorithm {unknown[0]!r}; valid choices: {', '.join(valid)}")
    cases, notes = selectCases(args.algos, set(registered_rl))
    for note in notes:
        print(note)
    steps_of = {case: (min(case.steps, QUICK_STEPS) if args.quick else case.steps) for case in cases}
    print(f"Machine: {machineDescription(('torch', 'stable_baselines3', 'sb3_contrib'))}")
    reused = reusedRuns(cases, steps_of, args.seeds, args.last_episodes, set(args.rerun)) if args.reuse else []
    if reused:
        print(f"{len(reused)} runs reused from {os.path.relpath(RUNS_FILE, ROOT)}")
    start = time.perf_counter()
    expert_steps = min(EXPERT_STEPS, QUICK_STEPS) if args.quick else EXPERT_STEPS
    fresh, expert_reward = runAll(cases, steps_of, args.seeds, args.jobs, args.last_episodes,
                                  skip=frozenset((result.case, result.seed) for result in reused),
                                  expert_steps=expert_steps, record=not args.quick)
    elapsed = time.perf_counter() - start
    results = reused + fresh
    summaries = summarise(results)
    table = markdownTable(cases, summaries, len(args.seeds))
    print(table)
    imitation = imitationNote(cases, summaries, expert_reward, expert_steps)
    if imitation:
        print(imitation)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{len(results)} runs in {elapsed / 60:.1f} min; load average {load:.1f}")
    if args.quick or args.no_append:
        return
    command = recordedCommand("benchmarks.learning", argv)
    notes_text = (
        f"Each row: `python -m rl_baselines.train --srl-model ground_truth` with the algorithm's default "
        f"hyperparameters, except the flags shown beside its name (per-task settings, as the RL Zoo has; "
        f"`benchmarks/learning.py` says why each departs), seeds {' '.join(map(str, args.seeds))}, "
        f"{args.jobs} runs at a time (one torch thread "
        f"each). Final reward = mean over the last {args.last_episodes} training episodes of a run (monitor CSVs, "
        f"exploration included; evolution strategies: candidates of the population), then mean +/- std over seeds. "
        f"Wall time = the whole command (start-up and saves included); steps/s = training steps per second of the "
        f"monitor clock (env creation to the last episode's end). Progress = "
        f"(mean - random) / (solved - random) with solved = "
        f"{', '.join(f'{env} {value:g}' for env, value in SOLVED.items())}; \"beats random clearly\" = mean - std "
        f"closes at least {100 * CLEAR_FRACTION:.0f}% of that gap. Steps to threshold = env steps until the mean of "
        f"a run's last {args.last_episodes} training episodes first reaches "
        f"{', '.join(f'{env} {value:g}' for env, value in THRESHOLD.items())} (mean over the seeds that did, "
        f"and how many); masked moves per episode = actions the env's masks forbid (a wall bump, an arm move clipped "
        f"to nothing) taken by the final policy in {MASK_EPISODES} episodes of sampled actions. "
        f"CartPole-v1 and Pendulum-v1 are gymnasium's, "
        f"declared to the command line as an env plugin by the script. RL Zoo figures: one run, deterministic "
        f"evaluation after training for the budget in brackets, with tuned hyperparameters ([benchmark.md]"
        f"({ZOO_URL})); ours are training episodes (exploration included) after a smaller budget. "
        f"{len(fresh)} runs took {elapsed / 60:.0f} min; load average {load:.1f} at the end (other work was "
        f"running on the machine when it is above {args.jobs})."
        + (f" {len(reused)} runs with unchanged settings were taken from earlier runs ("
           f"{', '.join(sorted({r.date for r in reused}))}, `benchmarks/learning_runs.json`); run now: "
           f"{', '.join(dict.fromkeys(r.case.algo for r in fresh)) or 'none'}." if reused else "")
        + (" " + imitation if imitation else "")
        + (" " + " ".join(note + "." for note in notes) if notes else ""))
    appendReport("Learning: every algorithm beside the random agent", command, notes_text, table,
                 packages=("torch", "stable_baselines3", "sb3_contrib", "gymnasium"), target="bench-learning",
                 path=resultsPath(args))


if __name__ == "__main__":
    runCommand(main)
