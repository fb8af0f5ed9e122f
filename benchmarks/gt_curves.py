"""``python -m benchmarks.gt_curves -i DIR -o PNG``: the ground-truth learning curves that choose a task's step budget.

Before a task joins the SRL + RL benchmark (benchmarks.srl_rl.env_plans.PLANS), ppo2 learns it from ground truth for a
few seeds (``python -m rl_baselines.train --algo ppo2 --srl-model ground_truth --eval-freq F ...``); this command
draws every run found below DIR, one env per panel: each seed's deterministic evaluations (evaluations.npz) and the
moving average of its training episodes (exploration included), so that the budget can be read where the curves
plateau. Invariants: every run is drawn on its own (no band over 2 seeds); the PNG is written atomically; nothing
else is written.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from replay.results import findRuns, trailingMean
from srl_toolbox.cli import CLIParser, UsageError, checkOutputFile, nonEmptyText, positiveInt, runCommand
from srl_toolbox.files import atomicPath


def buildParser() -> CLIParser:
    """:return: the command's parser"""
    parser = CLIParser(prog="python -m benchmarks.gt_curves", description="Per-seed learning curves of the runs "
                       "below a folder, one env per panel: deterministic evaluations and training episodes.")
    parser.add_argument("-i", "--log-dir", required=True, help="folder to walk for runs")
    parser.add_argument("-o", "--output", type=nonEmptyText, required=True, help="the PNG file")
    parser.add_argument("--episode-window", type=positiveInt, default=50,
                        help="training episodes of the moving average [50]")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    """
    args: argparse.Namespace = buildParser().parse_args(sys.argv[1:] if argv is None else argv)
    if not args.output.endswith(".png"):
        raise UsageError(f"--output {args.output!r}: not a .png file (give a name ending in .png)")
    checkOutputFile(args.output, "--output")
    runs = findRuns(args.log_dir)  # after the checks: the walk may be long and warn of the runs it skips
    envs = list(dict.fromkeys(str(run.args["env"]) for run in runs))
    figure = Figure(figsize=(6.5 * len(envs), 4.2), dpi=100)
    FigureCanvasAgg(figure)
    panels = figure.subplots(1, len(envs), squeeze=False).ravel()
    for axes, env in zip(panels, envs):
        group = sorted((run for run in runs if str(run.args["env"]) == env), key=lambda run: str(run.seed))
        for index, run in enumerate(group):
            color = f"C{index}"
            curve = run.evaluationCurve()
            if curve is not None:
                axes.plot(*curve, color=color, marker="o", markersize=3, linewidth=1.8,
                          label=f"seed {run.seed}: evaluation")
            episodes = run.episodes
            axes.plot(episodes["timesteps"], trailingMean(episodes["rewards"], args.episode_window), color=color,
                      linestyle=":", linewidth=1.2, label=f"seed {run.seed}: training, {args.episode_window}-episode "
                      "mean")
        flags = " ".join(f"--{name.replace('_', '-')}" for name in ("random_target", "force_down")
                         if group and group[0].args.get(name))
        axes.set_title(f"ppo2, ground truth, {env} {flags}".strip(), fontsize=10)
        axes.set_xlabel("env steps")
        axes.set_ylabel("episode reward")
        axes.grid(True, alpha=0.3)
        axes.legend(loc="lower right", fontsize=7)
    figure.tight_layout()
    with atomicPath(args.output) as tmp_path:
        figure.savefig(tmp_path, format="png")
    print(f"{len(runs)} runs, {len(envs)} env(s): {args.output}")
    return 0


if __name__ == "__main__":
    runCommand(main)
