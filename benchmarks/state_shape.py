"""Does the shape of a state, not what it holds, decide whether ppo2 learns MobileRobot in the benchmark's budget?

The agent gets MobileRobotGymEnv-v0's ground truth (the robot's position relative to the target, 2 numbers) either
as it is or turned into ``--dims`` numbers by a fixed random map, drawn once from ``--map-seed``:

- ``ground_truth``: the 2 numbers;
- ``linear``: ``A z + b`` (``z`` the ground truth / 2, ``A`` and ``b`` standard normal): the same information, exactly
  and linearly;
- ``tanh``: ``tanh(A z + b)``: the same information, through a smooth non-linear map, as a learned encoder gives it.

No image is rendered and nothing is learned before the agent: whatever separates the rows is the state's shape.
``--scale S`` multiplies what the normalisation hands the agent by S (1: as train does; train's
``--srl-ground-truth-scale`` normalisation, ``ScaledVecNormalize``, with a given factor), to tell the state's size
from its number of dimensions: a linear map to 32 dimensions is the ground truth times a matrix whose singular values
are about 4 once each dimension is normalised, which the first layer of the policy cannot tell from larger inputs.
``--scale participation`` uses ``sqrt(P / dims)`` for each variant, ``P`` the participation ratio of the normalised
state's covariance (``srl_models.metrics.participationRatio``, measured on random moves): the number of directions
the state really spans, known without the ground truth (about 2 for a linear map of 2 numbers, so about 0.25 at 32
dimensions), as train's ``--srl-state-scale participation`` measures it on a model's recorded states.
``--hyperparam NAME:VALUE`` (ppo2's names), ``--policy-activation``, ``--early-ent-coef WEIGHT:STEPS`` (the
entropy bonus's weight for the updates of the first STEPS steps, ppo2's after) and ``--n-envs N`` (N envs stepped
together, as train's ``--num-cpu N`` steps them; an evaluation every ``--eval-freq`` env steps, rounded down to a
multiple of N) change one thing of the agent at a time, and ``--first-seed`` with ``--seeds`` picks the seeds, to
measure how often each setting traps a seed. Each run is Stable-Baselines3's PPO with ppo2's hyperparameters
(:data:`rl_baselines.rl_algorithm.ppo2.PPO2Model`'s defaults), one env (``--n-envs``), the running mean/std
normalisation that train puts on every low-dimensional state (``VecNormalize(norm_obs=True, norm_reward=False)``) and
SB3's ``EvalCallback`` (a separate env, normalisation statistics synced, deterministic actions) every ``--eval-freq``
steps, as ``python -m benchmarks.srl_rl`` runs ppo2. One torch thread per run; ``--workers`` runs at a time.

``--results FILE`` keeps every finished run in a JSON file (atomically, after each run); runs already there with the
same settings are not run again, so a long measurement resumes where it stopped. It prints, per variant over the
seeds, the final evaluation reward (mean +/- standard error), how many seeds reached
the threshold (90% of ground truth's mean final reward; none when that mean is not positive: the rule of docs/srl.md,
``benchmarks.srl_rl.analysis.rewardThreshold``) and the median steps they took, and every seed's final reward; then
appends the table with its command and machine to docs/benchmarks.md (``--no-append``: not). Its time is in the
README's command table (``make bench-state-shape``).

Usage: ``python -m benchmarks.state_shape [--variants ground_truth linear tanh] [--dims 32] [--seeds 5] [--first-seed
0] [--steps 50000] [--eval-freq 5000] [--eval-episodes 5] [--map-seed 1000] [--scale 1|S|participation] [--hyperparam
NAME:VALUE ...] [--policy-activation tanh|relu] [--early-ent-coef WEIGHT:STEPS] [--n-envs 1] [--results FILE]
[--workers 2] [--no-append]``
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList, EvalCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

import environments  # noqa: F401  (registers the envs)
from benchmarks.documents import addResultsArguments, appendReport, resultsPath
from benchmarks.progress import Countdown
from benchmarks.srl_rl.analysis import meanStandardError, rewardThreshold
from replay.results import evaluationStepsToThreshold
from rl_baselines.core.hyperparams import hyperparamPairs, plainValues
from rl_baselines.core.training_state import silentLogger
from rl_baselines.envs.factory import ScaledVecNormalize
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from srl_models.metrics import participationFactor
from srl_toolbox.cli import CLIParser, UsageError, checkOutputFile, positiveFloat, positiveInt, runCommand, seedNumber
from srl_toolbox.files import writeJson

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_ID = "MobileRobotGymEnv-v0"
VARIANTS = ("ground_truth", "linear", "tanh")
PARTICIPATION = "participation"
ACTIVATIONS = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}
PARTICIPATION_STEPS = 5000
RESULT_FIELDS = ("timesteps", "rewards", "first_success")  # what a run gives, not what it is


class EmbeddedState(gym.ObservationWrapper):
    """
    The ground truth seen through a fixed random map (see the module docstring).

    :param env: an env whose observation is the ground truth
    :param kind: "linear" or "tanh"
    :param dims: size of the embedded state
    :param map_seed: seed of the map's matrix and offset
    """

    def __init__(self, env: gym.Env, kind: str, dims: int, map_seed: int) -> None:
        super().__init__(env)
        rng = np.random.default_rng(map_seed)
        source_dims = int(np.prod(env.observation_space.shape))
        self.matrix = rng.normal(size=(dims, source_dims))
        self.offset = rng.normal(size=dims)
        self.kind = kind
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (dims,), np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        """
        :param observation: the ground truth
        :return: its embedding, float32 (dims,)
        """
        mapped = self.matrix @ (np.asarray(observation, dtype=np.float64).ravel() / 2.0) + self.offset
        return (np.tanh(mapped) if self.kind == "tanh" else mapped).astype(np.float32)


class EvaluationRecorder(BaseCallback):
    """Called by EvalCallback after each evaluation: keeps its step count and mean reward (EvalCallback itself keeps
    them only when it writes a log file)."""

    def __init__(self) -> None:
        super().__init__()
        self.timesteps: list[int] = []
        self.rewards: list[float] = []

    def _on_step(self) -> bool:
        self.timesteps.append(int(self.num_timesteps))
        self.rewards.append(float(self.parent.last_mean_reward))
        return True


class FirstSuccess(BaseCallback):
    """Keeps the training step at which the first episode with a positive return ended (None: none yet): whether the
    agent saw the target at all, and how early, before its policy settled."""

    def __init__(self) -> None:
        super().__init__()
        self.step: int | None = None

    def _on_step(self) -> bool:
        if self.step is None and any(info.get("episode", {}).get("r", 0) > 0 for info in self.locals["infos"]):
            self.step = int(self.num_timesteps)
        return True


class EarlyEntropy(BaseCallback):
    """
    The entropy bonus's weight ``weight`` for the updates of the first ``until`` steps, then the agent's own: more
    exploration only while the agent has not yet met the target.

    :param weight: the early weight
    :param until: env steps after which the agent's own weight applies
    """

    def __init__(self, weight: float, until: int) -> None:
        super().__init__()
        self.weight, self.until = float(weight), int(until)
        self.own: float | None = None

    def _on_training_start(self) -> None:
        self.own = self.model.ent_coef

    def _on_rollout_end(self) -> None:  # before each update: the weight of the steps collected so far
        self.model.ent_coef = self.weight if self.num_timesteps <= self.until else self.own

    def _on_step(self) -> bool:
        return True


def normalisedEnv(factory: Callable[[], gym.Env], scale: float = 1.0, training: bool = True,
                  n_envs: int = 1) -> VecNormalize:
    """
    :param factory: builds the env
    :param scale: factor applied after the normalisation (1: train's plain ``VecNormalize``)
    :param training: update the running mean/std (False for the evaluation env, which EvalCallback syncs)
    :param n_envs: copies of the env, stepped together (train's ``--num-cpu``)
    :return: the envs in one DummyVecEnv, normalised as train normalises a state
    """
    kwargs = {"norm_obs": True, "norm_reward": False, "training": training}
    venv = DummyVecEnv([factory] * n_envs)
    return ScaledVecNormalize(venv, scale, **kwargs) if scale != 1.0 else VecNormalize(venv, **kwargs)


def participationScale(variant: str, dims: int, map_seed: int, steps: int = PARTICIPATION_STEPS,
                       seed: int = 0) -> float:
    """
    :param variant: one of :data:`VARIANTS`
    :param dims: embedded state size
    :param map_seed: seed of the random map
    :param steps: random moves the states are taken from (episodes restart as they end)
    :param seed: seed of the env and of the moves
    :return: ``sqrt(P / n)``: P the participation ratio of the variant's states, n their size
    """
    env = makeEnv(variant, dims, map_seed)
    rng = np.random.default_rng(seed)
    observation, _ = env.reset(seed=seed)
    states = [observation]
    for _ in range(steps):
        observation, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            observation, _ = env.reset()
        states.append(observation)
    env.close()
    return participationFactor(np.asarray(states, dtype=np.float64))


def makeEnv(variant: str, dims: int, map_seed: int) -> gym.Env:
    """
    :param variant: one of :data:`VARIANTS`
    :param dims: embedded state size
    :param map_seed: seed of the random map
    :return: the monitored env the agent sees
    """
    env = Monitor(gym.make(ENV_ID, srl_model="ground_truth"))
    return env if variant == "ground_truth" else EmbeddedState(env, variant, dims, map_seed)


def buildAgent(job: dict[str, Any], venv: VecNormalize) -> PPO:
    """
    :param job: as :func:`runOne` takes it
    :param venv: the normalised training env
    :return: SB3's PPO with ppo2's defaults, the job's hyperparameters over them and its activation, recording
        into a silent logger (SB3's own would make an empty ``/tmp/SB3-<date>`` folder at each learn)
    """
    hyperparams = plainValues(PPO2Model.DEFAULT_HYPERPARAMS) | job.get("hyperparams", {})
    activation = {"activation_fn": ACTIVATIONS[job["activation"]]} if job.get("activation", "tanh") != "tanh" else {}
    model = PPO("MlpPolicy", venv, seed=job["seed"], verbose=0, device="cpu", policy_kwargs=activation or None,
                **hyperparams)
    model.set_logger(silentLogger())
    return model


def runOne(job: dict[str, Any]) -> dict[str, Any]:
    """
    Train one agent and evaluate it along the way.

    :param job: variant, seed, dims, steps, eval_freq, eval_episodes, map_seed, scale (a number), and optionally
        hyperparams (ppo2's, typed: they replace its defaults), activation (a key of :data:`ACTIVATIONS`),
        early_ent_coef ([weight, steps]: :class:`EarlyEntropy`) and n_envs (envs stepped together; evaluations
        every ``eval_freq // n_envs`` vectorised steps)
    :return: the job with ``timesteps`` and ``rewards`` (mean evaluation reward at each evaluation) and
        ``first_success`` (:class:`FirstSuccess`: the step at which the first training episode with a positive return
        ended, None for none)
    """
    torch.set_num_threads(1)
    factory = lambda: makeEnv(job["variant"], job["dims"], job["map_seed"])  # noqa: E731
    n_envs = job.get("n_envs", 1)
    venv = normalisedEnv(factory, job["scale"], n_envs=n_envs)
    venv.seed(job["seed"])
    eval_env = normalisedEnv(factory, job["scale"], training=False)
    eval_env.seed(job["seed"] + 1000)
    model = buildAgent(job, venv)
    recorder = EvaluationRecorder()
    callback = EvalCallback(eval_env, n_eval_episodes=job["eval_episodes"],
                            eval_freq=max(job["eval_freq"] // n_envs, 1),
                            deterministic=True, verbose=0, callback_after_eval=recorder)
    first = FirstSuccess()
    callbacks = [callback, first] + ([EarlyEntropy(*job["early_ent_coef"])] if "early_ent_coef" in job else [])
    model.learn(job["steps"], callback=CallbackList(callbacks))
    return {**job, "timesteps": recorder.timesteps, "rewards": recorder.rewards, "first_success": first.step}


def summarise(results: list[dict[str, Any]], variants: list[str]) -> str:
    """
    :param results: finished runs (:func:`runOne`)
    :param variants: rows, in order
    :return: the markdown table
    """
    finals = {v: [r["rewards"][-1] for r in results if r["variant"] == v] for v in variants}
    reference = finals.get("ground_truth") or next(iter(finals.values()))
    threshold = rewardThreshold(reference)  # the SRL + RL benchmark's rule: none when that mean is not positive
    lines = ["| state | final eval reward (mean +/- SE) | reached threshold (median steps) | final reward per seed | "
             "first training episode with a positive return, per seed (steps) |",
             "|---|---:|---:|---|---|"]
    for variant in variants:
        runs = sorted((r for r in results if r["variant"] == variant), key=lambda r: r["seed"])
        values = [r["rewards"][-1] for r in runs]  # in the order of the seeds, as the per-seed columns
        mean, error = meanStandardError(values)
        error = 0.0 if math.isnan(error) else error  # one seed: no spread to show
        reached = [step for r in runs if threshold is not None
                   and (step := evaluationStepsToThreshold(np.asarray(r["timesteps"]), r["rewards"], threshold)) is not None]
        steps = f"{statistics.median(reached):,.0f}" if reached else "-"
        name = "ground truth (2)" if variant == "ground_truth" else f"{variant} ({runs[0]['dims']})"
        name += f", x{runs[0]['scale']:.3g}" if runs[0]["scale"] != 1.0 else ""
        lines.append(f"| {name} | {mean:.1f} +/- {error:.1f} | {len(reached)}/{len(runs)} "
                     f"({steps}) | {', '.join(f'{v:.0f}' for v in values)} | "
                     f"{', '.join(firstSuccessText(r) for r in runs)} |")
    return "\n".join(lines) + ("\n\nThreshold: none (the first row's mean final reward is not positive)."
                               if threshold is None else
                               f"\n\nThreshold: {threshold:.1f} (90% of the first row's mean final reward).")


def firstSuccessText(run: dict[str, Any]) -> str:
    """:return: a run's first successful training episode as the table shows it: its step, "never", or "?" for a
    run kept before it was recorded"""
    if "first_success" not in run:
        return "?"
    return "never" if run["first_success"] is None else f"{run['first_success']:,}"


def scaleValue(raw: str) -> float | str:
    """argparse type of ``--scale``: a positive number or :data:`PARTICIPATION`."""
    return PARTICIPATION if raw == PARTICIPATION else positiveFloat(raw)


def earlyEntropy(raw: str) -> tuple[float, int]:
    """argparse type of ``--early-ent-coef``: ``WEIGHT:STEPS``, a non-negative weight and a positive step count."""
    weight, separator, steps = raw.partition(":")
    try:
        value, until = float(weight), int(steps)
    except ValueError:
        value, until = -1.0, 0
    if not separator or not value >= 0 or until < 1:
        raise argparse.ArgumentTypeError(f"{raw!r} is not WEIGHT:STEPS (a weight >= 0, a number of steps >= 1)")
    return value, until


def parseHyperparams(pairs: list[str]) -> dict[str, Any]:
    """
    :param pairs: ``NAME:VALUE`` strings
    :return: ppo2's hyperparameters they give, typed and checked, as SB3 takes them (``none`` as None)
    :raises UsageError: a malformed pair, a name ppo2 does not have, or a bad value (one line)
    """
    return plainValues(hyperparamPairs(PPO2Model, pairs))


def loadResults(path: str | None) -> list[dict[str, Any]]:
    """
    :param path: the ``--results`` file (None: none)
    :return: the runs kept in it (none when there is no such file)
    :raises UsageError: a file that is not this command's JSON list of runs
    """
    if path is None or not os.path.exists(path):
        return []
    try:
        with open(path, encoding="utf-8") as stream:
            runs = json.load(stream)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"--results {path!r} is not a readable JSON file of runs: {error}") from None
    if not isinstance(runs, list) or not all(isinstance(run, dict) for run in runs):
        raise UsageError(f"--results {path!r} is not a JSON list of runs (this command's results file)")
    return runs


def jobSettings(run: dict[str, Any]) -> str:
    """:return: a run's settings (everything but its results) as a comparable string"""
    return json.dumps({key: value for key, value in run.items() if key not in RESULT_FIELDS},
                      sort_keys=True)


def buildParser() -> CLIParser:
    """:return: the command-line parser"""
    parser = CLIParser(prog="python -m benchmarks.state_shape", description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS), help="states [all]")
    parser.add_argument("--dims", type=positiveInt, default=32, help="size of an embedded state [32, as the SRL models']")
    parser.add_argument("--seeds", type=positiveInt, default=5, help="seeds per variant, from --first-seed [5]")
    parser.add_argument("--steps", type=positiveInt, default=50000, help="steps per run [50000, the SRL + RL benchmark's]")
    parser.add_argument("--eval-freq", type=positiveInt, default=5000, help="steps between evaluations [5000]")
    parser.add_argument("--eval-episodes", type=positiveInt, default=5, help="episodes per evaluation [5]")
    parser.add_argument("--map-seed", type=seedNumber, default=1000, help="seed of the random map [1000]")
    parser.add_argument("--first-seed", type=seedNumber, default=0, help="the first seed [0]")
    parser.add_argument("--scale", type=scaleValue, default=1.0,
                        help="factor on the normalised state the agent gets, or 'participation' for sqrt(P / dims) "
                             "per variant [1: as train gives it]")
    parser.add_argument("--hyperparam", nargs="+", default=[], metavar="NAME:VALUE",
                        help="ppo2 hyperparameters that replace its defaults [none]")
    parser.add_argument("--policy-activation", choices=sorted(ACTIVATIONS), default="tanh",
                        help="activation of the policy and value networks [tanh, SB3's]")
    parser.add_argument("--early-ent-coef", type=earlyEntropy, default=None, metavar="WEIGHT:STEPS",
                        help="the entropy bonus's weight for the first STEPS steps, ppo2's after [none]")
    parser.add_argument("--results", default=None, metavar="FILE",
                        help="JSON file that keeps the finished runs; runs found there are not run again [none]")
    parser.add_argument("--n-envs", type=positiveInt, default=1,
                        help="envs per run, stepped together as train's --num-cpu steps them [1]")
    parser.add_argument("--workers", type=positiveInt, default=2, help="runs at a time [2]")
    addResultsArguments(parser, "the table")
    return parser


def main(argv: list[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    :raises UsageError: bad input (one line; nothing is run or written)
    """
    args = buildParser().parse_args(argv)
    if args.eval_freq > args.steps:
        raise UsageError(f"--eval-freq {args.eval_freq} is more than --steps {args.steps}: no evaluation would run")
    hyperparams = parseHyperparams(args.hyperparam)
    if args.results is not None:
        if os.path.isdir(args.results):
            raise UsageError(f"--results {args.results!r} is a folder, not a JSON file")
        checkOutputFile(args.results, "--results")
    kept = loadResults(args.results)  # a broken file is refused before any run
    variants = list(dict.fromkeys(args.variants))
    scales = {v: participationScale(v, args.dims, args.map_seed) if args.scale == PARTICIPATION else args.scale
              for v in variants}
    jobs = [{"variant": v, "seed": s, "dims": args.dims, "steps": args.steps, "eval_freq": args.eval_freq,
             "eval_episodes": args.eval_episodes, "map_seed": args.map_seed, "scale": scales[v],
             "hyperparams": hyperparams, "activation": args.policy_activation}
            | ({"early_ent_coef": list(args.early_ent_coef)} if args.early_ent_coef else {})
            | ({"n_envs": args.n_envs} if args.n_envs != 1 else {})
            for s in range(args.first_seed, args.first_seed + args.seeds) for v in variants]
    finished = {jobSettings(run): run for run in kept}
    results = [finished[jobSettings(job)] for job in jobs if jobSettings(job) in finished]
    todo = [job for job in jobs if jobSettings(job) not in finished]
    countdown = Countdown(len(todo))
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for result in pool.map(runOne, todo):
            results.append(result)
            if args.results is not None:
                kept.append(result)
                writeJson(args.results, kept, sort_keys=False)
            print(f"{countdown.tick()} {result['variant']} seed {result['seed']}: "
                  f"{', '.join(f'{v:.0f}' for v in result['rewards'])}", flush=True)
    table = summarise(results, variants)
    print(table)
    if not args.no_append:
        command = "python -m benchmarks.state_shape " + " ".join(argv if argv is not None else sys.argv[1:])
        notes = (f"ppo2's hyperparameters (SB3 PPO), {args.steps:,} steps per run, an evaluation of "
                 f"{args.eval_episodes} deterministic episodes every {args.eval_freq:,} steps, "
                 f"seeds {args.first_seed}-{args.first_seed + args.seeds - 1}; "
                 f"the ground truth of {ENV_ID} as it is or through a fixed random map to {args.dims} numbers "
                 f"(map seed {args.map_seed}); no images"
                 + ("; the normalised state multiplied by sqrt(participation ratio / size): "
                    + ", ".join(f"{v} x{scale:.3f}" for v, scale in scales.items())
                    if args.scale == PARTICIPATION else
                    f"; the normalised state multiplied by {args.scale:g}" if args.scale != 1.0 else "")
                 + "".join(f"; {name} {value}" for name, value in hyperparams.items())
                 + (f"; {args.policy_activation} activations" if args.policy_activation != "tanh" else "")
                 + (f"; entropy bonus weight {args.early_ent_coef[0]:g} for the first {args.early_ent_coef[1]:,} "
                    f"steps" if args.early_ent_coef else "")
                 + (f"; {args.n_envs} envs per run" if args.n_envs != 1 else ""))
        appendReport("ppo2 on ground truth of another shape", command.strip(), notes, table,
                     packages=("torch", "stable_baselines3", "pybullet"), target="bench-state-shape",
                     path=resultsPath(args))
    return 0


if __name__ == "__main__":
    runCommand(main)
