"""The bars of the commands that start runs for you: the sweep's (rl_baselines.sweeps.pipeline.sweepBar) and the
search's (rl_baselines.sweeps.search_trials.TrialProgress), on a fake clock: their ETA is the runs left at the
average rate since the start, so it moves with the clock between two runs' ends, and two runs ending together do not
make it near zero."""
from __future__ import annotations

import json
import os

import optuna
from optuna.trial import TrialState

from rl_baselines.sweeps.followed_runs import SweepWork
from rl_baselines.sweeps.pipeline import sweepBar
from rl_baselines.sweeps.search_trials import INTERRUPTED, TrialProgress
from rl_baselines.sweeps.sweep import RunSpec


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _onClock(bar, clock: Clock):
    bar._time = clock
    bar.start_t = bar.last_print_t = clock.now
    return bar


def test_the_sweep_eta_is_the_average_rate_and_moves_with_the_clock():
    clock = Clock()
    bar = _onClock(sweepBar(3, no_progress=False), clock)
    clock.now = 118.0
    bar.update(1)
    clock.now = 118.13  # a second run ends 0.13 s after the first
    bar.update(1)
    assert "ETA 00:09" in str(bar)  # 1 run left at 2 runs per 18.13 s, not at the burst's rate
    clock.now = 132.0  # the last run goes on: the clock and the ETA move
    assert "[00:32, ETA 00:16" in str(bar)
    bar.close()


def _runFolder(spec: RunSpec, num_timesteps: int, num_cpu: int, lengths: list[int]) -> str:
    """A run folder of ``spec`` as train writes it: args.json and env 0's monitor file (episodes of ``lengths``)."""
    folder = os.path.join(spec.parent, f"01-01-26_00h00_00_{spec.run_id}")
    os.makedirs(os.path.join(folder, "monitor"), exist_ok=True)
    with open(os.path.join(folder, "args.json"), "w", encoding="utf-8") as handle:
        json.dump({"num_timesteps": num_timesteps, "num_cpu": num_cpu}, handle)
    appendEpisodes(folder, lengths)
    return folder


def appendEpisodes(folder: str, lengths: list[int]) -> None:
    path = os.path.join(folder, "monitor", "0.monitor.csv")
    new = not os.path.exists(path)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('#{"t_start": 0.0, "env_id": "Fake-v0"}\nr,l,t\n' if new else "")
        handle.writelines(f"1.0,{length},1.0\n" for length in lengths)


def test_the_sweep_eta_counts_the_steps_of_the_runs_in_flight(tmp_path):
    """Two runs on two workers: the bar counted ended runs only, so it said "ETA ?" until the first ended; the runs'
    monitor files now give their share of their budget (steps x envs / num_timesteps)."""
    specs = [RunSpec("ppo2", "Fake-v0", "ground_truth", seed, (), f"id{seed}", str(tmp_path)) for seed in (0, 1)]
    first = _runFolder(specs[0], 8000, 4, [250])  # 250 x 4 envs = 1,000 of 8,000 steps
    clock = Clock()
    bar = _onClock(sweepBar(2, no_progress=False), clock)
    assert "ETA ?" in str(bar)
    work = SweepWork(specs)
    bar.work = work.amounts
    work.follow(specs)  # the second run has no folder yet: no steps
    assert work.amounts() == (0.0, 1.875)  # the first's eighth, made before it was first seen: not counted done
    appendEpisodes(first, [250, 250, 250])  # 4,000 of 8,000 steps
    _runFolder(specs[1], 1000, 1, [250])  # a quarter of its budget, when first seen
    clock.now = 130.0
    work.follow(specs)
    assert work.amounts() == (0.375, 1.25)
    assert "0/2 runs [00:30, ETA 01:40" in str(bar)  # 1.25 runs' worth left at 0.375 per 30 s
    work.ended(specs[0].run_id, done=True)
    assert work.amounts() == (0.875, 0.75)
    work.ended(specs[1].run_id, done=False)  # it failed: nothing more of it to do, nor counted done
    assert work.amounts() == (0.875, 0.0)
    work.close()
    bar.close()


def test_the_search_bar_is_redrawn_while_trials_run(capsys):
    clock = Clock()
    progress = TrialProgress(2, enabled=True)
    _onClock(progress.bar, clock)
    clock.now = 137.0
    progress.tick()
    assert "00:37" not in capsys.readouterr().err  # not a terminal (a log file): drawn when a trial ends only
    progress.interactive = True  # (on a terminal)
    progress.tick()
    assert "00:37" in capsys.readouterr().err.split("\r")[-1]  # the elapsed time moves without a trial ending
    progress.close()


def test_the_search_bar_counts_an_interrupted_trial_stopped_not_finished(capsys):
    """After a Ctrl-C the bar said "2/4" with the two trials it stopped counted as finished (and its ETA from them);
    they are `stopped`, the count and the rate those of the trials that ended."""
    progress = TrialProgress(4, enabled=True)
    progress.trialDone(optuna.trial.create_trial(state=TrialState.COMPLETE, value=1.5, params={}, distributions={}))
    for number in (1, 2):
        trial = optuna.trial.create_trial(state=TrialState.FAIL, user_attrs={"error": INTERRUPTED})
        trial.number = number
        progress.trialDone(trial)
    failed = optuna.trial.create_trial(state=TrialState.FAIL, user_attrs={"error": "exit code 1"})
    failed.number = 3
    progress.trialDone(failed)
    assert progress.bar.n == 2 and progress.bar.postfix == "best=1.50, failed=1, pruned=0, stopped=2"
    assert capsys.readouterr().out.splitlines()[1:3] == ["trial 1: failed: interrupted", "trial 2: failed: interrupted"]
    progress.close()
