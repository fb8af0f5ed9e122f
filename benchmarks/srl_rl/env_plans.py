"""The SRL + RL benchmark's envs: each one's plan (:class:`EnvPlan`: budget, evaluation, flags), the planned four
(:data:`PLANS`, :data:`QUICK_PLANS`) and the plan of any other env with ground truth (:func:`derivedPlan`), with the
rates and times the time estimate starts from before any run of an env has finished.

Invariants: a plan holds only what the env's runs and datasets need (no observation, seed or folder: those are
benchmarks.srl_rl.plans' Settings); an env without ground truth has no plan (every table is measured against it).
"""
from __future__ import annotations

import dataclasses

from environments.registry import getEnvClass, registerAll
from srl_toolbox.cli import UsageError

MOBILE = "MobileRobotGymEnv-v0"
KUKA = "KukaButtonGymEnv-v0"
MOBILE_1D = "MobileRobot1DGymEnv-v0"
KUKA_MOVING = "KukaMovingButtonGymEnv-v0"
# The env's own observations, read by no learned model: the rates below are per kind of observation.
GROUND_TRUTH = "ground_truth"
RAW_PIXELS = "raw_pixels"


@dataclasses.dataclass(frozen=True)
class EnvPlan:
    """
    What the benchmark runs on one env.

    :param env: env id
    :param task: the task's name in the paper's table
    :param steps: env steps per run
    :param eval_freq: env steps between two evaluations
    :param eval_episodes: episodes per evaluation
    :param flags: env flags shared by the dataset (prepare) and the runs (train), e.g. ``--random-target``
    :param episode_length: typical evaluation episode length, for the time estimate only
    :param prepare_flags: further prepare flags (the quick mode's tiny datasets)
    :param run_flags: env flags of the runs only, e.g. ``--force-down``: the arm moves as in the datasets, which
        environments.dataset_generator always records with force_down
    :param ground_truth_seeds: ground truth's seeds where it needs more than the other rows (0: as many). Its mean
        final reward sets the threshold and normalises every score, so a task whose ground truth leaves some seeds
        at the wall measures that mean on more seeds (cheap: ground truth is the fastest row)
    """

    env: str
    task: str
    steps: int
    eval_freq: int
    eval_episodes: int
    flags: tuple[str, ...] = ()
    episode_length: int = 250
    prepare_flags: tuple[str, ...] = ()
    run_flags: tuple[str, ...] = ()
    ground_truth_seeds: int = 0

    def groundTruthSeedCount(self, seeds: int) -> int:
        """:return: ground truth's seeds beside ``seeds`` of the other rows (:attr:`ground_truth_seeds` where more)"""
        return max(seeds, self.ground_truth_seeds)


def groundTruthRefusal(env: str) -> str | None:
    """
    :param env: an env id
    :return: why the benchmark cannot run on it (one line): not a registered env, or an env without ground truth
        (its class does not implement ``getGroundTruthDim``, or gives no dimension), which every table is measured
        against; None when it can
    """
    registered = registerAll()
    if env not in registered:
        return f"--env {env}: not a registered env; valid choices: {', '.join(sorted(registered))}"
    try:
        dim = int(getEnvClass(env).getGroundTruthDim())
    except NotImplementedError:
        dim = 0
    if dim <= 0:
        return (f"--env {env}: the env has no ground truth (getGroundTruthDim), which the benchmark's threshold and "
                "comparisons are measured against")
    return None


