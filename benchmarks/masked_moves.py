"""``python -m benchmarks.masked_moves RUN [--episodes N] [--seed S]``: the moves a trained policy takes that its env's
action masks forbid (a mobile robot's wall bump, a Kuka arm's move clipped to nothing), per episode.

The final policy of the run plays ``N`` episodes with sampled actions (as in training) on the env it trained on,
given the masks when its algorithm uses them (as everywhere it acts, so maskable_ppo takes none); the script prints
the count per episode on its last line. The learning benchmark (benchmarks.learning) runs it in a subprocess, because
its own module is imported by the train command as an env plugin and must not import the command's modules.
"""
from __future__ import annotations

import numpy as np

from rl_baselines.core.base import actionMaskKeywords
from rl_baselines.runs.loaded_run import LoadedRun, loadRun
from srl_toolbox.cli import CLIParser, UsageError, positiveInt, runCommand, seedNumber

# The replay env's seed is the run's plus this: other starts than training's.
SEED_OFFSET = 20_000


def playedMaskedMoves(run: LoadedRun, episodes: int, seed: int) -> float:
    """
    :param run: a loaded run on an env with action masks and discrete actions
    :param episodes: episodes to play with its final policy
    :param seed: the run's seed (the replay env gets ``seed + SEED_OFFSET``)
    :return: the moves its env masks that the policy took, per episode
    """
    env = run.makeEnv(seed=seed + SEED_OFFSET)
    masked, finished = 0, 0
    observation, dones = env.reset(), np.ones(1, dtype=bool)
    try:
        while finished < episodes:
            allowed = np.stack(env.env_method("action_masks"))
            action = run.model.getAction(observation, dones, **actionMaskKeywords(run.model, env))
            masked += int(not allowed[0, int(np.asarray(action).reshape(-1)[0])])
            observation, _, dones, _ = env.step(action)
            finished += int(dones[0])
    finally:
        env.close()
    return masked / episodes


def main(argv: list[str] | None = None) -> None:
    """:param argv: command-line arguments; :raises UsageError: bad input (not a run folder), before any work"""
    parser = CLIParser(prog="python -m benchmarks.masked_moves", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", metavar="RUN", help="a run folder written by rl_baselines.train")
    parser.add_argument("--episodes", type=positiveInt, default=5, help="episodes to play [5]")
    parser.add_argument("--seed", type=seedNumber, default=0, help="the run's seed [0]")
    args = parser.parse_args(argv)
    try:
        run = loadRun(args.run_dir, flag="RUN")
    except ValueError as error:  # no run there, or one that cannot be loaded: one line
        raise UsageError(str(error)) from None
    print(f"{playedMaskedMoves(run, args.episodes, args.seed):.3f}")


if __name__ == "__main__":
    runCommand(main)
