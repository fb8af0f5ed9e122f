"""What the tests of gather_results, aggregate_plots and compare_plots share: run folders made by hand (args.json and
a monitor file, as train leaves them), and the check of a refusal's one-line error."""
from __future__ import annotations

import json
import os
import re

ENV = "MobileRobotGymEnv-v0"


def unpadded(text: str) -> str:
    """:return: a Markdown text with its table cells' padding removed (``| a   | b |`` reads ``| a | b |``)"""
    return re.sub(" {2,}", " ", text)


def assertUsage(result, text: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()  # the error alone, not the warnings of the checks before it
    assert len(lines) == 1 and lines[0].startswith("error: ") and text in lines[0], result.stderr


def fakeRun(run_dir, rewards, seed: int = 0, finished: bool = True, length: int = 100):
    """A run folder as train leaves it, fabricated: args.json, one monitor file of ``length``-step episodes,
    done.json when ``finished`` (a sweep's record of a finished run)."""
    os.makedirs(os.path.join(run_dir, "monitor"))
    with open(os.path.join(run_dir, "args.json"), "w") as handle:
        json.dump({"env": ENV, "srl_model": "ground_truth", "algo": "ppo2", "seed": seed,
                   "num_timesteps": length * len(rewards)}, handle)
    with open(os.path.join(run_dir, "monitor", "0.monitor.csv"), "w") as handle:
        handle.write('#{"t_start": 1700000000.0, "env_id": "E"}\nr,l,t\n')
        handle.writelines(f"{reward},{length},{index + 1.0}\n" for index, reward in enumerate(rewards))
    if finished:
        with open(os.path.join(run_dir, "done.json"), "w") as handle:
            handle.write("{}\n")
    return str(run_dir)