def derivedPlan(env: str, steps: int | None, eval_freq: int | None, eval_episodes: int | None,
                quick: bool = False) -> EnvPlan:
    """
    The plan of an env without one in :data:`PLANS`: its budget and evaluation from the command line.

    :param env: a registered env id
    :param steps: --budget ENV=STEPS (None: not given)
    :param eval_freq: --eval-freq (None: not given)
    :param eval_episodes: --eval-episodes (None: not given)
    :param quick: the quick mode (tiny datasets)
    :return: its plan (task: the env id; no env flag; the env's ``MAX_STEPS`` as the evaluation episodes' length, for
        the time estimate; ``--force-down`` for the runs of an env that takes it, whose
        datasets environments.dataset_generator records with it, as the planned arms' runs)
    :raises UsageError: the env cannot be benchmarked (:func:`groundTruthRefusal`) or a flag the plan needs is missing
    """
    refusal = groundTruthRefusal(env)
    if refusal is not None:
        raise UsageError(refusal)
    missing = [flag for flag, value in ((f"--budget {env}=STEPS", steps), ("--eval-freq N", eval_freq),
                                        ("--eval-episodes K", eval_episodes)) if value is None]
    if missing:
        raise UsageError(f"--env {env} has no plan (planned: {', '.join(PLANS)}): give {', '.join(missing)}")
    assert steps is not None and eval_freq is not None and eval_episodes is not None
    env_class = getEnvClass(env)
    # an agent that has not learned (an arm that never presses) plays its evaluation episodes to the env's MAX_STEPS
    return EnvPlan(env, env, steps=steps, eval_freq=eval_freq, eval_episodes=eval_episodes,
                   episode_length=int(env_class.MAX_STEPS),
                   prepare_flags=("--episodes", "2", "--epochs", "1") if quick else (),
                   run_flags=("--force-down",) if env_class.acceptsKeyword("force_down") else ())


# Step budgets, chosen from measurements with ground truth (ppo2, 2 seeds, see BUDGET_NOTE) and the cost of the
# pixel-based runs; BUDGET_NOTE is shown by --help and written into the docs section.
PLANS = {
    # ground truth leaves 3 of 20 seeds at the wall with one env and with four (docs/srl.md, "Four envs per update")
    MOBILE: EnvPlan(MOBILE, "Nav 2D", steps=50_000, eval_freq=5_000, eval_episodes=5, ground_truth_seeds=20),
    # a deterministic arm that has not learned yet plays the whole 1000 steps of an episode: 3 evaluation episodes
    KUKA: EnvPlan(KUKA, "Arm random target", steps=50_000, eval_freq=5_000, eval_episodes=3,
                  flags=("--random-target",), episode_length=500, run_flags=("--force-down",)),
    # 20 random episodes of 250 steps: 5000 frames, as many as MobileRobot's dataset
    MOBILE_1D: EnvPlan(MOBILE_1D, "Nav 1D", steps=30_000, eval_freq=2_500, eval_episodes=5,
                       prepare_flags=("--episodes", "20")),
    # a random episode of the moving button (random start) lasts about 24 steps: 210 episodes, about 5000 frames
    KUKA_MOVING: EnvPlan(KUKA_MOVING, "Arm moving target", steps=40_000, eval_freq=5_000, eval_episodes=3,
                         flags=("--random-target",), episode_length=500, prepare_flags=("--episodes", "210"),
                         run_flags=("--force-down",)),
}
QUICK_PLANS = {
    MOBILE: EnvPlan(MOBILE, "Nav 2D", steps=1024, eval_freq=512, eval_episodes=1,
                    prepare_flags=("--episodes", "2", "--epochs", "1")),
    # an untrained deterministic arm often plays the whole 1000 steps of an episode: one short evaluation
    KUKA: EnvPlan(KUKA, "Arm random target", steps=512, eval_freq=512, eval_episodes=1, flags=("--random-target",),
                  episode_length=1000, prepare_flags=("--episodes", "10", "--epochs", "1"), run_flags=("--force-down",)),
    MOBILE_1D: EnvPlan(MOBILE_1D, "Nav 1D", steps=1024, eval_freq=512, eval_episodes=1,
                       prepare_flags=("--episodes", "2", "--epochs", "1")),
    KUKA_MOVING: EnvPlan(KUKA_MOVING, "Arm moving target", steps=512, eval_freq=512, eval_episodes=1,
                         flags=("--random-target",), episode_length=1500,
                         prepare_flags=("--episodes", "10", "--epochs", "1"), run_flags=("--force-down",)),
}
BUDGET_NOTE = (
    "Step budgets: ground truth should converge and the pixel-based runs be measured clearly. Measured with `python "
    "-m rl_baselines.train --algo ppo2 --srl-model ground_truth --no-vis` (seeds 0 and 1, mean "
    "training reward of the last 50 episodes, exploration included): on MobileRobotGymEnv-v0 it is 208-212 "
    "after 30k steps, 223-228 after 40k and 226-230 up to 60k, so 50k steps (an evaluation of 5 episodes of 250 steps "
    "every 5k); on KukaButtonGymEnv-v0 with --random-target --force-down (the arm moves as in its dataset, never "
    "up) the deterministic evaluation (3 episodes, at most 5 each) reached the maximum, 5.0, after 15k steps (seed 0) "
    "and 25k (seed 1) and stayed there up to 35k, so 50k steps too (an evaluation of 3 episodes every 5k). Without "
    "--force-down the arm may move up, and ground truth (seed 0) learned to hover above the table for whole "
    "1000-step episodes without pressing once in 50k steps. On MobileRobot1DGymEnv-v0 (Nav 1D; seeds 0 and 1, an "
    "evaluation of 5 episodes every 2.5k) the deterministic evaluation reached its maximum (235-238) after 7.5k and "
    "5k steps, and the training mean of 50 episodes about 235 by 30k, so 30k steps (an evaluation of 5 episodes "
    "every 2.5k). On KukaMovingButtonGymEnv-v0 (the arm with a moving target) with --random-target --force-down "
    "(seeds 0 and 1), the deterministic evaluation (3 episodes, at most 5 each) reached 5.0 after 10k (seed 0) and 15k "
    "steps (seed 1, 4.0 at 20k, then 5.0 from 25k) and stayed there up to 40k, so 40k steps (an evaluation of 3 "
    "episodes every 5k); without --random-target the button starts under the arm and a random policy already scores "
    "4 of 5 (40 random episodes with --force-down), a task that tells no representation from another. The "
    "pixel-based runs take most of the time (every frame rendered, then encoded or read by the policy's CNN), the "
    "arm's more than navigation's (its physics, and evaluation episodes of up to 1000 steps while the arm has not "
    "learned). The script prints its estimate of the whole run before it starts, from the wall times of the "
    "archived runs, and the time left as it goes.")


# Training steps/s of one ppo2 run beside another on 2 free cores with the default renderers (sprites, lowpoly), for
# the time estimate of an env none of whose runs has finished (then the finished runs' own wall times are used): the
# rates that give, through expectedRunSeconds, the mean walls of the from-empty run in docs/benchmarks.md ("make
# bench-srl-rl from an empty archive").
EXPECTED_RATE = {MOBILE: {GROUND_TRUTH: 2200.0, RAW_PIXELS: 330.0, "learned": 1050.0},
                 KUKA: {GROUND_TRUTH: 540.0, RAW_PIXELS: 155.0, "learned": 265.0}}
EXPECTED_RATE.update({MOBILE_1D: EXPECTED_RATE[MOBILE], KUKA_MOVING: EXPECTED_RATE[KUKA]})  # the same robots
# Seconds of a train command besides its steps (imports, env and model creation, saving; 10-14 s measured on 2 cores
# with some load), and of a pipeline command before its first run starts (its imports, about 6 s).
EXPECTED_START_S = 12.0
EXPECTED_STAGE_START_S = 6.0
# One learned model's share of an env's prepare (its dataset, training and metrics), measured with the default
# renderers: 186 s for the 11 models of the arm with a random target, 490 s on the moving target (more episodes).
EXPECTED_PREPARE_S = 40.0


def expectedRate(env: str, kind: str) -> float:
    """
    :param env: an env id
    :param kind: ``ground_truth``, ``raw_pixels`` or ``learned``
    :return: the training steps/s expected of one run: :data:`EXPECTED_RATE`'s for the env; for another env, that of
        the nearest planned env its class descends from (the same robot); else the slowest planned rate of the kind
    """
    if env in EXPECTED_RATE:
        return EXPECTED_RATE[env][kind]
    planned = {getEnvClass(name): name for name in EXPECTED_RATE}
    try:
        ancestors = getEnvClass(env).__mro__
    except KeyError:
        ancestors = ()
    for ancestor in ancestors:
        if ancestor in planned:
            return EXPECTED_RATE[planned[ancestor]][kind]
    return min(rates[kind] for rates in EXPECTED_RATE.values())
